//! The Jupyter wire layer of the nbcuda Jupyter kernel: connection file, the five sockets,
//! signing, message routing, iopub publishing and the execution history; plus [`output`], what a
//! running cell produces, independent of the wire.
//!
//! It knows nothing of Rust, CUDA or magics: everything language-specific sits behind the
//! [`Interpreter`] trait (xeus-style: `execute`, `complete`, `inspect`, `is_complete`, plus
//! `interrupt`), which the `nbcuda` crate's `kernel` module implements. This crate must not
//! depend on evcxr, cudarc, ptxsim or the `nbcuda` crate; its Cargo.toml enforces that.

mod history;
pub mod output;
mod server;
mod shell;
mod wire;

pub use server::{serve, INTERPRETER_STACK_BYTES};
pub use wire::{Message, Signer, WireError, PROTOCOL_VERSION};

pub use output::{CellOutput, MimeBundle, OutputSink};
use serde_json::Value;

/// What `kernel_info_reply` says about the interpreter.
#[derive(Debug, Clone)]
pub struct KernelInfo {
    pub implementation: String,
    pub implementation_version: String,
    /// The `language_info` object (name, version, mimetype, file_extension, …).
    pub language_info: Value,
    pub banner: String,
    /// `help_links`: (text, url).
    pub help_links: Vec<(String, String)>,
}

/// How an execution ended.
#[derive(Debug, Clone)]
pub enum ExecuteOutcome {
    /// Success, with an optional `execute_result` bundle.
    Ok(Option<MimeBundle>),
    /// Success, with text for the front end's pager (an `execute_reply` payload of source
    /// `page`), as IPython answers `%magic?`.
    Page(MimeBundle),
    /// An error: published as an `error` message and returned in `execute_reply`.
    Error {
        /// The error's name (`ename`), e.g. `CompileError`: the language side names its kinds.
        ename: String,
        evalue: String,
        traceback: Vec<String>,
    },
}

/// What a running cell can do with the front end.
pub trait CellIo: Send + Sync {
    /// Publish output (stream, display data, …) on iopub.
    fn publish(&self, output: CellOutput);
    /// Ask the front end for a line of input (`input_request` on stdin). Errors when the front
    /// end does not allow stdin for this request, or the reply did not come.
    fn input(&self, prompt: &str, password: bool) -> Result<String, String>;
}

/// The language side of the Jupyter kernel. Calls come from blocking threads. `execute` calls
/// come one at a time (every client's cells queue in arrival order); `complete`, `inspect`,
/// `is_complete` and `kernel_info` may come at any time, also while `execute` runs (another
/// client, or the same one typing), and must answer without waiting for the running cell;
/// `interrupt` comes from the control channel while `execute` may be running.
pub trait Interpreter: Send + Sync + 'static {
    fn kernel_info(&self) -> KernelInfo;
    /// Run a cell. `io` streams output and asks for input.
    fn execute(
        &self,
        code: &str,
        execution_count: u64,
        io: std::sync::Arc<dyn CellIo>,
    ) -> ExecuteOutcome;
    /// `cursor` is a byte offset into `code`. Returns (matches, cursor_start, cursor_end) as
    /// byte offsets.
    fn complete(&self, code: &str, cursor: usize) -> (Vec<String>, usize, usize);
    /// Inspection at byte offset `cursor`; `None` when nothing is found.
    fn inspect(&self, code: &str, cursor: usize, detail_level: u8) -> Option<MimeBundle>;
    /// `("complete" | "incomplete" | "invalid" | "unknown", indent)`.
    fn is_complete(&self, code: &str) -> (String, String);
    /// Stop the running cell (the interrupt button).
    fn interrupt(&self);
    /// Called once before the process exits for a shutdown request.
    fn shutdown(&self, restart: bool) {
        let _ = restart;
    }
}
