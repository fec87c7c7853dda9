//! Lowering: from the syntax tree to pre-decoded `Program`s.
//!
//! This module resolves names (registers with nested scopes, labels, module variables, shared
//! and local symbols, parameters, device functions), lays out shared, local and parameter
//! memory, turns immediates and addresses into constant slots, and hands each instruction to
//! `inst` for instruction selection; `fold` then turns registers that only copy a constant or a
//! special register into such slots; `uniform` analyses a lowered program for the planned
//! block tier. It allocates module variables through a callback and never executes anything.

mod arith;
mod control;
mod fold;
mod inst;
mod memory;
mod tensor;
mod types;

use std::collections::{HashMap, HashSet, VecDeque};

use crate::ir::{
    CallSite, Callee, FuncInfo, Inst, Loc, MemSpace, Op, Program, SReg, Slot, TensorSite, NONE,
    RESERVED_SMEM,
};
use crate::parse::{Ast, Function, Init, Space, Stmt, VarDecl};
use crate::{ModuleError, ParamInfo, PtxType};
pub use inst::is_predefined_name;
pub use types::Ty;

fn perr(line: usize, message: impl Into<String>) -> ModuleError {
    ModuleError::Parse {
        line,
        message: message.into(),
    }
}

fn unsupported(line: usize, what: impl Into<String>) -> ModuleError {
    ModuleError::Unsupported {
        line,
        instruction: what.into(),
    }
}

/// Size in bytes of one element of a declared scalar type.
pub fn scalar_size(s: &str) -> Option<u32> {
    Some(match s {
        "b8" | "u8" | "s8" | "pred" | "e4m3" | "e5m2" => 1,
        "b16" | "u16" | "s16" | "f16" | "bf16" => 2,
        "b32" | "u32" | "s32" | "f32" | "f16x2" | "bf16x2" | "tf32" => 4,
        "b64" | "u64" | "s64" | "f64" => 8,
        "b128" => 16,
        _ => return None,
    })
}

fn ptx_type(s: &str) -> Option<PtxType> {
    Some(match s {
        "b8" => PtxType::B8,
        "b16" => PtxType::B16,
        "b32" => PtxType::B32,
        "b64" => PtxType::B64,
        "u8" => PtxType::U8,
        "u16" => PtxType::U16,
        "u32" => PtxType::U32,
        "u64" => PtxType::U64,
        "s8" => PtxType::S8,
        "s16" => PtxType::S16,
        "s32" => PtxType::S32,
        "s64" => PtxType::S64,
        "f16" => PtxType::F16,
        "f32" => PtxType::F32,
        "f64" => PtxType::F64,
        "pred" => PtxType::Pred,
        _ => return None,
    })
}

/// Number of elements of a declaration (product of dimensions; an unsized array takes its
/// length from the initialiser, or 0).
fn elem_count(v: &VarDecl) -> u64 {
    let mut n: u64 = v.ty.vec as u64;
    for (i, d) in v.dims.iter().enumerate() {
        let k = match d {
            Some(k) => *k,
            None if i == 0 => match &v.init {
                Some(Init::List(items)) => items.len() as u64,
                _ => 0,
            },
            None => 0,
        };
        n = n.saturating_mul(k);
    }
    n
}

/// Byte size of a declaration.
pub fn decl_size(v: &VarDecl) -> Result<u64, ModuleError> {
    let s = scalar_size(&v.ty.scalar)
        .ok_or_else(|| unsupported(v.line, format!("variable type .{}", v.ty.scalar)))?;
    Ok(elem_count(v).saturating_mul(s as u64))
}

fn decl_align(v: &VarDecl) -> u32 {
    v.align
        .unwrap_or_else(|| scalar_size(&v.ty.scalar).unwrap_or(1) * v.ty.vec)
        .max(1)
}

/// Flatten an initialiser into bytes: the initialised prefix of the variable (the rest of its
/// memory is zero). `addr_of` resolves symbol addresses.
pub fn init_bytes(
    v: &VarDecl,
    size: usize,
    addr_of: &dyn Fn(&str) -> Option<u64>,
) -> Result<Vec<u8>, ModuleError> {
    let Some(init) = &v.init else {
        return Ok(Vec::new());
    };
    let es = scalar_size(&v.ty.scalar).unwrap_or(1) as usize;
    let mut leaves = Vec::new();
    fn flatten<'a>(i: &'a Init, out: &mut Vec<&'a Init>) {
        match i {
            Init::List(items) => items.iter().for_each(|x| flatten(x, out)),
            other => out.push(other),
        }
    }
    flatten(init, &mut leaves);
    // Only the initialised prefix: the variable's memory is zero already (a 14 GB `.b8` array
    // with a 10-byte initialiser must not cost 14 GB of host memory here).
    let mut out = vec![0u8; leaves.len().saturating_mul(es).min(size)];
    let is_float = v.ty.scalar.starts_with('f');
    for (k, leaf) in leaves.iter().enumerate() {
        let at = k * es;
        if at + es > size {
            return Err(perr(
                v.line,
                format!("too many initialisers for `{}`", v.name),
            ));
        }
        let bits: u64 = match leaf {
            Init::Int(i) if is_float => float_bits(*i as f64, es),
            Init::Int(i) => *i as u64,
            Init::Float(f) => float_bits(*f, es),
            Init::F32Bits(b) => float_bits(f32::from_bits(*b) as f64, es),
            Init::F64Bits(b) => float_bits(f64::from_bits(*b), es),
            Init::Addr { name, offset } => addr_of(name)
                .ok_or_else(|| perr(v.line, format!("unknown symbol `{name}` in initialiser")))?
                .wrapping_add(*offset as u64),
            Init::List(_) => 0,
        };
        out[at..at + es].copy_from_slice(&bits.to_le_bytes()[..es]);
    }
    Ok(out)
}

fn float_bits(f: f64, size: usize) -> u64 {
    match size {
        8 => f.to_bits(),
        4 => (f as f32).to_bits() as u64,
        2 => crate::sem::ieee::f32_to_f16(f as f32) as u64,
        _ => f as u64,
    }
}

/// Module-level facts the lowering of every kernel needs.
pub struct ModCtx<'a> {
    /// Addresses of module `.global`/`.const` variables.
    pub globals: HashMap<String, u64>,
    /// Module-scope `.shared` variables.
    pub shared: HashMap<String, &'a VarDecl>,
    /// Functions with a body.
    pub funcs: HashMap<String, &'a Function>,
    /// Declared functions (with or without body).
    pub declared: HashSet<String>,
    /// `.file` index → index in `files`.
    pub file_index: HashMap<u32, u32>,
    /// Position of every declared function in the module (function-pointer values).
    pub fn_index: HashMap<String, usize>,
    /// Functions whose address is taken (in initialisers or as instruction operands).
    pub addr_taken: Vec<String>,
    /// Number of functions in the module.
    pub nfuncs: usize,
}

impl<'a> ModCtx<'a> {
    pub fn new(ast: &'a Ast, globals: HashMap<String, u64>) -> Self {
        let mut shared = HashMap::new();
        for v in &ast.vars {
            if v.space == Space::Shared {
                shared.insert(v.name.clone(), v);
            }
        }
        let mut funcs = HashMap::new();
        let mut declared = HashSet::new();
        for f in &ast.functions {
            declared.insert(f.name.clone());
            if f.body.is_some() {
                funcs.insert(f.name.clone(), f);
            }
        }
        let file_index = ast
            .files
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (*k, i as u32))
            .collect();
        let fn_index = function_indices(ast);
        let mut taken = HashSet::new();
        for v in &ast.vars {
            if let Some(init) = &v.init {
                init.visit_addrs(&mut |n| {
                    if fn_index.contains_key(n) {
                        taken.insert(n.to_string());
                    }
                });
            }
        }
        for f in &ast.functions {
            for st in f.body.as_deref().unwrap_or(&[]) {
                if let Stmt::Inst(i) = st {
                    let skip = if i.opcode.starts_with("call") { 2 } else { 0 };
                    for (k, o) in i.operands.iter().enumerate() {
                        if skip > 0 && k < skip && matches!(o, crate::parse::Operand::Name(_)) {
                            continue;
                        }
                        o.visit_names(&mut |n| {
                            if fn_index.contains_key(n) {
                                taken.insert(n.to_string());
                            }
                        });
                    }
                }
            }
        }
        let mut addr_taken: Vec<String> = taken.into_iter().collect();
        addr_taken.sort();
        ModCtx {
            globals,
            shared,
            funcs,
            declared,
            file_index,
            nfuncs: ast.functions.len(),
            fn_index,
            addr_taken,
        }
    }
}

/// Position of each function in the module (the first declaration wins).
pub fn function_indices(ast: &Ast) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for (i, f) in ast.functions.iter().enumerate() {
        m.entry(f.name.clone()).or_insert(i);
    }
    m
}

/// A resolved memory operand (`inst` resolves them; `memory` and `tensor` read them).
pub(super) enum MemRef {
    /// Address = slot value + imm, in `space`.
    Addr {
        base: Slot,
        imm: i64,
        space: MemSpace,
    },
    /// A kernel parameter at this byte offset.
    KParam(i64),
}

/// What a name in a function body stands for.
#[derive(Debug, Clone, Copy)]
pub enum Sym {
    Reg(Slot),
    /// A `.local` variable: per-thread local byte offset and size.
    Local(u32, u32),
    /// A device function's parameter or a call's argument: also kept in local memory, but its
    /// address (`mov`) is the generic one, so that `ld.param`, `cvta.param` and generic
    /// loads through it all work.
    Param(u32, u32),
    /// A kernel parameter: its offset in the parameter buffer.
    KParam(u32),
}

const ENTRY: usize = usize::MAX;

/// Most register slots (registers, constants, special registers) a kernel may use.
pub const MAX_SLOTS: u32 = 1 << 16;
/// Most local memory per thread (CUDA's limit is 512 KiB).
pub const MAX_LOCAL: u32 = 512 * 1024;

/// Builds one kernel's `Program`.
pub struct KB<'a> {
    pub m: &'a ModCtx<'a>,
    pub code: Vec<Inst>,
    pub nslots: u32,
    consts: HashMap<u64, Slot>,
    const_list: Vec<(Slot, u64)>,
    sregs: HashMap<SReg, Slot>,
    sreg_list: Vec<(Slot, SReg)>,
    shared_off: HashMap<String, u32>,
    shared_end: u32,
    dyn_align: u32,
    local_end: u32,
    pub calls: Vec<CallSite>,
    /// Tensor-core sites (`Op::Tensor`).
    pub tensor: Vec<TensorSite>,
    /// Pending call sites: (site, callee function index).
    funcs: Vec<FuncInfo>,
    func_idx: HashMap<String, usize>,
    queue: VecDeque<usize>,
    edges: Vec<(usize, usize)>,
    locs: Vec<Loc>,
    loc_idx: HashMap<Loc, u32>,
    /// The latest loc index at each (file, line, column): how `inlined_at` finds its chain.
    last_at: HashMap<(u32, u32, u32), u32>,
    declared_regs: usize,
    /// The kernel calls through function pointers.
    pub indirect: bool,
    /// The kernel reads `%envreg1`/`%envreg2`, where a cooperative launch passes the grid
    /// workspace (`cooperative_groups::this_grid()`).
    pub reads_grid_workspace: bool,
    pub sink: Slot,
    pub cc: Slot,
    // Per-function state.
    scopes: Vec<HashMap<String, Sym>>,
    labels: HashMap<String, u32>,
    label_fix: Vec<(usize, String, usize)>,
    cur_func: usize,
    pub cur_loc: u32,
}

impl<'a> KB<'a> {
    /// The index of `loc` in `locs`, added when new.
    fn intern_loc(&mut self, loc: Loc) -> u32 {
        match self.loc_idx.get(&loc) {
            Some(&i) => i,
            None => {
                let i = self.locs.len() as u32;
                self.locs.push(loc);
                self.loc_idx.insert(loc, i);
                i
            }
        }
    }

    fn new(m: &'a ModCtx<'a>) -> Self {
        let mut kb = KB {
            m,
            code: Vec::new(),
            nslots: 0,
            consts: HashMap::new(),
            const_list: Vec::new(),
            sregs: HashMap::new(),
            sreg_list: Vec::new(),
            shared_off: HashMap::new(),
            shared_end: 0,
            dyn_align: 16,
            local_end: 0,
            calls: Vec::new(),
            tensor: Vec::new(),
            funcs: Vec::new(),
            func_idx: HashMap::new(),
            queue: VecDeque::new(),
            edges: Vec::new(),
            locs: vec![Loc {
                file: u32::MAX,
                line: 0,
                column: 0,
                inlined_at: 0,
            }],
            loc_idx: HashMap::new(),
            last_at: HashMap::new(),
            declared_regs: 0,
            indirect: false,
            reads_grid_workspace: false,
            sink: 0,
            cc: 1,
            scopes: Vec::new(),
            labels: HashMap::new(),
            label_fix: Vec::new(),
            cur_func: ENTRY,
            cur_loc: 0,
        };
        kb.sink = kb.new_slot();
        kb.cc = kb.new_slot();
        kb
    }

    pub fn new_slot(&mut self) -> Slot {
        self.nslots += 1;
        self.nslots - 1
    }

    /// A slot holding `v` in every lane.
    pub fn konst(&mut self, v: u64) -> Slot {
        if let Some(&s) = self.consts.get(&v) {
            return s;
        }
        let s = self.new_slot();
        self.consts.insert(v, s);
        self.const_list.push((s, v));
        s
    }

    pub fn sreg(&mut self, r: SReg) -> Slot {
        if let Some(&s) = self.sregs.get(&r) {
            return s;
        }
        let s = self.new_slot();
        self.sregs.insert(r, s);
        self.sreg_list.push((s, r));
        s
    }

    pub fn lookup(&self, name: &str) -> Option<Sym> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    /// Shared-memory offset of a shared variable (laid out by `layout_shared`).
    pub fn shared_offset(&self, name: &str) -> Option<u32> {
        self.shared_off.get(name).copied()
    }

    /// Lay out every static shared variable the kernel can reach (module-scope ones it names,
    /// function-scope ones it declares), then put the dynamic area after them.
    fn layout_shared(&mut self, entry: &Function) -> Result<(), ModuleError> {
        let mut seen = HashSet::new();
        let mut todo = vec![entry];
        let mut names: Vec<&VarDecl> = Vec::new();
        let mut externs: Vec<&VarDecl> = Vec::new();
        let mut reserved = false;
        seen.insert(entry.name.clone());
        while let Some(f) = todo.pop() {
            for st in f.body.as_deref().unwrap_or(&[]) {
                match st {
                    Stmt::Var(v) if v.space == Space::Shared => names.push(v),
                    Stmt::Inst(i) => {
                        let mut visit = |n: &str| {
                            reserved |= n.starts_with("%reserved_smem_offset");
                            if let Some(v) = self.m.shared.get(n) {
                                if v.is_extern || v.dims.first() == Some(&None) {
                                    externs.push(v);
                                } else {
                                    names.push(v);
                                }
                            }
                            if let Some(g) = self.m.funcs.get(n) {
                                if seen.insert(n.to_string()) {
                                    todo.push(g);
                                }
                            }
                        };
                        for o in &i.operands {
                            o.visit_names(&mut visit);
                        }
                    }
                    _ => {}
                }
            }
        }
        if reserved {
            // The reserved area comes first, as on sm_80 and later GPUs.
            self.shared_end = self.shared_end.max(RESERVED_SMEM);
        }
        for v in names {
            if self.shared_off.contains_key(&v.name) {
                continue;
            }
            let size = decl_size(v)? as u32;
            let align = decl_align(v);
            let off = self.shared_end.div_ceil(align) * align;
            self.shared_end = off.saturating_add(size);
            self.shared_off.insert(v.name.clone(), off);
        }
        for v in &externs {
            self.dyn_align = self.dyn_align.max(decl_align(v));
        }
        let a = self.dyn_align.max(16);
        let dyn_off = self.shared_end.div_ceil(a) * a;
        for v in externs {
            self.shared_off.insert(v.name.clone(), dyn_off);
        }
        Ok(())
    }

    fn alloc_local(&mut self, size: u32, align: u32) -> u32 {
        let a = align.clamp(1, 1 << 12);
        let off = self.local_end.div_ceil(a).saturating_mul(a);
        self.local_end = off.saturating_add(size);
        off
    }

    /// Emit one instruction at the current source position.
    pub fn emit(&mut self, op: Op, guard: Option<(Slot, bool)>, r: [Slot; 6], imm: i64) {
        let (g, gn) = guard.unwrap_or((NONE, false));
        self.code.push(Inst {
            op,
            guard: g,
            guard_neg: gn,
            r,
            imm,
            loc: self.cur_loc,
        });
    }

    /// Record a branch to `label` from the instruction just emitted.
    pub fn branch_fixup(&mut self, label: &str, line: usize) {
        self.label_fix
            .push((self.code.len() - 1, label.to_string(), line));
    }

    /// Index of device function `name`, queued for lowering on first use.
    pub fn func_index(&mut self, name: &str) -> Option<usize> {
        if let Some(&i) = self.func_idx.get(name) {
            self.edges.push((self.cur_func, i));
            return Some(i);
        }
        self.m.funcs.get(name)?;
        let i = self.funcs.len();
        self.funcs.push(FuncInfo {
            name: name.to_string(),
            entry_pc: 0,
            regs: (0, 0),
            local: (0, 0),
            params: Vec::new(),
            rets: Vec::new(),
            recursive: false,
        });
        self.func_idx.insert(name.to_string(), i);
        self.queue.push_back(i);
        self.edges.push((self.cur_func, i));
        Some(i)
    }

    fn declare_var(&mut self, v: &VarDecl) -> Result<(), ModuleError> {
        match v.space {
            Space::Local | Space::Param => {
                let size = decl_size(v)? as u32;
                let off = self.alloc_local(size, decl_align(v));
                let sym = if v.space == Space::Param {
                    Sym::Param(off, size)
                } else {
                    Sym::Local(off, size)
                };
                self.top().insert(v.name.clone(), sym);
            }
            Space::Shared => {
                // Laid out beforehand by `layout_shared`.
            }
            Space::Reg => {
                // Only the check matters: registers hold any type in 64-bit slots.
                Ty::parse(&v.ty.scalar)
                    .ok_or_else(|| unsupported(v.line, format!(".reg .{}", v.ty.scalar)))?;
                let s = self.new_slot();
                self.declared_regs += 1;
                self.top().insert(v.name.clone(), Sym::Reg(s));
            }
            _ => {
                return Err(unsupported(
                    v.line,
                    format!("function-scope {:?} variable `{}`", v.space, v.name),
                ))
            }
        }
        Ok(())
    }

    fn top(&mut self) -> &mut HashMap<String, Sym> {
        if self.scopes.is_empty() {
            self.scopes.push(HashMap::new());
        }
        let n = self.scopes.len() - 1;
        &mut self.scopes[n]
    }

    fn lower_body(&mut self, body: &[Stmt]) -> Result<(), ModuleError> {
        for st in body {
            match st {
                Stmt::Reg { ty, names, line } => {
                    Ty::parse(&ty.scalar)
                        .filter(|_| ty.vec == 1)
                        .ok_or_else(|| unsupported(*line, format!(".reg .{}", ty.scalar)))?;
                    for (name, count) in names {
                        match count {
                            Some(n) => {
                                if *n > MAX_SLOTS || self.nslots + *n > MAX_SLOTS {
                                    return Err(perr(*line, "too many registers declared"));
                                }
                                for k in 0..*n {
                                    let s = self.new_slot();
                                    self.top().insert(format!("{name}{k}"), Sym::Reg(s));
                                }
                                self.declared_regs += *n as usize;
                            }
                            None => {
                                let s = self.new_slot();
                                self.declared_regs += 1;
                                self.top().insert(name.clone(), Sym::Reg(s));
                            }
                        }
                    }
                }
                Stmt::Var(v) => self.declare_var(v)?,
                Stmt::Label(l, _) => {
                    self.labels.insert(l.clone(), self.code.len() as u32);
                }
                Stmt::Loc {
                    file,
                    line,
                    column,
                    inlined_at,
                } => {
                    let file_of = |f: &u32| self.m.file_index.get(f).copied().unwrap_or(u32::MAX);
                    // The call site: the latest `.loc` at that position (which carries its own
                    // call site when it is itself inlined), or a new one.
                    let at = match inlined_at {
                        Some((f, l, c)) => {
                            let key = (file_of(f), *l, *c);
                            match self.last_at.get(&key) {
                                Some(&i) => i,
                                None => self.intern_loc(Loc {
                                    file: key.0,
                                    line: key.1,
                                    column: key.2,
                                    inlined_at: 0,
                                }),
                            }
                        }
                        None => 0,
                    };
                    let loc = Loc {
                        file: file_of(file),
                        line: *line,
                        column: *column,
                        inlined_at: at,
                    };
                    self.cur_loc = self.intern_loc(loc);
                    self.last_at
                        .insert((loc.file, loc.line, loc.column), self.cur_loc);
                }
                Stmt::Open => self.scopes.push(HashMap::new()),
                Stmt::Close => {
                    self.scopes.pop();
                }
                Stmt::Inst(i) => self.lower_inst(i)?,
            }
        }
        Ok(())
    }

    fn finish_function(&mut self, end_op: Op) -> Result<(), ModuleError> {
        self.emit(end_op, None, [NONE; 6], 0);
        for (at, label, line) in std::mem::take(&mut self.label_fix) {
            let pc = *self
                .labels
                .get(&label)
                .ok_or_else(|| perr(line, format!("unknown label `{label}`")))?;
            self.code[at].imm = pc as i64;
        }
        self.labels.clear();
        self.scopes.clear();
        Ok(())
    }

    fn lower_function(&mut self, fi: usize) -> Result<(), ModuleError> {
        let name = self.funcs[fi].name.clone();
        let f = *self
            .m
            .funcs
            .get(&name)
            .ok_or_else(|| perr(0, format!("no body for function `{name}`")))?;
        self.cur_func = fi;
        self.cur_loc = 0;
        let reg_lo = self.nslots;
        let local_lo = self.local_end;
        self.funcs[fi].entry_pc = self.code.len() as u32;
        self.scopes.push(HashMap::new());
        let mut params = Vec::new();
        let mut rets = Vec::new();
        for (list, out) in [(&f.params, &mut params), (&f.rets, &mut rets)] {
            for p in list.iter() {
                let size = decl_size(p)? as u32;
                let off = self.alloc_local(size, decl_align(p));
                self.top().insert(p.name.clone(), Sym::Param(off, size));
                out.push((off, size));
            }
        }
        self.funcs[fi].params = params;
        self.funcs[fi].rets = rets;
        let body = f.body.as_deref().unwrap_or(&[]);
        self.lower_body(body)?;
        self.finish_function(Op::Ret)?;
        self.funcs[fi].regs = (reg_lo, self.nslots);
        self.funcs[fi].local = (local_lo, self.local_end);
        Ok(())
    }

    fn mark_recursive(&mut self) {
        let n = self.funcs.len();
        let mut adj = vec![Vec::new(); n];
        for &(a, b) in &self.edges {
            if a != ENTRY {
                adj[a].push(b);
            }
        }
        for start in 0..n {
            let mut seen = vec![false; n];
            let mut stack = adj[start].clone();
            while let Some(x) = stack.pop() {
                if x == start {
                    self.funcs[start].recursive = true;
                    break;
                }
                if !seen[x] {
                    seen[x] = true;
                    stack.extend(adj[x].iter().copied());
                }
            }
        }
    }
}

/// Lower the `.entry` `f` (and every function it calls) into a `Program`.
pub fn lower_kernel(m: &ModCtx, f: &Function) -> Result<Program, ModuleError> {
    let mut kb = KB::new(m);
    kb.layout_shared(f)?;
    kb.scopes.push(HashMap::new());
    let mut params = Vec::new();
    let mut off = 0usize;
    for p in &f.params {
        let size = decl_size(p)? as usize;
        let align = decl_align(p) as usize;
        off = off.div_ceil(align) * align;
        kb.top().insert(p.name.clone(), Sym::KParam(off as u32));
        params.push(ParamInfo {
            name: p.name.clone(),
            ty: if p.dims.is_empty() && p.ty.vec == 1 {
                ptx_type(&p.ty.scalar)
            } else {
                None
            },
            size,
            align,
            offset: off,
            is_pointer: p.is_ptr,
        });
        off += size;
    }
    let body = f
        .body
        .as_deref()
        .ok_or_else(|| perr(f.line, format!("entry `{}` has no body", f.name)))?;
    kb.lower_body(body)?;
    kb.finish_function(Op::Exit)?;
    loop {
        while let Some(fi) = kb.queue.pop_front() {
            kb.lower_function(fi)?;
        }
        if !kb.indirect {
            break;
        }
        // Calls through pointers may reach any function whose address is taken.
        let before = kb.funcs.len();
        for name in &m.addr_taken {
            kb.func_index(name);
        }
        if kb.funcs.len() == before && kb.queue.is_empty() {
            break;
        }
    }
    kb.mark_recursive();
    if kb.indirect {
        // The call graph is not known: save every function's window on every call.
        for f in &mut kb.funcs {
            f.recursive = true;
        }
    }
    let mut by_module_fn = vec![None; m.nfuncs];
    for (k, f) in kb.funcs.iter().enumerate() {
        if let Some(&mi) = m.fn_index.get(&f.name) {
            by_module_fn[mi] = Some(k as u32);
        }
    }
    // Resolve call sites now that every callee's parameters are laid out.
    for site in &mut kb.calls {
        if let Callee::Func(fi) = site.callee {
            let fun = &kb.funcs[fi];
            if site.args.len() != fun.params.len() || site.rets.len() != fun.rets.len() {
                return Err(perr(
                    f.line,
                    format!("call of `{}` with the wrong number of arguments", fun.name),
                ));
            }
        }
    }
    let max_threads = f
        .reqntid
        .as_ref()
        .or(f.maxntid.as_ref())
        .map(|d| d.iter().product::<u32>());
    let dyn_align = kb.dyn_align;
    if kb.nslots > MAX_SLOTS {
        return Err(perr(
            f.line,
            format!(
                "`{}` needs {} registers and constants; the simulator allows {MAX_SLOTS}",
                f.name, kb.nslots
            ),
        ));
    }
    if kb.local_end > MAX_LOCAL {
        return Err(perr(
            f.line,
            format!(
                "`{}` needs {} bytes of local memory per thread; the limit is {MAX_LOCAL}",
                f.name, kb.local_end
            ),
        ));
    }
    static NEXT_UID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut prog = Program {
        name: f.name.clone(),
        has_barriers: kb.code.iter().any(|i| matches!(i.op, Op::Bar(_))),
        reads_grid_workspace: kb.reads_grid_workspace,
        code: kb.code,
        nslots: kb.nslots,
        consts: kb.const_list,
        sregs: kb.sreg_list,
        local_bytes: kb.local_end.div_ceil(8) * 8,
        static_shared: kb.shared_end,
        dyn_shared_align: dyn_align,
        params,
        param_bytes: off,
        calls: kb.calls,
        tensor: kb.tensor,
        funcs: kb.funcs,
        by_module_fn,
        locs: kb.locs,
        declared_regs: kb.declared_regs,
        max_threads,
        reqntid: f.reqntid.as_ref().map(|d| {
            (
                d.first().copied().unwrap_or(1),
                d.get(1).copied().unwrap_or(1),
                d.get(2).copied().unwrap_or(1),
            )
        }),
        entry_live: Vec::new(),
        uid: NEXT_UID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        block_tier: false,
        block_slots: Vec::new(),
    };
    let read_first = crate::ir::live::entry_live(&prog);
    fold::copies(&mut prog, &read_first);
    prog.entry_live = read_first;
    Ok(prog)
}

impl KB<'_> {
    /// Which builtin (extern) function `name` is, if any.
    pub fn builtin(&self, name: &str) -> Option<Callee> {
        match name {
            "vprintf" => Some(Callee::Vprintf),
            "__assertfail" | "__assert_fail" => Some(Callee::AssertFail),
            _ => None,
        }
    }
}
