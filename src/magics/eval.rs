//! Evaluation of command-language expressions: integers with checked arithmetic (overflow and
//! division by zero are errors, never panics), floats where floats are allowed, `%set` scalars,
//! `len(x)`, `x.shape[i]`, `ceil(a / b)` (integer ceiling division), `min`, `max`, `floor`.
//!
//! It reads names through the [`Env`] trait and never touches the device itself.

use super::lex::{ParseError, Span};
use super::parse::{BinOp, Expr, ExprKind};
use crate::suggest::{did_you_mean, Quote};
use std::fmt;

/// A scalar value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
}

impl Value {
    pub fn as_f64(self) -> f64 {
        match self {
            Value::Int(v) => v as f64,
            Value::Float(v) => v,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => f.write_str(&crate::display::values::fmt_f64(*v)),
        }
    }
}

/// What an expression may look up.
pub trait Env {
    fn scalar(&self, name: &str) -> Option<Value>;
    fn shape(&self, array: &str) -> Option<Vec<usize>>;
    /// Whether arrays live on a GPU (the built-in `gpu` is 1, `by_backend` takes its second
    /// argument); false on ptxsim.
    fn on_gpu(&self) -> bool {
        false
    }
}

type R<T> = Result<T, ParseError>;

fn overflow(span: Span) -> ParseError {
    ParseError::at(span, "integer overflow")
}

pub fn eval(e: &Expr, env: &dyn Env) -> R<Value> {
    match &e.kind {
        ExprKind::Int(v) => Ok(Value::Int(*v)),
        ExprKind::Float(v) => Ok(Value::Float(*v)),
        ExprKind::Name(n) => {
            if let Some(v) = env.scalar(n) {
                return Ok(v);
            }
            match n.as_str() {
                "pi" => return Ok(Value::Float(std::f64::consts::PI)),
                "gpu" => return Ok(Value::Int(i64::from(env.on_gpu()))),
                "inf" => return Ok(Value::Float(f64::INFINITY)),
                "nan" => return Ok(Value::Float(f64::NAN)),
                _ => {}
            }
            if env.shape(n).is_some() {
                return Err(ParseError::at(
                    e.span,
                    format!("'{n}' is an array, not a number (use len({n}) or {n}.shape[0])"),
                ));
            }
            Err(ParseError::at(
                e.span,
                format!("unknown name '{n}' (not a %set scalar or an array)"),
            ))
        }
        ExprKind::Neg(x) => match eval(x, env)? {
            Value::Int(v) => v
                .checked_neg()
                .map(Value::Int)
                .ok_or_else(|| overflow(e.span)),
            Value::Float(v) => Ok(Value::Float(-v)),
        },
        ExprKind::Chain(first, rest) => eval_chain(first, rest, env),
        ExprKind::Call(f, args) => call(f, args, e.span, env),
        ExprKind::Shape(arr, idx) => {
            let shape = env
                .shape(&arr.text)
                .ok_or_else(|| ParseError::at(arr.span, format!("unknown array '{}'", arr.text)))?;
            let i = eval_int(idx, env, "a .shape index")?;
            let n = shape.len() as i64;
            let j = if i < 0 { i + n } else { i };
            if j < 0 || j >= n {
                return Err(ParseError::at(
                    idx.span,
                    format!(
                        "index {i} is out of range: '{}' has {n} dimension{}",
                        arr.text,
                        if n == 1 { "" } else { "s" }
                    ),
                ));
            }
            Ok(Value::Int(shape[j as usize] as i64))
        }
        ExprKind::Tuple(_) => Err(ParseError::at(
            e.span,
            "a tuple is not a number (tuples are for shapes, grids and blocks)",
        )),
        ExprKind::Record(name, _) => Err(ParseError::at(
            e.span,
            format!(
                "`{name}(…)` is a struct value, not a number (it is a launch argument of a \
                 struct parameter)"
            ),
        )),
    }
}

/// Whether `name(…)` is one of the functions of expressions (not a struct written
/// positionally, `Matrix(4, 4, 4, a)`).
pub fn is_function(name: &str) -> bool {
    FUNCTIONS.contains(&name)
}

/// `first op1 x1 op2 x2 …`, left to right.
fn eval_chain(first: &Expr, rest: &[(BinOp, Expr)], env: &dyn Env) -> R<Value> {
    let mut acc = eval(first, env)?;
    for (op, x) in rest {
        let y = eval(x, env)?;
        acc = binop(*op, acc, y, first.span.to(x.span), x.span)?;
    }
    Ok(acc)
}

fn binop(op: BinOp, x: Value, y: Value, span: Span, rhs: Span) -> R<Value> {
    match (x, y) {
        (Value::Int(a), Value::Int(b)) => {
            let r = match op {
                BinOp::Add => a.checked_add(b),
                BinOp::Sub => a.checked_sub(b),
                BinOp::Mul => a.checked_mul(b),
                BinOp::Div | BinOp::Rem => {
                    if b == 0 {
                        return Err(ParseError::at(rhs, "division by zero"));
                    }
                    if op == BinOp::Div {
                        a.checked_div(b)
                    } else {
                        a.checked_rem(b)
                    }
                }
            };
            r.map(Value::Int).ok_or_else(|| overflow(span))
        }
        _ => {
            let (a, b) = (x.as_f64(), y.as_f64());
            let r = match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                BinOp::Div | BinOp::Rem => {
                    if b == 0.0 {
                        return Err(ParseError::at(rhs, "division by zero"));
                    }
                    if op == BinOp::Div {
                        a / b
                    } else {
                        a % b
                    }
                }
            };
            Ok(Value::Float(r))
        }
    }
}

fn to_int(v: f64, span: Span) -> R<Value> {
    if v.is_finite() && v.abs() < 9.2e18 {
        Ok(Value::Int(v as i64))
    } else {
        Err(ParseError::at(
            span,
            format!("{v} does not fit in an integer"),
        ))
    }
}

fn call(f: &str, args: &[Expr], span: Span, env: &dyn Env) -> R<Value> {
    let want = |n: usize| -> R<()> {
        if args.len() == n {
            Ok(())
        } else {
            Err(ParseError::at(
                span,
                format!("{f}() takes {n} argument{}", if n == 1 { "" } else { "s" }),
            ))
        }
    };
    match f {
        "by_backend" => {
            want(2)?;
            // Both are evaluated, so a mistake in either shows on every backend.
            let sim = eval(&args[0], env)?;
            let gpu = eval(&args[1], env)?;
            Ok(if env.on_gpu() { gpu } else { sim })
        }
        "len" => {
            want(1)?;
            let ExprKind::Name(n) = &args[0].kind else {
                return Err(ParseError::at(args[0].span, "len() takes an array name"));
            };
            let shape = env.shape(n).ok_or_else(|| {
                ParseError::at(args[0].span, format!("unknown array '{n}' in len()"))
            })?;
            let len = shape.iter().try_fold(1i64, |acc, &d| {
                i64::try_from(d).ok().and_then(|d| acc.checked_mul(d))
            });
            len.map(Value::Int).ok_or_else(|| overflow(span))
        }
        "ceil" | "floor" => {
            want(1)?;
            // ceil(a / b) on integers is exact integer ceiling division.
            if let ExprKind::Chain(first, rest) = &args[0].kind {
                let Some(((BinOp::Div, b), prefix)) = rest.split_last() else {
                    return rounded(f, eval(&args[0], env)?, span);
                };
                if let (Value::Int(x), Value::Int(y)) =
                    (eval_chain(first, prefix, env)?, eval(b, env)?)
                {
                    if y == 0 {
                        return Err(ParseError::at(b.span, "division by zero"));
                    }
                    let q = x.checked_div(y).ok_or_else(|| overflow(span))?;
                    let r = x % y;
                    let adjust = if r == 0 {
                        0
                    } else if f == "ceil" && (r > 0) == (y > 0) {
                        1
                    } else if f == "floor" && (r > 0) != (y > 0) {
                        -1
                    } else {
                        0
                    };
                    return Ok(Value::Int(q + adjust));
                }
            }
            rounded(f, eval(&args[0], env)?, span)
        }
        "min" | "max" => {
            if args.len() < 2 {
                return Err(ParseError::at(
                    span,
                    format!("{f}() takes 2 or more arguments"),
                ));
            }
            let vals = args.iter().map(|a| eval(a, env)).collect::<R<Vec<_>>>()?;
            if vals.iter().all(|v| matches!(v, Value::Int(_))) {
                let ints = vals.iter().map(|v| match v {
                    Value::Int(i) => *i,
                    Value::Float(x) => *x as i64,
                });
                let r = if f == "min" { ints.min() } else { ints.max() };
                return Ok(Value::Int(r.unwrap_or(0)));
            }
            let fl = vals.iter().map(|v| v.as_f64());
            let r = if f == "min" {
                fl.fold(f64::INFINITY, f64::min)
            } else {
                fl.fold(f64::NEG_INFINITY, f64::max)
            };
            Ok(Value::Float(r))
        }
        "int" => {
            want(1)?;
            match eval(&args[0], env)? {
                Value::Int(v) => Ok(Value::Int(v)),
                Value::Float(v) => to_int(v.trunc(), span),
            }
        }
        "float" => {
            want(1)?;
            Ok(Value::Float(eval(&args[0], env)?.as_f64()))
        }
        "sqrt" => {
            want(1)?;
            Ok(Value::Float(eval(&args[0], env)?.as_f64().sqrt()))
        }
        _ => {
            let hint = did_you_mean(f, FUNCTIONS.iter().copied(), Quote::Call)
                .map(|h| format!("; {h}"))
                .unwrap_or_default();
            Err(ParseError::at(
                span,
                format!(
                    "unknown function '{f}'{hint} (functions: {})",
                    FUNCTIONS.join(", ")
                ),
            ))
        }
    }
}

/// `ceil` or `floor` of a value: integers stay, floats round to an integer.
fn rounded(f: &str, v: Value, span: Span) -> R<Value> {
    match v {
        Value::Int(v) => Ok(Value::Int(v)),
        Value::Float(v) => to_int(if f == "ceil" { v.ceil() } else { v.floor() }, span),
    }
}

/// Functions of the expression language.
pub const FUNCTIONS: [&str; 9] = [
    "len",
    "ceil",
    "floor",
    "min",
    "max",
    "int",
    "float",
    "sqrt",
    "by_backend",
];

/// An integer, or an error that says what was expected.
pub fn eval_int(e: &Expr, env: &dyn Env, what: &str) -> R<i64> {
    match eval(e, env)? {
        Value::Int(v) => Ok(v),
        Value::Float(v) => Err(ParseError::at(
            e.span,
            format!(
                "expected an integer for {what}, got {} (use int(...) or ceil(...))",
                crate::display::values::fmt_f64(v)
            ),
        )),
    }
}

/// A number converted to f64.
pub fn eval_f64(e: &Expr, env: &dyn Env) -> R<f64> {
    eval(e, env).map(Value::as_f64)
}

/// `N` or `(A, B[, C])`: 1 to `max` positive integers.
pub fn eval_dims(e: &Expr, env: &dyn Env, what: &str, max: usize) -> R<Vec<u64>> {
    let items: Vec<&Expr> = match &e.kind {
        ExprKind::Tuple(items) => items.iter().collect(),
        _ => vec![e],
    };
    if items.len() > max {
        return Err(ParseError::at(
            e.span,
            format!(
                "{what} has {} dimensions; at most {max} are allowed",
                items.len()
            ),
        ));
    }
    items
        .into_iter()
        .map(|x| {
            let v = eval_int(x, env, what)?;
            if v < 1 {
                return Err(ParseError::at(
                    x.span,
                    format!("{what} must be positive, got {v}"),
                ));
            }
            Ok(v as u64)
        })
        .collect()
}
