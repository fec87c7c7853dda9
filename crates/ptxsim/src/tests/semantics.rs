//! Instruction semantics NVRTC rarely emits, on hand-written PTX: every rounding mode of `cvt`
//! and of arithmetic, saturation, unordered comparisons, carry chains, bit manipulation,
//! division by zero, f16 conversions. Each case runs one thread per input and compares with a
//! Rust reference.

use super::util::*;
use crate::*;

/// Run `body` for each input triple; the body reads `%a %b %c` (b64), `%fa %fb %fc` (f32,
/// low halves), `%da %db %dc` (f64), `%ia %ib %ic` (b32) and writes up to 8 results to
/// `%o0..%o7` (b64). Returns the outputs per input.
fn eval(body: &str, inputs: &[[u64; 3]]) -> Vec<[u64; 8]> {
    let ptx = format!(
        r#"
.version 8.0
.target sm_80
.address_size 64
.visible .entry t(.param .u64 po, .param .u64 pi)
{{
    .reg .b64 %a, %b, %c, %o<8>, %p64, %q64;
    .reg .b32 %ia, %ib, %ic, %r<16>, %tid;
    .reg .f32 %fa, %fb, %fc, %f<16>;
    .reg .f64 %da, %db, %dc, %d<16>;
    .reg .pred %p<8>;
    .reg .b16 %h<8>;
    mov.u32 %tid, %tid.x;
    ld.param.u64 %p64, [pi];
    mul.wide.u32 %q64, %tid, 32;
    add.u64 %p64, %p64, %q64;
    ld.global.v2.u64 {{%a, %b}}, [%p64];
    ld.global.u64 %c, [%p64+16];
    cvt.u32.u64 %ia, %a;
    cvt.u32.u64 %ib, %b;
    cvt.u32.u64 %ic, %c;
    mov.b32 %fa, %ia;
    mov.b32 %fb, %ib;
    mov.b32 %fc, %ic;
    mov.b64 %da, %a;
    mov.b64 %db, %b;
    mov.b64 %dc, %c;
    mov.u64 %o0, 0; mov.u64 %o1, 0; mov.u64 %o2, 0; mov.u64 %o3, 0;
    mov.u64 %o4, 0; mov.u64 %o5, 0; mov.u64 %o6, 0; mov.u64 %o7, 0;
{body}
    ld.param.u64 %p64, [po];
    mul.wide.u32 %q64, %tid, 64;
    add.u64 %p64, %p64, %q64;
    st.global.v2.u64 [%p64], {{%o0, %o1}};
    st.global.v2.u64 [%p64+16], {{%o2, %o3}};
    st.global.v2.u64 [%p64+32], {{%o4, %o5}};
    st.global.v2.u64 [%p64+48], {{%o6, %o7}};
    ret;
}}
"#
    );
    let dev = Device::new();
    let m = dev
        .load_module(&ptx)
        .unwrap_or_else(|e| panic!("{e}\n{ptx}"));
    let n = inputs.len();
    let bytes: Vec<u8> = inputs
        .iter()
        .flat_map(|t| [t[0], t[1], t[2], 0])
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let pi = dev.alloc(bytes.len()).unwrap();
    dev.write(pi, 0, &bytes).unwrap();
    let po = dev.alloc(n * 64).unwrap();
    run(
        &dev,
        &m,
        "t",
        (1, 1, 1),
        (n as u32, 1, 1),
        &[&p64(po), &p64(pi)],
    );
    let mut out = vec![0u8; n * 64];
    dev.read(po, 0, &mut out).unwrap();
    out.chunks(64)
        .map(|c| {
            let mut r = [0u64; 8];
            for (k, x) in r.iter_mut().enumerate() {
                *x = u64::from_le_bytes(c[k * 8..k * 8 + 8].try_into().unwrap());
            }
            r
        })
        .collect()
}

fn f(x: f32) -> u64 {
    x.to_bits() as u64
}
fn d(x: f64) -> u64 {
    x.to_bits()
}

/// shr.u32 and shr.s32 with shift amounts at and past the width: PTX clamps the amount, so
/// logical shifts give 0 and arithmetic shifts give the sign fill.
#[test]
fn shr_32_bit_clamps_the_shift_amount() {
    let values = [0x8000_0001u32, 0xFFFF_FFFF, 5, 0x7FFF_FFFF];
    let shifts = [0u32, 1, 31, 32, 33, 100, u32::MAX];
    let mut inputs = Vec::new();
    for &v in &values {
        for &s in &shifts {
            inputs.push([v as u64, s as u64, 0]);
        }
    }
    let out = eval(
        r#"
    shr.u32 %r1, %ia, %ib; shr.s32 %r2, %ia, %ib;
    cvt.u64.u32 %o0, %r1; cvt.s64.s32 %o1, %r2;
"#,
        &inputs,
    );
    for (k, inp) in inputs.iter().enumerate() {
        let (v, s) = (inp[0] as u32, inp[1] as u32);
        let want_u = if s >= 32 { 0 } else { v >> s };
        let want_s = (v as i32) >> s.min(31);
        assert_eq!(out[k][0] as u32, want_u, "shr.u32 {v:#x} by {s}");
        assert_eq!(out[k][1] as i64, want_s as i64, "shr.s32 {v:#x} by {s}");
    }
}

/// `(int)x` and `(unsigned)x` of an f32 (cvt.rzi.{s32,u32}.f32, with and without .ftz): NaN
/// gives 0, out-of-range values saturate, subnormals and -0 give 0, and the s32 result is
/// sign-extended in a 64-bit view of the register.
#[test]
fn cvt_rzi_f32_to_32_bit_integers_saturates() {
    let vals = [
        2.7f32,
        -2.7,
        -0.0,
        0.5,
        -1.5,
        3e9,
        -3e9,
        5e9,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1e-40,
        -1e-40,
        2147483520.0,
        -2147483648.0,
        4294967040.0,
    ];
    let inputs: Vec<[u64; 3]> = vals.iter().map(|&v| [0, v.to_bits() as u64, 0]).collect();
    let out = eval(
        r#"
    cvt.rzi.s32.f32 %r1, %fb; cvt.rzi.u32.f32 %r2, %fb;
    cvt.rzi.ftz.s32.f32 %r3, %fb; cvt.rzi.ftz.u32.f32 %r4, %fb;
    cvt.s64.s32 %o0, %r1; cvt.u64.u32 %o1, %r2; cvt.s64.s32 %o2, %r3; cvt.u64.u32 %o3, %r4;
"#,
        &inputs,
    );
    for (k, &v) in vals.iter().enumerate() {
        let o = out[k];
        let want_s = if v.is_nan() {
            0
        } else {
            (v as f64).trunc().clamp(i32::MIN as f64, i32::MAX as f64) as i64
        };
        let want_u = if v.is_nan() {
            0
        } else {
            (v as f64).trunc().clamp(0.0, u32::MAX as f64) as u64
        };
        assert_eq!(o[0] as i64, want_s, "cvt.rzi.s32.f32 {v}");
        assert_eq!(o[1], want_u, "cvt.rzi.u32.f32 {v}");
        assert_eq!(o[2] as i64, want_s, "cvt.rzi.ftz.s32.f32 {v}");
        assert_eq!(o[3], want_u, "cvt.rzi.ftz.u32.f32 {v}");
    }
}

#[test]
fn cvt_rounding_modes_and_saturation() {
    let vals = [
        1.0f64 / 3.0,
        -1.0 / 3.0,
        2.5,
        -2.5,
        1e39,
        -0.7,
        3.5,
        f64::NAN,
    ];
    let inputs: Vec<[u64; 3]> = vals.iter().map(|&v| [d(v), f(v as f32), 0]).collect();
    let out = eval(
        r#"
    cvt.rn.f32.f64 %f1, %db; cvt.rz.f32.f64 %f2, %da; cvt.rm.f32.f64 %f3, %da; cvt.rp.f32.f64 %f4, %da;
    mov.b32 %r1, %f1; mov.b32 %r2, %f2; mov.b32 %r3, %f3; mov.b32 %r4, %f4;
    cvt.u64.u32 %o0, %r2; cvt.u64.u32 %o1, %r3; cvt.u64.u32 %o2, %r4;
    cvt.rni.s32.f64 %r5, %da; cvt.rzi.s32.f64 %r6, %da; cvt.rmi.s32.f64 %r7, %da; cvt.rpi.s32.f64 %r8, %da;
    mov.b64 %o3, {%r5, %r6}; mov.b64 %o4, {%r7, %r8};
    cvt.rzi.sat.u8.f32 %r9, %fb;
    cvt.sat.f32.f32 %f5, %fb; mov.b32 %r10, %f5;
    mov.b64 %o5, {%r9, %r10};
    cvt.rni.f32.f32 %f6, %fb; mov.b32 %r11, %f6; cvt.u64.u32 %o6, %r11;
    cvt.rn.f16.f32 %h1, %fb; cvt.f32.f16 %f7, %h1; mov.b32 %r12, %f7; cvt.u64.u32 %o7, %r12;
"#,
        &inputs,
    );
    for (k, &v) in vals.iter().enumerate() {
        let o = out[k];
        let near = v as f32;
        if v.is_nan() {
            assert!(f32::from_bits(o[0] as u32).is_nan());
            // PTX ISA 9.0 (cvt): from .f64, NaN gives 1 << (width - 1).
            assert_eq!(o[3], 0x8000_0000_8000_0000, "NaN converts to 0x80000000");
            continue;
        }
        let exact = near as f64 == v;
        let (lo, hi) = if exact {
            (near, near)
        } else if (near as f64) < v {
            (near, near.next_up())
        } else {
            (near.next_down(), near)
        };
        let rz = if v >= 0.0 { lo } else { hi };
        let rz = if v.abs() > f32::MAX as f64 {
            f32::MAX.copysign(v as f32)
        } else {
            rz
        };
        assert_eq!(f32::from_bits(o[0] as u32), rz, "cvt.rz.f32.f64 {v}");
        assert_eq!(
            f32::from_bits(o[1] as u32),
            if v > f32::MAX as f64 { f32::MAX } else { lo },
            "rm {v}"
        );
        assert_eq!(f32::from_bits(o[2] as u32), hi, "rp {v}");
        let sat = |x: f64| x.clamp(i32::MIN as f64, i32::MAX as f64) as i32;
        assert_eq!(o[3] as u32 as i32, sat(v.round_ties_even()), "rni {v}");
        assert_eq!((o[3] >> 32) as u32 as i32, sat(v.trunc()), "rzi {v}");
        assert_eq!(o[4] as u32 as i32, sat(v.floor()), "rmi {v}");
        assert_eq!((o[4] >> 32) as u32 as i32, sat(v.ceil()), "rpi {v}");
        let fb = v as f32;
        assert_eq!(
            o[5] as u32,
            (fb.trunc().clamp(0.0, 255.0)) as u32,
            "sat u8 {v}"
        );
        assert_eq!(
            f32::from_bits((o[5] >> 32) as u32),
            fb.clamp(0.0, 1.0),
            "sat f32 {v}"
        );
        assert_eq!(
            f32::from_bits(o[6] as u32),
            fb.round_ties_even(),
            "rni f32 {v}"
        );
        let h = crate::sem::ieee::f16_to_f32(crate::sem::ieee::f32_to_f16(fb));
        assert_eq!(
            f32::from_bits(o[7] as u32).to_bits(),
            h.to_bits(),
            "f16 round trip {v}"
        );
    }
}

#[test]
fn directed_rounding_of_arithmetic() {
    let mut rng = Rng(seed());
    let inputs: Vec<[u64; 3]> = (0..64)
        .map(|_| {
            let a = rng.f32() * 1e3;
            let b = rng.f32().abs() * 7.0 + 0.1;
            let c = rng.f32();
            [f(a), f(b), f(c)]
        })
        .collect();
    let out = eval(
        r#"
    add.rz.f32 %f1, %fa, %fb; add.rm.f32 %f2, %fa, %fb; add.rp.f32 %f3, %fa, %fb;
    mul.rz.f32 %f4, %fa, %fb; div.rm.f32 %f5, %fa, %fb; div.rp.f32 %f6, %fa, %fb;
    fma.rz.f32 %f7, %fa, %fb, %fc; sqrt.rp.f32 %f8, %fb;
    mov.b32 %r1, %f1; mov.b32 %r2, %f2; mov.b32 %r3, %f3; mov.b32 %r4, %f4;
    mov.b32 %r5, %f5; mov.b32 %r6, %f6; mov.b32 %r7, %f7; mov.b32 %r8, %f8;
    mov.b64 %o0, {%r1, %r2}; mov.b64 %o1, {%r3, %r4}; mov.b64 %o2, {%r5, %r6}; mov.b64 %o3, {%r7, %r8};
    cvt.f64.f32 %d1, %fa; cvt.f64.f32 %d2, %fb;
    div.rz.f64 %d3, %d1, %d2; mov.b64 %o4, %d3;
    div.rp.f64 %d4, %d1, %d2; mov.b64 %o5, %d4;
"#,
        &inputs,
    );
    // Reference: exact values in f64 (f32 operands), rounded by bracketing.
    let bracket = |x: f64| -> (f32, f32) {
        let n = x as f32;
        if n as f64 == x {
            (n, n)
        } else if (n as f64) < x {
            (n, n.next_up())
        } else {
            (n.next_down(), n)
        }
    };
    let toward_zero = |x: f64| {
        let (lo, hi) = bracket(x);
        if x >= 0.0 {
            lo
        } else {
            hi
        }
    };
    for (k, inp) in inputs.iter().enumerate() {
        let (a, b, c) = (
            f32::from_bits(inp[0] as u32),
            f32::from_bits(inp[1] as u32),
            f32::from_bits(inp[2] as u32),
        );
        let o = out[k];
        let lo32 = |x: u64| f32::from_bits(x as u32);
        let hi32 = |x: u64| f32::from_bits((x >> 32) as u32);
        let sum = a as f64 + b as f64; // exact for these magnitudes
        assert_eq!(lo32(o[0]), toward_zero(sum));
        assert_eq!(hi32(o[0]), bracket(sum).0);
        assert_eq!(lo32(o[1]), bracket(sum).1);
        assert_eq!(hi32(o[1]), toward_zero(a as f64 * b as f64));
        // Division: the f64 quotient is not exact, but it lies strictly between the f32
        // neighbours unless the quotient is an f32.
        let q = a / b;
        let (qlo, qhi) = (lo32(o[2]), hi32(o[2]));
        assert!(qlo == qhi || qlo.next_up() == qhi, "div brackets {a}/{b}");
        assert!(q == qlo || q == qhi);
        assert!((qlo as f64) <= a as f64 / b as f64 && (qhi as f64) >= a as f64 / b as f64);
        let fma = a as f64 * b as f64 + c as f64;
        let r = lo32(o[3]);
        assert!(
            r.abs() as f64 <= fma.abs() && (r.abs().next_up() as f64) > fma.abs() - 1e-30,
            "fma.rz {a} {b} {c}: {r} vs {fma}"
        );
        let s = hi32(o[3]);
        assert!(
            (s as f64) * (s as f64) >= b as f64 && (s.next_down() as f64).powi(2) < b as f64,
            "sqrt.rp {b}"
        );
        let (dz, dp) = (f64::from_bits(o[4]), f64::from_bits(o[5]));
        assert!(dz == dp || dz.next_up() == dp || dz.next_down() == dp);
        assert!(dz.abs() <= (a as f64 / b as f64).abs());
    }
}

#[test]
fn comparisons_including_unordered_and_bool_combinations() {
    let pairs = [
        (1.0f32, 2.0f32),
        (2.0, 1.0),
        (3.0, 3.0),
        (f32::NAN, 1.0),
        (0.0, -0.0),
        (f32::INFINITY, f32::NAN),
    ];
    let inputs: Vec<[u64; 3]> = pairs.iter().map(|&(a, b)| [f(a), f(b), 0]).collect();
    let out = eval(
        r#"
    setp.lt.f32 %p1, %fa, %fb;   selp.u64 %o0, 1, 0, %p1;
    setp.ltu.f32 %p1, %fa, %fb;  selp.u64 %o1, 1, 0, %p1;
    setp.equ.f32 %p1, %fa, %fb;  selp.u64 %o2, 1, 0, %p1;
    setp.neu.f32 %p1, %fa, %fb;  selp.u64 %o3, 1, 0, %p1;
    setp.num.f32 %p1, %fa, %fb;  selp.u64 %o4, 1, 0, %p1;
    setp.nan.f32 %p1, %fa, %fb;  selp.u64 %o5, 1, 0, %p1;
    setp.ne.f32 %p1|%p2, %fa, %fb; selp.u64 %o6, 1, 0, %p2;
    setp.ge.and.f32 %p3, %fa, %fb, %p1; selp.u64 %o7, 1, 0, %p3;
"#,
        &inputs,
    );
    for (k, &(a, b)) in pairs.iter().enumerate() {
        let un = a.is_nan() || b.is_nan();
        let want = [
            a < b,
            un || a < b,
            un || a == b,
            un || a != b,
            !un,
            un,
            un || a == b,
            (a >= b) && (!un && a != b),
        ];
        let got: Vec<bool> = out[k].iter().map(|&x| x != 0).collect();
        assert_eq!(got, want, "{a} vs {b}");
    }
}

#[test]
fn integer_edge_cases_carry_chains_and_bits() {
    let mut rng = Rng(seed());
    let mut inputs: Vec<[u64; 3]> = (0..60)
        .map(|_| [rng.next(), rng.next(), rng.next()])
        .collect();
    inputs.push([5, 0, 0]);
    inputs.push([i32::MIN as u32 as u64, u32::MAX as u64, 0]);
    inputs.push([u64::MAX, 1, 0xFF]);
    let out = eval(
        r#"
    add.cc.u32 %r1, %ia, %ib; addc.cc.u32 %r2, %ic, %ia; addc.u32 %r3, 0, 0;
    mov.b64 %o0, {%r1, %r2}; cvt.u64.u32 %q64, %r3;
    sub.cc.u32 %r4, %ia, %ib; subc.u32 %r5, %ic, %ia;
    mov.b64 %o1, {%r4, %r5};
    div.s32 %r6, %ia, %ib; rem.u32 %r7, %ia, %ib;
    mov.b64 %o2, {%r6, %r7};
    mul.hi.u64 %o3, %a, %b;
    mul.hi.s64 %o4, %a, %b;
    bfe.s32 %r8, %ia, 7, 9; bfi.b32 %r9, %ib, %ia, 5, 11;
    mov.b64 %o5, {%r8, %r9};
    prmt.b32 %r10, %ia, %ib, 0x5140; shf.l.wrap.b32 %r11, %ia, %ib, %ic;
    mov.b64 %o6, {%r10, %r11};
    popc.b64 %r12, %a; clz.b64 %r13, %b; bfind.s32 %r14, %ia; brev.b32 %r15, %ib;
    add.u32 %r12, %r12, %r13; add.u32 %r12, %r12, %r14;
    mov.b64 %o7, {%r12, %r15};
    add.u64 %o0, %o0, %q64;
"#,
        &inputs,
    );
    for (k, inp) in inputs.iter().enumerate() {
        let (a, b, c) = (inp[0], inp[1], inp[2]);
        let (ia, ib, ic) = (a as u32, b as u32, c as u32);
        let o = out[k];
        // 96-bit add {ic:ia} + {ia:ib} with carry out in r3.
        let s1 = ia as u64 + ib as u64;
        let s2 = ic as u64 + ia as u64 + (s1 >> 32);
        let r3 = s2 >> 32;
        assert_eq!(
            o[0],
            ((s2 as u32 as u64) << 32 | s1 as u32 as u64).wrapping_add(r3),
            "add.cc chain {k}"
        );
        let borrow = (ia < ib) as u32;
        let d0 = ia.wrapping_sub(ib);
        let d1 = ic.wrapping_sub(ia).wrapping_sub(borrow);
        assert_eq!(o[1], (d1 as u64) << 32 | d0 as u64, "sub.cc chain {k}");
        let div = if ib == 0 {
            u32::MAX
        } else {
            (ia as i32).wrapping_div(ib as i32) as u32
        };
        let rem = if ib == 0 { u32::MAX } else { ia % ib };
        assert_eq!(o[2], (rem as u64) << 32 | div as u64, "div/rem {k}");
        assert_eq!(o[3], ((a as u128 * b as u128) >> 64) as u64);
        assert_eq!(o[4], ((a as i64 as i128 * b as i64 as i128) >> 64) as u64);
        let bfe = ((ia << (32 - 7 - 9)) as i32 >> (32 - 9)) as u32;
        let mask = ((1u32 << 11) - 1) << 5;
        let bfi = (ia & !mask) | ((ib << 5) & mask);
        assert_eq!(o[5], (bfi as u64) << 32 | bfe as u64, "bfe/bfi {k}");
        let bytes = (ib as u64) << 32 | ia as u64;
        let sel = |s: u32| ((bytes >> (8 * (s & 7))) & 0xFF) as u32;
        let prmt = sel(0) | sel(4) << 8 | sel(1) << 16 | sel(5) << 24;
        let n = ic & 31;
        let shf = (((ib as u64) << 32 | ia as u64) << n >> 32) as u32;
        assert_eq!(o[6], (shf as u64) << 32 | prmt as u64, "prmt/shf {k}");
        let bf = {
            let x = if (ia as i32) < 0 { !ia } else { ia };
            if x == 0 {
                u32::MAX
            } else {
                31 - x.leading_zeros()
            }
        };
        let sum = a
            .count_ones()
            .wrapping_add(b.leading_zeros())
            .wrapping_add(bf);
        assert_eq!(
            o[7],
            (ib.reverse_bits() as u64) << 32 | sum as u64,
            "bit counts {k}"
        );
    }
}

#[test]
fn float_min_max_testp_copysign_and_approximations() {
    let vals = [1.5f32, -0.0, f32::NAN, 1e-40, 100.0, -3.25];
    let inputs: Vec<[u64; 3]> = vals.iter().map(|&a| [f(a), f(2.0), 0]).collect();
    let out = eval(
        r#"
    min.f32 %f1, %fa, %fb; max.f32 %f2, %fa, %fb; mov.b32 %r1, %f1; mov.b32 %r2, %f2; mov.b64 %o0, {%r1, %r2};
    testp.subnormal.f32 %p1, %fa; selp.u64 %o1, 1, 0, %p1;
    testp.notanumber.f32 %p2, %fa; selp.u64 %o2, 1, 0, %p2;
    copysign.f32 %f3, %fa, %fb; mov.b32 %r3, %f3; cvt.u64.u32 %o3, %r3;
    ex2.approx.ftz.f32 %f4, %fa; lg2.approx.f32 %f5, %fb; mov.b32 %r4, %f4; mov.b32 %r5, %f5; mov.b64 %o4, {%r4, %r5};
    add.ftz.f32 %f6, %fa, 0f00000000; mov.b32 %r6, %f6; cvt.u64.u32 %o5, %r6;
    rsqrt.approx.f32 %f7, %fb; sin.approx.f32 %f8, %fa; mov.b32 %r7, %f7; mov.b32 %r8, %f8; mov.b64 %o6, {%r7, %r8};
    abs.f32 %f9, %fa; neg.f32 %f10, %fa; mov.b32 %r9, %f9; mov.b32 %r10, %f10; mov.b64 %o7, {%r9, %r10};
"#,
        &inputs,
    );
    for (k, &a) in vals.iter().enumerate() {
        let o = out[k];
        let lo = |x: u64| f32::from_bits(x as u32);
        let hi = |x: u64| f32::from_bits((x >> 32) as u32);
        assert_eq!(lo(o[0]), if a.is_nan() { 2.0 } else { a.min(2.0) });
        assert_eq!(hi(o[0]), if a.is_nan() { 2.0 } else { a.max(2.0) });
        assert_eq!(o[1], a.is_subnormal() as u64);
        assert_eq!(o[2], a.is_nan() as u64);
        assert_eq!(lo(o[3]).to_bits(), 2.0f32.copysign(a).to_bits());
        if a.is_finite() {
            let want = if a.is_subnormal() { 1.0 } else { a.exp2() };
            assert!((lo(o[4]) - want).abs() <= want.abs() * 1e-6, "ex2 {a}");
            assert!((hi(o[6]) - a.sin()).abs() < 1e-6, "sin {a}");
        }
        assert_eq!(hi(o[4]), 1.0);
        assert_eq!(
            lo(o[5]).to_bits(),
            if a.is_subnormal() {
                0
            } else {
                (a + 0.0).to_bits()
            },
            "ftz {a}"
        );
        assert!((lo(o[6]) - 0.5f32.sqrt()).abs() < 1e-6);
        assert_eq!(lo(o[7]).to_bits(), a.abs().to_bits());
        assert_eq!(hi(o[7]).to_bits(), (-a).to_bits());
    }
}

#[test]
fn unknown_instruction_is_a_clear_error() {
    let dev = Device::new();
    let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n\tfrobnicate.b32 %r1;\n\tret;\n}\n";
    let e = dev.load_module(ptx).err().unwrap();
    assert_eq!(
        e,
        ModuleError::Unsupported {
            line: 6,
            instruction: "frobnicate.b32".into()
        }
    );
    let e = dev
        .load_module(".version 8.0\n.target sm_80\n.visible .entry k()\n{\n\ttex.2d.v4.f32.f32 {%f1,%f2,%f3,%f4}, [t, {%f5,%f6}];\n}\n")
        .err()
        .unwrap();
    assert!(
        matches!(
            e,
            ModuleError::Unsupported { line: 5, .. } | ModuleError::Parse { line: 5, .. }
        ),
        "{e:?}"
    );
}

#[test]
fn lop3_bmsk_szext_elect() {
    let mut rng = Rng(seed());
    let inputs: Vec<[u64; 3]> = (0..32)
        .map(|_| [rng.next(), rng.next(), rng.next()])
        .collect();
    let out = eval(
        r#"
    lop3.b32 %r1, %ia, %ib, %ic, 0x96; lop3.b32 %r2, %ia, %ib, %ic, 0xE8;
    mov.b64 %o0, {%r1, %r2};
    and.b32 %r3, %ia, 31; and.b32 %r4, %ib, 31;
    bmsk.clamp.b32 %r5, %r3, %r4; szext.wrap.s32 %r6, %ia, %r4;
    mov.b64 %o1, {%r5, %r6};
    setp.ne.u32 %p1, %r3, 0;
    @%p1 elect.sync %r7|%p2, 0xffffffff;
    @!%p1 mov.u32 %r7, 99;
    selp.u32 %r8, 1, 0, %p2;
    mov.b64 %o2, {%r7, %r8};
"#,
        &inputs,
    );
    let active: Vec<usize> = (0..32).filter(|&k| inputs[k][0] as u32 & 31 != 0).collect();
    for (k, inp) in inputs.iter().enumerate() {
        let (a, b, c) = (inp[0] as u32, inp[1] as u32, inp[2] as u32);
        let o = out[k];
        assert_eq!(o[0] as u32, a ^ b ^ c, "lop3 xor3");
        assert_eq!(
            (o[0] >> 32) as u32,
            (a & b) | (a & c) | (b & c),
            "lop3 majority"
        );
        let (pos, len) = (a & 31, b & 31);
        let want = (((1u64 << len) - 1) << pos) as u32;
        assert_eq!(o[1] as u32, want, "bmsk {pos} {len}");
        let sz = if len == 0 {
            0
        } else {
            ((a << (32 - len)) as i32 >> (32 - len)) as u32
        };
        assert_eq!((o[1] >> 32) as u32, sz, "szext {len}");
        if a & 31 != 0 {
            assert_eq!(o[2] as u32, active[0] as u32, "elect leader");
            assert_eq!((o[2] >> 32) as u32, (k == active[0]) as u32);
        } else {
            assert_eq!(o[2] as u32, 99);
        }
    }
}

#[test]
fn generic_addresses_of_kernel_and_function_parameters() {
    let ptx = r#"
.version 8.0
.target sm_80
.address_size 64
.func (.param .b32 get_r) get(.param .align 4 .b8 get_p[8])
{
    .reg .b64 %rd<3>;
    .reg .b32 %r<2>;
    mov.b64 %rd1, get_p;
    cvta.param.u64 %rd2, %rd1;
    ld.u32 %r1, [%rd2+4];
    st.param.b32 [get_r], %r1;
    ret;
}
.visible .entry k(.param .align 4 .b8 k_s[8], .param .u64 k_out)
{
    .reg .b64 %rd<4>;
    .reg .b32 %r<4>;
    mov.b64 %rd1, k_s;
    cvta.param.u64 %rd2, %rd1;
    ld.u32 %r1, [%rd2];
    ld.param.u32 %r2, [k_s+4];
    {
    .param .align 4 .b8 a[8];
    st.param.b32 [a], %r2;
    st.param.b32 [a+4], %r1;
    .param .b32 rv;
    call (rv), get, (a);
    ld.param.b32 %r3, [rv];
    }
    ld.param.u64 %rd3, [k_out];
    st.global.v2.u32 [%rd3], {%r1, %r3};
    ret;
}
"#;
    let dev = Device::new();
    let m = dev.load_module(ptx).unwrap();
    let out = dev.alloc(8).unwrap();
    let s: Vec<u8> = [11u32, 22u32]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    run(&dev, &m, "k", (1, 1, 1), (32, 1, 1), &[&s, &p64(out)]);
    assert_eq!(download_u32(&dev, out, 2), vec![11, 11]);
}

/// A block where half of each warp reaches `bar.sync` through a block laid out after it.
fn late_arrival_ptx(second_barrier: bool) -> String {
    let other = if second_barrier {
        "bar.sync 1;\n    bra.uni JOIN;"
    } else {
        "bra.uni JOIN;"
    };
    format!(
        r#"
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 k_out)
{{
    .shared .align 4 .b8 s[256];
    .reg .b64 %rd<4>;
    .reg .b32 %r<8>;
    .reg .pred %p<2>;
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, s;
    add.u32 %r4, %r3, %r2;
    and.b32 %r5, %r1, 31;
    setp.lt.u32 %p1, %r5, 16;
    @%p1 bra ELSE;
    st.shared.u32 [%r4], %r1;
JOIN:
    bar.sync 0;
    xor.b32 %r6, %r2, 4;
    add.u32 %r6, %r3, %r6;
    ld.shared.u32 %r7, [%r6];
    ld.param.u64 %rd1, [k_out];
    mul.wide.u32 %rd2, %r1, 4;
    add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r7;
    ret;
ELSE:
    add.u32 %r6, %r1, 1000;
    st.shared.u32 [%r4], %r6;
    {other}
}}
"#
    )
}

#[test]
fn lanes_may_reach_the_same_barrier_at_different_times() {
    let dev = Device::new();
    let m = dev.load_module(&late_arrival_ptx(false)).unwrap();
    let out = dev.alloc(64 * 4).unwrap();
    run(&dev, &m, "k", (1, 1, 1), (64, 1, 1), &[&p64(out)]);
    let o = download_u32(&dev, out, 64);
    for t in 0..64u32 {
        let u = t ^ 1;
        let want = if u % 32 < 16 { u + 1000 } else { u };
        assert_eq!(o[t as usize], want, "thread {t}");
    }
    // Half a warp at another barrier is a divergent barrier.
    let m = dev.load_module(&late_arrival_ptx(true)).unwrap();
    let e = dev
        .launch(&m, "k", &config((1, 1, 1), (64, 1, 1)), &[&p64(out)])
        .unwrap_err();
    let LaunchError::Fault { report, .. } = e else {
        panic!("{e:?}")
    };
    assert_eq!(report.kind, CheckKind::DivergentBarrier);
    assert_eq!(report.thread, (16, 0, 0));
}

#[test]
fn warp_collectives_wait_for_lanes_that_arrive_later() {
    // Lanes 16..31 reach the shuffle first (the block of lanes 0..15 is laid out after it);
    // shfl.sync with a full mask waits for all 32 lanes, so every lane reads lane 0's 200.
    let ptx = r#"
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 k_out)
{
    .reg .b64 %rd<4>;
    .reg .b32 %r<6>;
    .reg .pred %p<2>;
    mov.u32 %r1, %laneid;
    setp.lt.u32 %p1, %r1, 16;
    @%p1 bra ELSE;
    mov.u32 %r2, 100;
JOIN:
    shfl.sync.idx.b32 %r3, %r2, 0, 31, -1;
    vote.sync.ballot.b32 %r4, %p1, -1;
    ld.param.u64 %rd1, [k_out];
    mul.wide.u32 %rd2, %r1, 8;
    add.u64 %rd3, %rd1, %rd2;
    st.global.v2.u32 [%rd3], {%r3, %r4};
    ret;
ELSE:
    mov.u32 %r2, 200;
    bra.uni JOIN;
}
"#;
    let dev = Device::new();
    let m = dev.load_module(ptx).unwrap();
    let out = dev.alloc(32 * 8).unwrap();
    run(&dev, &m, "k", (1, 1, 1), (32, 1, 1), &[&p64(out)]);
    let o = download_u32(&dev, out, 64);
    for l in 0..32 {
        assert_eq!(o[2 * l], 200, "lane {l} shuffle");
        assert_eq!(o[2 * l + 1], 0xFFFF, "lane {l} ballot");
    }
}

#[test]
fn launch_bounds_are_enforced() {
    let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n\
               .visible .entry a() .maxntid 128, 1, 1\n{\nret;\n}\n\
               .visible .entry b() .reqntid 64, 1, 1\n{\nret;\n}\n";
    let dev = Device::new();
    let m = dev.load_module(ptx).unwrap();
    assert_eq!(m.kernel("a").unwrap().max_threads, Some(128));
    let cfg = |b: u32| config((1, 1, 1), (b, 1, 1));
    assert!(dev.launch(&m, "a", &cfg(128), &[]).is_ok());
    assert!(matches!(
        dev.launch(&m, "a", &cfg(256), &[]),
        Err(LaunchError::BadConfig(_))
    ));
    assert!(dev.launch(&m, "b", &cfg(64), &[]).is_ok());
    assert!(matches!(
        dev.launch(&m, "b", &cfg(32), &[]),
        Err(LaunchError::BadConfig(_))
    ));
}
