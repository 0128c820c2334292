//! A single-item SPSC ring whose consumer finds items by a stamp in each slot instead
//! of the producer's shared index: one cache line per item crosses to the consumer
//! (the slot, carrying both the item and its stamp) where the default ring needs two
//! (the `tail` line, then the slot). See [`channel`] for when to choose it.
//!
//! The contract is the default ring's: a push succeeds whenever fewer than `capacity`
//! items are in the ring (in particular after the consumer popped, in happens-before
//! order); a pop returns an item as soon as one is published; the capacity is exact;
//! items left in the ring when both halves are gone are dropped exactly once.
//!
//! Protocol. Slot `i & mask` serves the indices `i` that map to it. The producer
//! writes item `i`, then stores the slot's stamp `i + 1` (release); the consumer at
//! index `h` takes the slot's item when the stamp (acquire) equals `h + 1`. A stamp
//! left from an earlier lap is `h + 1 - k * slots` for some `k >= 1`, never `h + 1`.
//! The producer learns which slots are free from the consumer's shared `head`, loaded
//! only when its cached `head + capacity` says full, as in the default ring. The
//! producer also stores its `tail` after each push: the consumer reads it only in
//! [`Consumer::len`], and the last handle uses it to drop the leftovers.

use core::fmt;
use core::mem::MaybeUninit;
use core::ptr::NonNull;

use alloc::boxed::Box;
use alloc::vec::Vec;

use crossbeam_utils::CachePadded;

use crate::sync::{Arc, AtomicUsize, Ordering, UnsafeCell};
use crate::{CapacityError, PopError, PushError};

/// One slot: the stamp of the last index written into it, and the item.
#[repr(C)]
struct Slot<T> {
    stamp: AtomicUsize,
    value: UnsafeCell<MaybeUninit<T>>,
}

/// What both halves share; freed (and the leftover items dropped) with the last half.
struct Shared<T> {
    /// Next index the consumer will read. Written by the consumer only.
    head: CachePadded<AtomicUsize>,
    /// Next index the producer will write. Written by the producer only, after the
    /// slot's stamp.
    tail: CachePadded<AtomicUsize>,
    /// Live halves: 2 after creation. A half's drop decrements it (release), so a half
    /// that sees 1 (acquire) also sees everything the other did before it went.
    halves: AtomicUsize,
    slots: Box<[Slot<T>]>,
}

// SAFETY: the halves enforce the SPSC protocol; sharing `Shared` between the two
// threads moves `T`s from one to the other, hence `T: Send`.
unsafe impl<T: Send> Send for Shared<T> {}
// SAFETY: as above; every slot is accessed by one side at a time, handed over by the
// release/acquire pairs on its stamp (producer to consumer) and on `head` (back).
unsafe impl<T: Send> Sync for Shared<T> {}

impl<T> Shared<T> {
    /// Drops the items of indices `[from, to)`, in order. If a destructor panics, the
    /// items after it are still dropped (each once) before the panic goes on.
    ///
    /// # Safety
    /// Those slots must hold initialised items that nobody will read or drop again.
    unsafe fn drop_items(&self, from: usize, to: usize) {
        /// Drops the rest of the range if dropping one item panics.
        struct Rest<'a, T>(&'a Shared<T>, usize, usize);
        impl<T> Drop for Rest<'_, T> {
            fn drop(&mut self) {
                // SAFETY: the caller of `drop_items` gave us these items to drop once;
                // this guard only runs when the loop below was cut short before them.
                unsafe { self.0.drop_items(self.1, self.2) }
            }
        }
        let mask = self.slots.len() - 1;
        let mut i = from;
        while i != to {
            let next = i.wrapping_add(1);
            let rest = Rest(self, next, to);
            self.slots[i & mask]
                .value
                // SAFETY: initialised and dropped exactly once (caller contract).
                .with_mut(|p| unsafe { (*p).assume_init_drop() });
            core::mem::forget(rest);
            i = next;
        }
    }
}

impl<T> Shared<T> {
    /// Whether the other half has been dropped (called from a live half).
    fn other_gone(&self) -> bool {
        self.halves.load(Ordering::Acquire) < 2
    }

    /// Called by each half's destructor, once.
    fn leave(&self) {
        // Release: everything this half did is visible to the other once it sees us gone.
        self.halves.fetch_sub(1, Ordering::Release);
    }
}

impl<T> Drop for Producer<T> {
    fn drop(&mut self) {
        self.shared.leave();
    }
}

impl<T> Drop for Consumer<T> {
    fn drop(&mut self) {
        // No index to publish here (the default ring's consumer has one):
        // every pop already stored `head` with release, after its read of the slot, and
        // no call takes a slot without popping it.
        self.shared.leave();
    }
}

impl<T> Drop for Shared<T> {
    fn drop(&mut self) {
        if !core::mem::needs_drop::<T>() {
            return;
        }
        // Relaxed: the last `Arc` drop orders both halves' stores before this.
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Relaxed);
        debug_assert!(tail.wrapping_sub(head) <= self.slots.len());
        // SAFETY: both halves are gone; `[head, tail)` are exactly the items pushed and
        // not popped, and nobody can reach them any more.
        unsafe { self.drop_items(head, tail) }
    }
}

/// The writing half of a [stamped ring](channel). `Send` (when `T: Send`), not `Sync`.
pub struct Producer<T> {
    shared: Arc<Shared<T>>,
    slots: NonNull<Slot<T>>,
    mask: usize,
    capacity: usize,
    /// Our own index; the shared `tail` equals it outside a method call.
    tail: usize,
    /// `head + capacity` as of the last load of `head`: we may write up to here.
    limit: usize,
}

/// The reading half of a [stamped ring](channel). `Send` (when `T: Send`), not `Sync`.
pub struct Consumer<T> {
    shared: Arc<Shared<T>>,
    slots: NonNull<Slot<T>>,
    mask: usize,
    capacity: usize,
    /// Our own index; the shared `head` equals it outside a method call.
    head: usize,
}

// SAFETY: a `Producer` writes only slots the consumer has released and publishes them
// with a release store; moving it moves `T`s to another thread, hence `T: Send`. The
// raw slot pointer keeps it `!Sync`.
unsafe impl<T: Send> Send for Producer<T> {}
// SAFETY: as for `Producer`: the consumer takes `T`s that another thread made.
unsafe impl<T: Send> Send for Consumer<T> {}

/// Creates a stamped ring that holds exactly `capacity` items.
///
/// Choose it over [`crate::channel`] for single items on a latency-critical path: an
/// item crosses to the consumer in one cache-line transfer instead of two, which
/// shortens the time from push to pop and keeps the consumer from slowing the producer
/// when the ring runs near empty. The price: each slot carries a `usize` stamp (a
/// 16-byte item takes 24 bytes), there is no batch, slice or chunk API, and a producer
/// that runs far ahead of its consumer is not faster than with the default ring.
/// docs/spsc-notebook.md gives the measurements.
///
/// # Panics
/// If `capacity` is 0, too large, or cannot be allocated; [`try_channel`] returns a
/// [`CapacityError`] instead.
///
/// ```
/// let (mut tx, mut rx) = handoff_spsc::stamped::channel::<u64>(1024);
/// let feed = std::thread::spawn(move || {
///     for i in 0..10_000u64 {
///         let mut v = i;
///         while let Err(full) = tx.try_push(v) {
///             v = full.into_inner();
///             std::hint::spin_loop();
///         }
///     }
/// });
/// let mut next = 0;
/// while next < 10_000 {
///     if let Ok(v) = rx.try_pop() {
///         assert_eq!(v, next);
///         next += 1;
///     }
/// }
/// feed.join().unwrap();
/// ```
#[track_caller]
pub fn channel<T>(capacity: usize) -> (Producer<T>, Consumer<T>) {
    crate::error::or_panic(try_channel(capacity))
}

/// Creates a stamped ring that holds exactly `capacity` items, or says why it cannot.
///
/// ```
/// use handoff_spsc::{stamped, CapacityError};
/// let (tx, _rx) = stamped::try_channel::<u32>(3).unwrap();
/// assert_eq!(tx.capacity(), 3);
/// assert_eq!(stamped::try_channel::<u32>(0).unwrap_err(), CapacityError::Zero);
/// ```
pub fn try_channel<T>(capacity: usize) -> Result<(Producer<T>, Consumer<T>), CapacityError> {
    with_start(capacity, 0)
}

/// A ring whose indices start at `start` (tests use it to cross the index wrap).
fn with_start<T>(
    capacity: usize,
    start: usize,
) -> Result<(Producer<T>, Consumer<T>), CapacityError> {
    let mut slots: Vec<Slot<T>> = crate::heap::reserve_slots(capacity)?;
    // Cannot overflow: `reserve_slots` checked it.
    let n = capacity.next_power_of_two();
    // Every slot starts with a stamp that is not the one its first index will look
    // for: that index itself (the consumer at index `i` waits for `i + 1`). Slot `j`
    // first serves index `start + ((j - start) & mask)`.
    let mask = n - 1;
    slots.extend((0..n).map(|j| Slot {
        stamp: AtomicUsize::new(start.wrapping_add(j.wrapping_sub(start) & mask)),
        value: UnsafeCell::new(MaybeUninit::uninit()),
    }));
    let shared = Arc::new(Shared {
        head: CachePadded::new(AtomicUsize::new(start)),
        tail: CachePadded::new(AtomicUsize::new(start)),
        halves: AtomicUsize::new(2),
        slots: slots.into_boxed_slice(),
    });
    // From the whole slice, so that the pointer may reach every slot.
    let base = NonNull::from(&*shared.slots).cast::<Slot<T>>();
    Ok((
        Producer {
            shared: Arc::clone(&shared),
            slots: base,
            mask,
            capacity,
            tail: start,
            limit: start.wrapping_add(capacity),
        },
        Consumer {
            shared,
            slots: base,
            mask,
            capacity,
            head: start,
        },
    ))
}

impl<T> Producer<T> {
    #[inline(always)]
    fn slot(&self, index: usize) -> &Slot<T> {
        // SAFETY: `index & mask` is below the slot count, and the slots live as long as
        // `shared`, which we hold.
        unsafe { &*self.slots.as_ptr().add(index & self.mask) }
    }

    /// Pushes `value`, or hands it back if the ring holds `capacity` items: in
    /// [`PushError::Full`], or [`PushError::Disconnected`] once the consumer has been
    /// dropped. Never blocks. The consumer's index, and whether it is still there, are
    /// read only when the cached copy says the ring is full.
    ///
    /// ```
    /// let (mut tx, _rx) = handoff_spsc::stamped::channel::<u8>(1);
    /// assert!(tx.try_push(1).is_ok());
    /// assert_eq!(tx.try_push(2).unwrap_err().into_inner(), 2);
    /// ```
    #[inline]
    pub fn try_push(&mut self, value: T) -> Result<(), PushError<T>> {
        let tail = self.tail;
        if tail == self.limit && self.refresh_free() == 0 {
            // A consumer seen gone may have popped just before it went (its last `head`
            // store came before its release in `leave`, which `other_gone` acquires):
            // look once more before saying so.
            if !self.shared.other_gone() {
                return Err(PushError::Full(value));
            }
            if self.refresh_free() == 0 {
                return Err(PushError::Disconnected(value));
            }
        }
        let slot = self.slot(tail);
        // SAFETY: `tail < head + capacity`, so the consumer has released this slot
        // (its `head` store, acquired in `refresh_free`, came after its last read) and
        // will not read it before the stamp below says so.
        slot.value
            .with_mut(|p| unsafe { p.write(MaybeUninit::new(value)) });
        let next = tail.wrapping_add(1);
        // Release: the item is written before the consumer can see its stamp.
        slot.stamp.store(next, Ordering::Release);
        self.tail = next;
        // Release: a consumer's `len` (acquire) that counts this item also sees it
        // written. (The last half's drop reads `tail` after the `Arc`'s own release and
        // acquire, which order every store of both halves.)
        self.shared.tail.store(next, Ordering::Release);
        Ok(())
    }

    /// Loads the consumer's `head`, updates the cache, returns the free slot count.
    #[cold]
    #[inline(never)]
    fn refresh_free(&mut self) -> usize {
        // Acquire: the consumer's read of a slot happens before its release of `head`.
        let head = self.shared.head.load(Ordering::Acquire);
        self.limit = head.wrapping_add(self.capacity);
        let free = self.limit.wrapping_sub(self.tail);
        debug_assert!(free <= self.capacity, "head ran past tail");
        free
    }

    /// Free slots right now (loads the consumer's index).
    ///
    /// ```
    /// let (mut tx, _rx) = handoff_spsc::stamped::channel::<u8>(3);
    /// tx.try_push(0).unwrap();
    /// assert_eq!(tx.free_len(), 2);
    /// let tx = tx; // `&self` is enough
    /// assert_eq!(tx.free_len(), 2);
    /// ```
    pub fn free_len(&self) -> usize {
        self.capacity - self.len()
    }

    /// Items in the ring as seen by the producer (the consumer may have taken some
    /// since).
    ///
    /// ```
    /// let (mut tx, _rx) = handoff_spsc::stamped::channel::<u8>(3);
    /// tx.try_push(0).unwrap();
    /// assert_eq!(tx.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        let head = self.shared.head.load(Ordering::Acquire);
        self.tail.wrapping_sub(head)
    }

    /// Whether the ring is empty as seen by the producer.
    ///
    /// ```
    /// let (tx, _rx) = handoff_spsc::stamped::channel::<u8>(3);
    /// assert!(tx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the ring is full right now (the consumer may free a slot at any time).
    ///
    /// ```
    /// let (mut tx, _rx) = handoff_spsc::stamped::channel::<u8>(1);
    /// tx.try_push(0).unwrap();
    /// assert!(tx.is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        self.len() == self.capacity
    }

    /// The number of items the ring holds when full: exactly what was asked for.
    ///
    /// ```
    /// let (tx, _rx) = handoff_spsc::stamped::channel::<u8>(1000);
    /// assert_eq!(tx.capacity(), 1000);
    /// ```
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Whether the [`Consumer`] has been dropped: nothing pushed from now on will be read.
    ///
    /// ```
    /// let (tx, rx) = handoff_spsc::stamped::channel::<u8>(1);
    /// drop(rx);
    /// assert!(tx.is_abandoned());
    /// ```
    pub fn is_abandoned(&self) -> bool {
        self.shared.other_gone()
    }
}

impl<T> Consumer<T> {
    #[inline(always)]
    fn slot(&self, index: usize) -> &Slot<T> {
        // SAFETY: `index & mask` is below the slot count, and the slots live as long as
        // `shared`, which we hold.
        unsafe { &*self.slots.as_ptr().add(index & self.mask) }
    }

    /// Whether the item of index `head` is published (acquires it if so).
    #[inline(always)]
    fn ready(&self, slot: &Slot<T>) -> bool {
        // Acquire: the producer wrote the item before its release of this stamp.
        slot.stamp.load(Ordering::Acquire) == self.head.wrapping_add(1)
    }

    /// Takes the oldest item, or says why there is none: [`PopError::Empty`], or
    /// [`PopError::Disconnected`] once the producer has been dropped and every item it
    /// pushed has been taken. Never blocks; reads only the item's own slot (and, when
    /// it is empty, whether the producer is still there).
    ///
    /// ```
    /// use handoff_spsc::PopError;
    /// let (mut tx, mut rx) = handoff_spsc::stamped::channel::<String>(8);
    /// tx.try_push("tick".to_string()).unwrap();
    /// assert_eq!(rx.try_pop().as_deref(), Ok("tick"));
    /// assert_eq!(rx.try_pop(), Err(PopError::Empty));
    /// ```
    #[inline]
    pub fn try_pop(&mut self) -> Result<T, PopError> {
        let head = self.head;
        let slot = self.slot(head);
        if !self.ready(slot) {
            // The producer stamped its last item before it left (a release the acquire
            // in `other_gone` reads): if it is gone, look once more.
            if !self.shared.other_gone() {
                return Err(PopError::Empty);
            }
            if !self.ready(slot) {
                return Err(PopError::Disconnected);
            }
        }
        // SAFETY: the stamp says the producer published this item (and the acquire
        // load ordered its write before us); it stays ours until we advance `head`.
        let value = slot.value.with(|p| unsafe { p.read().assume_init() });
        let next = head.wrapping_add(1);
        self.head = next;
        // Release: our read of the slot happens before the producer may overwrite it.
        self.shared.head.store(next, Ordering::Release);
        Ok(value)
    }

    /// A reference to the oldest item without removing it.
    ///
    /// ```
    /// let (mut tx, mut rx) = handoff_spsc::stamped::channel::<u8>(2);
    /// tx.try_push(4).unwrap();
    /// assert_eq!(rx.peek(), Some(&4));
    /// assert_eq!(rx.len(), 1);
    /// ```
    #[inline]
    pub fn peek(&self) -> Option<&T> {
        let slot = self.slot(self.head);
        if !self.ready(slot) {
            return None;
        }
        // SAFETY: published and initialised; only `try_pop` (which needs `&mut self`,
        // excluded by this borrow) releases the slot for the producer to overwrite.
        Some(slot.value.with(|p| unsafe { (*p).assume_init_ref() }))
    }

    /// Items in the ring as seen by the consumer (loads the producer's `tail`, which
    /// may lag the stamps by an item: never more than are there).
    ///
    /// ```
    /// let (mut tx, rx) = handoff_spsc::stamped::channel::<u8>(3);
    /// tx.try_push(0).unwrap();
    /// assert_eq!(rx.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        let tail = self.shared.tail.load(Ordering::Acquire);
        let n = tail.wrapping_sub(self.head);
        // The consumer may already have popped an item whose `tail` store it has not
        // seen yet; then `tail` is behind `head` and the difference wraps.
        if n > self.capacity {
            0
        } else {
            n
        }
    }

    /// Whether the ring is empty as seen by the consumer.
    ///
    /// ```
    /// let (_tx, rx) = handoff_spsc::stamped::channel::<u8>(3);
    /// assert!(rx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        !self.ready(self.slot(self.head))
    }

    /// The number of items the ring holds when full: exactly what was asked for.
    ///
    /// ```
    /// let (_tx, rx) = handoff_spsc::stamped::channel::<u8>(1000);
    /// assert_eq!(rx.capacity(), 1000);
    /// ```
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Whether the [`Producer`] has been dropped: once the ring is empty, nothing more
    /// will come.
    ///
    /// ```
    /// let (mut tx, mut rx) = handoff_spsc::stamped::channel::<u8>(1);
    /// tx.try_push(1).unwrap();
    /// drop(tx);
    /// assert!(rx.is_abandoned());
    /// assert_eq!(rx.try_pop(), Ok(1));
    /// ```
    pub fn is_abandoned(&self) -> bool {
        self.shared.other_gone()
    }
}

impl<T> fmt::Debug for Producer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("stamped::Producer")
            .field("capacity", &self.capacity)
            .field("len", &self.len())
            .field("abandoned", &self.is_abandoned())
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for Consumer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("stamped::Consumer")
            .field("capacity", &self.capacity)
            .field("len", &self.len())
            .field("abandoned", &self.is_abandoned())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn single_items_cross_the_index_wrap() {
        for capacity in [1, 3, 4, 5] {
            let (mut tx, mut rx) = with_start::<u64>(capacity, usize::MAX - 2).unwrap();
            for round in 0..6u64 {
                for i in 0..capacity as u64 {
                    tx.try_push(round * 10 + i).unwrap();
                }
                assert!(tx.try_push(99).is_err(), "capacity {capacity} is exact");
                assert_eq!(rx.len(), capacity);
                assert_eq!(tx.len(), capacity);
                for i in 0..capacity as u64 {
                    assert_eq!(rx.try_pop(), Ok(round * 10 + i));
                }
                assert_eq!(rx.try_pop(), Err(crate::PopError::Empty));
                assert!(rx.is_empty());
            }
        }
    }

    #[test]
    fn leftovers_are_dropped_across_the_index_wrap() {
        use alloc::rc::Rc;
        let token = Rc::new(());
        let (mut tx, mut rx) = with_start::<Rc<()>>(4, usize::MAX - 1).unwrap();
        for _ in 0..4 {
            tx.try_push(Rc::clone(&token)).unwrap();
        }
        drop(rx.try_pop());
        assert_eq!(Rc::strong_count(&token), 4);
        drop(tx);
        drop(rx);
        assert_eq!(Rc::strong_count(&token), 1);
    }

    #[test]
    fn a_stale_stamp_is_never_taken_for_a_new_item() {
        // Capacity 3 in 4 slots: slot indices drift against the laps; every pop must
        // see exactly what was pushed, and an empty ring nothing.
        let (mut tx, mut rx) = channel::<u32>(3);
        let mut next_out = 0;
        for i in 0..100u32 {
            tx.try_push(i).unwrap();
            if i % 3 == 2 {
                while let Ok(v) = rx.try_pop() {
                    assert_eq!(v, next_out);
                    next_out += 1;
                }
                assert_eq!(next_out, i + 1);
            }
        }
    }
}
