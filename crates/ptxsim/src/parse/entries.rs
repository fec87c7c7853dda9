//! The outline of a PTX module: each `.entry`'s name, parameters and lines, read with the
//! simulator's own lexer and parser (so comments and strings never count) but without parsing
//! function bodies. The Jupyter kernel reads NVRTC's PTX with it (kernel names, parameter sizes,
//! one kernel's text for `%ptx`) on every backend; and which entries use a grid-wide sync
//! (`grid_sync_entries`, which parses bodies), so that their launches can be made cooperative.
//!
//! Nothing here lowers, checks or runs code.

use super::{parser, Stmt, VarDecl};
use crate::ModuleError;
use std::ops::RangeInclusive;

/// One `.entry` of a module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The (mangled) name the driver looks up.
    pub name: String,
    pub params: Vec<EntryParam>,
    /// The 1-based lines from `.entry` to its body's closing `}`.
    pub lines: RangeInclusive<usize>,
}

/// One `.param` of an `.entry`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryParam {
    pub name: String,
    /// The scalar type without its dot: `u64`, `f32`, … or `b8` for an aggregate.
    pub ty: String,
    /// Bytes: the scalar's size times its vector width and array length.
    pub size: usize,
}

/// Every `.entry` of `ptx`, in order. Bodies are skipped, not parsed, and module directives the
/// simulator does not know are skipped too: only the module's outline must be well formed.
pub fn ptx_entries(ptx: &str) -> Result<Vec<Entry>, ModuleError> {
    let ast = parser::parse_outline(ptx)?;
    Ok(ast
        .functions
        .into_iter()
        .filter(|f| f.is_entry)
        .map(|f| Entry {
            name: f.name,
            params: f.params.iter().map(param).collect(),
            lines: f.line..=f.end_line,
        })
        .collect())
}

/// The `.entry`s of `ptx` that read the grid workspace of a cooperative launch (`%envreg1` or
/// `%envreg2`, as `cooperative_groups::this_grid()` does), themselves or through a function
/// they call (directly or not, or whose address they take). Bodies are parsed here, not
/// lowered: any PTX that parses is read, whatever the simulator supports.
pub fn grid_sync_entries(ptx: &str) -> Result<Vec<String>, ModuleError> {
    let ast = parser::parse(ptx)?;
    let index: std::collections::HashMap<&str, usize> = ast
        .functions
        .iter()
        .enumerate()
        .map(|(k, f)| (f.name.as_str(), k))
        .collect();
    // Per function: whether it reads the workspace, and the functions it names.
    let mut reads = vec![false; ast.functions.len()];
    let mut names: Vec<Vec<usize>> = vec![Vec::new(); ast.functions.len()];
    for (k, f) in ast.functions.iter().enumerate() {
        for st in f.body.iter().flatten() {
            if let Stmt::Inst(i) = st {
                for o in &i.operands {
                    o.visit_names(&mut |n| {
                        if n == "%envreg1" || n == "%envreg2" {
                            reads[k] = true;
                        } else if let Some(&c) = index.get(n) {
                            names[k].push(c);
                        }
                    });
                }
            }
        }
    }
    // What each function reaches (a fixed point over the call graph).
    loop {
        let mut changed = false;
        for k in 0..reads.len() {
            if !reads[k] && names[k].iter().any(|&c| reads[c]) {
                reads[k] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    Ok(ast
        .functions
        .iter()
        .zip(&reads)
        .filter(|(f, &r)| f.is_entry && r)
        .map(|(f, _)| f.name.clone())
        .collect())
}

fn param(v: &VarDecl) -> EntryParam {
    let bits: usize =
        v.ty.scalar
            .trim_start_matches(|c: char| c.is_ascii_alphabetic())
            .parse()
            .unwrap_or(8);
    let count = v
        .dims
        .iter()
        .map(|d| d.unwrap_or(1) as usize)
        .product::<usize>();
    EntryParam {
        name: v.name.clone(),
        ty: v.ty.scalar.clone(),
        size: bits.div_ceil(8) * v.ty.vec as usize * count,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
.version 8.8
.target sm_80
.address_size 64

\t// .globl\t_Z3addPKfS0_Pfi
// .visible .entry commented_out(.param .u32 x) { ret; }
/* .entry in_a_block_comment(
   .param .u64 p
) { ret; } */
.global .align 1 .b8 $str[14] = {46, 101, 110, 116, 114, 121, 32, 102, 97, 107, 101, 40, 41, 0};

.visible .entry _Z3addPKfS0_Pfi(
\t.param .u64 .ptr .global .align 1 _Z3addPKfS0_Pfi_param_0,
\t.param .f32 _Z3addPKfS0_Pfi_param_1,
\t.param .align 8 .b8 _Z3addPKfS0_Pfi_param_2[16],
\t.param .u8 _Z3addPKfS0_Pfi_param_3
)
.maxntid 256, 1, 1
{
\t.reg .b32 %r<2>;
\t// .entry not_here(
\tnot.an.instruction.ptxsim.knows {%r1}, [x+-];
\tret;
}
.func (.param .b32 r) helper(.param .b32 a)
{
\tret;
}
.weak .entry noparams()
{
\t{ ret; }
}
";

    #[test]
    fn entries_skip_comments_bodies_and_functions() {
        let e = ptx_entries(PTX).expect("the outline parses");
        let names: Vec<&str> = e.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["_Z3addPKfS0_Pfi", "noparams"]);
        let sizes: Vec<usize> = e[0].params.iter().map(|p| p.size).collect();
        assert_eq!(sizes, [8, 4, 16, 1]);
        assert_eq!(e[0].params[0].ty, "u64");
        assert_eq!(e[0].params[2].name, "_Z3addPKfS0_Pfi_param_2");
        assert_eq!(e[0].lines, 12..=24);
        assert!(e[1].params.is_empty());
        assert_eq!(e[1].lines, 29..=32);
    }

    #[test]
    fn a_broken_outline_is_an_error() {
        assert!(ptx_entries(".version 8.8\n.visible .entry k(\n{\n").is_err());
        assert!(ptx_entries(".version 8.8\n.visible .entry k()\n{\n ret;\n").is_err());
        assert_eq!(ptx_entries("").map(|e| e.len()), Ok(0));
    }
}
