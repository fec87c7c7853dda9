//! The shared-memory race detector's shadow memory.
//!
//! For every shared byte it remembers the last writer and the last reader(s) with the barrier
//! epoch (bumped at every block-wide barrier) and the writer's warp-sync epoch (bumped at every
//! `bar.warp.sync`). An access by another thread of a byte written (or, for a write, read) in the
//! same epoch, not ordered by a barrier or, within one warp, by `__syncwarp`, is a race. Atomic
//! updates are writer records of their own: they race with plain writes of other threads, not
//! with each other nor with reads (`visit_atomic`). It only runs when the launch's checker is on. It produces conflict facts; the interpreter turns them
//! into reports.

/// Reader ids: several threads of different warps, or of one warp (low bits: the warp).
const MULTI_WARP: u16 = 0xFFFF;
const MULTI_IN_WARP: u16 = 0x8000;
/// Writer ids of atomic updates: one thread (low bits), or several threads.
const ATOMIC: u16 = 0x4000;
const MULTI_ATOMIC: u16 = 0x7FFF;

/// One access record, packed in a u64 so that runs of equal records compare fast:
/// barrier epoch (bits 32..64), warp-sync epoch (16..32), thread or reader set (0..16).
/// (`repr(transparent)`: compiled code reads and writes the records as u64s, see `raw`.)
#[derive(Clone, Copy, Default, PartialEq, Eq)]
#[repr(transparent)]
struct Rec(u64);

impl Rec {
    #[inline(always)]
    fn new(epoch: u32, wepoch: u16, tid: u16) -> Rec {
        Rec((epoch as u64) << 32 | (wepoch as u64) << 16 | tid as u64)
    }
    #[inline(always)]
    fn epoch(self) -> u32 {
        (self.0 >> 32) as u32
    }
    #[inline(always)]
    fn wepoch(self) -> u16 {
        (self.0 >> 16) as u16
    }
    #[inline(always)]
    fn tid(self) -> u16 {
        self.0 as u16
    }
}

/// What an access conflicts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conflict {
    /// The other access was a write (or, with `other_atomic`, an atomic update).
    pub other_write: bool,
    pub other_atomic: bool,
    /// The other thread (linear index in the block), or None for several readers.
    pub other: Option<u32>,
    /// Byte offset where the conflict was found.
    pub offset: u32,
}

/// Whether an earlier record conflicts with an access by thread `tid` (warp-sync epoch `wep`)
/// in barrier epoch `epoch`.
#[inline(always)]
fn conflict(epoch: u32, rec: Rec, tid: u32, wep: u16) -> bool {
    if rec.epoch() != epoch {
        return false;
    }
    let warp = tid / 32;
    let single = |t: u32| t != tid && (t / 32 != warp || rec.wepoch() == wep);
    match rec.tid() {
        MULTI_WARP | MULTI_ATOMIC => true,
        t if t & MULTI_IN_WARP != 0 => (t & !MULTI_IN_WARP) as u32 != warp || rec.wepoch() == wep,
        t if t & ATOMIC != 0 => single((t & !ATOMIC) as u32),
        t => single(t as u32),
    }
}

/// Whether writer record `w` is of atomic updates.
#[inline(always)]
fn is_atomic(w: Rec) -> bool {
    w.tid() & ATOMIC != 0 && w.tid() & MULTI_IN_WARP == 0
}

/// The conflict of an access with writer record `w`.
#[inline(always)]
fn with_writer(w: Rec, offset: usize) -> Conflict {
    let t = w.tid();
    Conflict {
        other_write: true,
        other_atomic: is_atomic(w),
        other: match t {
            MULTI_ATOMIC => None,
            t => Some((t & !ATOMIC) as u32),
        },
        offset: offset as u32,
    }
}

/// The conflict of an access with reader record `r`.
#[inline(always)]
fn with_readers(r: Rec, offset: usize) -> Conflict {
    Conflict {
        other_write: false,
        other_atomic: false,
        other: (r.tid() & MULTI_IN_WARP == 0).then_some(r.tid() as u32),
        offset: offset as u32,
    }
}

/// `visit` for an atomic update: it conflicts with plain writes of other threads in the epoch,
/// not with other atomic updates, and not with plain reads (the compare-and-swap loop reads the
/// word other threads update atomically, and checks what it read with the swap). A plain write
/// of the epoch stays the writer record (so that every later atomic update or access of
/// another thread still races with it); otherwise the record becomes this thread's atomic
/// update, or several threads'.
#[inline(always)]
fn visit_atomic(wrec: &mut Rec, epoch: u32, tid: u32, wep: u16, offset: usize) -> Option<Conflict> {
    if wrec.epoch() == epoch && !is_atomic(*wrec) {
        return conflict(epoch, *wrec, tid, wep).then(|| with_writer(*wrec, offset));
    }
    let me = ATOMIC | tid as u16;
    let id = if wrec.epoch() == epoch && wrec.tid() != me {
        MULTI_ATOMIC
    } else {
        me
    };
    *wrec = Rec::new(epoch, wep, id);
    None
}

/// The reader record after thread `tid` reads a byte whose reader record was `rd`.
#[inline(always)]
fn add_reader(rd: Rec, epoch: u32, tid: u32, wep: u16) -> Rec {
    let warp = tid / 32;
    let id = if rd.epoch() != epoch {
        tid as u16
    } else {
        match rd.tid() {
            MULTI_WARP => MULTI_WARP,
            t if t & MULTI_IN_WARP != 0 => {
                if (t & !MULTI_IN_WARP) as u32 == warp {
                    t
                } else {
                    MULTI_WARP
                }
            }
            t if t as u32 == tid => t,
            t if t as u32 / 32 == warp => MULTI_IN_WARP | warp as u16,
            _ => MULTI_WARP,
        }
    };
    Rec::new(epoch, wep, id)
}

/// `f` for each lane of `m` in lane order; the first conflict and the lane that met it.
#[inline(always)]
fn first_in_lanes(
    m: u32,
    mut f: impl FnMut(usize) -> Option<Conflict>,
) -> Option<(usize, Conflict)> {
    let mut first = None;
    let mut mm = m;
    while mm != 0 {
        let l = mm.trailing_zeros() as usize;
        mm &= mm - 1;
        if let (None, Some(c)) = (&first, f(l)) {
            first = Some((l, c));
        }
    }
    first
}

/// What an access does to the records (`Shadow::touch`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Write,
    Atomic,
}

/// Shadow state of a block's shared memory: one writer and one reader record per 4-byte word,
/// and per byte for words that were accessed by sub-word accesses (byte mode).
pub struct Shadow {
    w: Vec<Rec>,
    r: Vec<Rec>,
    byte_mode: Vec<bool>,
    /// Whether any word of `byte_mode` is set (so that a block start clears nothing when none
    /// is).
    any_byte_mode: bool,
    bw: Vec<Rec>,
    br: Vec<Rec>,
    /// The epoch `log` and `wrote` are about.
    log_epoch: u32,
    /// Whether any thread wrote shared memory in `log_epoch`.
    wrote: bool,
    /// Warp reads of `log_epoch` made before its first write: they cannot conflict yet, so
    /// they are only recorded, and replayed into the reader records at the first write.
    log: Vec<Logged>,
    /// Reads that compiled code logged in `log_epoch` before its first write (see
    /// `compiled_log`), `clog_len` of them, each `count` accesses of `2^w` words, `stride`
    /// words apart: byte offset (bits 0..18) | count - 1 << 18 | stride << 24 | w << 34 |
    /// thread << 36 | warp-sync epoch << 48. Allocated on first use, `CLOG_CAP` entries.
    clog: Vec<u64>,
    clog_len: usize,
}

/// Entries of the compiled code's read log.
#[cfg_attr(not(feature = "accel"), allow(dead_code))]
const CLOG_CAP: usize = 1 << 14;

/// Longest read log kept before switching the epoch to eager tracking.
const MAX_LOG: usize = 4096;

/// One logged warp read.
struct Logged {
    /// How many compiled reads were logged before this one (replay keeps the order).
    clog_at: u32,
    offs: [u32; 32],
    m: u32,
    size: u32,
    warp: u32,
    wep: u32,
}

/// Check one record pair for an access and update it; returns a conflict if any.
#[inline(always)]
fn visit(
    wrec: &mut Rec,
    rrec: &mut Rec,
    epoch: u32,
    tid: u32,
    wep: u16,
    write: bool,
    offset: usize,
) -> Option<Conflict> {
    if wrec.epoch() != epoch {
        // No write of this word in this epoch: a read conflicts with nothing and only joins
        // the readers; a write conflicts with nothing if nobody read it either (the common
        // case, kept short).
        if !write {
            *rrec = add_reader(*rrec, epoch, tid, wep);
            return None;
        }
        if rrec.epoch() != epoch {
            *wrec = Rec::new(epoch, wep, tid as u16);
            return None;
        }
    }
    let mut found = None;
    // A read does not conflict with atomic updates (see `visit_atomic`); a write does.
    if conflict(epoch, *wrec, tid, wep) && (write || !is_atomic(*wrec)) {
        found = Some(with_writer(*wrec, offset));
    }
    if write {
        if found.is_none() && conflict(epoch, *rrec, tid, wep) {
            found = Some(with_readers(*rrec, offset));
        }
        *wrec = Rec::new(epoch, wep, tid as u16);
    } else {
        let n = add_reader(*rrec, epoch, tid, wep);
        if n != *rrec {
            *rrec = n;
        }
    }
    found
}

impl Shadow {
    pub fn new(bytes: usize) -> Shadow {
        let words = bytes.div_ceil(4);
        Shadow {
            w: vec![Rec::default(); words],
            r: vec![Rec::default(); words],
            byte_mode: vec![false; words],
            any_byte_mode: false,
            bw: vec![Rec::default(); words * 4],
            br: vec![Rec::default(); words * 4],
            log_epoch: 0,
            wrote: false,
            log: Vec::new(),
            clog: Vec::new(),
            clog_len: 0,
        }
    }

    /// Forget byte-mode words (records of earlier blocks never conflict: epochs only grow).
    pub fn begin_block(&mut self) {
        if self.any_byte_mode {
            self.byte_mode.fill(false);
            self.any_byte_mode = false;
        }
    }

    fn enter_byte_mode(&mut self, word: usize) {
        if !self.byte_mode[word] {
            self.byte_mode[word] = true;
            self.any_byte_mode = true;
            let (w, r) = (self.w[word], self.r[word]);
            self.bw[word * 4..word * 4 + 4].fill(w);
            self.br[word * 4..word * 4 + 4].fill(r);
        }
    }

    /// Make epoch `epoch` eager: replay the reads logged in it into the reader records, so
    /// that the records hold every access of the epoch so far (before accesses that bypass the
    /// log: `access`, `atomic` and compiled code).
    #[inline(always)]
    pub fn go_eager(&mut self, epoch: u32) {
        if epoch != self.log_epoch || !self.wrote {
            self.replay_logs(epoch);
        }
    }

    /// `go_eager` when the epoch may still have logs.
    #[cold]
    fn replay_logs(&mut self, epoch: u32) {
        self.begin_epoch(epoch);
        if self.wrote {
            return;
        }
        self.wrote = true;
        // Both logs, in the order the reads were made. Reads before any write of the epoch
        // never conflict.
        let clog = std::mem::take(&mut self.clog);
        let mut c = 0;
        let mut replay_clog = |sh: &mut Shadow, to: usize| {
            while c < to {
                let e = clog[c];
                let off = (e & 0x3_FFFF) as usize;
                let count = (e >> 18 & 0x3F) as usize + 1;
                let stride = 4 * (e >> 24 & 0x3FF) as usize;
                let bytes = 4 << (e >> 34 & 3);
                let (tid, wep) = ((e >> 36 & 0x3FF) as u32, (e >> 48) as u32);
                for j in 0..count {
                    sh.access(off + j * stride, bytes, tid, wep, epoch, false);
                }
                c += 1;
            }
        };
        for e in std::mem::take(&mut self.log) {
            replay_clog(self, (e.clog_at as usize).min(self.clog_len));
            let offs: [usize; 32] = e.offs.map(|x| x as usize);
            self.eager(&offs, e.m, e.size as usize, e.warp, e.wep, epoch, false);
        }
        replay_clog(self, self.clog_len);
        self.clog = clog;
        self.clog_len = 0;
    }

    /// Start epoch `epoch` if it is not the one the logs are about.
    fn begin_epoch(&mut self, epoch: u32) {
        if epoch != self.log_epoch {
            self.log_epoch = epoch;
            self.wrote = false;
            self.log.clear();
            self.clog_len = 0;
        }
    }

    /// For compiled code in epoch `epoch`: while nobody wrote shared memory in it, the read
    /// log to append to (its entries, the number used and the capacity; see `clog`), which
    /// the caller gives back with `compiled_log_used`. Otherwise (or when the log is 7/8 full,
    /// so that one call of compiled code seldom meets a full log, where each lane leaves to the
    /// interpreter) `None`, and the epoch is eager (`go_eager`).
    #[cfg_attr(not(feature = "accel"), allow(dead_code))]
    pub fn compiled_log(&mut self, epoch: u32) -> Option<(*mut u64, usize, usize)> {
        self.begin_epoch(epoch);
        if self.wrote || self.clog_len >= CLOG_CAP - CLOG_CAP / 8 {
            self.go_eager(epoch);
            return None;
        }
        if self.clog.is_empty() {
            self.clog = vec![0; CLOG_CAP];
        }
        Some((self.clog.as_mut_ptr(), self.clog_len, CLOG_CAP))
    }

    /// How many entries of the compiled read log are used now (at most its capacity).
    #[cfg_attr(not(feature = "accel"), allow(dead_code))]
    pub fn compiled_log_used(&mut self, n: usize) {
        // Compiled code never appends past the capacity (it leaves to the interpreter first);
        // a count past it would be a simulator bug (turned into an internal-error report).
        assert!(
            n <= self.clog.len(),
            "compiled read log overrun: {n} entries"
        );
        self.clog_len = n;
    }

    /// The writer records, the reader records (one u64 each per 4-byte word: barrier epoch
    /// in bits 32..64, warp-sync epoch in 16..32, thread or reader set in 0..16, see `Rec`)
    /// and the byte-mode flags (one byte per word, nonzero: the word has per-byte records and
    /// its word records are stale), for compiled code, which handles word accesses whose
    /// records show no possible conflict and leaves every other access to `access`. Valid
    /// while the shadow lives (the vectors never grow); `words` entries each.
    #[cfg_attr(not(feature = "accel"), allow(dead_code))]
    pub fn raw(&mut self) -> (*mut u64, *mut u64, *const u8, usize) {
        (
            self.w.as_mut_ptr() as *mut u64,
            self.r.as_mut_ptr() as *mut u64,
            self.byte_mode.as_ptr() as *const u8,
            self.w.len(),
        )
    }

    /// Record the atomic updates of the active lanes `m` of warp `warp` (offsets `offs`, `size`
    /// bytes each, in lane order) and return the first conflict with the lane that met it.
    pub fn atomic_warp(
        &mut self,
        offs: &[usize; 32],
        m: u32,
        size: usize,
        warp: u32,
        wep: u32,
        epoch: u32,
    ) -> Option<(usize, Conflict)> {
        first_in_lanes(m, |l| {
            self.atomic(offs[l], size, warp * 32 + l as u32, wep, epoch)
        })
    }

    /// Record the accesses of the active lanes `m` of warp `warp` (offsets `offs`, `size`
    /// bytes each) and return the first conflict with the lane that met it.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn access_warp(
        &mut self,
        offs: &[usize; 32],
        m: u32,
        size: usize,
        warp: u32,
        wep: u32,
        epoch: u32,
        write: bool,
    ) -> Option<(usize, Conflict)> {
        self.begin_epoch(epoch);
        if !self.wrote {
            // Before anything is logged, a run of reads goes straight into the records (as it
            // would at the replay, in the same order): an epoch that reads, then writes
            // (`sdata[tid] += sdata[tid + s]`) then has nothing to replay.
            if !write
                && size == 4
                && self.log.is_empty()
                && self.clog_len == 0
                && self.eager_run(offs, m, warp, wep, epoch, false)
            {
                return None;
            }
            if !write && self.log.len() < MAX_LOG {
                let mut o = [0u32; 32];
                for (d, &s) in o.iter_mut().zip(offs) {
                    *d = s as u32;
                }
                self.log.push(Logged {
                    clog_at: self.clog_len as u32,
                    offs: o,
                    m,
                    size: size as u32,
                    warp,
                    wep,
                });
                return None;
            }
            // A write (or a long read-only epoch): replay the reads and go eager.
            self.go_eager(epoch);
        }
        self.eager(offs, m, size, warp, wep, epoch, write)
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn eager(
        &mut self,
        offs: &[usize; 32],
        m: u32,
        size: usize,
        warp: u32,
        wep: u32,
        epoch: u32,
        write: bool,
    ) -> Option<(usize, Conflict)> {
        if size == 4 && self.eager_run(offs, m, warp, wep, epoch, write) {
            return None;
        }
        self.eager_lanes(offs, m, size, warp, wep, epoch, write)
    }

    /// `eager` for 4-byte accesses of consecutive words (lane l at word w0 + l, as in
    /// `sdata[tid]`) that no other thread touched in the epoch: the records are updated as the
    /// lane-by-lane loop would, by branch-free loops over the words. False, with nothing
    /// changed, for any other access.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn eager_run(
        &mut self,
        offs: &[usize; 32],
        m: u32,
        warp: u32,
        wep: u32,
        epoch: u32,
        write: bool,
    ) -> bool {
        if m == 0 {
            return true;
        }
        let l0 = m.trailing_zeros() as usize;
        let base = offs[l0].wrapping_sub(4 * l0);
        let mut apart = 0u32;
        for (l, &o) in offs.iter().enumerate() {
            apart |= ((o != base.wrapping_add(4 * l)) as u32) << l;
        }
        if apart & m != 0 || !base.is_multiple_of(4) {
            return false;
        }
        let hi = 32 - m.leading_zeros() as usize;
        let (lo_w, hi_w) = (base / 4 + l0, base / 4 + hi);
        if hi_w > self.w.len() || self.byte_mode[lo_w..hi_w].iter().any(|&b| b) {
            return false;
        }
        let (wr, rr) = (&mut self.w[lo_w..hi_w], &mut self.r[lo_w..hi_w]);
        let mk = m >> l0;
        let ep = epoch as u64;
        let first_tid = (warp * 32) as u64 + l0 as u64;
        // Lanes whose word has no record of another thread in this epoch.
        let mut own = 0u32;
        for (k, (w, r)) in wr.iter().zip(rr.iter()).enumerate() {
            let tid = first_tid + k as u64;
            let w_own = (w.0 >> 32) != ep || (w.0 & 0xFFFF) == tid;
            let r_own = (r.0 >> 32) != ep || (r.0 & 0xFFFF) == tid;
            own |= ((w_own & r_own) as u32) << k;
        }
        if own & mk != mk {
            return false;
        }
        let recs = if write { wr } else { rr };
        let stamp = ep << 32 | (wep as u16 as u64) << 16;
        for (k, rec) in recs.iter_mut().enumerate() {
            if (mk >> k) & 1 != 0 {
                *rec = Rec(stamp | (first_tid + k as u64));
            }
        }
        true
    }

    /// `eager`, lane by lane.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn eager_lanes(
        &mut self,
        offs: &[usize; 32],
        m: u32,
        size: usize,
        warp: u32,
        wep: u32,
        epoch: u32,
        write: bool,
    ) -> Option<(usize, Conflict)> {
        // The loop written out: through `first_in_lanes` (a closure) the block-tree reduction
        // took 10% more host instructions (callgrind, 63.8M against 70.1M).
        let mut first = None;
        let mut mm = m;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            let tid = warp * 32 + l as u32;
            let c = if size == 4 {
                self.access_word(offs[l], tid, wep, epoch, write)
            } else {
                self.access(offs[l], size, tid, wep, epoch, write)
            };
            if let (None, Some(c)) = (&first, c) {
                first = Some((l, c));
            }
        }
        first
    }

    /// `access` for an aligned 4-byte word (the common case, kept small enough to inline).
    #[inline(always)]
    pub fn access_word(
        &mut self,
        off: usize,
        tid: u32,
        wep: u32,
        epoch: u32,
        write: bool,
    ) -> Option<Conflict> {
        let word = off / 4;
        match (
            self.w.get_mut(word),
            self.r.get_mut(word),
            self.byte_mode.get(word),
        ) {
            (Some(w), Some(r), Some(false)) => visit(w, r, epoch, tid, wep as u16, write, off),
            _ => self.access(off, 4, tid, wep, epoch, write),
        }
    }

    /// Record an access of `size` bytes at `off` by thread `tid` and report the first conflict
    /// (the epoch's logged reads are replayed into the records first: `go_eager`).
    #[inline(never)]
    pub fn access(
        &mut self,
        off: usize,
        size: usize,
        tid: u32,
        wep: u32,
        epoch: u32,
        write: bool,
    ) -> Option<Conflict> {
        self.go_eager(epoch);
        let kind = if write { Kind::Write } else { Kind::Read };
        self.touch(off, size, tid, wep, epoch, kind)
    }

    /// Record an atomic update of `size` bytes at `off` by thread `tid` (after `go_eager`, as
    /// `access`) and report the first conflict with a plain access (`visit_atomic`).
    #[inline(always)]
    pub fn atomic(
        &mut self,
        off: usize,
        size: usize,
        tid: u32,
        wep: u32,
        epoch: u32,
    ) -> Option<Conflict> {
        self.go_eager(epoch);
        let word = off / 4;
        // An aligned word in word mode (the common case) directly.
        match (self.w.get_mut(word), self.byte_mode.get(word)) {
            (Some(w), Some(false)) if size == 4 && off.is_multiple_of(4) => {
                visit_atomic(w, epoch, tid, wep as u16, off)
            }
            _ => self.touch(off, size, tid, wep, epoch, Kind::Atomic),
        }
    }

    /// `access` or `atomic`, a word or byte at a time.
    #[inline]
    fn touch(
        &mut self,
        off: usize,
        size: usize,
        tid: u32,
        wep: u32,
        epoch: u32,
        kind: Kind,
    ) -> Option<Conflict> {
        let visit = |w: &mut Rec, r: &mut Rec, wep: u16, b: usize| match kind {
            Kind::Atomic => visit_atomic(w, epoch, tid, wep, b),
            _ => visit(w, r, epoch, tid, wep, kind == Kind::Write, b),
        };
        let wep = wep as u16;
        let end = (off + size).min(self.w.len() * 4);
        let mut found = None;
        let mut b = off;
        while b < end {
            let word = b / 4;
            let aligned_word = b.is_multiple_of(4) && end - b >= 4;
            if aligned_word && !self.byte_mode[word] {
                let c = visit(&mut self.w[word], &mut self.r[word], wep, b);
                found = found.or(c);
                b += 4;
                continue;
            }
            self.enter_byte_mode(word);
            let c = visit(&mut self.bw[b], &mut self.br[b], wep, b);
            found = found.or(c);
            b += 1;
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_cross_warp_and_unsynchronised_intra_warp_races() {
        let mut s = Shadow::new(64);
        assert_eq!(s.access(0, 4, 0, 0, 1, true), None);
        // Same thread again: fine.
        assert_eq!(s.access(0, 4, 0, 0, 1, false), None);
        // Thread 40 (another warp) reads it in the same epoch: race with the write.
        let c = s.access(0, 4, 40, 0, 1, false).unwrap();
        assert!(c.other_write);
        assert_eq!(c.other, Some(0));
        // After a barrier (epoch 2) everything is ordered.
        assert_eq!(s.access(0, 4, 40, 0, 2, true), None);
        // Two readers then a write by a third thread: write-after-read race.
        assert_eq!(s.access(8, 4, 1, 0, 3, false), None);
        assert_eq!(s.access(8, 4, 2, 0, 3, false), None);
        let c = s.access(8, 4, 3, 0, 3, true).unwrap();
        assert!(!c.other_write);
        assert_eq!(c.other, None);
        // Same warp separated by __syncwarp (warp epoch differs): no race.
        assert_eq!(s.access(16, 4, 1, 5, 4, true), None);
        assert_eq!(s.access(16, 4, 2, 6, 4, false), None);
        // Same warp, same warp epoch: race.
        assert!(s.access(20, 4, 1, 5, 4, true).is_none());
        assert!(s.access(20, 4, 2, 5, 4, false).is_some());
        // Two readers of one warp, then __syncwarp, then a write by a third lane: ordered.
        assert!(s.access(24, 4, 3, 7, 4, false).is_none());
        assert!(s.access(24, 4, 4, 7, 4, false).is_none());
        assert!(s.access(24, 4, 5, 8, 4, true).is_none());
        // ... but without the __syncwarp it races, and a write from another warp races too.
        assert!(s.access(28, 4, 3, 7, 4, false).is_none());
        assert!(s.access(28, 4, 4, 7, 4, false).is_none());
        assert!(s.access(28, 4, 5, 7, 4, true).is_some());
        assert!(s.access(32, 4, 3, 7, 4, false).is_none());
        assert!(s.access(32, 4, 4, 7, 4, false).is_none());
        assert!(s.access(32, 4, 70, 0, 4, true).is_some());
    }

    /// One warp access of `random_warp_accesses`.
    struct WarpAccess {
        epoch: u32,
        warp: u32,
        wep: u32,
        write: bool,
        size: usize,
        m: u32,
        offs: [usize; 32],
    }

    /// Random warp accesses of a 512-byte shared memory: runs, gaps, shared words, sub-word
    /// sizes, reads and writes of several warps, warp-sync epochs, 40 per barrier epoch.
    fn random_warp_accesses(n: u32) -> Vec<WarpAccess> {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        (0..n)
            .map(|step| {
                let (warp, wep, write) = (next(4) as u32, next(2) as u32, next(3) == 0);
                let size = if next(10) == 0 { 1 << next(3) } else { 4 };
                let m = match next(4) {
                    0 => u32::MAX,
                    1 => (1u32 << next(32)).wrapping_sub(1).max(1),
                    2 => next(1 << 32) as u32,
                    _ => 1 << next(32),
                };
                let start = 4 * next(96) as usize;
                let offs: [usize; 32] = std::array::from_fn(|l| match next(16) {
                    0 => 4 * next(128) as usize,
                    1 => start + 4 * l + 1,
                    _ => start + 4 * l,
                });
                WarpAccess {
                    epoch: 1 + step / 40,
                    warp,
                    wep,
                    write,
                    size,
                    m,
                    offs: offs.map(|o| o & !(size.min(4) - 1)),
                }
            })
            .collect()
    }

    /// The run path of `eager` leaves the records and findings of the lane-by-lane path.
    #[test]
    fn warp_runs_match_lane_by_lane_checking() {
        let (mut fast, mut slow) = (Shadow::new(512), Shadow::new(512));
        let (mut runs, mut found) = (0, 0);
        for (step, a) in random_warp_accesses(20_000).iter().enumerate() {
            let (offs, m, size) = (&a.offs, a.m, a.size);
            let x = fast.eager(offs, m, size, a.warp, a.wep, a.epoch, a.write);
            let y = slow.eager_lanes(offs, m, size, a.warp, a.wep, a.epoch, a.write);
            assert_eq!(x, y, "step {step}");
            assert!(
                fast.w == slow.w && fast.r == slow.r,
                "records differ at step {step}"
            );
            assert!(fast.bw == slow.bw && fast.br == slow.br && fast.byte_mode == slow.byte_mode);
            runs += (size == 4 && m != 0 && x.is_none()) as u32;
            found += x.is_some() as u32;
        }
        assert!(
            runs > 1000 && found > 1000,
            "runs {runs}, conflicts {found}"
        );
    }

    /// Reads logged until an epoch's first write (or taken straight into the records while
    /// nothing is logged) give the findings of checking every access at once, and the same
    /// records once replayed.
    #[test]
    fn logged_reads_find_what_eager_checking_finds() {
        let (mut logged, mut eager) = (Shadow::new(512), Shadow::new(512));
        let (mut epoch, mut found) = (0, 0);
        for (step, a) in random_warp_accesses(20_000).iter().enumerate() {
            if a.epoch != epoch {
                logged.go_eager(epoch);
                assert!(logged.w == eager.w && logged.r == eager.r, "epoch {epoch}");
                assert!(logged.bw == eager.bw && logged.br == eager.br);
                epoch = a.epoch;
            }
            let (offs, m, size) = (&a.offs, a.m, a.size);
            let x = logged.access_warp(offs, m, size, a.warp, a.wep, a.epoch, a.write);
            eager.go_eager(a.epoch);
            let y = eager.eager_lanes(offs, m, size, a.warp, a.wep, a.epoch, a.write);
            assert_eq!(x, y, "step {step}");
            found += x.is_some() as u32;
        }
        assert!(found > 1000, "conflicts {found}");
    }

    /// A run of reads made after other reads were logged is logged too: taken straight into
    /// the records, it would be replayed over by the older reads, and the race of the write
    /// below (no `__syncwarp` since the last read) would go unseen.
    #[test]
    fn reads_after_logged_ones_keep_their_order() {
        let mut s = Shadow::new(64);
        let mut offs = [4usize; 32];
        offs[0] = 0;
        offs[1] = 0;
        // Lanes 0 and 1 of warp 0 read word 0 at warp-sync epoch 5 (not a run: logged) ...
        assert_eq!(s.access_warp(&offs, 0b11, 4, 0, 5, 1, false), None);
        // ... lane 0 reads it again after a __syncwarp ...
        assert_eq!(s.access_warp(&offs, 0b1, 4, 0, 6, 1, false), None);
        // ... and lane 2 writes it with no __syncwarp since: a race with those reads.
        offs[2] = 0;
        let (lane, c) = s.access_warp(&offs, 0b100, 4, 0, 6, 1, true).unwrap();
        assert_eq!((lane, c.other_write, c.other), (2, false, None));
    }

    #[test]
    fn a_block_start_forgets_byte_mode_words() {
        let mut s = Shadow::new(64);
        // A byte access puts word 2 in byte mode; the next block starts without it.
        assert_eq!(s.access(9, 1, 0, 0, 1, true), None);
        assert!(s.byte_mode[2] && s.any_byte_mode);
        s.begin_block();
        assert!(!s.byte_mode.iter().any(|&b| b) && !s.any_byte_mode);
        // Word accesses then use the word records again, and still see conflicts.
        assert_eq!(s.access(8, 4, 0, 0, 2, true), None);
        assert!(s.access(8, 4, 40, 0, 2, false).is_some());
    }

    #[test]
    fn logged_reads_are_checked_at_the_first_write_of_the_epoch() {
        let mut s = Shadow::new(256);
        let offs: [usize; 32] = std::array::from_fn(|l| 4 * l);
        // Epoch 1: warps 0 and 1 only read: no conflict.
        assert_eq!(s.access_warp(&offs, u32::MAX, 4, 0, 0, 1, false), None);
        assert_eq!(s.access_warp(&offs, u32::MAX, 4, 1, 0, 1, false), None);
        // Epoch 2: warp 1 reads, then warp 0 writes the same words: write-after-read race.
        assert_eq!(s.access_warp(&offs, 0b10, 4, 1, 0, 2, false), None);
        let (lane, c) = s.access_warp(&offs, u32::MAX, 4, 0, 0, 2, true).unwrap();
        assert_eq!(lane, 1);
        assert!(!c.other_write);
        assert_eq!(c.other, Some(33));
        // Then a read by warp 1 of a word warp 0 wrote: read-after-write race.
        let (lane, c) = s.access_warp(&offs, 0b100, 4, 1, 0, 2, false).unwrap();
        assert_eq!((lane, c.other_write, c.other), (2, true, Some(2)));
        // Epoch 3: fresh.
        assert_eq!(s.access_warp(&offs, u32::MAX, 4, 1, 0, 3, true), None);
        // A long read-only epoch switches to eager tracking and still finds a later race.
        for _ in 0..MAX_LOG + 10 {
            assert_eq!(s.access_warp(&offs, 1, 4, 2, 0, 4, false), None);
        }
        assert!(s.access_warp(&offs, 1, 4, 0, 0, 4, true).is_some());
    }
}
