//! `nbcuda doctor`: checks everything nbcuda needs and prints one line per thing:
//! `OK   <thing>: <detail>` or `FIX  <thing>: <one-line fix>`.
//!
//! Checks: the NVIDIA driver and its devices, NVRTC (path, version, discovery rule) and the CUDA
//! headers, cargo/rustc/rust-src and the shared libstd that evcxr links Rust cells against (needed
//! by Rust cells), Jupyter and the installed kernelspec.
//! It only inspects; it changes nothing, and it always exits 0 so scripts can parse its output.

use crate::compile::library;
use crate::gpu::detect;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub ok: bool,
    pub thing: String,
    /// The detail when OK, the one-line fix otherwise.
    pub detail: String,
}

impl Check {
    fn ok(thing: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            ok: true,
            thing: thing.into(),
            detail: detail.into(),
        }
    }
    fn fix(thing: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            ok: false,
            thing: thing.into(),
            detail: fix.into(),
        }
    }
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tag = if self.ok { "OK " } else { "FIX" };
        // One line per check, whatever a tool printed.
        let detail = self.detail.replace(['\n', '\r'], " ");
        write!(f, "{tag}  {}: {}", self.thing, detail.trim())
    }
}

/// Runs every check. `kernel_name` is the kernelspec to look for.
pub fn checks(kernel_name: &str) -> Vec<Check> {
    let mut out = Vec::new();
    out.extend(gpu_checks());
    out.extend(nvrtc_checks());
    out.extend(rust_checks());
    out.extend(jupyter_checks(kernel_name));
    out
}

/// Entry point of `nbcuda doctor`: prints the checks and a closing count.
pub fn run(kernel_name: &str) {
    // As the Jupyter kernel does: a cargo in rustup's folder counts even when not on PATH.
    crate::rust::toolchain::put_rustup_bin_on_path();
    let all = checks(kernel_name);
    for check in &all {
        println!("{check}");
    }
    let fixes = all.iter().filter(|c| !c.ok).count();
    println!(
        "{} checks, {} OK, {} to fix",
        all.len(),
        all.len() - fixes,
        fixes
    );
}

fn gpu_checks() -> Vec<Check> {
    match detect::detect_gpus() {
        Ok(gpus) => {
            let mut out = vec![Check::ok(
                "GPU driver",
                format!("libcuda loaded, {} device(s); backend gpu", gpus.len()),
            )];
            for g in gpus {
                out.push(Check::ok(
                    format!("GPU {}", g.ordinal),
                    format!(
                        "{}, compute capability {}.{} ({}), {} SMs, {:.1} GiB, {} MHz, {:.0} GB/s peak",
                        g.name,
                        g.compute_capability.0,
                        g.compute_capability.1,
                        g.arch(),
                        g.sms,
                        g.memory_bytes as f64 / (1u64 << 30) as f64,
                        g.clock_mhz,
                        g.peak_bandwidth_gbs
                    ),
                ));
            }
            out
        }
        Err(reason) if reason.contains("libcuda") => vec![Check::fix(
            "GPU driver",
            format!(
                "{reason}: install the NVIDIA driver to use a GPU; until then cells run on the \
                 ptxsim CPU simulator"
            ),
        )],
        Err(reason) => vec![Check::fix(
            "GPU driver",
            format!(
                "{reason}: check `nvidia-smi`; cells run on the ptxsim CPU simulator meanwhile"
            ),
        )],
    }
}

fn nvrtc_checks() -> Vec<Check> {
    let mut out = Vec::new();
    match library::load_nvrtc() {
        Ok(loc) => {
            let version = match library::nvrtc_version() {
                Ok((major, minor)) => format!("{major}.{minor}"),
                Err(e) => format!("version unknown ({e})"),
            };
            out.push(Check::ok(
                "NVRTC",
                format!(
                    "{version} at {} (found by {})",
                    loc.path.display(),
                    loc.found_by
                ),
            ));
        }
        Err(e) => {
            let first = e.split(';').next().unwrap_or(&e).to_string();
            out.push(Check::fix(
                "NVRTC",
                format!(
                    "{first}: run `bash install/setup.sh`, or set NBCUDA_NVRTC=/path/to/libnvrtc.so.12"
                ),
            ));
        }
    }
    let dirs = library::cuda_include_dirs();
    match dirs.iter().find(|d| d.join("cuda_fp16.h").is_file()) {
        Some(dir) => out.push(Check::ok(
            "CUDA headers",
            format!("cuda_fp16.h in {} ({} include folder(s))", dir.display(), dirs.len()),
        )),
        None => out.push(Check::fix(
            "CUDA headers",
            "no cuda_fp16.h found: run `bash install/setup.sh` (installs nvidia-cuda-runtime-cu12) \
             or set CUDA_PATH",
        )),
    }
    out
}

/// First line of `cmd args…`'s standard output, or why there is none.
fn first_line(cmd: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", cmd.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} {} failed: {}",
            cmd.display(),
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("")
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_string())
}

fn rust_checks() -> Vec<Check> {
    use crate::rust::toolchain;
    let mut out = Vec::new();
    // Rust cells need both; magic lines and %%cuda cells neither.
    let fix = format!("Rust cells need it: {}", toolchain::install_rust_fix());
    match toolchain::find_cargo() {
        None => out.push(Check::fix(
            "cargo",
            format!("{}: {fix}", toolchain::cargo_not_found()),
        )),
        Some(cargo) => match first_line(&cargo, &["--version"]) {
            Ok(v) => out.push(Check::ok("cargo", v)),
            Err(e) => out.push(Check::fix("cargo", format!("{e}: {fix}"))),
        },
    }
    match first_line(Path::new("rustc"), &["--version"]) {
        Ok(v) => out.push(Check::ok("rustc", v)),
        Err(e) => out.push(Check::fix("rustc", format!("{e}: {fix}"))),
    }
    match first_line(Path::new("rustc"), &["--print", "sysroot"]) {
        Ok(sysroot) => {
            // Where rustc puts the standard library's shared object: the target libdir
            // (rustup: SYSROOT/lib/rustlib/<host>/lib), or SYSROOT/lib on older layouts.
            let mut libdirs = Vec::new();
            if let Ok(dir) = first_line(Path::new("rustc"), &["--print", "target-libdir"]) {
                libdirs.push(PathBuf::from(dir));
            }
            libdirs.push(PathBuf::from(&sysroot).join("lib"));
            out.push(shared_libstd_check(&libdirs));
            let src = PathBuf::from(sysroot).join("lib/rustlib/src/rust");
            if src.is_dir() {
                out.push(Check::ok("rust-src", src.display().to_string()));
            } else {
                out.push(Check::fix(
                    "rust-src",
                    format!(
                        "{} missing: `rustup component add rust-src` (completion and inspect in Rust cells use it)",
                        src.display()
                    ),
                ));
            }
        }
        Err(e) => out.push(Check::fix(
            "rust-src",
            format!("{e}: install Rust with rustup"),
        )),
    }
    out
}

/// evcxr builds each Rust cell as a dylib linked with `-C prefer-dynamic`, so the toolchain must
/// ship the standard library as a shared `libstd-*.so` where rustc looks for it (`libdirs`: its
/// target libdir, then `SYSROOT/lib`). rustup's toolchains do; some distributions' do not
/// (Debian's `rustc-web` has only the static libstd), and there every Rust cell fails to link
/// while cargo and rustc look fine.
fn shared_libstd_check(libdirs: &[PathBuf]) -> Check {
    const THING: &str = "shared libstd";
    let found = libdirs.iter().find_map(|dir| {
        std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("libstd-") && n.ends_with(".so"))
            })
    });
    match found {
        Some(path) => Check::ok(THING, path.display().to_string()),
        None => Check::fix(
            THING,
            format!(
                "no libstd-*.so in {} (where rustc looks for it): this toolchain cannot build \
                 Rust cells (evcxr links them against the shared libstd; a distribution's rustc \
                 such as Debian's rustc-web ships only the static one). Install Rust with \
                 rustup: `{}`, put ~/.cargo/bin first on PATH, then restart the Jupyter kernel",
                libdirs
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" or "),
                crate::rust::toolchain::RUSTUP_COMMAND,
            ),
        ),
    }
}

/// The `jupyter` to ask: the active venv's, then that of the binary's Python environment, then
/// the one on PATH.
fn find_jupyter() -> Option<PathBuf> {
    let venv = std::env::var_os("VIRTUAL_ENV")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let candidates = venv
        .into_iter()
        .chain(library::python_env_of_binary())
        .map(|v| v.join("bin/jupyter"));
    for candidate in candidates {
        if candidate.is_file() {
            return Some(candidate);
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("jupyter"))
        .find(|p| p.is_file())
}

fn jupyter_checks(kernel_name: &str) -> Vec<Check> {
    let Some(jupyter) = find_jupyter() else {
        return vec![
            Check::fix(
                "Jupyter",
                "jupyter not found: run `bash install/setup.sh` (a .venv with JupyterLab), or `pip install jupyterlab`",
            ),
            Check::fix(
                "kernelspec",
                format!("cannot check without Jupyter: then run `nbcuda install --sys-prefix` (name {kernel_name})"),
            ),
        ];
    };
    let mut out = Vec::new();
    match Command::new(&jupyter).arg("--version").output() {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout);
            let core = text
                .lines()
                .find(|l| l.trim_start().starts_with("jupyter_core"))
                .or_else(|| text.lines().find(|l| l.contains("jupyter_client")))
                .unwrap_or("")
                .split_whitespace()
                .filter(|t| *t != ":")
                .collect::<Vec<_>>()
                .join(" ");
            out.push(Check::ok(
                "Jupyter",
                format!("{} ({core})", jupyter.display()),
            ));
        }
        _ => out.push(Check::fix(
            "Jupyter",
            format!(
                "`{} --version` failed: reinstall with `bash install/setup.sh`",
                jupyter.display()
            ),
        )),
    }
    out.push(kernelspec_check(&jupyter, kernel_name));
    out
}

fn kernelspec_check(jupyter: &Path, kernel_name: &str) -> Check {
    let reinstall = "run `nbcuda install --sys-prefix` (or `bash install/setup.sh`)";
    let output = match Command::new(jupyter)
        .args(["kernelspec", "list", "--json"])
        .output()
    {
        Ok(o) if o.status.success() => o.stdout,
        _ => {
            return Check::fix(
                "kernelspec",
                format!("`jupyter kernelspec list --json` failed: {reinstall}"),
            )
        }
    };
    let Ok(list) = serde_json::from_slice::<serde_json::Value>(&output) else {
        return Check::fix(
            "kernelspec",
            "unreadable `jupyter kernelspec list --json` output",
        );
    };
    let Some(entry) = list["kernelspecs"].get(kernel_name) else {
        return Check::fix(
            "kernelspec",
            format!(
                "no kernelspec {kernel_name:?} visible to {}: {reinstall}",
                jupyter.display()
            ),
        );
    };
    let dir = entry["resource_dir"].as_str().unwrap_or("?");
    let Some(exe) = entry["spec"]["argv"].get(0).and_then(|v| v.as_str()) else {
        return Check::fix(
            "kernelspec",
            format!("{dir}/kernel.json has no argv: {reinstall}"),
        );
    };
    if !Path::new(exe).is_file() {
        return Check::fix(
            "kernelspec",
            format!("{dir} starts {exe}, which does not exist: {reinstall}"),
        );
    }
    let mut detail = format!("{kernel_name} in {dir} runs {exe}");
    if let Ok(me) = std::env::current_exe() {
        let me = me.canonicalize().unwrap_or(me);
        if Path::new(exe).canonicalize().ok().as_deref() != Some(me.as_path()) {
            detail.push_str(&format!(" (not this binary, {})", me.display()));
        }
    }
    Check::ok("kernelspec", detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_is_ok_or_fix_with_a_thing() {
        for check in checks("nbcuda-doctor-test-no-such-spec") {
            let line = check.to_string();
            assert!(
                line.starts_with("OK   ") || line.starts_with("FIX  "),
                "{line:?}"
            );
            assert!(!line.contains('\n'));
            let (thing, detail) = line[5..].split_once(": ").expect("thing: detail");
            assert!(!thing.is_empty() && !detail.trim().is_empty(), "{line:?}");
        }
    }

    #[test]
    fn a_missing_kernelspec_is_a_fix_line() {
        let all = checks("nbcuda-doctor-test-no-such-spec");
        let spec = all
            .iter()
            .find(|c| c.thing == "kernelspec")
            .expect("kernelspec line");
        assert!(!spec.ok, "{spec}");
        assert!(spec.detail.contains("nbcuda install"), "{spec}");
    }

    #[test]
    fn rust_toolchain_is_seen() {
        // The tests are built by cargo, so cargo and rustc are on this machine.
        let all = rust_checks();
        for tool in ["cargo", "rustc"] {
            let c = all.iter().find(|c| c.thing == tool).expect("line");
            assert!(c.ok, "{c}");
            assert!(c.detail.starts_with(tool), "{c}");
        }
    }

    #[test]
    fn this_toolchain_has_a_shared_libstd() {
        // The tests are built by rustup's toolchain (CI and setup.sh install it), which has one.
        let all = rust_checks();
        let c = all
            .iter()
            .find(|c| c.thing == "shared libstd")
            .expect("line");
        assert!(c.ok, "{c}");
        assert!(
            c.detail.contains("libstd-") && c.detail.ends_with(".so"),
            "{c}"
        );
    }

    #[test]
    fn a_toolchain_without_a_shared_libstd_is_a_fix_line() {
        // Laid out as Debian's rustc-web lays it out: the static libstd only.
        let sysroot = tempfile::tempdir().expect("tempdir");
        let target_lib = sysroot
            .path()
            .join("lib/rustlib/x86_64-unknown-linux-gnu/lib");
        std::fs::create_dir_all(&target_lib).expect("mkdir");
        std::fs::write(target_lib.join("libstd-0123abcd.rlib"), b"").expect("write");
        std::fs::write(sysroot.path().join("lib/libstd-0123abcd.so.old"), b"").expect("write");
        let libdirs = [target_lib.clone(), sysroot.path().join("lib")];
        let c = shared_libstd_check(&libdirs);
        assert!(!c.ok, "{c}");
        let line = c.to_string();
        assert!(
            line.starts_with("FIX  shared libstd: no libstd-*.so in "),
            "{line}"
        );
        assert!(
            line.contains("rustup") && line.contains("restart"),
            "{line}"
        );
        assert!(line.contains(&target_lib.display().to_string()), "{line}");

        // rustup's layout: the shared object in the target libdir.
        std::fs::write(target_lib.join("libstd-0123abcd.so"), b"").expect("write");
        let c = shared_libstd_check(&libdirs);
        assert!(c.ok, "{c}");
        assert!(
            c.detail
                .ends_with("x86_64-unknown-linux-gnu/lib/libstd-0123abcd.so"),
            "{c}"
        );
    }

    #[test]
    fn missing_folders_are_a_fix_line() {
        let c = shared_libstd_check(&[PathBuf::from("/nonexistent/nbcuda-doctor-lib")]);
        assert!(!c.ok, "{c}");
    }

    #[test]
    fn multi_line_details_are_folded() {
        let c = Check::fix("x", "a\nb");
        assert_eq!(c.to_string(), "FIX  x: a b");
    }
}
