//! Integer intrinsics and integer arithmetic: popc/clz/brev/ffs/prmt, high and 24-bit
//! multiplies, funnel shifts, carry chains, bfe/bfi/slct/mad.hi/mul.wide/sad, division,
//! remainder and shifts in every signedness and width.

use crate::common::*;

/// Integers with many edge cases: zero, all ones, single bits, extremes.
fn edgy_u32(r: &mut Rng) -> u32 {
    match r.range_i32(0, 8) {
        0 => r.pick(&[0, 1, u32::MAX, 0x8000_0000, 0x7fff_ffff]),
        1 => 1 << r.range_i32(0, 32),
        2 => r.next_u32() >> r.range_i32(0, 32),
        _ => r.next_u32(),
    }
}

fn edgy_u64(r: &mut Rng) -> u64 {
    match r.range_i32(0, 8) {
        0 => r.pick(&[0, 1, u64::MAX, 1 << 63, i64::MAX as u64]),
        1 => 1 << r.range_i32(0, 64),
        2 => r.next_u64() >> r.range_i32(0, 64),
        _ => r.next_u64(),
    }
}

/// PTX `prmt.b32` in its default mode (the selector's bit 3 replicates the sign of the byte).
fn prmt(a: u32, b: u32, sel: u32) -> u32 {
    let bytes = ((b as u64) << 32 | a as u64).to_le_bytes();
    let mut r = 0u32;
    for k in 0..4 {
        let s = (sel >> (4 * k)) & 0xf;
        let byte = bytes[(s & 7) as usize];
        let v = if s & 8 != 0 {
            if byte & 0x80 != 0 {
                0xff
            } else {
                0
            }
        } else {
            byte
        };
        r |= (v as u32) << (8 * k);
    }
    r
}

#[test]
fn bit_intrinsics() {
    let mut c = Ctx::new("intrinsics", "bit_intrinsics");
    let n = c.rng.usize(500, 2000);
    let a: Vec<u32> = c.rng.vec(n, edgy_u32);
    let b: Vec<u64> = c.rng.vec(n, edgy_u64);
    let (pa, pb, po) = (c.upload(&a), c.upload(&b), c.zeros::<u32>(10 * n));
    c.launch(
        "bitIntrinsics",
        d1(blocks(n, 128)),
        d1(128),
        &[Arg::Ptr(pa), Arg::Ptr(pb), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let ffs32 = |x: u32| if x == 0 { 0 } else { x.trailing_zeros() + 1 };
    let ffs64 = |x: u64| if x == 0 { 0 } else { x.trailing_zeros() + 1 };
    let want: Vec<u32> = (0..n)
        .flat_map(|i| {
            let (x, y) = (a[i], b[i]);
            [
                x.count_ones(),
                y.count_ones(),
                x.leading_zeros(),
                y.leading_zeros(),
                x.reverse_bits(),
                (y.reverse_bits() >> 32) as u32,
                ffs32(x),
                ffs64(y),
                prmt(x, y as u32, ((y >> 32) as u32 & 0xffff) & 0x7777),
                prmt(x, 0x0123_4567, 0x3210 ^ (x & 0x7777)),
            ]
        })
        .collect();
    assert_exact(
        "popc/clz/brev/ffs/byte_perm",
        &c.download::<u32>(po, 10 * n),
        &want,
    );
}

#[test]
fn mul_intrinsics() {
    let mut c = Ctx::new("intrinsics", "mul_intrinsics");
    let n = c.rng.usize(500, 2000);
    let a: Vec<i32> = c.rng.vec(n, |r| edgy_u32(r) as i32);
    let b: Vec<i32> = c.rng.vec(n, |r| edgy_u32(r) as i32);
    let cc: Vec<u64> = c.rng.vec(n, edgy_u64);
    let d: Vec<u64> = c.rng.vec(n, edgy_u64);
    let (pa, pb, pc, pd) = (c.upload(&a), c.upload(&b), c.upload(&cc), c.upload(&d));
    let (po, po64) = (c.zeros::<i32>(4 * n), c.zeros::<u64>(3 * n));
    c.launch(
        "mulIntrinsics",
        d1(blocks(n, 128)),
        d1(128),
        &[
            Arg::Ptr(pa),
            Arg::Ptr(pb),
            Arg::Ptr(pc),
            Arg::Ptr(pd),
            Arg::Ptr(po),
            Arg::Ptr(po64),
            Arg::I32(n as i32),
        ],
    );
    let sext24 = |x: i32| (x << 8) >> 8;
    let want: Vec<i32> = (0..n)
        .flat_map(|i| {
            let (x, y) = (a[i], b[i]);
            [
                ((x as i64 * y as i64) >> 32) as i32,
                ((x as u32 as u64 * y as u32 as u64) >> 32) as i32,
                sext24(x).wrapping_mul(sext24(y)),
                x.wrapping_mul(y).wrapping_add(x >> 3),
            ]
        })
        .collect();
    let want64: Vec<u64> = (0..n)
        .flat_map(|i| {
            [
                ((cc[i] as u128 * d[i] as u128) >> 64) as u64,
                ((cc[i] as i64 as i128 * d[i] as i64 as i128) >> 64) as u64,
                (a[i] as i64 as u64).wrapping_mul(b[i] as u32 as u64),
            ]
        })
        .collect();
    assert_exact(
        "mulhi/umulhi/mul24/mad",
        &c.download::<i32>(po, 4 * n),
        &want,
    );
    assert_exact(
        "umul64hi/mul64hi/mul.wide",
        &c.download::<u64>(po64, 3 * n),
        &want64,
    );
}

#[test]
fn funnel_shifts() {
    let mut c = Ctx::new("intrinsics", "funnel_shifts");
    let n = c.rng.usize(500, 2000);
    let lo: Vec<u32> = c.rng.vec(n, edgy_u32);
    let hi: Vec<u32> = c.rng.vec(n, edgy_u32);
    let sh: Vec<u32> = c.rng.vec(n, |r| {
        if r.bool() {
            r.range_u32(0, 70)
        } else {
            r.next_u32()
        }
    });
    let (pl, ph, ps, po) = (
        c.upload(&lo),
        c.upload(&hi),
        c.upload(&sh),
        c.zeros::<u32>(4 * n),
    );
    c.launch(
        "funnelShifts",
        d1(blocks(n, 128)),
        d1(128),
        &[
            Arg::Ptr(pl),
            Arg::Ptr(ph),
            Arg::Ptr(ps),
            Arg::Ptr(po),
            Arg::I32(n as i32),
        ],
    );
    let want: Vec<u32> = (0..n)
        .flat_map(|i| {
            let v = (hi[i] as u64) << 32 | lo[i] as u64;
            let wrap = sh[i] & 31;
            let clamp = sh[i].min(32);
            [
                ((v << wrap) >> 32) as u32,
                (v >> wrap) as u32,
                ((v << clamp) >> 32) as u32,
                (v >> clamp) as u32,
            ]
        })
        .collect();
    assert_exact(
        "funnelshift l/r/lc/rc",
        &c.download::<u32>(po, 4 * n),
        &want,
    );
}

#[test]
fn carry_chains() {
    let mut c = Ctx::new("intrinsics", "carry_chains");
    let n = c.rng.usize(300, 1500);
    let a: Vec<u32> = c.rng.vec(4 * n, edgy_u32);
    let b: Vec<u32> = c.rng.vec(4 * n, edgy_u32);
    let (pa, pb, ps, pd) = (
        c.upload(&a),
        c.upload(&b),
        c.zeros::<u32>(5 * n),
        c.zeros::<u32>(3 * n),
    );
    c.launch(
        "carryChains",
        d1(blocks(n, 128)),
        d1(128),
        &[
            Arg::Ptr(pa),
            Arg::Ptr(pb),
            Arg::Ptr(ps),
            Arg::Ptr(pd),
            Arg::I32(n as i32),
        ],
    );
    let limbs = |v: &[u32], i: usize| -> u128 {
        (0..4).fold(0u128, |acc, k| acc | (v[4 * i + k] as u128) << (32 * k))
    };
    let mut sum = Vec::new();
    let mut diff = Vec::new();
    for i in 0..n {
        let (x, y) = (limbs(&a, i), limbs(&b, i));
        let (s, carry) = x.overflowing_add(y);
        sum.extend((0..4).map(|k| (s >> (32 * k)) as u32));
        sum.push(carry as u32);
        let (x64, y64) = (x as u64, y as u64);
        let (d, borrow) = x64.overflowing_sub(y64);
        diff.extend([
            d as u32,
            (d >> 32) as u32,
            if borrow { u32::MAX } else { 0 },
        ]);
    }
    assert_exact(
        "add.cc/addc chain (128-bit add)",
        &c.download::<u32>(ps, 5 * n),
        &sum,
    );
    assert_exact(
        "sub.cc/subc chain (64-bit sub)",
        &c.download::<u32>(pd, 3 * n),
        &diff,
    );
}

/// PTX `bfe.u32` / `bfe.s32`.
fn bfe(a: u32, pos: u32, len: u32, signed: bool) -> u32 {
    let (pos, len) = (pos & 0xff, len & 0xff);
    let sbit = if signed && len != 0 {
        (a >> (pos + len - 1).min(31)) & 1
    } else {
        0
    };
    let mut d = 0u32;
    for i in 0..32 {
        let bit = if i < len && pos + i <= 31 {
            (a >> (pos + i)) & 1
        } else {
            sbit
        };
        d |= bit << i;
    }
    d
}

/// PTX `bfi.b32 f, a, b, pos, len`: insert the low `len` bits of `a` into `b` at `pos`.
fn bfi(a: u32, b: u32, pos: u32, len: u32) -> u32 {
    let (pos, len) = (pos & 0xff, len & 0xff);
    let mut f = b;
    let mut i = 0;
    while i < len && pos + i <= 31 {
        f = (f & !(1 << (pos + i))) | (((a >> i) & 1) << (pos + i));
        i += 1;
    }
    f
}

#[test]
fn bitfield_and_mad_asm() {
    let mut c = Ctx::new("intrinsics", "bitfield_and_mad_asm");
    let n = c.rng.usize(500, 2000);
    let a: Vec<u32> = c.rng.vec(n, edgy_u32);
    let b: Vec<u32> = c.rng.vec(n, edgy_u32);
    let (pa, pb, po) = (c.upload(&a), c.upload(&b), c.zeros::<u32>(9 * n));
    c.launch(
        "bitfieldAsm",
        d1(blocks(n, 128)),
        d1(128),
        &[Arg::Ptr(pa), Arg::Ptr(pb), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let want: Vec<u32> = (0..n)
        .flat_map(|i| {
            let (x, y) = (a[i], b[i]);
            let (pos, len) = (y & 31, (y >> 8) & 31);
            let w = x as u64 * y as u64;
            [
                bfe(x, pos, len, false),
                bfe(x, pos, len, true),
                bfi(y, x, pos, len),
                if ((x ^ y) as i32) >= 0 { x } else { y },
                ((w >> 32) as u32).wrapping_add(x ^ 0x5a5a_5a5a),
                w as u32,
                (w >> 32) as u32,
                x.abs_diff(y).wrapping_add(7),
                x.wrapping_mul(y).wrapping_add(u32::MAX),
            ]
        })
        .collect();
    assert_exact(
        "bfe.u32/bfe.s32/bfi/slct/mad.hi/mul.wide/sad/mad.lo",
        &c.download::<u32>(po, 9 * n),
        &want,
    );
}

#[test]
fn integer_arithmetic() {
    let mut c = Ctx::new("intrinsics", "integer_arithmetic");
    let n = c.rng.usize(500, 2000);
    // No i32::MIN / i64::MIN (abs and MIN / -1 are undefined in C++).
    let a: Vec<i32> = c.rng.vec(n, |r| (edgy_u32(r) as i32).max(i32::MIN + 1));
    let b: Vec<i32> = c.rng.vec(n, |r| {
        if r.bool() {
            r.range_i32(-100, 100)
        } else {
            (edgy_u32(r) as i32).max(i32::MIN + 1)
        }
    });
    let p: Vec<i64> = c.rng.vec(n, |r| (edgy_u64(r) as i64).max(i64::MIN + 1));
    let q: Vec<i64> = c.rng.vec(n, |r| {
        if r.bool() {
            r.range_i64(-100, 100)
        } else {
            (edgy_u64(r) as i64).max(i64::MIN + 1)
        }
    });
    let (pa, pb, pp, pq) = (c.upload(&a), c.upload(&b), c.upload(&p), c.upload(&q));
    let (po, po64) = (c.zeros::<i32>(9 * n), c.zeros::<i64>(5 * n));
    c.launch(
        "intArith",
        d1(blocks(n, 128)),
        d1(128),
        &[
            Arg::Ptr(pa),
            Arg::Ptr(pb),
            Arg::Ptr(pp),
            Arg::Ptr(pq),
            Arg::Ptr(po),
            Arg::Ptr(po64),
            Arg::I32(n as i32),
        ],
    );
    let want: Vec<i32> = (0..n)
        .flat_map(|i| {
            let (x, y) = (a[i], b[i]);
            let nz = y != 0;
            let s = (y & 31) as u32;
            [
                if nz { x.wrapping_div(y) } else { 0 },
                if nz { x.wrapping_rem(y) } else { 0 },
                if nz {
                    ((x as u32) / (y as u32)) as i32
                } else {
                    0
                },
                if nz {
                    ((x as u32) % (y as u32)) as i32
                } else {
                    0
                },
                x >> s,
                ((x as u32) >> s) as i32,
                ((x as u32) << s) as i32,
                x.min(y) ^ x.max(y),
                x.abs().wrapping_add((x.abs_diff(y).wrapping_add(3)) as i32),
            ]
        })
        .collect();
    let want64: Vec<i64> = (0..n)
        .flat_map(|i| {
            let (x, y) = (p[i], q[i]);
            let nz = y != 0;
            let s = (y & 63) as u32;
            [
                if nz { x.wrapping_div(y) } else { 0 },
                if nz { x.wrapping_rem(y) } else { 0 },
                if nz {
                    ((x as u64) / (y as u64)) as i64
                } else {
                    0
                },
                x >> s,
                (((x as u64) << s) as i64)
                    .wrapping_add(x.abs())
                    .wrapping_add(x.min(y)),
            ]
        })
        .collect();
    assert_exact(
        "32-bit div/rem/shifts/min/max/abs/sad",
        &c.download::<i32>(po, 9 * n),
        &want,
    );
    assert_exact(
        "64-bit div/rem/shifts/abs/min",
        &c.download::<i64>(po64, 5 * n),
        &want64,
    );
}
