//! ptxsim's hardware-like counters (`LaunchConfig::counters`) on NVRTC-compiled kernels
//! (`kernels/counters.cu`, fixture `counters.ptx`), against counts computed by hand. Every
//! launch is counted with 1 and with 4 workers, and the two must agree exactly.

#[path = "common/mod.rs"]
mod common;

use common::*;
use ptxsim::counters::{CounterConfig, Counters, InstCounts};
use ptxsim::Dim3;

const SRC: &str = "counters";

/// The 1-based line of `kernels/counters.cu` in the body of `kernel` that contains `text`.
fn line_of(kernel: &str, text: &str) -> u32 {
    let p = crate_dir().join("kernels/counters.cu");
    let src = std::fs::read_to_string(&p).unwrap();
    let head = format!("void {kernel}(");
    let start = src
        .lines()
        .position(|l| l.contains(&head))
        .unwrap_or_else(|| panic!("no kernel {kernel} in counters.cu"));
    let at = src
        .lines()
        .skip(start)
        .position(|l| l.contains(text))
        .unwrap_or_else(|| panic!("no `{text}` in {kernel}"));
    (start + at) as u32 + 1
}

/// Launches `kernel` counted on 1 and on 4 workers; asserts the counters agree and returns them.
#[track_caller]
fn counted_with(
    c: &Ctx,
    kernel: &str,
    grid: Dim3,
    block: Dim3,
    args: &[Arg],
    config: CounterConfig,
) -> Counters {
    let mut got: Vec<Counters> = Vec::new();
    for threads in [1, 4] {
        let mut cfg = common::config(grid, block);
        cfg.threads = threads;
        cfg.counters = Some(config.clone());
        let r = c.launch_cfg(kernel, &cfg, args);
        assert_eq!((r.block_tier_blocks, r.jit), (0, false));
        got.push(*r.counters.expect("counters asked for"));
    }
    assert_eq!(
        got[0], got[1],
        "{kernel}: 1 and 4 workers count differently"
    );
    got.pop().unwrap()
}

#[track_caller]
fn counted(c: &Ctx, kernel: &str, grid: Dim3, block: Dim3, args: &[Arg]) -> Counters {
    counted_with(c, kernel, grid, block, args, CounterConfig::default())
}

/// (requests, sectors) of global loads and of global stores.
fn global(t: &InstCounts) -> [u64; 4] {
    [
        t.global_ld_requests,
        t.global_ld_sectors,
        t.global_st_requests,
        t.global_st_sectors,
    ]
}

// ld_stride on 2 blocks of 128 threads: 8 warps, each one load and one coalesced store request
// (32 lanes x 4 bytes = 128 aligned bytes = 4 sectors).
fn ld_stride(stride: i32, offset: i32) -> Counters {
    let c = Ctx::new(SRC, "ld_stride");
    let x = c.zeros::<f32>(256 * 32 + 1);
    let y = c.zeros::<f32>(256);
    let args = [Arg::Ptr(x), Arg::Ptr(y), Arg::I32(stride), Arg::I32(offset)];
    let k = counted(&c, "ld_stride", d1(2), d1(128), &args);
    // Stores: 8 requests x 4 sectors; 256 x 4 bytes stored, written back to DRAM at the end.
    assert_eq!(k.total.global_st_requests, 8);
    assert_eq!(k.total.global_st_sectors, 32);
    assert_eq!(k.total.global_st_bytes, 1024);
    assert_eq!(k.dram_write_bytes, 1024);
    assert_eq!(k.total.global_ld_requests, 8);
    assert_eq!(k.total.global_ld_bytes, 256 * 4);
    assert_eq!((k.blocks, k.warps, k.threads), (2, 8, 256));
    k
}

#[test]
fn coalesced_f32_load_is_4_sectors() {
    let k = ld_stride(1, 0);
    // 8 requests x 4 sectors; the 1024 bytes read once from DRAM, no sector hit twice.
    assert_eq!(global(&k.total), [8, 32, 8, 32]);
    assert_eq!(k.dram_read_bytes, 1024);
    assert_eq!(k.l2_sectors, 64);
    assert_eq!(k.l2_hit_sectors, 0);
    assert!(k.l2_exact);
    let m = k.ncu_metrics();
    let get = |name: &str| m.iter().find(|(n, _)| *n == name).unwrap().1;
    assert_eq!(get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"), 32.0);
    assert_eq!(get("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"), 8.0);
    assert_eq!(get("dram__bytes_read.sum"), 1024.0);
    assert_eq!(get("dram__bytes_write.sum"), 1024.0);
    assert_eq!(
        get("smsp__thread_inst_executed_per_inst_executed.ratio"),
        32.0
    );
}

#[test]
fn misaligned_by_one_float_is_5_sectors() {
    // Bytes 4..132 of a warp's 128: sectors 0..=4.
    let k = ld_stride(1, 1);
    assert_eq!(k.total.global_ld_sectors, 8 * 5);
    // Floats 1..=256: bytes 4..1028, sectors 0..=32.
    assert_eq!(k.dram_read_bytes, 33 * 32);
}

#[test]
fn strided_loads_2_8_32() {
    // Stride 2: a warp spans 32 x 8 = 256 bytes = 8 sectors.
    let k = ld_stride(2, 0);
    assert_eq!(k.total.global_ld_sectors, 8 * 8);
    // Floats 0, 2, .., 510: bytes 0..2044, 64 sectors.
    assert_eq!(k.dram_read_bytes, 64 * 32);
    // Stride 8 (32 bytes) and 32: every lane in a sector of its own.
    for s in [8, 32] {
        let k = ld_stride(s, 0);
        assert_eq!(k.total.global_ld_sectors, 8 * 32, "stride {s}");
        assert_eq!(k.dram_read_bytes, 256 * 32, "stride {s}");
    }
}

#[test]
fn broadcast_load_is_1_sector() {
    let k = ld_stride(0, 0);
    assert_eq!(k.total.global_ld_sectors, 8);
    // One sector from DRAM; the 7 later requests hit it in L2.
    assert_eq!(k.dram_read_bytes, 32);
    assert_eq!(k.l2_hit_sectors, 7);
}

#[test]
fn f64_and_float4_loads() {
    let c = Ctx::new(SRC, "wide_loads");
    let x = c.zeros::<f64>(256);
    let y = c.zeros::<f64>(256);
    // 32 lanes x 8 bytes = 256 bytes = 8 sectors per request, 8 warps.
    let k = counted(&c, "ld_f64", d1(2), d1(128), &[Arg::Ptr(x), Arg::Ptr(y)]);
    assert_eq!(global(&k.total), [8, 64, 8, 64]);
    assert_eq!((k.dram_read_bytes, k.dram_write_bytes), (2048, 2048));
    let x = c.zeros::<f32>(4 * 256);
    let y = c.zeros::<f32>(4 * 256);
    // ld.global.v4.u32: one request of 32 x 16 bytes = 512 bytes = 16 sectors.
    let k = counted(&c, "ld_float4", d1(2), d1(128), &[Arg::Ptr(x), Arg::Ptr(y)]);
    assert_eq!(global(&k.total), [8, 128, 8, 128]);
    assert_eq!(k.total.global_ld_bytes, 256 * 16);
    assert_eq!((k.dram_read_bytes, k.dram_write_bytes), (4096, 4096));
}

#[test]
fn l2_model_rereads_hit_and_streams_miss() {
    let c = Ctx::new(SRC, "reread");
    let x = c.zeros::<f32>(256);
    let y = c.zeros::<f32>(1024);
    let args = [Arg::Ptr(x), Arg::Ptr(y), Arg::I32(256)];
    // 8 blocks x 4 warps read x[i % 256]: 32 requests x 4 sectors; x (1 KiB, 32 sectors)
    // comes from DRAM once and the other 96 sectors hit.
    let k = counted(&c, "reread", d1(8), d1(128), &args);
    assert_eq!(global(&k.total), [32, 128, 32, 128]);
    assert_eq!(k.dram_read_bytes, 1024);
    assert_eq!(k.l2_hit_sectors, 96);
    assert_eq!(k.dram_write_bytes, 4096);
    // The load's line gets the DRAM bytes.
    let ld = k.line(line_of("reread", "y[i] = x[i % n]")).unwrap();
    assert_eq!(ld.counts.dram_read_bytes, 1024);
    // A 512-byte L2 (one set of 4 lines): warp w reads line w % 8 of x and writes line w of
    // y, so 15 other lines come between two reads of a line of x: every read misses.
    let tiny = CounterConfig {
        l2_bytes: 512,
        l2_ways: 4,
        ..CounterConfig::default()
    };
    let k = counted_with(&c, "reread", d1(8), d1(128), &args, tiny);
    assert_eq!(k.dram_read_bytes, 32 * 128);
    assert_eq!(k.l2_hit_sectors, 0);
    assert_eq!(k.dram_write_bytes, 4096);
    // Past the recording cap: distinct sectors (x read once, y written once).
    let capped = CounterConfig {
        max_recorded_accesses: 10,
        ..CounterConfig::default()
    };
    let k = counted_with(&c, "reread", d1(8), d1(128), &args, capped);
    assert!(!k.l2_exact);
    assert_eq!((k.dram_read_bytes, k.dram_write_bytes), (1024, 4096));
    assert_eq!(k.l2_sectors, 256);
}

/// shared_stride on 2 blocks of one warp: one shared store and one shared load per warp.
fn shared_stride(stride: i32) -> Counters {
    let c = Ctx::new(SRC, "shared_stride");
    let out = c.zeros::<f32>(64);
    let k = counted(
        &c,
        "shared_stride",
        d1(2),
        d1(32),
        &[Arg::Ptr(out), Arg::I32(stride)],
    );
    let got: Vec<f32> = c.download(out, 64);
    let want: Vec<f32> = (0..64).map(|i| (i % 32) as f32).collect();
    assert_eq!(got, want);
    assert_eq!(k.total.shared_ld_requests, 2);
    assert_eq!(k.total.shared_st_requests, 2);
    assert_eq!(k.total.barriers, 2);
    k
}

#[test]
fn shared_memory_strides_and_bank_conflicts() {
    // Word t * stride is in bank (t * stride) % 32: stride 1 hits 32 banks once, 2 hits 16
    // banks twice, 4 hits 8 banks 4 times, 32 hits bank 0 32 times, 33 hits each bank once.
    for (stride, wavefronts) in [(1, 1), (2, 2), (4, 4), (32, 32), (33, 1)] {
        let k = shared_stride(stride);
        assert_eq!(
            (k.total.shared_st_wavefronts, k.total.shared_ld_wavefronts),
            (2 * wavefronts, 2 * wavefronts),
            "stride {stride}"
        );
        assert_eq!(
            k.total.shared_ld_bank_conflicts(),
            2 * (wavefronts - 1),
            "stride {stride}"
        );
    }
}

#[test]
fn shared_broadcast_read_is_one_wavefront() {
    let c = Ctx::new(SRC, "shared_broadcast");
    let out = c.zeros::<f32>(64);
    let k = counted(&c, "shared_broadcast", d1(2), d1(32), &[Arg::Ptr(out)]);
    assert_eq!(c.download::<f32>(out, 64), vec![5.0; 64]);
    // s[5] for 32 lanes: one word, one wavefront per request; the store s[t] too.
    assert_eq!(
        [
            k.total.shared_ld_requests,
            k.total.shared_ld_wavefronts,
            k.total.shared_st_requests,
            k.total.shared_st_wavefronts
        ],
        [2, 2, 2, 2]
    );
}

#[test]
fn transpose_pair_without_and_with_padding() {
    let c = Ctx::new(SRC, "transpose");
    let n = 64usize;
    let input: Vec<f32> = (0..n * n).map(|i| i as f32).collect();
    let want: Vec<f32> = (0..n * n).map(|i| ((i % n) * n + i / n) as f32).collect();
    for (kernel, ld_wavefronts) in [("transpose_tile", 32), ("transpose_padded", 1)] {
        let a = c.upload(&input);
        let b = c.zeros::<f32>(n * n);
        let args = [Arg::Ptr(a), Arg::Ptr(b), Arg::I32(n as i32)];
        let k = counted(&c, kernel, (2, 2, 1), (32, 32, 1), &args);
        assert_eq!(c.download::<f32>(b, n * n), want, "{kernel}");
        // 4 blocks x 32 warps = 128 warps. A warp is one row y of the tile: it stores
        // tile[y][0..32] (consecutive words: 1 wavefront) and loads tile[0..32][y], words
        // x * 32 + y, all in bank y (32 wavefronts), or x * 33 + y in bank (x + y) % 32 (1).
        let t = &k.total;
        assert_eq!((t.shared_st_requests, t.shared_st_wavefronts), (128, 128));
        assert_eq!(
            (t.shared_ld_requests, t.shared_ld_wavefronts),
            (128, 128 * ld_wavefronts),
            "{kernel}"
        );
        assert_eq!(t.shared_ld_bank_conflicts(), 128 * (ld_wavefronts - 1));
        // Rows of 32 floats at 128-byte boundaries: 4 sectors per request.
        assert_eq!(global(t), [128, 512, 128, 512]);
        assert_eq!((k.dram_read_bytes, k.dram_write_bytes), (16384, 16384));
        assert_eq!((k.blocks, k.warps, k.threads), (4, 128, 4096));
        assert_eq!(t.barriers, 128);
    }
}

#[test]
fn divergent_branch_and_active_threads() {
    let c = Ctx::new(SRC, "divergent");
    let out = c.zeros::<i32>(64);
    let k = counted(
        &c,
        "divergent",
        d1(1),
        d1(64),
        &[Arg::Ptr(out), Arg::I32(10)],
    );
    // Run twice (1 and 4 workers): threads >= 10 added t / 7 twice.
    let got: Vec<i32> = c.download(out, 64);
    let want: Vec<i32> = (0..64)
        .map(|t| if t < 10 { t * 3 } else { 2 * (t / 7) })
        .collect();
    assert_eq!(got, want);
    // Warp 0 splits at `if (threadIdx.x < split)` (10 lanes one way, 22 the other); warp 1
    // goes one way.
    assert_eq!(k.total.branch_divergent, 1);
    let then = k.line(line_of("divergent", "out[t] = t * 3;")).unwrap();
    let other = k
        .line(line_of("divergent", "out[t] = t / 7 + out[t];"))
        .unwrap();
    // The then-line's store: warp 0's 10 lanes, one request. The else-line: warp 0's 22
    // lanes and warp 1's 32, one load and one store request each.
    assert_eq!(
        (
            then.counts.global_st_requests,
            then.counts.global_ld_requests
        ),
        (1, 0)
    );
    assert_eq!(
        (
            other.counts.global_st_requests,
            other.counts.global_ld_requests
        ),
        (2, 2)
    );
    // The then-block is `mul.lo; st; bra.uni` (3 instructions, 10 lanes); the else-block
    // 8 instructions (mul.hi .. st) for 22 + 32 lanes. Line 74 also holds the address
    // computation before the branch (mul.wide, add: 2 instructions x 2 warps x 32 lanes).
    assert_eq!(then.counts.thread_inst_executed, 3 * 10 + 2 * 2 * 32);
    assert_eq!(other.counts.thread_inst_executed, 8 * (22 + 32));
    assert_eq!(other.counts.inst_executed, 8 * 2);
    // The whole launch, instruction by instruction (the PTX, which lowers one to one here):
    // 11 before the branch (2 ld.param, cvta, 3 mov, mad, setp, mul.wide, add, @p bra) for
    // both warps, 22 issues x 32 threads; `bra.uni` to the else-block for 22 + 32 lanes (2
    // issues); the then-block, 3 x 10; the else-block, 8 x (22 + 32) in 16 issues; `ret` for
    // both warps: 45 issues, 704 + 54 + 30 + 432 + 64 = 1284 threads. The guarded branch
    // holds for 10 lanes of 64: 54 fewer predicated on.
    let t = &k.total;
    assert_eq!(
        (
            t.inst_executed,
            t.thread_inst_executed,
            t.thread_inst_executed_pred_on
        ),
        (45, 1284, 1230)
    );
    assert_eq!(t.active_threads_per_inst(), 1284.0 / 45.0);
    // Branches: @p bra and ret (2 each), bra.uni (2 + 1).
    assert_eq!(k.mix.branch, 7);
    // Sectors: the then-store of lanes 0..10 (bytes 0..40: 2 sectors); the else-load and
    // -store of warp 0's lanes 10..32 (bytes 40..128: 3) and of warp 1 (4).
    assert_eq!(global(t), [2, 7, 3, 9]);
}

#[test]
fn atomics_same_and_distinct_addresses() {
    let c = Ctx::new(SRC, "atomics");
    let p = c.zeros::<i32>(1);
    let k = counted(&c, "atomic_same", d1(2), d1(64), &[Arg::Ptr(p)]);
    assert_eq!(c.download::<i32>(p, 1), vec![256]);
    // 4 warps, 32 lanes each on one address: 32 serialised updates per request.
    let t = &k.total;
    assert_eq!(
        [
            t.global_atom_requests,
            t.global_atom_lanes,
            t.global_atom_serialized,
            t.global_atom_sectors
        ],
        [4, 128, 128, 4]
    );
    // One sector read and written back.
    assert_eq!((k.dram_read_bytes, k.dram_write_bytes), (32, 32));
    let p = c.zeros::<i32>(128);
    let k = counted(&c, "atomic_distinct", d1(2), d1(64), &[Arg::Ptr(p)]);
    assert_eq!(c.download::<i32>(p, 128), vec![2; 128]);
    let t = &k.total;
    assert_eq!(
        [
            t.global_atom_requests,
            t.global_atom_lanes,
            t.global_atom_serialized,
            t.global_atom_sectors
        ],
        [4, 128, 4, 16]
    );
    assert_eq!(k.mix.atomic, 4);
    // Shared: lanes in groups of 4 on 8 counters, one warp.
    let out = c.zeros::<i32>(8);
    let k = counted(&c, "atomic_shared_groups", d1(1), d1(32), &[Arg::Ptr(out)]);
    assert_eq!(c.download::<i32>(out, 8), vec![4; 8]);
    let t = &k.total;
    assert_eq!(
        [
            t.shared_atom_requests,
            t.shared_atom_lanes,
            t.shared_atom_serialized
        ],
        [1, 32, 4]
    );
}

#[test]
fn per_line_folding_names_the_cuda_lines() {
    let c = Ctx::new(SRC, "per_line");
    let n = 64usize;
    let a = c.upload(&(0..n * n).map(|i| i as f32).collect::<Vec<_>>());
    let b = c.zeros::<f32>(n * n);
    let args = [Arg::Ptr(a), Arg::Ptr(b), Arg::I32(n as i32)];
    let k = counted(&c, "transpose_tile", (2, 2, 1), (32, 32, 1), &args);
    let lines = k.by_line();
    // Every line is of counters.cu, in order, and the lines add up to the launch.
    let mut sum = InstCounts::default();
    for l in &lines {
        let s = l
            .line
            .as_ref()
            .expect("NVRTC -lineinfo gives every instruction a line");
        assert!(s.file.ends_with("counters.cu"), "{s:?}");
        sum.inst_executed += l.counts.inst_executed;
        sum.shared_ld_wavefronts += l.counts.shared_ld_wavefronts;
    }
    assert_eq!(sum.inst_executed, k.total.inst_executed);
    assert!(lines
        .windows(2)
        .all(|w| w[0].line.as_ref().unwrap().line < w[1].line.as_ref().unwrap().line));
    let store = line_of(
        "transpose_tile",
        "tile[threadIdx.y][threadIdx.x] = in[y * n + x];",
    );
    let sync = store + 1;
    let load = line_of(
        "transpose_tile",
        "out[y * n + x] = tile[threadIdx.x][threadIdx.y];",
    );
    let at = |l: u32| k.line(l).unwrap_or_else(|| panic!("line {l}")).counts;
    // The global load and the shared store are on the first line, the barrier on the next,
    // the shared load and the global store on the last.
    assert_eq!(
        [
            at(store).global_ld_requests,
            at(store).shared_st_requests,
            at(store).shared_ld_requests
        ],
        [128, 128, 0]
    );
    assert_eq!(at(sync).barriers, 128);
    assert_eq!(at(sync).inst_executed, 128);
    assert_eq!(
        [
            at(load).shared_ld_wavefronts,
            at(load).global_st_sectors,
            at(load).global_ld_requests
        ],
        [4096, 512, 0]
    );
    assert_eq!(sum.shared_ld_wavefronts, 4096);
    assert_eq!(
        k.line(line_of(
            "transpose_tile",
            "tile[threadIdx.y][threadIdx.x] = in[y * n + x];"
        ))
        .unwrap()
        .mix
        .shared,
        128
    );
}

#[test]
fn counted_launches_give_the_same_results_and_reports() {
    // The transpose: the same output with and without counters.
    let c = Ctx::new(SRC, "same_results");
    let n = 64usize;
    let input: Vec<f32> = (0..n * n).map(|i| (i * 7 % 13) as f32).collect();
    let a = c.upload(&input);
    let mut outs = Vec::new();
    for counters in [None, Some(CounterConfig::default())] {
        let b = c.zeros::<f32>(n * n);
        let mut cfg = common::config((2, 2, 1), (32, 32, 1));
        cfg.counters = counters;
        let r = c.launch_cfg(
            "transpose_padded",
            &cfg,
            &[Arg::Ptr(a), Arg::Ptr(b), Arg::I32(64)],
        );
        assert_eq!(r.counters.is_some(), cfg.counters.is_some());
        outs.push(c.download::<f32>(b, n * n));
    }
    assert_eq!(outs[0], outs[1]);
    // A race and an out-of-bounds read of the checker's kernels: the same reports and faults.
    let c = Ctx::new("checker", "counted_reports");
    let x: Vec<i32> = (0..256).collect();
    let pin = c.upload(&x);
    let pout = c.zeros::<i32>(256);
    let mut results = Vec::new();
    for counters in [None, Some(CounterConfig::default())] {
        let mut cfg = common::config(d1(4), d1(64));
        cfg.threads = 1;
        cfg.counters = counters;
        let race = c
            .try_launch(
                "sharedRace",
                &cfg,
                &[Arg::Ptr(pin), Arg::Ptr(pout), Arg::I32(256), Arg::I32(2)],
            )
            .unwrap();
        assert!(!race.reports.is_empty());
        // The race's output, before the faulting launch: what a launch stopped by a fault
        // wrote before it depends on the order the engine ran its warps in.
        let out = c.download::<i32>(pout, 256);
        let oob = c
            .try_launch(
                "oobGlobalRead",
                &cfg,
                &[Arg::Ptr(pin), Arg::Ptr(pout), Arg::I32(256)],
            )
            .unwrap_err();
        results.push((race.reports, race.printf, out, oob));
    }
    assert_eq!(results[0], results[1]);
}

#[test]
fn the_estimate_never_takes_longer_than_the_counted_launch_it_comes_from() {
    // A small counted launch (a few hundred µs) against the model on its counters, on every
    // GPU of the table: the estimate must cost less than the run that produced the counts.
    let c = Ctx::new(SRC, "ld_stride");
    let x = c.zeros::<f32>(256 * 32 + 1);
    let y = c.zeros::<f32>(256);
    let args = [Arg::Ptr(x), Arg::Ptr(y), Arg::I32(1), Arg::I32(0)];
    let mut cfg = common::config(d1(2), d1(128));
    cfg.counters = Some(CounterConfig::default());
    let t0 = std::time::Instant::now();
    let r = c.launch_cfg("ld_stride", &cfg, &args);
    let run = t0.elapsed();
    let counts = r.counters.expect("counters asked for");
    let shape = ptxsim::model::LaunchShape {
        block_threads: 128,
        registers: 32,
        shared_bytes: 0,
    };
    for g in &ptxsim::gpus::GPUS {
        let t1 = std::time::Instant::now();
        let e = ptxsim::model::estimate(&counts, &shape, g);
        let took = t1.elapsed();
        assert!(e.ns > 0.0, "{}", g.name);
        assert!(
            took < run,
            "{}: the estimate took {took:?}, the launch {run:?}",
            g.name
        );
    }
}
