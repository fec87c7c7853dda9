//! `%timeline`: while recording is on, every launch, copy (`%upload`, `%download`, `%copy`),
//! event (`%event`) and synchronisation (`%sync`) is noted with its stream, and `%timeline`
//! turns the notes into rows: when each one ran.
//!
//! - **On a GPU** the times are measured: a CUDA event is recorded on the work's stream before
//!   and after it, and the rows are their times from an event recorded when recording started
//!   (the device is synchronised first). Synchronisations are the host's wall time. Gaps
//!   between work are the host's time between cells and magics.
//! - **On ptxsim** the times are modelled (`ptxsim::timeline`): each launch is counted while it
//!   runs and lasts its estimated time on the session's `%gpu` model (`ptxsim::model`), copies
//!   take the modelled link's time, and the host issues work back to back.
//!
//! This module records and schedules; the chart, the table and the trace-event JSON are
//! `display::timeline`'s.

use super::super::backend::EventId;
use super::*;
use ptxsim::timeline::{self as sched, CopyDir, Stream, Work};

/// What one note is of.
#[derive(Debug, Clone)]
enum What {
    Kernel {
        name: String,
        grid: Dim3,
        block: Dim3,
        /// ptxsim: the estimate on the model (ns), what bounds it, and the blocks the model
        /// holds at once; None on a GPU or when the estimate failed.
        modelled: Option<(f64, String, u64)>,
    },
    Copy {
        dir: CopyDir,
        array: String,
        bytes: u64,
    },
    Record(String),
    Wait(String),
    Sync,
}

/// One note: what, on which stream (None: the default stream), and on a GPU when.
#[derive(Debug, Clone)]
struct Note {
    what: What,
    stream: Option<String>,
    /// GPU: the events recorded around the work.
    events: Option<(EventId, EventId)>,
    /// Host time from the start of recording to the work's issue and return.
    host: (f64, f64),
}

/// The recording of a session.
#[derive(Debug, Default)]
pub(super) struct Recorder {
    on: bool,
    notes: Vec<Note>,
    /// When recording started: the host's clock and, on a GPU, an event.
    origin: Option<(Instant, Option<EventId>)>,
}

/// A mark taken before a piece of work: its issue time and, on a GPU, its first event.
pub(super) struct Mark {
    at: f64,
    event: Option<EventId>,
}

/// One row of a timeline: a piece of work and when it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineRow {
    /// `"kernel"`, `"copy"`, `"event"`, `"wait"` or `"sync"`.
    pub kind: &'static str,
    /// The CUDA kernel's name, the array copied, the event, or what a sync waited for.
    pub name: String,
    /// `"default"` or the stream's name (`"host"` for a synchronisation of the whole device).
    pub stream: String,
    /// Where it ran: `"stream s1"`, `"copy engine H→D"`, `"host"`, …
    pub lane: String,
    pub start_us: f64,
    pub dur_us: f64,
    /// Launch shape, bytes, the estimate's bound, …
    pub detail: String,
}

/// What `%timeline` shows.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineView {
    /// `Some(GPU model)` when modelled on ptxsim, None when measured.
    pub modelled_on: Option<String>,
    /// The device the work ran on (`%device`'s name, or "ptxsim").
    pub device: String,
    pub recording: bool,
    /// In issue order.
    pub rows: Vec<TimelineRow>,
    /// Work whose time is unknown (a launch whose estimate failed), as notes for the display.
    pub notes: Vec<String>,
}

fn stream_text(s: &Option<String>) -> String {
    s.clone().unwrap_or_else(|| "default".into())
}

fn lane_of_stream(s: &Option<String>) -> String {
    match s {
        Some(s) => format!("stream {s}"),
        None => "default stream".into(),
    }
}

fn copy_lane(dir: CopyDir) -> &'static str {
    match dir {
        CopyDir::HostToDevice => "copy engine H→D",
        CopyDir::DeviceToHost => "copy engine D→H",
        CopyDir::DeviceToDevice => "",
    }
}

impl DeviceState {
    /// `%timeline on`: starts recording (a no-op when already on). On a GPU the device is
    /// synchronised and an event marks time zero.
    pub fn timeline_on(&mut self) -> Result<String, GpuError> {
        self.recover_if_needed()?;
        if self.timeline.on {
            return Ok("the timeline is already recording (%timeline shows it)".into());
        }
        if self.timeline.origin.is_none() {
            self.timeline_origin()?;
        }
        self.timeline.on = true;
        Ok(match self.backend.name() {
            "ptxsim" => format!(
                "recording the timeline, modelled on {} (ptxsim): each launch is counted as it \
                 runs; %timeline shows it",
                self.gpu_model().name
            ),
            _ => "recording the timeline with CUDA events; %timeline shows it".into(),
        })
    }

    fn timeline_origin(&mut self) -> Result<(), GpuError> {
        let event = if self.backend.name() == "ptxsim" {
            None
        } else {
            self.backend.synchronize(None)?;
            Some(self.backend.record_event(None)?)
        };
        self.timeline.origin = Some((Instant::now(), event));
        Ok(())
    }

    /// `%timeline off`: stops recording; what was recorded stays.
    pub fn timeline_off(&mut self) -> String {
        self.timeline.on = false;
        format!(
            "timeline recording off ({} entries kept; %timeline clear forgets them)",
            self.timeline.notes.len()
        )
    }

    /// `%timeline clear`: forgets what was recorded; recording goes on if it was on, from a
    /// new time zero.
    pub fn timeline_clear(&mut self) -> Result<String, GpuError> {
        let n = self.timeline.notes.len();
        self.forget_timeline();
        if self.timeline.on {
            self.timeline_origin()?;
        }
        Ok(format!("timeline cleared ({n} entries forgotten)"))
    }

    /// Drops the notes and their events (also when the backend or its context changes).
    pub(super) fn forget_timeline(&mut self) {
        let notes = std::mem::take(&mut self.timeline.notes);
        for (a, b) in notes.iter().filter_map(|n| n.events) {
            self.backend.destroy_event(a);
            self.backend.destroy_event(b);
        }
        if let Some((_, Some(e))) = self.timeline.origin.take() {
            self.backend.destroy_event(e);
        }
    }

    /// Called by [`DeviceState::reset`] and the backend switch: events of an old context mean
    /// nothing in the new one.
    pub(super) fn restart_timeline(&mut self) {
        self.timeline.notes.clear();
        self.timeline.origin = None;
        if self.timeline.on {
            if let Err(e) = self.timeline_origin() {
                tracing::warn!("timeline: could not restart recording: {}", e.message);
                self.timeline.on = false;
            }
        }
    }

    fn host_now(&self) -> f64 {
        self.timeline
            .origin
            .map(|(t0, _)| t0.elapsed().as_secs_f64() * 1e6)
            .unwrap_or(0.0)
    }

    /// Before a piece of work on `stream` (a backend stream id): None when not recording.
    pub(super) fn timeline_mark(&mut self, stream: Option<StreamId>) -> Option<Mark> {
        if !self.timeline.on {
            return None;
        }
        let event = if self.backend.name() == "ptxsim" {
            None
        } else {
            self.backend.record_event(stream).ok()
        };
        Some(Mark {
            at: self.host_now(),
            event,
        })
    }

    fn timeline_note(
        &mut self,
        mark: Mark,
        what: What,
        stream: Option<&str>,
        backend_stream: Option<StreamId>,
    ) {
        let events = match mark.event {
            Some(a) => match self.backend.record_event(backend_stream) {
                Ok(b) => Some((a, b)),
                Err(_) => {
                    self.backend.destroy_event(a);
                    None
                }
            },
            None => None,
        };
        let end = self.host_now();
        self.timeline.notes.push(Note {
            what,
            stream: stream.map(str::to_string),
            events,
            host: (mark.at, end),
        });
    }

    /// After a launch of `k` (ptxsim: with its counters, when it was counted for the timeline).
    pub(super) fn timeline_launch(
        &mut self,
        mark: Option<Mark>,
        request: &LaunchRequest,
        name: &str,
        modelled: Option<(f64, String, u64)>,
        backend_stream: Option<StreamId>,
    ) {
        let Some(mark) = mark else { return };
        let what = What::Kernel {
            name: name.to_string(),
            grid: request.grid,
            block: request.block,
            modelled,
        };
        self.timeline_note(mark, what, request.stream.as_deref(), backend_stream);
    }

    /// After a copy of `bytes` of `array` on `stream`.
    pub(super) fn timeline_copy(
        &mut self,
        mark: Option<Mark>,
        dir: CopyDir,
        array: &str,
        bytes: usize,
        stream: Option<&str>,
        backend_stream: Option<StreamId>,
    ) {
        let Some(mark) = mark else { return };
        let what = What::Copy {
            dir,
            array: array.to_string(),
            bytes: bytes as u64,
        };
        self.timeline_note(mark, what, stream, backend_stream);
    }

    /// After an event record (`record`) or a stream's wait on an event.
    pub(super) fn timeline_event(
        &mut self,
        mark: Option<Mark>,
        record: bool,
        name: &str,
        stream: Option<&str>,
        backend_stream: Option<StreamId>,
    ) {
        let Some(mark) = mark else { return };
        let what = if record {
            What::Record(name.to_string())
        } else {
            What::Wait(name.to_string())
        };
        self.timeline_note(mark, what, stream, backend_stream);
    }

    /// Before a host synchronisation: its start on the host's clock (no events).
    pub(super) fn timeline_host_mark(&self) -> Option<Mark> {
        self.timeline.on.then(|| Mark {
            at: self.host_now(),
            event: None,
        })
    }

    /// After `%sync [STREAM]` returned.
    pub(super) fn timeline_sync(&mut self, mark: Option<Mark>, stream: Option<&str>) {
        let Some(mark) = mark else { return };
        self.timeline_note(mark, What::Sync, stream, None);
    }

    /// The parameters of counting a launch for the timeline on ptxsim: the counter
    /// configuration and what the estimate needs (None when not recording or not on ptxsim).
    pub(super) fn timeline_counters(
        &mut self,
        ci: usize,
        ki: usize,
        request: &LaunchRequest,
    ) -> Option<(ptxsim::counters::CounterConfig, TimelineModel)> {
        if !self.timeline.on || self.backend.name() != "ptxsim" {
            return None;
        }
        let gpu = self.gpu_model();
        let setup = self.counter_setup(ci, ki, request, &gpu, true, false);
        let shape = setup
            .resources
            .as_ref()
            .ok()
            .map(|r| ptxsim::model::LaunchShape {
                block_threads: request.block.0 * request.block.1 * request.block.2,
                registers: r.registers,
                shared_bytes: r.static_shared_bytes + request.shared_bytes,
            });
        let wave = u64::from(gpu.sms) * u64::from(setup.per_sm.max(1));
        Some((setup.config, TimelineModel { gpu, shape, wave }))
    }

    /// `%timeline`: the rows of what was recorded. On a GPU the device is synchronised first
    /// (the events must have happened).
    pub fn timeline_view(&mut self) -> Result<TimelineView, GpuError> {
        let device = self.describe().name;
        if self.backend.name() == "ptxsim" {
            return Ok(self.modelled_view(device));
        }
        self.backend.synchronize(None)?;
        let origin = self.timeline.origin.and_then(|(_, e)| e);
        let mut rows = Vec::new();
        let mut notes = Vec::new();
        for n in self.timeline.notes.clone() {
            let (start, end) = match (origin, n.events) {
                (Some(o), Some((a, b))) => {
                    let s = self.backend.event_elapsed_ms(o, a);
                    let e = self.backend.event_elapsed_ms(o, b);
                    match (s, e) {
                        (Ok(s), Ok(e)) => (s * 1e3, e * 1e3),
                        _ => {
                            notes.push(format!("{}: no event time", describe(&n.what)));
                            continue;
                        }
                    }
                }
                _ => n.host,
            };
            rows.push(row_of(&n, start, (end - start).max(0.0)));
        }
        Ok(TimelineView {
            modelled_on: None,
            device,
            recording: self.timeline.on,
            rows,
            notes,
        })
    }

    fn modelled_view(&mut self, device: String) -> TimelineView {
        let gpu = self.gpu_model();
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut events: HashMap<String, u32> = HashMap::new();
        let mut notes = Vec::new();
        let stream_of = |s: &Option<String>, ids: &mut HashMap<String, u32>| match s {
            None => Stream::Legacy,
            Some(s) => {
                let n = ids.len() as u32;
                Stream::Named(*ids.entry(s.clone()).or_insert(n))
            }
        };
        let mut work = Vec::new();
        for n in &self.timeline.notes {
            let stream = stream_of(&n.stream, &mut ids);
            let w = match &n.what {
                What::Kernel {
                    name,
                    grid,
                    modelled,
                    ..
                } => {
                    let blocks = u64::from(grid.0) * u64::from(grid.1) * u64::from(grid.2);
                    let (ns, wave) = match modelled {
                        Some((ns, _, wave)) => (*ns, *wave),
                        None => {
                            notes.push(format!(
                                "{name}: no estimate (its resources on {} are unknown); drawn \
                                 with the launch overhead only",
                                gpu.name
                            ));
                            (ptxsim::model::LAUNCH_NS, 0)
                        }
                    };
                    Work::Kernel {
                        stream,
                        ns,
                        blocks,
                        wave_blocks: wave,
                    }
                }
                What::Copy { dir, bytes, .. } => Work::Copy {
                    stream,
                    dir: *dir,
                    bytes: *bytes,
                    pinned: true,
                },
                What::Record(e) | What::Wait(e) => {
                    let k = events.len() as u32;
                    let event = *events.entry(e.clone()).or_insert(k);
                    if matches!(n.what, What::Record(_)) {
                        Work::Record { stream, event }
                    } else {
                        Work::Wait { stream, event }
                    }
                }
                What::Sync => Work::Sync {
                    stream: n.stream.as_ref().map(|_| stream),
                },
            };
            work.push(w);
        }
        let times = sched::schedule(&work, &gpu);
        let rows = self
            .timeline
            .notes
            .iter()
            .zip(&times)
            .map(|(n, t)| row_of(n, t.start_ns / 1e3, (t.end_ns - t.start_ns).max(0.0) / 1e3))
            .collect();
        TimelineView {
            modelled_on: Some(gpu.name.to_string()),
            device,
            recording: self.timeline.on,
            rows,
            notes,
        }
    }
}

/// What the estimate of a counted launch needs.
pub(super) struct TimelineModel {
    pub gpu: ptxsim::gpus::GpuModel,
    pub shape: Option<ptxsim::model::LaunchShape>,
    /// Blocks the model holds at once.
    pub wave: u64,
}

impl TimelineModel {
    /// (estimate ns, bound, blocks at once) from the launch's counters.
    pub(super) fn estimate(
        &self,
        counters: Option<&ptxsim::counters::Counters>,
    ) -> Option<(f64, String, u64)> {
        let (c, shape) = (counters?, self.shape.as_ref()?);
        let e = ptxsim::model::estimate(c, shape, &self.gpu);
        Some((e.ns, e.bound.as_str().to_string(), self.wave))
    }
}

fn describe(w: &What) -> String {
    match w {
        What::Kernel { name, .. } => name.clone(),
        What::Copy { array, .. } => array.clone(),
        What::Record(e) | What::Wait(e) => e.clone(),
        What::Sync => "sync".into(),
    }
}

fn row_of(n: &Note, start_us: f64, dur_us: f64) -> TimelineRow {
    let stream = stream_text(&n.stream);
    let (kind, name, lane, detail) = match &n.what {
        What::Kernel {
            name,
            grid,
            block,
            modelled,
        } => {
            let mut d = format!(
                "grid ({}, {}, {}), block ({}, {}, {})",
                grid.0, grid.1, grid.2, block.0, block.1, block.2
            );
            if let Some((_, bound, _)) = modelled {
                d.push_str(&format!(", bound by {bound}"));
            }
            ("kernel", name.clone(), lane_of_stream(&n.stream), d)
        }
        What::Copy { dir, array, bytes } => {
            let (verb, lane) = match dir {
                CopyDir::HostToDevice => ("upload", copy_lane(*dir).to_string()),
                CopyDir::DeviceToHost => ("download", copy_lane(*dir).to_string()),
                CopyDir::DeviceToDevice => ("device copy", lane_of_stream(&n.stream)),
            };
            let d = format!(
                "{verb}, {}",
                crate::display::values::human_bytes(*bytes as usize)
            );
            ("copy", array.clone(), lane, d)
        }
        What::Record(e) => (
            "event",
            e.clone(),
            lane_of_stream(&n.stream),
            "record".into(),
        ),
        What::Wait(e) => (
            "wait",
            e.clone(),
            lane_of_stream(&n.stream),
            format!("stream {stream} waits for event {e}"),
        ),
        What::Sync => {
            let what = match &n.stream {
                Some(s) => format!("stream {s}"),
                None => "the device".to_string(),
            };
            (
                "sync",
                what.clone(),
                "host".into(),
                format!("host waits for {what}"),
            )
        }
    };
    TimelineRow {
        kind,
        name,
        stream: if matches!(n.what, What::Sync) && n.stream.is_none() {
            "host".into()
        } else {
            stream
        },
        lane,
        start_us,
        dur_us,
        detail,
    }
}
