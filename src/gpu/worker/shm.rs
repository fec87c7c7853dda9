//! Shared memory between the Jupyter kernel and its GPU worker for large copies: a file in
//! `/dev/shm` mapped by both processes, so array contents cross once (a `memcpy`) instead of
//! through the socket (which ran at about 1 GB/s on the GPU machine).
//!
//! The only unsafe code of the worker's data path (`mmap`/`munmap`) lives here, behind a safe
//! slice API. Nothing here knows about requests or devices.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A shared, writable mapping of a file.
pub struct SharedBuf {
    ptr: *mut u8,
    len: usize,
    path: PathBuf,
    _file: File,
}

// SAFETY: the mapping is owned by this value; access goes through &/&mut self.
unsafe impl Send for SharedBuf {}

static NEXT: AtomicU64 = AtomicU64::new(0);

impl SharedBuf {
    /// A new buffer of `len` bytes under `/dev/shm` (the Jupyter kernel's side).
    pub fn create(len: usize) -> io::Result<SharedBuf> {
        let dir = Path::new("/dev/shm");
        if !dir.is_dir() {
            return Err(io::Error::other("no /dev/shm"));
        }
        let path = dir.join(format!(
            "nbcuda-worker-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        file.set_len(len as u64)?;
        SharedBuf::map(file, path, len)
    }

    /// Maps an existing buffer (the worker's side).
    pub fn open(path: &Path, len: usize) -> io::Result<SharedBuf> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        if file.metadata()?.len() < len as u64 {
            return Err(io::Error::other("the shared buffer is smaller than asked"));
        }
        SharedBuf::map(file, path.to_path_buf(), len)
    }

    fn map(file: File, path: PathBuf, len: usize) -> io::Result<SharedBuf> {
        if len == 0 {
            return Err(io::Error::other("an empty shared buffer"));
        }
        // SAFETY: maps `len` bytes of an open file, shared; checked for MAP_FAILED below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SharedBuf {
            ptr: ptr.cast(),
            len,
            path,
            _file: file,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the file name (the mappings stay valid).
    pub fn unlink(&self) {
        let _ = std::fs::remove_file(&self.path);
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` bytes for the life of `self`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for SharedBuf {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `map` mapped.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_mappings_see_the_same_bytes() {
        let Ok(mut a) = SharedBuf::create(1 << 20) else {
            testkit::skip("no /dev/shm here");
            return;
        };
        let mut b = SharedBuf::open(a.path(), 1 << 20).expect("opens");
        a.unlink();
        a.as_mut_slice()[12345] = 77;
        assert_eq!(b.as_slice()[12345], 77);
        b.as_mut_slice()[0] = 9;
        assert_eq!(a.as_slice()[0], 9);
        assert!(SharedBuf::open(a.path(), 1).is_err(), "the name is gone");
    }
}
