//! CUDA Graphs of the session (`%graph`): recorded steps, and their replay.
//!
//! `%graph begin NAME` starts a recording; each `%launch` and `%copy` until `%graph end` is
//! checked as if it ran (kernel, arguments, configuration) and recorded as a step instead of
//! running. A step names its arrays and kernel, so a graph follows the session: replaying it
//! resolves the names again (after `%swap`, a recompiled cell or a re-created array it uses the
//! arrays and kernels those names have now). Scalars are fixed when recorded, as in a CUDA graph.
//!
//! Replay: the resolved steps become [`GraphNode`]s. A backend with graphs (a GPU) instantiates
//! them once (stream capture, `cuGraphInstantiate`) and launches the executable graph; the
//! instance is kept while the resolved nodes stay the same and rebuilt when they change.
//! ptxsim has no graphs: it replays the steps one by one, each launch under the checker like
//! `%launch`, so a fault names the step. A recording refuses a `%free`, and `%free` refuses an
//! array a graph uses.

use super::DeviceState;
use crate::gpu::backend::{BackendLaunchError, GraphId, GraphNode};
use crate::gpu::{GpuError, LaunchArg, LaunchRequest};
use crate::suggest::{did_you_mean, Quote};
use nb::ErrorKind;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The most steps one graph may hold.
pub const MAX_GRAPH_STEPS: usize = 10_000;

/// One recorded step.
#[derive(Debug, Clone)]
pub enum GraphStep {
    Launch(LaunchRequest),
    /// `%copy DST = SRC`.
    Copy {
        dst: String,
        src: String,
    },
}

impl GraphStep {
    /// How `%graph` lists the step.
    pub fn describe(&self) -> String {
        match self {
            GraphStep::Launch(r) => {
                let dim = |d: crate::gpu::Dim3| match d {
                    (x, 1, 1) => x.to_string(),
                    (x, y, 1) => format!("({x}, {y})"),
                    (x, y, z) => format!("({x}, {y}, {z})"),
                };
                let args: Vec<String> = r.args.iter().map(|a| a.to_string()).collect();
                format!(
                    "{}[{}, {}]({})",
                    r.kernel,
                    dim(r.grid),
                    dim(r.block),
                    args.join(", ")
                )
            }
            GraphStep::Copy { dst, src } => format!("%copy {dst} = {src}"),
        }
    }

    fn arrays(&self) -> Vec<&str> {
        match self {
            GraphStep::Launch(r) => r.args.iter().flat_map(LaunchArg::array_names).collect(),
            GraphStep::Copy { dst, src } => vec![dst.as_str(), src.as_str()],
        }
    }
}

/// A recorded graph.
#[derive(Debug, Clone, Default)]
pub(super) struct Graph {
    steps: Vec<GraphStep>,
    /// The backend's executable graph and the nodes it was built from.
    instance: Option<(GraphId, Vec<GraphNode>)>,
}

/// What `%graph` lists about one graph.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphView {
    pub name: String,
    pub steps: Vec<String>,
}

/// A replay that completed.
#[derive(Debug, Clone, Default)]
pub struct GraphOutcome {
    pub printf: String,
    /// Checker findings (ptxsim), rendered.
    pub reports: Vec<String>,
    /// Milliseconds of each launch of the graph: device events on a GPU, wall time on ptxsim.
    pub launch_ms: Vec<f64>,
    /// Whether the backend ran it as one graph (a GPU) or step by step (ptxsim).
    pub as_graph: bool,
}

impl DeviceState {
    /// `%graph begin NAME`.
    pub fn begin_graph(&mut self, name: &str) -> Result<(), GpuError> {
        if let Some((current, _)) = &self.recording {
            return Err(GpuError::argument(format!(
                "graph `{current}` is still being recorded: %graph end it before beginning \
                 another"
            )));
        }
        self.recording = Some((name.to_string(), Vec::new()));
        Ok(())
    }

    /// The graph being recorded, if any.
    pub fn recording_graph(&self) -> Option<&str> {
        self.recording.as_ref().map(|(n, _)| n.as_str())
    }

    /// Records a launch (checked as `%launch` checks it) in the graph being recorded; returns
    /// the step's number, from 1.
    pub fn record_launch(&mut self, request: &LaunchRequest) -> Result<usize, GpuError> {
        let Some((name, _)) = &self.recording else {
            return Err(GpuError::argument("no graph is being recorded"));
        };
        let name = name.clone();
        if request.stream.is_some() {
            return Err(GpuError::argument(format!(
                "graph `{name}` runs its steps in order on one stream: drop the stream from \
                 this launch"
            )));
        }
        if request.check {
            return Err(GpuError::argument(format!(
                "a launch with --check cannot be recorded in graph `{name}` (%graph launch \
                 runs under the checker on ptxsim anyway)"
            )));
        }
        let (_, _, k, _) = self.checked_request(request)?;
        if Self::cooperative_of(request, &k).is_cooperative() {
            return Err(GpuError::argument(format!(
                "a cooperative launch cannot be recorded in graph `{name}` (its launches are \
                 plain kernel nodes): launch `{}` with %launch outside the graph",
                k.user_name
            )));
        }
        let mut step = request.clone();
        step.cancel = Arc::new(AtomicBool::new(false));
        self.push_step(GraphStep::Launch(step))
    }

    /// Records `%copy DST = SRC` (checked as `%copy` checks it).
    pub fn record_copy(&mut self, dst: &str, src: &str) -> Result<usize, GpuError> {
        if self.recording.is_none() {
            return Err(GpuError::argument("no graph is being recorded"));
        }
        self.copy_span(dst, src)?;
        self.push_step(GraphStep::Copy {
            dst: dst.to_string(),
            src: src.to_string(),
        })
    }

    fn push_step(&mut self, step: GraphStep) -> Result<usize, GpuError> {
        let Some((name, steps)) = &mut self.recording else {
            return Err(GpuError::argument("no graph is being recorded"));
        };
        if steps.len() >= MAX_GRAPH_STEPS {
            return Err(GpuError::argument(format!(
                "graph `{name}` already holds {MAX_GRAPH_STEPS} steps, the most a graph may hold"
            )));
        }
        steps.push(step);
        Ok(steps.len())
    }

    /// `%graph end`: stores the recording (replacing a graph of the same name); returns its
    /// name and number of steps.
    pub fn end_graph(&mut self) -> Result<(String, usize), GpuError> {
        let Some((name, steps)) = self.recording.take() else {
            return Err(GpuError::argument(
                "no graph is being recorded (%graph begin NAME starts one)",
            ));
        };
        if steps.is_empty() {
            return Err(GpuError::argument(format!(
                "graph `{name}` recorded nothing: put %launch or %copy lines between %graph \
                 begin and %graph end (the recording is discarded)"
            )));
        }
        let n = steps.len();
        self.drop_graph_instance(&name);
        self.graphs.insert(
            name.clone(),
            super::graphs::Graph {
                steps,
                instance: None,
            },
        );
        Ok((name, n))
    }

    /// `%graph drop NAME` (also abandons its recording).
    pub fn drop_graph(&mut self, name: &str) -> Result<(), GpuError> {
        if self.recording_graph() == Some(name) {
            self.recording = None;
            return Ok(());
        }
        if !self.graphs.contains_key(name) {
            return Err(self.no_graph(name));
        }
        self.drop_graph_instance(name);
        self.graphs.remove(name);
        Ok(())
    }

    /// Every graph, by name, with its steps.
    pub fn graphs(&self) -> Vec<GraphView> {
        self.graphs
            .iter()
            .map(|(name, g)| GraphView {
                name: name.clone(),
                steps: g.steps.iter().map(GraphStep::describe).collect(),
            })
            .collect()
    }

    /// The steps of graph `name`.
    pub fn graph_steps(&self, name: &str) -> Result<Vec<GraphStep>, GpuError> {
        self.graphs
            .get(name)
            .map(|g| g.steps.clone())
            .ok_or_else(|| self.no_graph(name))
    }

    /// The first graph (or the recording) that uses array `array`.
    pub(super) fn graph_using(&self, array: &str) -> Option<String> {
        let uses = |steps: &[GraphStep]| steps.iter().any(|s| s.arrays().contains(&array));
        if let Some((name, steps)) = &self.recording {
            if uses(steps) {
                return Some(name.clone());
            }
        }
        self.graphs
            .iter()
            .find(|(_, g)| uses(&g.steps))
            .map(|(n, _)| n.clone())
    }

    fn no_graph(&self, name: &str) -> GpuError {
        let names: Vec<String> = self.graphs.keys().cloned().collect();
        let hint = match did_you_mean(name, names.iter().map(String::as_str), Quote::Code) {
            Some(h) => format!(" ({h})"),
            None if names.is_empty() => " (there are none: %graph begin NAME records one)".into(),
            None => format!(" (graphs: {})", names.join(", ")),
        };
        GpuError::argument(format!("no graph named `{name}`{hint}"))
    }

    fn drop_graph_instance(&mut self, name: &str) {
        if let Some((id, _)) = self.graphs.get_mut(name).and_then(|g| g.instance.take()) {
            self.backend.destroy_graph(id);
        }
    }

    /// Forgets every graph instance without destroying it: the backend that held them is gone
    /// or its context was rebuilt.
    pub(super) fn forget_graph_instances(&mut self) {
        for g in self.graphs.values_mut() {
            g.instance = None;
        }
    }

    /// The pointers and size of `%copy DST = SRC`, checked as `copy_array` checks them.
    fn copy_span(&self, dst: &str, src: &str) -> Result<(u64, u64, usize), GpuError> {
        let s = self.arrays.get(src).ok_or_else(|| self.no_array(src))?;
        let d = self.arrays.get(dst).ok_or_else(|| self.no_array(dst))?;
        let count = |a: &super::Array| a.shape.iter().product::<usize>();
        if s.dtype != d.dtype || count(s) != count(d) {
            return Err(GpuError::argument(format!(
                "cannot copy `{src}` ({}, {} elements) into `{dst}` ({}, {} elements): the \
                 dtype and the number of elements must be the same",
                s.dtype,
                count(s),
                d.dtype,
                count(d)
            )));
        }
        Ok((d.ptr, s.ptr, s.bytes))
    }

    /// The nodes of graph `name` as its names resolve now, and the arrays its launches write.
    fn resolve_graph(&mut self, name: &str) -> Result<(Vec<GraphNode>, Vec<String>), GpuError> {
        let steps = self.graph_steps(name)?;
        let mut nodes = Vec::with_capacity(steps.len());
        let mut written: Vec<String> = Vec::new();
        for (i, step) in steps.iter().enumerate() {
            let at = |e: GpuError| {
                let mut e = e;
                e.message = format!(
                    "graph `{name}`, step {} ({}): {}",
                    i + 1,
                    step.describe(),
                    e.message
                );
                e
            };
            match step {
                GraphStep::Launch(r) => {
                    let (ci, _, k, packed) = self.checked_request(r).map_err(at)?;
                    for (a, _, w) in &packed.arrays {
                        if *w && !written.contains(a) {
                            written.push(a.clone());
                        }
                    }
                    nodes.push(GraphNode::Launch {
                        module: self.cells[ci].module,
                        kernel: k.lowered.clone(),
                        grid: r.grid,
                        block: r.block,
                        shared_bytes: r.shared_bytes,
                        stack_bytes: self.stack_bytes,
                        params: packed.params,
                    });
                }
                GraphStep::Copy { dst, src } => {
                    let (d, s, bytes) = self.copy_span(dst, src).map_err(at)?;
                    if !written.contains(dst) {
                        written.push(dst.clone());
                    }
                    nodes.push(GraphNode::Copy {
                        dst: d,
                        src: s,
                        bytes,
                    });
                }
            }
        }
        Ok((nodes, written))
    }

    /// `%graph launch NAME -n TIMES`: replays the graph `times` times, in order.
    pub fn launch_graph(
        &mut self,
        name: &str,
        times: usize,
        cancel: &Arc<AtomicBool>,
    ) -> Result<GraphOutcome, GpuError> {
        if let Some(r) = self.recording_graph() {
            return Err(GpuError::argument(format!(
                "graph `{r}` is being recorded: %graph end it before launching a graph"
            )));
        }
        self.recover_if_needed()?;
        let (nodes, written) = self.resolve_graph(name)?;
        let id = self.graph_instance(name, nodes)?;
        let mut out = GraphOutcome {
            as_graph: id.is_some(),
            ..GraphOutcome::default()
        };
        for _ in 0..times {
            if cancel.load(Ordering::Relaxed) {
                return Err(GpuError::new(
                    ErrorKind::Interrupted,
                    format!(
                        "graph `{name}` was interrupted after {} of {times} launches",
                        out.launch_ms.len()
                    ),
                ));
            }
            let ms = match id {
                Some(id) => self.launch_graph_instance(name, id, cancel, &mut out)?,
                None => self.replay_steps(name, cancel, &mut out)?,
            };
            out.launch_ms.push(ms);
        }
        for n in &written {
            if let Some(a) = self.arrays.get_mut(n) {
                a.last_writer = Some(format!("graph {name}"));
                a.shadow = None;
                a.host = None;
            }
        }
        Ok(out)
    }

    /// The backend's executable graph for `nodes`, built (or rebuilt) when needed; None when
    /// the backend has no graphs.
    fn graph_instance(
        &mut self,
        name: &str,
        nodes: Vec<GraphNode>,
    ) -> Result<Option<GraphId>, GpuError> {
        if let Some(g) = self.graphs.get(name) {
            if let Some((id, built)) = &g.instance {
                if *built == nodes {
                    return Ok(Some(*id));
                }
            }
        }
        self.drop_graph_instance(name);
        let id = self.backend.build_graph(&nodes).map_err(|mut e| {
            e.message = format!("graph `{name}` could not be built: {}", e.message);
            e
        })?;
        if let (Some(id), Some(g)) = (id, self.graphs.get_mut(name)) {
            g.instance = Some((id, nodes));
        }
        Ok(id)
    }

    fn launch_graph_instance(
        &mut self,
        name: &str,
        id: GraphId,
        cancel: &Arc<AtomicBool>,
        out: &mut GraphOutcome,
    ) -> Result<f64, GpuError> {
        let t0 = Instant::now();
        match self.backend.launch_graph(id, Some(cancel)) {
            Ok(r) => {
                out.printf.push_str(&r.printf);
                let wall = t0.elapsed().as_secs_f64() * 1e3;
                Ok(self.backend.last_launch_ms().unwrap_or(wall))
            }
            Err(BackendLaunchError::Rejected(m)) => Err(GpuError::launch(format!(
                "graph `{name}` was not launched: {m}"
            ))),
            Err(BackendLaunchError::Fault {
                message, printf, ..
            }) => {
                out.printf.push_str(&printf);
                let mut e = GpuError::fault(format!("graph `{name}` faulted: {message}"));
                if self.backend.fault().is_some() {
                    e.message.push_str(&self.fault_epilogue());
                }
                Err(e)
            }
        }
    }

    /// ptxsim: the steps one by one, as `%launch` and `%copy` run them.
    fn replay_steps(
        &mut self,
        name: &str,
        cancel: &Arc<AtomicBool>,
        out: &mut GraphOutcome,
    ) -> Result<f64, GpuError> {
        let steps = self.graph_steps(name)?;
        let t0 = Instant::now();
        for (i, step) in steps.iter().enumerate() {
            let at = |mut e: GpuError| {
                e.message = format!(
                    "graph `{name}`, step {} ({}): {}",
                    i + 1,
                    step.describe(),
                    e.message
                );
                e
            };
            match step {
                GraphStep::Launch(r) => {
                    let mut r = r.clone();
                    r.cancel = cancel.clone();
                    let o = self.launch(&r).map_err(at)?;
                    out.printf.push_str(&o.printf);
                    out.reports.extend(o.reports);
                }
                GraphStep::Copy { dst, src } => self.copy_array(dst, src).map_err(at)?,
            }
        }
        Ok(t0.elapsed().as_secs_f64() * 1e3)
    }
}

impl DeviceState {
    /// On a backend with graphs (after a `launch_graph` built one): the steps of graph `name`
    /// launched one by one, back to back on the default stream without the graph; their
    /// device-event milliseconds. None on ptxsim (no graphs to compare with).
    pub fn launch_graph_steps_one_by_one(
        &mut self,
        name: &str,
        cancel: &Arc<AtomicBool>,
    ) -> Result<Option<f64>, GpuError> {
        if self.graphs.get(name).is_none_or(|g| g.instance.is_none()) {
            return Ok(None);
        }
        let (nodes, _) = self.resolve_graph(name)?;
        match self.backend.launch_nodes(&nodes, Some(cancel)) {
            Ok(_) => Ok(self.backend.last_launch_ms()),
            Err(BackendLaunchError::Rejected(m)) => Err(GpuError::launch(format!(
                "the steps of graph `{name}` were not launched one by one: {m}"
            ))),
            Err(BackendLaunchError::Fault { message, .. }) => {
                let mut e = GpuError::fault(format!(
                    "the steps of graph `{name}`, launched one by one, faulted: {message}"
                ));
                if self.backend.fault().is_some() {
                    e.message.push_str(&self.fault_epilogue());
                }
                Err(e)
            }
        }
    }
}
