//! PTX features beyond what plain CUDA C++ emits: `red.*`, `fence`, `barrier.sync`, `bar.red`
//! (`__syncthreads_count/and/or`), named barriers with thread counts, generic pointers into
//! shared and local memory, barriers inside `.func`s, scoped atomics, `match.sync` and
//! `redux.sync`.

use crate::common::*;

#[test]
fn red_fence_barrier_asm() {
    let mut c = Ctx::new("ptx_features", "red_fence_barrier_asm");
    let bd = c.rng.pick(&[64usize, 128, 256]);
    let n = c.rng.usize(500, 4000);
    let v: Vec<i32> = c.rng.vec(n, |r| r.next_u32() as i32);
    let g = n.div_ceil(bd);
    let pv = c.upload(&v);
    let (pu, pm, pf, pw, pb) = (
        c.zeros::<u32>(1),
        c.upload(&[i32::MIN]),
        c.zeros::<f32>(1),
        c.zeros::<u64>(1),
        c.zeros::<u32>(g),
    );
    let args = [
        Arg::Ptr(pv),
        Arg::Ptr(pu),
        Arg::Ptr(pm),
        Arg::Ptr(pf),
        Arg::Ptr(pw),
        Arg::Ptr(pb),
        Arg::I32(n as i32),
    ];
    c.launch("reductionsAsm", d1(g as u32), d1(bd as u32), &args);
    assert_eq!(
        c.download::<u32>(pu, 1)[0],
        v.iter().fold(0u32, |a, x| a.wrapping_add(*x as u32)),
        "red.global.add.u32"
    );
    assert_eq!(
        c.download::<i32>(pm, 1)[0],
        *v.iter().max().unwrap_or(&0),
        "red.global.max.s32"
    );
    assert_eq!(
        c.download::<f32>(pf, 1)[0] as f64,
        v.iter().map(|x| (x & 1023) as f64).sum::<f64>(),
        "red.global.add.f32"
    );
    assert_eq!(
        c.download::<u64>(pw, 1)[0],
        v.iter().map(|x| *x as u32 as u64).sum::<u64>(),
        "red.global.add.u64"
    );
    let want: Vec<u32> = v
        .chunks(bd)
        .map(|ch| {
            ch.iter()
                .fold(0u32, |a, x| a.wrapping_add(*x as u32 & 0xffff))
        })
        .collect();
    assert_exact(
        "red.shared.add.u32 per block",
        &c.download::<u32>(pb, g),
        &want,
    );
}

#[test]
fn syncthreads_count_and_or() {
    let mut c = Ctx::new("ptx_features", "syncthreads_count_and_or");
    let bd = c.rng.pick(&[32usize, 96, 256, 1024]);
    let n = c.rng.usize(500, 5000);
    // Some blocks all non-negative, some with rare large values.
    let v: Vec<i32> = c.rng.vec(n, |r| match r.range_i32(0, 1000) {
        0 => -1,
        1..=2 => r.range_i32(901, 1000),
        _ => r.range_i32(0, 900),
    });
    let (pv, po) = (c.upload(&v), c.zeros::<i32>(3 * n));
    c.launch(
        "barrierReductions",
        d1(blocks(n, bd as u32)),
        d1(bd as u32),
        &[Arg::Ptr(pv), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let got = c.download::<i32>(po, 3 * n);
    let norm: Vec<i32> = got
        .chunks(3)
        .flat_map(|t| [t[0], (t[1] != 0) as i32, (t[2] != 0) as i32])
        .collect();
    let want: Vec<i32> = v
        .chunks(bd)
        .flat_map(|ch| {
            let count = ch.iter().filter(|x| **x > 0).count() as i32;
            let all = ch.iter().all(|x| *x >= 0) as i32; // padding threads hold 0
            let any = ch.iter().any(|x| *x > 900) as i32;
            std::iter::repeat_n([count, all, any], ch.len()).flatten()
        })
        .collect();
    assert_exact("bar.red.popc / and / or", &norm, &want);
}

#[test]
fn named_barriers_with_counts() {
    let mut c = Ctx::new("ptx_features", "named_barriers_with_counts");
    let n = c.rng.usize(500, 3000);
    let x: Vec<i32> = c.rng.vec(n, |r| r.next_u32() as i32);
    let (px, po) = (c.upload(&x), c.zeros::<i32>(n));
    c.launch(
        "namedBarriers",
        d1(blocks(n, 128)),
        d1(128),
        &[Arg::Ptr(px), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let want: Vec<i32> = (0..n)
        .map(|i| {
            let (base, t) = (i / 128 * 128, i % 128);
            let partner = if t < 64 { 63 - t } else { 64 + 127 - t };
            x.get(base + partner).copied().unwrap_or(0)
        })
        .collect();
    assert_exact("out", &c.download::<i32>(po, n), &want);
}

#[test]
fn generic_pointers_to_shared_global_local() {
    let mut c = Ctx::new("ptx_features", "generic_pointers_to_shared_global_local");
    let bd = c.rng.pick(&[64usize, 128, 256]);
    let n = c.rng.usize(500, 3000);
    let x: Vec<f32> = c.rng.vec(n, |r| r.f32_in(-10.0, 10.0));
    let (px, po) = (c.upload(&x), c.zeros::<f32>(n));
    c.launch(
        "genericPointers",
        d1(blocks(n, bd as u32)),
        d1(bd as u32),
        &[Arg::Ptr(px), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let want: Vec<f32> = (0..n)
        .map(|i| {
            let t = 2.0f32.mul_add(x[i], x[i]);
            let out = 1.0f32.mul_add(t, 0.0);
            let m0 = 0.5f32.mul_add(t, (i % bd) as f32);
            out + (m0 + 1.0)
        })
        .collect();
    assert_exact("out", &c.download::<f32>(po, n), &want);
}

#[test]
fn barrier_inside_device_function() {
    let mut c = Ctx::new("ptx_features", "barrier_inside_device_function");
    let bd = c.rng.pick(&[32usize, 64, 128, 256]);
    let n = c.rng.usize(500, 3000);
    let x: Vec<i32> = c.rng.vec(n, |r| r.range_i32(-100_000, 100_000));
    let (px, po) = (c.upload(&x), c.zeros::<i32>(n));
    c.launch(
        "syncInFunction",
        d1(blocks(n, bd as u32)),
        d1(bd as u32),
        &[Arg::Ptr(px), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let want: Vec<i32> = x
        .chunks(bd)
        .flat_map(|ch| {
            let s: i32 = ch.iter().sum();
            std::iter::repeat_n(s.wrapping_mul(1000).wrapping_add(ch.len() as i32), ch.len())
        })
        .collect();
    assert_exact("out", &c.download::<i32>(po, n), &want);
}

#[test]
fn scoped_atomics() {
    let mut c = Ctx::new("ptx_features", "scoped_atomics");
    let bd = c.rng.pick(&[64usize, 256]);
    let n = c.rng.usize(500, 3000);
    let v: Vec<i32> = c.rng.vec(n, |r| r.range_i32(-1_000_000, 1_000_000));
    let g = n.div_ceil(bd);
    let mut init = vec![0i32; 3 + g];
    init[1] = i32::MIN;
    let (pv, po) = (c.upload(&v), c.upload(&init));
    c.launch(
        "scopedAtomics",
        d1(g as u32),
        d1(bd as u32),
        &[Arg::Ptr(pv), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let mut want = vec![v.iter().sum::<i32>(), *v.iter().max().unwrap_or(&0), 7];
    want.extend(v.chunks(bd).map(|ch| ch.iter().sum::<i32>()));
    assert_exact(
        "sys add, cta max, sys exch, cta shared add",
        &c.download::<i32>(po, 3 + g),
        &want,
    );
}

#[test]
fn warp_match_and_reduce() {
    let mut c = Ctx::new("ptx_features", "warp_match_and_reduce");
    let n = c.rng.usize(500, 3000);
    // Few distinct values (so match.any finds groups), whole warps of one value now and then.
    let mut v: Vec<i32> = c.rng.vec(n, |r| r.range_i32(-3, 5));
    for w in 0..n / 32 {
        if c.rng.range_i32(0, 4) == 0 {
            let k = c.rng.range_i32(-3, 5);
            v[w * 32..w * 32 + 32].fill(k);
        }
    }
    let (pv, po) = (c.upload(&v), c.zeros::<u32>(7 * n));
    c.launch(
        "warpMatchReduce",
        d1(blocks(n, 64)),
        d1(64),
        &[Arg::Ptr(pv), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let mut want = Vec::with_capacity(7 * n);
    for i in 0..n {
        let base = i / 32 * 32;
        let w: Vec<i32> = (0..32)
            .map(|l| v.get(base + l).copied().unwrap_or(0))
            .collect();
        let me = w[i % 32];
        let any = w
            .iter()
            .enumerate()
            .fold(0u32, |m, (l, x)| if *x == me { m | 1 << l } else { m });
        let same = w.iter().all(|x| x & 1 == w[0] & 1);
        want.extend([
            any,
            if same { u32::MAX } else { 0 },
            same as u32,
            w.iter().fold(0u32, |a, x| a.wrapping_add(*x as u32)),
            *w.iter().min().unwrap_or(&0) as u32,
            w.iter().map(|x| *x as u32).max().unwrap_or(0),
            w.iter().fold(0u32, |a, x| a ^ *x as u32),
        ]);
    }
    assert_exact(
        "match.any / match.all / pred / redux add, min, max, xor",
        &c.download::<u32>(po, 7 * n),
        &want,
    );
}
