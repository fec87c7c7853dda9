//! The hot loop: runs one warp's current group instruction by instruction.
//!
//! One `match` over the pre-decoded op; arithmetic goes through the lane loops of `alu`,
//! everything touching memory, other lanes or control state through `Worker` methods. No
//! allocation and no string work happen here.

use std::cmp::Ordering;

use super::alu::{self, bin, each, tern, un};
use super::float::{self as fl, ftz32, ftz64, sat64};
use super::{pred_mask, Fault, Stop, Warp, Worker};
use crate::ir::*;

#[inline(always)]
fn f32v(a: u64) -> f32 {
    f32::from_bits(a as u32)
}
#[inline(always)]
fn f32b(x: f32) -> u64 {
    x.to_bits() as u64
}
#[inline(always)]
fn f64v(a: u64) -> f64 {
    f64::from_bits(a)
}
#[inline(always)]
fn f64b(x: f64) -> u64 {
    x.to_bits()
}

/// Evaluate a comparison given the ordering of its operands (`None`: unordered).
#[inline(always)]
pub fn cmp_ord(c: Cmp, o: Option<Ordering>) -> bool {
    use Ordering::*;
    match (c, o) {
        (Cmp::Num, o) => o.is_some(),
        (Cmp::Nan, o) => o.is_none(),
        (_, None) => matches!(
            c,
            Cmp::Equ | Cmp::Neu | Cmp::Ltu | Cmp::Leu | Cmp::Gtu | Cmp::Geu
        ),
        (Cmp::Eq | Cmp::Equ, Some(o)) => o == Equal,
        (Cmp::Ne | Cmp::Neu, Some(o)) => o != Equal,
        (Cmp::Lt | Cmp::Ltu, Some(o)) => o == Less,
        (Cmp::Le | Cmp::Leu, Some(o)) => o != Greater,
        (Cmp::Gt | Cmp::Gtu, Some(o)) => o == Greater,
        (Cmp::Ge | Cmp::Geu, Some(o)) => o != Less,
    }
}

/// Compute the comparison mask of `f` over the 32 lanes.
#[inline(always)]
fn cmp_mask(w: &Warp, i: &Inst, f: impl Fn(u64, u64) -> bool) -> u32 {
    let a = &w.regs[i.r[1] as usize];
    let b = &w.regs[i.r[2] as usize];
    let mut t = 0u32;
    for l in 0..32 {
        t |= (f(a[l], b[l]) as u32) << l;
    }
    t
}

#[inline(always)]
fn int_cmp_mask(w: &Warp, i: &Inst, cmp: Cmp, ty: IntTy) -> u32 {
    if ty.signed {
        let b = ty.bits;
        match cmp {
            Cmp::Lt => cmp_mask(w, i, |x, y| alu::sext(x, b) < alu::sext(y, b)),
            Cmp::Le => cmp_mask(w, i, |x, y| alu::sext(x, b) <= alu::sext(y, b)),
            Cmp::Gt => cmp_mask(w, i, |x, y| alu::sext(x, b) > alu::sext(y, b)),
            Cmp::Ge => cmp_mask(w, i, |x, y| alu::sext(x, b) >= alu::sext(y, b)),
            Cmp::Eq => cmp_mask(w, i, |x, y| alu::sext(x, b) == alu::sext(y, b)),
            Cmp::Ne => cmp_mask(w, i, |x, y| alu::sext(x, b) != alu::sext(y, b)),
            c => cmp_mask(w, i, |x, y| {
                cmp_ord(c, Some(alu::sext(x, b).cmp(&alu::sext(y, b))))
            }),
        }
    } else {
        let b = ty.bits;
        match cmp {
            Cmp::Lt => cmp_mask(w, i, |x, y| alu::zext(x, b) < alu::zext(y, b)),
            Cmp::Le => cmp_mask(w, i, |x, y| alu::zext(x, b) <= alu::zext(y, b)),
            Cmp::Gt => cmp_mask(w, i, |x, y| alu::zext(x, b) > alu::zext(y, b)),
            Cmp::Ge => cmp_mask(w, i, |x, y| alu::zext(x, b) >= alu::zext(y, b)),
            Cmp::Eq => cmp_mask(w, i, |x, y| alu::zext(x, b) == alu::zext(y, b)),
            Cmp::Ne => cmp_mask(w, i, |x, y| alu::zext(x, b) != alu::zext(y, b)),
            c => cmp_mask(w, i, |x, y| {
                cmp_ord(c, Some(alu::zext(x, b).cmp(&alu::zext(y, b))))
            }),
        }
    }
}

#[inline(always)]
fn float_cmp_mask(w: &Warp, i: &Inst, cmp: Cmp, ty: FTy, ftz: bool) -> u32 {
    match ty {
        FTy::F32 if !ftz => match cmp {
            Cmp::Lt => cmp_mask(w, i, |x, y| f32v(x) < f32v(y)),
            Cmp::Le => cmp_mask(w, i, |x, y| f32v(x) <= f32v(y)),
            Cmp::Gt => cmp_mask(w, i, |x, y| f32v(x) > f32v(y)),
            Cmp::Ge => cmp_mask(w, i, |x, y| f32v(x) >= f32v(y)),
            c => cmp_mask(w, i, |x, y| cmp_ord(c, f32v(x).partial_cmp(&f32v(y)))),
        },
        FTy::F32 => cmp_mask(w, i, |x, y| {
            cmp_ord(cmp, ftz32(f32v(x)).partial_cmp(&ftz32(f32v(y))))
        }),
        FTy::F64 => match cmp {
            Cmp::Lt => cmp_mask(w, i, |x, y| f64v(x) < f64v(y)),
            Cmp::Gt => cmp_mask(w, i, |x, y| f64v(x) > f64v(y)),
            c => cmp_mask(w, i, |x, y| cmp_ord(c, f64v(x).partial_cmp(&f64v(y)))),
        },
        FTy::F16 | FTy::BF16 => cmp_mask(w, i, |x, y| {
            cmp_ord(cmp, fl::get(ty, x).partial_cmp(&fl::get(ty, y)))
        }),
    }
}

/// Write the results of `setp`/`set` for comparison mask `t`.
#[inline(always)]
fn write_setp(w: &mut Warp, i: &Inst, m: u32, t: u32, bop: BoolOp, cneg: bool, set: Option<u64>) {
    let c = if i.r[3] != NONE {
        pred_mask(&w.regs[i.r[3] as usize], cneg)
    } else {
        0
    };
    let (p, q) = match bop {
        BoolOp::None => (t, !t),
        BoolOp::And => (t & c, !t & c),
        BoolOp::Or => (t | c, !t | c),
        BoolOp::Xor => (t ^ c, !t ^ c),
    };
    let d = &mut w.regs[i.r[0] as usize];
    match set {
        None => alu::write(d, m, |l| ((p >> l) & 1) as u64),
        Some(one) => alu::write(d, m, |l| if (p >> l) & 1 != 0 { one } else { 0 }),
    }
    if i.r[4] != NONE {
        let d2 = &mut w.regs[i.r[4] as usize];
        alu::write(d2, m, |l| ((q >> l) & 1) as u64);
    }
}

#[allow(clippy::too_many_arguments)]
fn farith(op: FOp, ty: FTy, rnd: Rnd, ftz: bool, sat: bool, a: u64, b: u64, c: u64) -> u64 {
    match ty {
        FTy::F32 => {
            let f = |x: u64| if ftz { ftz32(f32v(x)) } else { f32v(x) };
            let mut r = fl::f32_arith(op, f(a), f(b), f(c), rnd);
            if ftz {
                r = ftz32(r);
            }
            if sat {
                r = sat64(r as f64) as f32;
            }
            f32b(r)
        }
        FTy::F64 => {
            let mut r = fl::f64_arith(op, f64v(a), f64v(b), f64v(c), rnd);
            if sat {
                r = sat64(r);
            }
            f64b(r)
        }
        FTy::F16 | FTy::BF16 => {
            let g = |x: u64| fl::get(ty, x);
            let mut r = fl::f64_arith(op, g(a), g(b), g(c), Rnd::Rn);
            if sat {
                r = sat64(r);
            }
            fl::put(ty, r)
        }
    }
}

fn funary(f: UFn, ty: FTy, ftz: bool, a: u64) -> u64 {
    match ty {
        FTy::F32 => {
            let x = if ftz { ftz32(f32v(a)) } else { f32v(a) };
            let r = match f {
                UFn::Abs => x.abs(),
                UFn::Neg => -x,
                UFn::Sqrt => x.sqrt(),
                UFn::Rsqrt => (1.0 / (x as f64).sqrt()) as f32,
                UFn::Rcp => 1.0 / x,
                UFn::Sin => x.sin(),
                UFn::Cos => x.cos(),
                UFn::Lg2 => x.log2(),
                UFn::Ex2 => x.exp2(),
                UFn::Tanh => x.tanh(),
            };
            f32b(if ftz { ftz32(r) } else { r })
        }
        FTy::F64 => {
            let x = if ftz { ftz64(f64v(a)) } else { f64v(a) };
            let r = match f {
                UFn::Abs => x.abs(),
                UFn::Neg => -x,
                UFn::Sqrt => x.sqrt(),
                UFn::Rsqrt => 1.0 / x.sqrt(),
                UFn::Rcp => 1.0 / x,
                UFn::Sin => x.sin(),
                UFn::Cos => x.cos(),
                UFn::Lg2 => x.log2(),
                UFn::Ex2 => x.exp2(),
                UFn::Tanh => x.tanh(),
            };
            f64b(if ftz { ftz64(r) } else { r })
        }
        FTy::F16 | FTy::BF16 => {
            if f == UFn::Neg {
                return a ^ 0x8000;
            }
            if f == UFn::Abs {
                return a & 0x7FFF;
            }
            let x = fl::get(ty, a) as f32;
            let r = funary(f, FTy::F32, false, f32b(x));
            fl::put(ty, f32v(r) as f64)
        }
    }
}

fn fminmax(ty: FTy, ftz: bool, nan: bool, is_max: bool, a: u64, b: u64) -> u64 {
    let (x, y) = match ty {
        FTy::F32 if ftz => (ftz32(f32v(a)) as f64, ftz32(f32v(b)) as f64),
        t => (fl::get(t, a), fl::get(t, b)),
    };
    let r = if x.is_nan() || y.is_nan() {
        if nan || (x.is_nan() && y.is_nan()) {
            f64::NAN
        } else if x.is_nan() {
            y
        } else {
            x
        }
    } else if x == y {
        // -0 < +0
        if (x.is_sign_negative() != y.is_sign_negative()) == is_max {
            if x.is_sign_negative() {
                y
            } else {
                x
            }
        } else if x.is_sign_negative() {
            x
        } else {
            y
        }
    } else if (x < y) != is_max {
        x
    } else {
        y
    };
    if r.is_nan() {
        return match ty {
            FTy::F32 => 0x7FFF_FFFF,
            FTy::F64 => 0x7FF8_0000_0000_0000,
            FTy::F16 | FTy::BF16 => 0x7FFF,
        };
    }
    fl::put(ty, r)
}

fn testp(t: TestP, ty: FTy, a: u64) -> u64 {
    let x = fl::get(ty, a);
    let sub = match ty {
        FTy::F32 => f32v(a).is_subnormal(),
        FTy::F64 => x.is_subnormal(),
        FTy::F16 => (a & 0x7C00) == 0 && (a & 0x3FF) != 0,
        FTy::BF16 => (a & 0x7F80) == 0 && (a & 0x7F) != 0,
    };
    (match t {
        TestP::Finite => x.is_finite(),
        TestP::Infinite => x.is_infinite(),
        TestP::Number => !x.is_nan(),
        TestP::NotANumber => x.is_nan(),
        TestP::Normal => x.is_finite() && x != 0.0 && !sub,
        TestP::Subnormal => sub,
    }) as u64
}

fn int_to_float(x: i128, to: FTy, rnd: Rnd) -> u64 {
    match to {
        FTy::F64 => {
            let r = x as f64;
            let err = x.cmp(&(r as i128));
            f64b(fl::round_f64(r, err, rnd))
        }
        FTy::F32 => {
            let r = x as f32;
            let rc = (r as i128).cmp(&x);
            let down = |r: f32| {
                if rc == Ordering::Greater {
                    r.next_down()
                } else {
                    r
                }
            };
            let up = |r: f32| if rc == Ordering::Less { r.next_up() } else { r };
            f32b(match rnd {
                Rnd::Rn => r,
                Rnd::Rm => down(r),
                Rnd::Rp => up(r),
                Rnd::Rz if x >= 0 => down(r),
                Rnd::Rz => up(r),
            })
        }
        FTy::F16 | FTy::BF16 => fl::put(to, x as f32 as f64),
    }
}

fn float_to_int(a: u64, from: FTy, to: IntTy, irnd: IRnd, ftz: bool) -> u64 {
    let mut x = fl::get(from, a);
    if ftz && from == FTy::F32 {
        x = ftz32(x as f32) as f64;
    }
    let r = fl::round_int(x, irnd);
    match (to.bits, to.signed) {
        (8, true) => r as i8 as i64 as u64,
        (16, true) => r as i16 as i64 as u64,
        (32, true) => r as i32 as i64 as u64,
        (64, true) => r as i64 as u64,
        (8, false) => r as u8 as u64,
        (16, false) => r as u16 as u64,
        (32, false) => r as u32 as u64,
        _ => r as u64,
    }
}

#[allow(clippy::too_many_arguments)]
fn float_to_float(a: u64, from: FTy, to: FTy, rnd: Rnd, irnd: IRnd, ftz: bool, sat: bool) -> u64 {
    let mut x = fl::get(from, a);
    if ftz && from == FTy::F32 {
        x = ftz32(x as f32) as f64;
    }
    if irnd != IRnd::None {
        x = fl::round_int(x, irnd);
    }
    if sat {
        x = sat64(x);
    }
    match to {
        FTy::F64 => f64b(x),
        FTy::F32 => {
            let mut r = fl::round_to_f32(x, Ordering::Equal, rnd);
            if ftz {
                r = ftz32(r);
            }
            f32b(r)
        }
        FTy::F16 | FTy::BF16 => fl::put(to, x),
    }
}

impl Worker<'_> {
    /// The interpreter loop (see `cpu` for the two builds of it).
    #[inline(always)]
    pub(super) fn run_warp_impl(&mut self, w: &mut Warp, fuel: &mut u32) -> Result<Stop, Fault> {
        let prog = self.ctx.prog;
        let code: &[Inst] = &prog.code;
        let mut pc = w.pc;
        loop {
            if *fuel == 0 {
                w.pc = pc;
                return Ok(Stop::Yield);
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
            let m = if i.guard == NONE {
                w.mask
            } else {
                w.mask & pred_mask(&w.regs[i.guard as usize], i.guard_neg)
            };
            match i.op {
                Op::Nop => {}
                Op::Mov => un(&mut w.regs, i, m, |a| a),
                Op::Add => bin(&mut w.regs, i, m, |a, b| a.wrapping_add(b)),
                Op::Sub => bin(&mut w.regs, i, m, |a, b| a.wrapping_sub(b)),
                Op::MulLo => bin(&mut w.regs, i, m, |a, b| a.wrapping_mul(b)),
                Op::MadLo => tern(&mut w.regs, i, m, |a, b, c| {
                    a.wrapping_mul(b).wrapping_add(c)
                }),
                Op::And => bin(&mut w.regs, i, m, |a, b| a & b),
                Op::Or => bin(&mut w.regs, i, m, |a, b| a | b),
                Op::Xor => bin(&mut w.regs, i, m, |a, b| a ^ b),
                Op::Not => un(&mut w.regs, i, m, |a| !a),
                Op::Neg => un(&mut w.regs, i, m, |a| a.wrapping_neg()),
                Op::PNot => un(&mut w.regs, i, m, |a| (a & 1) ^ 1),
                Op::CNot { bits } => un(&mut w.regs, i, m, |a| (alu::zext(a, bits) == 0) as u64),
                Op::Shl { bits } => bin(&mut w.regs, i, m, |a, b| alu::shl(a, b, bits)),
                Op::Shr { ty } => bin(&mut w.regs, i, m, |a, b| alu::shr(a, b, ty)),
                Op::MulHi(t) => bin(&mut w.regs, i, m, |a, b| alu::mul_hi(a, b, t)),
                Op::MulWide(t) => {
                    if t.bits == 32 && !t.signed {
                        bin(&mut w.regs, i, m, |a, b| {
                            (a as u32 as u64) * (b as u32 as u64)
                        })
                    } else if t.bits == 32 {
                        bin(&mut w.regs, i, m, |a, b| {
                            ((a as i32 as i64) * (b as i32 as i64)) as u64
                        })
                    } else {
                        bin(&mut w.regs, i, m, |a, b| alu::mul_wide(a, b, t))
                    }
                }
                Op::MadHi(t) => tern(&mut w.regs, i, m, |a, b, c| {
                    alu::mul_hi(a, b, t).wrapping_add(c)
                }),
                Op::MadWide(t) => tern(&mut w.regs, i, m, |a, b, c| {
                    alu::mul_wide(a, b, t).wrapping_add(c)
                }),
                Op::Div(t) => bin(&mut w.regs, i, m, |a, b| alu::div(a, b, t)),
                Op::Rem(t) => bin(&mut w.regs, i, m, |a, b| alu::rem(a, b, t)),
                Op::Min(t) => bin(&mut w.regs, i, m, |a, b| alu::min(a, b, t)),
                Op::Max(t) => bin(&mut w.regs, i, m, |a, b| alu::max(a, b, t)),
                Op::Abs(t) => un(&mut w.regs, i, m, |a| {
                    alu::sext(a, t.bits).wrapping_abs() as u64
                }),
                Op::AddSat => bin(&mut w.regs, i, m, |a, b| {
                    (a as i32).saturating_add(b as i32) as u64
                }),
                Op::SubSat => bin(&mut w.regs, i, m, |a, b| {
                    (a as i32).saturating_sub(b as i32) as u64
                }),
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
                        let (r, co) = alu::carry(
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
                Op::Popc { bits } => un(&mut w.regs, i, m, |a| {
                    alu::zext(a, bits).count_ones() as u64
                }),
                Op::Clz { bits } => un(&mut w.regs, i, m, |a| {
                    (alu::zext(a, bits).leading_zeros() - (64 - bits as u32)) as u64
                }),
                Op::Brev { bits } => un(&mut w.regs, i, m, |a| {
                    a.reverse_bits() >> (64 - bits as u32)
                }),
                Op::Bfind { ty, shiftamt } => {
                    un(&mut w.regs, i, m, |a| alu::bfind(a, ty, shiftamt))
                }
                Op::Bfe(t) => tern(&mut w.regs, i, m, |a, b, c| alu::bfe(a, b, c, t)),
                Op::Bfi { bits } => {
                    let len = w.regs[i.r[4] as usize];
                    let a = w.regs[i.r[1] as usize];
                    let b = w.regs[i.r[2] as usize];
                    let c = w.regs[i.r[3] as usize];
                    let d = &mut w.regs[i.r[0] as usize];
                    alu::write(d, m, |l| alu::bfi(a[l], b[l], c[l], len[l], bits));
                }
                Op::Prmt(mode) => tern(&mut w.regs, i, m, |a, b, c| alu::prmt(a, b, c, mode)),
                Op::Shf { left, wrap } => {
                    tern(&mut w.regs, i, m, |a, b, c| alu::shf(a, b, c, left, wrap))
                }
                Op::Sad(t) => tern(&mut w.regs, i, m, |a, b, c| {
                    let d = (alu::ext(a, t) - alu::ext(b, t)).unsigned_abs() as u64;
                    d.wrapping_add(c)
                }),
                Op::Mul24 { hi, signed, mad } => {
                    if mad {
                        tern(&mut w.regs, i, m, |a, b, c| {
                            alu::mul24(a, b, hi, signed).wrapping_add(c)
                        })
                    } else {
                        bin(&mut w.regs, i, m, |a, b| alu::mul24(a, b, hi, signed))
                    }
                }
                Op::Lop3 { lut } => tern(&mut w.regs, i, m, |a, b, c| {
                    let mut r = 0u64;
                    for k in 0..8 {
                        if (lut >> k) & 1 != 0 {
                            let x = if k & 4 != 0 { a } else { !a };
                            let y = if k & 2 != 0 { b } else { !b };
                            let z = if k & 1 != 0 { c } else { !c };
                            r |= x & y & z;
                        }
                    }
                    r
                }),
                Op::Bmsk { wrap } => bin(&mut w.regs, i, m, |a, b| {
                    let (mut pos, mut len) = (a as u32, b as u32);
                    if wrap {
                        pos &= 31;
                        len &= 31;
                    } else {
                        pos = pos.min(32);
                        len = len.min(32);
                    }
                    let ones = if len >= 32 {
                        u64::MAX
                    } else {
                        (1u64 << len) - 1
                    };
                    ((ones << pos) & 0xFFFF_FFFF) as u32 as u64
                }),
                Op::Szext { signed, wrap } => bin(&mut w.regs, i, m, |a, b| {
                    let n = if wrap {
                        b as u32 & 31
                    } else {
                        (b as u32).min(32)
                    };
                    if n == 0 {
                        return 0;
                    }
                    let x = a as u32 as u64;
                    if signed {
                        alu::sext(x, n as u8) as u32 as u64
                    } else {
                        alu::zext(x, n as u8)
                    }
                }),
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
                Op::Dp4a { a_signed, b_signed } => tern(&mut w.regs, i, m, |a, b, c| {
                    alu::dp4a(a, b, c, a_signed, b_signed)
                }),
                Op::FAdd32 => bin(&mut w.regs, i, m, |a, b| f32b(f32v(a) + f32v(b))),
                Op::FSub32 => bin(&mut w.regs, i, m, |a, b| f32b(f32v(a) - f32v(b))),
                Op::FMul32 => bin(&mut w.regs, i, m, |a, b| f32b(f32v(a) * f32v(b))),
                Op::FFma32 => tern(&mut w.regs, i, m, |a, b, c| {
                    f32b(f32v(a).mul_add(f32v(b), f32v(c)))
                }),
                Op::FDiv32 => bin(&mut w.regs, i, m, |a, b| f32b(f32v(a) / f32v(b))),
                Op::FAdd64 => bin(&mut w.regs, i, m, |a, b| f64b(f64v(a) + f64v(b))),
                Op::FSub64 => bin(&mut w.regs, i, m, |a, b| f64b(f64v(a) - f64v(b))),
                Op::FMul64 => bin(&mut w.regs, i, m, |a, b| f64b(f64v(a) * f64v(b))),
                Op::FFma64 => tern(&mut w.regs, i, m, |a, b, c| {
                    f64b(f64v(a).mul_add(f64v(b), f64v(c)))
                }),
                Op::FDiv64 => bin(&mut w.regs, i, m, |a, b| f64b(f64v(a) / f64v(b))),
                Op::FArith {
                    op,
                    ty,
                    rnd,
                    ftz,
                    sat,
                } => match op {
                    FOp::Sqrt | FOp::Rcp => un(&mut w.regs, i, m, |a| {
                        farith(op, ty, rnd, ftz, sat, a, 0, 0)
                    }),
                    FOp::Fma => tern(&mut w.regs, i, m, |a, b, c| {
                        farith(op, ty, rnd, ftz, sat, a, b, c)
                    }),
                    _ => bin(&mut w.regs, i, m, |a, b| {
                        farith(op, ty, rnd, ftz, sat, a, b, 0)
                    }),
                },
                Op::FUnary { f, ty, ftz } => un(&mut w.regs, i, m, |a| funary(f, ty, ftz, a)),
                Op::FMin { ty, ftz, nan } => {
                    bin(&mut w.regs, i, m, |a, b| fminmax(ty, ftz, nan, false, a, b))
                }
                Op::FMax { ty, ftz, nan } => {
                    bin(&mut w.regs, i, m, |a, b| fminmax(ty, ftz, nan, true, a, b))
                }
                Op::Testp { t, ty } => un(&mut w.regs, i, m, |a| testp(t, ty, a)),
                Op::Copysign(ty) => bin(&mut w.regs, i, m, |a, b| {
                    let sb = match ty {
                        FTy::F16 | FTy::BF16 => 15,
                        FTy::F32 => 31,
                        FTy::F64 => 63,
                    };
                    (b & !(1u64 << sb)) | (a & (1u64 << sb))
                }),
                Op::SetpI { cmp, ty, bop, cneg } => {
                    let t = int_cmp_mask(w, i, cmp, ty);
                    write_setp(w, i, m, t, bop, cneg, None);
                }
                Op::SetpF {
                    cmp,
                    ty,
                    ftz,
                    bop,
                    cneg,
                } => {
                    let t = float_cmp_mask(w, i, cmp, ty, ftz);
                    write_setp(w, i, m, t, bop, cneg, None);
                }
                Op::SetI {
                    cmp,
                    ty,
                    bop,
                    cneg,
                    dst_f32,
                } => {
                    let t = int_cmp_mask(w, i, cmp, ty);
                    let one = if dst_f32 { 0x3F80_0000 } else { 0xFFFF_FFFF };
                    write_setp(w, i, m, t, bop, cneg, Some(one));
                }
                Op::SetF {
                    cmp,
                    ty,
                    ftz,
                    bop,
                    cneg,
                    dst_f32,
                } => {
                    let t = float_cmp_mask(w, i, cmp, ty, ftz);
                    let one = if dst_f32 { 0x3F80_0000 } else { 0xFFFF_FFFF };
                    write_setp(w, i, m, t, bop, cneg, Some(one));
                }
                Op::Selp => tern(&mut w.regs, i, m, |a, b, c| if c & 1 != 0 { a } else { b }),
                Op::Slct { cf32, ftz } => tern(&mut w.regs, i, m, |a, b, c| {
                    let take_a = if cf32 {
                        let x = if ftz { ftz32(f32v(c)) } else { f32v(c) };
                        x >= 0.0
                    } else {
                        (c as i32) >= 0
                    };
                    if take_a {
                        a
                    } else {
                        b
                    }
                }),
                Op::CvtII { from, to, sat } => {
                    if !sat && from.bits == 32 && to.bits == 64 {
                        if from.signed {
                            un(&mut w.regs, i, m, |a| a as i32 as i64 as u64)
                        } else {
                            un(&mut w.regs, i, m, |a| a as u32 as u64)
                        }
                    } else {
                        un(&mut w.regs, i, m, |a| {
                            let v = alu::ext(a, from);
                            let v = if sat {
                                let (lo, hi) = if to.signed {
                                    (-(1i128 << (to.bits - 1)), (1i128 << (to.bits - 1)) - 1)
                                } else {
                                    (0, (1i128 << to.bits) - 1)
                                };
                                v.clamp(lo, hi)
                            } else {
                                v
                            };
                            alu::norm(v as u64, to)
                        })
                    }
                }
                Op::CvtIF { from, to, rnd } => {
                    if from.bits == 32 && to == FTy::F32 && rnd == Rnd::Rn {
                        if from.signed {
                            un(&mut w.regs, i, m, |a| f32b(a as i32 as f32))
                        } else {
                            un(&mut w.regs, i, m, |a| f32b(a as u32 as f32))
                        }
                    } else {
                        un(&mut w.regs, i, m, |a| {
                            int_to_float(alu::ext(a, from), to, rnd)
                        })
                    }
                }
                Op::CvtFI {
                    from,
                    to,
                    irnd,
                    ftz,
                } => un(&mut w.regs, i, m, |a| float_to_int(a, from, to, irnd, ftz)),
                Op::CvtFF {
                    from,
                    to,
                    rnd,
                    irnd,
                    ftz,
                    sat,
                } => {
                    if from == FTy::F32 && to == FTy::F64 && !ftz && !sat && irnd == IRnd::None {
                        un(&mut w.regs, i, m, |a| f64b(f32v(a) as f64))
                    } else {
                        un(&mut w.regs, i, m, |a| {
                            float_to_float(a, from, to, rnd, irnd, ftz, sat)
                        })
                    }
                }
                Op::Pack { n, bits } => {
                    let mut out = [0u64; 32];
                    for k in 0..n as usize {
                        let s = w.regs[i.r[k + 1] as usize];
                        for l in 0..32 {
                            out[l] |= alu::zext(s[l], bits) << (k as u32 * bits as u32);
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
                            d[l] = alu::zext(s[l] >> (k as u32 * bits as u32), bits)
                        });
                    }
                }
                Op::Ld {
                    space,
                    size,
                    n,
                    sext,
                } => self.ld(w, i, m, pc, space, size, n, sext)?,
                Op::St { space, size, n } => self.st(w, i, m, pc, space, size, n)?,
                Op::LdK { size, n, sext } => self.ldk(w, i, m, size, n, sext),
                Op::Atom {
                    space,
                    op,
                    bits,
                    kind,
                } => self.atom(w, i, m, pc, space, op, bits, kind)?,
                Op::Cvta { to, space } => {
                    let win = super::memops::window(space);
                    if to {
                        un(&mut w.regs, i, m, |a| a.wrapping_sub(win))
                    } else {
                        un(&mut w.regs, i, m, |a| a.wrapping_add(win))
                    }
                }
                Op::Isspacep(space) => un(&mut w.regs, i, m, |a| {
                    super::memops::in_space(a, space) as u64
                }),
                Op::Bra => {
                    let target = i.imm as u32;
                    if m == w.mask {
                        pc = target;
                        if pc >= w.resched_pc {
                            w.pc = pc;
                            w.repick();
                            pc = w.pc;
                        }
                        continue;
                    }
                    if m != 0 {
                        let group = w.mask;
                        w.pc = pc;
                        w.spill_group();
                        each(group, |l| {
                            w.lane_pc[l] = if (m >> l) & 1 != 0 { target } else { pc + 1 }
                        });
                        w.pick();
                        pc = w.pc;
                        continue;
                    }
                }
                Op::Exit => {
                    if m != 0 {
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
                        if let Some(s) = self.ret(w, m, pc) {
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
                            "trap instruction executed".into(),
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
                Op::Clock { wide } => {
                    let t = (self.total + self.pending + (self.fuel - *fuel) as u64) * 4;
                    let v = if wide { t } else { t & 0xFFFF_FFFF };
                    let d = &mut w.regs[i.r[0] as usize];
                    alu::write(d, m, |_| v);
                }
                Op::GlobalTimer { hi } => {
                    let t = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_nanos() as u64);
                    let t = if hi { t >> 32 } else { t };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_with_nan() {
        let n = None;
        assert!(!cmp_ord(Cmp::Eq, n));
        assert!(cmp_ord(Cmp::Equ, n));
        assert!(!cmp_ord(Cmp::Ne, n));
        assert!(cmp_ord(Cmp::Neu, n));
        assert!(cmp_ord(Cmp::Nan, n));
        assert!(!cmp_ord(Cmp::Num, n));
        assert!(cmp_ord(Cmp::Le, Some(Ordering::Equal)));
        assert!(!cmp_ord(Cmp::Ltu, Some(Ordering::Equal)));
    }

    #[test]
    fn conversions() {
        assert_eq!(
            float_to_int(
                f32b(-1.5),
                FTy::F32,
                IntTy {
                    bits: 32,
                    signed: true
                },
                IRnd::Rni,
                false
            ) as i32,
            -2
        );
        assert_eq!(
            float_to_int(
                f32b(2.5),
                FTy::F32,
                IntTy {
                    bits: 32,
                    signed: true
                },
                IRnd::Rni,
                false
            ),
            2
        );
        assert_eq!(
            float_to_int(
                f32b(-1.5),
                FTy::F32,
                IntTy {
                    bits: 32,
                    signed: false
                },
                IRnd::Rzi,
                false
            ),
            0
        );
        assert_eq!(
            float_to_int(
                f32b(f32::NAN),
                FTy::F32,
                IntTy {
                    bits: 32,
                    signed: true
                },
                IRnd::Rzi,
                false
            ),
            0
        );
        assert_eq!(
            float_to_int(
                f32b(1e20),
                FTy::F32,
                IntTy {
                    bits: 32,
                    signed: true
                },
                IRnd::Rzi,
                false
            ) as i32,
            i32::MAX
        );
        let big = (1i128 << 24) + 1;
        assert_eq!(f32v(int_to_float(big, FTy::F32, Rnd::Rn)), 16777216.0);
        assert_eq!(f32v(int_to_float(big, FTy::F32, Rnd::Rp)), 16777218.0);
        assert_eq!(f32v(int_to_float(-big, FTy::F32, Rnd::Rz)), -16777216.0);
        assert_eq!(f32v(int_to_float(-big, FTy::F32, Rnd::Rm)), -16777218.0);
        let x = f64b(1.0 + f64::EPSILON);
        assert_eq!(
            f32v(float_to_float(
                x,
                FTy::F64,
                FTy::F32,
                Rnd::Rp,
                IRnd::None,
                false,
                false
            )),
            1.0f32.next_up()
        );
        assert_eq!(
            f32v(float_to_float(
                x,
                FTy::F64,
                FTy::F32,
                Rnd::Rn,
                IRnd::None,
                false,
                false
            )),
            1.0
        );
        assert_eq!(
            f32v(float_to_float(
                f32b(2.5),
                FTy::F32,
                FTy::F32,
                Rnd::Rn,
                IRnd::Rni,
                false,
                false
            )),
            2.0
        );
        assert_eq!(
            f32v(float_to_float(
                f32b(1.7),
                FTy::F32,
                FTy::F32,
                Rnd::Rn,
                IRnd::None,
                false,
                true
            )),
            1.0
        );
    }

    #[test]
    fn min_max_nan_and_zero() {
        let mn = |a: f32, b: f32| f32v(fminmax(FTy::F32, false, false, false, f32b(a), f32b(b)));
        let mx = |a: f32, b: f32| f32v(fminmax(FTy::F32, false, false, true, f32b(a), f32b(b)));
        assert_eq!(mn(f32::NAN, 2.0), 2.0);
        assert_eq!(mx(1.0, f32::NAN), 1.0);
        assert!(mn(-0.0, 0.0).is_sign_negative());
        assert!(mx(-0.0, 0.0).is_sign_positive());
        assert_eq!(mn(1.0, 2.0), 1.0);
        assert_eq!(mx(1.0, 2.0), 2.0);
    }
}
