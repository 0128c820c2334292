//! The producer and consumer halves of a ring.

use core::cell::Cell;
use core::fmt;
use core::marker::PhantomData;

use crate::chunk::{ReadChunk, WriteChunk};
use crate::observer::Observer;
use crate::raw::{self, Backing, ProducerStats, Raw};
use crate::slip::{self, Side, Slip};
use crate::sync::Ordering;
use crate::{Options, PopError, PushError};

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
///     if let Ok(v) = rx.try_pop() { assert_eq!(v, next); next += 1; }
/// }
/// ```
pub struct Producer<T, B: Backing = Heap<T>> {
    pub(crate) raw: Raw<T>,
    /// Our own index while `reads_back` is off; the shared `tail` equals it outside a
    /// method call. Stale while `reads_back` is on.
    pub(crate) tail: Cell<usize>,
    /// At most `head + capacity` as of the last time we loaded `head`: we may write up
    /// to here without looking at the consumer's cache line.
    pub(crate) limit: Cell<usize>,
    /// Whether our index is read back from the shared `tail` (which only we store)
    /// instead of being kept in `tail` too: one store less per push, chosen by
    /// `try_push`'s refresh while the consumer is far enough behind not to be polling
    /// that line (see `refill`), until the next refresh of any kind.
    pub(crate) reads_back: Cell<bool>,
    /// `refill` turns `reads_back` on when it finds at least this many items in the
    /// ring; 0: never.
    pub(crate) read_back_at: usize,
    /// Temporal slipping ([`Options::slipping`]).
    pub(crate) slip: Slip,
    /// Whether the last push found the ring full (so the next failure is not a new
    /// full episode for the [`Observer`]); cleared when a refresh finds room.
    pub(crate) was_full: Cell<bool>,
    /// The most items a refresh of `head` found in the ring (published for the
    /// [`Observer`] when it grows).
    pub(crate) seen_most: Cell<usize>,
    pub(crate) _backing: B,
    pub(crate) _owns: PhantomData<T>,
}

/// The reading half of a ring. `Send` (when `T: Send`), not `Sync`.
///
/// ```
/// let (mut tx, mut rx) = handoff_spsc::channel::<String>(8);
/// tx.try_push("tick".to_string()).unwrap();
/// assert_eq!(rx.peek().map(String::as_str), Some("tick"));
/// assert_eq!(rx.try_pop().as_deref(), Ok("tick"));
/// assert_eq!(rx.try_pop(), Err(handoff_spsc::PopError::Empty));
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
    /// Temporal slipping ([`Options::slipping`]).
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
    options: Options,
) -> (Producer<T, B>, Consumer<T, B>) {
    let capacity = raw.capacity();
    let consumer_raw = raw.duplicate();
    (
        Producer {
            raw,
            tail: Cell::new(0),
            limit: Cell::new(capacity),
            reads_back: Cell::new(false),
            read_back_at: slip::read_back_at(capacity),
            slip: Slip::new(Side::Producer, options.slipping, capacity),
            was_full: Cell::new(false),
            seen_most: Cell::new(0),
            _backing: producer_backing,
            _owns: PhantomData,
        },
        Consumer {
            raw: consumer_raw,
            head: 0,
            cached_tail: Cell::new(0),
            slip: Slip::new(Side::Consumer, options.slipping, capacity),
            _backing: consumer_backing,
            _owns: PhantomData,
        },
    )
}

/// What a push that found the ring full learns on a second look ([`Producer::full`]).
enum Full {
    /// Full, the consumer alive.
    Yes,
    /// Full, the consumer gone.
    AndGone,
    /// The consumer is gone but had made room before it went.
    NoLonger,
}

impl<T, B: Backing> Producer<T, B> {
    /// Pushes `value`, or hands it back if the ring holds `capacity` items: in
    /// [`PushError::Full`], or [`PushError::Disconnected`] once the consumer has been
    /// dropped (nothing will make room). Never blocks. The consumer's index, and whether
    /// it is still there, are read only when the producer's cached copy says the ring
    /// is full.
    ///
    /// ```
    /// let (mut tx, _rx) = handoff_spsc::channel::<u8>(1);
    /// assert!(tx.try_push(1).is_ok());
    /// assert!(tx.try_push(2).is_err());
    /// ```
    #[inline]
    pub fn try_push(&mut self, value: T) -> Result<(), PushError<T>> {
        let tail = self.tail();
        if tail == self.limit.get() && self.refill(tail) == 0 {
            match self.full(tail) {
                Full::Yes => return Err(PushError::Full(value)),
                Full::AndGone => return Err(PushError::Disconnected(value)),
                Full::NoLonger => {}
            }
        }
        // SAFETY: `tail < limit <= head + capacity`, so the slot is free and ours.
        unsafe { self.raw.write(tail, value) };
        self.publish(tail.wrapping_add(1));
        Ok(())
    }

    /// Copies as many items of `src` as fit, publishes them with one index store, and
    /// returns how many were pushed (possibly 0). It does not say whether the consumer
    /// is gone: a loop that retries on 0 also asks [`is_abandoned`](Self::is_abandoned)
    /// (as for [`write_chunk`](Self::write_chunk)).
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
        let tail = self.tail();
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
    /// (empty if the ring is full: then the call spends one `pause` before it returns,
    /// so a loop retrying at once does not take the consumer's index line on every try).
    /// On x86-64 it also asks the CPU to fetch, for writing, the lines of the free slots
    /// right after the chunk (up to `max` more), so the next chunk's lines leave the
    /// consumer's core while this one is written.
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
        self.keep_tail();
        let n = max.min(self.free_hint(max));
        if n == 0 && max > 0 {
            // A producer retrying on a full ring would otherwise load `head` back to back,
            // taking the line from the consumer that is about to store it.
            crate::raw::pause();
        }
        self.prefetch_write_next(n, max);
        self.raw.track_write(self.tail.get(), n);
        WriteChunk::new(&self.raw, &self.tail, n)
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

    /// Whether `try_push` slips: asked for with [`Options::slipping`] when the ring was
    /// made, and the ring has at least 256 slots. Off by default.
    ///
    /// ```
    /// use handoff_spsc::{channel, channel_with, Options};
    /// let (tx, _rx) = channel::<u64>(1024);
    /// assert!(!tx.slips());
    /// let (tx, _rx) = channel_with::<u64>(1024, Options::new().slipping(true));
    /// assert!(tx.slips());
    /// ```
    pub fn slips(&self) -> bool {
        self.slip.is_on()
    }

    /// After a push found the ring full: whether the consumer is gone, and if so
    /// whether it left room after all (it may have popped, then been dropped, between
    /// the producer's load of `head` and its look at the handle count; its last `head`
    /// store came before its handle's release, which `other_dropped` acquires).
    #[cold]
    #[inline(never)]
    fn full(&self, tail: usize) -> Full {
        let full = if !self.raw.other_dropped() {
            Full::Yes
        } else if self.refill(tail) == 0 {
            Full::AndGone
        } else {
            return Full::NoLonger;
        };
        let stats = &self.raw.header().producer_stats;
        ProducerStats::bump(&stats.full_pushes);
        if !self.was_full.replace(true) {
            ProducerStats::bump(&stats.full_events);
        }
        full
    }

    /// A new high-water mark for the [`Observer`].
    #[cold]
    #[inline(never)]
    fn note_most(&self, used: usize) {
        self.seen_most.set(used);
        // Relaxed: a counter for observers; only the producer writes it.
        self.raw
            .header()
            .producer_stats
            .high_water
            .store(used, Ordering::Relaxed);
    }

    /// A read-only view of the ring for any thread: depth, high-water mark, times
    /// full, items through ([`Observer`]).
    ///
    /// ```
    /// let (mut tx, _rx) = handoff_spsc::channel::<u8>(2);
    /// let watch = tx.observer();
    /// tx.try_push(1).unwrap();
    /// assert_eq!(std::thread::spawn(move || watch.len()).join().unwrap(), 1);
    /// ```
    pub fn observer(&self) -> Observer<T, B> {
        Observer::new(
            self.raw.header_ptr(),
            self.raw.capacity(),
            raw::share(&self._backing),
        )
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

    /// Reserving `n` slots now, starts fetching for writing the lines of up to `max`
    /// free slots after them (as far as the cached free count goes: the consumer is done
    /// with those), so the next chunk's lines come back from the consumer's core while
    /// this one is written.
    #[inline(always)]
    fn prefetch_write_next(&self, n: usize, max: usize) {
        let start = self.tail.get().wrapping_add(n);
        let free = self.limit.get().wrapping_sub(start);
        self.raw.prefetch_write(start, free.min(max));
    }

    /// Free slots according to the cache; reloads `head` only when fewer than `want`.
    #[inline(always)]
    fn free_hint(&self, want: usize) -> usize {
        let cached = self.limit.get().wrapping_sub(self.tail());
        if cached >= want {
            cached
        } else {
            self.refresh_free()
        }
    }

    /// [`refresh_free`](Self::refresh_free) for `try_push`: a producer streaming right
    /// behind the consumer waits for it to get ahead, if the ring slips ([`Options::slipping`]).
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
        // `limit` becomes `head + capacity` again, past `refill`'s bound, so the next
        // `refill` is no longer sure to come in time: keep the index in `tail` again.
        self.keep_tail();
        // Acquire: the consumer finished reading a slot before releasing it via `head`.
        let head = self.raw.header().head.load(Ordering::Acquire);
        let limit = head.wrapping_add(self.raw.capacity());
        self.limit.set(limit);
        let free = limit.wrapping_sub(self.tail());
        debug_assert!(free <= self.raw.capacity(), "head ran past tail");
        // For the observer: a full episode ends at the first look that finds room, and
        // the most items in the ring are what some look found (every refresh is off the
        // hot path: the cached limit ran out, or a caller asked).
        if free != 0 {
            self.was_full.set(false);
        }
        let used = self.raw.capacity() - free;
        if used > self.seen_most.get() {
            self.note_most(used);
        }
        free
    }

    /// `try_push`'s refresh ([`poll_free`](Self::poll_free)), which also chooses where
    /// our index lives until the next one. When the ring holds at least `read_back_at`
    /// items, the consumer has that many to take before it can find the ring empty and
    /// start polling the shared `tail`: until then a load of that line hits our own
    /// cache, so the index is read back from it and a push stores it once, not twice.
    /// The next refresh comes, at the latest, when that many have been pushed. Otherwise
    /// (an idle consumer polls the line, and a load of it would wait for the line to come
    /// back from the consumer's core: +50 ns per push at a paced 1 MHz on the Xeon guest)
    /// the index is kept in `tail` as well.
    #[inline]
    fn refill(&self, tail: usize) -> usize {
        let free = self.poll_free();
        let used = self.raw.capacity() - free;
        if self.read_back_at != 0 && used >= self.read_back_at {
            self.reads_back.set(true);
            // Lowering the limit is always safe: it only brings the next refresh closer.
            self.limit.set(tail.wrapping_add(free.min(used)));
        }
        free
    }

    /// Our index.
    #[inline(always)]
    fn tail(&self) -> usize {
        if self.reads_back.get() {
            // Relaxed: only this handle stores the shared `tail`, so the load returns our
            // last store.
            self.raw.header().tail.load(Ordering::Relaxed)
        } else {
            self.tail.get()
        }
    }

    /// Keeps our index in `tail` again.
    #[inline(always)]
    fn keep_tail(&self) {
        if self.reads_back.get() {
            self.tail.set(self.tail());
            self.reads_back.set(false);
        }
    }

    #[inline(always)]
    fn publish(&mut self, tail: usize) {
        if !self.reads_back.get() {
            self.tail.set(tail);
        }
        // Release: the slot writes happen before the consumer sees the new `tail`.
        self.raw.header().tail.store(tail, Ordering::Release);
    }
}

impl<T, B: Backing> Consumer<T, B> {
    /// Pops the oldest item, or says why there is none: [`PopError::Empty`], or
    /// [`PopError::Disconnected`] once the producer has been dropped and every item it
    /// pushed has been popped. Never blocks. The producer's index, and whether it is
    /// still there, are read only when the consumer's cached copy says empty, and a
    /// call that finds the ring empty spends one [`core::hint::spin_loop`] (x86 `pause`,
    /// about 17 ns on the Xeon guest) before returning, so a bare `while let Err(_)`
    /// loop polls politely (docs/spsc-notebook.md, "The empty poll's pause").
    ///
    /// ```
    /// use handoff_spsc::PopError;
    /// let (mut tx, mut rx) = handoff_spsc::channel::<u8>(2);
    /// assert_eq!(rx.try_pop(), Err(PopError::Empty));
    /// tx.try_push(9).unwrap();
    /// assert_eq!(rx.try_pop(), Ok(9));
    /// drop(tx);
    /// assert_eq!(rx.try_pop(), Err(PopError::Disconnected));
    /// ```
    #[inline]
    pub fn try_pop(&mut self) -> Result<T, PopError> {
        let head = self.head;
        if head == self.cached_tail.get() && self.poll_ready_slipping() == 0 {
            self.empty()?;
        }
        Ok(self.take(head))
    }

    /// [`try_pop`](Self::try_pop) with neither the empty poll's `pause` nor slipping:
    /// for [`FanIn`](crate::FanIn), which polls several rings and pauses once when all
    /// were empty.
    #[cfg(feature = "alloc")]
    #[inline]
    pub(crate) fn try_pop_quiet(&mut self) -> Result<T, PopError> {
        let head = self.head;
        if head == self.cached_tail.get() && self.refresh_ready() == 0 {
            self.empty()?;
        }
        Ok(self.take(head))
    }

    /// Moves the item at `head` out and releases its slot.
    #[inline(always)]
    fn take(&mut self, head: usize) -> T {
        debug_assert!(head != self.cached_tail.get(), "no item is ready at head");
        // SAFETY: `head < cached_tail <= tail` (checked by the callers, or made so by
        // `empty`'s reload): the slot holds an item the producer published, and it is
        // ours until we advance `head`.
        let value = unsafe { self.raw.read(head) };
        self.release(head.wrapping_add(1));
        value
    }

    /// When the ring looked empty: `Ok` if the producer is gone but left items (now in
    /// the cache), else why there is none.
    #[inline]
    fn empty(&self) -> Result<(), PopError> {
        if !self.raw.other_dropped() {
            return Err(PopError::Empty);
        }
        // The producer published its last `tail` before it released its handle, which
        // the acquire in `other_dropped` read: this load sees every item it pushed.
        if self.refresh_ready() == 0 {
            Err(PopError::Disconnected)
        } else {
            Ok(())
        }
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
    /// returns how many were popped. It does not say whether the producer is gone: a
    /// loop that polls on 0 also asks [`is_abandoned`](Self::is_abandoned) (as for
    /// [`read_chunk`](Self::read_chunk) and [`peek`](Self::peek)), then drains once more.
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

    /// Whether `try_pop` slips: asked for with [`Options::slipping`] when the ring was
    /// made, and the ring has at least 256 slots. Off by default.
    ///
    /// ```
    /// use handoff_spsc::{channel_with, Options};
    /// let (_tx, rx) = channel_with::<u64>(255, Options::new().slipping(true));
    /// assert!(!rx.slips()); // too small to slip
    /// ```
    pub fn slips(&self) -> bool {
        self.slip.is_on()
    }

    /// Whether the [`Producer`] has been dropped. Items it pushed before are still
    /// there to pop: drain until `try_pop` returns an error *after* seeing this `true`
    /// (or until it returns [`PopError::Disconnected`], which says both).
    ///
    /// ```
    /// let (mut tx, mut rx) = handoff_spsc::channel::<u8>(2);
    /// tx.try_push(1).unwrap();
    /// drop(tx);
    /// assert!(rx.is_abandoned());
    /// assert_eq!(rx.try_pop(), Ok(1));
    /// ```
    #[inline]
    pub fn is_abandoned(&self) -> bool {
        self.raw.other_dropped()
    }

    /// Taking `n` items now, starts loading the lines of up to `max` ready items after
    /// them (as far as the cached `tail`), so the next chunk's lines cross from the
    /// producer's core while this one is read. Measured on the 2-vCPU Xeon guest: batches
    /// at 401-422 M items/s against 282-362 without it (docs/spsc-notebook.md).
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
    /// the Xeon guest, paced p50 unchanged; docs/spsc-notebook.md).
    #[inline]
    fn poll_ready(&self) -> usize {
        let ready = self.refresh_ready();
        if ready == 0 {
            crate::raw::pause();
        }
        ready
    }

    /// [`poll_ready`](Self::poll_ready) for `try_pop`: a consumer streaming right behind
    /// the producer waits for it to get ahead, if the ring slips ([`Options::slipping`]).
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

    /// A read-only view of the ring for any thread ([`Producer::observer`]).
    ///
    /// ```
    /// let (_tx, rx) = handoff_spsc::channel::<u8>(2);
    /// assert!(rx.observer().is_empty());
    /// ```
    pub fn observer(&self) -> Observer<T, B> {
        Observer::new(
            self.raw.header_ptr(),
            self.raw.capacity(),
            raw::share(&self._backing),
        )
    }

    /// After a forgotten [`ReadChunk`] the shared `head` lags ours. With nothing left to
    /// pop, no release would ever publish it and the producer could see a full ring
    /// forever, so the empty path catches it up. (A load of our own index: the producer
    /// only reads that line, and only when it thinks the ring is full.)
    #[inline]
    pub(crate) fn publish_if_behind(&self) {
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
        // Release, like every store of `head`: a producer still pushing may load this
        // store, and it then writes into the slots we last read. A relaxed store would
        // release nothing (a later store by the same thread does not continue an
        // earlier release's sequence), so those reads would not happen before its
        // writes: a data race in Rust's memory model, and on weakly ordered CPUs a read
        // that sees the producer's next item (Miri's seeds 0, 1, 25, 28 and
        // 29 found it, and `tests/loom.rs` `consumer_leaves_*` does every time).
        self.raw.header().head.store(self.head, Ordering::Release);
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

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::channel;

    /// A `write_chunk` that finds the ring full spends one `pause` (as a `read_chunk`
    /// that finds it empty does); one that gets slots, or asks for none, does not.
    #[test]
    fn chunk_calls_pause_only_when_they_get_nothing() {
        use crate::raw::PAUSES;
        let pauses = || PAUSES.with(core::cell::Cell::get);
        let (mut tx, mut rx) = channel::<u8>(4);
        let before = pauses();
        assert!(rx.read_chunk(4).is_empty());
        assert_eq!(pauses(), before + 1, "empty read_chunk");
        let mut chunk = tx.write_chunk(4);
        assert_eq!(chunk.extend(0..4), 4);
        chunk.commit();
        assert_eq!(pauses(), before + 1, "write_chunk that got 4 slots");
        assert!(tx.write_chunk(0).is_empty());
        assert_eq!(pauses(), before + 1, "write_chunk(0)");
        assert!(tx.write_chunk(2).is_empty());
        assert_eq!(pauses(), before + 2, "write_chunk on a full ring");
        assert_eq!(rx.read_chunk(1).consume(1), 1);
        assert_eq!(pauses(), before + 2, "read_chunk that got an item");
        assert_eq!(tx.write_chunk(2).len(), 1);
        assert_eq!(pauses(), before + 2, "write_chunk that got one slot");
    }

    /// `write_chunk` asks the CPU to fetch, for writing, the slots right after the chunk
    /// it hands out, up to one more chunk of `max`, and never a slot the consumer has
    /// not released (that would pull an unread item's line away from the consumer):
    /// checked against the consumer's real position over a random run of chunk calls
    /// that fills, drains and wraps the ring many times.
    #[test]
    fn write_chunk_prefetches_the_next_chunk_of_free_slots_only() {
        use crate::raw::WRITE_PREFETCHES;
        let take = || WRITE_PREFETCHES.with(|log| core::mem::take(&mut *log.borrow_mut()));
        let (mut tx, mut rx) = channel::<u64>(100);
        let capacity = tx.capacity();
        // On an empty ring: this chunk's 8 slots, then the next 8 are asked for.
        take();
        let chunk = tx.write_chunk(8);
        assert_eq!(chunk.len(), 8);
        drop(chunk);
        assert_eq!(take(), [(8, 8)]);
        let (mut tail, mut head) = (0usize, 0usize);
        let (mut full_ahead, mut none_free) = (0, 0);
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let steps = if cfg!(miri) { 1_000 } else { 20_000 };
        for _ in 0..steps {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let max = (state % 40) as usize;
            if state & (1 << 40) == 0 {
                let mut chunk = tx.write_chunk(max);
                let n = chunk.len();
                let k = (state >> 20) as usize % (n + 1);
                for i in 0..k {
                    chunk.push((tail + i) as u64).unwrap();
                }
                chunk.commit();
                let log = take();
                assert_eq!(log.len(), 1, "one prefetch per write_chunk");
                let (start, len) = log[0];
                assert_eq!(start, tail + n, "the slots right after the chunk");
                assert!(len <= max, "at most one more chunk");
                assert!(
                    start + len <= head + capacity,
                    "slots [{start}, {}) asked for, but the consumer holds up to {}",
                    start + len,
                    head + capacity
                );
                if len == max && max > 0 {
                    full_ahead += 1;
                }
                if head + capacity == start {
                    none_free += 1;
                    assert_eq!(len, 0);
                }
                tail += k;
            } else {
                let mut chunk = rx.read_chunk(max);
                let (a, b) = chunk.as_slices();
                for (i, v) in a.iter().chain(b).enumerate() {
                    assert_eq!(*v, (head + i) as u64);
                }
                let n = chunk.len();
                chunk.consume(n);
                drop(chunk);
                head += n;
            }
        }
        // Both ends were reached often: a full next chunk asked for, and nothing free.
        assert!(
            full_ahead > steps / 20 && none_free > steps / 200,
            "{full_ahead} {none_free}"
        );
    }

    /// Reading the index back from the shared `tail` changes nothing a call returns:
    /// the same random sequence of single, slice and chunk calls on a ring that reads
    /// back and on one that never does gives the same result at every step, and the
    /// first ring went into and out of that mode many times.
    #[test]
    fn reading_the_index_back_never_changes_what_a_call_returns() {
        let (mut tx_a, mut rx_a) = channel::<u32>(256);
        let (mut tx_b, mut rx_b) = channel::<u32>(256);
        assert_eq!(tx_a.read_back_at, 32);
        tx_b.read_back_at = 0;
        let (mut entered, mut left) = (0, 0);
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = 0u32;
        let steps = if cfg!(miri) { 60 } else { 100_000 };
        for _ in 0..steps {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let run = (state >> 8) % 200;
            let was = tx_a.reads_back.get();
            match state % 7 {
                0 | 1 => {
                    for _ in 0..run {
                        assert_eq!(tx_a.try_push(next), tx_b.try_push(next));
                        next += 1;
                    }
                }
                2 => {
                    let src: Vec<u32> = (next..next + run as u32).collect();
                    let n = tx_a.push_slice(&src);
                    assert_eq!(n, tx_b.push_slice(&src));
                    next += n as u32;
                }
                3 => {
                    // Fill part of a chunk, then commit it, drop it or forget it.
                    let (mut a, mut b) = (
                        tx_a.write_chunk(run as usize),
                        tx_b.write_chunk(run as usize),
                    );
                    assert_eq!(a.len(), b.len());
                    let fill = (state >> 20) as usize % (a.len() + 1);
                    for k in 0..fill as u32 {
                        assert_eq!(a.push(next + k), b.push(next + k));
                    }
                    match (state >> 30) % 3 {
                        0 => {
                            a.commit();
                            b.commit();
                            next += fill as u32;
                        }
                        1 => drop((a, b)),
                        _ => core::mem::forget((a, b)),
                    }
                }
                4 => {
                    for _ in 0..run {
                        assert_eq!(rx_a.try_pop(), rx_b.try_pop());
                    }
                }
                5 => {
                    // A consumer that keeps up: the ring stays where it is, so a
                    // producer that read its index back finds too few items at its next
                    // refresh and keeps it again.
                    for _ in 0..run {
                        assert_eq!(tx_a.try_push(next), tx_b.try_push(next));
                        next += 1;
                        assert_eq!(rx_a.try_pop(), rx_b.try_pop());
                    }
                }
                _ => {
                    let (mut a, mut b) = (vec![0; run as usize], vec![0; run as usize]);
                    assert_eq!(rx_a.pop_slice(&mut a), rx_b.pop_slice(&mut b));
                    assert_eq!(a, b);
                }
            }
            assert_eq!(tx_a.tail(), tx_b.tail());
            let now = tx_a.reads_back.get();
            entered += u32::from(!was && now);
            left += u32::from(was && !now);
        }
        let least = if cfg!(miri) { 1 } else { 100 };
        assert!(
            entered >= least && left >= least,
            "entered {entered}, left {left}"
        );
        assert!(!tx_b.reads_back.get());
    }

    /// A consumer that keeps up (the paced case): every refresh finds the ring nearly
    /// empty, so the producer never reads its index back from the line the consumer
    /// polls. A producer far ahead of its consumer does, until a refresh finds the
    /// consumer caught up.
    #[test]
    #[cfg_attr(miri, ignore = "a policy check; the test above runs the same paths")]
    fn the_index_is_read_back_only_while_the_consumer_is_far_behind() {
        let (mut tx, mut rx) = channel::<u64>(1024);
        assert_eq!(tx.read_back_at, 128);
        for i in 0..5_000 {
            tx.try_push(i).unwrap();
            assert_eq!(rx.try_pop(), Ok(i));
            assert!(!tx.reads_back.get(), "item {i}");
        }
        // Far ahead: the first refresh (the ring is full) turns it on.
        for i in 0..1024 {
            tx.try_push(i).unwrap();
        }
        assert!(tx.try_push(0).is_err());
        assert!(tx.reads_back.get());
        // Half taken: the next refresh finds 512 items and keeps it on, for at most 512
        // pushes.
        for i in 0..512 {
            assert_eq!(rx.try_pop(), Ok(i));
        }
        tx.try_push(1024).unwrap();
        assert!(tx.reads_back.get());
        // The consumer catches up and keeps up: the refresh at the end of those 512
        // pushes finds 10 items, and the producer keeps its index itself again.
        for i in 512..1015 {
            assert_eq!(rx.try_pop(), Ok(i));
        }
        let mut pushes = 0;
        while tx.reads_back.get() {
            tx.try_push(1025 + pushes).unwrap();
            assert_eq!(rx.try_pop(), Ok(1015 + pushes));
            pushes += 1;
            assert!(pushes <= 512, "still reading back after {pushes} pushes");
        }
        assert_eq!(pushes, 512);
        // And a small ring never reads back.
        let (tx, _rx) = channel::<u64>(255);
        assert_eq!(tx.read_back_at, 0);
    }
}
