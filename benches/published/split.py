#!/usr/bin/env python3
"""Recomputes the fit/holdout split of points.csv from the ids alone and checks the stored column.

Stage 1: holdout when the last hex digit of sha256(id) is < 5 (5/16 of points).
Stage 2: for each GPU model, then each kernel family, with >= 2 points: if a side is empty, move the
point of the other side with the smallest sha256(id) (as an integer) to it.
Run: python3 benches/published/split.py   (exit status 1 when the stored split differs)
"""
import csv, hashlib, os, sys

FAMILIES = ["babelstream", "stream", "memcpy", "transpose", "histogram", "reduction", "sgemm"]

def family(kind):
    return next((f for f in FAMILIES if kind.startswith(f)), kind)

def h(pid):
    return int(hashlib.sha256(pid.encode()).hexdigest(), 16)

def split(points):
    out = {p["id"]: ("holdout" if h(p["id"]) % 16 < 5 else "fit") for p in points}
    for key in (lambda p: p["gpu_model"], lambda p: family(p["kernel_kind"])):
        groups = {}
        for p in points:
            groups.setdefault(key(p), []).append(p)
        for _, ps in sorted(groups.items()):
            if len(ps) < 2:
                continue
            for side, other in (("holdout", "fit"), ("fit", "holdout")):
                if not any(out[p["id"]] == side for p in ps):
                    q = min((p for p in ps if out[p["id"]] == other), key=lambda p: h(p["id"]))
                    out[q["id"]] = side
    return out

if __name__ == "__main__":
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "points.csv")
    pts = list(csv.DictReader(open(path)))
    want = split(pts)
    bad = [p["id"] for p in pts if p["split"] != want[p["id"]]]
    print(f"{len(pts)} points, {sum(v == 'holdout' for v in want.values())} holdout; mismatches: {bad or 'none'}")
    sys.exit(1 if bad else 0)
