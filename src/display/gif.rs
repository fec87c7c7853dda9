//! Animated GIFs for `%%animate`: RGBA frames of one size → a looping GIF (the `image` crate's
//! encoder, which quantises each frame to its own 256-colour palette), and the MIME bundle that
//! shows it inline.
//!
//! GIF delays are in hundredths of a second, so frame rates above 50 fps play at 50 fps at most
//! (browsers slow down even shorter delays).

use base64::Engine;
use image::codecs::gif::{GifEncoder, Repeat};
use image::{Delay, Frame, RgbaImage};

use super::image::{
    color_norm, heatmap_body, value_stats, with_title, HeatmapOptions, ValueStats, WHITE,
};
use protocol::output::MimeBundle;

/// The quantiser's speed (1 = best and slowest, 30 = fastest); 10 keeps colormap gradients smooth.
const SPEED: i32 = 10;

/// Encodes `frames` (each `w × h × 4` RGBA bytes) as a GIF that loops forever at `fps`.
pub fn encode_gif(frames: &[Vec<u8>], w: u32, h: u32, fps: f64) -> Result<Vec<u8>, String> {
    if frames.is_empty() {
        return Err("an animation needs at least one frame".into());
    }
    if w == 0 || h == 0 || w > u16::MAX as u32 || h > u16::MAX as u32 {
        return Err(format!("a GIF cannot be {w}×{h} pixels"));
    }
    if !(fps.is_finite() && fps > 0.0) {
        return Err(format!("the frame rate must be positive, not {fps}"));
    }
    let want = (w as usize) * (h as usize) * 4;
    let ms = (1000.0 / fps).round().clamp(20.0, 655_350.0) as u32;
    let mut out = Vec::new();
    {
        let mut enc = GifEncoder::new_with_speed(&mut out, SPEED);
        enc.set_repeat(Repeat::Infinite)
            .map_err(|e| format!("cannot write the GIF: {e}"))?;
        for (i, f) in frames.iter().enumerate() {
            if f.len() != want {
                return Err(format!(
                    "frame {i} has {} bytes, not {want} ({w}×{h} RGBA)",
                    f.len()
                ));
            }
            let img = RgbaImage::from_raw(w, h, f.clone())
                .ok_or_else(|| format!("frame {i} does not fit {w}×{h}"))?;
            let frame = Frame::from_parts(img, 0, 0, Delay::from_numer_denom_ms(ms, 1));
            enc.encode_frame(frame)
                .map_err(|e| format!("cannot write GIF frame {i}: {e}"))?;
        }
    }
    Ok(out)
}

/// Heatmap frames of one animation: every frame `h`×`w` values, drawn with one colour range (the
/// options', else the finite range over all frames, so colours mean the same in every frame),
/// each under its title, padded to one size.
pub fn heatmap_frames(
    frames: &[Vec<f64>],
    titles: &[String],
    h: usize,
    w: usize,
    opts: &HeatmapOptions,
) -> Result<HeatmapFrames, String> {
    if frames.is_empty() {
        return Err("an animation needs at least one frame".into());
    }
    let mut all = ValueStats {
        min: f64::NAN,
        max: f64::NAN,
        nan: 0,
        inf: 0,
    };
    for (i, f) in frames.iter().enumerate() {
        if f.len() != h.saturating_mul(w) {
            return Err(format!("frame {i} has {} values, not {h}×{w}", f.len()));
        }
        let s = value_stats(f);
        all.nan += s.nan;
        all.inf += s.inf;
        all.min = if all.min.is_nan() {
            s.min
        } else {
            all.min.min(s.min)
        };
        all.max = if all.max.is_nan() {
            s.max
        } else {
            all.max.max(s.max)
        };
    }
    let norm = color_norm(&all, opts.vmin, opts.vmax);
    let mut images = Vec::with_capacity(frames.len());
    for (i, f) in frames.iter().enumerate() {
        let stats = value_stats(f);
        let body = heatmap_body(f, h, w, opts, &stats, norm)?;
        images.push(with_title(&body, titles.get(i).map(String::as_str)));
    }
    let fw = images.iter().map(|i| i.width()).max().unwrap_or(1);
    let fh = images.iter().map(|i| i.height()).max().unwrap_or(1);
    if (fw as usize)
        .saturating_mul(fh as usize)
        .saturating_mul(4)
        .saturating_mul(images.len())
        > MAX_GIF_BYTES
    {
        return Err(format!(
            "{} frames of {fw}×{fh} pixels are too many for one GIF; capture fewer frames (--every) or use a smaller --scale",
            images.len()
        ));
    }
    let out = images
        .into_iter()
        .map(|img| {
            if img.dimensions() == (fw, fh) {
                img.into_raw()
            } else {
                let mut c = RgbaImage::from_pixel(fw, fh, WHITE);
                image::imageops::replace(&mut c, &img, 0, 0);
                c.into_raw()
            }
        })
        .collect();
    Ok(HeatmapFrames {
        rgba: out,
        width: fw,
        height: fh,
        stats: all,
    })
}

/// The frames made by [`heatmap_frames`].
#[derive(Debug, Clone)]
pub struct HeatmapFrames {
    /// `width × height × 4` bytes each.
    pub rgba: Vec<Vec<u8>>,
    pub width: u32,
    pub height: u32,
    /// Over all frames.
    pub stats: ValueStats,
}

/// The most RGBA bytes that the frames of one animation may take before encoding.
pub const MAX_GIF_BYTES: usize = 1 << 30;

/// `image/gif` (base64) + `text/plain`.
pub fn gif_bundle(gif: &[u8], summary: &str) -> MimeBundle {
    let mut b = MimeBundle::new();
    b.insert(
        "image/gif".into(),
        base64::engine::general_purpose::STANDARD.encode(gif).into(),
    );
    b.insert("text/plain".into(), summary.into());
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::AnimationDecoder;

    #[test]
    fn gif_of_n_frames_decodes_to_n_frames_of_the_right_size() {
        let (w, h, n) = (40u32, 24u32, 7usize);
        let frames: Vec<Vec<u8>> = (0..n)
            .map(|k| {
                let mut f = vec![0u8; (w * h * 4) as usize];
                for (i, px) in f.chunks_mut(4).enumerate() {
                    let x = (i as u32 % w) as usize;
                    let on = x == k * 5;
                    px.copy_from_slice(&[
                        if on { 255 } else { 0 },
                        0,
                        if on { 0 } else { 200 },
                        255,
                    ]);
                }
                f
            })
            .collect();
        let gif = encode_gif(&frames, w, h, 10.0).expect("gif");
        let dec = image::codecs::gif::GifDecoder::new(std::io::Cursor::new(&gif)).expect("decoder");
        let decoded: Vec<image::Frame> = dec.into_frames().collect_frames().expect("frames");
        assert_eq!(decoded.len(), n);
        for (k, f) in decoded.iter().enumerate() {
            let buf = f.buffer();
            assert_eq!(buf.dimensions(), (w, h));
            assert_eq!(f.delay().numer_denom_ms(), (100, 1));
            // The red column moved to x = 5k; elsewhere blue.
            let p = buf.get_pixel((k * 5) as u32, 10).0;
            assert!(p[0] > 200 && p[2] < 50, "frame {k}: {p:?}");
            let q = buf.get_pixel(((k * 5 + 2) % w as usize) as u32, 10).0;
            assert!(q[0] < 50 && q[2] > 150, "frame {k}: {q:?}");
        }
        assert!(encode_gif(&[], w, h, 10.0).is_err());
        assert!(encode_gif(&frames[..1], w + 1, h, 10.0).is_err());
        assert!(encode_gif(&frames[..1], w, h, 0.0).is_err());
        let b = gif_bundle(&gif, "u: 7 frames");
        assert!(b.contains_key("image/gif") && b["text/plain"] == "u: 7 frames");
    }

    #[test]
    fn heatmap_frames_share_one_colour_range_and_size() {
        let (h, w) = (6, 8);
        // Frame k is constant k, except one NaN in frame 1.
        let mut frames: Vec<Vec<f64>> = (0..4).map(|k| vec![k as f64; h * w]).collect();
        frames[1][5] = f64::NAN;
        let titles: Vec<String> = (0..4).map(|k| format!("u step {k}")).collect();
        let opts = HeatmapOptions::default();
        let hf = heatmap_frames(&frames, &titles, h, w, &opts).expect("frames");
        let (imgs, fw, fh, stats) = (hf.rgba, hf.width, hf.height, hf.stats);
        assert_eq!(imgs.len(), 4);
        assert!(imgs.iter().all(|f| f.len() == (fw * fh * 4) as usize));
        assert_eq!(
            (stats.min, stats.max, stats.nan, stats.inf),
            (0.0, 3.0, 1, 0)
        );
        // The centre of the image area of frame k has the colour of k / 3 (one range for all).
        let (x, y) =
            crate::display::image::element_pixel(h, w, None, true, h / 2, w / 2).expect("inside");
        for (k, f) in imgs.iter().enumerate() {
            let i = ((y * fw + x) * 4) as usize;
            let want = colorous::VIRIDIS
                .eval_continuous(k as f64 / 3.0)
                .into_array();
            assert_eq!(f[i..i + 3], want, "frame {k}");
        }
        let gif = encode_gif(&imgs, fw, fh, 5.0).expect("gif");
        let dec = image::codecs::gif::GifDecoder::new(std::io::Cursor::new(&gif)).expect("decoder");
        let n = dec.into_frames().collect_frames().expect("frames").len();
        assert_eq!(n, 4);
        assert!(heatmap_frames(&frames, &titles, h, w + 1, &opts).is_err());
        assert!(heatmap_frames(&[], &[], h, w, &opts).is_err());
    }
}
