//! Arrays as numpy prints them, for `%print`: every element up to 1000 of them, else the first
//! and last 3 along each axis; integers right-aligned, floats in numpy's shortest form aligned on
//! the decimal point (scientific notation when the magnitudes call for it), lines wrapped at 75
//! columns.
//!
//! A pure function of (dtype, shape, bytes): this module must not import `crate::magics` or touch
//! the device.

use super::values::{fmt_elem, fmt_f64, get_f64};
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
