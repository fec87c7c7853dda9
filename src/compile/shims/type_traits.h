// <type_traits> for NVRTC (nbcuda shim): libcu++'s, whose names std:: also finds (through a
// using-directive: a name declared in std itself, e.g. by another shim, still wins).
#include <cuda/std/type_traits>
namespace std { using namespace cuda::std; }
