//! The block tier (`exec::block`): which kernels it runs, that it computes what the interpreter
//! computes, and that every block it gives up on (a race, an access out of bounds, a load after
//! the block's own store) is run by the interpreter with the interpreter's exact reports.

use super::entry_ptx::Entry;
use super::util::{launch_in_out, seed, Launch, Rng, TierRun};
use crate::*;

/// `s[tid] = in[i]`, barrier, `s[tid] = s[j] + 1`, barrier, `out[i] = s[tid]`, where `j` is
/// `tid` except for thread 40 of block `bad`: with `mode` 1 it reads `s[41]`, which thread 41
/// writes in the same interval (a race); with `mode` 2 it reads `s[200]` (out of bounds).
/// With `mode` 3 every thread then loads its own output back and adds 1 (a global load after
/// the block's own store).
const BT: Entry = Entry {
    name: "bt",
    params: &[
        ("pin", "%rd1"),
        ("pout", "%rd2"),
        ("pn", "%r1"),
        ("pbad", "%r2"),
        ("pmode", "%r3"),
    ],
    shared: 512,
    index_at: Some(4),
    body: r#"
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
"#,
};

fn run_bt(
    dev: &Device,
    m: &Module,
    input: &[u32],
    blocks: u32,
    mode: u32,
    tier: bool,
    threads: usize,
) -> TierRun {
    let extra = [input.len() as u32, blocks - 1, mode];
    let l = Launch {
        name: "bt",
        blocks,
        block: 128,
        rows: 1,
        dyn_shared: 0,
        extra: &extra,
    };
    launch_in_out(dev, m, &l, input, tier, threads)
}

#[test]
fn the_block_tier_computes_what_the_interpreter_does() {
    let dev = Device::new();
    let m = dev.load_module(&BT.ptx()).unwrap();
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
    let m = dev.load_module(&BT.ptx()).unwrap();
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
            let r = launch_in_out(&dev, &m, &l, &input, tier, 0);
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
            let u = crate::ir::uniform::analyze(p);
            for (s, kind) in p.block_slots.iter().enumerate() {
                let s = s as u32;
                match kind {
                    BlockSlot::Uniform => assert!(u.is_uniform(s), "{} slot {s}", k.name),
                    BlockSlot::Pred => {
                        for i in &p.code {
                            let mut unguarded = *i;
                            unguarded.guard = crate::ir::NONE;
                            assert!(!crate::ir::defuse::sources(&unguarded).contains(&s));
                            if crate::ir::defuse::may_write(i, p).contains(&s) {
                                assert!(matches!(i.op, Op::SetpI { .. }), "{}", k.name);
                            }
                        }
                    }
                    BlockSlot::Unread => {
                        for i in &p.code {
                            assert!(i.guard != s && !crate::ir::defuse::sources(i).contains(&s));
                        }
                    }
                    BlockSlot::Affine { local } => {
                        // `%tid.x`, or one unguarded writer, before its every read in the
                        // same straight run when local.
                        let writers: Vec<usize> = (0..p.code.len())
                            .filter(|&pc| crate::ir::defuse::may_write(&p.code[pc], p).contains(&s))
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
                                let reads =
                                    i.guard == s || crate::ir::defuse::sources(i).contains(&s);
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
