//! Loop versioning (`jit::loops`): where a simple loop starts, one check per access of the
//! positions its first and last iteration touch; when every check passes, the lane runs a copy
//! of the body without checks, else the checked body.

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::I64;
use cranelift_codegen::ir::{Block, InstBuilder, Value};

use super::super::loops::{Count, Form};
use super::ops::ext;
use super::Em;
use crate::ir::{Cmp, Inst};

impl Em<'_, '_> {
    /// At the start of loop `li` (the current block): the checks of all its accesses over all
    /// its iterations, going to `slow` when one fails. Returns, per access group head, the
    /// difference between host and device addresses that holds for all iterations.
    pub(super) fn precheck(&mut self, li: usize, slow: Block) -> HashMap<usize, Value> {
        let lp = self.loops[li].clone();
        let last = self.last_iteration(&lp.count, slow);
        // The strides first (cheap), then the positions.
        let mut strides = Vec::new();
        for a in &lp.accesses {
            let g = self.groups[&a.head];
            let s = self.eval(&a.stride);
            // A multiple of the alignment and |s| < 2^31 (with the count below 2^31, no
            // position is more than 2^62 from the first): adding 2^31 keeps the low bits and
            // puts a small stride's high half at zero, so one test checks both.
            let shifted = self.b.ins().iadd_imm_s(s, 1 << 31);
            let mask = !0xFFFF_FFFFi64 | (g.align as i64 - 1);
            let wrong = self.b.ins().band_imm_s(shifted, mask);
            self.fail_if(wrong, slow);
            strides.push(s);
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
        deltas
    }

    /// The number of iterations after the first (below 2^31, else to `slow`).
    fn last_iteration(&mut self, c: &Count, slow: Block) -> Value {
        let first = self.eval(&c.first);
        let v1 = ext(&mut self.b, first, c.ty);
        let bound = self.eval(&c.bound);
        let b = ext(&mut self.b, bound, c.ty);
        let d = c.step.unsigned_abs() as i64;
        let sh = d.trailing_zeros() as i64;
        let (max, min) = if c.ty.signed {
            (i32::MAX as i64, i32::MIN as i64)
        } else {
            (u32::MAX as i64, 0)
        };
        let last = match c.cont {
            // The first n with v_n = b: (n - 1) d = b - v_1 modulo 2^32.
            Cmp::Ne => {
                let diff = if c.step > 0 {
                    self.b.ins().isub(b, v1)
                } else {
                    self.b.ins().isub(v1, b)
                };
                let diff = self.b.ins().band_imm_s(diff, 0xFFFF_FFFF);
                if d > 1 {
                    let rem = self.b.ins().band_imm_s(diff, d - 1);
                    self.fail_if(rem, slow);
                }
                self.b.ins().ushr_imm_s(diff, sh)
            }
            // Counting up while v < b (v <= b: v < b + 1): (n - 1) = ceil((b - v_1) / d), and
            // no value up to b + d - 1 may wrap.
            Cmp::Lt | Cmp::Le => {
                let b = if c.cont == Cmp::Le {
                    self.b.ins().iadd_imm_s(b, 1)
                } else {
                    b
                };
                let top = self.b.ins().iadd_imm_s(b, d - 1);
                let wraps = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, top, max);
                self.fail_if(wraps, slow);
                let gap = self.b.ins().isub(b, v1);
                self.ceil_div_at_least_0(gap, d, sh)
            }
            // Counting down while v > b (v >= b: v > b - 1).
            Cmp::Gt | Cmp::Ge => {
                let b = if c.cont == Cmp::Ge {
                    self.b.ins().iadd_imm_s(b, -1)
                } else {
                    b
                };
                let bottom = self.b.ins().iadd_imm_s(b, -(d - 1));
                let wraps = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, bottom, min);
                self.fail_if(wraps, slow);
                let gap = self.b.ins().isub(v1, b);
                self.ceil_div_at_least_0(gap, d, sh)
            }
            // (`loops::count` admits no other condition.)
            _ => {
                let yes = self.b.ins().iconst(I64, 1);
                self.fail_if(yes, slow);
                self.b.ins().iconst(I64, 0)
            }
        };
        let many = self
            .b
            .ins()
            .icmp_imm_s(IntCC::UnsignedGreaterThan, last, (1 << 31) - 1);
        self.fail_if(many, slow);
        last
    }

    /// max(0, ceil(x / d)) for d = 2^sh.
    fn ceil_div_at_least_0(&mut self, x: Value, d: i64, sh: i64) -> Value {
        let up = self.b.ins().iadd_imm_s(x, d - 1);
        let q = self.b.ins().sshr_imm_s(up, sh);
        let zero = self.b.ins().iconst(I64, 0);
        self.b.ins().smax(q, zero)
    }

    /// The value of `f` with the registers as they are now.
    fn eval(&mut self, f: &Form) -> Value {
        let mut acc = self.b.ins().iconst(I64, f.c as i64);
        for (&s, &coef) in &f.terms {
            let v = self.get(s);
            let t = if coef == 1 {
                v
            } else {
                self.b.ins().imul_imm_s(v, coef as i64)
            };
            acc = self.b.ins().iadd(acc, t);
        }
        acc
    }

    /// Go to `to` when `cond` is nonzero, else on in a new block.
    fn fail_if(&mut self, cond: Value, to: Block) {
        let on = self.b.create_block();
        self.b.ins().brif(cond, to, &[], on, &[]);
        self.b.switch_to_block(on);
        self.b.seal_block(on);
    }

    /// Where loop `li` starts (`k`, its first instruction, whose block is current): the checks,
    /// then the jump to the unchecked copy (emitted by `unchecked_copy` after the checked
    /// body); the checked body goes on in a new block, which the loop's own branch targets.
    pub(super) fn start_versioned(&mut self, li: usize, k: usize) {
        let slow = self.b.create_block();
        let fast = self.b.create_block();
        let deltas = self.precheck(li, slow);
        self.b.ins().jump(fast, &[]);
        self.blocks[k] = slow;
        self.b.switch_to_block(slow);
        self.unchecked = Some((li, fast, deltas));
    }

    /// After the checked body of the loop whose copy is pending: the copy without checks,
    /// entered from the checks, looping on itself and leaving where the body leaves.
    pub(super) fn unchecked_copy(&mut self, code: &[Inst]) {
        let Some((li, fast, deltas)) = self.unchecked.take() else {
            return;
        };
        let (h, back) = (self.loops[li].head, self.loops[li].back);
        let saved: Vec<Block> = self.blocks[h..=back].to_vec();
        self.blocks[h] = fast;
        for k in h + 1..=back {
            self.blocks[k] = self.b.create_block();
        }
        self.fast = Some(deltas);
        let pending = std::mem::take(&mut self.pending);
        for (k, i) in code.iter().enumerate().take(back + 1).skip(h) {
            self.inst(self.lo + k as u32, i);
        }
        self.pending = pending;
        self.fast = None;
        self.blocks[h..=back].copy_from_slice(&saved);
    }
}
