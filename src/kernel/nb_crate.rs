//! The sources of the `nb` crate, built into the binary so that Rust cells can `:dep` it after
//! `cargo install` too, and written out once per version to a cache folder.

use sha2::{Digest, Sha256};
use std::path::PathBuf;

const FILES: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("../../crates/nb/Cargo.toml")),
    ("src/error.rs", include_str!("../../crates/nb/src/error.rs")),
    ("src/lib.rs", include_str!("../../crates/nb/src/lib.rs")),
    ("src/view.rs", include_str!("../../crates/nb/src/view.rs")),
    ("src/wire.rs", include_str!("../../crates/nb/src/wire.rs")),
];

/// Write the `nb` sources (if not there yet) and return their folder.
pub fn materialize() -> std::io::Result<PathBuf> {
    let mut hash = Sha256::new();
    for (name, text) in FILES {
        hash.update(name.as_bytes());
        hash.update(text.as_bytes());
    }
    let digest = hash.finalize();
    let tag: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    let base = std::env::var_os("NBCUDA_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| dirs::cache_dir().map(|d| d.join("nbcuda")))
        .unwrap_or_else(|| std::env::temp_dir().join("nbcuda"));
    let dir = base.join(format!("nb-{}-{tag}", env!("CARGO_PKG_VERSION")));
    if !dir.join("src/wire.rs").is_file() {
        let tmp = base.join(format!("nb-tmp-{}", uuid::Uuid::new_v4().simple()));
        for (name, text) in FILES {
            let path = tmp.join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(path, text)?;
        }
        // Another Jupyter kernel may have written it meanwhile: either copy is the same.
        if std::fs::rename(&tmp, &dir).is_err() {
            let _ = std::fs::remove_dir_all(&tmp);
        }
    }
    Ok(dir)
}

/// The evcxr lines that make `nb` available in Rust cells. `:cache` (at start) turns on evcxr's
/// build cache (in ~/.cache/evcxr), so `nb` and its dependencies compile once per machine, not once
/// per Jupyter kernel start (`nbcuda warm-up` fills it ahead). `:dep nb` is loaded on demand:
/// once evcxr has been idle for a few seconds, or before the first cell that names `nb` (loading
/// it takes seconds that cells without `nb` do not wait for).
pub fn prelude(dir: &std::path::Path) -> crate::rust::Prelude {
    crate::rust::Prelude {
        at_start: vec![":cache 2048".to_string()],
        on_demand: vec![
            // The folder's name holds a hash of nb's sources: evcxr may cache its build.
            format!(
                ":build_env {}={}",
                crate::rust::dep_info::CACHEABLE_SOURCE_VAR,
                dir.join("src").join("lib.rs").to_string_lossy()
            ),
            format!(":dep nb = {{ path = {:?} }}", dir.to_string_lossy()),
        ],
        names: vec!["nb".to_string()],
        // Beside nb's sources: every Jupyter kernel that shares them shares evcxr's cache too.
        load_lock: dir.parent().map(|base| base.join("nb-load.lock")),
    }
}
