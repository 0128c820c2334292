//! [`ThreadCached`](super::ThreadCached): per-thread magazines in front of a depot.
//!
//! Each thread has two magazines, `loaded` and `prev` (Bonwick's scheme, so a thread
//! that alternates allocations and releases at a magazine boundary does not go to the
//! depot every time). Allocating pops from `loaded`; if it is empty and `prev` is not,
//! the two swap; if both are empty the thread takes a full magazine from the depot
//! (one lock), or, if the depot has none, the pool grows by a block, cut into
//! magazines. Releasing pushes onto `loaded`; if it is full and `prev` is empty they
//! swap; if both are full, `prev` goes to the depot whole and an empty one comes back.
//!
//! The per-thread magazines are entries of a [`Table`] indexed by thread number (see
//! [`per_thread`](super::per_thread)). When a thread exits, its magazines go to the
//! depot, where any thread takes them; [`Pool::flush`](crate::Pool::flush) does that
//! at once for the calling thread. A pool used on a thread after its exit guard ran (from
//! a thread-local destructor) takes and gives slots at the depot directly, one at a
//! time under its lock. With a fixed capacity, slots cached in the magazines of other
//! live threads are not available to this one: size the pool for
//! `threads × 2 × magazine` slots on top of what is live.

#[cfg(not(loom))]
use core::cell::UnsafeCell;
use core::mem;
use core::ptr::NonNull;

use alloc::boxed::Box;
use alloc::vec::Vec;

#[cfg(not(loom))]
use crossbeam_utils::CachePadded;

use super::blocks::Blocks;
#[cfg(not(loom))]
use super::per_thread::{self, Table};
use super::Store;
use crate::slab::SlotPtr;
#[cfg(loom)]
use crate::sync::Mutex;
use crate::{ConfigError, PoolConfig};

/// Whole magazines, exchanged under the lock.
struct Depot<T> {
    /// Magazines with at least one free slot.
    full: Vec<Vec<SlotPtr<T>>>,
    /// Spare empty magazines (their buffers), to swap in without allocating.
    empty: Vec<Vec<SlotPtr<T>>>,
    blocks: Blocks<T>,
}

impl<T> Depot<T> {
    /// Adds block `b`'s slots to `full`, cut into magazines of `magazine`. The slots
    /// come lowest address last and magazines are taken from the end, so the block is
    /// handed out in address order.
    fn cut(&mut self, b: usize, magazine: usize) {
        let Depot {
            full,
            empty,
            blocks,
        } = self;
        let mut slots = blocks.slots(b).peekable();
        while slots.peek().is_some() {
            let mut m = empty.pop().unwrap_or_else(|| Vec::with_capacity(magazine));
            m.extend(slots.by_ref().take(magazine));
            full.push(m);
        }
    }

    /// A full magazine, growing the pool by a block if there is none; `None` when the
    /// pool cannot grow.
    fn take_full(&mut self, magazine: usize) -> Option<Vec<SlotPtr<T>>> {
        if self.full.is_empty() {
            let b = self.blocks.grow()?;
            self.cut(b, magazine);
        }
        self.full.pop()
    }

    /// Keeps an empty magazine's buffer for reuse, unless enough are kept already (as
    /// many as the pool's slots fill magazines, and two more).
    fn keep_empty(&mut self, m: Vec<SlotPtr<T>>, magazine: usize) {
        debug_assert!(m.is_empty());
        if self.empty.len() <= self.blocks.total() / magazine + 2 {
            self.empty.push(m);
        }
    }
}

/// The depot's lock: one the fork handlers hold across a fork (see
/// [`per_thread`](super::per_thread)); loom's mutex under loom.
#[cfg(not(loom))]
type DepotLock = per_thread::ForkLock;
#[cfg(loom)]
type DepotLock = Mutex<()>;

/// The depot, borrowed under its lock.
struct DepotGuard<'a, T> {
    depot: &'a mut Depot<T>,
    _held: LockGuard<'a>,
}

#[cfg(not(loom))]
type LockGuard<'a> = std::sync::MutexGuard<'a, ()>;
#[cfg(loom)]
type LockGuard<'a> = loom::sync::MutexGuard<'a, ()>;

impl<T> core::ops::Deref for DepotGuard<'_, T> {
    type Target = Depot<T>;
    fn deref(&self) -> &Depot<T> {
        self.depot
    }
}

impl<T> core::ops::DerefMut for DepotGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut Depot<T> {
        self.depot
    }
}

/// What the depot shares with exiting threads: it lives in a box of its own, so it
/// stays where it is when the pool moves.
struct Shared<T> {
    /// Guards `depot`. A lock of its own, not a `Mutex<Depot<T>>`: a fork handler
    /// keeps its guard across a fork, where it cannot name `T`.
    lock: DepotLock,
    depot: core::cell::UnsafeCell<Depot<T>>,
    magazine: usize,
}

impl<T> Shared<T> {
    /// The depot, under its lock.
    #[inline]
    fn depot(&self) -> DepotGuard<'_, T> {
        #[cfg(not(loom))]
        let held = self.lock.lock();
        #[cfg(loom)]
        let held = self.lock.lock().unwrap();
        DepotGuard {
            // SAFETY: `lock` guards `depot`, and we hold it for as long as the borrow
            // lives (the guard owns both); nothing else reaches the depot.
            depot: unsafe { &mut *self.depot.get() },
            _held: held,
        }
    }

    /// One free slot straight from the depot (for a thread that has exited).
    #[cfg(not(loom))]
    fn pop_one(&self) -> Option<NonNull<T>> {
        let mut depot = self.depot();
        let mut m = depot.take_full(self.magazine)?;
        let slot = m.pop();
        if m.is_empty() {
            depot.keep_empty(m, self.magazine);
        } else {
            depot.full.push(m);
        }
        slot.map(|s| s.0)
    }

    /// One slot straight back to the depot (for a thread that has exited).
    #[cfg(not(loom))]
    fn push_one(&self, slot: NonNull<T>) {
        let mut depot = self.depot();
        match depot.full.last_mut() {
            Some(m) if m.len() < self.magazine => m.push(SlotPtr(slot)),
            _ => {
                let mut m = depot
                    .empty
                    .pop()
                    .unwrap_or_else(|| Vec::with_capacity(self.magazine));
                m.push(SlotPtr(slot));
                depot.full.push(m);
            }
        }
    }
}

/// One thread's entry: its magazines once it has used the pool, on a cache line of
/// their own (two threads writing one line would undo the point of per-thread caches).
#[cfg(not(loom))]
type Entry<T> = CachePadded<UnsafeCell<Option<Mags<T>>>>;

/// The [`ThreadCached`](super::ThreadCached) store.
pub struct CachedStore<T> {
    /// Each thread's magazines, by thread number.
    #[cfg(not(loom))]
    table: Table<Entry<T>>,
    /// A `Box<Shared<T>>` turned into a pointer (so that moving the store does not
    /// claim it unique while exiting threads hold pointers into it); freed on drop.
    shared: NonNull<Shared<T>>,
    /// The magazine size (also in `shared`; here for the release fast path).
    magazine: usize,
    /// The store's key in the registry of live stores (`per_thread::register`).
    #[cfg(not(loom))]
    key: u64,
}

// SAFETY: the depot is under its mutex; each thread's entry is reached only by that
// thread (through its number, which no other live thread has), by its exit guard on
// that same thread, or through `&mut`. A slot handed from one thread to another goes
// through the depot's mutex, which orders it.
unsafe impl<T: Send> Send for CachedStore<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for CachedStore<T> {}

/// One thread's two magazines.
///
/// The loaded magazine's top, the slot released last, is kept in `top` rather than in
/// the `loaded` buffer, so an allocation that follows a release reads it back from one
/// fixed place (see `single::Stack` for why that is faster). The loaded
/// magazine is `loaded` and `top` together: `loaded.len() + top.is_some()` never
/// exceeds the magazine size.
pub(crate) struct Mags<T> {
    top: Option<SlotPtr<T>>,
    loaded: Vec<SlotPtr<T>>,
    prev: Vec<SlotPtr<T>>,
}

impl<T> Mags<T> {
    pub(crate) fn new(magazine: usize) -> Self {
        Mags {
            top: None,
            loaded: Vec::with_capacity(magazine),
            prev: Vec::with_capacity(magazine),
        }
    }

    #[inline(always)]
    pub(crate) fn alloc(&mut self, store: &CachedStore<T>) -> Option<NonNull<T>> {
        if let Some(s) = self.top.take() {
            return Some(s.0);
        }
        match self.loaded.pop() {
            Some(s) => Some(s.0),
            None => self.refill(store.shared()),
        }
    }

    /// Moves `top` into the `loaded` buffer, which has room for it.
    #[inline]
    fn settle(&mut self) {
        if let Some(s) = self.top.take() {
            self.loaded.push(s);
        }
    }

    #[cold]
    #[inline(never)]
    fn refill(&mut self, shared: &Shared<T>) -> Option<NonNull<T>> {
        if self.prev.is_empty() {
            let mut depot = shared.depot();
            let full = depot.take_full(shared.magazine)?;
            let empty = mem::replace(&mut self.prev, full);
            depot.keep_empty(empty, shared.magazine);
        }
        mem::swap(&mut self.loaded, &mut self.prev);
        self.loaded.pop().map(|s| s.0)
    }

    #[inline(always)]
    pub(crate) fn free(&mut self, slot: NonNull<T>, store: &CachedStore<T>) {
        if self.loaded.len() + usize::from(self.top.is_some()) < store.magazine {
            if let Some(below) = self.top.replace(SlotPtr(slot)) {
                // Room: the loaded magazine held fewer than `magazine` slots.
                self.loaded.push(below);
            }
        } else {
            self.spill(slot, store.shared());
        }
    }

    /// The loaded magazine is full.
    #[cold]
    #[inline(never)]
    fn spill(&mut self, slot: NonNull<T>, shared: &Shared<T>) {
        self.settle();
        if !self.prev.is_empty() {
            let mut depot = shared.depot();
            let fresh = depot
                .empty
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(shared.magazine));
            let full = mem::replace(&mut self.prev, fresh);
            depot.full.push(full);
        }
        mem::swap(&mut self.loaded, &mut self.prev);
        self.loaded.push(SlotPtr(slot));
    }

    /// Hands both magazines' slots to the depot.
    fn flush(&mut self, shared: &Shared<T>) {
        self.settle();
        let mut depot = shared.depot();
        for m in [&mut self.loaded, &mut self.prev] {
            if !m.is_empty() {
                let spare = depot
                    .empty
                    .pop()
                    .unwrap_or_else(|| Vec::with_capacity(shared.magazine));
                depot.full.push(mem::replace(m, spare));
            }
        }
    }

    /// Hands both magazines to the depot for good (their thread has exited): those
    /// with slots join the full ones, and the empty ones' buffers are freed.
    #[cfg(not(loom))]
    fn retire(mut self, shared: &Shared<T>) {
        self.settle();
        let mut empties = Vec::new();
        {
            let mut depot = shared.depot();
            for m in [self.loaded, self.prev] {
                if m.is_empty() {
                    empties.push(m);
                } else {
                    depot.full.push(m);
                }
            }
        }
        drop(empties);
    }
}

/// Empties an exited thread's entry into its store's depot (`per_thread`'s exit hook).
///
/// # Safety
/// `shared` is the live `Shared<T>` of a store, and `entry` that store's `Entry<T>` of
/// the calling thread, which nothing else is using.
#[cfg(not(loom))]
unsafe fn retire_entry<T>(shared: *const (), entry: *const ()) {
    // SAFETY: the caller's contract.
    let (shared, entry) = unsafe { (&*shared.cast::<Shared<T>>(), &*entry.cast::<Entry<T>>()) };
    // SAFETY: the calling thread's own entry, not borrowed anywhere else.
    if let Some(mags) = unsafe { (*entry.get()).take() } {
        mags.retire(shared);
    }
}

impl<T> CachedStore<T> {
    /// The depot and what goes with it.
    #[inline(always)]
    fn shared(&self) -> &Shared<T> {
        // SAFETY: made from a box in `with_capacity`, freed only in `drop`.
        unsafe { self.shared.as_ref() }
    }

    /// The calling thread's magazines, if it has made them.
    ///
    /// Runs `f` on them; `f` (one of `Mags`' methods, which run no user code) must not
    /// reach the store's per-thread state again.
    #[cfg(not(loom))]
    #[inline(always)]
    fn with_mags<R>(&self, f: impl FnOnce(&mut Mags<T>) -> R) -> Option<R> {
        let entry = self.table.get(per_thread::current())?;
        // SAFETY: the entry of this thread's number: only this thread touches it (its
        // exit guard, on this thread too, runs no pool code while it empties it), and
        // `f` does not reach it again.
        let mags = unsafe { &mut *entry.get() }.as_mut()?;
        Some(f(mags))
    }

    /// Makes the calling thread's magazines in this store; false if the thread has
    /// exited (then it has none, and works on the depot directly).
    #[cfg(not(loom))]
    #[cold]
    #[inline(never)]
    fn make_mags(&self) -> bool {
        let Some(slot) = per_thread::assign() else {
            return false;
        };
        let entry = self
            .table
            .get_or_make(slot, || CachePadded::new(UnsafeCell::new(None)));
        // SAFETY: this thread's own entry, as in `with_mags`.
        let mags = unsafe { &mut *entry.get() };
        if mags.is_none() {
            *mags = Some(Mags::new(self.magazine));
            let at: *const Entry<T> = entry;
            per_thread::remember(self.key, at.cast());
        }
        true
    }

    /// An allocation that found no free slot (the pool is at its capacity): one more
    /// attempt, never a wait. The attempt that brought this thread here came before
    /// this one, and a thread that handed its magazines back in between (one of a
    /// `std::thread::scope` that just ended, in its thread-local destructors) has them
    /// in the depot now. (Without it, about one allocation in 2000 right after a scope
    /// was refused. The magazines of threads still exiting come back later: a caller
    /// that can wait says how long, with [`Pool::try_alloc_within`](crate::Pool::try_alloc_within).)
    #[cfg(not(loom))]
    #[cold]
    #[inline(never)]
    fn pop_exhausted(&self) -> Option<NonNull<T>> {
        self.pop_once()
    }

    /// One attempt at a free slot: the thread's magazines, else the slow path.
    #[cfg(not(loom))]
    #[inline(always)]
    fn pop_once(&self) -> Option<NonNull<T>> {
        match self.with_mags(|m| m.alloc(self)) {
            Some(p) => p,
            None => self.pop_slow(),
        }
    }

    #[cfg(not(loom))]
    #[cold]
    #[inline(never)]
    fn pop_slow(&self) -> Option<NonNull<T>> {
        if self.make_mags() {
            self.with_mags(|m| m.alloc(self)).flatten()
        } else {
            self.shared().pop_one()
        }
    }

    #[cfg(not(loom))]
    #[cold]
    #[inline(never)]
    fn push_slow(&self, slot: NonNull<T>) {
        if !(self.make_mags() && self.with_mags(|m| m.free(slot, self)).is_some()) {
            self.shared().push_one(slot);
        }
    }

    /// Under loom, whose model threads share one OS thread, each call uses fresh
    /// magazines and hands them back at once; the models drive [`Mags`] directly.
    #[cfg(loom)]
    fn with_loom_mags<R>(&self, f: impl FnOnce(&mut Mags<T>) -> R) -> R {
        let mut mags = Mags::new(self.magazine);
        let r = f(&mut mags);
        mags.flush(self.shared());
        r
    }

    /// Hands the calling thread's magazines to the depot.
    pub(crate) fn flush_current(&self) {
        #[cfg(not(loom))]
        self.with_mags(|m| m.flush(self.shared()));
    }

    /// Magazines waiting in the depot.
    pub(crate) fn depot_len(&self) -> usize {
        self.shared().depot().full.len()
    }
}

impl<T> Drop for CachedStore<T> {
    fn drop(&mut self) {
        // From here on no exiting thread reaches this store.
        #[cfg(not(loom))]
        per_thread::unregister(self.key);
        // Every thread's magazines go with the table (dropped with the fields, after
        // this), and the depot now.
        // SAFETY: the box `with_capacity` made; nothing uses it any more.
        drop(unsafe { Box::from_raw(self.shared.as_ptr()) });
    }
}

// SAFETY: a slot is in at most one place at a time: one thread's magazine, or one
// depot magazine; it moves between them only under the depot's lock or within its
// thread. Blocks are freed only with the store.
unsafe impl<T> Store<T> for CachedStore<T> {
    type Token = ();

    fn new(config: &PoolConfig) -> Result<Self, ConfigError> {
        // Before the magazines are sized from it: `MAX_MAGAZINE` bounds their buffers.
        config.check_magazine()?;
        let PoolConfig {
            capacity,
            placement,
            magazine,
        } = *config;
        let mut depot = Depot {
            full: Vec::new(),
            empty: Vec::new(),
            blocks: Blocks::new(capacity, placement)?,
        };
        depot.cut(0, magazine);
        let shared = NonNull::from(Box::leak(Box::new(Shared {
            #[cfg(not(loom))]
            lock: DepotLock::new(),
            #[cfg(loom)]
            lock: DepotLock::new(()),
            depot: core::cell::UnsafeCell::new(depot),
            magazine,
        })));
        #[cfg(not(loom))]
        let key = {
            // SAFETY: the box stays where it is until the store is dropped, which
            // unregisters first; `retire_entry::<T>` is called with it and with this
            // store's entries only (`make_mags` remembers them under this key).
            unsafe {
                per_thread::register(
                    shared.as_ptr().cast_const().cast(),
                    retire_entry::<T>,
                    &raw const (*shared.as_ptr()).lock,
                )
            }
        };
        Ok(CachedStore {
            #[cfg(not(loom))]
            table: Table::new(),
            shared,
            magazine,
            #[cfg(not(loom))]
            key,
        })
    }

    #[inline(always)]
    fn pop(&self) -> Option<(NonNull<T>, ())> {
        #[cfg(not(loom))]
        let p = self.pop_once().or_else(|| self.pop_exhausted());
        #[cfg(loom)]
        let p = self.with_loom_mags(|m| m.alloc(self));
        p.map(|p| (p, ()))
    }

    #[inline(always)]
    unsafe fn push(&self, slot: NonNull<T>, _token: ()) {
        #[cfg(not(loom))]
        if self.with_mags(|m| m.free(slot, self)).is_none() {
            self.push_slow(slot);
        }
        #[cfg(loom)]
        self.with_loom_mags(|m| m.free(slot, self));
    }

    fn capacity(&self) -> usize {
        self.shared().depot().blocks.total()
    }
}

/// Loom's view of the magazine exchange: one explicit set of magazines per model
/// thread, driving the same code as the pool's per-thread caches.
#[cfg(loom)]
pub struct LoomCache<'a, T> {
    mags: Mags<T>,
    store: &'a CachedStore<T>,
}

#[cfg(loom)]
impl<'a, T> LoomCache<'a, T> {
    pub(crate) fn new(store: &'a CachedStore<T>) -> Self {
        LoomCache {
            mags: Mags::new(store.magazine),
            store,
        }
    }

    /// A free slot, or `None`.
    pub fn alloc(&mut self) -> Option<NonNull<T>> {
        self.mags.alloc(self.store)
    }

    /// Gives a slot back.
    pub fn free(&mut self, slot: NonNull<T>) {
        self.mags.free(slot, self.store)
    }

    /// Hands the magazines to the depot.
    pub fn flush(&mut self) {
        self.mags.flush(self.store.shared())
    }
}
