//! The worker thread that owns evcxr's `CommandContext`, and the thread that forwards the output
//! of evcxr's child process to the sink of the running cell.
//!
//! Only the worker touches the `CommandContext` (it is started there, in the background, because
//! that takes seconds); callers talk to it through [`Job`]s. Nothing here may write to the real
//! stdout of the Jupyter kernel process, and nothing may panic on what a cell contains.

use super::text;
use super::{RustCellError, RustCompletions};
use crossbeam_channel::{Receiver, Select};
use protocol::output::{CellOutput, MimeBundle, OutputSink};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long the forwarder waits for late stderr lines at the end of a cell. The child writes a
/// panic's message before it reports the end of the cell on stdout, but evcxr reads stderr on
/// another thread, so the last lines may reach us a moment after the cell ends.
const STDERR_SETTLE: Duration = Duration::from_millis(30);

/// Asks for input on behalf of a cell (`evcxr_input::get_string`): `(prompt, is_password)`.
pub type InputFn = Arc<dyn Fn(&str, bool) -> String + Send + Sync>;

pub(super) type CellResult = Result<Option<MimeBundle>, RustCellError>;

pub(super) enum Job {
    Execute {
        code: String,
        sink: OutputSink,
        input: Option<InputFn>,
        /// Set by the caller when it stopped waiting (interrupt): skip the job if not started.
        cancelled: Arc<AtomicBool>,
        /// Set by the worker when it starts the job.
        started: Arc<AtomicBool>,
        reply: mpsc::SyncSender<CellResult>,
    },
    /// Skipped when the worker reaches it after `deadline` (the caller has given up).
    Complete {
        code: String,
        cursor: usize,
        deadline: Instant,
        reply: mpsc::SyncSender<RustCompletions>,
    },
    Inspect {
        code: String,
        cursor: usize,
        deadline: Instant,
        reply: mpsc::SyncSender<Option<String>>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Status {
    Starting,
    Ready,
    /// evcxr cannot start: the first Rust cell's error (why, and how to fix it), and the
    /// shorter one of every later Rust cell.
    Failed {
        first: String,
        again: String,
    },
}

/// The later cells' error when evcxr did not start for another reason than a missing cargo.
pub(super) const UNAVAILABLE_AGAIN: &str = "Rust cells are unavailable in this Jupyter kernel: \
the first Rust cell's error says why (`nbcuda doctor` checks the toolchain).";

impl Status {
    pub fn failed(first: String) -> Status {
        Status::Failed {
            first,
            again: UNAVAILABLE_AGAIN.to_owned(),
        }
    }
}

/// Who may kill evcxr's child, and whether a kill happened during the running cell.
#[derive(Default)]
pub(super) struct KillState {
    pub running: bool,
    pub killed: bool,
    pub child: Option<Arc<Mutex<std::process::Child>>>,
}

/// State shared by the engine handle, the interrupt handles, the worker and the forwarder.
pub(super) struct Shared {
    pub status: Mutex<Status>,
    /// The worker is working (a cell, a completion, its idle work: rust-analyzer's warm-up,
    /// the on-demand prelude) rather than waiting for a job: completion and inspect answer at
    /// once then, without rust-analyzer.
    pub busy: AtomicBool,
    /// Names bound by the Rust cells run so far (`let`, `fn`, `struct`, …), for the lexical
    /// completion that answers while rust-analyzer cannot.
    pub history_names: Mutex<std::collections::BTreeSet<String>>,
    /// Incremented by every interrupt request.
    pub interrupt_epoch: AtomicU64,
    pub kill: Mutex<KillState>,
    /// The sink of the running cell; `None` between cells (output is then logged and dropped).
    pub sink: Mutex<Option<OutputSink>>,
    /// The stderr lines of the running cell (for panic detection).
    pub stderr_capture: Mutex<Option<Vec<String>>>,
    /// Variables and their types after the last cell (for inspect while a cell runs).
    pub variables: Mutex<Vec<(String, String)>>,
    /// Whether a Rust cell has shown the full reason why evcxr cannot start.
    pub told_unavailable: AtomicBool,
}

/// Locks a mutex, ignoring poisoning (every value guarded here stays consistent on its own).
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    pub fn new() -> Shared {
        Shared {
            status: Mutex::new(Status::Starting),
            busy: AtomicBool::new(true),
            history_names: Mutex::new(std::collections::BTreeSet::new()),
            interrupt_epoch: AtomicU64::new(0),
            kill: Mutex::new(KillState::default()),
            sink: Mutex::new(None),
            stderr_capture: Mutex::new(None),
            variables: Mutex::new(Vec::new()),
            told_unavailable: AtomicBool::new(false),
        }
    }

    /// Kills evcxr's child if a cell is running in it (evcxr then restarts it).
    pub fn interrupt(&self) {
        self.interrupt_epoch.fetch_add(1, Ordering::SeqCst);
        let mut kill = lock(&self.kill);
        if !kill.running {
            return;
        }
        if let Some(child) = kill.child.clone() {
            match lock(&child).kill() {
                Ok(()) => kill.killed = true,
                Err(error) => tracing::warn!("could not kill evcxr's child process: {error}"),
            }
        }
    }
}

/// How long the worker must have been idle before it loads the prelude's on-demand part.
const LOAD_WHEN_IDLE_FOR: Duration = Duration::from_secs(3);

/// What a cell that loads the prelude's on-demand part (it names one of `names`) shows first.
fn loading_note(names: &[String]) -> String {
    format!(
        "loading {} (once per Jupyter kernel: seconds)…\n",
        names.join(", ")
    )
}

/// Runs the prelude's on-demand part while idle, then warms rust-analyzer again. Returns the
/// notice for the next cell if the prelude failed.
fn load_on_demand(worker: &mut Worker, lines: &[String], lock: Option<&Path>) -> Option<String> {
    let failed = run_on_demand(worker, lines, lock);
    store_variables(&worker.ctx, &worker.shared);
    warm_up(&mut worker.ctx);
    failed
}

/// How long a Jupyter kernel waits for another one's load of the on-demand prelude (a cold
/// build of `nb` and its dependencies takes 30-60 s on 2 cores) before it loads anyway.
const LOAD_LOCK_WAIT: Duration = Duration::from_secs(180);

/// Runs the prelude's on-demand part holding `lock` (one Jupyter kernel at a time per build
/// cache), and once more if it failed (another process may have been writing the cache).
/// Returns the notice for the next cell if it failed twice.
fn run_on_demand(worker: &mut Worker, lines: &[String], lock: Option<&Path>) -> Option<String> {
    let _held = lock.map(|path| CacheLock::acquire(path, LOAD_LOCK_WAIT));
    let failed = run_prelude(&mut worker.ctx, lines, &worker.flusher)?;
    tracing::warn!("the on-demand prelude failed once; trying again: {failed}");
    run_prelude(&mut worker.ctx, lines, &worker.flusher)
}

/// An exclusive `flock` on a file, released when dropped; taken without it after a wait, so
/// that a stuck holder delays a load but never stops it.
struct CacheLock {
    /// The locked file (None: taken without the lock); closing it releases the lock.
    _file: Option<std::fs::File>,
}

impl CacheLock {
    fn acquire(path: &Path, wait: Duration) -> CacheLock {
        use std::os::unix::io::AsRawFd;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path);
        let file = match file {
            Ok(file) => file,
            Err(e) => {
                tracing::warn!("cannot open the load lock {}: {e}", path.display());
                return CacheLock { _file: None };
            }
        };
        let deadline = Instant::now() + wait;
        loop {
            // SAFETY: flock on a descriptor this function owns; no memory is passed.
            let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if locked == 0 {
                return CacheLock { _file: Some(file) };
            }
            if Instant::now() >= deadline {
                tracing::warn!(
                    "the load lock {} is still held: loading without it",
                    path.display()
                );
                return CacheLock { _file: None };
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

pub(super) const RESTART_NOTE: &str = "evcxr's child process was restarted: variables defined \
in earlier cells are gone (functions, types, `use` and `:dep` lines stay).";

/// The worker: starts evcxr, runs the prelude, then serves jobs until the engine is dropped.
pub(super) fn worker_main(
    env: Vec<(String, String)>,
    prelude: super::Prelude,
    shared: Arc<Shared>,
    jobs: mpsc::Receiver<Job>,
) {
    let t0 = Instant::now();
    let started = catch_unwind(|| start_context(env)).unwrap_or_else(|_| {
        Err("evcxr panicked while starting (see the Jupyter kernel's log)".to_owned())
    });
    let (mut ctx, outputs) = match started {
        Ok(pair) => pair,
        Err(message) => {
            let message = unavailable_message(&message);
            tracing::error!("Rust cells unavailable: {message}");
            *lock(&shared.status) = Status::failed(message.clone());
            serve_failed(&jobs, &message);
            return;
        }
    };
    lock(&shared.kill).child = Some(ctx.process_handle());
    let flusher = Forwarder::spawn(outputs.stdout, outputs.stderr, shared.clone());
    let t_context = t0.elapsed();
    let mut notice = run_prelude(&mut ctx, &prelude.at_start, &flusher);
    let names = prelude.names;
    let load_lock = prelude.load_lock;
    let mut on_demand = Some(prelude.on_demand).filter(|lines| !lines.is_empty());
    store_variables(&ctx, &shared);
    *lock(&shared.status) = Status::Ready;
    tracing::info!(
        "evcxr is ready after {:?} (its context took {t_context:?})",
        t0.elapsed()
    );

    let mut worker = Worker {
        ctx,
        shared: shared.clone(),
        flusher,
    };
    // Work for idle time. First rust-analyzer's first completion, which loads the standard
    // library's sources (seconds). Then, once the worker has been idle for `LOAD_WHEN_IDLE_FOR`,
    // the prelude's on-demand part, with rust-analyzer warmed again (the new crates change its
    // crate graph, and its next query takes seconds): one piece, so that no completion asked
    // after a cell waits behind half of it. The pause keeps that piece (seconds) from holding up
    // cells sent one after another; a cell that names one of `names` loads it first.
    let mut warmed = false;
    let mut idle_since = Instant::now();
    loop {
        // Waiting for a job from here on (the idle work below says it works again).
        shared.busy.store(false, Ordering::SeqCst);
        let job = if !warmed {
            match jobs.try_recv() {
                Ok(job) => job,
                Err(mpsc::TryRecvError::Empty) => {
                    shared.busy.store(true, Ordering::SeqCst);
                    warm_up(&mut worker.ctx);
                    warmed = true;
                    idle_since = Instant::now();
                    continue;
                }
                Err(mpsc::TryRecvError::Disconnected) => break,
            }
        } else if on_demand.is_some() {
            let wait = LOAD_WHEN_IDLE_FOR.saturating_sub(idle_since.elapsed());
            match jobs.recv_timeout(wait) {
                Ok(job) => job,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    shared.busy.store(true, Ordering::SeqCst);
                    if let Some(lines) = on_demand.take() {
                        let loaded = load_on_demand(&mut worker, &lines, load_lock.as_deref());
                        notice = join_notices(notice, loaded);
                    }
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        } else {
            match jobs.recv() {
                Ok(job) => job,
                Err(_) => break,
            }
        };
        shared.busy.store(true, Ordering::SeqCst);
        match job {
            Job::Execute {
                code,
                sink,
                input,
                cancelled,
                started,
                reply,
            } => {
                if cancelled.load(Ordering::SeqCst) {
                    continue;
                }
                started.store(true, Ordering::SeqCst);
                if on_demand.is_some() && names.iter().any(|name| text::names(&code, name)) {
                    if let Some(lines) = on_demand.take() {
                        sink(CellOutput::Stderr(loading_note(&names)));
                        let failed = run_on_demand(&mut worker, &lines, load_lock.as_deref());
                        notice = join_notices(notice, failed);
                    }
                }
                if let Some(text) = notice.take() {
                    sink(CellOutput::Stderr(text));
                }
                let result = worker.execute(&code, &sink, input);
                let _ = reply.send(result);
            }
            Job::Complete {
                code,
                cursor,
                deadline,
                reply,
            } => {
                if Instant::now() < deadline {
                    let _ = reply.send(worker.complete(&code, cursor));
                }
            }
            Job::Inspect {
                code,
                cursor,
                deadline,
                reply,
            } => {
                if Instant::now() < deadline {
                    let _ = reply.send(worker.inspect(&code, cursor));
                }
            }
        }
        idle_since = Instant::now();
    }
    // The engine was dropped: stop a running child before evcxr waits for it.
    if let Some(child) = lock(&shared.kill).child.take() {
        let _ = lock(&child).kill();
    }
}

fn start_context(
    env: Vec<(String, String)>,
) -> Result<(evcxr::CommandContext, evcxr::EvalContextOutputs), String> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the running executable: {e}"))?;
    let mut command = std::process::Command::new(exe);
    command.envs(env);
    kill_with_parent(&mut command);
    let (eval_context, outputs) =
        evcxr::EvalContext::with_subprocess_command(command).map_err(|e| e.to_string())?;
    Ok((
        evcxr::CommandContext::with_eval_context(eval_context),
        outputs,
    ))
}

/// Linux: evcxr's child gets SIGKILL when the thread that started it (the worker) ends, so a
/// cell spinning in `loop {}` does not outlive the Jupyter kernel.
#[cfg(target_os = "linux")]
fn kill_with_parent(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs between fork and exec and only makes one async-signal-safe
    // system call.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn kill_with_parent(_command: &mut std::process::Command) {}

fn unavailable_message(evcxr_error: &str) -> String {
    if evcxr_error.contains("Subprocess terminated") || evcxr_error.contains("runtime_hook") {
        return format!(
            "evcxr's child process did not start. It is this executable run again with \
             EVCXR_IS_RUNTIME=1, so `main` must call `evcxr::runtime_hook()` before anything \
             else. evcxr said: {}",
            text::strip_ansi(evcxr_error).trim()
        );
    }
    format!(
        "evcxr could not start, so Rust cells cannot run. If the Rust toolchain is missing or \
         broken, {} (`nbcuda doctor` checks it). evcxr said: {}",
        super::toolchain::install_rust_fix(),
        text::strip_ansi(evcxr_error).trim()
    )
}

fn serve_failed(jobs: &mpsc::Receiver<Job>, message: &str) {
    while let Ok(job) = jobs.recv() {
        match job {
            Job::Execute { reply, .. } => {
                let _ = reply.send(Err(RustCellError::Unavailable {
                    message: message.to_owned(),
                }));
            }
            Job::Complete { cursor, reply, .. } => {
                let _ = reply.send(RustCompletions::empty(cursor));
            }
            Job::Inspect { reply, .. } => {
                let _ = reply.send(None);
            }
        }
    }
}

fn join_notices(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + &b),
        (a, b) => a.or(b),
    }
}

/// Runs (part of) the prelude (colon commands first, as evcxr wants them at the top of a cell). Returns a
/// notice for the first cell's stderr if it failed.
fn run_prelude(
    ctx: &mut evcxr::CommandContext,
    prelude: &[String],
    flusher: &Forwarder,
) -> Option<String> {
    if prelude.is_empty() {
        return None;
    }
    let (commands, code): (Vec<&String>, Vec<&String>) = prelude
        .iter()
        .partition(|line| line.trim_start().starts_with(':'));
    let source = commands
        .into_iter()
        .chain(code)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("\n");
    let started = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| ctx.execute(&source)));
    flusher.flush();
    tracing::info!("the Rust prelude {source:?} ran in {:?}", started.elapsed());
    let error = match result {
        Ok(Ok(_)) => return None,
        Ok(Err(evcxr::Error::CompilationErrors(errors))) => {
            text::render_compile_errors(&errors, &source)
        }
        Ok(Err(error)) => text::strip_ansi(&error.to_string()),
        Err(_) => "evcxr panicked".to_owned(),
    };
    tracing::warn!("the Rust prelude failed: {error}");
    Some(format!(
        "nbcuda: the Rust prelude failed; cells run without it:\n{error}\n"
    ))
}

/// rust-analyzer loads and analyses the standard library on its first request (seconds); every
/// cell needs that analysis, and so do completions. Doing it here, while the user types, keeps
/// it off the first cell and the first completion.
fn warm_up(ctx: &mut evcxr::CommandContext) {
    const CODE: &str = "let nbcuda_warm_up = 1u8; nbcuda_warm_up.checked_a";
    let started = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| ctx.completions(CODE, CODE.len())));
    match result {
        Ok(Ok(_)) => tracing::info!("rust-analyzer warmed up in {:?}", started.elapsed()),
        _ => tracing::debug!("rust-analyzer warm-up failed"),
    }
}

fn store_variables(ctx: &evcxr::CommandContext, shared: &Shared) {
    let mut variables: Vec<(String, String)> = ctx
        .variables_and_types()
        .map(|(name, ty)| (name.to_owned(), ty.to_owned()))
        .collect();
    variables.sort();
    *lock(&shared.variables) = variables;
}

struct Worker {
    ctx: evcxr::CommandContext,
    shared: Arc<Shared>,
    flusher: Forwarder,
}

impl Worker {
    fn execute(&mut self, code: &str, sink: &OutputSink, input: Option<InputFn>) -> CellResult {
        if let Some(message) = refused_command(code) {
            return Err(RustCellError::Other { message });
        }
        let code = quiet_load_config(code);
        self.flusher.flush(); // late output of earlier work goes nowhere
        *lock(&self.shared.sink) = Some(sink.clone());
        *lock(&self.shared.stderr_capture) = Some(Vec::new());
        let child_pid = {
            let mut kill = lock(&self.shared.kill);
            kill.running = true;
            kill.killed = false;
            kill.child.as_ref().map(|child| lock(child).id())
        };
        let reader = move |prompt: &str, password: bool| match &input {
            Some(input) => input(prompt, password),
            None => String::new(),
        };
        let result = catch_unwind(AssertUnwindSafe(|| {
            self.ctx.execute_with_callbacks(
                &code,
                &mut evcxr::EvalCallbacks {
                    input_reader: &|request| reader(&request.prompt, request.is_password),
                },
            )
        }));
        let killed = {
            let mut kill = lock(&self.shared.kill);
            kill.running = false;
            kill.killed
        };
        self.flusher.flush();
        let stderr_lines = lock(&self.shared.stderr_capture).take().unwrap_or_default();
        *lock(&self.shared.sink) = None;
        let panic = text::panic_message(&stderr_lines, child_pid);
        let user_error = user_error(&stderr_lines);
        let outcome = match self.classify(result, killed, panic, &code) {
            Ok(_) if user_error.is_some() => {
                let (message, stderr) = user_error.unwrap_or_default();
                Err(RustCellError::UserError { message, stderr })
            }
            other => other,
        };
        if matches!(outcome, Err(RustCellError::Interrupted)) {
            sink(CellOutput::Stderr(format!("Interrupted. {RESTART_NOTE}\n")));
        }
        store_variables(&self.ctx, &self.shared);
        if outcome.is_ok() {
            lock(&self.shared.history_names).extend(text::names_bound_before(
                &code,
                code.len(),
                "",
            ));
        }
        outcome
    }

    fn classify(
        &mut self,
        result: std::thread::Result<Result<evcxr::EvalOutputs, evcxr::Error>>,
        killed: bool,
        panic: Option<String>,
        code: &str,
    ) -> CellResult {
        match result {
            Ok(Err(evcxr::Error::SubprocessTerminated(message))) => {
                // evcxr has already restarted its child.
                if killed {
                    Err(RustCellError::Interrupted)
                } else if let Some(panic) = panic {
                    Err(RustCellError::Panic {
                        message: format!("{panic}\n({RESTART_NOTE})"),
                    })
                } else {
                    let message = text::strip_ansi(&message);
                    let hint = if text::killed_by_sigkill(&message) {
                        format!("\n{}", text::SIGKILL_HINT)
                    } else {
                        String::new()
                    };
                    Err(RustCellError::ChildDied {
                        message: format!("{}{hint}\n{RESTART_NOTE}", message.trim()),
                    })
                }
            }
            _ if killed => {
                // The cell ended just as it was interrupted: the child is dead but evcxr does
                // not know yet.
                if let Err(error) = self.ctx.execute(":restart") {
                    tracing::warn!("restarting evcxr's child failed: {error}");
                }
                Err(RustCellError::Interrupted)
            }
            Ok(Ok(outputs)) => match panic {
                Some(message) => Err(RustCellError::Panic { message }),
                None => Ok(text::bundle_from_content(outputs.content_by_mime_type)),
            },
            Ok(Err(evcxr::Error::CompilationErrors(errors))) => Err(RustCellError::Compile {
                message: text::render_compile_errors(&errors, code),
            }),
            Ok(Err(error)) => Err(RustCellError::Other {
                message: text::strip_ansi(&error.to_string()).trim().to_owned(),
            }),
            Err(_) => Err(RustCellError::Other {
                message: "evcxr failed internally on this cell (see the Jupyter kernel's log)"
                    .to_owned(),
            }),
        }
    }

    fn complete(&mut self, code: &str, cursor: usize) -> RustCompletions {
        let cursor = text::floor_char_boundary(code, cursor);
        let analysed = text::blank_commands_for_analysis(code, cursor);
        match catch_unwind(AssertUnwindSafe(|| self.ctx.completions(&analysed, cursor))) {
            Ok(Ok(found)) => {
                let mut matches: Vec<String> = Vec::new();
                for completion in found.completions {
                    if !matches.contains(&completion.code) {
                        matches.push(completion.code);
                    }
                }
                // The names the cell binds are the caller's lexical completion
                // (`RustEngine::complete` merges them): only rust-analyzer's here.
                let start = found.start_offset.min(code.len());
                let end = found.end_offset.clamp(start, code.len());
                RustCompletions {
                    matches,
                    cursor_start: text::floor_char_boundary(code, start),
                    cursor_end: text::floor_char_boundary(code, end),
                }
            }
            Ok(Err(error)) => {
                tracing::debug!("completion failed: {error}");
                RustCompletions::empty(cursor)
            }
            Err(_) => RustCompletions::empty(cursor),
        }
    }

    fn inspect(&mut self, code: &str, cursor: usize) -> Option<String> {
        let range = text::identifier_at(code, cursor)?;
        let analysed = text::blank_commands_for_analysis(code, range.end);
        let hover = catch_unwind(AssertUnwindSafe(|| self.ctx.hover_at(&analysed, range.end)));
        if let Ok(Ok((plain, _html))) = hover {
            let plain = plain.trim();
            if !plain.is_empty() && plain != "No documentation found" {
                return Some(plain.to_owned());
            }
        }
        variable_type(&self.shared, &code[range])
    }
}

/// `name: type` for a variable defined by an earlier cell.
pub(super) fn variable_type(shared: &Shared, name: &str) -> Option<String> {
    lock(&shared.variables)
        .iter()
        .find(|(variable, _)| variable == name)
        .map(|(variable, ty)| format!("{variable}: {ty}"))
}

/// Colon commands that must not run inside the Jupyter kernel process.
fn refused_command(code: &str) -> Option<String> {
    text::leading_commands(code)
        .into_iter()
        .find(|(_, name)| name == ":quit")
        .map(|_| {
            "`:quit` would end the whole Jupyter kernel; use the front end's \
             Shutdown or Restart instead"
                .to_owned()
        })
}

/// `:load_config` prints to the Jupyter kernel's real stdout unless `--quiet` is given.
fn quiet_load_config(code: &str) -> String {
    let mut out = code.to_owned();
    for (range, name) in text::leading_commands(code).into_iter().rev() {
        if name == ":load_config" && !code[range.clone()].contains("--quiet") {
            out.insert_str(range.end, " --quiet");
        }
    }
    out
}

/// Forwards evcxr's stdout/stderr lines to the running cell's sink, on its own thread, in
/// batches of whatever arrived together.
struct Forwarder {
    control: crossbeam_channel::Sender<mpsc::SyncSender<()>>,
}

#[derive(Clone, Copy)]
enum Stream {
    Stdout,
    Stderr,
}

impl Forwarder {
    fn spawn(stdout: Receiver<String>, stderr: Receiver<String>, shared: Arc<Shared>) -> Forwarder {
        let (control, control_rx) = crossbeam_channel::unbounded();
        let spawned = std::thread::Builder::new()
            .name("nbcuda-evcxr-output".to_owned())
            .spawn(move || forward_loop(&stdout, &stderr, &control_rx, &shared));
        if let Err(error) = spawned {
            tracing::error!("cannot start the evcxr output thread: {error}");
        }
        Forwarder { control }
    }

    /// Returns once every line evcxr has received so far, and stderr lines arriving within
    /// [`STDERR_SETTLE`], went to the current sink.
    fn flush(&self) {
        let (done, wait) = mpsc::sync_channel(1);
        if self.control.send(done).is_ok() {
            let _ = wait.recv_timeout(Duration::from_secs(2));
        }
    }
}

fn forward_loop(
    stdout: &Receiver<String>,
    stderr: &Receiver<String>,
    control: &Receiver<mpsc::SyncSender<()>>,
    shared: &Shared,
) {
    loop {
        let mut select = Select::new();
        let out_index = select.recv(stdout);
        let err_index = select.recv(stderr);
        let control_index = select.recv(control);
        let operation = select.select();
        let index = operation.index();
        if index == control_index {
            let Ok(done) = operation.recv(control) else {
                return;
            };
            settle(stdout, stderr, shared);
            let _ = done.send(());
        } else {
            let (stream, receiver) = if index == out_index {
                (Stream::Stdout, stdout)
            } else {
                debug_assert_eq!(index, err_index);
                (Stream::Stderr, stderr)
            };
            match operation.recv(receiver) {
                Ok(line) => forward(stream, line, receiver, shared),
                Err(_) => return, // evcxr's context is gone
            }
        }
    }
}

/// Forwards everything already queued, then waits for stderr to stay quiet for a moment.
fn settle(stdout: &Receiver<String>, stderr: &Receiver<String>, shared: &Shared) {
    loop {
        let mut select = Select::new();
        let out_index = select.recv(stdout);
        select.recv(stderr);
        let Ok(operation) = select.select_timeout(STDERR_SETTLE) else {
            return;
        };
        let (stream, receiver) = if operation.index() == out_index {
            (Stream::Stdout, stdout)
        } else {
            (Stream::Stderr, stderr)
        };
        match operation.recv(receiver) {
            Ok(line) => forward(stream, line, receiver, shared),
            Err(_) => return,
        }
    }
}

/// Sends `first` and whatever else is already waiting on the same stream as one output.
fn forward(stream: Stream, first: String, receiver: &Receiver<String>, shared: &Shared) {
    const MAX_BATCH: usize = 1000;
    let mut lines = vec![first];
    while lines.len() < MAX_BATCH {
        match receiver.try_recv() {
            Ok(line) => lines.push(line),
            Err(_) => break,
        }
    }
    if let (Stream::Stderr, Some(capture)) = (stream, lock(&shared.stderr_capture).as_mut()) {
        capture.extend(lines.iter().cloned());
    }
    // The child's note that `?` returned an error is for the engine, not the user.
    lines.retain(|l| l != super::child_marker::USER_ERROR_MARKER);
    if lines.is_empty() {
        return;
    }
    let mut text = lines.join("\n");
    text.push('\n');
    let sink = lock(&shared.sink).clone();
    match (sink, stream) {
        (Some(sink), Stream::Stdout) => sink(CellOutput::Stdout(text)),
        (Some(sink), Stream::Stderr) => sink(CellOutput::Stderr(text)),
        (None, _) => tracing::debug!("evcxr output outside a cell: {text}"),
    }
}

/// The error a cell's `?` returned: the last stderr line evcxr printed for it, just before the
/// child's marker, and the stderr lines up to there (None when there is no marker).
fn user_error(stderr_lines: &[String]) -> Option<(String, Vec<String>)> {
    let at = stderr_lines
        .iter()
        .rposition(|l| l == super::child_marker::USER_ERROR_MARKER)?;
    let before = &stderr_lines[..at];
    let last = before.iter().rev().find(|l| !l.trim().is_empty());
    let message = match last {
        Some(line) => line.clone(),
        None => "the cell returned an error".into(),
    };
    Some((message, before.to_vec()))
}
