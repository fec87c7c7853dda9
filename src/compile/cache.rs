//! The persistent, content-addressed compile cache: one JSON file per compilation, named by the
//! SHA-256 of everything that determines NVRTC's output (source, options, name expressions,
//! NVRTC version, target). It survives Jupyter kernel restarts; a corrupt or foreign entry is
//! ignored (and rewritten by the next miss). Writes are atomic (temporary file + rename).
//!
//! Directory: `$NBCUDA_CACHE_DIR`, else `~/.cache/nbcuda/ptx`. This module must not call NVRTC.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

const FORMAT: u32 = 1;

/// What one compilation produced, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheEntry {
    pub format: u32,
    pub key: String,
    pub ptx: String,
    /// CUBIN bytes, base64.
    pub cubin: Option<String>,
    /// NVRTC's log (warnings).
    pub log: String,
    /// `(name expression, lowered name)`.
    pub lowered: Vec<(String, String)>,
    /// Name expressions NVRTC could not resolve, with the reason.
    pub dropped: Vec<(String, String)>,
    /// SHA-256 of the fields above, to detect truncated or edited files.
    pub checksum: String,
}

impl CacheEntry {
    pub fn new(
        key: &str,
        ptx: String,
        cubin: Option<String>,
        log: String,
        lowered: Vec<(String, String)>,
        dropped: Vec<(String, String)>,
    ) -> CacheEntry {
        let mut e = CacheEntry {
            format: FORMAT,
            key: key.to_string(),
            ptx,
            cubin,
            log,
            lowered,
            dropped,
            checksum: String::new(),
        };
        e.checksum = e.compute_checksum();
        e
    }

    fn compute_checksum(&self) -> String {
        let mut h = Sha256::new();
        for part in [&self.key, &self.ptx, &self.log] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        h.update(self.cubin.as_deref().unwrap_or("-").as_bytes());
        for (a, b) in self.lowered.iter().chain(&self.dropped) {
            h.update((a.len() as u64).to_le_bytes());
            h.update(a.as_bytes());
            h.update((b.len() as u64).to_le_bytes());
            h.update(b.as_bytes());
        }
        hex(&h.finalize())
    }
}

/// SHA-256 of length-prefixed parts, as lowercase hex.
pub fn key_of(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    h.update(b"nbcuda-compile-cache");
    h.update(FORMAT.to_le_bytes());
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    }
    hex(&h.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A cache directory.
#[derive(Debug, Clone, PartialEq)]
pub struct DiskCache {
    dir: PathBuf,
}

impl DiskCache {
    pub fn new(dir: PathBuf) -> DiskCache {
        DiskCache { dir }
    }

    /// `$NBCUDA_CACHE_DIR`, else `~/.cache/nbcuda/ptx` (None if there is no home).
    pub fn default_dir() -> Option<PathBuf> {
        match std::env::var_os("NBCUDA_CACHE_DIR").filter(|v| !v.is_empty()) {
            Some(d) => Some(PathBuf::from(d)),
            None => dirs::cache_dir().map(|d| d.join("nbcuda").join("ptx")),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    /// The entry for `key`, if present and intact.
    pub fn get(&self, key: &str) -> Option<CacheEntry> {
        let bytes = std::fs::read(self.path(key)).ok()?;
        let entry: CacheEntry = serde_json::from_slice(&bytes).ok()?;
        (entry.format == FORMAT && entry.key == key && entry.checksum == entry.compute_checksum())
            .then_some(entry)
    }

    /// Stores `entry` atomically. Failures (read-only disk, …) are returned for logging only.
    pub fn put(&self, entry: &CacheEntry) -> Result<(), String> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
        let json = serde_json::to_vec(entry).map_err(|e| e.to_string())?;
        let tmp = self
            .dir
            .join(format!(".{}.{}.tmp", entry.key, std::process::id()));
        std::fs::write(&tmp, json).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, self.path(&entry.key)).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("cannot store cache entry: {e}")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_round_trip_and_corruption() {
        let dir = std::env::temp_dir().join(format!("nbcuda-cache-test-{}", std::process::id()));
        let cache = DiskCache::new(dir.clone());
        let key = key_of(&["src", "opt"]);
        assert_ne!(key, key_of(&["srco", "pt"]), "parts are length-prefixed");
        assert!(cache.get(&key).is_none());
        let e = CacheEntry::new(
            &key,
            ".version 8.8".into(),
            None,
            String::new(),
            vec![("&a".into(), "a".into())],
            vec![],
        );
        assert!(cache.put(&e).is_ok());
        assert_eq!(cache.get(&key), Some(e.clone()));
        // Truncated file → miss.
        let path = cache.path(&key);
        let bytes = std::fs::read(&path).unwrap_or_default();
        let _ = std::fs::write(&path, &bytes[..bytes.len() / 2]);
        assert!(cache.get(&key).is_none());
        // Edited content with a stale checksum → miss.
        let mut bad = e.clone();
        bad.ptx = ".version 1.0".into();
        let _ = std::fs::write(&path, serde_json::to_vec(&bad).unwrap_or_default());
        assert!(cache.get(&key).is_none());
        // Rewritten → hit again.
        assert!(cache.put(&e).is_ok());
        assert_eq!(cache.get(&key), Some(e));
        let _ = std::fs::remove_dir_all(dir);
    }
}
