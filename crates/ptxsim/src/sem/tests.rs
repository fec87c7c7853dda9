//! Unit tests of the semantics with hand-computed values.

use std::cmp::Ordering;

use super::address::*;
use super::atomic::*;
use super::bits::*;
use super::compare::*;
use super::convert::*;
use super::float::*;
use super::int::*;
use super::simd::*;
use crate::ir::*;
use crate::mem::SHARED_WIN;

#[test]
fn integer_semantics() {
    assert_eq!(div(7, 0, IntTy::U32), u64::MAX);
    assert_eq!(div((-7i64) as u64, 2, IntTy::S32) as u32, (-3i32) as u32);
    assert_eq!(
        div(i32::MIN as u64, u64::MAX, IntTy::S32) as u32,
        i32::MIN as u32
    );
    assert_eq!(rem((-7i64) as u64, 2, IntTy::S32) as u32, (-1i32) as u32);
    assert_eq!(
        mul_hi(0xFFFF_FFFF, 0xFFFF_FFFF, IntTy::U32) as u32,
        0xFFFF_FFFE
    );
    assert_eq!(mul_hi((-1i64) as u64, (-1i64) as u64, IntTy::S32) as u32, 0);
    assert_eq!(mul_wide((-3i64) as u64, 5, IntTy::S32), (-15i64) as u64);
    assert_eq!(shr(0x8000_0000, 40, IntTy::S32) as u32, 0xFFFF_FFFF);
    assert_eq!(shr(0x8000_0000, 40, IntTy::U32), 0);
    assert_eq!(shl(1, 32, 32) as u32, 0);
    assert_eq!(bfe(0xF0, 4, 4, IntTy::U32), 0xF);
    assert_eq!(bfe(0xF0, 4, 4, IntTy::S32) as u32, 0xFFFF_FFFF);
    assert_eq!(bfi(0xF, 0, 8, 4, 32), 0xF00);
    assert_eq!(bfind(0x10, IntTy::U32, false), 4);
    assert_eq!(bfind(0, IntTy::U32, false), 0xFFFF_FFFF);
    assert_eq!(bfind(0x10, IntTy::U32, true), 27);
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

#[test]
fn atomic_semantics() {
    let u = AtomKind::U;
    assert_eq!(atom_apply(AtomOp::Inc, 32, u, 5, 5, 0), 0);
    assert_eq!(atom_apply(AtomOp::Inc, 32, u, 4, 5, 0), 5);
    assert_eq!(atom_apply(AtomOp::Dec, 32, u, 0, 7, 0), 7);
    assert_eq!(atom_apply(AtomOp::Dec, 32, u, 9, 7, 0), 7);
    assert_eq!(atom_apply(AtomOp::Dec, 32, u, 3, 7, 0), 2);
    assert_eq!(atom_apply(AtomOp::Cas, 32, u, 3, 3, 9), 9);
    assert_eq!(atom_apply(AtomOp::Cas, 32, u, 4, 3, 9), 4);
    assert_eq!(
        atom_apply(
            AtomOp::Max,
            32,
            AtomKind::S,
            (-5i64) as u64 & 0xFFFF_FFFF,
            2,
            0
        ),
        2
    );
    assert_eq!(
        atom_apply(AtomOp::Min, 32, AtomKind::S, 2, (-5i64) as u64, 0),
        0xFFFF_FFFB
    );
    assert_eq!(
        atom_apply(
            AtomOp::Add,
            32,
            AtomKind::F,
            1.5f32.to_bits() as u64,
            2.0f32.to_bits() as u64,
            0
        ),
        3.5f32.to_bits() as u64
    );
    assert!(in_space(SHARED_WIN + 4, MemSpace::Shared));
    assert!(!in_space(SHARED_WIN + 4, MemSpace::Global));
}
