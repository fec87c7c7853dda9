//! Vector add end to end: parse, launch, bounds checking, parameters, configuration errors.

use super::util::*;
use crate::*;

const VECADD: &str = include_str!("ptx/vecadd.ptx");

/// `vecAdd(a, b, c, n)` launched with `cfg`.
fn vec_add(
    dev: &Device,
    m: &Module,
    cfg: &LaunchConfig,
    (a, b, c): (DevicePtr, DevicePtr, DevicePtr),
    n: i32,
) -> Result<LaunchReport, LaunchError> {
    dev.launch(
        m,
        "vecAdd",
        cfg,
        &[&p64(a), &p64(b), &p64(c), &n.to_le_bytes()],
    )
}

#[test]
fn vector_add_matches_cpu() {
    let dev = Device::new();
    let m = dev.load_module(VECADD).unwrap();
    let k = m.kernel("vecAdd").unwrap();
    assert_eq!(k.params.len(), 4);
    assert_eq!(k.params[3].size, 4);
    assert_eq!(k.params[3].offset, 24);
    assert_eq!(m.target(), ("sm_80", "8.8"));
    let mut rng = Rng(seed());
    let n = 10_000 + rng.below(1000) as usize;
    let a: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let b: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let (pa, pb) = (upload_f32(&dev, &a), upload_f32(&dev, &b));
    let pc = dev.alloc(n * 4).unwrap();
    let cfg = config(((n as u32).div_ceil(256), 1, 1), (256, 1, 1));
    let r = vec_add(&dev, &m, &cfg, (pa, pb, pc), n as i32).unwrap();
    assert!(r.reports.is_empty(), "{:?}", r.reports);
    assert!(r.warp_instructions > 0);
    let c = download_f32(&dev, pc, n);
    for i in 0..n {
        assert_eq!(c[i].to_bits(), (a[i] + b[i]).to_bits(), "element {i}");
    }
}

/// `LaunchConfig::threads` caps the workers (a Jupyter kernel's CPU share); a launch of one
/// warp cannot use more than one; 0 means the cores this process may use.
#[test]
fn workers_respect_the_cap_and_the_launch_size() {
    let dev = Device::new();
    let m = dev.load_module(VECADD).unwrap();
    let n = 1 << 16;
    let (pa, pb, pc) = (
        dev.alloc(n * 4).unwrap(),
        dev.alloc(n * 4).unwrap(),
        dev.alloc(n * 4).unwrap(),
    );
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let many = ((n as u32).div_ceil(256), 1, 1);
    for (threads, grid, block, most) in [
        (1, many, 256, 1),
        (2, many, 256, 2),
        (0, many, 256, cores),
        (4, (1, 1, 1), 32, 1),
    ] {
        let mut cfg = config(grid, (block, 1, 1));
        cfg.threads = threads;
        let r = vec_add(&dev, &m, &cfg, (pa, pb, pc), n as i32).unwrap();
        assert!(
            (1..=most).contains(&r.workers),
            "threads {threads}, grid {grid:?}: {} workers, at most {most}",
            r.workers
        );
    }
}

#[test]
fn vector_add_out_of_bounds_is_reported_with_line_and_allocation() {
    let dev = Device::new();
    let m = dev.load_module(VECADD).unwrap();
    let n = 1000usize;
    let pa = dev.alloc(n * 4).unwrap();
    let pb = dev.alloc(n * 4).unwrap();
    let pc = dev.alloc((n - 1) * 4).unwrap(); // one element short
    let cfg = config((4, 1, 1), (256, 1, 1));
    let e = vec_add(&dev, &m, &cfg, (pa, pb, pc), n as i32).unwrap_err();
    let LaunchError::Fault { report, .. } = e else {
        panic!("{e:?}")
    };
    assert_eq!(report.kind, CheckKind::OutOfBounds);
    assert_eq!(report.kernel, "vecAdd");
    assert_eq!(report.block, (3, 0, 0));
    assert_eq!(report.thread, (999 - 768, 0, 0));
    assert_eq!(report.address, pc + 999 * 4);
    assert_eq!(report.space, "global");
    assert_eq!(
        report.allocation.as_deref(),
        Some(format!("4 bytes past the end of a 3996-byte global allocation at 0x{pc:x}").as_str())
    );
    let line = report.line.unwrap();
    assert_eq!((line.file.as_str(), line.line), ("/src/vecadd.cu", 1));
    // The faulting store was not performed, earlier ones were.
    let c = download_u32(&dev, pc, n - 1);
    assert_eq!(c.len(), 999);
}

#[test]
fn launch_configuration_and_parameter_errors() {
    let dev = Device::new();
    let m = dev.load_module(VECADD).unwrap();
    let p = dev.alloc(16).unwrap();
    let args: [&[u8]; 4] = [&p64(p), &p64(p), &p64(p), &1i32.to_le_bytes()];
    let e = dev.launch(&m, "nope", &config((1, 1, 1), (1, 1, 1)), &args);
    assert!(matches!(e, Err(LaunchError::UnknownKernel(_))));
    let e = dev.launch(&m, "vecAdd", &config((1, 1, 1), (1025, 1, 1)), &args);
    assert!(matches!(e, Err(LaunchError::BadConfig(_))));
    let e = dev.launch(&m, "vecAdd", &config((0, 1, 1), (32, 1, 1)), &args);
    assert!(matches!(e, Err(LaunchError::BadConfig(_))));
    let e = dev.launch(&m, "vecAdd", &config((1, 1, 1), (32, 1, 1)), &args[..3]);
    assert!(matches!(e, Err(LaunchError::BadParams(_))));
    let bad: [&[u8]; 4] = [&p64(p), &p64(p), &p64(p), &1i64.to_le_bytes()];
    let e = dev.launch(&m, "vecAdd", &config((1, 1, 1), (32, 1, 1)), &bad);
    assert!(matches!(e, Err(LaunchError::BadParams(_))));
    let other = Device::new();
    let e = other.launch(&m, "vecAdd", &config((1, 1, 1), (1, 1, 1)), &args);
    assert!(matches!(e, Err(LaunchError::BadConfig(_))));
}

#[test]
fn device_memory_api() {
    let dev = Device::new();
    let a = dev.alloc(100).unwrap();
    let b = dev.alloc(100).unwrap();
    assert_ne!(a, 0);
    assert_eq!(a % 256, 0);
    assert_eq!(dev.allocation_size(a), Some(100));
    dev.write(a, 10, &[1, 2, 3]).unwrap();
    dev.copy(b, a, 100).unwrap();
    let mut out = [0u8; 4];
    dev.read(b, 9, &mut out).unwrap();
    assert_eq!(out, [0, 1, 2, 3]);
    assert!(matches!(
        dev.write(a, 98, &[0; 3]),
        Err(MemoryError::OutOfRange { .. })
    ));
    assert!(matches!(
        dev.read(a + 4, 0, &mut out),
        Err(MemoryError::InvalidPointer { .. })
    ));
    dev.free(a).unwrap();
    assert!(matches!(
        dev.free(a),
        Err(MemoryError::InvalidPointer { .. })
    ));
    assert_eq!(dev.allocation_size(a), None);
    assert!(matches!(
        dev.alloc(1 << 50),
        Err(MemoryError::OutOfMemory { .. })
    ));
}

/// A launch with fewer blocks than the workers can share evenly runs each block's warps on
/// several workers when nothing lets them see each other (`Program::warps_independent`): the
/// same results and the same reports (the first shuffle of an inactive lane, the fault of the
/// lowest thread) as whole blocks on one worker.
#[test]
fn blocks_split_across_workers_give_the_same_results_and_reports() {
    let dev = Device::new();
    let m = dev.load_module(VECADD).unwrap();
    assert!(m.program("vecAdd").unwrap().warps_independent());
    let checks = dev.load_module(include_str!("ptx/checks.ptx")).unwrap();
    for (k, independent) in [
        ("bad_shuffle", true),
        ("race", false),
        ("div_barrier", false),
    ] {
        assert_eq!(
            checks.program(k).unwrap().warps_independent(),
            independent,
            "{k}"
        );
    }
    assert!(crate::pool::parts_per_block(true, 32, 1, 2) > 1);
    assert_eq!(crate::pool::parts_per_block(false, 32, 1, 2), 1);
    assert_eq!(crate::pool::parts_per_block(true, 32, 1, 1), 1);
    assert_eq!(crate::pool::parts_per_block(true, 8, 1000, 2), 1);

    let mut rng = Rng(seed());
    let n = 900 + rng.below(100) as usize;
    let a: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let b: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let (pa, pb) = (upload_f32(&dev, &a), upload_f32(&dev, &b));
    for threads in [1, 2, 3] {
        let pc = dev.alloc(n * 4).unwrap();
        let mut cfg = config((1, 1, 1), (1024, 1, 1));
        cfg.threads = threads;
        let r = vec_add(&dev, &m, &cfg, (pa, pb, pc), n as i32).unwrap();
        assert!(r.reports.is_empty(), "{:?}", r.reports);
        let c = download_f32(&dev, pc, n);
        for i in 0..n {
            assert_eq!(
                c[i].to_bits(),
                (a[i] + b[i]).to_bits(),
                "element {i}, {threads} workers"
            );
        }
        // Told there are 1024 elements: thread n is the first to read past the end.
        match vec_add(&dev, &m, &cfg, (pa, pb, pc), 1024) {
            Err(LaunchError::Fault { report, .. }) => {
                assert_eq!(report.kind, CheckKind::OutOfBounds);
                assert_eq!(report.thread, (n as u32, 0, 0), "{threads} workers");
            }
            other => panic!("expected a fault, got {other:?}"),
        }
    }
    let out = dev.alloc(256 * 4).unwrap();
    let reports: Vec<Vec<CheckReport>> = [1, 4]
        .into_iter()
        .map(|threads| {
            let mut cfg = config((1, 1, 1), (256, 1, 1));
            cfg.threads = threads;
            dev.launch(&checks, "bad_shuffle", &cfg, &[&p64(out)])
                .unwrap()
                .reports
        })
        .collect();
    assert_eq!(reports[0].len(), 1, "{:?}", reports[0]);
    assert_eq!(reports[0], reports[1]);
}

/// Launches with many more blocks than workers take them in claims of several
/// (`pool::units_per_claim`): every block still runs once, the instruction count is the same on
/// any number of workers, and a fault comes from the lowest block that faults.
#[test]
fn blocks_taken_in_claims_run_once_each() {
    assert_eq!(crate::pool::units_per_claim(512, 2), 1);
    assert_eq!(crate::pool::units_per_claim(4096, 2), 4);
    assert_eq!(crate::pool::units_per_claim(4096, 3), 2);
    assert_eq!(crate::pool::units_per_claim(1 << 30, 2), 64);
    let dev = Device::new();
    let m = dev.load_module(VECADD).unwrap();
    let mut rng = Rng(seed());
    let blocks = 4096 - rng.below(64) as usize;
    let n = blocks * 32 - rng.below(32) as usize;
    let a: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let b: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let (pa, pb) = (upload_f32(&dev, &a), upload_f32(&dev, &b));
    let mut counts = Vec::new();
    for (threads, jit) in [1, 2, 3]
        .into_iter()
        .flat_map(|t| [(t, JitMode::Off), (t, JitMode::Always)])
    {
        let pc = dev.alloc(n * 4).unwrap();
        let mut cfg = config((blocks as u32, 1, 1), (32, 1, 1));
        cfg.threads = threads;
        cfg.engines.jit = jit;
        let r = vec_add(&dev, &m, &cfg, (pa, pb, pc), n as i32).unwrap();
        // Interpreted, the count is exact; compiled regions charge a warp the most any lane
        // ran, which depends on where fuel slices end, so on how blocks fell to workers.
        if jit == JitMode::Off {
            counts.push(r.warp_instructions);
        }
        let c = download_f32(&dev, pc, n);
        for i in 0..n {
            assert_eq!(
                c[i].to_bits(),
                (a[i] + b[i]).to_bits(),
                "element {i}, {threads} workers, {jit:?}"
            );
        }
        // Told there are `blocks * 32` elements: thread n is the first to read past the end.
        match vec_add(&dev, &m, &cfg, (pa, pb, pc), (blocks * 32) as i32) {
            Err(LaunchError::Fault { report, .. }) if n < blocks * 32 => {
                assert_eq!(report.kind, CheckKind::OutOfBounds);
                let (t, blk) = (n as u32 % 32, n as u32 / 32);
                assert_eq!((report.block, report.thread), ((blk, 0, 0), (t, 0, 0)));
            }
            Ok(_) if n == blocks * 32 => {}
            other => panic!("{threads} workers, {jit:?}: {other:?}"),
        }
    }
    assert!(counts.iter().all(|&c| c == counts[0]), "{counts:?}");
    assert!(counts[0] >= blocks as u64 * 5, "{counts:?}");
}

/// Reads a register and a local word before writing them (out[3t], out[3t+1]), then writes
/// the local word; stores `%nctaid.x * 1000 + %ntid.x` (out[3t+2]).
const STALE: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry stale(.param .u64 pout) {
  .local .align 4 .b8 depot[4];
  .reg .u64 %rd<6>;
  .reg .u32 %r<10>;
  mov.u64 %rd4, depot;
  ld.param.u64 %rd1, [pout];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %tid.x;
  mov.u32 %r5, %ctaid.x;
  mov.u32 %r6, %ntid.x;
  mad.lo.u32 %r1, %r5, %r6, %r1;
  mul.wide.u32 %rd2, %r1, 12;
  add.s64 %rd3, %rd1, %rd2;
  add.u32 %r2, %r2, 1;
  st.global.u32 [%rd3], %r2;
  ld.local.u32 %r3, [%rd4];
  st.global.u32 [%rd3+4], %r3;
  add.u32 %r7, %r1, 7;
  st.local.u32 [%rd4], %r7;
  mov.u32 %r8, %nctaid.x;
  mad.lo.u32 %r9, %r8, 1000, %r6;
  st.global.u32 [%rd3+8], %r9;
  ret;
}
"#;

#[test]
fn a_block_never_sees_the_registers_or_local_memory_of_the_last_one() {
    // One worker runs every block of a launch in the same register files, and launches on
    // one thread reuse them when kernel and shape repeat (`exec::SPARE_REGS`): what a kernel
    // reads before writing must look fresh in every block, and a new shape must get its own
    // special registers.
    let dev = Device::new();
    let m = dev.load_module(STALE).unwrap();
    let mut rng = Rng(seed());
    let block = 32 + rng.below(64) as u32;
    for (grid, mode) in [
        (2, JitMode::Off),
        (2, JitMode::Off),
        (3, JitMode::Always),
        (3, JitMode::Always),
        (3, JitMode::Off),
    ] {
        let n = (grid * block) as usize;
        let po = dev.alloc(n * 12).unwrap();
        let mut cfg = config((grid, 1, 1), (block, 1, 1));
        cfg.threads = 1;
        cfg.engines.jit = mode;
        dev.launch(&m, "stale", &cfg, &[&p64(po)]).unwrap();
        let out = download_u32(&dev, po, n * 3);
        for t in 0..n {
            assert_eq!(
                &out[3 * t..3 * t + 3],
                &[1, 0, grid * 1000 + block],
                "grid {grid}, thread {t}"
            );
        }
        dev.free(po).unwrap();
    }
}

/// Registers written by interpreted instructions (a shared load, an atomic, a shuffle and its
/// predicate) on every path, and one written only under a guard or on one side of a branch.
const WRITTEN: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry written(.param .u64 pout) {
  .shared .align 4 .b8 sh[128];
  .reg .u64 %rd<6>;
  .reg .u32 %r<12>;
  .reg .pred %p<4>;
  mov.u32 %r1, %tid.x;
  mov.u64 %rd1, sh;
  ld.shared.u32 %r2, [%rd1];
  atom.shared.add.u32 %r3, [%rd1], 1;
  shfl.sync.down.b32 %r4|%p1, %r1, 1, 31, -1;
  setp.eq.u32 %p2, %r1, 0;
  @%p2 ld.shared.u32 %r5, [%rd1];
  @%p2 bra SKIP;
  ld.shared.u32 %r6, [%rd1];
SKIP:
  add.u32 %r7, %r2, %r3;
  add.u32 %r7, %r7, %r4;
  add.u32 %r7, %r7, %r5;
  add.u32 %r7, %r7, %r6;
  selp.u32 %r8, 1, 0, %p1;
  add.u32 %r7, %r7, %r8;
  ld.param.u64 %rd2, [pout];
  st.global.u32 [%rd2], %r7;
  ret;
}
"#;

#[test]
fn registers_read_before_every_write_are_the_ones_cleared() {
    let dev = Device::new();
    let m = dev.load_module(WRITTEN).unwrap();
    let p = m.program("written").unwrap();
    // Only %r5 (written under a guard) and %r6 (written when the branch is not taken) may be
    // read before they are written; the loaded, atomic and shuffled registers and the
    // shuffle's predicate are written first on every path.
    assert_eq!(p.entry_live.len(), 2, "{:?}", p.entry_live);
    let fixed: Vec<ir::Slot> = p
        .consts
        .iter()
        .map(|c| c.0)
        .chain(p.sregs.iter().map(|r| r.0))
        .collect();
    assert!(p.entry_live.iter().all(|s| !fixed.contains(s)));
}
