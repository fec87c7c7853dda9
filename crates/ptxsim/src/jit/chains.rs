//! Accesses through a chain of address registers that each add one step to the last, so
//! that one check covers them all (`emit::Em::checked`).
//!
//! NVRTC unrolls a strided walk into `ld [%rd30]; add %rd22, %rd30, %rd5; ld [%rd22];
//! add %rd23, %rd22, %rd5; ld [%rd23]; ...`: position j of the chain holds `r0 + j * s`. In a
//! straight-line run in which `s` does not change, the first access (the chain's head) can
//! check the first and the last position together: both inside one allocation, the first
//! aligned and the step a multiple of the alignment, then every position between them is
//! inside and aligned too, and the other accesses (the members) need no check of their own.
//! If that check fails the lane leaves before the head, as for any check, and the interpreter
//! executes the run with its own checks.
//!
//! A chain only ever joins accesses that are the heads of their groups (`emit::access_groups`)
//! and have the same group shape (offset, span, alignment), unguarded, in one straight-line run.
//! This module only finds chains; it must not know about Cranelift.

use std::collections::HashMap;

use crate::ir::defuse::dests;
use crate::ir::{Inst, Op, Slot, NONE};

/// A chain, by its head: the step register and the last position an access uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Chain {
    pub step: Slot,
    pub last: u32,
}

/// The chains of a region: by head, and each member's head and position.
#[derive(Debug, Default)]
pub(super) struct Chains {
    pub heads: HashMap<usize, Chain>,
    pub members: HashMap<usize, (usize, u32)>,
}

/// A group's shape: offset of its first byte from the register, bytes, alignment.
pub(super) type Shape = (i64, u64, u64);

/// Chains of the region `code`; `shape(k)` is the shape of the group whose head is the access
/// at `k` (`None` for other instructions and for accesses checked with another's group).
pub(super) fn find(
    code: &[Inst],
    leaders: &[bool],
    shape: impl Fn(usize) -> Option<Shape>,
) -> Chains {
    #[derive(Clone, Copy)]
    struct Open {
        step: Option<Slot>,
        last: u32,
        /// Whether adds may still extend it (its step has not been written since it began).
        growing: bool,
    }
    let mut chains: HashMap<usize, Open> = HashMap::new();
    let mut members: HashMap<usize, (usize, u32)> = HashMap::new();
    // The registers holding a position of a chain of the current run.
    let mut pos: HashMap<Slot, (usize, u32)> = HashMap::new();
    let mut last_write: HashMap<Slot, usize> = HashMap::new();
    for (k, i) in code.iter().enumerate() {
        if leaders.get(k).copied().unwrap_or(false) {
            pos.clear();
        }
        if let (Some(sh), true) = (shape(k), i.guard == NONE) {
            let b = i.r[4];
            match pos.get(&b).copied() {
                Some((h, j)) if j >= 1 && shape(h) == Some(sh) => {
                    members.insert(k, (h, j));
                    if let Some(c) = chains.get_mut(&h) {
                        c.last = c.last.max(j);
                    }
                }
                Some(_) => {}
                None => {
                    chains.insert(
                        k,
                        Open {
                            step: None,
                            last: 0,
                            growing: true,
                        },
                    );
                    pos.insert(b, (k, 0));
                }
            }
        }
        // `d = p + s` with `p` at position j: position j + 1, if `s` is the chain's step (or
        // the first step, unchanged since the head).
        let mut grown = None;
        if i.op == Op::Add && i.guard == NONE {
            let d = i.r[0];
            for (p, s) in [(i.r[1], i.r[2]), (i.r[2], i.r[1])] {
                let Some(&(h, j)) = pos.get(&p) else { continue };
                let Some(c) = chains.get(&h) else { continue };
                let fits = match c.step {
                    Some(step) => step == s,
                    None => last_write.get(&s).is_none_or(|&w| w < h),
                };
                if c.growing && fits && s != d && s != NONE && !pos.contains_key(&s) {
                    grown = Some((d, h, j + 1, s));
                    break;
                }
            }
        }
        for d in dests(i) {
            pos.remove(&d);
            last_write.insert(d, k);
            for c in chains.values_mut() {
                if c.step == Some(d) {
                    c.growing = false;
                }
            }
        }
        if let Some((d, h, j, s)) = grown {
            if let Some(c) = chains.get_mut(&h) {
                c.step = Some(s);
                pos.insert(d, (h, j));
            }
        }
        if i.op == Op::Bra {
            pos.clear();
        }
    }
    let heads = chains
        .into_iter()
        .filter_map(|(h, c)| {
            let step = c.step?;
            (c.last >= 1).then_some((h, Chain { step, last: c.last }))
        })
        .collect::<HashMap<_, _>>();
    members.retain(|_, (h, _)| heads.contains_key(h));
    Chains { heads, members }
}

#[cfg(test)]
mod tests {
    use super::super::test_code::{add, inst, ld};
    use super::*;

    fn find_in(code: &[Inst]) -> Chains {
        let leaders = vec![false; code.len()];
        find(code, &leaders, |k| {
            matches!(code[k].op, Op::Ld { .. }).then_some((0, 4, 4))
        })
    }

    #[test]
    fn an_unrolled_strided_walk_is_one_chain() {
        // matmulNaive's inner loop: 30 head, 22 = 30 + 5, 23 = 22 + 5, 24 = 23 + 5,
        // 30 = 24 + 5 (the next iteration's head, not an access here).
        let code = [
            ld(100, 30),
            add(22, 30, 5),
            ld(101, 22),
            add(23, 22, 5),
            ld(102, 23),
            add(24, 23, 5),
            add(30, 24, 5),
            ld(103, 24),
        ];
        let c = find_in(&code);
        assert_eq!(c.heads[&0], Chain { step: 5, last: 3 });
        assert_eq!(c.members[&2], (0, 1));
        assert_eq!(c.members[&4], (0, 2));
        assert_eq!(c.members[&7], (0, 3));
    }

    #[test]
    fn a_changed_step_or_base_ends_the_chain() {
        // The step is written after the first add: 23's add uses another value.
        let code = [
            ld(100, 30),
            add(22, 30, 5),
            ld(101, 22),
            add(5, 5, 5),
            add(23, 22, 5),
            ld(102, 23),
        ];
        let c = find_in(&code);
        assert_eq!(c.heads[&0], Chain { step: 5, last: 1 });
        assert!(!c.members.contains_key(&5));
        // The step is written between the head and the first add: no chain.
        let code = [ld(100, 30), add(5, 6, 7), add(22, 30, 5), ld(101, 22)];
        assert!(find_in(&code).heads.is_empty());
        // The head register is written before the add: no chain; a branch ends the run.
        let code = [ld(100, 30), add(30, 31, 7), add(22, 30, 5), ld(101, 22)];
        assert!(find_in(&code).heads.is_empty());
        let mut bra = inst(Op::Bra, [NONE; 5]);
        bra.imm = 0;
        let code = [ld(100, 30), bra, add(22, 30, 5), ld(101, 22)];
        assert!(find_in(&code).heads.is_empty());
    }
}
