//! Loads, stores and atomics in every state space, with the checker's bounds, alignment,
//! use-after-free and race checks.
//!
//! A lane's address is resolved to a `Place` (host bytes of a global allocation, or an offset in
//! the block's shared memory, the lane's local memory or the kernel parameters) after all
//! checks; stores resolve every lane before writing any, so a faulting store writes nothing.
//! Raw memory access lives in `mem`; this module never touches bytes unsafely.

use super::alu::{self, each};
use super::float as fl;
use super::{Fault, Warp, Worker, CACHES};
use crate::ir::{AtomKind, AtomOp, FTy, Inst, MemSpace};
use crate::mem::{window, HostPtr, LOCAL_WIN, PARAM_WIN, SHARED_WIN, WIN_SIZE};
use crate::CheckKind;

fn in_win(a: u64, w: u64) -> bool {
    a.wrapping_sub(w) < WIN_SIZE
}

/// `isspacep`: does generic address `a` point into `space`?
pub fn in_space(a: u64, space: MemSpace) -> bool {
    match space {
        MemSpace::Shared | MemSpace::Local | MemSpace::Param => in_win(a, window(space)),
        MemSpace::Global => {
            !in_win(a, SHARED_WIN) && !in_win(a, LOCAL_WIN) && !in_win(a, PARAM_WIN)
        }
        MemSpace::Generic => true,
    }
}

/// Where a checked access goes.
#[derive(Clone, Copy)]
enum Place<'a> {
    Global(HostPtr<'a>),
    Shared(usize),
    Local(usize),
    Param(usize),
}

/// Sign-extend a loaded value of `size` bytes when the load is signed.
#[inline(always)]
fn extend(v: u64, size: u8, sext: bool) -> u64 {
    if sext {
        alu::sext(v, size * 8) as u64
    } else {
        v
    }
}

#[inline(always)]
fn rd(buf: &[u8], off: usize, size: usize) -> u64 {
    fn get<const N: usize>(buf: &[u8], off: usize) -> [u8; N] {
        buf.get(off..off + N)
            .and_then(|s| s.try_into().ok())
            .unwrap_or([0; N])
    }
    match size {
        4 => u32::from_le_bytes(get(buf, off)) as u64,
        8 => u64::from_le_bytes(get(buf, off)),
        2 => u16::from_le_bytes(get(buf, off)) as u64,
        _ => get::<1>(buf, off)[0] as u64,
    }
}

/// Load from memory kept as little-endian 64-bit words; `off` is aligned to `size`.
#[inline(always)]
fn wrd(words: &[u64], off: usize, size: usize) -> u64 {
    let w = words.get(off >> 3).copied().unwrap_or(0);
    let v = w >> ((off & 7) * 8);
    if size >= 8 {
        v
    } else {
        v & ((1u64 << (size * 8)) - 1)
    }
}

#[inline(always)]
fn wrd4(words: &[u64], off: usize) -> u64 {
    let w = words.get(off >> 3).copied().unwrap_or(0);
    (w >> ((off & 4) * 8)) & 0xFFFF_FFFF
}

/// Store into memory kept as little-endian 64-bit words; `off` is aligned to `size`.
#[inline(always)]
fn wwr(words: &mut [u64], off: usize, size: usize, v: u64) {
    if let Some(w) = words.get_mut(off >> 3) {
        if size >= 8 {
            *w = v;
        } else {
            let shift = (off & 7) * 8;
            let mask = ((1u64 << (size * 8)) - 1) << shift;
            *w = (*w & !mask) | ((v << shift) & mask);
        }
    }
}

#[inline(always)]
fn wr(buf: &mut [u8], off: usize, size: usize, v: u64) {
    fn put<const N: usize>(buf: &mut [u8], off: usize, b: [u8; N]) {
        if let Some(s) = buf.get_mut(off..off + N) {
            s.copy_from_slice(&b);
        }
    }
    match size {
        4 => put(buf, off, (v as u32).to_le_bytes()),
        8 => put(buf, off, v.to_le_bytes()),
        2 => put(buf, off, (v as u16).to_le_bytes()),
        _ => put(buf, off, [v as u8]),
    }
}

fn space_name(s: MemSpace) -> &'static str {
    match s {
        MemSpace::Global => "global",
        MemSpace::Shared => "shared",
        MemSpace::Local => "local",
        MemSpace::Param => "param",
        MemSpace::Generic => "generic",
    }
}

/// What an access does, for messages and the race checker.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Load,
    Store,
    Atomic,
}

impl Access {
    fn word(self) -> &'static str {
        match self {
            Access::Load => "load",
            Access::Store => "store",
            Access::Atomic => "atomic",
        }
    }
}

impl<'a> Worker<'a> {
    /// Check and resolve one lane's access of `total` bytes at `a` in `space`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn place(
        &mut self,
        w: &Warp,
        l: usize,
        pc: u32,
        space: MemSpace,
        a: u64,
        total: u64,
        acc: Access,
    ) -> Result<Place<'a>, Fault> {
        let (space, a) = match space {
            MemSpace::Generic => {
                if in_win(a, SHARED_WIN) {
                    (MemSpace::Shared, a)
                } else if in_win(a, LOCAL_WIN) {
                    (MemSpace::Local, a)
                } else if in_win(a, PARAM_WIN) {
                    (MemSpace::Param, a)
                } else {
                    (MemSpace::Global, a)
                }
            }
            s => (s, a),
        };
        if a & (total.min(16) - 1) != 0 || (total > 16 && a & 15 != 0) {
            return Err(self.misaligned(w, l, pc, space, a, total, acc));
        }
        match space {
            MemSpace::Global | MemSpace::Generic => {
                let g: &'a crate::mem::GlobalView = self.ctx.global;
                match g.translate(&mut self.cache[pc as usize % CACHES], a, total) {
                    Some(p) => Ok(Place::Global(p)),
                    None => Err(self.global_fault(w, l, pc, a, total, acc)),
                }
            }
            MemSpace::Shared => {
                let off = a as u32 as usize;
                if off + total as usize > self.ctx.shared_bytes as usize {
                    return Err(self.space_fault(w, l, pc, MemSpace::Shared, off, total, acc));
                }
                if self.ctx.check {
                    let tid = w.idx * 32 + l as u32;
                    let (n, e) = (total as usize, self.epoch);
                    let c = if acc == Access::Atomic {
                        self.shadow.atomic(off, n, tid, w.wepoch, e)
                    } else {
                        self.shadow
                            .access(off, n, tid, w.wepoch, e, acc == Access::Store)
                    };
                    if let Some(c) = c {
                        self.race(w, l, pc, off, total, acc, c);
                    }
                }
                Ok(Place::Shared(off))
            }
            MemSpace::Local => {
                let off = a as u32 as usize;
                let lb = self.ctx.prog.local_bytes as usize;
                if off + total as usize > lb {
                    return Err(self.space_fault(w, l, pc, MemSpace::Local, off, total, acc));
                }
                Ok(Place::Local(l * lb + off))
            }
            MemSpace::Param => {
                if in_win(a, PARAM_WIN) {
                    let off = (a - PARAM_WIN) as usize;
                    if off + total as usize > self.ctx.params.len() || acc != Access::Load {
                        return Err(self.space_fault(w, l, pc, MemSpace::Param, off, total, acc));
                    }
                    Ok(Place::Param(off))
                } else {
                    // A device function's parameter: lives in local memory.
                    self.place(w, l, pc, MemSpace::Local, a, total, acc)
                }
            }
        }
    }

    #[inline(always)]
    fn load_at(&self, w: &Warp, p: Place, off: usize, size: usize) -> u64 {
        match p {
            Place::Global(h) => h.load(off, size),
            Place::Shared(o) => wrd(&self.shared, o + off, size),
            Place::Local(o) => rd(&w.local, o + off, size),
            Place::Param(o) => rd(self.ctx.params, o + off, size),
        }
    }

    #[inline(always)]
    fn store_at(&mut self, w: &mut Warp, p: Place, off: usize, size: usize, v: u64) {
        match p {
            Place::Global(h) => h.store(off, size, v),
            Place::Shared(o) => wwr(&mut self.shared, o + off, size, v),
            Place::Local(o) => wr(&mut w.local, o + off, size, v),
            Place::Param(_) => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn ld(
        &mut self,
        w: &mut Warp,
        i: &Inst,
        m: u32,
        pc: u32,
        space: MemSpace,
        size: u8,
        n: u8,
        sext: bool,
    ) -> Result<(), Fault> {
        match space {
            MemSpace::Shared => self.ld_shared(w, i, m, pc, size, n, sext),
            MemSpace::Global | MemSpace::Generic => {
                self.ld_global(w, i, m, pc, space, size, n, sext)
            }
            MemSpace::Local => self.ld_local(w, i, m, pc, size, n, sext),
            _ => self.ld_any(w, i, m, pc, space, size, n, sext),
        }
    }

    /// Offsets of a shared access for the active lanes, after bounds, alignment and race checks.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn shared_offsets(
        &mut self,
        w: &Warp,
        i: &Inst,
        base_slot: crate::ir::Slot,
        m: u32,
        pc: u32,
        total: usize,
        acc: Access,
        offs: &mut [usize; 32],
    ) -> Result<(), Fault> {
        let base = &w.regs[base_slot as usize];
        let imm = i.imm as u64;
        let len = self.ctx.shared_bytes as usize;
        let align = total.min(16) - 1;
        let mut bad = 0u32;
        for l in 0..32 {
            let off = base[l].wrapping_add(imm) as u32 as usize;
            offs[l] = off;
            bad |= (((off + total > len) | (off & align != 0)) as u32) << l;
        }
        if bad & m != 0 {
            let l = (bad & m).trailing_zeros() as usize;
            let a = base[l].wrapping_add(imm);
            return match self.place(w, l, pc, MemSpace::Shared, a, total as u64, acc) {
                Err(f) => Err(f),
                Ok(_) => Err(self.misaligned(w, l, pc, MemSpace::Shared, a, total as u64, acc)),
            };
        }
        if self.ctx.check {
            let write = acc == Access::Store;
            let found = if acc == Access::Atomic {
                self.shadow
                    .atomic_warp(offs, m, total, w.idx, w.wepoch, self.epoch)
            } else {
                self.shadow
                    .access_warp(offs, m, total, w.idx, w.wepoch, self.epoch, write)
            };
            if let Some((l, c)) = found {
                self.race(w, l, pc, offs[l], total as u64, acc, c);
            }
        }
        Ok(())
    }

    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn ld_shared(
        &mut self,
        w: &mut Warp,
        i: &Inst,
        m: u32,
        pc: u32,
        size: u8,
        n: u8,
        sext: bool,
    ) -> Result<(), Fault> {
        let sz = size as usize;
        let mut offs = [0usize; 32];
        self.shared_offsets(
            w,
            i,
            i.r[4],
            m,
            pc,
            sz * n as usize,
            Access::Load,
            &mut offs,
        )?;
        let sh = &self.shared[..];
        for k in 0..n as usize {
            let d = &mut w.regs[i.r[k] as usize];
            if sz == 4 && !sext {
                for l in 0..32 {
                    if (m >> l) & 1 != 0 {
                        d[l] = wrd4(sh, offs[l] + 4 * k);
                    }
                }
            } else {
                each(m, |l| {
                    d[l] = extend(wrd(sh, offs[l] + k * sz, sz), size, sext)
                });
            }
        }
        Ok(())
    }

    /// Addresses of the lanes of a memory instruction (into `addr`), and whether the active ones
    /// all lie in one allocation, aligned: then the host pointer of the lowest.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn global_span(
        &mut self,
        w: &Warp,
        i: &Inst,
        m: u32,
        pc: u32,
        total: u64,
        generic: bool,
        addr: &mut [u64; 32],
    ) -> Option<(HostPtr<'a>, u64)> {
        let base = &w.regs[i.r[4] as usize];
        let imm = i.imm as u64;
        let (mut lo, mut hi, mut bits) = (u64::MAX, 0u64, 0u64);
        let mut windowed = false;
        for l in 0..32 {
            let a = base[l].wrapping_add(imm);
            addr[l] = a;
            let act = (m >> l) & 1 != 0;
            lo = lo.min(if act { a } else { u64::MAX });
            hi = hi.max(if act { a } else { 0 });
            bits |= if act { a } else { 0 };
            windowed |= act && a.wrapping_sub(SHARED_WIN) < 3 * WIN_SIZE;
        }
        if m == 0 || bits & (total.min(16) - 1) != 0 || hi < lo || (generic && windowed) {
            return None;
        }
        let g: &'a crate::mem::GlobalView = self.ctx.global;
        let span = (hi - lo).saturating_add(total);
        let p = g.translate(&mut self.cache[pc as usize % CACHES], lo, span);
        p.map(|p| (p, lo))
    }

    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn ld_global(
        &mut self,
        w: &mut Warp,
        i: &Inst,
        m: u32,
        pc: u32,
        space: MemSpace,
        size: u8,
        n: u8,
        sext: bool,
    ) -> Result<(), Fault> {
        let sz = size as usize;
        let total = (sz * n as usize) as u64;
        let generic = space == MemSpace::Generic;
        let mut addr = [0u64; 32];
        // Fast path: every lane inside the allocation this instruction touched last time.
        {
            let base = &w.regs[i.r[4] as usize];
            for l in 0..32 {
                addr[l] = base[l].wrapping_add(i.imm as u64);
            }
            let c = &self.cache[pc as usize % CACHES];
            let align = total.min(16);
            // A vector access: all elements or none (a destination may be the address register).
            let mut done = n == 1 || c.covers(&addr, m, total, align);
            for k in 0..n as usize {
                if !done {
                    break;
                }
                let d = &mut w.regs[i.r[k] as usize];
                let x = (k * sz) as u64;
                done = match sz {
                    4 => c.load_lanes::<4>(&addr, m, x, align, d),
                    8 => c.load_lanes::<8>(&addr, m, x, align, d),
                    2 => c.load_lanes::<2>(&addr, m, x, align, d),
                    _ => c.load_lanes::<1>(&addr, m, x, align, d),
                };
                if done && sext {
                    each(m, |l| d[l] = extend(d[l], size, true));
                }
            }
            if done {
                return Ok(());
            }
        }
        let span = self.global_span(w, i, m, pc, total, generic, &mut addr);
        if let Some((p, lo)) = span {
            // The first access of this instruction to an allocation (it fills the cache that
            // the fast path above uses), or lanes spread over a span checked as a whole.
            for k in 0..n as usize {
                let d = &mut w.regs[i.r[k] as usize];
                for l in 0..32 {
                    if (m >> l) & 1 != 0 {
                        d[l] = extend(p.load((addr[l] - lo) as usize + k * sz, sz), size, sext);
                    }
                }
            }
            return Ok(());
        }
        if generic {
            return self.ld_any(w, i, m, pc, space, size, n, sext);
        }
        let g: &'a crate::mem::GlobalView = self.ctx.global;
        let mut mm = m;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            let a = addr[l];
            let p = match g.translate(&mut self.cache[pc as usize % CACHES], a, total) {
                Some(p) if a & (total.min(16) - 1) == 0 => p,
                _ => {
                    return self
                        .place(w, l, pc, MemSpace::Generic, a, total, Access::Load)
                        .map(|_| ())
                }
            };
            for k in 0..n as usize {
                w.regs[i.r[k] as usize][l] = extend(p.load(k * sz, sz), size, sext);
            }
        }
        Ok(())
    }

    /// Local loads: each lane reads its own local memory.
    #[allow(clippy::too_many_arguments)]
    fn ld_local(
        &mut self,
        w: &mut Warp,
        i: &Inst,
        m: u32,
        pc: u32,
        size: u8,
        n: u8,
        sext: bool,
    ) -> Result<(), Fault> {
        let lb = self.ctx.prog.local_bytes as usize;
        let sz = size as usize;
        let total = sz * n as usize;
        let base = &w.regs[i.r[4] as usize];
        let imm = i.imm as u64;
        let mut offs = [0usize; 32];
        let mut bad = 0u32;
        for l in 0..32 {
            let off = base[l].wrapping_add(imm) as u32 as usize;
            offs[l] = off;
            bad |= (((off + total > lb) | (off & (total.min(16) - 1) != 0)) as u32) << l;
        }
        if bad & m != 0 {
            return self.ld_any(w, i, m, pc, MemSpace::Local, size, n, sext);
        }
        let (local, regs) = (&w.local, &mut w.regs);
        for k in 0..n as usize {
            let d = &mut regs[i.r[k] as usize];
            each(m, |l| {
                d[l] = extend(rd(local, l * lb + offs[l] + k * sz, sz), size, sext)
            });
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn ld_any(
        &mut self,
        w: &mut Warp,
        i: &Inst,
        m: u32,
        pc: u32,
        space: MemSpace,
        size: u8,
        n: u8,
        sext: bool,
    ) -> Result<(), Fault> {
        let base = w.regs[i.r[4] as usize];
        let sz = size as usize;
        let total = (sz * n as usize) as u64;
        let mut mm = m;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            let a = base[l].wrapping_add(i.imm as u64);
            let p = self.place(w, l, pc, space, a, total, Access::Load)?;
            for k in 0..n as usize {
                let v = self.load_at(w, p, k * sz, sz);
                let v = if sext {
                    alu::sext(v, size * 8) as u64
                } else {
                    v
                };
                w.regs[i.r[k] as usize][l] = v;
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn st(
        &mut self,
        w: &mut Warp,
        i: &Inst,
        m: u32,
        pc: u32,
        space: MemSpace,
        size: u8,
        n: u8,
    ) -> Result<(), Fault> {
        let sz = size as usize;
        if space == MemSpace::Shared {
            let mut offs = [0usize; 32];
            self.shared_offsets(
                w,
                i,
                i.r[4],
                m,
                pc,
                sz * n as usize,
                Access::Store,
                &mut offs,
            )?;
            for k in 0..n as usize {
                let v = &w.regs[i.r[k] as usize];
                let sh = &mut self.shared[..];
                each(m, |l| wwr(sh, offs[l] + k * sz, sz, v[l]));
            }
            return Ok(());
        }
        let total = (sz * n as usize) as u64;
        if matches!(space, MemSpace::Global | MemSpace::Generic) {
            let generic = space == MemSpace::Generic;
            let mut addr = [0u64; 32];
            // Fast path: every lane inside the allocation this instruction touched last time.
            let base = &w.regs[i.r[4] as usize];
            for l in 0..32 {
                addr[l] = base[l].wrapping_add(i.imm as u64);
            }
            let c = &self.cache[pc as usize % CACHES];
            let align = total.min(16);
            if c.covers(&addr, m, total, align) {
                for k in 0..n as usize {
                    let v = &w.regs[i.r[k] as usize];
                    let x = (k * sz) as u64;
                    let stored = match sz {
                        4 => c.store_lanes::<4>(&addr, m, x, align, v),
                        8 => c.store_lanes::<8>(&addr, m, x, align, v),
                        2 => c.store_lanes::<2>(&addr, m, x, align, v),
                        _ => c.store_lanes::<1>(&addr, m, x, align, v),
                    };
                    debug_assert!(stored, "covers() checked every element");
                }
                return Ok(());
            }
            if let Some((p, lo)) = self.global_span(w, i, m, pc, total, generic, &mut addr) {
                for k in 0..n as usize {
                    let v = &w.regs[i.r[k] as usize];
                    for l in 0..32 {
                        if (m >> l) & 1 != 0 {
                            p.store((addr[l] - lo) as usize + k * sz, sz, v[l]);
                        }
                    }
                }
                return Ok(());
            }
        }
        if space == MemSpace::Local {
            let lb = self.ctx.prog.local_bytes as usize;
            let tot = total as usize;
            let base = &w.regs[i.r[4] as usize];
            let mut offs = [0usize; 32];
            let mut bad = 0u32;
            for l in 0..32 {
                let off = base[l].wrapping_add(i.imm as u64) as u32 as usize;
                offs[l] = off;
                bad |= (((off + tot > lb) | (off & (tot.min(16) - 1) != 0)) as u32) << l;
            }
            if bad & m == 0 {
                let (local, regs) = (&mut w.local, &w.regs);
                for k in 0..n as usize {
                    let v = &regs[i.r[k] as usize];
                    each(m, |l| wr(local, l * lb + offs[l] + k * sz, sz, v[l]));
                }
                return Ok(());
            }
        }
        let base = w.regs[i.r[4] as usize];
        let mut places: [Option<Place<'a>>; 32] = [None; 32];
        let mut mm = m;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            let a = base[l].wrapping_add(i.imm as u64);
            places[l] = Some(self.place(w, l, pc, space, a, total, Access::Store)?);
        }
        for (l, p) in places.iter().enumerate() {
            if let Some(p) = *p {
                for k in 0..n as usize {
                    let v = w.regs[i.r[k] as usize][l];
                    self.store_at(w, p, k * sz, sz, v);
                }
            }
        }
        Ok(())
    }

    /// Uniform kernel-parameter load at a constant offset.
    #[inline(always)]
    pub(super) fn ldk(&mut self, w: &mut Warp, i: &Inst, m: u32, size: u8, n: u8, sext: bool) {
        let sz = size as usize;
        for k in 0..n as usize {
            let off = i.imm as usize + k * sz;
            let v = rd(self.ctx.params, off, sz);
            let v = if sext {
                alu::sext(v, size * 8) as u64
            } else {
                v
            };
            let d = &mut w.regs[i.r[k] as usize];
            for (l, x) in d.iter_mut().enumerate() {
                if (m >> l) & 1 != 0 {
                    *x = v;
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn atom(
        &mut self,
        w: &mut Warp,
        i: &Inst,
        m: u32,
        pc: u32,
        space: MemSpace,
        op: AtomOp,
        bits: u8,
        kind: AtomKind,
    ) -> Result<(), Fault> {
        let base = w.regs[i.r[1] as usize];
        let b = w.regs[i.r[2] as usize];
        let c = if i.r[3] != crate::ir::NONE {
            w.regs[i.r[3] as usize]
        } else {
            [0; 32]
        };
        let size = (bits / 8) as usize;
        if space == MemSpace::Shared && size >= 4 {
            // Fast path: one bounds and alignment check for the warp, then plain
            // read-modify-writes in lane order (a block runs on one thread).
            let mut offs = [0usize; 32];
            self.shared_offsets(w, i, i.r[1], m, pc, size, Access::Atomic, &mut offs)?;
            let mut old = [0u64; 32];
            let sh = &mut self.shared[..];
            each(m, |l| {
                let o = wrd(sh, offs[l], size);
                wwr(sh, offs[l], size, atom_apply(op, bits, kind, o, b[l], c[l]));
                old[l] = o;
            });
            if i.r[0] != crate::ir::NONE {
                alu::write(&mut w.regs[i.r[0] as usize], m, |l| old[l]);
            }
            return Ok(());
        }
        let g: &'a crate::mem::GlobalView = self.ctx.global;
        let int_add = op == AtomOp::Add && matches!(kind, AtomKind::U | AtomKind::S) && size >= 4;
        if int_add && space == MemSpace::Global && m != 0 {
            // Every active lane adding to one address (a counter): one fetch_add of the sum,
            // the lanes' old values as running sums in lane order. That is the execution in
            // which the warp's additions happen back to back in lane order, one of those the
            // GPU may choose; it spares a cache line bouncing between workers for each lane.
            let a0 = base[m.trailing_zeros() as usize].wrapping_add(i.imm as u64);
            let mut other = 0u32;
            for (l, &x) in base.iter().enumerate() {
                other |= ((x.wrapping_add(i.imm as u64) != a0) as u32) << l;
            }
            if other & m == 0 && a0 & (size as u64 - 1) == 0 {
                if let Some(h) = g.translate(&mut self.cache[pc as usize % CACHES], a0, size as u64)
                {
                    let mut sum = 0u64;
                    each(m, |l| sum = sum.wrapping_add(b[l]));
                    let mut old = h.fetch_add(0, size, sum);
                    if i.r[0] != crate::ir::NONE {
                        let width = if size == 4 { u32::MAX as u64 } else { u64::MAX };
                        let d = &mut w.regs[i.r[0] as usize];
                        each(m, |l| {
                            d[l] = old & width;
                            old = old.wrapping_add(b[l]);
                        });
                    }
                    return Ok(());
                }
            }
        }
        if space == MemSpace::Global && m != 0 {
            // One check for the warp: the active lanes' addresses aligned and inside one
            // allocation (the span from the lowest to the highest). Then the lanes' operations
            // in lane order, as below.
            let (mut lo, mut hi, mut or) = (u64::MAX, 0u64, 0u64);
            let mut addr = [0u64; 32];
            for (l, a) in addr.iter_mut().enumerate() {
                *a = base[l].wrapping_add(i.imm as u64);
                let on = (m >> l) & 1 != 0;
                lo = if on { lo.min(*a) } else { lo };
                hi = if on { hi.max(*a) } else { hi };
                or |= if on { *a } else { 0 };
            }
            let span = (hi - lo).saturating_add(size as u64);
            if or & (size as u64 - 1) == 0 {
                if let Some(h) = g.translate(&mut self.cache[pc as usize % CACHES], lo, span) {
                    let mut old = [0u64; 32];
                    let mut mm = m;
                    while mm != 0 {
                        let l = mm.trailing_zeros() as usize;
                        mm &= mm - 1;
                        let off = (addr[l] - lo) as usize;
                        old[l] = if int_add {
                            h.fetch_add(off, size, b[l])
                        } else {
                            h.rmw(off, size, &|o| atom_apply(op, bits, kind, o, b[l], c[l]))
                        };
                    }
                    if i.r[0] != crate::ir::NONE {
                        alu::write(&mut w.regs[i.r[0] as usize], m, |l| old[l]);
                    }
                    return Ok(());
                }
            }
        }
        let mut mm = m;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            let a = base[l].wrapping_add(i.imm as u64);
            if space == MemSpace::Global && a & (size as u64 - 1) == 0 {
                if let Some(h) = g.translate(&mut self.cache[pc as usize % CACHES], a, size as u64)
                {
                    let old = if int_add {
                        h.fetch_add(0, size, b[l])
                    } else {
                        h.rmw(0, size, &|o| atom_apply(op, bits, kind, o, b[l], c[l]))
                    };
                    if i.r[0] != crate::ir::NONE {
                        w.regs[i.r[0] as usize][l] = old;
                    }
                    continue;
                }
            }
            let p = self.place(w, l, pc, space, a, size as u64, Access::Atomic)?;
            let f = |old: u64| atom_apply(op, bits, kind, old, b[l], c[l]);
            let old = match p {
                Place::Global(h) => h.rmw(0, size, &f),
                _ => {
                    let old = self.load_at(w, p, 0, size);
                    self.store_at(w, p, 0, size, f(old));
                    old
                }
            };
            if i.r[0] != crate::ir::NONE {
                w.regs[i.r[0] as usize][l] = old;
            }
        }
        Ok(())
    }

    /// `cp.async` (done at once): copy `size` bytes from global to shared per lane, zero-filling
    /// past the source size operand.
    pub(super) fn cp_async(
        &mut self,
        w: &mut Warp,
        i: &Inst,
        m: u32,
        pc: u32,
        size: u8,
    ) -> Result<(), Fault> {
        let dst = w.regs[i.r[0] as usize];
        let src = w.regs[i.r[1] as usize];
        let srcsz = if i.r[2] != crate::ir::NONE {
            w.regs[i.r[2] as usize]
        } else {
            [size as u64; 32]
        };
        let total = size as u64;
        let mut mm = m;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            let n = srcsz[l].min(total);
            let d = self.place(w, l, pc, MemSpace::Shared, dst[l], total, Access::Store)?;
            for k in (0..total).step_by(4) {
                let v = if k < n {
                    let s = self.place(w, l, pc, MemSpace::Global, src[l] + k, 4, Access::Load)?;
                    let v = self.load_at(w, s, 0, 4);
                    // A partial last word keeps only the bytes inside the source size.
                    if n - k < 4 {
                        v & ((1u64 << (8 * (n - k))) - 1)
                    } else {
                        v
                    }
                } else {
                    0
                };
                self.store_at(w, d, k as usize, 4, v);
            }
        }
        Ok(())
    }

    /// One lane's checked load of `total` bytes at `a` in `space`, as `out.len()` pieces of
    /// `total / out.len()` bytes (tensor-core fragments, `ldmatrix` rows).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn lane_load(
        &mut self,
        w: &Warp,
        l: usize,
        pc: u32,
        space: MemSpace,
        a: u64,
        total: u64,
        out: &mut [u64],
    ) -> Result<(), Fault> {
        let p = self.place(w, l, pc, space, a, total, Access::Load)?;
        let sz = total as usize / out.len().max(1);
        for (k, o) in out.iter_mut().enumerate() {
            *o = self.load_at(w, p, k * sz, sz);
        }
        Ok(())
    }

    /// Checked stores of `size` bytes, one per (lane, address, value): every one is checked
    /// before any is written, so a faulting store writes nothing (tensor-core fragments).
    pub(super) fn lane_stores(
        &mut self,
        w: &mut Warp,
        pc: u32,
        space: MemSpace,
        size: u64,
        items: &[(usize, u64, u64)],
    ) -> Result<(), Fault> {
        let mut places = Vec::with_capacity(items.len());
        for &(l, a, _) in items {
            places.push(self.place(w, l, pc, space, a, size, Access::Store)?);
        }
        for (p, &(_, _, v)) in places.into_iter().zip(items) {
            self.store_at(w, p, 0, size as usize, v);
        }
        Ok(())
    }

    /// Read `size` bytes at generic address `a` for lane `l` (printf arguments and strings).
    pub(super) fn read_generic(
        &mut self,
        w: &Warp,
        l: usize,
        pc: u32,
        a: u64,
        size: u64,
    ) -> Result<u64, Fault> {
        let p = self.place(w, l, pc, MemSpace::Generic, a, size, Access::Load)?;
        Ok(self.load_at(w, p, 0, size as usize))
    }

    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn misaligned(
        &self,
        w: &Warp,
        l: usize,
        pc: u32,
        space: MemSpace,
        a: u64,
        total: u64,
        acc: Access,
    ) -> Fault {
        Box::new(self.report(
            CheckKind::Misaligned,
            w.idx,
            l,
            pc,
            a,
            total as u32,
            space_name(space),
            None,
            format!(
                "misaligned {} {} of {total} bytes at 0x{a:x} (address must be a multiple of {})",
                space_name(space),
                acc.word(),
                total.min(16)
            ),
        ))
    }

    #[cold]
    fn global_fault(&self, w: &Warp, l: usize, pc: u32, a: u64, total: u64, acc: Access) -> Fault {
        let miss = self.ctx.global.describe_miss(a, total);
        let (kind, what) = if miss.use_after_free {
            (CheckKind::UseAfterFree, "use after free")
        } else {
            (CheckKind::OutOfBounds, "out-of-bounds")
        };
        Box::new(self.report(
            kind,
            w.idx,
            l,
            pc,
            a,
            total as u32,
            "global",
            Some(miss.description.clone()),
            format!(
                "{what}: global {} of {total} bytes at 0x{a:x}: {}",
                acc.word(),
                miss.description
            ),
        ))
    }

    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn space_fault(
        &self,
        w: &Warp,
        l: usize,
        pc: u32,
        space: MemSpace,
        off: usize,
        total: u64,
        acc: Access,
    ) -> Fault {
        let (limit, what) = match space {
            MemSpace::Shared => (self.ctx.shared_bytes as usize, "shared memory of the block"),
            MemSpace::Local => (
                self.ctx.prog.local_bytes as usize,
                "local memory of the thread",
            ),
            _ => (self.ctx.params.len(), "kernel parameters"),
        };
        let desc = if off >= limit || acc == Access::Load || space != MemSpace::Param {
            format!(
                "{} bytes past the end of the {limit}-byte {what}",
                (off + total as usize).saturating_sub(limit)
            )
        } else {
            "kernel parameters are read-only".to_string()
        };
        Box::new(self.report(
            CheckKind::OutOfBounds,
            w.idx,
            l,
            pc,
            off as u64,
            total as u32,
            space_name(space),
            Some(desc.clone()),
            format!(
                "out-of-bounds: {} {} of {total} bytes at offset 0x{off:x}: {desc}",
                space_name(space),
                acc.word()
            ),
        ))
    }

    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn race(
        &mut self,
        w: &Warp,
        l: usize,
        pc: u32,
        off: usize,
        total: u64,
        acc: Access,
        c: crate::check::Conflict,
    ) {
        let other = match c.other {
            Some(t) => {
                let (x, y, z) = self.thread_of(t / 32, (t % 32) as usize);
                format!("thread ({x},{y},{z})")
            }
            None => "several threads".to_string(),
        };
        let msg = format!(
            "shared-memory race: {} of {total} bytes at shared offset 0x{off:x} conflicts with {} \
             of byte 0x{:x} by {other} since the last barrier (missing __syncthreads()?)",
            match acc {
                Access::Store => "write",
                Access::Atomic => "atomic update",
                _ => "read",
            },
            match (c.other_write, c.other_atomic) {
                (true, true) => "an atomic update",
                (true, false) => "a write",
                _ => "a read",
            },
            c.offset
        );
        let r = self.report(
            CheckKind::SharedRace,
            w.idx,
            l,
            pc,
            off as u64,
            total as u32,
            "shared",
            None,
            msg,
        );
        self.note(r, pc);
    }
}

/// New value of an atomic location given its old value.
pub fn atom_apply(op: AtomOp, bits: u8, kind: AtomKind, old: u64, b: u64, c: u64) -> u64 {
    let it = crate::ir::IntTy {
        bits,
        signed: kind == AtomKind::S,
    };
    let half = |k: FTy, x: u64, y: u64| fl::put(k, fl::get(k, x) + fl::get(k, y));
    let r = match (op, kind) {
        (AtomOp::Add, AtomKind::H) => half(FTy::F16, old, b),
        (AtomOp::Add, AtomKind::BH) => half(FTy::BF16, old, b),
        (AtomOp::Add, AtomKind::H2 | AtomKind::BH2) => {
            let k = if kind == AtomKind::H2 {
                FTy::F16
            } else {
                FTy::BF16
            };
            let lo = half(k, old & 0xFFFF, b & 0xFFFF);
            let hi = half(k, (old >> 16) & 0xFFFF, (b >> 16) & 0xFFFF);
            lo | hi << 16
        }
        (AtomOp::Add, AtomKind::F) if bits == 32 => {
            (f32::from_bits(old as u32) + f32::from_bits(b as u32)).to_bits() as u64
        }
        (AtomOp::Add, AtomKind::F) => (f64::from_bits(old) + f64::from_bits(b)).to_bits(),
        (AtomOp::Min | AtomOp::Max, AtomKind::F) => {
            let (x, y) = if bits == 32 {
                (
                    f32::from_bits(old as u32) as f64,
                    f32::from_bits(b as u32) as f64,
                )
            } else {
                (f64::from_bits(old), f64::from_bits(b))
            };
            let keep_old = if op == AtomOp::Min { x <= y } else { x >= y };
            if keep_old {
                old
            } else {
                b
            }
        }
        (AtomOp::Add, _) => old.wrapping_add(b),
        (AtomOp::Min, _) => alu::min(old, b, it),
        (AtomOp::Max, _) => alu::max(old, b, it),
        (AtomOp::Exch, _) => b,
        (AtomOp::Cas, _) => {
            if alu::zext(old, bits) == alu::zext(b, bits) {
                c
            } else {
                old
            }
        }
        (AtomOp::And, _) => old & b,
        (AtomOp::Or, _) => old | b,
        (AtomOp::Xor, _) => old ^ b,
        (AtomOp::Inc, _) => {
            let (o, lim) = (alu::zext(old, bits), alu::zext(b, bits));
            if o >= lim {
                0
            } else {
                o + 1
            }
        }
        (AtomOp::Dec, _) => {
            let (o, lim) = (alu::zext(old, bits), alu::zext(b, bits));
            if o == 0 || o > lim {
                lim
            } else {
                o - 1
            }
        }
    };
    alu::zext(r, bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_semantics() {
        let u = AtomKind::U;
        assert_eq!(atom_apply(AtomOp::Inc, 32, u, 5, 5, 0), 0);
        assert_eq!(atom_apply(AtomOp::Inc, 32, u, 4, 5, 0), 5);
        assert_eq!(atom_apply(AtomOp::Dec, 32, u, 0, 7, 0), 7);
        assert_eq!(atom_apply(AtomOp::Dec, 32, u, 9, 7, 0), 7);
        assert_eq!(atom_apply(AtomOp::Dec, 32, u, 3, 7, 0), 2);
        assert_eq!(atom_apply(AtomOp::Cas, 32, u, 3, 3, 9), 9);
        assert_eq!(atom_apply(AtomOp::Cas, 32, u, 4, 3, 9), 4);
        assert_eq!(
            atom_apply(
                AtomOp::Max,
                32,
                AtomKind::S,
                (-5i64) as u64 & 0xFFFF_FFFF,
                2,
                0
            ),
            2
        );
        assert_eq!(
            atom_apply(AtomOp::Min, 32, AtomKind::S, 2, (-5i64) as u64, 0),
            0xFFFF_FFFB
        );
        assert_eq!(
            atom_apply(
                AtomOp::Add,
                32,
                AtomKind::F,
                1.5f32.to_bits() as u64,
                2.0f32.to_bits() as u64,
                0
            ),
            3.5f32.to_bits() as u64
        );
        assert!(in_space(SHARED_WIN + 4, MemSpace::Shared));
        assert!(!in_space(SHARED_WIN + 4, MemSpace::Global));
    }
}
