//! Gangs: a loop's unchecked copy run by `GANG` lanes at once, their instructions interleaved.
//!
//! A lane runs a region alone, so a loop whose iterations form one chain of dependent
//! operations (`matmulNaive`'s dot product: one `fma` after another) runs at the latency of
//! that chain, and the host's out-of-order core cannot overlap the next lane's loop, which
//! starts only when this one ends. A *gang function* runs one loop (`loops`, checked where it
//! starts) for `GANG` lanes together: each instruction of the body is emitted once per lane,
//! so the lanes' chains are independent and interleaved, and the host runs them side by side.
//!
//! The region function does not change inside the loop (an earlier try that paired lanes
//! inside it made Cranelift keep the loop's values on the stack): where such a loop starts
//! and its checks pass with enough of the loop left (`GANG_WORK`), a lane *parks* (when the
//! context allows it: `JitCtx::gang`), leaving the region with its registers written back
//! and its PC at the loop's start, marked in `JitCtx::parked`. The caller (`exec::jit_run`)
//! then runs the parked lanes through the gang function in fours and the rest, and every
//! lane after the gang, through the region function again without parking.
//!
//! A gang function loads each lane's registers live at the loop's start, checks each lane's
//! accesses as the region function does before the loop (`precheck`), and turns the whole gang
//! down, having written nothing, if any check fails or a lazy float register holds an odd NaN
//! (`JitCtx::parked` then holds the lanes). It runs iterations while every lane branches back
//! and fuel is left, and leaves each lane where its own branch goes: the loop's start or the
//! instruction after the loop (a leader of the region, `leaders`).

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{F32, F64, I32, I64};
use cranelift_codegen::ir::{Block, Function, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::{FunctionBuilderContext, Variable};

use super::super::call::*;
use super::{access, setup, Em};
use crate::ir::defuse::dests;
use crate::ir::live::Live;
use crate::ir::{Inst, Program, Slot, NONE};

/// Lanes a gang function runs together. Measured (`matmulNaive`, 16,384 threads, one worker,
/// best of 30): no gangs 2.78-2.85 ms, gangs of 2 2.39-2.41 ms, of 4 1.87 ms, of 8 1.84-1.85 ms
/// (more lanes than 4 only spill more).
pub const GANG: usize = 4;

/// Instructions that must be left in a loop after its first iteration (iterations left times
/// the body's length) for a lane to park where it starts: parking writes the lane's registers
/// back, the gang function loads them and checks the accesses again, and a shorter loop is
/// overlapped with the next lane's by the host's out-of-order core anyway. Measured (a loop of
/// a load and a fused multiply-add, 6 instructions, 4,096 threads, one worker, best of 200,
/// with gangs against without): 18 iterations 1.17x slower, 20 1.08x slower, 30 even, 45
/// 1.1x faster, 60 1.27x, 80 1.35x, 100 1.5x.
const GANG_WORK: i64 = 256;

/// One lane of a gang: its index, its registers and its variables (swapped into the `Em`
/// while its instructions are emitted), and the differences its checks found.
struct Lane {
    index: Value,
    regs: Value,
    vars: HashMap<Slot, Variable>,
    f32s: HashMap<Slot, Variable>,
    f64s: HashMap<Slot, Variable>,
    deltas: HashMap<usize, Value>,
}

impl Em<'_, '_> {
    /// Whether gangs run loop `li` of the region `code`: a loop checked where it starts (a
    /// constant step), all of whose global accesses that check covers, so that its unchecked
    /// copy never leaves the region.
    pub(super) fn gang_ok(&self, code: &[Inst], li: usize) -> bool {
        let lp = &self.loops[li];
        lp.count.step.constant().is_some()
            && (lp.head..lp.back).all(|k| {
                access(&code[k]).is_none() || lp.accesses.iter().any(|a| a.head == self.group_of[k])
            })
    }

    /// Where loop `li` starts at `k`, its checks passed with `last` iterations left after the
    /// first: park the lane when the context allows it and enough work is left (`GANG_WORK`),
    /// else go on to `unchecked`.
    pub(super) fn park_gate(&mut self, li: usize, k: usize, last: Value, unchecked: Block) {
        let fl = MemFlagsData::trusted();
        let body = (self.loops[li].back - self.loops[li].head + 1) as i64;
        let allowed = self.b.ins().load(I32, fl, self.ctx, CTX_GANG);
        let allowed = self.b.ins().icmp_imm_s(IntCC::NotEqual, allowed, 0);
        let enough = self.b.ins().icmp_imm_s(
            IntCC::SignedGreaterThanOrEqual,
            last,
            (GANG_WORK + body - 1) / body,
        );
        let park = self.b.ins().band(allowed, enough);
        let out = self.b.create_block();
        self.b.set_cold_block(out);
        self.b.ins().brif(park, out, &[], unchecked, &[]);
        self.b.switch_to_block(out);
        self.b.seal_block(out);
        let pending = self.pending;
        self.exit_at(self.lo + k as u32, 2);
        self.pending = pending;
    }

    /// Swap lane `l`'s variables and registers in (and, called again, out).
    fn swap_lane(&mut self, l: &mut Lane) {
        std::mem::swap(&mut self.vars, &mut l.vars);
        std::mem::swap(&mut self.f32s, &mut l.f32s);
        std::mem::swap(&mut self.f64s, &mut l.f64s);
        self.lane_regs_at = match self.lane_regs_at {
            Some(_) => None,
            None => Some(l.regs),
        };
    }
}

/// Emit the gang function of loop `li` of the region `[lo, hi)` into `func` (signature as a
/// region's: registers of lane 0, context, entry PC, lanes; the lanes are `GANG` lanes parked
/// at the loop's start). Returns false when the function would need a way out of the region
/// that it does not have (then it must not be used).
#[allow(clippy::too_many_arguments)]
pub(in crate::jit) fn gang(
    func: &mut Function,
    fctx: &mut FunctionBuilderContext,
    prog: &Program,
    lo: u32,
    hi: u32,
    li: usize,
    varying: &[bool],
    translate: cranelift_codegen::ir::FuncRef,
    next_cache: &mut u32,
    live: &Live,
    frontend: cranelift_codegen::isa::TargetFrontendConfig,
) -> bool {
    let code = &prog.code[lo as usize..hi as usize];
    let (mut em, used) = setup(func, fctx, prog, lo, hi, translate, next_cache, live);
    let (h, back) = (em.loops[li].head, em.loops[li].back);
    let (head_pc, after) = (lo + h as u32, lo + back as u32 + 1);
    // Cache entries come from memory (no variables to keep in step across the lanes), and the
    // exits store what the loop writes.
    em.held.clear();
    let mut written: Vec<Slot> = code[h..=back].iter().flat_map(dests).collect();
    written.sort_unstable();
    written.dedup();
    em.written = written;
    em.movable_loads = code[h..back]
        .iter()
        .all(|i| !matches!(i.op, crate::ir::Op::St { .. }));
    let fl = MemFlagsData::trusted();
    let entry =
        em.b.current_block()
            .expect("setup leaves the entry block current");
    let params = em.b.block_params(entry).to_vec();
    let (regs0, ctx, mask) = (params[0], params[1], params[3]);

    let uniform = |s: Slot| !varying.get(s as usize).copied().unwrap_or(true);
    let mut lanes = Vec::with_capacity(GANG);
    let mut m = mask;
    for j in 0..GANG {
        let l = em.b.ins().ctz(m);
        let m1 = em.b.ins().iadd_imm_s(m, -1);
        m = em.b.ins().band(m, m1);
        let index = em.b.ins().uextend(I64, l);
        let byte = em.b.ins().ishl_imm_s(index, 3);
        let regs = em.b.ins().iadd(regs0, byte);
        // Lanes after the first share the first's variables of uniform slots.
        let (vars, f32s, f64s) = if j == 0 {
            (em.vars.clone(), em.f32s.clone(), em.f64s.clone())
        } else {
            let b = &mut em.b;
            let mut fresh = |m: &HashMap<Slot, Variable>, ty| {
                m.iter()
                    .map(|(&s, &v)| (s, if uniform(s) { v } else { b.declare_var(ty) }))
                    .collect::<HashMap<_, _>>()
            };
            (
                fresh(&em.vars, I64),
                fresh(&em.f32s, F32),
                fresh(&em.f64s, F64),
            )
        };
        lanes.push(Lane {
            index,
            regs,
            vars,
            f32s,
            f64s,
            deltas: HashMap::new(),
        });
    }
    // Turned down: nothing written, every lane as it was.
    let reject = em.b.create_block();
    em.b.set_cold_block(reject);
    // The first lane loads every slot live at the loop's start, the others their varying ones;
    // the gang is turned down unless every lane holds the same bits in the uniform ones.
    let own: Vec<Slot> = used.iter().copied().filter(|&s| !uniform(s)).collect();
    for (j, lane) in lanes.iter_mut().enumerate() {
        em.swap_lane(lane);
        let odd = em.load_live(if j == 0 { &used } else { &own }, head_pc, lane.regs);
        if let Some(odd) = odd {
            em.fail_if(odd, reject);
        }
        em.swap_lane(lane);
    }
    for &s in used
        .iter()
        .filter(|&&s| uniform(s) && live.live(head_pc, s))
    {
        let at = (s as i32) * 256;
        let first = em.b.ins().load(I64, fl, lanes[0].regs, at);
        for lane in &lanes[1..] {
            let x = em.b.ins().load(I64, fl, lane.regs, at);
            let differ = em.b.ins().icmp(IntCC::NotEqual, x, first);
            em.fail_if(differ, reject);
        }
    }
    let f0 = em.b.ins().load(I64, fl, ctx, CTX_FUEL);
    em.b.def_var(em.fuel, f0);
    // Each lane's accesses are checked; all must be in the allocations the first lane's are
    // in (the same host-minus-device differences), which the gang then uses.
    for lane in lanes.iter_mut() {
        em.swap_lane(lane);
        lane.deltas = em.precheck(li, reject).0;
        em.swap_lane(lane);
    }
    let deltas = std::mem::take(&mut lanes[0].deltas);
    for lane in &lanes[1..] {
        for (h, &d) in &lane.deltas {
            let differ = em.b.ins().icmp(IntCC::NotEqual, d, deltas[h]);
            em.fail_if(differ, reject);
        }
    }

    // The body, each instruction once per lane; then the branch back.
    let body = em.b.create_block();
    em.b.ins().jump(body, &[]);
    em.b.switch_to_block(body);
    em.fast = Some(deltas);
    for (k, i) in code.iter().enumerate().take(back).skip(h) {
        let pc = lo + k as u32;
        // An instruction that writes uniform slots only is emitted once (its operands are
        // uniform too: `varying`); stores once per lane.
        let once =
            !matches!(i.op, crate::ir::Op::St { .. }) && dests(i).iter().all(|&d| uniform(d));
        for lane in lanes.iter_mut().take(if once { 1 } else { GANG }) {
            em.swap_lane(lane);
            if i.guard != NONE {
                let (run, next) = (em.b.create_block(), em.b.create_block());
                em.guard(i, run, next);
                em.op(pc, i);
                em.b.ins().jump(next, &[]);
                em.b.switch_to_block(next);
                em.b.seal_block(next);
            } else {
                em.op(pc, i);
            }
            em.swap_lane(lane);
        }
    }
    em.fast = None;
    let bi = &code[back];
    let mut taken = Vec::with_capacity(GANG);
    for lane in lanes.iter_mut() {
        if uniform(bi.guard) && !taken.is_empty() {
            taken.push(taken[0]);
            continue;
        }
        em.swap_lane(lane);
        let g = em.get(bi.guard);
        let g = em.b.ins().band_imm_s(g, 1);
        taken.push(if bi.guard_neg {
            em.b.ins().bxor_imm_s(g, 1)
        } else {
            g
        });
        em.swap_lane(lane);
    }
    let f = em.b.use_var(em.fuel);
    let f = em.b.ins().iadd_imm_s(f, -((back - h + 1) as i64));
    em.b.def_var(em.fuel, f);
    let mut all = em.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, f, 0);
    let mut distinct = taken.clone();
    distinct.dedup();
    for &t in &distinct {
        let t = em.b.ins().ireduce(cranelift_codegen::ir::types::I8, t);
        all = em.b.ins().band(all, t);
    }
    let out = em.b.create_block();
    em.b.ins().brif(all, body, &[], out, &[]);
    em.b.seal_block(body);

    // Each lane leaves where its branch goes, with what the loop wrote that is live there.
    em.b.switch_to_block(out);
    em.b.seal_block(out);
    for (lane, &t) in lanes.iter_mut().zip(&taken) {
        em.swap_lane(lane);
        let (at_head, at_after, join) = (
            em.b.create_block(),
            em.b.create_block(),
            em.b.create_block(),
        );
        em.b.ins().brif(t, at_head, &[], at_after, &[]);
        for (blk, pc) in [(at_head, head_pc), (at_after, after)] {
            em.b.switch_to_block(blk);
            em.b.seal_block(blk);
            em.store_live(pc);
            let p = em.b.ins().iconst(I32, pc as i64);
            let at = em.b.ins().ishl_imm_s(lane.index, 2);
            let at = em.b.ins().iadd(ctx, at);
            em.b.ins().store(fl, p, at, CTX_PCS);
            em.b.ins().jump(join, &[]);
        }
        em.b.switch_to_block(join);
        em.b.seal_block(join);
        em.swap_lane(lane);
    }
    let f = em.b.use_var(em.fuel);
    let spent = em.b.ins().isub(f0, f);
    em.b.ins().store(fl, spent, ctx, CTX_MOST);
    em.b.ins().return_(&[]);

    em.b.switch_to_block(reject);
    em.b.seal_block(reject);
    let zero = em.b.ins().iconst(I64, 0);
    em.b.ins().store(fl, zero, ctx, CTX_MOST);
    em.b.ins().store(fl, mask, ctx, CTX_PARKED);
    em.b.ins().return_(&[]);

    // No exit of the region may have been used (`gang_ok` rules them out).
    let layout = &em.b.func.layout;
    let closed = [em.exit, em.interp_exit, em.park_exit]
        .iter()
        .all(|&x| !layout.is_block_inserted(x));
    em.b.seal_all_blocks();
    em.b.finalize(frontend);
    closed
}

/// Per slot of `prog`: whether it may hold different values in the lanes of a gang, as far as
/// a flow-insensitive look at the whole kernel tells: the thread's x index, lane id and lane
/// masks do, and so does every slot written by a load or by an instruction that is not
/// compiled (atomics, shuffles, calls: every slot such an instruction names), or computed from
/// one that does. A gang function checks where it is entered that the lanes agree on the
/// other slots it reads there (`gang`), so a wrong guess here costs speed, never results:
/// slots written from `%tid.y` (equal in four neighbouring lanes whenever the block's x size
/// is a multiple of four) count as uniform.
pub(in crate::jit) fn varying(prog: &Program) -> Vec<bool> {
    use crate::ir::{Op, SReg};
    let mut v = vec![false; prog.nslots as usize];
    for &(s, r) in &prog.sregs {
        if matches!(
            r,
            SReg::Tid(0)
                | SReg::LaneId
                | SReg::LaneMaskEq
                | SReg::LaneMaskLt
                | SReg::LaneMaskLe
                | SReg::LaneMaskGt
                | SReg::LaneMaskGe
        ) {
            if let Some(x) = v.get_mut(s as usize) {
                *x = true;
            }
        }
    }
    loop {
        let mut changed = false;
        for i in &prog.code {
            let compiled = crate::ir::defuse::lane_local(i, prog);
            let (ds, var) = if compiled {
                let var = matches!(i.op, Op::Ld { .. })
                    || crate::ir::defuse::sources(i)
                        .iter()
                        .any(|&s| v.get(s as usize).copied().unwrap_or(true));
                (dests(i), var)
            } else {
                (i.r.iter().copied().filter(|&s| s != NONE).collect(), true)
            };
            if var {
                for d in ds {
                    if let Some(x) = v.get_mut(d as usize) {
                        changed |= !*x;
                        *x = true;
                    }
                }
            }
        }
        if !changed {
            return v;
        }
    }
}
