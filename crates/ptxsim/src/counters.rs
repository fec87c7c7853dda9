//! Hardware-like performance counters of a launch, collected only when asked
//! (`LaunchConfig::counters`), per launch and per PTX instruction (so per CUDA source line
//! through `.loc`, [`Counters::by_line`]).
//!
//! # Where they are counted
//!
//! In one place: the reference interpreter (`exec::run`), which calls [`Acc::count`] once per
//! warp instruction it issues, before executing it (so the addresses are those the instruction
//! uses even when it overwrites its address register). A counted launch runs every block in
//! the interpreter: the block tier, its replays and the JIT step aside, as they already do for
//! a block they cannot finish, and the warps of a block are never split between workers. The
//! interpreter runs a converged group of lanes over its mask in one go: that is one warp
//! instruction issued, with the group's lanes active; lanes that diverged issue again for each
//! group. A launch without counters runs a build of the interpreter loop without the hook (a
//! const generic parameter), so it pays nothing per instruction.
//!
//! Each worker accumulates into its own [`Acc`] (per-PC counts, and the global sectors its
//! blocks touched, in the order each block issued them); the accumulators are merged when the
//! launch ends, so the counts are the same for any number of workers.
//!
//! # What is counted, and how
//!
//! Counts are of PTX instructions, not of the SASS that ptxas would make of them: the
//! instruction mix and `inst_executed` differ from Nsight Compute's by what ptxas adds (address
//! arithmetic it folds, multi-instruction sequences such as IEEE division) or removes. Memory
//! requests, sectors, wavefronts and atomics are per memory instruction and match the
//! hardware's counts for the same accesses.
//!
//! - **Instructions**: every issue of a warp instruction counts once in `inst_executed`, its
//!   group's lanes in `thread_inst_executed` and the lanes whose guard predicate holds in
//!   `thread_inst_executed_pred_on`; the mix by kind ([`InstKind`]) follows from each PC's
//!   kind. A `bra` whose active lanes split between taken and not taken counts in
//!   `branch_divergent`.
//! - **Global memory**: a warp-level load or store with at least one active lane is one
//!   request (a vector access, `ld.global.v4.f32`, too); its sectors are the distinct 32-byte
//!   aligned segments that the active lanes' byte ranges `[addr, addr + size)` touch (a
//!   coalesced f32 load: 4, strided by 32 floats: 32, f64: 8, `float4`: 16, all lanes at one
//!   address: 1, shifted by one float: 5). A generic access is split by the state space of
//!   each lane's address. `__constant__` loads count as global loads (ptxsim keeps constant
//!   memory in global memory). Local memory counts requests only (the hardware interleaves it
//!   per thread, so its accesses are coalesced by construction).
//! - **Shared memory**: one request per warp-level shared load, store or atomic; wavefronts
//!   are the passes the 32 banks of 4 bytes need: within a pass, the largest number of
//!   distinct 4-byte words any one bank holds (lanes reading the same word share it). An
//!   access wider than 4 bytes is processed in phases, as on the GPU: 8-byte accesses by
//!   half-warps, 16-byte accesses by quarter-warps; each phase with an active lane is counted
//!   this way and the phases add up (a conflict-free f64 access: 2 wavefronts, `float4`: 4).
//!   Bank conflicts are wavefronts minus requests. (The GPU merges some phases, e.g. two
//!   half-warps reading the same 64-bit words; this model does not.)
//! - **Atomics**: requests (warp-level `atom`/`red` with an active lane), active lanes, and per
//!   request the largest number of active lanes that hit one address (the updates the unit
//!   serialises), summed over requests; global atomics also count their distinct sectors.
//! - **Barriers**: `bar`/`barrier` instructions issued (per warp group that reaches one).
//! - **Tensor cores**: `wmma`, `mma.sync` and `ldmatrix` count as instructions of kind
//!   [`InstKind::Tensor`] (`smsp__inst_executed_pipe_tensor`); the memory that `wmma.load`,
//!   `wmma.store` and `ldmatrix` access is not counted in requests, sectors or the L2 model.
//! - **Launch**: blocks, warps and threads launched.
//! - **DRAM bytes**, from a model of the L2 cache, below.
//!
//! # The L2 model
//!
//! Every global sector a request touches is one L2 access: a load reads it, a store writes
//! it, an atomic reads and writes it. After the launch, the accesses run through a cache of
//! `CounterConfig::l2_bytes`: 128-byte lines of four 32-byte sectors, `l2_ways`-way set
//! associative (sets chosen by a hash of the line address), least-recently-used replacement
//! by line, valid and dirty bits per sector. A load or atomic of a sector that is not valid
//! reads 32 bytes from DRAM; a store allocates its sector without reading it (as if it wrote
//! the whole sector) and dirties it; evicting a line writes its dirty sectors to DRAM, and so
//! does the flush at the end of the launch. Blocks feed the cache in block-index order: a
//! deterministic stand-in for the GPU, where blocks run concurrently on many SMs. It ignores
//! the GPU's partitioned L2 (one cache of the whole size), partial-sector writes (a store of
//! 4 bytes in a sector later evicted counts as 32 bytes written, as the GPU writes back
//! sectors with byte masks only sometimes) and prefetching; unless `CounterConfig::warm` is
//! set, each counted launch starts with an empty L2.
//!
//! Within a block, the records are replayed in lockstep order: by each warp's memory
//! instructions so far, then by warp (the interpreter runs one warp for a while before the
//! next; the GPU's warps advance together). Before L2, loads pass through an L1 model when
//! `CounterConfig::l1_bytes_per_block` is set: the block's share of its SM's L1, sectors
//! allocated by loads; a hit does not reach L2 (`Counters::l1_hit_sectors`). With
//! `CounterConfig::warm`, the records run through the L2 model twice and the second pass is
//! counted, without the final flush: the L2 as a repeat of the launch finds it.
//!
//! The model needs 12 bytes per recorded access. A launch whose blocks make more than
//! `CounterConfig::max_recorded_accesses` accesses falls back to counting distinct sectors
//! (each sector read once, each written sector written once: a cache as large as the data),
//! sets `Counters::l2_exact` to false, and leaves the per-PC DRAM bytes at 0.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::ir::{FOp, FTy, Inst, MemSpace, Op, Program, Slot, UFn, NONE};
use crate::mem::{LOCAL_WIN, PARAM_WIN, SHARED_WIN, WIN_SIZE};
use crate::SourceLine;

/// What to count, and the L2 model's geometry (`LaunchConfig::counters`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterConfig {
    /// Bytes of L2 cache the DRAM model simulates (the target GPU's L2 size).
    pub l2_bytes: u64,
    /// Ways per set of the L2 model.
    pub l2_ways: u32,
    /// Global sector accesses the L2 model records (8 bytes each) before falling back to
    /// counting distinct sectors (`Counters::l2_exact`).
    pub max_recorded_accesses: u64,
    /// Which blocks run and are counted: all of them (the default), or a sample whose counts
    /// are scaled to the grid ([`crate::sampling`]).
    pub sample: Sample,
    /// Count the L2 as the launch finds it when it follows a launch of itself (repeated
    /// launches, as `%time` and most published timings run them): the recorded accesses run
    /// through the L2 model twice and the second pass is counted, without the final flush
    /// (in a steady stream of launches dirty lines leave L2 as later launches evict them).
    /// Off: a cold L2, flushed at the end.
    pub warm: bool,
    /// Bytes of L1 data cache each block may use (its SM's L1 less shared memory, shared by
    /// the blocks resident on the SM); 0: no L1, every load goes to L2.
    pub l1_bytes_per_block: u64,
}

/// Which of a counted launch's blocks run ([`crate::sampling`] says how a sample is chosen and
/// scaled).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Sample {
    /// Every block.
    #[default]
    Full,
    /// Every block when that is cheap, else whole waves of resident blocks at several places
    /// in the grid, grown until the per-block figures settle: [`crate::sampling::plan`].
    Auto {
        /// Blocks the GPU holds at once (SMs × resident blocks per SM): one wave.
        wave_blocks: u64,
        /// What the counted blocks may cost, about (the time a sample may take): warp
        /// instructions plus twice the global sector accesses.
        budget: u64,
    },
    /// Exactly these blocks (linear indices, ascending, each below the grid's block count);
    /// the counts are those of these blocks, not scaled (`Counters::sampled` says so).
    Blocks(std::sync::Arc<[u64]>),
}

impl CounterConfig {
    /// Counters with an L2 of `l2_bytes`, 16 ways, and at most 64 M recorded accesses
    /// (512 MiB).
    pub fn new(l2_bytes: u64) -> Self {
        CounterConfig {
            l2_bytes,
            l2_ways: 16,
            max_recorded_accesses: 64 << 20,
            sample: Sample::Full,
            warm: false,
            l1_bytes_per_block: 0,
        }
    }
}

impl Default for CounterConfig {
    /// An A100's 40 MiB L2.
    fn default() -> Self {
        CounterConfig::new(40 << 20)
    }
}

/// The kind of a PTX instruction, for the instruction mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InstKind {
    /// f32 arithmetic, comparisons and min/max.
    Fp32,
    /// f64 arithmetic, comparisons and min/max.
    Fp64,
    /// f16/bf16 arithmetic.
    Fp16,
    /// Integer arithmetic, logic, shifts, integer comparisons and selects.
    Integer,
    /// Conversions between types (`cvt`).
    Conversion,
    /// The special function unit: approximate `sqrt`, `rsqrt`, `rcp`, `sin`, `cos`, `lg2`,
    /// `ex2`, `tanh`.
    Sfu,
    /// Loads and stores other than shared memory (global, local, constant, generic,
    /// `cp.async`, `ld.param` through a register).
    LoadStore,
    /// Shared-memory loads and stores.
    Shared,
    /// Atomics and reductions (`atom`, `red`) in any state space.
    Atomic,
    /// `bra`, `call`, `ret`, `exit`.
    Branch,
    /// `bar`/`barrier`, `bar.warp.sync`.
    Barrier,
    /// Warp collectives: `shfl`, `vote`, `match`, `redux`, `activemask`, `elect`.
    Warp,
    /// Tensor-core instructions: `wmma.load/store/mma`, `mma.sync`, `ldmatrix` (their
    /// memory accesses are not counted as requests or sectors).
    Tensor,
    /// Moves, kernel-parameter loads (`ld.param` at a constant offset, which the GPU reads
    /// from its constant bank as operands), address conversions, clock reads, `nop`, `trap`.
    Other,
}

impl InstKind {
    /// The kind of instruction `op`.
    pub(crate) fn of(op: &Op) -> InstKind {
        let fty = |t: FTy| match t {
            FTy::F32 => InstKind::Fp32,
            FTy::F64 => InstKind::Fp64,
            FTy::F16 | FTy::BF16 => InstKind::Fp16,
        };
        match *op {
            Op::Nop | Op::Mov | Op::Pack { .. } | Op::Unpack { .. } | Op::LdK { .. } => {
                InstKind::Other
            }
            Op::Cvta { .. } | Op::Isspacep(_) | Op::Trap => InstKind::Other,
            Op::Clock { .. } | Op::GlobalTimer { .. } => InstKind::Other,
            Op::FAdd32 | Op::FSub32 | Op::FMul32 | Op::FFma32 | Op::FDiv32 => InstKind::Fp32,
            Op::FAdd64 | Op::FSub64 | Op::FMul64 | Op::FFma64 | Op::FDiv64 => InstKind::Fp64,
            Op::FArith { op, ty, .. } => match op {
                FOp::Sqrt | FOp::Rcp if ty == FTy::F32 => InstKind::Sfu,
                _ => fty(ty),
            },
            Op::FUnary { f, ty, .. } => match f {
                UFn::Abs | UFn::Neg => fty(ty),
                _ => InstKind::Sfu,
            },
            Op::FMin { ty, .. } | Op::FMax { ty, .. } | Op::Testp { ty, .. } => fty(ty),
            Op::Copysign(ty) | Op::SetpF { ty, .. } | Op::SetF { ty, .. } => fty(ty),
            Op::Slct { cf32: true, .. } => InstKind::Fp32,
            Op::CvtII { .. } | Op::CvtIF { .. } | Op::CvtFI { .. } | Op::CvtFF { .. } => {
                InstKind::Conversion
            }
            Op::Ld {
                space: MemSpace::Shared,
                ..
            }
            | Op::St {
                space: MemSpace::Shared,
                ..
            } => InstKind::Shared,
            Op::Ld { .. } | Op::St { .. } | Op::CpAsync { .. } => InstKind::LoadStore,
            Op::Atom { .. } => InstKind::Atomic,
            Op::Bra | Op::Call | Op::Ret | Op::Exit => InstKind::Branch,
            Op::Bar(_) | Op::WarpSync => InstKind::Barrier,
            Op::Shfl(_)
            | Op::Vote { .. }
            | Op::Activemask
            | Op::Elect
            | Op::MatchAny { .. }
            | Op::MatchAll { .. }
            | Op::Redux { .. } => InstKind::Warp,
            Op::Tensor => InstKind::Tensor,
            Op::CvtTf32(_) => InstKind::Conversion,
            _ => InstKind::Integer,
        }
    }
}

/// Counts of one PTX instruction, one source line or the whole launch. Each field names the
/// Nsight Compute metric it corresponds to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstCounts {
    /// Warp instructions issued (`smsp__inst_executed.sum`).
    pub inst_executed: u64,
    /// The SASS instructions those PTX instructions become, about: one each, except integer
    /// division and remainder and IEEE division and square root, which ptxas expands into
    /// sequences ([`sass_per_ptx`]). What the time model's issue term counts.
    pub sass_inst_estimate: u64,
    /// Active threads summed over the issued warp instructions, predicated off or not
    /// (`smsp__thread_inst_executed.sum`).
    pub thread_inst_executed: u64,
    /// Of those, threads whose guard predicate held
    /// (`smsp__thread_inst_executed_pred_on.sum`).
    pub thread_inst_executed_pred_on: u64,
    /// Branches whose active threads went both ways
    /// (`smsp__sass_branch_targets_threads_divergent.sum`).
    pub branch_divergent: u64,
    /// Global load requests, one per warp-level load
    /// (`l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum`).
    pub global_ld_requests: u64,
    /// Of the global loads and atomics with a result, those that start a batch of loads in
    /// flight together: the warp waits one memory latency per batch (memory-level
    /// parallelism). A batch ends where ptxas's schedule would wait for it: a load whose
    /// address depends on it, a barrier, a loop's next iteration, a global store of a value
    /// that depends on it (`Acc::track_batches`).
    pub global_ld_batches: u64,
    /// 32-byte sectors those requests touched (`l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum`).
    pub global_ld_sectors: u64,
    /// Bytes the threads asked for (for the sector efficiency: `global_ld_bytes /
    /// (32 * global_ld_sectors)`, ncu's `smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct`).
    pub global_ld_bytes: u64,
    /// Global store requests (`l1tex__t_requests_pipe_lsu_mem_global_op_st.sum`).
    pub global_st_requests: u64,
    /// Sectors of global stores (`l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum`).
    pub global_st_sectors: u64,
    /// Bytes the threads stored.
    pub global_st_bytes: u64,
    /// Global atomic and reduction requests (`l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum`
    /// plus `..._op_red.sum`).
    pub global_atom_requests: u64,
    /// Sectors of those (`l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum` plus `_op_red`).
    pub global_atom_sectors: u64,
    /// Active lanes of global atomics (`smsp__sass_thread_inst_executed_op_global_atom.sum`, with `red`).
    pub global_atom_lanes: u64,
    /// Per global atomic request, the most active lanes that hit one address, summed: the
    /// updates the L2's atomic unit performs one after another.
    pub global_atom_serialized: u64,
    /// Local-memory loads and stores (spills, local arrays)
    /// (`l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum`, `..._op_st.sum`).
    pub local_ld_requests: u64,
    pub local_st_requests: u64,
    /// Shared loads issued with an active lane (`sm__sass_inst_executed_op_shared_ld.sum`).
    pub shared_ld_requests: u64,
    /// Their wavefronts (`l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum`).
    pub shared_ld_wavefronts: u64,
    /// Shared stores (`sm__sass_inst_executed_op_shared_st.sum`).
    pub shared_st_requests: u64,
    /// Their wavefronts (`l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum`).
    pub shared_st_wavefronts: u64,
    /// Shared atomics (`sm__sass_inst_executed_op_shared_atom.sum`).
    pub shared_atom_requests: u64,
    /// Active lanes of shared atomics.
    pub shared_atom_lanes: u64,
    /// Per shared atomic request, the most active lanes that hit one address, summed.
    pub shared_atom_serialized: u64,
    /// Wavefronts of the shared atomics (bank passes, as for loads).
    pub shared_atom_wavefronts: u64,
    /// Barrier instructions issued (`smsp__inst_executed_op_barrier.sum`).
    pub barriers: u64,
    /// Bytes read from DRAM because this instruction's accesses missed in the L2 model
    /// (`dram__bytes_read.sum`, attributed; 0 when `Counters::l2_exact` is false).
    pub dram_read_bytes: u64,
}

impl InstCounts {
    /// Every count, mutably, in one order (what `scale` and `add` go through).
    fn fields_mut(&mut self) -> [&mut u64; 28] {
        [
            &mut self.inst_executed,
            &mut self.sass_inst_estimate,
            &mut self.global_ld_batches,
            &mut self.thread_inst_executed,
            &mut self.thread_inst_executed_pred_on,
            &mut self.branch_divergent,
            &mut self.global_ld_requests,
            &mut self.global_ld_sectors,
            &mut self.global_ld_bytes,
            &mut self.global_st_requests,
            &mut self.global_st_sectors,
            &mut self.global_st_bytes,
            &mut self.global_atom_requests,
            &mut self.global_atom_sectors,
            &mut self.global_atom_lanes,
            &mut self.global_atom_serialized,
            &mut self.local_ld_requests,
            &mut self.local_st_requests,
            &mut self.shared_ld_requests,
            &mut self.shared_ld_wavefronts,
            &mut self.shared_st_requests,
            &mut self.shared_st_wavefronts,
            &mut self.shared_atom_requests,
            &mut self.shared_atom_lanes,
            &mut self.shared_atom_serialized,
            &mut self.shared_atom_wavefronts,
            &mut self.barriers,
            &mut self.dram_read_bytes,
        ]
    }

    /// Every count multiplied by `f`, rounded (a sample's counts scaled to its grid).
    pub(crate) fn scale(&mut self, f: f64) {
        for x in self.fields_mut() {
            *x = (*x as f64 * f).round() as u64;
        }
    }

    fn add(&mut self, o: &InstCounts) {
        let mut o = o.clone(); // (28 words; `fields_mut` is the one list of the counts)
        for (x, y) in self.fields_mut().into_iter().zip(o.fields_mut()) {
            *x += *y;
        }
    }

    /// Average active threads per issued warp instruction
    /// (`smsp__thread_inst_executed_per_inst_executed.ratio`; 0 without instructions).
    pub fn active_threads_per_inst(&self) -> f64 {
        ratio(self.thread_inst_executed, self.inst_executed)
    }

    /// Shared-load bank conflicts, wavefronts beyond one per request
    /// (`l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum`).
    pub fn shared_ld_bank_conflicts(&self) -> u64 {
        self.shared_ld_wavefronts - self.shared_ld_requests
    }

    /// Shared-store bank conflicts
    /// (`l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum`).
    pub fn shared_st_bank_conflicts(&self) -> u64 {
        self.shared_st_wavefronts - self.shared_st_requests
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Warp instructions issued, by kind (`smsp__inst_executed_pipe_*`, `sm__sass_inst_executed_op_*`
/// are their ncu neighbours).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstMix {
    pub fp32: u64,
    pub fp64: u64,
    pub fp16: u64,
    pub integer: u64,
    pub conversion: u64,
    pub sfu: u64,
    pub load_store: u64,
    pub shared: u64,
    pub atomic: u64,
    pub branch: u64,
    pub barrier: u64,
    pub warp: u64,
    pub tensor: u64,
    pub other: u64,
}

impl InstMix {
    fn scale(&mut self, f: f64) {
        for x in [
            &mut self.fp32,
            &mut self.fp64,
            &mut self.fp16,
            &mut self.integer,
            &mut self.conversion,
            &mut self.sfu,
            &mut self.load_store,
            &mut self.shared,
            &mut self.atomic,
            &mut self.branch,
            &mut self.barrier,
            &mut self.warp,
            &mut self.tensor,
            &mut self.other,
        ] {
            *x = (*x as f64 * f).round() as u64;
        }
    }

    fn add(&mut self, kind: InstKind, n: u64) {
        *match kind {
            InstKind::Fp32 => &mut self.fp32,
            InstKind::Fp64 => &mut self.fp64,
            InstKind::Fp16 => &mut self.fp16,
            InstKind::Integer => &mut self.integer,
            InstKind::Conversion => &mut self.conversion,
            InstKind::Sfu => &mut self.sfu,
            InstKind::LoadStore => &mut self.load_store,
            InstKind::Shared => &mut self.shared,
            InstKind::Atomic => &mut self.atomic,
            InstKind::Branch => &mut self.branch,
            InstKind::Barrier => &mut self.barrier,
            InstKind::Warp => &mut self.warp,
            InstKind::Tensor => &mut self.tensor,
            InstKind::Other => &mut self.other,
        } += n;
    }
}

/// The counts of one PTX instruction (one that issued at least once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcCounters {
    /// Index of the instruction in the kernel's lowered code (device functions included).
    pub pc: u32,
    pub kind: InstKind,
    /// The CUDA source line of the instruction (from `.loc`), when the PTX has line information.
    pub line: Option<SourceLine>,
    pub counts: InstCounts,
}

/// The counts of one CUDA source line ([`Counters::by_line`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineCounters {
    /// `None` gathers the instructions without line information.
    pub line: Option<SourceLine>,
    pub counts: InstCounts,
    pub mix: InstMix,
}

/// The counters of one launch (`LaunchReport::counters`).
#[derive(Debug, Clone, PartialEq)]
pub struct Counters {
    /// Blocks launched (`sm__ctas_launched.sum`).
    pub blocks: u64,
    /// Warps launched (`sm__warps_launched.sum`).
    pub warps: u64,
    /// Threads launched (`launch__thread_count`).
    pub threads: u64,
    /// The sum over every instruction (`dram_read_bytes`: the L2 model's total, also when it
    /// fell back to distinct sectors).
    pub total: InstCounts,
    /// Warp instructions issued by kind.
    pub mix: InstMix,
    /// Sector accesses the L2 model saw (loads, stores and atomics; `lts__t_sectors.sum`).
    pub l2_sectors: u64,
    /// Of those, sectors that were valid in the model (`lts__t_sectors_lookup_hit.sum`; 0 when
    /// `l2_exact` is false).
    pub l2_hit_sectors: u64,
    /// Bytes read from DRAM (`dram__bytes_read.sum`).
    pub dram_read_bytes: u64,
    /// Bytes written to DRAM, evictions and the final flush (`dram__bytes_write.sum`).
    pub dram_write_bytes: u64,
    /// The L2 size modelled.
    pub l2_bytes: u64,
    /// Whether the L2 model ran; false when the launch made more than
    /// `CounterConfig::max_recorded_accesses` accesses and DRAM bytes count distinct sectors.
    pub l2_exact: bool,
    /// Every instruction that issued, by PC.
    pub per_pc: Vec<PcCounters>,
    /// Global load sectors served by the L1 model (`CounterConfig::l1_bytes_per_block`;
    /// `l1tex__t_sector_hit_rate` is this over the load sectors); they do not reach L2.
    pub l1_hit_sectors: u64,
    /// Distinct 128-byte lines that global atomics updated (0 when `l2_exact` is false): how
    /// many places the launch's atomics contend for.
    pub atom_lines: u64,
    /// Set when only some blocks ran ([`Sample`]); `None` when every block was counted.
    pub sampled: Option<Sampled>,
    /// For a launch of some blocks (`Sample::Blocks`): the distinct 4 KiB pages of global
    /// memory its loads and atomics read, and those its stores and atomics wrote, sorted
    /// (the sampling's DRAM cap finds the allocations they belong to). Empty otherwise.
    pub read_pages: Vec<u64>,
    pub written_pages: Vec<u64>,
    /// Per block that ran, when only some did: (linear block index, warp instructions,
    /// global sectors), in block order. Empty for a launch that counted every block.
    pub per_block: Vec<BlockFigures>,
}

/// What a sampled count covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampled {
    /// Blocks counted.
    pub blocks: u64,
    /// Blocks in the grid.
    pub of: u64,
    /// Whether the counts are scaled to the grid (`Sample::Auto`); false for `Sample::Blocks`,
    /// whose counts are those of the blocks run.
    pub scaled: bool,
    /// The sample had to grow because its blocks differed (`crate::sampling`).
    pub grew: bool,
}

/// One counted block's figures (`Counters::per_block`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockFigures {
    pub block: u64,
    pub inst_executed: u64,
    pub sectors: u64,
}

impl Counters {
    /// The counts of a sample of `self.blocks` blocks scaled to a grid of `of` blocks of
    /// `threads_per_block` threads: every count times `of / blocks`, DRAM bytes read and
    /// written at most `dram_cap` (when the launch's data fits in L2, [`crate::sampling`]).
    pub(crate) fn scale_to_grid(
        &mut self,
        of: u64,
        threads_per_block: u64,
        dram_cap: Option<(u64, u64)>,
        grew: bool,
    ) {
        let k = self.blocks.max(1);
        let f = of as f64 / k as f64;
        self.total.scale(f);
        self.mix.scale(f);
        for p in &mut self.per_pc {
            p.counts.scale(f);
        }
        let sc = |x: u64| (x as f64 * f).round() as u64;
        self.l2_sectors = sc(self.l2_sectors);
        self.l2_hit_sectors = sc(self.l2_hit_sectors);
        self.l1_hit_sectors = sc(self.l1_hit_sectors);
        self.dram_read_bytes = sc(self.dram_read_bytes);
        self.dram_write_bytes = sc(self.dram_write_bytes);
        if let Some((read_cap, write_cap)) = dram_cap {
            if self.dram_read_bytes > read_cap {
                let r = read_cap as f64 / self.dram_read_bytes as f64;
                for p in &mut self.per_pc {
                    p.counts.dram_read_bytes = (p.counts.dram_read_bytes as f64 * r) as u64;
                }
                // The sectors no longer read from DRAM hit in L2.
                let fewer = (self.dram_read_bytes - read_cap) / 32;
                self.l2_hit_sectors = (self.l2_hit_sectors + fewer).min(self.l2_sectors);
                self.dram_read_bytes = read_cap;
            }
            self.dram_write_bytes = self.dram_write_bytes.min(write_cap);
        }
        self.total.dram_read_bytes = self.dram_read_bytes;
        self.blocks = of;
        self.warps = of * threads_per_block.div_ceil(32);
        self.threads = of * threads_per_block;
        self.sampled = Some(Sampled {
            blocks: k,
            of,
            scaled: true,
            grew,
        });
    }

    /// Per-PC counts folded by CUDA source line, in order of file and line (instructions
    /// without line information last).
    pub fn by_line(&self) -> Vec<LineCounters> {
        let mut out: Vec<LineCounters> = Vec::new();
        let mut at: std::collections::HashMap<Option<(String, u32)>, usize> = Default::default();
        for p in &self.per_pc {
            let key = p.line.as_ref().map(|l| (l.file.clone(), l.line));
            let k = *at.entry(key).or_insert_with(|| {
                out.push(LineCounters {
                    line: p.line.as_ref().map(|l| SourceLine {
                        column: 0,
                        ..l.clone()
                    }),
                    counts: InstCounts::default(),
                    mix: InstMix::default(),
                });
                out.len() - 1
            });
            out[k].counts.add(&p.counts);
            out[k].mix.add(p.kind, p.counts.inst_executed);
        }
        out.sort_by(|a, b| match (&a.line, &b.line) {
            (Some(x), Some(y)) => (&x.file, x.line).cmp(&(&y.file, y.line)),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        });
        out
    }

    /// The counts of source line `line` of any file (summed over files), if it issued.
    pub fn line(&self, line: u32) -> Option<LineCounters> {
        let mut found: Option<LineCounters> = None;
        for l in self.by_line() {
            if l.line.as_ref().is_some_and(|s| s.line == line) {
                match &mut found {
                    Some(f) => {
                        f.counts.add(&l.counts);
                        let m = l.mix;
                        for (k, n) in [
                            (InstKind::Fp32, m.fp32),
                            (InstKind::Fp64, m.fp64),
                            (InstKind::Fp16, m.fp16),
                            (InstKind::Integer, m.integer),
                            (InstKind::Conversion, m.conversion),
                            (InstKind::Sfu, m.sfu),
                            (InstKind::LoadStore, m.load_store),
                            (InstKind::Shared, m.shared),
                            (InstKind::Atomic, m.atomic),
                            (InstKind::Branch, m.branch),
                            (InstKind::Barrier, m.barrier),
                            (InstKind::Warp, m.warp),
                            (InstKind::Tensor, m.tensor),
                            (InstKind::Other, m.other),
                        ] {
                            f.mix.add(k, n);
                        }
                    }
                    None => found = Some(l),
                }
            }
        }
        found
    }

    /// The counters under Nsight Compute's metric names.
    pub fn ncu_metrics(&self) -> Vec<(&'static str, f64)> {
        let t = &self.total;
        let m = &self.mix;
        let f = |x: u64| x as f64;
        vec![
            ("launch__grid_size", f(self.blocks)),
            ("launch__thread_count", f(self.threads)),
            ("sm__ctas_launched.sum", f(self.blocks)),
            ("sm__warps_launched.sum", f(self.warps)),
            ("smsp__inst_executed.sum", f(t.inst_executed)),
            ("smsp__thread_inst_executed.sum", f(t.thread_inst_executed)),
            (
                "smsp__thread_inst_executed_pred_on.sum",
                f(t.thread_inst_executed_pred_on),
            ),
            (
                "smsp__thread_inst_executed_per_inst_executed.ratio",
                t.active_threads_per_inst(),
            ),
            (
                "smsp__sass_branch_targets_threads_divergent.sum",
                f(t.branch_divergent),
            ),
            ("smsp__inst_executed_op_barrier.sum", f(t.barriers)),
            ("sm__sass_inst_executed_op_fp32.sum", f(m.fp32)),
            ("sm__sass_inst_executed_op_fp64.sum", f(m.fp64)),
            ("sm__sass_inst_executed_op_fp16.sum", f(m.fp16)),
            ("sm__sass_inst_executed_op_integer.sum", f(m.integer)),
            ("sm__sass_inst_executed_op_conversion.sum", f(m.conversion)),
            ("smsp__inst_executed_pipe_xu.sum", f(m.sfu)),
            ("smsp__inst_executed_pipe_tensor.sum", f(m.tensor)),
            ("sm__sass_inst_executed_op_branch.sum", f(m.branch)),
            (
                "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
                f(t.global_ld_requests),
            ),
            (
                "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
                f(t.global_ld_sectors),
            ),
            (
                "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum_per_request",
                ratio(t.global_ld_sectors, t.global_ld_requests),
            ),
            (
                "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
                f(t.global_st_requests),
            ),
            (
                "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
                f(t.global_st_sectors),
            ),
            (
                "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum_per_request",
                ratio(t.global_st_sectors, t.global_st_requests),
            ),
            (
                "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
                f(t.global_atom_requests),
            ),
            (
                "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum",
                f(t.global_atom_sectors),
            ),
            (
                "smsp__sass_thread_inst_executed_op_global_atom.sum",
                f(t.global_atom_lanes),
            ),
            (
                "l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum",
                f(t.local_ld_requests),
            ),
            (
                "l1tex__t_requests_pipe_lsu_mem_local_op_st.sum",
                f(t.local_st_requests),
            ),
            (
                "sm__sass_inst_executed_op_shared_ld.sum",
                f(t.shared_ld_requests),
            ),
            (
                "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                f(t.shared_ld_wavefronts),
            ),
            (
                "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                f(t.shared_ld_bank_conflicts()),
            ),
            (
                "sm__sass_inst_executed_op_shared_st.sum",
                f(t.shared_st_requests),
            ),
            (
                "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
                f(t.shared_st_wavefronts),
            ),
            (
                "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
                f(t.shared_st_bank_conflicts()),
            ),
            (
                "sm__sass_inst_executed_op_shared_atom.sum",
                f(t.shared_atom_requests),
            ),
            ("lts__t_sectors.sum", f(self.l2_sectors)),
            ("lts__t_sectors_lookup_hit.sum", f(self.l2_hit_sectors)),
            (
                "lts__t_sectors_lookup_miss.sum",
                f(self.l2_sectors - self.l2_hit_sectors.min(self.l2_sectors)),
            ),
            ("dram__bytes_read.sum", f(self.dram_read_bytes)),
            ("dram__bytes_write.sum", f(self.dram_write_bytes)),
        ]
    }
}

// ---------------------------------------------------------------------------------------------
// Accumulation (crate-private).

/// A block's share of its SM's L1 data cache: 32-byte sectors, 4-way set associative,
/// least-recently-used, emptied when the next block starts (blocks of one SM share an L1 on
/// the GPU; this model gives each its share alone). Loads allocate; stores and atomics go
/// to L2 without touching it.
struct L1 {
    sets: usize,
    tag: Vec<u64>,
    used: Vec<u64>,
    block: u64,
    clock: u64,
}

const L1_WAYS: usize = 4;

impl L1 {
    fn new(bytes: u64) -> L1 {
        let sets = (bytes / 32 / L1_WAYS as u64) as usize;
        L1 {
            sets,
            tag: vec![0; sets * L1_WAYS],
            used: vec![0; sets * L1_WAYS],
            block: 0,
            clock: 0,
        }
    }

    fn next_block(&mut self) {
        self.block += 1;
    }

    /// Whether `sector` is held (it is afterwards).
    fn hit(&mut self, sector: u64) -> bool {
        if self.sets == 0 {
            return false;
        }
        self.clock += 1;
        let set = (sector as usize % self.sets) * L1_WAYS;
        // A tag holds the block's number in its high bits, so a new block misses everywhere.
        let key = (self.block << 40) | (sector & ((1 << 40) - 1));
        let ways = set..set + L1_WAYS;
        if let Some(w) = ways.clone().find(|&w| self.tag[w] == key + 1) {
            self.used[w] = self.clock;
            return true;
        }
        let victim = ways.min_by_key(|&w| self.used[w]).unwrap_or(set);
        self.tag[victim] = key + 1;
        self.used[victim] = self.clock;
        false
    }
}

/// SASS instructions ptxas makes of one PTX instruction, about: integer division and
/// remainder become a reciprocal-and-correct sequence (about 20 instructions for 32 bits, a
/// call of about 70 for 64 bits), IEEE `div.rn` and `sqrt.rn` a reciprocal with Newton steps
/// (about 10 for f32, 20 for f64); everything else one. These lengths are estimates of those
/// sequences, not counts read from a CUBIN (the SASS of a real kernel also folds and unrolls
/// what PTX spells out; counting SASS from NVRTC's CUBIN is not done yet).
pub(crate) fn sass_per_ptx(op: &Op) -> u64 {
    let wide = |t: crate::ir::IntTy| t.bits == 64;
    match *op {
        Op::Div(t) | Op::Rem(t) => {
            if wide(t) {
                70
            } else {
                20
            }
        }
        Op::FDiv32 => 10,
        Op::FDiv64 => 20,
        Op::FArith {
            op: FOp::Div | FOp::Sqrt,
            ty,
            ..
        } => {
            if ty == FTy::F64 {
                20
            } else {
                10
            }
        }
        _ => 1,
    }
}

/// What one recorded L2 access does.
const REC_LOAD: u64 = 0;
const REC_STORE: u64 = 1;
const REC_ATOM: u64 = 2;
/// Bits of a record: sector index << 22 | pc (20 bits) << 2 | kind.
const PC_BITS: u32 = 20;
const NO_PC: u64 = (1 << PC_BITS) - 1;

fn record(sector: u64, pc: u32, kind: u64) -> u64 {
    let pc = (pc as u64).min(NO_PC);
    (sector << (PC_BITS + 2)) | (pc << 2) | kind
}

/// Records between checks of the launch's total against the cap.
const CHECK_EVERY: usize = 1 << 16;

/// What a counted launch shares between its workers.
pub(crate) struct Shared {
    pub config: CounterConfig,
    /// Accesses recorded so far by all workers (updated every `CHECK_EVERY` records and at
    /// each worker's end).
    recorded: AtomicU64,
    /// The workers' accumulators, handed in when each ends.
    accs: Mutex<Vec<Acc>>,
}

impl Shared {
    pub fn new(config: CounterConfig) -> Self {
        Shared {
            config,
            recorded: AtomicU64::new(0),
            accs: Mutex::new(Vec::new()),
        }
    }

    /// A worker's accumulator at its end.
    pub fn hand_in(&self, mut acc: Acc) {
        acc.close_block();
        self.recorded
            .fetch_add(acc.unflushed as u64, Ordering::Relaxed);
        acc.unflushed = 0;
        if let Ok(mut v) = self.accs.lock() {
            v.push(acc);
        }
    }
}

/// One worker's counts.
pub(crate) struct Acc {
    per_pc: Vec<InstCounts>,
    /// The global sector accesses of its blocks, in issue order (`record`).
    rec: Vec<u64>,
    /// Per record: the issuing warp's memory instructions so far in its block << 5 | the
    /// warp's index in the block (mod 32). Sorting a block's records by it replays them as
    /// if the warps ran in lockstep, as on the GPU (the interpreter runs a warp for a while
    /// before the next).
    order: Vec<u32>,
    /// The running block's memory instructions per warp so far.
    ordinals: Vec<u32>,
    /// The warp of the instruction being counted.
    warp: usize,
    /// (block, start..end in `rec`) of each block it ran.
    spans: Vec<(u64, usize, usize)>,
    /// The running block and where its records start.
    block: Option<u64>,
    start: usize,
    /// Records not yet added to `Shared::recorded`.
    unflushed: usize,
    /// All accesses made (recorded or not).
    accesses: u64,
    /// Set once the launch went past the cap: sectors read (or atomically updated) and
    /// written, instead of records.
    over: Option<Box<(HashSet<u64>, HashSet<u64>)>>,
    cap: u64,
    /// Warp instructions counted so far (all blocks).
    insts: u64,
    /// Whether to keep each block's figures (a sampled launch), and those kept; the running
    /// block's instructions and accesses at its start.
    keep_blocks: bool,
    figures: Vec<BlockFigures>,
    at_start: (u64, u64),
    /// Per warp of the running block: a bit per register that depends on global loads in
    /// flight (`track_batches`).
    pending: Vec<Vec<u64>>,
    /// Set by `access` when the instruction being counted loads from global memory.
    global_load: bool,
    /// The 128-byte lines global atomics updated.
    atom_lines: HashSet<u64>,
}

impl Acc {
    pub fn new(prog: &Program, shared: &Shared) -> Self {
        Acc {
            per_pc: vec![InstCounts::default(); prog.code.len()],
            rec: Vec::new(),
            order: Vec::new(),
            ordinals: Vec::new(),
            warp: 0,
            spans: Vec::new(),
            block: None,
            start: 0,
            unflushed: 0,
            accesses: 0,
            over: None,
            cap: shared.config.max_recorded_accesses,
            insts: 0,
            keep_blocks: shared.config.sample != Sample::Full,
            figures: Vec::new(),
            at_start: (0, 0),
            pending: Vec::new(),
            global_load: false,
            atom_lines: HashSet::new(),
        }
    }

    /// A block starts (the previous one, if any, has ended).
    pub fn begin_block(&mut self, lin: u64) {
        self.close_block();
        self.block = Some(lin);
        self.start = self.rec.len();
        self.at_start = (self.insts, self.accesses);
        self.ordinals.clear();
        for p in &mut self.pending {
            p.iter_mut().for_each(|w| *w = 0);
        }
    }

    fn close_block(&mut self) {
        if let Some(b) = self.block.take() {
            if self.rec.len() > self.start {
                self.spans.push((b, self.start, self.rec.len()));
            }
            if self.keep_blocks {
                self.figures.push(BlockFigures {
                    block: b,
                    inst_executed: self.insts - self.at_start.0,
                    sectors: self.accesses - self.at_start.1,
                });
            }
        }
    }

    /// Count one warp instruction `i` at `pc`, issued for the group `mask`, with `m` the lanes
    /// whose guard holds; `regs` as they are before it executes.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub fn count(
        &mut self,
        shared: &Shared,
        i: &Inst,
        pc: u32,
        warp: usize,
        regs: &[[u64; 32]],
        mask: u32,
        m: u32,
    ) {
        if self.per_pc.len() <= pc as usize {
            return;
        }
        self.warp = warp;
        self.count_inst(shared, i, pc, regs, mask, m);
        let global_load = std::mem::take(&mut self.global_load);
        self.track_batches(i, pc, warp, m, global_load);
    }

    /// Memory-level parallelism (`InstCounts::global_ld_batches`), as ptxas schedules a warp:
    /// the registers that depend on loads in flight are tainted; loads whose addresses are not
    /// tainted join the batch in flight (ptxas hoists them above the arithmetic and the
    /// shared-memory stores that use earlier loads); the batch ends, and the warp waits, at a
    /// load whose address depends on it (a pointer chase), a barrier, a branch on a tainted
    /// predicate or back to an earlier instruction (the next loop iteration), and a global
    /// store of tainted data (later loads may not pass a store they may alias).
    fn track_batches(&mut self, i: &Inst, pc: u32, warp: usize, m: u32, global_load: bool) {
        if self.pending.len() <= warp {
            self.pending.resize_with(warp + 1, Vec::new);
        }
        let bits = &mut self.pending[warp];
        let tainted = |bits: &Vec<u64>, r: Slot| {
            r != NONE
                && bits
                    .get(r as usize / 64)
                    .is_some_and(|w| w >> (r % 64) & 1 == 1)
        };
        let taint = |bits: &mut Vec<u64>, r: Slot| {
            if r == NONE {
                return;
            }
            let w = r as usize / 64;
            if bits.len() <= w {
                bits.resize(w + 1, 0);
            }
            bits[w] |= 1 << (r % 64);
        };
        let empty = |bits: &Vec<u64>| bits.iter().all(|&w| w == 0);
        let clear = |bits: &mut Vec<u64>| bits.iter_mut().for_each(|w| *w = 0);
        let guard_tainted = tainted(bits, i.guard);
        match i.op {
            _ if global_load => {
                let (addr, dests): (Slot, &[Slot]) = match i.op {
                    Op::Ld { n, .. } => (i.r[4], &i.r[..n as usize]),
                    Op::Atom { .. } => (i.r[1], &i.r[..1]),
                    _ => (NONE, &[]),
                };
                if tainted(bits, addr) || guard_tainted {
                    clear(bits);
                }
                if dests.iter().any(|&d| d != NONE) {
                    if empty(bits) {
                        self.per_pc[pc as usize].global_ld_batches += 1;
                    }
                    for &d in dests {
                        taint(bits, d);
                    }
                }
            }
            Op::Bar(_) => clear(bits),
            Op::Bra => {
                if guard_tainted || (m != 0 && i.imm >= 0 && i.imm as u32 <= pc) {
                    clear(bits);
                }
            }
            Op::St { space, n, .. } => {
                let data = i.r[..n as usize].iter().any(|&r| tainted(bits, r));
                if data && space != MemSpace::Shared {
                    clear(bits);
                }
            }
            _ => {
                if empty(bits) {
                    return;
                }
                let reads = i.r[1..].iter().any(|&r| tainted(bits, r)) || guard_tainted;
                if reads {
                    taint(bits, i.r[0]);
                    if matches!(i.op, Op::SetpI { .. } | Op::SetpF { .. }) {
                        taint(bits, i.r[4]);
                    }
                }
            }
        }
    }

    fn count_inst(
        &mut self,
        shared: &Shared,
        i: &Inst,
        pc: u32,
        regs: &[[u64; 32]],
        mask: u32,
        m: u32,
    ) {
        let Some(c) = self.per_pc.get_mut(pc as usize) else {
            return;
        };
        c.inst_executed += 1;
        c.sass_inst_estimate += sass_per_ptx(&i.op);
        self.insts += 1;
        c.thread_inst_executed += mask.count_ones() as u64;
        c.thread_inst_executed_pred_on += m.count_ones() as u64;
        let addr = |slot: crate::ir::Slot, imm: i64| -> [u64; 32] {
            let base = &regs[slot as usize];
            std::array::from_fn(|l| base[l].wrapping_add(imm as u64))
        };
        match i.op {
            Op::Bra if m != 0 && m != mask => c.branch_divergent += 1,
            Op::Bar(_) if m != 0 => c.barriers += 1,
            Op::Ld { space, size, n, .. } if m != 0 => {
                let a = addr(i.r[4], i.imm);
                self.access(shared, pc, space, &a, m, size as u32 * n as u32, REC_LOAD);
            }
            Op::St { space, size, n } if m != 0 => {
                let a = addr(i.r[4], i.imm);
                self.access(shared, pc, space, &a, m, size as u32 * n as u32, REC_STORE);
            }
            Op::Atom { space, bits, .. } if m != 0 => {
                let a = addr(i.r[1], i.imm);
                self.access(shared, pc, space, &a, m, bits as u32 / 8, REC_ATOM);
            }
            Op::CpAsync { size } if m != 0 => {
                // A global load (of the source) and a shared store (of the destination).
                let src = addr(i.r[1], 0);
                self.access(shared, pc, MemSpace::Global, &src, m, size as u32, REC_LOAD);
                if i.r[0] != NONE {
                    let dst = addr(i.r[0], 0);
                    self.access(
                        shared,
                        pc,
                        MemSpace::Shared,
                        &dst,
                        m,
                        size as u32,
                        REC_STORE,
                    );
                }
            }
            _ => {}
        }
    }

    /// One warp-level access of `bytes` per lane at `a` by the lanes `m`.
    #[allow(clippy::too_many_arguments)]
    fn access(
        &mut self,
        shared: &Shared,
        pc: u32,
        space: MemSpace,
        a: &[u64; 32],
        m: u32,
        bytes: u32,
        kind: u64,
    ) {
        let (mut global, mut sh, mut local) = (0u32, 0u32, 0u32);
        match space {
            MemSpace::Global => global = m,
            MemSpace::Shared => sh = m,
            MemSpace::Local => local = m,
            MemSpace::Param => {}
            MemSpace::Generic => {
                for (l, &x) in a.iter().enumerate() {
                    if (m >> l) & 1 == 0 {
                        continue;
                    }
                    if x.wrapping_sub(SHARED_WIN) < WIN_SIZE {
                        sh |= 1 << l;
                    } else if x.wrapping_sub(LOCAL_WIN) < WIN_SIZE {
                        local |= 1 << l;
                    } else if x.wrapping_sub(PARAM_WIN) >= WIN_SIZE {
                        global |= 1 << l;
                    }
                }
            }
        }
        let c = &mut self.per_pc[pc as usize];
        if local != 0 {
            match kind {
                REC_LOAD => c.local_ld_requests += 1,
                _ => c.local_st_requests += 1,
            }
        }
        if sh != 0 {
            let offs: [u32; 32] = std::array::from_fn(|l| a[l] as u32);
            match kind {
                REC_LOAD => {
                    c.shared_ld_requests += 1;
                    c.shared_ld_wavefronts += shared_wavefronts(&offs, sh, bytes);
                }
                REC_STORE => {
                    c.shared_st_requests += 1;
                    c.shared_st_wavefronts += shared_wavefronts(&offs, sh, bytes);
                }
                _ => {
                    c.shared_atom_requests += 1;
                    c.shared_atom_lanes += sh.count_ones() as u64;
                    c.shared_atom_serialized += same_address(a, sh);
                    c.shared_atom_wavefronts += shared_wavefronts(&offs, sh, bytes);
                }
            }
        }
        if global != 0 {
            let mut sectors = [0u64; 64];
            let n = distinct_sectors(a, global, bytes, &mut sectors);
            let lanes = global.count_ones() as u64;
            match kind {
                REC_LOAD => {
                    self.global_load = true;
                    c.global_ld_requests += 1;
                    c.global_ld_sectors += n as u64;
                    c.global_ld_bytes += lanes * bytes as u64;
                }
                REC_STORE => {
                    c.global_st_requests += 1;
                    c.global_st_sectors += n as u64;
                    c.global_st_bytes += lanes * bytes as u64;
                }
                _ => {
                    self.global_load = true;
                    c.global_atom_requests += 1;
                    c.global_atom_sectors += n as u64;
                    c.global_atom_lanes += lanes;
                    c.global_atom_serialized += same_address(a, global);
                }
            }
            self.record_sectors(shared, pc, &sectors[..n], kind);
        }
    }

    fn record_sectors(&mut self, shared: &Shared, pc: u32, sectors: &[u64], kind: u64) {
        self.accesses += sectors.len() as u64;
        if kind == REC_ATOM {
            self.atom_lines.extend(sectors.iter().map(|s| s >> 2));
        }
        if let Some(sets) = &mut self.over {
            for &s in sectors {
                if kind != REC_STORE {
                    sets.0.insert(s);
                }
                if kind != REC_LOAD {
                    sets.1.insert(s);
                }
            }
            return;
        }
        if self.ordinals.len() <= self.warp {
            self.ordinals.resize(self.warp + 1, 0);
        }
        let ordinal = self.ordinals[self.warp];
        self.ordinals[self.warp] = ordinal.wrapping_add(1);
        let key = (ordinal.min((1 << 27) - 1) << 5) | (self.warp as u32 & 31);
        for &s in sectors {
            self.rec.push(record(s, pc, kind));
            self.order.push(key);
        }
        self.unflushed += sectors.len();
        if self.unflushed >= CHECK_EVERY {
            let total = shared
                .recorded
                .fetch_add(self.unflushed as u64, Ordering::Relaxed)
                + self.unflushed as u64;
            self.unflushed = 0;
            if total > self.cap {
                self.go_over();
            }
        }
    }

    /// Past the cap: keep sets of distinct sectors from now on (with what was recorded).
    fn go_over(&mut self) {
        let mut sets = Box::new((HashSet::new(), HashSet::new()));
        for &r in &self.rec {
            let (s, kind) = (r >> (PC_BITS + 2), r & 3);
            if kind != REC_STORE {
                sets.0.insert(s);
            }
            if kind != REC_LOAD {
                sets.1.insert(s);
            }
        }
        self.rec = Vec::new();
        self.spans.clear();
        self.block = None;
        self.start = 0;
        self.over = Some(sets);
    }
}

/// The distinct 32-byte sectors the lanes `m` touch with `bytes` each at `a`, sorted, into
/// `out`; returns how many.
fn distinct_sectors(a: &[u64; 32], m: u32, bytes: u32, out: &mut [u64; 64]) -> usize {
    let mut n = 0;
    for (l, &x) in a.iter().enumerate() {
        if (m >> l) & 1 == 0 {
            continue;
        }
        let s0 = x >> 5;
        let s1 = (x + bytes.max(1) as u64 - 1) >> 5;
        for s in s0..=s1 {
            if n < out.len() {
                out[n] = s;
                n += 1;
            }
        }
    }
    let v = &mut out[..n];
    v.sort_unstable();
    let mut k = 0;
    for j in 0..n {
        if j == 0 || v[j] != v[k - 1] {
            v[k] = v[j];
            k += 1;
        }
    }
    k
}

/// The most lanes of `m` that share one address of `a`.
fn same_address(a: &[u64; 32], m: u32) -> u64 {
    let mut v = [0u64; 32];
    let mut n = 0;
    for (l, &x) in a.iter().enumerate() {
        if (m >> l) & 1 != 0 {
            v[n] = x;
            n += 1;
        }
    }
    let v = &mut v[..n];
    v.sort_unstable();
    let (mut best, mut run) = (0u64, 0u64);
    for j in 0..n {
        run = if j > 0 && v[j] == v[j - 1] {
            run + 1
        } else {
            1
        };
        best = best.max(run);
    }
    best
}

/// Wavefronts of one warp-level shared access of `bytes` per lane at byte offsets `offs` by
/// the lanes `m` (see the module doc): per phase (32 lanes for accesses up to 4 bytes, 16 for
/// 8, 8 for 16), the most distinct 4-byte words in one of the 32 banks; phases add up.
pub(crate) fn shared_wavefronts(offs: &[u32; 32], m: u32, bytes: u32) -> u64 {
    let words = bytes.div_ceil(4).clamp(1, 4) as usize;
    let per_phase = 32 / words;
    let mut total = 0;
    for p in 0..words {
        let lanes = (m >> (p * per_phase)) & (((1u64 << per_phase) - 1) as u32);
        if lanes == 0 {
            continue;
        }
        let mut v = [0u32; 32];
        let mut n = 0;
        for j in 0..per_phase {
            if (lanes >> j) & 1 == 0 {
                continue;
            }
            let w0 = offs[p * per_phase + j] / 4;
            for k in 0..words as u32 {
                v[n] = w0 + k;
                n += 1;
            }
        }
        let v = &mut v[..n];
        v.sort_unstable();
        let mut per_bank = [0u32; 32];
        let mut best = 0;
        for j in 0..n {
            if j > 0 && v[j] == v[j - 1] {
                continue;
            }
            let b = (v[j] % 32) as usize;
            per_bank[b] += 1;
            best = best.max(per_bank[b]);
        }
        total += best as u64;
    }
    total
}

/// The L2 model (module doc).
struct L2 {
    sets: usize,
    ways: usize,
    /// Per way: line tag + 1 (0: empty), last use, valid and dirty sector bits.
    tag: Vec<u64>,
    used: Vec<u64>,
    valid: Vec<u8>,
    dirty: Vec<u8>,
    clock: u64,
    hits: u64,
    dram_read: u64,
    dram_write: u64,
}

impl L2 {
    fn new(bytes: u64, ways: u32) -> L2 {
        let ways = ways.max(1) as usize;
        let sets = ((bytes / (128 * ways as u64)) as usize).max(1);
        let n = sets * ways;
        L2 {
            sets,
            ways,
            tag: vec![0; n],
            used: vec![0; n],
            valid: vec![0; n],
            dirty: vec![0; n],
            clock: 0,
            hits: 0,
            dram_read: 0,
            dram_write: 0,
        }
    }

    /// One access; returns whether it read the sector from DRAM.
    fn access(&mut self, sector: u64, kind: u64) -> bool {
        let line = sector >> 2;
        let bit = 1u8 << (sector & 3);
        let h = line.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let set = ((h >> 32) % self.sets as u64) as usize;
        let ways = set * self.ways..(set + 1) * self.ways;
        self.clock += 1;
        let mut way = None;
        for k in ways.clone() {
            if self.tag[k] == line + 1 {
                way = Some(k);
                break;
            }
        }
        let k = match way {
            Some(k) => k,
            None => {
                // The empty or least recently used way.
                let k = ways
                    .min_by_key(|&k| (self.tag[k] != 0, self.used[k]))
                    .unwrap_or(0);
                self.dram_write += 32 * self.dirty[k].count_ones() as u64;
                self.tag[k] = line + 1;
                self.valid[k] = 0;
                self.dirty[k] = 0;
                k
            }
        };
        self.used[k] = self.clock;
        let hit = self.valid[k] & bit != 0;
        if hit {
            self.hits += 1;
        }
        self.valid[k] |= bit;
        if kind != REC_LOAD {
            self.dirty[k] |= bit;
        }
        let read = !hit && kind != REC_STORE;
        if read {
            self.dram_read += 32;
        }
        read
    }

    fn flush(&mut self) {
        for d in &mut self.dirty {
            self.dram_write += 32 * d.count_ones() as u64;
            *d = 0;
        }
    }
}

/// The launch's counters from the workers' accumulators. `locs` gives each PC's source line.
pub(crate) fn finish(
    shared: Shared,
    prog: &Program,
    files: &[String],
    grid_blocks: u64,
    threads_per_block: u64,
) -> Counters {
    let accs = shared.accs.into_inner().unwrap_or_default();
    let mut per_block: Vec<BlockFigures> = accs
        .iter()
        .flat_map(|a| a.figures.iter().copied())
        .collect();
    per_block.sort_by_key(|f| f.block);
    let (blocks, sampled) = match &shared.config.sample {
        Sample::Blocks(list) => (
            list.len() as u64,
            Some(Sampled {
                blocks: list.len() as u64,
                of: grid_blocks,
                scaled: false,
                grew: false,
            }),
        ),
        _ => (grid_blocks, None),
    };
    let mut per_pc = vec![InstCounts::default(); prog.code.len()];
    let accesses: u64 = accs.iter().map(|a| a.accesses).sum();
    for a in &accs {
        for (t, c) in per_pc.iter_mut().zip(&a.per_pc) {
            t.add(c);
        }
    }
    let exact = accesses <= shared.config.max_recorded_accesses;
    let atom_lines = accs
        .iter()
        .flat_map(|a| a.atom_lines.iter())
        .collect::<HashSet<_>>()
        .len() as u64;
    let (mut read_pages, mut written_pages) = (Vec::new(), Vec::new());
    let mut l1_hits = 0u64;
    let (hits, dram_read, dram_write) = if exact {
        // Each block's records in lockstep order (`Acc::order`), blocks in index order.
        let mut spans: Vec<(u64, Vec<u64>)> = accs
            .iter()
            .flat_map(|a| {
                a.spans.iter().map(|&(b, s, e)| {
                    let mut idx: Vec<usize> = (s..e).collect();
                    idx.sort_by_key(|&i| a.order.get(i).copied().unwrap_or(0));
                    (b, idx.into_iter().map(|i| a.rec[i]).collect())
                })
            })
            .collect();
        spans.sort_by_key(|s| s.0);
        let mut l2 = L2::new(shared.config.l2_bytes, shared.config.l2_ways);
        if shared.config.warm {
            for (_, recs) in &spans {
                for &r in recs {
                    l2.access(r >> (PC_BITS + 2), r & 3);
                }
            }
            l2.hits = 0;
            l2.dram_read = 0;
            l2.dram_write = 0;
        }
        let mut l1 = L1::new(shared.config.l1_bytes_per_block);
        for (_, recs) in spans {
            l1.next_block();
            for &r in &recs {
                let (sector, pc, kind) = (r >> (PC_BITS + 2), (r >> 2) & NO_PC, r & 3);
                if kind == REC_LOAD && l1.hit(sector) {
                    l1_hits += 1;
                    continue;
                }
                if l2.access(sector, kind) && pc != NO_PC {
                    if let Some(c) = per_pc.get_mut(pc as usize) {
                        c.dram_read_bytes += 32;
                    }
                }
            }
        }
        if !shared.config.warm {
            l2.flush();
        }
        if let Sample::Blocks(_) = shared.config.sample {
            let (mut r, mut w) = (HashSet::new(), HashSet::new());
            for a in &accs {
                for &rec in &a.rec {
                    let (page, kind) = ((rec >> (PC_BITS + 2)) >> 7, rec & 3);
                    if kind != REC_STORE {
                        r.insert(page);
                    }
                    if kind != REC_LOAD {
                        w.insert(page);
                    }
                }
            }
            read_pages = r.into_iter().collect();
            written_pages = w.into_iter().collect();
            read_pages.sort_unstable();
            written_pages.sort_unstable();
        }
        (l2.hits, l2.dram_read, l2.dram_write)
    } else {
        let (mut read, mut written) = (HashSet::new(), HashSet::new());
        for a in accs {
            for &r in &a.rec {
                let (s, kind) = (r >> (PC_BITS + 2), r & 3);
                if kind != REC_STORE {
                    read.insert(s);
                }
                if kind != REC_LOAD {
                    written.insert(s);
                }
            }
            if let Some(sets) = a.over {
                read.extend(sets.0);
                written.extend(sets.1);
            }
        }
        (0, 32 * read.len() as u64, 32 * written.len() as u64)
    };
    let mut total = InstCounts::default();
    let mut mix = InstMix::default();
    let mut table = Vec::new();
    for (pc, c) in per_pc.into_iter().enumerate() {
        if c.inst_executed == 0 {
            continue;
        }
        total.add(&c);
        let inst = &prog.code[pc];
        let kind = InstKind::of(&inst.op);
        mix.add(kind, c.inst_executed);
        let line = SourceLine::of(prog, files, inst.loc);
        table.push(PcCounters {
            pc: pc as u32,
            kind,
            line,
            counts: c,
        });
    }
    total.dram_read_bytes = dram_read;
    Counters {
        blocks,
        warps: blocks * threads_per_block.div_ceil(32),
        threads: blocks * threads_per_block,
        total,
        mix,
        l2_sectors: accesses - l1_hits,
        l1_hit_sectors: l1_hits,
        l2_hit_sectors: hits,
        dram_read_bytes: dram_read,
        dram_write_bytes: dram_write,
        l2_bytes: shared.config.l2_bytes,
        l2_exact: exact,
        per_pc: table,
        atom_lines,
        sampled,
        read_pages,
        written_pages,
        per_block,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offs(f: impl Fn(u32) -> u32) -> [u32; 32] {
        std::array::from_fn(|l| f(l as u32))
    }

    #[test]
    fn wavefronts_of_strides() {
        let all = u32::MAX;
        assert_eq!(shared_wavefronts(&offs(|l| 4 * l), all, 4), 1);
        assert_eq!(shared_wavefronts(&offs(|l| 8 * l), all, 4), 2);
        assert_eq!(shared_wavefronts(&offs(|l| 16 * l), all, 4), 4);
        assert_eq!(shared_wavefronts(&offs(|l| 128 * l), all, 4), 32);
        assert_eq!(shared_wavefronts(&offs(|l| 132 * l), all, 4), 1);
        assert_eq!(shared_wavefronts(&offs(|_| 12), all, 4), 1);
        // f64 and float4, conflict-free: one wavefront per phase.
        assert_eq!(shared_wavefronts(&offs(|l| 8 * l), all, 8), 2);
        assert_eq!(shared_wavefronts(&offs(|l| 16 * l), all, 16), 4);
        // Bytes of one word are free.
        assert_eq!(shared_wavefronts(&offs(|l| l), all, 1), 1);
        assert_eq!(shared_wavefronts(&offs(|l| 4 * l), 0, 4), 0);
    }

    #[test]
    fn sectors_and_same_address() {
        let mut out = [0u64; 64];
        let a: [u64; 32] = std::array::from_fn(|l| 4096 + 4 * l as u64);
        assert_eq!(distinct_sectors(&a, u32::MAX, 4, &mut out), 4);
        let a: [u64; 32] = std::array::from_fn(|l| 4100 + 4 * l as u64);
        assert_eq!(distinct_sectors(&a, u32::MAX, 4, &mut out), 5);
        let a: [u64; 32] = std::array::from_fn(|l| 4096 + 8 * (l as u64 % 4));
        assert_eq!(same_address(&a, u32::MAX), 8);
        assert_eq!(distinct_sectors(&a, u32::MAX, 4, &mut out), 1);
    }

    #[test]
    fn l2_hits_rereads_and_writes_back() {
        let mut l2 = L2::new(1 << 20, 16);
        assert!(l2.access(10, REC_LOAD));
        assert!(!l2.access(10, REC_LOAD));
        assert!(!l2.access(11, REC_STORE));
        assert!(!l2.access(11, REC_LOAD));
        l2.flush();
        assert_eq!((l2.hits, l2.dram_read, l2.dram_write), (2, 32, 32));
        // A stream larger than the cache misses on its second pass.
        let mut l2 = L2::new(4096, 4);
        for _ in 0..2 {
            for s in 0..1024 {
                l2.access(s, REC_LOAD);
            }
        }
        assert_eq!(l2.dram_read, 2 * 1024 * 32);
    }
}
