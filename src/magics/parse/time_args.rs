//! The arguments of `%time [-n RUNS] [--warmup W] [--bytes EXPR] [--flops EXPR] [--gpu MODEL]
//! [--check] LAUNCH` (or `%time graph NAME`) and of `%timings [--clear]`. Executed by
//! `magics::time` and `magics::graph`.
//!
//! Pure parsing: this module must not import the magics' execution modules.

use super::super::lex::{Lexer, ParseError, Tok};
use super::ast::{Expr, Launch, Name};
use super::expr::parse_expr;
use super::flags::{eat_eq, gpu_model, unknown_flag};
use super::launch_syntax::parse_launch;

/// The parsed arguments of `%time`.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeArgs {
    pub runs: Option<Expr>,
    pub warmup: Option<Expr>,
    pub bytes: Option<Expr>,
    pub flops: Option<Expr>,
    pub target: TimeTarget,
    /// `--gpu MODEL`: the GPU the estimate on ptxsim models (default: the session's `%gpu`).
    pub gpu: Option<Name>,
    /// The launch as written (for the table and `%timings`).
    pub label: String,
}

/// What `%time` times.
#[derive(Debug, Clone, PartialEq)]
pub enum TimeTarget {
    Launch(Box<Launch>),
    /// `%time graph NAME`: one replay of a recorded CUDA graph per run.
    Graph(Name),
}

const TIME_FLAGS: [&str; 7] = [
    "--gpu MODEL",
    "-n RUNS",
    "--runs RUNS",
    "--warmup W",
    "--bytes EXPR",
    "--flops EXPR",
    "--check",
];

/// Parses what follows `%time`: options, then a launch as `%launch` takes it.
pub fn parse_time(lx: &mut Lexer) -> Result<TimeArgs, ParseError> {
    let (mut runs, mut warmup, mut bytes, mut flops) = (None, None, None, None);
    let mut check = false;
    let mut gpu = None;
    loop {
        let t = lx.peek()?;
        match &t.tok {
            Tok::Sym("-") => {
                // `-n RUNS`: the lexer sees '-' then the word 'n'.
                let mut l2 = lx.clone();
                l2.next_token()?;
                let n = l2.next_token()?;
                if n.tok == Tok::Ident("n".into()) && n.span.start == t.span.end {
                    *lx = l2;
                    eat_eq(lx)?;
                    runs = Some(parse_expr(lx)?);
                } else {
                    return Err(unknown_flag(t.span.to(n.span), "-", "%time", &TIME_FLAGS));
                }
            }
            Tok::Flag(f) => {
                let f = f.clone();
                lx.next_token()?;
                match f.as_str() {
                    "--check" => check = true,
                    "--gpu" => gpu = Some(gpu_model(lx, t.span)?),
                    "--runs" | "--warmup" | "--bytes" | "--flops" => {
                        eat_eq(lx)?;
                        let e = Some(parse_expr(lx)?);
                        match f.as_str() {
                            "--runs" => runs = e,
                            "--warmup" => warmup = e,
                            "--bytes" => bytes = e,
                            _ => flops = e,
                        }
                    }
                    _ => return Err(unknown_flag(t.span, &f, "%time", &TIME_FLAGS)),
                }
            }
            Tok::Eof => {
                return Err(ParseError::at(
                    t.span,
                    "%time needs a launch: %time [-n RUNS] KERNEL[GRID, BLOCK](ARGS)",
                ))
            }
            _ => break,
        }
    }
    lx.skip_ws();
    let start = lx.pos;
    // `%time graph NAME` (a CUDA kernel named `graph` is followed by `[`).
    let mut ahead = lx.clone();
    if let (Ok(g), Ok(n)) = (ahead.next_token(), ahead.next_token()) {
        if let (Tok::Ident(g), Tok::Ident(name)) = (&g.tok, &n.tok) {
            if g == "graph" {
                if !ahead.at_end() {
                    let t = ahead.next_token()?;
                    return Err(ParseError::at(
                        t.span,
                        format!("unexpected {} after %time graph {name}", t.tok),
                    ));
                }
                if check {
                    return Err(ParseError::at(
                        n.span,
                        "--check does not apply to a graph (on ptxsim its launches run under \
                         the checker anyway)",
                    ));
                }
                *lx = ahead;
                return Ok(TimeArgs {
                    runs,
                    warmup,
                    bytes,
                    flops,
                    target: TimeTarget::Graph(Name {
                        text: name.clone(),
                        span: n.span,
                    }),
                    gpu,
                    label: format!("graph {name}"),
                });
            }
        }
    }
    let mut launch = parse_launch(lx)?;
    launch.check |= check;
    let label = lx.src.get(start..lx.pos).unwrap_or("").trim().to_string();
    Ok(TimeArgs {
        runs,
        warmup,
        bytes,
        flops,
        target: TimeTarget::Launch(Box::new(launch)),
        gpu,
        label,
    })
}

/// Parses what follows `%timings`: nothing, or `--clear`.
pub fn parse_timings(lx: &mut Lexer) -> Result<bool, ParseError> {
    let mut clear = false;
    while !lx.at_end() {
        let t = lx.next_token()?;
        match &t.tok {
            Tok::Flag(f) if f == "--clear" => clear = true,
            Tok::Flag(f) => return Err(unknown_flag(t.span, f, "%timings", &["--clear"])),
            other => {
                return Err(ParseError::at(
                    t.span,
                    format!("unexpected {other} after %timings"),
                ))
            }
        }
    }
    Ok(clear)
}
