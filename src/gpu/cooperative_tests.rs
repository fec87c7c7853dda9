//! Cooperative launches through `DeviceState` with the real NVRTC (skipped, with a message,
//! without it): on ptxsim, a kernel with two grid syncs made cooperative with a note, or with
//! `cooperative` asked, against a CPU reference on random data; a grid larger than the modelled
//! GPU holds refused naming the limit; and the same on the CUDA backend where a GPU is present.

use super::backend::Backend;
use super::sim::SimBackend;
use super::*;
use crate::compile::tests::nvrtc_available;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

const NORMALISE: &str = r#"#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void normalise(const float* x, float* out, float* total, int n) {
    cg::grid_group grid = cg::this_grid();
    unsigned i = (unsigned)grid.thread_rank();
    float v = i < (unsigned)n ? x[i] : 0.0f;
    if (i < (unsigned)n) atomicAdd(total, v);
    grid.sync();
    float t = *total;
    grid.sync();
    if (i < (unsigned)n) out[i] = v / t;
}
"#;

fn request(grid: u32, n: usize, cooperative: bool) -> LaunchRequest {
    LaunchRequest {
        kernel: "normalise".into(),
        grid: (grid, 1, 1),
        block: (128, 1, 1),
        shared_bytes: 0,
        stream: None,
        args: vec![
            LaunchArg::Array("x".into()),
            LaunchArg::Array("out".into()),
            LaunchArg::Array("total".into()),
            LaunchArg::Int(n as i64),
        ],
        check: false,
        cooperative,
        cancel: Arc::new(AtomicBool::new(false)),
    }
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Launches `normalise` on `s` (without and with `cooperative`) and checks it against the CPU;
/// then a grid too large for the device. Returns the refusal's message.
fn normalise_on(mut s: DeviceState, seed: u64) -> String {
    let r = s.compile_cuda(NORMALISE, &CudaOptions::default(), 1);
    assert!(r.is_ok(), "{r:?}");
    let mut x = seed | 1;
    let blocks = 3 + (seed % 13) as u32;
    let n = blocks as usize * 128 - (seed % 100) as usize;
    let v: Vec<f32> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 1000) as f32 / 1000.0 + 0.01
        })
        .collect();
    let bytes: Vec<u8> = v.iter().flat_map(|f| f.to_le_bytes()).collect();
    let created = s.create_array("x", Dtype::F32, vec![n], &bytes);
    assert!(created.is_ok(), "{created:?}");
    for cooperative in [false, true] {
        for (name, len) in [("out", n), ("total", 1)] {
            let r = s.create_array(name, Dtype::F32, vec![len], &vec![0u8; 4 * len]);
            assert!(r.is_ok(), "{r:?}");
        }
        let out = s.launch(&request(blocks, n, cooperative));
        let out = match out {
            Ok(o) => o,
            Err(e) => panic!("cooperative {cooperative}: {}", e.message),
        };
        let note = out.notes.join("\n");
        if cooperative {
            assert!(out.notes.is_empty(), "{note}");
        } else {
            assert!(note.contains("`normalise` uses a grid-wide sync"), "{note}");
        }
        let total: f64 = v.iter().map(|&f| f64::from(f)).sum();
        let got = f32s(&s.read_array("out").unwrap_or_default());
        assert_eq!(got.len(), n);
        for (i, (&g, &w)) in got.iter().zip(&v).enumerate() {
            let want = f64::from(w) / total;
            assert!(
                ((f64::from(g) - want) / want).abs() < 1e-4,
                "{i}: {g} vs {want}"
            );
        }
    }
    match s.launch(&request(1_000_000, n, true)) {
        Ok(_) => panic!("a grid of a million blocks ran cooperatively"),
        Err(e) => e.message,
    }
}

#[test]
fn a_grid_sync_runs_cooperatively_on_ptxsim_and_a_too_large_grid_is_refused() {
    if !nvrtc_available() {
        return;
    }
    let s = DeviceState::with_backend(Box::new(SimBackend::new()), None);
    let refused = normalise_on(s, 0x5eed_1234);
    // The default modelled GPU (H200, 132 SMs).
    let want = "a cooperative launch needs every block resident at once: 1,000,000 blocks of \
                128 threads, but H200 holds at most";
    assert!(refused.contains(want), "{refused}");
    assert!(refused.contains(" per SM × 132 SMs)"), "{refused}");
}

#[test]
fn a_grid_sync_runs_cooperatively_on_the_gpu() {
    // SAFETY: probes for libcuda only.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        testkit::skip("no CUDA driver (libcuda) on this machine: the GPU run is skipped");
        return;
    }
    let backend = match super::cuda::CudaBackend::new(0) {
        Ok(b) => b,
        Err(why) => {
            testkit::skip(format!("no usable CUDA GPU: {why}"));
            return;
        }
    };
    if !nvrtc_available() {
        return;
    }
    let s = DeviceState::with_backend(Box::new(backend) as Box<dyn Backend>, None);
    let refused = normalise_on(s, 0x0dd_5eed);
    assert!(
        refused.contains("a cooperative launch needs every block resident at once")
            && refused.contains(" per SM × "),
        "{refused}"
    );
}
