//! The arguments of `%timeline` (recording and showing when device work runs) and `%event`
//! (events that order streams).
//!
//! Pure parsing: this module must not import `eval` or the magics' execution modules.

use super::super::lex::{ParseError, Tok};
use super::command::{Command, EventCmd, TimelineCmd};
use super::cursor::{unknown_option, Parser};
use crate::suggest::{did_you_mean, Quote};

const TIMELINE_USAGE: &str = "%timeline [on | off | clear | --save PATH.json | --json]";
const EVENT_USAGE: &str = "%event record NAME [STREAM] | %event wait NAME STREAM";

impl<'a> Parser<'a> {
    pub(crate) fn timeline(&mut self) -> Result<Command, ParseError> {
        if self.lx.at_end() {
            return Ok(Command::Timeline(TimelineCmd::Show));
        }
        if let Some(f) = self.flag()? {
            return match &f.tok {
                Tok::Flag(s) if s == "--save" => {
                    let path = self.path("a file path after --save (PATH.json)")?;
                    Ok(Command::Timeline(TimelineCmd::Save(path)))
                }
                Tok::Flag(s) if s == "--json" => Ok(Command::Timeline(TimelineCmd::Json)),
                other => Err(unknown_option(
                    &f,
                    other,
                    "%timeline",
                    &["--save", "--json"],
                )),
            };
        }
        let verb = self.name(&format!("on, off or clear: {TIMELINE_USAGE}"))?;
        match verb.text.as_str() {
            "on" => Ok(Command::Timeline(TimelineCmd::On)),
            "off" => Ok(Command::Timeline(TimelineCmd::Off)),
            "clear" => Ok(Command::Timeline(TimelineCmd::Clear)),
            other => {
                let hint = did_you_mean(other, ["on", "off", "clear"], Quote::Plain)
                    .map(|h| format!("; {h}"))
                    .unwrap_or_default();
                Err(ParseError::at(
                    verb.span,
                    format!("unknown %timeline command '{other}'{hint}: {TIMELINE_USAGE}"),
                ))
            }
        }
    }

    pub(crate) fn event(&mut self) -> Result<Command, ParseError> {
        let verb = self.name(&format!("record or wait: {EVENT_USAGE}"))?;
        match verb.text.as_str() {
            "record" => {
                let name = self.name("an event name after %event record")?;
                let stream = if self.lx.at_end() {
                    None
                } else {
                    Some(self.name("a stream name")?)
                };
                Ok(Command::Event(EventCmd::Record { name, stream }))
            }
            "wait" => {
                let name = self.name("an event name after %event wait")?;
                let stream = self.name(&format!(
                    "the stream that waits, after the event's name: {EVENT_USAGE}"
                ))?;
                Ok(Command::Event(EventCmd::Wait { name, stream }))
            }
            other => {
                let hint = did_you_mean(other, ["record", "wait"], Quote::Plain)
                    .map(|h| format!("; {h}"))
                    .unwrap_or_default();
                Err(ParseError::at(
                    verb.span,
                    format!("unknown %event command '{other}'{hint}: {EVENT_USAGE}"),
                ))
            }
        }
    }
}
