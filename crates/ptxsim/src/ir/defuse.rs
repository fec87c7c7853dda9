//! Def-use of one instruction: which register slots it reads and writes, exactly for the
//! lane-local instructions (`lane_local`) and conservatively for the rest.
//!
//! The liveness (`live`), the uniformity analysis (`uniform`), the lowering's copy folding,
//! the block tier and the region compiler all read instructions through these functions, so
//! that they agree. Nothing here executes anything.

use super::{FTy, IRnd, Inst, IntTy, MemSpace, Op, Program, Rnd, Slot, UFn, NONE};

/// Whether `i` is a lane-local instruction whose reads and writes `sources` and `dests` give
/// exactly: it touches only the running lane's registers, global and shared memory (whole
/// words) and the kernel's parameters, and its operands are in range. These are the
/// instructions compiled regions run (`jit`); every analysis treats any other instruction
/// conservatively (`may_write`, `ir::live`), so that the region compiler and the analyses agree
/// on what an instruction touches.
pub(crate) fn lane_local(i: &Inst, prog: &Program) -> bool {
    let regs_ok = i.r.iter().all(|&s| s == NONE || s < prog.nslots)
        && (i.guard == NONE || i.guard < prog.nslots);
    if !regs_ok {
        return false;
    }
    let int_ok = |t: IntTy| matches!(t.bits, 8 | 16 | 32 | 64);
    match i.op {
        Op::Nop
        | Op::Mov
        | Op::Add
        | Op::Sub
        | Op::MulLo
        | Op::MadLo
        | Op::And
        | Op::Or
        | Op::Xor
        | Op::Not
        | Op::Neg
        | Op::PNot
        | Op::Selp
        | Op::FAdd32
        | Op::FSub32
        | Op::FMul32
        | Op::FFma32
        | Op::FDiv32
        | Op::FAdd64
        | Op::FSub64
        | Op::FMul64
        | Op::FFma64
        | Op::FDiv64
        | Op::Bra => true,
        Op::CNot { bits } | Op::Shl { bits } => matches!(bits, 8 | 16 | 32 | 64),
        Op::Popc { bits } | Op::Clz { bits } | Op::Brev { bits } => matches!(bits, 32 | 64),
        Op::Shr { ty } | Op::Min(ty) | Op::Max(ty) | Op::Abs(ty) | Op::Div(ty) | Op::Rem(ty) => {
            int_ok(ty)
        }
        Op::MulHi(t) => matches!(t.bits, 32 | 64),
        Op::MulWide(t) | Op::MadWide(t) => t.bits == 32,
        Op::Pack { n, bits } => {
            (1..=4).contains(&n)
                && matches!(bits, 8 | 16 | 32)
                && i.r[1..=n as usize].iter().all(|&s| s != NONE)
        }
        Op::Unpack { n, bits } => {
            (1..=4).contains(&n)
                && matches!(bits, 8 | 16 | 32)
                && i.r[5] != NONE
                && i.r[..n as usize].iter().all(|&s| s != NONE)
        }
        // The IEEE-exact ones (the interpreter computes them with the same host operations).
        Op::FUnary { f, ty, ftz } => {
            !ftz && matches!(ty, FTy::F32 | FTy::F64)
                && matches!(f, UFn::Abs | UFn::Neg | UFn::Sqrt | UFn::Rcp | UFn::Rsqrt)
        }
        Op::FMin { ty, ftz, .. } | Op::FMax { ty, ftz, .. } => {
            !ftz && matches!(ty, FTy::F32 | FTy::F64)
        }
        Op::SetpI { ty, .. } => int_ok(ty),
        Op::SetpF { ty, ftz, .. } => !ftz && matches!(ty, FTy::F32 | FTy::F64),
        Op::CvtII { from, to, sat } => !sat && int_ok(from) && int_ok(to),
        Op::CvtIF { from, to, rnd } => {
            from.bits == 32 && rnd == Rnd::Rn && matches!(to, FTy::F32 | FTy::F64)
        }
        // Rounding to an integer: `.ftz` changes nothing when truncating, and is not compiled
        // otherwise (a flushed subnormal floors to 0, not -1).
        Op::CvtFI {
            from,
            to,
            irnd,
            ftz,
        } => {
            (irnd == IRnd::Rzi || (irnd != IRnd::None && !ftz))
                && matches!(from, FTy::F32 | FTy::F64)
                && matches!(to.bits, 32 | 64)
        }
        // f32 -> f64 and f64 -> f32 (.rn). (Rounding to an integral value in the same type is
        // not compiled: the interpreter keeps a signalling NaN's bits there, the host's round
        // instructions quiet it.)
        Op::CvtFF {
            from,
            to,
            rnd,
            irnd,
            ftz,
            sat,
        } => {
            !ftz && !sat
                && irnd == IRnd::None
                && match (from, to) {
                    (FTy::F32, FTy::F64) => true,
                    (FTy::F64, FTy::F32) => rnd == Rnd::Rn,
                    _ => false,
                }
        }
        // Shared memory in whole words only (`shared_access`: the race checker's records
        // are per word).
        Op::Ld { space, size, n, .. } | Op::St { space, size, n } => {
            (matches!(space, MemSpace::Global | MemSpace::Generic) && matches!(size, 1 | 2 | 4 | 8)
                || shared_access(i).is_some())
                && matches!(n, 1 | 2 | 4)
                && i.r[4] != NONE
                && i.r[..n as usize].iter().all(|&s| s != NONE)
        }
        Op::LdK { size, n, .. } => {
            matches!(size, 1 | 2 | 4 | 8)
                && matches!(n, 1 | 2 | 4)
                && i.imm >= 0
                && (i.imm as u64).saturating_add(size as u64 * n as u64) <= prog.param_bytes as u64
                && i.r[..n as usize].iter().all(|&s| s != NONE)
        }
        Op::Cvta { .. } => true,
        _ => false,
    }
}

/// The shared access `i` (address register, immediate, bytes, store), when compiled code does
/// it (whole words: 4- and 8-byte elements; `lane_local` admits no other).
pub(crate) fn shared_access(i: &Inst) -> Option<(Slot, i64, u64, bool)> {
    match i.op {
        Op::Ld {
            space: MemSpace::Shared,
            size,
            n,
            ..
        } if matches!(size, 4 | 8) => Some((i.r[4], i.imm, size as u64 * n as u64, false)),
        Op::St {
            space: MemSpace::Shared,
            size,
            n,
        } if matches!(size, 4 | 8) => Some((i.r[4], i.imm, size as u64 * n as u64, true)),
        _ => None,
    }
}

/// Slots an instruction writes (for the instructions `lane_local` admits).
pub(crate) fn dests(i: &Inst) -> Vec<Slot> {
    let mut d = match i.op {
        Op::Ld { n, .. } | Op::LdK { n, .. } | Op::Unpack { n, .. } => i.r[..n as usize].to_vec(),
        Op::St { .. } | Op::Bra | Op::Nop => vec![],
        Op::SetpI { .. } | Op::SetpF { .. } => vec![i.r[0], i.r[4]],
        _ => vec![i.r[0]],
    };
    d.retain(|&s| s != NONE);
    d
}

/// Slots any instruction may write: `dests` for the instructions `lane_local` admits, the
/// destinations of interpreted loads, atomics, shuffles and barrier reductions, none for
/// stores and control flow, and every slot it names for any other instruction (conservative).
pub(crate) fn may_write(i: &Inst, prog: &Program) -> Vec<Slot> {
    let mut d = match i.op {
        Op::St { .. } | Op::Bra | Op::Nop | Op::Exit | Op::Ret | Op::Trap => vec![],
        Op::Ld { n, .. } => i.r[..n as usize].to_vec(),
        Op::Atom { .. } | Op::Bar(_) => vec![i.r[0]],
        Op::Shfl(_) => vec![i.r[0], i.r[5]],
        Op::Tensor => prog
            .tensor
            .get(i.imm as usize)
            .map_or(vec![], |t| t.d.clone()),
        _ if lane_local(i, prog) => dests(i),
        _ => i.r.to_vec(),
    };
    d.retain(|&s| s != NONE);
    d
}

/// Slots an instruction reads, its guard included (for the instructions `lane_local` admits).
pub(crate) fn sources(i: &Inst) -> Vec<Slot> {
    let mut s = match i.op {
        Op::Ld { .. } => vec![i.r[4]],
        Op::St { n, .. } => i.r[..n as usize].iter().copied().chain([i.r[4]]).collect(),
        Op::LdK { .. } | Op::Bra | Op::Nop => vec![],
        Op::Unpack { .. } => vec![i.r[5]],
        Op::Pack { n, .. } => i.r[1..=n as usize].to_vec(),
        _ => i.r[1..4].to_vec(),
    };
    s.push(i.guard);
    s.retain(|&x| x != NONE);
    s
}
