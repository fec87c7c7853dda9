//! Cranelift IR for one region, one lane at a time.
//!
//! Each PTX instruction is one block (guards branch around the body). Every register slot the
//! region uses is a Cranelift variable, so its values stay in SSA form (host registers) through
//! the whole region, loops included: entry at a leader (through a jump table) loads the slots
//! live there, and each way out of the region stores the slots the region writes that are live
//! where the lane goes (`live`). Constant slots become immediates. Everything leaves through one
//! exit block that stores the lane's PC and the fuel it used. Each operation computes exactly the
//! 64-bit value that the interpreter's lane loop computes (`exec::run`), so that the rest of the
//! program cannot tell which of the two ran; the operations themselves are in `ops`.

mod gang;
mod ops;
mod shared;
mod versioned;

pub(super) use crate::ir::defuse::shared_access;
pub use gang::GANG;
pub(super) use gang::{gang, varying};

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F32, F64, I32, I64};
use cranelift_codegen::ir::{
    Block, BlockArg, Function, InstBuilder, JumpTableData, MemFlagsData, Value,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};

use super::call::*;
use crate::ir::defuse::{dests, sources};
use crate::ir::live::Live;
use crate::ir::{FTy, Inst, MemSpace, Op, Program, Slot, NONE};

/// Instructions where a straight-line run starts: the region's first instruction, branch
/// targets (of branches anywhere in the program: a loop whose branch back lies outside the
/// region enters it at its head), the instruction after an unconditional branch and the one
/// after a loop's branch back. Compiled code is entered at leaders only (after executing an
/// access that compiled code left to it, the interpreter goes on to the next leader).
/// `all`: the program's code; the region is `all[lo..lo + n]`.
pub(super) fn leaders(all: &[Inst], lo: u32, n: usize) -> Vec<bool> {
    let mut l = vec![false; n + 1];
    l[0] = true;
    let inside = |t: u64| t >= lo as u64 && t < lo as u64 + n as u64;
    for i in all {
        if i.op == Op::Bra && inside(i.imm as u64) {
            l[(i.imm as u64 - lo as u64) as usize] = true;
        }
    }
    for (k, i) in all[lo as usize..lo as usize + n].iter().enumerate() {
        if i.op == Op::Bra {
            let t = i.imm as u64;
            // After a loop's branch back too: where a gang of lanes leaves the loop (`gang`).
            if i.guard == NONE || (inside(t) && t - lo as u64 <= k as u64) {
                l[k + 1] = true;
            }
        }
    }
    l.truncate(n);
    l
}

/// The slots the region reads as f32 and as f64 operands, and which of them are *float
/// registers* here: read as one float type only and written only by operations that produce
/// that type (float arithmetic, conversions to it, loads of its size, moves). A float register
/// lives in one float variable alone. For an f32 register that drops the upper 32 bits of the
/// slot, which no reader of a 32-bit register looks at (every reader takes the low bits); the
/// register is written back zero-extended, as the interpreter's f32 operations write it.
fn float_kinds(code: &[Inst]) -> (Vec<Slot>, Vec<Slot>, HashMap<Slot, FTy>) {
    let (mut r32, mut r64) = (Vec::new(), Vec::new());
    for i in code {
        let (w, n) = match i.op {
            Op::FAdd32 | Op::FSub32 | Op::FMul32 | Op::FDiv32 => (false, 2),
            Op::FFma32 => (false, 3),
            Op::FAdd64 | Op::FSub64 | Op::FMul64 | Op::FDiv64 => (true, 2),
            Op::FFma64 => (true, 3),
            Op::SetpF { ty, .. } | Op::FMin { ty, .. } | Op::FMax { ty, .. } => (ty == FTy::F64, 2),
            Op::FUnary { ty, .. } => (ty == FTy::F64, 1),
            Op::CvtFI { from, .. } | Op::CvtFF { from, .. } => (from == FTy::F64, 1),
            _ => continue,
        };
        let to = if w { &mut r64 } else { &mut r32 };
        to.extend(i.r[1..=n].iter().copied().filter(|&s| s != NONE));
    }
    for v in [&mut r32, &mut r64] {
        v.sort_unstable();
        v.dedup();
    }
    // Which float type each write produces (None: not a float register write).
    let produces = |i: &Inst| -> Option<FTy> {
        match i.op {
            Op::FAdd32 | Op::FSub32 | Op::FMul32 | Op::FDiv32 | Op::FFma32 => Some(FTy::F32),
            Op::FAdd64 | Op::FSub64 | Op::FMul64 | Op::FDiv64 | Op::FFma64 => Some(FTy::F64),
            Op::CvtIF { to, .. } => Some(to),
            Op::FUnary { ty, .. } | Op::FMin { ty, .. } | Op::FMax { ty, .. } => Some(ty),
            Op::CvtFF { to, .. } => Some(to),
            Op::Ld {
                size: 4,
                sext: false,
                ..
            } => Some(FTy::F32),
            Op::Ld { size: 8, .. } => Some(FTy::F64),
            _ => None,
        }
    };
    let mut kind: HashMap<Slot, Option<FTy>> = HashMap::new();
    for (v, t) in [(&r32, FTy::F32), (&r64, FTy::F64)] {
        for &s in v.iter() {
            let both = r32.binary_search(&s).is_ok() && r64.binary_search(&s).is_ok();
            kind.insert(s, (!both).then_some(t));
        }
    }
    for i in code {
        for d in dests(i) {
            if let Some(k) = kind.get_mut(&d) {
                if i.op != Op::Mov && produces(i) != *k {
                    *k = None;
                }
            }
        }
    }
    let prim = kind
        .into_iter()
        .filter_map(|(s, k)| k.map(|t| (s, t)))
        .collect();
    (r32, r64, prim)
}

/// The float registers whose NaNs may stay non-canonical inside the region ("lazy"): written
/// only by arithmetic that the interpreter canonicalises (`add`, `sub`, `mul`, `div`, `fma`),
/// by operations whose NaN results are canonical anyway (`min`, `max`) or never NaN (`cvt` from
/// integers), or by moves of constants that are not NaN. A NaN's payload then never reaches an
/// operand that could show it: arithmetic, comparisons and conversions to integers read the
/// raw value (their results do not depend on a NaN operand's payload), while every reader of
/// the bits (stores, moves, `abs`/`neg`/`sqrt`/..., float conversions, integer views, the
/// write-back when the lane leaves) canonicalises first (`Em::get_f32`). So the canonical NaN
/// the interpreter would have written at each arithmetic result is written once, where the
/// bits are observed: the `fma` chain of a dot product loses one compare-and-select per step.
/// A lazy register entered with a non-canonical NaN (written by something outside the region)
/// leaves to the interpreter at entry.
fn lazy_floats(code: &[Inst], prim: &HashMap<Slot, FTy>, consts: &HashMap<Slot, u64>) -> Vec<Slot> {
    let mut ok: HashMap<Slot, bool> = prim.keys().map(|&s| (s, true)).collect();
    for i in code {
        let fine = match i.op {
            Op::FAdd32 | Op::FSub32 | Op::FMul32 | Op::FDiv32 | Op::FFma32 => true,
            Op::FAdd64 | Op::FSub64 | Op::FMul64 | Op::FDiv64 | Op::FFma64 => true,
            Op::FMin { .. } | Op::FMax { .. } | Op::CvtIF { .. } => true,
            Op::Mov => match (consts.get(&i.r[1]), prim.get(&i.r[0])) {
                (Some(&c), Some(FTy::F32)) => !f32::from_bits(c as u32).is_nan(),
                (Some(&c), Some(FTy::F64)) => !f64::from_bits(c).is_nan(),
                _ => false,
            },
            _ => false,
        };
        for d in dests(i) {
            if let Some(k) = ok.get_mut(&d) {
                *k &= fine;
            }
        }
    }
    let mut lazy: Vec<Slot> = ok.into_iter().filter_map(|(s, k)| k.then_some(s)).collect();
    lazy.sort_unstable();
    lazy
}

/// One check shared by global accesses with the same address register (see `access_groups`):
/// the bytes `[base + lo, base + lo + span)` of one allocation, `base + lo` aligned to `align`.
#[derive(Clone, Copy)]
pub(super) struct Group {
    pub lo: i64,
    pub span: u64,
    pub align: u64,
}

/// The global access at `k` (a `Ld`/`St` in the global or generic space).
fn access(i: &Inst) -> Option<(Slot, i64, u64)> {
    match i.op {
        Op::Ld { space, size, n, .. } | Op::St { space, size, n }
            if matches!(space, MemSpace::Global | MemSpace::Generic) =>
        {
            Some((i.r[4], i.imm, size as u64 * n as u64))
        }
        _ => None,
    }
}

/// Per instruction of the region: the index of the access that checks it (its group's head)
/// and, per head, the group. Unguarded accesses in one straight-line run through the same
/// address register, not written in between, share the head's check of the span they cover
/// together (when every member's offset from the span's start keeps its own alignment). If the
/// check fails the lane leaves before the head, and the interpreter executes the head and what
/// follows up to the next leader, with its own checks, so reports do not change.
fn access_groups(code: &[Inst], leaders: &[bool]) -> (Vec<usize>, HashMap<usize, Group>) {
    let mut head = (0..code.len()).collect::<Vec<_>>();
    let mut members: HashMap<usize, Vec<(i64, u64)>> = HashMap::new();
    let mut open: HashMap<Slot, usize> = HashMap::new();
    let fits = |ms: &[(i64, u64)]| -> Option<Group> {
        let lo = ms.iter().map(|m| m.0).min()?;
        let hi = ms.iter().map(|m| m.0 + m.1 as i64).max()?;
        let ok = ms
            .iter()
            .all(|&(off, total)| (off - lo).rem_euclid(total.min(16) as i64) == 0);
        ok.then(|| Group {
            lo,
            span: (hi - lo) as u64,
            align: ms.iter().map(|m| m.1.min(16)).max().unwrap_or(1),
        })
    };
    for (k, i) in code.iter().enumerate() {
        if leaders[k] {
            open.clear();
        }
        if let Some((b, off, total)) = access(i) {
            if i.guard == NONE {
                let joined = open.get(&b).copied().filter(|&h| {
                    let mut ms = members[&h].clone();
                    ms.push((off, total));
                    fits(&ms).is_some()
                });
                match joined {
                    Some(h) => {
                        head[k] = h;
                        if let Some(ms) = members.get_mut(&h) {
                            ms.push((off, total));
                        }
                    }
                    None => {
                        open.insert(b, k);
                        members.insert(k, vec![(off, total)]);
                    }
                }
            } else {
                members.insert(k, vec![(off, total)]);
            }
        }
        if i.op == Op::Bra {
            open.clear();
        }
        for d in dests(i) {
            open.remove(&d);
        }
    }
    let groups = members
        .into_iter()
        .filter_map(|(h, ms)| fits(&ms).map(|g| (h, g)))
        .collect();
    (head, groups)
}

/// A cache entry kept in variables: its index and the variables of its base, units and host.
type Held = (u32, [Variable; 3]);

/// The cache entries of the region's checks (numbered on from `next_cache`, which moves past
/// them) by head instruction, and the entries held in variables (see `roots::plan`).
fn cache_plan(
    b: &mut FunctionBuilder,
    code: &[Inst],
    lo: u32,
    group_of: &[usize],
    groups: &HashMap<usize, Group>,
    chains: &super::chains::Chains,
    next_cache: &mut u32,
) -> (HashMap<usize, u32>, Vec<Held>) {
    let heads: Vec<usize> = (0..code.len())
        .filter(|&k| group_of[k] == k && groups.contains_key(&k))
        .collect();
    // Whether `k` is inside a loop: a backward branch at or after it jumps to it or before.
    let in_loop = |k: usize| {
        code[k..].iter().any(|i| {
            let t = i.imm as u32;
            i.op == Op::Bra && t >= lo && t <= lo + k as u32
        })
    };
    let checks: Vec<super::roots::Check> = heads
        .iter()
        .map(|&k| super::roots::Check {
            base: code[k].r[4],
            span: groups[&k].span,
            align: groups[&k].align,
            in_loop: in_loop(k),
            reads: if chains.members.contains_key(&k) {
                0
            } else if chains.heads.contains_key(&k) {
                2
            } else {
                1
            },
        })
        .collect();
    let plan = super::roots::plan(code, &checks);
    let first = *next_cache;
    *next_cache += plan.entries;
    let cache_of = heads
        .iter()
        .zip(&plan.entry)
        .map(|(&k, &e)| (k, first + e))
        .collect();
    let held = (0..plan.entries)
        .filter(|&e| plan.held[e as usize])
        .map(|e| {
            (
                first + e,
                [b.declare_var(I64), b.declare_var(I64), b.declare_var(I64)],
            )
        })
        .collect();
    (cache_of, held)
}

struct Em<'a, 'b> {
    // (see `region`)
    b: FunctionBuilder<'b>,
    /// The variable of each slot the region uses (constants and float registers aside).
    vars: HashMap<Slot, Variable>,
    /// The float registers (see `float_kinds`): their only variable is in `f32s` or `f64s`.
    prim: HashMap<Slot, FTy>,
    /// Float views (`F32`, `F64`) of the slots the region reads as floats: every write of such
    /// a slot defines its views too, so that float operations take their operands from float
    /// registers and no conversion is left in a loop (unused conversions are removed by
    /// Cranelift).
    f32s: HashMap<Slot, Variable>,
    f64s: HashMap<Slot, Variable>,
    /// Float registers whose NaNs may be non-canonical (`lazy_floats`), sorted.
    lazy: Vec<Slot>,
    /// Slots the region writes, sorted: what an exit may have to store.
    written: Vec<Slot>,
    /// Instructions of the current run not yet taken from the fuel.
    pending: i64,
    leaders: Vec<bool>,
    consts: HashMap<Slot, u64>,
    ctx: Value,
    fuel: Variable,
    exit: Block,
    interp_exit: Block,
    /// Where a lane parks at a gang loop's start (`gang`).
    park_exit: Block,
    blocks: Vec<Block>,
    /// Per instruction, the access whose check covers it (`access_groups`), the groups, and
    /// the host address of each checked group's start.
    group_of: Vec<usize>,
    groups: HashMap<usize, Group>,
    group_host: HashMap<usize, Value>,
    /// Per instruction, the head of its run of shared accesses (`shared::shared_runs`), the
    /// runs by head, and each checked access's host address (a base's, and the offset from it).
    shared_head: Vec<Option<usize>>,
    shared_runs: HashMap<usize, shared::Run>,
    shared_host: HashMap<usize, (Value, i64)>,
    lo: u32,
    hi: u32,
    /// The register-preserving wrapper of `translate` (see `compile`).
    translate: cranelift_codegen::ir::FuncRef,
    /// The cache entry of each check (by its head), and the variables holding the entries
    /// kept in registers (base, units, host; see `roots::plan`).
    cache_of: HashMap<usize, u32>,
    held: Vec<Held>,
    /// The chains of accesses one check covers (`chains`), and for each head compiled so far
    /// the difference between host and device addresses its check found.
    chains: super::chains::Chains,
    chain_delta: HashMap<usize, Value>,
    /// The loops checked once before they start (`loops`, `versioned`); while their unchecked
    /// copy is emitted, the host-minus-device difference of each access group (by head); the
    /// loop whose body is being emitted, with the copies still to emit; whether a copy of a
    /// loop is being emitted.
    loops: Vec<super::loops::Loop>,
    fast: Option<HashMap<usize, Value>>,
    versioning: Option<versioned::Versioning>,
    copying: bool,
    /// Per loop: whether gangs of lanes run it (`gang`); in a gang function, the registers of
    /// the lane being emitted.
    gangs: Vec<bool>,
    lane_regs_at: Option<Value>,
    /// Whether loads may move (a gang function whose loop stores nothing: `ops::load_flags`).
    movable_loads: bool,
    live: &'a Live,
}

/// What `region` and `gang::gang` share: a builder for `func` and the analysis of the region
/// `[lo, hi)` of `prog`, in an `Em` whose entry block (parameters: registers of lane 0,
/// context, entry PC, lanes) is current. Also returns the slots the region uses (constants
/// aside), sorted.
#[allow(clippy::too_many_arguments)]
fn setup<'a, 'b>(
    func: &'b mut Function,
    fctx: &'b mut FunctionBuilderContext,
    prog: &Program,
    lo: u32,
    hi: u32,
    translate: cranelift_codegen::ir::FuncRef,
    next_cache: &mut u32,
    live: &'a Live,
) -> (Em<'a, 'b>, Vec<Slot>) {
    let code = &prog.code[lo as usize..hi as usize];
    let mut b = FunctionBuilder::new(func, fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    let exit = b.create_block();
    b.append_block_param(exit, I32);
    let interp_exit = b.create_block();
    b.set_cold_block(interp_exit);
    b.append_block_param(interp_exit, I32);
    let park_exit = b.create_block();
    b.set_cold_block(park_exit);
    b.append_block_param(park_exit, I32);
    let blocks: Vec<Block> = (0..=code.len()).map(|_| b.create_block()).collect();

    // Constant slots that the region never writes become immediates.
    let mut written: Vec<Slot> = code.iter().flat_map(dests).collect();
    written.sort_unstable();
    written.dedup();
    let consts: HashMap<Slot, u64> = prog
        .consts
        .iter()
        .filter(|(s, _)| written.binary_search(s).is_err())
        .copied()
        .collect();
    let mut used: Vec<Slot> = code
        .iter()
        .flat_map(|i| sources(i).into_iter().chain(dests(i)))
        .filter(|s| !consts.contains_key(s))
        .collect();
    used.sort_unstable();
    used.dedup();
    let (r32, r64, prim) = float_kinds(code);
    let vars: HashMap<Slot, Variable> = used
        .iter()
        .filter(|s| !prim.contains_key(s))
        .map(|&s| (s, b.declare_var(I64)))
        .collect();
    let in_use = |s: &Slot| used.binary_search(s).is_ok();
    let f32s: HashMap<Slot, Variable> = r32
        .into_iter()
        .filter(in_use)
        .map(|s| (s, b.declare_var(F32)))
        .collect();
    let f64s: HashMap<Slot, Variable> = r64
        .into_iter()
        .filter(in_use)
        .map(|s| (s, b.declare_var(F64)))
        .collect();
    let leaders = leaders(&prog.code, lo, code.len());
    let (group_of, groups) = access_groups(code, &leaders);
    let (shared_head, shared_runs) = shared::shared_runs(code, &leaders);
    let chains = super::chains::find(code, &leaders, |k| {
        (group_of[k] == k)
            .then(|| groups.get(&k))
            .flatten()
            .map(|g| (g.lo, g.span, g.align))
    });
    let (cache_of, held) = cache_plan(&mut b, code, lo, &group_of, &groups, &chains, next_cache);
    // Accesses without a group of their own head are not checked before a loop (`usize::MAX`
    // is outside every loop); loops with shared accesses are not versioned at all (those
    // accesses check at their runs' heads).
    let loops = super::loops::find(code, lo, &leaders, &consts, |k| {
        if shared_access(&code[k]).is_some() {
            return Some(usize::MAX);
        }
        access(&code[k]).map(|_| {
            let h = group_of[k];
            if groups.contains_key(&h) {
                h
            } else {
                usize::MAX
            }
        })
    });
    let lazy = lazy_floats(code, &prim, &consts);
    b.switch_to_block(entry);
    let ctx = b.block_params(entry)[1];
    let fuel = b.declare_var(I64);
    let mut em = Em {
        b,
        vars,
        prim,
        f32s,
        f64s,
        lazy,
        written,
        pending: 0,
        leaders,
        consts,
        ctx,
        fuel,
        exit,
        interp_exit,
        park_exit,
        blocks,
        group_of,
        groups,
        group_host: HashMap::new(),
        shared_head,
        shared_runs,
        shared_host: HashMap::new(),
        lo,
        hi,
        translate,
        cache_of,
        held,
        chains,
        chain_delta: HashMap::new(),
        loops,
        gangs: Vec::new(),
        lane_regs_at: None,
        movable_loads: false,
        fast: None,
        versioning: None,
        copying: false,
        live,
    };
    em.gangs = (0..em.loops.len()).map(|li| em.gang_ok(code, li)).collect();
    (em, used)
}

/// Returns the leaders (see `leaders`), the PCs where the function may be entered, the
/// number of loops checked before they start (`loops`), and the loops that gangs of lanes run
/// (`gang`: their index in the region's loops and the PC where each starts).
#[allow(clippy::too_many_arguments)]
pub(super) fn region(
    func: &mut Function,
    fctx: &mut FunctionBuilderContext,
    prog: &Program,
    lo: u32,
    hi: u32,
    translate: cranelift_codegen::ir::FuncRef,
    next_cache: &mut u32,
    live: &Live,
    frontend: cranelift_codegen::isa::TargetFrontendConfig,
) -> (Vec<bool>, usize, Vec<(usize, u32)>) {
    let code = &prog.code[lo as usize..hi as usize];
    let (mut em, used) = setup(func, fctx, prog, lo, hi, translate, next_cache, live);
    let (exit, interp_exit, park_exit) = (em.exit, em.interp_exit, em.park_exit);
    let ctx = em.ctx;
    let fuel = em.fuel;
    let leaders = em.leaders.clone();
    let b = &mut em.b;

    // entry: the context's fields, then the lane loop. lane_head(m): the next lane of mask m,
    // its registers, its fuel, and the jump to its entry PC. done: the group's results.
    let entry = b
        .current_block()
        .expect("setup leaves the entry block current");
    let regs0 = b.block_params(entry)[0];
    let pc_in = b.block_params(entry)[2];
    let mask = b.block_params(entry)[3];
    let fl = MemFlagsData::trusted();
    let zero64 = b.ins().iconst(I64, 0);
    let zero32 = b.ins().iconst(I32, 0);
    b.ins().store(fl, zero64, ctx, CTX_MOST);
    b.ins().store(fl, zero32, ctx, CTX_INTERP);
    b.ins().store(fl, zero32, ctx, CTX_PARKED);
    b.ins().store(fl, mask, ctx, CTX_LEFT);
    // Kept in the context, not in host registers through the region (see `lane_regs`).
    b.ins().store(fl, regs0, ctx, CTX_REGS0);
    b.ins().store(fl, pc_in, ctx, CTX_PC_IN);
    let lane_head = b.create_block();
    let lane = b.create_block();
    let done = b.create_block();
    b.ins().jump(lane_head, &[]);

    b.switch_to_block(lane_head);
    let m = b.ins().load(I32, fl, ctx, CTX_LEFT);
    b.ins().brif(m, lane, &[], done, &[]);
    b.seal_block(lane);
    b.seal_block(done);

    b.switch_to_block(lane);
    let l = b.ins().ctz(m);
    let l64 = b.ins().uextend(I64, l);
    let byte = b.ins().ishl_imm_s(l64, 3);
    let r0 = b.ins().load(I64, fl, ctx, CTX_REGS0);
    let regs = b.ins().iadd(r0, byte);
    let f0 = b.ins().load(I64, fl, ctx, CTX_FUEL);
    b.def_var(fuel, f0);
    let pc_lane = b.ins().load(I32, fl, ctx, CTX_PC_IN);
    let idx = b.ins().iadd_imm_s(pc_lane, -(lo as i64));
    let bad_entry = b.create_block();
    // Entry is possible at leaders only (elsewhere the interpreter goes on to the next leader);
    // each leader has a block that loads the slots live there.
    let entries: Vec<Option<Block>> = leaders
        .iter()
        .map(|&l| l.then(|| b.create_block()))
        .collect();
    let targets: Vec<_> = entries
        .iter()
        .map(|e| b.func.dfg.block_call(e.unwrap_or(bad_entry), &[]))
        .collect();
    let default = b.func.dfg.block_call(bad_entry, &[]);
    let jt = b.create_jump_table(JumpTableData::new(default, &targets));
    // Most calls enter at the region's start: a compare instead of the table.
    let at_start = b.ins().icmp_imm_s(IntCC::Equal, idx, 0);
    let by_table = b.create_block();
    b.ins().brif(
        at_start,
        entries[0].unwrap_or(bad_entry),
        &[],
        by_table,
        &[],
    );
    b.switch_to_block(by_table);
    b.seal_block(by_table);
    b.ins().br_table(idx, jt);
    for e in entries.iter().flatten() {
        b.seal_block(*e);
    }

    for (k, e) in entries.iter().enumerate() {
        let Some(e) = *e else { continue };
        em.b.switch_to_block(e);
        let odd = em.load_live(&used, lo + k as u32, regs);
        // Held cache entries are loaded at each lane's entry (measured better than loading
        // them before the loops that use them: Cranelift's register allocator then spilled
        // more in matmulNaive's loop).
        for h in 0..em.held.len() {
            em.reload_held(h);
        }
        match odd {
            // Leave before anything ran, storing nothing (the registers are as they were).
            Some(odd) => {
                let bail = em.b.create_block();
                em.b.set_cold_block(bail);
                em.b.ins().brif(odd, bail, &[], em.blocks[k], &[]);
                em.b.switch_to_block(bail);
                em.b.seal_block(bail);
                em.jump_exit(lo + k as u32, 1);
            }
            None => {
                em.b.ins().jump(em.blocks[k], &[]);
            }
        }
    }
    for (k, i) in code.iter().enumerate() {
        em.inst(lo + k as u32, i);
        if em
            .versioning
            .as_ref()
            .is_some_and(|v| em.loops[v.li()].back == k)
        {
            // Before the instruction after the loop is emitted (and its block sealed).
            em.loop_copies(code);
        }
    }
    // Falling off the end of the region.
    em.b.switch_to_block(em.blocks[code.len()]);
    em.exit_at(hi, 0);
    // An entry PC that is not a leader (the caller only enters at leaders).
    em.b.switch_to_block(bad_entry);
    em.b.seal_block(bad_entry);
    em.b.ins().jump(em.interp_exit, &[BlockArg::Value(pc_in)]);

    // The exit: this lane's PC, the fuel it used; on to the next lane. (Exits that leave an
    // instruction to the interpreter mark the lane in `interp` first: `interp_exit`.)
    em.b.switch_to_block(exit);
    let pc_out = em.b.block_params(exit)[0];
    let m = em.b.ins().load(I32, fl, ctx, CTX_LEFT);
    let l = em.b.ins().ctz(m);
    let l64 = em.b.ins().uextend(I64, l);
    let f = em.b.use_var(fuel);
    let f0 = em.b.ins().load(I64, fl, ctx, CTX_FUEL);
    let used = em.b.ins().isub(f0, f);
    let before = em.b.ins().load(I64, fl, ctx, CTX_MOST);
    let now = em.b.ins().smax(before, used);
    em.b.ins().store(fl, now, ctx, CTX_MOST);
    let at = em.b.ins().ishl_imm_s(l64, 2);
    let at = em.b.ins().iadd(ctx, at);
    em.b.ins().store(fl, pc_out, at, CTX_PCS);
    let rest = em.b.ins().iadd_imm_s(m, -1);
    let rest = em.b.ins().band(m, rest);
    em.b.ins().store(fl, rest, ctx, CTX_LEFT);
    em.b.ins().jump(lane_head, &[]);

    // Mark the lane for the interpreter, or as parked where a gang loop starts (`gang`), then
    // the exit.
    for (from, field) in [(interp_exit, CTX_INTERP), (park_exit, CTX_PARKED)] {
        em.b.switch_to_block(from);
        let pc_i = em.b.block_params(from)[0];
        let m = em.b.ins().load(I32, fl, ctx, CTX_LEFT);
        let l = em.b.ins().ctz(m);
        let one = em.b.ins().iconst(I32, 1);
        let bit = em.b.ins().ishl(one, l);
        let acc = em.b.ins().load(I32, fl, ctx, field);
        let acc = em.b.ins().bor(acc, bit);
        em.b.ins().store(fl, acc, ctx, field);
        em.b.ins().jump(exit, &[BlockArg::Value(pc_i)]);
    }

    em.b.switch_to_block(done);
    em.b.ins().return_(&[]);
    em.b.seal_all_blocks();
    let leaders = std::mem::take(&mut em.leaders);
    let versioned = em.loops.len();
    let gangs = (0..em.loops.len())
        .filter(|&li| em.gangs[li])
        .map(|li| (li, lo + em.loops[li].head as u32))
        .collect();
    em.b.finalize(frontend);
    (leaders, versioned, gangs)
}

impl Em<'_, '_> {
    /// Load the slots of `used` live at `pc` from the lane registers `regs`. Returns whether a
    /// lazy float register holds a NaN other than the canonical one (`or_odd`), if any is
    /// loaded.
    fn load_live(&mut self, used: &[Slot], pc: u32, regs: Value) -> Option<Value> {
        let fl = MemFlagsData::trusted();
        let mut odd: Option<Value> = None;
        for &s in used {
            if self.live.live(pc, s) {
                let at = (s as i32) * 256;
                match self.prim.get(&s) {
                    Some(FTy::F32) => {
                        let f = self.b.ins().load(F32, fl, regs, at);
                        self.b.def_var(self.f32s[&s], f);
                        odd = self.or_odd(odd, s, f);
                    }
                    Some(_) => {
                        let g = self.b.ins().load(F64, fl, regs, at);
                        self.b.def_var(self.f64s[&s], g);
                        odd = self.or_odd(odd, s, g);
                    }
                    None => {
                        let v = self.b.ins().load(I64, fl, regs, at);
                        self.set(s, v);
                    }
                }
            }
        }
        odd
    }

    fn get(&mut self, s: Slot) -> Value {
        if let Some(&c) = self.consts.get(&s) {
            return self.b.ins().iconst(I64, c as i64);
        }
        let none = MemFlagsData::new();
        match self.prim.get(&s) {
            Some(FTy::F32) => {
                let f = self.get_f32(s);
                let y = self.b.ins().bitcast(I32, none, f);
                self.b.ins().uextend(I64, y)
            }
            Some(_) => {
                let g = self.get_f64(s);
                self.b.ins().bitcast(I64, none, g)
            }
            None => self.b.use_var(self.vars[&s]),
        }
    }

    /// Write slot `s` (the lane's register is written when the lane leaves the region), and
    /// its float views.
    fn set(&mut self, s: Slot, x: Value) {
        let none = MemFlagsData::new();
        if let Some(&v) = self.vars.get(&s) {
            self.b.def_var(v, x);
        }
        if let Some(&f) = self.f32s.get(&s) {
            let y = self.b.ins().ireduce(I32, x);
            let y = self.b.ins().bitcast(F32, none, y);
            self.b.def_var(f, y);
        }
        if let Some(&f) = self.f64s.get(&s) {
            let y = self.b.ins().bitcast(F64, none, x);
            self.b.def_var(f, y);
        }
    }

    /// Write slot `s` with the bits of the f32 `f` (zero-extended, as the interpreter does).
    fn set_f32(&mut self, s: Slot, f: Value) {
        if self.prim.get(&s) == Some(&FTy::F32) {
            self.b.def_var(self.f32s[&s], f);
            return;
        }
        let y = self.b.ins().bitcast(I32, MemFlagsData::new(), f);
        let x = self.b.ins().uextend(I64, y);
        self.set(s, x);
    }

    /// Write slot `s` with the bits of the f64 `g`.
    fn set_f64(&mut self, s: Slot, g: Value) {
        if self.prim.get(&s) == Some(&FTy::F64) {
            self.b.def_var(self.f64s[&s], g);
            return;
        }
        let x = self.b.ins().bitcast(I64, MemFlagsData::new(), g);
        self.set(s, x);
    }

    /// Slot `s` read as an f32 (its low 32 bits): the interpreter's bits.
    fn get_f32(&mut self, s: Slot) -> Value {
        let f = self.get_f32_raw(s);
        self.exact(s, f, FTy::F32)
    }

    /// Slot `s` read as an f64: the interpreter's bits.
    fn get_f64(&mut self, s: Slot) -> Value {
        let g = self.get_f64_raw(s);
        self.exact(s, g, FTy::F64)
    }

    /// Slot `s` read as an f32 by an operation whose result does not depend on a NaN operand's
    /// payload (a lazy register's NaN may be non-canonical: `lazy_floats`).
    pub(super) fn get_f32_raw(&mut self, s: Slot) -> Value {
        // (Constants have no variables: `used` leaves them out.)
        match self.f32s.get(&s) {
            Some(&v) => self.b.use_var(v),
            _ => {
                let x = self.get(s);
                let y = self.b.ins().ireduce(I32, x);
                self.b.ins().bitcast(F32, MemFlagsData::new(), y)
            }
        }
    }

    /// As `get_f32_raw`, for an f64.
    pub(super) fn get_f64_raw(&mut self, s: Slot) -> Value {
        match self.f64s.get(&s) {
            Some(&v) => self.b.use_var(v),
            _ => {
                let x = self.get(s);
                self.b.ins().bitcast(F64, MemFlagsData::new(), x)
            }
        }
    }

    fn is_lazy(&self, s: Slot) -> bool {
        self.lazy.binary_search(&s).is_ok()
    }

    /// The value `v` of slot `s`, with a NaN made canonical when `s` is lazy.
    fn exact(&mut self, s: Slot, v: Value, ty: FTy) -> Value {
        if self.is_lazy(s) {
            self.canonical(v, ty)
        } else {
            v
        }
    }

    /// `v` (an f32 or f64 of type `ty`) with a NaN replaced by the canonical NaN, as the
    /// interpreter's arithmetic writes it (`sem::float::f32c` / `f64c`).
    fn canonical(&mut self, v: Value, ty: FTy) -> Value {
        let nan = self.b.ins().fcmp(FloatCC::Unordered, v, v);
        let c = self.canon_nan(ty);
        self.b.ins().select(nan, c, v)
    }

    /// At an entry, with register `s` loaded as `v`: `acc`, or'ed (when `s` is lazy) with
    /// whether `s` holds a NaN other than the canonical one (written outside the region), which
    /// the write-back would change.
    fn or_odd(&mut self, acc: Option<Value>, s: Slot, v: Value) -> Option<Value> {
        if !self.is_lazy(s) {
            return acc;
        }
        let (ity, canon) = if self.prim.get(&s) == Some(&FTy::F64) {
            (I64, crate::sem::float::CANON_NAN64 as i64)
        } else {
            (I32, crate::sem::float::CANON_NAN32 as u32 as i64)
        };
        let bits = self.b.ins().bitcast(ity, MemFlagsData::new(), v);
        let nan = self.b.ins().fcmp(FloatCC::Unordered, v, v);
        let other = self.b.ins().icmp_imm_s(IntCC::NotEqual, bits, canon);
        let odd = self.b.ins().band(nan, other);
        Some(match acc {
            Some(a) => self.b.ins().bor(a, odd),
            None => odd,
        })
    }

    /// Store the slots the region writes that are live at `pc` (where the lane goes on).
    fn store_live(&mut self, pc: u32) {
        let mut regs = None;
        for k in 0..self.written.len() {
            let s = self.written[k];
            if self.live.live(pc, s) {
                let x = self.get(s);
                let r = *regs.get_or_insert_with(|| self.lane_regs());
                self.b
                    .ins()
                    .store(MemFlagsData::trusted(), x, r, (s as i32) * 256);
            }
        }
    }

    /// The running lane's registers (lane 0's plus 8 bytes a lane), from the context (in a
    /// gang function, the lane being emitted's).
    fn lane_regs(&mut self) -> Value {
        if let Some(r) = self.lane_regs_at {
            return r;
        }
        let fl = MemFlagsData::trusted();
        let m = self.b.ins().load(I32, fl, self.ctx, CTX_LEFT);
        let l = self.b.ins().ctz(m);
        let l64 = self.b.ins().uextend(I64, l);
        let byte = self.b.ins().ishl_imm_s(l64, 3);
        let r0 = self.b.ins().load(I64, fl, self.ctx, CTX_REGS0);
        self.b.ins().iadd(r0, byte)
    }

    /// Branch on the guard of `i` to `body` (its instruction runs) or `next`; then emit into
    /// `body`.
    fn guard(&mut self, i: &Inst, body: Block, next: Block) {
        let g = self.get(i.guard);
        let g = self.b.ins().band_imm_s(g, 1);
        if i.guard_neg {
            self.b.ins().brif(g, next, &[], body, &[]);
        } else {
            self.b.ins().brif(g, body, &[], next, &[]);
        }
        self.b.switch_to_block(body);
        self.b.seal_block(body);
    }

    /// Take the current run's instructions from the fuel: before anything that leaves the run.
    fn take_fuel(&mut self) {
        if self.pending > 0 {
            let f = self.b.use_var(self.fuel);
            let f = self.b.ins().iadd_imm_s(f, -self.pending);
            self.b.def_var(self.fuel, f);
        }
        self.pending = 0;
    }

    /// Jump to the exit with the lane at `pc` (`interp` 1: through `interp_exit`; 2: through
    /// `park_exit`).
    fn jump_exit(&mut self, pc: u32, interp: u32) {
        let p = self.b.ins().iconst(I32, pc as i64);
        let to = match interp {
            0 => self.exit,
            1 => self.interp_exit,
            _ => self.park_exit,
        };
        self.b.ins().jump(to, &[BlockArg::Value(p)]);
    }

    /// Branch: to a cold exit with the lane at `pc` when `leave` is true (`interp`: the
    /// interpreter must execute the instruction at `pc` before compiled code may run it), else
    /// to `stay`. The exit stores what is live at `pc` and the run's fuel so far.
    fn brif_exit(&mut self, leave: Value, stay: Block, args: &[BlockArg], pc: u32, interp: u32) {
        let cur = self.b.current_block();
        let out = self.b.create_block();
        self.b.set_cold_block(out);
        self.b.ins().brif(leave, out, &[], stay, args);
        self.b.switch_to_block(out);
        self.b.seal_block(out);
        let pending = self.pending;
        self.exit_at(pc, interp);
        self.pending = pending;
        if let Some(c) = cur {
            self.b.switch_to_block(c);
        }
    }

    /// Leave the region here, with the lane at `pc` (`interp`: see `brif_exit`).
    fn exit_at(&mut self, pc: u32, interp: u32) {
        self.store_live(pc);
        self.take_fuel();
        self.jump_exit(pc, interp);
    }

    /// Branch to `pc`: inside the region a jump (with a fuel check when it goes backwards),
    /// outside it an exit.
    fn goto(&mut self, from: u32, pc: u32) {
        if pc < self.lo || pc >= self.hi {
            return self.exit_at(pc, 0);
        }
        let target = self.blocks[(pc - self.lo) as usize];
        if pc > from {
            self.b.ins().jump(target, &[]);
            return;
        }
        let f = self.b.use_var(self.fuel);
        let out = self.b.ins().icmp_imm_s(IntCC::SignedLessThanOrEqual, f, 0);
        self.brif_exit(out, target, &[], pc, 0);
    }

    fn inst(&mut self, pc: u32, i: &Inst) {
        let k = (pc - self.lo) as usize;
        let next = self.blocks[k + 1];
        let next_leader = k + 1 == self.leaders.len() || self.leaders[k + 1];
        self.b.switch_to_block(self.blocks[k]);
        if !self.copying {
            if let Some(li) = self.loops.iter().position(|l| l.head == k) {
                self.start_versioned(li, k);
            }
        }
        if !self.leaders[k] {
            // Only the instruction before jumps here (fall-through, or around its guard).
            self.b.seal_block(self.blocks[k]);
        }
        self.pending += 1;
        if i.op == Op::Bra || next_leader {
            // Runs end at branches and before leaders (where the count starts afresh).
            self.take_fuel();
        }
        if i.guard != NONE {
            let body = self.b.create_block();
            self.guard(i, body, next);
        }
        if i.op == Op::Bra {
            self.goto(pc, i.imm as u32);
        } else {
            self.op(pc, i);
            self.b.ins().jump(next, &[]);
        }
    }
}
