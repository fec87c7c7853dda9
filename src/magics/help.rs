//! The list of magics with their syntax and a sentence each (for `%lsmagic`, `%help`, inspect and
//! completion), and "did you mean" suggestions by string similarity.
//!
//! Pure data and string functions; nothing here runs a command.

/// One magic: its name with `%`/`%%`, one line of syntax, one sentence.
pub struct MagicDoc {
    pub name: &'static str,
    pub syntax: &'static str,
    pub about: &'static str,
}

const fn m(name: &'static str, syntax: &'static str, about: &'static str) -> MagicDoc {
    MagicDoc {
        name,
        syntax,
        about,
    }
}

/// Every magic of this version, cell magics first.
pub const MAGICS: &[MagicDoc] = &[
    m(
        "%%cuda",
        "%%cuda [--name M] [-DNAME=V] [--std=c++17] [--fast-math] [-G] [--arch sm_XX]",
        "Compiles the cell's CUDA C++ with NVRTC; every __global__ function becomes a launchable CUDA kernel (re-running the cell replaces them); prints a summary per kernel, the compile time and whether the cache served it.",
    ),
    m(
        "%%animate",
        "%%animate [--frames N] [--every K] [--show NAME] [--fps F] [--cmap MAP] [--vmin V] [--vmax V] [--scale K]",
        "Runs the cell's magic lines N times (default 30), captures the 2-D array NAME (or the one of a %show NAME line in the cell) after every K-th run and the last, and shows the frames as an animated GIF with one colour range.",
    ),
    m(
        "%show",
        "%show NAME... [--cmap viridis|magma|inferno|plasma|turbo|cividis|gray|coolwarm] [--vmin V] [--vmax V] [--scale K]",
        "Shows arrays as images: 2-D as a heatmap with a colour bar (NaN/Inf in magenta), (H, W, 3|4) as RGB(A), 1-D as a line plot; several names side by side.",
    ),
    m(
        "%time",
        "%time [-n RUNS] [--warmup W] [--bytes EXPR] [--flops EXPR] [--gpu MODEL] LAUNCH | graph NAME",
        "Times a launch (or, with graph NAME, one replay of a recorded CUDA graph: on a GPU beside the same steps launched one by one; on ptxsim with the model's estimate of both) (LAUNCH as for %launch): runs, median/min/max/stdev, GB/s (bytes: --bytes or the array arguments' sizes, marked est.), GFLOP/s with --flops, % of peak bandwidth; CUDA events on a GPU, wall time (simulated) on ptxsim and beside it the modelled GPU's estimated time (ptxsim::model, from one counted run on copies; --gpu MODEL for another than %gpu's).",
    ),
    m(
        "%timings",
        "%timings [--clear]",
        "Every %time so far side by side with speed-ups against the first, as a table and a bar chart; --clear forgets them.",
    ),
    m(
        "%array",
        "%array [--managed] NAME = zeros(SHAPE, DT) | ones(SHAPE, DT) | empty(SHAPE, DT) | full(SHAPE, V, DT) | arange(N, DT) | arange(START, STOP[, STEP], DT) | linspace(A, B, N, DT) | rand(SHAPE, DT[, seed=S]) | randn(SHAPE, DT[, seed=S]) | copy(OTHER)",
        "Creates (or replaces) a device array; SHAPE is N, (H, W) or (D, H, W); rand() is uniform in [0, 1) for floats (f32, f64, f16, bf16) and in [0, 100) for integer dtypes, randn() is standard normal (floats only); without seed= every call differs; empty() is zero-filled here; --managed allocates managed (unified) memory (cuMemAllocManaged, refused beyond the GPU's free memory; ordinary memory on ptxsim).",
    ),
    m(
        "%load",
        "%load NAME = PATH.png|.jpg|.npy [--gray] [--as DT]",
        "Loads an image as (H, W, 3) u8 ((H, W, 4) if it has alpha; (H, W) with --gray; --as a float dtype scales to [0, 1]) or a .npy array (1-4 dims, any numeric dtype; float16 loads as f16 and a 2-byte void (ml_dtypes' bfloat16) as bf16; --as converts).",
    ),
    m(
        "%save",
        "%save NAME PATH.png|.jpg|.npy",
        "Saves an array: .npy for any array; .png for (H, W) (u8 as is, other dtypes scaled min..max to gray) and (H, W, 3|4) u8 (floats clamped to [0, 1]).",
    ),
    m(
        "%set",
        "%set NAME = EXPR",
        "Sets a scalar (integer or float) usable in every expression; %set alone lists them. by_backend(SIM, GPU) picks a size per backend: %set N = by_backend(1_000_000, 50_000_000).",
    ),
    m(
        "%launch",
        "%launch [--check] KERNEL[GRID, BLOCK(, SHMEM(, STREAM))](ARGS) | KERNEL<<<GRID, BLOCK(, SHMEM(, STREAM))>>>(ARGS) | KERNEL[auto](ARGS)",
        "Launches a CUDA kernel: GRID and BLOCK are integers or tuples of up to 3; ARGS are checked against the C signature: a pointer takes an array name, `a + N` (N elements in) or null; a number or expression a scalar; a tuple (1.0, 2.0) a vector type or struct passed by value; [auto] uses blocks of 256 over the first array; --check runs it on the simulator with the memory and race checker, on copies of its arrays: a diagnostic that leaves every array unchanged.",
    ),
    m(
        "%arrays",
        "%arrays",
        "Table of the device arrays: name, dtype, shape, bytes, backend and the CUDA kernel that last wrote each.",
    ),
    m(
        "%print",
        "%print NAME [--head N]",
        "Prints an array's values numpy-style (first and last ones when large; --head N: the first N along the first axis) with min, max, mean and NaN count.",
    ),
    m("%free", "%free NAME...", "Frees device arrays."),
    m("%swap", "%swap A B", "Swaps the contents of two arrays (by name, no copy)."),
    m(
        "%graph",
        "%graph [begin NAME | end | launch NAME [-n K] | drop NAME]",
        "CUDA Graphs: between %graph begin NAME and %graph end, %launch and %copy lines are checked and recorded instead of run (commands that change arrays are refused); %graph launch NAME replays them K times (a GPU: stream capture, cuGraphInstantiate, cuGraphLaunch; ptxsim: step by step under the checker); %graph lists graphs with their steps; %free refuses an array a graph uses.",
    ),
    m(
        "%prefetch",
        "%prefetch NAME [gpu|host]",
        "Migrates a managed array (%array --managed) to the GPU (default) or to the host and waits (cuMemPrefetchAsync); on ptxsim there is nothing to migrate.",
    ),
    m(
        "%copy",
        "%copy DST = SRC",
        "Copies array SRC's contents into array DST on the device (same dtype and number of elements; shapes may differ). Fills a %%cuda cell's __constant__/__device__ variable, which is an array of its C name.",
    ),
    m(
        "%sync",
        "%sync [STREAM]",
        "Waits for all work (or one stream's work) on the device; finishes the %downloads on it.",
    ),
    m(
        "%upload",
        "%upload NAME [STREAM]",
        "Copies the array's host copy to the device on STREAM, asynchronously (from pinned memory on a GPU); the host copy is the data the array was made from, or what %download fetched.",
    ),
    m(
        "%download",
        "%download NAME [STREAM]",
        "Copies the array's device contents into its host copy on STREAM, asynchronously; complete after %sync (then %upload can send it back).",
    ),
    m(
        "%device",
        "%device [N]",
        "Table of the active device (name, SMs, memory, compute capability, bandwidth) and backend, with every GPU found; %device N moves to GPU N (arrays and CUDA kernels move with it).",
    ),
    m(
        "%backend",
        "%backend gpu|sim",
        "Switches between the GPU and the ptxsim simulator; the arrays move with it.",
    ),
    m(
        "%limit",
        "%limit [stack BYTES]",
        "Table of the device limits; %limit stack BYTES sets the call stack per thread of every later launch (CUDA's cudaLimitStackSize, default 1024, up to 1 MiB); a deeper recursion stops the launch with a DeviceFault.",
    ),
    m("%ptx", "%ptx KERNEL", "Shows the PTX of a CUDA kernel."),
    m(
        "%info",
        "%info [--gpu MODEL] KERNEL",
        "Signature and resources of a CUDA kernel (registers, static shared and local memory, max threads per block: on ptxsim, or for another GPU model, read from a CUBIN that NVRTC compiles for the model's sm_XX), and its theoretical occupancy per block size on the modelled GPU (or MODEL): blocks and warps per SM, occupancy and what limits it.",
    ),
    m(
        "%profile",
        "%profile [--gpu MODEL] [--lines] [--check] [--ncu] LAUNCH",
        "Profiles a launch (LAUNCH as for %launch) the way Nsight Compute would: ptxsim counts it on copies of its arrays (nothing changes) as the GPU's counters count (requests and 32-byte sectors per global load/store, shared-memory wavefronts and bank conflicts, atomics, instructions by kind, active threads per instruction, DRAM bytes through an L2 model of the modelled GPU); shows launch, occupancy, memory and compute sections, the likely limiter in one line and the five hottest CUDA source lines, with Nsight Compute's metric names in its application/json. --lines annotates the cell's source line by line. It also shows the launch's estimated time on the modelled GPU and what bounds it (DRAM, L2, issue, latency, atomics: each resource's share). On a GPU it also times the launch on the GPU (on copies). --ncu (GPU backend, Nsight Compute installed: `ncu` on PATH or NBCUDA_NCU=PATH) also runs the launch under ncu in a fresh GPU worker process on copies of its arrays and shows ncu's values beside ptxsim's, metric by metric with their ratio (and as \"ncu\" in the application/json); where ncu cannot measure (no GPU, no ncu, ERR_NVGPUCTRPERM, a timeout: NBCUDA_NCU_TIMEOUT seconds, default 180) it says why in one line and shows ptxsim's counters alone.",
    ),
    m(
        "%gpu",
        "%gpu [MODEL | compare LAUNCH]",
        "Lists the GPU models ptxsim knows (T4, V100, A100, L4, RTX 3090, RTX 4090, H100, H200: SMs, clocks, bandwidth, L2, per-SM limits), * marking the modelled one; %gpu MODEL models that GPU from now on (default: H200 on ptxsim, the GPU itself on a GPU); %gpu compare LAUNCH estimates the launch on every model (ptxsim's counts through ptxsim::model) in one table.",
    ),
    m(
        "%reset",
        "%reset",
        "Rebuilds the device context (after a device fault).",
    ),
    m(
        "%clear_output",
        "%clear_output [--wait]",
        "Clears the cell's output.",
    ),
    m("%lsmagic", "%lsmagic", "Lists the magics."),
    m("%help", "%help [MAGIC]", "Help for one magic, or for all of them."),
];

/// Names of all magics (`%%cuda`, `%array`, …).
pub fn names() -> Vec<&'static str> {
    MAGICS.iter().map(|d| d.name).collect()
}

/// The doc of a magic given with or without its `%`/`%%`.
pub fn find(name: &str) -> Option<&'static MagicDoc> {
    let bare = name.trim_start_matches('%');
    MAGICS
        .iter()
        .find(|d| d.name.trim_start_matches('%') == bare)
}

/// The candidate closest to `word` if it is close enough to be a plausible typo.
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(f64, &str)> = None;
    // Never suggest what was written: "did you mean X?" for X itself leads nowhere.
    for c in candidates.into_iter().filter(|c| *c != word) {
        let score = strsim::jaro_winkler(word, c);
        let close = strsim::damerau_levenshtein(word, c) <= (c.len().max(word.len()) / 3).max(1)
            || score >= 0.85
            || (word.len() >= 3 && c.starts_with(word));
        if close && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, c));
        }
    }
    best.map(|(_, c)| c)
}

/// `%lsmagic` text.
pub fn lsmagic() -> String {
    let line: Vec<&str> = MAGICS
        .iter()
        .filter(|d| !d.name.starts_with("%%"))
        .map(|d| d.name)
        .collect();
    let cell: Vec<&str> = MAGICS
        .iter()
        .filter(|d| d.name.starts_with("%%"))
        .map(|d| d.name)
        .collect();
    format!(
        "Available line magics:\n{}\n\nAvailable cell magics:\n{}\n\n%help MAGIC for details.\n",
        line.join("  "),
        cell.join("  ")
    )
}

/// `%help` or `%help MAGIC` text.
pub fn help(name: Option<&str>) -> Result<String, String> {
    match name {
        Some(n) => match find(n) {
            Some(d) => Ok(format!("{}\n    {}\n", d.syntax, d.about)),
            None => {
                let hint = nearest(&format!("%{}", n.trim_start_matches('%')), names())
                    .map(|s| format!("; did you mean {s}?"))
                    .unwrap_or_default();
                Err(format!(
                    "unknown magic %{}{hint}",
                    n.trim_start_matches('%')
                ))
            }
        },
        None => {
            let mut s = String::new();
            for d in MAGICS {
                s.push_str(d.syntax);
                s.push_str("\n    ");
                s.push_str(d.about);
                s.push('\n');
            }
            s.push_str(
                "\nExpressions: integers (1_000, 1e6, 0x10), floats, + - * / % (integer / truncates), \
                 parentheses, ceil(a / b), floor, min, max, int, float, sqrt, len(x), x.shape[i], \
                 pi, gpu (1 on a GPU, 0 on ptxsim), by_backend(SIM, GPU) (picks by backend: \
                 %set N = by_backend(1_000_000, 50_000_000)), and %set scalars.\nDtypes: f32 f64 f16 bf16 i8 i16 i32 i64 u8 u16 u32 u64.\n",
            );
            Ok(s)
        }
    }
}
