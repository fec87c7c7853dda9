//! The parser of the command language: one magic line → one [`Command`] (recursive descent over
//! the tokens of [`super::lex`]), and the `%%cuda` header → compile options.
//!
//! Parsing is pure: it never looks at the device, so a whole line (or cell) can be checked before
//! anything runs. Names of arrays, kernels and scalars are resolved later, by the executor.
//!
//! This file is the module root only: it declares the submodules and re-exports what the rest of
//! the crate uses, so that callers write `parse::X`. The submodules, from the bottom up:
//!
//! - `ast`: the syntax tree (names, expressions, constructors, launches);
//! - `cursor`: the [`Parser`] and its token-level helpers; `flags`: option helpers;
//! - `expr`: expressions and argument lists; `launch_syntax`: `K[GRID, BLOCK](ARGS)` and
//!   `K<<<GRID, BLOCK>>>(ARGS)`;
//! - `show_args`, `time_args`, `profile_args`: the option grammars of the longer magics;
//! - `command`: [`Command`] and [`GraphCmd`];
//! - `magic_args`, `array_args`: the argument parsers of each line magic;
//! - `line`: a whole magic line; `cuda_header`: the `%%cuda` header.
//!
//! A submodule imports only those listed before it. Every magic's syntax sits below its
//! execution: this module and its submodules must not import `eval` or the execution modules
//! (`exec`, `launch`, `show`, `time`, `profile`, `gpu`, `graph`, …), and this root holds no
//! parsing of its own.

mod array_args;
mod ast;
mod command;
mod cuda_header;
mod cursor;
mod expr;
pub mod flags;
mod launch_syntax;
mod line;
mod magic_args;
pub mod profile_args;
pub mod show_args;
mod stream_args;
pub mod time_args;

pub use ast::{BinOp, Ctor, DtypeArg, Expr, ExprKind, Launch, LaunchConfig, Name};
pub use command::{Command, EventCmd, GraphCmd, TimelineCmd};
pub use cuda_header::{parse_cuda_header, CudaHeader};
pub use cursor::{dtype_list, parse_dtype, Parser, MAX_NESTING};
pub use expr::parse_expr;
pub use launch_syntax::{normalise_template, parse_launch};
pub use line::{magic_word, parse_line_with, ParseFn, MAX_LINE_BYTES, UNKNOWN_MAGIC};
