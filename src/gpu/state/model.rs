//! The modelled GPU of the session (`%gpu`) and what `%info` shows about it: the CUBIN's real
//! resources for the model's architecture (compiled offline by NVRTC, no driver needed) and the
//! theoretical occupancy per block size from `ptxsim::gpus`.
//!
//! The model is the one `%gpu MODEL` chose; otherwise, on a GPU, the table entry matching the
//! device's name (or a model built from its attributes) and, on ptxsim, H200. On a GPU, `%info`
//! keeps the driver's resource figures when the model is that GPU; for another model, and on
//! ptxsim, the figures come from a CUBIN compiled for the model's `sm_XX`.

use super::DeviceState;
use crate::compile::resources;
use crate::gpu::{KernelInfoView, OccupancyTable};
use ptxsim::gpus::{self, GpuModel};

impl DeviceState {
    /// The GPU ptxsim models (and `%info` tabulates occupancy for).
    pub fn gpu_model(&self) -> GpuModel {
        if let Some(g) = &self.gpu_model {
            return g.clone();
        }
        self.device_model()
            .unwrap_or_else(|| gpus::default_gpu().clone())
    }

    /// `%gpu MODEL`: models `gpu` from now on.
    pub fn set_gpu_model(&mut self, gpu: &GpuModel) {
        self.gpu_model = Some(gpu.clone());
    }

    /// `%gpu define`: adds `gpu` beside the table, or replaces the one defined under its name
    /// (also when it is the modelled one). Returns whether it replaced one.
    pub fn define_gpu(&mut self, gpu: GpuModel) -> bool {
        if self
            .gpu_model
            .as_ref()
            .is_some_and(|m| gpus::names_match(&m.name, &gpu.name))
        {
            self.gpu_model = Some(gpu.clone());
        }
        match self
            .defined_gpus
            .iter_mut()
            .find(|g| gpus::names_match(&g.name, &gpu.name))
        {
            Some(old) => {
                *old = gpu;
                true
            }
            None => {
                self.defined_gpus.push(gpu);
                false
            }
        }
    }

    /// The GPUs `%gpu define` added, in the order defined.
    pub fn defined_gpus(&self) -> &[GpuModel] {
        &self.defined_gpus
    }

    /// On a GPU: its table entry, else a model from the attributes `%device` shows. None on
    /// ptxsim.
    pub fn device_model(&self) -> Option<GpuModel> {
        if self.backend.name() == "ptxsim" {
            return None;
        }
        let d = self.backend.describe();
        if let Some(g) = gpus::for_device_name(&d.name) {
            return Some(g.clone());
        }
        let row = |key: &str| -> Option<f64> {
            let (_, v) = d.rows.iter().find(|(k, _)| k == key)?;
            v.split_whitespace().next()?.parse().ok()
        };
        let sm = match self.backend.compile_target(&Default::default()) {
            crate::compile::Target::Cubin { arch } | crate::compile::Target::Ptx { arch } => arch
                .trim_start_matches("sm_")
                .trim_start_matches("compute_")
                .parse()
                .unwrap_or(80),
        };
        let f2u = |v: Option<f64>| v.map(|v| v as u32).unwrap_or(0);
        Some(gpus::from_device(
            &d.name,
            sm,
            f2u(row("SMs")),
            f2u(row("SM clock")),
            d.peak_bandwidth_gbs.unwrap_or(0.0),
            0,
            row("L2 cache").map(|m| (m * 1048576.0) as u64).unwrap_or(0),
        ))
    }

    /// Every GPU `%gpu` lists, with the modelled one marked (a GPU missing from the table comes
    /// first when it is the modelled one).
    pub fn gpu_models(&self) -> Vec<(GpuModel, bool)> {
        let current = self.gpu_model();
        let mut out: Vec<(GpuModel, bool)> = gpus::GPUS
            .iter()
            .chain(&self.defined_gpus)
            .map(|g| (g.clone(), g.name == current.name))
            .collect();
        if !out.iter().any(|(_, c)| *c) {
            out.insert(0, (current, true));
        }
        out
    }

    /// The resources of kernel `ki` of cell `ci` on `model`: the driver's figures when `model`
    /// is the GPU the session runs on, else those of a CUBIN that NVRTC compiles for the
    /// model's `sm_XX` offline (cached). Err: why there are none (NVRTC failed, or the kernel
    /// is not in the CUBIN).
    pub(super) fn model_resources(
        &mut self,
        ci: usize,
        ki: usize,
        model: &GpuModel,
    ) -> Result<ModelResources, String> {
        let device = self.device_model();
        let c = &self.cells[ci];
        let k = &c.kernels[ki];
        if device.as_ref().is_some_and(|d| d.name == model.name) {
            return Ok(ModelResources {
                registers: k.meta.registers as u32,
                static_shared_bytes: k.meta.static_shared_bytes as u32,
                local_bytes: k.meta.local_bytes as u32,
                max_threads: k.meta.max_threads,
                cubin: None,
            });
        }
        let exprs = c.kernels.iter().map(|k| name_expression(c, k)).collect();
        let arch = model.arch();
        let (res, compiled) = resources::compile_resources(
            &self.compiler,
            &c.source,
            &c.options,
            c.first_line,
            exprs,
            &arch,
        )
        .map_err(|e| format!("not available for {arch}: {}", e.message))?;
        let r = res
            .kernel(&k.lowered)
            .ok_or_else(|| format!("{} is not in the {arch} CUBIN", k.lowered))?;
        Ok(ModelResources {
            registers: r.registers,
            static_shared_bytes: r.static_shared_bytes,
            local_bytes: r.local_bytes,
            max_threads: r.max_threads,
            cubin: Some((arch, compiled.compile_ms, compiled.cache_hit)),
        })
    }

    /// Adds the CUBIN's resources (ptxsim, or another model than the GPU) and the occupancy
    /// table on `gpu` (None: the modelled GPU) to `%info`'s view of kernel `ki` of cell `ci`.
    pub(super) fn with_model(
        &mut self,
        mut view: KernelInfoView,
        ci: usize,
        ki: usize,
        gpu: Option<&GpuModel>,
    ) -> KernelInfoView {
        let model = gpu.cloned().unwrap_or_else(|| self.gpu_model());
        let r = match self.model_resources(ci, ki, &model) {
            Ok(r) => r,
            Err(why) => {
                view.rows.push(("CUBIN resources".into(), why));
                return view;
            }
        };
        if let Some((arch, compile_ms, cache_hit)) = &r.cubin {
            let src = format!("{arch} CUBIN, NVRTC");
            set_row(
                &mut view,
                "registers",
                "registers per thread",
                format!("{} ({src})", r.registers),
            );
            set_row(
                &mut view,
                "static shared memory",
                "static shared memory",
                format!("{} bytes ({src})", r.static_shared_bytes),
            );
            set_row(
                &mut view,
                "local memory per thread",
                "local memory per thread",
                format!(
                    "{} bytes ({src}{})",
                    r.local_bytes,
                    if r.local_bytes > 0 {
                        "; stack frame, spills or indexed arrays"
                    } else {
                        ""
                    }
                ),
            );
            set_row(
                &mut view,
                "max threads per block",
                "max threads per block",
                r.max_threads
                    .unwrap_or(model.max_threads_per_block)
                    .min(model.max_threads_per_block)
                    .to_string(),
            );
            view.rows.push((
                "CUBIN compile".into(),
                format!(
                    "{compile_ms:.0} ms{}",
                    if *cache_hit { " (cached)" } else { "" }
                ),
            ));
        }
        let max = r
            .max_threads
            .unwrap_or(model.max_threads_per_block)
            .min(model.max_threads_per_block);
        view.rows.push((
            "modelled GPU".into(),
            format!(
                "{} ({}, {} SMs){}",
                model.name,
                model.arch(),
                model.sms,
                if gpu.is_some() {
                    ""
                } else {
                    "; %gpu MODEL or %info --gpu MODEL for another"
                }
            ),
        ));
        view.occupancy = Some(OccupancyTable {
            gpu: model.name.to_string(),
            arch: model.arch(),
            registers: r.registers,
            shared_bytes: r.static_shared_bytes,
            rows: gpus::table_block_sizes(max)
                .into_iter()
                .map(|b| gpus::occupancy(&model, r.registers, r.static_shared_bytes, b))
                .collect(),
        });
        view
    }
}

/// A kernel's resources on one GPU model ([`DeviceState::model_resources`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelResources {
    pub registers: u32,
    pub static_shared_bytes: u32,
    /// Local memory per thread (stack frame, spills, indexed arrays).
    pub local_bytes: u32,
    /// `__launch_bounds__`, if any.
    pub max_threads: Option<u32>,
    /// `(sm_XX, compile ms, cache hit)` when the figures come from an offline CUBIN; None:
    /// the driver's figures for the GPU itself.
    pub cubin: Option<(String, f64, bool)>,
}

/// Replaces the row whose key starts with `prefix` (`"registers (PTX virtual)"` → …).
fn set_row(view: &mut KernelInfoView, prefix: &str, key: &str, value: String) {
    match view.rows.iter_mut().find(|(k, _)| k.starts_with(prefix)) {
        Some(row) => *row = (key.to_string(), value),
        None => view.rows.push((key.to_string(), value)),
    }
}

/// The NVRTC name expression that compiled `k` (as `kernels::build_cell` makes it).
fn name_expression(c: &super::Cell, k: &super::LoadedKernel) -> String {
    let Some(d) = c.scan.kernels.get(k.decl) else {
        return format!("&{}", k.user_name);
    };
    let (_, args) = crate::compile::scan::split_template_name(&k.user_name);
    match args {
        Some(args) if d.template_params.is_some() => {
            format!("&{}<{}>", d.qualified, args.join(", "))
        }
        _ => format!("&{}", d.qualified),
    }
}
