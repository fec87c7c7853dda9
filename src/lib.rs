//! nbcuda: a Jupyter kernel for GPU-accelerated Rust notebooks.
//!
//! Layers (see DESIGN.md): `protocol` (wire, language-agnostic) → `kernel` (the interpreter:
//! routes cells) → `rust` (evcxr), `magics` (the command language), `compile` (NVRTC),
//! `gpu` (device state behind one `Backend` trait), `display` (images, tables).
//! `cli` holds the `install` and `doctor` subcommands.

pub mod cli;
pub mod compile;
pub mod display;
pub mod gpu;
pub mod kernel;
pub mod magics;
pub mod output;
pub mod protocol;
pub mod rust;
pub mod suggest;
