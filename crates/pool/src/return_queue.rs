//! The return-queue pool (the cross-thread pipeline write-up's "freelist-return-queue"): objects made on one
//! thread, freed on another, their slots sent back through an SPSC ring.
//!
//! * The [`Allocator`] owns a local freelist (a stack of free slot addresses), seeded
//!   with every slot of a slab allocated up front. Allocating is a pop.
//! * The [`Releaser`] drops the object and pushes its slot onto the *return ring*, a
//!   `handoff_spsc` ring from the releasing thread back to the allocating one.
//! * When its freelist is empty the allocator drains up to `batch` slots from the
//!   return ring at once, stacked so that they come out in the order they came back.
//!   Only then, and only if the ring is empty too, is the pool
//!   exhausted: [`Allocator::try_alloc`] hands the value back, and the miss is counted.
//!
//! ```
//! use handoff_pool::return_queue;
//!
//! #[derive(Debug)]
//! struct Order { seq: u64, qty: i32 }
//!
//! let (mut alloc, mut release) = return_queue::new::<Order>(return_queue::Config::default()).unwrap();
//! let (mut to_risk, mut from_feed) = handoff_spsc::channel(1024);
//! let risk = std::thread::spawn(move || {
//!     let mut seen = 0;
//!     while seen < 10_000 {
//!         if let Ok(order) = from_feed.try_pop() {
//!             let order: return_queue::PoolBox<Order> = order;
//!             assert_eq!(order.seq, seen);
//!             release.release(order).unwrap();
//!             seen += 1;
//!         }
//!     }
//! });
//! for seq in 0..10_000 {
//!     let mut order = Order { seq, qty: 5 };
//!     let boxed = loop {
//!         match alloc.try_alloc(order) {
//!             Ok(b) => break b,
//!             Err(e) => { order = e.into_inner(); std::hint::spin_loop(); }
//!         }
//!     };
//!     let mut item = boxed;
//!     while let Err(full) = to_risk.try_push(item) {
//!         item = full.into_inner();
//!         std::hint::spin_loop();
//!     }
//! }
//! risk.join().unwrap();
//! ```

use core::fmt;
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;

use alloc::vec::Vec;

use crate::slab::{leave, prefetch_write, Owned, RetireOnDrop, Side, Slab, SlotPtr, Teardown};
use crate::sync::Shadow;
use crate::{ConfigError, Exhausted, Foreign};

/// Sizes of a return-queue pool. The defaults are the cross-thread pipeline write-up's: 4096 slots, a
/// return ring of depth 1024, drained 32 at a time.
///
/// ```
/// let c = handoff_pool::return_queue::Config::default();
/// assert_eq!((c.slots, c.return_depth, c.batch, c.release_batch), (4096, 1024, 32, 32));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Objects that can be live at once (the slab's size).
    pub slots: usize,
    /// Capacity of the return ring. Smaller than `slots` is fine: slots that do not
    /// fit wait on the releasing side (see [`Releaser::flush`]).
    pub return_depth: usize,
    /// Most slots taken from the return ring per drain.
    pub batch: usize,
    /// Released slots the releaser collects before it sends them back in one push
    /// (one index store for the lot). Until then they wait on the releasing side;
    /// [`Releaser::flush`] sends them at once. 1 sends every slot as it is released.
    pub release_batch: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            slots: 4096,
            return_depth: 1024,
            batch: 32,
            release_batch: 32,
        }
    }
}

struct Shared<T> {
    slab: Slab<T>,
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

/// Makes a pool and returns its two halves: the [`Allocator`] for the thread that makes
/// objects and the [`Releaser`] for the thread that frees them.
///
/// ```
/// use handoff_pool::{return_queue, ConfigError};
/// let bad = return_queue::Config { batch: 0, ..Default::default() };
/// assert_eq!(return_queue::new::<u64>(bad).unwrap_err(), ConfigError::Zero("batch"));
/// ```
pub fn new<T>(config: Config) -> Result<(Allocator<T>, Releaser<T>), ConfigError> {
    if config.batch == 0 {
        return Err(ConfigError::Zero("batch"));
    }
    if config.release_batch == 0 {
        return Err(ConfigError::Zero("release_batch"));
    }
    if config.return_depth == 0 {
        return Err(ConfigError::Zero("return_depth"));
    }
    let slab = Slab::<T>::new(config.slots)?;
    let (ring_tx, ring_rx) = handoff_spsc::try_channel::<SlotPtr<T>>(config.return_depth)
        .map_err(ConfigError::ReturnRing)?;
    let mut freelist = Vec::with_capacity(config.slots);
    // Pushed in reverse so that the first allocation gets slot 0.
    freelist.extend((0..config.slots).rev().map(|i| SlotPtr(slab.slot(i))));
    let shared = NonNull::from(alloc::boxed::Box::leak(alloc::boxed::Box::new(Shared {
        shadow: Shadow::new(config.slots),
        slab,
        teardown: Teardown::new(),
    })));
    Ok((
        Allocator {
            shared,
            free: freelist,
            returns: ring_rx,
            batch: config.batch,
            stats: AllocatorStats::default(),
        },
        Releaser {
            shared,
            returns: ring_tx,
            waiting: Vec::with_capacity(config.slots),
            release_batch: config.release_batch,
            stats: ReleaserStats::default(),
        },
    ))
}

/// What an [`Allocator`] has done so far. `#[non_exhaustive]`: more counters may come.
///
/// Objects alive now are `allocated - released - retired`, with `released` from the
/// [`Releaser`]'s stats (each half counts on its own thread, at no cost to the other).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AllocatorStats {
    /// Objects handed out.
    pub allocated: u64,
    /// Allocations refused because every slot was in use.
    pub exhausted: u64,
    /// Drains of the return ring that found at least one slot.
    pub drains: u64,
    /// Slots taken back from the return ring in all.
    pub drained: u64,
    /// Slots out of this half's hands: objects alive, slots released and on their way
    /// back (waiting in the releaser or in the return ring), and retired slots
    /// (`allocated - drained`). The pool is exhausted when it reaches the capacity.
    pub out: u64,
    /// Slots retired: their [`PoolBox`] was dropped somewhere else than in
    /// [`Releaser::free`] / [`Releaser::release`], so the slot is never used again (it
    /// is freed with the pool). The pool has `capacity - retired` usable slots left.
    pub retired: u64,
}

/// What a [`Releaser`] has done so far. `#[non_exhaustive]`: more counters may come.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReleaserStats {
    /// Objects released (dropped, slot sent back).
    pub released: u64,
    /// Batches that found the return ring too full to take them whole.
    pub deferred: u64,
    /// Objects from another pool, handed back.
    pub foreign: u64,
    /// Slots retired (see [`AllocatorStats::retired`]), counted by whoever dropped
    /// the box.
    pub retired: u64,
}

/// The allocating half: owns the local freelist and the reading end of the return
/// ring. `Send` (when `T: Send`), not `Sync`.
pub struct Allocator<T> {
    shared: NonNull<Shared<T>>,
    free: Vec<SlotPtr<T>>,
    returns: handoff_spsc::Consumer<SlotPtr<T>>,
    batch: usize,
    stats: AllocatorStats,
}

/// The releasing half: drops objects and sends their slots back. `Send` (when
/// `T: Send`), not `Sync`.
pub struct Releaser<T> {
    shared: NonNull<Shared<T>>,
    returns: handoff_spsc::Producer<SlotPtr<T>>,
    /// Released slots not yet sent back (collecting a batch, or the ring was full),
    /// oldest first.
    waiting: Vec<SlotPtr<T>>,
    release_batch: usize,
    stats: ReleaserStats,
}

/// An object in a pool slot: like a `Box<T>`, but its memory goes back to the pool.
///
/// Give it to [`Releaser::free`] (on any thread that owns the releaser) to drop the
/// object and recycle the slot, or to [`Releaser::release`] to take the object out and
/// recycle the slot. If it is dropped anywhere else instead, the object is
/// dropped and the slot is *retired*: never reused, freed with the pool. Forgetting it
/// leaks the object, and the pool's memory.
pub struct PoolBox<T> {
    ptr: NonNull<T>,
    shared: NonNull<Shared<T>>,
    _owns: PhantomData<T>,
}

// SAFETY: the allocator's freelist and ring end are touched only through `&mut self`;
// moving it to another thread moves the right to write `T`s into slots, and the `T`s
// it makes go to whichever thread releases them, hence `T: Send`. Not `Sync`: the
// `NonNull` fields see to that.
unsafe impl<T: Send> Send for Allocator<T> {}
// SAFETY: as for `Allocator`: the releaser drops `T`s made on another thread.
unsafe impl<T: Send> Send for Releaser<T> {}
// SAFETY: a `PoolBox` owns its `T` like a `Box<T>`; the shared state it points to is
// only touched through atomics (`Teardown`).
unsafe impl<T: Send> Send for PoolBox<T> {}
// SAFETY: `&PoolBox<T>` only gives `&T`.
unsafe impl<T: Sync> Sync for PoolBox<T> {}

impl<T> Allocator<T> {
    /// Moves `value` into a free slot, or hands it back in [`Exhausted`] if every slot
    /// is in use (counted in [`stats`](Self::stats)). When the local freelist is empty,
    /// first drains up to `batch` slots from the return ring.
    ///
    /// ```
    /// let config = handoff_pool::return_queue::Config { slots: 1, release_batch: 1, ..Default::default() };
    /// let (mut alloc, mut release) = handoff_pool::return_queue::new::<u32>(config).unwrap();
    /// let a = alloc.try_alloc(1).unwrap();
    /// assert!(alloc.try_alloc(2).is_err());
    /// release.release(a).unwrap();
    /// assert_eq!(*alloc.try_alloc(3).unwrap(), 3);
    /// assert_eq!(alloc.stats().exhausted, 1);
    /// ```
    #[inline]
    pub fn try_alloc(&mut self, value: T) -> Result<PoolBox<T>, Exhausted<T>> {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => match self.drain() {
                Some(slot) => slot,
                None => {
                    self.count_exhausted();
                    return Err(Exhausted(value));
                }
            },
        };
        self.shared().touch(slot.0);
        // SAFETY: a slot on the freelist is free: it was never handed out, or its last
        // object was dropped by the releaser before the slot was sent back through
        // the return ring (the ring's release/acquire orders that drop before this).
        unsafe { slot.0.as_ptr().write(value) };
        self.stats.allocated += 1;
        Ok(PoolBox {
            ptr: slot.0,
            shared: self.shared,
            _owns: PhantomData,
        })
    }

    /// Moves up to `batch` returned slots onto the freelist and pops one.
    #[cold]
    #[inline(never)]
    fn drain(&mut self) -> Option<SlotPtr<T>> {
        let before = self.free.len();
        // The freelist has room for every slot of the slab, so this never reallocates.
        self.free.extend(self.returns.read_chunk(self.batch));
        let got = self.free.len() - before;
        // Handed out in the order they came back (oldest first), so the allocations
        // walk the slots in the order the releaser freed them, the order they were
        // handed out before: the hardware prefetcher follows that walk. Popped in ring
        // order (newest first) the cross-thread bench ran 18.9 ns an object, in this
        // order 17.0 (docs/pool.md).
        self.free[before..].reverse();
        // Each of these slots is written by one of the next allocations: fetch their
        // lines for writing now, from the releaser's core, all at once (17.0 -> 15.5 ns).
        for slot in &self.free[before..] {
            prefetch_write(slot.0.as_ptr());
        }
        if got > 0 {
            self.stats.drains += 1;
            self.stats.drained += got as u64;
        }
        self.free.pop()
    }

    /// Counts a refusal. The refused value stays out of this cold call: passing it
    /// would make the hot path build every value in a stack copy first.
    #[cold]
    #[inline(never)]
    fn count_exhausted(&mut self) {
        self.stats.exhausted += 1;
    }

    /// Slots on the local freelist now (not counting slots waiting in the return ring).
    pub fn local_free(&self) -> usize {
        self.free.len()
    }

    /// The pool's size: most objects live at once.
    pub fn capacity(&self) -> usize {
        self.shared().slab.len()
    }

    /// Counts of what this half has done, and the slots retired.
    ///
    /// ```
    /// let (mut alloc, mut release) = handoff_pool::return_queue::new::<u8>(Default::default()).unwrap();
    /// let a = alloc.try_alloc(1).unwrap();
    /// let b = alloc.try_alloc(2).unwrap();
    /// release.free(a).unwrap();
    /// drop(b); // not through the releaser: its slot is retired
    /// let s = alloc.stats();
    /// assert_eq!((s.allocated, s.out, s.retired), (2, 2, 1));
    /// assert_eq!(s.allocated - release.stats().released - s.retired, 0); // alive now
    /// ```
    pub fn stats(&self) -> AllocatorStats {
        AllocatorStats {
            out: self.stats.allocated - self.stats.drained,
            retired: self.shared().teardown.retired(),
            ..self.stats
        }
    }

    fn shared(&self) -> &Shared<T> {
        // SAFETY: this handle keeps the shared state alive (`Teardown`).
        unsafe { self.shared.as_ref() }
    }
}

impl<T> Releaser<T> {
    /// Moves the object out of its slot, sends the slot back to the allocator and
    /// returns the object; an object from another pool is handed back untouched in
    /// [`Foreign`]. Taking the `PoolBox` by value makes releasing it twice impossible.
    /// [`free`](Self::free) drops the object in its slot instead.
    ///
    /// The slot waits here until `release_batch` slots are collected (or the ring has
    /// room for them), then they go back with one push; [`flush`](Self::flush) sends
    /// them at once.
    ///
    /// ```
    /// let (mut alloc, mut release) = handoff_pool::return_queue::new::<String>(Default::default()).unwrap();
    /// let s = alloc.try_alloc("ask 101.5".to_string()).unwrap();
    /// assert_eq!(release.release(s).unwrap(), "ask 101.5");
    /// assert_eq!(release.stats().released, 1);
    /// ```
    #[inline]
    pub fn release(&mut self, object: PoolBox<T>) -> Result<T, Foreign<PoolBox<T>>> {
        let send = self.take(object)?;
        // SAFETY: `take` made this handle the owner of the live `T` in the slot; it
        // is moved out once, and the slot is empty from here on.
        let value = unsafe { send.slot.0.as_ptr().read() };
        // The slot goes back after the read.
        drop(send);
        Ok(value)
    }

    /// Drops the object in its slot and sends the slot back to the allocator (also if
    /// the object's destructor panics), or hands the object back untouched in
    /// [`Foreign`] if it came from another pool. As [`release`](Self::release), without
    /// moving the object out.
    ///
    /// ```
    /// let (mut alloc, mut release) = handoff_pool::return_queue::new::<String>(Default::default()).unwrap();
    /// let s = alloc.try_alloc("ask 101.5".to_string()).unwrap();
    /// release.free(s).unwrap();
    /// assert_eq!(release.stats().released, 1);
    /// ```
    #[inline]
    pub fn free(&mut self, object: PoolBox<T>) -> Result<(), Foreign<PoolBox<T>>> {
        let send = self.take(object)?;
        // SAFETY: `take` made this handle the owner of the live `T` in the slot; this
        // is its one drop. The slot goes back after it, also if it panics.
        unsafe { core::ptr::drop_in_place(send.slot.0.as_ptr()) };
        Ok(())
    }

    /// Takes `object` over for `release` and `free`: checks that it is this pool's,
    /// forgets the box (the leak-safety rule: ownership moves first), counts it, and
    /// returns the guard that sends its slot back when dropped.
    #[inline(always)]
    fn take(&mut self, object: PoolBox<T>) -> Result<SendBack<'_, T>, Foreign<PoolBox<T>>> {
        if object.shared != self.shared {
            return Err(self.foreign(object));
        }
        let object = ManuallyDrop::new(object);
        let slot = SlotPtr(object.ptr);
        self.stats.released += 1;
        self.shared().touch(slot.0);
        Ok(SendBack {
            releaser: self,
            slot,
        })
    }

    #[inline]
    fn send_back(&mut self, slot: SlotPtr<T>) {
        // Room for every slot of the slab was reserved, so this never reallocates.
        self.waiting.push(slot);
        if self.waiting.len() >= self.release_batch {
            self.send_batch();
        }
    }

    #[cold]
    #[inline(never)]
    fn send_batch(&mut self) {
        if self.flush() > 0 {
            self.stats.deferred += 1;
        }
    }

    /// Sends the slots waiting here, oldest first, as far as the return ring has room;
    /// returns how many still wait. Call it when the releasing thread is idle, so that
    /// a part batch does not keep the allocator short. Call it after a stretch of empty
    /// polls rather than on every one: at a steady trickle every object would then go
    /// back on its own, and the runner's pipeline measured that as 15-30 ns more at p50
    /// on the objects' forward path.
    pub fn flush(&mut self) -> usize {
        if self.waiting.is_empty() {
            return 0;
        }
        let sent = self.returns.push_slice(&self.waiting);
        self.waiting.drain(..sent);
        self.waiting.len()
    }

    #[cold]
    #[inline(never)]
    fn foreign(&mut self, object: PoolBox<T>) -> Foreign<PoolBox<T>> {
        self.stats.foreign += 1;
        Foreign(object)
    }

    /// Counts of what this half has done, and the slots retired.
    pub fn stats(&self) -> ReleaserStats {
        ReleaserStats {
            retired: self.shared().teardown.retired(),
            ..self.stats
        }
    }

    fn shared(&self) -> &Shared<T> {
        // SAFETY: this handle keeps the shared state alive (`Teardown`).
        unsafe { self.shared.as_ref() }
    }
}

/// Sends a released slot back once its object's destructor has run, or unwound.
struct SendBack<'a, T> {
    releaser: &'a mut Releaser<T>,
    slot: SlotPtr<T>,
}

impl<T> Drop for SendBack<'_, T> {
    fn drop(&mut self) {
        self.releaser.send_back(self.slot);
    }
}

impl<T> Drop for Allocator<T> {
    fn drop(&mut self) {
        let handed_out = self.stats.allocated as usize;
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

impl<T> Deref for PoolBox<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the box owns a live `T` in this slot.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> DerefMut for PoolBox<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the box owns a live `T` in this slot, and `&mut self` is unique.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T> PoolBox<T> {
    /// Which slot of the pool the object occupies, from 0 to `capacity - 1`.
    ///
    /// ```
    /// let (mut alloc, _release) = handoff_pool::return_queue::new::<u8>(Default::default()).unwrap();
    /// assert_eq!(alloc.try_alloc(1).unwrap().slot(), 0);
    /// ```
    pub fn slot(&self) -> usize {
        // SAFETY: the shared state is alive while this box is counted in it.
        unsafe { self.shared.as_ref() }.slab.index_of(self.ptr)
    }
}

impl<T> Drop for PoolBox<T> {
    fn drop(&mut self) {
        // Retired even if the destructor below panics.
        let _retire = RetireOnDrop(self.shared);
        // SAFETY: the shared state is alive while this box is counted in it.
        unsafe { self.shared.as_ref() }.touch(self.ptr);
        // SAFETY: the box owns a live `T` in this slot; this is its one drop.
        unsafe { core::ptr::drop_in_place(self.ptr.as_ptr()) };
    }
}

impl<T: fmt::Debug> fmt::Debug for PoolBox<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T> fmt::Debug for Allocator<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Allocator")
            .field("capacity", &self.capacity())
            .field("local_free", &self.free.len())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for Releaser<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Releaser")
            .field("waiting", &self.waiting.len())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}
