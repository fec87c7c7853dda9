//! Tensor cores on NVRTC output of `ptx/wmma.cu`: nvcuda::wmma products (f16 in every layout,
//! f16 accumulators, bf16, tf32, the m32n8k16 and m8n32k16 shapes, shared-memory tiles; every
//! shape x multiplicand type x A/B layout with row- and column-major C) against CPU references,
//! the fragment element mapping `exec::tensor` documents, misuse (divergent wmma, a
//! lane-dependent guard, an out-of-bounds tile, invalid forms rejected at load), and
//! `mma.sync` / `ldmatrix` from inline asm with the PTX ISA's documented layouts.

use super::util::*;
use crate::sem::ieee::{f16_to_f32, f32_to_f16};
use crate::*;

const PTX: &str = include_str!("ptx/wmma.ptx");

/// f32 → bf16 bits, to nearest even (inputs are finite).
fn bf16(x: f32) -> u16 {
    let b = x.to_bits();
    ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) as u16
}

fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// f32 → tf32 value, to nearest with ties away from zero (10 fraction bits), computed in f64.
fn tf32(x: f32) -> f32 {
    if x == 0.0 {
        return x;
    }
    let v = x as f64;
    let ulp = 2f64.powi(v.abs().log2().floor() as i32 - 10);
    ((v / ulp).round() * ulp) as f32
}

fn upload_u16(dev: &Device, v: &[u16]) -> DevicePtr {
    let p = dev.alloc(v.len() * 2).unwrap();
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    dev.write(p, 0, &bytes).unwrap();
    p
}

fn download_u16(dev: &Device, p: DevicePtr, n: usize) -> Vec<u16> {
    let mut b = vec![0u8; n * 2];
    dev.read(p, 0, &mut b).unwrap();
    b.chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}

fn f32b(v: f32) -> [u8; 4] {
    v.to_le_bytes()
}

/// Whether `got` is `want` (an f64 reference) within the rounding of a k-term f32 sum whose
/// terms' magnitudes add up to `mag`.
fn close(got: f32, want: f64, k: usize, mag: f64) -> bool {
    (got as f64 - want).abs() <= (k as f64 + 2.0) * f32::EPSILON as f64 * mag + 1e-30
}

/// Random f16 inputs in [-1, 1) (or small integers, whose products and sums are exact).
fn halves(rng: &mut Rng, n: usize, ints: bool) -> Vec<u16> {
    (0..n)
        .map(|_| {
            let v = if ints {
                rng.below(9) as f32 - 4.0
            } else {
                rng.f32()
            };
            f32_to_f16(v)
        })
        .collect()
}

/// C = A * B + C0 with M = N = K = 64 through `kernel` (`mm_f16` in wmma.cu), A and B laid out
/// as `a_row`/`b_row` say, C read back row-major (or from column-major storage).
fn f16_matmul(ptx: &str, kernel: &str, a_row: bool, b_row: bool, store_col: bool, ints: bool) {
    let (m, n, k) = (64usize, 64usize, 64usize);
    let dev = Device::new();
    let module = dev.load_module(ptx).unwrap();
    let mut rng = Rng(seed());
    let a = halves(&mut rng, m * k, ints);
    let b = halves(&mut rng, k * n, ints);
    let c0: Vec<f32> = (0..m * n)
        .map(|_| {
            if ints {
                rng.below(7) as f32 - 3.0
            } else {
                rng.f32()
            }
        })
        .collect();
    // a[i][kk] is element (i, kk) of A whatever the layout in memory.
    let a_at = |i: usize, kk: usize| f16_to_f32(a[if a_row { i * k + kk } else { kk * m + i }]);
    let b_at = |kk: usize, j: usize| f16_to_f32(b[if b_row { kk * n + j } else { j * k + kk }]);
    let (pa, pb, pc0) = (
        upload_u16(&dev, &a),
        upload_u16(&dev, &b),
        upload_f32(&dev, &c0),
    );
    let pc = dev.alloc(m * n * 4).unwrap();
    let warps = (m / 16) * (n / 16);
    run(
        &dev,
        &module,
        kernel,
        ((warps as u32 * 32).div_ceil(128), 1, 1),
        (128, 1, 1),
        &[
            &p64(pa),
            &p64(pb),
            &p64(pc0),
            &p64(pc),
            &i32b(m as i32),
            &i32b(n as i32),
            &i32b(k as i32),
        ],
    );
    let got = download_f32(&dev, pc, m * n);
    for i in 0..m {
        for j in 0..n {
            let (mut s, mut mag) = (c0[i * n + j] as f64, c0[i * n + j].abs() as f64);
            for kk in 0..k {
                let p = a_at(i, kk) as f64 * b_at(kk, j) as f64;
                s += p;
                mag += p.abs();
            }
            let g = got[if store_col { j * m + i } else { i * n + j }];
            if ints {
                assert_eq!(g as f64, s, "{kernel} C[{i}][{j}]");
            } else {
                assert!(close(g, s, k, mag), "{kernel} C[{i}][{j}] = {g}, want {s}");
            }
        }
    }
}

#[test]
fn wmma_f16_row_row() {
    f16_matmul(PTX, "wmma_f16_rr", true, true, false, false);
}

#[test]
fn wmma_f16_row_col() {
    f16_matmul(PTX, "wmma_f16_rc", true, false, false, false);
}

#[test]
fn wmma_f16_col_row() {
    f16_matmul(PTX, "wmma_f16_cr", false, true, false, false);
}

#[test]
fn wmma_f16_col_col_stored_column_major() {
    f16_matmul(PTX, "wmma_f16_cc_storecol", false, false, true, false);
}

#[test]
fn wmma_f16_small_integers_are_exact() {
    f16_matmul(PTX, "wmma_f16_rc", true, false, false, true);
    f16_matmul(PTX, "wmma_f16_cc_storecol", false, false, true, true);
}

#[test]
fn wmma_on_compute_90_ptx() {
    // NVRTC's compute_90 output of wmma.cu differs from compute_80's only in `.target`.
    let ptx = PTX.replace(".target sm_80", ".target sm_90");
    assert_ne!(ptx, PTX);
    f16_matmul(&ptx, "wmma_f16_rc", true, false, false, false);
}

#[test]
fn wmma_f16_accumulators() {
    let (m, n, k) = (32usize, 48usize, 64usize);
    let dev = Device::new();
    let module = dev.load_module(PTX).unwrap();
    let mut rng = Rng(seed());
    let a = halves(&mut rng, m * k, false);
    let b = halves(&mut rng, n * k, false); // column-major: b[j * k + kk]
    let c = halves(&mut rng, m * n, false);
    let (pa, pb, pc) = (
        upload_u16(&dev, &a),
        upload_u16(&dev, &b),
        upload_u16(&dev, &c),
    );
    let warps = (m / 16) * (n / 16);
    run(
        &dev,
        &module,
        "wmma_f16acc",
        ((warps as u32 * 32).div_ceil(64), 1, 1),
        (64, 1, 1),
        &[
            &p64(pa),
            &p64(pb),
            &p64(pc),
            &i32b(m as i32),
            &i32b(n as i32),
            &i32b(k as i32),
        ],
    );
    let got = download_u16(&dev, pc, m * n);
    for i in 0..m {
        for j in 0..n {
            // The accumulator is f16 between the kernel's 16-wide k steps: rounded each time.
            let (mut s, mut big) = (f16_to_f32(c[i * n + j]) as f64, 0f64);
            for k0 in (0..k).step_by(16) {
                for kk in k0..k0 + 16 {
                    s += f16_to_f32(a[i * k + kk]) as f64 * f16_to_f32(b[j * k + kk]) as f64;
                }
                s = f16_to_f32(f32_to_f16(s as f32)) as f64;
                big = big.max(s.abs());
            }
            let g = f16_to_f32(got[i * n + j]) as f64;
            // One f16 rounding per step, each up to an ulp off the reference's.
            let tol = (k / 16) as f64 * big.max(2f64.powi(-14)) * 2f64.powi(-10);
            assert!((g - s).abs() <= tol, "C[{i}][{j}] = {g}, want {s}");
        }
    }
}

#[test]
fn wmma_bf16_with_elementwise_scaling() {
    let (m, n, k) = (48usize, 32usize, 64usize);
    let dev = Device::new();
    let module = dev.load_module(PTX).unwrap();
    let mut rng = Rng(seed());
    let a: Vec<u16> = (0..m * k).map(|_| bf16(rng.f32() * 8.0)).collect();
    let b: Vec<u16> = (0..k * n).map(|_| bf16(rng.f32())).collect(); // row-major
    let c: Vec<f32> = (0..m * n).map(|_| rng.f32()).collect();
    let (alpha, beta) = (1.5f32, -0.75f32);
    // Interpreted, and with the scaling loops compiled (the JIT must write back the
    // fragment registers that the interpreted wmma instructions read).
    for jit in [JitMode::Off, JitMode::Always] {
        let (pa, pb, pc) = (
            upload_u16(&dev, &a),
            upload_u16(&dev, &b),
            upload_f32(&dev, &c),
        );
        let warps = (m / 16) * (n / 16);
        let mut cfg = config(((warps as u32 * 32).div_ceil(128), 1, 1), (128, 1, 1));
        cfg.engines.jit = jit;
        let r = dev
            .launch(
                &module,
                "wmma_bf16",
                &cfg,
                &[
                    &p64(pa),
                    &p64(pb),
                    &p64(pc),
                    &i32b(m as i32),
                    &i32b(n as i32),
                    &i32b(k as i32),
                    &f32b(alpha),
                    &f32b(beta),
                ],
            )
            .unwrap();
        assert!(r.reports.is_empty());
        // (Compiled regions exist only with the `accel` feature.)
        #[cfg(feature = "accel")]
        assert_eq!(r.jit, jit == JitMode::Always);
        let got = download_f32(&dev, pc, m * n);
        for i in 0..m {
            for j in 0..n {
                let (mut s, mut mag) = (0f64, 0f64);
                for kk in 0..k {
                    let p = bf16_to_f32(a[i * k + kk]) as f64 * bf16_to_f32(b[kk * n + j]) as f64;
                    s += p;
                    mag += p.abs();
                }
                let want = alpha as f64 * s + beta as f64 * c[i * n + j] as f64;
                let mag = alpha as f64 * mag + (beta * c[i * n + j]).abs() as f64;
                assert!(
                    close(got[i * n + j], want, k + 2, mag),
                    "C[{i}][{j}] = {}, want {want}",
                    got[i * n + j]
                );
            }
        }
    }
}

#[test]
fn wmma_tf32_m16n16k8() {
    let (m, n, k) = (32usize, 32usize, 64usize);
    let dev = Device::new();
    let module = dev.load_module(PTX).unwrap();
    let mut rng = Rng(seed());
    let a: Vec<f32> = (0..m * k).map(|_| rng.f32() * 3.0).collect();
    let b: Vec<f32> = (0..n * k).map(|_| rng.f32()).collect(); // column-major
    let (pa, pb) = (upload_f32(&dev, &a), upload_f32(&dev, &b));
    let pc = dev.alloc(m * n * 4).unwrap();
    let warps = (m / 16) * (n / 16);
    run(
        &dev,
        &module,
        "wmma_tf32",
        ((warps as u32 * 32).div_ceil(128), 1, 1),
        (128, 1, 1),
        &[
            &p64(pa),
            &p64(pb),
            &p64(pc),
            &i32b(m as i32),
            &i32b(n as i32),
            &i32b(k as i32),
        ],
    );
    let got = download_f32(&dev, pc, m * n);
    for i in 0..m {
        for j in 0..n {
            let (mut s, mut mag, mut s32) = (0f64, 0f64, 0f64);
            for kk in 0..k {
                let p = tf32(a[i * k + kk]) as f64 * tf32(b[j * k + kk]) as f64;
                s += p;
                mag += p.abs();
                s32 += a[i * k + kk] as f64 * b[j * k + kk] as f64;
            }
            let g = got[i * n + j];
            assert!(close(g, s, k, mag), "C[{i}][{j}] = {g}, want {s}");
            // tf32 keeps 10 fraction bits: far from the f32 product sum, but near it.
            assert!((g as f64 - s32).abs() <= 2f64.powi(-9) * mag, "C[{i}][{j}]");
        }
    }
}

/// The m32n8k16 / m8n32k16 kernels: one tile, C = A (row, M x 16) * B (col) + 1.
fn other_shape(kernel: &str, m: usize, n: usize) {
    let dev = Device::new();
    let module = dev.load_module(PTX).unwrap();
    let mut rng = Rng(seed());
    let a = halves(&mut rng, m * 16, true);
    let b = halves(&mut rng, n * 16, true);
    let (pa, pb) = (upload_u16(&dev, &a), upload_u16(&dev, &b));
    let pc = dev.alloc(m * n * 4).unwrap();
    run(
        &dev,
        &module,
        kernel,
        (1, 1, 1),
        (32, 1, 1),
        &[&p64(pa), &p64(pb), &p64(pc)],
    );
    let got = download_f32(&dev, pc, m * n);
    for i in 0..m {
        for j in 0..n {
            let s: f32 = 1.0
                + (0..16)
                    .map(|kk| f16_to_f32(a[i * 16 + kk]) * f16_to_f32(b[j * 16 + kk]))
                    .sum::<f32>();
            assert_eq!(got[i * n + j], s, "{kernel} C[{i}][{j}]");
        }
    }
}

#[test]
fn wmma_m32n8k16_and_m8n32k16() {
    other_shape("wmma_m32n8k16", 32, 8);
    other_shape("wmma_m8n32k16", 8, 32);
}

#[test]
fn wmma_tiles_in_shared_memory() {
    let n = 64usize;
    let dev = Device::new();
    let module = dev.load_module(PTX).unwrap();
    let mut rng = Rng(seed());
    let a = halves(&mut rng, 16 * 16, true);
    let b = halves(&mut rng, 16 * n, true);
    let (pa, pb) = (upload_u16(&dev, &a), upload_u16(&dev, &b));
    let pc = dev.alloc(16 * n * 4).unwrap();
    run(
        &dev,
        &module,
        "wmma_shared",
        ((n / 16) as u32, 1, 1),
        (32, 1, 1),
        &[&p64(pa), &p64(pb), &p64(pc), &i32b(n as i32)],
    );
    let got = download_f32(&dev, pc, 16 * n);
    for i in 0..16 {
        for j in 0..n {
            let s: f32 = (0..16)
                .map(|kk| f16_to_f32(a[i * 16 + kk]) * f16_to_f32(b[kk * n + j]))
                .sum();
            assert_eq!(got[i * n + j], s, "C[{i}][{j}]");
        }
    }
}

#[test]
fn wmma_fragment_element_mapping() {
    let dev = Device::new();
    let module = dev.load_module(PTX).unwrap();
    let mh: Vec<u16> = (0..256).map(|i| f32_to_f16(i as f32)).collect();
    let mf: Vec<f32> = (0..256).map(|i| i as f32).collect();
    let (ph, pf) = (upload_u16(&dev, &mh), upload_f32(&dev, &mf));
    let out = dev.alloc(3 * 32 * 16 * 4).unwrap();
    let stored = dev.alloc(256 * 4).unwrap();
    run(
        &dev,
        &module,
        "wmma_layout",
        (1, 1, 1),
        (32, 1, 1),
        &[&p64(ph), &p64(pf), &p64(out), &p64(stored)],
    );
    let out = download_f32(&dev, out, 3 * 32 * 16);
    let stored = download_f32(&dev, stored, 256);
    for l in 0..32 {
        let (g, t) = (l / 4, l % 4);
        for i in 0..16 {
            // Two mma.m16n8k16 tiles along N; the 16 f16 elements repeat the 8 of the tile.
            let e = i % 8;
            let (row, col) = (g + 8 * ((e >> 1) & 1), 2 * t + (e & 1) + 8 * (e >> 2));
            assert_eq!(
                out[l * 16 + i],
                (row * 16 + col) as f32,
                "a: lane {l} x[{i}]"
            );
            // B (K x N) loaded column-major from M: element (k, n) is M[n][k] = n * 16 + k.
            let (kk, nn) = (2 * t + (e & 1) + 8 * ((e >> 1) & 1), g + 8 * (e >> 2));
            assert_eq!(
                out[(32 + l) * 16 + i],
                (nn * 16 + kk) as f32,
                "b: lane {l} x[{i}]"
            );
            if i < 8 {
                assert_eq!(
                    out[(64 + l) * 16 + i],
                    (row * 16 + col) as f32,
                    "acc: lane {l} x[{i}]"
                );
                assert_eq!(
                    stored[row * 16 + col],
                    (l * 100 + i) as f32,
                    "stored: lane {l} x[{i}]"
                );
            }
        }
    }
}

#[test]
fn divergent_wmma_is_a_fault_naming_the_instruction() {
    let dev = Device::new();
    let module = dev.load_module(PTX).unwrap();
    let pa = upload_u16(&dev, &[0u16; 256]);
    let pc = dev.alloc(256 * 4).unwrap();
    for check in [true, false] {
        let mut cfg = config((1, 1, 1), (32, 1, 1));
        cfg.check = check;
        let e = dev
            .launch(&module, "wmma_divergent", &cfg, &[&p64(pa), &p64(pc)])
            .unwrap_err();
        let LaunchError::Fault { report, .. } = e else {
            panic!("{e:?}")
        };
        assert_eq!(
            report.kind,
            CheckKind::DivergentWarpCollective,
            "{report:#?}"
        );
        assert!(
            report
                .message
                .contains("`wmma.load.a.sync.aligned.row.m16n16k16"),
            "{}",
            report.message
        );
        assert!(
            report.message.contains("16 of the 32 lanes"),
            "{}",
            report.message
        );
        assert!(report.line.is_some());
    }
    // A partial warp cannot run wmma either.
    let cfg = config((1, 1, 1), (16, 1, 1));
    let e = dev
        .launch(&module, "wmma_oob", &cfg, &[&p64(pa), &p64(pc), &i32b(0)])
        .unwrap_err();
    let LaunchError::Fault { report, .. } = e else {
        panic!("{e:?}")
    };
    assert_eq!(report.kind, CheckKind::DivergentWarpCollective);
}

#[test]
fn out_of_bounds_wmma_load_names_the_address() {
    let dev = Device::new();
    let module = dev.load_module(PTX).unwrap();
    let pa = upload_u16(&dev, &[0u16; 256]);
    let pc = dev.alloc(256 * 4).unwrap();
    // In bounds: rows 0..16.
    run(
        &dev,
        &module,
        "wmma_oob",
        (1, 1, 1),
        (32, 1, 1),
        &[&p64(pa), &p64(pc), &i32b(0)],
    );
    // Rows 8..24 of a 16-row matrix.
    let cfg = config((1, 1, 1), (32, 1, 1));
    let e = dev
        .launch(&module, "wmma_oob", &cfg, &[&p64(pa), &p64(pc), &i32b(8)])
        .unwrap_err();
    let LaunchError::Fault { report, .. } = e else {
        panic!("{e:?}")
    };
    assert_eq!(report.kind, CheckKind::OutOfBounds, "{report:#?}");
    assert!(
        report.address >= pa + 512 && report.address < pa + 1024,
        "{report:#?}"
    );
    assert!(
        report.message.contains(&format!("0x{:x}", report.address)),
        "{}",
        report.message
    );
    assert_eq!(report.space, "global");
}

#[test]
fn wmma_kernels_run_the_same_under_every_tier_and_count_as_tensor() {
    let dev = Device::new();
    let module = dev.load_module(PTX).unwrap();
    let p = module.program("wmma_f16_rc").unwrap();
    assert!(!p.block_tier, "the block tier declines tensor-core kernels");
    let mut rng = Rng(seed());
    let (m, n, k) = (64usize, 64usize, 64usize);
    let a = halves(&mut rng, m * k, false);
    let b = halves(&mut rng, k * n, false);
    let c0: Vec<f32> = (0..m * n).map(|_| rng.f32()).collect();
    let (pa, pb, pc0) = (
        upload_u16(&dev, &a),
        upload_u16(&dev, &b),
        upload_f32(&dev, &c0),
    );
    let args = |pc: DevicePtr| -> Vec<Vec<u8>> {
        vec![
            p64(pa).to_vec(),
            p64(pb).to_vec(),
            p64(pc0).to_vec(),
            p64(pc).to_vec(),
            i32b(m as i32).to_vec(),
            i32b(n as i32).to_vec(),
            i32b(k as i32).to_vec(),
        ]
    };
    let mut results = Vec::new();
    for mode in [JitMode::Off, JitMode::Always] {
        for counters in [false, true] {
            let pc = dev.alloc(m * n * 4).unwrap();
            let mut cfg = config((4, 1, 1), (128, 1, 1));
            cfg.engines.jit = mode;
            if counters {
                cfg.counters = Some(crate::counters::CounterConfig::new(1 << 20));
            }
            let a = args(pc);
            let refs: Vec<&[u8]> = a.iter().map(|v| v.as_slice()).collect();
            let r = dev.launch(&module, "wmma_f16_rc", &cfg, &refs).unwrap();
            assert!(r.reports.is_empty(), "{:#?}", r.reports);
            if let Some(c) = &r.counters {
                // 16 warps, each 4 k-steps of 2 loads and 1 mma, plus the C load and store.
                assert_eq!(c.mix.tensor, 16 * (4 * 3 + 2));
                assert!(c
                    .ncu_metrics()
                    .contains(&("smsp__inst_executed_pipe_tensor.sum", (16 * 14) as f64)));
            }
            results.push(download_f32(&dev, pc, m * n));
        }
    }
    assert!(results.windows(2).all(|w| w[0] == w[1]));
}

/// Gather (row-major A 16 x k, B as N x k, C 16 x 8) and compare D of an mma.sync kernel.
#[test]
fn mma_sync_m16n8k16_f16_and_bf16() {
    let dev = Device::new();
    let module = dev.load_module(PTX).unwrap();
    let mut rng = Rng(seed());
    for (kernel, bf) in [("mma_f16_m16n8k16", false), ("mma_bf16_m16n8k16", true)] {
        for ints in [true, false] {
            let conv = |v: f32| if bf { bf16(v) } else { f32_to_f16(v) };
            let back = |h: u16| if bf { bf16_to_f32(h) } else { f16_to_f32(h) };
            let gen = |rng: &mut Rng| {
                if ints {
                    rng.below(9) as f32 - 4.0
                } else {
                    rng.f32()
                }
            };
            let a: Vec<u16> = (0..256).map(|_| conv(gen(&mut rng))).collect();
            let b: Vec<u16> = (0..128).map(|_| conv(gen(&mut rng))).collect();
            let c: Vec<f32> = (0..128).map(|_| gen(&mut rng)).collect();
            let (pa, pb, pc) = (
                upload_u16(&dev, &a),
                upload_u16(&dev, &b),
                upload_f32(&dev, &c),
            );
            let pd = dev.alloc(128 * 4).unwrap();
            run(
                &dev,
                &module,
                kernel,
                (1, 1, 1),
                (32, 1, 1),
                &[&p64(pa), &p64(pb), &p64(pc), &p64(pd)],
            );
            let d = download_f32(&dev, pd, 128);
            for i in 0..16 {
                for j in 0..8 {
                    let (mut s, mut mag) = (c[i * 8 + j] as f64, c[i * 8 + j].abs() as f64);
                    for kk in 0..16 {
                        let p = back(a[i * 16 + kk]) as f64 * back(b[j * 16 + kk]) as f64;
                        s += p;
                        mag += p.abs();
                    }
                    if ints {
                        assert_eq!(d[i * 8 + j] as f64, s, "{kernel} D[{i}][{j}]");
                    } else {
                        assert!(close(d[i * 8 + j], s, 16, mag), "{kernel} D[{i}][{j}]");
                    }
                }
            }
        }
    }
}

#[test]
fn mma_sync_m16n8k16_f16_accumulators() {
    let dev = Device::new();
    let module = dev.load_module(PTX).unwrap();
    let mut rng = Rng(seed());
    let a = halves(&mut rng, 256, true);
    let b = halves(&mut rng, 128, true);
    let c = halves(&mut rng, 128, true);
    let (pa, pb, pc) = (
        upload_u16(&dev, &a),
        upload_u16(&dev, &b),
        upload_u16(&dev, &c),
    );
    let pd = dev.alloc(128 * 2).unwrap();
    run(
        &dev,
        &module,
        "mma_f16acc_m16n8k16",
        (1, 1, 1),
        (32, 1, 1),
        &[&p64(pa), &p64(pb), &p64(pc), &p64(pd)],
    );
    let d = download_u16(&dev, pd, 128);
    for i in 0..16 {
        for j in 0..8 {
            let s: f32 = f16_to_f32(c[i * 8 + j])
                + (0..16)
                    .map(|kk| f16_to_f32(a[i * 16 + kk]) * f16_to_f32(b[j * 16 + kk]))
                    .sum::<f32>();
            assert_eq!(f16_to_f32(d[i * 8 + j]), s, "D[{i}][{j}]");
        }
    }
}

#[test]
fn mma_sync_m16n8k8_tf32() {
    let dev = Device::new();
    let module = dev.load_module(PTX).unwrap();
    let mut rng = Rng(seed());
    let a: Vec<f32> = (0..128).map(|_| rng.f32()).collect();
    let b: Vec<f32> = (0..64).map(|_| rng.f32()).collect();
    let c: Vec<f32> = (0..128).map(|_| rng.f32()).collect();
    let (pa, pb, pc) = (
        upload_f32(&dev, &a),
        upload_f32(&dev, &b),
        upload_f32(&dev, &c),
    );
    let pd = dev.alloc(128 * 4).unwrap();
    run(
        &dev,
        &module,
        "mma_tf32_m16n8k8",
        (1, 1, 1),
        (32, 1, 1),
        &[&p64(pa), &p64(pb), &p64(pc), &p64(pd)],
    );
    let d = download_f32(&dev, pd, 128);
    for i in 0..16 {
        for j in 0..8 {
            let (mut s, mut mag) = (c[i * 8 + j] as f64, c[i * 8 + j].abs() as f64);
            for kk in 0..8 {
                let p = tf32(a[i * 8 + kk]) as f64 * tf32(b[j * 8 + kk]) as f64;
                s += p;
                mag += p.abs();
            }
            assert!(
                close(d[i * 8 + j], s, 8, mag),
                "D[{i}][{j}] = {}, want {s}",
                d[i * 8 + j]
            );
        }
    }
}

#[test]
fn ldmatrix_x1_x2_x4_and_trans() {
    let dev = Device::new();
    let module = dev.load_module(PTX).unwrap();
    let m: Vec<u16> = (0..256).map(|i| i as u16).collect();
    let pm = upload_u16(&dev, &m);
    let out = dev.alloc(4 * 32 * 4 * 4).unwrap();
    run(
        &dev,
        &module,
        "ldmatrix_test",
        (1, 1, 1),
        (32, 1, 1),
        &[&p64(pm), &p64(out)],
    );
    let out = download_u32(&dev, out, 4 * 32 * 4);
    // Matrix j of x4: rows 8*(j&1).., columns 8*(j>>1).. of M (lane 8j+r gives its row r).
    let at =
        |j: usize, r: usize, c: usize| (r + 8 * (j & 1)) as u32 * 16 + (c + 8 * (j >> 1)) as u32;
    for l in 0..32 {
        let (g, t) = (l / 4, l % 4);
        for j in 0..4 {
            let plain = at(j, g, 2 * t) | at(j, g, 2 * t + 1) << 16;
            let trans = at(j, 2 * t, g) | at(j, 2 * t + 1, g) << 16;
            assert_eq!(out[l * 4 + j], plain, "x4 lane {l} reg {j}");
            assert_eq!(out[(32 + l) * 4 + j], trans, "x4.trans lane {l} reg {j}");
            if j < 2 {
                assert_eq!(out[(64 + l) * 4 + j], plain, "x2 lane {l} reg {j}");
            }
            if j < 1 {
                assert_eq!(out[(96 + l) * 4 + j], plain, "x1 lane {l}");
            }
        }
    }
}

/// `mma.m16n8k8` f16 on hand-written PTX: each lane loads its fragment registers as the host
/// laid them out from the PTX ISA's layout, and stores its D registers likewise.
const MMA_K8: &str = r#"
.version 8.0
.target sm_80
.address_size 64
.visible .entry mma_k8(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)
{
	.reg .b32 %r<8>;
	.reg .f32 %f<12>;
	.reg .b64 %rd<12>;
	ld.param.u64 %rd1, [pa];
	ld.param.u64 %rd2, [pb];
	ld.param.u64 %rd3, [pc];
	ld.param.u64 %rd4, [pd];
	mov.u32 %r1, %laneid;
	mul.wide.u32 %rd5, %r1, 8;
	add.s64 %rd6, %rd1, %rd5;
	ld.global.v2.u32 {%r2, %r3}, [%rd6];
	mul.wide.u32 %rd7, %r1, 4;
	add.s64 %rd8, %rd2, %rd7;
	ld.global.u32 %r4, [%rd8];
	mul.wide.u32 %rd9, %r1, 16;
	add.s64 %rd10, %rd3, %rd9;
	ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd10];
	mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f5, %f6, %f7, %f8}, {%r2, %r3}, {%r4}, {%f1, %f2, %f3, %f4};
	add.s64 %rd11, %rd4, %rd9;
	st.global.v4.f32 [%rd11], {%f5, %f6, %f7, %f8};
	ret;
}
"#;

#[test]
fn mma_sync_m16n8k8_f16_documented_layout() {
    let dev = Device::new();
    let module = dev.load_module(MMA_K8).unwrap();
    let mut rng = Rng(seed());
    let a = halves(&mut rng, 16 * 8, true); // row-major 16 x 8
    let b = halves(&mut rng, 8 * 8, true); // row-major K x N
    let c: Vec<f32> = (0..128).map(|_| rng.below(7) as f32 - 3.0).collect();
    let (mut ra, mut rb, mut rc) = (vec![0u32; 64], vec![0u32; 32], vec![0f32; 128]);
    for l in 0..32 {
        let (g, t) = (l / 4, l % 4);
        // a0, a1: row g; a2, a3: row g + 8; columns 2t, 2t + 1.
        for (i, row) in [g, g + 8].into_iter().enumerate() {
            ra[l * 2 + i] = a[row * 8 + 2 * t] as u32 | (a[row * 8 + 2 * t + 1] as u32) << 16;
        }
        // b0, b1: rows (k) 2t, 2t + 1, column g.
        rb[l] = b[2 * t * 8 + g] as u32 | (b[(2 * t + 1) * 8 + g] as u32) << 16;
        for i in 0..4 {
            rc[l * 4 + i] = c[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)];
        }
    }
    let (pa, pb, pc) = (
        upload_u32(&dev, &ra),
        upload_u32(&dev, &rb),
        upload_f32(&dev, &rc),
    );
    let pd = dev.alloc(128 * 4).unwrap();
    run(
        &dev,
        &module,
        "mma_k8",
        (1, 1, 1),
        (32, 1, 1),
        &[&p64(pa), &p64(pb), &p64(pc), &p64(pd)],
    );
    let d = download_f32(&dev, pd, 128);
    for l in 0..32 {
        let (g, t) = (l / 4, l % 4);
        for i in 0..4 {
            let (row, col) = (g + 8 * (i >> 1), 2 * t + (i & 1));
            let s: f32 = c[row * 8 + col]
                + (0..8)
                    .map(|k| f16_to_f32(a[row * 8 + k]) * f16_to_f32(b[k * 8 + col]))
                    .sum::<f32>();
            assert_eq!(d[l * 4 + i], s, "lane {l} d{i} = D[{row}][{col}]");
        }
    }
}

#[test]
fn unsupported_or_malformed_tensor_instructions_fail_to_load() {
    let dev = Device::new();
    let mma = "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32";
    // mma.sync is row.col only; an f16 multiplicand of m16n8k8 has two registers.
    let bad = MMA_K8.replace(mma, "mma.sync.aligned.m16n8k8.row.row.f32.f16.f16.f32");
    match dev.load_module(&bad) {
        Err(ModuleError::Unsupported { instruction, .. }) => {
            assert!(instruction.contains("row.row"))
        }
        other => panic!("{:?}", other.err()),
    }
    let bad = MMA_K8.replace("{%r2, %r3}, {%r4}", "{%r2}, {%r4}");
    match dev.load_module(&bad) {
        Err(ModuleError::Parse { message, .. }) => {
            assert!(message.contains("2 registers"), "{message}")
        }
        other => panic!("{:?}", other.err()),
    }
}

/// Multiplicand type of a `tile_*` kernel of wmma.cu.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Mul {
    F16,
    Bf16,
    Tf32,
}

/// One `tile_*` kernel (wmma.cu's `tile`): an M x N tile C = A (M x kt) * B (kt x N) + C0 with
/// random inputs in [-1, 1), A and B in the layouts `a_row`/`b_row` give, C0 and C row-major
/// and column-major, against an f64 reference of the same (rounded) inputs.
#[allow(clippy::too_many_arguments)]
fn tile_case(
    dev: &Device,
    module: &Module,
    kernel: &str,
    (m, n, k): (usize, usize, usize),
    ty: Mul,
    a_row: bool,
    b_row: bool,
    f16acc: bool,
    rng: &mut Rng,
) {
    let kt = 32usize;
    // Inputs as they are in memory (u16 bits or f32) and as the values the product uses.
    let gen = |rng: &mut Rng, len: usize| -> (Vec<u8>, Vec<f64>) {
        let mut bytes = Vec::new();
        let mut vals = Vec::new();
        for _ in 0..len {
            let x = rng.f32();
            match ty {
                Mul::F16 => {
                    let h = f32_to_f16(x);
                    bytes.extend(h.to_le_bytes());
                    vals.push(f16_to_f32(h) as f64);
                }
                Mul::Bf16 => {
                    let h = bf16(x);
                    bytes.extend(h.to_le_bytes());
                    vals.push(bf16_to_f32(h) as f64);
                }
                Mul::Tf32 => {
                    bytes.extend(x.to_le_bytes());
                    vals.push(tf32(x) as f64);
                }
            }
        }
        (bytes, vals)
    };
    let (a_mem, a) = gen(rng, m * kt);
    let (b_mem, b) = gen(rng, kt * n);
    let a_at = |i: usize, kk: usize| a[if a_row { i * kt + kk } else { kk * m + i }];
    let b_at = |kk: usize, j: usize| b[if b_row { kk * n + j } else { j * kt + kk }];
    let upload = |bytes: &[u8]| {
        let p = dev.alloc(bytes.len()).unwrap();
        dev.write(p, 0, bytes).unwrap();
        p
    };
    let (pa, pb) = (upload(&a_mem), upload(&b_mem));
    for c_col in [false, true] {
        let at = |i: usize, j: usize| if c_col { j * m + i } else { i * n + j };
        let c0: Vec<f32> = (0..m * n)
            .map(|_| {
                let x = rng.f32();
                if f16acc {
                    f16_to_f32(f32_to_f16(x))
                } else {
                    x
                }
            })
            .collect();
        let pc0 = if f16acc {
            upload_u16(dev, &c0.iter().map(|&x| f32_to_f16(x)).collect::<Vec<_>>())
        } else {
            upload_f32(dev, &c0)
        };
        let csize = if f16acc { 2 } else { 4 };
        let pc = dev.alloc(m * n * csize).unwrap();
        run(
            dev,
            module,
            kernel,
            (1, 1, 1),
            (32, 1, 1),
            &[
                &p64(pa),
                &p64(pb),
                &p64(pc0),
                &p64(pc),
                &i32b(kt as i32),
                &i32b(c_col as i32),
            ],
        );
        let got: Vec<f64> = if f16acc {
            download_u16(dev, pc, m * n)
                .into_iter()
                .map(|h| f16_to_f32(h) as f64)
                .collect()
        } else {
            download_f32(dev, pc, m * n)
                .into_iter()
                .map(|x| x as f64)
                .collect()
        };
        for i in 0..m {
            for j in 0..n {
                let what = format!("{kernel} c_col={c_col} C[{i}][{j}]");
                let g = got[at(i, j)];
                let mut s = c0[at(i, j)] as f64;
                if f16acc {
                    // f16 between the k steps: rounded after each.
                    let mut big = 0f64;
                    for k0 in (0..kt).step_by(k) {
                        s += (k0..k0 + k)
                            .map(|kk| a_at(i, kk) * b_at(kk, j))
                            .sum::<f64>();
                        s = f16_to_f32(f32_to_f16(s as f32)) as f64;
                        big = big.max(s.abs());
                    }
                    let tol = (kt / k) as f64 * big.max(2f64.powi(-14)) * 2f64.powi(-10);
                    assert!((g - s).abs() <= tol, "{what} = {g}, want {s}");
                } else {
                    let mut mag = s.abs();
                    for kk in 0..kt {
                        let p = a_at(i, kk) * b_at(kk, j);
                        s += p;
                        mag += p.abs();
                    }
                    assert!(
                        close(g as f32, s, kt + kt / k, mag),
                        "{what} = {g}, want {s}"
                    );
                }
            }
        }
    }
}

#[test]
fn wmma_every_shape_type_and_layout_against_a_cpu_reference() {
    let dev = Device::new();
    let module = dev.load_module(PTX).unwrap();
    let mut rng = Rng(seed());
    let shapes = [
        ("m16n16k16", (16, 16, 16)),
        ("m32n8k16", (32, 8, 16)),
        ("m8n32k16", (8, 32, 16)),
    ];
    let layouts = [
        ("rr", true, true),
        ("rc", true, false),
        ("cr", false, true),
        ("cc", false, false),
    ];
    let mut cases = 0;
    for (tname, ty) in [("f16", Mul::F16), ("bf16", Mul::Bf16)] {
        for (sname, shape) in shapes {
            for (lname, a_row, b_row) in layouts {
                let kernel = format!("tile_{tname}_{sname}_{lname}");
                tile_case(
                    &dev, &module, &kernel, shape, ty, a_row, b_row, false, &mut rng,
                );
                cases += 1;
            }
        }
    }
    for (lname, a_row, b_row) in layouts {
        let kernel = format!("tile_tf32_m16n16k8_{lname}");
        tile_case(
            &dev,
            &module,
            &kernel,
            (16, 16, 8),
            Mul::Tf32,
            a_row,
            b_row,
            false,
            &mut rng,
        );
        cases += 1;
    }
    // f16 accumulators in the other two shapes.
    tile_case(
        &dev,
        &module,
        "tile_f16acc_m32n8k16_cr",
        (32, 8, 16),
        Mul::F16,
        false,
        true,
        true,
        &mut rng,
    );
    tile_case(
        &dev,
        &module,
        "tile_f16acc_m8n32k16_rc",
        (8, 32, 16),
        Mul::F16,
        true,
        false,
        true,
        &mut rng,
    );
    assert_eq!(cases + 2, 30);
}

#[test]
fn mma_sync_m16n8k8_f16_and_bf16_from_nvrtc() {
    let dev = Device::new();
    let module = dev.load_module(PTX).unwrap();
    let mut rng = Rng(seed());
    for (kernel, bf) in [("mma_f16_m16n8k8", false), ("mma_bf16_m16n8k8", true)] {
        let conv = |v: f32| if bf { bf16(v) } else { f32_to_f16(v) };
        let back = |h: u16| if bf { bf16_to_f32(h) } else { f16_to_f32(h) };
        let a: Vec<u16> = (0..128).map(|_| conv(rng.f32())).collect(); // 16 x 8 row-major
        let b: Vec<u16> = (0..64).map(|_| conv(rng.f32())).collect(); // N x K
        let c: Vec<f32> = (0..128).map(|_| rng.f32()).collect();
        let (pa, pb, pc) = (
            upload_u16(&dev, &a),
            upload_u16(&dev, &b),
            upload_f32(&dev, &c),
        );
        let pd = dev.alloc(128 * 4).unwrap();
        run(
            &dev,
            &module,
            kernel,
            (1, 1, 1),
            (32, 1, 1),
            &[&p64(pa), &p64(pb), &p64(pc), &p64(pd)],
        );
        let d = download_f32(&dev, pd, 128);
        for i in 0..16 {
            for j in 0..8 {
                let (mut s, mut mag) = (c[i * 8 + j] as f64, c[i * 8 + j].abs() as f64);
                for kk in 0..8 {
                    let p = back(a[i * 8 + kk]) as f64 * back(b[j * 8 + kk]) as f64;
                    s += p;
                    mag += p.abs();
                }
                assert!(
                    close(d[i * 8 + j], s, 8, mag),
                    "{kernel} D[{i}][{j}] = {}, want {s}",
                    d[i * 8 + j]
                );
            }
        }
    }
}

#[test]
fn mma_under_a_lane_dependent_guard_is_a_divergence_fault() {
    let dev = Device::new();
    let mma = "\tmma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32";
    let ptx = MMA_K8
        .replace(".reg .b32 %r<8>;", ".reg .b32 %r<8>;\n\t.reg .pred %p<2>;")
        .replace(
            mma,
            &format!("\tsetp.lt.u32 %p1, %r1, 8;\n\t@%p1 {}", &mma[1..]),
        );
    assert_ne!(ptx, MMA_K8);
    let module = dev.load_module(&ptx).unwrap();
    let p = [dev.alloc(64 * 4).unwrap(), dev.alloc(32 * 4).unwrap()];
    let q = [dev.alloc(128 * 4).unwrap(), dev.alloc(128 * 4).unwrap()];
    for check in [true, false] {
        let mut cfg = config((1, 1, 1), (32, 1, 1));
        cfg.check = check;
        let e = dev
            .launch(
                &module,
                "mma_k8",
                &cfg,
                &[&p64(p[0]), &p64(p[1]), &p64(q[0]), &p64(q[1])],
            )
            .unwrap_err();
        let LaunchError::Fault { report, .. } = e else {
            panic!("{e:?}")
        };
        assert_eq!(report.kind, CheckKind::DivergentWarpCollective);
        assert!(
            report.message.contains("8 of the 32 lanes") && report.message.contains("mma.sync"),
            "{}",
            report.message
        );
    }
    // A guard every lane passes is no divergence.
    let ptx = ptx.replace("setp.lt.u32 %p1, %r1, 8;", "setp.lt.u32 %p1, %r1, 32;");
    let module = dev.load_module(&ptx).unwrap();
    run(
        &dev,
        &module,
        "mma_k8",
        (1, 1, 1),
        (32, 1, 1),
        &[&p64(p[0]), &p64(p[1]), &p64(q[0]), &p64(q[1])],
    );
}

#[test]
fn invalid_wmma_forms_in_nvrtc_ptx_fail_to_load() {
    let dev = Device::new();
    // (instruction in wmma.ptx, replacement, what the error names)
    let unsupported = [
        // tf32 has only m16n16k8.
        (
            "wmma.load.a.sync.aligned.row.m16n16k8.tf32",
            "wmma.load.a.sync.aligned.row.m16n16k16.tf32",
        ),
        // bf16 multiplicands accumulate in f32 only.
        (
            "wmma.mma.sync.aligned.row.row.m16n16k16.f32.bf16.bf16.f32",
            "wmma.mma.sync.aligned.row.row.m16n16k16.f16.bf16.bf16.f16",
        ),
        // Not .aligned.
        (
            "wmma.store.d.sync.aligned.row.m32n8k16.global.f32",
            "wmma.store.d.sync.row.m32n8k16.global.f32",
        ),
        // No such shape.
        (
            "wmma.load.b.sync.aligned.col.m8n32k16.global.f16",
            "wmma.load.b.sync.aligned.col.m8n8k16.global.f16",
        ),
        // Saturation is not implemented.
        (
            "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32",
            "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32.satfinite",
        ),
        // ldmatrix of 8-bit elements.
        (
            "ldmatrix.sync.aligned.m8n8.x2.shared.b16",
            "ldmatrix.sync.aligned.m8n8.x2.shared.b8",
        ),
    ];
    for (from, to) in unsupported {
        assert!(PTX.contains(from), "{from}");
        match dev.load_module(&PTX.replace(from, to)) {
            Err(ModuleError::Unsupported { instruction, line }) => {
                assert_eq!(instruction, to);
                assert!(line > 0);
            }
            other => panic!("{to}: {:?}", other.err()),
        }
    }
    // A fragment with a register too few (wmma's f16 A always has eight).
    let line = PTX
        .lines()
        .find(|l| l.contains("wmma.load.a.sync.aligned.row.m32n8k16.global.f16"))
        .unwrap();
    let (regs, rest) = line.split_once('}').unwrap();
    let fewer = format!("{}}}{rest}", &regs[..regs.rfind(',').unwrap()]);
    match dev.load_module(&PTX.replace(line, &fewer)) {
        Err(ModuleError::Parse { message, .. }) => {
            assert!(message.contains("8 registers, not 7"), "{message}")
        }
        other => panic!("{fewer}: {:?}", other.err()),
    }
}
