//! Tests of `%graph`, `%time graph`, `%array --managed` and `%prefetch` through [`Magics`] on the
//! session's device (ptxsim here; the GPU with `NBCUDA_BACKEND=gpu`, where graphs are real CUDA
//! graphs): results against a CPU reference on random inputs, what a recording refuses, and
//! every error naming its cause.

use super::parse::time_args::TimeTarget;
use super::parse::{Command, GraphCmd};
use super::registry::parse_line;
use super::test_session::{text, Session};
use crate::gpu::Dtype;

const AXPY: &str = r#"
__global__ void axpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

const N: usize = 1000;

/// A session with `axpy`, random `x`, `y` and a zero `z`; returns their host values.
fn session(seed: u64) -> (Session, Vec<f64>, Vec<f64>) {
    let mut s = Session::new();
    s.cell("%%cuda", AXPY).unwrap_or_else(|e| panic!("{e}"));
    s.take();
    let mut rng = super::test_session::seq_rng(seed);
    let x: Vec<f64> = (0..N)
        .map(|_| (rng.f64() * 8.0 - 4.0) as f32 as f64)
        .collect();
    let y: Vec<f64> = (0..N)
        .map(|_| (rng.f64() * 8.0 - 4.0) as f32 as f64)
        .collect();
    s.put("x", Dtype::F32, vec![N], &x);
    s.put("y", Dtype::F32, vec![N], &y);
    s.ok("%array z = zeros(1000, f32)");
    (s, x, y)
}

/// Records graph `step`: y = 2x + y; z = y; y = z + y (so y becomes 2(2x + y)).
fn record_step(s: &mut Session) {
    let out = s.ok_text("%graph begin step");
    assert!(out.contains("recording graph step"), "{out}");
    s.ok("%launch axpy[4, 256](2.0, x, y, 1000)");
    s.ok("%copy z = y");
    s.ok("%launch axpy[4, 256](1.0, z, y, 1000)");
    let out = s.ok_text("%graph end");
    assert!(out.contains("graph step: 3 steps"), "{out}");
}

fn assert_close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-5 * w.abs().max(1.0),
            "{what}[{i}]: {g} vs {w}"
        );
    }
}

#[test]
fn graph_magics_parse() {
    let p = |s: &str| parse_line(s).unwrap_or_else(|e| panic!("{s}: {e:?}"));
    assert_eq!(p("%graph"), Command::Graph(GraphCmd::List));
    assert_eq!(p("%graph end"), Command::Graph(GraphCmd::End));
    assert!(
        matches!(p("%graph begin g1"), Command::Graph(GraphCmd::Begin(ref n)) if n.text == "g1")
    );
    assert!(matches!(p("%graph drop g1"), Command::Graph(GraphCmd::Drop(ref n)) if n.text == "g1"));
    assert!(matches!(
        p("%graph launch g1 -n 2 * k"),
        Command::Graph(GraphCmd::Launch { ref name, times: Some(_) }) if name.text == "g1"
    ));
    assert!(matches!(
        p("%graph launch g1"),
        Command::Graph(GraphCmd::Launch { times: None, .. })
    ));
    match p("%time -n 5 graph g1") {
        Command::Time(a) => {
            assert!(matches!(a.target, TimeTarget::Graph(ref n) if n.text == "g1"));
            assert_eq!(a.label, "graph g1");
        }
        c => panic!("{c:?}"),
    }
    // A CUDA kernel called `graph` is still a launch.
    match p("%time graph[1, 32](x)") {
        Command::Time(a) => assert!(matches!(a.target, TimeTarget::Launch(_))),
        c => panic!("{c:?}"),
    }
    assert!(matches!(
        p("%array --managed m = ones(4, f32)"),
        Command::Array { managed: true, .. }
    ));
    assert!(matches!(
        p("%array m = ones(4, f32)"),
        Command::Array { managed: false, .. }
    ));
    assert!(matches!(
        p("%prefetch m"),
        Command::Prefetch {
            to_device: true,
            ..
        }
    ));
    assert!(matches!(
        p("%prefetch m host"),
        Command::Prefetch {
            to_device: false,
            ..
        }
    ));
    let err = |s: &str| parse_line(s).err().map(|e| e.message).unwrap_or_default();
    assert!(
        err("%graph lanch g").contains("did you mean launch?"),
        "{}",
        err("%graph lanch g")
    );
    assert!(
        err("%graph launch g 5").contains("-n K"),
        "{}",
        err("%graph launch g 5")
    );
    assert!(
        err("%graph begin").contains("a graph name"),
        "{}",
        err("%graph begin")
    );
    assert!(
        err("%prefetch m disk").contains("gpu or host"),
        "{}",
        err("%prefetch m disk")
    );
    assert!(err("%array --pinned m = ones(4, f32)").contains("--managed"));
    assert!(err("%time --check graph g").contains("--check does not apply"));
    assert!(err("%time graph g extra").contains("unexpected"));
}

#[test]
fn a_replayed_graph_matches_the_cpu_reference_and_lists_its_steps() {
    let (mut s, x, y0) = session(11);
    record_step(&mut s);
    // Recording ran nothing.
    assert_close(&s.f64s("y"), &y0, "y after recording");
    assert!(s.f64s("z").iter().all(|v| *v == 0.0));
    s.ok("%graph launch step -n 3");
    let mut y = y0.clone();
    let mut z = vec![0.0; N];
    for _ in 0..3 {
        for i in 0..N {
            y[i] = (2.0f32 * x[i] as f32 + y[i] as f32) as f64;
            z[i] = y[i];
            y[i] = (z[i] as f32 + y[i] as f32) as f64;
        }
    }
    assert_close(&s.f64s("y"), &y, "y");
    assert_close(&s.f64s("z"), &z, "z");
    let list = s.ok_text("%graph");
    for want in [
        "step",
        "axpy[4, 256](2.0, x, y, 1000)",
        "%copy z = y",
        "axpy[4, 256](1.0, z, y, 1000)",
    ] {
        assert!(list.contains(want), "{want} in {list}");
    }
    let arrays = s.ok_text("%arrays");
    assert!(
        arrays
            .lines()
            .any(|l| l.starts_with('y') && l.contains("graph step")),
        "{arrays}"
    );
    // Scalars are fixed when recorded; names resolve at replay: after %swap the graph
    // updates the arrays now called x and y.
    s.ok("%swap x, y");
    let (x1, y1) = (s.f64s("x"), s.f64s("y"));
    s.ok("%graph launch step");
    let want: Vec<f64> = (0..N)
        .map(|i| {
            let t = (2.0f32 * x1[i] as f32 + y1[i] as f32) as f64;
            (t as f32 * 2.0) as f64
        })
        .collect();
    assert_close(&s.f64s("y"), &want, "y after %swap");
    s.ok("%graph drop step");
    assert!(s.ok_text("%graph").contains("no graphs"));
    s.ok("%free x"); // no graph uses it any more
}

#[test]
fn a_recording_refuses_what_it_cannot_record_and_errors_name_the_graph() {
    let (mut s, _, _) = session(12);
    let e = s.err("%graph launch nope");
    assert_eq!(e.ename, "ArgumentError");
    assert!(e.message.contains("no graph named `nope`"), "{}", e.message);
    assert!(s
        .err("%graph end")
        .message
        .contains("no graph is being recorded"));
    s.ok("%graph begin g");
    let e = s.err("%free x");
    assert_eq!(e.ename, "GraphError");
    assert!(
        e.message
            .contains("%free cannot run while graph `g` is being recorded"),
        "{}",
        e.message
    );
    for line in [
        "%array w = zeros(4, f32)",
        "%swap x, y",
        "%sync",
        "%reset",
        "%time axpy[4, 256](1.0, x, y, 1000)",
        "%graph launch g",
    ] {
        assert_eq!(s.err(line).ename, "GraphError", "{line}");
    }
    assert!(s
        .err("%graph begin h")
        .message
        .contains("still being recorded"));
    let e = s.err("%launch axpy[4, 256, stream=s1](1.0, x, y, 1000)");
    assert!(e.message.contains("one stream"), "{}", e.message);
    let e = s.err("%launch --check axpy[4, 256](1.0, x, y, 1000)");
    assert!(e.message.contains("--check"), "{}", e.message);
    // A bad launch is refused when recorded, not at replay.
    let e = s.err("%launch axpy[4, 256](1.0, x, nothere, 1000)");
    assert!(e.message.contains("nothere"), "{}", e.message);
    let e = s.err("%copy z = nothere");
    assert!(e.message.contains("nothere"), "{}", e.message);
    // Reading still works while recording.
    s.ok("%print x --head 2");
    s.ok("%arrays");
    let e = s.err("%graph end");
    assert!(e.message.contains("recorded nothing"), "{}", e.message);
    // The empty recording is gone.
    assert!(s.run("%array w = zeros(4, f32)").is_ok());
    s.ok("%graph begin g");
    s.ok("%launch axpy[4, 256](1.0, x, y, 1000)");
    s.ok("%graph end");
    let e = s.err("%free y");
    assert!(
        e.message.contains("array `y` is used by graph `g`"),
        "{}",
        e.message
    );
    let e = s.err("%graph launch g -n 0");
    assert!(e.message.contains("-n must be between 1"), "{}", e.message);
    // A graph whose array was replaced by one of another dtype fails at replay, naming the step.
    s.ok("%array x = zeros(1000, i32)");
    let e = s.err("%graph launch g");
    assert!(e.message.contains("graph `g`, step 1"), "{}", e.message);
    // %graph drop of a graph being recorded abandons it.
    s.ok("%graph begin r");
    s.ok("%graph drop r");
    assert!(s.m.dev.recording_graph().is_none());
    assert!(s
        .err("%graph drop r")
        .message
        .contains("no graph named `r`"));
}

#[test]
fn time_graph_reports_the_replay_and_on_ptxsim_estimates_graph_and_one_by_one() {
    let (mut s, _, _) = session(13);
    s.ok("%graph begin many");
    for _ in 0..20 {
        s.ok("%launch axpy[4, 256](0.5, x, y, 1000)");
    }
    s.ok("%graph end");
    let y0 = s.f64s("y");
    s.ok("%time -n 2 --warmup 1 graph many");
    let d = s.display();
    let t = text(&d);
    assert!(t.contains("graph many (20 steps)"), "{t}");
    // Three replays ran: y = y0 + 60 · 0.5 x.
    let x = s.f64s("x");
    let y = s.f64s("y");
    for i in 0..N {
        let mut w = y0[i] as f32;
        for _ in 0..60 {
            w += 0.5f32 * x[i] as f32;
        }
        assert!(
            (y[i] - w as f64).abs() <= 1e-4 * (w.abs() as f64).max(1.0),
            "{i}"
        );
    }
    if s.m.dev.backend_name() == "ptxsim" {
        assert!(t.contains("estimated on H200"), "{t}");
        assert!(t.contains("launched one by one"), "{t}");
        // 20 tiny steps: the graph must come out cheaper than launching them one by one.
        let json = d.get("application/json").cloned().unwrap_or_default();
        let est = json["metrics"]["gpu__time_duration.sum"]
            .as_f64()
            .unwrap_or(f64::NAN)
            / 1e6;
        let one_by_one = 20.0 * ptxsim::model::HOST_LAUNCH_NS / 1e6;
        assert!(est > 0.0 && est < one_by_one, "{est} vs {one_by_one}");
    } else {
        let printed = s.printed();
        assert!(
            printed.contains("launched one by one (no graph)"),
            "{printed}"
        );
    }
    // Kept for %timings.
    assert!(s
        .m
        .timings
        .iter()
        .any(|t| t.label == "graph many (20 steps)"));
    s.ok("%timings");
}

#[test]
fn managed_arrays_work_like_others_and_prefetch_checks_its_array() {
    let (mut s, x, _) = session(14);
    s.ok("%array --managed m = zeros(1000, f32)");
    let arrays = s.ok_text("%arrays");
    assert!(
        arrays
            .lines()
            .any(|l| l.starts_with('m') && l.contains("managed")),
        "{arrays}"
    );
    assert!(s.m.dev.array("m").is_some_and(|a| a.managed));
    s.ok("%prefetch m host");
    let note = s.printed();
    if s.m.dev.backend_name() == "ptxsim" {
        assert!(note.contains("nothing to migrate"), "{note}");
    }
    s.ok("%launch axpy[4, 256](3.0, x, m, 1000)");
    s.ok("%prefetch m gpu");
    let want: Vec<f64> = x.iter().map(|v| (3.0f32 * *v as f32) as f64).collect();
    assert_close(&s.f64s("m"), &want, "m");
    // copy() keeps --managed.
    s.ok("%array --managed m2 = copy(m)");
    assert!(s.m.dev.array("m2").is_some_and(|a| a.managed));
    assert_close(&s.f64s("m2"), &want, "m2");
    let e = s.err("%prefetch x");
    assert!(e.message.contains("not in managed memory"), "{}", e.message);
    let e = s.err("%prefetch nothere");
    assert!(e.message.contains("nothere"), "{}", e.message);
    s.ok("%free m");
}
