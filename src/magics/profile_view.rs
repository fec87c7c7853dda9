//! The display of `%profile`: sections named and ordered like Nsight Compute's (launch,
//! occupancy, memory, compute), the likely limiter in one line, the five hottest CUDA source
//! lines, with `--lines` the cell's source annotated per load/store line, and an
//! `application/json` entry whose metric keys are Nsight Compute's own names.
//!
//! Presentation only: the counts are `ptxsim::counters`', the run `DeviceState::profile`'s.

use crate::display::table::{escape_html, Table};
use crate::gpu::{ProfileLine, ProfileOutcome};
use protocol::output::MimeBundle;
use ptxsim::counters::InstCounts;
use serde_json::{json, Map, Value};

/// Lines of the hottest-lines table.
const HOT_LINES: usize = 5;

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn dim(d: (u32, u32, u32)) -> String {
    format!("({}, {}, {})", d.0, d.1, d.2)
}

fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn bytes(n: u64) -> String {
    match n {
        n if n >= 10 << 20 => format!("{:.1} MiB", n as f64 / 1048576.0),
        n if n >= 10 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

/// Sectors a request needs at best for the bytes it moved, against those it touched: 1.0 is
/// coalesced, 8.0 moves 8x the bytes needed.
fn traffic_factor(sectors: u64, requested_bytes: u64) -> f64 {
    let ideal = requested_bytes.div_ceil(32);
    ratio(sectors, ideal.max(1))
}

/// The likely limiter, in plain words, from the counters and the occupancy.
pub fn limiter(p: &ProfileOutcome) -> String {
    let t = &p.counters.total;
    let mut found: Vec<(f64, String)> = Vec::new();
    let memory_requests = t.global_ld_requests + t.global_st_requests;
    let heavy = |requests: u64| requests * 20 >= memory_requests.max(1);
    for (what, req, sectors, moved) in [
        (
            "global loads",
            t.global_ld_requests,
            t.global_ld_sectors,
            t.global_ld_bytes,
        ),
        (
            "global stores",
            t.global_st_requests,
            t.global_st_sectors,
            t.global_st_bytes,
        ),
    ] {
        let f = traffic_factor(sectors, moved);
        if req > 0 && heavy(req) && f >= 1.5 {
            found.push((
                f,
                format!(
                    "{what} touch {:.1} sectors per request: {f:.1}x the traffic a coalesced \
                     access would need (neighbouring threads should read neighbouring \
                     addresses)",
                    ratio(sectors, req)
                ),
            ));
        }
    }
    for (what, req, wf) in [
        ("shared loads", t.shared_ld_requests, t.shared_ld_wavefronts),
        (
            "shared stores",
            t.shared_st_requests,
            t.shared_st_wavefronts,
        ),
    ] {
        let f = ratio(wf, req);
        if req > 0 && f >= 1.5 {
            found.push((
                f,
                format!(
                    "{what} need {f:.1} wavefronts per request: {f:.0}-way bank conflicts \
                     (pad a tile's rows by one word, e.g. [32][33])"
                ),
            ));
        }
    }
    let atom_req = t.global_atom_requests + t.shared_atom_requests;
    let serial = t.global_atom_serialized + t.shared_atom_serialized;
    let f = ratio(serial, atom_req);
    if atom_req > 0 && f >= 2.0 {
        found.push((
            f,
            format!(
                "atomics: {f:.1} lanes of each request update the same address, one after \
                 another (privatise per block in shared memory, then combine)"
            ),
        ));
    }
    let active = t.active_threads_per_inst();
    if t.inst_executed > 0 && active < 24.0 {
        found.push((
            32.0 / active.max(1.0),
            format!(
                "warps run with {active:.1} of 32 threads active on average: divergent \
                 branches or partly filled warps"
            ),
        ));
    }
    if let Some(o) = &p.occupancy {
        if o.fraction > 0.0 && o.fraction < 0.5 {
            found.push((
                0.5 / o.fraction,
                format!(
                    "theoretical occupancy is {:.0}%, limited by {} per SM",
                    o.percent(),
                    o.limiter
                ),
            ));
        }
    }
    if let Some(a) = p.achieved_occupancy {
        if a > 0.0 && a < 0.25 {
            // Ranked below every access-pattern finding: a small demo grid is the usual case,
            // and its lesson is the pattern.
            found.push((
                1.5,
                format!(
                    "the grid fills {} of the GPU's warp slots: {} block{} for {} SMs",
                    pct(a),
                    p.counters.blocks,
                    if p.counters.blocks == 1 { "" } else { "s" },
                    p.gpu.sms
                ),
            ));
        }
    }
    found.sort_by(|a, b| b.0.total_cmp(&a.0));
    match found.into_iter().next() {
        Some((_, why)) => why,
        None => "no obvious limiter: global accesses are coalesced, shared memory is free of \
                 bank conflicts and warps run full"
            .to_string(),
    }
}

/// The metrics under Nsight Compute's names (ptxsim's counters, the resources and occupancy
/// on the modelled GPU, and on a GPU its measured time).
pub fn metrics(p: &ProfileOutcome) -> Map<String, Value> {
    let mut m = Map::new();
    for (k, v) in p.counters.ncu_metrics() {
        m.insert(k.to_string(), json!(v));
    }
    let b = p.block;
    m.insert("launch__block_size".into(), json!(b.0 * b.1 * b.2));
    m.insert(
        "launch__shared_mem_per_block_dynamic".into(),
        json!(p.dynamic_shared_bytes),
    );
    if let Ok(r) = &p.resources {
        m.insert("launch__registers_per_thread".into(), json!(r.registers));
        m.insert(
            "launch__shared_mem_per_block_static".into(),
            json!(r.static_shared_bytes),
        );
    }
    if let Some(o) = &p.occupancy {
        let lim = |n: u32| if n == u32::MAX { json!(null) } else { json!(n) };
        m.insert("launch__occupancy_limit_blocks".into(), lim(o.limit_blocks));
        m.insert(
            "launch__occupancy_limit_registers".into(),
            lim(o.limit_registers),
        );
        m.insert(
            "launch__occupancy_limit_shared_mem".into(),
            lim(o.limit_shared),
        );
        m.insert("launch__occupancy_limit_warps".into(), lim(o.limit_warps));
        m.insert(
            "sm__maximum_warps_per_active_cycle_pct".into(),
            json!(o.percent()),
        );
    }
    if let Some(a) = p.achieved_occupancy {
        m.insert(
            "sm__warps_active.avg.pct_of_peak_sustained_active".into(),
            json!(a * 100.0),
        );
    }
    // Measured on a GPU; else the model's estimate (the JSON says which: "estimated").
    match (p.gpu_ms, &p.estimate) {
        (Some(ms), _) => {
            m.insert("gpu__time_duration.sum".into(), json!(ms * 1e6));
        }
        (None, Some(e)) => {
            m.insert("gpu__time_duration.sum".into(), json!(e.ns));
        }
        _ => {}
    }
    m
}

/// A metric value for the ncu table: integers with thousands separators, others with four
/// significant digits.
fn value_text(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        let s = count(v.abs() as u64);
        if v < 0.0 {
            format!("-{s}")
        } else {
            s
        }
    } else if v != 0.0 && (v.abs() >= 1e6 || v.abs() < 1e-3) {
        format!("{v:.3e}")
    } else {
        let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
        format!("{v:.digits$}")
    }
}

/// ncu's value over ptxsim's: "1.000"; "=" when both are 0, "-" when only ptxsim's is.
fn ratio_text(ours: f64, theirs: f64) -> String {
    if ours == 0.0 {
        if theirs == 0.0 {
            "=".into()
        } else {
            "-".into()
        }
    } else {
        format!("{:.3}", theirs / ours)
    }
}

/// `--ncu`: metric | ptxsim | ncu | ncu / ptxsim for every metric both have, and a caption.
pub fn ncu_table(p: &ProfileOutcome) -> Option<(Table, String)> {
    let Some(Ok(n)) = &p.ncu else { return None };
    let ours = metrics(p);
    let mut t = Table::new(&["metric", "ptxsim", "ncu", "ncu / ptxsim"]).caption(format!(
        "Nsight Compute beside ptxsim: {} ({:.1} s)",
        n.kernel_name, n.wall_s
    ));
    let mut shown = 0;
    for (k, v) in &ours {
        let (Some(o), Some(h)) = (v.as_f64(), n.metrics.get(k)) else {
            continue;
        };
        t.row(vec![
            k.clone(),
            value_text(o),
            value_text(*h),
            ratio_text(o, *h),
        ]);
        shown += 1;
    }
    let mut note = format!(
        "ncu measured {shown} of ptxsim's {} metrics on the GPU (the launch replayed on copies \
         in a GPU worker under {})",
        ours.len(),
        n.program.display()
    );
    if !n.unknown.is_empty() {
        note.push_str(&format!("; no ncu value for {}", n.unknown.join(", ")));
    }
    Some((t, note))
}

/// The `application/json` entry of the display.
pub fn json_entry(p: &ProfileOutcome) -> Value {
    let mut j = json_entry_ptxsim(p);
    if let (Some(r), Some(obj)) = (&p.ncu, j.as_object_mut()) {
        match r {
            Ok(n) => {
                obj.insert(
                    "ncu".into(),
                    Value::Object(
                        n.metrics
                            .iter()
                            .map(|(k, v)| (k.clone(), json!(v)))
                            .collect(),
                    ),
                );
                obj.insert("ncu_kernel".into(), json!(n.kernel_name));
                obj.insert("ncu_unknown".into(), json!(n.unknown));
            }
            Err(f) => {
                obj.insert("ncu".into(), Value::Null);
                obj.insert(
                    "ncu_error".into(),
                    json!({"kind": f.kind(), "message": f.message()}),
                );
            }
        }
    }
    j
}

fn json_entry_ptxsim(p: &ProfileOutcome) -> Value {
    json!({
        "kernel": p.kernel,
        "backend": p.backend,
        "gpu": p.gpu.name,
        "arch": p.gpu.arch(),
        // Counts are ptxsim's (exact for the PTX); nothing of them was read from hardware, and
        // the time is the model's unless a GPU measured it.
        "estimated": true,
        "time_measured": p.gpu_ms.is_some(),
        "estimate": p.estimate.as_ref().map(|e| json!({
            "ns": e.ns,
            "bound": e.bound.as_str(),
            "breakdown": e.breakdown(),
            "terms_ns": e.terms.iter().map(|(b, ns)| (b.short().to_string(), json!(ns))).collect::<Map<String, Value>>(),
            "dram_gb_s": e.dram_gb_s,
        })),
        "l2_exact": p.counters.l2_exact,
        // Present only when some blocks were counted and scaled to the grid.
        "sampled": p.counters.sampled.filter(|s| s.scaled).map(|s| json!({"blocks": s.blocks, "of": s.of})),
        "limiter": limiter(p),
        "metrics": metrics(p),
        "lines": p.lines.iter().filter(|l| l.cell_line.is_some()).map(|l| json!({
            "cell_line": l.cell_line,
            "source": l.text,
            "inst_executed": l.counts.counts.inst_executed,
            "global_ld_requests": l.counts.counts.global_ld_requests,
            "global_ld_sectors": l.counts.counts.global_ld_sectors,
            "global_st_requests": l.counts.counts.global_st_requests,
            "global_st_sectors": l.counts.counts.global_st_sectors,
            "shared_requests": l.counts.counts.shared_ld_requests + l.counts.counts.shared_st_requests,
            "shared_wavefronts": l.counts.counts.shared_ld_wavefronts + l.counts.counts.shared_st_wavefronts,
        })).collect::<Vec<_>>(),
    })
}

fn section(title: &str) -> Table {
    Table::new(&["", ""]).caption(title)
}

/// A fraction as a percentage, with more digits when it is small.
fn pct(f: f64) -> String {
    let p = f * 100.0;
    if p >= 10.0 {
        format!("{p:.0}%")
    } else if p >= 1.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.2}%")
    }
}

fn row(t: &mut Table, k: &str, v: String) {
    t.row(vec![k.to_string(), v]);
}

fn per_request(sectors: u64, requests: u64) -> String {
    if requests == 0 {
        "-".into()
    } else {
        format!("{:.2}", ratio(sectors, requests))
    }
}

/// What a profile counted, when it was not simply every block: "3,168 of 65,536 blocks
/// (4.8%), scaled to the grid", or that every block was counted because the blocks differed.
pub fn sampled_text(c: &ptxsim::counters::Counters) -> Option<String> {
    let s = c.sampled?;
    if !s.scaled {
        return s.grew.then(|| {
            "every block: a sample's blocks differed (data-dependent work), so all were counted"
                .to_string()
        });
    }
    let share = 100.0 * s.blocks as f64 / s.of.max(1) as f64;
    let grew = if s.grew {
        "; the sample grew until its blocks agreed"
    } else {
        ""
    };
    Some(format!(
        "{} of {} blocks ({share:.1}%), scaled to the grid{grew} (--full counts all)",
        count(s.blocks),
        count(s.of)
    ))
}

/// The sections, in Nsight Compute's order.
fn sections(p: &ProfileOutcome) -> Vec<Table> {
    let c = &p.counters;
    let t = &c.total;
    let mut launch = section("Launch statistics");
    row(&mut launch, "grid", dim(p.grid));
    row(&mut launch, "block", dim(p.block));
    row(&mut launch, "threads", count(c.threads));
    if let Some(what) = sampled_text(c) {
        row(&mut launch, "counted", what);
    }
    match &p.resources {
        Ok(r) => {
            let from = match &r.cubin {
                Some((arch, _, _)) => format!(" ({arch} CUBIN)"),
                None => " (driver)".into(),
            };
            row(
                &mut launch,
                "registers per thread",
                format!("{}{from}", r.registers),
            );
            row(
                &mut launch,
                "static shared memory",
                bytes(u64::from(r.static_shared_bytes)),
            );
            row(
                &mut launch,
                "local memory per thread",
                bytes(u64::from(r.local_bytes)),
            );
        }
        Err(why) => row(&mut launch, "resources", why.clone()),
    }
    row(
        &mut launch,
        "dynamic shared memory",
        bytes(u64::from(p.dynamic_shared_bytes)),
    );
    let mut occ = section(&format!("Occupancy on {} ({})", p.gpu.name, p.gpu.arch()));
    match &p.occupancy {
        Some(o) => {
            row(
                &mut occ,
                "theoretical occupancy",
                format!(
                    "{:.0}% ({} of {} warps, {} blocks/SM)",
                    o.percent(),
                    o.active_warps_per_sm,
                    o.max_warps_per_sm,
                    o.active_blocks_per_sm
                ),
            );
            row(&mut occ, "limited by", o.limiter.to_string());
        }
        None => row(&mut occ, "theoretical occupancy", "unknown".into()),
    }
    if let Some(a) = p.achieved_occupancy {
        row(
            &mut occ,
            "achieved occupancy (model)",
            format!("{} (full waves of resident blocks)", pct(a)),
        );
    }
    let mut mem = section("Memory workload");
    row(
        &mut mem,
        "global load requests",
        count(t.global_ld_requests),
    );
    row(
        &mut mem,
        "global load sectors / request",
        per_request(t.global_ld_sectors, t.global_ld_requests),
    );
    row(
        &mut mem,
        "global store requests",
        count(t.global_st_requests),
    );
    row(
        &mut mem,
        "global store sectors / request",
        per_request(t.global_st_sectors, t.global_st_requests),
    );
    row(
        &mut mem,
        "L2 hit rate (model)",
        if c.l2_sectors == 0 {
            "-".into()
        } else if c.l2_exact {
            format!("{:.1}%", 100.0 * ratio(c.l2_hit_sectors, c.l2_sectors))
        } else {
            "not modelled (too many accesses)".into()
        },
    );
    row(
        &mut mem,
        "DRAM read / write",
        format!(
            "{} / {}",
            bytes(c.dram_read_bytes),
            bytes(c.dram_write_bytes)
        ),
    );
    row(
        &mut mem,
        "shared load requests / wavefronts",
        format!(
            "{} / {}",
            count(t.shared_ld_requests),
            count(t.shared_ld_wavefronts)
        ),
    );
    row(
        &mut mem,
        "shared store requests / wavefronts",
        format!(
            "{} / {}",
            count(t.shared_st_requests),
            count(t.shared_st_wavefronts)
        ),
    );
    row(
        &mut mem,
        "shared bank conflicts (ld, st)",
        format!(
            "{}, {}",
            count(t.shared_ld_bank_conflicts()),
            count(t.shared_st_bank_conflicts())
        ),
    );
    let atoms = t.global_atom_requests + t.shared_atom_requests;
    if atoms > 0 {
        row(
            &mut mem,
            "atomic requests (global, shared)",
            format!(
                "{}, {}",
                count(t.global_atom_requests),
                count(t.shared_atom_requests)
            ),
        );
        row(
            &mut mem,
            "same-address lanes / atomic request",
            format!(
                "{:.2}",
                ratio(t.global_atom_serialized + t.shared_atom_serialized, atoms)
            ),
        );
    }
    let mut comp = section("Compute workload (PTX instructions)");
    row(
        &mut comp,
        "warp instructions issued",
        count(t.inst_executed),
    );
    row(
        &mut comp,
        "active threads / warp instruction",
        format!("{:.1}", t.active_threads_per_inst()),
    );
    row(&mut comp, "divergent branches", count(t.branch_divergent));
    row(&mut comp, "barriers", count(t.barriers));
    let m = &c.mix;
    let kinds = [
        ("fp32", m.fp32),
        ("fp64", m.fp64),
        ("fp16", m.fp16),
        ("integer", m.integer),
        ("conversion", m.conversion),
        ("special function", m.sfu),
        ("load/store", m.load_store),
        ("shared", m.shared),
        ("atomic", m.atomic),
        ("branch", m.branch),
        ("barrier", m.barrier),
        ("warp", m.warp),
        ("tensor", m.tensor),
        ("other", m.other),
    ];
    let mix: Vec<String> = kinds
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| format!("{k} {:.0}%", 100.0 * ratio(*n, t.inst_executed)))
        .collect();
    row(&mut comp, "mix", mix.join(", "));
    let mut time = section("Time");
    if let Some(e) = &p.estimate {
        row(
            &mut time,
            &format!("estimated on {}", p.gpu.name),
            format!(
                "{}, {:.0} GB/s ({:.0}% of peak); bound by {}",
                micros(e.ns),
                e.dram_gb_s,
                e.dram_pct_of_peak,
                e.bound.as_str()
            ),
        );
        row(&mut time, "estimate breakdown", e.breakdown());
    }
    row(
        &mut time,
        "simulator (ptxsim, counted)",
        format!("{:.1} ms (the simulator's time, not a GPU's)", p.sim_ms),
    );
    if let Some(ms) = p.gpu_ms {
        row(
            &mut time,
            "GPU (CUDA events)",
            format!("{:.3} ms ({})", ms, p.backend),
        );
    }
    vec![launch, occ, mem, comp, time]
}

/// Nanoseconds as "12.3 µs" or "1.23 ms".
pub fn micros(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.1} µs", ns / 1e3)
    }
}

fn line_label(l: &ProfileLine) -> String {
    match l.cell_line {
        Some(n) => format!("cell line {n}"),
        None => "-".into(),
    }
}

/// The hottest source lines by warp instructions issued.
fn hot_lines(p: &ProfileOutcome) -> Table {
    let mut lines: Vec<&ProfileLine> = p.lines.iter().collect();
    lines.sort_by(|a, b| {
        b.counts
            .counts
            .inst_executed
            .cmp(&a.counts.counts.inst_executed)
    });
    let mut t = Table::new(&[
        "line",
        "source",
        "warp inst",
        "share",
        "ld sect/req",
        "st sect/req",
        "shared wf/req",
    ])
    .right(&[2, 3, 4, 5, 6])
    .caption(format!("hottest {HOT_LINES} source lines"));
    for l in lines.into_iter().take(HOT_LINES) {
        let c = &l.counts.counts;
        t.row(vec![
            line_label(l),
            l.text.clone(),
            count(c.inst_executed),
            format!(
                "{:.0}%",
                100.0 * ratio(c.inst_executed, p.counters.total.inst_executed)
            ),
            per_request(c.global_ld_sectors, c.global_ld_requests),
            per_request(c.global_st_sectors, c.global_st_requests),
            per_request(
                c.shared_ld_wavefronts + c.shared_st_wavefronts,
                c.shared_ld_requests + c.shared_st_requests,
            ),
        ]);
    }
    t
}

/// How one line's memory accesses compare with the ideal (1.0 = coalesced / conflict-free),
/// and its annotation.
fn annotation(c: &InstCounts) -> Option<(f64, String)> {
    let mut parts = Vec::new();
    let mut worst: f64 = 0.0;
    if c.global_ld_requests > 0 {
        worst = worst.max(traffic_factor(c.global_ld_sectors, c.global_ld_bytes));
        parts.push(format!(
            "ld {:.1} sect/req",
            ratio(c.global_ld_sectors, c.global_ld_requests)
        ));
    }
    if c.global_st_requests > 0 {
        worst = worst.max(traffic_factor(c.global_st_sectors, c.global_st_bytes));
        parts.push(format!(
            "st {:.1} sect/req",
            ratio(c.global_st_sectors, c.global_st_requests)
        ));
    }
    let sreq = c.shared_ld_requests + c.shared_st_requests;
    if sreq > 0 {
        let wf = c.shared_ld_wavefronts + c.shared_st_wavefronts;
        worst = worst.max(ratio(wf, sreq));
        parts.push(format!("shared {:.1} wf/req", ratio(wf, sreq)));
    }
    (!parts.is_empty()).then(|| (worst, parts.join(", ")))
}

/// `--lines`: every line of the cell, its memory lines annotated (text and colour-coded HTML:
/// green ideal, amber up to 4x, red beyond).
fn annotated_source(p: &ProfileOutcome) -> (String, String) {
    let mut text = String::from(
        "source, annotated (sectors per request, wavefronts per request; ideal: coalesced / 1)\n",
    );
    let mut html = String::from(
        "<table style=\"font-family:monospace\"><caption style=\"text-align:left\">source, \
         annotated: sectors per global request, wavefronts per shared request (green: ideal, \
         amber: up to 4x, red: more)</caption><tbody>",
    );
    for (i, src) in p.source.lines().enumerate() {
        let n = i as u32 + 1;
        let counts = p
            .lines
            .iter()
            .filter(|l| l.cell_line.is_some() && l.source_line == Some(n))
            .map(|l| &l.counts.counts)
            .next();
        let note = counts.and_then(annotation);
        let cell_line = p.first_line + i;
        text.push_str(&format!("{cell_line:>4}  {src}"));
        let (colour, note_html) = match &note {
            Some((f, s)) => {
                text.push_str(&format!("    // {s}"));
                let colour = if *f <= 1.25 {
                    "#d4f7d4"
                } else if *f <= 4.0 {
                    "#fde9b5"
                } else {
                    "#f9c6c6"
                };
                (colour, escape_html(s))
            }
            None => ("transparent", String::new()),
        };
        text.push('\n');
        html.push_str(&format!(
            "<tr style=\"background:{colour}\"><td style=\"text-align:right\">{cell_line}</td>\
             <td style=\"white-space:pre;text-align:left\">{}</td><td style=\"text-align:left\">{note_html}</td></tr>",
            escape_html(src)
        ));
    }
    html.push_str("</tbody></table>");
    (text, html)
}

/// The whole display.
pub fn bundle(p: &ProfileOutcome, with_lines: bool) -> MimeBundle {
    let title = format!(
        "%profile {} on {}: counts from ptxsim (exact for the PTX), L2 and occupancy modelled \
         on {}",
        p.kernel, p.backend, p.gpu.name
    );
    let limiter = limiter(p);
    let mut text = format!("{title}\n\n");
    let mut html = format!("<div><b>{}</b>", escape_html(&title));
    for t in sections(p) {
        text.push_str(&t.text());
        text.push('\n');
        html.push_str(&t.html());
    }
    if let Some((t, note)) = ncu_table(p) {
        text.push_str(&t.text());
        text.push_str(&format!("{note}\n\n"));
        html.push_str(&t.html());
        html.push_str(&format!("<p>{}</p>", escape_html(&note)));
    }
    text.push_str(&format!("limiter: {limiter}\n\n"));
    html.push_str(&format!("<p><b>limiter:</b> {}</p>", escape_html(&limiter)));
    let hot = hot_lines(p);
    text.push_str(&hot.text());
    html.push_str(&hot.html());
    if with_lines {
        let (t, h) = annotated_source(p);
        text.push('\n');
        text.push_str(&t);
        html.push_str(&h);
    }
    html.push_str("</div>");
    let mut b = MimeBundle::new();
    b.insert("text/plain".into(), text.into());
    b.insert("text/html".into(), html.into());
    b.insert("application/json".into(), json_entry(p));
    b
}
