//! The GPU backend: the [`Backend`] trait on an NVIDIA GPU through cudarc's driver API
//! (`cudarc::driver::{result, sys}`, loaded dynamically): the device's primary context, device
//! memory, modules loaded from NVRTC's CUBIN (or PTX for the driver's JIT), launches with
//! parameters packed by `args.rs`, named streams, events for timing, the occupancy API, device
//! printf captured from the process's stdout, and sticky faults.
//!
//! Rules this backend keeps:
//! - **Construction never panics.** cudarc panics when `libcuda` or one of its symbols is
//!   missing, so [`CudaBackend::new`] checks the library and every symbol it will call first.
//! - **The context is made current on every call**, so any thread of the Jupyter kernel
//!   process may use the backend (it is `Send`, and `DeviceState` serialises calls).
//! - **Launches on the default stream are synchronous**: timed with events, waited for while
//!   watching the interrupt flag, then synchronised so faults and printf belong to the cell that
//!   launched. **Launches on a named stream are asynchronous**: their faults and printf surface
//!   at `%sync` (or at the next synchronising call). Named streams are blocking streams, so
//!   every default-stream operation (copies, `%print`) waits for them.
//! - **Sticky faults** (illegal address, launch failure, …) mark the context lost; every later
//!   call fails with a `DeviceFault` naming the cause until [`Backend::reset`] rebuilds the
//!   primary context (all device memory and modules are gone; `DeviceState` restores what it can).
//! - Host↔device copies of 4 MiB or more go through two pinned staging buffers, overlapping the
//!   host copy with the DMA (`NBCUDA_PINNED=0` turns this off).
//!
//! This module knows nothing of array names, cells or C signatures.

mod async_copy;
mod capture;
mod describe;
mod driver;
mod graph;
mod launch;
pub mod occupancy;
pub mod select;
mod staging;

pub use capture::{capture_stdout, Captured, DEFAULT_LIMIT as PRINTF_LIMIT};
pub use driver::{cubin_function_names, is_sticky, missing_symbols};

use super::backend::{
    Backend, BackendLaunch, BackendLaunchError, BackendReport, DevPtr, EventId, KernelMeta,
    ModuleId, ModuleImage, Occupancy, StreamId,
};
use super::detect::{self, GpuInfo};
use super::{CudaOptions, DeviceDescription, DeviceLimits, GpuError};
use crate::compile::Target;
use cudarc::driver::result::DriverError;
use cudarc::driver::sys::{
    self, CUdevice_attribute as Attr, CUfunction_attribute as FAttr, CUresult,
};
use describe::gib;
use select::ImageChoice;
use staging::{Staging, STAGING_THRESHOLD};
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

struct Module {
    raw: sys::CUmodule,
    functions: HashMap<String, sys::CUfunction>,
    /// The module calls device printf.
    printf: bool,
    /// Dynamic shared memory opted in per function (above the 48 KiB default).
    dyn_shared: HashMap<String, u32>,
}

struct Stream {
    raw: sys::CUstream,
    /// Lowered names of CUDA kernels launched since the last synchronisation.
    pending: Vec<String>,
}

/// Device attributes beyond [`GpuInfo`].
#[derive(Debug, Clone)]
struct Attrs {
    limits: DeviceLimits,
    max_threads_per_sm: u32,
    shared_default: u32,
    shared_per_sm: u32,
    regs_per_sm: u32,
    regs_per_block: u32,
    l2_bytes: u32,
    copy_engines: u32,
    ecc: bool,
    watchdog: bool,
}

/// An NVIDIA GPU through the CUDA driver API.
pub struct CudaBackend {
    info: GpuInfo,
    attrs: Attrs,
    device: sys::CUdevice,
    ctx: sys::CUcontext,
    /// References to the primary context this backend holds (one, plus one per rebuild).
    primary_refs: u32,
    driver_version: i32,
    modules: HashMap<ModuleId, Module>,
    streams: HashMap<StreamId, Stream>,
    events: HashMap<EventId, sys::CUevent>,
    /// Reused start/end events of default-stream launches.
    timing: Option<(sys::CUevent, sys::CUevent)>,
    allocations: HashMap<DevPtr, usize>,
    last_ms: Option<f64>,
    /// Why the context is lost (sticky fault), until `reset`.
    lost: RefCell<Option<String>>,
    printf_pending: String,
    /// Why CUBINs must not be used (the driver refused one, or `NBCUDA_GPU_CODE=ptx`).
    force_ptx: Option<String>,
    /// The last choice `compile_target` made, for load errors.
    last_choice: RefCell<Option<ImageChoice>>,
    staging: RefCell<Option<Staging>>,
    staging_enabled: bool,
    /// Pinned buffers of asynchronous copies in flight (`%upload`, `%download`).
    async_bufs: HashMap<u64, async_copy::AsyncBuf>,
    /// The call stack per thread last set on the context (`CU_LIMIT_STACK_SIZE`; None: the
    /// driver's default, never set on this context).
    stack_set: Option<u32>,
    /// Executable CUDA graphs (`%graph`), by id.
    graphs: HashMap<u64, sys::CUgraphExec>,
    next_id: u64,
}

// SAFETY: the raw handles are CUDA driver objects, valid from any thread once the owning context
// is current; every method makes `ctx` current before using them, and `DeviceState` serialises
// calls (the backend is never shared between threads without a lock: it is not `Sync`).
unsafe impl Send for CudaBackend {}

fn drv(r: CUresult) -> Result<(), DriverError> {
    r.result()
}

/// NVRTC's version and the architectures it compiles for.
type NvrtcInfo = ((i32, i32), Vec<i32>);

/// Loads NVRTC and asks its version ahead of the first `%%cuda` cell (a GPU worker calls this
/// on a thread as it starts: loading libnvrtc takes about 20 ms).
pub fn warm_up() {
    let _ = nvrtc_info();
}

/// NVRTC's version and architectures, queried once (None when NVRTC cannot be loaded).
fn nvrtc_info() -> Option<NvrtcInfo> {
    static INFO: OnceLock<Option<NvrtcInfo>> = OnceLock::new();
    INFO.get_or_init(|| {
        let version = crate::compile::library::nvrtc_version().ok()?;
        let archs = std::panic::catch_unwind(|| {
            let mut n: std::ffi::c_int = 0;
            // SAFETY: NVRTC is loaded (nvrtc_version succeeded); writes one int.
            let ok = unsafe { cudarc::nvrtc::sys::nvrtcGetNumSupportedArchs(&mut n) };
            if ok != cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS || n <= 0 || n > 256 {
                return Vec::new();
            }
            let mut v = vec![0 as std::ffi::c_int; n as usize];
            // SAFETY: the buffer holds the `n` ints NVRTC reported.
            let ok = unsafe { cudarc::nvrtc::sys::nvrtcGetSupportedArchs(v.as_mut_ptr()) };
            if ok != cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
                return Vec::new();
            }
            v
        })
        .unwrap_or_default();
        Some((version, archs))
    })
    .clone()
}

impl CudaBackend {
    /// Opens GPU `ordinal` (its primary context). Never panics: `Err` says why not.
    pub fn new(ordinal: usize) -> Result<CudaBackend, String> {
        let missing = missing_symbols();
        if missing.len() == driver::REQUIRED_SYMBOLS.len() {
            return Err("libcuda.so not found (no NVIDIA driver on this machine)".into());
        }
        if !missing.is_empty() {
            return Err(format!(
                "the NVIDIA driver is too old: libcuda lacks {}",
                missing.join(", ")
            ));
        }
        std::panic::catch_unwind(|| CudaBackend::open(ordinal)).unwrap_or_else(|_| {
            Err("the CUDA driver bindings panicked while opening the GPU".into())
        })
    }

    fn open(ordinal: usize) -> Result<CudaBackend, String> {
        let gpus = detect::detect_gpus()?;
        let info = gpus.get(ordinal).cloned().ok_or_else(|| {
            format!(
                "no GPU {ordinal}: this machine has {} (0 to {})",
                gpus.len(),
                gpus.len().saturating_sub(1)
            )
        })?;
        let e = driver::error_text;
        let ord = i32::try_from(ordinal).map_err(|_| format!("no GPU {ordinal}"))?;
        let device = cudarc::driver::result::device::get(ord).map_err(|x| e("cuDeviceGet", x))?;
        let mut driver_version = 0;
        // SAFETY: writes one int.
        drv(unsafe { sys::cuDriverGetVersion(&mut driver_version) })
            .map_err(|x| e("cuDriverGetVersion", x))?;
        // SAFETY: `device` came from cuDeviceGet.
        let ctx = unsafe { cudarc::driver::result::primary_ctx::retain(device) }
            .map_err(|x| e("cuDevicePrimaryCtxRetain", x))?;
        // SAFETY: a context just retained.
        if let Err(x) = drv(unsafe { sys::cuCtxSetCurrent(ctx) }) {
            // SAFETY: releases the reference taken above.
            let _ = unsafe { sys::cuDevicePrimaryCtxRelease_v2(device) };
            return Err(e("cuCtxSetCurrent", x));
        }
        let attr = |a: Attr| -> u32 {
            // SAFETY: `device` came from cuDeviceGet.
            unsafe { cudarc::driver::result::device::get_attribute(device, a) }
                .ok()
                .and_then(|v| u32::try_from(v).ok())
                .unwrap_or(0)
        };
        let shared_optin = attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
        let shared_default = attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
        let attrs = Attrs {
            limits: DeviceLimits {
                max_threads_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
                max_block: (
                    attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
                    attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
                    attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z),
                ),
                max_grid: (
                    attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
                    attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
                    attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z),
                ),
                max_shared_per_block: shared_optin.max(shared_default),
                warp_size: attr(Attr::CU_DEVICE_ATTRIBUTE_WARP_SIZE).max(1),
            },
            max_threads_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR),
            shared_default,
            shared_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
            regs_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR),
            regs_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK),
            l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
            copy_engines: attr(Attr::CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT),
            ecc: attr(Attr::CU_DEVICE_ATTRIBUTE_ECC_ENABLED) != 0,
            watchdog: attr(Attr::CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT) != 0,
        };
        let force_ptx = match std::env::var("NBCUDA_GPU_CODE").ok().as_deref() {
            Some("ptx") => Some("NBCUDA_GPU_CODE=ptx asks for PTX".to_string()),
            _ => None,
        };
        let staging_enabled = std::env::var("NBCUDA_PINNED").ok().as_deref() != Some("0");
        Ok(CudaBackend {
            info,
            attrs,
            device,
            ctx,
            primary_refs: 1,
            driver_version,
            modules: HashMap::new(),
            streams: HashMap::new(),
            events: HashMap::new(),
            timing: None,
            allocations: HashMap::new(),
            last_ms: None,
            lost: RefCell::new(None),
            printf_pending: String::new(),
            force_ptx,
            last_choice: RefCell::new(None),
            staging: RefCell::new(None),
            staging_enabled,
            async_bufs: HashMap::new(),
            graphs: HashMap::new(),
            stack_set: None,
            next_id: 1,
        })
    }

    /// The device as detection reports it.
    pub fn gpu(&self) -> &GpuInfo {
        &self.info
    }

    /// The driver's CUDA version, e.g. 12040 for 12.4.
    pub fn driver_version(&self) -> i32 {
        self.driver_version
    }

    /// Turns the pinned staging of large copies on or off (for benchmarks).
    pub fn set_pinned_staging(&mut self, on: bool) {
        self.staging_enabled = on;
    }

    /// What NVRTC should produce for this device (and a cell's `--arch`).
    pub fn image_choice(&self, requested: Option<&str>) -> ImageChoice {
        let Some((nvrtc, archs)) = nvrtc_info() else {
            return ImageChoice::Unusable("NVRTC could not be loaded".into());
        };
        select::choose_image(
            self.info.compute_capability,
            self.driver_version,
            nvrtc,
            &archs,
            requested,
            self.force_ptx.as_deref(),
        )
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Makes the context current, failing when it was lost to a fault.
    fn usable(&self) -> Result<(), GpuError> {
        if let Some(why) = self.lost.borrow().as_ref() {
            return Err(GpuError::fault(format!(
                "the CUDA context was lost to a device fault ({why}); %reset rebuilds it"
            )));
        }
        // SAFETY: `ctx` is the retained primary context of `device`.
        drv(unsafe { sys::cuCtxSetCurrent(self.ctx) })
            .map_err(|e| GpuError::launch(driver::error_text("cuCtxSetCurrent", e)))
    }

    /// Maps a driver error to a user error, marking the context lost on a sticky one.
    fn fail(&self, call: &str, e: DriverError) -> GpuError {
        if is_sticky(e.0) {
            let words = driver::fault_words(e.0);
            *self.lost.borrow_mut() = Some(words.clone());
            return GpuError::fault(format!(
                "{words}, reported by {call}: the CUDA context is lost; %reset rebuilds it"
            ));
        }
        let text = driver::error_text(call, e);
        match e.0 {
            CUresult::CUDA_ERROR_OUT_OF_MEMORY => GpuError::memory(text),
            _ => GpuError::launch(text),
        }
    }

    fn check_span(&self, ptr: DevPtr, bytes: usize, what: &str) -> Result<(), GpuError> {
        match self.allocations.get(&ptr) {
            Some(size) if bytes <= *size => Ok(()),
            Some(size) => Err(GpuError::memory(format!(
                "{what} of {bytes} bytes into an allocation of {size} bytes"
            ))),
            None => Err(GpuError::memory(format!(
                "{what}: {ptr:#x} is not a live allocation of this GPU"
            ))),
        }
    }

    fn any_printf(&self) -> bool {
        self.modules.values().any(|m| m.printf)
    }

    /// Runs `f` (which synchronises) with stdout captured when a loaded module uses printf.
    fn with_printf<R>(&self, f: impl FnOnce() -> R) -> (R, String) {
        if !self.any_printf() {
            return (f(), String::new());
        }
        let (r, cap) = capture_stdout(PRINTF_LIMIT, f);
        let mut text = cap.text;
        if let Some(why) = cap.unavailable {
            text.push_str(&format!(
                "[nbcuda: device printf could not be captured: {why}]\n"
            ));
        }
        (r, text)
    }

    /// A usable context after a sticky fault: the primary context reset (it stays retained: a
    /// reset does not release it) and retained afresh. Current drivers refuse this after an
    /// illegal address (the process is poisoned), which is why the GPU normally lives in a
    /// worker process (see `super::worker`); this is the in-process path's last try.
    fn rebuild_context(&mut self) -> Result<sys::CUcontext, String> {
        let text = |call: &str, r: CUresult| driver::error_text(call, DriverError(r));
        // SAFETY: the dead context's handles were dropped by `destroy_all`; nothing uses it.
        unsafe {
            let _ = sys::cuCtxSetCurrent(std::ptr::null_mut());
            let reset = sys::cuDevicePrimaryCtxReset_v2(self.device);
            let mut ctx: sys::CUcontext = std::ptr::null_mut();
            let retained = sys::cuDevicePrimaryCtxRetain(&mut ctx, self.device);
            if retained == CUresult::CUDA_SUCCESS {
                self.primary_refs += 1;
                if drv(sys::cuCtxSetCurrent(ctx)).is_ok() && drv(sys::cuCtxSynchronize()).is_ok() {
                    return Ok(ctx);
                }
            }
            Err(format!(
                "{}, then {}",
                text("cuDevicePrimaryCtxReset", reset),
                text("cuDevicePrimaryCtxRetain", retained)
            ))
        }
    }

    fn destroy_all(&mut self) {
        let alive = self.lost.borrow().is_none() && self.usable().is_ok();
        let modules: Vec<Module> = self.modules.drain().map(|(_, m)| m).collect();
        let streams: Vec<Stream> = self.streams.drain().map(|(_, s)| s).collect();
        let events: Vec<sys::CUevent> = self.events.drain().map(|(_, e)| e).collect();
        let timing = self.timing.take();
        let allocations: Vec<DevPtr> = self.allocations.drain().map(|(p, _)| p).collect();
        let staging = self.staging.borrow_mut().take();
        let pinned: Vec<*mut u8> = self.async_bufs.drain().map(|(_, b)| b.ptr()).collect();
        let graphs: Vec<sys::CUgraphExec> = self.graphs.drain().map(|(_, g)| g).collect();
        if !alive {
            return; // everything dies with the context
        }
        // SAFETY: every handle below was created in `ctx` (current) and is destroyed once.
        unsafe {
            for g in graphs {
                let _ = sys::cuGraphExecDestroy(g);
            }
            for m in modules {
                let _ = sys::cuModuleUnload(m.raw);
            }
            for s in streams {
                let _ = sys::cuStreamDestroy_v2(s.raw);
            }
            for e in events {
                let _ = sys::cuEventDestroy_v2(e);
            }
            if let Some((a, b)) = timing {
                let _ = sys::cuEventDestroy_v2(a);
                let _ = sys::cuEventDestroy_v2(b);
            }
            for p in allocations {
                let _ = sys::cuMemFree_v2(p);
            }
            if let Some(s) = staging {
                s.free();
            }
            for p in pinned {
                let _ = sys::cuMemFreeHost(p.cast());
            }
        }
    }

    fn function(&self, module: ModuleId, kernel: &str) -> Option<sys::CUfunction> {
        self.modules.get(&module)?.functions.get(kernel).copied()
    }

    fn kernel_meta(f: sys::CUfunction, name: &str, param_sizes: Vec<usize>) -> KernelMeta {
        let a = |attr: FAttr| -> usize {
            // SAFETY: `f` is a function of a loaded module.
            unsafe { cudarc::driver::result::function::get_function_attribute(f, attr) }
                .ok()
                .and_then(|v| usize::try_from(v).ok())
                .unwrap_or(0)
        };
        KernelMeta {
            name: name.to_string(),
            param_sizes,
            static_shared_bytes: a(FAttr::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
            local_bytes: a(FAttr::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
            registers: a(FAttr::CU_FUNC_ATTRIBUTE_NUM_REGS),
            max_threads: u32::try_from(a(FAttr::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK))
                .ok()
                .filter(|t| *t > 0),
        }
    }

    fn load_ptx(&mut self, ptx: &str) -> Result<sys::CUmodule, GpuError> {
        let text = CString::new(ptx)
            .map_err(|_| GpuError::compile("the PTX contains a NUL byte; it cannot be loaded"))?;
        let mut log = vec![0u8; 16 * 1024];
        let mut options = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        let mut values: [*mut c_void; 2] = [log.as_mut_ptr().cast(), log.len() as *mut c_void];
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: NUL-terminated PTX; two options with matching values (a log buffer and its
        // size, passed by value as the driver expects).
        let r = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                text.as_ptr().cast(),
                2,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        match drv(r) {
            Ok(()) => Ok(module),
            Err(e) if e.0 == CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION => {
                let nvrtc = nvrtc_info().map(|(v, _)| v).unwrap_or((0, 0));
                let why = select::driver_too_old_for_ptx(
                    self.driver_version,
                    nvrtc,
                    select::ptx_isa_of(ptx),
                )
                .unwrap_or_else(|| {
                    "the driver does not support this PTX version (update the NVIDIA driver)".into()
                });
                Err(GpuError::compile(format!(
                    "the driver cannot JIT-compile NVRTC's PTX: {why}"
                )))
            }
            Err(e) if is_sticky(e.0) => Err(self.fail("cuModuleLoadDataEx", e)),
            Err(e) => {
                let end = log.iter().position(|b| *b == 0).unwrap_or(log.len());
                let log = String::from_utf8_lossy(&log[..end]).trim().to_string();
                let mut msg = format!(
                    "the driver could not load the PTX: {}",
                    driver::error_text("cuModuleLoadDataEx", e)
                );
                if !log.is_empty() {
                    msg.push_str(&format!("\n{log}"));
                }
                if let Some(ImageChoice::Unusable(why)) = self.last_choice.borrow().as_ref() {
                    msg.push_str(&format!("\n{why}"));
                }
                Err(GpuError::compile(msg))
            }
        }
    }

    fn lost_reason(&self) -> Option<String> {
        self.lost.borrow().clone()
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        self.destroy_all();
        // SAFETY: releases every reference to the primary context that `open` and `reset` took.
        unsafe {
            for _ in 0..self.primary_refs {
                let _ = sys::cuDevicePrimaryCtxRelease_v2(self.device);
            }
        }
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn describe(&self) -> DeviceDescription {
        self.describe_device()
    }

    fn limits(&self) -> DeviceLimits {
        self.attrs.limits.clone()
    }

    fn compile_target(&self, options: &CudaOptions) -> Target {
        let choice = self.image_choice(options.arch.as_deref());
        let target = match &choice {
            ImageChoice::Cubin { arch } => Target::Cubin { arch: arch.clone() },
            ImageChoice::Ptx { arch, .. } => Target::Ptx { arch: arch.clone() },
            ImageChoice::Unusable(_) => Target::Ptx {
                arch: self.info.arch().replace("sm_", "compute_"),
            },
        };
        *self.last_choice.borrow_mut() = Some(choice);
        target
    }

    fn alloc(&mut self, bytes: usize) -> Result<DevPtr, GpuError> {
        self.usable()?;
        let mut p: sys::CUdeviceptr = 0;
        // SAFETY: allocates in the current context.
        match drv(unsafe { sys::cuMemAlloc_v2(&mut p, bytes.max(1)) }) {
            Ok(()) => {
                self.allocations.insert(p, bytes);
                Ok(p)
            }
            Err(e) if e.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                let (free, total) = cudarc::driver::result::mem_get_info().unwrap_or((0, 0));
                Err(GpuError::memory(format!(
                    "out of GPU memory: {bytes} bytes asked, {} of {} free",
                    gib(free as u64),
                    gib(total as u64)
                )))
            }
            Err(e) => Err(self.fail("cuMemAlloc", e)),
        }
    }

    fn free(&mut self, ptr: DevPtr) -> Result<(), GpuError> {
        if self.allocations.remove(&ptr).is_none() {
            return Err(GpuError::memory(format!(
                "{ptr:#x} is not a live allocation of this GPU"
            )));
        }
        if self.lost.borrow().is_some() {
            return Ok(()); // freed with the context
        }
        self.usable()?;
        // SAFETY: a live allocation of this context, freed once.
        drv(unsafe { sys::cuMemFree_v2(ptr) }).map_err(|e| self.fail("cuMemFree", e))
    }

    fn htod(&mut self, dst: DevPtr, data: &[u8]) -> Result<(), GpuError> {
        self.usable()?;
        self.check_span(dst, data.len(), "a copy to the GPU")?;
        if data.len() >= STAGING_THRESHOLD {
            if let Some(st) = self.staging() {
                return self
                    .htod_staged(&st, dst, data)
                    .map_err(|e| self.fail("cuMemcpyHtoDAsync", e));
            }
        }
        // SAFETY: `data` is valid for its length; the range lies inside the allocation.
        drv(unsafe { sys::cuMemcpyHtoD_v2(dst, data.as_ptr().cast(), data.len()) })
            .map_err(|e| self.fail("cuMemcpyHtoD", e))
    }

    fn dtoh(&self, src: DevPtr, out: &mut [u8]) -> Result<(), GpuError> {
        self.usable()?;
        self.check_span(src, out.len(), "a copy from the GPU")?;
        if out.len() >= STAGING_THRESHOLD {
            if let Some(st) = self.staging() {
                return self
                    .dtoh_staged(&st, src, out)
                    .map_err(|e| self.fail("cuMemcpyDtoHAsync", e));
            }
        }
        // SAFETY: `out` is valid for writes of its length; the range lies inside the allocation.
        drv(unsafe { sys::cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), src, out.len()) })
            .map_err(|e| self.fail("cuMemcpyDtoH", e))
    }

    fn dtod(&mut self, dst: DevPtr, src: DevPtr, bytes: usize) -> Result<(), GpuError> {
        self.usable()?;
        self.check_span(dst, bytes, "a device copy")?;
        self.check_span(src, bytes, "a device copy")?;
        // SAFETY: both ranges lie inside live allocations.
        drv(unsafe { sys::cuMemcpyDtoD_v2(dst, src, bytes) })
            .map_err(|e| self.fail("cuMemcpyDtoD", e))
    }

    fn load_module(
        &mut self,
        image: ModuleImage<'_>,
    ) -> Result<(ModuleId, Vec<KernelMeta>), GpuError> {
        self.usable()?;
        let (raw, names, printf, ptx) = match image {
            ModuleImage::Cubin(bytes) => {
                let mut m: sys::CUmodule = std::ptr::null_mut();
                // SAFETY: an ELF image NVRTC produced; the driver reads it during the call.
                match drv(unsafe { sys::cuModuleLoadData(&mut m, bytes.as_ptr().cast()) }) {
                    Ok(()) => (
                        m,
                        cubin_function_names(bytes),
                        driver::uses_printf(bytes),
                        None,
                    ),
                    Err(e) if is_sticky(e.0) => return Err(self.fail("cuModuleLoadData", e)),
                    Err(e) => {
                        let why = driver::error_text("cuModuleLoadData", e);
                        self.force_ptx = Some(format!("the driver refused NVRTC's CUBIN ({why})"));
                        return Err(GpuError::compile(format!(
                            "the driver could not load the CUBIN NVRTC made for {}: {why}; \
                             nbcuda compiles to PTX for the driver's JIT from now on",
                            self.info.arch()
                        )));
                    }
                }
            }
            ModuleImage::Ptx(text) => {
                let m = self.load_ptx(text)?;
                let entries = ptxsim::ptx_entries(text).unwrap_or_default();
                (
                    m,
                    entries.iter().map(|e| e.name.clone()).collect(),
                    driver::uses_printf(text.as_bytes()),
                    Some(entries),
                )
            }
        };
        let mut functions = HashMap::new();
        let mut metas = Vec::new();
        for name in names {
            let Ok(c) = CString::new(name.as_str()) else {
                continue;
            };
            let mut f: sys::CUfunction = std::ptr::null_mut();
            // SAFETY: a loaded module and a NUL-terminated name.
            if drv(unsafe { sys::cuModuleGetFunction(&mut f, raw, c.as_ptr()) }).is_err() {
                continue; // a device function, not a CUDA kernel
            }
            let sizes = ptx
                .as_ref()
                .and_then(|es| es.iter().find(|e| e.name == name))
                .map(|e| e.params.iter().map(|p| p.size).collect())
                .unwrap_or_default();
            metas.push(CudaBackend::kernel_meta(f, &name, sizes));
            functions.insert(name, f);
        }
        let id = self.id();
        self.modules.insert(
            id,
            Module {
                raw,
                functions,
                printf,
                dyn_shared: HashMap::new(),
            },
        );
        Ok((id, metas))
    }

    fn launch(
        &mut self,
        module: ModuleId,
        kernel: &str,
        config: &BackendLaunch,
        params: &[&[u8]],
    ) -> Result<BackendReport, BackendLaunchError> {
        self.launch_kernel(module, kernel, config, params)
    }

    fn unload_module(&mut self, module: ModuleId) {
        if let Some(m) = self.modules.remove(&module) {
            if self.usable().is_ok() {
                // SAFETY: a module of this context, unloaded once.
                let _ = unsafe { sys::cuModuleUnload(m.raw) };
            }
        }
    }

    fn symbol(
        &mut self,
        module: ModuleId,
        name: &str,
    ) -> Result<Option<(DevPtr, usize)>, GpuError> {
        self.usable()?;
        let Some(m) = self.modules.get(&module) else {
            return Ok(None);
        };
        let Ok(c) = CString::new(name) else {
            return Ok(None);
        };
        let mut ptr: sys::CUdeviceptr = 0;
        let mut bytes: usize = 0;
        // SAFETY: a loaded module of this context and a NUL-terminated name; the driver writes
        // the two out-parameters.
        match drv(unsafe { sys::cuModuleGetGlobal_v2(&mut ptr, &mut bytes, m.raw, c.as_ptr()) }) {
            Ok(()) => Ok(Some((ptr, bytes))),
            Err(e) if is_sticky(e.0) => Err(self.fail("cuModuleGetGlobal", e)),
            Err(_) => Ok(None),
        }
    }

    fn create_stream(&mut self) -> Result<StreamId, GpuError> {
        self.usable()?;
        let mut s: sys::CUstream = std::ptr::null_mut();
        let flags = sys::CUstream_flags::CU_STREAM_DEFAULT as std::ffi::c_uint;
        // SAFETY: creates a (blocking) stream in the current context.
        drv(unsafe { sys::cuStreamCreate(&mut s, flags) })
            .map_err(|e| self.fail("cuStreamCreate", e))?;
        let id = self.id();
        self.streams.insert(
            id,
            Stream {
                raw: s,
                pending: Vec::new(),
            },
        );
        Ok(id)
    }

    fn destroy_stream(&mut self, stream: StreamId) {
        if let Some(s) = self.streams.remove(&stream) {
            if self.usable().is_ok() {
                // SAFETY: a stream of this context, destroyed once.
                let _ = unsafe { sys::cuStreamDestroy_v2(s.raw) };
            }
        }
    }

    fn record_event(&mut self, stream: Option<StreamId>) -> Result<EventId, GpuError> {
        self.usable()?;
        let raw_stream = match stream {
            None => std::ptr::null_mut(),
            Some(id) => self
                .streams
                .get(&id)
                .map(|s| s.raw)
                .ok_or_else(|| GpuError::launch(format!("unknown stream {id}")))?,
        };
        let mut e: sys::CUevent = std::ptr::null_mut();
        // SAFETY: creates and records an event in the current context.
        unsafe {
            drv(sys::cuEventCreate(&mut e, 0)).map_err(|x| self.fail("cuEventCreate", x))?;
            if let Err(x) = drv(sys::cuEventRecord(e, raw_stream)) {
                let _ = sys::cuEventDestroy_v2(e);
                return Err(self.fail("cuEventRecord", x));
            }
        }
        let id = self.id();
        self.events.insert(id, e);
        Ok(id)
    }

    fn event_elapsed_ms(&mut self, start: EventId, end: EventId) -> Result<f64, GpuError> {
        self.usable()?;
        let (Some(a), Some(b)) = (
            self.events.get(&start).copied(),
            self.events.get(&end).copied(),
        ) else {
            return Err(GpuError::launch("unknown event"));
        };
        let mut ms: f32 = 0.0;
        // SAFETY: two recorded events of this context.
        unsafe {
            drv(sys::cuEventSynchronize(b)).map_err(|e| self.fail("cuEventSynchronize", e))?;
            drv(sys::cuEventElapsedTime(&mut ms, a, b))
                .map_err(|e| self.fail("cuEventElapsedTime", e))?;
        }
        Ok(f64::from(ms))
    }

    fn stream_wait_event(
        &mut self,
        stream: Option<StreamId>,
        event: EventId,
    ) -> Result<(), GpuError> {
        self.usable()?;
        let raw_stream = match stream {
            None => std::ptr::null_mut(),
            Some(id) => self
                .streams
                .get(&id)
                .map(|s| s.raw)
                .ok_or_else(|| GpuError::launch(format!("unknown stream {id}")))?,
        };
        let e = *self
            .events
            .get(&event)
            .ok_or_else(|| GpuError::launch("unknown event"))?;
        // SAFETY: a stream and an event of this context.
        unsafe {
            drv(sys::cuStreamWaitEvent(raw_stream, e, 0))
                .map_err(|x| self.fail("cuStreamWaitEvent", x))
        }
    }

    fn destroy_event(&mut self, event: EventId) {
        if let Some(e) = self.events.remove(&event) {
            if self.usable().is_ok() {
                // SAFETY: an event of this context, destroyed once.
                let _ = unsafe { sys::cuEventDestroy_v2(e) };
            }
        }
    }

    fn synchronize(&mut self, stream: Option<StreamId>) -> Result<(), GpuError> {
        self.usable()?;
        let raw = match stream {
            None => None,
            Some(id) => Some(
                self.streams
                    .get(&id)
                    .map(|s| s.raw)
                    .ok_or_else(|| GpuError::launch(format!("unknown stream {id}")))?,
            ),
        };
        let run = || -> Result<(), DriverError> {
            // SAFETY: the current context, or one of its streams.
            unsafe {
                match raw {
                    Some(s) => drv(sys::cuStreamSynchronize(s)),
                    None => drv(sys::cuCtxSynchronize()),
                }
            }
        };
        let (result, printf) = self.with_printf(run);
        self.printf_pending.push_str(&printf);
        let pending: Vec<String> = self
            .streams
            .iter_mut()
            .filter(|(id, _)| stream.is_none() || stream == Some(**id))
            .flat_map(|(_, s)| std::mem::take(&mut s.pending))
            .collect();
        if result.is_ok() {
            self.release_uploads(stream);
        }
        match result {
            Ok(()) => Ok(()),
            Err(e) if is_sticky(e.0) => {
                let words = driver::fault_words(e.0);
                *self.lost.borrow_mut() = Some(words.clone());
                let who = if pending.is_empty() {
                    String::new()
                } else {
                    format!(
                        " (CUDA kernels launched asynchronously: {})",
                        pending.join(", ")
                    )
                };
                Err(GpuError::fault(format!(
                    "{words} in a CUDA kernel launched on a stream{who}: the CUDA context is \
                     lost; %reset rebuilds it"
                )))
            }
            Err(e) => Err(self.fail("cuStreamSynchronize", e)),
        }
    }

    fn reset(&mut self) -> Result<bool, GpuError> {
        if self.lost.borrow().is_none() {
            return Ok(true);
        }
        self.destroy_all();
        let rebuilt = self.rebuild_context();
        self.ctx = rebuilt.map_err(|why| {
            GpuError::fault(format!(
                "the CUDA context could not be rebuilt: {why}; restart the Jupyter kernel"
            ))
        })?;
        *self.lost.borrow_mut() = None;
        self.last_ms = None;
        self.stack_set = None;
        self.usable()?;
        Ok(false)
    }

    fn can_lose_memory(&self) -> bool {
        true
    }

    fn build_graph(
        &mut self,
        nodes: &[super::backend::GraphNode],
    ) -> Result<Option<super::backend::GraphId>, GpuError> {
        self.capture_graph(nodes).map(Some)
    }

    fn launch_graph(
        &mut self,
        graph: super::backend::GraphId,
        cancel: Option<&std::sync::Arc<AtomicBool>>,
    ) -> Result<BackendReport, BackendLaunchError> {
        self.launch_graph_exec(graph, cancel)
    }

    fn destroy_graph(&mut self, graph: super::backend::GraphId) {
        self.destroy_graph_exec(graph);
    }

    fn launch_nodes(
        &mut self,
        nodes: &[super::backend::GraphNode],
        cancel: Option<&std::sync::Arc<AtomicBool>>,
    ) -> Result<BackendReport, BackendLaunchError> {
        self.launch_nodes_timed(nodes, cancel)
    }

    fn alloc_managed(&mut self, bytes: usize) -> Result<DevPtr, GpuError> {
        self.alloc_managed_memory(bytes)
    }

    fn has_managed_memory(&self) -> bool {
        true
    }

    fn prefetch(&mut self, ptr: DevPtr, bytes: usize, to_device: bool) -> Result<(), GpuError> {
        self.prefetch_managed(ptr, bytes, to_device)
    }

    fn htod_async(
        &mut self,
        dst: DevPtr,
        data: &[u8],
        stream: Option<StreamId>,
    ) -> Result<(), GpuError> {
        self.upload_async(dst, data, stream)
    }

    fn dtoh_async(
        &mut self,
        src: DevPtr,
        bytes: usize,
        stream: Option<StreamId>,
    ) -> Result<Option<u64>, GpuError> {
        self.download_async(src, bytes, stream).map(Some)
    }

    fn take_download(&mut self, id: u64) -> Result<Vec<u8>, GpuError> {
        self.take_download_bytes(id)
    }

    fn fault(&self) -> Option<String> {
        self.lost_reason()
    }

    fn last_launch_ms(&self) -> Option<f64> {
        self.last_ms
    }

    fn take_printf(&mut self) -> String {
        std::mem::take(&mut self.printf_pending)
    }

    fn occupancy(
        &mut self,
        module: ModuleId,
        kernel: &str,
        block_sizes: &[u32],
        dynamic_shared: u32,
    ) -> Option<Vec<Occupancy>> {
        self.usable().ok()?;
        let f = self.function(module, kernel)?;
        let a = &self.attrs;
        let rows = block_sizes
            .iter()
            .filter_map(|b| {
                let bs = i32::try_from(*b).ok()?;
                // SAFETY: a function of a loaded module.
                let n = unsafe {
                    cudarc::driver::result::occupancy::max_active_block_per_multiprocessor(
                        f,
                        bs,
                        dynamic_shared as usize,
                    )
                }
                .ok()?;
                let n = u32::try_from(n).unwrap_or(0);
                Some(Occupancy {
                    block_threads: *b,
                    blocks_per_sm: n,
                    fraction: occupancy::fraction(n, *b, a.limits.warp_size, a.max_threads_per_sm),
                })
            })
            .collect();
        Some(rows)
    }

    fn suggest_block(
        &mut self,
        module: ModuleId,
        kernel: &str,
        dynamic_shared: u32,
    ) -> Option<(u32, u32)> {
        self.usable().ok()?;
        let f = self.function(module, kernel)?;
        // SAFETY: a function of a loaded module; no per-block-size shared memory callback.
        let (min_grid, block) = unsafe {
            cudarc::driver::result::occupancy::max_potential_block_size(
                f,
                None,
                dynamic_shared as usize,
                0,
            )
        }
        .ok()?;
        Some((u32::try_from(block).ok()?, u32::try_from(min_grid).ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_driver_means_a_clear_error_not_a_panic() {
        // SAFETY: probe only.
        let present = unsafe { sys::is_culib_present() };
        match CudaBackend::new(0) {
            Ok(b) => {
                assert!(present);
                assert_eq!(b.name(), "cuda");
                assert!(b
                    .describe()
                    .rows
                    .iter()
                    .any(|(k, _)| k == "compute capability"));
            }
            Err(why) => {
                if !present {
                    assert!(why.contains("libcuda"), "{why}");
                } else {
                    assert!(!why.is_empty());
                }
            }
        }
        // An ordinal that cannot exist is refused with a reason too.
        let e = CudaBackend::new(9999).err().unwrap_or_default();
        assert!(!e.is_empty());
    }
}
