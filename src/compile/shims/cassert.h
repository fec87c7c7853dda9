// <cassert> and <assert.h> for NVRTC (nbcuda shim). NVRTC defines `assert` itself, before the
// source, from NDEBUG as the options set it; like the C library's header, this one makes
// `assert` follow NDEBUG as it is at each inclusion (so no include guard). The definition is
// NVRTC's own: a failing assert calls __assertfail, which reports file, line and function and
// makes the launch fail.
#undef assert
#ifdef NDEBUG
#define assert(e) static_cast<void>(0)
#else
#define assert(e) ((e) ? static_cast<void>(0) : __assertfail(#e, __FILE__, __LINE__, __PRETTY_FUNCTION__, sizeof(char)))
#endif
