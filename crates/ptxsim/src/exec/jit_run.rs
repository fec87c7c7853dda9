//! Running the group through a compiled region (see `jit`): each lane of the group runs the
//! region's function in turn.
//!
//! Lanes that parked where a loop starts (`jit::emit::gang`) run that loop in gangs of `GANG`
//! through its gang function, then on through the region function with the lanes left over.
//!
//! It runs the lanes only (their registers, and the accesses compiled code proved in bounds) and
//! says where each lane stopped and what the lanes spent (`exec::accel::RegionStop`): the core
//! charges the warp and regroups its lanes. This module does no checking: compiled code leaves
//! the region before anything the interpreter must check.

use super::accel::RegionStop;
use super::{Warp, Worker};
use crate::jit::{JitCtx, JitFn, GANG};

impl Worker<'_> {
    /// Compiled region for the group at `pc`, if any.
    #[inline(always)]
    pub(super) fn jit_fn(&self, pc: u32) -> Option<JitFn> {
        self.jit_at.get(pc as usize).copied().flatten()
    }

    /// Run the lanes of the group at `w.pc` through `f`, each with `fuel` instructions at most;
    /// the warp's PCs, masks and fuel are left as they were. Where each lane stopped, and what the lanes spent, is for
    /// the core to act on (`exec::accel`, `Worker::run_compiled`); `None` when this worker has
    /// no compiled-region context (nothing ran).
    pub(super) fn run_region(&mut self, w: &mut Warp, f: JitFn, fuel: u32) -> Option<RegionStop> {
        let ctx = self.jit_ctx.as_deref_mut()?;
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
        ctx.fuel = fuel as i64;
        // Lanes stop parking for the rest of the launch on this worker once most gangs it
        // tried were turned down (lanes that disagree on a value taken as uniform, or reach
        // different allocations): parking and turning down cost about 9 % of host
        // instructions, measured on such a kernel.
        let gangs_pay = self.gang_rejects < GIVE_UP || self.gang_rejects * 2 <= self.gang_tries;
        ctx.gang =
            (m.count_ones() as usize >= GANG && !self.jit_gang.is_empty() && gangs_pay) as u32;
        f.run_lanes(&mut w.regs, m, ctx, pc);
        let mut spent = ctx.most;
        let mut interp = ctx.interp;
        // Lanes that leave a gang and park again (at the next run of an inner loop) run in
        // gangs again, as long as fuel is left.
        while ctx.parked != 0 {
            let left = fuel as i64 - spent;
            let g = run_gangs(
                &mut w.regs,
                f,
                ctx,
                self.jit_at,
                self.jit_gang,
                left,
                &mut interp,
            );
            spent += g.spent;
            self.ganged += g.lanes;
            self.gang_tries = self.gang_tries.saturating_add(g.tries);
            self.gang_rejects = self.gang_rejects.saturating_add(g.rejects);
        }
        if f.uses_shared() && self.ctx.check {
            self.shadow.compiled_log_used(ctx.log_used());
        }
        Some(RegionStop {
            pcs: ctx.pcs,
            spent,
            before_interpreted: interp != 0,
        })
    }
}

/// The lanes `ctx.parked` that the region function `f` (with entries `at`) parked at the start
/// of a gang loop: run them through the loop's gang function (`gangs`) `GANG` at a time, then
/// each of them, and those left over, on through `f`. Lanes that leave a gang may park again
/// (in `ctx.parked` on return) when there are `GANG` of them at one PC and fuel is left; the
/// others, and the lanes of a gang that was turned down, go on without parking. Adds to
/// `interp` the lanes left before an instruction for the interpreter. `fuel`: what each lane
/// has left.
fn run_gangs(
    regs: &mut [[u64; 32]],
    f: JitFn,
    ctx: &mut JitCtx,
    at: &[Option<JitFn>],
    gangs: &[Option<JitFn>],
    fuel: i64,
    interp: &mut u32,
) -> Ganged {
    let mut out = Ganged {
        spent: 0,
        lanes: 0,
        tries: 0,
        rejects: 0,
    };
    let mut left = ctx.parked;
    let (mut ran, mut rest) = (0u32, 0u32);
    let mut ganged = 0i64;
    while left != 0 {
        let p = ctx.pcs[left.trailing_zeros() as usize];
        let same = lanes_at(&ctx.pcs, left, p);
        left &= !same;
        let mut waiting = same;
        if let Some(g) = gangs.get(p as usize).copied().flatten() {
            while waiting.count_ones() as usize >= GANG {
                let mut four = 0u32;
                for _ in 0..GANG {
                    four |= waiting & waiting.wrapping_neg();
                    waiting &= waiting - 1;
                }
                ctx.parked = 0;
                ctx.fuel = fuel;
                g.run_lanes(regs, four, ctx, p);
                ganged = ganged.max(ctx.most);
                out.tries += 1;
                if ctx.parked == 0 {
                    out.lanes += GANG as u64;
                    ran |= four;
                } else {
                    out.rejects += 1;
                    rest |= four;
                }
            }
        }
        rest |= waiting;
    }
    // On through the region, by PC (the loop's start, or where it ends when that is a leader of
    // this region; a lane that left the region is done).
    let fuel = fuel - ganged;
    let mut parked = 0u32;
    let mut after = 0i64;
    for (mut todo, may_park) in [(ran, fuel > 0), (rest, false)] {
        while todo != 0 {
            let p = ctx.pcs[todo.trailing_zeros() as usize];
            let same = lanes_at(&ctx.pcs, todo, p);
            todo &= !same;
            if at
                .get(p as usize)
                .copied()
                .flatten()
                .is_some_and(|e| e.same_code(f))
            {
                ctx.fuel = fuel;
                ctx.gang = (may_park && same.count_ones() as usize >= GANG) as u32;
                f.run_lanes(regs, same, ctx, p);
                *interp |= ctx.interp;
                parked |= ctx.parked;
                after = after.max(ctx.most);
            }
        }
    }
    ctx.parked = parked;
    out.spent = ganged + after;
    out
}

/// The lanes of `mask` whose PC in `pcs` is `p`.
fn lanes_at(pcs: &[u32; 32], mask: u32, p: u32) -> u32 {
    let mut same = 0u32;
    for (l, &q) in pcs.iter().enumerate() {
        same |= ((q == p) as u32) << l;
    }
    same & mask
}

/// Gangs turned down before lanes stop parking (see `run_region`).
const GIVE_UP: u32 = 8;

/// What `run_gangs` did: the most instructions a lane ran in the gangs plus the most in the
/// second pass, the lanes that ran in gangs, the gangs tried and those turned down.
struct Ganged {
    spent: i64,
    lanes: u64,
    tries: u32,
    rejects: u32,
}
