//! `%profile [--gpu MODEL] [--lines] [--check] [--ncu] LAUNCH`: the launch (as `%launch` takes
//! it) counted on ptxsim on copies of its arrays, shown the way Nsight Compute shows a launch
//! (the display is `profile_view`'s). On a GPU the launch also runs on the GPU on copies,
//! timed; with `--ncu` it also runs under Nsight Compute in a fresh GPU worker, whose values
//! are shown beside ptxsim's (`DeviceState::profile_ncu`).
//!
//! Parsing and running only; the device work is `DeviceState::profile`.

use super::parse::profile_args::ProfileArgs;
use super::{profile_view, LineCtx, MagicError, Magics};
use crate::gpu::ncu::{NcuFailure, NcuSetup};
use nb::ErrorKind;
use protocol::output::{CellOutput, OutputSink};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Test-only: `NBCUDA_NCU_SIM=1` lets `%profile --ncu` run on ptxsim, with the worker under
/// ncu on ptxsim too (`gpu-worker --sim`): the plumbing with a fake ncu on machines without a
/// GPU (tests/python/test_profile.py).
const NCU_SIM_ENV: &str = "NBCUDA_NCU_SIM";

impl Magics {
    /// `%profile`: one display with the profile's tables and its `application/json` metrics.
    pub(crate) fn profile(
        &mut self,
        ctx: &LineCtx,
        a: &ProfileArgs,
        out: &OutputSink,
        cancel: &Arc<AtomicBool>,
    ) -> Result<(), MagicError> {
        let model = match &a.gpu {
            Some(g) => super::gpu::find_model(ctx, self.dev.defined_gpus(), g)?,
            None => self.dev.gpu_model(),
        };
        let request = self.launch_request(ctx, &a.launch, cancel)?;
        let mut p = self
            .dev
            .profile_with(&request, &model, a.full, a.warm)
            .map_err(|e| {
                if cancel.load(Ordering::Relaxed) {
                    ctx.plain(
                        ErrorKind::Interrupted,
                        format!("%profile of {} was interrupted", a.launch.kernel.text),
                    )
                } else {
                    ctx.gpu(e)
                }
            })?;
        if a.ncu {
            let names: Vec<String> = profile_view::metrics(&p).keys().cloned().collect();
            let measured = self
                .ncu_setup()
                .and_then(|setup| self.dev.profile_ncu(&request, &names, &setup, cancel));
            match &measured {
                // Said by the error below, after the profile.
                Err(NcuFailure::Interrupted) => {}
                Err(f) => out(CellOutput::Stderr(format!("{}\n", f.message()))),
                Ok(_) => {}
            }
            p.ncu = Some(measured);
        }
        if !p.printf.is_empty() {
            out(CellOutput::Stdout(p.printf.clone()));
        }
        if !p.reports.is_empty() {
            out(CellOutput::Stderr(format!("{}\n", p.reports.join("\n"))));
        }
        out(CellOutput::Display {
            data: profile_view::bundle(&p, a.lines),
            metadata: serde_json::Map::new(),
            display_id: None,
        });
        // An interrupt during ncu's run stops the cell (the profile above is ptxsim's alone).
        if let Some(Err(NcuFailure::Interrupted)) = &p.ncu {
            return Err(ctx.plain(
                ErrorKind::Interrupted,
                format!(
                    "%profile --ncu of {} was interrupted: ncu and its GPU worker were \
                     stopped; ptxsim's counters are shown above",
                    a.launch.kernel.text
                ),
            ));
        }
        Ok(())
    }

    /// How `%profile --ncu` runs ncu here, or why it cannot: the GPU backend is needed
    /// (unless `NBCUDA_NCU_SIM=1`), and an ncu program.
    fn ncu_setup(&self) -> Result<NcuSetup, NcuFailure> {
        let sim_worker = std::env::var(NCU_SIM_ENV).ok().as_deref() == Some("1");
        if !sim_worker && self.dev.backend_name() != "cuda" {
            return Err(NcuFailure::NoGpu(
                "the session runs on ptxsim (no GPU, or %backend sim)".into(),
            ));
        }
        let mut setup = NcuSetup::from_env().map_err(NcuFailure::NotFound)?;
        setup.sim_worker = sim_worker;
        Ok(setup)
    }

    /// `nb::profile("LAUNCH")`: the metrics of `%profile LAUNCH` (Nsight Compute's names).
    pub fn profile_metrics(
        &mut self,
        launch: &str,
    ) -> Result<serde_json::Map<String, serde_json::Value>, MagicError> {
        let p = self.profile_outcome(launch)?;
        Ok(profile_view::metrics(&p))
    }

    /// The profile of `%profile LAUNCH` (without `--ncu`), undisplayed.
    pub(crate) fn profile_outcome(
        &mut self,
        launch: &str,
    ) -> Result<crate::gpu::ProfileOutcome, MagicError> {
        let line = format!("%profile {launch}");
        let ctx = LineCtx {
            line: &line,
            line_no: 1,
        };
        let super::parse::Command::Profile(a) = super::parse_line_ctx(&ctx)? else {
            return Err(ctx.plain(ErrorKind::Syntax, "not a launch"));
        };
        let model = match &a.gpu {
            Some(g) => super::gpu::find_model(&ctx, self.dev.defined_gpus(), g)?,
            None => self.dev.gpu_model(),
        };
        let cancel = Arc::new(AtomicBool::new(false));
        let request = self.launch_request(&ctx, &a.launch, &cancel)?;
        self.dev.profile(&request, &model).map_err(|e| ctx.gpu(e))
    }
}
