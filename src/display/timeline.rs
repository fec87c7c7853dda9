//! `%timeline`'s displays of a [`TimelineView`]: a chart (one lane per stream, one per copy
//! engine, one for the host's waits; kernels named; a time axis), a table, and Chrome's
//! trace-event JSON (`traceEvents` of complete events with `ts` and `dur` in microseconds, the
//! stream in `args`), which Perfetto and chrome://tracing open.
//!
//! It only draws and formats; the rows come from `gpu::DeviceState::timeline_view`.

use super::fmt_sig;
use super::image::{finish, Rendered, INK, LABEL_SIZE, WHITE};
use super::table::Table;
use super::text::{draw_text, ellipsize, line_height, text_width};
use crate::gpu::{TimelineRow, TimelineView};
use image::{Rgba, RgbaImage};
use serde_json::{json, Value};

/// The lanes of `v` in display order: the default stream, named streams as they first appear,
/// the copy engines, the host.
pub fn lanes(v: &TimelineView) -> Vec<String> {
    let rank = |l: &str| match l {
        "default stream" => 0,
        l if l.starts_with("stream ") => 1,
        "copy engine H→D" => 2,
        "copy engine D→H" => 3,
        _ => 4,
    };
    let mut out: Vec<String> = Vec::new();
    for r in &v.rows {
        if !out.contains(&r.lane) {
            out.push(r.lane.clone());
        }
    }
    // Stable: streams keep their first-use order.
    out.sort_by_key(|l| rank(l));
    out
}

/// The first start and the last end, µs (0, 0 when empty).
pub fn span_us(v: &TimelineView) -> (f64, f64) {
    let start = v
        .rows
        .iter()
        .map(|r| r.start_us)
        .fold(f64::INFINITY, f64::min);
    let end = v
        .rows
        .iter()
        .map(|r| r.start_us + r.dur_us)
        .fold(f64::NEG_INFINITY, f64::max);
    if start.is_finite() && end.is_finite() {
        (start, end)
    } else {
        (0.0, 0.0)
    }
}

/// "modelled on H200 (ptxsim)" or "measured on NVIDIA H100 … with CUDA events".
pub fn source_text(v: &TimelineView) -> String {
    match &v.modelled_on {
        Some(g) => format!("modelled on {g} (ptxsim)"),
        None => format!("measured on {} with CUDA events", v.device),
    }
}

/// A time in µs with its unit: `850 ns`, `12.5 µs`, `3.20 ms`.
pub fn us_text(us: f64) -> String {
    if us.abs() < 1.0 {
        format!("{} ns", fmt_sig(us * 1e3, 3))
    } else if us.abs() < 1000.0 {
        format!("{} µs", fmt_sig(us, 3))
    } else {
        format!("{} ms", fmt_sig(us / 1e3, 3))
    }
}

/// Chrome's trace-event JSON of `v`.
pub fn trace_json(v: &TimelineView) -> Value {
    let lanes = lanes(v);
    let tid = |lane: &str| lanes.iter().position(|l| l == lane).unwrap_or(0) as u64 + 1;
    let mut events = vec![json!({
        "name": "process_name", "ph": "M", "pid": 1, "tid": 0,
        "args": {"name": format!("nbcuda: {}", source_text(v))}
    })];
    for (i, l) in lanes.iter().enumerate() {
        events.push(json!({
            "name": "thread_name", "ph": "M", "pid": 1, "tid": i as u64 + 1,
            "args": {"name": l}
        }));
        events.push(json!({
            "name": "thread_sort_index", "ph": "M", "pid": 1, "tid": i as u64 + 1,
            "args": {"sort_index": i}
        }));
    }
    for r in &v.rows {
        let args = json!({"stream": r.stream, "detail": r.detail});
        if r.dur_us > 0.0 {
            events.push(json!({
                "name": r.name, "cat": r.kind, "ph": "X", "ts": r.start_us, "dur": r.dur_us,
                "pid": 1, "tid": tid(&r.lane), "args": args
            }));
        } else {
            events.push(json!({
                "name": r.name, "cat": r.kind, "ph": "i", "s": "t", "ts": r.start_us,
                "pid": 1, "tid": tid(&r.lane), "args": args
            }));
        }
    }
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "source": source_text(v),
            "device": v.device,
            "modelled_on": v.modelled_on,
        }
    })
}

/// The table: one row per piece of work, in issue order.
pub fn table(v: &TimelineView) -> Table {
    let (t0, t1) = span_us(v);
    let mut t = Table::new(&["", "kind", "name", "stream", "start", "duration", "detail"])
        .caption(format!(
            "timeline, {}: {} entries over {}",
            source_text(v),
            v.rows.len(),
            us_text(t1 - t0)
        ))
        .right(&[0, 4, 5]);
    for (i, r) in v.rows.iter().enumerate() {
        t.row(vec![
            (i + 1).to_string(),
            r.kind.to_string(),
            r.name.clone(),
            r.stream.clone(),
            us_text(r.start_us - t0),
            us_text(r.dur_us),
            r.detail.clone(),
        ]);
    }
    t
}

const KERNEL_COLORS: [[u8; 3]; 6] = [
    [31, 119, 180],
    [148, 103, 189],
    [23, 190, 207],
    [140, 86, 75],
    [188, 189, 34],
    [227, 119, 194],
];
const UPLOAD_COLOR: [u8; 3] = [44, 160, 44];
const DOWNLOAD_COLOR: [u8; 3] = [255, 127, 14];
const SYNC_COLOR: [u8; 3] = [190, 190, 190];
const MARK_COLOR: [u8; 3] = [214, 39, 40];

fn color_of(r: &TimelineRow, kernels: &mut Vec<String>) -> [u8; 3] {
    match r.kind {
        "kernel" => {
            let i = kernels
                .iter()
                .position(|k| k == &r.name)
                .unwrap_or_else(|| {
                    kernels.push(r.name.clone());
                    kernels.len() - 1
                });
            KERNEL_COLORS[i % KERNEL_COLORS.len()]
        }
        "copy" if r.detail.starts_with("upload") => UPLOAD_COLOR,
        "copy" => DOWNLOAD_COLOR,
        "sync" => SYNC_COLOR,
        _ => MARK_COLOR,
    }
}

/// A tick step of 1, 2 or 5 × 10^k giving about `n` ticks over `range`.
fn tick_step(range: f64, n: f64) -> f64 {
    let raw = (range / n).max(1e-9);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p)
}

/// Most rows drawn (a longer recording is drawn up to here and says so).
pub const MAX_DRAWN: usize = 5000;

/// The chart.
pub fn chart(v: &TimelineView) -> Result<Rendered, String> {
    if v.rows.is_empty() {
        return Err("nothing recorded".into());
    }
    const PAD: u32 = 10;
    const ROW: u32 = 30;
    const PLOT_W: u32 = 760;
    const AXIS_H: u32 = 30;
    let lanes = lanes(v);
    let label_w = lanes
        .iter()
        .map(|l| text_width(l, LABEL_SIZE))
        .max()
        .unwrap_or(0);
    let (t0, t1) = span_us(v);
    let range = (t1 - t0).max(1e-3);
    let x0 = PAD + label_w + 10;
    let width = x0 + PLOT_W + PAD;
    let height = PAD + ROW * lanes.len() as u32 + AXIS_H + PAD;
    let mut img = RgbaImage::from_pixel(width, height, WHITE);
    let lh = line_height(LABEL_SIZE);
    let px = |us: f64| x0 as f64 + (us - t0) / range * PLOT_W as f64;
    let fill = |img: &mut RgbaImage, xa: u32, xb: u32, ya: u32, yb: u32, c: [u8; 3]| {
        for y in ya..yb.min(img.height()) {
            for x in xa..xb.min(img.width()) {
                img.put_pixel(x, y, Rgba([c[0], c[1], c[2], 255]));
            }
        }
    };
    for (i, l) in lanes.iter().enumerate() {
        let y = PAD + ROW * i as u32;
        if i % 2 == 1 {
            fill(&mut img, x0, x0 + PLOT_W, y, y + ROW, [246, 246, 246]);
        }
        let ty = (y + (ROW - lh) / 2) as i32;
        draw_text(
            &mut img,
            (x0 - 10 - text_width(l, LABEL_SIZE)) as i32,
            ty,
            LABEL_SIZE,
            INK,
            l,
        );
    }
    let mut kernels = Vec::new();
    for r in v.rows.iter().take(MAX_DRAWN) {
        let Some(lane) = lanes.iter().position(|l| l == &r.lane) else {
            continue;
        };
        let y = PAD + ROW * lane as u32;
        let c = color_of(r, &mut kernels);
        let xa = px(r.start_us).floor().max(x0 as f64) as u32;
        let xb = px(r.start_us + r.dur_us).ceil() as u32;
        if r.dur_us <= 0.0 || r.kind == "event" || r.kind == "wait" {
            fill(&mut img, xa, xa + 2, y + 3, y + ROW - 3, c);
            continue;
        }
        let xb = xb.max(xa + 1);
        // A pixel of white between boxes that touch (back-to-back copies on one engine).
        let xb_drawn = if xb - xa > 3 { xb - 1 } else { xb };
        fill(&mut img, xa, xb_drawn, y + 5, y + ROW - 5, c);
        let room = xb - xa;
        if room > 24 {
            let name = if r.kind == "sync" {
                format!("waits for {}", r.name)
            } else {
                r.name.clone()
            };
            let label = ellipsize(&name, LABEL_SIZE, room - 6);
            let ink = if r.kind == "sync" {
                INK
            } else {
                [255, 255, 255]
            };
            draw_text(
                &mut img,
                (xa + 3) as i32,
                (y + (ROW - lh) / 2) as i32,
                LABEL_SIZE,
                ink,
                &label,
            );
        }
    }
    // The time axis.
    let axis_y = PAD + ROW * lanes.len() as u32 + 2;
    fill(&mut img, x0, x0 + PLOT_W, axis_y, axis_y + 1, INK);
    let step = tick_step(range, 6.0);
    let mut t = 0.0;
    while t <= range + 1e-9 {
        let x = px(t0 + t).round() as u32;
        fill(
            &mut img,
            x.min(width - 1),
            (x + 1).min(width),
            axis_y,
            axis_y + 5,
            INK,
        );
        let label = if t == 0.0 {
            "0".to_string()
        } else {
            us_text(t)
        };
        let w = text_width(&label, LABEL_SIZE);
        let lx = (x as i32 - w as i32 / 2).clamp(0, (width - w) as i32);
        draw_text(&mut img, lx, (axis_y + 7) as i32, LABEL_SIZE, INK, &label);
        t += step;
    }
    let drawn = if v.rows.len() > MAX_DRAWN {
        format!(" (the first {MAX_DRAWN} drawn)")
    } else {
        String::new()
    };
    let summary = format!(
        "timeline, {}: {} entries over {}{drawn}",
        source_text(v),
        v.rows.len(),
        us_text(range)
    );
    finish(
        img,
        Some(format!("timeline, {}", source_text(v))),
        summary,
        true,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: &'static str, name: &str, lane: &str, start: f64, dur: f64) -> TimelineRow {
        TimelineRow {
            kind,
            name: name.into(),
            stream: lane.trim_start_matches("stream ").into(),
            lane: lane.into(),
            start_us: start,
            dur_us: dur,
            detail: if kind == "copy" {
                "upload, 4 MB".into()
            } else {
                String::new()
            },
        }
    }

    fn view() -> TimelineView {
        TimelineView {
            modelled_on: Some("H200".into()),
            device: "ptxsim".into(),
            recording: true,
            rows: vec![
                row("copy", "a", "copy engine H→D", 0.0, 80.0),
                row("kernel", "busy", "stream s1", 80.0, 40.0),
                row("kernel", "busy", "stream s0", 2.5, 40.0),
                row("event", "e", "stream s0", 42.5, 0.0),
                row("sync", "the device", "host", 5.0, 115.0),
            ],
            notes: vec![],
        }
    }

    #[test]
    fn lanes_come_streams_first_then_engines_then_the_host() {
        assert_eq!(
            lanes(&view()),
            ["stream s1", "stream s0", "copy engine H→D", "host"]
        );
        assert_eq!(span_us(&view()), (0.0, 120.0));
    }

    #[test]
    fn trace_json_has_complete_events_in_microseconds() {
        let j = trace_json(&view());
        let ev = j["traceEvents"].as_array().expect("traceEvents");
        let busy: Vec<&Value> = ev.iter().filter(|e| e["name"] == "busy").collect();
        assert_eq!(busy.len(), 2);
        assert_eq!(busy[0]["ph"], "X");
        assert_eq!(busy[0]["ts"], 80.0);
        assert_eq!(busy[0]["dur"], 40.0);
        assert_eq!(busy[0]["args"]["stream"], "s1");
        let mark = ev.iter().find(|e| e["name"] == "e").expect("event");
        assert_eq!(mark["ph"], "i");
        // Every lane is named once.
        let names = ev.iter().filter(|e| e["name"] == "thread_name").count();
        assert_eq!(names, 4);
    }

    #[test]
    fn the_chart_draws_each_lane_and_the_table_lists_each_entry() {
        let r = chart(&view()).expect("chart");
        assert!(r.summary.contains("modelled on H200"), "{}", r.summary);
        assert!(r.summary.contains("5 entries over 120 µs"), "{}", r.summary);
        // The upload's green box spans the first two thirds of the plot on the engine lane.
        let img = image::load_from_memory(&r.png).expect("png").to_rgb8();
        let green = img.pixels().filter(|p| p.0 == UPLOAD_COLOR).count();
        assert!(green > 1000, "{green} green pixels");
        let t = table(&view()).text();
        assert!(t.contains("busy") && t.contains("the device"), "{t}");
        assert!(chart(&TimelineView {
            rows: vec![],
            ..view()
        })
        .is_err());
        assert_eq!(us_text(0.5), "500 ns");
        assert_eq!(us_text(12.5), "12.5 µs");
        assert_eq!(us_text(3200.0), "3.2 ms");
    }
}
