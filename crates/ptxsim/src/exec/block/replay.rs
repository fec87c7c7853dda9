//! Replays of the block tier: a block run again from the record of an earlier block of the
//! same launch, doing only the work whose result can differ from block to block.
//!
//! The blocks of a tutorial kernel mostly run the same instructions with the same threads:
//! the tree reduction's loop counter, its `tid < s` masks, its shared addresses and their race
//! and bounds checks are the same in every block; only the data and the global addresses
//! (through `%ctaid`) differ. The tier records the first block it runs to its end (per worker
//! and launch): each instruction it ran, with the group's threads, the guarded threads and the
//! threads not on their way to an exit, and where each barrier interval began. Later blocks
//! then replay the record:
//!
//! - **Block-variant slots** (`variant`) are those whose value may differ between two blocks
//!   at the same point of the same path: `%ctaid` (and the SM number), anything loaded from
//!   memory, and whatever is computed from them. Everything else (parameters, `%tid`,
//!   `%ntid`, constants and what is computed from them alone) is the same in every block.
//! - **What a replay runs** (`finish`, a backward pass over the record): every store, every
//!   instruction that writes a variant slot, and every instruction whose result a later
//!   instruction that runs reads. The rest (the loop counter, the masks, the shared addresses)
//!   is skipped: no instruction that runs ever reads what they would have written.
//! - **What a replay checks**: each recorded instruction whose guard is a variant slot
//!   computes its guarded threads again, and the replay stops if they differ from the
//!   record's. The path through the code (which instructions run, for which threads) is a
//!   function of those guards, so a replay that passes them all ran the recorded path.
//! - **Shared memory**: when every shared access of the record goes through an address that is
//!   not variant, each barrier interval accesses the same words with the same threads as in
//!   the recorded block, which had no race and no access out of bounds; the replay then skips
//!   those checks (and a unit-stride access does not read its address: the record holds it).
//!   Otherwise shared accesses run with all their checks.
//! - **Fused steps**: a `shfl.sync.down` whose result only the next step's `add` reads runs
//!   with that add as one pass over the lanes (`fuse_adds`).
//!
//! A replay that stops (a guard that differs, or any check of an instruction it runs) leaves
//! no trace: as for any block of the tier, global stores wait until the block ends and shared
//! memory is restored, and the block runs in the tier from its start
//! (`Worker::try_block_tier`). The block's instruction count is the record's.
//!
//! This module keeps the record and decides what a replay runs; it must not run
//! instructions (`exec::block` does).

use crate::ir::{BlockSlot, Inst, MemSpace, Op, Program, SReg, Slot, NONE};

/// What a replay does at a step of the record.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Run {
    /// Nothing (a step kept only to check its guard).
    No,
    /// The instruction, as the tier runs it.
    Op,
    /// A shared load or store without its checks; `Some(c)`: thread `t` at word `c + t`.
    Shared(Option<usize>),
    /// `shfl.sync.down` by a distance and bound that are the same in every block, from lanes
    /// into lanes without the in-range predicate: lanes below `kd` read `sd` lanes up
    /// (`(sd, kd)` as recorded).
    ShflDown(u8, u8),
    /// `ShflDown` and the `add` of the next step (at the PC given) fused: the add's
    /// destination gets each lane's source plus what the shuffle would have read, and the
    /// shuffle's own destination, which no other step reads, is not written (`fuse_adds`).
    ShflDownAdd(u8, u8, u32),
    /// A barrier interval begins.
    Epoch,
}

/// One instruction of a recorded block (masks of 64-thread words, blocks of up to 256
/// threads).
#[derive(Clone, Copy)]
pub(super) struct Step {
    pub pc: u32,
    pub run: Run,
    /// Whether the guard is a variant slot: the guarded threads are computed again.
    pub check: bool,
    /// The group's threads, the guarded ones, and the live threads not on their way to an exit.
    pub m: [u64; 4],
    pub act: [u64; 4],
    pub staying: [u64; 4],
    /// A shared access's unit-stride word (`shared_check`'s answer) when recorded.
    pub unit: Option<usize>,
    /// A shuffle's downward shift when recorded (`block_shfl`).
    pub shfl: Option<(u8, u8)>,
}

/// A worker's record and replay state for one launch.
#[derive(Default)]
pub(super) struct Replay {
    /// Per slot: block-variant (computed when the first record ends).
    variant: Vec<bool>,
    /// The record being made (when `recording`).
    rec: Vec<Step>,
    pub recording: bool,
    /// The steps a replay runs, and the block's instruction count.
    pub steps: Vec<Step>,
    pub count: u64,
    /// Per step of `steps`: whether a *warm* replay skips it (`warm`).
    pub cached: Vec<bool>,
    /// Whether the registers hold what the record (or the last replay) left in them, so that a
    /// replay may skip the `cached` steps: set when a record or a replay ends, cleared when
    /// the tier runs a block from its start.
    pub warm: bool,
    ready: bool,
    /// Records tried, replays tried and replays that stopped.
    records: u32,
    replays: u32,
    missed: u32,
    /// Off for this launch (`Engines::replay` off, a record too long, or too many replays
    /// stopped).
    off: bool,
}

/// Records a worker tries before it gives replays up for the launch.
const RECORDS_MAX: u32 = 4;

/// The longest record (block-instructions and intervals): a longer block is not recorded, and
/// the worker gives replays up for the launch (a record of this length takes about 8 MB).
const STEPS_MAX: usize = 1 << 16;

impl Replay {
    pub fn new(on: bool) -> Self {
        Replay {
            off: !on,
            ..Default::default()
        }
    }

    /// Whether the next block should replay the record.
    pub fn ready(&self) -> bool {
        self.ready && !self.off
    }

    /// Start recording the next block, if no record is ready and one may still be made.
    pub fn start(&mut self) {
        self.recording = !self.off && !self.ready && self.records < RECORDS_MAX;
        if self.recording {
            self.records += 1;
            self.rec.clear();
        }
    }

    /// A recorded instruction (`found` adds what it found when it ran).
    #[inline(always)]
    pub fn push(&mut self, pc: u32, m: &[u64], act: &[u64], staying: &[u64]) {
        if self.rec.len() >= STEPS_MAX {
            self.off = true;
            return;
        }
        let w = |x: &[u64]| {
            let mut a = [0u64; 4];
            for (d, s) in a.iter_mut().zip(x) {
                *d = *s;
            }
            a
        };
        self.rec.push(Step {
            pc,
            run: Run::Op,
            check: false,
            m: w(m),
            act: w(act),
            staying: w(staying),
            unit: None,
            shfl: None,
        });
    }

    /// What the last recorded instruction found: a shared access's unit-stride word, a
    /// shuffle's downward shift.
    #[inline(always)]
    pub fn found(&mut self, unit: Option<usize>, shfl: Option<(u8, u8)>) {
        if let Some(s) = self.rec.last_mut() {
            (s.unit, s.shfl) = (unit, shfl);
        }
    }

    /// A barrier interval begins.
    #[inline(always)]
    pub fn epoch(&mut self) {
        if self.rec.len() >= STEPS_MAX {
            self.off = true;
            return;
        }
        self.rec.push(Step {
            pc: 0,
            run: Run::Epoch,
            check: false,
            m: [0; 4],
            act: [0; 4],
            staying: [0; 4],
            unit: None,
            shfl: None,
        });
    }

    /// The recorded block failed: no record.
    pub fn abandon(&mut self) {
        self.recording = false;
        self.rec.clear();
    }

    /// The recorded block ran to its end with `count` warp-instructions: decide what a replay
    /// runs (module docs).
    pub fn finish(&mut self, prog: &Program, count: u64) {
        self.recording = false;
        if self.off {
            // Too long to keep.
            self.rec.clear();
            return;
        }
        if self.variant.is_empty() {
            self.variant = variant(prog);
        }
        let variant = &self.variant;
        let var = |s: Slot| s != NONE && variant.get(s as usize) != Some(&false);
        let code = &prog.code;
        let shared = |i: &Inst| {
            matches!(
                i.op,
                Op::Ld {
                    space: MemSpace::Shared,
                    ..
                } | Op::St {
                    space: MemSpace::Shared,
                    ..
                }
            )
        };
        // Every shared access through an address that is the same in every block, and no
        // shared atomic (which runs with its checks, against records the others then skip).
        let shared_fixed = self.rec.iter().filter(|s| s.run != Run::Epoch).all(|s| {
            code.get(s.pc as usize).is_none_or(|i| {
                let atomic = matches!(
                    i.op,
                    Op::Atom {
                        space: MemSpace::Shared,
                        ..
                    }
                );
                !atomic && (!shared(i) || !var(i.r[4]))
            })
        });
        let mut read = vec![false; prog.nslots as usize];
        let mark = |read: &mut Vec<bool>, s: Slot| {
            if let Some(r) = read.get_mut(s as usize) {
                *r = true;
            }
        };
        for s in self.rec.iter_mut().rev() {
            if s.run == Run::Epoch {
                continue;
            }
            let Some(i) = code.get(s.pc as usize) else {
                s.run = Run::Op;
                continue;
            };
            s.check = var(i.guard);
            if s.check {
                mark(&mut read, i.guard);
            }
            let runs = match i.op {
                Op::Bra | Op::Exit | Op::Ret | Op::Bar(_) | Op::Nop => false,
                Op::St { .. } | Op::Ld { .. } => true,
                _ => {
                    variant_inst(i, variant)
                        || crate::ir::defuse::may_write(i, prog)
                            .iter()
                            .any(|&d| read.get(d as usize) != Some(&false))
                }
            };
            // (A sign-extending load reads its lanes one by one, through its address.)
            let unit = match i.op {
                Op::Ld { sext: true, .. } => None,
                _ => s.unit,
            };
            // A shuffle whose distance, bound and members are the same in every block, and
            // whose in-range predicate nothing reads.
            let fixed_shfl = matches!(i.op, Op::Shfl(_))
                && i.r[2..5].iter().all(|&x| !var(x))
                && (i.r[5] == NONE
                    || prog.block_slots.get(i.r[5] as usize) == Some(&BlockSlot::Unread));
            s.run = match s.shfl {
                _ if !runs => Run::No,
                _ if shared(i) && shared_fixed => Run::Shared(unit),
                Some((sd, kd)) if fixed_shfl => Run::ShflDown(sd, kd),
                _ => Run::Op,
            };
            if runs {
                let mut unguarded = *i;
                unguarded.guard = NONE;
                let mut reads = crate::ir::defuse::sources(&unguarded);
                match s.run {
                    // Only the source: the rest is in the record.
                    Run::ShflDown(..) => reads = vec![i.r[1]],
                    // A unit-stride shared access does not read its address in a replay.
                    Run::Shared(Some(_)) => reads.retain(|&x| x != i.r[4]),
                    _ if matches!(i.op, Op::Shfl(_)) => reads.push(i.r[4]),
                    _ => {}
                }
                for x in reads {
                    mark(&mut read, x);
                }
            }
        }
        dead_writes(prog, &mut self.rec);
        let writes = writes_per_slot(prog, &self.rec);
        self.steps.clear();
        self.steps.extend(
            self.rec
                .iter()
                .filter(|s| s.run != Run::No || s.check)
                .copied(),
        );
        self.cached = cached(prog, variant, &writes, &self.steps);
        fuse_adds(prog, &mut self.steps, &mut self.cached);
        self.rec.clear();
        self.count = count;
        self.ready = true;
        // The registers hold what the recorded block left.
        self.warm = true;
    }

    /// A replay ran (`ok`) or stopped; replays stop for the launch when most stop.
    pub fn replayed(&mut self, ok: bool) {
        self.replays += 1;
        if !ok {
            self.missed += 1;
            if self.missed >= 4 && self.missed * 2 > self.replays {
                self.off = true;
            }
        }
    }
}

/// Whether `i` is an operation on registers alone whose writes `dead_writes` and `cached` may
/// leave out (no memory access, shuffle or control).
fn register_op(i: &Inst) -> bool {
    !matches!(
        i.op,
        Op::Ld { .. }
            | Op::St { .. }
            | Op::Atom { .. }
            | Op::Shfl(_)
            | Op::Bra
            | Op::Exit
            | Op::Ret
            | Op::Bar(_)
            | Op::Nop
    )
}

/// Steps that run only to write lanes that a later step overwrites, for each of their
/// threads, before any step that runs (or a guard that a replay checks) reads them: they run
/// no more (`Run::No`). A backward pass over the record with, per slot, the threads whose
/// value is overwritten before it is read (`reduceWarpShuffle`'s `mov %r50, 0`, which its load
/// overwrites for every thread in range).
fn dead_writes(prog: &Program, rec: &mut [Step]) {
    let lanes = |s: Slot| prog.block_slots.get(s as usize) == Some(&BlockSlot::Lanes);
    let mut killed = vec![[0u64; 4]; prog.nslots as usize];
    let covers = |k: &[u64; 4], a: &[u64; 4]| k.iter().zip(a).all(|(k, a)| a & !k == 0);
    for s in rec.iter_mut().rev() {
        let Some(i) = prog.code.get(s.pc as usize) else {
            continue;
        };
        if s.check {
            if let Some(k) = killed.get_mut(i.guard as usize) {
                *k = [0; 4];
            }
        }
        if matches!(s.run, Run::No | Run::Epoch) {
            continue;
        }
        let dests = crate::ir::defuse::may_write(i, prog);
        if register_op(i)
            && dests.len() == 1
            && lanes(dests[0])
            && killed
                .get(dests[0] as usize)
                .is_some_and(|k| covers(k, &s.act))
        {
            s.run = Run::No;
            continue;
        }
        for &d in &dests {
            if let (true, Some(k)) = (lanes(d), killed.get_mut(d as usize)) {
                for (k, a) in k.iter_mut().zip(&s.act) {
                    *k |= a;
                }
            }
        }
        let mut unguarded = *i;
        unguarded.guard = NONE;
        let members = matches!(i.op, Op::Shfl(_)).then_some(i.r[4]);
        for x in crate::ir::defuse::sources(&unguarded)
            .into_iter()
            .chain(members)
        {
            if let Some(k) = killed.get_mut(x as usize) {
                // A shuffle reads other threads' lanes: all of them count as read.
                if matches!(i.op, Op::Shfl(_)) {
                    *k = [0; 4];
                }
                for (k, a) in k.iter_mut().zip(&s.act) {
                    *k &= !a;
                }
            }
        }
    }
}

/// A reduction's `shfl.sync.down` followed by the `add` of its result and its source (the
/// shuffle step and the next one, for the same threads, unguarded) becomes one step
/// (`Run::ShflDownAdd`) when no other step reads the shuffle's destination: one pass over the
/// lanes instead of a row written and read again. Neither step may be one that a warm replay
/// skips (`cached`), and all three slots hold lanes.
fn fuse_adds(prog: &Program, steps: &mut Vec<Step>, cached: &mut Vec<bool>) {
    let lanes = |s: Slot| prog.block_slots.get(s as usize) == Some(&BlockSlot::Lanes);
    let inst = |s: &Step| prog.code.get(s.pc as usize).filter(|_| s.run != Run::Epoch);
    // Per slot: how many steps read it (sources, members, checked guards).
    let mut reads = vec![0u32; prog.nslots as usize];
    for s in steps.iter() {
        let Some(i) = inst(s) else { continue };
        let mut unguarded = *i;
        unguarded.guard = NONE;
        let members = matches!(i.op, Op::Shfl(_)).then_some(i.r[4]);
        let guard = s.check.then_some(i.guard);
        for x in crate::ir::defuse::sources(&unguarded)
            .into_iter()
            .chain(members)
            .chain(guard)
        {
            if let Some(r) = reads.get_mut(x as usize) {
                *r += 1;
            }
        }
    }
    let mut n = 0;
    while n + 1 < steps.len() {
        let (s, t) = (&steps[n], &steps[n + 1]);
        if let (Run::ShflDown(sd, kd), Run::Op, Some(sh), Some(add)) =
            (s.run, t.run, inst(s), inst(t))
        {
            let (d, src) = (sh.r[0], sh.r[1]);
            let operands = [add.r[1], add.r[2]];
            if add.op == Op::Add
                && add.guard == NONE
                && !s.check
                && !t.check
                && s.act == t.act
                && s.m == t.m
                && !cached[n]
                && !cached[n + 1]
                && d != src
                && (operands == [d, src] || operands == [src, d])
                && reads.get(d as usize) == Some(&1)
                && [d, src, add.r[0]].iter().all(|&x| lanes(x))
            {
                steps[n].run = Run::ShflDownAdd(sd, kd, t.pc);
                steps.remove(n + 1);
                cached.remove(n + 1);
            }
        }
        n += 1;
    }
}

/// Per step of a replay: whether a warm replay (`Replay::warm`) may skip it. A step qualifies
/// when it runs only because later steps read what it writes (a register operation whose
/// sources are the same in every block), and its one destination is written by no other step
/// of the record (`writes`, per slot) and not read before it is written (`Program::entry_live`): the destination
/// then holds, for the threads that read it, the value this step wrote in the recorded
/// block, which is the value it would write again.
fn cached(prog: &Program, variant: &[bool], writes: &[u32], steps: &[Step]) -> Vec<bool> {
    steps
        .iter()
        .map(|s| {
            let Some(i) = prog.code.get(s.pc as usize) else {
                return false;
            };
            let dests = crate::ir::defuse::may_write(i, prog);
            s.run == Run::Op
                && !s.check
                && register_op(i)
                && !variant_inst(i, variant)
                && dests.len() == 1
                && writes.get(dests[0] as usize) == Some(&1)
                && !prog.entry_live.contains(&dests[0])
        })
        .collect()
}

/// Per slot: how many steps of the whole record write it (those a replay skips included: the
/// recorded block ran them all).
fn writes_per_slot(prog: &Program, rec: &[Step]) -> Vec<u32> {
    let mut writes = vec![0u32; prog.nslots as usize];
    for s in rec.iter().filter(|s| s.run != Run::Epoch) {
        if let Some(i) = prog.code.get(s.pc as usize) {
            for d in crate::ir::defuse::may_write(i, prog) {
                if let Some(w) = writes.get_mut(d as usize) {
                    *w += 1;
                }
            }
        }
    }
    writes
}

/// Whether `i`'s result may differ between blocks even where its sources do not: loads.
fn variant_op(i: &Inst) -> bool {
    matches!(i.op, Op::Ld { .. } | Op::Atom { .. })
}

/// Whether `i` may write a block-variant value (its guard aside: replays check guards).
fn variant_inst(i: &Inst, variant: &[bool]) -> bool {
    let mut unguarded = *i;
    unguarded.guard = NONE;
    let members = matches!(i.op, Op::Shfl(_)).then_some(i.r[4]);
    variant_op(i)
        || crate::ir::defuse::sources(&unguarded)
            .into_iter()
            .chain(members)
            .any(|s| variant.get(s as usize) != Some(&false))
}

/// Per slot: whether its value may differ between two blocks of a launch at the same point of
/// the same path (module docs).
pub(super) fn variant(prog: &Program) -> Vec<bool> {
    let n = prog.nslots as usize;
    let mut v = vec![false; n];
    for &(s, r) in &prog.sregs {
        let same = matches!(
            r,
            SReg::Tid(_)
                | SReg::Ntid(_)
                | SReg::Nctaid(_)
                | SReg::LaneId
                | SReg::WarpId
                | SReg::NWarpId
                | SReg::GridId
                | SReg::LaneMaskEq
                | SReg::LaneMaskLt
                | SReg::LaneMaskLe
                | SReg::LaneMaskGt
                | SReg::LaneMaskGe
                | SReg::DynSmem
                | SReg::TotalSmem
                | SReg::GridWs(_)
        );
        if let (false, Some(x)) = (same, v.get_mut(s as usize)) {
            *x = true;
        }
    }
    loop {
        let mut changed = false;
        for i in &prog.code {
            if !variant_inst(i, &v) {
                continue;
            }
            for d in crate::ir::defuse::may_write(i, prog) {
                if let Some(x) = v.get_mut(d as usize) {
                    changed |= !*x;
                    *x = true;
                }
            }
        }
        if !changed {
            return v;
        }
    }
}
