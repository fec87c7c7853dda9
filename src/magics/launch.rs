//! `%launch`: evaluates the grid, block, shared memory and stream, matches every argument against
//! the CUDA kernel's C parameters (arrays for pointers, numbers converted to the scalar type) and
//! hands one `LaunchRequest` to the device state. Device printf goes to stdout, checker reports
//! to stderr.
//!
//! [`Magics::launch_request`] is the one place the command language checks a launch's arguments:
//! `%launch`, `%time`, `%profile`, `%gpu compare` and launches recorded into a `%graph` all build
//! their `LaunchRequest` there, so each check (and its message, with a caret under the argument)
//! exists once. The device state checks the request again against the loaded kernel for every
//! caller (`gpu::args`, through `DeviceState::checked_request`). Names that do not exist get a
//! hint from `crate::suggest::did_you_mean`.
//!
//! All checks happen before the launch; nothing here touches array contents.

use super::eval::{self, Value};

use super::host::int_range;
use super::lex::{ParseError, Span};
use super::parse::{Expr, ExprKind, Launch, LaunchConfig};
use super::{LineCtx, MagicError, Magics};
use crate::display::values::fmt_f64;
use crate::gpu::{Dim3, Dtype, KernelParam, LaunchArg, LaunchRequest, ParamKind};
use crate::suggest::{did_you_mean, Quote};
use nb::ErrorKind;
use protocol::output::{CellOutput, OutputSink};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn dim3(v: &[u64], what: &str, e: &Expr) -> Result<Dim3, ParseError> {
    let get = |i: usize| -> Result<u32, ParseError> {
        let x = v.get(i).copied().unwrap_or(1);
        u32::try_from(x).map_err(|_| ParseError::at(e.span, format!("{what} {x} is too large")))
    };
    Ok((get(0)?, get(1)?, get(2)?))
}

fn describe(p: &KernelParam) -> String {
    format!("{} {}", p.c_type, p.name)
}

impl Magics {
    pub(crate) fn launch(
        &mut self,
        ctx: &LineCtx,
        l: &Launch,
        out: &OutputSink,
        cancel: &Arc<AtomicBool>,
    ) -> Result<(), MagicError> {
        let request = self.launch_request(ctx, l, cancel)?;
        if self.dev.recording_graph().is_some() {
            self.dev.record_launch(&request).map_err(|e| ctx.gpu(e))?;
            return Ok(());
        }
        let outcome = self.dev.launch(&request).map_err(|e| {
            if cancel.load(Ordering::Relaxed) {
                ctx.plain(
                    ErrorKind::Interrupted,
                    format!("{} was interrupted", l.kernel.text),
                )
            } else {
                ctx.gpu(e)
            }
        })?;
        if !outcome.printf.is_empty() {
            out(CellOutput::Stdout(outcome.printf));
        }
        if !outcome.reports.is_empty() {
            let mut s = outcome.reports.join("\n");
            s.push('\n');
            out(CellOutput::Stderr(s));
        }
        Ok(())
    }

    /// The checked `LaunchRequest` of a parsed launch (every argument evaluated and matched
    /// against the CUDA kernel's C signature); nothing is launched. Used by every launch path of
    /// the command language (`%launch`, `%time`, `%profile`, `%gpu compare`, graph recording).
    pub(crate) fn launch_request(
        &mut self,
        ctx: &LineCtx,
        l: &Launch,
        cancel: &Arc<AtomicBool>,
    ) -> Result<LaunchRequest, MagicError> {
        let params = self
            .dev
            .kernel_params(&l.kernel.text)
            .map_err(|e| self.kernel_err(ctx, e, &l.kernel))?;
        let argerr = |e: ParseError| ctx.err(ErrorKind::Argument, e);
        if l.args.len() != params.len() {
            let span = match (l.args.first(), l.args.last()) {
                (Some(a), Some(b)) => a.span.to(b.span),
                _ => l.kernel.span,
            };
            let sig: Vec<String> = params.iter().map(describe).collect();
            return Err(argerr(ParseError::at(
                span,
                format!(
                    "{} takes {} argument{} ({}), got {}",
                    l.kernel.text,
                    params.len(),
                    if params.len() == 1 { "" } else { "s" },
                    sig.join(", "),
                    l.args.len()
                ),
            )));
        }
        let mut args = Vec::with_capacity(params.len());
        let mut first_array: Option<(String, usize)> = None;
        for (i, (a, p)) in l.args.iter().zip(&params).enumerate() {
            let which = format!("argument {} of %launch ({})", i + 1, describe(p));
            match &p.kind {
                ParamKind::Pointer { elem, .. } => {
                    let Some((n, offset)) = self.pointer_arg(a, &which).map_err(argerr)? else {
                        args.push(LaunchArg::Null);
                        continue;
                    };
                    let n = &n;
                    let Some(info) = self.dev.array(n) else {
                        let names: Vec<String> =
                            self.dev.arrays().into_iter().map(|x| x.name).collect();
                        let hint = did_you_mean(n, names.iter().map(String::as_str), Quote::Plain)
                            .map(|h| format!("; {h}"))
                            .unwrap_or_default();
                        let msg = if let Some(lost) = self.dev.lost_array(n) {
                            lost
                        } else if self.scalars.contains_key(n) {
                            format!("'{n}' is a scalar, but {which} must be an array")
                        } else {
                            format!("unknown array '{n}' in argument {} of %launch{hint}", i + 1)
                        };
                        return Err(argerr(ParseError::at(a.span, msg)));
                    };
                    if let Some(d) = elem {
                        if *d != info.dtype {
                            return Err(argerr(ParseError::at(
                                a.span,
                                format!(
                                    "array '{n}' is {} but {which} points to {}",
                                    info.dtype, d
                                ),
                            )));
                        }
                    }
                    let len: usize = info.shape.iter().product();
                    if offset > len {
                        return Err(argerr(ParseError::at(
                            a.span,
                            format!(
                                "`{n} + {offset}` in {which} points past the end of array \
                                 '{n}' ({len} elements)"
                            ),
                        )));
                    }
                    if first_array.is_none() {
                        first_array = Some((n.clone(), len - offset));
                    }
                    args.push(if offset == 0 {
                        LaunchArg::Array(n.clone())
                    } else {
                        LaunchArg::ArrayAt(n.clone(), offset)
                    });
                }
                ParamKind::Aggregate(layout) => {
                    let mut leaves = Vec::new();
                    flatten_tuple(a, &mut leaves);
                    if leaves.len() != layout.fields.len() {
                        let names: Vec<&str> =
                            layout.fields.iter().map(|f| f.name.as_str()).collect();
                        return Err(argerr(ParseError::at(
                            a.span,
                            format!(
                                "{which} is passed by value: a tuple of {} number{} ({}), got {}",
                                names.len(),
                                if names.len() == 1 { "" } else { "s" },
                                names.join(", "),
                                if leaves.len() == 1 {
                                    "one value".to_string()
                                } else {
                                    format!("{} values", leaves.len())
                                }
                            ),
                        )));
                    }
                    let mut fields = Vec::with_capacity(leaves.len());
                    for (e, f) in leaves.iter().zip(&layout.fields) {
                        let what = format!("field `{}` of {which}", f.name);
                        let v = eval::eval(e, &self.env()).map_err(|err| {
                            argerr(ParseError {
                                message: format!("{} in {what}", err.message),
                                span: err.span,
                            })
                        })?;
                        fields.push(scalar_arg(v, f.dtype, &what, e.span).map_err(argerr)?);
                    }
                    args.push(LaunchArg::Fields(fields));
                }
                ParamKind::Scalar(d) => {
                    let v = eval::eval(a, &self.env()).map_err(|e| {
                        argerr(ParseError {
                            message: format!("{} in {which}", e.message),
                            span: e.span,
                        })
                    })?;
                    args.push(scalar_arg(v, *d, &which, a.span).map_err(argerr)?);
                }
                ParamKind::Other => {
                    return Err(argerr(ParseError::at(
                        a.span,
                        format!("{which}: this parameter type cannot be passed from %launch"),
                    )))
                }
            }
        }
        let env = self.env();
        let (grid, block, shared_bytes, stream) = match &l.config {
            LaunchConfig::Auto(span) => {
                let Some((_, len)) = first_array else {
                    return Err(argerr(ParseError::at(
                        *span,
                        "[auto] needs an array argument to size the grid",
                    )));
                };
                // The block size from the occupancy API on a GPU, 256 on ptxsim.
                let (grid, block) = self
                    .dev
                    .auto_config(&l.kernel.text, len, 0)
                    .map_err(|e| ctx.gpu_at(e, *span))?;
                (grid, block, 0, None)
            }
            LaunchConfig::Explicit {
                grid,
                block,
                shared,
                stream,
            } => {
                let g = eval::eval_dims(grid, &env, "the grid", 3).map_err(argerr)?;
                let b = eval::eval_dims(block, &env, "the block", 3).map_err(argerr)?;
                let g = dim3(&g, "grid dimension", grid).map_err(argerr)?;
                let b = dim3(&b, "block dimension", block).map_err(argerr)?;
                let sh = match shared {
                    Some(e) => {
                        let v =
                            eval::eval_int(e, &env, "the shared memory size").map_err(argerr)?;
                        u32::try_from(v).map_err(|_| {
                            argerr(ParseError::at(
                                e.span,
                                format!("shared memory size {v} is out of range"),
                            ))
                        })?
                    }
                    None => 0,
                };
                let st = match stream.as_ref().map(|e| &e.kind) {
                    None | Some(ExprKind::Int(0)) => None,
                    Some(ExprKind::Name(n)) => Some(n.clone()),
                    Some(ExprKind::Int(n)) => Some(n.to_string()),
                    Some(_) => {
                        let span = stream.as_ref().map(|e| e.span).unwrap_or_default();
                        return Err(argerr(ParseError::at(
                            span,
                            "a stream is a name (stream=s1) or 0 for the default stream",
                        )));
                    }
                };
                (g, b, sh, st)
            }
        };
        Ok(LaunchRequest {
            kernel: l.kernel.text.clone(),
            grid,
            block,
            shared_bytes,
            stream,
            args,
            check: l.check,
            cancel: cancel.clone(),
        })
    }
}

/// The numbers of a tuple argument, nested tuples flattened: `((1.0, 2.0), 3)` → 1.0, 2.0, 3.
fn flatten_tuple<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    // An iterative walk: a deeply nested tuple must not overflow the stack.
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match &e.kind {
            ExprKind::Tuple(items) => stack.extend(items.iter().rev()),
            _ => out.push(e),
        }
    }
}

impl Magics {
    /// The array and element offset a pointer argument names: `a`, `a + 256`, `a + N - 1`;
    /// None for `null` (also `NULL`, `nullptr`, `0`), unless an array of that name exists.
    fn pointer_arg(&self, a: &Expr, which: &str) -> Result<Option<(String, usize)>, ParseError> {
        let usage = || {
            ParseError::at(
                a.span,
                format!("{which} must be an array name, `array + offset` or null"),
            )
        };
        match &a.kind {
            ExprKind::Name(n)
                if matches!(n.as_str(), "null" | "NULL" | "nullptr")
                    && self.dev.array(n).is_none() =>
            {
                Ok(None)
            }
            ExprKind::Int(0) => Ok(None),
            ExprKind::Name(n) => Ok(Some((n.clone(), 0))),
            ExprKind::Chain(base, ops) => {
                let ExprKind::Name(n) = &base.kind else {
                    return Err(usage());
                };
                let env = self.env();
                let mut offset: i128 = 0;
                for (op, term) in ops {
                    let v = eval::eval_int(term, &env, "a pointer offset")? as i128;
                    offset += match op {
                        super::parse::BinOp::Add => v,
                        super::parse::BinOp::Sub => -v,
                        _ => return Err(usage()),
                    };
                }
                if offset < 0 {
                    return Err(ParseError::at(
                        a.span,
                        format!(
                            "`{n} - {}` in {which} points before the start of array '{n}'",
                            -offset
                        ),
                    ));
                }
                let offset = usize::try_from(offset).map_err(|_| usage())?;
                Ok(Some((n.clone(), offset)))
            }
            _ => Err(usage()),
        }
    }
}

/// A number converted to a scalar parameter's type, or an error naming the argument.
fn scalar_arg(v: Value, d: Dtype, which: &str, span: Span) -> Result<LaunchArg, ParseError> {
    if d.is_float() {
        return Ok(LaunchArg::Float(v.as_f64()));
    }
    let i = match v {
        Value::Int(i) => i,
        Value::Float(f) => {
            return Err(ParseError::at(
                span,
                format!(
                    "{which} is an integer, got {} (use int(...) to truncate)",
                    fmt_f64(f)
                ),
            ))
        }
    };
    let (lo, hi) = int_range(d);
    if (i as i128) < lo || (i as i128) > hi {
        return Err(ParseError::at(
            span,
            format!("{i} does not fit in {which} ({lo} to {hi})"),
        ));
    }
    Ok(LaunchArg::Int(i))
}
