//! Helpers shared by the workspace's tests (a dev-dependency only; nothing here ships).
//!
//! [`skip`]: a Rust test that cannot run here (no NVRTC, no `/dev/shm`, a GPU where the test
//! needs none) returns early, and libtest would count it as passed. So before returning it
//! calls `testkit::skip(why)`, which writes one line
//!
//! ```text
//! SKIPPED: <test name>: <why>
//! ```
//!
//! straight to the process's stderr, past libtest's output capture, so the line shows in every
//! `cargo test` log. `install/test.sh` counts these lines as skipped tests (and takes them off
//! the passed ones). A test calls it at most once.
//!
//! It must stay free of dependencies: it is built for every test run.

use std::io::Write;

/// Reports the current test as skipped, saying why. Call it right before returning early.
pub fn skip(why: impl std::fmt::Display) {
    let thread = std::thread::current();
    let text = line(thread.name(), &why.to_string());
    // One write of a whole line, not through `eprintln!` (which libtest captures).
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// The line `skip` writes. libtest runs each test on a thread named after it.
fn line(thread: Option<&str>, why: &str) -> String {
    let name = thread.filter(|n| *n != "main").unwrap_or("a test");
    format!("SKIPPED: {name}: {why}\n")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_line_names_the_test_and_the_reason() {
        assert_eq!(
            super::line(Some("compile::tests::hit"), "NVRTC not found"),
            "SKIPPED: compile::tests::hit: NVRTC not found\n"
        );
        assert_eq!(super::line(Some("main"), "x"), "SKIPPED: a test: x\n");
        assert_eq!(super::line(None, "x"), "SKIPPED: a test: x\n");
    }
}
