//! The uniformity analysis (`ir::uniform`): which registers are block-uniform, which
//! instructions run under uniform control, and which kernels' barriers split them into
//! block-wide phases, on hand-written PTX with every shape and on NVRTC's reductions.

use super::util::config;
use crate::ir::uniform::{analyze, BarrierIssue, Uniformity};
use crate::ir::{Op, Program, SReg};
use crate::*;

/// Every shape, one `.loc` line per instruction under test (comments say what each must be).
const SHAPES: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.file 1 "u.cu"
.visible .entry shapes(.param .u64 pout, .param .u32 pn) {
  .reg .u32 %r<40>;
  .reg .u64 %rd<8>;
  .reg .pred %p<10>;
  .loc 1 1 0
  mov.u32 %r1, %tid.x;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  .loc 1 2 0
  ld.param.u32 %r2, [pn];
  .loc 1 4 0
  mad.lo.s32 %r5, %r3, %r4, %r1;
  .loc 1 5 0
  mul.lo.s32 %r6, %r3, %r4;
  .loc 1 6 0
  setp.ge.u32 %p1, %r5, %r2;
  @%p1 bra DONE;
  .loc 1 7 0
  setp.lt.u32 %p2, %r1, 7;
  mov.u32 %r7, 1;
  @%p2 bra SKIP;
  .loc 1 8 0
  mov.u32 %r7, 2;
  .loc 1 9 0
  add.u32 %r8, %r6, 3;
SKIP:
  .loc 1 10 0
  add.u32 %r9, %r6, 5;
  bar.sync 0;
  .loc 1 11 0
  mov.u32 %r10, 0;
LOOP:
  .loc 1 12 0
  setp.ge.u32 %p3, %r1, %r10;
  @%p3 bra INNER;
  .loc 1 13 0
  add.u32 %r11, %r10, 1;
INNER:
  .loc 1 14 0
  bar.sync 0;
  .loc 1 15 0
  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p4, %r10, %r2;
  @%p4 bra LOOP;
  .loc 1 16 0
  mov.u32 %r12, 0;
  mov.u32 %r13, 0;
LOOP2:
  .loc 1 17 0
  add.u32 %r13, %r13, %r6;
  .loc 1 18 0
  add.u32 %r12, %r12, 1;
  setp.lt.u32 %p5, %r12, %r1;
  @%p5 bra LOOP2;
  .loc 1 19 0
  setp.eq.u32 %p6, %r2, 4;
  @%p6 mov.u32 %r14, 9;
  .loc 1 20 0
  @%p2 mov.u32 %r15, 9;
  .loc 1 21 0
  ld.param.u64 %rd1, [pout];
  cvta.to.global.u64 %rd2, %rd1;
  .loc 1 22 0
  ld.global.u32 %r16, [%rd2];
  .loc 1 23 0
  bar.red.or.pred %p7, 0, %p2;
  .loc 1 24 0
  mov.u32 %r17, %laneid;
  add.u32 %r19, %r17, 1;
  .loc 1 25 0
  mov.u32 %r18, %nctaid.x;
  add.u32 %r20, %r18, 1;
  .loc 1 26 0
  atom.global.add.u32 %r21, [%rd2], 1;
  .loc 1 27 0
  add.u32 %r22, %r7, %r8;
  add.u32 %r22, %r22, %r9;
  add.u32 %r22, %r22, %r11;
  add.u32 %r22, %r22, %r13;
  add.u32 %r22, %r22, %r14;
  add.u32 %r22, %r22, %r15;
  add.u32 %r22, %r22, %r16;
  add.u32 %r22, %r22, %r19;
  add.u32 %r22, %r22, %r20;
  add.u32 %r22, %r22, %r21;
  selp.u32 %r23, 1, 0, %p7;
  add.u32 %r22, %r22, %r23;
  st.global.u32 [%rd2], %r22;
DONE:
  ret;
}
"#;

/// PCs of the instructions on source line `line`.
fn on_line(p: &Program, line: u32) -> Vec<u32> {
    (0..p.code.len() as u32)
        .filter(|&pc| p.locs[p.code[pc as usize].loc as usize].line == line)
        .collect()
}

/// The slot the last instruction of `line` that writes `r[0]` writes.
fn dest(p: &Program, line: u32) -> u32 {
    let pcs = on_line(p, line);
    let pc = pcs
        .iter()
        .rev()
        .find(|&&pc| p.code[pc as usize].r[0] != ir::NONE)
        .unwrap_or_else(|| panic!("no write on line {line}"));
    p.code[*pc as usize].r[0]
}

fn shapes() -> (Module, Uniformity) {
    let m = Device::new().load_module(SHAPES).unwrap();
    let u = analyze(m.program("shapes").unwrap());
    (m, u)
}

#[test]
fn registers_are_uniform_only_when_every_live_thread_agrees() {
    let (m, u) = shapes();
    let p = m.program("shapes").unwrap();
    let uniform = |line: u32| u.is_uniform(dest(p, line));
    // (line, uniform, why)
    let expect = [
        (2, true, "a kernel parameter"),
        (4, false, "computed from %tid"),
        (5, true, "%ctaid times %ntid"),
        (6, false, "a test of a divergent value"),
        (8, false, "written under a divergent branch"),
        (9, false, "uniform sources, but under a divergent branch"),
        (10, true, "after the divergent if joins"),
        (12, false, "a test of %tid"),
        (13, false, "under the divergent if inside the loop"),
        (15, true, "the counter of a loop with a uniform test"),
        (
            17,
            false,
            "uniform sources, in a loop left by a divergent test",
        ),
        (18, false, "a divergent loop's counter"),
        (19, true, "a guard that is uniform"),
        (20, false, "a guard that is divergent"),
        (21, true, "cvta of a parameter"),
        (22, false, "a global load, even from a uniform address"),
        (
            23,
            true,
            "a block-wide barrier reduction of a divergent predicate",
        ),
        (24, false, "from %laneid"),
        (25, true, "from %nctaid"),
        (26, false, "an atomic's old value"),
    ];
    let wrong: Vec<String> = expect
        .iter()
        .filter(|(line, want, _)| uniform(*line) != *want)
        .map(|(line, want, why)| format!("line {line} ({why}): expected uniform={want}"))
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
    // The special registers themselves.
    for &(s, r) in &p.sregs {
        let divergent = matches!(r, SReg::Tid(_) | SReg::LaneId);
        assert_eq!(u.is_uniform(s), !divergent, "{r:?}");
    }
    // Constants are never written.
    assert!(p.consts.iter().all(|&(s, _)| u.is_uniform(s)));
}

#[test]
fn control_is_uniform_after_joins_and_conditional_exits() {
    let (m, u) = shapes();
    let p = m.program("shapes").unwrap();
    let all = |line: u32, want: bool| {
        let pcs = on_line(p, line);
        assert!(!pcs.is_empty());
        for pc in pcs {
            assert_eq!(
                u.uniform_control(pc),
                want,
                "line {line}, pc {pc}: {:?}",
                p.code[pc as usize]
            );
        }
    };
    // After `if (i >= n) return;` the threads still live run together.
    all(7, true);
    all(8, false);
    all(9, false);
    all(10, true);
    all(12, true);
    all(13, false);
    all(14, true);
    all(15, true);
    all(17, false);
    all(18, false);
    all(19, true);
    // A guarded instruction: uniform control, but it runs uniformly only with a uniform guard.
    all(20, true);
    let pc19 = *on_line(p, 19).last().unwrap();
    let pc20 = on_line(p, 20)[0];
    assert!(u.runs_uniformly(p, pc19));
    assert!(!u.runs_uniformly(p, pc20));
    // The barriers are under uniform control, but the first one comes after threads may have
    // left on `i >= n`: lanes of one warp may wait while others exited.
    let first_bar = on_line(p, 10)[1];
    assert!(matches!(p.code[first_bar as usize].op, Op::Bar(_)));
    let exit_branch = on_line(p, 6)[1];
    assert_eq!(
        u.barriers_split_phases(p),
        Err(BarrierIssue::AfterDivergentExit {
            pc: first_bar,
            exit_pc: exit_branch
        })
    );
}

/// One kernel per way a barrier can fail to split a kernel into block-wide phases.
fn barrier_kernel(body: &str) -> String {
    format!(
        r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry k(.param .u32 pn) {{
  .reg .u32 %r<10>;
  .reg .pred %p<4>;
  mov.u32 %r1, %tid.x;
  ld.param.u32 %r2, [pn];
  setp.lt.u32 %p1, %r1, 32;
  mov.u32 %r3, 0;
{body}
  ret;
}}
"#
    )
}

#[test]
fn barriers_that_do_not_split_a_block_into_phases_are_named() {
    type Expect = fn(u32) -> BarrierIssue;
    let cases: [(&str, &str, Expect); 6] = [
        (
            "divergent if",
            "@%p1 bra SKIP;\n bar.sync 0;\nSKIP:\n add.u32 %r3, %r3, %r2;",
            |pc| BarrierIssue::Divergent { pc },
        ),
        ("divergent guard", "@%p1 bar.sync 0;", |pc| {
            BarrierIssue::Divergent { pc }
        }),
        (
            "loop with a divergent trip count",
            "L: bar.sync 0;\n add.u32 %r3, %r3, 1;\n setp.lt.u32 %p2, %r3, %r1;\n @%p2 bra L;",
            |pc| BarrierIssue::Divergent { pc },
        ),
        (
            "a thread may have left on a divergent test",
            "@%p1 bra SKIP;\n bar.sync 0;\nSKIP:",
            |pc| BarrierIssue::AfterDivergentExit { pc, exit_pc: 4 },
        ),
        ("thread count", "bar.sync 1, 64;", |pc| {
            BarrierIssue::Partial { pc }
        }),
        ("arrive", "bar.arrive 1, 64;", |pc| BarrierIssue::Partial {
            pc,
        }),
    ];
    let dev = Device::new();
    for (what, body, issue) in cases {
        let m = dev.load_module(&barrier_kernel(body)).unwrap();
        let p = m.program("k").unwrap();
        let bar = p
            .code
            .iter()
            .position(|i| matches!(i.op, Op::Bar(_)))
            .unwrap() as u32;
        assert_eq!(
            analyze(p).barriers_split_phases(p),
            Err(issue(bar)),
            "{what}"
        );
    }
    // These split: the same loop with a uniform trip count, and exits on a uniform test.
    for body in [
        "L: bar.sync 0;\n add.u32 %r3, %r3, 1;\n setp.lt.u32 %p2, %r3, %r2;\n @%p2 bra L;",
        "setp.eq.u32 %p2, %r2, 0;\n @%p2 bra SKIP;\n bar.sync 0;\nSKIP:",
        "setp.eq.u32 %p2, %r2, 0;\n @%p2 exit;\n bar.sync 0;",
    ] {
        let m = dev.load_module(&barrier_kernel(body)).unwrap();
        let p = m.program("k").unwrap();
        assert_eq!(analyze(p).barriers_split_phases(p), Ok(()), "{body}");
    }
}

/// NVRTC's reductions: reduceBlockTree's loop counter `s` is uniform and `tid < s` is not;
/// its barriers split it into phases. reduceWarpShuffle's shuffled values are divergent.
#[test]
fn nvrtc_reductions() {
    let m = Device::new()
        .load_module(include_str!("../../tests/fixtures/reduce.ptx"))
        .unwrap();
    let p = m.program("reduceBlockTree").unwrap();
    let u = analyze(p);
    // `%tid.x` and the register NVRTC copies it into (folded into a second such slot).
    let tid: Vec<u32> = p
        .sregs
        .iter()
        .filter(|s| s.1 == SReg::Tid(0))
        .map(|s| s.0)
        .collect();
    assert_eq!(tid.len(), 2);
    assert!(tid.iter().all(|&t| !u.is_uniform(t)));
    // `s`: the slot the shifts write (`s = blockDim.x / 2`, `s >>= 1`).
    let shifts: Vec<_> = p
        .code
        .iter()
        .filter(|i| matches!(i.op, Op::Shr { .. }))
        .collect();
    assert_eq!(shifts.len(), 2);
    let s = shifts[0].r[0];
    assert!(shifts.iter().all(|i| i.r[0] == s));
    assert!(u.is_uniform(s));
    // `tid < s` (setp.ge %p3, tid, s) is divergent; the loop's test `s != 0` is not.
    let tests: Vec<_> = p
        .code
        .iter()
        .filter(|i| matches!(i.op, Op::SetpI { .. }) && (i.r[1] == s || i.r[2] == s))
        .collect();
    assert_eq!(tests.len(), 3, "{tests:?}");
    for t in tests {
        let reads_tid = tid.contains(&t.r[1]) || tid.contains(&t.r[2]);
        assert_eq!(u.is_uniform(t.r[0]), !reads_tid, "{t:?}");
    }
    // Shared loads are divergent; the value a thread outside the bounds keeps is too.
    for i in &p.code {
        if let Op::Ld { .. } = i.op {
            assert!(!u.is_uniform(i.r[0]), "{i:?}");
        }
    }
    assert_eq!(u.barriers_split_phases(p), Ok(()));

    let p = m.program("reduceWarpShuffle").unwrap();
    let u = analyze(p);
    for i in &p.code {
        if let Op::Shfl(_) = i.op {
            assert!(!u.is_uniform(i.r[0]), "{i:?}");
        }
    }
}

/// Every kernel of every fixture analyses (no panic, whatever its shape: device functions,
/// recursion, infinite loops, printf), `%tid`, `%laneid` and `%warpid` are divergent in all of
/// them, and the tutorial kernels with barriers split into phases, while the checker's planted
/// divergent barrier, a named barrier for a thread count and a barrier in a device function do
/// not.
#[test]
fn every_fixture_kernel_analyses() {
    let dev = Device::new();
    let mut found = std::collections::HashMap::new();
    for (_, m) in super::util::fixture_modules(&dev) {
        for k in m.kernels() {
            let p = m.program(&k.name).unwrap();
            let u = analyze(p);
            for &(s, r) in &p.sregs {
                if matches!(r, SReg::Tid(_) | SReg::LaneId | SReg::WarpId) {
                    assert!(!u.is_uniform(s), "{}: {r:?}", k.name);
                }
            }
            found.insert(k.name.clone(), u.barriers_split_phases(p));
        }
    }
    assert!(found.len() >= 40, "{} kernels", found.len());
    let split = [
        "reduceBlockTree",
        "reduceWarpShuffle",
        "histogramShared",
        "matmulTiled",
        "transposeSharedPadded",
        "scanInclusive",
        "scanExclusiveBlelloch",
        "bitonicSortBlock",
        "divergeThenSync",
        "divergentBarrierFixed",
        "barrierReductions",
    ];
    for k in split {
        assert_eq!(found.get(k), Some(&Ok(())), "{k}");
    }
    let not = |k: &str| found.get(k).cloned().and_then(|r| r.err());
    assert!(matches!(
        not("divergentBarrier"),
        Some(BarrierIssue::AfterDivergentExit { .. })
    ));
    assert!(matches!(
        not("namedBarriers"),
        Some(BarrierIssue::Partial { .. })
    ));
    assert!(matches!(
        not("syncInFunction"),
        Some(BarrierIssue::InFunction { .. })
    ));
}

/// The public summary names the barrier and the exit by their CUDA lines.
#[test]
fn block_phases_names_lines() {
    let dev = Device::new();
    let m = dev
        .load_module(include_str!("../../tests/fixtures/checker.ptx"))
        .unwrap();
    let bad = m.block_phases("divergentBarrier").unwrap();
    assert_eq!(
        bad.not_split.as_deref(),
        Some("a barrier (line 137) after threads may exit on a divergent test (line 136)")
    );
    assert_eq!(bad.barriers, 1);
    let good = m.block_phases("divergentBarrierFixed").unwrap();
    assert_eq!((good.not_split, good.barriers), (None, 1));
    assert!(m.block_phases("noSuchKernel").is_none());
    let m = dev
        .load_module(include_str!("../../tests/fixtures/reduce.ptx"))
        .unwrap();
    let r = m.block_phases("reduceBlockTree").unwrap();
    assert_eq!((r.not_split.as_deref(), r.barriers), (None, 2));
    // Parameters, their global forms, `s`, its tests and `%ctaid.x * 4` (the output's offset)
    // are uniform; `tid`'s, `i`'s and the loaded values' registers are not.
    assert!(r.uniform_registers >= 8, "{r:?}");
    assert!(r.registers - r.uniform_registers >= 8, "{r:?}");
}

/// The analysis against real runs: at every barrier release of NVRTC's barrier kernels (random
/// inputs, a partial last block, one worker), every slot the analysis calls uniform that may
/// still be read after the barrier holds one value in every live thread of the block.
#[test]
fn uniform_registers_agree_at_every_barrier() {
    use std::cell::RefCell;
    use std::rc::Rc;
    let dev = Device::new();
    let mut rng = super::util::Rng(super::util::seed());
    // (fixture, kernel, block, dynamic shared bytes, the int parameters in order); "" is
    // `SHAPES` (whole warps past n exit: lanes of one warp exiting while others wait at a
    // barrier is a divergent barrier).
    type Case = (&'static str, &'static str, Dim3, u32, &'static [i32]);
    let cases: [Case; 10] = [
        ("", "shapes", (256, 1, 1), 0, &[704]),
        ("reduce", "reduceBlockTree", (256, 1, 1), 1024, &[700]),
        ("reduce", "reduceWarpShuffle", (256, 1, 1), 0, &[700]),
        ("histogram", "histogramShared", (128, 1, 1), 0, &[700]),
        ("scan", "scanInclusive", (128, 1, 1), 1024, &[300]),
        ("scan", "scanExclusiveBlelloch", (64, 1, 1), 512, &[300]),
        ("sort", "bitonicSortBlock", (128, 1, 1), 512, &[300]),
        ("matmul", "matmulTiled", (16, 16, 1), 0, &[40, 24, 56]),
        ("divergence", "divergeThenSync", (256, 1, 1), 0, &[700]),
        ("ptx_features", "barrierReductions", (256, 1, 1), 0, &[700]),
    ];
    for (fixture, kernel, block, dyn_shared, ints) in cases {
        let text = match fixture {
            "" => SHAPES.to_string(),
            f => {
                let path = format!("{}/tests/fixtures/{f}.ptx", env!("CARGO_MANIFEST_DIR"));
                std::fs::read_to_string(path).unwrap()
            }
        };
        let m = dev.load_module(&text).unwrap();
        let p = m.program(kernel).unwrap();
        let u = analyze(p);
        let live = crate::ir::live::liveness(p);
        let uniform: Vec<u32> = (0..p.nslots).filter(|&s| u.is_uniform(s)).collect();
        let checked = Rc::new(RefCell::new((0u64, 0u64, Vec::<String>::new())));
        let seen = Rc::clone(&checked);
        crate::exec::ON_RELEASE.with(|h| {
            *h.borrow_mut() = Some(Box::new(move |warps, bar_pc| {
                let mut st = seen.borrow_mut();
                st.0 += 1;
                for &s in &uniform {
                    if !live(bar_pc + 1, s) {
                        continue;
                    }
                    st.1 += 1;
                    let mut first = None;
                    for w in warps {
                        for l in (0..32).filter(|l| (w.exited >> l) & 1 == 0) {
                            let v = w.regs[s as usize][l];
                            match first {
                                None => first = Some(v),
                                Some(f) if f != v => {
                                    st.2.push(format!(
                                        "slot {s} at the barrier at pc {bar_pc}: {f:#x} and \
                                         {v:#x} (warp {}, lane {l})",
                                        w.idx
                                    ));
                                    break;
                                }
                                _ => {}
                            }
                        }
                    }
                }
            }));
        });
        let info = m.kernel(kernel).unwrap().clone();
        let mut ints = ints.iter();
        let mut args = Vec::new();
        for prm in &info.params {
            if prm.size == 8 {
                let bytes: Vec<u8> = (0..1 << 20).map(|_| rng.below(64) as u8).collect();
                let ptr = dev.alloc(bytes.len()).unwrap();
                dev.write(ptr, 0, &bytes).unwrap();
                args.push(ptr.to_le_bytes().to_vec());
            } else {
                args.push(ints.next().unwrap().to_le_bytes().to_vec());
            }
        }
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        let mut cfg = config((3, 3, 1), block);
        cfg.dynamic_shared_bytes = dyn_shared;
        cfg.threads = 1;
        // The interpreter's barriers (the block tier would run these blocks without them).
        cfg.engines.jit = JitMode::Off;
        let r = dev.launch(&m, kernel, &cfg, &refs);
        crate::exec::ON_RELEASE.with(|h| *h.borrow_mut() = None);
        let r = r.unwrap_or_else(|e| panic!("{kernel}: {e:?}"));
        assert!(r.reports.is_empty(), "{kernel}: {:?}", r.reports);
        let (releases, compared, wrong) = &*checked.borrow();
        assert!(wrong.is_empty(), "{kernel}: {wrong:#?}");
        assert!(
            *releases >= 9 && *compared >= *releases,
            "{kernel}: {releases} releases, {compared} slots compared"
        );
    }
}
