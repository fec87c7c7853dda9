//! The lexer of the command language: a cursor over one magic line that hands out tokens with
//! their byte span, so that every error can point at the offending token.
//!
//! It is cursor-based (the parser may save and restore the position, and may ask for a raw
//! whitespace-delimited word where the grammar wants a file path or a C++ template name). It knows
//! nothing of commands or of the device; it must not panic on any input.

use std::fmt;

/// A byte range of the magic line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }
    /// The smallest span that covers both.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
}

/// A syntax or evaluation error at a place in the line.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub message: String,
    pub span: Option<Span>,
}

impl ParseError {
    pub fn at(span: Span, message: impl Into<String>) -> ParseError {
        ParseError {
            message: message.into(),
            span: Some(span),
        }
    }
    pub fn nowhere(message: impl Into<String>) -> ParseError {
        ParseError {
            message: message.into(),
            span: None,
        }
    }
}

/// One token.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Ident(String),
    Int(i64),
    Float(f64),
    /// A quoted string, without its quotes.
    Str(String),
    /// `--name` (the text includes the dashes).
    Flag(String),
    /// Punctuation: `<<<` `>>>` `(` `)` `[` `]` `,` `=` `+` `-` `*` `/` `%` `.` `<` `>`.
    Sym(&'static str),
    Eof,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Ident(s) | Tok::Flag(s) => write!(f, "'{s}'"),
            Tok::Int(v) => write!(f, "'{v}'"),
            Tok::Float(v) => write!(f, "'{v}'"),
            Tok::Str(s) => write!(f, "\"{s}\""),
            Tok::Sym(s) => write!(f, "'{s}'"),
            Tok::Eof => f.write_str("the end of the line"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

const SYMS: [&str; 16] = [
    "<<<", ">>>", "(", ")", "[", "]", ",", "=", "+", "-", "*", "/", "%", ".", "<", ">",
];

/// A cursor over one line.
#[derive(Debug, Clone)]
pub struct Lexer<'a> {
    pub src: &'a str,
    pub pos: usize,
}

pub fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

pub fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl<'a> Lexer<'a> {
    pub fn new(src: &'a str, pos: usize) -> Lexer<'a> {
        Lexer { src, pos }
    }

    fn rest(&self) -> &'a str {
        self.src.get(self.pos..).unwrap_or("")
    }

    pub fn skip_ws(&mut self) {
        let rest = self.rest();
        let trimmed = rest.trim_start();
        self.pos += rest.len() - trimmed.len();
    }

    /// True when only whitespace or a `#` comment is left.
    pub fn at_end(&mut self) -> bool {
        self.skip_ws();
        self.rest().is_empty() || self.rest().starts_with('#')
    }

    /// The next token without consuming it.
    pub fn peek(&self) -> Result<Token, ParseError> {
        self.clone().next_token()
    }

    /// The token after the next one, without consuming anything.
    pub fn peek2(&self) -> Result<Token, ParseError> {
        let mut l = self.clone();
        l.next_token()?;
        l.next_token()
    }

    pub fn next_token(&mut self) -> Result<Token, ParseError> {
        self.skip_ws();
        let start = self.pos;
        let rest = self.rest();
        let Some(c) = rest.chars().next() else {
            return Ok(Token {
                tok: Tok::Eof,
                span: Span::new(start, start),
            });
        };
        if c == '#' {
            return Ok(Token {
                tok: Tok::Eof,
                span: Span::new(start, start),
            });
        }
        if is_ident_start(c) {
            let len = rest
                .find(|ch: char| !is_ident_char(ch))
                .unwrap_or(rest.len());
            self.pos += len;
            return Ok(Token {
                tok: Tok::Ident(rest[..len].to_string()),
                span: Span::new(start, self.pos),
            });
        }
        if c.is_ascii_digit() {
            return self.number();
        }
        if c == '"' || c == '\'' {
            return self.quoted(c);
        }
        if let Some(flag) = rest.strip_prefix("--") {
            let len = flag
                .find(|ch: char| !(is_ident_char(ch) || ch == '-'))
                .unwrap_or(flag.len());
            if len > 0 {
                self.pos += 2 + len;
                return Ok(Token {
                    tok: Tok::Flag(rest[..2 + len].to_string()),
                    span: Span::new(start, self.pos),
                });
            }
        }
        for s in SYMS {
            if rest.starts_with(s) {
                self.pos += s.len();
                return Ok(Token {
                    tok: Tok::Sym(s),
                    span: Span::new(start, self.pos),
                });
            }
        }
        let span = Span::new(start, start + c.len_utf8());
        Err(ParseError::at(span, format!("unexpected character '{c}'")))
    }

    fn quoted(&mut self, quote: char) -> Result<Token, ParseError> {
        let start = self.pos;
        let body = &self.rest()[1..];
        match body.find(quote) {
            Some(end) => {
                self.pos += end + 2;
                Ok(Token {
                    tok: Tok::Str(body[..end].to_string()),
                    span: Span::new(start, self.pos),
                })
            }
            None => Err(ParseError::at(
                Span::new(start, self.src.len()),
                "unterminated string",
            )),
        }
    }

    /// Integer (`42`, `1_000`, `0x1f`, `1e6`) or float (`1.5`, `2.0f`, `1.5e-3`) literal.
    fn number(&mut self) -> Result<Token, ParseError> {
        let start = self.pos;
        let rest = self.rest();
        let bytes = rest.as_bytes();
        if rest.starts_with("0x") || rest.starts_with("0X") {
            let len = 2 + rest[2..]
                .find(|c: char| !(c.is_ascii_hexdigit() || c == '_'))
                .unwrap_or(rest.len() - 2);
            self.pos += len;
            let span = Span::new(start, self.pos);
            let digits: String = rest[2..len].chars().filter(|&c| c != '_').collect();
            return i64::from_str_radix(&digits, 16)
                .map(|v| Token {
                    tok: Tok::Int(v),
                    span,
                })
                .map_err(|_| ParseError::at(span, "bad or too large hexadecimal literal"));
        }
        let mut i = 0;
        let digits = |i: &mut usize| {
            while *i < bytes.len() && (bytes[*i].is_ascii_digit() || bytes[*i] == b'_') {
                *i += 1;
            }
        };
        digits(&mut i);
        let mut is_float = false;
        if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
            is_float = true;
            i += 1;
            digits(&mut i);
        } else if i < bytes.len()
            && bytes[i] == b'.'
            && !(i + 1 < bytes.len() && is_ident_start(bytes[i + 1] as char))
        {
            // `1.` is a float; `x.shape` never starts with a digit, so `1.shape` is an error later.
            is_float = true;
            i += 1;
        }
        let mut neg_exp = false;
        if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
            let mut j = i + 1;
            if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
                neg_exp = bytes[j] == b'-';
                j += 1;
            }
            if j < bytes.len() && bytes[j].is_ascii_digit() {
                i = j;
                digits(&mut i);
            }
        }
        let text: String = rest[..i].chars().filter(|&c| c != '_').collect();
        // A C-style `f` suffix on a float literal.
        if is_float && i < bytes.len() && (bytes[i] == b'f' || bytes[i] == b'F') {
            i += 1;
        }
        self.pos += i;
        let span = Span::new(start, self.pos);
        if let Some(next) = self.rest().chars().next() {
            if is_ident_char(next) {
                return Err(ParseError::at(
                    Span::new(start, self.pos + next.len_utf8()),
                    format!("bad number '{}'", &rest[..i + next.len_utf8()]),
                ));
            }
        }
        let has_exp = text.contains(['e', 'E']);
        if !is_float && !neg_exp {
            if has_exp {
                // `1e6` is the integer 1000000 (exactly, or an error).
                let (mant, exp) = text.split_once(['e', 'E']).unwrap_or((&text, "0"));
                let exp = exp.trim_start_matches('+');
                let value = mant.parse::<i64>().ok().and_then(|m| {
                    exp.parse::<u32>()
                        .ok()
                        .and_then(|e| 10i64.checked_pow(e))
                        .and_then(|p| m.checked_mul(p))
                });
                return value
                    .map(|v| Token {
                        tok: Tok::Int(v),
                        span,
                    })
                    .ok_or_else(|| ParseError::at(span, "integer literal too large"));
            }
            return text
                .parse::<i64>()
                .map(|v| Token {
                    tok: Tok::Int(v),
                    span,
                })
                .map_err(|_| ParseError::at(span, "integer literal too large"));
        }
        text.parse::<f64>()
            .map(|v| Token {
                tok: Tok::Float(v),
                span,
            })
            .map_err(|_| ParseError::at(span, format!("bad number '{text}'")))
    }

    /// A raw word: a quoted string, or everything up to the next whitespace (for file paths).
    pub fn raw_word(&mut self) -> Option<(String, Span)> {
        self.skip_ws();
        let start = self.pos;
        let rest = self.rest();
        let c = rest.chars().next()?;
        if c == '#' {
            return None;
        }
        if c == '"' || c == '\'' {
            if let Ok(Token {
                tok: Tok::Str(s),
                span,
            }) = self.quoted(c)
            {
                return Some((s, span));
            }
            return None;
        }
        let len = rest.find(char::is_whitespace).unwrap_or(rest.len());
        self.pos += len;
        Some((rest[..len].to_string(), Span::new(start, self.pos)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        let mut l = Lexer::new(s, 0);
        let mut v = Vec::new();
        loop {
            let t = l.next_token().map(|t| t.tok);
            match t {
                Ok(Tok::Eof) => return v,
                Ok(t) => v.push(t),
                Err(e) => panic!("{e:?}"),
            }
        }
    }

    #[test]
    fn lexes_numbers_names_and_symbols() {
        assert_eq!(
            toks("add<<<n/2, 1_000>>>(x, 1.5, 2.0f, 1e6, 0x10) # comment"),
            vec![
                Tok::Ident("add".into()),
                Tok::Sym("<<<"),
                Tok::Ident("n".into()),
                Tok::Sym("/"),
                Tok::Int(2),
                Tok::Sym(","),
                Tok::Int(1000),
                Tok::Sym(">>>"),
                Tok::Sym("("),
                Tok::Ident("x".into()),
                Tok::Sym(","),
                Tok::Float(1.5),
                Tok::Sym(","),
                Tok::Float(2.0),
                Tok::Sym(","),
                Tok::Int(1_000_000),
                Tok::Sym(","),
                Tok::Int(16),
                Tok::Sym(")"),
            ]
        );
        assert_eq!(
            toks("--head 3 1e-3 x.shape"),
            vec![
                Tok::Flag("--head".into()),
                Tok::Int(3),
                Tok::Float(1e-3),
                Tok::Ident("x".into()),
                Tok::Sym("."),
                Tok::Ident("shape".into()),
            ]
        );
    }

    #[test]
    fn lexer_errors_carry_spans() {
        let e = Lexer::new("x $", 0).peek2().unwrap_err();
        assert_eq!(e.span, Some(Span::new(2, 3)));
        let e = Lexer::new("99999999999999999999", 0)
            .next_token()
            .unwrap_err();
        assert_eq!(e.message, "integer literal too large");
        let e = Lexer::new("12ab", 0).next_token().unwrap_err();
        assert_eq!(e.message, "bad number '12a'");
        let e = Lexer::new(" \"abc", 0).next_token().unwrap_err();
        assert_eq!(e.message, "unterminated string");
    }
}
