//! Rust cells through evcxr: the bridge between the interpreter (`kernel`) and evcxr's
//! `CommandContext`.
//!
//! [`RustEngine::start`] returns at once and starts evcxr on a background worker thread (that
//! takes seconds); cells, completions and inspections are jobs for that thread. The output of
//! evcxr's child process is streamed to the running cell's [`OutputSink`] line by line; the
//! content evcxr collects (the value of the final expression, `evcxr_display` output, colon
//! command output) comes back as a MIME bundle.
//!
//! What this module must not do: write to the real stdout of the Jupyter kernel process (evcxr's
//! child uses its own stdout as a control channel, and the binary must call
//! `evcxr::runtime_hook()` first thing in `main`), block a caller of `complete` for long, or
//! panic on anything a cell contains. It knows nothing of Jupyter messages.

pub mod child_marker;
mod complete;
pub mod dep_info;
mod engine;
mod text;
pub mod toolchain;

pub use complete::is_complete;
pub use engine::InputFn;

use engine::{lock, Job, Shared, Status};
use nb::ErrorKind;
use protocol::output::{CellOutput, MimeBundle, OutputSink};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// What a Rust cell sent while evcxr is still starting shows first (on stderr).
pub const STARTING_NOTE: &str = "starting the Rust runtime (evcxr)…\n";

/// How long `complete` waits for rust-analyzer when the lexical completion has matches: then
/// those answer if rust-analyzer is slower (a name completes within 100 ms, whatever
/// rust-analyzer is doing).
const COMPLETE_BUDGET: Duration = Duration::from_millis(80);
/// How long `complete` waits for rust-analyzer when nothing else can answer (a member after
/// `.` or `::`, a name no cell bound): its first analysis after a new cell takes 0.1-2 s here.
const COMPLETE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long `inspect` waits for rust-analyzer.
const INSPECT_TIMEOUT: Duration = Duration::from_secs(4);
/// After an interrupt, how long `execute` waits for the worker before it gives up on the cell
/// (the cell was compiling, or evcxr was still starting).
const ABANDON_AFTER: Duration = Duration::from_millis(1500);

/// Completions for a Rust cell; offsets are byte offsets into the cell's code.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RustCompletions {
    pub matches: Vec<String>,
    pub cursor_start: usize,
    pub cursor_end: usize,
}

impl RustCompletions {
    fn empty(cursor: usize) -> RustCompletions {
        RustCompletions {
            matches: Vec::new(),
            cursor_start: cursor,
            cursor_end: cursor,
        }
    }
}

/// rust-analyzer's completions first, then the lexical ones it lacks, where both replace the same
/// word (else rust-analyzer's alone, or the lexical ones when it found nothing).
fn merge_completions(analysed: RustCompletions, lexical: RustCompletions) -> RustCompletions {
    if analysed.matches.is_empty() {
        return lexical;
    }
    let mut merged = analysed;
    if merged.cursor_start == lexical.cursor_start {
        for name in lexical.matches {
            if !merged.matches.contains(&name) {
                merged.matches.push(name);
            }
        }
    }
    merged
}

/// Why a Rust cell failed.
#[derive(Debug, thiserror::Error)]
pub enum RustCellError {
    /// Rust compile errors: the rendered diagnostics (source lines of the cell, carets, labels,
    /// notes, help), plain text.
    #[error("{message}")]
    Compile { message: String },
    /// A panic in the cell: the panic message.
    #[error("{message}")]
    Panic { message: String },
    /// Interrupted by the user.
    #[error("interrupted")]
    Interrupted,
    /// evcxr's child process died (abort, segfault); evcxr has restarted it.
    #[error("{message}")]
    ChildDied { message: String },
    /// evcxr could not start (no cargo/rustc, ...): how to fix it.
    #[error("{message}")]
    Unavailable { message: String },
    /// The cell's `?` returned an error: its message (the last line evcxr printed for it on
    /// stderr) and every stderr line of the cell before the end of that message, so that the
    /// caller can recover a message of several lines whose text it knows (an `nb` error).
    #[error("{message}")]
    UserError {
        message: String,
        stderr: Vec<String>,
    },
    /// Any other evcxr error.
    #[error("{message}")]
    Other { message: String },
}

impl RustCellError {
    /// The Jupyter `ename` of the error.
    pub fn ename(&self) -> ErrorKind {
        match self {
            RustCellError::Compile { .. } => ErrorKind::Compile,
            RustCellError::Panic { .. } => ErrorKind::Panic,
            RustCellError::Interrupted => ErrorKind::Interrupted,
            RustCellError::ChildDied { .. } => ErrorKind::ChildProcessDied,
            RustCellError::Unavailable { .. } => ErrorKind::RustUnavailable,
            RustCellError::UserError { .. } => ErrorKind::Other,
            RustCellError::Other { .. } => ErrorKind::Rust,
        }
    }
}

/// The evcxr context of one Jupyter kernel. `Send + Sync`; every method may be called from any
/// thread.
pub struct RustEngine {
    shared: Arc<Shared>,
    jobs: Mutex<mpsc::Sender<Job>>,
    worker: Option<std::thread::JoinHandle<()>>,
}

/// Interrupts the running Rust cell from another thread.
#[derive(Clone)]
pub struct RustInterrupt {
    shared: Arc<Shared>,
}

impl RustInterrupt {
    /// Stops the running cell: evcxr's child process is killed and restarted (variables are
    /// lost, as in evcxr_jupyter). Does nothing when no cell runs. Never blocks for long.
    pub fn interrupt(&self) {
        self.shared.interrupt();
    }
}

/// Code the Jupyter kernel evaluates for the user, in two steps (colon commands go first in each).
#[derive(Debug, Clone, Default)]
pub struct Prelude {
    /// Evaluated right after evcxr starts, before any cell: settings such as `:cache`, `use` lines.
    pub at_start: Vec<String>,
    /// Evaluated once the worker has been idle for a few seconds, or before the first cell that
    /// names one of `names`, whichever comes first: `:dep` lines, whose first build takes seconds
    /// that cells which need none of them should not wait for.
    pub on_demand: Vec<String>,
    /// The identifiers (crate names) that make a cell load `on_demand` first.
    pub names: Vec<String>,
    /// A file that Jupyter kernels sharing a build cache lock (`flock`) while they load
    /// `on_demand`, one at a time: the first fills the cache, the others then find it there.
    /// Without it, kernels that start together (a workshop room) build the same crates into
    /// the same cache at once, and one of them may lose its `:dep`.
    pub load_lock: Option<std::path::PathBuf>,
}

impl RustEngine {
    /// Returns at once; starts evcxr's `CommandContext` on a background thread (it takes
    /// seconds). `env` is added to the environment of evcxr's child process; `prelude` is
    /// evaluated as [`Prelude`] says.
    pub fn start(env: Vec<(String, String)>, prelude: Prelude) -> RustEngine {
        let shared = Arc::new(Shared::new());
        let (jobs, receiver) = mpsc::channel();
        if toolchain::find_cargo().is_none() {
            // No evcxr without cargo: say so at once, with the fix (not after evcxr fails).
            *lock(&shared.status) = Status::Failed {
                first: toolchain::missing_cargo_message(),
                again: toolchain::MISSING_CARGO_AGAIN.to_owned(),
            };
            return RustEngine {
                shared,
                jobs: Mutex::new(jobs),
                worker: None,
            };
        }
        let worker_shared = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("nbcuda-evcxr".to_owned())
            .spawn(move || engine::worker_main(env, prelude, worker_shared, receiver));
        let worker = match spawned {
            Ok(handle) => Some(handle),
            Err(error) => {
                *lock(&shared.status) =
                    Status::failed(format!("cannot start the evcxr thread: {error}"));
                None
            }
        };
        RustEngine {
            shared,
            jobs: Mutex::new(jobs),
            worker,
        }
    }

    /// Whether evcxr has started (and the prelude's `at_start` part ran).
    pub fn is_ready(&self) -> bool {
        *lock(&self.shared.status) == Status::Ready
    }

    /// Why evcxr could not start, once that is known (the full reason, with its fix).
    pub fn startup_error(&self) -> Option<String> {
        match &*lock(&self.shared.status) {
            Status::Failed { first, .. } => Some(first.clone()),
            _ => None,
        }
    }

    /// The error of a Rust cell when evcxr cannot start: the full reason the first time, the
    /// short one after (the first cell's error said how to fix it).
    fn unavailable(&self) -> RustCellError {
        let message = match &*lock(&self.shared.status) {
            Status::Failed { first, again } => {
                if self.shared.told_unavailable.swap(true, Ordering::SeqCst) {
                    again.clone()
                } else {
                    first.clone()
                }
            }
            _ => "Rust cells are unavailable (see the Jupyter kernel's log)".to_owned(),
        };
        RustCellError::Unavailable { message }
    }

    /// Evaluates one Rust cell (evcxr colon commands such as `:dep`, `:vars`, `:help` included).
    /// Waits for the background start if needed. stdout/stderr are streamed through `out` while
    /// the cell runs; the content evcxr collects (final expression as `text/plain`,
    /// `evcxr_display` MIME output, command output) is returned as a MIME bundle.
    pub fn execute(
        &self,
        code: &str,
        out: &OutputSink,
    ) -> Result<Option<MimeBundle>, RustCellError> {
        self.execute_with_input(code, out, None)
    }

    /// [`RustEngine::execute`], with `input` answering the cell's requests for input
    /// (`evcxr_input::get_string` / `get_password`); without it they read an empty string.
    pub fn execute_with_input(
        &self,
        code: &str,
        out: &OutputSink,
        input: Option<InputFn>,
    ) -> Result<Option<MimeBundle>, RustCellError> {
        match self.run_cell(code, out, input) {
            Err(RustCellError::Unavailable { .. }) => Err(self.unavailable()),
            other => other,
        }
    }

    fn run_cell(
        &self,
        code: &str,
        out: &OutputSink,
        input: Option<InputFn>,
    ) -> Result<Option<MimeBundle>, RustCellError> {
        if let Some(message) = self.startup_error() {
            return Err(RustCellError::Unavailable { message });
        }
        if matches!(*lock(&self.shared.status), Status::Starting) {
            // The Jupyter kernel has just started: say why this first cell takes seconds.
            out(CellOutput::Stderr(STARTING_NOTE.into()));
        }
        let epoch = self.shared.interrupt_epoch.load(Ordering::SeqCst);
        let cancelled = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicBool::new(false));
        let (reply, result) = mpsc::sync_channel(1);
        let job = Job::Execute {
            code: code.to_owned(),
            sink: out.clone(),
            input,
            cancelled: cancelled.clone(),
            started: started.clone(),
            reply,
        };
        if lock(&self.jobs).send(job).is_err() {
            return Err(self.worker_gone());
        }
        let mut interrupted_at: Option<Instant> = None;
        loop {
            match result.recv_timeout(Duration::from_millis(50)) {
                Ok(outcome) => return outcome,
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(self.worker_gone()),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if interrupted_at.is_none()
                && self.shared.interrupt_epoch.load(Ordering::SeqCst) != epoch
            {
                interrupted_at = Some(Instant::now());
            }
            if interrupted_at.is_some_and(|at| at.elapsed() >= ABANDON_AFTER) {
                cancelled.store(true, Ordering::SeqCst);
                let note = if started.load(Ordering::SeqCst) {
                    "Interrupted. The Rust compilation in progress finishes in the background; \
                     the next cell waits for it."
                } else {
                    "Interrupted before the cell started (evcxr was busy or still starting)."
                };
                out(CellOutput::Stderr(format!("{note}\n")));
                return Err(RustCellError::Interrupted);
            }
        }
    }

    fn worker_gone(&self) -> RustCellError {
        match self.startup_error() {
            Some(message) => RustCellError::Unavailable { message },
            None => RustCellError::Other {
                message: "the evcxr worker thread stopped (see the Jupyter kernel's log)"
                    .to_owned(),
            },
        }
    }

    /// Completions at byte offset `cursor` of `code`: the lexical ones ([`Self::lexical_completions`])
    /// merged behind rust-analyzer's (through evcxr; `:` commands at the start of a cell). Only
    /// the lexical ones while evcxr starts or its worker is busy; rust-analyzer gets
    /// [`COMPLETE_BUDGET`] when there are lexical matches, else up to [`COMPLETE_TIMEOUT`].
    pub fn complete(&self, code: &str, cursor: usize) -> RustCompletions {
        let lexical = self.lexical_completions(code, cursor);
        if !self.is_ready() || self.shared.busy.load(Ordering::SeqCst) {
            return lexical;
        }
        let budget = if lexical.matches.is_empty() {
            COMPLETE_TIMEOUT
        } else {
            COMPLETE_BUDGET
        };
        let (reply, result) = mpsc::sync_channel(1);
        let job = Job::Complete {
            code: code.to_owned(),
            cursor,
            deadline: Instant::now() + budget,
            reply,
        };
        if lock(&self.jobs).send(job).is_err() {
            return lexical;
        }
        match result.recv_timeout(budget) {
            Ok(analysed) => merge_completions(analysed, lexical),
            Err(_) => lexical,
        }
    }

    /// Completion without rust-analyzer: the names bound earlier in this cell and in the cells
    /// run so far (and their variables) that start with the identifier ending at `cursor`.
    /// Answers at once, also while evcxr starts or a cell runs.
    pub fn lexical_completions(&self, code: &str, cursor: usize) -> RustCompletions {
        let cursor = text::floor_char_boundary(code, cursor);
        let Some(word) = text::identifier_at(code, cursor).filter(|r| r.end == cursor) else {
            return RustCompletions::empty(cursor);
        };
        // After `.` or `::` the candidates are members, which only rust-analyzer knows.
        if code[..word.start].ends_with('.') || code[..word.start].ends_with("::") {
            return RustCompletions::empty(cursor);
        }
        let prefix = &code[word.clone()];
        let mut matches = text::names_bound_before(code, word.start, prefix);
        let earlier = lock(&self.shared.history_names).clone();
        let variables = lock(&self.shared.variables).clone();
        let candidates = earlier
            .into_iter()
            .chain(variables.into_iter().map(|(name, _)| name));
        for name in candidates {
            if name.starts_with(prefix) && name.len() > prefix.len() && !matches.contains(&name) {
                matches.push(name);
            }
        }
        RustCompletions {
            matches,
            cursor_start: word.start,
            cursor_end: cursor,
        }
    }

    /// Documentation or type of the identifier at byte offset `cursor` as plain text: a
    /// rust-analyzer hover through evcxr, else `name: type` of a variable from an earlier cell.
    pub fn inspect(&self, code: &str, cursor: usize) -> Option<String> {
        let name = text::identifier_at(code, cursor).map(|range| code[range].to_owned())?;
        let fallback = || engine::variable_type(&self.shared, &name);
        if !self.is_ready() || self.shared.busy.load(Ordering::SeqCst) {
            return fallback();
        }
        let (reply, result) = mpsc::sync_channel(1);
        let job = Job::Inspect {
            code: code.to_owned(),
            cursor,
            deadline: Instant::now() + INSPECT_TIMEOUT,
            reply,
        };
        if lock(&self.jobs).send(job).is_err() {
            return fallback();
        }
        result
            .recv_timeout(INSPECT_TIMEOUT)
            .unwrap_or_else(|_| fallback())
    }

    /// Variables defined by earlier cells and their types, sorted by name.
    pub fn variables(&self) -> Vec<(String, String)> {
        lock(&self.shared.variables).clone()
    }

    /// A handle that interrupts the running cell from another thread.
    pub fn interrupt_handle(&self) -> RustInterrupt {
        RustInterrupt {
            shared: self.shared.clone(),
        }
    }
}

/// How long dropping a [`RustEngine`] waits for the worker to end, which drops evcxr's context:
/// that kills its child and removes the build folder evcxr made for itself.
const WORKER_END_WAIT: Duration = Duration::from_secs(5);

impl Drop for RustEngine {
    /// Stops a running cell; the worker then ends and evcxr's child with it. Waits a little for
    /// that (a worker still starting evcxr, or still compiling, is left to end on its own).
    fn drop(&mut self) {
        self.shared.interrupt();
        // Closing the job queue is what ends the worker's loop.
        *lock(&self.jobs) = mpsc::channel().0;
        let Some(worker) = self.worker.take() else {
            return;
        };
        let deadline = Instant::now() + WORKER_END_WAIT;
        while !worker.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if worker.is_finished() {
            let _ = worker.join();
        }
    }
}

#[cfg(test)]
mod tests;
