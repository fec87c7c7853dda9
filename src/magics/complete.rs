//! Completion and inspection of magic lines: magic names after `%`/`%%`, CUDA kernel names after
//! `%launch`/`%ptx`/`%info`, array and scalar names in arguments, dtypes, constructors, options,
//! and file paths after `%load NAME =` / `%save NAME`; inspect shows a magic's help, a CUDA
//! kernel's signature, an array's dtype/shape/bytes/statistics or a scalar's value.
//!
//! Read-only: nothing here changes arrays or scalars.

use super::eval::FUNCTIONS;
use super::lex::is_ident_char;
use super::{help, host, Magics};
use crate::gpu::{Dtype, ParamKind};
use protocol::output::MimeBundle;
use std::path::Path;

const CTORS: [&str; 9] = [
    "zeros", "ones", "empty", "full", "arange", "linspace", "rand", "randn", "copy",
];

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Start of the identifier that ends at `end`.
fn ident_start(s: &str, end: usize) -> usize {
    let before = &s[..end];
    before
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_ident_char(*c))
        .last()
        .map_or(end, |(i, _)| i)
}

fn filter(cands: impl IntoIterator<Item = String>, prefix: &str) -> Vec<String> {
    let mut v: Vec<String> = cands
        .into_iter()
        .filter(|c| c.starts_with(prefix))
        .collect();
    v.sort();
    v.dedup();
    v
}

pub fn complete(m: &mut Magics, line: &str, cursor: usize) -> (Vec<String>, usize, usize) {
    let cursor = floor_boundary(line, cursor);
    let before = &line[..cursor];
    let lead = before.len() - before.trim_start().len();
    let body = &before[lead..];
    if !body.starts_with('%') {
        return (Vec::new(), cursor, cursor);
    }
    // Still on the magic name?
    let pcts = body.len() - body.trim_start_matches('%').len();
    let word = super::parse::magic_word(body, pcts);
    if pcts + word.len() == body.len() {
        let typed = &body[..pcts + word.len()];
        let names = help::names().into_iter().map(String::from);
        let mut v = filter(names, typed);
        if pcts == 1 {
            // `%cu` also offers `%%cuda`.
            v.extend(filter(
                help::names().into_iter().map(String::from),
                &format!("%{typed}"),
            ));
        }
        return (v, lead, cursor);
    }
    let args = &body[pcts + word.len()..];
    let id_start = ident_start(before, cursor);
    let prefix = &before[id_start..];
    let arrays = || -> Vec<String> { m.dev.arrays().into_iter().map(|a| a.name).collect() };
    let values = |m: &Magics| -> Vec<String> {
        let mut v: Vec<String> = m.dev.arrays().into_iter().map(|a| a.name).collect();
        v.extend(m.scalars.keys().cloned());
        v.extend(FUNCTIONS.iter().map(|s| s.to_string()));
        v
    };
    let dtypes = || {
        Dtype::ALL
            .iter()
            .map(|d| d.name().to_string())
            .collect::<Vec<_>>()
    };
    let words: Vec<&str> = args.split_whitespace().collect();
    let at_new_word = args.ends_with(char::is_whitespace);
    // Index of the word under the cursor among the arguments.
    let word_idx = if at_new_word {
        words.len()
    } else {
        words.len().saturating_sub(1)
    };
    let flag_start = before
        .rfind(char::is_whitespace)
        .map_or(0, |i| i + 1)
        .max(lead);
    let flag_prefix = &before[flag_start..];
    let flags = |list: &[&str]| -> (Vec<String>, usize, usize) {
        (
            filter(list.iter().map(|s| s.to_string()), flag_prefix),
            flag_start,
            cursor,
        )
    };
    let matches: Vec<String> = match word {
        "launch" => {
            if flag_prefix.starts_with('-') {
                return flags(&["--check"]);
            }
            if !args.contains('[') && !args.contains("<<<") {
                filter(m.dev.kernel_names(), prefix)
            } else if args.contains('(') {
                filter(values(m), prefix)
            } else {
                let mut v = values(m);
                v.push("auto".into());
                v.push("stream".into());
                filter(v, prefix)
            }
        }
        "profile" => {
            if flag_prefix.starts_with('-') {
                return flags(&["--gpu", "--lines", "--check", "--ncu"]);
            }
            if words.len() >= 2 && words[words.len() - 1 - usize::from(!at_new_word)] == "--gpu" {
                filter(gpu_names(), prefix)
            } else if !args.contains('[') && !args.contains("<<<") {
                filter(m.dev.kernel_names(), prefix)
            } else {
                filter(values(m), prefix)
            }
        }
        "ptx" => filter(m.dev.kernel_names(), prefix),
        "info" => {
            if flag_prefix.starts_with('-') {
                return flags(&["--gpu"]);
            }
            if words.len() >= 2 && words[words.len() - 1 - usize::from(!at_new_word)] == "--gpu" {
                filter(gpu_names(), prefix)
            } else {
                filter(m.dev.kernel_names(), prefix)
            }
        }
        "gpu" => filter(gpu_names(), prefix),
        "print" => {
            if flag_prefix.starts_with('-') {
                return flags(&["--head"]);
            }
            filter(arrays(), prefix)
        }
        "free" | "swap" | "copy" | "upload" | "download" => filter(arrays(), prefix),
        "backend" => filter(["gpu".to_string(), "sim".to_string()], prefix),
        "prefetch" if word_idx == 0 => filter(arrays(), prefix),
        "prefetch" if word_idx == 1 => filter(["gpu".to_string(), "host".to_string()], prefix),
        "graph" if word_idx == 0 => {
            filter(["begin", "end", "launch", "drop"].map(String::from), prefix)
        }
        "graph" if word_idx == 1 && matches!(words.first(), Some(&("launch" | "drop"))) => {
            filter(m.dev.graphs().into_iter().map(|g| g.name), prefix)
        }
        "help" => {
            let p = &before[flag_start..];
            let bare = p.trim_start_matches('%');
            let v: Vec<String> = help::names()
                .into_iter()
                .filter(|n| n.trim_start_matches('%').starts_with(bare))
                .map(String::from)
                .collect();
            return (v, flag_start, cursor);
        }
        "array" => match args.split_once('=') {
            None => filter(arrays(), prefix),
            Some((_, rhs)) if !rhs.contains('(') => {
                filter(CTORS.iter().map(|s| s.to_string()), prefix)
            }
            Some(_) => {
                let mut v = values(m);
                v.extend(dtypes());
                v.push("seed".into());
                filter(v, prefix)
            }
        },
        "set" => match args.split_once('=') {
            None => filter(m.scalars.keys().cloned(), prefix),
            Some(_) => filter(values(m), prefix),
        },
        "load" => match args.split_once('=') {
            None => filter(arrays(), prefix),
            Some((_, rhs)) => {
                let rhs_words = rhs.split_whitespace().count();
                let on_path =
                    rhs_words == 0 || (rhs_words == 1 && !rhs.ends_with(char::is_whitespace));
                if on_path {
                    let start = cursor - rhs.trim_start().len();
                    return paths(rhs.trim_start(), start, cursor, true);
                }
                if flag_prefix.starts_with('-') {
                    return flags(&["--gray", "--as"]);
                }
                if words.len() >= 2 && words[words.len() - 1 - usize::from(!at_new_word)] == "--as"
                {
                    filter(dtypes(), prefix)
                } else {
                    Vec::new()
                }
            }
        },
        "save" => {
            if word_idx == 0 {
                filter(arrays(), prefix)
            } else if word_idx == 1 {
                let w = &before[flag_start..];
                return paths(w, flag_start, cursor, false);
            } else {
                Vec::new()
            }
        }
        "limit" if word_idx == 0 => filter(vec!["stack".to_string()], prefix),
        "sync" | "device" | "arrays" | "reset" | "lsmagic" | "clear_output" | "limit" => Vec::new(),
        _ => {
            let mut v = values(m);
            v.extend(dtypes());
            filter(v, prefix)
        }
    };
    (matches, id_start, cursor)
}

/// File-name completion of `typed` (a path prefix, maybe quoted) in [start, end).
fn paths(typed: &str, start: usize, end: usize, images_only: bool) -> (Vec<String>, usize, usize) {
    let (quote, typed, start) = match typed.chars().next() {
        Some(q @ ('"' | '\'')) => (Some(q), &typed[1..], start + 1),
        _ => (None, typed, start),
    };
    let _ = quote;
    let (dir, file_prefix) = match typed.rfind('/') {
        Some(i) => (&typed[..=i], &typed[i + 1..]),
        None => ("", typed),
    };
    let listing = if dir.is_empty() {
        std::fs::read_dir(".")
    } else {
        std::fs::read_dir(super::files::expand(dir))
    };
    let mut v = Vec::new();
    if let Ok(rd) = listing {
        for entry in rd.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if !name.starts_with(file_prefix)
                || (name.starts_with('.') && !file_prefix.starts_with('.'))
            {
                continue;
            }
            let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
            if is_dir {
                v.push(format!("{dir}{name}/"));
                continue;
            }
            let ext = Path::new(&name)
                .extension()
                .and_then(|e| e.to_str())
                .map(|e| e.to_ascii_lowercase())
                .unwrap_or_default();
            if !images_only || matches!(ext.as_str(), "png" | "jpg" | "jpeg" | "npy") {
                v.push(format!("{dir}{name}"));
            }
        }
    }
    v.sort();
    (v, start, end)
}

fn text_bundle(text: String) -> MimeBundle {
    let mut b = MimeBundle::new();
    b.insert("text/plain".into(), text.into());
    b
}

pub fn inspect(m: &mut Magics, line: &str, cursor: usize) -> Option<MimeBundle> {
    let cursor = floor_boundary(line, cursor);
    let start = ident_start(line, cursor);
    let end = cursor
        + line[cursor..]
            .find(|c: char| !is_ident_char(c))
            .unwrap_or(line.len() - cursor);
    let word = &line[start..end];
    let pcts = line[..start].len() - line[..start].trim_end_matches('%').len();
    if pcts > 0 || (word.is_empty() && line.trim_start().starts_with('%')) {
        let name = if word.is_empty() {
            super::parse::magic_word(
                line.trim_start(),
                line.trim_start().len() - line.trim_start().trim_start_matches('%').len(),
            )
        } else {
            word
        };
        let d = help::find(name)?;
        return Some(text_bundle(format!("{}\n\n{}\n", d.syntax, d.about)));
    }
    if word.is_empty() {
        return None;
    }
    if let Some(a) = m.dev.array(word) {
        let data = m.dev.read_array(word).ok()?;
        let s = host::stats(a.dtype, &data);
        let text = format!(
            "array {}: {} {}, {} ({} bytes), {}\n{}\n{}\n",
            a.name,
            a.dtype,
            host::fmt_shape(&a.shape),
            host::human_bytes(a.bytes),
            a.bytes,
            a.backend,
            host::fmt_stats(a.dtype, &s),
            a.last_writer
                .map(|w| format!("last written by {w}"))
                .unwrap_or_else(|| "not written by a CUDA kernel yet".into())
        );
        return Some(text_bundle(text));
    }
    // A CUDA kernel, including a template instantiation written after the word.
    let names = m.dev.kernel_names();
    let full = {
        let rest = &line[end..];
        if rest.starts_with('<') && !rest.starts_with("<<<") {
            rest.find('>')
                .map(|i| super::parse::normalise_template(&format!("{word}{}", &rest[..=i])))
        } else {
            None
        }
    };
    for k in full.iter().map(String::as_str).chain(std::iter::once(word)) {
        if names.iter().any(|n| n == k) || full.as_deref() == Some(k) {
            if let Ok(params) = m.dev.kernel_params(k) {
                let ps: Vec<String> = params
                    .iter()
                    .map(|p| {
                        let kind = match &p.kind {
                            ParamKind::Pointer { elem: Some(d), .. } => format!("array of {d}"),
                            ParamKind::Pointer { elem: None, .. } => "pointer".into(),
                            ParamKind::Scalar(d) => format!("{d} scalar"),
                            ParamKind::Aggregate(a) => format!("tuple of {}", a.fields.len()),
                            ParamKind::Other => "not passable from %launch".into(),
                        };
                        format!("    {} {}    ({kind})", p.c_type, p.name)
                    })
                    .collect();
                let sig: Vec<String> = params
                    .iter()
                    .map(|p| format!("{} {}", p.c_type, p.name))
                    .collect();
                return Some(text_bundle(format!(
                    "CUDA kernel {k}({})\n{}\n",
                    sig.join(", "),
                    ps.join("\n")
                )));
            }
        }
    }
    if let Some(v) = m.scalars.get(word) {
        return Some(text_bundle(format!("scalar {word} = {v}\n")));
    }
    if let Some(d) = Dtype::parse(word) {
        return Some(text_bundle(format!(
            "dtype {d}: {} byte{}, C type {}\n",
            d.size(),
            if d.size() == 1 { "" } else { "s" },
            d.c_names().join(" / ")
        )));
    }
    if let Some(d) = help::find(word) {
        return Some(text_bundle(format!("{}\n\n{}\n", d.syntax, d.about)));
    }
    None
}

/// The GPU models `%gpu` and `%info --gpu` take, as one word each (`RTX4090`).
fn gpu_names() -> Vec<String> {
    ptxsim::gpus::GPUS
        .iter()
        .map(|g| g.name.replace(' ', ""))
        .collect()
}
