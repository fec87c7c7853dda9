//! The arguments of `%show NAME... [--cmap MAP] [--vmin V] [--vmax V] [--scale K]` (the names of
//! the arrays and the unevaluated options). Executed by `magics::show`.
//!
//! Pure parsing: this module must not import the magics' execution modules.

use super::super::lex::{Lexer, ParseError, Span, Tok};
use super::ast::{Expr, Name};
use super::expr::parse_expr;
use super::flags::{eat_eq, parse_cmap, unknown_flag};
use crate::display::Colormap;

/// The parsed arguments of `%show`.
#[derive(Debug, Clone, PartialEq)]
pub struct ShowArgs {
    pub names: Vec<Name>,
    pub cmap: Option<Colormap>,
    pub vmin: Option<Expr>,
    pub vmax: Option<Expr>,
    pub scale: Option<Expr>,
}

const SHOW_FLAGS: [&str; 4] = ["--cmap MAP", "--vmin V", "--vmax V", "--scale K"];

/// Parses what follows `%show` (the lexer is right after the magic name) up to the end of the line.
pub fn parse_show(lx: &mut Lexer) -> Result<ShowArgs, ParseError> {
    let mut a = ShowArgs {
        names: Vec::new(),
        cmap: None,
        vmin: None,
        vmax: None,
        scale: None,
    };
    while !lx.at_end() {
        let t = lx.next_token()?;
        match &t.tok {
            Tok::Ident(s) => a.names.push(Name {
                text: s.clone(),
                span: t.span,
            }),
            Tok::Sym(",") => {}
            Tok::Flag(f) => {
                eat_eq(lx)?;
                match f.as_str() {
                    "--cmap" => a.cmap = Some(parse_cmap(lx)?),
                    "--vmin" => a.vmin = Some(parse_expr(lx)?),
                    "--vmax" => a.vmax = Some(parse_expr(lx)?),
                    "--scale" => a.scale = Some(parse_expr(lx)?),
                    _ => return Err(unknown_flag(t.span, f, "%show", &SHOW_FLAGS)),
                }
            }
            other => {
                return Err(ParseError::at(
                    t.span,
                    format!("expected an array name or an option of %show, found {other}"),
                ))
            }
        }
    }
    if a.names.is_empty() {
        let at = lx.pos;
        return Err(ParseError::at(
            Span::new(at, at),
            "%show needs at least one array name",
        ));
    }
    Ok(a)
}
