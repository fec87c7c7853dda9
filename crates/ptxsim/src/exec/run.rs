//! The hot loop: runs one warp's current group instruction by instruction.
//!
//! One `match` over the pre-decoded op; arithmetic is `sem`'s, through the lane loops of `alu`;
//! everything touching memory, other lanes or control state through `Worker` methods. No
//! allocation and no string work happen here.

use super::alu::{self, bin, each, tern, un};
use super::cpu::LaneMasks;
use super::setp::{float_cmp_mask, int_cmp_mask, write_setp};
use super::{pred_mask, Fault, Stop, Warp, Worker};
use crate::ir::*;
use crate::sem::float::{self, farith, fminmax, funary, testp, FMods};
use crate::sem::{address, bits, convert, int, simd};

impl Worker<'_> {
    /// The interpreter loop (see `cpu` for its builds). With `COUNT`, each warp instruction
    /// issued is counted (`crate::counters`) before it runs, and `setp`+`bra` pairs are
    /// dispatched one by one so that the branch is counted too.
    #[inline(always)]
    pub(super) fn run_warp_impl<K: LaneMasks, const COUNT: bool>(
        &mut self,
        w: &mut Warp,
        fuel: &mut u32,
        k: K,
    ) -> Result<Stop, Fault> {
        let prog = self.ctx.prog;
        let code: &[Inst] = &prog.code;
        let mut pc = w.pc;
        let mut skip_jit = u32::MAX;
        loop {
            if *fuel == 0 {
                w.pc = pc;
                return Ok(Stop::Yield);
            }
            if pc == skip_jit {
                // The instruction compiled code stopped before: the interpreter executes it.
                skip_jit = u32::MAX;
            } else if let Some(f) = self.jit_fn(pc) {
                w.pc = pc;
                skip_jit = self.run_compiled(w, f, fuel);
                pc = w.pc;
                continue;
            }
            *fuel -= 1;
            let Some(i) = code.get(pc as usize) else {
                // Falling off the end is an exit (lowering appends one; this is a safety net).
                w.exited |= w.mask;
                w.mask = 0;
                w.pc = pc;
                match Self::after_group_left(w) {
                    Some(s) => return Ok(s),
                    None => {
                        pc = w.pc;
                        continue;
                    }
                }
            };
            if i.op.is_collective() {
                // Members of the collective still running elsewhere: wait for them.
                let members = w.regs[i.r[4] as usize][w.mask.trailing_zeros() as usize & 31] as u32;
                if (members & !w.exited & !w.mask) != 0 || w.sync_wait != 0 {
                    w.pc = pc;
                    if !w.gather(pc, members) {
                        if w.mask == 0 {
                            return Ok(Self::after_group_left(w).unwrap_or(Stop::Blocked));
                        }
                        pc = w.pc;
                        continue;
                    }
                }
            }
            let m = if i.guard == NONE {
                w.mask
            } else {
                w.mask & pred_mask(k, &w.regs[i.guard as usize], i.guard_neg)
            };
            if COUNT {
                if let (Some(c), Some(s)) = (self.counting.as_deref_mut(), self.ctx.counters) {
                    c.count(s, i, pc, w.idx as usize, &w.regs, w.mask, m);
                }
            }
            match i.op {
                Op::Nop => {}
                Op::Mov => un(&mut w.regs, i, m, |a| a),
                Op::Add => bin(&mut w.regs, i, m, int::add),
                Op::Sub => bin(&mut w.regs, i, m, int::sub),
                Op::MulLo => bin(&mut w.regs, i, m, int::mul_lo),
                Op::MadLo => tern(&mut w.regs, i, m, int::mad_lo),
                Op::And => bin(&mut w.regs, i, m, |a, b| a & b),
                Op::Or => bin(&mut w.regs, i, m, |a, b| a | b),
                Op::Xor => bin(&mut w.regs, i, m, |a, b| a ^ b),
                Op::Not => un(&mut w.regs, i, m, bits::not),
                Op::Neg => un(&mut w.regs, i, m, int::neg),
                Op::PNot => un(&mut w.regs, i, m, bits::pnot),
                Op::CNot { bits } => un(&mut w.regs, i, m, move |a| bits::cnot(a, bits)),
                // (The closures from here to `Abs` that use the type take it by value, as in
                // `block::block_op`, so that their lane loops vectorise; the common types are
                // passed as constants, so that `sem` picks their fast form at compile time.)
                Op::Shl { bits } => bin(&mut w.regs, i, m, move |a, b| bits::shl(a, b, bits)),
                Op::Shr { ty } => match (ty.bits, ty.signed) {
                    (32, false) => bin(&mut w.regs, i, m, |a, b| bits::shr(a, b, IntTy::U32)),
                    (32, true) => bin(&mut w.regs, i, m, |a, b| bits::shr(a, b, IntTy::S32)),
                    _ => bin(&mut w.regs, i, m, move |a, b| bits::shr(a, b, ty)),
                },
                Op::MulHi(t) => bin(&mut w.regs, i, m, move |a, b| int::mul_hi(a, b, t)),
                Op::MulWide(t) => match (t.bits, t.signed) {
                    (32, false) => bin(&mut w.regs, i, m, |a, b| int::mul_wide(a, b, IntTy::U32)),
                    (32, true) => bin(&mut w.regs, i, m, |a, b| int::mul_wide(a, b, IntTy::S32)),
                    _ => bin(&mut w.regs, i, m, move |a, b| int::mul_wide(a, b, t)),
                },
                Op::MadHi(t) => tern(&mut w.regs, i, m, move |a, b, c| int::mad_hi(a, b, c, t)),
                Op::MadWide(t) => tern(&mut w.regs, i, m, move |a, b, c| int::mad_wide(a, b, c, t)),
                Op::Div(t) => bin(&mut w.regs, i, m, move |a, b| int::div(a, b, t)),
                Op::Rem(t) => bin(&mut w.regs, i, m, move |a, b| int::rem(a, b, t)),
                Op::Min(t) => bin(&mut w.regs, i, m, move |a, b| int::min(a, b, t)),
                Op::Max(t) => bin(&mut w.regs, i, m, move |a, b| int::max(a, b, t)),
                Op::Abs(t) => un(&mut w.regs, i, m, move |a| int::abs(a, t)),
                Op::AddSat => bin(&mut w.regs, i, m, int::add_sat),
                Op::SubSat => bin(&mut w.regs, i, m, int::sub_sat),
                Op::Carry {
                    bits,
                    sub,
                    mad,
                    hi,
                    cin,
                    cout,
                } => {
                    let a = w.regs[i.r[1] as usize];
                    let b = w.regs[i.r[2] as usize];
                    let c = if mad {
                        w.regs[i.r[3] as usize]
                    } else {
                        [0; 32]
                    };
                    let cc = w.regs[i.r[4] as usize];
                    let mut d = w.regs[i.r[0] as usize];
                    let mut ncc = cc;
                    each(m, |l| {
                        let (r, co) = int::carry(
                            a[l],
                            b[l],
                            c[l],
                            if cin { cc[l] } else { 0 },
                            bits,
                            sub,
                            mad,
                            hi,
                        );
                        d[l] = r;
                        if cout {
                            ncc[l] = co;
                        }
                    });
                    w.regs[i.r[0] as usize] = d;
                    w.regs[i.r[4] as usize] = ncc;
                }
                Op::Popc { bits } => un(&mut w.regs, i, m, |a| bits::popc(a, bits)),
                Op::Clz { bits } => un(&mut w.regs, i, m, |a| bits::clz(a, bits)),
                Op::Brev { bits } => un(&mut w.regs, i, m, |a| bits::brev(a, bits)),
                Op::Bfind { ty, shiftamt } => {
                    un(&mut w.regs, i, m, |a| bits::bfind(a, ty, shiftamt))
                }
                Op::Bfe(t) => tern(&mut w.regs, i, m, |a, b, c| bits::bfe(a, b, c, t)),
                Op::Bfi { bits } => {
                    let len = w.regs[i.r[4] as usize];
                    let a = w.regs[i.r[1] as usize];
                    let b = w.regs[i.r[2] as usize];
                    let c = w.regs[i.r[3] as usize];
                    let d = &mut w.regs[i.r[0] as usize];
                    alu::write(d, m, |l| bits::bfi(a[l], b[l], c[l], len[l], bits));
                }
                Op::Prmt(mode) => tern(&mut w.regs, i, m, |a, b, c| bits::prmt(a, b, c, mode)),
                Op::Shf { left, wrap } => {
                    tern(&mut w.regs, i, m, |a, b, c| bits::shf(a, b, c, left, wrap))
                }
                Op::Sad(t) => tern(&mut w.regs, i, m, |a, b, c| int::sad(a, b, c, t)),
                Op::Mul24 { hi, signed, mad } => {
                    if mad {
                        tern(&mut w.regs, i, m, |a, b, c| int::mad24(a, b, c, hi, signed))
                    } else {
                        bin(&mut w.regs, i, m, |a, b| int::mul24(a, b, hi, signed))
                    }
                }
                Op::Lop3 { lut } => tern(&mut w.regs, i, m, |a, b, c| bits::lop3(a, b, c, lut)),
                Op::Bmsk { wrap } => bin(&mut w.regs, i, m, |a, b| bits::bmsk(a, b, wrap)),
                Op::Szext { signed, wrap } => {
                    bin(&mut w.regs, i, m, |a, b| bits::szext(a, b, signed, wrap))
                }
                Op::Elect => {
                    let members = w.regs[i.r[4] as usize];
                    let l0 = m.trailing_zeros() as usize & 31;
                    let eligible = m & (members[l0] as u32);
                    let leader = eligible.trailing_zeros() as u64;
                    if i.r[0] != NONE {
                        let d = &mut w.regs[i.r[0] as usize];
                        alu::write(d, m, |_| leader);
                    }
                    if i.r[5] != NONE {
                        let p = &mut w.regs[i.r[5] as usize];
                        alu::write(p, m, |l| (l as u64 == leader) as u64);
                    }
                }
                Op::CpAsync { size } => self.cp_async(w, i, m, pc, size)?,
                Op::Fns => tern(&mut w.regs, i, m, bits::fns),
                Op::Video(v) => tern(&mut w.regs, i, m, |a, b, c| simd::video(v, a, b, c)),
                Op::Dp4a {
                    form,
                    a_signed,
                    b_signed,
                } => tern(&mut w.regs, i, m, |a, b, c| {
                    simd::dot(form, a, b, c, a_signed, b_signed)
                }),
                Op::FAdd32 => bin(&mut w.regs, i, m, float::add_f32),
                Op::FSub32 => bin(&mut w.regs, i, m, float::sub_f32),
                Op::FMul32 => bin(&mut w.regs, i, m, float::mul_f32),
                Op::FFma32 => tern(&mut w.regs, i, m, float::fma_f32),
                Op::FDiv32 => bin(&mut w.regs, i, m, float::div_f32),
                Op::FAdd64 => bin(&mut w.regs, i, m, float::add_f64),
                Op::FSub64 => bin(&mut w.regs, i, m, float::sub_f64),
                Op::FMul64 => bin(&mut w.regs, i, m, float::mul_f64),
                Op::FFma64 => tern(&mut w.regs, i, m, float::fma_f64),
                Op::FDiv64 => bin(&mut w.regs, i, m, float::div_f64),
                Op::FArith {
                    op,
                    ty,
                    rnd,
                    ftz,
                    sat,
                    relu,
                } => {
                    let md = FMods {
                        rnd,
                        ftz,
                        sat,
                        relu,
                    };
                    match op {
                        FOp::Sqrt | FOp::Rcp => {
                            un(&mut w.regs, i, m, |a| farith(op, ty, md, a, 0, 0))
                        }
                        FOp::Fma => tern(&mut w.regs, i, m, |a, b, c| farith(op, ty, md, a, b, c)),
                        _ => bin(&mut w.regs, i, m, |a, b| farith(op, ty, md, a, b, 0)),
                    }
                }
                Op::FUnary { f, ty, ftz } => un(&mut w.regs, i, m, |a| funary(f, ty, ftz, a)),
                Op::FMin { ty, ftz, nan } => {
                    bin(&mut w.regs, i, m, |a, b| fminmax(ty, ftz, nan, false, a, b))
                }
                Op::FMax { ty, ftz, nan } => {
                    bin(&mut w.regs, i, m, |a, b| fminmax(ty, ftz, nan, true, a, b))
                }
                Op::Testp { t, ty } => un(&mut w.regs, i, m, |a| testp(t, ty, a)),
                Op::Copysign(ty) => bin(&mut w.regs, i, m, |a, b| float::copysign(ty, a, b)),
                Op::SetpI { cmp, ty, bop, cneg } => {
                    let t = int_cmp_mask(k, w, i, cmp, ty);
                    write_setp(k, w, i, m, t, (bop, cneg), None);
                    let fused = if COUNT {
                        None
                    } else {
                        fused_branch(code, w, i, pc, t, bop, *fuel)
                    };
                    if let Some((bm, target)) = fused {
                        // The branch that tests this predicate, run here (`fused_branch`).
                        *fuel -= 1;
                        pc = branch(w, pc + 1, bm, target);
                        continue;
                    }
                }
                Op::SetpF {
                    cmp,
                    ty,
                    ftz,
                    bop,
                    cneg,
                } => {
                    let t = float_cmp_mask(k, w, i, cmp, ty, ftz);
                    write_setp(k, w, i, m, t, (bop, cneg), None);
                    let fused = if COUNT {
                        None
                    } else {
                        fused_branch(code, w, i, pc, t, bop, *fuel)
                    };
                    if let Some((bm, target)) = fused {
                        *fuel -= 1;
                        pc = branch(w, pc + 1, bm, target);
                        continue;
                    }
                }
                Op::SetI {
                    cmp,
                    ty,
                    bop,
                    cneg,
                    dst_f32,
                } => {
                    let t = int_cmp_mask(k, w, i, cmp, ty);
                    let one = if dst_f32 { 0x3F80_0000 } else { 0xFFFF_FFFF };
                    write_setp(k, w, i, m, t, (bop, cneg), Some(one));
                }
                Op::SetF {
                    cmp,
                    ty,
                    ftz,
                    bop,
                    cneg,
                    dst_f32,
                } => {
                    let t = float_cmp_mask(k, w, i, cmp, ty, ftz);
                    let one = if dst_f32 { 0x3F80_0000 } else { 0xFFFF_FFFF };
                    write_setp(k, w, i, m, t, (bop, cneg), Some(one));
                }
                Op::Selp => tern(&mut w.regs, i, m, int::selp),
                Op::Slct { cf32, ftz } => {
                    tern(&mut w.regs, i, m, |a, b, c| float::slct(a, b, c, cf32, ftz))
                }
                Op::CvtII { from, to, sat } => {
                    if !sat && from.bits == 32 && to.bits == 64 {
                        if from.signed {
                            un(&mut w.regs, i, m, |a| {
                                convert::cvt_ii(a, IntTy::S32, IntTy::S64, false)
                            })
                        } else {
                            un(&mut w.regs, i, m, |a| {
                                convert::cvt_ii(a, IntTy::U32, IntTy::U64, false)
                            })
                        }
                    } else {
                        un(&mut w.regs, i, m, |a| convert::cvt_ii(a, from, to, sat))
                    }
                }
                Op::CvtIF { from, to, rnd } => {
                    if from.bits == 32 && to == FTy::F32 && rnd == Rnd::Rn {
                        if from.signed {
                            un(&mut w.regs, i, m, |a| {
                                convert::cvt_if(a, IntTy::S32, FTy::F32, Rnd::Rn)
                            })
                        } else {
                            un(&mut w.regs, i, m, |a| {
                                convert::cvt_if(a, IntTy::U32, FTy::F32, Rnd::Rn)
                            })
                        }
                    } else {
                        un(&mut w.regs, i, m, |a| convert::cvt_if(a, from, to, rnd))
                    }
                }
                Op::CvtFI {
                    from,
                    to,
                    irnd,
                    ftz,
                } => {
                    // f32 → 32-bit integer, truncating (`(int)x`, the common case) with the
                    // types fixed, so that `sem` picks its fast form.
                    if from == FTy::F32 && to.bits == 32 && irnd == IRnd::Rzi {
                        if to.signed {
                            un(&mut w.regs, i, m, |a| {
                                convert::cvt_fi(a, FTy::F32, IntTy::S32, IRnd::Rzi, false)
                            })
                        } else {
                            un(&mut w.regs, i, m, |a| {
                                convert::cvt_fi(a, FTy::F32, IntTy::U32, IRnd::Rzi, false)
                            })
                        }
                    } else {
                        un(&mut w.regs, i, m, |a| {
                            convert::cvt_fi(a, from, to, irnd, ftz)
                        })
                    }
                }
                Op::CvtFF {
                    from,
                    to,
                    rnd,
                    irnd,
                    ftz,
                    sat,
                } => {
                    if from == FTy::F32 && to == FTy::F64 && !ftz && !sat && irnd == IRnd::None {
                        un(&mut w.regs, i, m, |a| {
                            convert::cvt_ff(a, FTy::F32, FTy::F64, rnd, IRnd::None, false, false)
                        })
                    } else {
                        un(&mut w.regs, i, m, |a| {
                            convert::cvt_ff(a, from, to, rnd, irnd, ftz, sat)
                        })
                    }
                }
                Op::Pack { n, bits } => {
                    let mut out = [0u64; 32];
                    for k in 0..n as usize {
                        let s = w.regs[i.r[k + 1] as usize];
                        for l in 0..32 {
                            out[l] |= int::zext(s[l], bits) << (k as u32 * bits as u32);
                        }
                    }
                    let d = &mut w.regs[i.r[0] as usize];
                    alu::write(d, m, |l| out[l]);
                }
                Op::Unpack { n, bits } => {
                    let s = w.regs[i.r[5] as usize];
                    for k in 0..n as usize {
                        let d = &mut w.regs[i.r[k] as usize];
                        each(m, |l| {
                            d[l] = int::zext(s[l] >> (k as u32 * bits as u32), bits)
                        });
                    }
                }
                Op::Ld {
                    space,
                    size,
                    n,
                    sext,
                } => {
                    if let Some(gs) = self.ctx.grid_sync {
                        if matches!(space, MemSpace::Global | MemSpace::Generic) {
                            self.grid_poll(w, i, m, pc, gs)?;
                        }
                    }
                    self.ld(w, i, m, pc, space, size, n, sext)?
                }
                Op::St { space, size, n } => {
                    self.st(w, i, m, pc, space, size, n)?;
                    if self.ctx.grid_sync.is_some() {
                        self.grid_wrote(w, i, i.r[4] as usize, m);
                    }
                }
                Op::LdK { size, n, sext } => self.ldk(w, i, m, size, n, sext),
                Op::Atom {
                    space,
                    op,
                    bits,
                    kind,
                } => {
                    self.atom(w, i, m, pc, space, op, bits, kind)?;
                    if self.ctx.grid_sync.is_some() {
                        self.grid_wrote(w, i, i.r[1] as usize, m);
                    }
                }
                Op::Cvta { to, space } => {
                    if to {
                        un(&mut w.regs, i, m, |a| address::cvta(a, space, true))
                    } else {
                        un(&mut w.regs, i, m, |a| address::cvta(a, space, false))
                    }
                }
                Op::Isspacep(space) => un(&mut w.regs, i, m, |a| address::isspacep(a, space)),
                Op::Bra => {
                    pc = branch(w, pc, m, i.imm as u32);
                    continue;
                }
                Op::Exit => {
                    if m != 0 {
                        if self.ctx.check && w.at_bar != 0 {
                            let l = m.trailing_zeros() as usize;
                            return Err(self.divergent_barrier(w, l, "exited"));
                        }
                        w.exited |= m;
                        w.mask &= !m;
                        if w.mask == 0 {
                            w.pc = pc;
                            match Self::after_group_left(w) {
                                Some(s) => return Ok(s),
                                None => {
                                    pc = w.pc;
                                    continue;
                                }
                            }
                        }
                    }
                }
                Op::Ret => {
                    if m != 0 {
                        w.pc = pc;
                        if let Some(s) = self.ret(w, m, pc)? {
                            return Ok(s);
                        }
                        pc = w.pc;
                        continue;
                    }
                }
                Op::Call => {
                    w.pc = pc;
                    if let Some(s) = self.call(w, m, pc, i.imm as usize)? {
                        return Ok(s);
                    }
                    pc = w.pc;
                    if pc >= w.resched_pc {
                        w.repick();
                        pc = w.pc;
                    }
                    continue;
                }
                Op::Bar(_) => {
                    w.pc = pc;
                    if let Some(s) = self.barrier(w, m, pc)? {
                        return Ok(s);
                    }
                    pc = w.pc;
                    if pc >= w.resched_pc {
                        w.repick();
                        pc = w.pc;
                    }
                    continue;
                }
                Op::WarpSync => w.wepoch = w.wepoch.wrapping_add(1),
                Op::Trap => {
                    if m != 0 {
                        return Err(Box::new(self.report(
                            crate::CheckKind::Trap,
                            w.idx,
                            m.trailing_zeros() as usize,
                            pc,
                            0,
                            0,
                            "",
                            None,
                            trap_message(prog, self.ctx.grid_sync.is_some()),
                        )));
                    }
                }
                Op::Shfl(mode) => self.shfl(w, i, m, pc, mode),
                Op::Vote { mode, neg } => super::warpops::vote(w, i, m, mode, neg),
                Op::Activemask => {
                    let d = &mut w.regs[i.r[0] as usize];
                    alu::write(d, m, |_| w.mask as u64);
                }
                Op::MatchAny { bits } => super::warpops::match_any(w, i, m, bits),
                Op::MatchAll { bits } => super::warpops::match_all(w, i, m, bits),
                Op::Redux { op, signed } => super::warpops::redux(w, i, m, op, signed),
                Op::Tensor => self.tensor(w, i, m, pc)?,
                Op::CvtTf32(rnd) => un(&mut w.regs, i, m, |a| {
                    convert::round_tf32(a as u32, rnd) as u64
                }),
                Op::Clock { part } => {
                    let t = (self.total + self.pending + (self.fuel - *fuel) as u64) * 4;
                    let v = part.of(t);
                    let d = &mut w.regs[i.r[0] as usize];
                    alu::write(d, m, |_| v);
                }
                Op::GlobalTimer { part } => {
                    let t = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_nanos() as u64);
                    let t = part.of(t);
                    let d = &mut w.regs[i.r[0] as usize];
                    alu::write(d, m, |_| t);
                }
            }
            pc += 1;
            if pc >= w.resched_pc {
                w.pc = pc;
                w.repick();
                pc = w.pc;
            }
        }
    }
}

/// A `setp` whose predicate the next instruction branches on: the branch's active lanes and
/// target, so that the loop runs the branch at once instead of dispatching it. Such pairs are
/// most of a loop's control (reduceBlockTree: their branches are 144 of the 673
/// warp-instructions of a block; measured 1.03x faster for it and histogramShared, one
/// worker). Only where the dispatch would
/// do nothing else: the `setp` unguarded and plain (its predicate is `t` in every running
/// lane), the branch not where the group gathers lanes waiting there (`resched_pc`), fuel left
/// for it. A region compiled from the branch on is not entered for it (the interpreter's
/// branch does the same), only from wherever the branch goes.
#[inline(always)]
fn fused_branch(
    code: &[Inst],
    w: &Warp,
    i: &Inst,
    pc: u32,
    t: u32,
    bop: BoolOp,
    fuel: u32,
) -> Option<(u32, u32)> {
    let b = code.get(pc as usize + 1)?;
    if b.op != Op::Bra
        || b.guard != i.r[0]
        || i.guard != NONE
        || bop != BoolOp::None
        || fuel == 0
        || pc + 1 >= w.resched_pc
    {
        return None;
    }
    Some((w.mask & if b.guard_neg { !t } else { t }, b.imm as u32))
}

/// `bra` at `pc` taken by the lanes `m` of the running group: the PC to go on at, with the
/// group changed where the lanes part.
#[inline(always)]
fn branch(w: &mut Warp, pc: u32, m: u32, target: u32) -> u32 {
    if m == 0 {
        // Not taken: on to the next instruction, as after any other.
        if pc + 1 >= w.resched_pc {
            w.pc = pc + 1;
            w.repick();
            return w.pc;
        }
        return pc + 1;
    }
    if m == w.mask {
        if target >= w.resched_pc {
            w.pc = target;
            w.repick();
            return w.pc;
        }
        return target;
    }
    if w.waiting == 0 {
        // The group splits and no other lanes wait: the half at the lower PC runs first, the
        // other waits there (what `pick` would choose: both halves are at the group's depth).
        let (taken, fall) = (m, w.mask & !m);
        let (first, first_pc, second, second_pc) = if target > pc + 1 {
            (fall, pc + 1, taken, target)
        } else {
            (taken, target, fall, pc + 1)
        };
        if first_pc != second_pc {
            super::set_lanes(&mut w.lane_pc, second, second_pc);
            w.waiting = second;
            w.resched_pc = second_pc;
        }
        w.mask = first | if first_pc == second_pc { second } else { 0 };
        return first_pc;
    }
    let group = w.mask;
    w.pc = pc;
    w.spill_group();
    each(group, |l| {
        w.lane_pc[l] = if (m >> l) & 1 != 0 { target } else { pc + 1 }
    });
    w.pick();
    w.pc
}

/// What a `trap` report says: cooperative groups trap when `this_grid().sync()` finds no grid
/// workspace, which only a cooperative launch (`cooperative`) provides.
fn trap_message(prog: &Program, cooperative: bool) -> String {
    if prog.reads_grid_workspace && !cooperative {
        "trap instruction executed: cooperative_groups::this_grid().sync() (grid-wide \
         synchronisation) needs a cooperative launch (every block of the grid resident at \
         once: cuLaunchCooperativeKernel on a GPU, LaunchConfig::cooperative in ptxsim), and \
         this launch was not one"
            .into()
    } else {
        "trap instruction executed".into()
    }
}
