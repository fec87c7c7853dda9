//! The block tier (the design and its reasons: `docs/block-tier.md`): runs a whole
//! block of an eligible kernel with its threads' registers side by side (`[slot][thread]`),
//! each instruction dispatched once for all the threads at one PC and run as loops over
//! 64-thread words, instead of once per warp.
//!
//! **How it keeps registers** (`plan`, `Program::block_slots`): block-uniform registers (loop
//! counters, sizes, parameters; `ir::uniform`) as one value for the block, computed once
//! when every live thread runs the instruction (otherwise the block is given up);
//! predicates that only comparisons write and only guards read as 64-thread mask words;
//! `%tid.x` and the index and address arithmetic on it as `base + stride * thread`, held once
//! for the block (`affine`: a load or store through such an address knows its stride without
//! looking at the lanes); registers nothing reads not at all; the rest as `u64` lanes.
//! Threads that took a branch to code that only exits no longer count for uniform
//! instructions, as in the analysis.
//!
//! **Optimistic, and never reports.** It checks every access conservatively (bounds,
//! alignment, and shared-memory races against packed per-word records) and, on anything it
//! does not handle, gives the block up: nothing it did is visible (its global stores wait in the
//! core's buffer until the block ends, and the core restores shared memory: `accel`), and the
//! interpreter runs the block
//! from its start, so every report, fault and printf is the interpreter's own. A global load
//! after one of the block's own global stores, a shuffle by part of a warp or with operands
//! that differ between threads, a cancel, an abort, or more barrier intervals than its
//! records count also give the block up.
//!
//! **Eligible** (`plan`): the kernel's barriers split its blocks into phases
//! (`ir::uniform`), and it uses only integer and f32 arithmetic, integer conversions,
//! comparisons without a boolean operation, kernel parameters, global loads and stores, 32-bit
//! shared loads and stores, `shfl.sync`, block-wide `bar.sync`, `exit`, and 32-bit integer
//! atomics whose final value does not depend on the threads' order (add, min, max, and, or,
//! xor: `tier_atomic`), global ones only where nothing reads their old value: no calls, other
//! warp collectives, other atomics, fences or local memory; every loop longer than
//! `SHORT_LOOP` has a barrier in it (long loops without one run faster as compiled regions);
//! and it indexes threads by `%tid.x` only. Launches with an instruction budget, or with
//! compiled code turned off (`JitMode::Off`: exact interpreted counts), do not use it.
//!
//! **Atomics:** a shared one runs for its group in thread order, with race records in which
//! atomic updates race with other threads' plain accesses of the interval but not with each
//! other (a plain access of a word that an atomic updated in the interval gives the block up,
//! even where the checker would allow it). A global one waits with the block's stores and is
//! applied (`fetch_add`, or a compare-and-swap loop) when the block ends.
//!
//! **Control:** groups of threads per PC, the lowest PC first, as the warp interpreter does;
//! a forward branch over straight-line code that part of a group takes keeps the group whole
//! (the others run the code, the takers wait and rejoin at the target).
//!
//! **Replays** (`replay`): a worker records the first block it runs to its end; later blocks
//! of the launch replay the record, running only what can differ between blocks (stores,
//! what `%ctaid` and loaded values flow into, and what those read) and checking every guard
//! on such a value against the record; a block whose guards differ runs here from its start.
//!
//! Counting: an instruction counts once per warp with a thread at it, as the interpreter
//! counts a warp's group. Nothing here parses PTX or knows about the warps' scheduling.

mod affine;
mod build;
mod plan;
mod races;
mod replay;

use super::accel::{BlockAccel, BlockEngine, Deferred, Done};
use super::Worker;
use crate::ir::{AtomKind, AtomOp, BlockSlot, Cmp, Inst, IntTy, MemSpace, Op, Slot, NONE};
use crate::mem::Cache;
use crate::sem::compare::cmp_ord;
use crate::sem::{address, atomic, convert, float, int, warp};
use affine::Shape;
pub use plan::{fits_block, plan};

/// The most threads a block has (words of 64 threads: 16).
const WORDS: usize = 16;

/// Block-instructions between checks of the cancel and abort flags.
const CHECK_EVERY: u32 = 4096;

/// A block's threads, one bit each.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Mask<const W: usize>([u64; W]);

impl<const W: usize> Mask<W> {
    fn none() -> Self {
        Mask([0; W])
    }
    fn any(&self) -> bool {
        self.0.iter().any(|&w| w != 0)
    }
    fn and(&self, o: &Self) -> Self {
        Mask(std::array::from_fn(|k| self.0[k] & o.0[k]))
    }
    fn and_not(&self, o: &Self) -> Self {
        Mask(std::array::from_fn(|k| self.0[k] & !o.0[k]))
    }
    fn or(&self, o: &Self) -> Self {
        Mask(std::array::from_fn(|k| self.0[k] | o.0[k]))
    }
    /// Warps (32-thread halves of words) with a thread in the mask.
    #[inline(always)]
    fn warps(&self, nwords: usize) -> u64 {
        self.0[..nwords]
            .iter()
            .map(|&w| (w as u32 != 0) as u64 + ((w >> 32) != 0) as u64)
            .sum()
    }
}

/// The 64 threads of a mask word as lanes of 0 or !0.
#[inline(always)]
fn flags(word: u64) -> [u64; 64] {
    let mut f = [0u64; 64];
    for (j, x) in f.iter_mut().enumerate() {
        *x = ((word >> j) & 1).wrapping_neg();
    }
    f
}

/// The block tier as the core's seam sees it (`accel::BlockEngine`).
pub(crate) const ENGINE: BlockEngine = BlockEngine {
    plan,
    fits: fits_block,
    start: start_tier,
};

/// The tier's state on a worker of a launch that uses it.
fn start_tier<'a>(ctx: &super::Ctx<'a>) -> Box<dyn BlockAccel<'a> + 'a> {
    Box::new(BlockTier::new(ctx.block_replay))
}

/// Why the block tier gave a block up (the core undoes the attempt and the interpreter runs
/// the block: `accel`).
pub(crate) use super::accel::GaveUp as GiveUp;

impl<'a> BlockAccel<'a> for BlockTier<'a> {
    fn run(
        &mut self,
        w: &mut Worker<'a>,
        ctaid: [u32; 3],
        shared_at_start: &[u64],
        deferred: &mut Vec<Deferred<'a>>,
    ) -> Result<Done, GiveUp> {
        // The tier keeps its waiting stores in `stores` (an empty vector here and in
        // `deferred`): the core's vector for the attempt.
        std::mem::swap(&mut self.stores, deferred);
        let r = w.block_tier_attempt(self, ctaid, shared_at_start);
        std::mem::swap(&mut self.stores, deferred);
        r
    }
}

/// One worker's block-tier state, kept from block to block.
#[derive(Default)]
pub struct BlockTier<'a> {
    /// `[slot][thread]`, `stride` lanes per slot (`BlockSlot::Lanes`).
    regs: Vec<u64>,
    stride: usize,
    /// Per slot: the block's value (`BlockSlot::Uniform`), or the base of an affine slot.
    uni: Vec<u64>,
    /// Per slot: the stride of an affine slot (`BlockSlot::Affine`: `uni + ustr * thread`).
    ustr: Vec<u64>,
    /// Per slot: the threads where it holds 1 (`BlockSlot::Pred`).
    preds: Vec<[u64; WORDS]>,
    /// Shared-memory race records (`races`).
    races: races::Records,
    /// Global stores and atomics of the block (where, offset, bytes, value, the atomic's
    /// operation), applied when it ends.
    stores: Vec<Deferred<'a>>,
    /// The last barrier interval's number in the records (`epoch << 16 | thread`).
    epoch: u32,
    cache: Cache<'a>,
    /// Three words of lanes for sources held once per block (`word_ref`).
    splat: Vec<[u64; 64]>,
    /// Per instruction: whether the code from there only exits (`ir::uniform::exits_only`).
    exits: Vec<bool>,
    /// Per instruction: the first branch, barrier or exit at or after it (straight-line code
    /// runs up to there), or the code's length.
    straight: Vec<u32>,
    /// The record of a block and its replays (`replay`).
    replay: replay::Replay,
    /// The last shared access's unit-stride word (`shared_check`), for the record.
    last_unit: Option<usize>,
    /// The last shuffle's shift when it moved lanes down (`block_shfl`), for the record.
    last_shfl: Option<(u8, u8)>,
}

impl BlockTier<'_> {
    /// A worker's tier state; `replay`: blocks may replay a recorded one (`Engines::replay`).
    pub fn new(replay: bool) -> Self {
        BlockTier {
            replay: replay::Replay::new(replay),
            ..Default::default()
        }
    }
}

impl BlockTier<'_> {
    /// Slot `s` of the 64 threads of word `w` (`word_ref`, through the first splat buffer).
    #[inline(always)]
    fn word(&mut self, k: &[BlockSlot], s: Slot, w: usize) -> &[u64; 64] {
        let regs = (&self.uni[..], &self.ustr[..]);
        word_ref(&self.regs, regs, self.stride, k, s, w, &mut self.splat[0])
    }
}

/// The threads an instruction runs for (`act`: its group with the guard applied), the block's
/// live threads not on their way to an exit, and the number of 64-thread words in a block.
struct At<'m, const W: usize> {
    act: &'m Mask<W>,
    staying: &'m Mask<W>,
    nwords: usize,
}

impl<'a> Worker<'a> {
    /// One attempt of the tier at block `ctaid`: a replay of the recorded block where there is
    /// one, else (or when the replay stops) a run from the block's start. Its global stores
    /// and atomics wait in `bt.stores`; the core undoes a `GiveUp` (`accel`).
    fn block_tier_attempt(
        &mut self,
        bt: &mut BlockTier<'a>,
        ctaid: [u32; 3],
        shared_at_start: &[u64],
    ) -> Result<Done, GiveUp> {
        let mut r = Err(GiveUp);
        let mut replayed = false;
        if bt.replay.ready() && self.ctx.nthreads <= 256 {
            r = self.block_replay_run(bt, ctaid);
            bt.replay.replayed(r.is_ok());
            if r.is_ok() {
                replayed = true;
            } else {
                // Nothing of it is visible: the tier runs the block from its start.
                self.shared.copy_from_slice(shared_at_start);
                bt.stores.clear();
            }
        } else if self.ctx.nthreads <= 256 {
            bt.replay.start();
            (bt.last_unit, bt.last_shfl) = (None, None);
        }
        if r.is_err() {
            // It writes registers the record's steps do not: a replay runs every step again.
            bt.replay.warm = false;
            r = self.block_tier_run(bt, ctaid);
            if bt.replay.recording {
                match r {
                    Ok(count) => bt.replay.finish(self.ctx.prog, count),
                    Err(GiveUp) => bt.replay.abandon(),
                }
            }
        }
        r.map(|warp_instructions| Done {
            warp_instructions,
            replayed,
        })
    }

    /// The block's run: its warp-instruction count, or `GiveUp` (inlined into the builds of
    /// `build::block_tier_run`).
    #[inline(always)]
    pub(super) fn run_block_tier(
        &mut self,
        bt: &mut BlockTier<'a>,
        ctaid: [u32; 3],
    ) -> Result<u64, GiveUp> {
        // Masks as wide as the block: copying and comparing them is much of the bookkeeping.
        if self.ctx.nthreads <= 256 {
            self.run_block_tier_w::<4>(bt, ctaid)
        } else {
            self.run_block_tier_w::<WORDS>(bt, ctaid)
        }
    }

    /// `run_block_tier` with masks of `W` 64-thread words.
    #[inline(always)]
    fn run_block_tier_w<const W: usize>(
        &mut self,
        bt: &mut BlockTier<'a>,
        ctaid: [u32; 3],
    ) -> Result<u64, GiveUp> {
        let ctx = self.ctx;
        let prog = ctx.prog;
        let kinds = &prog.block_slots[..];
        let nt = ctx.nthreads as usize;
        let nwords = nt.div_ceil(64);
        let stride = nwords * 64;
        let nslots = prog.nslots as usize;
        if kinds.len() != nslots {
            return Err(GiveUp);
        }
        if bt.stride != stride || bt.regs.len() != nslots * stride {
            // The first block of the launch on this worker: constants and special registers.
            bt.stride = stride;
            bt.regs = vec![0; nslots * stride];
            bt.uni = vec![0; nslots];
            bt.ustr = vec![0; nslots];
            bt.preds = vec![[0; WORDS]; nslots];
            bt.splat = vec![[0; 64]; 3];
            bt.exits = (0..prog.code.len())
                .map(|pc| crate::ir::uniform::exits_only(&prog.code, pc))
                .collect();
            let mut end = prog.code.len() as u32;
            bt.straight = vec![0; prog.code.len()];
            for (pc, i) in prog.code.iter().enumerate().rev() {
                if matches!(i.op, Op::Bra | Op::Bar(_) | Op::Exit | Op::Ret) {
                    end = pc as u32;
                }
                bt.straight[pc] = end;
            }
            self.block_tier_registers(bt);
        }
        self.block_begin(bt, ctaid);
        let mut live = Mask::<W>::none();
        for (w, x) in live.0.iter_mut().enumerate().take(nwords) {
            let n = nt - w * 64;
            *x = if n >= 64 { u64::MAX } else { (1 << n) - 1 };
        }
        // Threads on their way to an exit (a branch to code that only exits) no longer count
        // for uniform instructions, as in the uniformity analysis: `staying` is `live` less
        // them.
        let mut staying = live;
        let mut groups: Vec<(u32, Mask<W>)> = vec![(0, live)];
        let mut at_bar = Mask::<W>::none();
        let mut bar_pc = 0u32;
        bt.epoch += 1;
        let mut epoch = bt.epoch;
        let mut count = 0u64;
        let mut steps = 0u32;
        let code = &prog.code;
        let rec = bt.replay.recording;
        loop {
            // The group at the lowest PC runs; the others wait.
            let Some(gi) = (0..groups.len()).min_by_key(|&g| groups[g].0) else {
                if !at_bar.any() {
                    return Ok(count);
                }
                if at_bar != live {
                    return Err(GiveUp);
                }
                // Every live thread is at the barrier: the next interval.
                groups.push((bar_pc + 1, at_bar));
                at_bar = Mask::none();
                if rec {
                    bt.replay.epoch();
                }
                epoch += 1;
                bt.epoch = epoch;
                if epoch > 0x7FFF {
                    return Err(GiveUp);
                }
                continue;
            };
            let (mut pc, mut m) = groups.swap_remove(gi);
            // Warps with a thread in the group: what each of its instructions counts.
            let mut warps = m.warps(nwords);
            let resched = groups.iter().map(|g| g.0).min().unwrap_or(u32::MAX);
            // A forward branch over straight-line code that part of the group takes: the
            // others run that code while the takers wait here as `(target, threads)`, and
            // rejoin them at the target, as a group waiting there would (no split and merge).
            let mut join: Option<(u32, Mask<W>)> = None;
            loop {
                steps += 1;
                if steps.is_multiple_of(CHECK_EVERY) && self.stop_requested() {
                    return Err(GiveUp);
                }
                let Some(i) = code.get(pc as usize) else {
                    return Err(GiveUp);
                };
                let act = guarded(bt, kinds, i, &m, nwords);
                count += warps;
                if rec {
                    bt.replay.push(pc, &m.0, &act.0, &staying.0);
                }
                match i.op {
                    Op::Bra => {
                        let target = i.imm as u32;
                        if act.any()
                            && i.guard != NONE
                            && bt.exits.get(target as usize) == Some(&true)
                        {
                            staying = staying.and_not(&act);
                        }
                        if act == m {
                            pc = target;
                            if pc >= resched {
                                ready_at(&mut groups, pc, m);
                                break;
                            }
                            continue;
                        }
                        let over_straight = target > pc + 1
                            && target <= resched
                            && bt
                                .straight
                                .get(pc as usize + 1)
                                .is_some_and(|&e| e >= target);
                        if act.any() && over_straight && join.is_none() {
                            join = Some((target, act));
                            m = m.and_not(&act);
                            warps = m.warps(nwords);
                        } else if act.any() {
                            ready_at(&mut groups, target, act);
                            ready_at(&mut groups, pc + 1, m.and_not(&act));
                            break;
                        }
                    }
                    Op::Exit => {
                        live = live.and_not(&act);
                        staying = staying.and_not(&act);
                        m = m.and_not(&act);
                        warps = m.warps(nwords);
                        if !m.any() {
                            break;
                        }
                    }
                    Op::Bar(_) if act.any() => {
                        // Every thread here, and every parked one at this same barrier.
                        if act != m || (at_bar.any() && bar_pc != pc) {
                            return Err(GiveUp);
                        }
                        if m == live && groups.is_empty() {
                            // The whole block arrived together (no one is parked or waits
                            // elsewhere): the next interval starts here, without parking.
                            if rec {
                                bt.replay.epoch();
                            }
                            epoch += 1;
                            bt.epoch = epoch;
                            if epoch > 0x7FFF {
                                return Err(GiveUp);
                            }
                            pc += 1;
                            continue;
                        }
                        at_bar = at_bar.or(&m);
                        bar_pc = pc;
                        break;
                    }
                    Op::Bar(_) => {}
                    _ => {
                        let at = At {
                            act: &act,
                            staying: &staying,
                            nwords,
                        };
                        self.block_op(bt, kinds, i, &at, epoch)?;
                        if rec {
                            bt.replay.found(bt.last_unit.take(), bt.last_shfl.take());
                        }
                    }
                }
                pc += 1;
                if let Some((_, waiting)) = join.filter(|j| j.0 == pc) {
                    m = m.or(&waiting);
                    warps = m.warps(nwords);
                    join = None;
                }
                if pc >= resched {
                    ready_at(&mut groups, pc, m);
                    break;
                }
            }
        }
    }

    /// What each block starts with: its `%ctaid`, the registers it may read before writing
    /// cleared, and race records that fit.
    #[inline(always)]
    fn block_begin(&self, bt: &mut BlockTier<'a>, ctaid: [u32; 3]) {
        let prog = self.ctx.prog;
        let kinds = &prog.block_slots[..];
        for &(s, r) in &prog.sregs {
            if let crate::ir::SReg::Ctaid(k) = r {
                set_all(bt, kinds, s, ctaid[k.min(2) as usize] as u64);
            }
        }
        for &s in &prog.entry_live {
            set_all(bt, kinds, s, 0);
        }
        // Padded by a block's worth of words, so that unit-stride loops may run over whole
        // 64-thread words past the last one a thread touches.
        // The records hold the epochs of earlier blocks, which never match this block's: they
        // are cleared only when the epochs run out (`epoch` is 15 bits).
        let words = (self.ctx.shared_bytes as usize).div_ceil(4) + bt.stride;
        if bt.races.fit(words, bt.epoch > 0x4000) {
            bt.epoch = 0;
        }
    }

    /// Block `ctaid` by replaying the record of an earlier block of the launch
    /// (`block::replay`): its instruction count, or `GiveUp` when a guard differs from the
    /// record's or a check fails (the caller then runs the block in the tier from its start;
    /// nothing of the replay is visible). Inlined into the builds of `build::block_replay_run`.
    #[inline(always)]
    pub(super) fn run_block_replay(
        &mut self,
        bt: &mut BlockTier<'a>,
        ctaid: [u32; 3],
    ) -> Result<u64, GiveUp> {
        let prog = self.ctx.prog;
        let nwords = (self.ctx.nthreads as usize).div_ceil(64);
        if nwords > 4 || prog.block_slots.len() != prog.nslots as usize || bt.regs.is_empty() {
            return Err(GiveUp);
        }
        self.block_begin(bt, ctaid);
        bt.epoch += 1;
        let steps = std::mem::take(&mut bt.replay.steps);
        let cached = std::mem::take(&mut bt.replay.cached);
        let skip: &[bool] = if bt.replay.warm { &cached } else { &[] };
        let r = self.replay_steps(bt, &steps, skip, nwords);
        bt.replay.steps = steps;
        bt.replay.cached = cached;
        // What the cached steps would write is in the registers again (`replay::cached`).
        bt.replay.warm = r.is_ok();
        r.map(|()| bt.replay.count)
    }

    /// `run_block_replay`'s steps, less those that `skip` marks.
    #[inline(always)]
    fn replay_steps(
        &mut self,
        bt: &mut BlockTier<'a>,
        steps: &[replay::Step],
        skip: &[bool],
        nwords: usize,
    ) -> Result<(), GiveUp> {
        let prog = self.ctx.prog;
        let (code, kinds) = (&prog.code, &prog.block_slots[..]);
        for (n, s) in steps.iter().enumerate() {
            if skip.get(n) == Some(&true) {
                continue;
            }
            if s.run == replay::Run::Epoch {
                bt.epoch += 1;
                if bt.epoch > 0x7FFF {
                    return Err(GiveUp);
                }
                continue;
            }
            let i = code.get(s.pc as usize).ok_or(GiveUp)?;
            let act = Mask::<4>(s.act);
            if s.check && guarded(bt, kinds, i, &Mask::<4>(s.m), nwords) != act {
                return Err(GiveUp);
            }
            let staying = Mask::<4>(s.staying);
            let at = At {
                act: &act,
                staying: &staying,
                nwords,
            };
            match s.run {
                replay::Run::Op => {
                    let epoch = bt.epoch;
                    self.block_op(bt, kinds, i, &at, epoch)?
                }
                replay::Run::Shared(unit) if matches!(i.op, Op::Ld { .. }) => {
                    self.shared_load(bt, kinds, i, &at, unit)
                }
                replay::Run::Shared(unit) => self.shared_store(bt, kinds, i, &at, unit),
                replay::Run::ShflDown(sd, kd) => {
                    let (src, d) = (i.r[1] as usize, i.r[0] as usize);
                    shfl_down_rows::<false>(
                        bt,
                        (src, d),
                        &s.act,
                        nwords,
                        (sd as usize, kd as usize),
                    );
                }
                replay::Run::ShflDownAdd(sd, kd, add) => {
                    let d = code.get(add as usize).ok_or(GiveUp)?.r[0] as usize;
                    let sd = (sd as usize, kd as usize);
                    shfl_down_rows::<true>(bt, (i.r[1] as usize, d), &s.act, nwords, sd);
                }
                replay::Run::No | replay::Run::Epoch => {}
            }
        }
        Ok(())
    }

    /// Constants and special registers (`%ctaid` is set per block), copied from the warps'
    /// register files, which `Worker::new` filled with them and no instruction writes.
    fn block_tier_registers(&self, bt: &mut BlockTier<'a>) {
        let prog = self.ctx.prog;
        let stride = bt.stride;
        let nt = self.ctx.nthreads as usize;
        let slots = prog
            .consts
            .iter()
            .map(|c| c.0)
            .chain(prog.sregs.iter().map(|r| r.0));
        for s in slots {
            let s = s as usize;
            match prog.block_slots[s] {
                BlockSlot::Uniform => {
                    bt.uni[s] = self.warps[0].regs[s][0];
                    continue;
                }
                // `%tid.x` (in blocks of one dimension: `fits_block`).
                BlockSlot::Affine { .. } => {
                    (bt.uni[s], bt.ustr[s]) = (0, 1);
                    continue;
                }
                _ => {}
            }
            let row = &mut bt.regs[s * stride..][..nt];
            for (t, x) in row.iter_mut().enumerate() {
                *x = self.warps[t / 32].regs[s][t % 32];
            }
        }
    }

    fn stop_requested(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        self.ctx.abort.load(Relaxed) || self.ctx.cancel.is_some_and(|f| f.load(Relaxed))
    }

    /// One instruction other than control flow for the threads `at.act`.
    #[inline(always)]
    fn block_op<const W: usize>(
        &mut self,
        bt: &mut BlockTier<'a>,
        k: &[BlockSlot],
        i: &Inst,
        at: &At<W>,
        epoch: u32,
    ) -> Result<(), GiveUp> {
        let r = i.r;
        if let (true, Some(&BlockSlot::Affine { local })) =
            (affine::affine_op(i), k.get(r[0] as usize))
        {
            return affine_write(bt, k, i, at, local);
        }
        // Closures that use an instruction's type take it by value (`move`): taken by
        // reference, the build read it from memory in every lane and left the loop scalar
        // (`shr`'s was a tenth of reduceWarpShuffle's time). The common types are passed as
        // constants, so that `sem` picks their fast form at compile time.
        match i.op {
            Op::Nop => Ok(()),
            Op::Mov => lanes1(bt, k, at, r, |a| a),
            Op::Add => lanes2(bt, k, at, r, int::add),
            Op::Sub => lanes2(bt, k, at, r, int::sub),
            Op::MulLo => lanes2(bt, k, at, r, int::mul_lo),
            Op::MadLo => lanes3(bt, k, at, r, int::mad_lo),
            Op::And => lanes2(bt, k, at, r, |a, b| a & b),
            Op::Or => lanes2(bt, k, at, r, |a, b| a | b),
            Op::Xor => lanes2(bt, k, at, r, |a, b| a ^ b),
            Op::Not => lanes1(bt, k, at, r, crate::sem::bits::not),
            Op::Neg => lanes1(bt, k, at, r, int::neg),
            Op::Selp => lanes3(bt, k, at, r, int::selp),
            Op::Shl { bits } => lanes2(bt, k, at, r, move |a, b| crate::sem::bits::shl(a, b, bits)),
            Op::Shr { ty } => match (ty.bits, ty.signed) {
                (32, false) => lanes2(bt, k, at, r, |a, b| crate::sem::bits::shr(a, b, IntTy::U32)),
                (32, true) => lanes2(bt, k, at, r, |a, b| crate::sem::bits::shr(a, b, IntTy::S32)),
                _ => lanes2(bt, k, at, r, move |a, b| crate::sem::bits::shr(a, b, ty)),
            },
            Op::Min(t) => lanes2(bt, k, at, r, move |a, b| int::min(a, b, t)),
            Op::Max(t) => lanes2(bt, k, at, r, move |a, b| int::max(a, b, t)),
            // 32-bit operands only (`plan`).
            Op::MulWide(t) if t.signed => {
                lanes2(bt, k, at, r, |a, b| int::mul_wide(a, b, IntTy::S32))
            }
            Op::MulWide(_) => lanes2(bt, k, at, r, |a, b| int::mul_wide(a, b, IntTy::U32)),
            Op::FAdd32 => lanes2(bt, k, at, r, float::add_f32),
            Op::FSub32 => lanes2(bt, k, at, r, float::sub_f32),
            Op::FMul32 => lanes2(bt, k, at, r, float::mul_f32),
            Op::FFma32 => lanes3(bt, k, at, r, float::fma_f32),
            Op::SetpI { cmp, ty, .. } => {
                // One lane loop per comparison, so that each vectorises.
                let b = ty.bits;
                let (step, eq, ne) = (
                    Some((ty, Shape::Step)),
                    Some((ty, Shape::Eq)),
                    Some((ty, Shape::Ne)),
                );
                macro_rules! setp {
                    ($ext:expr) => {
                        match cmp {
                            Cmp::Lt => setp(bt, k, at, r, step, move |x, y| $ext(x) < $ext(y)),
                            Cmp::Le => setp(bt, k, at, r, step, move |x, y| $ext(x) <= $ext(y)),
                            Cmp::Gt => setp(bt, k, at, r, step, move |x, y| $ext(x) > $ext(y)),
                            Cmp::Ge => setp(bt, k, at, r, step, move |x, y| $ext(x) >= $ext(y)),
                            Cmp::Eq => setp(bt, k, at, r, eq, move |x, y| $ext(x) == $ext(y)),
                            Cmp::Ne => setp(bt, k, at, r, ne, move |x, y| $ext(x) != $ext(y)),
                            c => setp(bt, k, at, r, None, move |x, y| {
                                cmp_ord(c, Some($ext(x).cmp(&$ext(y))))
                            }),
                        }
                    };
                }
                if ty.signed {
                    setp!(move |v| int::sext(v, b))
                } else {
                    setp!(move |v| int::zext(v, b))
                }
            }
            Op::Cvta { to, space } => {
                if to {
                    lanes1(bt, k, at, r, move |a| address::cvta(a, space, true))
                } else {
                    lanes1(bt, k, at, r, move |a| address::cvta(a, space, false))
                }
            }
            Op::LdK { size, n, sext } => {
                let sz = size as usize;
                for (j, &slot) in r[..n as usize].iter().enumerate() {
                    let off = i.imm as usize + j * sz;
                    let mut b = [0u8; 8];
                    b[..sz].copy_from_slice(&self.ctx.params[off..off + sz]);
                    let v = u64::from_le_bytes(b);
                    let v = if sext {
                        int::sext(v, size * 8) as u64
                    } else {
                        v
                    };
                    lanes1(bt, k, at, [slot, NONE, NONE, NONE, NONE, NONE], move |_| v)?;
                }
                Ok(())
            }
            Op::Ld {
                space: MemSpace::Shared,
                ..
            } => {
                let unit = self.shared_check(bt, k, i, at, epoch, false)?;
                bt.last_unit = unit;
                self.shared_load(bt, k, i, at, unit);
                Ok(())
            }
            Op::St {
                space: MemSpace::Shared,
                ..
            } => {
                let unit = self.shared_check(bt, k, i, at, epoch, true)?;
                bt.last_unit = unit;
                self.shared_store(bt, k, i, at, unit);
                Ok(())
            }
            Op::Ld {
                space: MemSpace::Global,
                size,
                n,
                sext,
            } => {
                if !bt.stores.is_empty() {
                    // It might read the block's own buffered stores.
                    return Err(GiveUp);
                }
                let (sz, stride) = (size as usize, bt.stride);
                let total = (sz * n as usize) as u64;
                let g = self.ctx.global;
                let (base, imm) = (r[4], i.imm as u64);
                if n == 1 && self.global_load_run(bt, k, i, at, sz, sext) {
                    return Ok(());
                }
                let mut bad = false;
                for_lanes(at.act, at.nwords, |t| {
                    let a = val(bt, k, base, t).wrapping_add(imm);
                    match g.translate(&mut bt.cache, a, total) {
                        Some(p) if a.is_multiple_of(total.min(16)) => {
                            for (j, &slot) in r[..n as usize].iter().enumerate() {
                                let v = p.load(j * sz, sz);
                                let v = if sext {
                                    int::sext(v, size * 8) as u64
                                } else {
                                    v
                                };
                                bt.regs[slot as usize * stride + t] = v;
                            }
                        }
                        _ => bad = true,
                    }
                });
                if bad {
                    Err(GiveUp)
                } else {
                    Ok(())
                }
            }
            Op::St {
                space: MemSpace::Global,
                size,
                n,
            } => {
                let sz = size as usize;
                let total = (sz * n as usize) as u64;
                let g = self.ctx.global;
                let (base, imm) = (r[4], i.imm as u64);
                let mut bad = false;
                let mut stores = std::mem::take(&mut bt.stores);
                let mut cache = std::mem::take(&mut bt.cache);
                for_lanes(at.act, at.nwords, |t| {
                    let a = val(bt, k, base, t).wrapping_add(imm);
                    match g.translate(&mut cache, a, total) {
                        Some(p) if a.is_multiple_of(total.min(16)) => {
                            for (j, &slot) in r[..n as usize].iter().enumerate() {
                                stores.push((p, j * sz, sz, val(bt, k, slot, t), None));
                            }
                        }
                        _ => bad = true,
                    }
                });
                bt.stores = stores;
                bt.cache = cache;
                if bad {
                    Err(GiveUp)
                } else {
                    Ok(())
                }
            }
            Op::Shfl(mode) => self.block_shfl(bt, k, i, at, mode),
            Op::CvtII {
                from,
                to,
                sat: false,
            } => match (from.bits, from.signed, to.bits) {
                (32, true, 64) => lanes1(bt, k, at, r, |a| {
                    convert::cvt_ii(a, IntTy::S32, IntTy::S64, false)
                }),
                (32, false, 64) => lanes1(bt, k, at, r, |a| {
                    convert::cvt_ii(a, IntTy::U32, IntTy::U64, false)
                }),
                _ => lanes1(bt, k, at, r, move |a| convert::cvt_ii(a, from, to, false)),
            },
            Op::Atom {
                space: MemSpace::Shared,
                op,
                kind,
                ..
            } => self.shared_atomic(bt, k, i, at, epoch, (op, kind)),
            Op::Atom {
                space: MemSpace::Global,
                op,
                kind,
                ..
            } => {
                // Deferred with the block's stores (its old value is unread: `plan`).
                if !matches!(k.get(r[0] as usize), None | Some(BlockSlot::Unread)) {
                    return Err(GiveUp);
                }
                let g = self.ctx.global;
                let imm = i.imm as u64;
                for w in 0..at.nwords {
                    let word = at.act.0[w];
                    if word == 0 {
                        continue;
                    }
                    let (a, b) = (*bt.word(k, r[1], w), *bt.word(k, r[2], w));
                    let mut bad = false;
                    for_word(word, |j| {
                        let a = a[j].wrapping_add(imm);
                        match g.translate(&mut bt.cache, a, 4) {
                            Some(p) if a.is_multiple_of(4) => {
                                bt.stores.push((p, 0, 4, b[j], Some((op, kind))));
                            }
                            _ => bad = true,
                        }
                    });
                    if bad {
                        return Err(GiveUp);
                    }
                }
                Ok(())
            }
            _ => Err(GiveUp),
        }
    }

    /// A 32-bit shared atomic (`tier_atomic`) for the threads `at.act`, in thread order: bounds
    /// and alignment checked, and (checker on) its race records, in which atomic updates race
    /// with plain accesses of other threads in the interval but not with each other.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn shared_atomic<const W: usize>(
        &mut self,
        bt: &mut BlockTier<'a>,
        k: &[BlockSlot],
        i: &Inst,
        at: &At<W>,
        epoch: u32,
        (op, kind): (AtomOp, AtomKind),
    ) -> Result<(), GiveUp> {
        let r = i.r;
        let d = match k.get(r[0] as usize) {
            None | Some(BlockSlot::Unread) => None,
            Some(BlockSlot::Lanes) => Some(r[0] as usize * bt.stride),
            Some(_) => return Err(GiveUp),
        };
        let (len, check) = (self.ctx.shared_bytes as usize, self.ctx.check);
        if check {
            bt.races.records_from_log(epoch);
        }
        let imm = i.imm as u64;
        let sh: &mut [u32] = bytemuck::cast_slice_mut(&mut self.shared);
        for w in 0..at.nwords {
            let word = at.act.0[w];
            if word == 0 {
                continue;
            }
            let (a, b) = (*bt.word(k, r[1], w), *bt.word(k, r[2], w));
            let mut bad = false;
            for_word(word, |j| {
                let off = a[j].wrapping_add(imm) as u32 as usize;
                let t = w * 64 + j;
                if off + 4 > len
                    || off & 3 != 0
                    || (check && bt.races.atomic_lane(off >> 2, t, epoch))
                {
                    bad = true;
                    return;
                }
                let old = sh[off >> 2];
                sh[off >> 2] = atomic::atom_apply(op, 32, kind, old as u64, b[j], 0) as u32;
                if let Some(d) = d {
                    bt.regs[d + t] = old as u64;
                }
            });
            if bad {
                return Err(GiveUp);
            }
        }
        Ok(())
    }

    /// A 32-bit shared load for the threads `at.act`, its checks passed (`shared_check`);
    /// `unit`: thread `t` reads word `c + t`.
    #[inline(always)]
    fn shared_load<const W: usize>(
        &self,
        bt: &mut BlockTier<'a>,
        k: &[BlockSlot],
        i: &Inst,
        at: &At<W>,
        unit: Option<usize>,
    ) {
        let (r, sext) = match i.op {
            Op::Ld { sext, .. } => (i.r, sext),
            _ => return,
        };
        let sh: &[u32] = bytemuck::cast_slice(&self.shared);
        let d = r[0] as usize * bt.stride;
        if let (Some(c), false) = (unit, sext) {
            // Thread t reads word c + t: whole 64-thread words, branch-free where they
            // lie inside shared memory (only active lanes are written).
            for w in 0..at.nwords {
                let word = at.act.0[w];
                if word == 0 {
                    continue;
                }
                let lo = c + w * 64;
                let dv = &mut bt.regs[d + w * 64..d + w * 64 + 64];
                if let Some(src) = sh.get(lo..lo + 64) {
                    let on = flags(word);
                    for j in 0..64 {
                        dv[j] = (src[j] as u64 & on[j]) | (dv[j] & !on[j]);
                    }
                } else {
                    for_word(word, |j| dv[j] = sh[lo + j] as u64);
                }
            }
            return;
        }
        let (base, imm) = (r[4], i.imm as u64);
        for_lanes(at.act, at.nwords, |t| {
            let off = val(bt, k, base, t).wrapping_add(imm) as u32 as usize;
            let v = sh[off >> 2] as u64;
            bt.regs[d + t] = if sext { int::sext(v, 32) as u64 } else { v };
        });
    }

    /// A 32-bit shared store for the threads `at.act`, as `shared_load`.
    #[inline(always)]
    fn shared_store<const W: usize>(
        &mut self,
        bt: &mut BlockTier<'a>,
        k: &[BlockSlot],
        i: &Inst,
        at: &At<W>,
        unit: Option<usize>,
    ) {
        let r = i.r;
        let sh: &mut [u32] = bytemuck::cast_slice_mut(&mut self.shared);
        if let Some(c) = unit {
            // Thread t writes word c + t, as the load above.
            for w in 0..at.nwords {
                let word = at.act.0[w];
                if word == 0 {
                    continue;
                }
                let v = bt.word(k, r[0], w);
                let lo = c + w * 64;
                if let Some(dst) = sh.get_mut(lo..lo + 64) {
                    let on = flags32(word);
                    for j in 0..64 {
                        dst[j] = (v[j] as u32 & on[j]) | (dst[j] & !on[j]);
                    }
                } else {
                    for_word(word, |j| sh[lo + j] = v[j] as u32);
                }
            }
            return;
        }
        let (base, imm) = (r[4], i.imm as u64);
        for_lanes(at.act, at.nwords, |t| {
            let off = val(bt, k, base, t).wrapping_add(imm) as u32 as usize;
            sh[off >> 2] = val(bt, k, r[0], t) as u32;
        });
    }

    /// `shfl.sync` by whole warps with block-uniform operands (the reductions'
    /// `__shfl_down_sync(FULL, v, offset)`), a warp at a time as the interpreter's
    /// `sem::warp::shfl_uniform` does it; anything else (a warp with threads not at it, a
    /// member mask other than all 32 lanes, operands that differ between threads, segments)
    /// gives the block up, so that the interpreter judges and reports it.
    #[inline(always)]
    fn block_shfl<const W: usize>(
        &self,
        bt: &mut BlockTier<'a>,
        k: &[BlockSlot],
        i: &Inst,
        at: &At<W>,
        mode: crate::ir::ShflMode,
    ) -> Result<(), GiveUp> {
        let r = i.r;
        let uniform = |s: Slot| matches!(k.get(s as usize), Some(BlockSlot::Uniform));
        if !(uniform(r[2]) && uniform(r[3]) && uniform(r[4])) {
            return Err(GiveUp);
        }
        let (b, c, members) = (
            bt.uni[r[2] as usize],
            bt.uni[r[3] as usize],
            bt.uni[r[4] as usize],
        );
        let dest_ok = matches!(
            k.get(r[0] as usize),
            Some(BlockSlot::Lanes | BlockSlot::Unread)
        );
        if members as u32 != u32::MAX || !dest_ok {
            return Err(GiveUp);
        }
        // Every warp reads the same lanes of itself: the permutation (and which lanes were in
        // range) is the interpreter's shuffle of the lane numbers.
        let lanes: [u64; 32] = std::array::from_fn(|l| l as u64);
        let Some((perm, okm)) = warp::shfl_uniform(mode, &lanes, b, c) else {
            return Err(GiveUp);
        };
        // `__shfl_down_sync`'s permutation: the first `kd` lanes read `sd` lanes up, the others
        // themselves; then a word moves as two runs of lanes, not a gather.
        let sd = perm[0] as usize & 31;
        let mut kd = 0;
        while kd < 32 && perm[kd] as usize == kd + sd {
            kd += 1;
        }
        let down = sd > 0 && (kd..32).all(|l| perm[l] as usize == l);
        let (s, d) = (bt.stride, r[0] as usize);
        let src = r[1] as usize;
        let lanes = |x: usize| matches!(k.get(x), Some(BlockSlot::Lanes));
        bt.last_shfl = (down && lanes(src) && lanes(d)).then_some((sd as u8, kd as u8));
        for w in 0..at.nwords {
            let word = at.act.0[w];
            for half in 0..2 {
                match (word >> (32 * half)) as u32 {
                    0 => continue,
                    u32::MAX => {}
                    _ => return Err(GiveUp),
                }
                let lo = w * 64 + half * 32;
                let lanes_src = matches!(k.get(src), Some(BlockSlot::Lanes));
                if down && lanes_src {
                    // Two runs of lanes (`copy_within` is a `memmove`: right when the
                    // destination is the source too).
                    let (from, to) = (src * s + lo, d * s + lo);
                    bt.regs.copy_within(from + sd..from + sd + kd, to);
                    if from != to {
                        bt.regs.copy_within(from + kd..from + 32, to + kd);
                    }
                } else {
                    let mut a = [0u64; 32];
                    if lanes_src {
                        a.copy_from_slice(&bt.regs[src * s + lo..][..32]);
                    } else {
                        for (l, x) in a.iter_mut().enumerate() {
                            *x = val(bt, k, r[1], lo + l);
                        }
                    }
                    let out = &mut bt.regs[d * s + lo..][..32];
                    for (l, x) in out.iter_mut().enumerate() {
                        *x = a[perm[l] as usize & 31];
                    }
                }
                if r[5] != NONE {
                    let p = r[5] as usize;
                    match k.get(p) {
                        Some(BlockSlot::Lanes) => {
                            for (l, x) in bt.regs[p * s + lo..][..32].iter_mut().enumerate() {
                                *x = ((okm >> l) & 1) as u64;
                            }
                        }
                        Some(BlockSlot::Unread) => {}
                        Some(BlockSlot::Pred) => {
                            let shift = 32 * half;
                            let q = &mut bt.preds[p][w];
                            *q = (*q & !(0xFFFF_FFFFu64 << shift)) | ((okm as u64) << shift);
                        }
                        _ => return Err(GiveUp),
                    }
                }
            }
        }
        Ok(())
    }

    /// A global load of one `sz`-byte value per thread whose addresses turn out to be
    /// consecutive (thread `t` at `a0 + (t - t0) * sz`, `t0` the first active thread), all in
    /// one allocation and aligned: one bounds check and whole 64-thread words; false (nothing
    /// done) otherwise.
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // lane loops index several arrays by lane
    fn global_load_run<const W: usize>(
        &self,
        bt: &mut BlockTier<'a>,
        k: &[BlockSlot],
        i: &Inst,
        at: &At<W>,
        sz: usize,
        sext: bool,
    ) -> bool {
        let (act, nwords) = (at.act, at.nwords);
        let (base, imm) = (i.r[4], i.imm as u64);
        let Some((t0, t_hi)) = span(&act.0[..nwords]) else {
            return true;
        };
        let (first, last) = (t0 / 64, t_hi / 64);
        let a0 = val(bt, k, base, t0).wrapping_add(imm);
        let mut differ = 0u64;
        // An affine address is consecutive by its stride.
        let affine = matches!(k.get(base as usize), Some(BlockSlot::Affine { .. }));
        if affine && bt.ustr[base as usize] != sz as u64 {
            return false;
        }
        for w in first..=last {
            let word = act.0[w];
            if word == 0 || affine {
                continue;
            }
            let a = bt.word(k, base, w);
            let on = flags(word);
            for j in 0..64 {
                let want = a0.wrapping_add(((w * 64 + j).wrapping_sub(t0) * sz) as u64);
                differ |= on[j] & (a[j].wrapping_add(imm) ^ want);
            }
        }
        if differ != 0 {
            return false;
        }
        let span = ((t_hi - t0 + 1) * sz) as u64;
        let Some(p) = self.ctx.global.translate(&mut bt.cache, a0, span) else {
            return false;
        };
        let d = i.r[0] as usize * bt.stride;
        for w in first..=last {
            let word = act.0[w];
            if word == 0 {
                continue;
            }
            // The threads of this word from t0 to t_hi (those between them that are inactive
            // load too, harmlessly, and are not written).
            let lo = (w * 64).max(t0);
            let hi = (w * 64 + 64).min(t_hi + 1);
            let mut v = [0u64; 64];
            if !p.load_run((lo - t0) * sz, sz, &mut v[lo - w * 64..hi - w * 64]) {
                return false;
            }
            if sext {
                for x in &mut v {
                    *x = int::sext(*x, sz as u8 * 8) as u64;
                }
            }
            let on = flags(word);
            let dv = &mut bt.regs[d + w * 64..d + w * 64 + 64];
            for j in 0..64 {
                dv[j] = (v[j] & on[j]) | (dv[j] & !on[j]);
            }
        }
        true
    }

    /// Bounds, alignment and races of a 32-bit shared access by the threads `at.act`; the
    /// race records are updated (checker on only). Returns the first word when the access has
    /// unit stride (thread `t` at word `c + t`, found at run time): then the records are
    /// checked in branch-free loops over whole 64-thread words, and the caller moves the data
    /// so too.
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // lane loops index several arrays by lane
    fn shared_check<const W: usize>(
        &self,
        bt: &mut BlockTier<'a>,
        k: &[BlockSlot],
        i: &Inst,
        at: &At<W>,
        epoch: u32,
        write: bool,
    ) -> Result<Option<usize>, GiveUp> {
        let (base, imm) = (i.r[4], i.imm as u64);
        let (act, nwords) = (at.act, at.nwords);
        // Unit stride?
        let t0 = span(&act.0[..nwords]).map_or(0, |s| s.0);
        let o0 = val(bt, k, base, t0).wrapping_add(imm) as u32 as usize;
        let mut unit = o0 & 3 == 0 && o0 / 4 >= t0;
        let c = (o0 / 4).wrapping_sub(t0);
        let mut last = 0;
        // An affine address has unit stride by its stride (32-bit addresses).
        let affine = match k.get(base as usize) {
            Some(BlockSlot::Affine { .. }) => Some(bt.ustr[base as usize] as u32),
            _ => None,
        };
        for w in 0..nwords {
            let word = act.0[w];
            if word == 0 || !unit {
                continue;
            }
            last = w;
            if let Some(st) = affine {
                unit &= st == 4;
                continue;
            }
            let a = bt.word(k, base, w);
            let on = flags(word);
            let mut differ = 0u64;
            for j in 0..64 {
                let want = ((c + w * 64 + j) * 4) as u64;
                differ |= on[j] & ((a[j].wrapping_add(imm) & 0xFFFF_FFFF) ^ want);
            }
            unit &= differ == 0;
        }
        let BlockTier {
            races,
            regs,
            uni,
            ustr,
            stride,
            ..
        } = bt;
        let addr = |t| val_in(regs, (uni, ustr), *stride, k, base, t);
        let unit = (unit, c, last);
        self.shared_records(races, *stride, addr, i, at, epoch, write, unit)
    }

    /// `shared_check`'s checks in `races`, with `stride` lanes a slot and `addr(t)` thread
    /// `t`'s address register.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn shared_records<const W: usize>(
        &self,
        races: &mut races::Records,
        stride: usize,
        addr: impl Fn(usize) -> u64,
        i: &Inst,
        at: &At<W>,
        epoch: u32,
        write: bool,
        (unit, c, last): (bool, usize, usize),
    ) -> Result<Option<usize>, GiveUp> {
        let len = self.ctx.shared_bytes as usize;
        let imm = i.imm as u64;
        let check = self.ctx.check;
        let (act, nwords) = (at.act, at.nwords);
        // Whole words of records must exist for the lanes the loops touch.
        if unit && (c + (last + 1) * 64) * 4 <= len + stride * 4 {
            let t_hi = last * 64 + 63 - act.0[last].leading_zeros() as usize;
            if (c + t_hi + 1) * 4 > len {
                return Err(GiveUp);
            }
            if check {
                races.unit(c, &act.0[..nwords], epoch, write)?;
            }
            return Ok(Some(c));
        }
        if check {
            races.records_from_log(epoch);
        }
        let mut bad = false;
        for_lanes(act, nwords, |t| {
            let off = addr(t).wrapping_add(imm) as u32 as usize;
            if off + 4 > len || off & 3 != 0 {
                bad = true;
                return;
            }
            if check {
                bad |= races.lane(off >> 2, t, epoch, write);
            }
        });
        if bad {
            Err(GiveUp)
        } else {
            Ok(None)
        }
    }
}

/// A replayed `shfl.sync.down` by whole warps (`replay::Run::ShflDown`): in each 32-lane group
/// of `act` (whole groups, as recorded), lanes below `kd` read `sd` lanes up, the others
/// themselves (`block_shfl`'s `down`), from lanes `src` into lanes `d`. Copies of a fixed
/// length for the reductions' shifts, so that they are moves and not `memmove` calls. With
/// `ADD` (`replay::Run::ShflDownAdd`), `d` gets each lane's `src` plus what it read, as the
/// tier's `add` computes (wrapping `u64`).
#[inline(always)]
fn shfl_down_rows<const ADD: bool>(
    bt: &mut BlockTier,
    (src, d): (usize, usize),
    act: &[u64; 4],
    nwords: usize,
    (sd, kd): (usize, usize),
) {
    #[inline(always)]
    fn shift<const S: usize, const ADD: bool>(a: &[u64; 32], out: &mut [u64]) {
        if ADD {
            for l in 0..32 - S {
                out[l] = a[l].wrapping_add(a[l + S]);
            }
            for l in 32 - S..32 {
                out[l] = a[l].wrapping_add(a[l]);
            }
        } else {
            out[..32 - S].copy_from_slice(&a[S..]);
            out[32 - S..32].copy_from_slice(&a[32 - S..]);
        }
    }
    let s = bt.stride;
    for (w, &word) in act.iter().enumerate().take(nwords) {
        for half in 0..2 {
            if (word >> (32 * half)) as u32 == 0 {
                continue;
            }
            let lo = w * 64 + half * 32;
            let mut a = [0u64; 32];
            a.copy_from_slice(&bt.regs[src * s + lo..][..32]);
            let out = &mut bt.regs[d * s + lo..][..32];
            match (sd, kd) {
                (16, 16) => shift::<16, ADD>(&a, out),
                (8, 24) => shift::<8, ADD>(&a, out),
                (4, 28) => shift::<4, ADD>(&a, out),
                (2, 30) => shift::<2, ADD>(&a, out),
                (1, 31) => shift::<1, ADD>(&a, out),
                _ => {
                    for (l, x) in out.iter_mut().enumerate() {
                        let v = a[if l < kd { l + sd } else { l }];
                        *x = if ADD { a[l].wrapping_add(v) } else { v };
                    }
                }
            }
        }
    }
}

/// The threads of `m` whose guard lets `i` run.
#[inline(always)]
fn guarded<const W: usize>(
    bt: &BlockTier,
    k: &[BlockSlot],
    i: &Inst,
    m: &Mask<W>,
    nwords: usize,
) -> Mask<W> {
    let g = i.guard as usize;
    if i.guard == NONE {
        return *m;
    }
    match k[g] {
        BlockSlot::Uniform => {
            if (bt.uni[g] & 1 != 0) != i.guard_neg {
                *m
            } else {
                Mask::none()
            }
        }
        BlockSlot::Pred if i.guard_neg => m.and_not(&pred_mask(&bt.preds[g])),
        BlockSlot::Pred => m.and(&pred_mask(&bt.preds[g])),
        BlockSlot::Lanes | BlockSlot::Unread | BlockSlot::Affine { .. } => {
            let mut p = Mask::none();
            let mut splat = [0; 64];
            for w in 0..nwords {
                if m.0[w] == 0 {
                    continue;
                }
                let regs = (&bt.uni[..], &bt.ustr[..]);
                let row = word_ref(&bt.regs, regs, bt.stride, k, i.guard, w, &mut splat);
                let mut bits = 0u64;
                for (j, x) in row.iter().enumerate() {
                    bits |= (x & 1) << j;
                }
                p.0[w] = m.0[w] & if i.guard_neg { !bits } else { bits };
            }
            p
        }
    }
}

/// A predicate's first `W` words as a mask.
#[inline(always)]
fn pred_mask<const W: usize>(p: &[u64; WORDS]) -> Mask<W> {
    Mask(std::array::from_fn(|w| p[w]))
}

/// Slot `s` holds `v` in every thread (a `NONE` slot: nothing).
fn set_all(bt: &mut BlockTier, k: &[BlockSlot], s: Slot, v: u64) {
    let su = s as usize;
    match k.get(su) {
        Some(BlockSlot::Uniform) => bt.uni[su] = v,
        Some(BlockSlot::Affine { .. }) => (bt.uni[su], bt.ustr[su]) = (v, 0),
        Some(BlockSlot::Pred) => {
            bt.preds[su] = [(v & 1).wrapping_neg(); WORDS];
        }
        Some(BlockSlot::Lanes) => bt.regs[su * bt.stride..][..bt.stride].fill(v),
        Some(BlockSlot::Unread) => {}
        None => {}
    }
}

/// Slot `s` as `(base, stride)` when the block holds it once (`NONE` as 0, a uniform slot with
/// stride 0, an affine one); `None` for lanes, masks and unread slots.
#[inline(always)]
fn held(bt: &BlockTier, k: &[BlockSlot], s: Slot) -> Option<(u64, u64)> {
    let su = s as usize;
    match k.get(su) {
        None => Some((0, 0)),
        Some(BlockSlot::Uniform) => Some((bt.uni[su], 0)),
        Some(BlockSlot::Affine { .. }) => Some((bt.uni[su], bt.ustr[su])),
        Some(_) => None,
    }
}

/// Slot `s` of thread `t` (`NONE`: 0).
#[inline(always)]
fn val(bt: &BlockTier, k: &[BlockSlot], s: Slot, t: usize) -> u64 {
    val_in(&bt.regs, (&bt.uni, &bt.ustr), bt.stride, k, s, t)
}

/// `val` from the lanes `regs` (`stride` per slot), uniform values and affine strides.
#[inline(always)]
fn val_in(
    regs: &[u64],
    (uni, ustr): (&[u64], &[u64]),
    stride: usize,
    k: &[BlockSlot],
    s: Slot,
    t: usize,
) -> u64 {
    match k.get(s as usize) {
        Some(BlockSlot::Uniform) => uni[s as usize],
        Some(BlockSlot::Affine { .. }) => {
            let s = s as usize;
            uni[s].wrapping_add(ustr[s].wrapping_mul(t as u64))
        }
        Some(_) => regs[s as usize * stride + t],
        None => 0,
    }
}

/// Slot `s` of the 64 threads of word `w`, from the lanes `regs` (`stride` per slot) and the
/// uniform values and affine strides `(uni, ustr)`: the lanes in place, or (a uniform or
/// affine slot, or `NONE` as 0) `splat` filled with its values. Borrowed, not copied: copies
/// of whole words were a fifth of the tier's time.
#[inline(always)]
fn word_ref<'x>(
    regs: &'x [u64],
    (uni, ustr): (&[u64], &[u64]),
    stride: usize,
    k: &[BlockSlot],
    s: Slot,
    w: usize,
    splat: &'x mut [u64; 64],
) -> &'x [u64; 64] {
    match k.get(s as usize) {
        Some(BlockSlot::Uniform) => {
            *splat = [uni[s as usize]; 64];
            splat
        }
        Some(BlockSlot::Affine { .. }) => {
            affine::fill(splat, (uni[s as usize], ustr[s as usize]), w);
            splat
        }
        Some(_) => {
            let a = s as usize * stride + w * 64;
            regs[a..a + 64].try_into().unwrap_or(splat)
        }
        None => {
            *splat = [0; 64];
            splat
        }
    }
}

/// The 64 threads of a mask word as `u32` lanes of 0 or !0.
#[inline(always)]
fn flags32(word: u64) -> [u32; 64] {
    let mut f = [0u32; 64];
    for (j, x) in f.iter_mut().enumerate() {
        *x = ((word >> j) as u32 & 1).wrapping_neg();
    }
    f
}

/// Add the threads `m` at `pc` to the ready groups.
#[inline(always)]
fn ready_at<const W: usize>(groups: &mut Vec<(u32, Mask<W>)>, pc: u32, m: Mask<W>) {
    match groups.iter_mut().find(|(p, _)| *p == pc) {
        Some((_, g)) => *g = g.or(&m),
        None => groups.push((pc, m)),
    }
}

/// `f(t)` for each thread `t` of `m`.
#[inline(always)]
fn for_lanes<const W: usize>(m: &Mask<W>, nwords: usize, mut f: impl FnMut(usize)) {
    for w in 0..nwords {
        for_word(m.0[w], |j| f(w * 64 + j));
    }
}

/// `f(j)` for each bit `j` set in `word`.
#[inline(always)]
fn for_word(mut word: u64, mut f: impl FnMut(usize)) {
    while word != 0 {
        let j = word.trailing_zeros() as usize;
        word &= word - 1;
        f(j);
    }
}

/// An instruction whose destination is block-uniform: computed once, when every live thread
/// not on its way to an exit runs it (`BlockSlot::Uniform`'s promise); otherwise the block is
/// given up.
#[inline(always)]
fn scalar<const W: usize>(
    bt: &mut BlockTier,
    at: &At<W>,
    f: impl FnOnce(&mut [u64]),
) -> Result<(), GiveUp> {
    if !at.act.any() {
        return Ok(());
    }
    if at.act != at.staying {
        return Err(GiveUp);
    }
    f(&mut bt.uni);
    Ok(())
}

/// `r[0][t] = f(src, t)` for the threads of `at.act`, where `src[n][t]` is `r[n + 1][t]`, a
/// 64-thread word at a time, the sources borrowed in place (a source slot `NONE` reads as 0;
/// one that is the destination is copied first). `f` indexes the sources itself: a loop that
/// builds an array per lane (`std::array::from_fn`) does not vectorise. A uniform destination
/// is computed by the callers (`lanes1` …) with `scalar`.
#[inline(always)]
fn lanes<const N: usize, const W: usize>(
    bt: &mut BlockTier,
    k: &[BlockSlot],
    at: &At<W>,
    r: [u32; 6],
    f: impl Fn(&[&[u64; 64]; N], usize) -> u64,
) -> Result<(), GiveUp> {
    let (stride, d) = (bt.stride, r[0] as usize);
    let BlockTier {
        regs,
        uni,
        ustr,
        splat,
        ..
    } = bt;
    if regs.len() < (d + 1) * stride || splat.len() < N {
        return Err(GiveUp);
    }
    // The destination's row apart from the others, which the sources borrow.
    let (before, rest) = regs.split_at_mut(d * stride);
    let (row, after) = rest.split_at_mut(stride);
    for w in 0..at.nwords {
        let word = at.act.0[w];
        if word == 0 {
            continue;
        }
        let dv: &mut [u64; 64] = match (&mut row[w * 64..w * 64 + 64]).try_into() {
            Ok(x) => x,
            Err(_) => return Err(GiveUp),
        };
        let mut sp = splat.iter_mut();
        let mut src: [&[u64; 64]; N] = [&ZEROS; N];
        for (n, x) in src.iter_mut().enumerate() {
            let sn = r[n + 1];
            let Some(buf) = sp.next() else {
                return Err(GiveUp);
            };
            *x = match k.get(sn as usize) {
                Some(BlockSlot::Lanes) if sn as usize == d => {
                    *buf = *dv;
                    buf
                }
                Some(BlockSlot::Lanes) => {
                    let (rows, at_row) = if (sn as usize) < d {
                        (&*before, sn as usize * stride)
                    } else {
                        (&*after, (sn as usize - d - 1) * stride)
                    };
                    match rows[at_row + w * 64..at_row + w * 64 + 64].try_into() {
                        Ok(x) => x,
                        Err(_) => return Err(GiveUp),
                    }
                }
                Some(BlockSlot::Uniform) => {
                    *buf = [uni[sn as usize]; 64];
                    buf
                }
                Some(BlockSlot::Affine { .. }) => {
                    affine::fill(buf, (uni[sn as usize], ustr[sn as usize]), w);
                    buf
                }
                // Predicates are only guards, and unread slots are not read (`plan`).
                Some(BlockSlot::Pred | BlockSlot::Unread) => return Err(GiveUp),
                None => &ZEROS,
            };
        }
        if word == u64::MAX {
            // Every thread of the word (the common case): no select.
            for (j, x) in dv.iter_mut().enumerate() {
                *x = f(&src, j);
            }
            continue;
        }
        let on = flags(word);
        for j in 0..64 {
            let x = f(&src, j);
            dv[j] = (x & on[j]) | (dv[j] & !on[j]);
        }
    }
    Ok(())
}

/// An instruction whose destination is affine (`BlockSlot::Affine`): its base and stride from
/// its sources', once for the block. A `local` one's reads all follow it in its basic block,
/// so it is set for all threads whichever run it; another runs only when every live thread
/// not on its way to an exit does (as `scalar`). Not affine after all (`affine::result`):
/// the block is given up.
#[inline(always)]
fn affine_write<const W: usize>(
    bt: &mut BlockTier,
    k: &[BlockSlot],
    i: &Inst,
    at: &At<W>,
    local: bool,
) -> Result<(), GiveUp> {
    if !at.act.any() {
        return Ok(());
    }
    if !local && at.act != at.staying {
        return Err(GiveUp);
    }
    let mut src = [(0, 0); 3];
    for (x, &s) in src.iter_mut().zip(&i.r[1..4]) {
        *x = held(bt, k, s).ok_or(GiveUp)?;
    }
    let d = i.r[0] as usize;
    // The threads that run it, first to last (only `mul.wide` looks at them).
    let range = || span(&at.act.0[..at.nwords]).unwrap_or((0, 0));
    let Some(v) = affine::result(i, src, range) else {
        return Err(GiveUp);
    };
    (bt.uni[d], bt.ustr[d]) = v;
    Ok(())
}

/// The first and the last thread of `act` (64 a word), if any.
#[inline(always)]
fn span(act: &[u64]) -> Option<(usize, usize)> {
    let first = act.iter().position(|&w| w != 0)?;
    let last = act.iter().rposition(|&w| w != 0)?;
    Some((
        first * 64 + act[first].trailing_zeros() as usize,
        last * 64 + 63 - act[last].leading_zeros() as usize,
    ))
}

/// Whether nothing reads `r[0]`: the instruction need not run.
#[inline(always)]
fn unread_dest(k: &[BlockSlot], r: [u32; 6]) -> bool {
    matches!(k.get(r[0] as usize), Some(BlockSlot::Unread))
}

/// `r[0]` when the block tier keeps it uniform (its sources are then uniform too: `plan`).
#[inline(always)]
fn uniform_dest(k: &[BlockSlot], r: [u32; 6]) -> Option<usize> {
    matches!(k.get(r[0] as usize), Some(BlockSlot::Uniform)).then_some(r[0] as usize)
}

/// Uniform slot `s`'s value (`NONE`: 0).
#[inline(always)]
fn uval(u: &[u64], s: Slot) -> u64 {
    u.get(s as usize).copied().unwrap_or(0)
}

/// 64 lanes of 0.
static ZEROS: [u64; 64] = [0; 64];

// `lanes1`, `lanes2` and `lanes3` mark their per-thread closures `#[inline(always)]`: in the
// tier's one large function the build otherwise called some of them once per thread (a scalar
// loop; `shr.u32` on lanes cost 2x as much with AVX2).
#[inline(always)]
fn lanes1<const W: usize>(
    bt: &mut BlockTier,
    k: &[BlockSlot],
    at: &At<W>,
    r: [u32; 6],
    f: impl Fn(u64) -> u64,
) -> Result<(), GiveUp> {
    if unread_dest(k, r) {
        return Ok(());
    }
    if let Some(d) = uniform_dest(k, r) {
        return scalar(bt, at, |u| u[d] = f(uval(u, r[1])));
    }
    lanes::<1, W>(
        bt,
        k,
        at,
        r,
        #[inline(always)]
        |s, j| f(s[0][j]),
    )
}

#[inline(always)]
fn lanes2<const W: usize>(
    bt: &mut BlockTier,
    k: &[BlockSlot],
    at: &At<W>,
    r: [u32; 6],
    f: impl Fn(u64, u64) -> u64,
) -> Result<(), GiveUp> {
    if unread_dest(k, r) {
        return Ok(());
    }
    if let Some(d) = uniform_dest(k, r) {
        return scalar(bt, at, |u| u[d] = f(uval(u, r[1]), uval(u, r[2])));
    }
    lanes::<2, W>(
        bt,
        k,
        at,
        r,
        #[inline(always)]
        |s, j| f(s[0][j], s[1][j]),
    )
}

#[inline(always)]
fn lanes3<const W: usize>(
    bt: &mut BlockTier,
    k: &[BlockSlot],
    at: &At<W>,
    r: [u32; 6],
    f: impl Fn(u64, u64, u64) -> u64,
) -> Result<(), GiveUp> {
    if unread_dest(k, r) {
        return Ok(());
    }
    if let Some(d) = uniform_dest(k, r) {
        return scalar(bt, at, |u| {
            u[d] = f(uval(u, r[1]), uval(u, r[2]), uval(u, r[3]))
        });
    }
    lanes::<3, W>(
        bt,
        k,
        at,
        r,
        #[inline(always)]
        |s, j| f(s[0][j], s[1][j], s[2][j]),
    )
}

/// `setp`: `r[0][t] = f(r[1][t], r[2][t])` and `r[4][t]` its negation (when not `NONE`), for
/// the threads of `at.act`, into each destination as its kind keeps it: once for the block,
/// as mask bits, or as lanes of 0 and 1.
#[inline(always)]
fn setp<const W: usize>(
    bt: &mut BlockTier,
    k: &[BlockSlot],
    at: &At<W>,
    r: [u32; 6],
    how: Option<(IntTy, Shape)>,
    f: impl Fn(u64, u64) -> bool,
) -> Result<(), GiveUp> {
    let (d, q) = (r[0] as usize, r[4] as usize);
    let uniform = |s: usize| matches!(k.get(s), Some(BlockSlot::Uniform));
    if uniform(d) || uniform(q) {
        // The plan keeps both destinations uniform or neither (or one of them unread).
        return scalar(bt, at, |u| {
            let get = |s: u32| u.get(s as usize).copied().unwrap_or(0);
            let v = f(get(r[1]), get(r[2])) as u64;
            if uniform(d) {
                u[d] = v;
            }
            if uniform(q) {
                u[q] = v ^ 1;
            }
        });
    }
    let mut res = Mask::<W>::none();
    // A comparison with a block-wide value (`tid < s`): one lane loop, without filling lanes
    // with the value (or, from a slot held as base and stride, with the compared values) first.
    let ub = held(bt, k, r[2]).filter(|h| h.1 == 0).map(|h| h.0);
    let aa = held(bt, k, r[1]);
    // An affine value against a block-wide one changes at a thread or two: found directly.
    let direct = match (aa, ub, how, span(&at.act.0[..at.nwords])) {
        (Some(a), Some(y), Some(how), Some(range)) if a.1 != 0 => {
            affine::compare(a, y, range, how, &f, &mut res.0[..at.nwords])
        }
        _ => false,
    };
    // Otherwise thread by thread, a 64-thread word at a time.
    let by_thread = if direct { 0 } else { at.nwords };
    for w in 0..by_thread {
        if at.act.0[w] == 0 {
            continue;
        }
        let mut bits = 0u64;
        match (aa, ub) {
            (Some((base, st)), Some(y)) => {
                let b0 = base.wrapping_add(st.wrapping_mul(w as u64 * 64));
                for j in 0..64 {
                    let x = b0.wrapping_add(st.wrapping_mul(j as u64));
                    bits |= (f(x, y) as u64) << j;
                }
            }
            _ => {
                let [sa, sb, ..] = &mut bt.splat[..] else {
                    return Err(GiveUp);
                };
                let a = word_ref(&bt.regs, (&bt.uni, &bt.ustr), bt.stride, k, r[1], w, sa);
                if let Some(y) = ub {
                    for (j, &x) in a.iter().enumerate() {
                        bits |= (f(x, y) as u64) << j;
                    }
                } else {
                    let b = word_ref(&bt.regs, (&bt.uni, &bt.ustr), bt.stride, k, r[2], w, sb);
                    for j in 0..64 {
                        bits |= (f(a[j], b[j]) as u64) << j;
                    }
                }
            }
        }
        res.0[w] = bits;
    }
    for (dest, neg) in [(r[0], false), (r[4], true)] {
        let ds = dest as usize;
        match k.get(ds) {
            None | Some(BlockSlot::Unread) => {}
            Some(BlockSlot::Uniform | BlockSlot::Affine { .. }) => return Err(GiveUp),
            Some(BlockSlot::Pred) => {
                let words = bt.preds[ds].iter_mut().zip(at.act.0.iter().zip(res.0));
                for (p, (&on, v)) in words.take(at.nwords) {
                    let v = v ^ (neg as u64).wrapping_neg();
                    *p = (v & on) | (*p & !on);
                }
            }
            Some(BlockSlot::Lanes) => {
                let s = bt.stride;
                for w in 0..at.nwords {
                    let word = at.act.0[w];
                    if word == 0 {
                        continue;
                    }
                    let v = res.0[w] ^ (neg as u64).wrapping_neg();
                    let on = flags(word);
                    let dv = &mut bt.regs[ds * s + w * 64..ds * s + w * 64 + 64];
                    for j in 0..64 {
                        dv[j] = (((v >> j) & 1) & on[j]) | (dv[j] & !on[j]);
                    }
                }
            }
        }
    }
    Ok(())
}
