//! Charts: a line plot of a 1-D array (drawn with `plotters` into an RGB buffer, text in the
//! embedded font) and a labelled horizontal bar chart (drawn directly, for `%timings`).
//!
//! Long arrays are reduced to a min/max envelope per pixel column before plotting, so a line plot
//! of ten million values costs about as much as one of a thousand and still shows every spike.

use super::fmt_sig;
use super::image::{finish, value_stats, Rendered, INK, LABEL_SIZE, WHITE};
use super::text::{self, draw_text, ellipsize, line_height, text_width};
use image::{Rgba, RgbaImage};
use plotters::prelude::*;

const PLOT_W: u32 = 640;
const PLOT_H: u32 = 320;
const LINE_COLOR: RGBColor = RGBColor(31, 119, 180);

/// Points to draw: runs of finite `(index, value)` pairs (a NaN or Inf ends a run); arrays longer
/// than `4 × max_points` are reduced to each bucket's minimum and maximum, in index order.
pub fn plot_segments(values: &[f64], max_points: usize) -> Vec<Vec<(f64, f64)>> {
    let mut segs: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut cur: Vec<(f64, f64)> = Vec::new();
    let n = values.len();
    if n <= 4 * max_points.max(1) {
        for (i, &v) in values.iter().enumerate() {
            if v.is_finite() {
                cur.push((i as f64, v));
            } else if !cur.is_empty() {
                segs.push(std::mem::take(&mut cur));
            }
        }
    } else {
        let k = n.div_ceil(max_points.max(1));
        for (b, chunk) in values.chunks(k).enumerate() {
            let mut lo: Option<(usize, f64)> = None;
            let mut hi: Option<(usize, f64)> = None;
            for (j, &v) in chunk.iter().enumerate() {
                if !v.is_finite() {
                    continue;
                }
                if lo.is_none_or(|(_, m)| v < m) {
                    lo = Some((j, v));
                }
                if hi.is_none_or(|(_, m)| v > m) {
                    hi = Some((j, v));
                }
            }
            match (lo, hi) {
                (Some(a), Some(z)) => {
                    let (first, second) = if a.0 <= z.0 { (a, z) } else { (z, a) };
                    cur.push(((b * k + first.0) as f64, first.1));
                    if second.0 != first.0 {
                        cur.push(((b * k + second.0) as f64, second.1));
                    }
                }
                _ => {
                    if !cur.is_empty() {
                        segs.push(std::mem::take(&mut cur));
                    }
                }
            }
        }
    }
    if !cur.is_empty() {
        segs.push(cur);
    }
    segs
}

/// A line plot of `values` against their index, with axes and the title above.
pub fn line_plot(
    values: &[f64],
    title: Option<&str>,
    dtype: Option<&str>,
) -> Result<Rendered, String> {
    if values.is_empty() {
        return Err("cannot plot an empty array".into());
    }
    let stats = value_stats(values);
    let (mut lo, mut hi) = if stats.min.is_finite() {
        (stats.min, stats.max)
    } else {
        (0.0, 1.0)
    };
    if hi - lo <= f64::EPSILON * lo.abs().max(1.0) {
        let d = lo.abs().max(1.0) * 0.5;
        (lo, hi) = (lo - d, hi + d);
    } else {
        let d = (hi - lo) * 0.05;
        (lo, hi) = (lo - d, hi + d);
    }
    let n = values.len();
    let xmax = (n.max(2) - 1) as f64;
    let segs = plot_segments(values, PLOT_W as usize);
    let font_ok = text::register_plotters_font();
    let mut buf = vec![255u8; (PLOT_W * PLOT_H * 3) as usize];
    {
        let err = |e: &dyn std::fmt::Display| format!("cannot draw the plot: {e}");
        let root = BitMapBackend::with_buffer(&mut buf, (PLOT_W, PLOT_H)).into_drawing_area();
        root.fill(&plotters::style::WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(if font_ok { 28 } else { 0 })
            .y_label_area_size(if font_ok { 64 } else { 0 })
            .build_cartesian_2d(0f64..xmax, lo..hi)
            .map_err(|e| err(&e))?;
        let mut mesh = chart.configure_mesh();
        mesh.light_line_style(RGBColor(235, 235, 235))
            .bold_line_style(RGBColor(215, 215, 215))
            .x_labels(8)
            .y_labels(6)
            .x_label_formatter(&|v| fmt_sig(v.round(), 6))
            .y_label_formatter(&|v| fmt_sig(*v, 4));
        if font_ok {
            mesh.label_style(
                (text::PLOTTERS_FAMILY, 12)
                    .into_font()
                    .color(&RGBColor(INK[0], INK[1], INK[2])),
            );
        } else {
            mesh.disable_x_axis().disable_y_axis();
        }
        mesh.draw().map_err(|e| err(&e))?;
        for s in &segs {
            chart
                .draw_series(LineSeries::new(
                    s.iter().copied(),
                    LINE_COLOR.stroke_width(2),
                ))
                .map_err(|e| err(&e))?;
        }
        if n <= 50 {
            let pts = segs.iter().flatten().copied();
            chart
                .draw_series(pts.map(|p| Circle::new(p, 3, LINE_COLOR.filled())))
                .map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
    }
    let body = RgbaImage::from_fn(PLOT_W, PLOT_H, |x, y| {
        let i = ((y * PLOT_W + x) * 3) as usize;
        Rgba([buf[i], buf[i + 1], buf[i + 2], 255])
    });
    let summary = format!(
        "{}{n} values{}, {}",
        title.map(|t| format!("{t}: ")).unwrap_or_default(),
        dtype.map(|d| format!(" {d}")).unwrap_or_default(),
        stats.range_text()
    );
    finish(body, title.map(str::to_string), summary, true)
}

/// One bar of [`bar_chart`].
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// Drawn left of the bar.
    pub label: String,
    /// Bar length (non-negative; non-finite values draw no bar).
    pub value: f64,
    /// Drawn right of the bar, e.g. `1.23 ms (2.0×)`.
    pub note: String,
}

/// Colours of successive bars.
const BAR_COLORS: [[u8; 3]; 4] = [
    [31, 119, 180],
    [255, 127, 14],
    [44, 160, 44],
    [148, 103, 189],
];

/// A horizontal bar chart: one row per bar, bars scaled to the largest value, `title` above.
pub fn bar_chart(bars: &[Bar], title: &str, summary: String) -> Result<Rendered, String> {
    if bars.is_empty() {
        return Err("no bars to draw".into());
    }
    if bars.len() > 1000 {
        return Err("too many bars to draw".into());
    }
    const PAD: u32 = 10;
    const ROW: u32 = 24;
    const BAR_MAX: u32 = 360;
    const LABEL_MAX: u32 = 260;
    let labels: Vec<String> = bars
        .iter()
        .map(|b| ellipsize(&b.label, LABEL_SIZE, LABEL_MAX))
        .collect();
    let label_w = labels
        .iter()
        .map(|l| text_width(l, LABEL_SIZE))
        .max()
        .unwrap_or(0);
    let note_w = bars
        .iter()
        .map(|b| text_width(&b.note, LABEL_SIZE))
        .max()
        .unwrap_or(0);
    let vmax = bars
        .iter()
        .map(|b| b.value)
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold(0.0f64, f64::max);
    let width = PAD + label_w + 8 + BAR_MAX + 6 + note_w + PAD;
    let height = PAD + ROW * bars.len() as u32 + PAD;
    let mut img = RgbaImage::from_pixel(width, height, WHITE);
    let lh = line_height(LABEL_SIZE);
    let x0 = PAD + label_w + 8;
    for (i, (b, label)) in bars.iter().zip(&labels).enumerate() {
        let y = PAD + ROW * i as u32;
        let ty = (y + (ROW - lh) / 2) as i32;
        draw_text(
            &mut img,
            (x0 - 8 - text_width(label, LABEL_SIZE)) as i32,
            ty,
            LABEL_SIZE,
            INK,
            label,
        );
        let len = if vmax > 0.0 && b.value.is_finite() && b.value > 0.0 {
            ((b.value / vmax) * BAR_MAX as f64)
                .round()
                .clamp(1.0, BAR_MAX as f64) as u32
        } else {
            0
        };
        let c = BAR_COLORS[i % BAR_COLORS.len()];
        for yy in y + 4..y + ROW - 4 {
            for xx in x0..x0 + len {
                img.put_pixel(xx, yy, Rgba([c[0], c[1], c[2], 255]));
            }
        }
        draw_text(
            &mut img,
            (x0 + len + 6) as i32,
            ty,
            LABEL_SIZE,
            INK,
            &b.note,
        );
    }
    let axis = Rgba([INK[0], INK[1], INK[2], 255]);
    for yy in PAD..height - PAD {
        img.put_pixel(x0 - 1, yy, axis);
    }
    finish(img, Some(title.to_string()), summary, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(png: &[u8]) -> image::RgbImage {
        image::load_from_memory_with_format(png, image::ImageFormat::Png)
            .expect("a valid PNG")
            .to_rgb8()
    }

    fn is_line(p: &image::Rgb<u8>) -> bool {
        p.0.iter()
            .zip([31u8, 119, 180])
            .all(|(a, b)| a.abs_diff(b) < 40)
            && p.0[2] > p.0[0] + 60
    }

    #[test]
    fn line_plot_of_a_ramp_rises_left_to_right() {
        let values: Vec<f64> = (0..200).map(|i| i as f64 * 0.5).collect();
        let r = line_plot(&values, Some("ramp"), Some("f32")).expect("plot");
        assert_eq!(r.summary, "ramp: 200 values f32, min 0, max 99.5");
        let img = decode(&r.png);
        assert_eq!((img.width(), img.height()), (r.width, r.height));
        assert_eq!(r.body.width(), PLOT_W);
        // Mean height of the line's pixels in the left and right quarters: left is lower (larger y).
        let mean_y = |x0: u32, x1: u32| {
            let ys: Vec<u32> = (x0..x1)
                .flat_map(|x| (0..img.height()).map(move |y| (x, y)))
                .filter(|&(x, y)| is_line(img.get_pixel(x, y)))
                .map(|(_, y)| y)
                .collect();
            assert!(ys.len() > 20, "line pixels in {x0}..{x1}: {}", ys.len());
            ys.iter().sum::<u32>() as f64 / ys.len() as f64
        };
        let w = img.width();
        assert!(mean_y(w / 8, w / 4) > mean_y(3 * w / 4, 7 * w / 8) + 100.0);
    }

    #[test]
    fn line_plot_handles_nan_constant_and_long_inputs() {
        let mut v = vec![1.0; 30];
        v[3] = f64::NAN;
        v[9] = f64::INFINITY;
        let r = line_plot(&v, None, None).expect("plot");
        assert_eq!(r.summary, "30 values, min 1, max 1, 1 NaN, 1 Inf");
        assert!(line_plot(&[], None, None).is_err());
        assert!(line_plot(&[f64::NAN], None, None).is_ok());
        let long: Vec<f64> = (0..1_000_000).map(|i| ((i as f64) * 1e-4).sin()).collect();
        let r = line_plot(&long, Some("sin"), None).expect("long plot");
        assert!(r.png.len() > 1000);
    }

    #[test]
    fn plot_segments_break_at_nan_and_keep_extremes_when_reduced() {
        let v = [1.0, 2.0, f64::NAN, 3.0, 4.0, 5.0];
        assert_eq!(
            plot_segments(&v, 100),
            vec![
                vec![(0.0, 1.0), (1.0, 2.0)],
                vec![(3.0, 3.0), (4.0, 4.0), (5.0, 5.0)]
            ]
        );
        let mut long = vec![0.0; 10_000];
        long[1234] = 9.0;
        long[7777] = -9.0;
        let s = plot_segments(&long, 100);
        let pts: Vec<(f64, f64)> = s.concat();
        assert!(pts.len() <= 200);
        assert!(pts.contains(&(1234.0, 9.0)) && pts.contains(&(7777.0, -9.0)));
        assert!(pts.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn bar_chart_bars_are_proportional() {
        let bars = vec![
            Bar {
                label: "naive".into(),
                value: 4.0,
                note: "4 ms".into(),
            },
            Bar {
                label: "tiled".into(),
                value: 1.0,
                note: "1 ms (4×)".into(),
            },
        ];
        let r = bar_chart(&bars, "timings", "s".into()).expect("chart");
        let img = decode(&r.png);
        let run = |row: u32, c: [u8; 3]| {
            (0..img.width())
                .filter(|&x| img.get_pixel(x, row).0 == c)
                .count()
        };
        let th = r.height - r.body.height();
        let (a, b) = (
            run(th + 10 + 12, BAR_COLORS[0]),
            run(th + 10 + 24 + 12, BAR_COLORS[1]),
        );
        assert_eq!(a, 360);
        assert_eq!(b, 90);
        assert!(bar_chart(&[], "x", String::new()).is_err());
    }
}
