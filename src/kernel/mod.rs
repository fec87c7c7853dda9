//! The interpreter of the nbcuda Jupyter kernel: it splits each cell into a cell magic, magic
//! lines and Rust runs, and routes them to `magics` (the command language, which owns the
//! device state) and `rust` (evcxr), in order. It implements the protocol's [`Interpreter`]
//! trait and knows nothing of sockets or message formats.

pub mod cells;

use crate::magics::{MagicError, Magics};
use crate::output::{MimeBundle, OutputSink};
use crate::protocol::{CellIo, ExecuteOutcome, Interpreter, KernelInfo};
use crate::rust::{RustCellError, RustEngine, RustInterrupt};
use cells::{is_magic_line, split_cell, Segment};
use serde_json::json;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Start the Jupyter kernel on `connection_file` and serve until shutdown.
pub fn run(connection_file: &Path) -> anyhow::Result<()> {
    let interpreter = Arc::new(NbcudaInterpreter::new());
    crate::protocol::serve(connection_file, interpreter)
}

/// The nbcuda interpreter: Rust cells, `%%cuda` cells and magic lines.
pub struct NbcudaInterpreter {
    rust: RustEngine,
    rust_interrupt: RustInterrupt,
    magics: Mutex<Magics>,
    /// Raised by the interrupt button; magics and simulator launches poll it.
    cancel: Arc<AtomicBool>,
    /// The active backend's name, readable while a cell holds the magics lock.
    backend: Mutex<&'static str>,
    rustc_version: Arc<OnceLock<String>>,
}

impl Default for NbcudaInterpreter {
    fn default() -> Self {
        Self::new()
    }
}

impl NbcudaInterpreter {
    pub fn new() -> NbcudaInterpreter {
        let rust = RustEngine::start(Vec::new(), Vec::new());
        let rust_interrupt = rust.interrupt_handle();
        let magics = Magics::new();
        let backend = magics.backend_name();
        let rustc_version = Arc::new(OnceLock::new());
        let slot = rustc_version.clone();
        std::thread::spawn(move || {
            let version = std::process::Command::new("rustc")
                .arg("--version")
                .output()
                .ok()
                .and_then(|o| String::from_utf8(o.stdout).ok())
                .and_then(|s| s.split_whitespace().nth(1).map(str::to_string))
                .unwrap_or_default();
            let _ = slot.set(version);
        });
        NbcudaInterpreter {
            rust,
            rust_interrupt,
            magics: Mutex::new(magics),
            cancel: Arc::new(AtomicBool::new(false)),
            backend: Mutex::new(backend),
            rustc_version,
        }
    }

    fn lock_magics(&self) -> std::sync::MutexGuard<'_, Magics> {
        // A panic while the lock was held must not take the Jupyter kernel down with it.
        self.magics.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn run_segment(
        &self,
        segment: &Segment,
        sink: &OutputSink,
    ) -> Result<Option<MimeBundle>, (String, String)> {
        match segment {
            Segment::CellMagic {
                header,
                body,
                body_first_line,
            } => self
                .lock_magics()
                .run_cell(header, body, *body_first_line, sink, &self.cancel)
                .map_err(magic_error),
            Segment::Magic { line, line_no } => self
                .lock_magics()
                .run_line(line, *line_no, sink, &self.cancel)
                .map_err(magic_error),
            Segment::Rust { code, .. } => self
                .rust
                .execute(code, sink)
                .map_err(|e: RustCellError| (e.ename().to_string(), e.to_string())),
        }
    }
}

fn magic_error(e: MagicError) -> (String, String) {
    (e.ename.to_string(), e.message)
}

/// The line of `code` that contains byte offset `cursor`: (line start, line text).
fn line_at(code: &str, cursor: usize) -> (usize, &str) {
    let cursor = cursor.min(code.len());
    let start = code[..cursor].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let end = code[cursor..]
        .find('\n')
        .map(|i| cursor + i)
        .unwrap_or(code.len());
    (start, &code[start..end])
}

/// Does the cell start with a cell magic (`%%…`)?
fn is_cell_magic(code: &str) -> bool {
    code.trim_start().starts_with("%%")
}

impl Interpreter for NbcudaInterpreter {
    fn kernel_info(&self) -> KernelInfo {
        let backend = *self.backend.lock().unwrap_or_else(|p| p.into_inner());
        let version = self.rustc_version.get().cloned().unwrap_or_default();
        KernelInfo {
            implementation: "nbcuda".into(),
            implementation_version: env!("CARGO_PKG_VERSION").into(),
            language_info: json!({
                "name": "rust",
                "version": version,
                "mimetype": "text/rust",
                "file_extension": ".rs",
                "pygments_lexer": "rust",
                "codemirror_mode": "rust",
            }),
            banner: format!(
                "nbcuda {}: Rust cells (evcxr), %%cuda cells (NVRTC) and magic lines. Backend: {backend}. Type %lsmagic for the commands.",
                env!("CARGO_PKG_VERSION")
            ),
            help_links: vec![("nbcuda magics: %help".into(), "https://github.com/".into())],
        }
    }

    fn execute(&self, code: &str, _execution_count: u64, io: Arc<dyn CellIo>) -> ExecuteOutcome {
        self.cancel.store(false, Ordering::SeqCst);
        let sink: OutputSink = {
            let io = io.clone();
            Arc::new(move |o| io.publish(o))
        };
        let mut result = None;
        for segment in split_cell(code) {
            if self.cancel.load(Ordering::SeqCst) {
                return error_outcome("Interrupted", "the cell was interrupted");
            }
            match self.run_segment(&segment, &sink) {
                Ok(r) => result = r,
                Err((ename, message)) => {
                    self.refresh_backend();
                    return error_outcome(&ename, &message);
                }
            }
        }
        self.refresh_backend();
        ExecuteOutcome::Ok(result)
    }

    fn complete(&self, code: &str, cursor: usize) -> (Vec<String>, usize, usize) {
        let (start, line) = line_at(code, cursor);
        let in_cell_magic_body = is_cell_magic(code) && code[..start].trim().starts_with("%%");
        if is_magic_line(line) {
            let (matches, s, e) = self.lock_magics().complete(line, cursor - start);
            return (matches, start + s, start + e);
        }
        if in_cell_magic_body {
            return (Vec::new(), cursor, cursor);
        }
        let c = self.rust.complete(code, cursor);
        (c.matches, c.cursor_start, c.cursor_end)
    }

    fn inspect(&self, code: &str, cursor: usize, _detail_level: u8) -> Option<MimeBundle> {
        let (start, line) = line_at(code, cursor);
        if is_magic_line(line) {
            return self.lock_magics().inspect(line, cursor - start);
        }
        if is_cell_magic(code) {
            return None;
        }
        let text = self.rust.inspect(code, cursor)?;
        let mut bundle = MimeBundle::new();
        bundle.insert("text/plain".into(), json!(text));
        Some(bundle)
    }

    fn is_complete(&self, code: &str) -> (String, String) {
        if is_cell_magic(code) {
            // A cell magic's body ends with an empty line in a console.
            return if code.ends_with("\n\n") || code.trim_end().lines().count() <= 1 && !code.trim_end().ends_with('\\') {
                ("complete".into(), String::new())
            } else {
                ("incomplete".into(), String::new())
            };
        }
        let rust: Vec<String> = split_cell(code)
            .into_iter()
            .filter_map(|s| match s {
                Segment::Rust { code, .. } => Some(code),
                _ => None,
            })
            .collect();
        let (status, indent) = crate::rust::is_complete(&rust.join("\n"));
        (status.to_string(), indent)
    }

    fn interrupt(&self) {
        self.cancel.store(true, Ordering::SeqCst);
        self.rust_interrupt.interrupt();
    }
}

impl NbcudaInterpreter {
    fn refresh_backend(&self) {
        let name = self.lock_magics().backend_name();
        *self.backend.lock().unwrap_or_else(|p| p.into_inner()) = name;
    }
}

fn error_outcome(ename: &str, message: &str) -> ExecuteOutcome {
    let mut traceback = vec![format!("\x1b[0;31m{ename}\x1b[0m: {}", message.lines().next().unwrap_or(""))];
    traceback.extend(message.lines().skip(1).map(str::to_string));
    ExecuteOutcome::Error {
        ename: ename.to_string(),
        evalue: message.to_string(),
        traceback,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_at_finds_the_cursor_line() {
        let code = "let a = 1;\n%launch add[auto](x)\nfoo";
        let cursor = code.find("add").unwrap_or(0) + 2;
        let (start, line) = line_at(code, cursor);
        assert_eq!(line, "%launch add[auto](x)");
        assert_eq!(start, 11);
        assert_eq!(line_at(code, code.len()).1, "foo");
    }
}
