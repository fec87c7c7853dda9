//! Shared-memory race records of the block tier: which threads read and wrote each shared
//! 32-bit word in the current barrier interval, so that two threads' accesses to one word
//! between barriers (one of them a write) give the block up and the interpreter reports it.
//!
//! Two forms, one answer. Per word, the last writer's and the last reader's key
//! (`epoch << 16 | thread`, the reader's bit 15: more than one reader): exact for any access.
//! And, for accesses of *unit stride* (thread `t` at word `c + t`, the common `s[tid + k]`), a
//! short log of `(c, threads, write)` per interval: two such accesses meet on a word only where
//! thread `t` of one and thread `t + (c - c')` of the other are both in, so an interval's few
//! unit-stride accesses are checked against each other with shifts of the thread masks,
//! without touching a record per thread (the tree reduction's three accesses a step). The
//! first access of another shape in an interval, or a full log, moves the interval's log into
//! the records (it held no race, so the records get what they would have had), and the rest
//! of the interval uses the records.
//!
//! This module keeps and checks the records only; it must not touch shared memory or the
//! block's registers (`exec::block` does).

use super::{flags32, GiveUp, WORDS};

/// Unit-stride accesses an interval's log holds before it moves into the records.
const LOG_MAX: usize = 8;

/// A logged unit-stride access: the threads of its mask row at words `c + t`.
#[derive(Clone, Copy, Default)]
struct Range {
    c: usize,
    /// Mask words (as many as the block has).
    words: usize,
    write: bool,
}

/// One worker's race records, kept from block to block (cleared only when the epochs run out).
#[derive(Default)]
pub(super) struct Records {
    /// Per shared word: the last writer's and the last reader's key.
    writer: Vec<u32>,
    reader: Vec<u32>,
    /// The first `n` unit-stride accesses of interval `log_epoch` not in `writer`/`reader`,
    /// and their threads (fixed arrays: an access logs without allocating).
    log: [Range; LOG_MAX],
    masks: [[u64; WORDS]; LOG_MAX],
    n: usize,
    log_epoch: u32,
    /// The interval whose accesses all go through the records (its log moved there).
    recorded: u32,
}

impl Records {
    /// Records for `words` shared words (a block's worth of padding included) when the ones
    /// kept are not, or when `fresh` (the epochs start again): every record cleared.
    pub(super) fn fit(&mut self, words: usize, fresh: bool) -> bool {
        if self.writer.len() == words && !fresh {
            return false;
        }
        self.writer.clear();
        self.writer.resize(words, 0);
        self.reader.clear();
        self.reader.resize(words, 0);
        (self.n, self.log_epoch, self.recorded) = (0, 0, 0);
        true
    }

    /// A unit-stride access by the threads `act` (64 a word) at words `c + t` in interval
    /// `epoch` (the caller checked that the words exist, with whole 64-thread words of
    /// records past them); `Err` on a race with an earlier access of the interval.
    #[inline(always)]
    pub(super) fn unit(
        &mut self,
        c: usize,
        act: &[u64],
        epoch: u32,
        write: bool,
    ) -> Result<(), GiveUp> {
        if self.recorded != epoch {
            if self.log_epoch != epoch {
                (self.n, self.log_epoch) = (0, epoch);
            }
            for (e, there) in self.log.iter().zip(&self.masks).take(self.n) {
                if e.c == c || !(write || e.write) {
                    continue;
                }
                // Thread t here and thread t + d there use the same word.
                let d = c as isize - e.c as isize;
                let there = &there[..e.words];
                for (w, &word) in act.iter().enumerate() {
                    if word & window(there, w as isize * 64 + d) != 0 {
                        return Err(GiveUp);
                    }
                }
            }
            let n = self.n;
            if n < LOG_MAX && act.len() <= WORDS {
                let words = act.len();
                self.log[n] = Range { c, words, write };
                self.masks[n][..words].copy_from_slice(act);
                self.n += 1;
                return Ok(());
            }
            self.records_from_log(epoch);
        }
        if record_unit(&mut self.writer, &mut self.reader, c, act, epoch, write) {
            return Err(GiveUp);
        }
        Ok(())
    }

    /// Before an access of another shape in interval `epoch`: the interval's log moves into
    /// the records, which its remaining accesses use.
    pub(super) fn records_from_log(&mut self, epoch: u32) {
        if self.recorded == epoch {
            return;
        }
        if self.log_epoch == epoch {
            for (e, m) in self.log.iter().zip(&self.masks).take(self.n) {
                // The log held no race, so this finds none either.
                let act = &m[..e.words];
                record_unit(&mut self.writer, &mut self.reader, e.c, act, epoch, e.write);
            }
        }
        self.n = 0;
        self.recorded = epoch;
    }

    /// Thread `t`'s access to word `word` in interval `epoch` (after `records_from_log`): whether
    /// another thread used the word in the interval in a way that makes it a race.
    #[inline(always)]
    pub(super) fn lane(&mut self, word: usize, t: usize, epoch: u32, write: bool) -> bool {
        let (wr, rd) = (&mut self.writer, &mut self.reader);
        let key = epoch << 16 | t as u32;
        // Another thread's access in this interval: `(record ^ key) - 1 < 0xFFFF`.
        let other_w = (wr[word] ^ key).wrapping_sub(1) < 0xFFFF;
        let x = rd[word] ^ key;
        if write {
            wr[word] = key;
            other_w | (x.wrapping_sub(1) < 0xFFFF)
        } else {
            let other = (x >> 16 == 0) & (x != 0);
            rd[word] = if other { rd[word] | 0x8000 } else { key };
            other_w
        }
    }

    /// Thread `t`'s atomic update of word `word` in interval `epoch` (after
    /// `records_from_log`): whether it may race. Atomic updates do not race with each other
    /// nor with reads (as in the checker); a plain write of the word in the interval gives the
    /// block up even when it was the thread's own (which the checker allows). Plain accesses
    /// after an atomic update of the interval see a writer that is not theirs (`lane`), and
    /// give the block up too.
    #[inline(always)]
    pub(super) fn atomic_lane(&mut self, word: usize, t: usize, epoch: u32) -> bool {
        let w = self.writer[word];
        let same = w >> 16 == epoch;
        if same && w & ATOMIC == 0 {
            return true;
        }
        let me = epoch << 16 | ATOMIC | t as u32;
        self.writer[word] = if same && w != me {
            epoch << 16 | MULTI_ATOMIC
        } else {
            me
        };
        false
    }
}

/// Writer keys of atomic updates: one thread's (`ATOMIC | thread`), or several threads'.
const ATOMIC: u32 = 0x4000;
const MULTI_ATOMIC: u32 = 0x7FFF;

/// The records of a unit-stride access (thread `t` at word `c + t`, `act` 64 threads a word,
/// whole words of records present), in branch-free loops; whether it races with one recorded.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // lane loops index several arrays by lane
fn record_unit(wr: &mut [u32], rd: &mut [u32], c: usize, act: &[u64], epoch: u32, w: bool) -> bool {
    let mut failed = 0u32;
    for (n, &word) in act.iter().enumerate() {
        if word == 0 {
            continue;
        }
        let on = flags32(word);
        let lo = c + n * 64;
        let (ws, rs) = (&mut wr[lo..lo + 64], &mut rd[lo..lo + 64]);
        for j in 0..64 {
            let key = epoch << 16 | (n * 64 + j) as u32;
            let other_w = ((ws[j] ^ key).wrapping_sub(1) < 0xFFFF) as u32;
            let x = rs[j] ^ key;
            if w {
                let other_r = (x.wrapping_sub(1) < 0xFFFF) as u32;
                failed |= on[j] & (other_w | other_r);
                ws[j] = (key & on[j]) | (ws[j] & !on[j]);
            } else {
                failed |= on[j] & other_w;
                let other = (((x >> 16 == 0) & (x != 0)) as u32).wrapping_neg();
                let mark = ((rs[j] | 0x8000) & other) | (key & !other);
                rs[j] = (mark & on[j]) | (rs[j] & !on[j]);
            }
        }
    }
    failed != 0
}

/// Bits `pos .. pos + 64` of the thread mask `m` (0 outside it).
#[inline(always)]
fn window(m: &[u64], pos: isize) -> u64 {
    let get = |i: isize| {
        usize::try_from(i)
            .ok()
            .and_then(|i| m.get(i))
            .copied()
            .unwrap_or(0)
    };
    let (w, s) = (pos.div_euclid(64), pos.rem_euclid(64) as u32);
    let lo = get(w) >> s;
    let hi = if s == 0 { 0 } else { get(w + 1) << (64 - s) };
    lo | hi
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_of_a_thread_mask() {
        let mut m = [0u64; 16];
        m[0] = 0b1011;
        m[1] = 1 << 3;
        assert_eq!(window(&m, 0), 0b1011);
        assert_eq!(window(&m, 1), 0b101);
        assert_eq!(window(&m, -2), 0b101100);
        assert_eq!(window(&m, 64), 1 << 3);
        assert_eq!(window(&m, 60), 1 << 7);
        assert_eq!(window(&m, 3), 1);
        assert_eq!(window(&m, -64), 0);
        assert_eq!(window(&m, 16 * 64), 0);
        assert_eq!(window(&m, -70), 0);
    }

    /// The log finds what the records find: random unit-stride accesses of one interval, each
    /// judged by a fresh set of records and by the log.
    #[test]
    fn the_log_agrees_with_the_records() {
        let mut rng = crate::tests::util::Rng(crate::tests::util::seed());
        for _ in 0..2000 {
            let words = 2048;
            let (mut logged, mut plain) = (Records::default(), Records::default());
            logged.fit(words, true);
            plain.fit(words, true);
            // `plain` records every access (its interval already recorded).
            plain.records_from_log(1);
            // Blocks of up to 1024 threads (16 words), the same for every access.
            let nwords = 1 + rng.below(16) as usize;
            let n = 1 + rng.below(12) as usize;
            for k in 0..n {
                let c = rng.below(300) as usize;
                let act: Vec<u64> = (0..nwords)
                    .map(|_| match rng.below(4) {
                        0 => 0,
                        1 => u64::MAX,
                        _ => rng.next() & rng.next(),
                    })
                    .collect();
                let write = rng.below(3) == 0;
                let a = logged.unit(c, &act, 1, write).is_err();
                let b = plain.unit(c, &act, 1, write).is_err();
                assert_eq!(a, b, "access {k}: c {c}, write {write}");
                if a {
                    break;
                }
            }
        }
    }
}
