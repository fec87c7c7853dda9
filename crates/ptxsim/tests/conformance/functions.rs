//! Templates, non-inlined device functions (calls, recursion, struct returns, local arrays),
//! 2-D/3-D grids and the special registers, dynamic shared memory, module-scope
//! `__device__`/`__constant__` variables, local memory.

use crate::common::*;

#[test]
fn template_axpy_instantiations() {
    let mut c = Ctx::new("templates", "template_axpy_instantiations");
    let n = c.rng.usize(500, 3000);
    let grid = d1(blocks(n, 128));
    // float
    let (af, x, y) = (
        c.rng.f32_in(-2.0, 2.0),
        c.rng.vec(n, |r| r.f32_in(-9.0, 9.0)),
        c.rng.vec(n, |r| r.f32_in(-9.0, 9.0)),
    );
    let (px, py) = (c.upload(&x), c.upload(&y));
    c.launch(
        "_Z4axpyIfEvT_PKS0_PS0_i",
        grid,
        d1(128),
        &[Arg::F32(af), Arg::Ptr(px), Arg::Ptr(py), Arg::I32(n as i32)],
    );
    let want: Vec<f32> = (0..n).map(|i| af.mul_add(x[i], y[i])).collect();
    assert_exact("axpy<float>", &c.download::<f32>(py, n), &want);
    // double
    let (ad, xd, yd) = (
        c.rng.f64_in(-2.0, 2.0),
        c.rng.vec(n, |r| r.f64_in(-9.0, 9.0)),
        c.rng.vec(n, |r| r.f64_in(-9.0, 9.0)),
    );
    let (px, py) = (c.upload(&xd), c.upload(&yd));
    c.launch(
        "_Z4axpyIdEvT_PKS0_PS0_i",
        grid,
        d1(128),
        &[Arg::F64(ad), Arg::Ptr(px), Arg::Ptr(py), Arg::I32(n as i32)],
    );
    let want: Vec<f64> = (0..n).map(|i| ad.mul_add(xd[i], yd[i])).collect();
    assert_exact("axpy<double>", &c.download::<f64>(py, n), &want);
    // int
    let (ai, xi, yi) = (
        c.rng.range_i32(-50, 50),
        c.rng.vec(n, |r| r.next_u32() as i32),
        c.rng.vec(n, |r| r.next_u32() as i32),
    );
    let (px, py) = (c.upload(&xi), c.upload(&yi));
    c.launch(
        "_Z4axpyIiEvT_PKS0_PS0_i",
        grid,
        d1(128),
        &[Arg::I32(ai), Arg::Ptr(px), Arg::Ptr(py), Arg::I32(n as i32)],
    );
    let want: Vec<i32> = (0..n)
        .map(|i| ai.wrapping_mul(xi[i]).wrapping_add(yi[i]))
        .collect();
    assert_exact("axpy<int>", &c.download::<i32>(py, n), &want);
}

#[test]
fn template_block_reduce_functors() {
    let mut c = Ctx::new("templates", "template_block_reduce_functors");
    let n = c.rng.usize(1000, 5000);
    let x: Vec<i32> = c.rng.vec(n, |r| r.next_u32() as i32);
    let px = c.upload(&x);
    for (kernel, bd, is_max) in [
        ("_Z11blockReduceILi128E5MaxOpEvPKiPii", 128usize, true),
        ("_Z11blockReduceILi64E5XorOpEvPKiPii", 64, false),
    ] {
        let g = n.div_ceil(bd);
        let po = c.zeros::<i32>(g);
        c.launch(
            kernel,
            d1(g as u32),
            d1(bd as u32),
            &[Arg::Ptr(px), Arg::Ptr(po), Arg::I32(n as i32)],
        );
        let want: Vec<i32> = x
            .chunks(bd)
            .map(|ch| {
                if is_max {
                    *ch.iter().max().unwrap_or(&i32::MIN)
                } else {
                    ch.iter().fold(0, |a, v| a ^ v)
                }
            })
            .collect();
        assert_exact(kernel, &c.download::<i32>(po, g), &want);
    }
}

#[test]
fn device_function_lerp() {
    let mut c = Ctx::new("device_functions", "device_function_lerp");
    let n = c.rng.usize(500, 3000);
    let a: Vec<f32> = c.rng.vec(n, |r| r.f32_in(-100.0, 100.0));
    let b: Vec<f32> = c.rng.vec(n, |r| r.f32_in(-100.0, 100.0));
    let (pa, pb, po) = (c.upload(&a), c.upload(&b), c.zeros::<f32>(n));
    c.launch(
        "callLerp",
        d1(blocks(n, 128)),
        d1(128),
        &[Arg::Ptr(pa), Arg::Ptr(pb), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let want: Vec<f32> = (0..n).map(|i| (b[i] - a[i]).mul_add(0.25, a[i])).collect();
    assert_exact("lerp3", &c.download::<f32>(po, n), &want);
}

fn gcd(mut a: i32, mut b: i32) -> i32 {
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

#[test]
fn device_function_gcd_divergent_calls() {
    let mut c = Ctx::new("device_functions", "device_function_gcd_divergent_calls");
    let n = c.rng.usize(500, 3000);
    let a: Vec<i32> = c.rng.vec(n, |r| r.range_i32(1, 100_000));
    let b: Vec<i32> = c.rng.vec(n, |r| r.range_i32(1, 100_000));
    let (pa, pb, po) = (c.upload(&a), c.upload(&b), c.zeros::<i32>(n));
    c.launch(
        "callGcdDivergent",
        d1(blocks(n, 64)),
        d1(64),
        &[Arg::Ptr(pa), Arg::Ptr(pb), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let want: Vec<i32> = (0..n)
        .map(|i| {
            if a[i] & 1 == 1 {
                gcd(a[i], b[i])
            } else {
                -gcd(b[i], a[i] / 2 + 1)
            }
        })
        .collect();
    assert_exact("gcd", &c.download::<i32>(po, n), &want);
}

#[test]
fn device_function_recursion() {
    let mut c = Ctx::new("device_functions", "device_function_recursion");
    let n = c.rng.usize(100, 400);
    let k: Vec<u32> = c.rng.vec(n, |r| r.range_u32(0, 16));
    let (pk, po) = (c.upload(&k), c.zeros::<u64>(n));
    c.launch(
        "callFib",
        d1(blocks(n, 64)),
        d1(64),
        &[Arg::Ptr(pk), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let fib = |k: u32| -> u64 {
        let (mut a, mut b) = (0u64, 1u64);
        for _ in 0..k {
            (a, b) = (b, a + b);
        }
        a
    };
    let want: Vec<u64> = k.iter().map(|&x| fib(x)).collect();
    assert_exact("fib", &c.download::<u64>(po, n), &want);
}

#[test]
fn device_function_struct_return_and_local_sort() {
    let mut c = Ctx::new(
        "device_functions",
        "device_function_struct_return_and_local_sort",
    );
    let n = c.rng.usize(200, 1500);
    let x: Vec<i32> = c.rng.vec(8 * n, |r| r.range_i32(-1_000_000, 1_000_000));
    let (px, po) = (c.upload(&x), c.zeros::<i32>(11 * n));
    c.launch(
        "callMinMaxSort",
        d1(blocks(n, 128)),
        d1(128),
        &[Arg::Ptr(px), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let want: Vec<i32> = x
        .chunks(8)
        .flat_map(|ch| {
            let mut v = ch.to_vec();
            v.sort();
            let (lo, hi, s) = (v[0], v[7], ch.iter().sum::<i32>());
            v.extend([lo, hi, s]);
            v
        })
        .collect();
    assert_exact(
        "sorted, min, max, sum",
        &c.download::<i32>(po, 11 * n),
        &want,
    );
}

#[test]
fn grid_2d_ids() {
    let mut c = Ctx::new("grids", "grid_2d_ids");
    let (w, h) = (c.rng.usize(10, 100), c.rng.usize(10, 100));
    let (bx, by) = (c.rng.pick(&[8u32, 16, 32]), c.rng.pick(&[1u32, 4, 8]));
    let (pb, pt) = (c.zeros::<i32>(w * h), c.zeros::<i32>(w * h));
    let gx = blocks(w, bx);
    c.launch(
        "grid2d",
        (gx, blocks(h, by), 1),
        (bx, by, 1),
        &[
            Arg::Ptr(pb),
            Arg::Ptr(pt),
            Arg::I32(w as i32),
            Arg::I32(h as i32),
        ],
    );
    let (bx, by, gx) = (bx as usize, by as usize, gx as usize);
    let wb: Vec<i32> = (0..w * h)
        .map(|i| ((i / w / by) * gx + (i % w) / bx) as i32)
        .collect();
    let wt: Vec<i32> = (0..w * h)
        .map(|i| ((i / w % by) * bx + (i % w) % bx) as i32)
        .collect();
    assert_exact("block ids", &c.download::<i32>(pb, w * h), &wb);
    assert_exact("thread ids", &c.download::<i32>(pt, w * h), &wt);
}

#[test]
fn grid_3d_volume() {
    let mut c = Ctx::new("grids", "grid_3d_volume");
    let (w, h, d) = (c.rng.usize(5, 40), c.rng.usize(5, 30), c.rng.usize(3, 20));
    let pv = c.zeros::<f32>(w * h * d);
    c.launch(
        "grid3d",
        (blocks(w, 8), blocks(h, 4), blocks(d, 4)),
        (8, 4, 4),
        &[
            Arg::Ptr(pv),
            Arg::I32(w as i32),
            Arg::I32(h as i32),
            Arg::I32(d as i32),
        ],
    );
    let want: Vec<f32> = (0..w * h * d)
        .map(|i| ((i % w) + 100 * (i / w % h) + 10000 * (i / (w * h))) as f32)
        .collect();
    assert_exact("volume", &c.download::<f32>(pv, w * h * d), &want);
}

#[test]
fn special_registers_3d() {
    let mut c = Ctx::new("grids", "special_registers_3d");
    let grid = (
        c.rng.range_u32(1, 4),
        c.rng.range_u32(1, 4),
        c.rng.range_u32(1, 3),
    );
    let block = (
        c.rng.range_u32(1, 9),
        c.rng.range_u32(1, 5),
        c.rng.range_u32(1, 4),
    );
    let nb = (grid.0 * grid.1 * grid.2) as usize;
    let nt = (block.0 * block.1 * block.2) as usize;
    let po = c.zeros::<u32>(nb * nt * 12);
    c.launch("dimsRecord", grid, block, &[Arg::Ptr(po)]);
    let mut want = Vec::new();
    for bz in 0..grid.2 {
        for by in 0..grid.1 {
            for bx in 0..grid.0 {
                for tz in 0..block.2 {
                    for ty in 0..block.1 {
                        for tx in 0..block.0 {
                            want.extend([
                                tx, ty, tz, block.0, block.1, block.2, bx, by, bz, grid.0, grid.1,
                                grid.2,
                            ]);
                        }
                    }
                }
            }
        }
    }
    assert_exact(
        "tid, ntid, ctaid, nctaid",
        &c.download::<u32>(po, nb * nt * 12),
        &want,
    );
}

#[test]
fn stencil_3d() {
    let mut c = Ctx::new("grids", "stencil_3d");
    let (w, h, d) = (c.rng.usize(5, 30), c.rng.usize(5, 30), c.rng.usize(5, 20));
    let x: Vec<f32> = c.rng.vec(w * h * d, |r| r.f32_in(-10.0, 10.0));
    let (px, po) = (c.upload(&x), c.zeros::<f32>(w * h * d));
    c.launch(
        "stencil3d",
        (blocks(w, 8), blocks(h, 8), blocks(d, 4)),
        (8, 8, 4),
        &[
            Arg::Ptr(px),
            Arg::Ptr(po),
            Arg::I32(w as i32),
            Arg::I32(h as i32),
            Arg::I32(d as i32),
        ],
    );
    let mut want = vec![0f32; w * h * d];
    for z in 1..d - 1 {
        for y in 1..h - 1 {
            for xx in 1..w - 1 {
                let i = (z * h + y) * w + xx;
                let s = x[i - 1] + x[i + 1] + x[i - w] + x[i + w] + x[i - w * h] + x[i + w * h];
                want[i] = (s + x[i]) / 7.0;
            }
        }
    }
    assert_exact("out", &c.download::<f32>(po, w * h * d), &want);
}

#[test]
fn clocks_monotonic() {
    let mut c = Ctx::new("grids", "clocks_monotonic");
    let n = c.rng.usize(100, 1000);
    let x: Vec<i32> = c.rng.vec(n, |r| r.range_i32(-1000, 1000));
    let (px, po) = (c.upload(&x), c.zeros::<i32>(2 * n));
    c.launch(
        "clocks",
        d1(blocks(n, 64)),
        d1(64),
        &[Arg::Ptr(px), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let want: Vec<i32> = (0..n)
        .flat_map(|i| [1, (0..16).map(|k| x[(i + k) % n]).sum()])
        .collect();
    assert_exact(
        "clock64/globaltimer monotonic, sums",
        &c.download::<i32>(po, 2 * n),
        &want,
    );
}

#[test]
fn dynamic_shared_reverse() {
    let mut c = Ctx::new("dynamic_shared", "dynamic_shared_reverse");
    let bd = c.rng.pick(&[32usize, 100, 256, 1000]);
    let n = c.rng.usize(1000, 5000);
    let x: Vec<i32> = c.rng.vec(n, |r| r.next_u32() as i32);
    let (px, po) = (c.upload(&x), c.zeros::<i32>(n));
    c.launch_shared(
        "reverseBlocks",
        d1(blocks(n, bd as u32)),
        d1(bd as u32),
        (bd * 4) as u32,
        &[Arg::Ptr(px), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let want: Vec<i32> = x
        .chunks(bd)
        .flat_map(|ch| ch.iter().rev().copied().collect::<Vec<_>>())
        .collect();
    assert_exact("reversed", &c.download::<i32>(po, n), &want);
}

#[test]
fn dynamic_shared_carved() {
    let mut c = Ctx::new("dynamic_shared", "dynamic_shared_carved");
    let bd = c.rng.pick(&[32usize, 96, 256]);
    let n = c.rng.usize(1000, 4000);
    let f: Vec<f32> = c.rng.vec(n, |r| r.f32_in(-4.0, 4.0));
    let d: Vec<f64> = c.rng.vec(n, |r| r.f64_in(-4.0, 4.0));
    let (pf, pd, po) = (c.upload(&f), c.upload(&d), c.zeros::<f64>(n));
    c.launch_shared(
        "carvedBuffers",
        d1(blocks(n, bd as u32)),
        d1(bd as u32),
        (bd * 12) as u32,
        &[Arg::Ptr(pf), Arg::Ptr(pd), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let want: Vec<f64> = (0..n)
        .map(|i| {
            let (b, t) = (i / bd, i % bd);
            let j = b * bd + (t + 1) % bd;
            let dj = d.get(j).copied().unwrap_or(0.0);
            dj * f[i] as f64 + bd as f64
        })
        .collect();
    assert_exact("out", &c.download::<f64>(po, n), &want);
}

#[test]
fn constant_memory_polynomial() {
    let mut c = Ctx::new("memory_spaces", "constant_memory_polynomial");
    let n = c.rng.usize(500, 3000);
    let x: Vec<f32> = c.rng.vec(n, |r| r.f32_in(-3.0, 3.0));
    let (px, py) = (c.upload(&x), c.zeros::<f32>(n));
    c.launch(
        "polyConst",
        d1(blocks(n, 128)),
        d1(128),
        &[Arg::Ptr(px), Arg::Ptr(py), Arg::I32(n as i32)],
    );
    let coeffs = [0.5f32, -1.25, 2.0, 0.125, 3.0];
    let want: Vec<f32> = x
        .iter()
        .map(|v| {
            let mut acc = coeffs[4];
            for k in (0..4).rev() {
                acc = acc.mul_add(*v, coeffs[k]);
            }
            acc
        })
        .collect();
    assert_exact("poly", &c.download::<f32>(py, n), &want);
}

#[test]
fn constant_memory_stencil() {
    let mut c = Ctx::new("memory_spaces", "constant_memory_stencil");
    let n = c.rng.usize(500, 3000);
    let x: Vec<i32> = c.rng.vec(n, |r| r.range_i32(-10000, 10000));
    let (px, po) = (c.upload(&x), c.zeros::<i32>(n));
    c.launch(
        "constStencil",
        d1(blocks(n, 128)),
        d1(128),
        &[Arg::Ptr(px), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let offs = [-2i64, -1, 1, 2];
    let want: Vec<i32> = (0..n as i64)
        .map(|i| {
            (0..4)
                .map(|k| x[(i + offs[k]).clamp(0, n as i64 - 1) as usize] * (k as i32 + 1))
                .sum()
        })
        .collect();
    assert_exact("out", &c.download::<i32>(po, n), &want);
}

#[test]
fn device_globals_persist_across_launches() {
    let mut c = Ctx::new("memory_spaces", "device_globals_persist_across_launches");
    let (ps, pr, pt) = (c.zeros::<i32>(1), c.zeros::<i32>(1), c.zeros::<u64>(4));
    let mut expected = 100;
    for _ in 0..3 {
        let n = c.rng.usize(1, 2000);
        c.launch(
            "bumpCounter",
            d1(blocks(n, 128)),
            d1(128),
            &[Arg::Ptr(ps), Arg::I32(n as i32)],
        );
        expected += n as i32;
        assert_eq!(
            c.download::<i32>(ps, 1)[0],
            1,
            "initialised __device__ table"
        );
        c.launch("readCounter", d1(1), d1(32), &[Arg::Ptr(pr), Arg::Ptr(pt)]);
        assert_eq!(c.download::<i32>(pr, 1)[0], expected, "__device__ counter");
    }
    assert_exact(
        "__device__ table",
        &c.download::<u64>(pt, 4),
        &[1, 1 << 40, 12345678901, u64::MAX],
    );
}

#[test]
fn local_memory_histogram() {
    let mut c = Ctx::new("memory_spaces", "local_memory_histogram");
    let n = c.rng.usize(200, 1500);
    let per = c.rng.usize(1, 40);
    let x: Vec<u8> = c.rng.vec(n * per, |r| r.next_u32() as u8);
    let (px, po) = (c.upload(&x), c.zeros::<i32>(n));
    c.launch(
        "localHistogram",
        d1(blocks(n, 128)),
        d1(128),
        &[
            Arg::Ptr(px),
            Arg::Ptr(po),
            Arg::I32(n as i32),
            Arg::I32(per as i32),
        ],
    );
    let want: Vec<i32> = x
        .chunks(per)
        .map(|ch| {
            let mut counts = [0i32; 16];
            for b in ch {
                counts[(b & 15) as usize] += 1;
            }
            let best = (0..16).fold(0, |best, k| if counts[k] > counts[best] { k } else { best });
            best as i32 * 1000 + counts[best]
        })
        .collect();
    assert_exact("mode of nibbles", &c.download::<i32>(po, n), &want);
}
