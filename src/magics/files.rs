//! `%load` and `%save`: images (PNG/JPEG through the `image` crate) and `.npy` files (through
//! `npyz`) to and from row-major little-endian array bytes.
//!
//! File formats only: this module never touches the device; the caller creates or reads the
//! array. Errors are `(ename, message)` pairs: `IOError` for files, `ArgumentError` for arrays that
//! a format cannot hold, `MemoryError` for sizes over the host limit, `Interrupted` when the
//! cell was interrupted.
//!
//! Only regular files are opened (a FIFO, socket or device is refused by its file type, so a
//! read never waits for a writer), a `.npy` header is checked for size and nesting before it is
//! parsed, and [`interruptible`] runs a load or save on a thread of its own, so that the
//! interrupt button returns the cell at once even when the file system does not.

use super::host::{self, put_f64, put_int};
use crate::display::stats;
use crate::display::values;
use crate::gpu::Dtype;
use nb::ErrorKind;
use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub type FileResult<T> = Result<T, (ErrorKind, String)>;

/// Host-side array data.
#[derive(Debug, Clone, PartialEq)]
pub struct HostArray {
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    pub data: Vec<u8>,
}

/// `~/x` → the home directory; everything else as given (relative to the Jupyter kernel's working
/// directory, which is the notebook's).
pub fn expand(path: &str) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/") {
        if let Some(home) = dirs::home_dir() {
            return home.join(rest);
        }
    }
    PathBuf::from(path)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Png,
    Jpeg,
    Npy,
}

fn format_of(path: &str) -> FileResult<Format> {
    let ext = Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("png") => Ok(Format::Png),
        Some("jpg") | Some("jpeg") => Ok(Format::Jpeg),
        Some("npy") => Ok(Format::Npy),
        _ => Err((
            ErrorKind::Io,
            format!("cannot tell the format of '{path}': use a .png, .jpg or .npy file"),
        )),
    }
}

fn io_err(path: &str, e: impl std::fmt::Display) -> (ErrorKind, String) {
    (ErrorKind::Io, format!("{path}: {e}"))
}

/// Reads an image or `.npy` file. `gray` applies to images; `as_dtype` converts (images to f32/f64
/// are scaled to [0, 1]).
pub fn load(path: &str, gray: bool, as_dtype: Option<Dtype>) -> FileResult<HostArray> {
    load_with(path, gray, as_dtype, &Arc::new(AtomicBool::new(false)))
}

/// [`load`], stopping at its next read once `stop` is raised.
fn load_with(
    path: &str,
    gray: bool,
    as_dtype: Option<Dtype>,
    stop: &Arc<AtomicBool>,
) -> FileResult<HostArray> {
    let fmt = format_of(path)?;
    let p = expand(path);
    if !p.exists() {
        return Err((ErrorKind::Io, format!("no such file: '{path}'")));
    }
    let file = StopAt {
        inner: open_regular(path, &p, Access::Read)?,
        stop: stop.clone(),
    };
    match fmt {
        Format::Png | Format::Jpeg => load_image(path, file, gray, as_dtype),
        Format::Npy => {
            if gray {
                return Err((
                    ErrorKind::Argument,
                    "--gray applies to images, not to .npy files".into(),
                ));
            }
            let a = load_npy(path, file)?;
            match as_dtype {
                Some(d) if d != a.dtype => Ok(HostArray {
                    data: convert(a.dtype, &a.data, d)?,
                    dtype: d,
                    shape: a.shape,
                }),
                _ => Ok(a),
            }
        }
    }
}

fn load_image(
    path: &str,
    file: StopAt<File>,
    gray: bool,
    as_dtype: Option<Dtype>,
) -> FileResult<HostArray> {
    let mut reader = image::ImageReader::new(BufReader::new(file))
        .with_guessed_format()
        .map_err(|e| io_err(path, e))?;
    // Checked from the header, before any pixel is decoded: a 347-byte JPEG that declares
    // 21573 × 20556 pixels made the decoder allocate and fill 443 MB, and the conversion 1.3 GB.
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_IMAGE_SIDE);
    limits.max_image_height = Some(MAX_IMAGE_SIDE);
    limits.max_alloc = Some(MAX_IMAGE_DECODE_BYTES);
    reader.limits(limits);
    let img = reader.decode().map_err(|e| match e {
        image::ImageError::Limits(_) => io_err(
            path,
            format!(
                "the image is too large to load: %load takes images of at most \
                 {MAX_IMAGE_SIDE} × {MAX_IMAGE_SIDE} pixels ({} MiB decoded)",
                MAX_IMAGE_DECODE_BYTES >> 20
            ),
        ),
        e => io_err(path, e),
    })?;
    let (w, h) = (img.width() as usize, img.height() as usize);
    if w * h > MAX_IMAGE_PIXELS {
        return Err(io_err(
            path,
            format!(
                "the image is too large to load: {w} × {h} pixels; %load takes at most \
                 {MAX_IMAGE_PIXELS} pixels (8192 × 8192)"
            ),
        ));
    }
    let (shape, data) = if gray {
        (vec![h, w], img.to_luma8().into_raw())
    } else if img.color().has_alpha() {
        (vec![h, w, 4], img.to_rgba8().into_raw())
    } else {
        (vec![h, w, 3], img.to_rgb8().into_raw())
    };
    let dtype = as_dtype.unwrap_or(Dtype::U8);
    let data = if dtype == Dtype::U8 {
        data
    } else {
        let mut out = host::alloc(dtype, data.len()).map_err(|m| (ErrorKind::Memory, m))?;
        for &v in &data {
            if dtype.is_float() {
                put_f64(dtype, v as f64 / 255.0, &mut out);
            } else {
                put_int(dtype, v as i128, &mut out);
            }
        }
        out
    };
    Ok(HostArray { dtype, shape, data })
}

/// Converts element bytes between dtypes like numpy's `astype` (floats to integers truncate and
/// saturate, integers to narrower integers wrap).
pub fn convert(from: Dtype, data: &[u8], to: Dtype) -> FileResult<Vec<u8>> {
    let n = data.len() / from.size();
    let mut out = host::alloc(to, n).map_err(|m| (ErrorKind::Memory, m))?;
    for i in 0..n {
        if from.is_float() {
            put_f64(to, values::get_f64(from, data, i), &mut out);
        } else {
            put_int(to, values::get_i128(from, data, i), &mut out);
        }
    }
    Ok(out)
}

macro_rules! read_typed {
    ($file:expr, $t:ty, $path:expr) => {{
        let v: Vec<$t> = $file.into_vec::<$t>().map_err(|e| io_err($path, e))?;
        let mut out = Vec::with_capacity(v.len() * std::mem::size_of::<$t>());
        for x in v {
            out.extend_from_slice(&x.to_le_bytes());
        }
        out
    }};
}

fn load_npy(path: &str, file: StopAt<File>) -> FileResult<HostArray> {
    let mut r = BufReader::new(file);
    let head = npy_header(path, &mut r)?;
    let file_len = r
        .get_ref()
        .inner
        .metadata()
        .map_err(|e| io_err(path, e))?
        .len();
    let data_len = file_len.saturating_sub(head.len() as u64);
    let file = npyz::NpyFile::new(io::Cursor::new(head).chain(r)).map_err(|e| io_err(path, e))?;
    let shape: Vec<usize> = file.shape().iter().map(|&d| d as usize).collect();
    if shape.is_empty() || shape.len() > 4 {
        return Err((
            ErrorKind::Argument,
            format!(
                "{path}: a {}-dimensional array; %load takes 1 to 4 dimensions",
                shape.len()
            ),
        ));
    }
    if shape.contains(&0) {
        return Err((ErrorKind::Argument, format!("{path}: the array is empty")));
    }
    let item = file.dtype().num_bytes().unwrap_or(0) as u64;
    let want = file
        .shape()
        .iter()
        .try_fold(item, |acc, &d| acc.checked_mul(d));
    match want {
        Some(w) if w <= data_len => {}
        Some(w) => {
            return Err((
                ErrorKind::Io,
                format!(
                "{path}: the header's shape needs {w} bytes of data but the file holds {data_len}"
            ),
            ))
        }
        None => {
            return Err((
                ErrorKind::Io,
                format!("{path}: the header's shape has more elements than fit in memory"),
            ))
        }
    }
    let strides: Vec<usize> = file.strides().iter().map(|&s| s as usize).collect();
    let fortran = file.order() == npyz::Order::Fortran;
    let npyz::DType::Plain(ts) = file.dtype() else {
        return Err((
            ErrorKind::Argument,
            format!("{path}: structured dtypes are not supported"),
        ));
    };
    use npyz::TypeChar;
    let (dtype, data) = match (ts.type_char(), ts.size_field()) {
        (TypeChar::Float, 4) => (Dtype::F32, read_typed!(file, f32, path)),
        (TypeChar::Float, 8) => (Dtype::F64, read_typed!(file, f64, path)),
        (TypeChar::Float, 2) => (Dtype::F16, read_typed!(file, half::f16, path)),
        // Two raw bytes: a bfloat16 (see `save_npy`).
        (TypeChar::RawData, 2) => {
            let v: Vec<npyz::FixedSizeBytes<2>> = file.into_vec().map_err(|e| io_err(path, e))?;
            (Dtype::BF16, v.into_iter().flat_map(|b| b.0).collect())
        }
        (TypeChar::Int, 1) => (Dtype::I8, read_typed!(file, i8, path)),
        (TypeChar::Int, 2) => (Dtype::I16, read_typed!(file, i16, path)),
        (TypeChar::Int, 4) => (Dtype::I32, read_typed!(file, i32, path)),
        (TypeChar::Int, 8) => (Dtype::I64, read_typed!(file, i64, path)),
        (TypeChar::Uint, 1) => (Dtype::U8, read_typed!(file, u8, path)),
        (TypeChar::Uint, 2) => (Dtype::U16, read_typed!(file, u16, path)),
        (TypeChar::Uint, 4) => (Dtype::U32, read_typed!(file, u32, path)),
        (TypeChar::Uint, 8) => (Dtype::U64, read_typed!(file, u64, path)),
        (TypeChar::Bool, 1) => {
            let v: Vec<bool> = file.into_vec::<bool>().map_err(|e| io_err(path, e))?;
            (Dtype::U8, v.into_iter().map(u8::from).collect())
        }
        _ => {
            return Err((
                ErrorKind::Argument,
                format!(
                    "{path}: dtype '{ts}' is not supported (use f32 f64 f16 i8..i64 u8..u64 bool, or V2 for bf16)"
                ),
            ))
        }
    };
    let data = if fortran && shape.len() > 1 {
        to_c_order(&data, dtype.size(), &shape, &strides)
    } else {
        data
    };
    Ok(HostArray { dtype, shape, data })
}

/// numpy's own limit on a `.npy` header (`max_header_size` of `numpy.lib.format`).
pub const NPY_MAX_HEADER_BYTES: usize = 10_000;

/// The widest and tallest image `%load` takes, in pixels.
pub const MAX_IMAGE_SIDE: u32 = 16384;

/// The most pixels an image `%load` takes may have (8192 × 8192).
pub const MAX_IMAGE_PIXELS: usize = 1 << 26;

/// The most memory an image's decoder may use (the image crate's `Limits::max_alloc`).
pub const MAX_IMAGE_DECODE_BYTES: u64 = 512 << 20;

/// The deepest nesting of brackets a `.npy` header may have: the dict, a structured dtype's
/// list of fields, a field's tuple and its shape tuple.
pub const NPY_MAX_NESTING: usize = 4;

/// Reads and checks a `.npy` preamble and header (magic, version, length up to
/// [`NPY_MAX_HEADER_BYTES`], bracket nesting up to [`NPY_MAX_NESTING`]) before any parser sees
/// them; returns the bytes read, to be parsed.
pub fn npy_header(path: &str, r: &mut impl Read) -> FileResult<Vec<u8>> {
    let bad = |what: String| {
        (
            ErrorKind::Io,
            format!("{path}: not a valid .npy file: {what}"),
        )
    };
    let mut head = vec![0u8; 8];
    r.read_exact(&mut head)
        .map_err(|_| bad("shorter than the 8-byte preamble".into()))?;
    if &head[..6] != b"\x93NUMPY" {
        return Err(bad("it does not start with \\x93NUMPY".into()));
    }
    let len_bytes = match head[6] {
        1 => 2,
        2 | 3 => 4,
        v => return Err(bad(format!("unknown format version {v}"))),
    };
    let mut len = [0u8; 4];
    r.read_exact(&mut len[..len_bytes])
        .map_err(|_| bad("the header length is cut off".into()))?;
    head.extend_from_slice(&len[..len_bytes]);
    let n = u32::from_le_bytes(len) as usize;
    if n > NPY_MAX_HEADER_BYTES {
        return Err((
            ErrorKind::Io,
            format!(
                "{path}: the .npy header is {n} bytes, over numpy's limit of {NPY_MAX_HEADER_BYTES} (max_header_size)"
            ),
        ));
    }
    let start = head.len();
    head.resize(start + n, 0);
    r.read_exact(&mut head[start..])
        .map_err(|_| bad(format!("the {n}-byte header is cut off")))?;
    let mut depth = 0usize;
    let mut quote = None;
    for &c in &head[start..] {
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, b'\'' | b'"') => quote = Some(c),
            (None, b'(' | b'[' | b'{') => {
                depth += 1;
                if depth > NPY_MAX_NESTING {
                    return Err(bad(format!(
                        "its header nests brackets more than {NPY_MAX_NESTING} deep"
                    )));
                }
            }
            (None, b')' | b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(head)
}

/// Reorders elements stored with `strides` (in elements) into C order.
fn to_c_order(data: &[u8], size: usize, shape: &[usize], strides: &[usize]) -> Vec<u8> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n * size);
    let mut idx = vec![0usize; shape.len()];
    for _ in 0..n {
        let src: usize = idx.iter().zip(strides).map(|(i, s)| i * s).sum();
        out.extend_from_slice(
            data.get(src * size..src * size + size)
                .unwrap_or(&[0; 8][..size]),
        );
        for k in (0..shape.len()).rev() {
            idx[k] += 1;
            if idx[k] < shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    out
}

/// Writes an array to `.npy` (any) or `.png`/`.jpg` (images: see `%help save`).
pub fn save(path: &str, a: &HostArray) -> FileResult<()> {
    save_with(path, a, &Arc::new(AtomicBool::new(false)))
}

/// [`save`], stopping at its next write once `stop` is raised.
fn save_with(path: &str, a: &HostArray, stop: &Arc<AtomicBool>) -> FileResult<()> {
    let fmt = format_of(path)?;
    let p = expand(path);
    let file = StopAt {
        inner: open_regular(path, &p, Access::Write)?,
        stop: stop.clone(),
    };
    let mut w = BufWriter::new(file);
    match fmt {
        Format::Npy => save_npy(path, &mut w, a)?,
        Format::Png | Format::Jpeg => save_image(path, &mut w, a, fmt)?,
    }
    w.flush().map_err(|e| io_err(path, e))
}

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    /// Created or truncated.
    Write,
}

/// Opens `p` if it is (or, for writing, will be) a regular file. A FIFO, socket or device is
/// refused by its file type before it is opened, and again after (non-blocking, so that a FIFO
/// put in its place meanwhile cannot make the open wait for a peer).
fn open_regular(path: &str, p: &Path, access: Access) -> FileResult<File> {
    let refuse = |t: std::fs::FileType| {
        let what = if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO (named pipe)"
        } else if t.is_socket() {
            "a socket"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else {
            "not a regular file"
        };
        (
            ErrorKind::Io,
            format!("'{path}' is {what}: %load and %save use regular files only"),
        )
    };
    match std::fs::metadata(p) {
        Ok(m) if !m.is_file() => return Err(refuse(m.file_type())),
        Ok(_) => {}
        Err(e) if access == Access::Write && e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(path, e)),
    }
    let mut o = OpenOptions::new();
    match access {
        Access::Read => o.read(true),
        Access::Write => o.write(true).create(true).truncate(true),
    };
    let f = o
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(p)
        .map_err(|e| io_err(path, e))?;
    let m = f.metadata().map_err(|e| io_err(path, e))?;
    if !m.is_file() {
        return Err(refuse(m.file_type()));
    }
    Ok(f)
}

/// A file whose reads and writes fail once `stop` is raised: a load or save abandoned by an
/// interrupt stops at its next call instead of running on.
struct StopAt<F> {
    inner: F,
    stop: Arc<AtomicBool>,
}

impl<F> StopAt<F> {
    fn check(&self) -> io::Result<()> {
        if self.stop.load(Ordering::Relaxed) {
            Err(io::Error::other("interrupted"))
        } else {
            Ok(())
        }
    }
}

impl<F: Read> Read for StopAt<F> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.check()?;
        self.inner.read(buf)
    }
}

impl<F: Write> Write for StopAt<F> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.check()?;
        self.inner.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<F: Seek> Seek for StopAt<F> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.inner.seek(pos)
    }
}

/// How often a waiting [`interruptible`] looks at the cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(10);

/// Loads an array as [`load`] does, interruptibly (see [`interruptible`]).
pub fn load_interruptible(
    path: &str,
    gray: bool,
    as_dtype: Option<Dtype>,
    cancel: &AtomicBool,
) -> FileResult<HostArray> {
    let path = path.to_string();
    interruptible(cancel, move |stop| load_with(&path, gray, as_dtype, stop))
        .map_err(|e| interrupted_as(e, "reading the file was interrupted".into()))
}

/// Saves an array as [`save`] does, interruptibly (see [`interruptible`]); an interrupted save
/// may leave the file incomplete, and says so.
pub fn save_interruptible(path: &str, a: HostArray, cancel: &AtomicBool) -> FileResult<()> {
    let owned = path.to_string();
    interruptible(cancel, move |stop| save_with(&owned, &a, stop)).map_err(|e| {
        interrupted_as(
            e,
            format!("saving '{path}' was interrupted; the file may be incomplete"),
        )
    })
}

fn interrupted_as(e: (ErrorKind, String), message: String) -> (ErrorKind, String) {
    if e.0 == ErrorKind::Interrupted {
        (ErrorKind::Interrupted, message)
    } else {
        e
    }
}

/// Runs a file operation `op` on a thread of its own and waits for it, returning `Interrupted`
/// within [`CANCEL_POLL`] of `cancel` being raised, however long `op` blocks. `op` gets a flag
/// that is raised then, for the [`StopAt`] wrappers of its files: the abandoned operation stops
/// at its next read or write.
pub fn interruptible<T: Send + 'static>(
    cancel: &AtomicBool,
    op: impl FnOnce(&Arc<AtomicBool>) -> FileResult<T> + Send + 'static,
) -> FileResult<T> {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let thread_stop = stop.clone();
    std::thread::Builder::new()
        .name("nbcuda-file".into())
        .spawn(move || {
            let _ = tx.send(op(&thread_stop));
        })
        .map_err(|e| (ErrorKind::Io, format!("cannot start a file thread: {e}")))?;
    loop {
        match rx.recv_timeout(CANCEL_POLL) {
            Ok(r) => return r,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err((ErrorKind::Io, "the file operation failed".into()))
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        if cancel.load(Ordering::Relaxed) {
            stop.store(true, Ordering::Relaxed);
            return Err((
                ErrorKind::Interrupted,
                "the file operation was interrupted".into(),
            ));
        }
    }
}

macro_rules! write_typed {
    ($t:ty, $a:expr, $w:expr, $path:expr) => {{
        let n = std::mem::size_of::<$t>();
        let shape: Vec<u64> = $a.shape.iter().map(|&d| d as u64).collect();
        let mut writer = {
            use npyz::WriterBuilder;
            npyz::WriteOptions::<$t>::new()
                .default_dtype()
                .shape(&shape)
                .writer($w)
                .begin_nd()
                .map_err(|e| io_err($path, e))?
        };
        for c in $a.data.chunks_exact(n) {
            let mut b = [0u8; std::mem::size_of::<$t>()];
            b.copy_from_slice(c);
            writer
                .push(&<$t>::from_le_bytes(b))
                .map_err(|e| io_err($path, e))?;
        }
        writer.finish().map_err(|e| io_err($path, e))?;
    }};
}

/// The `.npy` descriptor of a bf16 array: two raw bytes, as numpy writes `ml_dtypes.bfloat16`.
const BF16_NPY: &str = "|V2";

fn save_npy(path: &str, w: &mut impl Write, a: &HostArray) -> FileResult<()> {
    match a.dtype {
        Dtype::F32 => write_typed!(f32, a, w, path),
        Dtype::F64 => write_typed!(f64, a, w, path),
        Dtype::F16 => write_typed!(half::f16, a, w, path),
        // numpy has no bfloat16: the 2-byte void type `|V2`, which is what `np.save` writes for
        // an `ml_dtypes.bfloat16` array (`np.load(f).view(ml_dtypes.bfloat16)` reads it back).
        Dtype::BF16 => {
            use npyz::WriterBuilder;
            let mut writer = npyz::WriteOptions::<npyz::FixedSizeBytes<2>>::new()
                .dtype(npyz::DType::Plain(
                    BF16_NPY.parse().map_err(|e| io_err(path, e))?,
                ))
                .shape(&a.shape.iter().map(|&d| d as u64).collect::<Vec<_>>())
                .writer(w)
                .begin_nd()
                .map_err(|e| io_err(path, e))?;
            for c in a.data.chunks_exact(2) {
                writer
                    .push(&npyz::FixedSizeBytes([c[0], c[1]]))
                    .map_err(|e| io_err(path, e))?;
            }
            writer.finish().map_err(|e| io_err(path, e))?;
        }
        Dtype::I8 => write_typed!(i8, a, w, path),
        Dtype::I16 => write_typed!(i16, a, w, path),
        Dtype::I32 => write_typed!(i32, a, w, path),
        Dtype::I64 => write_typed!(i64, a, w, path),
        Dtype::U8 => write_typed!(u8, a, w, path),
        Dtype::U16 => write_typed!(u16, a, w, path),
        Dtype::U32 => write_typed!(u32, a, w, path),
        Dtype::U64 => write_typed!(u64, a, w, path),
    }
    Ok(())
}

/// Min-max scales any 2-D array to gray bytes (constant arrays and NaN give 0).
pub fn to_gray_u8(dtype: Dtype, data: &[u8]) -> Vec<u8> {
    let s = stats::stats(dtype, data);
    let range = s.max - s.min;
    (0..data.len() / dtype.size())
        .map(|i| {
            let v = values::get_f64(dtype, data, i);
            if !v.is_finite() || !range.is_finite() || range <= 0.0 {
                0
            } else {
                ((v - s.min) / range * 255.0).round().clamp(0.0, 255.0) as u8
            }
        })
        .collect()
}

fn save_image(
    path: &str,
    out: &mut (impl Write + Seek),
    a: &HostArray,
    fmt: Format,
) -> FileResult<()> {
    let bad = || {
        (
            ErrorKind::Argument,
            format!(
                "cannot save a {} {} array as an image: images are (H, W) or (H, W, 3|4); use .npy",
                a.dtype,
                values::fmt_shape(&a.shape)
            ),
        )
    };
    let (h, w, channels) = match a.shape.as_slice() {
        [h, w] => (*h, *w, 1),
        [h, w, 1] => (*h, *w, 1),
        [h, w, c @ (3 | 4)] => (*h, *w, *c),
        _ => return Err(bad()),
    };
    let (Ok(w32), Ok(h32)) = (u32::try_from(w), u32::try_from(h)) else {
        return Err(bad());
    };
    let mut bytes = if channels == 1 {
        if a.dtype == Dtype::U8 {
            a.data.clone()
        } else {
            to_gray_u8(a.dtype, &a.data)
        }
    } else {
        (0..a.data.len() / a.dtype.size())
            .map(|i| match a.dtype {
                Dtype::U8 => a.data[i],
                d if d.is_float() => {
                    let v = values::get_f64(d, &a.data, i);
                    if v.is_nan() {
                        0
                    } else {
                        (v.clamp(0.0, 1.0) * 255.0).round() as u8
                    }
                }
                d => values::get_i128(d, &a.data, i).clamp(0, 255) as u8,
            })
            .collect()
    };
    let mut channels = channels;
    if fmt == Format::Jpeg && channels == 4 {
        bytes = bytes
            .chunks_exact(4)
            .flat_map(|c| [c[0], c[1], c[2]])
            .collect();
        channels = 3;
    }
    let color = match channels {
        1 => image::ExtendedColorType::L8,
        3 => image::ExtendedColorType::Rgb8,
        _ => image::ExtendedColorType::Rgba8,
    };
    let format = if fmt == Format::Png {
        image::ImageFormat::Png
    } else {
        image::ImageFormat::Jpeg
    };
    image::write_buffer_with_format(out, &bytes, w32, h32, color, format)
        .map_err(|e| io_err(path, e))
}
