//! Instruction selection for calls (direct, built-in, through pointers) and barriers.
//!
//! Part of `inst`; it only chooses pre-decoded ops and never executes anything.

use super::types::{Mn, Ty, TK};
use super::{perr, unsupported, Sym, KB};
use crate::ir::*;
use crate::parse::Operand;
use crate::ModuleError;

impl KB<'_> {
    pub(super) fn lower_call(
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
                    Some(Sym::Local(off, size) | Sym::Param(off, size)) => Ok((off, size)),
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

    pub(super) fn lower_bar(
        &mut self,
        mn: &Mn,
        g: Option<(Slot, bool)>,
        ops: &[Operand],
        line: usize,
    ) -> Result<(), ModuleError> {
        let unsup = || unsupported(line, format!("{}.{}", mn.base, mn.mods.join(".")));
        let u32t = Ty { k: TK::U, bits: 32 };
        if mn.has("warp") {
            let m = match ops.first() {
                Some(o) => self.src(o, u32t, line)?,
                None => self.konst(0xFFFF_FFFF),
            };
            self.emit(Op::WarpSync, g, [NONE, NONE, NONE, NONE, m, NONE], 0);
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
