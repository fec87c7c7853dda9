//! Tensor-core instructions (`Op::Tensor`): `wmma.load/store/mma`, `mma.sync`, `ldmatrix`.
//!
//! All are `.sync.aligned`: the whole warp executes them together and exchanges fragment
//! elements. The interpreter waits for every lane of the warp (the op is a collective over all
//! 32 lanes); if some lane does not take part (a divergent branch around it, a guard predicate
//! that differs between lanes, a partial warp) the launch stops with a
//! `CheckKind::DivergentWarpCollective` fault naming the instruction, checker on or off, as the
//! GPU's result would be undefined. Compiled regions and the block tier never run these
//! instructions: they stop before them (or decline the kernel) and the interpreter runs them.
//!
//! # Fragment layouts
//!
//! `mma.sync` (`m16n8k16` f16/bf16, `m16n8k8` f16/bf16/tf32) and `ldmatrix` use the layouts
//! the PTX ISA documents ("Matrix Fragments for mma.m16n8k*", "ldmatrix"), exactly. With
//! `groupID g = lane >> 2` and `threadID_in_group t = lane % 4`, each of those layouts is a
//! sequence of *core tiles* of 8 x 4p elements (p = 2 for 16-bit multiplicands and for every
//! accumulator, 1 for tf32 multiplicands), taken column-major over the matrix (the tile below
//! first, then the next column of tiles); a lane holds p consecutive elements of each tile:
//! for A and C/D at row `8i + g`, columns `4p*j + p*t ..+p`; for B (K x N) at rows
//! `4p*i + p*t ..+p`, column `8j + g`.
//!
//! `wmma` fragments are documented as unspecified. ptxsim uses the same rule over the whole
//! MxNxK tile, which for `m16n16k16` is the layout Ampere and Hopper are reported to use (two
//! `mma.m16n8k16` tiles side by side along N): accumulator element `i` of lane `l` is row
//! `g + 8*((i >> 1) & 1)`, column `2t + (i & 1) + 8*(i >> 2)`. wmma's f16 multiplicands have
//! eight `.f16x2` registers (16 elements) whatever the shape, more than the matrix needs: their
//! elements repeat the fragment from the start (element `i` is element `i mod (rows*cols/32)`),
//! and `wmma.mma` reads the first copy. Element order within a `wmma` fragment may differ from
//! a GPU's; what `wmma.load`, `wmma.mma` and `wmma.store` compute does not depend on it.
//!
//! # Arithmetic
//!
//! Multiplicands are converted to f32 exactly (tf32: the low 13 mantissa bits of the register
//! are ignored, as the hardware does); products of f16, bf16 and tf32 values are exact in f32
//! (bf16 products outside f32's normal range excepted). Each element of D is
//! `(sum over k in increasing order of a*b, in f32) + c`, rounded to f32, then to f16 (to
//! nearest even) for an f16 accumulator. The GPU's order and internal precision of the sum are
//! not specified; results may differ from a GPU's in the last bits.
//!
//! # Memory
//!
//! `wmma.load/store` address element (r, c) of a row-major matrix at `addr + (r*stride + c) *
//! size` and of a column-major one at `addr + (c*stride + r) * size` (stride in elements, the
//! matrix's width or height when omitted). Each lane accesses the elements of its fragment
//! through the checked accesses of `memops` (bounds, alignment of each element, use after
//! free, shared-memory races), so an out-of-bounds tile is reported at the first address
//! outside; a store writes nothing unless every lane's elements pass. `ldmatrix` rows are
//! 16-byte accesses by the lanes giving their addresses. The 256-bit alignment the CUDA
//! guide asks of `load_matrix_sync`'s pointer is not checked.

#![allow(clippy::needless_range_loop)] // lane loops index several arrays by lane

use super::{Fault, Warp, Worker};
use crate::ir::*;
use crate::CheckKind;

const FULL: u32 = 0xFFFF_FFFF;

/// Elements a lane holds per core tile of fragment `f` (see the module docs).
fn per_tile(f: Frag, ty: TElem) -> usize {
    if f != Frag::C && ty == TElem::Tf32 {
        1
    } else {
        2
    }
}

/// Row and column of element `e` (below `rows*cols/32`) of fragment `f` in lane `l`.
fn coord(f: Frag, ty: TElem, (rows, _cols): (usize, usize), l: usize, e: usize) -> (usize, usize) {
    let (g, t) = (l >> 2, l & 3);
    let p = per_tile(f, ty);
    let (q, j) = (e / p, e % p);
    let inner = 4 * p;
    match f {
        Frag::A | Frag::C => {
            let nrb = rows / 8;
            (8 * (q % nrb) + g, inner * (q / nrb) + p * t + j)
        }
        Frag::B => {
            let nrb = rows / inner;
            (inner * (q % nrb) + p * t + j, 8 * (q / nrb) + g)
        }
    }
}

/// Element `e` of a fragment held in registers `regs` of lane `l` (raw bits).
fn get(w: &Warp, regs: &[Slot], ty: TElem, l: usize, e: usize) -> u64 {
    if ty.bytes() == 2 {
        (w.regs[regs[e / 2] as usize][l] >> (16 * (e % 2))) & 0xFFFF
    } else {
        w.regs[regs[e] as usize][l] & 0xFFFF_FFFF
    }
}

/// Raw element bits → f32.
fn to_f32(ty: TElem, v: u64) -> f32 {
    match ty {
        TElem::F16 => crate::sem::ieee::f16_to_f32(v as u16),
        TElem::BF16 => f32::from_bits((v as u32) << 16),
        TElem::Tf32 => f32::from_bits(v as u32 & !0x1FFF),
        TElem::F32 => f32::from_bits(v as u32),
    }
}

/// The whole matrix of fragment `f` from every lane's registers, as f32, row-major.
fn gather(w: &Warp, regs: &[Slot], f: Frag, ty: TElem, shape: (u8, u8, u8)) -> Vec<f32> {
    let (r, c) = dims(f, shape);
    let u = r * c / 32;
    let mut out = vec![0f32; r * c];
    for l in 0..32 {
        for e in 0..u {
            let (i, j) = coord(f, ty, (r, c), l, e);
            out[i * c + j] = to_f32(ty, get(w, regs, ty, l, e));
        }
    }
    out
}

impl Worker<'_> {
    /// Run tensor-core site `i.imm` for the lanes `m` of the running group.
    pub(super) fn tensor(&mut self, w: &mut Warp, i: &Inst, m: u32, pc: u32) -> Result<(), Fault> {
        if m == 0 {
            return Ok(());
        }
        let prog = self.ctx.prog;
        let Some(site) = prog.tensor.get(i.imm as usize) else {
            return Ok(());
        };
        if m != FULL {
            let l = m.trailing_zeros() as usize;
            return Err(Box::new(self.report(
                CheckKind::DivergentWarpCollective,
                w.idx,
                l,
                pc,
                0,
                0,
                "",
                None,
                format!(
                    "`{}` executed by {} of the 32 lanes of the warp (lanes 0x{m:08x}): \
                     wmma, mma and ldmatrix are .sync.aligned, every lane of the warp must \
                     execute the same instruction together (not under a divergent branch, \
                     nor in a partial warp); on a GPU the result is undefined",
                    site.name,
                    m.count_ones()
                ),
            )));
        }
        match site.kind {
            TensorKind::Load { frag, row } => self.wmma_load(w, site, frag, row, pc),
            TensorKind::Store { row } => self.wmma_store(w, site, row, pc),
            TensorKind::Mma { .. } => {
                mma(w, site);
                Ok(())
            }
            TensorKind::Ldmatrix { num, trans } => self.ldmatrix(w, site, num, trans, pc),
        }
    }

    /// Byte offset of element (r, c) of a matrix in memory.
    fn elem_addr(
        w: &Warp,
        site: &TensorSite,
        l: usize,
        row: bool,
        (r, c): (usize, usize),
        (rows, cols): (usize, usize),
    ) -> u64 {
        let stride = if site.stride == NONE {
            if row {
                cols as u64
            } else {
                rows as u64
            }
        } else {
            w.regs[site.stride as usize][l] as u32 as u64
        };
        let idx = if row {
            r as u64 * stride + c as u64
        } else {
            c as u64 * stride + r as u64
        };
        let base = w.regs[site.addr as usize][l].wrapping_add(site.imm as u64);
        base.wrapping_add(idx.wrapping_mul(site.ty[0].bytes()))
    }

    fn wmma_load(
        &mut self,
        w: &mut Warp,
        site: &TensorSite,
        frag: Frag,
        row: bool,
        pc: u32,
    ) -> Result<(), Fault> {
        let ty = site.ty[0];
        let (r, c) = dims(frag, site.shape);
        let u = r * c / 32;
        let size = ty.bytes();
        let per_reg = if size == 2 { 2 } else { 1 };
        let n = site.d.len() * per_reg;
        let mut vals = vec![[0u64; 32]; site.d.len()];
        for l in 0..32 {
            for e in 0..n {
                let rc = coord(frag, ty, (r, c), l, e % u);
                let a = Self::elem_addr(w, site, l, row, rc, (r, c));
                let mut v = [0u64];
                self.lane_load(w, l, pc, site.space, a, size, &mut v)?;
                let shift = if per_reg == 2 { 16 * (e % 2) } else { 0 };
                vals[e / per_reg][l] |= v[0] << shift;
            }
        }
        for (s, v) in site.d.iter().zip(vals) {
            w.regs[*s as usize] = v;
        }
        Ok(())
    }

    fn wmma_store(
        &mut self,
        w: &mut Warp,
        site: &TensorSite,
        row: bool,
        pc: u32,
    ) -> Result<(), Fault> {
        let ty = site.ty[0];
        let (r, c) = dims(Frag::C, site.shape);
        let u = r * c / 32;
        let mut items = Vec::with_capacity(32 * u);
        for l in 0..32 {
            for e in 0..u {
                let rc = coord(Frag::C, ty, (r, c), l, e);
                let a = Self::elem_addr(w, site, l, row, rc, (r, c));
                items.push((l, a, get(w, &site.a, ty, l, e)));
            }
        }
        self.lane_stores(w, pc, site.space, ty.bytes(), &items)
    }

    fn ldmatrix(
        &mut self,
        w: &mut Warp,
        site: &TensorSite,
        num: u8,
        trans: bool,
        pc: u32,
    ) -> Result<(), Fault> {
        // rows[j][r]: the 8 b16 elements of row r of matrix j, from the lane that gives its
        // address (lane 8j + r).
        let mut rows = [[[0u16; 8]; 8]; 4];
        for (j, mat) in rows.iter_mut().enumerate().take(num as usize) {
            for (r, out) in mat.iter_mut().enumerate() {
                let l = 8 * j + r;
                let a = w.regs[site.addr as usize][l].wrapping_add(site.imm as u64);
                let mut v = [0u64; 2];
                self.lane_load(w, l, pc, site.space, a, 16, &mut v)?;
                for (k, x) in out.iter_mut().enumerate() {
                    *x = (v[k / 4] >> (16 * (k % 4))) as u16;
                }
            }
        }
        let mut vals = [[0u64; 32]; 4];
        for (j, mat) in rows.iter().enumerate().take(num as usize) {
            for l in 0..32 {
                let (g, t) = (l >> 2, l & 3);
                let (lo, hi) = if trans {
                    (mat[2 * t][g], mat[2 * t + 1][g])
                } else {
                    (mat[g][2 * t], mat[g][2 * t + 1])
                };
                vals[j][l] = lo as u64 | (hi as u64) << 16;
            }
        }
        for (s, v) in site.d.iter().zip(vals) {
            w.regs[*s as usize] = v;
        }
        Ok(())
    }
}

/// `wmma.mma` / `mma.sync`: D = A * B + C over the whole warp's fragments.
fn mma(w: &mut Warp, site: &TensorSite) {
    let sh = site.shape;
    let (m, n, k) = (sh.0 as usize, sh.1 as usize, sh.2 as usize);
    let a = gather(w, &site.a, Frag::A, site.ty[0], sh);
    let b = gather(w, &site.b, Frag::B, site.ty[1], sh);
    let c = gather(w, &site.c, Frag::C, site.ty[2], sh);
    let mut d = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0f32;
            for kk in 0..k {
                s += a[i * k + kk] * b[kk * n + j];
            }
            d[i * n + j] = s + c[i * n + j];
        }
    }
    let dt = site.ty[3];
    let u = m * n / 32;
    let mut vals = vec![[0u64; 32]; site.d.len()];
    for l in 0..32 {
        for e in 0..u {
            let (i, j) = coord(Frag::C, dt, (m, n), l, e);
            let x = d[i * n + j];
            if dt == TElem::F16 {
                vals[e / 2][l] |= (crate::sem::ieee::f32_to_f16(x) as u64) << (16 * (e % 2));
            } else {
                vals[e][l] = x.to_bits() as u64;
            }
        }
    }
    for (s, v) in site.d.iter().zip(vals) {
        w.regs[*s as usize] = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sem::convert::round_tf32;

    /// The documented mma.m16n8k16 layouts, written out as the PTX ISA gives them.
    #[test]
    fn core_tile_rule_matches_the_documented_mma_layouts() {
        for l in 0..32 {
            let (g, t) = (l >> 2, l & 3);
            for i in 0..8 {
                let row = if i % 4 < 2 { g } else { g + 8 };
                let col = t * 2 + (i & 1) + if i >= 4 { 8 } else { 0 };
                assert_eq!(coord(Frag::A, TElem::F16, (16, 16), l, i), (row, col));
            }
            for i in 0..4 {
                let row = t * 2 + (i & 1) + if i >= 2 { 8 } else { 0 };
                assert_eq!(coord(Frag::B, TElem::F16, (16, 8), l, i), (row, g));
                let crow = if i < 2 { g } else { g + 8 };
                assert_eq!(
                    coord(Frag::C, TElem::F32, (16, 8), l, i),
                    (crow, t * 2 + (i & 1))
                );
                // m16n8k8 tf32 A: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4).
                let arow = g + if i % 2 == 1 { 8 } else { 0 };
                let acol = t + if i >= 2 { 4 } else { 0 };
                assert_eq!(coord(Frag::A, TElem::Tf32, (16, 8), l, i), (arow, acol));
            }
            for i in 0..2 {
                assert_eq!(coord(Frag::B, TElem::Tf32, (8, 8), l, i), (t + 4 * i, g));
            }
        }
    }

    #[test]
    fn every_fragment_covers_its_matrix_once() {
        for (f, ty, rc) in [
            (Frag::A, TElem::F16, (16, 16)),
            (Frag::B, TElem::F16, (16, 16)),
            (Frag::C, TElem::F32, (16, 16)),
            (Frag::A, TElem::F16, (32, 16)),
            (Frag::B, TElem::F16, (16, 8)),
            (Frag::C, TElem::F32, (32, 8)),
            (Frag::A, TElem::F16, (8, 16)),
            (Frag::B, TElem::F16, (16, 32)),
            (Frag::C, TElem::F16, (8, 32)),
            (Frag::A, TElem::Tf32, (16, 8)),
            (Frag::B, TElem::Tf32, (8, 16)),
        ] {
            let mut seen = vec![0u8; rc.0 * rc.1];
            for l in 0..32 {
                for e in 0..rc.0 * rc.1 / 32 {
                    let (r, c) = coord(f, ty, rc, l, e);
                    seen[r * rc.1 + c] += 1;
                }
            }
            assert!(seen.iter().all(|&s| s == 1), "{f:?} {ty:?} {rc:?}");
        }
    }

    #[test]
    fn tf32_rounding() {
        let one = 1f32.to_bits();
        assert_eq!(round_tf32(one | 0x1000, Tf32Rnd::Rna), one + 0x2000);
        assert_eq!(round_tf32(one | 0x1000, Tf32Rnd::Rn), one);
        assert_eq!(round_tf32(one | 0x3000, Tf32Rnd::Rn), one + 0x4000);
        assert_eq!(round_tf32(one | 0x1FFF, Tf32Rnd::Rz), one);
        assert_eq!(
            round_tf32(f32::MAX.to_bits(), Tf32Rnd::Rna),
            f32::INFINITY.to_bits()
        );
        assert_eq!(
            round_tf32((-1.5f32).to_bits() | 0xFFF, Tf32Rnd::Rna),
            (-1.5f32).to_bits()
        );
    }
}
