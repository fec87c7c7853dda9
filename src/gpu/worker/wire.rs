//! The messages between the Jupyter kernel process and its GPU worker process, and the limits of
//! their frames on the socket (the framing is `nb::wire`'s: a JSON header, then raw bytes such
//! as array contents, module images, packed parameters).
//!
//! Only data types here: no sockets are opened and no device is touched.

use crate::compile::Target;
use crate::gpu::backend::{
    DevPtr, EventId, GraphId, GraphNode, KernelMeta, ModuleId, Occupancy, StreamId,
};
use crate::gpu::{CudaOptions, DeviceLimits, Dim3};
use nb::wire::Limits;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};

/// One call of the `Backend` trait; bulk bytes travel in the frame's payload.
#[derive(Debug, Serialize, Deserialize)]
pub enum Request {
    Describe,
    CompileTarget(CudaOptions),
    Alloc(usize),
    Free(DevPtr),
    /// Payload: the bytes to write.
    Htod(DevPtr),
    Dtoh {
        src: DevPtr,
        bytes: usize,
    },
    /// Host → device from the shared buffer at `path` (its first `bytes`).
    HtodShared {
        dst: DevPtr,
        path: String,
        len: usize,
        bytes: usize,
    },
    /// Device → host into the shared buffer at `path`.
    DtohShared {
        src: DevPtr,
        path: String,
        len: usize,
        bytes: usize,
    },
    /// Payload: the bytes to write.
    HtodAsync {
        dst: DevPtr,
        stream: Option<StreamId>,
    },
    HtodAsyncShared {
        dst: DevPtr,
        stream: Option<StreamId>,
        path: String,
        len: usize,
        bytes: usize,
    },
    DtohAsync {
        src: DevPtr,
        bytes: usize,
        stream: Option<StreamId>,
    },
    /// Answer: the bytes in the payload.
    TakeDownload(u64),
    /// The bytes go into the shared buffer at `path`.
    TakeDownloadShared {
        id: u64,
        path: String,
        len: usize,
        bytes: usize,
    },
    Dtod {
        dst: DevPtr,
        src: DevPtr,
        bytes: usize,
    },
    /// Payload: the PTX text or CUBIN bytes.
    LoadModule {
        cubin: bool,
    },
    UnloadModule(ModuleId),
    /// Answer: `Symbol`.
    Symbol {
        module: ModuleId,
        name: String,
    },
    /// Payload: the parameters, concatenated; `param_sizes` splits them.
    Launch {
        module: ModuleId,
        kernel: String,
        grid: Dim3,
        block: Dim3,
        shared_bytes: u32,
        stream: Option<StreamId>,
        check: bool,
        cancellable: bool,
        /// Bytes of call stack per thread.
        stack_bytes: u32,
        /// `cuLaunchCooperativeKernel`.
        cooperative: bool,
        param_sizes: Vec<usize>,
    },
    CreateStream,
    DestroyStream(StreamId),
    RecordEvent(Option<StreamId>),
    EventElapsed(EventId, EventId),
    DestroyEvent(EventId),
    StreamWaitEvent(Option<StreamId>, EventId),
    Synchronize {
        stream: Option<StreamId>,
        cancellable: bool,
    },
    Reset,
    LastLaunchMs,
    TakePrintf,
    Occupancy {
        module: ModuleId,
        kernel: String,
        block_sizes: Vec<u32>,
        dynamic_shared: u32,
    },
    SuggestBlock {
        module: ModuleId,
        kernel: String,
        dynamic_shared: u32,
    },
    /// Answer: `MaybeValue`, the graph's id (None: the backend has no graphs).
    BuildGraph(Vec<GraphNode>),
    /// Answer: like `Launch`.
    LaunchGraph {
        graph: GraphId,
        cancellable: bool,
    },
    DestroyGraph(GraphId),
    /// Answer: like `Launch`.
    LaunchNodes {
        nodes: Vec<GraphNode>,
        cancellable: bool,
    },
    AllocManaged(usize),
    Prefetch {
        ptr: DevPtr,
        bytes: usize,
        to_device: bool,
    },
}

/// What `%device` shows, as it travels (the backend's name is fixed on the client's side).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Description {
    pub name: String,
    pub rows: Vec<(String, String)>,
    pub limits: DeviceLimits,
    pub peak_bandwidth_gbs: Option<f64>,
}

/// The answer to one [`Request`].
#[derive(Debug, Serialize, Deserialize)]
pub enum Answer {
    Unit,
    Value(u64),
    MaybeValue(Option<u64>),
    Flag(bool),
    Ms(f64),
    MaybeMs(Option<f64>),
    Text(String),
    Description(Description),
    Target(Target),
    Module(ModuleId, Vec<KernelMeta>),
    /// A module variable's address and size.
    Symbol(Option<(DevPtr, usize)>),
    /// Payload: the bytes read.
    Bytes,
    Launched {
        printf: String,
        warp_instructions: Option<u64>,
        /// The launch's time from device events, where measured.
        elapsed_ms: Option<f64>,
        /// Checker findings, as text (ptxsim in a worker; a GPU has none).
        findings: Vec<String>,
    },
    LaunchRejected(String),
    LaunchFault {
        message: String,
        printf: String,
        report: Option<String>,
    },
    Occupancy(Option<Vec<Occupancy>>),
    Suggest(Option<(u32, u32)>),
    Error {
        ename: String,
        message: String,
    },
}

/// Every reply carries the backend's fault state after the call.
#[derive(Debug, Serialize, Deserialize)]
pub struct Reply {
    pub answer: Answer,
    pub fault: Option<String>,
}

/// The worker's first message: which device it opened, or why it could not.
#[derive(Debug, Serialize, Deserialize)]
pub enum Hello {
    Ready {
        backend: String,
        limits: DeviceLimits,
    },
    Failed(String),
}

/// The worker socket's limits: headers up to 64 MiB (a larger one is a corrupt stream, not a
/// real message); payloads of any size this machine can hold (large copies normally go through
/// shared memory, see `shm`).
pub const LIMITS: Limits = Limits {
    header: 64 << 20,
    payload: usize::MAX as u64,
};

/// Writes one frame (`nb::wire`'s framing, with [`LIMITS`]).
pub fn write_frame<T: Serialize>(w: &mut impl Write, header: &T, payload: &[u8]) -> io::Result<()> {
    nb::wire::write_frame(w, header, payload, LIMITS)
}

/// Reads one frame: the header and the payload.
pub fn read_frame<T: DeserializeOwned>(r: &mut impl Read) -> io::Result<(T, Vec<u8>)> {
    nb::wire::read_frame(r, LIMITS)
}

/// Waits up to `spin` for bytes on `socket` by polling it (no sleep), so a quick answer is read
/// without the scheduler's wake-up latency (tens of microseconds in a virtual machine). Returns
/// at once when bytes are already there; afterwards a blocking read waits as usual.
pub fn spin_until_readable(socket: &std::os::unix::net::UnixStream, spin: std::time::Duration) {
    use std::os::fd::AsRawFd;
    if spin.is_zero() {
        return;
    }
    let fd = socket.as_raw_fd();
    let start = std::time::Instant::now();
    loop {
        let mut byte = 0u8;
        // SAFETY: peeks at most one byte into a local, without blocking.
        let n = unsafe {
            libc::recv(
                fd,
                (&mut byte as *mut u8).cast(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        if n >= 0 {
            return; // bytes, or the peer closed
        }
        let err = std::io::Error::last_os_error().kind();
        if err != std::io::ErrorKind::WouldBlock && err != std::io::ErrorKind::Interrupted {
            return;
        }
        if start.elapsed() >= spin {
            return;
        }
        std::hint::spin_loop();
    }
}

/// How long a side of the worker socket spins for an answer before it blocks:
/// `NBCUDA_WORKER_SPIN_US`, else `default_us`.
pub fn spin_time(default_us: u64) -> std::time::Duration {
    let us = std::env::var("NBCUDA_WORKER_SPIN_US")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default_us);
    std::time::Duration::from_micros(us)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_with_payloads() {
        let mut buf = Vec::new();
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        write_frame(&mut buf, &Request::Htod(0xdead_beef), &data).unwrap();
        write_frame(
            &mut buf,
            &Request::Launch {
                module: 3,
                kernel: "_Z3addPfS_i".into(),
                grid: (4, 1, 1),
                block: (256, 1, 1),
                shared_bytes: 0,
                stream: Some(2),
                check: false,
                cancellable: true,
                stack_bytes: 1024,
                cooperative: true,
                param_sizes: vec![8, 8, 4],
            },
            &[1; 20],
        )
        .unwrap();
        let mut r = buf.as_slice();
        let (a, pa): (Request, _) = read_frame(&mut r).unwrap();
        assert!(matches!(a, Request::Htod(0xdead_beef)));
        assert_eq!(pa, data);
        let (b, pb): (Request, _) = read_frame(&mut r).unwrap();
        assert!(
            matches!(b, Request::Launch { ref kernel, cooperative: true, .. } if kernel == "_Z3addPfS_i")
        );
        assert_eq!(pb, vec![1; 20]);
        assert!(
            read_frame::<Request>(&mut r).is_err(),
            "the stream has ended"
        );
    }

    #[test]
    fn graph_nodes_travel_with_their_parameters() {
        let nodes = vec![
            GraphNode::Launch {
                module: 7,
                kernel: "_Z4axpyfPKfPfi".into(),
                grid: (4, 1, 1),
                block: (256, 1, 1),
                shared_bytes: 128,
                stack_bytes: 1024,
                params: vec![
                    2.0f32.to_le_bytes().to_vec(),
                    0x1000u64.to_le_bytes().to_vec(),
                ],
            },
            GraphNode::Copy {
                dst: 0x2000,
                src: 0x1000,
                bytes: 4000,
            },
        ];
        let mut buf = Vec::new();
        write_frame(&mut buf, &Request::BuildGraph(nodes.clone()), &[]).unwrap();
        write_frame(
            &mut buf,
            &Request::LaunchNodes {
                nodes: nodes.clone(),
                cancellable: true,
            },
            &[],
        )
        .unwrap();
        let mut r = buf.as_slice();
        let (a, _): (Request, _) = read_frame(&mut r).unwrap();
        assert!(matches!(a, Request::BuildGraph(ref n) if *n == nodes));
        let (b, _): (Request, _) = read_frame(&mut r).unwrap();
        assert!(
            matches!(b, Request::LaunchNodes { nodes: ref n, cancellable: true } if *n == nodes)
        );
    }

    #[test]
    fn corrupt_headers_are_errors_not_panics() {
        let mut r: &[u8] = &[255, 255, 255, 255, 1, 2];
        assert!(read_frame::<Request>(&mut r).is_err());
        let mut buf = Vec::new();
        buf.extend_from_slice(&3u32.to_le_bytes());
        buf.extend_from_slice(b"{{{");
        buf.extend_from_slice(&0u64.to_le_bytes());
        assert!(read_frame::<Request>(&mut buf.as_slice()).is_err());
    }
}
