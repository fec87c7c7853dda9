//! Tests of the evcxr bridge against a real evcxr (cargo and rustc must be installed).
//!
//! SLOW: every `slow_` test starts evcxr and compiles real cells (tens of seconds). Run them with
//! `cargo test --release --lib rust:: -- --nocapture` to see the timings they print.

use super::*;
use std::sync::atomic::AtomicUsize;

/// evcxr runs cells in a child process started from the running executable, which must call
/// `evcxr::runtime_hook()` before anything else. The binary's `main` does that; this test binary
/// does it from an ELF constructor, on the main thread (as in the real child: panic detection
/// relies on the cell running there), before libtest starts.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static EVCXR_CHILD_HOOK: extern "C" fn() = {
    extern "C" fn hook() {
        evcxr::runtime_hook();
    }
    hook
};

/// Collects a cell's output with the time each piece arrived.
#[derive(Clone, Default)]
struct Collector {
    seen: Arc<Mutex<Vec<(Instant, CellOutput)>>>,
}

impl Collector {
    fn sink(&self) -> OutputSink {
        let seen = self.seen.clone();
        Arc::new(move |output| lock(&seen).push((Instant::now(), output)))
    }

    fn stdout(&self) -> String {
        lock(&self.seen)
            .iter()
            .filter_map(|(_, o)| match o {
                CellOutput::Stdout(text) => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    fn stderr(&self) -> String {
        lock(&self.seen)
            .iter()
            .filter_map(|(_, o)| match o {
                CellOutput::Stderr(text) => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    /// When a stdout piece containing `needle` arrived.
    fn arrival(&self, needle: &str) -> Option<Instant> {
        lock(&self.seen).iter().find_map(|(at, o)| match o {
            CellOutput::Stdout(text) if text.contains(needle) => Some(*at),
            _ => None,
        })
    }
}

fn plain(bundle: &Option<MimeBundle>) -> Option<String> {
    bundle
        .as_ref()
        .and_then(|b| b.get("text/plain"))
        .and_then(|v| v.as_str())
        .map(str::to_owned)
}

fn run(engine: &RustEngine, code: &str) -> (Result<Option<MimeBundle>, RustCellError>, Collector) {
    let collector = Collector::default();
    let result = engine.execute(code, &collector.sink());
    (result, collector)
}

fn random_u32(state: &AtomicUsize) -> u32 {
    let mut x = state.load(Ordering::Relaxed) as u64 | 1;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    state.store(x as usize, Ordering::Relaxed);
    (x >> 16) as u32 % 10_000
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

#[test]
fn ename_of_every_error() {
    let message = String::new;
    let cases = [
        (
            RustCellError::Compile { message: message() },
            "CompileError",
        ),
        (RustCellError::Panic { message: message() }, "Panic"),
        (RustCellError::Interrupted, "Interrupted"),
        (
            RustCellError::ChildDied { message: message() },
            "ChildProcessDied",
        ),
        (
            RustCellError::Unavailable { message: message() },
            "RustUnavailable",
        ),
        (RustCellError::Other { message: message() }, "RustError"),
    ];
    for (error, ename) in cases {
        assert_eq!(error.ename(), ename);
    }
}

/// SLOW (about a minute): one evcxr engine through the whole contract: start in the background,
/// env and prelude, final values, streamed stdout, rich content, compile errors, panics, colon
/// commands, completion, inspect, a child that aborts, interrupting `loop {}`, and timings.
#[test]
fn slow_evcxr_engine_end_to_end() {
    let seed = AtomicUsize::new(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(7, |d| d.subsec_nanos() as usize),
    );
    let t0 = Instant::now();
    let engine = RustEngine::start(
        vec![("NBCUDA_BRIDGE_TEST".to_owned(), "from-env".to_owned())],
        Prelude {
            at_start: vec![
                "use std::collections::BTreeMap;".to_owned(),
                ":fmt {:?}".to_owned(),
            ],
            on_demand: vec!["fn nbcuda_on_demand() -> u32 { 7 }".to_owned()],
            names: vec!["nbcuda_on_demand".to_owned()],
            load_lock: None,
        },
    );
    assert!(
        t0.elapsed() < Duration::from_millis(500),
        "start() must return at once"
    );
    assert!(!engine.is_ready());
    assert!(engine.complete("let a = 1; a.", 13).matches.is_empty());

    // Final expression → text/plain; values are random so that nothing can be hard-coded.
    let (a, b) = (random_u32(&seed), random_u32(&seed));
    let (result, _) = run(&engine, &format!("let x = {a}; x + {b}"));
    let first_cell = t0.elapsed();
    assert_eq!(
        plain(&result.unwrap()).as_deref(),
        Some(&*(a + b).to_string())
    );
    assert!(engine.is_ready());
    eprintln!("first cell result after start(): {first_cell:?}");

    // env reaches the child; the prelude's `use` is in scope.
    let (result, _) = run(&engine, "std::env::var(\"NBCUDA_BRIDGE_TEST\").unwrap()");
    assert_eq!(plain(&result.unwrap()).as_deref(), Some("\"from-env\""));
    let (result, _) = run(
        &engine,
        "let mut m = BTreeMap::new(); m.insert(2, 3); m.len()",
    );
    assert_eq!(plain(&result.unwrap()).as_deref(), Some("1"));
    // The on-demand part is there for a cell that names it: these cells came one after another,
    // with no idle pause to load it in, so it loads just before this cell, which says so.
    let (result, out) = run(&engine, &format!("nbcuda_on_demand() + {a}"));
    assert_eq!(
        plain(&result.unwrap()).as_deref(),
        Some(&*(a + 7).to_string())
    );
    assert!(
        out.stderr().contains("loading nbcuda_on_demand"),
        "{:?}",
        out.stderr()
    );

    // Variables persist between cells.
    let (result, _) = run(&engine, "x * 2");
    assert_eq!(
        plain(&result.unwrap()).as_deref(),
        Some(&*(2 * a).to_string())
    );

    // stdout is streamed while the cell runs, not at its end.
    let started = Instant::now();
    let (result, out) = run(
        &engine,
        "println!(\"early line\"); eprintln!(\"to stderr\"); \
         std::thread::sleep(std::time::Duration::from_millis(800)); println!(\"late line\");",
    );
    let finished = Instant::now();
    assert_eq!(plain(&result.unwrap()), None);
    assert_eq!(out.stdout(), "early line\nlate line\n");
    assert!(out.stderr().contains("to stderr\n"), "{}", out.stderr());
    let early = out.arrival("early line").unwrap();
    assert!(early > started && finished - early >= Duration::from_millis(500));

    // print! without a newline does not hang the cell; as in evcxr, the partial line shows up
    // with the next newline (the child's stdout is read line by line).
    let (result, _) = run(&engine, "print!(\"no newline\");");
    assert!(result.is_ok(), "{result:?}");
    let (result, out) = run(&engine, "println!(\"!\");");
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(out.stdout(), "no newline!\n");

    // evcxr's content mechanism: evcxr_display on the final value → several MIME types.
    let (result, _) = run(
        &engine,
        "struct Shown(u32);\n\
         impl Shown { fn evcxr_display(&self) {\n\
             println!(\"EVCXR_BEGIN_CONTENT text/html\\n<b>{}</b>\\nEVCXR_END_CONTENT\", self.0);\n\
             println!(\"EVCXR_BEGIN_CONTENT application/json\\n{{\\\"v\\\": {}}}\\nEVCXR_END_CONTENT\", self.0);\n\
         } }\n\
         Shown(x as u32)",
    );
    let bundle = result.unwrap().unwrap();
    assert_eq!(bundle["text/html"], format!("<b>{a}</b>"));
    assert_eq!(bundle["application/json"]["v"], a);

    // Compile errors: rendered with the cell's line and carets.
    let (result, _) = run(&engine, "let y: u8 = \"text\";");
    match result {
        Err(error @ RustCellError::Compile { .. }) => {
            let message = error.to_string();
            assert!(message.contains("mismatched types"), "{message}");
            assert!(message.contains("let y: u8 = \"text\";"), "{message}");
            assert!(message.contains('^') || message.contains('─'), "{message}");
            assert!(!message.contains('\u{1b}'), "no ANSI codes: {message:?}");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }

    // Panics are errors with the panic message; variables of earlier cells survive.
    let (result, out) = run(&engine, &format!("let z = {b}; panic!(\"boom {{}}\", z);"));
    match result {
        Err(RustCellError::Panic { message }) => assert_eq!(message, format!("boom {b}")),
        other => panic!("expected a panic, got {other:?}: {}", out.stderr()),
    }
    let (result, _) = run(&engine, "x + 1");
    assert_eq!(
        plain(&result.unwrap()).as_deref(),
        Some(&*(a + 1).to_string())
    );
    // A panic in another thread that the cell handles is not a failed cell.
    let (result, _) = run(
        &engine,
        "std::thread::spawn(|| panic!(\"inner\")).join().is_err()",
    );
    assert_eq!(plain(&result.unwrap()).as_deref(), Some("true"));

    // Colon commands.
    let (result, _) = run(&engine, ":vars");
    let vars = plain(&result.unwrap()).unwrap_or_default();
    assert!(vars.contains("x: u32") || vars.contains("x: i32"), "{vars}");
    let (result, _) = run(&engine, ":help");
    assert!(plain(&result.unwrap()).unwrap_or_default().contains(":dep"));
    let (result, _) = run(&engine, ":quit");
    assert!(
        matches!(result, Err(RustCellError::Other { .. })),
        "{result:?}"
    );

    // Completion and inspect (rust-analyzer): the first request may load the standard library.
    run(&engine, "let counter_value: i64 = 5;").0.unwrap();
    let mut completions = RustCompletions::default();
    let t = Instant::now();
    for _ in 0..30 {
        let asked = Instant::now();
        completions = engine.complete("counter_v", 9);
        // Liveness, 10x the usual answer: a slow machine must not fail it (timing is
        // benches/responsiveness.py's business).
        assert!(
            asked.elapsed() < Duration::from_secs(26),
            "{:?}",
            asked.elapsed()
        );
        if !completions.matches.is_empty() {
            break;
        }
    }
    eprintln!("first non-empty completion after {:?}", t.elapsed());
    assert!(
        completions.matches.iter().any(|m| m == "counter_value"),
        "{completions:?}"
    );
    assert_eq!((completions.cursor_start, completions.cursor_end), (0, 9));
    // Members only rust-analyzer knows: with no lexical match it gets 2 s per request; ask
    // again while its first analysis after the new cell runs (a front end asks again as the
    // user types).
    let t = Instant::now();
    let mut methods = RustCompletions::default();
    for _ in 0..100 {
        let asked = Instant::now();
        methods = engine.complete("counter_value.checked_a", 23);
        assert!(
            asked.elapsed() < Duration::from_secs(2),
            "{:?}",
            asked.elapsed()
        );
        if !methods.matches.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!("method completion: {:?}", t.elapsed());
    assert!(
        methods.matches.iter().any(|m| m.starts_with("checked_add")),
        "{methods:?}"
    );
    let commands = engine.complete(":he", 3);
    assert!(
        commands.matches.iter().any(|m| m == ":help"),
        "{commands:?}"
    );
    let t = Instant::now();
    let inspected = engine.inspect("counter_value", 4).unwrap_or_default();
    eprintln!("inspect: {:?}: {inspected:?}", t.elapsed());
    assert!(inspected.contains("i64"), "{inspected}");
    assert_eq!(engine.inspect("1 + 2", 5), None);
    // A `:restart` line in a cell being completed is not run (variables survive).
    engine.complete(":restart\ncounter_v", 18);
    assert_eq!(
        plain(&run(&engine, "counter_value").0.unwrap()).as_deref(),
        Some("5")
    );

    // A child that aborts: ChildDied, and the next cell runs (variables are lost).
    let (result, _) = run(&engine, "std::process::abort();");
    assert!(
        matches!(result, Err(RustCellError::ChildDied { .. })),
        "{result:?}"
    );
    let (result, _) = run(&engine, "3 * 7");
    assert_eq!(plain(&result.unwrap()).as_deref(), Some("21"));

    // Interrupt `loop {}` within 2 s; the next cell runs.
    run(&engine, "let kept: u32 = 1;").0.unwrap();
    let interrupt = engine.interrupt_handle();
    let collector = Collector::default();
    let sink = collector.sink();
    let (result, interrupted_after) = std::thread::scope(|scope| {
        let running = scope.spawn(|| {
            engine.execute(
                "println!(\"spinning\"); loop { std::hint::spin_loop(); }",
                &sink,
            )
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        while collector.arrival("spinning").is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(200));
        let asked = Instant::now();
        interrupt.interrupt();
        let result = running.join();
        (result, asked.elapsed())
    });
    eprintln!("interrupt returned after {interrupted_after:?}");
    assert!(
        matches!(result, Ok(Err(RustCellError::Interrupted))),
        "{result:?}"
    );
    // Liveness (an interrupt that does not work never returns): 10x the usual bound.
    assert!(
        interrupted_after < Duration::from_secs(20),
        "{interrupted_after:?}"
    );
    assert!(
        collector.stderr().contains("variables"),
        "{}",
        collector.stderr()
    );
    let (result, _) = run(&engine, "kept");
    assert!(
        matches!(result, Err(RustCellError::Compile { .. })),
        "variables are lost"
    );
    let (result, _) = run(&engine, "40 + 2");
    assert_eq!(plain(&result.unwrap()).as_deref(), Some("42"));

    // Interrupt while the cell compiles (slow const evaluation): the cell ends within 2 s, the
    // compilation finishes in the background and the next cell runs after it.
    let collector = Collector::default();
    let sink = collector.sink();
    let (result, interrupted_after) = std::thread::scope(|scope| {
        let compiling = scope.spawn(|| {
            engine.execute(
                "#[allow(long_running_const_eval)]\n\
                 const SLOW: u64 = { let mut i = 0u64; let mut s = 0u64; \
                 while i < 400_000 { s = s.wrapping_add(i ^ (s >> 3)); i += 1; } s };\n\
                 SLOW",
                &sink,
            )
        });
        std::thread::sleep(Duration::from_millis(400));
        let asked = Instant::now();
        interrupt.interrupt();
        let result = compiling.join();
        (result, asked.elapsed())
    });
    eprintln!("interrupt during compilation returned after {interrupted_after:?}");
    assert!(
        matches!(result, Ok(Err(RustCellError::Interrupted))),
        "{result:?}"
    );
    // Liveness (an interrupt that does not work never returns): 10x the usual bound.
    assert!(
        interrupted_after < Duration::from_secs(20),
        "{interrupted_after:?}"
    );
    let t = Instant::now();
    let (result, _) = run(&engine, "5 + 6");
    eprintln!("next cell after {:?}", t.elapsed());
    assert_eq!(plain(&result.unwrap()).as_deref(), Some("11"));

    // Timing: median of 10 simple cells.
    let mut times = Vec::new();
    for _ in 0..10 {
        let (a, b) = (random_u32(&seed), random_u32(&seed));
        let t = Instant::now();
        let (result, _) = run(&engine, &format!("{a} + {b}"));
        times.push(t.elapsed());
        assert_eq!(
            plain(&result.unwrap()).as_deref(),
            Some(&*(a + b).to_string())
        );
    }
    eprintln!("median of 10 simple cells: {:?}", median(times));
}
