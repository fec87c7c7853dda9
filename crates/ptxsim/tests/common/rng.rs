//! A small seeded random number generator (SplitMix64) for test inputs.
//!
//! Each run draws a fresh base seed from the clock unless `PTXSIM_SEED` is set; each test mixes
//! its own name into it, so `PTXSIM_SEED=<printed seed>` reproduces a failing test exactly.
//! Not for anything but test data.

use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

/// The base seed of this run: `PTXSIM_SEED` if set (decimal or 0x-hex), else the clock.
pub fn base_seed() -> u64 {
    if let Ok(s) = std::env::var("PTXSIM_SEED") {
        let s = s.trim();
        let parsed = match s.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => s.parse().ok(),
        };
        if let Some(v) = parsed {
            return v;
        }
        panic!("PTXSIM_SEED={s:?} is not a number");
    }
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
}

impl Rng {
    /// A generator for the test `name`; prints the seed (shown by the test harness on failure).
    pub fn for_test(name: &str) -> Rng {
        let base = base_seed();
        println!("seed: PTXSIM_SEED={base} (test {name})");
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in name.bytes() {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
        Rng { state: base ^ h }
    }

    /// A generator with a fixed seed (benchmarks).
    pub fn seeded(seed: u64) -> Rng {
        Rng { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// Uniform in `lo..hi` (hi exclusive, hi > lo).
    pub fn range_i64(&mut self, lo: i64, hi: i64) -> i64 {
        let span = (hi - lo) as u64;
        lo + (self.next_u64() % span) as i64
    }

    pub fn range_i32(&mut self, lo: i32, hi: i32) -> i32 {
        self.range_i64(lo as i64, hi as i64) as i32
    }

    pub fn range_u32(&mut self, lo: u32, hi: u32) -> u32 {
        self.range_i64(lo as i64, hi as i64) as u32
    }

    pub fn usize(&mut self, lo: usize, hi: usize) -> usize {
        self.range_i64(lo as i64, hi as i64) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    pub fn f64_in(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit_f64()
    }

    pub fn f32_in(&mut self, lo: f32, hi: f32) -> f32 {
        self.f64_in(lo as f64, hi as f64) as f32
    }

    pub fn bool(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }

    pub fn vec<T>(&mut self, n: usize, mut f: impl FnMut(&mut Rng) -> T) -> Vec<T> {
        (0..n).map(|_| f(self)).collect()
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.usize(0, items.len())]
    }
}
