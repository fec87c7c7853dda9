//! CUBIN resources of real NVRTC-compiled kernels, checked against hand-known values and against
//! an independent reading of the same CUBIN by binutils' `readelf` (section sizes and `sh_info`,
//! the `.nv.info` bytes); skipped with a message when NVRTC or `readelf` is missing.

use super::*;
use crate::compile::tests::{nvrtc_available, temp_cache};
use std::process::Command;

/// Kernels with known resources: registers (`heavy`), shared memory (`tiled`), spills (`spills`);
/// also compiled by the `%info` tests.
pub(crate) const SRC: &str = r#"
__global__ void heavy(const int* idx, float* out, int n) {
    float local[64];
    for (int i = 0; i < 64; i++) local[i] = out[i] * i;
    out[threadIdx.x] = local[idx[threadIdx.x] & 63];
}
__global__ void tiled(const float* a, float* b) {
    __shared__ float tile[32][33];
    tile[threadIdx.y][threadIdx.x] = a[threadIdx.y * 32 + threadIdx.x];
    __syncthreads();
    b[threadIdx.x * 32 + threadIdx.y] = tile[threadIdx.x][threadIdx.y];
}
__global__ void spills(const int* idx, float* out) {
    float local[256];
    for (int i = 0; i < 256; i++) local[i] = out[i + threadIdx.x];
    out[threadIdx.x] = local[idx[threadIdx.x] & 255] + local[idx[threadIdx.x + 1] & 255];
}
__global__ void __launch_bounds__(256) bounded(float* x) { x[threadIdx.x] += 1.0f; }
"#;

const NAMES: [&str; 4] = ["heavy", "tiled", "spills", "bounded"];

fn compile(arch: &str, compiler: &Compiler) -> (CubinResources, Compiled) {
    let opts = CudaOptions::default();
    let exprs = NAMES.iter().map(|n| format!("&{n}")).collect();
    match compile_resources(compiler, SRC, &opts, 1, exprs, arch) {
        Ok(r) => r,
        Err(e) => panic!("{arch}: {e}"),
    }
}

fn lowered<'a>(c: &'a Compiled, name: &str) -> &'a str {
    let expr = format!("&{name}");
    match c.lowered.iter().find(|(e, _)| *e == expr) {
        Some((_, l)) => l,
        None => panic!("{name} not lowered"),
    }
}

fn kernel<'a>(r: &'a CubinResources, c: &Compiled, name: &str) -> &'a KernelResources {
    match r.kernel(lowered(c, name)) {
        Some(k) => k,
        None => panic!("{name} not in the CUBIN: {:?}", r.kernels),
    }
}

fn readelf(args: &[&str], file: &std::path::Path) -> Option<String> {
    let out = Command::new("readelf").args(args).arg(file).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `readelf -S -W`: section name → (size, sh_info).
fn readelf_sections(file: &std::path::Path) -> Option<HashMap<String, (u64, u64)>> {
    let text = readelf(&["-S", "-W"], file)?;
    let mut out = HashMap::new();
    for line in text.lines() {
        let Some((head, rest)) = line.split_once(']') else {
            continue;
        };
        if !head.trim_start().starts_with('[') {
            continue;
        }
        let words: Vec<&str> = rest.split_whitespace().collect();
        // Name Type Address Off Size ES [Flg] Lk Inf Al
        if words.len() < 9 || words[2].len() < 8 {
            continue;
        }
        let size = u64::from_str_radix(words[4], 16).ok()?;
        let info: u64 = words[words.len() - 2].parse().ok()?;
        out.insert(words[0].to_string(), (size, info));
    }
    Some(out)
}

/// `readelf -s -W`: symbol name → index.
fn readelf_symbols(file: &std::path::Path) -> Option<HashMap<String, u32>> {
    let text = readelf(&["-s", "-W"], file)?;
    let mut out = HashMap::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let (Some(num), Some(name)) = (words.first(), words.last()) {
            if let Ok(n) = num.trim_end_matches(':').parse::<u32>() {
                out.insert(name.to_string(), n);
            }
        }
    }
    Some(out)
}

/// The bytes of a section from `readelf -x NAME` (its hex dump).
fn readelf_bytes(file: &std::path::Path, section: &str) -> Option<Vec<u8>> {
    let text = readelf(&["-x", section], file)?;
    let mut bytes = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if !t.starts_with("0x") {
            continue;
        }
        // "0x00000000 042f0800 0f000000 0c000000 04110800 ...ascii"
        for word in t.split_whitespace().skip(1).take(4) {
            if word.len() % 2 != 0 || !word.chars().all(|c| c.is_ascii_hexdigit()) {
                break;
            }
            for i in (0..word.len()).step_by(2) {
                bytes.push(u8::from_str_radix(&word[i..i + 2], 16).ok()?);
            }
        }
    }
    Some(bytes)
}

/// `(symbol index, value)` of the 8-byte `.nv.info` records with attribute `attr`, scanning the
/// raw bytes (format 0x04, attribute, size 0x0008, index, value).
fn nv_info_values(bytes: &[u8], attr: u8) -> HashMap<u32, u32> {
    let mut out = HashMap::new();
    for rec in bytes.chunks_exact(12) {
        if rec[0] == 4 && rec[1] == attr && rec[2] == 8 && rec[3] == 0 {
            let sym = u32::from_le_bytes([rec[4], rec[5], rec[6], rec[7]]);
            let val = u32::from_le_bytes([rec[8], rec[9], rec[10], rec[11]]);
            out.insert(sym, val);
        }
    }
    out
}

#[test]
fn cubin_resources_match_readelf_on_sm75_and_sm90() {
    if !nvrtc_available() {
        return;
    }
    let compiler = Compiler::new(None);
    let mut heavy_regs = Vec::new();
    for (arch, sm) in [("sm_75", 75), ("sm_90", 90)] {
        let t = std::time::Instant::now();
        let (r, c) = compile(arch, &compiler);
        eprintln!(
            "{arch}: CUBIN of {} kernels in {:.0} ms (read in {:.2} ms total)",
            NAMES.len(),
            c.compile_ms,
            t.elapsed().as_secs_f64() * 1e3 - c.compile_ms
        );
        assert_eq!(r.arch, Some(sm));
        let heavy = kernel(&r, &c, "heavy");
        let tiled = kernel(&r, &c, "tiled");
        let spills = kernel(&r, &c, "spills");
        let bounded = kernel(&r, &c, "bounded");
        for k in [heavy, tiled, spills, bounded] {
            eprintln!("{arch}: {k:?}");
            assert!(k.registers > 0 && k.registers <= 255, "{k:?}");
        }
        heavy_regs.push(heavy.registers);
        assert_eq!(tiled.static_shared_bytes, 32 * 33 * 4); // 4224
        assert_eq!(heavy.static_shared_bytes, 0);
        assert_eq!(bounded.static_shared_bytes, 0);
        assert!(spills.local_bytes >= 1024, "{spills:?}"); // float[256], indexed at run time
        assert_eq!(tiled.local_bytes, 0);
        assert_eq!(bounded.max_threads, Some(256));
        assert_eq!(tiled.max_threads, None);

        // The same CUBIN, read by readelf.
        let file = temp_cache(&format!("cubin-{arch}"));
        let Some(cubin) = c.cubin.as_deref() else {
            panic!("no CUBIN");
        };
        if std::fs::write(&file, cubin).is_err() {
            panic!("cannot write {}", file.display());
        }
        let (Some(sections), Some(symbols), Some(info)) = (
            readelf_sections(&file),
            readelf_symbols(&file),
            readelf_bytes(&file, ".nv.info"),
        ) else {
            eprintln!("SKIPPED the readelf comparison: readelf not found or failed");
            let _ = std::fs::remove_file(&file);
            continue;
        };
        let _ = std::fs::remove_file(&file);
        let regcount = nv_info_values(&info, 0x2f);
        let frame = nv_info_values(&info, 0x11);
        let reserved = if sections.contains_key(".nv.shared.reserved.0") {
            1024
        } else {
            0
        };
        assert_eq!(reserved, if sm == 90 { 1024 } else { 0 });
        for name in NAMES {
            let low = lowered(&c, name);
            let k = kernel(&r, &c, name);
            let sym = symbols.get(low).copied().unwrap_or(u32::MAX);
            assert_eq!(
                regcount.get(&sym).copied(),
                Some(k.registers),
                "{arch} {name}"
            );
            assert_eq!(
                frame.get(&sym).copied(),
                Some(k.local_bytes),
                "{arch} {name}"
            );
            let shared = sections
                .get(&format!(".nv.shared.{low}"))
                .map(|s| s.0)
                .unwrap_or(0);
            assert_eq!(
                shared.saturating_sub(reserved),
                u64::from(k.static_shared_bytes),
                "{arch} {name}"
            );
            if sm == 75 {
                // sm_75 CUBINs also keep the count in the high byte of `.text.<name>`'s sh_info.
                let info = sections.get(&format!(".text.{low}")).map(|s| s.1);
                assert_eq!(
                    info.map(|i| i >> 24),
                    Some(u64::from(k.registers)),
                    "{name}"
                );
            }
        }
    }
    eprintln!(
        "heavy: {} registers on sm_75, {} on sm_90",
        heavy_regs[0], heavy_regs[1]
    );
    assert_ne!(
        heavy_regs[0], heavy_regs[1],
        "register counts differ by architecture"
    );
}

#[test]
fn cubin_resources_are_cached_per_arch() {
    if !nvrtc_available() {
        return;
    }
    let dir = temp_cache("cubin-cache");
    let compiler = Compiler::new(Some(dir.clone()));
    let (a, ca) = compile("sm_80", &compiler);
    let (b, cb) = compile("sm_80", &compiler);
    let (_, cc) = compile("sm_86", &compiler);
    assert!(!ca.cache_hit && cb.cache_hit && !cc.cache_hit);
    assert_eq!(a, b);
    eprintln!(
        "sm_80 CUBIN: {:.0} ms compiled, {:.1} ms from the cache",
        ca.compile_ms, cb.compile_ms
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn cubin_reader_rejects_non_elf() {
    assert!(read_cubin(b"not an elf").is_err());
    assert!(read_cubin(&[]).is_err());
    assert!(nv_info_records(&[4, 0x2f, 0xff, 0xff, 1]).is_empty());
    assert_eq!(nv_info_records(&[3, 0x1b, 0xff, 0, 9, 9]).len(), 1);
}
