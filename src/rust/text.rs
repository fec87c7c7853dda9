//! Pure text helpers of the evcxr bridge: evcxr's content map → a Jupyter MIME bundle, panic
//! detection on the child's stderr, rendering of compile errors, and the clean-up of a cell
//! before it is handed to evcxr's analysis (completion, inspect).
//!
//! Nothing here talks to evcxr's child process or to Jupyter.

use protocol::output::MimeBundle;
use std::collections::HashMap;

/// Turns evcxr's `content_by_mime_type` (the `EVCXR_BEGIN_CONTENT mime … EVCXR_END_CONTENT`
/// blocks of the cell, the value of its final expression as `text/plain`, and the output of colon
/// commands) into a MIME bundle. JSON types (`application/json`, `…+json`) become JSON values
/// when they parse. `None` when there is nothing to show.
pub(crate) fn bundle_from_content(content: HashMap<String, String>) -> Option<MimeBundle> {
    if content.is_empty() {
        return None;
    }
    let mut bundle = MimeBundle::new();
    for (mime, text) in content {
        let value = if mime.contains("json") {
            serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text))
        } else {
            serde_json::Value::String(text)
        };
        bundle.insert(mime, value);
    }
    Some(bundle)
}

/// The message of a panic of the cell, found in its stderr lines.
///
/// Cells run on the main thread of evcxr's child, whose OS thread id is the child's pid, and
/// Rust prints that id in the panic header (`thread '<unnamed>' (4242) panicked at …`; the
/// thread has no name for the `std` the cell links to). A panic in another thread that the cell
/// handles is not a failure of the cell, so only a header with `child_pid` counts; without a
/// thread id in the header (toolchains before 1.89), a thread named `main` or `<unnamed>` does.
pub(crate) fn panic_message(stderr_lines: &[String], child_pid: Option<u32>) -> Option<String> {
    let start = stderr_lines
        .iter()
        .position(|line| is_cell_panic_header(line, child_pid))?;
    let header = &stderr_lines[start];
    let location = header
        .split_once(" panicked at ")
        .map_or("", |(_, rest)| rest);
    // Before Rust 1.73: `thread 'main' panicked at 'message', src/lib.rs:3:1`.
    if let Some(quoted) = location.strip_prefix('\'') {
        if let Some(end) = quoted.rfind("', ") {
            return Some(quoted[..end].to_owned());
        }
    }
    // Since Rust 1.73: `thread 'main' panicked at src/lib.rs:3:1:` then the message lines.
    let message: Vec<&str> = stderr_lines[start + 1..]
        .iter()
        .map(String::as_str)
        .take_while(|line| !line.starts_with("stack backtrace:") && !line.starts_with("note: "))
        .collect();
    if message.is_empty() {
        Some(location.trim_end_matches(':').to_owned())
    } else {
        Some(message.join("\n"))
    }
}

fn is_cell_panic_header(line: &str, child_pid: Option<u32>) -> bool {
    let Some(rest) = line.strip_prefix("thread '") else {
        return false;
    };
    let Some((before, _)) = rest.split_once(" panicked at ") else {
        return false;
    };
    // `name'` or `name' (tid)`.
    match before.rsplit_once("' (") {
        Some((_, tid)) if tid.ends_with(')') => tid[..tid.len() - 1]
            .parse::<u32>()
            .ok()
            .is_some_and(|tid| Some(tid) == child_pid),
        _ => matches!(before, "main'" | "<unnamed>'"),
    }
}

/// Removes ANSI escape sequences (colours) from `text`.
pub(crate) fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            // Parameters and intermediates, then one final byte in '@'..='~'.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Renders evcxr's compile errors for `source` (the cell) as plain text: with ariadne, as
/// evcxr_jupyter does (source lines, carets, labels, notes), or, where ariadne cannot (non-ASCII
/// cells, errors outside the cell), as the spanned lines with carets and the help lines.
pub(crate) fn render_compile_errors(errors: &[evcxr::CompilationError], source: &str) -> String {
    let mut out = String::new();
    for error in errors {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&render_one(error, source));
    }
    out
}

fn render_one(error: &evcxr::CompilationError, source: &str) -> String {
    // ariadne and evcxr's span arithmetic are not ours to trust with every span rustc reports.
    let fancy =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| render_fancy(error, source)));
    match fancy {
        Ok(Some(text)) => text,
        _ => render_plain(error),
    }
}

fn render_fancy(error: &evcxr::CompilationError, source: &str) -> Option<String> {
    const FILE: &str = "cell";
    if error.is_from_user_code() {
        if let Some(report) =
            error.build_report(FILE.to_owned(), source.to_owned(), evcxr::Theme::Light)
        {
            let mut bytes = Vec::new();
            if report
                .write(ariadne::sources([(FILE.to_owned(), source)]), &mut bytes)
                .is_ok()
            {
                return Some(strip_ansi(&String::from_utf8_lossy(&bytes)));
            }
        }
    }
    None
}

fn render_plain(error: &evcxr::CompilationError) -> String {
    let mut lines = Vec::new();
    for spanned in error.spanned_messages() {
        lines.extend(spanned.lines.iter().cloned());
        match &spanned.span {
            Some(span) => lines.push(format!(
                "{}{} {}",
                " ".repeat(span.start_column.saturating_sub(1)),
                "^".repeat(span.end_column.saturating_sub(span.start_column).max(1)),
                spanned.label
            )),
            None if !spanned.label.is_empty() => lines.push(spanned.label.clone()),
            None => {}
        }
    }
    lines.push(format!("error: {}", error.message()));
    lines.extend(error.help().into_iter().map(|help| format!("help: {help}")));
    lines.join("\n") + "\n"
}

/// The leading lines of a cell that evcxr runs as commands: `(byte range of the line, command
/// name)`, for `:cmd args` lines and `!shell` lines (name `!`), skipping blank and `//` lines
/// between them, as evcxr's own parser does.
pub(crate) fn leading_commands(code: &str) -> Vec<(std::ops::Range<usize>, String)> {
    let mut found = Vec::new();
    let mut offset = 0;
    for line in code.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let range = offset..offset + body.len();
        offset += line.len();
        let trimmed = body.trim_start_matches(' ');
        if body.starts_with('!') {
            found.push((range, "!".to_owned()));
        } else if trimmed.starts_with(':') {
            let name = trimmed.split(' ').next().unwrap_or_default();
            found.push((range, name.to_owned()));
        } else if !(body.trim().is_empty() || body.starts_with("//")) {
            break;
        }
    }
    found
}

/// The cell as evcxr's analysis (completion, inspect) should see it: the leading command lines
/// are blanked (same length, so byte offsets stay valid) unless the cursor is on one, because
/// evcxr runs most commands for real while analysing (`:restart` would restart the child).
pub(crate) fn blank_commands_for_analysis(code: &str, cursor: usize) -> String {
    let mut out = code.to_owned();
    for (range, _) in leading_commands(code) {
        if range.contains(&cursor) || range.end == cursor {
            continue;
        }
        out.replace_range(range.clone(), &" ".repeat(range.len()));
    }
    out
}

/// The largest char boundary of `text` at or before `index`.
/// Whether `code` contains `name` as a whole identifier (`nb::get`, `use nb;`; not `nbody`).
/// Comments and strings count too: a false match only loads something early.
pub(crate) fn names(code: &str, name: &str) -> bool {
    code.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|word| word == name)
}

pub(crate) fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut i = index.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The identifier (or `a::b` / `a.b` path ending in one) at `cursor`: the byte range of the
/// identifier that contains the cursor or ends just before it, extended to its end.
pub(crate) fn identifier_at(code: &str, cursor: usize) -> Option<std::ops::Range<usize>> {
    let cursor = floor_char_boundary(code, cursor);
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let start = code[..cursor]
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_ident(*c))
        .last()
        .map_or(cursor, |(i, _)| i);
    let end = code[cursor..]
        .char_indices()
        .find(|(_, c)| !is_ident(*c))
        .map_or(code.len(), |(i, _)| cursor + i);
    if start == end || code[start..].starts_with(|c: char| c.is_ascii_digit()) {
        None
    } else {
        Some(start..end)
    }
}

/// Names the cell binds before `cursor` (`let [mut] x`, `fn f`, `struct S`, `enum E`, `const C`,
/// `static S`, `type T`, `mod m`) that start with `prefix` and are longer: what completion offers
/// from the cell being typed, which evcxr has not evaluated yet. A lexical scan (comments and
/// strings are not told apart), so it may offer a name from a comment; never one that is not
/// in the text.
pub(crate) fn names_bound_before(code: &str, cursor: usize, prefix: &str) -> Vec<String> {
    let cursor = floor_char_boundary(code, cursor);
    let words: Vec<&str> = code[..cursor]
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut out: Vec<String> = Vec::new();
    for pair in words.windows(2).chain(words.windows(3)) {
        let name = match pair {
            ["let", "mut", n] => *n,
            ["let" | "fn" | "struct" | "enum" | "const" | "static" | "type" | "mod", n] => *n,
            _ => continue,
        };
        let is_name = name
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && name != "mut";
        if is_name
            && name.starts_with(prefix)
            && name.len() > prefix.len()
            && !out.iter().any(|o| o == name)
        {
            out.push(name.to_string());
        }
    }
    out
}

/// What a cell's process killed by SIGKILL (not by the interrupt button) most likely met.
pub(crate) const SIGKILL_HINT: &str = "It was killed with SIGKILL from outside: most often \
that is the system's out-of-memory killer, because the cell used more memory than this Jupyter \
kernel may use (a container's memory limit, or the machine's memory). Use less memory in one \
cell (smaller arrays, fewer copies).";

/// Whether evcxr's message says its child process ended by SIGKILL (`signal: 9 (SIGKILL)`).
pub(crate) fn killed_by_sigkill(message: &str) -> bool {
    message.contains("SIGKILL") || message.contains("signal: 9")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_killed_by_sigkill_is_told_apart() {
        assert!(killed_by_sigkill(
            "Subprocess terminated with status: signal: 9 (SIGKILL)"
        ));
        assert!(!killed_by_sigkill(
            "Subprocess terminated with status: exit status: 101"
        ));
        assert!(SIGKILL_HINT.contains("memory"));
    }

    #[test]
    fn names_bound_earlier_in_the_cell() {
        let code = "let total_count = 42;\nlet mut total_sum = 0;\nfn total_fn() {}\ntotal_c";
        let at = code.len();
        assert_eq!(names_bound_before(code, at, "total_c"), vec!["total_count"]);
        let mut all = names_bound_before(code, at, "total_");
        all.sort();
        assert_eq!(all, vec!["total_count", "total_fn", "total_sum"]);
        // Names bound after the cursor, and the prefix itself, are not offered.
        assert!(names_bound_before("tot\nlet total = 1;", 3, "tot").is_empty());
        assert!(names_bound_before("let tot = 1; tot", 16, "tot").is_empty());
    }

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn bundle_keeps_every_mime_and_parses_json() {
        let mut content = HashMap::new();
        content.insert("text/plain".to_owned(), "42".to_owned());
        content.insert("text/html".to_owned(), "<b>42</b>".to_owned());
        content.insert("application/json".to_owned(), "{\"a\": [1, 2]}".to_owned());
        content.insert("application/vnd.x+json".to_owned(), "not json".to_owned());
        let bundle = bundle_from_content(content).unwrap();
        assert_eq!(bundle["text/plain"], "42");
        assert_eq!(bundle["text/html"], "<b>42</b>");
        assert_eq!(bundle["application/json"]["a"][1], 2);
        assert_eq!(bundle["application/vnd.x+json"], "not json");
        assert!(bundle_from_content(HashMap::new()).is_none());
    }

    #[test]
    fn panic_messages_modern_and_old() {
        let pid = Some(4242);
        let with_tid = lines(
            "thread '<unnamed>' (4242) panicked at src/lib.rs:12:5:\nboom: 3\nsecond line\nstack backtrace:\n   0: x",
        );
        assert_eq!(
            panic_message(&with_tid, pid).unwrap(),
            "boom: 3\nsecond line"
        );
        // The same panic in another thread (the cell joins it and handles the error).
        let other_thread = lines("thread '<unnamed>' (4243) panicked at src/lib.rs:1:1:\nworker");
        assert_eq!(panic_message(&other_thread, pid), None);
        let named = lines("thread 'it's (odd)' (4242) panicked at src/lib.rs:1:1:\nx\nnote: y");
        assert_eq!(panic_message(&named, pid).unwrap(), "x");
        let no_tid = lines(
            "thread 'main' panicked at src/lib.rs:1:1:\nbad\nnote: run with `RUST_BACKTRACE=1`",
        );
        assert_eq!(panic_message(&no_tid, pid).unwrap(), "bad");
        let old = lines("thread '<unnamed>' panicked at 'it broke', src/lib.rs:3:1");
        assert_eq!(panic_message(&old, None).unwrap(), "it broke");
        let spawned = lines("thread 'worker' panicked at src/lib.rs:1:1:\nw");
        assert_eq!(panic_message(&spawned, pid), None);
        assert_eq!(panic_message(&lines("just some stderr"), pid), None);
        let empty_message = lines("thread '<unnamed>' (4242) panicked at src/lib.rs:9:9:");
        assert_eq!(
            panic_message(&empty_message, pid).unwrap(),
            "src/lib.rs:9:9"
        );
    }

    #[test]
    fn ansi_is_stripped() {
        assert_eq!(
            strip_ansi("\u{1b}[31mError\u{1b}[0m: x \u{1b}[38;5;12m^\u{1b}[0m"),
            "Error: x ^"
        );
        assert_eq!(strip_ansi("plain ✓"), "plain ✓");
    }

    #[test]
    fn commands_are_found_and_blanked() {
        let code = ":dep regex = \"1\"\n// note\n  :vars\nlet x = 1;\n:not_a_command";
        let found = leading_commands(code);
        let names: Vec<&str> = found.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(names, [":dep", ":vars"]);
        assert_eq!(&code[found[1].0.clone()], "  :vars");
        let cursor = code.find("let x").unwrap() + 4;
        let blanked = blank_commands_for_analysis(code, cursor);
        assert_eq!(blanked.len(), code.len());
        assert!(blanked.starts_with(&" ".repeat(16)));
        assert!(blanked.contains("let x = 1;"));
        // The cursor on a command keeps that command (evcxr completes command names).
        let on_vars = code.find(":va").unwrap() + 3;
        assert!(blank_commands_for_analysis(code, on_vars).contains(":vars"));
    }

    #[test]
    fn names_finds_whole_identifiers_only() {
        assert!(names("let a = nb::get(\"x\")?;", "nb"));
        assert!(names("use nb;", "nb"));
        assert!(names("nb", "nb"));
        assert!(!names("let nbody = 3; let x_nb = nb_count;", "nb"));
        assert!(!names("", "nb"));
    }

    #[test]
    fn identifiers_at_cursor() {
        let code = "let total = values.len();";
        let at = |c: usize| identifier_at(code, c).map(|r| &code[r]);
        assert_eq!(at(5), Some("total"));
        assert_eq!(at(4), Some("total"));
        assert_eq!(at(9), Some("total"));
        assert_eq!(at(21), Some("len"));
        assert_eq!(at(10), None);
        assert_eq!(identifier_at("é1x", 1), Some(0..4)); // inside a multi-byte char: no panic
        assert_eq!(identifier_at("x + 42", 6), None);
    }
}
