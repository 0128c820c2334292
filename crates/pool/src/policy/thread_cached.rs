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
//! The per-thread magazines live in a [`thread_local::ThreadLocal`] owned by the
//! pool. A thread that exits leaves its magazines there; the next thread that gets
//! the same slot of the `ThreadLocal` (thread ids are reused) takes them over, and
//! [`Pool::flush`](crate::Pool::flush) hands the calling thread's to the depot at
//! once. With a fixed capacity, slots parked in other threads' magazines are not
//! available to this one: size the pool for `threads × 2 × magazine` slots on top of
//! what is live.

#[cfg(not(loom))]
use core::cell::UnsafeCell;
use core::mem;
use core::ptr::NonNull;

use alloc::vec::Vec;

#[cfg(not(loom))]
use crossbeam_utils::CachePadded;

use super::blocks::Blocks;
use super::{Capacity, Store};
use crate::numa::Placement;
use crate::slab::SlotPtr;
use crate::sync::{lock, Mutex};
use crate::ConfigError;

/// Whole magazines, exchanged under the lock.
struct Depot<T> {
    /// Magazines with at least one free slot.
    full: Vec<Vec<SlotPtr<T>>>,
    /// Spare empty magazines (their buffers), to swap in without allocating.
    empty: Vec<Vec<SlotPtr<T>>>,
    blocks: Blocks<T>,
}

/// The [`ThreadCached`](super::ThreadCached) store.
pub struct CachedStore<T> {
    depot: Mutex<Depot<T>>,
    /// Each thread's magazines on a cache line of their own: the `ThreadLocal`
    /// stores its entries side by side, and two threads writing one line would
    /// undo the point of per-thread caches.
    #[cfg(not(loom))]
    caches: thread_local::ThreadLocal<CachePadded<UnsafeCell<Mags<T>>>>,
    magazine: usize,
}

// SAFETY: the depot is under its mutex; each thread's magazines are reached only by
// that thread (through the `ThreadLocal`), or through `&mut`. A slot handed from one
// thread to another goes through the depot's mutex, which orders it.
unsafe impl<T: Send> Send for CachedStore<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for CachedStore<T> {}

/// One thread's two magazines.
pub(crate) struct Mags<T> {
    loaded: Vec<SlotPtr<T>>,
    prev: Vec<SlotPtr<T>>,
}

impl<T> Mags<T> {
    pub(crate) fn new(magazine: usize) -> Self {
        Mags {
            loaded: Vec::with_capacity(magazine),
            prev: Vec::with_capacity(magazine),
        }
    }

    #[inline(always)]
    pub(crate) fn alloc(&mut self, store: &CachedStore<T>) -> Option<NonNull<T>> {
        match self.loaded.pop() {
            Some(s) => Some(s.0),
            None => self.refill(store),
        }
    }

    #[cold]
    #[inline(never)]
    fn refill(&mut self, store: &CachedStore<T>) -> Option<NonNull<T>> {
        if self.prev.is_empty() {
            let mut depot = lock(&store.depot);
            match depot.full.pop() {
                Some(full) => {
                    let empty = mem::replace(&mut self.prev, full);
                    depot.empty.push(empty);
                }
                None => {
                    let b = depot.blocks.grow()?;
                    let Depot {
                        full,
                        empty,
                        blocks,
                    } = &mut *depot;
                    // The block, cut into magazines: the first one for this thread.
                    let mut slots = blocks.slots(b);
                    self.prev.extend(slots.by_ref().take(store.magazine));
                    loop {
                        let mut m = empty
                            .pop()
                            .unwrap_or_else(|| Vec::with_capacity(store.magazine));
                        m.extend(slots.by_ref().take(store.magazine));
                        if m.is_empty() {
                            empty.push(m);
                            break;
                        }
                        full.push(m);
                    }
                }
            }
        }
        mem::swap(&mut self.loaded, &mut self.prev);
        self.loaded.pop().map(|s| s.0)
    }

    #[inline(always)]
    pub(crate) fn free(&mut self, slot: NonNull<T>, store: &CachedStore<T>) {
        if self.loaded.len() < store.magazine {
            self.loaded.push(SlotPtr(slot));
        } else {
            self.spill(slot, store);
        }
    }

    #[cold]
    #[inline(never)]
    fn spill(&mut self, slot: NonNull<T>, store: &CachedStore<T>) {
        if !self.prev.is_empty() {
            let mut depot = lock(&store.depot);
            let fresh = depot
                .empty
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(store.magazine));
            let full = mem::replace(&mut self.prev, fresh);
            depot.full.push(full);
        }
        mem::swap(&mut self.loaded, &mut self.prev);
        self.loaded.push(SlotPtr(slot));
    }

    /// Hands both magazines' slots to the depot.
    pub(crate) fn flush(&mut self, store: &CachedStore<T>) {
        let mut depot = lock(&store.depot);
        for m in [&mut self.loaded, &mut self.prev] {
            if !m.is_empty() {
                let spare = depot
                    .empty
                    .pop()
                    .unwrap_or_else(|| Vec::with_capacity(store.magazine));
                depot.full.push(mem::replace(m, spare));
            }
        }
    }
}

impl<T> CachedStore<T> {
    /// Runs `f` on the calling thread's magazines.
    #[cfg(not(loom))]
    #[inline(always)]
    fn with_mags<R>(&self, f: impl FnOnce(&mut Mags<T>) -> R) -> R {
        let cell = self
            .caches
            .get_or(|| CachePadded::new(UnsafeCell::new(Mags::new(self.magazine))));
        // SAFETY: the `ThreadLocal` gives each thread its own entry, and `f` (one of
        // `Mags`' methods, which run no user code) does not reach it again.
        f(unsafe { &mut *cell.get() })
    }

    /// Under loom, whose model threads share one OS thread, each call uses fresh
    /// magazines and hands them back at once; the models drive [`Mags`] directly.
    #[cfg(loom)]
    fn with_mags<R>(&self, f: impl FnOnce(&mut Mags<T>) -> R) -> R {
        let mut mags = Mags::new(self.magazine);
        let r = f(&mut mags);
        mags.flush(self);
        r
    }

    /// Hands the calling thread's magazines to the depot.
    pub(crate) fn flush_current(&self) {
        self.with_mags(|m| m.flush(self));
    }

    /// Magazines waiting in the depot.
    pub(crate) fn depot_len(&self) -> usize {
        lock(&self.depot).full.len()
    }
}

// SAFETY: a slot is in at most one place at a time: one thread's magazine, or one
// depot magazine; it moves between them only under the depot's lock or within its
// thread. Blocks are freed only with the store.
unsafe impl<T> Store<T> for CachedStore<T> {
    type Token = ();

    fn with_capacity(
        capacity: Capacity,
        magazine: usize,
        placement: Placement,
    ) -> Result<Self, ConfigError> {
        if magazine == 0 {
            return Err(ConfigError::Zero("magazine"));
        }
        let blocks = Blocks::new(capacity, placement)?;
        let mut full = Vec::new();
        {
            let mut slots = blocks.slots(0);
            loop {
                let mut m = Vec::with_capacity(magazine);
                m.extend(slots.by_ref().take(magazine));
                if m.is_empty() {
                    break;
                }
                full.push(m);
            }
        }
        Ok(CachedStore {
            depot: Mutex::new(Depot {
                full,
                empty: Vec::new(),
                blocks,
            }),
            #[cfg(not(loom))]
            caches: thread_local::ThreadLocal::new(),
            magazine,
        })
    }

    #[inline(always)]
    fn pop(&self) -> Option<(NonNull<T>, ())> {
        self.with_mags(|m| m.alloc(self)).map(|p| (p, ()))
    }

    #[inline(always)]
    unsafe fn push(&self, slot: NonNull<T>, _token: ()) {
        self.with_mags(|m| m.free(slot, self));
    }

    fn capacity(&self) -> usize {
        lock(&self.depot).blocks.total()
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
        self.mags.flush(self.store)
    }
}
