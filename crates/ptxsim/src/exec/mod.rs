//! The SIMT interpreter: warps, divergence, calls, barriers and blocks.
//!
//! A `Worker` runs whole blocks on one OS thread. Each warp holds a struct-of-arrays register
//! file and the current group of lanes (one PC and a mask); lanes that diverged wait with their
//! own PC and call depth, and the deepest, lowest-PC group runs next (Volta-style independent
//! scheduling without post-dominator analysis). Barriers park warps until every live thread of
//! the block has arrived. The hot instruction loop is in `run` (each operation's result is `crate::sem`'s, applied
//! over the lanes by `alu`'s loops); memory access in `memops`;
//! warp-collective operations in `warpops`; whole blocks of eligible kernels, threads side by
//! side, in `block` (the block tier), and compiled regions in `jit_run`: accelerators, compiled
//! with the `accel` feature and reached through the seam `accel`, which undoes a block the tier
//! gives up on and hands it back to the warps.
//! A counted launch (`crate::counters`) runs every block here, in the counting build of `run`'s
//! loop, which hands each warp instruction to `counters::Acc::count` before executing it.
//! This module does not parse PTX and does not spawn threads (see `pool`).

pub(crate) mod accel;
mod alu;
mod barrier;
#[cfg(feature = "accel")]
pub(crate) mod block;
#[cfg(test)]
pub(crate) use barrier::ON_RELEASE;
mod builtins;
mod calls;
mod cpu;
pub(crate) use cpu::Build;
pub(crate) mod grid;
#[cfg(feature = "accel")]
mod jit_run;
mod memops;
mod run;
mod setp;
pub mod tensor;
mod warpops;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::check::Shadow;
use crate::ir::{Program, SReg, Slot};
use crate::mem::{Cache, GlobalView};
use crate::{CheckKind, CheckReport, Dim3};

/// The block accelerator compiled in (`accel`): the block tier with the `accel` feature.
#[cfg(feature = "accel")]
pub(crate) const BLOCK_ENGINE: Option<accel::BlockEngine> = Some(block::ENGINE);
/// No block accelerator without the `accel` feature.
#[cfg(not(feature = "accel"))]
pub(crate) const BLOCK_ENGINE: Option<accel::BlockEngine> = None;

/// Message of the fault raised in blocks stopped because another block faulted.
pub const ABORT_MESSAGE: &str = "stopped because another block faulted";

/// Warp-instructions a warp runs before the block scheduler checks the cancel flag and budget.
const SLICE: u32 = 8192;

/// Warp-instructions a warp runs without stopping (at a barrier, or done) before the block
/// scheduler lets the block's other warps run: a warp that spins on memory another warp of its
/// block will write (cooperative groups' multi-warp tiles, hand-written flags) must not wait
/// forever for warps that never get to run. Warps that stop sooner run one after another, as
/// before (so the order of their accesses, and of the checker's reports, does not change).
const RUN_BEFORE_SWITCH: u64 = 4 * SLICE as u64;

/// Number of translation caches (memory instructions map to one by their PC).
pub const CACHES: usize = 8;

/// Everything a launch shares between its workers (read-only apart from the atomics).
pub struct Ctx<'a> {
    pub prog: &'a Program,
    /// The program's compiled regions, when this launch uses them.
    pub jit: Option<&'a accel::Compiled>,
    pub files: &'a [String],
    pub global: &'a GlobalView,
    pub params: &'a [u8],
    pub grid: Dim3,
    pub block: Dim3,
    pub nthreads: u32,
    pub nwarps: u32,
    /// Blocks may run in the block tier (`block`): the kernel is eligible and the launch
    /// allows it.
    pub block_tier: bool,
    /// Blocks of the tier may replay a recorded block (`block::replay`; `Engines::replay`).
    #[cfg_attr(not(feature = "accel"), allow(dead_code))]
    pub block_replay: bool,
    /// Compiled loops may run lanes in gangs (`jit_run`; `Engines::gangs`).
    pub gangs: bool,
    /// The warps of a block may be run by different workers (`Program::warps_independent` and
    /// no dynamic shared memory): small launches then spread over the cores.
    pub split_blocks: bool,
    pub dyn_shared: u32,
    /// Static + dynamic shared bytes per block.
    pub shared_bytes: u32,
    pub check: bool,
    /// Bytes of call stack per thread (`LaunchConfig::stack_bytes`).
    pub stack_bytes: u32,
    /// The most the interpreter loop's build may use of the host CPU.
    pub host: crate::HostBuild,
    pub cancel: Option<&'a AtomicBool>,
    /// Raised when any block faults: the others stop soon after.
    pub abort: AtomicBool,
    pub budget: Option<u64>,
    pub executed: AtomicU64,
    /// Lanes that ran a loop in a gang (`jit_run`), added by each worker when it ends.
    pub ganged: AtomicU64,
    /// Blocks the block tier ran to their end, added by each worker when it ends.
    pub block_tier_blocks: AtomicU64,
    /// Of those, blocks run by replaying a recorded one.
    pub block_tier_replays: AtomicU64,
    /// The launch's counters, when it counts (`crate::counters`): then every block runs in
    /// the interpreter loop's counting build.
    pub counters: Option<&'a crate::counters::Shared>,
    /// The blocks to run (linear indices), when only some run (a sampled count,
    /// `counters::Sample::Blocks`); `None`: every block of the grid.
    pub only_blocks: Option<&'a [u64]>,
    /// The grid workspace and waits of a cooperative launch (`grid`); `None` otherwise.
    pub grid_sync: Option<&'a grid::GridSync>,
}

/// A fatal finding: the launch stops.
pub type Fault = Box<CheckReport>;

/// Why a warp stopped running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// All lanes exited.
    Done,
    /// Every live lane waits at a barrier.
    Blocked,
    /// Its instruction slice is used up.
    Yield,
}

/// One call frame of one lane.
#[derive(Debug, Clone)]
pub struct Frame {
    ret_pc: u32,
    site: u32,
    /// The function called (index into `Program::funcs`).
    callee: u32,
    /// The callee's registers and local bytes were saved on the lane's `saved_regs` and
    /// `saved_local` (recursive callees only).
    saved: bool,
    /// What the call charged the lane's call stack (`calls::frame_bytes`).
    bytes: u32,
}

/// One warp's state.
#[derive(Default)]
pub struct Warp {
    pub regs: Vec<[u64; 32]>,
    pub local: Vec<u8>,
    /// The running group: its PC and lanes.
    pub pc: u32,
    pub mask: u32,
    /// PCs of lanes outside the running group.
    pub lane_pc: [u32; 32],
    pub depth: [u16; 32],
    /// Lanes ready to run but not in the group.
    pub waiting: u32,
    pub exited: u32,
    pub at_bar: u32,
    /// Lanes waiting at a warp-collective instruction (at their `lane_pc`) for the other lanes
    /// of its member mask.
    pub sync_wait: u32,
    /// PC of the barrier instruction the `at_bar` lanes wait at.
    pub bar_pc: u32,
    /// Lowest PC of waiting lanes at the group's depth (u32::MAX: none).
    pub resched_pc: u32,
    pub frames: Vec<Vec<Frame>>,
    /// Bytes of each lane's call stack in use (the sum of its frames' `bytes`), checked against
    /// `Ctx::stack_bytes`.
    pub stack: [u32; 32],
    /// Per lane, the registers and local bytes that calls to recursive functions saved, the
    /// innermost last (one flat stack per lane rather than an allocation per frame).
    pub saved_regs: Vec<Vec<u64>>,
    pub saved_local: Vec<Vec<u8>>,
    /// A lane of this warp made a device-function call since the warp was last reset: only
    /// then do `frames`, `stack` and the saved stacks need clearing for the next block.
    pub called: bool,
    /// Counter of `bar.warp.sync`s, for the race checker.
    pub wepoch: u32,
    pub idx: u32,
    pub done: bool,
}

impl Warp {
    /// Move the running group to the waiting set (at its PC) and pick the next group.
    pub fn repick(&mut self) -> bool {
        set_lanes(&mut self.lane_pc, self.mask, self.pc);
        self.waiting |= self.mask;
        self.mask = 0;
        self.pick()
    }

    /// Before a warp-collective at `pc` with member mask `members`: gather the lanes already
    /// waiting there into the group. Returns false when other member lanes are still running
    /// elsewhere: then the group waits and another group was picked.
    pub fn gather(&mut self, pc: u32, members: u32) -> bool {
        let mut here = 0u32;
        alu::each(self.sync_wait, |l| {
            if self.lane_pc[l] == pc {
                here |= 1 << l;
            }
        });
        self.sync_wait &= !here;
        self.mask |= here;
        let coming = members & !self.exited & !self.mask & self.waiting;
        if coming == 0 {
            return true;
        }
        let pc0 = self.pc;
        alu::each(self.mask, |l| self.lane_pc[l] = pc0);
        self.sync_wait |= self.mask;
        self.mask = 0;
        self.pick();
        false
    }

    /// Choose the deepest, lowest-PC group among the waiting lanes. The common case (every
    /// waiting lane at one PC and depth) is inlined into the callers; the rest is `pick_slow`.
    #[inline(always)]
    pub fn pick(&mut self) -> bool {
        if self.waiting == 0 && self.sync_wait != 0 {
            // Nothing else can run: lanes waiting at collectives go on with whoever is there.
            self.waiting = self.sync_wait;
            self.sync_wait = 0;
        }
        if self.waiting == 0 {
            self.resched_pc = u32::MAX;
            return false;
        }
        // Fast path: every waiting lane is at the same PC and depth (reconverged).
        let l0 = self.waiting.trailing_zeros() as usize;
        let (p0, d0) = (self.lane_pc[l0], self.depth[l0]);
        // Lanes whose PC or depth differ from lane l0's (a branch-free loop that vectorises).
        let mut differ = 0u32;
        for l in 0..32 {
            differ |= ((self.lane_pc[l] != p0) as u32 | (self.depth[l] != d0) as u32) << l;
        }
        if differ & self.waiting == 0 {
            self.mask = self.waiting;
            self.waiting = 0;
            self.pc = p0;
            self.resched_pc = u32::MAX;
            return true;
        }
        self.pick_slow()
    }

    /// `pick` when the waiting lanes are at different PCs or depths.
    #[inline(never)]
    fn pick_slow(&mut self) -> bool {
        let mut best_d = 0u16;
        let mut best_pc = u32::MAX;
        alu::each(self.waiting, |l| {
            let (d, p) = (self.depth[l], self.lane_pc[l]);
            if d > best_d || (d == best_d && p < best_pc) {
                best_d = d;
                best_pc = p;
            }
        });
        let mut mask = 0u32;
        let mut next = u32::MAX;
        alu::each(self.waiting, |l| {
            if self.depth[l] == best_d {
                if self.lane_pc[l] == best_pc {
                    mask |= 1 << l;
                } else {
                    next = next.min(self.lane_pc[l]);
                }
            }
        });
        self.waiting &= !mask;
        self.mask = mask;
        self.pc = best_pc;
        self.resched_pc = next;
        true
    }

    /// Set every running lane's own PC (before changing them individually).
    pub fn spill_group(&mut self) {
        set_lanes(&mut self.lane_pc, self.mask, self.pc);
        self.waiting |= self.mask;
        self.mask = 0;
    }
}

/// A barrier's arrivals in the current block.
#[derive(Default, Clone)]
pub(super) struct BarState {
    /// Threads arrived (counted barriers: in whole warps).
    arrived: u32,
    count: Option<u32>,
    waiters: Vec<(u32, u32, Slot)>,
    red_true: u32,
    red_all: bool,
    red_any: bool,
    red_kind: Option<crate::ir::BarKind>,
}

/// Output of one block.
#[derive(Default)]
pub struct BlockOut {
    pub printf: String,
    pub reports: Vec<CheckReport>,
}

/// Runs blocks of one launch on the current thread.
pub struct Worker<'a> {
    pub ctx: &'a Ctx<'a>,
    /// Boxed, so that taking the running warp out (to borrow it beside `self`) moves a pointer.
    #[allow(clippy::vec_box)]
    warps: Vec<Box<Warp>>,
    /// Stands in `warps` for the warp taken out while it runs.
    spare: Option<Box<Warp>>,
    /// The block's shared memory, as little-endian 64-bit words.
    shared: Vec<u64>,
    shadow: Shadow,
    /// Last translation hits, one per instruction slot (pc modulo `CACHES`).
    cache: [Cache<'a>; CACHES],
    pub out: BlockOut,
    block: Dim3,
    /// Barrier epoch (bumped at block start and at each barrier release).
    epoch: u32,
    bars: Vec<BarState>,
    /// Instructions executed and not yet added to `ctx.executed`.
    pending: u64,
    /// The build of the interpreter loop to run.
    build: cpu::Build,
    /// Instructions left before the next checkpoint, and the checkpoint interval.
    fuel: u32,
    slice: u32,
    pub total: u64,
    /// Lanes this worker ran through gang functions (`jit_run`), and the gangs it tried and
    /// that were turned down in this launch.
    pub ganged: u64,
    #[cfg_attr(not(feature = "accel"), allow(dead_code))]
    gang_tries: u32,
    #[cfg_attr(not(feature = "accel"), allow(dead_code))]
    gang_rejects: u32,
    /// (kind, pc) of non-fatal reports already made by this worker.
    reported: std::collections::HashSet<(CheckKind, u32)>,
    /// Per PC, the compiled region to enter there (empty when the launch runs interpreted).
    #[cfg_attr(not(feature = "accel"), allow(dead_code))]
    jit_at: &'a [Option<accel::JitFn>],
    /// Per PC, the gang function of the loop that starts there (`jit_run`).
    #[cfg_attr(not(feature = "accel"), allow(dead_code))]
    jit_gang: &'a [Option<accel::JitFn>],
    #[cfg_attr(not(feature = "accel"), allow(dead_code))]
    jit_ctx: Option<Box<accel::JitCtx>>,
    /// The block accelerator (the block tier, when the launch uses it) and what the core keeps
    /// to undo its attempts (`accel`).
    seam: accel::BlockSeam<'a>,
    /// This worker's counts, when the launch counts (`crate::counters`).
    counting: Option<Box<crate::counters::Acc>>,
    /// The last read of the grid workspace in a cooperative launch: (pc, address, value)
    /// (`grid`: a re-read that finds it unchanged waits).
    ws_seen: Option<(u32, u64, u64)>,
}

/// What a register file's constant and special-register rows depend on: the program and the
/// launch's shape.
#[derive(Clone, Copy, PartialEq, Eq)]
struct RegsKey {
    uid: u64,
    block: Dim3,
    grid: Dim3,
    dyn_shared: u32,
    shared_bytes: u32,
    grid_ws: u64,
}

impl RegsKey {
    fn of(ctx: &Ctx) -> Self {
        RegsKey {
            uid: ctx.prog.uid,
            block: ctx.block,
            grid: ctx.grid,
            dyn_shared: ctx.dyn_shared,
            shared_bytes: ctx.shared_bytes,
            grid_ws: ctx.grid_sync.map_or(0, |g| g.ws),
        }
    }
}

type RegFiles = Vec<(Vec<[u64; 32]>, Vec<u8>)>;

thread_local! {
    /// The register files (and local memory) of the last worker on this thread, for the next
    /// launch of the same kernel with the same shape: filling them afresh (zeros, constants,
    /// thread coordinates) was most of a small launch's set-up.
    static SPARE_REGS: std::cell::RefCell<Option<(RegsKey, RegFiles)>> =
        const { std::cell::RefCell::new(None) };
}

impl Drop for Worker<'_> {
    fn drop(&mut self) {
        let nslots = self.ctx.prog.nslots as usize;
        let local = self.ctx.prog.local_bytes as usize * 32;
        let files: RegFiles = std::mem::take(&mut self.warps)
            .into_iter()
            .map(|w| (w.regs, w.local))
            .collect();
        // A warp left as a stand-in (after a panic) has no file: keep nothing then.
        if files
            .iter()
            .all(|(r, l)| r.len() == nslots && l.len() == local)
        {
            let key = RegsKey::of(self.ctx);
            SPARE_REGS.with(|c| *c.borrow_mut() = Some((key, files)));
        }
    }
}

impl<'a> Worker<'a> {
    pub fn new(ctx: &'a Ctx<'a>) -> Self {
        // The register files of the last launch on this thread when it ran the same program
        // with the same shape: their constants and special registers are in place (what a
        // kernel may read before writing is cleared at each block's start, `run_block_part`).
        let key = RegsKey::of(ctx);
        let reused = SPARE_REGS.with(|c| {
            c.borrow_mut()
                .take()
                .filter(|(k, files)| *k == key && files.len() == ctx.nwarps as usize)
                .map(|(_, files)| files)
        });
        let files = reused.unwrap_or_else(|| {
            // The (x, y, z) of the next thread, counted on without dividing (a division per
            // lane and component was most of a small launch's set-up).
            let mut at = [0u64; 3];
            (0..ctx.nwarps)
                .map(|wi| Self::fresh_file(ctx, wi, &mut at))
                .collect()
        });
        let warps = files
            .into_iter()
            .zip(0..)
            .map(|((regs, local), wi)| {
                Box::new(Warp {
                    regs,
                    local,
                    frames: vec![Vec::new(); 32],
                    saved_regs: vec![Vec::new(); 32],
                    saved_local: vec![Vec::new(); 32],
                    idx: wi,
                    ..Warp::default()
                })
            })
            .collect();
        let slice = match ctx.budget {
            Some(b) => (b.clamp(1, SLICE as u64)) as u32,
            None => SLICE,
        };
        Worker {
            ctx,
            warps,
            spare: None,
            shared: vec![0u64; (ctx.shared_bytes as usize).div_ceil(8)],
            shadow: Shadow::new(if ctx.check {
                ctx.shared_bytes as usize
            } else {
                0
            }),
            cache: Default::default(),
            out: BlockOut::default(),
            block: (0, 0, 0),
            epoch: 0,
            bars: vec![BarState::default(); 16],
            pending: 0,
            build: cpu::Build::new(ctx.host),
            fuel: slice,
            slice,
            total: 0,
            ganged: 0,
            gang_tries: 0,
            gang_rejects: 0,
            reported: Default::default(),
            jit_at: ctx.jit.map_or(&[], |j| j.entries()),
            jit_gang: match ctx.jit {
                Some(j) if ctx.gangs => j.gangs(),
                _ => &[],
            },
            jit_ctx: accel::region_ctx(ctx),
            seam: accel::BlockSeam::new(ctx),
            counting: ctx
                .counters
                .map(|c| Box::new(crate::counters::Acc::new(ctx.prog, c))),
            ws_seen: None,
        }
    }

    /// A new register file (constants and special registers filled in, the rest zero) and
    /// local memory for warp `wi`, whose first thread has coordinates `at` (moved on past its
    /// last).
    fn fresh_file(ctx: &Ctx, wi: u32, at: &mut [u64; 3]) -> (Vec<[u64; 32]>, Vec<u8>) {
        let prog = ctx.prog;
        let (bx, by, _) = ctx.block;
        let dims = |d: Dim3, k: u8| [d.0, d.1, d.2][k as usize] as u64;
        let mut regs = vec![[0u64; 32]; prog.nslots as usize];
        for &(s, v) in &prog.consts {
            regs[s as usize] = [v; 32];
        }
        let mut tid = [[0u64; 32]; 3];
        for l in 0..32 {
            for (k, t) in tid.iter_mut().enumerate() {
                t[l] = at[k];
            }
            at[0] += 1;
            if at[0] == bx as u64 {
                at[0] = 0;
                at[1] += 1;
                if at[1] == by as u64 {
                    at[1] = 0;
                    at[2] += 1;
                }
            }
        }
        let lanes = |f: fn(u64) -> u64| std::array::from_fn::<u64, 32, _>(|l| f(l as u64));
        for &(s, r) in &prog.sregs {
            regs[s as usize] = match r {
                SReg::Tid(k) => tid[(k as usize).min(2)],
                SReg::LaneId => lanes(|l| l),
                SReg::LaneMaskEq => lanes(|l| 1 << l),
                SReg::LaneMaskLt => lanes(|l| (1 << l) - 1),
                SReg::LaneMaskLe => lanes(|l| (1 << (l + 1)) - 1),
                SReg::LaneMaskGt => lanes(|l| !((1 << (l + 1)) - 1) & 0xFFFF_FFFF),
                SReg::LaneMaskGe => lanes(|l| !((1 << l) - 1) & 0xFFFF_FFFF),
                SReg::Ntid(k) => [dims(ctx.block, k); 32],
                SReg::Nctaid(k) => [dims(ctx.grid, k); 32],
                SReg::Ctaid(_) | SReg::SmId | SReg::GridId => [0; 32],
                SReg::WarpId => [wi as u64; 32],
                SReg::NWarpId => [ctx.nwarps as u64; 32],
                SReg::NSmId => [1; 32],
                SReg::DynSmem => [ctx.dyn_shared as u64; 32],
                SReg::TotalSmem => [ctx.shared_bytes as u64; 32],
                SReg::GridWs(k) => {
                    [ctx.grid_sync.map_or(0, |g| grid::GridSync::envreg(g.ws, k)); 32]
                }
            };
        }
        (regs, vec![0u8; prog.local_bytes as usize * 32])
    }

    /// (x, y, z) of thread `lane` of warp `wi`.
    pub fn thread_of(&self, wi: u32, lane: usize) -> Dim3 {
        let t = wi * 32 + lane as u32;
        let (bx, by, _) = self.ctx.block;
        (t % bx, (t / bx) % by, t / (bx * by))
    }

    /// Build a check report for thread `lane` of warp `wi` at instruction `pc`.
    #[allow(clippy::too_many_arguments)]
    pub fn report(
        &self,
        kind: CheckKind,
        wi: u32,
        lane: usize,
        pc: u32,
        address: u64,
        size: u32,
        space: &'static str,
        allocation: Option<String>,
        message: String,
    ) -> CheckReport {
        let prog = self.ctx.prog;
        let line = prog
            .code
            .get(pc as usize)
            .and_then(|i| crate::SourceLine::of(prog, self.ctx.files, i.loc));
        CheckReport {
            kind,
            kernel: prog.name.clone(),
            block: self.block,
            thread: self.thread_of(wi, lane),
            address,
            size,
            space,
            allocation,
            line,
            message,
        }
    }

    /// Record a non-fatal report once per (kind, instruction).
    pub fn note(&mut self, r: CheckReport, pc: u32) {
        if self.reported.insert((r.kind, pc)) && self.out.reports.len() < 100 {
            self.out.reports.push(r);
        }
    }

    /// Flush the instruction count; stop on cancel, budget or another block's fault.
    fn checkpoint(&mut self, wi: u32, pc: u32) -> Result<(), Fault> {
        let c = self.ctx;
        let total = c.executed.fetch_add(self.pending, Ordering::Relaxed) + self.pending;
        self.total += self.pending;
        self.pending = 0;
        if c.cancel.is_some_and(|f| f.load(Ordering::Relaxed)) {
            return Err(Box::new(self.report(
                CheckKind::Cancelled,
                wi,
                0,
                pc,
                0,
                0,
                "",
                None,
                "launch cancelled (interrupt)".into(),
            )));
        }
        if let Some(b) = c.budget {
            if total > b {
                return Err(Box::new(self.report(
                    CheckKind::BudgetExceeded,
                    wi,
                    0,
                    pc,
                    0,
                    0,
                    "",
                    None,
                    format!("instruction budget of {b} warp-instructions exceeded"),
                )));
            }
        }
        if c.abort.load(Ordering::Relaxed) {
            return Err(Box::new(self.report(
                CheckKind::Trap,
                wi,
                0,
                pc,
                0,
                0,
                "",
                None,
                ABORT_MESSAGE.into(),
            )));
        }
        Ok(())
    }

    /// Run block `lin` (linear block index) to completion; with `parts > 1` (only when
    /// `Ctx::split_blocks` allows it), only part `part` of its warps, in order.
    pub fn run_block_part(&mut self, lin: u64, part: u32, parts: u32) -> Result<(), Fault> {
        let (gx, gy, _) = self.ctx.grid;
        let (gx, gy) = (gx as u64, gy as u64);
        self.block = (
            (lin % gx) as u32,
            ((lin / gx) % gy) as u32,
            (lin / (gx * gy)) as u32,
        );
        let ctaid = [self.block.0, self.block.1, self.block.2];
        if let Some(c) = &mut self.counting {
            c.begin_block(lin);
        }
        if parts == 1 && self.seam.accel.is_some() && self.run_block_accelerated(ctaid) {
            return Ok(());
        }
        let prog = self.ctx.prog;
        let nthreads = self.ctx.nthreads;
        // The warps of this part; the others sit it out.
        let nw = self.warps.len() as u64;
        let (lo, hi) = (
            nw * part as u64 / parts as u64,
            nw * (part as u64 + 1) / parts as u64,
        );
        for w in &mut self.warps {
            if !(lo..hi).contains(&(w.idx as u64)) {
                w.mask = 0;
                w.done = true;
                continue;
            }
            for &(s, r) in &prog.sregs {
                if let SReg::Ctaid(k) = r {
                    w.regs[s as usize] = [ctaid[k as usize] as u64; 32];
                }
            }
            // A block starts with the registers and local memory it may read before writing
            // cleared, whatever ran on this worker before (another block, another launch).
            for &s in &prog.entry_live {
                w.regs[s as usize] = [0; 32];
            }
            if !w.local.is_empty() {
                w.local.fill(0);
            }
            let first = w.idx * 32;
            let live = if nthreads - first >= 32 {
                u32::MAX
            } else {
                (1u32 << (nthreads - first)) - 1
            };
            w.pc = 0;
            w.mask = live;
            w.exited = !live;
            w.waiting = 0;
            w.at_bar = 0;
            w.sync_wait = 0;
            w.resched_pc = u32::MAX;
            w.depth = [0; 32];
            w.done = false;
            if w.called {
                w.called = false;
                w.stack = [0; 32];
                for f in &mut w.frames {
                    f.clear();
                }
                for r in &mut w.saved_regs {
                    r.clear();
                }
                for b in &mut w.saved_local {
                    b.clear();
                }
            }
        }
        self.epoch = self.epoch.wrapping_add(1);
        self.ws_seen = None;
        if self.ctx.check {
            self.shadow.begin_block();
        }
        for b in &mut self.bars {
            let mut waiters = std::mem::take(&mut b.waiters);
            waiters.clear();
            *b = BarState {
                waiters,
                ..BarState::default()
            };
        }
        let nw = self.warps.len();
        loop {
            let mut ran = false;
            for wi in 0..nw {
                if self.warps[wi].done || self.warps[wi].mask == 0 {
                    continue;
                }
                ran = true;
                let stand_in = self.spare.take().unwrap_or_default();
                let mut w = std::mem::replace(&mut self.warps[wi], stand_in);
                let r = self.run_warp_until_stop(&mut w);
                self.spare = Some(std::mem::replace(&mut self.warps[wi], w));
                r?;
            }
            if self.warps.iter().all(|w| w.done) {
                break;
            }
            let _ = ran;
            if self.warps.iter().any(|w| !w.done && w.mask != 0) {
                continue;
            }
            if !self.release_uncounted() {
                let wi = self.warps.iter().position(|w| !w.done).unwrap_or(0);
                let pc =
                    self.warps[wi].lane_pc[self.warps[wi].at_bar.trailing_zeros() as usize & 31];
                return Err(Box::new(self.report(
                    CheckKind::DivergentBarrier,
                    wi as u32,
                    self.warps[wi].at_bar.trailing_zeros() as usize & 31,
                    pc.saturating_sub(1),
                    0,
                    0,
                    "",
                    None,
                    "deadlock: threads wait at a barrier that the other threads of the block never reach".into(),
                )));
            }
        }
        // The count stays pending (added to the launch's shared counter at the next checkpoint
        // or by `flush_count`): not an atomic add per block on a line every worker writes
        // (`pool::units_per_claim` has the measurement).
        Ok(())
    }

    /// Add the instructions not yet counted to the launch's counter and to `total`, and hand
    /// in the worker's counters when the launch counts (at the end of a worker's blocks).
    pub fn flush_count(&mut self) {
        self.ctx.executed.fetch_add(self.pending, Ordering::Relaxed);
        self.total += self.pending;
        self.pending = 0;
        if let (Some(acc), Some(shared)) = (self.counting.take(), self.ctx.counters) {
            shared.hand_in(*acc);
        }
    }

    fn run_warp_until_stop(&mut self, w: &mut Warp) -> Result<(), Fault> {
        let mut ran = 0u64;
        loop {
            // Fuel carries over between warps, so that code that keeps switching warps (loops
            // around barriers) still reaches the cancel and budget checks.
            let mut fuel = self.fuel;
            let r = self.run_warp(w, &mut fuel);
            self.pending += (self.fuel - fuel) as u64;
            ran += (self.fuel - fuel) as u64;
            self.fuel = fuel;
            if fuel == 0 {
                self.fuel = self.slice;
                self.checkpoint(w.idx, w.pc)?;
            }
            match r? {
                Stop::Yield => {
                    if ran >= RUN_BEFORE_SWITCH {
                        return Ok(()); // the block loop comes back to this warp
                    }
                }
                Stop::Done => {
                    w.done = true;
                    return Ok(());
                }
                Stop::Blocked => return Ok(()),
            }
        }
    }

    /// After the group's lanes left it (exit, barrier): continue with other lanes or stop.
    pub(super) fn after_group_left(w: &mut Warp) -> Option<Stop> {
        if w.mask != 0 {
            return None;
        }
        if w.pick() {
            None
        } else if w.at_bar != 0 {
            Some(Stop::Blocked)
        } else {
            Some(Stop::Done)
        }
    }
}

/// `pcs[l] = pc` for the lanes in `m` (a branch-free loop that vectorises; a plain fill for a
/// whole warp, the common case at barriers and rescheduling points).
#[inline(always)]
pub fn set_lanes(pcs: &mut [u32; 32], m: u32, pc: u32) {
    if m == u32::MAX {
        *pcs = [pc; 32];
        return;
    }
    for (l, p) in pcs.iter_mut().enumerate() {
        *p = if (m >> l) & 1 != 0 { pc } else { *p };
    }
}

/// Predicate slot → lane mask.
#[inline(always)]
pub(super) fn pred_mask(k: impl cpu::LaneMasks, p: &[u64; 32], neg: bool) -> u32 {
    let m = k.low_bits(p);
    if neg {
        !m
    } else {
        m
    }
}
