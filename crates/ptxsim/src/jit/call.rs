//! The boundary between Rust and compiled regions: the context block compiled code reads and
//! writes, the translation callback it calls on a cache miss, and the one unsafe call into it.
//!
//! Layout contract with `emit` (offsets in bytes, all fields 8 bytes): `JitCtx` = caches,
//! params, translate, global, fuel, interp; `CacheEnt` = base, units, host.

use cranelift_jit::JITModule;

use crate::mem::GlobalView;

/// Offsets of `JitCtx` fields, for `emit`.
pub(super) const CTX_CACHES: i32 = 0;
pub(super) const CTX_PARAMS: i32 = 8;
pub(super) const CTX_TRANSLATE: i32 = 16;
pub(super) const CTX_FUEL: i32 = 32;
pub(super) const CTX_INTERP: i32 = 40;
/// Size of a `CacheEnt` and offsets of its fields.
pub(super) const ENT_SIZE: i64 = 24;
pub(super) const ENT_BASE: i32 = 0;
pub(super) const ENT_UNITS: i32 = 8;
pub(super) const ENT_HOST: i32 = 16;

/// One memory instruction's last translation, for accesses of `total` bytes aligned to
/// `align = min(total, 16)`: an access at `base + off` is inside the allocation and aligned when
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
    /// In: instructions the lane may run; out: what is left (may go slightly negative).
    pub fuel: i64,
    /// Out: 1 when the lane stopped before an instruction the interpreter must execute.
    pub interp: u64,
    /// The cache entries `caches` points to.
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
            interp: 0,
            cache_store: vec![CacheEnt::default(); caches.max(1)],
        });
        c.caches = c.cache_store.as_mut_ptr();
        c
    }
}

/// Fill cache `idx` for an access of `total` bytes at `addr` and return the host address, or 0
/// when the bytes are not all inside one live allocation or `addr` is not aligned to
/// `min(total, 16)` (the interpreter then decides).
extern "C" fn translate(ctx: *mut JitCtx, idx: u32, addr: u64, total: u64) -> u64 {
    // SAFETY: compiled code passes the context it was called with (`run_lane`'s `ctx`, a live
    // exclusive borrow), and `global` points to the launch's view, which outlives the launch.
    let ctx = unsafe { &mut *ctx };
    let global = unsafe { &*ctx.global };
    let align = total.clamp(1, 16);
    if !addr.is_multiple_of(align) {
        return 0;
    }
    let Some((base, len, host)) = global.lookup(addr, total) else {
        return 0;
    };
    if let Some(e) = ctx.cache_store.get_mut(idx as usize) {
        // Allocations start 256-aligned, so an offset is aligned exactly when the address is.
        *e = CacheEnt {
            base,
            units: (len - total) / align + 1,
            host: host as u64,
        };
    }
    host as u64 + (addr - base)
}

/// A compiled region: `fn(lane registers, context, entry pc) -> exit pc`.
#[derive(Clone, Copy, Debug)]
pub struct JitFn(unsafe extern "C" fn(*mut u64, *mut JitCtx, u32) -> u32);

impl JitFn {
    pub(super) fn from_code(p: *const u8) -> JitFn {
        // SAFETY: `p` is a function Cranelift compiled for the signature (i64, i64, i32) -> i32
        // in the host's default calling convention, which is this type's.
        JitFn(unsafe {
            std::mem::transmute::<*const u8, unsafe extern "C" fn(*mut u64, *mut JitCtx, u32) -> u32>(
                p,
            )
        })
    }

    /// Run lane `lane` of the register file `regs` (slot-major, 32 lanes a slot) from `pc`
    /// until it leaves the region; returns the PC it stopped at.
    #[inline(always)]
    pub fn run_lane(self, regs: &mut [[u64; 32]], lane: usize, ctx: &mut JitCtx, pc: u32) -> u32 {
        let base = regs.as_mut_ptr() as *mut u64;
        // SAFETY: the code was compiled from the program these registers belong to: it only
        // touches slots below the program's slot count (checked at compile time), lane `lane`
        // (< 32) of each, the context's fields, cache entries below the count it was compiled
        // with, the parameter bytes at offsets checked at compile time, and global memory at
        // host addresses that a cache entry or `translate` found inside a live allocation of
        // the launch's view. Global bytes may be accessed by other workers at the same time:
        // the compiled code uses plain machine loads and stores, which on the hosts Cranelift
        // supports are what relaxed atomics compile to.
        unsafe { (self.0)(base.add(lane & 31), ctx, pc) }
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
