//! Register copies: a register whose only write is an unguarded `mov` of a constant or of a
//! special register, made before every read on every path, holds that value wherever it is
//! read. Such a register becomes a constant slot or a special-register slot itself (filled in
//! with the register file, like the immediates, `%tid` and `%ntid`; `%ctaid` at each block's
//! start) and its `mov` a `nop`, which keeps every PC, line and instruction count as it was.
//! NVRTC emits these for the operands of `shfl.sync`, for loop constants
//! (`mov.u32 %r16, 31`) and at every kernel's start (`mov.u32 %r1, %tid.x`).
//!
//! This pass only rewrites the lowered program; it never executes anything. What it may treat
//! as a write is `ir::defuse::may_write` (conservative), and "before every read" is the liveness the
//! compiled regions use (`ir::live::entry_live`, passed in by the caller). Folding leaves that set
//! as it was: a folded register was not in it and becomes a constant or special slot, which it
//! leaves out, and no other register's reads or writes change. That liveness counts every
//! register live at a call and a guarded write as no write, so device functions' registers and
//! guarded `mov`s never fold; the pass also checks both itself, so that it stays right if the
//! liveness gets sharper.

use std::collections::{HashMap, HashSet};

use crate::ir::{Op, Program, SReg, Slot, NONE};

/// What a folded register holds.
#[derive(Clone, Copy)]
enum Value {
    Const(u64),
    Special(SReg),
}

/// Fold the copies of constants and special registers in `prog` (see the module docs), given
/// the registers some path may read before writing (`ir::live::entry_live`).
pub fn copies(prog: &mut Program, read_first: &[Slot]) {
    let consts: HashMap<Slot, u64> = prog.consts.iter().copied().collect();
    let sregs: HashMap<Slot, SReg> = prog.sregs.iter().copied().collect();
    // For each slot: how many instructions may write it, and the PC of an unguarded `mov` of a
    // constant or special register into it.
    let mut writes: HashMap<Slot, u32> = HashMap::new();
    let mut copy: HashMap<Slot, (usize, Value)> = HashMap::new();
    for (pc, i) in prog.code.iter().enumerate() {
        for s in crate::ir::defuse::may_write(i, prog) {
            *writes.entry(s).or_insert(0) += 1;
        }
        if i.op == Op::Mov && i.guard == NONE && i.r[0] != NONE {
            let value = match (consts.get(&i.r[1]), sregs.get(&i.r[1])) {
                (Some(&v), _) => Some(Value::Const(v)),
                (None, Some(&r)) => Some(Value::Special(r)),
                (None, None) => None,
            };
            if let Some(v) = value {
                copy.insert(i.r[0], (pc, v));
            }
        }
    }
    if copy.is_empty() {
        return;
    }
    let read_first: HashSet<Slot> = read_first.iter().copied().collect();
    // Registers a call may save and restore.
    let in_window = |s: Slot| prog.funcs.iter().any(|f| (f.regs.0..f.regs.1).contains(&s));
    let mut folded: Vec<(Slot, (usize, Value))> = copy
        .into_iter()
        .filter(|&(s, _)| {
            writes.get(&s) == Some(&1)
                && !read_first.contains(&s)
                && !consts.contains_key(&s)
                && !sregs.contains_key(&s)
                && !in_window(s)
        })
        .collect();
    folded.sort_unstable_by_key(|f| f.0);
    for (s, (pc, value)) in folded {
        match value {
            Value::Const(v) => prog.consts.push((s, v)),
            Value::Special(r) => prog.sregs.push((s, r)),
        }
        let i = &mut prog.code[pc];
        i.op = Op::Nop;
        i.r = [NONE; 6];
    }
}
