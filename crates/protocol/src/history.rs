//! The execution history of this Jupyter kernel session, for `history_request` (tail, range,
//! search). Kept in memory: one session per process, numbered 1.

use serde_json::{json, Value};

#[derive(Default)]
pub struct History {
    entries: Vec<(u64, String, Option<String>)>,
}

impl History {
    pub fn push(&mut self, line: u64, input: &str, output: Option<String>) {
        self.entries.push((line, input.to_string(), output));
    }

    fn row(&self, entry: &(u64, String, Option<String>), output: bool) -> Value {
        if output {
            json!([1, entry.0, [entry.1, entry.2]])
        } else {
            json!([1, entry.0, entry.1])
        }
    }

    /// Answer a `history_request` content (read leniently: missing fields take defaults).
    pub fn query(&self, content: &Value) -> Vec<Value> {
        let output = content
            .get("output")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let n = content
            .get("n")
            .and_then(Value::as_i64)
            .unwrap_or(10)
            .max(0) as usize;
        match content
            .get("hist_access_type")
            .and_then(Value::as_str)
            .unwrap_or("tail")
        {
            "range" => {
                let start = content.get("start").and_then(Value::as_i64).unwrap_or(0);
                let stop = content
                    .get("stop")
                    .and_then(Value::as_i64)
                    .unwrap_or(i64::MAX);
                self.entries
                    .iter()
                    .filter(|e| (e.0 as i64) >= start && (e.0 as i64) < stop)
                    .map(|e| self.row(e, output))
                    .collect()
            }
            "search" => {
                let pattern = content
                    .get("pattern")
                    .and_then(Value::as_str)
                    .unwrap_or("*");
                let unique = content
                    .get("unique")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let mut seen = std::collections::HashSet::new();
                let mut hits: Vec<&(u64, String, Option<String>)> = self
                    .entries
                    .iter()
                    .rev()
                    .filter(|e| glob_match(pattern, &e.1))
                    .filter(|e| !unique || seen.insert(e.1.clone()))
                    .collect();
                if content.get("n").is_some() {
                    hits.truncate(n);
                }
                hits.reverse();
                hits.into_iter().map(|e| self.row(e, output)).collect()
            }
            _ => {
                let skip = self.entries.len().saturating_sub(n);
                self.entries[skip..]
                    .iter()
                    .map(|e| self.row(e, output))
                    .collect()
            }
        }
    }
}

/// IPython's history search pattern: `*` any run, `?` one character, whole-string match.
fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0usize, 0usize);
    let (mut star, mut mark) = (None::<usize>, 0usize);
    while ti < t.len() {
        // `*` first: it is a wildcard even where the text has a `*` (`6 *` finds `6 * 7`).
        if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_range_search() {
        let mut h = History::default();
        for (i, code) in ["let a = 1;", "a + 1", "println!(\"hi\")", "a * 2"]
            .iter()
            .enumerate()
        {
            h.push(i as u64 + 1, code, None);
        }
        assert_eq!(
            h.query(&json!({"hist_access_type": "tail", "n": 2})).len(),
            2
        );
        let r = h.query(&json!({"hist_access_type": "range", "start": 2, "stop": 4}));
        assert_eq!(
            r,
            vec![json!([1, 2, "a + 1"]), json!([1, 3, "println!(\"hi\")"])]
        );
        let s = h.query(&json!({"hist_access_type": "search", "pattern": "a*"}));
        assert_eq!(s.len(), 2);
        assert!(glob_match("*print*", "println!(\"hi\")"));
        assert!(!glob_match("b*", "a"));
        // A `*` in the entry does not stop the pattern's `*` from being a wildcard.
        assert!(glob_match("6 *", "6 * 7"));
        assert!(glob_match("6 * ?", "6 * 7"));
        assert!(!glob_match("6 *", "16 * 2"));
        assert!(glob_match("*\\*", "a*b\\*"));
    }
}
