//! Warp intrinsics: shfl (up/down/xor/idx, sub-warp widths), vote (all/any/uni/ballot),
//! activemask in divergent code, __syncwarp-ordered shared memory, %laneid.

use crate::common::*;

/// Input padded with `pad` to whole warps (out-of-range lanes hold `pad` in the kernels).
fn padded<T: Copy>(x: &[T], pad: T) -> Vec<T> {
    let mut v = x.to_vec();
    v.resize(x.len().div_ceil(32) * 32, pad);
    v
}

#[test]
fn shuffle_modes() {
    shuffle_modes_on("warp");
}

/// `shuffle_modes` on the fixture `fx` (also run on other targets by `archs`).
pub fn shuffle_modes_on(fx: &str) {
    let mut c = Ctx::new(fx, "shuffle_modes");
    let n = c.rng.usize(500, 3000);
    let delta = c.rng.range_i32(1, 32);
    let x: Vec<i32> = c.rng.vec(n, |r| r.next_u32() as i32);
    let px = c.upload(&x);
    let outs: Vec<_> = (0..4).map(|_| c.zeros::<i32>(n)).collect();
    let mut args = vec![Arg::Ptr(px)];
    args.extend(outs.iter().map(|p| Arg::Ptr(*p)));
    args.extend([Arg::I32(n as i32), Arg::I32(delta)]);
    c.launch("shuffleModes", d1(blocks(n, 128)), d1(128), &args);
    let v = padded(&x, 0);
    let d = delta as usize;
    let (mut up, mut down, mut xr, mut idx) = (vec![0; n], vec![0; n], vec![0; n], vec![0; n]);
    for i in 0..n {
        let (w, l) = (i / 32 * 32, i % 32);
        up[i] = if l >= d { v[i - d] } else { v[i] };
        down[i] = if l + d < 32 { v[i + d] } else { v[i] };
        xr[i] = v[w + (l ^ d)];
        idx[i] = v[w + ((l * 7 + d) & 31)];
    }
    assert_exact("shfl.up", &c.download::<i32>(outs[0], n), &up);
    assert_exact("shfl.down", &c.download::<i32>(outs[1], n), &down);
    assert_exact("shfl.bfly", &c.download::<i32>(outs[2], n), &xr);
    assert_exact("shfl.idx", &c.download::<i32>(outs[3], n), &idx);
}

#[test]
fn shuffle_widths() {
    let mut c = Ctx::new("warp", "shuffle_widths");
    let n = c.rng.usize(500, 3000);
    let x: Vec<f32> = c.rng.vec(n, |r| r.f32_in(-100.0, 100.0));
    let (px, p8, p16, pd) = (
        c.upload(&x),
        c.zeros::<f32>(n),
        c.zeros::<f32>(2 * n),
        c.zeros::<f64>(n),
    );
    c.launch(
        "shuffleWidths",
        d1(blocks(n, 64)),
        d1(64),
        &[
            Arg::Ptr(px),
            Arg::Ptr(p8),
            Arg::Ptr(p16),
            Arg::Ptr(pd),
            Arg::I32(n as i32),
        ],
    );
    let v = padded(&x, 0.0);
    let (mut o8, mut o16, mut od) = (vec![0f32; n], vec![0f32; 2 * n], vec![0f64; n]);
    for i in 0..n {
        let l = i % 32;
        o8[i] = if l % 8 + 3 < 8 { v[i + 3] } else { v[i] };
        o16[2 * i] = v[i - l % 16 + 5];
        o16[2 * i + 1] = if l % 16 >= 2 { v[i - 2] } else { v[i] };
        od[i] = v[i - l + (l ^ 4)] as f64 * 2.0;
    }
    assert_exact("shfl.down width 8", &c.download::<f32>(p8, n), &o8);
    assert_exact(
        "shfl.idx / shfl.up width 16",
        &c.download::<f32>(p16, 2 * n),
        &o16,
    );
    assert_exact("shfl.bfly width 8 (f64)", &c.download::<f64>(pd, n), &od);
}

#[test]
fn votes() {
    votes_on("warp");
}

/// `votes` on the fixture `fx` (also run on other targets by `archs`).
pub fn votes_on(fx: &str) {
    let mut c = Ctx::new(fx, "votes");
    let n = c.rng.usize(500, 3000);
    // Mostly positive, with whole warps that are all positive, and rare large values.
    let x: Vec<i32> = c.rng.vec(n, |r| {
        let k = r.range_i32(0, 100);
        if k < 2 {
            -r.range_i32(0, 5)
        } else if k < 4 {
            r.range_i32(1001, 2000)
        } else {
            r.range_i32(1, 1000)
        }
    });
    let px = c.upload(&x);
    let (pa, pn, pb, pu) = (
        c.zeros::<i32>(n),
        c.zeros::<i32>(n),
        c.zeros::<u32>(n),
        c.zeros::<i32>(n),
    );
    c.launch(
        "votes",
        d1(blocks(n, 96)),
        d1(96),
        &[
            Arg::Ptr(px),
            Arg::Ptr(pa),
            Arg::Ptr(pn),
            Arg::Ptr(pb),
            Arg::Ptr(pu),
            Arg::I32(n as i32),
        ],
    );
    let v = padded(&x, 0);
    let (mut all, mut any, mut ballot, mut uni) =
        (vec![0; n], vec![0; n], vec![0u32; n], vec![0; n]);
    for i in 0..n {
        let w = &v[i / 32 * 32..i / 32 * 32 + 32];
        all[i] = w.iter().all(|&a| a > 0) as i32;
        any[i] = w.iter().any(|&a| a > 1000) as i32;
        ballot[i] = w
            .iter()
            .enumerate()
            .fold(0, |m, (l, &a)| m | (((a & 1) as u32) << l));
        let first = w[0] >= 0;
        uni[i] = w.iter().all(|&a| (a >= 0) == first) as i32;
    }
    assert_exact("vote.all", &c.download::<i32>(pa, n), &all);
    assert_exact("vote.any", &c.download::<i32>(pn, n), &any);
    assert_exact("vote.ballot", &c.download::<u32>(pb, n), &ballot);
    assert_exact("vote.uni", &c.download::<i32>(pu, n), &uni);
}

#[test]
fn activemask_divergent() {
    activemask_divergent_on("warp");
}

/// `activemask_divergent` on the fixture `fx` (also run on other targets by `archs`).
pub fn activemask_divergent_on(fx: &str) {
    let mut c = Ctx::new(fx, "activemask_divergent");
    let n = c.rng.usize(500, 3000);
    let x: Vec<i32> = c.rng.vec(n, |r| r.range_i32(-50, 50));
    let (px, pm, pb) = (c.upload(&x), c.zeros::<u32>(n), c.zeros::<u32>(n));
    c.launch(
        "activeMask",
        d1(blocks(n, 128)),
        d1(128),
        &[Arg::Ptr(px), Arg::Ptr(pm), Arg::Ptr(pb), Arg::I32(n as i32)],
    );
    let (mut mask, mut ballot) = (vec![0u32; n], vec![0u32; n]);
    for i in 0..n {
        let base = i / 32 * 32;
        let side = x[i] % 3 == 0;
        let bit = if side { 4 } else { 8 };
        for j in base..(base + 32).min(n) {
            if (x[j] % 3 == 0) == side {
                mask[i] |= 1 << (j - base);
                if x[j] & bit != 0 {
                    ballot[i] |= 1 << (j - base);
                }
            }
        }
    }
    assert_exact("activemask", &c.download::<u32>(pm, n), &mask);
    assert_exact(
        "ballot over the active mask",
        &c.download::<u32>(pb, n),
        &ballot,
    );
}

#[test]
fn syncwarp_exchange() {
    syncwarp_exchange_on("warp");
}

/// `syncwarp_exchange` on the fixture `fx` (also run on other targets by `archs`).
pub fn syncwarp_exchange_on(fx: &str) {
    let mut c = Ctx::new(fx, "syncwarp_exchange");
    let bd = c.rng.pick(&[32u32, 128, 256]);
    let n = c.rng.usize(500, 3000);
    let x: Vec<i32> = c.rng.vec(n, |r| r.range_i32(-1 << 20, 1 << 20));
    let (px, po) = (c.upload(&x), c.zeros::<i32>(n));
    c.launch(
        "syncwarpExchange",
        d1(blocks(n, bd)),
        d1(bd),
        &[Arg::Ptr(px), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let v = padded(&x, 0);
    let want: Vec<i32> = (0..n)
        .map(|i| {
            let base = i / 32 * 32;
            let l2 = ((i % 32) + 5) & 31;
            v[base + (l2 ^ 1)] + v[base + 31 - l2]
        })
        .collect();
    assert_exact("out", &c.download::<i32>(po, n), &want);
}

#[test]
fn lane_ids() {
    let mut c = Ctx::new("warp", "lane_ids");
    let bd = c.rng.pick(&[32u32, 100, 256]);
    let n = c.rng.usize(300, 2000);
    let (pl, pw) = (c.zeros::<u32>(n), c.zeros::<u32>(n));
    c.launch(
        "laneIds",
        d1(blocks(n, bd)),
        d1(bd),
        &[Arg::Ptr(pl), Arg::Ptr(pw), Arg::I32(n as i32)],
    );
    let want: Vec<u32> = (0..n).map(|i| (i % bd as usize % 32) as u32).collect();
    assert_exact("%laneid", &c.download::<u32>(pl, n), &want);
    let nw = c.download::<u32>(pw, n);
    assert!(
        nw.iter().all(|&w| w == nw[0] && w >= bd.div_ceil(32)),
        "%nwarpid must be constant and cover the block: {:?}",
        &nw[..4]
    );
}
