//! The pre-decoded program that the interpreter runs.
//!
//! `lower` produces one `Program` per `.entry`: a flat array of `Inst` (the entry's code followed
//! by the code of every device function it calls), with every operand turned into a register
//! slot (immediates and addresses become constant slots, special registers become per-lane slots
//! filled at block start) and every type decision taken. Nothing here parses text or executes.

pub(crate) mod defuse;
pub(crate) mod live;
pub(crate) mod uniform;

use crate::ParamInfo;

/// A register slot index. Each slot holds 32 lanes of `u64`.
pub type Slot = u32;
/// "No slot" (no guard predicate, no second destination, …).
pub const NONE: Slot = u32::MAX;

/// Bytes of shared memory reserved for the system at the start of each block's shared memory
/// when a kernel reads `%reserved_smem_offset_*` (1 KiB, as on sm_80 and later GPUs).
pub const RESERVED_SMEM: u32 = 1024;
/// `%reserved_smem_offset_1`: where cooperative groups' multi-warp scratch starts in it (the
/// scratch takes at most 32 + 8 bytes a warp: 288 bytes for 1,024 threads).
pub const RESERVED_SMEM_CG: u32 = 512;

/// Comparison operators of `setp`/`set` (integer `lo/ls/hi/hs` become `Lt/Le/Gt/Ge` on an
/// unsigned type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

/// The boolean combination of `setp.cmp.bop`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoolOp {
    None,
    And,
    Or,
    Xor,
}

/// An integer type: width in bits and signedness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntTy {
    pub bits: u8,
    pub signed: bool,
}

impl IntTy {
    /// The integer types whose lane loops the interpreter and the block tier specialise (see
    /// `sem`'s fast forms).
    pub const U32: IntTy = IntTy {
        bits: 32,
        signed: false,
    };
    pub const S32: IntTy = IntTy {
        bits: 32,
        signed: true,
    };
    pub const U64: IntTy = IntTy {
        bits: 64,
        signed: false,
    };
    pub const S64: IntTy = IntTy {
        bits: 64,
        signed: true,
    };
}

/// A floating-point type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FTy {
    F16,
    /// bfloat16.
    BF16,
    F32,
    F64,
}

/// IEEE rounding of a floating-point result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rnd {
    Rn,
    Rz,
    Rm,
    Rp,
}

/// Rounding to an integral value (`cvt.rni` …); `None` where the conversion has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IRnd {
    None,
    Rni,
    Rzi,
    Rmi,
    Rpi,
}

/// Floating-point operations with IEEE rounding (exact results, any rounding mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FOp {
    Add,
    Sub,
    Mul,
    Fma,
    Div,
    Sqrt,
    Rcp,
}

/// Floating-point unary functions without a rounding mode (approximations, sign operations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UFn {
    Abs,
    Neg,
    Sqrt,
    Rsqrt,
    Rcp,
    Sin,
    Cos,
    Lg2,
    Ex2,
    Tanh,
}

/// State space of a memory instruction after lowering (`.const` is global memory here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemSpace {
    Global,
    Shared,
    Local,
    /// Kernel parameters, addressed through a register (PARAM window).
    Param,
    Generic,
}

/// Atomic read-modify-write operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomOp {
    Add,
    Min,
    Max,
    Exch,
    Cas,
    And,
    Or,
    Xor,
    Inc,
    Dec,
}

/// Element kind of an atomic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomKind {
    U,
    S,
    F,
    /// f16, bf16, and packed pairs of them (32 bits).
    H,
    BH,
    H2,
    BH2,
}

/// `shfl.sync` modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

/// `vote.sync` modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoteMode {
    All,
    Any,
    Uni,
    Ballot,
}

/// `redux.sync` operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduxOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
}

/// Barrier flavours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BarKind {
    Sync,
    Arrive,
    /// `bar.red.popc.u32`.
    RedPopc,
    /// `bar.red.and.pred`.
    RedAnd,
    /// `bar.red.or.pred`.
    RedOr,
}

/// `testp` classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestP {
    Finite,
    Infinite,
    Number,
    NotANumber,
    Normal,
    Subnormal,
}

/// `prmt` modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrmtMode {
    Default,
    F4e,
    B4e,
    Rc8,
    Ecl,
    Ecr,
    Rc16,
}

/// Special registers whose per-lane values are set at block start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SReg {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    LaneId,
    WarpId,
    NWarpId,
    SmId,
    NSmId,
    GridId,
    LaneMaskEq,
    LaneMaskLt,
    LaneMaskLe,
    LaneMaskGt,
    LaneMaskGe,
    DynSmem,
    TotalSmem,
    /// `%envreg1` (1: the high 32 bits) or `%envreg2` (2: the low 32 bits) of the grid
    /// workspace's address in a cooperative launch (`crate::LaunchConfig::cooperative`); 0 in
    /// any other launch.
    GridWs(u8),
}

/// The element operation of a SIMD video instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VideoOp {
    AbsDiff,
    Add,
    Sub,
    /// `vavrg`: (a + b + 1) >> 1.
    Avrg,
    Min,
    Max,
}

/// `vop2`/`vop4.dtype.atype.btype{.sat} d, a, b, c` and its `.add` form: a and b split into
/// `lanes` elements (2 of 16 bits or 4 of 8), each extended by its type's signedness. Without
/// `.add`, each result (clamped to the element range of `dtype` with `.sat`, else truncated)
/// is an element of d; with `.add`, d = c + the sum of the results; with `relu`, a negative
/// result is 0. Byte masks and selectors are not modelled (the lowering refuses them). The
/// sm_90 integer pair instructions (`add/sub/min/max{.relu}.{u16,s16}x2`) are the same
/// operation on 2 lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VideoSimd {
    pub op: VideoOp,
    pub lanes: u8,
    pub a_signed: bool,
    pub b_signed: bool,
    pub d_signed: bool,
    pub sat: bool,
    pub add: bool,
    pub relu: bool,
}

impl VideoSimd {
    /// An sm_90 integer pair operation (`add/sub/min/max{.relu}.{u16,s16}x2`): two wrapping
    /// 16-bit lanes, all of one signedness.
    pub fn pair(op: VideoOp, signed: bool, relu: bool) -> VideoSimd {
        VideoSimd {
            op,
            lanes: 2,
            a_signed: signed,
            b_signed: signed,
            d_signed: signed,
            sat: false,
            add: false,
            relu,
        }
    }
}

/// Which dot product a [`Op::Dp4a`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DotForm {
    /// `dp4a`: four byte products.
    Four,
    /// `dp2a.lo` (`hi` false) or `dp2a.hi`: two 16-bit × byte products, with b's low or high
    /// byte pair.
    Two { hi: bool },
}

/// Which part of a 64-bit timer a special register reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerPart {
    /// The low 32 bits (`%clock`, `%globaltimer_lo`).
    Lo32,
    /// The high 32 bits (`%clock_hi`, `%globaltimer_hi`).
    Hi32,
    /// All 64 bits (`%clock64`, `%globaltimer`).
    Full,
}

impl TimerPart {
    /// The part of the 64-bit timer value `t` that the register reads.
    pub fn of(self, t: u64) -> u64 {
        match self {
            TimerPart::Lo32 => t & 0xFFFF_FFFF,
            TimerPart::Hi32 => t >> 32,
            TimerPart::Full => t,
        }
    }
}

/// One decoded operation. Operand slots live in `Inst::r`; their meaning per op is given in each
/// variant's comment (`d` = r[0], `a` = r[1], `b` = r[2], `c` = r[3] unless stated).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    Nop,
    /// d ← a (all 64 bits).
    Mov,
    /// d ← r[1] | r[2] << bits | … (n pieces).
    Pack {
        n: u8,
        bits: u8,
    },
    /// r[0..n] ← pieces of r[5].
    Unpack {
        n: u8,
        bits: u8,
    },
    // Width-agnostic integer ops (the low bits of the result only depend on the low bits).
    Add,
    Sub,
    MulLo,
    /// d ← a*b + c.
    MadLo,
    And,
    Or,
    Xor,
    Not,
    Neg,
    /// Predicate not (`not.pred`).
    PNot,
    CNot {
        bits: u8,
    },
    Shl {
        bits: u8,
    },
    Shr {
        ty: IntTy,
    },
    MulHi(IntTy),
    /// Source type; the result is twice as wide.
    MulWide(IntTy),
    MadHi(IntTy),
    MadWide(IntTy),
    Div(IntTy),
    Rem(IntTy),
    Min(IntTy),
    Max(IntTy),
    Abs(IntTy),
    AddSat,
    SubSat,
    /// add.cc / addc / sub.cc / subc / mad.cc / madc: `sub` subtracts, `mad` multiplies first
    /// (`hi`: high half), `cin`/`cout`: carry in/out through the CC slot r[4].
    Carry {
        bits: u8,
        sub: bool,
        mad: bool,
        hi: bool,
        cin: bool,
        cout: bool,
    },
    Popc {
        bits: u8,
    },
    Clz {
        bits: u8,
    },
    Brev {
        bits: u8,
    },
    Bfind {
        ty: IntTy,
        shiftamt: bool,
    },
    /// d ← extract(a, pos=b, len=c).
    Bfe(IntTy),
    /// d ← insert(a into b, pos=c, len=r[4]).
    Bfi {
        bits: u8,
    },
    Prmt(PrmtMode),
    /// Funnel shift of (b:a) by c.
    Shf {
        left: bool,
        wrap: bool,
    },
    /// d ← |a-b| + c.
    Sad(IntTy),
    Mul24 {
        hi: bool,
        signed: bool,
        mad: bool,
    },
    /// d ← bitwise function `lut` of (a, b, c).
    Lop3 {
        lut: u8,
    },
    /// d ← mask of b bits starting at bit a (`bmsk`), wrapping or clamping.
    Bmsk {
        wrap: bool,
    },
    /// d ← a sign- or zero-extended from bit b (`szext`).
    Szext {
        signed: bool,
        wrap: bool,
    },
    /// `fns.b32 d, mask, base, offset`: the position of the |offset|-th set bit of mask from
    /// base, upwards (offset > 0) or downwards; offset 0 tests bit base; 0xFFFFFFFF if none.
    Fns,
    /// A SIMD video instruction (`vabsdiff4`, `vadd2`, …): see [`VideoSimd`].
    Video(VideoSimd),
    /// Dot products: dp4a, d ← c + Σ a.byte[i]·b.byte[i] (i < 4), and dp2a, d ← c +
    /// Σ a.half[i]·b.byte[i + 2·hi] (i < 2), per `form`.
    Dp4a {
        form: DotForm,
        a_signed: bool,
        b_signed: bool,
    },
    // Fast IEEE round-to-nearest float ops without ftz/sat.
    FAdd32,
    FSub32,
    FMul32,
    FFma32,
    FDiv32,
    FAdd64,
    FSub64,
    FMul64,
    FFma64,
    FDiv64,
    /// Any IEEE-rounded op, any rounding, ftz and saturation. Sources a, b, c. `relu`
    /// (`fma.relu` of f16/bf16): a negative result becomes +0, a NaN the canonical NaN.
    FArith {
        op: FOp,
        ty: FTy,
        rnd: Rnd,
        ftz: bool,
        sat: bool,
        relu: bool,
    },
    FUnary {
        f: UFn,
        ty: FTy,
        ftz: bool,
    },
    FMin {
        ty: FTy,
        ftz: bool,
        nan: bool,
    },
    FMax {
        ty: FTy,
        ftz: bool,
        nan: bool,
    },
    Testp {
        t: TestP,
        ty: FTy,
    },
    /// d ← b with the sign of a.
    Copysign(FTy),
    /// d (and r[4] = !d) ← (a cmp b) bop c (c negated when `cneg`).
    SetpI {
        cmp: Cmp,
        ty: IntTy,
        bop: BoolOp,
        cneg: bool,
    },
    SetpF {
        cmp: Cmp,
        ty: FTy,
        ftz: bool,
        bop: BoolOp,
        cneg: bool,
    },
    /// `set`: like setp, result 0xFFFFFFFF/0 or 1.0f/0.0f.
    SetI {
        cmp: Cmp,
        ty: IntTy,
        bop: BoolOp,
        cneg: bool,
        dst_f32: bool,
    },
    SetF {
        cmp: Cmp,
        ty: FTy,
        ftz: bool,
        bop: BoolOp,
        cneg: bool,
        dst_f32: bool,
    },
    /// d ← c ? a : b.
    Selp,
    /// d ← (c >= 0) ? a : b, c of type s32 or f32.
    Slct {
        cf32: bool,
        ftz: bool,
    },
    CvtII {
        from: IntTy,
        to: IntTy,
        sat: bool,
    },
    CvtIF {
        from: IntTy,
        to: FTy,
        rnd: Rnd,
    },
    CvtFI {
        from: FTy,
        to: IntTy,
        irnd: IRnd,
        ftz: bool,
    },
    CvtFF {
        from: FTy,
        to: FTy,
        rnd: Rnd,
        irnd: IRnd,
        ftz: bool,
        sat: bool,
    },
    /// r[0..n] ← mem[r[4] + imm], element size `size`, sign-extended when `sext`.
    Ld {
        space: MemSpace,
        size: u8,
        n: u8,
        sext: bool,
    },
    /// mem[r[4] + imm] ← r[0..n].
    St {
        space: MemSpace,
        size: u8,
        n: u8,
    },
    /// Kernel parameter load at constant offset imm (uniform), r[0..n].
    LdK {
        size: u8,
        n: u8,
        sext: bool,
    },
    /// d ← atom(mem[a + imm], b, c); d is NONE for `red`.
    Atom {
        space: MemSpace,
        op: AtomOp,
        bits: u8,
        kind: AtomKind,
    },
    /// Generic ↔ state-space address conversion.
    Cvta {
        to: bool,
        space: MemSpace,
    },
    Isspacep(MemSpace),
    /// Jump to imm.
    Bra,
    /// Call site imm of `Program::calls`.
    Call,
    Ret,
    Exit,
    /// Barrier id a (NONE: 0), thread count b (NONE: all), predicate c for bar.red.
    Bar(BarKind),
    /// `bar.warp.sync` / `__syncwarp` with member mask r[4].
    WarpSync,
    Trap,
    /// d|r[5] ← shfl(a, b, c, mask r[4]).
    Shfl(ShflMode),
    /// d ← vote(a, negated when `neg`).
    Vote {
        mode: VoteMode,
        neg: bool,
    },
    Activemask,
    /// d|r[5] ← index of the lowest executing lane in mask r[4], and whether this is it.
    Elect,
    /// Copy `n` bytes from global r[1]+imm to shared r[0], zero-filling up to `size` bytes when
    /// a source size r[2] (NONE: all) is smaller (`cp.async`, done synchronously).
    CpAsync {
        size: u8,
    },
    MatchAny {
        bits: u8,
    },
    /// d|r[4] ← match.all(a).
    MatchAll {
        bits: u8,
    },
    Redux {
        op: ReduxOp,
        signed: bool,
    },
    /// The cycle counter: %clock, %clock_hi or %clock64.
    Clock {
        part: TimerPart,
    },
    /// The nanosecond timer: %globaltimer, %globaltimer_lo or %globaltimer_hi.
    GlobalTimer {
        part: TimerPart,
    },
    /// A warp-wide tensor-core instruction (`wmma.*`, `mma.sync`, `ldmatrix`): site imm of
    /// `Program::tensor`, which holds its operands; r[4] is the member mask (all 32 lanes).
    Tensor,
    /// d ← a (f32) rounded to tf32 (`cvt.rna/rn/rz.tf32.f32`), kept in f32 bits.
    CvtTf32(Tf32Rnd),
}

/// Rounding of `cvt.*.tf32.f32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tf32Rnd {
    /// To nearest, ties away from zero (`.rna`, `__float_to_tf32`).
    Rna,
    /// To nearest, ties to even.
    Rn,
    /// Towards zero.
    Rz,
}

/// Element type of a tensor-core fragment or of the matrix in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TElem {
    F16,
    BF16,
    /// tf32 multiplicands: f32 in memory and in registers, the low 13 mantissa bits ignored.
    Tf32,
    F32,
}

impl TElem {
    /// Bytes of one element in memory.
    pub fn bytes(self) -> u64 {
        match self {
            TElem::F16 | TElem::BF16 => 2,
            TElem::Tf32 | TElem::F32 => 4,
        }
    }
}

/// Which matrix of `D = A * B + C` a fragment holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frag {
    A,
    B,
    /// C or D (the accumulator).
    C,
}

/// What a tensor-core site does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorKind {
    /// `wmma.load.{a,b,c}`: `d` ← the fragment of the matrix at `addr` (`row`: row-major).
    Load { frag: Frag, row: bool },
    /// `wmma.store.d`: the matrix at `addr` ← fragment `a`.
    Store { row: bool },
    /// `wmma.mma` (`a_row`, `b_row`: the layouts the fragments were loaded with) and
    /// `mma.sync` (always row.col): `d` ← `a` * `b` + `c`.
    Mma { a_row: bool, b_row: bool },
    /// `ldmatrix.sync.aligned.m8n8.x{num}[.trans].b16`: `d` ← `num` 8x8 matrices whose row
    /// addresses lanes 0..8*num give in `addr`.
    Ldmatrix { num: u8, trans: bool },
}

/// One tensor-core instruction's operands (`Op::Tensor`; too many for `Inst::r`).
#[derive(Debug, Clone, PartialEq)]
pub struct TensorSite {
    pub kind: TensorKind,
    /// The instruction's mnemonic, for messages.
    pub name: String,
    /// Shape M, N, K.
    pub shape: (u8, u8, u8),
    /// Whether it is `mma.sync` (documented fragment layouts of one m16n8kK tile) rather than
    /// `wmma` (the fragments of an MxNxK tile, `exec::tensor` documents their layout).
    pub mma: bool,
    /// Element types of A, B, C and D (loads and stores: the one fragment's in all four).
    pub ty: [TElem; 4],
    /// Destination registers (loads, mma, ldmatrix) in fragment order.
    pub d: Vec<Slot>,
    /// Source fragments (store: `a` is the fragment stored).
    pub a: Vec<Slot>,
    pub b: Vec<Slot>,
    pub c: Vec<Slot>,
    /// Address register, offset and state space (loads, stores, ldmatrix).
    pub addr: Slot,
    pub imm: i64,
    pub space: MemSpace,
    /// Stride in elements (`NONE`: the matrix's own width, as the PTX ISA defaults it).
    pub stride: Slot,
}

/// Rows and columns of matrix `f` of an MxNxK product.
pub fn dims(f: Frag, (m, n, k): (u8, u8, u8)) -> (usize, usize) {
    match f {
        Frag::A => (m as usize, k as usize),
        Frag::B => (k as usize, n as usize),
        Frag::C => (m as usize, n as usize),
    }
}

/// Registers of a fragment: wmma's f16 multiplicands take eight `.f16x2` registers whatever
/// the shape (each element held twice or more, a legacy of Volta); every other fragment holds
/// each of its matrix's elements once (two 16-bit elements per register).
pub fn frag_regs(f: Frag, ty: TElem, shape: (u8, u8, u8), mma: bool) -> usize {
    let (r, c) = dims(f, shape);
    let per_reg = if ty.bytes() == 2 { 2 } else { 1 };
    if !mma && f != Frag::C && ty == TElem::F16 {
        return 8;
    }
    r * c / 32 / per_reg
}

impl TensorSite {
    /// Slots the site reads.
    pub fn reads(&self) -> Vec<Slot> {
        let mut v: Vec<Slot> = self
            .a
            .iter()
            .chain(&self.b)
            .chain(&self.c)
            .copied()
            .collect();
        v.extend([self.addr, self.stride]);
        v.retain(|&s| s != NONE);
        v
    }
}

/// One pre-decoded instruction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Inst {
    pub op: Op,
    /// Guard predicate slot, or `NONE`.
    pub guard: Slot,
    pub guard_neg: bool,
    pub r: [Slot; 6],
    /// Address offset, branch target or call-site index.
    pub imm: i64,
    /// Index into `Program::locs` (0: no line information).
    pub loc: u32,
}

/// A CUDA source position: file index into `Program::files`, line, column, and for a line of an
/// inlined function, where it was called from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Loc {
    pub file: u32,
    pub line: u32,
    pub column: u32,
    /// Index into `Program::locs` of the call site this line was inlined at (0: none). Always
    /// smaller than the loc's own index, so following it ends.
    pub inlined_at: u32,
}

/// What a call site calls.
#[derive(Debug, Clone, PartialEq)]
pub enum Callee {
    /// A device function of this program (index into `Program::funcs`).
    Func(usize),
    /// `vprintf(format, args)`.
    Vprintf,
    /// `__assertfail(message, file, line, function, charSize)`.
    AssertFail,
    /// Through a function pointer held in this slot.
    Indirect(Slot),
}

/// One `call` instruction: where its arguments and results live in the caller's local memory.
#[derive(Debug, Clone, PartialEq)]
pub struct CallSite {
    pub callee: Callee,
    /// (caller local offset, size) of each argument.
    pub args: Vec<(u32, u32)>,
    /// (caller local offset, size) of each return value.
    pub rets: Vec<(u32, u32)>,
}

/// A device function's place in the program.
#[derive(Debug, Clone, PartialEq)]
pub struct FuncInfo {
    pub name: String,
    pub entry_pc: u32,
    /// Register slots [lo, hi) and local bytes [lo, hi) owned by this function (saved across a
    /// recursive call).
    pub regs: (u32, u32),
    pub local: (u32, u32),
    /// (local offset, size) of each formal parameter and return value.
    pub params: Vec<(u32, u32)>,
    pub rets: Vec<(u32, u32)>,
    /// Whether the function can call itself (directly or not): its window is saved per call.
    pub recursive: bool,
}

/// A lowered `.entry` with everything it calls.
#[derive(Debug, Clone)]
pub struct Program {
    pub name: String,
    pub code: Vec<Inst>,
    pub nslots: u32,
    /// Constant slots and their values.
    pub consts: Vec<(Slot, u64)>,
    /// Special-register slots.
    pub sregs: Vec<(Slot, SReg)>,
    pub local_bytes: u32,
    pub static_shared: u32,
    /// The kernel reads the grid workspace of a cooperative launch (`%envreg1`/`%envreg2`).
    pub reads_grid_workspace: bool,
    /// Alignment of the dynamic shared area (placed after the static one).
    pub dyn_shared_align: u32,
    pub params: Vec<ParamInfo>,
    pub param_bytes: usize,
    pub calls: Vec<CallSite>,
    /// Operands of the tensor-core instructions (`Op::Tensor`).
    pub tensor: Vec<TensorSite>,
    pub funcs: Vec<FuncInfo>,
    /// Module function index → index in `funcs`, for calls through function pointers.
    pub by_module_fn: Vec<Option<u32>>,
    pub locs: Vec<Loc>,
    pub declared_regs: usize,
    pub max_threads: Option<u32>,
    /// `.reqntid`: the block shape every launch must use.
    pub reqntid: Option<(u32, u32, u32)>,
    /// Whether any instruction is a block-wide barrier (`bar`/`barrier`).
    pub has_barriers: bool,
    /// Slots other than constants and special registers that some path may read before
    /// writing (`ir::live::entry_live`): the only ones a launch must clear, so that register files
    /// can be reused from launch to launch without a difference anyone could see.
    pub entry_live: Vec<Slot>,
    /// Different for every lowered program (a key for reusing register files).
    pub uid: u64,
    /// Whether its blocks may run in the block tier (`exec::block::plan`, set on loading).
    pub block_tier: bool,
    /// How the block tier keeps each slot (empty unless `block_tier`).
    pub block_slots: Vec<BlockSlot>,
}

/// How the block tier keeps a register slot for a block's threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "accel"), allow(dead_code))]
pub enum BlockSlot {
    /// One value per thread.
    Lanes,
    /// One value for the whole block: block-uniform (`ir::uniform`), and only written by
    /// instructions that every live thread runs together.
    Uniform,
    /// One bit per thread: a predicate written only by comparisons and read only as a guard.
    Pred,
    /// Never read (a shuffle's unused in-range predicate, a dead result): computing it is
    /// skipped where nothing else depends on the instruction.
    Unread,
    /// `base + stride * thread` (wrapping), with `base` and `stride` held once for the block:
    /// `%tid.x` and the index and address arithmetic on it (`exec::block::affine`). `local`:
    /// every read of it follows its one writer in the same basic block, so the writer may set
    /// it for all threads whichever of them run it; otherwise the writer runs for every live
    /// thread together, as a `Uniform` slot's does.
    Affine { local: bool },
}

impl Op {
    /// Warp-collective operations: they wait for the lanes of their member mask (slot r[4]).
    pub fn is_collective(&self) -> bool {
        matches!(
            self,
            Op::Shfl(_)
                | Op::Vote { .. }
                | Op::MatchAny { .. }
                | Op::MatchAll { .. }
                | Op::Redux { .. }
                | Op::Elect
                | Op::WarpSync
                | Op::Tensor
        )
    }
}

impl Program {
    /// Whether the warps of one block can run on different workers: nothing in the program lets
    /// one warp of a block wait for or see another (no barriers, no shared memory, given a
    /// launch without dynamic shared memory) and no `printf` whose order across warps would
    /// change.
    pub fn warps_independent(&self) -> bool {
        self.static_shared == 0
            && !self.has_barriers
            && !self.calls.iter().any(|c| c.callee == Callee::Vprintf)
    }

    /// Byte offset of the dynamic shared memory in the block's shared memory.
    pub fn dyn_shared_offset(&self) -> u32 {
        let a = self.dyn_shared_align.max(16);
        self.static_shared.div_ceil(a) * a
    }
}
