//! The registry of magics: one entry per line or cell magic with everything that is known about
//! it (name, syntax, help text, the parser of its arguments, what it may do while a CUDA graph is
//! being recorded, the completer of its arguments). `%lsmagic`, `%help`, inspection, the
//! dispatch of a magic line to its parser, the graph recorder's rule and completion are all
//! derived from [`MAGICS`]: adding a magic is adding one entry (and its [`Command`] variant,
//! whose handler the executor's exhaustive `match` then requires).
//!
//! Data and lookups only: nothing here runs a command or touches the device.

use super::complete_args::{self, CompleteFn};
use super::lex::ParseError;
use super::parse::{self, Command, GraphCmd, ParseFn};
use crate::suggest;

/// One magic.
pub struct Magic {
    /// With its `%` (line magic) or `%%` (cell magic).
    pub name: &'static str,
    /// One line of syntax.
    pub syntax: &'static str,
    /// What it does, in a sentence or a few.
    pub about: &'static str,
    pub form: Form,
    /// Completes its arguments.
    pub complete: CompleteFn,
}

/// A line magic with its parser, or a cell magic (whose header `super::run_cell` parses).
pub enum Form {
    Line {
        parse: ParseFn,
        while_recording: WhileRecording,
    },
    Cell,
}

/// What a line magic does while `%graph begin NAME` is open.
pub enum WhileRecording {
    /// It runs as usual: it changes neither arrays nor the device.
    Runs,
    /// It is checked and recorded into the graph instead of run.
    Recorded,
    /// It is refused with a `GraphError` naming the graph.
    Refused,
    /// It runs when the parsed command passes the test (a form that only lists or reads), and is
    /// refused otherwise.
    RunsIf(fn(&Command) -> bool),
}

/// Every magic of this version, cell magics first.
pub static MAGICS: &[Magic] = &[
    Magic {
        name: "%%cuda",
        syntax: "%%cuda [--name M] [-DNAME=V] [--std=c++17] [--fast-math] [-G] [--arch sm_XX]",
        about: "Compiles the cell's CUDA C++ with NVRTC; every __global__ function becomes a launchable CUDA kernel (re-running the cell replaces them); prints a summary per kernel, the compile time and whether the cache served it.",
        form: Form::Cell,
        complete: complete_args::expression,
    },
    Magic {
        name: "%%animate",
        syntax: "%%animate [--frames N] [--every K] [--show NAME] [--fps F] [--cmap MAP] [--vmin V] [--vmax V] [--scale K]",
        about: "Runs the cell's magic lines N times (default 30), captures the 2-D array NAME (or the one of a %show NAME line in the cell) after every K-th run and the last, and shows the frames as an animated GIF with one colour range.",
        form: Form::Cell,
        complete: complete_args::expression,
    },
    Magic {
        name: "%show",
        syntax: "%show NAME... [--cmap viridis|magma|inferno|plasma|turbo|cividis|gray|coolwarm] [--vmin V] [--vmax V] [--scale K]",
        about: "Shows arrays as images: 2-D as a heatmap with a colour bar (NaN/Inf in magenta), (H, W, 3|4) as RGB(A), 1-D as a line plot; several names side by side.",
        form: Form::Line {
            parse: |p| p.show(),
            while_recording: WhileRecording::Runs,
        },
        complete: complete_args::expression,
    },
    Magic {
        name: "%time",
        syntax: "%time [-n RUNS] [--warmup W] [--bytes EXPR] [--flops EXPR] [--gpu MODEL] LAUNCH | graph NAME",
        about: "Times a launch (or, with graph NAME, one replay of a recorded CUDA graph: on a GPU beside the same steps launched one by one; on ptxsim with the model's estimate of both) (LAUNCH as for %launch): runs, median/min/max/stdev, GB/s (bytes: --bytes or the array arguments' sizes, marked est.), GFLOP/s with --flops, % of peak bandwidth; CUDA events on a GPU, wall time (simulated) on ptxsim and beside it the modelled GPU's estimated time (ptxsim::model, from one counted run on copies; --gpu MODEL for another than %gpu's).",
        form: Form::Line {
            parse: |p| p.time(),
            while_recording: WhileRecording::Refused,
        },
        complete: complete_args::expression,
    },
    Magic {
        name: "%timings",
        syntax: "%timings [--clear]",
        about: "Every %time so far side by side with speed-ups against the first, as a table and a bar chart; --clear forgets them.",
        form: Form::Line {
            parse: |p| p.timings(),
            while_recording: WhileRecording::RunsIf(|c| matches!(c, Command::Timings { clear: false })),
        },
        complete: complete_args::expression,
    },
    Magic {
        name: "%array",
        syntax: "%array [--managed] NAME = zeros(SHAPE, DT) | ones(SHAPE, DT) | empty(SHAPE, DT) | full(SHAPE, V, DT) | arange(N, DT) | arange(START, STOP[, STEP], DT) | linspace(A, B, N, DT) | rand(SHAPE, DT[, seed=S]) | randn(SHAPE, DT[, seed=S]) | copy(OTHER)",
        about: "Creates (or replaces) a device array; SHAPE is N, (H, W) or (D, H, W); rand() is uniform in [0, 1) for floats (f32, f64, f16, bf16) and in [0, 100) for integer dtypes, randn() is standard normal (floats only); without seed= every call differs; empty() is zero-filled here; --managed allocates managed (unified) memory (cuMemAllocManaged, refused beyond the GPU's free memory; ordinary memory on ptxsim).",
        form: Form::Line {
            parse: |p| p.array(),
            while_recording: WhileRecording::Refused,
        },
        complete: complete_args::array,
    },
    Magic {
        name: "%load",
        syntax: "%load NAME = PATH.png|.jpg|.npy [--gray] [--as DT]",
        about: "Loads an image as (H, W, 3) u8 ((H, W, 4) if it has alpha; (H, W) with --gray; --as a float dtype scales to [0, 1]) or a .npy array (1-4 dims, any numeric dtype; float16 loads as f16 and a 2-byte void (ml_dtypes' bfloat16) as bf16; --as converts).",
        form: Form::Line {
            parse: |p| p.load(),
            while_recording: WhileRecording::Refused,
        },
        complete: complete_args::load,
    },
    Magic {
        name: "%save",
        syntax: "%save NAME PATH.png|.jpg|.npy",
        about: "Saves an array: .npy for any array; .png for (H, W) (u8 as is, other dtypes scaled min..max to gray) and (H, W, 3|4) u8 (floats clamped to [0, 1]).",
        form: Form::Line {
            parse: |p| p.save(),
            while_recording: WhileRecording::Runs,
        },
        complete: complete_args::save,
    },
    Magic {
        name: "%set",
        syntax: "%set NAME = EXPR",
        about: "Sets a scalar (integer or float) usable in every expression; %set alone lists them. by_backend(SIM, GPU) picks a size per backend: %set N = by_backend(1_000_000, 50_000_000).",
        form: Form::Line {
            parse: |p| p.set(),
            while_recording: WhileRecording::Runs,
        },
        complete: complete_args::set,
    },
    Magic {
        name: "%launch",
        syntax: "%launch [--check] [--cooperative] KERNEL[GRID, BLOCK(, SHMEM(, STREAM))](ARGS) | KERNEL<<<GRID, BLOCK(, SHMEM(, STREAM))>>>(ARGS) | KERNEL[auto](ARGS)",
        about: "Launches a CUDA kernel: GRID and BLOCK are integers or tuples of up to 3; ARGS are checked against the C signature: a pointer takes an array name, `a + N` (N elements in) or null; a number or expression a scalar; a vector type or struct passed by value takes a tuple of its members in order, nested tuples and fixed arrays flattened ((1.0, 2.0), or (W, H, W, a) for `struct Matrix { int width, height, stride; float* elements; }`), the same with its name (Matrix(W, H, W, a)), or its members by name in any order (Matrix(width=W, height=H, stride=W, elements=a + 16); nested: in=Input(data=x, n=N)), a pointer member taking an array, `a + N` or null as a pointer does; a cuda::std::span<T> or mdspan<T, dextents<I, R>> takes an array (a span also `a + N`), passing its address and shape, checked against the element type, rank and fixed extents; typedef and using aliases count as the types they name; [auto] uses blocks of 256 over the first array; --check runs it on the simulator with the memory and race checker, on copies of its arrays: a diagnostic that leaves every array unchanged; --cooperative makes every block resident at once (cuLaunchCooperativeKernel on a GPU, all blocks side by side on ptxsim), so cooperative_groups::this_grid().sync() is a barrier across the grid: a CUDA kernel that uses it is launched so without the flag (with a note saying so), and a grid larger than the device holds at once (blocks per SM × SMs) is refused, naming the limit.",
        form: Form::Line {
            parse: |p| p.launch_line(),
            while_recording: WhileRecording::Recorded,
        },
        complete: complete_args::launch,
    },
    Magic {
        name: "%arrays",
        syntax: "%arrays",
        about: "Table of the device arrays: name, dtype, shape, bytes, backend and the CUDA kernel that last wrote each.",
        form: Form::Line {
            parse: |p| p.arrays(),
            while_recording: WhileRecording::Runs,
        },
        complete: complete_args::nothing,
    },
    Magic {
        name: "%print",
        syntax: "%print NAME [--head N]",
        about: "Prints an array's values numpy-style (first and last ones when large; --head N: the first N along the first axis) with min, max, mean and NaN count.",
        form: Form::Line {
            parse: |p| p.print(),
            while_recording: WhileRecording::Runs,
        },
        complete: complete_args::print,
    },
    Magic {
        name: "%free",
        syntax: "%free NAME...",
        about: "Frees device arrays.",
        form: Form::Line {
            parse: |p| p.free(),
            while_recording: WhileRecording::Refused,
        },
        complete: complete_args::arrays,
    },
    Magic {
        name: "%swap",
        syntax: "%swap A B",
        about: "Swaps the contents of two arrays (by name, no copy).",
        form: Form::Line {
            parse: |p| p.swap(),
            while_recording: WhileRecording::Refused,
        },
        complete: complete_args::arrays,
    },
    Magic {
        name: "%graph",
        syntax: "%graph [begin NAME | end | launch NAME [-n K] | drop NAME]",
        about: "CUDA Graphs: between %graph begin NAME and %graph end, %launch and %copy lines are checked and recorded instead of run (commands that change arrays are refused); %graph launch NAME replays them K times (a GPU: stream capture, cuGraphInstantiate, cuGraphLaunch; ptxsim: step by step under the checker); %graph lists graphs with their steps; %free refuses an array a graph uses.",
        form: Form::Line {
            parse: |p| p.graph(),
            while_recording: WhileRecording::RunsIf(|c| !matches!(c, Command::Graph(GraphCmd::Launch { .. }))),
        },
        complete: complete_args::graph,
    },
    Magic {
        name: "%prefetch",
        syntax: "%prefetch NAME [gpu|host]",
        about: "Migrates a managed array (%array --managed) to the GPU (default) or to the host and waits (cuMemPrefetchAsync); on ptxsim there is nothing to migrate.",
        form: Form::Line {
            parse: |p| p.prefetch(),
            while_recording: WhileRecording::Refused,
        },
        complete: complete_args::prefetch,
    },
    Magic {
        name: "%copy",
        syntax: "%copy DST = SRC",
        about: "Copies array SRC's contents into array DST on the device (same dtype and number of elements; shapes may differ). Fills a %%cuda cell's __constant__/__device__ variable, which is an array of its C name.",
        form: Form::Line {
            parse: |p| p.copy(),
            while_recording: WhileRecording::Recorded,
        },
        complete: complete_args::arrays,
    },
    Magic {
        name: "%sync",
        syntax: "%sync [STREAM]",
        about: "Waits for all work (or one stream's work) on the device; finishes the %downloads on it.",
        form: Form::Line {
            parse: |p| p.sync(),
            while_recording: WhileRecording::Refused,
        },
        complete: complete_args::nothing,
    },
    Magic {
        name: "%upload",
        syntax: "%upload NAME [STREAM]",
        about: "Copies the array's host copy to the device on STREAM, asynchronously (from pinned memory on a GPU); the host copy is the data the array was made from, or what %download fetched.",
        form: Form::Line {
            parse: |p| p.upload(),
            while_recording: WhileRecording::Refused,
        },
        complete: complete_args::arrays,
    },
    Magic {
        name: "%download",
        syntax: "%download NAME [STREAM]",
        about: "Copies the array's device contents into its host copy on STREAM, asynchronously; complete after %sync (then %upload can send it back).",
        form: Form::Line {
            parse: |p| p.download(),
            while_recording: WhileRecording::Refused,
        },
        complete: complete_args::arrays,
    },
    Magic {
        name: "%event",
        syntax: "%event record NAME [STREAM] | %event wait NAME STREAM",
        about: "Events order streams without blocking the host: `record` marks the point reached in STREAM (cudaEventRecord; the default stream without one), `wait` makes STREAM wait for the work before the event's latest record (cudaStreamWaitEvent).",
        form: Form::Line {
            parse: |p| p.event(),
            while_recording: WhileRecording::Refused,
        },
        complete: complete_args::nothing,
    },
    Magic {
        name: "%timeline",
        syntax: "%timeline [on | off | clear | --save PATH.json | --json]",
        about: "Records when device work runs: `on` starts recording every launch, %upload/%download/%copy, %event and %sync per stream; `%timeline` shows a chart (a lane per stream and per copy engine) and a table; --save writes Chrome trace-event JSON (Perfetto, chrome://tracing). Measured with CUDA events on a GPU; on ptxsim modelled on the %gpu model: each launch lasts its estimated time, streams run side by side while the SMs have room, copies run on the copy engines at the host link's rate.",
        form: Form::Line {
            parse: |p| p.timeline(),
            while_recording: WhileRecording::Refused,
        },
        complete: complete_args::nothing,
    },
    Magic {
        name: "%device",
        syntax: "%device [N]",
        about: "Table of the active device (name, SMs, memory, compute capability, bandwidth) and backend, with every GPU found; %device N moves to GPU N (arrays and CUDA kernels move with it).",
        form: Form::Line {
            parse: |p| p.device(),
            while_recording: WhileRecording::RunsIf(|c| matches!(c, Command::Device(None))),
        },
        complete: complete_args::nothing,
    },
    Magic {
        name: "%backend",
        syntax: "%backend gpu|sim",
        about: "Switches between the GPU and the ptxsim simulator; the arrays move with it.",
        form: Form::Line {
            parse: |p| p.backend(),
            while_recording: WhileRecording::Refused,
        },
        complete: complete_args::backend,
    },
    Magic {
        name: "%limit",
        syntax: "%limit [stack BYTES]",
        about: "Table of the device limits; %limit stack BYTES sets the call stack per thread of every later launch (CUDA's cudaLimitStackSize, default 1024, up to 1 MiB); a deeper recursion stops the launch with a DeviceFault.",
        form: Form::Line {
            parse: |p| p.limit(),
            while_recording: WhileRecording::RunsIf(|c| matches!(c, Command::Limit(None))),
        },
        complete: complete_args::limit,
    },
    Magic {
        name: "%ptx",
        syntax: "%ptx KERNEL",
        about: "Shows the PTX of a CUDA kernel.",
        form: Form::Line {
            parse: |p| p.ptx(),
            while_recording: WhileRecording::Runs,
        },
        complete: complete_args::kernels,
    },
    Magic {
        name: "%info",
        syntax: "%info [--gpu MODEL] KERNEL",
        about: "Signature and resources of a CUDA kernel (registers, static shared and local memory, max threads per block: on ptxsim, or for another GPU model, read from a CUBIN that NVRTC compiles for the model's sm_XX), and its theoretical occupancy per block size on the modelled GPU (or MODEL): blocks and warps per SM, occupancy and what limits it.",
        form: Form::Line {
            parse: |p| p.info(),
            while_recording: WhileRecording::Runs,
        },
        complete: complete_args::info,
    },
    Magic {
        name: "%profile",
        syntax: "%profile [--gpu MODEL] [--lines] [--check] [--ncu] [--full] [--warm] LAUNCH",
        about: "Profiles a launch (LAUNCH as for %launch) the way Nsight Compute would: ptxsim counts it on copies of its arrays (nothing changes) as the GPU's counters count (requests and 32-byte sectors per global load/store, shared-memory wavefronts and bank conflicts, atomics, instructions by kind, active threads per instruction, DRAM bytes through an L2 model of the modelled GPU); shows launch, occupancy, memory and compute sections, the likely limiter in one line and the five hottest CUDA source lines, with Nsight Compute's metric names in its application/json. --lines annotates the cell's source line by line. It also shows the launch's estimated time on the modelled GPU and what bounds it (DRAM, L2, issue, latency, atomics: each resource's share). On a GPU it also times the launch on the GPU (on copies). --ncu (GPU backend, Nsight Compute installed: `ncu` on PATH or NBCUDA_NCU=PATH) also runs the launch under ncu in a fresh GPU worker process on copies of its arrays and shows ncu's values beside ptxsim's, metric by metric with their ratio (and as \"ncu\" in the application/json); where ncu cannot measure (no GPU, no ncu, ERR_NVGPUCTRPERM, a timeout: NBCUDA_NCU_TIMEOUT seconds, default 180) it says why in one line and shows ptxsim's counters alone. A launch whose blocks would take long to count (more than about 25 million warp instructions, each global sector access counting as two) is counted from a sample: whole waves of resident blocks at several places in the grid, the first and the last among them, grown until its blocks agree, scaled to the grid; the display says what was counted (\"3,168 of 65,536 blocks\") and --full counts every block. Memory: the profile runs on copies of the launch's arrays, made page by page, so it needs at most the arrays once more and, for arrays of zeros or a sample of blocks, only the pages the counted blocks touch. So %profile also estimates a launch at a GPU's sizes that ptxsim could not run in full: the arrays stay untouched. --warm counts the L2 as a repeat of the launch finds it (what the previous launch left, as %time's repeats run); without it the L2 starts cold, as Nsight Compute measures.",
        form: Form::Line {
            parse: |p| p.profile(),
            while_recording: WhileRecording::Refused,
        },
        complete: complete_args::profile,
    },
    Magic {
        name: "%gpu",
        syntax: "%gpu [MODEL | compare LAUNCH | define NAME sms=N clock_mhz=N dram_gb_s=N l2_mib=N cc=X.Y [dram_gb=N]]",
        about: "Lists the GPU models ptxsim knows (Volta to Blackwell: V100, T4, A100 80GB/40GB, A10G, RTX A6000, RTX 30x0/40x0/50x0, L4, L40S, H100 SXM/PCIe/NVL, H200, B200, and those defined: SMs, clocks, bandwidth, L2, per-SM limits), * marking the modelled one; %gpu MODEL models that GPU from now on (default: H200 on ptxsim, the GPU itself on a GPU; names with spaces need no quotes); %gpu compare LAUNCH estimates the launch on every model (ptxsim's counts through ptxsim::model) in one table; %gpu define NAME ... adds a GPU the table lacks from its datasheet figures (SM count, boost clock, DRAM bandwidth, L2 size, compute capability, whose per-SM limits it takes), for this Jupyter kernel.",
        form: Form::Line {
            parse: |p| p.gpu(),
            while_recording: WhileRecording::RunsIf(|c| {
                matches!(c, Command::Gpu(_) | Command::GpuDefine { .. })
            }),
        },
        complete: complete_args::gpu_models,
    },
    Magic {
        name: "%reset",
        syntax: "%reset",
        about: "Rebuilds the device context (after a device fault).",
        form: Form::Line {
            parse: |p| p.reset(),
            while_recording: WhileRecording::Refused,
        },
        complete: complete_args::nothing,
    },
    Magic {
        name: "%clear_output",
        syntax: "%clear_output [--wait]",
        about: "Clears the cell's output.",
        form: Form::Line {
            parse: |p| p.clear_output(),
            while_recording: WhileRecording::Runs,
        },
        complete: complete_args::nothing,
    },
    Magic {
        name: "%lsmagic",
        syntax: "%lsmagic",
        about: "Lists the magics.",
        form: Form::Line {
            parse: |p| p.lsmagic(),
            while_recording: WhileRecording::Runs,
        },
        complete: complete_args::nothing,
    },
    Magic {
        name: "%help",
        syntax: "%help [MAGIC]",
        about: "Help for one magic, or for all of them.",
        form: Form::Line {
            parse: |p| p.help(),
            while_recording: WhileRecording::Runs,
        },
        complete: complete_args::magic_name,
    },
];

/// Names of all magics (`%%cuda`, `%array`, …).
pub fn names() -> Vec<&'static str> {
    MAGICS.iter().map(|d| d.name).collect()
}

/// The magic of a name given with or without its `%`/`%%`.
pub fn find(name: &str) -> Option<&'static Magic> {
    let bare = name.trim_start_matches('%');
    MAGICS
        .iter()
        .find(|d| d.name.trim_start_matches('%') == bare)
}

/// The line magic of a name given without its `%`.
fn line_magic(bare: &str) -> Option<(ParseFn, &'static WhileRecording)> {
    MAGICS.iter().find_map(|d| match &d.form {
        Form::Line {
            parse,
            while_recording,
        } if d.name.strip_prefix('%') == Some(bare) => Some((*parse, while_recording)),
        _ => None,
    })
}

/// Parses one magic line (it starts with `%`; leading whitespace allowed) with its magic's
/// parser.
pub fn parse_line(line: &str) -> Result<Command, ParseError> {
    parse::parse_line_with(line, |bare| line_magic(bare).map(|(parse, _)| parse))
}

/// Whether `cmd`, parsed from line magic `%bare`, may run while a graph is being recorded (it
/// neither changes arrays nor the device, or it is recorded).
pub fn runs_while_recording(bare: &str, cmd: &Command) -> bool {
    match line_magic(bare) {
        Some((_, WhileRecording::Runs | WhileRecording::Recorded)) => true,
        Some((_, WhileRecording::RunsIf(test))) => test(cmd),
        Some((_, WhileRecording::Refused)) | None => false,
    }
}

/// `%lsmagic` text.
pub fn lsmagic() -> String {
    let line: Vec<&str> = MAGICS
        .iter()
        .filter(|d| matches!(d.form, Form::Line { .. }))
        .map(|d| d.name)
        .collect();
    let cell: Vec<&str> = MAGICS
        .iter()
        .filter(|d| matches!(d.form, Form::Cell))
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
                let word = format!("%{}", n.trim_start_matches('%'));
                let hint = suggest::did_you_mean(&word, names(), suggest::Quote::Plain)
                    .map(|h| format!("; {h}"))
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
