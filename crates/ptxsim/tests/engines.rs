//! Every combination of engines (`ptxsim::Engines`: compiled regions off/auto/always, block
//! tier, replays, gangs, each interpreter build the CPU has) in one process, on a few fixture
//! kernels that reach each of them, against the reference (the interpreter alone): the same
//! output bytes, printf output, reports and faults. The environment plays no part here.
//!
//! It checks that each engine asked for ran, so it needs the accelerators (the `accel` feature).

#![cfg(feature = "accel")]

mod common;

use common::*;
use ptxsim::{Engines, HostBuild, JitMode, LaunchConfig, LaunchError, LaunchReport};

/// Every engine combination, the reference first.
fn combinations() -> Vec<Engines> {
    let mut all = vec![Engines::reference()];
    for host in HostBuild::available() {
        for jit in [JitMode::Off, JitMode::Auto, JitMode::Always] {
            for block_tier in [false, true] {
                for replay in [false, true] {
                    for gangs in [false, true] {
                        all.push(Engines {
                            jit,
                            block_tier,
                            replay,
                            gangs,
                            host,
                            jit_trace: Default::default(),
                        });
                    }
                }
            }
        }
    }
    all
}

/// What a launch leaves that every engine must agree on.
#[derive(Debug, PartialEq)]
struct Outcome {
    /// The output buffer's bytes (floats compared bit for bit).
    out: Vec<u8>,
    printf: String,
    reports: String,
    fault: Option<String>,
}

/// How a launch used the engines, to check that each combination reached what it asked for.
struct Used {
    jit: bool,
    ganged: u64,
    block_tier_blocks: u64,
    block_tier_replays: u64,
}

/// One kernel of a fixture with its inputs: `run` launches it with `cfg` on fresh buffers and
/// returns its outcome.
struct Case {
    name: &'static str,
    run: fn(&Ctx, &LaunchConfig) -> (Outcome, Option<Used>),
    shape: (ptxsim::Dim3, ptxsim::Dim3),
    /// Whether the block tier can run it.
    tier: bool,
}

fn outcome(
    ctx: &Ctx,
    out: ptxsim::DevicePtr,
    bytes: usize,
    r: Result<LaunchReport, LaunchError>,
) -> (Outcome, Option<Used>) {
    let mut buf = vec![0u8; bytes];
    ctx.dev.read(out, 0, &mut buf).expect("read the output");
    match r {
        Ok(r) => (
            Outcome {
                out: buf,
                printf: r.printf,
                reports: format!("{:?}", r.reports),
                fault: None,
            },
            Some(Used {
                jit: r.jit,
                ganged: r.ganged,
                block_tier_blocks: r.block_tier_blocks,
                block_tier_replays: r.block_tier_replays,
            }),
        ),
        // After a fault, which of the launch's other stores and printfs ran is the schedule's
        // (as on a GPU): only the fault itself must be the same.
        Err(LaunchError::Fault { report, .. }) => (
            Outcome {
                out: Vec::new(),
                printf: String::new(),
                reports: String::new(),
                // Each case allocates afresh, so the address itself differs between runs.
                fault: Some(format!(
                    "{:?} {} block {:?} thread {:?} {} bytes {} {:?}",
                    report.kind,
                    report.kernel,
                    report.block,
                    report.thread,
                    report.size,
                    report.space,
                    report.line
                )),
            },
            None,
        ),
        Err(e) => panic!("launch rejected: {e}"),
    }
}

const N: usize = 4000;

fn reduce(ctx: &Ctx, cfg: &LaunchConfig) -> (Outcome, Option<Used>) {
    let input: Vec<f32> = (0..N).map(|i| (i % 97) as f32 * 0.25 - 7.0).collect();
    let nblocks = cfg.grid.0 as usize;
    let (a, out) = (ctx.upload(&input), ctx.zeros::<f32>(nblocks));
    let r = ctx.try_launch(
        "reduceBlockTree",
        cfg,
        &[Arg::Ptr(a), Arg::Ptr(out), Arg::I32(N as i32)],
    );
    outcome(ctx, out, nblocks * 4, r)
}

const M: usize = 40;

fn matmul(ctx: &Ctx, cfg: &LaunchConfig) -> (Outcome, Option<Used>) {
    let a: Vec<f32> = (0..M * M).map(|i| (i % 13) as f32 - 6.5).collect();
    let b: Vec<f32> = (0..M * M).map(|i| (i % 7) as f32 * 0.5 + 0.1).collect();
    let (pa, pb, pc) = (ctx.upload(&a), ctx.upload(&b), ctx.zeros::<f32>(M * M));
    let m = M as i32;
    let r = ctx.try_launch(
        "matmulTiled",
        cfg,
        &[
            Arg::Ptr(pa),
            Arg::Ptr(pb),
            Arg::Ptr(pc),
            Arg::I32(m),
            Arg::I32(m),
            Arg::I32(m),
        ],
    );
    outcome(ctx, pc, M * M * 4, r)
}

fn saxpy(ctx: &Ctx, cfg: &LaunchConfig) -> (Outcome, Option<Used>) {
    let x: Vec<f32> = (0..N).map(|i| i as f32 * 0.001).collect();
    let y: Vec<f32> = (0..N).map(|i| 1.0 - i as f32 * 0.5).collect();
    let (px, py) = (ctx.upload(&x), ctx.upload(&y));
    let r = ctx.try_launch(
        "saxpyGridStride",
        cfg,
        &[
            Arg::F32(1.5),
            Arg::Ptr(px),
            Arg::Ptr(py),
            Arg::I32(N as i32),
        ],
    );
    outcome(ctx, py, N * 4, r)
}

/// An output one element short: the fault (thread, address, line) must be the interpreter's.
fn vec_add_fault(ctx: &Ctx, cfg: &LaunchConfig) -> (Outcome, Option<Used>) {
    let a: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let (pa, pb, pc) = (ctx.upload(&a), ctx.upload(&a), ctx.zeros::<f32>(N - 1));
    let r = ctx.try_launch(
        "vecAdd",
        cfg,
        &[Arg::Ptr(pa), Arg::Ptr(pb), Arg::Ptr(pc), Arg::I32(N as i32)],
    );
    outcome(ctx, pc, (N - 1) * 4, r)
}

fn printf(ctx: &Ctx, cfg: &LaunchConfig) -> (Outcome, Option<Used>) {
    let a: Vec<i32> = (0..200).map(|i| i * 7 % 31).collect();
    let pa = ctx.upload(&a);
    let r = ctx.try_launch("printfDivergent", cfg, &[Arg::Ptr(pa), Arg::I32(200)]);
    outcome(ctx, pa, 200 * 4, r)
}

fn cases() -> Vec<(&'static str, Case)> {
    vec![
        (
            "reduce",
            Case {
                name: "reduceBlockTree",
                run: reduce,
                shape: ((blocks(N, 128), 1, 1), (128, 1, 1)),
                tier: true,
            },
        ),
        (
            "matmul",
            Case {
                name: "matmulTiled",
                run: matmul,
                shape: ((3, 3, 1), (16, 16, 1)),
                // Nine blocks on two workers: the tier does not take it.
                tier: false,
            },
        ),
        (
            "vector_add",
            Case {
                name: "saxpyGridStride",
                run: saxpy,
                shape: ((4, 1, 1), (128, 1, 1)),
                tier: false,
            },
        ),
        (
            "vector_add",
            Case {
                name: "vecAdd",
                run: vec_add_fault,
                shape: ((blocks(N, 256), 1, 1), (256, 1, 1)),
                tier: false,
            },
        ),
        (
            "printf",
            Case {
                name: "printfDivergent",
                run: printf,
                shape: ((2, 1, 1), (128, 1, 1)),
                tier: false,
            },
        ),
    ]
}

#[test]
fn every_engine_combination_matches_the_interpreter() {
    for (fixture, case) in cases() {
        // A fresh module per case, so that `JitMode::Auto` meets a kernel not compiled yet.
        let ctx = Ctx::new(fixture, "engines");
        let config = |engines: Engines| {
            let mut c = LaunchConfig::new(case.shape.0, case.shape.1);
            if case.name == "reduceBlockTree" {
                c.dynamic_shared_bytes = 128 * 4;
            }
            c.threads = 2;
            c.engines = engines;
            c
        };
        let all = combinations();
        let (reference, _) = (case.run)(&ctx, &config(all[0]));
        let mut tier_ran = false;
        for engines in &all[1..] {
            let (got, used) = (case.run)(&ctx, &config(*engines));
            assert_eq!(got, reference, "{}: {engines:?}", case.name);
            let Some(used) = used else { continue };
            if engines.jit == JitMode::Off {
                assert!(!used.jit && used.block_tier_blocks == 0, "{engines:?}");
            }
            if engines.jit == JitMode::Always {
                assert!(used.jit, "{}: {engines:?} ran no compiled code", case.name);
            }
            if !engines.block_tier {
                assert_eq!(used.block_tier_blocks, 0, "{engines:?}");
            }
            if !engines.replay {
                assert_eq!(used.block_tier_replays, 0, "{engines:?}");
            }
            if !engines.gangs {
                assert_eq!(used.ganged, 0, "{engines:?}");
            }
            tier_ran |= used.block_tier_blocks > 0;
        }
        assert_eq!(tier_ran, case.tier, "{}: block tier ran", case.name);
    }
}
