//! The arguments of `%array [--managed] NAME = CTOR(ARGS, DTYPE)`: the constructors `zeros`,
//! `ones`, `empty`, `full`, `arange`, `linspace`, `rand`/`randn` (with `seed=`) and `copy`, and
//! their arity and dtype errors. Executed by `magics::exec`.
//!
//! Pure parsing: this module must not import the magics' execution modules.

use super::super::lex::{ParseError, Span, Tok};
use super::ast::{Ctor, DtypeArg, Expr, ExprKind, Name};
use super::command::Command;
use super::cursor::{dtype_list, parse_dtype, unknown_option, Parser};
use crate::suggest::{did_you_mean, Quote};

impl<'a> Parser<'a> {
    pub(crate) fn array(&mut self) -> Result<Command, ParseError> {
        let mut managed = false;
        if let Tok::Flag(f) = &self.peek()?.tok {
            if f == "--managed" {
                self.next()?;
                managed = true;
            } else {
                let t = self.next()?;
                return Err(unknown_option(&t, &t.tok, "%array", &["--managed"]));
            }
        }
        let name = self.name("an array name")?;
        self.expect_sym("=", "after the array name")?;
        let f = self.name(
            "an array constructor (zeros, ones, empty, full, arange, linspace, rand, randn, copy)",
        )?;
        self.expect_sym("(", &format!("after {}", f.text))?;
        let (args, named) = self.call_args()?;
        let close = self.lx.pos;
        let span = f.span.to(Span::new(close, close));
        let total = args.len();
        let ctor_name = f.text.clone();
        // `n` counts the arguments before the dtype; messages count them all.
        let arity = move |want: &str, n: usize, have: usize| -> Result<(), ParseError> {
            if have == n {
                Ok(())
            } else {
                Err(ParseError::at(
                    span,
                    format!(
                        "{ctor_name}() takes ({want}), got {total} argument{}",
                        if total == 1 { "" } else { "s" }
                    ),
                ))
            }
        };
        let seed_ok = matches!(f.text.as_str(), "rand" | "randn");
        let mut seed = None;
        for (k, v) in named {
            if k.text == "seed" && seed_ok {
                seed = Some(v);
            } else {
                return Err(ParseError::at(
                    k.span,
                    format!("{}() has no argument '{}'", f.text, k.text),
                ));
            }
        }
        if f.text == "copy" {
            arity("OTHER", 1, args.len())?;
            return match &args[0].kind {
                ExprKind::Name(n) => Ok(Command::Array {
                    name,
                    ctor: Ctor::Copy(Name {
                        text: n.clone(),
                        span: args[0].span,
                    }),
                    dtype: None,
                    span,
                    managed,
                }),
                _ => Err(ParseError::at(args[0].span, "copy() takes an array name")),
            };
        }
        // Every other constructor ends with its dtype.
        let mut args = args;
        let dt_expr = match args.pop() {
            Some(e) => e,
            None => {
                return Err(ParseError::at(
                    span,
                    format!("{}() needs a shape and a dtype", f.text),
                ))
            }
        };
        let dtype = match &dt_expr.kind {
            ExprKind::Name(n) => DtypeArg {
                dtype: parse_dtype(&Name {
                    text: n.clone(),
                    span: dt_expr.span,
                })?,
                span: dt_expr.span,
            },
            _ => {
                return Err(ParseError::at(
                    dt_expr.span,
                    format!(
                        "the last argument of {}() must be a dtype ({})",
                        f.text,
                        dtype_list()
                    ),
                ))
            }
        };
        let mut it = args.clone().into_iter();
        let mut take = || {
            it.next()
                .ok_or_else(|| ParseError::nowhere("internal: arity"))
        };
        let ctor = match f.text.as_str() {
            "zeros" | "ones" | "empty" => {
                arity("SHAPE, DTYPE", 1, args.len()).map_err(|e| shape_hint(e, &args))?;
                let s = take()?;
                match f.text.as_str() {
                    "zeros" => Ctor::Zeros(s),
                    "ones" => Ctor::Ones(s),
                    _ => Ctor::Empty(s),
                }
            }
            "full" => {
                arity("SHAPE, VALUE, DTYPE", 2, args.len())?;
                Ctor::Full(take()?, take()?)
            }
            "arange" => {
                if args.is_empty() || args.len() > 3 {
                    return Err(ParseError::at(
                        span,
                        "arange() takes (N, DTYPE), (START, STOP, DTYPE) or (START, STOP, STEP, DTYPE)",
                    ));
                }
                Ctor::Arange(args.clone())
            }
            "linspace" => {
                arity("A, B, N, DTYPE", 3, args.len())?;
                Ctor::Linspace(take()?, take()?, take()?)
            }
            "rand" | "randn" => {
                arity("SHAPE, DTYPE[, seed=S]", 1, args.len()).map_err(|e| shape_hint(e, &args))?;
                if f.text == "rand" {
                    Ctor::Rand(take()?, seed)
                } else {
                    Ctor::Randn(take()?, seed)
                }
            }
            other => {
                let names = [
                    "zeros", "ones", "empty", "full", "arange", "linspace", "rand", "randn", "copy",
                ];
                let hint = did_you_mean(other, names.iter().copied(), Quote::Plain)
                    .map(|h| format!("; {h}"))
                    .unwrap_or_default();
                return Err(ParseError::at(
                    f.span,
                    format!(
                        "unknown array constructor '{other}'{hint} (zeros, ones, empty, full, arange, linspace, rand, randn, copy)"
                    ),
                ));
            }
        };
        Ok(Command::Array {
            name,
            ctor,
            dtype: Some(dtype),
            span,
            managed,
        })
    }
}

fn shape_hint(mut e: ParseError, args: &[Expr]) -> ParseError {
    if args.len() > 1 {
        e.message
            .push_str("; write a multi-dimensional shape as a tuple: (H, W)");
    }
    e
}
