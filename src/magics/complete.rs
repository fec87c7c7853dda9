//! Completion and inspection of magic lines: magic names after `%`/`%%`, CUDA kernel names after
//! `%launch`/`%ptx`/`%info`, array and scalar names in arguments, dtypes, constructors, options,
//! and file paths after `%load NAME =` / `%save NAME`; inspect shows a magic's help, a CUDA
//! kernel's signature, an array's dtype/shape/bytes/statistics or a scalar's value.
//!
//! The magic's arguments are completed by its registry entry's completer (`complete_args`).
//!
//! Read-only: nothing here changes arrays or scalars.

use super::complete_args::{self, filter, ArgsAtCursor, SessionNames};
use super::lex::is_ident_char;
use super::{registry, Magics};
use crate::display::stats;
use crate::display::values;
use crate::gpu::{Dtype, ParamKind};
use protocol::output::MimeBundle;

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

pub fn complete(session: &SessionNames, line: &str, cursor: usize) -> (Vec<String>, usize, usize) {
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
        let names = || registry::names().into_iter().map(String::from);
        let mut v = filter(names(), typed);
        if pcts == 1 {
            // `%cu` also offers `%%cuda`.
            v.extend(filter(names(), &format!("%{typed}")));
        }
        return (v, lead, cursor);
    }
    let args = &body[pcts + word.len()..];
    let id_start = ident_start(before, cursor);
    let words: Vec<&str> = args.split_whitespace().collect();
    let at_new_word = args.ends_with(char::is_whitespace);
    let word_idx = if at_new_word {
        words.len()
    } else {
        words.len().saturating_sub(1)
    };
    let flag_start = before
        .rfind(char::is_whitespace)
        .map_or(0, |i| i + 1)
        .max(lead);
    let at = ArgsAtCursor {
        session,
        before,
        args,
        words,
        at_new_word,
        word_idx,
        flag_start,
        id_start,
        cursor,
        magic_names: registry::names(),
    };
    match registry::find(word) {
        Some(magic) => (magic.complete)(&at),
        None => complete_args::expression(&at),
    }
}

fn text_bundle(text: String) -> MimeBundle {
    let mut b = MimeBundle::new();
    b.insert("text/plain".into(), text.into());
    b
}

/// Without the session (`None`: a cell holds it), only what needs no session is inspected: magics,
/// dtypes.
pub fn inspect(m: Option<&mut Magics>, line: &str, cursor: usize) -> Option<MimeBundle> {
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
        let d = registry::find(name)?;
        return Some(text_bundle(format!("{}\n\n{}\n", d.syntax, d.about)));
    }
    if word.is_empty() {
        return None;
    }
    if let Some(m) = m {
        if let Some(found) = inspect_session(m, line, word, end) {
            return Some(found);
        }
    }
    if let Some(d) = Dtype::parse(word) {
        return Some(text_bundle(format!(
            "dtype {d}: {} byte{}, C type {}\n",
            d.size(),
            if d.size() == 1 { "" } else { "s" },
            d.c_names().join(" / ")
        )));
    }
    if let Some(d) = registry::find(word) {
        return Some(text_bundle(format!("{}\n\n{}\n", d.syntax, d.about)));
    }
    None
}

/// An array, CUDA kernel or scalar of the session named `word` (which ends at `end` of `line`).
fn inspect_session(m: &mut Magics, line: &str, word: &str, end: usize) -> Option<MimeBundle> {
    if let Some(a) = m.dev.array(word) {
        let data = m.dev.read_array(word).ok()?;
        let s = stats::stats(a.dtype, &data);
        let text = format!(
            "array {}: {} {}, {} ({} bytes), {}\n{}\n{}\n",
            a.name,
            a.dtype,
            values::fmt_shape(&a.shape),
            values::human_bytes(a.bytes),
            a.bytes,
            a.backend,
            stats::fmt_stats(a.dtype, &s),
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
                            ParamKind::Aggregate(a) => {
                                format!("tuple of {} or {}(member=…)", a.fields.len(), a.name)
                            }
                            ParamKind::View(v) => format!(
                                "array of {}, {} dimension{}",
                                v.elem,
                                v.extents.len(),
                                if v.extents.len() == 1 { "" } else { "s" }
                            ),
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
    None
}
