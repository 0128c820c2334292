//! The lock of the allocator's rare shared paths (the shared heap, the cache of freed
//! mappings): a short spin, then a sleep on a futex, so that a thread waiting for a
//! holder the scheduler has preempted gives its core back instead of spinning through
//! its time slice. It never allocates, and [`Lock::reset`] frees it in a forked child,
//! whose copy may record a holder that only exists in the parent.

use core::sync::atomic::{AtomicU32, Ordering};

const FREE: u32 = 0;
const HELD: u32 = 1;
/// Held, and a thread may be asleep waiting for it: the unlock must wake one.
const CONTENDED: u32 = 2;

/// Spins before sleeping: about a microsecond, longer than any critical section here.
const SPINS: u32 = 200;

pub(crate) struct Lock {
    state: AtomicU32,
}

/// Holds a [`Lock`]; unlocks it when dropped.
pub(crate) struct Guard<'a>(&'a Lock);

impl Lock {
    pub(crate) const fn new() -> Lock {
        Lock {
            state: AtomicU32::new(FREE),
        }
    }

    /// Takes the lock, waiting as long as it takes.
    #[inline]
    pub(crate) fn lock(&self) -> Guard<'_> {
        // Acquire when taken (here and in `lock_contended`), release when given back
        // (`unlock`): one holder's accesses happen before the next one's. A failed
        // attempt reads nothing through the lock: relaxed.
        if self
            .state
            .compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        Guard(self)
    }

    #[cold]
    #[inline(never)]
    fn lock_contended(&self) {
        for _ in 0..SPINS {
            match self.state.load(Ordering::Relaxed) {
                FREE => {
                    if self
                        .state
                        .compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                    {
                        return;
                    }
                }
                // Someone already sleeps: join them rather than spin.
                CONTENDED => break,
                _ => core::hint::spin_loop(),
            }
        }
        // Marked contended, so whoever holds it wakes a sleeper when it unlocks.
        while self.state.swap(CONTENDED, Ordering::Acquire) != FREE {
            futex_wait(&self.state, CONTENDED);
        }
    }

    fn unlock(&self) {
        if self.state.swap(FREE, Ordering::Release) == CONTENDED {
            futex_wake_one(&self.state);
        }
    }

    /// Whether some thread holds it.
    #[cfg(test)]
    pub(crate) fn is_locked(&self) -> bool {
        self.state.load(Ordering::Relaxed) != FREE
    }

    /// Marks the lock free without waking anyone.
    ///
    /// # Safety
    /// Only where its holder and every waiter no longer exist and nothing the lock
    /// protects is half-changed: in a forked child, for a lock the parent's fork
    /// handler held across the fork (see `crate::fork`).
    pub(crate) unsafe fn reset(&self) {
        // Relaxed: the forked child has one thread, which took the lock before the
        // fork (so it is ordered already) and is the only one to take it again.
        self.state.store(FREE, Ordering::Relaxed);
    }

    /// Takes the lock for the length of a fork and keeps it past this call: the fork
    /// handlers release it with [`unlock_after_fork`](Self::unlock_after_fork) (parent)
    /// or [`reset`](Self::reset) (child).
    pub(crate) fn lock_for_fork(&self) {
        core::mem::forget(self.lock());
    }

    /// Releases a lock taken by [`lock_for_fork`](Self::lock_for_fork).
    ///
    /// # Safety
    /// This thread took it with [`lock_for_fork`](Self::lock_for_fork) and has not
    /// released it since.
    pub(crate) unsafe fn unlock_after_fork(&self) {
        self.unlock();
    }
}

impl Drop for Guard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0.unlock();
    }
}

/// Sleeps while `state` holds `expected` (or until woken, or spuriously).
fn futex_wait(state: &AtomicU32, expected: u32) {
    // SAFETY: FUTEX_WAIT reads the aligned u32 at the address and sleeps while it equals
    // `expected`; a null timeout waits without a limit. No memory is written.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            state.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            core::ptr::null::<libc::timespec>(),
        );
    }
}

/// Wakes one thread sleeping on `state`.
fn futex_wake_one(state: &AtomicU32) {
    // SAFETY: FUTEX_WAKE only wakes sleepers on the address; it reads and writes no
    // memory.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            state.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::UnsafeCell;

    struct Counter {
        lock: Lock,
        n: UnsafeCell<u64>,
    }

    // SAFETY: `n` is only touched under `lock`.
    unsafe impl Sync for Counter {}

    #[test]
    fn increments_under_the_lock_are_never_lost() {
        let threads = 4;
        let per = if cfg!(miri) { 200 } else { 200_000 };
        let c = Counter {
            lock: Lock::new(),
            n: UnsafeCell::new(0),
        };
        let shared = &c;
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(move || {
                    let c = shared;
                    for i in 0..per {
                        let _g = c.lock.lock();
                        // SAFETY: the lock is held.
                        unsafe { *c.n.get() += 1 };
                        if i % 64 == 0 {
                            // Hold it across a yield now and then, so waiters sleep.
                            std::thread::yield_now();
                        }
                    }
                });
            }
        });
        assert_eq!(c.n.into_inner(), threads * per);
        assert!(!c.lock.is_locked());
    }

    #[test]
    fn a_lock_held_for_a_fork_is_released_by_either_handler() {
        let l = Lock::new();
        l.lock_for_fork();
        assert!(l.is_locked());
        // SAFETY: taken just above by this thread.
        unsafe { l.unlock_after_fork() };
        assert!(!l.is_locked());
        l.lock_for_fork();
        // SAFETY: as a child would: no other thread waits for it.
        unsafe { l.reset() };
        drop(l.lock());
        assert!(!l.is_locked());
    }
}
