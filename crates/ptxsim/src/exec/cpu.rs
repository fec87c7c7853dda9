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
//! Each build gets a token that proves the CPU has its features (`Build`), and with it the lane
//! mask instructions of its vector extension (`LaneMasks`): guards and comparisons turn 32
//! lanes into a mask with `vptestmq` (AVX-512) or `vmovmskpd` (AVX2), where the plain loop
//! compiles to a chain of shuffles (a further 5.7% on reduceBlockTree with AVX-512, even with
//! AVX2). Besides `mem` and `jit::call`, this is the only unsafe code: calling functions
//! compiled for CPU features the CPU was checked to have (the interpreter loop; the block
//! tier's builds are in `block::build`, with these tokens).
//!
//! The v3 and v4 builds are accelerators: they are compiled only with the crate's `accel`
//! feature (`accel`); without it every worker runs the baseline build (`Build::Baseline`)
//! whatever `Engines::host` asks for.

use super::{Fault, Stop, Warp, Worker};
use crate::HostBuild;

/// Whether this CPU runs the x86-64-v3 build of the loop.
#[cfg(feature = "accel")]
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
#[cfg(feature = "accel")]
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

impl<'a> Worker<'a> {
    #[cfg(all(target_arch = "x86_64", feature = "accel"))]
    #[target_feature(
        enable = "avx2,fma,bmi1,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512cd,avx512dq,avx512vl"
    )]
    fn run_warp_v4(&mut self, w: &mut Warp, fuel: &mut u32, k: Avx512) -> Result<Stop, Fault> {
        self.run_warp_impl::<_, false>(w, fuel, k)
    }

    #[cfg(all(target_arch = "x86_64", feature = "accel"))]
    #[target_feature(enable = "avx2,fma,bmi1,bmi2,lzcnt,popcnt")]
    fn run_warp_v3(&mut self, w: &mut Warp, fuel: &mut u32, k: Avx2) -> Result<Stop, Fault> {
        self.run_warp_impl::<_, false>(w, fuel, k)
    }

    /// The counting build of the loop (`crate::counters`), for counted launches only: the
    /// baseline build with the counters' hook before each instruction.
    #[inline(never)]
    fn run_warp_counted(&mut self, w: &mut Warp, fuel: &mut u32) -> Result<Stop, Fault> {
        self.run_warp_impl::<_, true>(w, fuel, Portable)
    }

    /// Run the warp's current group until it blocks, exits, or uses up `fuel` instructions.
    pub(super) fn run_warp(&mut self, w: &mut Warp, fuel: &mut u32) -> Result<Stop, Fault> {
        if self.ctx.counters.is_some() {
            return self.run_warp_counted(w, fuel);
        }
        match self.build {
            #[cfg(all(target_arch = "x86_64", feature = "accel"))]
            // SAFETY: an `Avx512` token exists only where `has_v4()` found every feature that
            // `run_warp_v4` is compiled for, the only requirement for calling it.
            Build::V4(k) => unsafe { self.run_warp_v4(w, fuel, k) },
            #[cfg(all(target_arch = "x86_64", feature = "accel"))]
            // SAFETY: as above, with `Avx2` and `has_v3()`.
            Build::V3(k) => unsafe { self.run_warp_v3(w, fuel, k) },
            _ => self.run_warp_impl::<_, false>(w, fuel, Portable),
        }
    }
}

/// The build of the interpreter loop a worker runs, with the token that proves the CPU can.
#[derive(Clone, Copy)]
pub(crate) enum Build {
    Baseline,
    #[cfg(feature = "accel")]
    V3(Avx2),
    #[cfg(feature = "accel")]
    V4(Avx512),
}

impl Build {
    /// The best build up to `cap` that this CPU has.
    pub(crate) fn new(cap: HostBuild) -> Build {
        #[cfg(feature = "accel")]
        {
            match (Avx512::new(), Avx2::new()) {
                (Some(k), _) if cap >= HostBuild::Avx512 => Build::V4(k),
                (_, Some(k)) if cap >= HostBuild::Avx2 => Build::V3(k),
                _ => Build::Baseline,
            }
        }
        #[cfg(not(feature = "accel"))]
        {
            let _ = cap;
            Build::Baseline
        }
    }

    /// The cap this build stands for.
    pub(crate) fn host(self) -> HostBuild {
        match self {
            Build::Baseline => HostBuild::Baseline,
            #[cfg(feature = "accel")]
            Build::V3(_) => HostBuild::Avx2,
            #[cfg(feature = "accel")]
            Build::V4(_) => HostBuild::Avx512,
        }
    }
}

/// Lane masks from 32 lanes of 64-bit values, with the vector instructions of one build of the
/// interpreter loop. A loop that shifts and ORs each lane's bit into place compiles to a chain
/// of vector shuffles; the x86 builds use the instructions made for it (`vmovmskpd` with AVX2,
/// `vptestmq` with AVX-512), which are only sound to run on a CPU that has them: the tokens
/// `Avx2` and `Avx512` can only be made after checking that it does.
pub(crate) trait LaneMasks: Copy {
    /// Whether `low_bits` uses vector instructions (else it is the plain loop).
    const VECTOR: bool;

    /// Bit `l` set when bit 0 of `v[l]` is set.
    fn low_bits(self, v: &[u64; 32]) -> u32;
}

/// The baseline build: plain loops.
#[derive(Clone, Copy)]
pub(crate) struct Portable;

impl LaneMasks for Portable {
    const VECTOR: bool = false;

    #[inline(always)]
    fn low_bits(self, v: &[u64; 32]) -> u32 {
        let mut m = 0u32;
        for (l, x) in v.iter().enumerate() {
            m |= ((x & 1) as u32) << l;
        }
        m
    }
}

/// Proof that the CPU has AVX2 (made only by `new`).
#[cfg(feature = "accel")]
#[derive(Clone, Copy)]
pub(crate) struct Avx2(());

#[cfg(feature = "accel")]
impl Avx2 {
    pub(super) fn new() -> Option<Avx2> {
        has_v3().then_some(Avx2(()))
    }
}

#[cfg(all(target_arch = "x86_64", feature = "accel"))]
impl LaneMasks for Avx2 {
    const VECTOR: bool = true;

    #[inline(always)]
    fn low_bits(self, v: &[u64; 32]) -> u32 {
        #[target_feature(enable = "avx2")]
        #[inline]
        fn low_bits(v: &[u64; 32]) -> u32 {
            use std::arch::x86_64::*;
            let mut m = 0u32;
            for (k, q) in v.chunks_exact(4).enumerate() {
                // SAFETY: `q` is 4 readable u64s, the 32 bytes loaded (unaligned).
                let x = unsafe { _mm256_loadu_si256(q.as_ptr().cast()) };
                let s = _mm256_castsi256_pd(_mm256_slli_epi64::<63>(x));
                m |= (_mm256_movemask_pd(s) as u32) << (4 * k);
            }
            m
        }
        // SAFETY: an `Avx2` exists only where `has_v3()` found AVX2.
        unsafe { low_bits(v) }
    }
}

/// Proof that the CPU has the AVX-512 features of the v4 build (made only by `new`).
#[cfg(feature = "accel")]
#[derive(Clone, Copy)]
pub(crate) struct Avx512(());

#[cfg(feature = "accel")]
impl Avx512 {
    pub(super) fn new() -> Option<Avx512> {
        has_v4().then_some(Avx512(()))
    }
}

#[cfg(all(target_arch = "x86_64", feature = "accel"))]
impl LaneMasks for Avx512 {
    const VECTOR: bool = true;

    #[inline(always)]
    fn low_bits(self, v: &[u64; 32]) -> u32 {
        #[target_feature(enable = "avx512f")]
        #[inline]
        fn low_bits(v: &[u64; 32]) -> u32 {
            use std::arch::x86_64::*;
            let one = _mm512_set1_epi64(1);
            let mut m = 0u32;
            for (k, q) in v.chunks_exact(8).enumerate() {
                // SAFETY: `q` is 8 readable u64s, the 64 bytes loaded (unaligned).
                let x = unsafe { _mm512_loadu_si512(q.as_ptr().cast()) };
                m |= (_mm512_test_epi64_mask(x, one) as u32) << (8 * k);
            }
            m
        }
        // SAFETY: an `Avx512` exists only where `has_v4()` found AVX-512 F.
        unsafe { low_bits(v) }
    }
}
