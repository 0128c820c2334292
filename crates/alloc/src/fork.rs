//! Fork safety. A forked child has only the thread that called `fork`; a lock another
//! thread of the parent held at that moment would stay held in the child forever. So,
//! as glibc, jemalloc and mimalloc do, the allocator registers `pthread_atfork`
//! handlers: before a fork the forking thread takes every lock the allocator has (the
//! arena's reservation, the shared heap, the cache of freed mappings), so that no
//! other thread is inside one of them; after it, the parent releases them and the child
//! marks them free.
//!
//! The handlers are registered (once, through `pthread_once`, which glibc makes safe
//! against a fork during the registration itself) before any thread can take one of
//! those locks: on the way to reserving the arena and before the first big block.
//!
//! Heaps owned by the parent's other threads stay claimed in the child (their owners
//! do not exist there, and their state may be half-changed), so the child never
//! touches them: blocks of theirs the child frees go to their remote-free stacks, as
//! any remote free does, and are simply never reused. The child claims heaps of its own.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};

struct Once(UnsafeCell<libc::pthread_once_t>);

// SAFETY: the control word is only handed to `pthread_once`, which synchronises every
// access to it.
unsafe impl Sync for Once {}

static ONCE: Once = Once(UnsafeCell::new(libc::PTHREAD_ONCE_INIT));
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// Registers the fork handlers unless that is done: call it before taking any of the
/// allocator's locks for the first time.
#[inline]
pub(crate) fn register() {
    if !REGISTERED.load(Ordering::Acquire) {
        register_slow();
    }
}

#[cold]
#[inline(never)]
fn register_slow() {
    // SAFETY: `ONCE` is a valid control word that lives forever; `register_handlers`
    // takes no argument.
    unsafe { libc::pthread_once(ONCE.0.get(), register_handlers) };
}

extern "C" fn register_handlers() {
    // SAFETY: the three handlers are `extern "C"` functions that live forever and
    // neither unwind nor allocate. If the system cannot register them (out of memory),
    // forks are as unsafe as they were before this module; nothing else changes.
    unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
    // Release (with `register`'s acquire): a thread that sees `true` skips
    // `pthread_once` and still finds the handlers registered before it goes on.
    REGISTERED.store(true, Ordering::Release);
}

/// Before a fork: take every lock, so that no other thread is inside one.
unsafe extern "C" fn prepare() {
    crate::heap::lock_for_fork();
    crate::big::lock_for_fork();
    crate::large::lock_for_fork();
}

/// In the parent after a fork: release them.
unsafe extern "C" fn parent() {
    // SAFETY: `prepare` took them all on this thread, just before the fork.
    unsafe {
        crate::large::unlock_after_fork();
        crate::big::unlock_after_fork();
        crate::heap::unlock_after_fork();
    }
}

/// In the child after a fork: mark them free (nobody there waits for them).
unsafe extern "C" fn child() {
    // SAFETY: `prepare` took them all, so no thread was inside any at the fork, and
    // the child has no other thread.
    unsafe {
        crate::large::reset_after_fork();
        crate::big::reset_after_fork();
        crate::heap::reset_after_fork();
    }
}
