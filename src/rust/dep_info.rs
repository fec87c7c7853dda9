//! In the rustc-wrapper process (this binary started by cargo with `EVCXR_RUSTC_WRAPPER`):
//! keeps evcxr's build cache from making every Rust cell recompile its dependencies.
//!
//! evcxr's cache (`:cache`, in `~/.cache/evcxr`) stores each dependency's compiler outputs,
//! keyed by the compiler's arguments with the target folder masked, so that every Jupyter kernel
//! reuses them. One of those outputs is the dep-info file (`<crate>-<hash>.d`), and for a crate
//! with a build script it names files under that script's `OUT_DIR` (serde's and serde_core's
//! `include!`d `private.rs`, the `# env-dep:OUT_DIR=` line) by absolute path: the target folder of
//! the Jupyter kernel that filled the cache. Once that kernel has exited, its folder is gone, cargo
//! sees a missing input, rebuilds the crate, the cache restores the same file, and every later
//! cell rebuilds it again (about 6 s a cell for `nb`'s serde dependencies).
//!
//! [`wrap_rustc_if_asked`] runs evcxr's wrapper as a child and, when it succeeded, rewrites the
//! dep-info file so that it names this build's `OUT_DIR`. [`repair`] is that rewrite.
//!
//! It also makes one local crate cacheable: evcxr skips crates compiled incrementally (cargo does
//! so for path crates), so for the crate root named by [`CACHEABLE_SOURCE_VAR`] (`nb`'s, whose
//! folder is named after a hash of its sources) it drops `-C incremental` before evcxr's wrapper
//! sees the arguments.
//!
//! Runs before `evcxr::runtime_hook()`; must do nothing in any other process.

use std::path::{Path, PathBuf};
use std::process::Command;

/// evcxr's marker for "this process wraps rustc" (evcxr's `runtime::WRAP_RUSTC_ENV`).
const EVCXR_WRAPPER_VAR: &str = "EVCXR_RUSTC_WRAPPER";
/// Set in the child so that it runs evcxr's wrapper itself instead of wrapping again.
const INNER_VAR: &str = "NBCUDA_RUSTC_WRAPPER_INNER";
/// A crate root (`…/src/lib.rs`) of a local crate whose compiled outputs evcxr may cache: set
/// with evcxr's `:build_env` for a crate whose folder is named after its contents (`nb`'s).
pub const CACHEABLE_SOURCE_VAR: &str = "NBCUDA_CACHEABLE_CRATE_ROOT";
/// The dep-info line that records the `OUT_DIR` the crate was compiled with.
const OUT_DIR_LINE: &str = "# env-dep:OUT_DIR=";

/// When cargo runs this binary as evcxr's rustc wrapper: runs the wrapper as a child, repairs
/// the dep-info file and exits with the child's status. Returns at once in any other process.
pub fn wrap_rustc_if_asked() {
    if std::env::var_os(EVCXR_WRAPPER_VAR).is_none() || std::env::var_os(INNER_VAR).is_some() {
        return;
    }
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(source) = std::env::var_os(CACHEABLE_SOURCE_VAR) {
        args = without_incremental(args, &source.to_string_lossy());
    }
    let status = std::env::current_exe()
        .and_then(|exe| Command::new(exe).args(&args).env(INNER_VAR, "1").status());
    let status = match status {
        Ok(status) => status,
        Err(e) => {
            eprintln!("nbcuda: cannot run evcxr's rustc wrapper: {e}");
            std::process::exit(1);
        }
    };
    if status.success() {
        if let (Some(out_dir), Some(path)) = (std::env::var_os("OUT_DIR"), dep_info_path(&args)) {
            repair_file(&path, &out_dir.to_string_lossy());
        }
    }
    std::process::exit(status.code().unwrap_or(1));
}

/// rustc's arguments without `-C incremental=…` when they compile the crate root `source`.
///
/// evcxr caches only crates compiled without incremental compilation (cargo turns it on for
/// local path crates, which may change between builds). A crate whose folder name holds a hash of
/// its sources cannot change under the same path, so its outputs are as cacheable as a registry
/// crate's: `nb` then compiles once per machine instead of once per Jupyter kernel (seconds).
fn without_incremental(args: Vec<String>, source: &str) -> Vec<String> {
    if !args.iter().any(|arg| arg == source) {
        return args;
    }
    let mut kept = Vec::with_capacity(args.len());
    let mut it = args.into_iter().peekable();
    while let Some(arg) = it.next() {
        if arg == "-C" && it.peek().is_some_and(|v| v.starts_with("incremental=")) {
            it.next();
            continue;
        }
        if arg.starts_with("-Cincremental=") {
            continue;
        }
        kept.push(arg);
    }
    kept
}

/// Rewrites the dep-info file at `path` in place when it names another build's `OUT_DIR`; any
/// error leaves the file as it was (cargo then rebuilds the crate, as without this module).
fn repair_file(path: &Path, out_dir: &str) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    if let Some(fixed) = repair(&text, out_dir) {
        let tmp = path.with_extension("d.nbcuda-tmp");
        if std::fs::write(&tmp, fixed).is_ok() && std::fs::rename(&tmp, path).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

/// The dep-info text with another build's target folder replaced by this build's, or None when
/// it already names `out_dir` (or names no `OUT_DIR`).
///
/// Both `OUT_DIR`s end in the same `<triple>/debug/build/<crate>-<hash>/out` (the cache key holds
/// every argument but the target folder); what comes before that common tail is the target
/// folder, and every occurrence of the old one is replaced.
pub fn repair(text: &str, out_dir: &str) -> Option<String> {
    let old_out = text
        .lines()
        .find_map(|line| line.strip_prefix(OUT_DIR_LINE))?
        .trim_end();
    if old_out == out_dir {
        return None;
    }
    let (old_root, new_root) = strip_common_tail(Path::new(old_out), Path::new(out_dir))?;
    let (old_root, new_root) = (old_root.to_str()?, new_root.to_str()?);
    if old_root.is_empty() || new_root.is_empty() {
        return None;
    }
    Some(text.replace(&format!("{old_root}/"), &format!("{new_root}/")))
}

/// The two paths without the components they end in alike: `/a/t/x/out`, `/b/t/x/out` →
/// (`/a`, `/b`). None when they share no tail.
fn strip_common_tail(old: &Path, new: &Path) -> Option<(PathBuf, PathBuf)> {
    let old: Vec<_> = old.components().collect();
    let new: Vec<_> = new.components().collect();
    let common = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    if common == 0 {
        return None;
    }
    let root = |parts: &[std::path::Component]| parts.iter().collect::<PathBuf>();
    Some((
        root(&old[..old.len() - common]),
        root(&new[..new.len() - common]),
    ))
}

/// `<--out-dir>/<--crate-name><-C extra-filename>.d`, from rustc's arguments.
fn dep_info_path(args: &[String]) -> Option<PathBuf> {
    let mut out_dir = None;
    let mut crate_name = None;
    let mut extra = String::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--out-dir" => out_dir = it.next().cloned(),
            "--crate-name" => crate_name = it.next().cloned(),
            "-C" => {
                if let Some(value) = it.next().and_then(|v| v.strip_prefix("extra-filename=")) {
                    extra = value.to_owned();
                }
            }
            other => {
                if let Some(value) = other.strip_prefix("-Cextra-filename=") {
                    extra = value.to_owned();
                }
            }
        }
    }
    Some(PathBuf::from(out_dir?).join(format!("{}{extra}.d", crate_name?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "/tmp/s/425/evcxr/target";
    const NEW_OUT: &str =
        "/tmp/s/9f1/evcxr/target/x86_64-unknown-linux-gnu/debug/build/serde-a8/out";

    fn cached_dep_info() -> String {
        format!(
            "{OLD}/x86_64-unknown-linux-gnu/debug/deps/serde-84.d: /reg/serde/src/lib.rs {OLD}/x86_64-unknown-linux-gnu/debug/build/serde-a8/out/private.rs\n\n\
             /reg/serde/src/lib.rs:\n\
             {OLD}/x86_64-unknown-linux-gnu/debug/build/serde-a8/out/private.rs:\n\n\
             # env-dep:OUT_DIR={OLD}/x86_64-unknown-linux-gnu/debug/build/serde-a8/out\n"
        )
    }

    #[test]
    fn another_kernels_out_dir_becomes_this_builds() {
        let fixed = repair(&cached_dep_info(), NEW_OUT).expect("rewritten");
        assert!(!fixed.contains("/tmp/s/425/"), "{fixed}");
        assert!(
            fixed.contains(&format!("{NEW_OUT}/private.rs:\n")),
            "{fixed}"
        );
        assert!(
            fixed.contains(&format!("# env-dep:OUT_DIR={NEW_OUT}\n")),
            "{fixed}"
        );
        // Registry sources are left alone, and the result is already repaired.
        assert!(fixed.contains("/reg/serde/src/lib.rs:\n"), "{fixed}");
        assert_eq!(repair(&fixed, NEW_OUT), None);
    }

    #[test]
    fn nothing_to_do_without_out_dir_or_common_tail() {
        assert_eq!(
            repair("/a/x.d: /reg/lib.rs\n\n/reg/lib.rs:\n", NEW_OUT),
            None
        );
        let text = format!("# env-dep:OUT_DIR={OLD}/elsewhere/out-other\n");
        assert_eq!(repair(&text, "/x/y/z"), None);
    }

    #[test]
    fn incremental_compilation_is_dropped_for_the_cacheable_crate_only() {
        let args = |root: &str| -> Vec<String> {
            [
                "rustc",
                "--crate-name",
                "nb",
                root,
                "-C",
                "incremental=/t/incremental",
                "-Cincremental=/t/inc2",
                "-C",
                "opt-level=2",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect()
        };
        let root = "/c/nbcuda/nb-0.1.0-42a9/src/lib.rs";
        assert_eq!(
            without_incremental(args(root), root),
            ["rustc", "--crate-name", "nb", root, "-C", "opt-level=2"]
        );
        let other = args("/work/my-crate/src/lib.rs");
        assert_eq!(without_incremental(other.clone(), root), other);
    }

    #[test]
    fn dep_info_path_follows_rustcs_arguments() {
        let args: Vec<String> = [
            "rustc",
            "--crate-name",
            "serde_core",
            "--edition=2021",
            "-C",
            "extra-filename=-1b7a",
            "--out-dir",
            "/t/deps",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            dep_info_path(&args),
            Some(PathBuf::from("/t/deps/serde_core-1b7a.d"))
        );
        assert_eq!(dep_info_path(&args[..3]), None);
    }
}
