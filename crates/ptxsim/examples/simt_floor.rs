//! How fast a checked simulator of `reduceBlockTree` could be at best: the bench's native
//! transliteration (`kern`: the tree's steps as plain loops, which the compiler vectorises)
//! beside a hand-written Rust program that runs the kernel the way a SIMT simulator must,
//! with every thread of every block evaluating `tid < s` at every step, and with the race
//! checker's minimum (a writer and a reader record per shared word, compared and updated at
//! every access). Nothing here uses ptxsim: it is the yardstick for goal Y of
//! `benches/ptxsim.sh` (ptxsim on 2 cores against `kern` on one), printed as ratios measured
//! side by side in one run.
//!
//! `cargo run --release -p ptxsim --example simt_floor`

use std::hint::black_box;
use std::time::Instant;

const BLOCK: usize = 256;

/// The bench's `reduce_tree_kernel`.
fn kern(x: &[f32]) -> Vec<f32> {
    let mut partial = Vec::with_capacity(x.len().div_ceil(BLOCK));
    let mut s = [0f32; BLOCK];
    for chunk in x.chunks(BLOCK) {
        for (t, v) in s.iter_mut().enumerate() {
            *v = chunk.get(t).copied().unwrap_or(0.0);
        }
        let mut step = BLOCK / 2;
        while step > 0 {
            for t in 0..step {
                s[t] += s[t + step];
            }
            step /= 2;
        }
        partial.push(s[0]);
    }
    partial
}

/// Writer and reader records of the shared words: (thread, barrier epoch).
struct Shadow {
    w: Vec<(u32, u32)>,
    r: Vec<(u32, u32)>,
}

impl Shadow {
    /// Check and record an access; false on a race (another thread's access of the word in
    /// this epoch, one of them a write).
    #[inline(always)]
    fn access(&mut self, word: usize, tid: u32, epoch: u32, write: bool) -> bool {
        let (wt, we) = self.w[word];
        if we == epoch && wt != tid {
            return false;
        }
        if write {
            let (rt, re) = self.r[word];
            if re == epoch && rt != tid {
                return false;
            }
            self.w[word] = (tid, epoch);
        } else {
            self.r[word] = (tid, epoch);
        }
        true
    }
}

/// `reduceBlockTree` thread by thread, phase by phase (between barriers), with bounds checks
/// and, when `check`, the race records. Returns None on a race or an access out of bounds.
fn simt(x: &[f32], check: bool) -> Option<Vec<f32>> {
    let n = x.len();
    let mut partial = vec![0f32; n.div_ceil(BLOCK)];
    let mut sdata = vec![0f32; BLOCK];
    let mut sh = Shadow {
        w: vec![(u32::MAX, 0); BLOCK],
        r: vec![(u32::MAX, 0); BLOCK],
    };
    let tids: Vec<u32> = (0..BLOCK as u32).collect();
    let mut epoch = 0u32;
    for (b, out) in partial.iter_mut().enumerate() {
        epoch += 1;
        for &t in &tids {
            let i = b * BLOCK + t as usize;
            let v = if i < n { *x.get(i)? } else { 0.0 };
            let o = t as usize;
            if o >= sdata.len() || (check && !sh.access(o, t, epoch, true)) {
                return None;
            }
            sdata[o] = v;
        }
        let mut s = (BLOCK / 2) as u32;
        while s > 0 {
            epoch += 1;
            for &t in &tids {
                if t < s {
                    let (a, c) = (t as usize, (t + s) as usize);
                    if c >= sdata.len()
                        || (check
                            && !(sh.access(a, t, epoch, false)
                                && sh.access(c, t, epoch, false)
                                && sh.access(a, t, epoch, true)))
                    {
                        return None;
                    }
                    sdata[a] += sdata[c];
                }
            }
            s >>= 1;
        }
        *out = sdata[0];
    }
    Some(partial)
}

fn best(mut f: impl FnMut()) -> f64 {
    (0..30)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::MAX, f64::min)
}

fn main() {
    let n = 1 << 22;
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let x: Vec<f32> = (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % 2001) as f32 / 1000.0 - 1.0
        })
        .collect();
    let want = kern(&x);
    for check in [false, true] {
        match simt(&x, check) {
            Some(p) if p == want => {}
            _ => {
                eprintln!("simt_floor: the SIMT program disagrees with kern (check {check})");
                std::process::exit(1);
            }
        }
    }
    let k = best(|| {
        black_box(kern(black_box(&x)));
    });
    let plain = best(|| {
        black_box(simt(black_box(&x), false));
    });
    let checked = best(|| {
        black_box(simt(black_box(&x), true));
    });
    println!(
        "reduceBlockTree, {n} threads, one core: kern {:.2e} threads/s; SIMT program {:.1}x \
         kern's time, with race records {:.1}x (on 2 cores at best half of that)",
        n as f64 / k,
        plain / k,
        checked / k
    );
}
