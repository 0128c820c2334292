//! The thread-safety policies of [`Pool`](crate::Pool) (the pool-policy write-up's NONE / MUTEX /
//! LOCKFREE, plus per-thread caches), chosen by a type parameter so that a pool pays
//! only for the synchronisation it names:
//!
//! | policy | free list | `Pool` is `Sync` | one alloc + release |
//! |---|---|---|---|
//! | [`SingleThreaded`] | a plain stack of slot addresses | no | two plain stack operations |
//! | [`Locked`] | the same stack behind a `std::sync::Mutex` | yes | two lock/unlock pairs |
//! | [`LockFree`] | a Treiber stack of slot indices, its head tagged with a generation (ABA-safe) | yes | two compare-and-swaps |
//! | [`ThreadCached`] | per-thread magazines in front of a shared depot of whole magazines | yes | two stack operations on the thread's own magazine; one lock per magazine exchanged |
//!
//! Growth is the same for every policy ([`Capacity`]): a fixed number of slots, or a
//! first block and then, on exhaustion, one more block as large as the pool so far.

mod blocks;
pub(crate) mod contention;
mod lock_free;
#[cfg(any(feature = "std", loom))]
mod locked;
#[cfg(all(feature = "std", not(loom)))]
mod per_thread;
mod single;
#[cfg(any(feature = "std", loom))]
mod thread_cached;

use core::ptr::NonNull;

use crate::{ConfigError, PoolConfig};

pub use contention::{contention, Contention};
pub use lock_free::LockFreeStore;
#[cfg(any(feature = "std", loom))]
pub use locked::LockedStore;
pub use single::SingleStore;
#[cfg(any(feature = "std", loom))]
pub use thread_cached::CachedStore;
#[cfg(loom)]
#[doc(hidden)]
pub use thread_cached::LoomCache;

/// The most slots a pool can hold (its slots are numbered with 32-bit indices).
pub const MAX_SLOTS: usize = 1 << 31;

/// Magazine size of a [`ThreadCached`] pool unless given: 64 slots, so one lock in 64
/// allocations or releases at most.
pub const DEFAULT_MAGAZINE: usize = 64;

/// The largest magazine a pool accepts: 65536 slots. A thread holds up to two
/// magazines' worth of free slots, so a bigger one would strand most of a pool in
/// one thread's cache. Every store refuses it with [`ConfigError::MagazineTooLarge`]
/// before it allocates anything, whether made by
/// [`Pool::with_config`](crate::Pool::with_config) or through [`Store::new`].
pub const MAX_MAGAZINE: usize = 1 << 16;

/// How many slots a pool has, and whether it grows.
///
/// ```
/// use handoff_pool::{Capacity, Pool, policy::SingleThreaded};
/// let fixed = Pool::<u64, SingleThreaded>::new(Capacity::Fixed(2)).unwrap();
/// let _a = fixed.try_alloc(1).unwrap();
/// let _b = fixed.try_alloc(2).unwrap();
/// assert!(fixed.try_alloc(3).is_err());
///
/// let growing = Pool::<u64, SingleThreaded>::new(Capacity::Grow { first_block: 2 }).unwrap();
/// let all: Vec<_> = (0..5).map(|i| growing.try_alloc(i).unwrap()).collect();
/// assert_eq!(growing.capacity(), 8); // blocks of 2, 2 and 4
/// # drop(all);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capacity {
    /// Exactly this many slots, made at construction. When every one is in use,
    /// allocating hands the value back in [`Exhausted`](crate::Exhausted).
    Fixed(usize),
    /// A first block of `first_block` slots (rounded up to a power of two) made at
    /// construction; on exhaustion the pool adds a block as large as itself, so it
    /// doubles, up to [`MAX_SLOTS`]. Slots are never given back to the system
    /// before the pool is dropped.
    Grow {
        /// Slots of the first block.
        first_block: usize,
    },
}

impl Capacity {
    /// The first block's size and whether more may follow; checks the request.
    pub(crate) fn first_block<T>(self) -> Result<(usize, bool), ConfigError> {
        if size_of::<T>() == 0 {
            return Err(ConfigError::ZeroSized);
        }
        let (n, grows) = match self {
            Capacity::Fixed(0) => return Err(ConfigError::Zero("slots")),
            Capacity::Grow { first_block: 0 } => return Err(ConfigError::Zero("first_block")),
            Capacity::Fixed(n) => (n, false),
            Capacity::Grow { first_block } => (
                first_block
                    .checked_next_power_of_two()
                    .unwrap_or(usize::MAX),
                true,
            ),
        };
        if n > MAX_SLOTS {
            return Err(ConfigError::TooLarge { slots: n });
        }
        Ok((n, grows))
    }
}

/// The size of the block a growing pool of `total` slots adds next, or `None` at
/// [`MAX_SLOTS`]: as large as the pool so far (blocks of B, B, 2B, 4B, ...).
#[inline]
pub(crate) fn next_block(total: usize) -> Option<usize> {
    (total < MAX_SLOTS).then_some(total)
}

mod sealed {
    pub trait Sealed {}
}

/// A thread-safety policy: one of [`SingleThreaded`], [`Locked`], [`LockFree`] and
/// [`ThreadCached`]. Sealed: the pool's soundness rests on each store's code.
pub trait Policy: sealed::Sealed + 'static {
    /// The free-slot store this policy uses for objects of `T`.
    type Store<T>: Store<T>;
    /// The policy's name in tables and charts.
    const NAME: &'static str;
}

/// A policy's free-slot store. Implemented only inside this crate; its methods are
/// the pool's internals and are not meant to be called directly.
///
/// # Safety
/// `pop` hands out each free slot to one caller only, until that slot comes back
/// through `push`; the slots of a store stay allocated until it is dropped.
pub unsafe trait Store<T>: Sized {
    /// What a handle carries besides the slot's address to give it back quickly.
    type Token: Copy;
    /// A store as `config` asks: its capacity, its memory placed by its placement
    /// (see [`crate::numa`]), and its magazine size where the policy has per-thread
    /// caches (only [`ThreadCached`] reads it). Every store checks all three, as
    /// [`Pool::with_config`](crate::Pool::with_config) documents, and refuses a bad
    /// one with its [`ConfigError`] before allocating.
    ///
    /// ```
    /// use handoff_pool::policy::{CachedStore, Store};
    /// use handoff_pool::{ConfigError, PoolConfig};
    /// let huge = PoolConfig { magazine: 1 << 40, ..PoolConfig::default() };
    /// assert_eq!(
    ///     <CachedStore<u64> as Store<u64>>::new(&huge).err(),
    ///     Some(ConfigError::MagazineTooLarge { magazine: 1 << 40 })
    /// );
    /// ```
    fn new(config: &PoolConfig) -> Result<Self, ConfigError>;
    /// A free slot (uninitialised), growing on exhaustion if allowed; `None` if
    /// every slot is in use and the pool cannot grow.
    fn pop(&self) -> Option<(NonNull<T>, Self::Token)>;
    /// Gives a slot back.
    ///
    /// # Safety
    /// `slot` and `token` came from `pop` on this store, the slot holds no live
    /// value, and it is given back once.
    unsafe fn push(&self, slot: NonNull<T>, token: Self::Token);
    /// Slots made so far.
    fn capacity(&self) -> usize;
    /// Slots handed out and not given back, where the store can tell without costing
    /// the hot path anything (a count of its free stack); `None` where it would
    /// (the lock-free stack has no count, and a thread-cached pool's free slots are
    /// spread over every thread's magazines).
    fn in_use(&self) -> Option<usize> {
        None
    }
}

/// The pool-policy write-up's NONE: no synchronisation at all. The pool is `Send` but not
/// `Sync`, so the compiler keeps it on one thread at a time, and its objects too.
#[derive(Clone, Copy, Debug)]
pub struct SingleThreaded;

/// The pool-policy write-up's MUTEX: one `std::sync::Mutex` around the free stack.
#[cfg(any(feature = "std", loom))]
#[derive(Clone, Copy, Debug)]
pub struct Locked;

/// The pool-policy write-up's LOCKFREE, made ABA-safe: a Treiber stack of 32-bit slot indices
/// whose head carries a 32-bit generation bumped on every change, so a thread that
/// read an old head cannot swap it in after others popped and pushed the same slot.
/// The links live beside the slots, as atomics, so a stale reader never races with
/// the object written into a slot it no longer owns.
#[derive(Clone, Copy, Debug)]
pub struct LockFree;

/// Per-thread magazines (fixed-size stacks of free slots) in front of a shared depot
/// that exchanges whole magazines under a lock, as in Bonwick's magazine allocator
/// and the thread caches of tcmalloc, jemalloc and folly. A thread allocates from and
/// releases into its own two magazines with no atomic read-modify-write; it takes the
/// lock once per magazine it fills or empties. An object may be released on another
/// thread: the slot joins that thread's magazine and reaches the depot when it is full.
/// When a thread exits, its magazines go to the depot; the pool may be used from
/// thread-local destructors, before or after that happens (after it, directly at the
/// depot). That hand-over runs in the thread's thread-local destructors, which
/// `std::thread::scope` does not wait for: right after a scope returns, its threads'
/// slots may still be in their magazines. An allocation that finds the pool exhausted
/// never waits ([`Pool::try_alloc`](crate::Pool::try_alloc) refuses at once); a
/// caller that can wait for such threads says how long, with
/// [`Pool::try_alloc_within`](crate::Pool::try_alloc_within). Threads that live on
/// keep their magazines: size the pool for `threads × 2 × magazine` slots on top of
/// what is live, or call [`Pool::flush`](crate::Pool::flush) on those threads.
/// (Until 2026-11-29 an exhausted allocation waited up to 5 ms by itself.)
#[cfg(any(feature = "std", loom))]
#[derive(Clone, Copy, Debug)]
pub struct ThreadCached;

impl sealed::Sealed for SingleThreaded {}
impl Policy for SingleThreaded {
    type Store<T> = SingleStore<T>;
    const NAME: &'static str = "single_threaded";
}

#[cfg(any(feature = "std", loom))]
impl sealed::Sealed for Locked {}
#[cfg(any(feature = "std", loom))]
impl Policy for Locked {
    type Store<T> = LockedStore<T>;
    const NAME: &'static str = "locked";
}

impl sealed::Sealed for LockFree {}
impl Policy for LockFree {
    type Store<T> = LockFreeStore<T>;
    const NAME: &'static str = "lock_free";
}

#[cfg(any(feature = "std", loom))]
impl sealed::Sealed for ThreadCached {}
#[cfg(any(feature = "std", loom))]
impl Policy for ThreadCached {
    type Store<T> = CachedStore<T>;
    const NAME: &'static str = "thread_cached";
}
