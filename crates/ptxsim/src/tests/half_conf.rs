//! Conformance of f16/bf16: every kernel of `ptx/half_conf.cu` (NVRTC 12.9 output for
//! compute_80 and for compute_90) on random bit patterns, compared bit for bit with references
//! built from the `half` crate's decoding, exact f64 arithmetic and an integer rounding routine
//! (`round`) for all four IEEE rounding directions, itself checked against `half`'s
//! round-to-nearest-even.
//!
//! NaN rule (PTX ISA): a NaN result is only required to be a NaN, except where the ISA names
//! the canonical NaN (0x7FFF for f16 and bf16): `min`/`max` of two NaNs, `min.NaN`/`max.NaN`
//! with a NaN operand, and `fma.relu` (NaN results "converted to canonical NaN"). `.sat` maps
//! NaN to +0 and clamps to [+0, 1] (-0 included). Moves (`mov`, packing) keep a NaN's bits.
//! Float-to-integer conversions of NaN give 0, except with a 64-bit destination: 1 << 63
//! (ISA 9.0, `cvt`); out-of-range values saturate.

use super::util::*;
use crate::*;
use half::{bf16, f16};

#[derive(Clone, Copy, PartialEq, Debug)]
enum Fmt {
    H,
    B,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    Rn,
    Rz,
    Rd,
    Ru,
}
const MODES: [Mode; 4] = [Mode::Rn, Mode::Rz, Mode::Rd, Mode::Ru];

impl Fmt {
    fn man(self) -> i32 {
        match self {
            Fmt::H => 10,
            Fmt::B => 7,
        }
    }
    fn emin(self) -> i32 {
        match self {
            Fmt::H => -14,
            Fmt::B => -126,
        }
    }
    fn inf(self) -> u16 {
        match self {
            Fmt::H => 0x7C00,
            Fmt::B => 0x7F80,
        }
    }
    fn one(self) -> u16 {
        match self {
            Fmt::H => 0x3C00,
            Fmt::B => 0x3F80,
        }
    }
    fn val(self, b: u16) -> f64 {
        match self {
            Fmt::H => f16::from_bits(b).to_f64(),
            Fmt::B => bf16::from_bits(b).to_f64(),
        }
    }
    fn is_nan(self, b: u16) -> bool {
        b & 0x7FFF > self.inf()
    }
}

/// The exact value `hi + lo` (`lo` at most half an ulp of `hi`, as from `two_sum`) rounded to
/// `fmt` in direction `mode`, as bits. Integer arithmetic on the quantum of the result's binade.
fn round(fmt: Fmt, hi: f64, lo: f64, mode: Mode) -> u16 {
    if hi.is_nan() {
        return 0x7FFF;
    }
    let sign = if hi.is_sign_negative() { 0x8000 } else { 0 };
    if hi == 0.0 {
        return sign;
    }
    let (h, l) = (hi.abs(), if hi < 0.0 { -lo } else { lo });
    // Directions on the magnitude: toward zero, away from zero, nearest.
    let away = match mode {
        Mode::Rn => None,
        Mode::Rz => Some(false),
        Mode::Rd => Some(sign != 0),
        Mode::Ru => Some(sign == 0),
    };
    let overflow = |away: Option<bool>| {
        sign | if away == Some(false) {
            fmt.inf() - 1
        } else {
            fmt.inf()
        }
    };
    if h.is_infinite() {
        return sign | fmt.inf();
    }
    let mut e = ((h.to_bits() >> 52) as i32) - 1023;
    if h.to_bits() & ((1 << 52) - 1) == 0 && l < 0.0 {
        e -= 1; // just below a power of two
    }
    if e > 200 {
        return overflow(away);
    }
    let be = e.max(fmt.emin());
    let q = 2f64.powi(be - fmt.man());
    let mut k = (h / q).floor();
    let mut rem = h - k * q;
    if rem == 0.0 && l < 0.0 {
        k -= 1.0;
        rem = q;
    }
    let c = (rem - q / 2.0) + l; // sign of (exact remainder - q/2)
    let inexact = rem != 0.0 || l != 0.0;
    let up = match away {
        None => c > 0.0 || (c == 0.0 && k % 2.0 == 1.0),
        Some(a) => a && inexact,
    };
    let k = k as i64 + up as i64;
    let bits = (((be - fmt.emin()) as i64) << fmt.man()) + k;
    if bits >= fmt.inf() as i64 {
        return overflow(away);
    }
    sign | bits as u16
}

fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    if !s.is_finite() {
        return (s, 0.0);
    }
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// What a result must be.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Want {
    Bits(u16),
    /// Any NaN.
    Nan,
    /// The canonical NaN 0x7FFF.
    Canon,
}

fn check16(fmt: Fmt, got: u16, want: Want) -> bool {
    match want {
        Want::Bits(b) => got == b,
        Want::Nan => fmt.is_nan(got),
        Want::Canon => got == 0x7FFF,
    }
}

fn rounded(fmt: Fmt, (hi, lo): (f64, f64)) -> Want {
    if hi.is_nan() {
        Want::Nan
    } else {
        Want::Bits(round(fmt, hi, lo, Mode::Rn))
    }
}

/// The 19 scalar operations of `SCALAR_OPS` in half_conf.cu on bits x, y, z.
fn scalar_ref(fmt: Fmt, k: usize, x: u16, y: u16, z: u16) -> Want {
    let (a, b, c) = (fmt.val(x), fmt.val(y), fmt.val(z));
    let add = two_sum(a, b);
    let sub = two_sum(a, -b);
    let mul = (a * b, 0.0);
    let fma = two_sum(a * b, c);
    let div = {
        let q = a / b;
        let lo = if q.is_finite() && q != 0.0 {
            (-q).mul_add(b, a) / b
        } else {
            0.0
        };
        (q, lo)
    };
    let sat = |r: (f64, f64)| {
        if r.0.is_nan() {
            return Want::Bits(0);
        }
        let v = round(fmt, r.0, r.1, Mode::Rn);
        Want::Bits(if v & 0x8000 != 0 {
            0
        } else if fmt.val(v) > 1.0 {
            fmt.one()
        } else {
            v
        })
    };
    let minmax = |is_max: bool, nan: bool| {
        let (xn, yn) = (fmt.is_nan(x), fmt.is_nan(y));
        if xn && yn || nan && (xn || yn) {
            return Want::Canon;
        }
        if xn {
            return Want::Bits(y);
        }
        if yn {
            return Want::Bits(x);
        }
        // -0 < +0
        let key = |v: f64, bits: u16| (v, bits & 0x8000 == 0);
        let x_first = key(a, x).partial_cmp(&key(b, y)).unwrap() == std::cmp::Ordering::Greater;
        Want::Bits(if x_first == is_max { x } else { y })
    };
    match k {
        0 | 16 => rounded(fmt, add),
        1 | 17 => rounded(fmt, sub),
        2 | 18 => rounded(fmt, mul),
        3 => rounded(fmt, fma),
        4 => sat(add),
        5 => sat(sub),
        6 => sat(mul),
        7 => sat(fma),
        8 => match rounded(fmt, fma) {
            Want::Bits(v) if v & 0x8000 != 0 => Want::Bits(0),
            Want::Nan => Want::Canon,
            w => w,
        },
        9 => minmax(true, false),
        10 => minmax(false, false),
        11 => minmax(true, true),
        12 => minmax(false, true),
        13 if fmt.is_nan(x) => Want::Nan,
        13 => Want::Bits(x ^ 0x8000),
        14 if fmt.is_nan(x) => Want::Nan,
        14 => Want::Bits(x & 0x7FFF),
        15 => rounded(fmt, div),
        _ => unreachable!(),
    }
}

const ARITH_NAMES: [&str; 19] = [
    "add", "sub", "mul", "fma", "add_sat", "sub_sat", "mul_sat", "fma_sat", "fma_relu", "max",
    "min", "max_nan", "min_nan", "neg", "abs", "div", "add_rn", "sub_rn", "mul_rn",
];

/// A random 16-bit pattern of `fmt`: specials, values of every binade, and bit noise.
fn gen16(rng: &mut Rng, fmt: Fmt) -> u16 {
    let inf = fmt.inf();
    let specials = [
        0,
        0x8000,
        inf,
        inf | 0x8000,
        inf + 1,
        0x7FFF,
        inf | (inf >> 1 & !inf) | 0x8000, // quiet NaN, negative
        1,
        0x8001,
        inf - 1,
        (inf - 1) | 0x8000,
        1 << fmt.man(),
        (1 << fmt.man()) - 1,
        fmt.one(),
        fmt.one() | 0x8000,
        fmt.one() + 1,
    ];
    match rng.below(8) {
        0 => specials[rng.below(specials.len() as u64) as usize],
        1 | 2 => rng.next() as u16,
        _ => {
            // Exponent near that of 1.0 (so that operands interact), either sign.
            let e = (fmt.one() >> fmt.man()) as u64;
            let exp = (e + rng.below(13)).saturating_sub(6);
            let man = rng.below(1 << fmt.man());
            ((rng.next() & 1) << 15 | exp << fmt.man() | man) as u16
        }
    }
}

fn modules(dev: &Device) -> [(&'static str, Module); 2] {
    [
        (
            "compute_80",
            dev.load_module(include_str!("ptx/half_conf_80.ptx"))
                .unwrap(),
        ),
        (
            "compute_90",
            dev.load_module(include_str!("ptx/half_conf_90.ptx"))
                .unwrap(),
        ),
    ]
}

fn upload<T: Copy>(dev: &Device, v: &[T], f: impl Fn(T) -> Vec<u8>) -> DevicePtr {
    let bytes: Vec<u8> = v.iter().flat_map(|&x| f(x)).collect();
    let p = dev.alloc(bytes.len().max(1)).unwrap();
    dev.write(p, 0, &bytes).unwrap();
    p
}

fn up16(dev: &Device, v: &[u16]) -> DevicePtr {
    upload(dev, v, |x| x.to_le_bytes().to_vec())
}

fn down(dev: &Device, p: DevicePtr, bytes: usize) -> Vec<u8> {
    let mut b = vec![0u8; bytes];
    dev.read(p, 0, &mut b).unwrap();
    b
}

fn down16(dev: &Device, p: DevicePtr, n: usize) -> Vec<u16> {
    down(dev, p, 2 * n)
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}

fn down64(dev: &Device, p: DevicePtr, n: usize) -> Vec<u64> {
    down(dev, p, 8 * n)
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn launch(dev: &Device, m: &Module, k: &str, n: usize, args: &[DevicePtr]) {
    let ps: Vec<[u8; 8]> = args.iter().map(|&p| p64(p)).collect();
    let nb = i32b(n as i32);
    let mut a: Vec<&[u8]> = ps.iter().map(|p| &p[..]).collect();
    a.push(&nb);
    run(dev, m, k, ((n as u32).div_ceil(128), 1, 1), (128, 1, 1), &a);
}

const N: usize = 1024;

/// Three random inputs of `fmt`; `c` is often close to -(a*b) so that fma cancels.
fn inputs3(rng: &mut Rng, fmt: Fmt) -> (Vec<u16>, Vec<u16>, Vec<u16>) {
    let a: Vec<u16> = (0..N).map(|_| gen16(rng, fmt)).collect();
    let b: Vec<u16> = (0..N).map(|_| gen16(rng, fmt)).collect();
    let c: Vec<u16> = (0..N)
        .map(|i| {
            if rng.below(4) == 0 {
                let p = round(fmt, -(fmt.val(a[i]) * fmt.val(b[i])), 0.0, Mode::Rn);
                p.wrapping_add(rng.below(3) as u16).wrapping_sub(1)
            } else {
                gen16(rng, fmt)
            }
        })
        .collect();
    (a, b, c)
}

#[test]
fn rounding_reference_matches_half_crate() {
    let mut rng = Rng(seed());
    for i in 0..200_000 {
        let x = match i % 3 {
            0 => f32::from_bits(rng.next() as u32),
            1 => f32::from_bits((rng.next() as u32 & 0x8FFF_FFFF) | 0x3000_0000),
            _ => {
                // f16 halfway points and their neighbours.
                let h = f16::from_bits(rng.next() as u16).to_f32();
                f32::from_bits(
                    (h.to_bits() | 0x1000)
                        .wrapping_add(rng.below(3) as u32)
                        .wrapping_sub(1),
                )
            }
        };
        if x.is_nan() {
            continue;
        }
        let v = x as f64;
        assert_eq!(
            round(Fmt::H, v, 0.0, Mode::Rn),
            f16::from_f32(x).to_bits(),
            "{x:e}"
        );
        assert_eq!(
            round(Fmt::B, v, 0.0, Mode::Rn),
            bf16::from_f32(x).to_bits(),
            "{x:e}"
        );
        for fmt in [Fmt::H, Fmt::B] {
            let [n, z, d, u] = MODES.map(|m| round(fmt, v, 0.0, m));
            let (vz, vd, vu) = (fmt.val(z), fmt.val(d), fmt.val(u));
            // Directed results bracket the value, are adjacent, and rz is the one toward 0.
            assert!(vd <= v && v <= vu, "{fmt:?} {x:e}: {vd} {vu}");
            if vd != vu {
                // u is the representable value next above d.
                let next = if d == 0x8000 || d == 0 {
                    1
                } else if d & 0x8000 != 0 {
                    d - 1
                } else {
                    d + 1
                };
                assert_eq!(next, u, "{fmt:?} {x:e}: {d:#06x} {u:#06x}");
            } else {
                assert_eq!(vd, v);
            }
            assert_eq!(vz.abs(), vd.abs().min(vu.abs()), "{fmt:?} rz {x:e}");
            assert!(n == d || n == u);
        }
    }
    // A value above the halfway point by less than an f32 ulp: round once, not twice.
    let tie = 1.0 + 2f64.powi(-11);
    assert_eq!(round(Fmt::H, tie, 2f64.powi(-60), Mode::Rn), 0x3C01);
    assert_eq!(round(Fmt::H, tie, -(2f64.powi(-60)), Mode::Rn), 0x3C00);
    assert_eq!(round(Fmt::H, tie, 0.0, Mode::Rn), 0x3C00);
    assert_eq!(round(Fmt::H, 65520.0, 0.0, Mode::Rn), 0x7C00);
    assert_eq!(round(Fmt::H, 65520.0, -1e-9, Mode::Rn), 0x7BFF);
    assert_eq!(round(Fmt::H, 1e30, 0.0, Mode::Rz), 0x7BFF);
    assert_eq!(round(Fmt::H, -1e30, 0.0, Mode::Rd), 0xFC00);
    assert_eq!(round(Fmt::H, -1e-30, 0.0, Mode::Rd), 0x8001);
    assert_eq!(round(Fmt::H, -1e-30, 0.0, Mode::Ru), 0x8000);
}

fn arith(fmt: Fmt, kernel: &str, pair: bool) {
    let dev = Device::new();
    let mut rng = Rng(seed());
    let (a, b, c) = inputs3(&mut rng, fmt);
    let (pa, pb, pc) = (up16(&dev, &a), up16(&dev, &b), up16(&dev, &c));
    let k = if pair { 38 } else { 19 };
    for (arch, m) in modules(&dev) {
        let po = dev.alloc(2 * k * N).unwrap();
        launch(&dev, &m, kernel, N, &[pa, pb, pc, po]);
        let o = down16(&dev, po, k * N);
        let mut bad = Vec::new();
        for i in 0..N {
            for (j, name) in ARITH_NAMES.iter().enumerate() {
                // Pairs: low half on (x, y, z), high half on (y, z, x).
                let cases: &[(usize, u16, u16, u16)] = if pair {
                    &[(2 * j, a[i], b[i], c[i]), (2 * j + 1, b[i], c[i], a[i])]
                } else {
                    &[(j, a[i], b[i], c[i])]
                };
                for &(s, x, y, z) in cases {
                    let want = scalar_ref(fmt, j, x, y, z);
                    let got = o[k * i + s];
                    if !check16(fmt, got, want) {
                        bad.push(format!(
                            "{arch} {kernel} {name}({x:#06x}, {y:#06x}, {z:#06x}) = {got:#06x}, want {want:x?}"
                        ));
                    }
                }
            }
        }
        assert!(
            bad.is_empty(),
            "{} failures:\n{}",
            bad.len(),
            bad[..bad.len().min(30)].join("\n")
        );
    }
}

#[test]
fn half_arith() {
    arith(Fmt::H, "half_arith", false);
}

#[test]
fn half2_arith() {
    arith(Fmt::H, "half2_arith", true);
}

#[test]
fn bf16_arith() {
    arith(Fmt::B, "bf16_arith", false);
}

#[test]
fn bf162_arith() {
    arith(Fmt::B, "bf162_arith", true);
}

/// The 12 comparisons (eq ne lt le gt ge, then the unordered forms) of x and y.
fn compare(fmt: Fmt, x: u16, y: u16) -> [bool; 12] {
    let o = fmt.val(x).partial_cmp(&fmt.val(y));
    use std::cmp::Ordering::*;
    let ord = [
        o == Some(Equal),
        o.is_some() && o != Some(Equal),
        o == Some(Less),
        matches!(o, Some(Less | Equal)),
        o == Some(Greater),
        matches!(o, Some(Greater | Equal)),
    ];
    let mut r = [false; 12];
    for k in 0..6 {
        r[k] = ord[k];
        r[6 + k] = ord[k] || o.is_none();
    }
    r[7] = o != Some(Equal); // neu: unordered or not equal
    r
}

fn cmp(fmt: Fmt, scalar: &str, pair: &str) {
    let dev = Device::new();
    let mut rng = Rng(seed());
    let (a, b, mut c) = inputs3(&mut rng, fmt);
    // Equal operands, and zeros of both signs, are the cases that matter.
    for i in 0..N {
        if rng.below(4) == 0 {
            c[i] = if rng.below(2) == 0 {
                b[i]
            } else {
                b[i] ^ 0x8000
            };
        }
    }
    let b: Vec<u16> = (0..N)
        .map(|i| if rng.below(5) == 0 { a[i] } else { b[i] })
        .collect();
    let (pa, pb, pc) = (up16(&dev, &a), up16(&dev, &b), up16(&dev, &c));
    for (arch, m) in modules(&dev) {
        let po = dev.alloc(2 * 2 * N).unwrap();
        launch(&dev, &m, scalar, N, &[pa, pb, po]);
        let o = down16(&dev, po, 2 * N);
        let pq = dev.alloc(2 * 51 * N).unwrap();
        launch(&dev, &m, pair, N, &[pa, pb, pc, pq]);
        let q = down16(&dev, pq, 51 * N);
        for i in 0..N {
            let (x, y, z) = (a[i], b[i], c[i]);
            let r = compare(fmt, x, y);
            let mut bits = 0u16;
            for (k, &t) in r.iter().enumerate() {
                bits |= (t as u16) << k;
            }
            bits |= (fmt.is_nan(x) as u16) << 12;
            let inf = if x == fmt.inf() {
                1
            } else if x == fmt.inf() | 0x8000 {
                0xFFFF
            } else {
                0
            };
            assert_eq!(
                (o[2 * i], o[2 * i + 1]),
                (bits, inf),
                "{arch} {scalar}({x:#06x}, {y:#06x})"
            );
            // Pairs: p = (x, y), q = (y, z).
            let lo = r;
            let hi = compare(fmt, y, z);
            let w = &q[51 * i..51 * (i + 1)];
            let mut both = 0u16;
            for k in 0..12 {
                let f = |t: bool| if t { fmt.one() } else { 0 };
                let mk = |t: bool| if t { 0xFFFF } else { 0 };
                let ctx = format!("{arch} {pair} #{k} ({x:#06x}, {y:#06x}) ({y:#06x}, {z:#06x})");
                assert_eq!(
                    (w[2 * k], w[2 * k + 1]),
                    (f(lo[k]), f(hi[k])),
                    "{ctx} half2"
                );
                assert_eq!(
                    (w[24 + 2 * k], w[25 + 2 * k]),
                    (mk(lo[k]), mk(hi[k])),
                    "{ctx} mask"
                );
                both |= ((lo[k] && hi[k]) as u16) << k;
            }
            assert_eq!(
                w[48], both,
                "{arch} {pair} hb* ({x:#06x}, {y:#06x}, {z:#06x})"
            );
            let f = |t: bool| if t { fmt.one() } else { 0 };
            assert_eq!(
                (w[49], w[50]),
                (f(fmt.is_nan(x)), f(fmt.is_nan(y))),
                "{arch} {pair} isnan2"
            );
        }
    }
}

#[test]
fn half_comparisons() {
    cmp(Fmt::H, "half_cmp", "half2_cmp");
}

#[test]
fn bf16_comparisons() {
    cmp(Fmt::B, "bf16_cmp", "bf162_cmp");
}

/// f32 inputs: bit noise, and f16/bf16 halfway points (in the normal and subnormal range of
/// each) with their f32 neighbours.
fn gen_f32(rng: &mut Rng) -> f32 {
    let nb = |rng: &mut Rng| rng.below(3) as u32;
    match rng.below(6) {
        0 => f32::from_bits(rng.next() as u32),
        1 => {
            let h = f16::from_bits(rng.next() as u16).to_f32().to_bits();
            f32::from_bits((h | 0x1000).wrapping_add(nb(rng)).wrapping_sub(1))
        }
        2 => {
            let h = (rng.next() as u32) & 0xFFFF_0000;
            f32::from_bits((h | 0x8000).wrapping_add(nb(rng)).wrapping_sub(1))
        }
        3 => {
            // f16 subnormal halfway points: (m + 1/2) 2^-24.
            let v = (rng.below(2048) as f32 + 0.5) * 2f32.powi(-24);
            let v = f32::from_bits(v.to_bits().wrapping_add(nb(rng)).wrapping_sub(1));
            if rng.below(2) == 0 {
                -v
            } else {
                v
            }
        }
        4 => (rng.f32() * 70000.0) * if rng.below(2) == 0 { 1.0 } else { 1e-5 },
        _ => f32::from_bits((gen16(rng, Fmt::B) as u32) << 16 | rng.below(1 << 16) as u32),
    }
}

#[test]
fn conversions_from_f32_and_f64() {
    let dev = Device::new();
    let mut rng = Rng(seed());
    let x: Vec<f32> = (0..N).map(|_| gen_f32(&mut rng)).collect();
    let y: Vec<f32> = (0..N).map(|_| gen_f32(&mut rng)).collect();
    // f64: f32 inputs widened, and values one f64 ulp off an f16/bf16 halfway point (where
    // rounding through f32 would round twice).
    let d: Vec<f64> = (0..N)
        .map(|i| match rng.below(4) {
            0 => f64::from_bits(rng.next()),
            1 => x[i] as f64,
            2 => {
                let h = f16::from_bits(rng.next() as u16).to_f64().to_bits();
                f64::from_bits((h | 1 << 41).wrapping_add(rng.below(3)).wrapping_sub(1))
            }
            _ => {
                let h = bf16::from_bits(rng.next() as u16).to_f64().to_bits();
                f64::from_bits((h | 1 << 44).wrapping_add(rng.below(3)).wrapping_sub(1))
            }
        })
        .collect();
    let px = upload(&dev, &x, |v| v.to_bits().to_le_bytes().to_vec());
    let py = upload(&dev, &y, |v| v.to_bits().to_le_bytes().to_vec());
    let pd = upload(&dev, &d, |v| v.to_bits().to_le_bytes().to_vec());
    let want = |fmt: Fmt, v: f64, m: Mode| {
        if v.is_nan() {
            Want::Nan
        } else {
            Want::Bits(round(fmt, v, 0.0, m))
        }
    };
    for (arch, m) in modules(&dev) {
        let po = dev.alloc(2 * 22 * N).unwrap();
        launch(&dev, &m, "from_f32", N, &[px, py, po]);
        let o = down16(&dev, po, 22 * N);
        let pe = dev.alloc(2 * 2 * N).unwrap();
        launch(&dev, &m, "from_f64", N, &[pd, pe]);
        let e = down16(&dev, pe, 2 * N);
        for i in 0..N {
            let (u, v) = (x[i] as f64, y[i] as f64);
            let w = &o[22 * i..22 * (i + 1)];
            let mut exp: Vec<(Fmt, Want)> = Vec::new();
            for fmt in [Fmt::H, Fmt::B] {
                for md in MODES {
                    exp.push((fmt, want(fmt, u, md)));
                }
                exp.push((fmt, want(fmt, u, Mode::Rn)));
            }
            for fmt in [Fmt::H, Fmt::B] {
                for (lo, hi) in [(u, v), (u, v), (u, u)] {
                    exp.push((fmt, want(fmt, lo, Mode::Rn)));
                    exp.push((fmt, want(fmt, hi, Mode::Rn)));
                }
            }
            for (j, &(fmt, wnt)) in exp.iter().enumerate() {
                assert!(
                    check16(fmt, w[j], wnt),
                    "{arch} from_f32 #{j} of {:#010x}, {:#010x}: {:#06x}, want {wnt:x?}",
                    x[i].to_bits(),
                    y[i].to_bits(),
                    w[j]
                );
            }
            for (j, fmt) in [Fmt::H, Fmt::B].into_iter().enumerate() {
                let wnt = want(fmt, d[i], Mode::Rn);
                assert!(
                    check16(fmt, e[2 * i + j], wnt),
                    "{arch} from_f64 {fmt:?} of {:#018x}: {:#06x}, want {wnt:x?}",
                    d[i].to_bits(),
                    e[2 * i + j]
                );
            }
        }
    }
}

#[test]
fn conversions_to_f32_and_integers() {
    let dev = Device::new();
    let mut rng = Rng(seed());
    let a: Vec<u16> = (0..N)
        .map(|_| match rng.below(3) {
            0 => gen16(&mut rng, Fmt::H),
            1 => gen16(&mut rng, Fmt::B),
            // Halfway between integers, and values near the integer types' limits.
            _ => {
                let fmt = if rng.below(2) == 0 { Fmt::H } else { Fmt::B };
                let v = [
                    0.5,
                    1.5,
                    2.5,
                    -0.5,
                    -1.5,
                    -2.5,
                    127.5,
                    128.0,
                    255.5,
                    256.0,
                    -128.5,
                    32767.0,
                    32768.0,
                    65504.0,
                    -32768.0,
                    -32769.0,
                    4294967296.0,
                    2147483648.0,
                    -2147483648.0,
                    9.3e18,
                    1.9e19,
                    -9.3e18,
                ][rng.below(22) as usize];
                match fmt {
                    Fmt::H => f16::from_f64(v).to_bits(),
                    Fmt::B => bf16::from_f64(v).to_bits(),
                }
            }
        })
        .collect();
    let b: Vec<u16> = (0..N).map(|_| rng.next() as u16).collect();
    let (pa, pb) = (up16(&dev, &a), up16(&dev, &b));
    // (bits, signed) of int uint short ushort ll ull, then char uchar.
    let types = [
        (32, true),
        (32, false),
        (16, true),
        (16, false),
        (64, true),
        (64, false),
    ];
    let to_int = |v: f64, m: Mode, bits: u32, signed: bool| -> u64 {
        if v.is_nan() {
            return if bits == 64 { 1 << 63 } else { 0 };
        }
        let r = match m {
            Mode::Rn => v.round_ties_even(),
            Mode::Rz => v.trunc(),
            Mode::Rd => v.floor(),
            Mode::Ru => v.ceil(),
        };
        let (lo, hi) = if signed {
            (
                -(2f64.powi(bits as i32 - 1)),
                2f64.powi(bits as i32 - 1) - 1.0,
            )
        } else {
            (0.0, 2f64.powi(bits as i32) - 1.0)
        };
        let r = r.clamp(lo, hi);
        if signed {
            r as i64 as u64
        } else {
            r as u64
        }
    };
    for (arch, m) in modules(&dev) {
        let pf = dev.alloc(4 * 6 * N).unwrap();
        launch(&dev, &m, "to_f32", N, &[pa, pb, pf]);
        let f = download_u32(&dev, pf, 6 * N);
        let pi = dev.alloc(8 * 52 * N).unwrap();
        launch(&dev, &m, "to_int", N, &[pa, pi]);
        let o = down64(&dev, pi, 52 * N);
        for i in 0..N {
            let (x, y) = (a[i], b[i]);
            let w = [
                f16::from_bits(x).to_f32(),
                bf16::from_bits(x).to_f32(),
                f16::from_bits(x).to_f32(),
                f16::from_bits(y).to_f32(),
                bf16::from_bits(x).to_f32(),
                bf16::from_bits(y).to_f32(),
            ];
            for j in 0..6 {
                let g = f32::from_bits(f[6 * i + j]);
                assert!(
                    g.to_bits() == w[j].to_bits() || g.is_nan() && w[j].is_nan(),
                    "{arch} to_f32 #{j} of {x:#06x}, {y:#06x}: {g:e}, want {:e}",
                    w[j]
                );
            }
            let w = &o[52 * i..52 * (i + 1)];
            for (t, fmt) in [Fmt::H, Fmt::B].into_iter().enumerate() {
                let v = fmt.val(x);
                for (s, &(bits, signed)) in types.iter().enumerate() {
                    for (r, &md) in MODES.iter().enumerate() {
                        let j = 24 * t + 4 * s + r;
                        let want = to_int(v, md, bits, signed);
                        assert_eq!(
                            w[j],
                            want,
                            "{arch} to_int {fmt:?} {x:#06x} ({v}) to {}{bits} {md:?}",
                            if signed { "s" } else { "u" }
                        );
                    }
                }
                let (sc, uc) = (to_int(v, Mode::Rz, 8, true), to_int(v, Mode::Rz, 8, false));
                assert_eq!(
                    (w[48 + 2 * t], w[49 + 2 * t]),
                    (sc, uc),
                    "{arch} {fmt:?} {x:#06x} to char/uchar"
                );
            }
        }
    }
}

#[test]
fn conversions_from_integers() {
    let dev = Device::new();
    let mut rng = Rng(seed());
    let d: Vec<u64> = (0..N)
        .map(|_| match rng.below(4) {
            0 => rng.next(),
            1 => rng.next() >> rng.below(64),
            2 => (rng.next() >> rng.below(64)).wrapping_neg(),
            // Halfway points of f16 (12 significant bits) and bf16 (9), and neighbours.
            _ => {
                let w = if rng.below(2) == 0 { 12 } else { 9 };
                let m = (rng.next() & ((1 << w) - 1)) | 1 | 1 << (w - 1);
                let v = (m << rng.below(64 - w))
                    .wrapping_add(rng.below(3))
                    .wrapping_sub(1);
                if rng.below(2) == 0 {
                    v.wrapping_neg()
                } else {
                    v
                }
            }
        })
        .collect();
    let pd = upload(&dev, &d, |v| v.to_le_bytes().to_vec());
    for (arch, m) in modules(&dev) {
        let po = dev.alloc(2 * 48 * N).unwrap();
        launch(&dev, &m, "from_int", N, &[pd, po]);
        let o = down16(&dev, po, 48 * N);
        for i in 0..N {
            let v = d[i];
            let srcs: [(i128, &str); 6] = [
                (v as i32 as i128, "int"),
                (v as u32 as i128, "uint"),
                (v as i16 as i128, "short"),
                (v as u16 as i128, "ushort"),
                (v as i64 as i128, "ll"),
                (v as i128, "ull"),
            ];
            for (t, fmt) in [Fmt::H, Fmt::B].into_iter().enumerate() {
                for (s, &(x, name)) in srcs.iter().enumerate() {
                    let hi = x as f64;
                    let lo = (x - hi as i128) as f64;
                    for (r, &md) in MODES.iter().enumerate() {
                        let want = round(fmt, hi, lo, md);
                        let got = o[48 * i + 24 * t + 4 * s + r];
                        assert_eq!(
                            got, want,
                            "{arch} {name} {x} to {fmt:?} {md:?}: {got:#06x}, want {want:#06x}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn moves_between_halves() {
    let dev = Device::new();
    let mut rng = Rng(seed());
    let v: Vec<Vec<u16>> = (0..3)
        .map(|_| (0..N).map(|_| rng.next() as u16).collect())
        .collect();
    let (pa, pb, pc) = (up16(&dev, &v[0]), up16(&dev, &v[1]), up16(&dev, &v[2]));
    for (arch, m) in modules(&dev) {
        let po = dev.alloc(2 * 32 * N).unwrap();
        launch(&dev, &m, "moves", N, &[pa, pb, pc, po]);
        let o = down16(&dev, po, 32 * N);
        for i in 0..N {
            let (x, y, z) = (v[0][i], v[1][i], v[2][i]);
            // p = (x, y), q = (y, z): halves2, lowhigh2highlow, low, high, low2half2,
            // high2half2, lows2half2(p, q), highs2half2(p, q), half2half2(x).
            let want = [x, y, y, x, x, y, x, x, y, y, x, y, y, z, x, x];
            for t in 0..2 {
                assert_eq!(
                    &o[32 * i + 16 * t..32 * i + 16 * t + 16],
                    &want[..],
                    "{arch} moves #{t}"
                );
            }
        }
    }
}
