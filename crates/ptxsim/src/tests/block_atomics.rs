//! Atomics in the block tier (`exec::block`, `tier_atomic`): shared atomics in thread order
//! with their race records, global atomics deferred to the block's end, both checked against a
//! CPU reference on random inputs, and every block with a race or a bad address run and
//! reported by the interpreter.

use super::entry_ptx::{module, Entry};
use super::util::{launch_in_out, Launch, TierRun};
use super::util::{seed, Rng};
use crate::*;

/// Shared words 0–7 count the block's values by `x & 7` (`atom.shared.add`, whose old value
/// goes to `out[i]`), words 8–12 take their min (u32), max (s32), and, or and xor; after a
/// barrier, threads 0–12 store the block's words at `out[n + 16 * block + tid]`. Every thread
/// also adds `x >> 16` (and max, or, xor `x`) into `out[n + 16 * blocks + 4 * op + (x & 3)]`
/// with global atomics whose old values nothing reads. Shared memory is cleared by a loop
/// without a barrier. Thread 5 of block `bad`: with `mode` 1 it writes shared word 0 after the
/// atomics (a race with them), with `mode` 2 word 1 before them (a race too), with `mode` 3 it
/// adds to a global address out of bounds. With `mode` 4, thread 5 of every block writes word
/// 1 before the atomics: a race where another thread of the block has a value in bin 1.
const BTA: &[Entry] = &[
    Entry {
        name: "bta",
        params: &[
            ("pin", "%rd1"),
            ("pout", "%rd2"),
            ("pn", "%r1"),
            ("pbad", "%r2"),
            ("pmode", "%r3"),
        ],
        shared: 64,
        index_at: Some(4),
        body: r#"
  mov.u64 %rd5, s;
  mov.u32 %r8, %r4;
INIT:
  setp.ge.u32 %p1, %r8, 16;
  @%p1 bra INITDONE;
  mov.u32 %r9, 0;
  setp.eq.u32 %p2, %r8, 8;
  @%p2 mov.u32 %r9, -1;
  setp.eq.u32 %p2, %r8, 9;
  @%p2 mov.u32 %r9, -2147483648;
  setp.eq.u32 %p2, %r8, 10;
  @%p2 mov.u32 %r9, -1;
  mul.wide.u32 %rd6, %r8, 4;
  add.s64 %rd7, %rd5, %rd6;
  st.shared.u32 [%rd7], %r9;
  add.u32 %r8, %r8, %r6;
  bra.uni INIT;
INITDONE:
  bar.sync 0;
  setp.ge.u32 %p3, %r7, %r1;
  @%p3 bra AFTER;
  mul.wide.u32 %rd3, %r7, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r10, [%rd4];
  setp.eq.u32 %p4, %r5, %r2;
  setp.eq.u32 %p5, %r4, 5;
  and.pred %p6, %p4, %p5;
  setp.eq.u32 %p7, %r3, 2;
  and.pred %p8, %p6, %p7;
  @%p8 st.shared.u32 [%rd5+4], %r10;
  setp.eq.u32 %p14, %r3, 4;
  and.pred %p15, %p5, %p14;
  @%p15 st.shared.u32 [%rd5+4], %r10;
  and.b32 %r11, %r10, 7;
  mul.wide.u32 %rd8, %r11, 4;
  add.s64 %rd9, %rd5, %rd8;
  atom.shared.add.u32 %r12, [%rd9], 1;
  add.s64 %rd10, %rd2, %rd3;
  st.global.u32 [%rd10], %r12;
  atom.shared.min.u32 %r13, [%rd5+32], %r10;
  atom.shared.max.s32 %r14, [%rd5+36], %r10;
  atom.shared.and.b32 %r15, [%rd5+40], %r10;
  atom.shared.or.b32 %r16, [%rd5+44], %r10;
  red.shared.xor.b32 [%rd5+48], %r10;
  mov.u32 %r21, %nctaid.x;
  shl.b32 %r22, %r21, 4;
  add.u32 %r20, %r1, %r22;
  shr.u32 %r17, %r10, 16;
  and.b32 %r18, %r10, 3;
  add.u32 %r19, %r18, %r20;
  mul.wide.u32 %rd11, %r19, 4;
  add.s64 %rd12, %rd2, %rd11;
  red.global.add.u32 [%rd12], %r17;
  atom.global.max.u32 %r27, [%rd12+16], %r10;
  red.global.or.b32 [%rd12+32], %r10;
  red.global.xor.b32 [%rd12+48], %r10;
  setp.eq.u32 %p9, %r3, 1;
  and.pred %p10, %p6, %p9;
  @%p10 st.shared.u32 [%rd5], %r10;
  setp.eq.u32 %p11, %r3, 3;
  and.pred %p12, %p6, %p11;
  add.s64 %rd13, %rd2, 268435456;
  @%p12 red.global.add.u32 [%rd13], 1;
AFTER:
  bar.sync 0;
  setp.ge.u32 %p13, %r4, 13;
  @%p13 bra DONE;
  mul.wide.u32 %rd14, %r4, 4;
  add.s64 %rd15, %rd5, %rd14;
  ld.shared.u32 %r23, [%rd15];
  shl.b32 %r24, %r5, 4;
  add.u32 %r25, %r1, %r24;
  add.u32 %r26, %r25, %r4;
  mul.wide.u32 %rd16, %r26, 4;
  add.s64 %rd17, %rd2, %rd16;
  st.global.u32 [%rd17], %r23;
DONE:
  ret;
"#,
    },
    Entry {
        name: "btr",
        params: &[("pin", "%rd1"), ("pout", "%rd2")],
        shared: 0,
        index_at: None,
        body: r#"
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  bar.sync 0;
  atom.global.add.u32 %r2, [%rd2], 1;
  st.global.u32 [%rd4], %r2;
  ret;
"#,
    },
];

const BD: u32 = 128;

fn run_bta(
    dev: &Device,
    m: &Module,
    input: &[u32],
    n: u32,
    blocks: u32,
    mode: u32,
) -> [TierRun; 2] {
    let extra = [n, blocks - 1, mode];
    let l = Launch {
        name: "bta",
        blocks,
        block: BD,
        rows: 1,
        dyn_shared: 0,
        extra: &extra,
    };
    [false, true].map(|tier| launch_in_out(dev, m, &l, input, tier, 1))
}

/// What `bta` leaves in `out` beyond the old values (CPU reference), and per block and bin the
/// number of values.
fn bta_reference(input: &[u32], n: usize, blocks: usize) -> (Vec<u32>, Vec<[u32; 8]>) {
    let mut out = vec![0u32; input.len()];
    let mut counts = vec![[0u32; 8]; blocks];
    for b in 0..blocks {
        let xs = &input[(b * BD as usize).min(n)..((b + 1) * BD as usize).min(n)];
        let mut w = [0u32; 13];
        (w[8], w[9], w[10]) = (u32::MAX, i32::MIN as u32, u32::MAX);
        for &x in xs {
            w[(x & 7) as usize] += 1;
            w[8] = w[8].min(x);
            w[9] = (w[9] as i32).max(x as i32) as u32;
            w[10] &= x;
            w[11] |= x;
            w[12] ^= x;
        }
        counts[b].copy_from_slice(&w[..8]);
        out[n + 16 * b..][..13].copy_from_slice(&w);
    }
    let g = &mut out[n + 16 * blocks..][..16];
    for &x in &input[..n] {
        let bin = (x & 3) as usize;
        g[bin] = g[bin].wrapping_add(x >> 16);
        g[4 + bin] = g[4 + bin].max(x);
        g[8 + bin] |= x;
        g[12 + bin] ^= x;
    }
    (out, counts)
}

/// The old values of the block's counters: for each bin, the block's threads with that bin
/// got 0, 1, … in some order.
fn check_old_values(input: &[u32], out: &[u32], n: usize, counts: &[[u32; 8]], what: &str) {
    for (b, c) in counts.iter().enumerate() {
        let lo = (b * BD as usize).min(n);
        let hi = ((b + 1) * BD as usize).min(n);
        for bin in 0..8u32 {
            let mut old: Vec<u32> = (lo..hi)
                .filter(|&i| input[i] & 7 == bin)
                .map(|i| out[i])
                .collect();
            old.sort_unstable();
            let want: Vec<u32> = (0..c[bin as usize]).collect();
            assert_eq!(old, want, "{what}: block {b} bin {bin}");
        }
    }
}

#[test]
fn atomics_in_the_block_tier() {
    let dev = Device::new();
    let m = dev.load_module(&module(BTA)).unwrap();
    assert!(m.program("bta").unwrap().block_tier);
    // A global atomic whose old value is read: not in the tier.
    assert!(!m.program("btr").unwrap().block_tier);
    let mut rng = Rng(seed());
    let blocks = 6 + rng.below(6) as u32;
    // The last block partial.
    let n = (blocks * BD) as usize - 1 - rng.below(BD as u64 / 2) as usize;
    let len = n + 16 * blocks as usize + 16;
    let input: Vec<u32> = (0..len).map(|_| rng.next() as u32).collect();
    let (want, counts) = bta_reference(&input, n, blocks as usize);
    let [plain, tier] = run_bta(&dev, &m, &input, n as u32, blocks, 0);
    for (r, what) in [(&plain, "interpreter"), (&tier, "tier")] {
        assert_eq!(&r.out[n..], &want[n..], "{what}");
        check_old_values(&input, &r.out, n, &counts, what);
    }
    let (p, t) = (plain.result.unwrap(), tier.result.unwrap());
    assert!(p.reports.is_empty() && t.reports.is_empty());
    assert_eq!(
        (p.block_tier_blocks, t.block_tier_blocks),
        (0, blocks as u64)
    );
    // One worker: the first block recorded, the partial last one's guards differ from it.
    assert_eq!(t.block_tier_replays, blocks as u64 - 2);
    // Two workers, on blocks that the workers' deferred global atomics all reach.
    let extra = [n as u32, blocks - 1, 0];
    let l = Launch {
        name: "bta",
        blocks,
        block: BD,
        rows: 1,
        dyn_shared: 0,
        extra: &extra,
    };
    let two = launch_in_out(&dev, &m, &l, &input, true, 2);
    assert_eq!(&two.out[n..], &want[n..]);
    check_old_values(&input, &two.out, n, &counts, "two workers");
    assert_eq!(two.result.unwrap().block_tier_blocks, blocks as u64);
}

/// Shared atomics race with plain writes of other threads in the same barrier interval, in
/// either order; a global atomic out of bounds faults. Each gives its block up, and the
/// interpreter reports it as it does without the tier.
#[test]
fn atomics_the_tier_gives_up_are_reported_by_the_interpreter() {
    let dev = Device::new();
    let m = dev.load_module(&module(BTA)).unwrap();
    let mut rng = Rng(seed());
    let blocks = 4 + rng.below(4) as u32;
    let n = (blocks * BD) as usize;
    let len = n + 16 * blocks as usize + 16;
    let input: Vec<u32> = (0..len).map(|_| rng.next() as u32).collect();
    for mode in [1, 2] {
        let [plain, tier] = run_bta(&dev, &m, &input, n as u32, blocks, mode);
        let (p, t) = (plain.result.unwrap(), tier.result.unwrap());
        // (Mode 1: thread 5's write, then the atomics of the warps after it.)
        assert!(!p.reports.is_empty(), "mode {mode}");
        for r in &p.reports {
            assert_eq!(r.kind, CheckKind::SharedRace, "mode {mode}");
            assert_eq!(r.block, (blocks - 1, 0, 0), "mode {mode}");
        }
        // Mode 1: the write, when another thread of its warp (which runs first) counted a value
        // in bin 0; else the first later thread with bin 0, whose atomic meets the write. Mode
        // 2: the first other thread of the block with bin 1.
        let lo = ((blocks - 1) * BD) as usize;
        let bin0 = |t: u32| t != 5 && input[lo + t as usize] & 7 == 0;
        let first = if mode == 1 {
            if (0..32.min(BD)).any(bin0) {
                5
            } else {
                (32..BD).find(|&t| bin0(t)).unwrap_or(u32::MAX)
            }
        } else {
            (0..BD)
                .find(|&t| t != 5 && input[lo + t as usize] & 7 == 1)
                .unwrap_or(u32::MAX)
        };
        assert_eq!(
            p.reports[0].thread,
            (first, 0, 0),
            "mode {mode}: {:?}",
            p.reports
        );
        assert_eq!(p.reports, t.reports, "mode {mode}");
        assert_eq!(t.block_tier_blocks, blocks as u64 - 1, "mode {mode}");
        assert_eq!(&plain.out[n..], &tier.out[n..], "mode {mode}");
    }
    // Mode 4: the same plain write in every block, and values in bin 1 only in the last block
    // (thread `t`), whose atomic then races with it. Replays, which skip the checks of shared
    // accesses through fixed addresses, must not skip them when atomics use the records.
    let t = 6 + rng.below(BD as u64 - 6) as usize;
    let mut only = input.clone();
    for (i, x) in only[..n].iter_mut().enumerate() {
        if *x & 7 == 1 {
            *x ^= 1;
        }
        if i == n - BD as usize + t {
            *x = (*x & !7) | 1;
        }
    }
    let [plain, tier] = run_bta(&dev, &m, &only, n as u32, blocks, 4);
    let (p, r) = (plain.result.unwrap(), tier.result.unwrap());
    assert_eq!(p.reports.len(), 1, "{:?}", p.reports);
    let want = (CheckKind::SharedRace, (blocks - 1, 0, 0), (t as u32, 0, 0));
    let got = &p.reports[0];
    assert_eq!((got.kind, got.block, got.thread), want);
    assert_eq!(p.reports, r.reports);
    assert_eq!(r.block_tier_blocks, blocks as u64 - 1);
    assert_eq!(r.block_tier_replays, blocks as u64 - 2);
    let [plain, tier] = run_bta(&dev, &m, &input, n as u32, blocks, 3);
    match (plain.result, tier.result) {
        (Err(LaunchError::Fault { report: a, .. }), Err(LaunchError::Fault { report: b, .. })) => {
            assert_eq!(a.kind, CheckKind::OutOfBounds);
            assert_eq!((a.thread, a.block), ((5, 0, 0), (blocks - 1, 0, 0)));
            // The same report, but for where the two runs' buffers were.
            let past = |r: &CheckReport| {
                let s = r.allocation.clone().unwrap_or_default();
                s.split(" at 0x").next().map(str::to_string)
            };
            assert_eq!(past(&a), past(&b));
            assert!(past(&a).is_some_and(|s| s.contains("bytes past the end")));
            let strip = |r: CheckReport| CheckReport {
                address: 0,
                allocation: None,
                message: String::new(),
                ..r
            };
            assert_eq!(strip(*a), strip(*b));
        }
        other => panic!("expected two faults: {other:?}"),
    }
}

/// NVRTC's shared-memory histogram runs in the tier (its short loops without a barrier, its
/// shared and global atomics), with the CPU's counts, on one worker and two.
#[test]
fn nvrtc_histogram_in_the_block_tier() {
    let dev = Device::new();
    let path = format!(
        "{}/tests/fixtures/histogram.ptx",
        env!("CARGO_MANIFEST_DIR")
    );
    let m = dev
        .load_module(&std::fs::read_to_string(path).unwrap())
        .unwrap();
    assert!(m.program("histogramShared").unwrap().block_tier);
    let mut rng = Rng(seed());
    let blocks = 3 + rng.below(6) as u32;
    // Bytes: a grid-stride loop of one to three rounds, the last one partial.
    let words =
        256 + (blocks as usize * 256 * (1 + rng.below(2) as usize)) / 4 + rng.below(300) as usize;
    // Few distinct bytes: bins that stay zero in some blocks.
    let input: Vec<u32> = (0..words)
        .map(|_| {
            let mut b = || [0u8, 3, 7, 200, 255][rng.below(5) as usize] as u32;
            b() | b() << 8 | b() << 16 | b() << 24
        })
        .collect();
    let nbytes = (words * 4) as u32;
    let mut want = vec![0u32; words];
    for w in &input {
        for k in 0..4 {
            want[(w >> (8 * k)) as usize & 255] += 1;
        }
    }
    for threads in [1, 2] {
        let extra = [nbytes];
        let l = Launch {
            name: "histogramShared",
            blocks,
            block: 256,
            rows: 1,
            dyn_shared: 0,
            extra: &extra,
        };
        let r = launch_in_out(&dev, &m, &l, &input, true, threads);
        let rep = r.result.unwrap();
        assert!(rep.reports.is_empty(), "{:?}", rep.reports);
        assert_eq!(rep.block_tier_blocks, blocks as u64, "{threads} workers");
        assert_eq!(r.out, want, "{threads} workers");
    }
}
