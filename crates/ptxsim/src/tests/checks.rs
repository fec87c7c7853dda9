//! One planted bug per checker class (NVRTC output of `ptx/checks.cu`): the exact report
//! (kind, kernel, block, thread, address, allocation, source line), and clean runs.

use super::util::*;
use crate::*;

const PTX: &str = include_str!("ptx/checks.ptx");
const SRC: &str = include_str!("ptx/checks.cu");

/// The 1-based line of `checks.cu` containing `marker`.
fn line_of(marker: &str) -> u32 {
    SRC.lines()
        .position(|l| l.contains(marker))
        .expect("marker") as u32
        + 1
}

fn fault(r: Result<LaunchReport, LaunchError>) -> CheckReport {
    match r {
        Err(LaunchError::Fault { report, .. }) => *report,
        other => panic!("expected a fault, got {other:?}"),
    }
}

fn cfg(grid: u32, block: u32) -> LaunchConfig {
    config((grid, 1, 1), (block, 1, 1))
}

#[test]
fn out_of_bounds_global_read() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let n = 300usize;
    let a = dev.alloc(n * 4).unwrap();
    let out = dev.alloc(n * 4).unwrap();
    let r = fault(dev.launch(
        &m,
        "oob_read",
        &cfg(3, 128),
        &[&p64(a), &p64(out), &i32b(n as i32)],
    ));
    assert_eq!(r.kind, CheckKind::OutOfBounds);
    assert_eq!(r.kernel, "oob_read");
    assert_eq!((r.block, r.thread), ((2, 0, 0), (300 - 256, 0, 0)));
    assert_eq!(r.address, a + 1200);
    assert_eq!(r.size, 4);
    assert_eq!(
        r.allocation.as_deref(),
        Some(format!("4 bytes past the end of a 1200-byte global allocation at 0x{a:x}").as_str())
    );
    assert_eq!(
        r.line.as_ref().map(|l| l.line),
        Some(line_of("out[i < n ? i : 0] = a[i]"))
    );
    assert!(r.message.contains("global load"), "{}", r.message);
}

#[test]
fn misaligned_load() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let base = dev.alloc(256).unwrap();
    let out = dev.alloc(256).unwrap();
    let r = fault(dev.launch(&m, "misaligned", &cfg(1, 32), &[&p64(base), &p64(out)]));
    assert_eq!(r.kind, CheckKind::Misaligned);
    assert_eq!(r.thread, (5, 0, 0));
    assert_eq!(r.address, base + 22);
    assert_eq!(r.line.map(|l| l.line), Some(line_of("(t == 5 ? 2 : 0)")));
}

#[test]
fn use_after_free() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let p = dev.alloc(1024).unwrap();
    dev.free(p).unwrap();
    let r = fault(dev.launch(&m, "uaf", &cfg(1, 64), &[&p64(p)]));
    assert_eq!(r.kind, CheckKind::UseAfterFree);
    assert_eq!(r.thread, (0, 0, 0));
    assert_eq!(r.address, p);
    assert!(r
        .allocation
        .unwrap()
        .contains("1024-byte global allocation"));
}

#[test]
fn shared_race_and_the_barrier_that_fixes_it() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let out = dev.alloc(512).unwrap();
    let r = dev.launch(&m, "race", &cfg(2, 128), &[&p64(out)]).unwrap();
    // Warp 0 runs first: it reads s[64..96] before warp 2 writes it (the write races with
    // that read), then warp 2 reads s[0..32] that warp 0 wrote (the read races with that
    // write). One report per racing instruction.
    assert_eq!(r.reports.len(), 2, "{:#?}", r.reports);
    let line = line_of("missing __syncthreads") - 1;
    let (w, rd) = (&r.reports[0], &r.reports[1]);
    for rep in [w, rd] {
        assert_eq!(rep.kind, CheckKind::SharedRace);
        assert_eq!(rep.block, (0, 0, 0));
        assert_eq!(rep.space, "shared");
    }
    assert_eq!(w.thread, (64, 0, 0));
    assert_eq!(w.line.as_ref().map(|l| l.line), Some(line));
    assert!(
        w.message.contains("write of 4 bytes") && w.message.contains("thread (0,0,0)"),
        "{}",
        w.message
    );
    assert_eq!(rd.thread, (64, 0, 0));
    assert_eq!(rd.line.as_ref().map(|l| l.line), Some(line + 2));
    assert!(
        rd.message.contains("read of 4 bytes") && rd.message.contains("write"),
        "{}",
        rd.message
    );
    let r = dev
        .launch(&m, "race_fixed", &cfg(2, 128), &[&p64(out)])
        .unwrap();
    assert!(r.reports.is_empty(), "{:#?}", r.reports);
    let o = download_i32(&dev, out, 128);
    for (t, &x) in o.iter().enumerate() {
        assert_eq!(x, ((t + 64) % 128) as i32);
    }
    // With the checker off there is no report.
    let mut c = cfg(2, 128);
    c.check = false;
    assert!(dev
        .launch(&m, "race", &c, &[&p64(out)])
        .unwrap()
        .reports
        .is_empty());
}

#[test]
fn divergent_barrier() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let out = dev.alloc(512).unwrap();
    let r = fault(dev.launch(&m, "div_barrier", &cfg(1, 64), &[&p64(out)]));
    assert_eq!(r.kind, CheckKind::DivergentBarrier);
    assert_eq!(r.thread, (0, 0, 0));
    assert_eq!(
        r.line.map(|l| l.line),
        Some(line_of("if (t % 32 < 16)") + 1)
    );
}

#[test]
fn shuffle_from_inactive_lanes() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let out = dev.alloc(128).unwrap();
    let r = dev
        .launch(&m, "bad_shuffle", &cfg(1, 32), &[&p64(out)])
        .unwrap();
    assert_eq!(r.reports.len(), 1, "{:#?}", r.reports);
    assert_eq!(r.reports[0].kind, CheckKind::InactiveLaneShuffle);
    assert_eq!(r.reports[0].thread, (0, 0, 0));
    assert_eq!(
        r.reports[0].line.as_ref().map(|l| l.line),
        Some(line_of("__shfl_sync(0x0000ffff"))
    );
}

#[test]
fn local_memory_out_of_bounds() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let out = dev.alloc(256).unwrap();
    let r = dev
        .launch(&m, "local_oob", &cfg(1, 32), &[&p64(out), &i32b(2)])
        .unwrap();
    assert!(r.reports.is_empty());
    let r = fault(dev.launch(&m, "local_oob", &cfg(1, 32), &[&p64(out), &i32b(100)]));
    assert_eq!(r.kind, CheckKind::OutOfBounds);
    assert_eq!(r.space, "local");
    assert_eq!(r.thread, (0, 0, 0));
}

#[test]
fn assertion_failure_is_a_trap_naming_the_thread() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let out = dev.alloc(256).unwrap();
    let r = fault(dev.launch(&m, "asserts", &cfg(1, 32), &[&p64(out)]));
    assert_eq!(r.kind, CheckKind::Trap);
    assert_eq!(r.thread, (3, 0, 0));
    assert!(
        r.message.contains("Assertion `t != 3` failed"),
        "{}",
        r.message
    );
}

/// A kernel where thread t of warp w loads a 16-byte vector at `p + t*16 + w*off` into the
/// address register's own pair, so that a half-done vector load would corrupt the address
/// reported.
const VEC_LOAD_PTX: &str = r#"
.version 8.0
.target sm_80
.address_size 64
.visible .entry vload(.param .u64 p, .param .u64 off)
{
    .reg .b32 %t, %w;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [p];
    ld.param.u64 %rd3, [off];
    mov.u32 %t, %tid.x;
    shr.u32 %w, %t, 5;
    cvt.u64.u32 %rd4, %w;
    mul.lo.u64 %rd3, %rd3, %rd4;
    mul.wide.u32 %rd2, %t, 16;
    add.u64 %rd1, %rd1, %rd2;
    add.u64 %rd1, %rd1, %rd3;
    ld.global.v2.u64 {%rd1, %rd2}, [%rd1];
    ret;
}
"#;

/// Warp 0 loads in bounds (filling the instruction's translation cache, the fast path), warp
/// 1's last lane reaches 8 bytes past the end: the report names that lane and the address it
/// used, unchanged by the elements other lanes loaded. Then warp 1 with an 8-byte offset:
/// 16-byte vectors at 8-aligned addresses are misaligned, with the cache warm from warp 0.
#[test]
fn vector_loads_past_the_end_or_misaligned_after_in_bounds_warps() {
    let dev = Device::new();
    let m = dev.load_module(VEC_LOAD_PTX).unwrap();
    let bytes = 64 * 16 - 8;
    let p = dev.alloc(bytes).unwrap();
    dev.write(p, 0, &vec![0xAB; bytes]).unwrap();
    let mut c = cfg(1, 64);
    c.threads = 1;
    let r = fault(dev.launch(&m, "vload", &c, &[&p64(p), &0u64.to_le_bytes()]));
    assert_eq!(r.kind, CheckKind::OutOfBounds, "{r:?}");
    assert_eq!(r.thread, (63, 0, 0));
    assert_eq!(r.address, p + 63 * 16);
    let r = fault(dev.launch(&m, "vload", &c, &[&p64(p), &8u64.to_le_bytes()]));
    assert_eq!(r.kind, CheckKind::Misaligned, "{r:?}");
    assert_eq!(r.thread, (32, 0, 0));
    assert_eq!(r.address, p + 32 * 16 + 8);
}

/// Warp 0 reads `s[lane]` with `ld.shared`; warp 1 then writes the same words through generic
/// pointers (`cvta.shared`), with no barrier between: `mode` 0 writes `s[lane]` (a race with
/// warp 0's reads), 1 writes `s[lane + 32]` (no race).
const GENERIC_WRITE_PTX: &str = r#"
.version 8.0
.target sm_80
.address_size 64
.visible .entry gwrite(.param .u32 mode)
{
    .shared .align 4 .b8 s[256];
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<6>;
    ld.param.u32 %r7, [mode];
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 31;
    shl.b32 %r3, %r2, 2;
    setp.ge.u32 %p1, %r1, 32;
    @%p1 bra WRITE;
    mov.u32 %r4, s;
    add.u32 %r4, %r4, %r3;
    ld.shared.u32 %r5, [%r4];
    bra.uni DONE;
WRITE:
    shl.b32 %r6, %r7, 7;
    add.u32 %r3, %r3, %r6;
    mov.u64 %rd1, s;
    cvta.shared.u64 %rd2, %rd1;
    cvt.u64.u32 %rd3, %r3;
    add.u64 %rd4, %rd2, %rd3;
    st.u32 [%rd4], %r1;
DONE:
    ret;
}
"#;

/// Reads of an epoch without writes are only logged until its first write; a write through a
/// generic pointer is checked lane by lane, and must see the logged reads too.
#[test]
fn a_generic_write_races_with_shared_reads_logged_before_it() {
    let dev = Device::new();
    let m = dev.load_module(GENERIC_WRITE_PTX).unwrap();
    let mut c = cfg(1, 64);
    c.threads = 1;
    let r = dev
        .launch(&m, "gwrite", &c, &[&0u32.to_le_bytes()])
        .unwrap();
    assert_eq!(r.reports.len(), 1, "{:#?}", r.reports);
    let rep = &r.reports[0];
    assert_eq!(rep.kind, CheckKind::SharedRace);
    assert_eq!(rep.thread, (32, 0, 0));
    assert!(
        rep.message
            .contains("write of 4 bytes at shared offset 0x0")
            && rep.message.contains("read")
            && rep.message.contains("thread (0,0,0)"),
        "{}",
        rep.message
    );
    let r = dev
        .launch(&m, "gwrite", &c, &[&1u32.to_le_bytes()])
        .unwrap();
    assert!(r.reports.is_empty(), "{:#?}", r.reports);
}

/// A block of 64 and one shared word, by `mode`:
/// 0. thread 0 sets the word to 0 (line 10) and every thread adds 1 to it atomically (line 20)
///    with no barrier between: the atomic updates race with thread 0's write;
/// 1. the same with a barrier between: no race;
/// 2. (after a barrier) the atomic updates, then thread 5 writes the word (line 30) with no
///    barrier: the write races with the updates of several threads;
/// 3. (after a barrier) each thread reads the word (line 40) before its own atomic update, as
///    a compare-and-swap loop does: no race.
///
/// Each thread writes the value it read (mode 3) or 0 to `out[t]`.
const ATOMIC_RACE_PTX: &str = r#"
.version 8.0
.target sm_80
.address_size 64
.file 1 "atomic_race.cu"
.visible .entry atomic_race(.param .u64 out, .param .u32 mode)
{
    .shared .align 4 .b32 s;
    .reg .pred %p<6>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [mode];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, 0;
    mov.u32 %r10, 0;
    setp.eq.u32 %p1, %r2, 0;
    setp.eq.u32 %p2, %r1, 0;
    and.pred %p3, %p1, %p2;
    .loc 1 10 0
    @%p3 st.shared.u32 [s], %r3;
    @%p2 bra ADD;
    bar.sync 0;
    setp.eq.u32 %p4, %r1, 3;
    @!%p4 bra ADD;
    .loc 1 40 0
    ld.shared.u32 %r10, [s];
ADD:
    .loc 1 20 0
    atom.shared.add.u32 %r4, [s], 1;
    setp.ne.u32 %p5, %r1, 2;
    @%p5 bra DONE;
    setp.ne.u32 %p5, %r2, 5;
    @%p5 bra DONE;
    .loc 1 30 0
    st.shared.u32 [s], %r2;
DONE:
    mul.wide.u32 %rd2, %r2, 4;
    cvta.to.global.u64 %rd3, %rd1;
    add.u64 %rd4, %rd3, %rd2;
    st.global.u32 [%rd4], %r10;
    ret;
}
"#;

#[test]
fn plain_writes_race_with_atomic_updates_and_reads_do_not() {
    let dev = Device::new();
    let m = dev.load_module(ATOMIC_RACE_PTX).unwrap();
    let out = dev.alloc(64 * 4).unwrap();
    let update = "atomic update of 4 bytes at shared offset 0x0 conflicts with a write of byte 0x0";
    let write = "write of 4 bytes at shared offset 0x0 conflicts with an atomic update of byte 0x0";
    // Per mode, the reports: (thread, line, what the message says). In mode 2, warp 1's
    // updates come after thread 5's write and race with it too.
    type Report = (u32, u32, String);
    let cases: [(u32, Vec<Report>); 4] = [
        (0, vec![(1, 20, format!("{update} by thread (0,0,0)"))]),
        (1, vec![]),
        (
            2,
            vec![
                (5, 30, format!("{write} by several threads")),
                (32, 20, format!("{update} by thread (5,0,0)")),
            ],
        ),
        (3, vec![]),
    ];
    for (mode, want) in cases {
        let r = dev
            .launch(
                &m,
                "atomic_race",
                &cfg(1, 64),
                &[&p64(out), &mode.to_le_bytes()],
            )
            .unwrap();
        assert_eq!(r.reports.len(), want.len(), "mode {mode}: {:#?}", r.reports);
        for (rep, (t, line, msg)) in r.reports.iter().zip(&want) {
            assert_eq!(rep.kind, CheckKind::SharedRace);
            assert_eq!(rep.thread, (*t, 0, 0), "mode {mode}: {rep:?}");
            assert_eq!(rep.line.as_ref().map(|l| l.line), Some(*line), "{rep:?}");
            assert!(
                rep.message.contains(msg.as_str()),
                "mode {mode}: {}",
                rep.message
            );
        }
    }
}

/// A trap in a header's function inlined into another header's, inlined into cell line 7, as
/// NVRTC writes it with `-lineinfo` (`.loc ..., function_name ..., inlined_at ...`).
const INLINED_TRAP_PTX: &str = r#"
.version 8.0
.target sm_80
.address_size 64
.visible .entry inlined_trap(.param .u64 out, .param .u32 bad)
{
    .reg .pred %p<2>;
    .reg .b32 %r<3>;
    .reg .b64 %rd<3>;
$L__func_begin0:
    .loc 1 5 0
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [bad];
    .loc 1 7 5
    mov.u32 %r2, %tid.x;
    .loc 2 40 3, function_name $L__info_string0, inlined_at 1 7 5
    setp.eq.u32 %p1, %r2, %r1;
    .loc 3 94 9, function_name $L__info_string1, inlined_at 2 40 3
    @%p1 trap;
    .loc 1 8 5
    cvta.to.global.u64 %rd2, %rd1;
    st.global.u32 [%rd2], %r2;
    ret;
}
	.file	1 "cell.cu"
	.file	2 "/x/include/cooperative_groups/details/grid.h"
	.file	3 "/x/include/cooperative_groups/details/sync.h"
"#;

#[test]
fn a_trap_inlined_from_headers_carries_its_chain_of_call_sites() {
    let dev = Device::new();
    let m = dev.load_module(INLINED_TRAP_PTX).unwrap();
    let out = dev.alloc(4).unwrap();
    let r = fault(dev.launch(&m, "inlined_trap", &cfg(1, 32), &[&p64(out), &i32b(5)]));
    assert_eq!(r.kind, CheckKind::Trap);
    assert_eq!(r.thread, (5, 0, 0));
    let line = r.line.expect("line information");
    assert_eq!(
        (line.file.as_str(), line.line),
        ("/x/include/cooperative_groups/details/sync.h", 94)
    );
    let chain: Vec<(&str, u32, u32)> = line
        .inlined_at
        .iter()
        .map(|l| (l.file.as_str(), l.line, l.column))
        .collect();
    assert_eq!(
        chain,
        [
            ("/x/include/cooperative_groups/details/grid.h", 40, 3),
            ("cell.cu", 7, 5)
        ]
    );
    // A line of the cell itself has no call sites.
    let r = dev.launch(&m, "inlined_trap", &cfg(1, 32), &[&p64(out), &i32b(99)]);
    assert!(r.is_ok(), "{r:?}");
}
