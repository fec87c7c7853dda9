//! Cooperative launches: the grid workspace and the waits of a grid-wide sync.
//!
//! A cooperative launch runs every block at once, each on an OS thread of its own (`pool`),
//! and gives the kernel a grid workspace in global memory, as CUDA's driver does: its address
//! is in `%envreg1`/`%envreg2` (`SReg::GridWs`), and it holds `{ u32 size; u32 barrier; }`.
//! `cooperative_groups::this_grid().sync()` compiles to ordinary PTX on it: thread 0 of each
//! block adds to `barrier` with an atomic (block 0 adds so that the top bit flips when the
//! last block arrives), then re-reads `barrier` in a loop until that bit flips, while the
//! block's other threads wait at `bar.sync`. ptxsim runs that code as written, with real
//! atomics on shared host memory, so the sync is a barrier across the blocks: no block passes
//! until every block has added, and what any block wrote before it is visible after it.
//!
//! What this module adds is the wait: a warp that reads a workspace word again at the same
//! instruction and finds it unchanged since its last read, while its block has nothing else
//! to run, sleeps until an atomic or store on the workspace ([`GridSync::changed`]) or a
//! block's end wakes it, instead of spinning (a spinning block would take a core from the
//! blocks it waits for). A grid where every block that has not finished waits so, with no
//! change for [`STUCK_AFTER`], is deadlocked (a block returned without reaching the sync, or
//! syncs a different number of times): the waiting warp reports it.
//!
//! It must not change what a kernel computes: a wait only ends when the word changes, when
//! the launch stops (fault, cancel), or at the deadlock report.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Bytes of the grid workspace (`{ u32 size; u32 barrier; }`, padded).
pub const WORKSPACE_BYTES: usize = 16;

/// How long every unfinished block must wait unchanged before the grid counts as deadlocked.
pub const STUCK_AFTER: Duration = Duration::from_millis(1500);

/// How often a waiting warp wakes to see whether the launch stopped.
const POLL: Duration = Duration::from_millis(10);

/// The shared state of one cooperative launch.
pub struct GridSync {
    /// The workspace's address and size.
    pub ws: u64,
    pub len: u64,
    nblocks: u64,
    state: Mutex<State>,
    cv: Condvar,
}

#[derive(Default)]
struct State {
    /// Warps sleeping in [`GridSync::wait`] (at most one per block).
    waiting: u64,
    /// Blocks that ended.
    finished: u64,
    /// Workspace writes and block ends so far (a deadlock needs none for a while).
    changes: u64,
}

/// Why a wait ended without the word changing.
#[derive(Debug, PartialEq, Eq)]
pub enum WaitEnd {
    /// The word changed, or the launch is stopping (the caller's next checkpoint says why).
    Go,
    /// Every unfinished block waits and nothing changes: `finished` blocks had ended.
    Stuck { finished: u64 },
}

impl GridSync {
    pub fn new(ws: u64, nblocks: u64) -> Self {
        GridSync {
            ws,
            len: WORKSPACE_BYTES as u64,
            nblocks,
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
        }
    }

    /// Whether `addr` lies in the workspace.
    #[inline(always)]
    pub fn contains(&self, addr: u64) -> bool {
        addr.wrapping_sub(self.ws) < self.len
    }

    /// The high (`k` = 1, `%envreg1`) or low (2, `%envreg2`) half of the workspace address.
    pub fn envreg(ws: u64, k: u8) -> u64 {
        if k == 1 {
            ws >> 32
        } else {
            ws & 0xFFFF_FFFF
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A warp wrote the workspace (after the write): wake the waiting warps.
    pub fn changed(&self) {
        let mut s = self.lock();
        s.changes += 1;
        self.cv.notify_all();
    }

    /// A block ended.
    pub fn block_done(&self) {
        let mut s = self.lock();
        s.finished += 1;
        s.changes += 1;
        self.cv.notify_all();
    }

    /// Sleeps until `read()` differs from `seen`, `stop()` holds, or the grid is deadlocked.
    pub fn wait(&self, read: &dyn Fn() -> u64, seen: u64, stop: &dyn Fn() -> bool) -> WaitEnd {
        let mut s = self.lock();
        s.waiting += 1;
        let mut still: Option<(u64, Instant)> = None;
        let end = loop {
            // Under the lock: a writer changes the word before it takes the lock to notify.
            if read() != seen || stop() {
                break WaitEnd::Go;
            }
            if s.waiting + s.finished >= self.nblocks {
                match still {
                    Some((c, t)) if c == s.changes => {
                        if t.elapsed() >= STUCK_AFTER {
                            break WaitEnd::Stuck {
                                finished: s.finished,
                            };
                        }
                    }
                    _ => still = Some((s.changes, Instant::now())),
                }
            } else {
                still = None;
            }
            s = match self.cv.wait_timeout(s, POLL) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        };
        s.waiting -= 1;
        end
    }
}

impl super::Worker<'_> {
    /// Before a global or generic load of a cooperative launch (`gs`): a warp that re-reads a
    /// workspace word at the same instruction and finds it unchanged, while no other warp of
    /// its block can run, waits for it to change (module docs).
    #[cold]
    #[inline(never)]
    pub(super) fn grid_poll(
        &mut self,
        w: &super::Warp,
        i: &crate::ir::Inst,
        m: u32,
        pc: u32,
        gs: &GridSync,
    ) -> Result<(), super::Fault> {
        if m == 0 {
            return Ok(());
        }
        let lane = m.trailing_zeros() as usize;
        let a = w.regs[i.r[4] as usize][lane].wrapping_add(i.imm as u64);
        if !gs.contains(a) {
            return Ok(());
        }
        let mut cache = crate::mem::Cache::default();
        let g: &crate::mem::GlobalView = self.ctx.global;
        let Some(p) = g.translate(&mut cache, a & !3, 4) else {
            return Ok(()); // the load reports the bad access
        };
        let cur = p.load(0, 4);
        let others_idle = self
            .warps
            .iter()
            .all(|o| o.idx == w.idx || o.done || o.mask == 0);
        if self.ws_seen == Some((pc, a, cur)) && others_idle {
            let ctx = self.ctx;
            let stop = || {
                ctx.abort.load(std::sync::atomic::Ordering::Relaxed)
                    || ctx
                        .cancel
                        .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
            };
            if let WaitEnd::Stuck { finished } = gs.wait(&|| p.load(0, 4), cur, &stop) {
                let message = if finished > 0 {
                    format!(
                        "deadlock: a grid-wide sync (cooperative_groups::this_grid().sync()) \
                         waits for blocks that never reach it: {finished} of the grid's {} \
                         blocks returned without reaching it",
                        gs.nblocks
                    )
                } else {
                    format!(
                        "deadlock: every block of the grid ({}) waits at a grid-wide sync \
                         (cooperative_groups::this_grid().sync()) that none can pass",
                        gs.nblocks
                    )
                };
                return Err(Box::new(self.report(
                    crate::CheckKind::DivergentBarrier,
                    w.idx,
                    lane,
                    pc,
                    a,
                    4,
                    "global",
                    None,
                    message,
                )));
            }
        }
        self.ws_seen = Some((pc, a, p.load(0, 4)));
        Ok(())
    }

    /// After a store or atomic of a cooperative launch: wake the waiting warps if it wrote the
    /// workspace (`r` is the address register).
    #[cold]
    #[inline(never)]
    pub(super) fn grid_wrote(&self, w: &super::Warp, i: &crate::ir::Inst, r: usize, m: u32) {
        let Some(gs) = self.ctx.grid_sync else { return };
        let base = &w.regs[r];
        let mut hit = false;
        super::alu::each(m, |l| {
            hit |= gs.contains(base[l].wrapping_add(i.imm as u64))
        });
        if hit {
            gs.changed();
        }
    }
}
