//! Cooperative launches (NVRTC output of `ptx/grid_sync.cu`): `this_grid().sync()` is a barrier
//! across every block, results against CPU references on random inputs under several engine
//! settings and worker counts; the trap without a cooperative launch; the deadlock report; the
//! block limit; which entries `grid_sync_entries` finds.

use super::util::*;
use crate::*;

const PTX: &str = include_str!("ptx/grid_sync.ptx");

/// The settings a cooperative launch is run under: engines (which it turns off, keeping the
/// interpreter's result) and host builds.
fn settings() -> Vec<Engines> {
    let mut out = vec![
        Engines::default(),
        Engines {
            jit: JitMode::Off,
            ..Engines::default()
        },
    ];
    for host in HostBuild::available() {
        out.push(Engines {
            host,
            ..Engines::default()
        });
    }
    out
}

fn cooperative(grid: Dim3, block: Dim3, engines: Engines) -> LaunchConfig {
    let mut c = LaunchConfig::new(grid, block);
    c.engines = engines;
    c.cooperative = true;
    c
}

/// The block tree sum of `normalise`, in its order.
fn block_sum(v: &[f32]) -> f32 {
    let mut s = v.to_vec();
    let mut k = s.len() / 2;
    while k > 0 {
        for t in 0..k {
            s[t] += s[t + k];
        }
        k /= 2;
    }
    s[0]
}

#[test]
fn grid_sync_orders_a_reduction_and_its_normalisation() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let mut rng = Rng(seed());
    for engines in settings() {
        let blocks = 3 + rng.below(30) as usize;
        let n = blocks * 256 - rng.below(200) as usize;
        let x: Vec<f32> = (0..n).map(|_| rng.f32().abs() + 0.01).collect();
        let px = upload_f32(&dev, &x);
        let (po, pp, pt) = (
            dev.alloc(n * 4).unwrap(),
            dev.alloc(blocks * 4).unwrap(),
            dev.alloc(4).unwrap(),
        );
        let cfg = cooperative((blocks as u32, 1, 1), (256, 1, 1), engines);
        let params: [&[u8]; 5] = [&p64(px), &p64(po), &p64(pp), &p64(pt), &i32b(n as i32)];
        let r = dev.launch(&m, "normalise", &cfg, &params).unwrap();
        assert!(r.reports.is_empty(), "{:#?}", r.reports);
        assert_eq!(r.workers, blocks, "a thread per block");
        let mut padded = x.clone();
        padded.resize(blocks * 256, 0.0);
        let partial: Vec<f32> = padded.chunks(256).map(block_sum).collect();
        assert_eq!(download_f32(&dev, pp, blocks), partial);
        let total = partial.iter().fold(0.0f32, |t, p| t + p);
        let want: Vec<f32> = x.iter().map(|v| v / total).collect();
        assert_eq!(download_f32(&dev, po, n), want, "{engines:?}");
    }
}

#[test]
fn many_grid_syncs_keep_every_round_apart() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let mut rng = Rng(seed());
    for (k, engines) in settings().into_iter().enumerate() {
        // Fewer threads than elements (grid-stride) and more blocks than cores.
        let blocks = 4 + rng.below(12) as u32;
        let n = blocks as usize * 64 * (1 + rng.below(3) as usize) + rng.below(50) as usize;
        let steps = 5 + k as i32;
        let a0: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
        let (pa, pb) = (upload_f32(&dev, &a0), dev.alloc(n * 4).unwrap());
        let cfg = cooperative((blocks, 1, 1), (64, 1, 1), engines);
        let params: [&[u8]; 4] = [&p64(pa), &p64(pb), &i32b(n as i32), &i32b(steps)];
        let r = dev.launch(&m, "smooth", &cfg, &params).unwrap();
        assert!(r.reports.is_empty(), "{:#?}", r.reports);
        let (mut a, mut b) = (a0.clone(), vec![0.0f32; n]);
        for _ in 0..steps {
            for i in 0..n {
                let (l, r) = ((i + n - 1) % n, (i + 1) % n);
                b[i] = (a[l] + a[i] + a[r]) / 3.0;
            }
            std::mem::swap(&mut a, &mut b);
        }
        let got = download_f32(&dev, if steps % 2 == 0 { pa } else { pb }, n);
        assert_eq!(got, a, "{steps} rounds, {blocks} blocks, {engines:?}");
    }
}

#[test]
fn a_sync_in_a_device_function_sees_every_blocks_atomics() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    for (gx, gy, threads) in [(5u32, 3u32, 1usize), (7, 2, 0), (1, 1, 0)] {
        let nb = (gx * gy) as usize;
        let (pc, ps) = (upload_i32(&dev, &[0]), dev.alloc(nb * 4).unwrap());
        let mut cfg = cooperative((gx, gy, 1), (96, 1, 1), Engines::default());
        cfg.threads = threads;
        let r = dev
            .launch(&m, "count_in", &cfg, &[&p64(pc), &p64(ps)])
            .unwrap();
        assert!(r.reports.is_empty(), "{:#?}", r.reports);
        assert_eq!(download_i32(&dev, ps, nb), vec![nb as i32; nb]);
    }
}

#[test]
fn without_a_cooperative_launch_the_grid_sync_traps_and_says_why() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let (pc, ps) = (upload_i32(&dev, &[0]), dev.alloc(16).unwrap());
    let cfg = LaunchConfig::new((4, 1, 1), (32, 1, 1));
    match dev.launch(&m, "count_in", &cfg, &[&p64(pc), &p64(ps)]) {
        Err(LaunchError::Fault { report, .. }) => {
            assert_eq!(report.kind, CheckKind::Trap);
            assert!(
                report.message.contains("this_grid().sync()")
                    && report.message.contains("needs a cooperative launch"),
                "{}",
                report.message
            );
        }
        other => panic!("expected the trap, got {other:?}"),
    }
}

#[test]
fn blocks_that_never_reach_the_sync_are_reported_as_a_deadlock() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let px = dev.alloc(64).unwrap();
    let cfg = cooperative((4, 1, 1), (32, 1, 1), Engines::default());
    let t0 = std::time::Instant::now();
    match dev.launch(&m, "skips_sync", &cfg, &[&p64(px)]) {
        Err(LaunchError::Fault { report, .. }) => {
            assert_eq!(report.kind, CheckKind::DivergentBarrier);
            assert!(
                report.message.contains("1 of the grid's 4 blocks returned"),
                "{}",
                report.message
            );
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
    assert!(t0.elapsed().as_secs_f64() < 10.0);
}

#[test]
fn a_cooperative_grid_has_a_block_limit_and_is_counted_whole() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let px = dev.alloc(4 * 32).unwrap();
    let mut cfg = LaunchConfig::new(((MAX_COOPERATIVE_BLOCKS + 1) as u32, 1, 1), (32, 1, 1));
    cfg.cooperative = true;
    match dev.launch(&m, "plain", &cfg, &[&p64(px)]) {
        Err(LaunchError::BadConfig(why)) => assert!(why.contains("at most 16384"), "{why}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    // Sampled counting is refused; counting every block works.
    let mut cfg = LaunchConfig::new((2, 1, 1), (32, 1, 1));
    cfg.cooperative = true;
    let mut counters = counters::CounterConfig::new(1 << 20);
    counters.sample = counters::Sample::Blocks(vec![0u64].into());
    cfg.counters = Some(counters.clone());
    assert!(matches!(
        dev.launch(&m, "plain", &cfg, &[&p64(px)]),
        Err(LaunchError::BadConfig(_))
    ));
    counters.sample = counters::Sample::Full;
    cfg.counters = Some(counters);
    let r = dev.launch(&m, "plain", &cfg, &[&p64(px)]).unwrap();
    assert!(r.counters.is_some());
}

#[test]
fn grid_sync_entries_follow_calls() {
    let mut found = grid_sync_entries(PTX).unwrap();
    found.sort();
    assert_eq!(found, ["count_in", "normalise", "skips_sync", "smooth"]);
}
