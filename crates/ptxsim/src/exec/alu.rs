//! Lane loops and the integer semantics of PTX.
//!
//! `un`/`bin`/`tern` apply a pure per-lane function over the 32 lanes of register slots and
//! write only the active lanes; the integer helpers implement width- and sign-aware PTX
//! semantics on `u64` register values (only the low bits of a register are meaningful).
//! Nothing here touches memory, control flow or the checker.

use crate::ir::{DotForm, Inst, IntTy, PrmtMode, VideoOp, VideoSimd};

/// The registers of one warp: one `[u64; 32]` per slot.
pub type Regs = [[u64; 32]];

// The lane loops borrow the destination slot mutably and the sources immutably when they are
// distinct slots (so that the loops vectorise); when the destination is also a source, the
// sources are copied first.

/// Borrow slot `d` mutably and slots `srcs` immutably; `None` if `d` is one of `srcs` (or any
/// index is out of range).
#[inline(always)]
fn split<const N: usize>(
    regs: &mut Regs,
    d: usize,
    srcs: [usize; N],
) -> Option<(&mut [u64; 32], [&[u64; 32]; N])> {
    let n = regs.len();
    let mut ok = d < n;
    for &s in &srcs {
        ok &= s != d && s < n;
    }
    if !ok {
        return None;
    }
    let (lo, hi) = regs.split_at_mut(d);
    let (dr, rest) = hi.split_first_mut()?;
    let (lo, rest): (&[[u64; 32]], &[[u64; 32]]) = (lo, rest);
    static ZERO: [u64; 32] = [0; 32];
    let mut out: [&[u64; 32]; N] = [&ZERO; N];
    for k in 0..N {
        let s = srcs[k];
        out[k] = if s < d { &lo[s] } else { &rest[s - d - 1] };
    }
    Some((dr, out))
}

/// Write `f(l)` into the active lanes `m` of `d` (a loop the compiler vectorises).
#[inline(always)]
pub fn write<F: Fn(usize) -> u64>(d: &mut [u64; 32], m: u32, f: F) {
    if m == u32::MAX {
        for (l, x) in d.iter_mut().enumerate() {
            *x = f(l);
        }
    } else {
        for (l, x) in d.iter_mut().enumerate() {
            let v = f(l);
            if (m >> l) & 1 != 0 {
                *x = v;
            }
        }
    }
}

#[inline(always)]
pub fn un(regs: &mut Regs, i: &Inst, m: u32, f: impl Fn(u64) -> u64) {
    let (d, a) = (i.r[0] as usize, i.r[1] as usize);
    if let Some((dr, [ar])) = split(regs, d, [a]) {
        write(dr, m, |l| f(ar[l]));
    } else if let Some(x) = regs.get(a).copied() {
        if let Some(dr) = regs.get_mut(d) {
            write(dr, m, |l| f(x[l]));
        }
    }
}

#[inline(always)]
pub fn bin(regs: &mut Regs, i: &Inst, m: u32, f: impl Fn(u64, u64) -> u64) {
    let (d, a, b) = (i.r[0] as usize, i.r[1] as usize, i.r[2] as usize);
    if let Some((dr, [ar, br])) = split(regs, d, [a, b]) {
        write(dr, m, |l| f(ar[l], br[l]));
    } else if let (Some(x), Some(y)) = (regs.get(a).copied(), regs.get(b).copied()) {
        if let Some(dr) = regs.get_mut(d) {
            write(dr, m, |l| f(x[l], y[l]));
        }
    }
}

#[inline(always)]
pub fn tern(regs: &mut Regs, i: &Inst, m: u32, f: impl Fn(u64, u64, u64) -> u64) {
    let (d, a, b, c) = (
        i.r[0] as usize,
        i.r[1] as usize,
        i.r[2] as usize,
        i.r[3] as usize,
    );
    if let Some((dr, [ar, br, cr])) = split(regs, d, [a, b, c]) {
        write(dr, m, |l| f(ar[l], br[l], cr[l]));
    } else if let (Some(x), Some(y), Some(z)) = (
        regs.get(a).copied(),
        regs.get(b).copied(),
        regs.get(c).copied(),
    ) {
        if let Some(dr) = regs.get_mut(d) {
            write(dr, m, |l| f(x[l], y[l], z[l]));
        }
    }
}

/// Per-lane loop for active lanes only (for costly or stateful bodies).
#[inline(always)]
pub fn each(m: u32, mut f: impl FnMut(usize)) {
    let mut mm = m;
    while mm != 0 {
        let l = mm.trailing_zeros() as usize;
        f(l);
        mm &= mm - 1;
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

pub fn mul_hi(a: u64, b: u64, t: IntTy) -> u64 {
    let p = ext(a, t).wrapping_mul(ext(b, t));
    (p >> t.bits) as u64
}

pub fn mul_wide(a: u64, b: u64, t: IntTy) -> u64 {
    ext(a, t).wrapping_mul(ext(b, t)) as u64
}

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

#[inline(always)]
pub fn shl(a: u64, b: u64, bits: u8) -> u64 {
    let s = b as u32;
    if s >= bits as u32 {
        0
    } else {
        a << s
    }
}

#[inline(always)]
pub fn shr(a: u64, b: u64, t: IntTy) -> u64 {
    let s = b as u32;
    if t.signed {
        (sext(a, t.bits) >> s.min(t.bits as u32 - 1).min(63)) as u64
    } else if s >= t.bits as u32 {
        0
    } else {
        zext(a, t.bits) >> s
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    const S32: IntTy = IntTy {
        bits: 32,
        signed: true,
    };
    const U32: IntTy = IntTy {
        bits: 32,
        signed: false,
    };

    #[test]
    fn integer_semantics() {
        assert_eq!(div(7, 0, U32), u64::MAX);
        assert_eq!(div((-7i64) as u64, 2, S32) as u32, (-3i32) as u32);
        assert_eq!(div(i32::MIN as u64, u64::MAX, S32) as u32, i32::MIN as u32);
        assert_eq!(rem((-7i64) as u64, 2, S32) as u32, (-1i32) as u32);
        assert_eq!(mul_hi(0xFFFF_FFFF, 0xFFFF_FFFF, U32) as u32, 0xFFFF_FFFE);
        assert_eq!(mul_hi((-1i64) as u64, (-1i64) as u64, S32) as u32, 0);
        assert_eq!(mul_wide((-3i64) as u64, 5, S32), (-15i64) as u64);
        assert_eq!(shr(0x8000_0000, 40, S32) as u32, 0xFFFF_FFFF);
        assert_eq!(shr(0x8000_0000, 40, U32), 0);
        assert_eq!(shl(1, 32, 32) as u32, 0);
        assert_eq!(bfe(0xF0, 4, 4, U32), 0xF);
        assert_eq!(bfe(0xF0, 4, 4, S32) as u32, 0xFFFF_FFFF);
        assert_eq!(bfi(0xF, 0, 8, 4, 32), 0xF00);
        assert_eq!(bfind(0x10, U32, false), 4);
        assert_eq!(bfind(0, U32, false), 0xFFFF_FFFF);
        assert_eq!(bfind(0x10, U32, true), 27);
        assert_eq!(
            prmt(0x4433_2211, 0x8877_6655, 0x3210, PrmtMode::Default),
            0x4433_2211
        );
        assert_eq!(
            prmt(0x4433_2211, 0x8877_6655, 0x7654, PrmtMode::Default),
            0x8877_6655
        );
        assert_eq!(prmt(0x0000_0080, 0, 0x4448, PrmtMode::Default), 0xFF);
        assert_eq!(shf(0x8000_0000, 0x1, 1, true, true), 0x3);
        assert_eq!(shf(0x1, 0x1, 1, false, true), 0x8000_0000);
        assert_eq!(
            carry(0xFFFF_FFFF, 1, 0, 0, 32, false, false, false),
            (0x1_0000_0000, 1)
        );
        assert_eq!(carry(0, 1, 0, 0, 32, true, false, false).1, 1);
        assert_eq!(
            dot(DotForm::Four, 0x0102_0304, 0x0101_0101, 10, false, false),
            20
        );
        // dp2a: a = (hi 3, lo -2 as 16 bits), b bytes (lo pair 5, 7; hi pair -1, 2).
        let (a, b) = (0x0003_FFFE, 0x02FF_0705);
        assert_eq!(
            dot(DotForm::Two { hi: false }, a, b, 1, true, true),
            (1 - 10 + 21) as u64
        );
        assert_eq!(
            dot(DotForm::Two { hi: true }, a, b, 1, true, true),
            (1 + 2 + 6) as u64
        );
        // Unsigned a reads 0xFFFE as 65534; the sum wraps to 32 bits.
        assert_eq!(
            dot(DotForm::Two { hi: false }, a, b, 0, false, false),
            65534 * 5 + 3 * 7
        );
        assert_eq!(
            dot(DotForm::Four, 0, 0, 0xFFFF_FFFF, true, true),
            0xFFFF_FFFF
        );
        assert_eq!(
            norm(
                0xC8,
                IntTy {
                    bits: 8,
                    signed: true
                }
            ) as i64,
            -56
        );
    }

    #[test]
    fn simd_video() {
        let v = |op, lanes, signed: bool, sat, add| VideoSimd {
            op,
            lanes,
            a_signed: signed,
            b_signed: signed,
            d_signed: signed,
            sat,
            add,
            relu: false,
        };
        // |a - b| per byte, unsigned: bytes (10,200,0,255) vs (20,100,255,255).
        let (a, b) = (0xFF00_C80A, 0xFFFF_6414);
        let absdiff = v(VideoOp::AbsDiff, 4, false, false, false);
        assert_eq!(video(absdiff, a, b, 0), 0x00FF_640A);
        let sad = VideoSimd {
            add: true,
            ..absdiff
        };
        assert_eq!(video(sad, a, b, 7), 7 + 10 + 100 + 255);
        // Halves, signed: (-3, 5) + (2, 32767) saturates the high half at 32767.
        let (a, b) = (0x0005_FFFD, 0x7FFF_0002);
        assert_eq!(
            video(v(VideoOp::Add, 2, true, true, false), a, b, 0),
            0x7FFF_FFFF
        );
        // Without .sat the high half wraps: 5 + 32767 = 0x8004.
        assert_eq!(
            video(v(VideoOp::Add, 2, true, false, false), a, b, 0),
            0x8004_FFFF
        );
        // Unsigned subtraction saturates at 0; rounded average; min and max.
        let (a, b) = (0x0102_0304, 0x0201_0403);
        assert_eq!(
            video(v(VideoOp::Sub, 4, false, true, false), a, b, 0),
            0x0001_0001
        );
        assert_eq!(
            video(v(VideoOp::Avrg, 4, false, false, false), a, b, 0),
            0x0202_0404
        );
        let (a, b) = (0x80FF_0102, 0x7F01_0201);
        assert_eq!(
            video(v(VideoOp::Min, 4, true, false, false), a, b, 0),
            0x80FF_0101
        );
        assert_eq!(
            video(v(VideoOp::Max, 4, true, false, false), a, b, 0),
            0x7F01_0202
        );
    }

    #[test]
    fn integer_pairs_and_fns() {
        let pair = VideoSimd::pair;
        // add.u16x2 wraps per half: (0xFFFF + 2, 1 + 3).
        assert_eq!(
            video(
                pair(VideoOp::Add, false, false),
                0x0001_FFFF,
                0x0003_0002,
                0
            ),
            0x0004_0001
        );
        // max.s16x2 vs max.u16x2 on (-1, 5) and (3, 2); max.relu.s16x2 of (-7, -1) and (-2, 4).
        assert_eq!(
            video(pair(VideoOp::Max, true, false), 0x0005_FFFF, 0x0002_0003, 0),
            0x0005_0003
        );
        assert_eq!(
            video(
                pair(VideoOp::Max, false, false),
                0x0005_FFFF,
                0x0002_0003,
                0
            ),
            0x0005_FFFF
        );
        assert_eq!(
            video(pair(VideoOp::Max, true, true), 0xFFFF_FFF9, 0x0004_FFFE, 0),
            0x0004_0000
        );
        // fns: bits 1, 4, 6 set.
        let m = 0b101_0010;
        assert_eq!(fns(m, 0, 1), 1);
        assert_eq!(fns(m, 0, 3), 6);
        assert_eq!(fns(m, 0, 4), 0xFFFF_FFFF);
        assert_eq!(fns(m, 5, -1i32 as u32 as u64), 4);
        assert_eq!(fns(m, 31, -3i32 as u32 as u64), 1);
        assert_eq!(fns(m, 4, 0), 4);
        assert_eq!(fns(m, 5, 0), 0xFFFF_FFFF);
        assert_eq!(fns(m, 40, 1), 0xFFFF_FFFF);
    }
}
