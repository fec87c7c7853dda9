//! Packed integer operations of PTX: the SIMD video instructions, the 16x2 integer pairs and
//! `dp4a`/`dp2a`.
//!
//! Pure functions of values (see `sem`). No registers, warps, memory or reports here.

use super::int::{sext, zext};
use crate::ir::{DotForm, VideoOp, VideoSimd};

/// A SIMD video instruction on a, b and c (see [`VideoSimd`]).
pub fn video(v: VideoSimd, a: u64, b: u64, c: u64) -> u64 {
    let bits: u8 = if v.lanes == 2 { 16 } else { 8 };
    let (lo, hi) = if v.d_signed {
        (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
    } else {
        (0, (1i64 << bits) - 1)
    };
    let (mut merged, mut sum) = (0u64, c as u32 as i64);
    for k in 0..v.lanes as u32 {
        let at = |x: u64, signed: bool| {
            let e = zext(x >> (bits as u32 * k), bits);
            if signed {
                sext(e, bits)
            } else {
                e as i64
            }
        };
        let (x, y) = (at(a, v.a_signed), at(b, v.b_signed));
        let r = match v.op {
            VideoOp::AbsDiff => (x - y).abs(),
            VideoOp::Add => x + y,
            VideoOp::Sub => x - y,
            VideoOp::Avrg => (x + y + 1) >> 1,
            VideoOp::Min => x.min(y),
            VideoOp::Max => x.max(y),
        };
        let r = if v.relu { r.max(0) } else { r };
        if v.add {
            sum = sum.wrapping_add(r);
        } else {
            let r = if v.sat { r.clamp(lo, hi) } else { r };
            merged |= zext(r as u64, bits) << (bits as u32 * k);
        }
    }
    if v.add {
        sum as u32 as u64
    } else {
        merged
    }
}

/// `dp4a` / `dp2a.lo` / `dp2a.hi`: c plus the products of a's bytes (dp4a) or 16-bit halves
/// (dp2a) with b's bytes, each extended by its operand's signedness; 32-bit wrapping.
pub fn dot(form: DotForm, a: u64, b: u64, c: u64, a_signed: bool, b_signed: bool) -> u64 {
    let (n, a_bits, b_first): (u32, u8, u32) = match form {
        DotForm::Four => (4, 8, 0),
        DotForm::Two { hi } => (2, 16, if hi { 2 } else { 0 }),
    };
    let mut s = c as u32 as i64;
    for k in 0..n {
        let x = zext(a >> (a_bits as u32 * k), a_bits);
        let y = (b >> (8 * (k + b_first))) & 0xFF;
        let x = if a_signed { sext(x, a_bits) } else { x as i64 };
        let y = if b_signed { sext(y, 8) } else { y as i64 };
        s = s.wrapping_add(x * y);
    }
    s as u64
}
