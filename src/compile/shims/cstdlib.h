// <cstdlib> and <stdlib.h> for NVRTC (nbcuda shim): device malloc/free and the integer abs are
// built into NVRTC; std:: names them too.
namespace std { using ::abs; using ::labs; using ::llabs; using ::malloc; using ::free; }
