//! The scratch folder of one Jupyter kernel process (where evcxr builds Rust cells), and the
//! removal of the scratch folders of Jupyter kernels that have ended.
//!
//! Left to itself, evcxr makes a temporary folder of its own (about 50 MB once a cell has
//! compiled) and removes it only when its context is dropped. A Jupyter kernel that is killed (a
//! restart, a shutdown with `now=True`, a crashed front end) never drops it, nor does one that
//! leaves through `process::exit` after a shutdown request; every one of those folders stayed
//! behind, and a day of test runs filled a disk with them. So the Jupyter kernel chooses evcxr's
//! folder itself (`EVCXR_TMPDIR`): `<root>/<random>/evcxr`, where `<root>` is
//! `$NBCUDA_SCRATCH_DIR` when set (a workshop's hub gives each student a folder of their own),
//! else `$TMPDIR/nbcuda-scratch-<uid>`; its own temporary folder (`TMPDIR`, inherited by evcxr, cargo,
//! rust-analyzer and the cells) becomes `<root>/<random>/tmp`. It holds an exclusive lock (`flock`) on `<root>/<random>/lock`
//! for as long as it lives, removes its folder when it shuts down, and when it starts it removes
//! every folder under `<root>` whose lock nobody holds: the folders of Jupyter kernels that ended
//! without removing theirs.
//!
//! What this module must not do: touch anything it did not make. A user's own `EVCXR_TMPDIR` is
//! left alone, and only folders directly under `<root>` are ever removed.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The file in each scratch folder that its Jupyter kernel keeps locked.
const LOCK_FILE: &str = "lock";
/// A folder under the root without a lock file is being made right now (the lock file comes
/// microseconds after the folder), or is what a thread of an ending Jupyter kernel (rust-analyzer)
/// made again after the folder was removed at shutdown; it is removed once this old.
const ORPHAN_AGE: Duration = Duration::from_secs(60);

/// A locked scratch folder; dropping it removes the folder.
#[derive(Debug)]
pub struct Scratch {
    dir: PathBuf,
    _lock: File,
}

impl Scratch {
    /// Makes this Jupyter kernel's scratch folder, after removing those of ended Jupyter
    /// kernels, and points the process at it: `EVCXR_TMPDIR` (evcxr's build folder) at its
    /// `evcxr` subfolder, unless the user set it, and `TMPDIR` (everything else temporary: the
    /// `nb` socket, rust-analyzer's files, temporary files of cells) at its `tmp` subfolder.
    /// `None` when the folder cannot be made (a warning is logged); nothing is changed then.
    ///
    /// Call it before the process starts any thread: it changes the environment.
    pub fn for_this_kernel() -> Option<Scratch> {
        let root = default_root();
        let made = Scratch::claim_in(&root).and_then(|scratch| {
            let (evcxr, tmp) = (scratch.path().join("evcxr"), scratch.path().join("tmp"));
            fs::create_dir(&evcxr)?;
            fs::create_dir(&tmp)?;
            Ok((scratch, evcxr, tmp))
        });
        match made {
            Ok((scratch, evcxr, tmp)) => {
                if std::env::var_os("EVCXR_TMPDIR").is_none() {
                    std::env::set_var("EVCXR_TMPDIR", evcxr);
                }
                std::env::set_var("TMPDIR", tmp);
                Some(scratch)
            }
            Err(e) => {
                tracing::warn!(
                    "cannot make a scratch folder under {}: {e}; evcxr uses a temporary folder \
                     of its own, which stays behind if this Jupyter kernel is killed",
                    root.display()
                );
                None
            }
        }
    }

    /// Removes the folders under `root` whose lock is free, then makes and locks a new one.
    pub fn claim_in(root: &Path) -> io::Result<Scratch> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(root)?;
        check_private(root)?;
        sweep(root);
        // A sweep by another Jupyter kernel starting at the same moment can take the new folder
        // between its making and its locking (it sees a free lock); then make another.
        for _ in 0..4 {
            // 64 random bits: short, so that the `nb` socket's path inside fits (107 bytes).
            let dir = root.join(format!("{:016x}", uuid::Uuid::new_v4().as_u64_pair().0));
            fs::create_dir(&dir)?;
            let lock = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(dir.join(LOCK_FILE))?;
            if lock.try_lock().is_ok() && is_same_file(&dir.join(LOCK_FILE), &lock) {
                return Ok(Scratch { dir, _lock: lock });
            }
            let _ = fs::remove_dir_all(&dir);
        }
        Err(io::Error::other(
            "another process kept removing the new folder",
        ))
    }

    /// The folder; everything in it goes when the [`Scratch`] is dropped.
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// `$TMPDIR/nbcuda-scratch-<uid>`: one root per user, since /tmp is shared.
/// The environment variable naming the root of the scratch folders.
pub const SCRATCH_DIR_VAR: &str = "NBCUDA_SCRATCH_DIR";

fn default_root() -> PathBuf {
    root_from(std::env::var_os(SCRATCH_DIR_VAR))
}

fn root_from(value: Option<std::ffi::OsString>) -> PathBuf {
    match value.filter(|v| !v.is_empty()).map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir,
        Some(dir) => std::env::current_dir().map_or(dir.clone(), |cwd| cwd.join(dir)),
        None => std::env::temp_dir().join(format!("nbcuda-scratch-{}", user_id())),
    }
}

fn user_id() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// The root must be this user's alone: in a shared /tmp another user could have made it first,
/// and could then change the code evcxr builds.
fn check_private(root: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(root)?;
    if !meta.is_dir() || meta.uid() != user_id() || meta.mode() & 0o022 != 0 {
        return Err(io::Error::other(
            "it is not a folder of this user's that only this user can write to",
        ));
    }
    Ok(())
}

/// Removes each folder under `root` whose Jupyter kernel has ended: its lock file is there and
/// nobody holds the lock, or it has no lock file and is older than [`ORPHAN_AGE`]. Errors leave
/// a folder in place.
fn sweep(root: &Path) {
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let dir = entry.path();
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        match OpenOptions::new()
            .read(true)
            .write(true)
            .open(dir.join(LOCK_FILE))
        {
            // Removed while holding the lock, so no other sweep removes it at the same time.
            Ok(lock) => match lock.try_lock() {
                Ok(()) => remove_logged(&dir),
                Err(TryLockError::WouldBlock) => {} // its Jupyter kernel is alive
                Err(TryLockError::Error(e)) => {
                    tracing::debug!("cannot test the lock of {}: {e}", dir.display())
                }
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let age = entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| SystemTime::now().duration_since(t).ok());
                if age.is_some_and(|age| age > ORPHAN_AGE) {
                    remove_logged(&dir);
                }
            }
            Err(e) => tracing::debug!("cannot open the lock of {}: {e}", dir.display()),
        }
    }
}

fn remove_logged(dir: &Path) {
    match fs::remove_dir_all(dir) {
        Ok(()) => tracing::info!(
            "removed the scratch folder of an ended Jupyter kernel: {}",
            dir.display()
        ),
        Err(e) => tracing::warn!(
            "cannot remove the old scratch folder {}: {e}",
            dir.display()
        ),
    }
}

/// Whether `path` still names the open file `file` (a sweep may have removed it meanwhile).
fn is_same_file(path: &Path, file: &File) -> bool {
    match (fs::metadata(path), file.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_nbcuda_scratch_dir_when_set() {
        assert_eq!(
            root_from(Some("/srv/students/ada".into())),
            PathBuf::from("/srv/students/ada")
        );
        let relative = root_from(Some("scratch".into()));
        assert!(
            relative.is_absolute() && relative.ends_with("scratch"),
            "{relative:?}"
        );
        let default = root_from(None);
        assert_eq!(root_from(Some("".into())), default);
        assert!(default.starts_with(std::env::temp_dir()), "{default:?}");
    }

    /// A folder of the test's own (removed when dropped) and a root path inside it.
    fn test_root() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().expect("a temporary folder");
        let root = tmp.path().join("root");
        (tmp, root)
    }

    fn folders(root: &Path) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = fs::read_dir(root)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        v.sort();
        v
    }

    /// A folder as an ended Jupyter kernel leaves it: a lock file nobody holds, and content.
    fn ended_kernel_folder(root: &Path, name: &str) -> PathBuf {
        let dir = root.join(name);
        fs::create_dir_all(dir.join("evcxr/target")).expect("make folder");
        fs::write(dir.join(LOCK_FILE), b"").expect("lock file");
        fs::write(dir.join("evcxr/target/big"), vec![0u8; 4096]).expect("content");
        dir
    }

    #[test]
    fn a_claim_removes_ended_folders_and_keeps_live_ones() {
        let (_tmp, root) = test_root();
        let live = Scratch::claim_in(&root).expect("first claim");
        let ended = ended_kernel_folder(&root, "ended");
        // A folder whose lock is held through another open file: a Jupyter kernel still running.
        let running = ended_kernel_folder(&root, "running");
        let held = OpenOptions::new()
            .read(true)
            .write(true)
            .open(running.join(LOCK_FILE))
            .expect("open");
        held.try_lock().expect("lock");
        // Being made right now (no lock file yet), and one that was abandoned long ago.
        let young = root.join("young");
        fs::create_dir(&young).expect("young");
        let old = root.join("old");
        fs::create_dir(&old).expect("old");
        File::open(&old)
            .and_then(|f| f.set_modified(SystemTime::now() - 2 * ORPHAN_AGE))
            .expect("age the folder");

        let second = Scratch::claim_in(&root).expect("second claim");

        let mut want = vec![
            live.path().to_path_buf(),
            running.clone(),
            second.path().to_path_buf(),
            young.clone(),
        ];
        want.sort();
        assert_eq!(folders(&root), want);
        assert!(!ended.exists() && !old.exists());
        assert!(live.path().join(LOCK_FILE).is_file());

        // Once the running kernel's lock is free, the next claim takes its folder too.
        drop(held);
        let third = Scratch::claim_in(&root).expect("third claim");
        assert!(!running.exists());
        assert!(third.path().is_dir());
    }

    #[test]
    fn dropping_a_scratch_removes_its_folder() {
        let (_tmp, root) = test_root();
        let scratch = Scratch::claim_in(&root).expect("claim");
        let dir = scratch.path().to_path_buf();
        fs::create_dir_all(dir.join("evcxr/target")).expect("content");
        assert!(dir.join(LOCK_FILE).is_file());
        drop(scratch);
        assert!(!dir.exists());
        assert!(folders(&root).is_empty());
    }

    #[test]
    fn a_root_that_others_can_write_to_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let (tmp, root) = test_root();
        fs::create_dir_all(&root).expect("root");
        fs::set_permissions(&root, fs::Permissions::from_mode(0o777)).expect("chmod");
        let e = Scratch::claim_in(&root).expect_err("a world-writable root");
        assert!(e.to_string().contains("only this user can write"), "{e}");
        assert!(folders(&root).is_empty());
        let link = tmp.path().join("link");
        fs::set_permissions(&root, fs::Permissions::from_mode(0o700)).expect("chmod");
        std::os::unix::fs::symlink(&root, &link).expect("symlink");
        assert!(
            Scratch::claim_in(&link).is_err(),
            "a root that is a symbolic link"
        );
    }

    #[test]
    fn a_root_that_cannot_be_made_is_an_error() {
        let (_tmp, root) = test_root();
        fs::write(&root, b"not a folder").expect("file");
        assert!(Scratch::claim_in(&root).is_err());
    }
}
