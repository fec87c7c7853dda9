//! [`RemoteBackend`]: the `Backend` trait answered by a GPU worker process. The Jupyter kernel
//! keeps array names, host copies and cells; the worker holds the CUDA context. When a CUDA
//! kernel faults (a sticky error that no context rebuild in the same process survives on
//! current drivers) or the worker dies, `reset` starts a fresh worker and `DeviceState`
//! restores arrays from their host copies and reloads the cells.
//!
//! Only process plumbing and message passing here; what each call means is the backend's
//! business in the worker.

use super::server::SOCKET_FD;
use super::shm::SharedBuf;
use super::wire::{self, Answer, Hello, Reply, Request};
use crate::compile::Target;
use crate::gpu::backend::{
    Backend, BackendLaunch, BackendLaunchError, BackendReport, DevPtr, EventId, GraphId, GraphNode,
    KernelMeta, ModuleId, ModuleImage, Occupancy, StreamId,
};
use crate::gpu::{CudaOptions, DeviceDescription, DeviceLimits, GpuError};
use nb::ErrorKind;
use std::cell::RefCell;
use std::io::{BufReader, BufWriter};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The program that serves as the worker: `$NBCUDA_GPU_WORKER`, else this executable.
fn worker_program() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("NBCUDA_GPU_WORKER") {
        return Ok(PathBuf::from(p));
    }
    std::env::current_exe()
        .map_err(|e| format!("cannot find this program to start a GPU worker: {e}"))
}

/// Sends SIGUSR1 to the worker when the current call's interrupt flag is raised.
struct Watch {
    pid: AtomicI32,
    current: Mutex<Option<Arc<AtomicBool>>>,
    stop: AtomicBool,
}

impl Watch {
    fn start(pid: i32) -> Arc<Watch> {
        let w = Arc::new(Watch {
            pid: AtomicI32::new(pid),
            current: Mutex::new(None),
            stop: AtomicBool::new(false),
        });
        let seen = w.clone();
        let spawned = std::thread::Builder::new()
            .name("gpu-worker-interrupt".into())
            .spawn(move || {
                while !seen.stop.load(Ordering::Relaxed) {
                    let raised = seen
                        .current
                        .lock()
                        .map(|c| c.as_ref().is_some_and(|f| f.load(Ordering::Relaxed)))
                        .unwrap_or(false);
                    if raised {
                        // SAFETY: signals our own child process.
                        unsafe { libc::kill(seen.pid.load(Ordering::Relaxed), libc::SIGUSR1) };
                        if let Ok(mut c) = seen.current.lock() {
                            *c = None;
                        }
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("no interrupt watcher for the GPU worker: {e}");
        }
        w
    }

    fn set(&self, flag: Option<Arc<AtomicBool>>) {
        if let Ok(mut c) = self.current.lock() {
            *c = flag;
        }
    }
}

struct Worker {
    child: Child,
    reader: BufReader<UnixStream>,
    writer: BufWriter<UnixStream>,
    /// Started under a launcher in its own process group (killed as a group).
    group: bool,
}

/// A program that starts the worker, such as Nsight Compute:
/// `PROGRAM ARGS... WORKER gpu-worker --ordinal N [--sim] --connect SOCKET`. It runs in its own
/// process group, with stdout and stderr into the given files; the worker connects to a socket
/// in `dir` (a launcher need not pass descriptor 3 on to its child).
pub struct Launcher {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub stdout: std::fs::File,
    pub stderr: std::fs::File,
    /// A private folder for the socket.
    pub dir: PathBuf,
    /// Raised: kill the launcher and the worker (Jupyter's interrupt).
    pub cancel: Arc<AtomicBool>,
    /// When to kill them at the latest.
    pub deadline: Instant,
}

/// Why a launched worker's process group was killed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stopped {
    Interrupted,
    TimedOut,
}

/// Kills a launched worker's process group once its `cancel` flag is raised or its deadline
/// passes, until stopped.
struct GroupWatch {
    stop: Arc<AtomicBool>,
    fired: Arc<Mutex<Option<Stopped>>>,
}

impl GroupWatch {
    fn start(pgid: i32, cancel: Arc<AtomicBool>, deadline: Instant) -> GroupWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let fired = Arc::new(Mutex::new(None));
        let (stop2, fired2) = (stop.clone(), fired.clone());
        let spawned = std::thread::Builder::new()
            .name("gpu-worker-launcher-watch".into())
            .spawn(move || {
                while !stop2.load(Ordering::Relaxed) {
                    let why = if cancel.load(Ordering::Relaxed) {
                        Some(Stopped::Interrupted)
                    } else if Instant::now() >= deadline {
                        Some(Stopped::TimedOut)
                    } else {
                        None
                    };
                    if let Some(why) = why {
                        if let Ok(mut f) = fired2.lock() {
                            *f = Some(why);
                        }
                        // SAFETY: signals the process group of our own child (it made its
                        // own group: `process_group(0)`).
                        unsafe { libc::killpg(pgid, libc::SIGKILL) };
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("no watch over the launched GPU worker: {e}");
        }
        GroupWatch { stop, fired }
    }

    fn fired(&self) -> Option<Stopped> {
        self.fired.lock().ok().and_then(|f| *f)
    }
}

impl Drop for GroupWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Worker {
    /// Starts the worker under `l` and waits for it to connect (bounded by `l`'s deadline and
    /// interrupt: the watch kills the group).
    fn spawn_under(
        l: Launcher,
        ordinal: usize,
        sim: bool,
    ) -> Result<(Worker, Hello, GroupWatch), String> {
        let program = worker_program()?;
        let path = l.dir.join("worker.sock");
        let _ = std::fs::remove_file(&path);
        let listener = std::os::unix::net::UnixListener::bind(&path)
            .map_err(|e| format!("cannot make a socket in {}: {e}", l.dir.display()))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("cannot use the socket {}: {e}", path.display()))?;
        let mut cmd = Command::new(&l.program);
        cmd.args(&l.args)
            .arg(&program)
            .arg("gpu-worker")
            .arg("--ordinal")
            .arg(ordinal.to_string());
        if sim {
            cmd.arg("--sim");
        }
        cmd.arg("--connect")
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(l.stdout)
            .stderr(l.stderr)
            .process_group(0);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", l.program.display()))?;
        let watch = GroupWatch::start(child.id() as i32, l.cancel, l.deadline);
        let stream = loop {
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => {
                    kill_group(&mut child);
                    let _ = child.wait();
                    return Err(format!("the GPU worker could not connect: {e}"));
                }
            }
            match child.try_wait() {
                Ok(Some(status)) => {
                    let why = match watch.fired() {
                        Some(Stopped::Interrupted) => "it was interrupted".to_string(),
                        Some(Stopped::TimedOut) => "it ran out of time".to_string(),
                        None => describe_exit(status),
                    };
                    return Err(format!(
                        "{} ended before the GPU worker connected ({why})",
                        l.program.display()
                    ));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => {
                    kill_group(&mut child);
                    let _ = child.wait();
                    return Err(format!("cannot wait for {}: {e}", l.program.display()));
                }
            }
        };
        let _ = std::fs::remove_file(&path);
        stream
            .set_nonblocking(false)
            .map_err(|e| format!("cannot use the GPU worker's socket: {e}"))?;
        let read_half = stream
            .try_clone()
            .map_err(|e| format!("cannot use the GPU worker's socket: {e}"))?;
        let mut worker = Worker {
            child,
            reader: BufReader::with_capacity(1 << 16, read_half),
            writer: BufWriter::with_capacity(1 << 16, stream),
            group: true,
        };
        match wire::read_frame::<Hello>(&mut worker.reader) {
            Ok((hello, _)) => Ok((worker, hello, watch)),
            Err(e) => {
                let status = worker.end();
                Err(format!("the GPU worker did not start ({e}; {status})"))
            }
        }
    }

    fn spawn(ordinal: usize, sim: bool) -> Result<(Worker, Hello), String> {
        let program = worker_program()?;
        let (ours, theirs) = UnixStream::pair()
            .map_err(|e| format!("cannot make a socket for the GPU worker: {e}"))?;
        let fd = theirs.as_raw_fd();
        let mut cmd = Command::new(&program);
        cmd.arg("gpu-worker")
            .arg("--ordinal")
            .arg(ordinal.to_string());
        if sim {
            cmd.arg("--sim");
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::null());
        // SAFETY: between fork and exec only dup2 runs (async-signal-safe); it puts the worker's
        // end of the socket on descriptor 3 without close-on-exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(fd, SOCKET_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start the GPU worker {}: {e}", program.display()))?;
        drop(theirs);
        let read_half = ours
            .try_clone()
            .map_err(|e| format!("cannot use the GPU worker's socket: {e}"))?;
        let mut worker = Worker {
            child,
            reader: BufReader::with_capacity(1 << 16, read_half),
            writer: BufWriter::with_capacity(1 << 16, ours),
            group: false,
        };
        match wire::read_frame::<Hello>(&mut worker.reader) {
            Ok((hello, _)) => Ok((worker, hello)),
            Err(e) => {
                let status = worker.end();
                Err(format!("the GPU worker did not start ({e}; {status})"))
            }
        }
    }

    /// Closes the socket and waits briefly for the worker to exit, then kills it. Says how it
    /// ended.
    fn end(&mut self) -> String {
        let _ = self.writer.get_ref().shutdown(std::net::Shutdown::Both);
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            match self.child.try_wait() {
                Ok(Some(s)) => return describe_exit(s),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                _ => {
                    if self.group {
                        kill_group(&mut self.child);
                    }
                    let _ = self.child.kill();
                    return self
                        .child
                        .wait()
                        .map(describe_exit)
                        .unwrap_or_else(|e| format!("cannot wait for it: {e}"));
                }
            }
        }
    }
}

/// Kills the process group of `child`, which leads its own group.
fn kill_group(child: &mut Child) {
    // SAFETY: signals the process group of our own child (`process_group(0)`).
    unsafe { libc::killpg(child.id() as i32, libc::SIGKILL) };
    let _ = child.kill();
}

fn describe_exit(s: std::process::ExitStatus) -> String {
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("it exited with status {c}"),
        (None, Some(sig)) => format!("it was killed by signal {sig}"),
        _ => "it ended".into(),
    }
}

/// A GPU (or, for tests, ptxsim) in a worker process.
pub struct RemoteBackend {
    worker: RefCell<Option<Worker>>,
    ordinal: usize,
    sim: bool,
    name: &'static str,
    limits: DeviceLimits,
    /// Why the device is unusable (the worker's sticky fault, or the worker's death).
    lost: RefCell<Option<String>>,
    /// The last launch's time from device events (sent with its answer).
    last_ms: Option<f64>,
    /// The buffer large copies go through (None until the first; `shared_failed` after
    /// /dev/shm refused one: then copies use the socket).
    shared: RefCell<Option<SharedBuf>>,
    shared_failed: std::cell::Cell<bool>,
    /// How long a call spins for the worker's answer before it blocks.
    spin: Duration,
    /// Sizes of downloads in flight (large ones come back through shared memory).
    downloads: std::collections::HashMap<u64, usize>,
    watch: Arc<Watch>,
    /// A worker started under a launcher: the watch that kills its group.
    launched: Option<GroupWatch>,
}

impl RemoteBackend {
    /// Starts a worker on GPU `ordinal` (`sim`: on ptxsim). `Err` says why not.
    pub fn spawn(ordinal: usize, sim: bool) -> Result<RemoteBackend, String> {
        let (worker, hello) = Worker::spawn(ordinal, sim)?;
        RemoteBackend::from_worker(worker, hello, ordinal, sim, None)
    }

    /// Starts a worker under `launcher` (ncu for `%profile --ncu`) on GPU `ordinal` (`sim`: on
    /// ptxsim). The launcher and the worker are killed when its `cancel` flag is raised or its
    /// deadline passes; [`RemoteBackend::finish`] ends the worker and waits for the launcher.
    pub fn spawn_under(
        launcher: Launcher,
        ordinal: usize,
        sim: bool,
    ) -> Result<RemoteBackend, String> {
        let (worker, hello, watch) = Worker::spawn_under(launcher, ordinal, sim)?;
        RemoteBackend::from_worker(worker, hello, ordinal, sim, Some(watch))
    }

    /// Closes the socket (the worker exits) and waits for the launcher to exit: its exit
    /// status, or why it was killed. For a worker started by [`RemoteBackend::spawn`] it waits
    /// as `Drop` does.
    pub fn finish(mut self) -> Result<std::process::ExitStatus, Stopped> {
        let launched = self.launched.take();
        let Some(mut w) = self.worker.borrow_mut().take() else {
            return match launched.as_ref().and_then(GroupWatch::fired) {
                Some(why) => Err(why),
                None => Ok(std::process::ExitStatus::from_raw(0)),
            };
        };
        let _ = w.writer.get_ref().shutdown(std::net::Shutdown::Both);
        let Some(watch) = launched else {
            w.end();
            return Ok(std::process::ExitStatus::from_raw(0));
        };
        // The watch bounds the wait: at the deadline or an interrupt it kills the group.
        loop {
            match w.child.try_wait() {
                Ok(Some(status)) => {
                    return match watch.fired() {
                        Some(why) => Err(why),
                        None => Ok(status),
                    };
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(_) => {
                    kill_group(&mut w.child);
                    let _ = w.child.wait();
                    return Err(watch.fired().unwrap_or(Stopped::TimedOut));
                }
            }
        }
    }

    /// Why a launched worker's group was killed, if it was.
    pub fn stopped(&self) -> Option<Stopped> {
        self.launched.as_ref().and_then(GroupWatch::fired)
    }

    fn from_worker(
        worker: Worker,
        hello: Hello,
        ordinal: usize,
        sim: bool,
        launched: Option<GroupWatch>,
    ) -> Result<RemoteBackend, String> {
        let (name, limits) = match hello {
            Hello::Ready { backend, limits } => (backend, limits),
            Hello::Failed(why) => {
                let mut worker = worker;
                worker.end();
                return Err(why);
            }
        };
        let name = if name == "cuda" { "cuda" } else { "ptxsim" };
        let watch = Watch::start(worker.child.id() as i32);
        Ok(RemoteBackend {
            worker: RefCell::new(Some(worker)),
            ordinal,
            sim,
            name,
            limits,
            lost: RefCell::new(None),
            last_ms: None,
            shared: RefCell::new(None),
            shared_failed: std::cell::Cell::new(false),
            downloads: std::collections::HashMap::new(),
            spin: wire::spin_time(200),
            watch,
            launched,
        })
    }

    /// One call: the answer and its payload. A worker that stops answering is marked lost.
    fn call(
        &self,
        request: &Request,
        payload: &[u8],
        cancel: Option<&Arc<AtomicBool>>,
    ) -> Result<(Answer, Vec<u8>), GpuError> {
        let mut slot = self.worker.borrow_mut();
        let Some(worker) = slot.as_mut() else {
            return Err(self.lost_error());
        };
        self.watch.set(cancel.cloned());
        let sent = wire::write_frame(&mut worker.writer, request, payload);
        if sent.is_ok() && worker.reader.buffer().is_empty() {
            wire::spin_until_readable(worker.reader.get_ref(), self.spin);
        }
        let got = sent.and_then(|()| wire::read_frame::<Reply>(&mut worker.reader));
        self.watch.set(None);
        match got {
            Ok((reply, bytes)) => {
                *self.lost.borrow_mut() = reply.fault;
                match reply.answer {
                    Answer::Error { ename, message } => {
                        let kind = ErrorKind::from_ename(&ename).unwrap_or(ErrorKind::Device);
                        Err(GpuError::new(kind, message))
                    }
                    answer => Ok((answer, bytes)),
                }
            }
            Err(e) => {
                let status = worker.end();
                *slot = None;
                let why = format!("the GPU worker process stopped ({status}; {e})");
                *self.lost.borrow_mut() = Some(why);
                Err(self.lost_error())
            }
        }
    }

    fn lost_error(&self) -> GpuError {
        let why = self
            .lost
            .borrow()
            .clone()
            .unwrap_or_else(|| "the GPU worker process is gone".into());
        GpuError::fault(format!(
            "the CUDA context was lost ({why}); %reset rebuilds it"
        ))
    }

    /// Runs `f` on a shared buffer of at least `bytes` (None: use the socket).
    fn with_shared<R>(
        &self,
        bytes: usize,
        f: impl FnOnce(&mut SharedBuf) -> Result<R, GpuError>,
    ) -> Option<Result<R, GpuError>> {
        if bytes < SHARED_FROM || self.shared_failed.get() {
            return None;
        }
        let mut slot = self.shared.borrow_mut();
        if slot.as_ref().is_none_or(|b| b.len() < bytes) {
            *slot = None;
            // Grow by powers of two so a few sizes cover a session.
            match SharedBuf::create(bytes.next_power_of_two()) {
                Ok(b) => *slot = Some(b),
                Err(e) => {
                    tracing::warn!("no shared memory for the GPU worker ({e}); using the socket");
                    self.shared_failed.set(true);
                    return None;
                }
            }
        }
        let buf = slot.as_mut()?;
        let r = f(buf);
        buf.unlink(); // the worker holds its mapping; nothing is left in /dev/shm
        Some(r)
    }

    /// Host → device: a plain copy (`stream` None) or an asynchronous one on `Some(stream)`;
    /// large ones through the shared buffer.
    fn send_bytes(
        &self,
        dst: DevPtr,
        data: &[u8],
        stream: Option<Option<StreamId>>,
    ) -> Result<(), GpuError> {
        let shared = self.with_shared(data.len(), |buf| {
            buf.as_mut_slice()[..data.len()].copy_from_slice(data);
            let (path, len, bytes) = (
                buf.path().to_string_lossy().into_owned(),
                buf.len(),
                data.len(),
            );
            let request = match stream {
                None => Request::HtodShared {
                    dst,
                    path,
                    len,
                    bytes,
                },
                Some(stream) => Request::HtodAsyncShared {
                    dst,
                    stream,
                    path,
                    len,
                    bytes,
                },
            };
            self.call(&request, &[], None).map(|_| ())
        });
        let request = match stream {
            None => Request::Htod(dst),
            Some(stream) => Request::HtodAsync { dst, stream },
        };
        shared.unwrap_or_else(|| self.call(&request, data, None).map(|_| ()))
    }

    /// A launch's (or a graph launch's) answer as the backend reports it.
    fn launch_answer(
        &mut self,
        answer: Result<(Answer, Vec<u8>), GpuError>,
    ) -> Result<BackendReport, BackendLaunchError> {
        let fault = |message: String, printf: String| BackendLaunchError::Fault {
            report: None,
            message,
            printf,
        };
        match answer {
            Ok((
                Answer::Launched {
                    printf,
                    warp_instructions,
                    elapsed_ms,
                    ..
                },
                _,
            )) => {
                self.last_ms = elapsed_ms;
                Ok(BackendReport {
                    printf,
                    findings: Vec::new(),
                    warp_instructions,
                    counters: None,
                    sim_workers: None,
                })
            }
            Ok((Answer::LaunchRejected(m), _)) => Err(BackendLaunchError::Rejected(m)),
            Ok((
                Answer::LaunchFault {
                    message,
                    printf,
                    report,
                },
                _,
            )) => {
                let message = match report {
                    Some(r) => format!("{message}: {r}"),
                    None => message,
                };
                Err(fault(message, printf))
            }
            Ok((a, _)) => Err(BackendLaunchError::Rejected(unexpected(&a).message)),
            Err(e) if e.ename == ErrorKind::DeviceFault => Err(fault(e.message, String::new())),
            Err(e) => Err(BackendLaunchError::Rejected(e.message)),
        }
    }

    fn simple(&self, request: Request) -> Result<Answer, GpuError> {
        self.call(&request, &[], None).map(|(a, _)| a)
    }
}

/// Copies of at least this many bytes go through shared memory.
const SHARED_FROM: usize = 1 << 20;

fn unexpected(a: &Answer) -> GpuError {
    GpuError::launch(format!("the GPU worker answered out of turn: {a:?}"))
}

impl Drop for RemoteBackend {
    fn drop(&mut self) {
        self.watch.stop.store(true, Ordering::Relaxed);
        if let Some(mut w) = self.worker.borrow_mut().take() {
            w.end();
        }
    }
}

impl Backend for RemoteBackend {
    fn name(&self) -> &'static str {
        self.name
    }

    fn describe(&self) -> DeviceDescription {
        match self.simple(Request::Describe) {
            Ok(Answer::Description(d)) => DeviceDescription {
                backend: self.name,
                name: d.name,
                rows: d.rows,
                limits: d.limits,
                peak_bandwidth_gbs: d.peak_bandwidth_gbs,
            },
            other => DeviceDescription {
                backend: self.name,
                name: format!("GPU {} (unavailable)", self.ordinal),
                rows: vec![(
                    "state".into(),
                    match other {
                        Err(e) => e.message,
                        Ok(a) => unexpected(&a).message,
                    },
                )],
                limits: self.limits.clone(),
                peak_bandwidth_gbs: None,
            },
        }
    }

    fn limits(&self) -> DeviceLimits {
        self.limits.clone()
    }

    fn compile_target(&self, options: &CudaOptions) -> Target {
        match self.simple(Request::CompileTarget(options.clone())) {
            Ok(Answer::Target(t)) => t,
            _ => Target::sim(options),
        }
    }

    fn alloc(&mut self, bytes: usize) -> Result<DevPtr, GpuError> {
        match self.simple(Request::Alloc(bytes))? {
            Answer::Value(p) => Ok(p),
            a => Err(unexpected(&a)),
        }
    }

    fn free(&mut self, ptr: DevPtr) -> Result<(), GpuError> {
        self.simple(Request::Free(ptr)).map(|_| ())
    }

    fn htod(&mut self, dst: DevPtr, data: &[u8]) -> Result<(), GpuError> {
        self.send_bytes(dst, data, None)
    }

    fn dtoh(&self, src: DevPtr, out: &mut [u8]) -> Result<(), GpuError> {
        let n = out.len();
        let shared = self.with_shared(n, |buf| {
            let request = Request::DtohShared {
                src,
                path: buf.path().to_string_lossy().into_owned(),
                len: buf.len(),
                bytes: n,
            };
            self.call(&request, &[], None)?;
            out.copy_from_slice(&buf.as_slice()[..n]);
            Ok(())
        });
        if let Some(r) = shared {
            return r;
        }
        let request = Request::Dtoh {
            src,
            bytes: out.len(),
        };
        match self.call(&request, &[], None)? {
            (Answer::Bytes, bytes) if bytes.len() == out.len() => {
                out.copy_from_slice(&bytes);
                Ok(())
            }
            (a, _) => Err(unexpected(&a)),
        }
    }

    fn htod_async(
        &mut self,
        dst: DevPtr,
        data: &[u8],
        stream: Option<StreamId>,
    ) -> Result<(), GpuError> {
        self.send_bytes(dst, data, Some(stream))
    }

    fn dtoh_async(
        &mut self,
        src: DevPtr,
        bytes: usize,
        stream: Option<StreamId>,
    ) -> Result<Option<u64>, GpuError> {
        match self.simple(Request::DtohAsync { src, bytes, stream })? {
            Answer::MaybeValue(id) => {
                if let Some(id) = id {
                    self.downloads.insert(id, bytes);
                }
                Ok(id)
            }
            a => Err(unexpected(&a)),
        }
    }

    fn take_download(&mut self, id: u64) -> Result<Vec<u8>, GpuError> {
        let bytes = self.downloads.remove(&id).unwrap_or(0);
        let shared = self.with_shared(bytes, |buf| {
            let request = Request::TakeDownloadShared {
                id,
                path: buf.path().to_string_lossy().into_owned(),
                len: buf.len(),
                bytes,
            };
            self.call(&request, &[], None)?;
            Ok(buf.as_slice()[..bytes].to_vec())
        });
        if let Some(r) = shared {
            return r;
        }
        match self.call(&Request::TakeDownload(id), &[], None)? {
            (Answer::Bytes, bytes) => Ok(bytes),
            (a, _) => Err(unexpected(&a)),
        }
    }

    fn dtod(&mut self, dst: DevPtr, src: DevPtr, bytes: usize) -> Result<(), GpuError> {
        self.simple(Request::Dtod { dst, src, bytes }).map(|_| ())
    }

    fn load_module(
        &mut self,
        image: ModuleImage<'_>,
    ) -> Result<(ModuleId, Vec<KernelMeta>), GpuError> {
        let (cubin, bytes) = match image {
            ModuleImage::Ptx(p) => (false, p.as_bytes()),
            ModuleImage::Cubin(c) => (true, c),
        };
        match self.call(&Request::LoadModule { cubin }, bytes, None)? {
            (Answer::Module(id, metas), _) => Ok((id, metas)),
            (a, _) => Err(unexpected(&a)),
        }
    }

    fn unload_module(&mut self, module: ModuleId) {
        let _ = self.simple(Request::UnloadModule(module));
    }

    fn launch(
        &mut self,
        module: ModuleId,
        kernel: &str,
        config: &BackendLaunch,
        params: &[&[u8]],
    ) -> Result<BackendReport, BackendLaunchError> {
        let request = Request::Launch {
            module,
            kernel: kernel.to_string(),
            grid: config.grid,
            block: config.block,
            shared_bytes: config.shared_bytes,
            stream: config.stream,
            check: config.check,
            cancellable: config.cancel.is_some(),
            stack_bytes: config.stack_bytes,
            cooperative: config.cooperative,
            param_sizes: params.iter().map(|p| p.len()).collect(),
        };
        let payload = params.concat();
        self.last_ms = None;
        let answer = self.call(&request, &payload, config.cancel.as_ref());
        self.launch_answer(answer)
    }

    fn build_graph(&mut self, nodes: &[GraphNode]) -> Result<Option<GraphId>, GpuError> {
        match self.simple(Request::BuildGraph(nodes.to_vec()))? {
            Answer::MaybeValue(g) => Ok(g),
            a => Err(unexpected(&a)),
        }
    }

    fn launch_graph(
        &mut self,
        graph: GraphId,
        cancel: Option<&Arc<AtomicBool>>,
    ) -> Result<BackendReport, BackendLaunchError> {
        let request = Request::LaunchGraph {
            graph,
            cancellable: cancel.is_some(),
        };
        self.last_ms = None;
        let answer = self.call(&request, &[], cancel);
        self.launch_answer(answer)
    }

    fn launch_nodes(
        &mut self,
        nodes: &[GraphNode],
        cancel: Option<&Arc<AtomicBool>>,
    ) -> Result<BackendReport, BackendLaunchError> {
        let request = Request::LaunchNodes {
            nodes: nodes.to_vec(),
            cancellable: cancel.is_some(),
        };
        self.last_ms = None;
        let answer = self.call(&request, &[], cancel);
        self.launch_answer(answer)
    }

    fn destroy_graph(&mut self, graph: GraphId) {
        let _ = self.simple(Request::DestroyGraph(graph));
    }

    fn alloc_managed(&mut self, bytes: usize) -> Result<DevPtr, GpuError> {
        match self.simple(Request::AllocManaged(bytes))? {
            Answer::Value(p) => Ok(p),
            a => Err(unexpected(&a)),
        }
    }

    fn has_managed_memory(&self) -> bool {
        self.name == "cuda"
    }

    fn prefetch(&mut self, ptr: DevPtr, bytes: usize, to_device: bool) -> Result<(), GpuError> {
        self.simple(Request::Prefetch {
            ptr,
            bytes,
            to_device,
        })
        .map(|_| ())
    }

    fn create_stream(&mut self) -> Result<StreamId, GpuError> {
        match self.simple(Request::CreateStream)? {
            Answer::Value(s) => Ok(s),
            a => Err(unexpected(&a)),
        }
    }

    fn destroy_stream(&mut self, stream: StreamId) {
        let _ = self.simple(Request::DestroyStream(stream));
    }

    fn record_event(&mut self, stream: Option<StreamId>) -> Result<EventId, GpuError> {
        match self.simple(Request::RecordEvent(stream))? {
            Answer::Value(e) => Ok(e),
            a => Err(unexpected(&a)),
        }
    }

    fn event_elapsed_ms(&mut self, start: EventId, end: EventId) -> Result<f64, GpuError> {
        match self.simple(Request::EventElapsed(start, end))? {
            Answer::Ms(ms) => Ok(ms),
            a => Err(unexpected(&a)),
        }
    }

    fn destroy_event(&mut self, event: EventId) {
        let _ = self.simple(Request::DestroyEvent(event));
    }

    fn stream_wait_event(
        &mut self,
        stream: Option<StreamId>,
        event: EventId,
    ) -> Result<(), GpuError> {
        match self.simple(Request::StreamWaitEvent(stream, event))? {
            Answer::Unit => Ok(()),
            a => Err(unexpected(&a)),
        }
    }

    fn synchronize(&mut self, stream: Option<StreamId>) -> Result<(), GpuError> {
        let request = Request::Synchronize {
            stream,
            cancellable: false,
        };
        self.call(&request, &[], None).map(|_| ())
    }

    fn reset(&mut self) -> Result<bool, GpuError> {
        if self.lost.borrow().is_none() {
            return match self.simple(Request::Reset)? {
                Answer::Flag(kept) => Ok(kept),
                a => Err(unexpected(&a)),
            };
        }
        // A sticky fault poisons the worker process: start a fresh one.
        if let Some(mut w) = self.worker.borrow_mut().take() {
            w.end();
        }
        let fresh = RemoteBackend::spawn(self.ordinal, self.sim).map_err(|why| {
            GpuError::fault(format!(
                "the CUDA context could not be rebuilt: {why}; restart the Jupyter kernel"
            ))
        })?;
        let mut fresh = fresh;
        std::mem::swap(self, &mut fresh);
        Ok(false)
    }

    fn can_lose_memory(&self) -> bool {
        true
    }

    fn worker_pid(&self) -> Option<u32> {
        self.worker.borrow().as_ref().map(|w| w.child.id())
    }

    fn fault(&self) -> Option<String> {
        self.lost.borrow().clone()
    }

    fn last_launch_ms(&self) -> Option<f64> {
        self.last_ms
    }

    fn take_printf(&mut self) -> String {
        match self.simple(Request::TakePrintf) {
            Ok(Answer::Text(t)) => t,
            _ => String::new(),
        }
    }

    fn occupancy(
        &mut self,
        module: ModuleId,
        kernel: &str,
        block_sizes: &[u32],
        dynamic_shared: u32,
    ) -> Option<Vec<Occupancy>> {
        let request = Request::Occupancy {
            module,
            kernel: kernel.to_string(),
            block_sizes: block_sizes.to_vec(),
            dynamic_shared,
        };
        match self.simple(request) {
            Ok(Answer::Occupancy(o)) => o,
            _ => None,
        }
    }

    fn symbol(
        &mut self,
        module: ModuleId,
        name: &str,
    ) -> Result<Option<(DevPtr, usize)>, GpuError> {
        let request = Request::Symbol {
            module,
            name: name.to_string(),
        };
        match self.simple(request)? {
            Answer::Symbol(s) => Ok(s),
            other => Err(unexpected(&other)),
        }
    }

    fn suggest_block(
        &mut self,
        module: ModuleId,
        kernel: &str,
        dynamic_shared: u32,
    ) -> Option<(u32, u32)> {
        let request = Request::SuggestBlock {
            module,
            kernel: kernel.to_string(),
            dynamic_shared,
        };
        match self.simple(request) {
            Ok(Answer::Suggest(s)) => s,
            _ => None,
        }
    }
}
