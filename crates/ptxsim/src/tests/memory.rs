//! State spaces, generic pointers, module globals and constants with initialisers, atomics
//! under parallel blocks, printf, dynamic shared memory — on NVRTC output of `ptx/memory.cu`.

use super::util::*;
use crate::*;

const PTX: &str = include_str!("ptx/memory.ptx");

#[test]
fn generic_pointers_into_every_space_and_module_data() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let mut rng = Rng(seed());
    let n = 1000 + rng.below(500) as usize;
    let v: Vec<i32> = (0..n).map(|_| (rng.next() % 2001) as i32 - 1000).collect();
    let (pi, po, pf) = (
        upload_i32(&dev, &v),
        dev.alloc(n * 4).unwrap(),
        dev.alloc(n * 4).unwrap(),
    );
    run(
        &dev,
        &m,
        "spaces",
        ((n as u32).div_ceil(64), 1, 1),
        (64, 1, 1),
        &[&p64(pi), &p64(po), &p64(pf), &i32b(n as i32)],
    );
    let out = download_i32(&dev, po, n);
    let f = download_f32(&dev, pf, n);
    let table = [10, 20, 30, 40];
    for i in 0..n {
        let t = i % 64;
        let blk = i - t;
        let sh = |k: usize| v.get(blk + k).copied().unwrap_or(0);
        let a: i32 = (0..8).map(|j| sh((t & !7) + j)).sum();
        let b: i32 = (0..4).map(|j| ((i + (t & 3) + j) * (t + 1)) as i32).sum();
        let base = i & !3;
        let c: i32 = if base + 4 <= n {
            (0..4).map(|j| v[base + j]).sum()
        } else {
            0
        };
        assert_eq!(out[i], a + b + c + table[t & 3], "i={i}");
        assert_eq!(f[i], 0.5f32 * v[i] as f32 + -1.25 + 2.0, "f at {i}");
    }
}

#[test]
fn atomics_of_every_kind_under_parallel_blocks() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let blocks = 64u32;
    let bd = 128u32;
    let nt = (blocks * bd) as i64;
    let gi = upload_i32(&dev, &[0, 0, i32::MIN, i32::MAX, 0, 0]);
    let gu = upload_u32(&dev, &[u32::MAX, 0, 0, 0, 0]);
    let gf = upload_f32(&dev, &[0.0]);
    let gd = dev.alloc(8).unwrap();
    let gl = dev.alloc(8).unwrap();
    let res = dev.alloc(11 * 4).unwrap();
    let mut cfg = config((blocks, 1, 1), (bd, 1, 1));
    cfg.threads = 2;
    let r = dev
        .launch(
            &m,
            "atomics",
            &cfg,
            &[&p64(gi), &p64(gu), &p64(gf), &p64(gd), &p64(gl), &p64(res)],
        )
        .unwrap();
    assert!(r.reports.is_empty(), "{:?}", r.reports);
    let i = download_i32(&dev, gi, 6);
    assert_eq!(i[0], nt as i32);
    assert_eq!(i[1], -2 * nt as i32);
    assert_eq!(i[2], nt as i32 - 1);
    assert_eq!(i[3], -(nt as i32 - 1));
    assert_eq!(i[4], 7);
    assert_eq!(i[5], 3 * nt as i32);
    let u = download_u32(&dev, gu, 5);
    assert_eq!(u[0], 0);
    assert_eq!(u[1], u32::MAX);
    assert_eq!(u[2], (0..nt as u32).fold(0, |a, x| a ^ x));
    // atomicInc wraps to 0 after reaching 100: nt increments from 0.
    assert_eq!(u[3], (nt % 101) as u32);
    // atomicDec from 0 with limit 50: 0 → 50 → 49 … (period 51).
    let mut d = 0u32;
    for _ in 0..nt {
        d = if d == 0 || d > 50 { 50 } else { d - 1 };
    }
    assert_eq!(u[4], d);
    assert_eq!(download_f32(&dev, gf, 1)[0], 0.5 * nt as f32);
    let mut b = [0u8; 8];
    dev.read(gd, 0, &mut b).unwrap();
    assert_eq!(f64::from_le_bytes(b), 0.25 * nt as f64);
    dev.read(gl, 0, &mut b).unwrap();
    assert_eq!(u64::from_le_bytes(b), (nt * (nt - 1) / 2) as u64);
    let rs = download_i32(&dev, res, 11);
    for (k, &got) in rs.iter().enumerate().take(7) {
        let per_block: i32 = (0..bd as i32).filter(|t| t % 8 == k as i32).sum();
        assert_eq!(got, per_block * blocks as i32, "shared add slot {k}");
    }
    let slot7: i32 = (0..bd as i32).filter(|t| t % 8 == 7).sum();
    assert_eq!(rs[7], (slot7.max(bd as i32 - 1)) * blocks as i32);
    assert_eq!(rs[8] as u32, (bd % 10) * blocks);
    assert_eq!(rs[9] as u32, u32::MAX.wrapping_mul(blocks));
    assert_eq!(rs[10], 1);
    // Module-scope __device__ variable kept across launches.
    let out = dev.alloc(8).unwrap();
    run(&dev, &m, "read_counter", (1, 1, 1), (1, 1, 1), &[&p64(out)]);
    assert_eq!(download_i32(&dev, out, 2), vec![nt as i32, 30]);
}

#[test]
fn printf_formats_and_order() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let n = 40;
    let mut cfg = config((3, 1, 1), (16, 1, 1));
    cfg.threads = 2;
    let r = dev.launch(&m, "prints", &cfg, &[&i32b(n)]).unwrap();
    let lines: Vec<&str> = r.printf.lines().collect();
    assert_eq!(lines.len(), n as usize);
    let names = ["alpha", "beta"];
    for (i, line) in lines.iter().enumerate() {
        let want = format!(
            "i={i} u={} x={} f={:.3} e={} g={} s={} c={} ll={} p5={:>5}|{:<4}|",
            i * 7,
            if i == 0 {
                "0".to_string()
            } else {
                format!("{:#x}", i * 255)
            },
            i as f64 * 0.5,
            crate::printf::format(b"%e", &mut |_| crate::printf::Val::Double(i as f64 * 1e10)).0,
            crate::printf::format(b"%g", &mut |_| crate::printf::Val::Double(i as f64 / 3.0)).0,
            names[i & 1],
            (b'a' + i as u8) as char,
            (i as i64) << 40,
            i,
            i
        );
        assert_eq!(*line, want);
    }
}

#[test]
fn dynamic_shared_memory() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let bd = 96u32;
    let out = dev.alloc(2 * bd as usize * 4).unwrap();
    let mut cfg = config((2, 1, 1), (bd, 1, 1));
    cfg.dynamic_shared_bytes = 2 * bd * 4;
    let r = dev
        .launch(&m, "dyn", &cfg, &[&p64(out), &i32b(bd as i32)])
        .unwrap();
    assert!(r.reports.is_empty());
    let o = download_i32(&dev, out, 2 * bd as usize);
    for b in 0..2 {
        for t in 0..bd as i32 {
            assert_eq!(
                o[(b * bd as i32 + t) as usize],
                (bd as i32 - 1 - t) * 3 + (t + 1) % bd as i32
            );
        }
    }
    // Too little dynamic shared memory: the access past its end is caught.
    cfg.dynamic_shared_bytes = bd * 4;
    let e = dev
        .launch(&m, "dyn", &cfg, &[&p64(out), &i32b(bd as i32)])
        .unwrap_err();
    let LaunchError::Fault { report, .. } = e else {
        panic!()
    };
    assert_eq!(report.kind, CheckKind::OutOfBounds);
    assert_eq!(report.space, "shared");
}

#[test]
fn module_globals_are_reachable_and_freed_with_the_module() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let (table, size) = m.global("table").unwrap();
    assert_eq!(size, 16);
    let mut b = [0u8; 16];
    dev.read(table, 0, &mut b).unwrap();
    assert_eq!(b[8], 30);
    dev.write(table, 8, &77i32.to_le_bytes()).unwrap();
    let out = dev.alloc(8).unwrap();
    run(&dev, &m, "read_counter", (1, 1, 1), (1, 1, 1), &[&p64(out)]);
    assert_eq!(download_i32(&dev, out, 2)[1], 77);
    let (coef, _) = m.global("coef").unwrap();
    assert!(m.global("nope").is_none());
    drop(m);
    assert_eq!(dev.allocation_size(table), None);
    assert_eq!(dev.allocation_size(coef), None);
    assert_eq!(dev.allocation_size(out), Some(8));
}

/// `old[t] = atomicAdd(&p[idx[t]], 1)` (line 5), with `p` a parameter and `idx` from memory.
fn scatter_ptx() -> String {
    format!(
        r#"
.version 7.0
.target sm_80
.address_size 64
.file 1 "scatter.cu"
.visible .entry scatter(.param .u64 pp, .param .u64 pidx, .param .u64 pold, .param .u32 n) {{
  .reg .u64 %rd<10>;
  .reg .u32 %r<8>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [pp];
  ld.param.u64 %rd2, [pidx];
  ld.param.u64 %rd3, [pold];
  ld.param.u32 %r5, [n];
{INDEX_GUARD}  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd2, %rd4;
  ld.global.s32 %rd6, [%rd5];
  shl.b64 %rd6, %rd6, 2;
  add.s64 %rd7, %rd1, %rd6;
  .loc 1 5 0
  atom.global.add.u32 %r6, [%rd7], 1;
  add.s64 %rd8, %rd3, %rd4;
  st.global.u32 [%rd8], %r6;
DONE:
  ret;
}}
"#
    )
}

#[test]
fn scattered_atomics_check_the_warp_at_once_and_each_lane_when_that_fails() {
    // The interpreter checks a warp's scattered atomics with one check of the span the lanes
    // cover; lanes in two allocations, or one lane outside any, take the lane-by-lane path.
    let dev = Device::new();
    let m = dev.load_module(&scatter_ptx()).unwrap();
    let mut rng = Rng(seed());
    let (n, cells) = (500 + rng.below(300) as usize, 40 + rng.below(30) as usize);
    let p = dev.alloc(cells * 4).unwrap();
    let q = dev.alloc(cells * 4).unwrap();
    // Words from `p` to `q`, for indices that land in `q`.
    let gap = ((q - p) / 4) as i32;
    let bad = rng.below(n as u64) as usize;
    for case in ["one allocation", "two allocations", "one lane outside"] {
        let idx: Vec<i32> = (0..n)
            .map(|t| {
                let k = rng.below(cells as u64) as i32;
                match case {
                    "two allocations" if t % 3 == 0 => gap + k,
                    "one lane outside" if t == bad => cells as i32,
                    _ => k,
                }
            })
            .collect();
        dev.write(p, 0, &vec![0u8; cells * 4]).unwrap();
        dev.write(q, 0, &vec![0u8; cells * 4]).unwrap();
        let pi = upload_i32(&dev, &idx);
        let po = dev.alloc(n * 4).unwrap();
        let mut cfg = config(((n as u32).div_ceil(64), 1, 1), (64, 1, 1));
        cfg.threads = 1;
        let r = dev.launch(
            &m,
            "scatter",
            &cfg,
            &[&p64(p), &p64(pi), &p64(po), &i32b(n as i32)],
        );
        if case == "one lane outside" {
            let Err(LaunchError::Fault { report, .. }) = r else {
                panic!("{case}: no fault: {r:?}")
            };
            let t = report.block.0 as usize * 64 + report.thread.0 as usize;
            let line = report.line.as_ref().map(|l| l.line);
            assert_eq!(
                (report.kind, t, line),
                (CheckKind::OutOfBounds, bad, Some(5))
            );
            continue;
        }
        r.unwrap();
        // Every cell counts its lanes, and the lanes of a cell got the tickets 0, 1, 2, ...
        let old = download_u32(&dev, po, n);
        let (cp, cq) = (download_u32(&dev, p, cells), download_u32(&dev, q, cells));
        let mut tickets: std::collections::HashMap<i32, Vec<u32>> = Default::default();
        for t in 0..n {
            tickets.entry(idx[t]).or_default().push(old[t]);
        }
        for (cell, mut got) in tickets {
            got.sort_unstable();
            let want: Vec<u32> = (0..got.len() as u32).collect();
            assert_eq!(got, want, "{case}: cell {cell}");
            let count = if cell >= gap {
                cq[(cell - gap) as usize]
            } else {
                cp[cell as usize]
            };
            assert_eq!(count as usize, want.len(), "{case}: cell {cell}");
        }
    }
}
