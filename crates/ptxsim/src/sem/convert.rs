//! Conversions of PTX: `cvt` between integer types (with `.sat`), integers to floats, floats
//! to integers and floats to floats with every rounding mode, and the tf32 rounding.
//!
//! Pure functions of values (see `sem`). No registers, warps, memory or reports here.

use std::cmp::Ordering;

use super::float::{f32b, f32v, f64b};
use super::ieee::{self as fl, ftz32, sat64};
use super::int;
use crate::ir::{FTy, IRnd, IntTy, Rnd, Tf32Rnd};

/// An integer value (already extended) to a float type, rounded by `rnd`.
pub fn int_to_float(x: i128, to: FTy, rnd: Rnd) -> u64 {
    match to {
        FTy::F64 => {
            let r = x as f64;
            let err = x.cmp(&(r as i128));
            f64b(fl::round_f64(r, err, rnd))
        }
        FTy::F32 => {
            let r = x as f32;
            let rc = (r as i128).cmp(&x);
            let down = |r: f32| {
                if rc == Ordering::Greater {
                    r.next_down()
                } else {
                    r
                }
            };
            let up = |r: f32| if rc == Ordering::Less { r.next_up() } else { r };
            f32b(match rnd {
                Rnd::Rn => r,
                Rnd::Rm => down(r),
                Rnd::Rp => up(r),
                Rnd::Rz if x >= 0 => down(r),
                Rnd::Rz => up(r),
            })
        }
        FTy::F16 | FTy::BF16 => {
            let r = x as f64;
            fl::round_half(to, r, x.cmp(&(r as i128)), rnd)
        }
    }
}

/// `cvt` float to integer: rounded by `irnd`, saturated, NaN as the PTX ISA says.
pub fn float_to_int(a: u64, from: FTy, to: IntTy, irnd: IRnd, ftz: bool) -> u64 {
    let mut x = fl::get(from, a);
    if ftz && from == FTy::F32 {
        x = ftz32(x as f32) as f64;
    }
    if x.is_nan() {
        // PTX ISA (cvt): NaN gives 0, but 1 << (width - 1) from an f64 source or into a 64-bit
        // destination.
        return if from == FTy::F64 || to.bits == 64 {
            int::zext(1u64 << (to.bits - 1), to.bits)
        } else {
            0
        };
    }
    let r = fl::round_int(x, irnd);
    match (to.bits, to.signed) {
        (8, true) => r as i8 as i64 as u64,
        (16, true) => r as i16 as i64 as u64,
        (32, true) => r as i32 as i64 as u64,
        (64, true) => r as i64 as u64,
        (8, false) => r as u8 as u64,
        (16, false) => r as u16 as u64,
        (32, false) => r as u32 as u64,
        _ => r as u64,
    }
}

/// `cvt` float to float: optionally rounded to an integral value, saturated, flushed.
#[allow(clippy::too_many_arguments)]
pub fn float_to_float(
    a: u64,
    from: FTy,
    to: FTy,
    rnd: Rnd,
    irnd: IRnd,
    ftz: bool,
    sat: bool,
) -> u64 {
    let mut x = fl::get(from, a);
    if ftz && from == FTy::F32 {
        x = ftz32(x as f32) as f64;
    }
    if irnd != IRnd::None {
        x = fl::round_int(x, irnd);
    }
    if sat {
        x = sat64(x);
    }
    match to {
        FTy::F64 => f64b(x),
        FTy::F32 => {
            let mut r = fl::round_to_f32(x, Ordering::Equal, rnd);
            if ftz {
                r = ftz32(r);
            }
            f32b(r)
        }
        FTy::F16 | FTy::BF16 => fl::round_half(to, x, Ordering::Equal, rnd),
    }
}

/// `cvt` between integer types: `a` of type `from` to type `to`, clamped to `to`'s range with
/// `sat`.
#[inline(always)]
pub fn cvt_ii(a: u64, from: IntTy, to: IntTy, sat: bool) -> u64 {
    if !sat && from.bits == 32 && to.bits == 64 {
        // The common widening in 64-bit arithmetic (no i128), so that lane loops vectorise.
        return if from.signed {
            a as i32 as i64 as u64
        } else {
            a as u32 as u64
        };
    }
    let v = int::ext(a, from);
    let v = if sat {
        let (lo, hi) = if to.signed {
            (-(1i128 << (to.bits - 1)), (1i128 << (to.bits - 1)) - 1)
        } else {
            (0, (1i128 << to.bits) - 1)
        };
        v.clamp(lo, hi)
    } else {
        v
    };
    int::norm(v as u64, to)
}

/// `cvt` integer to float: `a` of type `from`, rounded by `rnd`.
#[inline(always)]
pub fn cvt_if(a: u64, from: IntTy, to: FTy, rnd: Rnd) -> u64 {
    if from.bits == 32 && to == FTy::F32 && rnd == Rnd::Rn {
        // The host's conversion rounds to nearest as `.rn` does.
        return if from.signed {
            f32b(a as i32 as f32)
        } else {
            f32b(a as u32 as f32)
        };
    }
    int_to_float(int::ext(a, from), to, rnd)
}

/// `cvt` float to integer (see [`float_to_int`]).
#[inline(always)]
pub fn cvt_fi(a: u64, from: FTy, to: IntTy, irnd: IRnd, ftz: bool) -> u64 {
    // f32 → 32-bit integer, truncating (`(int)x`, the common case): Rust's `as` truncates,
    // saturates and maps NaN to 0 exactly as PTX's cvt.rzi does; a flushed subnormal truncates
    // to 0 either way, so `.ftz` changes nothing.
    if from == FTy::F32 && to.bits == 32 && irnd == IRnd::Rzi {
        return if to.signed {
            f32v(a) as i32 as i64 as u64
        } else {
            f32v(a) as u32 as u64
        };
    }
    float_to_int(a, from, to, irnd, ftz)
}

/// `cvt` float to float (see [`float_to_float`]).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn cvt_ff(a: u64, from: FTy, to: FTy, rnd: Rnd, irnd: IRnd, ftz: bool, sat: bool) -> u64 {
    if from == FTy::F32 && to == FTy::F64 && !ftz && !sat && irnd == IRnd::None {
        return f64b(f32v(a) as f64);
    }
    float_to_float(a, from, to, rnd, irnd, ftz, sat)
}

/// `tf32` rounding of f32 bits (`cvt.*.tf32.f32`): 10 mantissa bits kept, the rest zero.
pub fn round_tf32(x: u32, rnd: Tf32Rnd) -> u32 {
    let f = f32::from_bits(x);
    if f.is_nan() {
        return 0x7FFF_FFFF;
    }
    if f.is_infinite() {
        return x;
    }
    let r = match rnd {
        Tf32Rnd::Rz => x,
        // Adding half of the dropped unit to the magnitude rounds ties away from zero; a carry
        // into the exponent gives the next binade (or infinity), as it should.
        Tf32Rnd::Rna => x.wrapping_add(0x1000),
        Tf32Rnd::Rn => x.wrapping_add(0xFFF + ((x >> 13) & 1)),
    };
    r & !0x1FFF
}
