//! C scalar type names → dtypes: `unsigned long long` → u64, `float` → f32, `std::int8_t` → i8,
//! `bool` → u8. Shared by the kernel-signature scanner (`scan`) and the struct layouts
//! (`structs`), both of which sit above it.
//!
//! A pure function of the type's words: this module must not import `scan` or `structs`.

use crate::types::Dtype;

/// The dtype of a base type (without cv-qualifiers), e.g. `["unsigned", "long", "long"]`.
pub(crate) fn base_dtype(words: &[&str]) -> Option<Dtype> {
    if words.is_empty() {
        return None;
    }
    // `std::size_t`, `::int32_t`, `cuda::std::uint8_t` → the last component.
    if words.contains(&"::") {
        let last = words.last()?;
        return match words[words.len().saturating_sub(2)] {
            "::" => Dtype::from_c_name(last),
            _ => None,
        };
    }
    if words == ["bool"] {
        return Some(Dtype::U8);
    }
    let int_words = ["unsigned", "signed", "short", "long", "int", "char"];
    if words.iter().all(|w| int_words.contains(w)) {
        let unsigned = words.contains(&"unsigned");
        let longs = words.iter().filter(|w| **w == "long").count();
        let d = if words.contains(&"char") {
            if unsigned {
                Dtype::U8
            } else {
                Dtype::I8
            }
        } else if words.contains(&"short") {
            if unsigned {
                Dtype::U16
            } else {
                Dtype::I16
            }
        } else if longs > 0 {
            if unsigned {
                Dtype::U64
            } else {
                Dtype::I64
            }
        } else if unsigned {
            Dtype::U32
        } else {
            Dtype::I32
        };
        return Some(d);
    }
    if words.len() == 1 {
        return Dtype::from_c_name(words[0]);
    }
    None
}

/// What a pointer type (tokens, without the name) points to; None where it is not a pointer.
/// `const float*` → (f32, const); `float**`, `void*` and pointers to structs have no element
/// type.
pub(crate) fn pointee(ty: &[String]) -> Option<crate::types::Pointee> {
    let stars = ty.iter().filter(|w| *w == "*").count();
    let first_star = ty.iter().position(|w| w == "*")?;
    let base: Vec<&str> = ty[..first_star]
        .iter()
        .map(String::as_str)
        .filter(|w| {
            !matches!(
                *w,
                "const" | "volatile" | "struct" | "class" | "__restrict__"
            )
        })
        .collect();
    Some(crate::types::Pointee {
        elem: if stars == 1 { base_dtype(&base) } else { None },
        is_const: stars == 1 && ty[..first_star].iter().any(|w| w == "const"),
    })
}
