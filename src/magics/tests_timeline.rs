//! `%timeline` and `%event` through [`Magics`] on ptxsim: the modelled schedule of real
//! launches (their durations are the model's estimates of the counted launches), the chart,
//! the table and the trace-event JSON, and the errors.

use super::test_session::Session;
use serde_json::Value;

const BUSY: &str = r#"
__global__ void busy(float* x, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    for (int k = 0; k < iters; ++k) {
        v = v * 0.999f + 0.001f;
    }
    x[i] = v;
}
"#;

/// (name, kind, stream, lane, start µs, duration µs) of every work entry, in issue order.
type Entry = (String, String, String, String, f64, f64);

fn entries(s: &mut Session) -> Vec<Entry> {
    let j = json(s);
    let ev = j["traceEvents"].as_array().cloned().unwrap_or_default();
    let lane = |tid: &Value| {
        ev.iter()
            .find(|e| e["name"] == "thread_name" && &e["tid"] == tid)
            .and_then(|e| e["args"]["name"].as_str())
            .unwrap_or("")
            .to_string()
    };
    ev.iter()
        .filter(|e| e["ph"] == "X" || e["ph"] == "i")
        .map(|e| {
            (
                e["name"].as_str().unwrap_or("").to_string(),
                e["cat"].as_str().unwrap_or("").to_string(),
                e["args"]["stream"].as_str().unwrap_or("").to_string(),
                lane(&e["tid"]),
                e["ts"].as_f64().unwrap_or(-1.0),
                e["dur"].as_f64().unwrap_or(0.0),
            )
        })
        .collect()
}

fn json(s: &mut Session) -> Value {
    let b = s
        .run("%timeline --json")
        .unwrap_or_else(|e| panic!("{e}"))
        .expect("a result");
    b["application/json"].clone()
}

fn session() -> Session {
    let mut s = Session::new();
    s.cell("%%cuda", BUSY).unwrap_or_else(|e| panic!("{e}"));
    s.ok("%gpu H200");
    for c in 0..4 {
        s.ok(&format!("%array c{c} = rand(2048, f32, seed={c})"));
    }
    s.take();
    s
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1e-9)
}

#[test]
fn four_small_launches_on_four_streams_take_about_one() {
    let mut s = session();
    let before = s.f64s("c0");
    let t = s.ok_text("%timeline on");
    assert!(t.contains("modelled on H200"), "{t}");
    for c in 0..4 {
        s.ok(&format!("%launch busy[8, 256, 0, s{c}](c{c}, 2048, 2000)"));
    }
    s.ok("%sync");
    let e = entries(&mut s);
    assert_eq!(e.len(), 5, "{e:?}");
    let d = e[0].5;
    assert!(d > 4.0, "longer than its launch overhead: {d}");
    for (i, k) in e[..4].iter().enumerate() {
        assert_eq!((k.0.as_str(), k.1.as_str()), ("busy", "kernel"));
        assert_eq!(k.2, format!("s{i}"));
        assert_eq!(k.3, format!("stream s{i}"));
        // Issued 2.5 µs apart by the host, each as long as the first.
        assert!(close(k.4, 2.5 * i as f64, 1e-6), "{k:?}");
        assert!(close(k.5, d, 1e-6), "{k:?}");
    }
    // The host's %sync waits from its issue (10 µs) to the last end.
    assert_eq!((e[4].1.as_str(), e[4].3.as_str()), ("sync", "host"));
    assert!(close(e[4].4 + e[4].5, 7.5 + d, 1e-6), "{:?}", e[4]);
    // The values are what they would be without the timeline.
    let after = s.f64s("c0");
    for (b, a) in before.iter().zip(&after) {
        let mut v = *b as f32;
        for _ in 0..2000 {
            v = v.mul_add(0.999, 0.001); // NVRTC contracts to an FMA
        }
        assert!((v - *a as f32).abs() < 1e-5);
    }

    // The same launches on the default stream run one after another.
    s.ok("%timeline clear");
    for c in 0..4 {
        s.ok(&format!("%launch busy[8, 256](c{c}, 2048, 2000)"));
    }
    let e = entries(&mut s);
    assert_eq!(e.len(), 4);
    for (i, k) in e.iter().enumerate() {
        assert_eq!(k.3, "default stream");
        assert!(close(k.4, d * i as f64, 1e-6), "{k:?} (one launch {d} µs)");
    }
}

#[test]
fn copies_overlap_launches_and_events_order_streams() {
    let mut s = session();
    s.ok("%array big = rand(1000000, f32, seed=9)");
    s.ok("%timeline on");
    s.ok("%upload big s0");
    s.ok("%launch busy[8, 256, 0, s1](c1, 2048, 2000)");
    s.ok("%download big s0");
    let e = entries(&mut s);
    assert_eq!(e.len(), 3, "{e:?}");
    let (up, k, down) = (&e[0], &e[1], &e[2]);
    assert_eq!((up.1.as_str(), up.3.as_str()), ("copy", "copy engine H→D"));
    assert_eq!(down.3, "copy engine D→H");
    // 4 MB over PCIe 5 x16 (63.0 GB/s) at 80%, plus 2 µs: about 81 µs, overlapping the launch.
    let want = 2.0 + 4e6 / (63.015_384_6 * 0.8) / 1e3;
    assert!(close(up.5, want, 1e-6), "{up:?} want {want}");
    assert!(
        k.4 < up.4 + up.5,
        "the launch starts during the upload: {e:?}"
    );
    // The download waits for the upload (same stream), not for the launch.
    assert!(close(down.4, up.4 + up.5, 1e-6), "{e:?}");

    // An event makes s3 wait for s2's launch.
    s.ok("%timeline clear");
    s.ok("%launch busy[8, 256, 0, s2](c2, 2048, 2000)");
    let t = s.ok_text("%event record done s2");
    assert!(t.contains("event `done` recorded on stream s2"), "{t}");
    s.ok("%event wait done s3");
    s.ok("%launch busy[8, 256, 0, s3](c3, 2048, 2000)");
    let e = entries(&mut s);
    assert_eq!(
        e.iter().map(|x| x.1.as_str()).collect::<Vec<_>>(),
        ["kernel", "event", "wait", "kernel"]
    );
    let first_end = e[0].4 + e[0].5;
    assert!(close(e[3].4, first_end, 1e-6), "{e:?}");
    // Without the wait it would have started when issued (3.5 µs), before s2's launch ended.
    assert!(first_end > 4.5, "{e:?}");
}

#[test]
fn the_chart_table_and_saved_json_show_what_was_recorded() {
    let mut s = session();
    let t = s.ok_text("%timeline");
    assert!(t.contains("%timeline on starts recording"), "{t}");
    s.ok("%timeline on");
    s.ok("%launch busy[8, 256, 0, a](c0, 2048, 200)");
    s.ok("%launch busy[8, 256, 0, b](c1, 2048, 200)");
    s.ok("%copy c2 = c3");
    s.ok("%sync");
    s.take();
    s.ok("%timeline");
    let out = s.take();
    let pngs = out
        .iter()
        .filter(|o| {
            matches!(o, protocol::output::CellOutput::Display { data, .. }
                if data.contains_key("image/png"))
        })
        .count();
    assert_eq!(pngs, 1, "one chart: {out:?}");
    let text: String = out
        .iter()
        .filter_map(|o| match o {
            protocol::output::CellOutput::Display { data, .. } => data
                .get("text/plain")
                .and_then(Value::as_str)
                .map(String::from),
            _ => None,
        })
        .collect();
    assert!(text.contains("modelled on H200 (ptxsim)"), "{text}");
    assert!(text.contains("device copy"), "{text}");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("trace.json");
    let t = s.ok_text(&format!("%timeline --save {}", path.display()));
    assert!(t.contains("saved 4 timeline entries"), "{t}");
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("saved")).expect("JSON");
    let ev = j["traceEvents"].as_array().expect("traceEvents");
    assert!(ev.iter().any(|e| e["name"] == "busy" && e["ph"] == "X"));
    assert_eq!(j["otherData"]["modelled_on"], "H200");
    // Off keeps what was recorded and records nothing more.
    s.ok("%timeline off");
    s.ok("%launch busy[8, 256](c0, 2048, 10)");
    assert_eq!(entries(&mut s).len(), 4);
    s.ok("%timeline clear");
    assert!(entries(&mut s).is_empty());
}

#[test]
fn bad_timeline_and_event_lines_are_named() {
    let mut s = session();
    let e = s.err("%timeline start");
    assert_eq!(e.ename, "SyntaxError");
    assert!(
        e.message.contains("unknown %timeline command 'start'"),
        "{e}"
    );
    let e = s.err("%timeline --svg");
    assert!(e.message.contains("--save"), "{e}");
    let e = s.err("%timeline --save");
    assert!(e.message.contains("PATH.json"), "{e}");
    let e = s.err("%event wait nothing s1");
    assert_eq!(e.ename, "ArgumentError");
    assert!(e.message.contains("no event named `nothing`"), "{e}");
    let e = s.err("%event wait");
    assert!(e.message.contains("event name"), "{e}");
    let e = s.err("%event fire x");
    assert!(
        e.message.contains("record or wait") || e.message.contains("'fire'"),
        "{e}"
    );
    s.ok("%event record e1");
    let e = s.err("%event wait e1");
    assert!(e.message.contains("stream that waits"), "{e}");
    let e = s.err("%timeline --save /nonexistent-dir/t.json");
    assert_eq!(e.ename, "IOError");
}
