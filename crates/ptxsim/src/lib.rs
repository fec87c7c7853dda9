//! ptxsim: executes the PTX that NVRTC emits on the CPU, with the GPU's semantics, and checks
//! every memory access.
//!
//! This crate knows nothing of Jupyter, NVRTC or the nbcuda kernel: it takes PTX text and runs it.
//! Pipeline: parse → lower to a compact, pre-decoded instruction array → execute warps of 32
//! lanes (per-lane PCs for divergence, barriers that park warps, blocks in parallel on a worker
//! pool). The checker is on by default.
//!
//! # Public API (the contract other crates build on — keep it stable)
//!
//! ```ignore
//! let dev = ptxsim::Device::new();
//! let a = dev.alloc(4 * n)?;                       // DevicePtr (u64 address in the simulated space)
//! dev.write(a, 0, bytemuck_bytes)?;                // host → device
//! let module = dev.load_module(&ptx_text)?;        // parse + lower; ModuleError names line and instruction
//! let k = module.kernel("vecAdd").unwrap();        // KernelInfo: name, params (type, size, align, offset)
//! let params: Vec<Vec<u8>> = ...;                  // one little-endian byte slice per parameter
//! let report = dev.launch(&module, "vecAdd", &LaunchConfig::new((g,1,1), (b,1,1)), &params)?;
//! report.printf;                                   // device printf output, in order
//! report.reports;                                  // non-fatal check reports (races, …)
//! dev.read(a, 0, &mut host_bytes)?;                // device → host
//! dev.free(a)?;
//! ```
//!
//! A launch that faults (out-of-bounds, misaligned, use after free, divergent barrier, cancel,
//! instruction budget) returns `Err(LaunchError::Fault(..))` with the check report and the printf
//! output produced before the fault; stores that would have faulted are never performed.
//!
//! Counters: `LaunchConfig::counters = Some(CounterConfig::new(l2_bytes))` makes the launch
//! count what NVIDIA's hardware counts (requests, sectors, wavefronts, atomics, instructions
//! by kind, DRAM bytes through an L2 model) into `LaunchReport::counters`, per launch and per
//! PTX instruction (`Counters::by_line` folds them by CUDA line, `Counters::ncu_metrics` names
//! them as Nsight Compute does); see [`counters`].
//!
//! Also: `Module::global(name)` gives the address and size of a `__device__`/`__constant__`
//! variable (module variables are freed with the module); `MAX_SHARED_BYTES` is the shared
//! memory limit per block.
//!
//! # Semantics worth knowing
//!
//! - Registers, local and shared memory are not cleared between blocks (as on a GPU, reading
//!   them before writing gives stale values).
//! - Divergent lanes run in groups, the deepest call level and lowest PC first; lanes of a warp
//!   may reach the same barrier or warp collective at different times (Volta-style). Exited
//!   threads do not count at barriers. With the checker on, lanes of a warp waiting at a
//!   barrier while other lanes of that warp exit or wait at a different barrier is a fatal
//!   `DivergentBarrier`; a block in which no thread can make progress is reported the same way.
//! - Shared-memory races are reported (not fatal) between accesses of different threads in the
//!   same barrier interval; within one warp `__syncwarp` also orders accesses. Atomic updates
//!   race with plain writes (a word set without a barrier before other threads update it), not
//!   with each other nor with plain reads (the compare-and-swap loop reads the word it then
//!   swaps). One report per racing instruction.
//! - Integer division by zero gives all ones; `.approx` functions are computed exactly or with
//!   the host's libm (within PTX's documented error); every IEEE rounding mode is exact.
//! - Tensor cores: `wmma.load/store/mma` (f16 and bf16 `m16n16k16`, `m32n8k16`, `m8n32k16`;
//!   tf32 `m16n16k8`; f32 or f16 accumulators), `mma.sync` (`m16n8k16` f16/bf16, `m16n8k8`
//!   f16/bf16/tf32), `ldmatrix` (`m8n8.x1/x2/x4[.trans].b16`) and `cvt.*.tf32.f32` run in the
//!   interpreter, a whole warp at a time (`exec::tensor` gives the fragment layouts and the order
//!   of accumulation). Their loads and stores are checked like any other; a warp not all of whose
//!   32 lanes execute one together is a `DivergentWarpCollective` fault.
//! - A cooperative launch (`LaunchConfig::cooperative`, CUDA's `cuLaunchCooperativeKernel`)
//!   runs every block at once and passes the grid workspace in `%envreg1/2`, so
//!   `cooperative_groups::this_grid().sync()` is a barrier across the grid; without one, that
//!   sync traps with a report that says a cooperative launch was needed. Blocks that can never
//!   all reach the sync (one returned) are a fatal `DivergentBarrier`.
//! - `%clock`/`%clock_hi`/`%clock64` count simulated work (4 per warp-instruction),
//!   `%globaltimer` (and its `_lo`/`_hi` halves) is the host's wall clock in ns.
//!
//! `crates/ptxsim/ARCHITECTURE.md` is the map for changing the crate: where each part lives,
//! the invariants, how a launch flows and where an instruction goes.
//! - f32/f64 add, sub, mul, div and fma that give NaN give the canonical NaN (f32: 0x7FFFFFFF,
//!   as on the GPU; f64: 0x7FF8000000000000), whatever the operands' payloads.
//! - Once a kernel has run enough, its lane-local loops and long straight-line stretches run as
//!   host code compiled with Cranelift (`jit`; `Engines::jit`), one lane after
//!   another, which the CUDA model allows (threads of a warp are not in lockstep since Volta).
//!   Results, printf and check reports are those of the interpreter; the instruction count of
//!   such a stretch is that of its longest lane. Shared-memory loads and stores between
//!   barriers run compiled too; a shared-memory race there is still reported, but the values
//!   a racing kernel computes may differ from an interpreted run's (as they may on a GPU).
//! - Kernels whose barriers split their blocks into phases (`Module::block_phases`) and that
//!   use only what the block tier covers run a block at a time with the threads' registers side
//!   by side (`exec::block`; `Engines::block_tier` turns it off). A block it cannot finish (a failed
//!   check, a race) leaves no trace and is run by the interpreter, so reports are unchanged.
//!   It counts an instruction once per warp with a thread at it, as the interpreter counts a
//!   warp's group. Later blocks of a launch replay the first block a worker ran there, doing
//!   only the work that can differ between blocks and checking the guards that could send
//!   them another way (`Engines::replay` turns replays off; `LaunchReport::block_tier_replays`).
//! - Compiled regions, the block tier with its replays, gangs and the AVX2/AVX-512 builds of
//!   the interpreter loop are the crate's `accel` feature (on by default). Built without it
//!   (`--no-default-features`), ptxsim is the interpreter alone (baseline build, no Cranelift):
//!   `Engines` is accepted and ignored, and results, printf and reports are the same.

mod check;
mod config;
pub use config::{Engines, HostBuild, JitMode, JitTrace, LaunchConfig};
pub mod counters;
mod exec;
pub mod gpus;
mod ir;
#[cfg(feature = "accel")]
mod jit;
pub mod model;
pub use lower::is_predefined_name;
mod lower;
mod mem;
mod parse;
pub use parse::{grid_sync_entries, ptx_entries, Entry, EntryParam};
mod pool;
mod printf;
pub mod sampling;
mod sem;
#[cfg(test)]
mod tests;
pub mod timeline;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// An address in the simulated global address space (like `CUdeviceptr`). Never 0 for a live
/// allocation.
pub type DevicePtr = u64;

/// A 3-D extent: grid in blocks, or block in threads.
pub type Dim3 = (u32, u32, u32);

/// PTX scalar types of kernel parameters (`.param .u64 p`, `.param .f32 x`, …) and registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PtxType {
    B8,
    B16,
    B32,
    B64,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    F32,
    F64,
    Pred,
}

/// One kernel parameter as the PTX declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamInfo {
    /// The PTX name, e.g. `_Z6vecAddPfS_S_i_param_0`.
    pub name: String,
    /// Scalar type, or `None` for a `.param .align A .b8 name[N]` aggregate (struct by value).
    pub ty: Option<PtxType>,
    /// Size in bytes.
    pub size: usize,
    /// Alignment in bytes.
    pub align: usize,
    /// Byte offset in the packed parameter buffer.
    pub offset: usize,
    /// `.ptr .global` (or other state space) attribute, when NVRTC emitted one.
    pub is_pointer: bool,
}

/// What a loaded kernel (`.entry`) needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelInfo {
    /// The mangled or `extern "C"` name of the `.entry`.
    pub name: String,
    pub params: Vec<ParamInfo>,
    /// Bytes of statically declared `.shared` memory the kernel (and the functions it calls) use.
    pub static_shared_bytes: usize,
    /// Bytes of `.local` memory per thread.
    pub local_bytes: usize,
    /// Number of virtual registers declared (a rough stand-in for the GPU's register count).
    pub registers: usize,
    /// `.maxntid` / `.reqntid` when declared.
    pub max_threads: Option<u32>,
}

/// How a kernel's blocks divide into phases between barriers (`Module::block_phases`): the
/// condition of the planned block-vectorising tier (`docs/block-tier.md`), from the uniformity
/// analysis of its lowered code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockPhases {
    /// `None` when every barrier is block-wide and every live thread of a block reaches it on
    /// the same path (a kernel without barriers is one phase); otherwise why not, naming the
    /// barrier's source line when the PTX has line information.
    pub not_split: Option<String>,
    /// Block-barrier instructions in the kernel's code.
    pub barriers: usize,
    /// Registers the kernel writes, and how many of them hold one value for every live thread
    /// of a block (loop counters, sizes, parameters).
    pub registers: usize,
    pub uniform_registers: usize,
}

/// The GPU's default call stack per thread (`cudaLimitStackSize`), in bytes.
pub const DEFAULT_STACK_BYTES: u32 = 1024;

/// What each device-function call charges a thread's stack besides the callee's local window
/// (return address and frame link); see [`LaunchConfig::stack_bytes`].
pub const FRAME_LINK_BYTES: u32 = 16;

/// The most nested calls a thread may make, whatever its stack size: a call past it is a
/// [`CheckKind::StackOverflow`].
pub const MAX_CALL_DEPTH: u16 = u16::MAX;

/// Which rule a check report is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CheckKind {
    OutOfBounds,
    Misaligned,
    UseAfterFree,
    SharedRace,
    DivergentBarrier,
    InactiveLaneShuffle,
    /// The cancel flag was raised.
    Cancelled,
    /// The instruction budget ran out.
    BudgetExceeded,
    /// Anything else the GPU would trap on (`trap`, division by zero is not one of these).
    Trap,
    /// A device-function call would take the thread's call stack past
    /// [`LaunchConfig::stack_bytes`] (runaway or too deep recursion).
    StackOverflow,
    /// A `.sync.aligned` warp-wide instruction (`wmma`, `mma.sync`, `ldmatrix`) executed by
    /// only some lanes of a warp (a divergent branch around it, a partial warp); fatal, checker
    /// on or off.
    DivergentWarpCollective,
}

/// A CUDA source position recovered from `.loc`/`.file`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceLine {
    pub file: String,
    pub line: u32,
    pub column: u32,
    /// For a line of an inlined function (a header's helper, `this_grid().sync()`), the call
    /// sites it was inlined at, innermost first (from `.loc ..., inlined_at F L C`); empty
    /// otherwise.
    pub inlined_at: Vec<SourceLine>,
}

impl SourceLine {
    /// The position of `prog.locs[loc]` with its chain of call sites; `None` without line
    /// information.
    pub(crate) fn of(prog: &ir::Program, files: &[String], loc: u32) -> Option<SourceLine> {
        let at = |i: u32| {
            prog.locs.get(i as usize).filter(|l| l.line != 0).map(|l| {
                let line = SourceLine {
                    file: files.get(l.file as usize).cloned().unwrap_or_default(),
                    line: l.line,
                    column: l.column,
                    inlined_at: Vec::new(),
                };
                (line, l.inlined_at)
            })
        };
        let (mut first, mut next) = at(loc)?;
        // Each call site's index is below its callee's line's, so this ends; the cap is a guard.
        while next != 0 && first.inlined_at.len() < 64 {
            let Some((site, up)) = at(next).filter(|_| next < loc) else {
                break;
            };
            first.inlined_at.push(site);
            next = up;
        }
        Some(first)
    }
}

/// One finding of the checker.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckReport {
    pub kind: CheckKind,
    pub kernel: String,
    pub block: Dim3,
    pub thread: Dim3,
    /// The address accessed (0 where not applicable).
    pub address: u64,
    /// Access size in bytes (0 where not applicable).
    pub size: u32,
    /// `global`, `shared`, `local`, `const`, `param` or "" where not applicable.
    pub space: &'static str,
    /// A description of the allocation nearest to the address, e.g.
    /// "4 bytes past the end of a 4096-byte global allocation at 0x10000".
    pub allocation: Option<String>,
    pub line: Option<SourceLine>,
    /// A one-line human description, e.g. "out-of-bounds global store of 4 bytes".
    pub message: String,
}

/// The outcome of a launch that ran to completion.
#[derive(Debug, Clone, Default)]
pub struct LaunchReport {
    /// Device printf output, in order per launch (block order, then warp, then lane).
    pub printf: String,
    /// Non-fatal findings (races, inactive-lane shuffles).
    pub reports: Vec<CheckReport>,
    /// Warp-instructions executed. Exact when interpreted; compiled regions charge a warp the
    /// most any of its lanes ran, so with them the count may differ by a few between runs on
    /// different numbers of workers (where fuel slices end splits a warp's lanes differently).
    pub warp_instructions: u64,
    /// Whether compiled regions ran in this launch.
    pub jit: bool,
    /// How many times a lane ran a loop together with others in compiled code (in a *gang*:
    /// lanes whose loop iterations are interleaved so that the host overlaps them; a lane
    /// counts once per gang it runs in; 0 without the JIT).
    pub ganged: u64,
    /// Blocks run by the block tier (`Engines::block_tier` turns it off; so does `JitMode::Off`):
    /// kernels whose barriers split their blocks into phases, run a block at a time with its
    /// threads side by side. A block it gives up on (any check it cannot pass, which the
    /// interpreter then reports) is run by the interpreter and not counted here.
    pub block_tier_blocks: u64,
    /// Of those, blocks that replayed an earlier block's record (`Engines::replay` turns
    /// replays off): the work that is the same in every block (loop counters, masks, shared
    /// addresses and their checks) is skipped, and guards on data or `%ctaid` are checked
    /// against the record.
    pub block_tier_replays: u64,
    /// The launch's counters, when `LaunchConfig::counters` asked for them.
    pub counters: Option<Box<counters::Counters>>,
    /// Worker threads that ran the launch's blocks: at most `LaunchConfig::threads` (or the
    /// cores), fewer for a launch of few blocks or when another launch holds the helpers.
    pub workers: usize,
}

/// Errors of parsing and lowering PTX.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum ModuleError {
    /// A syntax error, or an instruction/directive the simulator does not know.
    #[error("PTX line {line}: {message}")]
    Parse { line: usize, message: String },
    #[error("PTX line {line}: unsupported instruction `{instruction}`")]
    Unsupported { line: usize, instruction: String },
}

/// Errors of the device memory API.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum MemoryError {
    #[error("out of simulated device memory ({requested} bytes requested)")]
    OutOfMemory { requested: usize },
    #[error("0x{ptr:x} is not the start of a live allocation")]
    InvalidPointer { ptr: u64 },
    #[error(
        "access of {len} bytes at offset {offset} exceeds the {size}-byte allocation at 0x{ptr:x}"
    )]
    OutOfRange {
        ptr: u64,
        offset: usize,
        len: usize,
        size: usize,
    },
}

/// Errors of a launch.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum LaunchError {
    #[error("no kernel named `{0}` in this module")]
    UnknownKernel(String),
    /// Wrong number of parameters, or a parameter of the wrong size.
    #[error("bad parameters: {0}")]
    BadParams(String),
    /// Block over 1024 threads, a zero dimension, grid over the limits, shared memory over 48 KiB
    /// static + dynamic (or 228 KiB with opt-in), …
    #[error("bad launch configuration: {0}")]
    BadConfig(String),
    /// The kernel faulted (or was cancelled / ran out of budget). Memory stores that would have
    /// faulted were not performed; earlier stores of the launch remain, as on a GPU.
    #[error("{}", .report.message)]
    Fault {
        report: Box<CheckReport>,
        /// printf output produced before the fault.
        printf: String,
    },
}

/// Most shared memory (static + dynamic) one block may use, as on sm_90 with opt-in.
pub const MAX_SHARED_BYTES: u32 = 227 * 1024;

/// The most blocks a cooperative launch ([`LaunchConfig::cooperative`]) may have: each runs on
/// a thread of its own. GPUs hold fewer at once (an H200 holds 132 SMs × 32 blocks = 4,224).
pub const MAX_COOPERATIVE_BLOCKS: u64 = 16_384;

static NEXT_DEVICE_ID: AtomicU64 = AtomicU64::new(1);

/// A simulated device: global memory (with red zones and a record of freed blocks) and a worker
/// pool. Cheap to share: methods take `&self` and it is `Send + Sync`.
pub struct Device {
    heap: Arc<Mutex<mem::Heap>>,
    id: u64,
}

/// A loaded PTX module: its kernels, device functions, globals and constants, pre-decoded.
///
/// Its module-scope `.global`/`.const` variables live in the device's memory as long as the
/// module does: dropping the module frees them.
pub struct Module {
    kernels: Vec<KernelInfo>,
    programs: Vec<Arc<ir::Program>>,
    /// Compiled regions of each program, made when it has run enough.
    jit: Vec<exec::accel::Lazy>,
    files: Vec<String>,
    target: String,
    version: String,
    device: u64,
    /// Module-scope variables: name → (address, size).
    globals: HashMap<String, (DevicePtr, usize)>,
    heap: std::sync::Weak<Mutex<mem::Heap>>,
}

impl Drop for Module {
    fn drop(&mut self) {
        if let Some(heap) = self.heap.upgrade() {
            let mut heap = heap.lock().unwrap_or_else(|e| e.into_inner());
            for &(ptr, _) in self.globals.values() {
                heap.free(ptr);
            }
        }
    }
}

impl Device {
    pub fn new() -> Self {
        Device {
            heap: Arc::new(Mutex::new(mem::Heap::default())),
            id: NEXT_DEVICE_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    fn heap(&self) -> MutexGuard<'_, mem::Heap> {
        // A poisoned lock only means another thread panicked mid-call; the table is still valid.
        self.heap.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Allocate `bytes` of zero-filled global memory (256-byte aligned, with red zones around it).
    pub fn alloc(&self, bytes: usize) -> Result<DevicePtr, MemoryError> {
        self.heap()
            .alloc(bytes)
            .ok_or(MemoryError::OutOfMemory { requested: bytes })
    }

    pub fn free(&self, ptr: DevicePtr) -> Result<(), MemoryError> {
        if self.heap().free(ptr) {
            Ok(())
        } else {
            Err(MemoryError::InvalidPointer { ptr })
        }
    }

    fn buffer(
        &self,
        ptr: DevicePtr,
        offset: usize,
        len: usize,
    ) -> Result<Arc<mem::Buf>, MemoryError> {
        let heap = self.heap();
        let buf = heap.get(ptr).ok_or(MemoryError::InvalidPointer { ptr })?;
        let size = buf.len();
        if offset.checked_add(len).is_none_or(|end| end > size) {
            return Err(MemoryError::OutOfRange {
                ptr,
                offset,
                len,
                size,
            });
        }
        Ok(buf.clone())
    }

    /// Host → device: write `data` at `ptr + offset`.
    pub fn write(&self, ptr: DevicePtr, offset: usize, data: &[u8]) -> Result<(), MemoryError> {
        self.buffer(ptr, offset, data.len())?
            .write_fast(offset, data);
        Ok(())
    }

    /// Device → host: fill `out` from `ptr + offset`.
    pub fn read(&self, ptr: DevicePtr, offset: usize, out: &mut [u8]) -> Result<(), MemoryError> {
        self.buffer(ptr, offset, out.len())?.read(offset, out);
        Ok(())
    }

    /// Device → device copy of `bytes` bytes from the start of `src` to the start of `dst`.
    pub fn copy(&self, dst: DevicePtr, src: DevicePtr, bytes: usize) -> Result<(), MemoryError> {
        let s = self.buffer(src, 0, bytes)?;
        let d = self.buffer(dst, 0, bytes)?;
        let mut tmp = vec![0u8; bytes.min(1 << 20)];
        let mut done = 0;
        while done < bytes {
            let n = (bytes - done).min(tmp.len());
            s.read(done, &mut tmp[..n]);
            d.write_fast(done, &tmp[..n]);
            done += n;
        }
        Ok(())
    }

    /// The total size of the live allocations that hold any of the 4 KiB pages `pages`
    /// (page = address >> 12, sorted), each allocation counted once.
    pub(crate) fn bytes_of_allocations_holding(&self, pages: &[u64]) -> u64 {
        let view = self.heap().view();
        let mut seen = std::collections::HashSet::new();
        let mut total = 0;
        for &p in pages {
            // Any byte of the page that lies in an allocation: the page's start, or an
            // allocation that starts inside it.
            for addr in [p << 12, (p << 12) + 4095] {
                if let Some((base, len, _)) = view.lookup(addr, 1) {
                    if seen.insert(base) {
                        total += len;
                    }
                }
            }
        }
        total
    }

    /// Bytes of global memory allocated and not freed (module variables included).
    pub fn allocated_bytes(&self) -> usize {
        self.heap().live_bytes()
    }

    /// Size of the live allocation that starts at `ptr`.
    pub fn allocation_size(&self, ptr: DevicePtr) -> Option<usize> {
        self.heap().get(ptr).map(|b| b.len())
    }

    /// Parse and lower a PTX module. Module-scope `.global`/`.const` variables are allocated in
    /// this device's memory.
    pub fn load_module(&self, ptx: &str) -> Result<Module, ModuleError> {
        // A panic here would be a simulator bug; report it as an error rather than unwind
        // into the caller.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.load_module_inner(ptx)))
            .unwrap_or_else(|_| {
                Err(ModuleError::Parse {
                    line: 0,
                    message: "internal simulator error while loading this PTX (please report it)"
                        .into(),
                })
            })
    }

    fn load_module_inner(&self, ptx: &str) -> Result<Module, ModuleError> {
        let ast = parse::parse(ptx)?;
        let mut globals: HashMap<String, u64> = HashMap::new();
        let mut allocated = Vec::new();
        let result = self.load_inner(&ast, &mut globals, &mut allocated);
        if result.is_err() {
            let mut heap = self.heap();
            for p in allocated {
                heap.free(p);
            }
        }
        result
    }

    fn load_inner(
        &self,
        ast: &parse::Ast,
        globals: &mut HashMap<String, u64>,
        allocated: &mut Vec<u64>,
    ) -> Result<Module, ModuleError> {
        let vars: Vec<&parse::VarDecl> = ast
            .vars
            .iter()
            .filter(|v| matches!(v.space, parse::Space::Global | parse::Space::Const))
            .collect();
        let mut sizes = Vec::new();
        let mut table = HashMap::new();
        for v in &vars {
            let size = lower::decl_size(v)? as usize;
            let ptr = self.heap().alloc(size).ok_or_else(|| ModuleError::Parse {
                line: v.line,
                message: format!("out of device memory for `{}` ({size} bytes)", v.name),
            })?;
            allocated.push(ptr);
            globals.insert(v.name.clone(), ptr);
            table.insert(v.name.clone(), (ptr, size));
            sizes.push((ptr, size));
        }
        let fn_index = lower::function_indices(ast);
        for (v, &(ptr, size)) in vars.iter().zip(&sizes) {
            if v.init.is_some() {
                let addr_of = |n: &str| {
                    globals
                        .get(n)
                        .copied()
                        .or_else(|| fn_index.get(n).map(|&i| mem::func_addr(i)))
                };
                let bytes = lower::init_bytes(v, size, &addr_of)?;
                if let Some(buf) = self.heap().get(ptr) {
                    buf.write_fast(0, &bytes);
                }
            }
        }
        let ctx = lower::ModCtx::new(ast, globals.clone());
        let mut kernels = Vec::new();
        let mut programs = Vec::new();
        for f in ast
            .functions
            .iter()
            .filter(|f| f.is_entry && f.body.is_some())
        {
            let mut p = lower::lower_kernel(&ctx, f)?;
            if let Some(slots) = exec::accel::block_plan(&p) {
                p.block_tier = true;
                p.block_slots = slots;
            }
            kernels.push(KernelInfo {
                name: p.name.clone(),
                params: p.params.clone(),
                static_shared_bytes: p.static_shared as usize,
                local_bytes: p.local_bytes as usize,
                registers: p.declared_regs,
                max_threads: p.max_threads,
            });
            programs.push(Arc::new(p));
        }
        Ok(Module {
            kernels,
            jit: programs
                .iter()
                .map(|_| exec::accel::Lazy::default())
                .collect(),
            programs,
            files: ast.files.iter().map(|(_, n)| n.clone()).collect(),
            target: ast.target.clone(),
            version: ast.version.clone(),
            device: self.id,
            globals: table,
            heap: Arc::downgrade(&self.heap),
        })
    }

    /// Run `kernel` of `module`. `params` holds one little-endian byte slice per `.param`, in
    /// order, each exactly the parameter's size (like `cuLaunchKernel`'s `kernelParams`).
    /// Blocks run in parallel on `config.threads` workers; the call returns when all have
    /// finished.
    pub fn launch(
        &self,
        module: &Module,
        kernel: &str,
        config: &LaunchConfig,
        params: &[&[u8]],
    ) -> Result<LaunchReport, LaunchError> {
        let sample = config.counters.as_ref().map(|c| &c.sample);
        if config.cooperative && matches!(sample, Some(counters::Sample::Blocks(_))) {
            return Err(LaunchError::BadConfig(
                "a cooperative launch cannot be counted on a sample of its blocks: a grid-wide \
                 sync needs every block"
                    .into(),
            ));
        }
        // A cooperative launch is counted whole: a sample's blocks would wait for the others.
        if let (
            Some(counters::Sample::Auto {
                wave_blocks,
                budget,
            }),
            false,
        ) = (sample, config.cooperative)
        {
            return sampling::launch(self, module, kernel, config, params, *wave_blocks, *budget);
        }
        let idx = module
            .kernels
            .iter()
            .position(|k| k.name == kernel)
            .ok_or_else(|| LaunchError::UnknownKernel(kernel.to_string()))?;
        if module.device != self.id {
            return Err(LaunchError::BadConfig(
                "the module was loaded on another device".into(),
            ));
        }
        let prog = &module.programs[idx];
        let (bx, by, bz) = config.block;
        let (gx, gy, gz) = config.grid;
        let nthreads = bx as u64 * by as u64 * bz as u64;
        if bx == 0 || by == 0 || bz == 0 || gx == 0 || gy == 0 || gz == 0 {
            return Err(LaunchError::BadConfig(format!(
                "grid ({gx},{gy},{gz}) and block ({bx},{by},{bz}) dimensions must be at least 1"
            )));
        }
        if nthreads > 1024 || bz > 64 {
            return Err(LaunchError::BadConfig(format!(
                "block ({bx},{by},{bz}) has {nthreads} threads: at most 1024 (and z at most 64)"
            )));
        }
        if let Some(req) = prog.reqntid {
            if req != config.block {
                return Err(LaunchError::BadConfig(format!(
                    "block ({bx},{by},{bz}) differs from the kernel's .reqntid {req:?}"
                )));
            }
        }
        if let Some(max) = prog.max_threads {
            if nthreads > max as u64 {
                return Err(LaunchError::BadConfig(format!(
                    "block of {nthreads} threads exceeds the kernel's .maxntid/.reqntid of {max}"
                )));
            }
        }
        if gx > i32::MAX as u32 || gy > 65535 || gz > 65535 {
            return Err(LaunchError::BadConfig(format!(
                "grid ({gx},{gy},{gz}) exceeds (2147483647, 65535, 65535)"
            )));
        }
        let shared = prog.dyn_shared_offset() as u64 + config.dynamic_shared_bytes as u64;
        let shared = if config.dynamic_shared_bytes == 0 {
            prog.static_shared as u64
        } else {
            shared
        };
        if shared > MAX_SHARED_BYTES as u64 {
            return Err(LaunchError::BadConfig(format!(
                "{shared} bytes of shared memory per block: at most {MAX_SHARED_BYTES}"
            )));
        }
        if params.len() != prog.params.len() {
            return Err(LaunchError::BadParams(format!(
                "`{kernel}` takes {} parameters, {} given",
                prog.params.len(),
                params.len()
            )));
        }
        let mut buf = vec![0u8; prog.param_bytes];
        for (k, (p, bytes)) in prog.params.iter().zip(params).enumerate() {
            if bytes.len() != p.size {
                return Err(LaunchError::BadParams(format!(
                    "parameter {k} (`{}`) is {} bytes, {} given",
                    p.name,
                    p.size,
                    bytes.len()
                )));
            }
            buf[p.offset..p.offset + p.size].copy_from_slice(bytes);
        }
        let nblocks = gx as u64 * gy as u64 * gz as u64;
        if config.cooperative && nblocks > MAX_COOPERATIVE_BLOCKS {
            return Err(LaunchError::BadConfig(format!(
                "a cooperative launch runs every block at once: {nblocks} blocks, at most \
                 {MAX_COOPERATIVE_BLOCKS} on ptxsim"
            )));
        }
        // The grid workspace of a cooperative launch (`exec::grid`): `{ u32 size; u32 barrier }`.
        let workspace = if config.cooperative {
            let ws = self.alloc(exec::grid::WORKSPACE_BYTES).map_err(|e| {
                LaunchError::BadConfig(format!("no memory for the grid workspace: {e}"))
            })?;
            let size = 8u32.to_le_bytes();
            self.write(ws, 0, &size)
                .map_err(|e| LaunchError::BadConfig(format!("the grid workspace: {e}")))?;
            Some(exec::grid::GridSync::new(ws, nblocks))
        } else {
            None
        };
        let result = self.launch_blocks(module, idx, config, buf, nblocks, workspace.as_ref());
        if let Some(ws) = &workspace {
            let _ = self.free(ws.ws);
        }
        result
    }

    /// The blocks of a checked launch of program `idx` of `module` (parameters packed in `buf`).
    fn launch_blocks(
        &self,
        module: &Module,
        idx: usize,
        config: &LaunchConfig,
        buf: Vec<u8>,
        nblocks: u64,
        grid_sync: Option<&exec::grid::GridSync>,
    ) -> Result<LaunchReport, LaunchError> {
        let prog = &module.programs[idx];
        let (bx, by, bz) = config.block;
        let nthreads = bx as u64 * by as u64 * bz as u64;
        let shared = prog.dyn_shared_offset() as u64 + config.dynamic_shared_bytes as u64;
        let shared = if config.dynamic_shared_bytes == 0 {
            prog.static_shared as u64
        } else {
            shared
        };
        let view = self.heap().view();
        let only_blocks = match config.counters.as_ref().map(|c| &c.sample) {
            Some(counters::Sample::Blocks(list)) => {
                if list.is_empty()
                    || list.windows(2).any(|w| w[0] >= w[1])
                    || list.last().is_some_and(|&b| b >= nblocks)
                {
                    return Err(LaunchError::BadConfig(format!(
                        "a sample of blocks must list distinct blocks in ascending order, each \
                         below the grid's {nblocks}"
                    )));
                }
                Some(&list[..])
            }
            _ => None,
        };
        let lazy = &module.jit[idx];
        let counted = config.counters.clone().map(counters::Shared::new);
        // A counted launch runs in the interpreter, where the counters are counted; so does a
        // cooperative one, whose waits (`exec::grid`) are the interpreter's.
        let jit = match (&counted, grid_sync) {
            (None, None) => lazy.get(prog, nblocks.saturating_mul(nthreads), &config.engines),
            _ => None,
        };
        let ctx = exec::Ctx {
            jit,
            prog,
            files: &module.files,
            global: &view,
            params: &buf,
            grid: config.grid,
            block: config.block,
            nthreads: nthreads as u32,
            nwarps: (nthreads as u32).div_ceil(32),
            block_tier: prog.block_tier
                && counted.is_none()
                && grid_sync.is_none()
                && config.engines.jit != JitMode::Off
                && config.instruction_budget.is_none()
                && exec::accel::fits_block(prog, config.block)
                && config.engines.block_tier,
            block_replay: config.engines.replay,
            gangs: config.engines.gangs,
            split_blocks: config.dynamic_shared_bytes == 0
                && prog.warps_independent()
                && counted.is_none()
                && grid_sync.is_none(),
            dyn_shared: config.dynamic_shared_bytes,
            shared_bytes: shared as u32,
            check: config.check,
            stack_bytes: config.stack_bytes,
            host: config.engines.host,
            cancel: config.cancel.as_deref(),
            abort: AtomicBool::new(false),
            budget: config.instruction_budget,
            executed: AtomicU64::new(0),
            ganged: AtomicU64::new(0),
            block_tier_blocks: AtomicU64::new(0),
            block_tier_replays: AtomicU64::new(0),
            counters: counted.as_ref(),
            only_blocks,
            grid_sync,
        };
        let run_blocks = only_blocks.map_or(nblocks, |l| l.len() as u64);
        let out = pool::run(&ctx, run_blocks, config.threads);
        let ganged = ctx.ganged.load(Ordering::Relaxed);
        let block_tier_blocks = ctx.block_tier_blocks.load(Ordering::Relaxed);
        let block_tier_replays = ctx.block_tier_replays.load(Ordering::Relaxed);
        let counters =
            counted.map(|c| Box::new(counters::finish(c, prog, &module.files, nblocks, nthreads)));
        lazy.ran(out.instructions);
        match out.fault {
            Some(report) => Err(LaunchError::Fault {
                report: Box::new(report),
                printf: out.printf,
            }),
            None => Ok(LaunchReport {
                printf: out.printf,
                reports: out.reports,
                warp_instructions: out.instructions,
                jit: jit.is_some(),
                ganged,
                block_tier_blocks,
                block_tier_replays,
                counters,
                workers: out.workers,
            }),
        }
    }
}

impl Default for Device {
    fn default() -> Self {
        Self::new()
    }
}

impl Module {
    /// Every `.entry` of the module, in order of appearance.
    pub fn kernels(&self) -> &[KernelInfo] {
        &self.kernels
    }
    pub fn kernel(&self, name: &str) -> Option<&KernelInfo> {
        self.kernels().iter().find(|k| k.name == name)
    }
    /// How kernel `name`'s blocks divide into phases between barriers (`BlockPhases`); `None`
    /// for a name that is not a kernel of the module.
    pub fn block_phases(&self, name: &str) -> Option<BlockPhases> {
        let k = self.kernels.iter().position(|k| k.name == name)?;
        let prog = &self.programs[k];
        let u = ir::uniform::analyze(prog);
        let line = |pc: u32| {
            prog.code
                .get(pc as usize)
                .and_then(|i| prog.locs.get(i.loc as usize))
                .filter(|l| l.line != 0)
                .map_or(String::new(), |l| format!(" (line {})", l.line))
        };
        use ir::uniform::BarrierIssue as B;
        let not_split = u.barriers_split_phases(prog).err().map(|e| match e {
            B::Divergent { pc } => format!("a barrier under divergent control{}", line(pc)),
            B::AfterDivergentExit { pc, exit_pc } => format!(
                "a barrier{} after threads may exit on a divergent test{}",
                line(pc),
                line(exit_pc)
            ),
            B::Partial { pc } => format!("a barrier for part of the block{}", line(pc)),
            B::InFunction { pc } => format!("a barrier in a device function{}", line(pc)),
        });
        let mut written = std::collections::BTreeSet::new();
        for i in &prog.code {
            written.extend(ir::defuse::may_write(i, prog));
        }
        Some(BlockPhases {
            not_split,
            barriers: prog
                .code
                .iter()
                .filter(|i| matches!(i.op, ir::Op::Bar(_)))
                .count(),
            registers: written.len(),
            uniform_registers: written.iter().filter(|&&s| u.is_uniform(s)).count(),
        })
    }

    /// The lowered program of kernel `name` (for the crate's tests).
    #[cfg(test)]
    pub(crate) fn program(&self, name: &str) -> Option<&ir::Program> {
        let k = self.kernels.iter().position(|k| k.name == name)?;
        self.programs.get(k).map(|p| &**p)
    }
    /// The address and size of a module-scope `.global` or `.const` variable (a `__device__`
    /// or `__constant__` variable), like `cuModuleGetGlobal`; read and write it with
    /// `Device::read`/`Device::write`.
    pub fn global(&self, name: &str) -> Option<(DevicePtr, usize)> {
        self.globals.get(name).copied()
    }
    /// The PTX `.target` (e.g. `sm_80`) and `.version` (e.g. `8.5`) of the module.
    pub fn target(&self) -> (&str, &str) {
        (&self.target, &self.version)
    }
}
