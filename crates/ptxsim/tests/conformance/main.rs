//! The ptxsim conformance suite: every CUDA kernel of `kernels/*.cu`, as NVRTC 12.9 compiled it
//! (the fixtures), run on fresh random inputs and compared with a CPU reference in Rust.
//! Integers compare exactly; floats compare bit-exactly wherever IEEE fixes the result (the
//! references mirror the PTX's operation order and its `fma` contractions), within a stated
//! tolerance for `.approx` instructions and libdevice transcendental functions.
//! Every launch runs with the checker on and must produce no check report.
//! Seeds: printed per test; `PTXSIM_SEED=<seed>` reproduces a run.

// The references index arrays the way the CUDA kernels do, on purpose.
#![allow(clippy::needless_range_loop)]

#[path = "../common/mod.rs"]
mod common;

mod api;
mod archs;
mod atomics;
mod divergence;
mod features;
mod functions;
mod intrinsics;
mod math;
mod printf;
mod scans;
mod tutorial;
mod warp;
