//! Pinned staging of large host↔device copies: two pinned buffers used alternately on the default
//! stream, so the host copy into one overlaps the DMA from the other. Allocated on first use,
//! freed with the context. Part of the GPU backend.

use super::*;

/// Copies at least this large use the pinned staging buffers.
pub(super) const STAGING_THRESHOLD: usize = 4 << 20;
/// Size of each of the two pinned staging buffers.
pub(super) const STAGING_CHUNK: usize = 8 << 20;

pub(super) struct Staging {
    bufs: [*mut u8; 2],
    events: [sys::CUevent; 2],
}

impl Staging {
    /// Frees the buffers and events (the context must be current).
    pub(super) fn free(self) {
        free_staging(&self.bufs, &self.events);
    }
}

impl CudaBackend {
    pub(super) fn staging(&self) -> Option<std::cell::RefMut<'_, Staging>> {
        if !self.staging_enabled {
            return None;
        }
        let mut slot = self.staging.borrow_mut();
        if slot.is_none() {
            *slot = allocate_staging();
        }
        std::cell::RefMut::filter_map(slot, |s| s.as_mut()).ok()
    }

    pub(super) fn htod_staged(
        &self,
        st: &Staging,
        dst: DevPtr,
        data: &[u8],
    ) -> Result<(), DriverError> {
        let mut last = 0;
        for (i, chunk) in data.chunks(STAGING_CHUNK).enumerate() {
            let b = i % 2;
            last = b;
            // SAFETY: the event guards buffer `b` (its previous copy must be finished before it
            // is overwritten); the buffer holds STAGING_CHUNK ≥ chunk.len() pinned bytes; the
            // destination range lies inside the allocation (checked by the caller).
            unsafe {
                drv(sys::cuEventSynchronize(st.events[b]))?;
                std::ptr::copy_nonoverlapping(chunk.as_ptr(), st.bufs[b], chunk.len());
                let off = (i * STAGING_CHUNK) as u64;
                drv(sys::cuMemcpyHtoDAsync_v2(
                    dst + off,
                    st.bufs[b].cast(),
                    chunk.len(),
                    std::ptr::null_mut(),
                ))?;
                drv(sys::cuEventRecord(st.events[b], std::ptr::null_mut()))?;
            }
        }
        // SAFETY: valid events of this context.
        unsafe {
            drv(sys::cuEventSynchronize(st.events[1 - last]))?;
            drv(sys::cuEventSynchronize(st.events[last]))
        }
    }

    pub(super) fn dtoh_staged(
        &self,
        st: &Staging,
        src: DevPtr,
        out: &mut [u8],
    ) -> Result<(), DriverError> {
        let total = out.len();
        let n = total.div_ceil(STAGING_CHUNK);
        let len_of = |i: usize| (total - i * STAGING_CHUNK).min(STAGING_CHUNK);
        let issue = |i: usize, len: usize| -> Result<(), DriverError> {
            let b = i % 2;
            // SAFETY: buffer `b` is free (its previous chunk was copied out before this is
            // issued); the source range lies inside the allocation (checked by the caller).
            unsafe {
                drv(sys::cuMemcpyDtoHAsync_v2(
                    st.bufs[b].cast(),
                    src + (i * STAGING_CHUNK) as u64,
                    len,
                    std::ptr::null_mut(),
                ))?;
                drv(sys::cuEventRecord(st.events[b], std::ptr::null_mut()))
            }
        };
        if n == 0 {
            return Ok(());
        }
        issue(0, len_of(0))?;
        for i in 0..n {
            if i + 1 < n {
                issue(i + 1, len_of(i + 1))?;
            }
            let b = i % 2;
            let len = len_of(i);
            // SAFETY: waits for chunk i, then copies it out of the pinned buffer.
            unsafe {
                drv(sys::cuEventSynchronize(st.events[b]))?;
                std::ptr::copy_nonoverlapping(
                    st.bufs[b],
                    out[i * STAGING_CHUNK..].as_mut_ptr(),
                    len,
                );
            }
        }
        Ok(())
    }
}

pub(super) fn allocate_staging() -> Option<Staging> {
    let mut bufs = [std::ptr::null_mut::<u8>(); 2];
    let mut events = [std::ptr::null_mut(); 2];
    for i in 0..2 {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: allocates pinned host memory in the current context.
        if drv(unsafe { sys::cuMemHostAlloc(&mut p, STAGING_CHUNK, 0) }).is_err() || p.is_null() {
            free_staging(&bufs, &events);
            return None;
        }
        bufs[i] = p.cast();
        let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as std::ffi::c_uint;
        // SAFETY: creates an event in the current context.
        if drv(unsafe { sys::cuEventCreate(&mut events[i], flags) }).is_err() {
            free_staging(&bufs, &events);
            return None;
        }
    }
    Some(Staging { bufs, events })
}

fn free_staging(bufs: &[*mut u8; 2], events: &[sys::CUevent; 2]) {
    // SAFETY: frees only what was allocated (non-null).
    unsafe {
        for b in bufs.iter().filter(|b| !b.is_null()) {
            let _ = sys::cuMemFreeHost(b.cast());
        }
        for e in events.iter().filter(|e| !e.is_null()) {
            let _ = sys::cuEventDestroy_v2(*e);
        }
    }
}
