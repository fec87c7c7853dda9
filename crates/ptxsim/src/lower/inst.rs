//! Instruction selection: one PTX instruction → one or more `Inst`.
//!
//! Reads the mnemonic's modifiers and the operands, resolves them to slots, and picks the
//! pre-decoded `Op` whose semantics match. It never executes anything; anything it does not
//! recognise becomes `ModuleError::Unsupported` naming the instruction and its line.

use super::types::{MemSpaceName, Mn, Ty, TK};
use super::{perr, unsupported, MemRef, Sym, KB};
use crate::ir::*;
use crate::mem::{LOCAL_WIN, PARAM_WIN, SHARED_WIN};
use crate::parse::{Instr, Operand};
use crate::ModuleError;

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
        "%total_smem_size" | "%aggr_smem_size" => SReg::TotalSmem,
        _ => return None,
    })
}

/// Special registers whose value is fixed for every thread of a launch on the simulator.
///
/// - `%reserved_smem_offset_*`: the block's reserved shared memory (cooperative groups keep
///   their multi-warp scratch there, through `%reserved_smem_offset_1`); see [`RESERVED_SMEM`].
/// - `%envreg0`, `%envreg3`..`%envreg31`: written by the driver at launch; ptxsim's read 0.
///   (`%envreg1`/`%envreg2` are [`grid_workspace_sreg`]'s.)
/// - `%pm0`..`%pm7`, `%pm0_64`..`%pm7_64`: performance-monitor counters, 0.
/// - `%cluster_ctaid`/`%cluster_nctaid` (each `.x/.y/.z`), `%cluster_ctarank`,
///   `%cluster_nctarank`, `%is_explicit_cluster`: a launch without clusters is one block per
///   cluster (the PTX ISA's implicit 1x1x1 cluster).
/// - `%current_graph_exec`: 0, no CUDA graph is running.
pub(super) fn fixed_sreg(n: &str) -> Option<u64> {
    use crate::ir::{RESERVED_SMEM, RESERVED_SMEM_CG};
    let numbered = |prefix: &str, suffix: &str, max: u32| {
        n.strip_prefix(prefix)
            .and_then(|r| r.strip_suffix(suffix))
            .and_then(|d| d.parse::<u32>().ok())
            .is_some_and(|d| d <= max)
    };
    Some(match n {
        "%reserved_smem_offset_begin" | "%reserved_smem_offset_0" => 0,
        "%reserved_smem_offset_1" => RESERVED_SMEM_CG as u64,
        "%reserved_smem_offset_end" | "%reserved_smem_offset_cap" => RESERVED_SMEM as u64,
        "%cluster_ctaid.x" | "%cluster_ctaid.y" | "%cluster_ctaid.z" => 0,
        "%cluster_nctaid.x" | "%cluster_nctaid.y" | "%cluster_nctaid.z" => 1,
        "%cluster_ctarank" | "%is_explicit_cluster" | "%current_graph_exec" => 0,
        "%cluster_nctarank" => 1,
        _ if numbered("%envreg", "", 31) => 0,
        _ if numbered("%pm", "", 7) || numbered("%pm", "_64", 7) => 0,
        _ => return None,
    })
}

/// `%envreg1`/`%envreg2`: the high and low halves of the grid workspace's address, which the
/// driver passes to a cooperative launch (`cooperative_groups::this_grid()` reads them as
/// `mov.b64 %rd, {%envreg2, %envreg1}`). They are launch registers (`SReg::GridWs`): the
/// workspace of a cooperative launch, 0 otherwise (cooperative groups then find it null and
/// trap; the trap report says why).
fn grid_workspace_sreg(n: &str) -> Option<u8> {
    match n {
        "%envreg1" => Some(1),
        "%envreg2" => Some(2),
        _ => None,
    }
}

/// Timer registers, read by `mov` only: the op that reads each.
fn timer_sreg(n: &str) -> Option<Op> {
    Some(match n {
        "%clock" => Op::Clock {
            part: TimerPart::Lo32,
        },
        "%clock_hi" => Op::Clock {
            part: TimerPart::Hi32,
        },
        "%clock64" => Op::Clock {
            part: TimerPart::Full,
        },
        "%globaltimer_lo" => Op::GlobalTimer {
            part: TimerPart::Lo32,
        },
        "%globaltimer_hi" => Op::GlobalTimer {
            part: TimerPart::Hi32,
        },
        "%globaltimer" => Op::GlobalTimer {
            part: TimerPart::Full,
        },
        _ => return None,
    })
}

/// Whether `n` is one of PTX's predefined identifiers (a special register such as `%tid.x`,
/// `%laneid`, `%clock64`, `%envreg3`, or the constant `WARP_SZ`) that ptxsim gives a value.
pub fn is_predefined_name(n: &str) -> bool {
    n == "WARP_SZ"
        || parse_sreg(n).is_some()
        || fixed_sreg(n).is_some()
        || cluster_sreg(n).is_some()
        || timer_sreg(n).is_some()
}

/// Cluster registers that equal a grid register when every cluster is one block.
fn cluster_sreg(n: &str) -> Option<SReg> {
    let (head, c) = n.split_once('.')?;
    let d = match c {
        "x" => 0u8,
        "y" => 1,
        "z" => 2,
        _ => return None,
    };
    match head {
        "%clusterid" => Some(SReg::Ctaid(d)),
        "%nclusterid" => Some(SReg::Nctaid(d)),
        _ => None,
    }
}

fn f32_bits_to(ty: Ty, v: f64) -> u64 {
    match ty.bits {
        64 => v.to_bits(),
        16 if ty.k == TK::BF => crate::sem::ieee::f32_to_bf16(v as f32) as u64,
        16 => crate::sem::ieee::f32_to_f16(v as f32) as u64,
        _ => (v as f32).to_bits() as u64,
    }
}

impl KB<'_> {
    pub(super) fn name_value(&mut self, n: &str, line: usize) -> Result<Slot, ModuleError> {
        if let Some(sym) = self.lookup(n) {
            return Ok(match sym {
                Sym::Reg(s) => s,
                Sym::Local(off, _) => self.konst(off as u64),
                Sym::Param(off, _) => self.konst(LOCAL_WIN + off as u64),
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
        // The PTX predefined constant for the warp size (what NVRTC emits for `warpSize`).
        if n == "WARP_SZ" {
            return Ok(self.konst(32));
        }
        if let Some(k) = grid_workspace_sreg(n) {
            self.reads_grid_workspace = true;
            return Ok(self.sreg(SReg::GridWs(k)));
        }
        if let Some(v) = fixed_sreg(n) {
            return Ok(self.konst(v));
        }
        if let Some(r) = cluster_sreg(n) {
            return Ok(self.sreg(r));
        }
        if n.starts_with('%') {
            return Err(perr(line, format!("unknown register `{n}`")));
        }
        Err(perr(line, format!("unknown name `{n}`")))
    }

    /// A source operand of type `ty`.
    pub(super) fn src(&mut self, o: &Operand, ty: Ty, line: usize) -> Result<Slot, ModuleError> {
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
    pub(super) fn dst(&mut self, o: &Operand, line: usize) -> Result<Slot, ModuleError> {
        match o {
            Operand::Sink => Ok(self.sink),
            Operand::Name(n) => match self.lookup(n) {
                Some(Sym::Reg(s)) => Ok(s),
                _ => Err(perr(line, format!("`{n}` is not a register"))),
            },
            _ => Err(perr(line, "expected a destination register")),
        }
    }

    pub(super) fn mem(
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
                Sym::Local(off, _) | Sym::Param(off, _) if lowered == MemSpace::Generic => {
                    MemRef::Addr {
                        base: zero,
                        imm: (LOCAL_WIN + off as u64) as i64 + offset,
                        space: MemSpace::Generic,
                    }
                }
                Sym::Local(off, _) | Sym::Param(off, _) => MemRef::Addr {
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

    pub(super) fn guard(&self, i: &Instr) -> Result<Option<(Slot, bool)>, ModuleError> {
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
        if super::tensor::is_tensor(&i.opcode) {
            return self.lower_tensor(i, g);
        }
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
                    (d, Operand::Name(s)) if timer_sreg(s).is_some() => {
                        let d = self.dst(d, line)?;
                        let op = timer_sreg(s).ok_or_else(unsup)?;
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
                if matches!(t.k, TK::U2 | TK::S2) {
                    self.lower_int_pair(&mn, t, g, ops, line)?;
                } else if let Some(half) = t.packed() {
                    self.lower_packed(&mn, half, g, ops, line)?;
                } else if t.is_float() {
                    self.lower_float(&mn, t, g, ops, line)?;
                } else {
                    self.lower_int_arith(&mn, t, g, ops, line)?;
                }
            }
            "and" | "or" | "xor" | "not" | "cnot" | "shl" | "shr" | "popc" | "clz" | "brev"
            | "bfind" | "bfe" | "bfi" | "prmt" | "shf" | "mul24" | "mad24" | "dp4a" | "dp2a"
            | "fns" | "vabsdiff2" | "vabsdiff4" | "vadd2" | "vadd4" | "vsub2" | "vsub4"
            | "vavrg2" | "vavrg4" | "vmin2" | "vmin4" | "vmax2" | "vmax4" => {
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
                    // Global and constant addresses are generic ones; parameter addresses
                    // (kernel parameters and device-function parameters) are given in their
                    // generic form already.
                    Some(MemSpaceName::Global | MemSpaceName::Const | MemSpaceName::Param) => {
                        Op::Mov
                    }
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
    pub(super) fn pred_operand(
        &mut self,
        o: &Operand,
        line: usize,
    ) -> Result<(Slot, bool), ModuleError> {
        let p = Ty {
            k: TK::Pred,
            bits: 1,
        };
        match o {
            Operand::Not(inner) => Ok((self.src(inner, p, line)?, true)),
            o => Ok((self.src(o, p, line)?, false)),
        }
    }

    pub(super) fn operands3(
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
}
