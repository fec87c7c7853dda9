// <climits> and <limits.h> for NVRTC (nbcuda shim): libcu++'s, which defines CHAR_BIT, INT_MAX,
// UINT_MAX, LLONG_MIN, ... without a host header.
#include <cuda/std/climits>
