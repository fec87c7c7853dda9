//! The block tier's plan, made when a kernel loads: whether the kernel may run a block at a
//! time (`plan`: its operations, loops, barriers and thread indexing; the module docs of
//! `exec::block` say which), how the tier keeps each of its slots (`slot_kinds`, then
//! `affine::mark`), and whether a launch's block shape fits the plan (`fits_block`). It runs
//! nothing.

use super::affine;
use crate::ir::{AtomKind, AtomOp, BarKind, BlockSlot, IntTy, MemSpace, Op, Program, Slot, NONE};

/// How the block tier keeps each slot of `prog` (`Program::block_slots`), or `None` when the
/// kernel may not run in it (see the module docs).
pub fn plan(prog: &Program) -> Option<Vec<BlockSlot>> {
    // Shared memory is read as the u32 words CUDA code uses, in the u64 words it is kept in.
    if !cfg!(target_endian = "little") {
        return None;
    }
    if !prog.has_barriers || !prog.calls.is_empty() || prog.local_bytes != 0 {
        return None;
    }
    let u = crate::ir::uniform::analyze(prog);
    if u.barriers_split_phases(prog).is_err() {
        return None;
    }
    // Long loops without a barrier (a tile's dot product) are what compiled regions do best, a
    // lane at a time with their values in host registers: those kernels stay with them. Short
    // ones (a histogram's grid-stride loop around its shared atomic, a loop that clears
    // shared memory) run here.
    let long_loop_without_barrier = prog.code.iter().enumerate().any(|(pc, i)| {
        i.op == Op::Bra
            && (i.imm as usize) <= pc
            && pc + 1 - i.imm as usize > SHORT_LOOP
            && !prog.code[i.imm as usize..=pc]
                .iter()
                .any(|j| matches!(j.op, Op::Bar(_)))
    });
    if long_loop_without_barrier {
        return None;
    }
    // Kernels that index by `%tid.y` or `%tid.z` (tiles) access shared memory a row at a time,
    // which its unit-stride paths do not cover: measured 6x slower than the interpreter and
    // compiled regions on matmulTiled.
    if prog
        .sregs
        .iter()
        .any(|&(_, r)| matches!(r, crate::ir::SReg::Tid(1) | crate::ir::SReg::Tid(2)))
    {
        return None;
    }
    let int_ok = |t: IntTy| matches!(t.bits, 8 | 16 | 32 | 64);
    let ops_ok = prog.code.iter().all(|i| match i.op {
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
        Op::CvtII { sat, .. } => !sat,
        Op::Bar(BarKind::Sync) => i.r[2] == NONE,
        // Whole warps with block-uniform operands only (checked when it runs).
        Op::Shfl(_) => true,
        Op::Atom {
            space: MemSpace::Shared | MemSpace::Global,
            op,
            bits,
            kind,
        } => tier_atomic(op, bits, kind),
        _ => false,
    });
    if !ops_ok {
        return None;
    }
    let kinds = slot_kinds(prog, &u);
    // A global atomic waits with the block's stores until the block ends: nothing may read its
    // old value.
    let global_results_unread = prog.code.iter().all(|i| match i.op {
        Op::Atom {
            space: MemSpace::Global,
            ..
        } => i.r[0] == NONE || kinds.get(i.r[0] as usize) == Some(&BlockSlot::Unread),
        _ => true,
    });
    global_results_unread.then_some(kinds)
}

/// The longest loop without a barrier (instructions from its head to its back branch) that a
/// kernel may have for the tier.
const SHORT_LOOP: usize = 16;

/// Atomics the tier runs: 32-bit words of integers and operations whose final value is the
/// same in any order of the threads (add, min, max and the bitwise ones), so that running a
/// group's threads in thread order, or deferring a global one to the block's end, leaves the
/// memory the interpreter's order would.
fn tier_atomic(op: AtomOp, bits: u8, kind: AtomKind) -> bool {
    bits == 32
        && matches!(kind, AtomKind::U | AtomKind::S)
        && matches!(
            op,
            AtomOp::Add | AtomOp::Min | AtomOp::Max | AtomOp::And | AtomOp::Or | AtomOp::Xor
        )
}

/// Whether launches with blocks of shape `block` may use the tier: it holds `%tid.x` as the
/// thread's number in the block (`BlockSlot::Affine`), which it is only in blocks of one
/// dimension.
pub fn fits_block(prog: &Program, block: (u32, u32, u32)) -> bool {
    let tid_x_affine = prog.sregs.iter().any(|&(s, r)| {
        r == crate::ir::SReg::Tid(0)
            && matches!(
                prog.block_slots.get(s as usize),
                Some(BlockSlot::Affine { .. })
            )
    });
    (block.1 == 1 && block.2 == 1) || !tid_x_affine
}

/// Each slot's `BlockSlot`. Uniform: block-uniform by the analysis, and every instruction
/// that writes it runs under uniform control with uniform operands and guard and is not a
/// memory load (so it is computed once for the block: the tier runs it only when every live
/// thread is at it, and gives the block up otherwise). Pred: a divergent slot that only
/// comparisons write and only guards read. Unread: nothing reads it. Lanes: the rest.
fn slot_kinds(prog: &Program, u: &crate::ir::uniform::Uniformity) -> Vec<BlockSlot> {
    let n = prog.nslots as usize;
    let mut uniform: Vec<bool> = (0..n).map(|s| u.is_uniform(s as Slot)).collect();
    let uni = |uniform: &[bool], s: Slot| s == NONE || uniform.get(s as usize) == Some(&true);
    loop {
        let mut changed = false;
        for (pc, i) in prog.code.iter().enumerate() {
            let dests = crate::ir::defuse::may_write(i, prog);
            if !dests.iter().any(|&d| uni(&uniform, d)) {
                continue;
            }
            let scalar = !matches!(i.op, Op::Ld { .. } | Op::Atom { .. })
                && u.uniform_control(pc as u32)
                && uni(&uniform, i.guard)
                && i.r.iter().all(|&s| uni(&uniform, s));
            if !scalar {
                for d in dests {
                    if let Some(x) = uniform.get_mut(d as usize) {
                        changed |= *x;
                        *x = false;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    let mut pred = vec![true; n];
    let mut written = vec![false; n];
    // Constants, special registers and registers read before written count as read.
    let mut read = vec![false; n];
    let fixed: Vec<Slot> = prog
        .consts
        .iter()
        .map(|c| c.0)
        .chain(prog.sregs.iter().map(|r| r.0))
        .collect();
    for &s in fixed.iter().chain(&prog.entry_live) {
        if let Some(x) = read.get_mut(s as usize) {
            *x = true;
        }
    }
    // Constants and special registers are not predicates the tier computes.
    for &s in &fixed {
        if let Some(x) = pred.get_mut(s as usize) {
            *x = false;
        }
    }
    for i in &prog.code {
        let mut unguarded = *i;
        unguarded.guard = NONE;
        // (`sources` leaves out a shuffle's member mask.)
        let members = matches!(i.op, Op::Shfl(_)).then_some(i.r[4]);
        for s in crate::ir::defuse::sources(&unguarded)
            .into_iter()
            .chain(members)
        {
            if let (Some(r), Some(p)) = (read.get_mut(s as usize), pred.get_mut(s as usize)) {
                *r = true;
                *p = false;
            }
        }
        if let Some(r) = read.get_mut(i.guard as usize) {
            *r = true;
        }
        for d in crate::ir::defuse::may_write(i, prog) {
            if let (Some(p), Some(w)) = (pred.get_mut(d as usize), written.get_mut(d as usize)) {
                *w = true;
                *p &= matches!(i.op, Op::SetpI { .. });
            }
        }
    }
    let mut kinds: Vec<BlockSlot> = (0..n)
        .map(|s| {
            if !read[s] {
                BlockSlot::Unread
            } else if uniform[s] {
                BlockSlot::Uniform
            } else if pred[s] && written[s] {
                BlockSlot::Pred
            } else {
                BlockSlot::Lanes
            }
        })
        .collect();
    affine::mark(prog, u, &mut kinds);
    kinds
}
