//! DeviceState tests on the ptxsim backend with the real NVRTC (skipped, with a message, when
//! NVRTC is not found): results against CPU references on random data, every argument error,
//! faults, templates, the compile cache across DeviceStates.

use super::*;
use crate::compile::tests::{nvrtc_available, temp_cache};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// xorshift64*: reproducible random data without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn f32(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 200.0 - 100.0
    }
    fn f64(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 200.0 - 100.0
    }
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn f64_bytes(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn to_f32(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
fn to_f64(b: &[u8]) -> Vec<f64> {
    b.chunks_exact(8)
        .map(|c| {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            f64::from_le_bytes(a)
        })
        .collect()
}

fn state() -> DeviceState {
    DeviceState::with_cache_dir(None)
}

fn req(kernel: &str, grid: u32, block: u32, args: Vec<LaunchArg>) -> LaunchRequest {
    LaunchRequest {
        kernel: kernel.into(),
        grid: (grid, 1, 1),
        block: (block, 1, 1),
        shared_bytes: 0,
        stream: None,
        args,
        check: false,
        cooperative: false,
        cancel: Arc::new(AtomicBool::new(false)),
    }
}

fn arr(n: &str) -> LaunchArg {
    LaunchArg::Array(n.into())
}

fn ok<T>(r: Result<T, GpuError>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{}: {}", e.ename, e.message),
    }
}

fn err<T: std::fmt::Debug>(r: Result<T, GpuError>) -> GpuError {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e,
    }
}

const VECADD: &str = r#"
// element-wise sum
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"#;

#[test]
fn gpu_vector_add_random_vs_cpu() {
    if !nvrtc_available() {
        return;
    }
    let mut s = state();
    let r = ok(s.compile_cuda(VECADD, &CudaOptions::default(), 2));
    assert_eq!(r.kernels.len(), 1);
    assert_eq!(
        r.kernels[0].signature,
        "add(const float* a, const float* b, float* c, int n)"
    );
    let mut rng = Rng(0x1234_5678);
    let n = 10_007usize;
    let a: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let b: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    ok(s.create_array("a", Dtype::F32, vec![n], &f32_bytes(&a)));
    ok(s.create_array("b", Dtype::F32, vec![n], &f32_bytes(&b)));
    ok(s.create_array("c", Dtype::F32, vec![n], &vec![0u8; 4 * n]));
    let grid = n.div_ceil(256) as u32;
    let out = ok(s.launch(&req(
        "add",
        grid,
        256,
        vec![arr("a"), arr("b"), arr("c"), LaunchArg::Int(n as i64)],
    )));
    assert_eq!(out.written, vec!["c".to_string()]);
    let c = to_f32(&ok(s.read_array("c")));
    for i in 0..n {
        assert_eq!(c[i], a[i] + b[i], "element {i}");
    }
    assert_eq!(s.array("c").and_then(|a| a.last_writer), Some("add".into()));
    assert_eq!(s.array("a").and_then(|a| a.last_writer), None);
    assert_eq!(s.kernel_names(), vec!["add".to_string()]);
    let info = ok(s.info("add"));
    assert_eq!(info.params.len(), 4);
    assert!(ok(s.ptx("add")).contains(".entry _Z3addPKfS0_Pfi"));
}

const SCALE: &str = r#"template <typename T>
__global__ void scale(T* x, T a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * a;
}
"#;

#[test]
fn gpu_template_scale_float_and_double() {
    if !nvrtc_available() {
        return;
    }
    let mut s = state();
    let r = ok(s.compile_cuda(SCALE, &CudaOptions::default(), 1));
    assert_eq!(
        r.kernels[0].signature,
        "template <typename T> scale(T* x, T a, int n)"
    );
    assert_eq!(s.kernel_names(), vec!["scale".to_string()]);
    let e = err(s.launch(&req("scale", 1, 32, vec![])));
    assert_eq!(e.ename, "LaunchError");
    assert!(e.message.contains("template"), "{}", e.message);
    let mut rng = Rng(99);
    let n = 1000usize;
    let xf: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let xd: Vec<f64> = (0..n).map(|_| rng.f64()).collect();
    let (af, ad) = (rng.f32(), rng.f64());
    ok(s.create_array("xf", Dtype::F32, vec![n], &f32_bytes(&xf)));
    ok(s.create_array("xd", Dtype::F64, vec![n], &f64_bytes(&xd)));
    let grid = n.div_ceil(128) as u32;
    let p = ok(s.kernel_params("scale< float >"));
    assert_eq!(p[1].kind, ParamKind::Scalar(Dtype::F32));
    ok(s.launch(&req(
        "scale<float>",
        grid,
        128,
        vec![
            arr("xf"),
            LaunchArg::Float(af as f64),
            LaunchArg::Int(n as i64),
        ],
    )));
    ok(s.launch(&req(
        "scale<double>",
        grid,
        128,
        vec![arr("xd"), LaunchArg::Float(ad), LaunchArg::Int(n as i64)],
    )));
    let rf = to_f32(&ok(s.read_array("xf")));
    let rd = to_f64(&ok(s.read_array("xd")));
    for i in 0..n {
        assert_eq!(rf[i], xf[i] * af);
        assert_eq!(rd[i], xd[i] * ad);
    }
    assert_eq!(
        s.kernel_names(),
        vec!["scale", "scale<double>", "scale<float>"]
    );
    // An f64 array to scale<float> is refused, naming both types.
    let e = err(s.launch(&req(
        "scale<float>",
        1,
        32,
        vec![arr("xd"), LaunchArg::Float(1.0), LaunchArg::Int(1)],
    )));
    assert_eq!(e.ename, "ArgumentError");
    // Re-running the cell keeps the instantiations launchable.
    ok(s.compile_cuda(SCALE, &CudaOptions::default(), 1));
    assert!(s.kernel_names().contains(&"scale<double>".to_string()));
    let bad = err(s.launch(&req("scale<nosuchtype>", 1, 1, vec![])));
    assert_eq!(bad.ename, "CompileError", "{}", bad.message);
}

const SAXPY: &str = r#"__global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void vec2(float2 v, float* y) { y[0] = v.x; }
"#;

#[test]
fn gpu_every_argument_error() {
    if !nvrtc_available() {
        return;
    }
    let mut s = state();
    ok(s.compile_cuda(SAXPY, &CudaOptions::default(), 1));
    let mut rng = Rng(7);
    let x: Vec<f32> = (0..64).map(|_| rng.f32()).collect();
    let y: Vec<f32> = (0..64).map(|_| rng.f32()).collect();
    ok(s.create_array("x", Dtype::F32, vec![64], &f32_bytes(&x)));
    ok(s.create_array("y", Dtype::F32, vec![64], &f32_bytes(&y)));
    ok(s.create_array("d", Dtype::F64, vec![64], &vec![0u8; 512]));
    let good = || {
        vec![
            LaunchArg::Float(2.0),
            arr("x"),
            arr("y"),
            LaunchArg::Int(64),
        ]
    };
    let with = |i: usize, a: LaunchArg| {
        let mut v = good();
        v[i] = a;
        v
    };
    let cases: Vec<(LaunchRequest, &str, Vec<&str>)> = vec![
        (
            req("saxpy", 1, 64, good()[..3].to_vec()),
            "ArgumentError",
            vec!["saxpy takes 4 arguments (float a, const float* x, float* y, int n), got 3"],
        ),
        (
            req("saxpy", 1, 64, with(3, arr("x"))),
            "ArgumentError",
            vec!["argument 4 of saxpy (int n) is a number, not array 'x'"],
        ),
        (
            req("saxpy", 1, 64, with(1, LaunchArg::Int(3))),
            "ArgumentError",
            vec![
                "argument 2 of saxpy (const float* x) must be an array name",
                "not the number 3",
            ],
        ),
        (
            req("saxpy", 1, 64, with(1, arr("d"))),
            "ArgumentError",
            vec!["array 'd' is f64 but argument 2 of saxpy (const float* x) points to f32"],
        ),
        (
            req("saxpy", 1, 64, with(2, arr("yy"))),
            "ArgumentError",
            vec![
                "unknown array 'yy' in argument 3 of saxpy (float* y)",
                "did you mean y?",
            ],
        ),
        (
            req("saxpy", 1, 64, with(3, LaunchArg::Int(1 << 33))),
            "ArgumentError",
            vec!["8589934592 does not fit in argument 4 of saxpy (int n)"],
        ),
        (
            req("saxpi", 1, 64, good()),
            "LaunchError",
            vec!["no CUDA kernel named `saxpi`", "saxpy"],
        ),
        (req("saxpy", 1, 2048, good()), "LaunchError", vec!["2048"]),
        (req("saxpy", 0, 64, good()), "LaunchError", vec!["is 0"]),
        (
            req("vec2", 1, 1, vec![LaunchArg::Float(1.0), arr("y")]),
            "ArgumentError",
            vec!["argument 1 of vec2 (float2 v) is passed by value"],
        ),
    ];
    for (r, ename, needles) in cases {
        let e = err(s.launch(&r));
        assert_eq!(e.ename, ename, "{}", e.message);
        for n in needles {
            assert!(e.message.contains(n), "`{n}` not in: {}", e.message);
        }
    }
    let mut big_grid = req("saxpy", 1, 64, good());
    big_grid.grid = (1, 65536, 1);
    assert_eq!(err(s.launch(&big_grid)).ename, "LaunchError");
    let mut big_block = req("saxpy", 1, 64, good());
    big_block.block = (1, 1, 65);
    assert_eq!(err(s.launch(&big_block)).ename, "LaunchError");
    let mut shmem = req("saxpy", 1, 64, good());
    shmem.shared_bytes = 163 * 1024 + 1;
    let e = err(s.launch(&shmem));
    assert_eq!(e.ename, "LaunchError");
    assert!(e.message.contains("shared memory"), "{}", e.message);
    assert_eq!(err(s.read_array("nope")).ename, "ArgumentError");
    assert_eq!(
        err(s.create_array("z", Dtype::F32, vec![4], &[0u8; 3])).ename,
        "ArgumentError"
    );
    assert_eq!(
        err(s.create_array("z", Dtype::F32, vec![], &[])).ename,
        "ArgumentError"
    );
    // Nothing ran: every array is unchanged.
    assert_eq!(to_f32(&ok(s.read_array("x"))), x);
    assert_eq!(to_f32(&ok(s.read_array("y"))), y);
    // And the good launch works, against the CPU.
    ok(s.launch(&req("saxpy", 1, 64, good())));
    let out = to_f32(&ok(s.read_array("y")));
    for i in 0..64 {
        assert_eq!(out[i], 2.0f32 * x[i] + y[i]);
    }
}

const OOB: &str = r#"__global__ void oob(const float* a, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i + 3] = a[i] * 2.0f;
}
"#;

#[test]
fn gpu_fault_names_array_and_cell_line_and_leaves_other_arrays() {
    if !nvrtc_available() {
        return;
    }
    let mut s = state();
    ok(s.compile_cuda(OOB, &CudaOptions::default(), 5));
    let mut rng = Rng(42);
    let a: Vec<f32> = (0..256).map(|_| rng.f32()).collect();
    let other: Vec<f32> = (0..256).map(|_| rng.f32()).collect();
    ok(s.create_array("a", Dtype::F32, vec![256], &f32_bytes(&a)));
    ok(s.create_array("c", Dtype::F32, vec![256], &vec![0u8; 1024]));
    ok(s.create_array("other", Dtype::F32, vec![256], &f32_bytes(&other)));
    let e = err(s.launch(&req(
        "oob",
        2,
        128,
        vec![arr("a"), arr("c"), LaunchArg::Int(256)],
    )));
    assert_eq!(e.ename, "DeviceFault");
    eprintln!("{}", e.message);
    for needle in [
        "CUDA kernel `oob`",
        "block (1, 0, 0)",
        "thread (",
        "array `c`",
        "%%cuda cell line 8: c[i + 3] = a[i] * 2.0f;",
    ] {
        assert!(
            e.message.contains(needle),
            "`{needle}` not in: {}",
            e.message
        );
    }
    assert_eq!(to_f32(&ok(s.read_array("a"))), a);
    assert_eq!(to_f32(&ok(s.read_array("other"))), other);
    // The Jupyter kernel's state is intact: the next launch works.
    ok(s.launch(&req(
        "oob",
        1,
        1,
        vec![arr("a"), arr("c"), LaunchArg::Int(1)],
    )));
    assert_eq!(to_f32(&ok(s.read_array("c")))[3], a[0] * 2.0);
}

#[test]
fn gpu_cells_replace_kernels_printf_and_cancel() {
    if !nvrtc_available() {
        return;
    }
    let mut s = state();
    ok(s.compile_cuda(VECADD, &CudaOptions::default(), 1));
    let sub = VECADD.replace("a[i] + b[i]", "a[i] - b[i]");
    ok(s.compile_cuda(&sub, &CudaOptions::default(), 1));
    ok(s.create_array("a", Dtype::F32, vec![4], &f32_bytes(&[5.0, 6.0, 7.0, 8.0])));
    ok(s.create_array("b", Dtype::F32, vec![4], &f32_bytes(&[1.0, 1.0, 2.0, 2.0])));
    ok(s.create_array("c", Dtype::F32, vec![4], &[0u8; 16]));
    ok(s.launch(&req(
        "add",
        1,
        4,
        vec![arr("a"), arr("b"), arr("c"), LaunchArg::Int(4)],
    )));
    assert_eq!(to_f32(&ok(s.read_array("c"))), vec![4.0, 5.0, 5.0, 6.0]);
    // A failing re-run leaves the kernels as they were.
    let e = err(s.compile_cuda(
        "__global__ void add(float* c) { c[0] = oops; }",
        &CudaOptions::default(),
        1,
    ));
    assert_eq!(e.ename, "CompileError");
    assert_eq!(s.kernel_names(), vec!["add".to_string()]);
    // A named cell with printf.
    let named = CudaOptions {
        name: Some("hello".into()),
        ..CudaOptions::default()
    };
    let src = "#include <cstdio>\n__global__ void hi(int k) { printf(\"hi %d from %d\\n\", k, threadIdx.x); }\n";
    let src = src.replace("#include <cstdio>\n", "");
    ok(s.compile_cuda(&src, &named, 1));
    let out = ok(s.launch(&req("hi", 1, 3, vec![LaunchArg::Int(7)])));
    assert_eq!(out.printf, "hi 7 from 0\nhi 7 from 1\nhi 7 from 2\n");
    assert_eq!(s.kernel_names(), vec!["add".to_string(), "hi".to_string()]);
    // The interrupt flag stops a long launch.
    ok(s.compile_cuda(
        "__global__ void spin(int* x) { for (long long k = 0; k < (1LL << 40); ++k) atomicAdd(x, 1); }\n",
        &CudaOptions::default(),
        1,
    ));
    ok(s.create_array("cnt", Dtype::I32, vec![1], &[0u8; 4]));
    let r = req("spin", 1, 32, vec![arr("cnt")]);
    let flag = r.cancel.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        flag.store(true, Ordering::Relaxed);
    });
    let e = err(s.launch(&r));
    let _ = t.join();
    assert_eq!(e.ename, "DeviceFault");
    assert!(e.message.contains("interrupted"), "{}", e.message);
}

#[test]
fn gpu_cache_hit_survives_a_new_device_state() {
    if !nvrtc_available() {
        return;
    }
    let dir = temp_cache("gpu-cache");
    let first = {
        let mut s = DeviceState::with_cache_dir(Some(dir.clone()));
        ok(s.compile_cuda(VECADD, &CudaOptions::default(), 1))
    };
    assert!(!first.cache_hit);
    let mut times = Vec::new();
    for _ in 0..11 {
        let mut s = DeviceState::with_cache_dir(Some(dir.clone()));
        let r = ok(s.compile_cuda(VECADD, &CudaOptions::default(), 1));
        assert!(r.cache_hit);
        times.push(r.compile_ms);
        assert_eq!(r.kernels, first.kernels);
    }
    times.sort_by(f64::total_cmp);
    eprintln!(
        "%%cuda on ptxsim: miss {:.2} ms, hit median {:.3} ms (scan + cache + ptxsim load)",
        first.compile_ms,
        times[times.len() / 2]
    );
    assert!(times[times.len() / 2] < 2.0);
    let _ = std::fs::remove_dir_all(dir);
}

const RACE: &str = r#"__global__ void race(int* out) {
    __shared__ int s;
    s = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = s;
}
"#;

#[test]
fn gpu_check_reports_races_only_under_check() {
    if !nvrtc_available() {
        return;
    }
    let mut s = state();
    ok(s.compile_cuda(RACE, &CudaOptions::default(), 10));
    ok(s.create_array("out", Dtype::I32, vec![64], &[0u8; 256]));
    let plain = ok(s.launch(&req("race", 1, 64, vec![arr("out")])));
    assert!(plain.reports.is_empty(), "{:?}", plain.reports);
    let mut checked = req("race", 1, 64, vec![arr("out")]);
    checked.check = true;
    let out = ok(s.launch(&checked));
    assert!(
        !out.reports.is_empty(),
        "the checker finds the shared-memory race"
    );
    let r = &out.reports[0];
    assert!(r.contains("CUDA kernel `race`"), "{r}");
    assert!(r.contains("%%cuda cell line 12: s = threadIdx.x;"), "{r}");
}

#[test]
fn check_runs_on_copies_and_leaves_every_array_unchanged() {
    if !nvrtc_available() {
        return;
    }
    let mut s = state();
    ok(s.compile_cuda(OOB, &CudaOptions::default(), 1));
    ok(s.compile_cuda(VECADD, &CudaOptions::default(), 20));
    let mut rng = Rng(5);
    let a: Vec<f32> = (0..256).map(|_| rng.f32()).collect();
    let b: Vec<f32> = (0..256).map(|_| rng.f32()).collect();
    let c0: Vec<f32> = (0..256).map(|_| rng.f32()).collect();
    ok(s.create_array("a", Dtype::F32, vec![256], &f32_bytes(&a)));
    ok(s.create_array("b", Dtype::F32, vec![256], &f32_bytes(&b)));
    ok(s.create_array("c", Dtype::F32, vec![256], &f32_bytes(&c0)));
    let mut bad = req("oob", 2, 128, vec![arr("a"), arr("c"), LaunchArg::Int(256)]);
    bad.check = true;
    let e = err(s.launch(&bad));
    assert_eq!(e.ename, "DeviceFault");
    for needle in [
        "array `c`",
        "%%cuda cell line 4: c[i + 3] = a[i] * 2.0f;",
        "every array is unchanged",
    ] {
        assert!(
            e.message.contains(needle),
            "`{needle}` not in: {}",
            e.message
        );
    }
    // Not even the in-bounds stores reached `c`.
    assert_eq!(to_f32(&ok(s.read_array("c"))), c0);
    let mut good = req(
        "add",
        1,
        256,
        vec![arr("a"), arr("b"), arr("c"), LaunchArg::Int(256)],
    );
    good.check = true;
    let out = ok(s.launch(&good));
    assert!(out.written.is_empty(), "{:?}", out.written);
    assert_eq!(to_f32(&ok(s.read_array("c"))), c0);
    assert_eq!(to_f32(&ok(s.read_array("a"))), a);
    // The same launch without --check writes `c`.
    good.check = false;
    let out = ok(s.launch(&good));
    assert_eq!(out.written, vec!["c".to_string()]);
    let c = to_f32(&ok(s.read_array("c")));
    for i in 0..256 {
        assert_eq!(c[i], a[i] + b[i]);
    }
}
