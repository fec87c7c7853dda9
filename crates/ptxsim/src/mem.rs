//! Simulated global memory: allocations, the freed-block record, the generic address map, and
//! the crate's unsafe access to allocation bytes (besides compiled code, `jit::call`).
//!
//! Every allocation is its own zero-filled host buffer placed in the simulated address space
//! with a red zone around it, so that an access past its end lands in no allocation. Addresses
//! are never reused, so an access to a freed block is recognised. A launch takes a `GlobalView`
//! (a snapshot of the allocation table that keeps the buffers alive) and translates addresses
//! through it with a per-worker cache of the last hit. Blocks run on several OS threads at once
//! and may touch the same bytes, so all accesses to allocation bytes are atomic (relaxed), which
//! costs nothing on x86 and keeps the simulator free of data races whatever the CUDA kernel does.
//!
//! This module must not know about warps, instructions or the checker's reports: it answers
//! "where are these bytes" and "what is near this address".

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;

/// First address handed out for global allocations.
pub const GLOBAL_BASE: u64 = 0x1_0000_0000;
/// Generic-address windows of the other state spaces. Their low 32 bits are zero, so a
/// state-space access that keeps the low 32 bits of a generic address finds the same byte.
pub const SHARED_WIN: u64 = 0x7E00_0000_0000;
pub const LOCAL_WIN: u64 = 0x7E01_0000_0000;
pub const PARAM_WIN: u64 = 0x7E02_0000_0000;
/// "Addresses" of device functions (function pointers): `FUNC_WIN + 16 * index`, where index
/// is the function's position in the module.
pub const FUNC_WIN: u64 = 0x7E03_0000_0000;

/// The function-pointer value of the module's `index`-th function.
pub fn func_addr(index: usize) -> u64 {
    FUNC_WIN + 16 * index as u64
}
/// Size of each window.
pub const WIN_SIZE: u64 = 1 << 32;

/// Generic-address window of a state space (0 for global).
pub fn window(space: crate::ir::MemSpace) -> u64 {
    use crate::ir::MemSpace;
    match space {
        MemSpace::Shared => SHARED_WIN,
        MemSpace::Local => LOCAL_WIN,
        MemSpace::Param => PARAM_WIN,
        MemSpace::Global | MemSpace::Generic => 0,
    }
}
/// Gap left after each allocation (besides rounding to 256 bytes).
const RED_ZONE: u64 = 4096;
/// Upper bound of simulated global memory in use at once.
const MAX_LIVE: usize = 1 << 40;

/// A zero-filled host buffer, 16-byte aligned, holding one allocation's bytes.
pub struct Buf {
    ptr: NonNull<u8>,
    len: usize,
    layout: Layout,
}

// SAFETY: the buffer is only accessed through atomic operations (see `HostPtr`) or through
// `&mut self`, so sharing it between threads cannot produce a data race.
unsafe impl Send for Buf {}
unsafe impl Sync for Buf {}

impl Buf {
    /// A zero-filled buffer of `len` bytes, or `None` when the host has no memory for it.
    pub fn new(len: usize) -> Option<Buf> {
        let layout = Layout::from_size_align(len.max(16).div_ceil(16) * 16, 16).ok()?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        Some(Buf {
            ptr: NonNull::new(raw)?,
            len,
            layout,
        })
    }
    pub fn len(&self) -> usize {
        self.len
    }
    /// A pointer to the whole buffer.
    fn whole(&self) -> HostPtr<'_> {
        HostPtr {
            p: self.ptr.as_ptr(),
            len: self.len,
            _life: PhantomData,
        }
    }
    /// Copy bytes from the buffer at `offset` into `out` (caller checked the range).
    pub fn read(&self, offset: usize, out: &mut [u8]) {
        let h = self.whole();
        let mut i = 0;
        while i < out.len() {
            let o = offset + i;
            if o.is_multiple_of(8) && out.len() - i >= 8 {
                out[i..i + 8].copy_from_slice(&h.load(o, 8).to_le_bytes());
                i += 8;
            } else {
                out[i] = h.load(o, 1) as u8;
                i += 1;
            }
        }
    }
    /// Bulk write, 8 bytes at a time where aligned.
    pub fn write_fast(&self, offset: usize, data: &[u8]) {
        let h = self.whole();
        let mut i = 0;
        while i < data.len() {
            let o = offset + i;
            if o.is_multiple_of(8) && data.len() - i >= 8 {
                let mut w = [0u8; 8];
                w.copy_from_slice(&data[i..i + 8]);
                h.store(o, 8, u64::from_le_bytes(w));
                i += 8;
            } else {
                h.store(o, 1, data[i] as u64);
                i += 1;
            }
        }
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        // SAFETY: `ptr` was allocated with `layout` by `alloc_zeroed` and is freed once.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// A checked pointer into a live allocation: `len` bytes from `p` are valid for the lifetime
/// `'a` and `p` is aligned to 16 modulo the simulated address, so an access whose simulated
/// address is aligned to its size is aligned on the host too.
#[derive(Clone, Copy)]
pub struct HostPtr<'a> {
    p: *mut u8,
    len: usize,
    _life: PhantomData<&'a Buf>,
}

// SAFETY: a HostPtr only performs atomic accesses to memory kept alive for 'a.
unsafe impl Send for HostPtr<'_> {}
unsafe impl Sync for HostPtr<'_> {}

impl HostPtr<'_> {
    #[inline(always)]
    fn ok(&self, off: usize, size: usize) -> bool {
        off <= self.len
            && self.len - off >= size
            && (self.p as usize + off) & (size.wrapping_sub(1)) == 0
    }
    /// Load `size` (1, 2, 4 or 8) bytes at `off`, zero-extended. Out of range: 0.
    #[inline(always)]
    pub fn load(&self, off: usize, size: usize) -> u64 {
        if !self.ok(off, size) {
            return 0;
        }
        // SAFETY: `ok` checked that [p+off, p+off+size) lies inside a live allocation (kept
        // alive by the lifetime 'a) and is aligned to `size`; every access to these bytes is
        // atomic, so concurrent accesses from other workers are not data races.
        unsafe {
            let q = self.p.add(off);
            match size {
                1 => AtomicU8::from_ptr(q).load(Relaxed) as u64,
                2 => AtomicU16::from_ptr(q as *mut u16).load(Relaxed) as u64,
                4 => AtomicU32::from_ptr(q as *mut u32).load(Relaxed) as u64,
                _ => AtomicU64::from_ptr(q as *mut u64).load(Relaxed),
            }
        }
    }
    /// Load `out.len()` consecutive values of `size` (1, 2, 4 or 8) bytes from `off` on,
    /// zero-extended, with one bounds and alignment check for them all; false (nothing
    /// loaded) when they do not all lie inside the allocation or `off` is misaligned.
    #[inline(always)]
    #[cfg_attr(not(feature = "accel"), allow(dead_code))]
    pub fn load_run(&self, off: usize, size: usize, out: &mut [u64]) -> bool {
        if !matches!(size, 1 | 2 | 4 | 8) {
            return false;
        }
        let Some(bytes) = out.len().checked_mul(size) else {
            return false;
        };
        if !self.ok(off, size) || self.len - off < bytes {
            return false;
        }
        // SAFETY: as in `load`: [p+off, p+off+bytes) lies inside the allocation (checked just
        // above) and every element is aligned to `size` (off is, and elements are `size` apart).
        unsafe {
            let q = self.p.add(off);
            // One loop per size, the size's test outside it.
            macro_rules! run {
                ($atomic:ty, $t:ty) => {
                    for (j, o) in out.iter_mut().enumerate() {
                        *o = <$atomic>::from_ptr((q as *mut $t).add(j)).load(Relaxed) as u64;
                    }
                };
            }
            match size {
                1 => run!(AtomicU8, u8),
                2 => run!(AtomicU16, u16),
                4 => run!(AtomicU32, u32),
                _ => run!(AtomicU64, u64),
            }
        }
        true
    }
    /// Store the low `size` bytes of `v` at `off`. Out of range: nothing.
    #[inline(always)]
    pub fn store(&self, off: usize, size: usize, v: u64) {
        if !self.ok(off, size) {
            return;
        }
        // SAFETY: as in `load`.
        unsafe {
            let q = self.p.add(off);
            match size {
                1 => AtomicU8::from_ptr(q).store(v as u8, Relaxed),
                2 => AtomicU16::from_ptr(q as *mut u16).store(v as u16, Relaxed),
                4 => AtomicU32::from_ptr(q as *mut u32).store(v as u32, Relaxed),
                _ => AtomicU64::from_ptr(q as *mut u64).store(v, Relaxed),
            }
        }
    }
    /// Atomically add `v` (wrapping) to the `size`-byte integer (4 or 8) at `off`; returns the
    /// old value. One `lock xadd` instead of a compare-and-swap loop, which retries under
    /// contention between workers.
    #[inline(always)]
    pub fn fetch_add(&self, off: usize, size: usize, v: u64) -> u64 {
        if !self.ok(off, size) {
            return 0;
        }
        // SAFETY: as in `load`.
        unsafe {
            let q = self.p.add(off);
            if size == 4 {
                AtomicU32::from_ptr(q as *mut u32).fetch_add(v as u32, Relaxed) as u64
            } else {
                AtomicU64::from_ptr(q as *mut u64).fetch_add(v, Relaxed)
            }
        }
    }

    /// Atomically replace the `size`-byte value (2, 4 or 8) at `off` with `f(old)`; returns
    /// the old value.
    pub fn rmw(&self, off: usize, size: usize, f: &dyn Fn(u64) -> u64) -> u64 {
        if !self.ok(off, size) {
            return 0;
        }
        macro_rules! cas_loop {
            ($atomic:ty, $t:ty) => {{
                // SAFETY: as in `load`.
                let a = unsafe { <$atomic>::from_ptr(self.p.add(off) as *mut $t) };
                let mut cur = a.load(Relaxed);
                loop {
                    let new = f(cur as u64) as $t;
                    match a.compare_exchange_weak(cur, new, Relaxed, Relaxed) {
                        Ok(_) => return cur as u64,
                        Err(c) => cur = c,
                    }
                }
            }};
        }
        match size {
            2 => cas_loop!(AtomicU16, u16),
            4 => cas_loop!(AtomicU32, u32),
            _ => cas_loop!(AtomicU64, u64),
        }
    }
}

/// The device's allocation table.
pub struct Heap {
    live: BTreeMap<u64, Arc<Buf>>,
    /// Freed blocks (base, size), in address order (addresses only grow). Shared with the
    /// launches' views: a notebook that allocates and frees in a loop makes it long, and
    /// copying it for every launch cost a small launch more than its own work (tens of
    /// thousands of entries after a benchmark run).
    freed: Arc<Vec<(u64, u64)>>,
    next: u64,
    live_bytes: usize,
}

impl Default for Heap {
    fn default() -> Self {
        Heap {
            live: BTreeMap::new(),
            freed: Arc::new(Vec::new()),
            next: GLOBAL_BASE,
            live_bytes: 0,
        }
    }
}

impl Heap {
    /// Reserve `bytes` of zeroed memory; `None` when out of memory.
    pub fn alloc(&mut self, bytes: usize) -> Option<u64> {
        if self.live_bytes.saturating_add(bytes) > MAX_LIVE {
            return None;
        }
        let span = (bytes as u64).div_ceil(256) * 256 + RED_ZONE;
        if self.next.checked_add(span)? >= SHARED_WIN {
            return None;
        }
        let buf = Buf::new(bytes)?;
        let base = self.next;
        self.next += span;
        self.live.insert(base, Arc::new(buf));
        self.live_bytes += bytes;
        Some(base)
    }
    pub fn free(&mut self, ptr: u64) -> bool {
        match self.live.remove(&ptr) {
            Some(b) => {
                self.live_bytes -= b.len();
                // (Copies the list only while a launch's view holds it.)
                Arc::make_mut(&mut self.freed).push((ptr, b.len() as u64));
                true
            }
            None => false,
        }
    }
    /// Bytes allocated and not freed.
    pub fn live_bytes(&self) -> usize {
        self.live_bytes
    }
    /// The live allocation that starts at `ptr`.
    pub fn get(&self, ptr: u64) -> Option<&Arc<Buf>> {
        self.live.get(&ptr)
    }
    /// A snapshot for one launch.
    pub fn view(&self) -> GlobalView {
        let mut entries = Vec::with_capacity(self.live.len());
        let mut keep = Vec::with_capacity(self.live.len());
        for (&base, buf) in &self.live {
            entries.push(Entry {
                base,
                len: buf.len() as u64,
                p: buf.ptr.as_ptr(),
            });
            keep.push(buf.clone());
        }
        GlobalView {
            entries,
            _keep: keep,
            freed: Arc::clone(&self.freed),
        }
    }
}

#[derive(Clone, Copy)]
struct Entry {
    base: u64,
    len: u64,
    p: *mut u8,
}

/// A launch's read-only view of the allocation table. Shared by all workers of the launch.
pub struct GlobalView {
    entries: Vec<Entry>,
    _keep: Vec<Arc<Buf>>,
    freed: Arc<Vec<(u64, u64)>>,
}

// SAFETY: the raw pointers in `entries` point into buffers kept alive by `_keep`, and they are
// only dereferenced through `HostPtr`, whose accesses are atomic.
unsafe impl Send for GlobalView {}
unsafe impl Sync for GlobalView {}

/// A worker's last translation hit.
pub struct Cache<'a> {
    base: u64,
    len: u64,
    p: *mut u8,
    _life: PhantomData<&'a GlobalView>,
}

impl Cache<'_> {
    /// Lanes of `m` whose access of `N` bytes at `addr[l] + extra` does not lie inside the
    /// allocation this cache holds, or whose `addr[l]` is not aligned to `align` (a power of
    /// two) and to N; all of `m` when `extra` is not a multiple of N. One branch-free pass that
    /// vectorises.
    #[inline(always)]
    fn outside<const N: usize>(&self, addr: &[u64; 32], m: u32, extra: u64, align: u64) -> u32 {
        let Some(lim) = self.len.checked_sub(extra.saturating_add(N as u64)) else {
            return m;
        };
        if !extra.is_multiple_of(N as u64) {
            return m;
        }
        // Aligned to `align` and, whatever the caller passed, to N (what the host access needs).
        let mask = (align.max(1) - 1) | (N as u64 - 1);
        let mut bad = 0u32;
        for (l, &a) in addr.iter().enumerate() {
            let off = a.wrapping_sub(self.base);
            bad |= ((off > lim) as u32 | (a & mask != 0) as u32) << l;
        }
        bad & m
    }

    /// Whether the `total`-byte accesses at `addr[l]` of the lanes in `m` all lie inside the
    /// cached allocation, with every `addr[l]` aligned to `align`.
    #[inline(always)]
    pub fn covers(&self, addr: &[u64; 32], m: u32, total: u64, align: u64) -> bool {
        !self.p.is_null() && total > 0 && self.outside::<1>(addr, m, total - 1, align) == 0
    }

    /// Load the `N`-byte values (N = 1, 2, 4 or 8) at `addr[l] + extra` of the lanes in `m`
    /// into `out[l]`, zero-extended, when every one lies inside the cached allocation and every
    /// `addr[l]` is aligned to `align`; otherwise load nothing and return false (the caller
    /// takes the checked path, which also refills the cache).
    #[inline(always)]
    pub fn load_lanes<const N: usize>(
        &self,
        addr: &[u64; 32],
        m: u32,
        extra: u64,
        align: u64,
        out: &mut [u64; 32],
    ) -> bool {
        if self.p.is_null() || self.outside::<N>(addr, m, extra, align) != 0 {
            return false;
        }
        for l in 0..32 {
            if (m >> l) & 1 != 0 {
                let off = (addr[l] - self.base + extra) as usize;
                // SAFETY: `outside` found [off, off+N) inside the cached allocation, which the
                // lifetime keeps alive, and addr[l] + extra aligned to N; the host allocation is
                // 16-aligned modulo the simulated address, so the host address is aligned too.
                // Accesses are atomic, so concurrent accesses from other workers are not data
                // races.
                out[l] = unsafe {
                    let q = self.p.add(off);
                    match N {
                        1 => AtomicU8::from_ptr(q).load(Relaxed) as u64,
                        2 => AtomicU16::from_ptr(q as *mut u16).load(Relaxed) as u64,
                        4 => AtomicU32::from_ptr(q as *mut u32).load(Relaxed) as u64,
                        _ => AtomicU64::from_ptr(q as *mut u64).load(Relaxed),
                    }
                };
            }
        }
        true
    }

    /// Store the low `N` bytes of `v[l]` at `addr[l] + extra` for the lanes in `m`, in lane
    /// order, under the same conditions as `load_lanes`; false (storing nothing) otherwise.
    #[inline(always)]
    pub fn store_lanes<const N: usize>(
        &self,
        addr: &[u64; 32],
        m: u32,
        extra: u64,
        align: u64,
        v: &[u64; 32],
    ) -> bool {
        if self.p.is_null() || self.outside::<N>(addr, m, extra, align) != 0 {
            return false;
        }
        for l in 0..32 {
            if (m >> l) & 1 != 0 {
                let off = (addr[l] - self.base + extra) as usize;
                // SAFETY: as in `load_lanes`.
                unsafe {
                    let q = self.p.add(off);
                    match N {
                        1 => AtomicU8::from_ptr(q).store(v[l] as u8, Relaxed),
                        2 => AtomicU16::from_ptr(q as *mut u16).store(v[l] as u16, Relaxed),
                        4 => AtomicU32::from_ptr(q as *mut u32).store(v[l] as u32, Relaxed),
                        _ => AtomicU64::from_ptr(q as *mut u64).store(v[l], Relaxed),
                    }
                }
            }
        }
        true
    }
}

impl Default for Cache<'_> {
    fn default() -> Self {
        Cache {
            base: 0,
            len: 0,
            p: std::ptr::null_mut(),
            _life: PhantomData,
        }
    }
}

/// Why an address did not translate, and a description of the allocation nearest to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Miss {
    pub use_after_free: bool,
    pub description: String,
}

impl GlobalView {
    /// The host bytes for `[addr, addr+size)`, or `None` when the range is not entirely inside
    /// one live allocation.
    #[inline(always)]
    pub fn translate<'a>(&'a self, c: &mut Cache<'a>, addr: u64, size: u64) -> Option<HostPtr<'a>> {
        let off = addr.wrapping_sub(c.base);
        if off < c.len && c.len - off >= size {
            return Some(HostPtr {
                p: c.p.wrapping_add(off as usize),
                len: (c.len - off) as usize,
                _life: PhantomData,
            });
        }
        self.translate_slow(c, addr, size)
    }

    #[cold]
    fn translate_slow<'a>(
        &'a self,
        c: &mut Cache<'a>,
        addr: u64,
        size: u64,
    ) -> Option<HostPtr<'a>> {
        let (base, len, p) = self.lookup(addr, size)?;
        c.base = base;
        c.len = len;
        c.p = p;
        let off = addr - base;
        Some(HostPtr {
            p: p.wrapping_add(off as usize),
            len: (len - off) as usize,
            _life: PhantomData,
        })
    }

    /// The live allocation holding all of `[addr, addr+size)`: its base address, length and host
    /// bytes (for `translate`'s cache and the JIT's access caches); `None` when there is
    /// none.
    pub fn lookup(&self, addr: u64, size: u64) -> Option<(u64, u64, *mut u8)> {
        let i = self.entries.partition_point(|e| e.base <= addr);
        let e = *self.entries.get(i.checked_sub(1)?)?;
        let off = addr - e.base;
        (off < e.len && e.len - off >= size).then_some((e.base, e.len, e.p))
    }

    /// Describe a failed access of `size` bytes at `addr` (cold path).
    pub fn describe_miss(&self, addr: u64, size: u64) -> Miss {
        let i = self.entries.partition_point(|e| e.base <= addr);
        if let Some(e) = i.checked_sub(1).and_then(|j| self.entries.get(j)) {
            if addr < e.base + e.len.max(1) {
                return Miss {
                    use_after_free: false,
                    description: format!(
                        "{} bytes past the end of a {}-byte global allocation at 0x{:x}",
                        addr + size - (e.base + e.len),
                        e.len,
                        e.base
                    ),
                };
            }
        }
        let f = self.freed.partition_point(|&(b, _)| b <= addr);
        if let Some(&(b, s)) = f.checked_sub(1).and_then(|j| self.freed.get(j)) {
            if addr < b + s.max(1) {
                return Miss {
                    use_after_free: true,
                    description: format!(
                        "{} bytes into a {}-byte global allocation at 0x{:x} that was freed",
                        addr - b,
                        s,
                        b
                    ),
                };
            }
        }
        if addr < 0x10000 {
            return Miss {
                use_after_free: false,
                description: format!("null pointer (address 0x{addr:x}): no allocation there"),
            };
        }
        let below = i.checked_sub(1).and_then(|j| self.entries.get(j));
        let above = self.entries.get(i);
        let d_below = below.map(|e| addr + size - (e.base + e.len));
        let d_above = above.map(|e| e.base.saturating_sub(addr));
        let description = match (below, above) {
            (Some(e), _) if d_above.is_none_or(|a| d_below.unwrap_or(u64::MAX) <= a) => format!(
                "{} bytes past the end of a {}-byte global allocation at 0x{:x}",
                d_below.unwrap_or(0),
                e.len,
                e.base
            ),
            (_, Some(e)) => format!(
                "{} bytes before the start of a {}-byte global allocation at 0x{:x}",
                d_above.unwrap_or(0),
                e.len,
                e.base
            ),
            _ => format!("address 0x{addr:x} is in no allocation"),
        };
        Miss {
            use_after_free: false,
            description,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_translate_and_describe() {
        let mut h = Heap::default();
        let a = h.alloc(4096).unwrap();
        let b = h.alloc(100).unwrap();
        assert!(b >= a + 4096 + RED_ZONE);
        let v = h.view();
        let mut c = Cache::default();
        let p = v.translate(&mut c, a + 8, 4).unwrap();
        p.store(0, 4, 0xdead_beef);
        assert_eq!(
            v.translate(&mut c, a + 8, 4).unwrap().load(0, 4),
            0xdead_beef
        );
        assert!(v.translate(&mut c, a + 4094, 4).is_none());
        assert!(v.translate(&mut c, a + 4096, 4).is_none());
        let m = v.describe_miss(a + 4096, 4);
        assert_eq!(
            m.description,
            format!("4 bytes past the end of a 4096-byte global allocation at 0x{a:x}")
        );
        assert!(h.free(a));
        let v2 = h.view();
        let m = v2.describe_miss(a + 16, 4);
        assert!(m.use_after_free);
        assert!(v2.translate(&mut Cache::default(), a, 4).is_none());
        // the old view still keeps the buffer alive
        assert_eq!(
            v.translate(&mut c, a + 8, 4).unwrap().load(0, 4),
            0xdead_beef
        );
        assert!(v2.describe_miss(8, 4).description.contains("null"));
    }

    /// A launch's view shares the freed-block record instead of copying it (it grows with
    /// every free of the session), and a free while a view holds it leaves that view as it was.
    #[test]
    fn views_share_the_freed_record() {
        let mut h = Heap::default();
        let mut first = 0;
        for k in 0..1000 {
            let a = h.alloc(64).unwrap();
            first = if k == 0 { a } else { first };
            assert!(h.free(a));
        }
        let (v1, v2) = (h.view(), h.view());
        assert!(Arc::ptr_eq(&v1.freed, &v2.freed));
        assert_eq!(v1.freed.len(), 1000);
        let b = h.alloc(8).unwrap();
        assert!(h.free(b));
        let v3 = h.view();
        assert_eq!((v1.freed.len(), v3.freed.len()), (1000, 1001));
        assert!(v3.describe_miss(b, 4).use_after_free);
        assert!(!v1.describe_miss(b, 4).use_after_free);
        assert!(v1.describe_miss(first + 8, 4).use_after_free);
    }

    #[test]
    fn atomics_and_bulk_copies() {
        let mut h = Heap::default();
        let a = h.alloc(64).unwrap();
        let buf = h.get(a).unwrap().clone();
        buf.write_fast(3, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
        let mut out = [0u8; 11];
        buf.read(3, &mut out);
        assert_eq!(out, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
        let v = h.view();
        let mut c = Cache::default();
        let p = v.translate(&mut c, a + 32, 8).unwrap();
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        p.rmw(0, 4, &|x| x + 1);
                        p.rmw(6, 2, &|x| x + 1);
                    }
                });
            }
        });
        assert_eq!(p.load(0, 4), 2000);
        assert_eq!(p.load(6, 2), 2000);
    }
}
