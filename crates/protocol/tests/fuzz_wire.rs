//! Fuzz targets of the Jupyter wire parser, `protocol::Message::from_frames` (ZeroMQ frames →
//! message, with HMAC-SHA256 signature checking) and the message's field accessors:
//!
//! - `wire_signed` signs the fuzzed frames itself with the key `fuzz-key` (the frame after
//!   `<IDS|MSG>` becomes the right signature; frames without a delimiter become the four signed
//!   parts of a message), so that mutations reach the JSON parsing behind the signature check;
//! - `wire_raw` feeds the frames as they are, with the key (the signature check itself) and
//!   without one (no check).
//!
//! Neither may panic, overflow a 2 MiB stack or hang. Corpus:
//! `crates/protocol/fuzz/corpus/wire/*.frames`, real messages that
//! `jupyter_client.session.Session(key=b"fuzz-key")` serialised, one frame per line (frames are
//! split at `\n`; one trailing `\n` is ignored). `cargo test --release -p nbcuda-protocol --test
//! fuzz_wire` runs both; `benches/fuzz.sh 60 wire_signed wire_raw` runs the ignored `*_long`.

use bytes::Bytes;
use data_encoding::HEXLOWER;
use fuzzing::Target;
use protocol::Message;
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
