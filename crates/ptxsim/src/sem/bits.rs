//! Bit operations of PTX on `u64` register values: shifts, bit fields, bit counts, byte
//! permutes, funnel shifts, `lop3`, `bmsk`, `szext`, `fns`.
//!
//! Pure functions of values (see `sem`). No registers, warps, memory or reports here.

use super::int::{sext, zext};
use crate::ir::{IntTy, PrmtMode};

/// `not`.
#[inline(always)]
pub fn not(a: u64) -> u64 {
    !a
}

/// `not.pred`.
#[inline(always)]
pub fn pnot(a: u64) -> u64 {
    (a & 1) ^ 1
}

/// `cnot`: 1 where the value is 0, else 0.
#[inline(always)]
pub fn cnot(a: u64, bits: u8) -> u64 {
    (zext(a, bits) == 0) as u64
}

/// `popc`.
#[inline(always)]
pub fn popc(a: u64, bits: u8) -> u64 {
    zext(a, bits).count_ones() as u64
}

/// `clz`.
#[inline(always)]
pub fn clz(a: u64, bits: u8) -> u64 {
    (zext(a, bits).leading_zeros() - (64 - bits as u32)) as u64
}

/// `brev`.
#[inline(always)]
pub fn brev(a: u64, bits: u8) -> u64 {
    a.reverse_bits() >> (64 - bits as u32)
}

/// `lop3`: the bitwise function of a, b and c whose truth table is `lut`.
#[inline(always)]
pub fn lop3(a: u64, b: u64, c: u64, lut: u8) -> u64 {
    let mut r = 0u64;
    for k in 0..8 {
        if (lut >> k) & 1 != 0 {
            let x = if k & 4 != 0 { a } else { !a };
            let y = if k & 2 != 0 { b } else { !b };
            let z = if k & 1 != 0 { c } else { !c };
            r |= x & y & z;
        }
    }
    r
}

/// `bmsk.b32`: `len` ones from bit `pos`, wrapped or clamped.
#[inline(always)]
pub fn bmsk(a: u64, b: u64, wrap: bool) -> u64 {
    let (mut pos, mut len) = (a as u32, b as u32);
    if wrap {
        pos &= 31;
        len &= 31;
    } else {
        pos = pos.min(32);
        len = len.min(32);
    }
    let ones = if len >= 32 {
        u64::MAX
    } else {
        (1u64 << len) - 1
    };
    ((ones << pos) & 0xFFFF_FFFF) as u32 as u64
}

/// `szext.b32`: the low `b` bits of `a`, sign- or zero-extended to 32 bits.
#[inline(always)]
pub fn szext(a: u64, b: u64, signed: bool, wrap: bool) -> u64 {
    let n = if wrap {
        b as u32 & 31
    } else {
        (b as u32).min(32)
    };
    if n == 0 {
        return 0;
    }
    let x = a as u32 as u64;
    if signed {
        sext(x, n as u8) as u32 as u64
    } else {
        zext(x, n as u8)
    }
}

/// `shl`: a shift by the width or more gives 0.
#[inline(always)]
pub fn shl(a: u64, b: u64, bits: u8) -> u64 {
    let s = b as u32;
    if s >= bits as u32 {
        0
    } else {
        a << s
    }
}

/// `shr`: arithmetic for signed types (a long shift gives the sign), logical otherwise.
#[inline(always)]
pub fn shr(a: u64, b: u64, t: IntTy) -> u64 {
    let s = b as u32;
    // 32-bit types in 32-bit arithmetic, so that lane loops over them vectorise (AVX2 has no
    // 64-bit arithmetic shift).
    match (t.bits, t.signed) {
        (32, false) => return if s >= 32 { 0 } else { (a as u32 >> s) as u64 },
        (32, true) => return ((a as i32) >> s.min(31)) as i64 as u64,
        _ => {}
    }
    if t.signed {
        (sext(a, t.bits) >> s.min(t.bits as u32 - 1).min(63)) as u64
    } else if s >= t.bits as u32 {
        0
    } else {
        zext(a, t.bits) >> s
    }
}

/// `bfind`: the position of the most significant non-sign bit; all ones if there is none.
pub fn bfind(a: u64, t: IntTy, shiftamt: bool) -> u64 {
    let x = zext(a, t.bits);
    let v = if t.signed && sext(a, t.bits) < 0 {
        zext(!x, t.bits)
    } else {
        x
    };
    if v == 0 {
        return 0xFFFF_FFFF;
    }
    let msb = 63 - v.leading_zeros() as u64;
    if shiftamt {
        t.bits as u64 - 1 - msb
    } else {
        msb
    }
}

/// `bfe`: `len` bits of `a` from `pos`, sign-extended from the field for signed types.
pub fn bfe(a: u64, pos: u64, len: u64, t: IntTy) -> u64 {
    let msb = t.bits as u64 - 1;
    let pos = pos & 0xFF;
    let len = len & 0xFF;
    let x = zext(a, t.bits);
    let sbit = if !t.signed || len == 0 {
        0
    } else {
        (x >> (pos + len - 1).min(msb)) & 1
    };
    let mut d = 0u64;
    for i in 0..=msb {
        let bit = if i < len && pos + i <= msb {
            (x >> (pos + i)) & 1
        } else {
            sbit
        };
        d |= bit << i;
    }
    d
}

/// `bfi`: `len` low bits of `f` inserted into `b` at `pos`.
pub fn bfi(f: u64, b: u64, pos: u64, len: u64, bits: u8) -> u64 {
    let msb = bits as u64 - 1;
    let pos = pos & 0xFF;
    let len = len & 0xFF;
    let mut d = b;
    let mut i = 0;
    while i < len && pos + i <= msb {
        let bit = (f >> i) & 1;
        d = (d & !(1 << (pos + i))) | (bit << (pos + i));
        i += 1;
    }
    d
}

/// `prmt`: bytes picked from the pair (b, a) by the selector `c` in `mode`.
pub fn prmt(a: u64, b: u64, c: u64, mode: PrmtMode) -> u64 {
    let bytes = ((b as u32 as u64) << 32) | (a as u32 as u64);
    let byte = |k: u64| (bytes >> (8 * (k & 7))) & 0xFF;
    let sel = c as u32;
    let pick = |s: u32| -> u64 {
        let v = byte(s as u64);
        if s & 8 != 0 {
            if v & 0x80 != 0 {
                0xFF
            } else {
                0
            }
        } else {
            v
        }
    };
    let idx: [u32; 4] = match mode {
        PrmtMode::Default => {
            let mut d = 0;
            for i in 0..4 {
                d |= pick((sel >> (4 * i)) & 0xF) << (8 * i);
            }
            return d;
        }
        PrmtMode::F4e => {
            let s = sel & 3;
            [s, s + 1, s + 2, s + 3]
        }
        PrmtMode::B4e => {
            let s = sel & 3;
            [s, (s + 7) & 7, (s + 6) & 7, (s + 5) & 7]
        }
        PrmtMode::Rc8 => {
            let s = sel & 3;
            [s, s, s, s]
        }
        PrmtMode::Ecl => {
            let s = sel & 3;
            [s, s.max(1), s.max(2), 3]
        }
        PrmtMode::Ecr => {
            let s = sel & 3;
            [0, s.min(1), s.min(2), s]
        }
        PrmtMode::Rc16 => {
            let s = sel & 1;
            [2 * s, 2 * s + 1, 2 * s, 2 * s + 1]
        }
    };
    let mut d = 0;
    for (i, &k) in idx.iter().enumerate() {
        d |= byte(k as u64 & 7) << (8 * i);
    }
    d
}

/// `shf.l` / `shf.r`: a funnel shift of the pair (b, a), wrapped or clamped.
pub fn shf(a: u64, b: u64, c: u64, left: bool, wrap: bool) -> u64 {
    let n = if wrap {
        c as u32 & 31
    } else {
        (c as u32).min(32)
    };
    let x = ((b as u32 as u64) << 32) | (a as u32 as u64);
    if left {
        ((x << n) >> 32) & 0xFFFF_FFFF
    } else {
        (x >> n) & 0xFFFF_FFFF
    }
}

/// `fns.b32`: see [`crate::ir::Op::Fns`].
pub fn fns(mask: u64, base: u64, offset: u64) -> u64 {
    let (mask, base, offset) = (mask as u32, base as u32 as i64, offset as u32 as i32);
    let bit = |p: i64| (0..32).contains(&p) && mask >> p & 1 == 1;
    if offset == 0 {
        return if bit(base) { base as u64 } else { 0xFFFF_FFFF };
    }
    let step = if offset > 0 { 1 } else { -1 };
    let mut count = offset.unsigned_abs() - 1;
    let mut p = base;
    while (0..32).contains(&p) {
        if bit(p) {
            if count == 0 {
                return p as u64;
            }
            count -= 1;
        }
        p += step;
    }
    0xFFFF_FFFF
}
