//! The same CUDA sources compiled for the oldest and newest targets ptxsim supports
//! (`tests/fixtures/compute_70/`, `tests/fixtures/compute_90/`): every variant loads with the
//! same kernels and parameters as the compute_80 fixture, and a selection of the conformance
//! checks passes on each.

use crate::common::*;
use crate::{atomics, tutorial, warp};
use ptxsim::Device;

const ARCHS: [(&str, &str); 2] = [("compute_70", "sm_70"), ("compute_90", "sm_90")];
const VARIANTS: [&str; 6] = [
    "vector_add",
    "matmul",
    "reduce",
    "histogram",
    "warp",
    "atomics_global",
];

#[test]
fn arch_variants_load_with_the_same_kernels() {
    let dev = Device::new();
    for name in VARIANTS {
        let main = dev
            .load_module(&fixture(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for (arch, target) in ARCHS {
            let m = dev
                .load_module(&fixture(&format!("{arch}/{name}")))
                .unwrap_or_else(|e| panic!("{arch}/{name}.ptx: {e}"));
            assert_eq!(m.target().0, target, "{arch}/{name}.ptx");
            let sig = |k: &ptxsim::KernelInfo| {
                (
                    k.name.clone(),
                    k.params
                        .iter()
                        .map(|p| (p.ty, p.size, p.offset))
                        .collect::<Vec<_>>(),
                )
            };
            let a: Vec<_> = m.kernels().iter().map(sig).collect();
            let b: Vec<_> = main.kernels().iter().map(sig).collect();
            assert_eq!(a, b, "{arch}/{name}.ptx: kernels and parameters");
        }
    }
}

fn run_all(arch: &str) {
    let fx = |name: &str| format!("{arch}/{name}");
    tutorial::vec_add_on(&fx("vector_add"));
    tutorial::matmul_case(&fx("matmul"), "matmul_tiled", "matmulTiled");
    tutorial::reduce_block_tree_on(&fx("reduce"));
    tutorial::reduce_warp_shuffle_on(&fx("reduce"));
    tutorial::histogram_case(
        &fx("histogram"),
        "histogram_shared_atomics",
        "histogramShared",
        true,
    );
    warp::shuffle_modes_on(&fx("warp"));
    warp::votes_on(&fx("warp"));
    warp::activemask_divergent_on(&fx("warp"));
    warp::syncwarp_exchange_on(&fx("warp"));
    atomics::atomic_inc_dec_on(&fx("atomics_global"));
    atomics::atomic_cas_loops_on(&fx("atomics_global"));
    atomics::atomic_min_max_on(&fx("atomics_global"));
    atomics::atomic_add_f64_on(&fx("atomics_global"));
}

#[test]
fn compute_70_variants() {
    run_all("compute_70");
}

#[test]
fn compute_90_variants() {
    run_all("compute_90");
}
