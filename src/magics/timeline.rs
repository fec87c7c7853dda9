//! `%timeline` (record and show when device work runs) and `%event` (events that order
//! streams): the magics' side. Recording and scheduling are `gpu::DeviceState`'s
//! (`timeline_*`, `event_*`); the chart, table and trace-event JSON are `display::timeline`'s.

use super::lex::ParseError;
use super::parse::{EventCmd, TimelineCmd};
use super::{LineCtx, MagicError, Magics};
use crate::display::{png_display, timeline};
use nb::ErrorKind;
use protocol::output::{CellOutput, MimeBundle, OutputSink};

impl Magics {
    pub(crate) fn timeline(
        &mut self,
        ctx: &LineCtx,
        cmd: TimelineCmd,
        out: &OutputSink,
    ) -> Result<Option<MimeBundle>, MagicError> {
        let say = |s: String| out(CellOutput::Stdout(format!("{s}\n")));
        match cmd {
            TimelineCmd::On => say(self.dev.timeline_on().map_err(|e| ctx.gpu(e))?),
            TimelineCmd::Off => say(self.dev.timeline_off()),
            TimelineCmd::Clear => say(self.dev.timeline_clear().map_err(|e| ctx.gpu(e))?),
            TimelineCmd::Show => {
                let v = self.dev.timeline_view().map_err(|e| ctx.gpu(e))?;
                if v.rows.is_empty() {
                    say(if v.recording {
                        "the timeline is recording but holds nothing yet: launch, copy or sync, \
                         then %timeline"
                            .into()
                    } else {
                        "the timeline is empty: %timeline on starts recording".into()
                    });
                    return Ok(None);
                }
                match timeline::chart(&v) {
                    Ok(r) => out(png_display(&r)),
                    Err(m) => out(CellOutput::Stderr(format!("(no chart: {m})\n"))),
                }
                out(timeline::table(&v).display());
                for n in &v.notes {
                    out(CellOutput::Stderr(format!("note: {n}\n")));
                }
            }
            TimelineCmd::Save(path) => {
                let v = self.dev.timeline_view().map_err(|e| ctx.gpu(e))?;
                let text = serde_json::to_string(&timeline::trace_json(&v))
                    .map_err(|e| ctx.plain(ErrorKind::Internal, format!("timeline JSON: {e}")))?;
                std::fs::write(&path.text, text).map_err(|e| {
                    ctx.err(
                        ErrorKind::Io,
                        ParseError::at(path.span, format!("cannot write {}: {e}", path.text)),
                    )
                })?;
                say(format!(
                    "saved {} timeline entries to {} (Chrome trace-event JSON: open it in \
                     https://ui.perfetto.dev or chrome://tracing)",
                    v.rows.len(),
                    path.text
                ));
            }
            TimelineCmd::Json => {
                let v = self.dev.timeline_view().map_err(|e| ctx.gpu(e))?;
                let j = timeline::trace_json(&v);
                let mut b = MimeBundle::new();
                b.insert("text/plain".into(), j.to_string().into());
                b.insert("application/json".into(), j);
                return Ok(Some(b));
            }
        }
        Ok(None)
    }

    pub(crate) fn event(
        &mut self,
        ctx: &LineCtx,
        cmd: EventCmd,
        out: &OutputSink,
    ) -> Result<(), MagicError> {
        let msg = match cmd {
            EventCmd::Record { name, stream } => self
                .dev
                .event_record(&name.text, stream.as_ref().map(|s| s.text.as_str()))
                .map_err(|e| ctx.gpu_at(e, name.span))?,
            EventCmd::Wait { name, stream } => self
                .dev
                .event_wait(&name.text, &stream.text)
                .map_err(|e| ctx.gpu_at(e, name.span))?,
        };
        out(CellOutput::Stdout(format!("{msg}\n")));
        Ok(())
    }
}
