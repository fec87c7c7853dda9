//! Splits a cell into the pieces that run in order: a cell magic (`%%cuda …` on the first
//! non-blank line takes the whole cell), magic lines (`%name …`) and runs of Rust source between
//! them. Pure text work: it runs nothing.

/// One piece of a cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// A whole-cell magic: the header line (starting with `%%`), the body, and the cell line
    /// number (1-based) of the body's first line.
    CellMagic {
        header: String,
        body: String,
        body_first_line: usize,
    },
    /// One magic line and its 1-based line number in the cell.
    Magic { line: String, line_no: usize },
    /// Rust source (may include evcxr's `:` commands) starting at 1-based `first_line`.
    Rust { code: String, first_line: usize },
}

/// Is this line a magic line? (`%` after optional indentation, followed by a letter.)
pub fn is_magic_line(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with('%')
        && t[1..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
}

/// Split `code` into segments. Blank Rust runs are dropped.
pub fn split_cell(code: &str) -> Vec<Segment> {
    let lines: Vec<&str> = code.split('\n').collect();
    if let Some(first) = lines.iter().position(|l| !l.trim().is_empty()) {
        let t = lines[first].trim_start();
        if t.starts_with("%%") {
            return vec![Segment::CellMagic {
                header: t.trim_end().to_string(),
                body: lines[first + 1..].join("\n"),
                body_first_line: first + 2,
            }];
        }
    }
    let mut segments = Vec::new();
    let mut rust: Vec<&str> = Vec::new();
    let mut rust_start = 1;
    let flush = |rust: &mut Vec<&str>, start: usize, segments: &mut Vec<Segment>| {
        if rust.iter().any(|l| !l.trim().is_empty()) {
            segments.push(Segment::Rust {
                code: rust.join("\n"),
                first_line: start,
            });
        }
        rust.clear();
    };
    for (i, line) in lines.iter().enumerate() {
        if is_magic_line(line) {
            flush(&mut rust, rust_start, &mut segments);
            segments.push(Segment::Magic {
                line: line.trim().to_string(),
                line_no: i + 1,
            });
        } else {
            if rust.is_empty() {
                rust_start = i + 1;
            }
            rust.push(line);
        }
    }
    flush(&mut rust, rust_start, &mut segments);
    segments
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pure_rust_is_one_segment() {
        let s = split_cell("let x = 1;\nx + 1");
        assert_eq!(
            s,
            vec![Segment::Rust {
                code: "let x = 1;\nx + 1".into(),
                first_line: 1
            }]
        );
    }

    #[test]
    fn magics_and_rust_interleave_in_order() {
        let s = split_cell("%array x = zeros(4, f32)\nlet a = 1;\n\n  %print x\n");
        assert_eq!(s.len(), 3);
        assert!(
            matches!(&s[0], Segment::Magic { line, line_no: 1 } if line == "%array x = zeros(4, f32)")
        );
        assert!(matches!(&s[1], Segment::Rust { first_line: 2, .. }));
        assert!(matches!(&s[2], Segment::Magic { line_no: 4, .. }));
    }

    #[test]
    fn cell_magic_takes_the_cell() {
        let s = split_cell("\n%%cuda --name k\n__global__ void f() {}\n%not a magic here");
        assert_eq!(
            s,
            vec![Segment::CellMagic {
                header: "%%cuda --name k".into(),
                body: "__global__ void f() {}\n%not a magic here".into(),
                body_first_line: 3
            }]
        );
    }

    #[test]
    fn modulo_is_not_a_magic() {
        assert!(!is_magic_line("% 2"));
        assert!(!is_magic_line("a % b"));
        assert!(is_magic_line("  %lsmagic"));
        assert_eq!(split_cell("   \n\n").len(), 0);
    }
}
