//! Warp intrinsics on NVRTC output of `ptx/warp.cu`, checked lane by lane.

use super::util::*;
use crate::*;

const PTX: &str = include_str!("ptx/warp.ptx");

#[test]
fn shuffles_votes_match_reduce() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let mut rng = Rng(seed());
    let n = 256usize;
    let v: Vec<i32> = (0..n).map(|_| (rng.next() % 9) as i32 - 2).collect();
    let pi = upload_i32(&dev, &v);
    let po = dev.alloc(n * 12 * 4).unwrap();
    run(
        &dev,
        &m,
        "warpops",
        (2, 1, 1),
        (128, 1, 1),
        &[&p64(pi), &p64(po), &i32b(n as i32)],
    );
    let out = download_i32(&dev, po, n * 12);
    for i in 0..n {
        let base = i / 32 * 32;
        let lane = i % 32;
        let w = |l: usize| v[base + l];
        let o = &out[i * 12..i * 12 + 12];
        assert_eq!(o[0], w((lane * 7) & 31), "shfl idx lane {i}");
        assert_eq!(
            o[1],
            if lane >= 3 { w(lane - 3) } else { w(lane) },
            "shfl up {i}"
        );
        assert_eq!(
            o[2],
            if lane + 5 < 32 { w(lane + 5) } else { w(lane) },
            "shfl down {i}"
        );
        assert_eq!(o[3], w(lane ^ 6), "shfl xor {i}");
        let seg = lane & !7;
        assert_eq!(
            o[4],
            if (lane & 7) + 2 < 8 {
                w(lane + 2)
            } else {
                w(lane)
            },
            "shfl down width 8 {i} seg {seg}"
        );
        let ballot = (0..32).fold(0u32, |a, l| a | (((w(l) & 1 != 0) as u32) << l));
        assert_eq!(o[5] as u32, ballot);
        assert_eq!(o[6], 1);
        assert_eq!(o[7], (0..32).any(|l| w(l) == 3) as i32);
        let am = (0..32).fold(0u32, |a, l| a | (((w(l) & 2 != 0) as u32) << l));
        assert_eq!(
            o[8] as u32,
            if v[i] & 2 != 0 { am } else { 0 },
            "activemask {i}"
        );
        let mt = (0..32).fold(0u32, |a, l| a | (((w(l) & 3 == v[i] & 3) as u32) << l));
        assert_eq!(o[9] as u32, mt, "match_any {i}");
        assert_eq!(o[10], (0..32).map(w).sum::<i32>());
        let x = v[i] as u32;
        let ffs = if x == 0 {
            0
        } else {
            x.trailing_zeros() as i32 + 1
        };
        let want = (x.count_ones() as i32)
            .wrapping_add(x.leading_zeros() as i32)
            .wrapping_add(ffs)
            .wrapping_add(x.reverse_bits() as i32);
        assert_eq!(o[11], want, "bit ops {i}");
    }
}

#[test]
fn warp_sz_is_the_warp_size() {
    // NVRTC writes `warpSize` as the PTX constant WARP_SZ (`i % warpSize`, `i / warpSize`).
    let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 out)\n{\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\nld.param.u64 %rd1, [out];\ncvta.to.global.u64 %rd2, %rd1;\nmov.u32 %r1, %tid.x;\nrem.u32 %r2, %r1, WARP_SZ;\nmov.u32 %r3, WARP_SZ;\nadd.u32 %r2, %r2, %r3;\nmul.wide.u32 %rd3, %r1, 4;\nadd.s64 %rd3, %rd2, %rd3;\nst.global.u32 [%rd3], %r2;\nret;\n}\n";
    let dev = Device::new();
    let m = dev.load_module(ptx).expect("WARP_SZ loads");
    let out = upload_u32(&dev, &[0; 64]);
    run(&dev, &m, "k", (1, 1, 1), (64, 1, 1), &[&p64(out)]);
    let want: Vec<u32> = (0..64).map(|i| i % 32 + 32).collect();
    assert_eq!(download_u32(&dev, out, 64), want);
}
