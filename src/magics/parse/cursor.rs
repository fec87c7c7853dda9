//! The [`Parser`] of one magic line (its lexer and expression depth) with the token-level helpers
//! that every grammar of `parse` uses: symbols, names, dtypes, flags, and the errors for an
//! unknown option or dtype.
//!
//! The grammars themselves live in the sibling modules (`expr`, `launch_syntax`, `magic_args`,
//! `array_args`), each as more `impl Parser` methods; this module must not import them (only
//! the syntax tree of `ast` sits below it).

use super::super::lex::{Lexer, ParseError, Span, Tok, Token};
use super::ast::{DtypeArg, Name};
use crate::gpu::Dtype;
use crate::suggest::{did_you_mean, Quote};

/// The deepest nesting of parentheses, tuples, calls and indices an expression may have.
pub const MAX_NESTING: usize = 256;

/// The parser of one magic line: its lexer and how deep the expression being parsed nests.
pub struct Parser<'a> {
    pub(crate) lx: Lexer<'a>,
    /// How many [`Parser::expr`] calls are open: bounded by [`MAX_NESTING`].
    pub(super) depth: usize,
}

impl<'a> Parser<'a> {
    pub(super) fn next(&mut self) -> Result<Token, ParseError> {
        self.lx.next_token()
    }

    pub(super) fn peek(&self) -> Result<Token, ParseError> {
        self.lx.peek()
    }

    pub(super) fn is_sym(&self, s: &str) -> bool {
        matches!(self.peek(), Ok(Token { tok: Tok::Sym(x), .. }) if x == s)
    }

    pub(super) fn eat_sym(&mut self, s: &str) -> Result<bool, ParseError> {
        if self.is_sym(s) {
            self.next()?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    pub(super) fn expect_sym(&mut self, s: &str, context: &str) -> Result<Span, ParseError> {
        let t = self.next()?;
        match t.tok {
            Tok::Sym(x) if x == s => Ok(t.span),
            other => Err(ParseError::at(
                t.span,
                format!("expected '{s}' {context}, found {other}"),
            )),
        }
    }

    pub(super) fn name(&mut self, what: &str) -> Result<Name, ParseError> {
        let t = self.next()?;
        match t.tok {
            Tok::Ident(s) => Ok(Name {
                text: s,
                span: t.span,
            }),
            other => Err(ParseError::at(
                t.span,
                format!("expected {what}, found {other}"),
            )),
        }
    }

    pub(super) fn dtype(&mut self) -> Result<DtypeArg, ParseError> {
        let n = self.name("a dtype")?;
        parse_dtype(&n).map(|dtype| DtypeArg {
            dtype,
            span: n.span,
        })
    }

    pub(super) fn flag(&mut self) -> Result<Option<Token>, ParseError> {
        if let Tok::Flag(_) = self.peek()?.tok {
            return self.next().map(Some);
        }
        Ok(None)
    }
}

pub(super) fn unknown_option(t: &Token, tok: &Tok, magic: &str, known: &[&str]) -> ParseError {
    let text = tok.to_string();
    let bare = text.strip_prefix('\'').and_then(|s| s.strip_suffix('\''));
    super::flags::unknown_flag(t.span, bare.unwrap_or(&text), magic, known)
}

/// "f32 f64 i8 … u64"
pub fn dtype_list() -> String {
    Dtype::ALL.map(|d| d.name()).join(" ")
}

/// A dtype name, or an error that lists the valid ones (and suggests `f32` for `float`).
pub fn parse_dtype(n: &Name) -> Result<Dtype, ParseError> {
    if let Some(d) = Dtype::parse(&n.text) {
        return Ok(d);
    }
    let hint = match Dtype::from_c_name(&n.text) {
        Some(d) => format!(" ({} is written {} here)", n.text, d.name()),
        None => did_you_mean(&n.text, Dtype::ALL.iter().map(|d| d.name()), Quote::Plain)
            .map(|h| format!(" ({h})"))
            .unwrap_or_default(),
    };
    Err(ParseError::at(
        n.span,
        format!(
            "unknown dtype '{}'{hint}; valid dtypes: {}",
            n.text,
            dtype_list()
        ),
    ))
}
