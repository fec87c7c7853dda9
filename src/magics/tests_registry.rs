//! The registry's entries agree with everything derived from them: every magic dispatches to its
//! parser, completes, has help, is listed by `%lsmagic` and inspected. Test-only.

use super::parse::UNKNOWN_MAGIC;
use super::registry::{self, Form, MAGICS};
use super::test_session::{text, Session};
use super::{check_cell_header, check_line};
use std::collections::BTreeSet;

#[test]
fn names_are_unique_and_syntax_starts_with_the_name() {
    let mut seen = BTreeSet::new();
    for m in MAGICS {
        let bare = m.name.trim_start_matches('%');
        assert!(seen.insert(bare), "{} registered twice", m.name);
        assert!(!bare.is_empty() && !m.about.is_empty(), "{}", m.name);
        assert!(
            m.syntax == m.name || m.syntax.starts_with(&format!("{} ", m.name)),
            "{}: {}",
            m.name,
            m.syntax
        );
        let cell = m.name.starts_with("%%");
        assert_eq!(cell, matches!(m.form, Form::Cell), "{}", m.name);
    }
}

#[test]
fn every_magic_dispatches_to_its_parser() {
    for m in MAGICS {
        match m.form {
            Form::Line { .. } => {
                if let Err(e) = registry::parse_line(m.name) {
                    assert_ne!(e.message, UNKNOWN_MAGIC, "{}", m.name);
                }
                if let Err(e) = check_line(m.name, 1) {
                    assert_ne!(e.ename, "UnknownMagic", "{}: {}", m.name, e.message);
                }
            }
            Form::Cell => {
                if let Err(e) = check_cell_header(m.name) {
                    assert_ne!(e.ename, "UnknownMagic", "{}: {}", m.name, e.message);
                }
                // A cell magic on a line of its own is refused as one, not as unknown.
                let e = check_line(m.name, 1).expect_err(m.name);
                assert!(e.message.contains("is a cell magic"), "{}", e.message);
            }
        }
    }
}

#[test]
fn every_magic_has_help_and_is_listed() {
    let ls = registry::lsmagic();
    let all = registry::help(None).unwrap_or_default();
    let mut s = Session::new();
    for m in MAGICS {
        assert!(ls.contains(m.name), "%lsmagic lacks {}", m.name);
        assert!(all.contains(m.syntax), "%help lacks {}", m.name);
        let bare = m.name.trim_start_matches('%');
        for asked in [bare.to_string(), m.name.to_string()] {
            let one = registry::help(Some(&asked)).unwrap_or_default();
            assert_eq!(one, format!("{}\n    {}\n", m.syntax, m.about));
            assert_eq!(s.ok_text(&format!("%help {asked}")), one, "%help {asked}");
        }
        let shown = text(&s.m.inspect(m.name, m.name.len()).expect(m.name));
        assert!(shown.starts_with(m.syntax), "inspect {}: {shown}", m.name);
    }
}

#[test]
fn every_magic_completes() {
    let s = Session::new();
    for m in MAGICS {
        // Its name from all but its last letter, and as the argument of %help.
        let typed = &m.name[..m.name.len() - 1];
        let (names, start, end) = s.m.complete(typed, typed.len());
        assert!(names.iter().any(|n| n == m.name), "{typed}: {names:?}");
        assert_eq!((start, end), (0, typed.len()));
        let line = format!("%help {typed}");
        let (names, ..) = s.m.complete(&line, line.len());
        assert!(names.iter().any(|n| n == m.name), "{line}: {names:?}");
        // Its arguments: the completer runs (no panic) at the start of them.
        let line = format!("{} ", m.name);
        let (_, start, end) = s.m.complete(&line, line.len());
        assert!(start <= end && end == line.len(), "{line}");
    }
}
