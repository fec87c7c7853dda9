// <limits> for NVRTC (nbcuda shim): libcu++'s numeric_limits, also named std::numeric_limits.
#include <cuda/std/limits>
namespace std { using cuda::std::numeric_limits; }
