//! The time model against published GPU measurements (`benches/published/`): every point of
//! `points.csv` re-estimated as a user would estimate it, with the kernels of `kernels.cu` in a
//! `%%cuda` cell and the arrays and launch of `launches.csv` (`%profile --gpu MODEL LAUNCH`, at
//! the published size: the profile counts a sample of the blocks), then compared with the
//! published time.
//!
//! It prints one row per point, the median error of each half of the set (`fit`: the points
//! the model's constants may be chosen on; `holdout`: never looked at for that) and per bound
//! term, and the orderings of `orderings.csv`; and fails when the median error of either half
//! exceeds [`MEDIAN_GOAL`], a point is off by more than [`WORST_GOAL`]x either way, or an
//! ordering the measurements show is lost (the faster kernel not estimated at least
//! [`ORDER_MARGIN`] faster), except the misses listed in [`KNOWN_OFF`] and [`KNOWN_LOST`]
//! with their reasons (issue 53's goal is none).

use super::test_session::Session;
use serde_json::Value;
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

/// The largest median relative error allowed on each half of the set.
const MEDIAN_GOAL: f64 = 0.20;
/// The largest ratio between estimate and measurement, either way.
const WORST_GOAL: f64 = 2.0;
/// A measured ordering is kept when the slower kernel's estimate exceeds the faster's by this
/// factor (less is a tie).
const ORDER_MARGIN: f64 = 1.03;

/// Points the model still misses by more than [`WORST_GOAL`], and why. The test fails if one
/// of them comes within the goal (the list must then lose it), so it holds only what is true.
const KNOWN_OFF: &[(&str, &str)] = &[(
    "yencal-h100-transpose-naive",
    "stores of 4 bytes to 32 different rows per warp: the L2's cost of partial-sector writes \
     is not modelled (estimated 0.28x)",
)];

/// Measured orderings the model still loses (faster id, slower id, why); as [`KNOWN_OFF`],
/// the test fails when one of them is kept.
const KNOWN_LOST: &[(&str, &str, &str)] = &[
    (
        "yencal-h100-transpose-tiled_bankconf",
        "yencal-h100-transpose-naive",
        "the naive transpose's partial-sector stores (KNOWN_OFF)",
    ),
    (
        "yencal-h100-transpose-coarsen2",
        "yencal-h100-transpose-tiled_padded",
        "a tie: the padded tile's one element per thread waits more per block than modelled",
    ),
    (
        "skeptic-3090-reduce-k6_warp_unroll",
        "skeptic-3090-reduce-k5_first_add",
        "a tie: both DRAM-bound in the model; the barriers k6 saves cost more than modelled",
    ),
];

fn published(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("benches/published")
        .join(file)
}

/// The rows of a CSV file with a header, fields split at commas outside double quotes (`""`
/// inside quotes is a quote), as maps from column name to value.
pub(crate) fn read_csv(path: &std::path::Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let mut records: Vec<Vec<String>> = Vec::new();
    let (mut field, mut record, mut quoted) = (String::new(), Vec::new(), false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => record.push(std::mem::take(&mut field)),
            '\n' if !quoted => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            '\r' if !quoted => {}
            c => field.push(c),
        }
    }
    if !field.is_empty() || !record.is_empty() {
        record.push(field);
        records.push(record);
    }
    let mut it = records
        .into_iter()
        .filter(|r| r.iter().any(|f| !f.is_empty()));
    let header = it.next().unwrap_or_default();
    it.map(|r| header.iter().cloned().zip(r).collect())
        .collect()
}

/// One point re-estimated.
struct Row {
    id: String,
    gpu: String,
    split: String,
    measured_us: f64,
    estimated_us: f64,
    bound: String,
    sampled: String,
}

impl Row {
    /// Estimate over measurement.
    fn ratio(&self) -> f64 {
        self.estimated_us / self.measured_us
    }
    /// |estimate - measurement| / measurement.
    fn error(&self) -> f64 {
        (self.ratio() - 1.0).abs()
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Runs one point in a fresh session: the cell, the set-up lines, `%profile --gpu`.
fn estimate(
    source: &str,
    gpu: &str,
    setup: &str,
    launch: &str,
    warm: bool,
) -> Result<(f64, String, String), String> {
    let mut s = Session::new();
    s.cell("%%cuda", source)
        .map_err(|e| format!("kernels.cu: {e}"))?;
    s.take();
    for line in setup.split(" ; ").map(str::trim).filter(|l| !l.is_empty()) {
        s.run(line).map_err(|e| format!("{line}: {e}"))?;
        s.take();
    }
    let warm = if warm { "--warm " } else { "" };
    let line = format!("%profile --gpu {gpu} {warm}{launch}");
    s.run(&line).map_err(|e| format!("{line}: {e}"))?;
    let d = s.display();
    let j: Value = d
        .get("application/json")
        .cloned()
        .ok_or_else(|| format!("{line}: no application/json"))?;
    let e = &j["estimate"];
    let ns = e["ns"]
        .as_f64()
        .ok_or_else(|| format!("{line}: no estimate: {j}"))?;
    let bound = e["bound"].as_str().unwrap_or("?").to_string();
    let sampled = match &j["sampled"] {
        Value::Object(o) => format!(
            "{}/{}",
            o.get("blocks").and_then(Value::as_u64).unwrap_or(0),
            o.get("of").and_then(Value::as_u64).unwrap_or(0)
        ),
        _ => "all".into(),
    };
    Ok((ns / 1e3, bound, sampled))
}

fn say(text: &str) {
    // Past libtest's capture: the table shows in every log, passed or failed.
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

#[test]
fn published_measurements_are_re_estimated_within_the_goals() {
    if !crate::compile::tests::nvrtc_available() {
        return;
    }
    let source = std::fs::read_to_string(published("kernels.cu")).expect("kernels.cu");
    let points = read_csv(&published("points.csv"));
    let launches = read_csv(&published("launches.csv"));
    let by_id: HashMap<&str, &HashMap<String, String>> =
        launches.iter().map(|l| (l["id"].as_str(), l)).collect();
    // NBCUDA_PUBLISHED_ONLY=TEXT re-estimates only the points whose id contains TEXT and
    // asserts nothing (for whoever works on the model).
    let only = std::env::var("NBCUDA_PUBLISHED_ONLY").ok();
    let points: Vec<_> = points
        .into_iter()
        .filter(|p| only.as_ref().is_none_or(|o| p["id"].contains(o.as_str())))
        .collect();
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    let started = std::time::Instant::now();
    for p in &points {
        let id = &p["id"];
        let Some(l) = by_id.get(id.as_str()) else {
            failures.push(format!("{id}: no row in launches.csv"));
            continue;
        };
        let measured_us: f64 = p["time_us"].parse().unwrap_or(f64::NAN);
        // Every source times repeated launches except S4, which scrubs the L2 before each.
        let warm = p["source"] != "S4";
        let t0 = std::time::Instant::now();
        let r = estimate(&source, &l["gpu"], &l["setup"], &l["launch"], warm);
        say(&format!("  {id}: {:.1} s\n", t0.elapsed().as_secs_f64()));
        match r {
            Ok((estimated_us, bound, sampled)) => rows.push(Row {
                id: id.clone(),
                gpu: l["gpu"].clone(),
                split: p["split"].clone(),
                measured_us,
                estimated_us,
                bound,
                sampled,
            }),
            Err(e) => failures.push(format!("{id}: {e}")),
        }
    }
    let mut out = format!(
        "\npublished points re-estimated ({} of {}, {:.0} s)\n{:<44} {:>9} {:>5} {:>11} {:>11} {:>6}  {:<22} {}\n",
        rows.len(),
        points.len(),
        started.elapsed().as_secs_f64(),
        "id",
        "gpu",
        "split",
        "measured us",
        "estimate us",
        "ratio",
        "bound",
        "counted"
    );
    for r in &rows {
        out.push_str(&format!(
            "{:<44} {:>9} {:>5} {:>11.1} {:>11.1} {:>6.2}  {:<22} {}\n",
            r.id,
            r.gpu,
            &r.split[..r.split.len().min(5)],
            r.measured_us,
            r.estimated_us,
            r.ratio(),
            r.bound,
            r.sampled
        ));
    }
    for split in ["fit", "holdout"] {
        let errs: Vec<f64> = rows
            .iter()
            .filter(|r| r.split == split)
            .map(Row::error)
            .collect();
        let m = median(errs.clone());
        out.push_str(&format!(
            "{split}: {} points, median error {:.1}%\n",
            errs.len(),
            100.0 * m
        ));
        if m > MEDIAN_GOAL {
            failures.push(format!(
                "{split}: median error {:.1}% exceeds {:.0}%",
                100.0 * m,
                100.0 * MEDIAN_GOAL
            ));
        }
    }
    let mut bounds: Vec<&str> = rows.iter().map(|r| r.bound.as_str()).collect();
    bounds.sort_unstable();
    bounds.dedup();
    for b in bounds {
        let errs: Vec<f64> = rows
            .iter()
            .filter(|r| r.bound == b)
            .map(Row::error)
            .collect();
        out.push_str(&format!(
            "bound by {b}: {} points, median error {:.1}%\n",
            errs.len(),
            100.0 * median(errs)
        ));
    }
    for r in &rows {
        let ratio = r.ratio();
        let off = !(1.0 / WORST_GOAL..=WORST_GOAL).contains(&ratio);
        let known = KNOWN_OFF.iter().find(|(id, _)| *id == r.id);
        match (off, known) {
            (true, None) => failures.push(format!(
                "{} on {}: estimated {:.1} us, measured {:.1} us ({ratio:.2}x)",
                r.id, r.gpu, r.estimated_us, r.measured_us
            )),
            (true, Some((_, why))) => {
                out.push_str(&format!("known miss: {} ({ratio:.2}x): {why}\n", r.id))
            }
            (false, Some(_)) => failures.push(format!(
                "{} is now within {WORST_GOAL}x ({ratio:.2}x): take it off KNOWN_OFF",
                r.id
            )),
            (false, None) => {}
        }
    }
    let est: HashMap<&str, f64> = rows
        .iter()
        .map(|r| (r.id.as_str(), r.estimated_us))
        .collect();
    let orderings = read_csv(&published("orderings.csv"));
    let mut kept = 0;
    for o in &orderings {
        let (f, s) = (o["faster_id"].as_str(), o["slower_id"].as_str());
        let (Some(&ef), Some(&es)) = (est.get(f), est.get(s)) else {
            continue;
        };
        let known = KNOWN_LOST.iter().find(|(a, b, _)| *a == f && *b == s);
        match (es > ORDER_MARGIN * ef, known) {
            (true, None) => kept += 1,
            (true, Some(_)) => failures.push(format!(
                "ordering {f} < {s} is now kept: take it off KNOWN_LOST"
            )),
            (false, Some((_, _, why))) => out.push_str(&format!(
                "known lost ordering: {f} measured {}x faster than {s}, estimated {:.2}x: {why}\n",
                o["ratio_slower_over_faster"],
                es / ef
            )),
            (false, None) => failures.push(format!(
                "ordering lost: {f} measured {}x faster than {s}, estimated {:.2}x",
                o["ratio_slower_over_faster"],
                es / ef
            )),
        }
    }
    out.push_str(&format!("orderings kept: {kept} of {}\n", orderings.len()));
    say(&out);
    if only.is_some() {
        return;
    }
    assert!(
        failures.is_empty(),
        "{} problem(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
