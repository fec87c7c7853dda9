//! `%show NAME... [--cmap MAP] [--vmin V] [--vmax V] [--scale K]`: device arrays as inline
//! images. 2-D arrays of any dtype become heatmaps, `(H, W, 3|4)` arrays RGB(A) images (u8 as
//! is, floats clamped to [0, 1]), 1-D arrays line plots; several names go side by side under
//! their titles. Every output carries `image/png` and a `text/plain` summary.
//!
//! The arguments are parsed by `parse::show_args` before anything runs; this module evaluates
//! them, reads the arrays through `DeviceState` and draws with `crate::display`.
//! [`render_arrays`] is also what `nb::show` uses.

use super::eval;
use super::lex::ParseError;
use super::parse::show_args::ShowArgs;
use super::parse::Expr;
use super::{LineCtx, MagicError, Magics};
use crate::display::{self, Colormap, HeatmapOptions, Rendered};
use crate::gpu::{DeviceState, Dtype, GpuError};
use nb::ErrorKind;
use protocol::output::OutputSink;

/// Evaluated display options of `%show` (and of `%%animate`'s frames).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShowOptions {
    pub cmap: Colormap,
    pub vmin: Option<f64>,
    pub vmax: Option<f64>,
    pub scale: Option<u32>,
}

/// The largest `--scale`.
pub const MAX_SCALE: i64 = 64;

impl Magics {
    /// Evaluates `--vmin`, `--vmax`, `--scale` (expressions may use `%set` scalars).
    pub(crate) fn show_options(
        &self,
        ctx: &LineCtx,
        cmap: Option<Colormap>,
        vmin: Option<&Expr>,
        vmax: Option<&Expr>,
        scale: Option<&Expr>,
    ) -> Result<ShowOptions, MagicError> {
        let env = self.env();
        let arg = |e: ParseError| ctx.err(ErrorKind::Argument, e);
        let num = |e: Option<&Expr>, what: &str| -> Result<Option<f64>, MagicError> {
            let Some(e) = e else { return Ok(None) };
            let v = eval::eval_f64(e, &env).map_err(arg)?;
            if !v.is_finite() {
                return Err(arg(ParseError::at(
                    e.span,
                    format!("{what} must be finite"),
                )));
            }
            Ok(Some(v))
        };
        let (lo, hi) = (num(vmin, "--vmin")?, num(vmax, "--vmax")?);
        if let (Some(l), Some(h), Some(e)) = (lo, hi, vmax) {
            if h <= l {
                return Err(arg(ParseError::at(
                    e.span,
                    "--vmax must be greater than --vmin",
                )));
            }
        }
        let scale = match scale {
            Some(e) => {
                let k = eval::eval_int(e, &env, "--scale").map_err(arg)?;
                if !(1..=MAX_SCALE).contains(&k) {
                    return Err(arg(ParseError::at(
                        e.span,
                        format!("--scale must be between 1 and {MAX_SCALE}, not {k}"),
                    )));
                }
                Some(k as u32)
            }
            None => None,
        };
        Ok(ShowOptions {
            cmap: cmap.unwrap_or_default(),
            vmin: lo,
            vmax: hi,
            scale,
        })
    }

    /// `%show`: checks every name first, then renders and displays.
    pub(crate) fn show(
        &mut self,
        ctx: &LineCtx,
        a: &ShowArgs,
        out: &OutputSink,
    ) -> Result<(), MagicError> {
        for n in &a.names {
            self.need_array(ctx, n, "")?;
        }
        let opts = self.show_options(
            ctx,
            a.cmap,
            a.vmin.as_ref(),
            a.vmax.as_ref(),
            a.scale.as_ref(),
        )?;
        let names: Vec<&str> = a.names.iter().map(|n| n.text.as_str()).collect();
        let r = render_arrays(&self.dev, &names, &opts).map_err(|e| ctx.gpu(e))?;
        out(display::png_display(&r));
        Ok(())
    }
}

/// Bytes of `(H, W, C)` pixels as u8: u8 as is, floats clamped to [0, 1] and scaled to 0..255.
fn rgb_bytes(dtype: Dtype, data: &[u8]) -> Option<Vec<u8>> {
    match dtype {
        Dtype::U8 => Some(data.to_vec()),
        d if d.is_float() => Some(
            crate::display::values::to_f64_vec(dtype, data)
                .into_iter()
                .map(|v| {
                    if v.is_nan() {
                        0
                    } else {
                        (v.clamp(0.0, 1.0) * 255.0).round() as u8
                    }
                })
                .collect(),
        ),
        _ => None,
    }
}

/// One array as an image: a heatmap (2-D), an RGB(A) image (`(H, W, 3|4)` u8 or floats) or a line
/// plot (1-D). `titled`: draw the name above it (RGB images are exact without a title).
pub fn render_array(
    dev: &DeviceState,
    name: &str,
    o: &ShowOptions,
    titled: bool,
) -> Result<Rendered, GpuError> {
    let info = dev
        .array(name)
        .ok_or_else(|| GpuError::argument(format!("unknown array '{name}'")))?;
    let data = dev.read_array(name)?;
    let bad = |m: String| GpuError::argument(m);
    let dt = info.dtype.name().to_string();
    let shape = crate::display::values::fmt_shape(&info.shape);
    match info.shape.as_slice() {
        [_] => {
            let v = crate::display::values::to_f64_vec(info.dtype, &data);
            display::line_plot(&v, Some(name), Some(&dt)).map_err(bad)
        }
        [h, w] => {
            let v = crate::display::values::to_f64_vec(info.dtype, &data);
            let opts = HeatmapOptions {
                cmap: o.cmap,
                vmin: o.vmin,
                vmax: o.vmax,
                scale: o.scale,
                title: titled.then(|| name.to_string()),
                dtype: Some(dt),
            };
            let mut r = display::render_heatmap(&v, *h, *w, &opts).map_err(bad)?;
            if !titled {
                r.summary = format!("{name}: {}", r.summary);
            }
            Ok(r)
        }
        [h, w, c @ (3 | 4)] => {
            let px = rgb_bytes(info.dtype, &data).ok_or_else(|| {
                bad(format!(
                    "'{name}' is {shape} {dt}: an (H, W, {c}) image must be u8 or a float dtype"
                ))
            })?;
            let mut r = display::render_rgb(&px, *h, *w, *c, o.scale, titled.then_some(name))
                .map_err(bad)?;
            r.summary = format!(
                "{name}: {h}×{w} {} {dt}{}",
                if *c == 3 { "RGB" } else { "RGBA" },
                if info.dtype.is_float() { " (clamped to [0, 1])" } else { "" }
            );
            Ok(r)
        }
        _ => Err(bad(format!(
            "cannot show '{name}' of shape {shape}: %show takes 1-D arrays (line plot), 2-D arrays (image) and (H, W, 3|4) images"
        ))),
    }
}

/// `%show`'s picture of `names`: one image, or several side by side under their names.
pub fn render_arrays(
    dev: &DeviceState,
    names: &[&str],
    o: &ShowOptions,
) -> Result<Rendered, GpuError> {
    match names {
        [] => Err(GpuError::argument("%show needs at least one array name")),
        [one] => {
            let rgb = dev.array(one).is_some_and(|a| a.shape.len() == 3);
            render_array(dev, one, o, !rgb)
        }
        _ => {
            let panels = names
                .iter()
                .map(|n| render_array(dev, n, o, true))
                .collect::<Result<Vec<_>, _>>()?;
            display::side_by_side(&panels).map_err(GpuError::argument)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_session::{png, seq_rng, text, Session};
    use crate::display::colormap::NAN_COLOR;
    use crate::display::image::{element_pixel, title_height};
    use crate::gpu::Dtype;

    #[test]
    fn show_colours_random_2d_arrays_through_the_colormap() {
        let mut s = Session::new();
        s.ok("%array m = rand((12, 20), f32, seed=3)");
        s.ok("%show m --cmap magma");
        let d = s.display();
        let v = s.f64s("m");
        let (lo, hi) = v
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                (a.min(x), b.max(x))
            });
        let img = png(&d).to_rgb8();
        let mut rng = seq_rng(11);
        for _ in 0..25 {
            let (r, c) = (rng.below(12) as usize, rng.below(20) as usize);
            let (x, y) = element_pixel(12, 20, None, true, r, c).expect("inside");
            let want = colorous::MAGMA
                .eval_continuous((v[r * 20 + c] - lo) / (hi - lo))
                .into_array();
            assert_eq!(img.get_pixel(x, y).0, want, "element ({r}, {c})");
        }
        let t = text(&d);
        assert!(
            t.starts_with("m: 12×20 f32, min ") && !t.contains("NaN"),
            "{t}"
        );
        // --vmin/--vmax with %set scalars; gray is exact.
        s.ok("%set top = 2");
        s.ok("%show m --cmap=gray --vmin 0 --vmax top / 2 --scale 3");
        let img = png(&s.display()).to_rgb8();
        for (r, c) in [(0, 0), (5, 7), (11, 19)] {
            let (x, y) = element_pixel(12, 20, Some(3), true, r, c).expect("inside");
            let g = (v[r * 20 + c] * 255.0).round() as u8;
            assert_eq!(img.get_pixel(x, y).0, [g, g, g]);
        }
    }

    #[test]
    fn show_of_a_ramp_a_checkerboard_and_nan() {
        let mut s = Session::new();
        let ramp: Vec<f64> = (0..4 * 8).map(|i| (i % 8) as f64).collect();
        s.put("ramp", Dtype::F64, vec![4, 8], &ramp);
        s.ok("%show ramp");
        let img = png(&s.display()).to_rgb8();
        for c in 0..8 {
            let (x, y) = element_pixel(4, 8, None, true, 2, c).expect("inside");
            let want = colorous::VIRIDIS
                .eval_continuous(c as f64 / 7.0)
                .into_array();
            assert_eq!(img.get_pixel(x, y).0, want, "column {c}");
        }
        let board: Vec<f64> = (0..36).map(|i| ((i / 6 + i % 6) % 2) as f64).collect();
        s.put("board", Dtype::I32, vec![6, 6], &board);
        s.ok("%show board --cmap coolwarm");
        let img = png(&s.display()).to_rgb8();
        let lo = colorous::RED_BLUE.eval_continuous(1.0).into_array();
        let hi = colorous::RED_BLUE.eval_continuous(0.0).into_array();
        for (r, c) in [(0, 0), (0, 1), (3, 4), (5, 5)] {
            let (x, y) = element_pixel(6, 6, None, true, r, c).expect("inside");
            assert_eq!(
                img.get_pixel(x, y).0,
                if (r + c) % 2 == 0 { lo } else { hi }
            );
        }
        let mut withnan = vec![0.5; 9];
        withnan[4] = f64::NAN;
        withnan[8] = f64::INFINITY;
        s.put("bad", Dtype::F32, vec![3, 3], &withnan);
        s.ok("%show bad");
        let d = s.display();
        assert_eq!(text(&d), "bad: 3×3 f32, min 0.5, max 0.5, 1 NaN, 1 Inf");
        let img = png(&d).to_rgb8();
        for i in [4, 8] {
            let (x, y) = element_pixel(3, 3, None, true, i / 3, i % 3).expect("inside");
            assert_eq!(img.get_pixel(x, y).0, NAN_COLOR);
        }
    }

    #[test]
    fn show_rgb_round_trips_and_plots_1d_and_shows_several() {
        let mut s = Session::new();
        s.ok("%array img = rand((5, 7, 3), u8, seed=4)");
        s.ok("%show img");
        let d = s.display();
        let px = png(&d);
        assert_eq!(px.color(), image::ColorType::Rgb8);
        assert_eq!(
            px.to_rgb8().into_raw(),
            s.m.dev.read_array("img").expect("img")
        );
        assert_eq!(text(&d), "img: 5×7 RGB u8");
        s.ok("%array x = linspace(-1, 1, 100, f32)");
        s.ok("%show x");
        let d = s.display();
        assert_eq!(text(&d), "x: 100 values f32, min -1, max 1");
        let p = png(&d);
        assert_eq!((p.width(), p.height()), (640, 320 + title_height()));
        s.ok("%array m = rand((8, 8), f64, seed=1)");
        s.ok("%show m, img x");
        let d = s.display();
        let opts = super::ShowOptions::default();
        let w: u32 = ["m", "img", "x"]
            .iter()
            .map(|n| {
                super::render_array(&s.m.dev, n, &opts, true)
                    .expect(n)
                    .body
                    .width()
            })
            .sum();
        assert_eq!(png(&d).width(), w + 2 * 16);
        assert_eq!(text(&d).lines().count(), 3);
    }

    #[test]
    fn show_errors_name_the_problem_and_change_nothing() {
        let mut s = Session::new();
        s.ok("%array m = rand((4, 4), f32, seed=1)");
        s.ok("%array cube = zeros((2, 3, 5), f32)");
        let e = s.err("%show mm");
        assert_eq!(e.ename, "ArgumentError");
        assert!(
            e.message.contains("unknown array 'mm'") && e.message.contains("did you mean m?"),
            "{e}"
        );
        let e = s.err("%show m --cmap jet");
        assert_eq!(e.ename, "SyntaxError");
        assert!(
            e.message.contains("unknown colormap 'jet'") && e.message.contains("viridis"),
            "{e}"
        );
        let e = s.err("%show m --scale 0");
        assert!(
            e.ename == "ArgumentError" && e.message.contains("--scale"),
            "{e}"
        );
        let e = s.err("%show m --vmin 2 --vmax 1");
        assert!(e.message.contains("--vmax must be greater"), "{e}");
        let e = s.err("%show cube");
        assert!(
            e.ename == "ArgumentError" && e.message.contains("(2, 3, 5)"),
            "{e}"
        );
        assert_eq!(s.err("%show").ename, "SyntaxError");
        let e = s.err("%show m --bogus 1");
        assert!(
            e.ename == "SyntaxError" && e.message.contains("--cmap"),
            "{e}"
        );
        assert!(s.take().is_empty(), "errors display nothing");
    }
}
