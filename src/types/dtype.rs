//! Element types of device arrays (`f32`, `f16`, `i32`, …): their names in the command language,
//! their sizes and the C spellings that a CUDA kernel's pointer or scalar parameter may use for
//! them, and the conversions of the two 16-bit float types (`f16`: IEEE binary16, CUDA's
//! `__half`; `bf16`: bfloat16, CUDA's `__nv_bfloat16`) through the `half` crate.
//!
//! This module only describes types; it must not know about arrays, backends or parsing of
//! whole declarations (that is `crate::compile::scan`).

/// The element type of a device array or a scalar kernel parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dtype {
    F32,
    F64,
    F16,
    BF16,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
}

impl Dtype {
    /// Every dtype, in the order of the command language's documentation.
    pub const ALL: [Dtype; 12] = [
        Dtype::F32,
        Dtype::F64,
        Dtype::F16,
        Dtype::BF16,
        Dtype::I8,
        Dtype::I16,
        Dtype::I32,
        Dtype::I64,
        Dtype::U8,
        Dtype::U16,
        Dtype::U32,
        Dtype::U64,
    ];

    /// Parses exactly the DESIGN names (`f32`, `f64`, `f16`, `bf16`, `i8` … `u64`).
    pub fn parse(s: &str) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| d.name() == s)
    }

    /// The command-language name, e.g. `"f32"`.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F64 => "f64",
            Dtype::F16 => "f16",
            Dtype::BF16 => "bf16",
            Dtype::I8 => "i8",
            Dtype::I16 => "i16",
            Dtype::I32 => "i32",
            Dtype::I64 => "i64",
            Dtype::U8 => "u8",
            Dtype::U16 => "u16",
            Dtype::U32 => "u32",
            Dtype::U64 => "u64",
        }
    }

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            Dtype::I8 | Dtype::U8 => 1,
            Dtype::I16 | Dtype::U16 | Dtype::F16 | Dtype::BF16 => 2,
            Dtype::F32 | Dtype::I32 | Dtype::U32 => 4,
            Dtype::F64 | Dtype::I64 | Dtype::U64 => 8,
        }
    }

    /// The C/C++ spellings (after whitespace normalisation, without `const`/`signed` noise
    /// already folded) that denote this type in CUDA code on a 64-bit Linux host. The first one is
    /// the canonical spelling used in messages.
    pub fn c_names(self) -> &'static [&'static str] {
        match self {
            Dtype::F32 => &["float"],
            Dtype::F64 => &["double"],
            Dtype::F16 => &["__half", "half"],
            Dtype::BF16 => &["__nv_bfloat16", "nv_bfloat16"],
            Dtype::I8 => &["signed char", "int8_t", "char"],
            Dtype::I16 => &[
                "short",
                "int16_t",
                "short int",
                "signed short",
                "signed short int",
            ],
            Dtype::I32 => &["int", "int32_t", "signed int", "signed"],
            Dtype::I64 => &[
                "long long",
                "int64_t",
                "long",
                "long int",
                "long long int",
                "signed long",
                "signed long long",
                "ptrdiff_t",
                "ssize_t",
                "intptr_t",
            ],
            Dtype::U8 => &["unsigned char", "uint8_t", "uchar"],
            Dtype::U16 => &["unsigned short", "uint16_t", "unsigned short int", "ushort"],
            Dtype::U32 => &["unsigned int", "uint32_t", "unsigned", "uint"],
            Dtype::U64 => &[
                "unsigned long long",
                "uint64_t",
                "size_t",
                "unsigned long",
                "unsigned long int",
                "unsigned long long int",
                "uintptr_t",
                "ulong",
            ],
        }
    }

    /// The dtype that a C type name denotes, if it is one of [`Dtype::c_names`].
    pub fn from_c_name(c: &str) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| d.c_names().contains(&c))
    }

    /// `f32`, `f64`, `f16` or `bf16`.
    pub fn is_float(self) -> bool {
        matches!(self, Dtype::F32 | Dtype::F64 | Dtype::F16 | Dtype::BF16)
    }

    /// `f16` or `bf16`: floats stored as 16 bits, converted with [`Dtype::half_bits`] and
    /// [`Dtype::half_value`].
    pub fn is_half(self) -> bool {
        matches!(self, Dtype::F16 | Dtype::BF16)
    }

    /// Signed integers and floats.
    pub fn is_signed(self) -> bool {
        self.is_float() || matches!(self, Dtype::I8 | Dtype::I16 | Dtype::I32 | Dtype::I64)
    }

    /// The bits of `v` rounded to nearest (ties to even) in this 16-bit float type, as CUDA's
    /// `__double2half` / `__double2bfloat16` round (overflow gives infinity, NaN stays NaN).
    /// `None` for other dtypes.
    pub fn half_bits(self, v: f64) -> Option<u16> {
        match self {
            Dtype::F16 => Some(half::f16::from_f64(v).to_bits()),
            Dtype::BF16 => Some(half::bf16::from_f64(v).to_bits()),
            _ => None,
        }
    }

    /// The value of 16 bits of this 16-bit float type (exact in f64). `None` for other dtypes.
    pub fn half_value(self, bits: u16) -> Option<f64> {
        match self {
            Dtype::F16 => Some(half::f16::from_bits(bits).to_f64()),
            Dtype::BF16 => Some(half::bf16::from_bits(bits).to_f64()),
            _ => None,
        }
    }
}

impl std::fmt::Display for Dtype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_c_names_are_unique() {
        for d in Dtype::ALL {
            assert_eq!(Dtype::parse(d.name()), Some(d));
            for c in d.c_names() {
                assert_eq!(Dtype::from_c_name(c), Some(d), "{c}");
            }
        }
        assert_eq!(Dtype::parse("float32"), None);
        assert_eq!(Dtype::from_c_name("size_t"), Some(Dtype::U64));
        assert_eq!(Dtype::from_c_name("unsigned int"), Some(Dtype::U32));
        assert_eq!(Dtype::from_c_name("float2"), None);
        assert_eq!(Dtype::from_c_name("__half"), Some(Dtype::F16));
        assert_eq!(Dtype::from_c_name("__nv_bfloat16"), Some(Dtype::BF16));
    }

    #[test]
    fn half_conversions_round_to_nearest_even() {
        // f16: 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0).
        assert_eq!(Dtype::F16.half_bits(1.0 + 2f64.powi(-11)), Some(0x3C00));
        assert_eq!(
            Dtype::F16.half_bits(1.0 + 3.0 * 2f64.powi(-11)),
            Some(0x3C02)
        );
        assert_eq!(Dtype::F16.half_bits(65520.0), Some(0x7C00)); // rounds past 65504: inf
        assert_eq!(Dtype::F16.half_value(0x0001), Some(2f64.powi(-24)));
        // bf16 keeps f32's exponent: 1e38 is finite, 1 + 2^-8 ties to 1.0.
        assert_eq!(Dtype::BF16.half_bits(1.0 + 2f64.powi(-8)), Some(0x3F80));
        assert!(Dtype::BF16
            .half_value(Dtype::BF16.half_bits(1e38).unwrap())
            .unwrap()
            .is_finite());
        assert_eq!(Dtype::F32.half_bits(1.0), None);
        for bits in [0u16, 0x3C00, 0x7BFF, 0x8001, 0xFC00] {
            let v = Dtype::F16.half_value(bits).unwrap();
            assert_eq!(Dtype::F16.half_bits(v), Some(bits));
        }
    }
}
