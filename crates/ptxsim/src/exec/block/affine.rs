//! Affine slots of the block tier (`BlockSlot::Affine`): registers that hold
//! `base + stride * thread` in every thread of a block, such as `%tid.x`, `blockIdx.x *
//! blockDim.x + threadIdx.x` and the addresses computed from them. The tier keeps their `base`
//! and `stride` once for the block instead of a lane per thread, so the index arithmetic of a
//! kernel costs one scalar operation per block, and a load or store through such an address
//! knows its stride without looking at the lanes (unit stride: one bounds check and whole
//! words).
//!
//! This module decides which slots are affine (`mark`, when a kernel is loaded) and computes
//! an affine instruction's `base` and `stride` from its sources' (`result`). It must not touch
//! memory or the block's lanes; `exec::block` does that.
//!
//! **Why a slot's `base` and `stride` are right for every thread that reads it.** A slot is
//! affine when one unguarded instruction writes it, from block-uniform and affine sources,
//! with an operation that keeps the form (moves, additions, multiplications and shifts by a
//! uniform amount, `mul.wide` without wrapping, `cvta`), and
//! - either every read of it follows that writer in the same basic block (`local`): the tier
//!   runs a basic block for a group of threads without a break (its waiting groups are always
//!   at the start of a basic block), so whichever threads read the slot ran the writer just
//!   before, with the sources the writer used;
//! - or the writer runs under uniform control, and the tier runs it only when every live
//!   thread is at it (as for `BlockSlot::Uniform`), giving the block up otherwise.
//!
//! Registers are `u64` lanes whose bits above the register's width are not looked at by any
//! reader (a 32-bit address is truncated where it is used), so `base + stride * t` in wrapping
//! 64-bit arithmetic has the right low bits after additions, multiplications and left shifts.
//! `mul.wide` widens a 32-bit value first: it stays affine only when the 32-bit values of the
//! block's threads do not wrap, which `result` checks for each block (the block is given up
//! when they do).

use crate::ir::{BlockSlot, Inst, IntTy, Op, Program, SReg, Slot, NONE};

/// Mark as `BlockSlot::Affine` the `Lanes` slots of `kinds` that hold `base + stride * thread`
/// (see the module docs); `u` is the uniformity analysis the other kinds came from.
pub(super) fn mark(prog: &Program, u: &crate::ir::uniform::Uniformity, kinds: &mut [BlockSlot]) {
    let n = kinds.len();
    let code = &prog.code;
    // Each slot's writer (`None`: none; `Some(None)`: more than one).
    let mut writer: Vec<Option<Option<usize>>> = vec![None; n];
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (pc, i) in code.iter().enumerate() {
        for d in crate::ir::defuse::may_write(i, prog) {
            if let Some(w) = writer.get_mut(d as usize) {
                *w = Some(if w.is_none() { Some(pc) } else { None });
            }
        }
        let mut unguarded = *i;
        unguarded.guard = NONE;
        let members = matches!(i.op, Op::Shfl(_)).then_some(i.r[4]);
        let guard = (i.guard != NONE).then_some(i.guard);
        for s in crate::ir::defuse::sources(&unguarded)
            .into_iter()
            .chain(members)
            .chain(guard)
        {
            if let Some(r) = readers.get_mut(s as usize) {
                r.push(pc);
            }
        }
    }
    let block = basic_blocks(code);
    let tid_x: Vec<Slot> = prog
        .sregs
        .iter()
        .filter(|&&(_, r)| r == SReg::Tid(0))
        .map(|r| r.0)
        .collect();
    // Candidates: `%tid.x`, and slots with one unguarded writer of an affine shape whose
    // reads are local to it or which runs under uniform control.
    let mut cand: Vec<Option<bool>> = (0..n)
        .map(|s| {
            if kinds[s] != BlockSlot::Lanes {
                return None;
            }
            if tid_x.contains(&(s as Slot)) {
                return Some(false);
            }
            let pc = writer[s]??;
            let i = &code[pc];
            if i.guard != NONE || !affine_op(i) {
                return None;
            }
            let local = readers[s].iter().all(|&r| r > pc && block[r] == block[pc]);
            (local || u.uniform_control(pc as u32)).then_some(local)
        })
        .collect();
    // Their sources must be uniform or affine themselves, with one factor of a product
    // uniform: drop candidates until none changes.
    loop {
        let mut changed = false;
        for s in 0..n {
            if cand[s].is_none() || tid_x.contains(&(s as Slot)) {
                continue;
            }
            let Some(Some(pc)) = writer[s] else { continue };
            let i = &code[pc];
            let kind = |x: Slot| -> Option<bool> {
                // Some(true): uniform (or none); Some(false): affine; None: neither.
                if x == NONE || kinds.get(x as usize) == Some(&BlockSlot::Uniform) {
                    Some(true)
                } else {
                    cand.get(x as usize).copied().flatten().map(|_| false)
                }
            };
            let srcs: Vec<Option<bool>> = i.r[1..4].iter().map(|&x| kind(x)).collect();
            let ok = srcs.iter().all(|k| k.is_some())
                && match i.op {
                    Op::MulLo | Op::MulWide(_) | Op::MadLo => {
                        srcs[0] == Some(true) || srcs[1] == Some(true)
                    }
                    Op::Shl { .. } => srcs[1] == Some(true),
                    _ => true,
                };
            if !ok {
                cand[s] = None;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for (k, c) in kinds.iter_mut().zip(cand) {
        if let Some(local) = c {
            *k = BlockSlot::Affine { local };
        }
    }
}

/// Whether `i` is of a shape whose result is affine when its sources are (uniform amounts
/// for products and shifts aside, which `mark` checks).
#[inline(always)]
pub(super) fn affine_op(i: &Inst) -> bool {
    match i.op {
        Op::Mov | Op::Add | Op::Sub | Op::MulLo | Op::MadLo | Op::Neg | Op::Shl { .. } => true,
        Op::MulWide(t) => t.bits == 32,
        Op::Cvta { .. } => true,
        _ => false,
    }
}

/// Each instruction's basic block: a new one starts at the entry, at every branch target and
/// after every branch, exit and barrier.
fn basic_blocks(code: &[Inst]) -> Vec<usize> {
    let mut leader = vec![false; code.len() + 1];
    leader[0] = true;
    for (pc, i) in code.iter().enumerate() {
        match i.op {
            Op::Bra => {
                if let Some(t) = leader.get_mut(i.imm as usize) {
                    *t = true;
                }
                leader[pc + 1] = true;
            }
            Op::Exit | Op::Ret | Op::Bar(_) => leader[pc + 1] = true,
            _ => {}
        }
    }
    let mut id = 0;
    leader[..code.len()]
        .iter()
        .map(|&l| {
            id += l as usize;
            id
        })
        .collect()
}

/// `base + stride * t` for the 64 threads of word `w`.
#[inline(always)]
pub(super) fn fill(buf: &mut [u64; 64], (base, stride): (u64, u64), w: usize) {
    let b = base.wrapping_add(stride.wrapping_mul(w as u64 * 64));
    for (j, x) in buf.iter_mut().enumerate() {
        *x = b.wrapping_add(stride.wrapping_mul(j as u64));
    }
}

/// The `(base, stride)` of `i`'s result from its sources' (`src[n]` for `r[n + 1]`; uniform
/// ones have stride 0), run by the threads from `first` to `last` (`threads()`: the only ones
/// that read it before it is written again); `None` when it is not affine after all (a product of two
/// varying values, a `mul.wide` whose 32-bit operand wraps between those threads): the block
/// is then given up.
#[inline(always)]
pub(super) fn result(
    i: &Inst,
    src: [(u64, u64); 3],
    threads: impl FnOnce() -> (usize, usize),
) -> Option<(u64, u64)> {
    let [(a, sa), (b, sb), (c, sc)] = src;
    Some(match i.op {
        Op::Mov => (a, sa),
        Op::Add => (a.wrapping_add(b), sa.wrapping_add(sb)),
        Op::Sub => (a.wrapping_sub(b), sa.wrapping_sub(sb)),
        Op::Neg => (a.wrapping_neg(), sa.wrapping_neg()),
        Op::MulLo | Op::MadLo => {
            if sa != 0 && sb != 0 {
                return None;
            }
            let (p, sp) = (
                a.wrapping_mul(b),
                sa.wrapping_mul(b).wrapping_add(sb.wrapping_mul(a)),
            );
            if i.op == Op::MadLo {
                (p.wrapping_add(c), sp.wrapping_add(sc))
            } else {
                (p, sp)
            }
        }
        Op::Shl { bits } => {
            if sb != 0 {
                return None;
            }
            (
                crate::sem::bits::shl(a, b, bits),
                crate::sem::bits::shl(sa, b, bits),
            )
        }
        Op::MulWide(t) => {
            // The varying operand and the uniform factor.
            let ((x, sx), m) = match (sa, sb) {
                (_, 0) => ((a, sa), b),
                (0, _) => ((b, sb), a),
                _ => return None,
            };
            let (first, last) = threads();
            // The 32-bit value of thread `first`, then those after it, unwrapped: they must
            // all be in range (those of `first` and `last` are enough), and then widening
            // keeps them affine.
            let x = x.wrapping_add(sx.wrapping_mul(first as u64));
            let (x0, step, m, range) = if t.signed {
                let r = (i32::MIN as i64, i32::MAX as i64);
                (x as i32 as i64, sx as i32 as i64, m as i32 as i64, r)
            } else {
                let r = (0, u32::MAX as i64);
                (x as u32 as i64, sx as u32 as i32 as i64, m as u32 as i64, r)
            };
            let end = x0.checked_add(step.checked_mul((last - first) as i64)?)?;
            if end < range.0 || end > range.1 {
                return None;
            }
            // Back to thread 0's (wrapping: only threads from `first` on read it).
            let base = x0.wrapping_sub(step.wrapping_mul(first as i64));
            (base.wrapping_mul(m) as u64, step.wrapping_mul(m) as u64)
        }
        Op::Cvta { to, space } => {
            let win = crate::sem::address::window(space);
            (
                if to {
                    a.wrapping_sub(win)
                } else {
                    a.wrapping_add(win)
                },
                sa,
            )
        }
        _ => return None,
    })
}

/// How a comparison's outcome can change along a run of values that step evenly.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// `<`, `<=`, `>`, `>=`: it changes at most once.
    Step,
    /// `==`: it holds at most once (or everywhere); `!=`: the other way round.
    Eq,
    Ne,
}

/// Whether `e` is a value of the integer type `ty` (as `sem::int::ext` extends it).
#[inline(always)]
fn holds(ty: IntTy, e: i128) -> bool {
    let b = ty.bits as u32;
    if ty.signed {
        (-(1i128 << (b - 1))..(1i128 << (b - 1))).contains(&e)
    } else {
        (0..(1i128 << b)).contains(&e)
    }
}

/// The threads `t` from `first` to `last` for which `f(base + stride * t, y)` holds, as bits
/// of `out` (64 threads a word; other bits 0), found without computing every thread's: when
/// the compared values (as `ty`) do not wrap between `first` and `last`, they step evenly, so a
/// comparison of `shape` changes at one thread at most (a step, which a binary search with
/// `f` finds) or holds at one at most (`==`). `false` when they wrap (`out` untouched): the
/// caller compares thread by thread.
#[inline(always)]
pub(super) fn compare(
    (base, stride): (u64, u64),
    y: u64,
    (first, last): (usize, usize),
    (ty, shape): (IntTy, Shape),
    f: impl Fn(u64, u64) -> bool,
    out: &mut [u64],
) -> bool {
    let x = |t: usize| base.wrapping_add(stride.wrapping_mul(t as u64));
    // The step between threads' values, as the view sees it (`-1` for a stride of `!0`).
    let step = crate::sem::int::sext(stride, ty.bits) as i128;
    let e0 = crate::sem::int::ext(x(first), ty);
    // (1-bit values: `sem::int::ext` takes them unsigned whatever `ty` says.)
    if last < first || out.len() * 64 <= last || ty.bits < 2 {
        return false;
    }
    let span = (last - first) as i128;
    if !holds(ty, e0 + step * span) {
        return false;
    }
    let g = |t: usize| f(x(t), y);
    out.fill(0);
    if step == 0 {
        if g(first) {
            set_range(out, first, last);
        }
        return true;
    }
    match shape {
        Shape::Step => {
            // `[first, lo]` as `first`, `(lo, last]` the other way.
            let (g0, mut lo) = (g(first), last);
            if g(last) != g0 {
                let mut hi = last;
                lo = first;
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2;
                    if g(mid) == g0 {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
            }
            if g0 {
                set_range(out, first, lo);
            } else if lo < last {
                set_range(out, lo + 1, last);
            }
        }
        Shape::Eq | Shape::Ne => {
            // Equal at one thread at most: where `e0 + step * n` is `y`.
            if shape == Shape::Ne {
                set_range(out, first, last);
            }
            let n = crate::sem::int::ext(y, ty) - e0;
            if n % step == 0 && (0..=span).contains(&(n / step)) {
                let t = first + (n / step) as usize;
                let bit = 1u64 << (t % 64);
                out[t / 64] = (out[t / 64] & !bit) | if g(t) { bit } else { 0 };
            }
        }
    }
    true
}

/// Bits `from ..= to` of `out` set.
#[inline(always)]
fn set_range(out: &mut [u64], from: usize, to: usize) {
    for (w, x) in out.iter_mut().enumerate() {
        let (lo, hi) = (from.max(w * 64), to.min(w * 64 + 63));
        if lo <= hi {
            let n = hi - lo + 1;
            let ones = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
            *x |= ones << (lo - w * 64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sem::int::{sext, zext};

    /// `compare` finds what comparing thread by thread finds, for random affine runs (small
    /// and huge strides, both signs, runs that wrap and those that do not), every comparison
    /// shape, signed and unsigned views of 16, 32 and 64 bits.
    #[test]
    fn compare_agrees_with_every_thread() {
        let mut rng = crate::tests::util::Rng(crate::tests::util::seed());
        let mut direct = 0;
        for n in 0..20_000 {
            let pick =
                |r: &mut crate::tests::util::Rng, v: &[u64]| v[r.below(v.len() as u64) as usize];
            let bits = [16u8, 32, 64][rng.below(3) as usize];
            let signed = rng.below(2) == 0;
            let ty = IntTy { bits, signed };
            let stride = match rng.below(4) {
                0 => rng.below(9),
                1 => (rng.below(9) as i64 - 4) as u64,
                2 => pick(
                    &mut rng,
                    &[4, 8, 1 << 15, u32::MAX as u64, 1 << 31, 1 << 63],
                ),
                _ => rng.next(),
            };
            let base = match rng.below(3) {
                0 => rng.below(300),
                1 => rng.next(),
                _ => (rng.below(600) as i64 - 300) as u64,
            };
            // Blocks of up to 1024 threads.
            let size = [64u64, 256, 1024][rng.below(3) as usize];
            let first = rng.below(size) as usize;
            let last = first + rng.below(size - first as u64) as usize;
            let y = match rng.below(3) {
                0 => base.wrapping_add(stride.wrapping_mul(first as u64 + rng.below(300))),
                1 => rng.below(400),
                _ => rng.next(),
            };
            let v = |x: u64| {
                if signed {
                    sext(x, bits) as i128
                } else {
                    zext(x, bits) as i128
                }
            };
            let (shape, f): (Shape, Box<dyn Fn(u64, u64) -> bool>) = match n % 6 {
                0 => (Shape::Step, Box::new(|x, y| v(x) < v(y))),
                1 => (Shape::Step, Box::new(|x, y| v(x) <= v(y))),
                2 => (Shape::Step, Box::new(|x, y| v(x) > v(y))),
                3 => (Shape::Step, Box::new(|x, y| v(x) >= v(y))),
                4 => (Shape::Eq, Box::new(|x, y| v(x) == v(y))),
                _ => (Shape::Ne, Box::new(|x, y| v(x) != v(y))),
            };
            let mut out = [0u64; 16];
            if !compare((base, stride), y, (first, last), (ty, shape), &f, &mut out) {
                continue;
            }
            direct += 1;
            let mut want = [0u64; 16];
            for t in first..=last {
                if f(base.wrapping_add(stride.wrapping_mul(t as u64)), y) {
                    want[t / 64] |= 1 << (t % 64);
                }
            }
            assert_eq!(
                out, want,
                "base {base:#x} stride {stride:#x} y {y:#x} threads {first}..={last} {bits} bits signed {signed} case {}",
                n % 6
            );
        }
        // Most runs do not wrap: the direct way was taken, and so checked.
        assert!(direct > 8_000, "{direct}");
    }
}
