//! Tokeniser for PTX text.
//!
//! Turns PTX source into a flat list of tokens, each tagged with its 1-based line. It knows the
//! lexical rules only (identifiers, directives, numbers, float bit patterns, strings,
//! punctuation, comments); it must not interpret instructions or directives.

use crate::ModuleError;

/// One lexical token.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// Identifier, register, label, or an instruction mnemonic with its dotted modifiers
    /// (`ld.global.nc.f32`, `%tid.x`, `$L__BB0_2`).
    Ident(String),
    /// A directive or a type/space keyword, without its leading dot (`reg`, `u32`, `global`).
    Dir(String),
    /// An unsigned integer literal (a preceding `-` is a separate token).
    Int(u64),
    /// `0fXXXXXXXX`: the bits of an f32.
    F32(u32),
    /// `0dXXXXXXXXXXXXXXXX`: the bits of an f64.
    F64(u64),
    /// A decimal floating-point literal such as `1.5` or `1e-3`.
    Float(f64),
    /// A string literal with escapes resolved.
    Str(String),
    /// One punctuation character: `, ; : [ ] { } ( ) + - ! @ | < > =`.
    Punct(char),
}

/// A token and the line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub line: usize,
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c == b'%'
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c == b'.'
}

fn err(line: usize, message: impl Into<String>) -> ModuleError {
    ModuleError::Parse {
        line,
        message: message.into(),
    }
}

/// Split `src` into tokens.
pub fn tokenize(src: &str) -> Result<Vec<Token>, ModuleError> {
    let b = src.as_bytes();
    let mut i = 0;
    let mut line = 1usize;
    let mut out = Vec::with_capacity(src.len() / 4);
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                if b[i] == b'\n' {
                    line += 1;
                }
                i += 1;
            }
            i += 2;
            continue;
        }
        let start_line = line;
        if c == b'"' {
            let mut s = Vec::new();
            i += 1;
            loop {
                match b.get(i) {
                    None => return Err(err(start_line, "unterminated string literal")),
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') => {
                        let e = b.get(i + 1).copied().unwrap_or(b'\\');
                        s.push(match e {
                            b'n' => b'\n',
                            b't' => b'\t',
                            b'0' => 0,
                            other => other,
                        });
                        i += 2;
                    }
                    Some(&ch) => {
                        if ch == b'\n' {
                            line += 1;
                        }
                        s.push(ch);
                        i += 1;
                    }
                }
            }
            out.push(Token {
                tok: Tok::Str(String::from_utf8_lossy(&s).into_owned()),
                line: start_line,
            });
            continue;
        }
        if c == b'.'
            && b.get(i + 1)
                .is_some_and(|&n| n.is_ascii_alphabetic() || n == b'_')
        {
            let s = i + 1;
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Dir(src[s..i].to_string()),
                line,
            });
            continue;
        }
        if is_ident_start(c) {
            let s = i;
            i += 1;
            while i < b.len()
                && (is_ident_char(b[i]) || (b[i] == b':' && b.get(i + 1) == Some(&b':')))
            {
                i += if b[i] == b':' { 2 } else { 1 };
            }
            out.push(Token {
                tok: Tok::Ident(src[s..i].to_string()),
                line,
            });
            continue;
        }
        if c.is_ascii_digit() {
            let (tok, n) = lex_number(&b[i..]).ok_or_else(|| err(line, "bad numeric literal"))?;
            i += n;
            out.push(Token { tok, line });
            continue;
        }
        if b",;:[]{}()+-!@|<>=*".contains(&c) {
            out.push(Token {
                tok: Tok::Punct(c as char),
                line,
            });
            i += 1;
            continue;
        }
        return Err(err(line, format!("unexpected character `{}`", c as char)));
    }
    Ok(out)
}

fn hex_digits(b: &[u8]) -> usize {
    b.iter().take_while(|c| c.is_ascii_hexdigit()).count()
}

fn parse_hex(b: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(b).ok()?;
    u64::from_str_radix(s, 16).ok()
}

/// Lex a number at the start of `b`; returns the token and the bytes consumed.
fn lex_number(b: &[u8]) -> Option<(Tok, usize)> {
    if b[0] == b'0' && b.len() > 1 {
        match b[1] {
            b'f' | b'F' if hex_digits(&b[2..]) == 8 => {
                return Some((Tok::F32(parse_hex(&b[2..10])? as u32), 10));
            }
            b'd' | b'D' if hex_digits(&b[2..]) == 16 => {
                return Some((Tok::F64(parse_hex(&b[2..18])?), 18));
            }
            b'x' | b'X' => {
                let n = hex_digits(&b[2..]);
                let v = parse_hex(&b[2..2 + n])?;
                let mut used = 2 + n;
                if b.get(used).is_some_and(|&c| c == b'U' || c == b'u') {
                    used += 1;
                }
                return Some((Tok::Int(v), used));
            }
            _ => {}
        }
    }
    let mut n = b.iter().take_while(|c| c.is_ascii_digit()).count();
    let mut is_float = false;
    if b.get(n) == Some(&b'.') && b.get(n + 1).is_some_and(|c| c.is_ascii_digit()) {
        is_float = true;
        n += 1;
        n += b[n..].iter().take_while(|c| c.is_ascii_digit()).count();
    }
    if b.get(n).is_some_and(|&c| c == b'e' || c == b'E') {
        let mut m = n + 1;
        if b.get(m).is_some_and(|&c| c == b'+' || c == b'-') {
            m += 1;
        }
        let d = b[m..].iter().take_while(|c| c.is_ascii_digit()).count();
        if d > 0 {
            is_float = true;
            n = m + d;
        }
    }
    let text = std::str::from_utf8(&b[..n]).ok()?;
    if is_float {
        return Some((Tok::Float(text.parse().ok()?), n));
    }
    let v: u64 = if text.len() > 1 && text.starts_with('0') {
        u64::from_str_radix(text, 8).ok()?
    } else {
        text.parse().ok()?
    };
    let mut used = n;
    if b.get(used).is_some_and(|&c| c == b'U' || c == b'u') {
        used += 1;
    }
    Some((Tok::Int(v), used))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexes_instruction_and_literals() {
        let t =
            tokenize("@%p1 ld.global.f32 %f1, [%rd2+-4]; // c\n mov.f32 %f2, 0f3F800000;").unwrap();
        let toks: Vec<Tok> = t.iter().map(|t| t.tok.clone()).collect();
        assert_eq!(toks[0], Tok::Punct('@'));
        assert_eq!(toks[1], Tok::Ident("%p1".into()));
        assert_eq!(toks[2], Tok::Ident("ld.global.f32".into()));
        assert!(toks.contains(&Tok::F32(0x3F80_0000)));
        assert_eq!(t.last().unwrap().line, 2);
    }

    #[test]
    fn lexes_directives_numbers_strings() {
        let t =
            tokenize(".reg .b32 %r<6>; .file 1 \"a\\\"b.cu\" 0x10 1.5 0d3FF0000000000000").unwrap();
        let toks: Vec<Tok> = t.into_iter().map(|t| t.tok).collect();
        assert_eq!(toks[0], Tok::Dir("reg".into()));
        assert!(toks.contains(&Tok::Str("a\"b.cu".into())));
        assert!(toks.contains(&Tok::Int(16)));
        assert!(toks.contains(&Tok::Float(1.5)));
        assert!(toks.contains(&Tok::F64(0x3FF0_0000_0000_0000)));
    }

    #[test]
    fn bad_character_is_an_error() {
        assert!(matches!(
            tokenize("mov #"),
            Err(ModuleError::Parse { line: 1, .. })
        ));
    }
}
