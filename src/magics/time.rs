//! `%time [-n RUNS] [--warmup W] [--bytes EXPR] [--flops EXPR] LAUNCH` and `%timings`.
//!
//! `%time` builds the launch exactly as `%launch` does (same parser, same argument checks), runs
//! it `W` times untimed and `RUNS` times timed, and shows a table: runs, median/min/max/stdev,
//! effective GB/s (bytes: `--bytes`, else the sizes of the array arguments, marked "est."),
//! GFLOP/s with `--flops`, % of the device's peak bandwidth when known. On a GPU each run's time
//! is the backend's CUDA-event time (`LaunchOutcome::elapsed_ms`); on ptxsim (or with `--check`)
//! it is the wall time of the launch, labelled "simulated", and beside it the modelled GPU's
//! estimated time (`ptxsim::model`, from one counted run on copies of the arrays; `--gpu MODEL`
//! for another GPU than the session's `%gpu`). Every result is kept for `%timings`, which
//! compares the estimates on ptxsim and the measured times on a GPU.
//!
//! A progress bar appears when the runs take longer than a second and is replaced by the table.
//! Device printf and checker reports are shown for the first run only.

use super::eval;
use super::lex::ParseError;
use super::parse::time_args::{TimeArgs, TimeTarget};
use super::parse::{self, Expr};
use super::{LineCtx, MagicError, Magics};
use crate::display::progress::Progress;
use crate::display::timing::{
    timing_table, timings_chart, timings_table, TimeEstimate, Timing, TimingStats,
};
use crate::display::{png_display, timing};
use crate::gpu::LaunchArg;
use nb::ErrorKind;
use protocol::output::{CellOutput, OutputSink};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Most timed runs and warm-up runs of one `%time`.
pub const MAX_RUNS: i64 = 100_000;

impl Magics {
    /// A non-negative count option, or its default.
    pub(super) fn count(
        &self,
        ctx: &LineCtx,
        e: Option<&Expr>,
        what: &str,
        default: i64,
        min: i64,
    ) -> Result<usize, MagicError> {
        let Some(e) = e else {
            return Ok(default as usize);
        };
        let v =
            eval::eval_int(e, &self.env(), what).map_err(|x| ctx.err(ErrorKind::Argument, x))?;
        if !(min..=MAX_RUNS).contains(&v) {
            return Err(ctx.err(
                ErrorKind::Argument,
                ParseError::at(
                    e.span,
                    format!("{what} must be between {min} and {MAX_RUNS}, not {v}"),
                ),
            ));
        }
        Ok(v as usize)
    }

    /// A non-negative finite amount (`--bytes`, `--flops`).
    pub(super) fn amount(
        &self,
        ctx: &LineCtx,
        e: Option<&Expr>,
        what: &str,
    ) -> Result<Option<f64>, MagicError> {
        let Some(e) = e else { return Ok(None) };
        let v = eval::eval_f64(e, &self.env()).map_err(|x| ctx.err(ErrorKind::Argument, x))?;
        if !v.is_finite() || v < 0.0 {
            return Err(ctx.err(
                ErrorKind::Argument,
                ParseError::at(e.span, format!("{what} must be a non-negative number")),
            ));
        }
        Ok(Some(v))
    }

    /// `%time`.
    pub(crate) fn time(
        &mut self,
        ctx: &LineCtx,
        a: &TimeArgs,
        out: &OutputSink,
        cancel: &Arc<AtomicBool>,
    ) -> Result<(), MagicError> {
        let launch = match &a.target {
            TimeTarget::Launch(l) => l,
            TimeTarget::Graph(name) => return self.time_graph(ctx, a, name, out, cancel),
        };
        let desc = self.dev.describe();
        let simulated = desc.backend != "cuda" || launch.check;
        let runs = self.count(
            ctx,
            a.runs.as_ref(),
            "-n",
            if simulated { 3 } else { 10 },
            1,
        )?;
        let warmup = self.count(ctx, a.warmup.as_ref(), "--warmup", 1, 0)?;
        let flops = self.amount(ctx, a.flops.as_ref(), "--flops")?;
        let given_bytes = self.amount(ctx, a.bytes.as_ref(), "--bytes")?;
        let request = self.launch_request(ctx, launch, cancel)?;
        let bytes = given_bytes.or_else(|| {
            let mut seen: Vec<&str> = Vec::new();
            let mut sum = 0usize;
            for n in request.args.iter().flat_map(LaunchArg::array_names) {
                if !seen.contains(&n) {
                    seen.push(n);
                    sum += self.dev.array(n).map_or(0, |i| i.bytes);
                }
            }
            (sum > 0).then_some(sum as f64)
        });
        let total = warmup + runs;
        let mut progress = Progress::new(out);
        let mut samples = Vec::with_capacity(runs);
        let mut sim_workers: Option<usize> = None;
        for i in 0..total {
            if cancel.load(Ordering::Relaxed) {
                progress.abandon();
                return Err(ctx.plain(
                    ErrorKind::Interrupted,
                    format!("%time was interrupted after {i} of {total} runs"),
                ));
            }
            let t0 = Instant::now();
            let outcome = match self.dev.launch(&request) {
                Ok(o) => o,
                Err(e) => {
                    progress.abandon();
                    return Err(if cancel.load(Ordering::Relaxed) {
                        ctx.plain(
                            ErrorKind::Interrupted,
                            format!("{} was interrupted", launch.kernel.text),
                        )
                    } else {
                        ctx.gpu(e)
                    });
                }
            };
            // A named stream's launch returns at once: wait for it, so the wall time covers it.
            let mut printf = outcome.printf.clone();
            if let Some(stream) = &request.stream {
                match self.dev.synchronize(Some(stream)) {
                    Ok(p) => printf.push_str(&p),
                    Err(e) => {
                        progress.abandon();
                        return Err(ctx.gpu(e));
                    }
                }
            }
            let wall_ms = t0.elapsed().as_secs_f64() * 1e3;
            sim_workers = sim_workers.max(outcome.sim_workers);
            if i == 0 {
                if !printf.is_empty() {
                    out(CellOutput::Stdout(printf));
                }
                if !outcome.reports.is_empty() {
                    out(CellOutput::Stderr(format!(
                        "{}\n",
                        outcome.reports.join("\n")
                    )));
                }
            }
            if i >= warmup {
                let no_event_time = outcome.elapsed_ms.is_nan() || outcome.elapsed_ms <= 0.0;
                let ms = if simulated || no_event_time || request.stream.is_some() {
                    wall_ms
                } else {
                    outcome.elapsed_ms
                };
                samples.push(ms);
            }
            let label = if i < warmup {
                format!("warm-up {}/{warmup}", i + 1)
            } else {
                format!("run {}/{runs}", i + 1 - warmup)
            };
            progress.update(
                (i + 1) as f64 / total as f64,
                &format!("%time {}: {label}", a.label),
            );
        }
        let Some(stats) = TimingStats::from_samples(&samples) else {
            progress.abandon();
            return Err(ctx.plain(ErrorKind::Launch, "the launch reported no usable time"));
        };
        // On ptxsim: what the modelled GPU would take, from one counted run on copies.
        let estimate = if simulated {
            progress.update(1.0, &format!("%time {}: estimating", a.label));
            match self.estimate_on(ctx, a.gpu.as_ref(), &request) {
                Ok(e) => e,
                Err(e) => {
                    progress.abandon();
                    return Err(e);
                }
            }
        } else {
            None
        };
        let t = Timing {
            label: a.label.clone(),
            stats,
            warmup,
            bytes,
            bytes_estimated: given_bytes.is_none() && bytes.is_some(),
            flops,
            peak_gbs: desc.peak_bandwidth_gbs,
            backend: if launch.check {
                format!("{} --check", desc.backend)
            } else {
                desc.backend.to_string()
            },
            device: desc.name.clone(),
            simulated,
            sim_workers: sim_workers.filter(|_| simulated),
            estimate,
        };
        let mut bundle = timing::table_bundle(&timing_table(&t));
        bundle.insert("application/json".into(), t.json());
        progress.finish(bundle, serde_json::Map::new());
        self.timings.push(t);
        Ok(())
    }

    /// The estimated time of `request` on `gpu` (None: the session's model), from a counted
    /// run on copies of its arrays; None when the kernel's resources are unknown.
    pub(crate) fn estimate_on(
        &mut self,
        ctx: &LineCtx,
        gpu: Option<&parse::Name>,
        request: &crate::gpu::LaunchRequest,
    ) -> Result<Option<TimeEstimate>, MagicError> {
        let model = match gpu {
            Some(g) => super::gpu::find_model(ctx, self.dev.defined_gpus(), g)?,
            None => self.dev.gpu_model(),
        };
        // %time repeats the launch: the L2 holds what the previous run left.
        let p = self
            .dev
            .profile_with(request, &model, false, true)
            .map_err(|e| ctx.gpu(e))?;
        let counted = super::profile_view::sampled_text(&p.counters);
        Ok(p.estimate.map(|e| TimeEstimate {
            counted,
            gpu: model.name.to_string(),
            ms: e.ns / 1e6,
            peak_gbs: model.dram_gb_s,
            bound: e.bound.as_str().to_string(),
            breakdown: e.breakdown(),
        }))
    }

    /// `%timings`: every `%time` so far as a table and a bar chart; `--clear` forgets them.
    pub(crate) fn show_timings(&mut self, clear: bool, out: &OutputSink) -> Result<(), MagicError> {
        if clear {
            let n = self.timings.len();
            self.timings.clear();
            out(CellOutput::Stdout(format!(
                "forgot {n} timing{}\n",
                if n == 1 { "" } else { "s" }
            )));
            return Ok(());
        }
        if self.timings.is_empty() {
            out(CellOutput::Stdout(
                "no timings yet (%time KERNEL[GRID, BLOCK](ARGS))\n".into(),
            ));
            return Ok(());
        }
        out(timings_table(&self.timings).display());
        match timings_chart(&self.timings) {
            Ok(r) => out(png_display(&r)),
            Err(m) => out(CellOutput::Stderr(format!("(no chart: {m})\n"))),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_session::{png, text, Session};
    use crate::display::progress::set_thread_delay;
    use protocol::output::CellOutput;

    const ADD: &str = r#"
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"#;

    fn session() -> Session {
        let mut s = Session::new();
        s.cell("%%cuda", ADD).unwrap_or_else(|e| panic!("{e}"));
        s.take();
        s.ok("%array a = rand(3000, f32, seed=1)");
        s.ok("%array b = randn(3000, f32, seed=2)");
        s.ok("%array c = zeros(3000, f32)");
        s
    }

    #[test]
    fn time_runs_the_launch_and_reports_consistent_statistics() {
        let mut s = session();
        s.ok("%time -n 5 --warmup 2 add[auto](a, b, c, len(a))");
        let d = s.display();
        // The launch really ran: c = a + b.
        let (a, b, c) = (s.f64s("a"), s.f64s("b"), s.f64s("c"));
        for i in 0..a.len() {
            assert_eq!(c[i] as f32, a[i] as f32 + b[i] as f32, "c[{i}]");
        }
        assert_eq!(s.m.timings.len(), 1);
        let t = &s.m.timings[0];
        assert_eq!(t.stats.runs, 5);
        assert_eq!(t.warmup, 2);
        assert!(
            t.stats.min <= t.stats.median && t.stats.median <= t.stats.max,
            "{:?}",
            t.stats
        );
        assert!(t.stats.min > 0.0);
        assert_eq!(t.label, "add[auto](a, b, c, len(a))");
        assert_eq!(t.bytes, Some(3.0 * 3000.0 * 4.0));
        assert!(t.bytes_estimated);
        let gbs = t.gbs().expect("GB/s");
        assert!((gbs - 36000.0 / (t.stats.median * 1e6)).abs() <= 1e-12 * gbs.max(1.0));
        assert!(t.simulated && t.backend == "ptxsim");
        let txt = text(&d);
        // On ptxsim the estimate comes first, the simulator's wall time last.
        let est = txt.find("estimated on H200").expect("the estimate");
        let sim = txt
            .find("wall time of the CPU simulator")
            .expect("the simulator's time");
        assert!(est < sim, "{txt}");
        assert!(
            txt.contains("5 runs after 2 warm-up")
                && txt.contains("median")
                && txt.contains("the array arguments' sizes")
                && txt.contains("% of the"),
            "{txt}"
        );
        assert!(d.contains_key("text/html"));
    }

    #[test]
    fn time_options_bytes_flops_and_timings() {
        let mut s = session();
        s.ok("%set n = 3000");
        s.ok(
            "%time -n 3 --warmup 0 --bytes 8 * n --flops n add<<<ceil(n / 128), 128>>>(a, b, c, n)",
        );
        s.ok("%time --runs=2 add[auto](a, b, c, n)");
        s.take();
        let t = s.m.timings[0].clone();
        assert_eq!(
            (t.stats.runs, t.warmup, t.bytes, t.bytes_estimated),
            (3, 0, Some(24000.0), false)
        );
        let gf = t.gflops().expect("GFLOP/s");
        assert!((gf - 3000.0 / (t.stats.median * 1e6)).abs() <= 1e-12 * gf.max(1.0));
        assert_eq!(s.m.timings[1].stats.runs, 2);
        s.ok("%timings");
        let outs = s.take();
        let mut texts = Vec::new();
        let mut pngs = 0;
        for o in &outs {
            if let CellOutput::Display { data, .. } = o {
                texts.push(text(data));
                if data.contains_key("image/png") {
                    let img = png(data);
                    assert!(img.width() > 300 && img.height() > 2 * 24);
                    pngs += 1;
                }
            }
        }
        assert_eq!(pngs, 1, "{outs:?}");
        let table = &texts[0];
        assert!(
            table.contains("add<<<ceil(n / 128), 128>>>(a, b, c, n)")
                && table.contains("add[auto](a, b, c, n)"),
            "{table}"
        );
        assert!(table.contains("1.00×"), "{table}");
        s.ok("%timings --clear");
        assert!(s.m.timings.is_empty());
        s.take();
        s.ok("%timings");
        let o = s.take();
        assert!(
            matches!(&o[0], CellOutput::Stdout(t) if t.contains("no timings")),
            "{o:?}"
        );
    }

    #[test]
    fn time_errors_are_caught_before_running() {
        let mut s = session();
        for (line, ename, part) in [
            ("%time", "SyntaxError", "needs a launch"),
            (
                "%time -n 0 add[auto](a, b, c, len(a))",
                "ArgumentError",
                "-n must be between 1",
            ),
            (
                "%time --bogus 1 add[auto](a, b, c, len(a))",
                "SyntaxError",
                "--warmup",
            ),
            (
                "%time add[auto](a, b, c)",
                "ArgumentError",
                "takes 4 arguments",
            ),
            (
                "%time --bytes -1 add[auto](a, b, c, len(a))",
                "ArgumentError",
                "non-negative",
            ),
            (
                "%time add[auto](a, b, zz, len(a))",
                "ArgumentError",
                "unknown array 'zz'",
            ),
        ] {
            let e = s.err(line);
            assert_eq!(e.ename, ename, "{line}: {e}");
            assert!(e.message.contains(part), "{line}: {e}");
        }
        assert!(s.m.timings.is_empty());
        assert!(s.f64s("c").iter().all(|&v| v == 0.0), "no launch ran");
    }

    #[test]
    fn time_progress_bar_is_replaced_by_the_table() {
        let mut s = session();
        set_thread_delay(Some(std::time::Duration::ZERO));
        let r = s.run("%time -n 3 add[auto](a, b, c, len(a))");
        set_thread_delay(None);
        r.unwrap_or_else(|e| panic!("{e}"));
        let outs = s.take();
        let Some(CellOutput::Display {
            display_id: Some(id),
            data,
            ..
        }) = outs.first()
        else {
            panic!("a progress bar first: {outs:?}");
        };
        assert!(text(data).contains('%'));
        let Some(CellOutput::UpdateDisplay {
            display_id, data, ..
        }) = outs.last()
        else {
            panic!("then the result in its place: {outs:?}");
        };
        assert_eq!(display_id, id);
        assert!(text(data).contains("median"), "{data:?}");
        assert!(!outs
            .iter()
            .skip(1)
            .any(|o| matches!(o, CellOutput::Display { .. })));
    }
}
