//! The frames that carry requests and replies between processes of nbcuda: between `nb` (in
//! evcxr's child process) and the Jupyter kernel, and between the Jupyter kernel and its GPU
//! worker process. A frame is a JSON header and a raw byte payload, so that large arrays never
//! go through JSON.
//!
//! Frame: `u32 header length | header (UTF-8 JSON) | u64 payload length | payload`, all
//! little-endian. Each socket names its [`Limits`]; a reader checks them before it allocates.
//! Only framing lives here: what the headers mean is each socket's business.

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::io::{self, Read, Write};

/// The largest frame parts a socket accepts; larger announced sizes are errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of JSON header.
    pub header: usize,
    /// Bytes of payload.
    pub payload: u64,
}

/// Largest header `nb` and the Jupyter kernel accept (a JSON object of names and shapes).
pub const MAX_HEADER: usize = 1 << 20;
/// Largest payload `nb` and the Jupyter kernel accept (array bytes).
pub const MAX_PAYLOAD: u64 = 8 << 30;

/// The limits of the `nb` socket.
pub const NB_LIMITS: Limits = Limits {
    header: MAX_HEADER,
    payload: MAX_PAYLOAD,
};

/// Bytes of payload reserved before any arrive; a longer payload grows as it is read, so a
/// frame that announces gigabytes and sends less costs only what it sent.
const RESERVE_AHEAD: u64 = 16 << 20;

/// Write one frame: `header` as JSON, then `payload`.
pub fn write_frame<T: Serialize + ?Sized>(
    w: &mut impl Write,
    header: &T,
    payload: &[u8],
    limits: Limits,
) -> io::Result<()> {
    let head =
        serde_json::to_vec(header).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    if head.len() > limits.header {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "header of {} bytes is over the {}-byte limit",
                head.len(),
                limits.header
            ),
        ));
    }
    if payload.len() as u64 > limits.payload {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "payload of {} bytes is over the {}-byte limit",
                payload.len(),
                limits.payload
            ),
        ));
    }
    // One write for the lengths and the header: a frame costs two system calls, not four.
    let mut prefix = Vec::with_capacity(4 + head.len() + 8);
    prefix.extend_from_slice(&(head.len() as u32).to_le_bytes());
    prefix.extend_from_slice(&head);
    prefix.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    w.write_all(&prefix)?;
    w.write_all(payload)?;
    w.flush()
}

/// Read one frame; sizes over `limits` are an error before anything large is allocated.
pub fn read_frame<T: DeserializeOwned>(
    r: &mut impl Read,
    limits: Limits,
) -> io::Result<(T, Vec<u8>)> {
    let mut len4 = [0u8; 4];
    r.read_exact(&mut len4)?;
    let hlen = u32::from_le_bytes(len4) as usize;
    if hlen > limits.header {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "header of {hlen} bytes is over the {}-byte limit",
                limits.header
            ),
        ));
    }
    let mut h = vec![0u8; hlen];
    r.read_exact(&mut h)?;
    let header: T = serde_json::from_slice(&h)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("bad header: {e}")))?;
    let mut len8 = [0u8; 8];
    r.read_exact(&mut len8)?;
    let plen = u64::from_le_bytes(len8);
    if plen > limits.payload {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "payload of {plen} bytes is over the {}-byte limit",
                limits.payload
            ),
        ));
    }
    let mut payload = Vec::new();
    let ahead = usize::try_from(plen.min(RESERVE_AHEAD)).unwrap_or(0);
    payload
        .try_reserve_exact(ahead)
        .map_err(|_| io::Error::new(io::ErrorKind::OutOfMemory, "cannot hold the payload"))?;
    r.by_ref().take(plen).read_to_end(&mut payload)?;
    if payload.len() as u64 != plen {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!(
                "payload of {} bytes announced, {} sent",
                plen,
                payload.len()
            ),
        ));
    }
    Ok((header, payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_limits_hold() {
        let mut buf = Vec::new();
        write_frame(
            &mut buf,
            &serde_json::json!({"op": "get", "name": "x"}),
            &[1, 2, 3],
            NB_LIMITS,
        )
        .unwrap();
        let (h, p): (serde_json::Value, _) = read_frame(&mut buf.as_slice(), NB_LIMITS).unwrap();
        assert_eq!(h["name"], "x");
        assert_eq!(p, vec![1, 2, 3]);
        let mut bad = Vec::new();
        bad.extend_from_slice(&(u32::MAX).to_le_bytes());
        assert!(read_frame::<serde_json::Value>(&mut bad.as_slice(), NB_LIMITS).is_err());
        // A frame that announces 8 GiB and sends 3 bytes is an error, without reserving 8 GiB.
        let mut short = Vec::new();
        write_frame(
            &mut short,
            &serde_json::json!({"op": "put"}),
            &[1, 2, 3],
            NB_LIMITS,
        )
        .unwrap();
        let at = short.len() - 3 - 8;
        short[at..at + 8].copy_from_slice(&MAX_PAYLOAD.to_le_bytes());
        let e = read_frame::<serde_json::Value>(&mut short.as_slice(), NB_LIMITS).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{e}");
    }
}
