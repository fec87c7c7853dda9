//! The types that the compile path (`crate::compile`) and the device state (`crate::gpu`) share:
//! element types ([`Dtype`]), a CUDA kernel's C signature as the scanner reads it
//! ([`KernelParam`], [`ParamKind`], [`Aggregate`]), a `%%cuda` cell's options ([`CudaOptions`]) and
//! the error both report to users ([`GpuError`]), and how a number is written in messages
//! ([`fmt_f64`], as numpy prints it). `crate::gpu` re-exports the types.
//!
//! Plain data: this module sits below `compile` and `gpu` and must not import either (nor
//! `magics`, `display` or `kernel`).

pub mod dtype;

pub use dtype::Dtype;

use nb::ErrorKind;

/// An error for the user, shown as a Jupyter `error` reply with `ename`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct GpuError {
    pub ename: ErrorKind,
    pub message: String,
}

impl GpuError {
    pub fn new(ename: ErrorKind, message: impl Into<String>) -> GpuError {
        GpuError {
            ename,
            message: message.into(),
        }
    }
    pub fn argument(message: impl Into<String>) -> GpuError {
        GpuError::new(ErrorKind::Argument, message)
    }
    pub fn launch(message: impl Into<String>) -> GpuError {
        GpuError::new(ErrorKind::Launch, message)
    }
    pub fn memory(message: impl Into<String>) -> GpuError {
        GpuError::new(ErrorKind::Memory, message)
    }
    pub fn fault(message: impl Into<String>) -> GpuError {
        GpuError::new(ErrorKind::DeviceFault, message)
    }
    pub fn compile(message: impl Into<String>) -> GpuError {
        GpuError::new(ErrorKind::Compile, message)
    }
}

/// Options of a `%%cuda` cell.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CudaOptions {
    /// `--name M`: the module name; re-running a cell of the same name replaces its kernels.
    pub name: Option<String>,
    /// `-DNAME` / `-DNAME=V`.
    pub defines: Vec<(String, Option<String>)>,
    /// `--std=c++17` (the value after `=`, e.g. `"c++17"`).
    pub std: Option<String>,
    pub fast_math: bool,
    /// `-G`.
    pub device_debug: bool,
    /// `--arch sm_XX`.
    pub arch: Option<String>,
}

/// One parameter of a CUDA kernel's C signature.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelParam {
    pub name: String,
    /// As written (whitespace normalised), e.g. `"const float*"`.
    pub c_type: String,
    pub kind: ParamKind,
}

/// What a parameter accepts.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamKind {
    /// A pointer; `elem` is `None` for `void*` or a pointer to a struct.
    Pointer {
        elem: Option<Dtype>,
        is_const: bool,
    },
    Scalar(Dtype),
    /// A vector type (`float2`) or a struct of numbers and pointers by value, passed as a tuple
    /// or by member names.
    Aggregate(Aggregate),
    /// A `cuda::std::span` or `cuda::std::mdspan` by value: an array passes its pointer and
    /// extents.
    View(ArrayView),
    /// Anything else (a reference, a struct nbcuda cannot lay out): cannot be passed from a
    /// magic.
    Other,
}

/// The layout of a `cuda::std::span<T[, N]>` or `cuda::std::mdspan<T, extents<I, E...>>`
/// parameter as libcu++ stores it (`compile::views`): the data pointer and the extents that are
/// not fixed by the type.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayView {
    /// `"span"` or `"mdspan"`, for messages.
    pub what: &'static str,
    pub elem: Dtype,
    pub is_const: bool,
    /// Byte offset of the data pointer.
    pub ptr_offset: usize,
    /// One per dimension, outermost first.
    pub extents: Vec<ViewExtent>,
    /// The type the stored extents have (`size_t` for a span, the `extents`' index type).
    pub index: Dtype,
    pub size: usize,
}

/// One extent of an [`ArrayView`]: fixed by the type, or stored in the parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ViewExtent {
    Fixed(usize),
    /// Stored at this byte offset, as [`ArrayView::index`].
    Stored(usize),
}

/// The C layout of a by-value vector or struct parameter (`compile::structs`).
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate {
    /// The type's name (`float2`, `Matrix`), which the named syntax `Matrix(width=4, …)` may
    /// repeat.
    pub name: String,
    /// Every number and pointer of it in declaration order (nested members flattened).
    pub fields: Vec<AggregateField>,
    pub size: usize,
    pub align: usize,
}

/// One number or pointer of an aggregate: `x`, `pos.y`, `taps[2]`, `elements`.
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateField {
    pub name: String,
    /// The number's type; `u64` for a pointer.
    pub dtype: Dtype,
    pub offset: usize,
    /// `Some` for a pointer member, which takes an array, `array + offset` or null.
    pub pointer: Option<Pointee>,
}

/// What a pointer points to: `elem` is `None` for `void*` or a pointer to a struct.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pointee {
    pub elem: Option<Dtype>,
    pub is_const: bool,
}

/// A float like numpy prints it: `1.0`, `0.25`, `1e-05`, `nan`, `inf`.
pub fn fmt_f64(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == v.trunc() && v.abs() < 1e16 {
        return format!("{v:.1}");
    }
    if v != 0.0 && (v.abs() < 1e-4 || v.abs() >= 1e16) {
        return format!("{v:e}");
    }
    format!("{v}")
}
