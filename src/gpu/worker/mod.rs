//! The GPU worker process: the CUDA context lives in a child process of the Jupyter kernel
//! (`nbcuda gpu-worker`), reached through [`RemoteBackend`].
//!
//! Why: after a sticky fault (an illegal address, a trap) current NVIDIA drivers refuse every
//! new context in the same process — `cuDevicePrimaryCtxReset` succeeds, then
//! `cuDevicePrimaryCtxRetain` and even `cuCtxCreate` return `CUDA_ERROR_ILLEGAL_ADDRESS`
//! (measured on an H200 with driver 580.159, `scripts/gpu-check.sh`'s reset probe). A worker
//! process is replaced instead; the Jupyter kernel, its Rust state and the arrays' host copies
//! survive, and a crash of the driver or of a CUDA kernel never takes the Jupyter kernel down.
//!
//! `NBCUDA_GPU_IN_PROCESS=1` keeps the GPU in the Jupyter kernel's own process (no recovery from
//! sticky faults; used to measure what the worker costs).

pub mod client;
pub mod server;
pub mod shm;
pub mod wire;

pub use client::{Launcher, RemoteBackend, Stopped};

use super::backend::Backend;
use super::cuda::CudaBackend;

/// GPU `ordinal` as a backend: in a worker process, or in this process when
/// `NBCUDA_GPU_IN_PROCESS=1`.
pub fn open_gpu(ordinal: usize) -> Result<Box<dyn Backend>, String> {
    // Ask the driver here first: no worker is started for a GPU that is not there.
    let gpus = super::detect::detect_gpus()?;
    if gpus.is_empty() {
        return Err("the NVIDIA driver reports no CUDA device".into());
    }
    if ordinal >= gpus.len() {
        return Err(format!(
            "no GPU {ordinal}: this machine has {} (0 to {})",
            gpus.len(),
            gpus.len().saturating_sub(1)
        ));
    }
    if std::env::var("NBCUDA_GPU_IN_PROCESS").ok().as_deref() == Some("1") {
        return CudaBackend::new(ordinal).map(|b| Box::new(b) as Box<dyn Backend>);
    }
    RemoteBackend::spawn(ordinal, false).map(|b| Box::new(b) as Box<dyn Backend>)
}

/// Runs the worker when this process was started as one (`PROGRAM gpu-worker ...`); returns
/// its exit code, or None for any other command line.
pub fn run_if_worker() -> Option<i32> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    (args.first().map(String::as_str) == Some("gpu-worker")).then(|| server::main(&args[1..]))
}
