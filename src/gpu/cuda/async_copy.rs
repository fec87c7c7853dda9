//! Asynchronous host↔device copies on streams (`%upload`, `%download`): each copy gets a pinned
//! host buffer (`cuMemHostAlloc`), so the DMA runs while the host goes on; upload buffers are
//! freed when their stream is synchronised, download buffers when their bytes are taken. Part of
//! the GPU backend; no array names here.

use super::*;

/// A pinned buffer of a copy in flight.
pub(super) struct AsyncBuf {
    ptr: *mut u8,
    len: usize,
    stream: Option<StreamId>,
    download: bool,
}

impl AsyncBuf {
    pub(super) fn ptr(&self) -> *mut u8 {
        self.ptr
    }
}

impl CudaBackend {
    fn raw_stream(&self, stream: Option<StreamId>) -> Result<sys::CUstream, GpuError> {
        match stream {
            None => Ok(std::ptr::null_mut()),
            Some(id) => self
                .streams
                .get(&id)
                .map(|s| s.raw)
                .ok_or_else(|| GpuError::launch(format!("unknown stream {id}"))),
        }
    }

    fn pinned(&self, len: usize) -> Result<*mut u8, GpuError> {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: allocates `len` bytes of pinned host memory in the current context.
        drv(unsafe { sys::cuMemHostAlloc(&mut p, len.max(1), 0) })
            .map_err(|e| GpuError::memory(driver::error_text("cuMemHostAlloc", e)))?;
        Ok(p.cast())
    }

    pub(super) fn upload_async(
        &mut self,
        dst: DevPtr,
        data: &[u8],
        stream: Option<StreamId>,
    ) -> Result<(), GpuError> {
        self.usable()?;
        self.check_span(dst, data.len(), "a copy to the GPU")?;
        let raw = self.raw_stream(stream)?;
        let p = self.pinned(data.len())?;
        // SAFETY: `p` holds data.len() pinned bytes; the device range lies inside the allocation;
        // the buffer lives until its stream is synchronised.
        let r = unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len());
            sys::cuMemcpyHtoDAsync_v2(dst, p.cast(), data.len(), raw)
        };
        let id = self.id();
        self.async_bufs.insert(
            id,
            AsyncBuf {
                ptr: p,
                len: data.len(),
                stream,
                download: false,
            },
        );
        drv(r).map_err(|e| self.fail("cuMemcpyHtoDAsync", e))
    }

    pub(super) fn download_async(
        &mut self,
        src: DevPtr,
        bytes: usize,
        stream: Option<StreamId>,
    ) -> Result<u64, GpuError> {
        self.usable()?;
        self.check_span(src, bytes, "a copy from the GPU")?;
        let raw = self.raw_stream(stream)?;
        let p = self.pinned(bytes)?;
        // SAFETY: `p` holds `bytes` pinned bytes, kept until `take_download`.
        let r = unsafe { sys::cuMemcpyDtoHAsync_v2(p.cast(), src, bytes, raw) };
        let id = self.id();
        self.async_bufs.insert(
            id,
            AsyncBuf {
                ptr: p,
                len: bytes,
                stream,
                download: true,
            },
        );
        drv(r).map_err(|e| self.fail("cuMemcpyDtoHAsync", e))?;
        Ok(id)
    }

    pub(super) fn take_download_bytes(&mut self, id: u64) -> Result<Vec<u8>, GpuError> {
        let Some(b) = self.async_bufs.get(&id) else {
            return Err(GpuError::launch(format!("no download {id} in flight")));
        };
        let (ptr, len, stream) = (b.ptr, b.len, b.stream);
        self.usable()?;
        let raw = self.raw_stream(stream)?;
        // SAFETY: waits for the stream that fills the buffer, then reads its `len` bytes.
        let r = unsafe {
            if raw.is_null() {
                sys::cuCtxSynchronize()
            } else {
                sys::cuStreamSynchronize(raw)
            }
        };
        drv(r).map_err(|e| self.fail("cuStreamSynchronize", e))?;
        // SAFETY: the copy into the buffer is complete (synchronised above).
        let out = unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec();
        self.free_async(id);
        Ok(out)
    }

    /// Frees the upload buffers of `stream` (None: of every stream) after a synchronisation.
    pub(super) fn release_uploads(&mut self, stream: Option<StreamId>) {
        let done: Vec<u64> = self
            .async_bufs
            .iter()
            .filter(|(_, b)| !b.download && (stream.is_none() || b.stream == stream))
            .map(|(id, _)| *id)
            .collect();
        for id in done {
            self.free_async(id);
        }
    }

    fn free_async(&mut self, id: u64) {
        if let Some(b) = self.async_bufs.remove(&id) {
            if self.lost.borrow().is_none() {
                // SAFETY: a pinned buffer of this context, freed once.
                let _ = unsafe { sys::cuMemFreeHost(b.ptr.cast()) };
            }
        }
    }
}
