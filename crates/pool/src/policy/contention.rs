//! How often the shared single-head policies found their one hot word taken: failed
//! compare-and-swaps of [`LockFree`](super::LockFree)'s head, and lock acquisitions
//! of [`Locked`](super::Locked)'s mutex that found it held. Counted per thread, on the
//! slow path only, so that counting adds no shared write to the path it explains.
//! Without `std` (and under loom) nothing is counted and [`contention`] reads zeros.

/// One thread's contention counts since it started (see [`contention`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Contention {
    /// Compare-and-swaps of a `LockFree` pool's head that failed because another
    /// thread changed it first (each is one more trip of the head's cache line).
    pub failed_swaps: u64,
    /// Acquisitions of a `Locked` pool's mutex that found it held and had to wait.
    pub waited_locks: u64,
}

impl Contention {
    /// The counts added since `earlier` (a reading of the same thread).
    pub fn since(self, earlier: Contention) -> Contention {
        Contention {
            failed_swaps: self.failed_swaps.wrapping_sub(earlier.failed_swaps),
            waited_locks: self.waited_locks.wrapping_sub(earlier.waited_locks),
        }
    }
}

#[cfg(all(feature = "std", not(loom)))]
std::thread_local! {
    static COUNTS: core::cell::Cell<Contention> = const {
        core::cell::Cell::new(Contention { failed_swaps: 0, waited_locks: 0 })
    };
}

/// The calling thread's counts so far, over every pool it used.
///
/// ```
/// use handoff_pool::policy::{contention, LockFree};
/// use handoff_pool::{Capacity, Pool};
/// let before = contention();
/// let pool = Pool::<u64, LockFree>::new(Capacity::Fixed(4)).unwrap();
/// let x = pool.try_alloc(7).unwrap();
/// drop(x); // back to the pool
/// // One thread alone never finds the head taken.
/// assert_eq!(contention().since(before).failed_swaps, 0);
/// ```
pub fn contention() -> Contention {
    #[cfg(all(feature = "std", not(loom)))]
    return COUNTS.with(|c| c.get());
    #[cfg(not(all(feature = "std", not(loom))))]
    return Contention::default();
}

/// Counts one failed compare-and-swap of a head.
#[cold]
#[inline(never)]
pub(crate) fn failed_swap() {
    #[cfg(all(feature = "std", not(loom)))]
    COUNTS.with(|c| {
        let mut v = c.get();
        v.failed_swaps += 1;
        c.set(v);
    });
}

/// Counts one lock acquisition that had to wait.
#[cfg(all(feature = "std", not(loom)))]
#[cold]
#[inline(never)]
pub(crate) fn waited_lock() {
    COUNTS.with(|c| {
        let mut v = c.get();
        v.waited_locks += 1;
        c.set(v);
    });
}
