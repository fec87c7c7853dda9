//! "Did you mean" suggestions: the candidate closest to a mistyped word by string similarity,
//! for unknown magics, arrays, CUDA kernels, dtypes, functions, options and GPU models alike.
//!
//! Pure string functions; nothing here knows what the candidates name.

/// The candidate closest to `word` if it is close enough to be a plausible typo.
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(f64, &str)> = None;
    // Never suggest what was written: "did you mean X?" for X itself leads nowhere.
    for c in candidates.into_iter().filter(|c| *c != word) {
        let score = strsim::jaro_winkler(word, c);
        let close = strsim::damerau_levenshtein(word, c) <= (c.len().max(word.len()) / 3).max(1)
            || score >= 0.85
            || (word.len() >= 3 && c.starts_with(word));
        if close && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, c));
        }
    }
    best.map(|(_, c)| c)
}
