//! Compile-path tests with the real NVRTC (skipped, with a message, when NVRTC is not found).

use super::*;

/// True when NVRTC can be loaded; otherwise reports the test as skipped (`testkit::skip`), and
/// the test returns.
pub(crate) fn nvrtc_available() -> bool {
    match library::load_nvrtc() {
        Ok(_) => true,
        Err(e) => {
            testkit::skip(format!("NVRTC not found: {e}"));
            false
        }
    }
}

pub(crate) fn temp_cache(tag: &str) -> PathBuf {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    std::env::temp_dir().join(format!("nbcuda-{tag}-{}-{n}", std::process::id()))
}

const SRC: &str = r#"__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
template <typename T>
__global__ void scale(T* x, T a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
"#;

fn input<'a>(src: &'a str, opts: &'a CudaOptions, exprs: &[&str]) -> CompileInput<'a> {
    CompileInput {
        source: src,
        options: opts,
        first_line: 2,
        name_expressions: exprs.iter().map(|s| s.to_string()).collect(),
        target: Target::sim(opts),
    }
}

#[test]
fn compile_name_expressions_for_templates() {
    if !nvrtc_available() {
        return;
    }
    let opts = CudaOptions::default();
    let c = Compiler::new(None);
    let out = c.compile(&input(
        SRC,
        &opts,
        &["&add", "&scale<float>", "&scale<double>"],
    ));
    let out = match out {
        Ok(o) => o,
        Err(e) => panic!("{e}"),
    };
    assert!(!out.cache_hit);
    let lowered: std::collections::HashMap<_, _> = out.lowered.iter().cloned().collect();
    assert_eq!(
        lowered.get("&add").map(String::as_str),
        Some("_Z3addPKfS0_Pfi")
    );
    let f = lowered.get("&scale<float>").cloned().unwrap_or_default();
    let d = lowered.get("&scale<double>").cloned().unwrap_or_default();
    assert!(f.starts_with("_Z5scaleIfE"), "{f}");
    let sizes = |n: &str| -> Vec<usize> {
        ptx::entry_params(&out.ptx, n)
            .unwrap_or_default()
            .iter()
            .map(|p| p.size)
            .collect()
    };
    assert_eq!(sizes(&f), [8, 4, 4]);
    assert_eq!(sizes(&d), [8, 8, 4]);
    assert!(out.ptx.contains(".target sm_80"));
    // -lineinfo: .loc lines are the cell source's own lines (the prelude is hidden by #line).
    assert!(out.ptx.contains(".loc\t1 3 "), "{}", out.ptx);
}

#[test]
fn compile_error_maps_to_cell_line_with_caret() {
    if !nvrtc_available() {
        return;
    }
    let src = "__global__ void k(float* x, int n) {\n    int i = threadIdx.x;\n    if (i < n) x[i] = undefined_thing * 2.0f;\n}\n";
    let opts = CudaOptions::default();
    let err = match Compiler::new(None).compile(&CompileInput {
        first_line: 5,
        ..input(src, &opts, &["&k"])
    }) {
        Ok(_) => panic!("expected a CompileError"),
        Err(e) => e,
    };
    assert_eq!(err.ename, "CompileError");
    let lines: Vec<&str> = err.message.lines().collect();
    assert!(
        lines[0].starts_with("cell line 7: error: identifier \"undefined_thing\" is undefined"),
        "{}",
        err.message
    );
    // The two lines above, then the line NVRTC names, then the caret.
    assert_eq!(lines[1], "5 | __global__ void k(float* x, int n) {");
    assert_eq!(lines[2], "6 |     int i = threadIdx.x;");
    assert_eq!(
        lines[3],
        "7 |     if (i < n) x[i] = undefined_thing * 2.0f;"
    );
    let caret = lines[4].find('^').unwrap_or(0);
    assert!(
        lines[3][caret..].starts_with("undefined_thing"),
        "{}",
        err.message
    );
}

#[test]
fn compile_options_and_fixed_width_types() {
    if !nvrtc_available() {
        return;
    }
    let src = "#include <cuda/std/cstdint>\n#include <cstdio>\n#include <cmath>\n#include <cstdint>\n__global__ void k(int32_t* x, uint64_t n) { if (threadIdx.x < n) x[threadIdx.x] = (std::int32_t)VALUE; x[n] = (int)sqrtf((float)n); printf(\"%d\\n\", (int)n); }\n#if 0\n__global__ void hidden(float* y) {}\n#endif\n";
    let opts = CudaOptions {
        defines: vec![("VALUE".into(), Some("42".into()))],
        fast_math: true,
        ..CudaOptions::default()
    };
    let out = Compiler::new(None).compile(&input(src, &opts, &["&k", "&hidden"]));
    let out = match out {
        Ok(o) => o,
        Err(e) => panic!("{e}"),
    };
    assert!(out.ptx.contains("42"), "the -D value reaches the code");
    assert_eq!(out.lowered.len(), 1);
    assert_eq!(
        out.dropped.len(),
        1,
        "the kernel inside #if 0 is dropped, not an error"
    );
    assert_eq!(out.dropped[0].0, "&hidden");
    let bad = CudaOptions {
        std: Some("c++99".into()),
        ..CudaOptions::default()
    };
    assert!(Compiler::new(None)
        .compile(&input(src, &bad, &["&k"]))
        .is_err());
}

#[test]
fn compile_cache_hit_is_fast_and_survives_a_new_compiler() {
    if !nvrtc_available() {
        return;
    }
    let dir = temp_cache("compile-cache");
    let opts = CudaOptions::default();
    let inp = input(SRC, &opts, &["&add", "&scale<float>"]);
    let miss = match Compiler::new(Some(dir.clone())).compile(&inp) {
        Ok(o) => o,
        Err(e) => panic!("{e}"),
    };
    assert!(!miss.cache_hit);
    // A new compiler on the same folder stands for a restarted Jupyter kernel.
    let fresh = Compiler::new(Some(dir.clone()));
    let mut times = Vec::new();
    for _ in 0..21 {
        let t = Instant::now();
        let hit = fresh.compile(&inp).map_err(|e| e.to_string());
        times.push(t.elapsed().as_secs_f64() * 1e3);
        let hit = hit.unwrap_or_else(|e| panic!("{e}"));
        assert!(hit.cache_hit);
        assert_eq!(hit.ptx, miss.ptx);
        assert_eq!(hit.lowered, miss.lowered);
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    eprintln!(
        "compile cache: miss {:.2} ms, hit median {:.3} ms (max {:.3} ms)",
        miss.compile_ms,
        median,
        times[times.len() - 1]
    );
    // Liveness, 20x the 2 ms a hit takes on an idle machine (benches/responsiveness.py measures
    // it through the Jupyter kernel): a hit that recompiled would take NVRTC's tens of ms.
    assert!(median < 40.0, "cache hit took {median:.3} ms");
    // A different option is a different entry.
    let fast = CudaOptions {
        fast_math: true,
        ..CudaOptions::default()
    };
    let other = fresh.compile(&input(SRC, &fast, &["&add", "&scale<float>"]));
    assert!(other.is_ok_and(|o| !o.cache_hit));
    // A corrupt entry is ignored and rewritten.
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let _ = std::fs::write(entry.path(), b"{ not json");
    }
    let again = fresh.compile(&inp);
    assert!(again
        .as_ref()
        .is_ok_and(|o| !o.cache_hit && o.ptx == miss.ptx));
    assert!(fresh.compile(&inp).is_ok_and(|o| o.cache_hit));
    let _ = std::fs::remove_dir_all(dir);
}
