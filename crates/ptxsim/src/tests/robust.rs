//! Malformed PTX never panics the simulator: truncated and mutated real modules give errors
//! (or load), and absurd declarations are refused.

use super::util::*;
use crate::*;

const SOURCES: [&str; 4] = [
    include_str!("ptx/control.ptx"),
    include_str!("ptx/memory.ptx"),
    include_str!("ptx/warp.ptx"),
    include_str!("ptx/half.ptx"),
];

#[test]
fn truncated_and_mutated_modules_do_not_panic() {
    let dev = Device::new();
    let mut rng = Rng(seed());
    for src in SOURCES {
        launch_all(&dev, &dev.load_module(src).unwrap());
        let b = src.as_bytes();
        for _ in 0..60 {
            let cut = rng.below(b.len() as u64) as usize;
            if let Err(e) = dev.load_module(&String::from_utf8_lossy(&b[..cut])) {
                assert!(!e.to_string().contains("internal"), "{e}");
            }
        }
        let alphabet = b"{}[]();,.%$@!|<>=+-0123456789abcdefxyz_ \n\"";
        // PTXSIM_FUZZ_ROUNDS=<n> runs more mutations (default 150 per module).
        let rounds = std::env::var("PTXSIM_FUZZ_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(150);
        for _ in 0..rounds {
            let mut m = b.to_vec();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(m.len() as u64) as usize;
                m[at] = alphabet[rng.below(alphabet.len() as u64) as usize];
            }
            match dev.load_module(&String::from_utf8_lossy(&m)) {
                Ok(module) => launch_all(&dev, &module),
                Err(e) => assert!(!e.to_string().contains("internal"), "{e}"),
            }
        }
    }
}

/// Launch every kernel of `m` with small pointer and integer arguments and a budget.
fn launch_all(dev: &Device, m: &Module) {
    let buf = dev.alloc(1 << 16).unwrap();
    for k in m.kernels() {
        let args: Vec<Vec<u8>> = k
            .params
            .iter()
            .map(|p| {
                let mut v = vec![0u8; p.size];
                if p.size == 8 {
                    v.copy_from_slice(&buf.to_le_bytes());
                } else if p.size == 4 {
                    v.copy_from_slice(&64i32.to_le_bytes());
                }
                v
            })
            .collect();
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        let mut cfg = config((2, 1, 1), (64, 1, 1));
        cfg.instruction_budget = Some(200_000);
        cfg.dynamic_shared_bytes = 1024;
        if let Err(LaunchError::Fault { report, .. }) = dev.launch(m, &k.name, &cfg, &refs) {
            assert!(!report.message.contains("internal"), "{report:?}");
        }
    }
    dev.free(buf).unwrap();
}

#[test]
fn absurd_declarations_are_refused() {
    let dev = Device::new();
    let regs = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n.reg .b32 %r<4000000000>;\nret;\n}\n";
    assert!(matches!(
        dev.load_module(regs),
        Err(ModuleError::Parse { line: 6, .. })
    ));
    let local = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n.local .align 8 .b8 big[4000000000];\nret;\n}\n";
    assert!(dev.load_module(local).is_err());
    let shared = ".version 8.0\n.target sm_80\n.address_size 64\n.shared .align 4 .b8 s[1000000];\n.visible .entry k()\n{\n.reg .b64 %rd1;\nmov.u64 %rd1, s;\nret;\n}\n";
    let m = dev.load_module(shared).unwrap();
    let e = dev.launch(&m, "k", &config((1, 1, 1), (1, 1, 1)), &[]);
    assert!(matches!(e, Err(LaunchError::BadConfig(_))), "{e:?}");
}

#[test]
fn a_huge_initialised_global_costs_only_its_initialiser() {
    // 16 GiB declared, 3 bytes initialised (found by fuzzing: the initialiser was expanded to
    // the whole size in host memory, 20 s of page faults and near an out-of-memory kill).
    let dev = Device::new();
    let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.global .align 1 .b8 big[17179869184] = {1, 2, 3};\n.visible .entry k()\n{\nret;\n}\n";
    let t0 = std::time::Instant::now();
    match dev.load_module(ptx) {
        Ok(m) => {
            let (ptr, size) = m.global("big").expect("big");
            assert_eq!(size, 1 << 34);
            let mut head = [9u8; 4];
            dev.read(ptr, 0, &mut head).unwrap();
            assert_eq!(head, [1, 2, 3, 0]);
        }
        // Where the host refuses 16 GiB even lazily, a clear error.
        Err(e) => assert!(e.to_string().contains("out of device memory"), "{e}"),
    }
    assert!(t0.elapsed().as_secs() < 5, "{:?}", t0.elapsed());
}

#[test]
fn thousands_of_conditional_branches_load_quickly() {
    // Found by fuzzing: 5,000 `@%p1 bra` in a row made the uniformity analysis cubic (20 s for
    // this module, minutes for more); its control dependences are now bounded and propagated
    // by a worklist.
    let ptx = include_str!("../../fuzz/corpus/ptx/five-thousand-branches.ptx");
    let t0 = std::time::Instant::now();
    let _ = Device::new().load_module(ptx);
    assert!(t0.elapsed().as_secs() < 5, "{:?}", t0.elapsed());
}

#[test]
fn printf_with_absurd_width_is_bounded() {
    let (s, _) = crate::printf::format(b"%999999999d|%.99999999f", &mut |_| {
        crate::printf::Val::Int(1)
    });
    assert!(s.len() < 20_000);
}
