//! Integer arithmetic of PTX on `u64` register values: only the low bits of a register are
//! meaningful, and each function reads and writes them width- and sign-aware.
//!
//! Pure functions of values; the interpreter's lane loops, the block tier, the JIT's tests and
//! the lowering's constant folding call them. No registers, warps, memory or reports here.

use crate::ir::IntTy;

/// `add` (any integer width: the low bits of the wrapping sum).
#[inline(always)]
pub fn add(a: u64, b: u64) -> u64 {
    a.wrapping_add(b)
}

/// `sub`.
#[inline(always)]
pub fn sub(a: u64, b: u64) -> u64 {
    a.wrapping_sub(b)
}

/// `mul.lo`.
#[inline(always)]
pub fn mul_lo(a: u64, b: u64) -> u64 {
    a.wrapping_mul(b)
}

/// `mad.lo`.
#[inline(always)]
pub fn mad_lo(a: u64, b: u64, c: u64) -> u64 {
    a.wrapping_mul(b).wrapping_add(c)
}

/// `neg`.
#[inline(always)]
pub fn neg(a: u64) -> u64 {
    a.wrapping_neg()
}

/// `mad.hi`.
#[inline(always)]
pub fn mad_hi(a: u64, b: u64, c: u64, t: IntTy) -> u64 {
    mul_hi(a, b, t).wrapping_add(c)
}

/// `mad.wide`.
#[inline(always)]
pub fn mad_wide(a: u64, b: u64, c: u64, t: IntTy) -> u64 {
    mul_wide(a, b, t).wrapping_add(c)
}

/// `abs` (`INT_MIN` stays `INT_MIN`).
#[inline(always)]
pub fn abs(a: u64, t: IntTy) -> u64 {
    sext(a, t.bits).wrapping_abs() as u64
}

/// `add.sat.s32`.
#[inline(always)]
pub fn add_sat(a: u64, b: u64) -> u64 {
    (a as i32).saturating_add(b as i32) as u64
}

/// `sub.sat.s32`.
#[inline(always)]
pub fn sub_sat(a: u64, b: u64) -> u64 {
    (a as i32).saturating_sub(b as i32) as u64
}

/// `sad`: `|a - b| + c`.
#[inline(always)]
pub fn sad(a: u64, b: u64, c: u64, t: IntTy) -> u64 {
    let d = (ext(a, t) - ext(b, t)).unsigned_abs() as u64;
    d.wrapping_add(c)
}

/// `mad24`.
#[inline(always)]
pub fn mad24(a: u64, b: u64, c: u64, hi: bool, signed: bool) -> u64 {
    mul24(a, b, hi, signed).wrapping_add(c)
}

/// `selp`: `a` where the predicate `c` is set, else `b`.
#[inline(always)]
pub fn selp(a: u64, b: u64, c: u64) -> u64 {
    if c & 1 != 0 {
        a
    } else {
        b
    }
}

/// Sign-extend the low `bits` bits.
#[inline(always)]
pub fn sext(x: u64, bits: u8) -> i64 {
    let s = 64 - bits as u32;
    ((x << s) as i64) >> s
}

/// Zero-extend the low `bits` bits.
#[inline(always)]
pub fn zext(x: u64, bits: u8) -> u64 {
    let s = 64 - bits as u32;
    (x << s) >> s
}

/// The value of an integer register as i128 (sign- or zero-extended per `t`).
#[inline(always)]
pub fn ext(x: u64, t: IntTy) -> i128 {
    if t.bits == 1 {
        return (x & 1) as i128;
    }
    if t.signed {
        sext(x, t.bits) as i128
    } else {
        zext(x, t.bits) as i128
    }
}

/// Normalise a value to type `t` (truncate, then sign- or zero-extend).
#[inline(always)]
pub fn norm(x: u64, t: IntTy) -> u64 {
    if t.signed {
        sext(x, t.bits) as u64
    } else {
        zext(x, t.bits)
    }
}

/// `mul.hi`: the high half of the full product.
pub fn mul_hi(a: u64, b: u64, t: IntTy) -> u64 {
    let p = ext(a, t).wrapping_mul(ext(b, t));
    (p >> t.bits) as u64
}

/// `mul.wide`: the full product of two `t` values (twice `t`'s width).
#[inline(always)]
pub fn mul_wide(a: u64, b: u64, t: IntTy) -> u64 {
    // 32-bit operands in 64-bit arithmetic (no i128), so that lane loops over them vectorise.
    match (t.bits, t.signed) {
        (32, false) => (a as u32 as u64) * (b as u32 as u64),
        (32, true) => ((a as i32 as i64) * (b as i32 as i64)) as u64,
        _ => ext(a, t).wrapping_mul(ext(b, t)) as u64,
    }
}

/// `div`: a zero divisor gives all ones; `INT_MIN / -1` wraps.
pub fn div(a: u64, b: u64, t: IntTy) -> u64 {
    if t.signed {
        let (x, y) = (sext(a, t.bits), sext(b, t.bits));
        if y == 0 {
            return u64::MAX;
        }
        x.wrapping_div(y) as u64
    } else {
        let (x, y) = (zext(a, t.bits), zext(b, t.bits));
        if y == 0 {
            return u64::MAX;
        }
        x / y
    }
}

/// `rem`: a zero divisor gives all ones.
pub fn rem(a: u64, b: u64, t: IntTy) -> u64 {
    if t.signed {
        let (x, y) = (sext(a, t.bits), sext(b, t.bits));
        if y == 0 {
            return u64::MAX;
        }
        x.wrapping_rem(y) as u64
    } else {
        let (x, y) = (zext(a, t.bits), zext(b, t.bits));
        if y == 0 {
            return u64::MAX;
        }
        x % y
    }
}

#[inline(always)]
pub fn min(a: u64, b: u64, t: IntTy) -> u64 {
    if t.signed {
        if sext(a, t.bits) <= sext(b, t.bits) {
            a
        } else {
            b
        }
    } else if zext(a, t.bits) <= zext(b, t.bits) {
        a
    } else {
        b
    }
}

#[inline(always)]
pub fn max(a: u64, b: u64, t: IntTy) -> u64 {
    if t.signed {
        if sext(a, t.bits) >= sext(b, t.bits) {
            a
        } else {
            b
        }
    } else if zext(a, t.bits) >= zext(b, t.bits) {
        a
    } else {
        b
    }
}

/// Carry-chain arithmetic: returns (result, carry out).
#[allow(clippy::too_many_arguments)]
pub fn carry(
    a: u64,
    b: u64,
    c: u64,
    cin: u64,
    bits: u8,
    sub: bool,
    mad: bool,
    hi: bool,
) -> (u64, u64) {
    let (x, y, z) = (
        zext(a, bits) as u128,
        zext(b, bits) as u128,
        zext(c, bits) as u128,
    );
    let cin = (cin & 1) as u128;
    if sub {
        let s = (x as i128) - (y as i128) - (cin as i128);
        return (s as u64, (s < 0) as u64);
    }
    let base = if mad {
        let p = x * y;
        if hi {
            p >> bits
        } else {
            p & ((1u128 << bits) - 1)
        }
    } else {
        x
    };
    let addend = if mad { z } else { y };
    let s = base + addend + cin;
    (s as u64, ((s >> bits) & 1) as u64)
}

/// `mul24.lo` / `mul24.hi`: the product of the low 24 bits of each operand.
pub fn mul24(a: u64, b: u64, hi: bool, signed: bool) -> u64 {
    let (x, y) = if signed {
        (sext(a, 24), sext(b, 24))
    } else {
        (zext(a, 24) as i64, zext(b, 24) as i64)
    };
    let p = x.wrapping_mul(y) as u64;
    if hi {
        p >> 16
    } else {
        p
    }
}
