//! Sampled counting (`counters::Sample::Auto`, `ptxsim::sampling`) against counting every
//! block, on the tutorial fixtures (vector add, naive and tiled matmul, stencil, transposes,
//! histograms, reduction) at sizes where both run: instructions, global sectors and DRAM
//! bytes within 3%, the estimate on three GPUs within 5%. The budget is set low so that every
//! case is sampled; a case whose blocks differ must grow its sample or count every block.
//! `sampled_counts_match_full_counts_within_3_percent` prints its figures per kernel (run it with
//! `--nocapture`).

#[path = "common/mod.rs"]
mod common;

use common::*;
use ptxsim::counters::{CounterConfig, Counters, Sample};
use ptxsim::gpus;
use ptxsim::model::{estimate, LaunchShape};
use ptxsim::Dim3;

struct Case {
    fixture: &'static str,
    kernel: &'static str,
    grid: Dim3,
    block: Dim3,
    args: fn(&mut Ctx) -> Vec<Arg>,
}

fn counted(c: &Ctx, case: &Case, args: &[Arg], sample: Sample) -> Counters {
    let mut cfg = common::config(case.grid, case.block);
    if case.kernel == "reduceBlockTree" {
        cfg.dynamic_shared_bytes = 256 * 4; // one float a thread
    }
    let mut cc = CounterConfig::new(50 << 20);
    cc.sample = sample;
    cfg.counters = Some(cc);
    let r = c.launch_cfg(case.kernel, &cfg, args);
    *r.counters.expect("counters asked for")
}

fn within(what: &str, case: &str, sampled: f64, full: f64, tol: f64) {
    let err = if full == 0.0 {
        sampled.abs()
    } else {
        (sampled - full).abs() / full
    };
    assert!(
        err <= tol,
        "{case}: {what} sampled {sampled} vs full {full}: {:.2}% off (at most {:.0}%)",
        100.0 * err,
        100.0 * tol
    );
}

/// `n` random floats in [0, 1) on the device.
fn floats(c: &mut Ctx, n: usize) -> Arg {
    let v: Vec<f32> = (0..n).map(|_| c.rng.f32_in(0.0, 1.0)).collect();
    Arg::Ptr(c.upload(&v))
}

/// A, B (random) and C of a 256 x 256 x 256 product, and its sizes.
fn matmul_256(c: &mut Ctx) -> Vec<Arg> {
    vec![
        floats(c, 256 * 256),
        floats(c, 256 * 256),
        Arg::Ptr(c.zeros::<f32>(256 * 256)),
        Arg::I32(256),
        Arg::I32(256),
        Arg::I32(256),
    ]
}

/// A random 512 x 512 image, an output of its size, and the sizes.
fn image_512(c: &mut Ctx) -> Vec<Arg> {
    const W: usize = 512;
    vec![
        floats(c, W * W),
        Arg::Ptr(c.zeros::<f32>(W * W)),
        Arg::I32(W as i32),
        Arg::I32(W as i32),
    ]
}

fn cases() -> Vec<Case> {
    const N: usize = 1 << 20;
    const W: usize = 512;
    vec![
        Case {
            fixture: "vector_add",
            kernel: "vecAdd",
            grid: (N as u32 / 256, 1, 1),
            block: (256, 1, 1),
            args: |c| {
                vec![
                    floats(c, N),
                    floats(c, N),
                    Arg::Ptr(c.zeros::<f32>(N)),
                    Arg::I32(N as i32),
                ]
            },
        },
        Case {
            fixture: "matmul",
            kernel: "matmulNaive",
            grid: (16, 16, 1),
            block: (16, 16, 1),
            args: matmul_256,
        },
        Case {
            fixture: "matmul",
            kernel: "matmulTiled",
            grid: (16, 16, 1),
            block: (16, 16, 1),
            args: matmul_256,
        },
        Case {
            fixture: "stencil",
            kernel: "blur3x3",
            grid: (W as u32 / 16, W as u32 / 16, 1),
            block: (16, 16, 1),
            args: image_512,
        },
        Case {
            fixture: "transpose",
            kernel: "transposeNaive",
            grid: (W as u32 / 32, W as u32 / 8, 1),
            block: (32, 8, 1),
            args: image_512,
        },
        Case {
            fixture: "transpose",
            kernel: "transposeSharedPadded",
            grid: (W as u32 / 32, W as u32 / 32, 1),
            block: (32, 8, 1),
            args: image_512,
        },
        Case {
            fixture: "histogram",
            kernel: "histogramGlobal",
            grid: (N as u32 / 256, 1, 1),
            block: (256, 1, 1),
            args: |c| {
                let v: Vec<u8> = (0..N)
                    .map(|_| (c.rng.f32_in(0.0, 1.0) * 256.0) as u8)
                    .collect();
                vec![
                    Arg::Ptr(c.upload(&v)),
                    Arg::Ptr(c.zeros::<u32>(256)),
                    Arg::I32(N as i32),
                ]
            },
        },
        Case {
            fixture: "reduce",
            kernel: "reduceBlockTree",
            grid: (N as u32 / 256, 1, 1),
            block: (256, 1, 1),
            args: |c| {
                vec![
                    floats(c, N),
                    Arg::Ptr(c.zeros::<f32>(N / 256)),
                    Arg::I32(N as i32),
                ]
            },
        },
    ]
}

/// Relative error of `sampled` against `full`, in percent (signed).
fn pct(sampled: f64, full: f64) -> f64 {
    if full == 0.0 {
        0.0
    } else {
        100.0 * (sampled - full) / full
    }
}

#[test]
fn sampled_counts_match_full_counts_within_3_percent() {
    // One row per kernel: sampled vs full and the error, printed at the end (`--nocapture`).
    let mut table = vec![format!(
        "{:<37} {:>13} {:>7} {:>10} {:>7} {:>11} {:>7} {:>9} {:>9} {:>7}",
        "kernel (blocks counted/of)",
        "inst (full)",
        "err %",
        "sectors",
        "err %",
        "DRAM bytes",
        "err %",
        "H200 us",
        "sampled",
        "err %"
    )];
    for case in cases() {
        let name = format!("{}::{}", case.fixture, case.kernel);
        let mut c = Ctx::new(case.fixture, &name);
        let args = (case.args)(&mut c);
        let full = counted(&c, &case, &args, Sample::Full);
        assert!(full.sampled.is_none());
        // A budget of a tenth of the launch: every case is sampled.
        let budget = (full.total.inst_executed / 10).max(1);
        let wave = 132 * (2048 / (case.block.0 * case.block.1 * case.block.2)) as u64;
        let s = counted(
            &c,
            &case,
            &args,
            Sample::Auto {
                wave_blocks: wave.min(full.blocks / 16),
                budget,
            },
        );
        let info = s.sampled.unwrap_or_else(|| panic!("{name}: not sampled"));
        assert!(info.scaled && info.blocks < info.of, "{name}: {info:?}");
        assert_eq!(
            (s.blocks, s.warps, s.threads),
            (full.blocks, full.warps, full.threads)
        );
        let f = |x: u64| x as f64;
        within(
            "inst_executed",
            &name,
            f(s.total.inst_executed),
            f(full.total.inst_executed),
            0.03,
        );
        let sectors = |k: &Counters| {
            f(k.total.global_ld_sectors + k.total.global_st_sectors + k.total.global_atom_sectors)
        };
        within("global sectors", &name, sectors(&s), sectors(&full), 0.03);
        within(
            "DRAM bytes read",
            &name,
            f(s.dram_read_bytes),
            f(full.dram_read_bytes),
            0.03,
        );
        within(
            "DRAM bytes written",
            &name,
            f(s.dram_write_bytes),
            f(full.dram_write_bytes),
            0.03,
        );
        let shape = LaunchShape {
            block_threads: case.block.0 * case.block.1 * case.block.2,
            registers: 32,
            shared_bytes: 4096,
        };
        let dram = |k: &Counters| f(k.dram_read_bytes + k.dram_write_bytes);
        let h200 = gpus::find("H200").expect("model");
        let (hs, hf) = (
            estimate(&s, &shape, h200).ns,
            estimate(&full, &shape, h200).ns,
        );
        let label = format!("{name} ({}/{})", info.blocks, info.of);
        table.push(format!(
            "{:<37} {:>13} {:>+7.2} {:>10} {:>+7.2} {:>11} {:>+7.2} {:>9.2} {:>9.2} {:>+7.2}",
            label,
            full.total.inst_executed,
            pct(f(s.total.inst_executed), f(full.total.inst_executed)),
            sectors(&full),
            pct(sectors(&s), sectors(&full)),
            dram(&full),
            pct(dram(&s), dram(&full)),
            hf / 1e3,
            hs / 1e3,
            pct(hs, hf)
        ));
        for g in ["H200", "A100", "RTX 4090"] {
            let g = gpus::find(g).expect("model");
            let (es, ef) = (estimate(&s, &shape, g), estimate(&full, &shape, g));
            within(
                &format!("estimate on {}", g.name),
                &name,
                es.ns,
                ef.ns,
                0.05,
            );
        }
    }
    println!(
        "sampled vs full counts (sampled - full, % of full); estimate on H200, us: full, sampled"
    );
    for row in table {
        println!("{row}");
    }
}

#[test]
fn blocks_that_differ_grow_the_sample_or_count_every_block() {
    // Rows past 384 of the 512-row grid are out of range: their blocks exit at once, so the
    // groups of a sample disagree.
    let case = Case {
        fixture: "matmul",
        kernel: "matmulNaive",
        grid: (64, 64, 1),
        block: (8, 8, 1),
        args: |_| vec![],
    };
    let c = Ctx::new("matmul", "blocks_that_differ");
    let m = 384;
    let args = vec![
        Arg::Ptr(c.zeros::<f32>(512 * 64)),
        Arg::Ptr(c.zeros::<f32>(64 * 512)),
        Arg::Ptr(c.zeros::<f32>(512 * 512)),
        Arg::I32(m),
        Arg::I32(512),
        Arg::I32(64),
    ];
    let full = counted(&c, &case, &args, Sample::Full);
    let s = counted(
        &c,
        &case,
        &args,
        Sample::Auto {
            wave_blocks: 64,
            budget: full.total.inst_executed / 20,
        },
    );
    let info = s.sampled.expect("sampled or grown");
    assert!(info.grew, "{info:?}");
    within(
        "inst_executed",
        "partial grid",
        s.total.inst_executed as f64,
        full.total.inst_executed as f64,
        0.03,
    );
}
