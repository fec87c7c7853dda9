//! The one definition of each PTX operation's per-lane result.
//!
//! Pure functions of register values (`u64`, only the low bits of a register meaningful) and
//! the operation's modifiers: integer arithmetic (`int`), bit operations (`bits`), packed
//! integers (`simd`), comparisons (`compare`), floats with rounding modes, flush-to-zero and
//! canonical NaNs (`float`, with the exact rounding in `ieee`), conversions (`convert`),
//! atomics' new values (`atomic`), warp collectives (`warp`) and generic addresses
//! (`address`).
//!
//! Every engine computes results through these: the interpreter's lane loops (`exec::run`),
//! the block tier (`exec::block`) and the lowering's constant folding; the JIT's emitted code is
//! tested bit for bit against them (`tests::jit_sem`). Functions an engine calls in a lane loop
//! are `#[inline(always)]`, and where a common type has a faster exact form (32-bit shifts,
//! `mul.wide.s32`, `cvt` widenings) the function picks it itself, so that a loop calling it
//! with that type fixed vectorises.
//!
//! This module must not import `exec`, `lower` or `jit`, touch memory, warps or reports, or
//! keep state.

pub mod address;
pub mod atomic;
pub mod bits;
pub mod compare;
pub mod convert;
pub mod float;
pub mod ieee;
pub mod int;
pub mod simd;
pub mod warp;

#[cfg(test)]
mod tests;
