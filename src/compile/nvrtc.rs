//! One NVRTC compilation through cudarc's `nvrtc` bindings: create the program, register the
//! name expressions (`&add`, `&scale<float>`), compile with the given options and collect the
//! log, PTX (or CUBIN) and lowered names.
//!
//! This module knows nothing of cells, caches or kernels' signatures. It never panics: NVRTC
//! must be loaded first ([`super::library::load_nvrtc`]), which callers check.

use cudarc::nvrtc::{result, sys};
use std::ffi::{CStr, CString};

/// What NVRTC produced.
#[derive(Debug, Clone, PartialEq)]
pub struct NvrtcOutput {
    pub ptx: String,
    /// Present when CUBIN was asked for (`-arch=sm_XX`).
    pub cubin: Option<Vec<u8>>,
    pub log: String,
    /// `(name expression, lowered name)` for every expression that NVRTC resolved.
    pub lowered: Vec<(String, String)>,
}

/// Why a compilation failed.
#[derive(Debug, Clone, PartialEq)]
pub enum NvrtcFailure {
    /// NVRTC rejected the program; the log says why.
    Compile { log: String },
    /// Anything else (bad option bytes, an NVRTC API error).
    Internal(String),
}

/// Destroys the program on every path.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the program was created by `create_program` and is destroyed exactly once.
        let _ = unsafe { result::destroy_program(self.0) };
    }
}

fn cstring(what: &str, s: &str) -> Result<CString, NvrtcFailure> {
    CString::new(s).map_err(|_| NvrtcFailure::Internal(format!("{what} contains a NUL byte")))
}

fn bytes_to_string(v: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = v.iter().map(|c| *c as u8).take_while(|b| *b != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Compiles `source` (named `program_name` in diagnostics and `.file`) with `options`,
/// registering `name_expressions`. `headers` are `(include name, contents)` pairs that
/// `#include` finds before the include folders. `want_cubin`: also fetch the CUBIN (the options
/// must then target a real `sm_XX`).
pub fn compile(
    source: &str,
    program_name: &str,
    options: &[String],
    name_expressions: &[String],
    headers: &[(&str, &str)],
    want_cubin: bool,
) -> Result<NvrtcOutput, NvrtcFailure> {
    let src = cstring("the CUDA source", source)?;
    let name = cstring("the program name", program_name)?;
    let opts: Vec<CString> = options
        .iter()
        .map(|o| cstring("a compiler option", o))
        .collect::<Result<_, _>>()?;
    let exprs: Vec<CString> = name_expressions
        .iter()
        .map(|e| cstring("a kernel name", e))
        .collect::<Result<_, _>>()?;
    let header_names: Vec<CString> = headers
        .iter()
        .map(|(n, _)| cstring("a header name", n))
        .collect::<Result<_, _>>()?;
    let header_texts: Vec<CString> = headers
        .iter()
        .map(|(_, t)| cstring("a header", t))
        .collect::<Result<_, _>>()?;
    let name_ptrs: Vec<*const std::ffi::c_char> = header_names.iter().map(|h| h.as_ptr()).collect();
    let text_ptrs: Vec<*const std::ffi::c_char> = header_texts.iter().map(|h| h.as_ptr()).collect();
    let mut raw: sys::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: every pointer is a NUL-terminated string alive for the call (NVRTC copies them);
    // the two header arrays have `headers.len()` entries.
    unsafe {
        sys::nvrtcCreateProgram(
            &mut raw,
            src.as_ptr(),
            name.as_ptr(),
            headers.len() as std::ffi::c_int,
            text_ptrs.as_ptr(),
            name_ptrs.as_ptr(),
        )
    }
    .result()
    .map_err(|e| NvrtcFailure::Internal(format!("nvrtcCreateProgram: {e}")))?;
    let prog = Program(raw);
    for e in &exprs {
        // SAFETY: valid program and NUL-terminated expression that outlives the program.
        unsafe { sys::nvrtcAddNameExpression(prog.0, e.as_ptr()) }
            .result()
            .map_err(|err| NvrtcFailure::Internal(format!("nvrtcAddNameExpression: {err}")))?;
    }
    let opt_ptrs: Vec<*const std::ffi::c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: valid program; `opt_ptrs` points at NUL-terminated strings alive for the call.
    let status = unsafe {
        sys::nvrtcCompileProgram(prog.0, opt_ptrs.len() as std::ffi::c_int, opt_ptrs.as_ptr())
    };
    // SAFETY: valid program.
    let log = unsafe { result::get_program_log(prog.0) }
        .map(|l| bytes_to_string(&l))
        .unwrap_or_default();
    if status != sys::nvrtcResult::NVRTC_SUCCESS {
        if status == sys::nvrtcResult::NVRTC_ERROR_COMPILATION {
            return Err(NvrtcFailure::Compile { log });
        }
        return Err(NvrtcFailure::Internal(format!(
            "nvrtcCompileProgram: {status:?}\n{log}"
        )));
    }
    // SAFETY: valid, compiled program.
    let ptx = unsafe { result::get_ptx(prog.0) }
        .map(|p| bytes_to_string(&p))
        .map_err(|e| NvrtcFailure::Internal(format!("nvrtcGetPTX: {e}")))?;
    let cubin = if want_cubin {
        let mut size = 0usize;
        // SAFETY: valid, compiled program; the buffer has the size NVRTC reported.
        let data = unsafe {
            sys::nvrtcGetCUBINSize(prog.0, &mut size)
                .result()
                .and_then(|_| {
                    let mut buf = vec![0u8; size];
                    sys::nvrtcGetCUBIN(prog.0, buf.as_mut_ptr() as *mut std::ffi::c_char)
                        .result()
                        .map(|_| buf)
                })
        };
        Some(data.map_err(|e| NvrtcFailure::Internal(format!("nvrtcGetCUBIN: {e}")))?)
    } else {
        None
    };
    let mut lowered = Vec::new();
    for (text, e) in name_expressions.iter().zip(&exprs) {
        let mut out: *const std::ffi::c_char = std::ptr::null();
        // SAFETY: valid, compiled program; NVRTC owns the returned string until destroy.
        let ok = unsafe { sys::nvrtcGetLoweredName(prog.0, e.as_ptr(), &mut out) };
        if ok == sys::nvrtcResult::NVRTC_SUCCESS && !out.is_null() {
            // SAFETY: NVRTC returned a NUL-terminated string.
            let s = unsafe { CStr::from_ptr(out) }
                .to_string_lossy()
                .into_owned();
            lowered.push((text.clone(), s));
        }
    }
    Ok(NvrtcOutput {
        ptx,
        cubin,
        log,
        lowered,
    })
}
