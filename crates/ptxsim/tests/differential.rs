//! Differential test of ptxsim's engines: every fixture kernel (`differential/cases.rs`) on
//! three seeds of random inputs under every engine setting (`differential/engines.rs`), each
//! compared with the interpreter's run: every buffer bit for bit, the printf text, the check
//! reports and faults, the warp-instruction count where it is exact, and the counters of
//! counted launches with one another.
//!
//! It knows no kernel's answer (the conformance tests do) and no engine's internals: it only
//! launches through the public API and compares.

#[path = "differential/cases.rs"]
mod cases;
mod common;
#[path = "differential/engines.rs"]
mod engines;

use cases::{ArgSpec, Case, Compare, Ty};
use common::Rng;
use engines::Engine;
use ptxsim::{counters::Counters, CheckKind, CheckReport, Device, LaunchError, Module};
use std::collections::BTreeMap;

/// Kernels of the fixtures that the table leaves out, and why.
const NOT_RUN: &[(&str, &str)] = &[(
    "spinForever",
    "spins until the host sets its flag (the cancel tests run it)",
)];

/// Kernels whose control flow depends on the order their atomics run in (a CAS retry loop, a
/// branch on a slot handed out by `atomicAdd`, the last block to finish doing the final sum
/// after `__threadfence`): their instruction counts and counters are the schedule's (they
/// differ with the number of workers: which block sums decides where its reads fall in the
/// L2's replay), so they are not compared.
const ORDER_DEPENDENT_COUNTS: &[&str] = &["atomicCasLoops", "binParticles", "reduceThreadFence"];

/// What one launch left behind, in the form the comparison needs.
#[derive(Debug, Clone, PartialEq)]
struct Outcome {
    /// Each argument's buffer after the launch (`None` for scalars and buffers not compared).
    buffers: Vec<Option<Vec<u8>>>,
    printf: String,
    /// The non-fatal reports (`report_key`), sorted.
    reports: Vec<String>,
    /// The fault, or another launch error.
    error: Option<String>,
    warp_instructions: u64,
    counters: Option<Box<Counters>>,
}

impl Outcome {
    /// Whether the checker found anything: then a run with the checker off need not agree.
    fn checked_something(&self) -> bool {
        !self.reports.is_empty() || self.error.is_some()
    }
}

/// A report as it must be the same under every engine: a race's two accesses may come in
/// either order (compiled regions run lanes one by one, the interpreter a warp at a time), so
/// a race is its word and block; anything else is the whole report.
fn report_key(r: &CheckReport) -> String {
    match r.kind {
        CheckKind::SharedRace => format!("race at {:#x} in block {:?}", r.address, r.block),
        _ => format!("{r:?}"),
    }
}

/// The random inputs of one case and seed, as bytes per argument.
fn inputs(case: &Case, rng: &mut Rng) -> Vec<Vec<u8>> {
    case.args
        .iter()
        .map(|a| match *a {
            ArgSpec::Random {
                ty, count, range, ..
            } => (0..count)
                .flat_map(|_| random_value(ty, range, rng))
                .collect(),
            ArgSpec::Zeroed { bytes, .. } => vec![0; bytes],
            ArgSpec::I32(v) => v.to_le_bytes().to_vec(),
            ArgSpec::U32(v) => v.to_le_bytes().to_vec(),
            ArgSpec::F32(v) => v.to_le_bytes().to_vec(),
            ArgSpec::F64(v) => v.to_le_bytes().to_vec(),
        })
        .collect()
}

fn random_value(ty: Ty, range: Option<(f64, f64)>, rng: &mut Rng) -> Vec<u8> {
    let (lo, hi) = range.unwrap_or((-100.0, 100.0));
    let int = |rng: &mut Rng| match range {
        Some(_) => rng.range_i64(lo as i64, hi as i64) as u64,
        None => rng.next_u64(),
    };
    match ty {
        Ty::U8 => vec![int(rng) as u8],
        Ty::I32 | Ty::U32 => (int(rng) as u32).to_le_bytes().to_vec(),
        Ty::I64 | Ty::U64 => int(rng).to_le_bytes().to_vec(),
        Ty::F32 => (rng.f64_in(lo, hi) as f32).to_le_bytes().to_vec(),
        Ty::F64 => rng.f64_in(lo, hi).to_le_bytes().to_vec(),
    }
}

/// Runs `case` on `dev` with `inputs` under `engine`.
fn run(dev: &Device, m: &Module, case: &Case, inputs: &[Vec<u8>], engine: &Engine) -> Outcome {
    let mut params: Vec<Vec<u8>> = Vec::new();
    let mut buffers = Vec::new();
    for (spec, bytes) in case.args.iter().zip(inputs) {
        let compare = match *spec {
            ArgSpec::Random { compare, .. } | ArgSpec::Zeroed { compare, .. } => compare,
            _ => {
                params.push(bytes.clone());
                buffers.push(None);
                continue;
            }
        };
        let p = dev.alloc(bytes.len().max(1)).expect("alloc");
        dev.write(p, 0, bytes).expect("write");
        params.push(p.to_le_bytes().to_vec());
        buffers.push(Some((p, bytes.len(), compare)));
    }
    let cfg = engine.config(case.grid, case.block, case.dyn_shared);
    let refs: Vec<&[u8]> = params.iter().map(|p| p.as_slice()).collect();
    let result = dev.launch(m, &case.kernel, &cfg, &refs);
    let buffers = buffers
        .into_iter()
        .map(|b| {
            let (p, len, compare) = b?;
            let mut out = vec![0; len];
            dev.read(p, 0, &mut out).expect("read");
            match compare {
                Compare::Bytes => Some(out),
                Compare::SortedWords(w) => {
                    let mut words: Vec<&[u8]> = out.chunks(w).collect();
                    words.sort_by_key(|c| c.iter().rev().copied().collect::<Vec<u8>>());
                    Some(words.concat())
                }
                Compare::Not => None,
            }
        })
        .collect();
    match result {
        Ok(r) => {
            let mut reports: Vec<String> = r.reports.iter().map(report_key).collect();
            reports.sort();
            reports.dedup();
            Outcome {
                buffers,
                printf: r.printf,
                reports,
                error: None,
                warp_instructions: r.warp_instructions,
                counters: r.counters,
            }
        }
        Err(LaunchError::Fault { report, printf }) => Outcome {
            buffers,
            printf,
            reports: Vec::new(),
            error: Some(report_key(&report)),
            warp_instructions: 0,
            counters: None,
        },
        Err(e) => Outcome {
            buffers,
            printf: String::new(),
            reports: Vec::new(),
            error: Some(format!("{e:?}")),
            warp_instructions: 0,
            counters: None,
        },
    }
}

/// Every case on every seed under `engine`, on a device of its own: the same allocations in
/// the same order under every engine, so addresses (and module globals that launches change)
/// are the same too.
fn run_all(engine: &Engine, cases: &[Case], seeds: &[u64]) -> Vec<Outcome> {
    let dev = Device::new();
    let mut modules = BTreeMap::new();
    for c in cases {
        modules.entry(c.fixture).or_insert_with(|| {
            dev.load_module(&common::fixture(c.fixture))
                .unwrap_or_else(|e| panic!("{}: {e}", c.fixture))
        });
    }
    let mut out = Vec::new();
    for &seed in seeds {
        let mut rng = Rng::seeded(seed);
        for c in cases {
            let inputs = inputs(c, &mut rng);
            out.push(run(&dev, &modules[c.fixture], c, &inputs, engine));
        }
    }
    out
}

/// How `got` (under `engine`) differs from the reference's `want`, if it does.
fn differences(engine: &Engine, case: &Case, want: &Outcome, got: &Outcome) -> Vec<String> {
    let mut d = Vec::new();
    let counts = !ORDER_DEPENDENT_COUNTS.contains(&case.kernel.as_str());
    let checked = engine.check || !want.checked_something();
    // After a fault, which of the launch's other stores ran is the schedule's (as on a GPU):
    // only the fault itself must be the same.
    if checked && want.error.is_none() {
        for (i, (w, g)) in want.buffers.iter().zip(&got.buffers).enumerate() {
            if w != g {
                let at = match (w, g) {
                    (Some(w), Some(g)) => w.iter().zip(g).position(|(a, b)| a != b),
                    _ => None,
                };
                d.push(format!("argument {i} differs (first at byte {at:?})"));
            }
        }
    }
    if checked && want.printf != got.printf {
        d.push(format!(
            "printf differs:\n{}\n--- versus ---\n{}",
            want.printf, got.printf
        ));
    }
    if engine.check {
        if want.reports != got.reports {
            d.push(format!(
                "reports {:?} versus {:?}",
                want.reports, got.reports
            ));
        }
        if want.error != got.error {
            d.push(format!("error {:?} versus {:?}", want.error, got.error));
        }
    } else if checked && got.checked_something() {
        d.push(format!(
            "checker off, yet reports {:?} / {:?}",
            got.reports, got.error
        ));
    }
    if engine.exact_count() && checked && counts && want.warp_instructions != got.warp_instructions
    {
        d.push(format!(
            "warp instructions {} versus {}",
            want.warp_instructions, got.warp_instructions
        ));
    }
    d
}

/// The three seeds of this run: `PTXSIM_SEED` (or the clock) and the two after it.
fn seeds() -> Vec<u64> {
    let base = common::rng::base_seed();
    println!("seeds from PTXSIM_SEED={base}");
    (0..3).map(|k| base.wrapping_add(k)).collect()
}

#[test]
fn every_engine_gives_the_interpreters_results() {
    let start = std::time::Instant::now();
    let cases = cases::all();
    check_the_table(&cases);
    let seeds = seeds();
    let engines = Engine::all();
    let reference = run_all(&engines[0], &cases, &seeds);
    // The reference itself: only the checker's fixture may report or fault.
    let wrong: Vec<String> = reference
        .iter()
        .enumerate()
        .filter(|(k, o)| cases[k % cases.len()].fixture != "checker" && o.checked_something())
        .map(|(k, o)| {
            let c = &cases[k % cases.len()];
            format!("{} {}: {:?} {:?}", c.fixture, c.kernel, o.reports, o.error)
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "the reference run reports:\n{}",
        wrong.join("\n")
    );
    let mut failures = Vec::new();
    let mut counted: Option<(&str, Vec<Outcome>)> = None;
    for e in &engines[1..] {
        let t = std::time::Instant::now();
        let outs = run_all(e, &cases, &seeds);
        for (k, (want, got)) in reference.iter().zip(&outs).enumerate() {
            let c = &cases[k % cases.len()];
            let what = format!(
                "{} {} seed {} under `{}`",
                c.fixture,
                c.kernel,
                seeds[k / cases.len()],
                e.name
            );
            failures.extend(
                differences(e, c, want, got)
                    .into_iter()
                    .map(|d| format!("{what}: {d}")),
            );
        }
        if e.counters {
            match &counted {
                None => counted = Some((e.name, outs)),
                Some((first, firsts)) => {
                    for (k, (a, b)) in firsts.iter().zip(&outs).enumerate() {
                        let c = &cases[k % cases.len()];
                        if a.counters != b.counters
                            && !ORDER_DEPENDENT_COUNTS.contains(&c.kernel.as_str())
                        {
                            failures.push(format!(
                                "{} {} seed {}: counters of `{first}` and `{}` differ",
                                c.fixture,
                                c.kernel,
                                seeds[k / cases.len()],
                                e.name
                            ));
                        }
                    }
                }
            }
        }
        println!("{:>6.2} s  {}", t.elapsed().as_secs_f64(), e.name);
    }
    let fixtures: std::collections::BTreeSet<_> = cases.iter().map(|c| c.fixture).collect();
    println!(
        "{} kernels of {} fixtures x {} engine settings (reference included) x {} seeds = {} launches in {:.1} s",
        cases.len(),
        fixtures.len(),
        engines.len(),
        seeds.len(),
        cases.len() * engines.len() * seeds.len(),
        start.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} differences (first 40):\n{}",
        failures.len(),
        failures
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The table covers every kernel of every fixture but those `NOT_RUN` says why it leaves out,
/// each with arguments of its parameters' sizes.
fn check_the_table(cases: &[Case]) {
    let dev = Device::new();
    let mut missing = Vec::new();
    for name in common::fixture_names() {
        let m = dev
            .load_module(&common::fixture(&name))
            .expect("fixture loads");
        for k in m.kernels() {
            let listed = cases
                .iter()
                .any(|c| c.fixture == name && c.kernel == k.name);
            let excused = NOT_RUN.iter().any(|(n, _)| *n == k.name);
            if listed == excused {
                missing.push(format!(
                    "{name}: {} (listed {listed}, excused {excused})",
                    k.name
                ));
            }
        }
    }
    for c in cases {
        let m = dev
            .load_module(&common::fixture(c.fixture))
            .expect("fixture loads");
        let info = m
            .kernel(&c.kernel)
            .unwrap_or_else(|| panic!("{}: no {}", c.fixture, c.kernel));
        let sizes: Vec<usize> = info.params.iter().map(|p| p.size).collect();
        let given: Vec<usize> = c
            .args
            .iter()
            .map(|a| match a {
                ArgSpec::I32(_) | ArgSpec::U32(_) | ArgSpec::F32(_) => 4,
                _ => 8,
            })
            .collect();
        assert_eq!(sizes, given, "{} {}: parameter sizes", c.fixture, c.kernel);
    }
    assert!(missing.is_empty(), "{missing:#?}");
}
