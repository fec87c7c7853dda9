//! CUDA Graphs and managed memory on the GPU.
//!
//! A graph is built by stream capture: the nodes are issued in order on a non-blocking stream
//! of their own between `cuStreamBeginCapture` (thread-local mode) and `cuStreamEndCapture`,
//! and the captured graph is instantiated (`cuGraphInstantiateWithFlags`) and kept as an
//! executable graph; the captured graph itself is destroyed at once. A graph is launched on the
//! default stream between the timing events like a synchronous launch (`run_timed`).
//!
//! Managed memory is `cuMemAllocManaged` (attached globally), refused before the call when the
//! device has less free memory than asked; `%prefetch` is `cuMemPrefetchAsync` to the device or
//! to the CPU, then a context synchronisation.
//!
//! Part of the GPU backend; no array names or cells here.

use super::launch::aligned_params;
use super::*;
use crate::gpu::backend::{GraphId, GraphNode};
use std::sync::Arc;

/// `CU_DEVICE_CPU`: the host, as a prefetch destination.
const CU_DEVICE_CPU: sys::CUdevice = -1;

impl CudaBackend {
    /// Captures `nodes` on a fresh non-blocking stream and instantiates the graph.
    pub(super) fn capture_graph(&mut self, nodes: &[GraphNode]) -> Result<GraphId, GpuError> {
        self.usable()?;
        let functions = self.prepare_nodes(nodes)?;
        let mut stream: sys::CUstream = std::ptr::null_mut();
        let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as std::ffi::c_uint;
        // SAFETY: creates a stream in the current context.
        drv(unsafe { sys::cuStreamCreate(&mut stream, flags) })
            .map_err(|e| self.fail("cuStreamCreate", e))?;
        let captured = self.issue_captured(stream, nodes, &functions);
        // SAFETY: the stream was created above and is no longer capturing.
        let _ = unsafe { sys::cuStreamDestroy_v2(stream) };
        let graph = captured?;
        let mut exec: sys::CUgraphExec = std::ptr::null_mut();
        // SAFETY: `graph` is the captured graph; it is destroyed once, after instantiation.
        let made = drv(unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0) });
        // SAFETY: as above.
        let _ = unsafe { sys::cuGraphDestroy(graph) };
        made.map_err(|e| self.fail("cuGraphInstantiate", e))?;
        let id = self.id();
        self.graphs.insert(id, exec);
        Ok(id)
    }

    /// Issues the nodes on `stream` between the capture calls; the captured graph, or the
    /// first error (the capture is ended and its graph destroyed either way).
    fn issue_captured(
        &self,
        stream: sys::CUstream,
        nodes: &[GraphNode],
        functions: &[Option<sys::CUfunction>],
    ) -> Result<sys::CUgraph, GpuError> {
        let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
        // SAFETY: a stream of the current context, not capturing.
        drv(unsafe { sys::cuStreamBeginCapture_v2(stream, mode) })
            .map_err(|e| self.fail("cuStreamBeginCapture", e))?;
        let issued = issue_nodes(stream, nodes, functions);
        let mut graph: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: ends the capture begun above.
        let ended = drv(unsafe { sys::cuStreamEndCapture(stream, &mut graph) });
        if let Err((call, e)) = issued {
            if !graph.is_null() {
                // SAFETY: the graph the capture returned, destroyed once.
                let _ = unsafe { sys::cuGraphDestroy(graph) };
            }
            return Err(self.fail(call, e));
        }
        ended.map_err(|e| self.fail("cuStreamEndCapture", e))?;
        Ok(graph)
    }

    /// Every launch node's function, prepared (shared-memory opt-in, stack limit: calls that
    /// are not stream work, so they must come before a capture); None for copies.
    fn prepare_nodes(
        &mut self,
        nodes: &[GraphNode],
    ) -> Result<Vec<Option<sys::CUfunction>>, GpuError> {
        let mut functions = Vec::with_capacity(nodes.len());
        for n in nodes {
            match n {
                GraphNode::Launch {
                    module,
                    kernel,
                    shared_bytes,
                    stack_bytes,
                    ..
                } => {
                    let f = self
                        .prepare_function(*module, kernel, *shared_bytes, *stack_bytes)
                        .map_err(|e| match e {
                            BackendLaunchError::Rejected(m) => GpuError::launch(m),
                            BackendLaunchError::Fault { message, .. } => GpuError::fault(message),
                        })?;
                    functions.push(Some(f));
                }
                GraphNode::Copy { dst, src, bytes } => {
                    self.check_span(*dst, *bytes, "a device copy in a graph")?;
                    self.check_span(*src, *bytes, "a device copy in a graph")?;
                    functions.push(None);
                }
            }
        }
        Ok(functions)
    }

    /// The nodes launched one by one on the default stream (no graph), timed by events.
    pub(super) fn launch_nodes_timed(
        &mut self,
        nodes: &[GraphNode],
        cancel: Option<&Arc<AtomicBool>>,
    ) -> Result<BackendReport, BackendLaunchError> {
        self.usable()
            .map_err(|e| BackendLaunchError::Rejected(e.message))?;
        let functions = self
            .prepare_nodes(nodes)
            .map_err(|e| BackendLaunchError::Rejected(e.message))?;
        let mut issue = || match issue_nodes(std::ptr::null_mut(), nodes, &functions) {
            Ok(()) => CUresult::CUDA_SUCCESS,
            Err((_, e)) => e.0,
        };
        self.run_timed("cuLaunchKernel", &mut issue, cancel.cloned())
    }

    /// Launches an instantiated graph on the default stream, timed by events.
    pub(super) fn launch_graph_exec(
        &mut self,
        graph: GraphId,
        cancel: Option<&Arc<AtomicBool>>,
    ) -> Result<BackendReport, BackendLaunchError> {
        self.usable()
            .map_err(|e| BackendLaunchError::Rejected(e.message))?;
        let Some(exec) = self.graphs.get(&graph).copied() else {
            return Err(BackendLaunchError::Rejected(format!(
                "no CUDA graph {graph} on this GPU"
            )));
        };
        // SAFETY: `exec` is an executable graph of the current context.
        let mut issue = || unsafe { sys::cuGraphLaunch(exec, std::ptr::null_mut()) };
        self.run_timed("cuGraphLaunch", &mut issue, cancel.cloned())
    }

    pub(super) fn destroy_graph_exec(&mut self, graph: GraphId) {
        if let Some(exec) = self.graphs.remove(&graph) {
            if self.lost.borrow().is_none() && self.usable().is_ok() {
                // SAFETY: an executable graph of this context, destroyed once.
                let _ = unsafe { sys::cuGraphExecDestroy(exec) };
            }
        }
    }

    /// `cuMemAllocManaged`, after checking the device's free memory.
    pub(super) fn alloc_managed_memory(&mut self, bytes: usize) -> Result<DevPtr, GpuError> {
        self.usable()?;
        let (free, total) =
            cudarc::driver::result::mem_get_info().map_err(|e| self.fail("cuMemGetInfo", e))?;
        if bytes > free {
            return Err(GpuError::memory(format!(
                "managed memory of {bytes} bytes asked, but the GPU has only {} of {} free \
                 (nbcuda never asks for more managed memory than the GPU has free)",
                gib(free as u64),
                gib(total as u64)
            )));
        }
        let mut p: sys::CUdeviceptr = 0;
        let attach = sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as std::ffi::c_uint;
        // SAFETY: allocates in the current context.
        drv(unsafe { sys::cuMemAllocManaged(&mut p, bytes.max(1), attach) })
            .map_err(|e| self.fail("cuMemAllocManaged", e))?;
        self.allocations.insert(p, bytes);
        Ok(p)
    }

    /// Migrates a managed range to the device or the host and waits.
    pub(super) fn prefetch_managed(
        &mut self,
        ptr: DevPtr,
        bytes: usize,
        to_device: bool,
    ) -> Result<(), GpuError> {
        self.usable()?;
        self.check_span(ptr, bytes, "a prefetch")?;
        let dst = if to_device {
            self.device
        } else {
            CU_DEVICE_CPU
        };
        // SAFETY: the range lies inside a live (managed) allocation; the default stream.
        drv(unsafe { sys::cuMemPrefetchAsync(ptr, bytes, dst, std::ptr::null_mut()) })
            .map_err(|e| self.fail("cuMemPrefetchAsync", e))?;
        // SAFETY: the current context.
        drv(unsafe { sys::cuCtxSynchronize() }).map_err(|e| self.fail("cuCtxSynchronize", e))
    }
}

/// Issues the nodes in order on `stream` (kernel launches and device copies); the first
/// failing driver call and its error.
fn issue_nodes(
    stream: sys::CUstream,
    nodes: &[GraphNode],
    functions: &[Option<sys::CUfunction>],
) -> Result<(), (&'static str, DriverError)> {
    for (n, f) in nodes.iter().zip(functions) {
        match (n, f) {
            (
                GraphNode::Launch {
                    grid,
                    block,
                    shared_bytes,
                    params,
                    ..
                },
                Some(f),
            ) => {
                let slices: Vec<&[u8]> = params.iter().map(Vec::as_slice).collect();
                let mut storage = aligned_params(&slices);
                let mut ptrs: Vec<*mut c_void> =
                    storage.iter_mut().map(|v| v.as_mut_ptr().cast()).collect();
                // SAFETY: `f` belongs to a loaded module; `ptrs` holds one pointer per
                // parameter, each to at least the parameter's size, alive for the call (the
                // driver copies the values).
                let r = unsafe {
                    sys::cuLaunchKernel(
                        *f,
                        grid.0,
                        grid.1,
                        grid.2,
                        block.0,
                        block.1,
                        block.2,
                        *shared_bytes,
                        stream,
                        if ptrs.is_empty() {
                            std::ptr::null_mut()
                        } else {
                            ptrs.as_mut_ptr()
                        },
                        std::ptr::null_mut(),
                    )
                };
                drop(storage);
                drv(r).map_err(|e| ("cuLaunchKernel", e))?;
            }
            (GraphNode::Copy { dst, src, bytes }, _) => {
                // SAFETY: both ranges lie inside live allocations (checked by prepare_nodes).
                drv(unsafe { sys::cuMemcpyDtoDAsync_v2(*dst, *src, *bytes, stream) })
                    .map_err(|e| ("cuMemcpyDtoDAsync", e))?;
            }
            (GraphNode::Launch { .. }, None) => {
                return Err((
                    "cuLaunchKernel",
                    DriverError(CUresult::CUDA_ERROR_INVALID_HANDLE),
                ))
            }
        }
    }
    Ok(())
}
