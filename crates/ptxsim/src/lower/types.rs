//! PTX type names and instruction mnemonics split into their parts.
//!
//! Only classification lives here (what `.s32` or `ld.global.nc.v4.f32` consists of); choosing
//! operations is `inst`'s job.

use crate::ir::{Cmp, FTy, IntTy, MemSpace, Rnd};

/// Kind of a PTX type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TK {
    B,
    U,
    S,
    F,
    Pred,
    /// bfloat16.
    BF,
    /// Packed pairs of f16 and of bf16 in 32 bits.
    F2,
    BF2,
    /// Packed pairs of u16 and of s16 in 32 bits (`u16x2`, `s16x2`, sm_90).
    U2,
    S2,
    /// Packed or exotic types the simulator does not implement (`f16x2`, `bf16`, `b128`, …).
    Other,
}

/// A PTX type: kind and width in bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ty {
    pub k: TK,
    pub bits: u8,
}

impl Ty {
    pub fn parse(s: &str) -> Option<Ty> {
        let (k, rest) = match s.as_bytes().first()? {
            b'b' if s == "bf16" => {
                return Some(Ty {
                    k: TK::BF,
                    bits: 16,
                })
            }
            b'b' if s == "bf16x2" => {
                return Some(Ty {
                    k: TK::BF2,
                    bits: 32,
                })
            }
            b'u' | b's' if s == "u16x2" || s == "s16x2" => {
                return Some(Ty {
                    k: if s == "u16x2" { TK::U2 } else { TK::S2 },
                    bits: 32,
                })
            }
            b'f' if s == "f16x2" => {
                return Some(Ty {
                    k: TK::F2,
                    bits: 32,
                })
            }
            b'b' => (TK::B, &s[1..]),
            b'u' => (TK::U, &s[1..]),
            b's' => (TK::S, &s[1..]),
            b'f' => (TK::F, &s[1..]),
            _ if s == "pred" => {
                return Some(Ty {
                    k: TK::Pred,
                    bits: 1,
                })
            }
            _ if matches!(s, "tf32" | "e4m3" | "e5m2" | "e4m3x2" | "e5m2x2") => {
                return Some(Ty {
                    k: TK::Other,
                    bits: 32,
                })
            }
            _ => return None,
        };
        if rest.ends_with("x2") {
            return Some(Ty {
                k: TK::Other,
                bits: 32,
            });
        }
        let bits: u8 = rest.parse().ok()?;
        let ok = match k {
            TK::F => matches!(bits, 16 | 32 | 64),
            TK::B => matches!(bits, 8 | 16 | 32 | 64 | 128),
            _ => matches!(bits, 8 | 16 | 32 | 64),
        };
        if !ok {
            return None;
        }
        let k = if bits == 128 { TK::Other } else { k };
        Some(Ty { k, bits })
    }
    pub fn is_float(self) -> bool {
        matches!(self.k, TK::F | TK::BF)
    }
    /// A packed pair of halves (`f16x2`, `bf16x2`), and the type of each half.
    pub fn packed(self) -> Option<Ty> {
        match self.k {
            TK::F2 => Some(Ty { k: TK::F, bits: 16 }),
            TK::BF2 => Some(Ty {
                k: TK::BF,
                bits: 16,
            }),
            _ => None,
        }
    }
    pub fn int(self) -> IntTy {
        IntTy {
            bits: self.bits,
            signed: self.k == TK::S,
        }
    }
    pub fn fty(self) -> Option<FTy> {
        match (self.k, self.bits) {
            (TK::F, 16) => Some(FTy::F16),
            (TK::BF, 16) => Some(FTy::BF16),
            (TK::F, 32) => Some(FTy::F32),
            (TK::F, 64) => Some(FTy::F64),
            _ => None,
        }
    }
    pub fn bytes(self) -> u8 {
        (self.bits / 8).max(1)
    }
}

/// A mnemonic split at its dots: the base opcode, the type suffixes in order, and the other
/// modifiers.
pub struct Mn<'s> {
    pub base: &'s str,
    pub mods: Vec<&'s str>,
    pub types: Vec<Ty>,
}

impl<'s> Mn<'s> {
    pub fn split(opcode: &'s str) -> Mn<'s> {
        let mut it = opcode.split('.');
        let base = it.next().unwrap_or("");
        let mut mods = Vec::new();
        let mut types = Vec::new();
        for m in it {
            match Ty::parse(m) {
                Some(t) => types.push(t),
                None => mods.push(m),
            }
        }
        Mn { base, mods, types }
    }
    pub fn has(&self, m: &str) -> bool {
        self.mods.contains(&m)
    }
    /// The operation type (the last type suffix).
    pub fn ty(&self) -> Option<Ty> {
        self.types.last().copied()
    }
    /// Explicit IEEE rounding modifier.
    pub fn rnd(&self) -> Option<Rnd> {
        self.mods.iter().find_map(|m| match *m {
            "rn" | "rna" => Some(Rnd::Rn),
            "rz" => Some(Rnd::Rz),
            "rm" => Some(Rnd::Rm),
            "rp" => Some(Rnd::Rp),
            _ => None,
        })
    }
    pub fn cmp(&self) -> Option<(Cmp, bool)> {
        // The bool says whether the comparison forces an unsigned view (lo/ls/hi/hs).
        self.mods.iter().find_map(|m| {
            Some(match *m {
                "eq" => (Cmp::Eq, false),
                "ne" => (Cmp::Ne, false),
                "lt" => (Cmp::Lt, false),
                "le" => (Cmp::Le, false),
                "gt" => (Cmp::Gt, false),
                "ge" => (Cmp::Ge, false),
                "lo" => (Cmp::Lt, true),
                "ls" => (Cmp::Le, true),
                "hi" => (Cmp::Gt, true),
                "hs" => (Cmp::Ge, true),
                "equ" => (Cmp::Equ, false),
                "neu" => (Cmp::Neu, false),
                "ltu" => (Cmp::Ltu, false),
                "leu" => (Cmp::Leu, false),
                "gtu" => (Cmp::Gtu, false),
                "geu" => (Cmp::Geu, false),
                "num" => (Cmp::Num, false),
                "nan" => (Cmp::Nan, false),
                _ => return None,
            })
        })
    }
    /// State space modifier of a memory instruction (`None`: generic).
    pub fn space(&self) -> Option<MemSpaceName> {
        self.mods.iter().find_map(|m| {
            let m = m.split("::").next().unwrap_or(m);
            Some(match m {
                "global" => MemSpaceName::Global,
                "const" => MemSpaceName::Const,
                "shared" => MemSpaceName::Shared,
                "local" => MemSpaceName::Local,
                "param" => MemSpaceName::Param,
                _ => return None,
            })
        })
    }
    pub fn vec(&self) -> u8 {
        if self.has("v4") {
            4
        } else if self.has("v2") {
            2
        } else if self.has("v8") {
            8
        } else {
            1
        }
    }
}

/// A state-space name as written (before lowering decides how to access it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemSpaceName {
    Global,
    Const,
    Shared,
    Local,
    Param,
}

impl MemSpaceName {
    pub fn lowered(self) -> MemSpace {
        match self {
            MemSpaceName::Global | MemSpaceName::Const => MemSpace::Global,
            MemSpaceName::Shared => MemSpace::Shared,
            MemSpaceName::Local => MemSpace::Local,
            MemSpaceName::Param => MemSpace::Param,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_mnemonics() {
        let m = Mn::split("ld.global.nc.v4.f32");
        assert_eq!(m.base, "ld");
        assert_eq!(m.vec(), 4);
        assert_eq!(m.space(), Some(MemSpaceName::Global));
        assert_eq!(m.ty(), Some(Ty { k: TK::F, bits: 32 }));
        let c = Mn::split("cvt.rn.f32.s32");
        assert_eq!(c.types.len(), 2);
        assert_eq!(c.rnd(), Some(Rnd::Rn));
        assert_eq!(Mn::split("setp.hi.u32").cmp(), Some((Cmp::Gt, true)));
        assert_eq!(Ty::parse("f16x2").unwrap().k, TK::F2);
        assert_eq!(Ty::parse("bf16").unwrap().k, TK::BF);
        assert_eq!(Ty::parse("b128").unwrap().k, TK::Other);
        assert_eq!(Ty::parse("sync"), None);
        assert_eq!(
            Mn::split("ld.shared::cta.u32").space(),
            Some(MemSpaceName::Shared)
        );
    }
}
