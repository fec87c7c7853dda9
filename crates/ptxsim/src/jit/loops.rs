//! Loops whose global accesses can all be checked once instead of in every iteration (loop
//! versioning).
//!
//! A *simple loop* is a straight-line run that ends in a conditional branch back to its first
//! instruction: NVRTC's inner loops (`matmulNaive`'s dot product: `ld [%rd30]; ld [%rd21];
//! fma; add %rd30, ...; add.s32 %r29, %r29, -4; setp.ne.s32 %p6, %r29, 0; @%p6 bra`). Reading
//! the body once with every register as a linear form of the values the registers hold where
//! an iteration starts (`Form`) finds:
//! - the *inductions*: registers each iteration moves by an amount that does not change in the
//!   loop (a constant, or registers the loop never writes);
//! - each access's address in iteration n: its address in the first iteration plus n times a
//!   stride that does not change. A 32-bit induction widened by `mul.wide` (the grid-stride
//!   loop's `mul.wide.s32 %rd5, %r10, 4`) is linear too as long as it does not wrap, which
//!   compiled code checks for the iterations the loop runs (`Wide`);
//! - the number of iterations, from the branch's `setp` on a 32-bit counter that moves by a
//!   constant or by registers the loop never writes (`Count`).
//!
//! Compiled code runs the first iteration checked. Where it branches back, it checks each
//! access's first and last position of the iterations left against one allocation (with the
//! stride a multiple of the alignment and small enough that no position wraps), and when all
//! pass runs a copy of the body without checks; otherwise a checked copy (`emit::versioned`).
//! Addresses wrap modulo 2^64 exactly as the forms do, so the first and last positions bound
//! every position between them. The forms are relative to where an iteration starts, so they
//! hold at any iteration's start, the second's included.
//!
//! This module only finds the loops and their forms; it must not know about Cranelift.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::ir::defuse::dests;
use crate::ir::{Cmp, Inst, IntTy, Op, Slot, NONE};

/// `c + Σ coef · (value of slot where the iteration starts) + Σ coef · wide`, wrapping modulo
/// 2^64.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Form {
    pub c: u64,
    pub terms: BTreeMap<Slot, u64>,
    pub wides: Vec<(Wide, u64)>,
}

/// The low 32 bits of `inner` (a form without wides), sign- or zero-extended to 64 bits: what
/// `mul.wide.s32`/`.u32` reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Wide {
    pub inner: Form,
    pub signed: bool,
}

impl Form {
    fn konst(c: u64) -> Form {
        Form {
            c,
            ..Form::default()
        }
    }

    fn slot(s: Slot) -> Form {
        Form {
            terms: BTreeMap::from([(s, 1)]),
            ..Form::default()
        }
    }

    fn wide(inner: Form, signed: bool, k: u64) -> Form {
        Form {
            wides: vec![(Wide { inner, signed }, k)],
            ..Form::default()
        }
    }

    /// Whether the form only reads slots that `written` (the loop's writes) does not hold: its
    /// value is the same in every iteration.
    fn invariant(&self, written: &HashSet<Slot>) -> bool {
        self.wides.is_empty() && self.terms.keys().all(|s| !written.contains(s))
    }

    /// A constant, if the form is one.
    pub(super) fn constant(&self) -> Option<u64> {
        (self.terms.is_empty() && self.wides.is_empty()).then_some(self.c)
    }

    /// `self + k · o`.
    fn add_scaled(&self, o: &Form, k: u64) -> Form {
        let mut f = self.clone();
        f.c = f.c.wrapping_add(o.c.wrapping_mul(k));
        for (&s, &x) in &o.terms {
            let e = f.terms.entry(s).or_insert(0);
            *e = e.wrapping_add(x.wrapping_mul(k));
            if *e == 0 {
                f.terms.remove(&s);
            }
        }
        for (w, x) in &o.wides {
            let x = x.wrapping_mul(k);
            match f.wides.iter().position(|(v, _)| v == w) {
                Some(j) => f.wides[j].1 = f.wides[j].1.wrapping_add(x),
                None => f.wides.push((w.clone(), x)),
            }
        }
        f.wides.retain(|(_, x)| *x != 0);
        f
    }

    fn scaled(&self, k: u64) -> Form {
        Form::default().add_scaled(self, k)
    }
}

/// How the loop counts its iterations: in iteration n (from 1) the branch's `setp` compares
/// `first + (n - 1) · step` (the low 32 bits, of type `ty`) with `bound`, and the loop goes on
/// while `cont` holds. A constant step is a power of two; `Ne` needs one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Count {
    pub first: Form,
    pub step: Form,
    pub bound: Form,
    pub cont: Cmp,
    pub ty: IntTy,
}

/// A checked access of the loop (the head of its group, see `emit::access_groups`): the value
/// of its address register in the first iteration, and how much each iteration adds. The
/// stride's wides are the sign-extended 32-bit strides of the address's wides, which hold only
/// while those do not wrap: `wraps` lists each (wide, its inner form's stride) to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Access {
    pub head: usize,
    pub first: Form,
    pub stride: Form,
    pub wraps: Vec<(Wide, Form)>,
}

/// A simple loop from `head` to the branch at `back`, all of whose accesses have strides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Loop {
    pub head: usize,
    pub back: usize,
    pub count: Count,
    pub accesses: Vec<Access>,
}

/// The simple loops of the region `code` whose accesses can be checked before they start.
/// `heads(k)`: for the access at `k`, the instruction whose group check covers it (`None` for
/// other instructions).
pub(super) fn find(
    code: &[Inst],
    lo: u32,
    leaders: &[bool],
    consts: &HashMap<Slot, u64>,
    heads: impl Fn(usize) -> Option<usize>,
) -> Vec<Loop> {
    let mut loops = Vec::new();
    for (back, i) in code.iter().enumerate() {
        if i.op != Op::Bra || i.guard == NONE {
            continue;
        }
        let Some(head) = (i.imm as u64)
            .checked_sub(lo as u64)
            .filter(|&t| t <= back as u64)
        else {
            continue;
        };
        let head = head as usize;
        let body = &code[head..=back];
        let straight = (head + 1..=back).all(|k| !leaders.get(k).copied().unwrap_or(false))
            && body[..body.len() - 1].iter().all(|i| i.op != Op::Bra);
        if straight {
            if let Some(l) = analyze(code, head, back, consts, &heads) {
                loops.push(l);
            }
        }
    }
    loops
}

/// The forms of one body: per slot written so far, its form (`None`: not linear).
struct Forms {
    at: HashMap<Slot, Option<Form>>,
    /// The region's constant slots (never written in it).
    consts: HashMap<Slot, u64>,
}

impl Forms {
    fn of(&self, s: Slot) -> Option<Form> {
        if let Some(&c) = self.consts.get(&s) {
            return Some(Form::konst(c));
        }
        match self.at.get(&s) {
            Some(f) => f.clone(),
            None => Some(Form::slot(s)),
        }
    }

    /// Execute `i` on the forms.
    fn step(&mut self, i: &Inst) {
        let r = i.r;
        let f = if i.guard != NONE {
            None
        } else {
            match i.op {
                Op::Mov => self.of(r[1]),
                Op::Add => self
                    .of(r[1])
                    .zip(self.of(r[2]))
                    .map(|(a, b)| a.add_scaled(&b, 1)),
                Op::Sub => self
                    .of(r[1])
                    .zip(self.of(r[2]))
                    .map(|(a, b)| a.add_scaled(&b, u64::MAX)),
                Op::MulLo => match (self.of(r[1]), self.of(r[2])) {
                    (Some(a), Some(b)) => match (a.constant(), b.constant()) {
                        (_, Some(k)) => Some(a.scaled(k)),
                        (Some(k), _) => Some(b.scaled(k)),
                        _ => None,
                    },
                    _ => None,
                },
                // A 32-bit value widened and multiplied by a constant (extended the same way).
                Op::MulWide(t) if t.bits == 32 => match (self.of(r[1]), self.of(r[2])) {
                    (Some(a), Some(b)) => {
                        let ext = |k: u64| crate::sem::int::ext(k, t) as u64;
                        let narrow = |f: &Form| f.wides.is_empty().then(|| f.clone());
                        match (a.constant(), b.constant()) {
                            (_, Some(k)) => narrow(&a).map(|a| Form::wide(a, t.signed, ext(k))),
                            (Some(k), _) => narrow(&b).map(|b| Form::wide(b, t.signed, ext(k))),
                            _ => None,
                        }
                    }
                    _ => None,
                },
                _ => None,
            }
        };
        let ds = dests(i);
        for d in &ds {
            self.at.insert(*d, None);
        }
        if let Some(&d) = ds.first() {
            self.at.insert(d, f);
        }
    }
}

fn analyze(
    code: &[Inst],
    head: usize,
    back: usize,
    consts: &HashMap<Slot, u64>,
    heads: &impl Fn(usize) -> Option<usize>,
) -> Option<Loop> {
    let mut forms = Forms {
        at: HashMap::new(),
        consts: consts.clone(),
    };
    let mut written: HashSet<Slot> = HashSet::new();
    for i in &code[head..=back] {
        written.extend(dests(i));
    }
    let mut access_forms = Vec::new();
    let mut setp_at: HashMap<Slot, (usize, Option<Form>, Option<Form>)> = HashMap::new();
    for (k, i) in code.iter().enumerate().take(back + 1).skip(head) {
        if let Some(h) = heads(k) {
            if h < head || h > back {
                return None;
            }
            if h == k {
                access_forms.push((k, forms.of(i.r[4])?));
            }
        }
        if let Op::SetpI { .. } = i.op {
            setp_at.insert(i.r[0], (k, forms.of(i.r[1]), forms.of(i.r[2])));
        }
        forms.step(i);
        for d in dests(i) {
            if !matches!(i.op, Op::SetpI { .. }) || d != i.r[0] {
                setp_at.remove(&d);
            }
        }
    }
    if access_forms.is_empty() {
        return None;
    }
    // The stride of each induction: its form at the end minus its own entry value, made of
    // invariant slots only.
    let stride_of = |s: Slot| -> Option<Form> {
        if !written.contains(&s) {
            return Some(Form::default());
        }
        let end = forms.of(s)?;
        let d = end.add_scaled(&Form::slot(s), u64::MAX);
        d.invariant(&written).then_some(d)
    };
    // The stride of a form without wides.
    let plain_stride = |f: &Form| -> Option<Form> {
        let mut stride = Form::default();
        for (&s, &coef) in &f.terms {
            stride = stride.add_scaled(&stride_of(s)?, coef);
        }
        Some(stride)
    };
    let mut accesses = Vec::new();
    for (k, first) in access_forms {
        let narrow = Form {
            wides: Vec::new(),
            ..first.clone()
        };
        let mut stride = plain_stride(&narrow)?;
        let mut wraps = Vec::new();
        for (w, coef) in &first.wides {
            let ds = plain_stride(&w.inner)?;
            stride = stride.add_scaled(&Form::wide(ds.clone(), true, 1), *coef);
            wraps.push((w.clone(), ds));
        }
        accesses.push(Access {
            head: k,
            first,
            stride,
            wraps,
        });
    }
    let count = count(&code[back], &setp_at, &written, &stride_of, code)?;
    Some(Loop {
        head,
        back,
        count,
        accesses,
    })
}

/// The iteration count of the loop whose back branch is `bra`, from the `setp` that last wrote
/// its predicate in the body.
fn count(
    bra: &Inst,
    setp_at: &HashMap<Slot, (usize, Option<Form>, Option<Form>)>,
    written: &HashSet<Slot>,
    stride_of: &impl Fn(Slot) -> Option<Form>,
    code: &[Inst],
) -> Option<Count> {
    let (k, x, y) = setp_at.get(&bra.guard)?.clone();
    let s = &code[k];
    let Op::SetpI { cmp, ty, bop, cneg } = s.op else {
        return None;
    };
    if s.guard != NONE || bop != crate::ir::BoolOp::None || cneg || ty.bits != 32 {
        return None;
    }
    let (x, y) = (x?, y?);
    // One side counts (a single induction with coefficient 1 and a stride the loop does not
    // change), the other does not change.
    let counter = |f: &Form| -> Option<Form> {
        let (&s, &coef) = f.terms.iter().find(|(s, _)| written.contains(s))?;
        let d = stride_of(s)?;
        let rest_invariant = f
            .terms
            .keys()
            .filter(|&&t| t != s)
            .all(|t| !written.contains(t));
        (coef == 1 && rest_invariant && f.wides.is_empty()).then_some(d)
    };
    let (first, bound, cmp, step) = if let (Some(d), true) = (counter(&x), y.invariant(written)) {
        (x, y, cmp, d)
    } else if let (Some(d), true) = (counter(&y), x.invariant(written)) {
        let mirrored = match cmp {
            Cmp::Lt => Cmp::Gt,
            Cmp::Le => Cmp::Ge,
            Cmp::Gt => Cmp::Lt,
            Cmp::Ge => Cmp::Le,
            c => c,
        };
        (y, x, mirrored, d)
    } else {
        return None;
    };
    let cont = if bra.guard_neg {
        match cmp {
            Cmp::Eq => Cmp::Ne,
            Cmp::Ne => Cmp::Eq,
            Cmp::Lt => Cmp::Ge,
            Cmp::Le => Cmp::Gt,
            Cmp::Gt => Cmp::Le,
            Cmp::Ge => Cmp::Lt,
            _ => return None,
        }
    } else {
        cmp
    };
    // A constant step moves the counter towards ending the loop; `Ne` needs a power of two (so
    // that the count is a shift). A step in registers is checked where the loop starts.
    let ok = match step.constant() {
        Some(c) => {
            let c = crate::sem::int::sext(c, 32);
            let pow2 = c != 0 && c.unsigned_abs().is_power_of_two();
            match cont {
                Cmp::Ne => pow2 && c.unsigned_abs() <= 1 << 16,
                Cmp::Lt | Cmp::Le => c > 0,
                Cmp::Gt | Cmp::Ge => c < 0,
                _ => false,
            }
        }
        None => matches!(cont, Cmp::Lt | Cmp::Le | Cmp::Gt | Cmp::Ge),
    };
    ok.then_some(Count {
        first,
        step,
        bound,
        cont,
        ty,
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_code::{add, inst, ld};
    use super::*;
    use crate::ir::BoolOp;

    fn setp(cmp: Cmp, p: Slot, a: Slot, b: Slot) -> Inst {
        let ty = IntTy {
            bits: 32,
            signed: true,
        };
        let op = Op::SetpI {
            cmp,
            ty,
            bop: BoolOp::None,
            cneg: false,
        };
        inst(op, [p, a, b, NONE, NONE])
    }
    fn bra_back(p: Slot, neg: bool, to: i64) -> Inst {
        let mut b = inst(Op::Bra, [NONE; 5]);
        b.guard = p;
        b.guard_neg = neg;
        b.imm = to;
        b
    }
    /// Each load is checked on its own; slots 90, 91, 92 hold -4, 16 and 0.
    fn find_in(code: &[Inst]) -> Vec<Loop> {
        let mut leaders = vec![false; code.len()];
        leaders[0] = true;
        let consts = HashMap::from([(90, (-4i64) as u64), (91, 16), (92, 0)]);
        find(code, 0, &leaders, &consts, |k| {
            matches!(code[k].op, Op::Ld { .. }).then_some(k)
        })
    }
    fn form(c: u64, terms: &[(Slot, u64)]) -> Form {
        Form {
            c,
            terms: terms.iter().copied().collect(),
            wides: Vec::new(),
        }
    }

    // Slots: 5 the column step and 3 the row offset (invariant); 30, 31 pointers; 29 the
    // counter.
    fn matmul_loop() -> Vec<Inst> {
        vec![
            add(21, 31, 3),
            ld(100, 30),
            ld(101, 21),
            add(22, 30, 5),
            ld(102, 22),
            add(30, 22, 5),
            add(29, 29, 90),
            add(31, 31, 91),
            setp(Cmp::Ne, 6, 29, 92),
            bra_back(6, false, 0),
        ]
    }

    #[test]
    fn a_strided_dot_product_loop_has_strides_and_a_count() {
        let code = matmul_loop();
        let loops = find_in(&code);
        assert_eq!(loops.len(), 1);
        let l = &loops[0];
        assert_eq!((l.head, l.back), (0, 9));
        let strides: Vec<(usize, Form, Form)> = l
            .accesses
            .iter()
            .map(|a| (a.head, a.first.clone(), a.stride.clone()))
            .collect();
        assert_eq!(
            strides,
            vec![
                (1, form(0, &[(30, 1)]), form(0, &[(5, 2)])),
                (2, form(0, &[(3, 1), (31, 1)]), form(16, &[])),
                (4, form(0, &[(5, 1), (30, 1)]), form(0, &[(5, 2)])),
            ]
        );
        let c = &l.count;
        assert_eq!(c.first, form((-4i64) as u64, &[(29, 1)]));
        assert_eq!(
            (c.step.clone(), c.bound.clone(), c.cont),
            (form((-4i64) as u64, &[]), form(0, &[]), Cmp::Ne)
        );
        // `@!p bra` on `setp.eq`, and the operands swapped: the same count.
        let mut code = matmul_loop();
        code[8] = setp(Cmp::Eq, 6, 92, 29);
        code[9].guard_neg = true;
        assert_eq!(find_in(&code)[0].count, l.count);
    }

    #[test]
    fn loops_without_a_count_or_a_linear_address_are_left_alone() {
        // A pointer loaded from memory in the loop: not linear.
        let mut code = matmul_loop();
        code[0] = ld(21, 31);
        assert!(find_in(&code).is_empty());
        // A guarded pointer update.
        let mut code = matmul_loop();
        code[5].guard = 6;
        assert!(find_in(&code).is_empty());
        // A pointer that moves by a stride the loop changes.
        let mut code = matmul_loop();
        code.insert(7, add(5, 5, 91));
        code[10].imm = 0;
        assert!(find_in(&code).is_empty());
        // A branch out of the body: not one straight-line run.
        let mut code = matmul_loop();
        code.insert(3, bra_back(6, true, 20));
        code[10].imm = 0;
        assert!(find_in(&code).is_empty());
        // A counter that does not move towards the bound (count up while below, step down).
        let mut code = matmul_loop();
        code[8] = setp(Cmp::Lt, 6, 29, 92);
        assert!(find_in(&code).is_empty());
    }
}
