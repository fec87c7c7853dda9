//! Launches on the GPU: the call stack limit (`%limit stack`) set on the context when it
//! changes, parameters copied into aligned buffers, the default stream's synchronous
//! path (events around the launch, a wait that watches the interrupt flag, a context
//! synchronisation that flushes device printf into the capture, sticky faults recorded), and the
//! asynchronous path of named streams. A cooperative launch (`BackendLaunch::cooperative`) goes
//! through `cuLaunchCooperativeKernel` (the caller has checked its grid against the occupancy
//! API; the driver checks again). Part of the GPU backend; no array names or cells here.

use super::*;
use std::sync::Arc;

impl CudaBackend {
    /// Waits for `event`, polling so the interrupt flag is seen.
    fn wait(event: sys::CUevent, cancel: Option<&AtomicBool>) -> Result<(), Waited> {
        let start = Instant::now();
        loop {
            // SAFETY: a valid event of the current context.
            match unsafe { sys::cuEventQuery(event) } {
                CUresult::CUDA_SUCCESS => return Ok(()),
                CUresult::CUDA_ERROR_NOT_READY => {}
                other => return Err(Waited::Error(DriverError(other))),
            }
            if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                return Err(Waited::Interrupted);
            }
            let waited = start.elapsed();
            if waited < Duration::from_micros(100) {
                std::hint::spin_loop();
            } else if waited < Duration::from_millis(2) {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(200).min(waited / 20));
            }
        }
    }

    pub(super) fn launch_kernel(
        &mut self,
        module: ModuleId,
        kernel: &str,
        config: &BackendLaunch,
        params: &[&[u8]],
    ) -> Result<BackendReport, BackendLaunchError> {
        self.last_ms = None;
        self.usable()
            .map_err(|e| BackendLaunchError::Rejected(e.message))?;
        let f = self.prepare_function(module, kernel, config.shared_bytes, config.stack_bytes)?;
        let shared = config.shared_bytes;
        // Parameter values in 8-byte aligned storage; the driver copies each one at launch.
        let mut storage = aligned_params(params);
        let mut ptrs: Vec<*mut c_void> =
            storage.iter_mut().map(|v| v.as_mut_ptr().cast()).collect();
        let (g, b) = (config.grid, config.block);
        let cooperative = config.cooperative;
        let call = launch_call(cooperative);
        let stream = match config.stream {
            None => std::ptr::null_mut(),
            Some(id) => match self.streams.get(&id) {
                Some(s) => s.raw,
                None => {
                    return Err(BackendLaunchError::Rejected(format!("unknown stream {id}")));
                }
            },
        };
        let launch = |stream: sys::CUstream, ptrs: &mut [*mut c_void]| -> CUresult {
            let params = if ptrs.is_empty() {
                std::ptr::null_mut()
            } else {
                ptrs.as_mut_ptr()
            };
            // SAFETY: `f` belongs to a loaded module; `params` holds one pointer per parameter,
            // each to at least the parameter's size, alive for the call.
            unsafe {
                if cooperative {
                    sys::cuLaunchCooperativeKernel(
                        f, g.0, g.1, g.2, b.0, b.1, b.2, shared, stream, params,
                    )
                } else {
                    sys::cuLaunchKernel(
                        f,
                        g.0,
                        g.1,
                        g.2,
                        b.0,
                        b.1,
                        b.2,
                        shared,
                        stream,
                        params,
                        std::ptr::null_mut(),
                    )
                }
            }
        };
        let rejected = |code: CUresult| {
            BackendLaunchError::Rejected(match code {
                CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES => driver::fault_words(code),
                _ => driver::error_text(call, DriverError(code)),
            })
        };
        if let Some(id) = config.stream {
            // Asynchronous: faults and printf surface at %sync.
            let r = launch(stream, &mut ptrs);
            drop(storage);
            return match r {
                CUresult::CUDA_SUCCESS => {
                    if let Some(s) = self.streams.get_mut(&id) {
                        s.pending.push(kernel.to_string());
                    }
                    Ok(BackendReport::default())
                }
                code if is_sticky(code) => {
                    let words = driver::fault_words(code);
                    *self.lost.borrow_mut() = Some(words.clone());
                    Err(BackendLaunchError::Fault {
                        report: None,
                        message: words,
                        printf: String::new(),
                    })
                }
                code => Err(rejected(code)),
            };
        }
        let cancel = config.cancel.clone();
        let mut issue = || launch(std::ptr::null_mut(), &mut ptrs);
        let result = self.run_timed(call, &mut issue, cancel);
        drop(storage);
        result
    }

    /// The function `kernel` of `module`, ready to launch with `shared` bytes of dynamic shared
    /// memory (opted in above the default) and `stack_bytes` of call stack per thread (set on
    /// the context when it changes).
    pub(super) fn prepare_function(
        &mut self,
        module: ModuleId,
        kernel: &str,
        shared: u32,
        stack_bytes: u32,
    ) -> Result<sys::CUfunction, BackendLaunchError> {
        let Some(f) = self.function(module, kernel) else {
            return Err(BackendLaunchError::Rejected(format!(
                "no CUDA kernel `{kernel}` in module {module}"
            )));
        };
        // Dynamic shared memory above the default needs an opt-in per function.
        if shared > self.attrs.shared_default {
            let set = self
                .modules
                .get(&module)
                .and_then(|m| m.dyn_shared.get(kernel).copied())
                .unwrap_or(0);
            if shared > set {
                let v = i32::try_from(shared).unwrap_or(i32::MAX);
                // SAFETY: a function of a loaded module.
                let r = unsafe {
                    sys::cuFuncSetAttribute(
                        f,
                        FAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        v,
                    )
                };
                drv(r).map_err(|e| {
                    BackendLaunchError::Rejected(format!(
                        "{shared} bytes of dynamic shared memory: {}",
                        driver::error_text("cuFuncSetAttribute", e)
                    ))
                })?;
                if let Some(m) = self.modules.get_mut(&module) {
                    m.dyn_shared.insert(kernel.to_string(), shared);
                }
            }
        }
        // The call stack per thread (`%limit stack`), set on the context when it changes.
        if self.stack_set != Some(stack_bytes) {
            let bytes = stack_bytes;
            cudarc::driver::result::ctx::set_limit(
                sys::CUlimit::CU_LIMIT_STACK_SIZE,
                bytes as usize,
            )
            .map_err(|e| {
                BackendLaunchError::Rejected(format!(
                    "a call stack of {bytes} bytes per thread (%limit stack): {}",
                    driver::error_text("cuCtxSetLimit", e)
                ))
            })?;
            self.stack_set = Some(bytes);
        }
        Ok(f)
    }

    /// Issues work on the default stream (`issue` makes the driver call `call`) between the
    /// reused timing events, waits for it while watching `cancel`, synchronises the context
    /// (flushing device printf into the capture), and keeps the event time as `last_ms`.
    /// Sticky faults mark the context lost.
    pub(super) fn run_timed(
        &mut self,
        call: &str,
        issue: &mut dyn FnMut() -> CUresult,
        cancel: Option<Arc<AtomicBool>>,
    ) -> Result<BackendReport, BackendLaunchError> {
        self.last_ms = None;
        let rejected = |code: CUresult| {
            BackendLaunchError::Rejected(match code {
                CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES => driver::fault_words(code),
                _ => driver::error_text(call, DriverError(code)),
            })
        };
        let (start, end) = match self.timing {
            Some(t) => t,
            None => {
                let mut a = std::ptr::null_mut();
                let mut z = std::ptr::null_mut();
                // SAFETY: creates two events in the current context.
                let ok = unsafe {
                    drv(sys::cuEventCreate(&mut a, 0))
                        .and_then(|_| drv(sys::cuEventCreate(&mut z, 0)))
                };
                ok.map_err(|e| {
                    BackendLaunchError::Rejected(driver::error_text("cuEventCreate", e))
                })?;
                self.timing = Some((a, z));
                (a, z)
            }
        };
        let run = || -> Result<(), (Option<CUresult>, bool)> {
            // SAFETY: events of the current context on the default stream.
            unsafe { drv(sys::cuEventRecord(start, std::ptr::null_mut())) }
                .map_err(|e| (Some(e.0), false))?;
            let r = issue();
            if r != CUresult::CUDA_SUCCESS {
                return Err((Some(r), true));
            }
            // SAFETY: as above.
            unsafe { drv(sys::cuEventRecord(end, std::ptr::null_mut())) }
                .map_err(|e| (Some(e.0), false))?;
            match CudaBackend::wait(end, cancel.as_deref()) {
                Ok(()) => {}
                Err(Waited::Error(e)) => return Err((Some(e.0), false)),
                Err(Waited::Interrupted) => return Err((None, false)),
            }
            // Flushes device printf (and reports any error of the context).
            // SAFETY: the current context.
            unsafe { drv(sys::cuCtxSynchronize()) }.map_err(|e| (Some(e.0), false))
        };
        let (result, printf) = self.with_printf(run);
        match result {
            Ok(()) => {
                let mut ms: f32 = 0.0;
                // SAFETY: both events completed.
                if drv(unsafe { sys::cuEventElapsedTime(&mut ms, start, end) }).is_ok() {
                    self.last_ms = Some(f64::from(ms));
                }
                Ok(BackendReport {
                    printf,
                    findings: Vec::new(),
                    warp_instructions: None,
                    counters: None,
                    sim_workers: None,
                })
            }
            Err((None, _)) => {
                let why = "interrupted while a CUDA kernel was still running (a running GPU \
                           kernel cannot be stopped, so its context is abandoned)";
                *self.lost.borrow_mut() = Some(why.into());
                Err(BackendLaunchError::Fault {
                    report: None,
                    message: format!("interrupted: {why}"),
                    printf,
                })
            }
            Err((Some(code), _)) if is_sticky(code) => {
                let words = driver::fault_words(code);
                *self.lost.borrow_mut() = Some(words.clone());
                Err(BackendLaunchError::Fault {
                    report: None,
                    message: words,
                    printf,
                })
            }
            Err((Some(code), _)) => Err(rejected(code)),
        }
    }
}

/// The driver call of a launch, as errors name it.
pub(super) fn launch_call(cooperative: bool) -> &'static str {
    if cooperative {
        "cuLaunchCooperativeKernel"
    } else {
        "cuLaunchKernel"
    }
}

/// Each parameter's bytes in its own 8-byte aligned buffer (zero-padded), as `cuLaunchKernel`'s
/// `kernelParams` points at them.
pub(super) fn aligned_params(params: &[&[u8]]) -> Vec<Vec<u64>> {
    params
        .iter()
        .map(|p| {
            let mut v = vec![0u64; p.len().div_ceil(8).max(1)];
            for (i, b) in p.iter().enumerate() {
                v[i / 8] |= u64::from(*b) << (8 * (i % 8));
            }
            v
        })
        .collect()
}

enum Waited {
    Error(DriverError),
    Interrupted,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cooperative_launch_is_named_as_its_driver_call() {
        assert_eq!(launch_call(true), "cuLaunchCooperativeKernel");
        assert_eq!(launch_call(false), "cuLaunchKernel");
    }

    #[test]
    fn parameters_keep_their_bytes_in_aligned_buffers() {
        let f = 1.5f32.to_le_bytes();
        let p = 0x0000_7f00_dead_beefu64.to_le_bytes();
        let i = (-3i16).to_le_bytes();
        let agg: Vec<u8> = (1..=12).collect(); // a 12-byte struct by value
        let params: Vec<&[u8]> = vec![&f, &p, &i, &agg, &[]];
        let out = aligned_params(&params);
        assert_eq!(out.len(), 5);
        for (buf, want) in out.iter().zip(&params) {
            assert_eq!(buf.as_ptr() as usize % 8, 0);
            // SAFETY: reads the buffer's own bytes.
            let bytes: &[u8] =
                unsafe { std::slice::from_raw_parts(buf.as_ptr().cast(), buf.len() * 8) };
            assert_eq!(&bytes[..want.len()], *want);
            assert!(bytes[want.len()..].iter().all(|b| *b == 0));
        }
        assert_eq!(out[1], vec![0x0000_7f00_dead_beef]);
        assert_eq!(out[3].len(), 2);
    }
}
