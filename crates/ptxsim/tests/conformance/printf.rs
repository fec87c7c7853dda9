//! Device printf (`vprintf`): output compared exactly with the C formatting of the same
//! values, in launch order (block, then warp, then lane).

use crate::common::*;

/// C's `%e`: six decimals and an exponent of at least two digits with its sign.
fn c_exp(x: f64) -> String {
    let s = format!("{x:.6e}");
    match s.split_once('e') {
        Some((mant, exp)) => {
            let e: i32 = exp.parse().unwrap_or(0);
            format!("{mant}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
        }
        None => s,
    }
}

#[test]
fn printf_basic() {
    let mut c = Ctx::new("printf", "printf_basic");
    let bd = c.rng.pick(&[8u32, 32, 40]);
    let n = c.rng.usize(10, 100);
    let a: Vec<i32> = c.rng.vec(n, |r| r.next_u32() as i32 >> r.range_i32(0, 31));
    let f: Vec<f32> = c
        .rng
        .vec(n, |r| r.range_i32(-1_000_000, 1_000_000) as f32 / 1000.0);
    let (pa, pf) = (c.upload(&a), c.upload(&f));
    let r = c.launch(
        "printfBasic",
        d1(blocks(n, bd)),
        d1(bd),
        &[Arg::Ptr(pa), Arg::Ptr(pf), Arg::I32(n as i32)],
    );
    let want: String = (0..n)
        .map(|i| {
            format!(
                "block {} thread {}: a={} f={:.6} hex={:x}\n",
                i / bd as usize,
                i % bd as usize,
                a[i],
                f[i] as f64,
                a[i] as u32
            )
        })
        .collect();
    assert_eq!(r.printf, want);
}

#[test]
fn printf_formats() {
    let mut c = Ctx::new("printf", "printf_formats");
    let n = c.rng.usize(5, 60);
    let l: Vec<i64> = c.rng.vec(n, |r| r.next_u64() as i64 >> r.range_i32(0, 63));
    let d: Vec<f64> = c
        .rng
        .vec(n, |r| r.f64_in(-1e4, 1e4) * 10f64.powi(r.range_i32(-8, 8)));
    let (pl, pd) = (c.upload(&l), c.upload(&d));
    let r = c.launch(
        "printfFormats",
        d1(blocks(n, 32)),
        d1(32),
        &[Arg::Ptr(pl), Arg::Ptr(pd), Arg::I32(n as i32)],
    );
    let want: String = (0..n)
        .map(|i| {
            format!(
                "[{:>3}] {}|{}|{:>5}|{:<4}|{:05}|{}|{}|{:.3}|{}|{:X}|%\n",
                i,
                l[i],
                l[i] as u64,
                (l[i] % 1000) as i32,
                i,
                i,
                (b'a' + (i % 26) as u8) as char,
                if i & 1 == 1 { "odd" } else { "even" },
                d[i],
                c_exp(d[i]),
                (l[i] & 0xffff) as u32
            )
        })
        .collect();
    assert_eq!(r.printf, want);
}

#[test]
fn printf_divergent_order() {
    let mut c = Ctx::new("printf", "printf_divergent_order");
    let n = c.rng.usize(50, 300);
    let a: Vec<i32> = c.rng.vec(n, |r| r.range_i32(-100, 100));
    let pa = c.upload(&a);
    let r = c.launch(
        "printfDivergent",
        d1(blocks(n, 64)),
        d1(64),
        &[Arg::Ptr(pa), Arg::I32(n as i32)],
    );
    let mut want = format!("start n={n}\n");
    for (i, v) in a.iter().enumerate() {
        if v % 3 == 0 {
            want.push_str(&format!("i={i} v={v}\n"));
        }
    }
    assert_eq!(r.printf, want);
}
