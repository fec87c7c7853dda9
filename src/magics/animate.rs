//! `%%animate [--frames N] [--every K] [--show NAME] [--fps F] [--cmap MAP] [--vmin V]
//! [--vmax V] [--scale K]`: runs the cell's magic lines (say a heat step and a `%swap`) `N`
//! times, captures the 2-D array `NAME` after every `K`-th run (and after the last), and shows the
//! captured states as an inline animated GIF with one colour range for all frames.
//!
//! Every body line is checked before the first run. `%show NAME` lines in the body are not run:
//! they name the array to capture when `--show` is not given. Body lines' printed output is
//! passed on; their displays are not (the animation is the display). A progress bar appears when
//! the runs take longer than a second and is replaced by the animation.

use super::lex::{Lexer, ParseError, Span, Tok};
use super::parse::flags::{eat_eq, parse_cmap, unknown_flag};
use super::parse::show_args::parse_show;
use super::parse::{self, Expr, Name};
use super::{check_line, LineCtx, MagicError, Magics};
use crate::display::gif::{encode_gif, gif_bundle, heatmap_frames, MAX_GIF_BYTES};
use crate::display::progress::Progress;
use crate::display::values;
use crate::display::{fmt_sig, image_metadata, Colormap, HeatmapOptions};
use nb::ErrorKind;
use protocol::output::{CellOutput, MimeBundle, OutputSink};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The parsed header of `%%animate`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AnimateArgs {
    pub frames: Option<Expr>,
    pub every: Option<Expr>,
    pub show: Option<Name>,
    pub fps: Option<Expr>,
    pub cmap: Option<Colormap>,
    pub vmin: Option<Expr>,
    pub vmax: Option<Expr>,
    pub scale: Option<Expr>,
}

const ANIMATE_FLAGS: [&str; 8] = [
    "--frames N",
    "--every K",
    "--show NAME",
    "--fps F",
    "--cmap MAP",
    "--vmin V",
    "--vmax V",
    "--scale K",
];

/// Default number of runs of the body.
pub const DEFAULT_FRAMES: i64 = 30;
/// Most runs of the body.
pub const MAX_FRAMES: i64 = 100_000;

/// Parses the header line `%%animate ...`.
pub fn parse_animate_header(header: &str) -> Result<AnimateArgs, ParseError> {
    let mut lx = Lexer::new(header, 0);
    lx.skip_ws();
    let at = lx.pos;
    if !header[at..].starts_with("%%animate") {
        return Err(ParseError::at(
            Span::new(at, at + 2),
            "expected %%animate at the start of the cell",
        ));
    }
    lx.pos = at + "%%animate".len();
    let mut a = AnimateArgs::default();
    while !lx.at_end() {
        let t = lx.next_token()?;
        let Tok::Flag(f) = &t.tok else {
            return Err(ParseError::at(
                t.span,
                format!(
                    "expected an option of %%animate ({}), found {}",
                    ANIMATE_FLAGS.join(", "),
                    t.tok
                ),
            ));
        };
        eat_eq(&mut lx)?;
        match f.as_str() {
            "--frames" => a.frames = Some(parse::parse_expr(&mut lx)?),
            "--every" => a.every = Some(parse::parse_expr(&mut lx)?),
            "--fps" => a.fps = Some(parse::parse_expr(&mut lx)?),
            "--vmin" => a.vmin = Some(parse::parse_expr(&mut lx)?),
            "--vmax" => a.vmax = Some(parse::parse_expr(&mut lx)?),
            "--scale" => a.scale = Some(parse::parse_expr(&mut lx)?),
            "--cmap" => a.cmap = Some(parse_cmap(&mut lx)?),
            "--show" => {
                let n = lx.next_token()?;
                match n.tok {
                    Tok::Ident(s) => {
                        a.show = Some(Name {
                            text: s,
                            span: n.span,
                        })
                    }
                    other => {
                        return Err(ParseError::at(
                            n.span,
                            format!("expected an array name after --show, found {other}"),
                        ))
                    }
                }
            }
            _ => return Err(unknown_flag(t.span, f, "%%animate", &ANIMATE_FLAGS)),
        }
    }
    Ok(a)
}

/// The array named by a body line `%show NAME ...`, if the line is one.
fn show_line_name(line: &str) -> Option<Result<Name, ParseError>> {
    let t = line.trim_start();
    let rest = t.strip_prefix("%show")?;
    if rest.starts_with(|c: char| super::lex::is_ident_char(c)) {
        return None;
    }
    let mut lx = Lexer::new(line, line.len() - rest.len());
    Some(parse_show(&mut lx).map(|a| a.names[0].clone()))
}

impl Magics {
    /// `%%animate`: `header` is the cell's first line, `body` the rest (its first line is line
    /// `body_first_line` of the cell).
    pub(crate) fn animate(
        &mut self,
        header: &str,
        body: &str,
        body_first_line: usize,
        out: &OutputSink,
        cancel: &Arc<AtomicBool>,
    ) -> Result<Option<MimeBundle>, MagicError> {
        let hctx = LineCtx {
            line: header,
            line_no: 1,
        };
        let a = parse_animate_header(header).map_err(|e| hctx.err(ErrorKind::Syntax, e))?;
        if let Some(g) = self.dev.recording_graph() {
            return Err(hctx.plain(
                ErrorKind::Graph,
                format!(
                    "%%animate cannot run while graph `{g}` is being recorded: it runs its lines \
                     to capture frames (%graph end first)"
                ),
            ));
        }
        // Check every line before running any.
        let mut run: Vec<(usize, &str)> = Vec::new();
        let mut shown: Option<Name> = None;
        for (i, line) in body.lines().enumerate() {
            let no = body_first_line + i;
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let ctx = LineCtx { line, line_no: no };
            if !t.starts_with('%') || t.starts_with("%%") {
                return Err(ctx.plain(
                    ErrorKind::Syntax,
                    "the body of %%animate holds magic lines (%launch, %swap, ...), run once per frame",
                ));
            }
            if let Some(n) = show_line_name(line) {
                let n = n.map_err(|e| ctx.err(ErrorKind::Syntax, e))?;
                shown.get_or_insert(n);
                continue;
            }
            check_line(line, no)?;
            run.push((no, line));
        }
        let name =
            match a.show.clone().or(shown) {
                Some(n) => n.text,
                None => return Err(hctx.plain(
                    ErrorKind::Argument,
                    "which array should the animation show? add --show NAME (or a %show NAME line)",
                )),
            };
        let env = self.env();
        let int = |e: Option<&Expr>, what: &str, default: i64| -> Result<usize, MagicError> {
            let Some(e) = e else {
                return Ok(default as usize);
            };
            let v = super::eval::eval_int(e, &env, what)
                .map_err(|x| hctx.err(ErrorKind::Argument, x))?;
            if !(1..=MAX_FRAMES).contains(&v) {
                return Err(hctx.err(
                    ErrorKind::Argument,
                    ParseError::at(
                        e.span,
                        format!("{what} must be between 1 and {MAX_FRAMES}, not {v}"),
                    ),
                ));
            }
            Ok(v as usize)
        };
        let frames = int(a.frames.as_ref(), "--frames", DEFAULT_FRAMES)?;
        let every = int(a.every.as_ref(), "--every", 1)?;
        let fps = match &a.fps {
            Some(e) => {
                let v =
                    super::eval::eval_f64(e, &env).map_err(|x| hctx.err(ErrorKind::Argument, x))?;
                if !(v.is_finite() && v > 0.0 && v <= 100.0) {
                    return Err(hctx.err(
                        ErrorKind::Argument,
                        ParseError::at(e.span, "--fps must be above 0 and at most 100"),
                    ));
                }
                v
            }
            None => 10.0,
        };
        let opts = self.show_options(
            &hctx,
            a.cmap,
            a.vmin.as_ref(),
            a.vmax.as_ref(),
            a.scale.as_ref(),
        )?;
        let captures = frames.div_ceil(every);

        // Body lines may print; their displays would repeat every frame, so they are dropped.
        let fwd = out.clone();
        let frame_sink: OutputSink = Arc::new(move |o| {
            if matches!(o, CellOutput::Stdout(_) | CellOutput::Stderr(_)) {
                fwd(o)
            }
        });
        let mut progress = Progress::new(out);
        let mut values: Vec<Vec<f64>> = Vec::with_capacity(captures.min(1024));
        let mut titles: Vec<String> = Vec::new();
        let mut geometry: Option<(usize, usize, crate::gpu::Dtype)> = None;
        for f in 0..frames {
            if cancel.load(Ordering::Relaxed) {
                progress.abandon();
                return Err(hctx.plain(
                    ErrorKind::Interrupted,
                    format!("%%animate was interrupted at frame {}", f + 1),
                ));
            }
            for &(no, line) in &run {
                if let Err(e) = self.run_line(line, no, &frame_sink, cancel) {
                    progress.abandon();
                    return Err(MagicError {
                        ename: e.ename,
                        message: format!("frame {} of %%animate: {}", f + 1, e.message),
                    });
                }
            }
            if (f + 1) % every == 0 || f + 1 == frames {
                let captured = self.capture(&hctx, &name, &mut geometry, captures);
                match captured {
                    Ok(v) => values.push(v),
                    Err(e) => {
                        progress.abandon();
                        return Err(e);
                    }
                }
                titles.push(format!("{name}   frame {}/{frames}", f + 1));
            }
            progress.update(
                (f + 1) as f64 / frames as f64,
                &format!("%%animate: frame {}/{frames}", f + 1),
            );
        }
        let Some((h, w, dtype)) = geometry else {
            progress.abandon();
            return Err(hctx.plain(ErrorKind::Argument, "no frame was captured"));
        };
        progress.update(1.0, "%%animate: encoding the GIF");
        let hopts = HeatmapOptions {
            cmap: opts.cmap,
            vmin: opts.vmin,
            vmax: opts.vmax,
            scale: opts.scale,
            title: None,
            dtype: Some(dtype.name().to_string()),
        };
        let encoded = heatmap_frames(&values, &titles, h, w, &hopts)
            .and_then(|hf| encode_gif(&hf.rgba, hf.width, hf.height, fps).map(|g| (g, hf)));
        let (gif, hf) = match encoded {
            Ok(x) => x,
            Err(m) => {
                progress.abandon();
                return Err(hctx.plain(ErrorKind::Argument, m));
            }
        };
        let summary = format!(
            "{name}: animation of {} frames ({h}×{w} {}, captured every {every} of {frames} runs) at {} fps, {}",
            values.len(),
            dtype.name(),
            fmt_sig(fps, 3),
            hf.stats.range_text()
        );
        progress.finish(
            gif_bundle(&gif, &summary),
            image_metadata("image/gif", hf.width, hf.height),
        );
        Ok(None)
    }

    /// The values of 2-D array `name` now; its shape and dtype must stay those of the first frame.
    fn capture(
        &self,
        ctx: &LineCtx,
        name: &str,
        geometry: &mut Option<(usize, usize, crate::gpu::Dtype)>,
        captures: usize,
    ) -> Result<Vec<f64>, MagicError> {
        let info = self.dev.array(name).ok_or_else(|| {
            ctx.plain(
                ErrorKind::Argument,
                format!("unknown array '{name}' to animate"),
            )
        })?;
        let [h, w] = info.shape[..] else {
            return Err(ctx.plain(
                ErrorKind::Argument,
                format!(
                    "'{name}' has shape {}: %%animate shows 2-D arrays",
                    values::fmt_shape(&info.shape)
                ),
            ));
        };
        match geometry {
            None => {
                let per = h.saturating_mul(w).saturating_mul(8);
                if per.saturating_mul(captures) > MAX_GIF_BYTES {
                    return Err(ctx.plain(
                        ErrorKind::Memory,
                        format!(
                            "{captures} frames of {h}×{w} are too many to keep; capture fewer (--every) or animate a smaller array"
                        ),
                    ));
                }
                *geometry = Some((h, w, info.dtype));
            }
            Some((h0, w0, d0)) if (*h0, *w0, *d0) != (h, w, info.dtype) => {
                return Err(ctx.plain(
                    ErrorKind::Argument,
                    format!(
                        "'{name}' changed from ({h0}, {w0}) {d0} to ({h}, {w}) {} during the animation",
                        info.dtype
                    ),
                ));
            }
            Some(_) => {}
        }
        let data = self.dev.read_array(name).map_err(|e| ctx.gpu(e))?;
        Ok(values::to_f64_vec(info.dtype, &data))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_session::{b64, text, Session};
    use crate::display::image::element_pixel;
    use crate::display::progress::set_thread_delay;
    use image::AnimationDecoder;
    use protocol::output::{CellOutput, MimeBundle};

    const INC: &str = r#"
__global__ void inc(float* u, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) u[i] += 1.0f;
}
__global__ void step(const float* u, float* v, int h, int w) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float l = x > 0 ? u[y * w + x - 1] : 0.0f, r = x < w - 1 ? u[y * w + x + 1] : 0.0f;
    float t = y > 0 ? u[(y - 1) * w + x] : 0.0f, b = y < h - 1 ? u[(y + 1) * w + x] : 0.0f;
    v[y * w + x] = u[y * w + x] + 0.2f * (l + r + t + b - 4.0f * u[y * w + x]);
}
"#;

    fn session() -> Session {
        let mut s = Session::new();
        s.cell("%%cuda", INC).unwrap_or_else(|e| panic!("{e}"));
        s.take();
        s
    }

    fn gif_frames(d: &MimeBundle) -> Vec<image::RgbaImage> {
        let gif = b64(d, "image/gif");
        let dec = image::codecs::gif::GifDecoder::new(std::io::Cursor::new(gif)).expect("a GIF");
        dec.into_frames()
            .collect_frames()
            .expect("frames")
            .into_iter()
            .map(|f| f.into_buffer())
            .collect()
    }

    #[test]
    fn animation_of_n_frames_has_n_frames_with_one_colour_range() {
        let mut s = session();
        s.ok("%array u = zeros((6, 10), f32)");
        s.cell(
            "%%animate --frames 5 --show u --fps 4",
            "%launch inc[auto](u, len(u))\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let d = s.display();
        assert!(
            s.f64s("u").iter().all(|&v| v == 5.0),
            "the body ran 5 times"
        );
        let frames = gif_frames(&d);
        assert_eq!(frames.len(), 5);
        let (w, h) = frames[0].dimensions();
        assert!(frames.iter().all(|f| f.dimensions() == (w, h)));
        // After run k (1-based) u == k; colours over the common range 1..5.
        let (x, y) = element_pixel(6, 10, None, true, 3, 4).expect("inside");
        for (k, f) in frames.iter().enumerate() {
            let want = colorous::VIRIDIS
                .eval_continuous(k as f64 / 4.0)
                .into_array();
            let got = f.get_pixel(x, y).0;
            assert!(
                got.iter().zip(want).all(|(a, b)| a.abs_diff(b) <= 8),
                "frame {k}: {got:?} vs {want:?}"
            );
        }
        let t = text(&d);
        assert!(t.starts_with("u: animation of 5 frames (6×10 f32, captured every 1 of 5 runs) at 4 fps, min 1, max 5"), "{t}");
    }

    #[test]
    fn animation_of_a_heat_step_with_every_and_a_show_line() {
        let mut s = session();
        let mut hot = vec![0.0; 16 * 16];
        hot[8 * 16 + 8] = 100.0;
        s.put("u", crate::gpu::Dtype::F32, vec![16, 16], &hot);
        s.ok("%array v = zeros((16, 16), f32)");
        let body = "# one diffusion step per frame\n%launch step[(2, 2), (8, 8)](u, v, 16, 16)\n%swap u v\n%show u\n";
        s.cell("%%animate --frames 7 --every 3 --cmap inferno", body)
            .unwrap_or_else(|e| panic!("{e}"));
        let d = s.display();
        assert_eq!(gif_frames(&d).len(), 3, "after runs 3, 6 and 7");
        // CPU reference of 7 steps.
        let mut u = hot.clone();
        for _ in 0..7 {
            let mut v = vec![0.0f32; 256];
            let at = |u: &Vec<f64>, y: i32, x: i32| {
                if (0..16).contains(&y) && (0..16).contains(&x) {
                    u[(y * 16 + x) as usize] as f32
                } else {
                    0.0
                }
            };
            for y in 0..16i32 {
                for x in 0..16i32 {
                    let c = at(&u, y, x);
                    v[(y * 16 + x) as usize] = c + 0.2
                        * (at(&u, y, x - 1)
                            + at(&u, y, x + 1)
                            + at(&u, y - 1, x)
                            + at(&u, y + 1, x)
                            - 4.0 * c);
                }
            }
            u = v.into_iter().map(f64::from).collect();
        }
        let got = s.f64s("u");
        for i in 0..256 {
            assert!(
                (got[i] - u[i]).abs() <= 1e-4 * u[i].abs().max(1.0),
                "u[{i}] = {} vs {}",
                got[i],
                u[i]
            );
        }
    }

    #[test]
    fn animation_errors() {
        let mut s = session();
        s.ok("%array u = zeros((4, 4), f32)");
        s.ok("%array line = zeros(8, f32)");
        let e = s
            .cell("%%animate --frames 2", "%launch inc[auto](u, len(u))")
            .unwrap_err();
        assert!(
            e.ename == "ArgumentError" && e.message.contains("--show"),
            "{e}"
        );
        let e = s.cell("%%animate --show u", "let x = 1;").unwrap_err();
        assert!(
            e.ename == "SyntaxError" && e.message.contains("line 2"),
            "{e}"
        );
        let e = s
            .cell("%%animate --show u", "%launch inc[auto](u)")
            .unwrap_err();
        assert!(
            e.ename == "ArgumentError" && e.message.starts_with("frame 1 of %%animate: line 2"),
            "{e}"
        );
        let e = s
            .cell(
                "%%animate --show line --frames 2",
                "%launch inc[auto](line, len(line))",
            )
            .unwrap_err();
        assert!(e.message.contains("2-D"), "{e}");
        let e = s
            .cell("%%animate --frames 0 --show u", "%sync")
            .unwrap_err();
        assert!(e.message.contains("--frames must be between 1"), "{e}");
        let e = s.cell("%%animate --speed 2 --show u", "%sync").unwrap_err();
        assert!(
            e.ename == "SyntaxError" && e.message.contains("--every"),
            "{e}"
        );
        assert!(crate::magics::check_cell_header("%%animate --frames 3 --show u").is_ok());
        assert!(crate::magics::check_cell_header("%%animate --cmap nope").is_err());
        assert!(
            s.f64s("u").iter().all(|&v| v == 0.0),
            "only the frame-1 error ran anything"
        );
    }

    #[test]
    fn animation_progress_bar_is_replaced_by_the_gif() {
        let mut s = session();
        s.ok("%array u = zeros((4, 4), f32)");
        set_thread_delay(Some(std::time::Duration::ZERO));
        let r = s.cell(
            "%%animate --frames 3 --show u",
            "%launch inc[auto](u, len(u))",
        );
        set_thread_delay(None);
        r.unwrap_or_else(|e| panic!("{e}"));
        let outs = s.take();
        let Some(CellOutput::Display {
            display_id: Some(id),
            ..
        }) = outs.first()
        else {
            panic!("a progress bar first: {outs:?}");
        };
        let Some(CellOutput::UpdateDisplay {
            display_id, data, ..
        }) = outs.last()
        else {
            panic!("then the animation in its place: {outs:?}");
        };
        assert_eq!(display_id, id);
        assert_eq!(gif_frames(data).len(), 3);
    }
}
