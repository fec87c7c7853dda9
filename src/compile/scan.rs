//! A small, tolerant scanner for the `__global__` functions of a `%%cuda` cell: their names,
//! namespaces, template parameters and C parameter lists, so that kernels can be registered with
//! NVRTC name expressions and their arguments checked before a launch.
//!
//! It is not a C++ parser: it skips comments, string literals, preprocessor lines and every
//! `{ … }` body that is not a namespace or `extern "C"` block, and it reads declarations token by
//! token. Anything it cannot classify becomes [`ParamKind::Other`]. It must never panic on user
//! text, and it never decides whether the code compiles (NVRTC does).

use super::aliases::{self, CellTypes};
use super::ctype;
use super::structs::{Member, StructDef};
use crate::types::{KernelParam, ParamKind};

/// One token with the 1-based source line it starts on.
#[derive(Debug, Clone, PartialEq)]
struct Tok {
    text: String,
    line: usize,
}

/// A template parameter: `typename T`, `class T`, `int N`, with an optional default.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateParam {
    pub name: String,
    /// `typename`/`class` or the type of a non-type parameter.
    pub kind: String,
    pub default: Option<String>,
}

/// One parameter as written: its type tokens (without the name) and its name.
#[derive(Debug, Clone, PartialEq)]
pub struct RawParam {
    pub name: Option<String>,
    pub type_tokens: Vec<String>,
}

/// A `__global__` function found in the source.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelDecl {
    /// The unqualified name, which users launch (`add`, `scale`).
    pub name: String,
    /// The name with its namespaces (`ns::add`), for name expressions.
    pub qualified: String,
    /// `Some` for a function template.
    pub template_params: Option<Vec<TemplateParam>>,
    pub params: Vec<RawParam>,
    /// Source line of the name.
    pub line: usize,
    /// Another `__global__` of the same name with a different parameter list exists.
    pub overloaded: bool,
    /// Every distinct parameter list declared under this name (more than one: overloads), as
    /// written: `MatMul(Matrix A, Matrix B)`.
    pub overloads: Vec<String>,
    /// The cell's struct definitions and type aliases, for parameters passed by value.
    pub types: CellTypes,
}

/// Everything the scanner found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScanResult {
    pub kernels: Vec<KernelDecl>,
    /// Instantiations named in the source (`template __global__ void scale<float>(…);` or an
    /// explicit specialisation), as user names (`scale<float>`).
    pub instantiations: Vec<String>,
    /// Module-scope `__constant__` and `__device__` variables (not `extern`, not `__shared__`).
    pub variables: Vec<DeviceVariable>,
}

/// A `__constant__ float taps[5];` or `__device__ int counter;` of the cell.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceVariable {
    /// The C name, which becomes the array's name.
    pub name: String,
    /// With its namespaces, for the name expression `&ns::name`.
    pub qualified: String,
    /// `"__constant__"` or `"__device__"`.
    pub space: &'static str,
    /// The element type as written (`float`, `unsigned int`, `float2`).
    pub type_tokens: Vec<String>,
    /// Array dimensions as written (None where not an integer literal); empty for a scalar.
    pub dims: Vec<Option<usize>>,
    pub line: usize,
}

impl ScanResult {
    pub fn kernel(&self, name: &str) -> Option<&KernelDecl> {
        self.kernels.iter().find(|k| k.name == name)
    }
}

/// Finds every `__global__` function of `source`.
pub fn scan(source: &str) -> ScanResult {
    let toks = tokenize(source);
    let mut result = ScanResult::default();
    let mut types = CellTypes::default();
    let mut ns: Vec<Option<String>> = Vec::new(); // None: transparent scope (extern "C" { })
    let mut stmt_start = 0usize;
    let mut i = 0usize;
    while i < toks.len() {
        let t = toks[i].text.as_str();
        match t {
            ";" => {
                parse_variables(&toks[stmt_start..i], &ns, &mut result.variables);
                let words: Vec<&str> = toks[stmt_start..i]
                    .iter()
                    .map(|t| t.text.as_str())
                    .collect();
                types.aliases.extend(aliases::parse_alias(&words));
                i += 1;
                stmt_start = i;
            }
            "}" => {
                ns.pop();
                i += 1;
                stmt_start = i;
            }
            "{" => {
                // A namespace or extern "C" block opens a scope we look into; any other body is
                // skipped whole.
                let head: Vec<&str> = toks[stmt_start..i]
                    .iter()
                    .map(|t| t.text.as_str())
                    .collect();
                if head.first() == Some(&"namespace") || head.first() == Some(&"inline") {
                    let name = head
                        .iter()
                        .skip_while(|t| **t != "namespace")
                        .skip(1)
                        .copied()
                        .collect::<Vec<_>>()
                        .join("");
                    ns.push(Some(name));
                    i += 1;
                } else if head.len() == 2 && head[0] == "extern" && head[1].starts_with('"') {
                    ns.push(None);
                    i += 1;
                } else if let Some(eq) = head.iter().position(|w| *w == "=") {
                    // `__constant__ float lut[4] = { … };`: a variable with an initializer.
                    parse_variables(
                        &toks[stmt_start..stmt_start + eq],
                        &ns,
                        &mut result.variables,
                    );
                    i = skip_balanced(&toks, i);
                    while i < toks.len() && toks[i].text != ";" {
                        i += 1;
                    }
                } else {
                    let end = skip_balanced(&toks, i);
                    if let Some(def) =
                        parse_struct(&toks[stmt_start..i], &toks[i + 1..end - 1], &toks[end..])
                    {
                        types.structs.push(def);
                    }
                    i = end;
                }
                stmt_start = i;
            }
            "__global__" => {
                let end = statement_end(&toks, i);
                if let Some(found) = parse_declaration(&toks[stmt_start..end], &ns) {
                    match found {
                        Found::Kernel(k) => add_kernel(&mut result, k, &types),
                        Found::Instantiation(name) => {
                            if !result.instantiations.contains(&name) {
                                result.instantiations.push(name)
                            }
                        }
                    }
                }
                // Skip the body (if any) of this function.
                i = end;
                if i < toks.len() && toks[i].text == "{" {
                    i = skip_balanced(&toks, i);
                } else if i < toks.len() {
                    i += 1;
                }
                stmt_start = i;
            }
            _ => i += 1,
        }
    }
    for k in &mut result.kernels {
        k.types = types.clone();
    }
    result
}

/// The variables of one top-level declaration (up to `;` or its `=`), if it declares
/// `__constant__`/`__device__` variables: `__constant__ float a[4], b;`.
fn parse_variables(decl: &[Tok], ns: &[Option<String>], out: &mut Vec<DeviceVariable>) {
    let words: Vec<&str> = decl.iter().map(|t| t.text.as_str()).collect();
    let space = if words.contains(&"__constant__") {
        "__constant__"
    } else if words.contains(&"__device__") || words.contains(&"__managed__") {
        "__device__"
    } else {
        return;
    };
    if words.iter().any(|w| {
        matches!(
            *w,
            "(" | "extern" | "__shared__" | "template" | "typedef" | "<"
        )
    }) {
        return; // a function, a declaration without storage, shared memory, a template
    }
    // Drop an initializer of a later declarator: `a = 1, b = 2` keeps `a`, `b`.
    let qualifiers = [
        "__constant__",
        "__device__",
        "__managed__",
        "static",
        "const",
        "volatile",
        "constexpr",
        "inline",
    ];
    let parts: Vec<&[&str]> = words.split(|w| *w == ",").collect();
    let mut ty: Vec<String> = Vec::new();
    let prefix: Vec<String> = ns.iter().flatten().cloned().collect();
    for (k, part) in parts.iter().enumerate() {
        let part: Vec<&str> = part
            .iter()
            .copied()
            .take_while(|w| *w != "=")
            .filter(|w| !qualifiers.contains(w))
            .collect();
        let name_at = part.iter().position(|w| *w == "[").unwrap_or(part.len());
        if name_at == 0 {
            return;
        }
        let name = part[name_at - 1];
        if !is_identifier(name) || part[..name_at - 1].contains(&"*") || part.contains(&"&") {
            return; // a pointer variable: not an array of numbers
        }
        if k == 0 {
            ty = part[..name_at - 1].iter().map(|w| w.to_string()).collect();
            if ty.is_empty() {
                return;
            }
        }
        let mut dims = Vec::new();
        let mut j = name_at;
        while j < part.len() {
            match (part.get(j), part.get(j + 1), part.get(j + 2)) {
                (Some(&"["), Some(n), Some(&"]")) => {
                    dims.push(n.parse::<usize>().ok());
                    j += 3;
                }
                (Some(&"["), _, _) => {
                    dims.push(None);
                    j = part[j..]
                        .iter()
                        .position(|w| *w == "]")
                        .map_or(part.len(), |e| j + e + 1);
                }
                _ => return,
            }
        }
        let mut qualified = prefix.clone();
        qualified.push(name.to_string());
        out.push(DeviceVariable {
            name: name.to_string(),
            qualified: qualified.join("::"),
            space,
            type_tokens: ty.clone(),
            dims,
            line: decl.first().map_or(0, |t| t.line),
        });
    }
}

/// A struct or class definition: `head` is what comes before `{` (`struct NAME`, `class NAME`,
/// `typedef struct`, with an optional `__align__(N)`/`alignas(N)` of at most 4096), `body` the
/// members, `after`
/// what follows `}` (a typedef's name). Access specifiers, static members, member functions
/// (not virtual ones) and default member initializers do not change the layout and are skipped.
/// None for anything else (a union, a base class, a bit-field, a nested definition, a function
/// body).
fn parse_struct(head: &[Tok], body: &[Tok], after: &[Tok]) -> Option<StructDef> {
    let words: Vec<&str> = head.iter().map(|t| t.text.as_str()).collect();
    let typedef = words.first() == Some(&"typedef");
    let rest = if typedef { &words[1..] } else { &words[..] };
    if !matches!(rest.first(), Some(&"struct") | Some(&"class")) {
        return None;
    }
    let mut align = None;
    let mut name = None;
    let mut j = 1;
    while j < rest.len() {
        match rest[j] {
            "__align__" | "alignas" if rest.get(j + 1) == Some(&"(") => {
                align = rest.get(j + 2).and_then(|n| n.parse::<usize>().ok());
                if rest.get(j + 3) != Some(&")")
                    || align.is_none_or(|a| !a.is_power_of_two() || a > 4096)
                {
                    return None;
                }
                j += 4;
            }
            w if is_identifier(w) && name.is_none() => {
                name = Some(w.to_string());
                j += 1;
            }
            _ => return None,
        }
    }
    if typedef {
        // `typedef struct [tag] { … } NAME;`
        match after {
            [n, semi, ..] if is_identifier(&n.text) && semi.text == ";" => {
                name = Some(n.text.clone())
            }
            _ => return None,
        }
    }
    let mut members = Vec::new();
    for d in member_declarations(body)? {
        let mut d: &[&str] = &d;
        while let [access, ":", tail @ ..] = d {
            if !matches!(*access, "public" | "private" | "protected") {
                break;
            }
            d = tail;
        }
        if d.is_empty()
            || matches!(
                d[0],
                "static" | "using" | "typedef" | "friend" | "template" | "static_assert"
            )
        {
            continue;
        }
        let init = d.iter().position(|w| *w == "=").unwrap_or(d.len());
        if d[..init].contains(&"(") {
            if d.contains(&"virtual") {
                return None; // a vtable pointer nbcuda does not lay out
            }
            continue; // a member function or constructor
        }
        if d.iter()
            .any(|w| matches!(*w, "{" | "}" | ":" | "union" | "enum"))
        {
            return None;
        }
        let d = without_initializers(d);
        // `TYPE a, *p, b[3]` → the type is what precedes the first declarator.
        let parts: Vec<&[&str]> = d.split(|w| *w == ",").collect();
        let first = parts[0];
        let first_name = first
            .iter()
            .rposition(|w| is_identifier(w) && *w != "const")?;
        let first_dims = &first[first_name..];
        let ty: Vec<String> = first[..first_name].iter().map(|w| w.to_string()).collect();
        if ty.is_empty() {
            return None;
        }
        // Later declarators bring their own `*`s: the shared type is the first's without them.
        let shared: Vec<String> = ty
            .iter()
            .rev()
            .skip_while(|w| *w == "*" || *w == "const")
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .cloned()
            .collect();
        let declarators = std::iter::once((ty, first_dims)).chain(parts[1..].iter().map(|p| {
            let stars = p.iter().take_while(|w| **w == "*").count();
            let mut t = shared.clone();
            t.extend(std::iter::repeat_n("*".to_string(), stars));
            (t, &p[stars..])
        }));
        for (ty, dcl) in declarators {
            let (mname, count) = match dcl {
                [n] => (*n, None),
                [n, "[", len, "]"] => (*n, Some(len.parse::<usize>().ok().filter(|c| *c > 0)?)),
                _ => return None,
            };
            if !is_identifier(mname) {
                return None;
            }
            members.push(Member {
                type_tokens: ty,
                name: mname.to_string(),
                count,
            });
        }
    }
    Some(StructDef {
        name: name?,
        members,
        align,
    })
}

/// The member declarations of a struct body: split at `;`, a member function's `{ … }` body
/// ending its declaration. None when the braces do not balance.
fn member_declarations(body: &[Tok]) -> Option<Vec<Vec<&str>>> {
    let mut out = Vec::new();
    let mut cur: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let t = body[i].text.as_str();
        match t {
            ";" => out.push(std::mem::take(&mut cur)),
            "{" if cur.contains(&"(") => {
                // A function body (after a constructor's initializer list, too).
                let end = skip_balanced(body, i);
                if end > body.len() || body.get(end - 1).map(|t| t.text.as_str()) != Some("}") {
                    return None;
                }
                out.push(std::mem::take(&mut cur));
                i = end;
                continue;
            }
            _ => cur.push(t),
        }
        i += 1;
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    Some(out)
}

/// A data member declaration without its default initializers: `int n = 4, m = 2` → `int n, m`.
fn without_initializers<'a>(d: &[&'a str]) -> Vec<&'a str> {
    let mut out = Vec::with_capacity(d.len());
    let mut skipping = false;
    let mut depth = 0i32;
    for w in d {
        match *w {
            "(" | "[" | "{" | "<" if skipping => depth += 1,
            ")" | "]" | "}" | ">" if skipping => depth -= 1,
            "=" if depth == 0 => {
                skipping = true;
                continue;
            }
            "," if depth <= 0 => {
                skipping = false;
                depth = 0;
            }
            _ => {}
        }
        if !skipping {
            out.push(*w);
        }
    }
    out
}

/// Adds a declaration to the kernels found. A forward declaration and the definition of one
/// kernel (the same parameter types, up to parameter names and top-level `const`) are one
/// kernel, which keeps the named parameters; different parameter lists under one name are
/// overloads, each listed in `overloads`.
fn add_kernel(result: &mut ScanResult, mut k: KernelDecl, types: &CellTypes) {
    let written = written_signature(&k);
    if let Some(prev) = result
        .kernels
        .iter_mut()
        .find(|p| p.qualified == k.qualified)
    {
        let same = prev.params.len() == k.params.len()
            && prev.params.iter().zip(&k.params).all(|(a, b)| {
                let (a, b) = (types.expand(&a.type_tokens), types.expand(&b.type_tokens));
                signature_type(&a) == signature_type(&b)
            })
            && prev.template_params.is_some() == k.template_params.is_some();
        if !same {
            prev.overloaded = true;
            prev.overloads.push(written);
        } else if !k.params.iter().any(|p| p.name.is_none()) {
            // A forward declaration followed by the definition: keep the named parameters.
            k.overloaded = prev.overloaded;
            k.overloads = std::mem::take(&mut prev.overloads);
            if let Some(first) = k.overloads.first_mut() {
                *first = written;
            }
            *prev = k;
        }
        return;
    }
    k.overloads = vec![written];
    result.kernels.push(k);
}

/// A parameter's type (aliases expanded) as it counts for overloading: without top-level
/// cv-qualifiers (a by-value `const Matrix` is a `Matrix`, `float* const` is `float*`).
fn signature_type(ty: &[String]) -> Vec<&str> {
    let words: Vec<&str> = ty.iter().map(String::as_str).collect();
    match words.iter().rposition(|w| matches!(*w, "*" | "&" | "&&")) {
        Some(last) => words
            .iter()
            .enumerate()
            .filter(|(i, w)| *i < last || !matches!(**w, "const" | "volatile"))
            .map(|(_, w)| *w)
            .collect(),
        None => words
            .into_iter()
            .filter(|w| !matches!(*w, "const" | "volatile"))
            .collect(),
    }
}

/// `MatMul(const Matrix, Matrix C)`: a declaration as written, for the overload message.
fn written_signature(k: &KernelDecl) -> String {
    let params: Vec<String> = k
        .params
        .iter()
        .map(|p| {
            let ty = join_tokens(&p.type_tokens);
            match &p.name {
                Some(n) => format!("{ty} {n}"),
                None => ty,
            }
        })
        .collect();
    format!("{}({})", k.name, params.join(", "))
}

enum Found {
    Kernel(KernelDecl),
    Instantiation(String),
}

/// Index of the `{` or `;` that ends the declaration containing `from` (at paren depth 0).
fn statement_end(toks: &[Tok], from: usize) -> usize {
    let mut depth = 0i32;
    let mut i = from;
    while i < toks.len() {
        match toks[i].text.as_str() {
            "(" | "[" => depth += 1,
            ")" | "]" => depth -= 1,
            "{" | ";" if depth <= 0 => return i,
            _ => {}
        }
        i += 1;
    }
    toks.len()
}

/// Given `toks[open]` is an opening bracket, the index after its matching closer.
fn skip_balanced(toks: &[Tok], open: usize) -> usize {
    let (o, c) = match toks[open].text.as_str() {
        "{" => ("{", "}"),
        "(" => ("(", ")"),
        "[" => ("[", "]"),
        "<" => ("<", ">"),
        _ => return open + 1,
    };
    let mut depth = 0i32;
    let mut i = open;
    while i < toks.len() {
        let t = toks[i].text.as_str();
        if t == o {
            depth += 1;
        } else if t == c {
            depth -= 1;
            if depth == 0 {
                return i + 1;
            }
        } else if t == ">>" && o == "<" {
            depth -= 2;
            if depth <= 0 {
                return i + 1;
            }
        } else if o == "<" && (t == ";" || t == "{") {
            return i; // not a template argument list after all
        }
        i += 1;
    }
    toks.len()
}

const ATTRIBUTES_WITH_ARGS: [&str; 5] = [
    "__launch_bounds__",
    "__attribute__",
    "__declspec",
    "alignas",
    "__cluster_dims__",
];

/// Parses one declaration (from its first token up to, not including, `{` or `;`).
fn parse_declaration(decl: &[Tok], ns: &[Option<String>]) -> Option<Found> {
    let mut i = 0usize;
    let mut template_params: Option<Vec<TemplateParam>> = None;
    let mut explicit = false;
    if decl.first().map(|t| t.text.as_str()) == Some("template") {
        if decl.get(1).map(|t| t.text.as_str()) == Some("<") {
            let end = skip_balanced(decl, 1);
            let inner = &decl[2..end.saturating_sub(1).max(2)];
            let params = parse_template_params(inner);
            explicit = params.is_empty(); // `template <>`: an explicit specialisation
            template_params = Some(params);
            i = end;
        } else {
            explicit = true;
            i = 1;
        }
    }
    // Find the parameter list: the first `(` that does not belong to an attribute.
    let mut open = None;
    while i < decl.len() {
        let t = decl[i].text.as_str();
        if ATTRIBUTES_WITH_ARGS.contains(&t) {
            if decl.get(i + 1).map(|t| t.text.as_str()) == Some("(") {
                i = skip_balanced(decl, i + 1);
                continue;
            }
        } else if t == "(" {
            open = Some(i);
            break;
        }
        i += 1;
    }
    let open = open?;
    // The name: identifier before `(`, possibly followed by `<…>` (explicit instantiation).
    let mut name_end = open;
    let mut targs: Option<String> = None;
    if open > 0 && matches!(decl[open - 1].text.as_str(), ">" | ">>") {
        // Walk back to the matching `<`.
        let mut depth = 0i32;
        let mut j = open;
        while j > 0 {
            j -= 1;
            match decl[j].text.as_str() {
                ">" => depth += 1,
                ">>" => depth += 2,
                "<" => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
        targs = Some(join_tokens(
            &decl[j + 1..open - 1]
                .iter()
                .map(|t| t.text.clone())
                .collect::<Vec<_>>(),
        ));
        name_end = j;
    }
    let name_tok = decl.get(name_end.checked_sub(1)?)?;
    if !is_identifier(&name_tok.text) {
        return None;
    }
    let name = name_tok.text.clone();
    if let Some(args) = targs {
        if explicit {
            return Some(Found::Instantiation(normalize_kernel_name(&format!(
                "{name}<{args}>"
            ))));
        }
    }
    let close = skip_balanced(decl, open);
    let inner = &decl[open + 1..close.saturating_sub(1).max(open + 1)];
    let params = parse_params(inner);
    let mut qualified: Vec<String> = ns
        .iter()
        .flatten()
        .filter(|n| !n.is_empty())
        .cloned()
        .collect();
    qualified.push(name.clone());
    Some(Found::Kernel(KernelDecl {
        name,
        qualified: qualified.join("::"),
        template_params: template_params.filter(|p| !p.is_empty()),
        params,
        line: name_tok.line,
        overloaded: false,
        overloads: Vec::new(),
        types: CellTypes::default(),
    }))
}

fn split_top_level(toks: &[Tok]) -> Vec<&[Tok]> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, t) in toks.iter().enumerate() {
        match t.text.as_str() {
            "(" | "[" | "{" | "<" => depth += 1,
            ")" | "]" | "}" | ">" => depth -= 1,
            ">>" => depth -= 2,
            "," if depth <= 0 => {
                parts.push(&toks[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < toks.len() {
        parts.push(&toks[start..]);
    }
    parts
}

/// Cuts `= default` off a parameter.
fn strip_default(p: &[Tok]) -> (&[Tok], Option<String>) {
    let mut depth = 0i32;
    for (i, t) in p.iter().enumerate() {
        match t.text.as_str() {
            "(" | "[" | "{" | "<" => depth += 1,
            ")" | "]" | "}" | ">" => depth -= 1,
            "=" if depth <= 0 => {
                let def = p[i + 1..]
                    .iter()
                    .map(|t| t.text.clone())
                    .collect::<Vec<_>>();
                return (&p[..i], Some(join_tokens(&def)));
            }
            _ => {}
        }
    }
    (p, None)
}

fn parse_template_params(inner: &[Tok]) -> Vec<TemplateParam> {
    split_top_level(inner)
        .into_iter()
        .filter_map(|p| {
            let (p, default) = strip_default(p);
            let words: Vec<String> = p.iter().map(|t| t.text.clone()).collect();
            let name = words.last().filter(|w| is_identifier(w))?.clone();
            let kind = join_tokens(&words[..words.len() - 1]);
            Some(TemplateParam {
                name,
                kind: if kind.is_empty() {
                    "typename".into()
                } else {
                    kind
                },
                default,
            })
        })
        .collect()
}

/// Words that are part of a type, never a parameter name.
const TYPE_WORDS: [&str; 14] = [
    "const",
    "volatile",
    "unsigned",
    "signed",
    "short",
    "long",
    "int",
    "char",
    "float",
    "double",
    "void",
    "bool",
    "struct",
    "__restrict__",
];

fn parse_params(inner: &[Tok]) -> Vec<RawParam> {
    if inner.len() == 1 && inner[0].text == "void" {
        return Vec::new();
    }
    split_top_level(inner)
        .into_iter()
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (p, _default) = strip_default(p);
            let mut words: Vec<String> = p
                .iter()
                .map(|t| t.text.clone())
                .filter(|w| !matches!(w.as_str(), "__restrict__" | "__restrict" | "restrict"))
                .collect();
            // `float x[]` / `float x[16]` decay to pointers.
            if let Some(b) = words.iter().position(|w| w == "[") {
                words.truncate(b);
                words.push("*".into());
                let star = words.pop();
                let name = words.pop();
                words.extend(star);
                words.extend(name);
            }
            // The last word is the name unless what precedes it is no type on its own
            // (`const Matrix` is an unnamed parameter).
            let typed = words.len() >= 2
                && words[..words.len() - 1].iter().any(|w| {
                    !matches!(
                        w.as_str(),
                        "const" | "volatile" | "struct" | "class" | "enum" | "typename"
                    )
                });
            let name = match words.last() {
                Some(w)
                    if typed
                        && is_identifier(w)
                        && !TYPE_WORDS.contains(&w.as_str())
                        && words[words.len() - 2] != "::" =>
                {
                    words.pop()
                }
                _ => None,
            };
            RawParam {
                name,
                type_tokens: words,
            }
        })
        .collect()
}

/// Joins tokens the way C++ is usually written: words separated by spaces, `*`/`&` attached
/// to the type, no spaces around `::`, `<`, `>` and `,` followed by one space.
pub fn join_tokens(toks: &[String]) -> String {
    let mut out = String::new();
    let mut prev: Option<&str> = None;
    for t in toks {
        let t = t.as_str();
        let space = match prev {
            None => false,
            Some(p) => {
                !matches!(
                    t,
                    "*" | "&" | "&&" | "::" | "<" | ">" | ">>" | "," | ")" | "]" | "["
                ) && !matches!(p, "::" | "<" | "(" | "[")
            }
        };
        if space {
            out.push(' ');
        }
        out.push_str(t);
        prev = Some(t);
    }
    out
}

/// Canonical spelling of a user's kernel name: whitespace only where C++ needs it
/// (`scale< float >` → `scale<float>`, `f<unsigned  int, 3>` → `f<unsigned int, 3>`).
pub fn normalize_kernel_name(name: &str) -> String {
    let toks: Vec<String> = tokenize(name).into_iter().map(|t| t.text).collect();
    join_tokens(&toks)
}

/// Splits `scale<float, 4>` into `("scale", ["float", "4"])`; a plain name has no arguments.
pub fn split_template_name(name: &str) -> (String, Option<Vec<String>>) {
    let toks = tokenize(name);
    let Some(lt) = toks.iter().position(|t| t.text == "<") else {
        return (normalize_kernel_name(name), None);
    };
    let base: Vec<String> = toks[..lt].iter().map(|t| t.text.clone()).collect();
    let close = skip_balanced(&toks, lt);
    let inner = &toks[lt + 1..close.saturating_sub(1).max(lt + 1)];
    let args = split_top_level(inner)
        .into_iter()
        .map(|a| join_tokens(&a.iter().map(|t| t.text.clone()).collect::<Vec<_>>()))
        .collect();
    (join_tokens(&base), Some(args))
}

impl KernelDecl {
    /// The parameters with template arguments substituted (`args` in the order of the
    /// template's parameters, defaults filling the rest).
    pub fn params_for(&self, args: &[String]) -> Vec<KernelParam> {
        let subst: Vec<(String, Vec<String>)> = self
            .template_params
            .iter()
            .flatten()
            .enumerate()
            .filter_map(|(i, tp)| {
                let arg = args.get(i).cloned().or_else(|| tp.default.clone())?;
                Some((
                    tp.name.clone(),
                    tokenize(&arg).into_iter().map(|t| t.text).collect(),
                ))
            })
            .collect();
        self.params
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut ty: Vec<String> = Vec::new();
                for w in &p.type_tokens {
                    match subst.iter().find(|(n, _)| n == w) {
                        Some((_, rep)) => ty.extend(rep.iter().cloned()),
                        None => ty.push(w.clone()),
                    }
                }
                KernelParam {
                    name: p.name.clone().unwrap_or_else(|| format!("arg{}", i + 1)),
                    c_type: join_tokens(&ty),
                    kind: classify(&ty, &self.types),
                }
            })
            .collect()
    }

    /// The declaration for messages, e.g. `template <typename T> scale(T* x, T a, int n)`.
    pub fn display(&self) -> String {
        let params = self
            .params_for(&[])
            .iter()
            .map(|p| format!("{} {}", p.c_type, p.name))
            .collect::<Vec<_>>()
            .join(", ");
        match &self.template_params {
            Some(tps) => format!(
                "template <{}> {}({params})",
                tps.iter()
                    .map(|t| format!("{} {}", t.kind, t.name))
                    .collect::<Vec<_>>()
                    .join(", "),
                self.name
            ),
            None => format!("{}({params})", self.name),
        }
    }
}

/// What a parameter type (tokens, without the name) accepts; `types` are the cell's struct
/// definitions and aliases, for parameters passed by value and types named by an alias.
pub fn classify(ty: &[String], types: &CellTypes) -> ParamKind {
    let ty = types.expand(ty);
    if ty.iter().any(|w| w == "&" || w == "&&" || w == "(") {
        return ParamKind::Other;
    }
    if let Some(p) = ctype::pointee(&ty) {
        return ParamKind::Pointer {
            elem: p.elem,
            is_const: p.is_const,
        };
    }
    let base: Vec<&str> = ty
        .iter()
        .map(String::as_str)
        .filter(|w| {
            !matches!(
                *w,
                "const" | "volatile" | "struct" | "class" | "__restrict__"
            )
        })
        .collect();
    if let Some(d) = ctype::base_dtype(&base) {
        return ParamKind::Scalar(d);
    }
    if let Some(v) = super::views::layout(&ty) {
        return ParamKind::View(v);
    }
    match super::structs::layout(&base, types) {
        Some(a) => ParamKind::Aggregate(a),
        None => ParamKind::Other,
    }
}

fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch == '_' || ch.is_ascii_alphabetic())
        && c.all(|ch| ch == '_' || ch.is_ascii_alphanumeric())
}

/// Splits C++ text into tokens, dropping comments and preprocessor lines.
fn tokenize(src: &str) -> Vec<Tok> {
    let chars: Vec<char> = src.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0usize;
    let mut line = 1usize;
    let mut at_line_start = true;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            at_line_start = true;
            i += 1;
            continue;
        }
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        // Preprocessor line (with backslash continuations).
        if c == '#' && at_line_start {
            while i < chars.len() && chars[i] != '\n' {
                if chars[i] == '\\' && chars.get(i + 1) == Some(&'\n') {
                    line += 1;
                    i += 1;
                } else if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    break;
                }
                i += 1;
            }
            continue;
        }
        at_line_start = false;
        if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && chars.get(i + 1) == Some(&'*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                if chars[i] == '\n' {
                    line += 1;
                }
                i += 1;
            }
            i += 2;
            continue;
        }
        let start = i;
        let start_line = line;
        if c == '"' || c == '\'' {
            i += 1;
            while i < chars.len() && chars[i] != c && chars[i] != '\n' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i = (i + 1).min(chars.len());
        } else if c == '_' || c.is_alphanumeric() {
            while i < chars.len()
                && (chars[i] == '_'
                    || chars[i].is_alphanumeric()
                    || chars[i] == '.' && c.is_ascii_digit())
            {
                i += 1;
            }
        } else {
            let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            i += if matches!(two.as_str(), "::" | "&&" | ">>" | "->") {
                2
            } else {
                1
            };
        }
        toks.push(Tok {
            text: chars[start..i.min(chars.len())].iter().collect(),
            line: start_line,
        });
    }
    toks
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
