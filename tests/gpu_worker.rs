//! The GPU worker process path (issue 5) without a GPU: the worker runs ptxsim (`--sim`) and the
//! Jupyter kernel's `DeviceState` talks to it through `RemoteBackend`, exactly as it talks to a
//! GPU worker. Results are compared with CPU references on random inputs; a killed worker
//! stands for a sticky GPU fault: the next command starts a fresh worker, restores the arrays
//! that have host copies and reloads the CUDA kernels.

use nbcuda::gpu::backend::Backend;
use nbcuda::gpu::worker::RemoteBackend;
use nbcuda::gpu::{CudaOptions, DeviceState, Dtype, LaunchArg, LaunchRequest};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SRC: &str = r#"
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
__global__ void oob(float* a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    a[i + n] = 1.0f;
}
__global__ void spin(int* flag) {
    while (atomicAdd(flag, 0) == 0) { }
}
__global__ void hello(int n) {
    if (threadIdx.x < n) printf("lane %d\n", threadIdx.x);
}
"#;

struct Rng(u64);
impl Rng {
    fn f32(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
}

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64 | 1)
        .unwrap_or(0x9e37_79b9)
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn request(kernel: &str, grid: u32, block: u32, args: Vec<LaunchArg>) -> LaunchRequest {
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

fn worker_state() -> (DeviceState, u32) {
    // Once, before any test of this file spawns a worker (setenv races with other threads).
    static WORKER_PROGRAM: std::sync::Once = std::sync::Once::new();
    WORKER_PROGRAM
        .call_once(|| std::env::set_var("NBCUDA_GPU_WORKER", env!("CARGO_BIN_EXE_nbcuda")));
    let remote = RemoteBackend::spawn(0, true).expect("a ptxsim worker starts");
    let pid = remote.worker_pid().expect("the worker has a process");
    (DeviceState::with_backend(Box::new(remote), None), pid)
}

fn add_args(n: usize) -> Vec<LaunchArg> {
    vec![
        LaunchArg::Array("a".into()),
        LaunchArg::Array("b".into()),
        LaunchArg::Array("c".into()),
        LaunchArg::Int(n as i64),
    ]
}

#[test]
fn arrays_launches_printf_and_faults_through_the_worker() {
    let (mut s, _) = worker_state();
    s.compile_cuda(SRC, &CudaOptions::default(), 1)
        .expect("the cell compiles and loads in the worker");
    let mut rng = Rng(seed());
    let n = 10_000 + (rng.f32() * 5000.0) as usize;
    let a: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let b: Vec<f32> = (0..n).map(|_| rng.f32() * 10.0 - 5.0).collect();
    s.create_array("a", Dtype::F32, vec![n], &bytes(&a))
        .unwrap();
    s.create_array("b", Dtype::F32, vec![n], &bytes(&b))
        .unwrap();
    s.create_array("c", Dtype::F32, vec![n], &vec![0; n * 4])
        .unwrap();
    let grid = n.div_ceil(128) as u32;
    s.launch(&request("add", grid, 128, add_args(n)))
        .expect("add runs");
    let c = floats(&s.read_array("c").unwrap());
    for i in 0..n {
        assert_eq!(c[i], a[i] + b[i], "element {i}");
    }
    // Device printf comes back with the launch.
    let out = s
        .launch(&request("hello", 1, 32, vec![LaunchArg::Int(3)]))
        .unwrap();
    let mut lines: Vec<&str> = out.printf.lines().collect();
    lines.sort();
    assert_eq!(lines, vec!["lane 0", "lane 1", "lane 2"]);
    // A checked fault in the worker's ptxsim comes back as a DeviceFault naming the CUDA kernel;
    // the worker stays usable (ptxsim faults are not sticky).
    let e = s
        .launch(&request(
            "oob",
            1,
            32,
            vec![LaunchArg::Array("c".into()), LaunchArg::Int(n as i64)],
        ))
        .expect_err("an out-of-bounds store faults");
    assert_eq!(e.ename, "DeviceFault", "{}", e.message);
    assert!(e.message.contains("oob"), "{}", e.message);
    s.launch(&request("add", grid, 128, add_args(n))).unwrap();
    assert_eq!(floats(&s.read_array("c").unwrap()), c);
    // Large copies go through shared memory; both directions keep every byte.
    let big: Vec<u8> = (0..3_000_003usize)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    s.create_array("big", Dtype::U8, vec![big.len()], &big)
        .unwrap();
    assert!(s.read_array("big").unwrap() == big);
    let big2: Vec<u8> = big.iter().map(|b| b ^ 0x5a).collect();
    s.write_array("big", &big2).unwrap();
    assert!(s.read_array("big").unwrap() == big2);
    // %upload / %download on a stream, large enough for shared memory.
    let zero = vec![0u8; big.len()];
    s.create_array("up", Dtype::U8, vec![big.len()], &big)
        .unwrap();
    s.write_array("up", &zero).unwrap();
    s.create_array("dn", Dtype::U8, vec![big.len()], &big2)
        .unwrap();
    s.download("dn", Some("s1")).unwrap();
    s.synchronize(Some("s1")).unwrap();
    assert!(s.host_copy("dn").unwrap() == big2);
    s.upload("up", Some("s1")).unwrap();
    s.synchronize(None).unwrap();
    assert!(
        s.read_array("up").unwrap() == zero,
        "the host copy is what write_array gave"
    );
}

#[test]
fn a_dead_worker_is_replaced_and_host_copies_restored() {
    let (mut s, first) = worker_state();
    let pid = first;
    s.compile_cuda(SRC, &CudaOptions::default(), 1).unwrap();
    let mut rng = Rng(seed());
    let n = 4096;
    let a: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    s.create_array("a", Dtype::F32, vec![n], &bytes(&a))
        .unwrap();
    s.create_array("b", Dtype::F32, vec![n], &bytes(&a))
        .unwrap();
    s.create_array("c", Dtype::F32, vec![n], &vec![0; n * 4])
        .unwrap();
    s.launch(&request("add", 32, 128, add_args(n))).unwrap(); // `c` now lives only on the device
                                                              // SAFETY: kills our own child process, standing for a crash of the driver.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    std::thread::sleep(Duration::from_millis(100));
    let e = s
        .launch(&request("add", 32, 128, add_args(n)))
        .expect_err("the worker is gone");
    assert_eq!(e.ename, "DeviceFault", "{}", e.message);
    assert!(
        e.message.contains("GPU worker process stopped"),
        "{}",
        e.message
    );
    // Reads of arrays with host copies still work; %reset starts a fresh worker: `a` and `b`
    // come back, `c` is lost, the CUDA kernels are reloaded.
    let back = s.read_array("a").expect("`a` is read from its host copy");
    assert_eq!(floats(&back), a);
    let msg = s.reset().expect("a fresh worker");
    assert!(msg.contains("rebuilt") && msg.contains("lost: c"), "{msg}");
    assert!(msg.contains("restored from host copies: a, b"), "{msg}");
    assert!(s.array("c").is_none() && s.read_array("c").is_err());
    s.create_array("c", Dtype::F32, vec![n], &vec![0; n * 4])
        .unwrap();
    s.launch(&request("add", 32, 128, add_args(n))).unwrap();
    let c = floats(&s.read_array("c").unwrap());
    assert!(c.iter().zip(&a).all(|(c, a)| *c == a + a));
    // Without %reset, the next command rebuilds by itself and leaves a notice for the cell.
    let pid = s.worker_pid().expect("a fresh worker") as i32;
    assert_ne!(pid, first as i32, "a new process");
    // SAFETY: kills our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    std::thread::sleep(Duration::from_millis(100));
    assert!(s.launch(&request("add", 32, 128, add_args(n))).is_err());
    s.create_array("d", Dtype::F32, vec![4], &[0; 16])
        .expect("the next command runs on a fresh worker");
    let notice = s.take_notice().unwrap_or_default();
    assert!(
        notice.contains("rebuilt") && notice.contains("lost: c"),
        "{notice}"
    );
    assert_eq!(floats(&s.read_array("a").unwrap()), a);
}

#[test]
fn an_interrupt_reaches_a_launch_in_the_worker() {
    let (mut s, _) = worker_state();
    s.compile_cuda(SRC, &CudaOptions::default(), 1).unwrap();
    s.create_array("flag", Dtype::I32, vec![1], &[0; 4])
        .unwrap();
    let mut req = request("spin", 1, 32, vec![LaunchArg::Array("flag".into())]);
    let cancel = Arc::new(AtomicBool::new(false));
    req.cancel = cancel.clone();
    let raiser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        cancel.store(true, Ordering::SeqCst);
    });
    let t = Instant::now();
    let e = s
        .launch(&req)
        .expect_err("the endless CUDA kernel is interrupted");
    raiser.join().unwrap();
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    assert!(e.message.contains("interrupt"), "{}", e.message);
    // The worker is still there and usable.
    s.create_array("a", Dtype::F32, vec![4], &bytes(&[1.0, 2.0, 3.0, 4.0]))
        .unwrap();
    assert_eq!(
        floats(&s.read_array("a").unwrap()),
        vec![1.0, 2.0, 3.0, 4.0]
    );
}
