//! Summary statistics of an array (min, max, mean over the non-NaN elements, NaN count) and the
//! statistics line that `%print`, inspection and the `nb::Array` text view show.
//!
//! Pure functions of (dtype, bytes): this module must not import `crate::magics` or touch the
//! device.

use super::values::{fmt_f32, fmt_f64, get_f64};
use crate::gpu::Dtype;

/// min, max, mean over the non-NaN elements, and the NaN count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub nan: usize,
    pub len: usize,
}

/// The statistics of the elements of `b` (NaN everywhere when no element is a number).
pub fn stats(dtype: Dtype, b: &[u8]) -> Stats {
    let n = b.len() / dtype.size();
    let (mut min, mut max, mut sum, mut nan) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64, 0);
    for i in 0..n {
        let v = get_f64(dtype, b, i);
        if v.is_nan() {
            nan += 1;
            continue;
        }
        min = min.min(v);
        max = max.max(v);
        sum += v;
    }
    let good = n - nan;
    let mean = if good > 0 {
        sum / good as f64
    } else {
        f64::NAN
    };
    if good == 0 {
        min = f64::NAN;
        max = f64::NAN;
    }
    Stats {
        min,
        max,
        mean,
        nan,
        len: n,
    }
}

/// The statistics line of `%print` and inspect.
pub fn fmt_stats(dtype: Dtype, s: &Stats) -> String {
    let num = |v: f64| {
        if dtype == Dtype::F32 && v.is_finite() {
            fmt_f32(v as f32)
        } else if dtype.is_float() || !v.is_finite() || v != v.trunc() {
            fmt_f64(v)
        } else {
            format!("{}", v as i128)
        }
    };
    // The mean to 8 significant digits.
    let mean = format!("{:.7e}", s.mean).parse::<f64>().unwrap_or(s.mean);
    let mut line = format!(
        "min {}  max {}  mean {}",
        num(s.min),
        num(s.max),
        fmt_f64(mean)
    );
    if dtype.is_float() {
        line.push_str(&format!("  NaN {}", s.nan));
    }
    line
}
