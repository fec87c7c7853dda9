//! `%event record NAME [STREAM]` and `%event wait NAME STREAM`: named CUDA events that order
//! streams without blocking the host (`cudaEventRecord`, `cudaStreamWaitEvent`). Recording a
//! name again replaces its event, as re-recording a `cudaEvent_t` does.

use super::*;

impl DeviceState {
    /// `%event record NAME [STREAM]`.
    pub fn event_record(&mut self, name: &str, stream: Option<&str>) -> Result<String, GpuError> {
        self.recover_if_needed()?;
        let id = self.stream_id(stream)?;
        let mark = self.timeline_mark(id);
        let e = self.backend.record_event(id)?;
        if let Some(old) = self.events.insert(name.to_string(), e) {
            self.backend.destroy_event(old);
        }
        self.timeline_event(mark, true, name, stream, id);
        Ok(format!("event `{name}` recorded on {}", on_stream(stream)))
    }

    /// `%event wait NAME STREAM`: STREAM waits for the work before the event's latest record.
    pub fn event_wait(&mut self, name: &str, stream: &str) -> Result<String, GpuError> {
        self.recover_if_needed()?;
        let Some(&e) = self.events.get(name) else {
            let hint = did_you_mean(name, self.events.keys().map(String::as_str), Quote::Code)
                .map(|h| format!("; {h}"))
                .unwrap_or_default();
            return Err(GpuError::argument(format!(
                "no event named `{name}`{hint} (%event record {name} [STREAM] records one)"
            )));
        };
        let id = self.stream_id(Some(stream))?;
        let mark = self.timeline_mark(id);
        self.backend.stream_wait_event(id, e)?;
        self.timeline_event(mark, false, name, Some(stream), id);
        Ok(format!(
            "stream {stream} waits for event `{name}` (the host goes on)"
        ))
    }
}

fn on_stream(stream: Option<&str>) -> String {
    stream.map_or("the default stream".into(), |s| format!("stream {s}"))
}
