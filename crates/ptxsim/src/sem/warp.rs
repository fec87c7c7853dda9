//! Warp-collective operations of PTX as functions of lane values: the source lane of a
//! shuffle, `vote`, `match`, and the combining step of `redux`.
//!
//! Pure functions of values (see `sem`): which lanes take part and what happens when a lane
//! reads one that does not is the engines' business. No registers, warps or reports here.

use super::int::{max, min, zext};
use crate::ir::{IntTy, ReduxOp, ShflMode, VoteMode};

/// The lane that lane `lane` reads in `shfl.sync` with operands `b` (offset or index) and `c`
/// (clamp and segment mask), and whether that source is in range (the predicate); a lane out of
/// range reads itself.
#[inline(always)]
pub fn shfl_source(mode: ShflMode, lane: usize, b: u64, c: u64) -> (usize, bool) {
    let l = lane as i32;
    let bval = (b & 31) as i32;
    let cval = (c & 31) as i32;
    let segmask = ((c >> 8) & 31) as i32;
    let max_lane = (l & segmask) | (cval & !segmask);
    let (j, ok) = match mode {
        ShflMode::Up => {
            let j = l - bval;
            (j, j >= max_lane)
        }
        ShflMode::Down => {
            let j = l + bval;
            (j, j <= max_lane)
        }
        ShflMode::Bfly => {
            let j = l ^ bval;
            (j, j <= max_lane)
        }
        ShflMode::Idx => {
            let j = (l & segmask) | (bval & !segmask);
            (j, j <= max_lane)
        }
    };
    (if ok { (j & 31) as usize } else { lane }, ok)
}

/// `shfl_lanes` when every lane has the same operands `b` and `c` with no segments (the
/// reductions' `__shfl_down_sync(FULL, v, off)`): the sources are a shift (up, down), a fixed
/// permutation (butterfly) or a broadcast (index), done as copies instead of a gather that
/// works out each lane's source. `None` for other operands.
#[inline(always)]
pub fn shfl_uniform(mode: ShflMode, a: &[u64; 32], b: u64, c: u64) -> Option<([u64; 32], u32)> {
    if (c >> 8) & 31 != 0 {
        return None;
    }
    let (s, cval) = ((b & 31) as usize, (c & 31) as usize);
    let mut out = *a;
    let okm = match mode {
        ShflMode::Down => {
            // Lanes l with l + s <= cval read lane l + s.
            let k = (cval + 1).saturating_sub(s).min(32 - s);
            out[..k].copy_from_slice(&a[s..s + k]);
            low(k)
        }
        ShflMode::Up => {
            // Lanes l with l - s >= cval read lane l - s.
            let k0 = (cval + s).min(32);
            out[k0..].copy_from_slice(&a[k0 - s..32 - s]);
            !low(k0)
        }
        ShflMode::Bfly if cval == 31 => {
            for (l, o) in out.iter_mut().enumerate() {
                *o = a[l ^ s];
            }
            u32::MAX
        }
        ShflMode::Bfly => return None,
        ShflMode::Idx => {
            if s <= cval {
                out = [a[s]; 32];
                u32::MAX
            } else {
                0
            }
        }
    };
    Some((out, okm))
}

/// The lowest `k` bits set (k <= 32).
fn low(k: usize) -> u32 {
    if k >= 32 {
        u32::MAX
    } else {
        (1u32 << k) - 1
    }
}

/// `vote.sync`: the result of every lane, given the predicate lanes `p` among the lanes `m`
/// that execute it (`p` within `m`).
#[inline(always)]
pub fn vote(mode: VoteMode, p: u32, m: u32) -> u64 {
    match mode {
        VoteMode::All => (p == m) as u64,
        VoteMode::Any => (p != 0) as u64,
        VoteMode::Uni => (p == 0 || p == m) as u64,
        VoteMode::Ballot => p as u64,
    }
}

/// `match.sync` compares values of `bits` bits: whether `a` and `b` match.
#[inline(always)]
pub fn matches(a: u64, b: u64, bits: u8) -> bool {
    zext(a, bits) == zext(b, bits)
}

/// One step of `redux.sync`: the running result `acc` combined with a lane's value `x` (both
/// 32-bit).
#[inline(always)]
pub fn redux_step(op: ReduxOp, signed: bool, acc: u64, x: u64) -> u64 {
    let t = IntTy { bits: 32, signed };
    match op {
        ReduxOp::Add => (acc + x) & 0xFFFF_FFFF,
        ReduxOp::Min => min(acc, x, t),
        ReduxOp::Max => max(acc, x, t),
        ReduxOp::And => acc & x,
        ReduxOp::Or => acc | x,
        ReduxOp::Xor => acc ^ x,
    }
}
