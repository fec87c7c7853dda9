//! cp.async pipelines and cooperative groups (NVRTC output of `ptx/extra.cu`).

use super::util::*;
use crate::*;

const PTX: &str = include_str!("ptx/extra.ptx");

#[test]
fn pipeline_memcpy_async() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let mut rng = Rng(seed());
    let n = 256 * 5;
    let v: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let (pi, po) = (upload_f32(&dev, &v), dev.alloc(n * 4).unwrap());
    run(
        &dev,
        &m,
        "pipeline_copy",
        (5, 1, 1),
        (256, 1, 1),
        &[&p64(pi), &p64(po), &i32b(n as i32)],
    );
    let o = download_f32(&dev, po, n);
    for (i, &x) in o.iter().enumerate() {
        let (b, t) = (i / 256, i % 256);
        assert_eq!(x, v[b * 256 + 255 - t] * 2.0);
    }
}

#[test]
fn cooperative_groups_tiles() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let mut rng = Rng(seed());
    let n = 1000;
    let v: Vec<i32> = (0..n)
        .map(|_| (rng.next() % 100_000) as i32 - 50_000)
        .collect();
    let (pi, po) = (upload_i32(&dev, &v), dev.alloc(3 * n * 4).unwrap());
    run(
        &dev,
        &m,
        "groups",
        ((n as u32).div_ceil(128), 1, 1),
        (128, 1, 1),
        &[&p64(pi), &p64(po), &i32b(n as i32)],
    );
    let o = download_i32(&dev, po, 3 * n);
    let at = |k: usize| v.get(k).copied().unwrap_or(0);
    for i in 0..n {
        let w = i / 32 * 32;
        if i % 32 == 0 {
            // shfl_down accumulates with lanes beyond 31 reading their own value.
            let mut s: Vec<i32> = (0..32).map(|l| at(w + l)).collect();
            let mut o2 = 16;
            while o2 > 0 {
                let prev = s.clone();
                for l in 0..32 {
                    s[l] += if l + o2 < 32 { prev[l + o2] } else { prev[l] };
                }
                o2 /= 2;
            }
            assert_eq!(o[3 * i], s[0], "warp sum at {i}");
        } else {
            assert_eq!(o[3 * i], -1);
        }
        let t8 = i / 8 * 8;
        assert_eq!(
            o[3 * i + 1],
            (0..8).map(|k| at(t8 + k)).max().unwrap(),
            "tile max at {i}"
        );
        let x = v[i];
        assert_eq!(o[3 * i + 2], (x & 0x0F0F) ^ (!x & 0x3333) | (x & !0x5555));
    }
}
