//! The schedule on hand-computed cases (host costs: a launch 2.5 µs, a copy 2.5 µs, an event
//! 0.5 µs).

use super::*;
use crate::gpus;

const S1: Stream = Stream::Named(1);
const S2: Stream = Stream::Named(2);

fn h200() -> &'static GpuModel {
    gpus::find("H200").expect("H200 in the table")
}

fn kernel(stream: Stream, ns: f64, blocks: u64) -> Work {
    Work::Kernel {
        stream,
        ns,
        blocks,
        wave_blocks: 1000,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-3
}

fn spans(s: &[Scheduled]) -> Vec<(f64, f64)> {
    s.iter().map(|x| (x.start_ns, x.end_ns)).collect()
}

fn assert_spans(s: &[Scheduled], want: &[(f64, f64)]) {
    let got = spans(s);
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            close(g.0, w.0) && close(g.1, w.1),
            "got {got:?}, want {want:?}"
        );
    }
}

#[test]
fn small_kernels_on_four_streams_run_side_by_side() {
    let w: Vec<Work> = (0..4)
        .map(|s| kernel(Stream::Named(s), 10_000.0, 8))
        .chain([Work::Sync { stream: None }])
        .collect();
    let s = schedule(&w, h200());
    // Each starts when the host issues it (every 2.5 µs) and takes its 10 µs; the host waits
    // from its fifth step (10 µs) to the last end.
    assert_spans(
        &s,
        &[
            (0.0, 10_000.0),
            (2_500.0, 12_500.0),
            (5_000.0, 15_000.0),
            (7_500.0, 17_500.0),
            (10_000.0, 17_500.0),
        ],
    );
    assert_eq!(s[4].lane, Lane::Host);
    // The same four on one stream: one after another.
    let w: Vec<Work> = (0..4).map(|_| kernel(S1, 10_000.0, 8)).collect();
    assert_spans(
        &schedule(&w, h200()),
        &[
            (0.0, 10_000.0),
            (10_000.0, 20_000.0),
            (20_000.0, 30_000.0),
            (30_000.0, 40_000.0),
        ],
    );
}

#[test]
fn a_kernel_that_fills_the_gpu_runs_alone() {
    let w = [kernel(S1, 100_000.0, 5000), kernel(S2, 100_000.0, 5000)];
    assert_spans(
        &schedule(&w, h200()),
        &[(0.0, 100_000.0), (100_000.0, 200_000.0)],
    );
}

#[test]
fn kernels_share_what_is_left_and_slow_down() {
    // The first wants 3/4 of the GPU, the second 1/2: it gets 1/4 until the first ends (half
    // speed: 48.75 µs of its work done by 100 µs), then all it wants.
    let w = [kernel(S1, 100_000.0, 750), kernel(S2, 100_000.0, 500)];
    assert_spans(
        &schedule(&w, h200()),
        &[(0.0, 100_000.0), (2_500.0, 151_250.0)],
    );
}

#[test]
fn copies_use_the_link_and_overlap_kernels() {
    let g = h200();
    // PCIe 5 x16: 32 GT/s × 16 lanes × 128/130 / 8 = 63.0 GB/s; pinned at 80% of it.
    assert!((link_gb_s(g) - 63.015_384_6).abs() < 1e-6);
    let bytes = 100_000_000u64;
    let pinned = 2_000.0 + bytes as f64 / (63.015_384_6 * 0.8);
    assert!(close(
        copy_duration_ns(g, CopyDir::HostToDevice, bytes, true),
        pinned
    ));
    let pageable = 2_000.0 + bytes as f64 / (63.015_384_6 * 0.4);
    assert!(close(
        copy_duration_ns(g, CopyDir::HostToDevice, bytes, false),
        pageable
    ));
    // PCIe 3 x16 on a V100 and PCIe 4 x8 on an RTX 4060.
    assert_eq!(host_link(gpus::find("V100").expect("V100")), (3, 16));
    assert_eq!(host_link(gpus::find("RTX 4060").expect("RTX 4060")), (4, 8));

    // A copy in on s1 while a kernel runs on s2; a second copy in (s2, after the kernel) waits
    // for the engine only if the first is still running; a copy out runs on the other engine.
    let w = [
        Work::Copy {
            stream: S1,
            dir: CopyDir::HostToDevice,
            bytes,
            pinned: true,
        },
        kernel(S2, 100_000.0, 8),
        Work::Copy {
            stream: S2,
            dir: CopyDir::HostToDevice,
            bytes,
            pinned: true,
        },
        Work::Copy {
            stream: Stream::Named(3),
            dir: CopyDir::DeviceToHost,
            bytes,
            pinned: true,
        },
    ];
    let s = schedule(&w, g);
    assert_spans(
        &s,
        &[
            (0.0, pinned),
            (2_500.0, 102_500.0),
            (pinned, 2.0 * pinned),
            (7_500.0, 7_500.0 + pinned),
        ],
    );
    assert_eq!(
        s[0].lane,
        Lane::CopyEngine(CopyDir::HostToDevice, S1),
        "copies run on the copy engine of their direction"
    );
}

#[test]
fn a_pageable_copy_blocks_the_host() {
    let g = h200();
    let bytes = 10_000_000u64;
    let d = copy_duration_ns(g, CopyDir::HostToDevice, bytes, false);
    let w = [
        Work::Copy {
            stream: S1,
            dir: CopyDir::HostToDevice,
            bytes,
            pinned: false,
        },
        kernel(S2, 10_000.0, 8),
    ];
    // The launch is issued only when the copy is done.
    assert_spans(&schedule(&w, g), &[(0.0, d), (d, d + 10_000.0)]);
}

#[test]
fn the_legacy_default_stream_serialises_with_the_others() {
    let w = [
        kernel(S1, 10_000.0, 8),
        kernel(Stream::Legacy, 10_000.0, 8),
        kernel(S2, 10_000.0, 8),
    ];
    // The default-stream launch waits for s1; the launch on s2 issued after it waits for it.
    assert_spans(
        &schedule(&w, h200()),
        &[(0.0, 10_000.0), (10_000.0, 20_000.0), (20_000.0, 30_000.0)],
    );
}

#[test]
fn an_event_orders_two_streams() {
    let w = [
        kernel(S1, 10_000.0, 8),
        Work::Record {
            stream: S1,
            event: 7,
        },
        Work::Wait {
            stream: S2,
            event: 7,
        },
        kernel(S2, 10_000.0, 8),
        Work::Sync { stream: Some(S2) },
    ];
    // record issued at 2.5 µs, done when s1's kernel is (10 µs); s2's wait too; its kernel,
    // issued at 3.5 µs, starts at 10 µs. The host waits for s2 from 6 µs to 20 µs.
    assert_spans(
        &schedule(&w, h200()),
        &[
            (0.0, 10_000.0),
            (10_000.0, 10_000.0),
            (10_000.0, 10_000.0),
            (10_000.0, 20_000.0),
            (6_000.0, 20_000.0),
        ],
    );
    // Without the wait, s2's kernel starts when issued.
    let w = [kernel(S1, 10_000.0, 8), kernel(S2, 10_000.0, 8)];
    assert_spans(
        &schedule(&w, h200()),
        &[(0.0, 10_000.0), (2_500.0, 12_500.0)],
    );
    // A wait on an event never recorded waits for nothing.
    let w = [
        kernel(S1, 10_000.0, 8),
        Work::Wait {
            stream: S2,
            event: 9,
        },
        kernel(S2, 10_000.0, 8),
    ];
    assert_spans(
        &schedule(&w, h200()),
        &[(0.0, 10_000.0), (2_500.0, 2_500.0), (3_000.0, 13_000.0)],
    );
}

#[test]
fn a_host_sync_delays_what_the_host_issues_next() {
    let w = [
        kernel(S1, 10_000.0, 8),
        Work::Sync { stream: Some(S1) },
        kernel(S1, 10_000.0, 8),
    ];
    assert_spans(
        &schedule(&w, h200()),
        &[(0.0, 10_000.0), (2_500.0, 10_000.0), (10_000.0, 20_000.0)],
    );
    // Nothing but syncs: the host waits for nothing.
    let s = schedule(&[Work::Sync { stream: None }], h200());
    assert_spans(&s, &[(0.0, 0.0)]);
}
