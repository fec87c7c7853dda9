//! One magic line → one [`Command`](super::Command): the `%` and the magic's name, the hand-over
//! to that magic's argument parser (which the registry chooses), and the refusal of what is left
//! after it; also the limits on a line and the marker of an unknown magic.
//!
//! Pure parsing: this module must not import the registry (the caller passes the parser of each
//! magic) nor the magics' execution modules.

use super::super::lex::{Lexer, ParseError, Span};
use super::ast::Name;
use super::command::Command;
use super::cursor::Parser;

/// The parser of one line magic's arguments: it starts after the magic's name and stops at the
/// end of what the magic takes (the caller refuses anything after it).
pub type ParseFn = for<'a, 'b> fn(&'a mut Parser<'b>) -> Result<Command, ParseError>;

/// Parses one magic line (it starts with `%`; leading whitespace allowed); `parser_of` gives the
/// parser of a magic's arguments from its name without `%` (None: an unknown magic).
pub fn parse_line_with(
    line: &str,
    parser_of: impl Fn(&str) -> Option<ParseFn>,
) -> Result<Command, ParseError> {
    if line.len() > MAX_LINE_BYTES {
        return Err(ParseError::nowhere(format!(
            "line too long: {} bytes (a magic line may hold at most {} bytes)",
            line.len(),
            MAX_LINE_BYTES
        )));
    }
    let mut p = Parser {
        lx: Lexer::new(line, 0),
        depth: 0,
    };
    p.lx.skip_ws();
    let pct = p.lx.pos;
    if !line[pct..].starts_with('%') {
        return Err(ParseError::at(
            Span::new(pct, pct + 1),
            "a magic line starts with '%'",
        ));
    }
    if line[pct..].starts_with("%%") {
        let word = magic_word(line, pct + 2);
        return Err(ParseError::at(
            Span::new(pct, pct + 2 + word.len()),
            format!("%%{word} is a cell magic: it must be the first line of its cell"),
        ));
    }
    p.lx.pos = pct + 1;
    let word = magic_word(line, pct + 1);
    let name = Name {
        text: word.to_string(),
        span: Span::new(pct, pct + 1 + word.len()),
    };
    p.lx.pos += word.len();
    if word.is_empty() {
        return Err(ParseError::at(
            Span::new(pct, pct + 1),
            "expected a magic name after '%'",
        ));
    }
    let Some(parse) = parser_of(word) else {
        return Err(ParseError::at(name.span, UNKNOWN_MAGIC));
    };
    let cmd = parse(&mut p)?;
    if !p.lx.at_end() {
        let t = p.lx.peek()?;
        return Err(ParseError::at(
            t.span,
            format!("unexpected {} after the %{} command", t.tok, name.text),
        ));
    }
    Ok(cmd)
}

/// The identifier right after `%`/`%%` at byte `pos`.
pub fn magic_word(line: &str, pos: usize) -> &str {
    let rest = line.get(pos..).unwrap_or("");
    let len = rest
        .find(|c: char| !super::super::lex::is_ident_char(c))
        .unwrap_or(rest.len());
    &rest[..len]
}

/// Error for an unknown magic: the parser reports it with this marker so that the caller can
/// turn it into an `UnknownMagic` error with a suggestion.
pub const UNKNOWN_MAGIC: &str = "unknown magic";

/// The longest magic line, in bytes. A line this long still parses and evaluates in
/// milliseconds (runs of operators are flat); longer ones are refused before lexing.
pub const MAX_LINE_BYTES: usize = 1 << 20;
