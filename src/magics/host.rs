//! Host-side array data for the command language: the bytes of `%array` constructors (`zeros`,
//! `ones`, a value, `arange`, `linspace`, `rand`, `randn`) and numbers encoded in a dtype, for
//! `%array`, `%load`'s conversions and launch-argument ranges. Element decoding and formatting
//! are `crate::display::values`; the random numbers are [`super::rng`].
//!
//! Data is always row-major little-endian bytes, as `DeviceState` stores it. This module never
//! talks to the device and never panics on user data (sizes are checked before allocating).

use super::eval::Value;
use super::rng::Rng;
use crate::display::values::{fmt_f64, human_bytes};
use crate::gpu::Dtype;

/// What `%array` fills an array with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fill {
    Zeros,
    Ones,
    Value(Value),
    /// `start + i * step`
    Arange {
        start: Value,
        step: Value,
    },
    /// `n` points from `a` to `b` inclusive.
    Linspace {
        a: f64,
        b: f64,
    },
    /// Uniform: floats in [0, 1), integers in [0, 100).
    Rand(u64),
    /// Standard normal (floats only).
    Randn(u64),
}

/// The largest array that `%array`/`%load` build on the host.
pub const MAX_HOST_BYTES: usize = 16 << 30;

/// Inclusive range of an integer dtype.
pub fn int_range(d: Dtype) -> (i128, i128) {
    match d {
        Dtype::I8 => (i8::MIN as i128, i8::MAX as i128),
        Dtype::I16 => (i16::MIN as i128, i16::MAX as i128),
        Dtype::I32 => (i32::MIN as i128, i32::MAX as i128),
        Dtype::I64 => (i64::MIN as i128, i64::MAX as i128),
        Dtype::U8 => (0, u8::MAX as i128),
        Dtype::U16 => (0, u16::MAX as i128),
        Dtype::U32 => (0, u32::MAX as i128),
        Dtype::U64 => (0, u64::MAX as i128),
        Dtype::F32 | Dtype::F64 | Dtype::F16 | Dtype::BF16 => (i128::MIN, i128::MAX),
    }
}

/// Appends an integer (already range-checked) in `d`.
pub fn put_int(d: Dtype, v: i128, out: &mut Vec<u8>) {
    match d {
        Dtype::F32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
        Dtype::F64 => out.extend_from_slice(&(v as f64).to_le_bytes()),
        Dtype::F16 | Dtype::BF16 => put_f64(d, v as f64, out),
        Dtype::I8 => out.extend_from_slice(&(v as i8).to_le_bytes()),
        Dtype::I16 => out.extend_from_slice(&(v as i16).to_le_bytes()),
        Dtype::I32 => out.extend_from_slice(&(v as i32).to_le_bytes()),
        Dtype::I64 => out.extend_from_slice(&(v as i64).to_le_bytes()),
        Dtype::U8 => out.extend_from_slice(&(v as u8).to_le_bytes()),
        Dtype::U16 => out.extend_from_slice(&(v as u16).to_le_bytes()),
        Dtype::U32 => out.extend_from_slice(&(v as u32).to_le_bytes()),
        Dtype::U64 => out.extend_from_slice(&(v as u64).to_le_bytes()),
    }
}

/// Appends a float in `d` (integers: saturating conversion, as Rust's `as`).
pub fn put_f64(d: Dtype, v: f64, out: &mut Vec<u8>) {
    match d {
        Dtype::F32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
        Dtype::F64 => out.extend_from_slice(&v.to_le_bytes()),
        Dtype::F16 | Dtype::BF16 => {
            out.extend_from_slice(&d.half_bits(v).unwrap_or(0).to_le_bytes())
        }
        Dtype::I8 => out.extend_from_slice(&(v as i8).to_le_bytes()),
        Dtype::I16 => out.extend_from_slice(&(v as i16).to_le_bytes()),
        Dtype::I32 => out.extend_from_slice(&(v as i32).to_le_bytes()),
        Dtype::I64 => out.extend_from_slice(&(v as i64).to_le_bytes()),
        Dtype::U8 => out.extend_from_slice(&(v as u8).to_le_bytes()),
        Dtype::U16 => out.extend_from_slice(&(v as u16).to_le_bytes()),
        Dtype::U32 => out.extend_from_slice(&(v as u32).to_le_bytes()),
        Dtype::U64 => out.extend_from_slice(&(v as u64).to_le_bytes()),
    }
}

/// A value for an integer dtype: must be integral and in range.
fn int_value(d: Dtype, v: Value, what: &str) -> Result<i128, String> {
    let i = match v {
        Value::Int(i) => i as i128,
        Value::Float(f) => {
            if f.is_finite() && f == f.trunc() && f.abs() < 1e30 {
                f as i128
            } else {
                return Err(format!(
                    "{what} {} is not an integer, but the dtype is {d}",
                    fmt_f64(f)
                ));
            }
        }
    };
    let (lo, hi) = int_range(d);
    if i < lo || i > hi {
        return Err(format!("{what} {i} does not fit in {d} ({lo} to {hi})"));
    }
    Ok(i)
}

/// Allocates the output buffer of `len` elements, or a MemoryError message.
pub fn alloc(d: Dtype, len: usize) -> Result<Vec<u8>, String> {
    let bytes = len
        .checked_mul(d.size())
        .filter(|&b| b <= MAX_HOST_BYTES)
        .ok_or_else(|| {
            format!(
                "{len} elements of {d} is more than the {} that an array may have",
                human_bytes(MAX_HOST_BYTES)
            )
        })?;
    let mut v = Vec::new();
    v.try_reserve_exact(bytes)
        .map_err(|_| format!("cannot allocate {} on the host", human_bytes(bytes)))?;
    Ok(v)
}

/// The bytes of `len` elements of `d` filled by `fill`. Errors: text for an `ArgumentError`
/// (values that do not fit the dtype) or, when the first element is `true`, a `MemoryError`.
pub fn generate(fill: Fill, d: Dtype, len: usize) -> Result<Vec<u8>, (bool, String)> {
    if let Fill::Zeros = fill {
        // Zeroed pages from the allocator, untouched until written: an array of a GPU's size
        // costs no memory until a kernel writes it.
        let bytes = len
            .checked_mul(d.size())
            .filter(|&b| b <= MAX_HOST_BYTES)
            .ok_or_else(|| {
                (
                    true,
                    format!(
                        "{len} elements of {d} is more than the {} that an array may have",
                        human_bytes(MAX_HOST_BYTES)
                    ),
                )
            })?;
        return Ok(vec![0u8; bytes]);
    }
    let mut out = alloc(d, len).map_err(|m| (true, m))?;
    let arg = |m: String| (false, m);
    match fill {
        Fill::Zeros => out.resize(len * d.size(), 0),
        Fill::Ones => {
            for _ in 0..len {
                put_int(d, 1, &mut out);
            }
        }
        Fill::Value(v) => {
            let mut one = Vec::new();
            if d.is_float() {
                put_f64(d, v.as_f64(), &mut one);
            } else {
                put_int(d, int_value(d, v, "the value").map_err(arg)?, &mut one);
            }
            for _ in 0..len {
                out.extend_from_slice(&one);
            }
        }
        Fill::Arange { start, step } => {
            if d.is_float() {
                let (s, st) = (start.as_f64(), step.as_f64());
                for i in 0..len {
                    put_f64(d, s + i as f64 * st, &mut out);
                }
            } else {
                let s = int_value(d, start, "START").map_err(arg)?;
                let st = match step {
                    Value::Int(v) => v as i128,
                    Value::Float(f) => {
                        return Err(arg(format!(
                            "STEP {} is not an integer, but the dtype is {d}",
                            fmt_f64(f)
                        )))
                    }
                };
                let last = s + st * (len as i128 - 1).max(0);
                let (lo, hi) = int_range(d);
                if last < lo || last > hi {
                    return Err(arg(format!("the last value {last} does not fit in {d}")));
                }
                for i in 0..len as i128 {
                    put_int(d, s + i * st, &mut out);
                }
            }
        }
        Fill::Linspace { a, b } => {
            let step = if len > 1 {
                (b - a) / (len - 1) as f64
            } else {
                0.0
            };
            if !d.is_float() {
                let (lo, hi) = int_range(d);
                for v in [a, b] {
                    if !v.is_finite() || v.floor() < lo as f64 || v.floor() > hi as f64 {
                        return Err(arg(format!("{} does not fit in {d}", fmt_f64(v))));
                    }
                }
            }
            for i in 0..len {
                let v = if i + 1 == len && len > 1 {
                    b
                } else {
                    a + i as f64 * step
                };
                if d.is_float() {
                    put_f64(d, v, &mut out);
                } else {
                    put_f64(d, v.floor(), &mut out);
                }
            }
        }
        Fill::Rand(seed) => {
            let mut rng = Rng::new(seed);
            for _ in 0..len {
                match d {
                    Dtype::F32 => out.extend_from_slice(&rng.f32().to_le_bytes()),
                    Dtype::F64 => out.extend_from_slice(&rng.f64().to_le_bytes()),
                    // k / 2^p with p the type's significand bits: uniform on [0, 1), exactly
                    // representable (rounding an f32 draw could give 1.0).
                    Dtype::F16 => put_f64(d, rng.below(1 << 11) as f64 / 2048.0, &mut out),
                    Dtype::BF16 => put_f64(d, rng.below(1 << 8) as f64 / 256.0, &mut out),
                    _ => put_int(d, rng.below(100) as i128, &mut out),
                }
            }
        }
        Fill::Randn(seed) => {
            if !d.is_float() {
                return Err(arg(format!(
                    "randn() needs a float dtype (f32, f64, f16 or bf16), not {d}"
                )));
            }
            let mut rng = Rng::new(seed);
            let mut spare = None;
            for _ in 0..len {
                let v = match spare.take() {
                    Some(v) => v,
                    None => {
                        let (z0, z1) = rng.normal_pair();
                        spare = Some(z1);
                        z0
                    }
                };
                put_f64(d, v, &mut out);
            }
        }
    }
    Ok(out)
}
