//! The boundary between Rust and compiled regions: the context block compiled code reads and
//! writes, the translation callback it calls on a cache miss, and the one unsafe call into it.
//!
//! Layout contract with `emit` (offsets in bytes): `JitCtx` = caches, params, translate, global,
//! fuel (i64), most (i64), left (u32), interp (u32), pcs ([u32; 32]), host_out, regs0, pc_in
//! (u32), gang (u32), the shared-memory fields (`shared`, `shared_len`, `shadow_w`,
//! `shadow_r`, `shadow_bm`, `epoch`, `race`, `tid0`, `wep`, `log`, `log_len`, `log_cap`),
//! parked (u32, padded to 8), the first `INLINE_PARAM_BYTES` parameter bytes, the first `INLINE_CACHES` cache entries;
//! `CacheEnt` = base, units, host. Keeping the common parameters
//! and caches inside the context leaves compiled code one pointer to keep in a register besides
//! the lane's registers.

use cranelift_codegen::ir::{Function, InstBuilder, MemFlagsData, Signature};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::JITModule;

use crate::mem::GlobalView;

/// Offsets of `JitCtx` fields, for `emit`.
pub(super) const CTX_CACHES: i32 = 0;
pub(super) const CTX_PARAMS: i32 = 8;
pub(super) const CTX_TRANSLATE: i32 = 16;
pub(super) const CTX_FUEL: i32 = 32;
pub(super) const CTX_MOST: i32 = 40;
pub(super) const CTX_LEFT: i32 = 48;
pub(super) const CTX_INTERP: i32 = 52;
pub(super) const CTX_PCS: i32 = 56;
pub(super) const CTX_HOST_OUT: i32 = 184;
pub(super) const CTX_REGS0: i32 = 192;
pub(super) const CTX_PC_IN: i32 = 200;
pub(super) const CTX_GANG: i32 = 204;
pub(super) const CTX_SHARED: i32 = 208;
pub(super) const CTX_SHARED_LEN: i32 = 216;
pub(super) const CTX_SHADOW_W: i32 = 224;
pub(super) const CTX_SHADOW_R: i32 = 232;
pub(super) const CTX_SHADOW_BM: i32 = 240;
pub(super) const CTX_EPOCH: i32 = 248;
pub(super) const CTX_RACE: i32 = 252;
pub(super) const CTX_TID0: i32 = 256;
pub(super) const CTX_WEP: i32 = 260;
pub(super) const CTX_LOG: i32 = 264;
pub(super) const CTX_LOG_LEN: i32 = 272;
pub(super) const CTX_LOG_CAP: i32 = 276;
pub(super) const CTX_PARKED: i32 = 280;
pub(super) const CTX_INLINE_PARAMS: i32 = 288;
pub(super) const CTX_INLINE_CACHES: i32 = CTX_INLINE_PARAMS + INLINE_PARAM_BYTES as i32;
/// Parameter bytes copied into the context (loads past them go through `params`).
pub(super) const INLINE_PARAM_BYTES: usize = 1024;
/// Cache entries inside the context; entry `k >= INLINE_CACHES` is `caches[k - INLINE_CACHES]`.
pub(super) const INLINE_CACHES: usize = 64;
/// Size of a `CacheEnt` and offsets of its fields.
pub(super) const ENT_SIZE: i64 = 24;
pub(super) const ENT_BASE: i32 = 0;
pub(super) const ENT_UNITS: i32 = 8;
pub(super) const ENT_HOST: i32 = 16;

// The offsets above are the layouts below (checked at compile time).
const _: () = {
    use std::mem::offset_of;
    assert!(offset_of!(JitCtx, caches) == CTX_CACHES as usize);
    assert!(offset_of!(JitCtx, params) == CTX_PARAMS as usize);
    assert!(offset_of!(JitCtx, translate) == CTX_TRANSLATE as usize);
    assert!(offset_of!(JitCtx, fuel) == CTX_FUEL as usize);
    assert!(offset_of!(JitCtx, most) == CTX_MOST as usize);
    assert!(offset_of!(JitCtx, left) == CTX_LEFT as usize);
    assert!(offset_of!(JitCtx, interp) == CTX_INTERP as usize);
    assert!(offset_of!(JitCtx, pcs) == CTX_PCS as usize);
    assert!(offset_of!(JitCtx, host_out) == CTX_HOST_OUT as usize);
    assert!(offset_of!(JitCtx, regs0) == CTX_REGS0 as usize);
    assert!(offset_of!(JitCtx, pc_in) == CTX_PC_IN as usize);
    assert!(offset_of!(JitCtx, gang) == CTX_GANG as usize);
    assert!(offset_of!(JitCtx, parked) == CTX_PARKED as usize);
    assert!(offset_of!(JitCtx, shared) == CTX_SHARED as usize);
    assert!(offset_of!(JitCtx, shared_len) == CTX_SHARED_LEN as usize);
    assert!(offset_of!(JitCtx, shadow_w) == CTX_SHADOW_W as usize);
    assert!(offset_of!(JitCtx, shadow_r) == CTX_SHADOW_R as usize);
    assert!(offset_of!(JitCtx, shadow_bm) == CTX_SHADOW_BM as usize);
    assert!(offset_of!(JitCtx, epoch) == CTX_EPOCH as usize);
    assert!(offset_of!(JitCtx, race) == CTX_RACE as usize);
    assert!(offset_of!(JitCtx, tid0) == CTX_TID0 as usize);
    assert!(offset_of!(JitCtx, wep) == CTX_WEP as usize);
    assert!(offset_of!(JitCtx, log) == CTX_LOG as usize);
    assert!(offset_of!(JitCtx, log_len) == CTX_LOG_LEN as usize);
    assert!(offset_of!(JitCtx, log_cap) == CTX_LOG_CAP as usize);
    assert!(offset_of!(JitCtx, inline_params) == CTX_INLINE_PARAMS as usize);
    assert!(offset_of!(JitCtx, inline_caches) == CTX_INLINE_CACHES as usize);
    assert!(offset_of!(CacheEnt, base) == ENT_BASE as usize);
    assert!(offset_of!(CacheEnt, units) == ENT_UNITS as usize);
    assert!(offset_of!(CacheEnt, host) == ENT_HOST as usize);
    assert!(std::mem::size_of::<CacheEnt>() == ENT_SIZE as usize);
};

/// One access check's last translation (a check covers one memory instruction, or several
/// with the same address register, see `emit::access_groups`), for accesses of `total` bytes
/// aligned to `align`: an access at `base + off` is inside the allocation and aligned when
/// `off.rotate_right(log2(align)) < units`, and its bytes are at host address `host + off`.
/// `units` is 0 when the entry is empty.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct CacheEnt {
    base: u64,
    units: u64,
    host: u64,
}

/// What compiled code reads and writes besides the lane's registers (one per worker).
#[repr(C)]
pub struct JitCtx {
    caches: *mut CacheEnt,
    params: *const u8,
    translate: usize,
    global: *const GlobalView,
    /// In: instructions each lane may run.
    pub fuel: i64,
    /// Out: the most instructions any lane ran (may exceed `fuel` by a straight-line run).
    pub most: i64,
    /// The lanes not run yet (compiled code's own).
    left: u32,
    /// Out: the lanes that stopped before an instruction the interpreter must execute.
    pub interp: u32,
    /// Out: the PC each lane stopped at.
    pub pcs: [u32; 32],
    /// `translate`'s result, passed through the context by the register-preserving wrapper
    /// compiled code calls (`mod.rs`), which cannot return values.
    host_out: u64,
    /// The call's register file and entry PC, kept here by compiled code so that they do not
    /// occupy host registers through the region's code.
    regs0: u64,
    pc_in: u32,
    /// In: nonzero when lanes may park where a loop that gangs run starts (`emit::gang`).
    pub gang: u32,
    /// The block's shared memory and its size in bytes (see `set_shared`).
    shared: *mut u8,
    shared_len: u64,
    /// The race checker's word records (see `check::Shadow::raw`), when `race` is 1.
    shadow_w: *mut u64,
    shadow_r: *mut u64,
    shadow_bm: *const u8,
    /// The barrier epoch, whether races are tracked, the running warp's first thread (linear
    /// index in the block) and its `__syncwarp` epoch.
    epoch: u32,
    race: u32,
    tid0: u32,
    wep: u32,
    /// The race checker's log of compiled reads (`check::Shadow::compiled_log`): entries,
    /// the number used (updated by compiled code) and the capacity, 0 when reads are not
    /// logged (they update the records instead).
    log: *mut u64,
    log_len: u32,
    log_cap: u32,
    /// Out: the lanes that parked where a gang loop starts (region functions), or the lanes a
    /// gang function turned down (they are as they were).
    pub parked: u32,
    /// The first parameter bytes (8-aligned).
    inline_params: [u64; INLINE_PARAM_BYTES / 8],
    /// The first cache entries.
    inline_caches: [CacheEnt; INLINE_CACHES],
    /// The other cache entries, which `caches` points to.
    cache_store: Vec<CacheEnt>,
}

impl JitCtx {
    /// A context for a launch with parameter bytes `params` and global memory `global`, for
    /// code with `caches` memory instructions. Both must outlive every call made with it.
    pub fn new(params: &[u8], global: &GlobalView, caches: usize) -> Box<JitCtx> {
        let mut c = Box::new(JitCtx {
            caches: std::ptr::null_mut(),
            params: params.as_ptr(),
            translate: translate as *const () as usize,
            global,
            fuel: 0,
            most: 0,
            left: 0,
            interp: 0,
            pcs: [0; 32],
            host_out: 0,
            regs0: 0,
            pc_in: 0,
            gang: 0,
            shared: std::ptr::null_mut(),
            shared_len: 0,
            shadow_w: std::ptr::null_mut(),
            shadow_r: std::ptr::null_mut(),
            shadow_bm: std::ptr::null(),
            epoch: 0,
            race: 0,
            tid0: 0,
            wep: 0,
            log: std::ptr::null_mut(),
            log_len: 0,
            log_cap: 0,
            parked: 0,
            inline_params: [0; INLINE_PARAM_BYTES / 8],
            inline_caches: [CacheEnt::default(); INLINE_CACHES],
            cache_store: vec![CacheEnt::default(); caches.saturating_sub(INLINE_CACHES).max(1)],
        });
        c.caches = c.cache_store.as_mut_ptr();
        for (w, chunk) in c.inline_params.iter_mut().zip(params.chunks(8)) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            *w = u64::from_le_bytes(b);
        }
        c
    }

    /// Point compiled shared-memory accesses at the block's shared memory `shared` (its first
    /// `bytes` bytes are the block's) and, when `shadow` is given (the race checker's records,
    /// `check::Shadow::raw`, with their word count), at the records to check and update, for
    /// warp `warp` in barrier epoch `epoch` and `__syncwarp` epoch `wep`. Compiled code then
    /// touches bytes below `bytes` only, and records of words below `bytes / 4` rounded up.
    /// With `log` (entries, number used, capacity: `check::Shadow::compiled_log`), reads are
    /// appended to the log instead, and writes leave to the interpreter; `log_used` then
    /// says how many entries are used after the call. A log is only for blocks of at most
    /// `SHARED_LOG_LIMIT` shared bytes (entries hold 18-bit offsets).
    #[allow(clippy::too_many_arguments)]
    pub fn set_shared(
        &mut self,
        shared: &mut [u64],
        bytes: u32,
        shadow: Option<(*mut u64, *mut u64, *const u8, usize)>,
        log: Option<(*mut u64, usize, usize)>,
        epoch: u32,
        warp: u32,
        wep: u32,
    ) {
        (self.log, self.log_len, self.log_cap) = match log {
            Some((p, n, cap)) if n <= cap && cap <= u32::MAX as usize => (p, n as u32, cap as u32),
            _ => (std::ptr::null_mut(), 0, 0),
        };
        self.shared = shared.as_mut_ptr() as *mut u8;
        // Never past the memory itself (the shared vector holds `bytes` rounded up to 8).
        self.shared_len = (bytes as u64).min(shared.len() as u64 * 8);
        let words = self.shared_len.div_ceil(4) as usize;
        match shadow {
            Some((w, r, bm, n)) if n >= words => {
                (self.shadow_w, self.shadow_r, self.shadow_bm) = (w, r, bm);
                self.race = 1;
            }
            _ => {
                self.race = 0;
                self.log_cap = 0;
            }
        }
        self.epoch = epoch;
        self.tid0 = warp * 32;
        self.wep = wep;
    }

    /// Entries of the compiled read log used after the call (see `set_shared`).
    pub fn log_used(&self) -> usize {
        self.log_len as usize
    }
}

/// The body of the register-preserving wrapper of `translate` (signature: `translate`'s
/// parameters, no results, calling convention `PreserveAll`): calls `translate` (found in the
/// context) and stores its result in the context's `host_out`.
pub(super) fn translate_wrapper(
    func: &mut Function,
    fctx: &mut FunctionBuilderContext,
    tsig: &Signature,
    frontend: cranelift_codegen::isa::TargetFrontendConfig,
) {
    let mut b = FunctionBuilder::new(func, fctx);
    let sig = b.import_signature(tsig.clone());
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    b.seal_block(entry);
    let args = b.block_params(entry).to_vec();
    let fl = MemFlagsData::trusted();
    let fp = b.ins().load(
        cranelift_codegen::ir::types::I64,
        fl,
        args[0],
        CTX_TRANSLATE,
    );
    let call = b.ins().call_indirect(sig, fp, &args);
    let host = b.inst_results(call)[0];
    b.ins().store(fl, host, args[0], CTX_HOST_OUT);
    b.ins().return_(&[]);
    b.finalize(frontend);
}

/// Fill cache `idx` for an access of `total` bytes at `addr` aligned to `align` (a power of two
/// up to 16) and return the host address, or 0 when the bytes are not all inside one live
/// allocation or `addr` is not aligned (the interpreter then decides).
extern "C" fn translate(ctx: *mut JitCtx, idx: u32, addr: u64, total: u64, align: u64) -> u64 {
    // SAFETY: compiled code passes the context it was called with (`run_lanes`' `ctx`, a live
    // exclusive borrow), and `global` points to the launch's view, which outlives the launch.
    let ctx = unsafe { &mut *ctx };
    let global = unsafe { &*ctx.global };
    let align = align.clamp(1, 16);
    if !addr.is_multiple_of(align) {
        return 0;
    }
    let Some((base, len, host)) = global.lookup(addr, total) else {
        return 0;
    };
    let idx = idx as usize;
    let e = if idx < INLINE_CACHES {
        ctx.inline_caches.get_mut(idx)
    } else {
        ctx.cache_store.get_mut(idx - INLINE_CACHES)
    };
    if let Some(e) = e {
        // Allocations start 256-aligned, so an offset is aligned exactly when the address is.
        *e = CacheEnt {
            base,
            units: (len - total) / align + 1,
            host: host as u64,
        };
    }
    host as u64 + (addr - base)
}

/// A compiled region: `fn(registers of lane 0, context, entry pc, lanes)`, which runs each lane
/// of the mask from the entry PC until it leaves the region and reports in the context.
/// `shared`: whether the region accesses shared memory (the context's shared-memory fields
/// must then be set, `JitCtx::set_shared`).
#[derive(Clone, Copy, Debug)]
pub struct JitFn(unsafe extern "C" fn(*mut u64, *mut JitCtx, u32, u32), bool);

impl JitFn {
    pub(super) fn from_code(p: *const u8, shared: bool) -> JitFn {
        // SAFETY: `p` is a function Cranelift compiled for the signature (i64, i64, i32, i32) in
        // the host's default calling convention, which is this type's.
        JitFn(
            unsafe {
                std::mem::transmute::<
                    *const u8,
                    unsafe extern "C" fn(*mut u64, *mut JitCtx, u32, u32),
                >(p)
            },
            shared,
        )
    }

    /// Whether the region accesses shared memory.
    pub fn uses_shared(self) -> bool {
        self.1
    }

    /// Whether `self` and `other` are the same compiled function.
    pub fn same_code(self, other: JitFn) -> bool {
        self.0 as usize == other.0 as usize
    }

    /// Run the lanes `mask` of the register file `regs` (slot-major, 32 lanes a slot) from `pc`
    /// until each leaves the region; `ctx` then holds where each stopped and the fuel used.
    /// (A gang function, `emit::gang`, takes exactly `GANG` lanes at its loop's start.)
    #[inline(always)]
    pub fn run_lanes(self, regs: &mut [[u64; 32]], mask: u32, ctx: &mut JitCtx, pc: u32) {
        // SAFETY: the code was compiled from the program these registers belong to: it only
        // touches slots below the program's slot count (checked at compile time), lanes of
        // `mask` (< 32) of each, the context's fields, cache entries below the count it was
        // compiled with, the parameter bytes at offsets checked at compile time, and global
        // memory at host addresses that a cache entry or `translate` found inside a live
        // allocation of the launch's view, and (when it accesses shared memory) the shared
        // bytes and race records that `set_shared` bounds, which the worker owns and does not
        // touch during the call. Global bytes may be accessed by other workers at the
        // same time: the compiled code uses plain machine loads and stores, which on the hosts
        // Cranelift supports are what relaxed atomics compile to.
        unsafe { (self.0)(regs.as_mut_ptr() as *mut u64, ctx, pc, mask) }
    }
}

/// Keeps a kernel's machine code alive, and frees it with the kernel.
pub(super) struct CodeHolder(Option<JITModule>);

impl CodeHolder {
    pub(super) fn new(m: JITModule) -> Self {
        CodeHolder(Some(m))
    }
}

// SAFETY: after `finalize_definitions` the module is never used again, only dropped; the code
// it holds is immutable and may run on any thread.
unsafe impl Send for CodeHolder {}
unsafe impl Sync for CodeHolder {}

impl Drop for CodeHolder {
    fn drop(&mut self) {
        if let Some(m) = self.0.take() {
            // SAFETY: the functions are only reachable through `Compiled`, which owns this
            // holder and is being dropped, and no launch holds it (launches borrow it).
            unsafe { m.free_memory() };
        }
    }
}
