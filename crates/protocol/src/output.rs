//! What a running cell produces, independent of the wire: text on stdout/stderr, rich display
//! data, updates of an earlier display. The protocol server turns these into iopub messages; the
//! producers (the `nbcuda` crate's `rust`, `magics` and `display` modules) know nothing of Jupyter
//! messages.

use std::sync::Arc;

/// A MIME bundle: `{"text/plain": "...", "image/png": "<base64>", ...}`.
pub type MimeBundle = serde_json::Map<String, serde_json::Value>;

/// One piece of output of a running cell.
#[derive(Debug, Clone)]
pub enum CellOutput {
    Stdout(String),
    Stderr(String),
    /// A `display_data` message. `display_id`, when set, lets a later `UpdateDisplay` replace it.
    Display {
        data: MimeBundle,
        metadata: serde_json::Map<String, serde_json::Value>,
        display_id: Option<String>,
    },
    /// An `update_display_data` for an earlier `Display` with the same id.
    UpdateDisplay {
        data: MimeBundle,
        metadata: serde_json::Map<String, serde_json::Value>,
        display_id: String,
    },
    /// `clear_output`.
    Clear {
        wait: bool,
    },
}

/// Where a running cell sends its output. Cheap to clone, usable from any thread.
pub type OutputSink = Arc<dyn Fn(CellOutput) + Send + Sync>;
