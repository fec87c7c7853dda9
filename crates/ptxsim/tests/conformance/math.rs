//! Floating point: IEEE-exact f64/f32 operations, libdevice functions (within a tolerance),
//! `.approx` instructions (within PTX's documented error), conversions with every rounding mode
//! and saturation, arithmetic with explicit rounding, rounding functions.
//!
//! Tolerances: libdevice exp/log/sin/cos/pow (f64) and sinf/expf/logf/tanhf (f32) against the
//! host's libm: 4 ulps (both sides are within 1-2 ulps of the true value). `.approx`:
//! sin/cos absolute 2^-20 on [-pi, pi]; ex2/lg2/rsqrt/div relative 2^-20 plus the error of the
//! exact scaling multiply before them. Everything else is compared bit for bit.

use crate::common::*;

/// A reference function and its name.
type Named<T> = (&'static str, fn(T) -> T);

/// Random finite f32 values of all kinds: ordinary, halves, near-integers, huge, tiny,
/// negative zero excluded unless `signed_zero`.
fn mixed_f32(r: &mut Rng) -> f32 {
    match r.range_i32(0, 10) {
        0 => r.range_i32(-100, 100) as f32 + 0.5,
        1 => r.f32_in(-3e9, 3e9),
        2 => r.f32_in(-1e-3, 1e-3),
        3 => r.range_i32(-1000, 1000) as f32,
        4 => f32::from_bits(r.next_u32()),
        5 => r.pick(&[
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            0.0,
            2147483520.0,
            -2147483648.0,
            4294967040.0,
        ]),
        _ => r.f32_in(-1000.0, 1000.0),
    }
}

fn mixed_f64(r: &mut Rng) -> f64 {
    match r.range_i32(0, 10) {
        0 => r.range_i32(-100, 100) as f64 + 0.5,
        1 => r.f64_in(-3e9, 3e9),
        2 => r.f64_in(-1e-40, 1e-40),
        3 => f64::from_bits(r.next_u64()),
        4 => r.pick(&[
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            0.0,
            3.4028235677973366e38,
            1.5e-45,
            -1e300,
        ]),
        5 => r.f64_in(-1e40, 1e40),
        _ => r.f64_in(-1000.0, 1000.0),
    }
}

#[test]
fn f64_exact_ops() {
    let mut c = Ctx::new("f64math", "f64_exact_ops");
    let n = c.rng.usize(500, 2000);
    let a: Vec<f64> = c.rng.vec(n, |r| r.f64_in(-1e3, 1e3));
    let b: Vec<f64> = c.rng.vec(n, |r| {
        if r.bool() {
            r.f64_in(-1e3, 1e3)
        } else {
            r.f64_in(-1e-3, 1e-3)
        }
    });
    let cc: Vec<f64> = c.rng.vec(n, |r| r.f64_in(-1e6, 1e6));
    let (pa, pb, pc) = (c.upload(&a), c.upload(&b), c.upload(&cc));
    let outs = [
        c.zeros::<f64>(n),
        c.zeros::<f64>(n),
        c.zeros::<f64>(n),
        c.zeros::<f64>(2 * n),
    ];
    let mut args = vec![Arg::Ptr(pa), Arg::Ptr(pb), Arg::Ptr(pc)];
    args.extend(outs.iter().map(|p| Arg::Ptr(*p)));
    args.push(Arg::I32(n as i32));
    c.launch("f64Exact", d1(blocks(n, 128)), d1(128), &args);
    let sq: Vec<f64> = a.iter().map(|x| x.abs().sqrt()).collect();
    let fm: Vec<f64> = (0..n).map(|i| a[i].mul_add(b[i], cc[i])).collect();
    let dv: Vec<f64> = (0..n).map(|i| a[i] / b[i]).collect();
    let mm: Vec<f64> = (0..n)
        .flat_map(|i| [a[i].min(b[i]), a[i].max(cc[i])])
        .collect();
    assert_exact("sqrt.rn.f64", &c.download::<f64>(outs[0], n), &sq);
    assert_exact("fma.rn.f64", &c.download::<f64>(outs[1], n), &fm);
    assert_exact("div.rn.f64", &c.download::<f64>(outs[2], n), &dv);
    assert_exact("min/max.f64", &c.download::<f64>(outs[3], 2 * n), &mm);
}

#[test]
fn f64_libdevice() {
    let mut c = Ctx::new("f64math", "f64_libdevice");
    let n = c.rng.usize(300, 1500);
    let a: Vec<f64> = c.rng.vec(n, |r| r.f64_in(-100.0, 100.0));
    let pa = c.upload(&a);
    let outs: Vec<_> = (0..5).map(|_| c.zeros::<f64>(n)).collect();
    let mut args = vec![Arg::Ptr(pa)];
    args.extend(outs.iter().map(|p| Arg::Ptr(*p)));
    args.push(Arg::I32(n as i32));
    c.launch("f64Libdevice", d1(blocks(n, 64)), d1(64), &args);
    let refs: [Named<f64>; 5] = [
        ("exp", |x| (x * 0.25).exp()),
        ("log", |x| (x.abs() + 1.0).ln()),
        ("sin", f64::sin),
        ("cos", f64::cos),
        ("pow", |x| (x.abs() + 0.5).powf(1.75)),
    ];
    for (k, (name, f)) in refs.iter().enumerate() {
        let want: Vec<f64> = a.iter().map(|x| f(*x)).collect();
        assert_close64(name, &c.download::<f64>(outs[k], n), &want, 4, 1e-300);
    }
}

#[test]
fn f64_oscillator_loop() {
    let mut c = Ctx::new("f64math", "f64_oscillator_loop");
    let n = c.rng.usize(200, 1000);
    let steps = c.rng.range_i32(1, 300);
    let dt = c.rng.f64_in(0.001, 0.05);
    let x0: Vec<f64> = c.rng.vec(n, |r| r.f64_in(-1.0, 1.0));
    let v0: Vec<f64> = c.rng.vec(n, |r| r.f64_in(-1.0, 1.0));
    let (px, pv, po) = (c.upload(&x0), c.upload(&v0), c.zeros::<f64>(n));
    c.launch(
        "f64Oscillator",
        d1(blocks(n, 128)),
        d1(128),
        &[
            Arg::Ptr(px),
            Arg::Ptr(pv),
            Arg::Ptr(po),
            Arg::I32(n as i32),
            Arg::I32(steps),
            Arg::F64(dt),
        ],
    );
    let want: Vec<f64> = (0..n)
        .map(|i| {
            let (mut x, mut v) = (x0[i], v0[i]);
            for _ in 0..steps {
                let a = -x - 0.1 * v;
                v = a.mul_add(dt, v);
                x = v.mul_add(dt, x);
            }
            x
        })
        .collect();
    assert_exact("x", &c.download::<f64>(po, n), &want);
}

#[test]
fn f32_exact_and_approx() {
    let mut c = Ctx::new("f64math", "f32_exact_and_approx");
    let n = c.rng.usize(300, 1500);
    let pi = std::f32::consts::PI;
    let a: Vec<f32> = c.rng.vec(n, |r| r.f32_in(-pi, pi));
    let b: Vec<f32> = c.rng.vec(n, |r| {
        if r.bool() {
            r.f32_in(0.5, 100.0)
        } else {
            r.f32_in(-100.0, -0.5)
        }
    });
    let (pa, pb, pe, px) = (
        c.upload(&a),
        c.upload(&b),
        c.zeros::<f32>(4 * n),
        c.zeros::<f32>(6 * n),
    );
    c.launch(
        "f32Math",
        d1(blocks(n, 128)),
        d1(128),
        &[
            Arg::Ptr(pa),
            Arg::Ptr(pb),
            Arg::Ptr(pe),
            Arg::Ptr(px),
            Arg::I32(n as i32),
        ],
    );
    let exact: Vec<f32> = (0..n)
        .flat_map(|i| {
            [
                a[i].abs().sqrt(),
                a[i] / b[i],
                a[i].mul_add(b[i], 1.0),
                a[i].min(b[i]) + a[i].max(b[i]),
            ]
        })
        .collect();
    assert_exact(
        "sqrt/div/fma/min+max .f32",
        &c.download::<f32>(pe, 4 * n),
        &exact,
    );
    let got = c.download::<f32>(px, 6 * n);
    let col = |k: usize| -> Vec<f32> { (0..n).map(|i| got[6 * i + k]).collect() };
    let want = |f: &dyn Fn(usize) -> f64| -> Vec<f32> { (0..n).map(|i| f(i) as f32).collect() };
    let abs_err = (2.0f32).powi(-20);
    let rel_err = (2.0f32).powi(-20);
    assert_rel32(
        "sin.approx",
        &col(0),
        &want(&|i| (a[i] as f64).sin()),
        0.0,
        abs_err,
    );
    assert_rel32(
        "cos.approx",
        &col(1),
        &want(&|i| (a[i] as f64).cos()),
        0.0,
        abs_err,
    );
    assert_rel32(
        "ex2.approx (__expf)",
        &col(2),
        &want(&|i| (a[i] as f64 * 0.125).exp()),
        rel_err,
        0.0,
    );
    assert_rel32(
        "lg2.approx (__logf)",
        &col(3),
        &want(&|i| (a[i].abs() as f64 + 1.0).ln()),
        rel_err,
        abs_err,
    );
    assert_rel32(
        "rsqrt.approx",
        &col(4),
        &want(&|i| 1.0 / (a[i].abs() as f64 + 1.0).sqrt()),
        rel_err,
        0.0,
    );
    assert_rel32(
        "div.approx (__fdividef)",
        &col(5),
        &want(&|i| a[i] as f64 / b[i] as f64),
        rel_err,
        0.0,
    );
}

#[test]
fn f32_libdevice() {
    let mut c = Ctx::new("f64math", "f32_libdevice");
    let n = c.rng.usize(300, 1500);
    let a: Vec<f32> = c.rng.vec(n, |r| r.f32_in(-50.0, 50.0));
    let (pa, po) = (c.upload(&a), c.zeros::<f32>(4 * n));
    c.launch(
        "f32Libdevice",
        d1(blocks(n, 128)),
        d1(128),
        &[Arg::Ptr(pa), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let got = c.download::<f32>(po, 4 * n);
    let refs: [Named<f32>; 4] = [
        ("sinf", f32::sin),
        ("expf", |x| (x * 0.25).exp()),
        ("logf", |x| (x.abs() + 1.0).ln()),
        ("tanhf", |x| (x * 0.1).tanh()),
    ];
    for (k, (name, f)) in refs.iter().enumerate() {
        let col: Vec<f32> = (0..n).map(|i| got[4 * i + k]).collect();
        let want: Vec<f32> = a.iter().map(|x| f(*x)).collect();
        assert_close32(name, &col, &want, 4, 1e-7);
    }
}

#[test]
fn float_to_int_rounding() {
    let mut c = Ctx::new("conversions", "float_to_int_rounding");
    let n = c.rng.usize(500, 2000);
    let a: Vec<f32> = c.rng.vec(n, mixed_f32);
    let (pa, pi, pu, pl) = (
        c.upload(&a),
        c.zeros::<i32>(4 * n),
        c.zeros::<u32>(2 * n),
        c.zeros::<i64>(2 * n),
    );
    c.launch(
        "floatToInt",
        d1(blocks(n, 128)),
        d1(128),
        &[
            Arg::Ptr(pa),
            Arg::Ptr(pi),
            Arg::Ptr(pu),
            Arg::Ptr(pl),
            Arg::I32(n as i32),
        ],
    );
    // PTX float-to-integer conversions saturate, and NaN becomes 0 (exactly Rust's `as`), except
    // into 64 bits or from f64, where NaN gives 1 << (width - 1) (PTX ISA 9.0, cvt).
    let wi: Vec<i32> = a
        .iter()
        .flat_map(|x| {
            [
                x.round_ties_even() as i32,
                *x as i32,
                x.floor() as i32,
                x.ceil() as i32,
            ]
        })
        .collect();
    let wu: Vec<u32> = a
        .iter()
        .flat_map(|x| [x.round_ties_even() as u32, *x as u32])
        .collect();
    let wl: Vec<i64> = a
        .iter()
        .flat_map(|x| {
            if x.is_nan() {
                [i64::MIN; 2]
            } else {
                [x.floor() as i64, *x as i64]
            }
        })
        .collect();
    assert_exact(
        "cvt.{rni,rzi,rmi,rpi}.s32.f32",
        &c.download::<i32>(pi, 4 * n),
        &wi,
    );
    assert_exact("cvt.{rni,rzi}.u32.f32", &c.download::<u32>(pu, 2 * n), &wu);
    assert_exact("cvt.{rmi,rzi}.s64.f32", &c.download::<i64>(pl, 2 * n), &wl);
}

#[test]
fn double_conversions() {
    let mut c = Ctx::new("conversions", "double_conversions");
    let n = c.rng.usize(500, 2000);
    let a: Vec<f64> = c.rng.vec(n, mixed_f64);
    let (pa, pi, pf, pl) = (
        c.upload(&a),
        c.zeros::<i32>(4 * n),
        c.zeros::<f32>(4 * n),
        c.zeros::<i64>(n),
    );
    c.launch(
        "doubleConversions",
        d1(blocks(n, 128)),
        d1(128),
        &[
            Arg::Ptr(pa),
            Arg::Ptr(pi),
            Arg::Ptr(pf),
            Arg::Ptr(pl),
            Arg::I32(n as i32),
        ],
    );
    // From f64, NaN converts to 1 << (width - 1) (PTX ISA 9.0, cvt).
    let wi: Vec<i32> = a
        .iter()
        .flat_map(|x| {
            if x.is_nan() {
                return [i32::MIN; 4];
            }
            [
                x.round_ties_even() as i32,
                *x as i32,
                x.floor() as i32,
                x.ceil() as i32,
            ]
        })
        .collect();
    let wf: Vec<f32> = a
        .iter()
        .flat_map(|x| {
            [Round::Nearest, Round::Zero, Round::Down, Round::Up].map(|m| f64_to_f32(*x, m))
        })
        .collect();
    let wl: Vec<i64> = a
        .iter()
        .map(|x| {
            if x.is_nan() {
                i64::MIN
            } else {
                x.round_ties_even() as i64
            }
        })
        .collect();
    assert_exact(
        "cvt.{rni,rzi,rmi,rpi}.s32.f64",
        &c.download::<i32>(pi, 4 * n),
        &wi,
    );
    assert_exact(
        "cvt.{rn,rz,rm,rp}.f32.f64",
        &c.download::<f32>(pf, 4 * n),
        &wf,
    );
    assert_exact("cvt.rni.s64.f64", &c.download::<i64>(pl, n), &wl);
}

#[test]
fn int_to_float_rounding() {
    let mut c = Ctx::new("conversions", "int_to_float_rounding");
    let n = c.rng.usize(500, 2000);
    let a: Vec<i32> = c.rng.vec(n, |r| r.next_u32() as i32 >> r.range_i32(0, 12));
    let b: Vec<i64> = c.rng.vec(n, |r| r.next_u64() as i64 >> r.range_i32(0, 40));
    let (pa, pb, pf, pd) = (
        c.upload(&a),
        c.upload(&b),
        c.zeros::<f32>(6 * n),
        c.zeros::<f64>(2 * n),
    );
    c.launch(
        "intToFloat",
        d1(blocks(n, 128)),
        d1(128),
        &[
            Arg::Ptr(pa),
            Arg::Ptr(pb),
            Arg::Ptr(pf),
            Arg::Ptr(pd),
            Arg::I32(n as i32),
        ],
    );
    let wf: Vec<f32> = (0..n)
        .flat_map(|i| {
            let x = a[i] as f64;
            [
                a[i] as f32,
                f64_to_f32(x, Round::Zero),
                f64_to_f32(x, Round::Down),
                f64_to_f32(x, Round::Up),
                a[i] as u32 as f32,
                i64_to_f32_rz(b[i]),
            ]
        })
        .collect();
    let wd: Vec<f64> = (0..n)
        .flat_map(|i| [b[i] as f64, u64_to_f64_rz(b[i] as u64)])
        .collect();
    assert_exact(
        "cvt.{rn,rz,rm,rp}.f32.s32, rn.f32.u32, rz.f32.s64",
        &c.download::<f32>(pf, 6 * n),
        &wf,
    );
    assert_exact(
        "cvt.rn.f64.s64, rz.f64.u64",
        &c.download::<f64>(pd, 2 * n),
        &wd,
    );
}

#[test]
fn saturate_and_narrow() {
    let mut c = Ctx::new("conversions", "saturate_and_narrow");
    let n = c.rng.usize(500, 2000);
    let a: Vec<f32> = c.rng.vec(n, |r| match r.range_i32(0, 6) {
        0 => f32::NAN,
        1 => r.f32_in(-0.5, 0.0001),
        2 => r.f32_in(2.5, 3.0),
        _ => r.f32_in(0.001, 1.5),
    });
    let b: Vec<i32> = c.rng.vec(n, |r| r.next_u32() as i32);
    let (pa, pb, pf, pi) = (
        c.upload(&a),
        c.upload(&b),
        c.zeros::<f32>(2 * n),
        c.zeros::<i32>(4 * n),
    );
    c.launch(
        "saturateAndNarrow",
        d1(blocks(n, 128)),
        d1(128),
        &[
            Arg::Ptr(pa),
            Arg::Ptr(pb),
            Arg::Ptr(pf),
            Arg::Ptr(pi),
            Arg::I32(n as i32),
        ],
    );
    // cvt.sat.f32.f32 clamps to [0, 1] and turns NaN into +0.
    let sat = |x: f32| {
        if x.is_nan() || x <= 0.0 {
            0.0
        } else {
            x.min(1.0)
        }
    };
    let wf: Vec<f32> = (0..n)
        .flat_map(|i| [sat(a[i]), b[i] as i8 as f32 + b[i] as u16 as f32])
        .collect();
    let wi: Vec<i32> = (0..n)
        .flat_map(|i| {
            let scaled = a[i] * 100.0;
            let u8sat = if scaled.is_nan() {
                0
            } else {
                scaled.round_ties_even().clamp(0.0, 255.0) as i32
            };
            [
                b[i] as u8 as i32,
                b[i] as i16 as i32,
                (b[i] >> 3) as i8 as i32,
                u8sat,
            ]
        })
        .collect();
    assert_exact(
        "saturate / narrow to float",
        &c.download::<f32>(pf, 2 * n),
        &wf,
    );
    assert_exact(
        "narrowing integer conversions, cvt.rni.sat.u8.f32",
        &c.download::<i32>(pi, 4 * n),
        &wi,
    );
}

#[test]
fn rounded_arithmetic() {
    let mut c = Ctx::new("conversions", "rounded_arithmetic");
    let n = c.rng.usize(500, 2000);
    // Magnitudes in [2^-10, 2^10]: sums and products are exact in f64, so rounding the f64
    // result once gives the correctly rounded f32 in every direction.
    let gen = |r: &mut Rng| -> f32 {
        let m = r.f32_in(1.0, 2.0) * (2.0f32).powi(r.range_i32(-10, 10));
        if r.bool() {
            -m
        } else {
            m
        }
    };
    let a: Vec<f32> = c.rng.vec(n, gen);
    let b: Vec<f32> = c.rng.vec(n, gen);
    let (pa, pb, po) = (c.upload(&a), c.upload(&b), c.zeros::<f32>(11 * n));
    c.launch(
        "roundedArith",
        d1(blocks(n, 128)),
        d1(128),
        &[Arg::Ptr(pa), Arg::Ptr(pb), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let modes = [Round::Nearest, Round::Zero, Round::Down, Round::Up];
    let want: Vec<f32> = (0..n)
        .flat_map(|i| {
            let (x, y) = (a[i] as f64, b[i] as f64);
            let mut v: Vec<f32> = modes.iter().map(|m| f64_to_f32(x + y, *m)).collect();
            v.extend(modes.iter().map(|m| f64_to_f32(x * y, *m)));
            v.extend([a[i] / b[i], a[i].abs().sqrt(), 1.0 / b[i]]);
            v
        })
        .collect();
    assert_exact(
        "add/mul .{rn,rz,rm,rp}, div.rn, sqrt.rn, rcp.rn",
        &c.download::<f32>(po, 11 * n),
        &want,
    );
}

#[test]
fn rounding_functions() {
    let mut c = Ctx::new("conversions", "rounding_functions");
    let n = c.rng.usize(500, 2000);
    let a: Vec<f32> = c.rng.vec(n, |r| match r.range_i32(0, 4) {
        0 => r.range_i32(-50, 50) as f32 + 0.5,
        1 => 0.49999997 * if r.bool() { 1.0 } else { -1.0 },
        _ => mixed_f32(r),
    });
    let b: Vec<f64> = c.rng.vec(n, |r| match r.range_i32(0, 4) {
        0 => r.range_i32(-50, 50) as f64 + 0.5,
        1 => 0.49999999999999994 * if r.bool() { 1.0 } else { -1.0 },
        _ => mixed_f64(r),
    });
    let (pa, pb, pf, pd) = (
        c.upload(&a),
        c.upload(&b),
        c.zeros::<f32>(5 * n),
        c.zeros::<f64>(5 * n),
    );
    c.launch(
        "roundingFunctions",
        d1(blocks(n, 128)),
        d1(128),
        &[
            Arg::Ptr(pa),
            Arg::Ptr(pb),
            Arg::Ptr(pf),
            Arg::Ptr(pd),
            Arg::I32(n as i32),
        ],
    );
    let wf: Vec<f32> = a
        .iter()
        .flat_map(|x| {
            [
                x.round_ties_even(),
                x.floor(),
                x.ceil(),
                x.trunc(),
                x.round(),
            ]
        })
        .collect();
    let wd: Vec<f64> = b
        .iter()
        .flat_map(|x| {
            [
                x.round_ties_even(),
                x.floor(),
                x.ceil(),
                x.trunc(),
                x.round(),
            ]
        })
        .collect();
    assert_exact(
        "rintf/floorf/ceilf/truncf/roundf",
        &c.download::<f32>(pf, 5 * n),
        &wf,
    );
    assert_exact(
        "rint/floor/ceil/trunc/round",
        &c.download::<f64>(pd, 5 * n),
        &wd,
    );
}
