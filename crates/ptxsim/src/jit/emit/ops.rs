//! What each compiled operation computes: the Cranelift IR of one PTX instruction's body for
//! one lane, bit-exact with the interpreter's lane loop (`crate::sem`),
//! and the checked global access. The run and region structure around it is `emit`'s.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F32, F64, I32, I64};
use cranelift_codegen::ir::{Block, BlockArg, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;

use super::super::call::*;
use super::super::chains::Chain;
use super::Em;
use crate::ir::{BoolOp, Cmp, FTy, IRnd, Inst, IntTy, MemSpace, Op, Slot, UFn, NONE};
use crate::sem::float::{CANON_NAN32, CANON_NAN64};

/// Sign-extend the low `bits` bits of `x` (as `sem::int::sext`).
fn sext(b: &mut FunctionBuilder, x: Value, bits: u8) -> Value {
    if bits >= 64 {
        return x;
    }
    let s = 64 - bits as i64;
    let y = b.ins().ishl_imm_s(x, s);
    b.ins().sshr_imm_s(y, s)
}

/// Zero-extend the low `bits` bits of `x` (as `sem::int::zext`).
fn zext(b: &mut FunctionBuilder, x: Value, bits: u8) -> Value {
    if bits >= 64 {
        return x;
    }
    b.ins().band_imm_s(x, ((1u128 << bits) - 1) as i64)
}

/// `sem::int::ext` truncated to 64 bits (bits ≥ 8 here).
pub(super) fn ext(b: &mut FunctionBuilder, x: Value, t: IntTy) -> Value {
    if t.signed {
        sext(b, x, t.bits)
    } else {
        zext(b, x, t.bits)
    }
}

/// A boolean (i8 0/1) as a 0/1 register value.
fn b64(b: &mut FunctionBuilder, c: Value) -> Value {
    b.ins().uextend(I64, c)
}

fn int_cc(cmp: Cmp, signed: bool) -> Option<IntCC> {
    use IntCC::*;
    Some(match (cmp, signed) {
        (Cmp::Eq | Cmp::Equ, _) => Equal,
        (Cmp::Ne | Cmp::Neu, _) => NotEqual,
        (Cmp::Lt | Cmp::Ltu, true) => SignedLessThan,
        (Cmp::Le | Cmp::Leu, true) => SignedLessThanOrEqual,
        (Cmp::Gt | Cmp::Gtu, true) => SignedGreaterThan,
        (Cmp::Ge | Cmp::Geu, true) => SignedGreaterThanOrEqual,
        (Cmp::Lt | Cmp::Ltu, false) => UnsignedLessThan,
        (Cmp::Le | Cmp::Leu, false) => UnsignedLessThanOrEqual,
        (Cmp::Gt | Cmp::Gtu, false) => UnsignedGreaterThan,
        (Cmp::Ge | Cmp::Geu, false) => UnsignedGreaterThanOrEqual,
        (Cmp::Num | Cmp::Nan, _) => return None,
    })
}

fn float_cc(cmp: Cmp) -> FloatCC {
    use FloatCC::*;
    match cmp {
        Cmp::Eq => Equal,
        Cmp::Ne => OrderedNotEqual,
        Cmp::Lt => LessThan,
        Cmp::Le => LessThanOrEqual,
        Cmp::Gt => GreaterThan,
        Cmp::Ge => GreaterThanOrEqual,
        Cmp::Equ => UnorderedOrEqual,
        Cmp::Neu => NotEqual,
        Cmp::Ltu => UnorderedOrLessThan,
        Cmp::Leu => UnorderedOrLessThanOrEqual,
        Cmp::Gtu => UnorderedOrGreaterThan,
        Cmp::Geu => UnorderedOrGreaterThanOrEqual,
        Cmp::Num => Ordered,
        Cmp::Nan => Unordered,
    }
}

impl Em<'_, '_> {
    /// The body of instruction `i` at `pc` (its guard is `emit`'s).
    pub(super) fn op(&mut self, pc: u32, i: &Inst) {
        let r = i.r;
        macro_rules! a {
            () => {
                self.get(r[1])
            };
        }
        macro_rules! bb {
            () => {
                self.get(r[2])
            };
        }
        macro_rules! c {
            () => {
                self.get(r[3])
            };
        }
        let d = r[0];
        match i.op {
            Op::Nop | Op::Bra => {}
            Op::Mov => {
                // The float views are copied too, so that a float moved stays in a float register.
                match self.prim.get(&d) {
                    Some(FTy::F32) => {
                        let f = self.get_f32(r[1]);
                        self.b.def_var(self.f32s[&d], f);
                        return;
                    }
                    Some(_) => {
                        let g = self.get_f64(r[1]);
                        self.b.def_var(self.f64s[&d], g);
                        return;
                    }
                    None => {}
                }
                let x = a!();
                self.b.def_var(self.vars[&d], x);
                if let Some(&v) = self.f32s.get(&d) {
                    let f = self.get_f32(r[1]);
                    self.b.def_var(v, f);
                }
                if let Some(&v) = self.f64s.get(&d) {
                    let g = self.get_f64(r[1]);
                    self.b.def_var(v, g);
                }
            }
            Op::Add | Op::Sub | Op::MulLo | Op::And | Op::Or | Op::Xor => {
                let (x, y) = (a!(), bb!());
                let v = match i.op {
                    Op::Add => self.b.ins().iadd(x, y),
                    Op::Sub => self.b.ins().isub(x, y),
                    Op::MulLo => self.b.ins().imul(x, y),
                    Op::And => self.b.ins().band(x, y),
                    Op::Or => self.b.ins().bor(x, y),
                    _ => self.b.ins().bxor(x, y),
                };
                self.set(d, v);
            }
            Op::MadLo => {
                let (x, y, z) = (a!(), bb!(), c!());
                let p = self.b.ins().imul(x, y);
                let v = self.b.ins().iadd(p, z);
                self.set(d, v);
            }
            Op::Not => {
                let x = a!();
                let v = self.b.ins().bnot(x);
                self.set(d, v);
            }
            Op::Neg => {
                let x = a!();
                let v = self.b.ins().ineg(x);
                self.set(d, v);
            }
            Op::PNot => {
                let x = a!();
                let y = self.b.ins().band_imm_s(x, 1);
                let v = self.b.ins().bxor_imm_s(y, 1);
                self.set(d, v);
            }
            Op::CNot { bits } => {
                let x = a!();
                let z = zext(&mut self.b, x, bits);
                let c = self.b.ins().icmp_imm_s(IntCC::Equal, z, 0);
                let v = b64(&mut self.b, c);
                self.set(d, v);
            }
            Op::Shl { bits } => {
                let (x, y) = (a!(), bb!());
                let s = self.b.ins().band_imm_s(y, 0xFFFF_FFFF);
                let big =
                    self.b
                        .ins()
                        .icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, s, bits as i64);
                let sh = self.b.ins().ishl(x, s);
                let zero = self.b.ins().iconst(I64, 0);
                let v = self.b.ins().select(big, zero, sh);
                self.set(d, v);
            }
            Op::Shr { ty } => {
                let (x, y) = (a!(), bb!());
                let s = self.b.ins().band_imm_s(y, 0xFFFF_FFFF);
                let v = if ty.signed {
                    let e = sext(&mut self.b, x, ty.bits);
                    let lim = (ty.bits as i64 - 1).min(63);
                    let limv = self.b.ins().iconst(I64, lim);
                    let s = self.b.ins().umin(s, limv);
                    self.b.ins().sshr(e, s)
                } else {
                    let e = zext(&mut self.b, x, ty.bits);
                    let big = self.b.ins().icmp_imm_s(
                        IntCC::UnsignedGreaterThanOrEqual,
                        s,
                        ty.bits as i64,
                    );
                    let sh = self.b.ins().ushr(e, s);
                    let zero = self.b.ins().iconst(I64, 0);
                    self.b.ins().select(big, zero, sh)
                };
                self.set(d, v);
            }
            Op::MulHi(t) => {
                let (x, y) = (a!(), bb!());
                let v = if t.bits == 64 {
                    if t.signed {
                        self.b.ins().smulhi(x, y)
                    } else {
                        self.b.ins().umulhi(x, y)
                    }
                } else {
                    let (x, y) = (ext(&mut self.b, x, t), ext(&mut self.b, y, t));
                    let p = self.b.ins().imul(x, y);
                    if t.signed {
                        self.b.ins().sshr_imm_s(p, 32)
                    } else {
                        self.b.ins().ushr_imm_s(p, 32)
                    }
                };
                self.set(d, v);
            }
            Op::MulWide(t) | Op::MadWide(t) => {
                let (x, y) = (a!(), bb!());
                let (x, y) = (ext(&mut self.b, x, t), ext(&mut self.b, y, t));
                let mut v = self.b.ins().imul(x, y);
                if matches!(i.op, Op::MadWide(_)) {
                    let z = c!();
                    v = self.b.ins().iadd(v, z);
                }
                self.set(d, v);
            }
            Op::Min(t) | Op::Max(t) => {
                let (x, y) = (a!(), bb!());
                let (ex, ey) = (ext(&mut self.b, x, t), ext(&mut self.b, y, t));
                let cc = match (i.op, t.signed) {
                    (Op::Min(_), true) => IntCC::SignedLessThanOrEqual,
                    (Op::Min(_), false) => IntCC::UnsignedLessThanOrEqual,
                    (_, true) => IntCC::SignedGreaterThanOrEqual,
                    (_, false) => IntCC::UnsignedGreaterThanOrEqual,
                };
                let c = self.b.ins().icmp(cc, ex, ey);
                let v = self.b.ins().select(c, x, y);
                self.set(d, v);
            }
            Op::Abs(t) => {
                let x = a!();
                let e = sext(&mut self.b, x, t.bits);
                let v = self.b.ins().iabs(e);
                self.set(d, v);
            }
            Op::Pack { n, bits } => {
                let mut acc = self.b.ins().iconst(I64, 0);
                for k in 0..n as usize {
                    let x = self.get(r[k + 1]);
                    let z = zext(&mut self.b, x, bits);
                    let s = self.b.ins().ishl_imm_s(z, (k as u32 * bits as u32) as i64);
                    acc = self.b.ins().bor(acc, s);
                }
                self.set(d, acc);
            }
            Op::Unpack { n, bits } => {
                let x = self.get(r[5]);
                let mut parts = Vec::new();
                for k in 0..n as usize {
                    let s = self.b.ins().ushr_imm_s(x, (k as u32 * bits as u32) as i64);
                    parts.push(zext(&mut self.b, s, bits));
                }
                for (k, v) in parts.into_iter().enumerate() {
                    self.set(r[k], v);
                }
            }
            Op::FAdd32
            | Op::FSub32
            | Op::FMul32
            | Op::FDiv32
            | Op::FFma32
            | Op::FAdd64
            | Op::FSub64
            | Op::FMul64
            | Op::FDiv64
            | Op::FFma64 => {
                use Op::*;
                let ty = if matches!(i.op, FAdd64 | FSub64 | FMul64 | FDiv64 | FFma64) {
                    FTy::F64
                } else {
                    FTy::F32
                };
                let (x, y) = (self.get_float_raw(r[1], ty), self.get_float_raw(r[2], ty));
                let v = match i.op {
                    FAdd32 | FAdd64 => self.b.ins().fadd(x, y),
                    FSub32 | FSub64 => self.b.ins().fsub(x, y),
                    FMul32 | FMul64 => self.b.ins().fmul(x, y),
                    FDiv32 | FDiv64 => self.b.ins().fdiv(x, y),
                    _ => {
                        let z = self.get_float_raw(r[3], ty);
                        self.b.ins().fma(x, y, z)
                    }
                };
                // NaN results made canonical, except in a lazy register, which is made canonical
                // where its bits are read (`lazy_floats`).
                let v = if self.is_lazy(d) {
                    v
                } else {
                    self.canonical(v, ty)
                };
                self.set_float(d, v, ty);
            }
            // As the interpreter: on the low `bits` bits, zero-extended.
            Op::Popc { bits } => {
                let x = a!();
                let z = zext(&mut self.b, x, bits);
                let v = self.b.ins().popcnt(z);
                self.set(d, v);
            }
            Op::Clz { bits } => {
                let x = a!();
                let z = zext(&mut self.b, x, bits);
                let c = self.b.ins().clz(z);
                let v = self.b.ins().iadd_imm_s(c, -(64 - bits as i64));
                self.set(d, v);
            }
            Op::Brev { bits } => {
                let x = a!();
                let rev = self.b.ins().bitrev(x);
                let v = self.b.ins().ushr_imm_s(rev, 64 - bits as i64);
                self.set(d, v);
            }
            Op::Div(t) | Op::Rem(t) => {
                // As `sem::int::div` / `sem::int::rem`: on the operands extended to 64 bits; a zero
                // divisor gives all ones, i64::MIN / -1 wraps (remainder 0). Cranelift's
                // divisions trap on those, so they divide by 1 instead.
                let is_div = matches!(i.op, Op::Div(_));
                let (x, y) = (a!(), bb!());
                let (x, y) = (ext(&mut self.b, x, t), ext(&mut self.b, y, t));
                let zero = self.b.ins().icmp_imm_s(IntCC::Equal, y, 0);
                let bad = if t.signed {
                    // i64::MIN / 1 and i64::MIN % 1 are the wrapped results of / -1 and % -1.
                    let xmin = self.b.ins().icmp_imm_s(IntCC::Equal, x, i64::MIN);
                    let ym1 = self.b.ins().icmp_imm_s(IntCC::Equal, y, -1);
                    let ovf = self.b.ins().band(xmin, ym1);
                    self.b.ins().bor(zero, ovf)
                } else {
                    zero
                };
                let one = self.b.ins().iconst(I64, 1);
                let sy = self.b.ins().select(bad, one, y);
                let q = match (is_div, t.signed) {
                    (true, true) => self.b.ins().sdiv(x, sy),
                    (true, false) => self.b.ins().udiv(x, sy),
                    (false, true) => self.b.ins().srem(x, sy),
                    (false, false) => self.b.ins().urem(x, sy),
                };
                let ones = self.b.ins().iconst(I64, -1);
                let v = self.b.ins().select(zero, ones, q);
                self.set(d, v);
            }
            Op::FUnary { f, ty, .. } => {
                let wide = ty == FTy::F64;
                let x = self.get_float(r[1], ty);
                let one = |em: &mut Self| {
                    if wide {
                        em.b.ins().f64const(1.0)
                    } else {
                        em.b.ins().f32const(1.0)
                    }
                };
                // The interpreter's host operations, so the bits (NaN payloads too) agree.
                let v = match f {
                    UFn::Abs => self.b.ins().fabs(x),
                    UFn::Neg => self.b.ins().fneg(x),
                    UFn::Sqrt => self.b.ins().sqrt(x),
                    UFn::Rcp => {
                        let c = one(self);
                        self.b.ins().fdiv(c, x)
                    }
                    _ if wide => {
                        let s = self.b.ins().sqrt(x);
                        let c = one(self);
                        self.b.ins().fdiv(c, s)
                    }
                    _ => {
                        // f32 rsqrt: 1 / sqrt in f64, rounded to f32 (as `sem::float::funary`).
                        let w = self.b.ins().fpromote(F64, x);
                        let s = self.b.ins().sqrt(w);
                        let c = self.b.ins().f64const(1.0);
                        let q = self.b.ins().fdiv(c, s);
                        self.b.ins().fdemote(F32, q)
                    }
                };
                self.set_float(d, v, ty);
            }
            Op::FMin { ty, nan, .. } | Op::FMax { ty, nan, .. } => {
                // As `sem::float::fminmax`: a NaN operand gives the other (the canonical NaN when
                // both are, or with .NaN any is); -0 is below +0.
                let is_max = matches!(i.op, Op::FMax { .. });
                let (x, y) = (self.get_float_raw(r[1], ty), self.get_float_raw(r[2], ty));
                let (ity, fty) = if ty == FTy::F64 {
                    (I64, F64)
                } else {
                    (I32, F32)
                };
                let none = MemFlagsData::new();
                let lt = self.b.ins().fcmp(FloatCC::LessThan, x, y);
                let pick = if is_max {
                    self.b.ins().select(lt, y, x)
                } else {
                    self.b.ins().select(lt, x, y)
                };
                // Equal values differ at most in the sign of zero: or (min) / and (max) of the bits.
                let (xb, yb) = (
                    self.b.ins().bitcast(ity, none, x),
                    self.b.ins().bitcast(ity, none, y),
                );
                let eb = if is_max {
                    self.b.ins().band(xb, yb)
                } else {
                    self.b.ins().bor(xb, yb)
                };
                let ev = self.b.ins().bitcast(fty, none, eb);
                let eq = self.b.ins().fcmp(FloatCC::Equal, x, y);
                let v = self.b.ins().select(eq, ev, pick);
                let xn = self.b.ins().fcmp(FloatCC::Unordered, x, x);
                let yn = self.b.ins().fcmp(FloatCC::Unordered, y, y);
                let canon = self.canon_nan(ty);
                let v = if nan {
                    let any = self.b.ins().bor(xn, yn);
                    self.b.ins().select(any, canon, v)
                } else {
                    let v = self.b.ins().select(yn, x, v);
                    let v = self.b.ins().select(xn, y, v);
                    let both = self.b.ins().band(xn, yn);
                    self.b.ins().select(both, canon, v)
                };
                self.set_float(d, v, ty);
            }
            Op::SetpI { cmp, ty, bop, cneg } => {
                let (x, y) = (a!(), bb!());
                let t = match int_cc(cmp, ty.signed) {
                    Some(cc) => {
                        let (ex, ey) = (ext(&mut self.b, x, ty), ext(&mut self.b, y, ty));
                        let c = self.b.ins().icmp(cc, ex, ey);
                        b64(&mut self.b, c)
                    }
                    None => self.b.ins().iconst(I64, (cmp == Cmp::Num) as i64),
                };
                self.write_setp(i, t, bop, cneg);
            }
            Op::SetpF {
                cmp, ty, bop, cneg, ..
            } => {
                let (x, y) = (self.get_float_raw(r[1], ty), self.get_float_raw(r[2], ty));
                let c = self.b.ins().fcmp(float_cc(cmp), x, y);
                let t = b64(&mut self.b, c);
                self.write_setp(i, t, bop, cneg);
            }
            Op::Selp => {
                let (x, y, z) = (a!(), bb!(), c!());
                let c = self.b.ins().band_imm_s(z, 1);
                let v = self.b.ins().select(c, x, y);
                self.set(d, v);
            }
            Op::CvtII { from, to, .. } => {
                let x = a!();
                let e = ext(&mut self.b, x, from);
                let v = ext(&mut self.b, e, to);
                self.set(d, v);
            }
            Op::CvtIF { from, to, .. } => {
                let x = a!();
                let x = self.b.ins().ireduce(I32, x);
                let fty = if to == FTy::F32 { F32 } else { F64 };
                let f = if from.signed {
                    self.b.ins().fcvt_from_sint(fty, x)
                } else {
                    self.b.ins().fcvt_from_uint(fty, x)
                };
                self.set_float(d, f, to);
            }
            Op::CvtFI { from, to, irnd, .. } => {
                // (NaN converts whatever its payload.)
                let f = self.get_float_raw(r[1], from);
                // The conversion itself truncates (saturating, NaN to 0, as Rust's `as`).
                let f = match irnd {
                    IRnd::Rni => self.b.ins().nearest(f),
                    IRnd::Rmi => self.b.ins().floor(f),
                    IRnd::Rpi => self.b.ins().ceil(f),
                    _ => f,
                };
                let ity = if to.bits == 32 { I32 } else { I64 };
                let n = if to.signed {
                    self.b.ins().fcvt_to_sint_sat(ity, f)
                } else {
                    self.b.ins().fcvt_to_uint_sat(ity, f)
                };
                // PTX: NaN gives 1 << (width - 1) from f64 or into 64 bits (0 otherwise).
                let n = if from == FTy::F64 || to.bits == 64 {
                    let nan = self.b.ins().fcmp(FloatCC::Unordered, f, f);
                    let k = self.b.ins().iconst(ity, 1i64 << (to.bits - 1));
                    self.b.ins().select(nan, k, n)
                } else {
                    n
                };
                let v = match (to.bits, to.signed) {
                    (32, true) => self.b.ins().sextend(I64, n),
                    (32, false) => self.b.ins().uextend(I64, n),
                    _ => n,
                };
                self.set(d, v);
            }
            Op::CvtFF { from, .. } => {
                if from == FTy::F32 {
                    let f = self.get_f32(r[1]);
                    let g = self.b.ins().fpromote(F64, f);
                    self.set_f64(d, g);
                } else {
                    // Round to nearest even, as the interpreter's `as f32`.
                    let g = self.get_f64(r[1]);
                    let f = self.b.ins().fdemote(F32, g);
                    self.set_f32(d, f);
                }
            }
            Op::Cvta { to, space } => {
                let x = a!();
                let win = crate::sem::address::window(space) as i64;
                let v = self
                    .b
                    .ins()
                    .iadd_imm_s(x, if to { win.wrapping_neg() } else { win });
                self.set(d, v);
            }
            Op::LdK { size, n, sext: sx } => {
                for (k, &slot) in r[..n as usize].iter().enumerate() {
                    let off = (i.imm as u64 + (k * size as usize) as u64) as i32;
                    let v = if (off as usize) + size as usize <= INLINE_PARAM_BYTES {
                        self.load(self.ctx, CTX_INLINE_PARAMS + off, size, sx)
                    } else {
                        let fl = MemFlagsData::trusted();
                        let params = self.b.ins().load(I64, fl, self.ctx, CTX_PARAMS);
                        self.load(params, off, size, sx)
                    };
                    self.set(slot, v);
                }
            }
            Op::Ld {
                space,
                size,
                n,
                sext: sx,
            } => {
                let total = size as u64 * n as u64;
                let host = if space == MemSpace::Shared {
                    self.shared_addr(pc)
                } else {
                    self.global_addr(pc, i, total)
                };
                let fl = self.load_flags();
                let mut vals = Vec::new();
                for (k, dst) in r[..n as usize].iter().enumerate() {
                    let off = (k * size as usize) as i32;
                    // A slot read as a float is loaded into a float register (same bits).
                    vals.push(match (size, sx) {
                        (4, false) if self.f32s.contains_key(dst) => {
                            (self.b.ins().load(F32, fl, host, off), 32)
                        }
                        (8, _) if self.f64s.contains_key(dst) => {
                            (self.b.ins().load(F64, fl, host, off), 64)
                        }
                        _ => (self.load(host, off, size, sx), 0),
                    });
                }
                for (k, (v, f)) in vals.into_iter().enumerate() {
                    match f {
                        32 => self.set_f32(r[k], v),
                        64 => self.set_f64(r[k], v),
                        _ => self.set(r[k], v),
                    }
                }
            }
            Op::St { space, size, n } => {
                let total = size as u64 * n as u64;
                let host = if space == MemSpace::Shared {
                    self.shared_addr(pc)
                } else {
                    self.global_addr(pc, i, total)
                };
                let fl = MemFlagsData::trusted();
                for (k, &slot) in r[..n as usize].iter().enumerate() {
                    let off = (k * size as usize) as i32;
                    // A value in a float register is stored from there (same bits).
                    if size == 4 && self.f32s.contains_key(&slot) {
                        let f = self.get_f32(slot);
                        self.b.ins().store(fl, f, host, off);
                        continue;
                    }
                    if size == 8 && self.f64s.contains_key(&slot) {
                        let g = self.get_f64(slot);
                        self.b.ins().store(fl, g, host, off);
                        continue;
                    }
                    let v = self.get(slot);
                    match size {
                        1 => self.b.ins().istore8(fl, v, host, off),
                        2 => self.b.ins().istore16(fl, v, host, off),
                        4 => self.b.ins().istore32(fl, v, host, off),
                        _ => self.b.ins().store(fl, v, host, off),
                    };
                }
            }
            // `ir::defuse::lane_local` admits nothing else.
            _ => self.exit_at(pc, 1),
        }
    }

    /// Slot `s` read as a float of type `ty` (f32 or f64).
    fn get_float(&mut self, s: Slot, ty: FTy) -> Value {
        if ty == FTy::F64 {
            self.get_f64(s)
        } else {
            self.get_f32(s)
        }
    }

    /// As `get_float`, for operations whose result does not depend on a NaN operand's payload.
    fn get_float_raw(&mut self, s: Slot, ty: FTy) -> Value {
        if ty == FTy::F64 {
            self.get_f64_raw(s)
        } else {
            self.get_f32_raw(s)
        }
    }

    /// Write slot `s` with the float `v` of type `ty` (f32 or f64).
    fn set_float(&mut self, s: Slot, v: Value, ty: FTy) {
        if ty == FTy::F64 {
            self.set_f64(s, v)
        } else {
            self.set_f32(s, v)
        }
    }

    /// The canonical NaN of `ty` (f32 or f64), as arithmetic results give it.
    pub(super) fn canon_nan(&mut self, ty: FTy) -> Value {
        if ty == FTy::F64 {
            self.b.ins().f64const(f64::from_bits(CANON_NAN64))
        } else {
            self.b.ins().f32const(f32::from_bits(CANON_NAN32 as u32))
        }
    }

    /// `setp` results: d ← t bop c, r[4] ← !t bop c (t, c are 0/1 values).
    fn write_setp(&mut self, i: &Inst, t: Value, bop: BoolOp, cneg: bool) {
        let c = if i.r[3] != NONE {
            let c = self.get(i.r[3]);
            let c = self.b.ins().band_imm_s(c, 1);
            if cneg {
                self.b.ins().bxor_imm_s(c, 1)
            } else {
                c
            }
        } else {
            self.b.ins().iconst(I64, 0)
        };
        let nt = self.b.ins().bxor_imm_s(t, 1);
        let combine = |b: &mut FunctionBuilder, x: Value| match bop {
            BoolOp::None => x,
            BoolOp::And => b.ins().band(x, c),
            BoolOp::Or => b.ins().bor(x, c),
            BoolOp::Xor => b.ins().bxor(x, c),
        };
        let p = combine(&mut self.b, t);
        let q = combine(&mut self.b, nt);
        self.set(i.r[0], p);
        if i.r[4] != NONE {
            self.set(i.r[4], q);
        }
    }

    /// Load `size` bytes at `base + off`, zero- or sign-extended to 64 bits.
    fn load(&mut self, base: Value, off: i32, size: u8, sx: bool) -> Value {
        let fl = self.load_flags();
        match (size, sx) {
            (1, false) => self.b.ins().uload8(I64, fl, base, off),
            (1, true) => self.b.ins().sload8(I64, fl, base, off),
            (2, false) => self.b.ins().uload16(I64, fl, base, off),
            (2, true) => self.b.ins().sload16(I64, fl, base, off),
            (4, false) => self.b.ins().uload32(fl, base, off),
            (4, true) => self.b.ins().sload32(fl, base, off),
            _ => self.b.ins().load(I64, fl, base, off),
        }
    }

    /// Flags of a load: trusted (checked, aligned); in a gang function whose loop stores
    /// nothing (`gang`), also free to move, so that Cranelift places each load next to the
    /// arithmetic that uses it instead of all of them first (which ran out of registers).
    fn load_flags(&self) -> MemFlagsData {
        if self.movable_loads {
            MemFlagsData::trusted().with_readonly().with_can_move()
        } else {
            MemFlagsData::trusted()
        }
    }

    /// The host address of the `total`-byte global access of `i`: checked here, or already by
    /// the head of its group (`emit::access_groups`).
    fn global_addr(&mut self, pc: u32, i: &Inst, total: u64) -> Value {
        let k = (pc - self.lo) as usize;
        let h = self.group_of[k];
        if let Some(&delta) = self.fast.as_ref().and_then(|f| f.get(&h)) {
            // In a loop's unchecked copy: the check before the loop covered every iteration.
            let base = self.get(i.r[4]);
            let addr = self.b.ins().iadd_imm_s(base, i.imm);
            return self.b.ins().iadd(addr, delta);
        }
        let g = self.groups.get(&h).copied().unwrap_or(super::Group {
            lo: i.imm,
            span: total,
            align: total.min(16),
        });
        if h != k {
            // Checked with its group's head.
            if let Some(&start) = self.group_host.get(&h) {
                return self.b.ins().iadd_imm_s(start, i.imm - g.lo);
            }
        }
        let member = self.chains.members.get(&k).map(|m| m.0);
        if let Some(&delta) = member.and_then(|ch| self.chain_delta.get(&ch)) {
            // Covered by its chain's head: the same translation.
            let base = self.get(i.r[4]);
            let addr = self.b.ins().iadd_imm_s(base, g.lo);
            let start = self.b.ins().iadd(addr, delta);
            self.group_host.insert(k, start);
            return self.b.ins().iadd_imm_s(start, i.imm - g.lo);
        }
        let start = self.checked(pc, i.r[4], g);
        if let Some(&c) = self.chains.heads.get(&k) {
            self.check_chain(pc, i.r[4], g, c, start);
        }
        self.group_host.insert(k, start);
        self.b.ins().iadd_imm_s(start, i.imm - g.lo)
    }

    /// For the head of a chain (`chains`) at `pc` whose first position `start` (host address)
    /// has been checked: check the last position against the same allocation and the step's
    /// alignment and size, or leave before the head. Records the host-minus-device difference
    /// for the members.
    fn check_chain(&mut self, pc: u32, base_slot: Slot, g: super::Group, c: Chain, start: Value) {
        let base = self.get(base_slot);
        let addr = self.b.ins().iadd_imm_s(base, g.lo);
        let step = self.get(c.step);
        // (|step| < 2^31: no position between the first and the last wraps around.)
        let wrong = self.bad_step(step, g.align);
        let on = self.b.create_block();
        self.brif_exit(wrong, on, &[], pc, 1);
        self.b.switch_to_block(on);
        self.b.seal_block(on);
        let span = self.b.ins().imul_imm_s(step, c.last as i64);
        let last = self.b.ins().iadd(addr, span);
        // The entry now holds the allocation of the first position (filled by `translate` if
        // the check missed).
        let outside = self.outside_entry(pc, last, g.align);
        let on = self.b.create_block();
        self.brif_exit(outside, on, &[], pc, 1);
        self.b.switch_to_block(on);
        self.b.seal_block(on);
        let delta = self.b.ins().isub(start, addr);
        self.chain_delta.insert((pc - self.lo) as usize, delta);
    }

    /// Nonzero unless `step` is a multiple of `align` and |step| < 2^31 (the step of a chain of
    /// accesses, or of a loop's): adding 2^31 keeps the low bits and puts a small step's high
    /// half at zero, so one test checks both.
    pub(super) fn bad_step(&mut self, step: Value, align: u64) -> Value {
        let shifted = self.b.ins().iadd_imm_s(step, 1 << 31);
        let mask = !0xFFFF_FFFFi64 | (align as i64 - 1);
        self.b.ins().band_imm_s(shifted, mask)
    }

    /// Whether the access at device address `pos` is outside the allocation (or misaligned for
    /// `align`) that the cache entry of the check at `pc` holds now.
    pub(super) fn outside_entry(&mut self, pc: u32, pos: Value, align: u64) -> Value {
        let ent = self.entry(pc);
        let cb = self.entry_field(ent, 0);
        let units = self.entry_field(ent, 1);
        let off = self.b.ins().isub(pos, cb);
        let rot = if align > 1 {
            self.b.ins().rotr_imm_s(off, align.trailing_zeros() as i64)
        } else {
            off
        };
        self.b
            .ins()
            .icmp(IntCC::UnsignedGreaterThanOrEqual, rot, units)
    }

    /// The cache entry of the check at `pc`: the index of its variables when it is held,
    /// else where it is in memory.
    fn entry(&mut self, pc: u32) -> Entry {
        let ci = self.cache_of[&((pc - self.lo) as usize)];
        match self.held.iter().position(|h| h.0 == ci) {
            Some(h) => Entry::Held(h),
            None => {
                let (ent, at) = self.cache_ent(ci);
                Entry::At(ent, at)
            }
        }
    }

    /// Field `k` of an entry (0: base, 1: units, 2: host).
    fn entry_field(&mut self, e: Entry, k: usize) -> Value {
        match e {
            Entry::Held(h) => self.b.use_var(self.held[h].1[k]),
            Entry::At(ent, at) => {
                let off = [ENT_BASE, ENT_UNITS, ENT_HOST][k];
                self.b
                    .ins()
                    .load(I64, MemFlagsData::trusted(), ent, at + off)
            }
        }
    }

    /// Where cache entry `ci` is: a base value and an offset.
    fn cache_ent(&mut self, ci: u32) -> (Value, i32) {
        let fl = MemFlagsData::trusted();
        // Inside the context for the first ones, else through `caches`.
        if (ci as usize) < INLINE_CACHES {
            (self.ctx, CTX_INLINE_CACHES + (ci as i64 * ENT_SIZE) as i32)
        } else {
            let caches = self.b.ins().load(I64, fl, self.ctx, CTX_CACHES);
            let k = ci as i64 - INLINE_CACHES as i64;
            (self.b.ins().iadd_imm_s(caches, k * ENT_SIZE), 0)
        }
    }

    /// Load held entry `k` into its variables (at a lane's entry, and after `translate` filled
    /// it).
    pub(super) fn reload_held(&mut self, k: usize) {
        let fl = MemFlagsData::trusted();
        let (ci, vars) = self.held[k];
        let (ent, at) = self.cache_ent(ci);
        for (v, off) in vars.into_iter().zip([ENT_BASE, ENT_UNITS, ENT_HOST]) {
            let x = self.b.ins().load(I64, fl, ent, at + off);
            self.b.def_var(v, x);
        }
    }

    /// The host address of `[base + g.lo, + g.span)` after checking that it is aligned and
    /// inside one allocation (the check's cache entry, else `translate`); otherwise the lane
    /// leaves the region before the instruction at `pc`.
    fn checked(&mut self, pc: u32, base_slot: Slot, g: super::Group) -> Value {
        let base = self.get(base_slot);
        let addr = self.b.ins().iadd_imm_s(base, g.lo);
        self.check_at(pc, addr, g, None)
    }

    /// The host address of `[addr, addr + g.span)` after checking it against the cache entry
    /// of the check at `pc` (filling the entry on a miss); when it fails the lane leaves before
    /// `pc`, or with `fail`, control goes there.
    pub(super) fn check_at(
        &mut self,
        pc: u32,
        addr: Value,
        g: super::Group,
        fail: Option<Block>,
    ) -> Value {
        let (total, align) = (g.span, g.align);
        let ci = self.cache_of[&((pc - self.lo) as usize)];
        let fl = MemFlagsData::trusted();
        // The entry's base, units and host address: from its variables, or loaded.
        let ent = self.entry(pc);
        let cb = self.entry_field(ent, 0);
        let units = self.entry_field(ent, 1);
        let off = self.b.ins().isub(addr, cb);
        // Rotating the offset right by log2(alignment) keeps an aligned offset's value in
        // alignment units and sends a misaligned one past any limit: one compare checks both.
        let rot = if align > 1 {
            self.b.ins().rotr_imm_s(off, align.trailing_zeros() as i64)
        } else {
            off
        };
        let hit = self.b.ins().icmp(IntCC::UnsignedLessThan, rot, units);
        let hit_blk = self.b.create_block();
        let miss_blk = self.b.create_block();
        let join = self.b.create_block();
        self.b.append_block_param(join, I64);
        self.b.set_cold_block(miss_blk);
        self.b.ins().brif(hit, hit_blk, &[], miss_blk, &[]);
        self.b.seal_block(hit_blk);
        self.b.seal_block(miss_blk);

        self.b.switch_to_block(hit_blk);
        let h = self.entry_field(ent, 2);
        let host = self.b.ins().iadd(h, off);
        self.b.ins().jump(join, &[BlockArg::Value(host)]);

        self.b.switch_to_block(miss_blk);
        // The wrapper preserves every register, so values stay in registers across this cold
        // call (with `translate` called directly, every value live across an access would have
        // to live in a callee-saved register or on the stack).
        let idx = self.b.ins().iconst(I32, ci as i64);
        let tot = self.b.ins().iconst(I64, total as i64);
        let al = self.b.ins().iconst(I64, align as i64);
        self.b
            .ins()
            .call(self.translate, &[self.ctx, idx, addr, tot, al]);
        let host = self.b.ins().load(I64, fl, self.ctx, CTX_HOST_OUT);
        if let Entry::Held(h) = ent {
            // `translate` filled the entry (when it found the allocation).
            self.reload_held(h);
        }
        let bad = self.b.ins().icmp_imm_s(IntCC::Equal, host, 0);
        match fail {
            Some(f) => {
                self.b
                    .ins()
                    .brif(bad, f, &[], join, &[BlockArg::Value(host)]);
            }
            None => self.brif_exit(bad, join, &[BlockArg::Value(host)], pc, 1),
        }

        self.b.switch_to_block(join);
        self.b.seal_block(join);
        self.b.block_params(join)[0]
    }
}

/// Where compiled code finds a cache entry: in held variables (index into `Em::held`), or in
/// memory (base value and offset).
#[derive(Clone, Copy)]
enum Entry {
    Held(usize),
    At(Value, i32),
}
