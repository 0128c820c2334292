//! The lock of the allocator's rare shared paths (the shared heap, the cache of freed
//! mappings): a short spin, then a sleep on a futex, so that a thread waiting for a
//! holder the scheduler has preempted gives its core back instead of spinning through
//! its time slice. It never allocates, and [`Lock::reset`] frees it in a forked child,
//! whose copy may record a holder that only exists in the parent.
//!
//! Across a `fork` the forking thread holds every lock (`crate::fork`), from the
//! allocator's prepare handler to its parent or child handler. Fork handlers the program
//! registered before the allocator's run inside that window, on the same thread, and may
//! allocate: a lock held for a fork lets its holder's thread through
//! ([`Lock::lock_for_fork`]), as glibc's malloc, which locks its arenas inside `fork`
//! itself, lets every handler allocate. Nothing else can be inside a lock then, so the
//! holder has it to itself.

use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

const FREE: u32 = 0;
const HELD: u32 = 1;
/// Held, and a thread may be asleep waiting for it: the unlock must wake one.
const CONTENDED: u32 = 2;

/// Spins before sleeping: about a microsecond, longer than any critical section here.
const SPINS: u32 = 200;

pub(crate) struct Lock {
    state: AtomicU32,
    /// While the lock is held across a fork: the holding thread (`pthread_self`), which
    /// passes through it (see the module's documentation); 0 otherwise.
    fork_holder: AtomicUsize,
}

/// Holds a [`Lock`]; unlocks it when dropped, unless it passed through a lock its
/// thread holds for a fork.
pub(crate) struct Guard<'a> {
    lock: &'a Lock,
    taken: bool,
}

/// The calling thread's identity for [`Lock::fork_holder`]: never 0, distinct among
/// live threads, and the same in a forked child as in the thread that forked.
#[inline]
fn this_thread() -> usize {
    // SAFETY: `pthread_self` has no precondition; it reads the thread's descriptor.
    unsafe { libc::pthread_self() as usize }
}

impl Lock {
    pub(crate) const fn new() -> Lock {
        Lock {
            state: AtomicU32::new(FREE),
            fork_holder: AtomicUsize::new(0),
        }
    }

    /// Takes the lock, waiting as long as it takes; passes through when the calling
    /// thread holds it for a fork.
    #[inline]
    pub(crate) fn lock(&self) -> Guard<'_> {
        // Acquire when taken (here and in `lock_contended`), release when given back
        // (`unlock`): one holder's accesses happen before the next one's. A failed
        // attempt reads nothing through the lock: relaxed.
        let taken = self
            .state
            .compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            || self.lock_contended();
        Guard { lock: self, taken }
    }

    /// Waits for the lock and takes it (true), or returns false at once when this
    /// thread holds it for a fork.
    #[cold]
    #[inline(never)]
    fn lock_contended(&self) -> bool {
        // Relaxed: only the holder itself stored its own identity here (program order);
        // any other thread reads 0 or another thread's identity, never its own.
        if self.fork_holder.load(Ordering::Relaxed) == this_thread() {
            return false;
        }
        for _ in 0..SPINS {
            match self.state.load(Ordering::Relaxed) {
                FREE => {
                    if self
                        .state
                        .compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                    {
                        return true;
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
        true
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
        self.fork_holder.store(0, Ordering::Relaxed);
        self.state.store(FREE, Ordering::Relaxed);
    }

    /// Takes the lock for the length of a fork and keeps it past this call: the fork
    /// handlers release it with [`unlock_after_fork`](Self::unlock_after_fork) (parent)
    /// or [`reset`](Self::reset) (child). Until then the calling thread passes through
    /// it.
    pub(crate) fn lock_for_fork(&self) {
        let guard = self.lock();
        if guard.taken {
            core::mem::forget(guard);
            // Relaxed: read back only by this thread (see `lock_contended`).
            self.fork_holder.store(this_thread(), Ordering::Relaxed);
        }
    }

    /// Releases a lock taken by [`lock_for_fork`](Self::lock_for_fork).
    ///
    /// # Safety
    /// This thread took it with [`lock_for_fork`](Self::lock_for_fork) and has not
    /// released it since.
    pub(crate) unsafe fn unlock_after_fork(&self) {
        // Relaxed: as in `lock_for_fork`; the unlock's release orders it for the next
        // holder anyway.
        self.fork_holder.store(0, Ordering::Relaxed);
        self.unlock();
    }
}

/// A value behind a [`Lock`], for the allocator's locked parts (the big blocks' record
/// and cache, the chunks outside the arena), each a `static`.
pub(crate) struct Locked<T> {
    lock: Lock,
    value: core::cell::UnsafeCell<T>,
}

// SAFETY: `value` is only reached through `with`, which holds the lock (or passes
// through it on the thread that holds it for a fork, which then has it to itself).
unsafe impl<T: Send> Sync for Locked<T> {}

impl<T> Locked<T> {
    pub(crate) const fn new(value: T) -> Locked<T> {
        Locked {
            lock: Lock::new(),
            value: core::cell::UnsafeCell::new(value),
        }
    }

    /// Runs `f` on the value with the lock held. The allocator's fork handlers are
    /// registered first (before any thread can hold the lock across a fork).
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        crate::FORK.register();
        let _held = self.lock.lock();
        // SAFETY: the lock is held; `f` gets the only reference (no `with` nests: no
        // code path holds two of the allocator's locks).
        f(unsafe { &mut *self.value.get() })
    }

    /// The lock, for the fork handlers.
    pub(crate) fn lock(&self) -> &Lock {
        &self.lock
    }
}

impl Drop for Guard<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.taken {
            self.lock.unlock();
        }
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

    #[test]
    fn the_thread_holding_a_lock_for_a_fork_passes_through_it_and_others_wait() {
        let l = Lock::new();
        l.lock_for_fork();
        // The holder's own thread (a fork handler of the program that allocates).
        {
            let g = l.lock();
            assert!(!g.taken);
            drop(g);
        }
        assert!(l.is_locked(), "passing through released the fork's hold");
        // Another thread waits until the hold ends.
        let got = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let g = l.lock();
                assert!(g.taken);
                got.store(true, Ordering::SeqCst);
            });
            std::thread::sleep(std::time::Duration::from_millis(if cfg!(miri) {
                1
            } else {
                50
            }));
            assert!(
                !got.load(Ordering::SeqCst),
                "another thread passed the fork's hold"
            );
            // SAFETY: taken above by this thread.
            unsafe { l.unlock_after_fork() };
        });
        assert!(got.load(Ordering::SeqCst));
        assert!(!l.is_locked());
        // After the hold, the former holder takes it like anyone.
        let g = l.lock();
        assert!(g.taken);
    }
}
