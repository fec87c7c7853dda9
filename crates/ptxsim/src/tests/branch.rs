//! A comparison and the branch that tests it, which the interpreter runs in one step
//! (`exec::run::fused_branch`): results beside a CPU reference for every shape of the pair it
//! must and must not join, and instruction counts and budgets exactly as if run one by one.

use super::util::*;
use crate::*;

/// `pairs`: a uniform loop (`setp` then `@p bra` back), a divergent loop left by a negated
/// branch, a float comparison, a guarded `setp` (not joined: its predicate keeps old values in
/// the lanes it skips), a `setp` with a boolean operation (not joined), a pair whose branch
/// other lanes reach by jumping to it (not joined: the group first gathers there), and a
/// branch on another predicate than the `setp` before it sets (not joined).
const PAIRS: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.visible .entry pairs(.param .u64 pout, .param .u32 pn) {
  .reg .u64 %rd<4>;
  .reg .u32 %r<12>;
  .reg .f32 %f<3>;
  .reg .pred %p<8>;
  ld.param.u64 %rd1, [pout];
  ld.param.u32 %r1, [pn];
  mov.u32 %r3, %tid.x;
  mov.u32 %r2, 0;
  mov.u32 %r5, 0;
UNI:
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p1, %r2, %r1;
  @%p1 bra UNI;
  and.b32 %r4, %r3, 7;
DIV:
  setp.ne.u32 %p2, %r4, 0;
  @!%p2 bra OUT;
  add.u32 %r5, %r5, %r3;
  sub.u32 %r4, %r4, 1;
  bra.uni DIV;
OUT:
  cvt.rn.f32.u32 %f1, %r3;
  setp.gt.f32 %p3, %f1, 20.5;
  @%p3 bra BIG;
  add.u32 %r5, %r5, 100000;
BIG:
  setp.lt.u32 %p4, %r3, 16;
  @%p4 setp.gt.u32 %p4, %r3, 4;
  @!%p4 bra F;
  add.u32 %r5, %r5, 1000;
F:
  setp.lt.u32 %p5, %r3, 24;
  setp.gt.and.u32 %p6, %r3, 9, %p5;
  @%p6 bra H;
  add.u32 %r5, %r5, 10;
H:
  setp.eq.u32 %p7, %r3, 3;
  @%p7 bra MID;
  setp.gt.u32 %p7, %r3, 27;
MID:
  @%p7 bra J;
  add.u32 %r5, %r5, 20;
J:
  setp.lt.u32 %p1, %r3, 7;
  setp.gt.u32 %p2, %r3, 20;
  @%p1 bra G;
  add.u32 %r5, %r5, 300;
G:
  shl.b32 %r6, %r2, 16;
  add.u32 %r5, %r5, %r6;
  mul.wide.u32 %rd2, %r3, 4;
  add.u64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r5;
  ret;
}

.visible .entry spin(.param .u32 pn) {
  .reg .u32 %r<4>;
  .reg .pred %p<2>;
  ld.param.u32 %r1, [pn];
  mov.u32 %r2, 0;
LOOP:
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p1, %r2, %r1;
  @%p1 bra LOOP;
  ret;
}
"#;

/// What `pairs` stores for thread `t` (one block, `n` the uniform loop's trip count).
fn pairs_ref(t: u32, n: u32) -> u32 {
    let mut r5 = (t & 7) * t;
    if (t as f32) <= 20.5 {
        r5 += 100_000;
    }
    if t < 16 && t > 4 {
        r5 += 1000;
    }
    if !(t > 9 && t < 24) {
        r5 += 10;
    }
    // %p7: lane 3 branches to MID with it set; the others recompute it there.
    if !(t == 3 || t > 27) {
        r5 += 20;
    }
    if t >= 7 {
        r5 += 300;
    }
    r5 + (n.max(1) << 16)
}

#[test]
fn joined_and_separate_pairs_match_a_cpu_reference() {
    let dev = Device::new();
    let m = dev.load_module(PAIRS).unwrap();
    let mut rng = Rng(seed());
    for mode in [JitMode::Off, JitMode::Always] {
        for n in [0u32, 1, 2, 3 + rng.below(40) as u32] {
            let po = dev.alloc(32 * 4).unwrap();
            let mut cfg = config((1, 1, 1), (32, 1, 1));
            cfg.engines.jit = mode;
            let r = dev
                .launch(&m, "pairs", &cfg, &[&p64(po), &i32b(n as i32)])
                .unwrap();
            assert!(r.reports.is_empty(), "{:?}", r.reports);
            let got = download_u32(&dev, po, 32);
            let want: Vec<u32> = (0..32).map(|t| pairs_ref(t, n)).collect();
            assert_eq!(got, want, "{mode:?}, n = {n}");
        }
    }
}

/// `spin` with trip count `n` runs 3 + 3n warp-instructions per warp, the joined comparison
/// and branch counted as two. With a budget `b` a warp gets fuel for `b` instructions at a time
/// and the budget is checked where that fuel runs out (after `b`, then `2b` instructions), so
/// one warp finishes exactly when it needs fewer than `2b`: budgets around that point end the
/// first slice of fuel at every place in a pair, between the comparison and the branch too.
#[test]
fn joined_pairs_count_as_two_instructions() {
    let dev = Device::new();
    let m = dev.load_module(PAIRS).unwrap();
    let mut rng = Rng(seed());
    for n in [1u32, 2, 5 + rng.below(300) as u32] {
        let per_warp = 3 + 3 * n as u64;
        let mut cfg = config((1, 1, 1), (64, 1, 1));
        cfg.engines.jit = JitMode::Off;
        let r = dev.launch(&m, "spin", &cfg, &[&i32b(n as i32)]).unwrap();
        assert_eq!(r.warp_instructions, 2 * per_warp, "n = {n}");
        let mut one = config((1, 1, 1), (32, 1, 1));
        one.engines.jit = JitMode::Off;
        let least = per_warp / 2 + 1;
        for budget in least.saturating_sub(3).max(1)..=least + 3 {
            one.instruction_budget = Some(budget);
            match dev.launch(&m, "spin", &one, &[&i32b(n as i32)]) {
                Ok(r) => {
                    assert!(budget >= least, "n = {n}: finished under {budget}");
                    assert_eq!(r.warp_instructions, per_warp);
                }
                Err(LaunchError::Fault { report, .. }) => {
                    assert!(budget < least, "n = {n}: stopped under {budget}");
                    assert_eq!(report.kind, CheckKind::BudgetExceeded);
                }
                Err(e) => panic!("{e:?}"),
            }
        }
    }
}
