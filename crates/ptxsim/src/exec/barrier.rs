//! Block-wide barriers: `bar.sync`, `bar.arrive`, `bar.red`, with thread counts and ids.
//!
//! Arriving lanes park; a barrier releases when every live thread of the block (or its thread
//! count) has arrived; a barrier reached by part of a warp is a divergent-barrier fault when
//! the checker is on. Part of the interpreter; no memory access here.

use super::{alu, Fault, Stop, Warp, Worker};
use crate::ir::NONE;
use crate::CheckKind;

impl Worker<'_> {
    /// `bar.sync`/`bar.arrive`/`bar.red` by lanes `m` of warp `w` at `pc`.
    pub(super) fn barrier(&mut self, w: &mut Warp, m: u32, pc: u32) -> Result<Option<Stop>, Fault> {
        let inst = self.ctx.prog.code[pc as usize];
        let kind = match inst.op {
            crate::ir::Op::Bar(k) => k,
            _ => return Ok(None),
        };
        let id = if inst.r[1] == NONE {
            0
        } else {
            (w.regs[inst.r[1] as usize][m.trailing_zeros() as usize & 31] & 15) as usize
        };
        let count = if inst.r[2] == NONE {
            None
        } else {
            Some(w.regs[inst.r[2] as usize][m.trailing_zeros() as usize & 31] as u32)
        };
        let live = !w.exited & !w.at_bar;
        if self.ctx.check && m != live && m != 0 {
            let missing = live & !m;
            let lane = m.trailing_zeros() as usize;
            let other = missing.trailing_zeros() as usize;
            let (ox, oy, oz) = self.thread_of(w.idx, other);
            return Err(Box::new(self.report(
                CheckKind::DivergentBarrier,
                w.idx,
                lane,
                pc,
                0,
                0,
                "",
                None,
                format!(
                    "divergent barrier: {} of the {} live threads of warp {} reached this barrier, \
                     thread ({ox},{oy},{oz}) did not",
                    m.count_ones(),
                    live.count_ones(),
                    w.idx
                ),
            )));
        }
        if m == 0 {
            w.pc = pc + 1;
            return Ok(None);
        }
        let b = &mut self.bars[id];
        if b.waiters.is_empty() && b.arrived == 0 {
            b.red_all = true;
            b.red_any = false;
            b.red_true = 0;
        }
        b.count = count.or(b.count);
        b.arrived += if count.is_some() { 32 } else { m.count_ones() };
        if inst.r[3] != NONE {
            let neg = inst.imm != 0;
            alu::each(m, |l| {
                let p = (w.regs[inst.r[3] as usize][l] & 1 != 0) != neg;
                b.red_true += p as u32;
                b.red_all &= p;
                b.red_any |= p;
            });
            b.red_kind = Some(kind);
        }
        if kind == crate::ir::BarKind::Arrive {
            // Arrive without waiting.
            w.pc = pc + 1;
            let release = b.count.is_some_and(|c| b.arrived >= c);
            if release {
                self.release(id, Some(w));
            }
            return Ok(None);
        }
        b.waiters.push((w.idx, m, inst.r[0]));
        w.at_bar |= m;
        alu::each(m, |l| w.lane_pc[l] = pc + 1);
        w.mask &= !m;
        if w.mask != 0 {
            w.pc = pc + 1;
        }
        let release = b.count.is_some_and(|c| b.arrived >= c);
        if release {
            self.release(id, Some(w));
        }
        if w.mask != 0 {
            return Ok(None);
        }
        Ok(Self::after_group_left(w))
    }

    /// Release barrier `id`: its waiting lanes become ready. `cur` is the warp taken out of
    /// `self.warps` by the caller, if any.
    pub(super) fn release(&mut self, id: usize, mut cur: Option<&mut Warp>) {
        // Keep the waiter list's allocation for the next use of this barrier.
        let waiters = std::mem::take(&mut self.bars[id].waiters);
        let b = std::mem::take(&mut self.bars[id]);
        self.epoch = self.epoch.wrapping_add(1);
        for &(wi, m, dest) in &waiters {
            let w: &mut Warp = match cur.as_deref_mut() {
                Some(c) if c.idx == wi => c,
                _ => &mut self.warps[wi as usize],
            };
            w.at_bar &= !m;
            w.waiting |= m;
            if dest != NONE {
                let v = match b.red_kind {
                    Some(crate::ir::BarKind::RedPopc) => b.red_true as u64,
                    Some(crate::ir::BarKind::RedAnd) => b.red_all as u64,
                    _ => b.red_any as u64,
                };
                alu::each(m, |l| w.regs[dest as usize][l] = v);
            }
            if w.mask == 0 {
                w.pick();
            }
        }
        let mut waiters = waiters;
        waiters.clear();
        self.bars[id].waiters = waiters;
        let _ = b;
    }

    /// Release every barrier waited on without a thread count (all live threads are parked).
    pub(super) fn release_uncounted(&mut self) -> bool {
        let mut any = false;
        for id in 0..self.bars.len() {
            if !self.bars[id].waiters.is_empty() && self.bars[id].count.is_none() {
                self.release(id, None);
                any = true;
            }
        }
        any
    }
}
