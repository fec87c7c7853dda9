//! The seam between the interpreter (the core) and the accelerators: the block tier and its
//! replays (`block`), compiled regions and gangs (`crate::jit`, run by `jit_run`), and the
//! AVX2/AVX-512 builds of the interpreter loop (`cpu`). The accelerators are compiled only with
//! the crate's `accel` feature (on by default); without it this module's `plan`s find nothing
//! to accelerate and every launch runs in the interpreter alone, with the same results.
//!
//! **Blocks.** The block accelerator compiled in (`exec::BLOCK_ENGINE`, a `BlockEngine`: the
//! block tier with `accel`, none without) is reached only through this module: at load,
//! `block_plan` asks it whether a kernel may run a block at a time (`Program::block_tier`); at
//! launch, `fits_block` whether the launch's shape allows it. A worker then offers each block to its `BlockAccel` (`Worker::run_block_accelerated`), whose
//! `run` ends with `Done` or `GaveUp`. The rule is the core's, here, and no accelerator can
//! change it: before the attempt the core keeps a copy of the block's shared memory; on
//! `GaveUp` it puts that copy back and drops the global stores and atomics the attempt
//! deferred, and the interpreter runs the block from its start (so every result, report, fault
//! and printf is the interpreter's); on `Done` the core applies the deferred stores and
//! atomics and counts the block's instructions. A worker stops offering blocks once most of
//! them gave up. Accelerators never report: anything they would have to report, they give up
//! on.
//!
//! **Regions.** Compiled regions are entered from the interpreter loop (`run`) where
//! `Worker::jit_fn` finds one at the group's PC (a slice look-up, no call through a pointer per
//! instruction). The accelerator (`Worker::run_region`, in `jit_run`) runs the group's lanes
//! through it (their registers, and the memory accesses compiled code has proven in bounds) and
//! says where each lane stopped (`RegionStop`). The rule is the core's, here
//! (`Worker::run_compiled`): compiled code leaves before anything the interpreter must check or
//! report; the core charges the warp what the lanes spent, regroups the lanes by the PCs they
//! stopped at, and the interpreter executes the instruction they stopped before itself.

use super::Worker;
use crate::ir::{AtomKind, AtomOp, BlockSlot, Program};
use crate::mem::HostPtr;
use crate::sem::atomic;

/// A block an accelerator ran to its end.
pub(crate) struct Done {
    /// Its warp-instructions, counted as the interpreter counts them.
    pub warp_instructions: u64,
    /// It was run by replaying a recorded block (`block::replay`).
    pub replayed: bool,
}

/// An accelerator could not finish a block: the core undoes what it did (`Worker::
/// run_block_accelerated`) and the interpreter runs the block from its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GaveUp;

/// A global store or atomic an accelerator deferred to the end of its block (where, offset,
/// bytes, value, the atomic's operation): the core applies them on `Done` and drops them on
/// `GaveUp`.
pub(crate) type Deferred<'a> = (HostPtr<'a>, usize, usize, u64, Option<(AtomOp, AtomKind)>);

/// An engine that runs whole blocks of a launch (one per worker, kept from block to block).
pub(crate) trait BlockAccel<'a> {
    /// Run block `ctaid` on `w` (its shared memory, register files and counters). Global
    /// stores and atomics go to `deferred` only; `shared_at_start` is the block's shared
    /// memory before the attempt (for an accelerator that tries twice). Effects of a `GaveUp`
    /// are undone by the caller.
    fn run(
        &mut self,
        w: &mut Worker<'a>,
        ctaid: [u32; 3],
        shared_at_start: &[u64],
        deferred: &mut Vec<Deferred<'a>>,
    ) -> Result<Done, GaveUp>;
}

/// The core's state for the block seam, per worker.
#[derive(Default)]
pub(crate) struct BlockSeam<'a> {
    /// The launch's block accelerator on this worker (`None`: every block is interpreted).
    pub accel: Option<Box<dyn BlockAccel<'a> + 'a>>,
    /// The block's shared memory before the attempt.
    shared_at_start: Vec<u64>,
    /// The attempt's deferred global stores and atomics.
    deferred: Vec<Deferred<'a>>,
    /// Blocks offered and blocks given up in this launch.
    tried: u32,
    given_up: u32,
    /// Blocks run to their end, and of those the replays.
    pub done: u64,
    pub replays: u64,
}

impl<'a> Worker<'a> {
    /// Offer block `ctaid` to the launch's block accelerator. True when it ran the block to its
    /// end (its effects are applied and its instructions counted); false when the interpreter
    /// must run the block (nothing of the attempt is visible). See the module docs.
    pub(super) fn run_block_accelerated(&mut self, ctaid: [u32; 3]) -> bool {
        let Some(mut accel) = self.seam.accel.take() else {
            return false;
        };
        let mut at_start = std::mem::take(&mut self.seam.shared_at_start);
        let mut deferred = std::mem::take(&mut self.seam.deferred);
        at_start.clear();
        at_start.extend_from_slice(&self.shared);
        deferred.clear();
        let ok = match accel.run(self, ctaid, &at_start, &mut deferred) {
            Ok(done) => {
                for &(p, off, size, v, atom) in &deferred {
                    match atom {
                        None => p.store(off, size, v),
                        Some((AtomOp::Add, _)) => {
                            p.fetch_add(off, size, v);
                        }
                        Some((op, kind)) => {
                            let bits = size as u8 * 8;
                            p.rmw(off, size, &|o| atomic::atom_apply(op, bits, kind, o, v, 0));
                        }
                    }
                }
                self.pending += done.warp_instructions;
                self.seam.done += 1;
                self.seam.replays += done.replayed as u64;
                true
            }
            Err(GaveUp) => {
                self.shared.copy_from_slice(&at_start);
                self.seam.given_up += 1;
                false
            }
        };
        deferred.clear();
        self.seam.tried += 1;
        self.seam.shared_at_start = at_start;
        self.seam.deferred = deferred;
        // A kernel whose blocks mostly give up (races, reads after own stores) stops trying.
        let s = &self.seam;
        if !(s.given_up >= 4 && s.given_up * 2 > s.tried) {
            self.seam.accel = Some(accel);
        }
        ok
    }

    /// Blocks this worker ran in an accelerator.
    pub fn block_tier_blocks(&self) -> u64 {
        self.seam.done
    }

    /// Of those, blocks run by replaying a recorded one.
    pub fn block_tier_replayed(&self) -> u64 {
        self.seam.replays
    }
}

/// A block accelerator as the core sees it: its plan for a kernel (at load), whether a launch's
/// shape fits the plan, and its start on a worker (at launch). `exec::BLOCK_ENGINE` names the
/// one compiled in (the block tier, with the `accel` feature), so that this module does not
/// import any accelerator.
#[derive(Clone, Copy)]
pub(crate) struct BlockEngine {
    /// How the accelerator keeps each slot of the kernel, or `None` when it cannot run it.
    pub plan: fn(&Program) -> Option<Vec<BlockSlot>>,
    /// Whether a launch with blocks of this shape may use the plan.
    pub fits: fn(&Program, (u32, u32, u32)) -> bool,
    /// The accelerator's state on a worker of a launch that uses it.
    pub start: for<'a> fn(&super::Ctx<'a>) -> Box<dyn BlockAccel<'a> + 'a>,
}

/// How the block accelerator keeps each slot of `prog`, or `None` when the kernel may not run a
/// block at a time (always `None` without the `accel` feature).
pub(crate) fn block_plan(prog: &Program) -> Option<Vec<BlockSlot>> {
    super::BLOCK_ENGINE.and_then(|e| (e.plan)(prog))
}

/// Whether a launch with blocks of shape `block` may run `prog` a block at a time (the kernel
/// has a plan: `block_plan`).
pub(crate) fn fits_block(prog: &Program, block: (u32, u32, u32)) -> bool {
    super::BLOCK_ENGINE.is_some_and(|e| (e.fits)(prog, block))
}

impl<'a> BlockSeam<'a> {
    /// A worker's seam: with the block tier when the launch uses it (`Ctx::block_tier`).
    pub(super) fn new(ctx: &super::Ctx<'a>) -> Self {
        BlockSeam {
            accel: block_accel(ctx),
            ..Default::default()
        }
    }
}

/// The block accelerator of a worker of a launch that uses one.
fn block_accel<'a>(ctx: &super::Ctx<'a>) -> Option<Box<dyn BlockAccel<'a> + 'a>> {
    if !ctx.block_tier {
        return None;
    }
    super::BLOCK_ENGINE.map(|e| (e.start)(ctx))
}

/// Where the lanes of a group stopped in a compiled region (`Worker::run_region`).
pub(crate) struct RegionStop {
    /// Per lane, the PC of the instruction it stopped before (lanes outside the group: any).
    pub pcs: [u32; 32],
    /// Instructions charged to the warp: the most any lane ran, as if the lanes had run in
    /// lockstep (with gangs, the sum of each stage's most; a lane that ran out of fuel used at
    /// least all of it).
    pub spent: i64,
    /// Some lane stopped before an instruction that compiled code leaves to the interpreter
    /// (rather than at the end of its fuel or at a region's exit).
    pub before_interpreted: bool,
}

impl<'a> Worker<'a> {
    /// Run the group at `w.pc` through the compiled region `f`, then go on as the core's rule
    /// says: the warp is charged what the lanes spent; when every lane stopped at one PC the
    /// group goes on from there together, else the lanes wait, each at its PC, for the
    /// scheduler. Returns the PC whose instruction the interpreter must execute before entering
    /// compiled code again (`u32::MAX`: none).
    pub(super) fn run_compiled(&mut self, w: &mut super::Warp, f: JitFn, fuel: &mut u32) -> u32 {
        let Some(stop) = self.run_region(w, f, *fuel) else {
            return w.pc;
        };
        *fuel = fuel.saturating_sub(stop.spent.clamp(0, u32::MAX as i64) as u32);
        let m = w.mask;
        let p0 = stop.pcs[m.trailing_zeros() as usize & 31];
        let mut differ = 0u32;
        for (l, &p) in stop.pcs.iter().enumerate() {
            differ |= ((p != p0) as u32) << l;
        }
        if differ & m == 0 {
            w.pc = p0;
            if p0 >= w.resched_pc {
                w.repick();
            }
            return if stop.before_interpreted {
                p0
            } else {
                u32::MAX
            };
        }
        for (l, &p) in stop.pcs.iter().enumerate() {
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

#[cfg(feature = "accel")]
pub(crate) use crate::jit::{Compiled, JitCtx, JitFn, Lazy};

/// The compiled-region engine's context for a worker of a launch with compiled regions.
pub(super) fn region_ctx(ctx: &super::Ctx) -> Option<Box<JitCtx>> {
    #[cfg(feature = "accel")]
    {
        ctx.jit
            .map(|j| JitCtx::new(ctx.params, ctx.global, j.caches))
    }
    #[cfg(not(feature = "accel"))]
    {
        let _ = ctx;
        None
    }
}

#[cfg(not(feature = "accel"))]
pub(crate) use off::{Compiled, JitCtx, JitFn, Lazy};

/// Stand-ins for the compiled-region engine's types without the `accel` feature: none of them
/// is ever made, so the interpreter's look-ups find nothing.
#[cfg(not(feature = "accel"))]
mod off {
    use super::super::{Warp, Worker};
    use crate::ir::Program;
    use crate::Engines;

    /// Compiled regions of a kernel (never made).
    pub enum Compiled {}

    impl Compiled {
        pub fn entries(&self) -> &[Option<JitFn>] {
            match *self {}
        }
        pub fn gangs(&self) -> &[Option<JitFn>] {
            match *self {}
        }
    }

    /// A compiled function (never made).
    #[derive(Clone, Copy)]
    pub enum JitFn {}

    /// Compiled code's context (never made).
    pub enum JitCtx {}

    /// A kernel's compiled regions, made when it has run enough: never, here.
    #[derive(Default)]
    pub struct Lazy(());

    impl Lazy {
        pub fn get(&self, _: &Program, _: u64, _: &Engines) -> Option<&Compiled> {
            None
        }
        pub fn ran(&self, _: u64) {}
    }

    impl Worker<'_> {
        /// Compiled region for the group at `pc`: none.
        #[inline(always)]
        pub(in crate::exec) fn jit_fn(&self, _pc: u32) -> Option<JitFn> {
            None
        }

        pub(in crate::exec) fn run_region(
            &mut self,
            _: &mut Warp,
            f: JitFn,
            _: u32,
        ) -> Option<super::RegionStop> {
            match f {}
        }
    }
}
