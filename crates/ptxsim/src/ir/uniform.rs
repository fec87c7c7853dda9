//! Uniformity analysis: which registers hold one value for every thread of a block, and which
//! instructions every live thread of a block executes together.
//!
//! This is stage 1 of the block-vectorising tier (`docs/block-tier.md`): a tier that runs a
//! block's threads as vectors between barriers keeps *block-uniform* registers (loop counters,
//! sizes, parameters) as scalars, turns branches on them into one host branch, and may only
//! treat a barrier as a phase boundary when every live thread of the block reaches it on the
//! same path. The analysis answers those three questions for a lowered `Program`; it executes
//! nothing and changes nothing, and nothing in the interpreter depends on it.
//!
//! **Model.** A register is uniform when, wherever it is read, every live thread of the block
//! holds the same value in it. Threads that exit leave the block's live set, so a branch whose
//! one side only exits (`if (i >= n) return;`) does not make the code after it divergent: the
//! threads still there all run it. The analysis is per slot (a slot with one divergent write is
//! divergent everywhere) and conservative:
//! - **Divergent sources:** `%tid`, `%laneid`, `%warpid` and the lane masks; every load except
//!   kernel parameters (another thread may write the word between two reads); atomics, warp
//!   collectives, clocks and timers; everything device functions compute.
//! - **Uniform sources:** constants, parameters, `%ntid`, `%ctaid`, `%nctaid` and the other
//!   per-block special registers, registers not yet written (a block starts with them zeroed)
//!   and the results of block-wide barrier reductions (`bar.red`).
//! - **Divergent control:** an instruction is under divergent control when it is control
//!   dependent (post-dominance frontier) on a branch whose predicate is divergent, or on a
//!   branch itself under divergent control. A write under divergent control, or guarded by a
//!   divergent predicate, makes its slot divergent: the threads that skip it keep the old value.
//!   A loop whose exit test is divergent makes its body divergent this way, since the body is
//!   control dependent on its own back branch.
//!
//! The analysis iterates to a fixed point, since a branch's divergence depends on registers
//! whose divergence depends on branches.
//!
//! **Barriers.** A barrier splits a block into phases when every live thread reaches it on the
//! same path: it is block-wide (no thread count, not `bar.arrive`), in the kernel's own code,
//! under uniform control with a uniform guard, and no thread can have exited on a divergent
//! test before it. That last case is legal on sm_70+ across warps, but lanes of one warp
//! waiting at a barrier while others exited is what the interpreter's checker reports as a
//! divergent barrier, so a tier that runs phases must leave such kernels to the interpreter.

use crate::ir::{BarKind, Op, Program, SReg, Slot, NONE};

/// The node that stands for "the thread left the kernel".
const EXIT: usize = usize::MAX;

/// What the analysis found for one program.
#[derive(Debug, Clone)]
pub struct Uniformity {
    /// Per slot: some write may leave threads of a block with different values in it.
    divergent: Vec<bool>,
    /// Per PC: live threads of a block may disagree on whether to run the instruction.
    divergent_control: Vec<bool>,
    /// Per PC: the PC of a conditional exit with a divergent test that may have run before.
    after_divergent_exit: Vec<Option<u32>>,
}

/// Why a program's barriers cannot all be block phase boundaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BarrierIssue {
    /// A barrier under divergent control, or with a divergent guard or barrier number.
    Divergent { pc: u32 },
    /// A barrier that threads may reach after others of their warp exited on a divergent
    /// test (`exit_pc`): the interpreter's checker decides whether that is a divergent barrier.
    AfterDivergentExit { pc: u32, exit_pc: u32 },
    /// A barrier for a thread count, not the whole block (`bar.sync 1, 64`), or `bar.arrive`.
    Partial { pc: u32 },
    /// A barrier inside a device function.
    InFunction { pc: u32 },
}

impl Uniformity {
    /// Whether slot `s` holds one value for every live thread of a block wherever it is read.
    pub fn is_uniform(&self, s: Slot) -> bool {
        !self.divergent.get(s as usize).copied().unwrap_or(true)
    }

    /// Whether every live thread of a block runs instruction `pc` when any does (its guard
    /// aside).
    pub fn uniform_control(&self, pc: u32) -> bool {
        !self
            .divergent_control
            .get(pc as usize)
            .copied()
            .unwrap_or(true)
    }

    /// Whether instruction `pc` runs, or not, for every live thread of a block together: it is
    /// under uniform control and has no guard or a uniform one.
    pub fn runs_uniformly(&self, prog: &Program, pc: u32) -> bool {
        let Some(i) = prog.code.get(pc as usize) else {
            return false;
        };
        self.uniform_control(pc) && (i.guard == NONE || self.is_uniform(i.guard))
    }

    /// Whether every barrier of the program is a block-wide `bar.sync` (or `bar.red`) that
    /// every live thread reaches together: then the code between barriers can run as phases
    /// over the whole block. Returns the first barrier that is not.
    pub fn barriers_split_phases(&self, prog: &Program) -> Result<(), BarrierIssue> {
        let end = entry_end(prog);
        for (pc, i) in prog.code.iter().enumerate() {
            let Op::Bar(kind) = i.op else { continue };
            let pc32 = pc as u32;
            if pc >= end {
                return Err(BarrierIssue::InFunction { pc: pc32 });
            }
            if kind == BarKind::Arrive || i.r[2] != NONE {
                return Err(BarrierIssue::Partial { pc: pc32 });
            }
            if !self.runs_uniformly(prog, pc32) || (i.r[1] != NONE && !self.is_uniform(i.r[1])) {
                return Err(BarrierIssue::Divergent { pc: pc32 });
            }
            if let Some(exit_pc) = self.after_divergent_exit[pc] {
                return Err(BarrierIssue::AfterDivergentExit { pc: pc32, exit_pc });
            }
        }
        Ok(())
    }
}

/// One past the entry's own code: device functions are laid out after it.
fn entry_end(prog: &Program) -> usize {
    prog.funcs
        .iter()
        .map(|f| f.entry_pc as usize)
        .min()
        .unwrap_or(prog.code.len())
        .min(prog.code.len())
}

/// Whether special register `r` may differ between the threads of one block.
fn sreg_divergent(r: SReg) -> bool {
    matches!(
        r,
        SReg::Tid(_)
            | SReg::LaneId
            | SReg::WarpId
            | SReg::LaneMaskEq
            | SReg::LaneMaskLt
            | SReg::LaneMaskLe
            | SReg::LaneMaskGt
            | SReg::LaneMaskGe
    )
}

/// Whether an instruction's results may differ between threads whatever its operands:
/// memory (other than parameters), atomics, warp collectives, clocks, calls.
fn inherently_divergent(op: &Op) -> bool {
    matches!(
        op,
        Op::Ld { .. }
            | Op::Atom { .. }
            | Op::Shfl(_)
            | Op::Vote { .. }
            | Op::Activemask
            | Op::Elect
            | Op::MatchAny { .. }
            | Op::MatchAll { .. }
            | Op::Redux { .. }
            | Op::Clock { .. }
            | Op::GlobalTimer { .. }
            | Op::Call
            | Op::CpAsync { .. }
            | Op::Tensor
    )
}

/// The entry's control-flow graph, one node per instruction, with threads that exit leaving
/// it: a branch to code that only exits counts as a conditional exit, not as a branch.
struct Cfg {
    succ: Vec<Vec<usize>>,
    /// Guarded exits and guarded branches to code that only exits.
    cond_exits: Vec<usize>,
}

/// Whether a thread at `pc` can only exit: an unguarded `exit`, or a `nop` or unguarded branch
/// leading to one (chains followed a bounded number of steps), or the end of `code`.
pub(crate) fn exits_only(code: &[crate::ir::Inst], mut pc: usize) -> bool {
    for _ in 0..8 {
        let Some(i) = code.get(pc) else { return true };
        match i.op {
            Op::Exit if i.guard == NONE => return true,
            Op::Bra if i.guard == NONE => pc = i.imm as usize,
            Op::Nop => pc += 1,
            _ => return false,
        }
    }
    false
}

impl Cfg {
    fn new(prog: &Program, end: usize) -> Cfg {
        let code = &prog.code[..end];
        let exits_only = |pc: usize| exits_only(code, pc);
        let next = |pc: usize| if pc + 1 < end { pc + 1 } else { EXIT };
        let mut cond_exits = Vec::new();
        let succ = code
            .iter()
            .enumerate()
            .map(|(pc, i)| match i.op {
                Op::Bra => {
                    let t = i.imm as usize;
                    let t = if t < end { t } else { EXIT };
                    if i.guard == NONE {
                        vec![t]
                    } else if t == EXIT || exits_only(t) {
                        cond_exits.push(pc);
                        vec![next(pc)]
                    } else if next(pc) == t {
                        vec![t]
                    } else {
                        vec![t, next(pc)]
                    }
                }
                // Threads that exit leave the block's live set; the others go on together.
                Op::Exit if i.guard != NONE => {
                    cond_exits.push(pc);
                    vec![next(pc)]
                }
                Op::Exit | Op::Ret | Op::Trap => vec![EXIT],
                _ => vec![next(pc)],
            })
            .collect();
        Cfg { succ, cond_exits }
    }

    /// Immediate post-dominators (`EXIT` for nodes whose only post-dominator is the exit).
    /// Nodes that cannot reach the exit (infinite loops) get an extra edge to it first.
    fn post_dominators(&mut self) -> Vec<usize> {
        let n = self.succ.len();
        let idx = |v: usize| if v == EXIT { n } else { v };
        let mut pred = vec![Vec::new(); n + 1];
        for (v, ss) in self.succ.iter().enumerate() {
            for &s in ss {
                pred[idx(s)].push(v);
            }
        }
        // Nodes that reach the exit: a walk backwards from it.
        let mut reaches = vec![false; n + 1];
        let mut stack = vec![n];
        reaches[n] = true;
        while let Some(v) = stack.pop() {
            for &p in &pred[v] {
                if !reaches[p] {
                    reaches[p] = true;
                    stack.push(p);
                }
            }
        }
        for (v, ss) in self.succ.iter_mut().enumerate() {
            if !reaches[v] {
                ss.push(EXIT);
                pred[n].push(v);
            }
        }
        // Reverse postorder of the reverse graph from the exit (iterative DFS).
        let mut order = Vec::with_capacity(n + 1);
        let mut seen = vec![false; n + 1];
        let mut dfs: Vec<(usize, usize)> = vec![(n, 0)];
        seen[n] = true;
        while let Some((v, k)) = dfs.pop() {
            if let Some(&p) = pred[v].get(k) {
                dfs.push((v, k + 1));
                if !seen[p] {
                    seen[p] = true;
                    dfs.push((p, 0));
                }
            } else {
                order.push(v);
            }
        }
        order.reverse();
        let mut rank = vec![usize::MAX; n + 1];
        for (k, &v) in order.iter().enumerate() {
            rank[v] = k;
        }
        // Cooper, Harvey and Kennedy's iteration, on the reverse graph.
        let mut ipdom = vec![usize::MAX; n + 1];
        ipdom[n] = n;
        let mut changed = true;
        while changed {
            changed = false;
            for &v in order.iter().skip(1) {
                let mut new = usize::MAX;
                for &s in &self.succ[v] {
                    let s = idx(s);
                    if ipdom[s] == usize::MAX {
                        continue;
                    }
                    new = if new == usize::MAX {
                        s
                    } else {
                        let (mut a, mut b) = (new, s);
                        while a != b {
                            while rank[a] > rank[b] {
                                a = ipdom[a];
                            }
                            while rank[b] > rank[a] {
                                b = ipdom[b];
                            }
                        }
                        a
                    };
                }
                if new != usize::MAX && ipdom[v] != new {
                    ipdom[v] = new;
                    changed = true;
                }
            }
        }
        ipdom
            .into_iter()
            .take(n)
            .map(|d| if d >= n { EXIT } else { d })
            .collect()
    }

    /// For each node, the branches it is control dependent on.
    /// Per PC, the branches it is control dependent on; None when there would be more than
    /// [`MAX_CONTROL_DEPENDENCES`] of them in all (then the caller answers conservatively).
    fn control_dependences(&mut self) -> Option<Vec<Vec<usize>>> {
        let ipdom = self.post_dominators();
        let mut cd = vec![Vec::new(); self.succ.len()];
        let mut total = 0usize;
        for (b, ss) in self.succ.iter().enumerate() {
            if ss.len() < 2 {
                continue;
            }
            for &s in ss {
                let mut v = s;
                while v != EXIT && v != ipdom[b] {
                    // Every push while `b` is processed is of `b`: a duplicate is the last one.
                    if cd[v].last() != Some(&b) {
                        cd[v].push(b);
                        total += 1;
                        if total > MAX_CONTROL_DEPENDENCES {
                            return None;
                        }
                    }
                    v = ipdom[v];
                }
            }
        }
        Some(cd)
    }
}

/// Control dependences the analysis follows at most; a program with more is answered
/// conservatively (everything divergent).
pub const MAX_CONTROL_DEPENDENCES: usize = 1 << 22;

/// Analyse `prog` (see the module docs).
pub fn analyze(prog: &Program) -> Uniformity {
    let n = prog.code.len();
    let end = entry_end(prog);
    let mut cfg = Cfg::new(prog, end);
    let Some(cd) = cfg.control_dependences() else {
        // Too many branches to analyse in reasonable time (a fuzzed module of 5,000
        // conditional branches took minutes): everything divergent, which no tier can misuse.
        return Uniformity {
            divergent: vec![true; prog.nslots as usize],
            divergent_control: vec![true; n],
            after_divergent_exit: vec![Some(0); n],
        };
    };
    // Per branch, the PCs control dependent on it (for the worklist below).
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (pc, bs) in cd.iter().enumerate().take(end) {
        for &b in bs {
            if let Some(d) = dependents.get_mut(b) {
                d.push(pc);
            }
        }
    }
    let mut divergent = vec![false; prog.nslots as usize];
    for &(s, r) in &prog.sregs {
        if sreg_divergent(r) {
            divergent[s as usize] = true;
        }
    }
    let div = |divergent: &[bool], s: Slot| {
        s != NONE && divergent.get(s as usize).copied().unwrap_or(true)
    };
    // Device functions' code runs under divergent control (callers are not analysed).
    let mut divergent_control: Vec<bool> = (0..n).map(|pc| pc >= end).collect();
    loop {
        // Branches that split the live threads: a divergent predicate (or an extra edge to
        // the exit, which has none and splits nothing).
        let splits = |b: usize, divergent: &[bool]| {
            let i = &prog.code[b];
            i.op == Op::Bra && div(divergent, i.guard)
        };
        // An instruction is under divergent control when a branch it depends on splits or is
        // itself under divergent control: propagate from every such branch (a worklist, so
        // each dependence is followed once per round).
        let mut work: Vec<usize> = (0..n.min(prog.code.len()))
            .filter(|&b| splits(b, &divergent) || divergent_control[b])
            .collect();
        while let Some(b) = work.pop() {
            for &pc in &dependents[b] {
                if !divergent_control[pc] {
                    divergent_control[pc] = true;
                    work.push(pc);
                }
            }
        }
        let mut grew = false;
        for (pc, i) in prog.code.iter().enumerate() {
            let dests = crate::ir::defuse::may_write(i, prog);
            if dests
                .iter()
                .all(|&d| divergent.get(d as usize) != Some(&false))
            {
                continue;
            }
            let result_divergent = divergent_control[pc]
                || div(&divergent, i.guard)
                || match i.op {
                    // The block-wide reduction is one value; a barrier for a thread count is
                    // not block-wide.
                    Op::Bar(_) => i.r[2] != NONE || div(&divergent, i.r[1]),
                    Op::LdK { .. } => false,
                    op if inherently_divergent(&op) => true,
                    _ => i.r.iter().any(|&s| div(&divergent, s)),
                };
            if result_divergent {
                for d in dests {
                    if let Some(x) = divergent.get_mut(d as usize) {
                        grew |= !*x;
                        *x = true;
                    }
                }
            }
        }
        if !grew {
            break;
        }
    }
    // What may run after a thread exited on a divergent test (a forward walk from each).
    let mut after_divergent_exit = vec![None; n];
    for &x in &cfg.cond_exits {
        if !div(&divergent, prog.code[x].guard) && !divergent_control[x] {
            continue;
        }
        let mut stack: Vec<usize> = cfg.succ[x].clone();
        while let Some(v) = stack.pop() {
            if v == EXIT || after_divergent_exit[v].is_some() {
                continue;
            }
            after_divergent_exit[v] = Some(x as u32);
            stack.extend(&cfg.succ[v]);
        }
    }
    Uniformity {
        divergent,
        divergent_control,
        after_divergent_exit,
    }
}
