//! Divergence, reconvergence, calls (recursive and by-value aggregates), barriers with
//! reductions, 3-D grids, cancel and budget — on NVRTC output of `ptx/control.cu`.

use super::util::*;
use crate::*;

const PTX: &str = include_str!("ptx/control.ptx");

pub(super) fn divergent_ref(v: i32) -> i32 {
    let mut acc: i32 = 0;
    for k in 0..(v & 15) {
        if k % 3 == 0 {
            continue;
        }
        if k > 11 && (v & 64) != 0 {
            break;
        }
        if v & 1 != 0 {
            if k & 1 != 0 {
                acc += k;
            } else {
                acc -= 1;
            }
        } else {
            acc += 2 * k;
        }
    }
    match v % 4 {
        0 => acc += 100,
        1 => acc *= 2,
        2 => acc = (acc - 7) ^ 5,
        _ => acc ^= 5,
    }
    acc
}

fn fib(n: i32) -> i32 {
    if n < 2 {
        n
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

#[test]
fn divergent_loops_break_continue_switch() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let mut rng = Rng(seed());
    let n = 3000 + rng.below(500) as usize;
    let v: Vec<i32> = (0..n).map(|_| rng.next() as i32).collect();
    let (pi, po) = (upload_i32(&dev, &v), dev.alloc(n * 4).unwrap());
    run(
        &dev,
        &m,
        "divergent",
        ((n as u32).div_ceil(96), 1, 1),
        (96, 1, 1),
        &[&p64(pi), &p64(po), &i32b(n as i32)],
    );
    let out = download_i32(&dev, po, n);
    for i in 0..n {
        assert_eq!(out[i], divergent_ref(v[i]), "i={i} v={}", v[i]);
    }
}

#[test]
fn recursive_and_aggregate_returning_calls() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let mut rng = Rng(seed());
    let n = 500 + rng.below(100) as usize;
    let v: Vec<i32> = (0..n).map(|_| (rng.next() % 1000) as i32).collect();
    let pi = upload_i32(&dev, &v);
    let po = dev.alloc(2 * n * 4).unwrap();
    let pf = dev.alloc(n * 4).unwrap();
    run(
        &dev,
        &m,
        "calls",
        ((n as u32).div_ceil(64), 1, 1),
        (64, 1, 1),
        &[&p64(pi), &p64(po), &p64(pf), &i32b(n as i32)],
    );
    let out = download_i32(&dev, po, 2 * n);
    let f = download_f32(&dev, pf, n);
    for i in 0..n {
        let want = if v[i] & 1 != 0 {
            fib(v[i] & 15)
        } else {
            -fib((v[i] >> 1) & 7)
        };
        assert_eq!(out[i], want, "fib at {i}");
        assert_eq!(out[n + i], v[i] * 3 + v[i % 5], "pair.a at {i}");
        assert_eq!(f[i], v[i] as f32 * 0.5, "pair.b at {i}");
    }
    let k = m.kernel("calls").unwrap();
    assert!(k.local_bytes > 0);
}

#[test]
fn block_reduction_and_syncthreads_count_and_or() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let mut rng = Rng(seed());
    let blocks = 37usize;
    let n = blocks * 256 - rng.below(200) as usize;
    let v: Vec<i32> = (0..n).map(|_| (rng.next() % 21) as i32 - 10).collect();
    let pi = upload_i32(&dev, &v);
    let po = dev.alloc(blocks * 16).unwrap();
    let mut cfg = config((blocks as u32, 1, 1), (256, 1, 1));
    cfg.threads = 2;
    let r = dev
        .launch(&m, "syncs", &cfg, &[&p64(pi), &p64(po), &i32b(n as i32)])
        .unwrap();
    assert!(r.reports.is_empty(), "{:?}", r.reports);
    let out = download_i32(&dev, po, blocks * 4);
    for b in 0..blocks {
        let chunk: Vec<i32> = (0..256)
            .map(|t| v.get(b * 256 + t).copied().unwrap_or(0))
            .collect();
        assert_eq!(out[b * 4], chunk.iter().sum::<i32>(), "sum of block {b}");
        assert_eq!(
            out[b * 4 + 1],
            chunk.iter().filter(|&&x| x > 0).count() as i32
        );
        assert_eq!(out[b * 4 + 2], 1);
        assert_eq!(out[b * 4 + 3], chunk.contains(&7) as i32);
    }
}

#[test]
fn three_dimensional_grids_and_blocks() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let (grid, block) = ((3u32, 2u32, 2u32), (5u32, 3u32, 4u32));
    let total = (3 * 2 * 2 * 5 * 3 * 4) as usize;
    let po = dev.alloc(total * 4).unwrap();
    run(&dev, &m, "grid3d", grid, block, &[&p64(po)]);
    let out = download_u32(&dev, po, total);
    let mut k = 0;
    for bz in 0..2 {
        for by in 0..2 {
            for bx in 0..3 {
                for tz in 0..4 {
                    for ty in 0..3 {
                        for tx in 0..5 {
                            let want =
                                (tx << 24) | (ty << 16) | (tz << 12) | (bx << 8) | (by << 4) | bz;
                            assert_eq!(
                                out[k], want,
                                "thread ({tx},{ty},{tz}) block ({bx},{by},{bz})"
                            );
                            k += 1;
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn cancel_stops_an_infinite_loop_within_a_second() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let flag = dev.alloc(8).unwrap();
    let t0 = std::time::Instant::now();
    let (report, secs) = launch_cancelled_after(
        &dev,
        &m,
        "spin",
        config((4, 1, 1), (64, 1, 1)),
        &[&p64(flag)],
        std::time::Duration::from_millis(200),
    );
    assert_eq!(report.kind, CheckKind::Cancelled);
    // Liveness (a cancel that does not work never stops the spin), 10x the usual bounds.
    assert!(secs < 10.0, "stopped {secs} s after the cancel");
    assert!(t0.elapsed().as_secs_f64() < 50.0);
}

#[test]
fn instruction_budget_stops_a_launch() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let flag = dev.alloc(8).unwrap();
    let mut cfg = config((1, 1, 1), (32, 1, 1));
    cfg.instruction_budget = Some(5000);
    let e = dev.launch(&m, "spin", &cfg, &[&p64(flag)]).unwrap_err();
    let LaunchError::Fault { report, .. } = e else {
        panic!("{e:?}")
    };
    assert_eq!(report.kind, CheckKind::BudgetExceeded);
    // The same kernel finishes when the flag is already set.
    dev.write(flag, 0, &1i32.to_le_bytes()).unwrap();
    let r = dev.launch(&m, "spin", &cfg, &[&p64(flag)]).unwrap();
    assert!(r.warp_instructions < 5000);
}

#[test]
fn calls_through_function_pointers_and_virtual_functions() {
    let dev = Device::new();
    let m = dev.load_module(include_str!("ptx/fptr.ptx")).unwrap();
    let mut rng = Rng(seed());
    let n = 700;
    let a: Vec<f32> = (0..n).map(|_| rng.f32() * 10.0).collect();
    let b: Vec<f32> = (0..n).map(|_| rng.f32() * 10.0).collect();
    let (pa, pb, po) = (
        upload_f32(&dev, &a),
        upload_f32(&dev, &b),
        dev.alloc(n * 4).unwrap(),
    );
    run(
        &dev,
        &m,
        "fptr",
        ((n as u32).div_ceil(64), 1, 1),
        (64, 1, 1),
        &[&p64(pa), &p64(pb), &p64(po), &i32b(n as i32)],
    );
    let o = download_f32(&dev, po, n);
    for i in 0..n {
        let f = match i % 3 {
            0 => a[i] + b[i],
            1 => a[i] * b[i],
            _ => a[i] - b[i],
        };
        let area = if i & 1 == 1 {
            a[i] * a[i]
        } else {
            3.0 * b[i] * b[i]
        };
        assert_eq!(o[i], f + area, "i={i}");
    }
}

#[test]
fn struct_parameters_by_value_and_by_address() {
    let dev = Device::new();
    let m = dev.load_module(include_str!("ptx/params.ptx")).unwrap();
    let k = m.kernel("params").unwrap();
    assert_eq!(
        (k.params[0].size, k.params[0].align, k.params[0].ty),
        (16, 4, None)
    );
    assert_eq!(k.params[1].offset, 16);
    let (x, y, z, kk) = (1.5f32, -2.0f32, 0.25f32, 7i32);
    let mut s = Vec::new();
    for f in [x, y, z] {
        s.extend_from_slice(&f.to_le_bytes());
    }
    s.extend_from_slice(&kk.to_le_bytes());
    let n = 100;
    let po = dev.alloc(n * 4).unwrap();
    run(
        &dev,
        &m,
        "params",
        (2, 1, 1),
        (64, 1, 1),
        &[&s, &p64(po), &i32b(n as i32)],
    );
    let o = download_f32(&dev, po, n);
    let dot = x * x + y * y + z * z + kk as f32;
    let v = [x, y, z];
    for (i, &got) in o.iter().enumerate() {
        let want = dot + (v[i % 3] + dot) + v[(i + 1) % 3];
        assert!(
            (got - want).abs() <= 1e-5 * want.abs().max(1.0),
            "i={i}: {got} vs {want}"
        );
    }
}

/// One warp whose lanes draw tickets from a shared counter, to see which half of a split group
/// runs first.
const SPLIT_ORDER: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry split_order(.param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  .shared .align 4 .b32 ctr;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra READY;
  st.shared.u32 [ctr], 0;
READY:
  bar.sync 0;
  and.b32 %r2, %r1, 1;
  setp.ne.u32 %p2, %r2, 0;
  @%p2 bra ODD;
  atom.shared.add.u32 %r3, [ctr], 1;
  bra JOIN;
ODD:
  atom.shared.add.u32 %r3, [ctr], 1;
JOIN:
  st.global.u32 [%rd3], %r3;
  and.b32 %r4, %r1, 3;
  mov.u32 %r5, 0;
LOOP:
  atom.shared.add.u32 %r6, [ctr], 1;
  add.u32 %r5, %r5, 1;
  setp.le.u32 %p3, %r5, %r4;
  @%p3 bra LOOP;
  atom.shared.add.u32 %r7, [ctr], 1;
  st.global.u32 [%rd3+128], %r7;
  ret;
}
"#;

#[test]
fn a_split_group_runs_its_lower_pc_half_first() {
    let dev = Device::new();
    let m = dev.load_module(SPLIT_ORDER).unwrap();
    let out = dev.alloc(64 * 4).unwrap();
    let r = run(&dev, &m, "split_order", (1, 1, 1), (32, 1, 1), &[&p64(out)]);
    assert!(r.reports.is_empty(), "{:?}", r.reports);
    let o = download_i32(&dev, out, 64);
    // A forward branch: the lanes that fall through (even) run before the lanes that jump.
    for l in 0..32 {
        let want = if l % 2 == 0 { l / 2 } else { 16 + l / 2 };
        assert_eq!(o[l as usize], want, "lane {l} at the forward split");
    }
    // A loop (lane l runs l % 4 + 1 times): the lanes that branch back run every iteration
    // before any lane goes on past the loop; then all 32 draw in lane order.
    let in_loop: i32 = (0..32).map(|l| l % 4 + 1).sum();
    for l in 0..32 {
        assert_eq!(
            o[32 + l as usize],
            32 + in_loop + l,
            "lane {l} after the loop"
        );
    }
}
