//! The integer SIMD intrinsics whose PTX is a video instruction or an sm_90 integer pair
//! instruction (NVRTC 12.9 output of `ptx/simd_video.cu` for compute_80 and compute_90), on
//! random inputs against references written from the CUDA Math API's definitions.

use super::util::*;
use crate::*;

fn halves(v: u32, signed: bool) -> [i64; 2] {
    let h = |k: u32| {
        let e = (v >> (16 * k)) & 0xFFFF;
        if signed {
            e as u16 as i16 as i64
        } else {
            e as i64
        }
    };
    [h(0), h(1)]
}

fn bytes(v: u32, signed: bool) -> [i64; 4] {
    let b = |k: u32| {
        let e = (v >> (8 * k)) & 0xFF;
        if signed {
            e as u8 as i8 as i64
        } else {
            e as i64
        }
    };
    [b(0), b(1), b(2), b(3)]
}

fn pack2(f: impl Fn(usize) -> i64) -> u32 {
    (f(0) as u32 & 0xFFFF) | (f(1) as u32 & 0xFFFF) << 16
}

/// `__fns(mask, base, offset)`: the CUDA Math API's definition.
fn fns(mask: u32, base: u32, offset: i32) -> u32 {
    if offset == 0 {
        return if base < 32 && mask >> base & 1 == 1 {
            base
        } else {
            u32::MAX
        };
    }
    let step = offset.signum() as i64;
    let mut left = offset.unsigned_abs();
    let mut p = base as i64;
    while (0..32).contains(&p) {
        if mask >> p & 1 == 1 {
            left -= 1;
            if left == 0 {
                return p as u32;
            }
        }
        p += step;
    }
    u32::MAX
}

fn expected(x: u32, y: u32, z: i32) -> [u32; 16] {
    let (xb, yb) = (bytes(x, false), bytes(y, false));
    let (xs, ys) = (halves(x, true), halves(y, true));
    let (xu, yu) = (halves(x, false), halves(y, false));
    let (ysb, yub) = (bytes(y, true), bytes(y, false));
    let dp2 = |hi: bool, signed: bool| {
        let (a, b) = if signed { (xs, ysb) } else { (xu, yub) };
        let k = if hi { 2 } else { 0 };
        (z as u32).wrapping_add((a[0] * b[k] + a[1] * b[k + 1]) as u32)
    };
    let absdiff4 = (0..4).fold(0u32, |acc, k| {
        acc | ((xb[k] - yb[k]).unsigned_abs() as u32) << (8 * k)
    });
    [
        absdiff4,
        (0..4).map(|k| (xb[k] - yb[k]).unsigned_abs() as u32).sum(),
        (0..2).map(|k| (xu[k] - yu[k]).unsigned_abs() as u32).sum(),
        dp2(false, true),
        dp2(true, true),
        dp2(false, false),
        dp2(true, false),
        fns(x, z as u32 & 31, (y % 67) as i32 - 33),
        pack2(|k| xu[k] + yu[k]),
        pack2(|k| xu[k] - yu[k]),
        pack2(|k| xs[k].max(ys[k])),
        pack2(|k| xu[k].max(yu[k])),
        pack2(|k| xs[k].min(ys[k])),
        pack2(|k| xu[k].min(yu[k])),
        pack2(|k| xs[k].max(ys[k]).max(0)),
        pack2(|k| xs[k].min(ys[k]).max(0)),
    ]
}

const NAMES: [&str; 16] = [
    "__vabsdiffu4",
    "__vsadu4",
    "__vsadu2",
    "__dp2a_lo(int)",
    "__dp2a_hi(int)",
    "__dp2a_lo(unsigned)",
    "__dp2a_hi(unsigned)",
    "__fns",
    "__vadd2",
    "__vsub2",
    "__vmaxs2",
    "__vmaxu2",
    "__vmins2",
    "__vminu2",
    "__vimax_s16x2_relu",
    "__vimin_s16x2_relu",
];

#[test]
fn simd_video_intrinsics_match_their_definitions() {
    let mut rng = Rng(seed());
    let n = 2000;
    // Random words, and words made of extreme elements (0, 1, 0x7F.., 0x80.., 0xFF..).
    let word = |rng: &mut Rng| -> u32 {
        if rng.below(3) == 0 {
            let pick = [0x00u32, 0x01, 0x7F, 0x80, 0xFF];
            (0..4).fold(0, |w, k| w | pick[rng.below(5) as usize] << (8 * k))
        } else {
            rng.next() as u32
        }
    };
    let a: Vec<u32> = (0..n).map(|_| word(&mut rng)).collect();
    let b: Vec<u32> = (0..n).map(|_| word(&mut rng)).collect();
    let c: Vec<i32> = (0..n).map(|_| rng.next() as i32).collect();
    for (arch, ptx) in [
        ("compute_80", include_str!("ptx/simd_video_80.ptx")),
        ("compute_90", include_str!("ptx/simd_video_90.ptx")),
    ] {
        let dev = Device::new();
        let m = dev
            .load_module(ptx)
            .unwrap_or_else(|e| panic!("{arch}: {e}"));
        let (pa, pb, pc) = (
            upload_u32(&dev, &a),
            upload_u32(&dev, &b),
            upload_i32(&dev, &c),
        );
        let po = dev.alloc(16 * 4 * n).unwrap();
        run(
            &dev,
            &m,
            "simd_video",
            ((n as u32).div_ceil(128), 1, 1),
            (128, 1, 1),
            &[&p64(pa), &p64(pb), &p64(pc), &p64(po), &i32b(n as i32)],
        );
        let out = download_u32(&dev, po, 16 * n);
        for i in 0..n {
            let want = expected(a[i], b[i], c[i]);
            for k in 0..16 {
                assert_eq!(
                    out[16 * i + k],
                    want[k],
                    "{arch} {}({:#010x}, {:#010x}, {}): got {:#010x}, want {:#010x}",
                    NAMES[k],
                    a[i],
                    b[i],
                    c[i],
                    out[16 * i + k],
                    want[k]
                );
            }
        }
    }
}
