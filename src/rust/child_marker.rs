//! In evcxr's child process (this binary started with `EVCXR_IS_RUNTIME`): tells the Jupyter
//! kernel that a Rust cell ended through `?` with an error.
//!
//! evcxr's generated code prints `EVCXR_ERROR_OCCURRED` on the child's stdout when a `?` in the
//! cell returns early, and evcxr consumes that line without telling its caller, so the cell would
//! look successful. Here the child's stdout goes through a pipe; a thread forwards every byte to
//! the real stdout unchanged and, just before it forwards that line, writes [`USER_ERROR_MARKER`]
//! on stderr, where the engine sees it (and hides it).
//!
//! Runs before `evcxr::runtime_hook()`; must do nothing in any other process.

use std::io::Read;
use std::os::fd::FromRawFd;

/// The stderr line that says "the cell's `?` returned an error".
pub const USER_ERROR_MARKER: &str = "\u{1}NBCUDA_RUST_USER_ERROR\u{1}";

/// evcxr's stdout line for the same (evcxr_internal_runtime::USER_ERROR_OCCURRED).
const EVCXR_LINE: &[u8] = b"EVCXR_ERROR_OCCURRED";

/// Installs the stdout pipe when this process is evcxr's child; a no-op otherwise.
pub fn install_if_evcxr_child() {
    if std::env::var_os("EVCXR_IS_RUNTIME").is_none() {
        return;
    }
    let mut fds = [0; 2];
    // SAFETY: plain descriptor calls; on any failure stdout is left as it was.
    unsafe {
        if libc::pipe(fds.as_mut_ptr()) != 0 {
            return;
        }
        let real = libc::dup(1);
        if real < 0 || libc::dup2(fds[1], 1) < 0 {
            libc::close(fds[0]);
            libc::close(fds[1]);
            if real >= 0 {
                libc::close(real);
            }
            return;
        }
        libc::close(fds[1]);
        // SAFETY: fds[0] is ours alone from here on.
        let reader = std::fs::File::from_raw_fd(fds[0]);
        let spawned = std::thread::Builder::new()
            .name("nbcuda-stdout".into())
            .spawn(move || forward(reader, real));
        if spawned.is_err() {
            // No thread to drain the pipe: put stdout back.
            libc::dup2(real, 1);
        }
    }
}

fn write_all(fd: i32, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: writes from a valid slice to an open descriptor.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n <= 0 {
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        bytes = &bytes[n as usize..];
    }
}

/// Copies the pipe to `real` byte for byte, announcing evcxr's error line on stderr first.
fn forward(mut reader: std::fs::File, real: i32) {
    let mut buf = vec![0u8; 1 << 16];
    // The start of the current line, kept only until it cannot be the error line any more.
    let mut line: Vec<u8> = Vec::with_capacity(EVCXR_LINE.len() + 1);
    let mut line_possible = true;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        for &b in chunk {
            if b == b'\n' {
                if line_possible && line == EVCXR_LINE {
                    write_all(2, format!("{USER_ERROR_MARKER}\n").as_bytes());
                }
                line.clear();
                line_possible = true;
            } else if line_possible {
                line.push(b);
                line_possible = EVCXR_LINE.starts_with(&line);
                if !line_possible {
                    line.clear();
                }
            }
        }
        write_all(real, chunk);
    }
}
