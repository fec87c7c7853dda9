//! The kernels the differential test runs: every kernel of the PTX fixtures
//! (`tests/fixtures/*.ptx`, NVRTC's output of `kernels/*.cu`), each with one launch shape and
//! the arguments it needs, written as one line. It says what to launch, never what the result
//! must be: the interpreter's result is the reference.
//!
//! A line is `kernel grid block dynamic-shared | arguments`, with `grid` and `block` as `XxYxZ`
//! (or `X`), and each argument one of:
//! - `ty:count` a buffer of `count` random values of `ty` (`u8`, `i32`, `u32`, `i64`, `u64`,
//!   `f32`, `f64`): integers over their whole range, floats in [-100, 100); `ty:count:lo:hi`
//!   draws from `[lo, hi)` instead;
//! - `z:bytes` a zeroed buffer;
//! - `i=v`, `u=v`, `f=v`, `d=v` a scalar `int`, `unsigned`, `float`, `double`.
//!
//! A buffer whose final contents depend on the order in which atomics run (old values handed
//! out by a counter, a float sum) ends in `~4` or `~8`: it is compared as a sorted list of
//! words of that size, or `?`: not compared (what is order-independent about it is checked by
//! the conformance tests).

/// Each fixture file (without `.ptx`) and its kernels' lines.
pub const FIXTURES: &[(&str, &[&str])] = &[
    (
        "vector_add",
        &[
            "vecAdd 12 256 0 | f32:3000 f32:3000 z:12000 i=3000",
            "saxpyGridStride 7 96 0 | f=1.5 f32:5000 f32:5000 i=5000",
            "scaleFloat4 6 128 0 | f32:2800 z:11200 f=-0.75 i=700",
            "addDouble2 9 64 0 | f64:1100 f64:1100 z:8800 i=550",
        ],
    ),
    (
        "matmul",
        &[
            "matmulNaive 3x4 16x16 0 | f32:2000:-1:1 f32:1880:-1:1 z:10000 i=50 i=47 i=40",
            "matmulTiled 3x4 16x16 0 | f32:2000:-1:1 f32:1880:-1:1 z:10000 i=50 i=47 i=40",
            "dmatmulFma 4x3 8x8 0 | f64:700:-1:1 f64:980:-1:1 z:5000 i=20 i=28 i=35",
        ],
    ),
    (
        "reduce",
        &[
            "reduceBlockTree 12 256 1024 | f32:3000:-1:1 z:48 i=3000",
            "reduceWarpShuffle 4 1024 0 | i32:3900:-1000000:1000000 z:16 i=3900",
            "warpAllReduceXor 9 128 0 | f32:1100:-10:10 z:4400 i=1100",
            "reduceThreadFence 12 256 0 | u32:3000:0:65536 z:48 z:8 i=3000",
        ],
    ),
    (
        "scan",
        &[
            "scanInclusive 10 128 1024 | i32:1200:-1000:1000 z:4800 i=1200",
            "scanExclusiveBlelloch 5 128 1024 | u32:1200:0:1000 z:4800 z:20 i=1200",
            "scanWarpShflUp 5 256 0 | f64:1200 z:9600 i=1200",
        ],
    ),
    (
        "sort",
        &[
            "bitonicSortBlock 8 128 512 | u32:1000 z:4000 i=1000",
            "warpOddEvenSort 16 64 0 | i64:1000 z:8000 i=1000",
        ],
    ),
    (
        "stencil",
        &[
            "blur3x3 4x3 16x16 0 | f32:2450:0:255 z:9800 i=50 i=49",
            "heatStep 4x3 16x16 0 | f32:2450:0:1 z:9800 i=50 i=49 f=0.2",
            "blurRgba 6x6 8x8 0 | u8:8820 z:8820 i=45 i=49",
        ],
    ),
    (
        "histogram",
        &[
            "histogramShared 13 256 0 | u8:20000 z:1024 i=20000",
            "histogramGlobal 40 256 0 | u8:10000 z:1024 i=10000",
        ],
    ),
    (
        "atomics_global",
        &[
            "atomicAddInt 16 128 0 | i32:2000:-1000:1000 z:4 z:4 z:8000~4 i=2000",
            "atomicAddUnsigned 8 256 0 | u32:2000 z:64 i=2000 i=16",
            "atomicAddU64 16 128 0 | u64:2000 z:8 i=2000",
            "atomicAddF32 16 128 0 | f32:2000 z:4? i=2000",
            "atomicAddF64 16 128 0 | f64:2000 z:8? i=2000",
            "atomicMinMax 16 128 0 | i32:2000 u64:2000 z:8 z:4 z:8 z:8 i=2000",
            "atomicExchChain 16 128 0 | i32:2000 z:4? z:8000? z:4? z:8000? i=2000",
            "atomicCasLoops 8 128 0 | f64:1000 z:4 z:8? i=1000",
            "atomicBitwise 16 128 0 | u32:2000 u64:2000 z:12 z:24 i=2000",
            "atomicIncDec 16 128 0 | z:8 z:8000~4 z:8000~4 u=37 i=2000",
        ],
    ),
    (
        "atomics_shared",
        &[
            "sharedAtomicsInt 8 128 0 | i32:1000:-1000:1000 z:512? z:512 z:4000~4 i=1000",
            "sharedAtomicsWide 8 128 0 | f32:1000 f64:1000 u64:1000 z:32? z:64? z:192 i=1000",
        ],
    ),
    (
        "divergence",
        &[
            "earlyReturn 16 128 0 | i32:2000:-100:100 z:8000 i=2000",
            "breakContinue 21 96 0 | i32:2000:-100:100 z:8000 i=2000 i=7",
            "nestedIfs 16 128 0 | i32:2000:-50:50 i32:2000:-50:50 z:8000 i=2000",
            "collatzSteps 16 64 0 | u32:1000:1:100000 z:4000 i=1000 u=500",
            "switchLoop 16 128 0 | i32:2000:0:1000 z:8000 i=2000",
            "divergeThenSync 8 256 0 | i32:2000:-100:100 z:8000 i=2000",
        ],
    ),
    (
        "dynamic_shared",
        &[
            "reverseBlocks 8 128 512 | i32:1000 z:4000 i=1000",
            "carvedBuffers 8 128 1536 | f32:1000 f64:1000 z:8000 i=1000",
        ],
    ),
    (
        "device_functions",
        &[
            "callLerp 8 128 0 | f32:1000 f32:1000 z:4000 i=1000",
            "callGcdDivergent 16 64 0 | i32:1000:1:100000 i32:1000:1:100000 z:4000 i=1000",
            "callFib 4 64 0 | u32:250:0:12 z:2000 i=250",
            "callMinMaxSort 8 128 0 | i32:8000 z:44000 i=1000",
        ],
    ),
    (
        "grids",
        &[
            "grid2d 3x5 16x8 0 | z:8000 z:8000 i=45 i=37",
            "grid3d 3x3x2 8x4x4 0 | z:17280 i=20 i=12 i=7",
            "dimsRecord 2x3x2 4x2x3 0 | z:13824",
            "stencil3d 3x3x2 8x4x4 0 | f32:1680 z:6720 i=20 i=12 i=7",
            "clocks 16 64 0 | i32:1000:-1000:1000 z:8000 i=1000",
        ],
    ),
    (
        "intrinsics",
        &[
            "bitIntrinsics 8 128 0 | u32:1000 u64:1000 z:40000 i=1000",
            "mulIntrinsics 8 128 0 | i32:1000 i32:1000 u64:1000 u64:1000 z:40000 z:80000 i=1000",
            "funnelShifts 8 128 0 | u32:1000 u32:1000 u32:1000 z:40000 i=1000",
            "carryChains 8 128 0 | u32:4000 u32:4000 z:20000 z:12000 i=1000",
            "bitfieldAsm 8 128 0 | u32:1000 u32:1000 z:40000 i=1000",
            "intArith 8 128 0 | i32:1000 i32:1000:1:1000 i64:1000 i64:1000:1:100000 z:40000 z:80000 i=1000",
        ],
    ),
    (
        "conversions",
        &[
            "floatToInt 8 128 0 | f32:1000:-3000000000:3000000000 z:40000 z:40000 z:80000 i=1000",
            "doubleConversions 8 128 0 | f64:1000:-10000000000:10000000000 z:40000 z:40000 z:80000 i=1000",
            "intToFloat 8 128 0 | i32:1000 i64:1000 z:40000 z:80000 i=1000",
            "saturateAndNarrow 8 128 0 | f32:1000 i32:1000 z:40000 z:40000 i=1000",
            "roundedArith 8 128 0 | f32:1000 f32:1000 z:44000 i=1000",
            "roundingFunctions 8 128 0 | f32:1000 f64:1000 z:40000 z:80000 i=1000",
        ],
    ),
    (
        "f64math",
        &[
            "f64Exact 8 128 0 | f64:1000 f64:1000 f64:1000 z:8000 z:8000 z:8000 z:16000 i=1000",
            "f64Libdevice 4 64 0 | f64:250:-10:10 z:2000 z:2000 z:2000 z:2000 z:2000 i=250",
            "f64Oscillator 4 128 0 | f64:500:-1:1 f64:500:-1:1 z:4000 i=500 i=50 d=0.01",
            "f32Math 8 128 0 | f32:1000 f32:1000 z:40000 z:40000 i=1000",
            "f32Libdevice 8 128 0 | f32:1000:-10:10 z:40000 i=1000",
        ],
    ),
    (
        "memory_spaces",
        &[
            "polyConst 8 128 0 | f32:1000:-2:2 z:4000 i=1000",
            "constStencil 8 128 0 | i32:1000:-1000:1000 z:4000 i=1000",
            "bumpCounter 8 128 0 | z:4 i=1000",
            "readCounter 1 32 0 | z:4 z:32",
            "localHistogram 4 128 0 | u8:8000 z:2000 i=500 i=16",
        ],
    ),
    (
        "particles",
        &[
            "binParticles 8 128 0 | f32:2000:0:1 i=1000 i=8 i=32 z:256 z:8192? z:4",
            "moveParticles 8 128 0 | f32:2000:0:1 f32:2000:-1:1 i=1000 f=0.05",
        ],
    ),
    (
        "printf",
        &[
            "printfBasic 2 64 0 | i32:100:-1000:1000 f32:100 i=100",
            "printfFormats 2 32 0 | i64:50 f64:50 i=50",
            "printfDivergent 2 64 0 | i32:100:0:1000 i=100",
        ],
    ),
    (
        "ptx_features",
        &[
            "reductionsAsm 8 128 0 | i32:1000 z:4 z:4 z:4? z:8 z:32 i=1000",
            "barrierReductions 8 128 0 | i32:1000:-1000:1000 z:12000 i=1000",
            "namedBarriers 8 128 0 | i32:1000 z:4000 i=1000",
            "genericPointers 4 256 0 | f32:1000 f32:1000 i=1000",
            "syncInFunction 4 256 0 | i32:1000:-1000:1000 z:4000 i=1000",
            "scopedAtomics 8 128 0 | i32:1000:-1000:1000 z:44 i=1000",
            "warpMatchReduce 16 64 0 | i32:1000:0:8 z:28000 i=1000",
        ],
    ),
    (
        "templates",
        &[
            "_Z4axpyIfEvT_PKS0_PS0_i 8 128 0 | f=2.5 f32:1000 f32:1000 i=1000",
            "_Z4axpyIdEvT_PKS0_PS0_i 8 128 0 | d=-1.5 f64:1000 f64:1000 i=1000",
            "_Z4axpyIiEvT_PKS0_PS0_i 8 128 0 | i=3 i32:1000:-100000:100000 i32:1000 i=1000",
            "_Z11blockReduceILi128E5MaxOpEvPKiPii 8 128 0 | i32:1000 z:32 i=1000",
            "_Z11blockReduceILi64E5XorOpEvPKiPii 16 64 0 | i32:1000 z:64 i=1000",
        ],
    ),
    (
        "transpose",
        &[
            "transposeNaive 3x4 16x16 0 | f32:2350 z:9400 i=50 i=47",
            "transposeSharedPadded 2x2 32x8 0 | f32:2350 z:9400 i=50 i=47",
            "transposeShared64 3x4 16x16 0 | u64:2350 z:18800 i=50 i=47",
        ],
    ),
    (
        "warp",
        &[
            "shuffleModes 8 128 0 | i32:1000 z:4000 z:4000 z:4000 z:4000 i=1000 i=3",
            "shuffleWidths 16 64 0 | f32:1000 z:4000 z:8000 z:8000 i=1000",
            "votes 11 96 0 | i32:1000:0:4 z:4000 z:4000 z:4000 z:4000 i=1000",
            "activeMask 8 128 0 | i32:1000:0:16 z:4000 z:4000 i=1000",
            "syncwarpExchange 4 256 0 | i32:1000 z:4000 i=1000",
            "laneIds 5 224 0 | z:4000 z:4000 i=1000",
        ],
    ),
    (
        "counters",
        &[
            "ld_stride 4 128 0 | f32:4200 z:2048 i=8 i=3",
            "ld_f64 4 128 0 | f64:512 z:4096",
            "ld_float4 4 128 0 | f32:2048 z:8192",
            "reread 4 128 0 | f32:100 z:2048 i=100",
            "shared_stride 2 32 0 | z:256 i=33",
            "shared_broadcast 2 32 0 | z:256",
            "transpose_tile 2x2 32x32 0 | f32:4096 z:16384 i=64",
            "transpose_padded 2x2 32x32 0 | f32:4096 z:16384 i=64",
            "divergent 4 128 0 | i32:512 i=40",
            "atomic_same 4 128 0 | z:4",
            "atomic_distinct 4 128 0 | z:2048",
            "atomic_shared_groups 4 32 0 | z:128",
        ],
    ),
    (
        "checker",
        &[
            "oobGlobalRead 4 128 0 | f32:500 z:2000 i=500",
            "oobGlobalReadFixed 4 128 0 | f32:500 z:2000 i=500",
            "oobGlobalWrite 4 128 0 | i32:500 z:2000 i=500",
            "oobGlobalWriteFixed 4 128 0 | i32:500 z:2000 i=500",
            "oobShared 4 128 0 | i32:500:0:70 z:2000 i=500",
            "oobSharedFixed 4 128 0 | i32:500:0:70 z:2000 i=500",
            "misalignedLoad 4 128 0 | u8:4000 i32:500:0:3990 z:2000 i=500",
            "misalignedLoadFixed 4 128 0 | u8:4000 i32:500:0:3990 z:2000 i=500",
            "touchOne 4 128 0 | z:2048 i=77",
            "sharedRace 4 128 0 | i32:500 z:2000 i=500 i=2",
            "sharedRaceFixed 4 128 0 | i32:500 z:2000 i=500 i=2",
            "divergentBarrier 2 64 0 | z:512",
            "divergentBarrierFixed 2 64 0 | z:512",
            "shuffleInactive 4 128 0 | i32:500 z:2000 i=500 i=1",
            "shuffleInactiveFixed 4 128 0 | i32:500 z:2000 i=500 i=1",
            "oobLocal 4 128 0 | i32:500:0:20 z:2000 i=500",
            "trapOne 4 128 0 | z:2048 i=77",
        ],
    ),
];

/// One argument of a launch.
#[derive(Debug, Clone, Copy)]
pub enum ArgSpec {
    /// `count` random values of `ty`, from `range` where given.
    Random {
        ty: Ty,
        count: usize,
        range: Option<(f64, f64)>,
        compare: Compare,
    },
    Zeroed {
        bytes: usize,
        compare: Compare,
    },
    I32(i32),
    U32(u32),
    F32(f32),
    F64(f64),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ty {
    U8,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
}

/// How a buffer's contents after the launch are compared with the reference's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Compare {
    Bytes,
    /// As a sorted list of words of this many bytes.
    SortedWords(usize),
    Not,
}

/// One kernel launch of the table.
#[derive(Debug, Clone)]
pub struct Case {
    pub fixture: &'static str,
    pub kernel: String,
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub dyn_shared: u32,
    pub args: Vec<ArgSpec>,
}

/// Every line of the table, parsed; a malformed line panics with its text.
pub fn all() -> Vec<Case> {
    FIXTURES
        .iter()
        .flat_map(|(fixture, lines)| lines.iter().map(move |l| parse(fixture, l)))
        .collect()
}

fn parse(fixture: &'static str, line: &str) -> Case {
    let bad = |why: &str| -> ! { panic!("{fixture}: `{line}`: {why}") };
    let (head, args) = line.split_once('|').unwrap_or_else(|| bad("no `|`"));
    let head: Vec<&str> = head.split_whitespace().collect();
    let [kernel, grid, block, dyn_shared] = head[..] else {
        bad("expected `kernel grid block dynamic-shared`")
    };
    let dim = |s: &str| {
        let v: Vec<u32> = s
            .split('x')
            .map(|x| x.parse().unwrap_or_else(|_| bad("bad dimension")))
            .collect();
        (
            v[0],
            v.get(1).copied().unwrap_or(1),
            v.get(2).copied().unwrap_or(1),
        )
    };
    let args = args
        .split_whitespace()
        .map(|a| parse_arg(a).unwrap_or_else(|| bad(&format!("bad argument `{a}`"))))
        .collect();
    Case {
        fixture,
        kernel: kernel.to_string(),
        grid: dim(grid),
        block: dim(block),
        dyn_shared: dyn_shared
            .parse()
            .unwrap_or_else(|_| bad("bad shared size")),
        args,
    }
}

fn parse_arg(a: &str) -> Option<ArgSpec> {
    if let Some((kind, v)) = a.split_once('=') {
        return Some(match kind {
            "i" => ArgSpec::I32(v.parse().ok()?),
            "u" => ArgSpec::U32(v.parse().ok()?),
            "f" => ArgSpec::F32(v.parse().ok()?),
            "d" => ArgSpec::F64(v.parse().ok()?),
            _ => return None,
        });
    }
    let (a, compare) = if let Some(x) = a.strip_suffix('?') {
        (x, Compare::Not)
    } else if let Some((x, w)) = a.split_once('~') {
        (x, Compare::SortedWords(w.parse().ok()?))
    } else {
        (a, Compare::Bytes)
    };
    let parts: Vec<&str> = a.split(':').collect();
    if parts[0] == "z" {
        return Some(ArgSpec::Zeroed {
            bytes: parts.get(1)?.parse().ok()?,
            compare,
        });
    }
    let ty = match parts[0] {
        "u8" => Ty::U8,
        "i32" => Ty::I32,
        "u32" => Ty::U32,
        "i64" => Ty::I64,
        "u64" => Ty::U64,
        "f32" => Ty::F32,
        "f64" => Ty::F64,
        _ => return None,
    };
    let range = match parts.len() {
        2 => None,
        4 => Some((parts[2].parse().ok()?, parts[3].parse().ok()?)),
        _ => return None,
    };
    Some(ArgSpec::Random {
        ty,
        count: parts[1].parse().ok()?,
        range,
        compare,
    })
}
