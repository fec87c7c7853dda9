//! Just enough reading of NVRTC's PTX text for the compile path: each `.entry`'s parameter list
//! (sizes, to check against the C signature parsed from the source) and one kernel's text for
//! `%ptx`. The full PTX parser is ptxsim's; this module must not grow into one.

/// One `.param` of an `.entry`.
#[derive(Debug, Clone, PartialEq)]
pub struct PtxParam {
    /// `u64`, `f32`, … or `b8` for an aggregate.
    pub ty: String,
    pub size: usize,
}

/// The parameter list of `.entry name(…)`, or `None` if there is no such entry.
pub fn entry_params(ptx: &str, name: &str) -> Option<Vec<PtxParam>> {
    let start = find_entry(ptx, name)?;
    let rest = &ptx[start..];
    let open = rest.find('(')?;
    let head = &rest[..open];
    if head.contains('{') {
        return Some(Vec::new()); // `.entry name {` without parameters
    }
    let close = rest[open..].find(')')? + open;
    let list = &rest[open + 1..close];
    let mut params = Vec::new();
    for decl in list.split(',') {
        let words: Vec<&str> = decl.split_whitespace().collect();
        if words.is_empty() {
            continue;
        }
        let ty = words
            .iter()
            .find(|w| {
                w.starts_with('.')
                    && !matches!(
                        **w,
                        ".param" | ".ptr" | ".global" | ".shared" | ".const" | ".local" | ".align"
                    )
            })
            .map(|w| w.trim_start_matches('.').to_string())
            .unwrap_or_default();
        let elem = type_size(&ty).unwrap_or(1);
        let last = words.last().copied().unwrap_or("");
        let count = last
            .find('[')
            .and_then(|b| last[b + 1..].trim_end_matches(']').parse::<usize>().ok())
            .unwrap_or(1);
        params.push(PtxParam {
            ty,
            size: elem * count,
        });
    }
    Some(params)
}

fn type_size(ty: &str) -> Option<usize> {
    let digits: String = ty.chars().skip(1).collect();
    let bits: usize = digits.parse().ok()?;
    Some(bits.div_ceil(8))
}

/// Byte offset of `.entry NAME` (followed by `(`, whitespace or `{`).
fn find_entry(ptx: &str, name: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(pos) = ptx[from..].find(".entry") {
        let at = from + pos;
        let after = ptx[at + 6..].trim_start();
        if let Some(rest) = after.strip_prefix(name) {
            if rest.starts_with(['(', ' ', '\t', '\n', '\r', '{']) {
                return Some(at);
            }
        }
        from = at + 6;
    }
    None
}

/// The module header (`.version`, `.target`, `.address_size`) and the text of `.entry NAME`
/// with its body, or `None`.
pub fn entry_text(ptx: &str, name: &str) -> Option<String> {
    let at = find_entry(ptx, name)?;
    // Include the linkage directive (`.visible` / `.weak`) on the same line.
    let line_start = ptx[..at].rfind('\n').map(|p| p + 1).unwrap_or(0);
    let body_open = ptx[at..].find('{')? + at;
    let mut depth = 0i32;
    let mut end = ptx.len();
    for (i, c) in ptx[body_open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    end = body_open + i + 1;
                    break;
                }
            }
            _ => {}
        }
    }
    let header: Vec<&str> = ptx
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            t.starts_with(".version") || t.starts_with(".target") || t.starts_with(".address_size")
        })
        .collect();
    Some(format!(
        "{}\n\n{}\n",
        header.join("\n"),
        &ptx[line_start..end]
    ))
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
}
