//! Scans, transposes and sorts: block-local data movement through shared memory and shuffles.

use crate::common::*;

#[test]
fn scan_inclusive() {
    let mut c = Ctx::new("scan", "scan_inclusive");
    let bd = c.rng.pick(&[64u32, 128, 200, 512]) as usize;
    let n = c.rng.usize(1000, 6000);
    let x: Vec<i32> = c.rng.vec(n, |r| r.range_i32(-1000, 1000));
    let (px, po) = (c.upload(&x), c.zeros::<i32>(n));
    c.launch_shared(
        "scanInclusive",
        d1(blocks(n, bd as u32)),
        d1(bd as u32),
        (2 * bd * 4) as u32,
        &[Arg::Ptr(px), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let mut want = vec![0i32; n];
    for (b, chunk) in x.chunks(bd).enumerate() {
        let mut acc = 0i32;
        for (t, v) in chunk.iter().enumerate() {
            acc = acc.wrapping_add(*v);
            want[b * bd + t] = acc;
        }
    }
    assert_exact("scan", &c.download::<i32>(po, n), &want);
}

#[test]
fn scan_exclusive_blelloch() {
    let mut c = Ctx::new("scan", "scan_exclusive_blelloch");
    let bd = c.rng.pick(&[32u32, 64, 128, 256]) as usize;
    let m = 2 * bd;
    let n = c.rng.usize(1000, 8000);
    let x: Vec<u32> = c.rng.vec(n, |r| r.next_u32() >> 8);
    let g = n.div_ceil(m);
    let (px, po, ps) = (c.upload(&x), c.zeros::<u32>(n), c.zeros::<u32>(g));
    c.launch_shared(
        "scanExclusiveBlelloch",
        d1(g as u32),
        d1(bd as u32),
        (m * 4) as u32,
        &[Arg::Ptr(px), Arg::Ptr(po), Arg::Ptr(ps), Arg::I32(n as i32)],
    );
    let mut want = vec![0u32; n];
    let mut sums = vec![0u32; g];
    for (b, chunk) in x.chunks(m).enumerate() {
        let mut acc = 0u32;
        for (t, v) in chunk.iter().enumerate() {
            want[b * m + t] = acc;
            acc = acc.wrapping_add(*v);
        }
        sums[b] = acc;
    }
    assert_exact("scan", &c.download::<u32>(po, n), &want);
    assert_exact("block sums", &c.download::<u32>(ps, g), &sums);
}

#[test]
fn scan_warp_shfl_up_f64() {
    let mut c = Ctx::new("scan", "scan_warp_shfl_up_f64");
    let bd = c.rng.pick(&[64u32, 128, 256, 1024]) as usize;
    let n = c.rng.usize(1000, 5000);
    let x: Vec<f64> = c.rng.vec(n, |r| r.f64_in(-1.0, 1.0));
    let (px, po) = (c.upload(&x), c.zeros::<f64>(n));
    c.launch(
        "scanWarpShflUp",
        d1(blocks(n, bd as u32)),
        d1(bd as u32),
        &[Arg::Ptr(px), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    // Mirror the kernel's association order exactly: Hillis-Steele per warp, then over the
    // warp totals, then add the preceding warps' total.
    fn warp_scan(v: &mut [f64; 32]) {
        let mut off = 1;
        while off < 32 {
            let old = *v;
            for l in off..32 {
                v[l] = old[l] + old[l - off];
            }
            off <<= 1;
        }
    }
    let mut want = vec![0f64; n];
    let nw = bd / 32;
    for b in 0..n.div_ceil(bd) {
        let mut warps = vec![[0f64; 32]; nw];
        for (w, lanes) in warps.iter_mut().enumerate() {
            for (l, v) in lanes.iter_mut().enumerate() {
                *v = x.get(b * bd + w * 32 + l).copied().unwrap_or(0.0);
            }
            warp_scan(lanes);
        }
        let mut totals = [0f64; 32];
        for w in 0..nw {
            totals[w] = warps[w][31];
        }
        warp_scan(&mut totals);
        for w in 0..nw {
            for l in 0..32 {
                let i = b * bd + w * 32 + l;
                if i < n {
                    want[i] = if w > 0 {
                        warps[w][l] + totals[w - 1]
                    } else {
                        warps[w][l]
                    };
                }
            }
        }
    }
    assert_exact("scan", &c.download::<f64>(po, n), &want);
}

fn transpose_ref<T: Copy + Default>(x: &[T], rows: usize, cols: usize) -> Vec<T> {
    let mut out = vec![T::default(); rows * cols];
    for r in 0..rows {
        for col in 0..cols {
            out[col * rows + r] = x[r * cols + col];
        }
    }
    out
}

#[test]
fn transpose_naive() {
    let mut c = Ctx::new("transpose", "transpose_naive");
    let (rows, cols) = (c.rng.usize(10, 100), c.rng.usize(10, 100));
    let x: Vec<f32> = c.rng.vec(rows * cols, |r| r.f32_in(-1.0, 1.0));
    let (px, po) = (c.upload(&x), c.zeros::<f32>(rows * cols));
    c.launch(
        "transposeNaive",
        (blocks(cols, 16), blocks(rows, 16), 1),
        (16, 16, 1),
        &[
            Arg::Ptr(px),
            Arg::Ptr(po),
            Arg::I32(rows as i32),
            Arg::I32(cols as i32),
        ],
    );
    assert_exact(
        "out",
        &c.download::<f32>(po, rows * cols),
        &transpose_ref(&x, rows, cols),
    );
}

#[test]
fn transpose_shared_padded() {
    let mut c = Ctx::new("transpose", "transpose_shared_padded");
    let (rows, cols) = (c.rng.usize(33, 150), c.rng.usize(33, 150));
    let x: Vec<f32> = c.rng.vec(rows * cols, |r| r.f32_in(-1.0, 1.0));
    let (px, po) = (c.upload(&x), c.zeros::<f32>(rows * cols));
    c.launch(
        "transposeSharedPadded",
        (blocks(cols, 32), blocks(rows, 32), 1),
        (32, 8, 1),
        &[
            Arg::Ptr(px),
            Arg::Ptr(po),
            Arg::I32(rows as i32),
            Arg::I32(cols as i32),
        ],
    );
    assert_exact(
        "out",
        &c.download::<f32>(po, rows * cols),
        &transpose_ref(&x, rows, cols),
    );
}

#[test]
fn transpose_shared_u64() {
    let mut c = Ctx::new("transpose", "transpose_shared_u64");
    let (rows, cols) = (c.rng.usize(17, 90), c.rng.usize(17, 90));
    let x: Vec<u64> = c.rng.vec(rows * cols, |r| r.next_u64());
    let (px, po) = (c.upload(&x), c.zeros::<u64>(rows * cols));
    c.launch(
        "transposeShared64",
        (blocks(cols, 16), blocks(rows, 16), 1),
        (16, 16, 1),
        &[
            Arg::Ptr(px),
            Arg::Ptr(po),
            Arg::I32(rows as i32),
            Arg::I32(cols as i32),
        ],
    );
    assert_exact(
        "out",
        &c.download::<u64>(po, rows * cols),
        &transpose_ref(&x, rows, cols),
    );
}

#[test]
fn bitonic_sort_block() {
    let mut c = Ctx::new("sort", "bitonic_sort_block");
    let bd = c.rng.pick(&[64u32, 128, 256, 512]) as usize;
    let n = c.rng.usize(1000, 4000);
    let x: Vec<u32> = c.rng.vec(n, |r| r.next_u32());
    let (px, po) = (c.upload(&x), c.zeros::<u32>(n));
    c.launch_shared(
        "bitonicSortBlock",
        d1(blocks(n, bd as u32)),
        d1(bd as u32),
        (bd * 4) as u32,
        &[Arg::Ptr(px), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let mut want = Vec::with_capacity(n);
    for chunk in x.chunks(bd) {
        let mut v = chunk.to_vec();
        v.sort_unstable();
        want.extend(v);
    }
    assert_exact("sorted", &c.download::<u32>(po, n), &want);
}

#[test]
fn warp_odd_even_sort() {
    let mut c = Ctx::new("sort", "warp_odd_even_sort");
    let n = c.rng.usize(500, 3000);
    let x: Vec<i64> = c.rng.vec(n, |r| r.next_u64() as i64 >> r.range_i32(0, 60));
    let (px, po) = (c.upload(&x), c.zeros::<i64>(n));
    c.launch(
        "warpOddEvenSort",
        d1(blocks(n, 64)),
        d1(64),
        &[Arg::Ptr(px), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let mut want = Vec::with_capacity(n);
    for chunk in x.chunks(32) {
        let mut v = chunk.to_vec();
        v.sort_unstable();
        want.extend(v);
    }
    assert_exact("sorted", &c.download::<i64>(po, n), &want);
}
