//! The two pieces every pool shares: a slab of uninitialised slots, and the teardown
//! ledger that decides who frees the shared state when objects outlive the handles.

use core::alloc::Layout;
use core::marker::PhantomData;
use core::ptr::NonNull;

use alloc::alloc::{alloc, dealloc, handle_alloc_error};
use alloc::boxed::Box;

use crate::numa::{Placement, Region};
use crate::sync::{AtomicIsize, AtomicUsize, Ordering};
use crate::ConfigError;

/// `len` uninitialised slots of `T` in one allocation. The slab never reads, writes or
/// drops a `T`; the pool that owns it decides which slots are live.
pub(crate) struct Slab<T> {
    base: NonNull<T>,
    len: usize,
    /// The placed mapping the slots live in, or `None` for the global allocator's
    /// memory.
    region: Option<Region>,
    _slots: PhantomData<T>,
}

impl<T> Slab<T> {
    pub(crate) fn new(len: usize) -> Result<Self, ConfigError> {
        Self::placed(len, Placement::Default)
    }

    /// `len` slots in memory placed by `placement`.
    pub(crate) fn placed(len: usize, placement: Placement) -> Result<Self, ConfigError> {
        if size_of::<T>() == 0 {
            return Err(ConfigError::ZeroSized);
        }
        if len == 0 {
            return Err(ConfigError::Zero("slots"));
        }
        let layout = Layout::array::<T>(len).map_err(|_| ConfigError::TooLarge { slots: len })?;
        if placement != Placement::Default {
            let region =
                Region::new(layout.size(), layout.align(), placement).map_err(ConfigError::Numa)?;
            return Ok(Slab {
                base: region.base().cast(),
                len,
                region: Some(region),
                _slots: PhantomData,
            });
        }
        // SAFETY: `layout` has a non-zero size (`T` is not zero-sized and `len > 0`).
        let raw = unsafe { alloc(layout) };
        let Some(base) = NonNull::new(raw.cast::<T>()) else {
            handle_alloc_error(layout)
        };
        Ok(Slab {
            base,
            len,
            region: None,
            _slots: PhantomData,
        })
    }

    /// The address of slot `i`.
    #[inline]
    pub(crate) fn slot(&self, i: usize) -> NonNull<T> {
        debug_assert!(i < self.len);
        // SAFETY: `i < len`, so the result is inside the allocation.
        unsafe { self.base.add(i) }
    }

    #[inline]
    pub(crate) fn base(&self) -> NonNull<T> {
        self.base
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Which slot `p` is (`p` must be one of this slab's slots).
    #[inline]
    pub(crate) fn index_of(&self, p: NonNull<T>) -> usize {
        let i = (p.as_ptr().addr() - self.base.as_ptr().addr()) / size_of::<T>();
        debug_assert!(i < self.len);
        i
    }

    /// [`index_of`](Self::index_of) for the loom shadow cells; 0 without loom, where
    /// nothing reads it.
    #[inline(always)]
    pub(crate) fn index_of_shadow(&self, p: NonNull<T>) -> usize {
        if cfg!(loom) {
            self.index_of(p)
        } else {
            0
        }
    }
}

impl<T> Drop for Slab<T> {
    fn drop(&mut self) {
        if self.region.is_some() {
            return; // the region unmaps itself
        }
        let layout = Layout::array::<T>(self.len).expect("checked in Slab::new");
        // SAFETY: `base` came from `alloc(layout)` with this same layout and is freed
        // only here, once.
        unsafe { dealloc(self.base.as_ptr().cast(), layout) };
    }
}

/// A handle is the allocating or the releasing side.
#[derive(Clone, Copy)]
pub(crate) enum Side {
    Allocating,
    Releasing,
}

/// Who frees the shared state. The two handles each record how many objects they
/// handed out / took back when they leave; an object dropped without its releasing
/// handle ("retired") subtracts one from `pending`. The last handle to leave adds the
/// number of objects still unaccounted for (`handed out - taken back`): `pending` is
/// then the number of objects still alive, and whoever brings it to 0 (that handle,
/// or the last object to be dropped afterwards) frees the shared state. Before the
/// last handle leaves, `pending` is `-(objects retired)`, never positive.
///
/// A forgotten object (`mem::forget`) never retires, so the shared state leaks: a
/// leak, never a use after free.
pub(crate) struct Teardown {
    handles: AtomicUsize,
    pending: AtomicIsize,
    handed_out: AtomicUsize,
    taken_back: AtomicUsize,
    /// Objects dropped without their releasing handle, ever (for the counters).
    retired: AtomicUsize,
}

impl Teardown {
    pub(crate) fn new() -> Self {
        Teardown {
            handles: AtomicUsize::new(2),
            pending: AtomicIsize::new(0),
            handed_out: AtomicUsize::new(0),
            taken_back: AtomicUsize::new(0),
            retired: AtomicUsize::new(0),
        }
    }

    /// Objects dropped without their releasing handle so far.
    pub(crate) fn retired(&self) -> u64 {
        // Relaxed: a figure for statistics.
        self.retired.load(Ordering::Relaxed) as u64
    }

    /// A handle leaves, having handed out (or taken back) `count` objects in all.
    /// Returns whether the caller must now free the shared state.
    pub(crate) fn leave(&self, side: Side, count: usize) -> bool {
        // Relaxed: the release half of the decrement below publishes it to the handle
        // that leaves last, which reads it after its acquire half.
        match side {
            Side::Allocating => self.handed_out.store(count, Ordering::Relaxed),
            Side::Releasing => self.taken_back.store(count, Ordering::Relaxed),
        }
        // AcqRel: the last handle sees the other's count and all its earlier accesses.
        if self.handles.fetch_sub(1, Ordering::AcqRel) != 1 {
            return false;
        }
        let live = self
            .handed_out
            .load(Ordering::Relaxed)
            .wrapping_sub(self.taken_back.load(Ordering::Relaxed)) as isize;
        // AcqRel, as in `retire`: whoever brings `pending` to zero frees the shared
        // state, so it must see every other object's release (and ours) before it.
        let before = self.pending.fetch_add(live, Ordering::AcqRel);
        before.wrapping_add(live) == 0
    }

    /// An object was dropped without its releasing handle. Returns whether the caller
    /// must now free the shared state (it was the last object after both handles left).
    pub(crate) fn retire(&self) -> bool {
        // Relaxed: a figure for statistics, counted before the object may be the last.
        self.retired.fetch_add(1, Ordering::Relaxed);
        // AcqRel: release, so the object's accesses happen before the free of the
        // shared state by whoever brings the count to zero; acquire, in case that is us.
        self.pending.fetch_sub(1, Ordering::AcqRel) == 1
    }
}

/// Shared state that a [`Teardown`] decides the fate of.
pub(crate) trait Owned {
    fn teardown(&self) -> &Teardown;
}

/// Frees shared state made by `Box::into_raw`.
///
/// # Safety
/// `shared` came from `Box::into_raw`, and `Teardown::leave` or `Teardown::retire`
/// just returned `true` to the caller: nobody else can reach it any more.
pub(crate) unsafe fn free<S>(shared: NonNull<S>) {
    // SAFETY: the caller's contract.
    drop(unsafe { Box::from_raw(shared.as_ptr()) });
}

/// A handle leaves (see [`Teardown::leave`]) and frees the shared state if it was
/// the last to reach it.
///
/// # Safety
/// `shared` came from `Box::into_raw`, and the caller is a handle that holds it and
/// has not left before.
pub(crate) unsafe fn leave<S: Owned>(shared: NonNull<S>, side: Side, count: usize) {
    // SAFETY: the handle keeps the shared state alive until `leave` says otherwise.
    let last = unsafe { shared.as_ref() }.teardown().leave(side, count);
    if last {
        // SAFETY: `leave` said nobody else can reach it.
        unsafe { free(shared) };
    }
}

/// Retires one object when dropped, also while a panic unwinds out of the object's
/// destructor, so the teardown count never misses it.
pub(crate) struct RetireOnDrop<S: Owned>(pub(crate) NonNull<S>);

impl<S: Owned> Drop for RetireOnDrop<S> {
    fn drop(&mut self) {
        // SAFETY: the object being retired is still counted in `pending`, so the
        // shared state is alive until `retire` returns.
        let last = unsafe { self.0.as_ref() }.teardown().retire();
        if last {
            // SAFETY: `retire` said this was the last reference.
            unsafe { free(self.0) };
        }
    }
}

/// The address of a free (uninitialised) slot, travelling from the releasing side
/// back to the allocating side. It owns no `T`, so it is `Copy` and `Send`.
pub(crate) struct SlotPtr<T>(pub(crate) NonNull<T>);

impl<T> Clone for SlotPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for SlotPtr<T> {}

// SAFETY: a `SlotPtr` is only an address of uninitialised memory whose use is handed
// over with it; no `T` moves with it, so no bound on `T` is needed.
unsafe impl<T> Send for SlotPtr<T> {}

/// `prefetchw` of the line at an address: the ring's hint, shared (see
/// [`handoff_spsc::hint::prefetch_write`]).
pub(crate) use handoff_spsc::hint::prefetch_write;
