//! Tests of `%gpu` and `%info [--gpu MODEL]` through [`Magics`] on the real device state
//! (ptxsim and NVRTC when there is no GPU): parsing, the model table, unknown models, and the
//! CUBIN resources and occupancy table of a register-heavy CUDA kernel.

use super::parse::Command;
use super::registry::parse_line;
use super::test_session::Session;

#[test]
fn gpu_magics_parse() {
    let p = |s: &str| parse_line(s).unwrap_or_else(|e| panic!("{s}: {e:?}"));
    assert_eq!(p("%gpu"), Command::Gpu(None));
    assert!(matches!(p("%gpu A100"), Command::Gpu(Some(ref n)) if n.text == "A100"));
    assert!(matches!(p("%gpu RTX 4090  # x"), Command::Gpu(Some(ref n)) if n.text == "RTX 4090"));
    for line in ["%info --gpu T4 add", "%info add --gpu T4"] {
        match p(line) {
            Command::Info { kernel, gpu } => {
                assert_eq!(kernel.text, "add");
                assert_eq!(gpu.map(|g| g.text).as_deref(), Some("T4"));
            }
            c => panic!("{c:?}"),
        }
    }
    assert!(matches!(
        p("%info --gpu \"RTX 3090\" scale<float>"),
        Command::Info { ref kernel, gpu: Some(ref g) } if kernel.text == "scale<float>" && g.text == "RTX 3090"
    ));
    // A name with spaces needs no quotes; the next word is not swallowed when it continues
    // no model's name.
    for line in [
        "%info --gpu RTX 3090 scale<float>",
        "%info scale<float> --gpu rtx 3090",
    ] {
        assert!(
            matches!(
                p(line),
                Command::Info { ref kernel, gpu: Some(ref g) } if kernel.text == "scale<float>" && g.text.eq_ignore_ascii_case("RTX 3090")
            ),
            "{line}"
        );
    }
    match p("%profile --gpu RTX 4090 k[1, 32](x)") {
        Command::Profile(a) => assert_eq!(a.gpu.map(|g| g.text).as_deref(), Some("RTX 4090")),
        c => panic!("{c:?}"),
    }
    match p("%time --gpu H100 k[1, 32](x)") {
        Command::Time(a) => assert_eq!(a.gpu.map(|g| g.text).as_deref(), Some("H100")),
        c => panic!("{c:?}"),
    }
    assert!(parse_line("%info --gpu").is_err());
    let e = parse_line("%info --fast add")
        .err()
        .map(|e| e.message)
        .unwrap_or_default();
    assert!(e.contains("--gpu"), "{e}");
}

#[test]
fn gpu_lists_and_selects_models() {
    let mut s = Session::new();
    let t = s.ok_text("%gpu");
    for name in [
        "T4", "V100", "A100", "L4", "RTX 3090", "RTX 4090", "H100", "H200",
    ] {
        assert!(t.contains(name), "{t}");
    }
    if s.m.dev.backend_name() == "ptxsim" {
        assert!(
            t.lines().any(|l| l.contains('*') && l.contains("H200")),
            "{t}"
        );
    }
    let t = s.ok_text("%gpu a100");
    assert!(t.contains("A100") && t.contains("sm_80"), "{t}");
    assert_eq!(s.m.dev.gpu_model().name, "A100");
    let t = s.ok_text("%gpu");
    assert!(
        t.lines().any(|l| l.contains('*') && l.contains("A100")),
        "{t}"
    );
    assert!(
        !t.lines().any(|l| l.contains('*') && l.contains("H200")),
        "{t}"
    );
    let e = s.err("%gpu Z80");
    assert_eq!(e.ename, "ArgumentError");
    assert!(
        e.message.contains("unknown GPU model 'Z80'"),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("T4") && e.message.contains("RTX 4090"),
        "{}",
        e.message
    );
    let e = s.err("%gpu H20");
    assert!(e.message.contains("did you mean H200?"), "{}", e.message);
    let e = s.err("%gpu rtx4099");
    assert!(
        e.message.contains("did you mean RTX 4090?"),
        "{}",
        e.message
    );
    assert_eq!(
        s.m.dev.gpu_model().name,
        "A100",
        "a failed %gpu changes nothing"
    );
    let t = s.ok_text("%gpu RTX 4090");
    assert!(t.contains("sm_89"), "{t}");
    assert!(s.ok_text("%help gpu").contains("%gpu [MODEL"));
    assert!(s.ok_text("%lsmagic").contains("%gpu"));
}

#[test]
fn info_shows_cubin_resources_and_occupancy_per_model() {
    if !crate::compile::tests::nvrtc_available() {
        return;
    }
    let mut s = Session::new();
    s.m.run_cell(
        "%%cuda",
        crate::compile::resources::tests::SRC,
        2,
        &s.sink,
        &s.cancel,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    s.take();
    let t = s.ok_text("%info --gpu T4 heavy");
    assert!(t.contains("registers per thread"), "{t}");
    assert!(t.contains("61 (sm_75 CUBIN"), "{t}");
    assert!(!t.contains("PTX virtual"), "{t}");
    assert!(
        t.contains("theoretical occupancy on T4 (sm_75), 61 registers/thread"),
        "{t}"
    );
    // 61 registers → 1952 → 2048 per warp; 8 warps per sub-partition, 32 per SM (= T4's max).
    // Block 256: 8 warps; warps 32/8 = 4, registers 32/8 = 4 → 4 blocks, 100%.
    assert!(
        t.lines()
            .any(|l| l.trim_start().starts_with("256") && l.contains("100%")),
        "{t}"
    );
    let t = s.ok_text("%info --gpu H200 heavy");
    assert!(t.contains("30 (sm_90 CUBIN"), "{t}");
    // 30 registers → 960 → 1024 per warp: 64 warps. Block 1024: warps 2 → 2 blocks, 100%.
    assert!(
        t.lines()
            .any(|l| l.trim_start().starts_with("1024") && l.contains("100%")),
        "{t}"
    );
    let t = s.ok_text("%info --gpu A100 tiled");
    assert!(t.contains("4224 bytes (sm_80 CUBIN"), "{t}");
    assert!(t.contains("4224 B static shared"), "{t}");
    if s.m.dev.backend_name() == "ptxsim" {
        // Without --gpu: the session's model (H200 by default).
        let t = s.ok_text("%info heavy");
        assert!(t.contains("theoretical occupancy on H200 (sm_90)"), "{t}");
        assert!(t.contains("modelled GPU"), "{t}");
        s.ok_text("%gpu T4");
        let t = s.ok_text("%info heavy");
        assert!(t.contains("theoretical occupancy on T4 (sm_75)"), "{t}");
    }
    let e = s.err("%info --gpu Z80 heavy");
    assert_eq!(e.ename, "ArgumentError");
    let e = s.err("%info --gpu T4 heavvy");
    assert!(e.message.contains("did you mean `heavy`?"), "{}", e.message);
}

#[test]
fn gpu_define_adds_a_model_that_every_gpu_option_knows() {
    let p = |s: &str| parse_line(s).unwrap_or_else(|e| panic!("{s}: {e:?}"));
    match p("%gpu define RTX 2080 Ti sms=68 clock_mhz=1545 dram_gb_s=616 l2_mib=5.5 cc=7.5") {
        Command::GpuDefine { name, figures } => {
            assert_eq!(name.text, "RTX 2080 Ti");
            let keys: Vec<&str> = figures.iter().map(|(k, _)| k.text.as_str()).collect();
            assert_eq!(keys, ["sms", "clock_mhz", "dram_gb_s", "l2_mib", "cc"]);
            assert_eq!(figures[3].1.text, "5.5");
        }
        c => panic!("{c:?}"),
    }
    assert!(parse_line("%gpu define sms=1").is_err(), "no name");
    assert!(parse_line("%gpu define X sms=1 oops").is_err());
    assert!(parse_line("%gpu define X sms=").is_err());

    let mut s = Session::new();
    // Random figures, so that nothing in the output can be hard-coded.
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(7);
    let sms = 20 + seed % 100;
    let bw = 200 + seed % 1000;
    let t = s.ok_text(&format!(
        "%gpu define Lab GPU {seed} sms={sms} clock_mhz=1800 dram_gb_s={bw} l2_mib=8 cc=8.6"
    ));
    assert!(
        t.contains(&format!("defined Lab GPU {seed} (sm_86, {sms} SMs")),
        "{t}"
    );
    let t = s.ok_text("%gpu");
    assert!(t.contains(&format!("Lab GPU {seed}")), "{t}");
    s.ok_text(&format!("%gpu lab gpu {seed}"));
    let g = s.m.dev.gpu_model();
    assert_eq!((g.sms, g.sm, g.dram_gb_s), (sms, 86, f64::from(bw)));
    assert_eq!(g.max_warps_per_sm, 48, "the per-SM limits of cc 8.6");
    // Redefined: the modelled one follows.
    let t = s.ok_text(&format!(
        "%gpu define Lab GPU {seed} sms={} clock_mhz=1800 dram_gb_s={bw} l2_mib=8 cc=8.6",
        sms + 1
    ));
    assert!(t.starts_with("redefined"), "{t}");
    assert_eq!(s.m.dev.gpu_model().sms, sms + 1);
    // Errors name the figure.
    let e = s.err("%gpu define X sms=10 clock_mhz=1000 dram_gb_s=100 l2_mib=2");
    assert_eq!(e.ename, "ArgumentError");
    assert!(e.message.contains("lacks cc"), "{}", e.message);
    let e = s.err("%gpu define X sms=ten clock_mhz=1000 dram_gb_s=100 l2_mib=2 cc=8.0");
    assert!(
        e.message.contains("sms=ten is not a number"),
        "{}",
        e.message
    );
    let e = s.err("%gpu define X sms=10 clock_mhz=1000 dram_gb_s=100 l2_mib=2 cc=8.0 speed=3");
    assert!(
        e.message.contains("unknown figure 'speed'"),
        "{}",
        e.message
    );
    let e = s.err("%gpu define X sms=0 clock_mhz=1000 dram_gb_s=100 l2_mib=2 cc=8.0");
    assert!(
        e.message.contains("sms = 0 is out of range"),
        "{}",
        e.message
    );
    let e = s.err("%gpu define X sms=10 clock_mhz=1000 dram_gb_s=100 l2_mib=2 cc=3.0");
    assert!(
        e.message.contains("cc = 3 is out of range"),
        "{}",
        e.message
    );
    let e = s.err("%gpu Z80");
    assert!(e.message.contains("%gpu define"), "{}", e.message);
}
