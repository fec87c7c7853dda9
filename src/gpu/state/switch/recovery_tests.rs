//! Recovery after a sticky fault, tested without a GPU: a stand-in backend that answers to the
//! name `cuda` (so `DeviceState` keeps host copies as on a GPU), runs on ptxsim, and loses its
//! whole memory on `reset` after a launch of the CUDA kernel `poke` "faulted" — the way a GPU
//! context rebuild does. Real NVRTC, random data, CPU references.

use super::super::super::backend::{
    Backend, BackendLaunch, BackendLaunchError, BackendReport, DevPtr, EventId, KernelMeta,
    ModuleId, ModuleImage, StreamId,
};
use super::super::super::sim::SimBackend;
use super::super::super::{
    CudaOptions, DeviceDescription, DeviceLimits, Dtype, GpuError, LaunchArg, LaunchRequest,
};
use super::DeviceState;
use crate::compile::Target;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// ptxsim dressed as a GPU whose context a launch of `poke` loses.
struct FaultyGpu {
    inner: SimBackend,
    lost: Option<String>,
    resets: usize,
}

impl FaultyGpu {
    fn check(&self) -> Result<(), GpuError> {
        match &self.lost {
            Some(why) => Err(GpuError::fault(format!("context lost ({why})"))),
            None => Ok(()),
        }
    }
}

impl Backend for FaultyGpu {
    fn name(&self) -> &'static str {
        "cuda"
    }
    fn can_lose_memory(&self) -> bool {
        true
    }
    fn describe(&self) -> DeviceDescription {
        let mut d = self.inner.describe();
        d.backend = "cuda";
        d.rows
            .insert(0, ("device".into(), "0: stand-in GPU".into()));
        d
    }
    fn limits(&self) -> DeviceLimits {
        self.inner.limits()
    }
    fn compile_target(&self, options: &CudaOptions) -> Target {
        self.inner.compile_target(options)
    }
    fn alloc(&mut self, bytes: usize) -> Result<DevPtr, GpuError> {
        self.check()?;
        self.inner.alloc(bytes)
    }
    fn free(&mut self, ptr: DevPtr) -> Result<(), GpuError> {
        if self.lost.is_some() {
            return Ok(());
        }
        self.inner.free(ptr)
    }
    fn htod(&mut self, dst: DevPtr, data: &[u8]) -> Result<(), GpuError> {
        self.check()?;
        self.inner.htod(dst, data)
    }
    fn dtoh(&self, src: DevPtr, out: &mut [u8]) -> Result<(), GpuError> {
        self.check()?;
        self.inner.dtoh(src, out)
    }
    fn dtod(&mut self, dst: DevPtr, src: DevPtr, bytes: usize) -> Result<(), GpuError> {
        self.check()?;
        self.inner.dtod(dst, src, bytes)
    }
    fn symbol(
        &mut self,
        module: ModuleId,
        name: &str,
    ) -> Result<Option<(DevPtr, usize)>, GpuError> {
        self.check()?;
        self.inner.symbol(module, name)
    }
    fn load_module(
        &mut self,
        image: ModuleImage<'_>,
    ) -> Result<(ModuleId, Vec<KernelMeta>), GpuError> {
        self.check()?;
        self.inner.load_module(image)
    }
    fn unload_module(&mut self, module: ModuleId) {
        self.inner.unload_module(module)
    }
    fn launch(
        &mut self,
        module: ModuleId,
        kernel: &str,
        config: &BackendLaunch,
        params: &[&[u8]],
    ) -> Result<BackendReport, BackendLaunchError> {
        if let Some(why) = &self.lost {
            return Err(BackendLaunchError::Rejected(why.clone()));
        }
        if kernel == "poke" {
            self.lost = Some("illegal memory access (CUDA_ERROR_ILLEGAL_ADDRESS)".into());
            return Err(BackendLaunchError::Fault {
                report: None,
                message: "illegal memory access (CUDA_ERROR_ILLEGAL_ADDRESS)".into(),
                printf: String::new(),
            });
        }
        self.inner.launch(module, kernel, config, params)
    }
    fn create_stream(&mut self) -> Result<StreamId, GpuError> {
        self.inner.create_stream()
    }
    fn destroy_stream(&mut self, stream: StreamId) {
        self.inner.destroy_stream(stream)
    }
    fn record_event(&mut self, stream: Option<StreamId>) -> Result<EventId, GpuError> {
        self.inner.record_event(stream)
    }
    fn event_elapsed_ms(&mut self, start: EventId, end: EventId) -> Result<f64, GpuError> {
        self.inner.event_elapsed_ms(start, end)
    }
    fn destroy_event(&mut self, event: EventId) {
        self.inner.destroy_event(event)
    }
    fn stream_wait_event(
        &mut self,
        stream: Option<StreamId>,
        event: EventId,
    ) -> Result<(), GpuError> {
        self.inner.stream_wait_event(stream, event)
    }
    fn synchronize(&mut self, stream: Option<StreamId>) -> Result<(), GpuError> {
        self.check()?;
        self.inner.synchronize(stream)
    }
    fn reset(&mut self) -> Result<bool, GpuError> {
        if self.lost.take().is_none() {
            return Ok(true);
        }
        self.inner = SimBackend::new(); // every allocation and module is gone
        self.resets += 1;
        Ok(false)
    }
    fn fault(&self) -> Option<String> {
        self.lost.clone()
    }
}

const CELL: &str =
    "extern \"C\" __global__ void axpy(const float* x, float* y, float a, int n) {\n\
    int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
    if (i < n) y[i] = a * x[i] + y[i];\n\
}\n\
extern \"C\" __global__ void poke(float* a, long long off) { a[off] = 1.0f; }\n";

fn floats(seed: u64, n: usize) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 100_000) as f32 / 1000.0 - 50.0
        })
        .collect()
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn launch(kernel: &str, args: Vec<LaunchArg>) -> LaunchRequest {
    LaunchRequest {
        kernel: kernel.into(),
        grid: (8, 1, 1),
        block: (128, 1, 1),
        shared_bytes: 0,
        stream: None,
        args,
        check: false,
        cooperative: false,
        cancel: Arc::new(AtomicBool::new(false)),
    }
}

fn axpy(x: &str, y: &str, a: f64, n: usize) -> LaunchRequest {
    launch(
        "axpy",
        vec![
            LaunchArg::Array(x.into()),
            LaunchArg::Array(y.into()),
            LaunchArg::Float(a),
            LaunchArg::Int(n as i64),
        ],
    )
}

fn poke() -> LaunchRequest {
    launch(
        "poke",
        vec![LaunchArg::Array("keep".into()), LaunchArg::Int(1 << 40)],
    )
}

fn on_faulty_gpu() -> Option<DeviceState> {
    if !crate::compile::tests::nvrtc_available() {
        return None;
    }
    let mut s = DeviceState::with_cache_dir(None);
    s.backend = Box::new(FaultyGpu {
        inner: SimBackend::new(),
        lost: None,
        resets: 0,
    });
    s.backend_note = None;
    if let Err(e) = s.compile_cuda(CELL, &CudaOptions::default(), 1) {
        panic!("{e}");
    }
    Some(s)
}

fn ok<T>(r: Result<T, GpuError>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{}: {}", e.ename, e.message),
    }
}

#[test]
fn a_fault_is_recovered_by_reset_restoring_host_copies_and_naming_lost_arrays() {
    let Some(mut s) = on_faulty_gpu() else {
        return;
    };
    let n = 1000;
    let keep = floats(7, n);
    let lose0 = floats(11, n);
    ok(s.create_array("keep", Dtype::F32, vec![n], &bytes(&keep)));
    ok(s.create_array("lose", Dtype::F32, vec![n], &bytes(&lose0)));
    ok(s.create_array("other", Dtype::F32, vec![3], &bytes(&[1.0, 2.0, 3.0])));
    // axpy writes `lose` (its host copy goes), reads `keep` (its host copy stays).
    ok(s.launch(&axpy("keep", "lose", 2.0, n)));
    let e = match s.launch(&poke()) {
        Err(e) => e,
        Ok(_) => panic!("poke must fault"),
    };
    assert_eq!(e.ename, "DeviceFault");
    assert!(e.message.contains("in CUDA kernel `poke`"), "{}", e.message);
    assert!(
        e.message
            .contains("arrays restored from host copies: keep, other;"),
        "{}",
        e.message
    );
    assert!(
        e.message
            .contains("arrays lost (their contents were only on the GPU): lose."),
        "{}",
        e.message
    );
    // While the context is lost, arrays with host copies still read back exactly.
    assert_eq!(ok(s.read_array("keep")), bytes(&keep));
    let e = s
        .read_array("lose")
        .err()
        .map(|e| e.message)
        .unwrap_or_default();
    assert!(e.contains("context lost"), "{e}");
    let msg = ok(s.reset());
    assert!(
        msg.contains("rebuilt")
            && msg.contains("restored from host copies: keep, other")
            && msg.contains("arrays lost: lose")
            && msg.contains("CUDA kernels reloaded: 2"),
        "{msg}"
    );
    assert_eq!(ok(s.read_array("keep")), bytes(&keep));
    assert_eq!(ok(s.read_array("other")), bytes(&[1.0, 2.0, 3.0]));
    let e = s
        .read_array("lose")
        .err()
        .map(|e| e.message)
        .unwrap_or_default();
    assert!(e.contains("was lost when a device fault"), "{e}");
    assert!(s.array("lose").is_none());
    // The reloaded CUDA kernel computes the right thing on a recreated array.
    let fresh = floats(13, n);
    ok(s.create_array("lose", Dtype::F32, vec![n], &bytes(&fresh)));
    ok(s.launch(&axpy("keep", "lose", -0.5, n)));
    let got = ok(s.read_array("lose"));
    let want: Vec<f32> = keep
        .iter()
        .zip(&fresh)
        .map(|(x, y)| -0.5f32 * x + y)
        .collect();
    let got: Vec<f32> = got
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{g} vs {w}");
    }
    // %reset without a fault changes nothing.
    let msg = ok(s.reset());
    assert!(msg.contains("nothing to rebuild"), "{msg}");
    assert!(s.take_notice().is_none());
}

#[test]
fn the_next_command_recovers_automatically_and_leaves_a_notice() {
    let Some(mut s) = on_faulty_gpu() else {
        return;
    };
    let keep = floats(3, 500);
    ok(s.create_array("keep", Dtype::F32, vec![500], &bytes(&keep)));
    ok(s.create_array("y", Dtype::F32, vec![500], &bytes(&[0.0; 500])));
    assert!(s.launch(&poke()).is_err());
    // write_array refreshes a host copy; the next launch rebuilds first.
    let y = floats(5, 500);
    assert!(s.write_array("y", &bytes(&y)).is_ok());
    let notice = s.take_notice().unwrap_or_default();
    assert!(
        notice.contains("restored from host copies: keep, y")
            && notice.contains("arrays lost: none"),
        "{notice}"
    );
    assert_eq!(ok(s.read_array("y")), bytes(&y));
    ok(s.launch(&axpy("keep", "y", 1.0, 500)));
    // After a launch wrote `y`, only `keep` has a host copy: a second fault loses `y`.
    assert!(s.launch(&poke()).is_err());
    ok(s.create_array("z", Dtype::F32, vec![2], &bytes(&[4.0, 5.0])));
    let notice = s.take_notice().unwrap_or_default();
    assert!(notice.contains("arrays lost: y"), "{notice}");
    assert_eq!(ok(s.read_array("z")), bytes(&[4.0, 5.0]));
    assert!(s.take_notice().is_none());
}

#[test]
fn switching_from_the_gpu_to_ptxsim_moves_arrays_and_kernels() {
    let Some(mut s) = on_faulty_gpu() else {
        return;
    };
    let x = floats(17, 700);
    let y = floats(19, 700);
    ok(s.create_array("x", Dtype::F32, vec![700], &bytes(&x)));
    ok(s.create_array("y", Dtype::F32, vec![700], &bytes(&y)));
    ok(s.launch(&axpy("x", "y", 3.0, 700)));
    let before = ok(s.read_array("y"));
    let msg = ok(s.set_backend("sim"));
    assert!(
        msg.contains("cuda → ptxsim")
            && msg.contains("moved 2 array(s)")
            && msg.contains("2 CUDA kernel(s)"),
        "{msg}"
    );
    assert_eq!(s.backend_name(), "ptxsim");
    assert_eq!(ok(s.read_array("y")), before);
    assert_eq!(ok(s.read_array("x")), bytes(&x));
    assert!(s.arrays.values().all(|a| a.shadow.is_none()));
    // The kernels run on the new backend.
    ok(s.launch(&axpy("x", "y", 1.0, 700)));
    assert!(s.arrays().iter().all(|a| a.backend == "ptxsim"));
}
