// <cstdint> and <stdint.h> for NVRTC (nbcuda shim): libcu++'s <cuda/std/cstdint> (its NVRTC
// typedefs are nbcuda's prelude, and it defines INT32_MAX, SIZE_MAX, ...), plus the std:: names.
#include <cuda/std/cstdint>
namespace std {
using ::int8_t; using ::uint8_t; using ::int16_t; using ::uint16_t; using ::int32_t;
using ::uint32_t; using ::int64_t; using ::uint64_t; using ::intptr_t; using ::uintptr_t;
using ::size_t;
}
