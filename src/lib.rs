//! nbcuda: a Jupyter kernel for GPU-accelerated Rust notebooks.
//!
//! Layers (see DESIGN.md): the `protocol` crate (crates/protocol: the Jupyter wire,
//! language-agnostic, and `protocol::output`, what a cell produces) → `kernel` (the interpreter
//! that implements `protocol::Interpreter`: routes cells) → `rust` (evcxr), `magics` (the command
//! language), `compile` (NVRTC), `gpu` (device state behind one `Backend` trait), `display`
//! (images, tables). Below `compile` and `gpu`, `types` holds what both share (dtypes, kernel
//! signatures, `%%cuda` options, the user-facing error); `suggest` is the did-you-mean helper.
//! `cli` holds the `install` and `doctor` subcommands.

pub mod cli;
pub mod compile;
pub mod display;
pub mod gpu;
pub mod kernel;
pub mod magics;
pub mod rust;
pub mod suggest;
pub mod types;
