//! What users look at: PNG heatmaps with a colour bar, RGB(A) images, line plots, side-by-side
//! panels, animated GIFs, timing tables and bar charts, progress bars (DESIGN.md: `%show`,
//! `%time`, `%timings`, `%%animate`), and the text of arrays: element values and sizes as
//! numpy writes them (`values`), summary statistics (`stats`), `%print`'s array text
//! (`array_text`).
//!
//! Everything here is a pure function of host data (numbers, bytes, labels) to pixels, PNG/GIF
//! bytes or MIME bundles. This module must not touch the device, parse magic lines or speak the
//! Jupyter protocol, and it imports nothing from `crate::magics` (which sits above it: it reads
//! the arrays and sends the results to an `OutputSink`).
//! It must not panic on any input: sizes are checked and errors come back as `Err(String)`.

pub mod array_text;
pub mod array_view;
pub mod colormap;
pub mod gif;
pub mod image;
pub mod plot;
pub mod progress;
pub mod stats;
pub mod table;
pub mod text;
pub mod timeline;
pub mod timing;
pub mod values;

pub use self::colormap::Colormap;
pub use self::image::{render_heatmap, render_rgb, side_by_side, HeatmapOptions, Rendered};
pub use self::plot::line_plot;

use base64::Engine;
use protocol::output::{CellOutput, MimeBundle};

/// The largest image (width × height, in pixels) that any function here will produce.
pub const MAX_PIXELS: usize = 64 << 20;

/// A number in at most `sig` significant digits, without trailing zeros: `0.25`, `1.5e-05`,
/// `123456`, `nan`, `-inf`.
pub fn fmt_sig(v: f64, sig: usize) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == 0.0 {
        return "0".into();
    }
    let sig = sig.clamp(1, 17);
    let exp = v.abs().log10().floor() as i32;
    if !(-4..7).contains(&exp) {
        let s = format!("{:.*e}", sig - 1, v);
        // `1.500e-5` → `1.5e-05`-like, trimmed mantissa.
        if let Some((m, e)) = s.split_once('e') {
            let m = trim_zeros(m);
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ("-", d),
                None => ("+", e),
            };
            return format!("{m}e{sign}{digits:0>2}");
        }
        return s;
    }
    let decimals = (sig as i32 - 1 - exp).max(0) as usize;
    trim_zeros(&format!("{v:.decimals$}")).to_string()
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// `image/png` (base64) + `text/plain` of a rendered image.
pub fn png_bundle(r: &Rendered) -> MimeBundle {
    let mut b = MimeBundle::new();
    b.insert(
        "image/png".into(),
        base64::engine::general_purpose::STANDARD
            .encode(&r.png)
            .into(),
    );
    b.insert("text/plain".into(), r.summary.clone().into());
    b
}

/// Jupyter `display_data` metadata giving the image's size, so front ends lay it out before it
/// loads.
pub fn image_metadata(
    mime: &str,
    width: u32,
    height: u32,
) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert(
        mime.into(),
        serde_json::json!({ "width": width, "height": height }),
    );
    m
}

/// A `display_data` output of a rendered PNG.
pub fn png_display(r: &Rendered) -> CellOutput {
    CellOutput::Display {
        data: png_bundle(r),
        metadata: image_metadata("image/png", r.width, r.height),
        display_id: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fmt_sig_is_short_and_exact_enough() {
        assert_eq!(fmt_sig(0.0, 4), "0");
        assert_eq!(fmt_sig(1.0, 4), "1");
        assert_eq!(fmt_sig(0.25, 4), "0.25");
        assert_eq!(fmt_sig(-5.4321, 3), "-5.43");
        assert_eq!(fmt_sig(123456.0, 4), "123456");
        assert_eq!(fmt_sig(1.5e-5, 4), "1.5e-05");
        assert_eq!(fmt_sig(2.5e9, 3), "2.5e+09");
        assert_eq!(fmt_sig(f64::NAN, 4), "nan");
        assert_eq!(fmt_sig(f64::NEG_INFINITY, 4), "-inf");
        for v in [1e-300, 7.0e12, -0.000123, 99999.5] {
            let back: f64 = fmt_sig(v, 6).parse().unwrap_or(f64::NAN);
            assert!(((back - v) / v).abs() < 1e-5, "{v} -> {back}");
        }
    }
}
