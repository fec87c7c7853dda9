//! Warp intrinsics on NVRTC output of `ptx/warp.cu`, checked lane by lane.

use super::util::*;
use crate::*;

const PTX: &str = include_str!("ptx/warp.ptx");

#[test]
fn shuffles_votes_match_reduce() {
    let dev = Device::new();
    let m = dev.load_module(PTX).unwrap();
    let mut rng = Rng(seed());
    let n = 256usize;
    let v: Vec<i32> = (0..n).map(|_| (rng.next() % 9) as i32 - 2).collect();
    let pi = upload_i32(&dev, &v);
    let po = dev.alloc(n * 12 * 4).unwrap();
    run(
        &dev,
        &m,
        "warpops",
        (2, 1, 1),
        (128, 1, 1),
        &[&p64(pi), &p64(po), &i32b(n as i32)],
    );
    let out = download_i32(&dev, po, n * 12);
    for i in 0..n {
        let base = i / 32 * 32;
        let lane = i % 32;
        let w = |l: usize| v[base + l];
        let o = &out[i * 12..i * 12 + 12];
        assert_eq!(o[0], w((lane * 7) & 31), "shfl idx lane {i}");
        assert_eq!(
            o[1],
            if lane >= 3 { w(lane - 3) } else { w(lane) },
            "shfl up {i}"
        );
        assert_eq!(
            o[2],
            if lane + 5 < 32 { w(lane + 5) } else { w(lane) },
            "shfl down {i}"
        );
        assert_eq!(o[3], w(lane ^ 6), "shfl xor {i}");
        let seg = lane & !7;
        assert_eq!(
            o[4],
            if (lane & 7) + 2 < 8 {
                w(lane + 2)
            } else {
                w(lane)
            },
            "shfl down width 8 {i} seg {seg}"
        );
        let ballot = (0..32).fold(0u32, |a, l| a | (((w(l) & 1 != 0) as u32) << l));
        assert_eq!(o[5] as u32, ballot);
        assert_eq!(o[6], 1);
        assert_eq!(o[7], (0..32).any(|l| w(l) == 3) as i32);
        let am = (0..32).fold(0u32, |a, l| a | (((w(l) & 2 != 0) as u32) << l));
        assert_eq!(
            o[8] as u32,
            if v[i] & 2 != 0 { am } else { 0 },
            "activemask {i}"
        );
        let mt = (0..32).fold(0u32, |a, l| a | (((w(l) & 3 == v[i] & 3) as u32) << l));
        assert_eq!(o[9] as u32, mt, "match_any {i}");
        assert_eq!(o[10], (0..32).map(w).sum::<i32>());
        let x = v[i] as u32;
        let ffs = if x == 0 {
            0
        } else {
            x.trailing_zeros() as i32 + 1
        };
        let want = (x.count_ones() as i32)
            .wrapping_add(x.leading_zeros() as i32)
            .wrapping_add(ffs)
            .wrapping_add(x.reverse_bits() as i32);
        assert_eq!(o[11], want, "bit ops {i}");
    }
}

#[test]
fn warp_sz_is_the_warp_size() {
    // NVRTC writes `warpSize` as the PTX constant WARP_SZ (`i % warpSize`, `i / warpSize`).
    let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 out)\n{\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\nld.param.u64 %rd1, [out];\ncvta.to.global.u64 %rd2, %rd1;\nmov.u32 %r1, %tid.x;\nrem.u32 %r2, %r1, WARP_SZ;\nmov.u32 %r3, WARP_SZ;\nadd.u32 %r2, %r2, %r3;\nmul.wide.u32 %rd3, %r1, 4;\nadd.s64 %rd3, %rd2, %rd3;\nst.global.u32 [%rd3], %r2;\nret;\n}\n";
    let dev = Device::new();
    let m = dev.load_module(ptx).expect("WARP_SZ loads");
    let out = upload_u32(&dev, &[0; 64]);
    run(&dev, &m, "k", (1, 1, 1), (64, 1, 1), &[&p64(out)]);
    let want: Vec<u32> = (0..64).map(|i| i % 32 + 32).collect();
    assert_eq!(download_u32(&dev, out, 64), want);
}

/// Hand PTX: warp 0 of each block spins on a shared flag until warp `w` of the block sets it
/// (`atom.or` / `ld.acquire`, as cooperative groups' multi-warp barriers do).
fn spin_ptx(setter_warp: u32) -> String {
    format!(
        ".version 8.0\n.target sm_80\n.address_size 64\n\
         .visible .entry spin(.param .u64 out)\n{{\n\
         .reg .pred %p<4>;\n.reg .b32 %r<8>;\n.reg .b64 %rd<6>;\n\
         .shared .align 4 .u32 flag;\n\
         ld.param.u64 %rd1, [out];\ncvta.to.global.u64 %rd2, %rd1;\n\
         mov.u32 %r1, %tid.x;\n\
         setp.ne.u32 %p1, %r1, 0;\n@%p1 bra INIT_DONE;\nst.shared.u32 [flag], 0;\n\
         INIT_DONE:\nbar.sync 0;\n\
         mov.u64 %rd3, flag;\ncvta.shared.u64 %rd3, %rd3;\n\
         setp.ne.u32 %p2, %r1, {set};\n@%p2 bra NOT_SETTER;\n\
         atom.or.acq_rel.cta.b32 %r2, [%rd3], 7;\n\
         NOT_SETTER:\nsetp.ge.u32 %p3, %r1, 32;\n@%p3 bra DONE;\n\
         SPIN:\nld.acquire.cta.u32 %r3, [%rd3];\nsetp.eq.u32 %p1, %r3, 0;\n@%p1 bra SPIN;\n\
         mul.wide.u32 %rd4, %r1, 4;\nadd.s64 %rd5, %rd2, %rd4;\nst.global.u32 [%rd5], %r3;\n\
         DONE:\nret;\n}}\n",
        set = setter_warp * 32 + 5
    )
}

#[test]
fn a_warp_spinning_on_shared_memory_lets_the_other_warps_of_its_block_run() {
    let dev = Device::new();
    for setter in [1u32, 3, 7] {
        let m = dev.load_module(&spin_ptx(setter)).expect("spin loads");
        let out = upload_u32(&dev, &[0; 32]);
        run(&dev, &m, "spin", (2, 1, 1), (256, 1, 1), &[&p64(out)]);
        assert_eq!(
            download_u32(&dev, out, 32),
            vec![7u32; 32],
            "setter warp {setter}"
        );
    }
}

#[test]
fn fixed_special_registers_of_a_launch_without_a_driver() {
    // Reserved shared memory (cooperative groups' scratch), cluster registers of a launch
    // without clusters, driver registers (0 without a driver), and performance counters.
    let regs = [
        ("%reserved_smem_offset_begin", 0u32),
        ("%reserved_smem_offset_end", crate::ir::RESERVED_SMEM),
        ("%reserved_smem_offset_cap", crate::ir::RESERVED_SMEM),
        ("%reserved_smem_offset_1", crate::ir::RESERVED_SMEM_CG),
        ("%cluster_ctarank", 0),
        ("%cluster_nctarank", 1),
        ("%cluster_nctaid.x", 1),
        ("%clusterid.x", 3),
        ("%nclusterid.x", 4),
        ("%envreg3", 0),
        ("%pm2", 0),
    ];
    let movs: String = regs
        .iter()
        .enumerate()
        .map(|(i, (r, _))| format!("mov.u32 %r1, {r};\nst.global.u32 [%rd2+{}], %r1;\n", i * 4))
        .collect();
    let ptx = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\
         .visible .entry k(.param .u64 out)\n{{\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n\
         .reg .pred %p<2>;\n\
         ld.param.u64 %rd1, [out];\ncvta.to.global.u64 %rd2, %rd1;\n\
         mov.u32 %r2, %ctaid.x;\nsetp.ne.u32 %p1, %r2, 3;\n@%p1 bra END;\n{movs}END:\nret;\n}}\n"
    );
    let dev = Device::new();
    let m = dev.load_module(&ptx).expect("special registers load");
    let out = upload_u32(&dev, &vec![99; regs.len()]);
    run(&dev, &m, "k", (4, 1, 1), (32, 1, 1), &[&p64(out)]);
    let want: Vec<u32> = regs.iter().map(|r| r.1).collect();
    assert_eq!(download_u32(&dev, out, regs.len()), want);
}

#[test]
fn every_special_register_of_the_ptx_isa_loads() {
    // PTX ISA 8.5, chapter 10 (special registers), with the width `mov` reads each at.
    let mut regs: Vec<(String, &str)> = Vec::new();
    for r in [
        "%tid",
        "%ntid",
        "%ctaid",
        "%nctaid",
        "%clusterid",
        "%nclusterid",
    ] {
        for d in ["x", "y", "z"] {
            regs.push((format!("{r}.{d}"), "u32"));
        }
    }
    for r in ["%cluster_ctaid", "%cluster_nctaid"] {
        for d in ["x", "y", "z"] {
            regs.push((format!("{r}.{d}"), "u32"));
        }
    }
    for r in [
        "%laneid",
        "%warpid",
        "%nwarpid",
        "%smid",
        "%nsmid",
        "%cluster_ctarank",
        "%cluster_nctarank",
        "%lanemask_eq",
        "%lanemask_le",
        "%lanemask_lt",
        "%lanemask_ge",
        "%lanemask_gt",
        "%clock",
        "%clock_hi",
        "%globaltimer_lo",
        "%globaltimer_hi",
        "%reserved_smem_offset_begin",
        "%reserved_smem_offset_end",
        "%reserved_smem_offset_cap",
        "%reserved_smem_offset_0",
        "%reserved_smem_offset_1",
        "%total_smem_size",
        "%aggr_smem_size",
        "%dynamic_smem_size",
    ] {
        regs.push((r.to_string(), "u32"));
    }
    for i in 0..8 {
        regs.push((format!("%pm{i}"), "u32"));
        regs.push((format!("%pm{i}_64"), "u64"));
    }
    for i in 0..32 {
        regs.push((format!("%envreg{i}"), "u32"));
    }
    for r in ["%clock64", "%globaltimer", "%gridid", "%current_graph_exec"] {
        regs.push((r.to_string(), "u64"));
    }
    regs.push(("%is_explicit_cluster".into(), "pred"));
    let dev = Device::new();
    for (r, ty) in &regs {
        assert!(
            crate::is_predefined_name(r),
            "{r} loads but is_predefined_name denies it"
        );
        let (decl, dst) = match *ty {
            "u64" => (".reg .b64 %rd<2>;", "%rd1"),
            "pred" => (".reg .pred %p<2>;", "%p1"),
            _ => (".reg .b32 %r<2>;", "%r1"),
        };
        let ptx = format!(
            ".version 8.5\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n{decl}\n\
             mov.{ty} {dst}, {r};\nret;\n}}\n"
        );
        let m = dev.load_module(&ptx).unwrap_or_else(|e| panic!("{r}: {e}"));
        run(&dev, &m, "k", (1, 1, 1), (32, 1, 1), &[]);
    }
}
