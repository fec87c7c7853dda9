//! `%copy DST = SRC` (device to device), and `%upload NAME [STREAM]` and `%download NAME
//! [STREAM]`: asynchronous copies between an array and its host copy on a stream (pinned memory
//! on a GPU; immediate on ptxsim). A download's bytes become the array's host copy when its
//! stream (or the device) is synchronised. `%prefetch NAME gpu|host` migrates a managed array.

use super::*;
use ptxsim::timeline::CopyDir;
use std::sync::Arc;

/// A `%download` in flight.
pub(super) struct Download {
    array: String,
    stream: Option<String>,
    /// The backend's id; None when the backend copied at once (the bytes are here).
    id: Option<u64>,
    bytes: Option<Vec<u8>>,
}

impl DeviceState {
    /// The backend's stream for a name, created on first use (None: the default stream).
    pub(super) fn stream_id(&mut self, name: Option<&str>) -> Result<Option<StreamId>, GpuError> {
        let Some(s) = name else {
            return Ok(None);
        };
        if let Some(id) = self.streams.get(s) {
            return Ok(Some(*id));
        }
        let id = self.backend.create_stream()?;
        self.streams.insert(s.to_string(), id);
        Ok(Some(id))
    }

    /// Copies the content of array `src` into array `dst` (same dtype and number of elements;
    /// shapes may differ): `%copy DST = SRC`.
    pub fn copy_array(&mut self, dst: &str, src: &str) -> Result<(), GpuError> {
        self.recover_if_needed()?;
        let s = self.arrays.get(src).ok_or_else(|| self.no_array(src))?;
        let d = self.arrays.get(dst).ok_or_else(|| self.no_array(dst))?;
        let count = |a: &Array| a.shape.iter().product::<usize>();
        if s.dtype != d.dtype || count(s) != count(d) {
            return Err(GpuError::argument(format!(
                "cannot copy `{src}` ({}, {} elements) into `{dst}` ({}, {} elements): the \
                 dtype and the number of elements must be the same",
                s.dtype,
                count(s),
                d.dtype,
                count(d)
            )));
        }
        let (sp, dp, bytes) = (s.ptr, d.ptr, s.bytes);
        let src_shadow = s.shadow.clone();
        if sp != dp {
            let mark = self.timeline_mark(None);
            self.backend.dtod(dp, sp, bytes)?;
            self.timeline_copy(mark, CopyDir::DeviceToDevice, dst, bytes, None, None);
        }
        if let Some(a) = self.arrays.get_mut(dst) {
            a.last_writer = None;
            // The copy came from the host where the source's content did.
            a.shadow = src_shadow;
            a.host = None;
        }
        Ok(())
    }

    /// `%upload`: the array's host copy to the device on `stream`. Returns a one-line summary.
    pub fn upload(&mut self, name: &str, stream: Option<&str>) -> Result<String, GpuError> {
        self.recover_if_needed()?;
        let a = self.arrays.get(name).ok_or_else(|| self.no_array(name))?;
        let Some(data) = a.host.clone() else {
            let why = "it is larger than the host copies kept (NBCUDA_SHADOW_MB)";
            return Err(GpuError::argument(format!(
                "array `{name}` has no host copy to upload ({why}); %download {name} makes one"
            )));
        };
        let ptr = a.ptr;
        let id = self.stream_id(stream)?;
        let mark = self.timeline_mark(id);
        self.backend.htod_async(ptr, &data, id)?;
        self.timeline_copy(mark, CopyDir::HostToDevice, name, data.len(), stream, id);
        // Once the copy lands the device holds these bytes again.
        let shadow = self.shadow_from(&Some(data.clone()));
        if let Some(a) = self.arrays.get_mut(name) {
            a.shadow = shadow;
            a.last_writer = None;
        }
        Ok(format!(
            "uploading `{name}` ({} bytes) on {}",
            data.len(),
            stream.map_or("the default stream".into(), |s| format!("stream {s}"))
        ))
    }

    /// `%download`: the array's device contents into its host copy on `stream`; complete at the
    /// next synchronisation of that stream (or of the device).
    pub fn download(&mut self, name: &str, stream: Option<&str>) -> Result<String, GpuError> {
        self.recover_if_needed()?;
        let a = self.arrays.get(name).ok_or_else(|| self.no_array(name))?;
        let (ptr, bytes) = (a.ptr, a.bytes);
        let id = self.stream_id(stream)?;
        let mark = self.timeline_mark(id);
        let download = match self.backend.dtoh_async(ptr, bytes, id)? {
            Some(ticket) => Download {
                array: name.to_string(),
                stream: stream.map(str::to_string),
                id: Some(ticket),
                bytes: None,
            },
            None => {
                let mut out = vec![0u8; bytes];
                self.backend.dtoh(ptr, &mut out)?;
                Download {
                    array: name.to_string(),
                    stream: stream.map(str::to_string),
                    id: None,
                    bytes: Some(out),
                }
            }
        };
        self.downloads.push(download);
        self.timeline_copy(mark, CopyDir::DeviceToHost, name, bytes, stream, id);
        Ok(format!(
            "downloading `{name}` ({bytes} bytes) on {}; its host copy is current after %sync",
            stream.map_or("the default stream".into(), |s| format!("stream {s}"))
        ))
    }

    /// After a synchronisation of `stream` (None: every stream): the finished downloads become
    /// their arrays' host copies.
    pub(super) fn finish_downloads(&mut self, stream: Option<&str>) -> Result<(), GpuError> {
        let (done, rest): (Vec<Download>, Vec<Download>) = std::mem::take(&mut self.downloads)
            .into_iter()
            .partition(|d| stream.is_none() || d.stream.as_deref() == stream);
        self.downloads = rest;
        for d in done {
            let data = match (d.bytes, d.id) {
                (Some(b), _) => b,
                (None, Some(id)) => self.backend.take_download(id)?,
                (None, None) => continue,
            };
            if let Some(a) = self.arrays.get_mut(&d.array) {
                if a.bytes == data.len() {
                    a.host = Some(Arc::new(data));
                }
            }
        }
        Ok(())
    }

    /// The array's host copy, when it has one (what `%upload` sends).
    pub fn host_copy(&self, name: &str) -> Option<Vec<u8>> {
        self.arrays.get(name)?.host.as_ref().map(|h| h.to_vec())
    }
}

impl DeviceState {
    /// `%prefetch NAME gpu|host`: migrates a managed array's pages (`cuMemPrefetchAsync`) and
    /// waits. Returns a note where there is nothing to migrate (ptxsim).
    pub fn prefetch(&mut self, name: &str, to_device: bool) -> Result<Option<String>, GpuError> {
        self.recover_if_needed()?;
        let a = self.arrays.get(name).ok_or_else(|| self.no_array(name))?;
        if !a.managed {
            return Err(GpuError::argument(format!(
                "array `{name}` is not in managed memory: %prefetch migrates arrays made with \
                 %array --managed"
            )));
        }
        let (ptr, bytes) = (a.ptr, a.bytes);
        if !self.backend.has_managed_memory() {
            return Ok(Some(format!(
                "{}: managed memory is ordinary memory here, nothing to migrate",
                self.backend.name()
            )));
        }
        self.backend.prefetch(ptr, bytes, to_device)?;
        Ok(None)
    }
}
