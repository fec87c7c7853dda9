//! Tests of `%profile` through [`Magics`] on the real device state (ptxsim and NVRTC): the
//! counts of kernels with hand-computed coalescing and bank conflicts, the limiter line, the
//! JSON entry's Nsight Compute names, `--lines`, `--gpu`, and that profiling changes no data.

use super::test_session::{text, Session};
use protocol::output::CellOutput;
use serde_json::Value;

const KERNELS: &str = r#"
__global__ void copy(const float* a, float* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i];
}
__global__ void strided(const float* a, float* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i * 32 < n) b[i] = a[i * 32];
}
__global__ void conflicts(float* out, int pad) {
    __shared__ float s[32 * 33];
    int t = threadIdx.x;
    s[t * (32 + pad)] = t;
    __syncthreads();
    out[t] = s[t * (32 + pad)];
}
"#;

/// The display of `%profile …` and its application/json entry.
fn profile(s: &mut Session, line: &str) -> (String, Value) {
    s.ok(line);
    let d = s.display();
    assert!(d.contains_key("text/html"), "{line}: html");
    let j = d
        .get("application/json")
        .cloned()
        .expect("application/json");
    (text(&d), j)
}

fn metric(j: &Value, k: &str) -> f64 {
    j["metrics"][k]
        .as_f64()
        .unwrap_or_else(|| panic!("no metric {k}: {j}"))
}

fn session() -> Session {
    let mut s = Session::new();
    if s.m.dev.backend_name() != "ptxsim" {
        eprintln!("(tests_profile run on the GPU backend: counts still come from ptxsim)");
    }
    s.cell("%%cuda", KERNELS).expect("the kernels compile");
    s.take();
    s.ok("%set n = 4096");
    s.ok("%array a = rand(n, f32, seed=3)");
    s.ok("%array b = zeros(n, f32)");
    s.ok("%array out = zeros(32, f32)");
    s
}

#[test]
fn profile_counts_coalesced_and_strided_loads_and_changes_no_data() {
    let mut s = session();
    let before = s.bytes("b");
    let (t, j) = profile(&mut s, "%profile copy[n / 256, 256](a, b, n)");
    // 4096 threads = 128 warps, one load and one store request each, 4 sectors per request.
    assert_eq!(
        metric(&j, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
        128.0
    );
    assert_eq!(
        metric(&j, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
        512.0
    );
    assert_eq!(
        metric(&j, "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
        512.0
    );
    assert_eq!(metric(&j, "launch__block_size"), 256.0);
    assert_eq!(metric(&j, "launch__thread_count"), 4096.0);
    assert_eq!(metric(&j, "dram__bytes_read.sum"), 16384.0);
    assert_eq!(metric(&j, "dram__bytes_write.sum"), 16384.0);
    assert!(metric(&j, "launch__registers_per_thread") > 0.0);
    assert_eq!(j["kernel"], "copy");
    assert_eq!(j["gpu"], "H200");
    assert_eq!(j["estimated"], true);
    for section in [
        "Launch statistics",
        "Occupancy on H200",
        "Memory workload",
        "Compute workload",
        "limiter: ",
        "hottest 5 source lines",
    ] {
        assert!(t.contains(section), "{section}: {t}");
    }
    assert!(t.contains("if (i < n) b[i] = a[i];"), "{t}");
    assert_eq!(s.bytes("b"), before, "%profile must not write the arrays");

    // a[i * 32]: every lane its own sector, 32 per request; stores stay coalesced.
    let (t, j) = profile(&mut s, "%profile strided[1, 128](a, b, n)");
    assert_eq!(
        metric(
            &j,
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum_per_request"
        ),
        32.0
    );
    assert_eq!(
        metric(
            &j,
            "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum_per_request"
        ),
        4.0
    );
    assert!(
        t.contains("limiter: global loads touch 32.0 sectors per request: 8.0x"),
        "{t}"
    );
    assert_eq!(s.bytes("b"), before);
}

#[test]
fn profile_counts_bank_conflicts_and_annotates_lines() {
    let mut s = session();
    let (t, j) = profile(&mut s, "%profile --lines conflicts[1, 32](out, 0)");
    // s[t * 32]: every lane in bank 0, 32 wavefronts for the store and for the load.
    assert_eq!(
        metric(&j, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"),
        32.0
    );
    assert_eq!(
        metric(
            &j,
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
        ),
        31.0
    );
    assert!(t.contains("32-way bank conflicts"), "{t}");
    assert!(t.contains("shared 32.0 wf/req"), "--lines: {t}");
    let (t, j) = profile(&mut s, "%profile conflicts[1, 32](out, 1)");
    assert_eq!(
        metric(&j, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"),
        1.0
    );
    assert_eq!(
        metric(
            &j,
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
        ),
        0.0
    );
    assert!(!t.contains("-way bank conflicts"), "{t}");
    assert_eq!(s.f64s("out"), vec![0.0; 32], "%profile must not write out");
}

#[test]
fn profile_options_and_errors() {
    let mut s = session();
    let (t, j) = profile(&mut s, "%profile --gpu T4 copy[16, 256](a, b, n)");
    assert_eq!(j["gpu"], "T4");
    assert_eq!(j["arch"], "sm_75");
    assert!(t.contains("Occupancy on T4 (sm_75)"), "{t}");
    // T4: 40 SMs; 16 blocks of 8 warps fill 16 SMs' 32 warp slots by a quarter.
    let achieved = metric(&j, "sm__warps_active.avg.pct_of_peak_sustained_active");
    assert!(
        (achieved - 100.0 * 16.0 * 8.0 / (40.0 * 32.0)).abs() < 1e-9,
        "{achieved}"
    );
    let e = s.err("%profile --gpu Z80 copy[16, 256](a, b, n)");
    assert!(
        e.message.contains("unknown GPU model 'Z80'"),
        "{}",
        e.message
    );
    let e = s.err("%profile");
    assert!(
        e.message.contains("%profile needs a launch"),
        "{}",
        e.message
    );
    let e = s.err("%profile --fast copy[16, 256](a, b, n)");
    assert!(
        e.message.contains("unknown option '--fast' for %profile"),
        "{}",
        e.message
    );
    let e = s.err("%profile copy[16, 256](a, b)");
    assert!(
        e.message.contains("copy takes 3 arguments"),
        "{}",
        e.message
    );
    let e = s.err("%profile nosuch[1, 1]()");
    assert!(e.message.contains("nosuch"), "{}", e.message);
    // nb::profile's path: the metrics alone.
    let m =
        s.m.profile_metrics("copy[n / 256, 256](a, b, n)")
            .expect("metrics");
    assert_eq!(
        m["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"].as_f64(),
        Some(128.0)
    );
    assert!(s.m.profile_metrics("copy[1, 1](a)").is_err());
    assert!(s
        .ok_text("%help profile")
        .contains("%profile [--gpu MODEL]"));
}

#[test]
fn time_on_ptxsim_shows_the_modelled_gpus_estimate() {
    let mut s = session();
    s.ok("%time -n 1 copy[n / 256, 256](a, b, n)");
    let shown: Vec<_> = s
        .take()
        .into_iter()
        .filter_map(|o| match o {
            CellOutput::Display { data, .. } | CellOutput::UpdateDisplay { data, .. } => Some(data),
            _ => None,
        })
        .collect();
    let last = shown.last().expect("the %time table");
    let t = text(last);
    assert!(t.contains("estimated on H200"), "{t}");
    assert!(
        t.contains("bound by") && t.contains("launch overhead ("),
        "{t}"
    );
    let j = last.get("application/json").expect("json");
    assert_eq!(j["estimated"], true);
    assert_eq!(j["gpu"], "H200");
    let ns = j["metrics"]["gpu__time_duration.sum"].as_f64().expect("ns");
    assert!(ns >= ptxsim::model::LAUNCH_NS, "{ns}");
    s.ok("%time -n 1 --gpu T4 strided[1, 128](a, b, n)");
    assert!(s.printed().contains("estimated on T4"));
    s.ok("%timings");
    let t: String = s
        .take()
        .into_iter()
        .filter_map(|o| match o {
            CellOutput::Display { data, .. } => Some(text(&data)),
            _ => None,
        })
        .collect();
    assert!(t.contains("est. H200") && t.contains("est. T4"), "{t}");
    assert!(t.contains("estimated time per launch on H200"), "{t}");
    // Every model in one table; the profile's estimate.
    let t = s.ok_text("%gpu compare copy[n / 256, 256](a, b, n)");
    for g in [
        "T4", "V100", "A100", "L4", "RTX 3090", "RTX 4090", "H100", "H200",
    ] {
        assert!(t.contains(g), "{g}: {t}");
    }
    let (t, j) = profile(&mut s, "%profile copy[n / 256, 256](a, b, n)");
    assert!(t.contains("estimated on H200"), "{t}");
    assert!(j["estimate"]["ns"].as_f64().expect("ns") >= ptxsim::model::LAUNCH_NS);
    assert_eq!(j["time_measured"], false);
}

#[test]
fn profile_ncu_on_ptxsim_says_why_in_one_line_and_still_shows_the_profile() {
    let mut s = session();
    if s.m.dev.backend_name() != "ptxsim" {
        eprintln!("(the GPU backend: --ncu's no-GPU path is not reachable)");
        return;
    }
    let before = s.m.dev.read_array("b").expect("b");
    let (_, plain) = profile(&mut s, "%profile copy[n / 256, 256](a, b, n)");
    s.ok("%profile --ncu copy[n / 256, 256](a, b, n)");
    let outputs = s.take();
    let stderr: Vec<&str> = outputs
        .iter()
        .filter_map(|o| match o {
            CellOutput::Stderr(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(stderr.len(), 1, "{outputs:?}");
    let line = stderr[0];
    assert_eq!(line.trim_end().lines().count(), 1, "{line}");
    assert!(
        line.starts_with("%profile --ncu needs the GPU backend:")
            && line.contains("showing ptxsim's counters only"),
        "{line}"
    );
    let shown: Vec<_> = outputs
        .iter()
        .filter_map(|o| match o {
            CellOutput::Display { data, .. } => Some(data.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(shown.len(), 1);
    let j = shown[0]
        .get("application/json")
        .cloned()
        .expect("application/json");
    // ptxsim's metrics as without --ncu; ncu's absent, and why.
    assert_eq!(j["metrics"], plain["metrics"]);
    assert!(j["ncu"].is_null(), "{j}");
    assert_eq!(j["ncu_error"]["kind"], "no_gpu");
    assert!(text(&shown[0]).contains("Memory workload"));
    assert!(!text(&shown[0]).contains("Nsight Compute beside ptxsim"));
    assert_eq!(s.m.dev.read_array("b").expect("b"), before);
    // The option is in the help and the completion.
    assert!(s.ok_text("%help profile").contains("[--ncu]"));
    let line = "%profile --n";
    let c = s.m.complete(line, line.len());
    assert!(format!("{c:?}").contains("--ncu"), "{c:?}");
}

#[test]
fn the_ncu_table_sets_ncu_beside_ptxsim_with_ratios() {
    let mut s = session();
    s.ok("%profile copy[n / 256, 256](a, b, n)");
    s.take();
    // A profile with an ncu result attached, as `%profile --ncu` attaches it on a GPU.
    let m = s.m.profile_metrics("copy[n / 256, 256](a, b, n)").unwrap();
    let ours_requests = m["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]
        .as_f64()
        .unwrap();
    let mut p = s.m.profile_outcome("copy[n / 256, 256](a, b, n)").unwrap();
    let mut values = std::collections::BTreeMap::new();
    values.insert(
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum".to_string(),
        ours_requests,
    );
    values.insert("dram__bytes_read.sum".to_string(), 2.0 * 16384.0);
    values.insert("not_a_ptxsim_metric.sum".to_string(), 5.0);
    p.ncu = Some(Ok(crate::gpu::NcuOutcome {
        kernel_name: "copy".into(),
        metrics: values,
        unknown: vec!["sm__sass_inst_executed_op_fp32.sum".into()],
        program: "/usr/local/cuda/bin/ncu".into(),
        wall_s: 3.2,
    }));
    let b = super::profile_view::bundle(&p, false);
    let t = text(&b);
    assert!(t.contains("Nsight Compute beside ptxsim: copy"), "{t}");
    let row = t
        .lines()
        .find(|l| l.contains("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"))
        .expect("the requests row");
    assert!(row.contains("1.000"), "{row}");
    assert!(!t.contains("not_a_ptxsim_metric"), "{t}");
    assert!(
        t.contains("no ncu value for sm__sass_inst_executed_op_fp32.sum"),
        "{t}"
    );
    let html = b["text/html"].as_str().unwrap();
    assert!(html.contains("ncu / ptxsim"), "{html}");
    let j = &b["application/json"];
    assert_eq!(j["ncu"]["dram__bytes_read.sum"], 32768.0);
    assert_eq!(j["ncu_kernel"], "copy");
    assert!(j.get("ncu_error").is_none());
}

#[test]
fn a_launch_at_a_gpus_size_is_counted_from_a_sample_and_says_so() {
    let mut s = session();
    // 2^26 floats each way (256 MiB of zeros: no memory until written): 262,144 blocks.
    s.ok("%array big_a = zeros(67108864, f32)");
    s.ok("%array big_b = zeros(67108864, f32)");
    let (t, j) = profile(
        &mut s,
        "%profile copy[262144, 256](big_a, big_b, len(big_a))",
    );
    let k = j["sampled"]["blocks"].as_u64().expect("a sample");
    assert_eq!(j["sampled"]["of"], 262144, "{j}");
    assert!(k > 0 && k < 262144 / 10, "{k}");
    assert!(
        t.contains("of 262,144 blocks") && t.contains("--full counts all"),
        "{t}"
    );
    // Scaled to the grid: one load and one store request per warp, 4 sectors each.
    let warps = 262144.0 * 8.0;
    let ld = metric(&j, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum");
    assert!((ld - warps).abs() / warps < 0.01, "{ld}");
    let dram = metric(&j, "dram__bytes_read.sum");
    assert!((dram - 268435456.0).abs() / 268435456.0 < 0.03, "{dram}");
    // The arrays are untouched and still cost nothing to read back as zeros.
    assert!(s.bytes("big_b").iter().all(|&b| b == 0));
    // A small launch is counted in full: no "sampled" entry.
    let (_, j) = profile(&mut s, "%profile --full copy[n / 256, 256](a, b, n)");
    assert!(j["sampled"].is_null(), "{j}");
    assert_eq!(
        s.err("%profile --fast copy[1, 32](a, b, n)").ename,
        nb::ErrorKind::Syntax
    );
}
