//! Recursive-descent parser from tokens to the `Ast`.
//!
//! It accepts the subset of PTX syntax NVRTC 12.x/13.x emits (module directives, variables with
//! initialisers, entries and functions, nested scopes, guarded instructions with any operand
//! form). It keeps names as strings and never decides what an instruction means.

use super::lexer::{tokenize, Tok, Token};
use super::{Ast, DeclType, Function, Init, Instr, Operand, Space, Stmt, VarDecl};
use crate::ModuleError;

struct P {
    t: Vec<Token>,
    i: usize,
    /// Open `operand`/`init` calls: nested vectors, lists and initialisers, bounded by
    /// [`MAX_NESTING`] so that no input recurses without end.
    depth: usize,
    /// Outline mode ([`parse_outline`]): function bodies are skipped, not parsed, and module
    /// directives this parser does not know are skipped.
    outline: bool,
}

/// The deepest nesting of `{…}`/`(…)` operands and `{…}` initialisers a module may have (NVRTC
/// nests an initialiser once per array dimension and an operand at most twice).
const MAX_NESTING: usize = 32;

fn perr(line: usize, message: impl Into<String>) -> ModuleError {
    ModuleError::Parse {
        line,
        message: message.into(),
    }
}

fn space_of(d: &str) -> Option<Space> {
    Some(match d {
        "global" => Space::Global,
        "const" => Space::Const,
        "shared" => Space::Shared,
        "local" => Space::Local,
        "param" => Space::Param,
        "reg" => Space::Reg,
        _ => return None,
    })
}

const SCALAR_TYPES: &[&str] = &[
    "b8",
    "b16",
    "b32",
    "b64",
    "b128",
    "u8",
    "u16",
    "u32",
    "u64",
    "s8",
    "s16",
    "s32",
    "s64",
    "f16",
    "f16x2",
    "bf16",
    "bf16x2",
    "f32",
    "f64",
    "pred",
    "texref",
    "samplerref",
    "surfref",
    "e4m3",
    "e5m2",
    "tf32",
];

impl P {
    fn peek(&self) -> Option<&Tok> {
        self.t.get(self.i).map(|t| &t.tok)
    }
    fn line(&self) -> usize {
        self.t
            .get(self.i)
            .or_else(|| self.t.last())
            .map_or(1, |t| t.line)
    }
    fn next(&mut self) -> Result<Tok, ModuleError> {
        let line = self.line();
        let t = self
            .t
            .get(self.i)
            .map(|t| t.tok.clone())
            .ok_or_else(|| perr(line, "unexpected end of PTX"))?;
        self.i += 1;
        Ok(t)
    }
    /// The line of the token just consumed.
    fn prev_line(&self) -> usize {
        self.i
            .checked_sub(1)
            .and_then(|i| self.t.get(i))
            .map_or(1, |t| t.line)
    }
    fn is_punct(&self, c: char) -> bool {
        self.peek() == Some(&Tok::Punct(c))
    }
    fn eat_punct(&mut self, c: char) -> bool {
        if self.is_punct(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn expect_punct(&mut self, c: char) -> Result<(), ModuleError> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            Err(perr(
                self.line(),
                format!("expected `{c}`, found {}", self.describe()),
            ))
        }
    }
    fn describe(&self) -> String {
        match self.peek() {
            None => "end of input".into(),
            Some(Tok::Ident(s)) => format!("`{s}`"),
            Some(Tok::Dir(s)) => format!("`.{s}`"),
            Some(Tok::Punct(c)) => format!("`{c}`"),
            Some(Tok::Str(s)) => format!("\"{s}\""),
            Some(t) => format!("{t:?}"),
        }
    }
    fn ident(&mut self) -> Result<String, ModuleError> {
        match self.next()? {
            Tok::Ident(s) => Ok(s),
            _ => {
                self.i -= 1;
                Err(perr(
                    self.line(),
                    format!("expected a name, found {}", self.describe()),
                ))
            }
        }
    }
    fn int(&mut self) -> Result<u64, ModuleError> {
        match self.next()? {
            Tok::Int(v) => Ok(v),
            _ => {
                self.i -= 1;
                Err(perr(
                    self.line(),
                    format!("expected an integer, found {}", self.describe()),
                ))
            }
        }
    }
    /// Skip tokens up to and including the next `;`.
    fn skip_statement(&mut self) {
        while let Some(t) = self.peek() {
            let end = *t == Tok::Punct(';');
            self.i += 1;
            if end {
                break;
            }
        }
    }
    /// Skip the remaining tokens on line `line`.
    fn skip_line(&mut self, line: usize) {
        while self.i < self.t.len() && self.t[self.i].line == line {
            self.i += 1;
        }
    }
    fn skip_braces(&mut self) -> Result<(), ModuleError> {
        while !self.is_punct('{') {
            self.next()?;
        }
        let mut depth = 0;
        loop {
            match self.next()? {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                _ => {}
            }
        }
    }

    fn module(&mut self) -> Result<Ast, ModuleError> {
        let mut ast = Ast {
            address_size: 64,
            ..Ast::default()
        };
        let mut is_extern = false;
        while let Some(tok) = self.peek().cloned() {
            let line = self.line();
            match tok {
                Tok::Dir(d) => {
                    self.i += 1;
                    match d.as_str() {
                        "version" => {
                            ast.version = match self.next()? {
                                Tok::Float(v) if v.fract() == 0.0 => format!("{v:.1}"),
                                Tok::Float(v) => format!("{v}"),
                                Tok::Int(v) => format!("{v}.0"),
                                _ => return Err(perr(line, "bad .version")),
                            };
                        }
                        "target" => {
                            ast.target = self.ident()?;
                            while self.eat_punct(',') {
                                self.ident()?;
                            }
                        }
                        "address_size" => ast.address_size = self.int()? as u32,
                        "file" => {
                            let idx = self.int()? as u32;
                            if let Some(Tok::Str(name)) = self.peek().cloned() {
                                ast.files.push((idx, name));
                            }
                            self.skip_line(line);
                        }
                        "pragma" | "alias" => self.skip_statement(),
                        "section" => self.skip_braces()?,
                        "visible" | "weak" | "common" => {}
                        "extern" => is_extern = true,
                        "entry" | "func" => {
                            let f = self.function(d == "entry", is_extern, line)?;
                            is_extern = false;
                            ast.functions.push(f);
                        }
                        other => {
                            if let Some(space) = space_of(other) {
                                let v = self.var_decl(space, is_extern, line)?;
                                is_extern = false;
                                ast.vars.push(v);
                            } else if self.outline {
                                self.skip_statement();
                            } else {
                                return Err(perr(
                                    line,
                                    format!("unknown module directive `.{other}`"),
                                ));
                            }
                        }
                    }
                }
                Tok::Punct(';') => self.i += 1,
                _ => {
                    return Err(perr(
                        line,
                        format!("unexpected {} at module scope", self.describe()),
                    ))
                }
            }
        }
        Ok(ast)
    }

    /// Parse the type and attributes of a declaration after its state space, up to the name.
    fn decl_attrs(
        &mut self,
        space: Space,
        is_extern: bool,
        line: usize,
    ) -> Result<VarDecl, ModuleError> {
        let mut v = VarDecl {
            space,
            name: String::new(),
            ty: DeclType {
                scalar: String::new(),
                vec: 1,
            },
            align: None,
            dims: Vec::new(),
            init: None,
            is_extern,
            is_ptr: false,
            line,
        };
        while let Some(Tok::Dir(d)) = self.peek().cloned() {
            self.i += 1;
            match d.as_str() {
                "align" => v.align = Some(self.int()? as u32),
                "ptr" => v.is_ptr = true,
                "v2" => v.ty.vec = 2,
                "v4" => v.ty.vec = 4,
                "v8" => v.ty.vec = 8,
                "global" | "shared" | "const" | "local" => {}
                "extern" => v.is_extern = true,
                s if SCALAR_TYPES.contains(&s) => v.ty.scalar = s.to_string(),
                other => {
                    return Err(perr(
                        line,
                        format!("unknown declaration attribute `.{other}`"),
                    ))
                }
            }
        }
        if v.ty.scalar.is_empty() {
            return Err(perr(line, "declaration without a type"));
        }
        Ok(v)
    }

    fn dims(&mut self, v: &mut VarDecl) -> Result<(), ModuleError> {
        while self.eat_punct('[') {
            if self.eat_punct(']') {
                v.dims.push(None);
            } else {
                v.dims.push(Some(self.int()?));
                self.expect_punct(']')?;
            }
        }
        Ok(())
    }

    fn var_decl(
        &mut self,
        space: Space,
        is_extern: bool,
        line: usize,
    ) -> Result<VarDecl, ModuleError> {
        let mut v = self.decl_attrs(space, is_extern, line)?;
        v.name = self.ident()?;
        self.dims(&mut v)?;
        if self.eat_punct('=') {
            v.init = Some(self.init()?);
        }
        self.expect_punct(';')?;
        Ok(v)
    }

    /// Counts one level of nesting around `f`, refusing more than [`MAX_NESTING`].
    fn nested<T>(&mut self, f: fn(&mut P) -> Result<T, ModuleError>) -> Result<T, ModuleError> {
        if self.depth >= MAX_NESTING {
            return Err(perr(
                self.line(),
                format!("operands or initialisers nested more than {MAX_NESTING} deep"),
            ));
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    fn init(&mut self) -> Result<Init, ModuleError> {
        self.nested(P::init_inner)
    }

    fn init_inner(&mut self) -> Result<Init, ModuleError> {
        let line = self.line();
        if self.eat_punct('{') {
            let mut items = Vec::new();
            if !self.eat_punct('}') {
                loop {
                    items.push(self.init()?);
                    if self.eat_punct('}') {
                        break;
                    }
                    self.expect_punct(',')?;
                }
            }
            return Ok(Init::List(items));
        }
        let neg = self.eat_punct('-');
        let sign = if neg { -1 } else { 1 };
        match self.next()? {
            Tok::Int(v) => Ok(Init::Int(sign as i128 * v as i128)),
            Tok::Float(f) => Ok(Init::Float(sign as f64 * f)),
            Tok::F32(b) => Ok(Init::F32Bits(if neg { b ^ 0x8000_0000 } else { b })),
            Tok::F64(b) => Ok(Init::F64Bits(if neg { b ^ (1 << 63) } else { b })),
            Tok::Ident(name) => {
                let name = if name == "generic" && self.eat_punct('(') {
                    let n = self.ident()?;
                    self.expect_punct(')')?;
                    n
                } else {
                    name
                };
                let mut offset = 0i64;
                if self.eat_punct('+') {
                    offset = self.int()? as i64;
                }
                Ok(Init::Addr { name, offset })
            }
            _ => Err(perr(line, "unsupported initialiser")),
        }
    }

    fn param_list(&mut self) -> Result<Vec<VarDecl>, ModuleError> {
        let mut out = Vec::new();
        self.expect_punct('(')?;
        if self.eat_punct(')') {
            return Ok(out);
        }
        loop {
            let line = self.line();
            let space = match self.next()? {
                Tok::Dir(d) if d == "param" => Space::Param,
                Tok::Dir(d) if d == "reg" => Space::Reg,
                _ => return Err(perr(line, "expected `.param` in a parameter list")),
            };
            let mut v = self.decl_attrs(space, false, line)?;
            v.name = self.ident()?;
            self.dims(&mut v)?;
            out.push(v);
            if self.eat_punct(')') {
                return Ok(out);
            }
            self.expect_punct(',')?;
        }
    }

    fn function(
        &mut self,
        is_entry: bool,
        is_extern: bool,
        line: usize,
    ) -> Result<Function, ModuleError> {
        let mut f = Function {
            name: String::new(),
            is_entry,
            is_extern,
            rets: Vec::new(),
            params: Vec::new(),
            body: None,
            maxntid: None,
            reqntid: None,
            line,
            end_line: line,
        };
        if !is_entry && self.is_punct('(') {
            f.rets = self.param_list()?;
        }
        f.name = self.ident()?;
        if self.is_punct('(') {
            f.params = self.param_list()?;
        }
        // Performance directives and attributes.
        while let Some(Tok::Dir(d)) = self.peek().cloned() {
            self.i += 1;
            let mut nums = Vec::new();
            while let Some(Tok::Int(v)) = self.peek().cloned() {
                self.i += 1;
                nums.push(v as u32);
                if !self.eat_punct(',') {
                    break;
                }
            }
            match d.as_str() {
                "maxntid" => f.maxntid = Some(nums),
                "reqntid" => f.reqntid = Some(nums),
                "pragma" => self.skip_statement(),
                _ => {}
            }
        }
        if self.eat_punct(';') {
            f.end_line = self.prev_line();
            return Ok(f);
        }
        if self.outline && self.is_punct('{') {
            self.skip_braces()?;
            f.body = Some(Vec::new());
        } else {
            self.expect_punct('{')?;
            f.body = Some(self.body()?);
        }
        f.end_line = self.prev_line();
        Ok(f)
    }

    fn body(&mut self) -> Result<Vec<Stmt>, ModuleError> {
        let mut out = Vec::new();
        let mut depth = 0usize;
        loop {
            let line = self.line();
            let tok = self.next()?;
            match tok {
                Tok::Punct('}') => {
                    if depth == 0 {
                        return Ok(out);
                    }
                    depth -= 1;
                    out.push(Stmt::Close);
                }
                Tok::Punct('{') => {
                    depth += 1;
                    out.push(Stmt::Open);
                }
                Tok::Punct(';') => {}
                Tok::Dir(d) => match d.as_str() {
                    "reg" => {
                        let v = self.decl_attrs(Space::Reg, false, line)?;
                        let mut names = Vec::new();
                        loop {
                            let n = self.ident()?;
                            let count = if self.eat_punct('<') {
                                let c = self.int()? as u32;
                                self.expect_punct('>')?;
                                Some(c)
                            } else {
                                None
                            };
                            names.push((n, count));
                            if !self.eat_punct(',') {
                                break;
                            }
                        }
                        self.expect_punct(';')?;
                        out.push(Stmt::Reg {
                            ty: v.ty,
                            names,
                            line,
                        });
                    }
                    "loc" => {
                        let file = self.int()? as u32;
                        let l = self.int()? as u32;
                        let column = match self.peek() {
                            Some(Tok::Int(c)) => {
                                let c = *c as u32;
                                self.i += 1;
                                c
                            }
                            _ => 0,
                        };
                        // `, function_name LABEL, inlined_at FILE LINE COLUMN`: where the
                        // inlined function's body was called from.
                        let mut inlined_at = None;
                        while self.i < self.t.len() && self.t[self.i].line == line {
                            let at =
                                matches!(self.peek(), Some(Tok::Ident(w)) if w == "inlined_at");
                            self.i += 1;
                            if !at {
                                continue;
                            }
                            let mut n = [0u32; 3];
                            for v in n.iter_mut() {
                                if let Some(Tok::Int(x)) = self.peek() {
                                    *v = *x as u32;
                                    self.i += 1;
                                }
                            }
                            inlined_at = Some((n[0], n[1], n[2]));
                        }
                        out.push(Stmt::Loc {
                            file,
                            line: l,
                            column,
                            inlined_at,
                        });
                    }
                    "pragma" | "callprototype" => self.skip_statement(),
                    "section" => self.skip_braces()?,
                    other => {
                        let space = space_of(other).ok_or_else(|| {
                            perr(
                                line,
                                format!("unknown directive `.{other}` in a function body"),
                            )
                        })?;
                        out.push(Stmt::Var(self.var_decl(space, false, line)?));
                    }
                },
                Tok::Ident(name) if self.is_punct(':') => {
                    self.i += 1;
                    out.push(Stmt::Label(name, line));
                }
                Tok::Punct('@') => {
                    let neg = self.eat_punct('!');
                    let pred = self.ident()?;
                    let op = self.ident()?;
                    out.push(Stmt::Inst(self.instr(Some((pred, neg)), op, line)?));
                }
                Tok::Ident(op) => out.push(Stmt::Inst(self.instr(None, op, line)?)),
                _ => {
                    self.i -= 1;
                    return Err(perr(line, format!("unexpected {}", self.describe())));
                }
            }
        }
    }

    fn instr(
        &mut self,
        guard: Option<(String, bool)>,
        opcode: String,
        line: usize,
    ) -> Result<Instr, ModuleError> {
        let mut operands = Vec::new();
        if !self.eat_punct(';') {
            loop {
                operands.push(self.operand()?);
                if self.eat_punct(';') {
                    break;
                }
                self.expect_punct(',')?;
            }
        }
        Ok(Instr {
            guard,
            opcode,
            operands,
            line,
        })
    }

    fn operand(&mut self) -> Result<Operand, ModuleError> {
        self.nested(P::operand_inner)
    }

    fn operand_inner(&mut self) -> Result<Operand, ModuleError> {
        let line = self.line();
        let tok = self.next()?;
        let op = match tok {
            Tok::Punct('[') => {
                let base = match self.peek().cloned() {
                    Some(Tok::Ident(n)) => {
                        self.i += 1;
                        Some(n)
                    }
                    _ => None,
                };
                let mut offset: i64 = 0;
                if base.is_none() {
                    offset = self.int()? as i64;
                }
                loop {
                    if self.eat_punct('+') {
                        let neg = self.eat_punct('-');
                        let v = self.int()? as i64;
                        offset = offset.wrapping_add(if neg { v.wrapping_neg() } else { v });
                    } else if self.eat_punct('-') {
                        let v = self.int()? as i64;
                        offset = offset.wrapping_sub(v);
                    } else {
                        break;
                    }
                }
                self.expect_punct(']')?;
                Operand::Mem { base, offset }
            }
            Tok::Punct('{') => {
                let mut items = Vec::new();
                loop {
                    items.push(self.operand()?);
                    if self.eat_punct('}') {
                        break;
                    }
                    self.expect_punct(',')?;
                }
                Operand::Vector(items)
            }
            Tok::Punct('(') => {
                let mut items = Vec::new();
                if !self.eat_punct(')') {
                    loop {
                        items.push(self.operand()?);
                        if self.eat_punct(')') {
                            break;
                        }
                        self.expect_punct(',')?;
                    }
                }
                Operand::List(items)
            }
            Tok::Punct('!') => Operand::Not(Box::new(self.operand()?)),
            Tok::Punct('-') => match self.next()? {
                Tok::Int(v) => Operand::Int(-(v as i128)),
                Tok::Float(f) => Operand::Float(-f),
                Tok::F32(b) => Operand::F32(b ^ 0x8000_0000),
                Tok::F64(b) => Operand::F64(b ^ (1 << 63)),
                _ => return Err(perr(line, "bad negative operand")),
            },
            Tok::Int(v) => Operand::Int(v as i128),
            Tok::F32(b) => Operand::F32(b),
            Tok::F64(b) => Operand::F64(b),
            Tok::Float(f) => Operand::Float(f),
            Tok::Ident(n) if n == "_" => Operand::Sink,
            Tok::Ident(n) => Operand::Name(n),
            _ => {
                self.i -= 1;
                return Err(perr(
                    line,
                    format!("unexpected {} in an operand", self.describe()),
                ));
            }
        };
        if self.eat_punct('|') {
            let second = self.operand()?;
            return Ok(Operand::Pair(Box::new(op), Box::new(second)));
        }
        Ok(op)
    }
}

/// Parse PTX text into a syntax tree.
pub fn parse(src: &str) -> Result<Ast, ModuleError> {
    let t = tokenize(src)?;
    let mut p = P {
        t,
        i: 0,
        depth: 0,
        outline: false,
    };
    p.module()
}

/// Parse PTX text into a syntax tree of its module scope only: functions keep their names,
/// parameters and lines, but their bodies are skipped (`Some(vec![])`), and unknown module
/// directives are skipped. The whole text is still tokenised, so comments never count.
pub fn parse_outline(src: &str) -> Result<Ast, ModuleError> {
    let t = tokenize(src)?;
    let mut p = P {
        t,
        i: 0,
        depth: 0,
        outline: true,
    };
    p.module()
}

#[cfg(test)]
mod tests {
    use super::*;

    const VECADD: &str = r#"
.version 8.8
.target sm_80
.address_size 64
.visible .entry vecAdd(
	.param .u64 vecAdd_param_0,
	.param .u32 vecAdd_param_3
)
.maxntid 256, 1, 1
{
	.reg .pred 	%p<2>;
	.reg .b64 	%rd<11>;
	.loc	1 1 0
	ld.param.u64 	%rd1, [vecAdd_param_0];
	@%p1 bra 	$L__BB0_2;
	{
	.reg .b32 %temp;
	mov.b64 	{%temp, %r1}, %fd4;
	}
	shfl.sync.down.b32 	%r11|%p2, %r6, %r9, %r8, %r10;
	ld.global.f32 %f1, [%rd8+-4];
$L__BB0_2:
	ret;
}
.global .align 1 .b8 $str[3] = {104, 105, 0};
.global .align 8 .u64 ptrs[1] = {generic($str)+1};
	.file	1 "/tmp/vecadd.cu"
"#;

    #[test]
    fn parses_entry_and_module_vars() {
        let ast = parse(VECADD).unwrap();
        assert_eq!(ast.version, "8.8");
        assert_eq!(ast.target, "sm_80");
        assert_eq!(ast.functions.len(), 1);
        let f = &ast.functions[0];
        assert!(f.is_entry);
        assert_eq!(f.params.len(), 2);
        assert_eq!(f.maxntid, Some(vec![256, 1, 1]));
        let body = f.body.as_ref().unwrap();
        assert!(body
            .iter()
            .any(|s| matches!(s, Stmt::Label(l, _) if l == "$L__BB0_2")));
        assert!(body.iter().any(|s| matches!(s, Stmt::Open)));
        let shfl = body
            .iter()
            .find_map(|s| match s {
                Stmt::Inst(i) if i.opcode.starts_with("shfl") => Some(i),
                _ => None,
            })
            .unwrap();
        assert!(matches!(shfl.operands[0], Operand::Pair(..)));
        let ld = body
            .iter()
            .find_map(|s| match s {
                Stmt::Inst(i) if i.opcode == "ld.global.f32" => Some(i),
                _ => None,
            })
            .unwrap();
        assert_eq!(
            ld.operands[1],
            Operand::Mem {
                base: Some("%rd8".into()),
                offset: -4
            }
        );
        assert_eq!(ast.vars.len(), 2);
        assert_eq!(
            ast.vars[1].init,
            Some(Init::List(vec![Init::Addr {
                name: "$str".into(),
                offset: 1
            }]))
        );
        assert_eq!(ast.files, vec![(1, "/tmp/vecadd.cu".to_string())]);
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let e = parse(".version 8.8\n.visible .entry k(\n{\n").unwrap_err();
        assert!(matches!(e, ModuleError::Parse { line: 3, .. }), "{e:?}");
        let e = parse(".version 8.8\n.entry k()\n{\n mov.u32 %r1, ;\n}").unwrap_err();
        assert!(matches!(e, ModuleError::Parse { line: 4, .. }), "{e:?}");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let run = |body: String| {
            std::thread::Builder::new()
                .stack_size(256 << 10)
                .spawn(move || parse(&body).map(|_| ()))
                .expect("spawn")
                .join()
                .expect("no panic")
        };
        let head = ".version 8.8\n.target sm_80\n.address_size 64\n";
        for deep in [
            format!(
                "{head}.visible .entry k()\n{{\nmov.b32 %r1, {}1;\n}}\n",
                "{".repeat(10_000)
            ),
            format!(
                "{head}.visible .entry k()\n{{\nmov.b32 %r1, {}1;\n}}\n",
                "!".repeat(10_000)
            ),
            format!("{head}.global .u32 g[1] = {}1;\n", "{".repeat(10_000)),
        ] {
            let e = run(deep).expect_err("too deep");
            assert!(e.to_string().contains("nested more than 32 deep"), "{e}");
        }
        let ok = format!("{head}.global .u32 g[2][2] = {{{{1, 2}}, {{3, 4}}}};\n");
        assert!(run(ok).is_ok());
    }
}
