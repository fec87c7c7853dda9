//! Shuffles in the block tier (`exec::block`): a warp at a time, by any distance and bound,
//! with the interpreter's results and reports, and replayed from a recorded block.

use super::entry_ptx::{module, Entry};
use super::util::{launch_in_out, seed, Launch, Rng};
use crate::*;

/// `out[i] = v + __shfl_down_sync(FULL, v, 1)` where `v` went through shared memory and a
/// barrier; with `mode` 1, lanes 16 to 31 skip the shuffle, so lane 15 reads an inactive lane.
const SHFL: &[Entry] = &[
    Entry {
        name: "shx",
        params: &[("pin", "%rd1"), ("pout", "%rd2"), ("pmode", "%r1")],
        shared: 1024,
        index_at: Some(2),
        body: r#"
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
"#,
    },
    Entry {
        name: "shd",
        params: &[
            ("pin", "%rd1"),
            ("pout", "%rd2"),
            ("pdelta", "%r11"),
            ("pc", "%r12"),
        ],
        shared: 0,
        index_at: Some(2),
        body: r#"
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
"#,
    },
];

/// Shuffles up and down (in place) by any distance and bound run in the tier with the
/// interpreter's results and a CPU reference's.
#[test]
fn shuffle_distances_in_the_block_tier() {
    let dev = Device::new();
    let m = dev.load_module(&module(SHFL)).unwrap();
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
            let r = launch_in_out(&dev, &m, &l, &input, tier, 1);
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
    let m = dev.load_module(&module(SHFL)).unwrap();
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
        let r = launch_in_out(&dev, &m, &l, &input, tier, threads);
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
