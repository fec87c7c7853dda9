//! The parser of the command language: one magic line → one [`Command`] (recursive descent over
//! the tokens of [`super::lex`]), and the `%%cuda` header → compile options.
//!
//! Parsing is pure: it never looks at the device, so a whole line (or cell) can be checked before
//! anything runs. Names of arrays, kernels and scalars are resolved later, by the executor.
//!
//! The option grammars of the longer magics are submodules (`show_args`, `time_args`,
//! `profile_args`, with the shared `flags` helpers), so that every magic's syntax sits below its
//! execution: this module and its submodules must not import `eval` or the execution modules
//! (`exec`, `launch`, `show`, `time`, `profile`, `gpu`, `graph`, …).

pub mod flags;
pub mod profile_args;
pub mod show_args;
pub mod time_args;

use super::lex::{Lexer, ParseError, Span, Tok, Token};
use crate::gpu::Dtype;
use crate::suggest::{did_you_mean, Quote};
use profile_args::ProfileArgs;
use show_args::ShowArgs;
use time_args::TimeArgs;

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
    /// `(a, b)` or `(a,)`: shapes, grids, blocks.
    Tuple(Vec<Expr>),
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
    /// The CUDA kernel's user name, templates normalised: `scale<float>`.
    pub kernel: Name,
    pub config: LaunchConfig,
    pub args: Vec<Expr>,
}

/// One parsed magic line.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    LsMagic,
    Help(Option<Name>),
    ClearOutput {
        wait: bool,
    },
    Array {
        name: Name,
        ctor: Ctor,
        dtype: Option<DtypeArg>,
        span: Span,
        /// `%array --managed NAME = …`: managed (unified) memory.
        managed: bool,
    },
    Load {
        name: Name,
        path: Name,
        gray: bool,
        as_dtype: Option<DtypeArg>,
    },
    Save {
        name: Name,
        path: Name,
    },
    /// `%set` alone lists the scalars.
    Set(Option<(Name, Expr)>),
    Launch(Launch),
    Arrays,
    Print {
        name: Name,
        head: Option<Expr>,
    },
    Free(Vec<Name>),
    Swap(Name, Name),
    /// `%copy DST = SRC`.
    Copy {
        dst: Name,
        src: Name,
    },
    Sync(Option<Name>),
    /// `%upload NAME [STREAM]`: the array's host copy to the device, asynchronously.
    Upload(Name, Option<Name>),
    /// `%download NAME [STREAM]`: the device contents into the array's host copy.
    Download(Name, Option<Name>),
    /// `%device` lists the devices; `%device N` selects GPU N.
    Device(Option<Expr>),
    /// `%limit` lists the device limits; `%limit stack BYTES` sets one (CUDA's
    /// `cudaDeviceSetLimit`: `stack` is `cudaLimitStackSize`, bytes of call stack per thread).
    Limit(Option<(Name, Expr)>),
    Backend(Name),
    Ptx(Name),
    /// `%info [--gpu MODEL] KERNEL`: resources, and occupancy on the modelled GPU (or MODEL).
    Info {
        kernel: Name,
        gpu: Option<Name>,
    },
    /// `%gpu` lists the GPU models; `%gpu MODEL` chooses the one ptxsim models.
    Gpu(Option<Name>),
    /// `%gpu compare LAUNCH`: the launch's estimated time on every GPU model.
    GpuCompare(Box<Launch>),
    Reset,
    /// `%show NAME... [--cmap MAP] [--vmin V] [--vmax V] [--scale K]`.
    Show(ShowArgs),
    /// `%time [-n RUNS] [--warmup W] [--bytes EXPR] [--flops EXPR] LAUNCH`.
    Time(Box<TimeArgs>),
    /// `%profile [--gpu MODEL] [--lines] [--check] [--ncu] LAUNCH`.
    Profile(Box<ProfileArgs>),
    /// `%timings [--clear]`.
    Timings {
        clear: bool,
    },
    /// `%graph`, `%graph begin NAME`, `%graph end`, `%graph launch NAME [-n K]`,
    /// `%graph drop NAME`.
    Graph(GraphCmd),
    /// `%prefetch NAME [gpu|host]` (default gpu).
    Prefetch {
        name: Name,
        to_device: bool,
    },
}

/// What follows `%graph`.
#[derive(Debug, Clone, PartialEq)]
pub enum GraphCmd {
    List,
    Begin(Name),
    End,
    Launch { name: Name, times: Option<Expr> },
    Drop(Name),
}

/// The parser of one line magic's arguments: it starts after the magic's name and stops at the
/// end of what the magic takes (the caller refuses anything after it).
pub type ParseFn = for<'a, 'b> fn(&'a mut Parser<'b>) -> Result<Command, ParseError>;

/// Parses one magic line (it starts with `%`; leading whitespace allowed); `parser_of` gives the
/// parser of a magic's arguments from its name without `%` (None: an unknown magic).
pub fn parse_line_with(
    line: &str,
    parser_of: impl Fn(&str) -> Option<ParseFn>,
) -> Result<Command, ParseError> {
    if line.len() > MAX_LINE_BYTES {
        return Err(ParseError::nowhere(format!(
            "line too long: {} bytes (a magic line may hold at most {} bytes)",
            line.len(),
            MAX_LINE_BYTES
        )));
    }
    let mut p = Parser {
        lx: Lexer::new(line, 0),
        depth: 0,
    };
    p.lx.skip_ws();
    let pct = p.lx.pos;
    if !line[pct..].starts_with('%') {
        return Err(ParseError::at(
            Span::new(pct, pct + 1),
            "a magic line starts with '%'",
        ));
    }
    if line[pct..].starts_with("%%") {
        let word = magic_word(line, pct + 2);
        return Err(ParseError::at(
            Span::new(pct, pct + 2 + word.len()),
            format!("%%{word} is a cell magic: it must be the first line of its cell"),
        ));
    }
    p.lx.pos = pct + 1;
    let word = magic_word(line, pct + 1);
    let name = Name {
        text: word.to_string(),
        span: Span::new(pct, pct + 1 + word.len()),
    };
    p.lx.pos += word.len();
    if word.is_empty() {
        return Err(ParseError::at(
            Span::new(pct, pct + 1),
            "expected a magic name after '%'",
        ));
    }
    let Some(parse) = parser_of(word) else {
        return Err(ParseError::at(name.span, UNKNOWN_MAGIC));
    };
    let cmd = parse(&mut p)?;
    if !p.lx.at_end() {
        let t = p.lx.peek()?;
        return Err(ParseError::at(
            t.span,
            format!("unexpected {} after the %{} command", t.tok, name.text),
        ));
    }
    Ok(cmd)
}

/// The identifier right after `%`/`%%` at byte `pos`.
pub fn magic_word(line: &str, pos: usize) -> &str {
    let rest = line.get(pos..).unwrap_or("");
    let len = rest
        .find(|c: char| !super::lex::is_ident_char(c))
        .unwrap_or(rest.len());
    &rest[..len]
}

/// Error for an unknown magic: the parser reports it with this marker so that the caller can
/// turn it into an `UnknownMagic` error with a suggestion.
pub const UNKNOWN_MAGIC: &str = "unknown magic";

/// The deepest nesting of parentheses, tuples, calls and indices an expression may have.
pub const MAX_NESTING: usize = 256;

/// The longest magic line, in bytes. A line this long still parses and evaluates in
/// milliseconds (runs of operators are flat); longer ones are refused before lexing.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// The parser of one magic line: its lexer and how deep the expression being parsed nests.
pub struct Parser<'a> {
    pub(crate) lx: Lexer<'a>,
    /// How many [`Parser::expr`] calls are open: bounded by [`MAX_NESTING`].
    depth: usize,
}

impl<'a> Parser<'a> {
    fn next(&mut self) -> Result<Token, ParseError> {
        self.lx.next_token()
    }

    fn peek(&self) -> Result<Token, ParseError> {
        self.lx.peek()
    }

    fn is_sym(&self, s: &str) -> bool {
        matches!(self.peek(), Ok(Token { tok: Tok::Sym(x), .. }) if x == s)
    }

    fn eat_sym(&mut self, s: &str) -> Result<bool, ParseError> {
        if self.is_sym(s) {
            self.next()?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    fn expect_sym(&mut self, s: &str, context: &str) -> Result<Span, ParseError> {
        let t = self.next()?;
        match t.tok {
            Tok::Sym(x) if x == s => Ok(t.span),
            other => Err(ParseError::at(
                t.span,
                format!("expected '{s}' {context}, found {other}"),
            )),
        }
    }

    fn name(&mut self, what: &str) -> Result<Name, ParseError> {
        let t = self.next()?;
        match t.tok {
            Tok::Ident(s) => Ok(Name {
                text: s,
                span: t.span,
            }),
            other => Err(ParseError::at(
                t.span,
                format!("expected {what}, found {other}"),
            )),
        }
    }

    fn dtype(&mut self) -> Result<DtypeArg, ParseError> {
        let n = self.name("a dtype")?;
        parse_dtype(&n).map(|dtype| DtypeArg {
            dtype,
            span: n.span,
        })
    }

    fn flag(&mut self) -> Result<Option<Token>, ParseError> {
        if let Tok::Flag(_) = self.peek()?.tok {
            return self.next().map(Some);
        }
        Ok(None)
    }

    // One parser per line magic, named after it; the registry (`super::registry`) maps each
    // magic's name to its parser. Each starts after the magic's name.

    pub(crate) fn lsmagic(&mut self) -> Result<Command, ParseError> {
        Ok(Command::LsMagic)
    }

    pub(crate) fn help(&mut self) -> Result<Command, ParseError> {
        if self.lx.at_end() {
            return Ok(Command::Help(None));
        }
        self.eat_sym("%")?;
        self.eat_sym("%")?;
        Ok(Command::Help(Some(self.name("a magic name")?)))
    }

    pub(crate) fn clear_output(&mut self) -> Result<Command, ParseError> {
        let mut wait = false;
        while let Some(f) = self.flag()? {
            match &f.tok {
                Tok::Flag(s) if s == "--wait" => wait = true,
                other => return Err(unknown_option(&f, other, "%clear_output", &["--wait"])),
            }
        }
        Ok(Command::ClearOutput { wait })
    }

    pub(crate) fn save(&mut self) -> Result<Command, ParseError> {
        let name = self.name("an array name")?;
        let path = self.path("a file path (.png, .jpg or .npy)")?;
        Ok(Command::Save { name, path })
    }

    pub(crate) fn set(&mut self) -> Result<Command, ParseError> {
        if self.lx.at_end() {
            return Ok(Command::Set(None));
        }
        let name = self.name("a scalar name")?;
        self.expect_sym("=", "after the scalar name")?;
        let e = self.expr()?;
        if let ExprKind::Tuple(_) = e.kind {
            return Err(ParseError::at(e.span, "a scalar cannot be a tuple"));
        }
        Ok(Command::Set(Some((name, e))))
    }

    pub(crate) fn launch_line(&mut self) -> Result<Command, ParseError> {
        self.launch().map(Command::Launch)
    }

    pub(crate) fn arrays(&mut self) -> Result<Command, ParseError> {
        Ok(Command::Arrays)
    }

    pub(crate) fn print(&mut self) -> Result<Command, ParseError> {
        let name = self.name("an array name")?;
        let mut head = None;
        while let Some(f) = self.flag()? {
            match &f.tok {
                Tok::Flag(s) if s == "--head" => head = Some(self.expr()?),
                other => return Err(unknown_option(&f, other, "%print", &["--head N"])),
            }
        }
        Ok(Command::Print { name, head })
    }

    pub(crate) fn free(&mut self) -> Result<Command, ParseError> {
        let mut names = vec![self.name("an array name")?];
        while !self.lx.at_end() {
            self.eat_sym(",")?;
            names.push(self.name("an array name")?);
        }
        Ok(Command::Free(names))
    }

    pub(crate) fn swap(&mut self) -> Result<Command, ParseError> {
        let a = self.name("two array names")?;
        self.eat_sym(",")?;
        let b = self.name("a second array name")?;
        Ok(Command::Swap(a, b))
    }

    pub(crate) fn copy(&mut self) -> Result<Command, ParseError> {
        let dst = self.name("a destination array name")?;
        self.expect_sym("=", "after the destination array (%copy DST = SRC)")?;
        let src = self.name("a source array name")?;
        Ok(Command::Copy { dst, src })
    }

    /// `NAME [STREAM]` of `%upload` and `%download`.
    fn array_and_stream(&mut self) -> Result<(Name, Option<Name>), ParseError> {
        let name = self.name("an array name")?;
        let stream = if self.lx.at_end() {
            None
        } else {
            Some(self.name("a stream name")?)
        };
        Ok((name, stream))
    }

    pub(crate) fn upload(&mut self) -> Result<Command, ParseError> {
        let (name, stream) = self.array_and_stream()?;
        Ok(Command::Upload(name, stream))
    }

    pub(crate) fn download(&mut self) -> Result<Command, ParseError> {
        let (name, stream) = self.array_and_stream()?;
        Ok(Command::Download(name, stream))
    }

    pub(crate) fn sync(&mut self) -> Result<Command, ParseError> {
        if self.lx.at_end() {
            return Ok(Command::Sync(None));
        }
        Ok(Command::Sync(Some(self.name("a stream name")?)))
    }

    pub(crate) fn device(&mut self) -> Result<Command, ParseError> {
        if self.lx.at_end() {
            return Ok(Command::Device(None));
        }
        Ok(Command::Device(Some(self.expr()?)))
    }

    pub(crate) fn limit(&mut self) -> Result<Command, ParseError> {
        if self.lx.at_end() {
            return Ok(Command::Limit(None));
        }
        let n = self.name("a limit name (stack)")?;
        if n.text != "stack" {
            return Err(ParseError::at(
                n.span,
                format!("unknown limit '{}'; the limits are: stack", n.text),
            ));
        }
        Ok(Command::Limit(Some((n, self.expr()?))))
    }

    pub(crate) fn backend(&mut self) -> Result<Command, ParseError> {
        let n = self.name("'gpu' or 'sim'")?;
        match n.text.as_str() {
            "gpu" | "sim" | "cuda" | "ptxsim" => Ok(Command::Backend(n)),
            _ => Err(ParseError::at(
                n.span,
                format!("unknown backend '{}'; use gpu or sim", n.text),
            )),
        }
    }

    pub(crate) fn ptx(&mut self) -> Result<Command, ParseError> {
        Ok(Command::Ptx(self.kernel_name()?))
    }

    pub(crate) fn info(&mut self) -> Result<Command, ParseError> {
        let mut gpu = self.gpu_flag()?;
        let kernel = self.kernel_name()?;
        if gpu.is_none() {
            gpu = self.gpu_flag()?;
        }
        Ok(Command::Info { kernel, gpu })
    }

    pub(crate) fn gpu(&mut self) -> Result<Command, ParseError> {
        let mut ahead = self.lx.clone();
        if matches!(ahead.raw_word(), Some((w, _)) if w == "compare") {
            self.lx = ahead;
            let l = parse_launch(&mut self.lx)?;
            return Ok(Command::GpuCompare(Box::new(l)));
        }
        // The rest of the line, so that `%gpu RTX 4090` works.
        let mut words: Vec<(String, Span)> = Vec::new();
        while !self.lx.at_end() {
            match self.lx.raw_word() {
                Some(w) => words.push(w),
                None => break,
            }
        }
        Ok(Command::Gpu(match (words.first(), words.last()) {
            (Some(first), Some(last)) => Some(Name {
                text: words
                    .iter()
                    .map(|w| w.0.as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
                span: Span::new(first.1.start, last.1.end),
            }),
            _ => None,
        }))
    }

    pub(crate) fn reset(&mut self) -> Result<Command, ParseError> {
        Ok(Command::Reset)
    }

    pub(crate) fn prefetch(&mut self) -> Result<Command, ParseError> {
        let name = self.name("a managed array name")?;
        let to_device = if self.lx.at_end() {
            true
        } else {
            let w = self.name("gpu or host")?;
            match w.text.as_str() {
                "gpu" | "device" => true,
                "host" | "cpu" => false,
                other => {
                    return Err(ParseError::at(
                        w.span,
                        format!("%prefetch moves an array to gpu or host, not '{other}'"),
                    ))
                }
            }
        };
        Ok(Command::Prefetch { name, to_device })
    }

    pub(crate) fn show(&mut self) -> Result<Command, ParseError> {
        show_args::parse_show(&mut self.lx).map(Command::Show)
    }

    pub(crate) fn time(&mut self) -> Result<Command, ParseError> {
        time_args::parse_time(&mut self.lx).map(|a| Command::Time(Box::new(a)))
    }

    pub(crate) fn profile(&mut self) -> Result<Command, ParseError> {
        profile_args::parse_profile(&mut self.lx).map(|a| Command::Profile(Box::new(a)))
    }

    pub(crate) fn timings(&mut self) -> Result<Command, ParseError> {
        time_args::parse_timings(&mut self.lx).map(|clear| Command::Timings { clear })
    }

    fn path(&mut self, what: &str) -> Result<Name, ParseError> {
        let at = self.lx.pos;
        match self.lx.raw_word() {
            Some((text, span)) if !text.is_empty() => Ok(Name { text, span }),
            _ => Err(ParseError::at(
                Span::new(at, at),
                format!("expected {what}"),
            )),
        }
    }

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

    /// What follows `%graph`.
    pub(crate) fn graph(&mut self) -> Result<Command, ParseError> {
        const USAGE: &str =
            "%graph [begin NAME | end | launch NAME [-n K] | drop NAME] (%graph alone lists them)";
        if self.lx.at_end() {
            return Ok(Command::Graph(GraphCmd::List));
        }
        let verb = self.name(&format!("begin, end, launch or drop: {USAGE}"))?;
        let cmd = match verb.text.as_str() {
            "begin" => GraphCmd::Begin(self.name("a graph name after %graph begin")?),
            "end" => GraphCmd::End,
            "drop" => GraphCmd::Drop(self.name("a graph name after %graph drop")?),
            "launch" => {
                let name = self.name("a graph name after %graph launch")?;
                let times = if self.lx.at_end() {
                    None
                } else {
                    let t = self.next()?;
                    let n = self.next()?;
                    if t.tok != Tok::Sym("-") || n.tok != Tok::Ident("n".into()) {
                        return Err(ParseError::at(
                            t.span.to(n.span),
                            format!("expected -n K after the graph name: {USAGE}"),
                        ));
                    }
                    Some(self.expr()?)
                };
                GraphCmd::Launch { name, times }
            }
            other => {
                let hint = did_you_mean(other, ["begin", "end", "launch", "drop"], Quote::Plain)
                    .map(|h| format!("; {h}"))
                    .unwrap_or_default();
                return Err(ParseError::at(
                    verb.span,
                    format!("unknown %graph command '{other}'{hint}: {USAGE}"),
                ));
            }
        };
        Ok(Command::Graph(cmd))
    }

    /// After `(`: positional expressions and `name=expr` pairs up to `)`.
    #[allow(clippy::type_complexity)]
    fn call_args(&mut self) -> Result<(Vec<Expr>, Vec<(Name, Expr)>), ParseError> {
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

    pub(crate) fn load(&mut self) -> Result<Command, ParseError> {
        let name = self.name("an array name")?;
        self.expect_sym("=", "after the array name")?;
        let path = self.path("a file path (.png, .jpg or .npy)")?;
        let mut gray = false;
        let mut as_dtype = None;
        while let Some(f) = self.flag()? {
            match &f.tok {
                Tok::Flag(s) if s == "--gray" || s == "--grey" => gray = true,
                Tok::Flag(s) if s == "--as" => as_dtype = Some(self.dtype()?),
                other => {
                    return Err(unknown_option(
                        &f,
                        other,
                        "%load",
                        &["--gray", "--as DTYPE"],
                    ))
                }
            }
        }
        Ok(Command::Load {
            name,
            path,
            gray,
            as_dtype,
        })
    }

    /// `--gpu MODEL` of `%info` (MODEL one word, or quoted: `--gpu "RTX 4090"`), if next.
    fn gpu_flag(&mut self) -> Result<Option<Name>, ParseError> {
        let Some(f) = self.flag()? else {
            return Ok(None);
        };
        match &f.tok {
            Tok::Flag(s) if s == "--gpu" => match self.lx.raw_word() {
                Some((text, span)) if !text.is_empty() => Ok(Some(Name { text, span })),
                _ => Err(ParseError::at(
                    f.span,
                    "--gpu needs a GPU model, e.g. --gpu T4 (%gpu lists them)",
                )),
            },
            other => Err(unknown_option(&f, other, "%info", &["--gpu MODEL"])),
        }
    }

    /// A CUDA kernel name, possibly with template arguments: `scale<float, 4>`.
    fn kernel_name(&mut self) -> Result<Name, ParseError> {
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

    fn launch(&mut self) -> Result<Launch, ParseError> {
        let mut check = false;
        while let Some(f) = self.flag()? {
            match &f.tok {
                Tok::Flag(s) if s == "--check" => check = true,
                other => return Err(unknown_option(&f, other, "%launch", &["--check"])),
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

    // ---- expressions ----

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
                    if let Some((k, _)) = named.first() {
                        return Err(ParseError::at(
                            k.span,
                            format!("{name}() takes no named arguments"),
                        ));
                    }
                    let end = self.lx.pos;
                    Ok(Expr {
                        kind: ExprKind::Call(name, args),
                        span: t.span.to(Span::new(end, end)),
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

fn shape_hint(mut e: ParseError, args: &[Expr]) -> ParseError {
    if args.len() > 1 {
        e.message
            .push_str("; write a multi-dimensional shape as a tuple: (H, W)");
    }
    e
}

fn unknown_option(t: &Token, tok: &Tok, magic: &str, known: &[&str]) -> ParseError {
    ParseError::at(
        t.span,
        format!(
            "unknown option {tok} for {magic} (options: {})",
            known.join(", ")
        ),
    )
}

/// "f32 f64 i8 … u64"
pub fn dtype_list() -> String {
    Dtype::ALL.map(|d| d.name()).join(" ")
}

/// A dtype name, or an error that lists the valid ones (and suggests `f32` for `float`).
/// Parses a launch (`[--check] KERNEL[GRID, BLOCK](ARGS)` or the `<<<>>>` form) at the lexer's
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

pub fn parse_dtype(n: &Name) -> Result<Dtype, ParseError> {
    if let Some(d) = Dtype::parse(&n.text) {
        return Ok(d);
    }
    let hint = match Dtype::from_c_name(&n.text) {
        Some(d) => format!(" ({} is written {} here)", n.text, d.name()),
        None => did_you_mean(&n.text, Dtype::ALL.iter().map(|d| d.name()), Quote::Plain)
            .map(|h| format!(" ({h})"))
            .unwrap_or_default(),
    };
    Err(ParseError::at(
        n.span,
        format!(
            "unknown dtype '{}'{hint}; valid dtypes: {}",
            n.text,
            dtype_list()
        ),
    ))
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
            if prev.is_some_and(super::lex::is_ident_char) && super::lex::is_ident_char(c) {
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

/// Options of a `%%cuda` header line.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CudaHeader {
    pub name: Option<String>,
    pub defines: Vec<(String, Option<String>)>,
    pub std: Option<String>,
    pub fast_math: bool,
    pub device_debug: bool,
    pub arch: Option<String>,
}

/// Parses `%%cuda [--name M] [-DNAME=V] [--std=c++17] [--fast-math] [-G] [--arch sm_XX]`.
pub fn parse_cuda_header(header: &str) -> Result<CudaHeader, ParseError> {
    let mut lx = Lexer::new(header, 0);
    lx.skip_ws();
    let start = lx.pos;
    let word = magic_word(header, start + 2);
    if !header[start..].starts_with("%%") || word != "cuda" {
        return Err(ParseError::at(
            Span::new(start, start + 2 + word.len()),
            format!("expected %%cuda, found '%%{word}'"),
        ));
    }
    lx.pos = start + 2 + word.len();
    let mut h = CudaHeader::default();
    let mut words: Vec<(String, Span)> = Vec::new();
    while let Some(w) = lx.raw_word() {
        words.push(w);
    }
    let mut i = 0;
    let value = |i: &mut usize, flag: &str, inline: Option<&str>, span: Span| {
        if let Some(v) = inline {
            return Ok(v.to_string());
        }
        *i += 1;
        words
            .get(*i)
            .map(|(w, _)| w.clone())
            .ok_or_else(|| ParseError::at(span, format!("{flag} needs a value")))
    };
    while i < words.len() {
        let (w, span) = (&words[i].0, words[i].1);
        let (flag, inline) = match w.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ => (w.as_str(), None),
        };
        match flag {
            "--name" => h.name = Some(value(&mut i, flag, inline, span)?),
            "--std" => h.std = Some(value(&mut i, flag, inline, span)?),
            "-std" => h.std = Some(value(&mut i, flag, inline, span)?),
            "--arch" | "-arch" => h.arch = Some(value(&mut i, flag, inline, span)?),
            "--fast-math" | "--use_fast_math" | "-use_fast_math" => h.fast_math = true,
            "-G" | "--device-debug" => h.device_debug = true,
            f if f.starts_with("-D") => {
                let def = if f == "-D" {
                    value(&mut i, "-D", None, span)?
                } else {
                    f[2..].to_string()
                };
                let (k, v) = match def.split_once('=') {
                    Some((k, v)) => (k.to_string(), Some(v.to_string())),
                    None => (def.clone(), None),
                };
                let valid = k.chars().next().is_some_and(super::lex::is_ident_start)
                    && k.chars().all(super::lex::is_ident_char);
                if !valid {
                    return Err(ParseError::at(
                        span,
                        format!("bad macro name '{k}' in {w}"),
                    ));
                }
                h.defines.push((k, v));
            }
            f if f.starts_with("-std=") => h.std = Some(f[5..].to_string()),
            _ => {
                return Err(ParseError::at(
                    span,
                    format!(
                        "unknown %%cuda option '{w}' (options: --name M, -DNAME=V, --std=c++17, --fast-math, -G, --arch sm_XX)"
                    ),
                ))
            }
        }
        i += 1;
    }
    Ok(h)
}
