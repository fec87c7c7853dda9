//! IEEE floating-point helpers: directed rounding, flush-to-zero, saturation, f16 conversion.
//!
//! Results of every rounding mode are exact: an operation is computed to a nearby value plus the
//! sign of its exact error (error-free transformations in f64), and that pair is rounded in the
//! requested direction. Pure functions only; no knowledge of warps or registers.

use crate::ir::{FOp, FTy, IRnd, Rnd};
use std::cmp::Ordering;

/// Flush an f32 subnormal to a zero of the same sign.
#[inline(always)]
pub fn ftz32(x: f32) -> f32 {
    if x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

#[inline(always)]
pub fn ftz64(x: f64) -> f64 {
    if x.is_subnormal() {
        0.0f64.copysign(x)
    } else {
        x
    }
}

/// Clamp to [+0, 1]; NaN and -0 become +0.
#[inline(always)]
pub fn sat64(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        0.0
    } else {
        x.min(1.0)
    }
}

/// Round the exact value `approx + e` (where `e` has sign `err` and is at most half an f64 ulp of
/// `approx`) to f32 with `mode`.
pub fn round_to_f32(approx: f64, err: Ordering, mode: Rnd) -> f32 {
    let r = approx as f32;
    if approx.is_nan() || approx.is_infinite() {
        return r;
    }
    let rd = r as f64;
    // Sign of (r - exact).
    let r_vs_exact = if rd != approx {
        rd.partial_cmp(&approx).unwrap_or(Ordering::Equal)
    } else {
        err.reverse()
    };
    if r_vs_exact == Ordering::Equal {
        return r;
    }
    match mode {
        Rnd::Rn => {
            // Only a tie at f32 precision broken the wrong way by the f64 rounding matters.
            if rd != approx {
                let other = if rd > approx {
                    r.next_down()
                } else {
                    r.next_up()
                };
                let mid = (rd + other as f64) / 2.0;
                if mid == approx && err != Ordering::Equal {
                    // exact lies on the side of `err` from the midpoint.
                    let toward_other = (other as f64 > approx) == (err == Ordering::Greater);
                    return if toward_other { other } else { r };
                }
            }
            r
        }
        Rnd::Rm => {
            if r_vs_exact == Ordering::Greater {
                r.next_down()
            } else {
                r
            }
        }
        Rnd::Rp => {
            if r_vs_exact == Ordering::Less {
                r.next_up()
            } else {
                r
            }
        }
        Rnd::Rz => {
            let exact_positive = approx > 0.0 || (approx == 0.0 && err == Ordering::Greater);
            if exact_positive {
                round_to_f32(approx, err, Rnd::Rm)
            } else {
                round_to_f32(approx, err, Rnd::Rp)
            }
        }
    }
}

/// Adjust the round-to-nearest f64 result `r` whose exact value differs from it by an error of
/// sign `err` to the directed `mode`.
pub fn round_f64(r: f64, err: Ordering, mode: Rnd) -> f64 {
    if err == Ordering::Equal || r.is_nan() {
        return r;
    }
    match mode {
        Rnd::Rn => r,
        Rnd::Rm => {
            if err == Ordering::Less {
                r.next_down()
            } else {
                r
            }
        }
        Rnd::Rp => {
            if err == Ordering::Greater {
                r.next_up()
            } else {
                r
            }
        }
        Rnd::Rz => {
            if r > 0.0 || (r == 0.0 && err == Ordering::Greater) {
                round_f64(r, err, Rnd::Rm)
            } else {
                round_f64(r, err, Rnd::Rp)
            }
        }
    }
}

fn sign(x: f64) -> Ordering {
    x.partial_cmp(&0.0).unwrap_or(Ordering::Equal)
}

/// (a+b rounded to nearest, sign of the exact error).
fn two_sum(a: f64, b: f64) -> (f64, Ordering) {
    let s = a + b;
    if !s.is_finite() {
        return (s, Ordering::Equal);
    }
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    (s, sign(e))
}

/// Exact-error computation of an f64 operation: (nearest result, sign of exact - nearest).
pub fn f64_op(op: FOp, a: f64, b: f64, c: f64) -> (f64, Ordering) {
    match op {
        FOp::Add => two_sum(a, b),
        FOp::Sub => two_sum(a, -b),
        FOp::Mul => {
            let p = a * b;
            if !p.is_finite() {
                return (p, Ordering::Equal);
            }
            (p, sign(a.mul_add(b, -p)))
        }
        FOp::Fma => {
            let r1 = a.mul_add(b, c);
            if !r1.is_finite() {
                return (r1, Ordering::Equal);
            }
            // Boldo–Muller ErrFma: exact = r1 + r2 + r3.
            let u1 = a * b;
            let u2 = a.mul_add(b, -u1);
            let (a1, a2e) = {
                let s = c + u2;
                let bb = s - c;
                (s, (c - (s - bb)) + (u2 - bb))
            };
            let (b1, b2) = {
                let s = u1 + a1;
                let bb = s - u1;
                (s, (u1 - (s - bb)) + (a1 - bb))
            };
            let gamma = (b1 - r1) + b2;
            let r2 = gamma + a2e;
            let r3 = a2e - (r2 - gamma);
            let s = sign(r2);
            (r1, if s == Ordering::Equal { sign(r3) } else { s })
        }
        FOp::Div => {
            let q = a / b;
            if !q.is_finite() || q == 0.0 && a == 0.0 {
                return (q, Ordering::Equal);
            }
            let r = (-q).mul_add(b, a);
            let s = sign(r);
            (q, if b < 0.0 { s.reverse() } else { s })
        }
        FOp::Rcp => f64_op(FOp::Div, 1.0, a, 0.0),
        FOp::Sqrt => {
            let s = a.sqrt();
            if !s.is_finite() || s == 0.0 {
                return (s, Ordering::Equal);
            }
            (s, sign((-s).mul_add(s, a)))
        }
    }
}

/// An f32 operation in any rounding mode (operands already flushed if needed).
pub fn f32_arith(op: FOp, a: f32, b: f32, c: f32, mode: Rnd) -> f32 {
    let (a, b, c) = (a as f64, b as f64, c as f64);
    let (approx, err) = match op {
        FOp::Mul => (a * b, Ordering::Equal),
        FOp::Fma => two_sum(a * b, c),
        _ => f64_op(op, a, b, c),
    };
    round_to_f32(approx, err, mode)
}

/// An f64 operation in any rounding mode.
pub fn f64_arith(op: FOp, a: f64, b: f64, c: f64, mode: Rnd) -> f64 {
    let (r, err) = f64_op(op, a, b, c);
    round_f64(r, err, mode)
}

/// Round to an integral value in the given way (floating-point result).
pub fn round_int(x: f64, r: IRnd) -> f64 {
    match r {
        IRnd::None => x,
        IRnd::Rni => x.round_ties_even(),
        IRnd::Rzi => x.trunc(),
        IRnd::Rmi => x.floor(),
        IRnd::Rpi => x.ceil(),
    }
}

/// f32 → IEEE half (round to nearest even), as bits.
pub fn f32_to_f16(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xFF) as i32;
    let man = b & 0x7F_FFFF;
    if exp == 0xFF {
        return sign
            | 0x7C00
            | if man != 0 {
                0x200 | (man >> 13) as u16
            } else {
                0
            };
    }
    let e = exp - 127 + 15;
    if e >= 0x1F {
        return sign | 0x7C00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1 << shift) - 1);
        let mut h = (m >> shift) as u16;
        if rest > half || (rest == half && h & 1 == 1) {
            h += 1;
        }
        return sign | h;
    }
    let mut h = ((e as u32) << 10 | (man >> 13)) as u16;
    let rest = man & 0x1FFF;
    if rest > 0x1000 || (rest == 0x1000 && h & 1 == 1) {
        h += 1; // may carry into the exponent, and into infinity: both correct
    }
    sign | h
}

/// f32 → bfloat16 (round to nearest even), as bits.
pub fn f32_to_bf16(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) as u16) | 0x40;
    }
    let round = 0x7FFF + ((b >> 16) & 1);
    ((b as u64 + round as u64) >> 16) as u16
}

/// IEEE half bits → f32 (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let exp = ((h >> 10) & 0x1F) as u32;
    let man = (h & 0x3FF) as u32;
    let bits = if exp == 0 {
        if man == 0 {
            sign
        } else {
            // Subnormal: value = man * 2^-24.
            let v = man as f32 * 2.0f32.powi(-24);
            return if sign != 0 { -v } else { v };
        }
    } else if exp == 0x1F {
        sign | 0x7F80_0000 | (man << 13)
    } else {
        sign | ((exp + 127 - 15) << 23) | (man << 13)
    };
    f32::from_bits(bits)
}

/// Read a register value of float type `t` as f64.
#[inline(always)]
pub fn get(t: FTy, v: u64) -> f64 {
    match t {
        FTy::F64 => f64::from_bits(v),
        FTy::F32 => f32::from_bits(v as u32) as f64,
        FTy::F16 => f16_to_f32(v as u16) as f64,
        FTy::BF16 => f32::from_bits(((v as u32) & 0xFFFF) << 16) as f64,
    }
}

/// `x` rounded to f32 with round-to-odd: truncate, then set the last bit when inexact. An f32
/// holds 13 more bits than an f16 and 16 more than a bf16, so rounding this result to nearest
/// again gives the correctly rounded f16/bf16 (rounding f64 → f32 → f16 to nearest twice would
/// not: a value just past a half-way point can land on it).
fn f64_to_f32_round_to_odd(x: f64) -> f32 {
    let t = x as f32;
    if x.is_nan() || t as f64 == x {
        return t;
    }
    let mut bits = t.to_bits();
    if (t as f64).abs() > x.abs() {
        bits -= 1; // one step toward zero: the truncated value
    }
    f32::from_bits(bits | 1)
}

/// The value `x + e` (`e` an error of sign `err`, less than half an ulp of `x`) rounded to f16
/// or bf16 (`t`) in `mode`, as bits. NaN gives the canonical NaN 0x7FFF.
pub fn round_half(t: FTy, x: f64, err: Ordering, mode: Rnd) -> u64 {
    if x.is_nan() {
        return 0x7FFF;
    }
    let n = put(t, x); // x rounded to nearest, ties to even
    let nv = get(t, n);
    // The neighbours of n above and below (bit steps; ±0 and ±inf at the ends).
    let step_up = |b: u64| match b {
        0x8000 => 1,
        b if b & 0x8000 != 0 => b - 1,
        b => b + 1,
    };
    let step_down = |b: u64| match b {
        0 => 0x8001,
        b if b & 0x8000 != 0 => b + 1,
        b => b - 1,
    };
    // Sign of (exact - n).
    let side = match nv.partial_cmp(&x) {
        Some(Ordering::Equal) => err,
        Some(o) => o.reverse(),
        None => Ordering::Equal,
    };
    if nv.is_infinite() && nv == x || side == Ordering::Equal {
        return n;
    }
    let positive = x > 0.0 || (x == 0.0 && err == Ordering::Greater);
    match mode {
        Rnd::Rn => {
            if nv == x || nv.is_infinite() {
                return n; // exactly representable (err below half an ulp), or overflow
            }
            // A tie at x broken by err: the other neighbour when exact lies beyond x from n.
            let other = if side == Ordering::Greater {
                step_up(n)
            } else {
                step_down(n)
            };
            let mid = (nv + get(t, other)) / 2.0;
            let beyond = (x - mid).partial_cmp(&0.0) == Some(Ordering::Equal) && err == side;
            if beyond {
                other
            } else {
                n
            }
        }
        Rnd::Rp if side == Ordering::Greater => step_up(n),
        Rnd::Rm if side == Ordering::Less => step_down(n),
        Rnd::Rz if positive && side == Ordering::Less || !positive && side == Ordering::Greater => {
            if positive {
                step_down(n)
            } else {
                step_up(n)
            }
        }
        _ => n,
    }
}

/// Encode `x` as register bits of type `t`, rounding once to nearest (ties to even).
#[inline(always)]
pub fn put(t: FTy, x: f64) -> u64 {
    match t {
        FTy::F64 => x.to_bits(),
        FTy::F32 => (x as f32).to_bits() as u64,
        FTy::F16 => f32_to_f16(f64_to_f32_round_to_odd(x)) as u64,
        FTy::BF16 => f32_to_bf16(f64_to_f32_round_to_odd(x)) as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directed_rounding_of_f32_ops() {
        let a = 1.0f32;
        let b = 1e-8f32; // far below half an ulp of 1.0
        assert_eq!(f32_arith(FOp::Add, a, b, 0.0, Rnd::Rn), 1.0);
        assert_eq!(f32_arith(FOp::Add, a, b, 0.0, Rnd::Rp), 1.0f32.next_up());
        assert_eq!(f32_arith(FOp::Add, a, b, 0.0, Rnd::Rm), 1.0);
        assert_eq!(f32_arith(FOp::Add, a, -b, 0.0, Rnd::Rm), 1.0f32.next_down());
        assert_eq!(f32_arith(FOp::Add, a, -b, 0.0, Rnd::Rz), 1.0f32.next_down());
        assert_eq!(f32_arith(FOp::Div, 1.0, 3.0, 0.0, Rnd::Rn), 1.0f32 / 3.0);
        let down = f32_arith(FOp::Div, 1.0, 3.0, 0.0, Rnd::Rm);
        let up = f32_arith(FOp::Div, 1.0, 3.0, 0.0, Rnd::Rp);
        assert_eq!(up, down.next_up());
        assert!((down as f64) < 1.0 / 3.0 && (up as f64) > 1.0 / 3.0);
        assert_eq!(f32_arith(FOp::Sqrt, 2.0, 0.0, 0.0, Rnd::Rn), 2.0f32.sqrt());
        assert_eq!(f32_arith(FOp::Fma, 3.0, 5.0, 1.0, Rnd::Rz), 16.0);
        // Overflow rounds to MAX toward zero.
        assert_eq!(f32_arith(FOp::Mul, f32::MAX, 2.0, 0.0, Rnd::Rz), f32::MAX);
        assert_eq!(
            f32_arith(FOp::Mul, f32::MAX, 2.0, 0.0, Rnd::Rn),
            f32::INFINITY
        );
    }

    #[test]
    fn random_f32_ops_match_native_round_to_nearest() {
        let mut s = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            f32::from_bits((s >> 16) as u32 & 0x7fff_ffff | ((s & 1) << 31) as u32)
        };
        for _ in 0..20000 {
            let (a, b, c) = (next(), next(), next());
            if !(a.is_finite() && b.is_finite() && c.is_finite()) {
                continue;
            }
            let same = |x: f32, y: f32| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan());
            assert!(same(f32_arith(FOp::Add, a, b, 0.0, Rnd::Rn), a + b));
            assert!(same(f32_arith(FOp::Mul, a, b, 0.0, Rnd::Rn), a * b));
            assert!(same(f32_arith(FOp::Div, a, b, 0.0, Rnd::Rn), a / b));
            assert!(same(f32_arith(FOp::Fma, a, b, c, Rnd::Rn), a.mul_add(b, c)));
            let lo = f32_arith(FOp::Fma, a, b, c, Rnd::Rm);
            let hi = f32_arith(FOp::Fma, a, b, c, Rnd::Rp);
            if lo.is_finite() && hi.is_finite() {
                assert!(lo == hi || lo.next_up() == hi, "{a} {b} {c}");
            }
        }
    }

    #[test]
    fn f64_directed() {
        let x = f64_arith(FOp::Div, 1.0, 3.0, 0.0, Rnd::Rp);
        let y = f64_arith(FOp::Div, 1.0, 3.0, 0.0, Rnd::Rm);
        assert_eq!(y.next_up(), x);
        assert_eq!(
            f64_arith(FOp::Add, 1.0, 1e-30, 0.0, Rnd::Rp),
            1.0f64.next_up()
        );
        assert_eq!(
            f64_arith(FOp::Fma, 1.0, 1.0, 1e-30, Rnd::Rp),
            1.0f64.next_up()
        );
        assert_eq!(f64_arith(FOp::Fma, 1.0, 1.0, 1e-30, Rnd::Rn), 1.0);
    }

    /// Every positive finite f16 and bf16 `v` and its successor `w`: their midpoint rounds to
    /// the even one, and a point a hair past the midpoint (below f32's resolution, the case
    /// that double rounding through f32 gets wrong) rounds away from it. Found by a random
    /// `__hfma` whose exact result sat 2^-36 past a half-way point.
    #[test]
    fn rounding_to_f16_and_bf16_is_single_rounding() {
        for ty in [FTy::F16, FTy::BF16] {
            for bits in 1u64..0x7BFF {
                let (v, w) = (get(ty, bits), get(ty, bits + 1));
                if !w.is_finite() {
                    break;
                }
                let mid = (v + w) / 2.0;
                let hair = (w - v) * 2f64.powi(-20);
                let even = if bits & 1 == 0 { bits } else { bits + 1 };
                assert_eq!(put(ty, mid), even, "{ty:?} midpoint of {v} and {w}");
                assert_eq!(put(ty, mid + hair), bits + 1, "{ty:?} just above {mid}");
                assert_eq!(put(ty, mid - hair), bits, "{ty:?} just below {mid}");
                assert_eq!(
                    put(ty, -(mid + hair)),
                    (bits + 1) | 0x8000,
                    "{ty:?} negative"
                );
            }
        }
        // The case from the failing random test: -0.0651855… + 2^-36 rounds to -0.065246….
        let x = -0.0665283203125f64;
        let y = 0.0013761520385742188f64;
        let s = get(FTy::F16, put(FTy::F16, x + y));
        let r = get(FTy::F16, put(FTy::F16, x.mul_add(y, s)));
        assert_eq!(r, -0.06524658203125);
    }

    #[test]
    fn half_conversions() {
        for &(f, h) in &[
            (1.0f32, 0x3C00u16),
            (-2.0, 0xC000),
            (65504.0, 0x7BFF),
            (0.5, 0x3800),
        ] {
            assert_eq!(f32_to_f16(f), h);
            assert_eq!(f16_to_f32(h), f);
        }
        assert_eq!(f32_to_f16(1e6), 0x7C00);
        assert_eq!(f16_to_f32(1), 2.0f32.powi(-24));
        assert_eq!(f32_to_f16(2.0f32.powi(-24)), 1);
        assert!(f16_to_f32(0x7E00).is_nan());
        assert_eq!(f32_to_bf16(1.0), 0x3F80);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3F80_8000)), 0x3F80);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3F81_8000)), 0x3F82);
        assert_eq!(get(FTy::BF16, 0xC040), -3.0);
        for h in 0..0x7C00u16 {
            assert_eq!(f32_to_f16(f16_to_f32(h)), h);
        }
    }
}
