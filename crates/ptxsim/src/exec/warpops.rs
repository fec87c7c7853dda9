//! Warp-collective operations: `shfl.sync`, `vote.sync`, `match.sync`, `redux.sync`.
//!
//! They act on the lanes of the running group (the lanes that execute the instruction); a
//! shuffle that reads a lane outside that group gets that lane's stale register value and,
//! with the checker on, a non-fatal `InactiveLaneShuffle` report.

use super::alu::{self, each};
use super::{pred_mask, Warp, Worker};
use crate::ir::{Inst, ReduxOp, ShflMode, VoteMode, NONE};
use crate::sem::warp;
use crate::CheckKind;

impl Worker<'_> {
    #[inline(always)]
    pub(super) fn shfl(&mut self, w: &mut Warp, i: &Inst, m: u32, pc: u32, mode: ShflMode) {
        let (out, okm, bad) = {
            let regs = &w.regs;
            let (a, b, c, members) = (
                &regs[i.r[1] as usize],
                &regs[i.r[2] as usize],
                &regs[i.r[3] as usize],
                &regs[i.r[4] as usize],
            );
            let full = m == u32::MAX && uniform([b, c, members]) && members[0] as u32 == u32::MAX;
            match full
                .then(|| warp::shfl_uniform(mode, a, b[0], c[0]))
                .flatten()
            {
                // Every lane executes it and may be read: nothing is unreadable.
                Some((out, okm)) => (out, okm, 0),
                None => shfl_lanes(mode, a, b, c, members, m),
            }
        };
        let bad = bad & m;
        alu::write(&mut w.regs[i.r[0] as usize], m, |l| out[l]);
        if i.r[5] != NONE {
            let p = &mut w.regs[i.r[5] as usize];
            alu::write(p, m, |l| ((okm >> l) & 1) as u64);
        }
        if bad != 0 && self.ctx.check {
            let l = bad.trailing_zeros() as usize;
            let src = {
                // Recompute the source lane of the first bad lane for the message.
                let regs = &w.regs;
                let (b, c) = (regs[i.r[2] as usize][l], regs[i.r[3] as usize][l]);
                let (lane, bval, cval, seg) = (
                    l as i32,
                    (b & 31) as i32,
                    (c & 31) as i32,
                    ((c >> 8) & 31) as i32,
                );
                let j = match mode {
                    ShflMode::Up => lane - bval,
                    ShflMode::Down => lane + bval,
                    ShflMode::Bfly => lane ^ bval,
                    ShflMode::Idx => (lane & seg) | (bval & !seg),
                };
                let _ = cval;
                if (okm >> l) & 1 != 0 {
                    (j & 31) as usize
                } else {
                    l
                }
            };
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

/// Whether every lane of each of `xs` holds the same value (a branch-free loop that vectorises,
/// with one reduction at the end for all of them).
#[inline(always)]
fn uniform<const N: usize>(xs: [&[u64; 32]; N]) -> bool {
    let mut acc = 0u64;
    for l in 0..32 {
        for x in xs {
            acc |= x[l] ^ x[0];
        }
    }
    acc == 0
}

/// A shuffle's result and its predicate (lanes whose source was in range) for every lane,
/// and the lanes that read a lane outside `m` or outside their member mask.
#[inline(always)]
fn shfl_lanes(
    mode: ShflMode,
    a: &[u64; 32],
    b: &[u64; 32],
    c: &[u64; 32],
    members: &[u64; 32],
    m: u32,
) -> ([u64; 32], u32, u32) {
    let mut out = [0u64; 32];
    let mut okm = 0u32;
    let mut bad = 0u32;
    macro_rules! lanes {
        ($mode:expr) => {
            for l in 0..32 {
                let (src, ok) = warp::shfl_source($mode, l, b[l], c[l]);
                out[l] = a[src];
                okm |= (ok as u32) << l;
                let readable = (m >> src) & ((members[l] as u32) >> src) & 1;
                bad |= (readable ^ 1) << l;
            }
        };
    }
    // One lane loop per mode, so that each is specialised.
    match mode {
        ShflMode::Up => lanes!(ShflMode::Up),
        ShflMode::Down => lanes!(ShflMode::Down),
        ShflMode::Bfly => lanes!(ShflMode::Bfly),
        ShflMode::Idx => lanes!(ShflMode::Idx),
    }
    (out, okm, bad)
}

pub(super) fn vote(w: &mut Warp, i: &Inst, m: u32, mode: VoteMode, neg: bool) {
    let p = pred_mask(super::cpu::Portable, &w.regs[i.r[1] as usize], neg) & m;
    let v = warp::vote(mode, p, m);
    let d = &mut w.regs[i.r[0] as usize];
    alu::write(d, m, |_| v);
}

pub(super) fn match_any(w: &mut Warp, i: &Inst, m: u32, bits: u8) {
    let a = w.regs[i.r[1] as usize];
    let mut out = [0u64; 32];
    each(m, |l| {
        let mut same = 0u32;
        each(m, |k| {
            if warp::matches(a[k], a[l], bits) {
                same |= 1 << k;
            }
        });
        out[l] = same as u64;
    });
    let d = &mut w.regs[i.r[0] as usize];
    alu::write(d, m, |l| out[l]);
}

pub(super) fn match_all(w: &mut Warp, i: &Inst, m: u32, bits: u8) {
    let a = w.regs[i.r[1] as usize];
    let first = a[m.trailing_zeros() as usize & 31];
    let mut all = true;
    each(m, |l| all &= warp::matches(a[l], first, bits));
    let v = if all { m as u64 } else { 0 };
    let d = &mut w.regs[i.r[0] as usize];
    alu::write(d, m, |_| v);
    if i.r[5] != NONE {
        let p = &mut w.regs[i.r[5] as usize];
        alu::write(p, m, |_| all as u64);
    }
}

pub(super) fn redux(w: &mut Warp, i: &Inst, m: u32, op: ReduxOp, signed: bool) {
    let a = w.regs[i.r[1] as usize];
    let mut acc: Option<u64> = None;
    each(m, |l| {
        let x = a[l] & 0xFFFF_FFFF;
        acc = Some(match acc {
            None => x,
            Some(y) => warp::redux_step(op, signed, y, x),
        });
    });
    let v = acc.unwrap_or(0);
    let d = &mut w.regs[i.r[0] as usize];
    alu::write(d, m, |_| v);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sem::warp::shfl_uniform;

    /// The copy-based path gives the per-lane path's result and predicate for every mode,
    /// offset and clamp it accepts (on random register values).
    #[test]
    fn uniformity_looks_at_every_lane_of_every_operand() {
        let same = [[5u64; 32], [0x1f; 32], [u32::MAX as u64; 32]];
        assert!(uniform([&same[0], &same[1], &same[2]]));
        for k in 0..3 {
            for l in 0..32 {
                for bit in [0, 31, 63] {
                    let mut x = same;
                    x[k][l] ^= 1 << bit;
                    assert!(
                        !uniform([&x[0], &x[1], &x[2]]),
                        "operand {k}, lane {l}, bit {bit}"
                    );
                }
            }
        }
    }

    #[test]
    fn uniform_shuffles_match_the_lane_by_lane_ones() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut a = [0u64; 32];
        for x in &mut a {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            *x = seed;
        }
        let full = [u32::MAX as u64; 32];
        let mut checked = 0;
        for mode in [ShflMode::Up, ShflMode::Down, ShflMode::Bfly, ShflMode::Idx] {
            for b in 0..34u64 {
                for c in (0..32u64).chain([0x1f00, 0x1c1f, 0x181f]) {
                    let want = shfl_lanes(mode, &a, &[b; 32], &[c; 32], &full, u32::MAX);
                    assert_eq!(want.2, 0);
                    if let Some((out, okm)) = shfl_uniform(mode, &a, b, c) {
                        assert_eq!((out, okm), (want.0, want.1), "{mode:?} b={b} c={c:#x}");
                        checked += 1;
                    }
                }
            }
        }
        // Up, Down and Idx for every clamp; Bfly for the full one: no segments anywhere.
        assert_eq!(checked, 3 * 34 * 32 + 34);
    }
}
