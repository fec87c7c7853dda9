//! Cooperative launches in the device state: whether a request runs cooperatively
//! (`gpu::cooperative::Cooperative`) and the check that its grid can be resident at once, with
//! the figures of the device it runs on: on a GPU, the driver's occupancy API
//! (`cuOccupancyMaxActiveBlocksPerMultiprocessor`) × its SMs, as `cuLaunchCooperativeKernel`
//! checks; on ptxsim, the modelled GPU's (`%gpu`) occupancy rules with the kernel's CUBIN
//! resources for that GPU. Both refuse with the same words.

use super::DeviceState;
use crate::gpu::cooperative::{residency_error, Cooperative};
use crate::gpu::kernels::LoadedKernel;
use crate::gpu::{GpuError, LaunchRequest};
use ptxsim::gpus;

impl DeviceState {
    /// How `request` (of the loaded CUDA kernel `k`) runs: `--cooperative`, made cooperative
    /// because the kernel has a grid-wide sync, or plain.
    pub(super) fn cooperative_of(request: &LaunchRequest, k: &LoadedKernel) -> Cooperative {
        Cooperative::of(request.cooperative, k.grid_sync)
    }

    /// Refuses a cooperative launch of kernel `ki` of cell `ci` whose blocks cannot all be
    /// resident at once on the device (module docs).
    pub(super) fn check_residency(
        &mut self,
        ci: usize,
        ki: usize,
        request: &LaunchRequest,
    ) -> Result<(), GpuError> {
        let (gx, gy, gz) = request.grid;
        let (bx, by, bz) = request.block;
        let blocks = u64::from(gx) * u64::from(gy) * u64::from(gz);
        let threads = u64::from(bx) * u64::from(by) * u64::from(bz);
        let block_threads = u32::try_from(threads).unwrap_or(u32::MAX);
        let (gpu, per_sm, sms) = if self.backend.name() == "ptxsim" {
            let model = self.gpu_model();
            let ptx_shared = self.cells[ci].kernels[ki].meta.static_shared_bytes;
            // The CUBIN's registers and shared memory for the model; without NVRTC's CUBIN,
            // the PTX's shared memory and no register limit.
            let (regs, shared) = match self.model_resources(ci, ki, &model) {
                Ok(r) => (r.registers, r.static_shared_bytes),
                Err(_) => (0, u32::try_from(ptx_shared).unwrap_or(u32::MAX)),
            };
            let shared = shared.saturating_add(request.shared_bytes);
            let o = gpus::occupancy(&model, regs, shared, block_threads);
            (model.name.to_string(), o.active_blocks_per_sm, model.sms)
        } else {
            let module = self.cells[ci].module;
            let lowered = self.cells[ci].kernels[ki].lowered.clone();
            let model = self.device_model();
            let name = model
                .as_ref()
                .map(|m| m.name.to_string())
                .unwrap_or_else(|| self.backend.describe().name);
            let sms = model.as_ref().map_or(0, |m| m.sms);
            let per_sm = self
                .backend
                .occupancy(module, &lowered, &[block_threads], request.shared_bytes)
                .and_then(|rows| rows.first().map(|o| o.blocks_per_sm));
            match per_sm {
                Some(n) if sms > 0 => (name, n, sms),
                // No figures: the driver's own check refuses the launch if it must.
                _ => return Ok(()),
            }
        };
        match residency_error(blocks, threads, &gpu, per_sm, sms) {
            Some(why) => Err(GpuError::launch(format!(
                "cannot launch `{}`: {why}",
                request.kernel
            ))),
            None => Ok(()),
        }
    }
}
