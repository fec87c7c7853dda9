//! Instruction selection: one PTX instruction → one or more `Inst`.
//!
//! Reads the mnemonic's modifiers and the operands, resolves them to slots, and picks the
//! pre-decoded `Op` whose semantics match. It never executes anything; anything it does not
//! recognise becomes `ModuleError::Unsupported` naming the instruction and its line.

use super::types::{MemSpaceName, Mn, Ty, TK};
use super::{perr, unsupported, Sym, KB};
use crate::ir::*;
use crate::mem::{LOCAL_WIN, PARAM_WIN, SHARED_WIN};
use crate::parse::{Instr, Operand};
use crate::ModuleError;

/// A resolved memory operand.
enum MemRef {
    /// Address = slot value + imm, in `space`.
    Addr {
        base: Slot,
        imm: i64,
        space: MemSpace,
    },
    /// A kernel parameter at this byte offset.
    KParam(i64),
}

fn parse_sreg(n: &str) -> Option<SReg> {
    let dim = |s: &str| match s {
        "x" => Some(0u8),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if let Some((head, c)) = n.split_once('.') {
        let d = dim(c)?;
        return Some(match head {
            "%tid" => SReg::Tid(d),
            "%ntid" => SReg::Ntid(d),
            "%ctaid" => SReg::Ctaid(d),
            "%nctaid" => SReg::Nctaid(d),
            _ => return None,
        });
    }
    Some(match n {
        "%laneid" => SReg::LaneId,
        "%warpid" => SReg::WarpId,
        "%nwarpid" => SReg::NWarpId,
        "%smid" => SReg::SmId,
        "%nsmid" => SReg::NSmId,
        "%gridid" => SReg::GridId,
        "%lanemask_eq" => SReg::LaneMaskEq,
        "%lanemask_lt" => SReg::LaneMaskLt,
        "%lanemask_le" => SReg::LaneMaskLe,
        "%lanemask_gt" => SReg::LaneMaskGt,
        "%lanemask_ge" => SReg::LaneMaskGe,
        "%dynamic_smem_size" => SReg::DynSmem,
        "%total_smem_size" => SReg::TotalSmem,
        _ => return None,
    })
}

fn f32_bits_to(ty: Ty, v: f64) -> u64 {
    match ty.bits {
        64 => v.to_bits(),
        16 => crate::exec::float::f32_to_f16(v as f32) as u64,
        _ => (v as f32).to_bits() as u64,
    }
}

impl KB<'_> {
    fn name_value(&mut self, n: &str, line: usize) -> Result<Slot, ModuleError> {
        if let Some(sym) = self.lookup(n) {
            return Ok(match sym {
                Sym::Reg(s) => s,
                Sym::Local(off, _) => self.konst(off as u64),
                Sym::KParam(off) => self.konst(PARAM_WIN + off as u64),
            });
        }
        if let Some(r) = parse_sreg(n) {
            return Ok(self.sreg(r));
        }
        if let Some(&a) = self.m.globals.get(n) {
            return Ok(self.konst(a));
        }
        if let Some(off) = self.shared_offset(n) {
            return Ok(self.konst(off as u64));
        }
        if let Some(&fi) = self.m.fn_index.get(n) {
            return Ok(self.konst(crate::mem::func_addr(fi)));
        }
        if n.starts_with('%') {
            return Err(perr(line, format!("unknown register `{n}`")));
        }
        Err(perr(line, format!("unknown name `{n}`")))
    }

    /// A source operand of type `ty`.
    fn src(&mut self, o: &Operand, ty: Ty, line: usize) -> Result<Slot, ModuleError> {
        let v: u64 = match o {
            Operand::Name(n) => return self.name_value(n, line),
            Operand::Int(i) => {
                if ty.is_float() {
                    f32_bits_to(ty, *i as f64)
                } else {
                    *i as u64
                }
            }
            Operand::F32(b) => {
                if ty.is_float() {
                    f32_bits_to(ty, f32::from_bits(*b) as f64)
                } else {
                    *b as u64
                }
            }
            Operand::F64(b) => {
                if ty.is_float() {
                    f32_bits_to(ty, f64::from_bits(*b))
                } else {
                    *b
                }
            }
            Operand::Float(f) => f32_bits_to(ty, *f),
            _ => return Err(perr(line, "expected a register or an immediate")),
        };
        Ok(self.konst(v))
    }

    /// A destination register.
    fn dst(&mut self, o: &Operand, line: usize) -> Result<Slot, ModuleError> {
        match o {
            Operand::Sink => Ok(self.sink),
            Operand::Name(n) => match self.lookup(n) {
                Some(Sym::Reg(s)) => Ok(s),
                _ => Err(perr(line, format!("`{n}` is not a register"))),
            },
            _ => Err(perr(line, "expected a destination register")),
        }
    }

    fn mem(
        &mut self,
        o: &Operand,
        space: Option<MemSpaceName>,
        line: usize,
    ) -> Result<MemRef, ModuleError> {
        let Operand::Mem { base, offset } = o else {
            return Err(perr(line, "expected a memory operand `[...]`"));
        };
        let lowered = space.map_or(MemSpace::Generic, |s| s.lowered());
        let zero = self.konst(0);
        let Some(n) = base else {
            return Ok(MemRef::Addr {
                base: zero,
                imm: *offset,
                space: lowered,
            });
        };
        if let Some(sym) = self.lookup(n) {
            return Ok(match sym {
                Sym::Reg(s) => MemRef::Addr {
                    base: s,
                    imm: *offset,
                    space: lowered,
                },
                Sym::Local(off, _) if lowered == MemSpace::Generic => MemRef::Addr {
                    base: zero,
                    imm: (LOCAL_WIN + off as u64) as i64 + offset,
                    space: MemSpace::Generic,
                },
                Sym::Local(off, _) => MemRef::Addr {
                    base: zero,
                    imm: off as i64 + offset,
                    space: MemSpace::Local,
                },
                Sym::KParam(off) => {
                    if lowered == MemSpace::Param {
                        MemRef::KParam(off as i64 + offset)
                    } else {
                        MemRef::Addr {
                            base: zero,
                            imm: (PARAM_WIN + off as u64) as i64 + offset,
                            space: MemSpace::Generic,
                        }
                    }
                }
            });
        }
        if let Some(&a) = self.m.globals.get(n.as_str()) {
            return Ok(MemRef::Addr {
                base: zero,
                imm: a as i64 + offset,
                space: if lowered == MemSpace::Generic {
                    MemSpace::Generic
                } else {
                    MemSpace::Global
                },
            });
        }
        if let Some(off) = self.shared_offset(n) {
            return Ok(match lowered {
                MemSpace::Generic => MemRef::Addr {
                    base: zero,
                    imm: (SHARED_WIN + off as u64) as i64 + offset,
                    space: MemSpace::Generic,
                },
                _ => MemRef::Addr {
                    base: zero,
                    imm: off as i64 + offset,
                    space: MemSpace::Shared,
                },
            });
        }
        Err(perr(
            line,
            format!("unknown name `{n}` in a memory operand"),
        ))
    }

    fn guard(&self, i: &Instr) -> Result<Option<(Slot, bool)>, ModuleError> {
        match &i.guard {
            None => Ok(None),
            Some((p, neg)) => match self.lookup(p) {
                Some(Sym::Reg(s)) => Ok(Some((s, *neg))),
                _ => Err(perr(i.line, format!("unknown predicate `{p}`"))),
            },
        }
    }

    /// Lower one instruction.
    pub(super) fn lower_inst(&mut self, i: &Instr) -> Result<(), ModuleError> {
        let line = i.line;
        let mn = Mn::split(&i.opcode);
        let g = self.guard(i)?;
        let ops = &i.operands;
        let unsup = || unsupported(line, i.opcode.clone());
        let need = |n: usize| -> Result<(), ModuleError> {
            if ops.len() < n {
                Err(perr(
                    line,
                    format!("`{}` needs {n} operands, has {}", i.opcode, ops.len()),
                ))
            } else {
                Ok(())
            }
        };
        if mn.types.iter().any(|t| t.k == TK::Other) {
            return Err(unsup());
        }
        let ty = mn.ty();
        let n = NONE;
        match mn.base {
            "mov" => {
                need(2)?;
                let t = ty.ok_or_else(unsup)?;
                match (&ops[0], &ops[1]) {
                    (Operand::Vector(ds), a) => {
                        let k = ds.len();
                        if !(2..=4).contains(&k) || !(t.bits as usize).is_multiple_of(k) {
                            return Err(unsup());
                        }
                        let mut r = [n; 6];
                        for (j, d) in ds.iter().enumerate() {
                            r[j] = self.dst(d, line)?;
                        }
                        r[5] = self.src(a, t, line)?;
                        let bits = t.bits / k as u8;
                        self.emit(Op::Unpack { n: k as u8, bits }, g, r, 0);
                    }
                    (d, Operand::Vector(srcs)) => {
                        let k = srcs.len();
                        if !(2..=4).contains(&k) || !(t.bits as usize).is_multiple_of(k) {
                            return Err(unsup());
                        }
                        let bits = t.bits / k as u8;
                        let pt = Ty { k: TK::B, bits };
                        let mut r = [n; 6];
                        r[0] = self.dst(d, line)?;
                        for (j, s) in srcs.iter().enumerate() {
                            r[j + 1] = self.src(s, pt, line)?;
                        }
                        self.emit(Op::Pack { n: k as u8, bits }, g, r, 0);
                    }
                    (d, Operand::Name(s))
                        if s.starts_with("%clock") || s.starts_with("%globaltimer") =>
                    {
                        let d = self.dst(d, line)?;
                        let op = match s.as_str() {
                            "%clock" => Op::Clock { wide: false },
                            "%clock64" => Op::Clock { wide: true },
                            "%globaltimer_hi" => Op::GlobalTimer { hi: true },
                            _ => Op::GlobalTimer { hi: false },
                        };
                        self.emit(op, g, [d, n, n, n, n, n], 0);
                    }
                    (d, a) => {
                        let d = self.dst(d, line)?;
                        let a = self.src(a, t, line)?;
                        self.emit(Op::Mov, g, [d, a, n, n, n, n], 0);
                    }
                }
            }
            "add" | "sub" | "addc" | "subc" | "mul" | "mad" | "madc" | "fma" | "div" | "rem"
            | "min" | "max" | "abs" | "neg" | "sqrt" | "rcp" | "rsqrt" | "sin" | "cos" | "lg2"
            | "ex2" | "tanh" | "copysign" | "testp" | "sad" => {
                let t = ty.ok_or_else(unsup)?;
                if let Some(half) = t.packed() {
                    self.lower_packed(&mn, half, g, ops, line)?;
                } else if t.is_float() {
                    self.lower_float(&mn, t, g, ops, line)?;
                } else {
                    self.lower_int_arith(&mn, t, g, ops, line)?;
                }
            }
            "and" | "or" | "xor" | "not" | "cnot" | "shl" | "shr" | "popc" | "clz" | "brev"
            | "bfind" | "bfe" | "bfi" | "prmt" | "shf" | "mul24" | "mad24" | "dp4a" => {
                let t = ty.ok_or_else(unsup)?;
                self.lower_bits(&mn, t, g, ops, line)?;
            }
            "setp" | "set" => self.lower_setp(&mn, g, ops, line)?,
            "selp" => {
                need(4)?;
                let t = ty.ok_or_else(unsup)?;
                let d = self.dst(&ops[0], line)?;
                let a = self.src(&ops[1], t, line)?;
                let b = self.src(&ops[2], t, line)?;
                let c = self.src(
                    &ops[3],
                    Ty {
                        k: TK::Pred,
                        bits: 1,
                    },
                    line,
                )?;
                self.emit(Op::Selp, g, [d, a, b, c, n, n], 0);
            }
            "slct" => {
                need(4)?;
                let t = *mn.types.first().ok_or_else(unsup)?;
                let ct = ty.ok_or_else(unsup)?;
                let d = self.dst(&ops[0], line)?;
                let a = self.src(&ops[1], t, line)?;
                let b = self.src(&ops[2], t, line)?;
                let c = self.src(&ops[3], ct, line)?;
                let op = Op::Slct {
                    cf32: ct.is_float(),
                    ftz: mn.has("ftz"),
                };
                self.emit(op, g, [d, a, b, c, n, n], 0);
            }
            "cvt" => self.lower_cvt(&mn, g, ops, line)?,
            "cvta" => {
                need(2)?;
                let to = mn.has("to");
                let d = self.dst(&ops[0], line)?;
                let a = self.src(&ops[1], Ty { k: TK::U, bits: 64 }, line)?;
                let op = match mn.space() {
                    Some(MemSpaceName::Global) | Some(MemSpaceName::Const) => Op::Mov,
                    Some(s) => Op::Cvta {
                        to,
                        space: s.lowered(),
                    },
                    None => return Err(unsup()),
                };
                self.emit(op, g, [d, a, n, n, n, n], 0);
            }
            "isspacep" => {
                need(2)?;
                let d = self.dst(&ops[0], line)?;
                let a = self.src(&ops[1], Ty { k: TK::U, bits: 64 }, line)?;
                let s = mn.space().ok_or_else(unsup)?.lowered();
                self.emit(Op::Isspacep(s), g, [d, a, n, n, n, n], 0);
            }
            "ld" | "ldu" | "st" => self.lower_ldst(&mn, g, ops, line, mn.base != "st")?,
            "atom" | "red" => self.lower_atom(&mn, g, ops, line, mn.base == "atom")?,
            "bra" | "brx" => {
                if mn.base == "brx" {
                    return Err(unsup());
                }
                need(1)?;
                let Operand::Name(l) = &ops[0] else {
                    return Err(perr(line, "branch target must be a label"));
                };
                self.emit(Op::Bra, g, [n; 6], 0);
                self.branch_fixup(l, line);
            }
            "call" => self.lower_call(g, ops, line, &i.opcode)?,
            "ret" => {
                let op = if self.cur_func == super::ENTRY {
                    Op::Exit
                } else {
                    Op::Ret
                };
                self.emit(op, g, [n; 6], 0);
            }
            "exit" => self.emit(Op::Exit, g, [n; 6], 0),
            "trap" => self.emit(Op::Trap, g, [n; 6], 0),
            "bar" | "barrier" => self.lower_bar(&mn, g, ops, line)?,
            "membar" | "fence" | "nanosleep" | "pmevent" | "prefetch" | "prefetchu"
            | "griddepcontrol" | "brkpt" | "discard" | "applypriority" => {
                self.emit(Op::Nop, g, [n; 6], 0)
            }
            "shfl" => {
                let mode = if mn.has("up") {
                    ShflMode::Up
                } else if mn.has("down") {
                    ShflMode::Down
                } else if mn.has("bfly") {
                    ShflMode::Bfly
                } else if mn.has("idx") {
                    ShflMode::Idx
                } else {
                    return Err(unsup());
                };
                need(4)?;
                let b32 = Ty { k: TK::B, bits: 32 };
                let (d, p) = match &ops[0] {
                    Operand::Pair(d, p) => (self.dst(d, line)?, self.dst(p, line)?),
                    d => (self.dst(d, line)?, n),
                };
                let a = self.src(&ops[1], b32, line)?;
                let b = self.src(&ops[2], b32, line)?;
                let c = self.src(&ops[3], b32, line)?;
                let m = match ops.get(4) {
                    Some(o) => self.src(o, b32, line)?,
                    None => self.konst(0xFFFF_FFFF),
                };
                self.emit(Op::Shfl(mode), g, [d, a, b, c, m, p], 0);
            }
            "vote" => {
                let mode = if mn.has("all") {
                    VoteMode::All
                } else if mn.has("any") {
                    VoteMode::Any
                } else if mn.has("uni") {
                    VoteMode::Uni
                } else if mn.has("ballot") {
                    VoteMode::Ballot
                } else {
                    return Err(unsup());
                };
                need(2)?;
                let d = self.dst(&ops[0], line)?;
                let (a, neg) = self.pred_operand(&ops[1], line)?;
                let m = match ops.get(2) {
                    Some(o) => self.src(o, Ty { k: TK::B, bits: 32 }, line)?,
                    None => self.konst(0xFFFF_FFFF),
                };
                self.emit(Op::Vote { mode, neg }, g, [d, a, n, n, m, n], 0);
            }
            "activemask" => {
                need(1)?;
                let d = self.dst(&ops[0], line)?;
                self.emit(Op::Activemask, g, [d, n, n, n, n, n], 0);
            }
            "match" => {
                need(3)?;
                let t = ty.ok_or_else(unsup)?;
                let b32 = Ty { k: TK::B, bits: 32 };
                let a = self.src(&ops[1], t, line)?;
                let m = self.src(&ops[2], b32, line)?;
                if mn.has("any") {
                    let d = self.dst(&ops[0], line)?;
                    self.emit(Op::MatchAny { bits: t.bits }, g, [d, a, n, n, m, n], 0);
                } else if mn.has("all") {
                    let (d, p) = match &ops[0] {
                        Operand::Pair(d, p) => (self.dst(d, line)?, self.dst(p, line)?),
                        d => (self.dst(d, line)?, n),
                    };
                    self.emit(Op::MatchAll { bits: t.bits }, g, [d, a, n, n, m, p], 0);
                } else {
                    return Err(unsup());
                }
            }
            "redux" => {
                need(3)?;
                let t = ty.ok_or_else(unsup)?;
                let op = if mn.has("add") {
                    ReduxOp::Add
                } else if mn.has("min") {
                    ReduxOp::Min
                } else if mn.has("max") {
                    ReduxOp::Max
                } else if mn.has("and") {
                    ReduxOp::And
                } else if mn.has("or") {
                    ReduxOp::Or
                } else if mn.has("xor") {
                    ReduxOp::Xor
                } else {
                    return Err(unsup());
                };
                if t.is_float() {
                    return Err(unsup());
                }
                let d = self.dst(&ops[0], line)?;
                let a = self.src(&ops[1], t, line)?;
                let m = self.src(&ops[2], Ty { k: TK::B, bits: 32 }, line)?;
                let signed = t.k == TK::S;
                self.emit(Op::Redux { op, signed }, g, [d, a, n, n, m, n], 0);
            }
            "lop3" => {
                need(5)?;
                let t = ty.ok_or_else(unsup)?;
                let lut = match &ops[4] {
                    Operand::Int(v) => *v as u8,
                    _ => return Err(perr(line, "lop3 needs an immediate lookup table")),
                };
                let r = self.operands3(ops, 3, t, line)?;
                self.emit(Op::Lop3 { lut }, g, r, 0);
            }
            "bmsk" | "szext" => {
                need(3)?;
                let u32t = Ty { k: TK::U, bits: 32 };
                let r = self.operands3(ops, 2, u32t, line)?;
                let wrap = mn.has("wrap");
                let op = if mn.base == "bmsk" {
                    Op::Bmsk { wrap }
                } else {
                    Op::Szext {
                        signed: ty.is_some_and(|t| t.k == TK::S),
                        wrap,
                    }
                };
                self.emit(op, g, r, 0);
            }
            "elect" => {
                need(2)?;
                let (d, p) = match &ops[0] {
                    Operand::Pair(d, p) => (self.dst(d, line)?, self.dst(p, line)?),
                    d => (self.dst(d, line)?, n),
                };
                let m = self.src(&ops[1], Ty { k: TK::B, bits: 32 }, line)?;
                self.emit(Op::Elect, g, [d, n, n, n, m, p], 0);
            }
            "cp" if mn.has("async") => {
                if mn.has("commit_group") || mn.has("wait_group") || mn.has("wait_all") {
                    self.emit(Op::Nop, g, [n; 6], 0);
                    return Ok(());
                }
                if mn.has("bulk") || mn.has("mbarrier") {
                    return Err(unsup());
                }
                need(3)?;
                let size = match &ops[2] {
                    Operand::Int(v) if matches!(*v, 4 | 8 | 16) => *v as u8,
                    _ => return Err(perr(line, "cp.async copies 4, 8 or 16 bytes")),
                };
                let (dbase, dimm) = match self.mem(&ops[0], Some(MemSpaceName::Shared), line)? {
                    MemRef::Addr { base, imm, .. } => (base, imm),
                    MemRef::KParam(_) => return Err(unsup()),
                };
                let (sbase, simm) = match self.mem(&ops[1], Some(MemSpaceName::Global), line)? {
                    MemRef::Addr { base, imm, .. } => (base, imm),
                    MemRef::KParam(_) => return Err(unsup()),
                };
                let src_size = match ops.get(3) {
                    Some(o @ (Operand::Int(_) | Operand::Name(_))) => {
                        self.src(o, Ty { k: TK::U, bits: 32 }, line)?
                    }
                    _ => n,
                };
                // Shared destination offset and global source address, each with its offset.
                let d = self.new_slot();
                let s = self.new_slot();
                let dk = self.konst(dimm as u64);
                let sk = self.konst(simm as u64);
                self.emit(Op::Add, g, [d, dbase, dk, n, n, n], 0);
                self.emit(Op::Add, g, [s, sbase, sk, n, n, n], 0);
                self.emit(Op::CpAsync { size }, g, [d, s, src_size, n, n, n], 0);
            }
            "createpolicy" => {
                need(1)?;
                let d = self.dst(&ops[0], line)?;
                let z = self.konst(0);
                self.emit(Op::Mov, g, [d, z, n, n, n, n], 0);
            }
            _ => return Err(unsup()),
        }
        Ok(())
    }

    /// A predicate source, possibly negated with `!`.
    fn pred_operand(&mut self, o: &Operand, line: usize) -> Result<(Slot, bool), ModuleError> {
        let p = Ty {
            k: TK::Pred,
            bits: 1,
        };
        match o {
            Operand::Not(inner) => Ok((self.src(inner, p, line)?, true)),
            o => Ok((self.src(o, p, line)?, false)),
        }
    }

    fn operands3(
        &mut self,
        ops: &[Operand],
        k: usize,
        t: Ty,
        line: usize,
    ) -> Result<[Slot; 6], ModuleError> {
        if ops.len() < k + 1 {
            return Err(perr(line, format!("expected {} operands", k + 1)));
        }
        let mut r = [NONE; 6];
        r[0] = self.dst(&ops[0], line)?;
        for j in 0..k {
            r[j + 1] = self.src(&ops[j + 1], t, line)?;
        }
        Ok(r)
    }

    fn lower_int_arith(
        &mut self,
        mn: &Mn,
        t: Ty,
        g: Option<(Slot, bool)>,
        ops: &[Operand],
        line: usize,
    ) -> Result<(), ModuleError> {
        let it = t.int();
        let unsup = || unsupported(line, format!("{}.{:?}{}", mn.base, t.k, t.bits));
        let cc = mn.has("cc");
        let carry_in = matches!(mn.base, "addc" | "subc" | "madc");
        if cc || carry_in {
            let mad = mn.base.starts_with("mad");
            let k = if mad { 3 } else { 2 };
            let mut r = self.operands3(ops, k, t, line)?;
            r[4] = self.cc;
            let op = Op::Carry {
                bits: t.bits,
                sub: mn.base.starts_with("sub"),
                mad,
                hi: mn.has("hi"),
                cin: carry_in,
                cout: cc,
            };
            self.emit(op, g, r, 0);
            return Ok(());
        }
        let (op, k) = match mn.base {
            "add" if mn.has("sat") => (Op::AddSat, 2),
            "sub" if mn.has("sat") => (Op::SubSat, 2),
            "add" => (Op::Add, 2),
            "sub" => (Op::Sub, 2),
            "mul" if mn.has("wide") => (Op::MulWide(it), 2),
            "mul" if mn.has("hi") => (Op::MulHi(it), 2),
            "mul" => (Op::MulLo, 2),
            "mad" if mn.has("wide") => (Op::MadWide(it), 3),
            "mad" if mn.has("hi") => (Op::MadHi(it), 3),
            "mad" => (Op::MadLo, 3),
            "div" => (Op::Div(it), 2),
            "rem" => (Op::Rem(it), 2),
            "min" if !mn.has("relu") => (Op::Min(it), 2),
            "max" if !mn.has("relu") => (Op::Max(it), 2),
            "abs" => (Op::Abs(it), 1),
            "neg" => (Op::Neg, 1),
            "sad" => (Op::Sad(it), 3),
            _ => return Err(unsup()),
        };
        // Sources of mad.wide's addend are twice as wide; immediates are taken as written.
        let r = self.operands3(ops, k, t, line)?;
        self.emit(op, g, r, 0);
        Ok(())
    }

    fn lower_float(
        &mut self,
        mn: &Mn,
        t: Ty,
        g: Option<(Slot, bool)>,
        ops: &[Operand],
        line: usize,
    ) -> Result<(), ModuleError> {
        let (op, k) = self.float_op(mn, t, line)?;
        let r = self.operands3(ops, k, t, line)?;
        self.emit(op, g, r, 0);
        Ok(())
    }

    /// An `f16x2`/`bf16x2` operation: unpack the sources, run the scalar operation on each
    /// half, pack the results.
    fn lower_packed(
        &mut self,
        mn: &Mn,
        half: Ty,
        g: Option<(Slot, bool)>,
        ops: &[Operand],
        line: usize,
    ) -> Result<(), ModuleError> {
        let (op, k) = self.float_op(mn, half, line)?;
        if ops.len() < k + 1 {
            return Err(perr(line, format!("expected {} operands", k + 1)));
        }
        let d = self.dst(&ops[0], line)?;
        let b32 = Ty { k: TK::B, bits: 32 };
        let (mut lo, mut hi) = ([NONE; 3], [NONE; 3]);
        for j in 0..k {
            let s = self.src(&ops[j + 1], b32, line)?;
            let (l, h) = self.unpack_halves(s, g);
            lo[j] = l;
            hi[j] = h;
        }
        let (rl, rh) = (self.new_slot(), self.new_slot());
        self.emit(op, g, [rl, lo[0], lo[1], lo[2], NONE, NONE], 0);
        self.emit(op, g, [rh, hi[0], hi[1], hi[2], NONE, NONE], 0);
        self.emit(
            Op::Pack { n: 2, bits: 16 },
            g,
            [d, rl, rh, NONE, NONE, NONE],
            0,
        );
        Ok(())
    }

    /// Emit an unpack of the two 16-bit halves of `s` into fresh slots (low, high).
    fn unpack_halves(&mut self, s: Slot, g: Option<(Slot, bool)>) -> (Slot, Slot) {
        let (l, h) = (self.new_slot(), self.new_slot());
        self.emit(
            Op::Unpack { n: 2, bits: 16 },
            g,
            [l, h, NONE, NONE, NONE, s],
            0,
        );
        (l, h)
    }

    /// The scalar floating-point operation of `mn` on type `t`, and its number of sources.
    fn float_op(&mut self, mn: &Mn, t: Ty, line: usize) -> Result<(Op, usize), ModuleError> {
        let unsup = || unsupported(line, format!("{} of .f{}", mn.base, t.bits));
        let fty = t.fty().ok_or_else(unsup)?;
        let ftz = mn.has("ftz");
        let sat = mn.has("sat");
        let rnd = mn.rnd();
        let approx = mn.has("approx") || mn.has("full");
        let fop = |op| Op::FArith {
            op,
            ty: fty,
            rnd: rnd.unwrap_or(Rnd::Rn),
            ftz,
            sat,
        };
        let fast = rnd.unwrap_or(Rnd::Rn) == Rnd::Rn && !ftz && !sat;
        let (op, k) = match mn.base {
            "add" | "sub" | "mul" => {
                let which = match mn.base {
                    "add" => FOp::Add,
                    "sub" => FOp::Sub,
                    _ => FOp::Mul,
                };
                let op = match (fast, fty, which) {
                    (true, FTy::F32, FOp::Add) => Op::FAdd32,
                    (true, FTy::F32, FOp::Sub) => Op::FSub32,
                    (true, FTy::F32, FOp::Mul) => Op::FMul32,
                    (true, FTy::F64, FOp::Add) => Op::FAdd64,
                    (true, FTy::F64, FOp::Sub) => Op::FSub64,
                    (true, FTy::F64, FOp::Mul) => Op::FMul64,
                    _ => fop(which),
                };
                (op, 2)
            }
            "fma" | "mad" => {
                let op = match (fast, fty) {
                    (true, FTy::F32) => Op::FFma32,
                    (true, FTy::F64) => Op::FFma64,
                    _ => fop(FOp::Fma),
                };
                (op, 3)
            }
            "div" => {
                let op = match (fast || (approx && !ftz && !sat), fty) {
                    (true, FTy::F32) => Op::FDiv32,
                    (true, FTy::F64) => Op::FDiv64,
                    _ => Op::FArith {
                        op: FOp::Div,
                        ty: fty,
                        rnd: rnd.unwrap_or(Rnd::Rn),
                        ftz,
                        sat,
                    },
                };
                (op, 2)
            }
            "sqrt" | "rcp" if !approx => {
                let which = if mn.base == "sqrt" {
                    FOp::Sqrt
                } else {
                    FOp::Rcp
                };
                (fop(which), 1)
            }
            "sqrt" | "rcp" | "rsqrt" | "sin" | "cos" | "lg2" | "ex2" | "tanh" | "abs" | "neg" => {
                let f = match mn.base {
                    "sqrt" => UFn::Sqrt,
                    "rcp" => UFn::Rcp,
                    "rsqrt" => UFn::Rsqrt,
                    "sin" => UFn::Sin,
                    "cos" => UFn::Cos,
                    "lg2" => UFn::Lg2,
                    "ex2" => UFn::Ex2,
                    "tanh" => UFn::Tanh,
                    "abs" => UFn::Abs,
                    _ => UFn::Neg,
                };
                (Op::FUnary { f, ty: fty, ftz }, 1)
            }
            "min" => (
                Op::FMin {
                    ty: fty,
                    ftz,
                    nan: mn.has("NaN"),
                },
                2,
            ),
            "max" => (
                Op::FMax {
                    ty: fty,
                    ftz,
                    nan: mn.has("NaN"),
                },
                2,
            ),
            "copysign" => (Op::Copysign(fty), 2),
            "testp" => {
                let tp = if mn.has("finite") {
                    TestP::Finite
                } else if mn.has("infinite") {
                    TestP::Infinite
                } else if mn.has("number") {
                    TestP::Number
                } else if mn.has("notanumber") {
                    TestP::NotANumber
                } else if mn.has("normal") {
                    TestP::Normal
                } else if mn.has("subnormal") {
                    TestP::Subnormal
                } else {
                    return Err(unsup());
                };
                (Op::Testp { t: tp, ty: fty }, 1)
            }
            _ => return Err(unsup()),
        };
        if matches!(fty, FTy::F16 | FTy::BF16)
            && !matches!(
                op,
                Op::FArith { .. } | Op::FUnary { .. } | Op::FMin { .. } | Op::FMax { .. }
            )
        {
            return Err(unsup());
        }
        Ok((op, k))
    }

    fn lower_bits(
        &mut self,
        mn: &Mn,
        t: Ty,
        g: Option<(Slot, bool)>,
        ops: &[Operand],
        line: usize,
    ) -> Result<(), ModuleError> {
        let unsup = || unsupported(line, format!("{}.{:?}{}", mn.base, t.k, t.bits));
        let u32t = Ty { k: TK::U, bits: 32 };
        let pred = t.k == TK::Pred;
        match mn.base {
            "and" | "or" | "xor" => {
                let op = match mn.base {
                    "and" => Op::And,
                    "or" => Op::Or,
                    _ => Op::Xor,
                };
                let r = self.operands3(ops, 2, t, line)?;
                self.emit(op, g, r, 0);
            }
            "not" => {
                let r = self.operands3(ops, 1, t, line)?;
                self.emit(if pred { Op::PNot } else { Op::Not }, g, r, 0);
            }
            "cnot" => {
                let r = self.operands3(ops, 1, t, line)?;
                self.emit(Op::CNot { bits: t.bits }, g, r, 0);
            }
            "shl" | "shr" => {
                if ops.len() < 3 {
                    return Err(perr(line, "shift needs 3 operands"));
                }
                let d = self.dst(&ops[0], line)?;
                let a = self.src(&ops[1], t, line)?;
                let b = self.src(&ops[2], u32t, line)?;
                let op = if mn.base == "shl" {
                    Op::Shl { bits: t.bits }
                } else {
                    Op::Shr { ty: t.int() }
                };
                self.emit(op, g, [d, a, b, NONE, NONE, NONE], 0);
            }
            "popc" | "clz" | "brev" => {
                let r = self.operands3(ops, 1, t, line)?;
                let op = match mn.base {
                    "popc" => Op::Popc { bits: t.bits },
                    "clz" => Op::Clz { bits: t.bits },
                    _ => Op::Brev { bits: t.bits },
                };
                self.emit(op, g, r, 0);
            }
            "bfind" => {
                let r = self.operands3(ops, 1, t, line)?;
                let op = Op::Bfind {
                    ty: t.int(),
                    shiftamt: mn.has("shiftamt"),
                };
                self.emit(op, g, r, 0);
            }
            "bfe" => {
                if ops.len() < 4 {
                    return Err(perr(line, "bfe needs 4 operands"));
                }
                let d = self.dst(&ops[0], line)?;
                let a = self.src(&ops[1], t, line)?;
                let b = self.src(&ops[2], u32t, line)?;
                let c = self.src(&ops[3], u32t, line)?;
                self.emit(Op::Bfe(t.int()), g, [d, a, b, c, NONE, NONE], 0);
            }
            "bfi" => {
                if ops.len() < 5 {
                    return Err(perr(line, "bfi needs 5 operands"));
                }
                let d = self.dst(&ops[0], line)?;
                let a = self.src(&ops[1], t, line)?;
                let b = self.src(&ops[2], t, line)?;
                let c = self.src(&ops[3], u32t, line)?;
                let l = self.src(&ops[4], u32t, line)?;
                self.emit(Op::Bfi { bits: t.bits }, g, [d, a, b, c, l, NONE], 0);
            }
            "prmt" => {
                let mode = if mn.has("f4e") {
                    PrmtMode::F4e
                } else if mn.has("b4e") {
                    PrmtMode::B4e
                } else if mn.has("rc8") {
                    PrmtMode::Rc8
                } else if mn.has("ecl") {
                    PrmtMode::Ecl
                } else if mn.has("ecr") {
                    PrmtMode::Ecr
                } else if mn.has("rc16") {
                    PrmtMode::Rc16
                } else {
                    PrmtMode::Default
                };
                let r = self.operands3(ops, 3, t, line)?;
                self.emit(Op::Prmt(mode), g, r, 0);
            }
            "shf" => {
                let r = self.operands3(ops, 3, t, line)?;
                let op = Op::Shf {
                    left: mn.has("l"),
                    wrap: mn.has("wrap"),
                };
                self.emit(op, g, r, 0);
            }
            "mul24" | "mad24" => {
                let mad = mn.base == "mad24";
                let r = self.operands3(ops, if mad { 3 } else { 2 }, t, line)?;
                let op = Op::Mul24 {
                    hi: mn.has("hi"),
                    signed: t.k == TK::S,
                    mad,
                };
                self.emit(op, g, r, 0);
            }
            "dp4a" => {
                if mn.types.len() < 2 {
                    return Err(unsup());
                }
                let r = self.operands3(ops, 3, t, line)?;
                let op = Op::Dp4a {
                    a_signed: mn.types[0].k == TK::S,
                    b_signed: mn.types[1].k == TK::S,
                };
                self.emit(op, g, r, 0);
            }
            _ => return Err(unsup()),
        }
        Ok(())
    }

    fn lower_setp(
        &mut self,
        mn: &Mn,
        g: Option<(Slot, bool)>,
        ops: &[Operand],
        line: usize,
    ) -> Result<(), ModuleError> {
        let unsup = || unsupported(line, mn.base.to_string());
        let (cmp, force_unsigned) = mn.cmp().ok_or_else(unsup)?;
        let st = mn.ty().ok_or_else(unsup)?;
        let bop = if mn.has("and") {
            BoolOp::And
        } else if mn.has("or") {
            BoolOp::Or
        } else if mn.has("xor") {
            BoolOp::Xor
        } else {
            BoolOp::None
        };
        if ops.len() < 3 {
            return Err(perr(line, "setp needs 3 operands"));
        }
        let (d, d2) = match &ops[0] {
            Operand::Pair(a, b) => (self.dst(a, line)?, self.dst(b, line)?),
            o => (self.dst(o, line)?, NONE),
        };
        if let Some(half) = st.packed() {
            if bop != BoolOp::None || mn.base != "setp" {
                return Err(unsup());
            }
            let b32 = Ty { k: TK::B, bits: 32 };
            let a = self.src(&ops[1], b32, line)?;
            let b = self.src(&ops[2], b32, line)?;
            let (al, ah) = self.unpack_halves(a, g);
            let (bl, bh) = self.unpack_halves(b, g);
            let ty = half.fty().ok_or_else(unsup)?;
            let op = Op::SetpF {
                cmp,
                ty,
                ftz: mn.has("ftz"),
                bop,
                cneg: false,
            };
            self.emit(op, g, [d, al, bl, NONE, NONE, NONE], 0);
            if d2 != NONE {
                self.emit(op, g, [d2, ah, bh, NONE, NONE, NONE], 0);
            }
            return Ok(());
        }
        let a = self.src(&ops[1], st, line)?;
        let b = self.src(&ops[2], st, line)?;
        let (c, cneg) = match ops.get(3) {
            Some(o) if bop != BoolOp::None => self.pred_operand(o, line)?,
            _ => (NONE, false),
        };
        let ftz = mn.has("ftz");
        let dst_f32 = mn.base == "set" && mn.types.first().is_some_and(|t| t.is_float());
        let op = if st.is_float() {
            let ty = st.fty().ok_or_else(unsup)?;
            if mn.base == "set" {
                Op::SetF {
                    cmp,
                    ty,
                    ftz,
                    bop,
                    cneg,
                    dst_f32,
                }
            } else {
                Op::SetpF {
                    cmp,
                    ty,
                    ftz,
                    bop,
                    cneg,
                }
            }
        } else {
            let mut it = st.int();
            if force_unsigned || st.k == TK::B {
                it.signed = false;
            }
            if st.k == TK::Pred {
                it = IntTy {
                    bits: 1,
                    signed: false,
                };
            }
            if mn.base == "set" {
                Op::SetI {
                    cmp,
                    ty: it,
                    bop,
                    cneg,
                    dst_f32,
                }
            } else {
                Op::SetpI {
                    cmp,
                    ty: it,
                    bop,
                    cneg,
                }
            }
        };
        self.emit(op, g, [d, a, b, c, d2, NONE], 0);
        Ok(())
    }

    fn lower_cvt(
        &mut self,
        mn: &Mn,
        g: Option<(Slot, bool)>,
        ops: &[Operand],
        line: usize,
    ) -> Result<(), ModuleError> {
        let unsup = || unsupported(line, "cvt with these types".to_string());
        if mn.types.len() != 2 {
            return Err(unsup());
        }
        let (dt, st) = (mn.types[0], mn.types[1]);
        if let (Some(half), 3) = (dt.packed(), ops.len()) {
            // cvt.rn.f16x2.f32 d, a, b: a goes to the upper half, b to the lower.
            let to = half.fty().ok_or_else(unsup)?;
            let from = st.fty().ok_or_else(unsup)?;
            let d = self.dst(&ops[0], line)?;
            let a = self.src(&ops[1], st, line)?;
            let b = self.src(&ops[2], st, line)?;
            let (th, tl) = (self.new_slot(), self.new_slot());
            let op = Op::CvtFF {
                from,
                to,
                rnd: mn.rnd().unwrap_or(Rnd::Rn),
                irnd: IRnd::None,
                ftz: false,
                sat: mn.has("sat"),
            };
            self.emit(op, g, [th, a, NONE, NONE, NONE, NONE], 0);
            self.emit(op, g, [tl, b, NONE, NONE, NONE, NONE], 0);
            self.emit(
                Op::Pack { n: 2, bits: 16 },
                g,
                [d, tl, th, NONE, NONE, NONE],
                0,
            );
            return Ok(());
        }
        if ops.len() != 2 || dt.packed().is_some() || st.packed().is_some() {
            return Err(unsup());
        }
        let d = self.dst(&ops[0], line)?;
        let a = self.src(&ops[1], st, line)?;
        let ftz = mn.has("ftz");
        let sat = mn.has("sat");
        let irnd = mn
            .mods
            .iter()
            .find_map(|m| match *m {
                "rni" => Some(IRnd::Rni),
                "rzi" => Some(IRnd::Rzi),
                "rmi" => Some(IRnd::Rmi),
                "rpi" => Some(IRnd::Rpi),
                _ => None,
            })
            .unwrap_or(IRnd::None);
        let rnd = mn.rnd().unwrap_or(Rnd::Rn);
        let int = |t: Ty| {
            if t.k == TK::Pred {
                IntTy {
                    bits: 1,
                    signed: false,
                }
            } else {
                t.int()
            }
        };
        let op = match (dt.fty(), st.fty()) {
            (None, None) => Op::CvtII {
                from: int(st),
                to: int(dt),
                sat,
            },
            (Some(to), None) => Op::CvtIF {
                from: int(st),
                to,
                rnd,
            },
            (None, Some(from)) => Op::CvtFI {
                from,
                to: int(dt),
                irnd: if irnd == IRnd::None { IRnd::Rzi } else { irnd },
                ftz,
            },
            (Some(to), Some(from)) => Op::CvtFF {
                from,
                to,
                rnd,
                irnd,
                ftz,
                sat,
            },
        };
        self.emit(op, g, [d, a, NONE, NONE, NONE, NONE], 0);
        Ok(())
    }

    fn lower_ldst(
        &mut self,
        mn: &Mn,
        g: Option<(Slot, bool)>,
        ops: &[Operand],
        line: usize,
        load: bool,
    ) -> Result<(), ModuleError> {
        let unsup = || unsupported(line, format!("{} of this type", mn.base));
        let t = mn.ty().ok_or_else(unsup)?;
        if ops.len() < 2 {
            return Err(perr(line, "memory instruction needs 2 operands"));
        }
        let n = mn.vec();
        if n > 4 {
            return Err(unsup());
        }
        let (val_op, mem_op) = if load {
            (&ops[0], &ops[1])
        } else {
            (&ops[1], &ops[0])
        };
        let vals: Vec<&Operand> = match val_op {
            Operand::Vector(v) => v.iter().collect(),
            o => vec![o],
        };
        if vals.len() != n as usize {
            return Err(perr(line, "vector width does not match the operand list"));
        }
        let mut r = [NONE; 6];
        for (j, v) in vals.iter().enumerate() {
            r[j] = if load {
                self.dst(v, line)?
            } else {
                self.src(v, t, line)?
            };
        }
        let size = t.bytes();
        let sext = t.k == TK::S;
        match self.mem(mem_op, mn.space(), line)? {
            MemRef::KParam(off) => {
                if !load {
                    return Err(perr(line, "store to a kernel parameter"));
                }
                self.emit(Op::LdK { size, n, sext }, g, r, off);
            }
            MemRef::Addr { base, imm, space } => {
                r[4] = base;
                let op = if load {
                    Op::Ld {
                        space,
                        size,
                        n,
                        sext,
                    }
                } else {
                    Op::St { space, size, n }
                };
                self.emit(op, g, r, imm);
            }
        }
        Ok(())
    }

    fn lower_atom(
        &mut self,
        mn: &Mn,
        g: Option<(Slot, bool)>,
        ops: &[Operand],
        line: usize,
        is_atom: bool,
    ) -> Result<(), ModuleError> {
        let unsup = || unsupported(line, format!("{} of this kind", mn.base));
        let t = mn.ty().ok_or_else(unsup)?;
        if mn.has("v2") || mn.has("v4") || mn.has("v8") {
            return Err(unsup());
        }
        let op = [
            ("add", AtomOp::Add),
            ("min", AtomOp::Min),
            ("max", AtomOp::Max),
            ("exch", AtomOp::Exch),
            ("cas", AtomOp::Cas),
            ("and", AtomOp::And),
            ("or", AtomOp::Or),
            ("xor", AtomOp::Xor),
            ("inc", AtomOp::Inc),
            ("dec", AtomOp::Dec),
        ]
        .iter()
        .find(|(m, _)| mn.has(m))
        .map(|x| x.1)
        .ok_or_else(unsup)?;
        let kind = match (t.k, t.bits) {
            (TK::F, 16) => AtomKind::H,
            (TK::BF, _) => AtomKind::BH,
            (TK::F2, _) => AtomKind::H2,
            (TK::BF2, _) => AtomKind::BH2,
            (TK::F, _) => AtomKind::F,
            (TK::S, _) => AtomKind::S,
            _ => AtomKind::U,
        };
        let half_kind = matches!(
            kind,
            AtomKind::H | AtomKind::BH | AtomKind::H2 | AtomKind::BH2
        );
        let ok = if half_kind {
            op == AtomOp::Add || (t.bits == 16 && op == AtomOp::Exch)
        } else {
            t.bits >= 32 || op == AtomOp::Cas
        };
        if !ok {
            return Err(unsup());
        }
        let first = if is_atom { 1 } else { 0 };
        let need = first + 2 + usize::from(op == AtomOp::Cas);
        if ops.len() < need {
            return Err(perr(line, format!("{} needs {need} operands", mn.base)));
        }
        let d = if is_atom {
            self.dst(&ops[0], line)?
        } else {
            self.sink
        };
        let space = match self.mem(&ops[first], mn.space(), line)? {
            MemRef::Addr { base, imm, space } => (base, imm, space),
            MemRef::KParam(_) => return Err(unsup()),
        };
        if matches!(space.2, MemSpace::Local | MemSpace::Param) {
            return Err(unsup());
        }
        let b = self.src(&ops[first + 1], t, line)?;
        let c = if op == AtomOp::Cas {
            self.src(&ops[first + 2], t, line)?
        } else {
            NONE
        };
        let o = Op::Atom {
            space: space.2,
            op,
            bits: t.bits,
            kind,
        };
        self.emit(o, g, [d, space.0, b, c, NONE, NONE], space.1);
        Ok(())
    }

    fn lower_call(
        &mut self,
        g: Option<(Slot, bool)>,
        ops: &[Operand],
        line: usize,
        opcode: &str,
    ) -> Result<(), ModuleError> {
        let mut it = ops.iter().peekable();
        let rets: Vec<&Operand> = match it.peek() {
            Some(Operand::List(l)) => {
                it.next();
                l.iter().collect()
            }
            _ => Vec::new(),
        };
        let callee = match it.next() {
            Some(Operand::Name(n)) => n.clone(),
            _ => {
                return Err(perr(
                    line,
                    "call needs a function or a register holding one",
                ))
            }
        };
        let through: Option<Slot> = match self.lookup(&callee) {
            Some(Sym::Reg(s)) => Some(s),
            _ => None,
        };
        let args: Vec<&Operand> = match it.next() {
            Some(Operand::List(l)) => l.iter().collect(),
            None => Vec::new(),
            _ => return Err(perr(line, "bad call argument list")),
        };
        // An indirect call may name its prototype (or a list of possible targets) last.
        let _ = it.next();
        if it.next().is_some() {
            return Err(unsupported(line, opcode.to_string()));
        }
        let locate = |o: &Operand| -> Result<(u32, u32), ModuleError> {
            match o {
                Operand::Name(n) => match self.lookup(n) {
                    Some(Sym::Local(off, size)) => Ok((off, size)),
                    _ => Err(perr(
                        line,
                        format!("call argument `{n}` is not a .param variable"),
                    )),
                },
                _ => Err(perr(line, "call arguments must be .param variables")),
            }
        };
        let mut arg_locs = Vec::new();
        for a in &args {
            arg_locs.push(locate(a)?);
        }
        let mut ret_locs = Vec::new();
        for r in &rets {
            ret_locs.push(locate(r)?);
        }
        let target = if let Some(s) = through {
            self.indirect = true;
            Callee::Indirect(s)
        } else if let Some(b) = self.builtin(&callee) {
            b
        } else if let Some(fi) = self.func_index(&callee) {
            Callee::Func(fi)
        } else if self.m.declared.contains(&callee) {
            return Err(unsupported(
                line,
                format!("call of extern function `{callee}`"),
            ));
        } else {
            return Err(perr(line, format!("call of unknown function `{callee}`")));
        };
        let site = self.calls.len() as i64;
        self.calls.push(CallSite {
            callee: target,
            args: arg_locs,
            rets: ret_locs,
        });
        self.emit(Op::Call, g, [NONE; 6], site);
        Ok(())
    }

    fn lower_bar(
        &mut self,
        mn: &Mn,
        g: Option<(Slot, bool)>,
        ops: &[Operand],
        line: usize,
    ) -> Result<(), ModuleError> {
        let unsup = || unsupported(line, format!("{}.{}", mn.base, mn.mods.join(".")));
        let u32t = Ty { k: TK::U, bits: 32 };
        if mn.has("warp") {
            self.emit(Op::WarpSync, g, [NONE; 6], 0);
            return Ok(());
        }
        if mn.has("cluster") {
            return Err(unsup());
        }
        let kind = if mn.has("red") {
            if mn.has("popc") {
                BarKind::RedPopc
            } else if mn.has("and") {
                BarKind::RedAnd
            } else if mn.has("or") {
                BarKind::RedOr
            } else {
                return Err(unsup());
            }
        } else if mn.has("arrive") {
            BarKind::Arrive
        } else {
            // bar.sync, bar.cta.sync, barrier.sync, barrier.sync.aligned, and plain `bar 0`.
            BarKind::Sync
        };
        let mut r = [NONE; 6];
        let mut cneg = false;
        let rest: &[Operand] =
            if matches!(kind, BarKind::RedPopc | BarKind::RedAnd | BarKind::RedOr) {
                if ops.len() < 3 {
                    return Err(perr(
                        line,
                        "bar.red needs a destination, a barrier and a predicate",
                    ));
                }
                r[0] = self.dst(&ops[0], line)?;
                let (c, neg) = self.pred_operand(&ops[ops.len() - 1], line)?;
                r[3] = c;
                cneg = neg;
                &ops[1..ops.len() - 1]
            } else {
                ops
            };
        if let Some(a) = rest.first() {
            r[1] = self.src(a, u32t, line)?;
        }
        if let Some(b) = rest.get(1) {
            r[2] = self.src(b, u32t, line)?;
        }
        self.emit(Op::Bar(kind), g, r, i64::from(cneg));
        Ok(())
    }
}
