//! Regenerates every PTX fixture in `tests/fixtures/` from its CUDA source in `kernels/` with
//! the real NVRTC 12.9 and fails if one differs (`PTXSIM_BLESS=1` rewrites them instead).
//!
//! NVRTC is found through `NBCUDA_NVRTC_LIB` (a path to `libnvrtc.so.12`), the workspace's
//! `.venv` (pip package `nvidia-cuda-nvrtc-cu12`), or the dynamic loader's search path
//! (`LD_LIBRARY_PATH`). Without it, or with another NVRTC version, the test reports itself
//! skipped (`testkit::skip`, which says why) and returns: every other test reads the checked-in
//! fixtures only, so none of them needs NVRTC.
//! This file must not be used to compile anything but the fixtures.

use std::ffi::{c_char, c_int, c_void, CString};
use std::path::{Path, PathBuf};

/// The options every fixture is compiled with (documented in `kernels/README.md`), after
/// `--gpu-architecture=<arch>`.
const OPTIONS: [&str; 2] = ["-lineinfo", "--std=c++17"];
/// The architecture of the main fixtures, `tests/fixtures/<name>.ptx`.
const MAIN_ARCH: &str = "compute_80";
/// Sources also compiled for the oldest and newest targets ptxsim supports, into
/// `tests/fixtures/<arch>/<name>.ptx`.
const VARIANT_ARCHS: [&str; 2] = ["compute_70", "compute_90"];
const VARIANT_SOURCES: [&str; 6] = [
    "vector_add",
    "matmul",
    "reduce",
    "histogram",
    "warp",
    "atomics_global",
];
/// The NVRTC release the fixtures were generated with.
const PINNED_VERSION: (c_int, c_int) = (12, 9);

type Prog = *mut c_void;
type Version = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;
type Create = unsafe extern "C" fn(
    *mut Prog,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> c_int;
type Compile = unsafe extern "C" fn(Prog, c_int, *const *const c_char) -> c_int;
type GetSize = unsafe extern "C" fn(Prog, *mut usize) -> c_int;
type GetText = unsafe extern "C" fn(Prog, *mut c_char) -> c_int;
type Destroy = unsafe extern "C" fn(*mut Prog) -> c_int;

struct Nvrtc {
    lib: libloading::Library,
    path: String,
}

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Candidate locations of libnvrtc, most specific first.
fn candidates() -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(p) = std::env::var("NBCUDA_NVRTC_LIB") {
        out.push(p);
    }
    let venv_lib = crate_dir().join("../../.venv/lib");
    if let Ok(entries) = std::fs::read_dir(&venv_lib) {
        let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        dirs.sort();
        for d in dirs {
            let p = d.join("site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
            if p.exists() {
                out.push(p.to_string_lossy().into_owned());
            }
        }
    }
    out.push("libnvrtc.so.12".to_string());
    out.push("libnvrtc.so".to_string());
    out
}

fn load_nvrtc() -> Option<Nvrtc> {
    for path in candidates() {
        // SAFETY: loading libnvrtc runs its initialisers, which have no preconditions.
        if let Ok(lib) = unsafe { libloading::Library::new(&path) } {
            return Some(Nvrtc { lib, path });
        }
    }
    None
}

impl Nvrtc {
    fn version(&self) -> Result<(c_int, c_int), String> {
        // SAFETY: the symbol has this C signature in every NVRTC release.
        unsafe {
            let f = self
                .lib
                .get::<Version>(b"nvrtcVersion")
                .map_err(|e| e.to_string())?;
            let (mut major, mut minor) = (0, 0);
            match f(&mut major, &mut minor) {
                0 => Ok((major, minor)),
                rc => Err(format!("nvrtcVersion returned {rc}")),
            }
        }
    }

    /// Compiles `source` as program `name` for `arch` with [`OPTIONS`]; returns the PTX or the
    /// log.
    fn compile(&self, name: &str, source: &str, arch: &str) -> Result<String, String> {
        let src = CString::new(source).map_err(|e| e.to_string())?;
        let cname = CString::new(name).map_err(|e| e.to_string())?;
        let arch_opt = format!("--gpu-architecture={arch}");
        let opts: Vec<CString> = std::iter::once(arch_opt.as_str())
            .chain(OPTIONS.iter().copied())
            .filter_map(|o| CString::new(o).ok())
            .collect();
        let opt_ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
        // SAFETY: the NVRTC C API, called as documented; every buffer is sized from the
        // matching *Size call and outlives the call that fills it.
        unsafe {
            let create = self
                .lib
                .get::<Create>(b"nvrtcCreateProgram")
                .map_err(|e| e.to_string())?;
            let compile = self
                .lib
                .get::<Compile>(b"nvrtcCompileProgram")
                .map_err(|e| e.to_string())?;
            let log_size = self
                .lib
                .get::<GetSize>(b"nvrtcGetProgramLogSize")
                .map_err(|e| e.to_string())?;
            let log_text = self
                .lib
                .get::<GetText>(b"nvrtcGetProgramLog")
                .map_err(|e| e.to_string())?;
            let ptx_size = self
                .lib
                .get::<GetSize>(b"nvrtcGetPTXSize")
                .map_err(|e| e.to_string())?;
            let ptx_text = self
                .lib
                .get::<GetText>(b"nvrtcGetPTX")
                .map_err(|e| e.to_string())?;
            let destroy = self
                .lib
                .get::<Destroy>(b"nvrtcDestroyProgram")
                .map_err(|e| e.to_string())?;
            let mut prog: Prog = std::ptr::null_mut();
            let rc = create(
                &mut prog,
                src.as_ptr(),
                cname.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            );
            if rc != 0 {
                return Err(format!("nvrtcCreateProgram returned {rc}"));
            }
            let rc = compile(prog, opt_ptrs.len() as c_int, opt_ptrs.as_ptr());
            let mut n = 0usize;
            log_size(prog, &mut n);
            let mut log = vec![0u8; n.max(1)];
            log_text(prog, log.as_mut_ptr() as *mut c_char);
            // compute_70 draws a deprecation notice on every compile; it is not a warning
            // about the source.
            let log = String::from_utf8_lossy(&log)
                .trim_end_matches('\0')
                .lines()
                .filter(|l| !l.contains("Architectures prior to"))
                .collect::<Vec<_>>()
                .join("\n")
                .trim()
                .to_string();
            let result = if rc != 0 {
                Err(format!("nvrtcCompileProgram returned {rc}:\n{log}"))
            } else if !log.is_empty() {
                Err(format!(
                    "NVRTC warnings (fixtures must compile cleanly):\n{log}"
                ))
            } else {
                let mut n = 0usize;
                ptx_size(prog, &mut n);
                let mut ptx = vec![0u8; n.max(1)];
                ptx_text(prog, ptx.as_mut_ptr() as *mut c_char);
                let end = ptx.iter().position(|&b| b == 0).unwrap_or(ptx.len());
                String::from_utf8(ptx[..end].to_vec()).map_err(|e| e.to_string())
            };
            destroy(&mut prog);
            result
        }
    }
}

fn sources() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(crate_dir().join("kernels"))
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "cu"));
    v.sort();
    v
}

/// The PTX without its leading `//` comment block (compiler build ID and patch release), so that
/// any NVRTC 12.9.x patch release compares equal when it generates the same code.
fn body(ptx: &str) -> String {
    ptx.lines()
        .skip_while(|l| l.starts_with("//") || l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[test]
fn fixtures_match_nvrtc() {
    let Some(nvrtc) = load_nvrtc() else {
        testkit::skip(
            "NVRTC not found (set NBCUDA_NVRTC_LIB, create .venv, or set LD_LIBRARY_PATH)",
        );
        return;
    };
    let version = match nvrtc.version() {
        Ok(v) => v,
        Err(e) => panic!("{}: {e}", nvrtc.path),
    };
    if version != PINNED_VERSION {
        testkit::skip(format!(
            "{} is NVRTC {}.{}, the fixtures are pinned to {}.{}",
            nvrtc.path, version.0, version.1, PINNED_VERSION.0, PINNED_VERSION.1
        ));
        return;
    }
    let bless = std::env::var("PTXSIM_BLESS").is_ok_and(|v| v == "1");
    let fixtures = crate_dir().join("tests/fixtures");
    let srcs = sources();
    assert!(
        srcs.len() >= 10,
        "expected the CUDA sources in kernels/, found {}",
        srcs.len()
    );
    let mut jobs: Vec<(PathBuf, &str, PathBuf)> = Vec::new();
    for src in &srcs {
        jobs.push((
            src.clone(),
            MAIN_ARCH,
            fixtures.join(format!("{}.ptx", stem(src))),
        ));
        if VARIANT_SOURCES.contains(&stem(src).as_str()) {
            for arch in VARIANT_ARCHS {
                jobs.push((
                    src.clone(),
                    arch,
                    fixtures.join(arch).join(format!("{}.ptx", stem(src))),
                ));
            }
        }
    }
    let mut problems = Vec::new();
    for (src, arch, path) in &jobs {
        let name = stem(src);
        let text =
            std::fs::read_to_string(src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        // An absolute program name keeps `.file` independent of the working directory.
        let ptx = match nvrtc.compile(&format!("/ptxsim/kernels/{name}.cu"), &text, arch) {
            Ok(p) => p,
            Err(e) => {
                problems.push(format!("{name}.cu ({arch}): {e}"));
                continue;
            }
        };
        let shown = path
            .strip_prefix(&fixtures)
            .unwrap_or(path)
            .display()
            .to_string();
        let old = std::fs::read_to_string(path).ok();
        if old.as_deref().map(body) == Some(body(&ptx)) {
            continue;
        }
        if bless {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            }
            std::fs::write(path, &ptx).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            println!("blessed {}", path.display());
        } else if old.is_none() {
            problems.push(format!("{shown} is missing (run with PTXSIM_BLESS=1)"));
        } else {
            problems.push(format!(
                "{shown} differs from NVRTC's output (run with PTXSIM_BLESS=1)"
            ));
        }
    }
    // Every fixture must come from a job (no stale files).
    let expected: Vec<&PathBuf> = jobs.iter().map(|j| &j.2).collect();
    let dirs =
        std::iter::once(fixtures.clone()).chain(VARIANT_ARCHS.iter().map(|a| fixtures.join(a)));
    for dir in dirs {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "ptx") && !expected.contains(&&p) {
                problems.push(format!("{} has no CUDA source in kernels/", p.display()));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    println!(
        "{} fixtures match NVRTC {}.{} ({})",
        jobs.len(),
        version.0,
        version.1,
        nvrtc.path
    );
}
