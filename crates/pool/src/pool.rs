//! [`Pool`]: a fixed-size object pool whose thread-safety policy is a type parameter.

use core::fmt;
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;

use crate::numa::Placement;
use crate::policy::{Capacity, Policy, SingleThreaded, Store, DEFAULT_MAGAZINE, MAX_MAGAZINE};
use crate::sync::{AtomicU64, Ordering};
use crate::{ConfigError, Exhausted, Foreign};

/// A pool of objects of one type, with the thread-safety [`Policy`] `P` (the
/// pool-policy write-up's NONE / MUTEX / LOCKFREE, and per-thread caches) chosen at
/// compile time:
///
/// * `Pool<T, SingleThreaded>` (the default) is a bare free stack; it is `Send` but
///   not `Sync`, so it and its objects stay on one thread.
/// * `Pool<T, Locked>`, `Pool<T, LockFree>` and `Pool<T, ThreadCached>` are `Sync`
///   (for `T: Send`): share them by reference (`std::thread::scope`, a `static`, an
///   `Arc`), allocate on any thread and release on any other.
///
/// Objects come out as [`Pooled`] handles that put the object back when dropped, or as
/// [`PooledRaw`] handles for loops that release explicitly ([`Pool::release`],
/// [`Pool::free`]). Both borrow the pool, so neither can outlive it; forgetting one
/// (`mem::forget`) leaks its object and keeps its slot out of use, nothing worse.
///
/// ```
/// use handoff_pool::{policy::LockFree, Capacity, Pool};
///
/// #[derive(Default)]
/// struct Order { id: u64, px: f64, qty: i32 }
///
/// let pool = Pool::<Order, LockFree>::new(Capacity::Fixed(1024)).unwrap();
/// std::thread::scope(|s| {
///     let (tx, rx) = std::sync::mpsc::channel();
///     let pool = &pool;
///     s.spawn(move || {
///         for id in 0..100 {
///             tx.send(pool.try_alloc(Order { id, ..Order::default() }).unwrap()).unwrap();
///         }
///     });
///     s.spawn(move || {
///         for order in rx {
///             assert!(order.id < 100); // checked, then back to the pool on drop
///         }
///     });
/// });
/// assert_eq!(pool.capacity(), 1024);
/// ```
pub struct Pool<T, P: Policy = SingleThreaded> {
    pub(crate) store: P::Store<T>,
    exhausted: AtomicU64,
    _policy: PhantomData<P>,
}

/// How to make a [`Pool`] ([`Pool::with_config`]). [`PoolConfig::new`] gives the
/// defaults for a capacity; set the other fields with struct-update syntax.
///
/// ```
/// use handoff_pool::{numa::Placement, Capacity, PoolConfig};
/// let config = PoolConfig { placement: Placement::Interleave, ..PoolConfig::new(Capacity::Fixed(1 << 20)) };
/// assert_eq!(config.magazine, handoff_pool::policy::DEFAULT_MAGAZINE);
/// assert_eq!(PoolConfig::default(), PoolConfig::new(Capacity::Fixed(1024)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolConfig {
    /// How many slots, and whether the pool grows.
    pub capacity: Capacity,
    /// Where the pool's memory goes (see [`crate::numa`]); [`Placement::Default`]:
    /// the global allocator's memory.
    pub placement: Placement,
    /// Slots per magazine of a [`ThreadCached`](crate::policy::ThreadCached) pool's
    /// per-thread cache, 1 to [`MAX_MAGAZINE`]; the other policies have no cache and
    /// ignore it. Default [`DEFAULT_MAGAZINE`].
    pub magazine: usize,
}

impl PoolConfig {
    /// `capacity`, the default placement and the default magazine size.
    pub const fn new(capacity: Capacity) -> PoolConfig {
        PoolConfig {
            capacity,
            placement: Placement::Default,
            magazine: DEFAULT_MAGAZINE,
        }
    }

    /// The checks of the settings every store makes before it allocates anything: the
    /// magazine is 1 to [`MAX_MAGAZINE`] whatever the policy. (The capacity is checked
    /// where the first block is sized, the placement where memory is placed.) Every
    /// [`Store::new`](crate::policy::Store::new) calls it, so a store made through the
    /// trait refuses what [`Pool::with_config`] refuses.
    pub(crate) fn check_magazine(&self) -> Result<(), ConfigError> {
        if self.magazine == 0 {
            return Err(ConfigError::Zero("magazine"));
        }
        if self.magazine > MAX_MAGAZINE {
            return Err(ConfigError::MagazineTooLarge {
                magazine: self.magazine,
            });
        }
        Ok(())
    }
}

impl Default for PoolConfig {
    /// 1024 fixed slots, the default placement and magazine size.
    fn default() -> PoolConfig {
        PoolConfig::new(Capacity::Fixed(1024))
    }
}

/// What a [`Pool`] holds and has refused so far ([`Pool::stats`]).
/// `#[non_exhaustive]`: more counters may come.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStats {
    /// Slots made so far (the fixed size, or what a growing pool has grown to).
    pub capacity: usize,
    /// Allocations refused because every slot was in use (and the pool could not
    /// grow).
    pub exhausted: u64,
    /// Objects alive now (handed out, not given back): `Some` for
    /// [`SingleThreaded`](crate::policy::SingleThreaded) and
    /// [`Locked`](crate::policy::Locked) pools, which count their free stack; `None`
    /// for [`LockFree`](crate::policy::LockFree) and
    /// [`ThreadCached`](crate::policy::ThreadCached) ones, where a count would cost
    /// every allocation a contended atomic (the lock-free stack has no length, and a
    /// thread-cached pool's free slots sit in every thread's magazines).
    pub in_use: Option<usize>,
}

impl<T, P: Policy> Pool<T, P> {
    /// A pool of `capacity` ([`Capacity::Fixed`] or [`Capacity::Grow`]) with the
    /// other settings of [`PoolConfig::new`]; the first block is allocated now.
    ///
    /// ```
    /// use handoff_pool::{Capacity, ConfigError, Pool};
    /// assert_eq!(Pool::<u64>::new(Capacity::Fixed(0)).unwrap_err(), ConfigError::Zero("slots"));
    /// assert_eq!(Pool::<()>::new(Capacity::Fixed(8)).unwrap_err(), ConfigError::ZeroSized);
    /// ```
    pub fn new(capacity: Capacity) -> Result<Self, ConfigError> {
        Self::with_config(PoolConfig::new(capacity))
    }

    /// A pool as `config` says: capacity, placement of its memory on a NUMA node (a
    /// node that is not online is [`ConfigError::Numa`]) and, for a
    /// [`ThreadCached`](crate::policy::ThreadCached) pool, the magazine size (every
    /// policy checks that it is 1 to [`MAX_MAGAZINE`]; only `ThreadCached` reads it).
    ///
    /// ```
    /// use handoff_pool::{numa::Placement, policy::ThreadCached, Capacity, ConfigError, Pool, PoolConfig};
    /// let config = PoolConfig { magazine: 32, ..PoolConfig::new(Capacity::Grow { first_block: 256 }) };
    /// let pool = Pool::<u64, ThreadCached>::with_config(config).unwrap();
    /// assert_eq!(pool.capacity(), 256);
    ///
    /// let bad = PoolConfig { magazine: 0, ..PoolConfig::new(Capacity::Fixed(64)) };
    /// assert_eq!(Pool::<u64, ThreadCached>::with_config(bad).unwrap_err(), ConfigError::Zero("magazine"));
    /// let huge = PoolConfig { magazine: usize::MAX, ..PoolConfig::new(Capacity::Fixed(64)) };
    /// assert_eq!(
    ///     Pool::<u64, ThreadCached>::with_config(huge).unwrap_err(),
    ///     ConfigError::MagazineTooLarge { magazine: usize::MAX }
    /// );
    /// # if cfg!(miri) { return; }
    /// let placed = PoolConfig { placement: Placement::Local, ..PoolConfig::new(Capacity::Fixed(4096)) };
    /// let pool = Pool::<u64>::with_config(placed).unwrap();
    /// assert_eq!(*pool.try_alloc(7).unwrap(), 7);
    /// ```
    pub fn with_config(config: PoolConfig) -> Result<Self, ConfigError> {
        // Every store checks the whole config itself (`PoolConfig::check_magazine` and
        // its capacity), so a store made through `Store::new` refuses the same.
        Ok(Pool {
            store: P::Store::<T>::new(&config)?,
            exhausted: AtomicU64::new(0),
            _policy: PhantomData,
        })
    }

    /// Moves `value` into a free slot (growing the pool if it may and must), or hands
    /// it back in [`Exhausted`] (counted in [`stats`](Self::stats)) if every slot is in
    /// use.
    ///
    /// ```
    /// let pool = handoff_pool::Pool::<String>::new(handoff_pool::Capacity::Fixed(1)).unwrap();
    /// let a = pool.try_alloc("buy 100".to_string()).unwrap();
    /// assert_eq!(pool.try_alloc("sell".to_string()).unwrap_err().into_inner(), "sell");
    /// drop(a); // back in the pool
    /// assert_eq!(*pool.try_alloc("sell".to_string()).unwrap(), "sell");
    /// ```
    #[inline(always)]
    pub fn try_alloc(&self, value: T) -> Result<Pooled<'_, T, P>, Exhausted<T>> {
        self.try_alloc_raw(value).map(|raw| Pooled { raw })
    }

    /// As [`try_alloc`](Self::try_alloc), but when every slot is in use, tries again,
    /// yielding the CPU between tries (`std::thread::yield_now`), until another thread
    /// gives one back or `timeout` has passed; then hands `value` back in [`Exhausted`]
    /// (counted once). The one call of the pools that waits, and only as long as its
    /// caller says; `Duration::ZERO` makes one try. What it is for: a
    /// [`ThreadCached`](crate::policy::ThreadCached) pool right after a
    /// `std::thread::scope`, whose threads hand their magazines back in their
    /// thread-local destructors, which the scope does not wait for (a few milliseconds
    /// are enough unless the machine is busy), or a consumer that releases objects
    /// while this thread allocates. (A `Pool<T, SingleThreaded>` is not `Sync`: no other
    /// thread can give a slot back, so waiting only spends the timeout; use
    /// [`try_alloc`](Self::try_alloc).)
    ///
    /// ```
    /// use handoff_pool::policy::ThreadCached;
    /// use handoff_pool::{Capacity, Pool};
    /// use std::time::Duration;
    /// let pool = Pool::<u64, ThreadCached>::new(Capacity::Fixed(1)).unwrap();
    /// std::thread::scope(|s| {
    ///     s.spawn(|| drop(pool.try_alloc(1).unwrap())); // its magazine keeps the slot
    /// });
    /// // The scope's thread may not have handed its magazine back yet: wait up to 1 s.
    /// let o = pool.try_alloc_within(2, Duration::from_secs(1)).unwrap();
    /// assert_eq!(*o, 2);
    /// ```
    #[cfg(feature = "std")]
    pub fn try_alloc_within(
        &self,
        value: T,
        timeout: std::time::Duration,
    ) -> Result<Pooled<'_, T, P>, Exhausted<T>> {
        // Set at the first failure (a first try that succeeds reads no clock); none
        // for a timeout too long to add: it waits as long as it takes.
        let mut deadline = None;
        loop {
            if let Some((ptr, token)) = self.store.pop() {
                // SAFETY: a slot just popped holds no value and is ours alone.
                unsafe { ptr.as_ptr().write(value) };
                let raw = PooledRaw {
                    ptr,
                    token,
                    pool: self,
                };
                return Ok(Pooled { raw });
            }
            let now = std::time::Instant::now();
            if (*deadline.get_or_insert_with(|| now.checked_add(timeout))).is_some_and(|d| now >= d)
            {
                self.count_exhausted();
                return Err(Exhausted(value));
            }
            std::thread::yield_now();
        }
    }

    /// As [`try_alloc`](Self::try_alloc), but the handle does not release the object
    /// when dropped: give it back with [`release`](Self::release) or
    /// [`free`](Self::free). A `PooledRaw` that is simply dropped leaks its object and
    /// slot (like `mem::forget`).
    ///
    /// ```
    /// let pool = handoff_pool::Pool::<u64>::new(handoff_pool::Capacity::Fixed(4)).unwrap();
    /// let raw = pool.try_alloc_raw(7).unwrap();
    /// assert_eq!(*raw, 7);
    /// assert_eq!(pool.release(raw).unwrap(), 7);
    /// ```
    #[inline(always)]
    pub fn try_alloc_raw(&self, value: T) -> Result<PooledRaw<'_, T, P>, Exhausted<T>> {
        let Some((ptr, token)) = self.store.pop() else {
            // The value stays out of the cold call: passing it would pin it to the
            // stack on the hot path too.
            self.count_exhausted();
            return Err(Exhausted(value));
        };
        // SAFETY: a slot just popped holds no value and is ours alone.
        unsafe { ptr.as_ptr().write(value) };
        Ok(PooledRaw {
            ptr,
            token,
            pool: self,
        })
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn count_exhausted(&self) {
        // Relaxed: a count for statistics; nothing is published through it.
        self.exhausted.fetch_add(1, Ordering::Relaxed);
    }

    /// Takes the object out of its slot and frees the slot. An object of another pool
    /// is handed back untouched in [`Foreign`].
    ///
    /// ```
    /// use handoff_pool::{Capacity, Pool};
    /// let a = Pool::<u8>::new(Capacity::Fixed(1)).unwrap();
    /// let b = Pool::<u8>::new(Capacity::Fixed(1)).unwrap();
    /// let raw = a.try_alloc_raw(1).unwrap();
    /// let raw = b.release(raw).unwrap_err().into_inner();
    /// assert_eq!(a.release(raw).unwrap(), 1);
    /// ```
    #[inline(always)]
    pub fn release<'a>(&self, raw: PooledRaw<'a, T, P>) -> Result<T, Foreign<PooledRaw<'a, T, P>>> {
        if !core::ptr::eq(raw.pool, self) {
            return Err(Foreign(raw));
        }
        let raw = ManuallyDrop::new(raw);
        // SAFETY: the `PooledRaw` owned the live value; it is read out once and the
        // handle is not used again.
        let value = unsafe { raw.ptr.as_ptr().read() };
        // SAFETY: the slot came from this pool's store (checked above) and is now
        // empty; the handle that held it is gone.
        unsafe { self.store.push(raw.ptr, raw.token) };
        Ok(value)
    }

    /// Drops the object and frees its slot (also if the object's destructor panics).
    /// An object of another pool is handed back untouched in [`Foreign`].
    ///
    /// ```
    /// let pool = handoff_pool::Pool::<Vec<u8>>::new(handoff_pool::Capacity::Fixed(1)).unwrap();
    /// let raw = pool.try_alloc_raw(vec![1, 2, 3]).unwrap();
    /// pool.free(raw).unwrap();
    /// assert!(pool.try_alloc_raw(vec![]).is_ok());
    /// ```
    #[inline(always)]
    pub fn free<'a>(&self, raw: PooledRaw<'a, T, P>) -> Result<(), Foreign<PooledRaw<'a, T, P>>> {
        if !core::ptr::eq(raw.pool, self) {
            return Err(Foreign(raw));
        }
        drop(Pooled { raw });
        Ok(())
    }

    /// Slots made so far (the fixed size, or what a growing pool has grown to).
    pub fn capacity(&self) -> usize {
        self.store.capacity()
    }

    /// What the pool holds and has refused so far.
    ///
    /// ```
    /// use handoff_pool::{Capacity, Pool, PoolStats};
    /// let pool = Pool::<u8>::new(Capacity::Fixed(1)).unwrap();
    /// let _a = pool.try_alloc(1).unwrap();
    /// assert!(pool.try_alloc(2).is_err());
    /// let stats: PoolStats = pool.stats();
    /// assert_eq!((stats.capacity, stats.exhausted, stats.in_use), (1, 1, Some(1)));
    /// ```
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            capacity: self.capacity(),
            exhausted: self.exhausted.load(Ordering::Relaxed),
            in_use: self.store.in_use(),
        }
    }

    /// The policy's name (`single_threaded`, `locked`, `lock_free`, `thread_cached`).
    pub fn policy(&self) -> &'static str {
        P::NAME
    }
}

#[cfg(any(feature = "std", loom))]
impl<T> Pool<T, crate::policy::ThreadCached> {
    /// Hands the calling thread's cached free slots to the shared depot, where any
    /// thread can take them: call it when a fixed-size pool should stop keeping slots
    /// in this thread's cache (a thread that goes idle for long). A thread's exit does
    /// the same by itself, also for pools used from its thread-local destructors.
    ///
    /// ```
    /// use handoff_pool::{policy::ThreadCached, Capacity, Pool, PoolConfig};
    /// let config = PoolConfig { magazine: 2, ..PoolConfig::new(Capacity::Fixed(4)) };
    /// let pool = Pool::<u64, ThreadCached>::with_config(config).unwrap();
    /// std::thread::scope(|s| {
    ///     s.spawn(|| {
    ///         let all: Vec<_> = (0..4).map(|i| pool.try_alloc(i).unwrap()).collect();
    ///         drop(all); // now in this thread's magazines
    ///         pool.flush(); // now in the depot
    ///     });
    /// });
    /// let all: Vec<_> = (0..4).map(|i| pool.try_alloc(i).unwrap()).collect();
    /// assert_eq!(all.len(), 4);
    /// ```
    pub fn flush(&self) {
        self.store.flush_current();
    }

    /// Whole magazines of free slots waiting in the shared depot.
    pub fn depot_magazines(&self) -> usize {
        self.store.depot_len()
    }

    /// Loom models only: explicit magazines for one model thread.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn loom_cache(&self) -> crate::policy::LoomCache<'_, T> {
        crate::policy::LoomCache::new(&self.store)
    }
}

impl<T, P: Policy> fmt::Debug for Pool<T, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("policy", &P::NAME)
            .field("capacity", &self.capacity())
            .field("exhausted", &self.stats().exhausted)
            .finish_non_exhaustive()
    }
}

/// An object in a [`Pool`] slot that is given back only explicitly, with
/// [`Pool::release`] or [`Pool::free`]. Dropping it leaks the object and its slot.
#[must_use = "a PooledRaw that is dropped leaks its object; give it back with Pool::release or Pool::free"]
pub struct PooledRaw<'a, T, P: Policy = SingleThreaded> {
    ptr: NonNull<T>,
    token: <P::Store<T> as Store<T>>::Token,
    pool: &'a Pool<T, P>,
}

/// An object in a [`Pool`] slot. Dropping it drops the object and puts the slot
/// back (also if the object's destructor panics); forgetting it leaks both.
pub struct Pooled<'a, T, P: Policy = SingleThreaded> {
    raw: PooledRaw<'a, T, P>,
}

// SAFETY: a `PooledRaw` owns a `T` and refers to a pool. Sending it sends the `T` (hence
// `T: Send`) and lets the other thread give the slot back through `&Pool` (hence
// `Pool: Sync`, which only the thread-safe policies are).
unsafe impl<T: Send, P: Policy> Send for PooledRaw<'_, T, P> where Pool<T, P>: Sync {}
// SAFETY: sharing a `PooledRaw` shares `&T` only (hence `T: Sync`), and `&Pool`.
unsafe impl<T: Sync, P: Policy> Sync for PooledRaw<'_, T, P> where Pool<T, P>: Sync {}

impl<'a, T, P: Policy> Pooled<'a, T, P> {
    /// The handle without its release-on-drop: give it back with [`Pool::release`]
    /// or [`Pool::free`].
    ///
    /// ```
    /// let pool = handoff_pool::Pool::<u32>::new(handoff_pool::Capacity::Fixed(1)).unwrap();
    /// let raw = pool.try_alloc(5).unwrap().into_raw();
    /// assert_eq!(pool.release(raw).unwrap(), 5);
    /// ```
    pub fn into_raw(self) -> PooledRaw<'a, T, P> {
        let this = ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped, so the `PooledRaw` is moved out exactly once.
        unsafe { core::ptr::read(&this.raw) }
    }

    /// Takes the object out and puts the slot back.
    ///
    /// ```
    /// let pool = handoff_pool::Pool::<String>::new(handoff_pool::Capacity::Fixed(1)).unwrap();
    /// let s = pool.try_alloc("x".to_string()).unwrap().into_inner();
    /// assert_eq!(s, "x");
    /// assert!(pool.try_alloc(String::new()).is_ok());
    /// ```
    pub fn into_inner(self) -> T {
        let raw = self.into_raw();
        let pool = raw.pool;
        match pool.release(raw) {
            Ok(v) => v,
            Err(_) => unreachable!("a handle always belongs to the pool it refers to"),
        }
    }
}

impl<T, P: Policy> Deref for PooledRaw<'_, T, P> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: the handle owns a live `T` in this slot.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T, P: Policy> DerefMut for PooledRaw<'_, T, P> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the handle owns a live `T` in this slot; `&mut self` is unique.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T, P: Policy> Deref for Pooled<'_, T, P> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        &self.raw
    }
}

impl<T, P: Policy> DerefMut for Pooled<'_, T, P> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.raw
    }
}

/// Puts a slot back once its object's destructor has run or unwound.
pub(crate) struct PutBack<'a, T, P: Policy> {
    pub(crate) ptr: NonNull<T>,
    pub(crate) token: <P::Store<T> as Store<T>>::Token,
    pub(crate) pool: &'a Pool<T, P>,
}

impl<T, P: Policy> Drop for PutBack<'_, T, P> {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: the slot came from this pool's store and its object has been
        // dropped (or its destructor unwound: the object is gone either way).
        unsafe { self.pool.store.push(self.ptr, self.token) };
    }
}

impl<T, P: Policy> Drop for Pooled<'_, T, P> {
    #[inline(always)]
    fn drop(&mut self) {
        let _put_back = PutBack {
            ptr: self.raw.ptr,
            token: self.raw.token,
            pool: self.raw.pool,
        };
        // SAFETY: the handle owns a live `T`; this is its one drop. The destructor
        // may use the same pool: no part of the store is borrowed here.
        unsafe { core::ptr::drop_in_place(self.raw.ptr.as_ptr()) };
    }
}

impl<T: fmt::Debug, P: Policy> fmt::Debug for Pooled<'_, T, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: fmt::Debug, P: Policy> fmt::Debug for PooledRaw<'_, T, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
