//! `%profile --ncu`'s run: a fresh GPU worker started under Nsight Compute (`ncu … nbcuda
//! gpu-worker --connect SOCKET`), into which the launch is replayed through the worker's usual
//! calls (`RemoteBackend`): the cell compiled for the worker's GPU (the compile cache serves
//! it), its `__constant__`/`__device__` variables and the launch's arrays copied from the
//! session, the launch itself. Then the socket closes, the worker exits and ncu prints its
//! CSV report, which `gpu::ncu` reads. The session's arrays and worker are untouched.
//!
//! It renders nothing: the table is `magics::profile_view`'s.

use super::*;
use crate::gpu::ncu::{self, NcuFailure, NcuSetup};
use crate::gpu::worker::{Launcher, RemoteBackend, Stopped};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What ncu measured of one launch.
#[derive(Debug, Clone, PartialEq)]
pub struct NcuOutcome {
    /// ncu's name of the profiled launch.
    pub kernel_name: String,
    /// Metric name → value in base units.
    pub metrics: BTreeMap<String, f64>,
    /// Requested metrics ncu did not know (left out of its second run) or gave no value for.
    pub unknown: Vec<String>,
    /// The ncu program that ran.
    pub program: PathBuf,
    /// Seconds the whole run took (ncu's start, replay passes, report).
    pub wall_s: f64,
}

/// A private folder for one run's socket and ncu's files (removed when dropped).
struct RunDir(PathBuf);

impl RunDir {
    fn new() -> Result<RunDir, String> {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "nbcuda-ncu-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&dir)
                .map_err(|e| format!("cannot make the folder {}: {e}", dir.display()))?;
        }
        Ok(RunDir(dir))
    }

    fn file(&self, name: &str) -> Result<std::fs::File, String> {
        let p = self.0.join(name);
        std::fs::File::create(&p).map_err(|e| format!("cannot create {}: {e}", p.display()))
    }

    /// What ncu wrote: its log file (the CSV), then its stdout and stderr.
    fn output(&self) -> String {
        ["ncu.csv", "ncu.out", "ncu.err"]
            .iter()
            .filter_map(|n| std::fs::read(self.0.join(n)).ok())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One run of ncu: its output and how the replay went.
struct NcuRun {
    output: String,
    /// ncu's exit status (None: it ended before the worker connected).
    status: Option<std::process::ExitStatus>,
    /// The replay, or why it did not run through.
    replay: Result<(), String>,
}

impl DeviceState {
    /// `%profile --ncu`: `request` replayed into a GPU worker under ncu (`setup`), which
    /// collects `metrics` (Nsight Compute names). `cancel` (Jupyter's interrupt) and
    /// `setup.timeout_s` bound it: ncu and its worker are killed. Err: the one line to show.
    pub fn profile_ncu(
        &mut self,
        request: &LaunchRequest,
        metrics: &[String],
        setup: &NcuSetup,
        cancel: &Arc<AtomicBool>,
    ) -> Result<NcuOutcome, NcuFailure> {
        if !setup.sim_worker && self.backend.name() != "cuda" {
            return Err(NcuFailure::NoGpu(
                "the session runs on ptxsim (no GPU, or %backend sim)".into(),
            ));
        }
        let (ci, _, k, _) = self
            .checked_request(request)
            .map_err(|e| NcuFailure::Failed(e.message))?;
        let t0 = Instant::now();
        let deadline = t0 + std::time::Duration::from_secs_f64(setup.timeout_s);
        let mut names: Vec<String> = metrics.to_vec();
        let mut unknown: Vec<String> = Vec::new();
        // A second run only when ncu refused metric names it does not know (other GPUs, other
        // ncu versions): without them.
        for attempt in 0..2 {
            let run = self.ncu_run(ci, &k, request, &names, setup, cancel, deadline)?;
            if ncu::refused(&run.output) {
                return Err(NcuFailure::Refused);
            }
            let report = ncu::parse_report(&run.output);
            let launch = ncu::pick_launch(&report, &k.user_name);
            let bad = ncu::unknown_metrics(&run.output, &names);
            let measured = run.replay.is_ok() && launch.is_some();
            if attempt == 0 && !measured && !bad.is_empty() && bad.len() < names.len() {
                names.retain(|n| !bad.contains(n));
                unknown.extend(bad);
                continue;
            }
            if let Err(why) = &run.replay {
                return Err(NcuFailure::Failed(format!(
                    "{why}; ncu's last lines: {}",
                    ncu::last_lines(&run.output, 3)
                )));
            }
            let Some(launch) = launch else {
                return Err(NcuFailure::Failed(format!(
                    "ncu reported no launch of {} ({}); its last lines: {}",
                    k.user_name,
                    run.status.map(exit_text).unwrap_or_else(|| "?".into()),
                    ncu::last_lines(&run.output, 4)
                )));
            };
            unknown.extend(launch.missing.iter().cloned());
            unknown.extend(
                names
                    .iter()
                    .filter(|n| !launch.metrics.contains_key(*n) && !launch.missing.contains(n))
                    .cloned(),
            );
            unknown.sort();
            unknown.dedup();
            return Ok(NcuOutcome {
                kernel_name: launch.name.clone(),
                metrics: launch.metrics.clone(),
                unknown,
                program: setup.program.clone(),
                wall_s: t0.elapsed().as_secs_f64(),
            });
        }
        Err(NcuFailure::Failed("ncu reported no launch".into()))
    }

    /// One ncu run: start the worker under ncu, replay, end the worker, wait for ncu.
    #[allow(clippy::too_many_arguments)]
    fn ncu_run(
        &mut self,
        ci: usize,
        k: &LoadedKernel,
        request: &LaunchRequest,
        metrics: &[String],
        setup: &NcuSetup,
        cancel: &Arc<AtomicBool>,
        deadline: Instant,
    ) -> Result<NcuRun, NcuFailure> {
        let dir = RunDir::new().map_err(NcuFailure::Failed)?;
        let log = dir.0.join("ncu.csv");
        let launcher = Launcher {
            program: setup.program.clone(),
            args: ncu::arguments(metrics, &log),
            stdout: dir.file("ncu.out").map_err(NcuFailure::Failed)?,
            stderr: dir.file("ncu.err").map_err(NcuFailure::Failed)?,
            dir: dir.0.clone(),
            cancel: cancel.clone(),
            deadline,
        };
        let stopped = |why: Stopped| match why {
            Stopped::Interrupted => NcuFailure::Interrupted,
            Stopped::TimedOut => NcuFailure::TimedOut(setup.timeout_s),
        };
        let mut remote =
            match RemoteBackend::spawn_under(launcher, self.ordinal(), setup.sim_worker) {
                Ok(r) => r,
                Err(why) => {
                    if cancel.load(Ordering::Relaxed) {
                        return Err(NcuFailure::Interrupted);
                    }
                    if Instant::now() >= deadline {
                        return Err(NcuFailure::TimedOut(setup.timeout_s));
                    }
                    return Ok(NcuRun {
                        output: dir.output(),
                        status: None,
                        replay: Err(why),
                    });
                }
            };
        let replay = self
            .replay_into(&mut remote, ci, k, request)
            .map_err(|e| format!("the launch under ncu failed: {}", first_line(&e.message)));
        if let Some(why) = remote.stopped() {
            drop(remote);
            return Err(stopped(why));
        }
        let status = remote.finish().map_err(stopped)?;
        Ok(NcuRun {
            output: dir.output(),
            status: Some(status),
            replay,
        })
    }

    /// The session's GPU ordinal (from the backend's description), else `NBCUDA_DEVICE`'s.
    fn ordinal(&self) -> usize {
        self.backend
            .describe()
            .rows
            .iter()
            .find(|(k, _)| k == "device")
            .and_then(|(_, v)| v.split(':').next()?.trim().parse().ok())
            .unwrap_or_else(switch::ordinal_from_env)
    }

    /// `request` on `remote` (a fresh worker): the cell compiled for it, the cell's variables
    /// and the launch's arrays copied from the session, the launch, a synchronisation.
    fn replay_into(
        &self,
        remote: &mut RemoteBackend,
        ci: usize,
        k: &LoadedKernel,
        request: &LaunchRequest,
    ) -> Result<(), GpuError> {
        let c = &self.cells[ci];
        let (cell, _, _) = kernels::build_cell(
            remote,
            &self.compiler,
            &c.source,
            &c.options,
            c.first_line,
            &c.instantiations,
            None,
        )?;
        for v in &c.symbols {
            if let Some((p, bytes)) = remote.symbol(cell.module, &v.lowered)? {
                if bytes == v.bytes {
                    let mut buf = vec![0u8; bytes];
                    self.backend.dtoh(v.ptr, &mut buf)?;
                    remote.htod(p, &buf)?;
                }
            }
        }
        let mut copies: BTreeMap<String, DevPtr> = BTreeMap::new();
        for n in request.args.iter().flat_map(LaunchArg::array_names) {
            let Some(arr) = self.arrays.get(n) else {
                continue;
            };
            if copies.contains_key(n) {
                continue;
            }
            let mut buf = vec![0u8; arr.bytes];
            self.backend.dtoh(arr.ptr, &mut buf)?;
            let p = remote.alloc(arr.bytes)?;
            remote.htod(p, &buf)?;
            copies.insert(n.to_string(), p);
        }
        let packed = self.pack_args(k, request, &copies)?;
        let mut config = self.backend_launch(request, k, None, false, None);
        // ncu's replay is the interrupt's business here (the watch kills ncu and the worker).
        config.cancel = None;
        let params: Vec<&[u8]> = packed.params.iter().map(Vec::as_slice).collect();
        let lowered = cell
            .kernels
            .iter()
            .find(|x| x.user_name == k.user_name)
            .map(|x| x.lowered.clone())
            .unwrap_or_else(|| k.lowered.clone());
        remote
            .launch(cell.module, &lowered, &config, &params)
            .map_err(|e| self.launch_error(ci, k, e, &[], "the GPU under ncu (%profile --ncu)"))?;
        remote.synchronize(None)
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

fn exit_text(s: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("it exited with status {c}"),
        (None, Some(sig)) => format!("it was killed by signal {sig}"),
        _ => "it ended".into(),
    }
}
