//! The kinds of error a notebook shows: the `ename` of a Jupyter error output (`CompileError`,
//! `LaunchError`, …). The Jupyter kernel's magic lines, its GPU layer and Rust cells' `nb` calls
//! all name their errors with [`ErrorKind`], so each kind is spelled once and a Rust cell can
//! `match` on [`Error::kind`](crate::Error::kind):
//!
//! ```ignore
//! match nb::exec("%launch add[auto](x, y, out, len(x))") {
//!     Err(e) if e.kind() == nb::ErrorKind::DeviceFault => println!("the GPU faulted: {e}"),
//!     other => { other?; }
//! }
//! ```
//!
//! Only names live here: no message is written and nothing is sent.

use std::fmt;

/// What went wrong, as a notebook names it. [`ErrorKind::as_str`] is the `ename` of the Jupyter
/// error output (and the prefix of `nb::Error`'s `Display`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `SyntaxError`: a magic line or cell header that does not parse.
    Syntax,
    /// `UnknownMagic`: a magic name that does not exist.
    UnknownMagic,
    /// `ArgumentError`: arguments that parse but do not fit (an unknown array, a wrong dtype or
    /// shape, a value out of range).
    Argument,
    /// `CompileError`: NVRTC or the Rust compiler refused the code.
    Compile,
    /// `LaunchError`: a CUDA kernel launch that could not start or finish.
    Launch,
    /// `MemoryError`: device or host memory ran out, or a size is over a limit.
    Memory,
    /// `DeviceFault`: the device faulted while running a CUDA kernel (an illegal address, a trap).
    DeviceFault,
    /// `DeviceError`: any other failure of the device or of the GPU worker process.
    Device,
    /// `GraphError`: a CUDA graph that could not be captured, built or run.
    Graph,
    /// `IOError`: a file that could not be read or written.
    Io,
    /// `Interrupted`: the user interrupted the cell.
    Interrupted,
    /// `Panic`: a Rust cell panicked.
    Panic,
    /// `ChildProcessDied`: the process that runs Rust cells died.
    ChildProcessDied,
    /// `RustUnavailable`: Rust cells cannot run (no toolchain).
    RustUnavailable,
    /// `RustError`: any other failure of the Rust cell engine.
    Rust,
    /// `Error`: a Rust cell's own error (its `?` on an error that is not from `nb`).
    Other,
    /// `InternalError`: the Jupyter kernel failed itself.
    Internal,
    /// `ProtocolError`: `nb` and the Jupyter kernel did not understand each other.
    Protocol,
    /// `NotConnected`: `nb` was called outside the nbcuda Jupyter kernel, or cannot reach it.
    NotConnected,
}

impl ErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [ErrorKind; 19] = [
        ErrorKind::Syntax,
        ErrorKind::UnknownMagic,
        ErrorKind::Argument,
        ErrorKind::Compile,
        ErrorKind::Launch,
        ErrorKind::Memory,
        ErrorKind::DeviceFault,
        ErrorKind::Device,
        ErrorKind::Graph,
        ErrorKind::Io,
        ErrorKind::Interrupted,
        ErrorKind::Panic,
        ErrorKind::ChildProcessDied,
        ErrorKind::RustUnavailable,
        ErrorKind::Rust,
        ErrorKind::Other,
        ErrorKind::Internal,
        ErrorKind::Protocol,
        ErrorKind::NotConnected,
    ];

    /// The `ename` of the Jupyter error output, e.g. `"LaunchError"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Syntax => "SyntaxError",
            ErrorKind::UnknownMagic => "UnknownMagic",
            ErrorKind::Argument => "ArgumentError",
            ErrorKind::Compile => "CompileError",
            ErrorKind::Launch => "LaunchError",
            ErrorKind::Memory => "MemoryError",
            ErrorKind::DeviceFault => "DeviceFault",
            ErrorKind::Device => "DeviceError",
            ErrorKind::Graph => "GraphError",
            ErrorKind::Io => "IOError",
            ErrorKind::Interrupted => "Interrupted",
            ErrorKind::Panic => "Panic",
            ErrorKind::ChildProcessDied => "ChildProcessDied",
            ErrorKind::RustUnavailable => "RustUnavailable",
            ErrorKind::Rust => "RustError",
            ErrorKind::Other => "Error",
            ErrorKind::Internal => "InternalError",
            ErrorKind::Protocol => "ProtocolError",
            ErrorKind::NotConnected => "NotConnected",
        }
    }

    /// The kind whose [`as_str`](ErrorKind::as_str) is `ename`, if any (an `ename` that crossed
    /// a socket).
    pub fn from_ename(ename: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.as_str() == ename)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A kind equals its `ename`: `e.kind() == "LaunchError"` holds for a launch error.
impl PartialEq<str> for ErrorKind {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ErrorKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enames_are_distinct_and_read_back() {
        for (i, k) in ErrorKind::ALL.into_iter().enumerate() {
            assert_eq!(ErrorKind::from_ename(k.as_str()), Some(k));
            assert_eq!(k.to_string(), k.as_str());
            assert!(ErrorKind::ALL[..i].iter().all(|o| o.as_str() != k.as_str()));
        }
        assert_eq!(ErrorKind::from_ename("NoSuchError"), None);
        assert_eq!(ErrorKind::Io, "IOError");
        assert_eq!(ErrorKind::Other.as_str(), "Error");
    }
}
