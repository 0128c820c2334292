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

use core::cell::{Cell, RefCell};
use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

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
}

// SAFETY: the pointer is only used under the registry's lock, by `flush`, whose
// store is `Sync` (what it reaches is behind the store's own lock, or the calling
// thread's own entry).
unsafe impl Send for Registered {}

/// The live stores, by key.
static REGISTRY: Mutex<BTreeMap<u64, Registered>> = Mutex::new(BTreeMap::new());
static NEXT_KEY: AtomicU64 = AtomicU64::new(0);

/// Registers a store: until [`unregister`], an exiting thread with an entry in it calls
/// `flush(store, entry)`. Returns the store's key.
///
/// # Safety
/// `store` stays valid for `flush` until [`unregister`] returns, and `flush` is sound
/// to call with it and with any entry the store passed to [`remember`] on the exiting
/// thread.
pub(crate) unsafe fn register(store: *const (), flush: Flush) -> u64 {
    let key = NEXT_KEY.fetch_add(1, Ordering::Relaxed);
    lock(&REGISTRY).insert(key, Registered { store, flush });
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
