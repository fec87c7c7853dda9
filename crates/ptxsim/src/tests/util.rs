//! Helpers for the engine tests: a tiny deterministic RNG, typed device buffers, and launches
//! of `name(in, out, extra…)` kernels with the block tier allowed or not.

use crate::{Device, DevicePtr, Dim3, Engines, LaunchConfig, Module};
#[cfg(feature = "accel")]
use crate::{JitMode, LaunchError, LaunchReport};

/// A launch of `grid` blocks of `block` threads with the engines the `PTXSIM_*` variables
/// choose (the defaults when unset; `PTXSIM_JIT=always PTXSIM_CPU=avx2 cargo test` reruns these
/// tests under one other setting by hand): the tests' edge, where the environment is read.
pub fn config(grid: Dim3, block: Dim3) -> LaunchConfig {
    let mut c = LaunchConfig::new(grid, block);
    c.engines = Engines::from_vars(|k| std::env::var(k).ok());
    c
}

/// xorshift64*: deterministic "fresh random" inputs without a dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn f32(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A fresh seed per run, printed so that a failure can be replayed (`PTXSIM_SEED=…`).
pub fn seed() -> u64 {
    let s = std::env::var("PTXSIM_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        });
    eprintln!("random seed {s} (replay with PTXSIM_SEED={s})");
    s
}

pub fn upload_f32(dev: &Device, v: &[f32]) -> DevicePtr {
    let p = dev.alloc(v.len() * 4).unwrap();
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    dev.write(p, 0, &bytes).unwrap();
    p
}

pub fn upload_u32(dev: &Device, v: &[u32]) -> DevicePtr {
    let p = dev.alloc(v.len() * 4).unwrap();
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    dev.write(p, 0, &bytes).unwrap();
    p
}

pub fn download_f32(dev: &Device, p: DevicePtr, n: usize) -> Vec<f32> {
    let mut b = vec![0u8; n * 4];
    dev.read(p, 0, &mut b).unwrap();
    b.chunks(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

pub fn download_u32(dev: &Device, p: DevicePtr, n: usize) -> Vec<u32> {
    let mut b = vec![0u8; n * 4];
    dev.read(p, 0, &mut b).unwrap();
    b.chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

pub fn p64(p: DevicePtr) -> [u8; 8] {
    p.to_le_bytes()
}

pub fn upload_i32(dev: &Device, v: &[i32]) -> DevicePtr {
    let u: Vec<u32> = v.iter().map(|&x| x as u32).collect();
    upload_u32(dev, &u)
}

pub fn download_i32(dev: &Device, p: DevicePtr, n: usize) -> Vec<i32> {
    download_u32(dev, p, n)
        .into_iter()
        .map(|x| x as i32)
        .collect()
}

pub fn i32b(v: i32) -> [u8; 4] {
    v.to_le_bytes()
}

/// Launch and expect success without check reports.
pub fn run(
    dev: &Device,
    m: &crate::Module,
    k: &str,
    grid: crate::Dim3,
    block: crate::Dim3,
    args: &[&[u8]],
) -> crate::LaunchReport {
    let r = dev
        .launch(m, k, &config(grid, block), args)
        .unwrap_or_else(|e| panic!("{k}: {e:?}"));
    assert!(r.reports.is_empty(), "{k}: {:#?}", r.reports);
    r
}

/// Launch `k` with a cancel flag that another thread raises `after` the start, expecting the
/// launch to stop with a fault: returns the report and the seconds from raising the flag to the
/// launch's return.
pub fn launch_cancelled_after(
    dev: &Device,
    m: &crate::Module,
    k: &str,
    mut cfg: crate::LaunchConfig,
    args: &[&[u8]],
    after: std::time::Duration,
) -> (crate::CheckReport, f64) {
    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    cfg.cancel = Some(cancel.clone());
    let h = std::thread::spawn(move || {
        std::thread::sleep(after);
        cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        std::time::Instant::now()
    });
    let e = dev.launch(m, k, &cfg, args).unwrap_err();
    let stopped = std::time::Instant::now();
    let raised = h.join().unwrap();
    let crate::LaunchError::Fault { report, .. } = e else {
        panic!("{k}: {e:?}")
    };
    (*report, stopped.duration_since(raised).as_secs_f64())
}

/// Thread `%r1 = ctaid.x * ntid.x + tid.x` (clobbers `%r2`, `%r3`); threads `>= %r5` go to
/// `DONE`.
pub const INDEX_GUARD: &str = "  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mad.lo.u32 %r1, %r2, %r3, %r1;
  setp.ge.u32 %p1, %r1, %r5;
  @%p1 bra DONE;
";

/// Every PTX fixture (`tests/fixtures/*.ptx`) loaded, with its file name.
pub fn fixture_modules(dev: &Device) -> Vec<(String, Module)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|x| x != "ptx") {
            continue;
        }
        let m = dev
            .load_module(&std::fs::read_to_string(&path).unwrap())
            .unwrap();
        out.push((path.display().to_string(), m));
    }
    out
}

#[cfg(feature = "accel")]
/// What `launch_in_out` gives back: the output words, and the launch's result.
pub struct TierRun {
    pub out: Vec<u32>,
    pub result: Result<LaunchReport, LaunchError>,
}

#[cfg(feature = "accel")]
/// How a test launches a kernel `name(in, out, extra…)`.
pub struct Launch<'a> {
    pub name: &'a str,
    pub blocks: u32,
    pub block: u32,
    /// The block's second dimension (`block` threads a row).
    pub rows: u32,
    pub dyn_shared: u32,
    /// After the input and output pointers, 4 bytes each.
    pub extra: &'a [u32],
}

#[cfg(feature = "accel")]
/// `l` on `input` (u32 words) with an output of as many words, zeroed; with `tier`, compiled
/// code and so the block tier allowed (`JitMode::Always`), else interpreted only.
pub fn launch_in_out(
    dev: &Device,
    m: &Module,
    l: &Launch,
    input: &[u32],
    tier: bool,
    threads: usize,
) -> TierRun {
    let n = input.len();
    let pin = dev.alloc(n * 4).unwrap();
    let bytes: Vec<u8> = input.iter().flat_map(|v| v.to_le_bytes()).collect();
    dev.write(pin, 0, &bytes).unwrap();
    let pout = dev.alloc(n * 4).unwrap();
    dev.write(pout, 0, &vec![0u8; n * 4]).unwrap();
    let mut cfg = config((l.blocks, 1, 1), (l.block, l.rows, 1));
    cfg.threads = threads;
    cfg.dynamic_shared_bytes = l.dyn_shared;
    cfg.engines.jit = if tier { JitMode::Always } else { JitMode::Off };
    let mut args = vec![pin.to_le_bytes().to_vec(), pout.to_le_bytes().to_vec()];
    args.extend(l.extra.iter().map(|v| v.to_le_bytes().to_vec()));
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    let result = dev.launch(m, l.name, &cfg, &refs);
    let mut back = vec![0u8; n * 4];
    dev.read(pout, 0, &mut back).unwrap();
    TierRun {
        out: back
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        result,
    }
}
