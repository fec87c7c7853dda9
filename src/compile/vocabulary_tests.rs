//! Every name in NVRTC's PTX is one ptxsim knows (issue 36: `warpSize` once made ptxsim refuse
//! whole modules with "unknown name `WARP_SZ`").
//!
//! A broad kernel set (the conformance corpus of public kernels, ptxsim's own kernels and test
//! sources, every `%%cuda` cell of the tutorial notebooks, and `tests/ptx_vocabulary/`, which
//! uses each device intrinsic, special register and memory qualifier once) is compiled by the
//! real NVRTC for the oldest, the default and the newest architecture of ptxsim's GPU table. Its PTX is searched for every
//! predefined identifier (`%`-names that no `.reg` declares, and `WARP_SZ`), each of which
//! must be one [`ptxsim::is_predefined_name`] knows, and every module must load in ptxsim. All
//! the gaps are listed in one failure, not the first alone.

use super::tests::nvrtc_available;
use super::*;
use crate::gpu::CudaOptions;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// The oldest architecture of ptxsim's GPU table (V100), ptxsim's default (A100) and the newest
/// (H100/H200). The others (7.5, 8.6, 8.9) add no PTX of their own to what these emit; three,
/// not six, keep the test near 40 s on a 2-core machine.
const ARCHS: [&str; 3] = ["compute_70", "compute_80", "compute_90"];

/// One CUDA source of the kernel set.
struct Source {
    /// Where it comes from, for messages: a file, or a notebook and its cell.
    origin: String,
    text: String,
    options: CudaOptions,
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn cu_files(dir: &str) -> Vec<Source> {
    let mut paths: Vec<_> = std::fs::read_dir(repo().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| Source {
            origin: p.strip_prefix(repo()).unwrap_or(&p).display().to_string(),
            text: std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
            options: CudaOptions::default(),
        })
        .collect()
}

/// Every `%%cuda` cell of the tutorial notebooks, with its header's options.
fn notebook_cells() -> Vec<Source> {
    let mut out = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(repo().join("notebooks"))
        .expect("notebooks/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ipynb"))
        .collect();
    paths.sort();
    for p in paths {
        let nb: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).expect("notebook")).expect("json");
        let cells = nb["cells"].as_array().cloned().unwrap_or_default();
        for (i, cell) in cells.iter().enumerate() {
            // Cells that fail on purpose (tagged as nbclient expects) are no kernel set.
            let tags = cell["metadata"]["tags"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if cell["cell_type"] != "code" || tags.iter().any(|t| t == "raises-exception") {
                continue;
            }
            let code: String = match &cell["source"] {
                serde_json::Value::Array(lines) => {
                    lines.iter().filter_map(|l| l.as_str()).collect()
                }
                serde_json::Value::String(s) => s.clone(),
                _ => continue,
            };
            for seg in crate::kernel::cells::split_cell(&code) {
                if let crate::kernel::cells::Segment::CellMagic { header, body, .. } = seg {
                    if !header.starts_with("%%cuda") {
                        continue;
                    }
                    let h = crate::magics::parse::parse_cuda_header(&header)
                        .unwrap_or_else(|e| panic!("{}: cell {i}: {e:?}", p.display()));
                    out.push(Source {
                        origin: format!(
                            "{} cell {i}",
                            p.file_name().unwrap_or_default().to_string_lossy()
                        ),
                        text: body,
                        options: CudaOptions {
                            name: h.name,
                            defines: h.defines,
                            std: h.std,
                            fast_math: h.fast_math,
                            device_debug: h.device_debug,
                            arch: None,
                        },
                    });
                }
            }
        }
    }
    out
}

/// The `%`-names a PTX module declares with `.reg`: exact names, and `%r<N>` ranges as
/// (prefix, N).
fn declared_registers(ptx: &str) -> (BTreeSet<String>, HashMap<String, u64>) {
    let (mut exact, mut ranges) = (BTreeSet::new(), HashMap::new());
    for line in ptx.lines() {
        let Some(rest) = line.trim().strip_prefix(".reg") else {
            continue;
        };
        // `.reg .b32 %r<23>;`, `.reg .pred %p;`, `.reg .f32 %f1, %f2;`, `.reg .v4 .b32 %v;`
        let names = rest.trim_end_matches(';');
        for tok in names.split([' ', ',', '\t']).filter(|t| t.starts_with('%')) {
            match tok.split_once('<') {
                Some((prefix, n)) => {
                    let n: u64 = n.trim_end_matches('>').parse().unwrap_or(0);
                    let e = ranges.entry(prefix.to_string()).or_insert(0);
                    *e = (*e).max(n);
                }
                None => {
                    exact.insert(tok.to_string());
                }
            }
        }
    }
    (exact, ranges)
}

/// Predefined identifiers a PTX module uses: `%`-names (with `.x/.y/.z` where they have one)
/// that no `.reg` declares, and `WARP_SZ`. Comments and strings are skipped.
fn predefined_names(ptx: &str) -> BTreeSet<String> {
    let (exact, ranges) = declared_registers(ptx);
    let declared = |n: &str| {
        if exact.contains(n) {
            return true;
        }
        let digits = n.len() - n.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (prefix, num) = n.split_at(n.len() - digits);
        !num.is_empty()
            && ranges
                .get(prefix)
                .is_some_and(|&r| num.parse().unwrap_or(u64::MAX) < r)
    };
    let mut out = BTreeSet::new();
    for line in ptx.lines() {
        let code = line.split("//").next().unwrap_or("");
        let t = code.trim_start();
        if t.starts_with(".reg") || t.starts_with(".loc") || t.starts_with(".file") {
            continue;
        }
        let b = code.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let ident_start = b[i] == b'%' || b[i].is_ascii_alphabetic() || b[i] == b'_';
            if !ident_start
                || (i > 0
                    && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'$'))
            {
                i += 1;
                continue;
            }
            let start = i;
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$') {
                i += 1;
            }
            // `%tid.x`: a dimension suffix belongs to the name.
            if b[start] == b'%'
                && i + 1 < b.len()
                && b[i] == b'.'
                && matches!(b[i + 1], b'x' | b'y' | b'z' | b'w')
                && (i + 2 >= b.len() || !b[i + 2].is_ascii_alphanumeric())
            {
                i += 2;
            }
            let tok = &code[start..i];
            if tok == "WARP_SZ" || (tok.starts_with('%') && !declared(tok)) {
                out.insert(tok.to_string());
            }
        }
    }
    out
}

#[test]
fn the_scanner_finds_undeclared_percent_names_and_warp_sz() {
    let ptx = ".reg .b32 %r<4>;\n.reg .b64 %SP;\nmov.u32 %r3, %tid.x; // %not_this\n\
               add.s32 %r4, %r1, WARP_SZ;\nmov.u64 %SP, %clock64;\nmov.u32 %r1, %envreg3;";
    let found: Vec<_> = predefined_names(ptx).into_iter().collect();
    // %r4 is beyond %r<4> (which declares %r0..%r3).
    assert_eq!(found, ["%clock64", "%envreg3", "%r4", "%tid.x", "WARP_SZ"]);
}

#[test]
fn every_name_in_nvrtc_ptx_of_a_broad_kernel_set_is_known_to_ptxsim() {
    if !nvrtc_available() {
        return;
    }
    let mut sources = Vec::new();
    for dir in [
        "tests/ptx_vocabulary",
        "tests/corpus",
        "crates/ptxsim/kernels",
        "crates/ptxsim/src/tests/ptx",
    ] {
        sources.extend(cu_files(dir));
    }
    let cells = notebook_cells();
    assert!(
        cells.len() >= 15,
        "only {} %%cuda cells in notebooks/",
        cells.len()
    );
    sources.extend(cells);
    assert!(sources.len() >= 60, "only {} sources", sources.len());

    let compiler = Compiler::new(None);
    let device = ptxsim::Device::new();
    // name -> where it was seen first
    let mut unknown: BTreeMap<String, String> = BTreeMap::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut load_failures = Vec::new();
    let mut compile_failures = Vec::new();
    let (mut modules, mut opcodes) = (0usize, BTreeSet::new());
    for src in &sources {
        let mut compiled_somewhere = false;
        let mut first_error = String::new();
        for arch in ARCHS {
            let input = CompileInput {
                source: &src.text,
                options: &src.options,
                first_line: 1,
                name_expressions: Vec::new(),
                target: Target::Ptx {
                    arch: arch.to_string(),
                },
            };
            let ptx = match compiler.compile(&input) {
                Ok(c) => c.ptx,
                Err(e) => {
                    // Features of a newer architecture (bf16 arithmetic, redux.sync, tensor
                    // cores) do not compile for an older one; the source must compile for some.
                    if first_error.is_empty() {
                        first_error = format!("{arch}: {e}");
                    }
                    continue;
                }
            };
            compiled_somewhere = true;
            modules += 1;
            for line in ptx.lines() {
                let t = line.trim_start();
                let t = t
                    .strip_prefix('@')
                    .map_or(t, |r| r.split_once(' ').map_or(r, |x| x.1));
                if let Some(op) = t.split_whitespace().next() {
                    if op.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
                        opcodes.insert(op.trim_end_matches(';').to_string());
                    }
                }
            }
            for name in predefined_names(&ptx) {
                seen.insert(name.clone());
                if !ptxsim::is_predefined_name(&name) {
                    unknown
                        .entry(name)
                        .or_insert_with(|| format!("{} ({arch})", src.origin));
                }
            }
            if let Err(e) = device.load_module(&ptx) {
                load_failures.push(format!("{} ({arch}): {e}", src.origin));
            }
        }
        if !compiled_somewhere {
            compile_failures.push(format!("{}: {first_error}", src.origin));
        }
    }
    eprintln!(
        "{} sources, {modules} modules, {} distinct instruction forms, predefined names: {:?}",
        sources.len(),
        opcodes.len(),
        seen
    );
    let mut problems = Vec::new();
    if !compile_failures.is_empty() {
        problems.push(format!(
            "sources that compile for no architecture:\n  {}",
            compile_failures.join("\n  ")
        ));
    }
    if !unknown.is_empty() {
        problems.push(format!(
            "predefined names ptxsim does not know:\n  {}",
            unknown
                .iter()
                .map(|(n, at)| format!("{n}  (first in {at})"))
                .collect::<Vec<_>>()
                .join("\n  ")
        ));
    }
    if !load_failures.is_empty() {
        problems.push(format!(
            "modules ptxsim refuses:\n  {}",
            load_failures.join("\n  ")
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The set is broad: the names the special-register test of ptxsim checks one by one appear
    // here in real NVRTC output.
    for must in [
        "%tid.x",
        "%laneid",
        "%clock64",
        "%globaltimer",
        "WARP_SZ",
        "%lanemask_lt",
    ] {
        assert!(seen.contains(must), "{must} not in the kernel set's PTX");
    }
}
