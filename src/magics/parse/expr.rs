//! The expression grammar: sums, products, signs, `x.shape[i]`, calls such as `len(x)`, tuples,
//! struct values by member names (`Matrix(width=4, elements=a)`), and the argument lists `(a, b, name=c)` of calls, constructors and launches. Operator runs are
//! kept flat and nesting is bounded by [`MAX_NESTING`], so neither this parser nor the evaluator
//! recurses without limit.
//!
//! Syntax only: names are not resolved and nothing is evaluated here (that is `magics::eval`);
//! this module must not import the grammars of single magics built on it.

use super::super::lex::{Lexer, ParseError, Span, Tok};
use super::ast::{BinOp, Expr, ExprKind, Name};
use super::cursor::{Parser, MAX_NESTING};

impl<'a> Parser<'a> {
    /// After `(`: positional expressions and `name=expr` pairs up to `)`.
    #[allow(clippy::type_complexity)]
    pub(super) fn call_args(&mut self) -> Result<(Vec<Expr>, Vec<(Name, Expr)>), ParseError> {
        let mut pos = Vec::new();
        let mut named = Vec::new();
        if self.eat_sym(")")? {
            return Ok((pos, named));
        }
        loop {
            let t = self.peek()?;
            let t2 = self.lx.peek2()?;
            if let (Tok::Ident(k), Tok::Sym("=")) = (&t.tok, &t2.tok) {
                self.next()?;
                self.next()?;
                let v = self.expr()?;
                named.push((
                    Name {
                        text: k.clone(),
                        span: t.span,
                    },
                    v,
                ));
            } else {
                if !named.is_empty() {
                    return Err(ParseError::at(
                        t.span,
                        "a positional argument cannot follow a named one",
                    ));
                }
                pos.push(self.expr()?);
            }
            let t = self.next()?;
            match t.tok {
                Tok::Sym(",") => {
                    if self.eat_sym(")")? {
                        return Ok((pos, named));
                    }
                }
                Tok::Sym(")") => return Ok((pos, named)),
                other => {
                    return Err(ParseError::at(
                        t.span,
                        format!("expected ',' or ')' in the argument list, found {other}"),
                    ))
                }
            }
        }
    }

    /// One expression. Every nesting of the grammar (parentheses, tuples, call arguments,
    /// `.shape[...]` indices) comes back here, so the depth counted here bounds the parser's
    /// recursion and, since runs of operators are flat, the evaluator's.
    pub fn expr(&mut self) -> Result<Expr, ParseError> {
        if self.depth >= MAX_NESTING {
            let t = self.peek()?;
            return Err(ParseError::at(
                t.span,
                format!("expression nested too deep: more than {MAX_NESTING} levels of parentheses, tuples or calls"),
            ));
        }
        self.depth += 1;
        let e = self.chain(&[("+", BinOp::Add), ("-", BinOp::Sub)], Self::term);
        self.depth -= 1;
        e
    }

    fn term(&mut self) -> Result<Expr, ParseError> {
        self.chain(
            &[("*", BinOp::Mul), ("/", BinOp::Div), ("%", BinOp::Rem)],
            Self::unary,
        )
    }

    /// `operand (op operand)*` for the operators `ops` of one precedence level.
    fn chain(
        &mut self,
        ops: &[(&str, BinOp)],
        operand: fn(&mut Self) -> Result<Expr, ParseError>,
    ) -> Result<Expr, ParseError> {
        let first = operand(self)?;
        let mut rest = Vec::new();
        loop {
            let t = self.peek()?;
            let Some(&(_, op)) = ops
                .iter()
                .find(|(sym, _)| matches!(t.tok, Tok::Sym(x) if x == *sym))
            else {
                break;
            };
            self.next()?;
            rest.push((op, operand(self)?));
        }
        if rest.is_empty() {
            return Ok(first);
        }
        let span = first
            .span
            .to(rest.last().map_or(first.span, |(_, e)| e.span));
        Ok(Expr {
            kind: ExprKind::Chain(Box::new(first), rest),
            span,
        })
    }

    /// Signs before an operand, counted in a loop (not by recursion): `- - x` is `x`.
    fn unary(&mut self) -> Result<Expr, ParseError> {
        let first = self.peek()?;
        let mut negate = false;
        let mut signed = false;
        loop {
            match self.peek()?.tok {
                Tok::Sym("-") => negate = !negate,
                Tok::Sym("+") => {}
                _ => break,
            }
            self.next()?;
            signed = true;
        }
        let e = self.postfix()?;
        if !negate {
            return Ok(e);
        }
        let span = if signed {
            first.span.to(e.span)
        } else {
            e.span
        };
        // Fold literals so that `-9223372036854775808`-style edge cases stay simple.
        Ok(match e.kind {
            ExprKind::Float(v) => Expr {
                kind: ExprKind::Float(-v),
                span,
            },
            kind => Expr {
                kind: ExprKind::Neg(Box::new(Expr { kind, span: e.span })),
                span,
            },
        })
    }

    fn postfix(&mut self) -> Result<Expr, ParseError> {
        let e = self.primary()?;
        if !self.is_sym(".") {
            return Ok(e);
        }
        let dot = self.next()?;
        let ExprKind::Name(array) = &e.kind else {
            return Err(ParseError::at(dot.span, "'.shape' follows an array name"));
        };
        let attr = self.name("'shape' after '.'")?;
        if attr.text != "shape" {
            return Err(ParseError::at(
                attr.span,
                format!("unknown attribute '{}'; arrays have .shape[i]", attr.text),
            ));
        }
        self.expect_sym("[", "after .shape")?;
        let idx = self.expr()?;
        let close = self.expect_sym("]", "after the .shape index")?;
        Ok(Expr {
            kind: ExprKind::Shape(
                Name {
                    text: array.clone(),
                    span: e.span,
                },
                Box::new(idx),
            ),
            span: e.span.to(close),
        })
    }

    fn primary(&mut self) -> Result<Expr, ParseError> {
        let t = self.next()?;
        match t.tok {
            Tok::Int(v) => Ok(Expr {
                kind: ExprKind::Int(v),
                span: t.span,
            }),
            Tok::Float(v) => Ok(Expr {
                kind: ExprKind::Float(v),
                span: t.span,
            }),
            Tok::Ident(name) => {
                if self.is_sym("(") {
                    self.next()?;
                    let (args, named) = self.call_args()?;
                    let end = self.lx.pos;
                    let span = t.span.to(Span::new(end, end));
                    if let Some((k, _)) = named.first() {
                        if !args.is_empty() {
                            return Err(ParseError::at(
                                k.span,
                                format!(
                                    "{name}(…) mixes positional and named values: name every \
                                     member of a struct, or none"
                                ),
                            ));
                        }
                        return Ok(Expr {
                            kind: ExprKind::Record(name, named),
                            span,
                        });
                    }
                    Ok(Expr {
                        kind: ExprKind::Call(name, args),
                        span,
                    })
                } else {
                    Ok(Expr {
                        kind: ExprKind::Name(name),
                        span: t.span,
                    })
                }
            }
            Tok::Sym("(") => {
                let mut items = vec![self.expr()?];
                let mut trailing_comma = false;
                loop {
                    let c = self.next()?;
                    match c.tok {
                        Tok::Sym(")") => {
                            let span = t.span.to(c.span);
                            if items.len() == 1 && !trailing_comma {
                                let mut e = items.remove(0);
                                e.span = span;
                                return Ok(e);
                            }
                            return Ok(Expr {
                                kind: ExprKind::Tuple(items),
                                span,
                            });
                        }
                        Tok::Sym(",") => {
                            if self.is_sym(")") {
                                trailing_comma = true;
                                continue;
                            }
                            items.push(self.expr()?);
                        }
                        other => {
                            return Err(ParseError::at(
                                c.span,
                                format!("expected ',' or ')', found {other}"),
                            ))
                        }
                    }
                }
            }
            other => Err(ParseError::at(
                t.span,
                format!("expected a number, a name or '(', found {other}"),
            )),
        }
    }
}

/// Parses one expression at the lexer's position; the lexer ends after it. For options such as
/// `--vmin`, `--bytes`.
pub fn parse_expr(lx: &mut Lexer) -> Result<Expr, ParseError> {
    let mut p = Parser {
        lx: lx.clone(),
        depth: 0,
    };
    let e = p.expr()?;
    *lx = p.lx;
    Ok(e)
}
