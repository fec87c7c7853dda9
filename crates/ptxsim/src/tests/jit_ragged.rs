//! Loops checked before they start (`jit::loops`) whose trip counts differ from lane to lane,
//! against the interpreter and a CPU reference: lanes too short to be checked before the loop
//! beside lanes that run the unchecked copy, partial warps, and the instruction budget inside
//! the unchecked copy.

use super::jit::cfg;
use super::util::*;
use crate::*;

/// Thread t sums `a[t..t + count]` as `acc = acc * 0.5 + a[i]` (fused), with
/// `count = 2 + (37 t mod 13) + extra`: a counted loop with a constant step, checked before it
/// starts.
pub(super) const RAGGED: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry ragged(.param .u64 pa, .param .u64 pout, .param .u32 n, .param .u32 extra)
{
  .reg .pred %p<3>;
  .reg .b32 %r<12>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pout];
  ld.param.u32 %r1, [n];
  ld.param.u32 %r9, [extra];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.s32 %p1, %r5, %r1;
  @%p1 bra DONE;
  mul.lo.s32 %r6, %r5, 37;
  rem.u32 %r7, %r6, 13;
  add.s32 %r8, %r7, 2;
  add.s32 %r8, %r8, %r9;
  cvta.to.global.u64 %rd3, %rd1;
  mul.wide.s32 %rd4, %r5, 4;
  add.s64 %rd5, %rd3, %rd4;
  mov.f32 %f1, 0f00000000;
  mov.u32 %r10, 0;
L1:
  ld.global.f32 %f2, [%rd5];
  fma.rn.f32 %f1, %f1, 0f3F000000, %f2;
  add.s64 %rd5, %rd5, 4;
  add.s32 %r10, %r10, 1;
  setp.lt.s32 %p2, %r10, %r8;
  @%p2 bra L1;
  cvta.to.global.u64 %rd6, %rd2;
  add.s64 %rd7, %rd6, %rd4;
  st.global.f32 [%rd7], %f1;
DONE:
  ret;
}
"#;

pub(super) fn ragged_reference(a: &[f32], t: usize, extra: usize) -> f32 {
    let count = 2 + (t * 37) % 13 + extra;
    let mut acc = 0f32;
    for &x in &a[t..t + count] {
        acc = acc.mul_add(0.5, x);
    }
    acc
}

#[test]
fn checked_loops_with_ragged_trip_counts_match_the_interpreter_and_the_cpu() {
    let dev = Device::new();
    let m = dev.load_module(RAGGED).unwrap();
    let compiled =
        crate::jit::compile(m.program("ragged").unwrap(), true, Default::default()).unwrap();
    assert_eq!(compiled.loops, 1);
    let mut rng = Rng(seed());
    for block in [32u32, 33, 96, 7, 64] {
        let n = 200 + rng.below(900) as usize;
        let extra = rng.below(40) as usize;
        let a: Vec<f32> = (0..n + 16 + extra)
            .map(|_| (rng.below(2001) as f32 - 1000.0) / 256.0)
            .collect();
        let pa = upload_f32(&dev, &a);
        let mut outs = Vec::new();
        for mode in [JitMode::Off, JitMode::Always] {
            let po = dev.alloc(4 * n).unwrap();
            let r = dev
                .launch(
                    &m,
                    "ragged",
                    &cfg((n as u32).div_ceil(block), block, mode),
                    &[
                        &p64(pa),
                        &p64(po),
                        &(n as u32).to_le_bytes(),
                        &(extra as u32).to_le_bytes(),
                    ],
                )
                .unwrap();
            assert!(r.reports.is_empty(), "{:?}", r.reports);
            assert_eq!(r.jit, mode == JitMode::Always);
            outs.push(download_f32(&dev, po, n));
        }
        for t in 0..n {
            let want = ragged_reference(&a, t, extra);
            for (mode, out) in ["interpreted", "compiled"].iter().zip(&outs) {
                assert_eq!(
                    out[t].to_bits(),
                    want.to_bits(),
                    "{mode}, block {block}, extra {extra}, thread {t}: {} against {want}",
                    out[t]
                );
            }
        }
    }
}

/// An unchecked loop copy that would run far past the instruction budget stops with the budget
/// fault, as the interpreter's does; with a budget that suffices, the results are right.
#[test]
fn the_budget_stops_an_unchecked_loop_copy() {
    let dev = Device::new();
    let m = dev.load_module(RAGGED).unwrap();
    let n = 64usize;
    let extra = 200_000usize;
    let a: Vec<f32> = (0..n + 16 + extra).map(|i| (i % 7) as f32).collect();
    let pa = upload_f32(&dev, &a);
    let po = dev.alloc(4 * n).unwrap();
    let args = [
        p64(pa).to_vec(),
        p64(po).to_vec(),
        (n as u32).to_le_bytes().to_vec(),
        (extra as u32).to_le_bytes().to_vec(),
    ];
    let args: Vec<&[u8]> = args.iter().map(|v| v.as_slice()).collect();
    for mode in [JitMode::Off, JitMode::Always] {
        let mut c = cfg(2, 32, mode);
        c.instruction_budget = Some(100_000);
        let e = dev.launch(&m, "ragged", &c, &args).unwrap_err();
        let LaunchError::Fault { report, .. } = e else {
            panic!("{e:?}")
        };
        assert_eq!(report.kind, CheckKind::BudgetExceeded, "{mode:?}");
    }
    let mut c = cfg(2, 32, JitMode::Always);
    c.instruction_budget = Some(50_000_000);
    let r = dev.launch(&m, "ragged", &c, &args).unwrap();
    assert!(r.jit);
    let out = download_f32(&dev, po, n);
    for (t, &o) in out.iter().enumerate() {
        assert_eq!(
            o.to_bits(),
            ragged_reference(&a, t, extra).to_bits(),
            "thread {t}"
        );
    }
}
