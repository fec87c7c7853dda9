//! The Unix-socket server that the `nb` crate (Rust cells, in evcxr's child process) talks to.
//!
//! One listener in a private directory (0700) with a 0600 socket; connections from another user
//! are refused (SO_PEERCRED). Each connection is served on its own thread, one request at a time,
//! with the framing of `nb::wire` (JSON header + raw payload, sizes bounded). What a request does
//! is up to the [`NbHost`] (the interpreter): this module knows nothing of devices. The display
//! requests (`render`: one host array → its MIME bundle; `animate`: frames → an animated GIF)
//! are drawn here with `crate::display::array_view` and either returned (for `evcxr_display`) or
//! shown in the running cell through [`NbHost::display`].

use crate::display::array_view::{array_bundle, frames_bundle, Metadata, ViewOptions};
use crate::display::Colormap;
use crate::gpu::Dtype;
use nb::wire::{read_frame, write_frame, NB_LIMITS};
use nb::ErrorKind;
use protocol::output::MimeBundle;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::io::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An error for the `nb` side: (kind, message).
pub type HostError = (ErrorKind, String);

/// What the server asks of the interpreter.
pub trait NbHost: Send + Sync + 'static {
    fn put(&self, name: &str, dtype: &str, shape: Vec<usize>, data: &[u8])
        -> Result<(), HostError>;
    /// (dtype, shape, bytes)
    fn get(&self, name: &str) -> Result<(String, Vec<usize>, Vec<u8>), HostError>;
    /// Run a magic line with its output going to the running cell; the text result, if any.
    fn exec(&self, line: &str) -> Result<Option<String>, HostError>;
    /// `%profile LAUNCH` without a display: its metrics under Nsight Compute's names.
    fn profile(&self, launch: &str) -> Result<MimeBundle, HostError>;
    fn free(&self, name: &str) -> Result<(), HostError>;
    /// (name, dtype, shape), sorted by name.
    fn list(&self) -> Vec<(String, String, Vec<usize>)>;
    /// Where the arrays live: `"cuda"` (a GPU) or `"ptxsim"`.
    fn backend(&self) -> String;
    /// Show a display (image, table, animation) in the running cell, if any.
    fn display(&self, data: MimeBundle, metadata: Metadata);
}

const SOCKET_FILE: &str = "nb.sock";
/// The longest path `bind` takes for a Unix socket (sun_path is 108 bytes with its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// Where the socket's folder may go, best first: the temporary folder (a Jupyter kernel's own
/// scratch folder, removed with it even after a kill), $XDG_RUNTIME_DIR (private to the user),
/// then /tmp (when both are too deep for a socket path).
fn socket_bases() -> Vec<PathBuf> {
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_dir());
    std::iter::once(std::env::temp_dir())
        .chain(runtime)
        .chain([PathBuf::from("/tmp")])
        .collect()
}

/// A running server; the socket directory is removed on drop.
pub struct NbServer {
    dir: PathBuf,
    socket: PathBuf,
}

impl NbServer {
    /// Bind a fresh socket and serve `host` on background threads.
    pub fn start(host: Arc<dyn NbHost>) -> std::io::Result<NbServer> {
        // Short (pid and 64 random bits), so that it fits inside a Jupyter kernel's scratch
        // folder, which `TMPDIR` names.
        let name = format!(
            "nbcuda-{}-{:016x}",
            std::process::id(),
            uuid::Uuid::new_v4().as_u64_pair().0
        );
        // A socket's path must fit in sockaddr_un (107 bytes): a deep $TMPDIR does not serve.
        let dir = socket_bases()
            .into_iter()
            .map(|base| base.join(&name))
            .find(|dir| dir.join(SOCKET_FILE).as_os_str().len() <= MAX_SOCKET_PATH)
            .ok_or_else(|| std::io::Error::other("no temporary folder has a path short enough"))?;
        std::fs::create_dir(&dir)?;
        // From here on the folder is removed on every way out, the errors included.
        let server = NbServer {
            socket: dir.join(SOCKET_FILE),
            dir,
        };
        std::fs::set_permissions(&server.dir, std::fs::Permissions::from_mode(0o700))?;
        let listener = UnixListener::bind(&server.socket)?;
        std::fs::set_permissions(&server.socket, std::fs::Permissions::from_mode(0o600))?;
        std::thread::Builder::new()
            .name("nb-server".into())
            .spawn(move || accept_loop(listener, host))?;
        Ok(server)
    }

    /// The path to put in `NBCUDA_SOCKET`.
    pub fn socket_path(&self) -> &Path {
        &self.socket
    }
}

impl Drop for NbServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn peer_uid(stream: &UnixStream) -> Option<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`, a plain C struct we own.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(cred.uid)
}

fn accept_loop(listener: UnixListener, host: Arc<dyn NbHost>) {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        if peer_uid(&stream) != Some(me) {
            tracing::warn!("refused an nb connection from another user");
            continue;
        }
        let host = host.clone();
        let _ = std::thread::Builder::new()
            .name("nb-conn".into())
            .stack_size(protocol::INTERPRETER_STACK_BYTES)
            .spawn(move || serve_connection(stream, host));
    }
}

fn serve_connection(mut stream: UnixStream, host: Arc<dyn NbHost>) {
    loop {
        let (header, payload): (Value, _) = match read_frame(&mut stream, NB_LIMITS) {
            Ok(f) => f,
            Err(e) => {
                if e.kind() != std::io::ErrorKind::UnexpectedEof {
                    let reply = json!({"ok": false, "ename": ErrorKind::Protocol.as_str(), "message": e.to_string()});
                    let _ = write_frame(&mut stream, &reply, &[], NB_LIMITS);
                }
                return;
            }
        };
        let (reply, data) = handle(&*host, &header, &payload);
        if write_frame(&mut stream, &reply, &data, NB_LIMITS).is_err() {
            return;
        }
    }
}

fn fail((ename, message): HostError) -> (Value, Vec<u8>) {
    (
        json!({"ok": false, "ename": ename.as_str(), "message": message}),
        Vec::new(),
    )
}

fn str_of<'a>(header: &'a Value, key: &str) -> Result<&'a str, HostError> {
    header
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| (ErrorKind::Protocol, format!("the request has no '{key}'")))
}

fn protocol(message: &str) -> HostError {
    (ErrorKind::Protocol, message.to_string())
}

fn argument(message: String) -> HostError {
    (ErrorKind::Argument, message)
}

fn shape_of(header: &Value) -> Result<Vec<usize>, HostError> {
    header
        .get("shape")
        .and_then(Value::as_array)
        .ok_or_else(|| protocol("the request has no 'shape'"))?
        .iter()
        .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
        .collect::<Option<_>>()
        .ok_or_else(|| argument("shape entries must be non-negative integers".to_string()))
}

fn dtype_of(header: &Value) -> Result<Dtype, HostError> {
    let name = str_of(header, "dtype")?;
    Dtype::parse(name).ok_or_else(|| argument(format!("unknown dtype '{name}'")))
}

/// The `%show` options of a display request: `cmap`, `vmin`, `vmax`, `scale`, `title`.
fn view_of(header: &Value) -> Result<ViewOptions, HostError> {
    let num = |key: &str| -> Result<Option<f64>, HostError> {
        match header.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| argument(format!("{key} must be a number"))),
        }
    };
    let cmap = match header.get("cmap").and_then(Value::as_str) {
        Some(name) => Colormap::by_name(name).map_err(argument)?,
        None => Colormap::default(),
    };
    let scale = match header.get("scale") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|k| u32::try_from(k).ok())
                .ok_or_else(|| argument("scale must be a positive integer".to_string()))?,
        ),
    };
    Ok(ViewOptions {
        cmap,
        vmin: num("vmin")?,
        vmax: num("vmax")?,
        scale,
        title: header
            .get("title")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// A rendered display: shown in the running cell when the request says `"publish": true`,
/// otherwise returned as `bundle` (and `metadata`) for `evcxr_display`.
fn deliver(
    host: &dyn NbHost,
    header: &Value,
    (data, metadata): (MimeBundle, Metadata),
) -> (Value, Vec<u8>) {
    if header.get("publish").and_then(Value::as_bool) == Some(true) {
        host.display(data, metadata);
        (json!({"ok": true}), Vec::new())
    } else {
        (
            json!({"ok": true, "bundle": data, "metadata": metadata}),
            Vec::new(),
        )
    }
}

/// Serve one request.
pub fn handle(host: &dyn NbHost, header: &Value, payload: &[u8]) -> (Value, Vec<u8>) {
    let result = (|| -> Result<(Value, Vec<u8>), HostError> {
        match str_of(header, "op")? {
            "put" => {
                host.put(
                    str_of(header, "name")?,
                    str_of(header, "dtype")?,
                    shape_of(header)?,
                    payload,
                )?;
                Ok((json!({"ok": true}), Vec::new()))
            }
            "get" => {
                let (dtype, shape, data) = host.get(str_of(header, "name")?)?;
                Ok((json!({"ok": true, "dtype": dtype, "shape": shape}), data))
            }
            "exec" => {
                let result = host.exec(str_of(header, "line")?)?;
                Ok((json!({"ok": true, "result": result}), Vec::new()))
            }
            "profile" => {
                let metrics = host.profile(str_of(header, "launch")?)?;
                Ok((json!({"ok": true, "metrics": metrics}), Vec::new()))
            }
            "free" => {
                host.free(str_of(header, "name")?)?;
                Ok((json!({"ok": true}), Vec::new()))
            }
            "backend" => Ok((json!({"ok": true, "backend": host.backend()}), Vec::new())),
            "list" => {
                let rows: Vec<Value> = host
                    .list()
                    .into_iter()
                    .map(|(name, dtype, shape)| json!({"name": name, "dtype": dtype, "shape": shape}))
                    .collect();
                Ok((json!({"ok": true, "arrays": rows}), Vec::new()))
            }
            "render" => {
                let (dtype, shape, view) = (dtype_of(header)?, shape_of(header)?, view_of(header)?);
                let shown = array_bundle(dtype, &shape, payload, &view).map_err(argument)?;
                Ok(deliver(host, header, shown))
            }
            "animate" => {
                let (dtype, shape, view) = (dtype_of(header)?, shape_of(header)?, view_of(header)?);
                let count = header
                    .get("frames")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| protocol("the request has no 'frames'"))?;
                let labels: Vec<Option<String>> = header
                    .get("labels")
                    .and_then(Value::as_array)
                    .map(|l| l.iter().map(|v| v.as_str().map(str::to_string)).collect())
                    .unwrap_or_default();
                let fps = header.get("fps").and_then(Value::as_f64).unwrap_or(10.0);
                let shown = frames_bundle(
                    dtype,
                    &shape,
                    usize::try_from(count).unwrap_or(usize::MAX),
                    payload,
                    &labels,
                    fps,
                    &view,
                )
                .map_err(argument)?;
                Ok(deliver(host, header, shown))
            }
            other => Err((ErrorKind::Protocol, format!("unknown request '{other}'"))),
        }
    })();
    result.unwrap_or_else(fail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A host with no arrays that records what it is asked to display.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<MimeBundle>>);

    impl NbHost for Recorder {
        fn put(&self, _: &str, _: &str, _: Vec<usize>, _: &[u8]) -> Result<(), HostError> {
            Ok(())
        }
        fn get(&self, name: &str) -> Result<(String, Vec<usize>, Vec<u8>), HostError> {
            Err(argument(format!("no array named '{name}'")))
        }
        fn exec(&self, _: &str) -> Result<Option<String>, HostError> {
            Ok(None)
        }
        fn profile(&self, _: &str) -> Result<MimeBundle, HostError> {
            Err(argument("no CUDA kernels".to_string()))
        }
        fn free(&self, _: &str) -> Result<(), HostError> {
            Ok(())
        }
        fn list(&self) -> Vec<(String, String, Vec<usize>)> {
            Vec::new()
        }
        fn backend(&self) -> String {
            "ptxsim".into()
        }
        fn display(&self, data: MimeBundle, _: Metadata) {
            if let Ok(mut v) = self.0.lock() {
                v.push(data);
            }
        }
    }

    fn f32_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn render_returns_or_publishes_the_bundle() {
        let host = Recorder::default();
        let data = f32_bytes(&[1.0, 2.5, -3.0]);
        let (reply, _) = handle(
            &host,
            &json!({"op": "render", "dtype": "f32", "shape": [3]}),
            &data,
        );
        assert_eq!(reply["ok"], true, "{reply}");
        assert!(reply["bundle"]["text/html"]
            .as_str()
            .is_some_and(|h| h.contains(">2.5</td>")));
        let (reply, _) = handle(
            &host,
            &json!({"op": "render", "dtype": "f32", "shape": [3], "publish": true}),
            &data,
        );
        assert!(
            reply["ok"] == true && reply.get("bundle").is_none(),
            "{reply}"
        );
        assert_eq!(host.0.lock().map(|v| v.len()).unwrap_or(0), 1);
        for (bad, ename, words) in [
            (
                json!({"op": "render", "dtype": "f8", "shape": [3]}),
                "ArgumentError",
                "unknown dtype",
            ),
            (
                json!({"op": "render", "dtype": "f32", "shape": [4]}),
                "ArgumentError",
                "needs 16 bytes",
            ),
            (
                json!({"op": "render", "dtype": "f32", "shape": [3], "cmap": "jet"}),
                "ArgumentError",
                "unknown colormap",
            ),
            (
                json!({"op": "render", "dtype": "f32", "shape": [3], "scale": -1}),
                "ArgumentError",
                "scale",
            ),
            (
                json!({"op": "render", "dtype": "f32"}),
                "ProtocolError",
                "shape",
            ),
            (
                json!({"op": "animate", "dtype": "f32", "shape": [1, 3]}),
                "ProtocolError",
                "frames",
            ),
            (
                json!({"op": "animate", "dtype": "f32", "shape": [1, 3], "frames": 2}),
                "ArgumentError",
                "do not make 2 frames",
            ),
        ] {
            let (reply, _) = handle(&host, &bad, &data);
            assert_eq!(reply["ename"], ename, "{bad}: {reply}");
            assert!(
                reply["message"].as_str().is_some_and(|m| m.contains(words)),
                "{bad}: {reply}"
            );
        }
    }

    #[test]
    fn animate_makes_a_gif() {
        let host = Recorder::default();
        let data = f32_bytes(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        let (reply, _) = handle(
            &host,
            &json!({"op": "animate", "dtype": "f32", "shape": [1, 3], "frames": 2,
                    "labels": ["u", null], "fps": 4.0, "cmap": "magma"}),
            &data,
        );
        assert_eq!(reply["ok"], true, "{reply}");
        assert!(reply["bundle"]["image/gif"].is_string());
        assert_eq!(
            reply["bundle"]["text/plain"],
            "animation of 2 frames (1×3 f32) at 4 fps, min 0, max 5"
        );
        assert!(
            reply["metadata"]["image/gif"]["width"]
                .as_u64()
                .unwrap_or(0)
                > 0
        );
    }
}
