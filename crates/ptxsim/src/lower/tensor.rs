//! Instruction selection for the tensor-core instructions: `wmma.load/store/mma`, `mma.sync`,
//! `ldmatrix`, and `cvt.*.tf32.f32`.
//!
//! Each warp-wide instruction becomes one `Op::Tensor` whose operands (up to 32 registers)
//! live in a `TensorSite` of `Program::tensor`; `exec::tensor` runs it. Shapes, types and
//! fragment sizes are checked here, so that a form the simulator does not implement is
//! `ModuleError::Unsupported` at load time, and a wrong register count a parse error.

use super::types::{Mn, Ty, TK};
use super::{perr, unsupported, MemRef, KB};
use crate::ir::*;
use crate::parse::{Instr, Operand};
use crate::ModuleError;

/// Whether `lower_tensor` handles instruction `opcode`.
pub(super) fn is_tensor(opcode: &str) -> bool {
    let base = opcode.split('.').next().unwrap_or("");
    matches!(base, "wmma" | "mma" | "ldmatrix") || (base == "cvt" && opcode.ends_with(".tf32.f32"))
}

fn elem(s: &str) -> Option<TElem> {
    Some(match s {
        "f16" => TElem::F16,
        "bf16" => TElem::BF16,
        "tf32" => TElem::Tf32,
        "f32" => TElem::F32,
        _ => return None,
    })
}

/// `m16n16k16` → (16, 16, 16).
fn shape(s: &str) -> Option<(u8, u8, u8)> {
    let r = s.strip_prefix('m')?;
    let (m, r) = r.split_once('n')?;
    let (n, k) = r.split_once('k')?;
    Some((m.parse().ok()?, n.parse().ok()?, k.parse().ok()?))
}

impl KB<'_> {
    fn regs(
        &mut self,
        o: &Operand,
        want: usize,
        dst: bool,
        i: &Instr,
    ) -> Result<Vec<Slot>, ModuleError> {
        let Operand::Vector(v) = o else {
            return Err(perr(
                i.line,
                format!("`{}` needs a register vector `{{...}}`", i.opcode),
            ));
        };
        if v.len() != want {
            return Err(perr(
                i.line,
                format!(
                    "`{}`: a fragment of {want} registers, not {}",
                    i.opcode,
                    v.len()
                ),
            ));
        }
        let b32 = Ty { k: TK::B, bits: 32 };
        v.iter()
            .map(|o| {
                if dst {
                    self.dst(o, i.line)
                } else {
                    self.src(o, b32, i.line)
                }
            })
            .collect()
    }

    fn tensor_mem(
        &mut self,
        o: &Operand,
        mn: &Mn,
        i: &Instr,
    ) -> Result<(Slot, i64, MemSpace), ModuleError> {
        match self.mem(o, mn.space(), i.line)? {
            MemRef::Addr { base, imm, space } => Ok((base, imm, space)),
            MemRef::KParam(_) => Err(unsupported(i.line, i.opcode.clone())),
        }
    }

    /// Lower one tensor-core instruction (`is_tensor`).
    pub(super) fn lower_tensor(
        &mut self,
        i: &Instr,
        g: Option<(Slot, bool)>,
    ) -> Result<(), ModuleError> {
        let line = i.line;
        let unsup = || unsupported(line, i.opcode.clone());
        let ops = &i.operands;
        let parts: Vec<&str> = i.opcode.split('.').collect();
        let n = NONE;
        if parts[0] == "cvt" {
            let rnd = if parts.contains(&"rna") {
                Tf32Rnd::Rna
            } else if parts.contains(&"rn") {
                Tf32Rnd::Rn
            } else if parts.contains(&"rz") {
                Tf32Rnd::Rz
            } else {
                return Err(unsup());
            };
            if parts.iter().any(|p| matches!(*p, "relu" | "satfinite")) || ops.len() != 2 {
                return Err(unsup());
            }
            let d = self.dst(&ops[0], line)?;
            let a = self.src(&ops[1], Ty { k: TK::B, bits: 32 }, line)?;
            self.emit(Op::CvtTf32(rnd), g, [d, a, n, n, n, n], 0);
            return Ok(());
        }
        let mn = Mn::split(&i.opcode);
        let has = |m: &str| parts.contains(&m);
        if !has("sync") || !has("aligned") {
            return Err(unsup());
        }
        let shp = parts.iter().find_map(|p| shape(p));
        let types: Vec<TElem> = parts.iter().filter_map(|p| elem(p)).collect();
        let layouts: Vec<bool> = parts
            .iter()
            .filter_map(|p| match *p {
                "row" => Some(true),
                "col" => Some(false),
                _ => None,
            })
            .collect();
        let mut site = TensorSite {
            kind: TensorKind::Mma {
                a_row: true,
                b_row: false,
            },
            name: i.opcode.clone(),
            shape: shp.unwrap_or((0, 0, 0)),
            mma: parts[0] == "mma",
            ty: [TElem::F32; 4],
            d: vec![],
            a: vec![],
            b: vec![],
            c: vec![],
            addr: n,
            imm: 0,
            space: MemSpace::Generic,
            stride: n,
        };
        let wmma_shape_ok = |s: (u8, u8, u8), t: TElem| match t {
            TElem::F16 | TElem::BF16 => matches!(s, (16, 16, 16) | (32, 8, 16) | (8, 32, 16)),
            TElem::Tf32 => s == (16, 16, 8),
            TElem::F32 => false,
        };
        match (parts[0], parts.get(1).copied()) {
            ("wmma", Some("load")) => {
                let frag = match parts.get(2).copied() {
                    Some("a") => Frag::A,
                    Some("b") => Frag::B,
                    Some("c") => Frag::C,
                    _ => return Err(unsup()),
                };
                let (Some(s), [t], [row]) = (shp, types.as_slice(), layouts.as_slice()) else {
                    return Err(unsup());
                };
                let ok = match frag {
                    Frag::C => {
                        matches!(*t, TElem::F16 | TElem::F32)
                            && matches!(s, (16, 16, 16) | (32, 8, 16) | (8, 32, 16) | (16, 16, 8))
                    }
                    _ => wmma_shape_ok(s, *t),
                };
                if !ok || ops.len() < 2 {
                    return Err(unsup());
                }
                site.kind = TensorKind::Load { frag, row: *row };
                site.ty = [*t; 4];
                let want = frag_regs(frag, *t, s, false);
                site.d = self.regs(&ops[0], want, true, i)?;
                (site.addr, site.imm, site.space) = self.tensor_mem(&ops[1], &mn, i)?;
                if let Some(o) = ops.get(2) {
                    site.stride = self.src(o, Ty { k: TK::U, bits: 32 }, line)?;
                }
            }
            ("wmma", Some("store")) => {
                let (Some(s), [t], [row]) = (shp, types.as_slice(), layouts.as_slice()) else {
                    return Err(unsup());
                };
                if parts.get(2) != Some(&"d")
                    || !matches!(*t, TElem::F16 | TElem::F32)
                    || !matches!(s, (16, 16, 16) | (32, 8, 16) | (8, 32, 16) | (16, 16, 8))
                    || ops.len() < 2
                {
                    return Err(unsup());
                }
                site.kind = TensorKind::Store { row: *row };
                site.ty = [*t; 4];
                (site.addr, site.imm, site.space) = self.tensor_mem(&ops[0], &mn, i)?;
                let want = frag_regs(Frag::C, *t, s, false);
                site.a = self.regs(&ops[1], want, false, i)?;
                if let Some(o) = ops.get(2) {
                    site.stride = self.src(o, Ty { k: TK::U, bits: 32 }, line)?;
                }
            }
            ("wmma", Some("mma")) | ("mma", Some("sync")) => {
                let Some(s) = shp else { return Err(unsup()) };
                if has("satfinite") || ops.len() != 4 {
                    return Err(unsup());
                }
                let [a_row, b_row] = layouts.as_slice() else {
                    return Err(unsup());
                };
                // `.dtype.ctype` (f16 multiplicands) or `.dtype.atype.btype.ctype`.
                let ty = match types.as_slice() {
                    [d, c] => [TElem::F16, TElem::F16, *c, *d],
                    [d, a, b, c] => [*a, *b, *c, *d],
                    _ => return Err(unsup()),
                };
                let accum_ok = |t: TElem| matches!(t, TElem::F16 | TElem::F32);
                let ok = ty[0] == ty[1]
                    && accum_ok(ty[2])
                    && accum_ok(ty[3])
                    && (ty[0] == TElem::F16 || (ty[2] == TElem::F32 && ty[3] == TElem::F32))
                    && if site.mma {
                        *a_row
                            && !*b_row
                            && match ty[0] {
                                TElem::F16 | TElem::BF16 => matches!(s, (16, 8, 16) | (16, 8, 8)),
                                TElem::Tf32 => s == (16, 8, 8),
                                TElem::F32 => false,
                            }
                    } else {
                        wmma_shape_ok(s, ty[0])
                    };
                if !ok {
                    return Err(unsup());
                }
                site.kind = TensorKind::Mma {
                    a_row: *a_row,
                    b_row: *b_row,
                };
                site.ty = ty;
                let mma = site.mma;
                site.d = self.regs(&ops[0], frag_regs(Frag::C, ty[3], s, mma), true, i)?;
                site.a = self.regs(&ops[1], frag_regs(Frag::A, ty[0], s, mma), false, i)?;
                site.b = self.regs(&ops[2], frag_regs(Frag::B, ty[1], s, mma), false, i)?;
                site.c = self.regs(&ops[3], frag_regs(Frag::C, ty[2], s, mma), false, i)?;
            }
            ("ldmatrix", Some("sync")) => {
                let num = if has("x1") {
                    1
                } else if has("x2") {
                    2
                } else if has("x4") {
                    4
                } else {
                    return Err(unsup());
                };
                if !has("m8n8") || !has("b16") || ops.len() != 2 {
                    return Err(unsup());
                }
                site.kind = TensorKind::Ldmatrix {
                    num,
                    trans: has("trans"),
                };
                site.shape = (8, 8, 0);
                site.ty = [TElem::F16; 4];
                site.d = self.regs(&ops[0], num as usize, true, i)?;
                (site.addr, site.imm, site.space) = self.tensor_mem(&ops[1], &mn, i)?;
            }
            _ => return Err(unsup()),
        }
        let all = self.konst(0xFFFF_FFFF);
        let idx = self.tensor.len() as i64;
        self.tensor.push(site);
        self.emit(Op::Tensor, g, [n, n, n, n, all, n], idx);
        Ok(())
    }
}
