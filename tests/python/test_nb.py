"""Rust cells drive the Jupyter kernel's device arrays through the `nb` crate (issue 6): put,
get, exec, free, list, ndarray conversions, every error path, survival of arrays across a panic,
an abort of evcxr's child and an interrupt, and a 100 MB round trip. Each run uses fresh random
data, checked against a CPU computation done in the same Rust cell or in Python."""

from __future__ import annotations

import os
import random
import subprocess
import time

import pytest
from jupyter_client.kernelspec import KernelSpecManager

from nbkernel import (
    CELL_TIMEOUT,
    FIRST_CELL_TIMEOUT,
    KERNEL_NAME,
    error,
    execute,
    ok,
    start_kernel,
    stop_kernel,
)

ADD_SCALE = r"""%%cuda
__global__ void axpy(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void transpose_add(const double* m, double* out, int h, int w) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < h && c < w) out[c * h + r] = m[r * w + c] + 1.0;
}
"""


@pytest.fixture(scope="module")
def nbk(kernel):
    km, kc = kernel
    ok(kc, ADD_SCALE)
    return km, kc


def test_vec_put_launch_get_matches_cpu(nbk):
    _, kc = nbk
    seed = random.randrange(1 << 30)
    n = random.randrange(1000, 5000)
    ok(kc, f"""
let (xs, ys) = {{
    let mut s: u64 = {seed};
    let mut next = move || {{ s ^= s << 13; s ^= s >> 7; s ^= s << 17; (s % 10_000) as f32 / 100.0 }};
    let xs: Vec<f32> = (0..{n}).map(|_| next()).collect();
    let ys: Vec<f32> = (0..{n}).map(|_| next()).collect();
    (xs, ys)
}};
nb::put("x", &xs).unwrap();
nb::put("y", &ys).unwrap();
""")
    ok(kc, "%launch axpy[auto](x, y, 2.5, len(x))")
    ex = ok(kc, """
let got: nb::Array<f32> = nb::get("y").unwrap();
assert_eq!(got.shape, vec![xs.len()]);
for i in 0..xs.len() {
    let want = 2.5f32.mul_add(xs[i], ys[i]);
    let plain = 2.5f32 * xs[i] + ys[i];
    assert!(got.data[i] == want || got.data[i] == plain, "element {} got {} want {}", i, got.data[i], plain);
}
println!("checked {} elements", got.len());
""")
    assert f"checked {n} elements" in ex.stream()


def test_ndarray_2d_round_trip_through_a_launch(nbk):
    _, kc = nbk
    h, w = random.randrange(5, 40), random.randrange(5, 40)
    ok(kc, f"""
use nb::ndarray::Array2;
let m = Array2::<f64>::from_shape_fn(({h}, {w}), |(r, c)| (r * 1000 + c) as f64 * 0.5);
nb::put_ndarray("m", &m).unwrap();
nb::put_shaped("mt", &vec![0.0f64; {h} * {w}], &[{w}, {h}]).unwrap();
""")
    ok(kc, f"%launch transpose_add[(ceil({w} / 8), ceil({h} / 8)), (8, 8)](m, mt, {h}, {w})")
    ex = ok(kc, """
let mt: nb::Array<f64> = nb::get("mt").unwrap();
let mt = mt.to_ndarray().into_dimensionality::<nb::ndarray::Ix2>().unwrap();
assert_eq!(mt, m.t().mapv(|v| v + 1.0));
println!("2-D ok {:?}", mt.shape());
""")
    assert f"2-D ok [{w}, {h}]" in ex.stream()


def test_errors_are_typed_and_named(nbk):
    _, kc = nbk
    ex = ok(kc, """
let e = nb::get::<f32>("no_such_array").unwrap_err();
println!("missing: {} | {}", e.ename, e.message);
nb::put("f", &[1.0f32, 2.0]).unwrap();
let e = nb::get::<f64>("f").unwrap_err();
println!("dtype: {} | {}", e.ename, e.message);
let e = nb::put_shaped("s", &[1u8, 2, 3], &[2, 2]).unwrap_err();
println!("shape: {} | {}", e.ename, e.message);
let e = nb::exec("%launch nope[1, 1]()").unwrap_err();
println!("launch: {} | {}", e.ename, e.message);
let e = nb::exec("let x = 1;").unwrap_err();
println!("notmagic: {} | {}", e.ename, e.message);
""")
    out = ex.stream()
    assert "missing: ArgumentError" in out and "no_such_array" in out
    assert "dtype: ArgumentError" in out and "f32" in out and "nb::get::<f32>" in out
    assert "shape: ArgumentError" in out and "[2, 2]" in out
    assert "launch: " in out and "nope" in out
    assert "notmagic: SyntaxError" in out
    # The failed put created nothing.
    listing = ok(kc, "%arrays").text()
    assert "\ns " not in listing


def test_exec_output_appears_in_the_cell_and_list_free_work(nbk):
    _, kc = nbk
    ex = ok(kc, """
nb::put("tmp1", &[1i32, 2, 3]).unwrap();
nb::exec("%print tmp1").unwrap();
let names: Vec<String> = nb::list().unwrap().into_iter().map(|a| a.name).collect();
assert!(names.contains(&"tmp1".to_string()));
nb::free("tmp1").unwrap();
assert!(nb::get::<i32>("tmp1").is_err());
println!("listed and freed");
println!("backend={}", nb::backend().unwrap());
""")
    assert "listed and freed" in ex.stream()
    # nb::backend() names where the arrays live, as %device does.
    want = "cuda" if "backend: cuda" in ok(kc, "%device").text() else "ptxsim"
    assert f"backend={want}" in ex.stream(), ex.describe()
    assert "1" in ex.text() and "3" in ex.text()


def _survives(kc, name: str, values: list[int]) -> None:
    ex = ok(kc, f'let a: nb::Array<i64> = nb::get("{name}").unwrap(); println!("{{:?}}", a.data);',
            timeout=FIRST_CELL_TIMEOUT)
    assert str(values) in ex.stream()


def test_arrays_survive_panic_abort_and_interrupt(nbk):
    km, kc = nbk
    values = [random.randrange(-10**9, 10**9) for _ in range(5)]
    ok(kc, f'let keep: Vec<i64> = vec!{values!r}; nb::put("keep", &keep).unwrap();')
    ex = error(kc, 'panic!("on purpose");')
    assert "on purpose" in ex.text()
    _survives(kc, "keep", values)

    error(kc, "std::process::abort();", timeout=FIRST_CELL_TIMEOUT)
    _survives(kc, "keep", values)

    msg_id = kc.execute('println!("spinning"); loop { std::hint::spin_loop(); }')
    deadline = time.monotonic() + CELL_TIMEOUT
    while time.monotonic() < deadline:
        msg = kc.get_iopub_msg(timeout=CELL_TIMEOUT)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
            break
    km.interrupt_kernel()
    while True:
        reply = kc.get_shell_msg(timeout=10)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    assert reply["content"]["status"] != "ok"
    _survives(kc, "keep", values)
    # Magic lines never needed evcxr at all.
    assert str(values[0]) in ok(kc, "%print keep").text()


def test_100_mb_round_trip(nbk):
    _, kc = nbk
    n = 25 * 1024 * 1024  # 100 MiB of f32
    ex = ok(kc, f"""
let n = {n}usize;
let v: Vec<f32> = (0..n).map(|i| (i % 65_521) as f32 * 0.25).collect();
let t0 = std::time::Instant::now();
nb::put("big", &v).unwrap();
let t1 = std::time::Instant::now();
let back: nb::Array<f32> = nb::get("big").unwrap();
let t2 = std::time::Instant::now();
assert!(back.data == v, "100 MB round trip differs");
let mb = (n * 4) as f64 / 1e6;
println!("put {{:.0}} MB/s get {{:.0}} MB/s ({{:.0}} MB)", mb / (t1 - t0).as_secs_f64(), mb / (t2 - t1).as_secs_f64(), mb);
nb::free("big").unwrap();
""", timeout=FIRST_CELL_TIMEOUT)
    print(ex.stream())
    assert "put " in ex.stream()


def test_a_jupyter_kernel_takes_nb_from_the_build_cache_that_warm_up_filled(tmp_path):
    """`nbcuda warm-up` fills a fresh evcxr build cache (`:cache`) and exits (its build folder is
    deleted). A Jupyter kernel then loads `nb` from that cache, every entry a hit, `nb` itself
    included (its folder is named after its contents, so the rustc wrapper lets evcxr cache it).
    The cache stores each dependency's dep-info, which names its build script's OUT_DIR in the
    build folder that filled the cache: later cells must not rebuild serde & co. (the rustc
    wrapper rewrites those paths: rust::dep_info); cargo prints a `Compiling` line on the
    Jupyter kernel's stderr for each rebuild. Idle after a first cell without `nb`, the Jupyter
    kernel loads `nb` before a cell asks for it."""
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.pop("NBCUDA_CACHE_DIR", None)
    nb_cell = 'println!("nb list ok: {}", nb::list().is_ok());'

    exe = KernelSpecManager().get_kernel_spec(KERNEL_NAME).argv[0]
    warm = subprocess.run([exe, "warm-up"], env=env, capture_output=True, text=True, timeout=FIRST_CELL_TIMEOUT)
    assert warm.returncode == 0, warm.stdout + warm.stderr
    assert "evcxr's build cache" in warm.stdout, warm.stdout
    cache = tmp_path / "cache" / "evcxr"
    # The crates (not the probes of build scripts such as autocfg's, named at random per run).
    crates = lambda: sorted({p.parent for p in cache.glob("*/*.rlib")})  # noqa: E731
    entries = [d / "hits" for d in crates()]
    cached_nb = sorted(cache.glob("*/libnb-*.rlib"))
    assert len(cached_nb) == 1, f"nb is not in evcxr's build cache: {cached_nb}"
    assert len(entries) >= 10, entries  # nb, serde, serde_json, ndarray, half, …
    assert all(h.read_text().strip() == "0" for h in entries)

    log = tmp_path / "kernel.stderr"
    with open(log, "wb") as stderr:
        km, kc = start_kernel(env=env, stderr=stderr)
        try:
            a = random.randrange(1000)
            assert str(a + 1) in ok(kc, f'println!("{{}}", {a} + 1);', timeout=FIRST_CELL_TIMEOUT).stream()
            # Idle now: nb loads after a few seconds (cargo prints its `Compiling` lines, served
            # from the cache), then rust-analyzer warms again.
            deadline = time.monotonic() + CELL_TIMEOUT
            while "Compiling nb " not in log.read_text(errors="replace") and time.monotonic() < deadline:
                time.sleep(0.2)
            assert "Compiling nb " in log.read_text(errors="replace"), "nb did not load while idle"
            ex = ok(kc, nb_cell, timeout=FIRST_CELL_TIMEOUT)
            assert "nb list ok: true" in ex.stream(), ex.describe()
            # It was loaded already: the cell does not say `loading nb`.
            assert "loading nb" not in ex.stream("stderr"), ex.describe()
            loaded = log.stat().st_size
            for a in random.sample(range(1000), 2):
                assert str(a + 1) in ok(kc, f'println!("{{}}", {a} + 1);').stream()
        finally:
            stop_kernel(km, kc)
    missed = [h.parent.name for h in entries if int(h.read_text()) < 1]
    assert missed == [], f"the Jupyter kernel compiled what warm-up had cached: {missed}"
    assert [d / "hits" for d in crates()] == entries, "the Jupyter kernel cached crates anew"
    later = log.read_bytes()[loaded:].decode(errors="replace")
    rebuilt = [line.strip() for line in later.splitlines() if "Compiling" in line]
    assert rebuilt == [], f"later Rust cells rebuilt dependencies: {rebuilt}"
