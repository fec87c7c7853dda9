//! `%device` rows of the GPU backend: the device's figures from detection and its attributes,
//! the driver and NVRTC versions, and what `%%cuda` cells compile to. Reads only.

use super::*;

pub(super) fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

pub(super) fn kib(bytes: u32) -> String {
    format!("{} KiB", bytes / 1024)
}

impl CudaBackend {
    pub(super) fn describe_device(&self) -> DeviceDescription {
        let g = &self.info;
        let a = &self.attrs;
        let (major, minor) = select::driver_cuda_version(self.driver_version);
        let free = if self.usable().is_ok() {
            cudarc::driver::result::mem_get_info().ok().map(|(f, _)| f)
        } else {
            None
        };
        let mut rows: Vec<(String, String)> = vec![
            (
                "backend".into(),
                "cuda (NVIDIA GPU through the CUDA driver API)".into(),
            ),
            ("device".into(), format!("{}: {}", g.ordinal, g.name)),
            (
                "compute capability".into(),
                format!(
                    "{}.{} ({})",
                    g.compute_capability.0,
                    g.compute_capability.1,
                    g.arch()
                ),
            ),
            ("SMs".into(), g.sms.to_string()),
            (
                "memory".into(),
                match free {
                    Some(f) => format!("{} ({} free)", gib(g.memory_bytes), gib(f as u64)),
                    None => gib(g.memory_bytes),
                },
            ),
            ("SM clock".into(), format!("{} MHz", g.clock_mhz)),
            (
                "memory clock, bus".into(),
                format!("{} MHz, {} bit", g.memory_clock_mhz, g.bus_width_bits),
            ),
            (
                "peak bandwidth".into(),
                format!("{:.0} GB/s", g.peak_bandwidth_gbs),
            ),
            ("L2 cache".into(), format!("{} MiB", a.l2_bytes >> 20)),
            (
                "shared memory per block".into(),
                format!(
                    "{} ({} with opt-in)",
                    kib(a.shared_default),
                    kib(a.limits.max_shared_per_block)
                ),
            ),
            ("shared memory per SM".into(), kib(a.shared_per_sm)),
            (
                "registers per SM, per block".into(),
                format!("{}, {}", a.regs_per_sm, a.regs_per_block),
            ),
            (
                "max threads per SM, per block".into(),
                format!(
                    "{}, {}",
                    a.max_threads_per_sm, a.limits.max_threads_per_block
                ),
            ),
            ("warp size".into(), a.limits.warp_size.to_string()),
            ("max block".into(), format!("{:?}", a.limits.max_block)),
            ("max grid".into(), format!("{:?}", a.limits.max_grid)),
            (
                "copy engines, ECC, watchdog".into(),
                format!(
                    "{}, {}, {}",
                    a.copy_engines,
                    if a.ecc { "on" } else { "off" },
                    if a.watchdog { "on" } else { "off" }
                ),
            ),
            (
                "driver".into(),
                format!("CUDA {major}.{minor} ({})", self.driver_version),
            ),
        ];
        match nvrtc_info() {
            Some(((ma, mi), _)) => rows.push(("NVRTC".into(), format!("{ma}.{mi}"))),
            None => rows.push(("NVRTC".into(), "not found".into())),
        }
        let code = match self.image_choice(None) {
            ImageChoice::Cubin { arch } => format!("CUBIN for {arch}"),
            ImageChoice::Ptx { arch, why } => format!("PTX for {arch}, JIT-compiled ({why})"),
            ImageChoice::Unusable(why) => format!("none usable: {why}"),
        };
        rows.push(("%%cuda code".into(), code));
        if let Some(why) = self.lost_reason() {
            rows.push((
                "state".into(),
                format!("context lost to a device fault ({why}); %reset rebuilds it"),
            ));
        }
        DeviceDescription {
            backend: "cuda",
            name: g.name.clone(),
            rows,
            limits: a.limits.clone(),
            peak_bandwidth_gbs: Some(g.peak_bandwidth_gbs),
        }
    }
}
