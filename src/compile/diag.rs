//! NVRTC diagnostics → messages that point into the `%%cuda` cell: for each diagnostic the
//! cell line number, the source line and a caret under the column NVRTC marked.
//!
//! This module only reads NVRTC's log text and renders it; it must not run NVRTC.

use std::sync::OnceLock;

/// One NVRTC diagnostic.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    /// The file NVRTC named: the cell's program name, a header, or `__nv_name_map`.
    pub file: String,
    /// 1-based line in that file.
    pub line: usize,
    /// `error`, `catastrophic error`, `warning #177-D`, `remark`, …
    pub severity: String,
    pub message: String,
    /// The source line NVRTC echoed (without its two-space indent).
    pub echoed: Option<String>,
    /// The column (0-based, in `echoed`) of NVRTC's caret.
    pub caret: Option<usize>,
}

impl Diagnostic {
    pub fn is_error(&self) -> bool {
        self.severity.contains("error")
    }
}

fn header_re() -> &'static regex::Regex {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(
            r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<sev>catastrophic error|error|warning|remark|note)(?P<num> #[\w-]+)?: (?P<msg>.*)$",
        )
        .unwrap_or_else(|_| unreachable!("constant regex"))
    })
}

/// Parses an NVRTC log. Lines that belong to no diagnostic (the "N errors detected" summary,
/// "Remark: the warnings can be suppressed …") are dropped.
pub fn parse_log(log: &str) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::new();
    let lines: Vec<&str> = log.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let Some(c) = header_re().captures(lines[i]) else {
            i += 1;
            continue;
        };
        let mut d = Diagnostic {
            file: c["file"].to_string(),
            line: c["line"].parse().unwrap_or(0),
            severity: format!(
                "{}{}",
                &c["sev"],
                c.name("num").map(|m| m.as_str()).unwrap_or("")
            ),
            message: c["msg"].to_string(),
            echoed: None,
            caret: None,
        };
        i += 1;
        // Continuation lines of the message are indented; the echoed source line is indented by
        // two spaces and followed by a caret line.
        if i + 1 < lines.len() && lines[i + 1].trim() == "^" {
            let echoed = lines[i].strip_prefix("  ").unwrap_or(lines[i]);
            d.echoed = Some(echoed.to_string());
            let caret_line = lines[i + 1];
            d.caret = caret_line
                .find('^')
                .map(|c| c.saturating_sub(2).min(echoed.len()));
            i += 2;
        } else if i < lines.len() && !lines[i].trim().is_empty() && !header_re().is_match(lines[i])
        {
            // A message continued on the next line(s) without a caret.
            while i < lines.len()
                && lines[i].starts_with(' ')
                && !(i + 1 < lines.len() && lines[i + 1].trim() == "^")
            {
                d.message.push(' ');
                d.message.push_str(lines[i].trim());
                i += 1;
            }
            if i + 1 < lines.len() && lines[i + 1].trim() == "^" {
                let echoed = lines[i].strip_prefix("  ").unwrap_or(lines[i]);
                d.echoed = Some(echoed.to_string());
                d.caret = lines[i + 1]
                    .find('^')
                    .map(|c| c.saturating_sub(2).min(echoed.len()));
                i += 2;
            }
        }
        out.push(d);
    }
    out
}

/// Renders diagnostics for the user. `program` is the cell's NVRTC program name, `source` the
/// cell's CUDA text and `first_line` the cell line of its first line.
pub fn render(diags: &[Diagnostic], program: &str, source: &str, first_line: usize) -> String {
    let src_lines: Vec<&str> = source.lines().collect();
    let mut out = String::new();
    for d in diags {
        if !out.is_empty() {
            out.push('\n');
        }
        let in_cell = d.file == program || d.file.ends_with(&format!("/{program}"));
        if in_cell {
            let cell_line = first_line + d.line.saturating_sub(1);
            out.push_str(&format!(
                "cell line {cell_line}: {}: {}\n",
                d.severity, d.message
            ));
            let original = src_lines.get(d.line.wrapping_sub(1)).copied();
            let shown = match (original, &d.echoed) {
                (Some(o), Some(e)) if o.trim_end() == e.trim_end() => o.to_string(),
                (_, Some(e)) => e.clone(),
                (Some(o), None) => o.to_string(),
                (None, None) => String::new(),
            };
            // NVRTC often names the line after the mistake (a missing `;`): show the two
            // lines above an error too, each with its cell line number.
            let gutter = format!("{cell_line}");
            if d.is_error() {
                for above in d.line.saturating_sub(2).max(1)..d.line {
                    if let Some(text) = src_lines.get(above - 1) {
                        let n = first_line + above - 1;
                        out.push_str(&format!("{n:>w$} | {text}\n", w = gutter.len()));
                    }
                }
            }
            out.push_str(&format!("{gutter} | {shown}\n"));
            if let Some(col) = d.caret {
                out.push_str(&format!(
                    "{} | {}^\n",
                    " ".repeat(gutter.len()),
                    caret_padding(&shown, col)
                ));
            }
        } else if d.file == "__nv_name_map" {
            let expr = d
                .echoed
                .as_deref()
                .and_then(|e| e.trim().strip_prefix("#pragma nv_mangled_name"))
                .map(|e| e.trim().trim_start_matches('&').to_string());
            match expr {
                Some(e) => out.push_str(&format!(
                    "in the instantiation `{e}`: {}: {}\n",
                    d.severity, d.message
                )),
                None => out.push_str(&format!("{}: {}\n", d.severity, d.message)),
            }
        } else {
            out.push_str(&format!(
                "{}({}): {}: {}\n",
                d.file, d.line, d.severity, d.message
            ));
            if let Some(e) = &d.echoed {
                out.push_str(&format!("  {e}\n"));
                if let Some(col) = d.caret {
                    out.push_str(&format!("  {}^\n", caret_padding(e, col)));
                }
            }
        }
    }
    out.trim_end().to_string()
}

/// Whitespace up to `col` that keeps the source line's tabs, so the caret lines up.
fn caret_padding(line: &str, col: usize) -> String {
    line.chars()
        .take(col)
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = r#"cell.cu(3): error: identifier "undefined_thing" is undefined
    if (i < n) c[i] = a[i] + b[i] + undefined_thing;
                                    ^

cell.cu(5): warning #1105-D: #warning directive: hello
    #warning hello
     ^

Remark: The warnings can be suppressed with "-diag-suppress <warning-number>"

__nv_name_map(3): error: identifier "scale" is undefined
  #pragma nv_mangled_name &scale<double>
                           ^

1 error detected in the compilation of "cell.cu".
"#;

    #[test]
    fn diag_parse_and_render_with_cell_lines_and_carets() {
        let d = parse_log(LOG);
        assert_eq!(d.len(), 3, "{d:?}");
        assert_eq!(d[0].line, 3);
        assert!(d[0].is_error());
        assert_eq!(d[0].caret, Some(34));
        assert_eq!(d[1].severity, "warning #1105-D");
        let src = "__global__ void add(const float* a, const float* b, float* c, int n) {\n  int i = 0;\n  if (i < n) c[i] = a[i] + b[i] + undefined_thing;\n}\n  #warning hello\n";
        let text = render(&d, "cell.cu", src, 10);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "cell line 12: error: identifier \"undefined_thing\" is undefined"
        );
        // The two lines above the error, then the line NVRTC names, then the caret.
        assert_eq!(
            lines[1],
            "10 | __global__ void add(const float* a, const float* b, float* c, int n) {"
        );
        assert_eq!(lines[2], "11 |   int i = 0;");
        assert_eq!(
            lines[3],
            "12 |   if (i < n) c[i] = a[i] + b[i] + undefined_thing;"
        );
        let caret = lines[4].find('^').unwrap_or(0);
        assert_eq!(&lines[3][caret..caret + 9], "undefined");
        // A warning shows its own line only.
        let w = lines
            .iter()
            .position(|l| l.starts_with("cell line 14"))
            .unwrap_or(0);
        assert_eq!(lines[w + 1], "14 |   #warning hello");
        assert!(text.contains("cell line 14: warning #1105-D"), "{text}");
        assert!(
            text.contains("in the instantiation `scale<double>`"),
            "{text}"
        );
    }
}
