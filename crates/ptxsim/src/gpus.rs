//! Well-known NVIDIA GPUs as data, and the CUDA occupancy calculator's rules as a pure function.
//!
//! [`GPUS`] is the table that ptxsim's models size themselves from (the L2 model, a performance
//! estimate) and that nbcuda's `%gpu`/`%info` show: SM count, clocks, DRAM bandwidth, L2 size and
//! the per-SM limits of each compute capability. [`occupancy`] turns a kernel's resources
//! (registers per thread, shared memory per block) and a block size into the theoretical
//! occupancy, following `cuda_occupancy.h` (CUDA 12.9) rule for rule: registers are allocated per
//! warp in units of 256 and split over 4 sub-partitions, shared memory is rounded up to its
//! allocation unit after adding the 1 KiB the driver reserves per block on sm_80 and later, warps
//! per block are rounded up, and the SM's block limit applies. This module knows nothing of
//! Jupyter, NVRTC or the simulator's state.
//!
//! Sources of the figures (each entry repeats the ones it uses):
//! - per-SM limits: the CUDA C++ Programming Guide, "Features and Technical Specifications",
//!   table "Technical Specifications per Compute Capability" (registers per SM, warps per SM,
//!   blocks per SM, shared memory per SM and per block) and `cuda_occupancy.h`
//!   (`cudaOccSMemAllocationGranularity`: 256 B for 7.x, 128 B for 8.x/9.x;
//!   `cudaOccRegAllocationGranularity`: 256; `cudaOccSubPartitionsPerMultiprocessor`: 4;
//!   `cudaOccMaxBlocksPerMultiprocessor`);
//! - SMs, clocks, DRAM, L2: the vendor's architecture whitepaper or product datasheet named at
//!   each entry.

use std::borrow::Cow;

/// One GPU: what the occupancy rules and a performance model need to know.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuModel {
    /// Short name, as `%gpu` takes it: `"H200"`, `"RTX 4090"`.
    pub name: Cow<'static, str>,
    /// The product the figures are for: `"NVIDIA H200 SXM 141 GB"`.
    pub product: Cow<'static, str>,
    /// Compute capability as one number: 90 for sm_90.
    pub sm: u32,
    /// Streaming multiprocessors.
    pub sms: u32,
    pub boost_clock_mhz: u32,
    /// Peak DRAM bandwidth, GB/s (10^9 bytes per second).
    pub dram_gb_s: f64,
    pub dram_bytes: u64,
    pub l2_bytes: u64,
    /// Largest shared-memory carve-out of one SM.
    pub shared_per_sm_bytes: u32,
    /// Largest shared memory one block may use (opt-in above 48 KiB on sm_70 and later).
    pub max_shared_per_block_bytes: u32,
    /// Shared memory the driver reserves for every resident block (1 KiB on sm_80 and later).
    pub reserved_shared_per_block_bytes: u32,
    /// Shared memory is allocated per block in multiples of this.
    pub shared_alloc_unit: u32,
    pub regs_per_sm: u32,
    pub max_regs_per_block: u32,
    pub max_regs_per_thread: u32,
    /// Registers are allocated per warp in multiples of this.
    pub reg_alloc_unit: u32,
    /// The register file is split over this many sub-partitions (warp schedulers).
    pub reg_sub_partitions: u32,
    pub max_warps_per_sm: u32,
    pub max_blocks_per_sm: u32,
    pub max_threads_per_block: u32,
    pub warp_size: u32,
}

const KIB: u32 = 1024;
const MIB: u64 = 1024 * 1024;
const GB: u64 = 1_000_000_000;

/// The per-SM limits shared by every GPU of one compute capability (Programming Guide table
/// "Technical Specifications per Compute Capability"; granularities from `cuda_occupancy.h`).
const fn arch_limits(sm: u32, name: Cow<'static, str>, product: Cow<'static, str>) -> GpuModel {
    // (max warps/SM, max blocks/SM, shared/SM, max shared/block, reserved/block, alloc unit)
    let (warps, blocks, shared_sm, shared_block, reserved, unit) = match sm {
        // 7.0: 64 warps, 32 blocks, 96 KB shared/SM and per block (opt-in), 256 B units.
        70 => (64, 32, 96 * KIB, 96 * KIB, 0, 256),
        // 7.5: 32 warps, 16 blocks, 64 KB shared/SM and per block (opt-in).
        75 => (32, 16, 64 * KIB, 64 * KIB, 0, 256),
        // 8.0: 64 warps, 32 blocks, 164 KB/SM, 163 KB/block, 1 KB reserved, 128 B units.
        80 => (64, 32, 164 * KIB, 163 * KIB, KIB, 128),
        // 8.6: 48 warps, 16 blocks, 100 KB/SM, 99 KB/block.
        86 => (48, 16, 100 * KIB, 99 * KIB, KIB, 128),
        // 8.9: 48 warps, 24 blocks, 100 KB/SM, 99 KB/block.
        89 => (48, 24, 100 * KIB, 99 * KIB, KIB, 128),
        // 9.0: 64 warps, 32 blocks, 228 KB/SM, 227 KB/block.
        _ => (64, 32, 228 * KIB, 227 * KIB, KIB, 128),
    };
    GpuModel {
        name,
        product,
        sm,
        sms: 0,
        boost_clock_mhz: 0,
        dram_gb_s: 0.0,
        dram_bytes: 0,
        l2_bytes: 0,
        shared_per_sm_bytes: shared_sm,
        max_shared_per_block_bytes: shared_block,
        reserved_shared_per_block_bytes: reserved,
        shared_alloc_unit: unit,
        // 64 K 32-bit registers per SM and per block, 255 per thread: every capability 5.0+.
        regs_per_sm: 65536,
        max_regs_per_block: 65536,
        max_regs_per_thread: 255,
        reg_alloc_unit: 256,
        reg_sub_partitions: 4,
        max_warps_per_sm: warps,
        max_blocks_per_sm: blocks,
        max_threads_per_block: 1024,
        warp_size: 32,
    }
}

#[allow(clippy::too_many_arguments)]
const fn gpu(
    name: &'static str,
    product: &'static str,
    sm: u32,
    sms: u32,
    boost_clock_mhz: u32,
    dram_gb_s: f64,
    dram_bytes: u64,
    l2_bytes: u64,
) -> GpuModel {
    let mut g = arch_limits(sm, Cow::Borrowed(name), Cow::Borrowed(product));
    g.sms = sms;
    g.boost_clock_mhz = boost_clock_mhz;
    g.dram_gb_s = dram_gb_s;
    g.dram_bytes = dram_bytes;
    g.l2_bytes = l2_bytes;
    g
}

/// The GPUs nbcuda knows, oldest architecture first.
pub static GPUS: [GpuModel; 8] = [
    // NVIDIA Tesla V100 GPU Architecture whitepaper (2017), Table 1 (V100 SXM2): 80 SMs,
    // 1530 MHz boost, 900 GB/s HBM2, 16 GB, 6144 KB L2.
    gpu(
        "V100",
        "NVIDIA Tesla V100 SXM2 16 GB",
        70,
        80,
        1530,
        900.0,
        16 * GB,
        6 * MIB,
    ),
    // NVIDIA Turing GPU Architecture whitepaper (2018), Appendix A, Table 3 (Tesla T4) and the
    // T4 datasheet: 40 SMs, 1590 MHz boost, 320 GB/s GDDR6, 16 GB, 4 MB L2.
    gpu(
        "T4",
        "NVIDIA T4 16 GB",
        75,
        40,
        1590,
        320.0,
        16 * GB,
        4 * MIB,
    ),
    // NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), Table 3 (108 SMs, 1410 MHz
    // boost, 40 MB L2) and the A100 datasheet (80 GB SXM: 2039 GB/s HBM2e).
    gpu(
        "A100",
        "NVIDIA A100 SXM4 80 GB",
        80,
        108,
        1410,
        2039.0,
        80 * GB,
        40 * MIB,
    ),
    // NVIDIA Ampere GA102 GPU Architecture whitepaper (2020), Table 1 (GeForce RTX 3090):
    // 82 SMs, 1695 MHz boost, 936 GB/s GDDR6X, 24 GB, 6144 KB L2.
    gpu(
        "RTX 3090",
        "NVIDIA GeForce RTX 3090",
        86,
        82,
        1695,
        936.2,
        24 * GB,
        6 * MIB,
    ),
    // NVIDIA Ada GPU Architecture whitepaper (2022), Table 1 (GeForce RTX 4090): 128 SMs,
    // 2520 MHz boost, 1008 GB/s GDDR6X, 24 GB, 72 MB L2.
    gpu(
        "RTX 4090",
        "NVIDIA GeForce RTX 4090",
        89,
        128,
        2520,
        1008.0,
        24 * GB,
        72 * MIB,
    ),
    // NVIDIA L4 datasheet and Ada whitepaper, Table 4: 58 SMs (7424 CUDA cores), 2040 MHz
    // boost, 300 GB/s GDDR6, 24 GB, 48 MB L2.
    gpu(
        "L4",
        "NVIDIA L4 24 GB",
        89,
        58,
        2040,
        300.0,
        24 * GB,
        48 * MIB,
    ),
    // NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), Table 3 (H100 SXM5): 132 SMs,
    // 1980 MHz max boost, 50 MB L2; H100 datasheet: 80 GB HBM3 at 3.35 TB/s.
    gpu(
        "H100",
        "NVIDIA H100 SXM5 80 GB",
        90,
        132,
        1980,
        3350.0,
        80 * GB,
        50 * MIB,
    ),
    // NVIDIA H200 datasheet: 141 GB HBM3e at 4.8 TB/s; the same GH100 die as H100 SXM5
    // (132 SMs, 1980 MHz, 50 MB L2), as nvidia-smi and cuDeviceGetAttribute report on an H200
    // (benches/results/h200/gpu-check.log of this repository).
    gpu(
        "H200",
        "NVIDIA H200 SXM 141 GB",
        90,
        132,
        1980,
        4800.0,
        141 * GB,
        50 * MIB,
    ),
];

/// The model ptxsim uses unless told otherwise.
pub const DEFAULT_GPU: &str = "H200";

/// The default model (H200).
pub fn default_gpu() -> &'static GpuModel {
    // The table holds it; the index is the fallback that cannot fail.
    find(DEFAULT_GPU).unwrap_or(&GPUS[GPUS.len() - 1])
}

/// Lower case, letters and digits only, without the vendor's prefixes.
fn squash(name: &str) -> String {
    let s: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let mut s = s.as_str();
    for prefix in ["nvidia", "geforce", "tesla"] {
        s = s.strip_prefix(prefix).unwrap_or(s);
    }
    s.to_string()
}

/// The table entry called `name`, case- and space-insensitive: `"h200"`, `"RTX4090"`,
/// `"rtx 4090"`, `"rtx-4090"`, `"NVIDIA A100"` and a bare `"4090"` all work.
pub fn find(name: &str) -> Option<&'static GpuModel> {
    let want = squash(name);
    if want.is_empty() {
        return None;
    }
    GPUS.iter().find(|g| {
        let key = squash(&g.name);
        key == want || key.strip_prefix("rtx") == Some(want.as_str())
    })
}

/// The table entry for a device name as the driver reports it (`"NVIDIA H200"`, `"Tesla T4"`,
/// `"NVIDIA A100-SXM4-80GB"`, `"NVIDIA GeForce RTX 4090"`), matching whole words only (so an
/// `"NVIDIA L40S"` is not an L4).
pub fn for_device_name(device: &str) -> Option<&'static GpuModel> {
    let words: Vec<String> = device
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_ascii_lowercase())
        .collect();
    let pairs: Vec<String> = words
        .windows(2)
        .map(|w| format!("{}{}", w[0], w[1]))
        .collect();
    GPUS.iter().find(|g| {
        let key = squash(&g.name);
        words.iter().chain(&pairs).any(|w| *w == key)
    })
}

/// A model for a GPU the table lacks, from what the driver reports: the per-SM limits of its
/// compute capability (the nearest known one at or below it) with its own SM count, clock and
/// memory.
#[allow(clippy::too_many_arguments)]
pub fn from_device(
    name: &str,
    sm: u32,
    sms: u32,
    boost_clock_mhz: u32,
    dram_gb_s: f64,
    dram_bytes: u64,
    l2_bytes: u64,
) -> GpuModel {
    let known = [70, 75, 80, 86, 89, 90];
    let base = known
        .iter()
        .rev()
        .find(|k| **k <= sm)
        .copied()
        .unwrap_or(70);
    let mut g = arch_limits(
        base,
        Cow::Owned(name.to_string()),
        Cow::Owned(format!("{name} (from the driver's attributes)")),
    );
    g.sm = sm;
    g.sms = sms;
    g.boost_clock_mhz = boost_clock_mhz;
    g.dram_gb_s = dram_gb_s;
    g.dram_bytes = dram_bytes;
    g.l2_bytes = l2_bytes;
    g
}

impl GpuModel {
    /// `"sm_90"`.
    pub fn arch(&self) -> String {
        format!("sm_{}", self.sm)
    }

    /// `"9.0"`.
    pub fn compute_capability(&self) -> String {
        format!("{}.{}", self.sm / 10, self.sm % 10)
    }

    /// Threads one SM holds at a time.
    pub fn max_threads_per_sm(&self) -> u32 {
        self.max_warps_per_sm * self.warp_size
    }
}

/// What bounds the number of resident blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limiter {
    /// The SM's warp slots (threads per SM).
    Warps,
    /// The SM's maximum resident blocks.
    Blocks,
    /// The register file.
    Registers,
    /// Shared memory.
    Shared,
}

impl Limiter {
    pub fn as_str(self) -> &'static str {
        match self {
            Limiter::Warps => "warps",
            Limiter::Blocks => "blocks",
            Limiter::Registers => "registers",
            Limiter::Shared => "shared memory",
        }
    }
}

impl std::fmt::Display for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Theoretical occupancy of one block size on one GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct Occupancy {
    pub block_threads: u32,
    /// Warps per block (threads rounded up to whole warps).
    pub warps_per_block: u32,
    pub active_blocks_per_sm: u32,
    pub active_warps_per_sm: u32,
    pub max_warps_per_sm: u32,
    /// Active warps / maximum warps, 0 to 1.
    pub fraction: f64,
    /// The limit that is reached first (ties: warps, blocks, registers, shared memory).
    pub limiter: Limiter,
    /// Blocks per SM each resource alone allows (`u32::MAX`: no limit, e.g. no shared memory
    /// before sm_80).
    pub limit_warps: u32,
    pub limit_blocks: u32,
    pub limit_registers: u32,
    pub limit_shared: u32,
    /// Registers allocated per block (per-warp allocation rounded up, times warps).
    pub registers_per_block: u32,
    /// Shared memory allocated per block (with the reserved KiB, rounded up to the unit).
    pub shared_per_block: u32,
}

impl Occupancy {
    /// Occupancy in percent.
    pub fn percent(&self) -> f64 {
        self.fraction * 100.0
    }
}

fn round_up(x: u64, unit: u64) -> u64 {
    if unit == 0 {
        x
    } else {
        x.div_ceil(unit) * unit
    }
}

/// Theoretical occupancy of blocks of `block_threads` threads using `regs_per_thread`
/// registers and `shared_bytes` shared memory (static + dynamic) on `gpu`, by the CUDA
/// occupancy calculator's rules (`cudaOccMaxActiveBlocksPerMultiprocessor` with the default
/// carve-out preference and an opt-in shared-memory limit). A block that cannot launch at all
/// (too many threads, registers or shared bytes) has 0 active blocks and names the limit.
pub fn occupancy(
    gpu: &GpuModel,
    regs_per_thread: u32,
    shared_bytes: u32,
    block_threads: u32,
) -> Occupancy {
    let warp = u64::from(gpu.warp_size.max(1));
    let warps_per_block = u64::from(block_threads).div_ceil(warp);
    // Warp slots: cudaOccMaxBlocksPerSMWarpsLimit.
    let limit_warps = if block_threads == 0 || block_threads > gpu.max_threads_per_block {
        0
    } else {
        u64::from(gpu.max_warps_per_sm) / warps_per_block
    };
    // Blocks: cudaOccMaxBlocksPerMultiprocessor.
    let limit_blocks = u64::from(gpu.max_blocks_per_sm);
    // Registers: cudaOccMaxBlocksPerSMRegsLimit (partitioned global caching off).
    let regs_per_warp = round_up(
        u64::from(regs_per_thread) * warp,
        u64::from(gpu.reg_alloc_unit),
    );
    let registers_per_block = regs_per_warp * warps_per_block;
    let parts = u64::from(gpu.reg_sub_partitions.max(1));
    let assumed = regs_per_warp * round_up(warps_per_block, parts);
    let limit_registers = if regs_per_thread > gpu.max_regs_per_thread
        || registers_per_block > u64::from(gpu.max_regs_per_block)
        || assumed > u64::from(gpu.max_regs_per_block)
    {
        0
    } else if regs_per_warp == 0 || warps_per_block == 0 {
        u64::from(u32::MAX)
    } else {
        let warps_per_part = u64::from(gpu.regs_per_sm) / parts / regs_per_warp;
        warps_per_part * parts / warps_per_block
    };
    // Shared memory: cudaOccMaxBlocksPerSMSmemLimit (default carve-out = the largest).
    let shared_per_block = round_up(
        u64::from(shared_bytes) + u64::from(gpu.reserved_shared_per_block_bytes),
        u64::from(gpu.shared_alloc_unit),
    );
    let per_block_limit =
        u64::from(gpu.max_shared_per_block_bytes) + u64::from(gpu.reserved_shared_per_block_bytes);
    let limit_shared = if shared_per_block > per_block_limit {
        0
    } else {
        u64::from(gpu.shared_per_sm_bytes)
            .checked_div(shared_per_block)
            .unwrap_or(u64::from(u32::MAX))
    };
    let limits = [
        (Limiter::Warps, limit_warps),
        (Limiter::Blocks, limit_blocks),
        (Limiter::Registers, limit_registers),
        (Limiter::Shared, limit_shared),
    ];
    let (limiter, blocks) =
        limits
            .iter()
            .copied()
            .fold((Limiter::Warps, u64::MAX), |best, (l, n)| {
                if n < best.1 {
                    (l, n)
                } else {
                    best
                }
            });
    let to_u32 = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
    let active_warps = blocks * warps_per_block;
    let max_warps = gpu.max_warps_per_sm;
    Occupancy {
        block_threads,
        warps_per_block: to_u32(warps_per_block),
        active_blocks_per_sm: to_u32(blocks),
        active_warps_per_sm: to_u32(active_warps),
        max_warps_per_sm: max_warps,
        fraction: if max_warps == 0 {
            0.0
        } else {
            (active_warps as f64 / f64::from(max_warps)).min(1.0)
        },
        limiter,
        limit_warps: to_u32(limit_warps),
        limit_blocks: to_u32(limit_blocks),
        limit_registers: to_u32(limit_registers),
        limit_shared: to_u32(limit_shared),
        registers_per_block: to_u32(registers_per_block),
        shared_per_block: to_u32(shared_per_block),
    }
}

/// The block sizes `%info` tabulates: 32, 64, …, 1024, up to `max_threads`.
pub fn table_block_sizes(max_threads: u32) -> Vec<u32> {
    [32, 64, 128, 256, 512, 1024]
        .into_iter()
        .filter(|b| *b <= max_threads)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(name: &str) -> &'static GpuModel {
        match find(name) {
            Some(g) => g,
            None => panic!("{name} is not in the table"),
        }
    }

    /// (blocks, warps, percent, limiter)
    fn occ(g: &GpuModel, regs: u32, shared: u32, block: u32) -> (u32, u32, f64, Limiter) {
        let o = occupancy(g, regs, shared, block);
        (
            o.active_blocks_per_sm,
            o.active_warps_per_sm,
            o.percent(),
            o.limiter,
        )
    }

    #[test]
    fn gpus_table_is_complete_and_findable() {
        for name in [
            "T4", "V100", "A100", "L4", "RTX 3090", "RTX 4090", "H100", "H200",
        ] {
            let g = get(name);
            assert_eq!(g.name, name);
            assert!(g.sms > 0 && g.boost_clock_mhz > 0 && g.dram_gb_s > 0.0 && g.l2_bytes > 0);
            assert!(g.shared_per_sm_bytes >= g.max_shared_per_block_bytes);
        }
        assert_eq!(get("h200").sm, 90);
        assert_eq!(get("RTX4090").name, "RTX 4090");
        assert_eq!(get("rtx 4090").sm, 89);
        assert_eq!(get("rtx-3090").sm, 86);
        assert_eq!(get("3090").name, "RTX 3090");
        assert_eq!(get("a100").sms, 108);
        assert_eq!(get("NVIDIA A100").sm, 80);
        assert_eq!(get("t4").max_warps_per_sm, 32);
        assert!(find("Z80").is_none());
        assert!(find("").is_none());
        assert!(find("H2000").is_none());
        assert_eq!(default_gpu().name, "H200");
        assert_eq!(default_gpu().arch(), "sm_90");
        assert_eq!(get("L4").compute_capability(), "8.9");
    }

    #[test]
    fn gpus_match_driver_device_names() {
        let name = |d: &str| for_device_name(d).map(|g| g.name.to_string());
        assert_eq!(name("NVIDIA H200").as_deref(), Some("H200"));
        assert_eq!(name("NVIDIA H100 80GB HBM3").as_deref(), Some("H100"));
        assert_eq!(name("NVIDIA A100-SXM4-80GB").as_deref(), Some("A100"));
        assert_eq!(name("Tesla T4").as_deref(), Some("T4"));
        assert_eq!(name("Tesla V100-SXM2-16GB").as_deref(), Some("V100"));
        assert_eq!(name("NVIDIA GeForce RTX 4090").as_deref(), Some("RTX 4090"));
        assert_eq!(name("NVIDIA L4").as_deref(), Some("L4"));
        assert_eq!(name("NVIDIA L40S"), None);
        assert_eq!(name("NVIDIA RTX A6000"), None);
        let g = from_device("NVIDIA L40S", 89, 142, 2520, 864.0, 48 * GB, 96 * MIB);
        assert_eq!(
            (g.sm, g.sms, g.max_warps_per_sm, g.max_blocks_per_sm),
            (89, 142, 48, 24)
        );
        // An unknown newer capability takes the newest known limits.
        assert_eq!(from_device("X", 100, 1, 1, 1.0, 1, 1).max_warps_per_sm, 64);
    }

    #[test]
    fn gpus_occupancy_sm90_h200() {
        let h = get("H200");
        // 32 regs, no shared, 256 threads: 8 warps/block. Warps 64/8 = 8; registers 32*32 =
        // 1024/warp, 16384/1024 = 16 warps per sub-partition * 4 = 64 warps / 8 = 8; shared
        // 0 + 1024 reserved = 1024 → 233472/1024 = 228; blocks 32. 8 blocks, 64 warps, 100%,
        // warps first (ties go to warps).
        assert_eq!(occ(h, 32, 0, 256), (8, 64, 100.0, Limiter::Warps));
        // 64 regs, 4224 B shared (float[32][33]), 128 threads: 4 warps. Warps 16; registers
        // 2048/warp → 8 warps per sub-partition → 32 / 4 = 8; shared 4224 + 1024 = 5248
        // (41 * 128) → 233472 / 5248 = 44; blocks 32. 8 blocks, 32 warps, 50%, registers.
        assert_eq!(occ(h, 64, 4224, 128), (8, 32, 50.0, Limiter::Registers));
        let o = occupancy(h, 64, 4224, 128);
        assert_eq!(
            (o.limit_warps, o.limit_registers, o.limit_shared),
            (16, 8, 44)
        );
        assert_eq!((o.registers_per_block, o.shared_per_block), (8192, 5248));
        // 40 regs, 1024 threads: 32 warps. Warps 2; registers 1280/warp, 16384/1280 = 12 per
        // sub-partition → 48 / 32 = 1. 1 block, 32 warps, 50%, registers.
        assert_eq!(occ(h, 40, 0, 1024), (1, 32, 50.0, Limiter::Registers));
        // 255 regs, 32 threads: 8160 → 8192/warp, 2 per sub-partition → 8 blocks of 1 warp.
        assert_eq!(occ(h, 255, 0, 32), (8, 8, 12.5, Limiter::Registers));
        // 16 regs, 48 KiB shared, 64 threads: shared 49152 + 1024 = 50176 → 233472 / 50176 = 4
        // blocks of 2 warps = 8 warps, 12.5%.
        assert_eq!(occ(h, 16, 48 * 1024, 64), (4, 8, 12.5, Limiter::Shared));
    }

    #[test]
    fn gpus_occupancy_sm75_t4() {
        let t = get("T4");
        // 32 regs, 256 threads: warps 32/8 = 4; registers 1024/warp → 64 warps / 8 = 8;
        // no shared and no reserve on sm_75 → unlimited; blocks 16. 4 blocks, 32 warps, 100%.
        assert_eq!(occ(t, 32, 0, 256), (4, 32, 100.0, Limiter::Warps));
        assert_eq!(occupancy(t, 32, 0, 256).limit_shared, u32::MAX);
        // 72 regs, 128 threads: 4 warps. Warps 8; registers 2304/warp, 16384/2304 = 7 per
        // sub-partition → 28 / 4 = 7. 7 blocks, 28 warps, 87.5%, registers.
        assert_eq!(occ(t, 72, 0, 128), (7, 28, 87.5, Limiter::Registers));
        // 40 regs, 20000 B shared, 64 threads: 2 warps. Warps 16; registers 1280/warp → 12 per
        // sub-partition → 48 / 2 = 24; shared 20000 → 20224 (79 * 256) → 65536 / 20224 = 3;
        // blocks 16. 3 blocks, 6 warps, 18.75%, shared memory.
        assert_eq!(occ(t, 40, 20000, 64), (3, 6, 18.75, Limiter::Shared));
        // 40 regs, 1024 threads: warps 1; registers 48 / 32 = 1. A tie: warps, 100%.
        assert_eq!(occ(t, 40, 0, 1024), (1, 32, 100.0, Limiter::Warps));
    }

    #[test]
    fn gpus_occupancy_block_limit_and_impossible_blocks() {
        let a = get("A100");
        // 32 threads = 1 warp; warps 64, registers 64, blocks 32 → 32 warps of 64 = 50%.
        assert_eq!(occ(a, 32, 0, 32), (32, 32, 50.0, Limiter::Blocks));
        // sm_86: 48 warps, 16 blocks. 64 threads, 32 regs: warps 24, blocks 16 → 32 of 48.
        let r = get("RTX 3090");
        let (b, w, p, l) = occ(r, 32, 0, 64);
        assert_eq!((b, w, l), (16, 32, Limiter::Blocks));
        assert!((p - 200.0 / 3.0).abs() < 1e-9);
        // Too many threads, registers or shared bytes: nothing launches.
        assert_eq!(occ(a, 32, 0, 2048), (0, 0, 0.0, Limiter::Warps));
        assert_eq!(occ(a, 0, 0, 0).0, 0);
        assert_eq!(occ(a, 256, 0, 32), (0, 0, 0.0, Limiter::Registers));
        // 128 regs * 1024 threads = 131072 > 65536 per block.
        assert_eq!(occ(a, 128, 0, 1024).3, Limiter::Registers);
        assert_eq!(occ(a, 128, 0, 1024).0, 0);
        assert_eq!(occ(a, 16, 200 * 1024, 32), (0, 0, 0.0, Limiter::Shared));
        assert_eq!(table_block_sizes(1024), [32, 64, 128, 256, 512, 1024]);
        assert_eq!(table_block_sizes(256), [32, 64, 128, 256]);
    }
}
