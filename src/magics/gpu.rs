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

/// The table entry called `name`, or an ArgumentError naming the known models.
pub(crate) fn find_model(ctx: &LineCtx, name: &Name) -> Result<&'static GpuModel, MagicError> {
    if let Some(g) = gpus::find(&name.text) {
        return Ok(g);
    }
    let known: Vec<&str> = gpus::GPUS.iter().map(|g| g.name.as_ref()).collect();
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
    Err(ctx.err(ErrorKind::Argument, ParseError::at(name.span, msg)))
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
