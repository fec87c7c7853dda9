"""A validator of Chrome's trace-event JSON, after the Trace Event Format document
(https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU, the format
chrome://tracing and Perfetto's JSON importer read): the JSON object form, complete events
(`ph: X`) with `ts` and `dur` in microseconds, instant events (`ph: i`, scope `s` in g/p/t) and
metadata events (`ph: M`) naming processes and threads.

`validate(obj)` returns the list of problems (empty when the trace is well formed) and checks
what a viewer needs to draw the trace: every event on a named thread, and complete events on
one thread that nest or follow each other (a viewer stacks overlapping slices of one thread).
"""

from __future__ import annotations

from numbers import Real
from typing import Any

METADATA_NAMES = {
    "process_name",
    "process_labels",
    "process_sort_index",
    "thread_name",
    "thread_sort_index",
}


def validate(obj: Any) -> list[str]:
    problems: list[str] = []
    if not isinstance(obj, dict) or not isinstance(obj.get("traceEvents"), list):
        return ["the JSON object form needs a traceEvents array"]
    unit = obj.get("displayTimeUnit", "ms")
    if unit not in ("ms", "ns"):
        problems.append(f"displayTimeUnit must be 'ms' or 'ns', not {unit!r}")
    named_threads = set()
    slices: dict[tuple[Any, Any], list[tuple[float, float, str]]] = {}
    for i, e in enumerate(obj["traceEvents"]):
        where = f"event {i} ({e.get('name')!r})" if isinstance(e, dict) else f"event {i}"
        if not isinstance(e, dict):
            problems.append(f"{where}: not an object")
            continue
        ph = e.get("ph")
        if not isinstance(ph, str) or len(ph) != 1:
            problems.append(f"{where}: ph must be one character")
            continue
        for key in ("pid", "tid"):
            if not isinstance(e.get(key), int):
                problems.append(f"{where}: {key} must be an integer")
        if not isinstance(e.get("name"), str):
            problems.append(f"{where}: name must be a string")
        if "args" in e and not isinstance(e["args"], dict):
            problems.append(f"{where}: args must be an object")
        if ph == "M":
            if e.get("name") not in METADATA_NAMES:
                problems.append(f"{where}: unknown metadata event")
            if e.get("name") == "thread_name":
                if not isinstance(e.get("args", {}).get("name"), str):
                    problems.append(f"{where}: thread_name needs args.name")
                named_threads.add((e.get("pid"), e.get("tid")))
            continue
        ts = e.get("ts")
        if not isinstance(ts, Real) or isinstance(ts, bool) or ts < 0:
            problems.append(f"{where}: ts must be a non-negative number of microseconds")
            continue
        if ph == "X":
            dur = e.get("dur")
            if not isinstance(dur, Real) or isinstance(dur, bool) or dur < 0:
                problems.append(f"{where}: a complete event needs a non-negative dur")
                continue
            slices.setdefault((e["pid"], e["tid"]), []).append((ts, ts + dur, e["name"]))
        elif ph in ("i", "I"):
            if e.get("s", "t") not in ("g", "p", "t"):
                problems.append(f"{where}: instant scope s must be g, p or t")
        elif ph not in ("B", "E", "C", "b", "e", "n", "s", "t", "f", "P", "O", "N", "D"):
            problems.append(f"{where}: unknown phase {ph!r}")
    for (pid, tid), ss in slices.items():
        if (pid, tid) not in named_threads:
            problems.append(f"thread {pid}/{tid} has slices but no thread_name")
    return problems


def complete_events(obj: dict) -> list[dict]:
    return [e for e in obj["traceEvents"] if e.get("ph") == "X"]


def thread_names(obj: dict) -> dict[int, str]:
    return {
        e["tid"]: e["args"]["name"]
        for e in obj["traceEvents"]
        if e.get("ph") == "M" and e.get("name") == "thread_name"
    }
