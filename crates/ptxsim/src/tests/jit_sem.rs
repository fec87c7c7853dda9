//! The region compiler against `sem`, one operation at a time: for every operation, type and
//! modifier the JIT compiles, a generated kernel runs that one instruction on edge and random
//! inputs with the JIT forced on and off, and both results must equal the `sem` function's bit
//! for bit. A second test fails when the JIT compiles an operation of any PTX fixture that has
//! no case here.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::util::*;
use crate::ir::{BoolOp, Op, Program};
use crate::sem::{address, bits, compare, convert, float, int};
use crate::*;

/// The register class of an operand: its PTX register type, load and store.
#[derive(Clone, Copy, PartialEq)]
enum Class {
    /// `.b16`
    H,
    /// `.b32`
    R,
    /// `.b64`
    D,
    /// `.f32`
    F,
    /// `.f64`
    G,
    /// `.pred`
    P,
}

impl Class {
    fn from_char(c: char) -> Class {
        match c {
            'h' => Class::H,
            'r' => Class::R,
            'd' => Class::D,
            'f' => Class::F,
            'g' => Class::G,
            _ => Class::P,
        }
    }

    /// Register `k` of this class (1-3: sources, 4: destination).
    fn reg(self, k: usize) -> String {
        let p = match self {
            Class::H => "%h",
            Class::R => "%r",
            Class::D => "%rd",
            Class::F => "%f",
            Class::G => "%fd",
            Class::P => "%p",
        };
        format!("{p}{k}")
    }

    /// The memory type of its load and store (`.u32` for predicates, read as `!= 0`).
    fn mem(self) -> &'static str {
        match self {
            Class::H => "u16",
            Class::R | Class::P => "u32",
            Class::D => "u64",
            Class::F => "f32",
            Class::G => "f64",
        }
    }

    /// The register value a 64-bit input gives after its load.
    fn value(self, x: u64) -> u64 {
        match self {
            Class::H => x & 0xFFFF,
            Class::R | Class::F => x & 0xFFFF_FFFF,
            Class::D | Class::G => x,
            Class::P => (x as u32 != 0) as u64,
        }
    }

    /// The bits of a result register that its store keeps.
    fn stored(self, x: u64) -> u64 {
        match self {
            Class::H => x & 0xFFFF,
            Class::R | Class::F => x & 0xFFFF_FFFF,
            Class::D | Class::G => x,
            Class::P => x & 1,
        }
    }
}

/// One generated case: the instruction's mnemonic and its operand classes, destination first
/// (`"r rr"`: a 32-bit result of two 32-bit sources).
struct Case {
    mnemonic: String,
    classes: Vec<Class>,
    /// The last source is a negated predicate (`!%p3`).
    negated: bool,
}

impl Case {
    fn new(mnemonic: impl Into<String>, classes: &str) -> Case {
        Case {
            mnemonic: mnemonic.into(),
            classes: classes
                .chars()
                .filter(|c| !c.is_whitespace() && *c != '!')
                .map(Class::from_char)
                .collect(),
            negated: classes.ends_with('!'),
        }
    }

    /// Its kernel: thread `t` loads its sources from `pin + 24 t` (8 bytes each), runs the
    /// instruction and stores the result at `pout + 8 t`.
    fn kernel(&self, name: &str) -> String {
        let mut k = format!(
            ".visible .entry {name}(.param .u64 pin, .param .u64 pout)\n{{\n\
             .reg .b16 %h<5>;\n.reg .b32 %r<40>;\n.reg .b64 %rd<40>;\n.reg .f32 %f<5>;\n\
             .reg .f64 %fd<5>;\n.reg .pred %p<5>;\n\
             ld.param.u64 %rd10, [pin];\nld.param.u64 %rd11, [pout];\n\
             cvta.to.global.u64 %rd12, %rd10;\ncvta.to.global.u64 %rd13, %rd11;\n\
             mov.u32 %r10, %tid.x;\nmov.u32 %r11, %ctaid.x;\nmov.u32 %r12, %ntid.x;\n\
             mad.lo.s32 %r13, %r11, %r12, %r10;\nmul.wide.u32 %rd14, %r13, 24;\n\
             add.s64 %rd15, %rd12, %rd14;\nmul.wide.u32 %rd16, %r13, 8;\n\
             add.s64 %rd17, %rd13, %rd16;\n"
        );
        let (dest, srcs) = (self.classes[0], &self.classes[1..]);
        for (j, &c) in srcs.iter().enumerate() {
            let k_reg = j + 1;
            if c == Class::P {
                let _ = writeln!(
                    k,
                    "ld.global.u32 %r{}, [%rd15+{}];\nsetp.ne.u32 %p{k_reg}, %r{}, 0;",
                    20 + k_reg,
                    8 * j,
                    20 + k_reg
                );
            } else {
                let _ = writeln!(
                    k,
                    "ld.global.{} {}, [%rd15+{}];",
                    c.mem(),
                    c.reg(k_reg),
                    8 * j
                );
            }
        }
        let mut operands: Vec<String> = std::iter::once(dest.reg(4))
            .chain(srcs.iter().enumerate().map(|(j, c)| c.reg(j + 1)))
            .collect();
        if self.negated {
            if let Some(last) = operands.last_mut() {
                last.insert(0, '!');
            }
        }
        let _ = writeln!(k, "{} {};", self.mnemonic, operands.join(", "));
        if dest == Class::P {
            k.push_str("selp.u32 %r30, 1, 0, %p4;\nst.global.u32 [%rd17], %r30;\n");
        } else {
            let _ = writeln!(k, "st.global.{} [%rd17], {};", dest.mem(), dest.reg(4));
        }
        k.push_str("ret;\n}\n");
        k
    }
}

/// Every operation, type and modifier the JIT compiles (`ir::defuse::lane_local`), spelled in PTX.
fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    let ints = [
        ("u16", "h"),
        ("s16", "h"),
        ("u32", "r"),
        ("s32", "r"),
        ("u64", "d"),
        ("s64", "d"),
    ];
    for (t, c) in ints {
        for op in ["add", "sub", "mul.lo", "min", "max", "div", "rem"] {
            v.push(Case::new(format!("{op}.{t}"), &format!("{c}{c}{c}")));
        }
        v.push(Case::new(format!("mad.lo.{t}"), &format!("{c}{c}{c}{c}")));
        if t.starts_with('s') {
            v.push(Case::new(format!("abs.{t}"), &format!("{c}{c}")));
            v.push(Case::new(format!("neg.{t}"), &format!("{c}{c}")));
        }
        if c != "h" {
            v.push(Case::new(format!("mul.hi.{t}"), &format!("{c}{c}{c}")));
        }
        let w = &t[1..];
        v.push(Case::new(format!("shr.{t}"), &format!("{c}{c}r")));
        for op in ["and", "or", "xor"] {
            v.push(Case::new(format!("{op}.b{w}"), &format!("{c}{c}{c}")));
        }
        if t.starts_with('u') {
            v.push(Case::new(format!("shl.b{w}"), &format!("{c}{c}r")));
            v.push(Case::new(format!("not.b{w}"), &format!("{c}{c}")));
            v.push(Case::new(format!("cnot.b{w}"), &format!("{c}{c}")));
            v.push(Case::new(format!("selp.b{w}"), &format!("{c}{c}{c}p")));
        }
        let (signed_cmps, unsigned_cmps) = (
            ["eq", "ne", "lt", "le", "gt", "ge"],
            ["eq", "ne", "lo", "ls", "hi", "hs"],
        );
        let cmps = if t.starts_with('s') {
            signed_cmps
        } else {
            unsigned_cmps
        };
        for cmp in cmps {
            v.push(Case::new(format!("setp.{cmp}.{t}"), &format!("p{c}{c}")));
        }
    }
    for (t, c) in [("b32", "r"), ("b64", "d")] {
        for op in ["popc", "clz"] {
            v.push(Case::new(format!("{op}.{t}"), &format!("r{c}")));
        }
        v.push(Case::new(format!("brev.{t}"), &format!("{c}{c}")));
    }
    for bop in ["and", "or", "xor"] {
        v.push(Case::new(format!("setp.lt.{bop}.s32"), "prrp"));
        v.push(Case::new(format!("setp.ge.{bop}.f32"), "pffp"));
    }
    v.push(Case::new("setp.ne.xor.f32", "pffp"));
    v.push(Case::new("setp.ge.or.u32", "prrp!"));
    v.push(Case::new("not.pred", "pp"));
    for t in ["u32", "s32"] {
        v.push(Case::new(format!("mul.wide.{t}"), "drr"));
        v.push(Case::new(format!("mad.wide.{t}"), "drrd"));
    }
    for (t, c) in [("f32", "f"), ("f64", "g")] {
        for op in ["add", "sub", "mul", "div.rn"] {
            v.push(Case::new(format!("{op}.{t}"), &format!("{c}{c}{c}")));
        }
        v.push(Case::new(format!("fma.rn.{t}"), &format!("{c}{c}{c}{c}")));
        for op in ["abs", "neg", "rsqrt.approx"] {
            v.push(Case::new(format!("{op}.{t}"), &format!("{c}{c}")));
        }
        for op in ["min", "max", "min.NaN", "max.NaN"] {
            v.push(Case::new(format!("{op}.{t}"), &format!("{c}{c}{c}")));
        }
        for cmp in [
            "eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num",
            "nan",
        ] {
            v.push(Case::new(format!("setp.{cmp}.{t}"), &format!("p{c}{c}")));
        }
        v.push(Case::new(format!("selp.{t}"), &format!("{c}{c}{c}p")));
    }
    v.push(Case::new("sqrt.approx.f32", "ff"));
    v.push(Case::new("rcp.approx.f32", "ff"));
    let all_ints = [
        ("u8", "h"),
        ("s8", "h"),
        ("u16", "h"),
        ("s16", "h"),
        ("u32", "r"),
        ("s32", "r"),
        ("u64", "d"),
        ("s64", "d"),
    ];
    for (to, tc) in all_ints {
        for (from, fc) in all_ints {
            if to != from {
                v.push(Case::new(format!("cvt.{to}.{from}"), &format!("{tc}{fc}")));
            }
        }
    }
    for (to, tc) in [("f32", "f"), ("f64", "g")] {
        for from in ["u32", "s32"] {
            v.push(Case::new(format!("cvt.rn.{to}.{from}"), &format!("{tc}r")));
        }
    }
    for (to, tc) in [("u32", "r"), ("s32", "r"), ("u64", "d"), ("s64", "d")] {
        for (from, fc) in [("f32", "f"), ("f64", "g")] {
            for irnd in ["rzi", "rni", "rmi", "rpi"] {
                v.push(Case::new(
                    format!("cvt.{irnd}.{to}.{from}"),
                    &format!("{tc}{fc}"),
                ));
            }
        }
        v.push(Case::new(
            format!("cvt.rzi.ftz.{to}.f32"),
            &format!("{tc}f"),
        ));
    }
    v.push(Case::new("cvt.f64.f32", "gf"));
    v.push(Case::new("cvt.rn.f32.f64", "fg"));
    // (`cvta` of global addresses, and `cvta.to.param`, are a `mov`.)
    for space in ["shared", "local"] {
        v.push(Case::new(format!("cvta.to.{space}.u64"), "dd"));
        v.push(Case::new(format!("cvta.{space}.u64"), "dd"));
    }
    v
}

/// `op`'s result on `a`, `b` and `c` by `sem` (`None`: not an operation of this table). As
/// `exec::run` dispatches it; predicates are 0 or 1.
fn sem_of(op: Op, a: u64, b: u64, c: u64) -> Option<u64> {
    let setp = |bop: BoolOp, t: bool, cneg: bool| {
        let c = (c & 1 != 0) ^ cneg;
        (match bop {
            BoolOp::None => t,
            BoolOp::And => t && c,
            BoolOp::Or => t || c,
            BoolOp::Xor => t ^ c,
        }) as u64
    };
    Some(match op {
        Op::Add => int::add(a, b),
        Op::Sub => int::sub(a, b),
        Op::MulLo => int::mul_lo(a, b),
        Op::MadLo => int::mad_lo(a, b, c),
        Op::And => a & b,
        Op::Or => a | b,
        Op::Xor => a ^ b,
        Op::Not => bits::not(a),
        Op::Neg => int::neg(a),
        Op::PNot => bits::pnot(a),
        Op::Selp => int::selp(a, b, c),
        Op::CNot { bits } => bits::cnot(a, bits),
        Op::Shl { bits } => bits::shl(a, b, bits),
        Op::Shr { ty } => bits::shr(a, b, ty),
        Op::Popc { bits } => bits::popc(a, bits),
        Op::Clz { bits } => bits::clz(a, bits),
        Op::Brev { bits } => bits::brev(a, bits),
        Op::Min(t) => int::min(a, b, t),
        Op::Max(t) => int::max(a, b, t),
        Op::Abs(t) => int::abs(a, t),
        Op::Div(t) => int::div(a, b, t),
        Op::Rem(t) => int::rem(a, b, t),
        Op::MulHi(t) => int::mul_hi(a, b, t),
        Op::MulWide(t) => int::mul_wide(a, b, t),
        Op::MadWide(t) => int::mad_wide(a, b, c, t),
        Op::FAdd32 => float::add_f32(a, b),
        Op::FSub32 => float::sub_f32(a, b),
        Op::FMul32 => float::mul_f32(a, b),
        Op::FFma32 => float::fma_f32(a, b, c),
        Op::FDiv32 => float::div_f32(a, b),
        Op::FAdd64 => float::add_f64(a, b),
        Op::FSub64 => float::sub_f64(a, b),
        Op::FMul64 => float::mul_f64(a, b),
        Op::FFma64 => float::fma_f64(a, b, c),
        Op::FDiv64 => float::div_f64(a, b),
        Op::FUnary { f, ty, ftz } => float::funary(f, ty, ftz, a),
        Op::FMin { ty, ftz, nan } => float::fminmax(ty, ftz, nan, false, a, b),
        Op::FMax { ty, ftz, nan } => float::fminmax(ty, ftz, nan, true, a, b),
        Op::SetpI { cmp, ty, bop, cneg } => setp(bop, compare::int_cmp(cmp, ty, a, b), cneg),
        Op::SetpF {
            cmp,
            ty,
            ftz,
            bop,
            cneg,
        } => setp(bop, compare::float_cmp(cmp, ty, ftz, a, b), cneg),
        Op::CvtII { from, to, sat } => convert::cvt_ii(a, from, to, sat),
        Op::CvtIF { from, to, rnd } => convert::cvt_if(a, from, to, rnd),
        Op::CvtFI {
            from,
            to,
            irnd,
            ftz,
        } => convert::cvt_fi(a, from, to, irnd, ftz),
        Op::CvtFF {
            from,
            to,
            rnd,
            irnd,
            ftz,
            sat,
        } => convert::cvt_ff(a, from, to, rnd, irnd, ftz, sat),
        Op::Cvta { to, space } => address::cvta(a, space, to),
        _ => return None,
    })
}

/// Operations a region compiles that move data rather than compute a per-lane result (loads,
/// stores, parameters, copies, packing, branches): tested by `tests::jit` instead.
fn moves_data(op: Op) -> bool {
    matches!(
        op,
        Op::Nop
            | Op::Mov
            | Op::Pack { .. }
            | Op::Unpack { .. }
            | Op::Ld { .. }
            | Op::St { .. }
            | Op::LdK { .. }
            | Op::Bra
    )
}

/// The PC of a case kernel's instruction under test: the one before its store (and before the
/// `selp` of a predicate result).
fn tested_pc(prog: &Program, dest: Class) -> usize {
    let st = prog
        .code
        .iter()
        .position(|i| matches!(i.op, Op::St { .. }))
        .expect("a case kernel ends with a store");
    st - 1 - (dest == Class::P) as usize
}

/// The lowered program of kernel `name`.
fn program<'m>(m: &'m Module, name: &str) -> &'m Program {
    let k = m
        .kernels
        .iter()
        .position(|k| k.name == name)
        .expect("the kernel is in the module");
    &m.programs[k]
}

/// Inputs on the edges: zeros of both signs, ones, extremes, shift counts at and past the
/// widths, subnormals, infinities, NaNs (quiet, signalling, with payloads) of f32 and f64.
const EDGES: [u64; 30] = [
    0,
    1,
    2,
    0xFFFF_FFFF_FFFF_FFFF,
    0x8000_0000,
    0x7FFF_FFFF,
    0x8000_0000_0000_0000,
    0x7FFF_FFFF_FFFF_FFFF,
    0x8000,
    0xFFFF,
    15,
    16,
    31,
    32,
    33,
    63,
    64,
    0x0000_0001_0000_0001,
    0x807F_FFFF,
    0x7F80_0000,
    0xFF80_0000,
    0x7FC0_0000,
    0x7F80_0001,
    0x3F80_0000,
    0x4F00_0000,
    0x0000_0000_0000_0001 | 0x8000_0000_0000_0000,
    0x7FF0_0000_0000_0000,
    0xFFF8_0000_0000_0001,
    0x3FF0_0000_0000_0000,
    0x43E0_0000_0000_0000,
];

/// The inputs of every thread: each pair of edge values (the third operand cycling through
/// them), then random values of every kind (`tests::jit::operand`).
fn inputs(rng: &mut Rng) -> Vec<[u64; 3]> {
    let n = EDGES.len();
    let mut v = Vec::new();
    for i in 0..n {
        for j in 0..n {
            v.push([EDGES[i], EDGES[j], EDGES[(i + j) % n]]);
        }
    }
    while v.len() % 64 != 0 || v.len() < n * n + 256 {
        v.push([
            super::jit::operand(rng),
            super::jit::operand(rng),
            super::jit::operand(rng),
        ]);
    }
    v
}

#[test]
fn every_compiled_operation_computes_what_sem_defines() {
    let cases = cases();
    let mut ptx = String::from(".version 7.0\n.target sm_80\n.address_size 64\n\n");
    for (k, case) in cases.iter().enumerate() {
        ptx.push_str(&case.kernel(&format!("case{k}")));
    }
    let dev = Device::new();
    let m = dev.load_module(&ptx).unwrap();
    let mut rng = Rng(seed());
    let inputs = inputs(&mut rng);
    let n = inputs.len();
    let bytes: Vec<u8> = inputs
        .iter()
        .flat_map(|x| x.iter().flat_map(|v| v.to_le_bytes()))
        .collect();
    let pin = dev.alloc(bytes.len()).unwrap();
    dev.write(pin, 0, &bytes).unwrap();
    let mut checked = 0;
    for (k, case) in cases.iter().enumerate() {
        let name = format!("case{k}");
        let prog = program(&m, &name);
        let pc = tested_pc(prog, case.classes[0]);
        let i = prog.code[pc];
        assert!(
            crate::ir::defuse::lane_local(&i, prog),
            "{}: {:?} is not compiled (the table lists only what the JIT compiles)",
            case.mnemonic,
            i.op
        );
        let mut outs = Vec::new();
        for mode in [JitMode::Off, JitMode::Always] {
            let pout = dev.alloc(8 * n).unwrap();
            let r = dev
                .launch(
                    &m,
                    &name,
                    &super::jit::cfg(n as u32 / 64, 64, mode),
                    &[&p64(pin), &p64(pout)],
                )
                .unwrap();
            assert_eq!(r.jit, mode == JitMode::Always, "{}", case.mnemonic);
            let mut out = vec![0u8; 8 * n];
            dev.read(pout, 0, &mut out).unwrap();
            outs.push(out);
        }
        let srcs = &case.classes[1..];
        for (t, x) in inputs.iter().enumerate() {
            let val = |j: usize| srcs.get(j).map_or(0, |c| c.value(x[j]));
            let want = sem_of(i.op, val(0), val(1), val(2))
                .map(|r| case.classes[0].stored(r))
                .unwrap_or_else(|| panic!("{}: no sem entry for {:?}", case.mnemonic, i.op));
            let word =
                |o: &[u8]| u64::from_le_bytes(o[8 * t..8 * t + 8].try_into().expect("8 bytes"));
            let (interpreted, compiled) = (word(&outs[0]), word(&outs[1]));
            assert_eq!(
                (interpreted, compiled),
                (want, want),
                "{} ({:?}) on {:#x?}: interpreted {interpreted:#x}, compiled {compiled:#x}, sem \
                 {want:#x}",
                case.mnemonic,
                i.op,
                &x[..srcs.len()],
            );
        }
        checked += 1;
    }
    eprintln!("{checked} operations, {n} inputs each");
}

/// The key of an operation in the table: the decoded op with its types and modifiers.
fn key(op: Op) -> String {
    format!("{op:?}")
}

/// Every operation the JIT compiles in the PTX fixtures (NVRTC's output for the conformance
/// kernels, the unit tests' `ptx/*.ptx`) that computes a per-lane result has a case in the table.
#[test]
fn every_operation_the_jit_compiles_has_a_case() {
    let table_ptx = {
        let mut s = String::from(".version 7.0\n.target sm_80\n.address_size 64\n\n");
        for (k, case) in cases().iter().enumerate() {
            s.push_str(&case.kernel(&format!("case{k}")));
        }
        s
    };
    let dev = Device::new();
    let table = dev.load_module(&table_ptx).unwrap();
    let covered: BTreeSet<String> = cases()
        .iter()
        .enumerate()
        .map(|(k, case)| {
            let prog = program(&table, &format!("case{k}"));
            key(prog.code[tested_pc(prog, case.classes[0])].op)
        })
        .collect();
    let mut modules = fixture_modules(&dev);
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/tests/ptx");
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "ptx") {
            let text = std::fs::read_to_string(&path).unwrap();
            if let Ok(m) = dev.load_module(&text) {
                modules.push((path.display().to_string(), m));
            }
        }
    }
    let mut missing = BTreeSet::new();
    let mut seen = 0;
    for (file, m) in &modules {
        for prog in m.programs.iter() {
            for i in &prog.code {
                if !crate::ir::defuse::lane_local(i, prog) || moves_data(i.op) {
                    continue;
                }
                seen += 1;
                assert!(
                    sem_of(i.op, 0, 0, 0).is_some(),
                    "{file}: the JIT compiles {:?}, which sem_of does not evaluate",
                    i.op
                );
                if !covered.contains(&key(i.op)) {
                    missing.insert(format!("{} ({file})", key(i.op)));
                }
            }
        }
    }
    assert!(
        seen > 100,
        "only {seen} compiled operations in the fixtures"
    );
    assert!(
        missing.is_empty(),
        "compiled operations without a case in tests::jit_sem::cases: {missing:#?}"
    );
}
