//! The producer and consumer halves of a ring.

use core::cell::Cell;
use core::fmt;
use core::marker::PhantomData;

use crate::chunk::{ReadChunk, WriteChunk};
use crate::raw::{Backing, Raw};
use crate::slip::{Side, Slip};
use crate::sync::Ordering;
use crate::PushError;

use crate::Heap;

/// The writing half of a ring. `Send` (when `T: Send`), not `Sync`: exactly one
/// thread pushes at a time.
///
/// `B` says what owns the ring's memory: [`Heap`](crate::Heap) (the default, from
/// [`channel`](crate::channel)) or `&StaticChannel` (from
/// [`StaticChannel::split`](crate::StaticChannel::split)).
///
/// ```
/// let (mut tx, mut rx) = handoff_spsc::channel::<u64>(2);
/// std::thread::spawn(move || {
///     for i in 0..100 {
///         let mut v = i;
///         while let Err(e) = tx.try_push(v) { v = e.into_inner(); std::hint::spin_loop(); }
///     }
/// });
/// let mut next = 0;
/// while next < 100 {
///     if let Some(v) = rx.try_pop() { assert_eq!(v, next); next += 1; }
/// }
/// ```
pub struct Producer<T, B: Backing = Heap<T>> {
    pub(crate) raw: Raw<T>,
    /// Our own index; the shared `tail` always equals it outside a method call.
    pub(crate) tail: usize,
    /// `head + capacity` as of the last time we loaded `head`: we may write up to here
    /// without looking at the consumer's cache line.
    pub(crate) limit: Cell<usize>,
    /// Temporal slipping (see [`set_slip`](Self::set_slip)).
    pub(crate) slip: Slip,
    pub(crate) _backing: B,
    pub(crate) _owns: PhantomData<T>,
}

/// The reading half of a ring. `Send` (when `T: Send`), not `Sync`.
///
/// ```
/// let (mut tx, mut rx) = handoff_spsc::channel::<String>(8);
/// tx.try_push("tick".to_string()).unwrap();
/// assert_eq!(rx.peek().map(String::as_str), Some("tick"));
/// assert_eq!(rx.try_pop().as_deref(), Some("tick"));
/// assert_eq!(rx.try_pop(), None);
/// ```
pub struct Consumer<T, B: Backing = Heap<T>> {
    pub(crate) raw: Raw<T>,
    /// Our own index: every item before it has been moved out or dropped. The shared
    /// `head` equals it outside a method call, except after a forgotten `ReadChunk`,
    /// when the shared one lags (the producer then sees fewer free slots, never more)
    /// until the next release or the next time the consumer finds the ring empty.
    pub(crate) head: usize,
    /// `tail` as of the last time we loaded it: items up to here are ready.
    pub(crate) cached_tail: Cell<usize>,
    /// Temporal slipping (see [`set_slip`](Self::set_slip)).
    pub(crate) slip: Slip,
    pub(crate) _backing: B,
    pub(crate) _owns: PhantomData<T>,
}

// SAFETY: a `Producer` only writes slots the consumer has released and publishes them
// with a release store; moving it to another thread moves `T`s there, hence `T: Send`.
// It is not `Sync` (the `Cell` and the raw pointers see to that).
unsafe impl<T: Send, B: Backing + Send> Send for Producer<T, B> {}
// SAFETY: as for `Producer`: the consumer takes `T`s that another thread made.
unsafe impl<T: Send, B: Backing + Send> Send for Consumer<T, B> {}

pub(crate) fn pair<T, B: Backing>(
    raw: Raw<T>,
    producer_backing: B,
    consumer_backing: B,
) -> (Producer<T, B>, Consumer<T, B>) {
    let capacity = raw.capacity();
    let consumer_raw = raw.duplicate();
    (
        Producer {
            raw,
            tail: 0,
            limit: Cell::new(capacity),
            slip: Slip::new(Side::Producer, capacity),
            _backing: producer_backing,
            _owns: PhantomData,
        },
        Consumer {
            raw: consumer_raw,
            head: 0,
            cached_tail: Cell::new(0),
            slip: Slip::new(Side::Consumer, capacity),
            _backing: consumer_backing,
            _owns: PhantomData,
        },
    )
}

impl<T, B: Backing> Producer<T, B> {
    /// Pushes `value`, or hands it back in [`PushError::Full`] if the ring holds
    /// `capacity` items. Never blocks. The consumer's index is read only when the
    /// producer's cached copy says the ring is full.
    ///
    /// ```
    /// let (mut tx, _rx) = handoff_spsc::channel::<u8>(1);
    /// assert!(tx.try_push(1).is_ok());
    /// assert!(tx.try_push(2).is_err());
    /// ```
    #[inline]
    pub fn try_push(&mut self, value: T) -> Result<(), PushError<T>> {
        let tail = self.tail;
        if tail == self.limit.get() && self.poll_free() == 0 {
            return Err(PushError::Full(value));
        }
        // SAFETY: `tail < limit <= head + capacity`, so the slot is free and ours.
        unsafe { self.raw.write(tail, value) };
        self.publish(tail.wrapping_add(1));
        Ok(())
    }

    /// Copies as many items of `src` as fit, publishes them with one index store, and
    /// returns how many were pushed (possibly 0).
    ///
    /// ```
    /// let (mut tx, mut rx) = handoff_spsc::channel::<u32>(4);
    /// assert_eq!(tx.push_slice(&[1, 2, 3, 4, 5, 6]), 4);
    /// let mut out = [0; 8];
    /// assert_eq!(rx.pop_slice(&mut out), 4);
    /// assert_eq!(&out[..4], &[1, 2, 3, 4]);
    /// ```
    #[inline]
    pub fn push_slice(&mut self, src: &[T]) -> usize
    where
        T: Copy,
    {
        let n = src.len().min(self.free_hint(src.len()));
        if n == 0 {
            return 0;
        }
        let tail = self.tail;
        self.raw.track_write(tail, n);
        let (a, a_len, b, b_len) = self.raw.segments(tail, n);
        // SAFETY: the `n` slots from `tail` are free (checked above) and in bounds;
        // `MaybeUninit<T>` has `T`'s layout; `src` cannot overlap the ring's slots,
        // which are never handed out as `&[T]` while free.
        unsafe {
            core::ptr::copy_nonoverlapping(src.as_ptr(), a.cast::<T>(), a_len);
            core::ptr::copy_nonoverlapping(src.as_ptr().add(a_len), b.cast::<T>(), b_len);
        }
        self.publish(tail.wrapping_add(n));
        n
    }

    /// Reserves up to `max` free slots for zero-copy writing. Fill them with
    /// [`WriteChunk::push`] / [`WriteChunk::extend`] (or the raw slices and
    /// [`WriteChunk::assume_written`]) and make them visible to the consumer with one
    /// index store by [`WriteChunk::commit`]. The chunk may be shorter than `max`
    /// (empty if the ring is full).
    ///
    /// ```
    /// let (mut tx, mut rx) = handoff_spsc::channel::<String>(8);
    /// let mut chunk = tx.write_chunk(3);
    /// assert_eq!(chunk.len(), 3);
    /// assert_eq!(chunk.extend(["a", "b"].iter().map(|s| s.to_string())), 2);
    /// chunk.commit();
    /// assert_eq!(rx.len(), 2);
    /// ```
    #[inline]
    pub fn write_chunk(&mut self, max: usize) -> WriteChunk<'_, T> {
        let n = max.min(self.free_hint(max));
        self.raw.track_write(self.tail, n);
        WriteChunk::new(&self.raw, &mut self.tail, n)
    }

    /// Number of free slots: at least this many pushes will succeed.
    ///
    /// ```
    /// let (mut tx, _rx) = handoff_spsc::channel::<u8>(3);
    /// tx.try_push(0).unwrap();
    /// assert_eq!(tx.free_len(), 2);
    /// ```
    #[inline]
    pub fn free_len(&self) -> usize {
        self.refresh_free()
    }

    /// Number of items in the ring as seen by the producer (the consumer may have taken
    /// some since).
    ///
    /// ```
    /// let (mut tx, _rx) = handoff_spsc::channel::<u8>(3);
    /// tx.try_push(0).unwrap();
    /// assert_eq!(tx.len(), 1);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.raw.capacity() - self.refresh_free()
    }

    /// Whether the ring is empty as seen by the producer.
    ///
    /// ```
    /// let (tx, _rx) = handoff_spsc::channel::<u8>(3);
    /// assert!(tx.is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the ring is full right now (the consumer may free a slot at any time).
    ///
    /// ```
    /// let (mut tx, _rx) = handoff_spsc::channel::<u8>(1);
    /// tx.try_push(0).unwrap();
    /// assert!(tx.is_full());
    /// ```
    #[inline]
    pub fn is_full(&self) -> bool {
        self.refresh_free() == 0
    }

    /// The number of items the ring holds when full: exactly what was asked for.
    ///
    /// ```
    /// let (tx, _rx) = handoff_spsc::channel::<u8>(1000);
    /// assert_eq!(tx.capacity(), 1000);
    /// ```
    #[inline]
    pub fn capacity(&self) -> usize {
        self.raw.capacity()
    }

    /// Turns temporal slipping on or off for `try_push` (on by default in rings of 256
    /// slots or more; smaller rings never slip).
    ///
    /// When on, a `try_push` that refreshes its view of the consumer's index while
    /// streaming (its previous refresh found room too) and finds fewer than a quarter
    /// of the ring free waits, for as long as the consumer keeps freeing slots and at
    /// most six rounds of about 2048 TSC ticks, before it writes: a producer running
    /// right behind the consumer would otherwise write into the cache line the
    /// consumer is reading, item after item. The push still succeeds whenever a slot
    /// is free and fails at once when none is; what it costs is the wait. See the
    /// crate documentation, "Temporal slipping".
    ///
    /// ```
    /// let (mut tx, _rx) = handoff_spsc::channel::<u64>(1024);
    /// assert!(tx.slips());
    /// tx.set_slip(false);
    /// assert!(!tx.slips());
    /// ```
    pub fn set_slip(&mut self, on: bool) {
        self.slip.set(Side::Producer, on, self.raw.capacity());
    }

    /// Whether `try_push` slips (see [`set_slip`](Self::set_slip)).
    ///
    /// ```
    /// let (tx, _rx) = handoff_spsc::channel::<u64>(16);
    /// assert!(!tx.slips()); // too small to slip
    /// ```
    pub fn slips(&self) -> bool {
        self.slip.is_on()
    }

    /// Whether the [`Consumer`] has been dropped: nothing pushed from now on will be read.
    ///
    /// ```
    /// let (tx, rx) = handoff_spsc::channel::<u8>(1);
    /// drop(rx);
    /// assert!(tx.is_abandoned());
    /// ```
    #[inline]
    pub fn is_abandoned(&self) -> bool {
        self.raw.other_dropped()
    }

    /// Free slots according to the cache; reloads `head` only when fewer than `want`.
    #[inline(always)]
    fn free_hint(&self, want: usize) -> usize {
        let cached = self.limit.get().wrapping_sub(self.tail);
        if cached >= want {
            cached
        } else {
            self.refresh_free()
        }
    }

    /// [`refresh_free`](Self::refresh_free) for `try_push`: a producer streaming right
    /// behind the consumer waits for it to get ahead ([`set_slip`](Self::set_slip)).
    #[inline]
    fn poll_free(&self) -> usize {
        let free = self.refresh_free();
        if self.slip.should_wait(free) {
            self.slip.wait(free, || self.refresh_free())
        } else {
            free
        }
    }

    /// Loads the consumer's `head`, updates the cache, returns the free slot count.
    #[inline]
    fn refresh_free(&self) -> usize {
        // Acquire: the consumer finished reading a slot before releasing it via `head`.
        let head = self.raw.header().head.load(Ordering::Acquire);
        let limit = head.wrapping_add(self.raw.capacity());
        self.limit.set(limit);
        let free = limit.wrapping_sub(self.tail);
        debug_assert!(free <= self.raw.capacity(), "head ran past tail");
        free
    }

    #[inline(always)]
    fn publish(&mut self, tail: usize) {
        self.tail = tail;
        // Release: the slot writes happen before the consumer sees the new `tail`.
        self.raw.header().tail.store(tail, Ordering::Release);
    }
}

impl<T, B: Backing> Consumer<T, B> {
    /// Pops the oldest item, or returns `None` if the ring is empty. Never blocks. The
    /// producer's index is read only when the consumer's cached copy says empty, and a
    /// call that finds the ring empty spends one [`core::hint::spin_loop`] (x86 `pause`,
    /// about 17 ns on the Xeon guest) before returning, so a bare `while let None`
    /// loop polls politely (docs/spsc.md, "The empty poll's pause").
    ///
    /// ```
    /// let (mut tx, mut rx) = handoff_spsc::channel::<u8>(2);
    /// assert_eq!(rx.try_pop(), None);
    /// tx.try_push(9).unwrap();
    /// assert_eq!(rx.try_pop(), Some(9));
    /// ```
    #[inline]
    pub fn try_pop(&mut self) -> Option<T> {
        let head = self.head;
        if head == self.cached_tail.get() && self.poll_ready_slipping() == 0 {
            return None;
        }
        // SAFETY: `head < cached_tail <= tail`: the slot holds an item the producer
        // published, and it is ours until we advance `head`.
        let value = unsafe { self.raw.read(head) };
        self.release(head.wrapping_add(1));
        Some(value)
    }

    /// A reference to the oldest item without removing it.
    ///
    /// ```
    /// let (mut tx, mut rx) = handoff_spsc::channel::<u8>(2);
    /// tx.try_push(4).unwrap();
    /// assert_eq!(rx.peek(), Some(&4));
    /// assert_eq!(rx.len(), 1);
    /// ```
    #[inline]
    pub fn peek(&self) -> Option<&T> {
        let head = self.head;
        if head == self.cached_tail.get() && self.poll_ready() == 0 {
            return None;
        }
        // SAFETY: the slot is initialised and only `&mut self` methods (which this
        // borrow excludes) would release it for the producer to overwrite.
        Some(unsafe { self.raw.get(head) })
    }

    /// Copies up to `dst.len()` items out, releases them with one index store, and
    /// returns how many were popped.
    ///
    /// ```
    /// let (mut tx, mut rx) = handoff_spsc::channel::<u8>(4);
    /// tx.push_slice(&[1, 2, 3]);
    /// let mut out = [0; 2];
    /// assert_eq!(rx.pop_slice(&mut out), 2);
    /// assert_eq!(out, [1, 2]);
    /// ```
    #[inline]
    pub fn pop_slice(&mut self, dst: &mut [T]) -> usize
    where
        T: Copy,
    {
        let n = dst.len().min(self.ready_hint(dst.len()));
        if n == 0 {
            return 0;
        }
        self.prefetch_next(n, dst.len());
        let head = self.head;
        self.raw.track_read(head, n);
        let (a, a_len, b, b_len) = self.raw.segments(head, n);
        // SAFETY: the `n` slots from `head` are initialised (checked above) and in
        // bounds; `T: Copy`, so copying leaves nothing to drop; `dst` is a distinct
        // `&mut` and cannot overlap the ring.
        unsafe {
            core::ptr::copy_nonoverlapping(a.cast::<T>(), dst.as_mut_ptr(), a_len);
            core::ptr::copy_nonoverlapping(b.cast::<T>(), dst.as_mut_ptr().add(a_len), b_len);
        }
        self.release(head.wrapping_add(n));
        n
    }

    /// Borrows up to `max` ready items in place. Read them through
    /// [`ReadChunk::as_slices`], move them out by iterating, or drop them in place with
    /// [`ReadChunk::consume`]; the slots are handed back to the producer with one index
    /// store when the chunk is dropped. Items neither taken nor consumed stay in the ring.
    /// A forgotten chunk is safe: what it took is gone, what it did not take stays.
    ///
    /// ```
    /// let (mut tx, mut rx) = handoff_spsc::channel::<String>(4);
    /// for s in ["a", "b", "c"] { tx.try_push(s.to_string()).unwrap(); }
    /// let chunk = rx.read_chunk(2);
    /// let taken: Vec<String> = chunk.collect();
    /// assert_eq!(taken, ["a", "b"]);
    /// assert_eq!(rx.len(), 1);
    /// ```
    #[inline]
    pub fn read_chunk(&mut self, max: usize) -> ReadChunk<'_, T> {
        let n = max.min(self.ready_hint(max));
        self.prefetch_next(n, max);
        self.raw.track_read(self.head, n);
        ReadChunk::new(&self.raw, &mut self.head, n)
    }

    /// Number of items ready to pop (the producer may add more at any time).
    ///
    /// ```
    /// let (mut tx, rx) = handoff_spsc::channel::<u8>(4);
    /// tx.push_slice(&[1, 2]);
    /// assert_eq!(rx.len(), 2);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.refresh_ready()
    }

    /// Whether no item is ready right now.
    ///
    /// ```
    /// let (_tx, rx) = handoff_spsc::channel::<u8>(4);
    /// assert!(rx.is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.refresh_ready() == 0
    }

    /// Whether the ring holds `capacity` items as seen by the consumer.
    ///
    /// ```
    /// let (mut tx, rx) = handoff_spsc::channel::<u8>(1);
    /// tx.try_push(1).unwrap();
    /// assert!(rx.is_full());
    /// ```
    #[inline]
    pub fn is_full(&self) -> bool {
        self.refresh_ready() == self.raw.capacity()
    }

    /// The number of items the ring holds when full: exactly what was asked for.
    ///
    /// ```
    /// let (_tx, rx) = handoff_spsc::channel::<u8>(5);
    /// assert_eq!(rx.capacity(), 5);
    /// ```
    #[inline]
    pub fn capacity(&self) -> usize {
        self.raw.capacity()
    }

    /// Turns temporal slipping on or off for `try_pop` (on by default in rings of 256
    /// slots or more; smaller rings never slip).
    ///
    /// When on, a `try_pop` that refreshes its view of the producer's index while
    /// streaming (its previous refresh found items too) and finds fewer than half the
    /// ring ready waits, for as long as the producer keeps adding items and at most six
    /// rounds of about 2048 TSC ticks, before it takes one: a consumer running right
    /// behind the producer would otherwise read the cache line the producer is
    /// writing, item after item. A consumer that was idle (its previous refresh found
    /// the ring empty) never waits, so an item that arrives alone is not delayed; an
    /// item of a burst that arrives while the consumer streams can be, by up to the
    /// wait. Turn it off where every item of a burst must be seen as early as possible
    /// and throughput does not matter. See the crate documentation, "Temporal slipping".
    ///
    /// ```
    /// let (_tx, mut rx) = handoff_spsc::channel::<u64>(1024);
    /// assert!(rx.slips());
    /// rx.set_slip(false);
    /// assert!(!rx.slips());
    /// ```
    pub fn set_slip(&mut self, on: bool) {
        self.slip.set(Side::Consumer, on, self.raw.capacity());
    }

    /// Whether `try_pop` slips (see [`set_slip`](Self::set_slip)).
    ///
    /// ```
    /// let (_tx, rx) = handoff_spsc::channel::<u64>(255);
    /// assert!(!rx.slips()); // too small to slip
    /// ```
    pub fn slips(&self) -> bool {
        self.slip.is_on()
    }

    /// Whether the [`Producer`] has been dropped. Items it pushed before are still
    /// there to pop: drain until `try_pop` returns `None` *after* seeing this `true`.
    ///
    /// ```
    /// let (mut tx, mut rx) = handoff_spsc::channel::<u8>(2);
    /// tx.try_push(1).unwrap();
    /// drop(tx);
    /// assert!(rx.is_abandoned());
    /// assert_eq!(rx.try_pop(), Some(1));
    /// ```
    #[inline]
    pub fn is_abandoned(&self) -> bool {
        self.raw.other_dropped()
    }

    /// Taking `n` items now, starts loading the lines of up to `max` ready items after
    /// them (as far as the cached `tail`), so the next chunk's lines cross from the
    /// producer's core while this one is read. Measured on the 2-vCPU Xeon guest: batches
    /// at 401-422 M items/s against 282-362 without it (docs/spsc.md).
    #[inline(always)]
    fn prefetch_next(&self, n: usize, max: usize) {
        let start = self.head.wrapping_add(n);
        let ready = self.cached_tail.get().wrapping_sub(start);
        self.raw.prefetch(start, ready.min(max));
    }

    /// Ready items according to the cache; reloads `tail` only when fewer than `want`.
    #[inline(always)]
    fn ready_hint(&self, want: usize) -> usize {
        let cached = self.cached_tail.get().wrapping_sub(self.head);
        if cached >= want {
            cached
        } else {
            self.poll_ready()
        }
    }

    /// [`refresh_ready`](Self::refresh_ready) for the calls that take items (`try_pop`,
    /// `peek`, `pop_slice`, `read_chunk`): if none is ready, one `pause` before the
    /// caller returns empty-handed. A consumer spinning on them then loads `tail` less
    /// often, so it takes the line from the producer less often and piles up fewer
    /// speculative loads for the producer's store to flush (round trip 1.3x faster on
    /// the Xeon guest, paced p50 unchanged; docs/spsc.md).
    #[inline]
    fn poll_ready(&self) -> usize {
        let ready = self.refresh_ready();
        if ready == 0 {
            core::hint::spin_loop();
        }
        ready
    }

    /// [`poll_ready`](Self::poll_ready) for `try_pop`: a consumer streaming right behind
    /// the producer waits for it to get ahead ([`set_slip`](Self::set_slip)).
    #[inline]
    fn poll_ready_slipping(&self) -> usize {
        let ready = self.poll_ready();
        if self.slip.should_wait(ready) {
            self.slip.wait(ready, || self.refresh_ready())
        } else {
            ready
        }
    }

    /// Loads the producer's `tail`, updates the cache, returns the ready item count.
    #[inline]
    fn refresh_ready(&self) -> usize {
        // Acquire: the producer's slot writes happen before its release of `tail`.
        let tail = self.raw.header().tail.load(Ordering::Acquire);
        self.cached_tail.set(tail);
        let ready = tail.wrapping_sub(self.head);
        debug_assert!(
            ready <= self.raw.capacity(),
            "tail ran past head + capacity"
        );
        if ready == 0 {
            self.publish_if_behind();
        }
        ready
    }

    /// After a forgotten [`ReadChunk`] the shared `head` lags ours. With nothing left to
    /// pop, no release would ever publish it and the producer could see a full ring
    /// forever, so the empty path catches it up. (A load of our own index: the producer
    /// only reads that line, and only when it thinks the ring is full.)
    #[inline]
    fn publish_if_behind(&self) {
        let header = self.raw.header();
        if header.head.load(Ordering::Relaxed) != self.head {
            // Release: our reads of the forgotten chunk's slots happen before the
            // producer may overwrite them.
            header.head.store(self.head, Ordering::Release);
        }
    }

    #[inline(always)]
    fn release(&mut self, head: usize) {
        self.head = head;
        // Release: our slot reads happen before the producer may overwrite the slots.
        self.raw.header().head.store(head, Ordering::Release);
    }
}

impl<T, B: Backing> Drop for Producer<T, B> {
    fn drop(&mut self) {
        // SAFETY: called once, from this handle's destructor.
        unsafe { self.raw.release_handle() }
    }
}

impl<T, B: Backing> Drop for Consumer<T, B> {
    fn drop(&mut self) {
        // A forgotten `ReadChunk` may have left the shared index behind ours; the items
        // in between are gone, so whoever drops the leftovers must start at ours.
        self.raw.header().head.store(self.head, Ordering::Relaxed);
        // SAFETY: called once, from this handle's destructor.
        unsafe { self.raw.release_handle() }
    }
}

impl<T, B: Backing> fmt::Debug for Producer<T, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer")
            .field("capacity", &self.capacity())
            .field("len", &self.len())
            .field("abandoned", &self.is_abandoned())
            .finish_non_exhaustive()
    }
}

impl<T, B: Backing> fmt::Debug for Consumer<T, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumer")
            .field("capacity", &self.capacity())
            .field("len", &self.len())
            .field("abandoned", &self.is_abandoned())
            .finish_non_exhaustive()
    }
}
