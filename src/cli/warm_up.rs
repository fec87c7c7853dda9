//! `nbcuda warm-up`: builds what Rust cells depend on (`nb` and its crates: serde, ndarray, half)
//! into evcxr's build cache of the current user (`~/.cache/evcxr`), so that no Jupyter kernel
//! started later pays for that first build (30–36 s on a 2-core machine; with the cache filled,
//! `nb` loads in about 3 s). `install/setup.sh` runs it; a workshop machine runs it once per user.
//!
//! It drives the same [`crate::rust::RustEngine`] and prelude as the Jupyter kernel (so the
//! cache keys are the ones the Jupyter kernel looks up) and evaluates one cell that names `nb`.
//! It must not install anything or touch Jupyter's files.

use crate::kernel::nb_crate;
use crate::rust::RustEngine;
use anyhow::{bail, Context, Result};
use protocol::output::{CellOutput, OutputSink};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The cell that makes the engine load `nb` (its on-demand prelude) and use it.
const CELL: &str = "let _nbcuda_warm_up = nb::SOCKET_ENV.len();";

/// Entry point of `nbcuda warm-up`: builds, then prints how long it took.
pub fn run() -> Result<()> {
    let started = Instant::now();
    let dir = nb_crate::materialize().context("cannot write the nb crate's sources")?;
    let engine = RustEngine::start(Vec::new(), nb_crate::prelude(&dir));
    while !engine.is_ready() && engine.startup_error().is_none() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let context_s = started.elapsed().as_secs_f64();
    let stderr = Arc::new(Mutex::new(String::new()));
    let captured = stderr.clone();
    let sink: OutputSink = Arc::new(move |output| {
        if let CellOutput::Stderr(text) = output {
            captured
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push_str(&text);
        }
    });
    let outcome = engine.execute(CELL, &sink);
    let stderr = stderr
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    if let Err(error) = outcome {
        bail!(
            "the Rust cells' dependencies did not build: {}{}",
            error,
            if stderr.trim().is_empty() {
                String::new()
            } else {
                format!("\n{}", stderr.trim_end())
            }
        );
    }
    let total_s = started.elapsed().as_secs_f64();
    println!(
        "Rust cells' dependencies (nb) are in evcxr's build cache: {total_s:.1} s \
         (evcxr's start {context_s:.1} s, nb's build and first cell {:.1} s)",
        total_s - context_s
    );
    Ok(())
}
