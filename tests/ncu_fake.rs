//! `%profile --ncu`'s child-process plumbing without a GPU: a fake `ncu` (a shell script) starts
//! the GPU worker on ptxsim (`gpu-worker --sim --connect SOCKET`) the way ncu starts its target,
//! the launch is replayed into it, and the script prints a canned report in ncu's CSV format
//! (or ncu's permission error, an unknown metric, a failure, a hang). What is real here: the
//! worker started under another program, the socket by path, the replay, the wait for the
//! launcher's exit, the timeout and the interrupt (which kill the launcher's process group),
//! the reading of the output. What only a GPU shows: ncu itself (scripts/gpu-check.sh).

use nbcuda::gpu::ncu::{NcuFailure, NcuSetup};
use nbcuda::gpu::sim::SimBackend;
use nbcuda::gpu::{DeviceState, Dtype, LaunchArg, LaunchRequest};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

const SRC: &str = r#"
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"#;

const HEADER: &str = r#""ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value""#;

/// A fake ncu: finds the target (the word before `gpu-worker`), runs it unless the mode says
/// otherwise, then writes a report to `--log-file` with "1,024" for every `--metrics` name.
fn script(mode: &str) -> String {
    format!(
        r#"#!/bin/bash
mode={mode}
args=("$@"); n=${{#args[@]}}; start=-1; log=""; metrics=""
for ((i=0; i<n; i++)); do
  case "${{args[$i]}}" in
    --log-file) log="${{args[$((i+1))]}}";;
    --metrics) metrics="${{args[$((i+1))]}}";;
    gpu-worker) if [ $start -lt 0 ]; then start=$((i-1)); fi;;
  esac
done
[ $start -ge 0 ] || {{ echo "fake ncu: no target"; exit 3; }}
echo "==PROF== Connected to process $$ (${{args[$start]}})"
if [ $mode = fail ]; then
  echo "==ERROR== The application could not be launched (fake)."; exit 1
fi
if [ $mode = unknown ] && [[ ",$metrics," == *",sm__sass_inst_executed_op_fp32.sum,"* ]]; then
  echo "==ERROR== Failed to find metric sm__sass_inst_executed_op_fp32.sum"; exit 1
fi
"${{args[@]:$start}}"
status=$?
if [ $mode = hang ]; then sleep 60; fi
if [ $mode = perm ]; then
  echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the target device 0. For instructions on enabling permissions and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM"
  echo "==WARNING== No kernels were profiled."
  exit 0
fi
echo "==PROF== Disconnected from process $$"
{{
  echo '{HEADER}'
  IFS=, read -ra ms <<< "$metrics"
  for m in "${{ms[@]}}"; do
    echo "\"0\",\"$$\",\"nbcuda\",\"127.0.0.1\",\"add\",\"1\",\"7\",\"(128, 1, 1)\",\"(8, 1, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\",\"$m\",\"\",\"1,024\""
  done
}} > "$log"
exit $status
"#
    )
}

/// The fake ncu programs by mode, written once before any test spawns a process (a script
/// written while another thread forks can fail to run with ETXTBSY), with the worker program
/// set to this crate's binary.
fn fakes() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        std::env::set_var("NBCUDA_GPU_WORKER", env!("CARGO_BIN_EXE_nbcuda"));
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("fake-ncu-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a folder for the fake ncu");
        for mode in ["csv", "perm", "fail", "unknown", "hang"] {
            let p = dir.join(format!("ncu-{mode}"));
            std::fs::write(&p, script(mode)).expect("the fake ncu is written");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))
                .expect("the fake ncu is executable");
        }
        dir
    })
}

fn setup(mode: &str, timeout_s: f64) -> NcuSetup {
    NcuSetup {
        program: fakes().join(format!("ncu-{mode}")),
        timeout_s,
        sim_worker: true,
    }
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A ptxsim session with `add` and three arrays of `n`; the request adds them.
fn session(n: usize, cancel: Arc<AtomicBool>) -> (DeviceState, LaunchRequest) {
    fakes();
    let mut s = DeviceState::with_backend(Box::new(SimBackend::new()), None);
    s.compile_cuda(SRC, &Default::default(), 1)
        .expect("the cell compiles");
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| 0.5 * i as f32).collect();
    s.create_array("a", Dtype::F32, vec![n], &bytes(&a))
        .unwrap();
    s.create_array("b", Dtype::F32, vec![n], &bytes(&b))
        .unwrap();
    s.create_array("c", Dtype::F32, vec![n], &vec![0; n * 4])
        .unwrap();
    let request = LaunchRequest {
        kernel: "add".into(),
        grid: ((n as u32).div_ceil(128), 1, 1),
        block: (128, 1, 1),
        shared_bytes: 0,
        stream: None,
        args: vec![
            LaunchArg::Array("a".into()),
            LaunchArg::Array("b".into()),
            LaunchArg::Array("c".into()),
            LaunchArg::Int(n as i64),
        ],
        check: false,
        cooperative: false,
        cancel: cancel.clone(),
    };
    (s, request)
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_report_comes_back_through_the_worker_under_the_fake_ncu() {
    let cancel = Arc::new(AtomicBool::new(false));
    let (mut s, request) = session(1000, cancel.clone());
    let before = s.read_array("c").unwrap();
    let metrics = names(&[
        "smsp__inst_executed.sum",
        "launch__grid_size",
        "dram__bytes_read.sum",
    ]);
    let out = s
        .profile_ncu(&request, &metrics, &setup("csv", 60.0), &cancel)
        .expect("the fake ncu's report is read");
    assert_eq!(out.kernel_name, "add");
    assert_eq!(out.metrics.len(), 3, "{out:?}");
    for m in &metrics {
        assert_eq!(out.metrics[m], 1024.0, "{m}");
    }
    assert!(out.unknown.is_empty(), "{out:?}");
    // The replay ran on copies in the worker: the session's array is as it was.
    assert_eq!(s.read_array("c").unwrap(), before);
}

#[test]
fn the_permission_error_is_one_clear_failure() {
    let cancel = Arc::new(AtomicBool::new(false));
    let (mut s, request) = session(300, cancel.clone());
    let e = s
        .profile_ncu(
            &request,
            &names(&["smsp__inst_executed.sum"]),
            &setup("perm", 60.0),
            &cancel,
        )
        .expect_err("ncu was refused the counters");
    assert_eq!(e, NcuFailure::Refused);
    let m = e.message();
    assert!(m.contains("ERR_NVGPUCTRPERM") && m.contains("NVreg_RestrictProfilingPermission=0"));
    assert!(!m.contains('\n'));
}

#[test]
fn unknown_metrics_are_left_out_of_a_second_run() {
    let cancel = Arc::new(AtomicBool::new(false));
    let (mut s, request) = session(300, cancel.clone());
    let metrics = names(&[
        "smsp__inst_executed.sum",
        "sm__sass_inst_executed_op_fp32.sum",
    ]);
    let out = s
        .profile_ncu(&request, &metrics, &setup("unknown", 60.0), &cancel)
        .expect("the second run measures the known metrics");
    assert_eq!(
        out.metrics.keys().collect::<Vec<_>>(),
        vec!["smsp__inst_executed.sum"]
    );
    assert_eq!(out.unknown, vec!["sm__sass_inst_executed_op_fp32.sum"]);
}

#[test]
fn a_failing_ncu_shows_its_last_lines() {
    let cancel = Arc::new(AtomicBool::new(false));
    let (mut s, request) = session(300, cancel.clone());
    let e = s
        .profile_ncu(
            &request,
            &names(&["smsp__inst_executed.sum"]),
            &setup("fail", 60.0),
            &cancel,
        )
        .expect_err("the fake ncu fails");
    let NcuFailure::Failed(why) = &e else {
        panic!("{e:?}")
    };
    assert!(why.contains("could not be launched (fake)"), "{why}");
    assert!(
        why.contains("ended before the GPU worker connected"),
        "{why}"
    );
    assert!(!e.message().contains('\n'));
}

#[test]
fn a_hanging_ncu_is_killed_at_the_timeout_and_by_the_interrupt() {
    let cancel = Arc::new(AtomicBool::new(false));
    let (mut s, request) = session(300, cancel.clone());
    let metrics = names(&["smsp__inst_executed.sum"]);
    let t0 = Instant::now();
    let e = s
        .profile_ncu(&request, &metrics, &setup("hang", 2.0), &cancel)
        .expect_err("the fake ncu hangs");
    assert_eq!(e, NcuFailure::TimedOut(2.0));
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    // The interrupt, raised while it hangs.
    let flag = cancel.clone();
    let raiser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        flag.store(true, Ordering::SeqCst);
    });
    let t0 = Instant::now();
    let e = s
        .profile_ncu(&request, &metrics, &setup("hang", 60.0), &cancel)
        .expect_err("interrupted");
    raiser.join().unwrap();
    assert_eq!(e, NcuFailure::Interrupted);
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
}

#[test]
fn without_the_gpu_backend_it_says_so() {
    let cancel = Arc::new(AtomicBool::new(false));
    let (mut s, request) = session(100, cancel.clone());
    let mut st = setup("csv", 60.0);
    st.sim_worker = false;
    let e = s
        .profile_ncu(&request, &names(&["smsp__inst_executed.sum"]), &st, &cancel)
        .expect_err("ptxsim is no GPU");
    assert!(matches!(e, NcuFailure::NoGpu(_)), "{e:?}");
    assert!(e
        .message()
        .starts_with("%profile --ncu needs the GPU backend"));
}
