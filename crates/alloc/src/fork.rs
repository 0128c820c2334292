//! Fork safety. A forked child has only the thread that called `fork`; a lock another
//! thread of the parent held at that moment would stay held in the child forever. So,
//! as glibc, jemalloc and mimalloc do, the allocator registers `pthread_atfork`
//! handlers: before a fork the forking thread takes every lock the allocator has, so
//! that no other thread is inside one of them; after it, the parent releases them and
//! the child marks them free.
//!
//! Each part of the allocator that has locks lists them (its `fork_locks`); the crate's
//! root gathers the lists into one [`LockSet`] and one [`Handlers`] (`crate::FORK`),
//! which every part registers before it first takes one of its locks, holding none:
//! this module knows none of the parts. The locks are never nested (no code path holds
//! two), so the order in which the handlers take them does not matter. The registration
//! goes through `pthread_once`, which glibc makes safe against a fork during it (the
//! child starts it again); a registration re-entered from inside itself (glibc's
//! `pthread_atfork` allocates once a process has 48 handlers, and the allocation may
//! be the allocator's first) returns at once instead of waiting for itself.
//!
//! Handlers the program registered before the allocator's run while the forking thread
//! holds the locks (prepare handlers run in the reverse order of registration, parent
//! and child handlers in order); when one of them allocates, the locks let the forking
//! thread through (`crate::lock`), so it cannot wait for itself.
//!
//! Heaps owned by the parent's other threads stay claimed in the child (their owners
//! do not exist there, and their state may be half-changed), so the child never
//! touches their magazines or depots: blocks of theirs the child frees go to their
//! remote-free stacks, as any remote free does, which the child's heaps may take when
//! they run out of a class (one atomic swap, as for any heap). The child claims heaps of
//! its own.

use crate::lock::Lock;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The thread inside a registration (`pthread_self`), or 0.
static REGISTERING: AtomicUsize = AtomicUsize::new(0);

fn this_thread() -> usize {
    // SAFETY: `pthread_self` has no precondition.
    unsafe { libc::pthread_self() as usize }
}

/// The locks of one part of the allocator, for its fork handlers.
pub(crate) trait LockSet {
    /// Calls `f` on each of the part's locks.
    fn each(f: impl FnMut(&'static Lock));

    /// In the child after a fork, once the locks are free: forgets work that another
    /// thread of the parent had under way outside the locks (none by default).
    fn in_child() {}
}

/// One part's fork handlers, registered once ([`Handlers::register`]).
pub(crate) struct Handlers {
    once: UnsafeCell<libc::pthread_once_t>,
    registered: AtomicBool,
    install: extern "C" fn(),
}

// SAFETY: the control word is only handed to `pthread_once`, which synchronises every
// access to it; the rest is atomic or immutable.
unsafe impl Sync for Handlers {}

impl Handlers {
    /// The handlers of the part whose locks `L` lists.
    pub(crate) const fn new<L: LockSet>() -> Handlers {
        Handlers {
            once: UnsafeCell::new(libc::PTHREAD_ONCE_INIT),
            registered: AtomicBool::new(false),
            install: install::<L>,
        }
    }

    /// Registers the handlers unless that is done: call it before taking any of the
    /// part's locks for the first time, while holding no lock.
    #[inline]
    pub(crate) fn register(&'static self) {
        if !self.registered.load(Ordering::Acquire) {
            self.register_slow();
        }
    }

    #[cold]
    #[inline(never)]
    fn register_slow(&'static self) {
        // Relaxed: only this thread stores its own identity there (in `install`).
        if REGISTERING.load(Ordering::Relaxed) == this_thread() {
            return; // re-entered from inside the registration: see the module's doc
        }
        // SAFETY: `once` is a valid control word that lives forever; `install` takes
        // no argument and returns after registering.
        unsafe { libc::pthread_once(self.once.get(), self.install) };
        // Release (with `register`'s acquire): a thread that sees `true` skips
        // `pthread_once` and still finds the handlers registered before it goes on.
        self.registered.store(true, Ordering::Release);
    }
}

extern "C" fn install<L: LockSet>() {
    // Relaxed: read back only by this thread (`register_slow`).
    REGISTERING.store(this_thread(), Ordering::Relaxed);
    // SAFETY: the three handlers are `extern "C"` functions that live forever and
    // neither unwind nor allocate. If the system cannot register them (out of memory),
    // forks are as unsafe as they were before this module; nothing else changes.
    unsafe { libc::pthread_atfork(Some(prepare::<L>), Some(parent::<L>), Some(child::<L>)) };
    REGISTERING.store(0, Ordering::Relaxed);
}

/// Before a fork: take every lock of the part, so that no other thread is inside one.
extern "C" fn prepare<L: LockSet>() {
    L::each(|l| l.lock_for_fork());
}

/// In the parent after a fork: release them.
extern "C" fn parent<L: LockSet>() {
    // SAFETY: `prepare` took them all on this thread, just before the fork.
    L::each(|l| unsafe { l.unlock_after_fork() });
}

/// In the child after a fork: mark them free (nobody there waits for them).
extern "C" fn child<L: LockSet>() {
    // SAFETY: `prepare` took them all, so no thread was inside any at the fork, and
    // the child has no other thread.
    L::each(|l| unsafe { l.reset() });
    L::in_child();
}
