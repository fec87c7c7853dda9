//! Instructions for the unit tests of the JIT's analyses (`chains`, `loops`), which read code
//! without running it.

use crate::ir::{Inst, MemSpace, Op, Slot, NONE};

/// `op` unguarded, with operand slots `r` (and no sixth).
pub(super) fn inst(op: Op, r: [Slot; 5]) -> Inst {
    Inst {
        op,
        guard: NONE,
        guard_neg: false,
        r: [r[0], r[1], r[2], r[3], r[4], NONE],
        imm: 0,
        loc: 0,
    }
}

/// `ld.global.u32 d, [base]`.
pub(super) fn ld(d: Slot, base: Slot) -> Inst {
    let op = Op::Ld {
        space: MemSpace::Global,
        size: 4,
        n: 1,
        sext: false,
    };
    inst(op, [d, NONE, NONE, NONE, base])
}

/// `add d, a, b`.
pub(super) fn add(d: Slot, a: Slot, b: Slot) -> Inst {
    inst(Op::Add, [d, a, b, NONE, NONE])
}
