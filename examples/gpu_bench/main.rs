//! GPU check figures for `scripts/gpu-check.sh` (built here, run on a GPU machine): launch
//! overhead of `%launch`, of `DeviceState::launch` and of a raw cudarc launch; vector-add
//! bandwidth against a device-to-device copy and the datasheet peak; host↔device copies with and
//! without the pinned staging buffers; compile time on a cache miss and hit; and the tutorial
//! CUDA kernels of `crates/ptxsim/kernels` run on the GPU and on ptxsim with the same random
//! inputs, outputs compared element by element.
//!
//! Usage: `gpu_bench [KERNELS_DIR]` (default `crates/ptxsim/kernels`). Prints Markdown tables;
//! exits 2 without a GPU, 1 when a tutorial kernel's GPU and ptxsim results differ beyond a few
//! units in the last place (integers: at all). `gpu_bench --sim-selfcheck [KERNELS_DIR]` runs the
//! tutorial cases on ptxsim twice, without a GPU: it checks that every case compiles, launches
//! and is deterministic before GPU time is spent on it.

use nbcuda::compile::{CompileInput, Compiler, Target};
use nbcuda::gpu::backend::Backend;
use nbcuda::gpu::cuda::CudaBackend;
use nbcuda::gpu::worker::RemoteBackend;
use nbcuda::gpu::{detect, CudaOptions, DeviceState, Dtype, LaunchArg, LaunchRequest};
use nbcuda::magics::Magics;
use protocol::output::{CellOutput, OutputSink};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

mod reset_probe;

type Res<T> = Result<T, String>;
/// One case's outputs (dtype, bytes per array), printf text and time in ms.
type CaseRun = (Vec<(Dtype, Vec<u8>)>, String, f64);

fn main() -> ExitCode {
    if let Some(code) = nbcuda::gpu::worker::run_if_worker() {
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "--reset-probe") {
        let n = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
        return match reset_probe::run(n) {
            Ok(()) => {
                println!("strategy {n}: RECOVERED (the device works again in this process)");
                ExitCode::SUCCESS
            }
            Err(e) => {
                println!("strategy {n}: FAILED ({e})");
                ExitCode::from(1)
            }
        };
    }
    let selfcheck = args.first().is_some_and(|a| a == "--sim-selfcheck");
    if selfcheck {
        args.remove(0);
    }
    let dir = args
        .first()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("crates/ptxsim/kernels"));
    if selfcheck {
        let mut first = DeviceState::with_cache_dir(None);
        if let Err(e) = first.set_backend("sim") {
            println!("{}", e.message);
            return ExitCode::from(1);
        }
        return match compare_tutorials(&dir, first) {
            Ok(0) => ExitCode::SUCCESS,
            Ok(_) => ExitCode::from(1),
            Err(e) => {
                println!("{e}");
                ExitCode::from(1)
            }
        };
    }
    let gpus = match detect::detect_gpus() {
        Ok(g) => g,
        Err(why) => {
            println!("gpu_bench: no GPU ({why})");
            return ExitCode::from(2);
        }
    };
    let g = &gpus[0];
    println!(
        "GPU 0: {} ({}, {} SMs, {:.0} GB/s peak)\n",
        g.name,
        g.arch(),
        g.sms,
        g.peak_bandwidth_gbs
    );
    let mut rows: Vec<(String, String)> = Vec::new();
    for (what, step) in [
        (
            "launch overhead",
            launch_overhead as fn(&mut Vec<(String, String)>) -> Res<()>,
        ),
        ("bandwidth", bandwidth),
        ("transfers", transfers),
        ("compile cache", compile_cache),
    ] {
        if let Err(e) = step(&mut rows) {
            rows.push((what.into(), format!("FAILED: {e}")));
        }
    }
    println!("| figure | value |\n|---|---|");
    for (k, v) in &rows {
        println!("| {k} | {v} |");
    }
    println!();
    let gpu = match gpu_state(None) {
        Ok(s) => s,
        Err(e) => {
            println!("tutorial comparison failed: {e}");
            return ExitCode::from(1);
        }
    };
    match compare_tutorials(&dir, gpu) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(n) => {
            println!("\n{n} tutorial CUDA kernel(s) differ between the GPU and ptxsim");
            ExitCode::from(1)
        }
        Err(e) => {
            println!("tutorial comparison failed: {e}");
            ExitCode::from(1)
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn gpu_state(cache: Option<PathBuf>) -> Res<DeviceState> {
    let s = DeviceState::with_cache_dir(cache);
    if s.backend_name() != "cuda" {
        return Err(format!(
            "DeviceState did not pick the GPU: {}",
            s.backend_note().unwrap_or_default()
        ));
    }
    Ok(s)
}

fn request(
    kernel: &str,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared: u32,
    args: Vec<LaunchArg>,
) -> LaunchRequest {
    LaunchRequest {
        kernel: kernel.into(),
        grid,
        block,
        shared_bytes: shared,
        stream: None,
        args,
        check: false,
        cooperative: false,
        cancel: Arc::new(AtomicBool::new(false)),
    }
}

/// `src` compiled by NVRTC to a CUBIN for GPU 0's architecture.
fn cubin_for_gpu0(src: &str) -> Res<Vec<u8>> {
    let arch = CudaBackend::new(0)?.gpu().arch();
    let compiled = Compiler::new(None)
        .compile(&CompileInput {
            source: src,
            options: &CudaOptions::default(),
            first_line: 1,
            name_expressions: vec![],
            target: Target::Cubin { arch },
        })
        .map_err(|e| e.message)?;
    Ok(compiled.cubin.ok_or("NVRTC gave no CUBIN")?)
}

const NOOP: &str = "extern \"C\" __global__ void noop(int x) { if (x == 12345) asm(\"trap;\"); }\n";

fn launch_overhead(rows: &mut Vec<(String, String)>) -> Res<()> {
    const N: usize = 2000;
    // Raw cudarc: the safe API on the primary context, a CUBIN from NVRTC, launch + synchronize.
    let cubin = cubin_for_gpu0(NOOP)?;
    let ctx = cudarc::driver::CudaContext::new(0).map_err(|e| format!("{e:?}"))?;
    let stream = ctx.default_stream();
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
        .map_err(|e| format!("{e:?}"))?;
    let f = module.load_function("noop").map_err(|e| format!("{e:?}"))?;
    let cfg = cudarc::driver::LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    let x: i32 = 0;
    let mut raw = Vec::with_capacity(N);
    for i in 0..N + 100 {
        let t = Instant::now();
        let mut b = stream.launch_builder(&f);
        cudarc::driver::PushKernelArg::arg(&mut b, &x);
        // SAFETY: `noop` takes one int, passed above.
        unsafe { b.launch(cfg) }.map_err(|e| format!("{e:?}"))?;
        stream.synchronize().map_err(|e| format!("{e:?}"))?;
        if i >= 100 {
            raw.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    // DeviceState::launch (events, polling, printf check, argument packing), with the CUDA
    // context in this process and in the GPU worker process (the default).
    let req = request("noop", (1, 1, 1), (32, 1, 1), 0, vec![LaunchArg::Int(0)]);
    let timed = |mut s: DeviceState| -> Res<Vec<f64>> {
        s.compile_cuda(NOOP, &CudaOptions::default(), 1)
            .map_err(|e| e.message)?;
        let mut v = Vec::with_capacity(N);
        for i in 0..N + 100 {
            let t = Instant::now();
            s.launch(&req).map_err(|e| e.message)?;
            if i >= 100 {
                v.push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        Ok(v)
    };
    let in_process = timed(DeviceState::with_backend(
        Box::new(CudaBackend::new(0)?),
        None,
    ))?;
    let state = timed(gpu_state(None)?)?;
    // The same without the socket's short spin-wait (blocking reads only).
    std::env::set_var("NBCUDA_WORKER_SPIN_US", "0");
    let no_spin = timed(gpu_state(None)?);
    std::env::remove_var("NBCUDA_WORKER_SPIN_US");
    let no_spin = no_spin?;
    // `%launch` through the magics layer (parse, argument checks, launch, output).
    let mut m = Magics::new();
    let sink: OutputSink = Arc::new(|_o: CellOutput| {});
    let cancel = Arc::new(AtomicBool::new(false));
    m.run_cell("%%cuda", NOOP, 2, &sink, &cancel)
        .map_err(|e| e.message)?;
    let mut magic = Vec::with_capacity(N);
    for i in 0..N + 100 {
        let t = Instant::now();
        m.run_line("%launch noop[1, 32](0)", 1, &sink, &cancel)
            .map_err(|e| e.message)?;
        if i >= 100 {
            magic.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    let (r, p, d, l) = (
        median(raw),
        median(in_process),
        median(state),
        median(magic),
    );
    rows.push((
        "launch + sync, raw cudarc (median of 2000)".into(),
        format!("{r:.1} µs"),
    ));
    rows.push((
        "launch + sync, DeviceState::launch, CUDA context in this process".into(),
        format!("{p:.1} µs ({:+.1} µs)", p - r),
    ));
    rows.push((
        "launch + sync, DeviceState::launch through the GPU worker process".into(),
        format!("{d:.1} µs ({:+.1} µs)", d - r),
    ));
    let q = median(no_spin);
    rows.push((
        "launch + sync, DeviceState::launch through the worker, no spin-wait".into(),
        format!("{q:.1} µs ({:+.1} µs)", q - r),
    ));
    rows.push((
        "launch + sync, %launch line (GPU worker: what a notebook gets)".into(),
        format!("{l:.1} µs ({:+.1} µs)", l - r),
    ));
    Ok(())
}

fn bandwidth(rows: &mut Vec<(String, String)>) -> Res<()> {
    let n: usize = 1 << 26;
    let bytes = n * 4;
    let mut s = gpu_state(None)?;
    let src =
        "extern \"C\" __global__ void vadd(const float* a, const float* b, float* c, int n) {\n\
               int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }\n";
    s.compile_cuda(src, &CudaOptions::default(), 1)
        .map_err(|e| e.message)?;
    let zeros = vec![0u8; bytes];
    for name in ["a", "b", "c"] {
        s.create_array(name, Dtype::F32, vec![n], &zeros)
            .map_err(|e| e.message)?;
    }
    let args = vec![
        LaunchArg::Array("a".into()),
        LaunchArg::Array("b".into()),
        LaunchArg::Array("c".into()),
        LaunchArg::Int(n as i64),
    ];
    let req = request("vadd", ((n / 256) as u32, 1, 1), (256, 1, 1), 0, args);
    let mut ms = Vec::new();
    for i in 0..23 {
        let o = s.launch(&req).map_err(|e| e.message)?;
        if i >= 3 {
            ms.push(o.elapsed_ms);
        }
    }
    let vadd = 3.0 * bytes as f64 / (median(ms) * 1e-3) / 1e9;
    drop(s);
    // Device-to-device copy of the same size with raw cudarc, timed with events.
    let ctx = cudarc::driver::CudaContext::new(0).map_err(|e| format!("{e:?}"))?;
    let stream = ctx.default_stream();
    let a = stream
        .alloc_zeros::<u8>(bytes)
        .map_err(|e| format!("{e:?}"))?;
    let mut b = stream
        .alloc_zeros::<u8>(bytes)
        .map_err(|e| format!("{e:?}"))?;
    let mut copies = Vec::new();
    for i in 0..23 {
        // Timing events: cudarc's default flags disable timing.
        let e0 = stream
            .record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| format!("{e:?}"))?;
        stream
            .memcpy_dtod(&a, &mut b)
            .map_err(|e| format!("{e:?}"))?;
        let e1 = stream
            .record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| format!("{e:?}"))?;
        e1.synchronize().map_err(|e| format!("{e:?}"))?;
        if i >= 3 {
            copies.push(f64::from(e0.elapsed_ms(&e1).map_err(|e| format!("{e:?}"))?));
        }
    }
    let copy = 2.0 * bytes as f64 / (median(copies) * 1e-3) / 1e9;
    let peak = detect::detect_gpus()
        .ok()
        .and_then(|g| g.first().map(|g| g.peak_bandwidth_gbs))
        .unwrap_or(f64::NAN);
    rows.push((
        "vector add, 3 × 256 MB (CUDA events)".into(),
        format!("{vadd:.0} GB/s ({:.0}% of peak)", 100.0 * vadd / peak),
    ));
    rows.push((
        "device-to-device copy, 256 MB".into(),
        format!(
            "{copy:.0} GB/s ({:.0}% of peak; vector add is {:.0}% of it)",
            100.0 * copy / peak,
            100.0 * vadd / copy
        ),
    ));
    Ok(())
}

fn transfers(rows: &mut Vec<(String, String)>) -> Res<()> {
    let bytes = 256usize << 20;
    let mut gpu = CudaBackend::new(0)?;
    let p = gpu.alloc(bytes).map_err(|e| e.message)?;
    let data: Vec<u8> = (0..bytes).map(|i| (i * 31 % 251) as u8).collect();
    let mut back = vec![0u8; bytes];
    for pinned in [false, true] {
        gpu.set_pinned_staging(pinned);
        let mut up = f64::MAX;
        let mut down = f64::MAX;
        for _ in 0..4 {
            let t = Instant::now();
            gpu.htod(p, &data).map_err(|e| e.message)?;
            up = up.min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            gpu.dtoh(p, &mut back).map_err(|e| e.message)?;
            down = down.min(t.elapsed().as_secs_f64());
        }
        if back != data {
            return Err("the round trip changed the data".into());
        }
        back.fill(0);
        rows.push((
            format!(
                "host → GPU → host, 256 MB, {}",
                if pinned {
                    "pinned staging, in process"
                } else {
                    "pageable, direct"
                }
            ),
            format!(
                "{:.1} GB/s up, {:.1} GB/s down",
                bytes as f64 / up / 1e9,
                bytes as f64 / down / 1e9
            ),
        ));
    }
    gpu.free(p).map_err(|e| e.message)?;
    drop(gpu);
    // Through the GPU worker process (the socket adds a copy each way).
    let mut remote = RemoteBackend::spawn(0, false)?;
    let p = remote.alloc(bytes).map_err(|e| e.message)?;
    let mut up = f64::MAX;
    let mut down = f64::MAX;
    for _ in 0..4 {
        let t = Instant::now();
        remote.htod(p, &data).map_err(|e| e.message)?;
        up = up.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        remote.dtoh(p, &mut back).map_err(|e| e.message)?;
        down = down.min(t.elapsed().as_secs_f64());
    }
    if back != data {
        return Err("the round trip through the worker changed the data".into());
    }
    rows.push((
        "host → GPU → host, 256 MB, through the GPU worker (default)".into(),
        format!(
            "{:.1} GB/s up, {:.1} GB/s down",
            bytes as f64 / up / 1e9,
            bytes as f64 / down / 1e9
        ),
    ));
    Ok(())
}

fn compile_cache(rows: &mut Vec<(String, String)>) -> Res<()> {
    let dir = std::env::temp_dir().join(format!("nbcuda-bench-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let src = format!(
        "// {}\n__global__ void k(float* x, int n) {{ int i = threadIdx.x; if (i < n) x[i] = sinf(x[i]); }}\n",
        std::process::id()
    );
    let mut s = gpu_state(Some(dir.clone()))?;
    let miss = s
        .compile_cuda(&src, &CudaOptions::default(), 1)
        .map_err(|e| e.message)?;
    let mut hits = Vec::new();
    for _ in 0..20 {
        // A restarted Jupyter kernel: a fresh worker, given the moment it has before the
        // first cell to load NVRTC.
        let mut fresh = gpu_state(Some(dir.clone()))?;
        std::thread::sleep(std::time::Duration::from_millis(150));
        let r = fresh
            .compile_cuda(&src, &CudaOptions::default(), 1)
            .map_err(|e| e.message)?;
        if !r.cache_hit {
            return Err("the second compilation missed the cache".into());
        }
        hits.push(r.compile_ms);
    }
    let _ = std::fs::remove_dir_all(&dir);
    rows.push((
        "%%cuda compile (NVRTC → CUBIN + load)".into(),
        format!(
            "miss {:.1} ms, hit {:.2} ms (median of 20)",
            miss.compile_ms,
            median(hits)
        ),
    ));
    Ok(())
}

/// xorshift64*: deterministic inputs shared by both backends.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[derive(Clone, Copy)]
enum Init {
    Zeros,
    /// Floats in [0, 1), integers in [0, 1000).
    Small,
    /// Uniform random bytes.
    Bytes,
}

#[derive(Clone)]
enum A {
    Arr(&'static str, Dtype, usize, Init),
    I(i64),
    F(f64),
}

struct Case {
    file: &'static str,
    kernel: &'static str,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared: u32,
    args: Vec<A>,
}

fn cases() -> Vec<Case> {
    use Dtype::*;
    use Init::*;
    use A::*;
    let n = 1 << 20;
    let (w, h) = (509usize, 384usize);
    let m = 256usize;
    let c = |file, kernel, grid, block, shared, args| Case {
        file,
        kernel,
        grid,
        block,
        shared,
        args,
    };
    vec![
        c(
            "vector_add.cu",
            "vecAdd",
            (4096, 1, 1),
            (256, 1, 1),
            0,
            vec![
                Arr("a", F32, n, Small),
                Arr("b", F32, n, Small),
                Arr("c", F32, n, Zeros),
                I(n as i64),
            ],
        ),
        c(
            "vector_add.cu",
            "saxpyGridStride",
            (80, 1, 1),
            (128, 1, 1),
            0,
            vec![
                F(1.5),
                Arr("x", F32, n, Small),
                Arr("y", F32, n, Small),
                I(n as i64),
            ],
        ),
        c(
            "matmul.cu",
            "matmulTiled",
            (16, 16, 1),
            (16, 16, 1),
            0,
            vec![
                Arr("A", F32, m * m, Small),
                Arr("B", F32, m * m, Small),
                Arr("C", F32, m * m, Zeros),
                I(m as i64),
                I(m as i64),
                I(m as i64),
            ],
        ),
        c(
            "matmul.cu",
            "dmatmulFma",
            (16, 16, 1),
            (16, 16, 1),
            0,
            vec![
                Arr("A", F64, m * m, Small),
                Arr("B", F64, m * m, Small),
                Arr("C", F64, m * m, Zeros),
                I(m as i64),
                I(m as i64),
                I(m as i64),
            ],
        ),
        c(
            "reduce.cu",
            "reduceBlockTree",
            (4096, 1, 1),
            (256, 1, 1),
            1024,
            vec![
                Arr("in", F32, n, Small),
                Arr("partial", F32, 4096, Zeros),
                I(n as i64),
            ],
        ),
        c(
            "reduce.cu",
            "reduceWarpShuffle",
            (4096, 1, 1),
            (256, 1, 1),
            0,
            vec![
                Arr("in", I32, n, Bytes),
                Arr("partial", I32, 4096, Zeros),
                I(n as i64),
            ],
        ),
        c(
            "histogram.cu",
            "histogramShared",
            (120, 1, 1),
            (256, 1, 1),
            0,
            vec![
                Arr("data", U8, n, Bytes),
                Arr("hist", U32, 256, Zeros),
                I(n as i64),
            ],
        ),
        c(
            "stencil.cu",
            "blur3x3",
            (32, 24, 1),
            (16, 16, 1),
            0,
            vec![
                Arr("in", F32, w * h, Small),
                Arr("out", F32, w * h, Zeros),
                I(w as i64),
                I(h as i64),
            ],
        ),
        c(
            "stencil.cu",
            "heatStep",
            (32, 24, 1),
            (16, 16, 1),
            0,
            vec![
                Arr("u", F32, w * h, Small),
                Arr("next", F32, w * h, Zeros),
                I(w as i64),
                I(h as i64),
                F(0.2),
            ],
        ),
        c(
            "transpose.cu",
            "transposeSharedPadded",
            (16, 12, 1),
            (32, 8, 1),
            0,
            vec![
                Arr("in", F32, w * h, Bytes),
                Arr("out", F32, w * h, Zeros),
                I(h as i64),
                I(w as i64),
            ],
        ),
        c(
            "scan.cu",
            "scanInclusive",
            (1024, 1, 1),
            (256, 1, 1),
            2048,
            vec![
                Arr("in", I32, n / 4, Small),
                Arr("out", I32, n / 4, Zeros),
                I((n / 4) as i64),
            ],
        ),
        c(
            "warp.cu",
            "shuffleModes",
            (64, 1, 1),
            (96, 1, 1),
            0,
            vec![
                Arr("in", I32, 6000, Bytes),
                Arr("up", I32, 6000, Zeros),
                Arr("down", I32, 6000, Zeros),
                Arr("xr", I32, 6000, Zeros),
                Arr("idx", I32, 6000, Zeros),
                I(6000),
                I(3),
            ],
        ),
        c(
            "warp.cu",
            "votes",
            (64, 1, 1),
            (96, 1, 1),
            0,
            vec![
                Arr("in", I32, 6000, Small),
                Arr("all", I32, 6000, Zeros),
                Arr("any", I32, 6000, Zeros),
                Arr("ballot", U32, 6000, Zeros),
                Arr("uni", I32, 6000, Zeros),
                I(6000),
            ],
        ),
        c(
            "templates.cu",
            "axpy<double>",
            (40, 1, 1),
            (256, 1, 1),
            0,
            vec![
                F(-0.5),
                Arr("x", F64, 10000, Small),
                Arr("y", F64, 10000, Small),
                I(10000),
            ],
        ),
        c(
            "templates.cu",
            "blockReduce<128, MaxOp>",
            (80, 1, 1),
            (128, 1, 1),
            0,
            vec![
                Arr("in", I32, 10000, Bytes),
                Arr("out", I32, 80, Zeros),
                I(10000),
            ],
        ),
        c(
            "printf.cu",
            "printfBasic",
            (2, 1, 1),
            (32, 1, 1),
            0,
            vec![Arr("a", I32, 64, Bytes), Arr("f", F32, 64, Small), I(64)],
        ),
    ]
}

fn fill(dtype: Dtype, len: usize, init: Init, rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::with_capacity(len * dtype.size());
    for _ in 0..len {
        let r = rng.next();
        match (init, dtype) {
            (Init::Zeros, _) => out.extend(std::iter::repeat_n(0u8, dtype.size())),
            (Init::Small, Dtype::F32) => {
                out.extend(((r >> 40) as f32 / (1u64 << 24) as f32).to_le_bytes())
            }
            (Init::Small, Dtype::F64) => {
                out.extend(((r >> 11) as f64 / (1u64 << 53) as f64).to_le_bytes())
            }
            (Init::Small, _) => out.extend(&(r % 1000).to_le_bytes()[..dtype.size()]),
            (Init::Bytes, Dtype::F32) => out.extend((((r >> 40) as f32) - 8.0e6).to_le_bytes()),
            (Init::Bytes, _) => out.extend(&r.to_le_bytes()[..dtype.size()]),
        }
    }
    out
}

/// Largest difference between two arrays: units in the last place for floats, 0/1 otherwise.
fn difference(dtype: Dtype, a: &[u8], b: &[u8]) -> u64 {
    let ulp32 = |x: f32, y: f32| -> u64 {
        if x == y || (x.is_nan() && y.is_nan()) {
            0
        } else {
            (i64::from(x.to_bits() as i32) - i64::from(y.to_bits() as i32)).unsigned_abs()
        }
    };
    let ulp64 = |x: f64, y: f64| -> u64 {
        if x == y || (x.is_nan() && y.is_nan()) {
            0
        } else {
            (i128::from(x.to_bits() as i64) - i128::from(y.to_bits() as i64))
                .unsigned_abs()
                .min(u128::from(u64::MAX)) as u64
        }
    };
    match dtype {
        Dtype::F32 => a
            .chunks_exact(4)
            .zip(b.chunks_exact(4))
            .map(|(x, y)| {
                ulp32(
                    f32::from_le_bytes([x[0], x[1], x[2], x[3]]),
                    f32::from_le_bytes([y[0], y[1], y[2], y[3]]),
                )
            })
            .max()
            .unwrap_or(0),
        Dtype::F64 => a
            .chunks_exact(8)
            .zip(b.chunks_exact(8))
            .map(|(x, y)| {
                let mut p = [0u8; 8];
                let mut q = [0u8; 8];
                p.copy_from_slice(x);
                q.copy_from_slice(y);
                ulp64(f64::from_le_bytes(p), f64::from_le_bytes(q))
            })
            .max()
            .unwrap_or(0),
        _ => u64::from(a != b),
    }
}

/// Runs every case on `gpu` (the first state) and on a ptxsim state; returns how many differ.
fn compare_tutorials(dir: &Path, mut gpu: DeviceState) -> Res<usize> {
    let mut sim = DeviceState::with_cache_dir(None);
    sim.set_backend("sim").map_err(|e| e.message)?;
    println!(
        "| tutorial CUDA kernel | GPU ms | elements compared | GPU vs ptxsim |\n|---|---|---|---|"
    );
    let mut bad = 0;
    for (i, case) in cases().into_iter().enumerate() {
        let path = dir.join(case.file);
        let src = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let label = format!("{} ({})", case.kernel, case.file);
        let mut outputs: Vec<Vec<(Dtype, Vec<u8>)>> = Vec::new();
        let mut printfs: Vec<String> = Vec::new();
        let mut gpu_ms = f64::NAN;
        let mut failed: Option<String> = None;
        for (b, st) in [&mut gpu, &mut sim].into_iter().enumerate() {
            let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1));
            let step = (|| -> Res<CaseRun> {
                st.compile_cuda(&src, &CudaOptions::default(), 1)
                    .map_err(|e| e.message)?;
                let mut args = Vec::new();
                for a in &case.args {
                    match a {
                        A::Arr(name, dt, len, init) => {
                            let data = fill(*dt, *len, *init, &mut rng);
                            st.create_array(name, *dt, vec![*len], &data)
                                .map_err(|e| e.message)?;
                            args.push(LaunchArg::Array((*name).into()));
                        }
                        A::I(v) => args.push(LaunchArg::Int(*v)),
                        A::F(v) => args.push(LaunchArg::Float(*v)),
                    }
                }
                let o = st
                    .launch(&request(
                        case.kernel,
                        case.grid,
                        case.block,
                        case.shared,
                        args,
                    ))
                    .map_err(|e| e.message)?;
                let mut outs = Vec::new();
                for a in &case.args {
                    if let A::Arr(name, dt, _, _) = a {
                        outs.push((*dt, st.read_array(name).map_err(|e| e.message)?));
                    }
                }
                Ok((outs, o.printf, o.elapsed_ms))
            })();
            match step {
                Ok((outs, printf, ms)) => {
                    if b == 0 {
                        gpu_ms = ms;
                    }
                    outputs.push(outs);
                    let mut lines: Vec<&str> = printf.lines().collect();
                    lines.sort_unstable();
                    printfs.push(lines.join("\n"));
                }
                Err(e) => {
                    failed = Some(format!("{}: {e}", if b == 0 { "GPU" } else { "ptxsim" }));
                    break;
                }
            }
        }
        let verdict = match failed {
            Some(e) => {
                bad += 1;
                format!("FAILED ({})", e.lines().next().unwrap_or(""))
            }
            None => {
                let worst = outputs[0]
                    .iter()
                    .zip(&outputs[1])
                    .map(|((dt, a), (_, b))| difference(*dt, a, b))
                    .max()
                    .unwrap_or(0);
                let float = outputs[0]
                    .iter()
                    .any(|(dt, _)| matches!(dt, Dtype::F32 | Dtype::F64));
                let same_printf = printfs[0] == printfs[1];
                if worst == 0 && same_printf {
                    "identical".to_string()
                } else if float && worst <= 4 && same_printf {
                    format!("within {worst} ulp")
                } else {
                    bad += 1;
                    if same_printf {
                        format!("DIFFERENT (worst {worst})")
                    } else {
                        "DIFFERENT printf output".to_string()
                    }
                }
            }
        };
        let count: usize = case
            .args
            .iter()
            .map(|a| if let A::Arr(_, _, n, _) = a { *n } else { 0 })
            .sum();
        println!("| {label} | {gpu_ms:.3} | {count} | {verdict} |");
    }
    Ok(bad)
}
