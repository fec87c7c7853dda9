//! Shared-memory loads and stores in compiled code: runs of them checked at once, bounds,
//! alignment and the race checker's records (`check::Shadow`).
//!
//! Lanes run one after another through a region, which is what CUDA allows between barriers
//! as long as no two threads touch the same word with a write among them (a race, which the
//! checker reports). A *run* is a straight-line stretch of unguarded shared accesses (whole
//! words only) with nothing between them that may leave the region (no branch, leader or
//! global access) and whose address registers keep their values from the first access on.
//! Everything about a run is checked at its first access, the *head*: once a lane passes the
//! head it executes every access of the run, so the checks and records made there are the
//! accesses'. The lane leaves to the interpreter, before the head (which then executes the
//! whole run with its own checks and reports), when
//! - an access is outside the block's shared memory or the lowest address of a register is
//!   misaligned for the run (the interpreter reports what is wrong);
//! - a word has per-byte records (after sub-word accesses);
//! - a word's records show an access of this barrier epoch by another thread that could
//!   conflict: for a load a write, for a store a write or a read (some are no race, for example
//!   within a warp across `__syncwarp`: the interpreter decides);
//! - the epoch has had no write yet (reads are only logged then, see below) and the run writes.
//!
//! Otherwise the head updates the records as `Shadow::access` would for each access in order
//! and the accesses themselves are plain loads and stores. Until the first write of an epoch,
//! as the interpreter does for its warps, reads are not recorded but logged, one entry per
//! arithmetic progression of addresses (`Prog`), and replayed into the records at the first
//! write (`Shadow::go_eager`); an entry holds an 18-bit offset and a 10-bit thread index
//! (`SHARED_LOG_LIMIT`, blocks of at most 1,024 threads). The caller (`exec::jit_run`) gives compiled code either the log
//! or records that hold every access of the epoch so far (`Shadow::compiled_log`). With the
//! checker off only bounds and alignment are checked. This module must not report anything.

use std::collections::{HashMap, HashSet};

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{I32, I64};
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Value};

use super::super::call::*;
use super::{access, Em};
use crate::ir::defuse::{dests, shared_access};
use crate::ir::{Inst, Op, Slot, NONE};

/// One shared access: instruction index, its run's base index, immediate, bytes, whether a
/// store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Member {
    pub k: usize,
    pub base: usize,
    pub imm: i64,
    pub total: u64,
    pub write: bool,
}

/// Reads `count` accesses of `words` words each from `imm` on, `stride` bytes apart, through
/// base `base`: one entry of the compiled read log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Prog {
    pub base: usize,
    pub imm: i64,
    pub count: u32,
    pub stride: u64,
    pub words: u64,
}

/// A run of shared accesses checked at its head (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Run {
    /// The address registers, and per register its lowest immediate, the bytes from there to
    /// the end of the highest access, and the alignment its lowest address needs.
    pub bases: Vec<(Slot, i64, u64, u64)>,
    pub members: Vec<Member>,
    pub progs: Vec<Prog>,
    pub writes: bool,
}

/// The most accesses a log entry covers, and the longest stride it holds (in words).
const MAX_COUNT: u32 = 64;
const MAX_STRIDE_WORDS: u64 = 1023;

impl Run {
    /// The run with `m` (through `slot`) added, if its base keeps a consistent alignment.
    fn with(&self, slot: Slot, m: Member) -> Option<Run> {
        let mut r = self.clone();
        let b = match r.bases.iter().position(|b| b.0 == slot) {
            Some(b) => b,
            None => {
                r.bases.push((slot, m.imm, 0, 1));
                r.bases.len() - 1
            }
        };
        r.members.push(Member { base: b, ..m });
        r.writes |= m.write;
        let of_base: Vec<&Member> = r.members.iter().filter(|x| x.base == b).collect();
        let lo = of_base.iter().map(|x| x.imm).min()?;
        let hi = of_base.iter().map(|x| x.imm + x.total as i64).max()?;
        let align = of_base.iter().map(|x| x.total.min(16)).max()?;
        // Each access keeps its own alignment relative to the lowest one.
        if !of_base
            .iter()
            .all(|x| (x.imm - lo).rem_euclid(x.total.min(16) as i64) == 0)
        {
            return None;
        }
        r.bases[b] = (slot, lo, (hi - lo) as u64, align);
        Some(r)
    }

    /// The log entries of the run's reads: per base, by address, maximal progressions.
    fn finish(mut self) -> Run {
        let mut progs = Vec::new();
        for b in 0..self.bases.len() {
            let mut reads: Vec<(i64, u64)> = self
                .members
                .iter()
                .filter(|m| m.base == b && !m.write)
                .map(|m| (m.imm, m.total / 4))
                .collect();
            reads.sort_unstable();
            // The same words read again by the same thread record nothing new.
            reads.dedup();
            for (imm, words) in reads {
                let joins = progs.last_mut().filter(|p: &&mut Prog| {
                    let next = p.imm + p.stride as i64 * p.count as i64;
                    p.base == b
                        && p.words == words
                        && p.count < MAX_COUNT
                        && (p.count == 1 && imm > p.imm || next == imm)
                });
                match joins {
                    Some(p) if p.count == 1 && ((imm - p.imm) as u64) / 4 <= MAX_STRIDE_WORDS => {
                        p.stride = (imm - p.imm) as u64;
                        p.count = 2;
                    }
                    Some(p) if p.count > 1 => p.count += 1,
                    _ => progs.push(Prog {
                        base: b,
                        imm,
                        count: 1,
                        stride: 0,
                        words,
                    }),
                }
            }
        }
        self.progs = progs;
        self
    }
}

/// Per instruction, the head of the run it belongs to, and the runs by head.
pub(super) fn shared_runs(
    code: &[Inst],
    leaders: &[bool],
) -> (Vec<Option<usize>>, HashMap<usize, Run>) {
    let mut head_of = vec![None; code.len()];
    let mut runs = HashMap::new();
    // The open run: its head, the run, and the slots written since the head.
    let mut open: Option<(usize, Run, HashSet<Slot>)> = None;
    let mut close = |open: &mut Option<(usize, Run, HashSet<Slot>)>| {
        if let Some((h, r, _)) = open.take() {
            runs.insert(h, r.finish());
        }
    };
    for (k, i) in code.iter().enumerate() {
        if leaders[k] || i.op == Op::Bra || access(i).is_some() {
            close(&mut open);
        }
        if let Some((slot, imm, total, write)) = shared_access(i) {
            let m = Member {
                k,
                base: 0,
                imm,
                total,
                write,
            };
            let joined = match (&open, i.guard == NONE) {
                (Some((h, r, written)), true) if !written.contains(&slot) => {
                    r.with(slot, m).map(|r| (*h, r))
                }
                _ => None,
            };
            match joined {
                Some((h, r)) => {
                    head_of[k] = Some(h);
                    if let Some(o) = open.as_mut() {
                        o.1 = r;
                    }
                }
                None => {
                    close(&mut open);
                    head_of[k] = Some(k);
                    if let Some(r) = Run::default().with(slot, m) {
                        open = Some((k, r, HashSet::new()));
                    }
                    if i.guard != NONE {
                        // A guarded access may not run: it is a run of its own.
                        close(&mut open);
                    }
                }
            }
        }
        if let Some(o) = open.as_mut() {
            o.2.extend(dests(i));
        }
    }
    close(&mut open);
    (head_of, runs)
}

/// Loads of context fields that stay the same through a call (`JitCtx::set_shared`), which
/// Cranelift may then merge and move.
fn fixed() -> MemFlagsData {
    MemFlagsData::trusted().with_readonly().with_can_move()
}

/// Reader-set ids of `check::Rec`: several warps, or several threads of one warp (low bits).
const MULTI_WARP: i64 = 0xFFFF;
const MULTI_IN_WARP: i64 = 0x8000;

impl Em<'_, '_> {
    /// The host address of the shared access at `pc`, checked with its run at the run's head
    /// (see the module docs).
    pub(super) fn shared_addr(&mut self, pc: u32) -> Value {
        let k = (pc - self.lo) as usize;
        let h = self.shared_head[k].unwrap_or(k);
        if h == k {
            self.check_run(pc, h);
        }
        match self.shared_host.get(&k).copied() {
            Some((host, delta)) => self.b.ins().iadd_imm_s(host, delta),
            // Every access has a run (`shared_runs`); were one unchecked, the interpreter
            // would execute it. The code after the exit is unreachable.
            None => {
                let pending = self.pending;
                self.exit_at(pc, 1);
                self.pending = pending;
                let dead = self.b.create_block();
                self.b.switch_to_block(dead);
                self.b.seal_block(dead);
                self.b.ins().iconst(I64, 0)
            }
        }
    }

    /// At the head `h` (at `pc`) of a run: its checks, records or log entries, and the host
    /// address of each access (`shared_host`).
    fn check_run(&mut self, pc: u32, h: usize) {
        let Some(run) = self.shared_runs.get(&h).cloned() else {
            return;
        };
        // Each register's lowest offset (32-bit, as the interpreter takes it), in bounds
        // with the run's bytes and aligned.
        let len = self.b.ins().load(I64, fixed(), self.ctx, CTX_SHARED_LEN);
        let mut offs = Vec::new();
        let mut bad: Option<Value> = None;
        for &(slot, lo, span, align) in &run.bases {
            let base = self.get(slot);
            let a = self.b.ins().iadd_imm_s(base, lo);
            let a32 = self.b.ins().ireduce(I32, a);
            let off = self.b.ins().uextend(I64, a32);
            let end = self.b.ins().iadd_imm_s(off, span as i64);
            let outside = self.b.ins().icmp(IntCC::UnsignedGreaterThan, end, len);
            let mis = self.b.ins().band_imm_s(off, align as i64 - 1);
            let mis = self.b.ins().icmp_imm_s(IntCC::NotEqual, mis, 0);
            let b = self.b.ins().bor(outside, mis);
            bad = Some(match bad {
                Some(x) => self.b.ins().bor(x, b),
                None => b,
            });
            offs.push(off);
        }
        if let Some(bad) = bad {
            let ok = self.b.create_block();
            self.brif_exit(bad, ok, &[], pc, 1);
            self.b.switch_to_block(ok);
            self.b.seal_block(ok);
        }
        let race = self.b.ins().load(I32, fixed(), self.ctx, CTX_RACE);
        let track = self.b.create_block();
        let go = self.b.create_block();
        self.b.ins().brif(race, track, &[], go, &[]);
        self.b.switch_to_block(track);
        self.b.seal_block(track);
        self.track(pc, &run, &offs);
        self.b.ins().jump(go, &[]);
        self.b.switch_to_block(go);
        self.b.seal_block(go);
        let sh = self.b.ins().load(I64, fixed(), self.ctx, CTX_SHARED);
        let hosts: Vec<Value> = offs.iter().map(|&o| self.b.ins().iadd(sh, o)).collect();
        for m in &run.members {
            let (_, lo, _, _) = run.bases[m.base];
            self.shared_host.insert(m.k, (hosts[m.base], m.imm - lo));
        }
    }

    /// The race checker's part of a run's head (`offs`: each base's lowest offset).
    fn track(&mut self, pc: u32, run: &Run, offs: &[Value]) {
        let fl = MemFlagsData::trusted();
        let ctx = self.ctx;
        let left = self.b.ins().load(I32, fl, ctx, CTX_LEFT);
        let lane = self.b.ins().ctz(left);
        let tid0 = self.b.ins().load(I32, fixed(), ctx, CTX_TID0);
        let tid = self.b.ins().iadd(tid0, lane);
        let tid = self.b.ins().uextend(I64, tid);
        let wep = self.b.ins().uload32(fixed(), ctx, CTX_WEP);
        let wep = self.b.ins().band_imm_s(wep, 0xFFFF);
        let cap = self.b.ins().load(I32, fixed(), ctx, CTX_LOG_CAP);
        let logging = self.b.create_block();
        let eager = self.b.create_block();
        let done = self.b.create_block();
        self.b.ins().brif(cap, logging, &[], eager, &[]);
        self.b.switch_to_block(logging);
        self.b.seal_block(logging);
        if run.writes {
            // The epoch's first write: the interpreter replays the logs.
            let pending = self.pending;
            self.exit_at(pc, 1);
            self.pending = pending;
        } else {
            self.log_reads(pc, run, offs, tid, wep, cap);
            self.b.ins().jump(done, &[]);
        }
        self.b.switch_to_block(eager);
        self.b.seal_block(eager);
        self.track_records(pc, run, offs, tid, wep);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
        self.b.seal_block(done);
    }

    /// Append the run's log entries (`check::Shadow`'s `clog` format: offset | count - 1 <<
    /// 18 | stride in words << 24 | log2 words << 34 | thread << 36 | wep << 48), or leave
    /// when the log is full.
    fn log_reads(
        &mut self,
        pc: u32,
        run: &Run,
        offs: &[Value],
        tid: Value,
        wep: Value,
        cap: Value,
    ) {
        let fl = MemFlagsData::trusted();
        let ctx = self.ctx;
        let n = self.b.ins().load(I32, fl, ctx, CTX_LOG_LEN);
        let need = run.progs.len() as i64;
        let after = self.b.ins().iadd_imm_s(n, need);
        let full = self.b.ins().icmp(IntCC::UnsignedGreaterThan, after, cap);
        let room = self.b.create_block();
        self.brif_exit(full, room, &[], pc, 1);
        self.b.switch_to_block(room);
        self.b.seal_block(room);
        let t = self.b.ins().ishl_imm_s(tid, 36);
        let w = self.b.ins().ishl_imm_s(wep, 48);
        let who = self.b.ins().bor(t, w);
        let log = self.b.ins().load(I64, fixed(), ctx, CTX_LOG);
        let n64 = self.b.ins().uextend(I64, n);
        let at = self.b.ins().ishl_imm_s(n64, 3);
        let at = self.b.ins().iadd(log, at);
        for (j, p) in run.progs.iter().enumerate() {
            let (_, lo, _, _) = run.bases[p.base];
            let off = self.b.ins().iadd_imm_s(offs[p.base], p.imm - lo);
            let fixed_bits = ((p.count as i64 - 1) << 18)
                | (((p.stride / 4) as i64) << 24)
                | ((p.words.trailing_zeros() as i64) << 34);
            let e = self.b.ins().bor_imm_s(off, fixed_bits);
            let e = self.b.ins().bor(e, who);
            self.b.ins().store(fl, e, at, 8 * j as i32);
        }
        self.b.ins().store(fl, after, ctx, CTX_LOG_LEN);
    }

    /// Check and update the records of every word of the run, in order, when they hold
    /// every access of the epoch so far; leaves before the head when one asks for the
    /// interpreter.
    fn track_records(&mut self, pc: u32, run: &Run, offs: &[Value], tid: Value, wep: Value) {
        let fl = MemFlagsData::trusted();
        let ctx = self.ctx;
        let epoch = self.b.ins().uload32(fixed(), ctx, CTX_EPOCH);
        // This thread's record without and with its id: (epoch, wep, id).
        let hi = self.b.ins().ishl_imm_s(epoch, 32);
        let wep16 = self.b.ins().ishl_imm_s(wep, 16);
        let hi = self.b.ins().bor(hi, wep16);
        let me = self.b.ins().bor(hi, tid);
        let wbase = self.b.ins().load(I64, fixed(), ctx, CTX_SHADOW_W);
        let rbase = self.b.ins().load(I64, fixed(), ctx, CTX_SHADOW_R);
        let bbase = self.b.ins().load(I64, fixed(), ctx, CTX_SHADOW_BM);
        // Per base: its first word's writer record, reader record and byte-mode flag.
        let mut at = Vec::new();
        for &off in offs {
            let word = self.b.ins().ushr_imm_s(off, 2);
            let by8 = self.b.ins().ishl_imm_s(word, 3);
            let w = self.b.ins().iadd(wbase, by8);
            let r = self.b.ins().iadd(rbase, by8);
            let bm = self.b.ins().iadd(bbase, word);
            at.push((w, r, bm));
        }
        // Each word of each access: (records, word offset from its base's first word).
        let words: Vec<(usize, i32, bool)> = run
            .members
            .iter()
            .flat_map(|m| {
                let (_, lo, _, _) = run.bases[m.base];
                let first = ((m.imm - lo) / 4) as i32;
                (0..(m.total / 4) as i32).map(move |j| (m.base, first + j, m.write))
            })
            .collect();
        // Another thread's access of this epoch: same epoch bits, another id.
        let by_other = |em: &mut Self, rec: Value| -> Value {
            let x = em.b.ins().bxor(rec, me);
            let e = em.b.ins().ushr_imm_s(x, 32);
            let same = em.b.ins().icmp_imm_s(IntCC::Equal, e, 0);
            let id = em.b.ins().band_imm_s(x, 0xFFFF);
            let other = em.b.ins().icmp_imm_s(IntCC::NotEqual, id, 0);
            em.b.ins().band(same, other)
        };
        let mut leave: Option<Value> = None;
        for &(b, j, write) in &words {
            let (w, r, bm) = at[b];
            let bytes = self.b.ins().uload8(I32, fl, bm, j);
            let mut bad = self.b.ins().icmp_imm_s(IntCC::NotEqual, bytes, 0);
            let wr = self.b.ins().load(I64, fl, w, 8 * j);
            let c = by_other(self, wr);
            bad = self.b.ins().bor(bad, c);
            if write {
                let rr = self.b.ins().load(I64, fl, r, 8 * j);
                let c = by_other(self, rr);
                bad = self.b.ins().bor(bad, c);
            }
            leave = Some(match leave {
                Some(l) => self.b.ins().bor(l, bad),
                None => bad,
            });
        }
        if let Some(leave) = leave {
            let ok = self.b.create_block();
            self.brif_exit(leave, ok, &[], pc, 1);
            self.b.switch_to_block(ok);
            self.b.seal_block(ok);
        }
        // Updates, in order (a word read twice sees its first update).
        let warp = self.b.ins().ushr_imm_s(tid, 5);
        let in_warp = self.b.ins().bor_imm_s(warp, MULTI_IN_WARP);
        let all = self.b.ins().iconst(I64, MULTI_WARP);
        let hi_all = self.b.ins().bor(hi, all);
        let hi_in_warp = self.b.ins().bor(hi, in_warp);
        for &(b, j, write) in &words {
            let (w, r, _) = at[b];
            if write {
                self.b.ins().store(fl, me, w, 8 * j);
                continue;
            }
            let rr = self.b.ins().load(I64, fl, r, 8 * j);
            // Most reads find a record they leave as it is: this thread's, or a set of
            // threads of this epoch that holds it already.
            let c1 = self.b.ins().icmp(IntCC::Equal, rr, me);
            let c2 = self.b.ins().icmp(IntCC::Equal, rr, hi_all);
            let c3 = self.b.ins().icmp(IntCC::Equal, rr, hi_in_warp);
            let c = self.b.ins().bor(c1, c2);
            let stable = self.b.ins().bor(c, c3);
            let update = self.b.create_block();
            let next = self.b.create_block();
            self.b.ins().brif(stable, next, &[], update, &[]);
            self.b.switch_to_block(update);
            self.b.seal_block(update);
            // `check::add_reader`: a record of an earlier epoch is replaced by this thread;
            // a set of this warp's threads, or one thread of this warp, grows to this warp's
            // set; anything else to the set of several warps.
            let e = self.b.ins().ushr_imm_s(rr, 32);
            let fresh = self.b.ins().icmp(IntCC::NotEqual, e, epoch);
            let t = self.b.ins().band_imm_s(rr, 0xFFFF);
            // A set (MULTI_WARP has the set bit too, and its warp bits are no warp's).
            let set = self.b.ins().band_imm_s(t, MULTI_IN_WARP);
            let tw = self.b.ins().band_imm_s(t, MULTI_IN_WARP - 1);
            let mine = self.b.ins().icmp(IntCC::Equal, tw, warp);
            let as_set = self.b.ins().select(mine, t, all);
            let same_thread = self.b.ins().icmp(IntCC::Equal, t, tid);
            let t_warp = self.b.ins().ushr_imm_s(t, 5);
            let same_warp = self.b.ins().icmp(IntCC::Equal, t_warp, warp);
            let grown = self.b.ins().select(same_warp, in_warp, all);
            let as_one = self.b.ins().select(same_thread, t, grown);
            let id = self.b.ins().select(set, as_set, as_one);
            let id = self.b.ins().select(fresh, tid, id);
            let rec = self.b.ins().bor(hi, id);
            self.b.ins().store(fl, rec, r, 8 * j);
            self.b.ins().jump(next, &[]);
            self.b.switch_to_block(next);
            self.b.seal_block(next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::test_code::{add, inst, ld};
    use super::*;
    use crate::ir::MemSpace;

    /// `ld.shared` (or `st.shared` when `store`) of `words` words at `[base + imm]`.
    fn sh(base: Slot, imm: i64, words: u8, store: bool) -> Inst {
        let (size, n) = if words == 2 { (8, 1) } else { (4, words) };
        let op = if store {
            Op::St {
                space: MemSpace::Shared,
                size,
                n,
            }
        } else {
            Op::Ld {
                space: MemSpace::Shared,
                size,
                n,
                sext: false,
            }
        };
        let mut i = inst(op, [10, 11, 12, 13, base]);
        i.imm = imm;
        i
    }

    fn runs(code: &[Inst]) -> (Vec<Option<usize>>, HashMap<usize, Run>) {
        shared_runs(code, &vec![false; code.len()])
    }

    fn prog(base: usize, imm: i64, count: u32, stride: u64, words: u64) -> Prog {
        Prog {
            base,
            imm,
            count,
            stride,
            words,
        }
    }

    #[test]
    fn one_run_per_stretch_with_a_log_entry_per_progression() {
        // Two registers interleaved as in a tiled matrix product, with arithmetic between,
        // a repeated word and a vector.
        let mut code = Vec::new();
        for k in 0..4 {
            code.push(sh(1, 4 * k, 1, false));
            code.push(sh(2, 64 * k, 1, false));
            code.push(add(20, 20, 21));
        }
        code.push(sh(1, 0, 1, false));
        code.push(sh(2, 1000, 2, false));
        let (head, runs) = runs(&code);
        assert!(head.iter().enumerate().all(|(k, h)| match code[k].op {
            Op::Add => h.is_none(),
            _ => *h == Some(0),
        }));
        let r = &runs[&0];
        assert_eq!(r.bases, vec![(1, 0, 16, 4), (2, 0, 1008, 8)]);
        assert!(!r.writes);
        assert_eq!(
            r.progs,
            vec![
                prog(0, 0, 4, 4, 1),
                prog(1, 0, 4, 64, 1),
                prog(1, 1000, 1, 0, 2)
            ]
        );
    }

    #[test]
    fn runs_end_where_a_lane_may_leave_or_an_address_changes() {
        let mut guarded = sh(1, 8, 1, false);
        guarded.guard = 30;
        let code = vec![
            sh(1, 0, 1, false),
            sh(1, 4, 1, true),
            ld(40, 41),         // a global access may leave the region
            sh(1, 8, 1, false), // a new run
            add(1, 1, 22),      // its address register changes
            sh(1, 12, 1, false),
            guarded,             // a run of its own
            sh(1, 16, 1, false), // a new run
            sh(1, 18, 1, false), // misaligned against 16: a new run
        ];
        let (head, runs) = runs(&code);
        assert_eq!(
            head,
            vec![
                Some(0),
                Some(0),
                None,
                Some(3),
                None,
                Some(5),
                Some(6),
                Some(7),
                Some(8)
            ]
        );
        assert!(runs[&0].writes);
        assert_eq!(runs[&0].progs, vec![prog(0, 0, 1, 0, 1)]);
        assert_eq!(runs.len(), 6);
    }

    #[test]
    fn long_or_wide_progressions_take_several_entries() {
        // 70 words in a row: 64 and 6. Strides past 1,023 words: one entry each.
        let mut code: Vec<Inst> = (0..70).map(|k| sh(1, 4 * k, 1, false)).collect();
        code.extend((0..3).map(|k| sh(2, 4096 * k, 1, false)));
        let (_, runs) = runs(&code);
        assert_eq!(
            runs[&0].progs,
            vec![
                prog(0, 0, 64, 4, 1),
                prog(0, 256, 6, 4, 1),
                prog(1, 0, 1, 0, 1),
                prog(1, 4096, 1, 0, 1),
                prog(1, 8192, 1, 0, 1)
            ]
        );
    }
}
