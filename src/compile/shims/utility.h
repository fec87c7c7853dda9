// <utility> for NVRTC (nbcuda shim): libcu++'s (std::move, std::forward, std::swap, std::pair,
// ...), whose names std:: also finds (through a using-directive).
#include <cuda/std/utility>
namespace std { using namespace cuda::std; }
