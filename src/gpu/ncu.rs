//! Nsight Compute (`ncu`) for `%profile --ncu`: where the program is, its command line, and
//! reading what it printed (its `--csv` report, or why it measured nothing). Pure functions
//! and plain data, no process handling: the run is `DeviceState::profile_ncu`'s, the worker
//! under ncu `worker::client`'s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The environment variable that names the `ncu` program (else `ncu` on `PATH`).
pub const NCU_ENV: &str = "NBCUDA_NCU";

/// How `%profile --ncu` runs ncu.
#[derive(Debug, Clone, PartialEq)]
pub struct NcuSetup {
    /// The ncu program.
    pub program: PathBuf,
    /// Seconds the whole run (ncu's start, the replay, ncu's report) may take.
    pub timeout_s: f64,
    /// Run the worker on ptxsim (`gpu-worker --sim`): tests with a fake ncu, no GPU.
    pub sim_worker: bool,
}

/// Seconds `%profile --ncu` waits for ncu at most (`NBCUDA_NCU_TIMEOUT` overrides).
pub const DEFAULT_TIMEOUT_S: f64 = 180.0;

impl NcuSetup {
    /// The ncu of this environment: `$NBCUDA_NCU`, else `ncu` on `PATH`, else the CUDA
    /// toolkit's usual place. `Err`: one line that says what was looked for.
    pub fn from_env() -> Result<NcuSetup, String> {
        let timeout_s = std::env::var("NBCUDA_NCU_TIMEOUT")
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|t| t.is_finite() && *t > 0.0)
            .unwrap_or(DEFAULT_TIMEOUT_S);
        let program = find_program(
            std::env::var_os(NCU_ENV).map(PathBuf::from),
            std::env::var_os("PATH"),
        )?;
        Ok(NcuSetup {
            program,
            timeout_s,
            sim_worker: false,
        })
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `explicit` (the value of `NBCUDA_NCU`) when set, else `ncu` in `path`'s folders, else
/// `/usr/local/cuda/bin/ncu`.
pub fn find_program(
    explicit: Option<PathBuf>,
    path: Option<std::ffi::OsString>,
) -> Result<PathBuf, String> {
    if let Some(p) = explicit.filter(|p| !p.as_os_str().is_empty()) {
        // A bare name is looked up on PATH like a shell would.
        if p.components().count() == 1 && !p.is_absolute() {
            if let Some(found) = path.as_ref().and_then(|d| {
                std::env::split_paths(d)
                    .map(|d| d.join(&p))
                    .find(|c| is_executable(c))
            }) {
                return Ok(found);
            }
        }
        if is_executable(&p) {
            return Ok(p);
        }
        return Err(format!(
            "{NCU_ENV}={} is not an executable program",
            p.display()
        ));
    }
    let on_path = path.as_ref().and_then(|d| {
        std::env::split_paths(d)
            .map(|d| d.join("ncu"))
            .find(|c| is_executable(c))
    });
    if let Some(p) = on_path {
        return Ok(p);
    }
    let usual = PathBuf::from("/usr/local/cuda/bin/ncu");
    if is_executable(&usual) {
        return Ok(usual);
    }
    Err(format!(
        "Nsight Compute's `ncu` is not on PATH (nor /usr/local/cuda/bin/ncu); install Nsight \
         Compute or set {NCU_ENV} to its path"
    ))
}

/// ncu's options before the profiled program: CSV of exactly `metrics` on its details page,
/// in base units (bytes, not Kbytes), kernel names as plain function names, into `log`.
pub fn arguments(metrics: &[String], log: &Path) -> Vec<String> {
    vec![
        "--target-processes".into(),
        "all".into(),
        "--csv".into(),
        "--print-units".into(),
        "base".into(),
        "--print-kernel-base".into(),
        "function".into(),
        "--log-file".into(),
        log.to_string_lossy().into_owned(),
        "--metrics".into(),
        metrics.join(","),
    ]
}

/// One profiled kernel launch of ncu's report.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NcuKernel {
    /// ncu's launch ID (the "ID" column).
    pub id: String,
    pub name: String,
    /// Metric name → value in base units (thousands separators removed, unit prefixes applied).
    pub metrics: BTreeMap<String, f64>,
    /// Metrics ncu printed without a number ("n/a"), by name.
    pub missing: Vec<String>,
}

/// Splits one CSV line into fields (quotes, doubled quotes inside them, commas inside quotes).
/// None when the line is not CSV (an unterminated quote).
pub fn split_csv_line(line: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.trim_end_matches(['\r', '\n']).chars().peekable();
    let mut at_start = true;
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    field.push('"');
                    chars.next();
                } else {
                    quoted = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            '"' if at_start => {
                quoted = true;
                at_start = false;
            }
            ',' => {
                out.push(std::mem::take(&mut field));
                at_start = true;
            }
            c => {
                field.push(c);
                at_start = false;
            }
        }
    }
    if quoted {
        return None;
    }
    out.push(field);
    Some(out)
}

/// A metric value as ncu prints it: "1,024", "3.5", "1e+06", "n/a" (None). Sizes and counts
/// come in their base unit ("Kbyte" → bytes); durations in nanoseconds, the unit of ptxsim's
/// `gpu__time_duration.sum` ("usecond" → ×1000, "second" → ×1e9).
pub fn parse_value(text: &str, unit: &str) -> Option<f64> {
    let t: String = text.trim().chars().filter(|c| *c != ',').collect();
    let v: f64 = t.parse().ok().filter(|v: &f64| v.is_finite())?;
    let (mul, div) = unit_scale(unit);
    Some(v * mul / div)
}

/// (multiplier, divisor) from `unit` to the unit ptxsim reports: base units for counts and
/// sizes ("Kbyte" → (1e3, 1)), nanoseconds for durations ("msecond" → (1e6, 1)); (1, 1) for
/// base units, ratios, percentages and units it does not know.
fn unit_scale(unit: &str) -> (f64, f64) {
    let u = unit.trim();
    // Durations: to nanoseconds.
    match u {
        "second" => return (1e9, 1.0),
        "msecond" => return (1e6, 1.0),
        "usecond" => return (1e3, 1.0),
        "nsecond" => return (1.0, 1.0),
        "psecond" => return (1.0, 1e3),
        _ => {}
    }
    let mut chars = u.chars();
    let (Some(first), rest) = (chars.next(), chars.as_str()) else {
        return (1.0, 1.0);
    };
    // A prefix only before a lower-case unit word: "Kbyte", "Mcycle", "Gbyte/second".
    if rest.is_empty() || !rest.starts_with(|c: char| c.is_ascii_lowercase()) {
        return (1.0, 1.0);
    }
    let base = rest.split('/').next().unwrap_or(rest);
    let known_base = [
        "byte",
        "cycle",
        "sector",
        "inst",
        "request",
        "warp",
        "thread",
        "block",
        "wavefront",
        "register",
        "transaction",
    ];
    if !known_base.contains(&base) {
        return (1.0, 1.0);
    }
    match first {
        'K' => (1e3, 1.0),
        'M' => (1e6, 1.0),
        'G' => (1e9, 1.0),
        'T' => (1e12, 1.0),
        _ => (1.0, 1.0),
    }
}

/// The launches in ncu's `--csv` report, in report order. Every line that is not CSV (ncu's
/// `==PROF==` lines, the program's own output) is skipped. Reads the details page (one row per
/// metric: "ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"; older ncu lacks
/// the launch columns) and the raw page (`--page raw`: one row per launch, a column per
/// metric, a row of units after the header).
pub fn parse_report(text: &str) -> Vec<NcuKernel> {
    let mut kernels: Vec<NcuKernel> = Vec::new();
    let mut header: Option<Vec<String>> = None;
    let mut raw_units: Option<Vec<String>> = None;
    let mut expect_units = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if !trimmed.starts_with('"') {
            continue;
        }
        let Some(fields) = split_csv_line(trimmed) else {
            continue;
        };
        let is_header = fields.iter().any(|f| f == "Kernel Name")
            && fields.iter().any(|f| f == "ID" || f == "Metric Name");
        if is_header {
            expect_units = !fields.iter().any(|f| f == "Metric Name");
            header = Some(fields);
            raw_units = None;
            continue;
        }
        let Some(h) = &header else { continue };
        let col = |name: &str| h.iter().position(|f| f == name);
        let get = |name: &str| col(name).and_then(|i| fields.get(i)).cloned();
        if let (Some(mn), Some(mv)) = (col("Metric Name"), col("Metric Value")) {
            // Details page: one metric per row.
            let (Some(name), Some(value)) = (fields.get(mn), fields.get(mv)) else {
                continue;
            };
            let id = get("ID").unwrap_or_default();
            let kname = get("Kernel Name").unwrap_or_default();
            let unit = get("Metric Unit").unwrap_or_default();
            let k = match kernels.last_mut() {
                Some(k) if k.id == id && k.name == kname => k,
                _ => {
                    kernels.push(NcuKernel {
                        id,
                        name: kname,
                        ..NcuKernel::default()
                    });
                    let last = kernels.len() - 1;
                    &mut kernels[last]
                }
            };
            match parse_value(value, &unit) {
                Some(v) => {
                    k.metrics.insert(name.clone(), v);
                }
                None => k.missing.push(name.clone()),
            }
            continue;
        }
        // Raw page: a units row, then one row per launch.
        if expect_units && raw_units.is_none() {
            raw_units = Some(fields);
            expect_units = false;
            continue;
        }
        let mut k = NcuKernel {
            id: get("ID").unwrap_or_default(),
            name: get("Kernel Name").unwrap_or_default(),
            ..NcuKernel::default()
        };
        for (i, name) in h.iter().enumerate() {
            if !name.contains("__") {
                continue; // launch columns ("ID", "Kernel Name", …), not metrics
            }
            let Some(value) = fields.get(i) else { continue };
            let unit = raw_units
                .as_ref()
                .and_then(|u| u.get(i))
                .map(String::as_str)
                .unwrap_or("");
            match parse_value(value, unit) {
                Some(v) => {
                    k.metrics.insert(name.clone(), v);
                }
                None => k.missing.push(name.clone()),
            }
        }
        kernels.push(k);
    }
    kernels
}

/// The launch of `kernel` (its user name; templates match by base name) in `report`: the last
/// launch whose function name is the kernel's, else the last launch.
pub fn pick_launch<'a>(report: &'a [NcuKernel], kernel: &str) -> Option<&'a NcuKernel> {
    let base = kernel.split('<').next().unwrap_or(kernel).trim();
    let base = base.rsplit("::").next().unwrap_or(base);
    let name_of = |k: &NcuKernel| {
        let n = k.name.split('(').next().unwrap_or(&k.name);
        let n = n.split('<').next().unwrap_or(n).trim().to_string();
        n.rsplit("::").next().unwrap_or(&n).trim().to_string()
    };
    report
        .iter()
        .rev()
        .find(|k| name_of(k) == base)
        .or_else(|| report.last())
}

/// Why ncu measured nothing, as the one line `%profile --ncu` shows.
#[derive(Debug, Clone, PartialEq)]
pub enum NcuFailure {
    /// No GPU backend (`%profile --ncu` on ptxsim).
    NoGpu(String),
    /// No ncu program.
    NotFound(String),
    /// ERR_NVGPUCTRPERM: the driver refuses the performance counters.
    Refused,
    /// Jupyter's interrupt.
    Interrupted,
    /// Ran past `timeout_s`.
    TimedOut(f64),
    /// ncu or the replay failed: why, with ncu's last lines.
    Failed(String),
}

/// The fix of ERR_NVGPUCTRPERM, in one line.
pub const PERMISSION_FIX: &str = "load the driver with `NVreg_RestrictProfilingPermission=0` \
     (options nvidia NVreg_RestrictProfilingPermission=0 in /etc/modprobe.d, then reboot), run \
     the Jupyter kernel as root, or start its container with `--cap-add SYS_ADMIN`; see \
     https://developer.nvidia.com/ERR_NVGPUCTRPERM";

impl NcuFailure {
    /// The one line shown above the ptxsim profile.
    pub fn message(&self) -> String {
        let tail = "showing ptxsim's counters only";
        match self {
            NcuFailure::NoGpu(why) => {
                format!("%profile --ncu needs the GPU backend: {why}; {tail}")
            }
            NcuFailure::NotFound(why) => format!("%profile --ncu: {why}; {tail}"),
            NcuFailure::Refused => format!(
                "%profile --ncu: the driver refuses access to GPU performance counters \
                 (ERR_NVGPUCTRPERM): {PERMISSION_FIX}; {tail}"
            ),
            NcuFailure::Interrupted => format!("%profile --ncu was interrupted; {tail}"),
            NcuFailure::TimedOut(s) => format!(
                "%profile --ncu: ncu did not finish within {s:.0} s (NBCUDA_NCU_TIMEOUT sets \
                 the limit); {tail}"
            ),
            NcuFailure::Failed(why) => format!("%profile --ncu: {why}; {tail}"),
        }
    }

    /// A short name for the JSON entry.
    pub fn kind(&self) -> &'static str {
        match self {
            NcuFailure::NoGpu(_) => "no_gpu",
            NcuFailure::NotFound(_) => "not_found",
            NcuFailure::Refused => "ERR_NVGPUCTRPERM",
            NcuFailure::Interrupted => "interrupted",
            NcuFailure::TimedOut(_) => "timeout",
            NcuFailure::Failed(_) => "failed",
        }
    }
}

/// Whether ncu's output says the driver refused the performance counters.
pub fn refused(output: &str) -> bool {
    output.contains("ERR_NVGPUCTRPERM")
}

/// The metrics ncu said it does not know ("==ERROR== Failed to find metric X"), among
/// `requested`.
pub fn unknown_metrics(output: &str, requested: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in output.lines() {
        let lower = line.to_ascii_lowercase();
        let Some(at) = lower.find("failed to find metric") else {
            continue;
        };
        for word in line[at..].split(|c: char| c.is_whitespace() || c == ',' || c == '"') {
            let w = word
                .trim_start_matches("regex:")
                .trim_start_matches('^')
                .trim_end_matches('$')
                .trim_end_matches(['.', ':', ';']);
            if requested.iter().any(|r| r == w) && !out.iter().any(|o| o == w) {
                out.push(w.to_string());
            }
        }
    }
    out
}

/// The last `n` non-empty lines of `output` that are not CSV rows, joined by " | ".
pub fn last_lines(output: &str, n: usize) -> String {
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('"'))
        .collect();
    let from = lines.len().saturating_sub(n);
    let s = lines[from..].join(" | ");
    if s.is_empty() {
        "(no output)".into()
    } else {
        s
    }
}

#[cfg(test)]
mod tests;
