//! The region compiler against the interpreter: same results, same check reports, cancel and
//! budget inside compiled loops, and the tiering rule. (`tests/differential.rs` runs every
//! fixture kernel with compiled regions from the first launch too.)

use super::util::*;
use crate::*;

const CONTROL: &str = include_str!("ptx/control.ptx");
const CHECKS: &str = include_str!("ptx/checks.ptx");

/// A loop of global loads that only ends when `flag[0]` becomes non-zero: one compiled region.
const SPIN: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry spin_jit(.param .u64 p) {
  .reg .u64 %rd<3>;
  .reg .u32 %r<4>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, 0;
L1:
  ld.volatile.global.u32 %r2, [%rd2];
  add.u32 %r1, %r1, 1;
  xor.b32 %r3, %r1, %r2;
  setp.eq.u32 %p1, %r2, 0;
  @%p1 bra L1;
  st.global.u32 [%rd2+4], %r3;
  ret;
}
"#;

pub(super) fn cfg(grid: u32, block: u32, jit: JitMode) -> LaunchConfig {
    let mut c = config((grid, 1, 1), (block, 1, 1));
    c.engines.jit = jit;
    c
}

#[test]
fn compiled_divergent_loops_match_the_interpreter() {
    let dev = Device::new();
    let m = dev.load_module(CONTROL).unwrap();
    let mut rng = Rng(seed());
    let n = 3000 + rng.below(500) as usize;
    let v: Vec<i32> = (0..n).map(|_| rng.next() as i32).collect();
    let pi = upload_i32(&dev, &v);
    let mut outs = Vec::new();
    for mode in [JitMode::Off, JitMode::Always] {
        let po = dev.alloc(n * 4).unwrap();
        let r = dev
            .launch(
                &m,
                "divergent",
                &cfg((n as u32).div_ceil(96), 96, mode),
                &[&p64(pi), &p64(po), &i32b(n as i32)],
            )
            .unwrap();
        assert!(r.reports.is_empty(), "{:?}", r.reports);
        assert_eq!(r.jit, mode == JitMode::Always);
        outs.push((download_i32(&dev, po, n), r.warp_instructions));
    }
    assert_eq!(outs[0].0, outs[1].0);
    // Compiled lanes are charged the most any lane ran, so the count can only be close.
    let (a, b) = (outs[0].1 as f64, outs[1].1 as f64);
    assert!(b > 0.5 * a && b < 1.5 * a, "interpreted {a}, compiled {b}");
}

#[test]
fn faults_in_compiled_code_are_reported_by_the_interpreter() {
    let dev = Device::new();
    let m = dev.load_module(CHECKS).unwrap();
    let n = 300usize;
    let a = dev.alloc(n * 4).unwrap();
    let out = dev.alloc(n * 4).unwrap();
    let base = dev.alloc(256).unwrap();
    let freed = dev.alloc(1024).unwrap();
    dev.free(freed).unwrap();
    let cases: Vec<(&str, u32, Vec<Vec<u8>>)> = vec![
        (
            "oob_read",
            3,
            vec![p64(a).to_vec(), p64(out).to_vec(), i32b(n as i32).to_vec()],
        ),
        ("misaligned", 1, vec![p64(base).to_vec(), p64(out).to_vec()]),
        ("uaf", 1, vec![p64(freed).to_vec()]),
    ];
    for (k, grid, args) in cases {
        let args: Vec<&[u8]> = args.iter().map(|v| v.as_slice()).collect();
        let block = if k == "oob_read" { 128 } else { 32 };
        let reports: Vec<CheckReport> = [JitMode::Off, JitMode::Always]
            .into_iter()
            .map(
                |mode| match dev.launch(&m, k, &cfg(grid, block, mode), &args) {
                    Err(LaunchError::Fault { report, .. }) => *report,
                    other => panic!("{k}: expected a fault, got {other:?}"),
                },
            )
            .collect();
        assert_eq!(reports[0], reports[1], "{k}");
    }
}

#[test]
fn cancel_and_budget_stop_a_compiled_loop() {
    let dev = Device::new();
    let m = dev.load_module(SPIN).unwrap();
    let flag = dev.alloc(8).unwrap();
    let (report, secs) = launch_cancelled_after(
        &dev,
        &m,
        "spin_jit",
        cfg(2, 64, JitMode::Always),
        &[&p64(flag)],
        std::time::Duration::from_millis(200),
    );
    assert_eq!(report.kind, CheckKind::Cancelled);
    // Liveness (a cancel that does not work never stops the spin), 10x the usual bound.
    assert!(secs < 10.0, "stopped {secs} s after the cancel");

    let mut c = cfg(1, 32, JitMode::Always);
    c.instruction_budget = Some(20_000);
    let e = dev.launch(&m, "spin_jit", &c, &[&p64(flag)]).unwrap_err();
    let LaunchError::Fault { report, .. } = e else {
        panic!("{e:?}")
    };
    assert_eq!(report.kind, CheckKind::BudgetExceeded);

    // With the flag set, each lane stores 1 ^ flag after one iteration.
    dev.write(flag, 0, &7u32.to_le_bytes()).unwrap();
    let r = dev.launch(&m, "spin_jit", &c, &[&p64(flag)]).unwrap();
    assert!(r.jit);
    assert_eq!(download_u32(&dev, flag, 2), vec![7, 1 ^ 7]);
}

#[test]
fn small_launches_are_compiled_once_the_kernel_has_run_enough() {
    let dev = Device::new();
    let m = dev.load_module(CONTROL).unwrap();
    let n = 96usize;
    let v: Vec<i32> = (0..n as i32).map(|i| i * 37 + 15).collect();
    let (pi, po) = (upload_i32(&dev, &v), dev.alloc(n * 4).unwrap());
    let args = [p64(pi).to_vec(), p64(po).to_vec(), i32b(n as i32).to_vec()];
    let args: Vec<&[u8]> = args.iter().map(|v| v.as_slice()).collect();
    let mut first_compiled = None;
    for launch in 0..2000 {
        let r = dev
            .launch(&m, "divergent", &cfg(1, 96, JitMode::Auto), &args)
            .unwrap();
        if r.jit {
            first_compiled = Some(launch);
            break;
        }
    }
    let first = first_compiled.expect("never compiled");
    assert!(first > 0, "a 96-thread launch was compiled at once");
    let out = download_i32(&dev, po, n);
    let want: Vec<i32> = v
        .iter()
        .map(|&x| super::control::divergent_ref(x))
        .collect();
    assert_eq!(out, want);
    // Off never compiles.
    let r = dev
        .launch(&m, "divergent", &cfg(1, 96, JitMode::Off), &args)
        .unwrap();
    assert!(!r.jit);
}

/// A 64-bit input for `jit_ops.ptx`: raw bits, small integers, ordinary f32 and f64 values, and
/// the special values (NaN payloads, infinities, zeros of both signs, subnormals, extremes).
pub(super) fn operand(rng: &mut Rng) -> u64 {
    const SPECIAL32: [u32; 10] = [
        0x7FC0_0000,
        0xFFC0_1234,
        0x7F80_0000,
        0xFF80_0000,
        0x8000_0000,
        0x0000_0001,
        0x807F_FFFF,
        0x4F00_0000,
        0xCF00_0001,
        0xFFFF_FFFF,
    ];
    const SPECIAL64: [u64; 6] = [
        0x7FF8_0000_0000_0001,
        0xFFF0_0000_0000_0000,
        0x8000_0000_0000_0000,
        0x0000_0000_0000_0001,
        0x43E0_0000_0000_0000,
        0xC3F0_0000_0000_0001,
    ];
    match rng.below(6) {
        0 => rng.next(),
        1 => (rng.below(201) as i64 - 100) as u64,
        2 => {
            let lo = ((rng.f32() * 1000.0).to_bits()) as u64;
            let hi = ((rng.f32() * 3.0e9).to_bits()) as u64;
            hi << 32 | lo
        }
        3 => (rng.f32() as f64 * 1.0e12).to_bits(),
        4 => {
            let s = SPECIAL32[rng.below(10) as usize] as u64;
            (rng.next() & 0xFFFF_FFFF_0000_0000) | s
        }
        _ => SPECIAL64[rng.below(6) as usize],
    }
}

/// Inputs for `jit_ops.ptx`'s `ops`: 4 operands for each of 1000-1299 threads, on the device.
fn random_operands(dev: &Device, rng: &mut Rng) -> (usize, Vec<u8>, DevicePtr) {
    let n = 1000 + rng.below(300) as usize;
    let input: Vec<u8> = (0..4 * n)
        .flat_map(|_| operand(rng).to_le_bytes())
        .collect();
    let pin = dev.alloc(input.len()).unwrap();
    dev.write(pin, 0, &input).unwrap();
    (n, input, pin)
}

#[test]
fn every_compiled_operation_matches_the_interpreter() {
    let dev = Device::new();
    let m = dev.load_module(include_str!("ptx/jit_ops.ptx")).unwrap();
    let mut rng = Rng(seed());
    let (n, input, pin) = random_operands(&dev, &mut rng);
    let mut outs = Vec::new();
    for mode in [JitMode::Off, JitMode::Always] {
        let pout = dev.alloc(1024 * n).unwrap();
        let r = dev
            .launch(
                &m,
                "ops",
                &cfg((n as u32).div_ceil(128), 128, mode),
                &[&p64(pin), &p64(pout), &(n as u32).to_le_bytes()],
            )
            .unwrap();
        assert_eq!(r.jit, mode == JitMode::Always);
        let mut out = vec![0u8; 1024 * n];
        dev.read(pout, 0, &mut out).unwrap();
        outs.push(out);
    }
    for t in 0..n {
        for slot in 0..128 {
            let at = t * 1024 + slot * 8;
            let (a, b) = (&outs[0][at..at + 8], &outs[1][at..at + 8]);
            assert_eq!(
                a,
                b,
                "thread {t}, output byte offset {}: interpreted {:02x?}, compiled {:02x?}, inputs {:02x?}",
                slot * 8,
                a,
                b,
                &input[t * 32..t * 32 + 32]
            );
        }
    }
}

/// `HostBuild::runs`: under each cap, the best build this CPU has that the cap allows.
#[test]
fn a_cap_runs_the_best_build_it_allows() {
    let builds = HostBuild::available();
    for cap in [HostBuild::Baseline, HostBuild::Avx2, HostBuild::Avx512] {
        let best = builds.iter().copied().filter(|&b| b <= cap).max();
        assert_eq!(Some(cap.runs()), best, "cap {cap:?}, builds {builds:?}");
    }
}

/// The interpreter loop is compiled for baseline x86-64, AVX2 and AVX-512 (`exec::cpu`): each
/// build this CPU has computes the same bits for every operation of `jit_ops.ptx` and the same
/// results and instruction counts for divergent code as the baseline build.
#[test]
fn every_build_of_the_interpreter_computes_the_same_bits() {
    let builds = HostBuild::available();
    assert_eq!(builds.first(), Some(&HostBuild::Baseline));
    eprintln!("interpreter builds this CPU runs: {builds:?}");
    let dev = Device::new();
    let ops = dev.load_module(include_str!("ptx/jit_ops.ptx")).unwrap();
    let control = dev.load_module(CONTROL).unwrap();
    let mut rng = Rng(seed());
    let (n, input, pin) = random_operands(&dev, &mut rng);
    let v: Vec<i32> = (0..n).map(|_| rng.next() as i32).collect();
    let pv = upload_i32(&dev, &v);
    let mut outs = Vec::new();
    for &host in &builds {
        let mut c = cfg((n as u32).div_ceil(128), 128, JitMode::Off);
        c.engines.host = host;
        let pout = dev.alloc(1024 * n).unwrap();
        dev.launch(
            &ops,
            "ops",
            &c,
            &[&p64(pin), &p64(pout), &(n as u32).to_le_bytes()],
        )
        .unwrap();
        let mut out = vec![0u8; 1024 * n];
        dev.read(pout, 0, &mut out).unwrap();
        let mut c = cfg((n as u32).div_ceil(96), 96, JitMode::Off);
        c.engines.host = host;
        let po = dev.alloc(n * 4).unwrap();
        let r = dev
            .launch(
                &control,
                "divergent",
                &c,
                &[&p64(pv), &p64(po), &i32b(n as i32)],
            )
            .unwrap();
        outs.push((out, download_i32(&dev, po, n), r.warp_instructions));
    }
    for (k, o) in outs.iter().enumerate().skip(1) {
        let b = &outs[0];
        if let Some(at) = (0..o.0.len()).find(|&at| o.0[at] != b.0[at]) {
            let (t, slot) = (at / 1024, at % 1024 / 8);
            panic!(
                "{:?}: thread {t}, output slot {slot}: {:02x?}, baseline {:02x?}, inputs {:02x?}",
                builds[k],
                &o.0[t * 1024 + slot * 8..][..8],
                &b.0[t * 1024 + slot * 8..][..8],
                &input[t * 32..t * 32 + 32]
            );
        }
        assert_eq!(o.1, b.1, "{:?}: divergent results", builds[k]);
        assert_eq!(o.2, b.2, "{:?}: warp-instructions", builds[k]);
    }
}

/// A guarded generic load of shared memory inside a compiled region: compiled code leaves that
/// access to the interpreter, which must find its address register written back although
/// nothing reads it afterwards.
const GUARDED_GENERIC: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry gshared(.param .u64 pout) {
  .reg .pred %p<3>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<10>;
  .shared .align 4 .b8 buf[512];
  ld.param.u64 %rd1, [pout];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  mov.u64 %rd4, buf;
  add.s64 %rd5, %rd4, %rd3;
  mul.lo.s32 %r2, %r1, 3;
  st.shared.u32 [%rd5], %r2;
  bar.sync 0;
  cvta.shared.u64 %rd6, %rd4;
  xor.b32 %r3, %r1, 1;
  mul.wide.u32 %rd7, %r3, 4;
  add.s64 %rd8, %rd6, %rd7;
  setp.lt.u32 %p1, %r1, 1000;
  mov.u32 %r4, 7;
  @%p1 ld.u32 %r4, [%rd8];
  add.s64 %rd9, %rd2, %rd3;
  st.global.u32 [%rd9], %r4;
  ret;
}
"#;

#[test]
fn accesses_left_to_the_interpreter_see_the_compiled_registers() {
    let dev = Device::new();
    let m = dev.load_module(GUARDED_GENERIC).unwrap();
    for mode in [JitMode::Off, JitMode::Always] {
        let out = dev.alloc(128 * 4).unwrap();
        let r = dev
            .launch(&m, "gshared", &cfg(1, 128, mode), &[&p64(out)])
            .unwrap();
        assert_eq!(r.jit, mode == JitMode::Always);
        let want: Vec<u32> = (0..128u32).map(|t| 3 * (t ^ 1)).collect();
        assert_eq!(download_u32(&dev, out, 128), want, "{mode:?}");
    }
}

/// A kernel with `k` global loads (distinct instructions, so distinct access caches) whose
/// input pointer and count are parameters past the first `pad + 8` bytes.
fn many_loads_ptx(k: usize, pad: usize) -> String {
    let mut body = String::new();
    for j in 0..k {
        body.push_str(&format!(
            "  ld.global.u32 %r3, [%rd5+{}];\n  mad.lo.u32 %r4, %r3, {}, %r4;\n",
            4 * j,
            j + 1
        ));
    }
    format!(
        r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry many_loads(.param .u64 p_out, .param .align 8 .b8 p_pad[{pad}], .param .u64 p_in, .param .u32 p_n) {{
  .reg .u64 %rd<8>;
  .reg .u32 %r<6>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [p_out];
  ld.param.u64 %rd2, [p_in];
  ld.param.u32 %r5, [p_n];
{INDEX_GUARD}  cvta.to.global.u64 %rd3, %rd2;
  mul.wide.u32 %rd4, %r1, {stride};
  add.u64 %rd5, %rd3, %rd4;
  mov.u32 %r4, 0;
{body}  cvta.to.global.u64 %rd6, %rd1;
  mul.wide.u32 %rd4, %r1, 4;
  add.u64 %rd7, %rd6, %rd4;
  st.global.u32 [%rd7], %r4;
DONE:
  ret;
}}
"#,
        stride = 4 * k
    )
}

#[test]
fn kernels_with_many_accesses_and_far_parameters_compile_correctly() {
    // 80 loads: more access caches than the context holds inline (64); parameters at offsets
    // past the bytes it copies (1,024), so both fall back to the pointers.
    let (k, pad) = (80usize, 1088usize);
    let dev = Device::new();
    let m = dev.load_module(&many_loads_ptx(k, pad)).unwrap();
    let mut rng = Rng(seed());
    let n = 200 + rng.below(100) as usize;
    let v: Vec<u32> = (0..n * k).map(|_| rng.next() as u32).collect();
    let want: Vec<u32> = (0..n)
        .map(|t| {
            (0..k).fold(0u32, |acc, j| {
                acc.wrapping_add(v[t * k + j].wrapping_mul(j as u32 + 1))
            })
        })
        .collect();
    let pi = upload_u32(&dev, &v);
    let pad_bytes = vec![0xA5u8; pad];
    for mode in [JitMode::Off, JitMode::Always] {
        let po = dev.alloc(n * 4).unwrap();
        let r = dev
            .launch(
                &m,
                "many_loads",
                &cfg((n as u32).div_ceil(64), 64, mode),
                &[&p64(po), &pad_bytes, &p64(pi), &i32b(n as i32)],
            )
            .unwrap();
        assert!(r.reports.is_empty(), "{:?}", r.reports);
        assert_eq!(r.jit, mode == JitMode::Always);
        assert_eq!(download_u32(&dev, po, n), want, "{mode:?}");
    }
}

/// Three loads through one address register (`[p-4]`, `[p]`, `[p+4]`, one shared check in
/// compiled code) summed into `out[t]`, for `t < n`, with `p = &in[t + shift]`; and one 8-byte
/// load through another register whose offset is misaligned for thread `bad` only.
fn neighbours_ptx() -> String {
    format!(
        r#"
.version 7.0
.target sm_80
.address_size 64
.file 1 "neighbours.cu"
.visible .entry neighbours(.param .u64 p_in, .param .u64 p_out, .param .u32 p_n, .param .u32 p_shift) {{
  .reg .u64 %rd<8>;
  .reg .u32 %r<8>;
  .reg .pred %p<2>;
  .loc 1 1 0
  ld.param.u64 %rd1, [p_in];
  ld.param.u64 %rd2, [p_out];
  ld.param.u32 %r5, [p_n];
  ld.param.u32 %r6, [p_shift];
{INDEX_GUARD}  add.u32 %r7, %r1, %r6;
  cvta.to.global.u64 %rd3, %rd1;
  mul.wide.u32 %rd4, %r7, 4;
  add.u64 %rd5, %rd3, %rd4;
  .loc 1 10 0
  ld.global.u32 %r2, [%rd5+-4];
  .loc 1 11 0
  ld.global.u32 %r3, [%rd5];
  .loc 1 12 0
  ld.global.u32 %r4, [%rd5+4];
  add.u32 %r2, %r2, %r3;
  add.u32 %r2, %r2, %r4;
  .loc 1 13 0
  cvta.to.global.u64 %rd6, %rd2;
  mul.wide.u32 %rd4, %r1, 4;
  add.u64 %rd7, %rd6, %rd4;
  st.global.u32 [%rd7], %r2;
DONE:
  ret;
}}
"#
    )
}

/// Launches `kernel` over `n` threads (blocks of 64), interpreted and then compiled, each time
/// with a fresh output buffer of `n` words as the parameter between `before` and `after`: the
/// outputs, or the reports of the faults.
fn interpreted_and_compiled(
    dev: &Device,
    m: &Module,
    kernel: &str,
    n: usize,
    before: &[&[u8]],
    after: &[&[u8]],
) -> Vec<Result<Vec<u32>, CheckReport>> {
    let mut results = Vec::new();
    for mode in [JitMode::Off, JitMode::Always] {
        let po = dev.alloc(n * 4).unwrap();
        let out = p64(po);
        let params: Vec<&[u8]> = before
            .iter()
            .copied()
            .chain([&out[..]])
            .chain(after.iter().copied())
            .collect();
        let r = dev.launch(m, kernel, &cfg((n as u32).div_ceil(64), 64, mode), &params);
        results.push(match r {
            Ok(r) => {
                assert!(r.reports.is_empty(), "{:?}", r.reports);
                assert_eq!(r.jit, mode == JitMode::Always);
                Ok(download_u32(dev, po, n))
            }
            Err(LaunchError::Fault { report, .. }) => Err(*report),
            Err(e) => panic!("{kernel} ({mode:?}): {e:?}"),
        });
    }
    results
}

/// A launch's result, or its fault without the nearest allocation the report names (each
/// launch of `interpreted_and_compiled` has a fresh output buffer).
type FaultKey = (CheckKind, Dim3, Dim3, u64, Option<SourceLine>);
fn fault_key(r: &Result<Vec<u32>, CheckReport>) -> Result<Vec<u32>, FaultKey> {
    r.as_ref()
        .map_err(|e| (e.kind, e.block, e.thread, e.address, e.line.clone()))
        .cloned()
}

/// The global thread index (blocks of 64, as `interpreted_and_compiled` launches) and the
/// source line of a fault.
fn thread_and_line(rep: &CheckReport) -> (usize, Option<u32>) {
    let t = rep.block.0 as usize * 64 + rep.thread.0 as usize;
    (t, rep.line.as_ref().map(|l| l.line))
}

#[test]
fn accesses_sharing_one_check_fault_like_the_interpreter() {
    let dev = Device::new();
    let m = dev.load_module(&neighbours_ptx()).unwrap();
    let mut rng = Rng(seed());
    let n = 200 + rng.below(100) as usize;
    // `in` has n + 2 elements: with shift 1 every thread reads in bounds; with shift 2 the last
    // thread's third load (line 12) reads past the end; with shift 0 the first thread's first
    // load (line 10) reads before the start.
    let v: Vec<u32> = (0..n + 2).map(|_| rng.next() as u32 >> 2).collect();
    let pi = upload_u32(&dev, &v);
    for shift in 0..3u32 {
        let (nb, sh) = (i32b(n as i32), i32b(shift as i32));
        let results = interpreted_and_compiled(&dev, &m, "neighbours", n, &[&p64(pi)], &[&nb, &sh]);
        assert_eq!(results[0], results[1], "shift {shift}");
        match (shift, &results[1]) {
            (1, Ok(out)) => {
                let want: Vec<u32> = (0..n).map(|t| v[t] + v[t + 1] + v[t + 2]).collect();
                assert_eq!(out, &want);
            }
            (0, Err(rep)) => {
                let line = rep.line.as_ref().map(|l| l.line);
                assert_eq!(
                    (rep.block, rep.thread, line),
                    ((0, 0, 0), (0, 0, 0), Some(10))
                );
            }
            (2, Err(rep)) => assert_eq!(thread_and_line(rep), (n - 1, Some(12)), "{rep:?}"),
            (s, r) => panic!("shift {s}: unexpected {r:?}"),
        }
    }
}

/// Float registers whose NaNs compiled code makes canonical only where their bits are read
/// (`jit::emit::lazy_floats`): an arithmetic chain in a loop, then every kind of reader of the
/// bits (a store, `abs`, a conversion, a move to an integer register, the write-back before an
/// instruction left to the interpreter), and a region entered with a non-canonical NaN that a
/// guarded add may leave untouched.
const LAZY_NAN: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry lazynan(.param .u64 pin, .param .u64 pout, .param .u32 n) {
  .reg .pred %p<4>;
  .reg .b32 %r<12>;
  .reg .f32 %f<10>;
  .reg .f64 %fd<3>;
  .reg .b64 %rd<12>;
  .shared .align 4 .b8 sh[512];
  ld.param.u64 %rd1, [pin];
  ld.param.u64 %rd2, [pout];
  ld.param.u32 %r5, [n];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r8, %tid.x;
  mul.wide.u32 %rd7, %r8, 4;
  mov.u64 %rd8, sh;
  add.s64 %rd9, %rd8, %rd7;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mad.lo.u32 %r1, %r2, %r3, %r1;
  setp.ge.u32 %p1, %r1, %r5;
  @%p1 bra DONE;
  mul.wide.u32 %rd3, %r1, 16;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  ld.global.f32 %f2, [%rd4+4];
  ld.global.f32 %f3, [%rd4+8];
  ld.global.u32 %r6, [%rd4+12];
  and.b32 %r6, %r6, 3;
  mov.f32 %f4, 0f00000000;
L1:
  fma.rn.f32 %f4, %f1, %f2, %f4;
  add.f32 %f5, %f4, %f3;
  mul.f32 %f4, %f5, %f1;
  sub.s32 %r6, %r6, 1;
  setp.ge.s32 %p2, %r6, 0;
  @%p2 bra L1;
  mul.wide.u32 %rd5, %r1, 32;
  add.s64 %rd6, %rd2, %rd5;
  st.global.f32 [%rd6], %f4;
  abs.f32 %f6, %f5;
  st.global.f32 [%rd6+4], %f6;
  cvt.f64.f32 %fd1, %f4;
  st.global.f64 [%rd6+8], %fd1;
  mov.b32 %r7, %f5;
  st.global.u32 [%rd6+16], %r7;
  st.shared.f32 [%rd9], %f4;
  ld.shared.u32 %r9, [%rd9];
  st.global.u32 [%rd6+20], %r9;
  st.shared.f32 [%rd9], %f1;
  ld.shared.f32 %f7, [%rd9];
  setp.lt.f32 %p3, %f2, 0f00000000;
  @%p3 add.f32 %f7, %f7, %f3;
  st.shared.f32 [%rd9], %f7;
  ld.shared.u32 %r10, [%rd9];
  st.global.u32 [%rd6+24], %r10;
DONE:
  ret;
}
"#;

#[test]
fn lazily_canonical_nans_show_the_interpreters_bits() {
    const SPECIAL: [u32; 9] = [
        0x7FFF_FFFF,
        0x7FC0_0000,
        0xFFC0_0001,
        0x7F80_0001,
        0xFFA0_0000,
        0x7F80_0000,
        0xFF80_0000,
        0x8000_0000,
        0x0000_0000,
    ];
    let dev = Device::new();
    let m = dev.load_module(LAZY_NAN).unwrap();
    let mut rng = Rng(seed());
    let n = 700 + rng.below(200) as usize;
    let input: Vec<u32> = (0..4 * n)
        .map(|k| match (k % 4, rng.below(3)) {
            (3, _) => rng.next() as u32,
            (_, 0) => SPECIAL[rng.below(SPECIAL.len() as u64) as usize],
            _ => (rng.f32() * 4.0 - 2.0).to_bits(),
        })
        .collect();
    let pin = upload_u32(&dev, &input);
    let mut outs = Vec::new();
    for mode in [JitMode::Off, JitMode::Always] {
        let pout = dev.alloc(32 * n).unwrap();
        let r = dev
            .launch(
                &m,
                "lazynan",
                &cfg((n as u32).div_ceil(128), 128, mode),
                &[&p64(pin), &p64(pout), &(n as u32).to_le_bytes()],
            )
            .unwrap();
        assert!(r.reports.is_empty(), "{:?}", r.reports);
        assert_eq!(r.jit, mode == JitMode::Always);
        outs.push(download_u32(&dev, pout, 8 * n));
    }
    let nans = outs[0]
        .iter()
        .filter(|&&w| f32::from_bits(w).is_nan())
        .count();
    assert!(
        nans > n / 4,
        "the inputs should make NaNs: {nans} of {}",
        8 * n
    );
    for t in 0..n {
        assert_eq!(
            &outs[0][8 * t..8 * t + 7],
            &outs[1][8 * t..8 * t + 7],
            "thread {t} (interpreted, then compiled), inputs {:08x?}",
            &input[4 * t..4 * t + 4]
        );
    }
}

/// Three walkers through one root pointer (`pa`) in a loop (`jit::roots`): `[rd7]` walks `a`
/// by 4 bytes, `[rd9]` walks `b` by 4 bytes (reached by adding `b - a`, so it shares `rd7`'s
/// root and its cache entry, which then alternates between the two allocations), and an 8-byte
/// `[rd8]` walks `b` by 8 bytes (same root, another span: an entry of its own, whose bounds a
/// shared 4-byte entry would get wrong).
fn chain_ptx() -> String {
    format!(
        r#"
.version 7.0
.target sm_80
.address_size 64
.file 1 "chain.cu"
.visible .entry chain(.param .u64 pa, .param .u64 pb, .param .u64 pout, .param .u32 n, .param .u32 steps) {{
  .reg .u64 %rd<16>;
  .reg .u32 %r<12>;
  .reg .pred %p<3>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pb];
  ld.param.u64 %rd3, [pout];
  ld.param.u32 %r5, [n];
  ld.param.u32 %r6, [steps];
{INDEX_GUARD}  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  sub.s64 %rd6, %rd2, %rd1;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd7, %rd1, %rd4;
  mul.wide.u32 %rd12, %r1, 8;
  add.s64 %rd11, %rd1, %rd6;
  add.s64 %rd8, %rd11, %rd12;
  mov.u32 %r2, 0;
L1:
  .loc 1 20 0
  ld.global.u32 %r3, [%rd7];
  add.s64 %rd9, %rd7, %rd6;
  .loc 1 21 0
  ld.global.u32 %r4, [%rd9];
  .loc 1 22 0
  ld.global.v2.u32 {{%r8, %r9}}, [%rd8];
  mad.lo.u32 %r2, %r2, 3, %r3;
  xor.b32 %r2, %r2, %r4;
  add.u32 %r2, %r2, %r8;
  sub.u32 %r2, %r2, %r9;
  add.s64 %rd7, %rd7, 4;
  add.s64 %rd8, %rd8, 8;
  sub.u32 %r6, %r6, 1;
  setp.ne.u32 %p2, %r6, 0;
  @%p2 bra L1;
  cvta.to.global.u64 %rd3, %rd3;
  add.s64 %rd10, %rd3, %rd4;
  st.global.u32 [%rd10], %r2;
DONE:
  ret;
}}
"#
    )
}

#[test]
fn accesses_through_one_root_share_a_cache_and_keep_their_bounds() {
    let dev = Device::new();
    let m = dev.load_module(&chain_ptx()).unwrap();
    let mut rng = Rng(seed());
    let n = 150 + rng.below(100) as usize;
    let steps = 5 + rng.below(20) as usize;
    let a: Vec<u32> = (0..n + steps - 1).map(|_| rng.next() as u32).collect();
    let b: Vec<u32> = (0..2 * (n + steps - 1))
        .map(|_| rng.next() as u32)
        .collect();
    let pa = upload_u32(&dev, &a);
    let want: Vec<u32> = (0..n)
        .map(|t| {
            (0..steps).fold(0u32, |acc, j| {
                let acc = acc.wrapping_mul(3).wrapping_add(a[t + j]) ^ b[t + j];
                acc.wrapping_add(b[2 * (t + j)])
                    .wrapping_sub(b[2 * (t + j) + 1])
            })
        })
        .collect();
    // `b` whole, then one element short: the last thread's last 8-byte load (line 22) reads
    // past the end by its second word only.
    for short in [0, 1] {
        let pb = upload_u32(&dev, &b[..b.len() - short]);
        let (nb, sb) = (i32b(n as i32), i32b(steps as i32));
        let results =
            interpreted_and_compiled(&dev, &m, "chain", n, &[&p64(pa), &p64(pb)], &[&nb, &sb]);
        assert_eq!(results[0], results[1], "short {short}");
        match (short, &results[1]) {
            (0, Ok(out)) => assert_eq!(out, &want),
            (1, Err(rep)) => assert_eq!(thread_and_line(rep), (n - 1, Some(22)), "{rep:?}"),
            (s, r) => panic!("short {s}: unexpected {r:?}"),
        }
    }
}

/// Three loads down a column (`[p]`, `[p + s]`, `[p + 2s]`, a chain one check covers, see
/// `jit::chains`) in a loop that moves `p` along a row, for `steps` steps; the step `s` is a
/// parameter, so that it can be misaligned or huge.
fn column_ptx() -> String {
    format!(
        r#"
.version 7.0
.target sm_80
.address_size 64
.file 1 "column.cu"
.visible .entry column(.param .u64 pa, .param .u64 pout, .param .u32 n, .param .u32 steps, .param .u64 step) {{
  .reg .u64 %rd<12>;
  .reg .u32 %r<12>;
  .reg .pred %p<3>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pout];
  ld.param.u32 %r5, [n];
  ld.param.u32 %r6, [steps];
  ld.param.u64 %rd5, [step];
{INDEX_GUARD}  cvta.to.global.u64 %rd1, %rd1;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd3, %rd1, %rd4;
  mov.u32 %r7, 0;
L1:
  .loc 1 10 0
  ld.global.u32 %r8, [%rd3];
  add.s64 %rd6, %rd3, %rd5;
  .loc 1 11 0
  ld.global.u32 %r9, [%rd6];
  add.s64 %rd7, %rd6, %rd5;
  .loc 1 12 0
  ld.global.u32 %r10, [%rd7];
  xor.b32 %r8, %r8, %r9;
  mad.lo.u32 %r7, %r7, 3, %r8;
  add.u32 %r7, %r7, %r10;
  add.s64 %rd3, %rd3, 4;
  sub.u32 %r6, %r6, 1;
  setp.ne.u32 %p2, %r6, 0;
  @%p2 bra L1;
  cvta.to.global.u64 %rd2, %rd2;
  add.s64 %rd8, %rd2, %rd4;
  st.global.u32 [%rd8], %r7;
DONE:
  ret;
}}
"#
    )
}

#[test]
fn a_chain_of_accesses_faults_like_the_interpreter() {
    let dev = Device::new();
    let m = dev.load_module(&column_ptx()).unwrap();
    let mut rng = Rng(seed());
    let n = 100 + rng.below(100) as usize;
    let steps = 3 + rng.below(10) as usize;
    let cols = n + steps - 1;
    let a: Vec<u32> = (0..3 * cols).map(|_| rng.next() as u32).collect();
    let want: Vec<u32> = (0..n)
        .map(|t| {
            (0..steps).fold(0u32, |acc, j| {
                let x = a[t + j] ^ a[cols + t + j];
                acc.wrapping_mul(3)
                    .wrapping_add(x)
                    .wrapping_add(a[2 * cols + t + j])
            })
        })
        .collect();
    let row = 4 * cols as u64;
    // (words of `a`, step, the line and thread of the expected fault)
    type Case = (usize, u64, Option<(u32, usize)>);
    let cases: [Case; 4] = [
        (3 * cols, row, None),
        // The last thread's last load down the column is one word past the end.
        (3 * cols - 1, row, Some((12, n - 1))),
        // A step that is not a multiple of 4: the second load is misaligned.
        (3 * cols, row + 2, Some((11, 0))),
        // A step of 2^63: the third position is the first again, the second far away.
        (3 * cols, 1 << 63, Some((11, 0))),
    ];
    for (len, step, fault) in cases {
        let pa = upload_u32(&dev, &a[..len]);
        let (nb, sb, st) = (i32b(n as i32), i32b(steps as i32), step.to_le_bytes());
        let results =
            interpreted_and_compiled(&dev, &m, "column", n, &[&p64(pa)], &[&nb, &sb, &st]);
        // The same fault (the nearest allocation a report names may differ: each launch has a
        // fresh output buffer).
        assert_eq!(
            fault_key(&results[0]),
            fault_key(&results[1]),
            "step {step:#x}, {len} words"
        );
        match (fault, &results[1]) {
            (None, Ok(out)) => assert_eq!(out, &want),
            (Some((line, t)), Err(rep)) => {
                assert_eq!(thread_and_line(rep), (t, Some(line)), "{rep:?}")
            }
            (f, r) => panic!("step {step:#x}: expected {f:?}, got {r:?}"),
        }
        dev.free(pa).unwrap();
    }
}

/// A loop that loads `[p]` and `[p - 4 other]` and moves `p` by `stride` bytes while a 32-bit
/// counter moves by `step` (`setp.{cmp}.{ty}` against `end`, the branch taken on the predicate
/// or, with `neg`, on its negation): a simple loop whose accesses compiled code checks once
/// before it starts (`jit::loops`), the two with one cache entry (one root, `jit::roots`; a
/// subtraction, so that they do not make a chain, `jit::chains`).
fn counted_ptx(cmp: &str, ty: &str, step: i32, neg: bool) -> String {
    let neg = if neg { "!" } else { "" };
    format!(
        r#"
.version 7.0
.target sm_80
.address_size 64
.file 1 "counted.cu"
.visible .entry counted(.param .u64 pa, .param .u64 pout, .param .u32 n, .param .u32 start, .param .u32 end, .param .u64 first, .param .u64 stride, .param .u32 other) {{
  .reg .u64 %rd<12>;
  .reg .u32 %r<12>;
  .reg .pred %p<3>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pout];
  ld.param.u32 %r5, [n];
  ld.param.u32 %r7, [start];
  ld.param.u32 %r6, [end];
  ld.param.u64 %rd6, [first];
  ld.param.u64 %rd5, [stride];
  ld.param.u32 %r11, [other];
  mul.wide.u32 %rd9, %r11, 4;
{INDEX_GUARD}  cvta.to.global.u64 %rd1, %rd1;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd3, %rd1, %rd4;
  add.s64 %rd3, %rd3, %rd6;
  mov.u32 %r9, 0;
L1:
  .loc 1 10 0
  ld.global.u32 %r8, [%rd3];
  sub.s64 %rd7, %rd3, %rd9;
  .loc 1 11 0
  ld.global.u32 %r10, [%rd7];
  add.u32 %r8, %r8, %r10;
  mad.lo.u32 %r9, %r9, 3, %r8;
  add.s64 %rd3, %rd3, %rd5;
  add.s32 %r7, %r7, {step};
  setp.{cmp}.{ty} %p2, %r7, %r6;
  @{neg}%p2 bra L1;
  cvta.to.global.u64 %rd2, %rd2;
  add.s64 %rd8, %rd2, %rd4;
  st.global.u32 [%rd8], %r9;
DONE:
  ret;
}}
"#
    )
}

/// `counted_ptx` on the CPU for thread `t` over `a`: the result, or the line of the first
/// access that misses `a` or is misaligned; and the highest word it read.
#[allow(clippy::too_many_arguments)]
fn counted_reference(
    a: &[u32],
    t: usize,
    (cmp, ty, step, neg): (&str, &str, i32, bool),
    start: u32,
    end: u32,
    first: u64,
    stride: u64,
    other: u32,
) -> (Result<u32, u32>, u64) {
    let (mut p, mut i, mut acc) = ((4 * t as u64).wrapping_add(first), start, 0u32);
    let mut highest = 0;
    for _ in 0..10_000 {
        let mut x = 0u32;
        for (q, line) in [(p, 10), (p.wrapping_sub(4 * other as u64), 11)] {
            if q % 4 != 0 || q / 4 >= a.len() as u64 {
                return (Err(line), highest);
            }
            highest = highest.max(q / 4);
            x = x.wrapping_add(a[(q / 4) as usize]);
        }
        acc = acc.wrapping_mul(3).wrapping_add(x);
        p = p.wrapping_add(stride);
        i = i.wrapping_add(step as u32);
        let o = if ty == "s32" {
            (i as i32).cmp(&(end as i32))
        } else {
            i.cmp(&end)
        };
        use std::cmp::Ordering::*;
        let c = match cmp {
            "lt" => o == Less,
            "le" => o != Greater,
            "gt" => o == Greater,
            "ge" => o != Less,
            "eq" => o == Equal,
            _ => o != Equal,
        };
        if c == neg {
            return (Ok(acc), highest);
        }
    }
    panic!("counted_reference: the test's loop does not end");
}

/// Whether `counted_ptx`'s loop ends (or faults) within 10,000 iterations for thread `t`.
#[allow(clippy::too_many_arguments)]
fn counted_ends(
    a: &[u32],
    t: usize,
    shape: (&str, &str, i32, bool),
    start: u32,
    end: u32,
    first: u64,
    stride: u64,
    other: u32,
) -> bool {
    std::panic::catch_unwind(|| counted_reference(a, t, shape, start, end, first, stride, other))
        .is_ok()
}

/// The loop tests' matrix for `n` threads: `rows` rows of `n + 3` random words. Returns the
/// columns, a row's bytes and the words.
fn random_rows(rng: &mut Rng, n: usize, rows: usize) -> (usize, u64, Vec<u32>) {
    let cols = n + 3;
    let a = (0..cols * rows).map(|_| rng.next() as u32).collect();
    (cols, 4 * cols as u64, a)
}

#[test]
fn loops_checked_before_they_start_count_and_fault_like_the_interpreter() {
    let dev = Device::new();
    let mut rng = Rng(seed());
    let n = 100 + rng.below(100) as usize;
    // Enough iterations for the loops to run without checks after their first (`FEW`).
    let iters = 12 + rng.below(10) as u32;
    let (cols, row, a) = random_rows(&mut rng, n, iters as usize + 1);
    let e = rng.below(1000) as u32;
    let max = i32::MAX as u32;
    // (loop shape, start, end, first byte, stride, other). Each runs over all of `a`, then over
    // `a` without the highest word the last thread reads (there it faults).
    type Shape = (&'static str, &'static str, i32, bool);
    let cases: Vec<(Shape, u32, u32, u64, u64, u32)> = vec![
        // Counting up while below, signed, from below zero; and from past the end (one
        // iteration).
        (("lt", "s32", 1, false), e.wrapping_sub(iters), e, 0, row, 0),
        (("lt", "s32", 1, false), e + 5, e, 0, row, 0),
        // Down by 4 to exactly the bound; `@!p` on `eq`, up by 2.
        (("ne", "s32", -4, false), e + 4 * iters, e, 0, row, 0),
        (("eq", "u32", 2, true), e, e + 2 * iters, 0, row, 0),
        // Down while above (unsigned, an odd gap), up while at most, down while at least
        // (`@!p` on `lt`).
        (("gt", "u32", -2, false), e + 2 * iters - 1, e, 0, row, 0),
        (("le", "u32", 2, false), e, e + 2 * (iters - 1), 0, row, 0),
        (("lt", "s32", -1, true), e + iters - 1, e, 0, row, 0),
        // Walking up the rows (a negative stride).
        (
            ("lt", "s32", 1, false),
            0,
            iters,
            row * (iters as u64 - 1),
            row.wrapping_neg(),
            0,
        ),
        // A misaligned stride whose last position (the seventh) is aligned again, a stride of
        // 2^63: the second access faults.
        (("lt", "s32", 1, false), 0, 7, 0, row + 2, 0),
        (("lt", "s32", 1, false), 0, iters, 0, 1 << 63, 0),
        // A bound so close to the largest value that the count could wrap: checked in the
        // loop instead (two iterations); and one where it does wrap (the loop runs on past the
        // rows of `a`), and a count down by 4 that misses the bound by 2 (the same).
        (("lt", "s32", 4, false), max - 9, max - 1, 0, row, 0),
        (("lt", "s32", 4, false), max - 6, max, 0, row, 0),
        // The counter steps over the bound and wraps after ten iterations: a count that ignored
        // the wrap would let the loop run on past the rows it checked.
        (("lt", "s32", 4, false), max - 43, max - 1, 0, row, 0),
        (("ne", "s32", -4, false), e + 4 * iters + 2, e, 0, row, 0),
        // The second access starts a row before `a` and ends inside it: the check before
        // the loop finds its first position outside the allocation the first access found.
        (("lt", "s32", 1, false), 0, iters, row, row, cols as u32),
        (("lt", "s32", 1, false), 0, iters, 0, row, cols as u32),
    ];
    for (shape, start, end, first, stride, other) in cases {
        let (cmp, ty, step, neg) = shape;
        let m = dev.load_module(&counted_ptx(cmp, ty, step, neg)).unwrap();
        let compiled =
            crate::jit::compile(m.program("counted").unwrap(), true, Default::default()).unwrap();
        assert_eq!(compiled.loops, 1, "{shape:?}");
        let reference =
            |a: &[u32], t| counted_reference(a, t, shape, start, end, first, stride, other);
        let highest = reference(&a, n - 1).1;
        for words in [a.len(), highest as usize] {
            let pa = upload_u32(&dev, &a[..words]);
            let params: [&[u8]; 6] = [
                &i32b(n as i32),
                &start.to_le_bytes(),
                &end.to_le_bytes(),
                &first.to_le_bytes(),
                &stride.to_le_bytes(),
                &other.to_le_bytes(),
            ];
            let results = interpreted_and_compiled(&dev, &m, "counted", n, &[&p64(pa)], &params);
            let want: Vec<Result<u32, u32>> = (0..n).map(|t| reference(&a[..words], t).0).collect();
            let what =
                format!("{shape:?} start {start} end {end} stride {stride:#x} words {words}");
            // One thread faults: both report it.
            assert_eq!(fault_key(&results[0]), fault_key(&results[1]), "{what}");
            like_reference(&results, &want, &what);
            dev.free(pa).unwrap();
        }
    }
}

/// Random loop shapes (every comparison and type, steps that are and are not powers of two,
/// bounds near the ends of the range, strides of every sign and alignment, starts inside and
/// outside `a`): compiled code, with its loops checked before they start where it can, gives
/// the interpreter's results and reports.
#[test]
fn random_loop_shapes_run_like_the_interpreter() {
    let dev = Device::new();
    let mut rng = Rng(seed());
    let n = 64 + rng.below(64) as usize;
    let rows = 12;
    let (cols, row, a) = random_rows(&mut rng, n, rows);
    let cmps = ["lt", "le", "gt", "ge", "ne", "eq"];
    let steps = [1, -1, 2, -2, 4, -4, 8, 3, -3];
    let anchors = [0u32, 1000, i32::MAX as u32, i32::MIN as u32, u32::MAX];
    let mut ran = 0;
    while ran < 80 {
        let pick = |rng: &mut Rng, k: usize| rng.below(k as u64) as usize;
        let shape = (
            cmps[pick(&mut rng, cmps.len())],
            ["s32", "u32"][pick(&mut rng, 2)],
            steps[pick(&mut rng, steps.len())],
            rng.below(2) == 1,
        );
        let end = anchors[pick(&mut rng, anchors.len())].wrapping_add(rng.below(9) as u32 - 4);
        let start = end.wrapping_add(rng.below(33) as u32).wrapping_sub(16);
        let strides = [row, row.wrapping_neg(), 4, row + 2, 1 << 63, 8];
        let stride = strides[pick(&mut rng, strides.len())];
        let first = row * rng.below(rows as u64);
        let other = [0, cols as u32, 7][pick(&mut rng, 3)];
        let ends = (0..n).all(|t| counted_ends(&a, t, shape, start, end, first, stride, other));
        if !ends {
            continue;
        }
        ran += 1;
        let (cmp, ty, step, neg) = shape;
        let m = dev.load_module(&counted_ptx(cmp, ty, step, neg)).unwrap();
        let pa = upload_u32(&dev, &a);
        let params: [&[u8]; 6] = [
            &i32b(n as i32),
            &start.to_le_bytes(),
            &end.to_le_bytes(),
            &first.to_le_bytes(),
            &stride.to_le_bytes(),
            &other.to_le_bytes(),
        ];
        let results = interpreted_and_compiled(&dev, &m, "counted", n, &[&p64(pa)], &params);
        let what = format!(
            "{shape:?} start {start} end {end} first {first} stride {stride:#x} other {other}"
        );
        let want: Vec<Result<u32, u32>> = (0..n)
            .map(|t| counted_reference(&a, t, shape, start, end, first, stride, other).0)
            .collect();
        like_reference(&results, &want, &what);
        dev.free(pa).unwrap();
    }
}

/// Each of `results` (interpreted, compiled) is the reference's result `want` (per thread: the
/// value, or the line where it faults), or a report that names a thread that faults, at the
/// line where it does. (When several threads fault, the interpreter, which runs warps in
/// lockstep, and compiled code, which runs one lane after another, may report different ones.)
fn like_reference(
    results: &[Result<Vec<u32>, CheckReport>],
    want: &[Result<u32, u32>],
    what: &str,
) {
    for r in results {
        match r {
            Ok(out) => {
                let got: Vec<Result<u32, u32>> = out.iter().map(|&x| Ok(x)).collect();
                assert_eq!(got, want, "{what}");
            }
            Err(rep) => {
                let (t, line) = thread_and_line(rep);
                assert_eq!(Err(line.unwrap_or(0)), want[t], "{what}: {rep:?}");
            }
        }
    }
}

/// A grid-stride loop: `i` starts at `start + t` and moves by `step` (a register) while
/// `setp.{cmp}.{ty} i, end` holds; each iteration loads `[a + 4 ext(i + off)]` (`mul.wide` of
/// type `ty`), so that the widened value can wrap while the counter does not.
fn strided_ptx(cmp: &str, ty: &str) -> String {
    format!(
        r#"
.version 7.0
.target sm_80
.address_size 64
.file 1 "strided.cu"
.visible .entry strided(.param .u64 pa, .param .u64 pout, .param .u32 n, .param .u32 start, .param .u32 end, .param .u32 step, .param .u32 off) {{
  .reg .u64 %rd<12>;
  .reg .u32 %r<14>;
  .reg .pred %p<3>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pout];
  ld.param.u32 %r5, [n];
  ld.param.u32 %r7, [start];
  ld.param.u32 %r6, [end];
  ld.param.u32 %r11, [step];
  ld.param.u32 %r12, [off];
{INDEX_GUARD}  cvta.to.global.u64 %rd1, %rd1;
  add.u32 %r7, %r7, %r1;
  mov.u32 %r9, 0;
L1:
  add.u32 %r10, %r7, %r12;
  mul.wide.{ty} %rd3, %r10, 4;
  add.s64 %rd4, %rd1, %rd3;
  .loc 1 10 0
  ld.global.u32 %r8, [%rd4];
  mad.lo.u32 %r9, %r9, 3, %r8;
  add.s32 %r7, %r7, %r11;
  setp.{cmp}.{ty} %p2, %r7, %r6;
  @%p2 bra L1;
  cvta.to.global.u64 %rd2, %rd2;
  mul.wide.u32 %rd5, %r1, 4;
  add.s64 %rd6, %rd2, %rd5;
  st.global.u32 [%rd6], %r9;
DONE:
  ret;
}}
"#
    )
}

/// `strided_ptx` on the CPU for thread `t`, with `base` bytes added to `a`'s address: the
/// result or the faulting line, and the highest word read.
#[allow(clippy::too_many_arguments)]
fn strided_reference(
    a: &[u32],
    t: usize,
    (cmp, ty): (&str, &str),
    base: u64,
    start: u32,
    end: u32,
    step: u32,
    off: u32,
) -> (Result<u32, u32>, u64) {
    let (mut i, mut acc, mut highest) = (start.wrapping_add(t as u32), 0u32, 0);
    for _ in 0..10_000 {
        let j = i.wrapping_add(off);
        let wide = if ty == "s32" {
            j as i32 as i64 as u64
        } else {
            j as u64
        };
        let byte = base.wrapping_add(wide.wrapping_mul(4));
        if byte / 4 >= a.len() as u64 {
            return (Err(10), highest);
        }
        highest = highest.max(byte / 4);
        acc = acc.wrapping_mul(3).wrapping_add(a[(byte / 4) as usize]);
        i = i.wrapping_add(step);
        let o = if ty == "s32" {
            (i as i32).cmp(&(end as i32))
        } else {
            i.cmp(&end)
        };
        use std::cmp::Ordering::*;
        let go_on = match cmp {
            "lt" => o == Less,
            "le" => o != Greater,
            "gt" => o == Greater,
            _ => o != Less,
        };
        if !go_on {
            return (Ok(acc), highest);
        }
    }
    panic!("strided_reference: the test's loop does not end");
}

#[test]
fn grid_stride_loops_are_checked_before_they_start_where_nothing_wraps() {
    let dev = Device::new();
    let mut rng = Rng(seed());
    let n = 100 + rng.below(100) as usize;
    // Enough rows for the loops to run unchecked after their second iteration (`FEW`).
    let rows = 10 + rng.below(6) as usize;
    let len = n * rows;
    let a: Vec<u32> = (0..len).map(|_| rng.next() as u32).collect();
    let (l, nn) = (len as u32, n as u32);
    let max = i32::MAX as u32;
    // (cmp, ty), base bytes, start, end, step, off
    type Case = ((&'static str, &'static str), u64, u32, u32, u32, u32);
    let wrap_s = max - l / 2;
    let wrap_u = u32::MAX - l / 2;
    let low_s = (4 * (l as i64 / 2 - i32::MIN as i64)) as u64;
    let cases: Vec<Case> = vec![
        // Grid-stride up, signed and unsigned; a step that is not a power of two (a division).
        (("lt", "s32"), 0, 0, l, nn, 0),
        (("lt", "u32"), 0, 0, l, nn, 0),
        (("lt", "s32"), 0, 0, l, nn + 3, 0),
        (("le", "s32"), 0, 0, l - 1, nn + 1, 0),
        // Down to zero: while above -1, while at least 0.
        (("gt", "s32"), 0, l - nn, u32::MAX, nn.wrapping_neg(), 0),
        (("ge", "s32"), 0, l - nn, 0, nn.wrapping_neg(), 0),
        // The widened value wraps half way (signed at 2^31, unsigned at 2^32) while the counter
        // does not: the loop runs checked, and faults there.
        (
            ("lt", "s32"),
            (4 * wrap_s as u64).wrapping_neg(),
            0,
            l,
            nn,
            wrap_s,
        ),
        (
            ("lt", "u32"),
            (4 * wrap_u as u64).wrapping_neg(),
            0,
            l,
            nn,
            wrap_u,
        ),
        // The same counting down, past -2^31 and past 0.
        (
            ("gt", "s32"),
            low_s,
            l - nn,
            u32::MAX,
            nn.wrapping_neg(),
            (i32::MIN as u32).wrapping_sub(l / 2),
        ),
        (
            ("gt", "u32"),
            2 * l as u64,
            l - nn,
            0,
            nn.wrapping_neg(),
            (l / 2).wrapping_neg(),
        ),
        // A step in a register that points away from the bound: the counter wraps after a few
        // iterations; the second one reads 1 GiB before `a`.
        (("lt", "s32"), 0, 0, 100, (1u32 << 28).wrapping_neg(), 0),
        // A bound so close to the largest value that the count could wrap: checked in the loop.
        (("lt", "s32"), 0, max - 3 * nn, max, nn, 0),
    ];
    for (shape, base, start, end, step, off) in cases {
        let (cmp, ty) = shape;
        let m = dev.load_module(&strided_ptx(cmp, ty)).unwrap();
        let compiled =
            crate::jit::compile(m.program("strided").unwrap(), true, Default::default()).unwrap();
        assert_eq!(compiled.loops, 1, "{shape:?}");
        let reference = |a: &[u32], t| strided_reference(a, t, shape, base, start, end, step, off);
        let highest = (0..n).map(|t| reference(&a, t).1).max().unwrap_or(0);
        for words in [len, highest as usize] {
            let pa = upload_u32(&dev, &a[..words]);
            let params: [&[u8]; 5] = [
                &i32b(n as i32),
                &start.to_le_bytes(),
                &end.to_le_bytes(),
                &step.to_le_bytes(),
                &off.to_le_bytes(),
            ];
            let pb = p64(pa.wrapping_add(base));
            let results = interpreted_and_compiled(&dev, &m, "strided", n, &[&pb], &params);
            let want: Vec<Result<u32, u32>> = (0..n).map(|t| reference(&a[..words], t).0).collect();
            let what = format!("{shape:?} base {base:#x} start {start} end {end} step {step} off {off}, {words} words");
            like_reference(&results, &want, &what);
            dev.free(pa).unwrap();
        }
    }
}

/// A loop whose second access walks from one allocation into the next (through the red zone
/// between them) must not run unchecked on the allocation its first access found; and a step
/// of 0 in a register (a grid-stride loop that never ends) stops at the budget, compiled or
/// not.
#[test]
fn loops_across_allocations_and_without_end_stay_checked() {
    let dev = Device::new();
    let mut rng = Rng(seed());
    let n = 64 + rng.below(64) as usize;
    let rows = 24;
    let (_, row, mut a) = random_rows(&mut rng, n, rows);
    // Odd words, never equal to the zeros of `d` (below).
    a.iter_mut().for_each(|x| *x |= 1);
    let m = dev
        .load_module(&counted_ptx("lt", "s32", 1, false))
        .unwrap();
    // `[p - 4 other]` starts 16 bytes into `d` (zeros) and ends in `a`.
    let d = dev.alloc(2 * row as usize + 4 * n + 64).unwrap();
    let pa = upload_u32(&dev, &a);
    let other = (pa - (d + 16)) / 4;
    assert!(other < u32::MAX as u64);
    let other = other as u32;
    let params: [&[u8]; 6] = [
        &i32b(n as i32),
        &0u32.to_le_bytes(),
        &(rows as u32 - 1).to_le_bytes(),
        &0u64.to_le_bytes(),
        &row.to_le_bytes(),
        &other.to_le_bytes(),
    ];
    let results = interpreted_and_compiled(&dev, &m, "counted", n, &[&p64(pa)], &params);
    for r in &results {
        let rep = r
            .as_ref()
            .expect_err("the second access reaches the red zone");
        assert_eq!(thread_and_line(rep).1, Some(11), "{rep:?}");
    }
    // A step of 0 in a register: the loop never ends.
    let m = dev.load_module(&strided_ptx("lt", "s32")).unwrap();
    for mode in [JitMode::Off, JitMode::Always] {
        let po = dev.alloc(4 * n).unwrap();
        let params: [&[u8]; 7] = [
            &p64(pa),
            &p64(po),
            &i32b(n as i32),
            &0u32.to_le_bytes(),
            &10u32.to_le_bytes(),
            &0u32.to_le_bytes(),
            &0u32.to_le_bytes(),
        ];
        let mut c = cfg((n as u32).div_ceil(64), 64, mode);
        c.instruction_budget = Some(1_000_000);
        match dev.launch(&m, "strided", &c, &params) {
            Err(LaunchError::Fault { report, .. }) => {
                assert_eq!(report.kind, CheckKind::BudgetExceeded, "{mode:?}")
            }
            r => panic!("{mode:?}: expected the budget to stop the loop, got {r:?}"),
        }
        dev.free(po).unwrap();
    }
}
