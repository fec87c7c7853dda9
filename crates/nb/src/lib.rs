//! `nb`: the API that Rust cells of the nbcuda Jupyter kernel use to reach its named device
//! arrays, launch CUDA kernels and show results.
//!
//! ```ignore
//! nb::put("x", &vec![1.0f32; 1024])?;
//! nb::exec("%launch scale[auto](x, 2.0, len(x))")?;
//! let x: nb::Array<f32> = nb::get("x")?;
//! ```
//!
//! # Seeing results
//!
//! An [`Array`] that is a cell's value displays itself: a 2-D `f32`/`f64` array as the heatmap
//! of `%show` (colormap, colour bar, value range), an `(H, W, 3|4)` `u8` array as an RGB(A)
//! image, a 1-D array of at most 64 values as a table, anything else as a summary (dtype, shape,
//! min/max/mean, first values). [`Array::show`] and [`Array::show_with`] display it at once, in
//! the middle of a cell, with the options of `%show` in a [`Style`]:
//!
//! ```ignore
//! let u: nb::Array<f32> = nb::get("u")?;
//! u                                                        // as the cell's value
//! u.show_with(&nb::Style::new().cmap("magma").vmin(0.0).title("u"))?;
//! nb::show("u --cmap magma")?;                             // %show on the device array
//! ```
//!
//! [`Frames`] collects 2-D frames and shows them as an inline animated GIF, drawn like
//! `%%animate` (one colour range for all frames, each titled `NAME   frame i/N`):
//!
//! ```ignore
//! let mut frames = nb::Frames::new().fps(12.0).cmap("inferno");
//! for step in 0..100 {
//!     nb::exec("%launch heat_step[auto](u, v, 0.1, u.shape[0], u.shape[1])")?;
//!     nb::exec("%swap u v")?;
//!     if step % 5 == 0 {
//!         frames.push_array("u")?;          // a copy of the device array now
//!     }
//! }
//! frames.show()?;                           // or leave `frames` as the cell's value
//! ```
//!
//! Pictures are drawn by the Jupyter kernel (the same code as `%show` and `%%animate`): this
//! crate only sends the raw bytes, so it stays small to compile in every notebook.
//!
//! The arrays live in the Jupyter kernel process, not here: every call connects to the kernel's
//! Unix socket (path in `NBCUDA_SOCKET`), sends one request and reads one reply. This crate keeps
//! no state in statics, because evcxr copies statics into every cell.

mod error;
mod view;
pub mod wire;

pub use error::ErrorKind;
pub use view::{Frames, MimeBundle, Style};

/// The `ndarray` crate `nb` converts to and from, re-exported so cells need no `:dep` of their own.
#[cfg(feature = "ndarray")]
pub use ndarray;

use serde_json::{json, Value};
use std::fmt;
use std::os::unix::net::UnixStream;

/// The environment variable holding the kernel's socket path.
pub const SOCKET_ENV: &str = "NBCUDA_SOCKET";

/// An error from the kernel (the same kinds as the magic lines: `ArgumentError`, `LaunchError`,
/// `MemoryError`, `DeviceFault`, `CompileError`, `SyntaxError`, …) or from the connection
/// (`NotConnected`, `ProtocolError`). `Display` shows `ENAME: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The kind, named as the `ename` of a Jupyter error output.
    pub ename: ErrorKind,
    pub message: String,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            ename: kind,
            message: message.into(),
        }
    }

    /// What went wrong, for a `match`.
    pub fn kind(&self) -> ErrorKind {
        self.ename
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.ename, self.message)
    }
}

impl std::error::Error for Error {}

pub(crate) fn err(kind: ErrorKind, message: impl Into<String>) -> Error {
    Error::new(kind, message)
}

pub type Result<T> = std::result::Result<T, Error>;

/// Element types that arrays can hold, with their dtype names.
pub trait Element: Copy + Default + fmt::Debug + 'static {
    const DTYPE: &'static str;
    fn to_le_bytes_vec(data: &[Self]) -> Vec<u8>;
    fn from_le_bytes_vec(bytes: &[u8]) -> Vec<Self>;
}

macro_rules! element {
    ($t:ty, $name:expr) => {
        impl Element for $t {
            const DTYPE: &'static str = $name;
            fn to_le_bytes_vec(data: &[Self]) -> Vec<u8> {
                let mut out = Vec::with_capacity(data.len() * std::mem::size_of::<$t>());
                for v in data {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                out
            }
            fn from_le_bytes_vec(bytes: &[u8]) -> Vec<Self> {
                bytes
                    .chunks_exact(std::mem::size_of::<$t>())
                    .map(|c| {
                        let mut a = [0u8; std::mem::size_of::<$t>()];
                        a.copy_from_slice(c);
                        <$t>::from_le_bytes(a)
                    })
                    .collect()
            }
        }
    };
}
element!(f32, "f32");
element!(f64, "f64");
element!(i8, "i8");
element!(i16, "i16");
element!(i32, "i32");
element!(i64, "i64");
element!(u8, "u8");
element!(u16, "u16");
element!(u32, "u32");
element!(u64, "u64");
#[cfg(feature = "half")]
element!(half::f16, "f16");
#[cfg(feature = "half")]
element!(half::bf16, "bf16");

/// The `half` crate that `Array<nb::half::f16>` and `Array<nb::half::bf16>` use: name its types
/// through `nb` (a `:dep half` of another version would be a different type).
#[cfg(feature = "half")]
pub use half;

/// A copy of a device array on the host: row-major data and its shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Array<T: Element> {
    pub data: Vec<T>,
    pub shape: Vec<usize>,
}

impl<T: Element> Array<T> {
    /// Make an array; the shape's product must equal the data's length.
    pub fn new(data: Vec<T>, shape: Vec<usize>) -> Result<Array<T>> {
        check_shape(data.len(), &shape)?;
        Ok(Array { data, shape })
    }
    pub fn dtype(&self) -> &'static str {
        T::DTYPE
    }
    pub fn len(&self) -> usize {
        self.data.len()
    }
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// A dynamic-dimensional ndarray view-copy of this array.
    #[cfg(feature = "ndarray")]
    pub fn to_ndarray(&self) -> ndarray::ArrayD<T> {
        ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&self.shape), self.data.clone())
            .unwrap_or_else(|_| {
                ndarray::ArrayD::from_shape_vec(
                    ndarray::IxDyn(&[self.data.len()]),
                    self.data.clone(),
                )
                .unwrap_or_default()
            })
    }

    /// Copy an ndarray (any layout) into a row-major `Array`.
    #[cfg(feature = "ndarray")]
    pub fn from_ndarray<S, D>(a: &ndarray::ArrayBase<S, D>) -> Array<T>
    where
        S: ndarray::Data<Elem = T>,
        D: ndarray::Dimension,
    {
        Array {
            data: a.iter().copied().collect(),
            shape: a.shape().to_vec(),
        }
    }
}

#[cfg(feature = "ndarray")]
impl<T: Element> From<Array<T>> for ndarray::ArrayD<T> {
    fn from(a: Array<T>) -> Self {
        a.to_ndarray()
    }
}

/// A row of [`list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayInfo {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<usize>,
}

pub(crate) fn check_shape(len: usize, shape: &[usize]) -> Result<()> {
    if shape.is_empty() {
        return Err(err(
            ErrorKind::Argument,
            "a shape needs at least one dimension",
        ));
    }
    let product = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    match product {
        Some(p) if p == len => Ok(()),
        Some(p) => Err(err(
            ErrorKind::Argument,
            format!("shape {shape:?} holds {p} elements but the data has {len}"),
        )),
        None => Err(err(
            ErrorKind::Argument,
            format!("shape {shape:?} is too large"),
        )),
    }
}

/// Send one request and read its reply; a reply with `"ok": false` becomes an [`Error`].
pub(crate) fn request(header: Value, payload: &[u8]) -> Result<(Value, Vec<u8>)> {
    let path = std::env::var(SOCKET_ENV).map_err(|_| {
        err(
            ErrorKind::NotConnected,
            format!("nb works inside the nbcuda Jupyter kernel ({SOCKET_ENV} is not set)"),
        )
    })?;
    let mut stream = UnixStream::connect(&path).map_err(|e| {
        err(
            ErrorKind::NotConnected,
            format!("cannot reach the nbcuda Jupyter kernel at {path}: {e}"),
        )
    })?;
    wire::write_frame(&mut stream, &header, payload, wire::NB_LIMITS).map_err(|e| {
        err(
            ErrorKind::Protocol,
            format!("sending the request failed: {e}"),
        )
    })?;
    let (reply, data): (Value, _) =
        wire::read_frame(&mut stream, wire::NB_LIMITS).map_err(|e| {
            err(
                ErrorKind::Protocol,
                format!("reading the reply failed: {e}"),
            )
        })?;
    if reply.get("ok").and_then(Value::as_bool) == Some(true) {
        Ok((reply, data))
    } else {
        Err(Error::new(
            reply
                .get("ename")
                .and_then(Value::as_str)
                .and_then(ErrorKind::from_ename)
                .unwrap_or(ErrorKind::Other),
            reply
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("the kernel gave no message"),
        ))
    }
}

/// Create (or replace) the 1-D device array `name` from `data`.
pub fn put<T: Element>(name: &str, data: &[T]) -> Result<()> {
    put_shaped(name, data, &[data.len()])
}

/// Create (or replace) the device array `name` with `shape` (row-major) from `data`.
pub fn put_shaped<T: Element>(name: &str, data: &[T], shape: &[usize]) -> Result<()> {
    check_shape(data.len(), shape)?;
    request(
        json!({"op": "put", "name": name, "dtype": T::DTYPE, "shape": shape}),
        &T::to_le_bytes_vec(data),
    )
    .map(|_| ())
}

/// Create (or replace) the device array `name` from an ndarray of any dimension.
#[cfg(feature = "ndarray")]
pub fn put_ndarray<T, S, D>(name: &str, a: &ndarray::ArrayBase<S, D>) -> Result<()>
where
    T: Element,
    S: ndarray::Data<Elem = T>,
    D: ndarray::Dimension,
{
    let arr = Array::from_ndarray(a);
    put_shaped(name, &arr.data, &arr.shape)
}

/// The device array `name` as (dtype, shape, bytes).
pub(crate) fn get_raw(name: &str) -> Result<(String, Vec<usize>, Vec<u8>)> {
    let (reply, data) = request(json!({"op": "get", "name": name}), &[])?;
    let dtype = reply
        .get("dtype")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let shape: Vec<usize> = reply
        .get("shape")
        .and_then(Value::as_array)
        .map(|s| {
            s.iter()
                .filter_map(Value::as_u64)
                .map(|d| d as usize)
                .collect()
        })
        .unwrap_or_default();
    Ok((dtype, shape, data))
}

/// Copy the device array `name` to the host. Its dtype must be `T`'s.
pub fn get<T: Element>(name: &str) -> Result<Array<T>> {
    let (dtype, shape, data) = get_raw(name)?;
    if dtype != T::DTYPE {
        return Err(err(
            ErrorKind::Argument,
            format!(
                "array '{name}' holds {dtype}, not {}: use nb::get::<{dtype}>(\"{name}\")",
                T::DTYPE
            ),
        ));
    }
    let data = T::from_le_bytes_vec(&data);
    check_shape(data.len(), &shape).map_err(|e| err(ErrorKind::Protocol, e.message))?;
    Ok(Array { data, shape })
}

/// Run any magic line (e.g. `%launch add[auto](x, y, out, len(x))`); its output appears in the
/// cell. Returns the line's text result, if any.
pub fn exec(line: &str) -> Result<Option<String>> {
    let (reply, _) = request(json!({"op": "exec", "line": line}), &[])?;
    Ok(reply
        .get("result")
        .and_then(Value::as_str)
        .map(str::to_string))
}

/// Profile a launch as `%profile LAUNCH` does (LAUNCH as for `%launch`, e.g.
/// `"matmul[(16, 16), (16, 16)](a, b, c, n)"`; `"--gpu T4 …"` models another GPU) without
/// showing it: the metrics under Nsight Compute's names, e.g.
/// `m["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]`. The launch runs on copies of its
/// arrays; nothing changes.
pub fn profile(launch: &str) -> Result<std::collections::BTreeMap<String, f64>> {
    let (reply, _) = request(json!({"op": "profile", "launch": launch}), &[])?;
    Ok(reply
        .get("metrics")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_f64().map(|x| (k.clone(), x)))
                .collect()
        })
        .unwrap_or_default())
}

/// One entry of the timeline (`%timeline`): a piece of device work and when it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineEntry {
    /// `"kernel"`, `"copy"`, `"event"`, `"wait"` or `"sync"`.
    pub kind: String,
    /// The CUDA kernel, the array copied, the event, or what a sync waited for.
    pub name: String,
    /// `"default"`, a stream's name, or `"host"`.
    pub stream: String,
    /// Where it ran: `"stream s1"`, `"copy engine H→D"`, `"host"`, …
    pub lane: String,
    /// µs from the start of recording.
    pub start_us: f64,
    pub dur_us: f64,
}

/// What `%timeline` recorded (`%timeline on` starts recording).
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// "modelled on H200 (ptxsim)" or "measured on … with CUDA events".
    pub source: String,
    /// The GPU model when the times are modelled (ptxsim), None when measured.
    pub modelled_on: Option<String>,
    pub entries: Vec<TimelineEntry>,
}

impl Timeline {
    /// From the first start to the last end of `entries` of `kind` (all when None), µs.
    pub fn span_us(&self, kind: Option<&str>) -> f64 {
        let picked = self
            .entries
            .iter()
            .filter(|e| kind.is_none_or(|k| e.kind == k));
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for e in picked {
            lo = lo.min(e.start_us);
            hi = hi.max(e.start_us + e.dur_us);
        }
        if hi >= lo {
            hi - lo
        } else {
            0.0
        }
    }
}

/// The timeline recorded so far (`%timeline --json`, read back): every launch, copy, event
/// and sync since `%timeline on` (or `nb::exec("%timeline on")`), measured on a GPU and
/// modelled on ptxsim.
pub fn timeline() -> Result<Timeline> {
    let text = exec("%timeline --json")?.unwrap_or_default();
    let j: Value = serde_json::from_str(&text)
        .map_err(|e| err(ErrorKind::Protocol, format!("timeline JSON: {e}")))?;
    let events = j
        .get("traceEvents")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let lanes: std::collections::HashMap<u64, String> = events
        .iter()
        .filter(|e| e.get("name").and_then(Value::as_str) == Some("thread_name"))
        .filter_map(|e| {
            let tid = e.get("tid").and_then(Value::as_u64)?;
            Some((tid, s(e.get("args")?, "name")))
        })
        .collect();
    let entries = events
        .iter()
        .filter(|e| matches!(e.get("ph").and_then(Value::as_str), Some("X" | "i")))
        .map(|e| TimelineEntry {
            kind: s(e, "cat"),
            name: s(e, "name"),
            stream: e.get("args").map(|a| s(a, "stream")).unwrap_or_default(),
            lane: e
                .get("tid")
                .and_then(Value::as_u64)
                .and_then(|t| lanes.get(&t).cloned())
                .unwrap_or_default(),
            start_us: e.get("ts").and_then(Value::as_f64).unwrap_or(0.0),
            dur_us: e.get("dur").and_then(Value::as_f64).unwrap_or(0.0),
        })
        .collect();
    let other = j.get("otherData").cloned().unwrap_or(Value::Null);
    Ok(Timeline {
        source: s(&other, "source"),
        modelled_on: other
            .get("modelled_on")
            .and_then(Value::as_str)
            .map(str::to_string),
        entries,
    })
}

/// Free device arrays.
pub fn free(name: &str) -> Result<()> {
    request(json!({"op": "free", "name": name}), &[]).map(|_| ())
}

/// Where the arrays live: `"cuda"` on a GPU, `"ptxsim"` on the CPU simulator (follows
/// `%backend`). Lets a Rust cell skip or size GPU-only work:
/// `if nb::backend()? == "cuda" { ... }`.
pub fn backend() -> Result<String> {
    let (reply, _) = request(json!({"op": "backend"}), &[])?;
    Ok(reply
        .get("backend")
        .and_then(Value::as_str)
        .unwrap_or("ptxsim")
        .to_string())
}

/// The device arrays, sorted by name.
pub fn list() -> Result<Vec<ArrayInfo>> {
    let (reply, _) = request(json!({"op": "list"}), &[])?;
    Ok(reply
        .get("arrays")
        .and_then(Value::as_array)
        .map(|rows| {
            rows.iter()
                .map(|r| ArrayInfo {
                    name: r
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    dtype: r
                        .get("dtype")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    shape: r
                        .get("shape")
                        .and_then(Value::as_array)
                        .map(|s| {
                            s.iter()
                                .filter_map(Value::as_u64)
                                .map(|d| d as usize)
                                .collect()
                        })
                        .unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default())
}

/// Show device arrays in the cell, exactly as `%show` does: `names` is what follows `%show`
/// (one or more names, and options such as `--cmap magma --vmin 0`).
pub fn show(names: &str) -> Result<()> {
    exec(&format!("%show {names}")).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_for_every_element() {
        assert_eq!(
            f32::from_le_bytes_vec(&f32::to_le_bytes_vec(&[1.5, -2.0])),
            vec![1.5, -2.0]
        );
        assert_eq!(
            i64::from_le_bytes_vec(&i64::to_le_bytes_vec(&[i64::MIN, 7])),
            vec![i64::MIN, 7]
        );
        assert_eq!(u8::DTYPE, "u8");
    }

    #[cfg(feature = "half")]
    #[test]
    fn halves_travel_as_their_bits() {
        use half::{bf16, f16};
        let h = [
            f16::from_f32(1.5),
            f16::from_f32(-65504.0),
            f16::from_bits(1),
        ];
        let bytes = f16::to_le_bytes_vec(&h);
        assert_eq!(bytes, [0x00, 0x3E, 0xFF, 0xFB, 0x01, 0x00]);
        assert_eq!(f16::from_le_bytes_vec(&bytes), h);
        let b = [bf16::from_f32(1.0), bf16::from_f32(-3.0)];
        assert_eq!(bf16::to_le_bytes_vec(&b), [0x80, 0x3F, 0x40, 0xC0]);
        assert_eq!((f16::DTYPE, bf16::DTYPE), ("f16", "bf16"));
    }

    #[test]
    fn shapes_are_checked() {
        assert!(Array::new(vec![1.0f32; 6], vec![2, 3]).is_ok());
        let e = Array::new(vec![1.0f32; 5], vec![2, 3]).unwrap_err();
        assert_eq!(e.ename, "ArgumentError");
        assert!(check_shape(1, &[]).is_err());
        assert!(check_shape(1, &[usize::MAX, 2]).is_err());
    }

    #[test]
    fn without_the_kernel_calls_fail_clearly() {
        std::env::remove_var(SOCKET_ENV);
        let e = put("x", &[1.0f32]).unwrap_err();
        assert_eq!(e.ename, "NotConnected");
    }

    #[cfg(feature = "ndarray")]
    #[test]
    fn ndarray_conversions() {
        let a = ndarray::arr2(&[[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]]);
        let b = Array::from_ndarray(&a.t());
        assert_eq!(b.shape, vec![3, 2]);
        assert_eq!(b.data, vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        let c = b.to_ndarray();
        assert_eq!(c[[2, 1]], 6.0);
    }
}
