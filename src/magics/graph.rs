//! `%graph` (record, list, launch and drop CUDA graphs), `%time graph NAME`, and the rule for
//! what may run while a graph is being recorded.
//!
//! While `%graph begin NAME` is open, `%launch` and `%copy` lines are checked and recorded
//! instead of run (`DeviceState::record_launch`/`record_copy`); commands that only read or
//! describe run as usual; every command that would change arrays or the device is refused with a
//! `GraphError` naming the graph, so a recorded cell never half-runs. The graphs themselves live
//! in `DeviceState` (`gpu/state/graphs.rs`).

use super::parse::time_args::TimeArgs;
use super::parse::{Command, GraphCmd, Name};
use super::registry;
use super::{LineCtx, MagicError, Magics};
use crate::display::table::Table;
use crate::display::timing;
use crate::display::timing::{timing_table, TimeEstimate, Timing, TimingStats};
use crate::gpu::GraphStep;
use nb::ErrorKind;
use protocol::output::{CellOutput, OutputSink};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

impl Magics {
    /// The error for a command that cannot run while graph `graph` is recorded, if `cmd` is one.
    pub(crate) fn refuse_while_recording(
        &self,
        ctx: &LineCtx,
        cmd: &Command,
    ) -> Option<MagicError> {
        let graph = self.dev.recording_graph()?;
        let bare = super::parse::magic_word(ctx.line.trim_start(), 1);
        if registry::runs_while_recording(bare, cmd) {
            return None;
        }
        let magic = ctx.line.split_whitespace().next().unwrap_or("this command");
        Some(ctx.plain(
            ErrorKind::Graph,
            format!(
                "{magic} cannot run while graph `{graph}` is being recorded: a graph records \
                 %launch and %copy lines only (%graph end finishes it, %graph drop {graph} \
                 abandons it)"
            ),
        ))
    }

    /// `%graph …`.
    pub(crate) fn graph(
        &mut self,
        ctx: &LineCtx,
        cmd: GraphCmd,
        out: &OutputSink,
        cancel: &Arc<AtomicBool>,
    ) -> Result<(), MagicError> {
        match cmd {
            GraphCmd::List => out(self.graph_list()),
            GraphCmd::Begin(name) => {
                self.dev
                    .begin_graph(&name.text)
                    .map_err(|e| ctx.gpu_at(e, name.span))?;
                out(CellOutput::Stdout(format!(
                    "recording graph {}: %launch and %copy lines are recorded, not run, until \
                     %graph end\n",
                    name.text
                )));
            }
            GraphCmd::End => {
                let (name, n) = self.dev.end_graph().map_err(|e| ctx.gpu(e))?;
                let s = if n == 1 { "" } else { "s" };
                out(CellOutput::Stdout(format!(
                    "graph {name}: {n} step{s}; %graph launch {name} runs it\n"
                )));
            }
            GraphCmd::Drop(name) => self
                .dev
                .drop_graph(&name.text)
                .map_err(|e| ctx.gpu_at(e, name.span))?,
            GraphCmd::Launch { name, times } => {
                let n = self.count(ctx, times.as_ref(), "-n", 1, 1)?;
                let o = self
                    .dev
                    .launch_graph(&name.text, n, cancel)
                    .map_err(|e| self.graph_error(ctx, &name, e))?;
                if !o.printf.is_empty() {
                    out(CellOutput::Stdout(o.printf));
                }
                if !o.reports.is_empty() {
                    out(CellOutput::Stderr(format!("{}\n", o.reports.join("\n"))));
                }
            }
        }
        Ok(())
    }

    fn graph_error(&self, ctx: &LineCtx, name: &Name, e: crate::gpu::GpuError) -> MagicError {
        if e.message.starts_with("no graph named") {
            ctx.gpu_at(e, name.span)
        } else {
            ctx.gpu(e)
        }
    }

    /// `%graph`: every graph with its steps.
    fn graph_list(&self) -> CellOutput {
        let graphs = self.dev.graphs();
        let recording = self
            .dev
            .recording_graph()
            .map(|g| format!("recording graph {g} (%graph end finishes it)\n"));
        if graphs.is_empty() {
            return CellOutput::Stdout(format!(
                "{}no graphs (%graph begin NAME, then %launch/%copy lines, then %graph end)\n",
                recording.unwrap_or_default()
            ));
        }
        let mut t = Table::new(&["graph", "step", "launch or copy"]).right(&[1]);
        if let Some(r) = recording {
            t = t.caption(r.trim_end().to_string());
        }
        for g in graphs {
            for (i, s) in g.steps.iter().enumerate() {
                let name = if i == 0 {
                    g.name.clone()
                } else {
                    String::new()
                };
                t.row(vec![name, (i + 1).to_string(), s.clone()]);
            }
        }
        t.display()
    }

    /// `%time graph NAME`: `W` untimed and `RUNS` timed replays. On a GPU each run is the
    /// graph's device-event time and, for comparison, the same steps launched one by one; on
    /// ptxsim the simulator's wall time and the modelled GPU's estimate for both.
    pub(crate) fn time_graph(
        &mut self,
        ctx: &LineCtx,
        a: &TimeArgs,
        name: &Name,
        out: &OutputSink,
        cancel: &Arc<AtomicBool>,
    ) -> Result<(), MagicError> {
        let desc = self.dev.describe();
        let simulated = desc.backend != "cuda";
        let runs = self.count(
            ctx,
            a.runs.as_ref(),
            "-n",
            if simulated { 3 } else { 10 },
            1,
        )?;
        let warmup = self.count(ctx, a.warmup.as_ref(), "--warmup", 1, 0)?;
        let flops = self.amount(ctx, a.flops.as_ref(), "--flops")?;
        let bytes = self.amount(ctx, a.bytes.as_ref(), "--bytes")?;
        let steps = self
            .dev
            .graph_steps(&name.text)
            .map_err(|e| ctx.gpu_at(e, name.span))?;
        let o = self
            .dev
            .launch_graph(&name.text, warmup + runs, cancel)
            .map_err(|e| self.graph_error(ctx, name, e))?;
        if !o.printf.is_empty() {
            out(CellOutput::Stdout(o.printf.clone()));
        }
        let samples = &o.launch_ms[warmup.min(o.launch_ms.len())..];
        let Some(stats) = TimingStats::from_samples(samples) else {
            return Err(ctx.plain(ErrorKind::Launch, "the graph reported no usable time"));
        };
        // A GPU: the same steps one by one, as many times.
        let mut one_by_one = Vec::new();
        if o.as_graph {
            for _ in 0..runs {
                match self
                    .dev
                    .launch_graph_steps_one_by_one(&name.text, cancel)
                    .map_err(|e| ctx.gpu(e))?
                {
                    Some(ms) => one_by_one.push(ms),
                    None => break,
                }
            }
        }
        let estimate = if simulated {
            Some(self.estimate_graph(ctx, a, &steps)?)
        } else {
            None
        };
        let n = steps.len();
        let t = Timing {
            label: format!(
                "graph {} ({n} step{})",
                name.text,
                if n == 1 { "" } else { "s" }
            ),
            stats,
            warmup,
            bytes,
            bytes_estimated: false,
            flops,
            peak_gbs: desc.peak_bandwidth_gbs,
            backend: desc.backend.to_string(),
            device: desc.name.clone(),
            simulated,
            sim_workers: None,
            estimate,
        };
        let mut bundle = timing::table_bundle(&timing_table(&t));
        bundle.insert("application/json".into(), t.json());
        out(CellOutput::Display {
            data: bundle,
            metadata: serde_json::Map::new(),
            display_id: None,
        });
        if let Some(s) = TimingStats::from_samples(&one_by_one) {
            let g = t.stats.median;
            out(CellOutput::Stdout(format!(
                "the same {n} steps launched one by one (no graph): median {:.1} µs over {} \
                 runs, {:.2} µs a step; the graph takes {:.0}% of that ({:.2} µs a step)\n",
                s.median * 1e3,
                s.runs,
                s.median * 1e3 / n as f64,
                100.0 * g / s.median.max(f64::MIN_POSITIVE),
                g * 1e3 / n as f64
            )));
        }
        self.timings.push(t);
        Ok(())
    }

    /// The modelled GPU's estimate of a graph: each launch step from one counted run on copies
    /// of its arrays, each copy from its bytes, combined by `ptxsim::model::graph_estimate`.
    fn estimate_graph(
        &mut self,
        ctx: &LineCtx,
        a: &TimeArgs,
        steps: &[GraphStep],
    ) -> Result<TimeEstimate, MagicError> {
        let model = match &a.gpu {
            Some(g) => super::gpu::find_model(ctx, self.dev.defined_gpus(), g)?,
            None => self.dev.gpu_model(),
        };
        let mut steps_ns = Vec::with_capacity(steps.len());
        for step in steps {
            match step {
                GraphStep::Launch(r) => {
                    let p = self.dev.profile(r, &model).map_err(|e| ctx.gpu(e))?;
                    let ns = p.estimate.map(|e| e.ns).ok_or_else(|| {
                        ctx.plain(
                            ErrorKind::Launch,
                            format!("no estimate for {}: its resources are unknown", r.kernel),
                        )
                    })?;
                    steps_ns.push(ns);
                }
                GraphStep::Copy { src, .. } => {
                    let bytes = self.dev.array(src).map_or(0, |i| i.bytes) as u64;
                    steps_ns.push(ptxsim::model::copy_ns(bytes, &model));
                }
            }
        }
        let e = ptxsim::model::graph_estimate(&steps_ns);
        let overhead = e.graph_ns - e.work_ns;
        let us = |ns: f64| ns / 1e3;
        Ok(TimeEstimate {
            counted: None,
            gpu: model.name.to_string(),
            ms: e.graph_ns / 1e6,
            peak_gbs: model.dram_gb_s,
            bound: if overhead > e.work_ns {
                "launch overhead".into()
            } else {
                "the steps' work".into()
            },
            breakdown: format!(
                "{} steps: work {:.1} µs + graph launch and nodes {:.1} µs; the same steps \
                 launched one by one: {:.1} µs (the graph takes {:.0}% of that)",
                steps.len(),
                us(e.work_ns),
                us(overhead),
                us(e.one_by_one_ns),
                100.0 * e.graph_ns / e.one_by_one_ns.max(f64::MIN_POSITIVE)
            ),
        })
    }
}
