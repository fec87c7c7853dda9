//! `gpu_bench --reset-probe N`: plants an illegal address on the GPU, then tries recovery
//! strategy N on the primary context and checks that the device works again (allocate, load a
//! module, launch, synchronise). Each strategy runs in its own process (a sticky fault cannot be
//! undone in-process by a strategy that fails), so `scripts/gpu-check.sh` runs N = 1..=5 and
//! prints which work on the machine's driver.

use cudarc::driver::sys::{self, CUresult};
use std::ffi::{c_void, CString};

const SRC: &str = "extern \"C\" __global__ void poke(float* a, long long off) { a[off] = 1.0f; }\n\
                   extern \"C\" __global__ void fill(float* a) { a[threadIdx.x] = 2.0f; }\n";

fn ck(what: &str, r: CUresult) -> Result<(), String> {
    if r == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what}: {r:?}"))
    }
}

fn say(what: &str, r: CUresult) -> CUresult {
    println!("  {what}: {r:?}");
    r
}

/// Loads the module, launches `poke` (offset `off`) or `fill` and synchronises.
unsafe fn work(cubin: &[u8], kernel: &str, ptr: sys::CUdeviceptr, off: i64) -> CUresult {
    let mut m: sys::CUmodule = std::ptr::null_mut();
    let r = sys::cuModuleLoadData(&mut m, cubin.as_ptr().cast());
    if r != CUresult::CUDA_SUCCESS {
        return r;
    }
    let mut f: sys::CUfunction = std::ptr::null_mut();
    let Ok(name) = CString::new(kernel) else {
        return CUresult::CUDA_ERROR_INVALID_VALUE;
    };
    let r = sys::cuModuleGetFunction(&mut f, m, name.as_ptr());
    if r != CUresult::CUDA_SUCCESS {
        return r;
    }
    let mut p = ptr;
    let mut o = off;
    let mut params: Vec<*mut c_void> =
        vec![(&mut p as *mut u64).cast(), (&mut o as *mut i64).cast()];
    let r = sys::cuLaunchKernel(
        f,
        1,
        1,
        1,
        32,
        1,
        1,
        0,
        std::ptr::null_mut(),
        params.as_mut_ptr(),
        std::ptr::null_mut(),
    );
    if r != CUresult::CUDA_SUCCESS {
        return r;
    }
    sys::cuCtxSynchronize()
}

pub fn run(strategy: u32) -> Result<(), String> {
    let cubin = super::cubin_for_gpu0(SRC)?;
    // SAFETY: raw driver calls on device 0's primary context, in this thread only.
    unsafe {
        let mut dev: sys::CUdevice = 0;
        ck("cuDeviceGet", sys::cuDeviceGet(&mut dev, 0))?;
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        ck("retain", sys::cuDevicePrimaryCtxRetain(&mut ctx, dev))?;
        ck("set current", sys::cuCtxSetCurrent(ctx))?;
        let mut ptr: sys::CUdeviceptr = 0;
        ck("alloc", sys::cuMemAlloc_v2(&mut ptr, 4096))?;
        let r = work(&cubin, "poke", ptr, 1 << 40);
        println!("strategy {strategy}: the planted fault gave {r:?}");
        let mut new_ctx: sys::CUcontext = std::ptr::null_mut();
        match strategy {
            1 => {
                say("release", sys::cuDevicePrimaryCtxRelease_v2(dev));
                say("reset", sys::cuDevicePrimaryCtxReset_v2(dev));
                say("retain", sys::cuDevicePrimaryCtxRetain(&mut new_ctx, dev));
                say("set current", sys::cuCtxSetCurrent(new_ctx));
            }
            2 => {
                say(
                    "set current NULL",
                    sys::cuCtxSetCurrent(std::ptr::null_mut()),
                );
                say("release", sys::cuDevicePrimaryCtxRelease_v2(dev));
                say("reset", sys::cuDevicePrimaryCtxReset_v2(dev));
                say("retain", sys::cuDevicePrimaryCtxRetain(&mut new_ctx, dev));
                say("set current", sys::cuCtxSetCurrent(new_ctx));
            }
            3 => {
                say("reset", sys::cuDevicePrimaryCtxReset_v2(dev));
                say("retain", sys::cuDevicePrimaryCtxRetain(&mut new_ctx, dev));
                say("set current", sys::cuCtxSetCurrent(new_ctx));
                say(
                    "release the old reference",
                    sys::cuDevicePrimaryCtxRelease_v2(dev),
                );
            }
            4 => {
                say(
                    "set current NULL",
                    sys::cuCtxSetCurrent(std::ptr::null_mut()),
                );
                say("reset", sys::cuDevicePrimaryCtxReset_v2(dev));
                say("retain", sys::cuDevicePrimaryCtxRetain(&mut new_ctx, dev));
                say("set current", sys::cuCtxSetCurrent(new_ctx));
                say(
                    "release the old reference",
                    sys::cuDevicePrimaryCtxRelease_v2(dev),
                );
            }
            _ => {
                say(
                    "set current NULL",
                    sys::cuCtxSetCurrent(std::ptr::null_mut()),
                );
                say("release", sys::cuDevicePrimaryCtxRelease_v2(dev));
                say(
                    "cuCtxCreate (a non-primary context)",
                    sys::cuCtxCreate_v2(&mut new_ctx, 0, dev),
                );
            }
        }
        println!("  new context {new_ctx:?} (old {ctx:?})");
        let mut p2: sys::CUdeviceptr = 0;
        ck("alloc after recovery", sys::cuMemAlloc_v2(&mut p2, 4096))?;
        ck("launch after recovery", work(&cubin, "fill", p2, 0))?;
        let mut host = [0f32; 32];
        ck(
            "copy back",
            sys::cuMemcpyDtoH_v2(host.as_mut_ptr().cast(), p2, 128),
        )?;
        if host.iter().all(|&v| v == 2.0) {
            Ok(())
        } else {
            Err("the launch after recovery wrote wrong values".into())
        }
    }
}
