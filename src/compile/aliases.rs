//! Type aliases of a `%%cuda` cell (`typedef float real;`, `using Vec = float*;`) and the
//! cell's type definitions that by-value parameters may name ([`CellTypes`]), so that a
//! parameter or a struct member written with an alias is classified as the type it stands for.
//!
//! Expansion works on tokens and is bounded ([`MAX_EXPANSIONS`]): an alias that names itself, or
//! a chain of them, stops instead of looping. It must never panic on user text.

use super::structs::StructDef;

/// `typedef TYPE NAME;` or `using NAME = TYPE;`: the name and the type's tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeAlias {
    pub name: String,
    pub type_tokens: Vec<String>,
}

/// The struct definitions and type aliases of a cell, in source order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CellTypes {
    pub structs: Vec<StructDef>,
    pub aliases: Vec<TypeAlias>,
}

/// Rounds of alias substitution (an alias of an alias of …); deeper chains stay unexpanded.
const MAX_EXPANSIONS: usize = 8;
/// Longest expanded type, in tokens.
const MAX_TOKENS: usize = 256;

impl CellTypes {
    /// `ty` with every alias name replaced by its type. `const P` where `P` is a pointer alias
    /// is `T* const` (the pointer is const, not what it points to), as in C.
    pub fn expand(&self, ty: &[String]) -> Vec<String> {
        let mut cur = ty.to_vec();
        if self.aliases.is_empty() {
            return cur;
        }
        for _ in 0..MAX_EXPANSIONS {
            let mut out: Vec<String> = Vec::with_capacity(cur.len());
            let mut changed = false;
            for (i, w) in cur.iter().enumerate() {
                let qualified = i > 0 && matches!(cur[i - 1].as_str(), "::" | ".");
                let alias = (!qualified)
                    .then(|| self.aliases.iter().rev().find(|a| a.name == *w))
                    .flatten();
                let Some(a) = alias else {
                    out.push(w.clone());
                    continue;
                };
                changed = true;
                if a.type_tokens.iter().any(|t| t == "*") {
                    // cv-qualifiers written before a pointer alias apply to the pointer.
                    let mut cv = Vec::new();
                    while out
                        .last()
                        .is_some_and(|t| matches!(t.as_str(), "const" | "volatile"))
                    {
                        cv.extend(out.pop());
                    }
                    out.extend(a.type_tokens.iter().cloned());
                    out.extend(cv);
                } else {
                    out.extend(a.type_tokens.iter().cloned());
                }
            }
            if out.len() > MAX_TOKENS {
                return cur;
            }
            cur = out;
            if !changed {
                break;
            }
        }
        cur
    }
}

/// The alias a top-level declaration (without its `;`) defines, if it is `typedef TYPE NAME`
/// or `using NAME = TYPE` (not a function type, an array type or a template alias).
pub fn parse_alias(words: &[&str]) -> Option<TypeAlias> {
    let (name, ty): (&str, &[&str]) = match words {
        ["typedef", ty @ .., name] => (name, ty),
        ["using", name, "=", ty @ ..] => (name, ty),
        _ => return None,
    };
    let ident = |s: &str| {
        let mut c = s.chars();
        matches!(c.next(), Some(ch) if ch == '_' || ch.is_ascii_alphabetic())
            && c.all(|ch| ch == '_' || ch.is_ascii_alphanumeric())
    };
    // A comma outside `<…>` separates declarators (`typedef int a, b;`): not one alias.
    let mut depth = 0i32;
    let mut several = false;
    for w in ty {
        match *w {
            "<" => depth += 1,
            ">" => depth -= 1,
            ">>" => depth -= 2,
            "," if depth <= 0 => several = true,
            _ => {}
        }
    }
    if ty.is_empty()
        || several
        || !ident(name)
        || ty.contains(&name)
        || ty
            .iter()
            .any(|w| matches!(*w, "(" | ")" | "[" | "]" | "{" | "}" | ";" | "="))
    {
        return None;
    }
    Some(TypeAlias {
        name: name.to_string(),
        type_tokens: ty.iter().map(|w| w.to_string()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    fn types(aliases: &[&str]) -> CellTypes {
        CellTypes {
            structs: Vec::new(),
            aliases: aliases
                .iter()
                .filter_map(|a| parse_alias(&a.split(' ').collect::<Vec<_>>()))
                .collect(),
        }
    }

    #[test]
    fn aliases_expand_scalars_pointers_and_chains() {
        let t = types(&[
            "typedef float ft",
            "using real = ft",
            "typedef float * fptr",
            "using Mat = Matrix",
        ]);
        assert_eq!(t.expand(&toks("const ft")), toks("const float"));
        assert_eq!(t.expand(&toks("real *")), toks("float *"));
        // `const fptr` is a const pointer to float, not a pointer to const float.
        assert_eq!(t.expand(&toks("const fptr")), toks("float * const"));
        assert_eq!(t.expand(&toks("Mat")), toks("Matrix"));
        let m = types(&["using m2 = mdspan < float , dextents < int , 2 >>"]);
        assert_eq!(
            m.expand(&toks("const m2")),
            toks("const mdspan < float , dextents < int , 2 >>")
        );
        // A qualified name is not an alias of the cell.
        assert_eq!(t.expand(&toks("ns :: ft")), toks("ns :: ft"));
    }

    #[test]
    fn odd_aliases_are_ignored_or_bounded() {
        for bad in [
            "typedef int",
            "typedef void ( * fn ) ( int )",
            "typedef float arr [ 4 ]",
            "using namespace cuda",
            "typedef struct S S",
            "typedef int a , b",
        ] {
            assert_eq!(
                parse_alias(&bad.split(' ').collect::<Vec<_>>()),
                None,
                "{bad}"
            );
        }
        // Two aliases naming each other stop after a bounded number of rounds.
        let t = types(&["typedef B A", "typedef A B"]);
        let out = t.expand(&toks("A"));
        assert_eq!(out.len(), 1);
        // Doubling aliases stop at the token limit instead of growing without end.
        let t = types(&["typedef B B2", "using B = C C"]);
        assert!(t.expand(&toks("B2")).len() <= MAX_TOKENS);
    }
}
