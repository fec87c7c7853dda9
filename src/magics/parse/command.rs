//! One parsed magic line: [`Command`], one variant per line magic, and [`GraphCmd`], what follows
//! `%graph`. The variants of the longer magics hold their `*_args` structs.
//!
//! Data only: this module must not parse (the parsers build these values) nor import the
//! magics' execution modules, which consume them.

use super::super::lex::Span;
use super::ast::{Ctor, DtypeArg, Expr, Launch, Name};
use super::profile_args::ProfileArgs;
use super::show_args::ShowArgs;
use super::time_args::TimeArgs;

/// One parsed magic line.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    LsMagic,
    Help(Option<Name>),
    ClearOutput {
        wait: bool,
    },
    Array {
        name: Name,
        ctor: Ctor,
        dtype: Option<DtypeArg>,
        span: Span,
        /// `%array --managed NAME = …`: managed (unified) memory.
        managed: bool,
    },
    Load {
        name: Name,
        path: Name,
        gray: bool,
        as_dtype: Option<DtypeArg>,
    },
    Save {
        name: Name,
        path: Name,
    },
    /// `%set` alone lists the scalars.
    Set(Option<(Name, Expr)>),
    Launch(Launch),
    Arrays,
    Print {
        name: Name,
        head: Option<Expr>,
    },
    Free(Vec<Name>),
    Swap(Name, Name),
    /// `%copy DST = SRC`.
    Copy {
        dst: Name,
        src: Name,
    },
    Sync(Option<Name>),
    /// `%upload NAME [STREAM]`: the array's host copy to the device, asynchronously.
    Upload(Name, Option<Name>),
    /// `%download NAME [STREAM]`: the device contents into the array's host copy.
    Download(Name, Option<Name>),
    /// `%device` lists the devices; `%device N` selects GPU N.
    Device(Option<Expr>),
    /// `%limit` lists the device limits; `%limit stack BYTES` sets one (CUDA's
    /// `cudaDeviceSetLimit`: `stack` is `cudaLimitStackSize`, bytes of call stack per thread).
    Limit(Option<(Name, Expr)>),
    Backend(Name),
    Ptx(Name),
    /// `%info [--gpu MODEL] KERNEL`: resources, and occupancy on the modelled GPU (or MODEL).
    Info {
        kernel: Name,
        gpu: Option<Name>,
    },
    /// `%gpu` lists the GPU models; `%gpu MODEL` chooses the one ptxsim models.
    Gpu(Option<Name>),
    /// `%gpu compare LAUNCH`: the launch's estimated time on every GPU model.
    GpuCompare(Box<Launch>),
    /// `%gpu define NAME key=value...`: a GPU model the table lacks (keys `sms`, `clock_mhz`,
    /// `dram_gb_s`, `l2_mib`, `cc`, optional `dram_gb`), each value with its span.
    GpuDefine {
        name: Name,
        figures: Vec<(Name, Name)>,
    },
    Reset,
    /// `%show NAME... [--cmap MAP] [--vmin V] [--vmax V] [--scale K]`.
    Show(ShowArgs),
    /// `%time [-n RUNS] [--warmup W] [--bytes EXPR] [--flops EXPR] LAUNCH`.
    Time(Box<TimeArgs>),
    /// `%profile [--gpu MODEL] [--lines] [--check] [--ncu] LAUNCH`.
    Profile(Box<ProfileArgs>),
    /// `%timings [--clear]`.
    Timings {
        clear: bool,
    },
    /// `%graph`, `%graph begin NAME`, `%graph end`, `%graph launch NAME [-n K]`,
    /// `%graph drop NAME`.
    Graph(GraphCmd),
    /// `%prefetch NAME [gpu|host]` (default gpu).
    Prefetch {
        name: Name,
        to_device: bool,
    },
    /// `%timeline …`: record and show when device work runs.
    Timeline(TimelineCmd),
    /// `%event …`: events that order streams.
    Event(EventCmd),
}

/// What follows `%timeline`.
#[derive(Debug, Clone, PartialEq)]
pub enum TimelineCmd {
    /// `%timeline`: the chart and table of what was recorded.
    Show,
    On,
    Off,
    Clear,
    /// `--save PATH.json`: Chrome's trace-event JSON.
    Save(Name),
    /// `--json`: the trace-event JSON as the line's text result (for `nb::exec`).
    Json,
}

/// What follows `%event`.
#[derive(Debug, Clone, PartialEq)]
pub enum EventCmd {
    /// `%event record NAME [STREAM]`: `cudaEventRecord`.
    Record { name: Name, stream: Option<Name> },
    /// `%event wait NAME STREAM`: `cudaStreamWaitEvent`, STREAM waits for the event.
    Wait { name: Name, stream: Name },
}

/// What follows `%graph`.
#[derive(Debug, Clone, PartialEq)]
pub enum GraphCmd {
    List,
    Begin(Name),
    End,
    Launch { name: Name, times: Option<Expr> },
    Drop(Name),
}
