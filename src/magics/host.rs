//! Host-side array data for the command language: generating the bytes of `%array`
//! constructors (a seeded xoshiro256** generator, Box–Muller for `randn`), encoding numbers in a
//! dtype, and numpy-like summaries for `%print`. Decoding and statistics are in
//! `crate::display::values` and `crate::display::stats`.
//!
//! Data is always row-major little-endian bytes, as `DeviceState` stores it. This module never
//! talks to the device and never panics on user data (sizes are checked before allocating).

use super::eval::Value;
use crate::display::values::{fmt_elem, fmt_f64, get_f64, human_bytes};
use crate::gpu::Dtype;

/// Indices shown along an axis of length `n`: all, the first `head`, or `edge` at each end.
fn shown(n: usize, head: Option<usize>, edge: Option<usize>) -> Vec<Option<usize>> {
    if let Some(h) = head {
        let mut v: Vec<Option<usize>> = (0..n.min(h)).map(Some).collect();
        if n > h {
            v.push(None);
        }
        return v;
    }
    match edge {
        Some(e) if n > 2 * e => (0..e)
            .map(Some)
            .chain(std::iter::once(None))
            .chain((n - e..n).map(Some))
            .collect(),
        _ => (0..n).map(Some).collect(),
    }
}

const LINE_WIDTH: usize = 75;

/// How the shown elements of one array are written: integers right-aligned; floats numpy-style
/// (shortest form, at most 8 decimals, aligned on the decimal point; scientific notation when the
/// magnitudes call for it).
struct ElemFmt {
    dtype: Dtype,
    sci: bool,
    int_w: usize,
    frac_w: usize,
    width: usize,
}

fn float_at(dtype: Dtype, b: &[u8], i: usize) -> (f64, String) {
    let v = get_f64(dtype, b, i);
    if !v.is_finite() {
        return (v, fmt_f64(v));
    }
    let s = if dtype == Dtype::F32 {
        format!("{}", v as f32)
    } else {
        format!("{v}")
    };
    (v, s)
}

/// At most 8 decimals, trailing zeros dropped, at least one decimal.
fn fixed(s: &str, v: f64) -> String {
    let mut s = s.to_string();
    if let Some(dot) = s.find('.') {
        if s.len() - dot - 1 > 8 {
            s = format!("{v:.8}");
            while s.ends_with('0') {
                s.pop();
            }
            if s.ends_with('.') {
                s.push('0');
            }
        }
    } else {
        s.push_str(".0");
    }
    s
}

fn sci(v: f64) -> String {
    let s = format!("{v:e}");
    let digits = s
        .split_once('e')
        .map_or(0, |(m, _)| m.split_once('.').map_or(0, |(_, f)| f.len()));
    if digits > 8 {
        let t = format!("{v:.8e}");
        if let Some((m, e)) = t.split_once('e') {
            let m = m.trim_end_matches('0').trim_end_matches('.');
            return format!("{m}e{e}");
        }
        return t;
    }
    s
}

impl ElemFmt {
    fn new(dtype: Dtype, b: &[u8], shown: &[usize]) -> ElemFmt {
        let mut f = ElemFmt {
            dtype,
            sci: false,
            int_w: 0,
            frac_w: 0,
            width: 0,
        };
        if !dtype.is_float() {
            f.width = shown
                .iter()
                .map(|&i| fmt_elem(dtype, b, i).len())
                .max()
                .unwrap_or(0);
            return f;
        }
        let vals: Vec<f64> = shown
            .iter()
            .map(|&i| get_f64(dtype, b, i))
            .filter(|v| v.is_finite())
            .collect();
        let nonzero = vals.iter().map(|v| v.abs()).filter(|&a| a > 0.0);
        let max = nonzero.clone().fold(0.0f64, f64::max);
        let min = nonzero.fold(f64::INFINITY, f64::min);
        let integral = vals.iter().all(|v| v.trunc() == *v);
        f.sci = max > 0.0
            && (max >= 1e8 || (min < 1e-4 && !integral) || (!integral && max / min > 1e3));
        for &i in shown {
            let s = f.raw(b, i);
            match s.split_once('.') {
                Some((ip, fp)) if !f.sci => {
                    f.int_w = f.int_w.max(ip.len());
                    f.frac_w = f.frac_w.max(fp.len());
                }
                _ => f.width = f.width.max(s.len()),
            }
        }
        f.width = f.width.max(f.int_w + 1 + f.frac_w);
        f
    }

    fn raw(&self, b: &[u8], i: usize) -> String {
        if !self.dtype.is_float() {
            return fmt_elem(self.dtype, b, i);
        }
        let (v, s) = float_at(self.dtype, b, i);
        if !v.is_finite() {
            s
        } else if self.sci {
            sci(v)
        } else {
            fixed(&s, v)
        }
    }

    fn render(&self, b: &[u8], i: usize) -> String {
        let s = self.raw(b, i);
        let w = self.width;
        if self.dtype.is_float() && !self.sci {
            if let Some((ip, fp)) = s.split_once('.') {
                return format!("{:>iw$}.{:<fw$}", ip, fp, iw = self.int_w, fw = self.frac_w);
            }
        }
        format!("{s:>w$}")
    }
}

/// A numpy-style summary of the values: all of them up to 1000 elements, else the first and last
/// 3 along each axis; `head` shows only the first `head` entries of the first axis.
pub fn format_values(dtype: Dtype, shape: &[usize], b: &[u8], head: Option<usize>) -> String {
    let total: usize = shape.iter().product();
    let edge = if total > 1000 { Some(3) } else { None };
    // Strides in elements.
    let mut strides = vec![1usize; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        strides[k] = strides[k + 1] * shape[k + 1];
    }
    let walk = Walk {
        shape,
        strides: &strides,
        head,
        edge,
    };
    let mut indices = Vec::new();
    walk.gather(0, 0, &mut indices);
    let fmt = ElemFmt::new(dtype, b, &indices);
    let mut out = String::new();
    walk.rec(b, 0, 0, &fmt, &mut out);
    out
}

struct Walk<'a> {
    shape: &'a [usize],
    strides: &'a [usize],
    head: Option<usize>,
    edge: Option<usize>,
}

impl Walk<'_> {
    fn items(&self, axis: usize) -> Vec<Option<usize>> {
        let h = if axis == 0 { self.head } else { None };
        shown(self.shape[axis], h, self.edge)
    }

    fn gather(&self, axis: usize, base: usize, out: &mut Vec<usize>) {
        for i in self.items(axis).into_iter().flatten() {
            let idx = base + i * self.strides[axis];
            if axis + 1 == self.shape.len() {
                out.push(idx);
            } else {
                self.gather(axis + 1, idx, out);
            }
        }
    }

    fn rec(&self, b: &[u8], axis: usize, base: usize, fmt: &ElemFmt, out: &mut String) {
        let items = self.items(axis);
        out.push('[');
        if axis + 1 == self.shape.len() {
            let indent = " ".repeat(axis + 1);
            let mut line_len = axis + 1;
            for (k, item) in items.iter().enumerate() {
                let s = match item {
                    Some(i) => fmt.render(b, base + i * self.strides[axis]),
                    None => "...".to_string(),
                };
                if k > 0 {
                    if line_len + 1 + s.len() + 1 > LINE_WIDTH {
                        out.push('\n');
                        out.push_str(&indent);
                        line_len = indent.len();
                    } else {
                        out.push(' ');
                        line_len += 1;
                    }
                }
                line_len += s.len();
                out.push_str(&s);
            }
        } else {
            let sep = format!(
                "{}{}",
                "\n".repeat(self.shape.len() - axis - 1),
                " ".repeat(axis + 1)
            );
            for (k, item) in items.iter().enumerate() {
                if k > 0 {
                    out.push_str(&sep);
                }
                match item {
                    Some(i) => self.rec(b, axis + 1, base + i * self.strides[axis], fmt, out),
                    None => out.push_str("..."),
                }
            }
        }
        out.push(']');
    }
}

// ---------- generation ----------

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

/// xoshiro256** seeded through splitmix64: small, fast, reproducible across platforms.
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        Rng {
            s: [
                splitmix64(&mut x),
                splitmix64(&mut x),
                splitmix64(&mut x),
                splitmix64(&mut x),
            ],
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, 1).
    pub fn f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / (1u32 << 24) as f32)
    }

    /// Uniform in [0, n) (Lemire's multiply-shift; bias below 2^-32 for small n).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() >> 32) * n) >> 32
    }

    /// Two independent standard normal values (Box–Muller).
    pub fn normal_pair(&mut self) -> (f64, f64) {
        let u1 = ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64); // (0, 1]
        let u2 = self.f64();
        let r = (-2.0 * u1.ln()).sqrt();
        let t = 2.0 * std::f64::consts::PI * u2;
        (r * t.cos(), r * t.sin())
    }
}

/// A seed for `rand()` without `seed=`: different every call.
pub fn fresh_seed() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut x = t
        ^ COUNTER
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (std::process::id() as u64) << 32;
    splitmix64(&mut x)
}
