//! Divergence-heavy CUDA kernels: early return, break/continue, nested ifs, per-lane trip
//! counts, switch in a loop, divergence before a barrier.

use crate::common::*;

#[test]
fn early_return() {
    let mut c = Ctx::new("divergence", "early_return");
    let n = c.rng.usize(1000, 5000);
    let x: Vec<i32> = c.rng.vec(n, |r| r.range_i32(-100, 1000));
    let (px, po) = (c.upload(&x), c.zeros::<i32>(n));
    c.launch(
        "earlyReturn",
        d1(blocks(n, 128)),
        d1(128),
        &[Arg::Ptr(px), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let want: Vec<i32> = x
        .iter()
        .map(|&v| {
            if v < 0 {
                -1
            } else if v & 3 == 0 {
                v / 4
            } else {
                v * 3 + 1
            }
        })
        .collect();
    assert_exact("out", &c.download::<i32>(po, n), &want);
}

#[test]
fn break_continue() {
    let mut c = Ctx::new("divergence", "break_continue");
    let n = c.rng.usize(500, 3000);
    let m = c.rng.usize(5, 60);
    let x: Vec<i32> = c.rng.vec(n, |r| r.range_i32(1, 200));
    let (px, po) = (c.upload(&x), c.zeros::<i32>(n));
    c.launch(
        "breakContinue",
        d1(blocks(n, 96)),
        d1(96),
        &[
            Arg::Ptr(px),
            Arg::Ptr(po),
            Arg::I32(n as i32),
            Arg::I32(m as i32),
        ],
    );
    let want: Vec<i32> = (0..n)
        .map(|i| {
            let mut acc = 0i32;
            for k in 0..m {
                let v = x[(i + k) % n];
                if v % 3 == 0 {
                    continue;
                }
                if v % 7 == 0 {
                    break;
                }
                acc += v;
            }
            acc
        })
        .collect();
    assert_exact("out", &c.download::<i32>(po, n), &want);
}

#[test]
fn nested_ifs() {
    let mut c = Ctx::new("divergence", "nested_ifs");
    let n = c.rng.usize(1000, 4000);
    let a: Vec<i32> = c.rng.vec(n, |r| r.range_i32(-300, 300));
    let b: Vec<i32> = c.rng.vec(n, |r| r.range_i32(-300, 300));
    let (pa, pb, po) = (c.upload(&a), c.upload(&b), c.zeros::<i32>(n));
    c.launch(
        "nestedIfs",
        d1(blocks(n, 128)),
        d1(128),
        &[Arg::Ptr(pa), Arg::Ptr(pb), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let want: Vec<i32> = (0..n)
        .map(|i| {
            let (x, y) = (a[i], b[i]);
            if x > 0 {
                if y > 0 {
                    (x - y).abs()
                } else if x + y > 0 {
                    x * 2
                } else {
                    y * 2
                }
            } else if y > 0 {
                x ^ y
            } else if y < -100 {
                x | y
            } else {
                x & y
            }
        })
        .collect();
    assert_exact("out", &c.download::<i32>(po, n), &want);
}

#[test]
fn collatz_per_lane_trip_counts() {
    let mut c = Ctx::new("divergence", "collatz_per_lane_trip_counts");
    let n = c.rng.usize(500, 2000);
    let cap = c.rng.range_u32(50, 400);
    let x: Vec<u32> = c.rng.vec(n, |r| r.range_u32(1, 1 << 20));
    let (px, po) = (c.upload(&x), c.zeros::<u32>(n));
    c.launch(
        "collatzSteps",
        d1(blocks(n, 64)),
        d1(64),
        &[
            Arg::Ptr(px),
            Arg::Ptr(po),
            Arg::I32(n as i32),
            Arg::U32(cap),
        ],
    );
    let want: Vec<u32> = x
        .iter()
        .map(|&s| {
            let (mut v, mut steps) = (s as u64, 0u32);
            while v != 1 && steps < cap {
                v = if v & 1 == 1 {
                    v.wrapping_mul(3).wrapping_add(1)
                } else {
                    v / 2
                };
                steps += 1;
            }
            steps
        })
        .collect();
    assert_exact("steps", &c.download::<u32>(po, n), &want);
}

#[test]
fn switch_in_loop() {
    let mut c = Ctx::new("divergence", "switch_in_loop");
    let n = c.rng.usize(1000, 4000);
    let x: Vec<i32> = c.rng.vec(n, |r| r.range_i32(-1000, 1000));
    let (px, po) = (c.upload(&x), c.zeros::<i32>(n));
    c.launch(
        "switchLoop",
        d1(blocks(n, 128)),
        d1(128),
        &[Arg::Ptr(px), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let want: Vec<i32> = x
        .iter()
        .map(|&v| {
            let mut acc = 0i32;
            for k in 0..(v & 15) {
                match (v + k) & 3 {
                    0 => acc = acc.wrapping_add(k),
                    1 => acc = acc.wrapping_sub(2 * k),
                    2 => acc ^= v,
                    _ => acc = acc.wrapping_mul(3).wrapping_add(1),
                }
            }
            acc
        })
        .collect();
    assert_exact("out", &c.download::<i32>(po, n), &want);
}

#[test]
fn diverge_then_sync() {
    let mut c = Ctx::new("divergence", "diverge_then_sync");
    let bd = c.rng.pick(&[64u32, 160, 256]) as usize;
    let n = c.rng.usize(1000, 4000);
    let x: Vec<i32> = c.rng.vec(n, |r| r.next_u32() as i32);
    let (px, po) = (c.upload(&x), c.zeros::<i32>(n));
    c.launch(
        "divergeThenSync",
        d1(blocks(n, bd as u32)),
        d1(bd as u32),
        &[Arg::Ptr(px), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let bits = |i: usize| -> i32 {
        x.get(i)
            .map(|&v| if v > 0 { v.count_ones() as i32 } else { 0 })
            .unwrap_or(0)
    };
    let want: Vec<i32> = (0..n)
        .map(|i| {
            let (b, t) = (i / bd, i % bd);
            bits(i) + bits(b * bd + bd - 1 - t)
        })
        .collect();
    assert_exact("out", &c.download::<i32>(po, n), &want);
}
