// <cstdint> and <stdint.h> for NVRTC (nbcuda shim): libcu++'s <cuda/std/cstdint> (its NVRTC
// typedefs are nbcuda's prelude, and it defines INT32_MAX, UINT64_MAX, ...), the limits it leaves
// out under NVRTC (SIZE_MAX, INTPTR_MAX, PTRDIFF_MAX, INTMAX_MAX: 64-bit on the device), plus
// the std:: names.
#include <cuda/std/cstdint>
#ifndef SIZE_MAX
#define SIZE_MAX ULLONG_MAX
#endif
#ifndef INTPTR_MIN
#define INTPTR_MIN LLONG_MIN
#define INTPTR_MAX LLONG_MAX
#define UINTPTR_MAX ULLONG_MAX
#endif
#ifndef PTRDIFF_MIN
#define PTRDIFF_MIN LLONG_MIN
#define PTRDIFF_MAX LLONG_MAX
#endif
#ifndef INTMAX_MIN
#define INTMAX_MIN LLONG_MIN
#define INTMAX_MAX LLONG_MAX
#define UINTMAX_MAX ULLONG_MAX
#endif
namespace std {
using ::int8_t; using ::uint8_t; using ::int16_t; using ::uint16_t; using ::int32_t;
using ::uint32_t; using ::int64_t; using ::uint64_t; using ::intptr_t; using ::uintptr_t;
using ::size_t;
}
