//! Register liveness over a whole program: which slots may still be read after a PC.
//!
//! Compiled code keeps a straight-line run's results in host registers and writes back to the
//! lane's register file only the slots that are live where the lane leaves the region, and loads
//! at entry only the slots live there. The analysis is conservative: an instruction the region
//! compiler does not compile reads every slot it names and kills none; calls, returns and traps
//! keep every slot live; a guarded write kills nothing.

use super::supported;
use crate::ir::{Inst, Op, Program, Slot, NONE};

/// Slots an instruction writes (for the instructions `supported` admits).
pub(super) fn dests(i: &Inst) -> Vec<Slot> {
    let mut d = match i.op {
        Op::Ld { n, .. } | Op::LdK { n, .. } | Op::Unpack { n, .. } => i.r[..n as usize].to_vec(),
        Op::St { .. } | Op::Bra | Op::Nop => vec![],
        Op::SetpI { .. } | Op::SetpF { .. } => vec![i.r[0], i.r[4]],
        _ => vec![i.r[0]],
    };
    d.retain(|&s| s != NONE);
    d
}

/// Slots any instruction may write: `dests` for the instructions `supported` admits, the
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
        _ if supported(i, prog) => dests(i),
        _ => i.r.to_vec(),
    };
    d.retain(|&s| s != NONE);
    d
}

/// Slots an instruction reads, its guard included (for the instructions `supported` admits).
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

/// Live-in sets, one bit per slot, per PC.
pub(super) struct Live {
    words: usize,
    sets: Vec<u64>,
}

impl Live {
    /// Whether slot `s` may be read after control reaches `pc` (before `pc` executes).
    pub(super) fn live(&self, pc: u32, s: Slot) -> bool {
        let k = pc as usize * self.words + s as usize / 64;
        // Past the end of the program nothing is live.
        self.sets.get(k).is_some_and(|w| (w >> (s % 64)) & 1 != 0)
    }
}

pub(super) fn analyze(prog: &Program) -> Live {
    let n = prog.code.len();
    let words = (prog.nslots as usize).div_ceil(64).max(1);
    let mut sets = vec![0u64; n * words];
    let all: Vec<u64> = (0..words)
        .map(|w| {
            let lo = w * 64;
            let hi = (prog.nslots as usize).min(lo + 64);
            if hi - lo == 64 {
                u64::MAX
            } else {
                (1u64 << (hi - lo)) - 1
            }
        })
        .collect();
    let set = |v: &mut [u64], s: Slot| {
        if (s as usize) < words * 64 {
            v[s as usize / 64] |= 1 << (s % 64);
        }
    };
    let mut changed = true;
    let mut new = vec![0u64; words];
    while changed {
        changed = false;
        for pc in (0..n).rev() {
            let i = &prog.code[pc];
            new.iter_mut().for_each(|w| *w = 0);
            let or_in = |new: &mut [u64], sets: &[u64], at: usize| {
                if at < n {
                    for (d, s) in new.iter_mut().zip(&sets[at * words..(at + 1) * words]) {
                        *d |= s;
                    }
                }
            };
            match i.op {
                Op::Exit => {
                    if i.guard != NONE {
                        or_in(&mut new, &sets, pc + 1);
                        set(&mut new, i.guard);
                    }
                }
                Op::Bra => {
                    or_in(&mut new, &sets, i.imm as usize);
                    if i.guard != NONE {
                        or_in(&mut new, &sets, pc + 1);
                        set(&mut new, i.guard);
                    }
                }
                _ if supported(i, prog) => {
                    or_in(&mut new, &sets, pc + 1);
                    if i.guard == NONE {
                        for d in dests(i) {
                            if (d as usize) < words * 64 {
                                new[d as usize / 64] &= !(1 << (d % 64));
                            }
                        }
                    }
                    for s in sources(i) {
                        set(&mut new, s);
                    }
                }
                // Calls and returns read registers their instruction does not name.
                Op::Call | Op::Ret | Op::Trap => new.copy_from_slice(&all),
                // Tensor-core instructions name their registers in `Program::tensor`: they
                // write their destination fragment in full and read the rest.
                Op::Tensor => {
                    or_in(&mut new, &sets, pc + 1);
                    match prog.tensor.get(i.imm as usize) {
                        Some(t) => {
                            if i.guard == NONE {
                                for &d in &t.d {
                                    if (d as usize) < words * 64 {
                                        new[d as usize / 64] &= !(1 << (d % 64));
                                    }
                                }
                            }
                            for s in t.reads().into_iter().chain([i.guard, i.r[4]]) {
                                if s != NONE {
                                    set(&mut new, s);
                                }
                            }
                        }
                        None => new.copy_from_slice(&all),
                    }
                }
                // Interpreted loads (shared, local, ...), atomics and shuffles write their
                // destinations in full and read the rest.
                Op::Ld { .. } | Op::Atom { .. } | Op::Shfl(_) => {
                    or_in(&mut new, &sets, pc + 1);
                    let (written, read): (Vec<Slot>, Vec<Slot>) = match i.op {
                        Op::Ld { n, .. } => {
                            (i.r[..n as usize].to_vec(), i.r[n as usize..].to_vec())
                        }
                        Op::Shfl(_) => (vec![i.r[0], i.r[5]], i.r[1..5].to_vec()),
                        _ => (vec![i.r[0]], i.r[1..].to_vec()),
                    };
                    if i.guard == NONE {
                        for d in written.into_iter().filter(|&d| d != NONE) {
                            if (d as usize) < words * 64 {
                                new[d as usize / 64] &= !(1 << (d % 64));
                            }
                        }
                    }
                    for s in read.into_iter().chain([i.guard]) {
                        if s != NONE {
                            set(&mut new, s);
                        }
                    }
                }
                // Any other instruction reads at most the slots it names (and its guard); it
                // kills nothing here (conservative: its writes are not modelled).
                _ => {
                    or_in(&mut new, &sets, pc + 1);
                    for s in i.r.iter().copied().chain([i.guard]) {
                        if s != NONE {
                            set(&mut new, s);
                        }
                    }
                }
            }
            let cur = &mut sets[pc * words..(pc + 1) * words];
            if cur != new.as_slice() {
                cur.copy_from_slice(&new);
                changed = true;
            }
        }
    }
    Live { words, sets }
}
