//! The `Backend` trait: what [`super::DeviceState`] needs from a device, honest about what a
//! real GPU needs too (device memory, module load from PTX or CUBIN, launches with packed
//! parameters, streams, events, synchronisation, limits, a context reset).
//!
//! Implementations: `sim.rs` (ptxsim) and `cuda.rs` (cudarc driver API). A backend
//! knows nothing of array names, cells or C signatures: it deals in addresses, module ids and
//! lowered kernel names. It must not panic.

use super::{DeviceDescription, DeviceLimits, Dim3, GpuError};
use crate::compile::Target;
use crate::gpu::CudaOptions;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// A device address (`CUdeviceptr` on a GPU, ptxsim's address otherwise).
pub type DevPtr = u64;
/// A loaded module, numbered by the backend.
pub type ModuleId = u64;
/// A stream, numbered by the backend. `None` in the API means the default stream.
pub type StreamId = u64;
/// A recorded event.
pub type EventId = u64;
/// A CUDA graph instantiated by the backend ([`Backend::build_graph`]).
pub type GraphId = u64;

/// One node of a CUDA graph as the backend sees it: a launch with its packed parameters, or a
/// device-to-device copy. Nodes run in order, each after the one before.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum GraphNode {
    Launch {
        module: ModuleId,
        /// The lowered name.
        kernel: String,
        grid: Dim3,
        block: Dim3,
        shared_bytes: u32,
        /// Bytes of call stack per thread (`%limit stack`).
        stack_bytes: u32,
        /// One little-endian byte vector per parameter.
        params: Vec<Vec<u8>>,
    },
    Copy {
        dst: DevPtr,
        src: DevPtr,
        bytes: usize,
    },
}

/// What to load: NVRTC's PTX, or a CUBIN for the device's architecture.
#[derive(Debug, Clone, Copy)]
pub enum ModuleImage<'a> {
    Ptx(&'a str),
    Cubin(&'a [u8]),
}

/// What the device says about one kernel of a loaded module.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct KernelMeta {
    /// The lowered (mangled) name of the `.entry`.
    pub name: String,
    /// Size in bytes of each parameter, in order.
    pub param_sizes: Vec<usize>,
    pub static_shared_bytes: usize,
    pub local_bytes: usize,
    /// Registers per thread (on ptxsim: PTX virtual registers declared).
    pub registers: usize,
    /// `__launch_bounds__` / the device's maximum for this kernel.
    pub max_threads: Option<u32>,
}

/// One launch as the backend sees it.
#[derive(Debug, Clone)]
pub struct BackendLaunch {
    pub grid: Dim3,
    pub block: Dim3,
    pub shared_bytes: u32,
    pub stream: Option<StreamId>,
    /// Run under the checker (ptxsim).
    pub check: bool,
    pub cancel: Option<Arc<AtomicBool>>,
    /// Bytes of call stack per thread (`%limit stack`; CUDA's `cudaLimitStackSize`).
    pub stack_bytes: u32,
    /// Count hardware-like counters (ptxsim only; `%profile`). Other backends ignore it.
    pub counters: Option<ptxsim::counters::CounterConfig>,
    /// A cooperative launch: every block resident at once (`cuLaunchCooperativeKernel`;
    /// ptxsim's `LaunchConfig::cooperative`). The caller has checked that the grid fits.
    pub cooperative: bool,
}

/// A launch that completed.
#[derive(Debug, Clone, Default)]
pub struct BackendReport {
    pub printf: String,
    /// Non-fatal checker findings.
    pub findings: Vec<ptxsim::CheckReport>,
    /// Warp-instructions executed (ptxsim), for `%info`/timing notes.
    pub warp_instructions: Option<u64>,
    /// The counters of a launch that asked for them (`BackendLaunch::counters`, ptxsim).
    pub counters: Option<Box<ptxsim::counters::Counters>>,
    /// ptxsim's worker threads that ran the launch (`sim::Workers` caps them).
    pub sim_workers: Option<usize>,
}

/// A launch that did not complete.
#[derive(Debug, Clone)]
pub enum BackendLaunchError {
    /// Refused before running (bad configuration or parameters).
    Rejected(String),
    /// The CUDA kernel faulted (or was interrupted). `report` is the checker's when known.
    Fault {
        report: Option<Box<ptxsim::CheckReport>>,
        message: String,
        printf: String,
    },
}

/// Occupancy of one block size, from the driver's occupancy API.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Occupancy {
    pub block_threads: u32,
    /// Blocks of this size resident on one SM at a time.
    pub blocks_per_sm: u32,
    /// Resident warps / the SM's maximum warps, 0 to 1.
    pub fraction: f64,
}

/// A device: memory, modules, launches, streams, events.
pub trait Backend: Send {
    /// `"ptxsim"` or `"cuda"`.
    fn name(&self) -> &'static str;
    fn describe(&self) -> DeviceDescription;
    fn limits(&self) -> DeviceLimits;
    /// What NVRTC should produce for this device.
    fn compile_target(&self, options: &CudaOptions) -> Target;

    fn alloc(&mut self, bytes: usize) -> Result<DevPtr, GpuError>;
    fn free(&mut self, ptr: DevPtr) -> Result<(), GpuError>;
    /// Host → device, at the start of the allocation `dst`.
    fn htod(&mut self, dst: DevPtr, data: &[u8]) -> Result<(), GpuError>;
    /// Device → host, from the start of the allocation `src`.
    fn dtoh(&self, src: DevPtr, out: &mut [u8]) -> Result<(), GpuError>;
    /// Device → device.
    fn dtod(&mut self, dst: DevPtr, src: DevPtr, bytes: usize) -> Result<(), GpuError>;
    /// Device → host from `offset` bytes into the allocation `src`, where the backend can
    /// (`None`: it reads only whole allocations, with `dtoh`).
    fn dtoh_at(
        &self,
        _src: DevPtr,
        _offset: usize,
        _out: &mut [u8],
    ) -> Option<Result<(), GpuError>> {
        None
    }
    /// Whether a fresh allocation reads as zeros (ptxsim's do; a GPU's do not).
    fn alloc_is_zeroed(&self) -> bool {
        false
    }

    fn load_module(
        &mut self,
        image: ModuleImage<'_>,
    ) -> Result<(ModuleId, Vec<KernelMeta>), GpuError>;
    fn unload_module(&mut self, module: ModuleId);
    /// The device address and size of the module-scope variable `name` (its PTX name: a
    /// `__constant__` or `__device__` variable) of `module`, like `cuModuleGetGlobal`; None when
    /// the module has no variable of that name. Read and write it with `dtoh`/`htod`.
    fn symbol(&mut self, module: ModuleId, name: &str)
        -> Result<Option<(DevPtr, usize)>, GpuError>;
    /// Launches `kernel` (lowered name) of `module`; `params` holds one little-endian byte slice
    /// per parameter, each exactly the parameter's size.
    fn launch(
        &mut self,
        module: ModuleId,
        kernel: &str,
        config: &BackendLaunch,
        params: &[&[u8]],
    ) -> Result<BackendReport, BackendLaunchError>;

    fn create_stream(&mut self) -> Result<StreamId, GpuError>;
    fn destroy_stream(&mut self, stream: StreamId);
    fn record_event(&mut self, stream: Option<StreamId>) -> Result<EventId, GpuError>;
    /// Milliseconds between two recorded events (waits for `end`).
    fn event_elapsed_ms(&mut self, start: EventId, end: EventId) -> Result<f64, GpuError>;
    fn destroy_event(&mut self, event: EventId);
    /// Makes `stream` wait for the work recorded before `event` (`cuStreamWaitEvent`), without
    /// blocking the host.
    fn stream_wait_event(
        &mut self,
        stream: Option<StreamId>,
        event: EventId,
    ) -> Result<(), GpuError>;
    /// Waits for `stream` (None: the whole device).
    fn synchronize(&mut self, stream: Option<StreamId>) -> Result<(), GpuError>;
    /// Rebuilds the context after a sticky fault. Returns whether device memory and modules
    /// survived (ptxsim, or a GPU without a fault: true; a GPU context rebuild: false).
    fn reset(&mut self) -> Result<bool, GpuError>;

    /// Host → device on `stream`, returning before the copy is done where the backend can (the
    /// bytes go to pinned memory first). Default: a plain copy.
    fn htod_async(
        &mut self,
        dst: DevPtr,
        data: &[u8],
        _stream: Option<StreamId>,
    ) -> Result<(), GpuError> {
        self.htod(dst, data)
    }
    /// Device → host on `stream` into pinned memory; the bytes are taken with
    /// [`Backend::take_download`] once the stream is synchronised. `None`: this backend copies
    /// synchronously instead (the caller reads with `dtoh`).
    fn dtoh_async(
        &mut self,
        _src: DevPtr,
        _bytes: usize,
        _stream: Option<StreamId>,
    ) -> Result<Option<u64>, GpuError> {
        Ok(None)
    }
    /// The bytes of a finished [`Backend::dtoh_async`] (waits for its stream).
    fn take_download(&mut self, id: u64) -> Result<Vec<u8>, GpuError> {
        Err(GpuError::launch(format!("no download {id} in flight")))
    }
    /// Whether device memory can be lost to a fault (a GPU context, a worker process): then
    /// `DeviceState` keeps host copies of arrays to restore them.
    fn can_lose_memory(&self) -> bool {
        false
    }
    /// The process that holds the device, when it is not this one (a GPU worker).
    fn worker_pid(&self) -> Option<u32> {
        None
    }
    /// Why the context is unusable (a sticky fault), until [`Backend::reset`]; None when usable.
    fn fault(&self) -> Option<String> {
        None
    }
    /// Milliseconds of the last launch measured with device events (None: not measured, e.g.
    /// ptxsim or an asynchronous launch on a named stream).
    fn last_launch_ms(&self) -> Option<f64> {
        None
    }
    /// Device printf output collected at [`Backend::synchronize`], taken once.
    fn take_printf(&mut self) -> String {
        String::new()
    }
    /// Occupancy of `kernel` for each block size with `dynamic_shared` bytes per block (None:
    /// the backend has no occupancy API).
    fn occupancy(
        &mut self,
        _module: ModuleId,
        _kernel: &str,
        _block_sizes: &[u32],
        _dynamic_shared: u32,
    ) -> Option<Vec<Occupancy>> {
        None
    }
    /// Instantiates `nodes` as one executable graph (on a GPU: the nodes issued on a capturing
    /// stream, `cuStreamEndCapture`, `cuGraphInstantiate`). `None`: this backend has no graphs
    /// (ptxsim), and the caller replays the nodes one by one.
    fn build_graph(&mut self, _nodes: &[GraphNode]) -> Result<Option<GraphId>, GpuError> {
        Ok(None)
    }
    /// Launches a graph of [`Backend::build_graph`] on the default stream and waits for it
    /// (watching `cancel`); its device-event time is [`Backend::last_launch_ms`] afterwards.
    fn launch_graph(
        &mut self,
        graph: GraphId,
        _cancel: Option<&Arc<AtomicBool>>,
    ) -> Result<BackendReport, BackendLaunchError> {
        Err(BackendLaunchError::Rejected(format!(
            "this backend has no CUDA graph {graph}"
        )))
    }
    fn destroy_graph(&mut self, _graph: GraphId) {}
    /// Launches `nodes` one by one, back to back on the default stream (no graph), and waits:
    /// what a graph is compared with. The device-event time of them all is
    /// [`Backend::last_launch_ms`] afterwards. Only backends with graphs implement it.
    fn launch_nodes(
        &mut self,
        _nodes: &[GraphNode],
        _cancel: Option<&Arc<AtomicBool>>,
    ) -> Result<BackendReport, BackendLaunchError> {
        Err(BackendLaunchError::Rejected(
            "this backend has no stream launches to compare a graph with".into(),
        ))
    }
    /// Managed (unified) memory, `cuMemAllocManaged`, refused when the device has less free
    /// memory than asked. Default: ordinary memory (ptxsim's memory is all host memory).
    fn alloc_managed(&mut self, bytes: usize) -> Result<DevPtr, GpuError> {
        self.alloc(bytes)
    }
    /// Whether managed memory differs from device memory here (pages that migrate).
    fn has_managed_memory(&self) -> bool {
        false
    }
    /// Migrates the managed allocation `ptr` (its first `bytes`) to the device (`to_device`) or
    /// to the host, and waits (`cuMemPrefetchAsync`). Default: nothing to migrate.
    fn prefetch(&mut self, _ptr: DevPtr, _bytes: usize, _to_device: bool) -> Result<(), GpuError> {
        Ok(())
    }
    /// The block size that maximises occupancy and the smallest grid that fills the device,
    /// `(block threads, min grid)` (None: no occupancy API).
    fn suggest_block(
        &mut self,
        _module: ModuleId,
        _kernel: &str,
        _dynamic_shared: u32,
    ) -> Option<(u32, u32)> {
        None
    }
}
