//! Addresses and shared accesses in the block tier (`exec::block`): affine index slots, and
//! races between unit-stride shared accesses, with the interpreter's results and reports.

use super::entry_ptx::Entry;
use super::util::{launch_in_out, seed, Launch, Rng};
use crate::*;

/// Affine index arithmetic: a mirrored index (stride -1), a global load and a shared store
/// through it (stride -4, not unit), and `mul.wide` of `tid + wrap`, whose 32-bit values wrap
/// inside the block when `wrap` is near 2^32 (then it is not affine, and the block is given
/// up). `out[i] = in[i] + ((tid + wrap) as u64 * 4 > u32::MAX)`.
const AFF: Entry = Entry {
    name: "aff",
    params: &[("pin", "%rd1"), ("pout", "%rd2"), ("pwrap", "%r1")],
    shared: 4096,
    index_at: None,
    body: r#"
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
"#,
};

/// The affine slots of `AFF` compute what the interpreter and a CPU reference do: in the
/// tier with 1-D blocks; given up (run by the interpreter) when `mul.wide`'s operand wraps
/// inside a block; not tried when the block has two dimensions (`%tid.x` is not the thread's
/// number in the block then: `block::fits_block`).
#[test]
fn affine_slots_in_the_block_tier() {
    use crate::ir::BlockSlot;
    let dev = Device::new();
    let m = dev.load_module(&AFF.ptx()).unwrap();
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
            let r = launch_in_out(&dev, &m, &l, &input, tier, 0);
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
const RT: Entry = Entry {
    name: "rt",
    params: &[
        ("pin", "%rd1"),
        ("pout", "%rd2"),
        ("pd", "%r1"),
        ("pmode", "%r2"),
    ],
    shared: 1024,
    index_at: Some(4),
    body: r#"
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
"#,
};

#[test]
fn unit_stride_races_in_the_block_tier() {
    let dev = Device::new();
    let m = dev.load_module(&RT.ptx()).unwrap();
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
            let plain = launch_in_out(&dev, &m, &l, &input, false, 1);
            let tier = launch_in_out(&dev, &m, &l, &input, true, 1);
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
