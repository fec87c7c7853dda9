//! Launch arguments against a CUDA kernel's C signature: every check that must pass before
//! anything runs (count, array vs scalar, dtype vs pointer type, integer ranges, unknown arrays)
//! and the packing of each argument into the bytes of its parameter, plus the launch
//! configuration checks against the device limits. The one check of launch arguments: the command
//! language (`magics::launch`) evaluates arguments and calls [`pack`] through
//! `DeviceState::check_args`, and every launch runs it again on the loaded CUDA kernel; each
//! message is written here once.
//!
//! This module is pure: it reads arrays' metadata through a lookup and never touches a device.

use super::backend::{DevPtr, KernelMeta};
use super::{DeviceLimits, Dim3, Dtype, GpuError, KernelParam, LaunchArg, ParamKind};
use crate::suggest::{did_you_mean, Quote};
use crate::types::fmt_f64;

/// What the packer needs to know about a named array.
#[derive(Debug, Clone, Copy)]
pub struct ArrayRef {
    pub dtype: Dtype,
    pub ptr: DevPtr,
    /// Number of elements.
    pub len: usize,
}

/// Packed parameters and which arrays the launch uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Packed {
    /// One little-endian byte vector per parameter.
    pub params: Vec<Vec<u8>>,
    /// `(array name, parameter index, written)` for every array argument.
    pub arrays: Vec<(String, usize, bool)>,
}

/// `add(const float* a, const float* b, float* c, int n)`.
pub fn signature(kernel: &str, params: &[KernelParam]) -> String {
    let list: Vec<String> = params.iter().map(declaration).collect();
    format!("{kernel}({})", list.join(", "))
}

/// `const float* a`.
fn declaration(p: &KernelParam) -> String {
    format!("{} {}", p.c_type, p.name)
}

/// A launch argument that does not fit its parameter: the message, and which argument (0-based;
/// None when the count is wrong), so that the command language can put a caret under it.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgError {
    pub position: Option<usize>,
    pub message: String,
}

impl From<ArgError> for GpuError {
    fn from(e: ArgError) -> GpuError {
        GpuError::argument(e.message)
    }
}

/// `argument 2 of %launch (float* y)`: how messages name argument `i`; `caller` is what the user
/// called (`%launch`, or the CUDA kernel's name).
pub fn label(caller: &str, i: usize, p: &KernelParam) -> String {
    format!("argument {} of {caller} ({})", i + 1, declaration(p))
}

fn describe_arg(a: &LaunchArg) -> String {
    match a {
        LaunchArg::Array(n) => format!("array '{n}'"),
        LaunchArg::ArrayAt(n, off) => format!("`{n} + {off}`"),
        LaunchArg::Null => "null".into(),
        LaunchArg::Int(v) => format!("the number {v}"),
        LaunchArg::Float(v) => format!("the number {}", fmt_f64(*v)),
        LaunchArg::Fields(f) => format!("a tuple of {}", f.len()),
    }
}

/// Checks `args` against `params` and packs them: the one check of launch arguments (count,
/// array vs scalar, unknown arrays with a "did you mean", element type, offsets, tuples, integer
/// and float ranges). `caller` names the call in messages (see [`label`]).
pub fn pack(
    kernel: &str,
    caller: &str,
    params: &[KernelParam],
    args: &[LaunchArg],
    lookup: &dyn Fn(&str) -> Option<ArrayRef>,
    array_names: &dyn Fn() -> Vec<String>,
) -> Result<Packed, ArgError> {
    if args.len() != params.len() {
        return Err(ArgError {
            position: None,
            message: wrong_count(kernel, params, args.len()),
        });
    }
    let mut out = Packed::default();
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        let which = label(caller, i, p);
        let bytes = pack_one(p, a, &which, lookup, array_names).map_err(|message| ArgError {
            position: Some(i),
            message,
        })?;
        if let (
            ParamKind::Pointer { is_const, .. },
            LaunchArg::Array(n) | LaunchArg::ArrayAt(n, _),
        ) = (&p.kind, a)
        {
            out.arrays.push((n.clone(), i, !is_const));
        }
        out.params.push(bytes);
    }
    Ok(out)
}

/// `axpy takes 4 arguments (const float* x, float* y, float a, int n), got 3`.
pub fn wrong_count(kernel: &str, params: &[KernelParam], got: usize) -> String {
    let list: Vec<String> = params.iter().map(declaration).collect();
    format!(
        "{kernel} takes {} argument{} ({}), got {got}",
        params.len(),
        if params.len() == 1 { "" } else { "s" },
        list.join(", "),
    )
}

/// The bytes of one argument, or why it does not fit its parameter (`which` names it).
fn pack_one(
    p: &KernelParam,
    a: &LaunchArg,
    which: &str,
    lookup: &dyn Fn(&str) -> Option<ArrayRef>,
    array_names: &dyn Fn() -> Vec<String>,
) -> Result<Vec<u8>, String> {
    match (&p.kind, a) {
        (ParamKind::Other, _) => Err(format!(
            "{which}: the type `{}` cannot be passed from %launch (it passes arrays to \
             pointers, numbers to integer or floating-point scalars and tuples to vector types \
             and structs)",
            p.c_type
        )),
        (ParamKind::Pointer { .. }, LaunchArg::Null) => Ok(vec![0u8; 8]),
        (ParamKind::Pointer { elem, .. }, LaunchArg::Array(name) | LaunchArg::ArrayAt(name, _)) => {
            let offset = match a {
                LaunchArg::ArrayAt(_, off) => *off,
                _ => 0,
            };
            let Some(arr) = lookup(name) else {
                let names = array_names();
                let hint = match did_you_mean(name, names.iter().map(String::as_str), Quote::Plain)
                {
                    Some(h) => format!("; {h}"),
                    None if names.is_empty() => {
                        "; no arrays exist yet: create one with %array".into()
                    }
                    None => String::new(),
                };
                return Err(format!("unknown array '{name}' in {which}{hint}"));
            };
            if let Some(e) = elem {
                if *e != arr.dtype {
                    return Err(format!(
                        "array '{name}' is {} but {which} points to {e}",
                        arr.dtype
                    ));
                }
            }
            if offset > arr.len {
                return Err(format!(
                    "`{name} + {offset}` in {which} points past the end of array '{name}' ({} \
                     elements)",
                    arr.len
                ));
            }
            let ptr = arr.ptr + (offset * arr.dtype.size()) as u64;
            Ok(ptr.to_le_bytes().to_vec())
        }
        (ParamKind::Aggregate(layout), LaunchArg::Fields(values)) => {
            if values.len() != layout.fields.len() {
                return Err(format!(
                    "{which} is passed by value: a tuple of {} number{} ({}), got {}",
                    layout.fields.len(),
                    if layout.fields.len() == 1 { "" } else { "s" },
                    field_names(layout),
                    if values.len() == 1 {
                        "one value".to_string()
                    } else {
                        format!("{} values", values.len())
                    }
                ));
            }
            let mut bytes = vec![0u8; layout.size];
            for (f, v) in layout.fields.iter().zip(values) {
                let what = format!("field `{}` of {which}", f.name);
                let b = scalar(f.dtype, f.dtype.c_names()[0], v, &what)?;
                bytes[f.offset..f.offset + b.len()].copy_from_slice(&b);
            }
            Ok(bytes)
        }
        (ParamKind::Aggregate(layout), other) => Err(format!(
            "{which} is passed by value: pass a tuple of {} number{} ({}), not {}",
            layout.fields.len(),
            if layout.fields.len() == 1 { "" } else { "s" },
            field_names(layout),
            describe_arg(other)
        )),
        (ParamKind::Pointer { .. }, other) => Err(format!(
            "{which} must be an array name, `array + offset` or null, not {}",
            describe_arg(other)
        )),
        (ParamKind::Scalar(d), v) => scalar(*d, &p.c_type, v, which),
    }
}

/// The bytes of a number argument as dtype `d` (C type `c_type`), or why it does not fit.
fn scalar(d: Dtype, c_type: &str, v: &LaunchArg, which: &str) -> Result<Vec<u8>, String> {
    match v {
        LaunchArg::Int(x) => scalar_from_int(d, *x, c_type)
            .map_err(|range| format!("{x} does not fit in {which} ({range})")),
        LaunchArg::Float(x) => scalar_from_float(d, *x, c_type)
            .map_err(|why| format!("{} does not fit in {which}: {why}", fmt_f64(*x))),
        other => Err(format!("{which} is a number, not {}", describe_arg(other))),
    }
}

/// `x, y` or `a, b, n` (the first few, for messages).
fn field_names(layout: &crate::gpu::Aggregate) -> String {
    let names: Vec<&str> = layout
        .fields
        .iter()
        .take(8)
        .map(|f| f.name.as_str())
        .collect();
    let more = if layout.fields.len() > 8 { ", …" } else { "" };
    format!("{}{more}", names.join(", "))
}

/// The bytes of integer `v` as dtype `d`, or the valid range as text.
fn scalar_from_int(d: Dtype, v: i64, c_type: &str) -> Result<Vec<u8>, String> {
    if c_type == "bool" {
        return match v {
            0 | 1 => Ok(vec![v as u8]),
            _ => Err("0 or 1".into()),
        };
    }
    let range = |lo: i128, hi: i128| -> Result<(), String> {
        if (v as i128) < lo || (v as i128) > hi {
            Err(format!("{lo} to {hi}"))
        } else {
            Ok(())
        }
    };
    Ok(match d {
        Dtype::F32 => (v as f32).to_le_bytes().to_vec(),
        Dtype::F64 => (v as f64).to_le_bytes().to_vec(),
        Dtype::F16 | Dtype::BF16 => return scalar_from_float(d, v as f64, c_type),
        Dtype::I8 => {
            range(i8::MIN as i128, i8::MAX as i128)?;
            (v as i8).to_le_bytes().to_vec()
        }
        Dtype::I16 => {
            range(i16::MIN as i128, i16::MAX as i128)?;
            (v as i16).to_le_bytes().to_vec()
        }
        Dtype::I32 => {
            range(i32::MIN as i128, i32::MAX as i128)?;
            (v as i32).to_le_bytes().to_vec()
        }
        Dtype::I64 => v.to_le_bytes().to_vec(),
        Dtype::U8 => {
            range(0, u8::MAX as i128)?;
            (v as u8).to_le_bytes().to_vec()
        }
        Dtype::U16 => {
            range(0, u16::MAX as i128)?;
            (v as u16).to_le_bytes().to_vec()
        }
        Dtype::U32 => {
            range(0, u32::MAX as i128)?;
            (v as u32).to_le_bytes().to_vec()
        }
        Dtype::U64 => {
            range(0, u64::MAX as i128)?;
            (v as u64).to_le_bytes().to_vec()
        }
    })
}

/// The bytes of `v` as dtype `d`: floats convert; integers only from integral values.
fn scalar_from_float(d: Dtype, v: f64, c_type: &str) -> Result<Vec<u8>, String> {
    match d {
        Dtype::F64 => Ok(v.to_le_bytes().to_vec()),
        Dtype::F32 => {
            if v.is_finite() && v.abs() > f32::MAX as f64 {
                Err("out of the range of float".into())
            } else {
                Ok((v as f32).to_le_bytes().to_vec())
            }
        }
        Dtype::F16 | Dtype::BF16 => {
            let bits = d.half_bits(v).unwrap_or(0);
            match d.half_value(bits) {
                Some(h) if h.is_infinite() && v.is_finite() => {
                    Err(format!("out of the range of {c_type}"))
                }
                _ => Ok(bits.to_le_bytes().to_vec()),
            }
        }
        _ => {
            if v.fract() != 0.0 || !v.is_finite() || v.abs() > 9.007_199_254_740_992e15 {
                Err("an integer parameter needs an integer value".into())
            } else {
                scalar_from_int(d, v as i64, c_type)
                    .map_err(|range| format!("out of range ({range})"))
            }
        }
    }
}

/// Grid, block and dynamic shared memory against the device's limits and the kernel's.
pub fn check_config(
    kernel: &str,
    grid: Dim3,
    block: Dim3,
    shared_bytes: u32,
    limits: &DeviceLimits,
    meta: &KernelMeta,
) -> Result<(), GpuError> {
    let dims = |d: Dim3| [d.0, d.1, d.2];
    let axes = ["x", "y", "z"];
    for (what, v, max) in [
        ("grid", grid, limits.max_grid),
        ("block", block, limits.max_block),
    ] {
        for ((val, lim), axis) in dims(v).iter().zip(dims(max)).zip(axes) {
            if *val == 0 {
                return Err(GpuError::launch(format!(
                    "{what} {v:?} of {kernel}: the {axis} dimension is 0 (each must be at least 1)"
                )));
            }
            if *val > lim {
                return Err(GpuError::launch(format!(
                    "{what} {v:?} of {kernel}: {axis} = {val} is over the device limit {lim}"
                )));
            }
        }
    }
    let threads = block.0 as u64 * block.1 as u64 * block.2 as u64;
    let max_threads = meta
        .max_threads
        .unwrap_or(limits.max_threads_per_block)
        .min(limits.max_threads_per_block);
    if threads > max_threads as u64 {
        let why = if meta
            .max_threads
            .is_some_and(|m| m < limits.max_threads_per_block)
        {
            "its __launch_bounds__ allow"
        } else {
            "the device allows"
        };
        return Err(GpuError::launch(format!(
            "block {block:?} of {kernel} has {threads} threads; {why} at most {max_threads} per block"
        )));
    }
    let total = shared_bytes as u64 + meta.static_shared_bytes as u64;
    if total > limits.max_shared_per_block as u64 {
        return Err(GpuError::launch(format!(
            "{kernel} asks for {shared_bytes} bytes of dynamic shared memory (+ {} static) = {total} \
             bytes; the limit is {} bytes per block",
            meta.static_shared_bytes, limits.max_shared_per_block
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str, c_type: &str, kind: ParamKind) -> KernelParam {
        KernelParam {
            name: name.into(),
            c_type: c_type.into(),
            kind,
        }
    }

    #[test]
    fn args_pack_scalars_with_range_checks() {
        let params = vec![
            p("n", "int", ParamKind::Scalar(Dtype::I32)),
            p("a", "float", ParamKind::Scalar(Dtype::F32)),
            p("u", "unsigned char", ParamKind::Scalar(Dtype::U8)),
            p("flag", "bool", ParamKind::Scalar(Dtype::U8)),
            p("d", "double", ParamKind::Scalar(Dtype::F64)),
        ];
        let none = |_: &str| None;
        let names = Vec::new;
        let ok = pack(
            "k",
            "k",
            &params,
            &[
                LaunchArg::Int(-7),
                LaunchArg::Int(3),
                LaunchArg::Float(255.0),
                LaunchArg::Int(1),
                LaunchArg::Float(0.5),
            ],
            &none,
            &names,
        );
        let ok = ok.map(|p| p.params).unwrap_or_default();
        assert_eq!(ok[0], (-7i32).to_le_bytes());
        assert_eq!(ok[1], 3.0f32.to_le_bytes());
        assert_eq!(ok[2], [255u8]);
        assert_eq!(ok[3], [1u8]);
        assert_eq!(ok[4], 0.5f64.to_le_bytes());
        let bad = |i: usize, a: LaunchArg| {
            let mut args = vec![
                LaunchArg::Int(0),
                LaunchArg::Int(0),
                LaunchArg::Int(0),
                LaunchArg::Int(0),
                LaunchArg::Int(0),
            ];
            args[i] = a;
            pack("k", "k", &params, &args, &none, &names)
                .err()
                .map(|e| e.message)
                .unwrap_or_default()
        };
        assert!(bad(0, LaunchArg::Int(1 << 40)).contains("-2147483648 to 2147483647"));
        assert!(bad(0, LaunchArg::Float(2.5)).contains("integer value"));
        assert!(bad(2, LaunchArg::Int(-1)).contains("0 to 255"));
        assert!(bad(3, LaunchArg::Int(2)).contains("0 or 1"));
        assert!(bad(1, LaunchArg::Float(1e300)).contains("range of float"));
    }
}
