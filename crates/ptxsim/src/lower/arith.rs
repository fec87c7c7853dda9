//! Instruction selection for arithmetic: integer, bit manipulation, floating point (scalar
//! and packed f16x2/bf16x2), comparisons and conversions.
//!
//! Part of `inst`; it only chooses pre-decoded ops and never executes anything.

use super::types::{Mn, Ty, TK};
use super::{perr, unsupported, KB};
use crate::ir::*;
use crate::parse::Operand;
use crate::ModuleError;

impl KB<'_> {
    pub(super) fn lower_int_arith(
        &mut self,
        mn: &Mn,
        t: Ty,
        g: Option<(Slot, bool)>,
        ops: &[Operand],
        line: usize,
    ) -> Result<(), ModuleError> {
        let it = t.int();
        let unsup = || unsupported(line, format!("{}.{:?}{}", mn.base, t.k, t.bits));
        let cc = mn.has("cc");
        let carry_in = matches!(mn.base, "addc" | "subc" | "madc");
        if cc || carry_in {
            let mad = mn.base.starts_with("mad");
            let k = if mad { 3 } else { 2 };
            let mut r = self.operands3(ops, k, t, line)?;
            r[4] = self.cc;
            let op = Op::Carry {
                bits: t.bits,
                sub: mn.base.starts_with("sub"),
                mad,
                hi: mn.has("hi"),
                cin: carry_in,
                cout: cc,
            };
            self.emit(op, g, r, 0);
            return Ok(());
        }
        let (op, k) = match mn.base {
            "add" if mn.has("sat") => (Op::AddSat, 2),
            "sub" if mn.has("sat") => (Op::SubSat, 2),
            "add" => (Op::Add, 2),
            "sub" => (Op::Sub, 2),
            "mul" if mn.has("wide") => (Op::MulWide(it), 2),
            "mul" if mn.has("hi") => (Op::MulHi(it), 2),
            "mul" => (Op::MulLo, 2),
            "mad" if mn.has("wide") => (Op::MadWide(it), 3),
            "mad" if mn.has("hi") => (Op::MadHi(it), 3),
            "mad" => (Op::MadLo, 3),
            "div" => (Op::Div(it), 2),
            "rem" => (Op::Rem(it), 2),
            "min" if !mn.has("relu") => (Op::Min(it), 2),
            "max" if !mn.has("relu") => (Op::Max(it), 2),
            "abs" => (Op::Abs(it), 1),
            "neg" => (Op::Neg, 1),
            "sad" => (Op::Sad(it), 3),
            _ => return Err(unsup()),
        };
        // Sources of mad.wide's addend are twice as wide; immediates are taken as written.
        let r = self.operands3(ops, k, t, line)?;
        self.emit(op, g, r, 0);
        Ok(())
    }

    pub(super) fn lower_float(
        &mut self,
        mn: &Mn,
        t: Ty,
        g: Option<(Slot, bool)>,
        ops: &[Operand],
        line: usize,
    ) -> Result<(), ModuleError> {
        let (op, k) = self.float_op(mn, t, line)?;
        let r = self.operands3(ops, k, t, line)?;
        self.emit(op, g, r, 0);
        Ok(())
    }

    /// An sm_90 integer pair operation: `add/sub.{u16,s16}x2`, `min/max{.relu}.{u16,s16}x2`,
    /// each half wrapping (a SIMD video operation on two lanes).
    pub(super) fn lower_int_pair(
        &mut self,
        mn: &Mn,
        t: Ty,
        g: Option<(Slot, bool)>,
        ops: &[Operand],
        line: usize,
    ) -> Result<(), ModuleError> {
        let unsup = || unsupported(line, format!("{} of .{:?}", mn.base, t.k));
        let op = match mn.base {
            "add" => VideoOp::Add,
            "sub" => VideoOp::Sub,
            "min" => VideoOp::Min,
            "max" => VideoOp::Max,
            _ => return Err(unsup()),
        };
        let signed = t.k == TK::S2;
        let relu = mn.has("relu");
        if (relu && !(signed && matches!(op, VideoOp::Min | VideoOp::Max)))
            || mn.mods.iter().any(|m| *m != "relu")
        {
            return Err(unsup());
        }
        let b32 = Ty { k: TK::B, bits: 32 };
        let mut r = self.operands3(ops, 2, b32, line)?;
        r[3] = self.konst(0);
        self.emit(Op::Video(VideoSimd::pair(op, signed, relu)), g, r, 0);
        Ok(())
    }

    /// An `f16x2`/`bf16x2` operation: unpack the sources, run the scalar operation on each
    /// half, pack the results.
    pub(super) fn lower_packed(
        &mut self,
        mn: &Mn,
        half: Ty,
        g: Option<(Slot, bool)>,
        ops: &[Operand],
        line: usize,
    ) -> Result<(), ModuleError> {
        let (op, k) = self.float_op(mn, half, line)?;
        if ops.len() < k + 1 {
            return Err(perr(line, format!("expected {} operands", k + 1)));
        }
        let d = self.dst(&ops[0], line)?;
        let b32 = Ty { k: TK::B, bits: 32 };
        let (mut lo, mut hi) = ([NONE; 3], [NONE; 3]);
        for j in 0..k {
            let s = self.src(&ops[j + 1], b32, line)?;
            let (l, h) = self.unpack_halves(s, g);
            lo[j] = l;
            hi[j] = h;
        }
        let (rl, rh) = (self.new_slot(), self.new_slot());
        self.emit(op, g, [rl, lo[0], lo[1], lo[2], NONE, NONE], 0);
        self.emit(op, g, [rh, hi[0], hi[1], hi[2], NONE, NONE], 0);
        self.emit(
            Op::Pack { n: 2, bits: 16 },
            g,
            [d, rl, rh, NONE, NONE, NONE],
            0,
        );
        Ok(())
    }

    /// Emit an unpack of the two 16-bit halves of `s` into fresh slots (low, high).
    pub(super) fn unpack_halves(&mut self, s: Slot, g: Option<(Slot, bool)>) -> (Slot, Slot) {
        let (l, h) = (self.new_slot(), self.new_slot());
        self.emit(
            Op::Unpack { n: 2, bits: 16 },
            g,
            [l, h, NONE, NONE, NONE, s],
            0,
        );
        (l, h)
    }

    /// The scalar floating-point operation of `mn` on type `t`, and its number of sources.
    pub(super) fn float_op(
        &mut self,
        mn: &Mn,
        t: Ty,
        line: usize,
    ) -> Result<(Op, usize), ModuleError> {
        let unsup = || unsupported(line, format!("{} of .f{}", mn.base, t.bits));
        let fty = t.fty().ok_or_else(unsup)?;
        let ftz = mn.has("ftz");
        let sat = mn.has("sat");
        let rnd = mn.rnd();
        let approx = mn.has("approx") || mn.has("full");
        let relu = mn.has("relu");
        let fop = |op| Op::FArith {
            op,
            ty: fty,
            rnd: rnd.unwrap_or(Rnd::Rn),
            ftz,
            sat,
            relu,
        };
        let fast = rnd.unwrap_or(Rnd::Rn) == Rnd::Rn && !ftz && !sat && !relu;
        let (op, k) = match mn.base {
            "add" | "sub" | "mul" => {
                let which = match mn.base {
                    "add" => FOp::Add,
                    "sub" => FOp::Sub,
                    _ => FOp::Mul,
                };
                let op = match (fast, fty, which) {
                    (true, FTy::F32, FOp::Add) => Op::FAdd32,
                    (true, FTy::F32, FOp::Sub) => Op::FSub32,
                    (true, FTy::F32, FOp::Mul) => Op::FMul32,
                    (true, FTy::F64, FOp::Add) => Op::FAdd64,
                    (true, FTy::F64, FOp::Sub) => Op::FSub64,
                    (true, FTy::F64, FOp::Mul) => Op::FMul64,
                    _ => fop(which),
                };
                (op, 2)
            }
            "fma" | "mad" => {
                let op = match (fast, fty) {
                    (true, FTy::F32) => Op::FFma32,
                    (true, FTy::F64) => Op::FFma64,
                    _ => fop(FOp::Fma),
                };
                (op, 3)
            }
            "div" => {
                let op = match (fast || (approx && !ftz && !sat), fty) {
                    (true, FTy::F32) => Op::FDiv32,
                    (true, FTy::F64) => Op::FDiv64,
                    _ => Op::FArith {
                        op: FOp::Div,
                        ty: fty,
                        rnd: rnd.unwrap_or(Rnd::Rn),
                        ftz,
                        sat,
                        relu,
                    },
                };
                (op, 2)
            }
            "sqrt" | "rcp" if !approx => {
                let which = if mn.base == "sqrt" {
                    FOp::Sqrt
                } else {
                    FOp::Rcp
                };
                (fop(which), 1)
            }
            "sqrt" | "rcp" | "rsqrt" | "sin" | "cos" | "lg2" | "ex2" | "tanh" | "abs" | "neg" => {
                let f = match mn.base {
                    "sqrt" => UFn::Sqrt,
                    "rcp" => UFn::Rcp,
                    "rsqrt" => UFn::Rsqrt,
                    "sin" => UFn::Sin,
                    "cos" => UFn::Cos,
                    "lg2" => UFn::Lg2,
                    "ex2" => UFn::Ex2,
                    "tanh" => UFn::Tanh,
                    "abs" => UFn::Abs,
                    _ => UFn::Neg,
                };
                (Op::FUnary { f, ty: fty, ftz }, 1)
            }
            "min" => (
                Op::FMin {
                    ty: fty,
                    ftz,
                    nan: mn.has("NaN"),
                },
                2,
            ),
            "max" => (
                Op::FMax {
                    ty: fty,
                    ftz,
                    nan: mn.has("NaN"),
                },
                2,
            ),
            "copysign" => (Op::Copysign(fty), 2),
            "testp" => {
                let tp = if mn.has("finite") {
                    TestP::Finite
                } else if mn.has("infinite") {
                    TestP::Infinite
                } else if mn.has("number") {
                    TestP::Number
                } else if mn.has("notanumber") {
                    TestP::NotANumber
                } else if mn.has("normal") {
                    TestP::Normal
                } else if mn.has("subnormal") {
                    TestP::Subnormal
                } else {
                    return Err(unsup());
                };
                (Op::Testp { t: tp, ty: fty }, 1)
            }
            _ => return Err(unsup()),
        };
        if matches!(fty, FTy::F16 | FTy::BF16)
            && !matches!(
                op,
                Op::FArith { .. } | Op::FUnary { .. } | Op::FMin { .. } | Op::FMax { .. }
            )
        {
            return Err(unsup());
        }
        Ok((op, k))
    }

    pub(super) fn lower_bits(
        &mut self,
        mn: &Mn,
        t: Ty,
        g: Option<(Slot, bool)>,
        ops: &[Operand],
        line: usize,
    ) -> Result<(), ModuleError> {
        let unsup = || unsupported(line, format!("{}.{:?}{}", mn.base, t.k, t.bits));
        let u32t = Ty { k: TK::U, bits: 32 };
        let pred = t.k == TK::Pred;
        match mn.base {
            "and" | "or" | "xor" => {
                let op = match mn.base {
                    "and" => Op::And,
                    "or" => Op::Or,
                    _ => Op::Xor,
                };
                let r = self.operands3(ops, 2, t, line)?;
                self.emit(op, g, r, 0);
            }
            "not" => {
                let r = self.operands3(ops, 1, t, line)?;
                self.emit(if pred { Op::PNot } else { Op::Not }, g, r, 0);
            }
            "cnot" => {
                let r = self.operands3(ops, 1, t, line)?;
                self.emit(Op::CNot { bits: t.bits }, g, r, 0);
            }
            "shl" | "shr" => {
                if ops.len() < 3 {
                    return Err(perr(line, "shift needs 3 operands"));
                }
                let d = self.dst(&ops[0], line)?;
                let a = self.src(&ops[1], t, line)?;
                let b = self.src(&ops[2], u32t, line)?;
                let op = if mn.base == "shl" {
                    Op::Shl { bits: t.bits }
                } else {
                    Op::Shr { ty: t.int() }
                };
                self.emit(op, g, [d, a, b, NONE, NONE, NONE], 0);
            }
            "popc" | "clz" | "brev" => {
                let r = self.operands3(ops, 1, t, line)?;
                let op = match mn.base {
                    "popc" => Op::Popc { bits: t.bits },
                    "clz" => Op::Clz { bits: t.bits },
                    _ => Op::Brev { bits: t.bits },
                };
                self.emit(op, g, r, 0);
            }
            "bfind" => {
                let r = self.operands3(ops, 1, t, line)?;
                let op = Op::Bfind {
                    ty: t.int(),
                    shiftamt: mn.has("shiftamt"),
                };
                self.emit(op, g, r, 0);
            }
            "bfe" => {
                if ops.len() < 4 {
                    return Err(perr(line, "bfe needs 4 operands"));
                }
                let d = self.dst(&ops[0], line)?;
                let a = self.src(&ops[1], t, line)?;
                let b = self.src(&ops[2], u32t, line)?;
                let c = self.src(&ops[3], u32t, line)?;
                self.emit(Op::Bfe(t.int()), g, [d, a, b, c, NONE, NONE], 0);
            }
            "bfi" => {
                if ops.len() < 5 {
                    return Err(perr(line, "bfi needs 5 operands"));
                }
                let d = self.dst(&ops[0], line)?;
                let a = self.src(&ops[1], t, line)?;
                let b = self.src(&ops[2], t, line)?;
                let c = self.src(&ops[3], u32t, line)?;
                let l = self.src(&ops[4], u32t, line)?;
                self.emit(Op::Bfi { bits: t.bits }, g, [d, a, b, c, l, NONE], 0);
            }
            "prmt" => {
                let mode = if mn.has("f4e") {
                    PrmtMode::F4e
                } else if mn.has("b4e") {
                    PrmtMode::B4e
                } else if mn.has("rc8") {
                    PrmtMode::Rc8
                } else if mn.has("ecl") {
                    PrmtMode::Ecl
                } else if mn.has("ecr") {
                    PrmtMode::Ecr
                } else if mn.has("rc16") {
                    PrmtMode::Rc16
                } else {
                    PrmtMode::Default
                };
                let r = self.operands3(ops, 3, t, line)?;
                self.emit(Op::Prmt(mode), g, r, 0);
            }
            "shf" => {
                let r = self.operands3(ops, 3, t, line)?;
                let op = Op::Shf {
                    left: mn.has("l"),
                    wrap: mn.has("wrap"),
                };
                self.emit(op, g, r, 0);
            }
            "mul24" | "mad24" => {
                let mad = mn.base == "mad24";
                let r = self.operands3(ops, if mad { 3 } else { 2 }, t, line)?;
                let op = Op::Mul24 {
                    hi: mn.has("hi"),
                    signed: t.k == TK::S,
                    mad,
                };
                self.emit(op, g, r, 0);
            }
            "vabsdiff2" | "vabsdiff4" | "vadd2" | "vadd4" | "vsub2" | "vsub4" | "vavrg2"
            | "vavrg4" | "vmin2" | "vmin4" | "vmax2" | "vmax4" => {
                // `.dtype.atype.btype`, each .u32 or .s32; byte masks and selectors refused.
                let int32 = |t: &Ty| t.bits == 32 && matches!(t.k, TK::U | TK::S);
                let [d, a, b] = match mn.types[..] {
                    [d, a, b] if [d, a, b].iter().all(int32) => [d, a, b],
                    _ => return Err(unsup()),
                };
                let (name, lanes) = mn.base.split_at(mn.base.len() - 1);
                let op = match name {
                    "vabsdiff" => VideoOp::AbsDiff,
                    "vadd" => VideoOp::Add,
                    "vsub" => VideoOp::Sub,
                    "vavrg" => VideoOp::Avrg,
                    "vmin" => VideoOp::Min,
                    _ => VideoOp::Max,
                };
                if mn.mods.iter().any(|m| !matches!(*m, "sat" | "add")) || ops.len() != 4 {
                    return Err(unsup());
                }
                let r = self.operands3(ops, 3, u32t, line)?;
                let v = VideoSimd {
                    op,
                    lanes: if lanes == "2" { 2 } else { 4 },
                    a_signed: a.k == TK::S,
                    b_signed: b.k == TK::S,
                    d_signed: d.k == TK::S,
                    sat: mn.has("sat"),
                    add: mn.has("add"),
                    relu: false,
                };
                self.emit(Op::Video(v), g, r, 0);
            }
            "fns" => {
                let r = self.operands3(ops, 3, u32t, line)?;
                self.emit(Op::Fns, g, r, 0);
            }
            "dp4a" | "dp2a" => {
                if mn.types.len() < 2 {
                    return Err(unsup());
                }
                let form = match (mn.base, mn.has("lo"), mn.has("hi")) {
                    ("dp4a", false, false) => DotForm::Four,
                    ("dp2a", true, false) => DotForm::Two { hi: false },
                    ("dp2a", false, true) => DotForm::Two { hi: true },
                    _ => return Err(unsup()),
                };
                let r = self.operands3(ops, 3, t, line)?;
                let op = Op::Dp4a {
                    form,
                    a_signed: mn.types[0].k == TK::S,
                    b_signed: mn.types[1].k == TK::S,
                };
                self.emit(op, g, r, 0);
            }
            _ => return Err(unsup()),
        }
        Ok(())
    }

    pub(super) fn lower_setp(
        &mut self,
        mn: &Mn,
        g: Option<(Slot, bool)>,
        ops: &[Operand],
        line: usize,
    ) -> Result<(), ModuleError> {
        let unsup = || unsupported(line, mn.base.to_string());
        let (cmp, force_unsigned) = mn.cmp().ok_or_else(unsup)?;
        let st = mn.ty().ok_or_else(unsup)?;
        let bop = if mn.has("and") {
            BoolOp::And
        } else if mn.has("or") {
            BoolOp::Or
        } else if mn.has("xor") {
            BoolOp::Xor
        } else {
            BoolOp::None
        };
        if ops.len() < 3 {
            return Err(perr(line, "setp needs 3 operands"));
        }
        let (d, d2) = match &ops[0] {
            Operand::Pair(a, b) => (self.dst(a, line)?, self.dst(b, line)?),
            o => (self.dst(o, line)?, NONE),
        };
        // `set` into f16/bf16 (scalar or packed) writes 1.0 of that type; into integers, ones.
        let set_one = |t: Ty| match t.packed().unwrap_or(t) {
            h if h.k == TK::F && h.bits == 16 => Some(0x3C00u64),
            h if h.k == TK::BF => Some(0x3F80),
            _ => None,
        };
        if let Some(half) = st.packed() {
            if bop != BoolOp::None {
                return Err(unsup());
            }
            let b32 = Ty { k: TK::B, bits: 32 };
            let a = self.src(&ops[1], b32, line)?;
            let b = self.src(&ops[2], b32, line)?;
            let (al, ah) = self.unpack_halves(a, g);
            let (bl, bh) = self.unpack_halves(b, g);
            let ty = half.fty().ok_or_else(unsup)?;
            if mn.base == "set" {
                // set.cmp.{f16x2,bf16x2,u32,s32}.f16x2: per half 1.0 or 0.0, or 0xFFFF or 0.
                let dt = mn.types.first().copied().ok_or_else(unsup)?;
                let one = set_one(dt);
                let op = Op::SetF {
                    cmp,
                    ty,
                    ftz: mn.has("ftz"),
                    bop,
                    cneg: false,
                    dst_f32: false,
                };
                let mut halves = [NONE; 2];
                for (h, (x, y)) in halves.iter_mut().zip([(al, bl), (ah, bh)]) {
                    let r = self.new_slot();
                    self.emit(op, g, [r, x, y, NONE, NONE, NONE], 0);
                    *h = match one {
                        Some(v) => {
                            let (k, m) = (self.konst(v), self.new_slot());
                            self.emit(Op::And, g, [m, r, k, NONE, NONE, NONE], 0);
                            m
                        }
                        None => r,
                    };
                }
                let pack = Op::Pack { n: 2, bits: 16 };
                self.emit(pack, g, [d, halves[0], halves[1], NONE, NONE, NONE], 0);
                return Ok(());
            }
            let op = Op::SetpF {
                cmp,
                ty,
                ftz: mn.has("ftz"),
                bop,
                cneg: false,
            };
            self.emit(op, g, [d, al, bl, NONE, NONE, NONE], 0);
            if d2 != NONE {
                self.emit(op, g, [d2, ah, bh, NONE, NONE, NONE], 0);
            }
            return Ok(());
        }
        let a = self.src(&ops[1], st, line)?;
        let b = self.src(&ops[2], st, line)?;
        let (c, cneg) = match ops.get(3) {
            Some(o) if bop != BoolOp::None => self.pred_operand(o, line)?,
            _ => (NONE, false),
        };
        let ftz = mn.has("ftz");
        let dst_f32 = mn.base == "set" && mn.types.first().is_some_and(|t| t.is_float());
        // set.cmp.f16.stype: 1.0 of the 16-bit destination type (ones, masked to it).
        let one16 = match mn.types.first() {
            Some(&t) if mn.base == "set" && t.bits == 16 => set_one(t),
            _ => None,
        };
        let dst_f32 = dst_f32 && one16.is_none();
        let op = if st.is_float() {
            let ty = st.fty().ok_or_else(unsup)?;
            if mn.base == "set" {
                Op::SetF {
                    cmp,
                    ty,
                    ftz,
                    bop,
                    cneg,
                    dst_f32,
                }
            } else {
                Op::SetpF {
                    cmp,
                    ty,
                    ftz,
                    bop,
                    cneg,
                }
            }
        } else {
            let mut it = st.int();
            if force_unsigned || st.k == TK::B {
                it.signed = false;
            }
            if st.k == TK::Pred {
                it = IntTy {
                    bits: 1,
                    signed: false,
                };
            }
            if mn.base == "set" {
                Op::SetI {
                    cmp,
                    ty: it,
                    bop,
                    cneg,
                    dst_f32,
                }
            } else {
                Op::SetpI {
                    cmp,
                    ty: it,
                    bop,
                    cneg,
                }
            }
        };
        if let Some(v) = one16 {
            let (r, k) = (self.new_slot(), self.konst(v));
            self.emit(op, g, [r, a, b, c, d2, NONE], 0);
            self.emit(Op::And, g, [d, r, k, NONE, NONE, NONE], 0);
            return Ok(());
        }
        self.emit(op, g, [d, a, b, c, d2, NONE], 0);
        Ok(())
    }

    pub(super) fn lower_cvt(
        &mut self,
        mn: &Mn,
        g: Option<(Slot, bool)>,
        ops: &[Operand],
        line: usize,
    ) -> Result<(), ModuleError> {
        let unsup = || unsupported(line, "cvt with these types".to_string());
        if mn.types.len() != 2 {
            return Err(unsup());
        }
        let (dt, st) = (mn.types[0], mn.types[1]);
        if let (Some(half), 3) = (dt.packed(), ops.len()) {
            // cvt.rn.f16x2.f32 d, a, b: a goes to the upper half, b to the lower.
            let to = half.fty().ok_or_else(unsup)?;
            let from = st.fty().ok_or_else(unsup)?;
            let d = self.dst(&ops[0], line)?;
            let a = self.src(&ops[1], st, line)?;
            let b = self.src(&ops[2], st, line)?;
            let (th, tl) = (self.new_slot(), self.new_slot());
            let op = Op::CvtFF {
                from,
                to,
                rnd: mn.rnd().unwrap_or(Rnd::Rn),
                irnd: IRnd::None,
                ftz: false,
                sat: mn.has("sat"),
            };
            self.emit(op, g, [th, a, NONE, NONE, NONE, NONE], 0);
            self.emit(op, g, [tl, b, NONE, NONE, NONE, NONE], 0);
            self.emit(
                Op::Pack { n: 2, bits: 16 },
                g,
                [d, tl, th, NONE, NONE, NONE],
                0,
            );
            return Ok(());
        }
        if ops.len() != 2 || dt.packed().is_some() || st.packed().is_some() {
            return Err(unsup());
        }
        let d = self.dst(&ops[0], line)?;
        let a = self.src(&ops[1], st, line)?;
        let ftz = mn.has("ftz");
        let sat = mn.has("sat");
        let irnd = mn
            .mods
            .iter()
            .find_map(|m| match *m {
                "rni" => Some(IRnd::Rni),
                "rzi" => Some(IRnd::Rzi),
                "rmi" => Some(IRnd::Rmi),
                "rpi" => Some(IRnd::Rpi),
                _ => None,
            })
            .unwrap_or(IRnd::None);
        let rnd = mn.rnd().unwrap_or(Rnd::Rn);
        let int = |t: Ty| {
            if t.k == TK::Pred {
                IntTy {
                    bits: 1,
                    signed: false,
                }
            } else {
                t.int()
            }
        };
        let op = match (dt.fty(), st.fty()) {
            (None, None) => Op::CvtII {
                from: int(st),
                to: int(dt),
                sat,
            },
            (Some(to), None) => Op::CvtIF {
                from: int(st),
                to,
                rnd,
            },
            (None, Some(from)) => Op::CvtFI {
                from,
                to: int(dt),
                irnd: if irnd == IRnd::None { IRnd::Rzi } else { irnd },
                ftz,
            },
            (Some(to), Some(from)) => Op::CvtFF {
                from,
                to,
                rnd,
                irnd,
                ftz,
                sat,
            },
        };
        self.emit(op, g, [d, a, NONE, NONE, NONE, NONE], 0);
        Ok(())
    }
}
