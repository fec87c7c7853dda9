//! Element types of device arrays (`f32`, `i32`, …): their names in the command language, their
//! sizes and the C spellings that a CUDA kernel's pointer or scalar parameter may use for them.
//!
//! This module only describes types; it must not know about arrays, backends or parsing of
//! whole declarations (that is `crate::compile::scan`).

/// The element type of a device array or a scalar kernel parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dtype {
    F32,
    F64,
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
    pub const ALL: [Dtype; 10] = [
        Dtype::F32,
        Dtype::F64,
        Dtype::I8,
        Dtype::I16,
        Dtype::I32,
        Dtype::I64,
        Dtype::U8,
        Dtype::U16,
        Dtype::U32,
        Dtype::U64,
    ];

    /// Parses exactly the DESIGN names (`f32`, `f64`, `i8` … `u64`).
    pub fn parse(s: &str) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| d.name() == s)
    }

    /// The command-language name, e.g. `"f32"`.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F64 => "f64",
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
            Dtype::I16 | Dtype::U16 => 2,
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

    /// `f32` or `f64`.
    pub fn is_float(self) -> bool {
        matches!(self, Dtype::F32 | Dtype::F64)
    }

    /// Signed integers and floats.
    pub fn is_signed(self) -> bool {
        matches!(
            self,
            Dtype::F32 | Dtype::F64 | Dtype::I8 | Dtype::I16 | Dtype::I32 | Dtype::I64
        )
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
    }
}
