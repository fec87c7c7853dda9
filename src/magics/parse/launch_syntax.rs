//! The launch syntax: `[--check] [--cooperative] KERNEL[GRID, BLOCK](ARGS)` (Numba style, or `KERNEL[auto](ARGS)`)
//! and `KERNEL<<<GRID, BLOCK[, SHMEM[, STREAM]]>>>(ARGS)` (CUDA style), with `stream=`/`shared=`
//! in the brackets, and CUDA kernel names with template arguments (`scale<float, 4>`).
//!
//! Syntax only: kernels are looked up and launched by `magics::launch`; this module must not
//! import the execution modules nor the grammars of the magics that take a launch (`%launch`,
//! `%time`, `%profile`, `%gpu compare`), which build on it.

use super::super::lex::{Lexer, ParseError, Span, Tok};
use super::ast::{Expr, Launch, LaunchConfig, Name};
use super::cursor::{unknown_option, Parser};

impl<'a> Parser<'a> {
    /// A CUDA kernel name, possibly with template arguments: `scale<float, 4>`.
    pub(super) fn kernel_name(&mut self) -> Result<Name, ParseError> {
        let mut n = self.name("a CUDA kernel name")?;
        let rest = &self.lx.src[self.lx.pos..];
        if rest.starts_with('<') && !rest.starts_with("<<<") {
            let mut depth = 0usize;
            let mut end = None;
            for (i, c) in rest.char_indices() {
                match c {
                    '<' => depth += 1,
                    '>' => {
                        depth -= 1;
                        if depth == 0 {
                            end = Some(i + 1);
                            break;
                        }
                    }
                    '(' | ')' | '[' | ']' | ';' | '#' | '"' => break,
                    _ => {}
                }
            }
            let Some(end) = end else {
                return Err(ParseError::at(
                    Span::new(self.lx.pos, self.lx.src.len()),
                    "unclosed template argument list '<'",
                ));
            };
            n.text = normalise_template(&format!("{}{}", n.text, &rest[..end]));
            self.lx.pos += end;
            n.span.end = self.lx.pos;
        }
        Ok(n)
    }

    pub(super) fn launch(&mut self) -> Result<Launch, ParseError> {
        let mut check = false;
        let mut cooperative = false;
        while let Some(f) = self.flag()? {
            match &f.tok {
                Tok::Flag(s) if s == "--check" => check = true,
                Tok::Flag(s) if s == "--cooperative" => cooperative = true,
                other => {
                    return Err(unknown_option(
                        &f,
                        other,
                        "%launch",
                        &["--check", "--cooperative"],
                    ))
                }
            }
        }
        let kernel = self.kernel_name()?;
        let t = self.next()?;
        let config = match t.tok {
            Tok::Sym("[") => {
                if let (Tok::Ident(a), Tok::Sym("]")) = (&self.peek()?.tok, &self.lx.peek2()?.tok)
                {
                    if a == "auto" {
                        let s = self.next()?.span;
                        self.next()?;
                        LaunchConfig::Auto(s)
                    } else {
                        self.config("]", t.span)?
                    }
                } else {
                    self.config("]", t.span)?
                }
            }
            Tok::Sym("<<<") => self.config(">>>", t.span)?,
            other => {
                return Err(ParseError::at(
                    t.span,
                    format!(
                        "expected '[GRID, BLOCK]' or '<<<GRID, BLOCK>>>' after the CUDA kernel name, found {other}"
                    ),
                ))
            }
        };
        self.expect_sym("(", "before the launch arguments")?;
        let (args, named) = self.call_args()?;
        if let Some((k, _)) = named.first() {
            return Err(ParseError::at(
                k.span,
                "launch arguments are positional (named ones go inside the brackets: stream=s1)",
            ));
        }
        Ok(Launch {
            check,
            cooperative,
            kernel,
            config,
            args,
        })
    }

    /// `GRID, BLOCK[, SHMEM[, STREAM]]` and `stream=`/`shared=` up to `close`.
    fn config(&mut self, close: &'static str, open: Span) -> Result<LaunchConfig, ParseError> {
        let mut pos: Vec<Expr> = Vec::new();
        let mut shared = None;
        let mut stream = None;
        loop {
            let t = self.peek()?;
            if let (Tok::Ident(k), Tok::Sym("=")) = (&t.tok, &self.lx.peek2()?.tok) {
                self.next()?;
                self.next()?;
                let v = self.expr()?;
                match k.as_str() {
                    "stream" => stream = Some(v),
                    "shared" | "shmem" => shared = Some(v),
                    _ => {
                        return Err(ParseError::at(
                            t.span,
                            format!("unknown launch option '{k}' (use stream= or shared=)"),
                        ))
                    }
                }
            } else {
                pos.push(self.expr()?);
            }
            let t = self.next()?;
            match t.tok {
                Tok::Sym(",") => continue,
                Tok::Sym(s) if s == close => break,
                other => {
                    return Err(ParseError::at(
                        t.span,
                        format!(
                            "expected ',' or '{close}' in the launch configuration, found {other}"
                        ),
                    ))
                }
            }
        }
        if pos.len() < 2 {
            let end = self.lx.pos;
            return Err(ParseError::at(
                open.to(Span::new(end, end)),
                "a launch needs a grid and a block: KERNEL[GRID, BLOCK](ARGS) or KERNEL<<<GRID, BLOCK>>>(ARGS)",
            ));
        }
        if pos.len() > 4 {
            return Err(ParseError::at(
                pos[4].span,
                "too many values in the launch configuration (GRID, BLOCK, SHMEM, STREAM)",
            ));
        }
        let mut it = pos.into_iter();
        let (Some(grid), Some(block)) = (it.next(), it.next()) else {
            return Err(ParseError::nowhere("internal: launch configuration"));
        };
        if let Some(s) = it.next() {
            shared = Some(s);
        }
        if let Some(s) = it.next() {
            stream = Some(s);
        }
        Ok(LaunchConfig::Explicit {
            grid,
            block,
            shared,
            stream,
        })
    }
}

/// Parses a launch (`[--check] [--cooperative] KERNEL[GRID, BLOCK](ARGS)` or the `<<<>>>` form) at the lexer's
/// position, as `%launch` does; the lexer ends after it. For `%time`.
pub fn parse_launch(lx: &mut Lexer) -> Result<Launch, ParseError> {
    let mut p = Parser {
        lx: lx.clone(),
        depth: 0,
    };
    let l = p.launch()?;
    *lx = p.lx;
    Ok(l)
}

/// `scale< float , 4 >` → `scale<float, 4>`; `f<unsigned  int>` keeps one space between words.
pub fn normalise_template(s: &str) -> String {
    let mut out = String::new();
    let mut pending_space = false;
    for c in s.chars() {
        if c.is_whitespace() {
            pending_space = true;
            continue;
        }
        if pending_space {
            let prev = out.chars().last();
            if prev.is_some_and(super::super::lex::is_ident_char)
                && super::super::lex::is_ident_char(c)
            {
                out.push(' ');
            }
            pending_space = false;
        }
        out.push(c);
        if c == ',' {
            out.push(' ');
        }
    }
    out.replace(",  ", ", ")
}
