//! The block tier (`exec::block`): which kernels it runs, that it computes what the interpreter
//! computes, and that every block it gives up on (a race, an access out of bounds, a load after
//! the block's own store) is run by the interpreter with the interpreter's exact reports.

use super::util::config;
use super::util::{seed, Rng};
use crate::*;

/// `s[tid] = in[i]`, barrier, `s[tid] = s[j] + 1`, barrier, `out[i] = s[tid]`, where `j` is
/// `tid` except for thread 40 of block `bad`: with `mode` 1 it reads `s[41]`, which thread 41
/// writes in the same interval (a race); with `mode` 2 it reads `s[200]` (out of bounds).
/// With `mode` 3 every thread then loads its own output back and adds 1 (a global load after
/// the block's own store).
const BT: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry bt(.param .u64 pin, .param .u64 pout, .param .u32 pn, .param .u32 pbad,
                   .param .u32 pmode) {
  .shared .align 4 .b8 s[512];
  .reg .u32 %r<30>;
  .reg .u64 %rd<20>;
  .reg .pred %p<12>;
  ld.param.u64 %rd1, [pin];
  ld.param.u64 %rd2, [pout];
  ld.param.u32 %r1, [pn];
  ld.param.u32 %r2, [pbad];
  ld.param.u32 %r3, [pmode];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r4, %tid.x;
  mov.u32 %r5, %ctaid.x;
  mov.u32 %r6, %ntid.x;
  mad.lo.s32 %r7, %r5, %r6, %r4;
  mov.u32 %r8, 0;
  setp.ge.u32 %p1, %r7, %r1;
  @%p1 bra L1;
  mul.wide.u32 %rd3, %r7, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r8, [%rd4];
L1:
  mov.u64 %rd5, s;
  mul.wide.u32 %rd6, %r4, 4;
  add.s64 %rd7, %rd5, %rd6;
  st.shared.u32 [%rd7], %r8;
  bar.sync 0;
  setp.eq.u32 %p2, %r5, %r2;
  setp.eq.u32 %p3, %r4, 40;
  and.pred %p4, %p2, %p3;
  mov.u32 %r9, %r4;
  setp.eq.u32 %p5, %r3, 1;
  and.pred %p6, %p4, %p5;
  @%p6 add.u32 %r9, %r4, 1;
  setp.eq.u32 %p7, %r3, 2;
  and.pred %p8, %p4, %p7;
  @%p8 mov.u32 %r9, 200;
  mul.wide.u32 %rd8, %r9, 4;
  add.s64 %rd9, %rd5, %rd8;
  ld.shared.u32 %r10, [%rd9];
  add.u32 %r11, %r10, 1;
  st.shared.u32 [%rd7], %r11;
  bar.sync 0;
  @%p1 bra DONE;
  ld.shared.u32 %r12, [%rd7];
  mul.wide.u32 %rd10, %r7, 4;
  add.s64 %rd11, %rd2, %rd10;
  st.global.u32 [%rd11], %r12;
  setp.eq.u32 %p9, %r3, 3;
  @!%p9 bra DONE;
  ld.global.u32 %r13, [%rd11];
  add.u32 %r13, %r13, 1;
  st.global.u32 [%rd11], %r13;
DONE:
  ret;
}
"#;

pub(super) struct Run {
    pub out: Vec<u32>,
    pub result: Result<LaunchReport, LaunchError>,
}

/// How a test launches a kernel `name(in, out, extra…)`.
pub(super) struct Launch<'a> {
    pub name: &'a str,
    pub blocks: u32,
    pub block: u32,
    /// The block's second dimension (`block` threads a row).
    pub rows: u32,
    pub dyn_shared: u32,
    /// After the input and output pointers, 4 bytes each.
    pub extra: &'a [u32],
}

/// `l` on `input` (u32 words) with an output of as many words, zeroed; with `tier`, compiled
/// code and so the block tier allowed (`JitMode::Always`), else interpreted only.
pub(super) fn launch(
    dev: &Device,
    m: &Module,
    l: &Launch,
    input: &[u32],
    tier: bool,
    threads: usize,
) -> Run {
    let n = input.len();
    let pin = dev.alloc(n * 4).unwrap();
    let bytes: Vec<u8> = input.iter().flat_map(|v| v.to_le_bytes()).collect();
    dev.write(pin, 0, &bytes).unwrap();
    let pout = dev.alloc(n * 4).unwrap();
    dev.write(pout, 0, &vec![0u8; n * 4]).unwrap();
    let mut cfg = config((l.blocks, 1, 1), (l.block, l.rows, 1));
    cfg.threads = threads;
    cfg.dynamic_shared_bytes = l.dyn_shared;
    cfg.engines.jit = if tier { JitMode::Always } else { JitMode::Off };
    let mut args = vec![pin.to_le_bytes().to_vec(), pout.to_le_bytes().to_vec()];
    args.extend(l.extra.iter().map(|v| v.to_le_bytes().to_vec()));
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    let result = dev.launch(m, l.name, &cfg, &refs);
    let mut back = vec![0u8; n * 4];
    dev.read(pout, 0, &mut back).unwrap();
    Run {
        out: back
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        result,
    }
}

fn run_bt(
    dev: &Device,
    m: &Module,
    input: &[u32],
    blocks: u32,
    mode: u32,
    tier: bool,
    threads: usize,
) -> Run {
    let extra = [input.len() as u32, blocks - 1, mode];
    let l = Launch {
        name: "bt",
        blocks,
        block: 128,
        rows: 1,
        dyn_shared: 0,
        extra: &extra,
    };
    launch(dev, m, &l, input, tier, threads)
}

#[test]
fn the_block_tier_computes_what_the_interpreter_does() {
    let dev = Device::new();
    let m = dev.load_module(BT).unwrap();
    assert!(m.program("bt").unwrap().block_tier);
    let mut rng = Rng(seed());
    let blocks = 6 + rng.below(6) as u32;
    let n = blocks as usize * 128 - rng.below(100) as usize;
    let input: Vec<u32> = (0..n).map(|_| rng.below(1 << 30) as u32).collect();
    for threads in [1, 2] {
        let plain = run_bt(&dev, &m, &input, blocks, 0, false, threads);
        let tier = run_bt(&dev, &m, &input, blocks, 0, true, threads);
        let want: Vec<u32> = input.iter().map(|v| v + 1).collect();
        assert_eq!(plain.out, want);
        assert_eq!(tier.out, want, "{threads} workers");
        let (p, t) = (plain.result.unwrap(), tier.result.unwrap());
        assert_eq!(p.block_tier_blocks, 0);
        assert_eq!(t.block_tier_blocks, blocks as u64, "{threads} workers");
        assert!(p.reports.is_empty() && t.reports.is_empty());
        // Every block in lockstep: the same count as the interpreter's.
        assert_eq!(t.warp_instructions, p.warp_instructions);
    }
}

#[test]
fn blocks_it_gives_up_are_run_and_reported_by_the_interpreter() {
    let dev = Device::new();
    let m = dev.load_module(BT).unwrap();
    let mut rng = Rng(seed());
    let blocks = 6 + rng.below(6) as u32;
    let n = blocks as usize * 128;
    let input: Vec<u32> = (0..n).map(|_| rng.below(1 << 30) as u32).collect();
    // The race in the last block: a report, the same either way; the other blocks ran in the
    // tier.
    let plain = run_bt(&dev, &m, &input, blocks, 1, false, 1);
    let tier = run_bt(&dev, &m, &input, blocks, 1, true, 1);
    assert_eq!(plain.out, tier.out);
    let (p, t) = (plain.result.unwrap(), tier.result.unwrap());
    assert_eq!(p.reports.len(), 1, "{:?}", p.reports);
    assert_eq!(p.reports[0].kind, CheckKind::SharedRace);
    assert_eq!(p.reports, t.reports);
    assert_eq!(t.block_tier_blocks, blocks as u64 - 1);
    // Out of bounds in the last block: the same fault.
    let plain = run_bt(&dev, &m, &input, blocks, 2, false, 1);
    let tier = run_bt(&dev, &m, &input, blocks, 2, true, 1);
    match (plain.result, tier.result) {
        (Err(LaunchError::Fault { report: a, .. }), Err(LaunchError::Fault { report: b, .. })) => {
            assert_eq!(a.kind, CheckKind::OutOfBounds);
            assert_eq!((a.thread, a.block), ((40, 0, 0), (blocks - 1, 0, 0)));
            assert_eq!(a, b);
        }
        other => panic!("expected two faults: {other:?}"),
    }
    // A load after the block's own store: every block gives up (and after four, the launch
    // stops trying), with the interpreter's results.
    let plain = run_bt(&dev, &m, &input, blocks, 3, false, 1);
    let tier = run_bt(&dev, &m, &input, blocks, 3, true, 1);
    let want: Vec<u32> = input.iter().map(|v| v + 2).collect();
    assert_eq!(plain.out, want);
    assert_eq!(tier.out, want);
    assert_eq!(tier.result.unwrap().block_tier_blocks, 0);
}

/// NVRTC's tree reduction, scan and bitonic sort run in the tier, with the interpreter's
/// results bit for bit; the kernels it leaves alone, and why.
#[test]
fn nvrtc_kernels_in_the_block_tier() {
    let dev = Device::new();
    let fixture = |f: &str| {
        let path = format!("{}/tests/fixtures/{f}.ptx", env!("CARGO_MANIFEST_DIR"));
        dev.load_module(&std::fs::read_to_string(path).unwrap())
            .unwrap()
    };
    let mut rng = Rng(seed());
    // (fixture, kernel, block size, dynamic shared bytes)
    let cases = [
        ("reduce", "reduceBlockTree", 256u32, 1024u32),
        ("reduce", "reduceWarpShuffle", 256, 0),
        // Blocks of more than 256 threads: masks of 16 words.
        ("reduce", "reduceBlockTree", 1024, 4096),
        ("reduce", "reduceWarpShuffle", 512, 0),
        ("scan", "scanInclusive", 128, 1024),
        ("sort", "bitonicSortBlock", 128, 512),
    ];
    for (f, k, bd, dyn_shared) in cases {
        let m = fixture(f);
        assert!(m.program(k).unwrap().block_tier, "{k}");
        let blocks = 5 + rng.below(4) as u32;
        let n = (blocks * bd) as usize - rng.below(bd as u64 / 2) as usize;
        let input: Vec<u32> = (0..n).map(|_| (rng.next() >> 40) as u32).collect();
        let mut outs = Vec::new();
        for tier in [false, true] {
            let extra = [n as u32];
            let l = Launch {
                name: k,
                blocks,
                block: bd,
                rows: 1,
                dyn_shared,
                extra: &extra,
            };
            let r = launch(&dev, &m, &l, &input, tier, 0);
            let rep = r.result.unwrap();
            assert!(rep.reports.is_empty(), "{k}: {:?}", rep.reports);
            assert_eq!(
                rep.block_tier_blocks,
                if tier { blocks as u64 } else { 0 },
                "{k}"
            );
            outs.push(r.out);
        }
        assert_eq!(outs[0], outs[1], "{k}");
        // The CPU's answer for the integer kernels (one sum per block for the reduction).
        let got = &outs[1];
        for (b, chunk) in input.chunks(bd as usize).enumerate() {
            if k == "reduceWarpShuffle" {
                let sum = chunk.iter().fold(0u32, |a, &v| a.wrapping_add(v));
                assert_eq!(got[b], sum, "{k} block {b}");
                continue;
            }
            let want: Vec<u32> = match k {
                "scanInclusive" => chunk
                    .iter()
                    .scan(0u32, |acc, &v| {
                        *acc = acc.wrapping_add(v);
                        Some(*acc)
                    })
                    .collect(),
                "bitonicSortBlock" => {
                    let mut s = chunk.to_vec();
                    s.sort_unstable();
                    s
                }
                _ => continue,
            };
            let lo = b * bd as usize;
            assert_eq!(&got[lo..lo + chunk.len()], &want[..], "{k} block {b}");
        }
    }
    // Left to the other tiers: tiles indexed by `%tid.y`, a barrier after a divergent exit
    // (the histogram's atomics run in the tier: `block_atomics`).
    for (f, k) in [("matmul", "matmulTiled"), ("checker", "divergentBarrier")] {
        assert!(!fixture(f).program(k).unwrap().block_tier, "{k}");
    }
}

/// `out[i] = v + __shfl_down_sync(FULL, v, 1)` where `v` went through shared memory and a
/// barrier; with `mode` 1, lanes 16 to 31 skip the shuffle, so lane 15 reads an inactive lane.
const SHFL: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry shx(.param .u64 pin, .param .u64 pout, .param .u32 pmode) {
  .shared .align 4 .b8 s[1024];
  .reg .u32 %r<20>;
  .reg .u64 %rd<10>;
  .reg .pred %p<5>;
  ld.param.u64 %rd1, [pin];
  ld.param.u64 %rd2, [pout];
  ld.param.u32 %r1, [pmode];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mad.lo.s32 %r5, %r3, %r4, %r2;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r6, [%rd4];
  mov.u64 %rd5, s;
  mul.wide.u32 %rd6, %r2, 4;
  add.s64 %rd7, %rd5, %rd6;
  st.shared.u32 [%rd7], %r6;
  bar.sync 0;
  ld.shared.u32 %r7, [%rd7];
  setp.eq.u32 %p1, %r1, 1;
  and.b32 %r8, %r2, 31;
  setp.ge.u32 %p2, %r8, 16;
  and.pred %p3, %p1, %p2;
  mov.u32 %r9, %r7;
  @%p3 bra SKIP;
  shfl.sync.down.b32 %r9, %r7, 1, 31, -1;
SKIP:
  add.u32 %r10, %r9, %r7;
  add.s64 %rd8, %rd2, %rd3;
  st.global.u32 [%rd8], %r10;
  ret;
}
.visible .entry shd(.param .u64 pin, .param .u64 pout, .param .u32 pdelta, .param .u32 pc) {
  .reg .u32 %r<20>;
  .reg .u64 %rd<10>;
  ld.param.u64 %rd1, [pin];
  ld.param.u64 %rd2, [pout];
  ld.param.u32 %r11, [pdelta];
  ld.param.u32 %r12, [pc];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mad.lo.s32 %r5, %r3, %r4, %r2;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r7, [%rd4];
  bar.sync 0;
  shfl.sync.up.b32 %r8, %r7, %r11, 0, -1;
  shfl.sync.down.b32 %r7, %r7, %r11, %r12, -1;
  shl.b32 %r8, %r8, 12;
  add.u32 %r10, %r7, %r8;
  add.s64 %rd8, %rd2, %rd3;
  st.global.u32 [%rd8], %r10;
  ret;
}
"#;

/// Shuffles up and down (in place) by any distance and bound run in the tier with the
/// interpreter's results and a CPU reference's.
#[test]
fn shuffle_distances_in_the_block_tier() {
    let dev = Device::new();
    let m = dev.load_module(SHFL).unwrap();
    assert!(m.program("shd").unwrap().block_tier);
    let mut rng = Rng(seed());
    let blocks = 3 + rng.below(4) as u32;
    let n = blocks as usize * 128;
    let input: Vec<u32> = (0..n).map(|_| (rng.next() >> 52) as u32).collect();
    for round in 0..6 {
        // The whole warp (`__shfl_down_sync`'s bound) first, then any bound.
        let c = if round < 2 { 31 } else { rng.below(32) as u32 };
        let delta = 1 + rng.below(31) as u32;
        let want: Vec<u32> = (0..n)
            .map(|i| {
                let l = (i % 32) as u32;
                let up = if l >= delta { i - delta as usize } else { i };
                let down = if l + delta <= c {
                    i + delta as usize
                } else {
                    i
                };
                input[down].wrapping_add(input[up] << 12)
            })
            .collect();
        let extra = [delta, c];
        let l = Launch {
            name: "shd",
            blocks,
            block: 128,
            rows: 1,
            dyn_shared: 0,
            extra: &extra,
        };
        for tier in [false, true] {
            let r = launch(&dev, &m, &l, &input, tier, 1);
            let rep = r.result.unwrap();
            assert_eq!(r.out, want, "delta {delta} c {c} tier {tier}");
            let ran = if tier { blocks as u64 } else { 0 };
            assert_eq!(rep.block_tier_blocks, ran);
            // One worker: the first block recorded, the others replayed (`Run::ShflDown`
            // for the downward shuffle at any distance and bound).
            assert_eq!(rep.block_tier_replays, ran.saturating_sub(1));
        }
    }
}

/// Shuffles run in the tier a warp at a time, with the interpreter's results; a shuffle by
/// part of a warp gives the block up, and the interpreter reports the inactive lane it reads.
#[test]
fn shuffles_in_the_block_tier() {
    let dev = Device::new();
    let m = dev.load_module(SHFL).unwrap();
    assert!(m.program("shx").unwrap().block_tier);
    let mut rng = Rng(seed());
    let blocks = 4 + rng.below(5) as u32;
    let n = blocks as usize * 256;
    let input: Vec<u32> = (0..n).map(|_| (rng.next() >> 34) as u32).collect();
    let run = |mode: u32, tier: bool, threads: usize| {
        let extra = [mode];
        let l = Launch {
            name: "shx",
            blocks,
            block: 256,
            rows: 1,
            dyn_shared: 0,
            extra: &extra,
        };
        let r = launch(&dev, &m, &l, &input, tier, threads);
        (r.out, r.result.unwrap())
    };
    // Lane l adds lane l + 1 of its warp; lane 31 (out of range) its own value.
    let want: Vec<u32> = (0..n)
        .map(|i| {
            let j = if i % 32 == 31 { i } else { i + 1 };
            input[i].wrapping_add(input[j])
        })
        .collect();
    for threads in [1, 2] {
        let (plain, p) = run(0, false, threads);
        let (tier, t) = run(0, true, threads);
        assert_eq!(plain, want);
        assert_eq!(tier, want, "{threads} workers");
        assert_eq!(
            (p.block_tier_blocks, t.block_tier_blocks),
            (0, blocks as u64)
        );
        assert!(p.reports.is_empty() && t.reports.is_empty());
    }
    // Part of each warp at the shuffle: every block gives up (the launch stops trying after
    // four), and the report is the interpreter's.
    let (plain, p) = run(1, false, 1);
    let (tier, t) = run(1, true, 1);
    assert_eq!(plain, tier);
    assert_eq!(t.block_tier_blocks, 0);
    assert!(!p.reports.is_empty());
    assert_eq!(p.reports[0].kind, CheckKind::InactiveLaneShuffle);
    assert_eq!(p.reports, t.reports);
}

/// How the tier keeps each slot of every fixture kernel it runs: a uniform slot is one the
/// uniformity analysis calls uniform, a predicate mask is only written by comparisons and only
/// read as a guard, an unread slot is read by nothing; and NVRTC's tree reduction keeps its loop counter once per block and its
/// `tid < s` as a mask.
#[test]
fn slot_kinds_follow_the_uniformity_analysis() {
    use crate::ir::{BlockSlot, Op};
    let dev = Device::new();
    let mut kernels = 0;
    for (_, m) in super::util::fixture_modules(&dev) {
        for k in m.kernels() {
            let p = m.program(&k.name).unwrap();
            if !p.block_tier {
                assert!(p.block_slots.is_empty());
                continue;
            }
            kernels += 1;
            assert_eq!(p.block_slots.len(), p.nslots as usize, "{}", k.name);
            let u = crate::lower::uniform::analyze(p);
            for (s, kind) in p.block_slots.iter().enumerate() {
                let s = s as u32;
                match kind {
                    BlockSlot::Uniform => assert!(u.is_uniform(s), "{} slot {s}", k.name),
                    BlockSlot::Pred => {
                        for i in &p.code {
                            let mut unguarded = *i;
                            unguarded.guard = crate::ir::NONE;
                            assert!(!crate::jit::sources(&unguarded).contains(&s));
                            if crate::jit::may_write(i, p).contains(&s) {
                                assert!(matches!(i.op, Op::SetpI { .. }), "{}", k.name);
                            }
                        }
                    }
                    BlockSlot::Unread => {
                        for i in &p.code {
                            assert!(i.guard != s && !crate::jit::sources(i).contains(&s));
                        }
                    }
                    BlockSlot::Affine { local } => {
                        // `%tid.x`, or one unguarded writer, before its every read in the
                        // same straight run when local.
                        let writers: Vec<usize> = (0..p.code.len())
                            .filter(|&pc| crate::jit::may_write(&p.code[pc], p).contains(&s))
                            .collect();
                        if writers.is_empty() {
                            assert!(p.sregs.contains(&(s, crate::ir::SReg::Tid(0))));
                            continue;
                        }
                        assert_eq!(writers.len(), 1, "{} slot {s}", k.name);
                        let w = writers[0];
                        assert_eq!(p.code[w].guard, crate::ir::NONE);
                        if *local {
                            for (pc, i) in p.code.iter().enumerate() {
                                let reads = i.guard == s || crate::jit::sources(i).contains(&s);
                                let straight = (w..pc).all(|q| {
                                    q == w || !matches!(p.code[q].op, Op::Bra | Op::Bar(_))
                                });
                                let target = p.code.iter().any(|j| {
                                    j.op == Op::Bra && (w as i64 + 1..=pc as i64).contains(&j.imm)
                                });
                                assert!(!reads || (pc > w && straight && !target), "{}", k.name);
                            }
                        }
                    }
                    BlockSlot::Lanes => {}
                }
            }
        }
    }
    assert!(kernels >= 5, "{kernels} kernels in the tier");
    let m = dev
        .load_module(include_str!("../../tests/fixtures/reduce.ptx"))
        .unwrap();
    let p = m.program("reduceBlockTree").unwrap();
    let count = |kind| p.block_slots.iter().filter(|&&x| x == kind).count();
    assert!(count(BlockSlot::Uniform) >= 8, "{:?}", p.block_slots);
    assert!(count(BlockSlot::Pred) >= 2, "{:?}", p.block_slots);
    let affine = |local| count(BlockSlot::Affine { local });
    assert!(
        affine(true) >= 3 && affine(false) >= 3,
        "{:?}",
        p.block_slots
    );
}

/// Affine index arithmetic: a mirrored index (stride -1), a global load and a shared store
/// through it (stride -4, not unit), and `mul.wide` of `tid + wrap`, whose 32-bit values wrap
/// inside the block when `wrap` is near 2^32 (then it is not affine, and the block is given
/// up). `out[i] = in[i] + ((tid + wrap) as u64 * 4 > u32::MAX)`.
const AFF: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry aff(.param .u64 pin, .param .u64 pout, .param .u32 pwrap) {
  .shared .align 4 .b8 s[4096];
  .reg .u32 %r<20>;
  .reg .u64 %rd<20>;
  .reg .pred %p<4>;
  ld.param.u64 %rd1, [pin];
  ld.param.u64 %rd2, [pout];
  ld.param.u32 %r1, [pwrap];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r14, %ntid.y;
  mul.lo.s32 %r4, %r4, %r14;
  mov.u32 %r15, %tid.x;
  sub.s32 %r6, %r4, 1;
  sub.s32 %r7, %r6, %r2;
  mad.lo.s32 %r8, %r3, %r4, %r7;
  mul.wide.s32 %rd3, %r8, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r9, [%rd4];
  mov.u64 %rd5, s;
  mul.wide.u32 %rd6, %r7, 4;
  add.s64 %rd7, %rd5, %rd6;
  st.shared.u32 [%rd7], %r9;
  bar.sync 0;
  add.s32 %r10, %r2, %r1;
  mul.wide.u32 %rd8, %r10, 4;
  setp.gt.u64 %p1, %rd8, 4294967295;
  selp.u32 %r12, 1, 0, %p1;
  mul.wide.u32 %rd10, %r15, 4;
  add.s64 %rd11, %rd5, %rd10;
  ld.shared.u32 %r11, [%rd11];
  add.u32 %r11, %r11, %r12;
  mad.lo.s32 %r16, %r3, %r4, %r2;
  mul.wide.u32 %rd12, %r16, 4;
  add.s64 %rd13, %rd2, %rd12;
  st.global.u32 [%rd13], %r11;
  ret;
}
"#;

/// The affine slots of `AFF` compute what the interpreter and a CPU reference do: in the
/// tier with 1-D blocks; given up (run by the interpreter) when `mul.wide`'s operand wraps
/// inside a block; not tried when the block has two dimensions (`%tid.x` is not the thread's
/// number in the block then: `block::fits_block`).
#[test]
fn affine_slots_in_the_block_tier() {
    use crate::ir::BlockSlot;
    let dev = Device::new();
    let m = dev.load_module(AFF).unwrap();
    let p = m.program("aff").unwrap();
    assert!(p.block_tier);
    let affine = |local| {
        p.block_slots
            .iter()
            .filter(|&&k| k == BlockSlot::Affine { local })
            .count()
    };
    assert!(
        affine(true) >= 8 && affine(false) >= 2,
        "{:?}",
        p.block_slots
    );
    let mut rng = Rng(seed());
    let blocks = 3 + rng.below(4) as u32;
    let n = blocks as usize * 256;
    let input: Vec<u32> = (0..n).map(|_| (rng.next() >> 40) as u32).collect();
    // (wrap, block shape, whether the tier runs the blocks)
    let wrap_at = 256 - 1 - rng.below(255) as u32;
    let cases = [
        (rng.below(1 << 20) as u32, (256, 1), true),
        (wrap_at.wrapping_neg(), (256, 1), false),
        (0, (64, 4), false),
    ];
    for (wrap, (bx, by), runs) in cases {
        let want: Vec<u32> = (0..n)
            .map(|i| {
                let tid = (i % 256) as u32 % bx;
                let hi = (tid.wrapping_add(wrap) as u64 * 4 > u32::MAX as u64) as u32;
                input[i].wrapping_add(hi)
            })
            .collect();
        let mut seen = Vec::new();
        for tier in [false, true] {
            let extra = [wrap];
            let l = Launch {
                name: "aff",
                blocks,
                block: bx,
                rows: by,
                dyn_shared: 0,
                extra: &extra,
            };
            let r = launch(&dev, &m, &l, &input, tier, 0);
            let (out, rep) = (r.out, r.result.unwrap());
            if by == 1 {
                assert!(rep.reports.is_empty(), "{:?}", rep.reports);
                assert_eq!(out, want, "wrap {wrap:#x} tier {tier}");
            }
            let ran = if tier && runs { blocks as u64 } else { 0 };
            assert_eq!(rep.block_tier_blocks, ran, "wrap {wrap:#x} {bx}x{by}");
            seen.push((out, rep.reports));
        }
        // In blocks of two dimensions the rows store to the same shared words: the race is
        // the interpreter's report, the same with the tier allowed.
        assert_eq!(seen[0], seen[1]);
        assert_eq!(seen[0].1.is_empty(), by == 1);
    }
}

/// Unit-stride shared accesses and races between them (`exec::block::races`): every thread
/// stores `s[tid]`, and (`mode`) 0: then loads `s[tid + d]`; 1: after a barrier, loads
/// `s[tid + d]` and then stores `s[tid]` again; 2: then thread 40 alone loads `s[40 + d]` (an
/// access of another shape after unit-stride ones; the others load `s[tid]`); 3: as 2 but
/// after a barrier and before another store (unit-stride after another shape); 4: nine loads
/// of `s[tid]` (more than the log holds) before the load of `s[tid + d]`. Loads past `s` are
/// skipped. A `d` other than 0 that some thread reads through is a race in every block.
const RT: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry rt(.param .u64 pin, .param .u64 pout, .param .u32 pd, .param .u32 pmode) {
  .shared .align 4 .b8 s[1024];
  .reg .u32 %r<40>;
  .reg .u64 %rd<20>;
  .reg .pred %p<12>;
  ld.param.u64 %rd1, [pin];
  ld.param.u64 %rd2, [pout];
  ld.param.u32 %r1, [pd];
  ld.param.u32 %r2, [pmode];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r4, %tid.x;
  mov.u32 %r5, %ctaid.x;
  mov.u32 %r6, %ntid.x;
  mad.lo.s32 %r7, %r5, %r6, %r4;
  mul.wide.u32 %rd3, %r7, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r8, [%rd4];
  mov.u64 %rd5, s;
  mul.wide.u32 %rd6, %r4, 4;
  add.s64 %rd7, %rd5, %rd6;
  add.u32 %r9, %r4, %r1;
  mul.wide.u32 %rd8, %r9, 4;
  add.s64 %rd9, %rd5, %rd8;
  setp.lt.u32 %p1, %r9, 256;
  setp.eq.u32 %p4, %r4, 40;
  and.pred %p5, %p4, %p1;
  selp.u32 %r11, %r9, %r4, %p5;
  mul.wide.u32 %rd10, %r11, 4;
  add.s64 %rd11, %rd5, %rd10;
  mov.u32 %r10, 0;
  setp.eq.u32 %p2, %r2, 0;
  @!%p2 bra M1;
  st.shared.u32 [%rd7], %r8;
  @%p1 ld.shared.u32 %r10, [%rd9];
  bra DONE;
M1:
  setp.eq.u32 %p2, %r2, 1;
  @!%p2 bra M2;
  st.shared.u32 [%rd7], %r8;
  bar.sync 0;
  @%p1 ld.shared.u32 %r10, [%rd9];
  add.u32 %r12, %r8, 1;
  st.shared.u32 [%rd7], %r12;
  bra DONE;
M2:
  setp.eq.u32 %p2, %r2, 2;
  @!%p2 bra M3;
  st.shared.u32 [%rd7], %r8;
  ld.shared.u32 %r10, [%rd11];
  bra DONE;
M3:
  setp.eq.u32 %p2, %r2, 3;
  @!%p2 bra M4;
  st.shared.u32 [%rd7], %r8;
  bar.sync 0;
  ld.shared.u32 %r10, [%rd11];
  add.u32 %r12, %r8, 1;
  st.shared.u32 [%rd7], %r12;
  bra DONE;
M4:
  st.shared.u32 [%rd7], %r8;
  ld.shared.u32 %r20, [%rd7];
  ld.shared.u32 %r21, [%rd7];
  ld.shared.u32 %r22, [%rd7];
  ld.shared.u32 %r23, [%rd7];
  ld.shared.u32 %r24, [%rd7];
  ld.shared.u32 %r25, [%rd7];
  ld.shared.u32 %r26, [%rd7];
  ld.shared.u32 %r27, [%rd7];
  ld.shared.u32 %r28, [%rd7];
  @%p1 ld.shared.u32 %r10, [%rd9];
  add.u32 %r10, %r10, %r28;
DONE:
  bar.sync 0;
  add.s64 %rd12, %rd2, %rd3;
  st.global.u32 [%rd12], %r10;
  ret;
}
"#;

#[test]
fn unit_stride_races_in_the_block_tier() {
    let dev = Device::new();
    let m = dev.load_module(RT).unwrap();
    assert!(m.program("rt").unwrap().block_tier);
    let mut rng = Rng(seed());
    let blocks = 2 + rng.below(3) as u32;
    let n = blocks as usize * 256;
    let input: Vec<u32> = (0..n).map(|_| (rng.next() >> 33) as u32).collect();
    let ds = [0, 1, 64, 255, 256, u32::MAX, 1 + rng.below(200) as u32];
    for mode in 0..5 {
        for d in ds {
            let extra = [d, mode];
            let l = Launch {
                name: "rt",
                blocks,
                block: 256,
                rows: 1,
                dyn_shared: 0,
                extra: &extra,
            };
            let plain = launch(&dev, &m, &l, &input, false, 1);
            let tier = launch(&dev, &m, &l, &input, true, 1);
            let (p, t) = (plain.result.unwrap(), tier.result.unwrap());
            let reads = |t: u32| t.wrapping_add(d) < 256;
            let race = d != 0
                && if mode == 2 || mode == 3 {
                    reads(40)
                } else {
                    (0..256).any(reads)
                };
            let what = format!("mode {mode} d {d}");
            // A race's report: which of its two accesses comes first, and what it reads,
            // are the schedule's (compiled regions run lanes one by one, the interpreter a
            // warp at a time), but the word and the blocks are the same.
            let word = |r: &LaunchReport| {
                let mut v: Vec<_> = r.reports.iter().map(|c| (c.block, c.address)).collect();
                v.sort();
                v.dedup();
                v
            };
            assert_eq!(word(&p), word(&t), "{what}");
            assert_eq!(!p.reports.is_empty(), race, "{what}: {:?}", p.reports);
            if race {
                assert!(
                    p.reports.iter().all(|r| r.kind == CheckKind::SharedRace),
                    "{what}"
                );
            } else {
                // Without races, the values: each thread's own word, or its neighbour's.
                let want: Vec<u32> = (0..n)
                    .map(|i| {
                        let (b, t) = (i / 256, (i % 256) as u32);
                        let j = t.wrapping_add(d);
                        let there = input[b * 256 + j.min(255) as usize];
                        match mode {
                            0 | 1 if j < 256 => there,
                            0 | 1 => 0,
                            2 | 3 if t == 40 && j < 256 => there,
                            2 | 3 => input[i],
                            _ if j < 256 => there.wrapping_add(input[i]),
                            _ => input[i],
                        }
                    })
                    .collect();
                assert_eq!(plain.out, want, "{what}");
                assert_eq!(tier.out, want, "{what}");
            }
            // Blocks with a race are given up (after four, the launch stops trying).
            let ran = if race { 0 } else { blocks as u64 };
            assert_eq!(t.block_tier_blocks, ran, "{what}");
        }
    }
}
