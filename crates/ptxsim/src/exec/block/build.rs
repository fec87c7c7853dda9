//! The block tier's loops built for the CPU features of each interpreter build (`cpu::Build`):
//! the same target-feature builds as the interpreter loop's, chosen with the same tokens. Besides
//! `cpu`, this is the only unsafe code of the interpreter: calling functions compiled for
//! features the CPU was checked to have.

use super::super::cpu::Build;
#[cfg(target_arch = "x86_64")]
use super::super::cpu::{Avx2, Avx512};
use super::super::Worker;

impl<'a> Worker<'a> {
    #[cfg(target_arch = "x86_64")]
    #[target_feature(
        enable = "avx2,fma,bmi1,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512cd,avx512dq,avx512vl"
    )]
    fn block_tier_v4(
        &mut self,
        bt: &mut super::BlockTier<'a>,
        ctaid: [u32; 3],
        _k: Avx512,
    ) -> Result<u64, super::GiveUp> {
        self.run_block_tier(bt, ctaid)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,bmi1,bmi2,lzcnt,popcnt")]
    fn block_tier_v3(
        &mut self,
        bt: &mut super::BlockTier<'a>,
        ctaid: [u32; 3],
        _k: Avx2,
    ) -> Result<u64, super::GiveUp> {
        self.run_block_tier(bt, ctaid)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(
        enable = "avx2,fma,bmi1,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512cd,avx512dq,avx512vl"
    )]
    fn block_replay_v4(
        &mut self,
        bt: &mut super::BlockTier<'a>,
        ctaid: [u32; 3],
        _k: Avx512,
    ) -> Result<u64, super::GiveUp> {
        self.run_block_replay(bt, ctaid)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,bmi1,bmi2,lzcnt,popcnt")]
    fn block_replay_v3(
        &mut self,
        bt: &mut super::BlockTier<'a>,
        ctaid: [u32; 3],
        _k: Avx2,
    ) -> Result<u64, super::GiveUp> {
        self.run_block_replay(bt, ctaid)
    }

    /// Replay a recorded block of the tier for block `ctaid` (`block::replay`), with the
    /// build of its lane loops the CPU has.
    pub(super) fn block_replay_run(
        &mut self,
        bt: &mut super::BlockTier<'a>,
        ctaid: [u32; 3],
    ) -> Result<u64, super::GiveUp> {
        match self.build {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an `Avx512` token exists only where the CPU has every feature this build is
            // compiled for (`cpu::has_v4`), the only requirement for calling it.
            Build::V4(k) => unsafe { self.block_replay_v4(bt, ctaid, k) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, with `Avx2` (`cpu::has_v3`).
            Build::V3(k) => unsafe { self.block_replay_v3(bt, ctaid, k) },
            _ => self.run_block_replay(bt, ctaid),
        }
    }

    /// Run a block in the block tier (`block`), with the build of its lane loops the CPU has.
    pub(super) fn block_tier_run(
        &mut self,
        bt: &mut super::BlockTier<'a>,
        ctaid: [u32; 3],
    ) -> Result<u64, super::GiveUp> {
        match self.build {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an `Avx512` token exists only where the CPU has every feature this build is
            // compiled for (`cpu::has_v4`), the only requirement for calling it.
            Build::V4(k) => unsafe { self.block_tier_v4(bt, ctaid, k) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, with `Avx2` (`cpu::has_v3`).
            Build::V3(k) => unsafe { self.block_tier_v3(bt, ctaid, k) },
            _ => self.run_block_tier(bt, ctaid),
        }
    }
}
