//! ptxsim benchmark: the tutorial CUDA kernels (NVRTC 12.9 PTX from `tests/fixtures`) on
//! ptxsim, beside a single-threaded native Rust version of the same computation and, when a
//! Python with Numba is given, Numba's CUDA simulator on the same inputs.
//!
//! Sizes: each kernel's problem is grown until one ptxsim launch takes at least 0.2 s; the
//! native ratios are at that size. Numba's simulator runs a few thousand threads per second, so
//! it gets a smaller problem, and ptxsim runs that same problem (same inputs) too: the Numba
//! ratio is Numba's time / ptxsim's time on identical inputs. (Comparing per-thread rates of
//! different sizes, as an earlier version did, misleads for kernels whose work per thread grows
//! with the size, such as matrix multiply.)
//!
//! Usage: `cargo run --release -p ptxsim --example bench -- [--numba PYTHON] [--quick]
//! [--only NAME[,NAME...]]`. For profiling (e.g. under `valgrind --tool=callgrind`, whose
//! instruction counts do not depend on the machine's load): `--profile NAME THREADS` runs one
//! checked launch of that case at that size on one thread and prints its warp-instructions;
//! `--profile NAME THREADS --repeat R [--workers W] [--nochk]` prints the best time of R
//! launches (`--nochk`: with the checker off).
//! `--floor [THREADS]` compares reduceBlockTree's native loops with the SIMT program a checked
//! simulator runs at best, thread by thread, vectorised over the block and as a block
//! interpreter (the yardsticks for goal Y), and then every case's native time with what its
//! warp-instructions cost at the interpreter's cheapest (its dispatch floor).
//! `--tier-costs [ROUNDS]` prints what one instruction of each kind costs a block in the
//! block tier (`tier_costs`).
//! `--counters [ROUNDS]` (with `--only`) times launches with the hardware-like counters off,
//! off again, interpreted and on, alternating, and prints the ratios (`counters`).
//! The last line printed is
//! `ptxsim: min_ratio_vs_numba_sim=X max_ratio_vs_native=Y parallel_speedup=Z`.
//! A benchmark, not a test: it reports what it measures and checks that the outputs agree.

mod block_interp;
mod cases;
mod counters;
#[path = "../../tests/common/rng.rs"]
#[allow(dead_code)]
mod rng;
mod tier_costs;

use cases::{Case, Cmp, Problem, RecordKind, A};
use ptxsim::{Device, LaunchConfig, Module};
use std::collections::HashMap;
use std::error::Error;
use std::path::{Path, PathBuf};
use std::time::Instant;

type Res<T> = Result<T, Box<dyn Error>>;

const MIN_SECONDS: f64 = 0.2;
/// How long each native version runs in all (best of its runs).
const NATIVE_SECONDS: f64 = 0.2;
const SEED: u64 = 20_240_611;

struct Row {
    name: &'static str,
    threads: u64,
    warp_instructions: u64,
    sim_s: f64,
    sim_nocheck_s: f64,
    sim_1thread_s: f64,
    native_s: f64,
    kernel_native_s: f64,
    agrees: bool,
    numba: Option<(u64, f64, bool)>,
    /// ptxsim's best time on the Numba-sized problem.
    sim_small_s: Option<f64>,
}

fn fixture(name: &str) -> Res<String> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("{name}.ptx"));
    std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()).into())
}

/// One launch on fresh device buffers; returns (seconds of the launch alone, warp-instructions,
/// checked output, whether it ran compiled regions).
/// `p`'s buffers copied to fresh allocations of `dev`, and its parameter bytes: (device
/// pointers, one byte vector per parameter).
fn upload(dev: &Device, p: &Problem) -> Res<(Vec<u64>, Vec<Vec<u8>>)> {
    let mut ptrs = Vec::new();
    for b in &p.bufs {
        let ptr = dev.alloc(b.data.len().max(1))?;
        dev.write(ptr, 0, &b.data)?;
        ptrs.push(ptr);
    }
    let params = p
        .args
        .iter()
        .map(|a| match a {
            A::Buf(i) => ptrs[*i].to_le_bytes().to_vec(),
            A::I32(v) => v.to_le_bytes().to_vec(),
            A::F32(v) => v.to_le_bytes().to_vec(),
        })
        .collect();
    Ok((ptrs, params))
}

/// The engines the `PTXSIM_*` variables choose (this program's edge, where the environment is
/// read).
fn engines() -> ptxsim::Engines {
    ptxsim::Engines::from_vars(|k| std::env::var(k).ok())
}

/// A launch of `grid` blocks of `block` threads with the engines of [`engines`].
fn config(grid: ptxsim::Dim3, block: ptxsim::Dim3) -> LaunchConfig {
    let mut cfg = LaunchConfig::new(grid, block);
    cfg.engines = engines();
    cfg
}

fn run_sim(
    dev: &Device,
    module: &Module,
    p: &Problem,
    threads: usize,
    check: bool,
) -> Res<(f64, u64, Vec<u8>, Tiers)> {
    let (ptrs, params) = upload(dev, p)?;
    let refs: Vec<&[u8]> = params.iter().map(|v| v.as_slice()).collect();
    let mut cfg = config(p.grid, p.block);
    cfg.dynamic_shared_bytes = p.shmem;
    cfg.threads = threads;
    cfg.check = check;
    let t0 = Instant::now();
    let report = dev.launch(module, p.kernel, &cfg, &refs)?;
    let secs = t0.elapsed().as_secs_f64();
    if !report.reports.is_empty() {
        return Err(format!(
            "{}: unexpected check reports: {:?}",
            p.kernel, report.reports
        )
        .into());
    }
    let mut out = vec![0u8; p.bufs[p.out].data.len()];
    dev.read(ptrs[p.out], 0, &mut out)?;
    for ptr in ptrs {
        dev.free(ptr)?;
    }
    let tiers = Tiers {
        jit: report.jit,
        blocks: report.block_tier_blocks,
        replays: report.block_tier_replays,
    };
    Ok((secs, report.warp_instructions, out, tiers))
}

/// Which tiers a launch used: compiled regions, and the blocks the block tier ran (replays
/// among them).
struct Tiers {
    jit: bool,
    blocks: u64,
    replays: u64,
}

fn agrees(cmp: Cmp, a: &[u8], b: &[u8]) -> bool {
    match cmp {
        Cmp::Exact => a == b,
        Cmp::F32(rel) => {
            let (x, y) = (cases::f32s(a), cases::f32s(b));
            x.len() == y.len()
                && x.iter()
                    .zip(&y)
                    .all(|(p, q)| (p - q).abs() <= rel * q.abs().max(1.0))
        }
    }
}

/// The best of repeated native runs, at least `runs_at_least` of them over at least
/// `secs_at_least`: the same "best of" rule as the simulator's launches, so that both sides of
/// a ratio see the quiet moments.
fn time_native(
    native: &mut cases::Native,
    runs_at_least: u32,
    secs_at_least: f64,
) -> (f64, Vec<u8>) {
    let t0 = Instant::now();
    let mut runs = 0u32;
    let mut best = f64::INFINITY;
    let mut out = Vec::new();
    while runs < runs_at_least || t0.elapsed().as_secs_f64() < secs_at_least {
        let t = Instant::now();
        out = std::hint::black_box(native());
        best = best.min(t.elapsed().as_secs_f64());
        runs += 1;
    }
    (best, out)
}

/// `--floor [THREADS]`: reduceBlockTree's native transliteration beside the SIMT program a
/// simulator runs at best (`cases::reduce_tree_simt`), without and with race records, and as a
/// block compiler vectorising over the block's threads would run it, without race records and
/// with them in two layouts (`cases::reduce_tree_block_vector`), and as a block interpreter
/// would (`block_interp`), on one core: how close to native goal Y asks ptxsim to come, and
/// what a tier of each kind could reach. Both record layouts are first shown to catch races
/// (`cases::records_catch_races`). Then the interpreter's own floor (`dispatch_floor`) for
/// every case.
fn floor(dev: &Device, every: &[Case], threads: u64) -> Res<()> {
    let case = every
        .iter()
        .find(|c| c.name == "reduceBlockTree")
        .ok_or("no reduceBlockTree case")?;
    let p = (case.build)(threads, &mut rng::Rng::seeded(SEED));
    let mut kern = (case.kernel_native)(&p);
    let mut runs = [
        ("SIMT program", cases::reduce_tree_simt(&p, false)),
        ("with race records", cases::reduce_tree_simt(&p, true)),
        (
            "vectorised over the block",
            cases::reduce_tree_block_vector(&p, RecordKind::None),
        ),
        (
            "with race records",
            cases::reduce_tree_block_vector(&p, RecordKind::Separate),
        ),
        (
            "with packed race records",
            cases::reduce_tree_block_vector(&p, RecordKind::Packed),
        ),
        (
            "a block interpreter with packed records",
            block_interp::reduce_tree_block_interp(&p, false),
        ),
        (
            "with uniform scalars too",
            block_interp::reduce_tree_block_interp(&p, true),
        ),
    ];
    let want = kern();
    if runs.iter_mut().any(|(_, r)| r() != want) {
        return Err("a yardstick's partial sums differ from the native ones".into());
    }
    if !cases::records_catch_races() {
        return Err("a yardstick's race records miss a race or report one where none is".into());
    }
    // Alternated, best of each.
    let mut best_kern = f64::INFINITY;
    let mut best = [f64::INFINITY; 7];
    for _ in 0..10 {
        best_kern = best_kern.min(time_native(&mut kern, 3, NATIVE_SECONDS).0);
        for (b, (_, r)) in best.iter_mut().zip(&mut runs) {
            *b = b.min(time_native(r, 3, NATIVE_SECONDS).0);
        }
    }
    let ratios: Vec<String> = runs
        .iter()
        .zip(&best)
        .map(|((label, _), b)| format!("{label} {:.1}x", b / best_kern))
        .collect();
    println!(
        "reduceBlockTree, {} threads, one core: kern {:.2e} threads/s; times kern's time: {}",
        p.threads(),
        p.threads() as f64 / best_kern,
        ratios.join(", ")
    );
    dispatch_floor(dev, every, threads)
}

/// A loop of 32-bit integer operations (add, xor, add, shift, compare and branch) and nothing
/// else: no memory access, no divergence, no barrier.
const ALU_LOOP: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry alu_loop(.param .u32 pn) {
  .reg .u32 %r<8>;
  .reg .pred %p<2>;
  ld.param.u32 %r1, [pn];
  mov.u32 %r2, 0;
  mov.u32 %r3, %tid.x;
LOOP:
  add.u32 %r2, %r2, 1;
  xor.b32 %r3, %r3, %r2;
  add.u32 %r4, %r3, %r2;
  shr.u32 %r3, %r4, 1;
  setp.lt.u32 %p1, %r2, %r1;
  @%p1 bra LOOP;
  ret;
}
"#;

/// The interpreter's cost per warp-instruction at its cheapest (`ALU_LOOP` on one warp, one
/// worker, interpreted), and for each case the time its warp-instructions would take at that
/// cost, beside its native transliteration's time on one core: a ratio the interpreter cannot
/// go below, however cheap its memory accesses, checks and barriers become (compiled regions,
/// where a launch runs them, are not bound by it). Where it is above goal Y even halved (two
/// cores), only a tier that runs fewer, wider instructions can meet Y.
fn dispatch_floor(dev: &Device, every: &[Case], threads: u64) -> Res<()> {
    let module = dev.load_module(ALU_LOOP)?;
    let mut cfg = config((1, 1, 1), (32, 1, 1));
    cfg.threads = 1;
    cfg.engines.jit = ptxsim::JitMode::Off;
    let trips: u32 = 200_000;
    let mut per_wi = f64::INFINITY;
    for _ in 0..20 {
        let t = Instant::now();
        let r = dev.launch(&module, "alu_loop", &cfg, &[&trips.to_le_bytes()])?;
        let s = t.elapsed().as_secs_f64();
        if r.warp_instructions < 6 * trips as u64 {
            return Err("the ALU loop ran fewer instructions than it has".into());
        }
        per_wi = per_wi.min(s / r.warp_instructions as f64);
    }
    println!(
        "interpreter dispatch floor: {:.1} ns per warp-instruction (a loop of 32-bit ALU \
         instructions, one warp, one worker, interpreted)",
        per_wi * 1e9
    );
    println!(
        "{:<18} {:>9} {:>9} {:>9} {:>9} {:>8} {:>7}  phases",
        "kernel", "threads", "wi/thread", "floor x1", "floor x2", "compiled", "uniform"
    );
    for case in every {
        let module = dev.load_module(&fixture(case.fixture)?)?;
        let p = (case.build)(threads, &mut rng::Rng::seeded(SEED));
        let (_, wi, _, Tiers { jit, .. }) = run_sim(dev, &module, &p, 1, true)?;
        let (kern_s, _) = time_native(&mut (case.kernel_native)(&p), 3, NATIVE_SECONDS);
        let ratio = wi as f64 * per_wi / kern_s.max(1e-12);
        let phases = module
            .block_phases(p.kernel)
            .ok_or_else(|| format!("{}: no kernel {}", case.fixture, p.kernel))?;
        println!(
            "{:<18} {:>9} {:>9.2} {:>9.1} {:>9.1} {:>8} {:>7}  {}",
            case.name,
            p.threads(),
            wi as f64 / p.threads() as f64,
            ratio,
            ratio / 2.0,
            if jit { "yes" } else { "no" },
            format!("{}/{}", phases.uniform_registers, phases.registers),
            match (&phases.not_split, phases.barriers) {
                (Some(why), _) => format!("no: {why}"),
                (None, 0) => "one (no barrier)".to_string(),
                (None, 1) => "split by 1 barrier".to_string(),
                (None, b) => format!("split by {b} barriers"),
            }
        );
    }
    println!(
        "wi/thread: warp-instructions the launch ran per thread; floor x1: those at the floor's \
         cost / kern's time, one core; floor x2: the same on two cores scaling perfectly; \
         compiled: whether the launch ran any compiled regions (the floor bounds only the \
         instructions it interprets); uniform: block-uniform registers / registers written, and \
         phases: whether the barriers split each block into phases every live thread runs \
         together (ptxsim::Module::block_phases, the block tier's condition, docs/block-tier.md)"
    );
    Ok(())
}

fn bench_case(dev: &Device, case: &Case, quick: bool) -> Res<Row> {
    let module = dev.load_module(&fixture(case.fixture)?)?;
    let mut threads: u64 = 1 << 14;
    let (min, reps) = if quick { (0.02, 1) } else { (MIN_SECONDS, 5) };
    // Grow the problem until one launch takes MIN_SECONDS.
    let p = loop {
        let mut r = rng::Rng::seeded(SEED);
        let p = (case.build)(threads, &mut r);
        let (s, _, _, _) = run_sim(dev, &module, &p, 0, true)?;
        if s >= min || threads >= 1 << 28 {
            break p;
        }
        let grow = ((min * 1.3 / s.max(1e-6)).ceil() as u64).clamp(2, 16);
        threads *= grow;
    };
    // The five configurations (ptxsim on all cores, without the checker, on one core, and
    // the two native versions) take turns, so that a stretch in which the shared machine gives
    // this process less CPU hurts all of them alike: the ratios compare times measured in the
    // same stretches. Each native version runs for at least NATIVE_SECONDS in all (at least
    // one run a turn, three in all).
    let mut native = (case.native)(&p);
    let mut kernel_native = (case.kernel_native)(&p);
    let (turn_runs, turn_secs) = (3u32.div_ceil(reps), NATIVE_SECONDS / reps as f64);
    let (mut sim_s, warp_instructions, out, _) = run_sim(dev, &module, &p, 0, true)?;
    let (mut sim_nocheck_s, _, _, _) = run_sim(dev, &module, &p, 0, false)?;
    let (mut sim_1thread_s, _, out1, _) = run_sim(dev, &module, &p, 1, true)?;
    let (mut native_s, want) = time_native(&mut native, turn_runs, turn_secs);
    let (mut kernel_native_s, want_k) = time_native(&mut kernel_native, turn_runs, turn_secs);
    for _ in 1..reps {
        sim_s = sim_s.min(run_sim(dev, &module, &p, 0, true)?.0);
        sim_nocheck_s = sim_nocheck_s.min(run_sim(dev, &module, &p, 0, false)?.0);
        sim_1thread_s = sim_1thread_s.min(run_sim(dev, &module, &p, 1, true)?.0);
        native_s = native_s.min(time_native(&mut native, turn_runs, turn_secs).0);
        kernel_native_s =
            kernel_native_s.min(time_native(&mut kernel_native, turn_runs, turn_secs).0);
    }
    Ok(Row {
        name: case.name,
        threads: p.threads(),
        warp_instructions,
        sim_s,
        sim_nocheck_s,
        sim_1thread_s,
        native_s,
        kernel_native_s,
        agrees: agrees(p.cmp, &out, &want)
            && agrees(p.cmp, &out1, &want)
            && agrees(p.cmp, &want_k, &want),
        numba: None,
        sim_small_s: None,
    })
}

/// Writes the Numba-sized problem of each case (inputs, launch shape, ptxsim's output) and
/// returns ptxsim's best time on it (launches repeated for at least 0.1 s).
fn write_numba_inputs(dev: &Device, dir: &Path, all: &[&Case]) -> Res<HashMap<String, f64>> {
    let mut times = HashMap::new();
    for case in all {
        let module = dev.load_module(&fixture(case.fixture)?)?;
        let mut r = rng::Rng::seeded(SEED);
        let p = (case.build)(case.numba_threads, &mut r);
        let (mut best, _, out, _) = run_sim(dev, &module, &p, 0, true)?;
        let t0 = Instant::now();
        while t0.elapsed().as_secs_f64() < 0.1 {
            best = best.min(run_sim(dev, &module, &p, 0, true)?.0);
        }
        times.insert(case.name.to_string(), best);
        let d = dir.join(case.name);
        std::fs::create_dir_all(&d)?;
        let mut meta = format!(
            "kernel {}\ngrid {} {} {}\nblock {} {} {}\nshmem {}\nout {}\n",
            case.name,
            p.grid.0,
            p.grid.1,
            p.grid.2,
            p.block.0,
            p.block.1,
            p.block.2,
            p.shmem,
            p.bufs[p.out].name
        );
        for b in &p.bufs {
            std::fs::write(d.join(format!("{}.bin", b.name)), &b.data)?;
            meta.push_str(&format!("buf {} {}\n", b.name, b.dtype));
        }
        for a in &p.args {
            meta.push_str(&match a {
                A::Buf(i) => format!("arg buf {}\n", p.bufs[*i].name),
                A::I32(v) => format!("arg i32 {v}\n"),
                A::F32(v) => format!("arg f32 {v:e}\n"),
            });
        }
        meta.push_str(&format!(
            "cmp {}\n",
            match p.cmp {
                Cmp::Exact => "exact".to_string(),
                Cmp::F32(r) => format!("{r:e}"),
            }
        ));
        std::fs::write(d.join("expected.bin"), &out)?;
        std::fs::write(d.join("meta.txt"), meta)?;
    }
    Ok(times)
}

/// Runs the Numba script; returns case → (threads, seconds, agrees with ptxsim).
fn run_numba(python: &str, dir: &Path) -> Res<HashMap<String, (u64, f64, bool)>> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/numba_sim.py");
    let out = std::process::Command::new(python)
        .arg(&script)
        .arg(dir)
        .env("NUMBA_ENABLE_CUDASIM", "1")
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "numba script failed:\n{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let mut res = HashMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 5 && f[0] == "RESULT" {
            if f[4] == "SKIP" {
                continue;
            }
            if let (Ok(t), Ok(s)) = (f[2].parse::<u64>(), f[3].parse::<f64>()) {
                res.insert(f[1].to_string(), (t, s, f[4] == "ok"));
            }
        } else if !line.trim().is_empty() {
            println!("numba: {line}");
        }
    }
    Ok(res)
}

fn rate(threads: u64, secs: f64) -> f64 {
    threads as f64 / secs.max(1e-12)
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let numba_python = args
        .iter()
        .position(|a| a == "--numba")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let only: Option<Vec<String>> = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.split(',').map(str::to_string).collect());
    let dev = Device::new();
    let every = cases::all();
    if let Some(i) = args.iter().position(|a| a == "--tier-costs") {
        let rounds = args.get(i + 1).and_then(|t| t.parse().ok()).unwrap_or(6);
        return tier_costs::tier_costs(rounds);
    }
    if let Some(i) = args.iter().position(|a| a == "--counters") {
        let rounds = args.get(i + 1).and_then(|t| t.parse().ok()).unwrap_or(5);
        return counters::counters(&dev, &every, only.as_deref(), rounds);
    }
    if let Some(i) = args.iter().position(|a| a == "--floor") {
        let threads = args
            .get(i + 1)
            .and_then(|t| t.parse().ok())
            .unwrap_or(1 << 22);
        return floor(&dev, &every, threads);
    }
    if let Some(i) = args.iter().position(|a| a == "--profile") {
        let name = args.get(i + 1).ok_or("--profile NAME THREADS")?;
        let threads: u64 = args
            .get(i + 2)
            .and_then(|t| t.parse().ok())
            .ok_or("--profile NAME THREADS: THREADS must be a number")?;
        let case = every
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| format!("no case named {name}"))?;
        let module = dev.load_module(&fixture(case.fixture)?)?;
        let p = (case.build)(threads, &mut rng::Rng::seeded(SEED));
        if let Some(k) = args.iter().position(|a| a == "--repeat") {
            // Best of R launches on `--workers W` workers (0: all cores), as the Numba column
            // times the small problem.
            let r: usize = args.get(k + 1).and_then(|v| v.parse().ok()).unwrap_or(100);
            let workers: usize = args
                .iter()
                .position(|a| a == "--workers")
                .and_then(|k| args.get(k + 1))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            // `--nochk`: with the checker off.
            let check = !args.iter().any(|a| a == "--nochk");
            let mut best = f64::INFINITY;
            for _ in 0..r {
                best = best.min(run_sim(&dev, &module, &p, workers, check)?.0);
            }
            println!(
                "{name}: {} threads, best of {r} on {workers} workers: {best:.3e} s",
                p.threads()
            );
            return Ok(());
        }
        let (s, wi, _, t) = run_sim(&dev, &module, &p, 1, true)?;
        println!(
            "{name}: {} threads, {wi} warp-instructions, {s:.4} s; block tier: {} of {} blocks \
             ({} replays)",
            p.threads(),
            t.blocks,
            p.grid.0 as u64 * p.grid.1 as u64 * p.grid.2 as u64,
            t.replays
        );
        if args.iter().any(|a| a == "--twice") {
            // A second launch: with the JIT, the first one included compiling.
            let (s, _, _, _) = run_sim(&dev, &module, &p, 1, true)?;
            println!("{name}: second launch {s:.4} s");
        }
        return Ok(());
    }
    let all: Vec<&Case> = every
        .iter()
        .filter(|c| only.as_ref().is_none_or(|o| o.iter().any(|n| n == c.name)))
        .collect();
    if all.is_empty() {
        return Err(format!(
            "--only matches no case; the cases: {}",
            every.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
        )
        .into());
    }
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    // The ratios differ between AVX-512 and AVX2 machines (docs/block-tier.md, "Measuring").
    let build = engines().host.runs();
    println!("ptxsim benchmark: {} tutorial CUDA kernels, {cores} cores, lane loops built for {build:?}, rates in threads/s (native ratios at the big size, Numba ratios on Numba's size)", all.len());
    let mut rows = Vec::new();
    for case in all.iter().copied() {
        let row = bench_case(&dev, case, quick)?;
        rows.push(row);
    }
    let mut numba_note = String::from("Numba simulator: not run (no --numba PYTHON)");
    if let Some(py) = &numba_python {
        let dir = std::env::temp_dir().join(format!("ptxsim-bench-{}", std::process::id()));
        let small = write_numba_inputs(&dev, &dir, &all)?;
        match run_numba(py, &dir) {
            Ok(res) => {
                for row in &mut rows {
                    row.numba = res.get(row.name).copied();
                    row.sim_small_s = small.get(row.name).copied();
                }
                numba_note = format!(
                    "Numba simulator: {py}, sizes {:?} threads",
                    all.iter().map(|c| c.numba_threads).collect::<Vec<_>>()
                );
            }
            Err(e) => numba_note = format!("Numba simulator: failed: {e}"),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    println!(
        "{:<18} {:>9} {:>6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>9} {:>8} {:>8} {:>7} {:>5} {:>5}",
        "kernel",
        "threads",
        "sim s",
        "Mwi/s",
        "sim t/s",
        "nochk t/s",
        "kern t/s",
        "idiom t/s",
        "x kern",
        "x idiom",
        "numba t/s",
        "numba s",
        "sim@n s",
        "x numba",
        "par",
        "agree"
    );
    let (mut max_kern, mut max_idiom, mut min_numba) = (0f64, 0f64, f64::INFINITY);
    let (mut t1, mut t0) = (0f64, 0f64);
    for r in &rows {
        let sim_rate = rate(r.threads, r.sim_s);
        let vs_kern = r.sim_s / r.kernel_native_s.max(1e-12);
        let vs_idiom = r.sim_s / r.native_s.max(1e-12);
        max_kern = max_kern.max(vs_kern);
        max_idiom = max_idiom.max(vs_idiom);
        t1 += r.sim_1thread_s;
        t0 += r.sim_s;
        let (numba_rate, numba_s, small_s, vs_numba, numba_ok) = match (r.numba, r.sim_small_s) {
            (Some((t, s, ok)), Some(small)) => {
                let ratio = s / small.max(1e-12);
                min_numba = min_numba.min(ratio);
                (
                    format!("{:.2e}", rate(t, s)),
                    format!("{s:.3}"),
                    format!("{:.2e}", small),
                    format!("{ratio:.0}"),
                    ok,
                )
            }
            _ => ("-".into(), "-".into(), "-".into(), "-".into(), true),
        };
        println!(
            "{:<18} {:>9} {:>6.3} {:>6.1} {:>9.2e} {:>9.2e} {:>9.2e} {:>9.2e} {:>7.1} {:>7.1} {:>9} {:>8} {:>8} {:>7} {:>5.2} {:>5}",
            r.name,
            r.threads,
            r.sim_s,
            r.warp_instructions as f64 / r.sim_s.max(1e-12) / 1e6,
            sim_rate,
            rate(r.threads, r.sim_nocheck_s),
            rate(r.threads, r.kernel_native_s),
            rate(r.threads, r.native_s),
            vs_kern,
            vs_idiom,
            numba_rate,
            numba_s,
            small_s,
            vs_numba,
            r.sim_1thread_s / r.sim_s.max(1e-12),
            if r.agrees && numba_ok { "yes" } else { "NO" }
        );
    }
    println!("{numba_note}");
    println!("sim: ptxsim, checker on (the default), best of 5 launches (the configurations, native ones included, take turns); Mwi/s: million warp-instructions/s; nochk: checker off");
    println!("kern: native Rust transliteration of the CUDA kernel (loops over blocks and threads, barrier phases, lane arrays), single-threaded");
    println!("idiom: idiomatic single-threaded native Rust for the same result (vectorisable loops); x kern / x idiom: ptxsim time / native time, same problem");
    println!("x numba: Numba CUDA simulator time / ptxsim time, both on the same smaller problem (same inputs, checked equal)");
    println!("par: ptxsim time with LaunchConfig.threads=1 / with threads=0 ({cores} cores)");
    println!("max ratio vs idiomatic native: {max_idiom:.1}");
    let x = if min_numba.is_finite() {
        format!("{min_numba:.0}")
    } else {
        "n/a".to_string()
    };
    println!(
        "ptxsim: min_ratio_vs_numba_sim={x} max_ratio_vs_native={max_kern:.1} parallel_speedup={:.2}",
        t1 / t0.max(1e-12)
    );
    Ok(())
}
