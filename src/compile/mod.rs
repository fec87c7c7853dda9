//! The `%%cuda` compile path: NVRTC options from [`CudaOptions`], name expressions for C++
//! kernels (so plain `__global__` functions and templates work without `extern "C"`), the
//! persistent compile cache, and NVRTC diagnostics mapped to cell lines.
//!
//! Submodules: `scan` (finds `__global__` declarations), `nvrtc` (one NVRTC run), `cache` (the
//! on-disk cache), `diag` (diagnostics → messages), `ptx` (entry parameter lists), `library`
//! (finds and loads NVRTC; another helper's file), `resources` (CUBIN for an architecture →
//! registers, shared and local memory per kernel), `structs` (layouts of by-value struct
//! parameters), `ctype` (C scalar type names → dtypes, used by `scan` and `structs`), `aliases`
//! (`typedef`/`using` aliases of the cell), `views` (layouts of `cuda::std::span`/`mdspan`
//! parameters), `headers` (the prelude and the shims of host headers).
//!
//! This module compiles; it must not load modules, touch device memory or know about arrays.
//! The source is compiled after a small prelude (the fixed-width integer typedefs of CCCL's
//! NVRTC `<cuda/std/cstdint>`, and `uint`/`ushort`/`ulong`), followed by a `#line 1` directive
//! so NVRTC's line numbers and the PTX `.loc` lines are the cell source's. Host headers
//! (`<cassert>`, `<cstdio>`, `<cstdint>`, `<climits>`, `<cmath>`, `<cstring>`, `<algorithm>`,
//! `<type_traits>`, `<utility>`, ...) resolve to the shims of `headers` ([`BUILTIN_HEADERS`]):
//! libcu++'s equivalents where it has them, our own text where NVRTC has the functions already
//! (docs/headers.md). NVRTC always gets `-lineinfo`, so PTX `.loc` maps faults, asserts and
//! profiles back to cell lines (and to a shim's or a CUDA header's line, inlined into a cell
//! line).

pub mod aliases;
pub mod cache;
pub mod ctype;
pub mod diag;
pub mod headers;
pub mod library;
pub mod nvrtc;
pub mod ptx;
pub mod resources;
pub mod scan;
pub mod structs;
pub mod views;

pub use headers::{BUILTIN_HEADERS, PRELUDE};

use crate::types::{CudaOptions, GpuError};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

/// What NVRTC should produce.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Target {
    /// PTX for a virtual architecture, e.g. `compute_80` (ptxsim, or a GPU's JIT).
    Ptx { arch: String },
    /// CUBIN (and PTX) for a real architecture, e.g. `sm_90`.
    Cubin { arch: String },
}

impl Target {
    /// ptxsim's default: PTX for `compute_80`, or for the `compute_XX` of `--arch sm_XX`.
    pub fn sim(options: &CudaOptions) -> Target {
        let arch = options
            .arch
            .as_deref()
            .map(|a| a.replace("sm_", "compute_"))
            .unwrap_or_else(|| "compute_80".to_string());
        Target::Ptx { arch }
    }
    fn arch(&self) -> &str {
        match self {
            Target::Ptx { arch } | Target::Cubin { arch } => arch,
        }
    }
    fn describe(&self) -> String {
        match self {
            Target::Ptx { arch } => format!("ptx:{arch}"),
            Target::Cubin { arch } => format!("cubin:{arch}"),
        }
    }
}

/// One compilation request.
#[derive(Debug, Clone)]
pub struct CompileInput<'a> {
    pub source: &'a str,
    pub options: &'a CudaOptions,
    /// Cell line of the source's first line.
    pub first_line: usize,
    /// `&add`, `&ns::k`, `&scale<float>`, …
    pub name_expressions: Vec<String>,
    pub target: Target,
}

/// The result of a successful compilation.
#[derive(Debug, Clone, PartialEq)]
pub struct Compiled {
    pub ptx: String,
    pub cubin: Option<Vec<u8>>,
    /// `(name expression, lowered name)`.
    pub lowered: Vec<(String, String)>,
    /// Name expressions NVRTC could not resolve, with the rendered reason.
    pub dropped: Vec<(String, String)>,
    /// NVRTC warnings, rendered with cell lines (empty if none).
    pub log: String,
    pub cache_hit: bool,
    pub compile_ms: f64,
}

/// Compiles cells, with the disk cache.
#[derive(Debug, Clone)]
pub struct Compiler {
    cache: Option<cache::DiskCache>,
}

impl Compiler {
    /// A compiler caching in `dir` (None: no cache).
    pub fn new(dir: Option<PathBuf>) -> Compiler {
        Compiler {
            cache: dir.map(cache::DiskCache::new),
        }
    }

    /// A compiler caching in `$NBCUDA_CACHE_DIR` or `~/.cache/nbcuda/ptx`.
    pub fn from_env() -> Compiler {
        Compiler::new(cache::DiskCache::default_dir())
    }

    pub fn cache_dir(&self) -> Option<PathBuf> {
        self.cache.as_ref().map(|c| c.dir().to_path_buf())
    }

    /// Compiles `input`, from the cache when possible.
    pub fn compile(&self, input: &CompileInput) -> Result<Compiled, GpuError> {
        let start = Instant::now();
        library::load_nvrtc().map_err(GpuError::compile)?;
        let (major, minor) = library::nvrtc_version().map_err(GpuError::compile)?;
        let program = program_name(input.options);
        let options = nvrtc_options(input.options, &input.target)?;
        let want_cubin = matches!(input.target, Target::Cubin { .. });
        let key = cache::key_of(&[
            input.source,
            &program,
            &options.join("\u{0}"),
            &input.name_expressions.join("\u{0}"),
            &format!("nvrtc {major}.{minor}"),
            &input.target.describe(),
            &headers::fingerprint(),
        ]);
        if let Some(entry) = self.cache.as_ref().and_then(|c| c.get(&key)) {
            let cubin = match &entry.cubin {
                Some(b64) => decode_b64(b64),
                None => None,
            };
            if !want_cubin || cubin.is_some() {
                return Ok(Compiled {
                    ptx: entry.ptx,
                    cubin,
                    lowered: entry.lowered,
                    dropped: entry.dropped,
                    log: render_log(&entry.log, &program, input),
                    cache_hit: true,
                    compile_ms: ms_since(start),
                });
            }
        }
        let full_source = format!("{PRELUDE}#line 1 \"{program}\"\n{}", input.source);
        let mut exprs = input.name_expressions.clone();
        let mut dropped: Vec<(String, String)> = Vec::new();
        let out = loop {
            match nvrtc::compile(
                &full_source,
                &program,
                &options,
                &exprs,
                BUILTIN_HEADERS,
                want_cubin,
            ) {
                Ok(out) => break out,
                Err(nvrtc::NvrtcFailure::Internal(m)) => return Err(GpuError::compile(m)),
                Err(nvrtc::NvrtcFailure::Compile { log }) => {
                    let diags = diag::parse_log(&log);
                    let failing = failing_name_expressions(&diags, &exprs);
                    let only_names = diags
                        .iter()
                        .filter(|d| d.is_error())
                        .all(|d| d.file == "__nv_name_map");
                    if !only_names || failing.is_empty() {
                        let text = diag::render(&diags, &program, input.source, input.first_line);
                        let text = if text.is_empty() {
                            log.trim().to_string()
                        } else {
                            text
                        };
                        return Err(GpuError::compile(text));
                    }
                    for f in failing {
                        let reason: Vec<diag::Diagnostic> = diags
                            .iter()
                            .filter(|d| {
                                d.echoed.as_deref().map(squash)
                                    == Some(squash(&format!("#pragma nv_mangled_name {f}")))
                            })
                            .cloned()
                            .collect();
                        let text = diag::render(&reason, &program, input.source, input.first_line);
                        exprs.retain(|e| *e != f);
                        dropped.push((f, text));
                    }
                }
            }
        };
        let cubin_b64 = out.cubin.as_deref().map(encode_b64);
        let entry = cache::CacheEntry::new(
            &key,
            out.ptx.clone(),
            cubin_b64,
            out.log.clone(),
            out.lowered.clone(),
            dropped.clone(),
        );
        if let Some(c) = &self.cache {
            if let Err(e) = c.put(&entry) {
                tracing::warn!("compile cache: {e}");
            }
        }
        Ok(Compiled {
            ptx: out.ptx,
            cubin: out.cubin,
            lowered: out.lowered,
            dropped,
            log: render_log(&out.log, &program, input),
            cache_hit: false,
            compile_ms: ms_since(start),
        })
    }
}

fn render_log(log: &str, program: &str, input: &CompileInput) -> String {
    diag::render(
        &diag::parse_log(log),
        program,
        input.source,
        input.first_line,
    )
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The name expressions named by `__nv_name_map` errors.
fn failing_name_expressions(diags: &[diag::Diagnostic], exprs: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for d in diags.iter().filter(|d| d.file == "__nv_name_map") {
        let Some(echoed) = d.echoed.as_deref() else {
            continue;
        };
        let Some(text) = echoed.trim().strip_prefix("#pragma nv_mangled_name") else {
            continue;
        };
        let text = squash(text);
        if let Some(e) = exprs.iter().find(|e| squash(e) == text) {
            if !out.contains(e) {
                out.push(e.clone());
            }
        }
    }
    out
}

/// `cell.cu`, or `NAME.cu` for `--name NAME` (only identifier characters kept).
pub fn program_name(options: &CudaOptions) -> String {
    match &options.name {
        Some(n) => {
            let clean: String = n
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
                .collect();
            if clean.is_empty() {
                "cell.cu".into()
            } else {
                format!("{clean}.cu")
            }
        }
        None => "cell.cu".into(),
    }
}

/// Include folders, looked up once per process.
fn include_dirs() -> &'static [PathBuf] {
    static DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    DIRS.get_or_init(library::cuda_include_dirs)
}

/// NVRTC options: `-lineinfo`, `--std=…`, `-arch=…`, defines, fast math, `-G`, include folders.
pub fn nvrtc_options(options: &CudaOptions, target: &Target) -> Result<Vec<String>, GpuError> {
    let mut out = vec!["-lineinfo".to_string()];
    let std = options.std.as_deref().unwrap_or("c++17");
    if !matches!(std, "c++03" | "c++11" | "c++14" | "c++17" | "c++20") {
        return Err(GpuError::compile(format!(
            "--std={std} is not a C++ standard NVRTC accepts (c++03, c++11, c++14, c++17, c++20)"
        )));
    }
    out.push(format!("--std={std}"));
    let arch = target.arch();
    let valid_arch = |a: &str| {
        a.strip_prefix("compute_")
            .or_else(|| a.strip_prefix("sm_"))
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric()))
    };
    if !valid_arch(arch) {
        return Err(GpuError::compile(format!(
            "--arch {arch}: expected sm_XX (e.g. sm_80)"
        )));
    }
    out.push(format!("-arch={arch}"));
    for (name, value) in &options.defines {
        let ok = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !ok {
            return Err(GpuError::compile(format!("-D{name}: not a macro name")));
        }
        match value {
            Some(v) if v.contains('\0') => {
                return Err(GpuError::compile(format!(
                    "-D{name}: value contains a NUL byte"
                )))
            }
            Some(v) => out.push(format!("-D{name}={v}")),
            None => out.push(format!("-D{name}")),
        }
    }
    if options.fast_math {
        out.push("--use_fast_math".into());
    }
    if options.device_debug {
        out.push("-G".into());
    }
    for dir in include_dirs() {
        out.push(format!("-I{}", dir.display()));
    }
    Ok(out)
}

fn encode_b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn decode_b64(s: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).ok()
}

#[cfg(test)]
mod headers_tests;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod vocabulary_tests;
