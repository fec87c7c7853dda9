//! Stopping runaway CUDA kernels: the cancel flag (the Jupyter interrupt button) stops an
//! infinite loop within 1 s of being raised, from another thread; the instruction budget stops
//! it too; and the device keeps working afterwards.

mod common;

use common::*;
use ptxsim::{CheckKind, LaunchError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn expect_fault(r: Result<ptxsim::LaunchReport, LaunchError>, kind: CheckKind) {
    match r {
        Err(LaunchError::Fault { report, .. }) => assert_eq!(report.kind, kind, "{report:#?}"),
        other => panic!("expected a {kind:?} fault, got {other:?}"),
    }
}

#[test]
fn cancel_stops_an_infinite_loop_within_one_second() {
    let c = Ctx::new("checker", "cancel_stops_an_infinite_loop_within_one_second");
    let (flag, out) = (c.zeros::<i32>(1), c.zeros::<i32>(64 * 256));
    let cancel = Arc::new(AtomicBool::new(false));
    let mut cfg = common::config((64, 1, 1), (256, 1, 1));
    cfg.cancel = Some(cancel.clone());
    std::thread::scope(|s| {
        let setter = s.spawn(|| {
            std::thread::sleep(Duration::from_millis(300));
            cancel.store(true, Ordering::SeqCst);
            Instant::now()
        });
        let r = c.try_launch("spinForever", &cfg, &[Arg::Ptr(flag), Arg::Ptr(out)]);
        let returned = Instant::now();
        let raised = setter
            .join()
            .unwrap_or_else(|_| panic!("setter thread panicked"));
        expect_fault(r, CheckKind::Cancelled);
        let elapsed = returned.saturating_duration_since(raised);
        assert!(
            elapsed < Duration::from_secs(1),
            "stopped {elapsed:?} after the cancel flag was raised"
        );
    });

    // The device still works: the same kernel with the flag already set finishes.
    let flag1 = c.upload(&[1i32]);
    let cfg = common::config((2, 1, 1), (64, 1, 1));
    c.launch_cfg("spinForever", &cfg, &[Arg::Ptr(flag1), Arg::Ptr(out)]);
    assert!(c.download::<i32>(out, 128).iter().all(|&k| k == 0));
}

#[test]
fn instruction_budget_stops_an_infinite_loop() {
    let c = Ctx::new("checker", "instruction_budget_stops_an_infinite_loop");
    let (flag, out) = (c.zeros::<i32>(1), c.zeros::<i32>(8 * 128));
    let mut cfg = common::config((8, 1, 1), (128, 1, 1));
    cfg.instruction_budget = Some(2_000_000);
    let t0 = Instant::now();
    expect_fault(
        c.try_launch("spinForever", &cfg, &[Arg::Ptr(flag), Arg::Ptr(out)]),
        CheckKind::BudgetExceeded,
    );
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "2M warp-instructions took {:?}",
        t0.elapsed()
    );

    // A budget large enough for a finite launch does not trigger, and is counted.
    let flag1 = c.upload(&[1i32]);
    let r = c.launch_cfg("spinForever", &cfg, &[Arg::Ptr(flag1), Arg::Ptr(out)]);
    assert!(
        r.warp_instructions > 0 && r.warp_instructions < 2_000_000,
        "{}",
        r.warp_instructions
    );
}
