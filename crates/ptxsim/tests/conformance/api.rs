//! The public API around launches: every fixture loads and lists its kernels with their
//! parameters; bad PTX is an error naming the line, never a panic; device memory calls and
//! launch configurations are validated.

use crate::common::*;
use ptxsim::{Device, LaunchConfig, LaunchError, MemoryError, ModuleError, PtxType};

/// `.entry` names of a PTX text, found by a plain text scan.
fn entry_names(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l
                .strip_prefix(".visible .entry ")
                .or_else(|| l.strip_prefix(".weak .entry "))?;
            Some(rest.split('(').next().unwrap_or("").trim().to_string())
        })
        .collect()
}

#[test]
fn every_fixture_loads_and_lists_its_kernels() {
    let names = fixture_names();
    assert!(names.len() >= 20, "fixtures missing: {names:?}");
    let mut total = 0;
    for name in names {
        let text = fixture(&name);
        let dev = Device::new();
        let m = dev
            .load_module(&text)
            .unwrap_or_else(|e| panic!("{name}.ptx: {e}"));
        let got: Vec<String> = m.kernels().iter().map(|k| k.name.clone()).collect();
        assert_eq!(got, entry_names(&text), "{name}.ptx: kernels");
        assert_eq!(
            m.target(),
            ("sm_80", "8.8"),
            "{name}.ptx: target and version"
        );
        total += got.len();
    }
    assert!(total >= 40, "only {total} CUDA kernels in the fixtures");
}

#[test]
fn kernel_info_describes_parameters_and_resources() {
    let dev = Device::new();
    let m = dev
        .load_module(&fixture("vector_add"))
        .unwrap_or_else(|e| panic!("{e}"));
    let k = m.kernel("vecAdd").unwrap_or_else(|| panic!("no vecAdd"));
    let shape: Vec<(Option<PtxType>, usize, usize, usize)> = k
        .params
        .iter()
        .map(|p| (p.ty, p.size, p.align, p.offset))
        .collect();
    assert_eq!(
        shape,
        vec![
            (Some(PtxType::U64), 8, 8, 0),
            (Some(PtxType::U64), 8, 8, 8),
            (Some(PtxType::U64), 8, 8, 16),
            (Some(PtxType::U32), 4, 4, 24)
        ]
    );
    assert_eq!(k.params[0].name, "vecAdd_param_0");
    assert_eq!(k.static_shared_bytes, 0);
    let k = m
        .kernel("saxpyGridStride")
        .unwrap_or_else(|| panic!("no saxpy"));
    assert_eq!(k.params[0].ty, Some(PtxType::F32));
    let mm = dev
        .load_module(&fixture("matmul"))
        .unwrap_or_else(|e| panic!("{e}"));
    let tiled = mm
        .kernel("matmulTiled")
        .unwrap_or_else(|| panic!("no matmulTiled"));
    assert_eq!(tiled.static_shared_bytes, 2 * 16 * 16 * 4);
    assert!(tiled.registers > 0);
    let ds = dev
        .load_module(&fixture("device_functions"))
        .unwrap_or_else(|e| panic!("{e}"));
    let sort = ds
        .kernel("callMinMaxSort")
        .unwrap_or_else(|| panic!("no callMinMaxSort"));
    assert!(
        sort.local_bytes >= 32,
        "callMinMaxSort keeps int v[8] in local memory: {}",
        sort.local_bytes
    );
    assert!(m.kernel("noSuchKernel").is_none());
}

#[test]
fn unknown_instruction_names_line_and_instruction() {
    let text = fixture("vector_add");
    let (idx, _) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.trim_start().starts_with("add.f32"))
        .unwrap_or_else(|| panic!("no add.f32"));
    let bad: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| if i == idx { l.replace("add.f32", "frobnicate.f32") } else { l.to_string() } + "\n")
        .collect();
    match Device::new().load_module(&bad) {
        Err(ModuleError::Unsupported { line, instruction }) => {
            assert_eq!(line, idx + 1);
            assert!(instruction.contains("frobnicate"), "{instruction}");
        }
        Err(ModuleError::Parse { line, message }) => {
            assert_eq!(line, idx + 1);
            assert!(message.contains("frobnicate"), "{message}");
        }
        Ok(_) => panic!("a module with `frobnicate.f32` loaded"),
    }
}

#[test]
fn malformed_ptx_is_an_error_not_a_panic() {
    let mut rng = Rng::for_test("malformed_ptx_is_an_error_not_a_panic");
    let text = fixture("reduce");
    let dev = Device::new();
    // Truncations inside the body, and a few random byte edits: never a panic.
    for _ in 0..40 {
        let cut = rng.usize(text.len() / 4, text.len() - 2);
        let cut = (0..=cut)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        let _ = dev.load_module(&text[..cut]);
        let mut bytes = text.clone().into_bytes();
        for _ in 0..3 {
            let i = rng.usize(0, bytes.len());
            bytes[i] = rng.pick(b"{}();,.%[]0 x");
        }
        let _ = dev.load_module(&String::from_utf8_lossy(&bytes));
    }
    assert!(dev
        .load_module("")
        .map(|m| m.kernels().is_empty())
        .unwrap_or(true));
    assert!(dev
        .load_module(".version 8.8\n.target sm_80\n.address_size 64\n.visible .entry k(\n")
        .is_err());
    assert!(dev.load_module("this is not PTX").is_err());
}

#[test]
fn memory_api_round_trips_and_rejects_bad_pointers() {
    let mut rng = Rng::for_test("memory_api_round_trips_and_rejects_bad_pointers");
    let dev = Device::new();
    let n = rng.usize(1, 10000);
    let data: Vec<u8> = rng.vec(n, |r| r.next_u32() as u8);
    let p = dev.alloc(n).unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(p, 0);
    assert_eq!(p % 256, 0, "allocations are 256-byte aligned");
    assert_eq!(dev.allocation_size(p), Some(n));
    dev.write(p, 0, &data).unwrap_or_else(|e| panic!("{e}"));
    let q = dev.alloc(n).unwrap_or_else(|e| panic!("{e}"));
    dev.copy(q, p, n).unwrap_or_else(|e| panic!("{e}"));
    let mut back = vec![0u8; n];
    dev.read(q, 0, &mut back).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, data);
    let off = rng.usize(0, n);
    let mut tail = vec![0u8; n - off];
    dev.read(p, off, &mut tail)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(tail, data[off..]);
    assert!(matches!(
        dev.read(p, off, &mut vec![0u8; n - off + 1]),
        Err(MemoryError::OutOfRange { .. })
    ));
    assert!(matches!(
        dev.write(p, n, &[1]),
        Err(MemoryError::OutOfRange { .. })
    ));
    assert!(matches!(
        dev.copy(q, p, n + 1),
        Err(MemoryError::OutOfRange { .. })
    ));
    assert!(matches!(
        dev.read(p + 4, 0, &mut [0u8; 1]),
        Err(MemoryError::InvalidPointer { .. })
    ));
    dev.free(p).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        matches!(dev.free(p), Err(MemoryError::InvalidPointer { .. })),
        "double free"
    );
    assert!(
        matches!(
            dev.read(p, 0, &mut [0u8; 1]),
            Err(MemoryError::InvalidPointer { .. })
        ),
        "read after free"
    );
    assert_eq!(dev.allocation_size(p), None);
    assert!(matches!(
        dev.free(0),
        Err(MemoryError::InvalidPointer { .. })
    ));
    assert!(matches!(
        dev.alloc(usize::MAX / 2),
        Err(MemoryError::OutOfMemory { .. })
    ));
}

#[test]
fn launch_rejects_bad_configurations() {
    let c = Ctx::new("vector_add", "launch_rejects_bad_configurations");
    let p = c.zeros::<f32>(64);
    let args: Vec<Vec<u8>> = [Arg::Ptr(p), Arg::Ptr(p), Arg::Ptr(p), Arg::I32(64)]
        .iter()
        .map(Arg::bytes)
        .collect();
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    let launch = |cfg: &LaunchConfig, kernel: &str, params: &[&[u8]]| {
        c.dev.launch(&c.module, kernel, cfg, params)
    };
    let ok = crate::common::config((1, 1, 1), (64, 1, 1));
    assert!(launch(&ok, "vecAdd", &refs).is_ok());
    assert!(matches!(
        launch(&ok, "vecSub", &refs),
        Err(LaunchError::UnknownKernel(_))
    ));
    assert!(matches!(
        launch(&ok, "vecAdd", &refs[..3]),
        Err(LaunchError::BadParams(_))
    ));
    let short = [refs[0], refs[1], refs[2], &[0u8, 0][..]];
    assert!(matches!(
        launch(&ok, "vecAdd", &short),
        Err(LaunchError::BadParams(_))
    ));
    for (grid, block) in [
        ((1, 1, 1), (1025, 1, 1)),
        ((0, 1, 1), (32, 1, 1)),
        ((1, 1, 1), (32, 0, 1)),
        ((1, 1, 1), (32, 32, 2)),
        ((1, 65536, 1), (32, 1, 1)),
    ] {
        let cfg = crate::common::config(grid, block);
        assert!(
            matches!(
                launch(&cfg, "vecAdd", &refs),
                Err(LaunchError::BadConfig(_))
            ),
            "grid {grid:?} block {block:?}"
        );
    }
    let mut big = ok.clone();
    big.dynamic_shared_bytes = 1 << 20;
    assert!(
        matches!(
            launch(&big, "vecAdd", &refs),
            Err(LaunchError::BadConfig(_))
        ),
        "1 MiB of dynamic shared memory"
    );
}

#[test]
fn worker_count_does_not_change_results() {
    let mut c = Ctx::new("histogram", "worker_count_does_not_change_results");
    let n = c.rng.usize(20000, 60000);
    let data: Vec<u8> = c.rng.vec(n, |r| r.next_u32() as u8);
    let pd = c.upload(&data);
    let mut results = Vec::new();
    for threads in [1usize, 2, 0] {
        let ph = c.zeros::<u32>(256);
        let mut cfg = crate::common::config((blocks(n, 256), 1, 1), (256, 1, 1));
        cfg.threads = threads;
        c.launch_cfg(
            "histogramShared",
            &cfg,
            &[Arg::Ptr(pd), Arg::Ptr(ph), Arg::I32(n as i32)],
        );
        results.push(c.download::<u32>(ph, 256));
    }
    assert_eq!(results[0], results[1]);
    assert_eq!(results[0], results[2]);
    assert_eq!(results[0].iter().sum::<u32>() as usize, n);
}
