//! Execution of parsed magic lines (everything but `%launch`, which is in `launch.rs`): array
//! constructors, files, scalars, listings and device commands.
//!
//! Every command evaluates all of its expressions and checks every name before it changes
//! anything, so an error leaves the arrays as they were.

use super::eval::{self, Env, Value};
use super::files::{self, HostArray};
use super::host::{self, Fill};
use super::lex::{ParseError, Span};
use super::parse::{Command, Ctor, Expr, Name};
use super::rng;
use super::{registry, LineCtx, MagicError, Magics};
use crate::display::array_text;
use crate::display::stats;
use crate::display::table::Table;
use crate::display::values;
use crate::gpu::{DeviceState, Dtype};
use crate::suggest::{did_you_mean, Quote};
use nb::ErrorKind;
use protocol::output::{CellOutput, MimeBundle, OutputSink};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Names as expressions see them: `%set` scalars and array shapes.
pub(crate) struct EnvRef<'a> {
    pub scalars: &'a BTreeMap<String, Value>,
    pub dev: &'a DeviceState,
}

impl Env for EnvRef<'_> {
    fn scalar(&self, name: &str) -> Option<Value> {
        self.scalars.get(name).copied()
    }
    fn shape(&self, array: &str) -> Option<Vec<usize>> {
        self.dev.array(array).map(|a| a.shape)
    }
    fn on_gpu(&self) -> bool {
        self.dev.backend_name() == "cuda"
    }
}

fn arg_err(ctx: &LineCtx, e: ParseError) -> MagicError {
    ctx.err(ErrorKind::Argument, e)
}

impl Magics {
    pub(crate) fn env(&self) -> EnvRef<'_> {
        EnvRef {
            scalars: &self.scalars,
            dev: &self.dev,
        }
    }

    /// An existing array, or an ArgumentError at its name (with a suggestion).
    pub(crate) fn need_array(
        &self,
        ctx: &LineCtx,
        n: &Name,
        what: &str,
    ) -> Result<crate::gpu::ArrayInfo, MagicError> {
        self.dev.array(&n.text).ok_or_else(|| {
            if let Some(lost) = self.dev.lost_array(&n.text) {
                return arg_err(ctx, ParseError::at(n.span, lost));
            }
            let names: Vec<String> = self.dev.arrays().into_iter().map(|a| a.name).collect();
            let hint = did_you_mean(&n.text, names.iter().map(String::as_str), Quote::Plain)
                .map(|h| format!("; {h}"))
                .unwrap_or_default();
            arg_err(
                ctx,
                ParseError::at(n.span, format!("unknown array '{}'{what}{hint}", n.text)),
            )
        })
    }

    pub(crate) fn execute(
        &mut self,
        ctx: &LineCtx,
        cmd: Command,
        out: &OutputSink,
        cancel: &Arc<AtomicBool>,
    ) -> Result<Option<MimeBundle>, MagicError> {
        if let Some(e) = self.refuse_while_recording(ctx, &cmd) {
            return Err(e);
        }
        match cmd {
            Command::LsMagic => out(CellOutput::Stdout(registry::lsmagic())),
            Command::Help(name) => {
                let text = registry::help(name.as_ref().map(|n| n.text.as_str())).map_err(|m| {
                    let span = name.as_ref().map(|n| n.span).unwrap_or_default();
                    ctx.err(ErrorKind::UnknownMagic, ParseError::at(span, m))
                })?;
                out(CellOutput::Stdout(text));
            }
            Command::ClearOutput { wait } => out(CellOutput::Clear { wait }),
            Command::Array {
                name,
                ctor,
                dtype,
                span,
                managed,
            } => self.array(ctx, &name, &ctor, dtype.map(|d| d.dtype), span, managed)?,
            Command::Graph(g) => self.graph(ctx, g, out, cancel)?,
            Command::Prefetch { name, to_device } => {
                self.need_array(ctx, &name, "")?;
                let note = self
                    .dev
                    .prefetch(&name.text, to_device)
                    .map_err(|e| ctx.gpu_at(e, name.span))?;
                if let Some(n) = note {
                    out(CellOutput::Stdout(format!("{n}\n")));
                }
            }
            Command::Load {
                name,
                path,
                gray,
                as_dtype,
            } => {
                let a =
                    files::load_interruptible(&path.text, gray, as_dtype.map(|d| d.dtype), cancel)
                        .map_err(|(ename, m)| ctx.err(ename, ParseError::at(path.span, m)))?;
                self.dev
                    .create_array(&name.text, a.dtype, a.shape, &a.data)
                    .map_err(|e| ctx.gpu(e))?;
            }
            Command::Save { name, path } => {
                let info = self.need_array(ctx, &name, "")?;
                let data = self.dev.read_array(&name.text).map_err(|e| ctx.gpu(e))?;
                let a = HostArray {
                    dtype: info.dtype,
                    shape: info.shape,
                    data,
                };
                let saved = format!(
                    "saved {} ({} {}) to {}\n",
                    name.text,
                    a.dtype,
                    values::fmt_shape(&a.shape),
                    path.text
                );
                files::save_interruptible(&path.text, a, cancel)
                    .map_err(|(ename, m)| ctx.err(ename, ParseError::at(path.span, m)))?;
                out(CellOutput::Stdout(saved));
            }
            Command::Set(None) => {
                if self.scalars.is_empty() {
                    out(CellOutput::Stdout("no scalars (%set NAME = EXPR)\n".into()));
                } else {
                    let mut t = Table::new(&["name", "value", "type"]).right(&[1]);
                    for (k, v) in &self.scalars {
                        let ty = if matches!(v, Value::Int(_)) {
                            "int"
                        } else {
                            "float"
                        };
                        t.row(vec![k.clone(), v.to_string(), ty.into()]);
                    }
                    out(t.display());
                }
            }
            Command::Set(Some((name, e))) => {
                if eval::FUNCTIONS.contains(&name.text.as_str()) {
                    return Err(arg_err(
                        ctx,
                        ParseError::at(name.span, format!("'{}' is a function name", name.text)),
                    ));
                }
                let v = eval::eval(&e, &self.env()).map_err(|e| arg_err(ctx, e))?;
                self.scalars.insert(name.text, v);
            }
            Command::Launch(l) => self.launch(ctx, &l, out, cancel)?,
            Command::Show(a) => self.show(ctx, &a, out)?,
            Command::Time(a) => self.time(ctx, &a, out, cancel)?,
            Command::Profile(a) => self.profile(ctx, &a, out, cancel)?,
            Command::Timings { clear } => self.show_timings(clear, out)?,
            Command::Timeline(t) => return self.timeline(ctx, t, out),
            Command::Event(e) => self.event(ctx, e, out)?,
            Command::Arrays => {
                let arrays = self.dev.arrays();
                if arrays.is_empty() {
                    out(CellOutput::Stdout("no arrays\n".into()));
                } else {
                    let mut t =
                        Table::new(&["name", "dtype", "shape", "bytes", "backend", "last writer"])
                            .right(&[3]);
                    for a in arrays {
                        t.row(vec![
                            a.name,
                            a.dtype.to_string(),
                            values::fmt_shape(&a.shape),
                            values::human_bytes(a.bytes),
                            match a.symbol {
                                // A cell's variable: say which kind, beside where it lives.
                                Some(space) => format!("{}, {space}", a.backend),
                                // On ptxsim managed memory is ordinary memory: say so.
                                None if a.managed && a.backend == "ptxsim" => {
                                    "ptxsim, managed (ordinary memory here)".to_string()
                                }
                                None if a.managed => format!("{}, managed", a.backend),
                                None => a.backend.to_string(),
                            },
                            a.last_writer.unwrap_or_else(|| "-".into()),
                        ]);
                    }
                    out(t.display());
                }
            }
            Command::Print { name, head } => {
                let info = self.need_array(ctx, &name, "")?;
                let head = match head {
                    Some(e) => {
                        let n = eval::eval_int(&e, &self.env(), "--head")
                            .map_err(|x| arg_err(ctx, x))?;
                        if n < 1 {
                            return Err(arg_err(
                                ctx,
                                ParseError::at(e.span, "--head must be positive"),
                            ));
                        }
                        Some(n as usize)
                    }
                    None => None,
                };
                let data = self.dev.read_array(&name.text).map_err(|e| ctx.gpu(e))?;
                out(CellOutput::Stdout(print_text(&info, &data, head)));
            }
            Command::Free(names) => {
                for n in &names {
                    self.need_array(ctx, n, "")?;
                }
                for n in &names {
                    self.dev
                        .free_array(&n.text)
                        .map_err(|e| ctx.gpu_at(e, n.span))?;
                }
            }
            Command::Swap(a, b) => {
                self.need_array(ctx, &a, "")?;
                self.need_array(ctx, &b, "")?;
                self.dev
                    .swap_arrays(&a.text, &b.text)
                    .map_err(|e| ctx.gpu(e))?;
            }
            Command::Copy { dst, src } if self.dev.recording_graph().is_some() => {
                self.need_array(ctx, &src, "")?;
                self.need_array(ctx, &dst, "")?;
                self.dev
                    .record_copy(&dst.text, &src.text)
                    .map_err(|e| ctx.gpu(e))?;
            }
            Command::Copy { dst, src } => {
                self.need_array(ctx, &src, "")?;
                self.need_array(ctx, &dst, "")?;
                self.dev
                    .copy_array(&dst.text, &src.text)
                    .map_err(|e| ctx.gpu(e))?;
            }
            Command::Sync(stream) => {
                let printf = self
                    .dev
                    .synchronize(stream.as_ref().map(|s| s.text.as_str()))
                    .map_err(|e| match &stream {
                        Some(s) if e.ename == ErrorKind::Argument => ctx.gpu_at(e, s.span),
                        _ => ctx.gpu(e),
                    })?;
                if !printf.is_empty() {
                    out(CellOutput::Stdout(printf));
                }
            }
            Command::Upload(name, stream) => {
                self.need_array(ctx, &name, "")?;
                let s = stream.as_ref().map(|s| s.text.as_str());
                self.dev
                    .upload(&name.text, s)
                    .map_err(|e| ctx.gpu_at(e, name.span))?;
            }
            Command::Download(name, stream) => {
                self.need_array(ctx, &name, "")?;
                let s = stream.as_ref().map(|s| s.text.as_str());
                self.dev
                    .download(&name.text, s)
                    .map_err(|e| ctx.gpu_at(e, name.span))?;
            }
            Command::Device(Some(n)) => {
                let v = eval::eval_int(&n, &self.env(), "the GPU number")
                    .map_err(|e| ctx.err(ErrorKind::Argument, e))?;
                let ordinal = usize::try_from(v).map_err(|_| {
                    ctx.err(
                        ErrorKind::Argument,
                        ParseError::at(n.span, format!("GPU number {v} is negative")),
                    )
                })?;
                let msg = self
                    .dev
                    .select_device(ordinal)
                    .map_err(|e| ctx.gpu_at(e, n.span))?;
                out(CellOutput::Stdout(format!("{}\n", msg.trim_end())));
            }
            Command::Device(None) => {
                let d = self.dev.describe();
                let mut t = Table::new(&["property", "value"])
                    .caption(format!("{} (backend: {})", d.name, d.backend));
                for (k, v) in d.rows {
                    t.row(vec![k, v]);
                }
                out(t.display());
            }
            Command::Limit(None) => {
                let mut t = Table::new(&["limit", "value", "default"]).caption(format!(
                    "device limits (backend: {})",
                    self.dev.backend_name()
                ));
                t.row(vec![
                    "stack".into(),
                    format!("{} bytes per thread", self.dev.stack_limit()),
                    format!("{} bytes", ptxsim::DEFAULT_STACK_BYTES),
                ]);
                out(t.display());
            }
            Command::Limit(Some((_, bytes))) => {
                let v = eval::eval_int(&bytes, &self.env(), "the stack size")
                    .map_err(|x| arg_err(ctx, x))?;
                self.dev
                    .set_stack_limit(v)
                    .map_err(|e| ctx.gpu_at(e, bytes.span))?;
                out(CellOutput::Stdout(format!(
                    "call stack: {v} bytes per thread ({})\n",
                    self.dev.backend_name()
                )));
            }
            Command::Backend(n) => {
                let target = match n.text.as_str() {
                    "cuda" | "gpu" => "gpu",
                    _ => "sim",
                };
                let msg = self
                    .dev
                    .set_backend(target)
                    .map_err(|e| ctx.gpu_at(e, n.span))?;
                out(CellOutput::Stdout(format!("{}\n", msg.trim_end())));
            }
            Command::Ptx(k) => {
                let ptx = self
                    .dev
                    .ptx(&k.text)
                    .map_err(|e| self.kernel_err(ctx, e, &k))?;
                out(CellOutput::Stdout(ptx));
            }
            Command::Info { kernel: k, gpu } => {
                let model = match &gpu {
                    Some(g) => Some(super::gpu::find_model(ctx, self.dev.defined_gpus(), g)?),
                    None => None,
                };
                let info = self
                    .dev
                    .info_on(&k.text, model.as_ref())
                    .map_err(|e| self.kernel_err(ctx, e, &k))?;
                let params: Vec<String> = info
                    .params
                    .iter()
                    .map(|p| format!("{} {}", p.c_type, p.name))
                    .collect();
                let mut t = Table::new(&["property", "value"]).caption(format!(
                    "CUDA kernel {}({})",
                    info.name,
                    params.join(", ")
                ));
                for (k, v) in info.rows {
                    t.row(vec![k, v]);
                }
                out(t.display());
                if let Some(occ) = &info.occupancy {
                    out(super::gpu::occupancy_table(occ).display());
                }
            }
            Command::Gpu(None) => {
                out(super::gpu::models_table(&self.dev.gpu_models()).display());
            }
            Command::GpuCompare(l) => {
                let request = self.launch_request(ctx, &l, cancel)?;
                let mut rows = Vec::new();
                let models: Vec<ptxsim::gpus::GpuModel> = ptxsim::gpus::GPUS
                    .iter()
                    .chain(self.dev.defined_gpus())
                    .cloned()
                    .collect();
                for g in &models {
                    if cancel.load(std::sync::atomic::Ordering::Relaxed) {
                        return Err(
                            ctx.plain(ErrorKind::Interrupted, "%gpu compare was interrupted")
                        );
                    }
                    let p = self.dev.profile(&request, g).map_err(|e| ctx.gpu(e))?;
                    rows.push((g.clone(), p.estimate));
                }
                out(super::gpu::compare_table(&l.kernel.text, &rows).display());
            }
            Command::Gpu(Some(name)) => {
                let model = super::gpu::find_model(ctx, self.dev.defined_gpus(), &name)?;
                self.dev.set_gpu_model(&model);
                out(CellOutput::Stdout(format!(
                    "ptxsim now models {} ({}, {} SMs, {:.0} GB/s); %info and estimates use it\n",
                    model.product,
                    model.arch(),
                    model.sms,
                    model.dram_gb_s
                )));
            }
            Command::GpuDefine { name, figures } => {
                let model = super::gpu::defined_model(ctx, &name, &figures)?;
                let replaced = self.dev.define_gpu(model.clone());
                out(CellOutput::Stdout(format!(
                    "{} {} ({}, {} SMs, {} MHz, {:.0} GB/s, {} MiB L2): %gpu {}, --gpu {} and %gpu compare know it now\n",
                    if replaced { "redefined" } else { "defined" },
                    model.name,
                    model.arch(),
                    model.sms,
                    model.boost_clock_mhz,
                    model.dram_gb_s,
                    model.l2_bytes >> 20,
                    model.name,
                    model.name,
                )));
            }
            Command::Reset => {
                let msg = self.dev.reset().map_err(|e| ctx.gpu(e))?;
                out(CellOutput::Stdout(format!("{}\n", msg.trim_end())));
            }
        }
        Ok(None)
    }

    /// A device error about a CUDA kernel name, pointing at the name (the device state's
    /// message already suggests the nearest kernel when the name is unknown).
    pub(crate) fn kernel_err(
        &self,
        ctx: &LineCtx,
        e: crate::gpu::GpuError,
        k: &Name,
    ) -> MagicError {
        ctx.gpu_at(e, k.span)
    }

    fn array(
        &mut self,
        ctx: &LineCtx,
        name: &Name,
        ctor: &Ctor,
        dtype: Option<Dtype>,
        span: Span,
        managed: bool,
    ) -> Result<(), MagicError> {
        if let Ctor::Copy(other) = ctor {
            let info = self.need_array(ctx, other, " in copy()")?;
            let data = self.dev.read_array(&other.text).map_err(|e| ctx.gpu(e))?;
            return self
                .dev
                .create_array_in(&name.text, info.dtype, info.shape, &data, managed)
                .map_err(|e| ctx.gpu(e));
        }
        let Some(d) = dtype else {
            return Err(ctx.plain(ErrorKind::Syntax, "missing dtype"));
        };
        let env = self.env();
        let shape_of = |e: &Expr| -> Result<Vec<usize>, MagicError> {
            let dims = eval::eval_dims(e, &env, "the shape", 4).map_err(|x| arg_err(ctx, x))?;
            Ok(dims.into_iter().map(|v| v as usize).collect())
        };
        let num = |e: &Expr| eval::eval(e, &env).map_err(|x| arg_err(ctx, x));
        let (shape, fill) = match ctor {
            Ctor::Zeros(s) | Ctor::Empty(s) => (shape_of(s)?, Fill::Zeros),
            Ctor::Ones(s) => (shape_of(s)?, Fill::Ones),
            Ctor::Full(s, v) => (shape_of(s)?, Fill::Value(num(v)?)),
            Ctor::Rand(s, seed) | Ctor::Randn(s, seed) => {
                let seed = match seed {
                    Some(e) => {
                        eval::eval_int(e, &env, "seed=").map_err(|x| arg_err(ctx, x))? as u64
                    }
                    None => rng::fresh_seed(),
                };
                let fill = if matches!(ctor, Ctor::Rand(..)) {
                    Fill::Rand(seed)
                } else {
                    Fill::Randn(seed)
                };
                (shape_of(s)?, fill)
            }
            Ctor::Arange(args) => {
                let vals = args.iter().map(num).collect::<Result<Vec<_>, _>>()?;
                let (start, stop, step) = match vals.as_slice() {
                    [n] => (Value::Int(0), *n, Value::Int(1)),
                    [a, b] => (*a, *b, Value::Int(1)),
                    [a, b, s] => (*a, *b, *s),
                    _ => return Err(ctx.plain(ErrorKind::Syntax, "arange() takes 1 to 3 numbers")),
                };
                let count = arange_len(start, stop, step)
                    .map_err(|m| arg_err(ctx, ParseError::at(span, m)))?;
                (vec![count], Fill::Arange { start, step })
            }
            Ctor::Linspace(a, b, n) => {
                let (a, b) = (num(a)?.as_f64(), num(b)?.as_f64());
                let count = eval::eval_dims(n, &env, "the number of points N", 1)
                    .map_err(|x| arg_err(ctx, x))?[0] as usize;
                (vec![count], Fill::Linspace { a, b })
            }
            Ctor::Copy(_) => return Err(ctx.plain(ErrorKind::Syntax, "copy()")),
        };
        let len = shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| ctx.plain(ErrorKind::Memory, "the shape is too large"))?;
        let data = host::generate(fill, d, len).map_err(|(mem, m)| {
            let ename = if mem {
                ErrorKind::Memory
            } else {
                ErrorKind::Argument
            };
            ctx.err(ename, ParseError::at(span, m))
        })?;
        self.dev
            .create_array_in(&name.text, d, shape, &data, managed)
            .map_err(|e| ctx.gpu(e))
    }
}

/// Number of elements of `arange(start, stop, step)` (numpy's rule: ceil((stop - start) / step)).
pub(crate) fn arange_len(start: Value, stop: Value, step: Value) -> Result<usize, String> {
    let n: f64 = match (start, stop, step) {
        (Value::Int(a), Value::Int(b), Value::Int(s)) => {
            if s == 0 {
                return Err("arange() step must not be zero".into());
            }
            let diff = b as i128 - a as i128;
            let s = s as i128;
            let q = diff / s;
            let q = if diff % s != 0 && (diff % s > 0) == (s > 0) {
                q + 1
            } else {
                q
            };
            q as f64
        }
        _ => {
            let (a, b, s) = (start.as_f64(), stop.as_f64(), step.as_f64());
            if s == 0.0 || !s.is_finite() || !a.is_finite() || !b.is_finite() {
                return Err("arange() needs finite numbers and a non-zero step".into());
            }
            ((b - a) / s).ceil()
        }
    };
    if n < 1.0 {
        return Err("arange() would be empty (arrays need at least one element)".into());
    }
    if n > (host::MAX_HOST_BYTES as f64) {
        return Err("arange() is too long".into());
    }
    Ok(n as usize)
}

/// The text of `%print`.
pub(crate) fn print_text(info: &crate::gpu::ArrayInfo, data: &[u8], head: Option<usize>) -> String {
    let s = stats::stats(info.dtype, data);
    format!(
        "{}: {} {}, {}\n{}\n{}\n",
        info.name,
        info.dtype,
        values::fmt_shape(&info.shape),
        values::human_bytes(info.bytes),
        array_text::format_values(info.dtype, &info.shape, data, head),
        stats::fmt_stats(info.dtype, &s)
    )
}
