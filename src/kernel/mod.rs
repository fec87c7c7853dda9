//! The interpreter of the nbcuda Jupyter kernel: it splits each cell into a cell magic, magic
//! lines and Rust runs, and routes them to `magics` (the command language, which owns the
//! device state) and `rust` (evcxr), in order. It implements the protocol's [`Interpreter`]
//! trait and knows nothing of sockets or message formats.

pub mod cells;
pub mod nb_crate;
pub mod nb_server;
pub mod scratch;

use crate::magics::complete_args::SessionNames;
use crate::magics::{MagicError, Magics};
use crate::rust::{InputFn, RustCellError, RustEngine, RustInterrupt};
use cells::{is_magic_line, split_cell, Segment};
use nb::ErrorKind;
use nb_server::{HostError, NbHost, NbServer};
use protocol::output::{CellOutput, MimeBundle, OutputSink};
use protocol::{CellIo, ExecuteOutcome, Interpreter, KernelInfo};
use serde_json::json;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Start the Jupyter kernel on `connection_file` and serve until shutdown.
pub fn run(connection_file: &Path) -> anyhow::Result<()> {
    // First, while this is the only thread: they set PATH, EVCXR_TMPDIR and TMPDIR.
    crate::rust::toolchain::put_rustup_bin_on_path();
    let scratch = scratch::Scratch::for_this_kernel();
    let interpreter = Arc::new(NbcudaInterpreter::new());
    *lock(&interpreter.scratch) = scratch;
    protocol::serve(connection_file, interpreter)
}

/// The nbcuda interpreter: Rust cells, `%%cuda` cells and magic lines.
pub struct NbcudaInterpreter {
    rust: RustEngine,
    rust_interrupt: RustInterrupt,
    magics: Arc<Mutex<Magics>>,
    /// Where output of the running cell goes; `nb::exec` from a Rust cell writes there too.
    current_sink: Arc<Mutex<Option<OutputSink>>>,
    /// The errors `nb::exec` returned in the running cell, to give a Rust cell that fails with
    /// one its whole message (see [`nb_error_of`]).
    nb_errors: Arc<Mutex<Vec<HostError>>>,
    /// Serves the `nb` crate; dropped (socket removed) at shutdown.
    nb_server: Mutex<Option<NbServer>>,
    /// The folder evcxr builds in (see `scratch`); removed at shutdown.
    scratch: Mutex<Option<scratch::Scratch>>,
    /// Raised by the interrupt button; magics and simulator launches poll it.
    cancel: Arc<AtomicBool>,
    /// The active backend's name, readable while a cell holds the magics lock.
    backend: Mutex<&'static str>,
    rustc_version: Arc<OnceLock<String>>,
    /// Why ptxsim runs instead of a GPU, when it does (said once, in the banner).
    backend_note: Option<String>,
    /// The session's names as of the last time completion or a cell saw them: what magic lines
    /// complete to while a cell holds `magics` (another client's, or this one's).
    names: Mutex<SessionNames>,
}

impl Default for NbcudaInterpreter {
    fn default() -> Self {
        Self::new()
    }
}

impl NbcudaInterpreter {
    pub fn new() -> NbcudaInterpreter {
        let magics = Magics::new();
        let backend = magics.backend_name();
        let backend_note = magics.backend_note();
        let magics = Arc::new(Mutex::new(magics));
        let cancel = Arc::new(AtomicBool::new(false));
        let current_sink: Arc<Mutex<Option<OutputSink>>> = Arc::new(Mutex::new(None));
        let nb_errors = Arc::new(Mutex::new(Vec::new()));
        let host = Arc::new(ArrayHost {
            magics: magics.clone(),
            sink: current_sink.clone(),
            cancel: cancel.clone(),
            errors: nb_errors.clone(),
        });
        let (mut env, mut prelude) = (Vec::new(), crate::rust::Prelude::default());
        let nb_server = match NbServer::start(host) {
            Ok(server) => {
                env.push((
                    nb::SOCKET_ENV.to_string(),
                    server.socket_path().to_string_lossy().into_owned(),
                ));
                match nb_crate::materialize() {
                    Ok(dir) => prelude = nb_crate::prelude(&dir),
                    Err(e) => tracing::warn!("cannot write the nb crate's sources: {e}"),
                }
                Some(server)
            }
            Err(e) => {
                tracing::warn!("cannot start the nb server: {e}; Rust cells cannot use nb");
                None
            }
        };
        // Load NVRTC now, off the critical path: the first %%cuda cache hit after a restart
        // then needs no dlopen (about 8 ms).
        std::thread::spawn(|| {
            let _ = crate::compile::library::nvrtc_version();
        });
        let rust = RustEngine::start(env, prelude);
        let rust_interrupt = rust.interrupt_handle();
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
            magics,
            current_sink,
            nb_errors,
            nb_server: Mutex::new(nb_server),
            scratch: Mutex::new(None),
            cancel,
            backend: Mutex::new(backend),
            backend_note,
            rustc_version,
            names: Mutex::new(SessionNames::default()),
        }
    }

    fn lock_magics(&self) -> std::sync::MutexGuard<'_, Magics> {
        lock(&self.magics)
    }

    /// The session unless a cell holds it (completion and inspection must not wait for one).
    fn try_lock_magics(&self) -> Option<std::sync::MutexGuard<'_, Magics>> {
        match self.magics.try_lock() {
            Ok(guard) => Some(guard),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    fn run_segment(
        &self,
        segment: &Segment,
        sink: &OutputSink,
        io: &Arc<dyn CellIo>,
    ) -> Result<Option<MimeBundle>, HostError> {
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
            Segment::Rust { code, .. } => {
                let io = io.clone();
                let input: InputFn = Arc::new(move |prompt: &str, password: bool| {
                    io.input(prompt, password).unwrap_or_default()
                });
                let result = self
                    .rust
                    .execute_with_input(code, sink, Some(input))
                    .map_err(|e: RustCellError| match e {
                        RustCellError::UserError { message, stderr } => {
                            nb_error_of(&stderr, &lock(&self.nb_errors))
                                .unwrap_or((ErrorKind::Other, message))
                        }
                        e => (e.ename(), e.to_string()),
                    })?;
                Ok(route_rust_result(result, sink))
            }
        }
    }
}

/// What a Rust cell's content becomes: a unit value shows nothing; plain text is the
/// `execute_result`; rich content (HTML, images, … printed with `EVCXR_BEGIN_CONTENT` or shown by
/// `evcxr_display`) goes out as `display_data`, the way front ends expect rich output.
fn route_rust_result(result: Option<MimeBundle>, sink: &OutputSink) -> Option<MimeBundle> {
    let bundle = result?;
    let plain_only = bundle.keys().all(|k| k == "text/plain");
    if plain_only {
        return match bundle.get("text/plain").and_then(|v| v.as_str()) {
            Some("()") | None => None,
            Some(_) => Some(bundle),
        };
    }
    sink(protocol::output::CellOutput::Display {
        data: bundle,
        metadata: serde_json::Map::new(),
        display_id: None,
    });
    None
}

/// Parse every magic line and cell-magic header of the cell, running nothing.
fn check_magic_syntax(segments: &[Segment]) -> Result<(), MagicError> {
    for segment in segments {
        match segment {
            Segment::Magic { line, line_no } => crate::magics::check_line(line, *line_no)?,
            Segment::CellMagic { header, .. } => crate::magics::check_cell_header(header)?,
            Segment::Rust { .. } => {}
        }
    }
    Ok(())
}

/// `%launch?` / `%%cuda?`: the name of the magic whose help is asked for.
fn help_query(code: &str) -> Option<&str> {
    let t = code.trim();
    let name = t.strip_suffix('?')?.trim_start_matches('%');
    (t.starts_with('%')
        && !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then_some(name)
}

/// Lock a mutex even if a panic poisoned it: a bad cell must not take the Jupyter kernel down.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The interpreter's side of the `nb` server: arrays and magic lines on behalf of Rust cells.
struct ArrayHost {
    magics: Arc<Mutex<Magics>>,
    sink: Arc<Mutex<Option<OutputSink>>>,
    cancel: Arc<AtomicBool>,
    /// The errors `nb::exec` returned in the running cell (the last [`MAX_NB_ERRORS`]).
    errors: Arc<Mutex<Vec<HostError>>>,
}

/// How many `nb::exec` errors of one cell are kept for [`nb_error_of`].
const MAX_NB_ERRORS: usize = 16;

/// The `nb` error a Rust cell's `?` returned, whole: evcxr prints the error's `Display`
/// (`ENAME: message`, often several lines: the magic line and a caret under the token) on
/// stderr and the engine sees only its last line as the message; when the stderr lines before
/// the end of the error are exactly one of this cell's `nb::exec` errors, that error is it.
fn nb_error_of(stderr: &[String], errors: &[HostError]) -> Option<HostError> {
    let end = stderr.iter().rposition(|l| !l.trim().is_empty())? + 1;
    let printed = &stderr[..end];
    errors.iter().rev().find_map(|(ename, message)| {
        let shown = format!("{ename}: {message}");
        let lines: Vec<&str> = shown.trim_end().lines().collect();
        let tail = printed.get(printed.len().checked_sub(lines.len())?..)?;
        tail.iter()
            .map(|l| l.trim_end())
            .eq(lines.iter().map(|l| l.trim_end()))
            .then(|| (*ename, message.clone()))
    })
}

fn gpu_err(e: crate::gpu::GpuError) -> HostError {
    (e.ename, e.message)
}

impl ArrayHost {
    /// `e` as the `nb` client gets it, remembered whole for the cell's error reply.
    fn nb_error(&self, e: MagicError) -> HostError {
        let e = magic_error(e);
        let mut errors = lock(&self.errors);
        if errors.len() >= MAX_NB_ERRORS {
            errors.remove(0);
        }
        errors.push(e.clone());
        e
    }
}

impl NbHost for ArrayHost {
    fn put(
        &self,
        name: &str,
        dtype: &str,
        shape: Vec<usize>,
        data: &[u8],
    ) -> Result<(), HostError> {
        let dt = crate::gpu::Dtype::parse(dtype)
            .ok_or_else(|| (ErrorKind::Argument, format!("unknown dtype '{dtype}'")))?;
        let expected = shape
            .iter()
            .try_fold(dt.size(), |a, &d| a.checked_mul(d))
            .ok_or_else(|| (ErrorKind::Argument, format!("shape {shape:?} is too large")))?;
        if expected != data.len() {
            return Err((
                ErrorKind::Argument,
                format!(
                    "shape {shape:?} of {dtype} needs {expected} bytes, got {}",
                    data.len()
                ),
            ));
        }
        lock(&self.magics)
            .device()
            .create_array(name, dt, shape, data)
            .map_err(gpu_err)
    }

    fn get(&self, name: &str) -> Result<(String, Vec<usize>, Vec<u8>), HostError> {
        let mut magics = lock(&self.magics);
        let dev = magics.device();
        let info = dev
            .array(name)
            .ok_or_else(|| (ErrorKind::Argument, format!("no array named '{name}'")))?;
        let data = dev.read_array(name).map_err(gpu_err)?;
        Ok((info.dtype.name().to_string(), info.shape, data))
    }

    fn exec(&self, line: &str) -> Result<Option<String>, HostError> {
        let line = line.trim();
        if !cells::is_magic_line(line) || line.starts_with("%%") {
            return Err((
                ErrorKind::Syntax,
                format!("nb::exec takes one magic line starting with '%', got {line:?}"),
            ));
        }
        let sink = lock(&self.sink)
            .clone()
            .unwrap_or_else(|| Arc::new(|_| {}) as OutputSink);
        let result = lock(&self.magics)
            .run_line(line, 1, &sink, &self.cancel)
            .map_err(|e| self.nb_error(e))?;
        Ok(result.and_then(|b| {
            b.get("text/plain")
                .and_then(|v| v.as_str())
                .map(str::to_string)
        }))
    }

    fn profile(&self, launch: &str) -> Result<MimeBundle, HostError> {
        lock(&self.magics)
            .profile_metrics(launch)
            .map_err(|e| self.nb_error(e))
    }

    fn free(&self, name: &str) -> Result<(), HostError> {
        lock(&self.magics)
            .device()
            .free_array(name)
            .map_err(gpu_err)
    }

    fn list(&self) -> Vec<(String, String, Vec<usize>)> {
        lock(&self.magics)
            .device()
            .arrays()
            .into_iter()
            .map(|a| (a.name, a.dtype.name().to_string(), a.shape))
            .collect()
    }

    fn backend(&self) -> String {
        lock(&self.magics).backend_name().to_string()
    }

    fn display(&self, data: MimeBundle, metadata: serde_json::Map<String, serde_json::Value>) {
        let sink = lock(&self.sink).clone();
        if let Some(sink) = sink {
            sink(CellOutput::Display {
                data,
                metadata,
                display_id: None,
            });
        }
    }
}

fn magic_error(e: MagicError) -> HostError {
    (e.ename, e.message)
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
        let backend = *lock(&self.backend);
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
                "nbcuda {}: Rust cells (evcxr), %%cuda cells (NVRTC) and magic lines. Backend: {backend}{}. Type %lsmagic for the commands.",
                env!("CARGO_PKG_VERSION"),
                self.backend_note
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            ),
            help_links: vec![("nbcuda magics: %help".into(), "https://github.com/".into())],
        }
    }

    fn execute(&self, code: &str, _execution_count: u64, io: Arc<dyn CellIo>) -> ExecuteOutcome {
        self.cancel.store(false, Ordering::SeqCst);
        if let Some(name) = help_query(code) {
            return self.page_help(name);
        }
        let sink: OutputSink = {
            let io = io.clone();
            Arc::new(move |o| io.publish(o))
        };
        let segments = split_cell(code);
        // A cell with a malformed magic line runs none of its lines.
        if let Err(e) = check_magic_syntax(&segments) {
            return error_outcome(e.ename, &e.message);
        }
        *lock(&self.current_sink) = Some(sink.clone());
        lock(&self.nb_errors).clear();
        let mut outcome = ExecuteOutcome::Ok(None);
        for segment in segments {
            if self.cancel.load(Ordering::SeqCst) {
                outcome = error_outcome(ErrorKind::Interrupted, "the cell was interrupted");
                break;
            }
            match self.run_segment(&segment, &sink, &io) {
                Ok(r) => outcome = ExecuteOutcome::Ok(r),
                Err((ename, message)) => {
                    outcome = error_outcome(ename, &message);
                    break;
                }
            }
        }
        *lock(&self.current_sink) = None;
        {
            let mut magics = self.lock_magics();
            // A GPU context rebuilt on the way (after a sticky fault) is said once, in this cell.
            if let Some(notice) = magics.device().take_notice() {
                sink(CellOutput::Stderr(format!("{}\n", notice.trim_end())));
            }
            *lock(&self.names) = magics.session_names();
        }
        self.refresh_backend();
        outcome
    }

    fn complete(&self, code: &str, cursor: usize) -> (Vec<String>, usize, usize) {
        let (start, line) = line_at(code, cursor);
        let in_cell_magic_body = is_cell_magic(code) && code[..start].trim().starts_with("%%");
        if is_magic_line(line) || line.trim_start().starts_with("%%") && !in_cell_magic_body {
            // A running cell holds the session: complete from its names as last seen.
            let names = match self.try_lock_magics() {
                Some(magics) => {
                    let fresh = magics.session_names();
                    *lock(&self.names) = fresh.clone();
                    fresh
                }
                None => lock(&self.names).clone(),
            };
            let (matches, s, e) = crate::magics::complete::complete(&names, line, cursor - start);
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
            // A running cell holds the session: inspect what needs none (magics, dtypes).
            return match self.try_lock_magics() {
                Some(mut magics) => magics.inspect(line, cursor - start),
                None => crate::magics::complete::inspect(None, line, cursor - start),
            };
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
            return if code.ends_with("\n\n")
                || code.trim_end().lines().count() <= 1 && !code.trim_end().ends_with('\\')
            {
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

    /// The process leaves with `exit` right after this, which runs no destructors: remove what
    /// this Jupyter kernel made on disk now (the `nb` socket's folder, evcxr's build folder).
    fn shutdown(&self, _restart: bool) {
        drop(lock(&self.nb_server).take());
        drop(lock(&self.scratch).take());
    }
}

impl NbcudaInterpreter {
    /// The help of one magic, for the pager.
    fn page_help(&self, name: &str) -> ExecuteOutcome {
        let text = Arc::new(Mutex::new(String::new()));
        let collected = text.clone();
        let sink: OutputSink = Arc::new(move |o| {
            if let protocol::output::CellOutput::Stdout(t) = o {
                lock(&collected).push_str(&t);
            }
        });
        let result = self
            .lock_magics()
            .run_line(&format!("%help {name}"), 1, &sink, &self.cancel);
        match result {
            Ok(bundle) => {
                let mut page = lock(&text).clone();
                if let Some(t) = bundle
                    .as_ref()
                    .and_then(|b| b.get("text/plain"))
                    .and_then(|v| v.as_str())
                {
                    page.push_str(t);
                }
                let mut data = MimeBundle::new();
                data.insert("text/plain".into(), json!(page));
                ExecuteOutcome::Page(data)
            }
            Err(e) => error_outcome(e.ename, &e.message),
        }
    }

    fn refresh_backend(&self) {
        let name = self.lock_magics().backend_name();
        *lock(&self.backend) = name;
    }
}

fn error_outcome(ename: ErrorKind, message: &str) -> ExecuteOutcome {
    let mut traceback = vec![format!(
        "\x1b[0;31m{ename}\x1b[0m: {}",
        message.lines().next().unwrap_or("")
    )];
    traceback.extend(message.lines().skip(1).map(str::to_string));
    ExecuteOutcome::Error {
        ename: ename.as_str().to_string(),
        evalue: message.to_string(),
        traceback,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_queries() {
        assert_eq!(help_query("%launch?"), Some("launch"));
        assert_eq!(help_query("  %%cuda? "), Some("cuda"));
        assert_eq!(help_query("x?"), None);
        assert_eq!(help_query("%launch add[1,1](x)?"), None);
    }

    #[test]
    fn rust_results_are_routed_by_content() {
        let shown = Arc::new(Mutex::new(0));
        let s = shown.clone();
        let sink: OutputSink = Arc::new(move |_| *lock(&s) += 1);
        let mut unit = MimeBundle::new();
        unit.insert("text/plain".into(), json!("()"));
        assert!(route_rust_result(Some(unit), &sink).is_none());
        let mut plain = MimeBundle::new();
        plain.insert("text/plain".into(), json!("42"));
        assert!(route_rust_result(Some(plain), &sink).is_some());
        let mut html = MimeBundle::new();
        html.insert("text/html".into(), json!("<b>x</b>"));
        assert!(route_rust_result(Some(html), &sink).is_none());
        assert_eq!(*lock(&shown), 1);
    }

    #[test]
    fn line_at_finds_the_cursor_line() {
        let code = "let a = 1;\n%launch add[auto](x)\nfoo";
        let cursor = code.find("add").unwrap_or(0) + 2;
        let (start, line) = line_at(code, cursor);
        assert_eq!(line, "%launch add[auto](x)");
        assert_eq!(start, 11);
        assert_eq!(line_at(code, code.len()).1, "foo");
    }

    #[test]
    fn nb_errors_are_recovered_whole_from_stderr() {
        let message = "line 1: unknown name 'q' (not a %set scalar or an array)\n    %set z = q\n             ^";
        let errors = vec![
            (ErrorKind::Argument, "other".to_string()),
            (ErrorKind::Syntax, message.to_string()),
        ];
        let mut stderr: Vec<String> = vec!["a line the cell printed".into()];
        stderr.extend(
            format!("SyntaxError: {message}")
                .lines()
                .map(str::to_string),
        );
        stderr.push(String::new());
        assert_eq!(
            nb_error_of(&stderr, &errors),
            Some((ErrorKind::Syntax, message.to_string()))
        );
        // Another error (a std::io::Error, say) ending the cell keeps the engine's message.
        let io = vec!["No such file or directory (os error 2)".to_string()];
        assert_eq!(nb_error_of(&io, &errors), None);
        assert_eq!(nb_error_of(&[], &errors), None);
    }
}
