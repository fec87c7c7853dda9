//! Floating-point helpers of the CPU references: directed rounding to f32, ULP distances, and
//! comparisons that print the first mismatches. Test-only.

/// IEEE rounding directions of PTX's `.rn/.rz/.rm/.rp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Round {
    Nearest,
    Zero,
    Down,
    Up,
}

/// Rounds the f64 `d` to f32 in direction `mode` (exact: uses the two f32 neighbours of `d`).
pub fn f64_to_f32(d: f64, mode: Round) -> f32 {
    if d.is_nan() {
        return f32::NAN;
    }
    let r = d as f32;
    if r as f64 == d || mode == Round::Nearest {
        return r;
    }
    let (lo, hi) = if (r as f64) > d {
        (r.next_down(), r)
    } else {
        (r, r.next_up())
    };
    match mode {
        Round::Zero => {
            if d > 0.0 {
                lo
            } else {
                hi
            }
        }
        Round::Down => lo,
        Round::Up => hi,
        Round::Nearest => r,
    }
}

/// Rounds an i64 to f32 toward zero (exact, no double rounding).
pub fn i64_to_f32_rz(v: i64) -> f32 {
    let a = v.unsigned_abs();
    let kept = if a < (1 << 24) {
        a
    } else {
        let shift = 64 - a.leading_zeros() - 24;
        (a >> shift) << shift
    };
    let f = kept as f32;
    if v < 0 {
        -f
    } else {
        f
    }
}

/// Rounds a u64 to f64 toward zero (exact).
pub fn u64_to_f64_rz(a: u64) -> f64 {
    let kept = if a < (1 << 53) {
        a
    } else {
        let shift = 64 - a.leading_zeros() - 53;
        (a >> shift) << shift
    };
    kept as f64
}

fn ordered32(x: f32) -> i64 {
    let b = x.to_bits() as i32 as i64;
    if b < 0 {
        i32::MIN as i64 - b
    } else {
        b
    }
}

fn ordered64(x: f64) -> i128 {
    let b = x.to_bits() as i64 as i128;
    if b < 0 {
        i64::MIN as i128 - b
    } else {
        b
    }
}

/// Distance in units in the last place (0 for equal values, also for +0/-0).
pub fn ulps32(a: f32, b: f32) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    (ordered32(a) - ordered32(b)).unsigned_abs()
}

pub fn ulps64(a: f64, b: f64) -> u128 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u128::MAX
        };
    }
    (ordered64(a) - ordered64(b)).unsigned_abs()
}

/// Values the tests compare: exact bit equality for floats (any NaN equals any NaN).
pub trait Exact: Copy + std::fmt::Debug {
    fn same(self, other: Self) -> bool;
}

macro_rules! exact_int {
    ($($t:ty),*) => {$(impl Exact for $t { fn same(self, o: Self) -> bool { self == o } })*};
}
exact_int!(u8, i8, u16, i16, u32, i32, u64, i64, bool);

impl Exact for f32 {
    fn same(self, o: Self) -> bool {
        self.to_bits() == o.to_bits() || (self.is_nan() && o.is_nan())
    }
}

impl Exact for f64 {
    fn same(self, o: Self) -> bool {
        self.to_bits() == o.to_bits() || (self.is_nan() && o.is_nan())
    }
}

/// Asserts `got == want` element by element (bit-exact for floats); on failure prints the
/// first mismatches with their indices.
#[track_caller]
pub fn assert_exact<T: Exact>(what: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let bad: Vec<usize> = (0..got.len()).filter(|&i| !got[i].same(want[i])).collect();
    if !bad.is_empty() {
        let shown: Vec<String> = bad
            .iter()
            .take(8)
            .map(|&i| format!("[{i}] got {:?} want {:?}", got[i], want[i]))
            .collect();
        panic!(
            "{what}: {} of {} differ:\n  {}",
            bad.len(),
            got.len(),
            shown.join("\n  ")
        );
    }
}

/// Asserts every f32 is within `max_ulps` of the reference, or within `abs` of it.
#[track_caller]
pub fn assert_close32(what: &str, got: &[f32], want: &[f32], max_ulps: u64, abs: f32) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let ok = |a: f32, b: f32| ulps32(a, b) <= max_ulps || (a - b).abs() <= abs;
    let bad: Vec<usize> = (0..got.len()).filter(|&i| !ok(got[i], want[i])).collect();
    if !bad.is_empty() {
        let shown: Vec<String> = bad
            .iter()
            .take(8)
            .map(|&i| {
                format!(
                    "[{i}] got {:e} want {:e} ({} ulps)",
                    got[i],
                    want[i],
                    ulps32(got[i], want[i])
                )
            })
            .collect();
        panic!(
            "{what}: {} of {} outside {max_ulps} ulps / {abs:e}:\n  {}",
            bad.len(),
            got.len(),
            shown.join("\n  ")
        );
    }
}

/// Asserts every f64 is within `max_ulps` of the reference, or within `abs` of it.
#[track_caller]
pub fn assert_close64(what: &str, got: &[f64], want: &[f64], max_ulps: u128, abs: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let ok = |a: f64, b: f64| ulps64(a, b) <= max_ulps || (a - b).abs() <= abs;
    let bad: Vec<usize> = (0..got.len()).filter(|&i| !ok(got[i], want[i])).collect();
    if !bad.is_empty() {
        let shown: Vec<String> = bad
            .iter()
            .take(8)
            .map(|&i| {
                format!(
                    "[{i}] got {:e} want {:e} ({} ulps)",
                    got[i],
                    want[i],
                    ulps64(got[i], want[i])
                )
            })
            .collect();
        panic!(
            "{what}: {} of {} outside {max_ulps} ulps / {abs:e}:\n  {}",
            bad.len(),
            got.len(),
            shown.join("\n  ")
        );
    }
}

/// Asserts |got - want| <= rel * |want| + abs for every element.
#[track_caller]
pub fn assert_rel32(what: &str, got: &[f32], want: &[f32], rel: f32, abs: f32) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let ok = |a: f32, b: f32| (a - b).abs() <= rel * b.abs() + abs;
    let bad: Vec<usize> = (0..got.len()).filter(|&i| !ok(got[i], want[i])).collect();
    if !bad.is_empty() {
        let shown: Vec<String> = bad
            .iter()
            .take(8)
            .map(|&i| format!("[{i}] got {:e} want {:e}", got[i], want[i]))
            .collect();
        panic!(
            "{what}: {} of {} outside rel {rel:e} abs {abs:e}:\n  {}",
            bad.len(),
            got.len(),
            shown.join("\n  ")
        );
    }
}
