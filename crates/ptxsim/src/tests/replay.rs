//! Replays of the block tier (`exec::block::replay`): blocks that run again from the record
//! of an earlier block compute what the interpreter computes, count the interpreter's
//! instructions, and stop where a guard on data or `%ctaid` differs from the record, so that
//! the tier (and, for a bug, the interpreter with its exact report) runs that block instead.

use super::entry_ptx::Entry;
use super::util::{launch_in_out, Launch, TierRun};
use super::util::{seed, Rng};
use crate::*;

/// `v = in[i]` (0 past `n`) into `s[tid]`; then `a = v odd ? v + 5 : v << 1`, plus `tid` in
/// block `pk` only; then `out[i] = a + (thread tid ^ 1's a)`, through shared memory at an
/// address that is not unit-stride.
const RP: Entry = Entry {
    name: "rp",
    params: &[
        ("pin", "%rd1"),
        ("pout", "%rd2"),
        ("pn", "%r1"),
        ("pk", "%r2"),
    ],
    shared: 1024,
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
  ld.shared.u32 %r10, [%rd7];
  and.b32 %r11, %r10, 1;
  setp.ne.u32 %p2, %r11, 0;
  @%p2 bra ODD;
  shl.b32 %r12, %r10, 1;
  bra.uni J;
ODD:
  add.u32 %r12, %r10, 5;
J:
  setp.ne.u32 %p3, %r5, %r2;
  @%p3 bra K;
  add.u32 %r12, %r12, %r4;
K:
  bar.sync 0;
  st.shared.u32 [%rd7], %r12;
  bar.sync 0;
  xor.b32 %r13, %r4, 1;
  mul.wide.u32 %rd8, %r13, 4;
  add.s64 %rd9, %rd5, %rd8;
  ld.shared.u32 %r14, [%rd9];
  add.u32 %r15, %r12, %r14;
  @%p1 bra DONE;
  add.s64 %rd10, %rd2, %rd3;
  st.global.u32 [%rd10], %r15;
DONE:
  ret;
"#,
};

/// `s[tid] = in[i] & 0xFFFFFF`; then thread `tid` reads `s[in[i] >> 24]` and writes it plus 1
/// back to `s[tid]` in the same interval (a race unless every thread reads its own word),
/// and `out[i] = s[tid]`.
const RR: Entry = Entry {
    name: "rr",
    params: &[("pin", "%rd1"), ("pout", "%rd2")],
    shared: 512,
    index_at: Some(4),
    body: r#"
  mul.wide.u32 %rd3, %r7, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r8, [%rd4];
  and.b32 %r9, %r8, 16777215;
  shr.u32 %r10, %r8, 24;
  mov.u64 %rd5, s;
  mul.wide.u32 %rd6, %r4, 4;
  add.s64 %rd7, %rd5, %rd6;
  st.shared.u32 [%rd7], %r9;
  bar.sync 0;
  mul.wide.u32 %rd8, %r10, 4;
  add.s64 %rd9, %rd5, %rd8;
  ld.shared.u32 %r11, [%rd9];
  add.u32 %r12, %r11, 1;
  st.shared.u32 [%rd7], %r12;
  bar.sync 0;
  ld.shared.u32 %r13, [%rd7];
  add.s64 %rd10, %rd2, %rd3;
  st.global.u32 [%rd10], %r13;
  ret;
"#,
};

/// `name(in, out, extra…)` on `blocks` blocks of 128 threads (`util::launch_in_out`).
fn launch(
    dev: &Device,
    m: &Module,
    (name, blocks): (&str, u32),
    input: &[u32],
    extra: &[u32],
    tier: bool,
    threads: usize,
) -> TierRun {
    let l = Launch {
        name,
        blocks,
        block: 128,
        rows: 1,
        dyn_shared: 0,
        extra,
    };
    launch_in_out(dev, m, &l, input, tier, threads)
}

/// `rp`'s answer on the CPU.
fn rp_reference(input: &[u32], blocks: u32, k: u32) -> Vec<u32> {
    let a = |i: usize| {
        let v = input.get(i).copied().unwrap_or(0);
        let (b, t) = (i / 128, (i % 128) as u32);
        let a = if v & 1 != 0 {
            v.wrapping_add(5)
        } else {
            v << 1
        };
        if b as u32 == k {
            a.wrapping_add(t)
        } else {
            a
        }
    };
    let mut out = vec![0; input.len()];
    for (i, o) in out.iter_mut().enumerate() {
        *o = a(i).wrapping_add(a(i ^ 1));
    }
    assert!(input.len() <= blocks as usize * 128);
    out
}

/// Blocks whose data take the recorded block's branches replay it; blocks whose data branch
/// otherwise, the block that `%ctaid` sends another way and the partial last block stop and
/// run in the tier; every result is the CPU's, and the count is the interpreter's.
#[test]
fn replays_check_the_guards_that_differ_between_blocks() {
    let dev = Device::new();
    let m = dev.load_module(&RP.ptx()).unwrap();
    assert!(m.program("rp").unwrap().block_tier);
    let mut rng = Rng(seed());
    let blocks = 12 + rng.below(6) as u32;
    let n = blocks as usize * 128 - 1 - rng.below(60) as usize;
    // The odd values: threads 3k in most blocks (block 0, which the one worker records,
    // among them), the other threads in two blocks.
    let other: Vec<u32> = {
        let mut b: Vec<u32> = (1..blocks - 1).collect();
        for j in (1..b.len()).rev() {
            b.swap(j, rng.below(j as u64 + 1) as usize);
        }
        b[..2].to_vec()
    };
    let special = loop {
        let k = 1 + rng.below(blocks as u64 - 2) as u32;
        if !other.contains(&k) {
            break k;
        }
    };
    let input: Vec<u32> = (0..n)
        .map(|i| {
            let (b, t) = ((i / 128) as u32, i % 128);
            let odd = (t % 3 == 0) != other.contains(&b);
            (rng.below(1 << 28) as u32 & !1) | odd as u32
        })
        .collect();
    let want = rp_reference(&input, blocks, special);
    let plain = launch(
        &dev,
        &m,
        ("rp", blocks),
        &input,
        &[n as u32, special],
        false,
        1,
    );
    assert_eq!(plain.out, want);
    let p = plain.result.unwrap();
    for threads in [1, 2] {
        let tier = launch(
            &dev,
            &m,
            ("rp", blocks),
            &input,
            &[n as u32, special],
            true,
            threads,
        );
        assert_eq!(tier.out, want, "{threads} workers");
        let t = tier.result.unwrap();
        assert!(t.reports.is_empty());
        assert_eq!(t.block_tier_blocks, blocks as u64);
        assert_eq!(t.warp_instructions, p.warp_instructions);
        if threads == 1 {
            // Recorded: block 0. Stopped: the two other blocks, the special one, the last.
            assert_eq!(t.block_tier_replays, blocks as u64 - 5);
        }
    }
}

/// Shared accesses through addresses loaded from memory run with their checks in a replay:
/// a race planted in one block is the interpreter's report, and the race-free blocks
/// replay.
#[test]
fn replays_check_shared_accesses_through_loaded_addresses() {
    let dev = Device::new();
    let m = dev.load_module(&RR.ptx()).unwrap();
    assert!(m.program("rr").unwrap().block_tier);
    let mut rng = Rng(seed());
    let blocks = 8 + rng.below(6) as u32;
    let n = blocks as usize * 128;
    let x: Vec<u32> = (0..n).map(|_| rng.below(1 << 24) as u32).collect();
    let input: Vec<u32> = (0..n).map(|i| x[i] | ((i % 128) as u32) << 24).collect();
    let want: Vec<u32> = x.iter().map(|v| v + 1).collect();
    let tier = launch(&dev, &m, ("rr", blocks), &input, &[], true, 1);
    assert_eq!(tier.out, want);
    let t = tier.result.unwrap();
    assert!(t.reports.is_empty(), "{:?}", t.reports);
    assert_eq!(t.block_tier_replays, blocks as u64 - 1);
    // Thread 40 of one block reads thread 41's word, which thread 41 writes in that interval.
    let bad = 1 + rng.below(blocks as u64 - 1) as usize;
    let mut racy = input.clone();
    racy[bad * 128 + 40] = x[bad * 128 + 40] | 41 << 24;
    let plain = launch(&dev, &m, ("rr", blocks), &racy, &[], false, 1);
    let tier = launch(&dev, &m, ("rr", blocks), &racy, &[], true, 1);
    assert_eq!(plain.out, tier.out);
    let (p, t) = (plain.result.unwrap(), tier.result.unwrap());
    assert_eq!(p.reports.len(), 1, "{:?}", p.reports);
    assert_eq!(p.reports[0].kind, CheckKind::SharedRace);
    assert_eq!(p.reports[0].block, (bad as u32, 0, 0));
    assert_eq!(p.reports, t.reports);
    assert_eq!(t.block_tier_blocks, blocks as u64 - 1);
    assert_eq!(t.block_tier_replays, blocks as u64 - 2);
}

/// `v = in[i]`, then `k` times: `s[tid] = v`, barrier, `v = s[tid] + 3`, barrier; `out[i] = v`.
const LP: Entry = Entry {
    name: "lp",
    params: &[("pin", "%rd1"), ("pout", "%rd2"), ("pk", "%r2")],
    shared: 512,
    index_at: Some(4),
    body: r#"
  mul.wide.u32 %rd3, %r7, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r8, [%rd4];
  mov.u64 %rd5, s;
  mul.wide.u32 %rd6, %r4, 4;
  add.s64 %rd7, %rd5, %rd6;
  mov.u32 %r9, 0;
LOOP:
  setp.ge.u32 %p1, %r9, %r2;
  @%p1 bra END;
  st.shared.u32 [%rd7], %r8;
  bar.sync 0;
  ld.shared.u32 %r8, [%rd7];
  add.u32 %r8, %r8, 3;
  bar.sync 0;
  add.u32 %r9, %r9, 1;
  bra.uni LOOP;
END:
  add.s64 %rd8, %rd2, %rd3;
  st.global.u32 [%rd8], %r8;
  ret;
"#,
};

/// A block too long to record (`replay::STEPS_MAX`) runs in the tier without replays; a short
/// one is replayed, with a loop whose counter is skipped.
#[test]
fn blocks_too_long_to_record_run_in_the_tier() {
    let dev = Device::new();
    let m = dev.load_module(&LP.ptx()).unwrap();
    assert!(m.program("lp").unwrap().block_tier);
    let mut rng = Rng(seed());
    let blocks = 4;
    let n = blocks as usize * 128;
    let input: Vec<u32> = (0..n).map(|_| rng.below(1 << 30) as u32).collect();
    for (k, replays) in [(5 + rng.below(20) as u32, blocks as u64 - 1), (8000, 0)] {
        let want: Vec<u32> = input.iter().map(|v| v.wrapping_add(3 * k)).collect();
        let r = launch(&dev, &m, ("lp", blocks), &input, &[k], true, 1);
        assert_eq!(r.out, want, "k {k}");
        let t = r.result.unwrap();
        assert_eq!(t.block_tier_blocks, blocks as u64, "k {k}");
        assert_eq!(t.block_tier_replays, replays, "k {k}");
    }
}

/// `out[i] = in[i] + (tid ^ c)`, where `c` is 0x55, or 0xAA in a block whose first value is
/// odd (a branch on a loaded value, the same for the whole block), computed before a barrier
/// and read after it.
const WP: Entry = Entry {
    name: "wp",
    params: &[("pin", "%rd1"), ("pout", "%rd2")],
    shared: 0,
    index_at: None,
    body: r#"
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mul.lo.u32 %r4, %r2, %r3;
  add.u32 %r5, %r4, %r1;
  mul.wide.u32 %rd3, %r4, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r6, [%rd4];
  and.b32 %r7, %r6, 1;
  setp.ne.u32 %p1, %r7, 0;
  @%p1 bra ODD;
  xor.b32 %r8, %r1, 85;
  bra.uni JOIN;
ODD:
  xor.b32 %r8, %r1, 170;
JOIN:
  bar.sync 0;
  mul.wide.u32 %rd5, %r5, 4;
  add.s64 %rd6, %rd1, %rd5;
  ld.global.u32 %r9, [%rd6];
  add.u32 %r10, %r9, %r8;
  add.s64 %rd7, %rd2, %rd5;
  st.global.u32 [%rd7], %r10;
  ret;
"#,
};

/// Warm replays skip steps whose results are still in the registers from the recorded block
/// (`replay::cached`); a block that runs in the tier from its start (here on another path, which
/// writes the same register with another value) makes the next replay run them again.
#[test]
fn replays_after_a_block_on_another_path_compute_what_they_skipped() {
    let dev = Device::new();
    let m = dev.load_module(&WP.ptx()).unwrap();
    assert!(m.program("wp").unwrap().block_tier);
    let mut rng = Rng(seed());
    let blocks = 8 + rng.below(8) as u32;
    let n = blocks as usize * 128;
    let mut input: Vec<u32> = (0..n).map(|_| rng.below(1 << 30) as u32 & !1).collect();
    // Two blocks after the first start with an odd value.
    let odd: Vec<usize> = (0..2)
        .map(|_| 1 + rng.below(blocks as u64 - 2) as usize)
        .collect();
    for &b in &odd {
        input[b * 128] |= 1;
    }
    let want: Vec<u32> = (0..n)
        .map(|i| {
            let c = if input[i / 128 * 128] & 1 == 1 {
                170
            } else {
                85
            };
            input[i].wrapping_add((i % 128) as u32 ^ c)
        })
        .collect();
    let r = launch(&dev, &m, ("wp", blocks), &input, &[], true, 1);
    let wrong = (0..n).find(|&i| r.out[i] != want[i]);
    assert_eq!(wrong, None, "first wrong output (odd blocks {odd:?})");
    let t = r.result.unwrap();
    assert_eq!(t.block_tier_blocks, blocks as u64);
    let distinct = if odd[0] == odd[1] { 1 } else { 2 };
    assert_eq!(t.block_tier_replays, blocks as u64 - 1 - distinct);
}

/// Shuffle reductions within each warp: `shfl.down` and `add` pairs that replays fuse (the
/// add reading the shuffle's result and its source, in either order) and two they must not
/// (the shuffle's result read again later; an add of another register). `out[i] = r14 * 7 +
/// r17`.
const SR: Entry = Entry {
    name: "sr",
    params: &[("pin", "%rd1"), ("pout", "%rd2")],
    shared: 0,
    index_at: Some(1),
    body: r#"
  mul.wide.u32 %rd3, %r4, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r6, [%rd4];
  shfl.sync.down.b32 %r10, %r6, 16, 31, -1;
  add.u32 %r11, %r10, %r6;
  shfl.sync.down.b32 %r12, %r11, 8, 31, -1;
  add.u32 %r13, %r11, %r12;
  shfl.sync.down.b32 %r14, %r13, 4, 31, -1;
  add.u32 %r15, %r14, %r13;
  shfl.sync.down.b32 %r16, %r15, 1, 31, -1;
  add.u32 %r17, %r16, %r1;
  bar.sync 0;
  mad.lo.u32 %r18, %r14, 7, %r17;
  add.s64 %rd5, %rd2, %rd3;
  st.global.u32 [%rd5], %r18;
  ret;
"#,
};

/// `sr`'s answer on the CPU.
fn sr_reference(input: &[u32]) -> Vec<u32> {
    let down = |v: &[u32], s: usize| -> Vec<u32> {
        (0..v.len())
            .map(|l| v[if l % 32 + s < 32 { l + s } else { l }])
            .collect()
    };
    let add = |a: &[u32], b: &[u32]| -> Vec<u32> {
        a.iter().zip(b).map(|(x, y)| x.wrapping_add(*y)).collect()
    };
    let r11 = add(&down(input, 16), input);
    let r13 = add(&r11, &down(&r11, 8));
    let r14 = down(&r13, 4);
    let r15 = add(&r14, &r13);
    let r17: Vec<u32> = down(&r15, 1)
        .iter()
        .enumerate()
        .map(|(i, x)| x.wrapping_add((i % 128) as u32))
        .collect();
    r14.iter()
        .zip(&r17)
        .map(|(a, b)| a.wrapping_mul(7).wrapping_add(*b))
        .collect()
}

/// Replays fuse a shuffle with the add that reads it (`replay::fuse_adds`) only where nothing
/// else reads the shuffle's result: the results are the CPU's in every replayed block.
#[test]
fn replayed_shuffle_reductions_compute_every_register_that_is_read() {
    let dev = Device::new();
    let m = dev.load_module(&SR.ptx()).unwrap();
    assert!(m.program("sr").unwrap().block_tier);
    let mut rng = Rng(seed());
    let blocks = 6 + rng.below(8) as u32;
    let input: Vec<u32> = (0..blocks as usize * 128)
        .map(|_| rng.next() as u32)
        .collect();
    for threads in [1, 2] {
        let r = launch(&dev, &m, ("sr", blocks), &input, &[], true, threads);
        let want = sr_reference(&input);
        let wrong = (0..input.len()).find(|&i| r.out[i] != want[i]);
        assert_eq!(wrong, None, "first wrong output, {threads} workers");
        let t = r.result.unwrap();
        assert_eq!(t.block_tier_blocks, blocks as u64);
        // Each worker records one block and replays the rest.
        assert!(
            t.block_tier_replays + threads as u64 >= blocks as u64,
            "{t:?}"
        );
    }
}
