//! The GPU worker process (`nbcuda gpu-worker`): owns one backend (the GPU, or ptxsim for tests)
//! and answers the Jupyter kernel's calls on the socket it inherited as file descriptor 3, one
//! at a time, until the socket closes. SIGUSR1 sets the interrupt flag of the launch or
//! synchronisation in progress.
//!
//! It must not print to stdout: that descriptor is where device printf is captured.

use super::shm::SharedBuf;
use super::wire::{self, Answer, Description, Hello, Reply, Request};
use crate::gpu::backend::{Backend, BackendLaunch, BackendLaunchError, ModuleImage};
use crate::gpu::cuda::CudaBackend;
use crate::gpu::sim::SimBackend;
use crate::gpu::GpuError;
use std::io::{BufReader, BufWriter};
use std::os::fd::FromRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// The descriptor the worker's socket arrives on.
pub const SOCKET_FD: i32 = 3;

/// The interrupt flag SIGUSR1 sets (shared with the backend's wait loops).
static CANCEL: OnceLock<Arc<AtomicBool>> = OnceLock::new();

extern "C" fn on_sigusr1(_: libc::c_int) {
    if let Some(flag) = CANCEL.get() {
        flag.store(true, Ordering::SeqCst);
    }
}

/// `nbcuda gpu-worker [--ordinal N] [--sim] [--connect PATH]`: serves until the Jupyter kernel
/// closes the socket. The socket is descriptor 3, or with `--connect` the Unix socket the
/// Jupyter kernel listens on at PATH (a worker started under a launcher such as ncu, which
/// need not pass descriptor 3 on). Returns the process exit code.
pub fn main(args: &[String]) -> i32 {
    let mut ordinal = 0usize;
    let mut sim = false;
    let mut connect: Option<String> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--sim" => sim = true,
            "--connect" => match it.next() {
                Some(p) => connect = Some(p.clone()),
                None => {
                    eprintln!("nbcuda gpu-worker: --connect needs a socket path");
                    return 2;
                }
            },
            "--ordinal" => match it.next().and_then(|v| v.parse().ok()) {
                Some(n) => ordinal = n,
                None => {
                    eprintln!("nbcuda gpu-worker: --ordinal needs a number");
                    return 2;
                }
            },
            other => {
                eprintln!("nbcuda gpu-worker: unknown argument {other}");
                return 2;
            }
        }
    }
    let socket = match connect {
        Some(path) => match UnixStream::connect(&path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("nbcuda gpu-worker: cannot connect to {path}: {e}");
                return 1;
            }
        },
        // SAFETY: fd 3 was set up by the Jupyter kernel (see `client::spawn`) and is used only
        // here.
        None => unsafe { UnixStream::from_raw_fd(SOCKET_FD) },
    };
    let flag = CANCEL
        .get_or_init(|| Arc::new(AtomicBool::new(false)))
        .clone();
    // SAFETY: installs a handler that only stores to an atomic.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigusr1 as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut());
    }
    let opened: Result<Box<dyn Backend>, String> = if sim {
        Ok(Box::new(SimBackend::new()))
    } else {
        CudaBackend::new(ordinal).map(|b| Box::new(b) as Box<dyn Backend>)
    };
    let Ok(read_half) = socket.try_clone() else {
        eprintln!("nbcuda gpu-worker: cannot use the socket");
        return 1;
    };
    let mut reader = BufReader::with_capacity(1 << 16, read_half);
    let mut writer = BufWriter::with_capacity(1 << 16, socket);
    let mut backend = match opened {
        Ok(b) => {
            let hello = Hello::Ready {
                backend: b.name().to_string(),
                limits: b.limits(),
            };
            if wire::write_frame(&mut writer, &hello, &[]).is_err() {
                return 1;
            }
            if !sim {
                std::thread::spawn(crate::gpu::cuda::warm_up);
            }
            b
        }
        Err(why) => {
            let _ = wire::write_frame(&mut writer, &Hello::Failed(why), &[]);
            return 1;
        }
    };
    let mut shared: Option<SharedBuf> = None;
    // After an answer the next call often follows at once (%time, loops of launches).
    let spin = wire::spin_time(100);
    loop {
        if reader.buffer().is_empty() {
            wire::spin_until_readable(reader.get_ref(), spin);
        }
        let (request, payload): (Request, Vec<u8>) = match wire::read_frame(&mut reader) {
            Ok(m) => m,
            Err(_) => return 0, // the Jupyter kernel closed the socket (or went away)
        };
        let (answer, out) = match request {
            Request::HtodShared {
                dst,
                path,
                len,
                bytes,
            } => match mapped(&mut shared, &path, len, bytes) {
                Ok(buf) => (
                    unit(backend.htod(dst, &buf.as_slice()[..bytes])),
                    Vec::new(),
                ),
                Err(e) => (error(e), Vec::new()),
            },
            Request::DtohShared {
                src,
                path,
                len,
                bytes,
            } => match mapped(&mut shared, &path, len, bytes) {
                Ok(buf) => (
                    unit(backend.dtoh(src, &mut buf.as_mut_slice()[..bytes])),
                    Vec::new(),
                ),
                Err(e) => (error(e), Vec::new()),
            },
            Request::HtodAsyncShared {
                dst,
                stream,
                path,
                len,
                bytes,
            } => match mapped(&mut shared, &path, len, bytes) {
                Ok(buf) => (
                    unit(backend.htod_async(dst, &buf.as_slice()[..bytes], stream)),
                    Vec::new(),
                ),
                Err(e) => (error(e), Vec::new()),
            },
            Request::TakeDownloadShared {
                id,
                path,
                len,
                bytes,
            } => {
                let taken = backend.take_download(id).and_then(|data| {
                    if data.len() != bytes {
                        return Err(GpuError::memory("a download of another size"));
                    }
                    let buf = mapped(&mut shared, &path, len, bytes)?;
                    buf.as_mut_slice()[..bytes].copy_from_slice(&data);
                    Ok(())
                });
                (unit(taken), Vec::new())
            }
            request => serve(backend.as_mut(), request, payload, &flag),
        };
        let reply = Reply {
            answer,
            fault: backend.fault(),
        };
        if wire::write_frame(&mut writer, &reply, &out).is_err() {
            return 0;
        }
    }
}

/// The shared buffer at `path`, mapped once (a new path replaces the old mapping).
fn mapped<'a>(
    shared: &'a mut Option<SharedBuf>,
    path: &str,
    len: usize,
    bytes: usize,
) -> Result<&'a mut SharedBuf, GpuError> {
    if bytes > len {
        return Err(GpuError::memory("a copy larger than its shared buffer"));
    }
    let current = shared
        .as_ref()
        .is_some_and(|b| b.path().to_str() == Some(path) && b.len() == len);
    if !current {
        let buf = SharedBuf::open(std::path::Path::new(path), len).map_err(|e| {
            GpuError::memory(format!(
                "the GPU worker cannot map the shared buffer {path}: {e}"
            ))
        })?;
        *shared = Some(buf);
    }
    shared
        .as_mut()
        .ok_or_else(|| GpuError::memory("no shared buffer"))
}

fn error(e: GpuError) -> Answer {
    Answer::Error {
        ename: e.ename.as_str().to_string(),
        message: e.message,
    }
}

fn unit(r: Result<(), GpuError>) -> Answer {
    r.map_or_else(error, |()| Answer::Unit)
}

/// One call on the backend: the answer and its payload.
fn serve(
    b: &mut dyn Backend,
    request: Request,
    payload: Vec<u8>,
    cancel: &Arc<AtomicBool>,
) -> (Answer, Vec<u8>) {
    let none = Vec::new();
    match request {
        Request::Describe => {
            let d = b.describe();
            (
                Answer::Description(Description {
                    name: d.name,
                    rows: d.rows,
                    limits: d.limits,
                    peak_bandwidth_gbs: d.peak_bandwidth_gbs,
                }),
                none,
            )
        }
        Request::CompileTarget(options) => (Answer::Target(b.compile_target(&options)), none),
        Request::Alloc(bytes) => (b.alloc(bytes).map_or_else(error, Answer::Value), none),
        Request::Free(p) => (unit(b.free(p)), none),
        Request::Htod(dst) => (unit(b.htod(dst, &payload)), none),
        Request::Dtoh { src, bytes } => {
            let mut out = Vec::new();
            if out.try_reserve_exact(bytes).is_err() {
                return (
                    error(GpuError::memory(format!(
                        "the GPU worker cannot hold {bytes} bytes"
                    ))),
                    none,
                );
            }
            out.resize(bytes, 0);
            match b.dtoh(src, &mut out) {
                Ok(()) => (Answer::Bytes, out),
                Err(e) => (error(e), none),
            }
        }
        Request::Dtod { dst, src, bytes } => (unit(b.dtod(dst, src, bytes)), none),
        Request::HtodAsync { dst, stream } => (unit(b.htod_async(dst, &payload, stream)), none),
        Request::DtohAsync { src, bytes, stream } => (
            b.dtoh_async(src, bytes, stream)
                .map_or_else(error, Answer::MaybeValue),
            none,
        ),
        Request::TakeDownload(id) => match b.take_download(id) {
            Ok(bytes) => (Answer::Bytes, bytes),
            Err(e) => (error(e), none),
        },
        Request::HtodShared { .. }
        | Request::DtohShared { .. }
        | Request::HtodAsyncShared { .. }
        | Request::TakeDownloadShared { .. } => (
            error(GpuError::memory(
                "shared-memory copies are served by the loop",
            )),
            none,
        ),
        Request::LoadModule { cubin } => {
            let loaded = if cubin {
                b.load_module(ModuleImage::Cubin(&payload))
            } else {
                match std::str::from_utf8(&payload) {
                    Ok(ptx) => b.load_module(ModuleImage::Ptx(ptx)),
                    Err(_) => Err(GpuError::compile("the PTX is not UTF-8")),
                }
            };
            match loaded {
                Ok((id, metas)) => (Answer::Module(id, metas), none),
                Err(e) => (error(e), none),
            }
        }
        Request::UnloadModule(m) => {
            b.unload_module(m);
            (Answer::Unit, none)
        }
        Request::Launch {
            module,
            kernel,
            grid,
            block,
            shared_bytes,
            stream,
            check,
            cancellable,
            stack_bytes,
            cooperative,
            param_sizes,
        } => {
            let mut params: Vec<&[u8]> = Vec::with_capacity(param_sizes.len());
            let mut at = 0usize;
            for n in param_sizes {
                let Some(p) = payload.get(at..at.saturating_add(n)) else {
                    return (
                        Answer::LaunchRejected("the parameters do not match their sizes".into()),
                        none,
                    );
                };
                params.push(p);
                at += n;
            }
            cancel.store(false, Ordering::SeqCst);
            let config = BackendLaunch {
                grid,
                block,
                shared_bytes,
                stream,
                check,
                cancel: cancellable.then(|| cancel.clone()),
                stack_bytes,
                counters: None,
                cooperative,
            };
            let result = b.launch(module, &kernel, &config, &params);
            (launched(b, result), none)
        }
        Request::BuildGraph(nodes) => (
            b.build_graph(&nodes).map_or_else(error, Answer::MaybeValue),
            none,
        ),
        Request::LaunchGraph { graph, cancellable } => {
            cancel.store(false, Ordering::SeqCst);
            let flag = cancellable.then(|| cancel.clone());
            let result = b.launch_graph(graph, flag.as_ref());
            (launched(b, result), none)
        }
        Request::LaunchNodes { nodes, cancellable } => {
            cancel.store(false, Ordering::SeqCst);
            let flag = cancellable.then(|| cancel.clone());
            let result = b.launch_nodes(&nodes, flag.as_ref());
            (launched(b, result), none)
        }
        Request::DestroyGraph(g) => {
            b.destroy_graph(g);
            (Answer::Unit, none)
        }
        Request::AllocManaged(bytes) => (
            b.alloc_managed(bytes).map_or_else(error, Answer::Value),
            none,
        ),
        Request::Prefetch {
            ptr,
            bytes,
            to_device,
        } => (unit(b.prefetch(ptr, bytes, to_device)), none),
        Request::CreateStream => (b.create_stream().map_or_else(error, Answer::Value), none),
        Request::DestroyStream(s) => {
            b.destroy_stream(s);
            (Answer::Unit, none)
        }
        Request::RecordEvent(s) => (b.record_event(s).map_or_else(error, Answer::Value), none),
        Request::EventElapsed(a, z) => (
            b.event_elapsed_ms(a, z).map_or_else(error, Answer::Ms),
            none,
        ),
        Request::DestroyEvent(e) => {
            b.destroy_event(e);
            (Answer::Unit, none)
        }
        Request::StreamWaitEvent(s, e) => (unit(b.stream_wait_event(s, e)), none),
        Request::Synchronize { stream, .. } => {
            cancel.store(false, Ordering::SeqCst);
            (unit(b.synchronize(stream)), none)
        }
        Request::Reset => (b.reset().map_or_else(error, Answer::Flag), none),
        Request::LastLaunchMs => (Answer::MaybeMs(b.last_launch_ms()), none),
        Request::TakePrintf => (Answer::Text(b.take_printf()), none),
        Request::Occupancy {
            module,
            kernel,
            block_sizes,
            dynamic_shared,
        } => (
            Answer::Occupancy(b.occupancy(module, &kernel, &block_sizes, dynamic_shared)),
            none,
        ),
        Request::Symbol { module, name } => (
            b.symbol(module, &name).map_or_else(error, Answer::Symbol),
            none,
        ),
        Request::SuggestBlock {
            module,
            kernel,
            dynamic_shared,
        } => (
            Answer::Suggest(b.suggest_block(module, &kernel, dynamic_shared)),
            none,
        ),
    }
}

/// The answer to a launch (of a CUDA kernel or a graph).
fn launched(
    b: &mut dyn Backend,
    result: Result<crate::gpu::backend::BackendReport, BackendLaunchError>,
) -> Answer {
    match result {
        Ok(r) => Answer::Launched {
            printf: r.printf,
            warp_instructions: r.warp_instructions,
            elapsed_ms: b.last_launch_ms(),
            findings: r.findings.iter().map(|f| f.message.clone()).collect(),
        },
        Err(BackendLaunchError::Rejected(m)) => Answer::LaunchRejected(m),
        Err(BackendLaunchError::Fault {
            report,
            message,
            printf,
        }) => Answer::LaunchFault {
            message,
            printf,
            report: report.map(|r| r.message),
        },
    }
}
