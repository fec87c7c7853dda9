//! f16, f16x2 and bf16 arithmetic (NVRTC output of `ptx/half.cu`, which uses cuda_fp16.h and
//! cuda_bf16.h), against an independent round-to-nearest-even reference.

use super::util::*;
use crate::sem::ieee::f16_to_f32;
use crate::*;

/// Round `v` to a binary format with `man` fraction bits and minimum normal exponent `emin`
/// (ties to even); no overflow handling (inputs stay in range).
fn round_to(v: f64, man: i32, emin: i32) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let e = (v.abs().log2().floor() as i32).max(emin);
    let ulp = 2f64.powi(e - man);
    (v / ulp).round_ties_even() * ulp
}

fn h(v: f64) -> f64 {
    round_to(v, 10, -14)
}

fn bf(v: f64) -> f64 {
    round_to(v, 7, -126)
}

#[test]
fn half_and_bfloat16_arithmetic() {
    let dev = Device::new();
    let m = dev.load_module(include_str!("ptx/half.ptx")).unwrap();
    let mut rng = Rng(seed());
    let n = 500;
    // Random finite halves of moderate magnitude (exponent field 5..24).
    let mut gen = || -> u16 {
        let sign = (rng.next() & 1) as u16;
        let exp = 5 + rng.below(20) as u16;
        let man = rng.below(1024) as u16;
        sign << 15 | exp << 10 | man
    };
    let a: Vec<u16> = (0..n).map(|_| gen()).collect();
    let b: Vec<u16> = (0..n).map(|_| gen()).collect();
    let up = |v: &[u16]| {
        let p = dev.alloc(v.len() * 2).unwrap();
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        dev.write(p, 0, &bytes).unwrap();
        p
    };
    let (pa, pb) = (up(&a), up(&b));
    let po = dev.alloc(n * 6).unwrap();
    let pf = dev.alloc(n * 8).unwrap();
    run(
        &dev,
        &m,
        "halves",
        ((n as u32).div_ceil(128), 1, 1),
        (128, 1, 1),
        &[&p64(pa), &p64(pb), &p64(po), &p64(pf), &i32b(n as i32)],
    );
    let mut ob = vec![0u8; n * 6];
    dev.read(po, 0, &mut ob).unwrap();
    let o: Vec<u16> = ob
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let f = download_f32(&dev, pf, 2 * n);
    for i in 0..n {
        let x = f16_to_f32(a[i]) as f64;
        let y = f16_to_f32(b[i]) as f64;
        let s = h(x + y);
        let p = h(x * y + s);
        let got = |k: usize| f16_to_f32(o[3 * i + k]) as f64;
        let same = |g: f64, w: f64| {
            g == w || (g.is_infinite() && w.abs() > 65504.0) || (g == 0.0 && w.abs() < 6e-8)
        };
        assert!(same(got(0), p), "hfma {x} {y}: {} vs {p}", got(0));
        assert!(
            same(got(1), h(x * x)),
            "hmul2 lo {x}: {} vs {}",
            got(1),
            h(x * x)
        );
        assert!(same(got(2), h(y * y)), "hmul2 hi {y}");
        assert_eq!(f[2 * i], (x < y) as i32 as f32);
        let z = bf((x as f32 * 3.0) as f64);
        assert_eq!(f[2 * i + 1] as f64, bf(z * z + z), "bf16 fma of {z}");
    }
}

#[test]
fn half_atomics() {
    let dev = Device::new();
    let m = dev.load_module(include_str!("ptx/half.ptx")).unwrap();
    let h = dev.alloc(4).unwrap();
    let bh = dev.alloc(2).unwrap();
    let h2 = dev.alloc(4).unwrap();
    let mut cfg = config((4, 1, 1), (64, 1, 1));
    cfg.threads = 2;
    let r = dev
        .launch(&m, "half_atomics", &cfg, &[&p64(h), &p64(bh), &p64(h2)])
        .unwrap();
    assert!(r.reports.is_empty());
    let mut b = [0u8; 4];
    dev.read(h, 0, &mut b).unwrap();
    assert_eq!(f16_to_f32(u16::from_le_bytes([b[0], b[1]])), 32.0);
    assert_eq!(f16_to_f32(u16::from_le_bytes([b[2], b[3]])), 32.0);
    dev.read(h2, 0, &mut b).unwrap();
    assert_eq!(f16_to_f32(u16::from_le_bytes([b[0], b[1]])), 256.0);
    assert_eq!(f16_to_f32(u16::from_le_bytes([b[2], b[3]])), 512.0);
    let mut c = [0u8; 2];
    dev.read(bh, 0, &mut c).unwrap();
    assert_eq!(f32::from_bits((u16::from_le_bytes(c) as u32) << 16), 256.0);
}
