//! Shared-memory runs in compiled code (`jit::emit::shared`) against the interpreter: the same
//! results (and a CPU reference), the same faults where an access of a run is out of bounds or
//! misaligned, and the same race reports, with reads logged, recorded, and logged past the
//! log's capacity.

use super::jit::cfg;
use super::util::*;
use crate::*;

/// Thread t of a block of 128 fills two shared words, then (after a barrier) reads a run of
/// eight accesses through two address registers: `a = s + (t % 64) * 8` (+0, +4, a v2 at
/// +8, +504) and `b = s + (t % 16) * 4` (+0, +64, +128, +960), and writes a hash of them.
/// Thread `bad` adds `extra` bytes to both registers.
const TILE: &str = r#"
.version 8.0
.target sm_80
.address_size 64
.file 1 "tile.cu"
.visible .entry tile(.param .u64 out, .param .u32 bad, .param .u32 extra)
{
    .shared .align 16 .b8 s[1024];
    .reg .pred %p<3>;
    .reg .b32 %r<40>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [bad];
    ld.param.u32 %r2, [extra];
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, s;
    shl.b32 %r5, %r3, 2;
    add.u32 %r6, %r4, %r5;
    mad.lo.u32 %r7, %r3, 3, 1;
    xor.b32 %r8, %r3, 85;
    .loc 1 10 0
    st.shared.u32 [%r6], %r7;
    .loc 1 11 0
    st.shared.u32 [%r6+512], %r8;
    bar.sync 0;
    setp.eq.u32 %p1, %r3, %r1;
    selp.u32 %r9, %r2, 0, %p1;
    and.b32 %r10, %r3, 63;
    shl.b32 %r11, %r10, 3;
    add.u32 %r12, %r4, %r11;
    add.u32 %r12, %r12, %r9;
    and.b32 %r13, %r3, 15;
    shl.b32 %r14, %r13, 2;
    add.u32 %r15, %r4, %r14;
    add.u32 %r15, %r15, %r9;
    .loc 1 20 0
    ld.shared.u32 %r16, [%r12];
    .loc 1 21 0
    ld.shared.u32 %r17, [%r15];
    .loc 1 22 0
    ld.shared.u32 %r18, [%r12+4];
    .loc 1 23 0
    ld.shared.u32 %r19, [%r15+64];
    .loc 1 24 0
    ld.shared.v2.u32 {%r20, %r21}, [%r12+8];
    .loc 1 25 0
    ld.shared.u32 %r22, [%r15+128];
    .loc 1 26 0
    ld.shared.u32 %r23, [%r15+960];
    .loc 1 27 0
    ld.shared.u32 %r24, [%r12+504];
    .loc 1 28 0
    mad.lo.u32 %r25, %r16, 31, %r17;
    mad.lo.u32 %r25, %r25, 31, %r18;
    mad.lo.u32 %r25, %r25, 31, %r19;
    mad.lo.u32 %r25, %r25, 31, %r20;
    mad.lo.u32 %r25, %r25, 31, %r21;
    mad.lo.u32 %r25, %r25, 31, %r22;
    mad.lo.u32 %r25, %r25, 31, %r23;
    mad.lo.u32 %r25, %r25, 31, %r24;
    mov.u32 %r26, %ctaid.x;
    mov.u32 %r27, %ntid.x;
    mad.lo.u32 %r28, %r26, %r27, %r3;
    mul.wide.u32 %rd2, %r28, 4;
    cvta.to.global.u64 %rd3, %rd1;
    add.u64 %rd4, %rd3, %rd2;
    st.global.u32 [%rd4], %r25;
    ret;
}
"#;

/// What `tile` writes for thread `t` of a block (no thread displaced).
fn tile_reference(t: u32) -> u32 {
    let mut s = [0u32; 256];
    for u in 0..128u32 {
        s[u as usize] = u * 3 + 1;
        s[u as usize + 128] = u ^ 85;
    }
    let (a, b) = (((t % 64) * 2) as usize, (t % 16) as usize);
    let vals = [
        s[a],
        s[b],
        s[a + 1],
        s[b + 16],
        s[a + 2],
        s[a + 3],
        s[b + 32],
        s[b + 240],
        s[a + 126],
    ];
    vals[1..]
        .iter()
        .fold(vals[0], |h, &v| h.wrapping_mul(31).wrapping_add(v))
}

/// The result of a launch of `kernel` over `grid` blocks of `block` threads with an output of
/// `n` words as the first parameter: the output and the reports, or the fault.
#[allow(clippy::too_many_arguments)]
fn launch(
    dev: &Device,
    m: &Module,
    kernel: &str,
    (grid, block): (u32, u32),
    n: usize,
    rest: &[&[u8]],
    mode: JitMode,
    check: bool,
) -> Result<(Vec<u32>, Vec<CheckReport>), Box<CheckReport>> {
    let po = dev.alloc(n * 4).unwrap();
    let out = p64(po);
    let params: Vec<&[u8]> = [&out[..]].into_iter().chain(rest.iter().copied()).collect();
    let mut c = cfg(grid, block, mode);
    c.check = check;
    let r = dev.launch(m, kernel, &c, &params);
    let res = match r {
        Ok(r) => {
            assert_eq!(r.jit, mode == JitMode::Always);
            Ok((download_u32(dev, po, n), r.reports))
        }
        Err(LaunchError::Fault { report, .. }) => Err(report),
        Err(e) => panic!("{kernel} ({mode:?}): {e:?}"),
    };
    dev.free(po).unwrap();
    res
}

/// What must agree between an interpreted and a compiled report.
type Key = (CheckKind, Dim3, Dim3, u64, Option<u32>, String);
fn key(r: &CheckReport) -> Key {
    (
        r.kind,
        r.block,
        r.thread,
        r.address,
        r.line.as_ref().map(|l| l.line),
        r.message.clone(),
    )
}

#[test]
fn shared_runs_compute_and_fault_like_the_interpreter() {
    let dev = Device::new();
    let m = dev.load_module(TILE).unwrap();
    let mut rng = Rng(seed());
    let grid = 2 + rng.below(3) as u32;
    let n = grid as usize * 128;
    let want: Vec<u32> = (0..n as u32).map(|g| tile_reference(g % 128)).collect();
    let t = rng.below(128) as u32;
    // (bad thread, extra bytes, what is expected): in bounds; the head out of bounds; the
    // head misaligned; a later access of the run out of bounds; one 8-aligned but not for
    // the v2 (+4).
    let cases = [
        (1000, 0, None),
        (t, 4096, Some((CheckKind::OutOfBounds, 20))),
        (t, 2, Some((CheckKind::Misaligned, 20))),
        (127, 16, Some((CheckKind::OutOfBounds, 26))),
        (t, 4, Some((CheckKind::Misaligned, 24))),
    ];
    for (bad, extra, expect) in cases {
        let rest: [&[u8]; 2] = [&bad.to_le_bytes(), &(extra as u32).to_le_bytes()];
        let mut keys = Vec::new();
        for mode in [JitMode::Off, JitMode::Always] {
            let r = launch(&dev, &m, "tile", (grid, 128), n, &rest, mode, true);
            match (&r, expect) {
                (Ok((out, reports)), None) => {
                    assert!(reports.is_empty(), "{reports:?}");
                    assert_eq!(out, &want, "{mode:?}");
                }
                (Err(f), Some((kind, line))) => {
                    assert_eq!(f.kind, kind, "{mode:?} {bad} {extra}: {f:?}");
                    assert_eq!(f.thread, (bad, 0, 0), "{mode:?} {bad} {extra}: {f:?}");
                    assert_eq!(f.line.as_ref().map(|l| l.line), Some(line), "{f:?}");
                    keys.push(key(f));
                }
                _ => panic!("{mode:?} {bad} {extra}: {r:?}"),
            }
        }
        if let [a, b] = &keys[..] {
            assert_eq!(a, b);
        }
    }
    // With the checker off: bounds and alignment only, the same results.
    let rest: [&[u8]; 2] = [&1000u32.to_le_bytes(), &0u32.to_le_bytes()];
    let r = launch(
        &dev,
        &m,
        "tile",
        (grid, 128),
        n,
        &rest,
        JitMode::Always,
        false,
    );
    assert_eq!(r.map(|r| r.0), Ok(want));
}

/// A block of 128: thread t writes `s[t] = t` (line 10); then by `mode`:
/// 0. reads `s[(t + 32) % 128]` with no barrier (line 20): races with another warp's write,
///    and that write (line 10) with the read;
/// 1. the same after a barrier: no race;
/// 2. after a barrier, reads `s[t]` (line 30) and writes it back plus one (line 31): its own word;
/// 3. after a barrier, every thread reads `s[t % 32]` (line 40), then thread 100 writes `s[5]`
///    (line 41) with no barrier: a race with the reads of several threads;
/// 4. after a barrier, writes `s[t + 128]` (so that the epoch has a write: later warps record
///    their reads in compiled code), reads `s[t % 32]` (line 60), and thread 100 writes `s[5]`
///    (line 61): a race with the reads of several threads;
/// 5. as 4, reading `s[t]`, and thread 100 writes `s[40]`: a race with thread 40's read;
/// 6. after a barrier, reads `s[t % 32]`, `s[t % 32 + 32]` and `s[t % 32 + 64]` (one logged
///    progression a thread), adds them (line 70), and thread 100 writes `s[70]` (line 71):
///    a race with the reads of several threads.
///
/// Each thread writes what it read to `out[t]`.
const RACES: &str = r#"
.version 8.0
.target sm_80
.address_size 64
.file 1 "races.cu"
.visible .entry races(.param .u64 out, .param .u32 mode)
{
    .shared .align 4 .b8 s[1024];
    .reg .pred %p<6>;
    .reg .b32 %r<20>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [mode];
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, s;
    shl.b32 %r5, %r3, 2;
    add.u32 %r6, %r4, %r5;
    .loc 1 10 0
    st.shared.u32 [%r6], %r3;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra NOBAR;
    bar.sync 0;
    setp.eq.u32 %p2, %r1, 1;
    @%p2 bra NOBAR;
    setp.eq.u32 %p3, %r1, 2;
    @%p3 bra OWN;
    setp.eq.u32 %p5, %r1, 6;
    @%p5 bra STRIDED;
    setp.ge.u32 %p5, %r1, 4;
    @%p5 bra EAGER;
    and.b32 %r7, %r3, 31;
    shl.b32 %r8, %r7, 2;
    add.u32 %r9, %r4, %r8;
    .loc 1 40 0
    ld.shared.u32 %r10, [%r9];
    setp.ne.u32 %p4, %r3, 100;
    @%p4 bra DONE;
    .loc 1 41 0
    st.shared.u32 [%r4+20], %r3;
    bra.uni DONE;
STRIDED:
    and.b32 %r7, %r3, 31;
    shl.b32 %r8, %r7, 2;
    add.u32 %r9, %r4, %r8;
    ld.shared.u32 %r10, [%r9];
    ld.shared.u32 %r18, [%r9+128];
    ld.shared.u32 %r19, [%r9+256];
    .loc 1 70 0
    add.u32 %r10, %r10, %r18;
    add.u32 %r10, %r10, %r19;
    setp.ne.u32 %p4, %r3, 100;
    @%p4 bra DONE;
    .loc 1 71 0
    st.shared.u32 [%r4+280], %r3;
    bra.uni DONE;
EAGER:
    st.shared.u32 [%r6+512], %r3;
    setp.eq.u32 %p5, %r1, 4;
    and.b32 %r7, %r3, 31;
    selp.u32 %r15, %r7, %r3, %p5;
    shl.b32 %r8, %r15, 2;
    add.u32 %r9, %r4, %r8;
    .loc 1 60 0
    ld.shared.u32 %r10, [%r9];
    setp.ne.u32 %p4, %r3, 100;
    @%p4 bra DONE;
    selp.u32 %r16, 20, 160, %p5;
    add.u32 %r17, %r4, %r16;
    .loc 1 61 0
    st.shared.u32 [%r17], %r3;
    bra.uni DONE;
OWN:
    .loc 1 30 0
    ld.shared.u32 %r10, [%r6];
    add.u32 %r11, %r10, 1;
    .loc 1 31 0
    st.shared.u32 [%r6], %r11;
    bra.uni DONE;
NOBAR:
    add.u32 %r12, %r3, 32;
    and.b32 %r12, %r12, 127;
    shl.b32 %r13, %r12, 2;
    add.u32 %r14, %r4, %r13;
    .loc 1 20 0
    ld.shared.u32 %r10, [%r14];
DONE:
    mul.wide.u32 %rd2, %r3, 4;
    cvta.to.global.u64 %rd3, %rd1;
    add.u64 %rd4, %rd3, %rd2;
    st.global.u32 [%rd4], %r10;
    ret;
}
"#;

/// The block fills `s[k] = k` for k < 256, and after a barrier thread t reads
/// `s[(t + 7i) % 256]` for i < `iters` in a loop, one access a run, one log entry each. Then
/// the block's last thread writes `s[3]` (line 50) with no barrier: a race with the reads of
/// several threads. Writes the sum of its reads. 1,024 threads of 20 reads fill the compiled
/// read log (16,384 entries) over many calls; 32 threads of 600 reads, within one call.
const MANY_READS: &str = r#"
.version 8.0
.target sm_80
.address_size 64
.file 1 "many.cu"
.visible .entry many_reads(.param .u64 out, .param .u32 iters)
{
    .shared .align 4 .b8 s[1024];
    .reg .pred %p<4>;
    .reg .b32 %r<20>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r15, [iters];
    mov.u32 %r17, %ntid.x;
    sub.u32 %r16, %r17, 1;
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, s;
    mov.u32 %r5, %r3;
FILL:
    setp.ge.u32 %p1, %r5, 256;
    @%p1 bra FILLED;
    shl.b32 %r6, %r5, 2;
    add.u32 %r7, %r4, %r6;
    st.shared.u32 [%r7], %r5;
    add.u32 %r5, %r5, %r17;
    bra.uni FILL;
FILLED:
    bar.sync 0;
    mov.u32 %r8, 0;
    mov.u32 %r9, 0;
    mov.u32 %r10, %r3;
LOOP:
    and.b32 %r11, %r10, 255;
    shl.b32 %r12, %r11, 2;
    add.u32 %r13, %r4, %r12;
    ld.shared.u32 %r14, [%r13];
    add.u32 %r9, %r9, %r14;
    add.u32 %r10, %r10, 7;
    add.u32 %r8, %r8, 1;
    setp.lt.u32 %p2, %r8, %r15;
    @%p2 bra LOOP;
    setp.ne.u32 %p3, %r3, %r16;
    @%p3 bra DONE;
    .loc 1 50 0
    st.shared.u32 [%r4+12], %r3;
DONE:
    mul.wide.u32 %rd2, %r3, 4;
    cvta.to.global.u64 %rd3, %rd1;
    add.u64 %rd4, %rd3, %rd2;
    st.global.u32 [%rd4], %r9;
    ret;
}
"#;

/// The lines of the race reports of a launch.
fn race_lines(reports: &[CheckReport]) -> Vec<Option<u32>> {
    reports
        .iter()
        .map(|r| {
            assert_eq!(r.kind, CheckKind::SharedRace, "{r:?}");
            r.line.as_ref().map(|l| l.line)
        })
        .collect()
}

#[test]
fn races_through_compiled_shared_runs_are_the_interpreters() {
    let dev = Device::new();
    let m = dev.load_module(RACES).unwrap();
    // (mode, the lines of the expected race reports, what thread t reads)
    let read_of = |mode: u32, t: u32| match mode {
        0 | 1 => (t + 32) % 128,
        2 | 5 => t,
        6 => 3 * (t % 32) + 96,
        _ => t % 32,
    };
    for (mode, lines) in [
        (0u32, vec![Some(10), Some(20)]),
        (1, vec![]),
        (2, vec![]),
        (3, vec![Some(41)]),
        (4, vec![Some(61)]),
        (5, vec![Some(61)]),
        (6, vec![Some(71)]),
    ] {
        let mut keys = Vec::new();
        for jit in [JitMode::Off, JitMode::Always] {
            let rest: [&[u8]; 1] = [&mode.to_le_bytes()];
            let (out, reports) = launch(&dev, &m, "races", (1, 128), 128, &rest, jit, true)
                .unwrap_or_else(|f| panic!("{mode} {jit:?}: {f:?}"));
            assert_eq!(race_lines(&reports), lines, "{mode} {jit:?}: {reports:#?}");
            let other = match mode {
                3 | 4 | 6 => "several threads",
                5 => "thread (40,0,0)",
                _ => "",
            };
            assert!(
                reports.iter().all(|r| r.message.contains(other)),
                "{mode} {jit:?}: {reports:#?}"
            );
            if mode != 0 {
                // (Mode 0 reads words other warps may not have written yet.)
                let want: Vec<u32> = (0..128).map(|t| read_of(mode, t)).collect();
                assert_eq!(out, want, "{mode} {jit:?}");
            }
            keys.push(reports.iter().map(key).collect::<Vec<_>>());
        }
        assert_eq!(keys[0], keys[1], "mode {mode}");
    }
    let m = dev.load_module(MANY_READS).unwrap();
    for (threads, iters) in [(1024u32, 20u32), (32, 600)] {
        let want: Vec<u32> = (0..threads)
            .map(|t| (0..iters).map(|i| (t + 7 * i) % 256).sum())
            .collect();
        let mut keys = Vec::new();
        for jit in [JitMode::Off, JitMode::Always] {
            let rest: [&[u8]; 1] = [&iters.to_le_bytes()];
            let shape = (1, threads);
            let (out, reports) = launch(
                &dev,
                &m,
                "many_reads",
                shape,
                threads as usize,
                &rest,
                jit,
                true,
            )
            .unwrap_or_else(|f| panic!("{jit:?}: {f:?}"));
            assert_eq!(
                race_lines(&reports),
                vec![Some(50)],
                "{jit:?}: {reports:#?}"
            );
            assert_eq!(out, want, "{jit:?}");
            keys.push(reports.iter().map(key).collect::<Vec<_>>());
        }
        assert_eq!(keys[0], keys[1], "{threads} threads");
    }
}

/// A tile loop as in a tiled matrix product: each tile, thread t of a block of 64 loads
/// `inp[k * total + gid]` into its shared word, and after a barrier reads its neighbour's
/// word `(t + 1) % 64` into a running hash; a second barrier (left out when `sync2` is 0, a
/// race between a tile's reads and the next tile's stores) ends the tile. The branch back
/// to the loop's head lies past the second barrier, outside the head's region, so compiled
/// code is entered there from the interpreter. `%tid.y` (0) keeps the block tier out.
const TILES: &str = r#"
.version 8.0
.target sm_80
.address_size 64
.file 1 "tiles.cu"
.visible .entry tiles(.param .u64 out, .param .u64 inp, .param .u32 tiles, .param .u32 sync2)
{
    .shared .align 4 .b8 s[256];
    .reg .pred %p<3>;
    .reg .b32 %r<24>;
    .reg .b64 %rd<9>;
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [inp];
    ld.param.u32 %r1, [tiles];
    ld.param.u32 %r2, [sync2];
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, %tid.y;
    mov.u32 %r5, %ctaid.x;
    mov.u32 %r6, %nctaid.x;
    shl.b32 %r7, %r6, 6;
    shl.b32 %r8, %r5, 6;
    add.u32 %r9, %r8, %r3;
    add.u32 %r9, %r9, %r4;
    mov.u32 %r10, s;
    shl.b32 %r11, %r3, 2;
    add.u32 %r12, %r10, %r11;
    add.u32 %r13, %r3, 1;
    and.b32 %r13, %r13, 63;
    shl.b32 %r13, %r13, 2;
    add.u32 %r14, %r10, %r13;
    setp.ne.u32 %p2, %r2, 0;
    mov.u32 %r20, 0;
    mov.u32 %r21, 0;
HEAD:
    mad.lo.u32 %r15, %r20, %r7, %r9;
    mul.wide.u32 %rd5, %r15, 4;
    add.u64 %rd6, %rd4, %rd5;
    .loc 1 20 0
    ld.global.u32 %r16, [%rd6];
    .loc 1 21 0
    st.shared.u32 [%r12], %r16;
    bar.sync 0;
    .loc 1 23 0
    ld.shared.u32 %r17, [%r14];
    mad.lo.u32 %r21, %r21, 3, %r17;
    @!%p2 bra SKIP;
    bar.sync 0;
SKIP:
    add.u32 %r20, %r20, 1;
    setp.lt.u32 %p1, %r20, %r1;
    @%p1 bra HEAD;
    mul.wide.u32 %rd7, %r9, 4;
    add.u64 %rd8, %rd3, %rd7;
    st.global.u32 [%rd8], %r21;
    ret;
}
"#;

#[test]
fn loops_entered_at_their_head_from_the_interpreter_compute_and_fault_like_it() {
    let dev = Device::new();
    let m = dev.load_module(TILES).unwrap();
    let mut rng = Rng(seed());
    let blocks = 2 + rng.below(3) as u32;
    let total = blocks as usize * 64;
    let tiles = 3 + rng.below(4) as u32;
    let inp: Vec<u32> = (0..total * tiles as usize)
        .map(|_| rng.next() as u32)
        .collect();
    let pi = upload_u32(&dev, &inp);
    let want: Vec<u32> = (0..total)
        .map(|g| {
            let (b, t) = (g / 64, g % 64);
            (0..tiles as usize).fold(0u32, |h, k| {
                let v = inp[k * total + b * 64 + (t + 1) % 64];
                h.wrapping_mul(3).wrapping_add(v)
            })
        })
        .collect();
    // (tiles to run, sync2): in bounds; one tile too many (its loads read past `inp`); the
    // second barrier left out (a race).
    for (run, sync2) in [(tiles, 1u32), (tiles + 1, 1), (tiles, 0)] {
        let mut keys = Vec::new();
        for jit in [JitMode::Off, JitMode::Always] {
            let rest: [&[u8]; 3] = [&p64(pi), &run.to_le_bytes(), &sync2.to_le_bytes()];
            let r = launch(&dev, &m, "tiles", (blocks, 64), total, &rest, jit, true);
            let what = format!("{run} tiles of {tiles}, sync2 {sync2}, {jit:?}");
            match (&r, run > tiles, sync2) {
                (Ok((out, reports)), false, 1) => {
                    assert!(reports.is_empty(), "{what}: {reports:?}");
                    assert_eq!(out, &want, "{what}");
                }
                (Err(f), true, _) => {
                    assert_eq!(f.kind, CheckKind::OutOfBounds, "{what}: {f:?}");
                    assert_eq!(f.line.as_ref().map(|l| l.line), Some(20), "{what}");
                }
                (Ok((_, reports)), false, 0) => {
                    assert!(!reports.is_empty(), "{what}");
                    assert!(race_lines(reports)
                        .iter()
                        .all(|l| [Some(21), Some(23)].contains(l)));
                }
                _ => panic!("{what}: {r:?}"),
            }
            keys.push(match r {
                Ok((out, reports)) => Ok((out, reports.iter().map(key).collect::<Vec<_>>())),
                Err(f) => Err(key(&f)),
            });
        }
        assert_eq!(keys[0], keys[1], "{run} tiles, sync2 {sync2}");
    }
}
