//! The checker: for every class of bug that can be planted in CUDA C++ (`kernels/checker.cu`),
//! a launch that plants it and an assertion on the exact report (kind, kernel, block, thread,
//! CUDA source line from `.loc`, address where there is one), and the fixed kernel, which must
//! run clean. Fatal faults come back as `Err(LaunchError::Fault)`; races and inactive-lane
//! shuffles as reports of a successful launch.

mod common;

use common::*;
use ptxsim::{CheckKind, CheckReport, Dim3, LaunchError};

const SRC: &str = "checker.cu";

fn fault(r: Result<ptxsim::LaunchReport, LaunchError>, what: &str) -> CheckReport {
    match r {
        Err(LaunchError::Fault { report, .. }) => *report,
        Err(e) => panic!("{what}: expected a fault, got the error {e:?}"),
        Ok(rep) => panic!(
            "{what}: expected a fault, the launch succeeded (reports: {:?})",
            rep.reports
        ),
    }
}

#[track_caller]
fn assert_report(
    r: &CheckReport,
    kind: CheckKind,
    kernel: &str,
    block: Dim3,
    thread: Dim3,
    marker: &str,
) {
    let line = marker_line(SRC, marker);
    println!("report: {r:?}");
    assert_eq!(r.kind, kind, "kind: {r:#?}");
    assert_eq!(r.kernel, kernel, "kernel: {r:#?}");
    assert_eq!(
        (r.block, r.thread),
        (block, thread),
        "block and thread: {r:#?}"
    );
    let l = r
        .line
        .as_ref()
        .unwrap_or_else(|| panic!("no source line in {r:#?}"));
    assert_eq!(l.line, line, "CUDA line (`// BUG: {marker}`): {r:#?}");
    assert!(l.file.ends_with(SRC), "file {:?}", l.file);
    assert!(!r.message.is_empty());
}

fn thread_of(i: usize, bd: usize) -> (Dim3, Dim3) {
    (((i / bd) as u32, 0, 0), ((i % bd) as u32, 0, 0))
}

#[test]
fn oob_global_read_is_reported_and_fixed_kernel_is_clean() {
    let mut c = Ctx::new("checker", "oob_global_read");
    let bd = 128;
    let n = c.rng.usize(2, 40) * 64 + c.rng.usize(1, 63); // 4n is never a multiple of 256
    let x: Vec<f32> = c.rng.vec(n, |r| r.f32_in(-1.0, 1.0));
    let (px, po) = (c.upload(&x), c.zeros::<f32>(n));
    let args = [Arg::Ptr(px), Arg::Ptr(po), Arg::I32(n as i32)];
    let cfg = common::config(d1(blocks(n, bd)), d1(bd));
    let r = fault(c.try_launch("oobGlobalRead", &cfg, &args), "oobGlobalRead");
    let (b, t) = thread_of(n - 1, bd as usize);
    assert_report(
        &r,
        CheckKind::OutOfBounds,
        "oobGlobalRead",
        b,
        t,
        "oob-global-read",
    );
    assert_eq!(
        (r.address, r.size, r.space),
        (px + 4 * n as u64, 4, "global"),
        "{r:#?}"
    );
    let alloc = r.allocation.clone().unwrap_or_default();
    assert!(
        alloc.contains(&format!("{}", 4 * n)),
        "allocation should name the {}-byte buffer: {alloc:?}",
        4 * n
    );

    c.launch_cfg("oobGlobalReadFixed", &cfg, &args);
    let want: Vec<f32> = (0..n)
        .map(|i| x.get(i + 1).copied().unwrap_or(0.0) - x[i])
        .collect();
    assert_exact("fixed", &c.download::<f32>(po, n), &want);
}

#[test]
fn oob_global_write_is_reported_and_not_performed() {
    let mut c = Ctx::new("checker", "oob_global_write");
    let bd = 128;
    let n = c.rng.usize(2, 40) * 64 + c.rng.usize(1, 63);
    // Two buffers back to back: the faulting store must not land in the second one.
    let (pi, po, pz) = (c.zeros::<i32>(n), c.zeros::<i32>(n), c.zeros::<i32>(4096));
    let args = [Arg::Ptr(pi), Arg::Ptr(po), Arg::I32(n as i32)];
    let cfg = common::config(d1(blocks(n + 1, bd)), d1(bd));
    let r = fault(
        c.try_launch("oobGlobalWrite", &cfg, &args),
        "oobGlobalWrite",
    );
    let (b, t) = thread_of(n, bd as usize);
    assert_report(
        &r,
        CheckKind::OutOfBounds,
        "oobGlobalWrite",
        b,
        t,
        "oob-global-write",
    );
    assert_eq!(
        (r.address, r.size, r.space),
        (po + 4 * n as u64, 4, "global"),
        "{r:#?}"
    );
    assert!(
        c.download::<i32>(pz, 4096).iter().all(|&v| v == 0),
        "the faulting store reached another allocation"
    );

    let cfg = common::config(d1(blocks(n, bd)), d1(bd));
    c.launch_cfg("oobGlobalWriteFixed", &cfg, &args);
    let want: Vec<i32> = (0..n as i32).map(|i| 2 * i).collect();
    assert_exact("fixed", &c.download::<i32>(po, n), &want);
}

#[test]
fn oob_shared_is_reported_and_fixed_kernel_is_clean() {
    let mut c = Ctx::new("checker", "oob_shared");
    let bd = 128usize;
    let n = c.rng.usize(300, 2000);
    let mut bins: Vec<i32> = c.rng.vec(n, |r| r.range_i32(0, 64));
    let bad = c.rng.usize(bd, n);
    bins[bad] = c.rng.range_i32(64, 80);
    let (pb, po) = (c.upload(&bins), c.zeros::<i32>(64));
    let args = [Arg::Ptr(pb), Arg::Ptr(po), Arg::I32(n as i32)];
    let cfg = common::config(d1(blocks(n, bd as u32)), d1(bd as u32));
    let r = fault(c.try_launch("oobShared", &cfg, &args), "oobShared");
    let (b, t) = thread_of(bad, bd);
    assert_report(&r, CheckKind::OutOfBounds, "oobShared", b, t, "oob-shared");
    assert_eq!((r.size, r.space), (4, "shared"), "{r:#?}");

    let po = c.zeros::<i32>(64);
    c.launch_cfg(
        "oobSharedFixed",
        &cfg,
        &[Arg::Ptr(pb), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let mut want = vec![0i32; 64];
    for v in &bins {
        want[(*v & 63) as usize] += 1;
    }
    assert_exact("fixed histogram", &c.download::<i32>(po, 64), &want);
}

#[test]
fn misaligned_load_is_reported_and_fixed_kernel_is_clean() {
    let mut c = Ctx::new("checker", "misaligned");
    let bd = 64usize;
    let n = c.rng.usize(100, 1000);
    let bytes: Vec<u8> = c.rng.vec(1024, |r| r.next_u32() as u8);
    let mut offs: Vec<i32> = c.rng.vec(n, |r| 4 * r.range_i32(0, 255));
    let bad = c.rng.usize(0, n);
    offs[bad] += c.rng.range_i32(1, 4);
    let (pb, pof, po) = (c.upload(&bytes), c.upload(&offs), c.zeros::<i32>(n));
    let args = [
        Arg::Ptr(pb),
        Arg::Ptr(pof),
        Arg::Ptr(po),
        Arg::I32(n as i32),
    ];
    let cfg = common::config(d1(blocks(n, bd as u32)), d1(bd as u32));
    let r = fault(
        c.try_launch("misalignedLoad", &cfg, &args),
        "misalignedLoad",
    );
    let (b, t) = thread_of(bad, bd);
    assert_report(
        &r,
        CheckKind::Misaligned,
        "misalignedLoad",
        b,
        t,
        "misaligned",
    );
    assert_eq!(
        (r.address, r.size, r.space),
        (pb + offs[bad] as u64, 4, "global"),
        "{r:#?}"
    );

    c.launch_cfg("misalignedLoadFixed", &cfg, &args);
    let want: Vec<i32> = offs
        .iter()
        .map(|o| {
            let o = (*o & !3) as usize;
            i32::from_le_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]])
        })
        .collect();
    assert_exact("fixed", &c.download::<i32>(po, n), &want);
}

#[test]
fn use_after_free_is_reported() {
    let mut c = Ctx::new("checker", "use_after_free");
    let bd = 64usize;
    let who = c.rng.usize(bd, 4 * bd);
    let p = c.zeros::<i32>(4 * bd);
    let args = [Arg::Ptr(p), Arg::I32(who as i32)];
    let cfg = common::config(d1(4), d1(bd as u32));
    c.launch_cfg("touchOne", &cfg, &args);
    let mut want = vec![0i32; 4 * bd];
    want[who] = 1;
    assert_exact("live buffer", &c.download::<i32>(p, 4 * bd), &want);
    c.dev.free(p).unwrap_or_else(|e| panic!("free: {e}"));
    let r = fault(
        c.try_launch("touchOne", &cfg, &args),
        "touchOne on a freed pointer",
    );
    let (b, t) = thread_of(who, bd);
    assert_report(
        &r,
        CheckKind::UseAfterFree,
        "touchOne",
        b,
        t,
        "use-after-free",
    );
    assert_eq!(
        (r.address, r.space),
        (p + 4 * who as u64, "global"),
        "{r:#?}"
    );
}

#[test]
fn shared_race_is_reported_and_barrier_fixes_it() {
    let mut c = Ctx::new("checker", "shared_race");
    let bd = 128usize;
    let n = c.rng.usize(3 * bd, 8 * bd);
    let bad_block = c.rng.usize(0, n / bd);
    let x: Vec<i32> = c.rng.vec(n, |r| r.next_u32() as i32);
    let (px, po) = (c.upload(&x), c.zeros::<i32>(n));
    let args = [
        Arg::Ptr(px),
        Arg::Ptr(po),
        Arg::I32(n as i32),
        Arg::I32(bad_block as i32),
    ];
    let cfg = common::config(d1(blocks(n, bd as u32)), d1(bd as u32));
    let rep = match c.try_launch("sharedRace", &cfg, &args) {
        Ok(r) => r,
        Err(e) => panic!("a race is not fatal: {e:?}"),
    };
    assert!(
        !rep.reports.is_empty(),
        "the missing __syncthreads was not reported"
    );
    // Thread 40 (warp 1) reads the slot thread 3 (warp 0) writes with no barrier between:
    // reported at the read if warp 0 ran first, at the write if warp 1 did.
    let read = marker_line(SRC, "race-read");
    let write = marker_line(SRC, "race-write");
    for r in &rep.reports {
        assert_eq!(
            (r.kind, r.kernel.as_str(), r.block),
            (
                CheckKind::SharedRace,
                "sharedRace",
                (bad_block as u32, 0, 0)
            ),
            "{r:#?}"
        );
        assert_eq!(r.space, "shared", "{r:#?}");
        let line = r.line.as_ref().map(|l| l.line).unwrap_or(0);
        assert!(
            (r.thread, line) == ((40, 0, 0), read) || (r.thread, line) == ((3, 0, 0), write),
            "expected thread 40 at line {read} or thread 3 at line {write}: {r:#?}"
        );
    }
    let rep = c.launch_cfg("sharedRaceFixed", &cfg, &args);
    assert!(rep.reports.is_empty());
    let want: Vec<i32> = (0..n)
        .map(|i| {
            if i / bd == bad_block && i % bd == 40 {
                x[i - 37]
            } else {
                x[i]
            }
        })
        .collect();
    assert_exact("fixed", &c.download::<i32>(po, n), &want);
}

#[test]
fn divergent_barrier_is_reported_and_fixed_kernel_is_clean() {
    let mut c = Ctx::new("checker", "divergent_barrier");
    let x: Vec<i32> = c.rng.vec(64, |r| r.next_u32() as i32);
    let p = c.upload(&x);
    let cfg = common::config(d1(1), d1(64));
    let r = fault(
        c.try_launch("divergentBarrier", &cfg, &[Arg::Ptr(p)]),
        "divergentBarrier",
    );
    // Threads 0..15 wait at the barrier that threads 16..63 never reach; the report names the
    // first waiting thread.
    assert_report(
        &r,
        CheckKind::DivergentBarrier,
        "divergentBarrier",
        (0, 0, 0),
        (0, 0, 0),
        "divergent-barrier",
    );

    let p = c.upload(&x);
    c.launch_cfg("divergentBarrierFixed", &cfg, &[Arg::Ptr(p)]);
    let want: Vec<i32> = (0..64)
        .map(|i| if i < 16 { x[i + 16] } else { x[i] })
        .collect();
    assert_exact("fixed", &c.download::<i32>(p, 64), &want);
}

#[test]
fn shuffle_from_inactive_lane_is_reported_and_fixed_kernel_is_clean() {
    let mut c = Ctx::new("checker", "shuffle_inactive");
    let bd = 64usize;
    let n = c.rng.usize(4 * bd, 10 * bd);
    let bad_block = c.rng.usize(0, n / bd);
    let x: Vec<i32> = c.rng.vec(n, |r| r.next_u32() as i32);
    let (px, po) = (c.upload(&x), c.zeros::<i32>(n));
    let args = [
        Arg::Ptr(px),
        Arg::Ptr(po),
        Arg::I32(n as i32),
        Arg::I32(bad_block as i32),
    ];
    let cfg = common::config(d1(blocks(n, bd as u32)), d1(bd as u32));
    let rep = match c.try_launch("shuffleInactive", &cfg, &args) {
        Ok(r) => r,
        Err(e) => panic!("a shuffle from an inactive lane is not fatal: {e:?}"),
    };
    assert!(
        !rep.reports.is_empty(),
        "the shuffle from lane 20 was not reported"
    );
    for r in &rep.reports {
        assert_report(
            r,
            CheckKind::InactiveLaneShuffle,
            "shuffleInactive",
            (bad_block as u32, 0, 0),
            (5, 0, 0),
            "shuffle-inactive",
        );
    }

    let rep = c.launch_cfg("shuffleInactiveFixed", &cfg, &args);
    assert!(rep.reports.is_empty());
    // Lanes past n hold 0 in the kernel.
    let at = |j: usize| x.get(j).copied().unwrap_or(0);
    let want: Vec<i32> = (0..n)
        .map(|i| {
            let (b, t, lane) = (i / bd, i % bd, i % 32);
            if lane >= 16 {
                x[i]
            } else if b == bad_block && t == 5 {
                at(i - 5 + 10)
            } else {
                at(i - lane + (lane ^ 1))
            }
        })
        .collect();
    assert_exact("fixed", &c.download::<i32>(po, n), &want);
}

#[test]
fn oob_local_is_reported() {
    let mut c = Ctx::new("checker", "oob_local");
    let bd = 64usize;
    let n = c.rng.usize(100, 600);
    let mut idx: Vec<i32> = c.rng.vec(n, |r| r.range_i32(0, 8));
    let (pi0, po) = (c.upload(&idx), c.zeros::<i32>(n));
    let cfg = common::config(d1(blocks(n, bd as u32)), d1(bd as u32));
    c.launch_cfg(
        "oobLocal",
        &cfg,
        &[Arg::Ptr(pi0), Arg::Ptr(po), Arg::I32(n as i32)],
    );
    let want: Vec<i32> = (0..n).map(|i| idx[i] * i as i32).collect();
    assert_exact("in-bounds run", &c.download::<i32>(po, n), &want);

    let bad = c.rng.usize(0, n);
    idx[bad] = c.rng.range_i32(8, 12);
    let pi = c.upload(&idx);
    let r = fault(
        c.try_launch(
            "oobLocal",
            &cfg,
            &[Arg::Ptr(pi), Arg::Ptr(po), Arg::I32(n as i32)],
        ),
        "oobLocal",
    );
    let (b, t) = thread_of(bad, bd);
    assert_report(&r, CheckKind::OutOfBounds, "oobLocal", b, t, "oob-local");
    assert_eq!(r.space, "local", "{r:#?}");
}

#[test]
fn trap_is_reported() {
    let mut c = Ctx::new("checker", "trap");
    let bd = 64usize;
    let who = c.rng.usize(0, 3 * bd);
    let po = c.zeros::<i32>(3 * bd);
    let cfg = common::config(d1(3), d1(bd as u32));
    let r = fault(
        c.try_launch("trapOne", &cfg, &[Arg::Ptr(po), Arg::I32(who as i32)]),
        "trapOne",
    );
    let (b, t) = thread_of(who, bd);
    assert_report(&r, CheckKind::Trap, "trapOne", b, t, "trap");
    c.launch_cfg("trapOne", &cfg, &[Arg::Ptr(po), Arg::I32(-1)]);
    let want: Vec<i32> = (0..3 * bd as i32).collect();
    assert_exact("no trap", &c.download::<i32>(po, 3 * bd), &want);
}

#[test]
fn printf_before_a_fault_is_kept() {
    let mut c = Ctx::new("printf", "printf_before_a_fault_is_kept");
    let n = c.rng.usize(3, 30);
    let a: Vec<i32> = c.rng.vec(n, |r| 3 * r.range_i32(-30, 30));
    let pa = c.upload(&a);
    // A freed pointer: thread 0 prints its header first, then faults on a[0].
    c.dev.free(pa).unwrap_or_else(|e| panic!("free: {e}"));
    let cfg = common::config(d1(1), d1(32));
    match c.try_launch("printfDivergent", &cfg, &[Arg::Ptr(pa), Arg::I32(n as i32)]) {
        Err(LaunchError::Fault { report, printf }) => {
            assert_eq!(report.kind, CheckKind::UseAfterFree, "{report:#?}");
            assert_eq!(printf, format!("start n={n}\n"));
        }
        other => panic!("expected a fault: {other:?}"),
    }
}
