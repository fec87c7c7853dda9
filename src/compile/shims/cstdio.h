// <cstdio> and <stdio.h> for NVRTC (nbcuda shim): printf is built into NVRTC for device code.
