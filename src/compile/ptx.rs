//! The compile path's reading of NVRTC's PTX: each `.entry`'s parameter list (sizes, to check
//! against the C signature parsed from the source) and one kernel's text for `%ptx`. The PTX is
//! read by ptxsim's parser (`ptxsim::ptx_entries`, an outline that skips bodies and comments);
//! this module must not search PTX text itself.

/// One `.param` of an `.entry`.
pub use ptxsim::EntryParam as PtxParam;

/// The `.entry` named `name`, or `None` if there is none (or the PTX does not parse).
fn entry(ptx: &str, name: &str) -> Option<ptxsim::Entry> {
    ptxsim::ptx_entries(ptx)
        .ok()?
        .into_iter()
        .find(|e| e.name == name)
}

/// The parameter list of `.entry name(…)`, or `None` if there is no such entry.
pub fn entry_params(ptx: &str, name: &str) -> Option<Vec<PtxParam>> {
    entry(ptx, name).map(|e| e.params)
}

/// The module header (`.version`, `.target`, `.address_size`) and the text of `.entry NAME`
/// with its body (whole lines, from the `.entry` line to the closing `}`), or `None`.
pub fn entry_text(ptx: &str, name: &str) -> Option<String> {
    let e = entry(ptx, name)?;
    let lines: Vec<&str> = ptx.lines().collect();
    let text = lines.get(e.lines.start().checked_sub(1)?..*e.lines.end())?;
    let header: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| {
            let t = l.trim_start();
            t.starts_with(".version") || t.starts_with(".target") || t.starts_with(".address_size")
        })
        .collect();
    Some(format!("{}\n\n{}\n", header.join("\n"), text.join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = ".version 8.8\n.target sm_80\n.address_size 64\n\n\t// .globl\t_Z3addPKfS0_Pfi\n\n.visible .entry _Z3addPKfS0_Pfi(\n\t.param .u64 .ptr .global .align 1 _Z3addPKfS0_Pfi_param_0,\n\t.param .f32 _Z3addPKfS0_Pfi_param_1,\n\t.param .align 8 .b8 _Z3addPKfS0_Pfi_param_2[16],\n\t.param .u8 _Z3addPKfS0_Pfi_param_3\n)\n{\n\tret;\n}\n.weak .entry noparams()\n{\n\tret;\n}\n";

    #[test]
    fn ptx_entry_params_and_text() {
        let p = entry_params(PTX, "_Z3addPKfS0_Pfi").unwrap_or_default();
        let sizes: Vec<usize> = p.iter().map(|p| p.size).collect();
        assert_eq!(sizes, [8, 4, 16, 1]);
        assert_eq!(p[0].ty, "u64");
        assert_eq!(entry_params(PTX, "noparams"), Some(vec![]));
        assert_eq!(entry_params(PTX, "_Z3add"), None);
        let text = entry_text(PTX, "noparams").unwrap_or_default();
        assert!(text.starts_with(".version 8.8\n.target sm_80\n.address_size 64"));
        assert!(
            text.contains(".weak .entry noparams()\n{\n\tret;\n}"),
            "{text}"
        );
        assert!(!text.contains("_Z3add"));
    }

    #[test]
    fn a_commented_out_entry_is_not_an_entry() {
        let ptx = PTX.replace(
            ".weak .entry noparams()",
            "// .visible .entry _Z3addPKfS0_Pfi(.param .u32 x) {}\n.weak .entry noparams()",
        );
        let p = entry_params(&ptx, "_Z3addPKfS0_Pfi").unwrap_or_default();
        assert_eq!(p.len(), 4);
        let text = entry_text(&ptx, "_Z3addPKfS0_Pfi").unwrap_or_default();
        assert!(text.contains("_param_3\n)\n{\n\tret;\n}"), "{text}");
        assert_eq!(entry_params("// .entry ghost()\n", "ghost"), None);
    }
}
