//! Animated GIFs for `%%animate`: RGBA frames of one size → a looping GIF (the `image` crate's
//! encoder, which quantises each frame to its own 256-colour palette), and the MIME bundle that
//! shows it inline.
//!
//! GIF delays are in hundredths of a second, so frame rates above 50 fps play at 50 fps at most
//! (browsers slow down even shorter delays).

use base64::Engine;
use image::codecs::gif::{GifEncoder, Repeat};
use image::{Delay, Frame, RgbaImage};

use crate::output::MimeBundle;

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
}
