//! Tests of the command language through [`Magics`] on the real device state (ptxsim and NVRTC
//! when there is no GPU): arrays, errors that leave arrays alone, files, completion, inspect, and
//! CUDA kernels compiled and launched on random data against CPU references.

use super::test_session::Session;
use crate::gpu::Dtype;
use protocol::output::{CellOutput, MimeBundle};

#[test]
fn arrays_hold_the_constructed_values() {
    let mut s = Session::new();
    s.ok("%set n = 10");
    s.ok("%array a = arange(n, i32)");
    assert_eq!(s.f64s("a"), (0..10).map(f64::from).collect::<Vec<_>>());
    let info = s.m.dev.array("a").unwrap();
    assert_eq!(
        (info.dtype, info.shape.clone(), info.bytes),
        (Dtype::I32, vec![10], 40)
    );
    s.ok("%array z = zeros((2, len(a) / 2), f64)");
    assert_eq!(s.m.dev.array("z").unwrap().shape, vec![2, 5]);
    assert_eq!(s.f64s("z"), vec![0.0; 10]);
    s.ok("%array f = full(a.shape[0] + 1, -1.5, f32)");
    assert_eq!(s.f64s("f"), vec![-1.5; 11]);
    s.ok("%array l = linspace(0, 2, 5, f32)");
    assert_eq!(s.f64s("l"), vec![0.0, 0.5, 1.0, 1.5, 2.0]);
    s.ok("%array r1 = rand((3, 4), f32, seed=7)");
    s.ok("%array r2 = rand((3, 4), f32, seed=7)");
    s.ok("%array r3 = rand((3, 4), f32)");
    assert_eq!(s.bytes("r1"), s.bytes("r2"));
    assert_ne!(s.bytes("r1"), s.bytes("r3"));
    s.ok("%array c = copy(r1)");
    assert_eq!(s.bytes("c"), s.bytes("r1"));
    s.ok("%swap a f");
    assert_eq!(s.f64s("f"), (0..10).map(f64::from).collect::<Vec<_>>());
    s.ok("%free c, r3");
    assert!(s.m.dev.array("c").is_none() && s.m.dev.array("r3").is_none());
    s.printed();
    s.ok("%arrays");
    let t = s.printed();
    assert!(t.contains("name") && t.contains("last writer"), "{t}");
    assert!(
        t.contains("r1") && t.contains("(3, 4)") && t.contains("f32"),
        "{t}"
    );
    s.ok("%print l");
    let t = s.printed();
    assert!(
        t.starts_with(
            "l: f32 (5,), 20 B\n[0.0 0.5 1.0 1.5 2.0]\nmin 0.0  max 2.0  mean 1.0  NaN 0"
        ),
        "{t}"
    );
    s.ok("%set");
    let t = s.printed();
    assert!(
        t.contains('n') && t.contains("10") && t.contains("int"),
        "{t}"
    );
}

#[test]
fn failing_lines_change_nothing() {
    let mut s = Session::new();
    s.ok("%array x = arange(8, u8)");
    let before = s.bytes("x");
    let cases: &[(&str, &str, &str)] = &[
        (
            "%array x = zeros(8, float)",
            "SyntaxError",
            "unknown dtype 'float'",
        ),
        (
            "%array x = full(8, 300, u8)",
            "ArgumentError",
            "the value 300 does not fit in u8",
        ),
        (
            "%array x = zeros(len(nope), f32)",
            "ArgumentError",
            "unknown array 'nope' in len()",
        ),
        (
            "%array x = zeros(8 / 0, f32)",
            "ArgumentError",
            "division by zero",
        ),
        (
            "%array x = copy(y)",
            "ArgumentError",
            "unknown array 'y' in copy()",
        ),
        ("%free x nope", "ArgumentError", "unknown array 'nope'"),
        ("%swap x nope", "ArgumentError", "unknown array 'nope'"),
        (
            "%array x = randn(8, u8)",
            "ArgumentError",
            "randn() needs a float dtype",
        ),
        (
            "%array x = zeros((4611686018427387904, 4), f64)",
            "MemoryError",
            "too large",
        ),
        ("%load x = /nonexistent/a.png", "IOError", "no such file"),
        ("%print nope", "ArgumentError", "unknown array 'nope'"),
        ("%launch nokernel[1, 1](x)", "", ""),
    ];
    for (line, ename, msg) in cases {
        let e = s.err(line);
        if !ename.is_empty() {
            assert_eq!(e.ename, *ename, "{line}: {}", e.message);
        }
        assert!(e.message.starts_with("line 1: "), "{line}: {}", e.message);
        assert!(e.message.contains(msg), "{line}: {}", e.message);
        assert_eq!(s.bytes("x"), before, "{line}");
        assert_eq!(s.m.dev.array("x").unwrap().dtype, Dtype::U8);
    }
    let e = s.err("%prnt x");
    assert_eq!(e.ename, "UnknownMagic");
    assert!(e.message.contains("did you mean %print?"), "{}", e.message);
}

#[test]
fn load_and_save_through_magics() {
    let tmp = tempfile::tempdir().expect("a temporary folder");
    let p = |n: &str| tmp.path().join(n).to_string_lossy().to_string();
    let mut s = Session::new();
    s.ok("%array img = rand((6, 5, 3), u8, seed=1)");
    s.ok(&format!("%save img {}", p("img.png")));
    s.ok(&format!("%load back = {}", p("img.png")));
    assert_eq!(s.bytes("back"), s.bytes("img"));
    s.ok(&format!("%load g = {} --gray --as f32", p("img.png")));
    let g = s.m.dev.array("g").unwrap();
    assert_eq!((g.dtype, g.shape.clone()), (Dtype::F32, vec![6, 5]));
    assert!(s.f64s("g").iter().all(|v| (0.0..=1.0).contains(v)));
    s.ok("%array w = randn((3, 4), f64, seed=2)");
    s.ok(&format!("%save w {}", p("w.npy")));
    s.ok(&format!("%load w2 = {}", p("w.npy")));
    assert_eq!(s.bytes("w2"), s.bytes("w"));
    assert_eq!(s.m.dev.array("w2").unwrap().shape, vec![3, 4]);
    let e = s.err(&format!("%save w {}", p("w.bmp")));
    assert_eq!(e.ename, "IOError");
}

#[test]
fn completion_and_inspect() {
    let mut s = Session::new();
    let c = |s: &mut Session, line: &str| s.m.complete(line, line.len());
    assert_eq!(c(&mut s, "%la"), (vec!["%launch".to_string()], 0, 3));
    assert!(c(&mut s, "%cu").0.contains(&"%%cuda".to_string()));
    assert_eq!(c(&mut s, "%%cu"), (vec!["%%cuda".to_string()], 0, 4));
    s.ok("%array xs = zeros(4, f32)");
    s.ok("%array xy = zeros((2, 2), i32)");
    s.ok("%set xn = 3");
    assert_eq!(c(&mut s, "%print x").0, vec!["xs", "xy"]);
    assert_eq!(c(&mut s, "%print x").1, 7);
    assert_eq!(c(&mut s, "%array y = ze").0, vec!["zeros"]);
    assert_eq!(c(&mut s, "%array y = zeros(10, f3").0, vec!["f32"]);
    assert_eq!(
        c(&mut s, "%launch --ch"),
        (vec!["--check".to_string()], 8, 12)
    );
    assert_eq!(c(&mut s, "%launch k[1, 1](x").0, vec!["xn", "xs", "xy"]);
    assert_eq!(c(&mut s, "%backend s").0, vec!["sim"]);
    assert_eq!(c(&mut s, "%help lau").0, vec!["%launch"]);
    // File paths after %load NAME = and %save NAME.
    let tmp = tempfile::tempdir().expect("a temporary folder");
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("pic.png"), b"").unwrap();
    std::fs::write(dir.join("notes.txt"), b"").unwrap();
    let d = dir.to_string_lossy().to_string();
    let line = format!("%load im = {d}/");
    let (m, start, end) = c(&mut s, &line);
    assert_eq!(m, vec![format!("{d}/pic.png"), format!("{d}/sub/")]);
    assert_eq!((start, end), (11, line.len()));
    let line = format!("%save xs {d}/no");
    assert_eq!(c(&mut s, &line).0, vec![format!("{d}/notes.txt")]);
    assert_eq!(
        c(&mut s, &format!("%load im = {d}/pic.png --as f6")).0,
        vec!["f64"]
    );
    // Inspect.
    let text = |b: Option<MimeBundle>| {
        b.and_then(|b| {
            b.get("text/plain")
                .and_then(|v| v.as_str())
                .map(String::from)
        })
        .unwrap_or_default()
    };
    let t = text(s.m.inspect("%launch add", 3));
    assert!(t.starts_with("%launch [--check]"), "{t}");
    let t = text(s.m.inspect("%print xy", 8));
    assert!(
        t.starts_with("array xy: i32 (2, 2), 16 B (16 bytes)"),
        "{t}"
    );
    assert!(t.contains("min 0  max 0  mean 0.0"), "{t}");
    let t = text(s.m.inspect("%launch k[1, 1](xn)", 17));
    assert_eq!(t, "scalar xn = 3\n");
    assert!(text(s.m.inspect("%array a = zeros(4, u16)", 22)).starts_with("dtype u16: 2 bytes"));
    assert!(s.m.inspect("%print qqq", 8).is_none());
}

const VECTOR_CUDA: &str = r#"
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

template <typename T>
__global__ void scale(T* x, T s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * s;
}

__global__ void hello(int base) {
    if (threadIdx.x < 3) printf("hello %d\n", base + (int)threadIdx.x);
}

__global__ void oob(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    x[i + n] = 1.0f;
}
"#;

#[test]
fn cuda_vector_add_matches_cpu_reference() {
    let mut s = Session::new();
    s.cell("%%cuda --name vec", VECTOR_CUDA)
        .unwrap_or_else(|e| panic!("{e}"));
    let t = s.printed();
    assert!(
        t.contains("add(const float* a, const float* b, float* c, int n)"),
        "{t}"
    );
    assert!(t.contains("cache: "), "{t}");
    for (k, line) in [
        "%launch add[auto](a, b, c, len(a))",
        "%launch add[ceil(n / 128), 128](a, b, c, n)",
        "%launch add<<<ceil(n / 64), 64>>>(a, b, c, n)",
        "%launch add<<<(ceil(n / 32), 1), (32, 1, 1), 0, 0>>>(a, b, c, n)",
    ]
    .iter()
    .enumerate()
    {
        s.ok("%set n = 1000 + 37");
        s.ok(&format!("%array a = rand(n, f32, seed={k})"));
        s.ok(&format!("%array b = randn(n, f32, seed={})", k + 100));
        s.ok("%array c = zeros(n, f32)");
        s.ok(line);
        let (a, b, c) = (s.f64s("a"), s.f64s("b"), s.f64s("c"));
        assert_eq!(c.len(), 1037);
        for i in 0..c.len() {
            assert_eq!(c[i] as f32, (a[i] as f32) + (b[i] as f32), "{line} [{i}]");
        }
        assert_eq!(
            s.m.dev.array("c").unwrap().last_writer.as_deref(),
            Some("add")
        );
        assert_eq!(s.m.dev.array("a").unwrap().last_writer, None);
    }
    // A template instantiated on demand.
    s.ok("%array x = rand(300, f32, seed=9)");
    let x0 = s.f64s("x");
    s.ok("%launch scale<float>[auto](x, 2.5, len(x))");
    for (v, v0) in s.f64s("x").iter().zip(&x0) {
        assert_eq!(*v as f32, (*v0 as f32) * 2.5);
    }
    // printf, in order.
    s.printed();
    s.ok("%launch hello[1, 32](40)");
    assert_eq!(s.printed(), "hello 40\nhello 41\nhello 42\n");
}

#[test]
fn launch_errors_name_the_argument() {
    let mut s = Session::new();
    s.cell("%%cuda", VECTOR_CUDA)
        .unwrap_or_else(|e| panic!("{e}"));
    s.ok("%array a = rand(64, f32, seed=1)");
    s.ok("%array b = rand(64, f32, seed=2)");
    s.ok("%array c = zeros(64, f32)");
    s.ok("%array ints = zeros(64, i32)");
    let before: Vec<Vec<u8>> = ["a", "b", "c", "ints"].iter().map(|n| s.bytes(n)).collect();
    let cases: &[(&str, &str, &str)] = &[
        (
            "%launch add[1, 64](a, xs, c, 64)",
            "ArgumentError",
            "unknown array 'xs' in argument 2 of %launch",
        ),
        (
            "%launch add[1, 64](a, b, c)",
            "ArgumentError",
            "add takes 4 arguments (const float* a, const float* b, float* c, int n), got 3",
        ),
        (
            "%launch add[1, 64](a, ints, c, 64)",
            "ArgumentError",
            "array 'ints' is i32 but argument 2 of %launch (const float* b) points to f32",
        ),
        (
            "%launch add[1, 64](a, b, c, 6.5)",
            "ArgumentError",
            "argument 4 of %launch (int n) is an integer, got 6.5",
        ),
        (
            "%launch add[1, 64](a, b, 3, 64)",
            "ArgumentError",
            "argument 3 of %launch (float* c) must be an array name",
        ),
        (
            "%launch add[1, 64](a, b, c, a)",
            "ArgumentError",
            "'a' is an array, not a number",
        ),
        ("%launch ad[1, 64](a, b, c, 64)", "", "did you mean `add`?"),
        ("%launch add[1, 2048](a, b, c, 64)", "LaunchError", ""),
        (
            "%launch add[auto](1, 2, 3, 4)",
            "ArgumentError",
            "must be an array name",
        ),
    ];
    for (line, ename, msg) in cases {
        let e = s.err(line);
        if !ename.is_empty() {
            assert_eq!(e.ename, *ename, "{line}: {}", e.message);
        }
        assert!(e.message.starts_with("line 1: "), "{line}: {}", e.message);
        assert!(e.message.contains(msg), "{line}: {}", e.message);
        let after: Vec<Vec<u8>> = ["a", "b", "c", "ints"].iter().map(|n| s.bytes(n)).collect();
        assert_eq!(before, after, "{line}");
    }
    // An out-of-bounds write under the checker: a DeviceFault naming the source line.
    let e = s.err("%launch --check oob[1, 32](c, 64)");
    assert_eq!(e.ename, "DeviceFault", "{}", e.message);
    assert!(
        e.message.starts_with("line 1: out-of-bounds"),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("block (0, 0, 0), thread (0, 0, 0)"),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("%%cuda cell line 20: x[i + n] = 1.0f;"),
        "{}",
        e.message
    );
    assert!(s.bytes("a") == before[0] && s.bytes("b") == before[1]);
    // Completion and inspect of CUDA kernels.
    let (m, ..) = s.m.complete("%launch a", 9);
    assert_eq!(m, vec!["add"]);
    let t =
        s.m.inspect("%launch add[1, 1]()", 10)
            .and_then(|b| {
                b.get("text/plain")
                    .and_then(|v| v.as_str())
                    .map(String::from)
            })
            .unwrap_or_default();
    assert!(
        t.starts_with("CUDA kernel add(const float* a, const float* b, float* c, int n)"),
        "{t}"
    );
}

#[test]
fn interrupted_launch_is_reported_and_the_state_survives() {
    let mut s = Session::new();
    s.cell(
        "%%cuda",
        "__global__ void spin(volatile int* x) { while (x[0] == 0) { } }\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    s.ok("%array flag = zeros(1, i32)");
    let cancel = s.cancel.clone();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let t0 = std::time::Instant::now();
    let e = s.err("%launch spin[1, 32](flag)");
    let _ = stopper.join();
    assert_eq!(e.ename, "Interrupted", "{}", e.message);
    assert!(t0.elapsed().as_secs_f64() < 5.0);
    s.cancel.store(false, std::sync::atomic::Ordering::Relaxed);
    s.ok("%array after = ones(3, i32)");
    assert_eq!(s.f64s("after"), vec![1.0; 3]);
}

#[test]
fn checker_findings_go_to_stderr() {
    let mut s = Session::new();
    s.cell(
        "%%cuda",
        "__global__ void racy(float* out) {\n    __shared__ float sh[64];\n    sh[threadIdx.x] = threadIdx.x;\n    out[threadIdx.x] = sh[(threadIdx.x + 32) % 64];\n}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    s.ok("%array out = zeros(64, f32)");
    s.printed();
    s.m.run_line("%launch --check racy[1, 64](out)", 4, &s.sink, &s.cancel)
        .unwrap_or_else(|e| panic!("{e}"));
    let log: Vec<CellOutput> = s.log.lock().map(|v| v.clone()).unwrap_or_default();
    let stderr: String = log
        .iter()
        .filter_map(|o| match o {
            CellOutput::Stderr(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert!(stderr.contains("shared-memory race"), "{log:?}");
    assert!(stderr.contains("%%cuda cell line 4"), "{stderr}");
    assert!(stderr.ends_with('\n'));
}

#[test]
fn upload_and_download_move_data_between_an_array_and_its_host_copy() {
    let mut s = Session::new();
    s.cell("%%cuda --name vec", VECTOR_CUDA)
        .unwrap_or_else(|e| panic!("{e}"));
    s.ok("%array x = rand(5000, f32, seed=3)");
    let x0 = s.f64s("x");
    // The host copy is the data the array was made from; a launch does not change it.
    s.ok("%launch scale<float>[auto](x, 2.0, len(x))");
    s.ok("%upload x s1");
    s.ok("%sync s1");
    assert_eq!(s.f64s("x"), x0);
    // %download fetches the device contents into the host copy (complete at %sync).
    s.ok("%launch scale<float>[auto](x, 3.0, len(x))");
    s.ok("%download x s1");
    s.ok("%sync s1");
    s.ok("%launch scale<float>[auto](x, 0.0, len(x))");
    assert!(s.f64s("x").iter().all(|v| *v == 0.0));
    s.ok("%upload x");
    s.ok("%sync");
    for (v, v0) in s.f64s("x").iter().zip(&x0) {
        assert_eq!(*v as f32, (*v0 as f32) * 3.0);
    }
    // Streams made by %upload are ordinary streams for %launch and %sync.
    s.ok("%array z = arange(100, f32)");
    s.ok("%launch scale<float>[1, 128, 0, s2](z, 5.0, 100)");
    s.ok("%upload z s2");
    s.ok("%sync s2");
    assert_eq!(s.f64s("z"), (0..100).map(f64::from).collect::<Vec<_>>());
    // Errors name the array or the missing piece.
    let e = s.err("%upload nothere");
    assert_eq!(e.ename, "ArgumentError");
    assert!(e.message.contains("nothere"), "{e}");
    let e = s.err("%download");
    assert!(e.message.contains("array name"), "{e}");
}

/// Recursions for `%limit stack` (compiled with -G: at -O3 NVRTC turns them into loops or
/// removes them).
const RECURSION_CUDA: &str = "__device__ int f(int x) { return f(x + 1) + 1; }\n\
__global__ void runaway(int* out) { out[threadIdx.x] = f(threadIdx.x); }\n\
__device__ int depth(int n) { return n <= 0 ? 0 : depth(n - 1) + 1; }\n\
__global__ void deep(int* out, int n) { out[threadIdx.x] = depth(n); }\n";

#[test]
fn runaway_recursion_is_a_device_fault_and_limit_stack_sets_the_stack() {
    let mut s = Session::new();
    s.cell("%%cuda -G", RECURSION_CUDA)
        .unwrap_or_else(|e| panic!("{e}"));
    s.printed();
    s.ok("%limit");
    let t = s.printed();
    assert!(
        t.contains("stack") && t.contains("1024 bytes per thread"),
        "{t}"
    );
    assert!(t.contains(s.m.dev.backend_name()), "{t}");
    s.ok("%array keep = arange(8, i32)");
    s.ok("%array out = zeros(32, i32)");
    let t0 = std::time::Instant::now();
    let e = s.err("%launch runaway[1, 32](out)");
    let took = t0.elapsed();
    assert_eq!(e.ename, "DeviceFault", "{}", e.message);
    if s.m.dev.backend_name() == "ptxsim" {
        assert!(took.as_secs_f64() < 1.0, "took {took:?}");
        let m = &e.message;
        assert!(
            m.contains(
                "call stack overflow: the 1024-byte stack of thread (0,0,0) exceeded at call depth"
            ),
            "{m}"
        );
        assert!(m.contains("in CUDA kernel `runaway`"), "{m}");
        assert!(m.contains("thread (0, 0, 0)"), "{m}");
        assert!(
            m.contains(": __device__ int f(int x) { return f(x + 1) + 1; }"),
            "{m}"
        );
        assert!(m.contains("%limit stack BYTES"), "{m}");
    }
    assert_eq!(s.f64s("keep"), (0..8).map(f64::from).collect::<Vec<_>>());
    // A bounded recursion: fine at the default, too deep for 256 bytes, fine at 4096.
    s.ok("%array d = zeros(1, i32)");
    s.ok("%launch deep[1, 1](d, 20)");
    assert_eq!(s.f64s("d"), vec![20.0]);
    s.ok("%limit stack 256");
    assert!(s.printed().contains("256 bytes per thread"));
    assert_eq!(s.m.dev.stack_limit(), 256);
    s.ok("%array d = zeros(1, i32)");
    let e = s.err("%launch deep[1, 1](d, 20)");
    assert_eq!(e.ename, "DeviceFault", "{}", e.message);
    s.ok("%set bytes = 4096");
    s.ok("%limit stack bytes");
    s.ok("%array d = zeros(1, i32)");
    s.ok("%launch deep[1, 1](d, 20)");
    assert_eq!(s.f64s("d"), vec![20.0]);
    // Bad sizes are refused by name and change nothing.
    for (line, value) in [
        ("%limit stack 0", "0 bytes"),
        ("%limit stack -16", "-16 bytes"),
        ("%limit stack 2000000", "2000000 bytes"),
    ] {
        let e = s.err(line);
        assert_eq!(e.ename, "ArgumentError", "{line}: {}", e.message);
        assert!(e.message.contains(value), "{line}: {}", e.message);
    }
    assert!(s.run("%limit stack 1.5").is_err());
    assert!(s.run("%limit heap 4096").is_err());
    assert_eq!(s.m.dev.stack_limit(), 4096);
}

#[test]
fn warp_size_in_device_code_compiles_and_runs() {
    // NVRTC emits the PTX constant WARP_SZ for `warpSize`; the whole module used to be refused.
    let mut s = Session::new();
    s.cell(
        "%%cuda",
        "__global__ void lanes(int* lane, int* warp, int n) {\n\
         int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
         if (i < n) { lane[i] = threadIdx.x % warpSize; warp[i] = threadIdx.x / warpSize; }\n\
         }\n",
    )
    .expect("a kernel using warpSize compiles and loads");
    s.printed();
    assert!(
        s.ok_text("%ptx lanes").contains("WARP_SZ"),
        "NVRTC's PTX reads WARP_SZ"
    );
    s.ok("%array lane = zeros(300, i32)");
    s.ok("%array warp = zeros(300, i32)");
    s.ok("%launch lanes[3, 100](lane, warp, 300)");
    let want_lane: Vec<f64> = (0..300).map(|i| f64::from((i % 100) % 32)).collect();
    let want_warp: Vec<f64> = (0..300).map(|i| f64::from((i % 100) / 32)).collect();
    assert_eq!(s.f64s("lane"), want_lane);
    assert_eq!(s.f64s("warp"), want_warp);
}
