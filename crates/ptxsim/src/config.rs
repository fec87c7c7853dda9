//! What a launch is told: its shape and limits (`LaunchConfig`) and which engines besides the
//! interpreter it may use (`Engines`: compiled regions, the block tier and its replays, gangs,
//! the interpreter loop's host build).
//!
//! Configuration is data passed with each launch. The library reads no environment variable:
//! a program at the edge (nbcuda's simulator backend, a test binary, a benchmark) looks the
//! `PTXSIM_*` variables up once and hands them to [`Engines::from_vars`], the one place their
//! names and values are parsed. This module must not run anything.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::{counters, Dim3, DEFAULT_STACK_BYTES};

/// When a launch uses compiled regions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JitMode {
    /// Never: always interpret.
    Off,
    /// Once the kernel has run enough, or for a big launch (the default).
    Auto,
    /// From the first launch, every region however short (for tests that compare compiled and
    /// interpreted runs).
    Always,
}

/// A cap on the build of the interpreter loop a launch runs: the crate compiles that loop for
/// baseline x86-64, for x86-64-v3 (AVX2) and for x86-64-v4 (AVX-512), and runs the best one
/// the CPU has up to the cap (for tests that compare the builds, and to measure them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum HostBuild {
    Baseline,
    Avx2,
    Avx512,
}

impl HostBuild {
    /// The build this CPU runs under the cap `self` (the best it has up to the cap): what a
    /// launch with `Engines::host == self` runs.
    pub fn runs(self) -> HostBuild {
        crate::exec::Build::new(self).host()
    }

    /// The builds this CPU can run, from the baseline up.
    pub fn available() -> Vec<HostBuild> {
        [HostBuild::Baseline, HostBuild::Avx2, HostBuild::Avx512]
            .into_iter()
            .filter(|&b| crate::exec::Build::new(b).host() == b)
            .collect()
    }
}

/// What the region compiler prints on stderr when it compiles a kernel (for whoever works on
/// it; both off by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JitTrace {
    /// Each kernel's regions and which instructions can be compiled (`PTXSIM_JIT_DEBUG`).
    pub regions: bool,
    /// The machine code of each compiled function (`PTXSIM_JIT_DISASM`).
    pub machine_code: bool,
}

/// The engines a launch may use besides the interpreter. Results, printf output and reports
/// are the same with every choice (the interpreter is the reference); only speed differs. A
/// counted launch (`LaunchConfig::counters`) uses none of them, whatever is chosen here.
/// Built without the crate's `accel` feature there are no such engines: every field is
/// accepted and ignored, and every launch runs in the interpreter's baseline build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Engines {
    /// When the kernel's lane-local regions run as compiled host code (default `Auto`).
    /// `Off` also turns the block tier off.
    pub jit: JitMode,
    /// Kernels whose barriers split their blocks into phases may run a block at a time with
    /// the threads' registers side by side (the block tier; default on).
    pub block_tier: bool,
    /// Later blocks of the block tier may replay the first block a worker ran (default on).
    pub replay: bool,
    /// Compiled loops may run several lanes interleaved (gangs; default on).
    pub gangs: bool,
    /// The widest vector instructions the interpreter may use (default `Avx512`, the best the
    /// CPU has).
    pub host: HostBuild,
    /// What the region compiler prints (default nothing).
    pub jit_trace: JitTrace,
}

impl Default for Engines {
    fn default() -> Self {
        Engines {
            jit: JitMode::Auto,
            block_tier: true,
            replay: true,
            gangs: true,
            host: HostBuild::Avx512,
            jit_trace: JitTrace::default(),
        }
    }
}

impl Engines {
    /// Only the interpreter, at the best build the CPU has: the reference every other choice
    /// must agree with.
    pub fn reference() -> Self {
        Engines {
            jit: JitMode::Off,
            block_tier: false,
            replay: false,
            gangs: false,
            ..Engines::default()
        }
    }

    /// The engines the `PTXSIM_*` variables choose, `get` giving a variable's value (`None`
    /// when unset); call it with `|k| std::env::var(k).ok()` to follow the environment.
    /// Values are trimmed and compared without case; anything not listed keeps the default.
    ///
    /// - `PTXSIM_JIT`: `0` or `off`: `JitMode::Off`; `always`: `JitMode::Always`.
    /// - `PTXSIM_BLOCK`, `PTXSIM_REPLAY`, `PTXSIM_GANGS`: `0` or `off` turns the block tier,
    ///   its replays, or gangs off.
    /// - `PTXSIM_CPU`: `baseline` (or `v1`), `avx2` (or `v3`) cap the interpreter's build.
    /// - `PTXSIM_JIT_DEBUG`, `PTXSIM_JIT_DISASM`: set (to anything) turns the trace on.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Self {
        let choice = |name: &str| get(name).unwrap_or_default().trim().to_ascii_lowercase();
        let on = |name: &str| !matches!(choice(name).as_str(), "0" | "off");
        Engines {
            jit: match choice("PTXSIM_JIT").as_str() {
                "0" | "off" => JitMode::Off,
                "always" => JitMode::Always,
                _ => JitMode::Auto,
            },
            block_tier: on("PTXSIM_BLOCK"),
            replay: on("PTXSIM_REPLAY"),
            gangs: on("PTXSIM_GANGS"),
            host: match choice("PTXSIM_CPU").as_str() {
                "baseline" | "v1" => HostBuild::Baseline,
                "avx2" | "v3" => HostBuild::Avx2,
                _ => HostBuild::Avx512,
            },
            jit_trace: JitTrace {
                regions: get("PTXSIM_JIT_DEBUG").is_some(),
                machine_code: get("PTXSIM_JIT_DISASM").is_some(),
            },
        }
    }
}

/// Options of one launch.
#[derive(Debug, Clone)]
pub struct LaunchConfig {
    pub grid: Dim3,
    pub block: Dim3,
    /// Bytes of dynamic shared memory (`extern __shared__`).
    pub dynamic_shared_bytes: u32,
    /// Run the checker (bounds, alignment, use after free, races, barriers, shuffles). Default on.
    pub check: bool,
    /// Stop with `Fault(Cancelled)` when this flag becomes true (the Jupyter interrupt button).
    pub cancel: Option<Arc<AtomicBool>>,
    /// Stop with `Fault(BudgetExceeded)` after this many warp-instructions (None: unlimited).
    pub instruction_budget: Option<u64>,
    /// Worker threads for blocks (0: one per core this process may use, from its affinity mask
    /// and cgroup CPU quota as `std::thread::available_parallelism` reads them). A launch uses
    /// at most one per block (or block part), and [`crate::LaunchReport::workers`] says how
    /// many ran.
    pub threads: usize,
    /// The engines besides the interpreter this launch may use (default: all of them, at the
    /// best build the CPU has). Results and reports are the same with every choice.
    pub engines: Engines,
    /// Bytes of call stack per thread (CUDA's `cudaLimitStackSize`; default
    /// [`DEFAULT_STACK_BYTES`], the GPU's default). Each call of a device function charges the
    /// calling thread's stack with the callee's frame, and its return gives it back; a call that
    /// would take a thread past this limit (or past [`crate::MAX_CALL_DEPTH`] calls) stops the
    /// launch with a [`crate::CheckKind::StackOverflow`] fault, checker on or off, as a GPU
    /// faults on a stack overflow.
    ///
    /// The frame model, a simple stand-in for the frames ptxas lays out:
    /// [`crate::FRAME_LINK_BYTES`] (return address and frame link) plus the callee's local
    /// window, that is its parameters, return values, `.local` variables and the argument space
    /// of its own calls (what ptxsim keeps in the thread's local memory for it). Registers are
    /// not charged: PTX registers are virtual (optimised PTX declares dozens where ptxas saves a
    /// few), and charging them would overflow recursions that run on a GPU.
    ///
    /// Host memory: a call to a recursive function keeps the callee's window and 8 bytes per
    /// PTX register it owns until it returns, so a runaway recursion holds at most
    /// `stack_bytes / FRAME_LINK_BYTES` such frames per thread before it is stopped.
    pub stack_bytes: u32,
    /// Collect hardware-like counters ([`counters`]; default `None`, off). A counted launch
    /// runs every block in the interpreter (no block tier, replays or JIT), with the same
    /// results and reports; the counts come back in [`crate::LaunchReport::counters`].
    pub counters: Option<counters::CounterConfig>,
    /// A cooperative launch (CUDA's `cuLaunchCooperativeKernel`; default off): every block of
    /// the grid is resident at once, each on a thread of its own, and the kernel finds the
    /// grid workspace that `cooperative_groups::this_grid().sync()` needs in `%envreg1/2`
    /// (without it, such a kernel traps). The grid may have at most
    /// [`crate::MAX_COOPERATIVE_BLOCKS`] blocks; a GPU's own limit (blocks per SM × SMs) is
    /// the caller's to check. It runs in the interpreter only, and sampled counting
    /// ([`counters::Sample`]) is refused: a grid-wide sync needs every block.
    pub cooperative: bool,
}

impl LaunchConfig {
    /// A launch of `grid` blocks of `block` threads with the defaults: checker on, no cancel
    /// flag or budget, a worker per core, every engine ([`Engines::default`]), the GPU's
    /// default stack, no counters.
    pub fn new(grid: Dim3, block: Dim3) -> Self {
        LaunchConfig {
            grid,
            block,
            dynamic_shared_bytes: 0,
            check: true,
            cancel: None,
            instruction_budget: None,
            threads: 0,
            engines: Engines::default(),
            stack_bytes: DEFAULT_STACK_BYTES,
            counters: None,
            cooperative: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_vars_parses_every_switch() {
        let none = Engines::from_vars(|_| None);
        assert_eq!(none, Engines::default());
        let vars = [
            ("PTXSIM_JIT", " Always "),
            ("PTXSIM_BLOCK", "0"),
            ("PTXSIM_REPLAY", "OFF"),
            ("PTXSIM_GANGS", "off"),
            ("PTXSIM_CPU", "v3"),
            ("PTXSIM_JIT_DEBUG", ""),
        ];
        let get = |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        };
        let e = Engines::from_vars(get);
        assert_eq!(e.jit, JitMode::Always);
        assert!(!e.block_tier && !e.replay && !e.gangs);
        assert_eq!(e.host, HostBuild::Avx2);
        assert!(e.jit_trace.regions && !e.jit_trace.machine_code);
        let off = Engines::from_vars(|k| (k == "PTXSIM_JIT").then(|| "off".to_string()));
        assert_eq!(off.jit, JitMode::Off);
        let base = Engines::from_vars(|k| (k == "PTXSIM_CPU").then(|| "baseline".to_string()));
        assert_eq!(base.host, HostBuild::Baseline);
    }
}
