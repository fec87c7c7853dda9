//! Fuzz targets of the Jupyter wire parser, `protocol::Message::from_frames` (ZeroMQ frames →
//! message, with HMAC-SHA256 signature checking) and the message's field accessors:
//!
//! - `wire_signed` signs the fuzzed frames itself with the key `fuzz-key` (the frame after
//!   `<IDS|MSG>` becomes the right signature; frames without a delimiter become the four signed
//!   parts of a message), so that mutations reach the JSON parsing behind the signature check;
//! - `wire_raw` feeds the frames as they are, with the key (the signature check itself) and
//!   without one (no check).
//!
//! - `frame_codec` feeds the bytes to `nb::wire::read_frame`, the framing of the `nb` socket and of
//!   the GPU worker's socket, with the `nb` socket's limits and with the worker's (as its
//!   `Request` type), seeded with well-formed frames.
//!
//! None may panic, overflow a 2 MiB stack or hang. Corpus: `fuzz/corpus/wire/*.frames`, real
//! messages that `jupyter_client.session.Session(key=b"fuzz-key")` serialised, one frame per
//! line (frames are split at `\n`; one trailing `\n` is ignored). `cargo test --release --test
//! fuzz_wire` runs both; `benches/fuzz.sh 60 wire_signed wire_raw` runs the ignored `*_long`.

use bytes::Bytes;
use data_encoding::HEXLOWER;
use fuzzing::Target;
use nbcuda::protocol::Message;
use ring::hmac;

const DELIMITER: &[u8] = b"<IDS|MSG>";

fn key() -> hmac::Key {
    hmac::Key::new(hmac::HMAC_SHA256, b"fuzz-key")
}

/// The corpus file format: frames separated by `\n`, one trailing `\n` ignored.
fn frames(input: &[u8]) -> Vec<Vec<u8>> {
    let input = input.strip_suffix(b"\n").unwrap_or(input);
    input.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect()
}

fn zmq(frames: Vec<Vec<u8>>) -> zeromq::ZmqMessage {
    let mut it = frames.into_iter();
    let mut m = zeromq::ZmqMessage::from(Bytes::from(it.next().unwrap_or_default()));
    for f in it {
        m.push_back(Bytes::from(f));
    }
    m
}

fn sign(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut ctx = hmac::Context::with_key(&key());
    for p in parts.iter().take(4) {
        ctx.update(p);
    }
    HEXLOWER.encode(ctx.sign().as_ref()).into_bytes()
}

/// Reads every field the server reads, as it reads them.
fn touch(m: &Message) {
    let _ = (
        m.msg_type(),
        m.session(),
        m.identities.len(),
        m.buffers.len(),
    );
    let _ = (m.str_field("code", ""), m.bool_field("silent", false));
    let _ = (m.int_field("cursor_pos", 0), m.int_field("n", 10));
    let _ = (m.header.to_string(), m.parent_header.to_string());
}

fn run_signed(input: &[u8]) {
    let mut f = frames(input);
    match f.iter().position(|p| p == DELIMITER) {
        Some(d) if f.len() > d + 1 => {
            let sig = sign(&f[d + 2..]);
            f[d + 1] = sig;
        }
        Some(_) => {}
        None => {
            while f.len() < 4 {
                f.push(b"{}".to_vec());
            }
            let sig = sign(&f);
            f.splice(0..0, [DELIMITER.to_vec(), sig]);
        }
    }
    if let Ok(m) = Message::from_frames(zmq(f), &Some(key())) {
        touch(&m);
    }
}

fn run_raw(input: &[u8]) {
    let f = frames(input);
    if let Ok(m) = Message::from_frames(zmq(f.clone()), &Some(key())) {
        touch(&m);
    }
    if let Ok(m) = Message::from_frames(zmq(f), &None) {
        touch(&m);
    }
}

fn target(name: &'static str, run: fn(&[u8])) -> Target {
    Target::new(name, run)
        .corpus(concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/corpus/wire"))
        .dict(&[
            "\n",
            "<IDS|MSG>\n",
            "\"msg_type\": ",
            "\"execute_request\"",
            "\"header\"",
            "\"content\": ",
            "\"code\": ",
            "\"cursor_pos\": ",
            "null",
            "true",
            "false",
            "{}",
            "[]",
            "\"\\ud800\"",
            "\\u0000",
            "1e999",
            "-0",
            "18446744073709551616",
            ":",
            ",",
            "\"",
            "{",
            "}",
            "[",
            "]",
            "\\",
            "\"version\": \"5.4\"",
        ])
        .nests(&[
            ("[", "]"),
            ("{\"a\":", "}"),
            ("{\"msg_type\": \"x\", \"a\": [", "]}"),
        ])
        .chains(&[("\n", ""), ("[]", ","), ("{}", "\n"), ("\"a\": 1", ", ")])
        .max_len(1 << 20)
        .test_inputs(4000)
}

/// Reads frames until the input runs out or is refused.
fn run_frames(input: &[u8]) {
    let mut r = input;
    while let Ok((h, _)) = nb::wire::read_frame::<serde_json::Value>(&mut r, nb::wire::NB_LIMITS) {
        let _ = h.to_string();
    }
    let mut r = input;
    while nbcuda::gpu::worker::wire::read_frame::<nbcuda::gpu::worker::wire::Request>(&mut r)
        .is_ok()
    {}
}

/// Well-formed frames of both sockets: the seeds of `frame_codec`.
fn frame_seeds() -> Vec<Vec<u8>> {
    use nbcuda::gpu::worker::wire::{write_frame, Request};
    let mut seeds = Vec::new();
    for (header, payload) in [
        (serde_json::json!({"op": "get", "name": "x"}), vec![]),
        (
            serde_json::json!({"op": "put", "name": "x", "dtype": "f32", "shape": [2]}),
            vec![0u8; 8],
        ),
        (
            serde_json::json!({"ok": false, "ename": "ArgumentError", "message": "m"}),
            vec![],
        ),
    ] {
        let mut b = Vec::new();
        if nb::wire::write_frame(&mut b, &header, &payload, nb::wire::NB_LIMITS).is_ok() {
            seeds.push(b);
        }
    }
    for (request, payload) in [
        (Request::Htod(0x1000), vec![1u8, 2, 3]),
        (Request::Alloc(64), vec![]),
        (Request::Describe, vec![]),
    ] {
        let mut b = Vec::new();
        if write_frame(&mut b, &request, &payload).is_ok() {
            seeds.push(b);
        }
    }
    seeds
}

fn frames_target() -> Target {
    Target::new("frame_codec", run_frames)
        .stress(frame_seeds())
        .dict(&[
            "{}",
            "\"op\"",
            "\"Htod\"",
            "null",
            ":",
            ",",
            "\u{ff}\u{ff}\u{ff}\u{7f}",
        ])
        .test_inputs(4000)
}

#[test]
fn frame_codec() {
    frames_target().test();
}

/// `benches/fuzz.sh`: `FUZZ_SECONDS` of generated inputs.
#[test]
#[ignore]
fn frame_codec_long() {
    frames_target().long_run();
}

#[test]
fn wire_signed() {
    target("wire_signed", run_signed).test();
}

#[test]
fn wire_raw() {
    target("wire_raw", run_raw).test();
}

/// `benches/fuzz.sh`: `FUZZ_SECONDS` of generated inputs.
#[test]
#[ignore]
fn wire_signed_long() {
    target("wire_signed", run_signed).long_run();
}

/// `benches/fuzz.sh`: `FUZZ_SECONDS` of generated inputs.
#[test]
#[ignore]
fn wire_raw_long() {
    target("wire_raw", run_raw).long_run();
}
