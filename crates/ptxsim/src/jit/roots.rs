//! Which pointer each address register of a region derives from, so that the global accesses
//! through one pointer can share one access cache (`emit::cache_plan`).
//!
//! NVRTC walks an array with a chain of registers: `add %rd22, %rd30, %rd5`,
//! `add %rd23, %rd22, %rd5`, ... Every register of the chain points into the same allocation
//! as the pointer the chain started from (its *root*), so one cache entry serves all of its
//! accesses. A root is a kernel parameter loaded as 8 bytes, or an access's address register
//! that derives from no such parameter (a value the region is entered with, a pointer loaded
//! from memory). A register derives from a root through moves (which is what `cvta.to.global`
//! becomes) and through adding or subtracting a non-pointer. The analysis is flow-insensitive:
//! a register given two roots by its writes is a root of its own.
//!
//! It only decides which accesses share a cache entry, never whether an access is allowed: a
//! wrong guess costs cache misses, not correctness. It must not know about Cranelift.

use std::collections::{HashMap, HashSet};

use crate::ir::{Inst, Op, Slot};

/// The root of each pointer register of a region.
#[derive(Debug, Default)]
pub(super) struct Roots {
    /// Registers that are their own root.
    own: HashSet<Slot>,
    /// Other pointer registers and their roots.
    of: HashMap<Slot, Slot>,
}

impl Roots {
    /// The root `s` derives from, if `s` is known to hold a pointer.
    pub(super) fn root(&self, s: Slot) -> Option<Slot> {
        if self.own.contains(&s) {
            Some(s)
        } else {
            self.of.get(&s).copied()
        }
    }

    /// Record that a write of `d` gives it root `r`; returns whether anything changed.
    fn join(&mut self, d: Slot, r: Slot) -> bool {
        if self.own.contains(&d) {
            return false;
        }
        match self.of.get(&d) {
            None => {
                self.of.insert(d, r);
                true
            }
            Some(&old) if old == r => false,
            Some(_) => {
                self.of.remove(&d);
                self.own.insert(d);
                true
            }
        }
    }

    /// One pass over the region's moves, additions and subtractions.
    fn pass(&mut self, code: &[Inst]) -> bool {
        let mut changed = false;
        for i in code {
            let d = i.r[0];
            let r = match i.op {
                Op::Mov => self.root(i.r[1]),
                Op::Add => match (self.root(i.r[1]), self.root(i.r[2])) {
                    (Some(a), None) => Some(a),
                    (None, Some(b)) => Some(b),
                    // The sum of two pointers points nowhere we know.
                    (Some(_), Some(_)) => Some(d),
                    (None, None) => None,
                },
                Op::Sub => match (self.root(i.r[1]), self.root(i.r[2])) {
                    (Some(a), None) => Some(a),
                    _ => None,
                },
                _ => None,
            };
            if let Some(r) = r {
                changed |= self.join(d, r);
            }
        }
        changed
    }

    fn settle(&mut self, code: &[Inst]) {
        // Each pass either changes nothing or moves a register up the lattice (unknown, one
        // root, own root); the bound only guards against a mistake in that argument.
        for _ in 0..4 * code.len() + 4 {
            if !self.pass(code) {
                return;
            }
        }
    }
}

/// The roots of a region's registers; `bases` are the address registers of its global
/// accesses in code order (each becomes a root itself if it derives from none).
pub(super) fn analyze(code: &[Inst], bases: &[Slot]) -> Roots {
    let mut roots = Roots::default();
    for i in code {
        if let Op::LdK { size: 8, n: 1, .. } = i.op {
            roots.own.insert(i.r[0]);
        }
    }
    roots.settle(code);
    for &b in bases {
        if roots.root(b).is_none() {
            roots.own.insert(b);
            roots.settle(code);
        }
    }
    roots
}

/// A check of a region (`emit::access_groups`): its address register, the bytes it covers and
/// their alignment, and whether it sits inside a loop of the region.
pub(super) struct Check {
    pub base: Slot,
    pub span: u64,
    pub align: u64,
    pub in_loop: bool,
    /// How many times it reads its entry: 1; 2 for the head of a chain (`chains`), which
    /// checks the chain's last position too; 0 for a member, covered by its head (it only has
    /// an entry in case it is ever compiled without its head).
    pub reads: usize,
}

/// Caches at most this many entries in host registers (SSA variables) through a lane's run;
/// more would only be spilled.
const MAX_HELD: usize = 2;

/// Which cache entry each check uses (`entry`, indices from 0 in the region), and which
/// entries compiled code keeps in variables (`held`): checks through one root with the same
/// span and alignment share an entry (its `units` depend on both). An entry is held when
/// it is read more than once, all in loops; otherwise loading it at the check costs no more.
pub(super) struct Plan {
    pub entry: Vec<u32>,
    pub entries: u32,
    pub held: Vec<bool>,
}

pub(super) fn plan(code: &[Inst], checks: &[Check]) -> Plan {
    let bases: Vec<Slot> = checks.iter().map(|c| c.base).collect();
    let roots = analyze(code, &bases);
    let mut key_of: HashMap<(Slot, u64, u64), u32> = HashMap::new();
    let mut uses: Vec<(usize, usize, u32)> = Vec::new(); // (in loops, checks, entry)
    let mut entry = Vec::with_capacity(checks.len());
    for c in checks {
        let root = roots.root(c.base).unwrap_or(c.base);
        let next = key_of.len() as u32;
        let e = *key_of.entry((root, c.span, c.align)).or_insert(next);
        if e == next {
            uses.push((0, 0, e));
        }
        uses[e as usize].0 += c.reads * c.in_loop as usize;
        uses[e as usize].1 += c.reads;
        entry.push(e);
    }
    let entries = key_of.len() as u32;
    let mut held = vec![false; entries as usize];
    uses.retain(|&(l, n, _)| n > 1 && l == n);
    uses.sort_by_key(|&(l, n, e)| (std::cmp::Reverse((l, n)), e));
    for &(_, _, e) in uses.iter().take(MAX_HELD) {
        held[e as usize] = true;
    }
    Plan {
        entry,
        entries,
        held,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::NONE;

    fn inst(op: Op, r: [Slot; 3]) -> Inst {
        Inst {
            op,
            guard: NONE,
            guard_neg: false,
            r: [r[0], r[1], r[2], NONE, NONE, NONE],
            imm: 0,
            loc: 0,
        }
    }

    fn ldk(d: Slot) -> Inst {
        inst(
            Op::LdK {
                size: 8,
                n: 1,
                sext: false,
            },
            [d, NONE, NONE],
        )
    }

    #[test]
    fn a_chain_through_a_loop_has_the_parameter_as_its_root() {
        // 1 = param; 2 = mov 1; 10 = offset (a product); 3 = 2 + 10; loop: 4 = 3 + 11;
        // 5 = 4 + 11; 3 = 5 + 11.
        let code = [
            ldk(1),
            inst(Op::Mov, [2, 1, NONE]),
            inst(Op::MulLo, [10, 20, 21]),
            inst(Op::Add, [3, 2, 10]),
            inst(Op::Add, [4, 3, 11]),
            inst(Op::Add, [5, 11, 4]),
            inst(Op::Add, [3, 5, 11]),
        ];
        let r = analyze(&code, &[3, 4, 5]);
        for s in [1, 2, 3, 4, 5] {
            assert_eq!(r.root(s), Some(1), "slot {s}");
        }
        assert_eq!(r.root(10), None);
        assert_eq!(r.root(11), None);
    }

    #[test]
    fn registers_entered_with_are_roots_and_conflicts_are_their_own() {
        // 7 is entered with (no parameter load): its chain shares its root. 8 is written from
        // two different parameters: its own root. 9 = 1 - 2 is a difference, not a pointer.
        let code = [
            ldk(1),
            ldk(2),
            inst(Op::Add, [6, 7, 11]),
            inst(Op::Mov, [8, 1, NONE]),
            inst(Op::Mov, [8, 2, NONE]),
            inst(Op::Sub, [9, 1, 2]),
            inst(Op::Add, [12, 8, 11]),
        ];
        let r = analyze(&code, &[7, 6, 12]);
        assert_eq!(r.root(7), Some(7));
        assert_eq!(r.root(6), Some(7));
        assert_eq!(r.root(8), Some(8));
        assert_eq!(r.root(12), Some(8));
        assert_eq!(r.root(9), None);
    }
}
