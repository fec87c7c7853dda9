//! The tutorial CUDA kernels: vector add, matmul (naive, tiled), reductions, histogram, blur,
//! heat stencil, particles.

use crate::common::*;

#[test]
fn vec_add() {
    vec_add_on("vector_add");
}

/// `vec_add` on the fixture `fx` (also run on other targets by `archs`).
pub fn vec_add_on(fx: &str) {
    let mut c = Ctx::new(fx, "vec_add");
    let n = c.rng.usize(1000, 5000);
    let a: Vec<f32> = c.rng.vec(n, |r| r.f32_in(-100.0, 100.0));
    let b: Vec<f32> = c.rng.vec(n, |r| r.f32_in(-100.0, 100.0));
    let (pa, pb, pc) = (c.upload(&a), c.upload(&b), c.zeros::<f32>(n));
    c.launch(
        "vecAdd",
        d1(blocks(n, 256)),
        d1(256),
        &[Arg::Ptr(pa), Arg::Ptr(pb), Arg::Ptr(pc), Arg::I32(n as i32)],
    );
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    assert_exact("c", &c.download::<f32>(pc, n), &want);
}

#[test]
fn saxpy_grid_stride() {
    let mut c = Ctx::new("vector_add", "saxpy_grid_stride");
    let n = c.rng.usize(3000, 9000);
    let alpha = c.rng.f32_in(-3.0, 3.0);
    let x: Vec<f32> = c.rng.vec(n, |r| r.f32_in(-10.0, 10.0));
    let y: Vec<f32> = c.rng.vec(n, |r| r.f32_in(-10.0, 10.0));
    let (px, py) = (c.upload(&x), c.upload(&y));
    // Fewer threads than elements: every thread loops.
    c.launch(
        "saxpyGridStride",
        d1(7),
        d1(96),
        &[
            Arg::F32(alpha),
            Arg::Ptr(px),
            Arg::Ptr(py),
            Arg::I32(n as i32),
        ],
    );
    let want: Vec<f32> = x
        .iter()
        .zip(&y)
        .map(|(x, y)| alpha.mul_add(*x, *y))
        .collect();
    assert_exact("y", &c.download::<f32>(py, n), &want);
}

#[test]
fn scale_float4() {
    let mut c = Ctx::new("vector_add", "scale_float4");
    let n4 = c.rng.usize(300, 900);
    let s = c.rng.f32_in(-2.0, 2.0);
    let x: Vec<f32> = c.rng.vec(4 * n4, |r| r.f32_in(-1e3, 1e3));
    let (px, po) = (c.upload(&x), c.zeros::<f32>(4 * n4));
    c.launch(
        "scaleFloat4",
        d1(blocks(n4, 128)),
        d1(128),
        &[Arg::Ptr(px), Arg::Ptr(po), Arg::F32(s), Arg::I32(n4 as i32)],
    );
    let want: Vec<f32> = x.iter().map(|v| v * s).collect();
    assert_exact("out", &c.download::<f32>(po, 4 * n4), &want);
}

#[test]
fn add_double2() {
    let mut c = Ctx::new("vector_add", "add_double2");
    let n2 = c.rng.usize(200, 700);
    let a: Vec<f64> = c.rng.vec(2 * n2, |r| r.f64_in(-1e6, 1e6));
    let b: Vec<f64> = c.rng.vec(2 * n2, |r| r.f64_in(-1e6, 1e6));
    let (pa, pb, pc) = (c.upload(&a), c.upload(&b), c.zeros::<f64>(2 * n2));
    c.launch(
        "addDouble2",
        d1(blocks(n2, 64)),
        d1(64),
        &[
            Arg::Ptr(pa),
            Arg::Ptr(pb),
            Arg::Ptr(pc),
            Arg::I32(n2 as i32),
        ],
    );
    let want: Vec<f64> = (0..2 * n2)
        .map(|i| if i % 2 == 0 { a[i] + b[i] } else { a[i] - b[i] })
        .collect();
    assert_exact("c", &c.download::<f64>(pc, 2 * n2), &want);
}

/// C = A * B with the PTX's accumulation: acc = fma(a, b, acc) in k order, from +0.
fn matmul_ref(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let mut c = vec![0f32; m * n];
    for r in 0..m {
        for col in 0..n {
            let mut acc = 0f32;
            for t in 0..k {
                acc = a[r * k + t].mul_add(b[t * n + col], acc);
            }
            c[r * n + col] = acc;
        }
    }
    c
}

pub fn matmul_case(fx: &str, test: &str, kernel: &str) {
    matmul_case_k(fx, test, kernel, (10, 60));
}

/// `matmul_case` with the inner dimension drawn from `ks`; returns the launch's report.
fn matmul_case_k(fx: &str, test: &str, kernel: &str, ks: (usize, usize)) -> ptxsim::LaunchReport {
    let mut c = Ctx::new(fx, test);
    let (m, n, k) = (
        c.rng.usize(20, 70),
        c.rng.usize(20, 70),
        c.rng.usize(ks.0, ks.1),
    );
    let a: Vec<f32> = c.rng.vec(m * k, |r| r.f32_in(-1.0, 1.0));
    let b: Vec<f32> = c.rng.vec(k * n, |r| r.f32_in(-1.0, 1.0));
    let (pa, pb, pc) = (c.upload(&a), c.upload(&b), c.zeros::<f32>(m * n));
    let args = [
        Arg::Ptr(pa),
        Arg::Ptr(pb),
        Arg::Ptr(pc),
        Arg::I32(m as i32),
        Arg::I32(n as i32),
        Arg::I32(k as i32),
    ];
    let r = c.launch(
        kernel,
        (blocks(n, 16), blocks(m, 16), 1),
        (16, 16, 1),
        &args,
    );
    assert_exact(
        "C",
        &c.download::<f32>(pc, m * n),
        &matmul_ref(&a, &b, m, n, k),
    );
    r
}

#[test]
fn matmul_naive() {
    matmul_case("matmul", "matmul_naive", "matmulNaive");
}

/// Rows long enough (NVRTC unrolls the dot product by four: 18 to 50 iterations) that
/// compiled code runs the loop in gangs of lanes (`PTXSIM_JIT=always`; small launches are
/// interpreted otherwise).
#[test]
fn matmul_naive_long_rows() {
    let r = matmul_case_k("matmul", "matmul_naive_long_rows", "matmulNaive", (72, 200));
    if r.jit {
        assert!(r.ganged > 0, "no gangs ran");
    }
}

#[test]
fn matmul_tiled() {
    // Zero-padded tiles add fma(0, b, acc) = acc, so the result equals the naive order.
    matmul_case("matmul", "matmul_tiled", "matmulTiled");
}

#[test]
fn dmatmul_fma() {
    let mut c = Ctx::new("matmul", "dmatmul_fma");
    let (m, n, k) = (c.rng.usize(10, 40), c.rng.usize(10, 40), c.rng.usize(5, 40));
    let a: Vec<f64> = c.rng.vec(m * k, |r| r.f64_in(-1.0, 1.0));
    let b: Vec<f64> = c.rng.vec(k * n, |r| r.f64_in(-1.0, 1.0));
    let (pa, pb, pc) = (c.upload(&a), c.upload(&b), c.zeros::<f64>(m * n));
    let args = [
        Arg::Ptr(pa),
        Arg::Ptr(pb),
        Arg::Ptr(pc),
        Arg::I32(m as i32),
        Arg::I32(n as i32),
        Arg::I32(k as i32),
    ];
    c.launch(
        "dmatmulFma",
        (blocks(n, 8), blocks(m, 8), 1),
        (8, 8, 1),
        &args,
    );
    let mut want = vec![0f64; m * n];
    for r in 0..m {
        for col in 0..n {
            let mut acc = 0f64;
            for t in 0..k {
                acc = a[r * k + t].mul_add(b[t * n + col], acc);
            }
            want[r * n + col] = acc;
        }
    }
    assert_exact("C", &c.download::<f64>(pc, m * n), &want);
}

#[test]
fn reduce_block_tree() {
    reduce_block_tree_on("reduce");
}

/// `reduce_block_tree` on the fixture `fx` (also run on other targets by `archs`).
pub fn reduce_block_tree_on(fx: &str) {
    let mut c = Ctx::new(fx, "reduce_block_tree");
    let bd = c.rng.pick(&[64u32, 128, 256]) as usize;
    let n = c.rng.usize(2000, 9000);
    let x: Vec<f32> = c.rng.vec(n, |r| r.f32_in(-1.0, 1.0));
    let g = blocks(n, bd as u32) as usize;
    let (px, pp) = (c.upload(&x), c.zeros::<f32>(g));
    c.launch_shared(
        "reduceBlockTree",
        d1(g as u32),
        d1(bd as u32),
        (bd * 4) as u32,
        &[Arg::Ptr(px), Arg::Ptr(pp), Arg::I32(n as i32)],
    );
    let want: Vec<f32> = (0..g)
        .map(|b| {
            let mut s: Vec<f32> = (0..bd)
                .map(|t| x.get(b * bd + t).copied().unwrap_or(0.0))
                .collect();
            let mut step = bd / 2;
            while step > 0 {
                for t in 0..step {
                    s[t] += s[t + step];
                }
                step /= 2;
            }
            s[0]
        })
        .collect();
    assert_exact("partials", &c.download::<f32>(pp, g), &want);
}

#[test]
fn reduce_warp_shuffle() {
    reduce_warp_shuffle_on("reduce");
}

/// `reduce_warp_shuffle` on the fixture `fx` (also run on other targets by `archs`).
pub fn reduce_warp_shuffle_on(fx: &str) {
    let mut c = Ctx::new(fx, "reduce_warp_shuffle");
    let bd = c.rng.pick(&[32u32, 96, 256, 1024]) as usize;
    let n = c.rng.usize(3000, 20000);
    let x: Vec<i32> = c.rng.vec(n, |r| r.range_i32(-1_000_000, 1_000_000));
    let g = blocks(n, bd as u32) as usize;
    let (px, pp) = (c.upload(&x), c.zeros::<i32>(g));
    c.launch(
        "reduceWarpShuffle",
        d1(g as u32),
        d1(bd as u32),
        &[Arg::Ptr(px), Arg::Ptr(pp), Arg::I32(n as i32)],
    );
    let want: Vec<i32> = (0..g)
        .map(|b| {
            x[b * bd..((b + 1) * bd).min(n)]
                .iter()
                .fold(0i32, |a, v| a.wrapping_add(*v))
        })
        .collect();
    assert_exact("partials", &c.download::<i32>(pp, g), &want);
}

#[test]
fn warp_all_reduce_xor() {
    let mut c = Ctx::new("reduce", "warp_all_reduce_xor");
    let n = c.rng.usize(500, 3000);
    let x: Vec<f32> = c.rng.vec(n, |r| r.f32_in(-10.0, 10.0));
    let (px, po) = (c.upload(&x), c.zeros::<f32>(n));
    c.launch(
        "warpAllReduceXor",
        d1(blocks(n, 128)),
        d1(128),
        &[Arg::Ptr(px), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let mut want = vec![0f32; n];
    for w in 0..n.div_ceil(32) {
        let mut v: Vec<f32> = (0..32)
            .map(|l| x.get(w * 32 + l).copied().unwrap_or(0.0))
            .collect();
        for mask in [16, 8, 4, 2, 1] {
            let old = v.clone();
            for l in 0..32 {
                v[l] = old[l] + old[l ^ mask];
            }
        }
        for l in 0..32 {
            if w * 32 + l < n {
                want[w * 32 + l] = v[l];
            }
        }
    }
    assert_exact("out", &c.download::<f32>(po, n), &want);
}

#[test]
fn reduce_thread_fence() {
    let mut c = Ctx::new("reduce", "reduce_thread_fence");
    for round in 0..2 {
        // Twice: the last block resets the module's retirement counter for the next launch.
        let n = c.rng.usize(3000, 12000);
        let x: Vec<u32> = c.rng.vec(n, |r| r.range_u32(0, 65536));
        let g = blocks(n, 256) as usize;
        let (px, pp, pt) = (c.upload(&x), c.zeros::<u32>(g), c.zeros::<u64>(1));
        c.launch(
            "reduceThreadFence",
            d1(g as u32),
            d1(256),
            &[Arg::Ptr(px), Arg::Ptr(pp), Arg::Ptr(pt), Arg::I32(n as i32)],
        );
        let want: u64 = x.iter().map(|v| *v as u64).sum();
        assert_eq!(c.download::<u64>(pt, 1)[0], want, "total, round {round}");
        let parts: Vec<u32> = (0..g)
            .map(|b| x[b * 256..((b + 1) * 256).min(n)].iter().sum())
            .collect();
        assert_exact("partials", &c.download::<u32>(pp, g), &parts);
    }
}

pub fn histogram_case(fx: &str, test: &str, kernel: &str, grid_stride: bool) {
    let mut c = Ctx::new(fx, test);
    let n = c.rng.usize(5000, 40000);
    let skew = c.rng.range_u32(1, 8);
    let data: Vec<u8> = c.rng.vec(n, |r| (r.next_u32() % 256 / skew * skew) as u8);
    let (pd, ph) = (c.upload(&data), c.zeros::<u32>(256));
    let grid = if grid_stride { 13 } else { blocks(n, 256) };
    c.launch(
        kernel,
        d1(grid),
        d1(256),
        &[Arg::Ptr(pd), Arg::Ptr(ph), Arg::I32(n as i32)],
    );
    let mut want = vec![0u32; 256];
    for &d in &data {
        want[d as usize] += 1;
    }
    assert_exact("hist", &c.download::<u32>(ph, 256), &want);
}

#[test]
fn histogram_shared_atomics() {
    histogram_case(
        "histogram",
        "histogram_shared_atomics",
        "histogramShared",
        true,
    );
}

#[test]
fn histogram_global_atomics() {
    histogram_case(
        "histogram",
        "histogram_global_atomics",
        "histogramGlobal",
        false,
    );
}

#[test]
fn blur_3x3() {
    let mut c = Ctx::new("stencil", "blur_3x3");
    let (w, h) = (c.rng.usize(20, 90), c.rng.usize(20, 90));
    let img: Vec<f32> = c.rng.vec(w * h, |r| r.f32_in(0.0, 255.0));
    let (pi, po) = (c.upload(&img), c.zeros::<f32>(w * h));
    c.launch(
        "blur3x3",
        (blocks(w, 16), blocks(h, 16), 1),
        (16, 16, 1),
        &[
            Arg::Ptr(pi),
            Arg::Ptr(po),
            Arg::I32(w as i32),
            Arg::I32(h as i32),
        ],
    );
    let mut want = vec![0f32; w * h];
    for y in 0..h as i64 {
        for x in 0..w as i64 {
            let mut sum = 0f32;
            for dy in -1..=1 {
                let yy = (y + dy).clamp(0, h as i64 - 1);
                for dx in -1..=1 {
                    let xx = (x + dx).clamp(0, w as i64 - 1);
                    sum += img[(yy * w as i64 + xx) as usize];
                }
            }
            want[(y * w as i64 + x) as usize] = sum / 9.0;
        }
    }
    assert_exact("out", &c.download::<f32>(po, w * h), &want);
}

#[test]
fn heat_step() {
    let mut c = Ctx::new("stencil", "heat_step");
    let (w, h) = (c.rng.usize(20, 80), c.rng.usize(20, 80));
    let alpha = c.rng.f32_in(0.05, 0.24);
    let mut u: Vec<f32> = c.rng.vec(w * h, |r| r.f32_in(0.0, 100.0));
    let (pa, pb) = (c.upload(&u), c.zeros::<f32>(w * h));
    let steps = 5;
    for s in 0..steps {
        let (src, dst) = if s % 2 == 0 { (pa, pb) } else { (pb, pa) };
        let args = [
            Arg::Ptr(src),
            Arg::Ptr(dst),
            Arg::I32(w as i32),
            Arg::I32(h as i32),
            Arg::F32(alpha),
        ];
        c.launch(
            "heatStep",
            (blocks(w, 32), blocks(h, 8), 1),
            (32, 8, 1),
            &args,
        );
        let mut next = u.clone();
        for y in 1..h - 1 {
            for x in 1..w - 1 {
                let i = y * w + x;
                // PTX: lap = fma(u, -4, ((l + r) + up) + down); next = fma(lap, alpha, u).
                let sum = u[i - 1] + u[i + 1] + u[i - w] + u[i + w];
                let lap = u[i].mul_add(-4.0, sum);
                next[i] = lap.mul_add(alpha, u[i]);
            }
        }
        u = next;
    }
    let out = if steps % 2 == 0 { pa } else { pb };
    assert_exact("u", &c.download::<f32>(out, w * h), &u);
}

#[test]
fn blur_rgba() {
    let mut c = Ctx::new("stencil", "blur_rgba");
    let (w, h) = (c.rng.usize(10, 60), c.rng.usize(10, 60));
    let img: Vec<u8> = c.rng.vec(4 * w * h, |r| r.next_u32() as u8);
    let (pi, po) = (c.upload(&img), c.zeros::<u8>(4 * w * h));
    c.launch(
        "blurRgba",
        (blocks(w, 8), blocks(h, 8), 1),
        (8, 8, 1),
        &[
            Arg::Ptr(pi),
            Arg::Ptr(po),
            Arg::I32(w as i32),
            Arg::I32(h as i32),
        ],
    );
    let mut want = vec![0u8; 4 * w * h];
    for y in 0..h as i64 {
        for x in 0..w as i64 {
            let mut acc = [0i32; 4];
            let mut count = 0;
            for dy in -1..=1 {
                for dx in -1..=1 {
                    let (xx, yy) = (x + dx, y + dy);
                    if xx < 0 || yy < 0 || xx >= w as i64 || yy >= h as i64 {
                        continue;
                    }
                    let p = ((yy * w as i64 + xx) * 4) as usize;
                    for ch in 0..4 {
                        acc[ch] += img[p + ch] as i32;
                    }
                    count += 1;
                }
            }
            let o = ((y * w as i64 + x) * 4) as usize;
            for ch in 0..4 {
                want[o + ch] = ((acc[ch] + count / 2) / count) as u8;
            }
        }
    }
    assert_exact("out", &c.download::<u8>(po, 4 * w * h), &want);
}

#[test]
fn particles_bin_and_move() {
    let mut c = Ctx::new("particles", "particles_bin_and_move");
    let n = c.rng.usize(2000, 6000);
    let g = c.rng.usize(4, 16);
    let max_per = c.rng.usize(8, 40);
    let mut pos: Vec<f32> = c.rng.vec(2 * n, |r| r.f32_in(0.0, 1.0));
    let mut vel: Vec<f32> = c.rng.vec(2 * n, |r| r.f32_in(-0.5, 0.5));
    let dt = c.rng.f32_in(0.01, 0.3);
    let (pp, pv) = (c.upload(&pos), c.upload(&vel));
    for step in 0..3 {
        let (pc, pi, po) = (
            c.zeros::<i32>(g * g),
            c.zeros::<i32>(g * g * max_per),
            c.zeros::<i32>(1),
        );
        let args = [
            Arg::Ptr(pp),
            Arg::I32(n as i32),
            Arg::I32(g as i32),
            Arg::I32(max_per as i32),
            Arg::Ptr(pc),
            Arg::Ptr(pi),
            Arg::Ptr(po),
        ];
        c.launch("binParticles", d1(blocks(n, 128)), d1(128), &args);
        let mut cells: Vec<Vec<i32>> = vec![Vec::new(); g * g];
        for i in 0..n {
            let cx = ((pos[2 * i] * g as f32) as i32).clamp(0, g as i32 - 1);
            let cy = ((pos[2 * i + 1] * g as f32) as i32).clamp(0, g as i32 - 1);
            cells[(cy * g as i32 + cx) as usize].push(i as i32);
        }
        let counts = c.download::<i32>(pc, g * g);
        let items = c.download::<i32>(pi, g * g * max_per);
        let want_counts: Vec<i32> = cells.iter().map(|v| v.len() as i32).collect();
        assert_exact(&format!("cell counts, step {step}"), &counts, &want_counts);
        let overflow: usize = cells.iter().map(|v| v.len().saturating_sub(max_per)).sum();
        assert_eq!(
            c.download::<i32>(po, 1)[0] as usize,
            overflow,
            "overflow count, step {step}"
        );
        for (cell, members) in cells.iter().enumerate() {
            let stored = members.len().min(max_per);
            let mut got: Vec<i32> = items[cell * max_per..cell * max_per + stored].to_vec();
            got.sort();
            for id in &got {
                assert!(
                    members.contains(id),
                    "cell {cell} holds particle {id}, which is not in it"
                );
            }
            got.dedup();
            assert_eq!(got.len(), stored, "cell {cell}: duplicate slots");
        }
        c.launch(
            "moveParticles",
            d1(blocks(n, 128)),
            d1(128),
            &[Arg::Ptr(pp), Arg::Ptr(pv), Arg::I32(n as i32), Arg::F32(dt)],
        );
        for i in 0..n {
            for d in 0..2 {
                let (mut p, mut v) = (pos[2 * i + d], vel[2 * i + d]);
                p = v.mul_add(dt, p);
                if p < 0.0 {
                    p = -p;
                    v = -v;
                }
                if p > 1.0 {
                    p = 2.0 - p;
                    v = -v;
                }
                pos[2 * i + d] = p;
                vel[2 * i + d] = v;
            }
        }
        assert_exact(
            &format!("pos, step {step}"),
            &c.download::<f32>(pp, 2 * n),
            &pos,
        );
        assert_exact(
            &format!("vel, step {step}"),
            &c.download::<f32>(pv, 2 * n),
            &vel,
        );
    }
}
