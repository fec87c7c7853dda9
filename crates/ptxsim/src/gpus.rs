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
        // 12.0 (consumer Blackwell): 48 warps, 24 blocks, 100 KB/SM, 99 KB/block
        // (`cuda_occupancy.h` 12.9: cudaOccMaxBlocksPerMultiprocessor case 12 → 24, shared
        // carve-outs up to 100 KB; CCCL `arch_traits.h` sm_120: 1536 threads, 24 blocks).
        120 => (48, 24, 100 * KIB, 99 * KIB, KIB, 128),
        // 9.0 and 10.0: 64 warps, 32 blocks, 228 KB/SM, 227 KB/block (`cuda_occupancy.h`
        // 12.9 case 10 and CCCL `arch_traits.h` sm_100 agree with 9.0).
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
///
/// Where an entry's figures come from a third-party copy of the vendor's table (spec databases
/// that reproduce it, `deviceQuery` output people posted) rather than the vendor's document
/// itself, its comment says so; where a figure is NVIDIA's usual one but no source was read,
/// the comment says "unconfirmed". `%gpu define` replaces an entry for a session.
pub static GPUS: [GpuModel; 22] = [
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
    // NVIDIA A100 datasheet (40 GB: 1555 GB/s HBM2) and the A100 whitepaper, Table 3 (108
    // SMs, 1410 MHz, 40 MB L2); deviceQuery of an A100 40 GB SXM4 reports 41,943,040 B of L2.
    gpu(
        "A100 40GB SXM4",
        "NVIDIA A100 SXM4 40 GB",
        80,
        108,
        1410,
        1555.0,
        40 * GB,
        40 * MIB,
    ),
    // NVIDIA A100 40GB PCIe product brief PB-10137-001 (the same GA100 configuration and
    // 1555 GB/s as the SXM4 part at 250 W; figures read from a third-party copy of its table).
    gpu(
        "A100 40GB PCIe",
        "NVIDIA A100 PCIe 40 GB",
        80,
        108,
        1410,
        1555.0,
        40 * GB,
        40 * MIB,
    ),
    // NVIDIA A10G (AWS g5): GA102, 24 GB GDDR6 at 600 GB/s (as the A10); 80 SMs, 1710 MHz
    // and 6 MB L2 are what deviceQuery on g5 instances reports (unconfirmed: no datasheet).
    gpu(
        "A10G",
        "NVIDIA A10G 24 GB",
        86,
        80,
        1710,
        600.0,
        24 * GB,
        6 * MIB,
    ),
    // NVIDIA Ampere GA102 GPU Architecture whitepaper V2.0 (with RTX A6000): 84 SMs, 1800 MHz
    // boost, 48 GB GDDR6 at 768 GB/s (16 Gbps x 384 bit), 6 MB L2 (read from a third-party copy).
    gpu(
        "RTX A6000",
        "NVIDIA RTX A6000 48 GB",
        86,
        84,
        1800,
        768.0,
        48 * GB,
        6 * MIB,
    ),
    // GeForce RTX 3060 (GA106): 28 SMs (3584 cores), 12 GB GDDR6 at 360 GB/s (15 Gbps x 192
    // bit), 3 MB L2; 1777 MHz boost is NVIDIA's spec-page figure (unconfirmed).
    gpu(
        "RTX 3060",
        "NVIDIA GeForce RTX 3060 12 GB",
        86,
        28,
        1777,
        360.0,
        12 * GB,
        3 * MIB,
    ),
    // GA102 whitepaper Table 1 (GeForce RTX 3080): 68 SMs, 1710 MHz, 10 GB GDDR6X at 760 GB/s
    // (19 Gbps x 320 bit), 5 MB L2 (512 KB per 32-bit controller; L2 unconfirmed this time).
    gpu(
        "RTX 3080",
        "NVIDIA GeForce RTX 3080 10 GB",
        86,
        68,
        1710,
        760.0,
        10 * GB,
        5 * MIB,
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
    // Ada whitepaper appendix (GeForce RTX 4060, AD107): 24 SMs, 2460 MHz, 8 GB GDDR6 at 272
    // GB/s (17 Gbps x 128 bit), 24 MB L2 (read from third-party copies of the table).
    gpu(
        "RTX 4060",
        "NVIDIA GeForce RTX 4060 8 GB",
        89,
        24,
        2460,
        272.0,
        8 * GB,
        24 * MIB,
    ),
    // Ada whitepaper appendix (GeForce RTX 4080 16 GB, AD103): 76 SMs, 2505 MHz, GDDR6X at
    // 716.8 GB/s (22.4 Gbps x 256 bit), 64 MB L2 (read from third-party copies of the table).
    gpu(
        "RTX 4080",
        "NVIDIA GeForce RTX 4080 16 GB",
        89,
        76,
        2505,
        716.8,
        16 * GB,
        64 * MIB,
    ),
    // NVIDIA L40S datasheet: 142 SMs (18,176 CUDA cores), 2520 MHz, 48 GB GDDR6 at 864 GB/s.
    // L2: 96 MB, measured on the L40 (the same AD102 configuration; arXiv 2606.22588); the
    // datasheet gives none.
    gpu(
        "L40S",
        "NVIDIA L40S 48 GB",
        89,
        142,
        2520,
        864.0,
        48 * GB,
        96 * MIB,
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
    // H100 whitepaper Table 3 / H100 PCIe product brief PB-11133-001: 114 SMs, 80 GB HBM2e
    // at 2000 GB/s, 50 MB L2 (read from a copy of NVIDIA's SXM-vs-PCIe table); 1755 MHz boost.
    gpu(
        "H100 PCIe",
        "NVIDIA H100 PCIe 80 GB",
        90,
        114,
        1755,
        2000.0,
        80 * GB,
        50 * MIB,
    ),
    // NVIDIA H100 datasheet, H100 NVL column: 94 GB HBM3 at 3.9 TB/s; 132 SMs (16,896 CUDA
    // cores) of GH100 with its 50 MB L2; 1785 MHz boost (unconfirmed).
    gpu(
        "H100 NVL",
        "NVIDIA H100 NVL 94 GB",
        90,
        132,
        1785,
        3900.0,
        94 * GB,
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
    // NVIDIA HGX/DGX B200: 180 GB HBM3e at 8 TB/s per GPU (nvidia-smi on an HGX B200 node
    // reports 179 GB); 148 SMs, about 1965 MHz and 126 MB L2 are the usual figures
    // (unconfirmed: a device check would settle them).
    gpu(
        "B200",
        "NVIDIA B200 180 GB",
        100,
        148,
        1965,
        8000.0,
        180 * GB,
        126 * MIB,
    ),
    // NVIDIA RTX Blackwell GPU architecture whitepaper (GeForce RTX 5060, GB206): 30 SMs
    // (3840 cores), 2497 MHz, 8 GB GDDR7 at 448 GB/s (28 Gbps x 128 bit); 32 MB L2
    // (unconfirmed).
    gpu(
        "RTX 5060",
        "NVIDIA GeForce RTX 5060 8 GB",
        120,
        30,
        2497,
        448.0,
        8 * GB,
        32 * MIB,
    ),
    // RTX Blackwell whitepaper (GeForce RTX 5090, GB202): 170 SMs (21,760 cores), 32 GB
    // GDDR7 at 1792 GB/s (28 Gbps x 512 bit); 2407 MHz and 96 MB L2 (unconfirmed).
    gpu(
        "RTX 5090",
        "NVIDIA GeForce RTX 5090 32 GB",
        120,
        170,
        2407,
        1792.0,
        32 * GB,
        96 * MIB,
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

/// Whether two GPU names name the same GPU, as [`find`] compares them (case, spaces, dashes
/// and the vendor's prefixes aside).
pub fn names_match(a: &str, b: &str) -> bool {
    let (a, b) = (squash(a), squash(b));
    !a.is_empty() && a == b
}

/// The table entry for a device name as the driver reports it (`"NVIDIA H200"`, `"Tesla T4"`,
/// `"NVIDIA A100-SXM4-80GB"`, `"NVIDIA GeForce RTX 4090"`), matching whole words only (so an
/// `"NVIDIA L40S"` is not an L4).
///
/// Every word of the entry's name must be a word of the device's name (or two of them run
/// together: `RTX4090`); of the entries that match, the one with most words wins, so
/// `"NVIDIA A100-PCIE-40GB"` is the `A100 40GB PCIe` and `"NVIDIA H100 PCIe"` the `H100 PCIe`.
pub fn for_device_name(device: &str) -> Option<&'static GpuModel> {
    let split = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(|w| w.to_ascii_lowercase())
            .collect()
    };
    let words = split(device);
    let pairs: Vec<String> = words
        .windows(2)
        .map(|w| format!("{}{}", w[0], w[1]))
        .collect();
    let has = |w: &String| words.contains(w) || pairs.contains(w);
    GPUS.iter()
        .filter_map(|g| {
            let name = split(&g.name);
            let whole = squash(&g.name);
            let matches = name.iter().all(has) || pairs.contains(&whole);
            matches.then_some((name.len(), g))
        })
        .max_by_key(|(n, _)| *n)
        .map(|(_, g)| g)
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
    let known = [70, 75, 80, 86, 89, 90, 100, 120];
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

/// What `%gpu define` gives for a GPU the table lacks.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuSpec {
    pub name: String,
    /// Compute capability as one number (86 for 8.6).
    pub sm: u32,
    pub sms: u32,
    pub boost_clock_mhz: u32,
    pub dram_gb_s: f64,
    pub l2_bytes: u64,
    pub dram_bytes: u64,
}

/// A model for a GPU the table lacks, from its figures: the per-SM limits of its compute
/// capability (the nearest known one at or below it), checked for sense. Err names the figure
/// that is out of range.
pub fn define(spec: &GpuSpec) -> Result<GpuModel, String> {
    let check = |what: &str, v: f64, lo: f64, hi: f64| {
        if v.is_finite() && v >= lo && v <= hi {
            Ok(())
        } else {
            Err(format!("{what} = {v} is out of range ({lo} to {hi})"))
        }
    };
    if spec.name.trim().is_empty() {
        return Err("the GPU needs a name".into());
    }
    check("cc", f64::from(spec.sm) / 10.0, 7.0, 12.9)?;
    check("sms", f64::from(spec.sms), 1.0, 1024.0)?;
    check("clock_mhz", f64::from(spec.boost_clock_mhz), 100.0, 5000.0)?;
    check("dram_gb_s", spec.dram_gb_s, 1.0, 100_000.0)?;
    check("l2_mib", spec.l2_bytes as f64 / MIB as f64, 0.0, 4096.0)?;
    let mut g = from_device(
        spec.name.trim(),
        spec.sm,
        spec.sms,
        spec.boost_clock_mhz,
        spec.dram_gb_s,
        spec.dram_bytes,
        spec.l2_bytes,
    );
    g.product = Cow::Owned(format!("{} (defined with %gpu define)", spec.name.trim()));
    Ok(g)
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
            "T4",
            "V100",
            "A100",
            "A100 40GB SXM4",
            "A100 40GB PCIe",
            "A10G",
            "RTX A6000",
            "RTX 3060",
            "RTX 3080",
            "L4",
            "L40S",
            "RTX 3090",
            "RTX 4060",
            "RTX 4080",
            "RTX 4090",
            "H100",
            "H100 PCIe",
            "H100 NVL",
            "H200",
            "B200",
            "RTX 5060",
            "RTX 5090",
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
        assert_eq!(GPUS.len(), 22);
        // Names are distinct as `find` compares them.
        for (i, a) in GPUS.iter().enumerate() {
            for b in &GPUS[i + 1..] {
                assert!(!names_match(&a.name, &b.name), "{} ~ {}", a.name, b.name);
            }
        }
        let b = get("RTX 5090");
        assert_eq!(
            (b.sm, b.max_warps_per_sm, b.max_blocks_per_sm),
            (120, 48, 24)
        );
        assert_eq!(b.shared_per_sm_bytes, 100 * 1024);
        assert_eq!(get("B200").max_warps_per_sm, 64);
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
        assert_eq!(name("NVIDIA L40S").as_deref(), Some("L40S"));
        assert_eq!(name("NVIDIA RTX A6000").as_deref(), Some("RTX A6000"));
        assert_eq!(
            name("NVIDIA A100-PCIE-40GB").as_deref(),
            Some("A100 40GB PCIe")
        );
        assert_eq!(
            name("NVIDIA A100-SXM4-40GB").as_deref(),
            Some("A100 40GB SXM4")
        );
        assert_eq!(name("NVIDIA H100 PCIe").as_deref(), Some("H100 PCIe"));
        assert_eq!(name("NVIDIA H100 NVL").as_deref(), Some("H100 NVL"));
        assert_eq!(name("NVIDIA GeForce RTX 5090").as_deref(), Some("RTX 5090"));
        assert_eq!(name("NVIDIA A10G").as_deref(), Some("A10G"));
        assert_eq!(name("NVIDIA B200").as_deref(), Some("B200"));
        assert_eq!(name("NVIDIA A40"), None);
        let g = from_device("NVIDIA L40S", 89, 142, 2520, 864.0, 48 * GB, 96 * MIB);
        assert_eq!(
            (g.sm, g.sms, g.max_warps_per_sm, g.max_blocks_per_sm),
            (89, 142, 48, 24)
        );
        // A capability between known ones takes the limits of the one below it.
        assert_eq!(from_device("X", 103, 1, 1, 1.0, 1, 1).max_warps_per_sm, 64);
        let g = from_device("X", 121, 1, 1, 1.0, 1, 1);
        assert_eq!((g.max_warps_per_sm, g.max_blocks_per_sm), (48, 24));
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
