//! A small table renderer shared by the magics and the displays: one table → an aligned text/plain
//! rendering and an escaped text/html `<table>`, packed into a MIME bundle for a Jupyter `display_data`.
//!
//! It only formats; it knows nothing of arrays or devices.

use protocol::output::{CellOutput, MimeBundle};

#[derive(Debug, Clone, Default)]
pub struct Table {
    pub caption: Option<String>,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Columns to right-align (numbers).
    pub right: Vec<usize>,
}

/// Escapes `& < > " '` for HTML text and attributes.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

impl Table {
    pub fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|s| s.to_string()).collect(),
            ..Table::default()
        }
    }

    pub fn caption(mut self, c: impl Into<String>) -> Table {
        self.caption = Some(c.into());
        self
    }

    pub fn right(mut self, cols: &[usize]) -> Table {
        self.right = cols.to_vec();
        self
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Headers that are all empty are not shown.
    fn has_header(&self) -> bool {
        self.headers.iter().any(|h| !h.is_empty())
    }

    fn ncols(&self) -> usize {
        self.rows
            .iter()
            .map(Vec::len)
            .chain(std::iter::once(self.headers.len()))
            .max()
            .unwrap_or(0)
    }

    /// Aligned columns separated by two spaces, a dashed rule under the header.
    pub fn text(&self) -> String {
        let n = self.ncols();
        let cell = |r: &Vec<String>, i: usize| r.get(i).cloned().unwrap_or_default();
        let mut width = vec![0usize; n];
        for r in std::iter::once(&self.headers).chain(&self.rows) {
            for (i, w) in width.iter_mut().enumerate() {
                *w = (*w).max(cell(r, i).chars().count());
            }
        }
        let fmt_row = |r: &Vec<String>| {
            let parts: Vec<String> = (0..n)
                .map(|i| {
                    let c = cell(r, i);
                    let pad = width[i].saturating_sub(c.chars().count());
                    if self.right.contains(&i) {
                        format!("{}{c}", " ".repeat(pad))
                    } else {
                        format!("{c}{}", " ".repeat(pad))
                    }
                })
                .collect();
            parts.join("  ").trim_end().to_string()
        };
        let mut out = String::new();
        if let Some(c) = &self.caption {
            out.push_str(c);
            out.push('\n');
        }
        if self.has_header() {
            out.push_str(&fmt_row(&self.headers));
            out.push('\n');
            let rule: Vec<String> = width.iter().map(|w| "-".repeat(*w)).collect();
            out.push_str(&rule.join("  "));
            out.push('\n');
        }
        for r in &self.rows {
            out.push_str(&fmt_row(r));
            out.push('\n');
        }
        out
    }

    pub fn html(&self) -> String {
        let n = self.ncols();
        let mut out = String::from("<table class=\"nbcuda\">");
        if let Some(c) = &self.caption {
            out.push_str(&format!(
                "<caption style=\"text-align:left\">{}</caption>",
                escape_html(c)
            ));
        }
        if self.has_header() {
            out.push_str("<thead><tr>");
            for i in 0..n {
                let h = self.headers.get(i).map(String::as_str).unwrap_or("");
                out.push_str(&format!("<th>{}</th>", escape_html(h)));
            }
            out.push_str("</tr></thead>");
        }
        out.push_str("<tbody>");
        for r in &self.rows {
            out.push_str("<tr>");
            for i in 0..n {
                let c = r.get(i).map(String::as_str).unwrap_or("");
                let style = if self.right.contains(&i) {
                    " style=\"text-align:right\""
                } else {
                    " style=\"text-align:left\""
                };
                out.push_str(&format!("<td{style}>{}</td>", escape_html(c)));
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table>");
        out
    }

    pub fn bundle(&self) -> MimeBundle {
        let mut b = MimeBundle::new();
        b.insert("text/plain".into(), self.text().into());
        b.insert("text/html".into(), self.html().into());
        b
    }

    /// A `display_data` output of this table.
    pub fn display(&self) -> CellOutput {
        CellOutput::Display {
            data: self.bundle(),
            metadata: serde_json::Map::new(),
            display_id: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_text_aligns_and_html_escapes() {
        let mut t = Table::new(&["name", "bytes"]).right(&[1]).caption("a <b>");
        t.row(vec!["x".into(), "4096".into()]);
        t.row(vec!["long_name".into(), "8".into()]);
        assert_eq!(
            t.text(),
            "a <b>\nname       bytes\n---------  -----\nx           4096\nlong_name      8\n"
        );
        let h = t.html();
        assert!(h.contains("<caption style=\"text-align:left\">a &lt;b&gt;</caption>"));
        assert!(h.contains("<td style=\"text-align:right\">4096</td>"));
        assert_eq!(escape_html("<&\"'>"), "&lt;&amp;&quot;&#39;&gt;");
        let mut bare = Table::new(&["", ""]);
        bare.row(vec!["runs".into(), "3".into()]);
        assert_eq!(bare.text(), "runs  3\n");
        assert!(!bare.html().contains("<th>"));
        let b = t.bundle();
        assert!(b.contains_key("text/plain") && b.contains_key("text/html"));
    }
}
