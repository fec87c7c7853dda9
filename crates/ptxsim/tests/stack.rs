//! The call stack of each thread (`LaunchConfig::stack_bytes`): a runaway recursion stops with
//! a `StackOverflow` fault naming the thread, the source line and the depth, quickly and in
//! bounded memory; a bounded recursion within the limit gives the right result, and the same
//! recursion with a smaller stack overflows. PTX: NVRTC's output of `stack/stack.cu` with -G.

use ptxsim::{CheckKind, Device, LaunchConfig, LaunchError, DEFAULT_STACK_BYTES};
use std::time::{Duration, Instant};

const PTX: &str = include_str!("stack/stack.ptx");

fn launch(
    dev: &Device,
    m: &ptxsim::Module,
    kernel: &str,
    threads: u32,
    stack_bytes: Option<u32>,
    params: &[&[u8]],
) -> Result<ptxsim::LaunchReport, LaunchError> {
    let mut cfg = LaunchConfig::new((1, 1, 1), (threads, 1, 1));
    cfg.engines = ptxsim::Engines::from_vars(|k| std::env::var(k).ok());
    if let Some(b) = stack_bytes {
        cfg.stack_bytes = b;
    }
    dev.launch(m, kernel, &cfg, params)
}

fn overflow<T: std::fmt::Debug>(r: Result<T, LaunchError>) -> Box<ptxsim::CheckReport> {
    match r {
        Err(LaunchError::Fault { report, .. }) => {
            assert_eq!(report.kind, CheckKind::StackOverflow, "{report:#?}");
            report
        }
        other => panic!("expected a StackOverflow fault, got {other:?}"),
    }
}

/// Factorials of `n` (even threads) and `n + 1` (odd threads) for `threads` threads.
fn factorials(
    dev: &Device,
    m: &ptxsim::Module,
    n: i32,
    threads: u32,
    stack_bytes: Option<u32>,
) -> Result<Vec<u64>, LaunchError> {
    let out = dev.alloc(threads as usize * 8).unwrap();
    launch(
        dev,
        m,
        "factorial",
        threads,
        stack_bytes,
        &[&out.to_le_bytes(), &n.to_le_bytes()],
    )?;
    let mut bytes = vec![0u8; threads as usize * 8];
    dev.read(out, 0, &mut bytes).unwrap();
    Ok(bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

fn fact(n: u64) -> u64 {
    (1..=n).product()
}

#[test]
fn runaway_recursion_is_a_stack_overflow_naming_thread_line_and_depth() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let out = dev.alloc(32 * 4).unwrap();
    let t0 = Instant::now();
    let r = launch(&dev, &m, "runaway", 32, None, &[&out.to_le_bytes()]);
    let took = t0.elapsed();
    let report = overflow(r);
    eprintln!("reported in {took:?}: {}", report.message);
    // Liveness, 10x the usual bound (unchecked recursion would run until memory ran out).
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_eq!(report.kernel, "runaway");
    assert_eq!(report.thread, (3, 0, 0));
    assert_eq!(report.block, (0, 0, 0));
    let line = report.line.as_ref().expect("a source line");
    assert!(line.file.ends_with("stack.cu"), "{line:?}");
    assert_eq!(line.line, 3, "the recursive call in f: {line:?}");
    let msg = &report.message;
    assert!(
        msg.starts_with(&format!(
            "call stack overflow: the {DEFAULT_STACK_BYTES}-byte stack of thread (3,0,0) \
             exceeded at call depth "
        )),
        "{msg}"
    );
    assert!(msg.contains("_Z1fi"), "{msg}");
    // The device works afterwards, and the threads that did not recurse are unaffected by
    // another launch.
    let v = factorials(&dev, &m, 5, 2, None).unwrap();
    assert_eq!(v, vec![120, 720]);
}

#[test]
fn runaway_recursion_with_a_large_stack_stops_quickly_in_bounded_memory() {
    // 1 MiB per thread: thread 3 recurses 32768 frames deep before it is stopped.
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let out = dev.alloc(32 * 4).unwrap();
    let t0 = Instant::now();
    let r = launch(
        &dev,
        &m,
        "runaway",
        32,
        Some(1 << 20),
        &[&out.to_le_bytes()],
    );
    let took = t0.elapsed();
    let report = overflow(r);
    eprintln!("reported in {took:?}: {}", report.message);
    // Liveness, 10x the usual bound.
    assert!(took < Duration::from_secs(50), "took {took:?}");
    assert!(
        report.message.contains("the 1048576-byte stack"),
        "{}",
        report.message
    );
}

#[test]
fn bounded_recursion_within_the_stack_gives_the_right_result() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let v = factorials(&dev, &m, 10, 64, None).unwrap();
    for (i, &x) in v.iter().enumerate() {
        assert_eq!(x, fact(10 + i as u64 % 2), "thread {i}");
    }
    // Deeper, still within the default: 20! fits in 64 bits.
    let v = factorials(&dev, &m, 19, 2, None).unwrap();
    assert_eq!(v, vec![fact(19), fact(20)]);
}

#[test]
fn the_same_recursion_overflows_a_smaller_stack() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let report = overflow(factorials(&dev, &m, 10, 64, Some(256)));
    assert!(
        report
            .message
            .starts_with("call stack overflow: the 256-byte stack of thread ("),
        "{}",
        report.message
    );
    assert_eq!(report.line.as_ref().map(|l| l.line), Some(11));
    // Just enough stack for depth 10 (even threads) but not 11 (odd threads): the first odd
    // thread overflows.
    let ok = factorials(&dev, &m, 10, 1, Some(4096)).unwrap();
    assert_eq!(ok, vec![fact(10)]);
    let per_frame = depth_limit_bytes(&dev, &m);
    let report = overflow(factorials(&dev, &m, 10, 2, Some(per_frame * 10)));
    assert_eq!(report.thread, (1, 0, 0), "{}", report.message);
    assert!(
        report.message.contains("exceeded at call depth 11 "),
        "{}",
        report.message
    );
    let v = factorials(&dev, &m, 10, 1, Some(per_frame * 10)).unwrap();
    assert_eq!(v, vec![fact(10)]);
}

/// The stack bytes one call of `fact` charges, found from the smallest stack that holds one
/// call.
fn depth_limit_bytes(dev: &Device, m: &ptxsim::Module) -> u32 {
    (1..=1024)
        .find(|&b| factorials(dev, m, 1, 1, Some(b)).is_ok())
        .expect("one call fits in 1 KiB")
}
