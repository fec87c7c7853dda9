//! Atomic read-modify-write operations of PTX (`atom`, `red`): the new value of a location
//! from its old value and the operands.
//!
//! Pure functions of values (see `sem`); where and in which order the threads' updates happen
//! is the engines' business. No registers, warps, memory or reports here.

use super::{ieee, int};
use crate::ir::{AtomKind, AtomOp, FTy, IntTy};

/// New value of an atomic location given its old value.
pub fn atom_apply(op: AtomOp, bits: u8, kind: AtomKind, old: u64, b: u64, c: u64) -> u64 {
    let it = IntTy {
        bits,
        signed: kind == AtomKind::S,
    };
    let half = |k: FTy, x: u64, y: u64| ieee::put(k, ieee::get(k, x) + ieee::get(k, y));
    let r = match (op, kind) {
        (AtomOp::Add, AtomKind::H) => half(FTy::F16, old, b),
        (AtomOp::Add, AtomKind::BH) => half(FTy::BF16, old, b),
        (AtomOp::Add, AtomKind::H2 | AtomKind::BH2) => {
            let k = if kind == AtomKind::H2 {
                FTy::F16
            } else {
                FTy::BF16
            };
            let lo = half(k, old & 0xFFFF, b & 0xFFFF);
            let hi = half(k, (old >> 16) & 0xFFFF, (b >> 16) & 0xFFFF);
            lo | hi << 16
        }
        (AtomOp::Add, AtomKind::F) if bits == 32 => {
            (f32::from_bits(old as u32) + f32::from_bits(b as u32)).to_bits() as u64
        }
        (AtomOp::Add, AtomKind::F) => (f64::from_bits(old) + f64::from_bits(b)).to_bits(),
        (AtomOp::Min | AtomOp::Max, AtomKind::F) => {
            let (x, y) = if bits == 32 {
                (
                    f32::from_bits(old as u32) as f64,
                    f32::from_bits(b as u32) as f64,
                )
            } else {
                (f64::from_bits(old), f64::from_bits(b))
            };
            let keep_old = if op == AtomOp::Min { x <= y } else { x >= y };
            if keep_old {
                old
            } else {
                b
            }
        }
        (AtomOp::Add, _) => old.wrapping_add(b),
        (AtomOp::Min, _) => int::min(old, b, it),
        (AtomOp::Max, _) => int::max(old, b, it),
        (AtomOp::Exch, _) => b,
        (AtomOp::Cas, _) => {
            if int::zext(old, bits) == int::zext(b, bits) {
                c
            } else {
                old
            }
        }
        (AtomOp::And, _) => old & b,
        (AtomOp::Or, _) => old | b,
        (AtomOp::Xor, _) => old ^ b,
        (AtomOp::Inc, _) => {
            let (o, lim) = (int::zext(old, bits), int::zext(b, bits));
            if o >= lim {
                0
            } else {
                o + 1
            }
        }
        (AtomOp::Dec, _) => {
            let (o, lim) = (int::zext(old, bits), int::zext(b, bits));
            if o == 0 || o > lim {
                lim
            } else {
                o - 1
            }
        }
    };
    int::zext(r, bits)
}
