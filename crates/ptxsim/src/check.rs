//! The shared-memory race detector's shadow memory.
//!
//! For every shared byte it remembers the last writer and the last reader(s) with the barrier
//! epoch (bumped at every block-wide barrier) and the writer's warp-sync epoch (bumped at every
//! `bar.warp.sync`). An access by another thread of a byte written (or, for a write, read) in the
//! same epoch, not ordered by a barrier or, within one warp, by `__syncwarp`, is a race. It only
//! runs when the launch's checker is on. It produces conflict facts; the interpreter turns them
//! into reports.

/// Reader id meaning "several threads read this byte in this epoch".
const MANY: u32 = 0xFFFF;

/// One access record: epoch, warp-sync epoch of the accessing warp, thread (or MANY).
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
pub fn race_conflict(
    epoch: u32,
    rec_epoch: u32,
    rec_tid: u32,
    rec_wep: u16,
    tid: u32,
    wep: u16,
) -> bool {
    if rec_epoch != epoch || rec_tid == tid {
        return false;
    }
    if rec_tid == MANY {
        return true;
    }
    rec_tid / 32 != tid / 32 || rec_wep == wep
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
            if found.is_none() && race_conflict(epoch, wr.epoch, wr.tid as u32, wr.wepoch, tid, wep)
            {
                found = Some(Conflict {
                    other_write: true,
                    other: Some(wr.tid as u32),
                    offset: b as u32,
                });
            }
            let rd = self.r[b];
            if write {
                if found.is_none()
                    && race_conflict(epoch, rd.epoch, rd.tid as u32, rd.wepoch, tid, wep)
                {
                    found = Some(Conflict {
                        other_write: false,
                        other: (rd.tid as u32 != MANY).then_some(rd.tid as u32),
                        offset: b as u32,
                    });
                }
                self.w[b] = Rec {
                    epoch,
                    wepoch: wep,
                    tid: tid as u16,
                };
            } else {
                let many = rd.epoch == epoch && rd.tid as u32 != tid;
                self.r[b] = Rec {
                    epoch,
                    wepoch: wep,
                    tid: if many { MANY as u16 } else { tid as u16 },
                };
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
    }
}
