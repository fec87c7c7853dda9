//! The host-header shims and the prelude with the real NVRTC (skipped, with a message, when
//! NVRTC is not found): a cell that uses what device code takes from each header compiles, and
//! `assert` follows NDEBUG as nvcc's does.

use super::tests::nvrtc_available;
use super::*;

fn compile(src: &str, opts: &CudaOptions, exprs: &[&str]) -> Result<Compiled, GpuError> {
    Compiler::new(None).compile(&CompileInput {
        source: src,
        options: opts,
        first_line: 1,
        name_expressions: exprs.iter().map(|s| s.to_string()).collect(),
        target: Target::sim(opts),
    })
}

const EVERY_HEADER: &str = r#"#include <cassert>
#include <assert.h>
#include <cstdio>
#include <stdio.h>
#include <cstdint>
#include <stdint.h>
#include <climits>
#include <limits.h>
#include <cfloat>
#include <float.h>
#include <limits>
#include <cmath>
#include <math.h>
#include <cstring>
#include <string.h>
#include <cstdlib>
#include <stdlib.h>
#include <cstddef>
#include <algorithm>
#include <type_traits>
#include <utility>
using namespace std;
template <typename T> __device__ T twice(T x) {
    static_assert(std::is_arithmetic<T>::value && !std::is_same<T, bool>::value, "a number");
    return x + x;
}
__global__ void every(float* a, uint* u, ushort* s, ulong* l, std::int64_t* q, double* d) {
    uint i = threadIdx.x;
    assert(i < 1024);
    float x = a[i], y = a[i + 1];
    std::swap(x, y);
    swap(x, y);
    a[i] = std::min(x, y) + std::max(x, y) + min(x, y) + max(x, y) + std::clamp(x, 0.f, 1.f)
         + twice(x) + sqrt(x) + std::sqrt(x) + abs(x) + std::floor(x) + FLT_EPSILON
         + std::numeric_limits<float>::lowest() + (float)M_PI + (std::isnan(x) ? NAN : INFINITY);
    d[i] = std::exp(d[i]) + std::abs(d[i]) + DBL_MAX + std::pow(d[i], 2.0) + HUGE_VAL;
    u[i] = UINT_MAX + INT_MAX + UINT32_MAX + CHAR_BIT + std::abs(-1);
    s[i] = USHRT_MAX;
    l[i] = ULONG_MAX + SIZE_MAX + (ulong)std::min<std::size_t>(1, 2);
    q[i] = INT64_MIN + std::move(q[i]) + LLONG_MAX;
    auto p = std::make_pair(1, 2.f);
    a[0] += p.first + p.second;
    int tmp[4];
    memset(tmp, 0, sizeof tmp);
    std::memcpy(tmp, u, 8);
    u[0] = tmp[0];
    printf("%d\n", (int)i);
}
"#;

#[test]
fn host_headers_and_glibc_typedefs_compile_as_under_nvcc() {
    if !nvrtc_available() {
        return;
    }
    let out = compile(EVERY_HEADER, &CudaOptions::default(), &["&every"])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.lowered.len(), 1, "{:?}", out.dropped);
    assert!(out.ptx.contains("__assertfail"), "assert is compiled in");
    assert!(out.ptx.contains("vprintf"), "printf is compiled in");
    assert!(
        out.log.trim().is_empty(),
        "no warnings from the shims: {}",
        out.log
    );
}

#[test]
fn every_shim_compiles_alone_and_twice() {
    if !nvrtc_available() {
        return;
    }
    for (name, _) in BUILTIN_HEADERS {
        let src = format!(
            "#include <{name}>\n#include <{name}>\n__global__ void k(uint* x) {{ x[0] = 1; }}\n"
        );
        let out = compile(&src, &CudaOptions::default(), &["&k"]);
        assert!(out.is_ok(), "<{name}>: {:?}", out.err());
    }
}

#[test]
fn assert_follows_ndebug_at_each_inclusion_as_the_c_library_does() {
    if !nvrtc_available() {
        return;
    }
    let opts = CudaOptions::default();
    let body = "__global__ void k(int* x) { assert(x[0] == 1); }\n";
    let with = |head: &str| {
        compile(&format!("{head}{body}"), &opts, &["&k"])
            .unwrap_or_else(|e| panic!("{head}: {e}"))
            .ptx
            .contains("__assertfail")
    };
    assert!(with(""), "NVRTC's own assert without an include");
    assert!(with("#include <cassert>\n"));
    assert!(!with("#define NDEBUG\n#include <cassert>\n"));
    assert!(!with("#define NDEBUG\n#include <assert.h>\n"));
    assert!(with(
        "#define NDEBUG\n#include <cassert>\n#undef NDEBUG\n#include <cassert>\n"
    ));
    let mut ndebug = CudaOptions::default();
    ndebug.defines.push(("NDEBUG".into(), None));
    let out = compile(&format!("#include <cassert>\n{body}"), &ndebug, &["&k"])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !out.ptx.contains("__assertfail"),
        "-DNDEBUG as nvcc -DNDEBUG"
    );
}

#[test]
fn a_users_own_uint_typedef_is_still_accepted() {
    if !nvrtc_available() {
        return;
    }
    let src = "typedef unsigned int uint;\nusing ushort = unsigned short;\n__global__ void k(uint* x, ushort n) { x[0] = n; }\n";
    let out = compile(src, &CudaOptions::default(), &["&k"]);
    assert!(out.is_ok(), "{:?}", out.err());
}

#[test]
fn the_cache_key_changes_with_the_shims() {
    let f = headers::fingerprint();
    assert!(f.contains(PRELUDE) && f.contains("cassert") && f.contains("__assertfail"));
    assert!(headers::is_shim("algorithm") && !headers::is_shim("cell.cu"));
}
