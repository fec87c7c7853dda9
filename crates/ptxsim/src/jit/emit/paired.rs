//! Lane pairing: two lanes run a loop's unchecked copy (`versioned`) together, their
//! instructions interleaved, so that the host overlaps two independent dependency chains.
//! Compiled code runs lanes one after another; in a loop such as `matmulNaive`'s, each lane's
//! iterations wait on the latency of one chain of fused multiply-adds, and the host core idles
//! between them. Measured (`matmulNaive`, 1,024 threads, best of 300 launches): one worker
//! 153-158 µs before, 124 µs paired; two workers 88-89 µs, 71 µs. The pair's loads may move
//! (`ops::load_flags`): with them fixed in place, Cranelift put all sixteen loads of an
//! iteration first and ran out of registers, and pairing gained 5 %.
//!
//! How: a lane that reaches the loop (its checks before the loop passed) while another lane of
//! the call is still to run *parks*: it leaves its registers live at the loop's head, its
//! host-minus-device differences and its fuel in the context (`JitCtx::stash`) and the lane
//! loop goes on to the next lane. When that lane reaches the loop too, both run the paired
//! copy; when one of them leaves the loop (or fuel runs out), the parked lane's registers are
//! written back and it stops at the loop's exit (or head) for the interpreter to carry on
//! with, entering compiled code again there, and the other lane goes on in its own code.
//! A lane still parked when the call ends is written back at the loop's head.
//!
//! Only loops checked where they start with a constant step are paired, whose body is
//! straight-line code of operations that never leave compiled code once the checks before the
//! loop passed (integer and float arithmetic, comparisons, global loads and stores), ending in
//! the guarded branch back; one loop per region.

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{F32, F64, I32, I64};
use cranelift_codegen::ir::{Block, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::Variable;

use super::super::call::*;
use super::Em;
use crate::ir::{FTy, Inst, MemSpace, Op, Slot, NONE};

/// What `done` needs to write back a lane still parked when the call ends.
pub(super) struct Parking {
    head_pc: u32,
    stash: Vec<Slot>,
}

/// The variables of the second lane of a pair (swapped with `Em`'s while its instructions are
/// emitted).
struct Other {
    vars: HashMap<Slot, Variable>,
    f32s: HashMap<Slot, Variable>,
    f64s: HashMap<Slot, Variable>,
    fast: Option<HashMap<usize, Value>>,
}

/// Operations that, in a loop's unchecked copy, never leave compiled code.
fn stays(i: &Inst) -> bool {
    i.guard == NONE
        && match i.op {
            Op::Mov
            | Op::Add
            | Op::Sub
            | Op::MulLo
            | Op::MadLo
            | Op::And
            | Op::Or
            | Op::Xor
            | Op::Not
            | Op::Neg
            | Op::Selp
            | Op::FAdd32
            | Op::FSub32
            | Op::FMul32
            | Op::FFma32
            | Op::FAdd64
            | Op::FSub64
            | Op::FMul64
            | Op::FFma64
            | Op::Shl { .. }
            | Op::Shr { .. }
            | Op::Min(_)
            | Op::Max(_)
            | Op::MulWide(_)
            | Op::MadWide(_)
            | Op::SetpI { .. }
            | Op::SetpF { .. } => true,
            Op::Ld { space, .. } | Op::St { space, .. } => space == MemSpace::Global,
            _ => false,
        }
}

impl Em<'_, '_> {
    /// Whether loop `li` can be paired (see the module docs), with `deltas` the differences
    /// its checks found: the slots a parked lane stashes.
    fn pairable(
        &self,
        li: usize,
        code: &[Inst],
        deltas: &HashMap<usize, Value>,
    ) -> Option<Vec<Slot>> {
        if self.parking.is_some() || deltas.len() > STASH_DELTAS {
            return None;
        }
        let (h, back) = (self.loops[li].head, self.loops[li].back);
        let b = &code[back];
        if b.op != Op::Bra || b.guard == NONE || b.imm as u32 != self.lo + h as u32 {
            return None;
        }
        for (k, i) in code.iter().enumerate().take(back).skip(h) {
            if !stays(i) {
                return None;
            }
            if matches!(i.op, Op::Ld { .. } | Op::St { .. })
                && !deltas.contains_key(&self.group_of[k])
            {
                return None;
            }
        }
        let head_pc = self.lo + h as u32;
        let mut stash: Vec<Slot> = self
            .vars
            .keys()
            .chain(
                self.prim
                    .keys()
                    .filter(|s| self.f32s.contains_key(s) || self.f64s.contains_key(s)),
            )
            .copied()
            .filter(|&s| self.live.live(head_pc, s))
            .collect();
        stash.sort_unstable();
        stash.dedup();
        (stash.len() <= STASH_SLOTS).then_some(stash)
    }

    /// After loop `li`'s copies: the block `gate` (where the checks before the loop passed) goes
    /// to the single-lane unchecked copy `single`, or parks the lane, or runs the pair.
    pub(super) fn pair_copies(
        &mut self,
        li: usize,
        code: &[Inst],
        gate: Block,
        single: Block,
        deltas: HashMap<usize, Value>,
    ) -> bool {
        let fl = MemFlagsData::trusted();
        self.b.switch_to_block(gate);
        self.b.seal_block(gate);
        let Some(stash) = self.pairable(li, code, &deltas) else {
            self.b.ins().jump(single, &[]);
            return false;
        };
        let pending = std::mem::take(&mut self.pending);
        let (h, back) = (self.loops[li].head, self.loops[li].back);
        let head_pc = self.lo + h as u32;
        let exit_pc = self.lo + back as u32 + 1;
        let after = self.blocks[back + 1];
        let mut heads: Vec<usize> = deltas.keys().copied().collect();
        heads.sort_unstable();

        // gate: a parked lane to pair with, or another lane still to run (park), or neither.
        let parked = self.b.ins().load(I64, fl, self.ctx, CTX_PARKED);
        let pair_in = self.b.create_block();
        let try_park = self.b.create_block();
        let park = self.b.create_block();
        self.b.ins().brif(parked, pair_in, &[], try_park, &[]);
        self.b.switch_to_block(try_park);
        self.b.seal_block(try_park);
        let m = self.b.ins().load(I32, fl, self.ctx, CTX_LEFT);
        let m1 = self.b.ins().iadd_imm_s(m, -1);
        let rest = self.b.ins().band(m, m1);
        self.b.ins().brif(rest, park, &[], single, &[]);

        // park: stash this lane and go on to the next one, leaving its PC unset.
        self.b.switch_to_block(park);
        self.b.seal_block(park);
        for (j, &s) in stash.iter().enumerate() {
            let v = self.raw(s);
            self.b
                .ins()
                .store(fl, v, self.ctx, CTX_STASH + 8 * j as i32);
        }
        for (j, h) in heads.iter().enumerate() {
            self.b
                .ins()
                .store(fl, deltas[h], self.ctx, CTX_STASH_DELTAS + 8 * j as i32);
        }
        let f = self.b.use_var(self.fuel);
        self.b.ins().store(fl, f, self.ctx, CTX_PARK_FUEL);
        let l = self.b.ins().ctz(m);
        let l = self.b.ins().uextend(I64, l);
        let l1 = self.b.ins().iadd_imm_s(l, 1);
        self.b.ins().store(fl, l1, self.ctx, CTX_PARKED);
        self.b.ins().store(fl, rest, self.ctx, CTX_LEFT);
        self.b.ins().jump(self.lane_head, &[]);

        // pair_in: the parked lane's registers into its own variables.
        self.b.switch_to_block(pair_in);
        self.b.seal_block(pair_in);
        let other_lane = self.b.ins().iadd_imm_s(parked, -1);
        let mut other = Other {
            vars: self
                .vars
                .keys()
                .map(|&s| (s, self.b.declare_var(I64)))
                .collect(),
            f32s: self
                .f32s
                .keys()
                .map(|&s| (s, self.b.declare_var(F32)))
                .collect(),
            f64s: self
                .f64s
                .keys()
                .map(|&s| (s, self.b.declare_var(F64)))
                .collect(),
            fast: None,
        };
        // Both lanes must have found the same allocations (as lanes running the same loop over
        // the same arrays do): the pair then shares one set of differences, which leaves more
        // host registers for the lanes' own values. Else this lane runs alone and the parked
        // one stays parked.
        let mut differ = None;
        for (j, h) in heads.iter().enumerate() {
            let d = self
                .b
                .ins()
                .load(I64, fl, self.ctx, CTX_STASH_DELTAS + 8 * j as i32);
            let ne = self.b.ins().icmp(IntCC::NotEqual, d, deltas[h]);
            differ = Some(match differ {
                Some(acc) => self.b.ins().bor(acc, ne),
                None => ne,
            });
        }
        let pair_go = self.b.create_block();
        match differ {
            Some(ne) => {
                self.b.ins().brif(ne, single, &[], pair_go, &[]);
            }
            None => {
                self.b.ins().jump(pair_go, &[]);
            }
        }
        self.b.switch_to_block(pair_go);
        self.b.seal_block(pair_go);
        let zero = self.b.ins().iconst(I64, 0);
        self.b.ins().store(fl, zero, self.ctx, CTX_PARKED);
        other.fast = Some(deltas.clone());
        self.swap(&mut other);
        for (j, &s) in stash.iter().enumerate() {
            let at = CTX_STASH + 8 * j as i32;
            match self.prim.get(&s) {
                Some(FTy::F32) => {
                    let f = self.b.ins().load(F32, fl, self.ctx, at);
                    self.b.def_var(self.f32s[&s], f);
                }
                Some(_) => {
                    let g = self.b.ins().load(F64, fl, self.ctx, at);
                    self.b.def_var(self.f64s[&s], g);
                }
                None => {
                    let v = self.b.ins().load(I64, fl, self.ctx, at);
                    self.set(s, v);
                }
            }
        }
        self.swap(&mut other);
        // One fuel count for the pair: the lower of the two lanes' (fewer values live in the
        // loop); each lane's own is worked out where the pair splits.
        let fuel0 = self.b.use_var(self.fuel);
        let other_fuel0 = self.b.ins().load(I64, fl, self.ctx, CTX_PARK_FUEL);
        let limit = self.b.ins().smin(fuel0, other_fuel0);
        let pair_fuel = self.b.declare_var(I64);
        self.b.def_var(pair_fuel, limit);
        let pair_head = self.b.create_block();
        self.b.ins().jump(pair_head, &[]);

        // The paired body: each instruction for this lane, then for the other.
        self.b.switch_to_block(pair_head);
        self.fast = Some(deltas);
        self.movable_loads = !code[h..back].iter().any(|i| matches!(i.op, Op::St { .. }));
        for (k, i) in code.iter().enumerate().take(back).skip(h) {
            let pc = self.lo + k as u32;
            self.op(pc, i);
            self.swap(&mut other);
            self.op(pc, i);
            self.swap(&mut other);
        }
        let bi = &code[back];
        let on = self.cont(bi);
        self.swap(&mut other);
        let other_on = self.cont(bi);
        self.swap(&mut other);
        self.fast = None;
        self.movable_loads = false;
        let pf = self.b.use_var(pair_fuel);
        let pf = self.b.ins().iadd_imm_s(pf, -((back - h + 1) as i64));
        self.b.def_var(pair_fuel, pf);
        let out = self.b.ins().icmp_imm_s(IntCC::SignedLessThanOrEqual, pf, 0);
        let both = self.b.ins().band(on, other_on);
        let go = self.b.ins().band_not(both, out);
        let split = self.b.create_block();
        self.b.ins().brif(go, pair_head, &[], split, &[]);
        self.b.seal_block(pair_head);

        // split: the other lane stops at the loop's head (it goes on) or exit; this one goes on
        // in its own copy, after the loop, or stops at the head when fuel ran out.
        self.b.switch_to_block(split);
        self.b.seal_block(split);
        let spent = self.b.ins().isub(limit, pf);
        let f = self.b.ins().isub(fuel0, spent);
        self.b.def_var(self.fuel, f);
        let other_f = self.b.ins().isub(other_fuel0, spent);
        let out_b = self.b.ins().icmp_imm_s(IntCC::SignedLessThanOrEqual, f, 0);
        let o_on = self.b.create_block();
        let o_off = self.b.create_block();
        let mine = self.b.create_block();
        self.b.ins().brif(other_on, o_on, &[], o_off, &[]);
        for (blk, pc) in [(o_on, head_pc), (o_off, exit_pc)] {
            self.b.switch_to_block(blk);
            self.b.seal_block(blk);
            self.swap(&mut other);
            let vals: Vec<(Slot, Value)> = self
                .written
                .clone()
                .into_iter()
                .filter(|&s| self.live.live(pc, s))
                .map(|s| (s, self.get(s)))
                .collect();
            self.swap(&mut other);
            self.stop_other(other_lane, &vals, pc, other_f);
            self.b.ins().jump(mine, &[]);
        }
        self.b.switch_to_block(mine);
        self.b.seal_block(mine);
        let again = self.b.create_block();
        self.b.ins().brif(on, again, &[], after, &[]);
        self.b.switch_to_block(again);
        self.b.seal_block(again);
        let leave = self.b.create_block();
        self.b.ins().brif(out_b, leave, &[], single, &[]);
        self.b.switch_to_block(leave);
        self.b.seal_block(leave);
        self.exit_at(head_pc, 0);

        self.pending = pending;
        self.parking = Some(Parking { head_pc, stash });
        true
    }

    /// Whether the guarded branch back `bi` is taken for the running lane.
    fn cont(&mut self, bi: &Inst) -> Value {
        let g = self.get(bi.guard);
        let g = self.b.ins().band_imm_s(g, 1);
        let cc = if bi.guard_neg {
            IntCC::Equal
        } else {
            IntCC::NotEqual
        };
        self.b.ins().icmp_imm_s(cc, g, 0)
    }

    /// Slot `s`'s value as its variable holds it (floats' bits as they are).
    fn raw(&mut self, s: Slot) -> Value {
        match self.prim.get(&s) {
            Some(FTy::F32) => self.get_f32_raw(s),
            Some(_) => self.get_f64_raw(s),
            None => self.get(s),
        }
    }

    fn swap(&mut self, o: &mut Other) {
        std::mem::swap(&mut self.vars, &mut o.vars);
        std::mem::swap(&mut self.f32s, &mut o.f32s);
        std::mem::swap(&mut self.f64s, &mut o.f64s);
        std::mem::swap(&mut self.fast, &mut o.fast);
    }

    /// Stop lane `lane` (not the running one) at `pc` with registers `vals` and `fuel` left:
    /// its registers, its PC, and the most fuel a lane used.
    fn stop_other(&mut self, lane: Value, vals: &[(Slot, Value)], pc: u32, fuel: Value) {
        let fl = MemFlagsData::trusted();
        let r0 = self.b.ins().load(I64, fl, self.ctx, CTX_REGS0);
        let byte = self.b.ins().ishl_imm_s(lane, 3);
        let regs = self.b.ins().iadd(r0, byte);
        for &(s, x) in vals {
            self.b.ins().store(fl, x, regs, (s as i32) * 256);
        }
        let p = self.b.ins().iconst(I32, pc as i64);
        let at = self.b.ins().ishl_imm_s(lane, 2);
        let at = self.b.ins().iadd(self.ctx, at);
        self.b.ins().store(fl, p, at, CTX_PCS);
        let f0 = self.b.ins().load(I64, fl, self.ctx, CTX_FUEL);
        let used = self.b.ins().isub(f0, fuel);
        let before = self.b.ins().load(I64, fl, self.ctx, CTX_MOST);
        let now = self.b.ins().smax(before, used);
        self.b.ins().store(fl, now, self.ctx, CTX_MOST);
    }

    /// Where the call ends: a lane still parked is stopped at its loop's head, with the
    /// registers it stashed (as the register file holds them).
    pub(super) fn unpark_at_end(&mut self) {
        let Some(p) = self.parking.take() else {
            return;
        };
        let fl = MemFlagsData::trusted();
        let parked = self.b.ins().load(I64, fl, self.ctx, CTX_PARKED);
        let unpark = self.b.create_block();
        let end = self.b.create_block();
        self.b.ins().brif(parked, unpark, &[], end, &[]);
        self.b.switch_to_block(unpark);
        self.b.seal_block(unpark);
        let lane = self.b.ins().iadd_imm_s(parked, -1);
        let zero = self.b.ins().iconst(I64, 0);
        self.b.ins().store(fl, zero, self.ctx, CTX_PARKED);
        let mut vals = Vec::new();
        for (j, &s) in p.stash.iter().enumerate() {
            if self.written.binary_search(&s).is_err() {
                continue;
            }
            let at = CTX_STASH + 8 * j as i32;
            let none = MemFlagsData::new();
            let x = match self.prim.get(&s) {
                Some(FTy::F32) => {
                    let f = self.b.ins().load(F32, fl, self.ctx, at);
                    let f = self.exact(s, f, FTy::F32);
                    let y = self.b.ins().bitcast(I32, none, f);
                    self.b.ins().uextend(I64, y)
                }
                Some(_) => {
                    let g = self.b.ins().load(F64, fl, self.ctx, at);
                    let g = self.exact(s, g, FTy::F64);
                    self.b.ins().bitcast(I64, none, g)
                }
                None => self.b.ins().load(I64, fl, self.ctx, at),
            };
            vals.push((s, x));
        }
        let fuel = self.b.ins().load(I64, fl, self.ctx, CTX_PARK_FUEL);
        self.stop_other(lane, &vals, p.head_pc, fuel);
        self.b.ins().jump(end, &[]);
        self.b.switch_to_block(end);
        self.b.seal_block(end);
    }
}
