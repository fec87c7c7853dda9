//! Completion of a magic's arguments: one completer per kind of argument list (the registry,
//! `super::registry`, names each magic's), over the state of the line at the cursor
//! ([`ArgsAtCursor`]): CUDA kernel, array, scalar, graph and GPU model names, dtypes,
//! constructors, options and file paths.
//!
//! Read-only: nothing here changes arrays or scalars, and nothing here knows the list of magics.

use super::eval::FUNCTIONS;
use crate::gpu::Dtype;
use std::path::Path;

/// Matches with the byte range of the line they replace.
pub type Completion = (Vec<String>, usize, usize);

/// A completer of one magic's arguments.
pub type CompleteFn = fn(&ArgsAtCursor) -> Completion;

const CTORS: [&str; 9] = [
    "zeros", "ones", "empty", "full", "arange", "linspace", "rand", "randn", "copy",
];

/// The names of the session that arguments complete to. A copy, so that completion can answer
/// from the last one while a cell holds the session (`Magics`).
#[derive(Debug, Clone, Default)]
pub struct SessionNames {
    pub arrays: Vec<String>,
    pub kernels: Vec<String>,
    pub scalars: Vec<String>,
    pub graphs: Vec<String>,
}

/// The arguments of a magic line up to the cursor, cut the ways completers need.
pub struct ArgsAtCursor<'a> {
    pub session: &'a SessionNames,
    /// The line up to the cursor.
    pub before: &'a str,
    /// What follows the magic's name, up to the cursor.
    pub args: &'a str,
    /// `args` split at whitespace.
    pub words: Vec<&'a str>,
    /// Whether the cursor starts a new word (after whitespace).
    pub at_new_word: bool,
    /// Index of the word under the cursor among the arguments.
    pub word_idx: usize,
    /// Start of the whitespace-separated word under the cursor (an option such as `--gpu`).
    pub flag_start: usize,
    /// Start of the identifier under the cursor.
    pub id_start: usize,
    pub cursor: usize,
    /// Every magic's name with its `%`/`%%`, for `%help`.
    pub magic_names: Vec<&'static str>,
}

impl ArgsAtCursor<'_> {
    fn prefix(&self) -> &str {
        &self.before[self.id_start..]
    }

    fn flag_prefix(&self) -> &str {
        &self.before[self.flag_start..]
    }

    fn typing_flag(&self) -> bool {
        self.flag_prefix().starts_with('-')
    }

    /// Whether the word before the one under the cursor is `flag`.
    fn after(&self, flag: &str) -> bool {
        let w = &self.words;
        w.len() >= 2 && w[w.len() - 1 - usize::from(!self.at_new_word)] == flag
    }

    /// The candidates that start with the identifier under the cursor.
    fn names(&self, cands: impl IntoIterator<Item = String>) -> Completion {
        (filter(cands, self.prefix()), self.id_start, self.cursor)
    }

    /// The options that start with the word under the cursor.
    fn flags(&self, list: &[&str]) -> Completion {
        (
            filter(list.iter().map(|s| s.to_string()), self.flag_prefix()),
            self.flag_start,
            self.cursor,
        )
    }

    fn nothing(&self) -> Completion {
        (Vec::new(), self.id_start, self.cursor)
    }

    fn arrays(&self) -> Vec<String> {
        self.session.arrays.clone()
    }

    fn kernels(&self) -> Vec<String> {
        self.session.kernels.clone()
    }

    /// Arrays, scalars and expression functions.
    fn values(&self) -> Vec<String> {
        let mut v = self.arrays();
        v.extend(self.session.scalars.iter().cloned());
        v.extend(FUNCTIONS.iter().map(|s| s.to_string()));
        v
    }
}

pub fn filter(cands: impl IntoIterator<Item = String>, prefix: &str) -> Vec<String> {
    let mut v: Vec<String> = cands
        .into_iter()
        .filter(|c| c.starts_with(prefix))
        .collect();
    v.sort();
    v.dedup();
    v
}

fn dtypes() -> Vec<String> {
    Dtype::ALL.iter().map(|d| d.name().to_string()).collect()
}

/// The GPU models `%gpu` and `%info --gpu` take, as one word each (`RTX4090`).
fn gpu_names() -> Vec<String> {
    ptxsim::gpus::GPUS
        .iter()
        .map(|g| g.name.replace(' ', ""))
        .collect()
}

/// Nothing to offer (a magic without arguments, or a number).
pub fn nothing(a: &ArgsAtCursor) -> Completion {
    a.nothing()
}

/// Arrays, scalars, expression functions and dtypes: any expression.
pub fn expression(a: &ArgsAtCursor) -> Completion {
    let mut v = a.values();
    v.extend(dtypes());
    a.names(v)
}

/// Array names.
pub fn arrays(a: &ArgsAtCursor) -> Completion {
    a.names(a.arrays())
}

/// CUDA kernel names.
pub fn kernels(a: &ArgsAtCursor) -> Completion {
    a.names(a.kernels())
}

/// GPU model names.
pub fn gpu_models(a: &ArgsAtCursor) -> Completion {
    a.names(gpu_names())
}

/// `[--check] [--cooperative] KERNEL[GRID, BLOCK](ARGS)`.
pub fn launch(a: &ArgsAtCursor) -> Completion {
    if a.typing_flag() {
        return a.flags(&["--check", "--cooperative"]);
    }
    if !a.args.contains('[') && !a.args.contains("<<<") {
        a.names(a.kernels())
    } else if a.args.contains('(') {
        a.names(a.values())
    } else {
        let mut v = a.values();
        v.push("auto".into());
        v.push("stream".into());
        a.names(v)
    }
}

/// `[--gpu MODEL] [--lines] [--check] [--ncu] LAUNCH`.
pub fn profile(a: &ArgsAtCursor) -> Completion {
    if a.typing_flag() {
        return a.flags(&["--gpu", "--lines", "--check", "--ncu"]);
    }
    if a.after("--gpu") {
        a.names(gpu_names())
    } else if !a.args.contains('[') && !a.args.contains("<<<") {
        a.names(a.kernels())
    } else {
        a.names(a.values())
    }
}

/// `[--gpu MODEL] KERNEL`.
pub fn info(a: &ArgsAtCursor) -> Completion {
    if a.typing_flag() {
        return a.flags(&["--gpu"]);
    }
    if a.after("--gpu") {
        a.names(gpu_names())
    } else {
        a.names(a.kernels())
    }
}

/// `NAME [--head N]`.
pub fn print(a: &ArgsAtCursor) -> Completion {
    if a.typing_flag() {
        return a.flags(&["--head"]);
    }
    a.names(a.arrays())
}

/// `gpu|sim`.
pub fn backend(a: &ArgsAtCursor) -> Completion {
    a.names(["gpu".to_string(), "sim".to_string()])
}

/// `NAME [gpu|host]`.
pub fn prefetch(a: &ArgsAtCursor) -> Completion {
    match a.word_idx {
        0 => a.names(a.arrays()),
        1 => a.names(["gpu".to_string(), "host".to_string()]),
        _ => expression(a),
    }
}

/// `[begin NAME | end | launch NAME [-n K] | drop NAME]`.
pub fn graph(a: &ArgsAtCursor) -> Completion {
    if a.word_idx == 0 {
        a.names(["begin", "end", "launch", "drop"].map(String::from))
    } else if a.word_idx == 1 && matches!(a.words.first(), Some(&("launch" | "drop"))) {
        a.names(a.session.graphs.iter().cloned())
    } else {
        expression(a)
    }
}

/// `NAME = CTOR(ARGS, DTYPE)`.
pub fn array(a: &ArgsAtCursor) -> Completion {
    match a.args.split_once('=') {
        None => a.names(a.arrays()),
        Some((_, rhs)) if !rhs.contains('(') => a.names(CTORS.iter().map(|s| s.to_string())),
        Some(_) => {
            let mut v = a.values();
            v.extend(dtypes());
            v.push("seed".into());
            a.names(v)
        }
    }
}

/// `NAME = EXPR`.
pub fn set(a: &ArgsAtCursor) -> Completion {
    match a.args.split_once('=') {
        None => a.names(a.session.scalars.iter().cloned()),
        Some(_) => a.names(a.values()),
    }
}

/// `NAME = PATH [--gray] [--as DT]`.
pub fn load(a: &ArgsAtCursor) -> Completion {
    match a.args.split_once('=') {
        None => a.names(a.arrays()),
        Some((_, rhs)) => {
            let rhs_words = rhs.split_whitespace().count();
            let on_path = rhs_words == 0 || (rhs_words == 1 && !rhs.ends_with(char::is_whitespace));
            if on_path {
                let start = a.cursor - rhs.trim_start().len();
                return paths(rhs.trim_start(), start, a.cursor, true);
            }
            if a.typing_flag() {
                return a.flags(&["--gray", "--as"]);
            }
            if a.after("--as") {
                a.names(dtypes())
            } else {
                a.nothing()
            }
        }
    }
}

/// `NAME PATH`.
pub fn save(a: &ArgsAtCursor) -> Completion {
    match a.word_idx {
        0 => a.names(a.arrays()),
        1 => paths(a.flag_prefix(), a.flag_start, a.cursor, false),
        _ => a.nothing(),
    }
}

/// `[MAGIC]`: a magic's name, with or without its `%`.
pub fn magic_name(a: &ArgsAtCursor) -> Completion {
    let bare = a.flag_prefix().trim_start_matches('%');
    let v: Vec<String> = a
        .magic_names
        .iter()
        .filter(|n| n.trim_start_matches('%').starts_with(bare))
        .map(|n| n.to_string())
        .collect();
    (v, a.flag_start, a.cursor)
}

/// `[stack BYTES]`.
pub fn limit(a: &ArgsAtCursor) -> Completion {
    if a.word_idx == 0 {
        a.names(vec!["stack".to_string()])
    } else {
        a.nothing()
    }
}

/// File-name completion of `typed` (a path prefix, maybe quoted) in [start, end).
fn paths(typed: &str, start: usize, end: usize, images_only: bool) -> Completion {
    let (typed, start) = match typed.chars().next() {
        Some('"' | '\'') => (&typed[1..], start + 1),
        _ => (typed, start),
    };
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
