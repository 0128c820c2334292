//! Per-thread entries of a store, and what becomes of them when their thread exits.
//!
//! Each thread that uses a [`ThreadCached`](super::ThreadCached) pool gets a small
//! number, handed out lowest first and reused once the thread has exited, so the
//! numbers stay as few as the threads alive at once. A store keeps one entry per
//! number in a [`Table`] of buckets: bucket `b` holds `2^b` entries and is made when
//! the first thread whose number falls in it uses the store. The fast path reads the
//! thread's number from a thread-local that has no destructor (so it stays readable
//! while the thread's other thread-locals are destroyed) and the entry from the table:
//! no lock, no read-modify-write.
//!
//! When a thread exits, a thread-local guard hands each of its entries to a function
//! its store registered (the store empties the entry into its shared depot), for the
//! stores that are still alive, and then frees the number. From then on the thread
//! counts as exited, and [`assign`] returns `None` on it: a pool used from a
//! thread-local destructor that runs after the guard's works on its shared depot
//! directly. Either way, whatever order the runtime destroys thread-locals in, nothing
//! reaches a destroyed thread-local and nothing stays stranded with a dead thread.
//!
//! A store registers itself when it is made and withdraws when it is dropped; the
//! exiting thread looks its stores up in that registry under its lock, so an exit and
//! a drop of the same store never overlap.
//!
//! **Fork.** A forked child has only the thread that called `fork`, and a lock another
//! thread of the parent held at that moment would stay held there for ever: the
//! child's exit (which runs the forking thread's guard), a new pool, a new thread or a
//! depot exchange would wait on it. So, as glibc's malloc and handoff-alloc do, the
//! first store registers `pthread_atfork` handlers: before a fork the forking thread
//! takes the registry's lock, the lock of every registered store's depot
//! ([`ForkLock`]) and the numbers' lock, in the order every other path takes them
//! (registry, then a depot, then the numbers; no path takes them the other way), so
//! no other thread is inside any of them; after the fork the parent and the child
//! each release them. The child then uses the pools it inherited as its parent's
//! forking thread did (its magazines included) and makes new ones and new threads;
//! the slots in the magazines of the parent's other threads stay there, unused (those
//! threads do not exist in the child), as memory their threads' stacks held does. A
//! fork costs one lock per live `ThreadCached` store.
//!
//! Some of those critical sections allocate (the registry's map, a depot's vectors,
//! the free numbers' heap), so our prepare handler must run while the allocator is
//! still free: then a thread it waits for that is allocating inside one of our locks
//! gets its memory and leaves. glibc's `fork` takes its malloc locks after every
//! prepare handler; jemalloc and handoff-alloc register fork handlers of their own
//! when they first allocate, which is before the first store registers ours (it
//! allocates first), and prepare handlers run in the reverse order of registration,
//! so ours run before theirs.

use core::cell::{Cell, RefCell, UnsafeCell};
use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::sync::{MutexGuard, PoisonError};

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::sync::{lock, Mutex};

/// Buckets of a table: thread numbers up to `2^32 - 2`.
const BUCKETS: usize = 32;

/// Where a thread's entry lies in every store's table, or that it has none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    bucket: u32,
    index: u32,
}

/// The thread has not used a `ThreadCached` pool yet.
const UNASSIGNED: Slot = Slot {
    bucket: BUCKETS as u32,
    index: 0,
};

/// The thread's exit guard has run (or could not be registered): it has no entries.
const EXITED: Slot = Slot {
    bucket: BUCKETS as u32 + 1,
    index: 0,
};

impl Slot {
    /// The slot of thread number `id`: bucket `floor(log2(id + 1))`.
    fn of(id: usize) -> Option<Slot> {
        let n = id.checked_add(1)?;
        let bucket = n.ilog2();
        let index = n - (1 << bucket);
        ((bucket as usize) < BUCKETS).then_some(Slot {
            bucket,
            index: index as u32,
        })
    }
}

/// The thread numbers in use, and the freed ones to hand out again (lowest first).
struct Numbers {
    next: usize,
    free: BinaryHeap<Reverse<usize>>,
}

static NUMBERS: Mutex<Numbers> = Mutex::new(Numbers {
    next: 0,
    free: BinaryHeap::new(),
});

/// What the exit guard calls to empty one entry of a live store into its depot.
///
/// Arguments: the pointer the store registered, and the entry.
pub(crate) type Flush = unsafe fn(*const (), *const ());

struct Registered {
    store: *const (),
    flush: Flush,
    /// The store's depot lock, which the fork handlers hold across a fork.
    lock: *const ForkLock,
}

// SAFETY: the pointers are only used under the registry's lock, by `flush`, whose
// store is `Sync` (what it reaches is behind the store's own lock, or the calling
// thread's own entry), and by the fork handlers (`ForkLock`'s own contract).
unsafe impl Send for Registered {}

/// A store's depot lock: a `std::sync::Mutex<()>` whose guard the fork handlers can
/// keep from before a fork until after it, in the parent and in the child. (Not a
/// `Mutex<Depot<T>>`: a guard kept here cannot name `T`, which need not be `'static`.)
pub(crate) struct ForkLock {
    mutex: Mutex<()>,
    /// The guard `fork::prepare` took, until `fork::release` drops it. Touched only
    /// by the fork handlers, on the forking thread, while it holds the registry's lock.
    held: UnsafeCell<Option<MutexGuard<'static, ()>>>,
}

// SAFETY: `mutex` is a `Mutex`; `held` is touched only by the fork handlers, which
// run one fork at a time (each holds the registry's lock from `prepare` to `release`)
// on the forking thread, which takes and drops the guard it holds.
unsafe impl Sync for ForkLock {}

impl ForkLock {
    pub(crate) const fn new() -> Self {
        ForkLock {
            mutex: Mutex::new(()),
            held: UnsafeCell::new(None),
        }
    }

    /// Takes the lock. Its critical sections run no user code, so a poisoned lock (a
    /// panic while it was held, impossible short of an allocation failure, which
    /// aborts) is taken as it is.
    #[inline]
    pub(crate) fn lock(&self) -> MutexGuard<'_, ()> {
        self.mutex.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the lock for a fork and keeps the guard in `held`.
    ///
    /// # Safety
    /// Called by `fork::prepare` only, with the registry's lock held and `self` the
    /// lock of a registered store; `fork::release` drops the guard before that lock
    /// is released.
    #[cfg(unix)]
    unsafe fn hold(&self) {
        // SAFETY: the store this lock belongs to stays registered, so alive, until the
        // registry's lock is released (dropping a store unregisters it first, which
        // waits for that lock), and `release` drops the guard before that: the
        // reference outlives every use of the guard made from it.
        let mutex: &'static Mutex<()> = unsafe { &*ptr::addr_of!(self.mutex) };
        let guard = mutex.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: only the fork handlers touch `held`, one fork at a time (the caller's
        // contract).
        unsafe { *self.held.get() = Some(guard) };
    }

    /// Drops the guard [`hold`](Self::hold) kept.
    ///
    /// # Safety
    /// Called by `fork::release` only, on the thread that forked, for a lock
    /// `fork::prepare` held.
    #[cfg(unix)]
    unsafe fn release(&self) {
        // SAFETY: as in `hold`.
        drop(unsafe { (*self.held.get()).take() });
    }
}

/// The live stores, by key.
static REGISTRY: Mutex<BTreeMap<u64, Registered>> = Mutex::new(BTreeMap::new());
static NEXT_KEY: AtomicU64 = AtomicU64::new(0);

/// Registers a store: until [`unregister`], an exiting thread with an entry in it calls
/// `flush(store, entry)`, and a fork holds `depot_lock` across it. Returns the store's
/// key.
///
/// # Safety
/// `store` and `depot_lock` stay valid until [`unregister`] returns, and `flush` is
/// sound to call with `store` and with any entry the store passed to [`remember`] on
/// the exiting thread.
pub(crate) unsafe fn register(store: *const (), flush: Flush, depot_lock: *const ForkLock) -> u64 {
    // Before this thread or any other can take one of the locks a fork must hold:
    // every path to them (`assign`, `remember`, a depot) starts from a store.
    fork::install();
    // Relaxed: only a unique number is needed, which the RMW's order alone gives.
    let key = NEXT_KEY.fetch_add(1, Ordering::Relaxed);
    lock(&REGISTRY).insert(
        key,
        Registered {
            store,
            flush,
            lock: depot_lock,
        },
    );
    key
}

/// Withdraws a store: once this returns, no exiting thread calls its `flush`.
pub(crate) fn unregister(key: u64) {
    lock(&REGISTRY).remove(&key);
}

/// The calling thread's number and its entries, handed back when the thread exits.
struct Guard {
    id: Cell<usize>,
    /// (store key, entry) for every entry this thread made.
    entries: RefCell<Vec<(u64, *const ())>>,
}

std::thread_local! {
    /// This thread's slot. No destructor, so always readable.
    static SLOT: Cell<Slot> = const { Cell::new(UNASSIGNED) };
    static GUARD: Guard = const {
        Guard { id: Cell::new(0), entries: RefCell::new(Vec::new()) }
    };
}

impl Drop for Guard {
    fn drop(&mut self) {
        if SLOT.replace(EXITED) == UNASSIGNED {
            return;
        }
        let entries = core::mem::take(self.entries.get_mut());
        {
            let registry = lock(&REGISTRY);
            for (key, entry) in entries {
                if let Some(r) = registry.get(&key) {
                    // SAFETY: the store is registered, so alive until it unregisters,
                    // which waits for this lock; `entry` is this thread's entry in it
                    // (`remember`), which only this thread touches.
                    unsafe { (r.flush)(r.store, entry) };
                }
            }
        }
        let mut numbers = lock(&NUMBERS);
        numbers.free.push(Reverse(self.id.get()));
    }
}

/// The calling thread's slot (possibly [`UNASSIGNED`] or [`EXITED`], which no table
/// has an entry for).
#[inline(always)]
pub(crate) fn current() -> Slot {
    SLOT.with(Cell::get)
}

/// The calling thread's slot, giving it a number if it has none; `None` if the thread
/// has exited (its guard ran, or cannot be registered because its thread-locals are
/// being destroyed on a platform that does not allow registering then).
#[cold]
pub(crate) fn assign() -> Option<Slot> {
    let slot = current();
    if slot == EXITED {
        return None;
    }
    if slot != UNASSIGNED {
        return Some(slot);
    }
    // The guard first: a thread with a number always has a guard to give it back.
    if GUARD.try_with(|_| ()).is_err() {
        SLOT.set(EXITED);
        return None;
    }
    let id = {
        let mut numbers = lock(&NUMBERS);
        match numbers.free.pop() {
            Some(Reverse(id)) => id,
            None => {
                numbers.next += 1;
                numbers.next - 1
            }
        }
    };
    let Some(slot) = Slot::of(id) else {
        lock(&NUMBERS).free.push(Reverse(id));
        SLOT.set(EXITED);
        return None;
    };
    GUARD.with(|g| g.id.set(id));
    SLOT.set(slot);
    Some(slot)
}

/// Records that the calling thread made `entry` in the store registered as `key`, so
/// that its exit empties it. Called only while the thread has a number, so its guard is
/// alive ([`assign`] registers it first, and it marks the thread exited before it
/// empties anything).
pub(crate) fn remember(key: u64, entry: *const ()) {
    let recorded = GUARD.try_with(|g| {
        let mut entries = g.entries.borrow_mut();
        // Entries of stores dropped since are pruned whenever the list doubles.
        if entries.len() >= 8 && entries.len().is_power_of_two() {
            let registry = lock(&REGISTRY);
            entries.retain(|(k, _)| registry.contains_key(k));
        }
        entries.push((key, entry));
    });
    // Were it ever gone, the entry would only keep its slots from other threads: a
    // leak, not a fault, and no panic in what may be a thread-local destructor.
    debug_assert!(
        recorded.is_ok(),
        "a thread with a number lost its exit guard"
    );
}

#[cfg(unix)]
mod fork {
    use core::cell::UnsafeCell;
    use core::sync::atomic::{AtomicBool, Ordering};
    use std::collections::BTreeMap;
    use std::sync::{MutexGuard, PoisonError};

    use super::{Numbers, Registered, NUMBERS, REGISTRY};

    /// The locks a fork holds, between [`prepare`] and [`release`].
    struct ForkHeld {
        registry: Option<MutexGuard<'static, BTreeMap<u64, Registered>>>,
        numbers: Option<MutexGuard<'static, Numbers>>,
    }

    struct HeldCell(UnsafeCell<ForkHeld>);

    // SAFETY: touched only by the fork handlers, which run one fork at a time (each holds
    // the registry's lock from `prepare` to `release`), on the forking thread.
    unsafe impl Sync for HeldCell {}

    static HELD: HeldCell = HeldCell(UnsafeCell::new(ForkHeld {
        registry: None,
        numbers: None,
    }));

    /// Before a fork: takes the registry's lock, every registered store's depot lock and
    /// the numbers' lock, in that order (the order of every other path), so that no
    /// other thread is inside one of them when the child is made. Runs no user code,
    /// allocates nothing, never unwinds.
    pub(super) fn prepare() {
        let registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
        for r in registry.values() {
            // SAFETY: we hold the registry's lock, and `r.lock` is a registered store's
            // lock (`register`'s contract keeps it valid while registered); `release`
            // drops the guard before the registry's lock.
            unsafe { (*r.lock).hold() };
        }
        let numbers = NUMBERS.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: only the fork handlers touch `HELD`, and we hold the registry's lock.
        unsafe {
            *HELD.0.get() = ForkHeld {
                registry: Some(registry),
                numbers: Some(numbers),
            }
        };
    }

    /// After a fork, in the parent and in the child: releases what [`prepare`] took, in
    /// the reverse order. (In the child the forking thread is the only thread and the
    /// locks' owner; no thread there waits on them.)
    pub(super) fn release() {
        // SAFETY: `prepare` filled `HELD` on this thread just before the fork, and we
        // still hold the registry's lock through it.
        let held = unsafe {
            core::mem::replace(
                &mut *HELD.0.get(),
                ForkHeld {
                    registry: None,
                    numbers: None,
                },
            )
        };
        drop(held.numbers);
        if let Some(registry) = held.registry {
            for r in registry.values() {
                // SAFETY: `prepare` held this lock, with the registry unchanged since.
                unsafe { (*r.lock).release() };
            }
            drop(registry);
        }
    }

    struct Once(UnsafeCell<libc::pthread_once_t>);

    // SAFETY: the control word is only handed to `pthread_once`, which synchronises
    // every access to it.
    unsafe impl Sync for Once {}

    static ONCE: Once = Once(UnsafeCell::new(libc::PTHREAD_ONCE_INIT));
    static INSTALLED: AtomicBool = AtomicBool::new(false);

    /// Registers the fork handlers unless that is done (`pthread_once`, which glibc
    /// keeps safe against a fork during the registration itself).
    #[inline]
    pub(super) fn install() {
        // Miri has neither `fork` nor `pthread_atfork`; the handlers' bodies run there
        // in the unit test below, called directly.
        if cfg!(miri) {
            return;
        }
        if !INSTALLED.load(Ordering::Acquire) {
            // SAFETY: `ONCE` is a valid control word that lives for ever; `handlers`
            // takes no argument.
            unsafe { libc::pthread_once(ONCE.0.get(), handlers) };
        }
    }

    extern "C" fn handlers() {
        // SAFETY: the three handlers are `extern "C"` functions that live for ever,
        // allocate nothing and never unwind (a panic in one would abort). If the
        // system cannot register them (out of memory), a fork is what it was before.
        unsafe {
            libc::pthread_atfork(
                Some(prepare_handler),
                Some(release_handler),
                Some(release_handler),
            )
        };
        // Release (with `install`'s acquire): a thread that sees `true` skips
        // `pthread_once` and still finds the handlers registered before it goes on.
        INSTALLED.store(true, Ordering::Release);
    }

    extern "C" fn prepare_handler() {
        prepare();
    }

    extern "C" fn release_handler() {
        release();
    }
}

#[cfg(all(test, unix))]
mod fork_tests {
    use super::fork::{prepare, release};
    use crate::policy::ThreadCached;
    use crate::{Capacity, Pool, PoolConfig};
    use alloc::string::{String, ToString};
    use alloc::vec::Vec;
    use core::sync::atomic::Ordering;

    /// The fork handlers' bodies, called directly (as `fork` would, on this thread):
    /// between them every live store's depot is locked (a pool of another thread
    /// cannot exchange a magazine, and a thread cannot get a number), and after them
    /// everything works again. Under Miri this also checks the guards they keep.
    #[test]
    fn the_fork_handlers_hold_every_depot_and_release_it() {
        let config = PoolConfig {
            magazine: 1,
            ..PoolConfig::new(Capacity::Fixed(4))
        };
        let a = Pool::<u64, ThreadCached>::with_config(config).unwrap();
        let b = Pool::<String, ThreadCached>::with_config(config).unwrap();
        drop(a.try_alloc(1).unwrap());
        prepare();
        let released = std::sync::atomic::AtomicBool::new(false);
        let blocked = std::thread::scope(|s| {
            let t = s.spawn(|| {
                // A new thread needs a number (the numbers' lock) and then a depot:
                // both are held, so it gets through only after `release`, and then
                // sees the flag set before it.
                let x = b.try_alloc("x".to_string()).unwrap();
                drop(x);
                released.load(Ordering::SeqCst)
            });
            // Time for the thread to reach the lock (were it free, it would be through).
            std::thread::sleep(std::time::Duration::from_millis(50));
            released.store(true, Ordering::SeqCst);
            release();
            t.join().unwrap()
        });
        assert!(
            blocked,
            "a depot or the numbers were free while a fork held them"
        );
        // Released: this thread exchanges magazines with both depots again.
        let all: Vec<_> = (0..4).map(|i| a.try_alloc(i).unwrap()).collect();
        assert_eq!(all.iter().map(|o| **o).sum::<u64>(), 6);
        drop(all);
        a.flush();
        // A second fork after the first.
        prepare();
        release();
        drop(b.try_alloc("y".to_string()).unwrap());
    }
}

/// No `fork` without Unix: nothing to install.
#[cfg(not(unix))]
mod fork {
    pub(super) fn install() {}
}

/// One entry per thread number: buckets of `2^b` entries, made on first use.
pub(crate) struct Table<E> {
    buckets: [AtomicPtr<E>; BUCKETS],
}

impl<E> Table<E> {
    pub(crate) const fn new() -> Self {
        Table {
            buckets: [const { AtomicPtr::new(ptr::null_mut()) }; BUCKETS],
        }
    }

    /// The entry of `slot`, if its bucket has been made.
    #[inline(always)]
    pub(crate) fn get(&self, slot: Slot) -> Option<&E> {
        let bucket = self
            .buckets
            .get(slot.bucket as usize)?
            .load(Ordering::Acquire);
        if bucket.is_null() {
            return None;
        }
        // SAFETY: bucket `b` holds `2^b` initialised entries and `index < 2^b`
        // (`Slot::of`); buckets are freed only with the table.
        Some(unsafe { &*bucket.add(slot.index as usize) })
    }

    /// The entry of `slot` (which [`assign`] returned), making its bucket with `new`
    /// entries if it does not exist yet.
    pub(crate) fn get_or_make(&self, slot: Slot, new: impl Fn() -> E) -> &E {
        if let Some(e) = self.get(slot) {
            return e;
        }
        let b = slot.bucket as usize;
        let fresh: Box<[E]> = (0..1usize << b).map(|_| new()).collect();
        let fresh = Box::into_raw(fresh).cast::<E>();
        // Release on success: the bucket's entries are initialised before any thread's
        // acquire load in `get` sees it. Acquire on failure (and in the success's
        // AcqRel, for the `get` below): the winner's entries are visible to us.
        if self.buckets[b]
            .compare_exchange(ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // Another thread made it first.
            // SAFETY: `fresh` is the box made above, of `2^b` entries, never shared.
            drop(unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(fresh, 1 << b)) });
        }
        self.get(slot).expect("the bucket exists now")
    }
}

impl<E> Drop for Table<E> {
    fn drop(&mut self) {
        for (b, bucket) in self.buckets.iter_mut().enumerate() {
            let p = *bucket.get_mut();
            if !p.is_null() {
                // SAFETY: a bucket made by `get_or_make`: a box of `2^b` entries.
                drop(unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(p, 1 << b)) });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_map_to_distinct_slots_in_doubling_buckets() {
        let slots: Vec<Slot> = (0..1000).map(|id| Slot::of(id).unwrap()).collect();
        assert_eq!(
            slots[0],
            Slot {
                bucket: 0,
                index: 0
            }
        );
        assert_eq!(
            slots[1],
            Slot {
                bucket: 1,
                index: 0
            }
        );
        assert_eq!(
            slots[2],
            Slot {
                bucket: 1,
                index: 1
            }
        );
        assert_eq!(
            slots[3],
            Slot {
                bucket: 2,
                index: 0
            }
        );
        for s in &slots {
            assert!(s.index < 1 << s.bucket);
        }
        let distinct: std::collections::HashSet<_> =
            slots.iter().map(|s| (s.bucket, s.index)).collect();
        assert_eq!(distinct.len(), slots.len());
        #[cfg(target_pointer_width = "64")]
        {
            assert!(Slot::of((1 << 32) - 2).is_some());
            assert!(Slot::of((1 << 32) - 1).is_none());
        }
        assert!(Slot::of(usize::MAX).is_none());
    }

    #[test]
    fn a_table_has_no_entry_for_unassigned_or_exited_threads() {
        let t = Table::<u8>::new();
        let s = Slot::of(5).unwrap();
        assert!(t.get(s).is_none());
        assert_eq!(*t.get_or_make(s, || 7), 7);
        assert_eq!(*t.get(s).unwrap(), 7);
        assert!(t.get(UNASSIGNED).is_none());
        assert!(t.get(EXITED).is_none());
    }
}
