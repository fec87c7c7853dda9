//! Constant and special-register copies (`lower::fold`): which registers fold, and that the
//! results do not change, interpreted and compiled.

use super::util::*;
use crate::*;

/// Four registers that may be folded, a constant (%r2) and three special registers (%r1 =
/// %tid.x, %r13 = %ctaid.x, %r15 = %ntid.x), beside seven that may not: written twice (%r3,
/// %r6), written under a guard (%r4), not written on one path (%r5), read before its only write
/// on the loop's first iteration (%r8), copied after a call (%r17: the liveness counts every
/// register live at a call), and a device function's own register (%r12).
const COPIES: &str = r#"
.version 7.0
.target sm_80
.address_size 64
.func (.param .b32 rv) three() {
  .reg .u32 %r12;
  mov.u32 %r12, 3;
  st.param.b32 [rv], %r12;
  ret;
}
.visible .entry copies(.param .u64 pout) {
  .reg .u64 %rd<4>;
  .reg .u32 %r<20>;
  .reg .pred %p<4>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r13, %ctaid.x;
  mov.u32 %r15, %ntid.x;
  mov.u32 %r2, 7;
  mov.u32 %r3, 5;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 mov.u32 %r4, 9;
  @%p1 bra SKIP;
  mov.u32 %r5, 11;
SKIP:
  add.u32 %r3, %r3, %r1;
  mov.u32 %r6, 0;
  mov.u32 %r9, 0;
LOOP:
  add.u32 %r9, %r9, %r8;
  mov.u32 %r8, 100;
  add.u32 %r6, %r6, 1;
  setp.lt.u32 %p2, %r6, 3;
  @%p2 bra LOOP;
  {
  .param .b32 rv0;
  call (rv0), three, ();
  ld.param.b32 %r10, [rv0];
  }
  mov.u32 %r17, 1000;
  add.u32 %r11, %r2, %r3;
  add.u32 %r11, %r11, %r4;
  add.u32 %r11, %r11, %r5;
  add.u32 %r11, %r11, %r9;
  add.u32 %r11, %r11, %r10;
  mul.lo.u32 %r14, %r13, %r17;
  add.u32 %r11, %r11, %r14;
  mad.lo.u32 %r16, %r13, %r15, %r1;
  ld.param.u64 %rd1, [pout];
  mul.wide.u32 %rd2, %r16, 4;
  add.u64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r11;
  ret;
}
"#;

fn nops(p: &ir::Program) -> usize {
    p.code.iter().filter(|i| i.op == ir::Op::Nop).count()
}

#[test]
fn only_copies_written_once_before_every_read_are_folded() {
    let dev = Device::new();
    let m = dev.load_module(COPIES).unwrap();
    let p = m.program("copies").unwrap();
    assert_eq!(nops(p), 4, "%r1, %r13, %r15 and %r2 fold: {:?}", p.code);
    // The registers read before written, found before folding, are those of the folded code.
    assert_eq!(p.entry_live, crate::ir::live::entry_live(p));
    // Each immediate has a constant slot; a folded register is a second slot with its value.
    let holding = |v: u64| p.consts.iter().filter(|c| c.1 == v).count();
    assert_eq!((holding(7), holding(1000), holding(3)), (2, 1, 1));
    let specials = |r: ir::SReg| p.sregs.iter().filter(|s| s.1 == r).count();
    for r in [ir::SReg::Tid(0), ir::SReg::Ctaid(0), ir::SReg::Ntid(0)] {
        assert_eq!(specials(r), 2, "{r:?}: the special register and its copy");
    }
    let (blocks, block) = (3usize, 64usize);
    let n = blocks * block;
    for mode in [JitMode::Off, JitMode::Always] {
        let out = dev.alloc(n * 4).unwrap();
        let mut cfg = config((blocks as u32, 1, 1), (block as u32, 1, 1));
        cfg.engines.jit = mode;
        // One worker runs every block on the same register files: the copy of %ctaid.x must
        // change from block to block.
        cfg.threads = 1;
        dev.launch(&m, "copies", &cfg, &[&p64(out)]).unwrap();
        let got = download_u32(&dev, out, n);
        for (k, &g) in got.iter().enumerate() {
            let (b, t) = ((k / block) as u32, k % block);
            let t0 = t == 0;
            // %r8 reads as 0 (cleared) on the first iteration, then 100 twice.
            let want = 7
                + (5 + t as u32)
                + if t0 { 9 } else { 0 }
                + if t0 { 0 } else { 11 }
                + 200
                + 3
                + 1000 * b;
            assert_eq!(g, want, "block {b}, thread {t}, {mode:?}");
        }
        dev.free(out).unwrap();
    }
}

#[test]
fn nvrtc_shuffle_operands_become_constants() {
    let dev = Device::new();
    let m = dev
        .load_module(include_str!("../../tests/fixtures/reduce.ptx"))
        .unwrap();
    let p = m.program("reduceWarpShuffle").unwrap();
    // Fourteen `mov.u32 %rN, imm` feed the ten shuffles (offsets, clamp, member mask), two
    // `mov.u64 %rdN, warpSums` take the shared array's address and three `mov.u32` copy
    // %ntid.x, %ctaid.x and %tid.x; `mov.u32 %r50, 0` and `mov.u32 %r51, 0` stay, as loads
    // write those registers too.
    assert_eq!(nops(p), 19, "{:?}", p.code);
    assert_eq!(p.entry_live, crate::ir::live::entry_live(p));
    let shuffles: Vec<&ir::Inst> = p
        .code
        .iter()
        .filter(|i| matches!(i.op, ir::Op::Shfl(_)))
        .collect();
    assert_eq!(shuffles.len(), 10);
    let consts: Vec<ir::Slot> = p.consts.iter().map(|c| c.0).collect();
    for i in shuffles {
        assert!(i.r[2..5].iter().all(|s| consts.contains(s)), "{i:?}");
    }
}
