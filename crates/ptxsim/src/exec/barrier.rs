//! Block-wide barriers: `bar.sync`, `bar.arrive`, `bar.red`, with thread counts and ids.
//!
//! Arriving lanes park; a barrier releases when every live thread of the block (or its thread
//! count) has arrived (exited threads do not count, as on sm_70+). Lanes of one warp may reach
//! the same barrier at different times; with the checker on, lanes of a warp waiting at a
//! barrier while other lanes of that warp exit or wait at a different barrier is a
//! divergent-barrier fault. Part of the interpreter; no memory access here.

use super::{alu, Fault, Stop, Warp, Worker};
use crate::ir::NONE;
use crate::CheckKind;

#[cfg(test)]
type ReleaseHook = Box<dyn FnMut(&[&Warp], u32)>;

#[cfg(test)]
thread_local! {
    /// Tests only: called on the launching thread's worker at each barrier release, before the
    /// waiting lanes go on, with the block's warps and the barrier's PC.
    pub(crate) static ON_RELEASE: std::cell::RefCell<Option<ReleaseHook>> =
        const { std::cell::RefCell::new(None) };
}

impl Worker<'_> {
    /// The fault for lanes of warp `w` waiting at its barrier while lane `other` does not come.
    pub(super) fn divergent_barrier(&self, w: &Warp, other: usize, what: &str) -> Fault {
        let lane = w.at_bar.trailing_zeros() as usize & 31;
        let (ox, oy, oz) = self.thread_of(w.idx, other);
        Box::new(self.report(
            CheckKind::DivergentBarrier,
            w.idx,
            lane,
            w.bar_pc,
            0,
            0,
            "",
            None,
            format!(
                "divergent barrier: {} threads of warp {} wait at this barrier, but thread \
                 ({ox},{oy},{oz}) of the same warp {what} (a __syncthreads() in divergent code)",
                w.at_bar.count_ones(),
                w.idx
            ),
        ))
    }

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
        if m == 0 {
            w.pc = pc + 1;
            return Ok(None);
        }
        if self.ctx.check && w.at_bar != 0 && w.bar_pc != pc && kind != crate::ir::BarKind::Arrive {
            // Lanes of this warp already wait at another barrier instruction.
            let other = m.trailing_zeros() as usize;
            return Err(self.divergent_barrier(w, other, "reached a different barrier"));
        }
        let first_arrival = w.at_bar == 0;
        let b = &mut self.bars[id];
        if b.waiters.is_empty() && b.arrived == 0 {
            b.red_all = true;
            b.red_any = false;
            b.red_true = 0;
        }
        b.count = count.or(b.count);
        b.arrived += match count {
            // Counted barriers count whole warps, once per warp.
            Some(_) if first_arrival || kind == crate::ir::BarKind::Arrive => 32,
            Some(_) => 0,
            None => m.count_ones(),
        };
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
        w.bar_pc = pc;
        super::set_lanes(&mut w.lane_pc, m, pc + 1);
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
        #[cfg(test)]
        if let Some(&(wi, _, _)) = self.bars[id].waiters.first() {
            // The tests' view of the block at each release (`ON_RELEASE`).
            let warps: Vec<&Warp> = (0..self.warps.len())
                .map(|k| match cur.as_deref() {
                    Some(c) if c.idx as usize == k => c,
                    _ => &*self.warps[k],
                })
                .collect();
            let bar_pc = warps[wi as usize].bar_pc;
            ON_RELEASE.with(|h| {
                if let Some(f) = h.borrow_mut().as_mut() {
                    f(&warps, bar_pc);
                }
            });
        }
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
            if w.mask == 0 && w.waiting == m && w.sync_wait == 0 {
                // Only these lanes are ready (a warp with no running group has none waiting
                // but at collectives): they arrived as one group, at one PC and depth, and run
                // on as that group, which is what `pick` would find without its search.
                w.waiting = 0;
                w.mask = m;
                w.pc = w.lane_pc[m.trailing_zeros() as usize & 31];
                w.resched_pc = u32::MAX;
            } else if w.mask == 0 {
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
