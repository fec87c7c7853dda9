//! `cuda::std::span` and `cuda::std::mdspan` parameters by value: their layout as libcu++
//! stores them, so that `%launch` can pass an array as the data pointer and its extents.
//!
//! `span<T>` is `{T* data; size_t size;}`, `span<T, N>` only the pointer; `mdspan<T, E>` with
//! the default layout (`layout_right`, C order like nbcuda's arrays) and accessor is the data
//! pointer followed by the extents that `E` (`extents<I, 4, dynamic_extent>`, `dextents<I, R>`,
//! `dims<R, I>`) leaves dynamic, as `I`s, the size a multiple of 8 (16 when every extent is
//! fixed). These layouts were read from the PTX parameter offsets NVRTC (CUDA 12.9's libcu++)
//! gives them. Other layouts, accessors and element types are not
//! laid out (the parameter cannot be passed from a magic). The compiled PTX parameter's size is
//! the final check (`gpu::kernels`). Parsing works on tokens and must never panic on user text.

use crate::types::{ArrayView, Dtype, ViewExtent};

/// Most dimensions of an mdspan nbcuda lays out.
const MAX_RANK: usize = 8;

/// The layout of a by-value parameter of type `ty` (tokens, aliases expanded) if it is a
/// `span` or `mdspan` nbcuda can pass an array to.
pub fn layout(ty: &[String]) -> Option<ArrayView> {
    let mut words: Vec<&str> = Vec::with_capacity(ty.len() + 2);
    for w in ty {
        if w == ">>" {
            words.extend([">", ">"]);
        } else {
            words.push(w);
        }
    }
    let words: Vec<&str> = words
        .into_iter()
        .filter(|w| !matches!(*w, "volatile" | "__restrict__"))
        .collect();
    // Top-level `const` (before the name or after the closing `>`) is the parameter's own.
    let start = words.iter().take_while(|w| **w == "const").count();
    let mut end = words.len();
    while end > start && words[end - 1] == "const" {
        end -= 1;
    }
    let (name, args) = template(&words[start..end])?;
    match name {
        "span" => {
            let [elem, rest @ ..] = args.as_slice() else {
                return None;
            };
            let extent = match rest {
                [] => None,
                [n] => extent_value(n)?,
                _ => return None,
            };
            view("span", elem, Dtype::U64, &[extent])
        }
        "mdspan" => {
            let (elem, ext, policy) = match args.as_slice() {
                [elem, ext, policy @ ..] if policy.len() <= 2 => (elem, ext, policy),
                _ => return None,
            };
            if let Some(l) = policy.first() {
                if unqualified(l) != ["layout_right"] {
                    return None;
                }
            }
            if let Some(a) = policy.get(1) {
                let (n, _) = template(a)?;
                if n != "default_accessor" {
                    return None;
                }
            }
            let (index, extents) = extents(ext)?;
            view("mdspan", elem, index, &extents)
        }
        _ => None,
    }
}

/// The pointer, then the dynamic extents as `index`, the size a multiple of 8.
fn view(
    what: &'static str,
    elem: &[&str],
    index: Dtype,
    extents: &[Option<usize>],
) -> Option<ArrayView> {
    if extents.is_empty() || extents.len() > MAX_RANK || index.is_float() {
        return None;
    }
    let is_const = elem.contains(&"const");
    let base: Vec<&str> = elem
        .iter()
        .copied()
        .filter(|w| !matches!(*w, "const" | "volatile"))
        .collect();
    let elem = super::ctype::base_dtype(&base)?;
    let mut at = 8;
    let mut out = Vec::with_capacity(extents.len());
    for e in extents {
        out.push(match e {
            Some(n) => ViewExtent::Fixed(*n),
            None => {
                let off = at;
                at += index.size();
                ViewExtent::Stored(off)
            }
        });
    }
    // An mdspan whose extents are all fixed keeps 8 bytes for its empty mapping and accessor
    // (NVRTC's libcu++ lays `mdspan<float, extents<int, 4, 4>>` out in 16 bytes).
    if what == "mdspan" && at == 8 {
        at = 16;
    }
    Some(ArrayView {
        what,
        elem,
        is_const,
        ptr_offset: 0,
        extents: out,
        index,
        size: at.div_ceil(8) * 8,
    })
}

/// The index type and extents (None: dynamic) of `extents<I, E...>`, `dextents<I, R>` or
/// `dims<R[, I]>`.
fn extents(ty: &[&str]) -> Option<(Dtype, Vec<Option<usize>>)> {
    let (name, args) = template(ty)?;
    let index = |t: &[&str]| super::ctype::base_dtype(t).filter(|d| !d.is_float());
    let rank = |t: &[&str]| match t {
        [n] => integer(n).filter(|r| (1..=MAX_RANK).contains(r)),
        _ => None,
    };
    match (name, args.as_slice()) {
        ("extents", [i, dims @ ..]) => {
            let ext = dims
                .iter()
                .map(|d| extent_value(d))
                .collect::<Option<Vec<_>>>()?;
            Some((index(i)?, ext))
        }
        ("dextents", [i, r]) => Some((index(i)?, vec![None; rank(r)?])),
        ("dims", [r]) => Some((Dtype::U64, vec![None; rank(r)?])),
        ("dims", [r, i]) => Some((index(i)?, vec![None; rank(r)?])),
        _ => None,
    }
}

/// An extent as written: a number (Some(Some(n))) or `dynamic_extent` (Some(None)).
fn extent_value(t: &[&str]) -> Option<Option<usize>> {
    match unqualified(t).as_slice() {
        ["dynamic_extent"] => Some(None),
        // `dynamic_extent` is `size_t(-1)`.
        [n] => integer(n).map(|v| (v != usize::MAX).then_some(v)),
        _ => None,
    }
}

/// `16`, `16u`, `16UL` → 16.
fn integer(s: &str) -> Option<usize> {
    s.trim_end_matches(['u', 'U', 'l', 'L']).parse().ok()
}

/// A name without a leading `cuda::std::`, `std::` or `::`.
fn unqualified<'a>(t: &[&'a str]) -> Vec<&'a str> {
    let mut t = t;
    if t.first() == Some(&"::") {
        t = &t[1..];
    }
    if let ["cuda", "::", "std", "::", rest @ ..] = t {
        t = rest;
    } else if let ["std", "::", rest @ ..] = t {
        t = rest;
    }
    t.to_vec()
}

/// `NAME < A , B >` (namespace prefix removed) → (NAME, [A, B]), the arguments split at
/// top-level commas; None unless the closing `>` ends the tokens.
fn template<'a>(t: &[&'a str]) -> Option<(&'a str, Vec<Vec<&'a str>>)> {
    let t = unqualified(t);
    let [name, "<", inner @ .., ">"] = t.as_slice() else {
        return None;
    };
    let mut args = vec![Vec::new()];
    let mut depth = 0i32;
    for w in inner {
        match *w {
            "<" | "(" => depth += 1,
            ">" | ")" => {
                depth -= 1;
                if depth < 0 {
                    return None;
                }
            }
            "," if depth == 0 => {
                args.push(Vec::new());
                continue;
            }
            _ => {}
        }
        args.last_mut()?.push(*w);
    }
    if depth != 0 || args.iter().any(Vec::is_empty) {
        return None;
    }
    Some((*name, args))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tokens as the scanner makes them (`::` and `>>` are one token).
    fn toks(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    fn stored(v: &ArrayView) -> Vec<ViewExtent> {
        v.extents.clone()
    }

    #[test]
    fn spans_are_a_pointer_and_a_size_t_unless_fixed() {
        let v = layout(&toks("cuda :: std :: span < float >")).expect("span");
        assert_eq!(
            (v.elem, v.is_const, v.size, v.index),
            (Dtype::F32, false, 16, Dtype::U64)
        );
        assert_eq!(stored(&v), [ViewExtent::Stored(8)]);
        let v = layout(&toks("const span < const double , 64 >")).expect("span");
        assert_eq!((v.elem, v.is_const, v.size), (Dtype::F64, true, 8));
        assert_eq!(stored(&v), [ViewExtent::Fixed(64)]);
        let v = layout(&toks("std :: span < int , cuda :: std :: dynamic_extent >")).expect("span");
        assert_eq!(stored(&v), [ViewExtent::Stored(8)]);
        for bad in [
            "span < float2 >",
            "span < float , 4 , 5 >",
            "span < >",
            "span < float",
            "span < float > x",
            "my :: span < float >",
            "span < float , n >",
        ] {
            assert_eq!(layout(&toks(bad)), None, "{bad}");
        }
    }

    #[test]
    fn mdspans_store_their_dynamic_extents_after_the_pointer() {
        let v = layout(&toks(
            "cuda :: std :: mdspan < float , cuda :: std :: dextents < int , 2 >>",
        ))
        .expect("mdspan");
        assert_eq!((v.what, v.index, v.size), ("mdspan", Dtype::I32, 16));
        assert_eq!(stored(&v), [ViewExtent::Stored(8), ViewExtent::Stored(12)]);
        let v = layout(&toks(
            "mdspan < const float , extents < size_t , 4 , dynamic_extent , 8 > , layout_right >",
        ))
        .expect("mdspan");
        assert!(v.is_const);
        assert_eq!(
            stored(&v),
            [
                ViewExtent::Fixed(4),
                ViewExtent::Stored(8),
                ViewExtent::Fixed(8)
            ]
        );
        assert_eq!(v.size, 16);
        let v = layout(&toks("mdspan < float , extents < int , 4 , 4 > >")).expect("mdspan");
        assert_eq!((v.size, v.extents.len()), (16, 2));
        let v = layout(&toks("mdspan < float , cuda :: std :: dims < 2 > >")).expect("mdspan");
        assert_eq!((v.index, v.size), (Dtype::U64, 24));
        assert_eq!(stored(&v), [ViewExtent::Stored(8), ViewExtent::Stored(16)]);
        let v = layout(&toks("mdspan < int , dextents < short , 3 > >")).expect("mdspan");
        assert_eq!(v.size, 16);
        assert_eq!(
            stored(&v),
            [
                ViewExtent::Stored(8),
                ViewExtent::Stored(10),
                ViewExtent::Stored(12)
            ]
        );
        for bad in [
            "mdspan < float , dextents < int , 2 > , layout_left >",
            "mdspan < float , dextents < int , 2 > , layout_right , my_accessor < float > >",
            "mdspan < float , dextents < float , 2 > >",
            "mdspan < float , dextents < int , 0 > >",
            "mdspan < float , dextents < int , 99 > >",
            "mdspan < float >",
            "mdspan < float , dextents < int , 2 >",
            "mdspan < float , dextents < int , 2 > > >",
        ] {
            assert_eq!(layout(&toks(bad)), None, "{bad}");
        }
    }
}
