//! The block tier (stage 2 of `docs/block-tier.md`, first version): runs a whole block of an
//! eligible kernel with its threads' registers side by side (`[slot][thread]`), each
//! instruction dispatched once for all the threads at one PC and run as loops over 64-thread
//! words, instead of once per warp.
//!
//! **Optimistic, and never reports.** It checks every access conservatively (bounds,
//! alignment, and shared-memory races against packed per-word records) and, on anything it
//! does not handle, gives the block up: nothing it did is visible (its global stores wait in a
//! buffer until the block ends, shared memory is restored), and the interpreter runs the block
//! from its start, so every report, fault and printf is the interpreter's own. A global load
//! after one of the block's own global stores, a cancel, an abort, or more barrier intervals
//! than its records count also give the block up.
//!
//! **Eligible** (`eligible`): the kernel's barriers split its blocks into phases
//! (`lower::uniform`), and it uses only integer and f32 arithmetic, comparisons without a
//! boolean operation, kernel parameters, global loads and stores, 32-bit shared loads and
//! stores, block-wide `bar.sync` and `exit`: no calls, warp collectives, atomics, fences or
//! local memory; every loop has a barrier in it (loops without one run faster as compiled
//! regions); and it indexes threads by `%tid.x` only. Launches with an instruction budget, or with compiled code turned off
//! (`JitMode::Off`: exact interpreted counts), do not use it.
//!
//! Counting: an instruction counts once per warp with a thread at it, as the interpreter
//! counts a warp's group. Nothing here parses PTX or knows about the warps' scheduling.

use super::alu;
use super::fops::{cmp_ord, f32c, f32v};
use super::Worker;
use crate::ir::{BarKind, Cmp, IntTy, MemSpace, Op, Program, NONE};
use crate::mem::{Cache, HostPtr};

/// The most threads a block has (words of 64 threads: 16).
const WORDS: usize = 16;

/// Block-instructions between checks of the cancel and abort flags.
const CHECK_EVERY: u32 = 4096;

/// A block's threads, one bit each.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
struct Mask([u64; WORDS]);

impl Mask {
    fn any(&self) -> bool {
        self.0.iter().any(|&w| w != 0)
    }
    fn and_not(&self, o: &Mask) -> Mask {
        Mask(std::array::from_fn(|k| self.0[k] & !o.0[k]))
    }
    fn or(&self, o: &Mask) -> Mask {
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

/// Whether `prog` may run in the block tier (see the module docs).
pub fn eligible(prog: &Program) -> bool {
    if !prog.has_barriers || !prog.calls.is_empty() || prog.local_bytes != 0 {
        return false;
    }
    let u = crate::lower::uniform::analyze(prog);
    if u.barriers_split_phases(prog).is_err() {
        return false;
    }
    // Loops without a barrier (a tile's dot product) are what compiled regions do best, a
    // lane at a time with their values in host registers: those kernels stay with them.
    let loop_without_barrier = prog.code.iter().enumerate().any(|(pc, i)| {
        i.op == Op::Bra
            && (i.imm as usize) <= pc
            && !prog.code[i.imm as usize..=pc]
                .iter()
                .any(|j| matches!(j.op, Op::Bar(_)))
    });
    if loop_without_barrier {
        return false;
    }
    // Kernels that index by `%tid.y` or `%tid.z` (tiles) access shared memory a row at a time,
    // which its unit-stride paths do not cover: measured 6x slower than the interpreter and
    // compiled regions on matmulTiled.
    if prog
        .sregs
        .iter()
        .any(|&(_, r)| matches!(r, crate::ir::SReg::Tid(1) | crate::ir::SReg::Tid(2)))
    {
        return false;
    }
    let int_ok = |t: IntTy| matches!(t.bits, 8 | 16 | 32 | 64);
    prog.code.iter().all(|i| match i.op {
        Op::Nop
        | Op::Mov
        | Op::Add
        | Op::Sub
        | Op::MulLo
        | Op::MadLo
        | Op::And
        | Op::Or
        | Op::Xor
        | Op::Not
        | Op::Neg
        | Op::Selp
        | Op::FAdd32
        | Op::FSub32
        | Op::FMul32
        | Op::FFma32
        | Op::Bra
        | Op::Exit => true,
        Op::Shl { bits } => matches!(bits, 8 | 16 | 32 | 64),
        Op::Shr { ty } | Op::Min(ty) | Op::Max(ty) => int_ok(ty),
        Op::MulWide(t) => t.bits == 32,
        Op::SetpI { ty, bop, .. } => int_ok(ty) && bop == crate::ir::BoolOp::None,
        Op::Cvta { space, .. } => matches!(space, MemSpace::Global | MemSpace::Shared),
        Op::LdK { size, n, .. } => {
            matches!(size, 1 | 2 | 4 | 8)
                && matches!(n, 1 | 2 | 4)
                && i.imm >= 0
                && (i.imm as usize).saturating_add(size as usize * n as usize) <= prog.param_bytes
        }
        Op::Ld { space, size, n, .. } | Op::St { space, size, n } => match space {
            MemSpace::Global => matches!(size, 1 | 2 | 4 | 8) && matches!(n, 1 | 2 | 4),
            MemSpace::Shared => size == 4 && n == 1,
            _ => false,
        },
        Op::Bar(BarKind::Sync) => i.r[2] == NONE,
        _ => false,
    })
}

/// Why the block tier gave a block up (the interpreter runs it instead).
pub struct GiveUp;

/// One worker's block-tier state, kept from block to block.
#[derive(Default)]
pub struct BlockTier<'a> {
    /// `[slot][thread]`, `stride` lanes per slot.
    regs: Vec<u64>,
    stride: usize,
    /// Packed race records per shared 32-bit word: the last writer's and the last reader's
    /// key (`epoch << 16 | thread`; bit 15 of the reader's: more than one reader).
    writer: Vec<u32>,
    reader: Vec<u32>,
    /// Global stores of the block (where, offset, bytes, value), applied when it ends.
    stores: Vec<(HostPtr<'a>, usize, usize, u64)>,
    /// Blocks tried and given up in this launch (the tier stops trying when most are).
    tried: u32,
    given_up: u32,
    /// The block's shared memory as it was when the block began (restored on giving up).
    shared_at_start: Vec<u64>,
    cache: Cache<'a>,
}

impl<'a> Worker<'a> {
    /// Run block `lin` in the block tier when the launch may; true when it ran to its end (its
    /// effects are done and its instructions counted), false when the interpreter must run it
    /// (nothing of it is visible).
    pub(super) fn try_block_tier(&mut self, ctaid: [u32; 3]) -> bool {
        let Some(mut bt) = self.block_tier.take() else {
            return false;
        };
        self.shared_snapshot(&mut bt);
        let r = self.block_tier_run(&mut bt, ctaid);
        let ok = match r {
            Ok(count) => {
                for &(p, off, size, v) in &bt.stores {
                    p.store(off, size, v);
                }
                self.pending += count;
                self.block_tier_done += 1;
                true
            }
            Err(GiveUp) => {
                self.shared.copy_from_slice(&bt.shared_at_start);
                bt.given_up += 1;
                false
            }
        };
        bt.tried += 1;
        bt.stores.clear();
        // A kernel whose blocks mostly give up (races, reads after own stores) stops trying.
        if !(bt.given_up >= 4 && bt.given_up * 2 > bt.tried) {
            self.block_tier = Some(bt);
        }
        ok
    }

    /// Blocks this worker ran in the block tier.
    pub fn block_tier_blocks(&self) -> u64 {
        self.block_tier_done
    }

    fn shared_snapshot(&self, bt: &mut BlockTier<'a>) {
        bt.shared_at_start.clear();
        bt.shared_at_start.extend_from_slice(&self.shared);
    }

    /// The block's run: its warp-instruction count, or `GiveUp` (inlined into the builds of
    /// `cpu::block_tier_run`).
    #[inline(always)]
    pub(super) fn run_block_tier(
        &mut self,
        bt: &mut BlockTier<'a>,
        ctaid: [u32; 3],
    ) -> Result<u64, GiveUp> {
        let ctx = self.ctx;
        let prog = ctx.prog;
        let nt = ctx.nthreads as usize;
        let nwords = nt.div_ceil(64);
        let stride = nwords * 64;
        if bt.stride != stride || bt.regs.len() != prog.nslots as usize * stride {
            // The first block of the launch on this worker: constants and special registers.
            bt.stride = stride;
            bt.regs = vec![0; prog.nslots as usize * stride];
            self.block_tier_registers(bt);
        }
        // Each block: its `%ctaid`, and the registers it may read before writing cleared.
        for &(s, r) in &prog.sregs {
            if let crate::ir::SReg::Ctaid(k) = r {
                bt.regs[s as usize * stride..][..stride].fill(ctaid[k.min(2) as usize] as u64);
            }
        }
        for &s in &prog.entry_live {
            bt.regs[s as usize * stride..][..stride].fill(0);
        }
        // Padded by a block's worth of words, so that unit-stride loops may run over whole
        // 64-thread words past the last one a thread touches.
        let words = (ctx.shared_bytes as usize).div_ceil(4) + stride;
        bt.writer.clear();
        bt.writer.resize(words, 0);
        bt.reader.clear();
        bt.reader.resize(words, 0);
        let mut live = Mask::default();
        for t in 0..nt {
            live.0[t / 64] |= 1 << (t % 64);
        }
        let mut groups: Vec<(u32, Mask)> = vec![(0, live)];
        let mut at_bar = Mask::default();
        let mut bar_pc = 0u32;
        let mut epoch = 1u32;
        let mut count = 0u64;
        let mut steps = 0u32;
        let code = &prog.code;
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
                at_bar = Mask::default();
                epoch += 1;
                if epoch > 0x7FFF {
                    return Err(GiveUp);
                }
                continue;
            };
            let (mut pc, mut m) = groups.swap_remove(gi);
            let resched = groups.iter().map(|g| g.0).min().unwrap_or(u32::MAX);
            loop {
                steps += 1;
                if steps.is_multiple_of(CHECK_EVERY) && self.stop_requested() {
                    return Err(GiveUp);
                }
                let Some(i) = code.get(pc as usize) else {
                    return Err(GiveUp);
                };
                let act = if i.guard == NONE {
                    m
                } else {
                    let g = &bt.regs[i.guard as usize * stride..][..stride];
                    let mut p = Mask::default();
                    for k in 0..nwords {
                        if m.0[k] == 0 {
                            continue;
                        }
                        let mut bits = 0u64;
                        for j in 0..64 {
                            bits |= (g[k * 64 + j] & 1) << j;
                        }
                        p.0[k] = m.0[k] & if i.guard_neg { !bits } else { bits };
                    }
                    p
                };
                count += m.warps(nwords);
                match i.op {
                    Op::Bra => {
                        let target = i.imm as u32;
                        if act == m {
                            pc = target;
                            if pc >= resched {
                                ready_at(&mut groups, pc, m);
                                break;
                            }
                            continue;
                        }
                        if act.any() {
                            ready_at(&mut groups, target, act);
                            ready_at(&mut groups, pc + 1, m.and_not(&act));
                            break;
                        }
                    }
                    Op::Exit => {
                        live = live.and_not(&act);
                        m = m.and_not(&act);
                        if !m.any() {
                            break;
                        }
                    }
                    Op::Bar(_) if act.any() => {
                        // Every thread here, and every parked one at this same barrier.
                        if act != m || (at_bar.any() && bar_pc != pc) {
                            return Err(GiveUp);
                        }
                        at_bar = at_bar.or(&m);
                        bar_pc = pc;
                        break;
                    }
                    Op::Bar(_) => {}
                    _ => self.block_op(bt, i, pc, &act, nwords, epoch)?,
                }
                pc += 1;
                if pc >= resched {
                    ready_at(&mut groups, pc, m);
                    break;
                }
            }
        }
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
            let row = &mut bt.regs[s as usize * stride..][..nt];
            for (t, x) in row.iter_mut().enumerate() {
                *x = self.warps[t / 32].regs[s as usize][t % 32];
            }
        }
    }

    fn stop_requested(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        self.ctx.abort.load(Relaxed) || self.ctx.cancel.is_some_and(|f| f.load(Relaxed))
    }

    /// One instruction other than control flow for the threads `act`.
    #[inline(always)]
    fn block_op(
        &mut self,
        bt: &mut BlockTier<'a>,
        i: &crate::ir::Inst,
        pc: u32,
        act: &Mask,
        nwords: usize,
        epoch: u32,
    ) -> Result<(), GiveUp> {
        let _ = pc;
        let r = i.r;
        match i.op {
            Op::Nop => {}
            Op::Mov => lanes1(bt, act, nwords, r, |a| a),
            Op::Add => lanes2(bt, act, nwords, r, |a, b| a.wrapping_add(b)),
            Op::Sub => lanes2(bt, act, nwords, r, |a, b| a.wrapping_sub(b)),
            Op::MulLo => lanes2(bt, act, nwords, r, |a, b| a.wrapping_mul(b)),
            Op::MadLo => lanes3(bt, act, nwords, r, |a, b, c| {
                a.wrapping_mul(b).wrapping_add(c)
            }),
            Op::And => lanes2(bt, act, nwords, r, |a, b| a & b),
            Op::Or => lanes2(bt, act, nwords, r, |a, b| a | b),
            Op::Xor => lanes2(bt, act, nwords, r, |a, b| a ^ b),
            Op::Not => lanes1(bt, act, nwords, r, |a| !a),
            Op::Neg => lanes1(bt, act, nwords, r, |a| a.wrapping_neg()),
            Op::Selp => lanes3(bt, act, nwords, r, |a, b, c| if c & 1 != 0 { a } else { b }),
            Op::Shl { bits } => lanes2(bt, act, nwords, r, |a, b| alu::shl(a, b, bits)),
            Op::Shr { ty } => lanes2(bt, act, nwords, r, |a, b| alu::shr(a, b, ty)),
            Op::Min(t) => lanes2(bt, act, nwords, r, |a, b| alu::min(a, b, t)),
            Op::Max(t) => lanes2(bt, act, nwords, r, |a, b| alu::max(a, b, t)),
            Op::MulWide(t) => lanes2(bt, act, nwords, r, |a, b| alu::mul_wide(a, b, t)),
            Op::FAdd32 => lanes2(bt, act, nwords, r, |a, b| f32c(f32v(a) + f32v(b))),
            Op::FSub32 => lanes2(bt, act, nwords, r, |a, b| f32c(f32v(a) - f32v(b))),
            Op::FMul32 => lanes2(bt, act, nwords, r, |a, b| f32c(f32v(a) * f32v(b))),
            Op::FFma32 => lanes3(bt, act, nwords, r, |a, b, c| {
                f32c(f32v(a).mul_add(f32v(b), f32v(c)))
            }),
            Op::SetpI { cmp, ty, .. } => {
                // One lane loop per comparison, so that each vectorises.
                let b = ty.bits;
                macro_rules! setp {
                    ($ext:expr) => {
                        match cmp {
                            Cmp::Lt => {
                                lanes2(bt, act, nwords, r, |x, y| ($ext(x) < $ext(y)) as u64)
                            }
                            Cmp::Le => {
                                lanes2(bt, act, nwords, r, |x, y| ($ext(x) <= $ext(y)) as u64)
                            }
                            Cmp::Gt => {
                                lanes2(bt, act, nwords, r, |x, y| ($ext(x) > $ext(y)) as u64)
                            }
                            Cmp::Ge => {
                                lanes2(bt, act, nwords, r, |x, y| ($ext(x) >= $ext(y)) as u64)
                            }
                            Cmp::Eq => {
                                lanes2(bt, act, nwords, r, |x, y| ($ext(x) == $ext(y)) as u64)
                            }
                            Cmp::Ne => {
                                lanes2(bt, act, nwords, r, |x, y| ($ext(x) != $ext(y)) as u64)
                            }
                            c => lanes2(bt, act, nwords, r, |x, y| {
                                cmp_ord(c, Some($ext(x).cmp(&$ext(y)))) as u64
                            }),
                        }
                    };
                }
                if ty.signed {
                    setp!(|v| alu::sext(v, b));
                } else {
                    setp!(|v| alu::zext(v, b));
                }
                if r[4] != NONE {
                    lanes1(bt, act, nwords, [r[4], r[0], NONE, NONE, NONE, NONE], |p| {
                        p ^ 1
                    });
                }
            }
            Op::Cvta { to, space } => {
                let win = super::memops::window(space);
                if to {
                    lanes1(bt, act, nwords, r, |a| a.wrapping_sub(win));
                } else {
                    lanes1(bt, act, nwords, r, |a| a.wrapping_add(win));
                }
            }
            Op::LdK { size, n, sext } => {
                let sz = size as usize;
                for (k, &slot) in r[..n as usize].iter().enumerate() {
                    let off = i.imm as usize + k * sz;
                    let mut b = [0u8; 8];
                    b[..sz].copy_from_slice(&self.ctx.params[off..off + sz]);
                    let v = u64::from_le_bytes(b);
                    let v = if sext {
                        alu::sext(v, size * 8) as u64
                    } else {
                        v
                    };
                    lanes1(bt, act, nwords, [slot, NONE, NONE, NONE, NONE, NONE], |_| v);
                }
            }
            Op::Ld {
                space: MemSpace::Shared,
                sext,
                ..
            } => {
                let unit = self.shared_check(bt, i, act, nwords, epoch, false)?;
                let stride = bt.stride;
                let sh = &self.shared;
                let base = r[4] as usize * stride;
                let d = r[0] as usize * stride;
                if let (Some(c), false) = (unit, sext) {
                    // Thread t reads word c + t: branch-free over whole 64-thread words (the
                    // words past the end read as 0, and only active lanes are written).
                    for k in 0..nwords {
                        let word = act.0[k];
                        if word == 0 {
                            continue;
                        }
                        let on = flags(word);
                        let dv = &mut bt.regs[d + k * 64..d + k * 64 + 64];
                        for j in 0..64 {
                            let w = c + k * 64 + j;
                            let v = (sh.get(w >> 1).copied().unwrap_or(0) >> ((w & 1) * 32))
                                & 0xFFFF_FFFF;
                            dv[j] = (v & on[j]) | (dv[j] & !on[j]);
                        }
                    }
                    return Ok(());
                }
                for_lanes(act, nwords, |t| {
                    let off = bt.regs[base + t].wrapping_add(i.imm as u64) as u32 as usize;
                    let w = sh[off >> 3];
                    let v = (w >> ((off & 4) * 8)) & 0xFFFF_FFFF;
                    bt.regs[d + t] = if sext { alu::sext(v, 32) as u64 } else { v };
                });
            }
            Op::St {
                space: MemSpace::Shared,
                ..
            } => {
                self.shared_check(bt, i, act, nwords, epoch, true)?;
                let stride = bt.stride;
                let sh = &mut self.shared;
                let base = r[4] as usize * stride;
                let s = r[0] as usize * stride;
                for_lanes(act, nwords, |t| {
                    let off = bt.regs[base + t].wrapping_add(i.imm as u64) as u32 as usize;
                    let shift = (off & 4) * 8;
                    let w = &mut sh[off >> 3];
                    *w = (*w & !(0xFFFF_FFFFu64 << shift))
                        | ((bt.regs[s + t] & 0xFFFF_FFFF) << shift);
                });
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
                let base = r[4] as usize * stride;
                let mut bad = false;
                for_lanes(act, nwords, |t| {
                    let a = bt.regs[base + t].wrapping_add(i.imm as u64);
                    match g.translate(&mut bt.cache, a, total) {
                        Some(p) if a.is_multiple_of(total.min(16)) => {
                            for (k, &slot) in r[..n as usize].iter().enumerate() {
                                let v = p.load(k * sz, sz);
                                let v = if sext {
                                    alu::sext(v, size * 8) as u64
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
                    return Err(GiveUp);
                }
            }
            Op::St {
                space: MemSpace::Global,
                size,
                n,
            } => {
                let (sz, stride) = (size as usize, bt.stride);
                let total = (sz * n as usize) as u64;
                let g = self.ctx.global;
                let base = r[4] as usize * stride;
                let mut bad = false;
                let (regs, stores, cache) = (&bt.regs, &mut bt.stores, &mut bt.cache);
                for_lanes(act, nwords, |t| {
                    let a = regs[base + t].wrapping_add(i.imm as u64);
                    match g.translate(cache, a, total) {
                        Some(p) if a.is_multiple_of(total.min(16)) => {
                            for (k, &slot) in r[..n as usize].iter().enumerate() {
                                stores.push((p, k * sz, sz, regs[slot as usize * stride + t]));
                            }
                        }
                        _ => bad = true,
                    }
                });
                if bad {
                    return Err(GiveUp);
                }
            }
            _ => return Err(GiveUp),
        }
        Ok(())
    }

    /// Bounds, alignment and races of a 32-bit shared access by the threads `act`; the race
    /// records are updated (checker on only). Returns the first word when the access has unit
    /// stride (thread `t` at word `c + t`, found at run time): then the records are checked
    /// in branch-free loops over whole 64-thread words, and the caller moves the data so too.
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // lane loops index several arrays by lane
    fn shared_check(
        &self,
        bt: &mut BlockTier<'a>,
        i: &crate::ir::Inst,
        act: &Mask,
        nwords: usize,
        epoch: u32,
        write: bool,
    ) -> Result<Option<usize>, GiveUp> {
        let len = self.ctx.shared_bytes as usize;
        let base = i.r[4] as usize * bt.stride;
        let check = self.ctx.check;
        let imm = i.imm as u64;
        let (regs, wr, rd) = (&bt.regs, &mut bt.writer, &mut bt.reader);
        let off = |t: usize| regs[base + t].wrapping_add(imm) as u32 as usize;
        // Unit stride?
        let t0 = (0..nwords)
            .find(|&k| act.0[k] != 0)
            .map_or(0, |k| k * 64 + act.0[k].trailing_zeros() as usize);
        let o0 = off(t0);
        let mut unit = o0 & 3 == 0 && o0 / 4 >= t0;
        let c = (o0 / 4).wrapping_sub(t0);
        let mut last = 0;
        for k in 0..nwords {
            let word = act.0[k];
            if word == 0 || !unit {
                continue;
            }
            let on = flags(word);
            let mut differ = 0u64;
            for j in 0..64 {
                let t = k * 64 + j;
                let want = ((c + t) * 4) as u64;
                differ |= on[j] & ((regs[base + t].wrapping_add(imm) & 0xFFFF_FFFF) ^ want);
            }
            unit &= differ == 0;
            last = k;
        }
        // Whole words of records must exist for the lanes the loops touch.
        if unit && (c + (last + 1) * 64) * 4 <= len + bt.stride * 4 {
            let t_hi = last * 64 + 63 - act.0[last].leading_zeros() as usize;
            if (c + t_hi + 1) * 4 > len {
                return Err(GiveUp);
            }
            if check {
                let mut failed = 0u32;
                for k in 0..nwords {
                    let word = act.0[k];
                    if word == 0 {
                        continue;
                    }
                    let on = flags32(word);
                    let lo = c + k * 64;
                    let (ws, rs) = (&mut wr[lo..lo + 64], &mut rd[lo..lo + 64]);
                    for j in 0..64 {
                        let key = epoch << 16 | (k * 64 + j) as u32;
                        let other_w = ((ws[j] ^ key).wrapping_sub(1) < 0xFFFF) as u32;
                        let x = rs[j] ^ key;
                        if write {
                            let other_r = (x.wrapping_sub(1) < 0xFFFF) as u32;
                            failed |= on[j] & (other_w | other_r);
                            ws[j] = (key & on[j]) | (ws[j] & !on[j]);
                        } else {
                            failed |= on[j] & other_w;
                            let other = (((x >> 16 == 0) & (x != 0)) as u32).wrapping_neg();
                            let mark = ((rs[j] | 0x8000) & other) | (key & !other);
                            rs[j] = (mark & on[j]) | (rs[j] & !on[j]);
                        }
                    }
                }
                if failed != 0 {
                    return Err(GiveUp);
                }
            }
            return Ok(Some(c));
        }
        let mut bad = false;
        for_lanes(act, nwords, |t| {
            let off = off(t);
            if off + 4 > len || off & 3 != 0 {
                bad = true;
                return;
            }
            if !check {
                return;
            }
            let word = off >> 2;
            let key = epoch << 16 | t as u32;
            // Another thread's access in this interval: `(record ^ key) - 1 < 0xFFFF`.
            let other_w = (wr[word] ^ key).wrapping_sub(1) < 0xFFFF;
            let x = rd[word] ^ key;
            if write {
                bad |= other_w | (x.wrapping_sub(1) < 0xFFFF);
                wr[word] = key;
            } else {
                bad |= other_w;
                let other = (x >> 16 == 0) & (x != 0);
                rd[word] = if other { rd[word] | 0x8000 } else { key };
            }
        });
        if bad {
            Err(GiveUp)
        } else {
            Ok(None)
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
fn ready_at(groups: &mut Vec<(u32, Mask)>, pc: u32, m: Mask) {
    match groups.iter_mut().find(|(p, _)| *p == pc) {
        Some((_, g)) => *g = g.or(&m),
        None => groups.push((pc, m)),
    }
}

/// `f(t)` for each thread `t` of `m`.
#[inline(always)]
fn for_lanes(m: &Mask, nwords: usize, mut f: impl FnMut(usize)) {
    for k in 0..nwords {
        let mut w = m.0[k];
        while w != 0 {
            let j = w.trailing_zeros() as usize;
            w &= w - 1;
            f(k * 64 + j);
        }
    }
}

/// `r[0][t] = f([r[1][t], …, r[N][t]])` for the threads of `m`, a 64-thread word at a time
/// (each source word copied first, so that the destination may be a source; a source slot
/// `NONE` reads as 0).
#[inline(always)]
fn lanes<const N: usize>(
    bt: &mut BlockTier,
    m: &Mask,
    nwords: usize,
    r: [u32; 6],
    f: impl Fn([u64; N]) -> u64,
) {
    let s = bt.stride;
    let d = r[0] as usize * s;
    for k in 0..nwords {
        let word = m.0[k];
        if word == 0 {
            continue;
        }
        let mut src = [[0u64; 64]; N];
        for (n, v) in src.iter_mut().enumerate() {
            if r[n + 1] != NONE {
                let a = r[n + 1] as usize * s + k * 64;
                v.copy_from_slice(&bt.regs[a..a + 64]);
            }
        }
        let on = flags(word);
        let dv = &mut bt.regs[d + k * 64..d + k * 64 + 64];
        for j in 0..64 {
            let x = f(std::array::from_fn(|n| src[n][j]));
            dv[j] = (x & on[j]) | (dv[j] & !on[j]);
        }
    }
}

#[inline(always)]
fn lanes1(bt: &mut BlockTier, m: &Mask, nwords: usize, r: [u32; 6], f: impl Fn(u64) -> u64) {
    lanes::<1>(bt, m, nwords, r, |[a]| f(a))
}

#[inline(always)]
fn lanes2(bt: &mut BlockTier, m: &Mask, nwords: usize, r: [u32; 6], f: impl Fn(u64, u64) -> u64) {
    lanes::<2>(bt, m, nwords, r, |[a, b]| f(a, b))
}

#[inline(always)]
fn lanes3(
    bt: &mut BlockTier,
    m: &Mask,
    nwords: usize,
    r: [u32; 6],
    f: impl Fn(u64, u64, u64) -> u64,
) {
    lanes::<3>(bt, m, nwords, r, |[a, b, c]| f(a, b, c))
}
