//! The request/response framing between `nb` (in evcxr's child process) and the nbcuda Jupyter
//! kernel: a JSON header and a raw byte payload, so that large arrays never go through JSON.
//!
//! Frame: `u32 header length | header (UTF-8 JSON object) | u64 payload length | payload`, all
//! little-endian. The same code frames both directions; the kernel's server uses it too.

use std::io::{self, Read, Write};

/// Largest header accepted (a JSON object of names and shapes).
pub const MAX_HEADER: usize = 1 << 20;
/// Largest payload accepted (array bytes).
pub const MAX_PAYLOAD: u64 = 8 << 30;

/// Write one frame.
pub fn write_frame(
    w: &mut impl Write,
    header: &serde_json::Value,
    payload: &[u8],
) -> io::Result<()> {
    let h = header.to_string();
    if h.len() > MAX_HEADER {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "header too large",
        ));
    }
    w.write_all(&(h.len() as u32).to_le_bytes())?;
    w.write_all(h.as_bytes())?;
    w.write_all(&(payload.len() as u64).to_le_bytes())?;
    w.write_all(payload)?;
    w.flush()
}

/// Read one frame; sizes over the limits are an error before anything large is allocated.
pub fn read_frame(r: &mut impl Read) -> io::Result<(serde_json::Value, Vec<u8>)> {
    let mut len4 = [0u8; 4];
    r.read_exact(&mut len4)?;
    let hlen = u32::from_le_bytes(len4) as usize;
    if hlen > MAX_HEADER {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("header of {hlen} bytes is over the {MAX_HEADER}-byte limit"),
        ));
    }
    let mut h = vec![0u8; hlen];
    r.read_exact(&mut h)?;
    let header: serde_json::Value = serde_json::from_slice(&h)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("bad header: {e}")))?;
    let mut len8 = [0u8; 8];
    r.read_exact(&mut len8)?;
    let plen = u64::from_le_bytes(len8);
    if plen > MAX_PAYLOAD {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("payload of {plen} bytes is over the {MAX_PAYLOAD}-byte limit"),
        ));
    }
    // Grown as the bytes arrive: a frame that announces 8 GiB and sends less reserves only
    // what it sent.
    let mut payload = Vec::new();
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
        )
        .unwrap();
        let (h, p) = read_frame(&mut buf.as_slice()).unwrap();
        assert_eq!(h["name"], "x");
        assert_eq!(p, vec![1, 2, 3]);
        let mut bad = Vec::new();
        bad.extend_from_slice(&(u32::MAX).to_le_bytes());
        assert!(read_frame(&mut bad.as_slice()).is_err());
        // A frame that announces 8 GiB and sends 3 bytes is an error, without reserving 8 GiB.
        let mut short = Vec::new();
        write_frame(&mut short, &serde_json::json!({"op": "put"}), &[1, 2, 3]).unwrap();
        let at = short.len() - 3 - 8;
        short[at..at + 8].copy_from_slice(&MAX_PAYLOAD.to_le_bytes());
        let e = read_frame(&mut short.as_slice()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{e}");
    }
}
