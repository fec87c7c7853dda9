//! "Did you mean" suggestions: the candidate closest to a mistyped word by string similarity,
//! for unknown magics, arrays, CUDA kernels, dtypes, functions, options and GPU models alike.
//!
//! [`nearest`] is the one similarity rule and [`did_you_mean`] the one way the hint is worded;
//! every "did you mean" of the crate (magics, device state, launch arguments) comes from here.
//!
//! Pure string functions; nothing here knows what the candidates name, and this module imports
//! nothing from the crate.

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

/// How [`did_you_mean`] writes the suggested name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quote {
    /// As it is: `did you mean zeros?` (the command language's messages).
    Plain,
    /// In backticks: ``did you mean `y`?`` (the device state's messages, which quote names so).
    Code,
    /// As a call: `did you mean len()?` (functions of expressions).
    Call,
}

/// `did you mean X?` for the candidate [`nearest`] to `word`, written as `quote` says; None when
/// no candidate is close enough.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    quote: Quote,
) -> Option<String> {
    nearest(word, candidates).map(|c| match quote {
        Quote::Plain => format!("did you mean {c}?"),
        Quote::Code => format!("did you mean `{c}`?"),
        Quote::Call => format!("did you mean {c}()?"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn did_you_mean_words_the_nearest_candidate_as_asked() {
        let c = ["zeros", "ones", "len"];
        assert_eq!(
            did_you_mean("zeroes", c, Quote::Plain).as_deref(),
            Some("did you mean zeros?")
        );
        assert_eq!(
            did_you_mean("zeroes", c, Quote::Code).as_deref(),
            Some("did you mean `zeros`?")
        );
        assert_eq!(
            did_you_mean("lenn", c, Quote::Call).as_deref(),
            Some("did you mean len()?")
        );
        assert_eq!(did_you_mean("zeros", c, Quote::Plain), None);
        assert_eq!(did_you_mean("qqqqqq", c, Quote::Plain), None);
    }
}
