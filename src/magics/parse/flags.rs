//! Helpers shared by the option parsers of several magics: an optional `=` after a flag, a
//! colormap name after `--cmap`, and the error for an option that a magic does not take.
//!
//! Pure parsing: this module must not import the magics' execution modules.

use super::super::lex::{Lexer, ParseError, Span, Tok};
use super::ast::Name;
use crate::display::{self, Colormap};

/// The GPU model after `--gpu` (`%profile`, `%time`, `%info`); `flag` is where `--gpu` stands.
/// A name with spaces may be quoted (`--gpu "RTX 3090"`) or not (`--gpu RTX 3090`): the words
/// after the first are taken while they continue the name of a model of the table.
pub(crate) fn gpu_model(lx: &mut Lexer, flag: Span) -> Result<Name, ParseError> {
    match lx.raw_word() {
        Some((mut text, mut span)) if !text.is_empty() => {
            loop {
                let mut ahead = lx.clone();
                match ahead.raw_word() {
                    Some((next, next_span)) if continues_model_name(&text, &next) => {
                        text = format!("{text} {next}");
                        span = span.to(next_span);
                        *lx = ahead;
                    }
                    _ => break,
                }
            }
            Ok(Name { text, span })
        }
        _ => Err(ParseError::at(
            flag,
            "--gpu needs a GPU model, e.g. --gpu T4 (%gpu lists them)",
        )),
    }
}

/// Whether `words` followed by `next` begins the name of a model of the table, word for word
/// (case-insensitive): `RTX` + `3090`, `A100` + `40GB`.
fn continues_model_name(words: &str, next: &str) -> bool {
    let typed = format!("{words} {next}").to_ascii_lowercase();
    ptxsim::gpus::GPUS.iter().any(|g| {
        let name = g.name.to_ascii_lowercase();
        name.strip_prefix(&typed)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
    })
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
