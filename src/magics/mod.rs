//! The command language of nbcuda (DESIGN.md, "The command language"): magic lines (`%array`,
//! `%launch`, …) and the `%%cuda` cell magic, parsed by one grammar (`lex` + `parse`), evaluated
//! by `eval`, executed against the Jupyter kernel's [`DeviceState`].
//!
//! The interpreter (`crate::kernel`) calls [`Magics::run_line`] / [`Magics::run_cell`] and routes
//! their [`CellOutput`]s; completion and inspection of magic lines come from here too. This module
//! must not speak the Jupyter protocol or reach the device other than through `DeviceState`; a
//! line is parsed completely before anything runs, and an error never changes an array that the
//! line did not name.
//!
//! Imports run one way through the pipeline: `lex` → `parse` (with the option grammars of
//! `%show`, `%time`, `%profile` in its submodules) → `registry` (one entry per magic) and `eval`
//! → the execution modules (`launch`, `show`, `time`, `profile`, `gpu`, `graph`, `host`, `files`,
//! `animate`, …) → the dispatch (`exec`); this file holds what all of them share (`MagicError`,
//! `LineCtx`, `Magics`) and the entry points. A module never imports one later in that order;
//! what two modules share goes into the earlier one (`scripts/import_cycles.py` checks that
//! there is no cycle). Number formatting and statistics are `crate::display`'s, which imports
//! nothing from here.

pub mod animate;
pub mod complete;
pub mod complete_args;
pub mod eval;
mod exec;
pub mod files;
mod gpu;
mod graph;
pub mod host;
mod launch;
pub mod lex;
pub mod parse;
mod profile;
mod profile_view;
pub mod registry;
pub mod rng;
pub mod show;
#[cfg(test)]
mod test_session;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_device;
#[cfg(test)]
mod tests_gpu;
#[cfg(test)]
mod tests_graph;
#[cfg(test)]
mod tests_profile;
#[cfg(test)]
mod tests_published;
#[cfg(test)]
mod tests_registry;
#[cfg(test)]
mod tests_timeline;
pub mod time;
mod timeline;

use crate::gpu::{DeviceState, GpuError};
use eval::Value;
use lex::ParseError;
use nb::ErrorKind;
use protocol::output::{CellOutput, MimeBundle, OutputSink};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// An error of a magic line or cell, shown as a Jupyter `error` reply.
#[derive(Debug, Clone, PartialEq)]
pub struct MagicError {
    pub ename: ErrorKind,
    pub message: String,
}

impl std::fmt::Display for MagicError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.ename, self.message)
    }
}

impl std::error::Error for MagicError {}

/// The command language's state: the device and the `%set` scalars.
pub struct Magics {
    pub(crate) dev: DeviceState,
    pub(crate) scalars: BTreeMap<String, Value>,
    /// Every `%time` result since the Jupyter kernel started, for `%timings`.
    pub(crate) timings: Vec<crate::display::timing::Timing>,
}

impl Default for Magics {
    fn default() -> Self {
        Magics::new()
    }
}

/// Context of one line for error messages.
pub(crate) struct LineCtx<'a> {
    pub line: &'a str,
    pub line_no: usize,
}

impl LineCtx<'_> {
    /// `line N: message`, then the line and a caret under the offending token.
    pub fn err(&self, ename: ErrorKind, e: ParseError) -> MagicError {
        let mut message = format!("line {}: {}", self.line_no, e.message);
        if let Some(span) = e.span {
            let (text, col, width) = excerpt(self.line.trim_end(), span);
            message.push_str(&format!(
                "\n    {text}\n    {}{}",
                " ".repeat(col),
                "^".repeat(width)
            ));
        }
        MagicError { ename, message }
    }

    /// A device-state error, prefixed with the line number.
    pub fn gpu(&self, e: GpuError) -> MagicError {
        MagicError {
            ename: e.ename,
            message: format!("line {}: {}", self.line_no, e.message),
        }
    }

    /// A device-state error pointing at a token.
    pub fn gpu_at(&self, e: GpuError, span: lex::Span) -> MagicError {
        self.err(e.ename, ParseError::at(span, e.message))
    }

    pub fn plain(&self, ename: ErrorKind, message: impl std::fmt::Display) -> MagicError {
        MagicError {
            ename,
            message: format!("line {}: {message}", self.line_no),
        }
    }
}

/// The most characters of a line an error message quotes.
const EXCERPT_CHARS: usize = 120;

/// The part of `text` an error quotes around `span`, with the caret's column and width (in
/// characters): the whole line when it is short, else a window around the span with `…` where
/// it was cut, so that an error in a long line stays readable.
fn excerpt(text: &str, span: lex::Span) -> (String, usize, usize) {
    let floor = |mut i: usize| {
        i = i.min(text.len());
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let start = floor(span.start);
    let end = floor(span.end).max(start);
    let col = text[..start].chars().count();
    let width = text[start..end].chars().count().max(1);
    let total = col + text[start..].chars().count();
    if total <= EXCERPT_CHARS {
        return (text.to_string(), col, width);
    }
    let width = width.min(EXCERPT_CHARS / 2);
    let first = col.saturating_sub(EXCERPT_CHARS / 4);
    let chars: String = text.chars().skip(first).take(EXCERPT_CHARS).collect();
    let cut_left = first > 0;
    let cut_right = first + EXCERPT_CHARS < total;
    let shown = format!(
        "{}{chars}{}",
        if cut_left { "…" } else { "" },
        if cut_right { "…" } else { "" }
    );
    (shown, col - first + usize::from(cut_left), width)
}

/// Parses a magic line without running it: the syntax error (with its `line N:` and caret) or
/// the unknown-magic error that [`Magics::run_line`] would give. Lets the interpreter check every
/// magic line of a cell before running any.
pub fn check_line(line: &str, line_no: usize) -> Result<(), MagicError> {
    parse_line_ctx(&LineCtx { line, line_no }).map(|_| ())
}

/// Parses a cell-magic header (`%%cuda …`) without running it.
pub fn check_cell_header(header: &str) -> Result<(), MagicError> {
    if is_animate(header) {
        return animate::parse_animate_header(header)
            .map(|_| ())
            .map_err(|e| {
                LineCtx {
                    line: header,
                    line_no: 1,
                }
                .err(ErrorKind::Syntax, e)
            });
    }
    cell_header(header).map(|_| ())
}

/// Whether a cell-magic header is `%%animate`.
fn is_animate(header: &str) -> bool {
    parse::magic_word(header.trim_start(), 2) == "animate"
}

fn cell_header(header: &str) -> Result<parse::CudaHeader, MagicError> {
    let ctx = LineCtx {
        line: header,
        line_no: 1,
    };
    let trimmed = header.trim_start();
    let word = parse::magic_word(trimmed, 2);
    if word != "cuda" {
        let full = format!("%%{word}");
        let at = header.len() - trimmed.len();
        return Err(ctx.err(
            ErrorKind::UnknownMagic,
            ParseError::at(lex::Span::new(at, at + full.len()), unknown_magic(&full)),
        ));
    }
    parse::parse_cuda_header(header).map_err(|e| ctx.err(ErrorKind::Syntax, e))
}

fn unknown_magic(full: &str) -> String {
    match crate::suggest::nearest(full, registry::names()) {
        Some(s) if s.starts_with("%%") && !full.starts_with("%%") => format!(
            "unknown magic {full}; did you mean {s}? (a cell magic: it goes on the first line of a cell)"
        ),
        Some(s) => format!("unknown magic {full}; did you mean {s}?"),
        None => format!("unknown magic {full} (%lsmagic lists them)"),
    }
}

fn parse_line_ctx(ctx: &LineCtx) -> Result<parse::Command, MagicError> {
    registry::parse_line(ctx.line).map_err(|e| {
        if e.message == parse::UNKNOWN_MAGIC {
            let at = ctx.line.len() - ctx.line.trim_start().len();
            let word = parse::magic_word(ctx.line, at + 1);
            ctx.err(
                ErrorKind::UnknownMagic,
                ParseError {
                    message: unknown_magic(&format!("%{word}")),
                    span: e.span,
                },
            )
        } else {
            ctx.err(ErrorKind::Syntax, e)
        }
    })
}

impl Magics {
    /// A new state on the default backend (a GPU when one is detected, else ptxsim).
    pub fn new() -> Magics {
        Magics {
            dev: DeviceState::new(),
            scalars: BTreeMap::new(),
            timings: Vec::new(),
        }
    }

    /// `"ptxsim"` or `"cuda"`, for the Jupyter kernel's banner.
    pub fn backend_name(&self) -> &'static str {
        self.dev.backend_name()
    }

    /// Why ptxsim runs instead of a GPU, when it does (for the banner).
    pub fn backend_note(&self) -> Option<String> {
        self.dev.backend_note()
    }

    /// The device state, for the `nb` crate's socket server (put/get of arrays).
    pub fn device(&mut self) -> &mut DeviceState {
        &mut self.dev
    }

    /// Names of all line and cell magics, with their `%`/`%%`.
    pub fn names() -> Vec<&'static str> {
        registry::names()
    }

    /// Runs one magic line (it starts with `%`); `line_no` is its 1-based line in the cell.
    pub fn run_line(
        &mut self,
        line: &str,
        line_no: usize,
        out: &OutputSink,
        cancel: &Arc<AtomicBool>,
    ) -> Result<Option<MimeBundle>, MagicError> {
        let ctx = LineCtx { line, line_no };
        let cmd = parse_line_ctx(&ctx)?;
        self.execute(&ctx, cmd, out, cancel)
    }

    /// Runs a cell magic: `header` is its first line (`%%cuda --name k -DN=4`), `body` the rest,
    /// whose first line is line `body_first_line` of the cell.
    pub fn run_cell(
        &mut self,
        header: &str,
        body: &str,
        body_first_line: usize,
        out: &OutputSink,
        cancel: &Arc<AtomicBool>,
    ) -> Result<Option<MimeBundle>, MagicError> {
        if is_animate(header) {
            return self.animate(header, body, body_first_line, out, cancel);
        }
        let options = cell_header(header)?;
        let r = self
            .dev
            .compile_cuda(body, &options, body_first_line)
            .map_err(|e| MagicError {
                ename: e.ename,
                message: e.message,
            })?;
        if !r.log.trim().is_empty() {
            out(CellOutput::Stderr(format!("{}\n", r.log.trim_end())));
        }
        let mut text = String::new();
        if r.kernels.is_empty() {
            text.push_str("no __global__ functions in this cell\n");
        }
        for k in &r.kernels {
            text.push_str(&k.signature);
            if let Some(res) = &k.resources {
                text.push_str("  ");
                text.push_str(res);
            }
            text.push('\n');
        }
        text.push_str(&format!(
            "compiled in {:.1} ms (cache: {})\n",
            r.compile_ms,
            if r.cache_hit { "hit" } else { "miss" }
        ));
        out(CellOutput::Stdout(text));
        Ok(None)
    }

    /// Completion of a magic line at byte offset `cursor`: (matches, start, end) in line offsets.
    pub fn complete(&self, line: &str, cursor: usize) -> (Vec<String>, usize, usize) {
        complete::complete(&self.session_names(), line, cursor)
    }

    /// The names arguments complete to (arrays, CUDA kernels, scalars, graphs), as a copy that
    /// [`complete::complete`] can use while a cell holds this session.
    pub fn session_names(&self) -> complete_args::SessionNames {
        complete_args::SessionNames {
            arrays: self.dev.arrays().into_iter().map(|a| a.name).collect(),
            kernels: self.dev.kernel_names(),
            scalars: self.scalars.keys().cloned().collect(),
            graphs: self.dev.graphs().into_iter().map(|g| g.name).collect(),
        }
    }

    /// Inspection of the word at `cursor`: a magic's help, a CUDA kernel's signature, an array's
    /// dtype/shape/bytes/statistics, a scalar's value.
    pub fn inspect(&mut self, line: &str, cursor: usize) -> Option<MimeBundle> {
        complete::inspect(Some(self), line, cursor)
    }
}
