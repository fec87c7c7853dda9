//! The device state of the Jupyter kernel process: named device arrays, compiled CUDA modules and
//! their kernels (with C signatures), launches with argument checking and parameter packing, all
//! behind one [`backend::Backend`] trait: `cuda.rs` (an NVIDIA GPU through cudarc's driver API)
//! where a GPU is detected, `sim.rs` (ptxsim) otherwise.
//!
//! This module must not parse magic lines, evaluate expressions or format Jupyter messages: the
//! `magics` layer does that and talks to [`DeviceState`] only through the API below (the contract
//! in `/tmp/gpu_api.md`, plus `DeviceState::with_cache_dir`). It must not panic on anything a
//! user controls.
//!
//! The types it shares with the compile path (`Dtype`, `KernelParam`, `CudaOptions`, `GpuError`,
//! …) are defined in `crate::types` and re-exported here.

pub mod args;
pub mod backend;
pub mod cooperative;
pub mod cuda;
pub mod detect;
pub mod fault;
pub mod kernels;
pub mod ncu;
pub mod sim;
mod state;
pub mod worker;

pub use crate::types::{
    dtype, Aggregate, AggregateField, ArrayView, CudaOptions, Dtype, GpuError, KernelParam,
    ParamKind, Pointee, ViewExtent,
};
pub use state::{
    DeviceState, GraphStep, NcuOutcome, ProfileLine, ProfileOutcome, TimelineRow, TimelineView,
};

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// A 3-D extent: grid in blocks or block in threads.
pub type Dim3 = (u32, u32, u32);

/// A named device array, as `%arrays` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayInfo {
    pub name: String,
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    pub bytes: usize,
    /// `"ptxsim"` or `"cuda"`.
    pub backend: &'static str,
    /// The CUDA kernel that last wrote it (passed it as a non-const pointer), if any.
    pub last_writer: Option<String>,
    /// Managed (unified) memory (`%array --managed`).
    pub managed: bool,
    /// `Some("__constant__")`/`Some("__device__")` for a variable of a loaded `%%cuda` cell.
    pub symbol: Option<&'static str>,
}

/// Launch limits of the active device.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeviceLimits {
    pub max_threads_per_block: u32,
    pub max_block: Dim3,
    pub max_grid: Dim3,
    pub max_shared_per_block: u32,
    pub warp_size: u32,
}

impl DeviceLimits {
    /// The limits of an sm_80 GPU, which ptxsim imitates. Shared memory per block is the
    /// opt-in maximum (163 KiB), as on the CUDA backend, which opts in above 48 KiB itself.
    pub fn sm80() -> DeviceLimits {
        DeviceLimits {
            max_threads_per_block: 1024,
            max_block: (1024, 1024, 64),
            max_grid: (i32::MAX as u32, 65535, 65535),
            max_shared_per_block: 163 * 1024,
            warp_size: 32,
        }
    }
}

/// What `%device` shows.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceDescription {
    /// `"ptxsim"` or `"cuda"`.
    pub backend: &'static str,
    pub name: String,
    /// Property, value rows for `%device`.
    pub rows: Vec<(String, String)>,
    pub limits: DeviceLimits,
    pub peak_bandwidth_gbs: Option<f64>,
}

/// One launch argument, already evaluated by the magics layer.
#[derive(Debug, Clone, PartialEq)]
pub enum LaunchArg {
    /// A named device array, passed as a device pointer.
    Array(String),
    /// A pointer `offset` elements into a named array (`a + 256`).
    ArrayAt(String, usize),
    /// A null pointer (`null`).
    Null,
    Int(i64),
    Float(f64),
    /// A vector or struct by value: one number (`Int`/`Float`) or pointer (`Array`, `ArrayAt`,
    /// `Null`) per field.
    Fields(Vec<LaunchArg>),
}

impl std::fmt::Display for LaunchArg {
    /// The argument as a launch line writes it (`a`, `a + 256`, `null`, `3`, `(1, 2.5)`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LaunchArg::Array(n) => write!(f, "{n}"),
            LaunchArg::ArrayAt(n, k) => write!(f, "{n} + {k}"),
            LaunchArg::Null => write!(f, "null"),
            LaunchArg::Int(v) => write!(f, "{v}"),
            LaunchArg::Float(v) => write!(f, "{v:?}"),
            LaunchArg::Fields(v) => {
                let parts: Vec<String> = v.iter().map(|a| a.to_string()).collect();
                write!(f, "({})", parts.join(", "))
            }
        }
    }
}

impl LaunchArg {
    /// The array this argument points into, if any.
    pub fn array_name(&self) -> Option<&str> {
        match self {
            LaunchArg::Array(n) | LaunchArg::ArrayAt(n, _) => Some(n),
            _ => None,
        }
    }

    /// Every array this argument passes: itself, or the pointer members of a struct.
    pub fn array_names(&self) -> Vec<&str> {
        match self {
            LaunchArg::Fields(f) => f.iter().filter_map(LaunchArg::array_name).collect(),
            a => a.array_name().into_iter().collect(),
        }
    }
}

/// One `%launch`.
#[derive(Debug, Clone)]
pub struct LaunchRequest {
    /// The user's name of the CUDA kernel, e.g. `"add"` or `"scale<float>"`.
    pub kernel: String,
    pub grid: Dim3,
    pub block: Dim3,
    /// Bytes of dynamic shared memory.
    pub shared_bytes: u32,
    pub stream: Option<String>,
    pub args: Vec<LaunchArg>,
    /// `--check`: run on the simulator under the checker, whatever the backend.
    pub check: bool,
    /// `--cooperative`: every block resident at once (`cuLaunchCooperativeKernel`). A kernel
    /// with a grid-wide sync is launched cooperatively without it (`LaunchOutcome::notes`).
    pub cooperative: bool,
    /// The Jupyter interrupt button.
    pub cancel: Arc<AtomicBool>,
}

/// The result of a launch that completed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LaunchOutcome {
    /// Device printf output, in order.
    pub printf: String,
    /// Non-fatal checker findings, rendered one per entry.
    pub reports: Vec<String>,
    pub elapsed_ms: f64,
    /// Arrays passed as non-const pointers.
    pub written: Vec<String>,
    /// On ptxsim: the worker threads that ran it.
    pub sim_workers: Option<usize>,
    /// What the cell should be told about how it ran (a launch made cooperative, and why).
    pub notes: Vec<String>,
}

/// The one-line summary of a compiled CUDA kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSummary {
    pub name: String,
    /// e.g. `"add(const float* a, const float* b, float* c, int n)"`.
    pub signature: String,
    /// Registers/shared/local/max threads on a GPU, or the simulator's counts.
    pub resources: Option<String>,
}

/// The result of a `%%cuda` cell.
#[derive(Debug, Clone, PartialEq)]
pub struct CudaCellResult {
    pub kernels: Vec<KernelSummary>,
    pub cache_hit: bool,
    pub compile_ms: f64,
    /// NVRTC warnings.
    pub log: String,
}

/// What `%info` shows.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelInfoView {
    pub name: String,
    pub params: Vec<KernelParam>,
    pub rows: Vec<(String, String)>,
    /// Theoretical occupancy per block size on the modelled GPU (None for a template).
    pub occupancy: Option<OccupancyTable>,
}

/// The theoretical occupancy of one CUDA kernel on one GPU model, per block size.
#[derive(Debug, Clone, PartialEq)]
pub struct OccupancyTable {
    /// The model, e.g. `"H200"`, and its architecture, `"sm_90"`.
    pub gpu: String,
    pub arch: String,
    /// Registers per thread and static shared bytes the rows were computed from.
    pub registers: u32,
    pub shared_bytes: u32,
    pub rows: Vec<ptxsim::gpus::Occupancy>,
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod cooperative_tests;
