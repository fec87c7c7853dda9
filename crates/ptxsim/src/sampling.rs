//! Sampled counting: the counters of a launch too big to count in full, from some of its
//! blocks scaled to the grid (`counters::Sample::Auto`).
//!
//! A counted launch runs every block in the interpreter with the counting hook, tens of times
//! slower than an uncounted one; a 4096-cube matrix product would take many minutes. Blocks of
//! most kernels do the same work, so counting a few whole groups of blocks and scaling gives
//! the same counts. This module chooses the groups, checks that their blocks agree, and scales.
//! It runs launches through [`Device::launch`] only; it knows nothing of the estimate.
//!
//! # The plan
//!
//! 1. **Probe.** Block 0 runs counted alone; its warp instructions plus twice its global
//!    sector accesses (each is recorded, then run through the L2 model) price a block, `p`. When the
//!    whole grid costs at most the budget (`B · p ≤ budget`), or has fewer than 8 blocks,
//!    every block is counted (no sample).
//! 2. **Groups.** A group is `g` consecutive blocks: a whole wave of resident blocks
//!    (`wave_blocks`), fewer when four waves would cost more than the budget
//!    (`g = budget / (4p)`, at least 1), and at most a sixteenth of the grid (so that a grid
//!    of few long blocks, such as a grid-stride loop over a large array, is sampled too).
//!    Consecutive blocks are what a GPU runs at once, so the L2 model sees their reuse of
//!    each other's data as the GPU's L2 does. Four groups are
//!    spread evenly over the grid, the first group at block 0 and the last ending at the last
//!    block.
//! 3. **Settle.** The groups run counted in one launch. Each group's mean warp instructions
//!    and global sectors per block must lie within 3% of the sample's mean (`SETTLE`); where
//!    they do not (early exits, data-dependent loops, work queues), the number of groups
//!    doubles, up to four times. A sample that would reach half the grid, or that has not
//!    settled after the last doubling, gives way to counting every block.
//! 4. **Scale.** Every count is multiplied by `B / K` (`K` blocks counted), rounded; blocks,
//!    warps and threads are the grid's. When all of the device's allocations together fit in
//!    the modelled L2, the scaled DRAM bytes read are capped at the size of the allocations
//!    the sample read, and those written at the size of those it wrote: a grid whose data
//!    stays in L2 reads it from DRAM once, where each group of the sample started cold.
//!
//! `Counters::sampled` says what was counted (`None` when every block was) and whether the
//! sample grew.
//!
//! # What the caller must know
//!
//! Only the sampled blocks run, and block 0 may run twice (the probe, then its group), so the
//! memory a sampled launch leaves is not the launch's result: run it on copies (nbcuda's
//! `%profile` does). Faults and printf output come from the blocks that ran.

use std::sync::Arc;

use crate::counters::{Counters, Sample};
use crate::{Device, LaunchConfig, LaunchError, LaunchReport, Module};

/// How far a group's per-block mean may stray from the sample's, relative.
pub const SETTLE: f64 = 0.03;
/// Groups of the first sample.
pub const FIRST_GROUPS: u64 = 4;
/// Times the sample may double before every block is counted.
pub const MAX_DOUBLINGS: u32 = 4;

/// The blocks of `groups` groups of `g` consecutive blocks spread evenly over `blocks`
/// (the first at 0, the last ending at `blocks - 1`), merged where they overlap; each
/// group's range is returned too.
pub fn plan(blocks: u64, g: u64, groups: u64) -> (Vec<u64>, Vec<(u64, u64)>) {
    let g = g.clamp(1, blocks.max(1));
    let groups = groups.max(1);
    let span = blocks - g;
    let mut ranges: Vec<(u64, u64)> = (0..groups)
        .map(|i| {
            let start = if groups == 1 {
                0
            } else {
                ((i as u128 * span as u128 + (groups as u128 - 1) / 2) / (groups as u128 - 1))
                    as u64
            };
            (start, start + g)
        })
        .collect();
    ranges.dedup();
    let mut list: Vec<u64> = ranges.iter().flat_map(|&(a, b)| a..b).collect();
    list.sort_unstable();
    list.dedup();
    (list, ranges)
}

/// Whether each group's mean per-block figures lie within [`SETTLE`] of the sample's.
pub fn settled(c: &Counters, ranges: &[(u64, u64)]) -> bool {
    let mean = |f: &dyn Fn(&crate::counters::BlockFigures) -> u64, lo: u64, hi: u64| {
        let (mut n, mut sum) = (0u64, 0u64);
        for b in c.per_block.iter().filter(|b| (lo..hi).contains(&b.block)) {
            n += 1;
            sum += f(b);
        }
        (n > 0).then(|| sum as f64 / n as f64)
    };
    let figures: [&dyn Fn(&crate::counters::BlockFigures) -> u64; 2] =
        [&|b| b.inst_executed, &|b| b.sectors];
    for f in figures {
        let Some(all) = mean(f, 0, u64::MAX) else {
            return true;
        };
        for &(lo, hi) in ranges {
            // Blocks that made no counted record (no instruction at all) are absent: a group
            // without any differs from the others.
            let m = mean(f, lo, hi).unwrap_or(0.0);
            if (m - all).abs() > SETTLE * all.max(1.0) {
                return false;
            }
        }
    }
    true
}

/// A counted launch under `Sample::Auto { wave_blocks, budget }` (see the module doc);
/// `budget` is in the probe's units (warp instructions plus twice the sector accesses).
pub(crate) fn launch(
    dev: &Device,
    module: &Module,
    kernel: &str,
    config: &LaunchConfig,
    params: &[&[u8]],
    wave_blocks: u64,
    budget: u64,
) -> Result<LaunchReport, LaunchError> {
    let with = |sample: Sample| {
        let mut c = config.clone();
        if let Some(cc) = c.counters.as_mut() {
            cc.sample = sample;
        }
        c
    };
    let full = || dev.launch(module, kernel, &with(Sample::Full), params);
    let (gx, gy, gz) = config.grid;
    let blocks = gx as u64 * gy as u64 * gz as u64;
    let wave = wave_blocks.clamp(1, blocks.max(1));
    if blocks < 8 {
        return full();
    }
    let probe = dev.launch(
        module,
        kernel,
        &with(Sample::Blocks(Arc::from([0u64]))),
        params,
    )?;
    // A block's cost: its warp instructions and, twice over, its sector accesses (each is
    // recorded and then run through the L2 model).
    let per_block = probe.counters.as_ref().map_or(1, |c| {
        let t = &c.total;
        let sectors = t.global_ld_sectors + t.global_st_sectors + t.global_atom_sectors;
        (t.inst_executed + 2 * sectors).max(1)
    });
    if blocks.saturating_mul(per_block) <= budget {
        return full();
    }
    // At most a sixteenth of the grid per group, so that the first sample (a quarter of the
    // grid at most) can double once before it reaches half: a grid of few, long blocks (a
    // grid-stride loop over a GPU-size array) is sampled too, not counted in full.
    let g = (budget / (FIRST_GROUPS * per_block))
        .clamp(1, wave)
        .min((blocks / (4 * FIRST_GROUPS)).max(1));
    // A warm L2 holds what the previous launch left only when the launch's data fits in it;
    // a sample's much smaller footprint would fit where the launch's does not.
    let l2_bytes = config.counters.as_ref().map_or(0, |c| c.l2_bytes);
    let fits = dev.allocated_bytes() as u64 <= l2_bytes;
    let with = |sample: Sample| {
        let mut c = with(sample);
        if let Some(cc) = c.counters.as_mut() {
            cc.warm &= fits;
        }
        c
    };
    let mut groups = FIRST_GROUPS;
    let mut grew = false;
    for _ in 0..=MAX_DOUBLINGS {
        let (list, ranges) = plan(blocks, g, groups);
        if 2 * list.len() as u64 >= blocks {
            break;
        }
        let k = list.len() as u64;
        let mut report = dev.launch(module, kernel, &with(Sample::Blocks(list.into())), params)?;
        let Some(mut c) = report.counters.take() else {
            return Ok(report);
        };
        if settled(&c, &ranges) {
            let (bx, by, bz) = config.block;
            let threads = bx as u64 * by as u64 * bz as u64;
            let live = dev.allocated_bytes() as u64;
            let cap = (live <= c.l2_bytes).then(|| {
                (
                    dev.bytes_of_allocations_holding(&c.read_pages),
                    dev.bytes_of_allocations_holding(&c.written_pages),
                )
            });
            debug_assert_eq!(c.blocks, k);
            c.scale_to_grid(blocks, threads, cap, grew);
            report.counters = Some(c);
            return Ok(report);
        }
        grew = true;
        groups *= 2;
    }
    let mut report = full()?;
    if let Some(c) = report.counters.as_mut() {
        // Every block counted because the sample did not settle: say the sample grew.
        if grew {
            c.sampled = Some(crate::counters::Sampled {
                blocks,
                of: blocks,
                scaled: false,
                grew: true,
            });
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_start_at_the_first_block_and_end_at_the_last() {
        let (list, ranges) = plan(100, 10, 4);
        assert_eq!(ranges, vec![(0, 10), (30, 40), (60, 70), (90, 100)]);
        assert_eq!(list.len(), 40);
        assert_eq!((list[0], list[39]), (0, 99));
        // Overlapping groups merge.
        let (list, _) = plan(12, 5, 4);
        assert_eq!(list, (0..12).collect::<Vec<_>>());
        let (list, ranges) = plan(5, 10, 4);
        assert_eq!((list.len(), ranges.len()), (5, 1));
    }
}
