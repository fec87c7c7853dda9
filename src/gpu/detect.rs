//! GPU detection: which CUDA devices the driver offers, and their headline figures.
//!
//! Used by `nbcuda doctor`, `%device` and the choice of backend at Jupyter kernel start. It only
//! queries the driver (cuInit + device attributes); it creates no context and allocates nothing.
//! cudarc panics when `libcuda.so` is missing, so this module checks for the library first, and
//! it catches any panic from the driver bindings: it never panics, it returns `Err` with the reason.

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys::{self, CUdevice_attribute as Attr};

/// One CUDA device as the driver reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuInfo {
    pub ordinal: usize,
    pub name: String,
    /// (major, minor), e.g. (9, 0) for an H100/H200.
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors.
    pub sms: u32,
    pub memory_bytes: u64,
    /// Peak SM clock.
    pub clock_mhz: u32,
    /// Peak memory clock.
    pub memory_clock_mhz: u32,
    pub bus_width_bits: u32,
    /// Theoretical DRAM bandwidth: 2 (double data rate) × memory clock × bus width / 8.
    pub peak_bandwidth_gbs: f64,
}

impl GpuInfo {
    /// `sm_XY` for NVRTC's `--gpu-architecture`.
    pub fn arch(&self) -> String {
        format!(
            "sm_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }
}

/// Every CUDA device, or why there is none: `"libcuda.so not found …"`, `"no CUDA device"`, or
/// the driver error.
pub fn detect_gpus() -> Result<Vec<GpuInfo>, String> {
    // SAFETY: only probes whether the driver library can be opened.
    if !unsafe { sys::is_culib_present() } {
        return Err("libcuda.so not found (no NVIDIA driver on this machine)".to_string());
    }
    match std::panic::catch_unwind(query_devices) {
        Ok(result) => result,
        Err(_) => Err("the CUDA driver library is missing a required function".to_string()),
    }
}

fn query_devices() -> Result<Vec<GpuInfo>, String> {
    result::init().map_err(|e| driver_error("cuInit", e))?;
    let count = result::device::get_count().map_err(|e| driver_error("cuDeviceGetCount", e))?;
    if count <= 0 {
        return Err("no CUDA device".to_string());
    }
    (0..count).map(query_device).collect()
}

fn query_device(ordinal: i32) -> Result<GpuInfo, String> {
    let dev = result::device::get(ordinal).map_err(|e| driver_error("cuDeviceGet", e))?;
    let name = result::device::get_name(dev).map_err(|e| driver_error("cuDeviceGetName", e))?;
    // SAFETY: `dev` was returned by cuDeviceGet.
    let memory_bytes = unsafe { result::device::total_mem(dev) }
        .map_err(|e| driver_error("cuDeviceTotalMem", e))?;
    let attr = |a: Attr| -> Result<i32, String> {
        // SAFETY: `dev` was returned by cuDeviceGet.
        unsafe { result::device::get_attribute(dev, a) }
            .map_err(|e| driver_error("cuDeviceGetAttribute", e))
    };
    let major = attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    let sms = attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
    // Clocks are reported in kHz.
    let clock_khz = attr(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?;
    let mem_clock_khz = attr(Attr::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?;
    let bus_width_bits = attr(Attr::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?;
    Ok(GpuInfo {
        ordinal: usize::try_from(ordinal).unwrap_or_default(),
        name,
        compute_capability: (major, minor),
        sms: non_negative(sms),
        memory_bytes: memory_bytes as u64,
        clock_mhz: non_negative(clock_khz) / 1000,
        memory_clock_mhz: non_negative(mem_clock_khz) / 1000,
        bus_width_bits: non_negative(bus_width_bits),
        peak_bandwidth_gbs: peak_bandwidth_gbs(
            non_negative(mem_clock_khz),
            non_negative(bus_width_bits),
        ),
    })
}

/// Theoretical DRAM bandwidth in GB/s from the memory clock (kHz) and bus width (bits).
pub fn peak_bandwidth_gbs(memory_clock_khz: u32, bus_width_bits: u32) -> f64 {
    2.0 * f64::from(memory_clock_khz) * 1e3 * f64::from(bus_width_bits) / 8.0 / 1e9
}

fn non_negative(v: i32) -> u32 {
    u32::try_from(v).unwrap_or(0)
}

fn driver_error(call: &str, e: DriverError) -> String {
    let text = e.error_string().map(|s| s.to_string_lossy().into_owned());
    match (e.0, text) {
        (sys::CUresult::CUDA_ERROR_NO_DEVICE, _) => "no CUDA device".to_string(),
        (code, Ok(text)) => format!("{call} failed: {code:?} ({text})"),
        (code, Err(_)) => format!("{call} failed: {code:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_never_panics_and_explains_itself() {
        match detect_gpus() {
            Ok(gpus) => {
                assert!(!gpus.is_empty(), "Ok must hold at least one device");
                for (i, g) in gpus.iter().enumerate() {
                    assert_eq!(g.ordinal, i);
                    assert!(!g.name.is_empty());
                    assert!(g.compute_capability.0 >= 3, "{g:?}");
                    assert!(g.sms > 0 && g.memory_bytes > 0, "{g:?}");
                    assert!(g.peak_bandwidth_gbs > 0.0, "{g:?}");
                }
            }
            Err(reason) => {
                // Without a driver (CI, this machine) the reason must say which library is missing.
                // SAFETY: probe only.
                if !unsafe { sys::is_culib_present() } {
                    assert!(reason.contains("libcuda"), "{reason}");
                } else {
                    assert!(!reason.is_empty());
                }
            }
        }
    }

    #[test]
    fn peak_bandwidth_matches_the_datasheet_formula() {
        // H100 SXM: HBM3, 2619 MHz memory clock reported, 5120-bit bus → about 3.35 TB/s.
        let gbs = peak_bandwidth_gbs(2_619_000, 5120);
        assert!((gbs - 3352.3).abs() < 1.0, "{gbs}");
        // RTX 3090: 9751 MHz, 384-bit → about 936 GB/s.
        let gbs = peak_bandwidth_gbs(9_751_000, 384);
        assert!((gbs - 936.1).abs() < 1.0, "{gbs}");
    }
}
