//! A yardstick for a *block interpreter*: reduceBlockTree's PTX as a table of instructions, each
//! dispatched once for all the block's 256 threads and run as a loop over their lanes (`u32`
//! registers side by side, guards and divergence as 256-bit masks, one PC per thread, the
//! group at the lowest PC runs first, as in ptxsim's warp interpreter), with every global and
//! shared access checked: bounds per thread, and shared accesses against packed race records
//! (`cases::Packed`'s layout), in whole 64-thread words where the access (shared, or a global
//! load) turns out to have unit stride at run time, thread by thread otherwise; lane loops and
//! comparisons skip the words without an active thread. What stage 2 of
//! `docs/block-tier.md` would cost before any compiling, beside the vectorised yardstick
//! (`--floor`).
//!
//! Idealised where a real one would pay a little more: address arithmetic (`cvta`,
//! `mul.wide`, `add`) is folded into indexed loads and stores, and the special registers and
//! parameters are constants of the block. Its output is checked equal to the native loops'
//! (`--floor`); its race checks are `cases::Packed`'s arithmetic, which `records_catch_races`
//! checks on planted races, but are not themselves run on a racy kernel here.

use crate::cases::{f32s, Native, Problem};

const BT: usize = 256;
type Lanes = [u32; BT];

/// 256 threads' bits.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
struct Mask([u64; 4]);

impl Mask {
    fn all() -> Self {
        Mask([u64::MAX; 4])
    }
    fn any(self) -> bool {
        self.0.iter().any(|&w| w != 0)
    }
    fn and(self, o: Mask) -> Mask {
        let (a, b) = (self.0, o.0);
        Mask([a[0] & b[0], a[1] & b[1], a[2] & b[2], a[3] & b[3]])
    }
    fn and_not(self, o: Mask) -> Mask {
        let (a, b) = (self.0, o.0);
        Mask([a[0] & !b[0], a[1] & !b[1], a[2] & !b[2], a[3] & !b[3]])
    }
    fn or(self, o: Mask) -> Mask {
        let (a, b) = (self.0, o.0);
        Mask([a[0] | b[0], a[1] | b[1], a[2] | b[2], a[3] | b[3]])
    }
}

/// Registers (`u32` lane arrays) and predicates by index.
#[derive(Clone, Copy)]
enum I {
    /// `d = ctaid * ntid + tid`.
    Gid(u8),
    Tid(u8),
    MovImm(u8, u32),
    ShrImm(u8, u8, u32),
    Add(u8, u8, u8),
    FAdd(u8, u8, u8),
    /// `p = a >= b` (unsigned), `p = a == imm`, `p = a != imm`.
    SetpGe(u8, u8, u8),
    SetpEqImm(u8, u8, u32),
    SetpNeImm(u8, u8, u32),
    /// `d = x[idx]` (global input, bounds checked).
    LdX(u8, u8),
    /// `out[ctaid] = v`.
    StOutCtaid(u8),
    /// `d = shared[idx]`, `shared[idx] = v` (words; bounds and races checked).
    LdS(u8, u8),
    StS(u8, u8),
    /// `@[!]p bra target`.
    Bra(u8, bool, u16),
    /// Block-uniform scalars (what a uniformity analysis finds): `u = imm`, `u = v >> imm`,
    /// `q = u == imm` / `u != imm`, `@[!]q bra` (the whole group goes one way), and lane ops
    /// with a uniform operand: `p = a >= u`, `d = u + a`.
    UMov(u8, u32),
    UShr(u8, u8, u32),
    USetpEq(u8, u8, u32),
    USetpNe(u8, u8, u32),
    UBra(u8, bool, u16),
    SetpGeU(u8, u8, u8),
    AddU(u8, u8, u8),
    Bar,
    Exit,
}

/// reduceBlockTree's PTX (tests/fixtures/reduce.ptx) as this table: registers 0 tid, 1 gid,
/// 2 n, 3 value, 4 s, 5 t+s, 6 a, 7 b, 8 sum, 9 zero index; predicates 0..5. With `uniform`,
/// the loop counter `s` and its tests are block-uniform scalars (`U*` instructions, uniform
/// register 0), as a uniformity analysis would find them.
fn program(uniform: bool) -> Vec<I> {
    use I::*;
    let mut code = vec![
        Tid(0),
        Gid(1),
        MovImm(9, 0),
        SetpGe(0, 1, 2),
        MovImm(3, 0),
        Bra(0, false, 7),
        LdX(3, 1),
        StS(0, 3), // 7
        Bar,
        MovImm(4, BT as u32),
        ShrImm(4, 4, 1),
        SetpEqImm(1, 4, 0),
        Bra(1, false, 24),
        SetpGe(2, 0, 4), // 13
        Bra(2, false, 20),
        Add(5, 4, 0),
        LdS(6, 0),
        LdS(7, 5),
        FAdd(8, 7, 6),
        StS(0, 8),
        Bar, // 20
        ShrImm(4, 4, 1),
        SetpNeImm(3, 4, 0),
        Bra(3, false, 13),
        SetpNeImm(4, 0, 0), // 24
        Bra(4, false, 28),
        LdS(8, 9),
        StOutCtaid(8),
        Exit, // 28
    ];
    if uniform {
        for (pc, i) in [
            (9, UMov(0, BT as u32)),
            (10, UShr(0, 0, 1)),
            (11, USetpEq(1, 0, 0)),
            (12, UBra(1, false, 24)),
            (13, SetpGeU(2, 0, 0)),
            (15, AddU(5, 0, 0)),
            (21, UShr(0, 0, 1)),
            (22, USetpNe(3, 0, 0)),
            (23, UBra(3, false, 13)),
        ] {
            code[pc] = i;
        }
    }
    code
}

/// One block's state.
struct Block {
    r: Vec<Lanes>,
    /// Uniform scalar registers and predicates.
    u: [u32; 4],
    uq: [bool; 4],
    p: Vec<Mask>,
    /// The block's shared words, padded to twice their number so that a unit-stride access
    /// may run over whole chunks (the bounds are checked per thread against `BT`).
    shared: [f32; 2 * BT],
    /// Packed race records: writer and reader key per word (`epoch << 16 | thread`, bit 15 of
    /// the reader's: read by more than one thread), padded alike.
    w: [u32; 2 * BT],
    rd: [u32; 2 * BT],
    epoch: u32,
    bad: bool,
}

/// Run `f(t)` for the threads of `m`, skipping 64-thread words with none.
#[inline(always)]
fn lanes(m: Mask, mut f: impl FnMut(usize)) {
    for (k, &word) in m.0.iter().enumerate() {
        if word == 0 {
            continue;
        }
        for j in 0..64 {
            if (word >> j) & 1 != 0 {
                f(k * 64 + j);
            }
        }
    }
}

/// The 64 threads of a mask word as one flag each (a vector compare, so that the lane loops
/// below select with it instead of shifting the word per lane).
#[inline(always)]
fn flags(word: u64) -> [u32; 64] {
    let mut f = [0u32; 64];
    for (j, x) in f.iter_mut().enumerate() {
        *x = ((word >> j) as u32 & 1).wrapping_neg();
    }
    f
}

/// `d[t] = f(t)` for the threads of `m`, as a branch-free select per lane.
#[inline(always)]
fn write(d: &mut Lanes, m: Mask, f: impl Fn(usize) -> u32) {
    for (k, &word) in m.0.iter().enumerate() {
        if word == 0 {
            continue;
        }
        let (d64, on) = (&mut d[k * 64..k * 64 + 64], flags(word));
        for (j, x) in d64.iter_mut().enumerate() {
            let v = f(k * 64 + j);
            *x = (v & on[j]) | (*x & !on[j]);
        }
    }
}

/// `d[t] = src[t]` for the threads of `m`.
#[inline(always)]
fn select(d: &mut Lanes, m: Mask, src: &Lanes) {
    for (k, &word) in m.0.iter().enumerate() {
        if word == 0 {
            continue;
        }
        let (d64, s64, on) = (
            &mut d[k * 64..k * 64 + 64],
            &src[k * 64..k * 64 + 64],
            flags(word),
        );
        for j in 0..64 {
            d64[j] = (s64[j] & on[j]) | (d64[j] & !on[j]);
        }
    }
}

/// `r[d][t] = f(r[a][t], r[c][t])` for the threads of `m` (`d` may be `a` or `c`: each
/// active 64-thread word of the sources is copied first, four vectors each).
#[inline(always)]
fn op2(r: &mut [Lanes], m: Mask, (d, a, c): (u8, u8, u8), f: impl Fn(u32, u32) -> u32) {
    for (k, &word) in m.0.iter().enumerate() {
        if word == 0 {
            continue;
        }
        let mut a64 = [0u32; 64];
        let mut c64 = [0u32; 64];
        a64.copy_from_slice(&r[a as usize][k * 64..k * 64 + 64]);
        c64.copy_from_slice(&r[c as usize][k * 64..k * 64 + 64]);
        let (d64, on) = (&mut r[d as usize][k * 64..k * 64 + 64], flags(word));
        for j in 0..64 {
            let v = f(a64[j], c64[j]);
            d64[j] = (v & on[j]) | (d64[j] & !on[j]);
        }
    }
}

/// The bits of the threads `t` of `m` where `f(a[t], c[t], t)`.
#[inline(always)]
fn compare(m: Mask, a: &Lanes, c: &Lanes, f: impl Fn(u32, u32, u32) -> bool) -> Mask {
    let mut out = Mask::default();
    for (k, (a64, c64)) in a.chunks_exact(64).zip(c.chunks_exact(64)).enumerate() {
        // Only the words with a thread of `m` (the tree's late steps have one of four).
        if m.0[k] == 0 {
            continue;
        }
        let mut bits = 0u64;
        for j in 0..64 {
            bits |= (f(a64[j], c64[j], (k * 64 + j) as u32) as u64) << j;
        }
        out.0[k] = bits & m.0[k];
    }
    out
}

impl Block {
    /// A shared access by the threads of `m` to the words in register `idx`: bounds, and the
    /// packed records checked and updated (as `cases::Packed::chunk`). When the words are
    /// `c + thread` (unit stride, found at run time) whole 16-thread chunks go through
    /// branch-free lane loops; otherwise thread by thread. Returns `c` in the first case.
    #[inline(always)]
    fn shared_access(&mut self, m: Mask, idx: u8, write: bool) -> Option<usize> {
        let ep = self.epoch;
        let idx = &self.r[idx as usize];
        let (w, rd) = (&mut self.w, &mut self.rd);
        let first = m.0.iter().enumerate().find(|(_, &x)| x != 0);
        let t0 = first.map_or(0, |(k, x)| k * 64 + x.trailing_zeros() as usize);
        let c = idx[t0].wrapping_sub(t0 as u32);
        let unit = m.and_not(compare(m, idx, idx, |i, _, t| i.wrapping_sub(t) == c));
        let mut bad = false;
        if !unit.any() && (c as usize) <= BT {
            let c = c as usize;
            // Whole 64-thread words, branch-free: the mask as `u32` lanes of 0 or !0 and the
            // failures ORed into one word (a loop over 16-thread chunks with `bool` masks
            // measured 1.35x slower in all).
            let mut failed = 0u32;
            for (k, &word) in m.0.iter().enumerate() {
                if word == 0 {
                    continue;
                }
                let lo = k * 64;
                let on = flags(word);
                let (ws, rs) = (&mut w[c + lo..c + lo + 64], &mut rd[c + lo..c + lo + 64]);
                for j in 0..64 {
                    let key = ep << 16 | (lo + j) as u32;
                    let other_w = ((ws[j] ^ key).wrapping_sub(1) < 0xFFFF) as u32;
                    let x = rs[j] ^ key;
                    let oob = (c + lo + j >= BT) as u32;
                    if write {
                        let other_r = (x.wrapping_sub(1) < 0xFFFF) as u32;
                        failed |= on[j] & (other_w | other_r | oob);
                        ws[j] = (key & on[j]) | (ws[j] & !on[j]);
                    } else {
                        failed |= on[j] & (other_w | oob);
                        // A second reader of the word in this epoch sets bit 15.
                        let other = (((x >> 16 == 0) & (x != 0)) as u32).wrapping_neg();
                        let mark = ((rs[j] | 0x8000) & other) | (key & !other);
                        rs[j] = (mark & on[j]) | (rs[j] & !on[j]);
                    }
                }
            }
            bad = failed != 0;
            self.bad |= bad;
            return Some(c);
        }
        lanes(m, |t| {
            let i = idx[t] as usize;
            if i >= BT {
                bad = true;
                return;
            }
            let key = ep << 16 | t as u32;
            let other_w = (w[i] ^ key).wrapping_sub(1) < 0xFFFF;
            let x = rd[i] ^ key;
            if write {
                bad |= other_w | (x.wrapping_sub(1) < 0xFFFF);
                w[i] = key;
            } else {
                bad |= other_w;
                let other = (x >> 16 == 0) & (x != 0);
                rd[i] = if other { rd[i] | 0x8000 } else { key };
            }
        });
        self.bad |= bad;
        None
    }

    fn next_epoch(&mut self) {
        self.epoch += 1;
        if self.epoch > 0xFFFF {
            self.w = [0; 2 * BT];
            self.rd = [0; 2 * BT];
            self.epoch = 1;
        }
    }
}

/// Add the threads `m` at `pc` to the ready groups (one mask per PC).
fn ready_at(groups: &mut Vec<(u16, Mask)>, pc: u16, m: Mask) {
    match groups.iter_mut().find(|(p, _)| *p == pc) {
        Some((_, g)) => *g = g.or(m),
        None => groups.push((pc, m)),
    }
}

/// Run one block: the group of threads at the lowest PC runs until a branch splits it, a
/// barrier parks it, it exits or it reaches the PC of another ready group (then the lowest
/// PC's threads, those included, run on together). Failed checks set `b.bad`.
#[inline(always)]
fn run_block(code: &[I], b: &mut Block, x: &[f32], ctaid: u32, out: &mut f32) {
    let n = x.len() as u32;
    b.r[2] = [n; BT];
    let mut groups: Vec<(u16, Mask)> = vec![(0, Mask::all())];
    let (mut at_bar, mut bar_pc) = (Mask::default(), 0u16);
    b.next_epoch();
    loop {
        let Some(gi) = (0..groups.len()).min_by_key(|&g| groups[g].0) else {
            if !at_bar.any() {
                return;
            }
            // Everyone live is at the barrier: release.
            groups.push((bar_pc + 1, at_bar));
            at_bar = Mask::default();
            b.next_epoch();
            continue;
        };
        let (mut pc, m) = groups.swap_remove(gi);
        // Where the others wait: reaching it hands back to the pick.
        let resched = groups.iter().map(|g| g.0).min().unwrap_or(u16::MAX);
        loop {
            match code[pc as usize] {
                I::Gid(d) => write(&mut b.r[d as usize], m, |t| ctaid * BT as u32 + t as u32),
                I::Tid(d) => write(&mut b.r[d as usize], m, |t| t as u32),
                I::MovImm(d, v) => write(&mut b.r[d as usize], m, |_| v),
                I::ShrImm(d, a, s) => op2(&mut b.r, m, (d, a, a), |x, _| x >> s),
                I::Add(d, a, c) => op2(&mut b.r, m, (d, a, c), |x, y| x.wrapping_add(y)),
                I::FAdd(d, a, c) => op2(&mut b.r, m, (d, a, c), |x, y| {
                    (f32::from_bits(x) + f32::from_bits(y)).to_bits()
                }),
                I::SetpGe(p, a, c) => {
                    let v = compare(m, &b.r[a as usize], &b.r[c as usize], |x, y, _| x >= y);
                    b.p[p as usize] = v.and(m).or(b.p[p as usize].and_not(m));
                }
                I::SetpEqImm(p, a, v) | I::SetpNeImm(p, a, v) => {
                    let eq = matches!(code[pc as usize], I::SetpEqImm(..));
                    let a = &b.r[a as usize];
                    let c = compare(m, a, a, |x, _, _| (x == v) == eq);
                    b.p[p as usize] = c.and(m).or(b.p[p as usize].and_not(m));
                }
                I::LdX(d, i) => {
                    let iv = &b.r[i as usize];
                    b.bad |= compare(m, iv, iv, |j, _, _| j >= n).any();
                    // Unit stride (index `c + thread` for every thread of `m`, found at run
                    // time) and in bounds for the whole block: copies of whole words.
                    let first = m.0.iter().enumerate().find(|(_, &w)| w != 0);
                    let t0 = first.map_or(0, |(k, w)| k * 64 + w.trailing_zeros() as usize);
                    let c = iv[t0].wrapping_sub(t0 as u32) as usize;
                    let unit = !m
                        .and_not(compare(m, iv, iv, |j, _, t| {
                            j.wrapping_sub(t) as usize == c
                        }))
                        .any();
                    if unit && c + BT <= x.len() {
                        let dv = &mut b.r[d as usize];
                        for (k, &word) in m.0.iter().enumerate() {
                            if word == 0 {
                                continue;
                            }
                            let on = flags(word);
                            let s64 = &x[c + k * 64..c + k * 64 + 64];
                            let d64 = &mut dv[k * 64..k * 64 + 64];
                            for j in 0..64 {
                                let v = s64[j].to_bits();
                                d64[j] = (v & on[j]) | (d64[j] & !on[j]);
                            }
                        }
                    } else {
                        op2(&mut b.r, m, (d, i, i), |j, _| {
                            x.get(j as usize).map_or(0, |v| v.to_bits())
                        });
                    }
                }
                I::StOutCtaid(v) => {
                    let v = &b.r[v as usize];
                    lanes(m, |t| *out = f32::from_bits(v[t]));
                }
                I::LdS(d, i) => match b.shared_access(m, i, false) {
                    Some(c) => {
                        let mut src = [0u32; BT];
                        for (v, w) in src.iter_mut().zip(&b.shared[c..c + BT]) {
                            *v = w.to_bits();
                        }
                        select(&mut b.r[d as usize], m, &src);
                    }
                    None => {
                        let sh = &b.shared;
                        op2(&mut b.r, m, (d, i, i), |j, _| {
                            sh.get(j as usize).map_or(0, |v| v.to_bits())
                        });
                    }
                },
                I::StS(i, v) => {
                    let unit = b.shared_access(m, i, true);
                    let (iv, vv) = (&b.r[i as usize], &b.r[v as usize]);
                    match unit {
                        Some(c) => {
                            let sh = &mut b.shared[c..c + BT];
                            for (k, &word) in m.0.iter().enumerate() {
                                if word == 0 {
                                    continue;
                                }
                                let s64 = &mut sh[k * 64..k * 64 + 64];
                                let v64 = &vv[k * 64..k * 64 + 64];
                                let on = flags(word);
                                for j in 0..64 {
                                    let old = s64[j].to_bits();
                                    s64[j] = f32::from_bits((v64[j] & on[j]) | (old & !on[j]));
                                }
                            }
                        }
                        None => {
                            let sh = &mut b.shared;
                            lanes(m, |t| {
                                if let Some(s) = sh.get_mut(iv[t] as usize) {
                                    *s = f32::from_bits(vv[t]);
                                }
                            });
                        }
                    }
                }
                I::UMov(d, v) => b.u[d as usize] = v,
                I::UShr(d, a, sh) => b.u[d as usize] = b.u[a as usize] >> sh,
                I::USetpEq(q, a, v) => b.uq[q as usize] = b.u[a as usize] == v,
                I::USetpNe(q, a, v) => b.uq[q as usize] = b.u[a as usize] != v,
                I::UBra(q, neg, target) => {
                    if b.uq[q as usize] != neg {
                        pc = target;
                        if pc >= resched {
                            ready_at(&mut groups, pc, m);
                            break;
                        }
                        continue;
                    }
                }
                I::SetpGeU(p, a, u) => {
                    let u = b.u[u as usize];
                    let a = &b.r[a as usize];
                    let v = compare(m, a, a, |x, _, _| x >= u);
                    b.p[p as usize] = v.and(m).or(b.p[p as usize].and_not(m));
                }
                I::AddU(d, u, a) => {
                    let u = b.u[u as usize];
                    op2(&mut b.r, m, (d, a, a), |x, _| x.wrapping_add(u));
                }
                I::Bra(p, neg, target) => {
                    let pm = b.p[p as usize];
                    let taken = if neg { m.and_not(pm) } else { m.and(pm) };
                    if taken == m {
                        pc = target;
                        if pc >= resched {
                            ready_at(&mut groups, pc, m);
                            break;
                        }
                        continue;
                    }
                    if taken.any() {
                        // Split: both halves wait; the lowest PC runs first.
                        ready_at(&mut groups, target, taken);
                        ready_at(&mut groups, pc + 1, m.and_not(taken));
                        break;
                    }
                }
                I::Bar => {
                    at_bar = at_bar.or(m);
                    bar_pc = pc;
                    break;
                }
                I::Exit => break,
            }
            pc += 1;
            if pc >= resched {
                ready_at(&mut groups, pc, m);
                break;
            }
        }
    }
}

/// reduceBlockTree run by the block-interpreter yardstick, built for AVX-512 where the CPU has
/// it (as ptxsim's interpreter is); panics on a failed check (the kernel has none).
pub fn reduce_tree_block_interp(p: &Problem, uniform: bool) -> Native {
    let x = f32s(&p.bufs[0].data);
    let v4 = crate::cases::avx512();
    Box::new(move || {
        #[cfg(target_arch = "x86_64")]
        if v4 {
            // SAFETY: the CPU has every feature the function is built for.
            return unsafe { run_v4(&x, uniform) };
        }
        let _ = v4;
        run(&x, uniform)
    })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]
unsafe fn run_v4(x: &[f32], uniform: bool) -> Vec<u8> {
    run(x, uniform)
}

#[inline(always)]
fn run(x: &[f32], uniform: bool) -> Vec<u8> {
    let code = program(uniform);
    let blocks = x.len().div_ceil(BT);
    let mut partial = vec![0f32; blocks];
    let mut b = Block {
        r: vec![[0; BT]; 10],
        u: [0; 4],
        uq: [false; 4],
        p: vec![Mask::default(); 5],
        shared: [0.0; 2 * BT],
        w: [0; 2 * BT],
        rd: [0; 2 * BT],
        epoch: 0,
        bad: false,
    };
    for (c, out) in partial.iter_mut().enumerate() {
        run_block(&code, &mut b, x, c as u32, out);
    }
    assert!(!b.bad, "a race or an access out of bounds");
    partial.iter().flat_map(|v| v.to_le_bytes()).collect()
}
