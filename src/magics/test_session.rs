//! A `Magics` session for unit tests that records its outputs: the one test harness of the
//! magics' tests (`show`, `time`, `animate`, `tests_device`, `tests_gpu`). Test-only.

use super::{MagicError, Magics};
use crate::gpu::Dtype;
use base64::Engine;
use protocol::output::{CellOutput, MimeBundle, OutputSink};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

pub(crate) struct Session {
    pub m: Magics,
    pub log: Arc<Mutex<Vec<CellOutput>>>,
    pub sink: OutputSink,
    pub cancel: Arc<AtomicBool>,
}

impl Session {
    pub fn new() -> Session {
        let log = Arc::new(Mutex::new(Vec::new()));
        let l2 = log.clone();
        let sink: OutputSink = Arc::new(move |o| {
            if let Ok(mut v) = l2.lock() {
                v.push(o)
            }
        });
        Session {
            m: Magics::new(),
            log,
            sink,
            cancel: Arc::new(AtomicBool::new(false)),
        }
    }

    pub fn run(&mut self, line: &str) -> Result<Option<MimeBundle>, MagicError> {
        self.m.run_line(line, 1, &self.sink, &self.cancel)
    }

    pub fn ok(&mut self, line: &str) {
        if let Err(e) = self.run(line) {
            panic!("{line}: {e}");
        }
    }

    /// Runs `line`, which must succeed, and returns what it printed ([`Session::printed`]).
    pub fn ok_text(&mut self, line: &str) -> String {
        self.ok(line);
        self.printed()
    }

    pub fn err(&mut self, line: &str) -> MagicError {
        match self.run(line) {
            Ok(_) => panic!("{line} should fail"),
            Err(e) => e,
        }
    }

    pub fn cell(&mut self, header: &str, body: &str) -> Result<Option<MimeBundle>, MagicError> {
        self.m.run_cell(header, body, 2, &self.sink, &self.cancel)
    }

    /// Every output since the last call.
    pub fn take(&mut self) -> Vec<CellOutput> {
        self.log
            .lock()
            .map(|mut v| v.drain(..).collect())
            .unwrap_or_default()
    }

    /// Everything printed since the last call: stdout, stderr and the text/plain of displays
    /// (each of which must also have text/html).
    pub fn printed(&mut self) -> String {
        let mut s = String::new();
        for o in self.take() {
            match o {
                CellOutput::Stdout(t) | CellOutput::Stderr(t) => s.push_str(&t),
                CellOutput::Display { data, .. } => {
                    s.push_str(&text(&data));
                    assert!(data.contains_key("text/html"), "no text/html: {data:?}");
                }
                other => s.push_str(&format!("{other:?}")),
            }
        }
        s
    }

    /// The data of the only display among the outputs since the last call.
    pub fn display(&mut self) -> MimeBundle {
        let shown: Vec<MimeBundle> = self
            .take()
            .into_iter()
            .filter_map(|o| match o {
                CellOutput::Display { data, .. } => Some(data),
                _ => None,
            })
            .collect();
        assert_eq!(shown.len(), 1, "one display: {shown:?}");
        shown.into_iter().next().unwrap_or_default()
    }

    pub fn put(&mut self, name: &str, dtype: Dtype, shape: Vec<usize>, values: &[f64]) {
        let mut bytes = Vec::new();
        for &v in values {
            crate::magics::host::put_f64(dtype, v, &mut bytes);
        }
        self.m
            .dev
            .create_array(name, dtype, shape, &bytes)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }

    /// The bytes of array `name`.
    pub fn bytes(&self, name: &str) -> Vec<u8> {
        self.m.dev.read_array(name).expect(name)
    }

    pub fn f64s(&self, name: &str) -> Vec<f64> {
        let info = self.m.dev.array(name).expect(name);
        crate::display::values::to_f64_vec(info.dtype, &self.bytes(name))
    }
}

/// The decoded image of `key` (`image/png` or `image/gif`, first frame) of a bundle.
pub fn b64(data: &MimeBundle, key: &str) -> Vec<u8> {
    let s = data
        .get(key)
        .and_then(|v| v.as_str())
        .unwrap_or_else(|| panic!("no {key}: {data:?}"));
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .expect("base64")
}

pub fn png(data: &MimeBundle) -> image::DynamicImage {
    image::load_from_memory_with_format(&b64(data, "image/png"), image::ImageFormat::Png)
        .expect("a PNG")
}

pub fn text(data: &MimeBundle) -> String {
    data.get("text/plain")
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string()
}

pub fn seq_rng(seed: u64) -> crate::magics::rng::Rng {
    crate::magics::rng::Rng::new(seed)
}
