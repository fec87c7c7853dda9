//! The Jupyter wire format: multipart frames ↔ [`Message`], with HMAC signatures.
//!
//! Receiving goes through `jupyter_zmq_client::RawMessage::from_multipart`, which finds the
//! `<IDS|MSG>` delimiter and verifies the signature; a message whose signature is missing or
//! wrong is an error here and is never executed. Header, parent header, metadata and content
//! are kept as JSON values and read leniently: jupyter-protocol's typed structs reject messages
//! that real clients send (a `history_request` without `unique`/`n`, `user_expressions: null`), so
//! this layer parses only what it needs and lets the handlers read fields with defaults.
//!
//! This module must not know anything about Rust, CUDA or the interpreter.

use bytes::Bytes;
use data_encoding::HEXLOWER;
use jupyter_zmq_client::RawMessage;
use ring::hmac;
use serde_json::{json, Map, Value};

const DELIMITER: &[u8] = b"<IDS|MSG>";
/// Protocol version we speak.
pub const PROTOCOL_VERSION: &str = "5.4";

/// Why an incoming multipart message was dropped.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("bad frames or signature: {0}")]
    Frames(String),
    #[error("bad JSON in the {part}: {source}")]
    Json {
        part: &'static str,
        source: serde_json::Error,
    },
    #[error("the header has no msg_type")]
    NoMsgType,
}

/// One Jupyter message, read leniently.
#[derive(Debug, Clone)]
pub struct Message {
    /// ZeroMQ routing identities (ROUTER sockets) that precede the delimiter.
    pub identities: Vec<Bytes>,
    pub header: Value,
    pub parent_header: Value,
    pub metadata: Value,
    pub content: Value,
    pub buffers: Vec<Bytes>,
    /// The HMAC signature frame as received (empty for unsigned messages).
    pub signature: Bytes,
}

impl Message {
    pub fn msg_type(&self) -> &str {
        self.header
            .get("msg_type")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    pub fn session(&self) -> &str {
        self.header
            .get("session")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// A string field of the content, or `default`.
    pub fn str_field<'a>(&'a self, name: &str, default: &'a str) -> &'a str {
        self.content
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or(default)
    }

    /// A boolean field of the content, or `default`.
    pub fn bool_field(&self, name: &str, default: bool) -> bool {
        self.content
            .get(name)
            .and_then(Value::as_bool)
            .unwrap_or(default)
    }

    /// An integer field of the content, or `default`.
    pub fn int_field(&self, name: &str, default: i64) -> i64 {
        self.content
            .get(name)
            .and_then(Value::as_i64)
            .unwrap_or(default)
    }

    /// Parse and verify a multipart message.
    pub fn from_frames(
        frames: zeromq::ZmqMessage,
        key: &Option<hmac::Key>,
    ) -> Result<Message, WireError> {
        let signature = frames
            .iter()
            .position(|f| f.as_ref() == DELIMITER)
            .and_then(|i| frames.get(i + 1))
            .cloned()
            .unwrap_or_default();
        let raw = RawMessage::from_multipart(frames, key)
            .map_err(|e| WireError::Frames(e.to_string()))?;
        let part = |i: usize, name: &'static str| -> Result<Value, WireError> {
            serde_json::from_slice(&raw.jparts[i])
                .map_err(|source| WireError::Json { part: name, source })
        };
        let header = part(0, "header")?;
        let parent_header = part(1, "parent header")?;
        let metadata = part(2, "metadata")?;
        let content = part(3, "content")?;
        if !header.get("msg_type").is_some_and(Value::is_string) {
            return Err(WireError::NoMsgType);
        }
        Ok(Message {
            identities: raw.zmq_identities,
            header,
            parent_header,
            metadata,
            content,
            buffers: raw.jparts.get(4..).map(|b| b.to_vec()).unwrap_or_default(),
            signature,
        })
    }
}

/// The signatures of recent signed messages, so that a message replayed byte for byte (a
/// captured `execute_request` sent again) is dropped instead of run twice, as ipykernel's
/// `Session.digest_history` does. Holds the last [`DigestHistory::CAPACITY`] signatures.
#[derive(Debug, Default)]
pub struct DigestHistory {
    seen: std::collections::HashSet<Bytes>,
    order: std::collections::VecDeque<Bytes>,
}

impl DigestHistory {
    /// How many signatures are remembered (ipykernel's `digest_history_size`).
    pub const CAPACITY: usize = 1 << 16;

    /// True the first time `signature` is seen; false for a replay. Empty signatures (unsigned
    /// sessions, which have no way to tell a replay) are always new.
    pub fn first_time(&mut self, signature: &Bytes) -> bool {
        if signature.is_empty() {
            return true;
        }
        if !self.seen.insert(signature.clone()) {
            return false;
        }
        self.order.push_back(signature.clone());
        if self.order.len() > Self::CAPACITY {
            if let Some(old) = self.order.pop_front() {
                self.seen.remove(&old);
            }
        }
        true
    }
}

/// Builds the messages the Jupyter kernel sends: signs them and lays out their frames.
#[derive(Clone)]
pub struct Signer {
    key: Option<hmac::Key>,
    session: String,
}

impl Signer {
    pub fn new(key: Option<hmac::Key>, session: String) -> Signer {
        Signer { key, session }
    }

    pub fn key(&self) -> &Option<hmac::Key> {
        &self.key
    }

    /// A new header for a message of `msg_type` sent by this Jupyter kernel.
    pub fn header(&self, msg_type: &str) -> Value {
        json!({
            "msg_id": uuid::Uuid::new_v4().to_string(),
            "session": self.session,
            "username": "nbcuda",
            "date": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            "msg_type": msg_type,
            "version": PROTOCOL_VERSION,
        })
    }

    /// The frames of a message `msg_type` with `content`, in reply to (or caused by) `parent`,
    /// routed to `identities` (ROUTER sockets) or published under a topic (iopub).
    pub fn frames(
        &self,
        identities: &[Bytes],
        msg_type: &str,
        parent: Option<&Message>,
        content: Value,
    ) -> zeromq::ZmqMessage {
        let header = self.header(msg_type);
        let parent_header = parent
            .map(|p| p.header.clone())
            .unwrap_or_else(|| Value::Object(Map::new()));
        let parts: [Vec<u8>; 4] = [
            header.to_string().into_bytes(),
            parent_header.to_string().into_bytes(),
            b"{}".to_vec(),
            content.to_string().into_bytes(),
        ];
        let signature = match &self.key {
            Some(key) => {
                let mut ctx = hmac::Context::with_key(key);
                for p in &parts {
                    ctx.update(p);
                }
                HEXLOWER.encode(ctx.sign().as_ref())
            }
            None => String::new(),
        };
        let mut frames: Vec<Bytes> = identities.to_vec();
        frames.push(Bytes::from_static(DELIMITER));
        frames.push(Bytes::from(signature.into_bytes()));
        for p in parts {
            frames.push(Bytes::from(p));
        }
        let mut message = zeromq::ZmqMessage::from(frames[0].clone());
        for f in frames.into_iter().skip(1) {
            message.push_back(f);
        }
        message
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer() -> Signer {
        Signer::new(
            Some(hmac::Key::new(hmac::HMAC_SHA256, b"secret")),
            "s".into(),
        )
    }

    #[test]
    fn signed_frames_round_trip() {
        let s = signer();
        let frames = s.frames(
            &[Bytes::from_static(b"client")],
            "execute_request",
            None,
            json!({"code": "1+1"}),
        );
        let m = Message::from_frames(frames, s.key()).expect("valid message");
        assert_eq!(m.msg_type(), "execute_request");
        assert_eq!(m.str_field("code", ""), "1+1");
        assert_eq!(m.identities, vec![Bytes::from_static(b"client")]);
    }

    #[test]
    fn forged_signature_is_rejected() {
        let s = signer();
        let other = Signer::new(
            Some(hmac::Key::new(hmac::HMAC_SHA256, b"wrong")),
            "s".into(),
        );
        let frames = other.frames(&[], "execute_request", None, json!({"code": "x"}));
        assert!(Message::from_frames(frames, s.key()).is_err());
        let unsigned =
            Signer::new(None, "s".into()).frames(&[], "kernel_info_request", None, json!({}));
        assert!(Message::from_frames(unsigned, s.key()).is_err());
    }

    #[test]
    fn bad_json_is_an_error_not_a_panic() {
        let key = hmac::Key::new(hmac::HMAC_SHA256, b"k");
        let parts: [&[u8]; 4] = [b"{not json", b"{}", b"{}", b"{}"];
        let mut ctx = hmac::Context::with_key(&key);
        for p in parts {
            ctx.update(p);
        }
        let sig = HEXLOWER.encode(ctx.sign().as_ref());
        let mut m = zeromq::ZmqMessage::from(Bytes::from_static(DELIMITER));
        m.push_back(Bytes::from(sig.into_bytes()));
        for p in parts {
            m.push_back(Bytes::copy_from_slice(p));
        }
        assert!(matches!(
            Message::from_frames(m, &Some(key)),
            Err(WireError::Json { .. })
        ));
    }

    #[test]
    fn replayed_signatures_are_caught_and_old_ones_forgotten() {
        let s = signer();
        let frames = s.frames(&[], "execute_request", None, json!({"code": "1"}));
        let m = Message::from_frames(frames.clone(), s.key()).expect("valid message");
        let again = Message::from_frames(frames, s.key()).expect("valid message");
        assert_eq!(m.signature.len(), 64, "hex of a SHA-256 HMAC");
        let mut h = DigestHistory::default();
        assert!(h.first_time(&m.signature));
        assert!(!h.first_time(&again.signature), "a replay is caught");
        let other = Message::from_frames(
            s.frames(&[], "execute_request", None, json!({"code": "1"})),
            s.key(),
        )
        .expect("valid message");
        assert!(
            h.first_time(&other.signature),
            "a new message id signs differently"
        );
        for i in 0..DigestHistory::CAPACITY {
            assert!(h.first_time(&Bytes::from(format!("{i:064}"))));
        }
        assert!(
            h.first_time(&m.signature),
            "the oldest signature was forgotten"
        );
        assert!(h.first_time(&Bytes::new()) && h.first_time(&Bytes::new()));
    }
}
