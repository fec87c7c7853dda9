//! The ptxsim backend: the [`Backend`] trait on the ptxsim crate (a CPU simulator that runs the
//! PTX NVRTC emits and checks every memory access). Launches run on ptxsim's worker pool, honour
//! the Jupyter interrupt flag and report faults with the checker's report.
//!
//! ptxsim runs each launch to completion, so streams and events are bookkeeping only (an event
//! records the wall clock). This module must not know about array names or cells.

use super::backend::{
    Backend, BackendLaunch, BackendLaunchError, BackendReport, DevPtr, EventId, KernelMeta,
    ModuleId, ModuleImage, Occupancy, StreamId,
};
use super::{CudaOptions, DeviceDescription, DeviceLimits, GpuError};
use crate::compile::Target;
use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// The environment variable that sets ptxsim's worker threads per launch (a workshop's hub sets
/// it for each student's Jupyter kernel, so that one student's launch takes its share of the
/// machine, not every core).
pub const WORKERS_VAR: &str = "NBCUDA_PTXSIM_WORKERS";

/// How many worker threads ptxsim's launches use, and where that figure comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workers {
    pub count: usize,
    /// `NBCUDA_PTXSIM_WORKERS`, or the cores this process may use (and why not the variable).
    pub source: String,
}

impl Workers {
    /// From `NBCUDA_PTXSIM_WORKERS`, else the cores this process may use: its affinity mask
    /// (`taskset`) and cgroup CPU quota (a container's `--cpus`), which
    /// `std::thread::available_parallelism` reads, not the machine's count.
    pub fn from_env() -> Workers {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Workers::resolve(std::env::var(WORKERS_VAR).ok().as_deref(), cores)
    }

    fn resolve(value: Option<&str>, cores: usize) -> Workers {
        const CORES: &str = "the cores this process may use";
        match value.map(str::trim).filter(|v| !v.is_empty()) {
            None => Workers {
                count: cores,
                source: CORES.into(),
            },
            Some(v) => match v.parse::<usize>() {
                Ok(n) if (1..=256).contains(&n) => Workers {
                    count: n,
                    source: WORKERS_VAR.into(),
                },
                _ => {
                    tracing::warn!("{WORKERS_VAR}={v:?} is not a whole number from 1 to 256");
                    Workers {
                        count: cores,
                        source: format!(
                            "{CORES}; {WORKERS_VAR}={v:?} is not a whole number from 1 to 256"
                        ),
                    }
                }
            },
        }
    }
}

/// ptxsim as a backend.
pub struct SimBackend {
    device: ptxsim::Device,
    workers: Workers,
    /// The engines ptxsim's launches may use, from the `PTXSIM_*` variables when the backend
    /// started (ptxsim itself reads no environment).
    engines: ptxsim::Engines,
    modules: HashMap<ModuleId, ptxsim::Module>,
    streams: HashSet<StreamId>,
    events: HashMap<EventId, Instant>,
    next_id: u64,
}

impl Default for SimBackend {
    fn default() -> Self {
        SimBackend::new()
    }
}

impl SimBackend {
    pub fn new() -> SimBackend {
        SimBackend {
            device: ptxsim::Device::new(),
            workers: Workers::from_env(),
            engines: ptxsim::Engines::from_vars(|k| std::env::var(k).ok()),
            modules: HashMap::new(),
            streams: HashSet::new(),
            events: HashMap::new(),
            next_id: 1,
        }
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The simulated device (for copying arguments in and out of a checked launch).
    pub fn device(&self) -> &ptxsim::Device {
        &self.device
    }
}

fn mem_err(e: ptxsim::MemoryError) -> GpuError {
    GpuError::memory(e.to_string())
}

impl SimBackend {
    /// Host → device at `offset` bytes into the allocation `dst`.
    pub fn htod_at(&mut self, dst: DevPtr, offset: usize, data: &[u8]) -> Result<(), GpuError> {
        self.device.write(dst, offset, data).map_err(mem_err)
    }
}

impl Backend for SimBackend {
    fn name(&self) -> &'static str {
        "ptxsim"
    }

    fn describe(&self) -> DeviceDescription {
        let l = self.limits();
        let rows = vec![
            (
                "backend".into(),
                "ptxsim (CPU simulator of an NVIDIA GPU)".into(),
            ),
            (
                "simulated architecture".into(),
                "sm_80 (PTX for compute_80)".into(),
            ),
            ("warp size".into(), l.warp_size.to_string()),
            (
                "max threads per block".into(),
                l.max_threads_per_block.to_string(),
            ),
            ("max block".into(), format!("{:?}", l.max_block)),
            ("max grid".into(), format!("{:?}", l.max_grid)),
            (
                "shared memory per block".into(),
                format!("{} KiB", l.max_shared_per_block / 1024),
            ),
            (
                "worker threads".into(),
                format!("{} ({})", self.workers.count, self.workers.source),
            ),
            (
                "memory checks".into(),
                "out of bounds, misaligned, use after free, shared races, barriers".into(),
            ),
        ];
        DeviceDescription {
            backend: "ptxsim",
            name: "ptxsim (simulated sm_80)".into(),
            rows,
            limits: l,
            peak_bandwidth_gbs: None,
        }
    }

    fn limits(&self) -> DeviceLimits {
        DeviceLimits::sm80()
    }

    fn compile_target(&self, options: &CudaOptions) -> Target {
        Target::sim(options)
    }

    fn alloc(&mut self, bytes: usize) -> Result<DevPtr, GpuError> {
        self.device.alloc(bytes).map_err(mem_err)
    }

    fn free(&mut self, ptr: DevPtr) -> Result<(), GpuError> {
        self.device.free(ptr).map_err(mem_err)
    }

    fn htod(&mut self, dst: DevPtr, data: &[u8]) -> Result<(), GpuError> {
        self.device.write(dst, 0, data).map_err(mem_err)
    }

    fn dtoh(&self, src: DevPtr, out: &mut [u8]) -> Result<(), GpuError> {
        self.device.read(src, 0, out).map_err(mem_err)
    }

    fn dtod(&mut self, dst: DevPtr, src: DevPtr, bytes: usize) -> Result<(), GpuError> {
        self.device.copy(dst, src, bytes).map_err(mem_err)
    }

    fn dtoh_at(&self, src: DevPtr, offset: usize, out: &mut [u8]) -> Option<Result<(), GpuError>> {
        Some(self.device.read(src, offset, out).map_err(mem_err))
    }

    fn alloc_is_zeroed(&self) -> bool {
        true
    }

    fn load_module(
        &mut self,
        image: ModuleImage<'_>,
    ) -> Result<(ModuleId, Vec<KernelMeta>), GpuError> {
        let ptx = match image {
            ModuleImage::Ptx(p) => p,
            ModuleImage::Cubin(_) => {
                return Err(GpuError::compile(
                    "ptxsim runs PTX, not CUBIN (compile for a compute_XX target)",
                ))
            }
        };
        let module = self
            .device
            .load_module(ptx)
            .map_err(|e| GpuError::compile(module_error(ptx, &e)))?;
        let metas = module
            .kernels()
            .iter()
            .map(|k| KernelMeta {
                name: k.name.clone(),
                param_sizes: k.params.iter().map(|p| p.size).collect(),
                static_shared_bytes: k.static_shared_bytes,
                local_bytes: k.local_bytes,
                registers: k.registers,
                max_threads: k.max_threads,
            })
            .collect();
        let id = self.id();
        self.modules.insert(id, module);
        Ok((id, metas))
    }

    fn unload_module(&mut self, module: ModuleId) {
        self.modules.remove(&module);
    }

    fn symbol(
        &mut self,
        module: ModuleId,
        name: &str,
    ) -> Result<Option<(DevPtr, usize)>, GpuError> {
        Ok(self.modules.get(&module).and_then(|m| m.global(name)))
    }

    fn launch(
        &mut self,
        module: ModuleId,
        kernel: &str,
        config: &BackendLaunch,
        params: &[&[u8]],
    ) -> Result<BackendReport, BackendLaunchError> {
        let Some(m) = self.modules.get(&module) else {
            return Err(BackendLaunchError::Rejected(format!(
                "module {module} is not loaded"
            )));
        };
        let mut cfg = ptxsim::LaunchConfig::new(config.grid, config.block);
        cfg.dynamic_shared_bytes = config.shared_bytes;
        cfg.check = config.check;
        cfg.cancel = config.cancel.clone();
        cfg.stack_bytes = config.stack_bytes;
        cfg.counters = config.counters.clone();
        cfg.threads = self.workers.count;
        cfg.engines = self.engines;
        cfg.cooperative = config.cooperative;
        match self.device.launch(m, kernel, &cfg, params) {
            Ok(r) => Ok(BackendReport {
                printf: r.printf,
                findings: r.reports,
                warp_instructions: Some(r.warp_instructions),
                counters: r.counters,
                sim_workers: Some(r.workers),
            }),
            Err(ptxsim::LaunchError::Fault { report, printf }) => Err(BackendLaunchError::Fault {
                message: report.message.clone(),
                report: Some(report),
                printf,
            }),
            Err(e) => Err(BackendLaunchError::Rejected(e.to_string())),
        }
    }

    fn create_stream(&mut self) -> Result<StreamId, GpuError> {
        let id = self.id();
        self.streams.insert(id);
        Ok(id)
    }

    fn destroy_stream(&mut self, stream: StreamId) {
        self.streams.remove(&stream);
    }

    fn record_event(&mut self, _stream: Option<StreamId>) -> Result<EventId, GpuError> {
        let id = self.id();
        self.events.insert(id, Instant::now());
        Ok(id)
    }

    fn event_elapsed_ms(&mut self, start: EventId, end: EventId) -> Result<f64, GpuError> {
        match (self.events.get(&start), self.events.get(&end)) {
            (Some(a), Some(b)) => Ok(b.saturating_duration_since(*a).as_secs_f64() * 1e3),
            _ => Err(GpuError::launch("unknown event")),
        }
    }

    fn destroy_event(&mut self, event: EventId) {
        self.events.remove(&event);
    }

    /// Every launch has finished before the next is made, so the wait is always satisfied.
    fn stream_wait_event(
        &mut self,
        stream: Option<StreamId>,
        event: EventId,
    ) -> Result<(), GpuError> {
        if !self.events.contains_key(&event) {
            return Err(GpuError::launch("unknown event"));
        }
        match stream {
            Some(s) if !self.streams.contains(&s) => Err(GpuError::launch("unknown stream")),
            _ => Ok(()),
        }
    }

    fn synchronize(&mut self, stream: Option<StreamId>) -> Result<(), GpuError> {
        match stream {
            Some(s) if !self.streams.contains(&s) => Err(GpuError::launch("unknown stream")),
            _ => Ok(()),
        }
    }

    fn reset(&mut self) -> Result<bool, GpuError> {
        Ok(true)
    }

    /// An sm_80's occupancy limited by threads, blocks and shared memory per SM (the PTX tells
    /// ptxsim no real register count, so registers do not limit this estimate).
    fn occupancy(
        &mut self,
        module: ModuleId,
        kernel: &str,
        block_sizes: &[u32],
        dynamic_shared: u32,
    ) -> Option<Vec<Occupancy>> {
        let k = self
            .modules
            .get(&module)?
            .kernels()
            .iter()
            .find(|k| k.name == kernel)?
            .clone();
        let shared = k.static_shared_bytes + dynamic_shared as usize;
        Some(
            block_sizes
                .iter()
                .map(|&b| {
                    let blocks = sm80_blocks_per_sm(b, shared);
                    Occupancy {
                        block_threads: b,
                        blocks_per_sm: blocks,
                        fraction: super::cuda::occupancy::fraction(blocks, b, 32, SM80_THREADS),
                    }
                })
                .collect(),
        )
    }
}

/// Threads one sm_80 SM holds.
const SM80_THREADS: u32 = 2048;

/// Resident blocks of `block_threads` threads using `shared_bytes` of shared memory each on an
/// sm_80 SM: 2048 threads (whole warps), 32 blocks, 164 KiB of shared memory of which the
/// driver reserves 1 KiB per block.
fn sm80_blocks_per_sm(block_threads: u32, shared_bytes: usize) -> u32 {
    if block_threads == 0 {
        return 0;
    }
    let warps = block_threads.div_ceil(32);
    let by_threads = SM80_THREADS / 32 / warps;
    let by_shared = if shared_bytes == 0 {
        u32::MAX
    } else {
        u32::try_from(164 * 1024 / (shared_bytes + 1024)).unwrap_or(u32::MAX)
    };
    by_threads.min(32).min(by_shared)
}

/// Why ptxsim refused a module, with the PTX lines around the one it names: the module did not
/// load, so `%ptx` has nothing to show.
fn module_error(ptx: &str, e: &ptxsim::ModuleError) -> String {
    let line = match e {
        ptxsim::ModuleError::Parse { line, .. } | ptxsim::ModuleError::Unsupported { line, .. } => {
            *line
        }
    };
    let lines: Vec<&str> = ptx.lines().collect();
    let mut out = format!("ptxsim cannot load the PTX NVRTC produced: {e}");
    if line >= 1 && line <= lines.len() {
        let from = line.saturating_sub(2).max(1);
        let to = (line + 1).min(lines.len());
        out.push_str("\nPTX:");
        for n in from..=to {
            let mark = if n == line { ">" } else { " " };
            out.push_str(&format!("\n{mark} {n:>5} | {}", lines[n - 1].trim_end()));
        }
    }
    out
}

#[cfg(test)]
mod occupancy_tests {
    use super::sm80_blocks_per_sm;

    #[test]
    fn sm80_limits() {
        assert_eq!(sm80_blocks_per_sm(256, 0), 8); // threads
        assert_eq!(sm80_blocks_per_sm(32, 0), 32); // blocks
        assert_eq!(sm80_blocks_per_sm(48, 0), 32); // 2 warps each: 32 by threads, 32 by blocks
        assert_eq!(sm80_blocks_per_sm(1024, 0), 2);
        assert_eq!(sm80_blocks_per_sm(128, 48 * 1024), 3); // shared: 164 / 49
        assert_eq!(sm80_blocks_per_sm(0, 0), 0);
    }
}

#[cfg(test)]
mod load_error_tests {
    use super::*;

    #[test]
    fn a_module_that_fails_to_load_shows_its_ptx_lines() {
        let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n\tfrobnicate.u32 %r1;\n\tret;\n}\n";
        let mut b = SimBackend::new();
        let e = match b.load_module(ModuleImage::Ptx(ptx)) {
            Err(e) => e.message,
            Ok(_) => panic!("an unknown instruction must not load"),
        };
        assert!(!e.contains("see %ptx"), "{e}");
        assert!(e.contains(">     6 | \tfrobnicate.u32 %r1;"), "{e}");
        assert!(
            e.contains("      5 | {") && e.contains("      7 | \tret;"),
            "{e}"
        );
    }
}

#[cfg(test)]
mod workers_tests {
    use super::{Workers, WORKERS_VAR};

    #[test]
    fn the_variable_caps_the_workers_and_a_bad_value_is_named() {
        let w = Workers::resolve(None, 6);
        assert_eq!(w.count, 6);
        assert_eq!(w.source, "the cores this process may use");
        assert_eq!(Workers::resolve(Some(" "), 6).count, 6);
        let w = Workers::resolve(Some("2"), 6);
        assert_eq!((w.count, w.source.as_str()), (2, WORKERS_VAR));
        // More than the cores is the user's choice (up to ptxsim's 256).
        assert_eq!(Workers::resolve(Some("12"), 6).count, 12);
        for bad in ["0", "-1", "two", "1.5", "257"] {
            let w = Workers::resolve(Some(bad), 6);
            assert_eq!(w.count, 6, "{bad}");
            assert!(
                w.source.contains(&format!("{WORKERS_VAR}={bad:?}")),
                "{bad}: {}",
                w.source
            );
        }
    }
}
