// <cmath> and <math.h> for NVRTC (nbcuda shim). NVRTC declares CUDA's device math functions
// (and their float overloads) in the global namespace; nvcc's <cmath> also names them in std.
#ifndef __NBCUDA_CMATH
#define __NBCUDA_CMATH
namespace std {
using ::abs; using ::fabs; using ::fmod; using ::remainder; using ::remquo; using ::fma;
using ::fmax; using ::fmin; using ::fdim; using ::exp; using ::exp2; using ::expm1; using ::log;
using ::log10; using ::log2; using ::log1p; using ::pow; using ::sqrt; using ::cbrt;
using ::hypot; using ::sin; using ::cos; using ::tan; using ::asin; using ::acos; using ::atan;
using ::atan2; using ::sinh; using ::cosh; using ::tanh; using ::asinh; using ::acosh;
using ::atanh; using ::erf; using ::erfc; using ::tgamma; using ::lgamma; using ::ceil;
using ::floor; using ::trunc; using ::round; using ::lround; using ::llround; using ::nearbyint;
using ::rint; using ::lrint; using ::llrint; using ::frexp; using ::ldexp; using ::modf;
using ::scalbn; using ::scalbln; using ::ilogb; using ::logb; using ::nextafter;
using ::copysign; using ::nan; using ::isnan; using ::isinf; using ::isfinite; using ::signbit;
}
// glibc's <math.h> constants (INFINITY and NAN as CUDA's math_constants.h spells its own), as g++ (and so nvcc) sees them by default.
#define M_E 2.7182818284590452354
#define M_LOG2E 1.4426950408889634074
#define M_LOG10E 0.43429448190325182765
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.78539816339744830962
#define M_1_PI 0.31830988618379067154
#define M_2_PI 0.63661977236758134308
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#ifndef HUGE_VAL
#define HUGE_VAL __longlong_as_double(0x7ff0000000000000LL)
#endif
#ifndef HUGE_VALF
#define HUGE_VALF __int_as_float(0x7f800000)
#endif
#endif
