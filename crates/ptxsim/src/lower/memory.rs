//! Instruction selection for loads, stores and atomics in every state space.
//!
//! Part of `inst`; it only chooses pre-decoded ops and never executes anything.

use super::types::{Mn, TK};
use super::{perr, unsupported, MemRef, KB};
use crate::ir::*;
use crate::parse::Operand;
use crate::ModuleError;

impl KB<'_> {
    pub(super) fn lower_ldst(
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

    pub(super) fn lower_atom(
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
}
