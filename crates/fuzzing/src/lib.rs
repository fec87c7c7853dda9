//! A small mutation fuzzer on stable Rust, shared by nbcuda's fuzz targets (the magic parser and
//! evaluator, the `%load` file loaders, the Jupyter wire parser: `tests/fuzz_*.rs`) and ptxsim's
//! (`crates/ptxsim/tests/fuzz.rs`). Dev-only: nothing ships with it.
//!
//! Why our own engine rather than cargo-fuzz or bolero: cargo-fuzz needs a nightly compiler, and
//! bolero on stable (its random engine under `cargo test`) draws every input from random bytes
//! without mutating the corpus, so it almost never produces a valid magic line, PTX module or
//! signed Jupyter message (its coverage-guided engines need `cargo bolero` and nightly sanitizer
//! flags). What the issue needs is smaller: deterministic seeded runs inside `cargo test`,
//! time-bounded runs for `benches/fuzz.sh`, and mutations aimed at what kills a parser (deep
//! nesting, a token repeated thousands of times, megabyte-long operator chains, bad length
//! fields). This crate does that with std alone. It is blind (not coverage-guided): it mutates
//! the seed corpus, the targets' stress inputs and their grammar generators' output.
//!
//! A [`Target`] is a function `fn(&[u8])` that must not panic, overflow its stack or hang, with
//! its corpus folders, a dictionary of tokens, bracket pairs to nest, operator chains and
//! optionally a structure-aware generator. [`Target::test`] is the `cargo test` run (the whole
//! corpus, the stress inputs, then a few thousand generated inputs from a fixed seed);
//! [`Target::long_run`] is the `benches/fuzz.sh` run (time-bounded, seed from the clock).
//!
//! - Inputs run on a worker thread with a 2 MiB stack, as much as the Jupyter kernel's request
//!   threads have, so that recursion too deep for the kernel overflows here too.
//! - Any panic on that thread is a crash, even one that the code under test catches itself
//!   (ptxsim's `load_module` turns its own panics into an error): a panic hook records it.
//! - Before each input runs, it is written to `target/fuzz-crash-<target>`; a stack overflow
//!   aborts the process and leaves the file there (it is removed when a run ends). Crashing
//!   inputs are saved under `target/fuzz-crashes/`.
//! - An input that runs for more than `FUZZ_HANG_SECS` (default 20) of wall time and of the
//!   process's CPU time (so that a starved run on a loaded machine is not a hang) is reported as a hang.
//! - `FUZZ_REPLAY=FILE` runs that one file instead (to reproduce a saved crash);
//!   `FUZZ_SLOW_MS=N` prints every input that ran N ms or more.

use std::cell::RefCell;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant, SystemTime};

/// Stack of the thread that runs the inputs (that of a tokio blocking thread, which runs the
/// Jupyter kernel's requests).
pub const STACK_BYTES: usize = 2 << 20;

/// The seed of `cargo test` runs, unless `FUZZ_SEED` says otherwise.
pub const TEST_SEED: u64 = 0x5eed_f00d;

/// Crashing inputs saved per run (all are counted).
const MAX_SAVED: usize = 20;

/// xorshift64* seeded through splitmix64: small, fast, deterministic.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.next_u64() % den < num
    }

    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }

    /// A length skewed to small: mostly under 8, sometimes up to a few thousand.
    pub fn size(&mut self) -> usize {
        match self.below(10) {
            0..=5 => 1 + self.below(4),
            6..=8 => 1 + self.below(32),
            _ => 1 + self.below(4096),
        }
    }

    /// A repeat count for nesting and repetition: mostly small, sometimes far past any sane
    /// limit (parsers that recurse per level overflow between 1,000 and 100,000).
    /// Huge counts come one time in ten, so that most inputs stay small and fast.
    pub fn depth(&mut self) -> usize {
        if self.chance(1, 10) {
            *self.pick(&[5000, 20_000, 100_000])
        } else {
            *self.pick(&[2, 3, 8, 30, 100, 255, 256, 257, 300, 1000])
        }
    }

    /// A chain length in bytes: up to 1 MiB, one time in twenty over 100 kB.
    pub fn chain_bytes(&mut self) -> usize {
        if self.chance(1, 20) {
            *self.pick(&[100_000, 1 << 20])
        } else {
            *self.pick(&[10, 100, 1000, 10_000])
        }
    }
}

/// A fuzz target and what its mutator knows about its input language.
#[derive(Clone)]
pub struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]),
    pub corpus: Vec<PathBuf>,
    /// Tokens inserted or substituted whole (keywords, operators, magic numbers).
    pub dict: Vec<Vec<u8>>,
    /// (opener, closer) pairs nested thousands deep: `(`/`)`, `ceil(`/`)`, `[`/`]`.
    pub nests: Vec<(Vec<u8>, Vec<u8>)>,
    /// (atom, separator) pairs repeated into long chains: `1` and `+` give `1+1+…+1`.
    pub chains: Vec<(Vec<u8>, Vec<u8>)>,
    /// A structure-aware generator (a grammar), used for a quarter of the generated inputs.
    pub generate: Option<fn(&mut Rng) -> Vec<u8>>,
    /// Inputs run after the corpus in every run: known killers (a 1 MB sum, 5,000 parentheses).
    pub stress: Vec<Vec<u8>>,
    /// Longest input the mutator makes.
    pub max_len: usize,
    /// Generated inputs of a `cargo test` run (`FUZZ_INPUTS` overrides).
    pub test_inputs: u64,
}

fn bytes_list(xs: &[&str]) -> Vec<Vec<u8>> {
    xs.iter().map(|s| s.as_bytes().to_vec()).collect()
}

fn pairs(xs: &[(&str, &str)]) -> Vec<(Vec<u8>, Vec<u8>)> {
    xs.iter()
        .map(|(a, b)| (a.as_bytes().to_vec(), b.as_bytes().to_vec()))
        .collect()
}

/// How long a run goes on.
#[derive(Debug, Clone, Copy)]
pub enum Budget {
    /// This many generated inputs (after the corpus and the stress inputs).
    Inputs(u64),
    /// Generated inputs until this much time has passed since the start.
    Time(Duration),
}

/// One crashing input.
#[derive(Debug, Clone)]
pub struct Crash {
    /// Where the input came from: `corpus FILE`, `stress #N` or `generated #N`.
    pub origin: String,
    pub message: String,
    /// The saved input (`None` past the first few).
    pub saved: Option<PathBuf>,
    pub preview: String,
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub inputs: u64,
    pub corpus: u64,
    pub elapsed: Duration,
    pub crashes: u64,
    pub first: Vec<Crash>,
}

impl Report {
    pub fn per_second(&self) -> f64 {
        self.inputs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

thread_local! {
    /// `Some` while an input runs on this thread: the first panic message seen, if any.
    static CAPTURE: RefCell<Option<Option<String>>> = const { RefCell::new(None) };
}

/// A panic hook that records panics of fuzzing threads (and keeps them quiet) and passes every
/// other thread's panic to the previous hook.
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let captured = CAPTURE.with(|c| match c.try_borrow_mut() {
                Ok(mut c) => match c.as_mut() {
                    Some(slot) => {
                        slot.get_or_insert_with(|| info.to_string());
                        true
                    }
                    None => false,
                },
                Err(_) => false,
            });
            if !captured {
                previous(info);
            }
        }));
    });
}

/// Notes written to stderr if the process aborts (a stack overflow aborts it), naming the file
/// that holds each running target's input: the test's own output is lost with the process.
mod abort_note {
    use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
    use std::sync::Once;

    const SLOTS: usize = 16;
    static NOTES: [AtomicPtr<u8>; SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];
    static LENS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
    const SIGABRT: i32 = 6;

    extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
        fn write(fd: i32, buf: *const u8, count: usize) -> isize;
    }

    /// Only `write(2)`, which is async-signal-safe; returning lets `abort` go on.
    extern "C" fn on_abort(_: i32) {
        for (note, len) in NOTES.iter().zip(&LENS) {
            let p = note.load(Ordering::SeqCst);
            if !p.is_null() {
                // SAFETY: `p` points to a leaked buffer of `len` bytes that is never freed.
                unsafe { write(2, p, len.load(Ordering::SeqCst)) };
            }
        }
    }

    /// Registers `msg`; returns its slot for [`clear`] (`None` when all slots are taken).
    pub fn set(msg: String) -> Option<usize> {
        static INSTALL: Once = Once::new();
        INSTALL.call_once(|| {
            // SAFETY: installs a handler that only calls write(2).
            unsafe { signal(SIGABRT, on_abort as extern "C" fn(i32) as usize) };
        });
        let bytes: &'static mut [u8] = Box::leak(msg.into_bytes().into_boxed_slice());
        for (i, note) in NOTES.iter().enumerate() {
            LENS[i].store(bytes.len(), Ordering::SeqCst);
            let free = note.compare_exchange(
                std::ptr::null_mut(),
                bytes.as_mut_ptr(),
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
            if free.is_ok() {
                return Some(i);
            }
        }
        None
    }

    /// Forgets a note (its few bytes stay leaked: the handler may be reading them).
    pub fn clear(slot: Option<usize>) {
        if let Some(i) = slot {
            NOTES[i].store(std::ptr::null_mut(), Ordering::SeqCst);
        }
    }
}

/// CPU seconds this process has used (user + system, every thread), from `/proc/self/stat`;
/// None where there is no such file.
fn process_cpu_secs() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces), from field 3 (state) on.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    // utime and stime are fields 14 and 15 of the line, 11 and 12 after the state; Linux
    // reports them in USER_HZ = 100 ticks a second.
    Some((ticks(11)? + ticks(12)?) as f64 / 100.0)
}

/// The workspace's `target` folder: the test binary lives in `target/<profile>/deps/`.
pub fn target_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(d);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("target"))
}

/// The first bytes of an input, escaped, for messages.
pub fn preview(input: &[u8]) -> String {
    let head: String = input[..input.len().min(80)]
        .escape_ascii()
        .to_string()
        .chars()
        .take(160)
        .collect();
    if input.len() > 80 {
        format!("\"{head}\"… ({} bytes)", input.len())
    } else {
        format!("\"{head}\"")
    }
}

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

impl Target {
    pub fn new(name: &'static str, run: fn(&[u8])) -> Target {
        Target {
            name,
            run,
            corpus: Vec::new(),
            dict: Vec::new(),
            nests: pairs(&[("(", ")"), ("[", "]"), ("{", "}")]),
            chains: pairs(&[("1", "+"), ("1", ",")]),
            generate: None,
            stress: Vec::new(),
            max_len: 1 << 16,
            test_inputs: 3000,
        }
    }

    /// Adds a corpus folder (every regular file in it is one input).
    pub fn corpus(mut self, dir: impl Into<PathBuf>) -> Target {
        self.corpus.push(dir.into());
        self
    }

    pub fn dict(mut self, tokens: &[&str]) -> Target {
        self.dict.extend(bytes_list(tokens));
        self
    }

    pub fn dict_bytes(mut self, tokens: &[&[u8]]) -> Target {
        self.dict.extend(tokens.iter().map(|t| t.to_vec()));
        self
    }

    /// Replaces the bracket pairs to nest.
    pub fn nests(mut self, xs: &[(&str, &str)]) -> Target {
        self.nests = pairs(xs);
        self
    }

    /// Replaces the (atom, separator) chains.
    pub fn chains(mut self, xs: &[(&str, &str)]) -> Target {
        self.chains = pairs(xs);
        self
    }

    pub fn generator(mut self, g: fn(&mut Rng) -> Vec<u8>) -> Target {
        self.generate = Some(g);
        self
    }

    pub fn stress(mut self, inputs: Vec<Vec<u8>>) -> Target {
        self.stress.extend(inputs);
        self
    }

    pub fn max_len(mut self, n: usize) -> Target {
        self.max_len = n;
        self
    }

    pub fn test_inputs(mut self, n: u64) -> Target {
        self.test_inputs = n;
        self
    }

    /// The corpus: (file, bytes), in file-name order.
    pub fn load_corpus(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        for dir in &self.corpus {
            let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
                .unwrap_or_else(|e| panic!("fuzz {}: corpus {}: {e}", self.name, dir.display()))
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect();
            files.sort();
            for f in files {
                let bytes = std::fs::read(&f)
                    .unwrap_or_else(|e| panic!("fuzz {}: {}: {e}", self.name, f.display()));
                out.push((f, bytes));
            }
        }
        out
    }

    /// The `cargo test` run: the corpus, the stress inputs and `test_inputs` generated inputs
    /// from [`TEST_SEED`] (or `FUZZ_SEED`, `FUZZ_INPUTS`). Panics naming the target, the seed and
    /// each crashing input (saved under `target/fuzz-crashes/`).
    pub fn test(&self) {
        let seed = env_u64("FUZZ_SEED").unwrap_or(TEST_SEED);
        let n = env_u64("FUZZ_INPUTS").unwrap_or(self.test_inputs);
        let r = self.run_or_replay(seed, Budget::Inputs(n));
        println!("{}", self.summary(&r, seed));
        if r.crashes > 0 {
            panic!("{}", self.failure(&r, seed));
        }
    }

    /// The `benches/fuzz.sh` run: `FUZZ_SECONDS` (default 60) of generated inputs from
    /// `FUZZ_SEED` (default: from the clock). Prints one `fuzz-result` line; panics on a crash.
    pub fn long_run(&self) {
        let secs = env_u64("FUZZ_SECONDS").unwrap_or(60);
        let seed = env_u64("FUZZ_SEED").unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
        let r = self.run_or_replay(seed, Budget::Time(Duration::from_secs(secs)));
        println!(
            "fuzz-result target={} inputs={} seconds={:.1} per_sec={:.0} crashes={} seed={:#x}",
            self.name,
            r.inputs,
            r.elapsed.as_secs_f64(),
            r.per_second(),
            r.crashes,
            seed
        );
        if r.crashes > 0 {
            panic!("{}", self.failure(&r, seed));
        }
    }

    fn summary(&self, r: &Report, seed: u64) -> String {
        format!(
            "fuzz {}: {} inputs ({} from the corpus) in {:.2} s, {:.0} inputs/s, seed {seed:#x}, {} crash(es)",
            self.name,
            r.inputs,
            r.corpus,
            r.elapsed.as_secs_f64(),
            r.per_second(),
            r.crashes
        )
    }

    fn failure(&self, r: &Report, seed: u64) -> String {
        let mut s = format!(
            "fuzz target '{}' crashed on {} input(s) with seed {seed:#x} (rerun one with FUZZ_REPLAY=FILE):",
            self.name, r.crashes
        );
        for c in &r.first {
            let saved = c
                .saved
                .as_ref()
                .map_or("not saved".to_string(), |p| p.display().to_string());
            s += &format!(
                "\n- {}: {}\n  input {} saved to {saved}\n  {}",
                c.origin,
                c.message.lines().next().unwrap_or(""),
                c.preview,
                c.message.lines().skip(1).collect::<Vec<_>>().join(" / ")
            );
        }
        s
    }

    fn run_or_replay(&self, seed: u64, budget: Budget) -> Report {
        match std::env::var_os("FUZZ_REPLAY") {
            Some(file) => {
                let mut t = self.clone();
                let bytes = std::fs::read(&file)
                    .unwrap_or_else(|e| panic!("FUZZ_REPLAY={}: {e}", Path::new(&file).display()));
                t.stress = vec![bytes];
                t.corpus.clear();
                t.generate = None;
                t.run_with(seed, Budget::Inputs(0), false)
            }
            None => self.run_with(seed, budget, true),
        }
    }

    /// Runs the corpus, the stress inputs, then generated inputs until `budget` is spent, on a
    /// worker thread with a [`STACK_BYTES`] stack; panics if one input runs past the hang limit.
    pub fn run(&self, seed: u64, budget: Budget) -> Report {
        self.run_with(seed, budget, true)
    }

    fn run_with(&self, seed: u64, budget: Budget, with_corpus: bool) -> Report {
        install_hook();
        let hang = Duration::from_secs(env_u64("FUZZ_HANG_SECS").unwrap_or(20));
        let dir = target_dir();
        let _ = std::fs::create_dir_all(dir.join("fuzz-crashes"));
        let current = dir.join(format!("fuzz-crash-{}", self.name));
        let corpus = if with_corpus {
            self.load_corpus()
        } else {
            Vec::new()
        };
        let note = abort_note::set(format!(
            "\nfuzz: the process aborted (a stack overflow?) while target '{}' (seed {seed:#x}) ran the input now in {}\n",
            self.name,
            current.display()
        ));
        let progress = Arc::new(AtomicU64::new(0));
        let t = self.clone();
        let (p, cur) = (progress.clone(), current.clone());
        let worker = std::thread::Builder::new()
            .name(format!("fuzz-{}", self.name))
            .stack_size(STACK_BYTES)
            .spawn(move || t.worker(seed, budget, corpus, &cur, &dir, &p))
            .expect("cannot start the fuzzing thread");
        let (mut last, mut since, mut cpu_since) = (0, Instant::now(), process_cpu_secs());
        while !worker.is_finished() {
            std::thread::sleep(Duration::from_millis(20));
            let now = progress.load(Ordering::Relaxed);
            // An input hangs when it has had `hang` of CPU, not merely of wall time: on a
            // loaded machine (a niced long run beside a build) it may get little of the CPU.
            let starved = match (cpu_since, process_cpu_secs()) {
                (Some(a), Some(b)) => b - a < hang.as_secs_f64(),
                _ => false,
            };
            if now != last {
                (last, since, cpu_since) = (now, Instant::now(), process_cpu_secs());
            } else if starved {
                continue;
            } else if since.elapsed() > hang && now % 2 == 1 {
                panic!(
                    "fuzz target '{}' hangs: input #{} (seed {seed:#x}) has run for more than {} s; it is in {}",
                    self.name,
                    now / 2 + 1,
                    hang.as_secs(),
                    current.display()
                );
            } else if since.elapsed() > hang {
                panic!(
                    "fuzz {}: making input #{} (seed {seed:#x}) took more than {} s: a generator or mutator bug",
                    self.name,
                    now / 2 + 1,
                    hang.as_secs()
                );
            }
        }
        let report = worker
            .join()
            .unwrap_or_else(|_| panic!("fuzz {}: the engine itself panicked", self.name));
        abort_note::clear(note);
        let _ = std::fs::remove_file(&current);
        report
    }

    fn worker(
        &self,
        seed: u64,
        budget: Budget,
        corpus: Vec<(PathBuf, Vec<u8>)>,
        current: &Path,
        dir: &Path,
        progress: &AtomicU64,
    ) -> Report {
        let start = Instant::now();
        let mut rng = Rng::new(seed);
        let mut report = Report {
            corpus: corpus.len() as u64,
            ..Report::default()
        };
        let cur = File::create(current).ok();
        let mut cur_len = 0u64;
        let slow_ms = env_u64("FUZZ_SLOW_MS");
        // Mutation bases: the corpus (the stress inputs are large and slow: each runs once).
        let entries: Vec<&[u8]> = corpus.iter().map(|(_, b)| b.as_slice()).collect();
        let mut one = |input: &[u8], origin: &dyn Fn() -> String, report: &mut Report| {
            if let Some(f) = &cur {
                let _ = f.write_all_at(input, 0);
                if (input.len() as u64) < cur_len {
                    let _ = f.set_len(input.len() as u64);
                }
                cur_len = input.len() as u64;
            }
            // Odd while an input runs, even between inputs (for the hang watchdog).
            progress.store(2 * report.inputs + 1, Ordering::Relaxed);
            CAPTURE.with(|c| *c.borrow_mut() = Some(None));
            let t0 = Instant::now();
            let result = catch_unwind(AssertUnwindSafe(|| (self.run)(input)));
            if let Some(ms) = slow_ms {
                let took = t0.elapsed();
                if took.as_millis() as u64 >= ms {
                    eprintln!(
                        "fuzz {}: slow input ({:.1} ms): {}",
                        self.name,
                        took.as_secs_f64() * 1e3,
                        preview(input)
                    );
                }
            }
            let captured = CAPTURE.with(|c| c.borrow_mut().take()).flatten();
            let message = match (result, captured) {
                (_, Some(m)) => Some(m),
                (Err(payload), None) => Some(
                    payload
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "panicked".into()),
                ),
                (Ok(()), None) => None,
            };
            report.inputs += 1;
            progress.store(2 * report.inputs, Ordering::Relaxed);
            if let Some(message) = message {
                report.crashes += 1;
                if report.first.len() < MAX_SAVED {
                    let path = dir
                        .join("fuzz-crashes")
                        .join(format!("{}-{seed:x}-{}", self.name, report.inputs));
                    let saved = std::fs::write(&path, input).ok().map(|_| path);
                    report.first.push(Crash {
                        origin: origin(),
                        message,
                        saved,
                        preview: preview(input),
                    });
                }
            }
        };
        for (file, bytes) in &corpus {
            one(bytes, &|| format!("corpus {}", file.display()), &mut report);
        }
        for (i, s) in self.stress.iter().enumerate() {
            one(s, &|| format!("stress input #{i}"), &mut report);
        }
        let mut generated = 0u64;
        loop {
            match budget {
                Budget::Inputs(n) if generated >= n => break,
                Budget::Time(d) if start.elapsed() >= d => break,
                _ => {}
            }
            let input = self.next_input(&mut rng, &entries);
            one(
                &input,
                &|| format!("generated input #{generated}"),
                &mut report,
            );
            generated += 1;
        }
        report.elapsed = start.elapsed();
        report
    }

    /// One generated input: a corpus entry or a generator's output, mutated.
    pub fn next_input(&self, rng: &mut Rng, entries: &[&[u8]]) -> Vec<u8> {
        let from_grammar = self.generate.is_some() && (entries.is_empty() || rng.chance(1, 4));
        let mut buf = match self.generate {
            Some(g) if from_grammar => g(rng),
            _ if entries.is_empty() => Vec::new(),
            _ => rng.pick(entries).to_vec(),
        };
        if from_grammar && rng.chance(1, 2) {
            buf.truncate(self.max_len);
            return buf;
        }
        let mut n = 1;
        while n < 8 && rng.chance(1, 2) {
            n += 1;
        }
        for _ in 0..n {
            self.mutate(rng, &mut buf, entries);
            buf.truncate(self.max_len);
        }
        buf
    }

    /// Applies one random mutation to `buf`.
    pub fn mutate(&self, rng: &mut Rng, buf: &mut Vec<u8>, entries: &[&[u8]]) {
        let len = buf.len();
        let pos = rng.below(len + 1);
        let room = self.max_len.saturating_sub(len);
        match rng.below(15) {
            0 if len > 0 => {
                let i = rng.below(len);
                buf[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                buf[i] = *rng.pick(&[0, 1, 0x7f, 0x80, 0xff, b'(', b')', b'"', b'\n', b'%'])
                    ^ if rng.chance(1, 4) {
                        rng.next_u64() as u8
                    } else {
                        0
                    };
            }
            2 if len > 0 => {
                let n = rng.size().min(len - pos.min(len));
                buf.drain(pos.min(len)..pos.min(len) + n);
            }
            3 => {
                let n = rng.size().min(room);
                let ascii = rng.chance(1, 2);
                let bytes: Vec<u8> = (0..n)
                    .map(|_| {
                        let b = rng.next_u64() as u8;
                        if ascii {
                            b' ' + b % 95
                        } else {
                            b
                        }
                    })
                    .collect();
                buf.splice(pos..pos, bytes);
            }
            4 if len > 0 => {
                let a = rng.below(len);
                let n = rng.size().min(len - a).min(room);
                let piece = buf[a..a + n].to_vec();
                buf.splice(pos..pos, piece);
            }
            5 if !entries.is_empty() => {
                let other = rng.pick(entries);
                let j = rng.below(other.len() + 1);
                buf.truncate(pos);
                buf.extend_from_slice(&other[j..]);
            }
            6 if !self.dict.is_empty() => {
                let tok = rng.pick(&self.dict).clone();
                buf.splice(pos..pos, tok);
            }
            7 if !self.dict.is_empty() && len > 0 => {
                let tok = rng.pick(&self.dict).clone();
                let n = rng.size().min(len - pos.min(len));
                buf.splice(pos.min(len)..pos.min(len) + n, tok);
            }
            8 if !self.nests.is_empty() => {
                let (open, close) = rng.pick(&self.nests).clone();
                let k = rng.depth().min(room / (open.len() + close.len()).max(1));
                let mut piece = open.repeat(k);
                if rng.chance(1, 2) {
                    piece.extend_from_slice(b"1");
                    piece.extend(close.repeat(k));
                }
                buf.splice(pos..pos, piece);
            }
            9 => {
                let tok = if len > 0 && rng.chance(1, 2) {
                    let a = rng.below(len);
                    buf[a..(a + rng.size().min(16)).min(len)].to_vec()
                } else if !self.dict.is_empty() {
                    rng.pick(&self.dict).clone()
                } else {
                    b"A".to_vec()
                };
                let k = rng.depth().min(room / tok.len().max(1));
                buf.splice(pos..pos, tok.repeat(k));
            }
            10 if !self.chains.is_empty() => {
                let (atom, sep) = rng.pick(&self.chains).clone();
                let unit = atom.len() + sep.len();
                let want = rng.chain_bytes();
                let k = (want / unit).min(room / unit.max(1));
                let mut piece = Vec::with_capacity(k * unit + atom.len());
                for _ in 0..k {
                    piece.extend_from_slice(&atom);
                    piece.extend_from_slice(&sep);
                }
                piece.extend_from_slice(&atom);
                buf.splice(pos..pos, piece);
            }
            11 if len > 0 => {
                let small = rng.next_u64() % 4096;
                let v: u64 = *rng.pick(&[
                    0,
                    1,
                    u64::MAX,
                    0x7f,
                    0x80,
                    0xff,
                    0x7fff,
                    0xffff,
                    0x1_0000,
                    0x7fff_ffff,
                    0x8000_0000,
                    0xffff_ffff,
                    i64::MAX as u64,
                    len as u64,
                    small,
                ]);
                let width = *rng.pick(&[1, 2, 4, 8]);
                let bytes = if rng.chance(1, 2) {
                    v.to_le_bytes()[..width].to_vec()
                } else {
                    v.to_be_bytes()[8 - width..].to_vec()
                };
                let i = rng.below(len);
                let end = (i + width).min(len);
                buf[i..end].copy_from_slice(&bytes[..end - i]);
            }
            12 => buf.truncate(pos),
            13 => {
                let p = pos.min(len);
                let digit = |b: &u8| b.is_ascii_digit();
                let found = buf[p..].iter().position(digit).map(|d| p + d);
                if let Some(start) = found.or_else(|| buf.iter().position(digit)) {
                    let end = buf[start..]
                        .iter()
                        .position(|b| !b.is_ascii_alphanumeric() && *b != b'.' && *b != b'_')
                        .map_or(len, |e| start + e);
                    let num = *rng.pick(&[
                        "0",
                        "-1",
                        "4294967296",
                        "2147483648",
                        "9223372036854775807",
                        "9223372036854775808",
                        "-9223372036854775808",
                        "18446744073709551616",
                        "99999999999999999999999999",
                        "1e308",
                        "1e309",
                        "1e-400",
                        "nan",
                        "inf",
                        "0x7fffffff",
                        "0.0",
                        "1_000_000",
                    ]);
                    buf.splice(start..end, num.bytes());
                }
            }
            _ => {
                // Shuffle: swap two halves around `pos`.
                buf.rotate_left(pos.min(len));
            }
        }
    }
}
