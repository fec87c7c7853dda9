//! CUB collectives (NVRTC output of `ptx/cub.cu`, built with the CCCL headers): block reduce,
//! block exclusive scan, warp reduce and block radix sort against CPU references.

use super::util::*;
use crate::*;

#[test]
fn cub_block_reduce_scan_warp_reduce_and_radix_sort() {
    let dev = Device::new();
    let m = dev.load_module(include_str!("ptx/cub.ptx")).unwrap();
    let mut rng = Rng(seed());
    let blocks = 6usize;
    let n = blocks * 128 - rng.below(100) as usize;
    let v: Vec<i32> = (0..n)
        .map(|_| (rng.next() % 20001) as i32 - 10000)
        .collect();
    let pi = upload_i32(&dev, &v);
    let po = dev.alloc((5 * n + blocks) * 4).unwrap();
    let pf = dev.alloc(n * 4).unwrap();
    let mut cfg = config((blocks as u32, 1, 1), (128, 1, 1));
    cfg.threads = 2;
    let r = dev
        .launch(
            &m,
            "cubk",
            &cfg,
            &[&p64(pi), &p64(po), &p64(pf), &i32b(n as i32)],
        )
        .unwrap();
    assert!(r.reports.is_empty(), "{:#?}", r.reports);
    let out = download_i32(&dev, po, 5 * n + blocks);
    let f = download_f32(&dev, pf, n);
    for b in 0..blocks {
        let vals: Vec<i32> = (0..128)
            .map(|t| v.get(b * 128 + t).copied().unwrap_or(0))
            .collect();
        assert_eq!(out[5 * n + b], vals.iter().sum::<i32>(), "block sum {b}");
        let mut keys: Vec<i32> = vals.iter().flat_map(|&x| [x, x * 3, -x, x ^ 5]).collect();
        keys.sort();
        let mut pre = 0;
        for t in 0..128 {
            let i = b * 128 + t;
            if i < n {
                assert_eq!(out[i], pre, "exclusive scan at {i}");
                for k in 0..4 {
                    assert_eq!(
                        out[n + 4 * i + k],
                        keys[4 * t + k],
                        "sorted key {k} of thread {t} block {b}"
                    );
                }
                if t % 32 == 0 {
                    let ws: i32 = vals[t..t + 32].iter().sum();
                    assert_eq!(f[i], ws as f32, "warp reduce at {i}");
                }
            }
            pre += vals[t];
        }
    }
}
