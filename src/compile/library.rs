//! NVRTC library discovery: where `libnvrtc.so` is, how it was found, and how to make cudarc use it.
//!
//! cudarc (feature `fallback-dynamic-loading`) opens NVRTC by bare file name (`libnvrtc.so`,
//! `libnvrtc.so.12`, …), so it only finds libraries on the loader's search path. The NVRTC that
//! nbcuda's set-up installs lives in a Python wheel (`nvidia-cuda-nvrtc-cu12`) inside a `.venv`,
//! which is never on that path. [`load_nvrtc`] therefore locates the library with the rules below
//! and `dlopen`s it by absolute path with `RTLD_GLOBAL` before cudarc's first NVRTC call: the
//! dynamic loader then hands cudarc the already-loaded library when it asks for the soname.
//!
//! Search order (first hit wins; `found_by` names the rule):
//! 1. `NBCUDA_NVRTC` (a file path; the installed kernelspec sets it),
//! 2. `$CUDA_PATH/lib64`,
//! 3. `/usr/local/cuda/lib64`,
//! 4. `nvidia/cuda_nvrtc/lib` in the site-packages of `$VIRTUAL_ENV`,
//! 5. the same in the Python environment of the running binary ([`python_env_of_binary`]: the
//!    venv pip installed the wheel into, or the checkout's `.venv` above `target/release`),
//! 6. every directory of `LD_LIBRARY_PATH`.
//!
//! This module never compiles anything and never panics; it only finds and loads the library
//! and reports the CUDA header folders that go with it.

use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// `found_by` of rule 5.
const BINARY_ENV: &str = "the binary's Python environment";

/// File names tried in every candidate directory, in order of preference.
pub const NVRTC_FILE_NAMES: [&str; 3] = ["libnvrtc.so.12", "libnvrtc.so", "libnvrtc.so.13"];

/// Where NVRTC was found and which discovery rule found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvrtcLocation {
    /// Absolute path of the shared library.
    pub path: PathBuf,
    /// The rule that found it: `"NBCUDA_NVRTC"`, `"CUDA_PATH"`, `"/usr/local/cuda"`,
    /// `"VIRTUAL_ENV"`, `"the binary's Python environment"` or `"LD_LIBRARY_PATH"`.
    pub found_by: &'static str,
}

/// Finds NVRTC without loading it. `Err` lists every place searched.
pub fn locate_nvrtc() -> Result<NvrtcLocation, String> {
    locate_with(&|name| std::env::var_os(name), python_env_of_binary())
}

/// [`locate_nvrtc`] over an explicit environment and project `.venv` (testable without
/// touching the process environment).
fn locate_with(
    env: &dyn Fn(&str) -> Option<OsString>,
    binary_venv: Option<PathBuf>,
) -> Result<NvrtcLocation, String> {
    let env = |name: &str| env(name).filter(|v| !v.is_empty());
    let mut searched: Vec<String> = Vec::new();

    if let Some(explicit) = env("NBCUDA_NVRTC") {
        let path = PathBuf::from(&explicit);
        if path.is_file() {
            return Ok(NvrtcLocation {
                path: absolute(&path),
                found_by: "NBCUDA_NVRTC",
            });
        }
        searched.push(format!("NBCUDA_NVRTC={} (not a file)", path.display()));
    }

    let mut candidates: Vec<(PathBuf, &'static str)> = Vec::new();
    if let Some(cuda) = env("CUDA_PATH") {
        candidates.push((PathBuf::from(cuda).join("lib64"), "CUDA_PATH"));
    }
    candidates.push((PathBuf::from("/usr/local/cuda/lib64"), "/usr/local/cuda"));
    if let Some(venv) = env("VIRTUAL_ENV") {
        for dir in wheel_lib_dirs(Path::new(&venv)) {
            candidates.push((dir, "VIRTUAL_ENV"));
        }
    }
    if let Some(venv) = binary_venv {
        for dir in wheel_lib_dirs(&venv) {
            candidates.push((dir, BINARY_ENV));
        }
    }
    if let Some(paths) = env("LD_LIBRARY_PATH") {
        for dir in std::env::split_paths(&paths) {
            if !dir.as_os_str().is_empty() {
                candidates.push((dir, "LD_LIBRARY_PATH"));
            }
        }
    }

    for (dir, found_by) in candidates {
        for name in NVRTC_FILE_NAMES {
            let path = dir.join(name);
            if path.is_file() {
                return Ok(NvrtcLocation {
                    path: absolute(&path),
                    found_by,
                });
            }
        }
        searched.push(dir.display().to_string());
    }
    Err(format!(
        "NVRTC (libnvrtc.so.12) not found; searched: {}. Install NVIDIA's wheel into the Python \
         environment of nbcuda (`pip install nvidia-cuda-nvrtc-cu12`; in a checkout, `bash \
         install/setup.sh` does it) or set NBCUDA_NVRTC=/path/to/libnvrtc.so.12",
        searched.join(", ")
    ))
}

/// Locates NVRTC and loads it so that cudarc's NVRTC calls use it. Idempotent: the first call
/// does the work, later calls return its result. Call it before any `cudarc::nvrtc` function.
pub fn load_nvrtc() -> Result<NvrtcLocation, String> {
    static LOADED: OnceLock<Result<NvrtcLocation, String>> = OnceLock::new();
    LOADED.get_or_init(load_uncached).clone()
}

fn load_uncached() -> Result<NvrtcLocation, String> {
    let location = locate_nvrtc()?;
    let c_path = CString::new(location.path.as_os_str().as_bytes())
        .map_err(|_| format!("NVRTC path {} contains a NUL byte", location.path.display()))?;
    // SAFETY: dlopen with a valid NUL-terminated path; the handle is intentionally never closed,
    // so the library stays loaded for the life of the process (cudarc keeps pointers into it).
    let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if handle.is_null() {
        return Err(format!(
            "cannot load NVRTC at {}: {}",
            location.path.display(),
            dl_error()
        ));
    }
    // cudarc asks the loader for the library by soname; check that the loader now answers with
    // the one we loaded, so cudarc's first NVRTC call cannot panic for want of it.
    // SAFETY: only probes whether a library can be opened.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(format!(
            "loaded {} but cudarc still cannot open NVRTC by its soname (is it a CUDA 12 NVRTC?)",
            location.path.display()
        ));
    }
    Ok(location)
}

/// The NVRTC version `(major, minor)`, loading the library first.
pub fn nvrtc_version() -> Result<(i32, i32), String> {
    load_nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is loaded (checked above); nvrtcVersion writes two ints.
    let status = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    if status == cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
        Ok((major, minor))
    } else {
        Err(format!("nvrtcVersion failed: {status:?}"))
    }
}

/// Folders holding CUDA headers such as `cuda_fp16.h` and `cuda/std/…`, for NVRTC's `-I`:
/// the `include` folders of the NVIDIA wheels beside the NVRTC that [`locate_nvrtc`] finds
/// (`nvidia/cuda_runtime/include`, `nvidia/cuda_cccl/include`, …), the toolkit's `include`
/// next to its `lib64`, and `$CUDA_PATH/include`. Only existing folders, without duplicates.
pub fn cuda_include_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Ok(location) = locate_nvrtc() {
        // .../site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12 → .../site-packages/nvidia
        let lib_dir = location.path.parent();
        let nvidia = lib_dir.and_then(Path::parent).and_then(Path::parent);
        if let Some(nvidia) = nvidia.filter(|n| n.file_name() == Some("nvidia".as_ref())) {
            // cuda_runtime first (cuda_fp16.h, vector types), then cccl (libcu++), then the rest.
            for pkg in ["cuda_runtime", "cuda_cccl", "cuda_nvrtc"] {
                dirs.push(nvidia.join(pkg).join("include"));
            }
            if let Ok(entries) = std::fs::read_dir(nvidia) {
                let mut others: Vec<PathBuf> = entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.path().join("include"))
                    .collect();
                others.sort();
                dirs.extend(others);
            }
        } else if let Some(root) = lib_dir.and_then(Path::parent) {
            dirs.push(root.join("include"));
        }
    }
    if let Some(cuda) = std::env::var_os("CUDA_PATH").filter(|v| !v.is_empty()) {
        dirs.push(PathBuf::from(cuda).join("include"));
    }
    let mut unique: Vec<PathBuf> = Vec::new();
    for dir in dirs {
        if dir.is_dir() && !unique.contains(&dir) {
            unique.push(dir);
        }
    }
    unique
}

/// `<venv>/lib/python3.*/site-packages/nvidia/cuda_nvrtc/lib` for every Python of the venv.
fn wheel_lib_dirs(venv: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for lib in ["lib", "lib64"] {
        let Ok(entries) = std::fs::read_dir(venv.join(lib)) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
            .map(|e| e.path().join("site-packages/nvidia/cuda_nvrtc/lib"))
            .filter(|d| d.is_dir())
            .collect();
        found.sort();
        for dir in found {
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
    }
    dirs
}

/// The Python environment the running binary belongs to: `<prefix>` of `<prefix>/bin/nbcuda`
/// when that prefix is a Python environment (pip installed the wheel there: a venv, a conda
/// environment, `~/.local` of `pip install --user`), else the first `.venv` folder in the
/// binary's folder or a folder above it (`target/release/nbcuda` → the checkout's `.venv`).
pub fn python_env_of_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    python_env_of(&exe.canonicalize().unwrap_or(exe))
}

fn python_env_of(exe: &Path) -> Option<PathBuf> {
    let dir = exe.parent()?;
    if dir.file_name() == Some("bin".as_ref()) {
        if let Some(prefix) = dir.parent().filter(|p| is_python_env(p)) {
            return Some(prefix.to_path_buf());
        }
    }
    exe.ancestors()
        .skip(1)
        .map(|dir| dir.join(".venv"))
        .find(|venv| venv.is_dir())
}

/// A venv (`pyvenv.cfg`) or any prefix with a `lib/python3.*/site-packages` folder.
fn is_python_env(prefix: &Path) -> bool {
    if prefix.join("pyvenv.cfg").is_file() {
        return true;
    }
    let Ok(entries) = std::fs::read_dir(prefix.join("lib")) else {
        return false;
    };
    entries.filter_map(|e| e.ok()).any(|e| {
        e.file_name().to_string_lossy().starts_with("python3")
            && e.path().join("site-packages").is_dir()
    })
}

fn absolute(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string owned by the loader.
    let msg = unsafe { libc::dlerror() };
    if msg.is_null() {
        "unknown dlopen error".to_string()
    } else {
        // SAFETY: non-null, NUL-terminated (see above); copied before any other dl call.
        unsafe { std::ffi::CStr::from_ptr(msg) }
            .to_string_lossy()
            .into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn fake_env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |name: &str| map.get(name).cloned()
    }

    /// A scratch folder laid out like a venv with the NVRTC wheel (an empty file stands in for
    /// the library: locating only checks that the file exists).
    fn fake_venv(tag: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("nbcuda-nvrtc-{tag}-{}", std::process::id()));
        let lib = root.join("lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib");
        std::fs::create_dir_all(&lib).expect("scratch dir");
        std::fs::write(lib.join("libnvrtc.so.12"), b"").expect("scratch file");
        root
    }

    #[test]
    fn rules_are_tried_in_order() {
        let a = fake_venv("a");
        let b = fake_venv("b");
        let a_lib = a.join("lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
        let b_str = b.display().to_string();
        let a_lib_str = a_lib.display().to_string();
        let a_dir = a_lib
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default();

        // Explicit file beats everything.
        let env = fake_env(&[("NBCUDA_NVRTC", &a_lib_str), ("VIRTUAL_ENV", &b_str)]);
        let loc = locate_with(&env, Some(b.clone())).expect("found");
        assert_eq!(loc.found_by, "NBCUDA_NVRTC");
        assert_eq!(loc.path, absolute(&a_lib));

        // A missing explicit file falls through to VIRTUAL_ENV (b), before the binary's venv (a).
        let env = fake_env(&[
            ("NBCUDA_NVRTC", "/nonexistent/libnvrtc.so.12"),
            ("VIRTUAL_ENV", &b_str),
        ]);
        let loc = locate_with(&env, Some(a.clone())).expect("found");
        assert_eq!(loc.found_by, "VIRTUAL_ENV");
        assert!(loc.path.starts_with(absolute(&b)));

        // Binary's venv before LD_LIBRARY_PATH.
        let env = fake_env(&[("LD_LIBRARY_PATH", &a_dir)]);
        let loc = locate_with(&env, Some(b.clone())).expect("found");
        assert_eq!(loc.found_by, BINARY_ENV);

        // LD_LIBRARY_PATH alone (empty entries ignored).
        let ld = format!(":/nonexistent:{a_dir}");
        let env = fake_env(&[("LD_LIBRARY_PATH", &ld)]);
        let loc = locate_with(&env, None).expect("found");
        assert_eq!(loc.found_by, "LD_LIBRARY_PATH");
        assert_eq!(loc.path, absolute(&a_lib));

        let _ = std::fs::remove_dir_all(a);
        let _ = std::fs::remove_dir_all(b);
    }

    #[test]
    fn the_binary_belongs_to_the_python_environment_pip_put_it_in() {
        let root = std::env::temp_dir().join(format!("nbcuda-env-of-{}", std::process::id()));
        // A venv made by `python -m venv` (pyvenv.cfg) and a conda-like prefix (site-packages).
        let venv = root.join("student");
        std::fs::create_dir_all(venv.join("bin")).expect("scratch");
        std::fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\n").expect("scratch");
        assert_eq!(python_env_of(&venv.join("bin/nbcuda")), Some(venv.clone()));
        let conda = root.join("conda");
        std::fs::create_dir_all(conda.join("bin")).expect("scratch");
        std::fs::create_dir_all(conda.join("lib/python3.12/site-packages")).expect("scratch");
        assert_eq!(
            python_env_of(&conda.join("bin/nbcuda")),
            Some(conda.clone())
        );
        // A checkout's build: the `.venv` above target/release.
        let checkout = root.join("checkout");
        std::fs::create_dir_all(checkout.join("target/release")).expect("scratch");
        std::fs::create_dir_all(checkout.join(".venv")).expect("scratch");
        assert_eq!(
            python_env_of(&checkout.join("target/release/nbcuda")),
            Some(checkout.join(".venv"))
        );
        // A `bin` folder that is no Python environment's.
        let plain = root.join("plain");
        std::fs::create_dir_all(plain.join("bin")).expect("scratch");
        assert_eq!(python_env_of(&plain.join("bin/nbcuda")), None);
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn nothing_found_names_every_place_searched() {
        if Path::new("/usr/local/cuda/lib64").exists() {
            return; // a machine with a system toolkit always finds it
        }
        let env = fake_env(&[
            ("NBCUDA_NVRTC", "/nonexistent/libnvrtc.so.12"),
            ("CUDA_PATH", "/nonexistent-cuda"),
            ("LD_LIBRARY_PATH", "/nonexistent-ld"),
        ]);
        let err = locate_with(&env, None).expect_err("nothing to find");
        for place in [
            "NBCUDA_NVRTC=/nonexistent",
            "/nonexistent-cuda/lib64",
            "/nonexistent-ld",
            "install/setup.sh",
        ] {
            assert!(err.contains(place), "{place} missing from: {err}");
        }
    }

    /// Re-runs `child_compiles_with_discovery_only` in a fresh process whose loader has no
    /// LD_LIBRARY_PATH (glibc reads it once at start, so removing it in-process proves nothing)
    /// and no CUDA/NVRTC hints: the `.venv` walk from the test binary must do all the work.
    #[test]
    fn loads_the_wheel_nvrtc_with_no_loader_path_and_compiles_a_cuda_kernel() {
        let exe = std::env::current_exe().expect("test binary path");
        let out = std::process::Command::new(exe)
            .args([
                "--exact",
                "compile::library::tests::child_compiles_with_discovery_only",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env_remove("LD_LIBRARY_PATH")
            .env_remove("NBCUDA_NVRTC")
            .env_remove("CUDA_PATH")
            .env_remove("VIRTUAL_ENV")
            .env("NBCUDA_NVRTC_CHILD", "1")
            .output()
            .expect("spawn test binary");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "child failed:\n{text}");
        assert!(text.contains("1 passed"), "child did not run:\n{text}");
        assert!(
            text.contains("found_by=the binary's Python environment"),
            "{text}"
        );
    }

    #[test]
    #[ignore = "run by loads_the_wheel_nvrtc_with_no_loader_path_and_compiles_a_cuda_kernel"]
    fn child_compiles_with_discovery_only() {
        assert_eq!(std::env::var("NBCUDA_NVRTC_CHILD").as_deref(), Ok("1"));
        assert!(std::env::var_os("LD_LIBRARY_PATH").is_none());
        // Before our dlopen, cudarc cannot see NVRTC at all (unless a system toolkit is installed).
        if !Path::new("/usr/local/cuda/lib64").exists() {
            assert!(!unsafe { cudarc::nvrtc::sys::is_culib_present() });
        }
        let location = load_nvrtc().expect("NVRTC should be found (run install/setup.sh)");
        println!("found_by={}", location.found_by);
        assert!(location.path.is_absolute() && location.path.is_file());
        let (major, minor) = nvrtc_version().expect("nvrtcVersion");
        assert!(major >= 12, "NVRTC {major}.{minor}");

        let src = r#"
            extern "C" __global__ void scale(float *x, float k, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) x[i] *= k;
            }"#;
        let opts = cudarc::nvrtc::CompileOptions {
            arch: Some("compute_70"),
            ..Default::default()
        };
        let ptx = cudarc::nvrtc::compile_ptx_with_opts(src, opts).expect("compiles");
        let text = ptx.to_src();
        assert!(text.contains(".entry scale"), "PTX: {text}");
        assert!(
            text.contains("mul.f32") || text.contains("mul.rn.f32"),
            "PTX: {text}"
        );
    }

    #[test]
    fn include_dirs_hold_cuda_fp16_and_nvrtc_uses_them() {
        load_nvrtc().expect("NVRTC");
        let dirs = cuda_include_dirs();
        assert!(
            dirs.iter().any(|d| d.join("cuda_fp16.h").is_file()),
            "no cuda_fp16.h in {dirs:?}"
        );
        let opts = cudarc::nvrtc::CompileOptions {
            include_paths: dirs.iter().map(|d| d.display().to_string()).collect(),
            arch: Some("compute_70"),
            ..Default::default()
        };
        let src = "#include <cuda_fp16.h>\n\
            extern \"C\" __global__ void h(__half *x) { x[threadIdx.x] = __hadd(x[threadIdx.x], x[0]); }";
        let ptx = cudarc::nvrtc::compile_ptx_with_opts(src, opts).expect("fp16 header compiles");
        assert!(ptx.to_src().contains(".entry h"));
    }
}
