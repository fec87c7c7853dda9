//! Engine tests through the public API on real NVRTC output (PTX embedded from `ptx/`, generated
//! by NVRTC 12.9 with `-arch=compute_80 -lineinfo` from the `.cu` files beside them), and on
//! hand-written PTX for instruction semantics NVRTC rarely emits.

pub(crate) mod entry_ptx;
pub(crate) mod util;

mod basic;
mod block_atomics;
mod block_tier;
mod block_tier_shared;
mod block_tier_shuffles;
mod branch;
mod checks;
mod control;
mod cub;
mod extra;
mod fold;
mod half;
mod half_conf;
mod jit;
mod jit_gang;
mod jit_ragged;
mod jit_sem;
mod jit_shared;
mod memory;
mod replay;
mod robust;
mod semantics;
mod simd_video;
mod uniform;
mod warp;
mod wmma;
