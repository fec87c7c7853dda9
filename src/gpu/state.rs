//! [`DeviceState`]: the Jupyter kernel process's device — named arrays, `%%cuda` cells and their
//! CUDA kernels, streams — on one [`Backend`]. Every user error is a [`GpuError`] raised before
//! anything runs, and a failed command leaves arrays and kernels as they were.
//!
//! Cells: a cell compiled with `--name M` replaces the earlier cell named `M`; an unnamed cell
//! replaces earlier unnamed cells that define any of the same CUDA kernel names. A kernel name is
//! served by the newest cell that defines it. Template instantiations (`scale<float>`) are
//! compiled on demand by recompiling the cell that defines the template (cached on disk).
//!
//! Backends: a GPU (`cuda.rs`) when one is detected, else ptxsim; `switch.rs` holds the choice,
//! `%backend`/`%device` moves, and the recovery after a sticky GPU fault (with the rule for the
//! host copies that recovery restores arrays from).

use super::args::{self, ArrayRef};
use super::backend::{
    Backend, BackendLaunch, BackendLaunchError, DevPtr, ModuleId, ModuleImage, StreamId,
};
use super::fault::{self, CellText, NamedAlloc};
use super::kernels::{self, Cell, LoadedKernel};
use super::sim::SimBackend;
use super::*;
use crate::compile::{scan, Compiler};
use crate::suggest::{did_you_mean, Quote};
use nb::ErrorKind;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

mod cooperative;
mod copies;
mod events;
mod graphs;
mod model;
mod ncu;
mod profile;
mod switch;
mod symbols;
mod timeline;

pub use graphs::GraphStep;
pub use ncu::NcuOutcome;
pub use profile::{ProfileLine, ProfileOutcome};
pub use timeline::{TimelineRow, TimelineView};

/// A launch run on a fresh ptxsim device on copies of its arrays
/// ([`DeviceState::run_on_sim_copies`]).
pub(super) struct SimCopyRun {
    /// The copies, named as the arrays (for fault reports).
    pub allocs: Vec<NamedAlloc>,
    pub packed: args::Packed,
    pub result: Result<super::backend::BackendReport, BackendLaunchError>,
    pub elapsed_ms: f64,
}

/// How many freed arrays are remembered, to name use-after-free addresses.
const FREED_MEMORY: usize = 32;

#[derive(Debug, Clone)]
struct Array {
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: usize,
    ptr: DevPtr,
    last_writer: Option<String>,
    /// Host copy of the content while it came from the host (GPU backend only; see `switch.rs`).
    shadow: Option<Arc<Vec<u8>>>,
    /// The array's host copy for `%upload`/`%download`: the data it was made from or what the
    /// last `%download` fetched (shares its bytes with `shadow` while both exist).
    host: Option<Arc<Vec<u8>>>,
    /// Set when the array is a `__constant__`/`__device__` variable of a loaded cell: its
    /// memory belongs to that module (never allocated or freed here).
    symbol: Option<SymbolOf>,
    /// Managed (unified) memory: `%array --managed`.
    managed: bool,
}

/// Which module's variable an array is.
#[derive(Debug, Clone, Copy, PartialEq)]
struct SymbolOf {
    module: ModuleId,
    /// `"__constant__"` or `"__device__"`.
    space: &'static str,
}

/// The kernel process's device: arrays, modules, kernels.
pub struct DeviceState {
    backend: Box<dyn Backend>,
    compiler: Compiler,
    arrays: BTreeMap<String, Array>,
    freed: Vec<NamedAlloc>,
    /// Oldest first.
    cells: Vec<Cell>,
    streams: HashMap<String, StreamId>,
    /// Why ptxsim runs instead of a GPU (None on a GPU).
    backend_note: Option<String>,
    /// A recovery report not yet shown (see `take_notice`).
    notice: Option<String>,
    /// Arrays lost to a GPU fault: name → the fault.
    lost: BTreeMap<String, String>,
    /// `%download`s in flight: (array, stream, the backend's download id).
    downloads: Vec<copies::Download>,
    /// Bytes of call stack per thread for every launch (`%limit stack`), on every backend.
    stack_bytes: u32,
    /// The GPU `%gpu MODEL` chose (None: the real GPU's entry, or H200 on ptxsim; `model.rs`).
    gpu_model: Option<ptxsim::gpus::GpuModel>,
    /// GPUs that `%gpu define` added beside the table, in the order defined.
    defined_gpus: Vec<ptxsim::gpus::GpuModel>,
    /// Recorded CUDA graphs (`%graph`), by name.
    graphs: BTreeMap<String, graphs::Graph>,
    /// The graph being recorded: its name and steps so far.
    recording: Option<(String, Vec<GraphStep>)>,
    /// `%timeline`'s recording.
    timeline: timeline::Recorder,
    /// `%event` events by name.
    events: HashMap<String, super::backend::EventId>,
}

/// The largest call stack per thread `%limit stack` accepts (1 MiB; ptxsim keeps what a runaway
/// recursion pushes in host memory, a GPU reserves it for every resident thread).
pub const MAX_STACK_BYTES: u64 = 1 << 20;

impl Default for DeviceState {
    fn default() -> Self {
        DeviceState::new()
    }
}

fn shape_text(shape: &[usize]) -> String {
    format!(
        "({})",
        shape
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

impl DeviceState {
    /// A GPU when one is detected (`NBCUDA_DEVICE` picks which, default 0; `NBCUDA_BACKEND=sim`
    /// forces ptxsim), else ptxsim; never panics. Unit tests default to ptxsim unless
    /// `NBCUDA_BACKEND=gpu`. The compile cache lives in `$NBCUDA_CACHE_DIR` or
    /// `~/.cache/nbcuda/ptx`.
    pub fn new() -> DeviceState {
        DeviceState::with_cache_dir(crate::compile::cache::DiskCache::default_dir())
    }

    /// Like [`DeviceState::new`] with an explicit compile-cache folder (None: no disk cache).
    pub fn with_cache_dir(dir: Option<PathBuf>) -> DeviceState {
        let choice = switch::backend_choice_from_env();
        let (backend, note) =
            switch::default_backend(choice.as_deref(), switch::ordinal_from_env());
        let mut state = DeviceState::with_backend(backend, dir);
        state.backend_note = note;
        state
    }

    /// A device state on a given backend (tests, benchmarks: e.g. ptxsim in a worker process).
    pub fn with_backend(backend: Box<dyn Backend>, cache_dir: Option<PathBuf>) -> DeviceState {
        DeviceState {
            backend,
            compiler: Compiler::new(cache_dir),
            arrays: BTreeMap::new(),
            freed: Vec::new(),
            cells: Vec::new(),
            streams: HashMap::new(),
            backend_note: None,
            notice: None,
            lost: BTreeMap::new(),
            downloads: Vec::new(),
            gpu_model: None,
            defined_gpus: Vec::new(),
            graphs: BTreeMap::new(),
            recording: None,
            timeline: Default::default(),
            events: HashMap::new(),
            stack_bytes: ptxsim::DEFAULT_STACK_BYTES,
        }
    }

    /// The GPU worker process holding the device, if any.
    pub fn worker_pid(&self) -> Option<u32> {
        self.backend.worker_pid()
    }

    pub fn describe(&self) -> DeviceDescription {
        let mut d = self.backend.describe();
        match detect::detect_gpus() {
            Ok(list) => {
                let active = d
                    .rows
                    .iter()
                    .find(|(k, _)| k == "device")
                    .map(|(_, v)| v.clone());
                for g in &list {
                    let here = active
                        .as_deref()
                        .is_some_and(|v| v.starts_with(&format!("{}:", g.ordinal)));
                    d.rows.push((
                        format!("GPU {}", g.ordinal),
                        format!(
                            "{}, {}, {} SMs, {:.1} GiB, {} MHz, {:.0} GB/s peak{}",
                            g.name,
                            g.arch(),
                            g.sms,
                            g.memory_bytes as f64 / f64::from(1u32 << 30),
                            g.clock_mhz,
                            g.peak_bandwidth_gbs,
                            if here { " (active)" } else { "" }
                        ),
                    ));
                }
            }
            Err(why) => d.rows.push(("GPUs".into(), format!("none ({why})"))),
        }
        if let Some(pid) = self.backend.worker_pid() {
            d.rows.push((
                "GPU worker process".into(),
                format!(
                    "pid {pid} (holds the CUDA context; a sticky device fault replaces it, the \
                     Jupyter kernel stays)"
                ),
            ));
        }
        if let Some(note) = &self.backend_note {
            d.rows.push(("backend choice".into(), note.clone()));
        }
        if let Some(dir) = self.compiler.cache_dir() {
            d.rows
                .push(("compile cache".into(), dir.display().to_string()));
        }
        d
    }

    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// Bytes of call stack per thread that launches get (`%limit`).
    pub fn stack_limit(&self) -> u32 {
        self.stack_bytes
    }

    /// `%limit stack BYTES`: the call stack per thread of every later launch, 1 to
    /// [`MAX_STACK_BYTES`] (a GPU gets it at its next launch, where the driver may refuse it).
    pub fn set_stack_limit(&mut self, bytes: i64) -> Result<(), GpuError> {
        match u32::try_from(bytes) {
            Ok(b) if b >= 1 && u64::from(b) <= MAX_STACK_BYTES => {
                self.stack_bytes = b;
                Ok(())
            }
            _ => Err(GpuError::argument(format!(
                "a call stack of {bytes} bytes per thread: expected 1 to {MAX_STACK_BYTES} \
                 (1 MiB; the default is {})",
                ptxsim::DEFAULT_STACK_BYTES
            ))),
        }
    }

    // ---- arrays ----

    /// Why array `name` no longer exists, when a device fault took it.
    pub fn lost_array(&self, name: &str) -> Option<String> {
        self.lost.get(name).map(|why| {
            format!(
                "array `{name}` was lost when a device fault ({why}) destroyed the CUDA context \
                 (its contents were only on the GPU): create it again"
            )
        })
    }

    fn no_array(&self, name: &str) -> GpuError {
        let names: Vec<String> = self.arrays.keys().cloned().collect();
        if let Some(lost) = self.lost_array(name) {
            return GpuError::argument(lost);
        }
        let hint = match did_you_mean(name, names.iter().map(String::as_str), Quote::Code) {
            Some(h) => format!(" ({h})"),
            None => String::new(),
        };
        GpuError::argument(format!("no array named `{name}`{hint}"))
    }

    /// Creates (or replaces) array `name` from row-major little-endian bytes.
    pub fn create_array(
        &mut self,
        name: &str,
        dtype: Dtype,
        shape: Vec<usize>,
        data: &[u8],
    ) -> Result<(), GpuError> {
        self.create_array_in(name, dtype, shape, data, false)
    }

    /// [`DeviceState::create_array`] in managed memory (`managed`: `%array --managed`) or in
    /// device memory.
    pub fn create_array_in(
        &mut self,
        name: &str,
        dtype: Dtype,
        shape: Vec<usize>,
        data: &[u8],
        managed: bool,
    ) -> Result<(), GpuError> {
        if name.is_empty() {
            return Err(GpuError::argument("an array needs a name"));
        }
        self.recover_if_needed()?;
        if let Some(v) = self.arrays.get(name).filter(|a| a.symbol.is_some()) {
            // A module variable keeps its memory: same dtype and size write it in place.
            let count: usize = shape.iter().product();
            let have: usize = v.shape.iter().product();
            if v.dtype == dtype && count == have && data.len() == v.bytes {
                return self.write_array(name, data);
            }
            return Err(GpuError::argument(format!(
                "`{name}` is the {} variable of a %%cuda cell, {} of {have} element(s): it can \
                 only be written with the same dtype and number of elements, not {dtype} of \
                 {count}",
                v.symbol.map_or("", |s| s.space),
                v.dtype
            )));
        }
        if shape.is_empty() || shape.contains(&0) {
            return Err(GpuError::argument(format!(
                "array `{name}`: shape {} has no elements (every dimension must be at least 1)",
                shape_text(&shape)
            )));
        }
        let bytes = shape
            .iter()
            .try_fold(dtype.size(), |acc, d| acc.checked_mul(*d))
            .ok_or_else(|| {
                GpuError::memory(format!(
                    "array `{name}`: shape {} is too large",
                    shape_text(&shape)
                ))
            })?;
        if data.len() != bytes {
            return Err(GpuError::argument(format!(
                "array `{name}` ({dtype}, shape {}) needs {bytes} bytes of data, got {}",
                shape_text(&shape),
                data.len()
            )));
        }
        if managed && self.arrays.get(name).is_some_and(|a| a.symbol.is_some()) {
            return Err(GpuError::argument(format!(
                "`{name}` is a variable of a %%cuda cell: its memory is the module's, it cannot \
                 be managed"
            )));
        }
        let allocated = if managed {
            self.backend.alloc_managed(bytes)
        } else {
            self.backend.alloc(bytes)
        };
        let ptr = allocated.map_err(|e| {
            GpuError::memory(format!(
                "cannot allocate {bytes} bytes for `{name}`: {}",
                e.message
            ))
        })?;
        // A zero-filled array on a backend whose allocations read as zeros needs no copy: its
        // pages stay untouched until a kernel writes them (arrays of a GPU's size on ptxsim).
        let zeros = all_zero(data);
        let skip = zeros && self.backend.alloc_is_zeroed();
        if !skip {
            if let Err(e) = self.backend.htod(ptr, data) {
                let _ = self.backend.free(ptr);
                return Err(e);
            }
        }
        let host = if zeros {
            self.host_zeros(data.len(), Some(name))
        } else {
            self.host_copy_of(data, Some(name))
        };
        let shadow = self.shadow_from(&host);
        let new = Array {
            dtype,
            shape,
            bytes,
            ptr,
            last_writer: None,
            shadow,
            host,
            symbol: None,
            managed,
        };
        self.lost.remove(name);
        if let Some(old) = self.arrays.insert(name.to_string(), new) {
            self.release(name, old);
        }
        Ok(())
    }

    fn release(&mut self, name: &str, a: Array) {
        if a.symbol.is_some() {
            return; // the module's memory
        }
        if self.backend.free(a.ptr).is_ok() {
            self.freed.push(NamedAlloc {
                name: name.to_string(),
                dtype: a.dtype,
                shape: a.shape,
                ptr: a.ptr,
                bytes: a.bytes,
                freed: true,
            });
            if self.freed.len() > FREED_MEMORY {
                self.freed.remove(0);
            }
        }
    }

    fn info_of(&self, name: &str, a: &Array) -> ArrayInfo {
        ArrayInfo {
            name: name.to_string(),
            dtype: a.dtype,
            shape: a.shape.clone(),
            bytes: a.bytes,
            backend: self.backend.name(),
            last_writer: a.last_writer.clone(),
            symbol: a.symbol.map(|s| s.space),
            managed: a.managed,
        }
    }

    pub fn array(&self, name: &str) -> Option<ArrayInfo> {
        self.arrays.get(name).map(|a| self.info_of(name, a))
    }

    /// Every array, sorted by name.
    pub fn arrays(&self) -> Vec<ArrayInfo> {
        self.arrays
            .iter()
            .map(|(n, a)| self.info_of(n, a))
            .collect()
    }

    pub fn read_array(&self, name: &str) -> Result<Vec<u8>, GpuError> {
        let a = self.arrays.get(name).ok_or_else(|| self.no_array(name))?;
        if let (Some(_), Some(copy)) = (self.backend.fault(), &a.shadow) {
            return Ok(copy.to_vec()); // the GPU context is lost, the host copy is exact
        }
        let mut out = vec![0u8; a.bytes];
        self.backend.dtoh(a.ptr, &mut out)?;
        Ok(out)
    }

    /// Overwrites the array's content (same byte length).
    pub fn write_array(&mut self, name: &str, data: &[u8]) -> Result<(), GpuError> {
        self.recover_if_needed()?;
        let a = self.arrays.get(name).ok_or_else(|| self.no_array(name))?;
        if data.len() != a.bytes {
            return Err(GpuError::argument(format!(
                "array `{name}` has {} bytes, got {}",
                a.bytes,
                data.len()
            )));
        }
        let ptr = a.ptr;
        self.backend.htod(ptr, data)?;
        let host = self.host_copy_of(data, Some(name));
        let shadow = self.shadow_from(&host);
        if let Some(a) = self.arrays.get_mut(name) {
            a.last_writer = None;
            a.shadow = shadow;
            a.host = host;
        }
        Ok(())
    }

    pub fn free_array(&mut self, name: &str) -> Result<(), GpuError> {
        self.recover_if_needed()?;
        self.not_a_symbol(name, "free")?;
        if let Some(g) = self.graph_using(name) {
            return Err(GpuError::argument(format!(
                "array `{name}` is used by graph `{g}`: %graph drop {g} before freeing it"
            )));
        }
        let a = self
            .arrays
            .remove(name)
            .ok_or_else(|| self.no_array(name))?;
        self.release(name, a);
        Ok(())
    }

    pub fn swap_arrays(&mut self, a: &str, b: &str) -> Result<(), GpuError> {
        if !self.arrays.contains_key(a) {
            return Err(self.no_array(a));
        }
        if !self.arrays.contains_key(b) {
            return Err(self.no_array(b));
        }
        self.not_a_symbol(a, "swap")?;
        self.not_a_symbol(b, "swap")?;
        if a != b {
            if let (Some(x), Some(y)) = (self.arrays.remove(a), self.arrays.remove(b)) {
                self.arrays.insert(a.to_string(), y);
                self.arrays.insert(b.to_string(), x);
            }
        }
        Ok(())
    }

    // ---- CUDA ----

    /// Compiles a `%%cuda` cell; `first_line` is the cell line of the first source line.
    pub fn compile_cuda(
        &mut self,
        source: &str,
        options: &CudaOptions,
        first_line: usize,
    ) -> Result<CudaCellResult, GpuError> {
        self.recover_if_needed()?;
        let start = Instant::now();
        let names: BTreeSet<String> = scan::scan(source)
            .kernels
            .into_iter()
            .map(|k| k.name)
            .collect();
        let replaced: Vec<usize> = self
            .cells
            .iter()
            .enumerate()
            .filter(|(_, c)| match (&options.name, &c.name) {
                (Some(n), Some(m)) => n == m,
                (None, None) => c.defined_names().iter().any(|n| names.contains(n)),
                _ => false,
            })
            .map(|(i, _)| i)
            .collect();
        let carried: Vec<String> = replaced
            .iter()
            .flat_map(|i| self.cells[*i].instantiations.clone())
            .collect();
        let target = self.backend.compile_target(options);
        let mut built = kernels::build_cell(
            self.backend.as_mut(),
            &self.compiler,
            source,
            options,
            first_line,
            &carried,
            None,
        );
        // A GPU backend that refused NVRTC's CUBIN switches to PTX: compile once more.
        if built.is_err() && self.backend.compile_target(options) != target {
            built = kernels::build_cell(
                self.backend.as_mut(),
                &self.compiler,
                source,
                options,
                first_line,
                &carried,
                None,
            );
        }
        let (cell, compiled, mut notes) = built?;
        for i in replaced.into_iter().rev() {
            let old = self.cells.remove(i);
            self.drop_symbols_of(old.module);
            self.backend.unload_module(old.module);
        }
        let summaries = cell.summaries();
        if cell.scan.kernels.is_empty() && cell.name.is_none() {
            self.backend.unload_module(cell.module);
        } else {
            notes.extend(self.add_symbols(&cell));
            self.cells.push(cell);
        }
        let mut log = compiled.log.clone();
        for n in notes {
            if !log.is_empty() {
                log.push('\n');
            }
            log.push_str(&n);
        }
        Ok(CudaCellResult {
            kernels: summaries,
            cache_hit: compiled.cache_hit,
            compile_ms: start.elapsed().as_secs_f64() * 1e3,
            log,
        })
    }

    /// The newest cell that defines `base`.
    fn owner_of(&self, base: &str) -> Option<usize> {
        self.cells
            .iter()
            .rposition(|c| c.scan.kernels.iter().any(|k| k.name == base))
    }

    /// Every launchable name (and template names), sorted.
    pub fn kernel_names(&self) -> Vec<String> {
        let mut out = BTreeSet::new();
        for (i, c) in self.cells.iter().enumerate() {
            for d in &c.scan.kernels {
                if self.owner_of(&d.name) != Some(i) {
                    continue;
                }
                if d.template_params.is_some() {
                    out.insert(d.name.clone());
                }
            }
            for k in &c.kernels {
                let (base, _) = scan::split_template_name(&k.user_name);
                if self.owner_of(&base) == Some(i) {
                    out.insert(k.user_name.clone());
                }
            }
        }
        out.into_iter().collect()
    }

    fn unknown_kernel(&self, name: &str) -> GpuError {
        let names = self.kernel_names();
        if names.is_empty() {
            return GpuError::launch(format!(
                "no CUDA kernel named `{name}`: compile one in a %%cuda cell first"
            ));
        }
        let word = scan::normalize_kernel_name(name);
        let hint = match did_you_mean(&word, names.iter().map(String::as_str), Quote::Code) {
            Some(h) => h,
            None => format!("CUDA kernels: {}", names.join(", ")),
        };
        GpuError::launch(format!("no CUDA kernel named `{name}` ({hint})"))
    }

    /// (cell, kernel) for a user name, instantiating a template on demand.
    fn resolve(&mut self, name: &str) -> Result<(usize, usize), GpuError> {
        let norm = scan::normalize_kernel_name(name);
        let (base, args) = scan::split_template_name(&norm);
        let ci = self
            .owner_of(&base)
            .ok_or_else(|| self.unknown_kernel(name))?;
        if let Some(ki) = self.cells[ci]
            .kernels
            .iter()
            .position(|k| k.user_name == norm)
        {
            return Ok((ci, ki));
        }
        let cell = &self.cells[ci];
        match (cell.template(&base), args) {
            (Some(_), Some(_)) => {
                let mut inst = cell.instantiations.clone();
                inst.push(norm.clone());
                let (new, _, _) = kernels::build_cell(
                    self.backend.as_mut(),
                    &self.compiler,
                    &cell.source.clone(),
                    &cell.options.clone(),
                    cell.first_line,
                    &inst,
                    Some(&norm),
                )?;
                let old = std::mem::replace(&mut self.cells[ci], new);
                self.backend.unload_module(old.module);
                self.cells[ci]
                    .kernels
                    .iter()
                    .position(|k| k.user_name == norm)
                    .map(|ki| (ci, ki))
                    .ok_or_else(|| GpuError::compile(format!("NVRTC did not produce `{norm}`")))
            }
            (Some(d), None) => Err(GpuError::launch(format!(
                "`{base}` is a template ({}): launch an instantiation, e.g. `{base}<float>`",
                d.display()
            ))),
            (None, Some(_)) => Err(GpuError::launch(format!(
                "`{base}` is not a template CUDA kernel"
            ))),
            (None, None) => {
                let overloads = cell
                    .scan
                    .kernel(&base)
                    .filter(|k| k.overloaded)
                    .map(|k| k.overloads.join("\n  "));
                Err(GpuError::launch(if let Some(list) = overloads {
                    format!(
                        "`{base}` is overloaded; give each overload its own name. Its \
                         declarations:\n  {list}"
                    )
                } else {
                    format!("`{base}` was not compiled (is it inside #if?)")
                }))
            }
        }
    }

    /// The parameters of a CUDA kernel; instantiates a template on demand. A bare template name
    /// gives the template's parameters (template types as `ParamKind::Other`).
    pub fn kernel_params(&mut self, name: &str) -> Result<Vec<KernelParam>, GpuError> {
        let (base, args) = scan::split_template_name(name);
        if args.is_none() {
            if let Some(ci) = self.owner_of(&base) {
                if let Some(d) = self.cells[ci].template(&base) {
                    return Ok(d.params_for(&[]));
                }
            }
        }
        let (ci, ki) = self.resolve(name)?;
        Ok(self.cells[ci].kernels[ki].params.clone())
    }

    fn named_allocs(&self) -> Vec<NamedAlloc> {
        self.arrays
            .iter()
            .map(|(n, a)| NamedAlloc {
                name: n.clone(),
                dtype: a.dtype,
                shape: a.shape.clone(),
                ptr: a.ptr,
                bytes: a.bytes,
                freed: false,
            })
            .chain(self.freed.iter().rev().cloned())
            .collect()
    }

    pub fn launch(&mut self, request: &LaunchRequest) -> Result<LaunchOutcome, GpuError> {
        let (ci, ki, k, packed) = self.checked_request(request)?;
        let note = Self::cooperative_of(request, &k).note(&k.user_name);
        let with_note = |mut o: LaunchOutcome| {
            o.notes.extend(note.clone());
            o
        };
        let module = self.cells[ci].module;
        if request.check {
            return self.launch_on_checker(ci, &k, request).map(with_note);
        }
        let stream = self.stream_id(request.stream.as_deref())?;
        // Recording a timeline on ptxsim: the launch is counted for its estimate.
        let (counters, model) = match self.timeline_counters(ci, ki, request) {
            Some((c, m)) => (Some(c), Some(m)),
            None => (None, None),
        };
        // A plain launch on ptxsim runs under the checker too (bounds, races, barriers).
        let config = self.backend_launch(request, &k, stream, false, counters);
        let params: Vec<&[u8]> = packed.params.iter().map(Vec::as_slice).collect();
        let mark = self.timeline_mark(stream);
        let t0 = Instant::now();
        let result = self.backend.launch(module, &k.lowered, &config, &params);
        let wall_ms = t0.elapsed().as_secs_f64() * 1e3;
        if let (Some(mark), Ok(r)) = (mark, &result) {
            let modelled = model.and_then(|m| m.estimate(r.counters.as_deref()));
            self.timeline_launch(Some(mark), request, &k.user_name, modelled, stream);
        }
        // Device events where the backend timed the launch (a GPU's default stream).
        let elapsed_ms = self.backend.last_launch_ms().unwrap_or(wall_ms);
        let allocs = self.named_allocs();
        let name = self.backend.name();
        let out = self
            .finish(ci, &k, &packed, result, elapsed_ms, &allocs, name)
            .map(with_note);
        match out {
            Err(mut e) if e.ename == ErrorKind::DeviceFault && self.backend.fault().is_some() => {
                e.message.push_str(&self.fault_epilogue());
                Err(e)
            }
            other => other,
        }
    }

    /// The loaded CUDA kernel of `request` with its arguments packed and its configuration
    /// checked against the device: (cell, kernel index, kernel, packed arguments).
    pub(super) fn checked_request(
        &mut self,
        request: &LaunchRequest,
    ) -> Result<(usize, usize, LoadedKernel, args::Packed), GpuError> {
        self.recover_if_needed()?;
        let (ci, ki) = self.resolve(&request.kernel)?;
        let k = self.cells[ci].kernels[ki].clone();
        let packed = self.pack_args(&k, request, &BTreeMap::new())?;
        args::check_config(
            &k.user_name,
            request.grid,
            request.block,
            request.shared_bytes,
            &self.backend.limits(),
            &k.meta,
        )?;
        if Self::cooperative_of(request, &k).is_cooperative() {
            self.check_residency(ci, ki, request)?;
        }
        Ok((ci, ki, k, packed))
    }

    /// What the backend is told about `request` of kernel `k`: its shape, stream, the session's
    /// stack limit, whether it is cooperative.
    pub(super) fn backend_launch(
        &self,
        request: &LaunchRequest,
        k: &LoadedKernel,
        stream: Option<super::backend::StreamId>,
        check: bool,
        counters: Option<ptxsim::counters::CounterConfig>,
    ) -> BackendLaunch {
        BackendLaunch {
            grid: request.grid,
            block: request.block,
            shared_bytes: request.shared_bytes,
            stream,
            check,
            cancel: Some(request.cancel.clone()),
            stack_bytes: self.stack_bytes,
            counters,
            cooperative: Self::cooperative_of(request, k).is_cooperative(),
        }
    }

    /// `[auto]`: (grid, block) covering `elements` threads in x. On a GPU the block size comes
    /// from the occupancy API (`cuOccupancyMaxPotentialBlockSize`) for `shared_bytes` of dynamic
    /// shared memory; on ptxsim it is 256.
    pub fn auto_config(
        &mut self,
        kernel: &str,
        elements: usize,
        shared_bytes: u32,
    ) -> Result<(Dim3, Dim3), GpuError> {
        self.recover_if_needed()?;
        let (ci, ki) = self.resolve(kernel)?;
        let k = &self.cells[ci].kernels[ki];
        let (module, lowered) = (self.cells[ci].module, k.lowered.clone());
        let limits = self.backend.limits();
        let cap = k
            .meta
            .max_threads
            .unwrap_or(limits.max_threads_per_block)
            .min(limits.max_threads_per_block);
        let too_big = || GpuError::argument(format!("{elements} elements are too many for [auto]"));
        match self.backend.suggest_block(module, &lowered, shared_bytes) {
            Some((block, _)) => {
                let (g, b) =
                    super::cuda::occupancy::auto_shape(elements, block.min(cap), limits.warp_size)
                        .ok_or_else(too_big)?;
                Ok(((g, 1, 1), (b, 1, 1)))
            }
            None => {
                let block = 256.min(cap).max(1);
                let grid = u32::try_from(elements.div_ceil(block as usize).max(1))
                    .map_err(|_| too_big())?;
                Ok(((grid, 1, 1), (block, 1, 1)))
            }
        }
    }

    /// Checks and packs the arguments; `copies` maps array names to other addresses (the
    /// checker's copies) where present.
    fn pack_args(
        &self,
        k: &LoadedKernel,
        request: &LaunchRequest,
        copies: &BTreeMap<String, DevPtr>,
    ) -> Result<args::Packed, GpuError> {
        let caller = &k.user_name;
        Ok(self.pack_with_arrays(&k.user_name, caller, &k.params, &request.args, copies)?)
    }

    /// Checks launch arguments against the C parameters `params` of CUDA kernel `kernel` and the
    /// session's arrays, with the one launch-argument check (`gpu::args::pack`) that every launch
    /// runs again; `caller` names the call in messages (`%launch`).
    pub fn check_args(
        &self,
        kernel: &str,
        caller: &str,
        params: &[KernelParam],
        launch_args: &[LaunchArg],
    ) -> Result<(), args::ArgError> {
        self.pack_with_arrays(kernel, caller, params, launch_args, &BTreeMap::new())
            .map(|_| ())
    }

    /// `gpu::args::pack` over the session's arrays (an array named in `copies` at that address).
    fn pack_with_arrays(
        &self,
        kernel: &str,
        caller: &str,
        params: &[KernelParam],
        launch_args: &[LaunchArg],
        copies: &BTreeMap<String, DevPtr>,
    ) -> Result<args::Packed, args::ArgError> {
        let arrays = &self.arrays;
        let lookup = |n: &str| {
            arrays.get(n).map(|a| ArrayRef {
                dtype: a.dtype,
                ptr: copies.get(n).copied().unwrap_or(a.ptr),
                len: a.shape.iter().product(),
                shape: a.shape.clone(),
            })
        };
        let names = || arrays.keys().cloned().collect::<Vec<_>>();
        args::pack(kernel, caller, params, launch_args, &lookup, &names)
    }

    /// Runs `request` on a fresh ptxsim device, on copies of its argument arrays (the cell's
    /// PTX, or its source compiled for ptxsim when the backend is a GPU), with the checker
    /// `check` and the counters `counters`. Nothing of the session's arrays changes.
    pub(super) fn run_on_sim_copies(
        &mut self,
        ci: usize,
        k: &LoadedKernel,
        request: &LaunchRequest,
        check: bool,
        counters: Option<ptxsim::counters::CounterConfig>,
    ) -> Result<SimCopyRun, GpuError> {
        let mut sim = SimBackend::new();
        let module = if self.backend.name() == "ptxsim" {
            sim.load_module(ModuleImage::Ptx(&self.cells[ci].ptx))?.0
        } else {
            // The cell's code was compiled for the GPU: compile it for ptxsim (cached on disk).
            let c = &self.cells[ci];
            let (cell, _, _) = kernels::build_cell(
                &mut sim,
                &self.compiler,
                &c.source,
                &c.options,
                c.first_line,
                &c.instantiations,
                None,
            )?;
            cell.module
        };
        let mut copies: BTreeMap<String, DevPtr> = BTreeMap::new();
        let mut allocs: Vec<NamedAlloc> = Vec::new();
        // The cell's __constant__/__device__ variables hold what the session wrote into them.
        for v in &self.cells[ci].symbols {
            if let Some((p, bytes)) = sim.symbol(module, &v.lowered)? {
                if bytes == v.bytes {
                    let mut buf = vec![0u8; bytes];
                    self.backend.dtoh(v.ptr, &mut buf)?;
                    sim.htod(p, &buf)?;
                    allocs.push(NamedAlloc {
                        name: v.name.clone(),
                        dtype: v.dtype,
                        shape: v.shape.clone(),
                        ptr: p,
                        bytes,
                        freed: false,
                    });
                }
            }
        }
        for n in request.args.iter().flat_map(LaunchArg::array_names) {
            let Some(arr) = self.arrays.get(n) else {
                continue;
            };
            if copies.contains_key(n) {
                continue;
            }
            let p = sim.alloc(arr.bytes)?;
            copy_to_sim(self.backend.as_ref(), arr.ptr, arr.bytes, &mut sim, p)?;
            copies.insert(n.to_string(), p);
            allocs.push(NamedAlloc {
                name: n.to_string(),
                dtype: arr.dtype,
                shape: arr.shape.clone(),
                ptr: p,
                bytes: arr.bytes,
                freed: false,
            });
        }
        let packed = self.pack_args(k, request, &copies)?;
        let config = self.backend_launch(request, k, None, check, counters);
        let params: Vec<&[u8]> = packed.params.iter().map(Vec::as_slice).collect();
        let t0 = Instant::now();
        let result = sim.launch(module, &k.lowered, &config, &params);
        let elapsed_ms = t0.elapsed().as_secs_f64() * 1e3;
        Ok(SimCopyRun {
            allocs,
            packed,
            result,
            elapsed_ms,
        })
    }

    /// `--check`, a diagnostic: run on a fresh ptxsim on copies of the arrays under the checker,
    /// whatever the backend; the session's arrays never change.
    fn launch_on_checker(
        &mut self,
        ci: usize,
        k: &LoadedKernel,
        request: &LaunchRequest,
    ) -> Result<LaunchOutcome, GpuError> {
        let run = self.run_on_sim_copies(ci, k, request, true, None)?;
        let mut packed = run.packed.clone();
        // Nothing was written: the copies are dropped with the simulator.
        for a in &mut packed.arrays {
            a.2 = false;
        }
        self.finish(
            ci,
            k,
            &packed,
            run.result,
            run.elapsed_ms,
            &run.allocs,
            "ptxsim (--check)",
        )
        .map_err(|mut e| {
            if e.ename == ErrorKind::DeviceFault {
                e.message.push_str(
                    "\n(--check ran this launch on ptxsim on copies of its arrays; every array \
                     is unchanged)",
                );
            }
            e
        })
    }

    /// The outcome of a launch: printf, rendered findings, `last_writer`; or the fault.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &mut self,
        ci: usize,
        k: &LoadedKernel,
        packed: &args::Packed,
        result: Result<super::backend::BackendReport, BackendLaunchError>,
        elapsed_ms: f64,
        allocs: &[NamedAlloc],
        ran_on: &str,
    ) -> Result<LaunchOutcome, GpuError> {
        let cell = &self.cells[ci];
        let text = CellText {
            source: &cell.source,
            first_line: cell.first_line,
            program: &cell.program,
        };
        match result {
            Ok(report) => {
                let reports = report
                    .findings
                    .iter()
                    .map(|f| fault::render_finding(&k.user_name, f, allocs, Some(text)))
                    .collect();
                let mut written: Vec<String> = Vec::new();
                for (name, _, w) in &packed.arrays {
                    if *w && !written.contains(name) {
                        written.push(name.clone());
                    }
                }
                for n in &written {
                    if let Some(a) = self.arrays.get_mut(n) {
                        a.last_writer = Some(k.user_name.clone());
                        a.shadow = None; // the GPU now holds the only copy
                    }
                }
                Ok(LaunchOutcome {
                    printf: report.printf,
                    reports,
                    elapsed_ms,
                    written,
                    sim_workers: report.sim_workers,
                    notes: Vec::new(),
                })
            }
            Err(e) => Err(self.launch_error(ci, k, e, allocs, ran_on)),
        }
    }

    /// The error of a launch that did not complete: refused, or a fault rendered with the
    /// cell's source line and the arrays `allocs` (named as the user's arrays).
    fn launch_error(
        &self,
        ci: usize,
        k: &LoadedKernel,
        err: BackendLaunchError,
        allocs: &[NamedAlloc],
        ran_on: &str,
    ) -> GpuError {
        let cell = &self.cells[ci];
        let text = CellText {
            source: &cell.source,
            first_line: cell.first_line,
            program: &cell.program,
        };
        match err {
            BackendLaunchError::Rejected(m) => GpuError::launch(format!(
                "{ran_on} refused the launch of `{}`: {m}",
                k.user_name
            )),
            BackendLaunchError::Fault {
                report,
                message,
                printf,
            } => GpuError::fault(match report {
                Some(r) => fault::render_fault(&k.user_name, &r, allocs, Some(text), &printf),
                None => {
                    let mut m = format!("{message} in CUDA kernel `{}`", k.user_name);
                    if !printf.is_empty() {
                        m.push_str(&format!("\nprintf output before the fault:\n{printf}"));
                    }
                    m
                }
            }),
        }
    }

    /// `%sync [STREAM]`: waits for a stream (None: the whole device). Returns the device printf
    /// output that the synchronisation flushed (GPU launches on named streams).
    pub fn synchronize(&mut self, stream: Option<&str>) -> Result<String, GpuError> {
        self.recover_if_needed()?;
        let id = match stream {
            Some(s) => Some(*self.streams.get(s).ok_or_else(|| {
                GpuError::argument(format!(
                    "no stream named `{s}` (a stream is created by its first %launch … stream={s}, \
                     %upload or %download)"
                ))
            })?),
            None => None,
        };
        let mark = self.timeline_host_mark();
        let r = self.backend.synchronize(id);
        if r.is_ok() {
            self.timeline_sync(mark, stream);
        }
        let printf = self.backend.take_printf();
        let r = r.and_then(|()| self.finish_downloads(stream));
        match r {
            Ok(()) => Ok(printf),
            Err(mut e) => {
                if !printf.is_empty() {
                    e.message
                        .push_str(&format!("\nprintf output before the fault:\n{printf}"));
                }
                if self.backend.fault().is_some() {
                    e.message.push_str(&self.fault_epilogue());
                }
                Err(e)
            }
        }
    }

    /// `%reset`: rebuilds a GPU context lost to a sticky fault (arrays with host copies are
    /// restored, the others listed as lost, CUDA kernels reloaded); otherwise nothing to do.
    pub fn reset(&mut self) -> Result<String, GpuError> {
        if self.backend.fault().is_some() {
            self.notice = None;
            return self.recover();
        }
        let kept = self.backend.reset()?;
        if !kept {
            self.forget_graph_instances();
        }
        self.downloads.clear();
        for (_, s) in self.streams.drain() {
            self.backend.destroy_stream(s);
        }
        self.events.clear();
        self.restart_timeline();
        if kept {
            Ok(format!(
                "{}: nothing to rebuild (no sticky faults); {} array(s) and {} CUDA kernel(s) kept",
                self.backend.name(),
                self.arrays.len(),
                self.kernel_names().len()
            ))
        } else {
            let lost: Vec<String> = self.arrays.keys().cloned().collect();
            self.arrays.clear();
            self.cells.clear();
            Ok(format!(
                "context rebuilt; arrays lost: {}",
                if lost.is_empty() {
                    "none".into()
                } else {
                    lost.join(", ")
                }
            ))
        }
    }

    pub fn ptx(&mut self, kernel: &str) -> Result<String, GpuError> {
        let (ci, ki) = self.resolve(kernel)?;
        let c = &self.cells[ci];
        let lowered = &c.kernels[ki].lowered;
        Ok(crate::compile::ptx::entry_text(&c.ptx, lowered).unwrap_or_else(|| c.ptx.clone()))
    }

    pub fn info(&mut self, kernel: &str) -> Result<KernelInfoView, GpuError> {
        self.info_on(kernel, None)
    }

    /// `%info [--gpu MODEL] KERNEL`: as [`DeviceState::info`], with the resources and occupancy
    /// on `gpu` (None: the modelled GPU, see `%gpu`).
    pub fn info_on(
        &mut self,
        kernel: &str,
        gpu: Option<&ptxsim::gpus::GpuModel>,
    ) -> Result<KernelInfoView, GpuError> {
        let (base, args) = scan::split_template_name(kernel);
        if args.is_none() {
            if let Some(ci) = self.owner_of(&base) {
                if let Some(d) = self.cells[ci].template(&base) {
                    let c = &self.cells[ci];
                    let inst: Vec<String> = c.instantiations.clone();
                    return Ok(KernelInfoView {
                        name: base.clone(),
                        params: d.params_for(&[]),
                        rows: vec![
                            ("template".into(), d.display()),
                            (
                                "instantiations".into(),
                                if inst.is_empty() {
                                    "none yet".into()
                                } else {
                                    inst.join(", ")
                                },
                            ),
                            ("cell line".into(), (c.first_line + d.line - 1).to_string()),
                        ],
                        occupancy: None,
                    });
                }
            }
        }
        let (ci, ki) = self.resolve(kernel)?;
        let c = &self.cells[ci];
        let k = &c.kernels[ki];
        let decl_line = c.scan.kernels.get(k.decl).map(|d| d.line).unwrap_or(1);
        let mut rows = vec![
            ("signature".into(), args::signature(&k.user_name, &k.params)),
            ("lowered name".into(), k.lowered.clone()),
            ("backend".into(), self.backend.name().to_string()),
            (
                "defined at".into(),
                match &c.name {
                    Some(n) => format!(
                        "%%cuda --name {n}, cell line {}",
                        c.first_line + decl_line - 1
                    ),
                    None => format!("%%cuda cell line {}", c.first_line + decl_line - 1),
                },
            ),
            ("registers".into(), k.meta.registers.to_string()),
            (
                "static shared memory".into(),
                format!("{} bytes", k.meta.static_shared_bytes),
            ),
            (
                "local memory per thread".into(),
                format!("{} bytes", k.meta.local_bytes),
            ),
            (
                "max threads per block".into(),
                k.meta
                    .max_threads
                    .unwrap_or(self.backend.limits().max_threads_per_block)
                    .to_string(),
            ),
            (
                "parameter bytes".into(),
                crate::compile::ptx::entry_params(&c.ptx, &k.lowered)
                    .map(|ps| ps.iter().map(|p| p.size).sum::<usize>())
                    .unwrap_or_else(|| k.meta.param_sizes.iter().sum::<usize>())
                    .to_string(),
            ),
        ];
        if self.backend.name() == "ptxsim" {
            rows[4].0 = "registers (PTX virtual)".into();
        } else {
            rows[4].0 = "registers per thread".into();
        }
        let (module, lowered) = (c.module, k.lowered.clone());
        let view = KernelInfoView {
            name: k.user_name.clone(),
            params: k.params.clone(),
            rows,
            occupancy: None,
        };
        let view = if self.backend.name() == "ptxsim" {
            view // model.rs adds the CUBIN's resources and the occupancy table
        } else {
            self.with_occupancy(view, module, &lowered)
        };
        Ok(self.with_model(view, ci, ki, gpu))
    }

    /// Adds the occupancy rows: the driver's on a GPU, an sm_80 estimate on ptxsim.
    fn with_occupancy(
        &mut self,
        mut view: KernelInfoView,
        module: super::backend::ModuleId,
        lowered: &str,
    ) -> KernelInfoView {
        let limits = self.backend.limits();
        let max = view
            .rows
            .iter()
            .find(|(k, _)| k == "max threads per block")
            .and_then(|(_, v)| v.parse::<u32>().ok())
            .unwrap_or(limits.max_threads_per_block);
        let sizes = super::cuda::occupancy::block_sizes(limits.warp_size, max);
        let estimate = self.backend.name() == "ptxsim";
        if let Some(rows) = self.backend.occupancy(module, lowered, &sizes, 0) {
            if estimate {
                view.rows.push((
                    "occupancy on a GPU".into(),
                    "estimate for an sm_80 from threads, blocks and shared memory per SM \
                     (registers are not known on ptxsim)"
                        .into(),
                ));
            }
            for o in rows {
                view.rows.push((
                    format!(
                        "occupancy{}, block of {}",
                        if estimate { " (sm_80 estimate)" } else { "" },
                        o.block_threads
                    ),
                    format!(
                        "{} block(s) per SM, {:.0}% of warp slots",
                        o.blocks_per_sm,
                        o.fraction * 100.0
                    ),
                ));
            }
        }
        if let Some((block, grid)) = self.backend.suggest_block(module, lowered, 0) {
            view.rows.push((
                "best block size (occupancy API)".into(),
                format!("{block} threads; {grid} blocks fill the GPU"),
            ));
        }
        view
    }
}

/// Copies the `bytes` of allocation `src` of `from` into the fresh (zeroed) allocation `dst` of
/// `sim`: in chunks, skipping chunks that are all zeros, where `from` can read part of an
/// allocation (ptxsim), so that an array of a GPU's size costs no memory beyond the pages that
/// hold data; in one piece otherwise.
fn copy_to_sim(
    from: &dyn Backend,
    src: DevPtr,
    bytes: usize,
    sim: &mut SimBackend,
    dst: DevPtr,
) -> Result<(), GpuError> {
    const CHUNK: usize = 4 << 20;
    let mut buf = vec![0u8; bytes.min(CHUNK)];
    let mut at = 0;
    while at < bytes {
        let n = (bytes - at).min(CHUNK);
        match from.dtoh_at(src, at, &mut buf[..n]) {
            Some(r) => r?,
            None => {
                let mut all = vec![0u8; bytes];
                from.dtoh(src, &mut all)?;
                return sim.htod(dst, &all);
            }
        }
        if !all_zero(&buf[..n]) {
            sim.htod_at(dst, at, &buf[..n])?;
        }
        at += n;
    }
    Ok(())
}

/// Whether every byte is zero: page-sized comparisons with a zero page (`memcmp`, vectorised),
/// several times faster than a byte loop on arrays of gigabytes.
fn all_zero(data: &[u8]) -> bool {
    static ZERO: [u8; 4096] = [0; 4096];
    data.chunks(4096).all(|c| c == &ZERO[..c.len()])
}
