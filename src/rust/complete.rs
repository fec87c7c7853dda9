//! `is_complete` for Rust cells: a small lexer that tracks brackets, strings, character literals,
//! raw strings and (nested) block comments, so that a front end knows whether pressing Enter
//! should run the cell or continue it.
//!
//! It must not try to parse Rust: anything the lexer cannot judge is "complete" and left to the
//! compiler. Leading evcxr colon commands (`:dep ...`) and shell lines (`!ls`) are skipped.

/// Judges whether `code` is a complete Rust cell.
///
/// Returns `("complete", "")`, `("incomplete", indent)` when a bracket, string, character
/// literal, raw string or block comment is still open (indent: four spaces per open bracket), or
/// `("invalid", "")` when a closing bracket has no matching opener.
pub fn is_complete(code: &str) -> (&'static str, String) {
    match scan(skip_commands(code)) {
        Scan::Complete => ("complete", String::new()),
        Scan::OpenBrackets(depth) => ("incomplete", " ".repeat(4 * depth)),
        Scan::OpenLiteral => ("incomplete", String::new()),
        Scan::Invalid => ("invalid", String::new()),
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Scan {
    Complete,
    /// Brackets still open (their number).
    OpenBrackets(usize),
    /// Inside a string, character literal, raw string or block comment.
    OpenLiteral,
    /// A closing bracket without (or not matching) its opener.
    Invalid,
}

/// The code after the leading lines that evcxr treats as commands (`:cmd` or `!shell`), blank
/// lines and `//` comments between them.
fn skip_commands(code: &str) -> &str {
    let mut rest = code;
    loop {
        let (line, after) = match rest.find('\n') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, ""),
        };
        let trimmed = line.trim_start_matches(' ');
        let is_command = trimmed.starts_with(':') || line.starts_with('!');
        let is_filler = line.trim().is_empty() || line.starts_with("//");
        if !(is_command || is_filler) || rest.is_empty() {
            return rest;
        }
        rest = after;
    }
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn scan(code: &str) -> Scan {
    let chars: Vec<char> = code.chars().collect();
    let mut stack: Vec<char> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let prev = if i > 0 { Some(chars[i - 1]) } else { None };
        let next = chars.get(i + 1).copied();
        match c {
            '/' if next == Some('/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if next == Some('*') => match skip_block_comment(&chars, i) {
                Some(end) => i = end,
                None => return Scan::OpenLiteral,
            },
            '"' => match skip_string(&chars, i + 1, '"') {
                Some(end) => i = end,
                None => return Scan::OpenLiteral,
            },
            '\'' => match char_literal_end(&chars, i) {
                CharLit::Literal(end) => i = end,
                CharLit::Lifetime => i += 1,
                CharLit::Unterminated => return Scan::OpenLiteral,
            },
            'r' | 'b' | 'c' if !prev.is_some_and(is_ident_char) => {
                match raw_string_end(&chars, i) {
                    RawStr::NotRaw => i = skip_ident(&chars, i),
                    RawStr::End(end) => i = end,
                    RawStr::Unterminated => return Scan::OpenLiteral,
                }
            }
            '(' | '[' | '{' => {
                stack.push(c);
                i += 1;
            }
            ')' | ']' | '}' => {
                let opener = match c {
                    ')' => '(',
                    ']' => '[',
                    _ => '{',
                };
                if stack.pop() != Some(opener) {
                    return Scan::Invalid;
                }
                i += 1;
            }
            _ if is_ident_char(c) => i = skip_ident(&chars, i),
            _ => i += 1,
        }
    }
    if stack.is_empty() {
        Scan::Complete
    } else {
        Scan::OpenBrackets(stack.len())
    }
}

fn skip_ident(chars: &[char], mut i: usize) -> usize {
    i += 1;
    while i < chars.len() && is_ident_char(chars[i]) {
        i += 1;
    }
    i
}

/// Index after the `*/` closing the (nested) block comment opened at `start`.
fn skip_block_comment(chars: &[char], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = start;
    while i + 1 < chars.len() {
        if chars[i] == '/' && chars[i + 1] == '*' {
            depth += 1;
            i += 2;
        } else if chars[i] == '*' && chars[i + 1] == '/' {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return Some(i);
            }
        } else {
            i += 1;
        }
    }
    None
}

/// Index after the closing `quote` of a string whose body starts at `i` (escapes honoured).
fn skip_string(chars: &[char], mut i: usize, quote: char) -> Option<usize> {
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            c if c == quote => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

enum CharLit {
    Literal(usize),
    Lifetime,
    Unterminated,
}

/// Tells a character literal (`'a'`, `'\n'`, `'\u{1F600}'`) from a lifetime or label (`'a`).
fn char_literal_end(chars: &[char], start: usize) -> CharLit {
    match chars.get(start + 1) {
        None => CharLit::Unterminated,
        Some('\\') => match skip_string(chars, start + 1, '\'') {
            Some(end) => CharLit::Literal(end),
            None => CharLit::Unterminated,
        },
        Some(_) if chars.get(start + 2) == Some(&'\'') => CharLit::Literal(start + 3),
        Some(&c) if is_ident_char(c) => CharLit::Lifetime,
        // `'(` or `' '` without a closing quote yet: an unfinished character literal.
        Some(_) => CharLit::Unterminated,
    }
}

enum RawStr {
    NotRaw,
    End(usize),
    Unterminated,
}

/// Handles the literals that start with a letter: `r"…"`, `r#"…"#`, `br"…"`, `cr#"…"#`, and the
/// plain prefixed strings `b"…"`, `c"…"`, `b'x'`.
fn raw_string_end(chars: &[char], start: usize) -> RawStr {
    let mut i = start;
    if matches!(chars[i], 'b' | 'c') {
        i += 1;
        match chars.get(i) {
            Some('"') => {
                return match skip_string(chars, i + 1, '"') {
                    Some(end) => RawStr::End(end),
                    None => RawStr::Unterminated,
                }
            }
            Some('\'') if chars[start] == 'b' => {
                return match char_literal_end(chars, i) {
                    CharLit::Literal(end) => RawStr::End(end),
                    CharLit::Unterminated => RawStr::Unterminated,
                    CharLit::Lifetime => RawStr::NotRaw,
                }
            }
            Some('r') => {}
            _ => return RawStr::NotRaw,
        }
    }
    if chars.get(i) != Some(&'r') {
        return RawStr::NotRaw;
    }
    i += 1;
    let mut hashes = 0;
    while chars.get(i) == Some(&'#') {
        hashes += 1;
        i += 1;
    }
    if chars.get(i) != Some(&'"') {
        return RawStr::NotRaw; // `r#ident` (raw identifier) or a plain identifier
    }
    i += 1;
    while i < chars.len() {
        if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
            return RawStr::End(i + 1 + hashes);
        }
        i += 1;
    }
    RawStr::Unterminated
}

#[cfg(test)]
mod tests {
    use super::is_complete;

    fn status(code: &str) -> &'static str {
        is_complete(code).0
    }

    #[test]
    fn complete_cells() {
        for code in [
            "",
            "let x = 40; x + 2",
            "fn f() -> i32 { 1 }\nf()",
            "println!(\"{}\", \"}\");",
            "let c = '}';",
            "let c = '\\'';",
            "let c = '\\u{7d}';",
            "fn f<'a>(x: &'a str) -> &'a str { x }",
            "'outer: loop { break 'outer; }",
            "let s = r#\"a \" } quote\"#;",
            "let s = br\"}\";",
            "let b = b'{';",
            "let s = c\"{\";",
            "let r#type = 1;",
            "// a comment with { and \"\nlet x = 1;",
            "/* nested /* } */ comment */ let x = 1;",
            ":dep serde = { version = \"1\"\nlet x = 1;",
            ":vars",
            "let v = vec![1, 2, 3];",
        ] {
            assert_eq!(is_complete(code), ("complete", String::new()), "{code:?}");
        }
    }

    #[test]
    fn incomplete_cells_and_indent() {
        assert_eq!(is_complete("fn f() {"), ("incomplete", "    ".to_owned()));
        assert_eq!(
            is_complete("fn f() {\n    if true {"),
            ("incomplete", " ".repeat(8))
        );
        assert_eq!(
            is_complete("let v = vec![1,"),
            ("incomplete", " ".repeat(4))
        );
        assert_eq!(is_complete("foo(1, (2"), ("incomplete", " ".repeat(8)));
        for code in [
            "let s = \"abc",
            "let s = \"abc\\\"",
            "let s = r#\"abc\"",
            "let s = br##\"abc\"#",
            "let c = '\\",
            "let c = '",
            "/* open comment",
            "/* nested /* */ still open",
            "let s = b\"x",
        ] {
            assert_eq!(status(code), "incomplete", "{code:?}");
        }
    }

    #[test]
    fn invalid_cells() {
        for code in ["}", "let x = 1; )", "fn f() { ]", "(]", "vec![1, 2)"] {
            assert_eq!(is_complete(code), ("invalid", String::new()), "{code:?}");
        }
    }

    /// Random cells built from balanced pieces are complete; cutting one before its end makes
    /// it incomplete; the lexer never panics on arbitrary byte soup.
    #[test]
    fn random_cells() {
        let pieces = [
            "{ let a = 1; }",
            "(1 + [2][0])",
            "\"s}(\"",
            "'x'",
            "r#\"]\"#",
            "/* ) */",
            "// }\n",
            "'a: loop { break 'a; }",
            "x.iter().map(|v| v * 2)",
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..500 {
            let n = 1 + (next() % 6) as usize;
            let cell: String = (0..n)
                .map(|_| pieces[(next() % pieces.len() as u64) as usize])
                .collect::<Vec<_>>()
                .join(" ");
            assert_eq!(status(&cell), "complete", "{cell:?}");
            let wrapped = format!("fn f() {{ {cell}");
            assert_eq!(is_complete(&wrapped), ("incomplete", "    ".to_owned()));
            let soup: String = (0..(next() % 40))
                .map(|_| {
                    let set = b"{}()[]'\"#r/*\\ab\n";
                    set[(next() % set.len() as u64) as usize] as char
                })
                .collect();
            let _ = is_complete(&soup);
        }
    }
}
