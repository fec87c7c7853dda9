//! Running the group through a compiled region (see `jit`): each lane of the group runs the
//! region's function in turn, then the group goes on together if every lane stopped at the same
//! PC, or is split by PC for the scheduler otherwise.
//!
//! Counting: a lane's instructions come out of the warp's fuel, and the warp is charged the
//! most any lane ran, as if the lanes had run in lockstep. This module does no checking: compiled
//! code leaves the region before anything the interpreter must check.

use super::{Warp, Worker};
use crate::jit::JitFn;

impl Worker<'_> {
    /// Compiled region for the group at `pc`, if any.
    #[inline(always)]
    pub(super) fn jit_fn(&self, pc: u32) -> Option<JitFn> {
        self.jit_at.get(pc as usize).copied().flatten()
    }

    /// Run the group (at `w.pc`) through `f`. Returns the PC the interpreter must execute before
    /// entering compiled code again (`u32::MAX`: none); on return the warp's running group is
    /// set (possibly another group, when the lanes stopped at different PCs).
    pub(super) fn run_jit(&mut self, w: &mut Warp, f: JitFn, fuel: &mut u32) -> u32 {
        let Some(ctx) = self.jit_ctx.as_deref_mut() else {
            return w.pc;
        };
        if f.uses_shared() {
            // The race records must hold every access of the epoch so far when compiled code
            // checks and updates them directly; until the epoch's first write it logs its
            // reads instead (`check::Shadow::compiled_log`).
            let (shadow, log) = if self.ctx.check {
                let log = if self.ctx.shared_bytes <= crate::jit::SHARED_LOG_LIMIT {
                    self.shadow.compiled_log(self.epoch)
                } else {
                    self.shadow.go_eager(self.epoch);
                    None
                };
                (Some(self.shadow.raw()), log)
            } else {
                (None, None)
            };
            ctx.set_shared(
                &mut self.shared,
                self.ctx.shared_bytes,
                shadow,
                log,
                self.epoch,
                w.idx,
                w.wepoch,
            );
        }
        let pc = w.pc;
        let m = w.mask;
        ctx.fuel = *fuel as i64;
        f.run_lanes(&mut w.regs, m, ctx, pc);
        if f.uses_shared() && self.ctx.check {
            self.shadow.compiled_log_used(ctx.log_used());
        }
        // A lane that ran out of fuel used at least all of it.
        *fuel = fuel.saturating_sub(ctx.most.clamp(0, u32::MAX as i64) as u32);
        let (pcs, interp) = (ctx.pcs, ctx.interp);
        let p0 = pcs[m.trailing_zeros() as usize & 31];
        let mut differ = 0u32;
        for (l, &p) in pcs.iter().enumerate() {
            differ |= ((p != p0) as u32) << l;
        }
        if differ & m == 0 {
            w.pc = p0;
            if p0 >= w.resched_pc {
                w.repick();
            }
            return if interp != 0 { p0 } else { u32::MAX };
        }
        for (l, &p) in pcs.iter().enumerate() {
            if (m >> l) & 1 != 0 {
                w.lane_pc[l] = p;
            }
        }
        w.waiting |= m;
        w.mask = 0;
        w.pick();
        u32::MAX
    }
}
