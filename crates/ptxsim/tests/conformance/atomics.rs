//! Every atomic on global and shared memory. Results that depend on the order of the threads
//! are checked through order-independent facts: final values, and the multiset of the old
//! values the atomics returned. Float sums use dyadic values whose sums are exact in any order.

use crate::common::*;

fn sorted<T: Ord + Clone>(v: &[T]) -> Vec<T> {
    let mut v = v.to_vec();
    v.sort();
    v
}

/// The states an atomicInc(limit) counter passes through, starting at `start`, `k` times.
fn inc_states(start: u32, limit: u32, k: usize) -> (Vec<u32>, u32) {
    let mut s = start;
    let mut olds = Vec::with_capacity(k);
    for _ in 0..k {
        olds.push(s);
        s = if s >= limit { 0 } else { s + 1 };
    }
    (olds, s)
}

fn dec_states(start: u32, limit: u32, k: usize) -> (Vec<u32>, u32) {
    let mut s = start;
    let mut olds = Vec::with_capacity(k);
    for _ in 0..k {
        olds.push(s);
        s = if s == 0 || s > limit { limit } else { s - 1 };
    }
    (olds, s)
}

#[test]
fn atomic_add_i32_and_tickets() {
    let mut c = Ctx::new("atomics_global", "atomic_add_i32_and_tickets");
    let n = c.rng.usize(2000, 9000);
    let v: Vec<i32> = c.rng.vec(n, |r| r.next_u32() as i32);
    let (pv, ps, pt, po) = (
        c.upload(&v),
        c.zeros::<i32>(1),
        c.zeros::<i32>(1),
        c.zeros::<i32>(n),
    );
    c.launch(
        "atomicAddInt",
        d1(blocks(n, 128)),
        d1(128),
        &[
            Arg::Ptr(pv),
            Arg::Ptr(ps),
            Arg::Ptr(pt),
            Arg::Ptr(po),
            Arg::I32(n as i32),
        ],
    );
    assert_eq!(
        c.download::<i32>(ps, 1)[0],
        v.iter().fold(0i32, |a, x| a.wrapping_add(*x)),
        "sum"
    );
    assert_eq!(c.download::<i32>(pt, 1)[0], n as i32, "ticket");
    let want: Vec<i32> = (0..n as i32).collect();
    assert_exact(
        "tickets handed out",
        &sorted(&c.download::<i32>(po, n)),
        &want,
    );
}

#[test]
fn atomic_add_u32_binned() {
    let mut c = Ctx::new("atomics_global", "atomic_add_u32_binned");
    let n = c.rng.usize(2000, 9000);
    let bins = c.rng.usize(1, 40);
    let v: Vec<u32> = c.rng.vec(n, |r| r.next_u32());
    let (pv, ps) = (c.upload(&v), c.zeros::<u32>(bins));
    c.launch(
        "atomicAddUnsigned",
        d1(blocks(n, 256)),
        d1(256),
        &[
            Arg::Ptr(pv),
            Arg::Ptr(ps),
            Arg::I32(n as i32),
            Arg::I32(bins as i32),
        ],
    );
    let mut want = vec![0u32; bins];
    for x in &v {
        want[*x as usize % bins] = want[*x as usize % bins].wrapping_add(*x);
    }
    assert_exact("sums", &c.download::<u32>(ps, bins), &want);
}

#[test]
fn atomic_add_u64() {
    let mut c = Ctx::new("atomics_global", "atomic_add_u64");
    let n = c.rng.usize(2000, 9000);
    let v: Vec<u64> = c.rng.vec(n, |r| r.next_u64());
    let (pv, ps) = (c.upload(&v), c.upload(&[u64::MAX - 5]));
    c.launch(
        "atomicAddU64",
        d1(blocks(n, 128)),
        d1(128),
        &[Arg::Ptr(pv), Arg::Ptr(ps), Arg::I32(n as i32)],
    );
    let want = v.iter().fold(u64::MAX - 5, |a, x| a.wrapping_add(*x));
    assert_eq!(c.download::<u64>(ps, 1)[0], want);
}

#[test]
fn atomic_add_f32() {
    let mut c = Ctx::new("atomics_global", "atomic_add_f32");
    let n = c.rng.usize(2000, 9000);
    // Multiples of 1/4 below 2^9: every partial sum is exact in f32, whatever the order.
    let v: Vec<f32> = c.rng.vec(n, |r| r.range_i32(-2048, 2048) as f32 / 4.0);
    let (pv, ps) = (c.upload(&v), c.upload(&[0.5f32]));
    c.launch(
        "atomicAddF32",
        d1(blocks(n, 128)),
        d1(128),
        &[Arg::Ptr(pv), Arg::Ptr(ps), Arg::I32(n as i32)],
    );
    let want = v.iter().map(|x| *x as f64).sum::<f64>() + 0.5;
    assert_eq!(c.download::<f32>(ps, 1)[0] as f64, want);
}

#[test]
fn atomic_add_f64() {
    atomic_add_f64_on("atomics_global");
}

/// `atomic_add_f64` on the fixture `fx` (also run on other targets by `archs`).
pub fn atomic_add_f64_on(fx: &str) {
    let mut c = Ctx::new(fx, "atomic_add_f64");
    let n = c.rng.usize(2000, 9000);
    let v: Vec<f64> = c
        .rng
        .vec(n, |r| r.range_i64(-1 << 30, 1 << 30) as f64 / 1024.0);
    let (pv, ps) = (c.upload(&v), c.zeros::<f64>(1));
    c.launch(
        "atomicAddF64",
        d1(blocks(n, 128)),
        d1(128),
        &[Arg::Ptr(pv), Arg::Ptr(ps), Arg::I32(n as i32)],
    );
    let want: f64 = v.iter().sum();
    assert_eq!(c.download::<f64>(ps, 1)[0], want);
}

#[test]
fn atomic_min_max() {
    atomic_min_max_on("atomics_global");
}

/// `atomic_min_max` on the fixture `fx` (also run on other targets by `archs`).
pub fn atomic_min_max_on(fx: &str) {
    let mut c = Ctx::new(fx, "atomic_min_max");
    let n = c.rng.usize(2000, 9000);
    let v: Vec<i32> = c.rng.vec(n, |r| r.next_u32() as i32);
    let w: Vec<u64> = c.rng.vec(n, |r| r.next_u64());
    let (pv, pw) = (c.upload(&v), c.upload(&w));
    let pm = c.upload(&[i32::MAX, i32::MIN]);
    let (pu, pwm, psm) = (
        c.zeros::<u32>(1),
        c.upload(&[u64::MAX]),
        c.upload(&[i64::MIN]),
    );
    let args = [
        Arg::Ptr(pv),
        Arg::Ptr(pw),
        Arg::Ptr(pm),
        Arg::Ptr(pu),
        Arg::Ptr(pwm),
        Arg::Ptr(psm),
        Arg::I32(n as i32),
    ];
    c.launch("atomicMinMax", d1(blocks(n, 128)), d1(128), &args);
    let want_m = [*v.iter().min().unwrap_or(&0), *v.iter().max().unwrap_or(&0)];
    assert_exact("min, max (s32)", &c.download::<i32>(pm, 2), &want_m);
    assert_eq!(
        c.download::<u32>(pu, 1)[0],
        v.iter().map(|x| *x as u32).max().unwrap_or(0),
        "max (u32)"
    );
    assert_eq!(
        c.download::<u64>(pwm, 1)[0],
        *w.iter().min().unwrap_or(&0),
        "min (u64)"
    );
    assert_eq!(
        c.download::<i64>(psm, 1)[0],
        w.iter().map(|x| *x as i64).max().unwrap_or(0),
        "max (s64)"
    );
}

#[test]
fn atomic_exch() {
    let mut c = Ctx::new("atomics_global", "atomic_exch");
    let n = c.rng.usize(1000, 5000);
    let v: Vec<i32> = c.rng.vec(n, |r| r.range_i32(0, 1 << 24));
    let (pv, ps, po, pf, pfo) = (
        c.upload(&v),
        c.upload(&[-7i32]),
        c.zeros::<i32>(n),
        c.upload(&[-7.0f32]),
        c.zeros::<f32>(n),
    );
    c.launch(
        "atomicExchChain",
        d1(blocks(n, 128)),
        d1(128),
        &[
            Arg::Ptr(pv),
            Arg::Ptr(ps),
            Arg::Ptr(po),
            Arg::Ptr(pf),
            Arg::Ptr(pfo),
            Arg::I32(n as i32),
        ],
    );
    // Every value is either returned to exactly one thread or left in the slot.
    let mut seen = c.download::<i32>(po, n);
    seen.push(c.download::<i32>(ps, 1)[0]);
    let mut all = v.clone();
    all.push(-7);
    assert_exact("exchanged values (i32)", &sorted(&seen), &sorted(&all));
    let mut fseen: Vec<i32> = c
        .download::<f32>(pfo, n)
        .iter()
        .map(|f| *f as i32)
        .collect();
    fseen.push(c.download::<f32>(pf, 1)[0] as i32);
    assert_exact("exchanged values (f32)", &sorted(&fseen), &sorted(&all));
}

#[test]
fn atomic_cas_loops() {
    atomic_cas_loops_on("atomics_global");
}

/// `atomic_cas_loops` on the fixture `fx` (also run on other targets by `archs`).
pub fn atomic_cas_loops_on(fx: &str) {
    let mut c = Ctx::new(fx, "atomic_cas_loops");
    let n = c.rng.usize(1000, 4000);
    let v: Vec<f64> = c
        .rng
        .vec(n, |r| r.range_i64(-1 << 20, 1 << 20) as f64 / 64.0);
    let start = c.rng.range_u32(0, 1000);
    let (pv, pc, ps) = (c.upload(&v), c.upload(&[start]), c.upload(&[0.25f64]));
    c.launch(
        "atomicCasLoops",
        d1(blocks(n, 128)),
        d1(128),
        &[Arg::Ptr(pv), Arg::Ptr(pc), Arg::Ptr(ps), Arg::I32(n as i32)],
    );
    assert_eq!(c.download::<u32>(pc, 1)[0], start + n as u32, "CAS counter");
    assert_eq!(
        c.download::<f64>(ps, 1)[0],
        v.iter().sum::<f64>() + 0.25,
        "CAS f64 sum"
    );
}

#[test]
fn atomic_and_or_xor() {
    let mut c = Ctx::new("atomics_global", "atomic_and_or_xor");
    let n = c.rng.usize(1000, 5000);
    // Biased bits so that AND and OR do not saturate.
    let v: Vec<u32> = c.rng.vec(n, |r| {
        r.next_u32() | 0x8000_0101 | (r.next_u32() & r.next_u32())
    });
    let w: Vec<u64> = c.rng.vec(n, |r| {
        r.next_u64() & r.next_u64() & r.next_u64() & r.next_u64()
    });
    let (pv, pw) = (c.upload(&v), c.upload(&w));
    let (po, po64) = (
        c.upload(&[u32::MAX, 0, 0x1234]),
        c.upload(&[u64::MAX, 0, 0]),
    );
    c.launch(
        "atomicBitwise",
        d1(blocks(n, 128)),
        d1(128),
        &[
            Arg::Ptr(pv),
            Arg::Ptr(pw),
            Arg::Ptr(po),
            Arg::Ptr(po64),
            Arg::I32(n as i32),
        ],
    );
    let want = [
        v.iter().fold(u32::MAX, |a, x| a & x),
        v.iter().fold(0, |a, x| a | x),
        v.iter().fold(0x1234, |a, x| a ^ x),
    ];
    assert_exact("and, or, xor (u32)", &c.download::<u32>(po, 3), &want);
    let want64 = [
        w.iter().fold(u64::MAX, |a, x| a & x),
        w.iter().fold(0, |a, x| a | x),
        w.iter().fold(0, |a, x| a ^ x),
    ];
    assert_exact("and, or, xor (u64)", &c.download::<u64>(po64, 3), &want64);
}

#[test]
fn atomic_inc_dec() {
    atomic_inc_dec_on("atomics_global");
}

/// `atomic_inc_dec` on the fixture `fx` (also run on other targets by `archs`).
pub fn atomic_inc_dec_on(fx: &str) {
    let mut c = Ctx::new(fx, "atomic_inc_dec");
    let n = c.rng.usize(1000, 5000);
    let limit = c.rng.range_u32(3, 100);
    let (s_inc, s_dec) = (c.rng.range_u32(0, 2 * limit), c.rng.range_u32(0, 2 * limit));
    let (pc, pi, pd) = (
        c.upload(&[s_inc, s_dec]),
        c.zeros::<u32>(n),
        c.zeros::<u32>(n),
    );
    c.launch(
        "atomicIncDec",
        d1(blocks(n, 128)),
        d1(128),
        &[
            Arg::Ptr(pc),
            Arg::Ptr(pi),
            Arg::Ptr(pd),
            Arg::U32(limit),
            Arg::I32(n as i32),
        ],
    );
    let (olds_inc, fin_inc) = inc_states(s_inc, limit, n);
    let (olds_dec, fin_dec) = dec_states(s_dec, limit, n);
    assert_exact(
        "final counters",
        &c.download::<u32>(pc, 2),
        &[fin_inc, fin_dec],
    );
    assert_exact(
        "atomicInc old values",
        &sorted(&c.download::<u32>(pi, n)),
        &sorted(&olds_inc),
    );
    assert_exact(
        "atomicDec old values",
        &sorted(&c.download::<u32>(pd, n)),
        &sorted(&olds_dec),
    );
}

#[test]
fn shared_atomics_int() {
    let mut c = Ctx::new("atomics_shared", "shared_atomics_int");
    let bd = c.rng.pick(&[64usize, 128, 256]);
    let n = c.rng.usize(1000, 5000);
    let v: Vec<i32> = c.rng.vec(n, |r| r.next_u32() as i32);
    let g = n.div_ceil(bd);
    let (pv, po, pu, pi) = (
        c.upload(&v),
        c.zeros::<i32>(16 * g),
        c.zeros::<u32>(16 * g),
        c.zeros::<u32>(n),
    );
    c.launch(
        "sharedAtomicsInt",
        d1(g as u32),
        d1(bd as u32),
        &[
            Arg::Ptr(pv),
            Arg::Ptr(po),
            Arg::Ptr(pu),
            Arg::Ptr(pi),
            Arg::I32(n as i32),
        ],
    );
    let out = c.download::<i32>(po, 16 * g);
    let uout = c.download::<u32>(pu, 16 * g);
    let old_inc = c.download::<u32>(pi, n);
    for (b, chunk) in v.chunks(bd).enumerate() {
        let o = &out[16 * b..16 * b + 5];
        assert_eq!(
            o[0],
            chunk.iter().fold(0i32, |a, x| a.wrapping_add(*x)),
            "block {b}: add"
        );
        assert_eq!(o[1], *chunk.iter().min().unwrap_or(&0), "block {b}: min");
        assert_eq!(o[2], *chunk.iter().max().unwrap_or(&0), "block {b}: max");
        assert!(
            chunk.contains(&o[3]),
            "block {b}: exch left {} which no thread wrote",
            o[3]
        );
        assert_eq!(o[4], chunk.len() as i32, "block {b}: CAS counter");
        let q = &uout[16 * b..16 * b + 5];
        let want_and = chunk
            .iter()
            .fold(u32::MAX, |a, x| a & (*x as u32 | 0x8000_0001));
        let want_or = chunk
            .iter()
            .fold(0u32, |a, x| a | (*x as u32 & 0x0ff0_ff00));
        let want_xor = chunk.iter().fold(0u32, |a, x| a ^ *x as u32);
        let (olds, fin_inc) = inc_states(0, 9, chunk.len());
        let (_, fin_dec) = dec_states(0, 5, chunk.len());
        assert_exact(
            &format!("block {b}: and, or, xor, inc, dec"),
            q,
            &[want_and, want_or, want_xor, fin_inc, fin_dec],
        );
        let got_olds = &old_inc[b * bd..b * bd + chunk.len()];
        assert_exact(
            &format!("block {b}: atomicInc old values"),
            &sorted(got_olds),
            &sorted(&olds),
        );
    }
}

#[test]
fn shared_atomics_wide() {
    let mut c = Ctx::new("atomics_shared", "shared_atomics_wide");
    let bd = c.rng.pick(&[32usize, 96, 256]);
    let n = c.rng.usize(1000, 5000);
    let f: Vec<f32> = c.rng.vec(n, |r| r.range_i32(-4096, 4096) as f32 / 8.0);
    let d: Vec<f64> = c
        .rng
        .vec(n, |r| r.range_i64(-1 << 40, 1 << 40) as f64 / 4096.0);
    let w: Vec<u64> = c.rng.vec(n, |r| r.next_u64());
    let g = n.div_ceil(bd);
    let (pf, pd, pw) = (c.upload(&f), c.upload(&d), c.upload(&w));
    let (pfo, pdo, pwo) = (c.zeros::<f32>(g), c.zeros::<f64>(g), c.zeros::<u64>(3 * g));
    let args = [
        Arg::Ptr(pf),
        Arg::Ptr(pd),
        Arg::Ptr(pw),
        Arg::Ptr(pfo),
        Arg::Ptr(pdo),
        Arg::Ptr(pwo),
        Arg::I32(n as i32),
    ];
    c.launch("sharedAtomicsWide", d1(g as u32), d1(bd as u32), &args);
    let want_f: Vec<f32> = f
        .chunks(bd)
        .map(|ch| ch.iter().map(|x| *x as f64).sum::<f64>() as f32)
        .collect();
    let want_d: Vec<f64> = d.chunks(bd).map(|ch| ch.iter().sum::<f64>()).collect();
    let mut want_w = Vec::new();
    for ch in w.chunks(bd) {
        want_w.push(ch.iter().fold(0u64, |a, x| a.wrapping_add(*x)));
        want_w.push(*ch.iter().min().unwrap_or(&0));
        want_w.push(*ch.iter().max().unwrap_or(&0));
    }
    assert_exact("f32 sums", &c.download::<f32>(pfo, g), &want_f);
    assert_exact("f64 sums", &c.download::<f64>(pdo, g), &want_d);
    assert_exact("u64 add, min, max", &c.download::<u64>(pwo, 3 * g), &want_w);
}
