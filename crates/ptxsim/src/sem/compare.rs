//! Comparisons of PTX (`setp`, `set`): integer comparisons by type and float comparisons
//! with their ordered and unordered forms.
//!
//! Pure functions of values (see `sem`). No registers, warps, memory or reports here.

use std::cmp::Ordering;

use super::float::{f32v, f64v};
use super::ieee::{self as fl, ftz32};
use super::int::{sext, zext};
use crate::ir::{Cmp, FTy, IntTy};

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

/// An integer comparison of `a` and `b` of type `ty`.
#[inline(always)]
pub fn int_cmp(cmp: Cmp, ty: IntTy, a: u64, b: u64) -> bool {
    let o = if ty.signed {
        sext(a, ty.bits).cmp(&sext(b, ty.bits))
    } else {
        zext(a, ty.bits).cmp(&zext(b, ty.bits))
    };
    cmp_ord(cmp, Some(o))
}

/// A float comparison of `a` and `b` of type `ty` (`ftz`: f32 subnormals compare as zeros).
#[inline(always)]
pub fn float_cmp(cmp: Cmp, ty: FTy, ftz: bool, a: u64, b: u64) -> bool {
    let o = match ty {
        FTy::F32 if ftz => ftz32(f32v(a)).partial_cmp(&ftz32(f32v(b))),
        FTy::F32 => f32v(a).partial_cmp(&f32v(b)),
        FTy::F64 => f64v(a).partial_cmp(&f64v(b)),
        FTy::F16 | FTy::BF16 => fl::get(ty, a).partial_cmp(&fl::get(ty, b)),
    };
    cmp_ord(cmp, o)
}
