//! Array bytes as numbers and numbers as text: decoding one element of a dtype from row-major
//! little-endian bytes (as `DeviceState` stores arrays), and writing floats, shapes and byte
//! sizes the way numpy and Python print them.
//!
//! Used by the displays (`array_view`, `%print`'s summaries) and by the command language
//! (`crate::magics`). Pure functions of their arguments: this module must not import
//! `crate::magics`, touch the device or panic on short or odd-sized data (a missing element reads
//! as zero).

use crate::gpu::Dtype;

// ---------- formatting of scalars ----------

pub use crate::types::fmt_f64;

/// An f32 like numpy prints it: the shortest digits that give the same f32 back.
pub fn fmt_f32(v: f32) -> String {
    if v.is_finite() && v == v.trunc() && v.abs() < 1e16 {
        return format!("{v:.1}");
    }
    if v.is_finite() && v != 0.0 && (v.abs() < 1e-4 || v.abs() >= 1e16) {
        return format!("{v:e}");
    }
    if v.is_finite() {
        return format!("{v}");
    }
    fmt_f64(v as f64)
}

/// A 16-bit float's shortest round-trip text (the `half` crate's `Display`, which is
/// `f32`'s of the shortest digits that give the same 16 bits back) in numpy's spelling.
fn fmt_half(text: String) -> String {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v == v.trunc() && v.abs() < 1e16 => format!("{v:.1}"),
        Ok(v) if v.is_finite() && !text.contains(['e', 'E']) => text,
        Ok(v) => fmt_f64(v),
        Err(_) => text,
    }
}

/// `(1000,)`, `(3, 4)`: Python's tuple notation.
pub fn fmt_shape(shape: &[usize]) -> String {
    if shape.len() == 1 {
        return format!("({},)", shape[0]);
    }
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("({})", parts.join(", "))
}

/// `512 B`, `4.0 KiB`, `1.5 MiB`.
pub fn human_bytes(n: usize) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

// ---------- decoding ----------

fn chunk<const N: usize>(b: &[u8], i: usize) -> [u8; N] {
    let mut a = [0u8; N];
    if let Some(s) = b.get(i * N..i * N + N) {
        a.copy_from_slice(s);
    }
    a
}

/// Element `i` as f64 (i64/u64 beyond 2^53 round).
pub fn get_f64(dtype: Dtype, b: &[u8], i: usize) -> f64 {
    match dtype {
        Dtype::F32 => f32::from_le_bytes(chunk(b, i)) as f64,
        Dtype::F64 => f64::from_le_bytes(chunk(b, i)),
        Dtype::F16 | Dtype::BF16 => dtype
            .half_value(u16::from_le_bytes(chunk(b, i)))
            .unwrap_or(f64::NAN),
        Dtype::I8 => i8::from_le_bytes(chunk(b, i)) as f64,
        Dtype::I16 => i16::from_le_bytes(chunk(b, i)) as f64,
        Dtype::I32 => i32::from_le_bytes(chunk(b, i)) as f64,
        Dtype::I64 => i64::from_le_bytes(chunk(b, i)) as f64,
        Dtype::U8 => u8::from_le_bytes(chunk(b, i)) as f64,
        Dtype::U16 => u16::from_le_bytes(chunk(b, i)) as f64,
        Dtype::U32 => u32::from_le_bytes(chunk(b, i)) as f64,
        Dtype::U64 => u64::from_le_bytes(chunk(b, i)) as f64,
    }
}

/// Element `i` of an integer dtype, exactly.
pub fn get_i128(dtype: Dtype, b: &[u8], i: usize) -> i128 {
    match dtype {
        Dtype::I8 => i8::from_le_bytes(chunk(b, i)) as i128,
        Dtype::I16 => i16::from_le_bytes(chunk(b, i)) as i128,
        Dtype::I32 => i32::from_le_bytes(chunk(b, i)) as i128,
        Dtype::I64 => i64::from_le_bytes(chunk(b, i)) as i128,
        Dtype::U8 => u8::from_le_bytes(chunk(b, i)) as i128,
        Dtype::U16 => u16::from_le_bytes(chunk(b, i)) as i128,
        Dtype::U32 => u32::from_le_bytes(chunk(b, i)) as i128,
        Dtype::U64 => u64::from_le_bytes(chunk(b, i)) as i128,
        Dtype::F32 | Dtype::F64 | Dtype::F16 | Dtype::BF16 => get_f64(dtype, b, i) as i128,
    }
}

/// Element `i` as text, exact for integers, shortest round-trip for floats.
pub fn fmt_elem(dtype: Dtype, b: &[u8], i: usize) -> String {
    match dtype {
        Dtype::F32 => fmt_f32(f32::from_le_bytes(chunk(b, i))),
        Dtype::F64 => fmt_f64(f64::from_le_bytes(chunk(b, i))),
        Dtype::F16 => fmt_half(half::f16::from_bits(u16::from_le_bytes(chunk(b, i))).to_string()),
        Dtype::BF16 => fmt_half(half::bf16::from_bits(u16::from_le_bytes(chunk(b, i))).to_string()),
        _ => get_i128(dtype, b, i).to_string(),
    }
}

/// Whole array as f64 values.
pub fn to_f64_vec(dtype: Dtype, b: &[u8]) -> Vec<f64> {
    (0..b.len() / dtype.size())
        .map(|i| get_f64(dtype, b, i))
        .collect()
}
