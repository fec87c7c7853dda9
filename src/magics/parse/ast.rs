//! The syntax tree of the command language below [`Command`](super::Command): names, expressions,
//! array constructors, dtypes and kernel launches, each with its place in the line.
//!
//! Data only, at the bottom of `parse`: this module must not import the other `parse`
//! submodules (they all build on it), nor evaluate or resolve anything.

use super::super::lex::Span;
use crate::gpu::Dtype;

/// A name with its place in the line.
#[derive(Debug, Clone, PartialEq)]
pub struct Name {
    pub text: String,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    Int(i64),
    Float(f64),
    Name(String),
    Neg(Box<Expr>),
    /// A left-associative run of operators of one precedence level: `a + b - c` is
    /// `Chain(a, [(Add, b), (Sub, c)])`. Kept flat (not a tree of pairs) so that a long sum on
    /// one line is evaluated, cloned and dropped without deep recursion.
    Chain(Box<Expr>, Vec<(BinOp, Expr)>),
    /// `len(x)`, `ceil(e)`, `min(a, b)`, …
    Call(String, Vec<Expr>),
    /// `x.shape[i]`
    Shape(Name, Box<Expr>),
    /// `(a, b)` or `(a,)`: shapes, grids, blocks, structs passed by value.
    Tuple(Vec<Expr>),
    /// `Matrix(width=4, elements=a)`: a struct passed by value, by member names.
    Record(String, Vec<(Name, Expr)>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

/// An array constructor of `%array`.
#[derive(Debug, Clone, PartialEq)]
pub enum Ctor {
    Zeros(Expr),
    Ones(Expr),
    Empty(Expr),
    Full(Expr, Expr),
    /// `arange(N)`, `arange(START, STOP)` or `arange(START, STOP, STEP)`: the numbers given.
    Arange(Vec<Expr>),
    Linspace(Expr, Expr, Expr),
    Rand(Expr, Option<Expr>),
    Randn(Expr, Option<Expr>),
    Copy(Name),
}

#[derive(Debug, Clone, PartialEq)]
pub struct DtypeArg {
    pub dtype: Dtype,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum LaunchConfig {
    Auto(Span),
    Explicit {
        grid: Expr,
        block: Expr,
        shared: Option<Expr>,
        stream: Option<Expr>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    pub check: bool,
    /// `--cooperative`: every block resident at once (a grid-wide sync may be used).
    pub cooperative: bool,
    /// The CUDA kernel's user name, templates normalised: `scale<float>`.
    pub kernel: Name,
    pub config: LaunchConfig,
    pub args: Vec<Expr>,
}
