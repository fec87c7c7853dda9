//! What host arrays sent by the `nb` crate (Rust cells) look like: an `nb::Array` shown as a
//! cell's value or by `Array::show`, and the frames of an `nb::Frames` animation.
//!
//! - 2-D float arrays → the heatmap PNG of `%show` (same colormaps, colour bar and summary);
//! - `(H, W, 3|4)` u8 arrays → the exact RGB(A) image of `%show`;
//! - 1-D arrays of at most [`TABLE_MAX`] elements → a table (`text/html` + `text/plain`);
//! - anything else → a `text/plain` summary: dtype, shape, min/max/mean, the first values;
//! - frames (2-D arrays of one shape and dtype) → the animated GIF of `%%animate`.
//!
//! Pure functions of (dtype, shape, bytes, options) to a MIME bundle and its `display_data`
//! metadata. This module must not touch the device, read sockets or parse magic lines; sizes are
//! checked and every problem comes back as `Err(String)`.

use super::gif::{encode_gif, gif_bundle, heatmap_frames};
use super::stats::{fmt_stats, stats};
use super::values::{fmt_elem, fmt_shape, to_f64_vec};
use super::{fmt_sig, image_metadata, png_bundle, render_heatmap, render_rgb};
use super::{Colormap, HeatmapOptions};
use crate::display::table::Table;
use crate::gpu::Dtype;
use protocol::output::MimeBundle;

/// `display_data` metadata (image sizes).
pub type Metadata = serde_json::Map<String, serde_json::Value>;

/// The longest 1-D array shown as a table.
pub const TABLE_MAX: usize = 64;
/// Values per row of a 1-D table.
pub const TABLE_COLUMNS: usize = 16;
/// Values listed in a text summary.
const SUMMARY_HEAD: usize = 8;
/// Most frames in one animation (as `%%animate --frames`).
pub const MAX_FRAMES: usize = 100_000;

/// The display options that `nb::Style` carries (those of `%show`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ViewOptions {
    pub cmap: Colormap,
    pub vmin: Option<f64>,
    pub vmax: Option<f64>,
    pub scale: Option<u32>,
    /// Drawn above an image and prefixed to its summary, as `%show NAME` does with the name.
    pub title: Option<String>,
}

impl ViewOptions {
    /// Checks the ranges that `%show` checks: finite bounds, vmax > vmin, scale in 1..=64.
    pub fn check(&self) -> Result<(), String> {
        for (v, what) in [(self.vmin, "vmin"), (self.vmax, "vmax")] {
            if v.is_some_and(|v| !v.is_finite()) {
                return Err(format!("{what} must be finite"));
            }
        }
        if let (Some(lo), Some(hi)) = (self.vmin, self.vmax) {
            if hi <= lo {
                return Err("vmax must be greater than vmin".into());
            }
        }
        if let Some(k) = self.scale {
            if !(1..=64).contains(&k) {
                return Err(format!("scale must be between 1 and 64, not {k}"));
            }
        }
        Ok(())
    }

    fn heatmap(&self, dtype: Dtype) -> HeatmapOptions {
        HeatmapOptions {
            cmap: self.cmap,
            vmin: self.vmin,
            vmax: self.vmax,
            scale: self.scale,
            title: self.title.clone(),
            dtype: Some(dtype.name().to_string()),
        }
    }
}

/// The number of bytes of `shape` elements of `dtype`, checked against `len`.
fn check_bytes(dtype: Dtype, shape: &[usize], len: usize) -> Result<usize, String> {
    if shape.is_empty() {
        return Err("an array needs at least one dimension".into());
    }
    let n = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| format!("shape {} is too large", fmt_shape(shape)))?;
    let want = n
        .checked_mul(dtype.size())
        .ok_or_else(|| format!("shape {} is too large", fmt_shape(shape)))?;
    if want != len {
        return Err(format!(
            "shape {} of {} needs {want} bytes, got {len}",
            fmt_shape(shape),
            dtype.name()
        ));
    }
    Ok(n)
}

/// How an array of this dtype and shape is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewKind {
    Heatmap,
    Rgb,
    Table,
    Summary,
}

pub fn view_kind(dtype: Dtype, shape: &[usize]) -> ViewKind {
    match shape {
        [h, w] if dtype.is_float() && *h > 0 && *w > 0 => ViewKind::Heatmap,
        [h, w, 3 | 4] if dtype == Dtype::U8 && *h > 0 && *w > 0 => ViewKind::Rgb,
        [n] if *n > 0 && *n <= TABLE_MAX => ViewKind::Table,
        _ => ViewKind::Summary,
    }
}

/// The MIME bundle (and metadata) of one array.
pub fn array_bundle(
    dtype: Dtype,
    shape: &[usize],
    data: &[u8],
    o: &ViewOptions,
) -> Result<(MimeBundle, Metadata), String> {
    o.check()?;
    let n = check_bytes(dtype, shape, data.len())?;
    match (view_kind(dtype, shape), shape) {
        (ViewKind::Heatmap, [h, w]) => {
            let r = render_heatmap(&to_f64_vec(dtype, data), *h, *w, &o.heatmap(dtype))?;
            Ok((
                png_bundle(&r),
                image_metadata("image/png", r.width, r.height),
            ))
        }
        (ViewKind::Rgb, [h, w, c]) => {
            let r = render_rgb(data, *h, *w, *c, o.scale, o.title.as_deref())?;
            Ok((
                png_bundle(&r),
                image_metadata("image/png", r.width, r.height),
            ))
        }
        (ViewKind::Table, _) => Ok((table(dtype, n, data, o).bundle(), Metadata::new())),
        _ => {
            let mut b = MimeBundle::new();
            b.insert("text/plain".into(), summary(dtype, shape, data, o).into());
            Ok((b, Metadata::new()))
        }
    }
}

/// `Array<f32> (5,)`, or the title when there is one.
fn label(dtype: Dtype, shape: &[usize], o: &ViewOptions) -> String {
    match &o.title {
        Some(t) => format!("{t}: {} {}", fmt_shape(shape), dtype.name()),
        None => format!("Array<{}> {}", dtype.name(), fmt_shape(shape)),
    }
}

/// A 1-D array as rows of [`TABLE_COLUMNS`] values; longer arrays get a first column with the
/// index of each row's first value.
fn table(dtype: Dtype, n: usize, data: &[u8], o: &ViewOptions) -> Table {
    let s = stats(dtype, data);
    let caption = format!("{}: {}", label(dtype, &[n], o), fmt_stats(dtype, &s));
    let wrapped = n > TABLE_COLUMNS;
    let cols = n.min(TABLE_COLUMNS);
    let mut headers: Vec<String> = Vec::new();
    if wrapped {
        headers.push("index".into());
        headers.extend((0..cols).map(|c| format!("+{c}")));
    } else {
        headers.extend((0..cols).map(|c| c.to_string()));
    }
    let first = usize::from(wrapped);
    let mut t = Table {
        caption: Some(caption),
        headers,
        rows: Vec::new(),
        right: (0..cols + first).collect(),
    };
    for start in (0..n).step_by(cols.max(1)) {
        let mut row = Vec::with_capacity(cols + first);
        if wrapped {
            row.push(start.to_string());
        }
        row.extend((start..(start + cols).min(n)).map(|i| fmt_elem(dtype, data, i)));
        t.row(row);
    }
    t
}

/// One line of statistics and a second line with the first values.
fn summary(dtype: Dtype, shape: &[usize], data: &[u8], o: &ViewOptions) -> String {
    let n = data.len() / dtype.size();
    let head = label(dtype, shape, o);
    if n == 0 {
        return format!("{head}: empty");
    }
    let s = stats(dtype, data);
    let values: Vec<String> = (0..n.min(SUMMARY_HEAD))
        .map(|i| fmt_elem(dtype, data, i))
        .collect();
    format!(
        "{head}: {}\n[{}{}]",
        fmt_stats(dtype, &s),
        values.join(", "),
        if n > SUMMARY_HEAD { ", …" } else { "" }
    )
}

/// The animated GIF of `count` frames of `shape` (2-D), stored one after another in `data`, each
/// under the title `LABEL   frame i/N` (`frame i/N` when its label is `None`), drawn with one
/// colour range for all frames as `%%animate` does.
pub fn frames_bundle(
    dtype: Dtype,
    shape: &[usize],
    count: usize,
    data: &[u8],
    labels: &[Option<String>],
    fps: f64,
    o: &ViewOptions,
) -> Result<(MimeBundle, Metadata), String> {
    o.check()?;
    let [h, w] = *shape else {
        return Err(format!(
            "frames must be 2-D arrays, not {}",
            fmt_shape(shape)
        ));
    };
    if count == 0 {
        return Err("an animation needs at least one frame".into());
    }
    if count > MAX_FRAMES {
        return Err(format!(
            "{count} frames are more than the limit of {MAX_FRAMES}"
        ));
    }
    if !(fps.is_finite() && fps > 0.0 && fps <= 100.0) {
        return Err(format!("fps must be above 0 and at most 100, not {fps}"));
    }
    let per = h
        .checked_mul(w)
        .and_then(|n| n.checked_mul(dtype.size()))
        .filter(|&p| p > 0 && p.checked_mul(count) == Some(data.len()))
        .ok_or_else(|| {
            format!(
                "{} bytes do not make {count} frames of {} {}",
                data.len(),
                fmt_shape(shape),
                dtype.name()
            )
        })?;
    let values: Vec<Vec<f64>> = data
        .chunks_exact(per)
        .map(|f| to_f64_vec(dtype, f))
        .collect();
    let titles: Vec<String> = (0..count)
        .map(|i| match labels.get(i).and_then(Option::as_deref) {
            Some(l) => format!("{l}   frame {}/{count}", i + 1),
            None => format!("frame {}/{count}", i + 1),
        })
        .collect();
    let mut hopts = o.heatmap(dtype);
    hopts.title = None;
    let hf = heatmap_frames(&values, &titles, h, w, &hopts)?;
    let gif = encode_gif(&hf.rgba, hf.width, hf.height, fps)?;
    let text = format!(
        "{}animation of {count} frames ({h}×{w} {}) at {} fps, {}",
        o.title
            .as_ref()
            .map(|t| format!("{t}: "))
            .unwrap_or_default(),
        dtype.name(),
        fmt_sig(fps, 3),
        hf.stats.range_text()
    );
    Ok((
        gif_bundle(&gif, &text),
        image_metadata("image/gif", hf.width, hf.height),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::display::image::element_pixel;
    use base64::Engine;
    use image::AnimationDecoder;

    fn f32_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn decode(b: &MimeBundle, key: &str) -> Vec<u8> {
        let s = b.get(key).and_then(|v| v.as_str()).unwrap_or_default();
        base64::engine::general_purpose::STANDARD
            .decode(s)
            .unwrap_or_default()
    }

    #[test]
    fn a_2d_float_array_is_the_heatmap_of_show() {
        let (h, w) = (5, 9);
        let v: Vec<f32> = (0..h * w).map(|i| (i % w) as f32 * 0.5).collect();
        let (b, meta) = array_bundle(Dtype::F32, &[h, w], &f32_bytes(&v), &ViewOptions::default())
            .expect("bundle");
        let img = image::load_from_memory(&decode(&b, "image/png"))
            .expect("png")
            .to_rgb8();
        assert_eq!(meta["image/png"]["width"], img.width());
        for c in 0..w {
            let (x, y) = element_pixel(h, w, None, false, 2, c).expect("inside");
            let want = colorous::VIRIDIS
                .eval_continuous(c as f64 / (w - 1) as f64)
                .into_array();
            assert_eq!(img.get_pixel(x, y).0, want, "column {c}");
        }
        assert_eq!(b["text/plain"], "5×9 f32, min 0, max 4");
    }

    #[test]
    fn short_1d_arrays_are_tables_and_others_summaries() {
        let v: Vec<f32> = (0..20).map(|i| i as f32 / 4.0).collect();
        let (b, _) =
            array_bundle(Dtype::F32, &[20], &f32_bytes(&v), &ViewOptions::default()).expect("t");
        let html = b["text/html"].as_str().unwrap_or_default();
        assert!(
            html.contains("<td style=\"text-align:right\">4.75</td>"),
            "{html}"
        );
        assert!(
            html.contains("<th>+15</th>") && html.contains(">16</td>"),
            "{html}"
        );
        let text = b["text/plain"].as_str().unwrap_or_default();
        assert!(
            text.starts_with("Array<f32> (20,): min 0.0  max 4.75"),
            "{text}"
        );
        let ints: Vec<u8> = (0..100u8).collect();
        let (b, _) = array_bundle(Dtype::U8, &[10, 10], &ints, &ViewOptions::default()).expect("s");
        assert_eq!(b.len(), 1);
        assert_eq!(
            b["text/plain"],
            "Array<u8> (10, 10): min 0  max 99  mean 49.5\n[0, 1, 2, 3, 4, 5, 6, 7, …]"
        );
        assert!(array_bundle(Dtype::U8, &[10, 11], &ints, &ViewOptions::default()).is_err());
        let bad = ViewOptions {
            vmin: Some(2.0),
            vmax: Some(1.0),
            ..ViewOptions::default()
        };
        assert!(array_bundle(Dtype::F32, &[20], &f32_bytes(&v), &bad).is_err());
    }

    #[test]
    fn frames_make_a_gif_of_that_many_frames() {
        let (h, w, n) = (6, 10, 5);
        let mut data = Vec::new();
        for k in 0..n {
            data.extend(f32_bytes(&vec![k as f32; h * w]));
        }
        let labels = vec![Some("u".to_string()); n];
        let (b, meta) = frames_bundle(
            Dtype::F32,
            &[h, w],
            n,
            &data,
            &labels,
            4.0,
            &ViewOptions::default(),
        )
        .expect("gif");
        let gif = decode(&b, "image/gif");
        let dec = image::codecs::gif::GifDecoder::new(std::io::Cursor::new(&gif)).expect("gif");
        let frames = dec.into_frames().collect_frames().expect("frames");
        assert_eq!(frames.len(), n);
        assert_eq!(meta["image/gif"]["width"], frames[0].buffer().width());
        assert!(b["text/plain"]
            .as_str()
            .unwrap_or_default()
            .starts_with("animation of 5 frames (6×10 f32) at 4 fps, min 0, max 4"));
        let short = &data[..data.len() - 4];
        let o = ViewOptions::default();
        assert!(frames_bundle(Dtype::F32, &[h, w], n, short, &labels, 4.0, &o).is_err());
        assert!(frames_bundle(Dtype::F32, &[h * w], n, &data, &labels, 4.0, &o).is_err());
        assert!(frames_bundle(Dtype::F32, &[h, w], n, &data, &labels, 0.0, &o).is_err());
        assert!(frames_bundle(Dtype::F32, &[h, w], 0, &[], &[], 4.0, &o).is_err());
    }
}
