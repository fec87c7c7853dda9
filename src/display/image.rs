//! PNG images of arrays: heatmaps of 2-D values through a colormap (with a colour bar labelled
//! with the value range, a title, and NaN/±Inf in magenta, counted), exact RGB(A) images, and
//! several images side by side with their titles.
//!
//! Scaling is nearest-neighbour, so every array element stays a crisp square: by default small
//! arrays are enlarged to about 256 px wide, and large ones shrunk to at most 1024 px.

use super::colormap::{Colormap, Norm, NAN_COLOR};
use super::text::{self, draw_text, ellipsize, line_height, text_width};
use super::{fmt_sig, MAX_PIXELS};
use image::codecs::png::{CompressionType, FilterType, PngEncoder};
use image::{ExtendedColorType, ImageEncoder, Rgba, RgbaImage};

/// An image ready to display.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The PNG file.
    pub png: Vec<u8>,
    pub width: u32,
    pub height: u32,
    /// One line for `text/plain`, e.g. `img: 64×64 f32, min 0, max 1, 3 NaN`.
    pub summary: String,
    /// The title drawn above `body` in `png`, if any.
    pub title: Option<String>,
    /// The image without its title (what [`side_by_side`] composes).
    pub body: RgbaImage,
}

/// How [`render_heatmap`] maps values to pixels.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HeatmapOptions {
    pub cmap: Colormap,
    /// Colour range; the finite data minimum / maximum when `None`.
    pub vmin: Option<f64>,
    pub vmax: Option<f64>,
    /// Pixels per element; automatic when `None` (see the module doc).
    pub scale: Option<u32>,
    /// Drawn above the image and used as the summary's prefix (usually the array name).
    pub title: Option<String>,
    /// The element type, for the summary (e.g. `"f32"`).
    pub dtype: Option<String>,
}

pub(crate) const WHITE: Rgba<u8> = Rgba([255, 255, 255, 255]);
pub(crate) const INK: [u8; 3] = [30, 30, 30];
const PAD: u32 = 8;
pub(crate) const TITLE_SIZE: f32 = 15.0;
pub(crate) const LABEL_SIZE: f32 = 12.0;
const BAR_W: u32 = 14;
const BAR_GAP: u32 = 12;

/// Encodes an RGBA canvas as PNG, dropping the alpha channel when `rgb` is true.
pub fn encode_png(img: &RgbaImage, rgb: bool) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let enc = PngEncoder::new_with_quality(&mut out, CompressionType::Fast, FilterType::Adaptive);
    let (w, h) = img.dimensions();
    let res = if rgb {
        let data: Vec<u8> = img
            .pixels()
            .flat_map(|p| [p.0[0], p.0[1], p.0[2]])
            .collect();
        enc.write_image(&data, w, h, ExtendedColorType::Rgb8)
    } else {
        enc.write_image(img.as_raw(), w, h, ExtendedColorType::Rgba8)
    };
    res.map_err(|e| format!("cannot encode the PNG: {e}"))?;
    Ok(out)
}

/// The displayed size of an `h`×`w` array: `(height, width)` in pixels.
pub fn display_size(h: usize, w: usize, scale: Option<u32>) -> Result<(u32, u32), String> {
    if h == 0 || w == 0 {
        return Err("cannot show an empty array".into());
    }
    let (oh, ow) = match scale {
        Some(0) => return Err("--scale must be at least 1".into()),
        Some(k) => (h.saturating_mul(k as usize), w.saturating_mul(k as usize)),
        None => {
            let m = h.max(w);
            if m > 1024 {
                let f = 1024.0 / m as f64;
                (
                    ((h as f64 * f).round() as usize).max(1),
                    ((w as f64 * f).round() as usize).max(1),
                )
            } else {
                let s = 256usize.div_ceil(w).clamp(1, (1024 / m).max(1));
                (h * s, w * s)
            }
        }
    };
    if oh.saturating_mul(ow) > MAX_PIXELS || oh > u32::MAX as usize || ow > u32::MAX as usize {
        return Err(format!(
            "the image would be {ow}×{oh} pixels, more than the limit of {MAX_PIXELS}; use a smaller --scale"
        ));
    }
    Ok((oh as u32, ow as u32))
}

/// The pixel at the centre of element (`r`, `c`) in the PNG of an `h`×`w` heatmap made by
/// [`render_heatmap`] (with a title when `titled`), for tests and for callers that annotate.
pub fn element_pixel(
    h: usize,
    w: usize,
    scale: Option<u32>,
    titled: bool,
    r: usize,
    c: usize,
) -> Option<(u32, u32)> {
    if r >= h || c >= w {
        return None;
    }
    let (ih, iw) = display_size(h, w, scale).ok()?;
    let top = PAD + line_height(LABEL_SIZE) / 2 + if titled { title_height() } else { 0 };
    let x = PAD as u64 + ((2 * c as u64 + 1) * iw as u64) / (2 * w as u64);
    let y = top as u64 + ((2 * r as u64 + 1) * ih as u64) / (2 * h as u64);
    Some((x as u32, y as u32))
}

/// Height of the title band that [`with_title`] adds.
pub fn title_height() -> u32 {
    line_height(TITLE_SIZE) + PAD
}

/// Counts of a heatmap's values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ValueStats {
    /// Finite minimum and maximum (NaN when there is no finite value).
    pub min: f64,
    pub max: f64,
    pub nan: usize,
    pub inf: usize,
}

pub fn value_stats(values: &[f64]) -> ValueStats {
    let (mut min, mut max, mut nan, mut inf) = (f64::INFINITY, f64::NEG_INFINITY, 0, 0);
    for &v in values {
        if v.is_nan() {
            nan += 1;
        } else if v.is_infinite() {
            inf += 1;
        } else {
            min = min.min(v);
            max = max.max(v);
        }
    }
    if min > max {
        (min, max) = (f64::NAN, f64::NAN);
    }
    ValueStats { min, max, nan, inf }
}

impl ValueStats {
    /// `min 0.25, max 4, 3 NaN, 1 Inf` (the counts only when there are any): the value range
    /// as every text summary of an image, plot or animation states it.
    pub fn range_text(&self) -> String {
        format!(
            "min {}, max {}{}",
            fmt_sig(self.min, 6),
            fmt_sig(self.max, 6),
            nonfinite_text(self)
        )
    }
}

/// `, 3 NaN, 1 Inf` (empty when all values are finite).
fn nonfinite_text(s: &ValueStats) -> String {
    let mut t = String::new();
    if s.nan > 0 {
        t.push_str(&format!(", {} NaN", s.nan));
    }
    if s.inf > 0 {
        t.push_str(&format!(", {} Inf", s.inf));
    }
    t
}

/// The colour range: the options', else the finite data range, else [0, 1].
pub fn color_norm(stats: &ValueStats, vmin: Option<f64>, vmax: Option<f64>) -> Norm {
    let lo = vmin.unwrap_or(if stats.min.is_finite() {
        stats.min
    } else {
        0.0
    });
    let hi = vmax.unwrap_or(if stats.max.is_finite() {
        stats.max
    } else {
        1.0
    });
    Norm { vmin: lo, vmax: hi }
}

/// A heatmap of `values` (row-major, `h` rows of `w`): the image, a colour bar labelled with the
/// colour range, the title above, and a note of non-finite values below.
pub fn render_heatmap(
    values: &[f64],
    h: usize,
    w: usize,
    opts: &HeatmapOptions,
) -> Result<Rendered, String> {
    if values.len() != h.saturating_mul(w) {
        return Err(format!(
            "{} values do not make a {h}×{w} image",
            values.len()
        ));
    }
    let stats = value_stats(values);
    let norm = color_norm(&stats, opts.vmin, opts.vmax);
    let body = heatmap_body(values, h, w, opts, &stats, norm)?;
    let mut summary = format!(
        "{}{h}×{w}{}, {}",
        opts.title
            .as_ref()
            .map(|t| format!("{t}: "))
            .unwrap_or_default(),
        opts.dtype
            .as_ref()
            .map(|d| format!(" {d}"))
            .unwrap_or_default(),
        stats.range_text()
    );
    if opts.vmin.is_some() || opts.vmax.is_some() {
        summary.push_str(&format!(
            " (colours for {} to {})",
            fmt_sig(norm.vmin, 6),
            fmt_sig(norm.vmax, 6)
        ));
    }
    finish(body, opts.title.clone(), summary, true)
}

/// The heatmap without its title.
pub(crate) fn heatmap_body(
    values: &[f64],
    h: usize,
    w: usize,
    opts: &HeatmapOptions,
    stats: &ValueStats,
    norm: Norm,
) -> Result<RgbaImage, String> {
    let (ih, iw) = display_size(h, w, opts.scale)?;
    let labels: Vec<(f64, String)> = [norm.vmax, (norm.vmin + norm.vmax) / 2.0, norm.vmin]
        .iter()
        .map(|&v| {
            // The midpoint of a symmetric range is 0, not a rounding residue like 1e-06.
            let span = (norm.vmax - norm.vmin).abs();
            let v = if v.abs() <= span * 1e-9 { 0.0 } else { v };
            (v, fmt_sig(v, 4))
        })
        .collect();
    let label_w = labels
        .iter()
        .map(|(_, s)| text_width(s, LABEL_SIZE))
        .max()
        .unwrap_or(0);
    let bar_h = ih.max(96);
    let note = nonfinite_text(stats);
    let note_h = if note.is_empty() {
        0
    } else {
        line_height(LABEL_SIZE) + 6
    };
    let lh = line_height(LABEL_SIZE);
    let width = PAD + iw + BAR_GAP + BAR_W + 6 + label_w + PAD;
    let height = PAD + lh / 2 + bar_h.max(ih) + lh / 2 + note_h + PAD;
    if (width as usize).saturating_mul(height as usize) > MAX_PIXELS {
        return Err("the image is too large to draw".into());
    }
    let mut img = RgbaImage::from_pixel(width, height, WHITE);
    let top = PAD + lh / 2;
    // The image itself: nearest-neighbour.
    for y in 0..ih {
        let sy = (y as usize * h) / ih as usize;
        let row = &values[sy * w..(sy + 1) * w];
        for x in 0..iw {
            let sx = (x as usize * w) / iw as usize;
            let c = norm.t(row[sx]).map_or(NAN_COLOR, |t| opts.cmap.rgb(t));
            img.put_pixel(PAD + x, top + y, Rgba([c[0], c[1], c[2], 255]));
        }
    }
    // The colour bar, top = vmax, with a thin frame and three labelled ticks.
    let bx = PAD + iw + BAR_GAP;
    for y in 0..bar_h {
        let t = 1.0 - y as f64 / (bar_h - 1).max(1) as f64;
        let c = opts.cmap.rgb(t);
        for x in 0..BAR_W {
            img.put_pixel(bx + x, top + y, Rgba([c[0], c[1], c[2], 255]));
        }
    }
    let frame = Rgba([INK[0], INK[1], INK[2], 255]);
    for y in 0..bar_h {
        img.put_pixel(bx, top + y, frame);
        img.put_pixel(bx + BAR_W - 1, top + y, frame);
    }
    for x in 0..BAR_W {
        img.put_pixel(bx + x, top, frame);
        img.put_pixel(bx + x, top + bar_h - 1, frame);
    }
    for (i, (_, s)) in labels.iter().enumerate() {
        let ty = top + (bar_h - 1) * i as u32 / 2;
        for x in 0..4 {
            img.put_pixel(bx + BAR_W + x, ty, frame);
        }
        draw_text(
            &mut img,
            (bx + BAR_W + 6) as i32,
            ty as i32 - lh as i32 / 2,
            LABEL_SIZE,
            INK,
            s,
        );
    }
    if !note.is_empty() {
        let ny = top + bar_h.max(ih) + 6;
        let sw = line_height(LABEL_SIZE) - 4;
        for y in 0..sw {
            for x in 0..sw {
                let p = Rgba([NAN_COLOR[0], NAN_COLOR[1], NAN_COLOR[2], 255]);
                img.put_pixel(PAD + x, ny + 2 + y, p);
            }
        }
        let msg = format!("{} (magenta)", note.trim_start_matches(", "));
        draw_text(
            &mut img,
            (PAD + sw + 5) as i32,
            ny as i32,
            LABEL_SIZE,
            INK,
            &msg,
        );
    }
    Ok(img)
}

/// `body` with `title` drawn above it (centred, shortened to fit); a copy of `body` without one.
pub(crate) fn with_title(body: &RgbaImage, title: Option<&str>) -> RgbaImage {
    match title {
        Some(t) if !t.is_empty() => {
            let th = title_height();
            let mut c = RgbaImage::from_pixel(body.width(), body.height() + th, WHITE);
            image::imageops::replace(&mut c, body, 0, th as i64);
            let t = ellipsize(t, TITLE_SIZE, body.width().saturating_sub(2 * PAD).max(40));
            text::draw_text_centered(
                &mut c,
                body.width() as i32 / 2,
                (PAD / 2) as i32 + 2,
                TITLE_SIZE,
                INK,
                &t,
            );
            c
        }
        _ => body.clone(),
    }
}

/// Draws `title` above `body` and encodes the PNG.
pub(crate) fn finish(
    body: RgbaImage,
    title: Option<String>,
    summary: String,
    rgb: bool,
) -> Result<Rendered, String> {
    let canvas = with_title(&body, title.as_deref());
    let png = encode_png(&canvas, rgb)?;
    Ok(Rendered {
        png,
        width: canvas.width(),
        height: canvas.height(),
        summary,
        title,
        body,
    })
}

/// An exact image of `h`×`w` pixels of `channels` (3: RGB, 4: RGBA) bytes each, enlarged
/// `scale` times (nearest-neighbour) when asked. Without a scale and a title, the PNG decodes to
/// exactly `bytes`.
pub fn render_rgb(
    bytes: &[u8],
    h: usize,
    w: usize,
    channels: usize,
    scale: Option<u32>,
    title: Option<&str>,
) -> Result<Rendered, String> {
    if channels != 3 && channels != 4 {
        return Err(format!("an RGB image has 3 or 4 channels, not {channels}"));
    }
    if bytes.len() != h.saturating_mul(w).saturating_mul(channels) {
        return Err(format!(
            "{} bytes do not make a {h}×{w}×{channels} image",
            bytes.len()
        ));
    }
    let (oh, ow) = display_size(h, w, Some(scale.unwrap_or(1)))?;
    let mut img = RgbaImage::new(ow, oh);
    for (x, y, p) in img.enumerate_pixels_mut() {
        let sy = (y as usize * h) / oh as usize;
        let sx = (x as usize * w) / ow as usize;
        let i = (sy * w + sx) * channels;
        let px = &bytes[i..i + channels];
        *p = Rgba([px[0], px[1], px[2], if channels == 4 { px[3] } else { 255 }]);
    }
    let kind = if channels == 3 { "RGB" } else { "RGBA" };
    let summary = format!(
        "{}{h}×{w} {kind} u8",
        title.map(|t| format!("{t}: ")).unwrap_or_default()
    );
    finish(img, title.map(str::to_string), summary, channels == 3)
}

/// Several images in a row, each under its title, top-aligned on a white background; the
/// summary has one line per image.
pub fn side_by_side(images: &[Rendered]) -> Result<Rendered, String> {
    if images.is_empty() {
        return Err("nothing to show".into());
    }
    const GAP: u32 = 16;
    let any_title = images
        .iter()
        .any(|r| r.title.as_deref().is_some_and(|t| !t.is_empty()));
    let th = if any_title {
        line_height(TITLE_SIZE) + PAD
    } else {
        0
    };
    let width =
        images.iter().map(|r| r.body.width()).sum::<u32>() + GAP * (images.len() as u32 - 1);
    let height = th + images.iter().map(|r| r.body.height()).max().unwrap_or(0);
    if (width as usize).saturating_mul(height as usize) > MAX_PIXELS {
        return Err("the images are too large to show side by side".into());
    }
    let mut canvas = RgbaImage::from_pixel(width, height, WHITE);
    let mut x0 = 0u32;
    for r in images {
        let bw = r.body.width();
        for (x, y, p) in r.body.enumerate_pixels() {
            let a = p.0[3] as u32;
            let blend = |c: u8| ((c as u32 * a + 255 * (255 - a) + 127) / 255) as u8;
            canvas.put_pixel(
                x0 + x,
                th + y,
                Rgba([blend(p.0[0]), blend(p.0[1]), blend(p.0[2]), 255]),
            );
        }
        if let Some(t) = r.title.as_deref().filter(|t| !t.is_empty()) {
            let t = ellipsize(t, TITLE_SIZE, bw.max(40));
            text::draw_text_centered(
                &mut canvas,
                (x0 + bw / 2) as i32,
                (PAD / 2) as i32 + 2,
                TITLE_SIZE,
                INK,
                &t,
            );
        }
        x0 += bw + GAP;
    }
    let summary = images
        .iter()
        .map(|r| r.summary.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let png = encode_png(&canvas, true)?;
    Ok(Rendered {
        png,
        width: canvas.width(),
        height: canvas.height(),
        summary,
        title: None,
        body: canvas,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::GenericImageView;

    fn decode(png: &[u8]) -> image::DynamicImage {
        image::load_from_memory_with_format(png, image::ImageFormat::Png).expect("a valid PNG")
    }

    fn at(r: usize, c: usize, h: usize, w: usize, scale: Option<u32>) -> (u32, u32) {
        element_pixel(h, w, scale, false, r, c).expect("inside")
    }

    #[test]
    fn display_size_scales_small_up_and_large_down() {
        assert_eq!(display_size(64, 64, None), Ok((256, 256)));
        assert_eq!(display_size(3, 5, None), Ok((156, 260)));
        assert_eq!(display_size(2048, 1024, None), Ok((1024, 512)));
        assert_eq!(display_size(600, 700, None), Ok((600, 700)));
        assert_eq!(display_size(10, 10, Some(3)), Ok((30, 30)));
        assert!(display_size(10, 10, Some(0)).is_err());
        assert!(display_size(0, 10, None).is_err());
        assert!(display_size(100_000, 100_000, Some(100)).is_err());
        for (h, w) in [(1, 1), (1, 3000), (7, 1000), (1000, 7), (5000, 5000)] {
            let (ih, iw) = display_size(h, w, None).expect("size");
            assert!(
                ih <= 1024 && iw <= 1024 && ih >= 1 && iw >= 1,
                "{h}x{w} -> {ih}x{iw}"
            );
        }
    }

    #[test]
    fn heatmap_of_a_ramp_has_colormap_colours_and_a_colour_bar() {
        let (h, w) = (8, 16);
        let values: Vec<f64> = (0..h * w)
            .map(|i| (i % w) as f64 / (w - 1) as f64)
            .collect();
        let opts = HeatmapOptions::default();
        let r = render_heatmap(&values, h, w, &opts).expect("rendered");
        let img = decode(&r.png);
        assert_eq!((img.width(), img.height()), (r.width, r.height));
        let (ih, iw) = display_size(h, w, None).expect("size");
        assert_eq!((ih, iw), (128, 256));
        assert!(r.width > iw + BAR_GAP + BAR_W && r.height >= ih);
        for c in [0, 5, 15] {
            let (x, y) = at(3, c, h, w, None);
            let want = colorous::VIRIDIS
                .eval_continuous(c as f64 / 15.0)
                .into_array();
            assert_eq!(img.get_pixel(x, y).0[..3], want, "column {c}");
        }
        // The colour bar: vmax colour at the top, vmin colour at the bottom.
        let bx = PAD + iw + BAR_GAP + BAR_W / 2;
        let top = PAD + line_height(LABEL_SIZE) / 2;
        let bar_h = ih.max(96);
        for row in [1, bar_h / 3, bar_h - 2] {
            let t = 1.0 - row as f64 / (bar_h - 1) as f64;
            let want = colorous::VIRIDIS.eval_continuous(t).into_array();
            assert_eq!(
                img.get_pixel(bx, top + row).0[..3],
                want,
                "colour bar row {row}"
            );
        }
        assert_eq!(r.summary, "8×16, min 0, max 1");
    }

    #[test]
    fn heatmap_of_a_checkerboard_with_range_and_title() {
        let (h, w) = (4, 4);
        let values: Vec<f64> = (0..16)
            .map(|i| ((i / 4 + i % 4) % 2) as f64 * 10.0)
            .collect();
        let opts = HeatmapOptions {
            cmap: Colormap::by_name("magma").expect("magma"),
            vmin: Some(-10.0),
            vmax: Some(10.0),
            scale: Some(20),
            title: Some("board".into()),
            dtype: Some("i32".into()),
        };
        let r = render_heatmap(&values, h, w, &opts).expect("rendered");
        let img = decode(&r.png);
        let th = line_height(TITLE_SIZE) + PAD;
        assert_eq!(r.height, r.body.height() + th);
        for (row, col) in [(0, 0), (0, 1), (3, 2), (2, 2)] {
            let (x, y) = at(row, col, h, w, Some(20));
            let v = values[row * w + col];
            let want = colorous::MAGMA
                .eval_continuous((v + 10.0) / 20.0)
                .into_array();
            assert_eq!(img.get_pixel(x, y + th).0[..3], want, "({row}, {col})");
        }
        assert_eq!(
            r.summary,
            "board: 4×4 i32, min 0, max 10 (colours for -10 to 10)"
        );
        // Title ink above the image.
        let dark = (0..r.width)
            .flat_map(|x| (0..th).map(move |y| (x, y)))
            .filter(|&(x, y)| img.get_pixel(x, y).0[0] < 100)
            .count();
        assert!(dark > 20, "title drawn ({dark} dark pixels)");
    }

    #[test]
    fn heatmap_counts_and_colours_nan_and_inf() {
        let (h, w) = (5, 5);
        let mut values: Vec<f64> = (0..25).map(|i| i as f64).collect();
        values[0] = f64::NAN;
        values[7] = f64::NAN;
        values[12] = f64::NEG_INFINITY;
        let opts = HeatmapOptions {
            cmap: Colormap::by_name("gray").expect("gray"),
            ..HeatmapOptions::default()
        };
        let r = render_heatmap(&values, h, w, &opts).expect("rendered");
        assert_eq!(r.summary, "5×5, min 1, max 24, 2 NaN, 1 Inf");
        let img = decode(&r.png);
        for i in [0, 7, 12] {
            let (x, y) = at(i / 5, i % 5, h, w, None);
            assert_eq!(img.get_pixel(x, y).0[..3], NAN_COLOR, "element {i}");
        }
        let (x, y) = at(4, 4, h, w, None);
        assert_eq!(img.get_pixel(x, y).0[..3], [255, 255, 255]);
        let (x, y) = at(0, 1, h, w, None);
        assert_eq!(img.get_pixel(x, y).0[..3], [0, 0, 0]);
        // The legend swatch under the image is magenta too.
        let magenta = img.to_rgb8().pixels().filter(|p| p.0 == NAN_COLOR).count();
        let (ih, _) = display_size(h, w, None).expect("size");
        let side = (ih as usize / h).pow(2);
        assert!(
            magenta > 3 * side,
            "{magenta} magenta pixels: the squares and the legend"
        );
        assert!(render_heatmap(&values, 4, 5, &opts).is_err());
        let all_nan = render_heatmap(&[f64::NAN; 4], 2, 2, &opts).expect("all NaN renders");
        assert_eq!(all_nan.summary, "2×2, min nan, max nan, 4 NaN");
    }

    #[test]
    fn rgb_and_rgba_round_trip_exactly() {
        let (h, w) = (7, 9);
        let rgb: Vec<u8> = (0..h * w * 3).map(|i| (i * 37 % 256) as u8).collect();
        let r = render_rgb(&rgb, h, w, 3, None, None).expect("rgb");
        let img = decode(&r.png);
        assert_eq!(img.color(), image::ColorType::Rgb8);
        assert_eq!(img.to_rgb8().into_raw(), rgb);
        assert_eq!(r.summary, "7×9 RGB u8");
        let rgba: Vec<u8> = (0..h * w * 4).map(|i| (i * 53 % 256) as u8).collect();
        let r = render_rgb(&rgba, h, w, 4, None, Some("pic")).expect("rgba");
        assert_eq!(r.body.as_raw(), &rgba);
        let img = decode(&r.png);
        assert_eq!(img.color(), image::ColorType::Rgba8);
        let th = line_height(TITLE_SIZE) + PAD;
        assert_eq!(
            img.crop_imm(0, th, w as u32, h as u32)
                .to_rgba8()
                .into_raw(),
            rgba
        );
        let big = render_rgb(&rgb, h, w, 3, Some(3), None).expect("scaled");
        let img = decode(&big.png).to_rgb8();
        assert_eq!((img.width(), img.height()), (27, 21));
        assert_eq!(
            img.get_pixel(5, 8).0[..],
            rgb[(2 * w + 1) * 3..(2 * w + 1) * 3 + 3]
        );
        assert!(render_rgb(&rgb, h, w, 2, None, None).is_err());
        assert!(render_rgb(&rgb[1..], h, w, 3, None, None).is_err());
    }

    #[test]
    fn side_by_side_places_panels_in_a_row_under_titles() {
        let a = render_heatmap(
            &[0.0, 1.0, 2.0, 3.0],
            2,
            2,
            &HeatmapOptions {
                title: Some("a".into()),
                ..Default::default()
            },
        )
        .expect("a");
        let px = vec![200u8; 3 * 3 * 3];
        let b = render_rgb(&px, 3, 3, 3, Some(10), Some("b")).expect("b");
        let s = side_by_side(&[a.clone(), b.clone()]).expect("row");
        let img = decode(&s.png);
        let th = line_height(TITLE_SIZE) + PAD;
        assert_eq!(img.width(), a.body.width() + 16 + b.body.width());
        assert_eq!(img.height(), th + a.body.height().max(b.body.height()));
        assert_eq!(s.summary, format!("{}\n{}", a.summary, b.summary));
        let x0 = a.body.width() + 16;
        assert_eq!(img.get_pixel(x0 + 15, th + 15).0[..3], [200, 200, 200]);
        assert_eq!(img.get_pixel(x0 + 25, th + 25).0[..3], [200, 200, 200]);
        assert_eq!(img.get_pixel(x0 + 15, th + 35).0[..3], [255, 255, 255]);
        assert!(side_by_side(&[]).is_err());
    }
}
