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
use super::{
    Aggregate, AggregateField, ArrayView, DeviceLimits, Dim3, Dtype, GpuError, KernelParam,
    LaunchArg, ParamKind, ViewExtent,
};
use crate::suggest::{did_you_mean, Quote};
use crate::types::fmt_f64;

/// What the packer needs to know about a named array.
#[derive(Debug, Clone)]
pub struct ArrayRef {
    pub dtype: Dtype,
    pub ptr: DevPtr,
    /// Number of elements.
    pub len: usize,
    /// Its shape, for `mdspan` parameters.
    pub shape: Vec<usize>,
}

/// Packed parameters and which arrays the launch uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Packed {
    /// One little-endian byte vector per parameter.
    pub params: Vec<Vec<u8>>,
    /// `(array name, parameter index, written)` for every array argument (also those passed
    /// as pointer members of a struct or as a span).
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

/// How messages name one number or pointer of an aggregate parameter: `field `y` of …` for a
/// vector type, `member `elements` of …` for a struct.
pub fn part_label(layout: &Aggregate, f: &AggregateField, which: &str) -> String {
    if crate::compile::structs::vector_type(&layout.name).is_some() {
        format!("field `{}` of {which}", f.name)
    } else {
        format!("member `{}` of {which}", f.name)
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
        let mut used = Vec::new();
        let ctx = Lookup {
            lookup,
            array_names,
        };
        let bytes = pack_one(p, a, &which, &ctx, &mut used).map_err(|message| ArgError {
            position: Some(i),
            message,
        })?;
        out.arrays
            .extend(used.into_iter().map(|(n, written)| (n, i, written)));
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

/// The session's arrays, as the packer reads them.
struct Lookup<'a> {
    lookup: &'a dyn Fn(&str) -> Option<ArrayRef>,
    array_names: &'a dyn Fn() -> Vec<String>,
}

impl Lookup<'_> {
    /// The array `name`, or "unknown array" with a "did you mean" (`which` names the argument).
    fn array(&self, name: &str, which: &str) -> Result<ArrayRef, String> {
        if let Some(arr) = (self.lookup)(name) {
            return Ok(arr);
        }
        let names = (self.array_names)();
        let hint = match did_you_mean(name, names.iter().map(String::as_str), Quote::Plain) {
            Some(h) => format!("; {h}"),
            None if names.is_empty() => "; no arrays exist yet: create one with %array".into(),
            None => String::new(),
        };
        Err(format!("unknown array '{name}' in {which}{hint}"))
    }
}

/// The bytes of one argument, or why it does not fit its parameter (`which` names it); the
/// arrays it passes (name, written) go to `used`.
fn pack_one(
    p: &KernelParam,
    a: &LaunchArg,
    which: &str,
    arrays: &Lookup,
    used: &mut Vec<(String, bool)>,
) -> Result<Vec<u8>, String> {
    match (&p.kind, a) {
        (ParamKind::Other, _) => Err(format!(
            "{which}: the type `{}` cannot be passed from %launch (it passes arrays to \
             pointers, `cuda::std::span` and `mdspan`, numbers to integer or floating-point \
             scalars, and tuples or `Name(member=…)` to vector types and structs of numbers and \
             pointers)",
            p.c_type
        )),
        (ParamKind::Pointer { elem, is_const }, a) => {
            let ptr = pointer(*elem, a, which, arrays, used, !is_const)?;
            Ok(ptr.to_le_bytes().to_vec())
        }
        (ParamKind::View(v), a) => view(v, a, which, arrays, used),
        (ParamKind::Aggregate(layout), LaunchArg::Fields(values)) => {
            if values.len() != layout.fields.len() {
                return Err(format!(
                    "{which} is passed by value: a tuple of {} ({}), got {}",
                    count_of(layout),
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
                let what = part_label(layout, f, which);
                let b = match f.pointer {
                    Some(pt) => pointer(pt.elem, v, &what, arrays, used, !pt.is_const)?
                        .to_le_bytes()
                        .to_vec(),
                    None => scalar(f.dtype, f.dtype.c_names()[0], v, &what)?,
                };
                let end = f.offset + b.len();
                if end > bytes.len() {
                    return Err(format!(
                        "{what} lies outside the parameter's {} bytes",
                        layout.size
                    ));
                }
                bytes[f.offset..end].copy_from_slice(&b);
            }
            Ok(bytes)
        }
        (ParamKind::Aggregate(layout), other) => Err(format!(
            "{which} is passed by value: pass a tuple of {} ({}) or `{}(member=…, …)`, not {}",
            count_of(layout),
            field_names(layout),
            layout.name,
            describe_arg(other)
        )),
        (ParamKind::Scalar(d), v) => scalar(*d, &p.c_type, v, which),
    }
}

/// `4 numbers` or `4 values` (where some are pointers).
fn count_of(layout: &Aggregate) -> String {
    let n = layout.fields.len();
    let noun = if layout.fields.iter().any(|f| f.pointer.is_some()) {
        "value"
    } else {
        "number"
    };
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// The device address a pointer argument passes (an array, `array + offset` or null), checked
/// against the element type `elem`; the array goes to `used`.
fn pointer(
    elem: Option<Dtype>,
    a: &LaunchArg,
    which: &str,
    arrays: &Lookup,
    used: &mut Vec<(String, bool)>,
    written: bool,
) -> Result<DevPtr, String> {
    let (name, offset) = match a {
        LaunchArg::Null => return Ok(0),
        LaunchArg::Array(n) => (n, 0),
        LaunchArg::ArrayAt(n, off) => (n, *off),
        other => {
            return Err(format!(
                "{which} must be an array name, `array + offset` or null, not {}",
                describe_arg(other)
            ))
        }
    };
    let arr = arrays.array(name, which)?;
    if let Some(e) = elem {
        if e != arr.dtype {
            return Err(format!(
                "array '{name}' is {} but {which} points to {e}",
                arr.dtype
            ));
        }
    }
    if offset > arr.len {
        return Err(format!(
            "`{name} + {offset}` in {which} points past the end of array '{name}' ({} elements)",
            arr.len
        ));
    }
    used.push((name.clone(), written));
    Ok(arr.ptr + (offset * arr.dtype.size()) as u64)
}

/// The bytes of a `span`/`mdspan` parameter: the array's address and its extents, checked
/// against the view's element type, rank and fixed extents.
fn view(
    v: &ArrayView,
    a: &LaunchArg,
    which: &str,
    arrays: &Lookup,
    used: &mut Vec<(String, bool)>,
) -> Result<Vec<u8>, String> {
    let rank = v.extents.len();
    let (ptr, shape): (DevPtr, Vec<usize>) = match a {
        LaunchArg::Null if v.extents.iter().all(|e| matches!(e, ViewExtent::Stored(_))) => {
            (0, vec![0; rank])
        }
        LaunchArg::Array(_) | LaunchArg::ArrayAt(..) => {
            let Some(name) = a.array_name() else {
                return Err(format!("{which} must be an array"));
            };
            let arr = arrays.array(name, which)?;
            let offset = match a {
                LaunchArg::ArrayAt(_, off) => *off,
                _ => 0,
            };
            if rank > 1 && offset > 0 {
                return Err(format!(
                    "{which} is a {rank}-dimensional {}: pass a whole array, not `{name} + \
                     {offset}`",
                    v.what
                ));
            }
            let ptr = pointer(Some(v.elem), a, which, arrays, used, !v.is_const)?;
            let shape = if rank == 1 {
                vec![arr.len - offset.min(arr.len)]
            } else {
                arr.shape.clone()
            };
            (ptr, shape)
        }
        other => {
            return Err(format!(
                "{which} is a `{}`: pass an array{}, not {}",
                v.what,
                if rank == 1 {
                    " or `array + offset`"
                } else {
                    ""
                },
                describe_arg(other)
            ))
        }
    };
    if shape.len() != rank {
        let name = a.array_name().unwrap_or("null");
        return Err(format!(
            "{which} is a {rank}-dimensional {} but array '{name}' has shape {}",
            v.what,
            shape_text(&shape)
        ));
    }
    let mut bytes = vec![0u8; v.size];
    let put = |bytes: &mut Vec<u8>, at: usize, b: &[u8]| -> Result<(), String> {
        let end = at + b.len();
        if end > bytes.len() {
            return Err(format!(
                "{which}: its layout is larger than {} bytes",
                v.size
            ));
        }
        bytes[at..end].copy_from_slice(b);
        Ok(())
    };
    put(&mut bytes, v.ptr_offset, &ptr.to_le_bytes())?;
    for (k, (e, n)) in v.extents.iter().zip(&shape).enumerate() {
        match e {
            ViewExtent::Fixed(f) if f != n => {
                let name = a.array_name().unwrap_or("null");
                return Err(format!(
                    "{which} has a fixed extent {f} in dimension {k}, but array '{name}' has {n} \
                     there (shape {})",
                    shape_text(&shape)
                ));
            }
            ViewExtent::Fixed(_) => {}
            ViewExtent::Stored(at) => {
                let b = scalar_from_int(v.index, i64::try_from(*n).unwrap_or(i64::MAX), "")
                    .map_err(|range| {
                        format!(
                            "{which}: extent {n} of dimension {k} does not fit its index type \
                             {} ({range})",
                            v.index
                        )
                    })?;
                put(&mut bytes, *at, &b)?;
            }
        }
    }
    Ok(bytes)
}

/// `(4, 8)` or `(16,)`, as numpy writes a shape.
fn shape_text(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
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
fn field_names(layout: &Aggregate) -> String {
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

    fn arrays(name: &str) -> Option<ArrayRef> {
        match name {
            "A" => Some(ArrayRef {
                dtype: Dtype::F32,
                ptr: 0x1000,
                len: 12,
                shape: vec![3, 4],
            }),
            "D" => Some(ArrayRef {
                dtype: Dtype::F64,
                ptr: 0x2000,
                len: 5,
                shape: vec![5],
            }),
            _ => None,
        }
    }

    fn names() -> Vec<String> {
        vec!["A".into(), "D".into()]
    }

    /// The CUDA Programming Guide's `Matrix`, by value.
    fn matrix() -> KernelParam {
        crate::compile::scan::scan(
            "struct Matrix { int width; int height; int stride; float* elements; };\n\
             __global__ void k(Matrix B) {}",
        )
        .kernels
        .first()
        .map(|k| k.params_for(&[]).remove(0))
        .unwrap_or_else(|| p("B", "Matrix", ParamKind::Other))
    }

    #[test]
    fn struct_pointer_members_take_arrays_offsets_and_null() {
        let params = vec![matrix()];
        let ParamKind::Aggregate(_) = &params[0].kind else {
            panic!("{:?}", params[0].kind);
        };
        let fields = |last: LaunchArg| {
            vec![LaunchArg::Fields(vec![
                LaunchArg::Int(4),
                LaunchArg::Int(3),
                LaunchArg::Int(4),
                last,
            ])]
        };
        let run = |args: Vec<LaunchArg>| pack("k", "%launch", &params, &args, &arrays, &names);
        let ok = run(fields(LaunchArg::ArrayAt("A".into(), 2))).expect("packs");
        let b = &ok.params[0];
        assert_eq!(b.len(), 24);
        assert_eq!(b[..4], 4i32.to_le_bytes());
        assert_eq!(b[16..], (0x1000u64 + 8).to_le_bytes());
        assert_eq!(ok.arrays, [("A".to_string(), 0, true)]);
        let null = run(fields(LaunchArg::Null)).expect("packs");
        assert_eq!(null.params[0][16..], [0u8; 8]);
        assert!(null.arrays.is_empty());
        let err = |a: LaunchArg| run(fields(a)).err().map(|e| e.message).unwrap_or_default();
        let e = err(LaunchArg::Array("D".into()));
        assert!(
            e.contains("member `elements` of argument 1 of %launch (Matrix B)")
                && e.contains("is f64")
                && e.contains("points to f32"),
            "{e}"
        );
        let e = err(LaunchArg::Array("Q".into()));
        assert!(e.contains("unknown array 'Q' in member `elements`"), "{e}");
        let e = err(LaunchArg::ArrayAt("A".into(), 13));
        assert!(e.contains("points past the end"), "{e}");
        let e = err(LaunchArg::Int(1));
        assert!(
            e.contains("member `elements`") && e.contains("array name"),
            "{e}"
        );
        let e = run(vec![LaunchArg::Array("A".into())])
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert!(
            e.contains("4 values (width, height, stride, elements)")
                && e.contains("Matrix(member="),
            "{e}"
        );
    }

    #[test]
    fn spans_and_mdspans_pass_the_pointer_and_the_arrays_extents() {
        let view = |ty: &str| {
            let toks: Vec<String> = ty.split(' ').map(String::from).collect();
            p(
                "x",
                ty,
                crate::compile::scan::classify(&toks, &Default::default()),
            )
        };
        let span = view("cuda :: std :: span < float >");
        let md =
            view("cuda :: std :: mdspan < const float , cuda :: std :: dextents < int , 2 > >");
        let fixed =
            view("cuda :: std :: mdspan < float , cuda :: std :: extents < int , 2 , 4 > >");
        let run = |p: &KernelParam, a: LaunchArg| {
            pack(
                "k",
                "%launch",
                std::slice::from_ref(p),
                &[a],
                &arrays,
                &names,
            )
            .map_err(|e| e.message)
        };
        let ok = run(&span, LaunchArg::ArrayAt("A".into(), 2)).expect("span");
        assert_eq!(ok.params[0][..8], (0x1000u64 + 8).to_le_bytes());
        assert_eq!(ok.params[0][8..], 10u64.to_le_bytes());
        assert_eq!(ok.arrays, [("A".to_string(), 0, true)]);
        let ok = run(&md, LaunchArg::Array("A".into())).expect("mdspan");
        assert_eq!(ok.params[0][8..12], 3i32.to_le_bytes());
        assert_eq!(ok.params[0][12..16], 4i32.to_le_bytes());
        assert_eq!(ok.arrays, [("A".to_string(), 0, false)]);
        let e = run(&span, LaunchArg::Array("D".into())).unwrap_err();
        assert!(e.contains("is f64") && e.contains("points to f32"), "{e}");
        let e = run(&md, LaunchArg::ArrayAt("A".into(), 1)).unwrap_err();
        assert!(e.contains("pass a whole array"), "{e}");
        let e = run(&fixed, LaunchArg::Array("A".into())).unwrap_err();
        assert!(
            e.contains("fixed extent 2 in dimension 0") && e.contains("(3, 4)"),
            "{e}"
        );
        let e = run(&md, LaunchArg::Float(1.0)).unwrap_err();
        assert!(e.contains("mdspan") && e.contains("pass an array"), "{e}");
        let one_d = view("mdspan < double , dextents < int , 2 > >");
        let e = run(&one_d, LaunchArg::Array("D".into())).unwrap_err();
        assert!(
            e.contains("2-dimensional mdspan but array 'D' has shape (5,)"),
            "{e}"
        );
    }
}
