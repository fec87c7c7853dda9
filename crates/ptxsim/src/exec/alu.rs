//! The interpreter's lane loops: `un`/`bin`/`tern` apply a pure per-lane function (one of
//! `sem`'s) over the 32 lanes of register slots and write only the active lanes; `each` visits
//! the active lanes.
//!
//! No semantics here (they are in `sem`), and nothing touches memory, control flow or the
//! checker.

use crate::ir::Inst;

/// The registers of one warp: one `[u64; 32]` per slot.
pub type Regs = [[u64; 32]];

// The lane loops borrow the destination slot mutably and the sources immutably when they are
// distinct slots (so that the loops vectorise); when the destination is also a source, the
// sources are copied first.

/// Borrow slot `d` mutably and slots `srcs` immutably; `None` if `d` is one of `srcs` (or any
/// index is out of range).
#[inline(always)]
fn split<const N: usize>(
    regs: &mut Regs,
    d: usize,
    srcs: [usize; N],
) -> Option<(&mut [u64; 32], [&[u64; 32]; N])> {
    let n = regs.len();
    let mut ok = d < n;
    for &s in &srcs {
        ok &= s != d && s < n;
    }
    if !ok {
        return None;
    }
    let (lo, hi) = regs.split_at_mut(d);
    let (dr, rest) = hi.split_first_mut()?;
    let (lo, rest): (&[[u64; 32]], &[[u64; 32]]) = (lo, rest);
    static ZERO: [u64; 32] = [0; 32];
    let mut out: [&[u64; 32]; N] = [&ZERO; N];
    for k in 0..N {
        let s = srcs[k];
        out[k] = if s < d { &lo[s] } else { &rest[s - d - 1] };
    }
    Some((dr, out))
}

/// Write `f(l)` into the active lanes `m` of `d` (a loop the compiler vectorises).
#[inline(always)]
pub fn write<F: Fn(usize) -> u64>(d: &mut [u64; 32], m: u32, f: F) {
    if m == u32::MAX {
        for (l, x) in d.iter_mut().enumerate() {
            *x = f(l);
        }
    } else {
        for (l, x) in d.iter_mut().enumerate() {
            let v = f(l);
            if (m >> l) & 1 != 0 {
                *x = v;
            }
        }
    }
}

#[inline(always)]
pub fn un(regs: &mut Regs, i: &Inst, m: u32, f: impl Fn(u64) -> u64) {
    let (d, a) = (i.r[0] as usize, i.r[1] as usize);
    if let Some((dr, [ar])) = split(regs, d, [a]) {
        write(dr, m, |l| f(ar[l]));
    } else if let Some(x) = regs.get(a).copied() {
        if let Some(dr) = regs.get_mut(d) {
            write(dr, m, |l| f(x[l]));
        }
    }
}

#[inline(always)]
pub fn bin(regs: &mut Regs, i: &Inst, m: u32, f: impl Fn(u64, u64) -> u64) {
    let (d, a, b) = (i.r[0] as usize, i.r[1] as usize, i.r[2] as usize);
    if let Some((dr, [ar, br])) = split(regs, d, [a, b]) {
        write(dr, m, |l| f(ar[l], br[l]));
    } else if let (Some(x), Some(y)) = (regs.get(a).copied(), regs.get(b).copied()) {
        if let Some(dr) = regs.get_mut(d) {
            write(dr, m, |l| f(x[l], y[l]));
        }
    }
}

#[inline(always)]
pub fn tern(regs: &mut Regs, i: &Inst, m: u32, f: impl Fn(u64, u64, u64) -> u64) {
    let (d, a, b, c) = (
        i.r[0] as usize,
        i.r[1] as usize,
        i.r[2] as usize,
        i.r[3] as usize,
    );
    if let Some((dr, [ar, br, cr])) = split(regs, d, [a, b, c]) {
        write(dr, m, |l| f(ar[l], br[l], cr[l]));
    } else if let (Some(x), Some(y), Some(z)) = (
        regs.get(a).copied(),
        regs.get(b).copied(),
        regs.get(c).copied(),
    ) {
        if let Some(dr) = regs.get_mut(d) {
            write(dr, m, |l| f(x[l], y[l], z[l]));
        }
    }
}

/// Per-lane loop for active lanes only (for costly or stateful bodies).
#[inline(always)]
pub fn each(m: u32, mut f: impl FnMut(usize)) {
    let mut mm = m;
    while mm != 0 {
        let l = mm.trailing_zeros() as usize;
        f(l);
        mm &= mm - 1;
    }
}
