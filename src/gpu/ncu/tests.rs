//! The ncu report reader on output in the format ncu prints (2023.x/2024.x details page with
//! launch columns, an older one without, the raw page), and the failures' one-liners.

use super::*;

const HEADER: &str = r#""ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value""#;

/// What `ncu --csv --print-units base --metrics … nbcuda gpu-worker` prints for one launch of
/// `vadd` (2024.x): ==PROF== lines, then the details page.
fn details_2024() -> String {
    let row = |m: &str, unit: &str, v: &str| {
        format!(
            r#""0","48211","nbcuda","127.0.0.1","vadd","1","7","(256, 1, 1)","(40, 1, 1)","0","9.0","Command line profiler metrics","{m}","{unit}","{v}""#
        )
    };
    [
        "==PROF== Connected to process 48211 (/opt/nbcuda/bin/nbcuda)".to_string(),
        r#"==PROF== Profiling "vadd" - 0: 0%....50%....100% - 9 passes"#.to_string(),
        "==PROF== Disconnected from process 48211".to_string(),
        HEADER.to_string(),
        row("dram__bytes_read.sum", "byte", "81,920"),
        row("dram__bytes_write.sum", "byte", "40,960"),
        row("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "", "640"),
        row(
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
            "sector",
            "2,560",
        ),
        row("launch__registers_per_thread", "register/thread", "16"),
        row(
            "smsp__thread_inst_executed_per_inst_executed.ratio",
            "",
            "31.75",
        ),
        row(
            "sm__warps_active.avg.pct_of_peak_sustained_active",
            "%",
            "12.34",
        ),
        row("smsp__inst_executed_pipe_tensor.sum", "inst", "n/a"),
        row("gpu__time_duration.sum", "nsecond", "3,456"),
    ]
    .join("\n")
        + "\n"
}

#[test]
fn csv_lines_split_with_quotes_and_commas_inside() {
    assert_eq!(
        split_csv_line(r#""0","(256, 1, 1)","1,024","say ""hi""""#).unwrap(),
        vec!["0", "(256, 1, 1)", "1,024", r#"say "hi""#]
    );
    assert_eq!(split_csv_line("a,,b").unwrap(), vec!["a", "", "b"]);
    assert_eq!(split_csv_line(r#""open"#), None);
}

#[test]
fn values_lose_thousands_separators_and_get_base_units() {
    assert_eq!(parse_value("1,024", ""), Some(1024.0));
    assert_eq!(parse_value("1,234,567.5", "byte"), Some(1234567.5));
    assert_eq!(parse_value("3.5", "Kbyte"), Some(3500.0));
    assert_eq!(parse_value("2", "Mbyte/second"), Some(2e6));
    assert_eq!(parse_value("12.5", "%"), Some(12.5));
    assert_eq!(parse_value("7", "register/thread"), Some(7.0));
    // Durations in nanoseconds, as ptxsim's gpu__time_duration.sum.
    assert_eq!(parse_value("5", "usecond"), Some(5000.0));
    assert_eq!(parse_value("3,456", "nsecond"), Some(3456.0));
    assert_eq!(parse_value("1.5", "msecond"), Some(1.5e6));
    assert_eq!(parse_value("0.002", "second"), Some(2e6));
    assert_eq!(parse_value("1,500", "psecond"), Some(1.5));
    assert_eq!(parse_value("1e+06", "inst"), Some(1e6));
    assert_eq!(parse_value("n/a", ""), None);
    assert_eq!(parse_value("", ""), None);
}

#[test]
fn details_page_of_ncu_2024_is_read_metric_by_metric() {
    let r = parse_report(&details_2024());
    assert_eq!(r.len(), 1, "{r:?}");
    let k = &r[0];
    assert_eq!((k.id.as_str(), k.name.as_str()), ("0", "vadd"));
    let m = &k.metrics;
    assert_eq!(m["dram__bytes_read.sum"], 81920.0);
    assert_eq!(m["dram__bytes_write.sum"], 40960.0);
    assert_eq!(m["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"], 640.0);
    assert_eq!(m["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"], 2560.0);
    assert_eq!(m["launch__registers_per_thread"], 16.0);
    assert_eq!(
        m["smsp__thread_inst_executed_per_inst_executed.ratio"],
        31.75
    );
    assert_eq!(
        m["sm__warps_active.avg.pct_of_peak_sustained_active"],
        12.34
    );
    assert_eq!(m["gpu__time_duration.sum"], 3456.0);
    assert_eq!(k.missing, vec!["smsp__inst_executed_pipe_tensor.sum"]);
}

#[test]
fn several_launches_and_an_older_header_without_launch_columns() {
    // ncu 2021/2022: no Process/Block/Grid/Device columns; two launches, a template kernel.
    let text = r#"==PROF== Connected to process 77 (/usr/bin/nbcuda)
"ID","Kernel Name","Context","Stream","Section Name","Metric Name","Metric Unit","Metric Value"
"0","warmup","1","7","Command line profiler metrics","smsp__inst_executed.sum","inst","12"
"1","scale<float>","1","7","Command line profiler metrics","smsp__inst_executed.sum","inst","1,536"
"1","scale<float>","1","7","Command line profiler metrics","launch__grid_size","","48"
"2","other","1","7","Command line profiler metrics","smsp__inst_executed.sum","inst","5"
"#;
    let r = parse_report(text);
    assert_eq!(r.len(), 3);
    assert_eq!(r[1].metrics["smsp__inst_executed.sum"], 1536.0);
    assert_eq!(r[1].metrics["launch__grid_size"], 48.0);
    assert_eq!(
        pick_launch(&r, "scale<float>").map(|k| k.id.as_str()),
        Some("1")
    );
    assert_eq!(pick_launch(&r, "scale").map(|k| k.id.as_str()), Some("1"));
    // No launch of that name: the last one.
    assert_eq!(pick_launch(&r, "nothere").map(|k| k.id.as_str()), Some("2"));
    // Demangled names with parameters and namespaces match too.
    let d = vec![NcuKernel {
        id: "0".into(),
        name: "ns::blur(const float *, float *, int)".into(),
        ..NcuKernel::default()
    }];
    assert_eq!(pick_launch(&d, "blur").map(|k| k.id.as_str()), Some("0"));
    assert!(pick_launch(&[], "blur").is_none());
}

#[test]
fn raw_page_is_read_column_by_column_with_its_units_row() {
    let text = r#""ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum","launch__grid_size","smsp__inst_executed.sum"
"","","","","","","","","","","","Kbyte","","inst"
"0","9","nbcuda","h","vadd","1","7","(128, 1, 1)","(8, 1, 1)","0","8.0","4.10","8","1,200"
"#;
    let r = parse_report(text);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].name, "vadd");
    assert!((r[0].metrics["dram__bytes_read.sum"] - 4100.0).abs() < 1e-9);
    assert_eq!(r[0].metrics["launch__grid_size"], 8.0);
    assert_eq!(r[0].metrics["smsp__inst_executed.sum"], 1200.0);
    assert_eq!(r[0].metrics.len(), 3);
}

#[test]
fn the_permission_error_is_recognised_and_explained_in_one_line() {
    let text = "==PROF== Connected to process 4242 (/opt/nbcuda/bin/nbcuda)\n\
        ==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU \
        Performance Counters on the target device 0. For instructions on enabling permissions \
        and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n\
        ==PROF== Disconnected from process 4242\n\
        ==WARNING== No kernels were profiled.\n";
    assert!(refused(text));
    assert!(parse_report(text).is_empty());
    let m = NcuFailure::Refused.message();
    assert!(!m.contains('\n'));
    assert!(m.contains("ERR_NVGPUCTRPERM"), "{m}");
    assert!(m.contains("NVreg_RestrictProfilingPermission=0"), "{m}");
    assert!(m.contains("SYS_ADMIN") && m.contains("root"), "{m}");
    assert!(m.ends_with("showing ptxsim's counters only"), "{m}");
    assert!(!refused("==PROF== Disconnected from process 4242"));
}

#[test]
fn unknown_metric_names_are_read_from_ncu_errors() {
    let requested: Vec<String> = [
        "smsp__inst_executed.sum",
        "sm__sass_inst_executed_op_fp32.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum_per_request",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let text = "==ERROR== Failed to find metric sm__sass_inst_executed_op_fp32.sum\n\
                ==ERROR== Failed to find metric regex:^l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum_per_request$\n";
    assert_eq!(
        unknown_metrics(text, &requested),
        vec![
            "sm__sass_inst_executed_op_fp32.sum",
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum_per_request"
        ]
    );
    assert!(unknown_metrics(&details_2024(), &requested).is_empty());
}

#[test]
fn last_lines_skip_csv_rows_and_blank_lines() {
    let text = "a\n\n\"x\",\"y\"\nb\nc\n";
    assert_eq!(last_lines(text, 2), "b | c");
    assert_eq!(last_lines("", 3), "(no output)");
}

#[test]
fn the_program_is_the_env_override_then_path() {
    let dir = std::env::temp_dir().join(format!("nbcuda-ncu-find-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fake = dir.join("ncu");
    std::fs::write(&fake, "#!/bin/sh\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = Some(dir.clone().into_os_string());
    assert_eq!(find_program(None, path.clone()).unwrap(), fake);
    assert_eq!(find_program(Some(fake.clone()), None).unwrap(), fake);
    // A bare name in NBCUDA_NCU is looked up on PATH.
    assert_eq!(
        find_program(Some(PathBuf::from("ncu")), path.clone()).unwrap(),
        fake
    );
    let missing = dir.join("no-such-ncu");
    let e = find_program(Some(missing.clone()), path).unwrap_err();
    assert!(
        e.contains("NBCUDA_NCU=") && e.contains("no-such-ncu"),
        "{e}"
    );
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    if !Path::new("/usr/local/cuda/bin/ncu").exists() {
        let e = find_program(None, Some(empty.into_os_string())).unwrap_err();
        assert!(e.contains("not on PATH") && e.contains(NCU_ENV), "{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn arguments_ask_for_csv_in_base_units_of_the_given_metrics() {
    let a = arguments(
        &["a.sum".to_string(), "b.ratio".to_string()],
        Path::new("/tmp/x.csv"),
    );
    let s = a.join(" ");
    assert!(s.contains("--csv"));
    assert!(s.contains("--print-units base"));
    assert!(s.contains("--log-file /tmp/x.csv"));
    assert!(s.contains("--metrics a.sum,b.ratio"));
    assert!(s.contains("--target-processes all"));
}
