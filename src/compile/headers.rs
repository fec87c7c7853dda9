//! The host headers that CUDA code habitually includes, for NVRTC, which cannot open the host's
//! C and C++ library headers: small shims of ours (`shims/*.h`), handed to NVRTC as in-memory
//! headers (found before the include folders), and the prelude compiled before every cell.
//!
//! The choice, header by header (docs/headers.md gives the reasons):
//! - libcu++ (the CCCL wheel's `cuda/std/...`) where it has the header's device part:
//!   `<climits>`, `<cstdint>`'s limit macros, `<limits>`, `<type_traits>`, `<utility>`, and
//!   `<algorithm>`'s `min`/`max`/`clamp`/`swap`; their names are also put in `std`;
//! - our own text where NVRTC already has the functions in the global namespace (`<cmath>`,
//!   `<cstring>`, `<cstdlib>`: `std::` names them, plus `M_PI`, `INFINITY`, `NAN`), where libcu++
//!   has nothing under NVRTC (`<cfloat>`), and for `<cassert>` (NVRTC's own `assert`, following
//!   `NDEBUG` at each inclusion as the C library's does);
//! - the prelude: the fixed-width integer typedefs of libcu++'s NVRTC `<cuda/std/cstdint>` (so
//!   `int32_t` works without an include) and glibc's `uint`, `ushort`, `ulong` (which nvcc sees
//!   through the host's headers).
//!
//! This module only holds texts; it must not compile or know about cells.

/// Compiled before every cell, then `#line 1` so line numbers are the cell's.
pub const PRELUDE: &str = "typedef signed char int8_t; typedef unsigned char uint8_t; \
typedef signed short int16_t; typedef unsigned short uint16_t; typedef signed int int32_t; \
typedef unsigned int uint32_t; typedef signed long long int64_t; \
typedef unsigned long long uint64_t; typedef int64_t intptr_t; typedef uint64_t uintptr_t; \
typedef unsigned int uint; typedef unsigned short ushort; typedef unsigned long ulong;\n";

const CASSERT: &str = include_str!("shims/cassert.h");
const CFLOAT: &str = include_str!("shims/cfloat.h");
const CLIMITS: &str = include_str!("shims/climits.h");
const CMATH: &str = include_str!("shims/cmath.h");
const CSTDINT: &str = include_str!("shims/cstdint.h");
const CSTDIO: &str = include_str!("shims/cstdio.h");
const CSTDLIB: &str = include_str!("shims/cstdlib.h");
const CSTRING: &str = include_str!("shims/cstring.h");

/// `(include name, text)` of every shim: `#include <NAME>` finds these first.
pub const BUILTIN_HEADERS: &[(&str, &str)] = &[
    ("cassert", CASSERT),
    ("assert.h", CASSERT),
    ("cstdio", CSTDIO),
    ("stdio.h", CSTDIO),
    ("cstdint", CSTDINT),
    ("stdint.h", CSTDINT),
    ("climits", CLIMITS),
    ("limits.h", CLIMITS),
    ("cfloat", CFLOAT),
    ("float.h", CFLOAT),
    ("cmath", CMATH),
    ("math.h", CMATH),
    ("cstring", CSTRING),
    ("string.h", CSTRING),
    ("cstdlib", CSTDLIB),
    ("stdlib.h", CSTDLIB),
    (
        "cstddef",
        "namespace std { using ::size_t; using ::ptrdiff_t; }\n",
    ),
    ("stddef.h", ""),
    ("limits", include_str!("shims/limits.h")),
    ("algorithm", include_str!("shims/algorithm.h")),
    ("type_traits", include_str!("shims/type_traits.h")),
    ("utility", include_str!("shims/utility.h")),
];

/// Whether `file` (a PTX `.file` name or an NVRTC diagnostic's file) is one of the shims.
pub fn is_shim(file: &str) -> bool {
    BUILTIN_HEADERS.iter().any(|(name, _)| *name == file)
}

/// A text that changes whenever the prelude or a shim does (part of the compile cache's key).
pub fn fingerprint() -> String {
    let mut s = String::from(PRELUDE);
    for (name, text) in BUILTIN_HEADERS {
        s.push_str(name);
        s.push('\0');
        s.push_str(text);
        s.push('\0');
    }
    s
}
