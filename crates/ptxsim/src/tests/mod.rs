//! Engine tests through the public API on real NVRTC output (PTX embedded from `ptx/`, generated
//! by NVRTC 12.9 with `-arch=compute_80 -lineinfo` from the `.cu` files beside them), and on
//! hand-written PTX for instruction semantics NVRTC rarely emits.

pub(crate) mod entry_ptx;
pub(crate) mod util;

mod basic;
#[cfg(feature = "accel")]
mod block_atomics;
#[cfg(feature = "accel")]
mod block_tier;
#[cfg(feature = "accel")]
mod block_tier_shared;
#[cfg(feature = "accel")]
mod block_tier_shuffles;
mod branch;
mod checks;
mod control;
mod cub;
mod extra;
mod fold;
mod grid_sync;
mod half;
mod half_conf;
#[cfg(feature = "accel")]
mod jit;
#[cfg(feature = "accel")]
mod jit_gang;
#[cfg(feature = "accel")]
mod jit_ragged;
#[cfg(feature = "accel")]
mod jit_sem;
#[cfg(feature = "accel")]
mod jit_shared;
mod memory;
#[cfg(feature = "accel")]
mod replay;
mod robust;
mod semantics;
mod simd_video;
mod uniform;
mod warp;
mod wmma;
