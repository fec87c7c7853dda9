//! Helper threads that run a launch's work beside the launching thread. They are started once
//! per process and stay awake, spinning, for a short while (`LINGER`) after each piece of work,
//! so that a launch that follows soon (a time-stepping loop, a benchmark's repeats) starts on
//! every core at once, with no system call on either side.
//!
//! Why not rayon's pool, which ran the workers before: an idle rayon worker goes to sleep
//! within microseconds, and waking it costs the launching thread a futex call and the worker a
//! trip through the scheduler. Measured on the 2-core benchmark machine (launches of 4,096
//! particle-binning threads, about 100 µs each): the launching thread began its own share 15 µs
//! after the launch began, the helper 36–45 µs after.
//!
//! What this module must not do: know what a launch is. It runs a borrowed closure on the
//! helpers it can claim and returns only when none of them uses the closure any more; helpers
//! busy with another launcher's work are skipped, so concurrent launches never wait for each
//! other. The one unsafe step, handing a borrowed closure to another thread, is in `Post`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// How long an idle helper spins for new work before it sleeps. OpenMP runtimes spin for
/// 0.2 s by default (`KMP_BLOCKTIME`); 2 ms covers the gap between launches in a loop that does
/// some host work between them, and costs an idle notebook nothing it would notice.
const LINGER: Duration = Duration::from_millis(2);

/// Work handed to one helper: the closure and the count of helpers not yet done with it. Both
/// live on the launching thread's stack, which `run` does not leave before the count is 0.
struct Post {
    job: *const (dyn Fn() + Sync),
    left: *const AtomicUsize,
}

// SAFETY: a `Post` only travels to a helper, which calls the `Sync` closure through a shared
// reference and decrements the atomic count; `run` keeps both alive until the count is 0.
unsafe impl Send for Post {}

impl Post {
    /// Run the job and report it done. After the decrement, nothing of the post may be used:
    /// the launching thread may have returned.
    fn run(self) {
        // SAFETY: see `Post`: the pointees outlive this call, since the count is not yet 0.
        let (job, left) = unsafe { (&*self.job, &*self.left) };
        // A panic in the job (a simulator bug; the pool's jobs catch their own) must not kill
        // the helper nor leave the launching thread waiting.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        left.fetch_sub(1, Ordering::Release);
    }
}

/// One helper thread's mailbox.
struct Slot {
    /// Held by one launching thread from its claim until the helper has taken its post (or the
    /// launcher took it back).
    claimed: AtomicBool,
    /// A post waits in `mail` (read without the lock while spinning).
    posted: AtomicBool,
    mail: Mutex<Mail>,
    /// The helper sleeps on `wake`, with `Mail::sleeping` set.
    wake: Condvar,
}

/// What a slot's lock guards.
#[derive(Default)]
struct Mail {
    post: Option<Post>,
    sleeping: bool,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, Mail> {
        // A poisoned lock only means a thread panicked while holding it; the mail is plain
        // data, always consistent.
        self.mail.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The helpers: one fewer than the cores (the launching thread is the other), started on first
/// use. A helper that cannot be started is simply not there.
fn slots() -> &'static [&'static Slot] {
    static SLOTS: OnceLock<Vec<&'static Slot>> = OnceLock::new();
    SLOTS.get_or_init(|| {
        let n = super::cores().saturating_sub(1);
        (0..n)
            .filter_map(|k| {
                let slot: &'static Slot = Box::leak(Box::new(Slot {
                    claimed: AtomicBool::new(false),
                    posted: AtomicBool::new(false),
                    mail: Mutex::new(Mail::default()),
                    wake: Condvar::new(),
                }));
                std::thread::Builder::new()
                    .name(format!("ptxsim-helper-{k}"))
                    .spawn(move || helper(slot))
                    .ok()
                    .map(|_| slot)
            })
            .collect()
    })
}

/// How many helpers this process has.
pub fn count() -> usize {
    slots().len()
}

fn helper(slot: &'static Slot) {
    let mut idle_since = Instant::now();
    loop {
        let mut spins = 0u32;
        while !slot.posted.load(Ordering::Acquire) {
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(1024) && idle_since.elapsed() > LINGER {
                break;
            }
        }
        let mut g = slot.lock();
        if g.post.is_none() {
            if idle_since.elapsed() <= LINGER {
                // Posted and taken back before this helper got to it: spin on.
                continue;
            }
            g.sleeping = true;
            while g.post.is_none() {
                g = slot.wake.wait(g).unwrap_or_else(|e| e.into_inner());
            }
            g.sleeping = false;
        }
        slot.posted.store(false, Ordering::Relaxed);
        let post = g.post.take();
        drop(g);
        // Free for the next claim before the work ends: work posted meanwhile is taken next.
        slot.claimed.store(false, Ordering::Release);
        if let Some(p) = post {
            p.run();
        }
        idle_since = Instant::now();
    }
}

/// Run `job` on up to `extra` helpers and `own` on this thread; return when `own` has returned
/// and no helper runs `job` any more. Helpers that had not started `job` by the time `own`
/// returned are not waited for: their posts are taken back. Returns how many helpers ran it.
pub fn run<R>(extra: usize, job: &(dyn Fn() + Sync), own: impl FnOnce() -> R) -> (R, usize) {
    let left = AtomicUsize::new(0);
    let mut mine: Vec<&'static Slot> = Vec::new();
    if extra > 0 {
        for &slot in slots() {
            if mine.len() == extra {
                break;
            }
            if slot
                .claimed
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            left.fetch_add(1, Ordering::Relaxed);
            // SAFETY (of the lifetime erased here): `Waiter` below takes the post back or
            // waits until the helper is done with it, before `job` and `left` go out of scope,
            // even when `own` panics.
            let job: *const (dyn Fn() + Sync + '_) = job;
            let job: *const (dyn Fn() + Sync) = unsafe { std::mem::transmute(job) };
            let mut g = slot.lock();
            g.post = Some(Post { job, left: &left });
            slot.posted.store(true, Ordering::Release);
            if g.sleeping {
                slot.wake.notify_one();
            }
            drop(g);
            mine.push(slot);
        }
    }
    let waiter = Waiter {
        mine: &mine,
        left: &left,
    };
    let r = own();
    drop(waiter);
    (r, mine.len())
}

/// Takes back the posts no helper has started, then waits for the others (on drop, so that a
/// panicking `own` waits too).
struct Waiter<'a> {
    mine: &'a [&'static Slot],
    left: &'a AtomicUsize,
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        for slot in self.mine {
            let mut g = slot.lock();
            if g.post
                .as_ref()
                .is_some_and(|p| std::ptr::eq(p.left, self.left))
            {
                g.post = None;
                slot.posted.store(false, Ordering::Relaxed);
                slot.claimed.store(false, Ordering::Release);
                self.left.fetch_sub(1, Ordering::Relaxed);
            }
        }
        let since = Instant::now();
        while self.left.load(Ordering::Acquire) != 0 {
            if since.elapsed() < Duration::from_micros(50) {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    /// The job sees borrowed data, its effects are visible when `run` returns, and no helper
    /// touches it afterwards (the count stays put).
    #[test]
    fn run_returns_after_every_helper_is_done_with_the_borrowed_job() {
        for round in 0..200u64 {
            let hits = AtomicU64::new(0);
            let data = vec![round; 64];
            let job = || {
                std::thread::sleep(Duration::from_micros(round % 3 * 50));
                hits.fetch_add(data.iter().sum::<u64>() / 64 + 1, Ordering::Relaxed);
            };
            let (own, ran) = run(count(), &job, || 7);
            assert_eq!(own, 7);
            assert!(ran <= count());
            let seen = hits.load(Ordering::Relaxed);
            assert_eq!(seen % (round + 1), 0, "round {round}: {seen}");
            assert!(seen / (round + 1) <= ran as u64);
            std::thread::sleep(Duration::from_micros(100));
            assert_eq!(
                hits.load(Ordering::Relaxed),
                seen,
                "a helper ran after run returned"
            );
        }
    }

    /// Launching threads racing for the helpers all finish, and every job run is counted by
    /// exactly one `run` (none lost, none run twice).
    #[test]
    fn concurrent_launchers_share_the_helpers_without_losing_work() {
        let total = AtomicU64::new(0);
        let claimed = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..500 {
                        let mine = AtomicU64::new(0);
                        let job = || {
                            mine.fetch_add(1, Ordering::Relaxed);
                        };
                        let (_, ran) = run(count(), &job, || ());
                        let n = mine.load(Ordering::Relaxed);
                        assert!(n <= ran as u64);
                        total.fetch_add(n, Ordering::Relaxed);
                        claimed.fetch_add(ran as u64, Ordering::Relaxed);
                    }
                });
            }
        });
        assert!(total.load(Ordering::Relaxed) <= claimed.load(Ordering::Relaxed));
    }

    /// A panicking job leaves the helper alive; a panicking `own` still waits for the helpers
    /// before the panic leaves `run`.
    #[test]
    fn panics_neither_kill_helpers_nor_let_run_leave_early() {
        let boom = || panic!("job panics (expected in this test)");
        let _ = run(count(), &boom, || ());
        let done = AtomicU64::new(0);
        let slow = || {
            std::thread::sleep(Duration::from_millis(20));
            done.fetch_add(1, Ordering::Relaxed);
        };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run(count(), &slow, || {
                std::thread::sleep(Duration::from_millis(2));
                panic!("own panics (expected in this test)")
            })
        }));
        assert!(r.is_err());
        let after = done.load(Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(done.load(Ordering::Relaxed), after);
        // The helpers still work (other tests running beside this one may keep them busy for
        // a while: wait up to 10 s for one to take the job).
        if count() > 0 {
            let ok = AtomicU64::new(0);
            let job = || {
                ok.fetch_add(1, Ordering::Relaxed);
            };
            let since = Instant::now();
            while ok.load(Ordering::Relaxed) == 0 && since.elapsed() < Duration::from_secs(10) {
                run(count(), &job, || {
                    std::thread::sleep(Duration::from_micros(200))
                });
            }
            assert!(
                ok.load(Ordering::Relaxed) > 0,
                "no helper ran a job for 10 s"
            );
        }
    }
}
