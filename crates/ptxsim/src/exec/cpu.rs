//! Run-time CPU feature dispatch for the interpreter loop.
//!
//! The crate is compiled for baseline x86-64 (SSE2), where the 32-lane loops cannot use wide
//! vectors and `mul_add` is a library call per lane. The hot loop is therefore compiled twice
//! more, for x86-64-v3 (AVX2, FMA, BMI, LZCNT, POPCNT) and for x86-64-v4 (v3 plus AVX-512 F,
//! BW, CD, DQ, VL), and the best one the CPU has is chosen at run time, up to the cap of
//! `LaunchConfig::host` (`HostBuild`). Results are identical (IEEE operations, including the
//! fused multiply-add, are exact either way). The v4 build runs the lane loops over 64-bit
//! register slots eight lanes to a vector and applies lane masks with mask registers:
//! reduceBlockTree, 131,072 threads on one worker, 8.2-8.3 ms with v3 against 7.1-7.3 ms.
//! Besides `mem` and `jit::call`, this is the only unsafe code: calling a function compiled for
//! CPU features the CPU was checked to have.

use super::{Fault, Stop, Warp, Worker};
use crate::HostBuild;

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

/// Whether this CPU runs the x86-64-v4 build of the loop.
#[inline(always)]
pub fn has_v4() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        has_v3()
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512cd")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The build of the interpreter loop a launch runs with the cap `cap`: 0 baseline, 3 x86-64-v3,
/// 4 x86-64-v4, the best this CPU has up to the cap.
pub fn level(cap: HostBuild) -> u8 {
    if cap >= HostBuild::Avx512 && has_v4() {
        4
    } else if cap >= HostBuild::Avx2 && has_v3() {
        3
    } else {
        0
    }
}

impl Worker<'_> {
    #[cfg(target_arch = "x86_64")]
    #[target_feature(
        enable = "avx2,fma,bmi1,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512cd,avx512dq,avx512vl"
    )]
    fn run_warp_v4(&mut self, w: &mut Warp, fuel: &mut u32) -> Result<Stop, Fault> {
        self.run_warp_impl(w, fuel)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,bmi1,bmi2,lzcnt,popcnt")]
    fn run_warp_v3(&mut self, w: &mut Warp, fuel: &mut u32) -> Result<Stop, Fault> {
        self.run_warp_impl(w, fuel)
    }

    /// Run the warp's current group until it blocks, exits, or uses up `fuel` instructions.
    pub(super) fn run_warp(&mut self, w: &mut Warp, fuel: &mut u32) -> Result<Stop, Fault> {
        #[cfg(target_arch = "x86_64")]
        if self.level == 4 {
            // SAFETY: `level` is 4 only when `has_v4()` found every feature that
            // `run_warp_v4` is compiled for, the only requirement for calling it.
            return unsafe { self.run_warp_v4(w, fuel) };
        }
        #[cfg(target_arch = "x86_64")]
        if self.level == 3 {
            // SAFETY: `level` is 3 only when `has_v3()` found every feature that
            // `run_warp_v3` is compiled for, the only requirement for calling it.
            return unsafe { self.run_warp_v3(w, fuel) };
        }
        self.run_warp_impl(w, fuel)
    }
}
