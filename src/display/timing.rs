//! Timing results for `%time` and `%timings`: statistics of the measured runs, throughput (GB/s,
//! GFLOP/s, % of the device's peak bandwidth), and their tables (text/plain + text/html) and bar
//! chart.
//!
//! Pure formatting of numbers the caller measured; it never launches or times anything itself.

use super::fmt_sig;
use super::image::Rendered;
use super::plot::{bar_chart, Bar};
use crate::display::table::Table;
use protocol::output::MimeBundle;

/// Statistics of one `%time`'s runs, in milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct TimingStats {
    pub runs: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for a single run.
    pub stdev: f64,
}

impl TimingStats {
    /// `None` when there are no samples or one is not a finite, non-negative time.
    pub fn from_samples(samples_ms: &[f64]) -> Option<TimingStats> {
        if samples_ms.is_empty() || samples_ms.iter().any(|s| !s.is_finite() || *s < 0.0) {
            return None;
        }
        let mut v = samples_ms.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        let mean = v.iter().sum::<f64>() / n as f64;
        let stdev = if n > 1 {
            (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Some(TimingStats {
            runs: n,
            median,
            min: v[0],
            max: v[n - 1],
            mean,
            stdev,
        })
    }
}

/// One `%time` result, kept for `%timings`.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// The launch as the user wrote it, e.g. `add[auto](x, y, out, n)`.
    pub label: String,
    pub stats: TimingStats,
    pub warmup: usize,
    /// Bytes moved per run: from `--bytes`, or estimated.
    pub bytes: Option<f64>,
    /// True when `bytes` is the sum of the array arguments' sizes rather than `--bytes`.
    pub bytes_estimated: bool,
    /// Floating-point operations per run (`--flops`).
    pub flops: Option<f64>,
    /// The device's peak memory bandwidth, when known.
    pub peak_gbs: Option<f64>,
    /// `"cuda"` or `"ptxsim"`.
    pub backend: String,
    /// The device's name, for captions.
    pub device: String,
    /// Wall time of the CPU simulator rather than GPU time.
    pub simulated: bool,
    /// On ptxsim: the most worker threads a timed run used (`NBCUDA_PTXSIM_WORKERS` caps them).
    pub sim_workers: Option<usize>,
    /// On ptxsim: the launch's estimated time on a modelled GPU (`ptxsim::model`).
    pub estimate: Option<TimeEstimate>,
}

/// A modelled GPU's estimated time for one launch (`%time` on ptxsim).
#[derive(Debug, Clone, PartialEq)]
pub struct TimeEstimate {
    /// The modelled GPU, e.g. `"H200"`.
    pub gpu: String,
    pub ms: f64,
    /// The modelled GPU's peak DRAM bandwidth, GB/s.
    pub peak_gbs: f64,
    /// What bounds the estimate, and each resource's share ("DRAM 91%, issue 12%").
    pub bound: String,
    pub breakdown: String,
    /// What the counts behind it covered, when not simply every block ("3,168 of 65,536
    /// blocks (4.8%), scaled to the grid").
    pub counted: Option<String>,
}

impl Timing {
    /// The time `%timings` compares: the estimate on ptxsim, the measured median on a GPU.
    pub fn compare_ms(&self) -> f64 {
        match (&self.estimate, self.simulated) {
            (Some(e), true) => e.ms,
            _ => self.stats.median,
        }
    }

    /// What `compare_ms` is: "est. H200" or "measured".
    pub fn compare_kind(&self) -> String {
        match (&self.estimate, self.simulated) {
            (Some(e), true) => format!("est. {}", e.gpu),
            (None, true) => "simulator wall time".into(),
            _ => "measured".into(),
        }
    }

    /// The `application/json` of `%time`: the GPU time under Nsight Compute's name, in ns,
    /// and whether it is estimated.
    pub fn json(&self) -> serde_json::Value {
        let estimated = self.simulated && self.estimate.is_some();
        serde_json::json!({
            "launch": self.label,
            "backend": self.backend,
            "estimated": estimated,
            "gpu": self.estimate.as_ref().map(|e| e.gpu.clone()),
            "simulator_median_ms": if self.simulated { Some(self.stats.median) } else { None },
            "simulator_workers": self.sim_workers,
            "metrics": {"gpu__time_duration.sum": if self.simulated && !estimated {
                serde_json::Value::Null
            } else {
                serde_json::json!(self.compare_ms() * 1e6)
            }},
        })
    }

    /// Effective bandwidth: bytes / median time.
    pub fn gbs(&self) -> Option<f64> {
        let b = self.bytes?;
        (self.stats.median > 0.0).then(|| b / (self.stats.median * 1e6))
    }

    pub fn gflops(&self) -> Option<f64> {
        let f = self.flops?;
        (self.stats.median > 0.0).then(|| f / (self.stats.median * 1e6))
    }

    /// Effective bandwidth as a percentage of the peak (never for simulated times).
    pub fn pct_peak(&self) -> Option<f64> {
        if self.simulated {
            return None;
        }
        let peak = self.peak_gbs.filter(|p| *p > 0.0)?;
        Some(self.gbs()? / peak * 100.0)
    }

    fn gbs_text(&self) -> String {
        match self.gbs() {
            Some(g) if self.bytes_estimated => format!("{} est.", fmt_sig(g, 4)),
            Some(g) => fmt_sig(g, 4),
            None => "-".into(),
        }
    }
}

/// A duration given in milliseconds, in a readable unit: `850 ns`, `12.3 µs`, `4.56 ms`, `2.1 s`.
pub fn fmt_ms(ms: f64) -> String {
    if !ms.is_finite() {
        return fmt_sig(ms, 3);
    }
    let a = ms.abs();
    if a == 0.0 {
        "0 ms".into()
    } else if a < 1e-3 {
        format!("{} ns", fmt_sig(ms * 1e6, 3))
    } else if a < 1.0 {
        format!("{} µs", fmt_sig(ms * 1e3, 3))
    } else if a < 1000.0 {
        format!("{} ms", fmt_sig(ms, 3))
    } else {
        format!("{} s", fmt_sig(ms / 1e3, 3))
    }
}

fn bytes_text(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{} {}", fmt_sig(v, 3), UNITS[u])
}

/// The table of one `%time`.
pub fn timing_table(t: &Timing) -> Table {
    let s = &t.stats;
    // The device name often names the backend already ("ptxsim (simulated sm_80)").
    let mut caption = if t.device.contains(t.backend.as_str()) {
        format!("%time {} on {}", t.label, t.device)
    } else {
        format!("%time {} on {} ({})", t.label, t.device, t.backend)
    };
    if t.simulated {
        caption.push_str(": simulated, wall time of the CPU simulator");
        if let Some(w) = t.sim_workers {
            let s = if w == 1 { "" } else { "s" };
            caption.push_str(&format!(" on {w} worker thread{s}"));
        }
        caption.push_str(", not GPU time");
    }
    if let (true, Some(e)) = (t.simulated, &t.estimate) {
        return estimate_first(t, e);
    }
    let mut tb = Table::new(&["", ""]).caption(caption);
    tb.headers.clear();
    let warm = if t.warmup > 0 {
        format!(" (after {} warm-up)", t.warmup)
    } else {
        String::new()
    };
    tb.row(vec!["runs".into(), format!("{}{warm}", s.runs)]);
    tb.row(vec!["median".into(), fmt_ms(s.median)]);
    tb.row(vec!["min".into(), fmt_ms(s.min)]);
    tb.row(vec!["max".into(), fmt_ms(s.max)]);
    tb.row(vec!["stdev".into(), fmt_ms(s.stdev)]);
    if let (Some(g), Some(b)) = (t.gbs(), t.bytes) {
        let how = if t.bytes_estimated {
            "est.: the array arguments' sizes"
        } else {
            "--bytes"
        };
        tb.row(vec![
            "bandwidth".into(),
            format!("{} GB/s ({} per run, {how})", fmt_sig(g, 4), bytes_text(b)),
        ]);
    }
    if let Some(f) = t.gflops() {
        tb.row(vec!["compute".into(), format!("{} GFLOP/s", fmt_sig(f, 4))]);
    }
    if let (Some(p), Some(peak)) = (t.pct_peak(), t.peak_gbs) {
        tb.row(vec![
            "of peak bandwidth".into(),
            format!("{} % of {} GB/s", fmt_sig(p, 3), fmt_sig(peak, 4)),
        ]);
    }
    if let Some(e) = &t.estimate {
        let mut v = fmt_ms(e.ms);
        if let Some(b) = t.bytes {
            let gbs = b / (e.ms * 1e6);
            v.push_str(&format!(
                ", {} GB/s ({}% of peak)",
                fmt_sig(gbs, 4),
                fmt_sig(100.0 * gbs / e.peak_gbs.max(1.0), 3)
            ));
        }
        v.push_str(&format!("; bound by {} ({})", e.bound, e.breakdown));
        tb.row(vec![format!("estimated on {}", e.gpu), v]);
    }
    tb
}

/// `%time` on ptxsim: the estimate on the modelled GPU first (time, bandwidth and share of the
/// peak, the bound and its breakdown), the simulator's own wall time in one row at the end.
fn estimate_first(t: &Timing, e: &TimeEstimate) -> Table {
    let caption = format!(
        "%time {}: estimated on {} from ptxsim's counts (ptxsim::model)",
        t.label, e.gpu
    );
    let mut tb = Table::new(&["", ""]).caption(caption);
    tb.headers.clear();
    tb.row(vec![format!("estimated on {}", e.gpu), fmt_ms(e.ms)]);
    if let Some(b) = t.bytes {
        let gbs = b / (e.ms * 1e6);
        let how = if t.bytes_estimated {
            "the array arguments' sizes"
        } else {
            "--bytes"
        };
        tb.row(vec![
            "bandwidth".into(),
            format!(
                "{} GB/s, {} % of the {} GB/s peak ({} per run, {how})",
                fmt_sig(gbs, 4),
                fmt_sig(100.0 * gbs / e.peak_gbs.max(1.0), 3),
                fmt_sig(e.peak_gbs, 4),
                bytes_text(b)
            ),
        ]);
    }
    if let Some(f) = t.flops {
        tb.row(vec![
            "compute".into(),
            format!("{} GFLOP/s", fmt_sig(f / (e.ms * 1e6), 4)),
        ]);
    }
    tb.row(vec![
        "bound by".into(),
        format!("{} ({})", e.bound, e.breakdown),
    ]);
    if let Some(c) = &e.counted {
        tb.row(vec!["counted".into(), c.clone()]);
    }
    let s = &t.stats;
    let workers = match t.sim_workers {
        Some(w) => format!(" on {w} worker thread{}", if w == 1 { "" } else { "s" }),
        None => String::new(),
    };
    let warm = if t.warmup > 0 {
        format!(" after {} warm-up", t.warmup)
    } else {
        String::new()
    };
    tb.row(vec![
        "simulator".into(),
        format!(
            "simulated, wall time of the CPU simulator{workers}, not GPU time: median {} \
             (min {}, max {}; {} runs{warm})",
            fmt_ms(s.median),
            fmt_ms(s.min),
            fmt_ms(s.max),
            s.runs
        ),
    ]);
    tb
}

/// Every timing side by side, with speed-ups (median time) against the first.
pub fn timings_table(ts: &[Timing]) -> Table {
    let mut tb = Table::new(&[
        "#", "launch", "backend", "runs", "median", "min", "max", "stdev", "GB/s", "GFLOP/s",
        "GPU time", "speed-up",
    ])
    .right(&[0, 3, 4, 5, 6, 7, 8, 9, 10, 11])
    .caption(
        "every %time so far; GPU time: estimated on the modelled GPU on ptxsim, measured on a \
         GPU; speed-up = GPU time of #1 / GPU time",
    );
    let base = ts.first().map(|t| t.compare_ms());
    for (i, t) in ts.iter().enumerate() {
        let s = &t.stats;
        let ms = t.compare_ms();
        let speedup = match base {
            Some(b) if ms > 0.0 => format!("{}×", fmt_sig_fixed(b / ms)),
            _ => "-".into(),
        };
        tb.row(vec![
            (i + 1).to_string(),
            t.label.clone(),
            if t.simulated {
                format!("{} (simulated)", t.backend)
            } else {
                t.backend.clone()
            },
            s.runs.to_string(),
            fmt_ms(s.median),
            fmt_ms(s.min),
            fmt_ms(s.max),
            fmt_ms(s.stdev),
            t.gbs_text(),
            t.gflops().map_or("-".into(), |f| fmt_sig(f, 4)),
            format!("{} ({})", fmt_ms(ms), t.compare_kind()),
            speedup,
        ]);
    }
    tb
}

/// `1.00`, `12.5`, `0.250`: three significant digits, trailing zeros kept for alignment.
fn fmt_sig_fixed(v: f64) -> String {
    if !v.is_finite() || v <= 0.0 {
        return fmt_sig(v, 3);
    }
    let digits = v.log10().floor() as i32;
    let decimals = (2 - digits).clamp(0, 6) as usize;
    format!("{v:.decimals$}")
}

/// A bar per timing: the time it compares (estimated on ptxsim, measured on a GPU), labelled
/// with the speed-up against the first.
pub fn timings_chart(ts: &[Timing]) -> Result<Rendered, String> {
    let base = ts.first().map(|t| t.compare_ms()).unwrap_or(0.0);
    let bars: Vec<Bar> = ts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let ms = t.compare_ms();
            Bar {
                label: format!("#{} {}", i + 1, t.label),
                value: ms,
                note: if ms > 0.0 && base > 0.0 {
                    format!("{} ({}×)", fmt_ms(ms), fmt_sig_fixed(base / ms))
                } else {
                    fmt_ms(ms)
                },
            }
        })
        .collect();
    let what = match ts.first() {
        Some(t) if t.simulated && t.estimate.is_some() => {
            format!(
                "estimated time per launch on {}",
                t.compare_kind().trim_start_matches("est. ")
            )
        }
        Some(t) if t.simulated => "simulator wall time per launch".to_string(),
        _ => "median time per launch".to_string(),
    };
    let summary = format!("bar chart of the {what} of {} timings", ts.len());
    bar_chart(&bars, &format!("{what} (shorter is faster)"), summary)
}

/// The MIME bundle of a table (text/plain + text/html).
pub fn table_bundle(t: &Table) -> MimeBundle {
    t.bundle()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(label: &str, samples: &[f64], bytes: Option<f64>, est: bool) -> Timing {
        Timing {
            label: label.into(),
            stats: TimingStats::from_samples(samples).expect("stats"),
            warmup: 1,
            bytes,
            bytes_estimated: est,
            flops: Some(2e9),
            peak_gbs: Some(1000.0),
            backend: "cuda".into(),
            device: "Test GPU".into(),
            simulated: false,
            sim_workers: None,
            estimate: None,
        }
    }

    /// A small deterministic generator for sample times.
    fn samples(n: usize, seed: u64) -> Vec<f64> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                0.5 + (x % 10_000) as f64 / 1000.0
            })
            .collect()
    }

    #[test]
    fn stats_of_random_samples_match_a_direct_computation() {
        for (n, seed) in [(1, 1), (2, 2), (7, 3), (10, 4), (101, 5)] {
            let v = samples(n, seed);
            let s = TimingStats::from_samples(&v).expect("stats");
            assert_eq!(s.runs, n);
            assert!(s.min <= s.median && s.median <= s.max, "{s:?}");
            let below = v.iter().filter(|&&x| x < s.median).count();
            let above = v.iter().filter(|&&x| x > s.median).count();
            assert!(
                below <= n / 2 && above <= n / 2,
                "median splits the samples: {s:?}"
            );
            assert_eq!(s.min, v.iter().copied().fold(f64::INFINITY, f64::min));
            assert_eq!(s.max, v.iter().copied().fold(f64::NEG_INFINITY, f64::max));
            let mean = v.iter().sum::<f64>() / n as f64;
            assert!((s.mean - mean).abs() < 1e-12);
            if n > 1 {
                let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n as f64 - 1.0);
                assert!((s.stdev - var.sqrt()).abs() < 1e-9);
            } else {
                assert_eq!(s.stdev, 0.0);
            }
        }
        assert_eq!(
            TimingStats::from_samples(&[3.0, 1.0, 2.0, 10.0]).map(|s| s.median),
            Some(2.5)
        );
        assert!(TimingStats::from_samples(&[]).is_none());
        assert!(TimingStats::from_samples(&[1.0, f64::NAN]).is_none());
    }

    #[test]
    fn throughput_follows_bytes_and_median() {
        let t = timing(
            "add[auto](x, y, out, n)",
            &[2.0, 1.0, 4.0],
            Some(12e6),
            true,
        );
        assert_eq!(t.stats.median, 2.0);
        // 12 MB in 2 ms = 6 GB/s; 2 GFLOP in 2 ms = 1000 GFLOP/s; 6 of 1000 GB/s = 0.6 %.
        assert!((t.gbs().expect("gbs") - 6.0).abs() < 1e-12);
        assert!((t.gflops().expect("gflops") - 1000.0).abs() < 1e-9);
        assert!((t.pct_peak().expect("pct") - 0.6).abs() < 1e-12);
        let text = timing_table(&t).text();
        assert!(text.contains("6 GB/s") && text.contains("est."), "{text}");
        assert!(
            text.contains("1000 GFLOP/s") && text.contains("0.6 % of 1000 GB/s"),
            "{text}"
        );
        assert!(
            text.contains("runs") && text.contains("3 (after 1 warm-up)"),
            "{text}"
        );
        assert!(
            text.contains("2 ms") && text.contains("1 ms") && text.contains("4 ms"),
            "{text}"
        );
        let mut sim = t.clone();
        sim.simulated = true;
        sim.backend = "ptxsim".into();
        sim.bytes_estimated = false;
        assert_eq!(sim.pct_peak(), None);
        let text = timing_table(&sim).text();
        assert!(
            text.contains("simulated") && !text.contains("of peak") && !text.contains("est."),
            "{text}"
        );
        let html = timing_table(&sim).html();
        assert!(html.contains("<table") && html.contains("simulated"));
    }

    #[test]
    fn timings_lists_every_timing_with_speedups_and_a_chart() {
        let ts = vec![
            timing("naive", &[4.0, 4.0, 4.4], Some(8e6), true),
            timing("tiled", &[1.0, 1.1, 0.9], Some(8e6), false),
            timing("tiled2", &[0.5, 0.5], None, false),
        ];
        let tb = timings_table(&ts);
        assert_eq!(tb.rows.len(), 3);
        assert_eq!(tb.rows[0][11], "1.00×");
        assert_eq!(tb.rows[1][11], "4.00×");
        assert_eq!(tb.rows[2][11], "8.00×");
        assert_eq!(tb.rows[0][10], "4 ms (measured)");
        assert_eq!(tb.rows[0][8], "2 est.");
        assert_eq!(tb.rows[1][8], "8");
        assert_eq!(tb.rows[2][8], "-");
        let text = tb.text();
        for l in ["naive", "tiled", "tiled2"] {
            assert!(text.contains(l));
        }
        let chart = timings_chart(&ts).expect("chart");
        let img = image::load_from_memory(&chart.png).expect("png");
        assert_eq!((img.width(), img.height()), (chart.width, chart.height));
        assert!(chart.height >= 3 * 24);
        // On ptxsim the estimates are compared, not the simulator's wall times.
        let est = |label: &str, wall: f64, ms: f64| Timing {
            simulated: true,
            estimate: Some(TimeEstimate {
                counted: None,
                gpu: "H200".into(),
                ms,
                peak_gbs: 4800.0,
                bound: "DRAM bandwidth".into(),
                breakdown: "DRAM 100%".into(),
            }),
            ..timing(label, &[wall], None, false)
        };
        let sim = vec![est("a", 1.0, 0.004), est("b", 2.0, 0.001)];
        let tb = timings_table(&sim);
        assert_eq!(tb.rows[1][11], "4.00×");
        assert_eq!(tb.rows[1][10], "1 µs (est. H200)");
        assert!(timing_table(&sim[0]).text().contains("estimated on H200"));
        assert_eq!(sim[1].json()["metrics"]["gpu__time_duration.sum"], 1000.0);
    }

    #[test]
    fn durations_pick_readable_units() {
        assert_eq!(fmt_ms(0.00085), "850 ns");
        assert_eq!(fmt_ms(0.0123), "12.3 µs");
        assert_eq!(fmt_ms(4.56), "4.56 ms");
        assert_eq!(fmt_ms(2100.0), "2.1 s");
        assert_eq!(fmt_sig_fixed(1.0), "1.00");
        assert_eq!(fmt_sig_fixed(12.5), "12.5");
        assert_eq!(fmt_sig_fixed(0.25), "0.250");
    }
}
