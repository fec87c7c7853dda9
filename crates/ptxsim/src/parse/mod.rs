//! PTX front end: the syntax tree and the parser that builds it.
//!
//! The tree mirrors the text (directives, declarations, statements, operands) with names still
//! as strings. It does not resolve names, check types or decide semantics: that is `lower`'s
//! job.

mod entries;
mod lexer;
mod parser;

pub use entries::{grid_sync_entries, ptx_entries, Entry, EntryParam};
pub use parser::parse;

/// State spaces of declarations and memory instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Space {
    Reg,
    Global,
    Const,
    Shared,
    Local,
    Param,
}

/// A declared scalar or vector type: `.f32`, `.v4 .f32`, `.b8`, `.pred`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclType {
    /// The scalar type name without the dot (`f32`, `b8`, `pred`).
    pub scalar: String,
    /// Vector width (1, 2 or 4).
    pub vec: u32,
}

/// One initialiser element of a module-scope variable.
#[derive(Debug, Clone, PartialEq)]
pub enum Init {
    /// An integer literal (already negated when written with `-`).
    Int(i128),
    /// A float literal (value, not bits).
    Float(f64),
    /// f32 bit pattern `0fXXXXXXXX`.
    F32Bits(u32),
    /// f64 bit pattern.
    F64Bits(u64),
    /// The address of a symbol plus an offset (`sym`, `generic(sym)+4`).
    Addr { name: String, offset: i64 },
    /// A brace list.
    List(Vec<Init>),
}

/// A variable declaration (`.global`, `.const`, `.shared`, `.local`, `.param`, `.reg` single).
#[derive(Debug, Clone, PartialEq)]
pub struct VarDecl {
    pub space: Space,
    pub name: String,
    pub ty: DeclType,
    pub align: Option<u32>,
    /// Array dimensions; `Some(None)` entries are unsized (`[]`).
    pub dims: Vec<Option<u64>>,
    pub init: Option<Init>,
    pub is_extern: bool,
    /// `.ptr` attribute on a parameter.
    pub is_ptr: bool,
    pub line: usize,
}

/// One operand of an instruction.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// A register, symbol, label or special-register name.
    Name(String),
    /// An integer immediate (sign applied).
    Int(i128),
    /// An f32 bit pattern.
    F32(u32),
    /// An f64 bit pattern.
    F64(u64),
    /// A decimal float immediate.
    Float(f64),
    /// `[base + offset]`; base is a name or, for an absolute address, `None`.
    Mem { base: Option<String>, offset: i64 },
    /// `{a, b, c, d}`.
    Vector(Vec<Operand>),
    /// `!p`.
    Not(Box<Operand>),
    /// `d|p` (two destinations).
    Pair(Box<Operand>, Box<Operand>),
    /// `( a, b )` argument or return lists of `call`.
    List(Vec<Operand>),
    /// `_` (a sink destination).
    Sink,
}

/// One instruction statement.
#[derive(Debug, Clone, PartialEq)]
pub struct Instr {
    /// Guard predicate name and whether it is negated (`@!%p1`).
    pub guard: Option<(String, bool)>,
    /// Full mnemonic with modifiers, e.g. `ld.global.nc.v4.f32`.
    pub opcode: String,
    pub operands: Vec<Operand>,
    pub line: usize,
}

/// A statement of a function body.
#[derive(Debug, Clone, PartialEq)]
pub enum Stmt {
    /// `.reg .ty names` (each name with an optional `<N>` count).
    Reg {
        ty: DeclType,
        names: Vec<(String, Option<u32>)>,
        line: usize,
    },
    Var(VarDecl),
    Label(String, usize),
    Inst(Instr),
    /// `.loc file line column[, function_name label, inlined_at file line column]`.
    Loc {
        file: u32,
        line: u32,
        column: u32,
        /// The call site of the inlined function this line belongs to.
        inlined_at: Option<(u32, u32, u32)>,
    },
    /// `{` and `}` of a nested scope.
    Open,
    Close,
}

/// An `.entry` or `.func`.
#[derive(Debug, Clone, PartialEq)]
pub struct Function {
    pub name: String,
    pub is_entry: bool,
    pub is_extern: bool,
    pub rets: Vec<VarDecl>,
    pub params: Vec<VarDecl>,
    /// `None` for a prototype (`;` instead of a body).
    pub body: Option<Vec<Stmt>>,
    pub maxntid: Option<Vec<u32>>,
    pub reqntid: Option<Vec<u32>>,
    pub line: usize,
    /// The line of the closing `}` (or of the `;` of a prototype).
    pub end_line: usize,
}

/// A parsed module.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ast {
    pub version: String,
    pub target: String,
    pub address_size: u32,
    pub vars: Vec<VarDecl>,
    pub functions: Vec<Function>,
    /// `.file` index → file name.
    pub files: Vec<(u32, String)>,
}

impl Init {
    /// Call `f` with every symbol whose address this initialiser takes.
    pub fn visit_addrs(&self, f: &mut dyn FnMut(&str)) {
        match self {
            Init::Addr { name, .. } => f(name),
            Init::List(items) => items.iter().for_each(|i| i.visit_addrs(f)),
            _ => {}
        }
    }
}

impl Operand {
    /// Call `f` with every name this operand mentions (registers, symbols, labels, bases).
    pub fn visit_names(&self, f: &mut dyn FnMut(&str)) {
        match self {
            Operand::Name(n) => f(n),
            Operand::Mem { base: Some(n), .. } => f(n),
            Operand::Vector(v) | Operand::List(v) => v.iter().for_each(|o| o.visit_names(f)),
            Operand::Not(o) => o.visit_names(f),
            Operand::Pair(a, b) => {
                a.visit_names(f);
                b.visit_names(f);
            }
            _ => {}
        }
    }
}
