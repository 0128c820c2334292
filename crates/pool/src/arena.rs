//! The rotating arena (the cross-thread pipeline write-up's "arena-batch-handoff"): the allocating thread
//! bump-allocates from one of several arenas; the releasing thread acknowledges each
//! object on its arena's drain counter; an arena is filled again only when every object
//! of its last fill has been acknowledged.
//!
//! * Allocating is one bounds check and one increment while the current arena has room.
//! * When it is full, the [`Allocator`] moves to the next arena in turn, if that arena's
//!   drain counter has caught up with everything handed out from it. If not, the arena
//!   is exhausted: [`Allocator::try_alloc`] hands the value back and counts the miss.
//! * The [`Releaser`] drops the object and stores its own count of acknowledged
//!   objects for that arena (one release store to a counter only it writes).
//!
//! ```
//! use handoff_pool::arena;
//!
//! let config = arena::Config { arenas: 2, slots_per_arena: 2 };
//! let (mut alloc, mut release) = arena::new::<u64>(config).unwrap();
//! let a: Vec<_> = (0..4).map(|i| alloc.try_alloc(i).unwrap()).collect();
//! // Both arenas are full and nothing has been acknowledged yet.
//! assert!(alloc.try_alloc(4).is_err());
//! for object in a {
//!     release.release(object).unwrap();
//! }
//! assert_eq!(*alloc.try_alloc(5).unwrap(), 5);
//! ```

use core::fmt;
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;

use alloc::boxed::Box;
use alloc::vec;

use crossbeam_utils::CachePadded;

use crate::slab::{leave, prefetch_write, Owned, RetireOnDrop, Side, Slab, Teardown};
use crate::sync::{AtomicUsize, Ordering, Shadow};
use crate::{ConfigError, Exhausted, Foreign};

/// Sizes of a rotating arena. The defaults are the cross-thread pipeline write-up's: 4 arenas of 4096 slots
/// (16 Ki objects in flight at most).
///
/// ```
/// let c = handoff_pool::arena::Config::default();
/// assert_eq!((c.arenas, c.slots_per_arena), (4, 4096));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// How many arenas rotate.
    pub arenas: usize,
    /// Slots in each arena.
    pub slots_per_arena: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            arenas: 4,
            slots_per_arena: 4096,
        }
    }
}

/// One arena's counters, each on its own cache line.
struct Counters {
    /// Objects of this arena the releaser has acknowledged, ever. Written by the
    /// releaser only (a plain release store of its private count).
    acked: CachePadded<AtomicUsize>,
    /// Objects of this arena dropped without the releaser, ever (any thread).
    retired: CachePadded<AtomicUsize>,
}

struct Shared<T> {
    slab: Slab<T>,
    counters: Box<[Counters]>,
    teardown: Teardown,
    shadow: Shadow,
}

impl<T> Shared<T> {
    /// Marks an ownership change of the value in slot `p` (loom only).
    #[inline(always)]
    fn touch(&self, p: NonNull<T>) {
        self.shadow.touch(self.slab.index_of_shadow(p));
    }
}

impl<T> Owned for Shared<T> {
    fn teardown(&self) -> &Teardown {
        &self.teardown
    }
}

/// Makes a rotating arena and returns its two halves.
///
/// ```
/// use handoff_pool::{arena, ConfigError};
/// let bad = arena::Config { arenas: 0, slots_per_arena: 8 };
/// assert_eq!(arena::new::<u64>(bad).unwrap_err(), ConfigError::Zero("arenas"));
/// ```
pub fn new<T>(config: Config) -> Result<(Allocator<T>, Releaser<T>), ConfigError> {
    if config.arenas == 0 {
        return Err(ConfigError::Zero("arenas"));
    }
    if config.slots_per_arena == 0 {
        return Err(ConfigError::Zero("slots_per_arena"));
    }
    let slots = config
        .arenas
        .checked_mul(config.slots_per_arena)
        .ok_or(ConfigError::TooLarge { slots: usize::MAX })?;
    let slab = Slab::<T>::new(slots)?;
    let counters = (0..config.arenas)
        .map(|_| Counters {
            acked: CachePadded::new(AtomicUsize::new(0)),
            retired: CachePadded::new(AtomicUsize::new(0)),
        })
        .collect();
    let base = slab.base();
    let shared = NonNull::from(Box::leak(Box::new(Shared {
        shadow: Shadow::new(slots),
        slab,
        counters,
        teardown: Teardown::new(),
    })));
    let mut filled = vec![0; config.arenas].into_boxed_slice();
    // Arena 0 is being filled from the start.
    filled[0] = config.slots_per_arena;
    Ok((
        Allocator {
            base,
            pos: 0,
            end: config.slots_per_arena,
            current: 0,
            shared,
            filled,
            per_arena: config.slots_per_arena,
            stats: AllocatorStats::default(),
        },
        Releaser {
            shared,
            acked: vec![0; config.arenas].into_boxed_slice(),
            stats: ReleaserStats::default(),
        },
    ))
}

/// What an [`Allocator`] has done so far. `#[non_exhaustive]`: more counters may come.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AllocatorStats {
    /// Moves to the next arena.
    pub rotations: u64,
    /// Allocations refused because the next arena was not yet drained.
    pub exhausted: u64,
    /// Objects handed out so far ([`Allocator::allocated`]).
    pub allocated: u64,
    /// Objects alive now: handed out and not yet acknowledged, as of the arenas'
    /// counters when [`Allocator::stats`] reads them.
    pub in_use: u64,
    /// Objects dropped somewhere else than in the [`Releaser`] (their box dropped on
    /// another thread): acknowledged on their arena's second counter, nothing lost.
    pub dropped_elsewhere: u64,
}

/// What a [`Releaser`] has done so far. `#[non_exhaustive]`: more counters may come.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReleaserStats {
    /// Objects released (dropped and acknowledged).
    pub released: u64,
    /// Objects from another arena set, handed back.
    pub foreign: u64,
}

/// The allocating half. `Send` (when `T: Send`), not `Sync`.
pub struct Allocator<T> {
    base: NonNull<T>,
    /// Next slot (an index into the whole slab) and the end of the current arena.
    pos: usize,
    end: usize,
    current: usize,
    shared: NonNull<Shared<T>>,
    /// Objects handed out from each arena, ever, counting the current fill in full.
    filled: Box<[usize]>,
    per_arena: usize,
    stats: AllocatorStats,
}

/// The releasing half. `Send` (when `T: Send`), not `Sync`.
pub struct Releaser<T> {
    shared: NonNull<Shared<T>>,
    /// Objects acknowledged per arena, ever: the values last stored to the counters.
    acked: Box<[usize]>,
    stats: ReleaserStats,
}

/// An object in an arena slot: like a `Box<T>`, but its memory belongs to the arena.
///
/// Give it to [`Releaser::free`] to drop it and acknowledge it (or to
/// [`Releaser::release`] to take it out and acknowledge it). Dropped anywhere
/// else, the object is dropped and acknowledged on the arena's second counter (one
/// atomic add), so the arena still comes back. Forgetting it leaks the object, keeps
/// its arena from ever being reused, and leaks the arenas' memory.
pub struct ArenaBox<T> {
    ptr: NonNull<T>,
    shared: NonNull<Shared<T>>,
    arena: usize,
    _owns: PhantomData<T>,
}

// SAFETY: as for the return-queue pool's handles: the allocator writes `T`s that
// another thread drops, the releaser drops `T`s another thread made, hence `T: Send`;
// all shared state is atomics. Not `Sync` (`NonNull` fields).
unsafe impl<T: Send> Send for Allocator<T> {}
// SAFETY: see `Allocator`.
unsafe impl<T: Send> Send for Releaser<T> {}
// SAFETY: an `ArenaBox` owns its `T` like a `Box<T>`; the shared state it points to is
// only touched through atomics.
unsafe impl<T: Send> Send for ArenaBox<T> {}
// SAFETY: `&ArenaBox<T>` only gives `&T`.
unsafe impl<T: Sync> Sync for ArenaBox<T> {}

impl<T> Allocator<T> {
    /// Moves `value` into the next slot of the current arena, or hands it back in
    /// [`Exhausted`] (counted in [`stats`](Self::stats)) if the arena is full and the
    /// next one still has unacknowledged objects.
    ///
    /// ```
    /// let config = handoff_pool::arena::Config { arenas: 1, slots_per_arena: 1 };
    /// let (mut alloc, mut release) = handoff_pool::arena::new::<u8>(config).unwrap();
    /// let a = alloc.try_alloc(1).unwrap();
    /// assert_eq!(alloc.try_alloc(2).unwrap_err().into_inner(), 2);
    /// release.release(a).unwrap();
    /// assert_eq!(*alloc.try_alloc(3).unwrap(), 3);
    /// ```
    #[inline]
    pub fn try_alloc(&mut self, value: T) -> Result<ArenaBox<T>, Exhausted<T>> {
        if self.pos == self.end && !self.rotate() {
            self.count_exhausted();
            return Err(Exhausted(value));
        }
        let pos = self.pos;
        self.pos += 1;
        debug_assert!(pos < self.end);
        // SAFETY: `pos` is below the current arena's end, inside the slab.
        let ptr = unsafe { self.base.add(pos) };
        // The slot eight allocations ahead, fetched for writing (it may lie past the
        // arena's end: only a hint). One thread: 5.9 -> 4.0 ns an alloc + free;
        // across threads 12.5 -> 11.9 ns an object (docs/pool.md).
        prefetch_write(ptr.as_ptr().wrapping_add(8));
        // SAFETY: the shared state outlives this handle.
        unsafe { self.shared.as_ref() }.touch(ptr);
        // SAFETY: the slot is free: this fill of the arena has not reached it yet, and
        // the arena was entered only after every object of its previous fill was
        // dropped and acknowledged (the counters' release/acquire orders those drops
        // before this write).
        unsafe { ptr.as_ptr().write(value) };
        Ok(ArenaBox {
            ptr,
            shared: self.shared,
            arena: self.current,
            _owns: PhantomData,
        })
    }

    /// Moves to the next arena if every object of its last fill has been dropped.
    #[cold]
    #[inline(never)]
    fn rotate(&mut self) -> bool {
        let next = if self.current + 1 == self.filled.len() {
            0
        } else {
            self.current + 1
        };
        // SAFETY: the shared state outlives this handle.
        let counters = &unsafe { self.shared.as_ref() }.counters[next];
        // Acquire: the drops that the counts stand for happen before we refill.
        let done = counters
            .acked
            .load(Ordering::Acquire)
            .wrapping_add(counters.retired.load(Ordering::Acquire));
        // Both counts only grow and never pass `filled[next]`, so `done` as read is
        // at most the true number, and equality means every object is gone.
        if done != self.filled[next] {
            debug_assert!(done < self.filled[next]);
            return false;
        }
        self.current = next;
        self.filled[next] += self.per_arena;
        self.pos = next * self.per_arena;
        self.end = self.pos + self.per_arena;
        self.stats.rotations += 1;
        true
    }

    /// Counts a refusal. The refused value stays out of this cold call: passing it
    /// would make the hot path build every value in a stack copy first.
    #[cold]
    #[inline(never)]
    fn count_exhausted(&mut self) {
        self.stats.exhausted += 1;
    }

    /// Objects handed out so far.
    pub fn allocated(&self) -> u64 {
        let filled: usize = self.filled.iter().sum();
        (filled - (self.end - self.pos)) as u64
    }

    /// Slots left in the current arena before the next rotation.
    pub fn left_in_arena(&self) -> usize {
        self.end - self.pos
    }

    /// Counts of what this half has done, and the objects alive now.
    ///
    /// ```
    /// let (mut alloc, mut release) = handoff_pool::arena::new::<u8>(Default::default()).unwrap();
    /// let a = alloc.try_alloc(1).unwrap();
    /// let b = alloc.try_alloc(2).unwrap();
    /// release.free(a).unwrap();
    /// let s = alloc.stats();
    /// assert_eq!((s.allocated, s.in_use, s.dropped_elsewhere), (2, 1, 0));
    /// drop(b);
    /// assert_eq!(alloc.stats().dropped_elsewhere, 1);
    /// ```
    pub fn stats(&self) -> AllocatorStats {
        // SAFETY: the shared state outlives this handle.
        let counters = &unsafe { self.shared.as_ref() }.counters;
        // Relaxed: figures for statistics.
        let (mut acked, mut retired) = (0usize, 0usize);
        for c in counters.iter() {
            acked = acked.wrapping_add(c.acked.load(Ordering::Relaxed));
            retired = retired.wrapping_add(c.retired.load(Ordering::Relaxed));
        }
        let allocated = self.allocated();
        AllocatorStats {
            allocated,
            in_use: allocated.saturating_sub(acked.wrapping_add(retired) as u64),
            dropped_elsewhere: retired as u64,
            ..self.stats
        }
    }
}

impl<T> Releaser<T> {
    /// Moves the object out of its slot, acknowledges it on its arena's counter and
    /// returns it; an object from another arena set is handed back untouched in
    /// [`Foreign`]. [`free`](Self::free) drops the object in its slot instead.
    ///
    /// ```
    /// let (mut alloc, mut release) = handoff_pool::arena::new::<String>(Default::default()).unwrap();
    /// let s = alloc.try_alloc("bid 99.75".to_string()).unwrap();
    /// assert_eq!(release.release(s).unwrap(), "bid 99.75");
    /// assert_eq!(release.stats().released, 1);
    /// ```
    #[inline]
    pub fn release(&mut self, object: ArenaBox<T>) -> Result<T, Foreign<ArenaBox<T>>> {
        let (ptr, ack) = self.take(object)?;
        // SAFETY: `take` made this handle the owner of the live `T` in the slot; it
        // is moved out once, and the slot is empty from here on.
        let value = unsafe { ptr.as_ptr().read() };
        // The acknowledgement (a release store) follows the read.
        drop(ack);
        Ok(value)
    }

    /// Drops the object in its slot and acknowledges it on its arena's counter (also
    /// if the object's destructor panics), or hands it back untouched in [`Foreign`] if
    /// it came from another arena set. As [`release`](Self::release), without moving
    /// the object out.
    ///
    /// ```
    /// let (mut alloc, mut release) = handoff_pool::arena::new::<String>(Default::default()).unwrap();
    /// let s = alloc.try_alloc("bid 99.75".to_string()).unwrap();
    /// release.free(s).unwrap();
    /// assert_eq!(release.stats().released, 1);
    /// ```
    #[inline]
    pub fn free(&mut self, object: ArenaBox<T>) -> Result<(), Foreign<ArenaBox<T>>> {
        let (ptr, _ack) = self.take(object)?;
        // SAFETY: `take` made this handle the owner of the live `T` in the slot; this
        // is its one drop. The acknowledgement follows it, also if it panics.
        unsafe { core::ptr::drop_in_place(ptr.as_ptr()) };
        Ok(())
    }

    /// Takes `object` over for `release` and `free`: checks that it is this arena
    /// set's, forgets the box (the leak-safety rule: ownership moves first), counts it,
    /// and returns its slot with the guard that acknowledges it on its arena's counter
    /// when dropped.
    #[inline(always)]
    fn take(&mut self, object: ArenaBox<T>) -> Result<(NonNull<T>, Ack<'_>), Foreign<ArenaBox<T>>> {
        if object.shared != self.shared {
            return Err(self.foreign(object));
        }
        let object = ManuallyDrop::new(object);
        let (ptr, arena) = (object.ptr, object.arena);
        self.acked[arena] += 1;
        self.stats.released += 1;
        // SAFETY: the shared state outlives this handle.
        let shared = unsafe { self.shared.as_ref() };
        shared.touch(ptr);
        let ack = Ack {
            counter: &shared.counters[arena].acked,
            value: self.acked[arena],
        };
        Ok((ptr, ack))
    }

    #[cold]
    #[inline(never)]
    fn foreign(&mut self, object: ArenaBox<T>) -> Foreign<ArenaBox<T>> {
        self.stats.foreign += 1;
        Foreign(object)
    }

    /// Counts of what this half has done.
    pub fn stats(&self) -> ReleaserStats {
        self.stats
    }
}

/// Stores an arena's acknowledged count once the object's destructor has run or
/// unwound.
struct Ack<'a> {
    counter: &'a AtomicUsize,
    value: usize,
}

impl Drop for Ack<'_> {
    #[inline]
    fn drop(&mut self) {
        // Release: the object's drop happens before the allocator's acquire load.
        self.counter.store(self.value, Ordering::Release);
    }
}

impl<T> Drop for Allocator<T> {
    fn drop(&mut self) {
        let handed_out = self.allocated() as usize;
        // SAFETY: this handle made or was given `shared` and leaves once, here.
        unsafe { leave(self.shared, Side::Allocating, handed_out) };
    }
}

impl<T> Drop for Releaser<T> {
    fn drop(&mut self) {
        let taken_back = self.stats.released as usize;
        // SAFETY: this handle made or was given `shared` and leaves once, here.
        unsafe { leave(self.shared, Side::Releasing, taken_back) };
    }
}

impl<T> Deref for ArenaBox<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the box owns a live `T` in this slot.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> DerefMut for ArenaBox<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the box owns a live `T` in this slot, and `&mut self` is unique.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T> ArenaBox<T> {
    /// Which arena the object lives in (the cross-thread pipeline write-up's `arena_idx`).
    ///
    /// ```
    /// let (mut alloc, _release) = handoff_pool::arena::new::<u8>(Default::default()).unwrap();
    /// assert_eq!(alloc.try_alloc(1).unwrap().arena(), 0);
    /// ```
    pub fn arena(&self) -> usize {
        self.arena
    }

    /// Which slot of the whole arena set the object occupies, from 0 to
    /// `arenas * slots_per_arena - 1` (arena `a` holds slots `a * slots_per_arena..`).
    ///
    /// ```
    /// let (mut alloc, _release) = handoff_pool::arena::new::<u8>(Default::default()).unwrap();
    /// let _first = alloc.try_alloc(1).unwrap();
    /// assert_eq!(alloc.try_alloc(2).unwrap().slot(), 1);
    /// ```
    pub fn slot(&self) -> usize {
        // SAFETY: the shared state is alive while this box is counted in it.
        unsafe { self.shared.as_ref() }.slab.index_of(self.ptr)
    }
}

/// Acknowledges a dropped object on its arena's `retired` counter, then retires it
/// from the teardown count; runs also while the object's destructor unwinds.
struct RetireFromArena<T> {
    shared: NonNull<Shared<T>>,
    arena: usize,
}

impl<T> Drop for RetireFromArena<T> {
    fn drop(&mut self) {
        // SAFETY: the object is still counted, so the shared state is alive.
        let shared = unsafe { self.shared.as_ref() };
        // Release: the object's drop happens before the allocating side's acquire load
        // of `retired`, after which it may hand the arena's memory out again.
        shared.counters[self.arena]
            .retired
            .fetch_add(1, Ordering::Release);
        drop(RetireOnDrop(self.shared));
    }
}

impl<T> Drop for ArenaBox<T> {
    fn drop(&mut self) {
        let _retire = RetireFromArena {
            shared: self.shared,
            arena: self.arena,
        };
        // SAFETY: the shared state is alive while this box is counted in it.
        unsafe { self.shared.as_ref() }.touch(self.ptr);
        // SAFETY: the box owns a live `T` in this slot; this is its one drop.
        unsafe { core::ptr::drop_in_place(self.ptr.as_ptr()) };
    }
}

impl<T: fmt::Debug> fmt::Debug for ArenaBox<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T> fmt::Debug for Allocator<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Allocator")
            .field("current", &self.current)
            .field("left_in_arena", &self.left_in_arena())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for Releaser<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Releaser")
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}
