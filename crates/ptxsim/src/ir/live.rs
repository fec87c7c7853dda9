//! Register liveness over a whole program: which slots may still be read after a PC.
//!
//! Compiled code keeps a straight-line run's results in host registers and writes back to the
//! lane's register file only the slots that are live where the lane leaves the region, and loads
//! at entry only the slots live there; a block starts with the slots live at its entry cleared
//! (`entry_live`). The analysis is conservative: an instruction that is not `lane_local` reads
//! every slot it names and kills none; calls, returns and traps keep every slot live; a
//! guarded write kills nothing.

use super::defuse::{dests, lane_local, sources};
use super::{Op, Program, Slot, NONE};

/// Live-in sets, one bit per slot, per PC.
pub(crate) struct Live {
    words: usize,
    sets: Vec<u64>,
}

impl Live {
    /// Whether slot `s` may be read after control reaches `pc` (before `pc` executes).
    pub(crate) fn live(&self, pc: u32, s: Slot) -> bool {
        let k = pc as usize * self.words + s as usize / 64;
        // Past the end of the program nothing is live.
        self.sets.get(k).is_some_and(|w| (w >> (s % 64)) & 1 != 0)
    }
}

pub(crate) fn analyze(prog: &Program) -> Live {
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
                _ if lane_local(i, prog) => {
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

/// The slots of `prog` other than constants and special registers that some path may read
/// before writing (live where the kernel starts; the analysis compiled regions use, which
/// counts every slot live at a call and models the writes of the instructions it compiles and
/// of loads, atomics and shuffles).
pub(crate) fn entry_live(prog: &Program) -> Vec<Slot> {
    if prog.code.is_empty() {
        return Vec::new();
    }
    let live = analyze(prog);
    let fixed: std::collections::HashSet<Slot> = prog
        .consts
        .iter()
        .map(|c| c.0)
        .chain(prog.sregs.iter().map(|r| r.0))
        .collect();
    (0..prog.nslots)
        .filter(|&s| live.live(0, s) && !fixed.contains(&s))
        .collect()
}

/// Whether slot `s` may be read after control reaches `pc` (the compiled regions' liveness),
/// for the tests.
#[cfg(test)]
pub(crate) fn liveness(prog: &Program) -> impl Fn(u32, Slot) -> bool {
    let l = analyze(prog);
    move |pc, s| l.live(pc, s)
}
