"""The model's estimated GPU times beside times measured on a GPU (issue 35's validation harness).

    python scripts/model_check.py [--estimates-only] [--gpu MODEL] [--only NOTEBOOK ...]
                                  [--out DIR] [--min-ms 50] [--batches 10]

For every launch of tests/python/tutorial_kernels.py (each notebook's main launches,
`MAIN_KERNELS`, and the launches the notebooks compare, `COMPARED`) a fresh Jupyter kernel
(the installed `nbcuda` kernelspec; NBCUDA_KERNEL_NAME for another) runs the notebook's set-up
at its ptxsim sizes (`%backend sim`, so the model's counted run on ptxsim stays quick), then:

* the estimate: `%profile LAUNCH`'s `estimate.ns` (ptxsim's counts through `ptxsim::model`). On
  a GPU the arrays first move to it (`%backend gpu`) and the model is the session's `%gpu`, which
  there is the device's own table entry (H100, H200, …); on ptxsim it is `--gpu MODEL` or the
  session's `%gpu` (default H200).
* the measurement (a GPU, without --estimates-only): `%time` on the GPU backend, whose samples
  are CUDA-event times of single launches. A first `%time -n 10` gives t0; then BATCHES times
  `%time -n R --warmup 1 LAUNCH` with R = ceil(min_ms / BATCHES / t0) (at least 10), so that a
  row holds at least MIN_MS of GPU work; the row's time is the median of the batches' medians.

It prints and writes (to DIR, default /tmp/nbcuda-model-check) `model-check.md` (launch |
estimated µs | measured µs | error %, then the notebooks' orders), `model-check.json` and
`model-check.csv`, and prints as its last line

    model: median_error=E% worst=W% order_agreement=A of B

where the error of a row is (estimate - measured) / measured and an order (tutorial_kernels.ORDERS:
t[a] < factor * t[b]) agrees when the estimates and the measured times say the same. With
--estimates-only (or on a machine without a GPU) nothing is measured: the table has the estimates
alone and the last line says so (exit 0 with --estimates-only; 1 when a measurement was asked for
and there is no GPU). tests/python/test_model_check.py reads committed
benches/results/*/model-check.json files and checks the current model against them.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from tutorial_kernels import (  # noqa: E402
    COMPARED,
    MAIN_KERNELS,
    ORDERS,
    CellError,
    Session,
    checked_launches,
    setup_cells,
)

GOAL_MEDIAN_ERROR_PCT = 30.0


def set_up(s: Session, notebook: str, extra: list[str]) -> None:
    """The notebook's set-up at its ptxsim sizes, then the compared launches' own lines."""
    s.run("%backend sim")
    for cell in setup_cells(notebook):
        s.run(cell)
    for line in extra:
        s.run(line)


def estimate(s: Session, launch: str, gpu: str | None) -> dict:
    """The model's estimate of `launch` on `gpu` (None: the session's %gpu): {ns, gpu, bound}."""
    j = s.json_of(f"%profile --gpu {gpu} {launch}" if gpu else f"%profile {launch}")
    e = j.get("estimate")
    if not e or not e.get("ns"):
        raise CellError(f"%profile {launch}: no estimate (its resources are unknown?)")
    return {"ns": float(e["ns"]), "gpu": j["gpu"], "bound": e.get("bound", ""), "backend": j["backend"]}


def time_once(s: Session, launch: str, runs: int, warmup: int) -> float:
    """The median CUDA-event time (ns) of `runs` launches on the GPU, after `warmup`."""
    j = s.json_of(f"%time -n {runs} --warmup {warmup} {launch}")
    if j.get("backend") != "cuda" or j.get("estimated"):
        raise CellError(f"%time {launch}: not measured on a GPU ({j.get('backend')})")
    return float(j["metrics"]["gpu__time_duration.sum"])


def measure(s: Session, launch: str, min_ms: float, batches: int) -> dict:
    """At least `min_ms` of GPU work in `batches` %time batches; the median of their medians."""
    t0 = time_once(s, launch, 10, 2)
    per_batch_ns = min_ms * 1e6 / batches
    runs = min(100_000, max(10, math.ceil(per_batch_ns / max(t0, 1.0))))
    medians = [time_once(s, launch, runs, 1) for _ in range(batches)]
    return {
        "ns": statistics.median(medians),
        "runs_per_batch": runs,
        "batches": batches,
        "batch_medians_ns": medians,
        "gpu_work_ms": sum(medians) * runs / 1e6,
    }


def error_pct(estimated_ns: float, measured_ns: float) -> float:
    return 100.0 * (estimated_ns - measured_ns) / measured_ns


def holds(times: dict, a: str, b: str, factor: float) -> bool | None:
    """Whether t[a] < factor * t[b] (None when either is missing)."""
    if times.get(a) is None or times.get(b) is None:
        return None
    return times[a] < factor * times[b]


def key(notebook: str, label: str) -> str:
    return f"{notebook}/{label}"


def evaluate(rows: list[dict], orders: list[dict], estimates_ns: dict[str, float]) -> dict:
    """Compares `estimates_ns` (key -> ns) with the rows' measured times and orders.

    rows: {"key", "measured_ns"}; orders: {"notebook", "a", "b", "factor"} (and optionally
    "measured_holds", else it is computed from the rows). Returns {"errors": {key: %},
    "median_error_pct", "worst_pct", "worst_key", "orders": [... with estimated_holds,
    measured_holds, agree], "agree", "compared", "violations": [text], "missing": [key]}.
    """
    measured = {r["key"]: r.get("measured_ns") for r in rows}
    errors = {}
    missing = []
    for k, m in measured.items():
        e = estimates_ns.get(k)
        if e is None:
            missing.append(k)
        elif m:
            errors[k] = error_pct(e, m)
    out_orders = []
    violations = []
    for o in orders:
        a, b = key(o["notebook"], o["a"]), key(o["notebook"], o["b"])
        mh = o.get("measured_holds")
        if mh is None:
            mh = holds(measured, a, b, o["factor"])
        eh = holds(estimates_ns, a, b, o["factor"])
        agree = None if mh is None or eh is None else (mh == eh)
        out_orders.append({**o, "measured_holds": mh, "estimated_holds": eh, "agree": agree})
        if agree is False:
            rel = "<" if mh else ">="
            violations.append(
                f"{o['notebook']}: measured t[{o['a']}] {rel} {o['factor']:g} * t[{o['b']}], "
                f"the estimates say otherwise ({estimates_ns[a]:.0f} ns vs {estimates_ns[b]:.0f} ns)"
            )
    abs_err = sorted(abs(v) for v in errors.values())
    worst_key = max(errors, key=lambda k: abs(errors[k])) if errors else None
    compared = [o for o in out_orders if o["agree"] is not None]
    return {
        "errors": errors,
        "median_error_pct": statistics.median(abs_err) if abs_err else None,
        "worst_pct": abs(errors[worst_key]) if worst_key else None,
        "worst_key": worst_key,
        "orders": out_orders,
        "agree": sum(1 for o in compared if o["agree"]),
        "compared": len(compared),
        "violations": violations,
        "missing": missing,
    }


def check_file(data: dict, estimates_ns: dict[str, float], goal_pct: float = GOAL_MEDIAN_ERROR_PCT) -> list[str]:
    """What is wrong with the current estimates against a measured file: one line per problem
    (empty: the model passes). Checks the median error against `goal_pct` and that every order
    the GPU measured is kept by the estimates."""
    r = evaluate(data["rows"], data.get("orders", []), estimates_ns)
    problems = list(r["violations"])
    if r["missing"]:
        problems.append(f"no estimate for {', '.join(r['missing'])}")
    if r["median_error_pct"] is None:
        problems.append("no measured row")
    elif r["median_error_pct"] > goal_pct:
        problems.append(
            f"median error {r['median_error_pct']:.1f}% > {goal_pct:g}% "
            f"(worst {r['worst_key']}: {r['errors'][r['worst_key']]:+.1f}%)"
        )
    return problems


def estimate_rows(rows: list[dict], gpu: str) -> dict[str, float]:
    """The current model's estimates (ns) of a measured file's rows on `gpu`, on ptxsim: one
    fresh Jupyter kernel per notebook runs its set-up and the rows' own set-up lines, then
    `%profile --gpu GPU LAUNCH`. Rows whose estimate fails are left out (check_file reports them)."""
    out: dict[str, float] = {}
    by_notebook: dict[str, list[dict]] = {}
    for row in rows:
        by_notebook.setdefault(row["notebook"], []).append(row)
    for name, nb_rows in by_notebook.items():
        extra: list[str] = []
        for row in nb_rows:
            extra += [line for line in row.get("setup", []) if line not in extra]
        s = Session()
        try:
            set_up(s, name, extra)
            for row in nb_rows:
                try:
                    out[row["key"]] = estimate(s, row["launch"], gpu)["ns"]
                except CellError as e:
                    print(f"{row['key']}: {e}", file=sys.stderr)
        finally:
            s.close()
    return out


def check_path(path: Path) -> list[str]:
    """check_file on a committed model-check.json, re-estimated with the current model."""
    data = json.loads(Path(path).read_text())
    rows = [r for r in data["rows"] if r.get("measured_ns")]
    return check_file({**data, "rows": rows}, estimate_rows(rows, data["gpu"]))


def summary_line(r: dict) -> str:
    return (
        f"model: median_error={r['median_error_pct']:.1f}% worst={r['worst_pct']:.1f}% "
        f"order_agreement={r['agree']} of {r['compared']}"
    )


def fmt_us(ns) -> str:
    return "-" if ns is None else f"{ns / 1e3:.2f}"


def markdown(data: dict, r: dict) -> str:
    measured = data["measured"]
    lines = [
        f"# Model check: estimated on {data['gpu']} vs "
        + (f"measured on {data['device']}" if measured else "nothing measured (estimates only)"),
        "",
        f"{data['date']}, {data.get('nbcuda') or 'nbcuda'}, backend {data['backend']}; "
        + (f"each row: {data['batches']} batches of %time (CUDA events), median of their medians, "
           f"at least {data['min_ms']:g} ms of GPU work" if measured else "ptxsim's counts through ptxsim::model"),
        "",
        "| launch | estimated µs | measured µs | error % | bound (model) | runs per batch |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for row in data["rows"]:
        err = r["errors"].get(row["key"])
        lines.append(
            f"| {row['key']} `{row['launch']}` | {fmt_us(row.get('estimated_ns'))} | "
            f"{fmt_us(row.get('measured_ns'))} | {'-' if err is None else f'{err:+.1f}'} | "
            f"{row.get('bound', '')} | {row.get('runs_per_batch', '-')} |"
        )
    lines += ["", "| order the notebook teaches | estimates | measured | agree |", "|---|---|---|---|"]
    yn = {True: "yes", False: "no", None: "-"}
    for o in r["orders"]:
        f = "" if o["factor"] == 1 else f"{o['factor']:g} × "
        lines.append(
            f"| {o['notebook']}: t[{o['a']}] < {f}t[{o['b']}] | {yn[o['estimated_holds']]} | "
            f"{yn[o['measured_holds']]} | {yn[o['agree']]} |"
        )
    errs = [row["key"] for row in data["rows"] if row.get("error")]
    if errs:
        lines += ["", "Rows that failed:", ""] + [
            f"- {row['key']}: {row['error']}" for row in data["rows"] if row.get("error")
        ]
    return "\n".join(lines) + "\n"


def write_csv(path: Path, data: dict, r: dict) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["notebook", "label", "launch", "gpu", "estimated_ns", "measured_ns", "error_pct", "bound", "runs_per_batch"])
        for row in data["rows"]:
            err = r["errors"].get(row["key"])
            w.writerow([
                row["notebook"], row["label"], row["launch"], data["gpu"], row.get("estimated_ns"),
                row.get("measured_ns"), None if err is None else round(err, 2), row.get("bound", ""),
                row.get("runs_per_batch", ""),
            ])


def run_notebook(name: str, args, measuring: bool) -> tuple[list[dict], dict]:
    """Rows of one notebook, from its own fresh Jupyter kernel; and what the session said about
    the device ({"backend", "gpu", "device"})."""
    rows = []
    info: dict = {}
    launches = checked_launches(name)
    extra = [line for _, _, lines in launches for line in lines]
    s = Session()
    try:
        set_up(s, name, extra)
        if measuring:
            # The arrays move to the GPU; %profile's model is then the device's (%gpu's default).
            s.run("%backend gpu")
        for label, launch, _ in launches:
            row = {"notebook": name, "label": label, "key": key(name, label), "launch": launch, "setup": extra}
            t = time.monotonic()
            try:
                e = estimate(s, launch, args.gpu)
                row.update(estimated_ns=e["ns"], bound=e["bound"])
                info.setdefault("gpu", e["gpu"])
                info.setdefault("backend", e["backend"])
                if measuring:
                    m = measure(s, launch, args.min_ms, args.batches)
                    row.update(measured_ns=m["ns"], runs_per_batch=m["runs_per_batch"],
                               batch_medians_ns=m["batch_medians_ns"], gpu_work_ms=m["gpu_work_ms"])
            except CellError as err:
                row["error"] = str(err)
            row["seconds"] = round(time.monotonic() - t, 2)
            rows.append(row)
            print(f"  {row['key']:<40} est {fmt_us(row.get('estimated_ns')):>10} µs  "
                  f"measured {fmt_us(row.get('measured_ns')):>10} µs  ({row['seconds']} s)"
                  + (f"  ERROR {row['error']}" if "error" in row else ""), flush=True)
    except CellError as err:  # the set-up failed: every launch of the notebook is a failed row
        for label, launch, _ in launches:
            if not any(r["label"] == label for r in rows):
                rows.append({"notebook": name, "label": label, "key": key(name, label), "launch": launch,
                             "setup": extra, "error": f"set-up: {err}"})
        print(f"  {name}: set-up failed: {err}", flush=True)
    finally:
        s.close()
    return rows, info


def has_gpu_backend() -> tuple[bool, str]:
    """Whether the Jupyter kernel can switch to a GPU (`%backend gpu`), and what it said."""
    s = Session()
    try:
        s.run("%backend gpu")
        text = "".join(m["content"].get("text", "") for m in s.run("%device") if m["msg_type"] == "stream")
        return True, text
    except CellError as e:
        return False, str(e)
    finally:
        s.close()


def nbcuda_version() -> str:
    """`nbcuda --version` of the binary the kernelspec runs (NBCUDA_VERSION when set)."""
    if os.environ.get("NBCUDA_VERSION"):
        return os.environ["NBCUDA_VERSION"]
    try:
        import subprocess

        from jupyter_client.kernelspec import KernelSpecManager

        spec = KernelSpecManager().get_kernel_spec(os.environ.get("NBCUDA_KERNEL_NAME", "nbcuda"))
        out = subprocess.run([spec.argv[0], "--version"], capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""
    except Exception:
        return ""


def device_name() -> str:
    try:
        import subprocess

        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""
    except Exception:
        return ""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--estimates-only", action="store_true", help="measure nothing (no GPU needed)")
    p.add_argument("--gpu", help="the GPU model to estimate on (default: the session's %%gpu: "
                                 "the device on a GPU, H200 on ptxsim)")
    p.add_argument("--only", nargs="+", metavar="NOTEBOOK", help="these notebooks only (e.g. 07-launch-configuration)")
    p.add_argument("--out", default="/tmp/nbcuda-model-check", help="folder for model-check.{md,json,csv}")
    p.add_argument("--min-ms", type=float, default=50.0, help="GPU work per row, ms (default 50)")
    p.add_argument("--batches", type=int, default=10, help="%%time batches per row (default 10)")
    args = p.parse_args(argv)

    names = sorted(set(MAIN_KERNELS) | set(COMPARED))
    if args.only:
        unknown = [n for n in args.only if n not in names]
        if unknown:
            p.error(f"unknown notebooks {unknown}; known: {names}")
        names = [n for n in names if n in args.only]

    measuring = not args.estimates_only
    no_gpu_reason = ""
    if measuring:
        ok, said = has_gpu_backend()
        if not ok:
            measuring = False
            no_gpu_reason = " ".join(said.split("\n")[0].split())
            print(f"no GPU backend ({no_gpu_reason}): estimates only", flush=True)

    t0 = time.monotonic()
    rows: list[dict] = []
    info: dict = {}
    for name in names:
        print(f"{name}:", flush=True)
        r, i = run_notebook(name, args, measuring)
        rows += r
        for k, v in i.items():
            info.setdefault(k, v)
    orders = [{"notebook": nb, "a": a, "b": b, "factor": f} for nb, a, b, f in ORDERS if nb in names]
    estimates = {row["key"]: row["estimated_ns"] for row in rows if row.get("estimated_ns")}
    r = evaluate(rows, orders, estimates)
    data = {
        "gpu": info.get("gpu", args.gpu or "?"),
        "device": device_name() if measuring else "",
        "backend": "cuda" if measuring else info.get("backend", "ptxsim"),
        "measured": measuring,
        "date": _dt.date.today().isoformat(),
        "nbcuda": nbcuda_version(),
        "min_ms": args.min_ms,
        "batches": args.batches,
        "rows": rows,
        "orders": [{k: o[k] for k in ("notebook", "a", "b", "factor", "measured_holds", "estimated_holds", "agree")}
                   for o in r["orders"]],
        "summary": {
            "median_error_pct": r["median_error_pct"],
            "worst_pct": r["worst_pct"],
            "worst": r["worst_key"],
            "order_agreement": [r["agree"], r["compared"]],
            "seconds": round(time.monotonic() - t0, 1),
        },
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    md = markdown(data, r)
    (out / "model-check.md").write_text(md)
    (out / "model-check.json").write_text(json.dumps(data, indent=1) + "\n")
    write_csv(out / "model-check.csv", data, r)
    print()
    print(md)
    print(f"(written to {out}/model-check.md, .json and .csv; {data['summary']['seconds']} s)")
    failed = [row["key"] for row in rows if row.get("error")]
    if failed:
        print(f"{len(failed)} rows failed: {', '.join(failed)}")
    if measuring and r["median_error_pct"] is not None:
        print(summary_line(r))
        return 0
    taught = sum(1 for o in r["orders"] if o["estimated_holds"])
    known = sum(1 for o in r["orders"] if o["estimated_holds"] is not None)
    why = "--estimates-only" if args.estimates_only else f"no GPU: {no_gpu_reason}"
    print(f"model: no measurement made ({why}); {len(estimates)} of {len(rows)} launches estimated "
          f"on {data['gpu']}, the estimates keep {taught} of {known} orders the notebooks teach")
    return 0 if args.estimates_only else 1


if __name__ == "__main__":
    sys.exit(main())
