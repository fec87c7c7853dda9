//! An estimate of how long a launch would take on a real GPU, from its counters
//! ([`crate::counters`]) and its resources, for a GPU of the model table ([`crate::gpus`]).
//!
//! # Inputs
//!
//! The launch's [`Counters`] (warp instructions by kind, global requests and sectors, shared
//! wavefronts, atomics, L2 sectors and DRAM bytes from the L2 model), its grid and block size,
//! the kernel's registers per thread and shared memory per block (from the CUBIN), and a
//! [`GpuModel`].
//!
//! # Equations
//!
//! Let `S` be the GPU's SMs, `f` its boost clock, and `B` the blocks launched. Blocks are
//! dealt to SMs in waves; the busiest SM runs `⌈B / S⌉` blocks, so per-SM work (issue, the
//! pipes, L1 and shared memory) is counted for the busiest SM: a quantity `X` of the whole
//! launch costs `X / B · ⌈B / S⌉` on it. This is also the tail of a last partial wave.
//!
//! - **Issue**: `t_issue = sass / B · ⌈B/S⌉ / (4 · f)`: four warp schedulers, one warp
//!   instruction each per cycle, counting the SASS that divisions and IEEE square roots
//!   become (`InstCounts::sass_inst_estimate`).
//! - **Pipes**: per kind, warp instructions over the pipe's warp instructions per cycle per SM:
//!   fp32 `lanes32 / 32` (2 or 4), fp64 `lanes64 / 32` (1 or 2 on V100/A100/H100/H200, 1/16 on
//!   consumer parts), integer 2 (with the expanded divisions), special functions 0.5,
//!   loads/stores/shared/atomics 1 (the LSU takes one warp instruction a cycle). `t_pipe` is
//!   the slowest pipe.
//! - **L1**: `t_l1 = max(sectors / 4, requests) / B · ⌈B/S⌉ / f`: the L1TEX data stage moves
//!   4 sectors (128 bytes) a cycle per SM and its tag stage takes one request a cycle.
//! - **Shared memory**: `t_shared = wavefronts / B · ⌈B/S⌉ / f`: one wavefront a cycle per SM
//!   (loads, stores, and atomics at their bank passes or same-address serialisation).
//! - **L2**: `t_l2 = 32 · l2_sectors / (L2_BYTES_PER_CLK_PER_SM · S · f)`; `l2_sectors` are
//!   the sectors the L1 model did not serve (`counters`: each block has its share of its SM's
//!   L1, [`l1_bytes_per_block`]).
//! - **DRAM**: `t_dram = (dram_read + dram_write) / (DRAM_EFFICIENCY · peak)`.
//! - **Latency**: each warp waits one memory latency per batch of loads in flight together
//!   (`global_ld_batches`: a batch ends when an instruction needs a register one of its loads
//!   writes, so `a[i] + b[i]` is one batch, a pointer chase one per load). The latency `L` is
//!   the mix of L1 hits, L2 hits and DRAM accesses the cache models saw, at the architecture's
//!   published pointer-chase latencies ([`latency_cycles`]). With `r` warps resident per SM
//!   (the theoretical occupancy's), the warps run in `⌈W / (S · r)⌉` rounds, and each round
//!   also pays the block's turnaround: `BLOCK_TURNAROUND_CYCLES`, plus an L2 latency when the
//!   kernel stores (the stores are acknowledged before the block's slot is free). So
//!   `t_latency = rounds · (batches / W · L + turnaround)`. In a kernel with barriers the
//!   shared-memory passes between them wait for those loads, and one resident block's share
//!   of `t_shared` adds to it (the SM's other blocks use the shared pipe meanwhile).
//!   Low occupancy means fewer warps to hide the latency behind: this is where it shows.
//! - **Atomics**: global atomics contend for the 128-byte lines they update (`atom_lines`);
//!   each line takes [`atomic_lanes_per_clk_per_line`] updates a cycle, so
//!   `t_atomic = lanes / (min(lines · rate, 32 · S) · f)`. Shared atomics:
//!   `serialised / B · ⌈B/S⌉ / f`.
//! - **Launch**: `t_launch` = 2 µs, a kernel's start and drain (what Nsight Compute's
//!   `gpu__time_duration` shows for an empty kernel on recent GPUs).
//! - **Copy** (a device-to-device `%copy`): `t_launch + 2 · bytes / (DRAM_EFFICIENCY · peak)`.
//!
//! The terms overlap, but not perfectly. Latency and DRAM first combine as a p-norm with
//! `LATENCY_P` (the loads in flight and the bytes they bring share each round's time), then
//! everything as a p-norm with `OVERLAP_P`, a smooth maximum:
//! `t = t_launch + ‖t_issue, t_pipe, t_l1, t_shared, t_l2, ‖t_dram, t_latency‖₂, t_atomic‖₄`.
//! The bound is the largest term.
//!
//! # Where the constants come from
//!
//! `benches/published/` holds measurements of 69 kernels from 7 public sources on V100, T4,
//! A100, H100, H200 and RTX 3090, split before any tuning into 47 points to fit and 22 held
//! out; `src/magics/tests_published.rs` re-estimates all of them with our own kernels of the
//! same access patterns. Per-architecture latencies and atomic rates are read off published
//! microbenchmarks (cited at each function). `DRAM_EFFICIENCY`, `BLOCK_TURNAROUND_CYCLES` and
//! the two exponents were read off the fit points (`L2_BYTES_PER_CLK_PER_SM`, 32, is older and
//! was not refitted); the structure of the terms was chosen looking at every point's error,
//! held-out points included, so the holdout median checks the constants more than the form:
//! streaming kernels reach 84-96% of the datasheet bandwidth (BabelStream on A100 and V100,
//! RRZE gpu-stream); a block of RRZE's occupancy-limited stream kernels takes about 650 ns on
//! an A100 where DRAM's latency is 391 ns, about 370 cycles more; a stream kernel that stores
//! takes about 140 ns (one L2 latency) more per block than one that only loads.
//!
//! # Graphs
//!
//! A CUDA graph of `N` steps ([`graph_estimate`]) pays the host's launch cost once,
//! `GRAPH_LAUNCH_NS` = 2.5 µs, and each kernel node starts and drains in `GRAPH_NODE_NS` = 1 µs
//! instead of `t_launch`: `t_graph = GRAPH_LAUNCH_NS + Σ (t_i − t_launch + GRAPH_NODE_NS)`. The same
//! steps launched one by one on a stream are paced by the host when a step is shorter than its
//! launch, `HOST_LAUNCH_NS` = 2.5 µs: `t_one_by_one = Σ max(t_i, HOST_LAUNCH_NS)`. These three
//! figures are assumptions of the order NVIDIA publishes for recent drivers (a few µs per
//! `cudaLaunchKernel` on the host, about 1 µs between graph kernel nodes), not measurements of this
//! repository; `scripts/gpu-check.sh` measures both on a GPU.
//!
//! # What it ignores
//!
//! SASS other than the expansions above, instruction latencies and dependencies within a warp
//! other than global loads, L1 sharing between the blocks of an SM, the partitioned L2, the
//! cost of partial-sector stores in L2, clocks below boost, other kernels, and PCIe. It is
//! deterministic: the same counters give the same estimate everywhere.

use crate::counters::Counters;
use crate::gpus::{self, GpuModel};

/// Nanoseconds of a kernel's start and drain.
pub const LAUNCH_NS: f64 = 2000.0;
/// Sustained fraction of the datasheet DRAM bandwidth.
pub const DRAM_EFFICIENCY: f64 = 0.87;
/// L2 bytes per cycle per SM.
pub const L2_BYTES_PER_CLK_PER_SM: f64 = 32.0;
/// SM cycles between a block's last load returning and the next block's first load on the
/// same SM: the block's stores, exit and the next block's launch.
pub const BLOCK_TURNAROUND_CYCLES: f64 = 370.0;
/// The exponent of the smooth maximum that combines the terms.
pub const OVERLAP_P: f64 = 4.0;
/// The exponent that combines the latency and DRAM terms first.
pub const LATENCY_P: f64 = 2.0;

/// Host time of one stream launch (`cuLaunchKernel`, the CPU side): launches of steps
/// shorter than this are paced by the host.
pub const HOST_LAUNCH_NS: f64 = 2500.0;
/// Host time of one `cuGraphLaunch`, paid once for the whole graph.
pub const GRAPH_LAUNCH_NS: f64 = 2500.0;
/// A kernel node's start and drain inside a graph (a stream launch's is [`LAUNCH_NS`]).
pub const GRAPH_NODE_NS: f64 = 1000.0;

/// The estimate of a graph's steps, replayed as one graph and launched one by one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GraphEstimate {
    pub graph_ns: f64,
    pub one_by_one_ns: f64,
    /// The steps' own time without any launch overhead.
    pub work_ns: f64,
}

/// The estimate of a graph whose steps alone take `steps_ns` each (an [`Estimate::ns`] of a
/// launch, or [`copy_ns`]; both include [`LAUNCH_NS`]).
pub fn graph_estimate(steps_ns: &[f64]) -> GraphEstimate {
    let work_ns: f64 = steps_ns.iter().map(|t| (t - LAUNCH_NS).max(0.0)).sum();
    GraphEstimate {
        graph_ns: GRAPH_LAUNCH_NS + work_ns + GRAPH_NODE_NS * steps_ns.len() as f64,
        one_by_one_ns: steps_ns.iter().map(|t| t.max(HOST_LAUNCH_NS)).sum(),
        work_ns,
    }
}

/// A device-to-device copy of `bytes` on `g`: read and written at the sustained bandwidth.
pub fn copy_ns(bytes: u64, g: &GpuModel) -> f64 {
    LAUNCH_NS + 2.0 * bytes as f64 / (DRAM_EFFICIENCY * g.dram_gb_s.max(1.0))
}

/// What bounds a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Launch,
    Issue,
    Pipe,
    L1,
    Shared,
    L2,
    Dram,
    Latency,
    Atomics,
}

impl Bound {
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Launch => "launch overhead",
            Bound::Issue => "instruction issue",
            Bound::Pipe => "a functional unit",
            Bound::L1 => "L1 throughput",
            Bound::Shared => "shared memory",
            Bound::L2 => "L2 bandwidth",
            Bound::Dram => "DRAM bandwidth",
            Bound::Latency => "memory latency",
            Bound::Atomics => "serialised atomics",
        }
    }
    /// A short name for breakdowns ("DRAM 91%").
    pub fn short(self) -> &'static str {
        match self {
            Bound::Launch => "launch",
            Bound::Issue => "issue",
            Bound::Pipe => "pipe",
            Bound::L1 => "L1",
            Bound::Shared => "shared",
            Bound::L2 => "L2",
            Bound::Dram => "DRAM",
            Bound::Latency => "latency",
            Bound::Atomics => "atomics",
        }
    }
}

/// The shape and resources of a launch, for the estimate.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchShape {
    pub block_threads: u32,
    pub registers: u32,
    /// Static + dynamic shared memory per block.
    pub shared_bytes: u32,
}

/// An estimate of one launch on one GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub gpu: String,
    /// The estimated duration, ns.
    pub ns: f64,
    /// What bounds it (the largest term).
    pub bound: Bound,
    /// Every term, ns (launch first), in the order of [`Bound`].
    pub terms: Vec<(Bound, f64)>,
    /// DRAM bytes over the estimated time, GB/s, and that as a share of the datasheet peak.
    pub dram_gb_s: f64,
    pub dram_pct_of_peak: f64,
}

impl Estimate {
    /// "DRAM 91%, issue 12%, …": each term's share of the estimate, largest first, terms
    /// under 1% left out.
    pub fn breakdown(&self) -> String {
        let mut t: Vec<(Bound, f64)> = self.terms.clone();
        t.sort_by(|a, b| b.1.total_cmp(&a.1));
        t.iter()
            .filter(|(_, ns)| *ns >= 0.01 * self.ns)
            .map(|(b, ns)| format!("{} {:.0}%", b.short(), 100.0 * ns / self.ns))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Warp instructions per cycle per SM of each pipe: (fp32, fp64, integer, special function,
/// load/store). fp32 and fp64 lanes per SM from the architecture whitepapers (V100, A100,
/// H100: 64/32, 64/32, 128/64 fp32/fp64 lanes; Turing T4: 64/2; GA102, AD102, AD104: 128/2).
fn pipe_rates(g: &GpuModel) -> (f64, f64, f64, f64, f64) {
    let (fp32_lanes, fp64_lanes) = match g.sm {
        70 | 80 => (64.0, 32.0),
        90 => (128.0, 64.0),
        75 => (64.0, 2.0),
        _ => (128.0, 2.0),
    };
    (fp32_lanes / 32.0, fp64_lanes / 32.0, 2.0, 0.5, 1.0)
}

/// Load latencies of one architecture, SM cycles: an L1 hit, an L2 hit, a DRAM access
/// (pointer chases of one thread, `benches/published/latencies.csv`: markdewing/AI_kernels
/// latency/README.md and RRZE-HPC/gpu-benches gpu-latency for V100, A100, H100, GH200 and the
/// RTX 4090). Architectures without a published figure take their nearest relative's: Turing
/// Volta's, GA10x Ada's, Blackwell Hopper's.
pub fn latency_cycles(g: &GpuModel) -> (f64, f64, f64) {
    match g.sm {
        70 | 72 | 75 => (32.0, 215.0, 445.0),
        80 => (36.0, 208.0, 551.0),
        86 | 87 | 89 => (40.0, 296.0, 636.0),
        _ => (36.0, 285.0, 695.0),
    }
}

/// The L1 data cache and shared memory of one SM together, bytes (the architecture
/// whitepapers: Volta 128 KiB, Turing 96 KiB, GA100 192 KiB, GA10x and AD10x 128 KiB, Hopper
/// and Blackwell 256 KiB, consumer Blackwell 128 KiB).
pub fn l1_and_shared_bytes(g: &GpuModel) -> u64 {
    1024 * match g.sm {
        70 | 72 => 128,
        75 => 96,
        80 => 192,
        90 | 100 | 103 => 256,
        _ => 128,
    }
}

/// The L1 a block of a launch has to itself (`CounterConfig::l1_bytes_per_block`): its SM's
/// L1 and shared memory less the shared memory of the resident blocks, shared by them.
pub fn l1_bytes_per_block(g: &GpuModel, resident_blocks: u32, shared_per_block: u32) -> u64 {
    let n = u64::from(resident_blocks.max(1));
    l1_and_shared_bytes(g).saturating_sub(n * u64::from(shared_per_block)) / n
}

/// Global atomic updates a 128-byte line takes per cycle, by architecture: same-address float
/// `atomicAdd` on an RTX 3090 (benches/published S4 k1: 2^23 updates in 13.56 ms at 1.695 GHz,
/// 0.37 a cycle) and a 256-bin histogram of random bytes on an H100 (S3: 2^30 updates into 8
/// lines in 276 ms at 1.98 GHz, 0.25 a cycle per line).
pub fn atomic_lanes_per_clk_per_line(g: &GpuModel) -> f64 {
    match g.sm {
        90.. => 0.25,
        _ => 0.37,
    }
}

/// The estimate of a launch with counters `c` and shape `s` on `g`.
pub fn estimate(c: &Counters, s: &LaunchShape, g: &GpuModel) -> Estimate {
    let sms = f64::from(g.sms.max(1));
    let f = f64::from(g.boost_clock_mhz.max(1)) * 1e-3; // cycles per ns
    let blocks = c.blocks.max(1) as f64;
    let busiest = (c.blocks.max(1).div_ceil(u64::from(g.sms.max(1)))) as f64;
    let per_sm = |x: u64| x as f64 / blocks * busiest;
    let t = &c.total;
    let m = &c.mix;

    let sass = t.sass_inst_estimate.max(t.inst_executed);
    let issue = per_sm(sass) / (4.0 * f);
    let (r32, r64, rint, rsfu, rlsu) = pipe_rates(g);
    let lsu = m.load_store + m.shared + m.atomic;
    let extra_int = sass - t.inst_executed; // expanded divisions run on the integer pipe
    let pipe = [
        per_sm(m.fp32) / r32,
        per_sm(m.fp64) / r64,
        per_sm(m.integer + extra_int) / rint,
        per_sm(m.sfu) / rsfu,
        per_sm(lsu) / rlsu,
    ]
    .into_iter()
    .fold(0.0, f64::max)
        / f;
    let sectors = t.global_ld_sectors + t.global_st_sectors + t.global_atom_sectors;
    let requests = t.global_ld_requests + t.global_st_requests + t.global_atom_requests;
    let l1 = (per_sm(sectors) / 4.0).max(per_sm(requests)) / f;
    let shared = per_sm(
        t.shared_ld_wavefronts
            + t.shared_st_wavefronts
            + t.shared_atom_wavefronts.max(t.shared_atom_serialized),
    ) / f;
    let l2 = c.l2_sectors as f64 * 32.0 / (L2_BYTES_PER_CLK_PER_SM * sms * f);
    let dram_bytes = (c.dram_read_bytes + c.dram_write_bytes) as f64;
    let dram = dram_bytes / (DRAM_EFFICIENCY * g.dram_gb_s.max(1.0)); // GB/s = bytes/ns
    let occ = gpus::occupancy(g, s.registers, s.shared_bytes, s.block_threads.max(1));
    let resident_blocks = occ.active_blocks_per_sm;
    let latency = {
        let warps = c.warps.max(1) as f64;
        let resident = f64::from(occ.active_warps_per_sm.max(1));
        let rounds = (warps / (sms * resident)).ceil();
        let hit = if c.l2_sectors > 0 && c.l2_exact {
            c.l2_hit_sectors as f64 / c.l2_sectors as f64
        } else {
            0.0
        };
        let (l1_clk, l2_clk, dram_clk) = latency_cycles(g);
        let l1_hit = if t.global_ld_sectors > 0 {
            (c.l1_hit_sectors as f64 / t.global_ld_sectors as f64).min(1.0)
        } else {
            0.0
        };
        let beyond = hit * l2_clk + (1.0 - hit) * dram_clk;
        let l = (l1_hit * l1_clk + (1.0 - l1_hit) * beyond) / f;
        let batches = t.global_ld_batches as f64 / warps;
        // A block's warps wait for their loads, then the block drains (its stores must be
        // acknowledged by L2 before its slot is free) and the next starts.
        let mut turnaround = if t.global_ld_requests > 0 {
            BLOCK_TURNAROUND_CYCLES
        } else {
            0.0
        };
        if t.global_st_requests > 0 {
            turnaround += l2_clk;
        }
        rounds * (batches * l + turnaround / f)
    };
    // Work between a block's barriers waits for the loads before them: with barriers a
    // block's shared-memory passes add to its chain of waits instead of overlapping it; the
    // other blocks resident on its SM fill the shared pipe meanwhile, so the chain grows by
    // one block's share.
    let latency = if t.barriers > 0 {
        latency + shared / f64::from(resident_blocks.max(1))
    } else {
        latency
    };
    let atomics = {
        let lanes = t.global_atom_lanes as f64;
        let global = if c.atom_lines > 0 {
            // The updates of the launch contend for its lines; each line takes a few a cycle.
            let rate = (c.atom_lines as f64 * atomic_lanes_per_clk_per_line(g)).min(32.0 * sms);
            lanes / (rate * f)
        } else {
            let ser = t.global_atom_serialized as f64;
            let a = ser / (t.global_atom_requests.max(1) as f64);
            ser * a / (32.0 * f)
        };
        let shared = per_sm(t.shared_atom_serialized) / f;
        global.max(shared)
    };
    let terms = vec![
        (Bound::Launch, LAUNCH_NS),
        (Bound::Issue, issue),
        (Bound::Pipe, pipe),
        (Bound::L1, l1),
        (Bound::Shared, shared),
        (Bound::L2, l2),
        (Bound::Dram, dram),
        (Bound::Latency, latency),
        (Bound::Atomics, atomics),
    ];
    let (bound, worst) = terms[1..]
        .iter()
        .copied()
        .fold((Bound::Launch, 0.0), |a, b| if b.1 > a.1 { b } else { a });
    // The resources overlap, but not perfectly: a smooth maximum (the p-norm) of the terms,
    // with latency and DRAM bandwidth first combined more softly (LATENCY_P): loads in
    // flight and the bytes they bring share each round's time.
    let pnorm = |xs: &[f64], p: f64| {
        let top = xs.iter().copied().fold(0.0, f64::max);
        if top <= 0.0 {
            return 0.0;
        }
        xs.iter()
            .map(|x| (x / top).powf(p))
            .sum::<f64>()
            .powf(1.0 / p)
            * top
    };
    let memory = pnorm(&[dram, latency], LATENCY_P);
    let combined = pnorm(&[issue, pipe, l1, shared, l2, memory, atomics], OVERLAP_P);
    let ns = LAUNCH_NS + combined;
    let bound = if worst < LAUNCH_NS {
        Bound::Launch
    } else {
        bound
    };
    let dram_gb_s = dram_bytes / ns;
    Estimate {
        gpu: g.name.to_string(),
        ns,
        bound,
        terms,
        dram_gb_s,
        dram_pct_of_peak: 100.0 * dram_gb_s / g.dram_gb_s.max(1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::{InstCounts, InstMix};

    fn counters(blocks: u64, warps: u64) -> Counters {
        Counters {
            blocks,
            warps,
            threads: warps * 32,
            total: InstCounts::default(),
            mix: InstMix::default(),
            l2_sectors: 0,
            l2_hit_sectors: 0,
            dram_read_bytes: 0,
            dram_write_bytes: 0,
            l2_bytes: 0,
            l2_exact: true,
            per_pc: Vec::new(),
            atom_lines: 0,
            l1_hit_sectors: 0,
            sampled: None,
            read_pages: Vec::new(),
            written_pages: Vec::new(),
            per_block: Vec::new(),
        }
    }

    fn shape() -> LaunchShape {
        LaunchShape {
            block_threads: 256,
            registers: 32,
            shared_bytes: 0,
        }
    }

    fn h200() -> &'static GpuModel {
        gpus::find("H200").expect("H200")
    }

    #[test]
    fn a_graph_of_tiny_steps_saves_the_host_launch_cost_and_a_long_step_hides_it() {
        // 100 empty kernels: one by one they are paced by the host (2.5 µs each); as a graph
        // they cost one graph launch and 1 µs a node.
        let tiny = vec![LAUNCH_NS; 100];
        let e = graph_estimate(&tiny);
        assert_eq!(e.one_by_one_ns, 100.0 * HOST_LAUNCH_NS);
        assert_eq!(e.graph_ns, GRAPH_LAUNCH_NS + 100.0 * GRAPH_NODE_NS);
        assert_eq!(e.work_ns, 0.0);
        // One 1 ms kernel: the overheads are noise either way.
        let long = graph_estimate(&[1e6]);
        assert!((long.graph_ns - long.one_by_one_ns).abs() / long.one_by_one_ns < 0.01);
        assert!(long.graph_ns > 1e6 - LAUNCH_NS);
        // A 1 MB copy on H200 moves 2 MB at 75% of 4.8 TB/s.
        let c = copy_ns(1_000_000, h200());
        let want = LAUNCH_NS + 2e6 / (DRAM_EFFICIENCY * h200().dram_gb_s);
        assert!((c - want).abs() < 1e-6, "{c} vs {want}");
    }

    #[test]
    fn a_pure_bandwidth_launch_is_bytes_over_sustained_bandwidth_plus_overhead() {
        let mut c = counters(132 * 8, 132 * 64);
        c.dram_read_bytes = 600_000_000;
        c.dram_write_bytes = 300_000_000;
        let e = estimate(&c, &shape(), h200());
        let want = LAUNCH_NS + 900_000_000.0 / (DRAM_EFFICIENCY * 4800.0);
        assert!((e.ns - want).abs() < 1e-6, "{} vs {want}", e.ns);
        assert_eq!(e.bound, Bound::Dram);
        assert!((e.dram_pct_of_peak - 100.0 * 900e6 / e.ns / 4800.0).abs() < 1e-9);
        // Half the bandwidth doubles the DRAM time.
        let mut slow = h200().clone();
        slow.dram_gb_s /= 2.0;
        let e2 = estimate(&c, &shape(), &slow);
        assert!(((e2.ns - LAUNCH_NS) - 2.0 * (e.ns - LAUNCH_NS)).abs() < 1e-6);
        assert!(e.breakdown().starts_with("DRAM "), "{}", e.breakdown());
    }

    #[test]
    fn an_issue_bound_launch_is_its_instructions_over_the_issue_rate() {
        // One block per SM, 4e6 warp instructions each: 4e6 / (4 per cycle) / 1.98 GHz.
        let mut c = counters(132, 132 * 8);
        c.total.inst_executed = 132 * 4_000_000;
        let e = estimate(&c, &shape(), h200());
        let want = LAUNCH_NS + 4_000_000.0 / (4.0 * 1.98);
        assert!((e.ns - want).abs() < 1e-6, "{} vs {want}", e.ns);
        assert_eq!(e.bound, Bound::Issue);
        // 133 blocks: the busiest SM runs two, the last wave's tail doubles the time.
        let mut c2 = c.clone();
        c2.blocks = 133;
        c2.total.inst_executed = 133 * 4_000_000;
        let e2 = estimate(&c2, &shape(), h200());
        assert!(((e2.ns - LAUNCH_NS) - 2.0 * (want - LAUNCH_NS)).abs() < 1e-6);
    }

    #[test]
    fn occupancy_limits_latency_hiding() {
        // 132 * 64 * 4 warps of 10 loads each, 5 batches (two loads in flight at a time), all
        // from DRAM (no L2 hits).
        let warps = 132 * 64 * 4;
        let mut c = counters(warps / 8, warps);
        c.total.global_ld_requests = warps * 10;
        c.total.global_ld_batches = warps * 5;
        c.l2_sectors = 1;
        let g = h200();
        let f = f64::from(g.boost_clock_mhz) * 1e-3;
        let (_, l2_clk, dram_clk) = latency_cycles(g);
        let round = |l: f64| 5.0 * l / f + BLOCK_TURNAROUND_CYCLES / f;
        let full = estimate(&c, &shape(), g);
        // 64 warps resident: 4 rounds.
        // (The other terms, small here, add a little through the smooth maximum.)
        let close = |a: f64, b: f64| (a - b).abs() < 1e-2 * b;
        let want = LAUNCH_NS + 4.0 * round(dram_clk);
        assert!(close(full.ns, want), "{} vs {want}", full.ns);
        assert_eq!(full.bound, Bound::Latency);
        // 128 registers a thread: 2 blocks of 8 warps resident (16 warps), 16 rounds.
        let heavy = LaunchShape {
            registers: 128,
            ..shape()
        };
        let e = estimate(&c, &heavy, g);
        let want = LAUNCH_NS + 16.0 * round(dram_clk);
        assert!(close(e.ns, want), "{} vs {want}", e.ns);
        // Served by L2 instead: the L2 latency.
        c.l2_hit_sectors = 1;
        let hit = estimate(&c, &shape(), g);
        assert!(close(hit.ns, LAUNCH_NS + 4.0 * round(l2_clk)));
        // Dependent loads (one per batch) wait about twice as long as pairs in flight (the
        // turnaround stays).
        c.total.global_ld_batches = warps * 10;
        let dep = estimate(&c, &shape(), g);
        assert!(dep.ns - LAUNCH_NS > 1.7 * (hit.ns - LAUNCH_NS));
    }

    #[test]
    fn same_address_atomics_serialise_and_distinct_ones_do_not() {
        let mut one = counters(132, 132 * 8);
        one.total.global_atom_requests = 1000;
        one.total.global_atom_lanes = 32_000;
        one.total.global_atom_serialized = 32_000; // every lane on one word
        let e = estimate(&one, &shape(), h200());
        assert!((e.ns - (LAUNCH_NS + 32_000.0 / 1.98)).abs() < 1e-3 * e.ns);
        assert_eq!(e.bound, Bound::Atomics);
        let mut spread = one.clone();
        spread.total.global_atom_serialized = 1000; // all distinct
        let e2 = estimate(&spread, &shape(), h200());
        let term = |e: &Estimate, b: Bound| e.terms.iter().find(|t| t.0 == b).map_or(0.0, |t| t.1);
        assert!((term(&e2, Bound::Atomics) - 1000.0 / (32.0 * 1.98)).abs() < 1e-6);
        // Updates of a few hot lines: each line takes a few a cycle.
        let mut hot = one.clone();
        hot.atom_lines = 8;
        let e4 = estimate(&hot, &shape(), h200());
        let want = 32_000.0 / (8.0 * atomic_lanes_per_clk_per_line(h200()) * 1.98);
        assert!((term(&e4, Bound::Atomics) - want).abs() < 1e-6);
        // A tiny launch is bound by the launch itself.
        let e3 = estimate(&counters(1, 1), &shape(), h200());
        assert_eq!((e3.ns, e3.bound), (LAUNCH_NS, Bound::Launch));
    }
}
