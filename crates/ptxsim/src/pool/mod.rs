//! Runs a launch's blocks in parallel: one worker per OS thread, each taking the next units of
//! work from a shared atomic counter (one at a time, or a claim of several when there are many,
//! `units_per_claim`), then merges the outputs in block order. A unit is a block
//! or, for a launch with fewer blocks than it takes to keep every core busy and whose warps are
//! independent (`Ctx::split_blocks`), a consecutive share of one block's warps.
//!
//! The launching thread is one worker; the others are the process's helper threads
//! (`helpers`: started once, kept spinning briefly between launches, so a small launch pays
//! neither for starting threads nor for waking them). A launch that asks for more workers than
//! there are helpers gets scoped threads of its own. A cooperative launch (`Ctx::grid_sync`)
//! runs every block at once, each on a scoped thread of its own (`run_cooperative`), so that
//! blocks waiting at a grid-wide sync (`exec::grid`) wait for blocks that are running. It owns
//! no simulation logic: blocks are run by `exec::Worker`.

mod helpers;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::exec::{BlockOut, Ctx, Fault, Worker, ABORT_MESSAGE};
use crate::{CheckKind, CheckReport};

/// The merged result of all blocks.
pub struct Outcome {
    pub printf: String,
    pub reports: Vec<CheckReport>,
    pub fault: Option<CheckReport>,
    pub instructions: u64,
    /// Workers that ran the launch's blocks: the launching thread and the helpers it got.
    pub workers: usize,
}

type WorkerResult = (Vec<(u64, BlockOut)>, Option<(u64, Fault)>, u64);

/// `work_inner`, with a panic (a simulator bug) turned into a fault instead of unwinding into
/// the caller.
fn work(ctx: &Ctx, next: &AtomicU64, nblocks: u64, parts: u32, claim: u64) -> WorkerResult {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        work_inner(ctx, next, nblocks, parts, claim)
    })) {
        Ok(r) => r,
        Err(e) => {
            ctx.abort.store(true, Ordering::Relaxed);
            let what = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let report = CheckReport {
                kind: CheckKind::Trap,
                kernel: ctx.prog.name.clone(),
                block: (0, 0, 0),
                thread: (0, 0, 0),
                address: 0,
                size: 0,
                space: "",
                allocation: None,
                line: None,
                message: format!("internal simulator error (please report it): {what}"),
            };
            (Vec::new(), Some((0, Box::new(report))), 0)
        }
    }
}

/// Outputs and faults are keyed by unit (block × parts + part), which orders them as blocks.
/// Units are taken `claim` at a time (`units_per_claim`).
fn work_inner(ctx: &Ctx, next: &AtomicU64, nblocks: u64, parts: u32, claim: u64) -> WorkerResult {
    let mut wk = Worker::new(ctx);
    let mut outs = Vec::new();
    let mut fault = None;
    let units = nblocks * parts as u64;
    'claims: loop {
        if ctx.abort.load(Ordering::Relaxed) {
            break;
        }
        let first = next.fetch_add(claim, Ordering::Relaxed);
        if first >= units {
            break;
        }
        for u in first..(first + claim).min(units) {
            let (b, part) = (u / parts as u64, (u % parts as u64) as u32);
            let b = match ctx.only_blocks {
                Some(list) => list.get(b as usize).copied().unwrap_or(b),
                None => b,
            };
            let r = wk.run_block_part(b, part, parts);
            if let Some(gs) = ctx.grid_sync {
                gs.block_done();
            }
            if !wk.out.printf.is_empty() || !wk.out.reports.is_empty() {
                outs.push((u, std::mem::take(&mut wk.out)));
            }
            if let Err(f) = r {
                ctx.abort.store(true, Ordering::Relaxed);
                fault = Some((u, f));
                break 'claims;
            }
            if claim > 1 && ctx.abort.load(Ordering::Relaxed) {
                break 'claims;
            }
        }
    }
    wk.flush_count();
    ctx.ganged.fetch_add(wk.ganged, Ordering::Relaxed);
    ctx.block_tier_blocks
        .fetch_add(wk.block_tier_blocks(), Ordering::Relaxed);
    ctx.block_tier_replays
        .fetch_add(wk.block_tier_replayed(), Ordering::Relaxed);
    (outs, fault, wk.total)
}

/// Units a worker takes at a time: one, unless the launch has many more units than workers,
/// then up to 64, so that the workers do not take turns at the shared counter's cache line for
/// every small block, while the last claims still leave the other workers little idle time.
/// Claims, and counting instructions per worker instead of per block (`Worker::flush_count`),
/// made two workers 1.18x faster on vecAdd (16M threads) and reduceBlockTree (4M).
pub(crate) fn units_per_claim(units: u64, threads: usize) -> u64 {
    (units / (threads as u64 * UNITS_PER_WORKER * 64)).clamp(1, 64)
}

/// The number of cores (read once: on Linux it reads cgroup files each time).
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Units of work a launch should have per worker, so that the last ones to finish leave the
/// other workers little idle time.
const UNITS_PER_WORKER: u64 = 8;

/// How many parts each block is cut into: 1 unless the launch has too few blocks to spread
/// evenly over `threads` workers and its blocks may be split.
pub(crate) fn parts_per_block(split: bool, nwarps: u32, nblocks: u64, threads: usize) -> u32 {
    let want = UNITS_PER_WORKER * threads as u64;
    if !split || threads < 2 || nblocks >= want {
        return 1;
    }
    (want.div_ceil(nblocks.max(1)) as u32).clamp(1, nwarps.max(1))
}

/// Run `nblocks` blocks on `threads` workers (0: one per core): the grid's first `nblocks`, or
/// with `Ctx::only_blocks`, the blocks it lists (`nblocks` its length).
pub fn run(ctx: &Ctx, nblocks: u64, threads: usize) -> Outcome {
    if ctx.grid_sync.is_some() {
        return merge(run_cooperative(ctx, nblocks));
    }
    let threads = if threads == 0 { cores() } else { threads };
    let threads = threads.clamp(1, 256);
    let parts = parts_per_block(ctx.split_blocks, ctx.nwarps, nblocks, threads);
    let threads = threads.min((nblocks * parts as u64).max(1) as usize);
    let next = AtomicU64::new(0);
    let claim = units_per_claim(nblocks * parts as u64, threads);
    let results: Vec<WorkerResult> = if threads == 1 {
        vec![work(ctx, &next, nblocks, parts, claim)]
    } else if threads <= helpers::count() + 1 {
        // This thread works too; the others are helpers (those not busy with another launch).
        let others = Mutex::new(Vec::with_capacity(threads - 1));
        let job = || {
            let r = work(ctx, &next, nblocks, parts, claim);
            if let Ok(mut v) = others.lock() {
                v.push(r);
            }
        };
        let (mine, _) = helpers::run(threads - 1, &job, || {
            work(ctx, &next, nblocks, parts, claim)
        });
        let mut v = others.into_inner().unwrap_or_default();
        v.push(mine);
        v
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (1..threads)
                .map(|_| s.spawn(|| work(ctx, &next, nblocks, parts, claim)))
                .collect();
            let mut v = vec![work(ctx, &next, nblocks, parts, claim)];
            for h in handles {
                // A worker never panics on user input; if one did, its blocks are lost.
                if let Ok(r) = h.join() {
                    v.push(r);
                }
            }
            v
        })
    };
    merge(results)
}

/// Stack of each block's thread in a cooperative launch (the interpreter's frames are small;
/// device-function calls keep their stacks on the heap).
const COOPERATIVE_STACK: usize = 512 * 1024;

/// A cooperative launch: every block on a thread of its own, all at once (`grid_sync`).
fn run_cooperative(ctx: &Ctx, nblocks: u64) -> Vec<WorkerResult> {
    let next = AtomicU64::new(0);
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        let mut failed = None;
        for k in 1..nblocks {
            let spawned = std::thread::Builder::new()
                .name(format!("ptxsim-block-{k}"))
                .stack_size(COOPERATIVE_STACK)
                .spawn_scoped(s, || work(ctx, &next, nblocks, 1, 1));
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // The blocks already started would wait for those that cannot: stop them.
                    ctx.abort.store(true, Ordering::Relaxed);
                    failed = Some(e.to_string());
                    break;
                }
            }
        }
        let mut v = vec![work(ctx, &next, nblocks, 1, 1)];
        for h in handles {
            if let Ok(r) = h.join() {
                v.push(r);
            }
        }
        if let Some(why) = failed {
            let report = CheckReport {
                kind: CheckKind::Trap,
                kernel: ctx.prog.name.clone(),
                block: (0, 0, 0),
                thread: (0, 0, 0),
                address: 0,
                size: 0,
                space: "",
                allocation: None,
                line: None,
                message: format!(
                    "a cooperative launch of {nblocks} blocks needs a thread per block, and \
                     this process could not start that many ({why})"
                ),
            };
            v.push((Vec::new(), Some((0, Box::new(report))), 0));
        }
        v
    })
}

/// The outcome of a launch from its workers' results: printf and reports in block order, the
/// real fault.
fn merge(results: Vec<WorkerResult>) -> Outcome {
    let workers = results.len();
    let mut outs = Vec::new();
    let mut faults = Vec::new();
    let mut instructions = 0;
    for (o, f, n) in results {
        outs.extend(o);
        faults.extend(f);
        instructions += n;
    }
    outs.sort_by_key(|(b, _)| *b);
    let mut printf = String::new();
    let mut reports: Vec<CheckReport> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (_, o) in outs {
        printf.push_str(&o.printf);
        for r in o.reports {
            let key = (
                r.kind,
                r.line.as_ref().map(|l| (l.line, l.column)),
                r.message.len(),
            );
            if reports.len() < 100 && seen.insert(key) {
                reports.push(r);
            }
        }
    }
    // The real fault, from the lowest block; ignore blocks stopped because of it.
    faults.sort_by_key(|(b, f)| (f.kind == CheckKind::Trap && f.message == ABORT_MESSAGE, *b));
    let fault = faults.into_iter().next().map(|(_, f)| *f);
    Outcome {
        printf,
        reports,
        fault,
        instructions,
        workers,
    }
}
