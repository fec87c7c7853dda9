//! Which code NVRTC should produce for a GPU: a CUBIN for the device's architecture (loaded as
//! is, no JIT), or PTX that the driver JIT-compiles, or nothing usable — decided from recorded
//! figures only (compute capability, driver version, NVRTC version, NVRTC's architectures), so
//! every rule is unit-tested without a GPU.
//!
//! The rules (CUDA's compatibility guarantees):
//! - A CUBIN for `sm_XY` runs on devices of the same major `X` with minor ≥ `Y`; arch-specific
//!   variants (`sm_90a`) only on exactly that architecture.
//! - A CUBIN from NVRTC `M.m` loads on any driver of major ≥ `M` (minor-version compatibility).
//! - PTX from NVRTC `M.m` carries a PTX ISA version that only a driver of CUDA ≥ `M.m` can
//!   JIT-compile: an older driver fails with `CUDA_ERROR_UNSUPPORTED_PTX_VERSION`.
//!
//! This module performs no I/O and never touches the driver.

/// What to compile for the device.
#[derive(Debug, Clone, PartialEq)]
pub enum ImageChoice {
    /// `-arch=sm_XY`, CUBIN loaded directly.
    Cubin { arch: String },
    /// `-arch=compute_XY`, PTX JIT-compiled by the driver; `why` says why not a CUBIN.
    Ptx { arch: String, why: String },
    /// Nothing this NVRTC produces can run here; the message says what to change.
    Unusable(String),
}

/// A driver version as `cuDriverGetVersion` reports it (e.g. 12020) → (12, 2).
pub fn driver_cuda_version(v: i32) -> (i32, i32) {
    (v / 1000, (v % 1000) / 10)
}

/// The newest PTX ISA that CUDA `major.minor` (toolkit or driver) handles, where known.
pub fn ptx_isa_of_cuda(major: i32, minor: i32) -> Option<(u32, u32)> {
    let isa = match (major, minor) {
        (10, 0) => (6, 3),
        (10, 1) => (6, 4),
        (10, 2) => (6, 5),
        (11, m @ 0..=8) => (7, m as u32),
        (12, m @ 0..=5) => (8, m as u32),
        (12, 6) => (8, 5),
        (12, 7) => (8, 6),
        (12, 8) => (8, 7),
        (12, 9) => (8, 8),
        (13, 0) => (9, 0),
        _ => return None,
    };
    Some(isa)
}

/// The `.version X.Y` of a PTX text.
pub fn ptx_isa_of(ptx: &str) -> Option<(u32, u32)> {
    let line = ptx
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(".version"))?;
    let v = line.trim_start_matches(".version").trim();
    let (a, b) = v.split_once('.')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

/// `sm_90a` → (90, "a"); `compute_86` → (86, ""); anything else → None.
fn parse_arch(arch: &str) -> Option<(i32, String)> {
    let rest = arch
        .strip_prefix("sm_")
        .or_else(|| arch.strip_prefix("compute_"))?;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let suffix = rest[digits.len()..].to_string();
    if digits.is_empty() || !suffix.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    Some((digits.parse().ok()?, suffix))
}

/// Whether code for architecture `code` (e.g. 86) runs on a device of architecture `dev`
/// as a CUBIN (same major, minor not above the device's).
fn cubin_runs_on(code: i32, suffix: &str, dev: i32) -> bool {
    if !suffix.is_empty() {
        return code == dev;
    }
    code / 10 == dev / 10 && code <= dev
}

/// The message for a driver too old to JIT-compile NVRTC's PTX, or None when it is new enough.
/// `ptx_isa` is the `.version` of the PTX when known.
pub fn driver_too_old_for_ptx(
    driver_version: i32,
    nvrtc: (i32, i32),
    ptx_isa: Option<(u32, u32)>,
) -> Option<String> {
    let drv = driver_cuda_version(driver_version);
    if drv >= nvrtc {
        return None;
    }
    let isa = ptx_isa.or_else(|| ptx_isa_of_cuda(nvrtc.0, nvrtc.1));
    let drv_isa = ptx_isa_of_cuda(drv.0, drv.1);
    let isa_text = match isa {
        Some((a, b)) => format!("PTX ISA {a}.{b}"),
        None => "its PTX".to_string(),
    };
    let drv_text = match drv_isa {
        Some((a, b)) => format!(" (PTX ISA up to {a}.{b})"),
        None => String::new(),
    };
    Some(format!(
        "the NVIDIA driver supports CUDA {}.{}{drv_text}, older than NVRTC {}.{}, whose \
         {isa_text} it cannot JIT-compile: update the driver, or use an NVRTC no newer than the \
         driver (pip install 'nvidia-cuda-nvrtc-cu12=={}.{}.*' and point NBCUDA_NVRTC at its \
         libnvrtc.so.12)",
        drv.0, drv.1, nvrtc.0, nvrtc.1, drv.0, drv.1
    ))
}

/// Chooses what NVRTC should produce for a device of compute capability `cc` on a driver of
/// `driver_version` (`cuDriverGetVersion`), with NVRTC `nvrtc` supporting `nvrtc_archs` (e.g.
/// `[50, 52, …, 90, 100, 120]`; empty: unknown, assume the device's is supported).
/// `requested` is the cell's `--arch` (`sm_XY` or `compute_XY`); `force_ptx` says why a CUBIN
/// must not be used (the driver refused one, or `NBCUDA_GPU_CODE=ptx`).
pub fn choose_image(
    cc: (i32, i32),
    driver_version: i32,
    nvrtc: (i32, i32),
    nvrtc_archs: &[i32],
    requested: Option<&str>,
    force_ptx: Option<&str>,
) -> ImageChoice {
    let dev = cc.0 * 10 + cc.1;
    let drv = driver_cuda_version(driver_version);
    let supported = |a: i32| nvrtc_archs.is_empty() || nvrtc_archs.contains(&a);
    if drv.0 < nvrtc.0 {
        return ImageChoice::Unusable(format!(
            "the NVIDIA driver supports CUDA {}.{}, but NVRTC is {}.{} (a newer major version): \
             neither its CUBIN nor its PTX can run on this driver. Update the driver, or install \
             an NVRTC of CUDA {}.x and point NBCUDA_NVRTC at it",
            drv.0, drv.1, nvrtc.0, nvrtc.1, drv.0
        ));
    }
    let ptx = |arch: i32, why: String| -> ImageChoice {
        match driver_too_old_for_ptx(driver_version, nvrtc, None) {
            Some(old) => ImageChoice::Unusable(format!("{why}, so it needs PTX; but {old}")),
            None => ImageChoice::Ptx {
                arch: format!("compute_{arch}"),
                why,
            },
        }
    };
    if let Some(req) = requested {
        let Some((code, suffix)) = parse_arch(req) else {
            return ImageChoice::Unusable(format!("--arch {req}: expected sm_XY (e.g. sm_80)"));
        };
        let is_virtual = req.starts_with("compute_");
        if !is_virtual && cubin_runs_on(code, &suffix, dev) && supported(code) {
            return match force_ptx {
                None => ImageChoice::Cubin {
                    arch: format!("sm_{code}{suffix}"),
                },
                Some(why) => ptx(code, why.to_string()),
            };
        }
        if code > dev {
            return ImageChoice::Unusable(format!(
                "--arch {req}: this GPU is sm_{dev}, which cannot run code for the newer sm_{code}"
            ));
        }
        if !supported(code) {
            return ImageChoice::Unusable(format!(
                "--arch {req}: NVRTC {}.{} does not compile for {code} (it supports {})",
                nvrtc.0,
                nvrtc.1,
                archs_text(nvrtc_archs)
            ));
        }
        let why = if is_virtual {
            format!("--arch {req} asks for PTX")
        } else {
            format!("a CUBIN for sm_{code}{suffix} does not run on this sm_{dev} GPU")
        };
        return ptx(code, why);
    }
    if supported(dev) {
        return match force_ptx {
            None => ImageChoice::Cubin {
                arch: format!("sm_{dev}"),
            },
            Some(why) => ptx(dev, why.to_string()),
        };
    }
    // The device is newer than this NVRTC knows (PTX of an older architecture runs on it through
    // the JIT), or older than it supports (nothing runs).
    match nvrtc_archs.iter().copied().filter(|a| *a <= dev).max() {
        Some(best) => ptx(
            best,
            format!(
                "NVRTC {}.{} does not know this sm_{dev} GPU (newest it knows at or below: \
                 sm_{best})",
                nvrtc.0, nvrtc.1
            ),
        ),
        None => ImageChoice::Unusable(format!(
            "NVRTC {}.{} cannot compile for this sm_{dev} GPU (it supports {}): install an older \
             NVRTC and point NBCUDA_NVRTC at it",
            nvrtc.0,
            nvrtc.1,
            archs_text(nvrtc_archs)
        )),
    }
}

fn archs_text(archs: &[i32]) -> String {
    match (archs.first(), archs.last()) {
        (Some(a), Some(b)) => format!("sm_{a} to sm_{b}"),
        _ => "an unknown set of architectures".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NVRTC 12.9's `nvrtcGetSupportedArchs`, as recorded on this machine.
    const NVRTC_129: &[i32] = &[
        50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 120, 121,
    ];
    /// NVRTC 12.4's list (no Blackwell).
    const NVRTC_124: &[i32] = &[50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90];

    #[test]
    fn cubin_for_the_device_when_nvrtc_knows_it() {
        // H200 on a 12.2 driver with NVRTC 12.9: minor-version compatibility lets the CUBIN run.
        let c = choose_image((9, 0), 12020, (12, 9), NVRTC_129, None, None);
        assert_eq!(
            c,
            ImageChoice::Cubin {
                arch: "sm_90".into()
            }
        );
        let c = choose_image((8, 6), 13000, (12, 9), NVRTC_129, None, None);
        assert_eq!(
            c,
            ImageChoice::Cubin {
                arch: "sm_86".into()
            }
        );
    }

    #[test]
    fn forced_ptx_on_an_old_driver_says_the_driver_is_too_old() {
        let c = choose_image(
            (9, 0),
            12020,
            (12, 9),
            NVRTC_129,
            None,
            Some("the driver refused the CUBIN"),
        );
        let ImageChoice::Unusable(m) = c else {
            panic!("{c:?}")
        };
        assert!(m.contains("CUDA 12.2"), "{m}");
        assert!(m.contains("PTX ISA up to 8.2"), "{m}");
        assert!(m.contains("NVRTC 12.9"), "{m}");
        assert!(m.contains("PTX ISA 8.8"), "{m}");
        assert!(m.contains("nvidia-cuda-nvrtc-cu12==12.2.*"), "{m}");
        // The same on a new enough driver: PTX for the device's own architecture.
        let c = choose_image((9, 0), 12090, (12, 9), NVRTC_129, None, Some("forced"));
        assert_eq!(
            c,
            ImageChoice::Ptx {
                arch: "compute_90".into(),
                why: "forced".into()
            }
        );
    }

    #[test]
    fn device_newer_than_nvrtc_gets_ptx_of_the_newest_known_arch() {
        // An RTX 5090 (sm_120) with NVRTC 12.4 on a 12.8 driver: compute_90 PTX, JIT-compiled.
        let c = choose_image((12, 0), 12080, (12, 4), NVRTC_124, None, None);
        let ImageChoice::Ptx { arch, why } = c else {
            panic!("{c:?}")
        };
        assert_eq!(arch, "compute_90");
        assert!(why.contains("sm_120") && why.contains("12.4"), "{why}");
        // …but a driver older than that NVRTC cannot JIT its PTX.
        let c = choose_image((12, 0), 12030, (12, 4), NVRTC_124, None, None);
        let ImageChoice::Unusable(m) = c else {
            panic!("{c:?}")
        };
        assert!(m.contains("sm_120") && m.contains("CUDA 12.3"), "{m}");
    }

    #[test]
    fn device_too_old_or_driver_of_an_older_major_is_unusable() {
        let c = choose_image((3, 5), 12090, (12, 9), NVRTC_129, None, None);
        let ImageChoice::Unusable(m) = c else {
            panic!("{c:?}")
        };
        assert!(m.contains("sm_35") && m.contains("sm_50 to sm_121"), "{m}");
        let c = choose_image((8, 0), 11080, (12, 9), NVRTC_129, None, None);
        let ImageChoice::Unusable(m) = c else {
            panic!("{c:?}")
        };
        assert!(m.contains("CUDA 11.8") && m.contains("newer major"), "{m}");
    }

    #[test]
    fn requested_arch_is_honoured_when_it_can_run() {
        // sm_80 code runs on sm_86 as a CUBIN.
        let c = choose_image((8, 6), 12090, (12, 9), NVRTC_129, Some("sm_80"), None);
        assert_eq!(
            c,
            ImageChoice::Cubin {
                arch: "sm_80".into()
            }
        );
        // sm_80 on sm_90: different major, so PTX for compute_80.
        let c = choose_image((9, 0), 12090, (12, 9), NVRTC_129, Some("sm_80"), None);
        assert!(
            matches!(&c, ImageChoice::Ptx { arch, .. } if arch == "compute_80"),
            "{c:?}"
        );
        // sm_90a only on sm_90 itself.
        let c = choose_image((9, 0), 12090, (12, 9), &[], Some("sm_90a"), None);
        assert_eq!(
            c,
            ImageChoice::Cubin {
                arch: "sm_90a".into()
            }
        );
        // A newer architecture than the device's cannot run.
        let c = choose_image((8, 0), 12090, (12, 9), NVRTC_129, Some("sm_90"), None);
        assert!(
            matches!(&c, ImageChoice::Unusable(m) if m.contains("sm_80") && m.contains("sm_90")),
            "{c:?}"
        );
        let c = choose_image((8, 0), 12090, (12, 9), NVRTC_129, Some("compute_75"), None);
        assert!(
            matches!(&c, ImageChoice::Ptx { arch, .. } if arch == "compute_75"),
            "{c:?}"
        );
        let c = choose_image((8, 0), 12090, (12, 9), NVRTC_129, Some("sm_x"), None);
        assert!(matches!(c, ImageChoice::Unusable(_)), "{c:?}");
    }

    #[test]
    fn versions_and_ptx_isa() {
        assert_eq!(driver_cuda_version(12020), (12, 2));
        assert_eq!(driver_cuda_version(11080), (11, 8));
        assert_eq!(ptx_isa_of_cuda(12, 9), Some((8, 8)));
        assert_eq!(ptx_isa_of_cuda(11, 4), Some((7, 4)));
        assert_eq!(ptx_isa_of_cuda(99, 0), None);
        assert_eq!(
            ptx_isa_of("//\n.version 8.8\n.target sm_90\n"),
            Some((8, 8))
        );
        assert_eq!(ptx_isa_of(".target sm_90\n"), None);
        assert_eq!(driver_too_old_for_ptx(12090, (12, 9), None), None);
        assert_eq!(driver_too_old_for_ptx(13000, (12, 9), None), None);
        let m = driver_too_old_for_ptx(12040, (12, 9), Some((8, 8))).unwrap_or_default();
        assert!(
            m.contains("CUDA 12.4") && m.contains("8.4") && m.contains("8.8"),
            "{m}"
        );
    }
}
