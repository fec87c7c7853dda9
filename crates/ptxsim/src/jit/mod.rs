//! The region compiler: turns the lane-local parts of a kernel into host code with Cranelift.
//!
//! A *region* is a maximal run of consecutive instructions that only touch the running lane's
//! own registers, global memory and shared memory: integer and common floating-point arithmetic
//! (with min, max, abs, neg, sqrt, rcp, rsqrt), comparisons, conversions, global loads and
//! stores, shared loads and stores of whole words, kernel-parameter loads and branches. Nothing
//! in a region lets one lane wait for another (no barriers, warp collectives, atomics or calls),
//! so its lanes can run one after another instead of in lockstep, which is what the CUDA
//! programming model allows since Volta (independent thread scheduling); where lanes could see
//! each other's shared-memory words between barriers, that is a race, which compiled code
//! leaves to the interpreter to report (`emit::shared`). Compiled code keeps
//! a lane's values in host registers through the whole region, loops included: it loads the
//! registers live where it is entered and writes back only those it wrote that are still live
//! where the lane leaves (`live`). Registers only ever read as one float type live in float
//! registers; those written only by arithmetic have their NaNs made canonical where the bits
//! are read, not at every result (`emit::lazy_floats`). It checks each global access against a
//! cache of the allocation last hit; accesses through one address register in a straight-line
//! run share one check of the bytes they cover together (`emit::access_groups`), and checks
//! through pointers derived from one root share one cache entry, kept in host registers when
//! several checks in loops use it (`roots`). A simple loop whose accesses all move by fixed
//! strides is checked once where it starts, for all its iterations, and then runs a copy of its
//! body without checks (`loops`). Such a loop with a constant step also gets a *gang function*
//! that runs it for four lanes at once, their instructions interleaved, so that the host
//! overlaps the lanes' chains of dependent operations (`emit::gang`).
//!
//! The interpreter enters a region when the running group reaches one of its leaders (the
//! region's start, branch targets; a region is split where interpreted code branches into it,
//! such as a loop's head whose branch back follows a barrier), runs the group's lanes one
//! after another through the compiled function and carries on with whatever PCs the lanes stopped at. Compiled code never
//! reports anything: any access it cannot prove in bounds and aligned, any address outside global
//! memory, ends the region *before* the instruction (or before the first access of a shared
//! check), and the interpreter executes from there with its full checker, so reports, faults and
//! their thread, block and line are the interpreter's own.
//!
//! Host registers are what compiled code runs short of (x86-64 has 14 to give): the context
//! carries the register file, the entry PC, the parameters and the first access caches, so that
//! one pointer reaches them, and the cold translation call goes through a wrapper that preserves
//! every register (`CallConv::PreserveAll`), so that no value has to leave its register around
//! it. Global atomics stay interpreted: lane-by-lane host atomics on hot cache lines were slower
//! on two workers than the interpreter's warp-at-a-time ones (measured on the particle-binning
//! benchmark kernel).
//!
//! This module compiles and holds the code; `exec::jit_run` calls it. `call` holds the only
//! unsafe code of the JIT (calling the compiled functions and the translation callback they use).
//! It must not know about warps or the scheduler.

mod call;
mod chains;
mod emit;
mod loops;
mod roots;
#[cfg(test)]
mod test_code;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use cranelift_codegen::ir::{AbiParam, Signature};
use cranelift_codegen::isa::CallConv;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module};

use crate::config::{Engines, JitMode, JitTrace};
use crate::ir::defuse::lane_local;
use crate::ir::{Inst, Op, Program};

pub use call::{JitCtx, JitFn};
pub use emit::GANG;

/// The most shared bytes a block may have for compiled code to log its reads (`emit::shared`;
/// bigger blocks record every read).
pub const SHARED_LOG_LIMIT: u32 = 1 << 18;

/// Regions without a loop inside that are shorter than this stay interpreted: entering compiled
/// code costs each lane about what the interpreter spends per warp on a few instructions.
/// Measured (callgrind, the benchmark kernels, one launch of 65,536 threads): regions of 4–17
/// instructions between barriers ran 1.2–1.3x slower compiled; straight-line regions of 21 and
/// 31 instructions 1.15–1.3x faster, of 54 and 89 instructions 1.6–1.8x faster.
const MIN_REGION: u32 = 20;

/// The same for kernels without barriers, whose short regions sit between atomics, shuffles
/// or calls instead: measured on the particle-binning kernel (10 instructions after its
/// `atom`), compiling them from 6 instructions on saves 11% of host instructions.
const MIN_REGION_NO_BARRIERS: u32 = 6;

/// Warp-instructions a kernel runs (over all its launches so far) before it is compiled, unless
/// a single launch is big enough on its own (`BIG_LAUNCH` threads).
/// Compiling a kernel takes 2–8 ms (Cranelift), about what the interpreter needs for 200,000
/// warp-instructions or a launch of 65,536 threads of a short kernel.
const TIER_INSTRUCTIONS: u64 = 200_000;
const BIG_LAUNCH: u64 = 65_536;

/// A kernel's compiled regions, made on demand.
#[derive(Default)]
pub struct Lazy {
    code: OnceLock<Option<Compiled>>,
    executed: AtomicU64,
}

impl Lazy {
    /// The compiled code for a launch of `threads` threads, compiling it now when the kernel has
    /// earned it; `None` when it has not yet, or when it could not be compiled.
    pub fn get(&self, prog: &Program, threads: u64, engines: &Engines) -> Option<&Compiled> {
        let mode = engines.jit;
        if mode == JitMode::Off {
            return None;
        }
        if let Some(c) = self.code.get() {
            return c.as_ref();
        }
        if mode == JitMode::Auto
            && threads < BIG_LAUNCH
            && self.executed.load(Ordering::Relaxed) < TIER_INSTRUCTIONS
        {
            return None;
        }
        self.code
            .get_or_init(|| {
                // Cranelift does not panic on valid input; if it ever did, the kernel stays
                // interpreted.
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    compile(prog, mode == JitMode::Always, engines.jit_trace)
                }))
                .ok()
                .flatten()
            })
            .as_ref()
    }

    /// Count warp-instructions a launch of this kernel ran (for the tiering rule).
    pub fn ran(&self, warp_instructions: u64) {
        self.executed
            .fetch_add(warp_instructions, Ordering::Relaxed);
    }
}

/// Compiled regions of one kernel.
pub struct Compiled {
    /// Per PC: the compiled function to enter there (at the leaders of each region).
    at: Vec<Option<JitFn>>,
    /// Per PC: the gang function of the loop that starts there (`emit::gang`), if any.
    gangs: Vec<Option<JitFn>>,
    /// Number of global-access cache entries the functions use (see `roots::plan`).
    pub caches: usize,
    /// Number of loops whose accesses are checked once before they start (`loops`).
    pub loops: usize,
    _module: call::CodeHolder,
}

impl Compiled {
    /// Per PC: the function to enter there, if any.
    pub fn entries(&self) -> &[Option<JitFn>] {
        &self.at
    }

    /// Per PC: the gang function to run lanes parked there with (`GANG` at a time).
    pub fn gangs(&self) -> &[Option<JitFn>] {
        &self.gangs
    }
}

/// The regions of `prog`: maximal runs of supported instructions, `[lo, hi)`.
fn regions(prog: &Program, every: bool) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut lo = None;
    for (pc, i) in prog.code.iter().enumerate() {
        let pc = pc as u32;
        match (lane_local(i, prog), lo) {
            (true, None) => lo = Some(pc),
            (false, Some(l)) => {
                out.push((l, pc));
                lo = None;
            }
            _ => {}
        }
    }
    if let Some(l) = lo {
        out.push((l, prog.code.len() as u32));
    }
    let min = if prog.has_barriers {
        MIN_REGION
    } else {
        MIN_REGION_NO_BARRIERS
    };
    out.retain(|&(lo, hi)| {
        // Short regions are only worth it when they loop.
        every
            || hi - lo >= min
            || prog.code[lo as usize..hi as usize]
                .iter()
                .enumerate()
                .any(|(k, i)| {
                    i.op == Op::Bra && (lo as u64..=lo as u64 + k as u64).contains(&(i.imm as u64))
                })
    });
    split_at_outer_heads(&prog.code, out)
}

/// `regions` split where a branch from outside a region enters it (the head of a loop whose
/// body passes a barrier, say). A region stores at each exit the slots it may have written
/// that are live there; entered at such a head, a lane would store again every slot that
/// the code before the head computes (about a dozen loop-invariant values in a tiled matrix
/// product), although it wrote few. Each piece keeps a kept region's place whatever its
/// length. No region is split inside a loop of its own (a branch back across the head), whose
/// iterations would then leave compiled code.
fn split_at_outer_heads(code: &[Inst], regions: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    let branches = |r: std::ops::Range<u32>| {
        code[r.start as usize..r.end as usize]
            .iter()
            .enumerate()
            .filter(|(_, i)| i.op == Op::Bra)
            .map(move |(k, i)| (r.start as u64 + k as u64, i.imm as u64))
    };
    let n = code.len() as u32;
    let mut out = Vec::new();
    for (lo, hi) in regions {
        let mut heads: Vec<u32> = branches(0..lo)
            .chain(branches(hi..n))
            .map(|(_, t)| t)
            .filter(|&t| t > lo as u64 && t < hi as u64)
            .filter(|&t| !branches(lo..hi).any(|(k, b)| k >= t && b < t && b >= lo as u64))
            .map(|t| t as u32)
            .collect();
        heads.sort_unstable();
        heads.dedup();
        let mut start = lo;
        for h in heads {
            out.push((start, h));
            start = h;
        }
        out.push((start, hi));
    }
    out
}

/// Compile the function in `ctx` as `id` (printing its machine code when `trace` asks for it)
/// and clear the context.
fn define(
    module: &mut JITModule,
    id: cranelift_module::FuncId,
    ctx: &mut cranelift_codegen::Context,
    trace: JitTrace,
) -> Result<(), Box<cranelift_module::ModuleError>> {
    if trace.machine_code {
        ctx.set_disasm(true);
    }
    let r = module.define_function(id, ctx).map_err(Box::new);
    if r.is_ok() {
        if let Some(d) = ctx.compiled_code().and_then(|c| c.vcode.as_ref()) {
            eprintln!("{d}");
        }
    }
    module.clear_context(ctx);
    r
}

/// Compile the regions of `prog` that pay (`every`: all of them, however short, so that tests
/// meet compiled code everywhere it can run); `None` when there are none, or when Cranelift has
/// no backend for this host or fails. `trace` says what to print on stderr meanwhile.
pub fn compile(prog: &Program, every: bool, trace: JitTrace) -> Option<Compiled> {
    // Slot offsets in compiled code are 32-bit immediates (slot * 256 bytes).
    if prog.nslots >= 1 << 22 {
        return None;
    }
    let regions = regions(prog, every);
    if trace.regions {
        eprintln!(
            "jit {}: {} instructions, regions {:?}",
            prog.name,
            prog.code.len(),
            regions
        );
        for (pc, i) in prog.code.iter().enumerate() {
            eprintln!(
                "  {pc:4} {} {:?}",
                if lane_local(i, prog) { "+" } else { "-" },
                i.op
            );
        }
    }
    if regions.is_empty() {
        return None;
    }
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").ok()?;
    // Cranelift's IR verifier adds about half to compile time (without it, 31-35% fewer host
    // instructions); the tests keep it on (debug builds, and `JitMode::Always` runs, which
    // compile every region of every test kernel).
    let verify = cfg!(debug_assertions) || every;
    flags
        .set("enable_verifier", if verify { "true" } else { "false" })
        .ok()?;
    let isa = cranelift_native::builder()
        .ok()?
        .finish(settings::Flags::new(flags))
        .ok()?;
    let call_conv = isa.default_call_conv();
    let mut module = JITModule::new(JITBuilder::with_isa(
        isa,
        cranelift_module::default_libcall_names(),
    ));
    use cranelift_codegen::ir::types::{I32, I64};
    // A region: (registers of lane 0, context, entry pc, lanes). `translate` (call.rs):
    // (context, cache index, address, bytes, alignment) -> host address.
    let mut sig = Signature::new(call_conv);
    for t in [I64, I64, I32, I32] {
        sig.params.push(AbiParam::new(t));
    }
    let mut tsig = Signature::new(call_conv);
    for t in [I64, I32, I64, I64, I64] {
        tsig.params.push(AbiParam::new(t));
    }
    tsig.returns.push(AbiParam::new(I64));
    // Compiled code calls `translate` (on a cache miss) through a wrapper that preserves every
    // register and leaves the result in the context: the regions then keep their values in
    // registers across the (cold) call.
    let mut wsig = Signature::new(CallConv::PreserveAll);
    wsig.params = tsig.params.clone();
    let mut ctx = module.make_context();
    let mut fctx = cranelift_frontend::FunctionBuilderContext::new();
    let wrapper = module
        .declare_function("translate", Linkage::Local, &wsig)
        .ok()?;
    ctx.func.signature = wsig;
    call::translate_wrapper(&mut ctx.func, &mut fctx, &tsig, module.target_config());
    module.define_function(wrapper, &mut ctx).ok()?;
    module.clear_context(&mut ctx);

    let live = crate::ir::live::analyze(prog);
    let varying = emit::varying(prog);
    let mut ids = Vec::new();
    let mut gang_ids = Vec::new();
    let mut caches = 0u32;
    let mut loops = 0;
    for (k, &(lo, hi)) in regions.iter().enumerate() {
        ctx.func.signature = sig.clone();
        let translate = module.declare_func_in_func(wrapper, &mut ctx.func);
        let (leaders, versioned, gang_loops) = emit::region(
            &mut ctx.func,
            &mut fctx,
            prog,
            lo,
            hi,
            translate,
            &mut caches,
            &live,
            module.target_config(),
        );
        let id = module
            .declare_function(&format!("r{k}"), Linkage::Local, &sig)
            .ok()?;
        if let Err(e) = define(&mut module, id, &mut ctx, trace) {
            if trace.regions {
                eprintln!("jit {}: region [{lo}, {hi}) not compiled: {e:?}", prog.name);
            }
            return None;
        }
        ids.push((id, leaders));
        loops += versioned;
        for (li, head) in gang_loops {
            ctx.func.signature = sig.clone();
            let translate = module.declare_func_in_func(wrapper, &mut ctx.func);
            let ok = emit::gang(
                &mut ctx.func,
                &mut fctx,
                prog,
                lo,
                hi,
                li,
                &varying,
                translate,
                &mut caches,
                &live,
                module.target_config(),
            );
            let id = module
                .declare_function(&format!("r{k}g{li}"), Linkage::Local, &sig)
                .ok()?;
            // Without a gang function (one that would need a way out of the region, or one
            // Cranelift fails on) parked lanes go on through the region function
            // (`exec::jit_run`).
            if ok && define(&mut module, id, &mut ctx, trace).is_ok() {
                gang_ids.push((head, id));
            } else {
                module.clear_context(&mut ctx);
                if trace.regions {
                    eprintln!("jit {}: no gang function for the loop at {head}", prog.name);
                }
            }
        }
    }
    module.finalize_definitions().ok()?;
    let mut at = vec![None; prog.code.len()];
    let mut instructions = 0;
    for (&(lo, hi), (id, leaders)) in regions.iter().zip(&ids) {
        let shared = prog.code[lo as usize..hi as usize]
            .iter()
            .any(|i| emit::shared_access(i).is_some());
        let f = call::JitFn::from_code(module.get_finalized_function(*id), shared);
        for (slot, &leader) in at[lo as usize..hi as usize].iter_mut().zip(leaders) {
            if leader {
                *slot = Some(f);
            }
        }
        instructions += (hi - lo) as usize;
    }
    let mut gangs = vec![None; prog.code.len()];
    for &(head, id) in &gang_ids {
        if let Some(g) = gangs.get_mut(head as usize) {
            *g = Some(call::JitFn::from_code(
                module.get_finalized_function(id),
                false,
            ));
        }
    }
    let compiled = Compiled {
        at,
        gangs,
        caches: caches as usize,
        loops,
        _module: call::CodeHolder::new(module),
    };
    if trace.regions {
        eprintln!(
            "jit {}: {} regions, {instructions} of {} instructions, {} loops checked before \
             they start, {} run by gangs",
            prog.name,
            regions.len(),
            prog.code.len(),
            compiled.loops,
            gang_ids.len()
        );
    }
    Some(compiled)
}

#[cfg(test)]
mod tests {
    use super::test_code::{add, inst};
    use super::*;
    use crate::ir::NONE;

    /// Branches of `code` at PCs in `r`: (PC, target).
    fn branches(code: &[Inst], r: std::ops::Range<usize>) -> Vec<(usize, usize)> {
        r.filter(|&pc| code[pc].op == Op::Bra)
            .map(|pc| (pc, code[pc].imm as usize))
            .collect()
    }

    #[test]
    fn regions_start_where_branches_from_outside_enter_them() {
        let dev = crate::Device::new();
        let mut heads = 0;
        for (file, m) in crate::tests::util::fixture_modules(&dev) {
            for k in m.kernels() {
                let prog = m.program(&k.name).unwrap();
                let code = &prog.code;
                for every in [false, true] {
                    let rs = regions(prog, every);
                    let compiled = |pc: usize| {
                        rs.iter()
                            .any(|&(lo, hi)| (lo as usize..hi as usize).contains(&pc))
                    };
                    for &(lo, hi) in &rs {
                        let (lo, hi) = (lo as usize, hi as usize);
                        let leaders = emit::leaders(code, lo as u32, hi - lo);
                        let inside = branches(code, lo..hi);
                        let outside = branches(code, 0..lo)
                            .into_iter()
                            .chain(branches(code, hi..code.len()));
                        for (pc, t) in outside.filter(|&(_, t)| (lo..hi).contains(&t)) {
                            let at = format!(
                                "{file} {}: the branch at {pc} enters ({lo}, {hi}) at {t}",
                                k.name
                            );
                            assert!(leaders[t - lo], "{at}");
                            // From interpreted code, only a loop of the region's own keeps
                            // such a target inside.
                            let own_loop =
                                inside.iter().any(|&(b, to)| b >= t && to < t && to >= lo);
                            assert!(t == lo || compiled(pc) || own_loop, "{at}");
                            heads += (t == lo && t > 0 && !compiled(pc)) as usize;
                        }
                    }
                }
            }
        }
        assert!(heads > 0);
        // The tiled matrix product's tile loop passes two barriers and branches back from
        // after the second: its head starts a region of its own, apart from the set-up code.
        let m = dev
            .load_module(include_str!("../../tests/fixtures/matmul.ptx"))
            .unwrap();
        let prog = m.program("matmulTiled").unwrap();
        let code = &prog.code;
        let (back, head) = branches(code, 0..code.len())
            .into_iter()
            .find(|&(pc, t)| t < pc && code[t..pc].iter().any(|i| matches!(i.op, Op::Bar(_))))
            .unwrap();
        let rs = regions(prog, false);
        assert!(rs.iter().any(|&(lo, _)| lo as usize == head), "{rs:?}");
        assert!(
            rs.iter().any(|&(lo, hi)| lo == 0 && hi as usize == head),
            "{rs:?}"
        );
        assert!(rs
            .iter()
            .all(|&(lo, hi)| !(lo as usize..hi as usize).contains(&back)));
    }

    #[test]
    fn leaders_include_targets_of_branches_outside_the_region() {
        let bra = |target: i64, guarded: bool| {
            let mut i = inst(Op::Bra, [NONE; 5]);
            i.imm = target;
            if guarded {
                i.guard = 40;
            }
            i
        };
        // 0..2 before the region, the region 2..7 (a loop back from 5 to 3 inside it), and a
        // branch at 8 to 4.
        let code = vec![
            add(1, 1, 2),
            add(1, 1, 2),
            add(1, 1, 2),
            add(1, 1, 2),
            add(1, 1, 2),
            bra(3, true),
            add(1, 1, 2),
            add(1, 1, 2),
            bra(4, false),
        ];
        let l = emit::leaders(&code, 2, 5);
        assert_eq!(l, vec![true, true, true, false, true]);
    }
}
