//! Zero-copy batches: write into reserved slots and publish once, or read ready slots
//! in place and release them once. Works for any `T`.

use core::cell::Cell;
use core::fmt;
use core::mem::MaybeUninit;

use crate::raw::Raw;
use crate::sync::Ordering;

/// Free slots reserved by [`Producer::write_chunk`](crate::Producer::write_chunk).
///
/// Items written into the chunk become visible to the consumer only on
/// [`commit`](WriteChunk::commit), all at once. Dropping the chunk without committing
/// drops the items written into it; the ring is unchanged. Forgetting it
/// (`mem::forget`) leaks the items written into it and leaves the ring unchanged too:
/// they were never published, and their slots are simply written over later.
///
/// ```
/// let (mut tx, mut rx) = handoff_spsc::channel::<u64>(4);
/// let mut chunk = tx.write_chunk(8);
/// assert_eq!(chunk.len(), 4); // only 4 free slots
/// while chunk.push(42).is_ok() {}
/// chunk.commit();
/// assert_eq!(rx.len(), 4);
/// ```
pub struct WriteChunk<'a, T> {
    raw: &'a Raw<T>,
    /// The producer's own index, which the producer keeps (rather than reading it back
    /// from the shared one) while a chunk is out.
    tail: &'a Cell<usize>,
    len: usize,
    written: usize,
}

impl<'a, T> WriteChunk<'a, T> {
    pub(crate) fn new(raw: &'a Raw<T>, tail: &'a Cell<usize>, len: usize) -> Self {
        WriteChunk {
            raw,
            tail,
            len,
            written: 0,
        }
    }

    /// Number of slots reserved.
    ///
    /// ```
    /// let (mut tx, _rx) = handoff_spsc::channel::<u8>(2);
    /// assert_eq!(tx.write_chunk(5).len(), 2);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no slot was reserved (the ring was full or `max` was 0).
    ///
    /// ```
    /// let (mut tx, _rx) = handoff_spsc::channel::<u8>(1);
    /// tx.try_push(0).unwrap();
    /// assert!(tx.write_chunk(1).is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of items written so far (to be published by `commit`).
    ///
    /// ```
    /// let (mut tx, _rx) = handoff_spsc::channel::<u8>(4);
    /// let mut chunk = tx.write_chunk(4);
    /// chunk.push(1).unwrap();
    /// assert_eq!(chunk.written(), 1);
    /// ```
    #[inline]
    pub fn written(&self) -> usize {
        self.written
    }

    /// Writes `value` into the next reserved slot, or hands it back if all are written.
    ///
    /// ```
    /// let (mut tx, _rx) = handoff_spsc::channel::<u8>(1);
    /// let mut chunk = tx.write_chunk(1);
    /// assert_eq!(chunk.push(1), Ok(()));
    /// assert_eq!(chunk.push(2), Err(2));
    /// ```
    #[inline]
    pub fn push(&mut self, value: T) -> Result<(), T> {
        if self.written == self.len {
            return Err(value);
        }
        self.write_next(value);
        Ok(())
    }

    /// Writes into the next unwritten slot; the caller has checked `written < len`.
    #[inline(always)]
    fn write_next(&mut self, value: T) {
        debug_assert!(self.written < self.len);
        // SAFETY: `written < len`, so the slot is reserved for this chunk (free, ours)
        // and not yet written.
        unsafe {
            self.raw
                .write(self.tail.get().wrapping_add(self.written), value)
        };
        self.written += 1;
    }

    /// Writes items from `iter` until the chunk is full or `iter` ends; returns how
    /// many were written. No item is taken from `iter` that does not fit.
    ///
    /// ```
    /// let (mut tx, _rx) = handoff_spsc::channel::<u32>(3);
    /// let mut chunk = tx.write_chunk(3);
    /// let mut source = 0..10;
    /// assert_eq!(chunk.extend(&mut source), 3);
    /// assert_eq!(source.next(), Some(3));
    /// ```
    pub fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) -> usize {
        let before = self.written;
        let mut iter = iter.into_iter();
        let start = self.tail.get().wrapping_add(self.written);
        let (a, a_len, b, b_len) = self.raw.segments(start, self.len - self.written);
        self.raw.track_write(start, self.len - self.written);
        for (slots, n) in [(a, a_len), (b, b_len)] {
            for i in 0..n {
                let Some(value) = iter.next() else {
                    return self.written - before;
                };
                // SAFETY: slot `i` of this segment lies among the reserved slots not yet
                // written (`segments` covers exactly those, in order), so it is in bounds
                // and ours; `written` counts it at once, so a later panic in `iter`
                // leaves it to `Drop`.
                unsafe { slots.add(i).write(MaybeUninit::new(value)) };
                self.written += 1;
            }
        }
        self.written - before
    }

    /// The reserved slots not yet written, as up to two slices (the second is non-empty
    /// when the reservation wraps around the end of the slot array). After writing the
    /// first `n` of them (in order, first slice then second), call
    /// [`assume_written`](Self::assume_written)`(n)`.
    ///
    /// ```
    /// use std::mem::MaybeUninit;
    /// let (mut tx, mut rx) = handoff_spsc::channel::<u16>(4);
    /// let mut chunk = tx.write_chunk(2);
    /// let (a, _b) = chunk.as_mut_slices();
    /// a[0] = MaybeUninit::new(7);
    /// // SAFETY: the first slot was just initialised.
    /// unsafe { chunk.assume_written(1) };
    /// chunk.commit();
    /// assert_eq!(rx.try_pop(), Ok(7));
    /// ```
    pub fn as_mut_slices(&mut self) -> (&mut [MaybeUninit<T>], &mut [MaybeUninit<T>]) {
        let (a, a_len, b, b_len) = self.raw.segments(
            self.tail.get().wrapping_add(self.written),
            self.len - self.written,
        );
        // SAFETY: these slots are reserved for this chunk (free, nobody else touches
        // them) and the two segments are disjoint and in bounds.
        unsafe {
            (
                core::slice::from_raw_parts_mut(a, a_len),
                core::slice::from_raw_parts_mut(b, b_len),
            )
        }
    }

    /// Marks the next `n` unwritten slots as written.
    ///
    /// # Safety
    /// Those `n` slots (the first `n` of [`as_mut_slices`](Self::as_mut_slices), in
    /// order) must have been initialised, and `n` must not exceed the unwritten count.
    pub unsafe fn assume_written(&mut self, n: usize) {
        assert!(
            n <= self.len - self.written,
            "assume_written({n}) but only {} slots are unwritten",
            self.len - self.written
        );
        self.written += n;
    }

    /// Publishes every written item to the consumer with one index store.
    ///
    /// ```
    /// let (mut tx, rx) = handoff_spsc::channel::<u8>(4);
    /// let mut chunk = tx.write_chunk(4);
    /// chunk.extend([1, 2]);
    /// chunk.commit();
    /// assert_eq!(rx.len(), 2);
    /// ```
    #[inline]
    pub fn commit(mut self) {
        let tail = self.tail.get().wrapping_add(self.written);
        self.tail.set(tail);
        self.written = 0;
        // Release: the slot writes happen before the consumer sees the new `tail`.
        self.raw.header().tail.store(tail, Ordering::Release);
    }
}

impl<T> Drop for WriteChunk<'_, T> {
    fn drop(&mut self) {
        if self.written > 0 {
            let start = self.tail.get();
            let written = core::mem::replace(&mut self.written, 0);
            // SAFETY: the written slots hold initialised items that were never published
            // (the producer's index is still `start`), and nothing reads them again: the
            // chunk is going away and the slots count as free.
            unsafe { self.raw.drop_range(start, start.wrapping_add(written)) }
        }
    }
}

impl<T> fmt::Debug for WriteChunk<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteChunk")
            .field("len", &self.len)
            .field("written", &self.written)
            .finish()
    }
}

/// Ready items borrowed in place by [`Consumer::read_chunk`](crate::Consumer::read_chunk).
///
/// Iterate it to move items out, look at them through [`as_slices`](Self::as_slices),
/// or drop them in place with [`consume`](Self::consume). When the chunk is dropped,
/// the slots of the items taken or consumed are handed back to the producer with one
/// index store; the rest stay in the ring, in order.
///
/// ```
/// let (mut tx, mut rx) = handoff_spsc::channel::<u32>(8);
/// tx.push_slice(&[1, 2, 3, 4]);
/// let mut chunk = rx.read_chunk(8);
/// let (a, b) = chunk.as_slices();
/// assert_eq!(a.iter().chain(b).sum::<u32>(), 10);
/// chunk.consume(3);
/// drop(chunk);
/// assert_eq!(rx.try_pop(), Ok(4));
/// ```
///
/// Forgetting the chunk (`mem::forget` is safe) is safe too: every item taken or
/// consumed through it is gone from the consumer's view at once, so none is handed
/// out or dropped again; only the producer sees their slots late: at the consumer's
/// next release, the next time it finds the ring empty, or when it is dropped.
///
/// ```
/// let (mut tx, mut rx) = handoff_spsc::channel::<String>(4);
/// tx.try_push("a".to_string()).unwrap();
/// tx.try_push("b".to_string()).unwrap();
/// let mut chunk = rx.read_chunk(1);
/// let a = chunk.next().unwrap();
/// std::mem::forget(chunk);
/// assert_eq!(rx.try_pop().as_deref(), Ok("b")); // not "a" a second time
/// assert_eq!(a, "a");
/// ```
pub struct ReadChunk<'a, T> {
    raw: &'a Raw<T>,
    /// The consumer's own index. Every item is counted off here *before* it is moved
    /// out or dropped, so the consumer never sees it again even if the chunk is
    /// forgotten; the shared index follows in `Drop`.
    head: &'a mut usize,
    /// The consumer's index when the chunk was made: `Drop` publishes only if it moved.
    start: usize,
    /// One past the last item of the chunk.
    end: usize,
}

impl<'a, T> ReadChunk<'a, T> {
    pub(crate) fn new(raw: &'a Raw<T>, head: &'a mut usize, len: usize) -> Self {
        let start = *head;
        ReadChunk {
            raw,
            head,
            start,
            end: start.wrapping_add(len),
        }
    }

    /// Number of items still in the chunk (not yet taken or consumed).
    ///
    /// ```
    /// let (mut tx, mut rx) = handoff_spsc::channel::<u8>(4);
    /// tx.push_slice(&[1, 2, 3]);
    /// let mut chunk = rx.read_chunk(2);
    /// assert_eq!(chunk.len(), 2);
    /// chunk.next();
    /// assert_eq!(chunk.len(), 1);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.end.wrapping_sub(*self.head)
    }

    /// Whether no item remains in the chunk.
    ///
    /// ```
    /// let (_tx, mut rx) = handoff_spsc::channel::<u8>(4);
    /// assert!(rx.read_chunk(4).is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        *self.head == self.end
    }

    /// The remaining items, as up to two slices in ring order.
    ///
    /// ```
    /// let (mut tx, mut rx) = handoff_spsc::channel::<u8>(4);
    /// tx.push_slice(&[5, 6]);
    /// let chunk = rx.read_chunk(4);
    /// assert_eq!(chunk.as_slices(), (&[5u8, 6][..], &[][..]));
    /// ```
    pub fn as_slices(&self) -> (&[T], &[T]) {
        let (a, a_len, b, b_len) = self.raw.segments(*self.head, self.len());
        // SAFETY: the slots are initialised, published, and owned by the consumer until
        // the chunk releases them; the segments are disjoint and in bounds.
        unsafe {
            (
                core::slice::from_raw_parts(a.cast::<T>(), a_len),
                core::slice::from_raw_parts(b.cast::<T>(), b_len),
            )
        }
    }

    /// The remaining items, mutably, as up to two slices in ring order.
    ///
    /// ```
    /// let (mut tx, mut rx) = handoff_spsc::channel::<u8>(4);
    /// tx.push_slice(&[5, 6]);
    /// let mut chunk = rx.read_chunk(4);
    /// chunk.as_mut_slices().0[0] = 9;
    /// assert_eq!(chunk.next(), Some(9));
    /// ```
    pub fn as_mut_slices(&mut self) -> (&mut [T], &mut [T]) {
        let (a, a_len, b, b_len) = self.raw.segments(*self.head, self.len());
        // SAFETY: as in `as_slices`, and `&mut self` makes the access exclusive.
        unsafe {
            (
                core::slice::from_raw_parts_mut(a.cast::<T>(), a_len),
                core::slice::from_raw_parts_mut(b.cast::<T>(), b_len),
            )
        }
    }

    /// Drops the next `n` items in place (fewer if fewer remain); returns how many.
    ///
    /// If an item's destructor panics, the other items of the `n` are still dropped,
    /// each once, and the panic goes on; all `n` count as consumed.
    ///
    /// ```
    /// let (mut tx, mut rx) = handoff_spsc::channel::<u8>(4);
    /// tx.push_slice(&[1, 2, 3]);
    /// assert_eq!(rx.read_chunk(4).consume(10), 3);
    /// assert!(rx.is_empty());
    /// ```
    pub fn consume(&mut self, n: usize) -> usize {
        let n = n.min(self.len());
        let start = *self.head;
        // Count them off first: whatever happens next (a panicking destructor, or this
        // chunk being forgotten), the consumer never reads or drops them again.
        *self.head = start.wrapping_add(n);
        // SAFETY: the `n` slots hold initialised items of this chunk that nobody will
        // read or drop again (the consumer's index is already past them).
        unsafe { self.raw.drop_range(start, start.wrapping_add(n)) };
        n
    }
}

impl<T> Iterator for ReadChunk<'_, T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        let head = *self.head;
        if head == self.end {
            return None;
        }
        // Count it off first, so that the consumer never reads this slot again.
        *self.head = head.wrapping_add(1);
        // SAFETY: the slot holds an initialised item of this chunk, and the consumer's
        // index is now past it: this is the only read, and the value's only owner is
        // the caller. The producer cannot reuse the slot before the shared index moves,
        // which happens after this read (in `Drop` or a later release).
        Some(unsafe { self.raw.read(head) })
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len(), Some(self.len()))
    }
}

impl<T> ExactSizeIterator for ReadChunk<'_, T> {}

impl<T> core::iter::FusedIterator for ReadChunk<'_, T> {}

impl<T> Drop for ReadChunk<'_, T> {
    fn drop(&mut self) {
        let head = *self.head;
        if head != self.start {
            // Release: our slot reads happen before the producer may overwrite them.
            self.raw.header().head.store(head, Ordering::Release);
        }
    }
}

impl<T> fmt::Debug for ReadChunk<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadChunk")
            .field("len", &self.len())
            .field("taken", &self.head.wrapping_sub(self.start))
            .finish()
    }
}
