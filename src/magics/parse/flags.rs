//! Helpers shared by the option parsers of several magics: an optional `=` after a flag, a
//! colormap name after `--cmap`, and the error for an option that a magic does not take.
//!
//! Pure parsing: this module must not import the magics' execution modules.

use super::super::lex::{Lexer, ParseError, Span, Tok};
use super::ast::Name;
use crate::display::{self, Colormap};

/// The GPU model after `--gpu` (`%profile`, `%time`, `%info`); `flag` is where `--gpu` stands.
pub(crate) fn gpu_model(lx: &mut Lexer, flag: Span) -> Result<Name, ParseError> {
    match lx.raw_word() {
        Some((text, span)) if !text.is_empty() => Ok(Name { text, span }),
        _ => Err(ParseError::at(
            flag,
            "--gpu needs a GPU model, e.g. --gpu T4 (%gpu lists them)",
        )),
    }
}

/// Skips an optional `=` after a flag (`--cmap=gray`).
pub(crate) fn eat_eq(lx: &mut Lexer) -> Result<(), ParseError> {
    if matches!(lx.peek()?.tok, Tok::Sym("=")) {
        lx.next_token()?;
    }
    Ok(())
}

/// A colormap name (a word or a quoted string) after `--cmap`.
pub(crate) fn parse_cmap(lx: &mut Lexer) -> Result<Colormap, ParseError> {
    let t = lx.next_token()?;
    match &t.tok {
        Tok::Ident(s) | Tok::Str(s) => Colormap::by_name(s).map_err(|m| ParseError::at(t.span, m)),
        other => Err(ParseError::at(
            t.span,
            format!(
                "expected a colormap name after --cmap, found {other}; use one of {}",
                display::colormap::NAMES.join(", ")
            ),
        )),
    }
}

/// An error for a flag that the command does not take: the one wording of every magic's
/// "unknown option" (`cursor::unknown_option` calls it too).
pub(crate) fn unknown_flag(span: Span, flag: &str, magic: &str, valid: &[&str]) -> ParseError {
    ParseError::at(
        span,
        format!(
            "unknown option '{flag}' for {magic} (options: {})",
            valid.join(", ")
        ),
    )
}
