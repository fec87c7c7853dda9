//! Engine tests through the public API on real NVRTC output (PTX embedded from `ptx/`, generated
//! by NVRTC 12.9 with `-arch=compute_80 -lineinfo`; the CUDA source is in each file's comment
//! or the test).

mod util;

mod basic;
