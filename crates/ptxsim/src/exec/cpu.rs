//! Run-time CPU feature dispatch for the interpreter loop.
//!
//! The crate is compiled for baseline x86-64 (SSE2), where the 32-lane loops cannot use wide
//! vectors and `mul_add` is a library call per lane. The hot loop is therefore compiled a
//! second time for x86-64-v3 (AVX2, FMA, BMI, LZCNT, POPCNT) and chosen at run time; results
//! are identical (IEEE operations, including the fused multiply-add, are exact either way).
//! Besides `mem` and `jit::call`, this is the only unsafe code: calling a function compiled for
//! CPU features the CPU was checked to have.

use super::{Fault, Stop, Warp, Worker};

/// Whether this CPU runs the x86-64-v3 build of the loop.
#[inline(always)]
pub fn has_v3() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("bmi1")
            && std::arch::is_x86_feature_detected!("bmi2")
            && std::arch::is_x86_feature_detected!("lzcnt")
            && std::arch::is_x86_feature_detected!("popcnt")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

impl Worker<'_> {
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,bmi1,bmi2,lzcnt,popcnt")]
    fn run_warp_v3(&mut self, w: &mut Warp, fuel: &mut u32) -> Result<Stop, Fault> {
        self.run_warp_impl(w, fuel)
    }

    /// Run the warp's current group until it blocks, exits, or uses up `fuel` instructions.
    pub(super) fn run_warp(&mut self, w: &mut Warp, fuel: &mut u32) -> Result<Stop, Fault> {
        #[cfg(target_arch = "x86_64")]
        if self.v3 {
            // SAFETY: `self.v3` is only set when `has_v3()` found every feature that
            // `run_warp_v3` is compiled for, the only requirement for calling it.
            return unsafe { self.run_warp_v3(w, fuel) };
        }
        self.run_warp_impl(w, fuel)
    }
}
