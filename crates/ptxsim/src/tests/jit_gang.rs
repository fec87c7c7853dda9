//! Gangs (`jit::emit::gang`): lanes that run a checked loop four at a time, against the
//! interpreter and CPU references. Each test also asserts whether gangs ran
//! (`LaunchReport::ganged`), so that a gang function turned down everywhere cannot pass for
//! a working one, and one that must be turned down (lanes that disagree on a uniform value,
//! or reach different allocations) is seen to be.

use super::jit::cfg;
use super::jit_ragged::{ragged_reference, RAGGED};
use super::util::*;
use crate::jit::GANG;
use crate::*;

/// Thread (x, y) of the block computes `c[y][x] = Σ_k a[y·K + k] · b[k·W + x]` (fused, in
/// order): the row pointer comes from `%tid.y`, which a gang takes as uniform and checks.
const ROWDOT: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry rowdot(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u32 k, .param .u32 w)
{
  .reg .pred %p<3>;
  .reg .b32 %r<12>;
  .reg .f32 %f<5>;
  .reg .b64 %rd<14>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pb];
  ld.param.u64 %rd3, [pc];
  ld.param.u32 %r1, [k];
  ld.param.u32 %r2, [w];
  cvta.to.global.u64 %rd11, %rd1;
  cvta.to.global.u64 %rd12, %rd2;
  cvta.to.global.u64 %rd13, %rd3;
  mov.u32 %r3, %tid.x;
  mov.u32 %r4, %tid.y;
  mul.lo.s32 %r5, %r4, %r1;
  mul.wide.s32 %rd4, %r5, 4;
  add.s64 %rd5, %rd11, %rd4;
  mul.wide.s32 %rd6, %r3, 4;
  add.s64 %rd7, %rd12, %rd6;
  mul.wide.s32 %rd8, %r2, 4;
  mov.f32 %f1, 0f00000000;
  mov.u32 %r6, 0;
L1:
  ld.global.f32 %f2, [%rd5];
  ld.global.f32 %f3, [%rd7];
  fma.rn.f32 %f1, %f2, %f3, %f1;
  add.s64 %rd5, %rd5, 4;
  add.s64 %rd7, %rd7, %rd8;
  add.s32 %r6, %r6, 1;
  setp.lt.s32 %p1, %r6, %r1;
  @%p1 bra L1;
  mad.lo.s32 %r7, %r4, %r2, %r3;
  mul.wide.s32 %rd9, %r7, 4;
  add.s64 %rd10, %rd13, %rd9;
  st.global.f32 [%rd10], %f1;
  ret;
}
"#;

/// Even lanes sum `a[t..t + k]`, odd lanes `b[t..t + k]`: the lanes of a gang reach different
/// allocations unless `a` and `b` are one.
const PICK: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry pick(.param .u64 pa, .param .u64 pb, .param .u64 pout, .param .u32 k)
{
  .reg .pred %p<3>;
  .reg .b32 %r<8>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pb];
  ld.param.u64 %rd3, [pout];
  ld.param.u32 %r1, [k];
  cvta.to.global.u64 %rd4, %rd1;
  cvta.to.global.u64 %rd5, %rd2;
  mov.u32 %r2, %tid.x;
  and.b32 %r3, %r2, 1;
  setp.eq.s32 %p1, %r3, 0;
  selp.b64 %rd6, %rd4, %rd5, %p1;
  mul.wide.u32 %rd7, %r2, 4;
  add.s64 %rd8, %rd6, %rd7;
  mov.f32 %f1, 0f00000000;
  mov.u32 %r4, 0;
L1:
  ld.global.f32 %f2, [%rd8];
  add.f32 %f1, %f1, %f2;
  add.s64 %rd8, %rd8, 4;
  add.s32 %r4, %r4, 1;
  setp.lt.s32 %p2, %r4, %r1;
  @%p2 bra L1;
  cvta.to.global.u64 %rd9, %rd3;
  add.s64 %rd9, %rd9, %rd7;
  st.global.f32 [%rd9], %f1;
  ret;
}
"#;

/// Thread t keeps a running sum of the positive values of `a[t·k..][..k]` (a guarded add) and
/// stores it at every step to `out[t·k + i]`; after the loop an atomic counts the threads, so
/// the region ends where the loop does.
const GUARDED: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry guarded(.param .u64 pa, .param .u64 pout, .param .u64 pcount, .param .u32 k)
{
  .reg .pred %p<4>;
  .reg .b32 %r<12>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pout];
  ld.param.u64 %rd3, [pcount];
  ld.param.u32 %r1, [k];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  mul.lo.s32 %r6, %r5, %r1;
  mul.wide.s32 %rd4, %r6, 4;
  cvta.to.global.u64 %rd5, %rd1;
  add.s64 %rd5, %rd5, %rd4;
  cvta.to.global.u64 %rd6, %rd2;
  add.s64 %rd6, %rd6, %rd4;
  cvta.to.global.u64 %rd7, %rd3;
  mov.f32 %f1, 0f00000000;
  mov.u32 %r7, 0;
L1:
  ld.global.f32 %f2, [%rd5];
  setp.gt.f32 %p2, %f2, 0f00000000;
  @%p2 add.f32 %f1, %f1, %f2;
  st.global.f32 [%rd6], %f1;
  add.s64 %rd5, %rd5, 4;
  add.s64 %rd6, %rd6, 4;
  add.s32 %r7, %r7, 1;
  setp.lt.s32 %p3, %r7, %r1;
  @%p3 bra L1;
  atom.global.add.u32 %r8, [%rd7], 1;
  ret;
}
"#;

/// Thread t runs `outer` times an inner loop of `inner` steps `acc = acc * 0.5 + a[t + j]`
/// (fused): lanes leave a gang at the inner loop's end and park again at its next start.
const NESTED: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry nested(.param .u64 pa, .param .u64 pout, .param .u32 outer, .param .u32 inner)
{
  .reg .pred %p<3>;
  .reg .b32 %r<12>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pout];
  ld.param.u32 %r1, [outer];
  ld.param.u32 %r9, [inner];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  cvta.to.global.u64 %rd3, %rd1;
  mul.wide.s32 %rd4, %r5, 4;
  add.s64 %rd3, %rd3, %rd4;
  mov.f32 %f1, 0f00000000;
  mov.u32 %r6, 0;
OUTER:
  mov.u64 %rd5, %rd3;
  mov.u32 %r10, 0;
L1:
  ld.global.f32 %f2, [%rd5];
  fma.rn.f32 %f1, %f1, 0f3F000000, %f2;
  add.s64 %rd5, %rd5, 4;
  add.s32 %r10, %r10, 1;
  setp.lt.s32 %p2, %r10, %r9;
  @%p2 bra L1;
  add.s32 %r6, %r6, 1;
  setp.lt.s32 %p1, %r6, %r1;
  @%p1 bra OUTER;
  cvta.to.global.u64 %rd6, %rd2;
  add.s64 %rd7, %rd6, %rd4;
  st.global.f32 [%rd7], %f1;
  ret;
}
"#;

fn random_f32s(rng: &mut Rng, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| (rng.below(2001) as f32 - 1000.0) / 256.0)
        .collect()
}

/// Launch `kernel` of `m` interpreted and compiled with `args`, `config` giving the shape;
/// returns the compiled launch's report.
fn both(
    dev: &Device,
    m: &Module,
    kernel: &str,
    config: &LaunchConfig,
    args: &[&[u8]],
    mut check: impl FnMut(JitMode),
) -> LaunchReport {
    let mut compiled = None;
    for mode in [JitMode::Off, JitMode::Always] {
        let mut c = config.clone();
        c.engines.jit = mode;
        let r = dev.launch(m, kernel, &c, args).unwrap();
        assert!(r.reports.is_empty(), "{:?}", r.reports);
        assert_eq!(r.jit, mode == JitMode::Always);
        if mode == JitMode::Off {
            assert_eq!(r.ganged, 0);
        }
        check(mode);
        compiled = Some(r);
    }
    compiled.unwrap()
}

#[test]
fn each_checked_loop_with_a_constant_step_gets_a_gang_function() {
    let dev = Device::new();
    for (src, name) in [
        (RAGGED, "ragged"),
        (ROWDOT, "rowdot"),
        (PICK, "pick"),
        (GUARDED, "guarded"),
    ] {
        let m = dev.load_module(src).unwrap();
        let c = crate::jit::compile(m.program(name).unwrap(), true, Default::default()).unwrap();
        assert_eq!(c.gangs().iter().flatten().count(), 1, "{name}");
    }
}

#[test]
fn gangs_run_loops_whose_trip_counts_differ_per_lane() {
    let dev = Device::new();
    let m = dev.load_module(RAGGED).unwrap();
    let mut rng = Rng(seed());
    // Blocks of 7 and 5 lanes leave lanes over after the gangs; trip counts are 2 to 14 plus
    // `extra`, different in neighbouring lanes, so gangs split where the first lane leaves.
    // (A lane parks with 43 or more iterations of this 6-instruction body left.)
    for block in [32u32, 33, 96, 7, 5, 64] {
        let n = 300 + rng.below(700) as usize;
        let extra = 50 + rng.below(40) as usize;
        let a = random_f32s(&mut rng, n + 16 + extra);
        let pa = upload_f32(&dev, &a);
        let po = dev.alloc(4 * n).unwrap();
        let args = [
            p64(pa).to_vec(),
            p64(po).to_vec(),
            (n as u32).to_le_bytes().to_vec(),
            (extra as u32).to_le_bytes().to_vec(),
        ];
        let args: Vec<&[u8]> = args.iter().map(|v| v.as_slice()).collect();
        let r = both(
            &dev,
            &m,
            "ragged",
            &cfg((n as u32).div_ceil(block), block, JitMode::Off),
            &args,
            |mode| {
                let out = download_f32(&dev, po, n);
                for (t, o) in out.iter().enumerate() {
                    let want = ragged_reference(&a, t, extra);
                    assert_eq!(
                        o.to_bits(),
                        want.to_bits(),
                        "{mode:?}, block {block}, extra {extra}, thread {t}: {o} against {want}"
                    );
                }
            },
        );
        assert!(r.ganged >= 4, "block {block}: {} lanes in gangs", r.ganged);
    }
}

#[test]
fn a_gang_whose_lanes_disagree_on_a_uniform_value_is_turned_down() {
    let dev = Device::new();
    let m = dev.load_module(ROWDOT).unwrap();
    let mut rng = Rng(seed());
    // Lanes form gangs four at a time in lane order. With 4 or 8 columns, four neighbouring
    // lanes share a row (the row pointer agrees); with 3, every four span two rows and none
    // may run as a gang; with 6, those that span two rows may not.
    for (w, h) in [(4u32, 8u32), (8, 4), (3, 8), (6, 5)] {
        let whole = (w * h) as usize / GANG * GANG;
        let gangs = (0..whole)
            .step_by(GANG)
            .filter(|&l| l as u32 / w == (l + GANG - 1) as u32 / w)
            .count();
        let k = 40 + rng.below(40) as usize;
        let (w_, h_) = (w as usize, h as usize);
        let a = random_f32s(&mut rng, h_ * k);
        let b = random_f32s(&mut rng, k * w_);
        let (pa, pb) = (upload_f32(&dev, &a), upload_f32(&dev, &b));
        let pc = dev.alloc(4 * w_ * h_).unwrap();
        let args = [
            p64(pa).to_vec(),
            p64(pb).to_vec(),
            p64(pc).to_vec(),
            (k as u32).to_le_bytes().to_vec(),
            w.to_le_bytes().to_vec(),
        ];
        let args: Vec<&[u8]> = args.iter().map(|v| v.as_slice()).collect();
        let r = both(
            &dev,
            &m,
            "rowdot",
            &config((1, 1, 1), (w, h, 1)),
            &args,
            |mode| {
                let out = download_f32(&dev, pc, w_ * h_);
                for y in 0..h_ {
                    for x in 0..w_ {
                        let mut acc = 0f32;
                        for i in 0..k {
                            acc = a[y * k + i].mul_add(b[i * w_ + x], acc);
                        }
                        assert_eq!(
                            out[y * w_ + x].to_bits(),
                            acc.to_bits(),
                            "{mode:?}, {w}x{h}, k {k}, ({x}, {y})"
                        );
                    }
                }
            },
        );
        assert_eq!(r.ganged, (gangs * GANG) as u64, "{w}x{h}");
        assert_eq!(r.ganged > 0, w % 4 == 0 || w == 6, "{w}x{h}");
    }
}

#[test]
fn a_gang_whose_lanes_reach_different_allocations_is_turned_down() {
    let dev = Device::new();
    let m = dev.load_module(PICK).unwrap();
    let mut rng = Rng(seed());
    let n = 64usize;
    let k = 50 + rng.below(40) as usize;
    let a = random_f32s(&mut rng, n + k);
    let b = random_f32s(&mut rng, n + k);
    let (pa, pb) = (upload_f32(&dev, &a), upload_f32(&dev, &b));
    // Two allocations: no gang; the same one twice: gangs.
    for (second, gangs) in [(pb, false), (pa, true)] {
        let src = if gangs { &a } else { &b };
        let po = dev.alloc(4 * n).unwrap();
        let args = [
            p64(pa).to_vec(),
            p64(second).to_vec(),
            p64(po).to_vec(),
            (k as u32).to_le_bytes().to_vec(),
        ];
        let args: Vec<&[u8]> = args.iter().map(|v| v.as_slice()).collect();
        let r = both(
            &dev,
            &m,
            "pick",
            &cfg(1, n as u32, JitMode::Off),
            &args,
            |mode| {
                let out = download_f32(&dev, po, n);
                for (t, o) in out.iter().enumerate() {
                    let v = if t % 2 == 0 { &a } else { src };
                    let want = v[t..t + k].iter().fold(0f32, |s, &x| s + x);
                    assert_eq!(o.to_bits(), want.to_bits(), "{mode:?}, thread {t}");
                }
            },
        );
        assert_eq!(r.ganged > 0, gangs, "{} lanes in gangs", r.ganged);
    }
}

#[test]
fn gangs_store_and_run_guarded_instructions_and_leave_the_region_after_the_loop() {
    let dev = Device::new();
    let m = dev.load_module(GUARDED).unwrap();
    let mut rng = Rng(seed());
    for block in [32u32, 13] {
        let threads = 40 + rng.below(60) as usize;
        let k = 40 + rng.below(40) as usize;
        let a = random_f32s(&mut rng, threads * k);
        let pa = upload_f32(&dev, &a);
        let po = dev.alloc(4 * threads * k).unwrap();
        let count = upload_u32(&dev, &[0]);
        let args = [
            p64(pa).to_vec(),
            p64(po).to_vec(),
            p64(count).to_vec(),
            (k as u32).to_le_bytes().to_vec(),
        ];
        let args: Vec<&[u8]> = args.iter().map(|v| v.as_slice()).collect();
        // Exactly as many blocks as there are whole ones: the kernel has no bounds check.
        let blocks = threads as u32 / block;
        let threads = (blocks * block) as usize;
        let mut launches = 0;
        let r = both(
            &dev,
            &m,
            "guarded",
            &cfg(blocks, block, JitMode::Off),
            &args,
            |mode| {
                launches += 1;
                let out = download_f32(&dev, po, threads * k);
                for t in 0..threads {
                    let mut acc = 0f32;
                    for i in 0..k {
                        let x = a[t * k + i];
                        if x > 0.0 {
                            acc += x;
                        }
                        assert_eq!(
                            out[t * k + i].to_bits(),
                            acc.to_bits(),
                            "{mode:?}, block {block}, thread {t}, step {i}"
                        );
                    }
                }
                let n = download_u32(&dev, count, 1)[0];
                assert_eq!(n as usize, launches * threads, "{mode:?}");
            },
        );
        assert!(r.ganged >= 4, "block {block}: {} lanes in gangs", r.ganged);
    }
}

#[test]
fn lanes_park_again_at_each_run_of_an_inner_loop() {
    let dev = Device::new();
    let m = dev.load_module(NESTED).unwrap();
    let mut rng = Rng(seed());
    let n = 256usize;
    let (outer, inner) = (3 + rng.below(4) as usize, 50 + rng.below(40) as usize);
    let a = random_f32s(&mut rng, n + inner);
    let pa = upload_f32(&dev, &a);
    let po = dev.alloc(4 * n).unwrap();
    let args = [
        p64(pa).to_vec(),
        p64(po).to_vec(),
        (outer as u32).to_le_bytes().to_vec(),
        (inner as u32).to_le_bytes().to_vec(),
    ];
    let args: Vec<&[u8]> = args.iter().map(|v| v.as_slice()).collect();
    let r = both(
        &dev,
        &m,
        "nested",
        &cfg(2, 128, JitMode::Off),
        &args,
        |mode| {
            let out = download_f32(&dev, po, n);
            for (t, o) in out.iter().enumerate() {
                let mut acc = 0f32;
                for _ in 0..outer {
                    for &x in &a[t..t + inner] {
                        acc = acc.mul_add(0.5, x);
                    }
                }
                assert_eq!(o.to_bits(), acc.to_bits(), "{mode:?}, thread {t}");
            }
        },
    );
    // Every lane runs each of the inner loops in a gang (once per outer step at least).
    assert!(
        r.ganged >= (n * outer) as u64,
        "{} lanes in gangs, {outer} outer steps",
        r.ganged
    );
}
