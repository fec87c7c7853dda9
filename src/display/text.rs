//! Text in PNG images: titles, colour-bar labels, axis labels. One embedded font, a subset of
//! DejaVu Sans (Latin-1 plus a few symbols; `fonts/LICENSE.txt` has its licence and how it was
//! made), rasterised with `ab_glyph` and blended into an RGBA canvas. The same font is registered
//! with `plotters` (its `ab_glyph` feature) as "sans-serif" for the line plots.
//!
//! Characters outside the subset draw as the font's missing-glyph box. Drawing outside the canvas
//! is clipped, never an error.

use ab_glyph::{point, Font, FontRef, PxScale, ScaleFont};
use image::RgbaImage;
use std::sync::OnceLock;

static FONT_BYTES: &[u8] = include_bytes!("fonts/DejaVuSans-subset.ttf");

/// The family name under which the font is registered with plotters.
pub const PLOTTERS_FAMILY: &str = "sans-serif";

fn font() -> Option<&'static FontRef<'static>> {
    static FONT: OnceLock<Option<FontRef<'static>>> = OnceLock::new();
    FONT.get_or_init(|| FontRef::try_from_slice(FONT_BYTES).ok())
        .as_ref()
}

/// Registers the embedded font with plotters (once); false if that failed, in which case plots
/// are drawn without text.
pub fn register_plotters_font() -> bool {
    static DONE: OnceLock<bool> = OnceLock::new();
    *DONE.get_or_init(|| {
        plotters::style::register_font(
            PLOTTERS_FAMILY,
            plotters::style::FontStyle::Normal,
            FONT_BYTES,
        )
        .is_ok()
    })
}

/// Width in pixels of `text` at `size` pixels per em.
pub fn text_width(text: &str, size: f32) -> u32 {
    let Some(f) = font() else { return 0 };
    let sf = f.as_scaled(PxScale::from(size));
    let mut w = 0.0f32;
    let mut prev = None;
    for c in text.chars() {
        let id = sf.glyph_id(c);
        if let Some(p) = prev {
            w += sf.kern(p, id);
        }
        w += sf.h_advance(id);
        prev = Some(id);
    }
    w.ceil().max(0.0) as u32
}

/// Height in pixels of one line of text at `size` (ascent + descent).
pub fn line_height(size: f32) -> u32 {
    let Some(f) = font() else {
        return size.ceil() as u32;
    };
    let sf = f.as_scaled(PxScale::from(size));
    (sf.ascent() - sf.descent()).ceil().max(1.0) as u32
}

/// Draws `text` with the top of its line box at (`x`, `y`), blending `color` by glyph coverage.
pub fn draw_text(img: &mut RgbaImage, x: i32, y: i32, size: f32, color: [u8; 3], text: &str) {
    let Some(f) = font() else { return };
    let scale = PxScale::from(size);
    let sf = f.as_scaled(scale);
    let baseline = y as f32 + sf.ascent();
    let mut caret = x as f32;
    let mut prev = None;
    let (w, h) = (img.width() as i64, img.height() as i64);
    for c in text.chars() {
        let id = sf.glyph_id(c);
        if let Some(p) = prev {
            caret += sf.kern(p, id);
        }
        prev = Some(id);
        let glyph = id.with_scale_and_position(scale, point(caret, baseline));
        caret += sf.h_advance(id);
        let Some(outline) = f.outline_glyph(glyph) else {
            continue;
        };
        let b = outline.px_bounds();
        outline.draw(|gx, gy, cov| {
            let px = b.min.x as i64 + gx as i64;
            let py = b.min.y as i64 + gy as i64;
            if px < 0 || py < 0 || px >= w || py >= h {
                return;
            }
            let cov = cov.clamp(0.0, 1.0);
            let p = img.get_pixel_mut(px as u32, py as u32);
            for (ch, &col) in p.0.iter_mut().take(3).zip(&color) {
                *ch = (*ch as f32 * (1.0 - cov) + col as f32 * cov).round() as u8;
            }
            p.0[3] = p.0[3].max((cov * 255.0).round() as u8);
        });
    }
}

/// Draws `text` horizontally centred on `cx`.
pub fn draw_text_centered(
    img: &mut RgbaImage,
    cx: i32,
    y: i32,
    size: f32,
    color: [u8; 3],
    text: &str,
) {
    let w = text_width(text, size) as i32;
    draw_text(img, cx - w / 2, y, size, color, text);
}

/// `text` shortened with "…" so that it fits in `max_width` pixels.
pub fn ellipsize(text: &str, size: f32, max_width: u32) -> String {
    if text_width(text, size) <= max_width {
        return text.to_string();
    }
    let mut chars: Vec<char> = text.chars().collect();
    while !chars.is_empty() {
        chars.pop();
        let s: String = chars.iter().collect::<String>() + "…";
        if text_width(&s, size) <= max_width {
            return s;
        }
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::Rgba;

    #[test]
    fn text_is_drawn_inside_its_measured_box() {
        assert!(font().is_some(), "the embedded font parses");
        let size = 16.0;
        let text = "min 0.5 × max 1e+09 NaN";
        let w = text_width(text, size);
        let h = line_height(size);
        assert!(w > 100 && w < 400, "width {w}");
        assert!((16..=24).contains(&h), "height {h}");
        let mut img = RgbaImage::from_pixel(w + 40, h + 40, Rgba([255, 255, 255, 255]));
        draw_text(&mut img, 20, 20, size, [0, 0, 0], text);
        let mut dark = 0;
        for (x, y, p) in img.enumerate_pixels() {
            if p.0[0] < 128 {
                dark += 1;
                assert!(
                    (18..=22 + w).contains(&x) && (18..=22 + h).contains(&y),
                    "ink at {x},{y}"
                );
            }
        }
        assert!(dark > 100, "only {dark} dark pixels");
        // Clipped, not a panic.
        draw_text(&mut img, -50, -5, 40.0, [0, 0, 0], text);
        assert!(text_width("abc", 12.0) < text_width("abcdef", 12.0));
        assert_eq!(ellipsize("short", 12.0, 1000), "short");
        let e = ellipsize("a rather long title indeed", 12.0, 60);
        assert!(e.ends_with('…') && text_width(&e, 12.0) <= 60, "{e}");
        assert!(register_plotters_font());
    }
}
