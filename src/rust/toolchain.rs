//! Whether this machine can run Rust cells: where `cargo` is, and the one text that says how to
//! get it, shared by the first Rust cell's error and `nbcuda doctor`.
//!
//! A wheel install (`pip install nbcuda-*.whl`) brings no Rust toolchain: magic lines and
//! `%%cuda` cells work without one, Rust cells need cargo (evcxr builds each cell with it).
//! rustup puts cargo in `~/.cargo/bin` (`$CARGO_HOME/bin`) and adds that folder to the PATH of
//! *new* login shells only, so a Jupyter server started before the install would never see it:
//! [`put_rustup_bin_on_path`] adds the folder to this process's PATH when cargo is there and not
//! on PATH, and restarting the Jupyter kernel is then enough.
//!
//! What this module must not do: install anything, or run cargo (finding the file is enough;
//! evcxr runs it, and doctor asks its version).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// rustup's documented one-line install (https://rustup.rs), non-interactive.
pub const RUSTUP_COMMAND: &str =
    "curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y";

/// What is missing, in the words of the first Rust cell's error and of `nbcuda doctor`.
pub fn cargo_not_found() -> String {
    format!(
        "`cargo` is neither on the PATH nor in {}",
        rustup_bin().map_or("~/.cargo/bin".to_owned(), |d| d.display().to_string())
    )
}

/// The fix, as `nbcuda doctor` prints it (the cell's error has the command on a line of its own).
pub fn install_rust_fix() -> String {
    format!("install Rust with `{RUSTUP_COMMAND}`, then restart the Jupyter kernel")
}

/// The error of the first Rust cell when cargo is missing: what is wrong, the one command that
/// fixes it, and what to do after it.
pub fn missing_cargo_message() -> String {
    format!(
        "Rust cells need a Rust toolchain, and {}. Magic lines and %%cuda cells work without \
         it. To run Rust cells, install Rust in a terminal with\n\n    {RUSTUP_COMMAND}\n\nthen \
         restart the Jupyter kernel (`nbcuda doctor` checks the toolchain).",
        cargo_not_found()
    )
}

/// The error of every later Rust cell when cargo is missing (the first one said how to fix it).
pub const MISSING_CARGO_AGAIN: &str = "Rust cells need `cargo`, which this Jupyter kernel did \
not find: the first Rust cell's error says how to install it; restart the Jupyter kernel after.";

/// `$CARGO_HOME/bin`, else `~/.cargo/bin`: where rustup installs cargo.
pub fn rustup_bin() -> Option<PathBuf> {
    rustup_bin_from(&|name| std::env::var_os(name))
}

fn rustup_bin_from(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let nonempty = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    nonempty("CARGO_HOME")
        .or_else(|| nonempty("HOME").map(|home| home.join(".cargo")))
        .map(|dir| dir.join("bin"))
}

/// `cargo` on PATH, else in [`rustup_bin`].
pub fn find_cargo() -> Option<PathBuf> {
    find_cargo_from(&|name| std::env::var_os(name))
}

fn find_cargo_from(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    on_path(env("PATH").as_deref(), "cargo").or_else(|| {
        rustup_bin_from(env)
            .map(|d| d.join("cargo"))
            .filter(|c| is_executable(c))
    })
}

/// When cargo is not on PATH but in rustup's bin folder, puts that folder first on PATH (evcxr
/// runs `cargo` and `rustc` by name). Call it before the process starts any thread.
pub fn put_rustup_bin_on_path() {
    let path = std::env::var_os("PATH");
    if on_path(path.as_deref(), "cargo").is_some() {
        return;
    }
    let Some(bin) = rustup_bin().filter(|d| is_executable(&d.join("cargo"))) else {
        return;
    };
    let mut dirs = vec![bin];
    dirs.extend(path.iter().flat_map(std::env::split_paths));
    if let Ok(joined) = std::env::join_paths(dirs) {
        std::env::set_var("PATH", joined);
    }
}

fn on_path(path: Option<&std::ffi::OsStr>, program: &str) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::os::unix::fs::PermissionsExt;

    fn env_of(vars: &[(&str, &Path)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_os_str().to_owned()))
            .collect();
        move |name: &str| map.get(name).cloned()
    }

    fn fake_cargo(dir: &Path) {
        std::fs::create_dir_all(dir).expect("scratch");
        let cargo = dir.join("cargo");
        std::fs::write(&cargo, "#!/bin/sh\n").expect("scratch");
        std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    #[test]
    fn cargo_is_found_on_path_then_in_rustups_folder() {
        let tmp = tempfile::tempdir().expect("scratch");
        let (on_path_dir, home, cargo_home) = (
            tmp.path().join("bin"),
            tmp.path().join("home"),
            tmp.path().join("ch"),
        );
        let empty = tmp.path().join("empty");
        std::fs::create_dir_all(&empty).expect("scratch");
        fake_cargo(&on_path_dir);
        fake_cargo(&home.join(".cargo/bin"));

        let env = env_of(&[("PATH", &on_path_dir), ("HOME", &home)]);
        assert_eq!(find_cargo_from(&env), Some(on_path_dir.join("cargo")));
        // Not on PATH: ~/.cargo/bin, unless CARGO_HOME points elsewhere.
        let env = env_of(&[("PATH", &empty), ("HOME", &home)]);
        assert_eq!(find_cargo_from(&env), Some(home.join(".cargo/bin/cargo")));
        let env = env_of(&[
            ("PATH", &empty),
            ("HOME", &home),
            ("CARGO_HOME", &cargo_home),
        ]);
        assert_eq!(find_cargo_from(&env), None);
        fake_cargo(&cargo_home.join("bin"));
        assert_eq!(find_cargo_from(&env), Some(cargo_home.join("bin/cargo")));
        // A file that is not executable is no cargo.
        let not_exe = tmp.path().join("noexec");
        std::fs::create_dir_all(&not_exe).expect("scratch");
        std::fs::write(not_exe.join("cargo"), "").expect("scratch");
        let env = env_of(&[("PATH", &not_exe), ("HOME", &empty)]);
        assert_eq!(find_cargo_from(&env), None);
    }

    #[test]
    fn the_message_gives_one_command_and_what_to_do_after() {
        let m = missing_cargo_message();
        assert!(m.contains(RUSTUP_COMMAND), "{m}");
        assert!(m.contains("restart the Jupyter kernel"), "{m}");
        assert!(m.contains("%%cuda"), "{m}");
        assert!(!MISSING_CARGO_AGAIN.contains(RUSTUP_COMMAND));
        assert!(install_rust_fix().contains(RUSTUP_COMMAND));
    }
}
