//! The tutorial CUDA kernels of the benchmark: how to build a problem of about `threads`
//! threads for each, and a plain single-threaded Rust version of the same computation.
//! Problems own their host data; nothing here touches the simulator.

// The transliterated kernels index arrays the way the CUDA kernels do, on purpose.
#![allow(clippy::needless_range_loop)]

use crate::rng::Rng;
use ptxsim::Dim3;

/// A kernel argument: a buffer of the problem, or a scalar.
pub enum A {
    Buf(usize),
    I32(i32),
    F32(f32),
}

/// A host buffer; `dtype` is a NumPy dtype name.
pub struct Buf {
    pub name: &'static str,
    pub dtype: &'static str,
    pub data: Vec<u8>,
}

/// How to compare the checked output with the native one.
#[derive(Clone, Copy)]
pub enum Cmp {
    Exact,
    /// f32 values within this relative tolerance (summation order differs).
    F32(f32),
}

pub struct Problem {
    pub kernel: &'static str,
    pub grid: Dim3,
    pub block: Dim3,
    pub shmem: u32,
    pub bufs: Vec<Buf>,
    pub args: Vec<A>,
    /// Index in `bufs` of the output that is checked.
    pub out: usize,
    pub cmp: Cmp,
}

impl Problem {
    pub fn threads(&self) -> u64 {
        let (g, b) = (self.grid, self.block);
        g.0 as u64 * g.1 as u64 * g.2 as u64 * b.0 as u64 * b.1 as u64 * b.2 as u64
    }
}

/// A native run: prepared once, called (and timed) repeatedly; returns the output bytes.
pub type Native = Box<dyn FnMut() -> Vec<u8>>;

pub struct Case {
    pub name: &'static str,
    pub fixture: &'static str,
    pub build: fn(u64, &mut Rng) -> Problem,
    /// Idiomatic single-threaded Rust for the same result.
    pub native: fn(&Problem) -> Native,
    /// The CUDA kernel transliterated to Rust: loops over blocks and threads, each stretch
    /// between barriers a loop of its own, shuffles over a lane array.
    pub kernel_native: fn(&Problem) -> Native,
    /// Threads for the Numba simulator run (it manages a few thousand per second).
    pub numba_threads: u64,
}

fn bytes_f32(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn bytes_i32(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn bytes_u32(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
pub fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
fn i32s(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
fn buf(name: &'static str, dtype: &'static str, data: Vec<u8>) -> Buf {
    Buf { name, dtype, data }
}
fn div_up(a: u64, b: u64) -> u32 {
    a.div_ceil(b) as u32
}
fn side(threads: u64) -> usize {
    ((threads as f64).sqrt() as usize).max(16)
}

const MATMUL_K: usize = 128;

fn vec_add(t: u64, r: &mut Rng) -> Problem {
    let n = t as usize;
    let a: Vec<f32> = r.vec(n, |r| r.f32_in(-1.0, 1.0));
    let b: Vec<f32> = r.vec(n, |r| r.f32_in(-1.0, 1.0));
    Problem {
        kernel: "vecAdd",
        grid: (div_up(t, 256), 1, 1),
        block: (256, 1, 1),
        shmem: 0,
        bufs: vec![
            buf("a", "float32", bytes_f32(&a)),
            buf("b", "float32", bytes_f32(&b)),
            buf("c", "float32", vec![0; 4 * n]),
        ],
        args: vec![A::Buf(0), A::Buf(1), A::Buf(2), A::I32(n as i32)],
        out: 2,
        cmp: Cmp::Exact,
    }
}

fn vec_add_native(p: &Problem) -> Native {
    let (a, b) = (f32s(&p.bufs[0].data), f32s(&p.bufs[1].data));
    Box::new(move || {
        let c: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
        bytes_f32(&c)
    })
}

fn matmul(kernel: &'static str, t: u64, r: &mut Rng) -> Problem {
    let m = side(t);
    let k = MATMUL_K;
    let a: Vec<f32> = r.vec(m * k, |r| r.f32_in(-1.0, 1.0));
    let b: Vec<f32> = r.vec(k * m, |r| r.f32_in(-1.0, 1.0));
    Problem {
        kernel,
        grid: (div_up(m as u64, 16), div_up(m as u64, 16), 1),
        block: (16, 16, 1),
        shmem: 0,
        bufs: vec![
            buf("A", "float32", bytes_f32(&a)),
            buf("B", "float32", bytes_f32(&b)),
            buf("C", "float32", vec![0; 4 * m * m]),
        ],
        args: vec![
            A::Buf(0),
            A::Buf(1),
            A::Buf(2),
            A::I32(m as i32),
            A::I32(m as i32),
            A::I32(k as i32),
        ],
        out: 2,
        cmp: Cmp::F32(1e-4),
    }
}

fn matmul_naive(t: u64, r: &mut Rng) -> Problem {
    matmul("matmulNaive", t, r)
}
fn matmul_tiled(t: u64, r: &mut Rng) -> Problem {
    matmul("matmulTiled", t, r)
}

fn matmul_native(p: &Problem) -> Native {
    let (a, b) = (f32s(&p.bufs[0].data), f32s(&p.bufs[1].data));
    let k = MATMUL_K;
    let m = a.len() / k;
    Box::new(move || {
        // i-k-j order: the inner loop streams rows of B and C (vectorisable).
        let mut c = vec![0f32; m * m];
        for i in 0..m {
            let row = &mut c[i * m..(i + 1) * m];
            for kk in 0..k {
                let aik = a[i * k + kk];
                for (cj, bj) in row.iter_mut().zip(&b[kk * m..(kk + 1) * m]) {
                    *cj += aik * bj;
                }
            }
        }
        bytes_f32(&c)
    })
}

fn reduce_tree(t: u64, r: &mut Rng) -> Problem {
    let n = t as usize;
    let x: Vec<f32> = r.vec(n, |r| r.f32_in(-1.0, 1.0));
    let g = div_up(t, 256);
    Problem {
        kernel: "reduceBlockTree",
        grid: (g, 1, 1),
        block: (256, 1, 1),
        shmem: 1024,
        bufs: vec![
            buf("x", "float32", bytes_f32(&x)),
            buf("partial", "float32", vec![0; 4 * g as usize]),
        ],
        args: vec![A::Buf(0), A::Buf(1), A::I32(n as i32)],
        out: 1,
        cmp: Cmp::F32(1e-3),
    }
}

fn reduce_tree_native(p: &Problem) -> Native {
    let x = f32s(&p.bufs[0].data);
    Box::new(move || {
        let partial: Vec<f32> = x.chunks(256).map(|c| c.iter().sum()).collect();
        bytes_f32(&partial)
    })
}

fn reduce_shfl(t: u64, r: &mut Rng) -> Problem {
    let n = t as usize;
    let x: Vec<i32> = r.vec(n, |r| r.range_i32(-1000, 1000));
    let g = div_up(t, 256);
    Problem {
        kernel: "reduceWarpShuffle",
        grid: (g, 1, 1),
        block: (256, 1, 1),
        shmem: 0,
        bufs: vec![
            buf("x", "int32", bytes_i32(&x)),
            buf("partial", "int32", vec![0; 4 * g as usize]),
        ],
        args: vec![A::Buf(0), A::Buf(1), A::I32(n as i32)],
        out: 1,
        cmp: Cmp::Exact,
    }
}

fn reduce_shfl_native(p: &Problem) -> Native {
    let x = i32s(&p.bufs[0].data);
    Box::new(move || {
        let partial: Vec<i32> = x.chunks(256).map(|c| c.iter().sum()).collect();
        bytes_i32(&partial)
    })
}

fn histogram(t: u64, r: &mut Rng) -> Problem {
    let n = t as usize;
    let data: Vec<u8> = r.vec(n, |r| (r.next_u32() % 256) as u8);
    Problem {
        kernel: "histogramShared",
        grid: (div_up(t, 256), 1, 1),
        block: (256, 1, 1),
        shmem: 0,
        bufs: vec![
            buf("data", "uint8", data),
            buf("hist", "uint32", vec![0; 1024]),
        ],
        args: vec![A::Buf(0), A::Buf(1), A::I32(n as i32)],
        out: 1,
        cmp: Cmp::Exact,
    }
}

fn histogram_native(p: &Problem) -> Native {
    let data = p.bufs[0].data.clone();
    Box::new(move || {
        let mut h = [0u32; 256];
        for &d in &data {
            h[d as usize] += 1;
        }
        bytes_u32(&h)
    })
}

fn image(kernel: &'static str, t: u64, r: &mut Rng, block: Dim3, heat: bool) -> Problem {
    let w = side(t);
    let img: Vec<f32> = r.vec(w * w, |r| r.f32_in(0.0, 1.0));
    let mut args = vec![A::Buf(0), A::Buf(1), A::I32(w as i32), A::I32(w as i32)];
    if heat {
        args.push(A::F32(0.2));
    }
    Problem {
        kernel,
        grid: (
            div_up(w as u64, block.0 as u64),
            div_up(w as u64, block.1 as u64),
            1,
        ),
        block,
        shmem: 0,
        bufs: vec![
            buf("img", "float32", bytes_f32(&img)),
            buf("out", "float32", vec![0; 4 * w * w]),
        ],
        args,
        out: 1,
        cmp: Cmp::F32(1e-5),
    }
}

fn blur(t: u64, r: &mut Rng) -> Problem {
    image("blur3x3", t, r, (16, 16, 1), false)
}
fn heat(t: u64, r: &mut Rng) -> Problem {
    image("heatStep", t, r, (32, 8, 1), true)
}

fn blur_native(p: &Problem) -> Native {
    let img = f32s(&p.bufs[0].data);
    let w = (img.len() as f64).sqrt() as usize;
    Box::new(move || {
        let mut out = vec![0f32; w * w];
        for y in 0..w {
            for x in 0..w {
                let mut s = 0f32;
                for yy in [y.saturating_sub(1), y, (y + 1).min(w - 1)] {
                    for xx in [x.saturating_sub(1), x, (x + 1).min(w - 1)] {
                        s += img[yy * w + xx];
                    }
                }
                out[y * w + x] = s / 9.0;
            }
        }
        bytes_f32(&out)
    })
}

fn heat_native(p: &Problem) -> Native {
    let u = f32s(&p.bufs[0].data);
    let w = (u.len() as f64).sqrt() as usize;
    Box::new(move || {
        let mut next = u.clone();
        for y in 1..w - 1 {
            for x in 1..w - 1 {
                let i = y * w + x;
                let lap = u[i - 1] + u[i + 1] + u[i - w] + u[i + w] - 4.0 * u[i];
                next[i] = u[i] + 0.2 * lap;
            }
        }
        bytes_f32(&next)
    })
}

const GRID: usize = 32;
const MAX_PER: usize = 64;

fn particles(t: u64, r: &mut Rng) -> Problem {
    let n = t as usize;
    let pos: Vec<f32> = r.vec(2 * n, |r| r.f32_in(0.0, 1.0));
    Problem {
        kernel: "binParticles",
        grid: (div_up(t, 128), 1, 1),
        block: (128, 1, 1),
        shmem: 0,
        bufs: vec![
            buf("pos", "float32", bytes_f32(&pos)),
            buf("count", "int32", vec![0; 4 * GRID * GRID]),
            buf("items", "int32", vec![0; 4 * GRID * GRID * MAX_PER]),
            buf("overflow", "int32", vec![0; 4]),
        ],
        args: vec![
            A::Buf(0),
            A::I32(n as i32),
            A::I32(GRID as i32),
            A::I32(MAX_PER as i32),
            A::Buf(1),
            A::Buf(2),
            A::Buf(3),
        ],
        out: 1,
        cmp: Cmp::Exact,
    }
}

fn particles_native(p: &Problem) -> Native {
    let pos = f32s(&p.bufs[0].data);
    Box::new(move || {
        let mut count = vec![0i32; GRID * GRID];
        let mut items = vec![0i32; GRID * GRID * MAX_PER];
        let mut overflow = 0;
        for (i, p) in pos.chunks_exact(2).enumerate() {
            let cx = ((p[0] * GRID as f32) as i32).clamp(0, GRID as i32 - 1) as usize;
            let cy = ((p[1] * GRID as f32) as i32).clamp(0, GRID as i32 - 1) as usize;
            let cell = cy * GRID + cx;
            let slot = count[cell] as usize;
            count[cell] += 1;
            if slot < MAX_PER {
                items[cell * MAX_PER + slot] = i as i32;
            } else {
                overflow += 1;
            }
        }
        std::hint::black_box((&items, overflow));
        bytes_i32(&count)
    })
}

fn matmul_naive_kernel(p: &Problem) -> Native {
    let (a, b) = (f32s(&p.bufs[0].data), f32s(&p.bufs[1].data));
    let k = MATMUL_K;
    let m = a.len() / k;
    Box::new(move || {
        let mut c = vec![0f32; m * m];
        for row in 0..m {
            for col in 0..m {
                let mut acc = 0f32;
                for kk in 0..k {
                    acc += a[row * k + kk] * b[kk * m + col];
                }
                c[row * m + col] = acc;
            }
        }
        bytes_f32(&c)
    })
}

fn matmul_tiled_kernel(p: &Problem) -> Native {
    const T: usize = 16;
    let (a, b) = (f32s(&p.bufs[0].data), f32s(&p.bufs[1].data));
    let k = MATMUL_K;
    let m = a.len() / k;
    Box::new(move || {
        let mut c = vec![0f32; m * m];
        let (mut at, mut bt) = ([[0f32; T]; T], [[0f32; T]; T]);
        for by in 0..m.div_ceil(T) {
            for bx in 0..m.div_ceil(T) {
                let mut acc = [[0f32; T]; T];
                for t in 0..k.div_ceil(T) {
                    for ty in 0..T {
                        for tx in 0..T {
                            let (row, col) = (by * T + ty, bx * T + tx);
                            let (ak, bk) = (t * T + tx, t * T + ty);
                            at[ty][tx] = if row < m && ak < k {
                                a[row * k + ak]
                            } else {
                                0.0
                            };
                            bt[ty][tx] = if bk < k && col < m {
                                b[bk * m + col]
                            } else {
                                0.0
                            };
                        }
                    }
                    for ty in 0..T {
                        for tx in 0..T {
                            for kk in 0..T {
                                acc[ty][tx] += at[ty][kk] * bt[kk][tx];
                            }
                        }
                    }
                }
                for ty in 0..T {
                    for tx in 0..T {
                        let (row, col) = (by * T + ty, bx * T + tx);
                        if row < m && col < m {
                            c[row * m + col] = acc[ty][tx];
                        }
                    }
                }
            }
        }
        bytes_f32(&c)
    })
}

fn reduce_tree_kernel(p: &Problem) -> Native {
    let x = f32s(&p.bufs[0].data);
    Box::new(move || {
        let mut partial = Vec::with_capacity(x.len().div_ceil(256));
        let mut s = [0f32; 256];
        for chunk in x.chunks(256) {
            for (t, v) in s.iter_mut().enumerate() {
                *v = chunk.get(t).copied().unwrap_or(0.0);
            }
            let mut step = 128;
            while step > 0 {
                for t in 0..step {
                    s[t] += s[t + step];
                }
                step /= 2;
            }
            partial.push(s[0]);
        }
        bytes_f32(&partial)
    })
}

/// `reduceBlockTree` as the SIMT program a simulator runs at best, hand-written: every thread
/// of every block evaluates `tid < s` at every step, bounds are checked and, when `check`,
/// each shared access is compared with and recorded in a writer and a reader record per word
/// (the race checker's minimum). Beside `reduce_tree_kernel`, the floor under goal Y
/// (`--floor`). Panics on a race or an access out of bounds, which this kernel has none of.
pub fn reduce_tree_simt(p: &Problem, check: bool) -> Native {
    const BLOCK: usize = 256;
    let x = f32s(&p.bufs[0].data);
    Box::new(move || {
        let n = x.len();
        let mut partial = vec![0f32; n.div_ceil(BLOCK)];
        let mut sdata = [0f32; BLOCK];
        // (thread, barrier epoch) of the last write and the last read of each word.
        let (mut wr, mut rd) = ([(u32::MAX, 0u32); BLOCK], [(u32::MAX, 0u32); BLOCK]);
        let mut access = |word: usize, tid: u32, epoch: u32, write: bool| {
            let (wt, we) = wr[word];
            let mut ok = we != epoch || wt == tid;
            if write {
                let (rt, re) = rd[word];
                ok &= re != epoch || rt == tid;
                wr[word] = (tid, epoch);
            } else {
                rd[word] = (tid, epoch);
            }
            assert!(ok, "race at word {word}");
        };
        let mut epoch = 0u32;
        for (b, out) in partial.iter_mut().enumerate() {
            epoch += 1;
            for t in 0..BLOCK as u32 {
                let i = b * BLOCK + t as usize;
                let v = if i < n { x[i] } else { 0.0 };
                if check {
                    access(t as usize, t, epoch, true);
                }
                sdata[t as usize] = v;
            }
            let mut s = (BLOCK / 2) as u32;
            while s > 0 {
                epoch += 1;
                for t in 0..BLOCK as u32 {
                    if t < s {
                        let (a, c) = (t as usize, (t + s) as usize);
                        if check {
                            access(a, t, epoch, false);
                            access(c, t, epoch, false);
                            access(a, t, epoch, true);
                        }
                        sdata[a] += sdata[c];
                    }
                }
                s >>= 1;
            }
            *out = sdata[0];
        }
        bytes_f32(&partial)
    })
}

/// `reduceBlockTree` as a block compiler that vectorises over the block's threads would run it:
/// each PTX instruction between two barriers is a loop over the block's threads in chunks of
/// 16 (the guard a mask per chunk, no branch per thread; chunks without an active thread are
/// skipped), shared accesses with unit stride are found as such (masked loads and stores; here,
/// arrays padded so that inactive threads may touch words past the end), and every access is
/// checked: bounds per thread and, unless `records` is `None`, the race records compared and
/// updated per thread: `Separate` as in `reduce_tree_simt` (writer and reader, thread and epoch,
/// in four arrays), `Packed` as one key per word and role (`Packed`). Built for AVX-512 when
/// the CPU has it, as a compiler would target the host. The floor of such a tier, beside
/// `reduce_tree_simt` (`--floor`). Panics on a race or an access out of bounds.
pub fn reduce_tree_block_vector(p: &Problem, records: RecordKind) -> Native {
    let x = f32s(&p.bufs[0].data);
    fn run(x: &[f32], records: RecordKind, v4: bool) -> Vec<f32> {
        #[cfg(target_arch = "x86_64")]
        if v4 {
            // SAFETY: the caller found every feature the functions are built for.
            return unsafe {
                match records {
                    RecordKind::None => block_vector_v4(x, &mut NoRecs(0)),
                    RecordKind::Separate => block_vector_v4(x, &mut Recs::new()),
                    RecordKind::Packed => block_vector_v4(x, &mut Packed::new()),
                }
            };
        }
        let _ = v4;
        match records {
            RecordKind::None => block_vector(x, &mut NoRecs(0)),
            RecordKind::Separate => block_vector(x, &mut Recs::new()),
            RecordKind::Packed => block_vector(x, &mut Packed::new()),
        }
    }
    let v4 = avx512();
    Box::new(move || bytes_f32(&run(&x, records, v4)))
}

/// Whether this CPU runs ptxsim's AVX-512 build of its interpreter: the yardsticks are built
/// for the same features (`target_feature` on their `_v4` functions).
pub fn avx512() -> bool {
    ptxsim::HostBuild::available().contains(&ptxsim::HostBuild::Avx512)
}

/// Which race records `reduce_tree_block_vector` keeps.
#[derive(Clone, Copy)]
pub enum RecordKind {
    None,
    Separate,
    Packed,
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]
unsafe fn block_vector_v4<R: Records>(x: &[f32], recs: &mut R) -> Vec<f32> {
    block_vector(x, recs)
}

const VB: usize = 256;
const VC: usize = 16;

/// Race records of a block's shared words as the vectorised yardstick keeps them.
trait Records {
    /// The epoch after the current one (a barrier passed).
    fn next_epoch(&mut self) -> u32;
    /// Check and record the accesses of the threads of chunk `k` (active: `act`) to the words
    /// `base + t`; true when an active thread goes out of bounds or races.
    fn chunk(&mut self, act: &[bool; VC], k: usize, base: usize, ep: u32, write: bool) -> bool;
}

/// Writer and reader records, a thread and an epoch each, in four arrays (padded to twice the
/// words, see `block_vector`).
struct Recs {
    wt: [u32; 2 * VB],
    we: [u32; 2 * VB],
    rt: [u32; 2 * VB],
    re: [u32; 2 * VB],
    epoch: u32,
}

impl Recs {
    fn new() -> Self {
        Recs {
            wt: [u32::MAX; 2 * VB],
            we: [0; 2 * VB],
            rt: [u32::MAX; 2 * VB],
            re: [0; 2 * VB],
            epoch: 0,
        }
    }
}

impl Records for Recs {
    fn next_epoch(&mut self) -> u32 {
        self.epoch += 1;
        self.epoch
    }

    #[inline(always)]
    fn chunk(&mut self, act: &[bool; VC], k: usize, base: usize, ep: u32, write: bool) -> bool {
        let r = self;
        let mut bad = false;
        let mut race = [false; VC];
        for (j, rc) in race.iter_mut().enumerate() {
            let t = k * VC + j;
            let w = base + t;
            bad |= act[j] & (w >= VB);
            let tid = t as u32;
            *rc = r.we[w] == ep && r.wt[w] != tid;
            if write {
                *rc |= r.re[w] == ep && r.rt[w] != tid;
            }
        }
        for j in 0..VC {
            let t = k * VC + j;
            let w = base + t;
            let (ids, eps) = if write {
                (&mut r.wt, &mut r.we)
            } else {
                (&mut r.rt, &mut r.re)
            };
            ids[w] = if act[j] { t as u32 } else { ids[w] };
            eps[w] = if act[j] { ep } else { eps[w] };
            bad |= act[j] & race[j];
        }
        bad
    }
}

/// The same records packed, one `u32` per word for the writer and one for the reader:
/// `epoch << 16 | thread`, with the reader's bit 15 set once a second thread read the word in
/// the epoch (so that a write by either is a race, which a single reader record misses). One
/// key compare tells "same epoch, another thread": `(record ^ key) - 1 < 0xFFFF`. Epochs wrap
/// at 16 bits: the records are cleared then (every 65,535 barriers).
struct Packed {
    w: [u32; 2 * VB],
    r: [u32; 2 * VB],
    epoch: u32,
}

impl Packed {
    fn new() -> Self {
        Packed {
            w: [0; 2 * VB],
            r: [0; 2 * VB],
            epoch: 0,
        }
    }
}

impl Records for Packed {
    fn next_epoch(&mut self) -> u32 {
        self.epoch += 1;
        if self.epoch > 0xFFFF {
            self.w = [0; 2 * VB];
            self.r = [0; 2 * VB];
            self.epoch = 1;
        }
        self.epoch
    }

    #[inline(always)]
    fn chunk(&mut self, act: &[bool; VC], k: usize, base: usize, ep: u32, write: bool) -> bool {
        let lo = base + k * VC;
        let key: [u32; VC] = std::array::from_fn(|j| ep << 16 | (k * VC + j) as u32);
        let mut bad = false;
        // Branch-free lane loops (separate for writes and reads), so that they vectorise.
        let (w, r) = (&mut self.w[lo..lo + VC], &mut self.r[lo..lo + VC]);
        if write {
            for j in 0..VC {
                let other_w = (w[j] ^ key[j]).wrapping_sub(1) < 0xFFFF;
                let other_r = (r[j] ^ key[j]).wrapping_sub(1) < 0xFFFF;
                bad |= act[j] & (other_w | other_r | (lo + j >= VB));
                w[j] = if act[j] { key[j] } else { w[j] };
            }
        } else {
            for j in 0..VC {
                bad |= act[j] & (((w[j] ^ key[j]).wrapping_sub(1) < 0xFFFF) | (lo + j >= VB));
                let x = r[j] ^ key[j];
                let other = (x >> 16 == 0) & (x != 0);
                let mark = if other { r[j] | 0x8000 } else { key[j] };
                r[j] = if act[j] { mark } else { r[j] };
            }
        }
        bad
    }
}

/// No race records: bounds checks only (what records cost, beside `Recs` and `Packed`).
struct NoRecs(u32);

impl Records for NoRecs {
    fn next_epoch(&mut self) -> u32 {
        self.0 = self.0.wrapping_add(1);
        self.0
    }

    #[inline(always)]
    fn chunk(&mut self, act: &[bool; VC], k: usize, base: usize, _: u32, _: bool) -> bool {
        let lo = base + k * VC;
        (0..VC).fold(false, |bad, j| bad | (act[j] & (lo + j >= VB)))
    }
}

/// Whether both record schemes tell races from race-free accesses on one chunk of threads:
/// writes then neighbours' reads (a race), reads then neighbours' writes (a race), and each
/// thread writing then reading its own word (none); and whether the packed records also catch a
/// write by the last of two readers (a race with the first, which one reader record per word,
/// as `Recs` keeps, misses). The vectorised yardsticks' figures count only if this holds
/// (`--floor`).
pub fn records_catch_races() -> bool {
    fn check<R: Records>(r: &mut R, many: bool) -> bool {
        let all = [true; VC];
        let ep = r.next_epoch();
        let clean = !r.chunk(&all, 0, 0, ep, true);
        let write_read = r.chunk(&all, 0, 1, ep, false);
        let ep = r.next_epoch();
        let read = !r.chunk(&all, 0, 0, ep, false);
        let read_write = r.chunk(&all, 0, 1, ep, true);
        let ep = r.next_epoch();
        // Word 1 read by thread 0, then by thread 1, which then writes it.
        let reads = !r.chunk(&all, 0, 1, ep, false) && !r.chunk(&all, 0, 0, ep, false);
        let one: [bool; VC] = std::array::from_fn(|j| j == 1);
        let last_reader_writes = r.chunk(&one, 0, 0, ep, true);
        let ep = r.next_epoch();
        let own = !r.chunk(&all, 0, 0, ep, true) && !r.chunk(&all, 0, 0, ep, false);
        clean && write_read && read && read_write && reads && own && (last_reader_writes || !many)
    }
    check(&mut Recs::new(), false) && check(&mut Packed::new(), true)
}

#[inline(always)]
fn block_vector<R: Records>(x: &[f32], recs: &mut R) -> Vec<f32> {
    let n = x.len();
    let mut partial = vec![0f32; n.div_ceil(VB)];
    let mut sdata = [0f32; 2 * VB];
    let mut bad = false;
    for (b, out) in partial.iter_mut().enumerate() {
        let epoch = recs.next_epoch();
        let lo = b * VB;
        for k in 0..VB / VC {
            bad |= recs.chunk(&[true; VC], k, 0, epoch, true);
            for j in 0..VC {
                sdata[k * VC + j] = x.get(lo + k * VC + j).copied().unwrap_or(0.0);
            }
        }
        let mut s = VB / 2;
        while s > 0 {
            let epoch = recs.next_epoch();
            for k in 0..VB / VC {
                let act: [bool; VC] = std::array::from_fn(|j| k * VC + j < s);
                if !act.iter().any(|&a| a) {
                    continue;
                }
                bad |= recs.chunk(&act, k, 0, epoch, false);
                bad |= recs.chunk(&act, k, s, epoch, false);
                let v: [f32; VC] =
                    std::array::from_fn(|j| sdata[k * VC + j] + sdata[k * VC + j + s]);
                bad |= recs.chunk(&act, k, 0, epoch, true);
                for j in 0..VC {
                    let t = k * VC + j;
                    sdata[t] = if act[j] { v[j] } else { sdata[t] };
                }
            }
            s >>= 1;
        }
        *out = sdata[0];
    }
    assert!(!bad, "a race or an access out of bounds");
    partial
}

fn reduce_shfl_kernel(p: &Problem) -> Native {
    let x = i32s(&p.bufs[0].data);
    fn warp_reduce(v: &mut [i32; 32]) {
        let mut off = 16;
        while off > 0 {
            let old = *v;
            for l in 0..32 {
                v[l] = old[l].wrapping_add(if l + off < 32 { old[l + off] } else { old[l] });
            }
            off /= 2;
        }
    }
    Box::new(move || {
        let mut partial = Vec::with_capacity(x.len().div_ceil(256));
        for chunk in x.chunks(256) {
            let mut sums = [0i32; 32];
            for (w, sum) in sums.iter_mut().enumerate().take(8) {
                let mut v = [0i32; 32];
                for (l, lane) in v.iter_mut().enumerate() {
                    *lane = chunk.get(w * 32 + l).copied().unwrap_or(0);
                }
                warp_reduce(&mut v);
                *sum = v[0];
            }
            warp_reduce(&mut sums);
            partial.push(sums[0]);
        }
        bytes_i32(&partial)
    })
}

fn histogram_kernel(p: &Problem) -> Native {
    let data = p.bufs[0].data.clone();
    Box::new(move || {
        let mut h = [0u32; 256];
        for chunk in data.chunks(256) {
            let mut local = [0u32; 256];
            for &d in chunk {
                local[d as usize] += 1;
            }
            for (g, l) in h.iter_mut().zip(&local) {
                if *l != 0 {
                    *g += l;
                }
            }
        }
        bytes_u32(&h)
    })
}

pub fn all() -> Vec<Case> {
    vec![
        Case {
            name: "vecAdd",
            fixture: "vector_add",
            build: vec_add,
            native: vec_add_native,
            kernel_native: vec_add_native,
            numba_threads: 4096,
        },
        Case {
            name: "matmulNaive",
            fixture: "matmul",
            build: matmul_naive,
            native: matmul_native,
            kernel_native: matmul_naive_kernel,
            numba_threads: 1024,
        },
        Case {
            name: "matmulTiled",
            fixture: "matmul",
            build: matmul_tiled,
            native: matmul_native,
            kernel_native: matmul_tiled_kernel,
            numba_threads: 1024,
        },
        Case {
            name: "reduceBlockTree",
            fixture: "reduce",
            build: reduce_tree,
            native: reduce_tree_native,
            kernel_native: reduce_tree_kernel,
            numba_threads: 2048,
        },
        Case {
            name: "reduceWarpShuffle",
            fixture: "reduce",
            build: reduce_shfl,
            native: reduce_shfl_native,
            kernel_native: reduce_shfl_kernel,
            numba_threads: 2048,
        },
        Case {
            name: "histogramShared",
            fixture: "histogram",
            build: histogram,
            native: histogram_native,
            kernel_native: histogram_kernel,
            numba_threads: 4096,
        },
        Case {
            name: "blur3x3",
            fixture: "stencil",
            build: blur,
            native: blur_native,
            kernel_native: blur_native,
            numba_threads: 4096,
        },
        Case {
            name: "heatStep",
            fixture: "stencil",
            build: heat,
            native: heat_native,
            kernel_native: heat_native,
            numba_threads: 4096,
        },
        Case {
            name: "binParticles",
            fixture: "particles",
            build: particles,
            native: particles_native,
            kernel_native: particles_native,
            numba_threads: 4096,
        },
    ]
}
