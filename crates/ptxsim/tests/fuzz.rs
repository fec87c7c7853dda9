//! Fuzz target of ptxsim's PTX parser and lowering: `Device::load_module` on arbitrary bytes
//! (then `Module::block_phases`, the uniformity analysis, on every kernel) must return a module
//! or a `ModuleError`, never panic (even a panic that `load_module` catches itself counts),
//! overflow a 2 MiB stack or hang.
//!
//! `cargo test --release -p ptxsim --test fuzz` runs the corpus (`fuzz/corpus/ptx/`: NVRTC
//! fixtures and a trimmed module) and a few thousand mutated inputs from a fixed seed;
//! `benches/fuzz.sh 60 ptx` runs the ignored `ptx_long` for a minute. The engine is the
//! workspace's `fuzzing` crate.

use fuzzing::Target;

fn run(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    let dev = ptxsim::Device::new();
    if let Ok(module) = dev.load_module(&text) {
        for k in module.kernels() {
            let _ = module.block_phases(&k.name);
        }
        let _ = module.target();
    }
}

fn target() -> Target {
    Target::new("ptx", run)
        .corpus(concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/corpus/ptx"))
        .dict(&[
            ".version 8.8\n",
            ".target sm_80\n",
            ".address_size 64\n",
            ".visible .entry k(\n",
            ".func ",
            ".param .u64 p",
            ".param .align 8 .b8 s[16]",
            ".reg .pred %p<9>;",
            ".reg .b32 %r<99999>;",
            ".reg .f64 %fd<4>;",
            ".shared .align 4 .b8 sh[1024];",
            ".global .align 4 .u32 g[4] = {1, 2, 3, 4};",
            ".const .f32 c = 0f3F800000;",
            ".extern .shared .align 16 .b8 dyn[];",
            ".loc 1 2 3",
            ".file 1 \"k.cu\"",
            "ld.global.f32 %f1, [%rd1+4];",
            "st.shared.u32 [%r1], %r2;",
            "@%p1 bra $L__BB0_2;",
            "$L__BB0_2:",
            "bar.sync 0;",
            "ret;",
            "exit;",
            "call.uni (retval0), f, (param0);",
            "shfl.sync.bfly.b32 %r1|%p1, %r2, 1, 31, -1;",
            "atom.global.add.u32 %r1, [%rd1], 1;",
            "mad.lo.s32 %r1, %r2, %r3, %r4;",
            "cvt.rn.f32.s32 %f1, %r1;",
            "setp.ge.s32 %p1, %r1, %r2;",
            "mov.u32 %r1, %tid.x;",
            "vote.sync.ballot.b32 %r1, %p1, -1;",
            "{",
            "}",
            "(",
            ")",
            "[",
            "]",
            ";",
            ",",
            "%r",
            "%rd",
            "%f",
            "%p",
            ".b64",
            ".u8",
            ".s16",
            ".f16",
            ".v4",
            ".v2",
            "0f7FC00000",
            "0dFFF0000000000000",
            "0x7fffffff",
            "-1",
            "4294967296",
            "18446744073709551616",
            "\n",
            "//",
            "/*",
            "*/",
            "\"",
            "+",
            "-",
            "!",
        ])
        .nests(&[("{", "}"), ("(", ")"), ("[", "]"), ("{\n", "}\n")])
        .chains(&[
            ("1", "+"),
            ("%r1", ", "),
            ("add.s32 %r1, %r1, 1;", "\n"),
            ("{", ""),
        ])
        .max_len(1 << 20)
        .test_inputs(2000)
}

#[test]
fn ptx() {
    target().test();
}

/// `benches/fuzz.sh`: `FUZZ_SECONDS` of generated inputs.
#[test]
#[ignore]
fn ptx_long() {
    target().long_run();
}
