//! `%profile`'s run. The launch runs on a fresh ptxsim device on copies of its arrays with
//! ptxsim's counters on (`ptxsim::counters`), so profiling changes no data, whatever the
//! backend. On a GPU the launch also runs on the GPU itself, on device copies, timed with CUDA
//! events. Beside the counters it gathers what the profile shows about the launch: the kernel's
//! resources and theoretical occupancy on the modelled GPU (`model.rs`), an achieved-occupancy
//! estimate, and the counts folded by line of the `%%cuda` cell.
//!
//! It renders nothing: the display is `magics::profile`'s.

use super::*;
use ptxsim::counters::{CounterConfig, Counters, LineCounters, Sample};
use ptxsim::gpus::{self, GpuModel};

pub use super::model::ModelResources;

/// How a launch is counted on a model ([`DeviceState::counter_setup`]).
pub(super) struct CounterSetup {
    pub config: CounterConfig,
    /// The kernel's resources on the model, or why they are unknown.
    pub resources: Result<ModelResources, String>,
    /// Blocks one SM of the model holds at once.
    pub per_sm: u32,
}

/// What a sampled `%profile` counts, about (warp instructions plus twice the global sector
/// accesses, `ptxsim::sampling`): what decides when a launch is sampled and how big the sample
/// is. Counting and the L2 model run through about 6 to 20 million of these a second on one
/// core (fewer for kernels heavy in shared memory, whose accesses the price leaves out), so a
/// sample takes a few seconds at most: the notebooks' GPU-size launches profile within 5 s.
pub const SAMPLE_BUDGET: u64 = 25_000_000;

/// The counts of one source line of a profiled launch.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileLine {
    /// The line's number in the notebook cell (as error messages count), when the line is in
    /// the `%%cuda` cell; None for lines of headers or without line information.
    pub cell_line: Option<usize>,
    /// The line's 1-based number in its file (the cell's source for `cell_line`), if known.
    pub source_line: Option<u32>,
    /// The source text, trimmed (or `file:line`, or "(no line information)").
    pub text: String,
    pub counts: LineCounters,
}

/// Everything `%profile` shows about one launch.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileOutcome {
    /// The user's name of the CUDA kernel.
    pub kernel: String,
    /// The session's backend, `"ptxsim"` or `"cuda"`.
    pub backend: String,
    /// The GPU the counters' L2 and the occupancy are modelled on.
    pub gpu: GpuModel,
    pub grid: Dim3,
    pub block: Dim3,
    pub dynamic_shared_bytes: u32,
    /// The kernel's resources on `gpu`, or why they are unknown.
    pub resources: Result<ModelResources, String>,
    /// Theoretical occupancy of this block size on `gpu` (with the launch's shared memory).
    pub occupancy: Option<gpus::Occupancy>,
    /// Achieved occupancy, 0 to 1, of a GPU that runs the grid in full waves of the
    /// theoretical occupancy: the last partial wave and a grid smaller than one wave lower it.
    pub achieved_occupancy: Option<f64>,
    pub counters: Box<Counters>,
    /// Per source line, in source order.
    pub lines: Vec<ProfileLine>,
    /// The cell's CUDA source and its first line in the notebook cell (for `--lines`).
    pub source: String,
    pub first_line: usize,
    /// Wall time of the counted ptxsim launch (the simulator's, not a GPU's).
    pub sim_ms: f64,
    /// On a GPU: the launch's time on the GPU, by CUDA events.
    pub gpu_ms: Option<f64>,
    /// The estimated duration on `gpu` (`ptxsim::model`), when the resources are known.
    pub estimate: Option<ptxsim::model::Estimate>,
    pub printf: String,
    /// Checker findings (`%profile --check`), rendered.
    pub reports: Vec<String>,
    /// `%profile --ncu`: what Nsight Compute measured of the same launch, or why nothing.
    pub ncu: Option<Result<super::ncu::NcuOutcome, crate::gpu::ncu::NcuFailure>>,
}

impl DeviceState {
    /// `%profile`: runs `request` counted on ptxsim on copies of its arrays (and, on a GPU,
    /// timed on the GPU on device copies), with `gpu`'s L2 size and resources.
    pub fn profile(
        &mut self,
        request: &LaunchRequest,
        gpu: &GpuModel,
    ) -> Result<ProfileOutcome, GpuError> {
        self.profile_with(request, gpu, false, false)
    }

    /// [`DeviceState::profile`], counting every block when `full` (`--full`), else a sample of
    /// the blocks when counting all would take long (`ptxsim::sampling`); with `warm`, the L2
    /// as a repeat of the launch finds it (`CounterConfig::warm`).
    pub fn profile_with(
        &mut self,
        request: &LaunchRequest,
        gpu: &GpuModel,
        full: bool,
        warm: bool,
    ) -> Result<ProfileOutcome, GpuError> {
        let (ci, ki, k, _) = self.checked_request(request)?;
        let CounterSetup {
            config: counters,
            resources,
            ..
        } = self.counter_setup(ci, ki, request, gpu, full, warm);
        let block_threads = request.block.0 * request.block.1 * request.block.2;
        let run = self.run_on_sim_copies(ci, &k, request, request.check, Some(counters))?;
        let report = match run.result {
            Ok(r) => r,
            Err(e) => {
                return Err(self.launch_error(ci, &k, e, &run.allocs, "ptxsim (%profile)"));
            }
        };
        let Some(counters) = report.counters else {
            return Err(GpuError::launch("ptxsim returned no counters"));
        };
        let gpu_ms = if self.backend.name() == "ptxsim" {
            None
        } else {
            self.time_on_device_copies(ci, &k, request)?
        };
        let cell = &self.cells[ci];
        let text = CellText {
            source: &cell.source,
            first_line: cell.first_line,
            program: &cell.program,
        };
        let reports = report
            .findings
            .iter()
            .map(|f| fault::render_finding(&k.user_name, f, &run.allocs, Some(text)))
            .collect();
        let lines = counters
            .by_line()
            .into_iter()
            .map(|l| profile_line(l, text))
            .collect();
        let occupancy = resources.as_ref().ok().map(|r| {
            gpus::occupancy(
                gpu,
                r.registers,
                r.static_shared_bytes + request.shared_bytes,
                block_threads,
            )
        });
        let achieved_occupancy = occupancy
            .as_ref()
            .map(|o| achieved(o, counters.blocks, gpu.sms));
        let estimate = resources.as_ref().ok().map(|r| {
            let shape = ptxsim::model::LaunchShape {
                block_threads,
                registers: r.registers,
                shared_bytes: r.static_shared_bytes + request.shared_bytes,
            };
            ptxsim::model::estimate(&counters, &shape, gpu)
        });
        let cell = &self.cells[ci];
        Ok(ProfileOutcome {
            kernel: k.user_name.clone(),
            backend: self.backend.name().to_string(),
            gpu: gpu.clone(),
            grid: request.grid,
            block: request.block,
            dynamic_shared_bytes: request.shared_bytes,
            resources,
            occupancy,
            achieved_occupancy,
            counters,
            lines,
            source: cell.source.clone(),
            first_line: cell.first_line,
            sim_ms: run.elapsed_ms,
            gpu_ms,
            estimate,
            printf: report.printf,
            reports,
            ncu: None,
        })
    }

    /// How ptxsim counts `request` (kernel `ki` of cell `ci`) for `gpu`: the L2 and L1 of the
    /// model, every block when `full`, else a sample of whole waves when counting all would take
    /// long; with `warm`, the L2 as a repeat of the launch finds it.
    pub(super) fn counter_setup(
        &mut self,
        ci: usize,
        ki: usize,
        request: &LaunchRequest,
        gpu: &GpuModel,
        full: bool,
        warm: bool,
    ) -> CounterSetup {
        let resources = self.model_resources(ci, ki, gpu);
        let block_threads = request.block.0 * request.block.1 * request.block.2;
        let mut counters = CounterConfig::new(gpu.l2_bytes);
        counters.warm = warm;
        // The blocks one SM of the modelled GPU holds at once, and their shared memory.
        let (per_sm, shared_per_block) = match &resources {
            Ok(r) => {
                let shared = r.static_shared_bytes + request.shared_bytes;
                let o = gpus::occupancy(gpu, r.registers, shared, block_threads.max(1));
                (o.active_blocks_per_sm, shared)
            }
            Err(_) => ((2048 / block_threads.max(1)).max(1), request.shared_bytes),
        };
        counters.l1_bytes_per_block =
            ptxsim::model::l1_bytes_per_block(gpu, per_sm, shared_per_block);
        if !full {
            // One wave: the blocks the modelled GPU holds at once.
            counters.sample = Sample::Auto {
                wave_blocks: u64::from(gpu.sms) * u64::from(per_sm.max(1)),
                budget: SAMPLE_BUDGET,
            };
        }
        CounterSetup {
            config: counters,
            resources,
            per_sm,
        }
    }

    /// The launch on the session's GPU on device copies of its arrays, timed by CUDA events
    /// (ms; None when the backend gave no event time). The copies are freed, the arrays
    /// untouched.
    fn time_on_device_copies(
        &mut self,
        ci: usize,
        k: &LoadedKernel,
        request: &LaunchRequest,
    ) -> Result<Option<f64>, GpuError> {
        let mut copies: BTreeMap<String, DevPtr> = BTreeMap::new();
        let mut result = Ok(None);
        for n in request.args.iter().flat_map(LaunchArg::array_names) {
            let Some(arr) = self.arrays.get(n) else {
                continue;
            };
            if copies.contains_key(n) {
                continue;
            }
            let (src, bytes) = (arr.ptr, arr.bytes);
            match self.backend.alloc(bytes) {
                Ok(p) => {
                    copies.insert(n.to_string(), p);
                    if let Err(e) = self.backend.dtod(p, src, bytes) {
                        result = Err(e);
                        break;
                    }
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if result.is_ok() {
            result = (|| {
                let packed = self.pack_args(k, request, &copies)?;
                let config = self.backend_launch(request, k, None, false, None);
                let params: Vec<&[u8]> = packed.params.iter().map(Vec::as_slice).collect();
                let module = self.cells[ci].module;
                match self.backend.launch(module, &k.lowered, &config, &params) {
                    Ok(_) => Ok(self.backend.last_launch_ms()),
                    Err(e) => Err(self.launch_error(ci, k, e, &[], "the GPU (%profile)")),
                }
            })();
        }
        for p in copies.into_values() {
            let _ = self.backend.free(p);
        }
        result
    }
}

/// Achieved occupancy of `blocks` blocks on `sms` SMs that each hold
/// `o.active_blocks_per_sm` at a time: the grid runs in waves of `sms * active` blocks, and
/// the resident blocks per SM average `blocks / (sms * waves)`.
fn achieved(o: &gpus::Occupancy, blocks: u64, sms: u32) -> f64 {
    let per_wave = u64::from(sms) * u64::from(o.active_blocks_per_sm);
    if per_wave == 0 || blocks == 0 || o.max_warps_per_sm == 0 {
        return 0.0;
    }
    let waves = blocks.div_ceil(per_wave);
    let resident_blocks = blocks as f64 / (u64::from(sms) * waves) as f64;
    (resident_blocks * f64::from(o.warps_per_block) / f64::from(o.max_warps_per_sm)).min(1.0)
}

/// One line's counts with its place in the cell and its text.
fn profile_line(counts: LineCounters, cell: CellText<'_>) -> ProfileLine {
    let Some(l) = counts.line.clone() else {
        return ProfileLine {
            cell_line: None,
            source_line: None,
            text: "(no line information)".into(),
            counts,
        };
    };
    let in_cell = l.file == cell.program || l.file.ends_with(&format!("/{}", cell.program));
    if in_cell && l.line >= 1 {
        let text = cell
            .source
            .lines()
            .nth(l.line as usize - 1)
            .map(str::trim)
            .unwrap_or("")
            .to_string();
        return ProfileLine {
            cell_line: Some(cell.first_line + l.line as usize - 1),
            source_line: Some(l.line),
            text,
            counts,
        };
    }
    ProfileLine {
        cell_line: None,
        source_line: Some(l.line),
        text: format!("{}:{}", l.file, l.line),
        counts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn achieved_occupancy_counts_the_last_wave() {
        let g = gpus::find("H200").expect("H200");
        let o = gpus::occupancy(g, 32, 0, 256);
        // Full waves: the theoretical occupancy.
        let per_wave = u64::from(g.sms) * u64::from(o.active_blocks_per_sm);
        assert!((achieved(&o, per_wave * 4, g.sms) - o.fraction).abs() < 1e-12);
        // One block on the whole GPU: one SM holds 8 of its 64 warps, the others none.
        let one = achieved(&o, 1, g.sms);
        assert!((one - 8.0 / 64.0 / f64::from(g.sms)).abs() < 1e-12, "{one}");
        // One wave and a block: two waves, half full on average.
        let half = achieved(&o, per_wave + 1, g.sms);
        assert!(
            half > o.fraction * 0.5 && half < o.fraction * 0.51,
            "{half}"
        );
    }
}
