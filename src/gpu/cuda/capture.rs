//! Capture of what the process writes to its C standard output (file descriptor 1) while a
//! closure runs: the CUDA driver prints device `printf` output through the C runtime's `stdout`
//! when it synchronises, so the GPU backend wraps synchronisation in [`capture_stdout`] and shows
//! the text in the cell.
//!
//! How: fd 1 is pointed at a pipe (dup/dup2) around the closure, a reader thread drains the
//! pipe meanwhile (so a writer never blocks on a full pipe), C stdio is flushed before fd 1 is
//! restored, and the text is kept up to a limit with a note saying how much was dropped.
//! Captures are serialised by a process-wide lock. Anything else the process writes to fd 1
//! during the window lands in the capture too (the Jupyter kernel process does not use its
//! stdout for anything else).
//!
//! This module never panics and never loses the process's stdout: when the redirect cannot be set
//! up, the closure runs uncaptured and the result says why.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The default cap on captured printf text per synchronisation.
pub const DEFAULT_LIMIT: usize = 1 << 20;

/// What was written to fd 1.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Captured {
    /// The text, lossily decoded as UTF-8, at most the limit, plus a note when bytes were dropped.
    pub text: String,
    /// Bytes written beyond the limit (dropped).
    pub dropped: usize,
    /// Why nothing could be captured, if so.
    pub unavailable: Option<String>,
}

static LOCK: Mutex<()> = Mutex::new(());

fn last_os_error(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

/// Flushes every C stdio stream (the driver's printf output sits in `stdout`'s buffer).
fn flush_c_stdio() {
    // SAFETY: fflush(NULL) flushes all open output streams; always valid.
    unsafe {
        libc::fflush(std::ptr::null_mut());
    }
}

/// The redirect: fd 1 → pipe, with the saved original and the reader.
struct Redirect {
    saved: OwnedFd,
    stop: Arc<AtomicBool>,
    reader: std::thread::JoinHandle<(Vec<u8>, usize)>,
}

fn start(limit: usize) -> Result<Redirect, String> {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    flush_c_stdio();
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(last_os_error("pipe2"));
    }
    // SAFETY: pipe2 succeeded, so both descriptors are open and owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: plain fcntl calls on a descriptor we own; failures are harmless (a smaller pipe,
    // or a blocking read end, which the reader's poll still handles).
    unsafe {
        libc::fcntl(read.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20);
        let flags = libc::fcntl(read.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(read.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    // SAFETY: duplicates fd 1 (open in any process we run in) to a new descriptor.
    let saved = unsafe { libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3) };
    if saved < 0 {
        return Err(last_os_error("dup(1)"));
    }
    // SAFETY: fcntl returned a fresh descriptor that we now own.
    let saved = unsafe { OwnedFd::from_raw_fd(saved) };
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let reader = std::thread::Builder::new()
        .name("nbcuda-printf".into())
        .spawn(move || drain(read, limit, &stop2))
        .map_err(|e| format!("cannot start the printf reader thread: {e}"))?;
    // SAFETY: points fd 1 at the pipe's write end; `write` stays open until after the call.
    if unsafe { libc::dup2(write.as_raw_fd(), 1) } < 0 {
        let e = last_os_error("dup2");
        stop.store(true, Ordering::SeqCst);
        drop(write);
        let _ = reader.join();
        return Err(e);
    }
    drop(write);
    Ok(Redirect {
        saved,
        stop,
        reader,
    })
}

/// Reads the pipe until end of file, or until told to stop and nothing is left.
fn drain(read: OwnedFd, limit: usize, stop: &AtomicBool) -> (Vec<u8>, usize) {
    let mut kept: Vec<u8> = Vec::new();
    let mut dropped = 0usize;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: reads into a buffer of the given length from a descriptor we own.
        let n = unsafe { libc::read(read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n > 0 {
            let n = n as usize;
            let room = limit.saturating_sub(kept.len()).min(n);
            kept.extend_from_slice(&buf[..room]);
            dropped += n - room;
            continue;
        }
        if n == 0 {
            break; // every write end is closed
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EAGAIN) => {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let mut pfd = libc::pollfd {
                    fd: read.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd; a short timeout so `stop` is seen promptly.
                unsafe {
                    libc::poll(&mut pfd, 1, 5);
                }
            }
            _ => break,
        }
    }
    (kept, dropped)
}

fn finish(r: Redirect) -> Result<(Vec<u8>, usize), String> {
    flush_c_stdio();
    // SAFETY: restores fd 1 from the saved duplicate, which is open.
    let restored = unsafe { libc::dup2(r.saved.as_raw_fd(), 1) } >= 0;
    let restore_err = (!restored).then(|| last_os_error("restoring fd 1"));
    r.stop.store(true, Ordering::SeqCst);
    let out = r
        .reader
        .join()
        .map_err(|_| "the printf reader thread failed".to_string());
    match restore_err {
        Some(e) => Err(e),
        None => out,
    }
}

/// Runs `f` with fd 1 redirected into a buffer of at most `limit` bytes.
pub fn capture_stdout<R>(limit: usize, f: impl FnOnce() -> R) -> (R, Captured) {
    let _guard = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let redirect = match start(limit) {
        Ok(r) => r,
        Err(why) => {
            let r = f();
            return (
                r,
                Captured {
                    unavailable: Some(why),
                    ..Captured::default()
                },
            );
        }
    };
    let r = f();
    match finish(redirect) {
        Ok((bytes, dropped)) => {
            let mut text = String::from_utf8_lossy(&bytes).into_owned();
            if dropped > 0 {
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&format!(
                    "[nbcuda: device printf output truncated: {dropped} more bytes dropped \
                     (limit {limit} bytes per synchronisation)]\n"
                ));
            }
            (
                r,
                Captured {
                    text,
                    dropped,
                    unavailable: None,
                },
            )
        }
        Err(why) => (
            r,
            Captured {
                unavailable: Some(why),
                ..Captured::default()
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_fd1(bytes: &[u8]) {
        let mut off = 0;
        while off < bytes.len() {
            // SAFETY: writes from a valid buffer to fd 1.
            let n = unsafe { libc::write(1, bytes[off..].as_ptr().cast(), bytes.len() - off) };
            assert!(n > 0, "{}", std::io::Error::last_os_error());
            off += n as usize;
        }
    }

    /// (device, inode) of fd 1, read under the capture lock (other tests capture in parallel).
    fn fd1_identity() -> (u64, u64) {
        let _guard = LOCK.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: fstat into a zeroed struct of the right type.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::fstat(1, &mut st) };
        assert_eq!(rc, 0);
        (st.st_dev, st.st_ino)
    }

    #[test]
    fn captures_raw_writes_and_c_printf_then_restores_fd1() {
        let before = fd1_identity();
        let (value, cap) = capture_stdout(DEFAULT_LIMIT, || {
            write_fd1(b"written to fd 1: 42\n");
            // C stdio, buffered: only the flush inside the capture makes it appear.
            let fmt = c"from C printf: %d %s\n";
            let word = c"seven";
            // SAFETY: a valid format with matching arguments.
            unsafe {
                libc::printf(fmt.as_ptr(), 7 as libc::c_int, word.as_ptr());
            }
            "done"
        });
        assert_eq!(value, "done");
        assert_eq!(cap.unavailable, None);
        assert!(cap.text.contains("written to fd 1: 42\n"), "{:?}", cap.text);
        assert!(
            cap.text.contains("from C printf: 7 seven\n"),
            "{:?}",
            cap.text
        );
        assert_eq!(cap.dropped, 0);
        assert_eq!(fd1_identity(), before, "fd 1 must be restored");
        // A second capture sees only its own output.
        let ((), cap2) = capture_stdout(DEFAULT_LIMIT, || write_fd1(b"second\n"));
        assert!(cap2.text.contains("second\n"), "{:?}", cap2.text);
        assert!(!cap2.text.contains("42"), "{:?}", cap2.text);
    }

    #[test]
    fn huge_output_is_drained_while_writing_and_capped_with_a_note() {
        // 3 MiB is far more than a pipe holds: without the concurrent reader this would hang.
        let line = b"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n";
        let total = 3 << 20;
        let limit = 100_000;
        let ((), cap) = capture_stdout(limit, || {
            let mut left = total;
            while left > 0 {
                write_fd1(&line[..line.len().min(left)]);
                left = left.saturating_sub(line.len());
            }
        });
        assert_eq!(cap.unavailable, None);
        // Other threads of the test binary may write to fd 1 too: at least our bytes arrived.
        assert!(cap.dropped + limit >= total, "dropped {}", cap.dropped);
        let (body, note) = cap.text.split_at(limit);
        assert!(body.starts_with("0123456789abcdef"), "{}", &body[..40]);
        assert!(
            note.contains("truncated") && note.contains(&format!("{} more bytes", cap.dropped)),
            "{note}"
        );
    }

    #[test]
    fn writes_from_another_thread_during_the_window_are_captured() {
        let ((), cap) = capture_stdout(DEFAULT_LIMIT, || {
            let t = std::thread::spawn(|| write_fd1(b"from a worker thread\n"));
            let _ = t.join();
        });
        assert!(
            cap.text.contains("from a worker thread\n"),
            "{:?}",
            cap.text
        );
    }
}
