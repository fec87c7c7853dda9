//! Per-lane semantics of comparisons, floating-point operations and conversions, and the
//! warp-wide comparison masks built from them.
//!
//! Pure functions of register values (plus the warp's registers for the masks); the
//! interpreter loop in `run` applies them over the active lanes. No memory, no control flow.

use std::cmp::Ordering;

use super::alu;
use super::cpu::LaneMasks;
use super::float::{self as fl, ftz32, ftz64, sat64};
use super::{pred_mask, Warp};
use crate::ir::*;

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

/// Evaluate a comparison given the ordering of its operands (`None`: unordered).
#[inline(always)]
pub fn cmp_ord(c: Cmp, o: Option<Ordering>) -> bool {
    use Ordering::*;
    match (c, o) {
        (Cmp::Num, o) => o.is_some(),
        (Cmp::Nan, o) => o.is_none(),
        (_, None) => matches!(
            c,
            Cmp::Equ | Cmp::Neu | Cmp::Ltu | Cmp::Leu | Cmp::Gtu | Cmp::Geu
        ),
        (Cmp::Eq | Cmp::Equ, Some(o)) => o == Equal,
        (Cmp::Ne | Cmp::Neu, Some(o)) => o != Equal,
        (Cmp::Lt | Cmp::Ltu, Some(o)) => o == Less,
        (Cmp::Le | Cmp::Leu, Some(o)) => o != Greater,
        (Cmp::Gt | Cmp::Gtu, Some(o)) => o == Greater,
        (Cmp::Ge | Cmp::Geu, Some(o)) => o != Less,
    }
}

/// Compute the comparison mask of `f` over the 32 lanes.
#[inline(always)]
pub fn cmp_mask<K: LaneMasks>(k: K, w: &Warp, i: &Inst, f: impl Fn(u64, u64) -> bool) -> u32 {
    let a = &w.regs[i.r[1] as usize];
    let b = &w.regs[i.r[2] as usize];
    if K::VECTOR {
        let mut t = [0u64; 32];
        for l in 0..32 {
            t[l] = f(a[l], b[l]) as u64;
        }
        k.low_bits(&t)
    } else {
        let mut t = 0u32;
        for l in 0..32 {
            t |= (f(a[l], b[l]) as u32) << l;
        }
        t
    }
}

#[inline(always)]
pub fn int_cmp_mask(k: impl LaneMasks, w: &Warp, i: &Inst, cmp: Cmp, ty: IntTy) -> u32 {
    let b = ty.bits;
    // One lane loop per comparison and extension, each closure taking the width by value, so
    // that each vectorises.
    macro_rules! by_cmp {
        ($ext:path) => {
            match cmp {
                Cmp::Lt => cmp_mask(k, w, i, move |x, y| $ext(x, b) < $ext(y, b)),
                Cmp::Le => cmp_mask(k, w, i, move |x, y| $ext(x, b) <= $ext(y, b)),
                Cmp::Gt => cmp_mask(k, w, i, move |x, y| $ext(x, b) > $ext(y, b)),
                Cmp::Ge => cmp_mask(k, w, i, move |x, y| $ext(x, b) >= $ext(y, b)),
                Cmp::Eq => cmp_mask(k, w, i, move |x, y| $ext(x, b) == $ext(y, b)),
                Cmp::Ne => cmp_mask(k, w, i, move |x, y| $ext(x, b) != $ext(y, b)),
                c => cmp_mask(k, w, i, move |x, y| {
                    cmp_ord(c, Some($ext(x, b).cmp(&$ext(y, b))))
                }),
            }
        };
    }
    if ty.signed {
        by_cmp!(alu::sext)
    } else {
        by_cmp!(alu::zext)
    }
}

#[inline(always)]
pub fn float_cmp_mask(k: impl LaneMasks, w: &Warp, i: &Inst, cmp: Cmp, ty: FTy, ftz: bool) -> u32 {
    match ty {
        FTy::F32 if !ftz => match cmp {
            Cmp::Lt => cmp_mask(k, w, i, |x, y| f32v(x) < f32v(y)),
            Cmp::Le => cmp_mask(k, w, i, |x, y| f32v(x) <= f32v(y)),
            Cmp::Gt => cmp_mask(k, w, i, |x, y| f32v(x) > f32v(y)),
            Cmp::Ge => cmp_mask(k, w, i, |x, y| f32v(x) >= f32v(y)),
            c => cmp_mask(k, w, i, |x, y| cmp_ord(c, f32v(x).partial_cmp(&f32v(y)))),
        },
        FTy::F32 => cmp_mask(k, w, i, |x, y| {
            cmp_ord(cmp, ftz32(f32v(x)).partial_cmp(&ftz32(f32v(y))))
        }),
        FTy::F64 => match cmp {
            Cmp::Lt => cmp_mask(k, w, i, |x, y| f64v(x) < f64v(y)),
            Cmp::Gt => cmp_mask(k, w, i, |x, y| f64v(x) > f64v(y)),
            c => cmp_mask(k, w, i, |x, y| cmp_ord(c, f64v(x).partial_cmp(&f64v(y)))),
        },
        FTy::F16 | FTy::BF16 => cmp_mask(k, w, i, |x, y| {
            cmp_ord(cmp, fl::get(ty, x).partial_cmp(&fl::get(ty, y)))
        }),
    }
}

/// Write the results of `setp`/`set` for comparison mask `t`, combined by `bop` with the
/// predicate in `r[3]` (negated when `cneg`).
#[inline(always)]
pub fn write_setp(
    k: impl LaneMasks,
    w: &mut Warp,
    i: &Inst,
    m: u32,
    t: u32,
    (bop, cneg): (BoolOp, bool),
    set: Option<u64>,
) {
    let c = if i.r[3] != NONE {
        pred_mask(k, &w.regs[i.r[3] as usize], cneg)
    } else {
        0
    };
    let (p, q) = match bop {
        BoolOp::None => (t, !t),
        BoolOp::And => (t & c, !t & c),
        BoolOp::Or => (t | c, !t | c),
        BoolOp::Xor => (t ^ c, !t ^ c),
    };
    let d = &mut w.regs[i.r[0] as usize];
    match set {
        None => alu::write(d, m, |l| ((p >> l) & 1) as u64),
        Some(one) => alu::write(d, m, |l| if (p >> l) & 1 != 0 { one } else { 0 }),
    }
    if i.r[4] != NONE {
        let d2 = &mut w.regs[i.r[4] as usize];
        alu::write(d2, m, |l| ((q >> l) & 1) as u64);
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

pub fn float_to_int(a: u64, from: FTy, to: IntTy, irnd: IRnd, ftz: bool) -> u64 {
    let mut x = fl::get(from, a);
    if ftz && from == FTy::F32 {
        x = ftz32(x as f32) as f64;
    }
    if x.is_nan() {
        // PTX ISA (cvt): NaN gives 0, but 1 << (width - 1) from an f64 source or into a 64-bit
        // destination.
        return if from == FTy::F64 || to.bits == 64 {
            alu::zext(1u64 << (to.bits - 1), to.bits)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_with_nan() {
        let n = None;
        assert!(!cmp_ord(Cmp::Eq, n));
        assert!(cmp_ord(Cmp::Equ, n));
        assert!(!cmp_ord(Cmp::Ne, n));
        assert!(cmp_ord(Cmp::Neu, n));
        assert!(cmp_ord(Cmp::Nan, n));
        assert!(!cmp_ord(Cmp::Num, n));
        assert!(cmp_ord(Cmp::Le, Some(Ordering::Equal)));
        assert!(!cmp_ord(Cmp::Ltu, Some(Ordering::Equal)));
    }

    #[test]
    fn conversions() {
        assert_eq!(
            float_to_int(
                f32b(-1.5),
                FTy::F32,
                IntTy {
                    bits: 32,
                    signed: true
                },
                IRnd::Rni,
                false
            ) as i32,
            -2
        );
        assert_eq!(
            float_to_int(
                f32b(2.5),
                FTy::F32,
                IntTy {
                    bits: 32,
                    signed: true
                },
                IRnd::Rni,
                false
            ),
            2
        );
        assert_eq!(
            float_to_int(
                f32b(-1.5),
                FTy::F32,
                IntTy {
                    bits: 32,
                    signed: false
                },
                IRnd::Rzi,
                false
            ),
            0
        );
        assert_eq!(
            float_to_int(
                f32b(f32::NAN),
                FTy::F32,
                IntTy {
                    bits: 32,
                    signed: true
                },
                IRnd::Rzi,
                false
            ),
            0
        );
        assert_eq!(
            float_to_int(
                f32b(1e20),
                FTy::F32,
                IntTy {
                    bits: 32,
                    signed: true
                },
                IRnd::Rzi,
                false
            ) as i32,
            i32::MAX
        );
        let big = (1i128 << 24) + 1;
        assert_eq!(f32v(int_to_float(big, FTy::F32, Rnd::Rn)), 16777216.0);
        assert_eq!(f32v(int_to_float(big, FTy::F32, Rnd::Rp)), 16777218.0);
        assert_eq!(f32v(int_to_float(-big, FTy::F32, Rnd::Rz)), -16777216.0);
        assert_eq!(f32v(int_to_float(-big, FTy::F32, Rnd::Rm)), -16777218.0);
        let x = f64b(1.0 + f64::EPSILON);
        assert_eq!(
            f32v(float_to_float(
                x,
                FTy::F64,
                FTy::F32,
                Rnd::Rp,
                IRnd::None,
                false,
                false
            )),
            1.0f32.next_up()
        );
        assert_eq!(
            f32v(float_to_float(
                x,
                FTy::F64,
                FTy::F32,
                Rnd::Rn,
                IRnd::None,
                false,
                false
            )),
            1.0
        );
        assert_eq!(
            f32v(float_to_float(
                f32b(2.5),
                FTy::F32,
                FTy::F32,
                Rnd::Rn,
                IRnd::Rni,
                false,
                false
            )),
            2.0
        );
        assert_eq!(
            f32v(float_to_float(
                f32b(1.7),
                FTy::F32,
                FTy::F32,
                Rnd::Rn,
                IRnd::None,
                false,
                true
            )),
            1.0
        );
    }

    #[test]
    fn min_max_nan_and_zero() {
        let mn = |a: f32, b: f32| f32v(fminmax(FTy::F32, false, false, false, f32b(a), f32b(b)));
        let mx = |a: f32, b: f32| f32v(fminmax(FTy::F32, false, false, true, f32b(a), f32b(b)));
        assert_eq!(mn(f32::NAN, 2.0), 2.0);
        assert_eq!(mx(1.0, f32::NAN), 1.0);
        assert!(mn(-0.0, 0.0).is_sign_negative());
        assert!(mx(-0.0, 0.0).is_sign_positive());
        assert_eq!(mn(1.0, 2.0), 1.0);
        assert_eq!(mx(1.0, 2.0), 2.0);
    }
}
