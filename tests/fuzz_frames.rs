//! Fuzz target `frame_codec`: feeds bytes to `nb::wire::read_frame`, the one framing of the
//! `nb` socket and of the GPU worker's socket, with the `nb` socket's limits and with the
//! worker's (as its `Request` type), seeded with well-formed frames of both. No input may panic,
//! overflow a 2 MiB stack or hang. `cargo test --release --test fuzz_frames` runs it;
//! `benches/fuzz.sh 60 frame_codec` runs the ignored `frame_codec_long`.

use fuzzing::Target;

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
