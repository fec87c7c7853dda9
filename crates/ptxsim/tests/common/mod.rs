//! Shared harness of the ptxsim integration tests: reads the checked-in PTX fixtures, moves
//! typed data to and from a simulated device, packs kernel parameters, and launches through the
//! public API only. It never calls NVRTC (only `fixtures_match_nvrtc` does) and knows nothing of
//! the engine's internals.
#![allow(dead_code)]

pub mod float;
pub mod rng;

use ptxsim::{Device, DevicePtr, Dim3, LaunchConfig, LaunchError, LaunchReport, Module};
use std::path::PathBuf;

#[allow(unused_imports)]
pub use float::*;
pub use rng::Rng;

/// A launch of `grid` blocks of `block` threads with the engines the `PTXSIM_*` variables
/// choose (the defaults when unset; `PTXSIM_JIT=always PTXSIM_CPU=avx2 cargo test` reruns these
/// tests under one other setting by hand): the tests' edge, where the environment is read.
pub fn config(grid: Dim3, block: Dim3) -> LaunchConfig {
    let mut c = LaunchConfig::new(grid, block);
    c.engines = ptxsim::Engines::from_vars(|k| std::env::var(k).ok());
    c
}

pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The text of `tests/fixtures/<name>.ptx`.
pub fn fixture(name: &str) -> String {
    let p = crate_dir()
        .join("tests/fixtures")
        .join(format!("{name}.ptx"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every fixture name (file stem), sorted.
pub fn fixture_names() -> Vec<String> {
    let dir = crate_dir().join("tests/fixtures");
    let mut v: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    v.sort();
    v
}

/// The 1-based line of `kernels/<file>` that carries `// BUG: <marker>`.
pub fn marker_line(file: &str, marker: &str) -> u32 {
    let p = crate_dir().join("kernels").join(file);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let tag = format!("// BUG: {marker}");
    let hits: Vec<u32> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_end().ends_with(&tag))
        .map(|(i, _)| i as u32 + 1)
        .collect();
    assert_eq!(
        hits.len(),
        1,
        "marker `{tag}` must occur exactly once in {}",
        p.display()
    );
    hits[0]
}

/// Plain-old-data scalars the tests move between host and device (little-endian).
pub trait Scalar: Copy + Default + std::fmt::Debug {
    const SIZE: usize;
    fn put(self, out: &mut Vec<u8>);
    fn get(b: &[u8]) -> Self;
}

macro_rules! scalar {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put(self, out: &mut Vec<u8>) { out.extend_from_slice(&self.to_le_bytes()); }
            fn get(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(&b[..Self::SIZE]);
                <$t>::from_le_bytes(a)
            }
        }
    )*};
}
scalar!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64);

pub fn to_bytes<T: Scalar>(data: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() * T::SIZE);
    for &x in data {
        x.put(&mut out);
    }
    out
}

pub fn from_bytes<T: Scalar>(bytes: &[u8]) -> Vec<T> {
    bytes.chunks_exact(T::SIZE).map(T::get).collect()
}

/// One kernel argument, packed as the `.param` it fills.
#[derive(Debug, Clone, Copy)]
pub enum Arg {
    Ptr(DevicePtr),
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
    F32(f32),
    F64(f64),
}

impl Arg {
    pub fn bytes(&self) -> Vec<u8> {
        match *self {
            Arg::Ptr(p) => p.to_le_bytes().to_vec(),
            Arg::I32(v) => v.to_le_bytes().to_vec(),
            Arg::U32(v) => v.to_le_bytes().to_vec(),
            Arg::I64(v) => v.to_le_bytes().to_vec(),
            Arg::U64(v) => v.to_le_bytes().to_vec(),
            Arg::F32(v) => v.to_le_bytes().to_vec(),
            Arg::F64(v) => v.to_le_bytes().to_vec(),
        }
    }
}

/// Ceiling division for grid sizes.
pub fn blocks(n: usize, per: u32) -> u32 {
    n.div_ceil(per as usize) as u32
}

/// A device with one fixture module loaded, and the test's random generator.
pub struct Ctx {
    pub dev: Device,
    pub module: Module,
    pub fixture: String,
    pub rng: Rng,
}

impl Ctx {
    /// Loads fixture `name` into a fresh device; `test` names the seed.
    pub fn new(name: &str, test: &str) -> Ctx {
        let rng = Rng::for_test(test);
        let dev = Device::new();
        let module = dev
            .load_module(&fixture(name))
            .unwrap_or_else(|e| panic!("loading fixture {name}.ptx: {e}"));
        Ctx {
            dev,
            module,
            fixture: name.to_string(),
            rng,
        }
    }

    pub fn upload<T: Scalar>(&self, data: &[T]) -> DevicePtr {
        let bytes = to_bytes(data);
        let p = self
            .dev
            .alloc(bytes.len().max(1))
            .unwrap_or_else(|e| panic!("alloc: {e}"));
        self.dev
            .write(p, 0, &bytes)
            .unwrap_or_else(|e| panic!("write: {e}"));
        p
    }

    /// A zero-filled buffer of `n` elements of `T`.
    pub fn zeros<T: Scalar>(&self, n: usize) -> DevicePtr {
        let p = self
            .dev
            .alloc((n * T::SIZE).max(1))
            .unwrap_or_else(|e| panic!("alloc: {e}"));
        let mut check = vec![0xa5u8; n * T::SIZE];
        self.dev
            .read(p, 0, &mut check)
            .unwrap_or_else(|e| panic!("read: {e}"));
        assert!(
            check.iter().all(|&b| b == 0),
            "Device::alloc must return zero-filled memory"
        );
        p
    }

    pub fn download<T: Scalar>(&self, p: DevicePtr, n: usize) -> Vec<T> {
        let mut bytes = vec![0u8; n * T::SIZE];
        self.dev
            .read(p, 0, &mut bytes)
            .unwrap_or_else(|e| panic!("read: {e}"));
        from_bytes(&bytes)
    }

    /// Launches and returns the raw result; checks the argument sizes against `KernelInfo`.
    pub fn try_launch(
        &self,
        kernel: &str,
        cfg: &LaunchConfig,
        args: &[Arg],
    ) -> Result<LaunchReport, LaunchError> {
        let info = self
            .module
            .kernel(kernel)
            .unwrap_or_else(|| panic!("fixture {} has no kernel {kernel}", self.fixture));
        let packed: Vec<Vec<u8>> = args.iter().map(Arg::bytes).collect();
        assert_eq!(info.params.len(), packed.len(), "{kernel}: parameter count");
        for (p, b) in info.params.iter().zip(&packed) {
            assert_eq!(p.size, b.len(), "{kernel}: size of parameter {}", p.name);
        }
        let refs: Vec<&[u8]> = packed.iter().map(|b| b.as_slice()).collect();
        self.dev.launch(&self.module, kernel, cfg, &refs)
    }

    /// Launches with the checker on and asserts the launch succeeded with no check report.
    #[track_caller]
    pub fn launch_cfg(&self, kernel: &str, cfg: &LaunchConfig, args: &[Arg]) -> LaunchReport {
        match self.try_launch(kernel, cfg, args) {
            Ok(r) => {
                assert!(
                    r.reports.is_empty(),
                    "{kernel}: unexpected check reports: {:#?}",
                    r.reports
                );
                r
            }
            Err(e) => panic!("{kernel}: launch failed: {e}\n{e:#?}"),
        }
    }

    #[track_caller]
    pub fn launch(&self, kernel: &str, grid: Dim3, block: Dim3, args: &[Arg]) -> LaunchReport {
        self.launch_cfg(kernel, &config(grid, block), args)
    }

    #[track_caller]
    pub fn launch_shared(
        &self,
        kernel: &str,
        grid: Dim3,
        block: Dim3,
        shmem: u32,
        args: &[Arg],
    ) -> LaunchReport {
        let mut cfg = config(grid, block);
        cfg.dynamic_shared_bytes = shmem;
        self.launch_cfg(kernel, &cfg, args)
    }
}

/// Shorthand for 1-D launches.
pub fn d1(x: u32) -> Dim3 {
    (x, 1, 1)
}
