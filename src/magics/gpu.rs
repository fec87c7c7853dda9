//! `%gpu` and the GPU parts of `%info`: finding a model by name (with a did-you-mean), the table
//! of GPU models and the theoretical-occupancy table. Presentation only; the figures and rules
//! are `ptxsim::gpus`, the CUBIN resources `compile::resources`.

use super::lex::ParseError;
use super::parse::Name;
use super::{LineCtx, MagicError};
use crate::display::table::Table;
use crate::gpu::OccupancyTable;
use nb::ErrorKind;
use ptxsim::gpus::{self, GpuModel};

/// The GPU called `name`: one `%gpu define` added (`defined`), else the table's; or an
/// ArgumentError naming the known models.
pub(crate) fn find_model(
    ctx: &LineCtx,
    defined: &[GpuModel],
    name: &Name,
) -> Result<GpuModel, MagicError> {
    if let Some(g) = defined
        .iter()
        .find(|g| gpus::names_match(&g.name, &name.text))
    {
        return Ok(g.clone());
    }
    if let Some(g) = gpus::find(&name.text) {
        return Ok(g.clone());
    }
    let known: Vec<&str> = gpus::GPUS
        .iter()
        .chain(defined)
        .map(|g| g.name.as_ref())
        .collect();
    let mut msg = format!(
        "unknown GPU model '{}'; the models are: {}",
        name.text,
        known.join(", ")
    );
    let squashed: Vec<String> = known.iter().map(|k| k.replace(' ', "")).collect();
    let want = name.text.replace(' ', "").to_ascii_uppercase();
    if let Some(s) = crate::suggest::nearest(&want, squashed.iter().map(String::as_str)) {
        if let Some(i) = squashed.iter().position(|k| k == s) {
            msg.push_str(&format!("; did you mean {}?", known[i]));
        }
    }
    msg.push_str(
        " (or define it: %gpu define NAME sms=.. clock_mhz=.. dram_gb_s=.. l2_mib=.. cc=..)",
    );
    Err(ctx.err(ErrorKind::Argument, ParseError::at(name.span, msg)))
}

/// `%gpu define NAME key=value...` as a model: every key known, every value a number, `cc` as
/// `8.9`, `89` or `sm_89`. Errors name the key or value at fault.
pub(crate) fn defined_model(
    ctx: &LineCtx,
    name: &Name,
    figures: &[(Name, Name)],
) -> Result<GpuModel, MagicError> {
    const KEYS: [&str; 6] = ["sms", "clock_mhz", "dram_gb_s", "l2_mib", "cc", "dram_gb"];
    const REQUIRED: [&str; 5] = ["sms", "clock_mhz", "dram_gb_s", "l2_mib", "cc"];
    let arg = |span, msg: String| ctx.err(ErrorKind::Argument, ParseError::at(span, msg));
    let mut values: std::collections::BTreeMap<&str, f64> = Default::default();
    for (key, value) in figures {
        let Some(k) = KEYS.iter().find(|k| **k == key.text) else {
            return Err(arg(
                key.span,
                format!(
                    "unknown figure '{}' (figures: {})",
                    key.text,
                    KEYS.join(", ")
                ),
            ));
        };
        let text = value.text.trim_start_matches("sm_");
        let number: f64 = text.parse().map_err(|_| {
            arg(
                value.span,
                format!("{}={} is not a number", key.text, value.text),
            )
        })?;
        if values.insert(k, number).is_some() {
            return Err(arg(key.span, format!("'{}' is given twice", key.text)));
        }
    }
    let missing: Vec<&str> = REQUIRED
        .iter()
        .copied()
        .filter(|k| !values.contains_key(k))
        .collect();
    if !missing.is_empty() {
        return Err(arg(
            name.span,
            format!(
                "%gpu define {} lacks {} (needs sms, clock_mhz, dram_gb_s, l2_mib and cc; dram_gb is optional)",
                name.text,
                missing.join(", ")
            ),
        ));
    }
    let get = |k: &str| values.get(k).copied().unwrap_or(0.0);
    // 8.9 → 89; 89 → 89.
    let cc = get("cc");
    let sm = if cc < 20.0 { (cc * 10.0).round() } else { cc };
    let spec = gpus::GpuSpec {
        name: name.text.clone(),
        sm: sm as u32,
        sms: get("sms") as u32,
        boost_clock_mhz: get("clock_mhz") as u32,
        dram_gb_s: get("dram_gb_s"),
        l2_bytes: (get("l2_mib").max(0.0) * 1048576.0) as u64,
        dram_bytes: (get("dram_gb").max(0.0) * 1e9) as u64,
    };
    gpus::define(&spec).map_err(|m| arg(name.span, format!("%gpu define {}: {m}", name.text)))
}

fn mib(bytes: u64) -> String {
    format!("{}", bytes >> 20)
}

/// `%gpu`: every model, the modelled one marked.
pub(crate) fn models_table(models: &[(GpuModel, bool)]) -> Table {
    let mut t = Table::new(&[
        "",
        "GPU",
        "arch",
        "SMs",
        "boost MHz",
        "DRAM GB/s",
        "L2 MiB",
        "shared/SM KiB",
        "registers/SM",
        "warps/SM",
        "blocks/SM",
    ])
    .right(&[3, 4, 5, 6, 7, 8, 9, 10])
    .caption("GPU models (%gpu MODEL chooses the one ptxsim models; * = modelled now)");
    for (g, current) in models {
        t.row(vec![
            if *current { "*".into() } else { String::new() },
            g.name.to_string(),
            g.arch(),
            g.sms.to_string(),
            g.boost_clock_mhz.to_string(),
            format!("{:.0}", g.dram_gb_s),
            mib(g.l2_bytes),
            (g.shared_per_sm_bytes / 1024).to_string(),
            g.regs_per_sm.to_string(),
            g.max_warps_per_sm.to_string(),
            g.max_blocks_per_sm.to_string(),
        ]);
    }
    t
}

/// `%info`'s theoretical occupancy per block size.
pub(crate) fn occupancy_table(o: &OccupancyTable) -> Table {
    let mut t = Table::new(&[
        "block",
        "blocks/SM",
        "warps/SM",
        "occupancy",
        "limiter",
        "limits (warps, blocks, registers, shared)",
    ])
    .right(&[0, 1, 2, 3])
    .caption(format!(
        "theoretical occupancy on {} ({}), {} registers/thread, {} B static shared \
         (CUDA occupancy calculator rules)",
        o.gpu, o.arch, o.registers, o.shared_bytes
    ));
    let lim = |n: u32| {
        if n == u32::MAX {
            "-".to_string()
        } else {
            n.to_string()
        }
    };
    for r in &o.rows {
        t.row(vec![
            r.block_threads.to_string(),
            r.active_blocks_per_sm.to_string(),
            format!("{} / {}", r.active_warps_per_sm, r.max_warps_per_sm),
            format!("{:.0}%", r.percent()),
            r.limiter.to_string(),
            format!(
                "{}, {}, {}, {}",
                lim(r.limit_warps),
                lim(r.limit_blocks),
                lim(r.limit_registers),
                lim(r.limit_shared)
            ),
        ]);
    }
    t
}

/// `%gpu compare LAUNCH`: the launch's estimated time on every model, fastest first marked.
pub(crate) fn compare_table(
    kernel: &str,
    rows: &[(GpuModel, Option<ptxsim::model::Estimate>)],
) -> Table {
    let mut t = Table::new(&[
        "GPU",
        "arch",
        "estimated",
        "bound by",
        "DRAM GB/s",
        "breakdown",
    ])
    .right(&[2, 4])
    .caption(format!(
        "%gpu compare {kernel}: estimated on each GPU model (ptxsim's counts, ptxsim::model)"
    ));
    for (g, e) in rows {
        match e {
            Some(e) => t.row(vec![
                g.name.to_string(),
                g.arch(),
                super::profile_view::micros(e.ns),
                e.bound.as_str().to_string(),
                format!("{:.0} ({:.0}%)", e.dram_gb_s, e.dram_pct_of_peak),
                e.breakdown(),
            ]),
            None => t.row(vec![
                g.name.to_string(),
                g.arch(),
                "-".into(),
                "resources unknown (no CUBIN)".into(),
                "-".into(),
                "-".into(),
            ]),
        }
    }
    t
}
