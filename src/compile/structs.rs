//! By-value aggregate parameters of CUDA kernels: CUDA's vector types (`float2`, `int3`,
//! `uint4`, …) and structs and classes of numbers and pointers defined in the `%%cuda` cell
//! (nested structs and fixed arrays included, members named through the cell's aliases), laid
//! out by the C rules (each member at the next multiple of its alignment, the size a multiple of
//! the largest alignment) so that `%launch` can pack a tuple `(1.0, 2.0)` or
//! `Matrix(width=4, elements=a)` into the parameter's bytes.
//!
//! The struct definitions come from the cell's scanner ([`super::scan`]); this module only
//! computes layouts. It must never panic on user text: a member it does not know (a union, a
//! bit-field, a template) makes the whole struct unknown, and the parameter then cannot be
//! passed from a magic. The compiled PTX parameter's size is the final check (`gpu::kernels`):
//! a layout that disagrees with it is not used.

use super::aliases::CellTypes;
use crate::types::{Aggregate, AggregateField, Dtype};

/// A `struct NAME { … };` or `typedef struct { … } NAME;` of the cell.
#[derive(Debug, Clone, PartialEq)]
pub struct StructDef {
    pub name: String,
    pub members: Vec<Member>,
    /// `__align__(N)` / `alignas(N)` on the struct.
    pub align: Option<usize>,
}

/// One member declarator: its type tokens, its name and its array length (`float w[5]`).
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub type_tokens: Vec<String>,
    pub name: String,
    pub count: Option<usize>,
}

/// Nesting depth of structs in structs that we lay out (deeper: unknown).
const MAX_DEPTH: usize = 8;
/// Most fields (numbers) of one aggregate parameter (more than anyone writes as a tuple in a
/// magic line; CUDA's whole parameter space is 32,764 bytes).
const MAX_FIELDS: usize = 4096;

/// The element type and count of a CUDA vector type: `float3` → (f32, 3).
pub fn vector_type(name: &str) -> Option<(Dtype, usize)> {
    // cuda_fp16.h / cuda_bf16.h: `struct __align__(4) { x, y }`, as `short2`'s layout.
    match name {
        "__half2" | "half2" => return Some((Dtype::F16, 2)),
        "__nv_bfloat162" | "nv_bfloat162" => return Some((Dtype::BF16, 2)),
        _ => {}
    }
    let n = name.chars().last()?.to_digit(10)? as usize;
    if !(1..=4).contains(&n) {
        return None;
    }
    let d = match &name[..name.len() - 1] {
        "char" => Dtype::I8,
        "uchar" => Dtype::U8,
        "short" => Dtype::I16,
        "ushort" => Dtype::U16,
        "int" => Dtype::I32,
        "uint" => Dtype::U32,
        "long" | "longlong" => Dtype::I64,
        "ulong" | "ulonglong" => Dtype::U64,
        "float" => Dtype::F32,
        "double" => Dtype::F64,
        _ => return None,
    };
    Some((d, n))
}

/// The layout of a vector type: `x, y, z, w` fields; alignment as CUDA's `vector_types.h`
/// declares it (size × n for 1 and 2 elements, the element's for 3, at most 16 for 4).
fn vector_layout(d: Dtype, n: usize) -> Aggregate {
    let s = d.size();
    let align = match n {
        1 => s,
        2 => 2 * s,
        3 => s,
        _ => (4 * s).min(16),
    };
    let fields = ["x", "y", "z", "w"][..n]
        .iter()
        .enumerate()
        .map(|(i, f)| AggregateField {
            name: f.to_string(),
            dtype: d,
            offset: i * s,
            pointer: None,
        })
        .collect();
    Aggregate {
        name: vector_name(d, n),
        fields,
        size: (n * s).div_ceil(align) * align,
        align,
    }
}

/// The name of a vector type, for the named syntax: (f32, 2) → `float2`.
fn vector_name(d: Dtype, n: usize) -> String {
    let base = match d {
        Dtype::F16 => return "half2".into(),
        Dtype::BF16 => return "nv_bfloat162".into(),
        Dtype::I8 => "char",
        Dtype::U8 => "uchar",
        Dtype::I16 => "short",
        Dtype::U16 => "ushort",
        Dtype::I32 => "int",
        Dtype::U32 => "uint",
        Dtype::I64 => "longlong",
        Dtype::U64 => "ulonglong",
        Dtype::F32 => "float",
        Dtype::F64 => "double",
    };
    format!("{base}{n}")
}

/// A type as written without its cv-qualifiers and `struct`: `const float` → `float`.
pub fn base_words(type_tokens: &[String]) -> Vec<&str> {
    type_tokens
        .iter()
        .map(String::as_str)
        .filter(|w| !matches!(*w, "const" | "volatile" | "struct" | "class"))
        .collect()
}

/// The element dtype and lane count of a number or CUDA vector type: `unsigned int` → (u32, 1),
/// `float2` → (f32, 2).
pub fn element_type(type_tokens: &[String]) -> Option<(Dtype, usize)> {
    let words = base_words(type_tokens);
    if let Some(d) = scalar(&words) {
        return Some((d, 1));
    }
    match words.as_slice() {
        [one] => vector_type(one),
        _ => None,
    }
}

/// A number: one field with an empty name (a struct member's field takes the member's name).
fn scalar_layout(d: Dtype) -> Aggregate {
    Aggregate {
        name: d.c_names()[0].to_string(),
        fields: vec![AggregateField {
            name: String::new(),
            dtype: d,
            offset: 0,
            pointer: None,
        }],
        size: d.size(),
        align: d.size(),
    }
}

/// A pointer member: one field with an empty name, 8 bytes.
fn pointer_layout(p: crate::types::Pointee) -> Aggregate {
    Aggregate {
        name: "pointer".into(),
        fields: vec![AggregateField {
            name: String::new(),
            dtype: Dtype::U64,
            offset: 0,
            pointer: Some(p),
        }],
        size: 8,
        align: 8,
    }
}

/// The layout of a by-value parameter of base type `words` (aliases expanded, cv-qualifiers and
/// `struct` removed), or None where nbcuda cannot lay it out.
pub fn layout(words: &[&str], types: &CellTypes) -> Option<Aggregate> {
    layout_at(words, types, 0)
}

fn layout_at(words: &[&str], types: &CellTypes, depth: usize) -> Option<Aggregate> {
    if depth > MAX_DEPTH {
        return None;
    }
    let [name] = words else {
        return scalar(words).map(scalar_layout);
    };
    if let Some((d, n)) = vector_type(name) {
        return Some(vector_layout(d, n));
    }
    if let Some(d) = scalar(words) {
        return Some(scalar_layout(d));
    }
    let def = types.structs.iter().rev().find(|s| s.name == *name)?;
    let mut out = Aggregate {
        name: def.name.clone(),
        fields: Vec::new(),
        size: 0,
        align: def.align.unwrap_or(1).max(1),
    };
    for m in &def.members {
        let ty = types.expand(&m.type_tokens);
        let inner = match super::ctype::pointee(&ty) {
            Some(p) => pointer_layout(p),
            None => layout_at(&base_words(&ty), types, depth + 1)?,
        };
        let count = m.count.unwrap_or(1);
        let off0 = out.size.div_ceil(inner.align) * inner.align;
        for k in 0..count {
            let base_off = off0 + k * inner.size;
            for f in &inner.fields {
                let name = match (m.count, f.name.as_str()) {
                    (None, "") => m.name.clone(),
                    (None, sub) => format!("{}.{sub}", m.name),
                    (Some(_), "") => format!("{}[{k}]", m.name),
                    (Some(_), sub) => format!("{}[{k}].{sub}", m.name),
                };
                out.fields.push(AggregateField {
                    name,
                    dtype: f.dtype,
                    offset: base_off + f.offset,
                    pointer: f.pointer,
                });
                if out.fields.len() > MAX_FIELDS {
                    return None;
                }
            }
        }
        out.size = off0 + count * inner.size;
        out.align = out.align.max(inner.align);
    }
    if out.fields.is_empty() {
        return None;
    }
    out.size = out.size.div_ceil(out.align) * out.align;
    Some(out)
}

/// A scalar member type; its one field has an empty name (the member's own).
fn scalar(words: &[&str]) -> Option<Dtype> {
    if words
        .iter()
        .any(|w| matches!(*w, "*" | "&" | "&&" | "(" | ":"))
    {
        return None;
    }
    super::ctype::base_dtype(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &str, members: &[(&str, &str, Option<usize>)]) -> StructDef {
        StructDef {
            name: name.into(),
            members: members
                .iter()
                .map(|(t, n, c)| Member {
                    type_tokens: t.split(' ').map(String::from).collect(),
                    name: n.to_string(),
                    count: *c,
                })
                .collect(),
            align: None,
        }
    }

    fn offsets(a: &Aggregate) -> Vec<(String, usize)> {
        a.fields
            .iter()
            .map(|f| (f.name.clone(), f.offset))
            .collect()
    }

    #[test]
    fn vector_types_have_cudas_sizes_and_alignments() {
        for (name, size, align) in [
            ("float2", 8, 8),
            ("__half2", 4, 4),
            ("__nv_bfloat162", 4, 4),
            ("float3", 12, 4),
            ("float4", 16, 16),
            ("int3", 12, 4),
            ("uint2", 8, 8),
            ("double2", 16, 16),
            ("double4", 32, 16),
            ("char4", 4, 4),
            ("short2", 4, 4),
            ("uchar3", 3, 1),
            ("longlong2", 16, 16),
        ] {
            let a = layout(&[name], &CellTypes::default()).unwrap_or_else(|| panic!("{name}"));
            assert_eq!((a.size, a.align), (size, align), "{name}");
        }
        let none = CellTypes::default();
        assert!(layout(&["float5"], &none).is_none());
        assert!(layout(&["half3"], &none).is_none());
    }

    #[test]
    fn structs_follow_the_c_layout_rules() {
        let p = def(
            "Params",
            &[
                ("float", "a", None),
                ("double", "b", None),
                ("int", "n", None),
            ],
        );
        let a = layout(&["Params"], &with(std::slice::from_ref(&p))).expect("layout");
        assert_eq!(
            offsets(&a),
            [("a".into(), 0), ("b".into(), 8), ("n".into(), 16)]
        );
        assert_eq!((a.size, a.align), (24, 8));
        let outer = def(
            "Body",
            &[
                ("float2", "pos", None),
                ("char", "tag", None),
                ("Params", "p", None),
                ("short", "w", Some(3)),
            ],
        );
        let structs = [p, outer];
        let b = layout(&["Body"], &with(&structs)).expect("layout");
        assert_eq!(
            offsets(&b),
            [
                ("pos.x".into(), 0),
                ("pos.y".into(), 4),
                ("tag".into(), 8),
                ("p.a".into(), 16),
                ("p.b".into(), 24),
                ("p.n".into(), 32),
                ("w[0]".into(), 40),
                ("w[1]".into(), 42),
                ("w[2]".into(), 44),
            ]
        );
        assert_eq!((b.size, b.align), (48, 8));
        // A member we cannot lay out (a union) makes the struct unknown.
        let bad = def("Bad", &[("float", "a", None), ("union U", "u", None)]);
        assert!(layout(&["Bad"], &with(&[bad])).is_none());
        // A struct that contains itself does not recurse forever.
        let selfish = def("S", &[("S", "s", None)]);
        assert!(layout(&["S"], &with(&[selfish])).is_none());
    }

    fn with(structs: &[StructDef]) -> CellTypes {
        CellTypes {
            structs: structs.to_vec(),
            aliases: Vec::new(),
        }
    }

    #[test]
    fn pointer_members_are_8_byte_fields_with_their_pointee() {
        // The CUDA Programming Guide's shared-memory matmul: `Matrix` by value.
        let m = def(
            "Matrix",
            &[
                ("int", "width", None),
                ("int", "height", None),
                ("int", "stride", None),
                ("float *", "elements", None),
            ],
        );
        let a = layout(&["Matrix"], &with(std::slice::from_ref(&m))).expect("layout");
        assert_eq!(
            offsets(&a),
            [
                ("width".into(), 0),
                ("height".into(), 4),
                ("stride".into(), 8),
                ("elements".into(), 16),
            ]
        );
        assert_eq!((a.size, a.align, a.name.as_str()), (24, 8, "Matrix"));
        let p = a.fields[3].pointer.expect("a pointer field");
        assert_eq!((p.elem, p.is_const), (Some(Dtype::F32), false));
        // Nested, arrays of pointers, const and void pointers, members named through aliases.
        let mut types = with(&[
            m,
            def(
                "Pair",
                &[
                    ("Matrix", "a", None),
                    ("const real *", "rows", Some(2)),
                    ("void *", "scratch", None),
                    ("char", "tag", None),
                ],
            ),
        ]);
        types.aliases.push(crate::compile::aliases::TypeAlias {
            name: "real".into(),
            type_tokens: vec!["double".into()],
        });
        let b = layout(&["Pair"], &types).expect("layout");
        let names: Vec<String> = b.fields.iter().map(|f| f.name.clone()).collect();
        assert_eq!(
            names,
            [
                "a.width",
                "a.height",
                "a.stride",
                "a.elements",
                "rows[0]",
                "rows[1]",
                "scratch",
                "tag"
            ]
        );
        assert_eq!(b.fields[5].offset, 32);
        let rows = b.fields[5].pointer.expect("pointer");
        assert_eq!((rows.elem, rows.is_const), (Some(Dtype::F64), true));
        assert_eq!(b.fields[6].pointer.map(|p| p.elem), Some(None));
        assert_eq!((b.fields[7].offset, b.size), (48, 56));
    }
}
