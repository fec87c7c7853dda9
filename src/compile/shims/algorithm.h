// <algorithm> for NVRTC (nbcuda shim): what device code takes from it, std::min, std::max,
// std::clamp and std::swap, as libcu++ has them (callable from device code). Unqualified
// min(a, b) and max(a, b) are CUDA's own device functions, as under nvcc.
#include <cuda/std/__algorithm/min.h>
#include <cuda/std/__algorithm/max.h>
#include <cuda/std/__algorithm/clamp.h>
#include <cuda/std/utility>
namespace std { using cuda::std::min; using cuda::std::max; using cuda::std::clamp; using cuda::std::swap; }
