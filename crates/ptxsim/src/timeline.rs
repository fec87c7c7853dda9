//! A modelled timeline: when each piece of work a host issues to streams would run on a modelled
//! GPU. The caller gives the work in the order the host issued it (kernel launches with their
//! estimated durations from [`crate::model`], copies, event records and waits, host
//! synchronisations); [`schedule`] returns each one's issue, start and end time. It runs
//! nothing and knows nothing of kernels beyond their duration and size.
//!
//! # The model
//!
//! - **The host** issues the work one item after another. A launch costs the host
//!   [`crate::model::HOST_LAUNCH_NS`], an asynchronous copy [`HOST_COPY_NS`], an event record or
//!   wait [`HOST_EVENT_NS`]; a synchronisation blocks the host until the work it waits for is
//!   done. A copy from or to pageable host memory is synchronous as CUDA documents it (CUDA
//!   Runtime API, "API synchronization behavior"): host to device waits for the stream to be
//!   idle and returns when the data is staged, device to host returns when the copy is done.
//! - **Streams** run their work in issue order. The legacy default stream waits for all work
//!   issued before it on every stream, and work issued to other (blocking) streams after it
//!   waits for it. A wait on an event makes the stream wait for the work before the event's
//!   latest record; a wait on an event never recorded waits for nothing, as in CUDA.
//! - **Kernels share the SMs.** A kernel of `blocks` blocks, of which `wave_blocks` fit on the
//!   GPU at once, wants `min(1, blocks / wave_blocks)` of the GPU. Kernels get what they want in
//!   the order they started while there is room; a kernel that gets less runs proportionally
//!   slower (a fluid model of blocks of concurrent kernels sharing SMs: the tail of one kernel
//!   overlapping the head of the next is not modelled). A kernel that fills the GPU therefore
//!   runs alone, and small kernels on different streams run side by side in the time of one.
//! - **Copies** between host and device run on one copy engine per direction, one copy at a
//!   time each, at the host link's bandwidth: pinned memory at [`PINNED_EFFICIENCY`] of the
//!   PCIe link's rate, pageable at half that. Copies within the device run at the DRAM's
//!   sustained bandwidth ([`crate::model::copy_ns`]) beside the kernels.
//!
//! The host link of each GPU ([`host_link`]) is its PCIe generation and width from its
//! datasheet. The efficiency and the host costs are assumptions of the order NVIDIA's
//! `bandwidthTest` sample and driver notes show, not measurements of this repository.

use crate::gpus::GpuModel;
use crate::model::{copy_ns, HOST_LAUNCH_NS};

/// Host time of one asynchronous copy call (`cuMemcpyHtoDAsync` and its kin).
pub const HOST_COPY_NS: f64 = 2500.0;
/// Host time of one event record or stream wait.
pub const HOST_EVENT_NS: f64 = 500.0;
/// Sustained fraction of the PCIe link's rate that copies of pinned memory reach: an assumption
/// of the order the CUDA samples' `bandwidthTest` shows on PCIe systems, not a measurement of
/// this repository.
pub const PINNED_EFFICIENCY: f64 = 0.8;
/// Pageable copies reach about half of pinned ones (staged through a pinned buffer).
pub const PAGEABLE_SHARE: f64 = 0.5;
/// Fixed time of a host-device copy on its engine (DMA set-up and completion).
pub const COPY_LATENCY_NS: f64 = 2000.0;

/// A stream: the legacy default stream, or one numbered by the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    Legacy,
    Named(u32),
}

/// Which way a copy goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyDir {
    HostToDevice,
    DeviceToHost,
    DeviceToDevice,
}

/// One piece of work, in the order the host issued it.
#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    /// A kernel launch that takes `ns` alone on the GPU; `wave_blocks` of its `blocks` blocks
    /// fit on the GPU at once.
    Kernel {
        stream: Stream,
        ns: f64,
        blocks: u64,
        wave_blocks: u64,
    },
    Copy {
        stream: Stream,
        dir: CopyDir,
        bytes: u64,
        /// Pinned (page-locked) host memory; ignored for device-to-device copies.
        pinned: bool,
    },
    /// `cudaEventRecord(event, stream)`.
    Record { stream: Stream, event: u32 },
    /// `cudaStreamWaitEvent(stream, event)`.
    Wait { stream: Stream, event: u32 },
    /// The host waits for one stream, or (None) for the whole device.
    Sync { stream: Option<Stream> },
}

/// Where a piece of work ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// On the SMs or as a marker, in its stream.
    Stream(Stream),
    /// On a copy engine (for its stream).
    CopyEngine(CopyDir, Stream),
    /// The host, waiting.
    Host,
}

/// When one piece of work ran, ns from the first issue.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scheduled {
    pub issued_ns: f64,
    pub start_ns: f64,
    pub end_ns: f64,
    pub lane: Lane,
}

/// The host link of a GPU: PCIe generation and lanes, from the datasheets (PCIe 3 for Volta
/// and Turing, 4 for Ampere and Ada, 5 for Hopper and Blackwell; the RTX 4060 and 5060 use
/// eight lanes, the others sixteen).
pub fn host_link(g: &GpuModel) -> (u32, u32) {
    let gen = match g.sm {
        0..=79 => 3,
        80..=89 => 4,
        _ => 5,
    };
    let lanes = if g.name.contains("4060") || g.name.contains("5060") {
        8
    } else {
        16
    };
    (gen, lanes)
}

/// The PCIe link's rate in one direction, GB/s: 8, 16 and 32 GT/s per lane for PCIe 3, 4 and
/// 5, 128b/130b encoding (PCI Express Base Specifications 3.0-5.0).
pub fn link_gb_s(g: &GpuModel) -> f64 {
    let (gen, lanes) = host_link(g);
    let gt = 8.0 * f64::from(1u32 << (gen.saturating_sub(3).min(4)));
    gt * f64::from(lanes) * 128.0 / 130.0 / 8.0
}

/// How long a copy of `bytes` takes on its engine (or, within the device, on the DRAM).
pub fn copy_duration_ns(g: &GpuModel, dir: CopyDir, bytes: u64, pinned: bool) -> f64 {
    match dir {
        CopyDir::DeviceToDevice => copy_ns(bytes, g),
        _ => {
            let share = if pinned { 1.0 } else { PAGEABLE_SHARE };
            COPY_LATENCY_NS + bytes as f64 / (link_gb_s(g) * PINNED_EFFICIENCY * share)
        }
    }
}

/// What an item needs while it runs.
#[derive(Debug, Clone, Copy)]
enum Need {
    /// A share of the SMs and the work left at full share, ns.
    Sms { want: f64, left: f64 },
    /// A copy engine for a fixed time.
    Engine(usize, f64),
    /// Nothing but time (device-to-device copies).
    Time(f64),
    /// Nothing: an event record or wait, done once its dependencies are.
    Marker,
}

struct Item {
    deps: Vec<usize>,
    need: Need,
    lane: Lane,
    issued: f64,
    start: Option<f64>,
    end: Option<f64>,
    /// Current share of the SMs (kernels).
    share: f64,
}

/// A time difference below which two times are the same (ns).
const EPS: f64 = 1e-6;

/// When each of `work` runs on `g`, in the same order. Host synchronisations appear on the
/// host lane from the moment they were issued to the moment the host went on.
pub fn schedule(work: &[Work], g: &GpuModel) -> Vec<Scheduled> {
    let mut items: Vec<Item> = Vec::with_capacity(work.len());
    let mut out: Vec<Option<Scheduled>> = vec![None; work.len()];
    // Indices into `items` by stream: the latest issued; the latest legacy item; event records.
    let mut last_on: std::collections::HashMap<Stream, usize> = Default::default();
    let mut last_legacy: Option<usize> = None;
    let mut records: std::collections::HashMap<u32, usize> = Default::default();
    // `work` index of each item, and the host's waits: (work index, items it waits for).
    let mut of_item: Vec<usize> = Vec::new();
    let mut engines_free_at = [0.0f64; 2];
    let mut engine_busy = [false; 2];
    let mut t = 0.0f64;
    let mut host_at = 0.0f64;
    let mut next = 0usize;
    let mut blocked: Option<(usize, Vec<usize>, Option<f64>)> = None;
    loop {
        // 1. The host issues what it can at `t`.
        while blocked.is_none() && next < work.len() && host_at <= t + EPS {
            let w = &work[next];
            let issued = host_at.max(t);
            let mut push = |stream: Stream, need: Need, lane: Lane, items: &mut Vec<Item>| {
                let mut deps = Vec::new();
                if let Some(&p) = last_on.get(&stream) {
                    deps.push(p);
                }
                match stream {
                    Stream::Legacy => deps.extend(last_on.values().copied()),
                    Stream::Named(_) => deps.extend(last_legacy),
                }
                deps.sort_unstable();
                deps.dedup();
                let i = items.len();
                items.push(Item {
                    deps,
                    need,
                    lane,
                    issued,
                    start: None,
                    end: None,
                    share: 0.0,
                });
                last_on.insert(stream, i);
                if stream == Stream::Legacy {
                    last_legacy = Some(i);
                }
                i
            };
            match *w {
                Work::Kernel {
                    stream,
                    ns,
                    blocks,
                    wave_blocks,
                } => {
                    let want = if wave_blocks == 0 {
                        1.0
                    } else {
                        (blocks as f64 / wave_blocks as f64).clamp(1e-9, 1.0)
                    };
                    let need = Need::Sms {
                        want,
                        left: ns.max(0.0),
                    };
                    push(stream, need, Lane::Stream(stream), &mut items);
                    of_item.push(next);
                    host_at = issued + HOST_LAUNCH_NS;
                }
                Work::Copy {
                    stream,
                    dir,
                    bytes,
                    pinned,
                } => {
                    let ns = copy_duration_ns(g, dir, bytes, pinned);
                    let (need, lane) = match dir {
                        CopyDir::HostToDevice => {
                            (Need::Engine(0, ns), Lane::CopyEngine(dir, stream))
                        }
                        CopyDir::DeviceToHost => {
                            (Need::Engine(1, ns), Lane::CopyEngine(dir, stream))
                        }
                        CopyDir::DeviceToDevice => (Need::Time(ns), Lane::Stream(stream)),
                    };
                    let i = push(stream, need, lane, &mut items);
                    of_item.push(next);
                    host_at = issued + HOST_COPY_NS;
                    if !pinned && dir != CopyDir::DeviceToDevice {
                        // Synchronous: the host waits for this copy (to device: for the stream
                        // before it and the staging, modelled as the whole copy).
                        blocked = Some((usize::MAX, vec![i], None));
                    }
                }
                Work::Record { stream, event } => {
                    let i = push(stream, Need::Marker, Lane::Stream(stream), &mut items);
                    of_item.push(next);
                    records.insert(event, i);
                    host_at = issued + HOST_EVENT_NS;
                }
                Work::Wait { stream, event } => {
                    let i = push(stream, Need::Marker, Lane::Stream(stream), &mut items);
                    if let Some(&r) = records.get(&event) {
                        items[i].deps.push(r);
                    }
                    of_item.push(next);
                    host_at = issued + HOST_EVENT_NS;
                }
                Work::Sync { stream } => {
                    let waits: Vec<usize> = match stream {
                        None => (0..items.len()).collect(),
                        Some(s) => last_on.get(&s).copied().into_iter().collect(),
                    };
                    blocked = Some((next, waits, Some(issued)));
                }
            }
            next += 1;
        }
        // 2. Start what is ready, until nothing more starts at `t`.
        loop {
            let mut changed = false;
            for i in 0..items.len() {
                if items[i].start.is_some() || items[i].issued > t + EPS {
                    continue;
                }
                let ready = items[i]
                    .deps
                    .iter()
                    .all(|&d| items[d].end.is_some_and(|e| e <= t + EPS));
                if !ready {
                    continue;
                }
                match items[i].need {
                    Need::Marker => {
                        items[i].start = Some(t);
                        items[i].end = Some(t);
                        changed = true;
                    }
                    Need::Time(ns) => {
                        items[i].start = Some(t);
                        items[i].end = Some(t + ns);
                        changed = true;
                    }
                    Need::Engine(e, ns) => {
                        if !engine_busy[e] {
                            engine_busy[e] = true;
                            engines_free_at[e] = t + ns;
                            items[i].start = Some(t);
                            items[i].end = Some(t + ns);
                            changed = true;
                        }
                    }
                    Need::Sms { .. } => {
                        let used: f64 = items
                            .iter()
                            .filter(|k| k.start.is_some() && k.end.is_none())
                            .map(|k| k.share)
                            .sum();
                        if used < 1.0 - 1e-9 {
                            items[i].start = Some(t);
                            changed = true;
                            share_sms(&mut items);
                        }
                    }
                }
            }
            // Zero-length kernels end where they start.
            for it in items.iter_mut() {
                if let (Some(s), None, Need::Sms { left, .. }) = (it.start, it.end, it.need) {
                    if left <= EPS {
                        it.end = Some(s);
                        it.share = 0.0;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
            share_sms(&mut items);
        }
        // 3. The host goes on when what it waits for is done.
        if let Some((wi, waits, since)) = &blocked {
            let done_at = waits
                .iter()
                .map(|&d| items[d].end)
                .try_fold(0.0f64, |m, e| e.map(|e| m.max(e)));
            if let Some(done) = done_at {
                if done <= t + EPS {
                    if let Some(since) = since {
                        out[*wi] = Some(Scheduled {
                            issued_ns: *since,
                            start_ns: *since,
                            end_ns: t.max(*since),
                            lane: Lane::Host,
                        });
                    }
                    host_at = host_at.max(t);
                    blocked = None;
                    continue;
                }
            }
        }
        // 4. The next moment something happens.
        let mut next_t = f64::INFINITY;
        if blocked.is_none() && next < work.len() {
            next_t = next_t.min(host_at.max(t));
        }
        for it in &items {
            match (it.start, it.end, it.need) {
                (Some(_), None, Need::Sms { left, .. }) if it.share > 0.0 => {
                    let rate = it.share / want_of(it);
                    next_t = next_t.min(t + left / rate);
                }
                (Some(_), Some(e), _) if e > t + EPS => next_t = next_t.min(e),
                (None, _, _) if it.issued > t + EPS => next_t = next_t.min(it.issued),
                _ => {}
            }
        }
        if !next_t.is_finite() {
            break;
        }
        let dt = (next_t - t).max(0.0);
        for it in items.iter_mut() {
            if let (Some(_), None, Need::Sms { want, left }) = (it.start, it.end, it.need) {
                let rate = if want > 0.0 { it.share / want } else { 1.0 };
                let left = (left - dt * rate).max(0.0);
                it.need = Need::Sms { want, left };
                if left <= EPS * 10.0 {
                    it.end = Some(next_t);
                    it.share = 0.0;
                }
            }
        }
        t = next_t;
        for (e, busy) in engine_busy.iter_mut().enumerate() {
            if *busy && engines_free_at[e] <= t + EPS {
                *busy = false;
            }
        }
        share_sms(&mut items);
    }
    for (i, it) in items.iter().enumerate() {
        let start = it.start.unwrap_or(it.issued);
        out[of_item[i]] = Some(Scheduled {
            issued_ns: it.issued,
            start_ns: start,
            end_ns: it.end.unwrap_or(start),
            lane: it.lane,
        });
    }
    out.into_iter()
        .map(|s| {
            s.unwrap_or(Scheduled {
                issued_ns: 0.0,
                start_ns: 0.0,
                end_ns: 0.0,
                lane: Lane::Host,
            })
        })
        .collect()
}

fn want_of(it: &Item) -> f64 {
    match it.need {
        Need::Sms { want, .. } if want > 0.0 => want,
        _ => 1.0,
    }
}

/// Gives the running kernels their shares of the SMs, first started first.
fn share_sms(items: &mut [Item]) {
    let mut running: Vec<usize> = (0..items.len())
        .filter(|&i| {
            matches!(items[i].need, Need::Sms { .. })
                && items[i].start.is_some()
                && items[i].end.is_none()
        })
        .collect();
    running.sort_by(|&a, &b| {
        items[a]
            .start
            .unwrap_or(0.0)
            .total_cmp(&items[b].start.unwrap_or(0.0))
            .then(a.cmp(&b))
    });
    let mut room = 1.0f64;
    for i in running {
        let s = want_of(&items[i]).min(room).max(0.0);
        items[i].share = s;
        room -= s;
    }
}

#[cfg(test)]
mod tests;
