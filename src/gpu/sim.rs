//! The ptxsim backend: the [`Backend`] trait on the ptxsim crate (a CPU simulator that runs the
//! PTX NVRTC emits and checks every memory access). Launches run on ptxsim's worker pool, honour
//! the Jupyter interrupt flag and report faults with the checker's report.
//!
//! ptxsim runs each launch to completion, so streams and events are bookkeeping only (an event
//! records the wall clock). This module must not know about array names or cells.

use super::backend::{
    Backend, BackendLaunch, BackendLaunchError, BackendReport, DevPtr, EventId, KernelMeta,
    ModuleId, ModuleImage, StreamId,
};
use super::{CudaOptions, DeviceDescription, DeviceLimits, GpuError};
use crate::compile::Target;
use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// ptxsim as a backend.
pub struct SimBackend {
    device: ptxsim::Device,
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

fn worker_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
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
            ("worker threads".into(), worker_threads().to_string()),
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
        let module = self.device.load_module(ptx).map_err(|e| {
            GpuError::compile(format!(
                "ptxsim cannot load the PTX NVRTC produced: {e} (see %ptx)"
            ))
        })?;
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
        match self.device.launch(m, kernel, &cfg, params) {
            Ok(r) => Ok(BackendReport {
                printf: r.printf,
                findings: r.reports,
                warp_instructions: Some(r.warp_instructions),
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

    fn synchronize(&mut self, stream: Option<StreamId>) -> Result<(), GpuError> {
        match stream {
            Some(s) if !self.streams.contains(&s) => Err(GpuError::launch("unknown stream")),
            _ => Ok(()),
        }
    }

    fn reset(&mut self) -> Result<bool, GpuError> {
        Ok(true)
    }
}
