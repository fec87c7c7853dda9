//! Floating-point arithmetic of PTX on register values: f32, f64, f16 and bf16 with rounding
//! modes, flush-to-zero, saturation, `.relu` and canonical NaNs; min/max, `testp`, `copysign`,
//! `slct`.
//!
//! Pure functions of values (see `sem`); `ieee` does the exact rounding. No registers, warps,
//! memory or reports here.

use super::ieee::{self as fl, ftz32, ftz64, sat64};
use crate::ir::{FOp, FTy, Rnd, TestP, UFn};

#[inline(always)]
pub fn f32v(a: u64) -> f32 {
    f32::from_bits(a as u32)
}
#[inline(always)]
pub fn f32b(x: f32) -> u64 {
    x.to_bits() as u64
}
/// The canonical NaNs that arithmetic produces (f32: the GPU's 0x7FFFFFFF; f64: as `fminmax`).
pub const CANON_NAN32: u64 = 0x7FFF_FFFF;
pub const CANON_NAN64: u64 = 0x7FF8_0000_0000_0000;

/// An f32 arithmetic result as a register value, NaN made canonical (a NaN's payload would
/// otherwise depend on which operand the host instruction favours).
#[inline(always)]
pub fn f32c(x: f32) -> u64 {
    if x.is_nan() {
        CANON_NAN32
    } else {
        x.to_bits() as u64
    }
}

/// As `f32c`, for f64.
#[inline(always)]
pub fn f64c(x: f64) -> u64 {
    if x.is_nan() {
        CANON_NAN64
    } else {
        x.to_bits()
    }
}

#[inline(always)]
pub fn f64v(a: u64) -> f64 {
    f64::from_bits(a)
}
#[inline(always)]
pub fn f64b(x: f64) -> u64 {
    x.to_bits()
}

/// `add.f32` (round to nearest, no modifiers).
#[inline(always)]
pub fn add_f32(a: u64, b: u64) -> u64 {
    f32c(f32v(a) + f32v(b))
}

/// `sub.f32`.
#[inline(always)]
pub fn sub_f32(a: u64, b: u64) -> u64 {
    f32c(f32v(a) - f32v(b))
}

/// `mul.f32`.
#[inline(always)]
pub fn mul_f32(a: u64, b: u64) -> u64 {
    f32c(f32v(a) * f32v(b))
}

/// `fma.rn.f32`.
#[inline(always)]
pub fn fma_f32(a: u64, b: u64, c: u64) -> u64 {
    f32c(f32v(a).mul_add(f32v(b), f32v(c)))
}

/// `div.rn.f32`.
#[inline(always)]
pub fn div_f32(a: u64, b: u64) -> u64 {
    f32c(f32v(a) / f32v(b))
}

/// `add.f64`.
#[inline(always)]
pub fn add_f64(a: u64, b: u64) -> u64 {
    f64c(f64v(a) + f64v(b))
}

/// `sub.f64`.
#[inline(always)]
pub fn sub_f64(a: u64, b: u64) -> u64 {
    f64c(f64v(a) - f64v(b))
}

/// `mul.f64`.
#[inline(always)]
pub fn mul_f64(a: u64, b: u64) -> u64 {
    f64c(f64v(a) * f64v(b))
}

/// `fma.rn.f64`.
#[inline(always)]
pub fn fma_f64(a: u64, b: u64, c: u64) -> u64 {
    f64c(f64v(a).mul_add(f64v(b), f64v(c)))
}

/// `div.rn.f64`.
#[inline(always)]
pub fn div_f64(a: u64, b: u64) -> u64 {
    f64c(f64v(a) / f64v(b))
}

/// `copysign`: `b` with the sign of `a`.
#[inline(always)]
pub fn copysign(ty: FTy, a: u64, b: u64) -> u64 {
    let sb = match ty {
        FTy::F16 | FTy::BF16 => 15,
        FTy::F32 => 31,
        FTy::F64 => 63,
    };
    (b & !(1u64 << sb)) | (a & (1u64 << sb))
}

/// `slct`: `a` where `c` (an f32, or an s32) is at least 0, else `b`.
#[inline(always)]
pub fn slct(a: u64, b: u64, c: u64, cf32: bool, ftz: bool) -> u64 {
    let take_a = if cf32 {
        let x = if ftz { ftz32(f32v(c)) } else { f32v(c) };
        x >= 0.0
    } else {
        (c as i32) >= 0
    };
    if take_a {
        a
    } else {
        b
    }
}

/// The modifiers of an `FArith` operation.
#[derive(Clone, Copy)]
pub struct FMods {
    pub rnd: Rnd,
    pub ftz: bool,
    pub sat: bool,
    pub relu: bool,
}

/// The canonical NaN of f16 and of bf16 (what `min`/`max` of two NaNs and `fma.relu` give).
pub const CANON_NAN16: u64 = 0x7FFF;

/// `add`/`sub`/`mul`/`fma`/`div`/`sqrt`/`rcp` with their modifiers, rounded once.
pub fn farith(op: FOp, ty: FTy, md: FMods, a: u64, b: u64, c: u64) -> u64 {
    let FMods {
        rnd,
        ftz,
        sat,
        relu,
    } = md;
    match ty {
        FTy::F32 => {
            let f = |x: u64| if ftz { ftz32(f32v(x)) } else { f32v(x) };
            let mut r = fl::f32_arith(op, f(a), f(b), f(c), rnd);
            if ftz {
                r = ftz32(r);
            }
            if sat {
                r = sat64(r as f64) as f32;
            }
            f32b(r)
        }
        FTy::F64 => {
            let mut r = fl::f64_arith(op, f64v(a), f64v(b), f64v(c), rnd);
            if sat {
                r = sat64(r);
            }
            f64b(r)
        }
        FTy::F16 | FTy::BF16 => {
            // .ftz flushes f16 subnormal inputs and results (bf16 has no .ftz).
            let flush = |x: u64| {
                if ftz && ty == FTy::F16 && x & 0x7C00 == 0 {
                    x & 0x8000
                } else {
                    x
                }
            };
            let g = |x: u64| fl::get(ty, flush(x));
            // Exact result and the sign of its error, rounded once to the 16-bit format.
            let (r, err) = fl::f64_op(op, g(a), g(b), g(c));
            if r.is_nan() {
                // NaN results: +0 under .sat, otherwise the canonical NaN (as f32c does).
                return if sat { 0 } else { CANON_NAN16 };
            }
            let mut v = flush(fl::round_half(ty, r, err, rnd));
            if sat {
                v = fl::put(ty, sat64(fl::get(ty, v)));
            }
            if relu && v & 0x8000 != 0 {
                v = 0;
            }
            v
        }
    }
}

/// `abs`, `neg` and the approximate functions (`sqrt.approx`, `sin`, `ex2`, …).
pub fn funary(f: UFn, ty: FTy, ftz: bool, a: u64) -> u64 {
    match ty {
        FTy::F32 => {
            let x = if ftz { ftz32(f32v(a)) } else { f32v(a) };
            let r = match f {
                UFn::Abs => x.abs(),
                UFn::Neg => -x,
                UFn::Sqrt => x.sqrt(),
                UFn::Rsqrt => (1.0 / (x as f64).sqrt()) as f32,
                UFn::Rcp => 1.0 / x,
                UFn::Sin => x.sin(),
                UFn::Cos => x.cos(),
                UFn::Lg2 => x.log2(),
                UFn::Ex2 => x.exp2(),
                UFn::Tanh => x.tanh(),
            };
            f32b(if ftz { ftz32(r) } else { r })
        }
        FTy::F64 => {
            let x = if ftz { ftz64(f64v(a)) } else { f64v(a) };
            let r = match f {
                UFn::Abs => x.abs(),
                UFn::Neg => -x,
                UFn::Sqrt => x.sqrt(),
                UFn::Rsqrt => 1.0 / x.sqrt(),
                UFn::Rcp => 1.0 / x,
                UFn::Sin => x.sin(),
                UFn::Cos => x.cos(),
                UFn::Lg2 => x.log2(),
                UFn::Ex2 => x.exp2(),
                UFn::Tanh => x.tanh(),
            };
            f64b(if ftz { ftz64(r) } else { r })
        }
        FTy::F16 | FTy::BF16 => {
            if f == UFn::Neg {
                return a ^ 0x8000;
            }
            if f == UFn::Abs {
                return a & 0x7FFF;
            }
            let x = fl::get(ty, a) as f32;
            let r = funary(f, FTy::F32, false, f32b(x));
            fl::put(ty, f32v(r) as f64)
        }
    }
}

/// `min`/`max`: a NaN operand gives the other (`.NaN`: NaN), -0 is below +0.
pub fn fminmax(ty: FTy, ftz: bool, nan: bool, is_max: bool, a: u64, b: u64) -> u64 {
    let (x, y) = match ty {
        FTy::F32 if ftz => (ftz32(f32v(a)) as f64, ftz32(f32v(b)) as f64),
        t => (fl::get(t, a), fl::get(t, b)),
    };
    let r = if x.is_nan() || y.is_nan() {
        if nan || (x.is_nan() && y.is_nan()) {
            f64::NAN
        } else if x.is_nan() {
            y
        } else {
            x
        }
    } else if x == y {
        // -0 < +0
        if (x.is_sign_negative() != y.is_sign_negative()) == is_max {
            if x.is_sign_negative() {
                y
            } else {
                x
            }
        } else if x.is_sign_negative() {
            x
        } else {
            y
        }
    } else if (x < y) != is_max {
        x
    } else {
        y
    };
    if r.is_nan() {
        return match ty {
            FTy::F32 => CANON_NAN32,
            FTy::F64 => CANON_NAN64,
            FTy::F16 | FTy::BF16 => 0x7FFF,
        };
    }
    fl::put(ty, r)
}

/// `testp`: 1 if `a` is of the class `t`.
pub fn testp(t: TestP, ty: FTy, a: u64) -> u64 {
    let x = fl::get(ty, a);
    let sub = match ty {
        FTy::F32 => f32v(a).is_subnormal(),
        FTy::F64 => x.is_subnormal(),
        FTy::F16 => (a & 0x7C00) == 0 && (a & 0x3FF) != 0,
        FTy::BF16 => (a & 0x7F80) == 0 && (a & 0x7F) != 0,
    };
    (match t {
        TestP::Finite => x.is_finite(),
        TestP::Infinite => x.is_infinite(),
        TestP::Number => !x.is_nan(),
        TestP::NotANumber => x.is_nan(),
        TestP::Normal => x.is_finite() && x != 0.0 && !sub,
        TestP::Subnormal => sub,
    }) as u64
}
