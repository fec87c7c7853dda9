//! `--counters [ROUNDS]`: what ptxsim's hardware-like counters (`LaunchConfig::counters`)
//! cost. For each case (`--only` chooses; default vecAdd, reduceBlockTree, blur3x3 and
//! matmulTiled) it alternates, ROUNDS times (default 5), launches with counters off, off again
//! (the same configuration: how far two identical runs differ here), with the plain
//! interpreter (`JitMode::Off`, so no block tier, replays or JIT: what a counted launch runs)
//! and with counters on, and prints the best time of each and their ratios: off/off is the
//! noise floor of the "counters off" cost (a launch without counters runs the very
//! instruction loop it ran before counters existed, plus one test per warp slice), on/off the
//! slowdown of counting against a normal launch, on/interp what counting adds to the
//! interpreter it runs in.

use crate::cases::{Case, Problem};
use crate::Res;
use ptxsim::counters::CounterConfig;
use ptxsim::{Device, JitMode};
use std::time::Instant;

/// Problem sizes (threads) per case: a launch of a few tenths of a second counted.
fn size(name: &str) -> u64 {
    match name {
        "matmulTiled" | "matmulNaive" => 1 << 16,
        "vecAdd" => 1 << 22,
        _ => 1 << 20,
    }
}

#[derive(Clone, Copy)]
enum Mode {
    Off,
    Interp,
    On,
}

/// One launch of `p` on fresh buffers in `mode`; seconds of the launch alone.
fn launch(dev: &Device, module: &ptxsim::Module, p: &Problem, mode: Mode) -> Res<f64> {
    let (ptrs, params) = crate::upload(dev, p)?;
    let refs: Vec<&[u8]> = params.iter().map(|v| v.as_slice()).collect();
    let mut cfg = crate::config(p.grid, p.block);
    cfg.dynamic_shared_bytes = p.shmem;
    match mode {
        Mode::Off => {}
        Mode::Interp => cfg.engines.jit = JitMode::Off,
        Mode::On => cfg.counters = Some(CounterConfig::default()),
    }
    let t0 = Instant::now();
    let r = dev.launch(module, p.kernel, &cfg, &refs)?;
    let secs = t0.elapsed().as_secs_f64();
    if matches!(mode, Mode::On) != r.counters.is_some() {
        return Err("counters not as asked".into());
    }
    for ptr in ptrs {
        dev.free(ptr)?;
    }
    Ok(secs)
}

pub fn counters(dev: &Device, every: &[Case], only: Option<&[String]>, rounds: usize) -> Res<()> {
    let default = ["vecAdd", "reduceBlockTree", "blur3x3", "matmulTiled"];
    let cases: Vec<&Case> = every
        .iter()
        .filter(|c| match only {
            Some(o) => o.iter().any(|n| n == c.name),
            None => default.contains(&c.name),
        })
        .collect();
    println!(
        "counters: best of {rounds} alternating launches, all cores; off/off: two identical \
         launches without counters (the noise floor of the off cost)"
    );
    println!(
        "{:<18} {:>9} {:>10} {:>10} {:>10} {:>10} {:>8} {:>8} {:>10}",
        "case", "threads", "off s", "off' s", "interp s", "on s", "off/off", "on/off", "on/interp"
    );
    let mut worst_noise: f64 = 1.0;
    for case in cases {
        let module = dev.load_module(&crate::fixture(case.fixture)?)?;
        let p = (case.build)(size(case.name), &mut crate::rng::Rng::seeded(crate::SEED));
        // Warm up (the JIT compiles during the first launches of a kernel).
        for _ in 0..3 {
            launch(dev, &module, &p, Mode::Off)?;
        }
        let mut best = [f64::INFINITY; 4];
        for _ in 0..rounds {
            for (k, mode) in [Mode::Off, Mode::Off, Mode::Interp, Mode::On]
                .into_iter()
                .enumerate()
            {
                best[k] = best[k].min(launch(dev, &module, &p, mode)?);
            }
        }
        let noise = best[1] / best[0];
        worst_noise = worst_noise.max(noise.max(1.0 / noise));
        println!(
            "{:<18} {:>9} {:>10.4} {:>10.4} {:>10.4} {:>10.4} {:>8.3} {:>8.2} {:>10.2}",
            case.name,
            p.threads(),
            best[0],
            best[1],
            best[2],
            best[3],
            noise,
            best[3] / best[0],
            best[3] / best[2]
        );
    }
    println!("counters: off_cost_noise_floor={worst_noise:.3}");
    Ok(())
}
