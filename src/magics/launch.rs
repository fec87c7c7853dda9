//! `%launch`: evaluates the grid, block, shared memory and stream, matches every argument against
//! the CUDA kernel's C parameters (arrays for pointers, spans and mdspans, numbers converted to
//! the scalar type, tuples or `Name(member=…)` for structs, their pointer members taking arrays)
//! and hands one `LaunchRequest` to the device state. Device printf goes to stdout, checker reports
//! to stderr.
//!
//! [`Magics::launch_request`] builds the `LaunchRequest` of every launch path of the command
//! language (`%launch`, `%time`, `%profile`, `%gpu compare`, launches recorded into a `%graph`):
//! it evaluates each argument as its parameter's kind asks (expressions, pointer syntax, names
//! that are scalars or lost arrays) and hands them to the one launch-argument check,
//! `gpu::args::pack` (through `DeviceState::check_args`), putting the caret under the argument
//! that check names. Every launch runs that check again on the loaded CUDA kernel.
//!
//! All checks happen before the launch; nothing here touches array contents.

use super::eval::{self, Value};

use super::lex::ParseError;
use super::parse::{Expr, ExprKind, Launch, LaunchConfig};
use super::{LineCtx, MagicError, Magics};
use crate::display::values::fmt_f64;
use crate::gpu::args;
use crate::gpu::{Dim3, Dtype, LaunchArg, LaunchRequest, ParamKind};
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

/// How launch messages name the call: `argument 2 of %launch (float* y)`.
const LAUNCH: &str = "%launch";

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
        for note in &outcome.notes {
            out(CellOutput::Stdout(format!("{note}\n")));
        }
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
        let kernel = &l.kernel.text;
        let all_args = match (l.args.first(), l.args.last()) {
            (Some(a), Some(b)) => a.span.to(b.span),
            _ => l.kernel.span,
        };
        if l.args.len() != params.len() {
            let message = args::wrong_count(kernel, &params, l.args.len());
            return Err(argerr(ParseError::at(all_args, message)));
        }
        // Evaluate each argument as its parameter's kind asks (the language's part: expression
        // errors, pointer syntax, names that are scalars or lost arrays); gpu::args checks them.
        let mut launch_args = Vec::with_capacity(params.len());
        for (i, (a, p)) in l.args.iter().zip(&params).enumerate() {
            let which = args::label(LAUNCH, i, p);
            launch_args.push(match &p.kind {
                ParamKind::Pointer { .. } | ParamKind::View(_) => {
                    self.pointer_launch_arg(a, &which).map_err(argerr)?
                }
                ParamKind::Aggregate(layout) => {
                    let names: Vec<&str> = layout.fields.iter().map(|f| f.name.as_str()).collect();
                    let alias = p
                        .c_type
                        .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .find(|w| !w.is_empty())
                        .unwrap_or("");
                    let type_names = [layout.name.as_str(), alias];
                    // An array for a struct of several members: gpu::args says what it takes.
                    if let ExprKind::Name(n) = &a.kind {
                        if layout.fields.len() > 1 && self.dev.array(n).is_some() {
                            launch_args.push(LaunchArg::Array(n.clone()));
                            continue;
                        }
                    }
                    let mut leaves = Vec::new();
                    struct_leaves(a, &names, Some(&type_names[..]), &which, &mut leaves)
                        .map_err(argerr)?;
                    let mut fields = Vec::with_capacity(leaves.len());
                    for (j, e) in leaves.iter().enumerate() {
                        let f = layout.fields.get(j);
                        let what = f.map_or(which.clone(), |f| args::part_label(layout, f, &which));
                        fields.push(match f {
                            Some(f) if f.pointer.is_some() => {
                                self.pointer_launch_arg(e, &what).map_err(argerr)?
                            }
                            _ => self
                                .number_arg(e, f.map(|f| f.dtype), &what)
                                .map_err(argerr)?,
                        });
                    }
                    LaunchArg::Fields(fields)
                }
                ParamKind::Scalar(d) => self.number_arg(a, Some(*d), &which).map_err(argerr)?,
                // gpu::args says why such a parameter cannot be passed.
                ParamKind::Other => LaunchArg::Null,
            });
        }
        self.dev
            .check_args(kernel, LAUNCH, &params, &launch_args)
            .map_err(|e| {
                let span = e
                    .position
                    .and_then(|i| l.args.get(i))
                    .map_or(all_args, |a| a.span);
                argerr(ParseError::at(span, e.message))
            })?;
        let first_array = launch_args.iter().find_map(|a| match a {
            LaunchArg::Array(n) | LaunchArg::ArrayAt(n, _) => {
                let offset = if let LaunchArg::ArrayAt(_, off) = a {
                    *off
                } else {
                    0
                };
                let len: usize = self.dev.array(n)?.shape.iter().product();
                Some((n.clone(), len - offset))
            }
            _ => None,
        });
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
            args: launch_args,
            check: l.check,
            cooperative: l.cooperative,
            cancel: cancel.clone(),
        })
    }
}

/// The expressions of a struct argument, one per field of `names` (its flattened member names:
/// `width`, `pos.x`, `taps[2]`) in order: a tuple (nested tuples flattened), a bare value for a
/// one-field struct, `Name(v, …)` positionally, or `Name(member=v, …)` by member names, whose
/// values are again any of these. `type_names` are the names the struct may be written with
/// (None inside another struct: any).
fn struct_leaves<'a>(
    e: &'a Expr,
    names: &[&str],
    type_names: Option<&[&str]>,
    which: &str,
    out: &mut Vec<&'a Expr>,
) -> Result<(), ParseError> {
    let check_name = |name: &str| match type_names {
        Some(t) if !t.contains(&name) => Err(ParseError::at(
            e.span,
            format!(
                "{which} is a `{}`, not a `{name}`",
                t.first().unwrap_or(&"struct")
            ),
        )),
        _ => Ok(()),
    };
    match &e.kind {
        ExprKind::Record(name, members) => {
            check_name(name)?;
            // The members in declaration order, each with the names below it.
            let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
            for n in names {
                let cut = n.find(['.', '[']).unwrap_or(n.len());
                let (m, rest) = n.split_at(cut);
                let rest = rest.strip_prefix('.').unwrap_or(rest);
                match groups.last_mut() {
                    Some((g, sub)) if *g == m => sub.push(rest),
                    _ => groups.push((m, vec![rest])),
                }
            }
            let all = || {
                groups
                    .iter()
                    .map(|(g, _)| *g)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            for (i, (k, _)) in members.iter().enumerate() {
                if !groups.iter().any(|(g, _)| *g == k.text) {
                    let hint = did_you_mean(&k.text, groups.iter().map(|(g, _)| *g), Quote::Code)
                        .map(|h| format!("; {h}"))
                        .unwrap_or_default();
                    return Err(ParseError::at(
                        k.span,
                        format!(
                            "{which} has no member `{}`{hint} (its members: {})",
                            k.text,
                            all()
                        ),
                    ));
                }
                if members[..i].iter().any(|(o, _)| o.text == k.text) {
                    return Err(ParseError::at(
                        k.span,
                        format!("member `{}` of {which} is given twice", k.text),
                    ));
                }
            }
            for (g, sub) in &groups {
                let Some((_, v)) = members.iter().find(|(k, _)| k.text == *g) else {
                    return Err(ParseError::at(
                        e.span,
                        format!(
                            "member `{g}` of {which} is missing (give every member: {})",
                            all()
                        ),
                    ));
                };
                if let [""] = sub.as_slice() {
                    out.push(v);
                } else {
                    let what = format!("member `{g}` of {which}");
                    let before = out.len();
                    struct_leaves(v, sub, None, &what, out)?;
                    let got = out.len() - before;
                    if got != sub.len() {
                        return Err(ParseError::at(
                            v.span,
                            format!(
                                "{what} takes {} values ({}), got {got}",
                                sub.len(),
                                sub.iter()
                                    .map(|s| format!(
                                        "{g}{}{s}",
                                        if s.starts_with('[') { "" } else { "." }
                                    ))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        ));
                    }
                }
            }
            Ok(())
        }
        ExprKind::Call(name, items) if !eval::is_function(name) => {
            check_name(name)?;
            for it in items {
                flatten_tuple(it, out);
            }
            Ok(())
        }
        _ => {
            flatten_tuple(e, out);
            Ok(())
        }
    }
}

/// The values of a tuple argument, nested tuples flattened: `((1.0, 2.0), 3)` → 1.0, 2.0, 3.
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
    /// A pointer argument (of a pointer parameter, a pointer member or a span) as a launch
    /// argument: `null`, `a` or `a + N`, refusing names that are scalars or lost arrays.
    fn pointer_launch_arg(&self, a: &Expr, which: &str) -> Result<LaunchArg, ParseError> {
        let Some((n, offset)) = self.pointer_arg(a, which)? else {
            return Ok(LaunchArg::Null);
        };
        if self.dev.array(&n).is_none() {
            let msg = if let Some(lost) = self.dev.lost_array(&n) {
                Some(lost)
            } else if self.scalars.contains_key(&n) {
                Some(format!("'{n}' is a scalar, but {which} must be an array"))
            } else {
                None
            };
            if let Some(msg) = msg {
                return Err(ParseError::at(a.span, msg));
            }
        }
        Ok(if offset == 0 {
            LaunchArg::Array(n)
        } else {
            LaunchArg::ArrayAt(n, offset)
        })
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

impl Magics {
    /// A number argument as it was written; gpu::args converts it to the parameter's type and
    /// checks its range. The language's own rule: a float is not an integer (`int(x)` is).
    fn number_arg(&self, e: &Expr, d: Option<Dtype>, which: &str) -> Result<LaunchArg, ParseError> {
        let v = eval::eval(e, &self.env()).map_err(|err| ParseError {
            message: format!("{} in {which}", err.message),
            span: err.span,
        })?;
        Ok(match v {
            Value::Int(i) => LaunchArg::Int(i),
            Value::Float(f) if d.is_some_and(|d| !d.is_float()) => {
                return Err(ParseError::at(
                    e.span,
                    format!(
                        "{which} is an integer, got {} (use int(...) to truncate)",
                        fmt_f64(f)
                    ),
                ))
            }
            Value::Float(f) => LaunchArg::Float(f),
        })
    }
}
