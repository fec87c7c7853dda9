//! The parts of [`DeviceState`] that change or rebuild its backend: the choice at start
//! (GPU when detected, `NBCUDA_BACKEND=sim` forces ptxsim), `%backend gpu|sim` and `%device N`
//! (arrays and compiled cells move with the switch, or nothing changes), and the recovery after
//! a sticky GPU fault (the context is rebuilt, cells are reloaded, arrays restored from their
//! host copies, and the rest listed by name as lost).
//!
//! Host copies ("shadows"), the rule: on the GPU backend an array keeps a host copy of its
//! content while that content came from the host — created by `%array`/`%load`/`nb::put`,
//! overwritten by `write_array`, or moved to the GPU by `%backend gpu`/`%device N` — and loses it
//! when a launch passes it to a CUDA kernel as a non-const pointer (the GPU then holds the only
//! copy). Shadows are capped at `NBCUDA_SHADOW_MB` megabytes in all (default 2048); arrays over
//! the cap have none. ptxsim keeps no shadows (it has no sticky faults).
//!
//! This module must not parse magics or format Jupyter messages.

use super::super::backend::Backend;
use super::super::detect;
use super::super::kernels;
use super::super::sim::SimBackend;
use super::{DeviceState, GpuError};
use std::sync::Arc;
use std::time::Instant;

/// The default total size of host copies kept for recovery.
const DEFAULT_SHADOW_MB: usize = 2048;

/// The backend to start on: `choice` is `NBCUDA_BACKEND` (`sim`/`ptxsim`, `gpu`/`cuda`, or
/// None for automatic), `ordinal` the GPU to open. Returns the backend and, when it is ptxsim,
/// why (for the banner and `%device`). Never panics.
pub(super) fn default_backend(
    choice: Option<&str>,
    ordinal: usize,
) -> (Box<dyn Backend>, Option<String>) {
    let sim = || -> Box<dyn Backend> { Box::new(SimBackend::new()) };
    match choice.map(str::to_ascii_lowercase).as_deref() {
        Some("sim") | Some("ptxsim") => {
            return (sim(), Some("NBCUDA_BACKEND=sim chose ptxsim".into()));
        }
        Some("gpu") | Some("cuda") | None | Some("") => {}
        Some(other) => {
            return (
                sim(),
                Some(format!(
                    "NBCUDA_BACKEND={other} is not gpu or sim; running on ptxsim"
                )),
            );
        }
    }
    match detect::detect_gpus() {
        Ok(gpus) if !gpus.is_empty() => match super::super::worker::open_gpu(ordinal) {
            Ok(b) => (b, None),
            Err(why) => (
                sim(),
                Some(format!(
                    "a GPU is present but cannot be used ({why}); running on ptxsim, the CPU \
                     simulator"
                )),
            ),
        },
        Ok(_) => (
            sim(),
            Some("no GPU (no CUDA device); running on ptxsim, the CPU simulator".into()),
        ),
        Err(why) => (
            sim(),
            Some(format!(
                "no GPU ({why}); running on ptxsim, the CPU simulator"
            )),
        ),
    }
}

/// `NBCUDA_BACKEND` (tests default to ptxsim unless it says otherwise).
pub(super) fn backend_choice_from_env() -> Option<String> {
    let v = std::env::var("NBCUDA_BACKEND").ok();
    if cfg!(test) && v.is_none() {
        return Some("sim".into());
    }
    v
}

/// `NBCUDA_DEVICE` (default 0).
pub(super) fn ordinal_from_env() -> usize {
    std::env::var("NBCUDA_DEVICE")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn shadow_limit() -> usize {
    std::env::var("NBCUDA_SHADOW_MB")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(DEFAULT_SHADOW_MB)
        .saturating_mul(1 << 20)
}

fn names(list: &[String]) -> String {
    if list.is_empty() {
        "none".into()
    } else {
        list.join(", ")
    }
}

impl DeviceState {
    /// A host copy of `data` for an array, if the cap on host copies allows.
    pub(super) fn host_copy_of(
        &self,
        data: &[u8],
        replacing: Option<&str>,
    ) -> Option<Arc<Vec<u8>>> {
        self.host_room(data.len(), replacing)
            .then(|| Arc::new(data.to_vec()))
    }

    /// [`DeviceState::host_copy_of`] for `len` zero bytes: zeroed pages from the allocator,
    /// untouched until written, so a zero-filled array of a GPU's size costs neither the copy
    /// nor the memory.
    pub(super) fn host_zeros(&self, len: usize, replacing: Option<&str>) -> Option<Arc<Vec<u8>>> {
        self.host_room(len, replacing)
            .then(|| Arc::new(vec![0u8; len]))
    }

    /// Whether the cap on host copies leaves room for `len` more bytes (the array `replacing`
    /// gives its copy back).
    fn host_room(&self, len: usize, replacing: Option<&str>) -> bool {
        let held: usize = self
            .arrays
            .iter()
            .filter(|(n, _)| Some(n.as_str()) != replacing)
            .filter_map(|(_, a)| a.host.as_ref().map(|h| h.len()))
            .sum();
        held.saturating_add(len) <= shadow_limit()
    }

    /// The recovery copy of an array whose device contents equal `host`: on backends that can
    /// lose memory (a GPU) the same bytes; none on ptxsim.
    pub(super) fn shadow_from(&self, host: &Option<Arc<Vec<u8>>>) -> Option<Arc<Vec<u8>>> {
        if self.backend.can_lose_memory() {
            host.clone()
        } else {
            None
        }
    }

    /// Why ptxsim runs instead of a GPU, when it does (for the banner).
    pub fn backend_note(&self) -> Option<String> {
        self.backend_note.clone()
    }

    /// What happened in a recovery the caller has not shown yet (after an automatic context
    /// rebuild at the start of a command), taken once.
    pub fn take_notice(&mut self) -> Option<String> {
        self.notice.take()
    }

    /// Rebuilds the GPU context if a sticky fault lost it, keeping the report for
    /// [`DeviceState::take_notice`].
    pub(super) fn recover_if_needed(&mut self) -> Result<(), GpuError> {
        if self.backend.fault().is_some() {
            let msg = self.recover()?;
            self.notice = Some(msg);
        }
        Ok(())
    }

    /// What a rebuild would do now: (restored from host copies, lost).
    pub(super) fn recovery_plan(&self) -> (Vec<String>, Vec<String>) {
        let mut restored = Vec::new();
        let mut lost = Vec::new();
        for (n, a) in &self.arrays {
            if a.shadow.is_some() {
                restored.push(n.clone());
            } else {
                lost.push(n.clone());
            }
        }
        (restored, lost)
    }

    /// The sentence appended to a GPU fault: what `%reset` will do.
    pub(super) fn fault_epilogue(&self) -> String {
        let (restored, lost) = self.recovery_plan();
        format!(
            "\nThe CUDA context is lost (a sticky fault). %reset rebuilds it (the next device \
             command does so automatically): arrays restored from host copies: {}; arrays lost \
             (their contents were only on the GPU): {}. %launch --check runs a launch on \
             ptxsim, which names the faulting thread and access.",
            names(&restored),
            names(&lost)
        )
    }

    /// Rebuilds a lost GPU context: reloads every cell, restores shadowed arrays, forgets the
    /// rest (listed). Returns the report.
    pub(super) fn recover(&mut self) -> Result<String, GpuError> {
        let why = self
            .backend
            .fault()
            .unwrap_or_else(|| "a device fault".into());
        if self.backend.reset()? {
            return Ok(format!(
                "{}: nothing to rebuild (no sticky fault)",
                self.backend.name()
            ));
        }
        self.forget_graph_instances();
        self.streams.clear();
        self.events.clear();
        self.restart_timeline();
        self.freed.clear();
        self.downloads.clear();
        let mut reload_failed: Vec<String> = Vec::new();
        for cell in std::mem::take(&mut self.cells) {
            match kernels::build_cell(
                self.backend.as_mut(),
                &self.compiler,
                &cell.source,
                &cell.options,
                cell.first_line,
                &cell.instantiations,
                None,
            ) {
                Ok((c, _, _)) => self.cells.push(c),
                Err(e) => reload_failed.push(format!(
                    "{} ({})",
                    cell.defined_names().join(", "),
                    e.message.lines().next().unwrap_or("")
                )),
            }
        }
        let mut restored = Vec::new();
        let mut lost = Vec::new();
        let mut reset_vars = Vec::new();
        let symbols = symbols_by_name(&self.cells);
        for (name, mut a) in std::mem::take(&mut self.arrays) {
            if a.symbol.is_some() {
                // A module variable: the reloaded module has it anew, at its initial value.
                let Some((module, v)) = symbols.get(&name) else {
                    lost.push(name);
                    continue;
                };
                a.ptr = v.ptr;
                a.symbol = Some(super::SymbolOf {
                    module: *module,
                    space: v.space,
                });
                match a.shadow.as_ref().map(|d| self.backend.htod(v.ptr, d)) {
                    Some(Ok(())) => restored.push(name.clone()),
                    _ => {
                        a.shadow = None;
                        reset_vars.push(name.clone());
                    }
                }
                self.arrays.insert(name, a);
                continue;
            }
            let Some(data) = a.shadow.take() else {
                self.lost.insert(name.clone(), why.clone());
                lost.push(name);
                continue;
            };
            let allocated = if a.managed {
                self.backend.alloc_managed(a.bytes)
            } else {
                self.backend.alloc(a.bytes)
            };
            let ptr = match allocated {
                Ok(p) => p,
                Err(_) => {
                    self.lost.insert(name.clone(), why.clone());
                    lost.push(name);
                    continue;
                }
            };
            if self.backend.htod(ptr, &data).is_err() {
                let _ = self.backend.free(ptr);
                self.lost.insert(name.clone(), why.clone());
                lost.push(name);
                continue;
            }
            a.ptr = ptr;
            a.shadow = Some(data);
            self.arrays.insert(name.clone(), a);
            restored.push(name);
        }
        let mut msg = format!(
            "CUDA context rebuilt after a device fault ({why}); arrays restored from host \
             copies: {}; arrays lost: {}; CUDA kernels reloaded: {}",
            names(&restored),
            names(&lost),
            self.kernel_names().len()
        );
        if !reset_vars.is_empty() {
            msg.push_str(&format!(
                "; __constant__/__device__ variables back at their initial values: {}",
                names(&reset_vars)
            ));
        }
        if !reload_failed.is_empty() {
            msg.push_str(&format!(
                "; cells that could not be reloaded (run them again): {}",
                reload_failed.join("; ")
            ));
        }
        Ok(msg)
    }

    /// Moves every array and compiled cell to `new`; on any failure nothing changes.
    fn move_to(&mut self, mut new: Box<dyn Backend>) -> Result<String, GpuError> {
        self.recover_if_needed()?;
        let t0 = Instant::now();
        let mut cells = Vec::new();
        for c in &self.cells {
            let (cell, _, _) = kernels::build_cell(
                new.as_mut(),
                &self.compiler,
                &c.source,
                &c.options,
                c.first_line,
                &c.instantiations,
                None,
            )
            .map_err(|e| {
                GpuError::new(
                    e.ename,
                    format!(
                        "cannot move the CUDA kernels {} to {}: {}; nothing was moved",
                        c.defined_names().join(", "),
                        new.name(),
                        e.message
                    ),
                )
            })?;
            cells.push(cell);
        }
        let mut moved: Vec<(String, u64, Vec<u8>)> = Vec::new();
        let mut bytes = 0usize;
        let mut failure: Option<GpuError> = None;
        let new_symbols = symbols_by_name(&cells);
        for (name, a) in &self.arrays {
            let mut buf = vec![0u8; a.bytes];
            if a.symbol.is_some() {
                // A module variable: its content goes into the new module's variable.
                let step =
                    self.backend
                        .dtoh(a.ptr, &mut buf)
                        .and_then(|_| match new_symbols.get(name) {
                            Some((_, v)) if v.bytes == a.bytes => {
                                new.htod(v.ptr, &buf).map(|_| v.ptr)
                            }
                            _ => Err(GpuError::argument(format!(
                                "the moved cell has no variable `{name}` of {} bytes",
                                a.bytes
                            ))),
                        });
                match step {
                    Ok(p) => moved.push((name.clone(), p, buf)),
                    Err(e) => {
                        failure = Some(GpuError::new(
                            e.ename,
                            format!(
                                "cannot move variable `{name}` to {}: {}; nothing was moved",
                                new.name(),
                                e.message
                            ),
                        ));
                        break;
                    }
                }
                continue;
            }
            let step = self
                .backend
                .dtoh(a.ptr, &mut buf)
                .and_then(|_| {
                    if a.managed {
                        new.alloc_managed(a.bytes)
                    } else {
                        new.alloc(a.bytes)
                    }
                })
                .and_then(|p| match new.htod(p, &buf) {
                    Ok(()) => Ok(p),
                    Err(e) => {
                        let _ = new.free(p);
                        Err(e)
                    }
                });
            match step {
                Ok(p) => {
                    bytes += a.bytes;
                    moved.push((name.clone(), p, buf));
                }
                Err(e) => {
                    failure = Some(GpuError::new(
                        e.ename,
                        format!(
                            "cannot move array `{name}` to {}: {}; nothing was moved",
                            new.name(),
                            e.message
                        ),
                    ));
                    break;
                }
            }
        }
        if let Some(e) = failure {
            for (name, p, _) in moved {
                if self.arrays.get(&name).is_some_and(|a| a.symbol.is_none()) {
                    let _ = new.free(p);
                }
            }
            for c in cells {
                new.unload_module(c.module);
            }
            return Err(e);
        }
        for (_, s) in self.streams.drain() {
            self.backend.destroy_stream(s);
        }
        for c in std::mem::take(&mut self.cells) {
            self.backend.unload_module(c.module);
        }
        for a in self.arrays.values().filter(|a| a.symbol.is_none()) {
            let _ = self.backend.free(a.ptr);
        }
        let from = self.backend.name();
        self.forget_timeline();
        for (_, e) in self.events.drain() {
            self.backend.destroy_event(e);
        }
        self.backend = new;
        self.restart_timeline();
        self.forget_graph_instances();
        self.cells = cells;
        self.freed.clear();
        let count = moved.len();
        for (name, p, buf) in moved {
            let host = self.host_copy_of(&buf, Some(&name));
            let shadow = self.shadow_from(&host);
            if let Some(a) = self.arrays.get_mut(&name) {
                a.ptr = p;
                a.shadow = shadow;
                a.host = host;
                if let (Some(s), Some((module, _))) = (a.symbol.as_mut(), new_symbols.get(&name)) {
                    s.module = *module;
                }
            }
        }
        self.backend_note = None;
        Ok(format!(
            "{from} → {} ({}): moved {count} array(s), {:.1} MB, and {} CUDA kernel(s) in {:.0} ms",
            self.backend.name(),
            self.backend.describe().name,
            bytes as f64 / 1e6,
            self.kernel_names().len(),
            t0.elapsed().as_secs_f64() * 1e3
        ))
    }

    /// Switches backends (`"gpu"`/`"cuda"` or `"sim"`/`"ptxsim"`), moving arrays and compiled
    /// cells; returns a message for the user. On failure nothing changes.
    pub fn set_backend(&mut self, name: &str) -> Result<String, GpuError> {
        match name {
            "sim" | "ptxsim" => {
                if self.backend.name() == "ptxsim" {
                    return Ok(format!("already on ptxsim ({} arrays)", self.arrays.len()));
                }
                self.move_to(Box::new(SimBackend::new()))
            }
            "gpu" | "cuda" => {
                if self.backend.name() == "cuda" {
                    return Ok(format!(
                        "already on the GPU ({}; {} arrays)",
                        self.backend.describe().name,
                        self.arrays.len()
                    ));
                }
                let gpu = super::super::worker::open_gpu(ordinal_from_env())
                    .map_err(|why| GpuError::launch(format!("no GPU: {why}; staying on ptxsim")))?;
                self.move_to(gpu)
            }
            other => Err(GpuError::argument(format!(
                "unknown backend `{other}`: use gpu or sim"
            ))),
        }
    }

    /// `%device N`: moves to GPU `ordinal` (arrays and cells move with it).
    pub fn select_device(&mut self, ordinal: usize) -> Result<String, GpuError> {
        let current = self.backend.name() == "cuda"
            && self
                .backend
                .describe()
                .rows
                .iter()
                .any(|(k, v)| k == "device" && v.starts_with(&format!("{ordinal}:")));
        if current {
            return Ok(format!("already on GPU {ordinal}"));
        }
        let gpu = super::super::worker::open_gpu(ordinal)
            .map_err(|why| GpuError::argument(format!("cannot use GPU {ordinal}: {why}")))?;
        self.move_to(gpu)
    }
}

/// The cells' variables by name, with their module (the newest cell's where two share a name).
fn symbols_by_name(
    cells: &[kernels::Cell],
) -> std::collections::HashMap<String, (super::ModuleId, kernels::CellSymbol)> {
    cells
        .iter()
        .flat_map(|c| {
            c.symbols
                .iter()
                .map(|v| (v.name.clone(), (c.module, v.clone())))
        })
        .collect()
}

#[cfg(test)]
mod recovery_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_gpu_every_choice_lands_on_ptxsim_with_a_reason() {
        // SAFETY: probe only.
        let driver = unsafe { cudarc::driver::sys::is_culib_present() };
        let (b, note) = default_backend(Some("sim"), 0);
        assert_eq!(b.name(), "ptxsim");
        assert!(note.unwrap_or_default().contains("NBCUDA_BACKEND=sim"));
        let (b, note) = default_backend(Some("bogus"), 0);
        assert_eq!(b.name(), "ptxsim");
        assert!(note.unwrap_or_default().contains("bogus"));
        for choice in [None, Some("gpu"), Some("CUDA")] {
            let (b, note) = default_backend(choice, 0);
            if driver && detect::detect_gpus().is_ok_and(|g| !g.is_empty()) {
                assert_eq!(b.name(), "cuda", "{note:?}");
                assert!(note.is_none());
            } else {
                assert_eq!(b.name(), "ptxsim");
                let note = note.unwrap_or_default();
                assert!(note.contains("ptxsim"), "{note}");
                if !driver {
                    assert!(note.contains("libcuda"), "{note}");
                }
            }
        }
    }

    #[test]
    fn switching_to_a_missing_gpu_changes_nothing() {
        if detect::detect_gpus().is_ok_and(|g| !g.is_empty()) {
            testkit::skip("a GPU is present");
            return;
        }
        let mut s = DeviceState::with_cache_dir(None);
        let data: Vec<u8> = (0..64u8).collect();
        let shape = vec![16];
        if let Err(e) = s.create_array("x", crate::gpu::Dtype::F32, shape, &data) {
            panic!("{e}");
        }
        let e = s
            .set_backend("gpu")
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert!(
            e.contains("no GPU") && e.contains("staying on ptxsim"),
            "{e}"
        );
        let e = s
            .select_device(1)
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert!(e.contains("cannot use GPU 1"), "{e}");
        assert_eq!(s.backend_name(), "ptxsim");
        assert_eq!(s.read_array("x").ok(), Some(data));
        let msg = s.set_backend("sim").unwrap_or_default();
        assert!(msg.contains("already on ptxsim"), "{msg}");
        // ptxsim keeps no host copies.
        assert!(s.arrays.values().all(|a| a.shadow.is_none()));
    }
}
