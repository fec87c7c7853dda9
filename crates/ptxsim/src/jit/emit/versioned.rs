//! Loop versioning (`jit::loops`): where a simple loop starts (or, for a loop that often runs
//! once, where its first iteration branches back), one check per access of the positions the
//! first and last of the iterations left touch; when every check passes, the lane runs a copy
//! of the body without checks, else a checked copy.

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::I64;
use cranelift_codegen::ir::{Block, InstBuilder, Value};

use super::super::loops::{Count, Form, Wide};
use super::ops::ext;
use super::Em;
use crate::ir::{Cmp, Inst, IntTy};

/// A loop whose step is not a power of two runs checked when it has at most this many
/// iterations left: the division that counts them and the checks cost about what the checks
/// in the loop do in three. Measured (callgrind, a grid-stride `saxpy` over 65,536 elements,
/// checked where the first iteration branches back, host instructions against no versioning):
/// 1 iteration a thread +2 %, 2 +7 %, 4 +5 %, 8 -9 %, 16 -25 %, 64 -39 %.
const FEW: i64 = 3;

impl Em<'_, '_> {
    /// Where an iteration of loop `li` starts (the current block: the loop's start, or where its
    /// second iteration starts, see `start_versioned`): the checks of all its accesses over the
    /// iterations left, going to `slow` when one fails. Returns, per access group head, the
    /// difference between host and device addresses that holds for all of them, and the number
    /// of iterations after the current one.
    pub(super) fn precheck(&mut self, li: usize, slow: Block) -> (HashMap<usize, Value>, Value) {
        let lp = self.loops[li].clone();
        let last = self.last_iteration(&lp.count, slow);
        // The strides first (cheap), then the positions.
        let mut strides = Vec::new();
        for a in &lp.accesses {
            let g = self.groups[&a.head];
            let s = self.eval(&a.stride);
            // With the count below 2^32 and |s| < 2^31, no position is 2^63 or more from the
            // first: if the first and the last are in one allocation, so is every one between.
            let wrong = self.bad_step(s, g.align);
            self.fail_if(wrong, slow);
            strides.push(s);
            // Each widened 32-bit value moves by its sign-extended 32-bit stride only while
            // it does not wrap: its value in the last iteration must still be in range.
            for (w, ds) in &a.wraps {
                let x1 = self.eval_wide(w);
                let d = self.eval(ds);
                let d = ext(&mut self.b, d, IntTy::S32);
                let moved = self.b.ins().imul(last, d);
                let xl = self.b.ins().iadd(x1, moved);
                let (max, min) = if w.signed {
                    (i32::MAX as i64, i32::MIN as i64)
                } else {
                    (u32::MAX as i64, 0)
                };
                let high = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, xl, max);
                self.fail_if(high, slow);
                let low = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, xl, min);
                self.fail_if(low, slow);
            }
        }
        // Accesses that share a cache entry (`roots`) must all be inside the allocation the
        // first of them finds: then they share its host-minus-device difference too, and the
        // unchecked copy keeps one value per allocation in a register, not one per access.
        let mut by_entry: HashMap<u32, Value> = HashMap::new();
        let mut deltas = HashMap::new();
        for (a, s) in lp.accesses.iter().zip(strides) {
            let g = self.groups[&a.head];
            let pc = self.lo + a.head as u32;
            let first = self.eval(&a.first);
            let a0 = self.b.ins().iadd_imm_s(first, g.lo);
            let ci = self.cache_of[&a.head];
            let delta = match by_entry.get(&ci) {
                Some(&d) => {
                    let outside = self.outside_entry(pc, a0, g.align);
                    self.fail_if(outside, slow);
                    d
                }
                None => {
                    let host = self.check_at(pc, a0, g, Some(slow));
                    let d = self.b.ins().isub(host, a0);
                    by_entry.insert(ci, d);
                    d
                }
            };
            let span = self.b.ins().imul(last, s);
            let a_last = self.b.ins().iadd(a0, span);
            let outside = self.outside_entry(pc, a_last, g.align);
            self.fail_if(outside, slow);
            deltas.insert(a.head, delta);
        }
        (deltas, last)
    }

    /// The number of iterations after the current one (below 2^32: the counter has 32 bits; at
    /// least 2, else to `slow`: fewer gain nothing from the checks here).
    fn last_iteration(&mut self, c: &Count, slow: Block) -> Value {
        let first = self.eval(&c.first);
        let v1 = ext(&mut self.b, first, c.ty);
        let bound = self.eval(&c.bound);
        let b = ext(&mut self.b, bound, c.ty);
        // The step as a signed 32-bit value: a power of two known here, or a value checked now.
        let known = c
            .step
            .constant()
            .map(|k| crate::sem::int::sext(k, 32))
            .filter(|k| k.unsigned_abs().is_power_of_two());
        let last = match c.cont {
            // The first n with v_n = b: (n - 1) d = b - v_1 modulo 2^32 (`loops::count` admits
            // only power-of-two steps here).
            Cmp::Ne => {
                let k = known.unwrap_or(1);
                let d = k.abs();
                let diff = if k > 0 {
                    self.b.ins().isub(b, v1)
                } else {
                    self.b.ins().isub(v1, b)
                };
                let diff = self.b.ins().band_imm_s(diff, 0xFFFF_FFFF);
                if d > 1 {
                    let rem = self.b.ins().band_imm_s(diff, d - 1);
                    self.fail_if(rem, slow);
                }
                self.b.ins().ushr_imm_s(diff, d.trailing_zeros() as i64)
            }
            // Counting up while v < b (v <= b: v < b + 1): (n - 1) = ceil((b - v_1) / d), and
            // no value up to b + d - 1 may wrap. Counting down while v > b (v >= b: v > b - 1)
            // is the same with the signs turned.
            Cmp::Lt | Cmp::Le | Cmp::Gt | Cmp::Ge => {
                let up = matches!(c.cont, Cmp::Lt | Cmp::Le);
                let b = match c.cont {
                    Cmp::Le => self.b.ins().iadd_imm_s(b, 1),
                    Cmp::Ge => self.b.ins().iadd_imm_s(b, -1),
                    _ => b,
                };
                let gap = if up {
                    self.b.ins().isub(b, v1)
                } else {
                    self.b.ins().isub(v1, b)
                };
                let d = match known {
                    Some(k) => self.b.ins().iconst(I64, k.abs()),
                    None => {
                        let s = self.eval(&c.step);
                        let s = ext(&mut self.b, s, IntTy::S32);
                        if up {
                            s
                        } else {
                            self.b.ins().ineg(s)
                        }
                    }
                };
                // The cheapest test first: too few iterations (a loop that ends here, as a
                // grid-stride loop over as many threads as elements does, or a step in
                // registers for which the division and the checks cost more than they save).
                let few = match known {
                    Some(k) => self.b.ins().iconst(I64, 2 * k.abs()),
                    None => self.b.ins().imul_imm_s(d, FEW),
                };
                let short = self.b.ins().icmp(IntCC::SignedLessThanOrEqual, gap, few);
                self.fail_if(short, slow);
                if known.is_none() {
                    // d >= 1 (a step in registers may point the wrong way).
                    let wrong = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, d, 1);
                    self.fail_if(wrong, slow);
                }
                let (max, min) = if c.ty.signed {
                    (i32::MAX as i64, i32::MIN as i64)
                } else {
                    (u32::MAX as i64, 0)
                };
                let d1 = self.b.ins().iadd_imm_s(d, -1);
                let wraps = if up {
                    let top = self.b.ins().iadd(b, d1);
                    self.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, top, max)
                } else {
                    let bottom = self.b.ins().isub(b, d1);
                    self.b.ins().icmp_imm_s(IntCC::SignedLessThan, bottom, min)
                };
                self.fail_if(wraps, slow);
                // ceil(gap / d), gap > 0 now: gap + d - 1 < 2^34; a shift for a known power of
                // two, else a division.
                let up_gap = self.b.ins().iadd(gap, d1);
                match known {
                    Some(k) => {
                        let sh = k.unsigned_abs().trailing_zeros() as i64;
                        self.b.ins().ushr_imm_s(up_gap, sh)
                    }
                    None => self.b.ins().udiv(up_gap, d),
                }
            }
            // (`loops::count` admits no other condition.)
            _ => {
                let yes = self.b.ins().iconst(I64, 1);
                self.fail_if(yes, slow);
                self.b.ins().iconst(I64, 0)
            }
        };
        let two = self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, last, 2);
        self.fail_if(two, slow);
        last
    }

    /// The value of `f` with the registers as they are now.
    fn eval(&mut self, f: &Form) -> Value {
        let mut acc = self.b.ins().iconst(I64, f.c as i64);
        for (&s, &coef) in &f.terms {
            let v = self.get(s);
            acc = self.add_scaled(acc, v, coef);
        }
        for (w, coef) in &f.wides {
            let v = self.eval_wide(w);
            acc = self.add_scaled(acc, v, *coef);
        }
        acc
    }

    /// The low 32 bits of `w`'s inner form, extended.
    fn eval_wide(&mut self, w: &Wide) -> Value {
        let inner = self.eval(&w.inner);
        let ty = IntTy {
            bits: 32,
            signed: w.signed,
        };
        ext(&mut self.b, inner, ty)
    }

    /// `acc + coef · v`.
    fn add_scaled(&mut self, acc: Value, v: Value, coef: u64) -> Value {
        let t = if coef == 1 {
            v
        } else {
            self.b.ins().imul_imm_s(v, coef as i64)
        };
        self.b.ins().iadd(acc, t)
    }

    /// Go to `to` when `cond` is nonzero, else on in a new block.
    pub(super) fn fail_if(&mut self, cond: Value, to: Block) {
        let on = self.b.create_block();
        self.b.ins().brif(cond, to, &[], on, &[]);
        self.b.switch_to_block(on);
        self.b.seal_block(on);
    }

    /// Where loop `li` starts (`k`, its first instruction, whose block is current).
    ///
    /// A loop counted by a constant (an inner loop such as `matmulNaive`'s) is checked here,
    /// where a loop that ends soon costs a compare: it runs the checked body (emitted next, in
    /// a block of its own) or the unchecked copy (`loop_copies`). Any other (a grid-stride
    /// loop, which often runs once) runs its first iteration checked and is checked where that
    /// branches back, so that a loop that runs once pays nothing. (Measured, `matmulNaive` at
    /// 65,536 threads on one worker, best of 100: checking at the branch back made the launch
    /// 9 % slower, 12.6 ms against 11.5 ms; host instructions +2 %.)
    pub(super) fn start_versioned(&mut self, li: usize, k: usize) {
        if self.loops[li].count.step.constant().is_some() {
            let checked = self.b.create_block();
            let unchecked = self.b.create_block();
            let (deltas, last) = self.precheck(li, checked);
            if self.gangs[li] {
                self.park_gate(li, k, last, unchecked);
            } else {
                self.b.ins().jump(unchecked, &[]);
            }
            self.blocks[k] = checked;
            self.b.switch_to_block(checked);
            self.versioning = Some(Versioning::AtEntry {
                li,
                unchecked,
                deltas,
            });
        } else {
            let dispatch = self.b.create_block();
            self.versioning = Some(Versioning::Peeled {
                li,
                first: self.blocks[k],
                dispatch,
            });
            self.blocks[k] = dispatch;
        }
    }

    /// After the body of the loop being versioned: the copies still to emit, each looping on
    /// itself and leaving where the body leaves. Checked at entry: the unchecked copy. Peeled:
    /// the checks at the first iteration's branch back, then a checked and an unchecked copy.
    pub(super) fn loop_copies(&mut self, code: &[Inst]) {
        let (li, copies, first) = match self.versioning.take() {
            None => return,
            Some(Versioning::AtEntry {
                li,
                unchecked,
                deltas,
            }) => (li, vec![(unchecked, Some(deltas))], None),
            Some(Versioning::Peeled {
                li,
                first,
                dispatch,
            }) => {
                let checked = self.b.create_block();
                let unchecked = self.b.create_block();
                self.b.switch_to_block(dispatch);
                let (deltas, _) = self.precheck(li, checked);
                self.b.ins().jump(unchecked, &[]);
                let copies = vec![(checked, None), (unchecked, Some(deltas))];
                (li, copies, Some(first))
            }
        };
        let (h, back) = (self.loops[li].head, self.loops[li].back);
        let saved: Vec<Block> = self.blocks[h..=back].to_vec();
        let pending = std::mem::take(&mut self.pending);
        self.copying = true;
        for (entry, fast) in copies {
            self.blocks[h] = entry;
            for k in h + 1..=back {
                self.blocks[k] = self.b.create_block();
            }
            self.fast = fast;
            for (k, i) in code.iter().enumerate().take(back + 1).skip(h) {
                self.inst(self.lo + k as u32, i);
            }
        }
        self.fast = None;
        self.copying = false;
        self.pending = pending;
        self.blocks[h..=back].copy_from_slice(&saved);
        if let Some(f) = first {
            self.blocks[h] = f;
        }
    }
}

/// A loop whose copies are still to be emitted (see `Em::start_versioned`).
pub(super) enum Versioning {
    /// Checked where it starts: the unchecked copy's entry and differences.
    AtEntry {
        li: usize,
        unchecked: Block,
        deltas: HashMap<usize, Value>,
    },
    /// Its first iteration is the body; its first block, and the block its branch back goes
    /// to (the checks).
    Peeled {
        li: usize,
        first: Block,
        dispatch: Block,
    },
}

impl Versioning {
    /// The loop.
    pub(super) fn li(&self) -> usize {
        match *self {
            Versioning::AtEntry { li, .. } | Versioning::Peeled { li, .. } => li,
        }
    }
}
