//! Progress bars for commands that run longer than a second (`%time`, `%%animate`): a
//! `display_data` with a display id, updated in place through `update_display_data`, and at the
//! end replaced by the command's result in the same place.
//!
//! Replacing (an `UpdateDisplay` with the final content) rather than clearing: `clear_output`
//! would also erase what the cell printed before, and the result would jump to the end.

use crate::display::table::escape_html;
use protocol::output::{CellOutput, MimeBundle, OutputSink};
use std::time::{Duration, Instant};

/// The bar as text/plain (`[#####.....]  50%  label`) and text/html (a styled `<div>`).
pub fn progress_bundle(fraction: f64, label: &str) -> MimeBundle {
    let f = if fraction.is_finite() {
        fraction.clamp(0.0, 1.0)
    } else {
        0.0
    };
    const CELLS: usize = 30;
    let full = (f * CELLS as f64).round() as usize;
    let pct = (f * 100.0).floor() as u32;
    let text = format!(
        "[{}{}] {pct:>3}%  {label}",
        "#".repeat(full),
        ".".repeat(CELLS - full)
    );
    let html = format!(
        "<div class=\"nbcuda-progress\" style=\"font-family:sans-serif;font-size:12px\">\
<div style=\"display:inline-block;width:300px;height:10px;border:1px solid #999;border-radius:3px;vertical-align:middle;background:#eee\">\
<div style=\"width:{:.1}%;height:100%;background:#1f77b4\"></div></div> \
<span style=\"vertical-align:middle\">{pct}% {}</span></div>",
        f * 100.0,
        escape_html(label)
    );
    let mut b = MimeBundle::new();
    b.insert("text/plain".into(), text.into());
    b.insert("text/html".into(), html.into());
    b
}

thread_local! {
    static THREAD_DELAY: std::cell::Cell<Option<Duration>> = const { std::cell::Cell::new(None) };
}

/// Sets the delay after which [`Progress::new`] shows its bar, for commands run on this thread
/// (`None`: the default second). Lets tests see the bar of a quick command.
pub fn set_thread_delay(delay: Option<Duration>) {
    THREAD_DELAY.with(|d| d.set(delay));
}

/// A progress bar that appears only once its command has run for `delay` (1 s by default), is
/// updated at most every `interval`, and is replaced by the result.
pub struct Progress {
    sink: OutputSink,
    id: String,
    start: Instant,
    last: Option<Instant>,
    delay: Duration,
    interval: Duration,
}

impl Progress {
    /// A bar that appears after 1 s (or the delay set by [`set_thread_delay`] on this thread).
    pub fn new(sink: &OutputSink) -> Progress {
        let delay = THREAD_DELAY
            .with(|d| d.get())
            .unwrap_or(Duration::from_secs(1));
        Progress::with_timing(sink, delay, Duration::from_millis(100))
    }

    /// For tests and callers that want another delay or update interval.
    pub fn with_timing(sink: &OutputSink, delay: Duration, interval: Duration) -> Progress {
        Progress {
            sink: sink.clone(),
            id: format!("nbcuda-progress-{}", uuid::Uuid::new_v4()),
            start: Instant::now(),
            last: None,
            delay,
            interval,
        }
    }

    /// Whether the bar is on screen.
    pub fn shown(&self) -> bool {
        self.last.is_some()
    }

    /// Reports progress; shows or updates the bar when it is due.
    pub fn update(&mut self, fraction: f64, label: &str) {
        let now = Instant::now();
        if now.duration_since(self.start) < self.delay {
            return;
        }
        let data = progress_bundle(fraction, label);
        match self.last {
            None => (self.sink)(CellOutput::Display {
                data,
                metadata: serde_json::Map::new(),
                display_id: Some(self.id.clone()),
            }),
            Some(t) if now.duration_since(t) >= self.interval => {
                (self.sink)(CellOutput::UpdateDisplay {
                    data,
                    metadata: serde_json::Map::new(),
                    display_id: self.id.clone(),
                })
            }
            Some(_) => return,
        }
        self.last = Some(now);
    }

    /// Shows `data` (with `metadata`): in place of the bar when it was shown, else as a new
    /// `display_data`.
    pub fn finish(self, data: MimeBundle, metadata: serde_json::Map<String, serde_json::Value>) {
        let out = if self.shown() {
            CellOutput::UpdateDisplay {
                data,
                metadata,
                display_id: self.id,
            }
        } else {
            CellOutput::Display {
                data,
                metadata,
                display_id: None,
            }
        };
        (self.sink)(out);
    }

    /// Removes the bar (an empty update) when the command failed; nothing when it was not shown.
    pub fn abandon(self) {
        if self.shown() {
            let mut data = MimeBundle::new();
            data.insert("text/plain".into(), "".into());
            (self.sink)(CellOutput::UpdateDisplay {
                data,
                metadata: serde_json::Map::new(),
                display_id: self.id,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    fn sink() -> (OutputSink, Arc<Mutex<Vec<CellOutput>>>) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = log.clone();
        let s: OutputSink = Arc::new(move |o| {
            if let Ok(mut v) = l.lock() {
                v.push(o);
            }
        });
        (s, log)
    }

    #[test]
    fn progress_bundle_renders_the_fraction() {
        let b = progress_bundle(0.5, "frame 5/10 <u>");
        let t = b["text/plain"].as_str().unwrap_or_default();
        assert_eq!(
            t,
            format!(
                "[{}{}]  50%  frame 5/10 <u>",
                "#".repeat(15),
                ".".repeat(15)
            )
        );
        let h = b["text/html"].as_str().unwrap_or_default();
        assert!(h.contains("width:50.0%") && h.contains("&lt;u&gt;"), "{h}");
        assert!(progress_bundle(f64::NAN, "")["text/plain"]
            .as_str()
            .unwrap_or_default()
            .contains("  0%"));
        assert!(progress_bundle(7.0, "")["text/plain"]
            .as_str()
            .unwrap_or_default()
            .contains("100%"));
    }

    #[test]
    fn a_shown_bar_is_replaced_by_the_result() {
        let (s, log) = sink();
        let mut p = Progress::with_timing(&s, Duration::ZERO, Duration::ZERO);
        p.update(0.25, "a");
        p.update(0.75, "b");
        let mut result = MimeBundle::new();
        result.insert("text/plain".into(), "done".into());
        p.finish(result, serde_json::Map::new());
        let v = log.lock().map(|v| v.clone()).unwrap_or_default();
        assert_eq!(v.len(), 3);
        let CellOutput::Display {
            display_id: Some(id),
            ..
        } = &v[0]
        else {
            panic!("first a display with an id: {:?}", v[0]);
        };
        for o in &v[1..] {
            let CellOutput::UpdateDisplay { display_id, .. } = o else {
                panic!("then updates: {o:?}");
            };
            assert_eq!(display_id, id);
        }
        let CellOutput::UpdateDisplay { data, .. } = &v[2] else {
            panic!()
        };
        assert_eq!(data["text/plain"], "done");
    }

    #[test]
    fn a_quick_command_shows_no_bar() {
        let (s, log) = sink();
        let mut p = Progress::with_timing(&s, Duration::from_secs(3600), Duration::ZERO);
        p.update(0.5, "x");
        assert!(!p.shown());
        p.finish(MimeBundle::new(), serde_json::Map::new());
        let v = log.lock().map(|v| v.clone()).unwrap_or_default();
        assert_eq!(v.len(), 1);
        assert!(matches!(
            &v[0],
            CellOutput::Display {
                display_id: None,
                ..
            }
        ));
        let (s, log) = sink();
        let mut p = Progress::with_timing(&s, Duration::ZERO, Duration::ZERO);
        p.update(0.5, "x");
        p.abandon();
        let v = log.lock().map(|v| v.clone()).unwrap_or_default();
        assert!(matches!(&v[1], CellOutput::UpdateDisplay { .. }));
    }
}
