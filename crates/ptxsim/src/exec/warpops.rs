//! Warp-collective operations: `shfl.sync`, `vote.sync`, `match.sync`, `redux.sync`.
//!
//! They act on the lanes of the running group (the lanes that execute the instruction); a
//! shuffle that reads a lane outside that group gets that lane's stale register value and,
//! with the checker on, a non-fatal `InactiveLaneShuffle` report.

use super::alu::{self, each};
use super::{pred_mask, Warp, Worker};
use crate::ir::{Inst, ReduxOp, ShflMode, VoteMode, NONE};
use crate::CheckKind;

impl Worker<'_> {
    pub(super) fn shfl(&mut self, w: &mut Warp, i: &Inst, m: u32, pc: u32, mode: ShflMode) {
        let a = w.regs[i.r[1] as usize];
        let b = w.regs[i.r[2] as usize];
        let c = w.regs[i.r[3] as usize];
        let members = w.regs[i.r[4] as usize];
        let mut out = w.regs[i.r[0] as usize];
        let mut pred = [0u64; 32];
        let mut bad: Option<(usize, usize)> = None;
        each(m, |l| {
            let lane = l as i32;
            let bval = (b[l] & 31) as i32;
            let cval = (c[l] & 31) as i32;
            let segmask = ((c[l] >> 8) & 31) as i32;
            let max_lane = (lane & segmask) | (cval & !segmask);
            let min_lane = lane & segmask;
            let (j, ok) = match mode {
                ShflMode::Up => {
                    let j = lane - bval;
                    (j, j >= max_lane)
                }
                ShflMode::Down => {
                    let j = lane + bval;
                    (j, j <= max_lane)
                }
                ShflMode::Bfly => {
                    let j = lane ^ bval;
                    (j, j <= max_lane)
                }
                ShflMode::Idx => {
                    let j = min_lane | (bval & !segmask);
                    (j, j <= max_lane)
                }
            };
            let src = if ok { (j & 31) as usize } else { l };
            if (m >> src) & 1 == 0 || (members[l] >> src) & 1 == 0 {
                bad.get_or_insert((l, src));
            }
            out[l] = a[src];
            pred[l] = ok as u64;
        });
        w.regs[i.r[0] as usize] = out;
        if i.r[5] != NONE {
            let p = &mut w.regs[i.r[5] as usize];
            each(m, |l| p[l] = pred[l]);
        }
        if let (Some((l, src)), true) = (bad, self.ctx.check) {
            let (x, y, z) = self.thread_of(w.idx, src);
            let r = self.report(
                CheckKind::InactiveLaneShuffle,
                w.idx,
                l,
                pc,
                0,
                0,
                "",
                None,
                format!(
                    "shuffle reads lane {src} (thread ({x},{y},{z})), which is not executing this \
                     shfl.sync or is not in its member mask: the value is undefined"
                ),
            );
            self.note(r, pc);
        }
    }
}

pub(super) fn vote(w: &mut Warp, i: &Inst, m: u32, mode: VoteMode, neg: bool) {
    let p = pred_mask(&w.regs[i.r[1] as usize], neg) & m;
    let v: u64 = match mode {
        VoteMode::All => (p == m) as u64,
        VoteMode::Any => (p != 0) as u64,
        VoteMode::Uni => (p == 0 || p == m) as u64,
        VoteMode::Ballot => p as u64,
    };
    let d = &mut w.regs[i.r[0] as usize];
    each(m, |l| d[l] = v);
}

pub(super) fn match_any(w: &mut Warp, i: &Inst, m: u32, bits: u8) {
    let a = w.regs[i.r[1] as usize];
    let mut out = [0u64; 32];
    each(m, |l| {
        let mut same = 0u32;
        each(m, |k| {
            if alu::zext(a[k], bits) == alu::zext(a[l], bits) {
                same |= 1 << k;
            }
        });
        out[l] = same as u64;
    });
    let d = &mut w.regs[i.r[0] as usize];
    each(m, |l| d[l] = out[l]);
}

pub(super) fn match_all(w: &mut Warp, i: &Inst, m: u32, bits: u8) {
    let a = w.regs[i.r[1] as usize];
    let first = a[m.trailing_zeros() as usize & 31];
    let mut all = true;
    each(m, |l| {
        all &= alu::zext(a[l], bits) == alu::zext(first, bits)
    });
    let v = if all { m as u64 } else { 0 };
    let d = &mut w.regs[i.r[0] as usize];
    each(m, |l| d[l] = v);
    if i.r[5] != NONE {
        let p = &mut w.regs[i.r[5] as usize];
        each(m, |l| p[l] = all as u64);
    }
}

pub(super) fn redux(w: &mut Warp, i: &Inst, m: u32, op: ReduxOp, signed: bool) {
    let a = w.regs[i.r[1] as usize];
    let mut acc: Option<u64> = None;
    let t = crate::ir::IntTy { bits: 32, signed };
    each(m, |l| {
        let x = a[l] & 0xFFFF_FFFF;
        acc = Some(match acc {
            None => x,
            Some(y) => match op {
                ReduxOp::Add => (y + x) & 0xFFFF_FFFF,
                ReduxOp::Min => alu::min(y, x, t),
                ReduxOp::Max => alu::max(y, x, t),
                ReduxOp::And => y & x,
                ReduxOp::Or => y | x,
                ReduxOp::Xor => y ^ x,
            },
        });
    });
    let v = acc.unwrap_or(0);
    let d = &mut w.regs[i.r[0] as usize];
    each(m, |l| d[l] = v);
}
