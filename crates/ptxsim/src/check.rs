//! The shared-memory race detector's shadow memory.
//!
//! For every shared byte it remembers the last writer and the last reader(s) with the barrier
//! epoch (bumped at every block-wide barrier) and the writer's warp-sync epoch (bumped at every
//! `bar.warp.sync`). An access by another thread of a byte written (or, for a write, read) in the
//! same epoch, not ordered by a barrier or, within one warp, by `__syncwarp`, is a race. It only
//! runs when the launch's checker is on. It produces conflict facts; the interpreter turns them
//! into reports.

/// Reader ids: several threads of different warps, or of one warp (low bits: the warp).
const MULTI_WARP: u16 = 0xFFFF;
const MULTI_IN_WARP: u16 = 0x8000;

/// One access record: epoch, warp-sync epoch of the accessing warp, thread (or several).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Rec {
    epoch: u32,
    wepoch: u16,
    tid: u16,
}

/// Shadow state of a block's shared memory.
pub struct Shadow {
    w: Vec<Rec>,
    r: Vec<Rec>,
}

/// What an access conflicts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conflict {
    /// The other access was a write.
    pub other_write: bool,
    /// The other thread (linear index in the block), or None for several readers.
    pub other: Option<u32>,
    /// Byte offset where the conflict was found.
    pub offset: u32,
}

/// Whether an earlier record conflicts with an access by thread `tid` (warp-sync epoch `wep`)
/// in barrier epoch `epoch`.
#[inline(always)]
fn conflict(epoch: u32, rec: Rec, tid: u32, wep: u16) -> bool {
    if rec.epoch != epoch {
        return false;
    }
    let warp = tid / 32;
    match rec.tid {
        MULTI_WARP => true,
        t if t & MULTI_IN_WARP != 0 => (t & !MULTI_IN_WARP) as u32 != warp || rec.wepoch == wep,
        t => t as u32 != tid && (t as u32 / 32 != warp || rec.wepoch == wep),
    }
}

/// The reader record after thread `tid` reads a byte whose reader record was `rd`.
fn add_reader(rd: Rec, epoch: u32, tid: u32, wep: u16) -> Rec {
    let warp = tid / 32;
    let id = if rd.epoch != epoch {
        tid as u16
    } else {
        match rd.tid {
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
    Rec {
        epoch,
        wepoch: wep,
        tid: id,
    }
}

impl Shadow {
    pub fn new(bytes: usize) -> Shadow {
        Shadow {
            w: vec![Rec::default(); bytes],
            r: vec![Rec::default(); bytes],
        }
    }

    /// Record an access of `size` bytes at `off` by thread `tid` and report the first conflict.
    pub fn access(
        &mut self,
        off: usize,
        size: usize,
        tid: u32,
        wep: u32,
        epoch: u32,
        write: bool,
    ) -> Option<Conflict> {
        let wep = wep as u16;
        let mut found = None;
        let end = (off + size).min(self.w.len());
        for b in off..end {
            let wr = self.w[b];
            if found.is_none() && conflict(epoch, wr, tid, wep) {
                found = Some(Conflict {
                    other_write: true,
                    other: Some(wr.tid as u32),
                    offset: b as u32,
                });
            }
            let rd = self.r[b];
            if write {
                if found.is_none() && conflict(epoch, rd, tid, wep) {
                    found = Some(Conflict {
                        other_write: false,
                        other: (rd.tid & MULTI_IN_WARP == 0).then_some(rd.tid as u32),
                        offset: b as u32,
                    });
                }
                self.w[b] = Rec {
                    epoch,
                    wepoch: wep,
                    tid: tid as u16,
                };
            } else {
                self.r[b] = add_reader(rd, epoch, tid, wep);
            }
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
}
