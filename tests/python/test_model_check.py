"""The model's estimates against times measured on real GPUs (issue 35), without a GPU.

scripts/model_check.py, run on a GPU (scripts/gpu-check.sh's run step), writes
model-check.json: every tutorial launch and every launch the notebooks compare, the model's
estimate and the CUDA-event time measured, and the orders the notebooks teach. Committed under
benches/results/<gpu>/, each such file is a regression test of the model: here every row
is estimated again with the current model on ptxsim (the GPU model the file names), and the
median error must stay <= 30% and every order the GPU measured must be kept. With no such file
committed yet that test is skipped, saying so.

The checking logic is proved on a synthetic file (measured = current estimates x 1.1 and x 0.9:
passes; with the measured order swapped: the violation is reported), and the script's
`--estimates-only` mode runs end to end on two small notebooks.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import model_check  # noqa: E402

COMMITTED = sorted((ROOT / "benches" / "results").glob("*/model-check.json"))
E2E_NOTEBOOKS = ["01-vector-add", "07-launch-configuration"]


@pytest.mark.parametrize("path", COMMITTED or [None], ids=lambda p: p.parent.name if p else "none")
def test_committed_gpu_measurements_hold(path):
    if path is None:
        pytest.skip(
            "no benches/results/*/model-check.json committed yet: run `bash scripts/gpu-check.sh run` "
            "on a GPU (it runs scripts/model_check.py) and commit its model-check.md and .json"
        )
    data = json.loads(path.read_text())
    assert data.get("measured"), f"{path}: not a measured file (made with --estimates-only?)"
    t0 = time.monotonic()
    problems = model_check.check_path(path)
    print(f"{path.relative_to(ROOT)}: {len(data['rows'])} rows re-estimated on {data['gpu']} "
          f"in {time.monotonic() - t0:.1f} s")
    assert not problems, f"{path.relative_to(ROOT)} on {data['gpu']}:\n" + "\n".join(problems)


@pytest.fixture(scope="module")
def estimates_only(tmp_path_factory):
    """scripts/model_check.py --estimates-only on two notebooks: (process, output folder, seconds)."""
    out = tmp_path_factory.mktemp("model-check")
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "model_check.py"), "--estimates-only",
         "--only", *E2E_NOTEBOOKS, "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    return proc, out, time.monotonic() - t0


def test_estimates_only_end_to_end(estimates_only):
    proc, out, secs = estimates_only
    print(f"model_check.py --estimates-only --only {' '.join(E2E_NOTEBOOKS)}: {secs:.1f} s")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("model: no measurement made (--estimates-only)"), proc.stdout
    assert "estimated on H200" in last, last
    data = json.loads((out / "model-check.json").read_text())
    assert data["measured"] is False and data["gpu"] == "H200" and data["backend"] == "ptxsim"
    keys = [r["key"] for r in data["rows"]]
    assert keys == ["01-vector-add/vadd", "07-launch-configuration/32x8",
                    "07-launch-configuration/1x128", "07-launch-configuration/8x8"], keys
    for r in data["rows"]:
        assert "error" not in r, r
        assert r["estimated_ns"] > 0 and r.get("measured_ns") is None and r["bound"], r
    # The notebook's three orders, judged on the estimates alone (test_profile checks their
    # direction); nothing measured, so nothing to agree with.
    assert len(data["orders"]) == 3
    assert all(o["estimated_holds"] is not None and o["agree"] is None for o in data["orders"])
    md = (out / "model-check.md").read_text()
    assert "| launch | estimated µs | measured µs | error % |" in md
    assert "07-launch-configuration/1x128" in md and md in proc.stdout
    csv_lines = (out / "model-check.csv").read_text().splitlines()
    assert csv_lines[0].startswith("notebook,label,launch,gpu,estimated_ns,measured_ns,error_pct")
    assert len(csv_lines) == 1 + len(keys)


def synthetic(data: dict, fast: float, slow: float) -> dict:
    """A measured file of 07's 32x8 and 1x128 rows: measured = estimate x fast and x slow."""
    rows = {r["label"]: r for r in data["rows"] if r["notebook"] == "07-launch-configuration"}
    picked = [dict(rows["32x8"]), dict(rows["1x128"])]
    picked[0]["measured_ns"] = picked[0]["estimated_ns"] * fast
    picked[1]["measured_ns"] = picked[1]["estimated_ns"] * slow
    return {
        "gpu": data["gpu"], "device": "synthetic", "backend": "cuda", "measured": True,
        "rows": picked,
        "orders": [{"notebook": "07-launch-configuration", "a": "32x8", "b": "1x128", "factor": 1.0}],
    }


def test_the_check_passes_a_close_file_and_reports_a_wrong_order(estimates_only, tmp_path):
    proc, out, _ = estimates_only
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((out / "model-check.json").read_text())
    est = {r["key"]: r["estimated_ns"] for r in data["rows"]}
    wide, tall = est["07-launch-configuration/32x8"], est["07-launch-configuration/1x128"]
    assert wide * 1.1 < tall * 0.9, "the synthetic file needs 32x8 well ahead of 1x128"

    # Measured 10% either side of today's estimates, in the same order: passes, re-estimated
    # from the file through the Jupyter kernel as the committed files are.
    good = synthetic(data, 1.1, 0.9)
    path = tmp_path / "model-check.json"
    path.write_text(json.dumps(good))
    assert model_check.check_path(path) == []
    r = model_check.evaluate(good["rows"], good["orders"], est)
    assert r["agree"] == 1 and r["compared"] == 1
    assert 9 < r["median_error_pct"] < 11.2 and r["worst_pct"] == pytest.approx(100 / 9, rel=1e-6)
    assert model_check.summary_line(r).startswith("model: median_error=10.")

    # The GPU measured 1x128 faster than 32x8: the estimates keep the other order.
    wrong = synthetic(data, 1.0, 1.0)
    a, b = wrong["rows"]
    a["measured_ns"], b["measured_ns"] = b["estimated_ns"], a["estimated_ns"]
    problems = model_check.check_file(wrong, est)
    assert any("07-launch-configuration: measured t[32x8] >= 1 * t[1x128]" in p for p in problems), problems
    r = model_check.evaluate(wrong["rows"], wrong["orders"], est)
    assert r["agree"] == 0 and r["compared"] == 1

    # An order taken from the file (measured_holds) wins over the rows' times.
    flagged = synthetic(data, 1.0, 1.0)
    flagged["orders"][0]["measured_holds"] = False
    assert any("measured t[32x8] >=" in p for p in model_check.check_file(flagged, est))

    # Right order, but the model off by 2x: the median error is reported.
    far = synthetic(data, 0.5, 0.5)
    problems = model_check.check_file(far, est)
    assert len(problems) == 1 and problems[0].startswith("median error 100.0% > 30%"), problems

    # A row the current model cannot estimate is a problem, not a pass.
    assert any(p.startswith("no estimate for") for p in model_check.check_file(good, {}))
