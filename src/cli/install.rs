//! `nbcuda install`: writes the Jupyter kernelspec (kernel.json + logos) where Jupyter finds it.
//!
//! The spec comes from `kernels/nbcuda/kernel.json`, embedded in the binary (so `cargo install`
//! works without the source tree), with argv[0] set to the absolute path of the running binary
//! and `NBCUDA_NVRTC` set to the NVRTC library found at install time. Locations follow
//! `jupyter kernelspec install`: `--user`, `--sys-prefix`, `--prefix P`.
//! It writes only the kernelspec folder; it never starts Jupyter or a Jupyter kernel.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

const KERNEL_JSON_TEMPLATE: &str = include_str!("../../kernels/nbcuda/kernel.json");
const LOGO_32: &[u8] = include_bytes!("../../kernels/nbcuda/logo-32x32.png");
const LOGO_64: &[u8] = include_bytes!("../../kernels/nbcuda/logo-64x64.png");

/// Default kernelspec name (`jupyter kernelspec list` shows it; `--kernel nbcuda` selects it).
pub const DEFAULT_NAME: &str = "nbcuda";
/// Default name shown in Jupyter's launcher.
pub const DEFAULT_DISPLAY_NAME: &str = "Rust + CUDA (nbcuda)";

/// Where the kernelspec goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// The user's Jupyter data folder: `$JUPYTER_DATA_DIR`, else `$XDG_DATA_HOME/jupyter`, else
    /// `~/.local/share/jupyter`.
    User,
    /// `sys.prefix` of the Python environment: `$VIRTUAL_ENV` (an activated venv), else the
    /// environment the binary was installed into (`pip install nbcuda-*.whl` put it in
    /// `<prefix>/bin`; also the checkout's `.venv`), else the prefix of the `python3` on PATH.
    SysPrefix,
    /// An explicit prefix: `P/share/jupyter/kernels`.
    Prefix(PathBuf),
}

/// What `nbcuda install` was asked to do.
#[derive(Debug, Clone)]
pub struct InstallOptions {
    pub location: Location,
    pub name: String,
    pub display_name: String,
}

impl Default for InstallOptions {
    fn default() -> Self {
        InstallOptions {
            location: Location::User,
            name: DEFAULT_NAME.to_string(),
            display_name: DEFAULT_DISPLAY_NAME.to_string(),
        }
    }
}

/// The `kernels` folder for a location (the spec goes in `<that>/<name>`).
pub fn kernels_dir(location: &Location) -> Result<PathBuf> {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    match location {
        Location::User => {
            let data = if let Some(dir) = env("JUPYTER_DATA_DIR") {
                PathBuf::from(dir)
            } else if let Some(xdg) = env("XDG_DATA_HOME") {
                PathBuf::from(xdg).join("jupyter")
            } else {
                dirs::home_dir()
                    .context("cannot find the home folder for --user (set HOME)")?
                    .join(".local/share/jupyter")
            };
            Ok(data.join("kernels"))
        }
        Location::SysPrefix => {
            let prefix = match env("VIRTUAL_ENV") {
                Some(venv) => PathBuf::from(venv),
                None => match crate::compile::library::python_env_of_binary() {
                    Some(own) => own,
                    None => python_sys_prefix()?,
                },
            };
            Ok(prefix.join("share/jupyter/kernels"))
        }
        Location::Prefix(prefix) => Ok(prefix.join("share/jupyter/kernels")),
    }
}

fn python_sys_prefix() -> Result<PathBuf> {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.prefix)"])
        .output()
        .context(
            "--sys-prefix needs VIRTUAL_ENV, a Python environment holding this binary, or a \
             python3 on PATH",
        )?;
    if !out.status.success() {
        bail!("python3 -c 'import sys; print(sys.prefix)' failed");
    }
    let prefix = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if prefix.is_empty() {
        bail!("python3 printed no sys.prefix");
    }
    Ok(PathBuf::from(prefix))
}

/// Jupyter's rule for kernelspec names (jupyter_client `_kernel_name_pat`): letters, digits,
/// `.`, `_`, `-`. Also keeps the name from escaping the kernels folder.
pub fn validate_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !ok {
        bail!("invalid kernelspec name {name:?}: use letters, digits, '.', '_' or '-'");
    }
    Ok(())
}

/// The kernel.json content: the embedded template with argv[0] = `exe`, the display name, and
/// `NBCUDA_NVRTC` in `env` when an NVRTC library is known.
pub fn kernel_json(
    exe: &Path,
    display_name: &str,
    nvrtc: Option<&Path>,
) -> Result<serde_json::Value> {
    let mut spec: serde_json::Value =
        serde_json::from_str(KERNEL_JSON_TEMPLATE).context("embedded kernel.json template")?;
    let exe = exe
        .to_str()
        .context("the nbcuda binary's path is not valid UTF-8")?;
    spec["argv"][0] = serde_json::Value::from(exe);
    spec["display_name"] = serde_json::Value::from(display_name);
    if let Some(nvrtc) = nvrtc.and_then(Path::to_str) {
        spec["env"]["NBCUDA_NVRTC"] = serde_json::Value::from(nvrtc);
    }
    Ok(spec)
}

/// Installs the kernelspec and returns its folder. Replaces an existing spec of the same name.
pub fn install(opts: &InstallOptions) -> Result<PathBuf> {
    validate_name(&opts.name)?;
    let exe = std::env::current_exe().context("cannot find the running nbcuda binary")?;
    let exe = exe.canonicalize().unwrap_or(exe);
    let nvrtc = crate::compile::library::locate_nvrtc().ok();
    let spec = kernel_json(
        &exe,
        &opts.display_name,
        nvrtc.as_ref().map(|l| l.path.as_path()),
    )?;
    let dir = kernels_dir(&opts.location)?.join(&opts.name);
    write_spec(&dir, &spec)?;
    Ok(dir)
}

/// Writes kernel.json and both logos into `dir` (created if needed).
pub fn write_spec(dir: &Path, spec: &serde_json::Value) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let text = serde_json::to_string_pretty(spec)?;
    write_file(&dir.join("kernel.json"), text.as_bytes())?;
    write_file(&dir.join("logo-32x32.png"), LOGO_32)?;
    write_file(&dir.join("logo-64x64.png"), LOGO_64)?;
    Ok(())
}

/// Writes through a temporary file and a rename, so Jupyter never reads half a kernel.json.
fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp-nbcuda");
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Entry point of `nbcuda install`: installs and prints what it did.
pub fn run(opts: &InstallOptions) -> Result<()> {
    let dir = install(opts)?;
    println!(
        "Installed Jupyter kernelspec {:?} in {}",
        opts.name,
        dir.display()
    );
    match crate::compile::library::locate_nvrtc() {
        Ok(loc) => println!("  NBCUDA_NVRTC={}", loc.path.display()),
        Err(_) => println!(
            "  NVRTC not found: %%cuda cells will not compile until it is (see `nbcuda doctor`)"
        ),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_json_has_the_launch_contract() {
        let spec = kernel_json(
            Path::new("/opt/bin/nbcuda"),
            "Rust test",
            Some(Path::new("/x/libnvrtc.so.12")),
        )
        .expect("spec");
        assert_eq!(
            spec["argv"],
            serde_json::json!([
                "/opt/bin/nbcuda",
                "kernel",
                "--connection-file",
                "{connection_file}"
            ])
        );
        assert_eq!(spec["language"], "rust");
        assert_eq!(spec["interrupt_mode"], "message");
        assert_eq!(spec["display_name"], "Rust test");
        assert_eq!(spec["env"]["NBCUDA_NVRTC"], "/x/libnvrtc.so.12");
        let without = kernel_json(Path::new("/b"), "d", None).expect("spec");
        assert!(without["env"].get("NBCUDA_NVRTC").is_none());
    }

    #[test]
    fn names_that_could_escape_the_kernels_folder_are_refused() {
        for bad in ["", ".", "..", "../x", "a/b", "a b", "nb\0"] {
            assert!(validate_name(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["nbcuda", "nbcuda-test_2.0"] {
            assert!(validate_name(good).is_ok(), "{good:?} refused");
        }
    }

    #[test]
    fn prefix_install_writes_a_valid_spec_and_real_logos() {
        let prefix = std::env::temp_dir().join(format!("nbcuda-install-{}", std::process::id()));
        let dir = kernels_dir(&Location::Prefix(prefix.clone()))
            .expect("dir")
            .join("nbt");
        assert!(dir.starts_with(prefix.join("share/jupyter/kernels")));
        let spec = kernel_json(Path::new("/bin/true"), "t", None).expect("spec");
        write_spec(&dir, &spec).expect("write");
        write_spec(&dir, &spec).expect("rewrite over an existing spec");
        let text = std::fs::read_to_string(dir.join("kernel.json")).expect("read");
        let back: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(back, spec);
        for (file, size) in [("logo-32x32.png", 32), ("logo-64x64.png", 64)] {
            let img = image::open(dir.join(file)).expect("decodes as an image");
            assert_eq!((img.width(), img.height()), (size, size), "{file}");
        }
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .expect("list")
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains("tmp"))
            .collect();
        assert!(leftovers.is_empty());
        let _ = std::fs::remove_dir_all(prefix);
    }
}
