//! `%%cuda` cells as loaded modules: compile a cell (with the template instantiations asked for
//! so far), load it on the backend, and pair every kernel's lowered name with the C signature
//! scanned from the source, checked against the PTX parameter list.
//!
//! Each module-scope `__constant__`/`__device__` variable of numbers becomes a [`CellSymbol`]:
//! its device address in the loaded module, dtype and shape (`state.rs` lists it as an array).
//!
//! This module does not decide which cells replace which (that is `state.rs`) and never touches
//! arrays.

use super::args::signature;
use super::backend::{Backend, DevPtr, KernelMeta, ModuleId, ModuleImage};
use super::{CudaOptions, Dtype, GpuError, KernelParam, KernelSummary, ParamKind};
use crate::compile::scan::{self, DeviceVariable, KernelDecl, ScanResult};
use crate::compile::{self, CompileInput, Compiled, Compiler};

/// A launchable CUDA kernel of a loaded cell.
#[derive(Debug, Clone)]
pub struct LoadedKernel {
    /// What users type: `add`, `scale<float>`.
    pub user_name: String,
    /// Index into the cell's `scan.kernels`.
    pub decl: usize,
    pub lowered: String,
    pub params: Vec<KernelParam>,
    pub meta: KernelMeta,
    /// It uses a grid-wide sync (`cooperative_groups::this_grid().sync()`: its PTX reads the
    /// grid workspace, `ptxsim::grid_sync_entries`), so its launches are made cooperative.
    pub grid_sync: bool,
}

/// A `__constant__`/`__device__` variable of a loaded cell: memory of its module.
#[derive(Debug, Clone, PartialEq)]
pub struct CellSymbol {
    pub name: String,
    /// `"__constant__"` or `"__device__"`.
    pub space: &'static str,
    pub dtype: Dtype,
    /// As declared; a scalar is `[1]`, an array of `float2` gets a last dimension of 2.
    pub shape: Vec<usize>,
    pub ptr: DevPtr,
    pub bytes: usize,
    /// The PTX name (`taps`, `_ZN2ns4tapsE`).
    pub lowered: String,
}

/// A compiled and loaded `%%cuda` cell.
#[derive(Debug, Clone)]
pub struct Cell {
    /// `--name`, if given.
    pub name: Option<String>,
    pub source: String,
    pub options: CudaOptions,
    pub first_line: usize,
    pub program: String,
    pub scan: ScanResult,
    /// Template instantiations compiled into this module (user names).
    pub instantiations: Vec<String>,
    pub ptx: String,
    pub module: ModuleId,
    pub kernels: Vec<LoadedKernel>,
    /// Its `__constant__`/`__device__` variables of numbers.
    pub symbols: Vec<CellSymbol>,
    /// The backend that loaded it (`"ptxsim"` counts PTX virtual registers).
    pub backend: &'static str,
}

impl Cell {
    /// Names of everything this cell defines (kernels and template names).
    pub fn defined_names(&self) -> Vec<String> {
        self.scan.kernels.iter().map(|k| k.name.clone()).collect()
    }

    pub fn template(&self, base: &str) -> Option<&KernelDecl> {
        self.scan
            .kernels
            .iter()
            .find(|k| k.name == base && k.template_params.is_some() && !k.overloaded)
    }

    /// The one-line summaries: every loaded kernel, then templates not yet instantiated.
    pub fn summaries(&self) -> Vec<KernelSummary> {
        let mut out: Vec<KernelSummary> = self
            .kernels
            .iter()
            .map(|k| KernelSummary {
                name: k.user_name.clone(),
                signature: signature(&k.user_name, &k.params),
                resources: Some(resources(&k.meta, self.backend)),
            })
            .collect();
        for d in &self.scan.kernels {
            if d.template_params.is_some()
                && !self.kernels.iter().any(|k| k.decl_name(self) == d.name)
            {
                out.push(KernelSummary {
                    name: d.name.clone(),
                    signature: d.display(),
                    resources: None,
                });
            }
        }
        out
    }
}

impl LoadedKernel {
    fn decl_name<'a>(&self, cell: &'a Cell) -> &'a str {
        cell.scan
            .kernels
            .get(self.decl)
            .map(|d| d.name.as_str())
            .unwrap_or("")
    }
}

/// "12 registers, 0 B static shared, 0 B local" (on ptxsim: "ptxsim: 12 PTX registers, …").
pub fn resources(m: &KernelMeta, backend: &str) -> String {
    let mut s = if backend == "ptxsim" {
        format!("ptxsim: {} PTX registers", m.registers)
    } else {
        format!("{} registers", m.registers)
    };
    s.push_str(&format!(
        ", {} B static shared, {} B local",
        m.static_shared_bytes, m.local_bytes
    ));
    if let Some(t) = m.max_threads {
        s.push_str(&format!(", max {t} threads/block"));
    }
    s
}

fn expected_size(kind: &ParamKind) -> Option<usize> {
    match kind {
        ParamKind::Pointer { .. } => Some(8),
        ParamKind::Scalar(d) => Some(d.size()),
        // Checked below: a layout that disagrees with the PTX is not used.
        ParamKind::Aggregate(_) | ParamKind::View(_) | ParamKind::Other => None,
    }
}

/// Compiles and loads a cell. `instantiations` are template instantiations to include (carried
/// from an earlier run or asked for by a launch); those in `required` must compile, the others
/// are dropped quietly if they no longer apply.
#[allow(clippy::too_many_arguments)]
pub fn build_cell(
    backend: &mut dyn Backend,
    compiler: &Compiler,
    source: &str,
    options: &CudaOptions,
    first_line: usize,
    instantiations: &[String],
    required: Option<&str>,
) -> Result<(Cell, Compiled, Vec<String>), GpuError> {
    let scanned = scan::scan(source);
    let mut notes: Vec<String> = Vec::new();
    // (user name, decl index, template args, name expression)
    let mut wanted: Vec<(String, usize, Vec<String>, String)> = Vec::new();
    for (i, d) in scanned.kernels.iter().enumerate() {
        if d.overloaded {
            notes.push(format!(
                "note: `{}` is overloaded ({}); %launch cannot choose between overloads, so give \
                 each its own name",
                d.name,
                d.overloads.join(", ")
            ));
            continue;
        }
        if d.template_params.is_none() {
            wanted.push((d.name.clone(), i, Vec::new(), format!("&{}", d.qualified)));
        }
    }
    let mut inst: Vec<String> = scanned.instantiations.clone();
    for n in instantiations {
        if !inst.contains(n) {
            inst.push(n.clone());
        }
    }
    for user in &inst {
        let (base, args) = scan::split_template_name(user);
        let args = args.unwrap_or_default();
        let decl = scanned
            .kernels
            .iter()
            .position(|k| k.name == base && k.template_params.is_some() && !k.overloaded);
        match decl {
            Some(i) => {
                let q = &scanned.kernels[i].qualified;
                wanted.push((
                    user.clone(),
                    i,
                    args.clone(),
                    format!("&{q}<{}>", args.join(", ")),
                ));
            }
            None if Some(user.as_str()) == required => {
                return Err(GpuError::launch(format!(
                    "no CUDA kernel template named `{base}` in this cell"
                )))
            }
            None => {}
        }
    }
    let target = backend.compile_target(options);
    let var_expr = |v: &DeviceVariable| format!("&{}", v.qualified);
    let compiled = compiler.compile(&CompileInput {
        source,
        options,
        first_line,
        name_expressions: wanted
            .iter()
            .map(|w| w.3.clone())
            .chain(scanned.variables.iter().map(var_expr))
            .collect(),
        target,
    })?;
    for (expr, why) in &compiled.dropped {
        let Some(w) = wanted.iter().find(|w| &w.3 == expr) else {
            continue;
        };
        if Some(w.0.as_str()) == required {
            return Err(GpuError::compile(format!(
                "cannot instantiate `{}`:\n{why}",
                w.0
            )));
        }
        if w.2.is_empty() {
            notes.push(format!(
                "note: `{}` was found in the source but not compiled (inside #if?)",
                w.0
            ));
        }
    }
    let image = match &compiled.cubin {
        Some(c) => ModuleImage::Cubin(c),
        None => ModuleImage::Ptx(&compiled.ptx),
    };
    let (module, metas) = backend.load_module(image)?;
    let mut kernels = Vec::new();
    let mut compiled_inst = Vec::new();
    // A PTX that does not parse here loaded on the backend (a GPU's driver reads more than
    // ptxsim's parser): its kernels then count as having no grid-wide sync.
    let grid_sync = ptxsim::grid_sync_entries(&compiled.ptx).unwrap_or_default();
    for (user, decl, args, expr) in &wanted {
        let Some((_, lowered)) = compiled.lowered.iter().find(|(e, _)| e == expr) else {
            continue;
        };
        let d = &scanned.kernels[*decl];
        let mut params = d.params_for(args);
        let ptx_params = compile::ptx::entry_params(&compiled.ptx, lowered).unwrap_or_default();
        let sizes_ok = ptx_params.len() == params.len()
            && params
                .iter()
                .zip(&ptx_params)
                .all(|(p, q)| expected_size(&p.kind).is_none_or(|s| s == q.size));
        if !sizes_ok {
            backend.unload_module(module);
            return Err(GpuError::compile(format!(
                "the signature of `{user}` read from the cell, {}, does not match the compiled \
                 CUDA kernel, whose PTX parameters have sizes {:?} bytes; nbcuda cannot check \
                 or pack its arguments (simplify the declaration, e.g. no macros in it)",
                signature(user, &params),
                ptx_params.iter().map(|p| p.size).collect::<Vec<_>>()
            )));
        }
        // A vector, struct or span whose layout (as nbcuda computes it) is not the PTX
        // parameter's size cannot be packed: %launch refuses it instead of passing wrong bytes.
        for (p, q) in params.iter_mut().zip(&ptx_params) {
            let size = match &p.kind {
                ParamKind::Aggregate(a) => a.size,
                ParamKind::View(v) => v.size,
                _ => continue,
            };
            if size != q.size {
                p.kind = ParamKind::Other;
            }
        }
        let meta = metas
            .iter()
            .find(|m| &m.name == lowered)
            .cloned()
            .unwrap_or_else(|| KernelMeta {
                name: lowered.clone(),
                param_sizes: ptx_params.iter().map(|p| p.size).collect(),
                ..KernelMeta::default()
            });
        if !args.is_empty() {
            compiled_inst.push(user.clone());
        }
        kernels.push(LoadedKernel {
            user_name: user.clone(),
            decl: *decl,
            lowered: lowered.clone(),
            params,
            meta,
            grid_sync: grid_sync.contains(lowered),
        });
    }
    let mut symbols = Vec::new();
    for v in &scanned.variables {
        let expr = var_expr(v);
        let Some((_, lowered)) = compiled.lowered.iter().find(|(e, _)| *e == expr) else {
            continue; // not compiled (inside #if?) or not a variable NVRTC can name
        };
        let Some((ptr, bytes)) = backend.symbol(module, lowered)? else {
            continue;
        };
        match symbol_layout(v, bytes) {
            Ok((dtype, shape)) => symbols.push(CellSymbol {
                name: v.name.clone(),
                space: v.space,
                dtype,
                shape,
                ptr,
                bytes,
                lowered: lowered.clone(),
            }),
            Err(why) => notes.push(format!(
                "note: {} `{}` is not shown as an array: {why}",
                v.space, v.name
            )),
        }
    }
    let cell = Cell {
        name: options.name.clone(),
        source: source.to_string(),
        options: options.clone(),
        first_line,
        program: compile::program_name(options),
        scan: scanned,
        instantiations: compiled_inst,
        ptx: compiled.ptx.clone(),
        module,
        kernels,
        symbols,
        backend: backend.name(),
    };
    Ok((cell, compiled, notes))
}

/// The dtype and shape of a module variable of `bytes` bytes, from its declaration: numbers or
/// CUDA vector types (`float2 lut[16]` is f32 of shape (16, 2)); the dimensions as written when
/// they agree with the size, else one dimension from the size.
fn symbol_layout(v: &DeviceVariable, bytes: usize) -> Result<(Dtype, Vec<usize>), String> {
    let (dtype, lanes) =
        crate::compile::structs::element_type(&v.type_tokens).ok_or_else(|| {
            format!(
                "its type `{}` is not a number or a CUDA vector type",
                v.type_tokens.join(" ")
            )
        })?;
    let elem = dtype.size() * lanes;
    if bytes == 0 || !bytes.is_multiple_of(elem) {
        return Err(format!(
            "its {bytes} bytes are not a whole number of elements"
        ));
    }
    let mut shape: Vec<usize> = if v.dims.is_empty() {
        vec![1]
    } else {
        v.dims.iter().map(|d| d.unwrap_or(0)).collect()
    };
    if shape.iter().product::<usize>() * elem != bytes {
        shape = vec![bytes / elem];
    }
    if lanes > 1 {
        if v.dims.is_empty() {
            shape = vec![lanes]; // one `float2`: shape (2,)
        } else {
            shape.push(lanes);
        }
    }
    Ok((dtype, shape))
}
