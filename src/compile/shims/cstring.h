// <cstring> and <string.h> for NVRTC (nbcuda shim): memcpy and memset are built into NVRTC for
// device code; std:: names them too.
namespace std { using ::memcpy; using ::memset; }
