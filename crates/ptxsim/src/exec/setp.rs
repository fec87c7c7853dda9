//! The interpreter's comparisons over a warp: the lane mask of a `setp`/`set` comparison
//! (one lane loop per comparison and type, so that each vectorises) and the writing of its
//! predicates or values.
//!
//! The comparison itself is `sem::compare`'s; nothing here touches memory or control flow.

use super::cpu::LaneMasks;
use super::{pred_mask, Warp};
use crate::ir::*;
use crate::sem::compare::{cmp_ord, float_cmp, int_cmp};
use crate::sem::float::{f32v, f64v};
use crate::sem::ieee::ftz32;
use crate::sem::int::{sext, zext};

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
                c => cmp_mask(k, w, i, move |x, y| int_cmp(c, ty, x, y)),
            }
        };
    }
    if ty.signed {
        by_cmp!(sext)
    } else {
        by_cmp!(zext)
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
        FTy::F16 | FTy::BF16 => cmp_mask(k, w, i, |x, y| float_cmp(cmp, ty, false, x, y)),
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
        None => super::alu::write(d, m, |l| ((p >> l) & 1) as u64),
        Some(one) => super::alu::write(d, m, |l| if (p >> l) & 1 != 0 { one } else { 0 }),
    }
    if i.r[4] != NONE {
        let d2 = &mut w.regs[i.r[4] as usize];
        super::alu::write(d2, m, |l| ((q >> l) & 1) as u64);
    }
}
