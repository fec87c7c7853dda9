//! Small helpers around the CUDA driver for the GPU backend: the list of driver entry points the
//! backend calls (checked up front, because cudarc panics on a missing symbol), driver error
//! text, which errors are sticky (the context is lost), and the kernel names inside a CUBIN.
//!
//! Everything here except [`missing_symbols`] and [`error_text`] is pure and unit-tested; none of
//! it allocates device memory or creates contexts.

use cudarc::driver::result::DriverError;
use cudarc::driver::sys::CUresult;

/// Every driver function the GPU backend (and detection) calls, by the symbol cudarc loads.
pub const REQUIRED_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGet",
    "cuDeviceGetCount",
    "cuDeviceGetName",
    "cuDeviceTotalMem_v2",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuDevicePrimaryCtxReset_v2",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuCtxSetLimit",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemGetInfo_v2",
    "cuMemcpyHtoD_v2",
    "cuMemcpyDtoH_v2",
    "cuMemcpyDtoD_v2",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuModuleLoadData",
    "cuModuleLoadDataEx",
    "cuModuleUnload",
    "cuModuleGetFunction",
    "cuModuleGetGlobal_v2",
    "cuFuncGetAttribute",
    "cuFuncSetAttribute",
    "cuOccupancyMaxActiveBlocksPerMultiprocessor",
    "cuOccupancyMaxPotentialBlockSize",
    "cuLaunchKernel",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventQuery",
    "cuEventSynchronize",
    "cuEventElapsedTime",
    "cuEventDestroy_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuMemAllocManaged",
    "cuMemPrefetchAsync",
    "cuStreamBeginCapture_v2",
    "cuStreamEndCapture",
    "cuGraphInstantiateWithFlags",
    "cuGraphLaunch",
    "cuGraphExecDestroy",
    "cuGraphDestroy",
    "cuGetErrorName",
    "cuGetErrorString",
];

/// The required driver symbols that `libcuda` lacks (all of them when it cannot be opened).
pub fn missing_symbols() -> Vec<&'static str> {
    // SAFETY: only probes whether the library can be opened.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return REQUIRED_SYMBOLS.to_vec();
    }
    // SAFETY: the library is present (checked above), so culib() opens it without panicking;
    // `get` only looks a symbol up.
    let lib = unsafe { cudarc::driver::sys::culib() };
    REQUIRED_SYMBOLS
        .iter()
        .copied()
        .filter(|name| unsafe { lib.get::<unsafe extern "C" fn()>(name.as_bytes()) }.is_err())
        .collect()
}

/// `CUDA_ERROR_ILLEGAL_ADDRESS` for a code (no driver call).
pub fn error_name(code: CUresult) -> String {
    format!("{code:?}")
}

/// `cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)`, asking the driver for its wording.
pub fn error_text(call: &str, e: DriverError) -> String {
    let text = e.error_string().map(|s| s.to_string_lossy().into_owned());
    match text {
        Ok(t) => format!("{call}: {} ({t})", error_name(e.0)),
        Err(_) => format!("{call}: {}", error_name(e.0)),
    }
}

/// Whether an error leaves the context unusable until it is rebuilt ("sticky" errors: every
/// later call of the process on this context fails with the same code).
pub fn is_sticky(code: CUresult) -> bool {
    matches!(
        code,
        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS
            | CUresult::CUDA_ERROR_LAUNCH_TIMEOUT
            | CUresult::CUDA_ERROR_LAUNCH_FAILED
            | CUresult::CUDA_ERROR_ASSERT
            | CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUresult::CUDA_ERROR_MISALIGNED_ADDRESS
            | CUresult::CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUresult::CUDA_ERROR_INVALID_PC
            | CUresult::CUDA_ERROR_ECC_UNCORRECTABLE
            | CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED
    )
}

/// What a device fault means, in words, e.g. "illegal memory access (CUDA_ERROR_ILLEGAL_ADDRESS)".
pub fn fault_words(code: CUresult) -> String {
    let words = match code {
        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS => "illegal memory access",
        CUresult::CUDA_ERROR_MISALIGNED_ADDRESS => "misaligned memory access",
        CUresult::CUDA_ERROR_INVALID_ADDRESS_SPACE => "memory access in the wrong address space",
        CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION => "illegal instruction",
        CUresult::CUDA_ERROR_INVALID_PC => "jump to an invalid program counter",
        CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR => "call stack overflow or corruption",
        CUresult::CUDA_ERROR_ASSERT => "device-side assert triggered",
        CUresult::CUDA_ERROR_LAUNCH_TIMEOUT => "the CUDA kernel ran into the display watchdog",
        CUresult::CUDA_ERROR_LAUNCH_FAILED => "launch failure (the CUDA kernel faulted)",
        CUresult::CUDA_ERROR_ECC_UNCORRECTABLE => "uncorrectable ECC memory error",
        CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES => {
            "too many resources requested for the launch (registers × threads per block exceed \
             what one SM has: use smaller blocks)"
        }
        _ => "CUDA error",
    };
    format!("{words} ({})", error_name(code))
}

/// Names of the functions in a CUBIN (ELF64 little-endian): every `.text.NAME` section. Kernels
/// are among them (a device function that was not inlined may be too; `cuModuleGetFunction`
/// tells them apart). Malformed input gives an empty list, never a panic.
pub fn cubin_function_names(elf: &[u8]) -> Vec<String> {
    fn u16_at(b: &[u8], at: usize) -> Option<usize> {
        Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?) as usize)
    }
    fn u32_at(b: &[u8], at: usize) -> Option<usize> {
        Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?) as usize)
    }
    fn u64_at(b: &[u8], at: usize) -> Option<usize> {
        usize::try_from(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?)).ok()
    }
    let parse = || -> Option<Vec<String>> {
        // ELF magic, 64-bit class, little-endian.
        if elf.get(0..4)? != b"\x7fELF" || *elf.get(4)? != 2 || *elf.get(5)? != 1 {
            return None;
        }
        let shoff = u64_at(elf, 0x28)?;
        let shentsize = u16_at(elf, 0x3A)?;
        let shnum = u16_at(elf, 0x3C)?;
        let shstrndx = u16_at(elf, 0x3E)?;
        if shentsize < 64 || shstrndx >= shnum {
            return None;
        }
        let header = |i: usize| shoff.checked_add(i.checked_mul(shentsize)?);
        let strtab_hdr = header(shstrndx)?;
        let str_off = u64_at(elf, strtab_hdr + 0x18)?;
        let str_size = u64_at(elf, strtab_hdr + 0x20)?;
        let strtab = elf.get(str_off..str_off.checked_add(str_size)?)?;
        let mut names = Vec::new();
        for i in 0..shnum {
            let h = header(i)?;
            let name_off = u32_at(elf, h)?;
            let Some(rest) = strtab.get(name_off..) else {
                continue;
            };
            let end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
            let name = String::from_utf8_lossy(&rest[..end]);
            if let Some(f) = name.strip_prefix(".text.") {
                if !f.is_empty() && !names.iter().any(|n: &String| n == f) {
                    names.push(f.to_string());
                }
            }
        }
        Some(names)
    };
    parse().unwrap_or_default()
}

/// Whether a module image calls device `printf` (PTX text or CUBIN bytes mention `vprintf`).
pub fn uses_printf(image: &[u8]) -> bool {
    image.windows(7).any(|w| w == b"vprintf")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::nvrtc;

    #[test]
    fn sticky_faults_are_told_apart_from_launch_errors() {
        assert!(is_sticky(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS));
        assert!(is_sticky(CUresult::CUDA_ERROR_LAUNCH_FAILED));
        assert!(is_sticky(CUresult::CUDA_ERROR_MISALIGNED_ADDRESS));
        assert!(!is_sticky(CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
        assert!(!is_sticky(CUresult::CUDA_ERROR_INVALID_VALUE));
        assert!(!is_sticky(CUresult::CUDA_ERROR_OUT_OF_MEMORY));
        assert_eq!(
            fault_words(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS),
            "illegal memory access (CUDA_ERROR_ILLEGAL_ADDRESS)"
        );
    }

    #[test]
    fn every_required_symbol_is_missing_without_libcuda() {
        let missing = missing_symbols();
        // SAFETY: probe only.
        if unsafe { cudarc::driver::sys::is_culib_present() } {
            assert!(missing.is_empty(), "this driver lacks {missing:?}");
        } else {
            assert_eq!(missing.len(), REQUIRED_SYMBOLS.len());
        }
    }

    #[test]
    fn kernel_names_from_nvrtc_cubin_and_ptx() {
        if !crate::compile::tests::nvrtc_available() {
            return;
        }
        let src = "extern \"C\" __global__ void first(float* a) { a[threadIdx.x] += 1.0f; }\n\
                   __device__ __noinline__ float twice(float x) { return 2.0f * x; }\n\
                   __global__ void second(float* a, int n) { if (threadIdx.x < n) \
                   a[threadIdx.x] = twice(a[threadIdx.x]); printf(\"%d\\n\", n); }\n";
        let opts = vec!["-arch=sm_80".to_string()];
        let out = nvrtc::compile(src, "t.cu", &opts, &["&second".to_string()], &[], true);
        let out = match out {
            Ok(o) => o,
            Err(e) => panic!("{e:?}"),
        };
        let cubin = out.cubin.unwrap_or_default();
        let names = cubin_function_names(&cubin);
        let lowered = out.lowered[0].1.clone();
        assert!(names.contains(&"first".to_string()), "{names:?}");
        assert!(names.contains(&lowered), "{names:?} lacks {lowered}");
        let entries: Vec<String> = ptxsim::ptx_entries(&out.ptx)
            .unwrap_or_default()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(entries.len(), 2, "{entries:?}");
        assert!(entries.contains(&"first".to_string()) && entries.contains(&lowered));
        assert!(uses_printf(&cubin) && uses_printf(out.ptx.as_bytes()));
        // Truncated or corrupted images give no names rather than a panic.
        for cut in [0, 3, 16, 64, cubin.len() / 2] {
            let _ = cubin_function_names(&cubin[..cut]);
        }
        let mut bad = cubin.clone();
        for b in bad.iter_mut().skip(0x28).take(8) {
            *b = 0xff;
        }
        assert!(cubin_function_names(&bad).is_empty());
        let no_printf = nvrtc::compile(
            "extern \"C\" __global__ void k(){}",
            "u.cu",
            &opts,
            &[],
            &[],
            true,
        );
        let no_printf = no_printf
            .map(|o| o.cubin.unwrap_or_default())
            .unwrap_or_default();
        assert!(!no_printf.is_empty() && !uses_printf(&no_printf));
    }
}
