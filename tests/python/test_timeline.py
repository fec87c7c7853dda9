"""`%timeline` and `%event` through the real Jupyter kernel (issue 57): the chart and table
displays, the saved trace-event JSON checked by a validator of the Trace Event Format
(`trace_events.py`), the modelled schedule on ptxsim (four small launches on four streams in
about the time of one, a copy overlapping a launch, an event ordering two streams, the legacy
default stream serialising), `nb::timeline()` in a Rust cell, and the errors.

On a GPU the same cells run measured; the modelled figures are asserted only on ptxsim.
"""

from __future__ import annotations

import base64
import json

import pytest
from nbkernel import error, has_cuda_device, ok
from pngio import decode_png
from trace_events import complete_events, thread_names, validate

BUSY = """%%cuda
__global__ void busy(float* x, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    for (int k = 0; k < iters; ++k) {
        v = v * 0.999f + 0.001f;
    }
    x[i] = v;
}
"""


@pytest.fixture
def session(kc):
    ok(kc, "%backend sim")
    ok(kc, BUSY)
    ok(kc, "%gpu H200")
    ok(kc, "\n".join(f"%array t{c} = rand(2048, f32, seed={c})" for c in range(4)))
    ok(kc, "%array tbig = rand(1000000, f32, seed=9)")
    ok(kc, "%timeline off\n%timeline clear")
    yield kc
    ok(kc, "%timeline off\n%timeline clear")


def saved(kc, tmp_path) -> dict:
    path = tmp_path / "trace.json"
    ex = ok(kc, f"%timeline --save {path}")
    assert "Chrome trace-event JSON" in ex.stream(), ex.describe()
    obj = json.loads(path.read_text())
    assert validate(obj) == [], validate(obj)
    return obj


def test_the_modelled_timeline_of_four_streams_a_copy_and_an_event(session, tmp_path):
    kc = session
    ex = ok(kc, "%timeline on")
    assert "modelled on H200" in ex.stream()
    ok(kc, "\n".join(f"%launch busy[8, 256, 0, s{c}](t{c}, 2048, 3000)" for c in range(4)))
    ok(kc, "%sync")
    obj = saved(kc, tmp_path)
    names = thread_names(obj)
    ks = [e for e in complete_events(obj) if e["cat"] == "kernel"]
    assert [names[e["tid"]] for e in ks] == [f"stream s{c}" for c in range(4)]
    assert [e["args"]["stream"] for e in ks] == [f"s{c}" for c in range(4)]
    one = ks[0]["dur"]
    span = max(e["ts"] + e["dur"] for e in ks) - min(e["ts"] for e in ks)
    # Side by side: one launch plus the host's 2.5 µs per launch issued after the first.
    assert span == pytest.approx(one + 7.5, rel=1e-6), (one, span)
    assert obj["otherData"]["modelled_on"] == "H200"

    # The legacy default stream serialises everything around it.
    ok(kc, "%timeline clear")
    ok(kc, "%launch busy[8, 256, 0, s0](t0, 2048, 3000)\n%launch busy[8, 256](t1, 2048, 3000)")
    ok(kc, "%launch busy[8, 256, 0, s1](t2, 2048, 3000)")
    ks = [e for e in complete_events(saved(kc, tmp_path)) if e["cat"] == "kernel"]
    assert ks[1]["ts"] == pytest.approx(ks[0]["ts"] + ks[0]["dur"], rel=1e-6)
    assert ks[2]["ts"] == pytest.approx(ks[1]["ts"] + ks[1]["dur"], rel=1e-6)

    # An upload overlaps a launch on another stream; an event makes s3 wait for s2.
    ok(kc, "%timeline clear")
    ok(kc, "%upload tbig s0\n%launch busy[8, 256, 0, s1](t1, 2048, 3000)")
    ok(kc, "%launch busy[8, 256, 0, s2](t2, 2048, 3000)\n%event record e2 s2\n%event wait e2 s3")
    ok(kc, "%launch busy[8, 256, 0, s3](t3, 2048, 3000)")
    obj = saved(kc, tmp_path)
    names = thread_names(obj)
    ev = complete_events(obj)
    up = next(e for e in ev if e["cat"] == "copy")
    assert names[up["tid"]] == "copy engine H→D"
    # 4 MB at 80% of PCIe 5 x16 (63.0 GB/s), plus 2 µs.
    assert up["dur"] == pytest.approx(2.0 + 4e6 / (63.0153846 * 0.8) / 1e3, rel=1e-6)
    k1, k2, k3 = [e for e in ev if e["cat"] == "kernel"]
    assert k1["ts"] < up["ts"] + up["dur"], "the launch runs during the upload"
    assert k3["ts"] == pytest.approx(k2["ts"] + k2["dur"], rel=1e-6), "s3 waits for the event"
    instants = [e for e in obj["traceEvents"] if e.get("ph") == "i"]
    assert {e["cat"] for e in instants} == {"event", "wait"}


def test_the_chart_table_and_nb_timeline(session):
    kc = session
    ok(kc, "%timeline on")
    ok(kc, "%launch busy[8, 256, 0, a](t0, 2048, 500)\n%launch busy[8, 256, 0, b](t1, 2048, 500)")
    ok(kc, "%copy t2 = t3\n%sync")
    ex = ok(kc, "%timeline")
    shown = ex.of_type("display_data")
    pngs = [m for m in shown if "image/png" in m["content"]["data"]]
    assert len(pngs) == 1, ex.describe()
    img = decode_png(base64.b64decode(pngs[0]["content"]["data"]["image/png"]))
    assert img.shape[1] > 600 and img.shape[0] > 100, img.shape
    text = ex.text()
    assert "modelled on H200 (ptxsim)" in text and "device copy" in text, text
    assert "<table" in text
    ex = ok(
        kc,
        """{
    let t = nb::timeline()?;
    let k: Vec<&nb::TimelineEntry> = t.entries.iter().filter(|e| e.kind == "kernel").collect();
    println!("{} | {} | {} {} | {:.3}", t.source, k.len(), k[0].lane, k[1].stream,
             t.span_us(Some("kernel")) / k[0].dur_us);
}""",
        timeout=300,
    )
    out = ex.stream().strip()
    source, n, lanes, ratio = out.split(" | ")
    assert source == "modelled on H200 (ptxsim)" and n == "2"
    assert lanes == "stream a b"
    # Side by side: less than the two launches one after another.
    assert 1.0 < float(ratio) < 2.0, out


def test_bad_lines_name_the_problem(session):
    kc = session
    ex = error(kc, "%timeline start")
    assert "unknown %timeline command 'start'" in ex.text()
    ex = error(kc, "%event wait nothing s1")
    assert "no event named `nothing`" in ex.text()
    ex = error(kc, "%timeline --save /nonexistent-dir/trace.json")
    assert "cannot write /nonexistent-dir/trace.json" in ex.text()
    # The Jupyter kernel is still there.
    ok(kc, "%timeline off")


@pytest.mark.skipif(not has_cuda_device(), reason="no CUDA GPU here: the measured timeline needs one")
def test_the_measured_timeline_on_a_gpu(kc, tmp_path):
    ok(kc, "%backend gpu")
    try:
        ok(kc, BUSY)
        ok(kc, "\n".join(f"%array g{c} = rand(2048, f32, seed={c})" for c in range(4)))
        ok(kc, "%timeline clear\n%timeline on")
        ok(kc, "\n".join(f"%launch busy[8, 256](g{c}, 2048, 200000)" for c in range(4)) + "\n%sync")
        ok(kc, "\n".join(f"%launch busy[8, 256, 0, q{c}](g{c}, 2048, 200000)" for c in range(4)))
        ok(kc, "%sync")
        obj = saved(kc, tmp_path)
        assert obj["otherData"]["modelled_on"] is None
        assert obj["otherData"]["source"].startswith("measured on")
        ks = [e for e in complete_events(obj) if e["cat"] == "kernel"]
        assert len(ks) == 8

        def span(es):
            return max(e["ts"] + e["dur"] for e in es) - min(e["ts"] for e in es)

        serial, streamed = span(ks[:4]), span(ks[4:])
        # Measured with CUDA events: four streams side by side, the default stream in turn.
        assert streamed < 0.6 * serial, (serial, streamed)
    finally:
        ok(kc, "%timeline off\n%timeline clear\n%backend sim")
