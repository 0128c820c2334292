//! The heap-allocated ring behind [`channel`](crate::channel).

use core::marker::PhantomData;
use core::mem::MaybeUninit;
use core::ptr::NonNull;

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::handles::{pair, Consumer, Producer};
use crate::raw::{Header, Raw};
use crate::sync::Arc;
use crate::{CapacityError, Options};

/// Ownership of a heap ring's memory, shared by its two handles: the [`Backing`](crate::Backing)
/// of rings made by [`channel`](crate::channel). The memory is freed when both handles
/// are gone. It has no methods of its own; it appears only as the default type
/// parameter of [`Producer`] and [`Consumer`].
///
/// ```
/// let (tx, rx): (handoff_spsc::Producer<u8, handoff_spsc::Heap<u8>>, _) = handoff_spsc::channel(4);
/// # drop((tx, rx));
/// ```
pub struct Heap<T> {
    _ring: Arc<HeapRing<T>>,
}

impl<T> Heap<T> {
    /// Another owner of the ring's memory.
    pub(crate) fn share(&self) -> Heap<T> {
        Heap {
            _ring: Arc::clone(&self._ring),
        }
    }
}

struct HeapRing<T> {
    header: Header,
    buf: NonNull<MaybeUninit<T>>,
    slots: usize,
    _owns: PhantomData<T>,
}

// SAFETY: `HeapRing` is only reached through the handles, which enforce the SPSC
// protocol; sharing it between the two threads moves `T`s across, hence `T: Send`.
unsafe impl<T: Send> Send for HeapRing<T> {}
// SAFETY: as above; all shared mutation goes through atomics or slots the protocol
// gives to exactly one side.
unsafe impl<T: Send> Sync for HeapRing<T> {}

impl<T> Drop for HeapRing<T> {
    fn drop(&mut self) {
        // The items were dropped by the last handle (`Raw::release_handle`); only the
        // slot array itself is left.
        let slice = core::ptr::slice_from_raw_parts_mut(self.buf.as_ptr(), self.slots);
        // SAFETY: `buf` came from `Box::into_raw` of a boxed slice of `slots` elements
        // in `try_channel` and is freed exactly once, here.
        drop(unsafe { Box::from_raw(slice) });
    }
}

/// Creates a ring that holds exactly `capacity` items and returns its two halves.
///
/// The slot array is rounded up to a power of two so that indexing is a mask, but
/// no more than `capacity` items are ever held.
///
/// # Panics
/// If `capacity` is 0, too large for the address space, or cannot be allocated; use
/// [`try_channel`] to get a [`CapacityError`] instead.
///
/// ```
/// let (mut tx, mut rx) = handoff_spsc::channel::<(u64, f64)>(1024);
/// tx.try_push((1, 101.25)).unwrap();
/// assert_eq!(rx.try_pop(), Ok((1, 101.25)));
/// ```
#[track_caller]
pub fn channel<T>(capacity: usize) -> (Producer<T>, Consumer<T>) {
    crate::error::or_panic(try_channel(capacity))
}

/// [`channel`] with [`Options`]: a ring whose handles do what the options say (see
/// [`Options::slipping`]).
///
/// # Panics
/// As [`channel`]; use [`try_channel_with`] to get a [`CapacityError`] instead.
///
/// ```
/// use handoff_spsc::{channel_with, Options};
/// let (tx, rx) = channel_with::<u64>(4096, Options::new().slipping(true));
/// assert!(tx.slips() && rx.slips());
/// ```
#[track_caller]
pub fn channel_with<T>(capacity: usize, options: Options) -> (Producer<T>, Consumer<T>) {
    crate::error::or_panic(try_channel_with(capacity, options))
}

/// Creates a ring that holds exactly `capacity` items, or says why it cannot.
///
/// ```
/// let (tx, _rx) = handoff_spsc::try_channel::<u32>(3).unwrap();
/// assert_eq!(tx.capacity(), 3);
/// assert!(handoff_spsc::try_channel::<u32>(0).is_err());
/// ```
pub fn try_channel<T>(capacity: usize) -> Result<(Producer<T>, Consumer<T>), CapacityError> {
    try_channel_with(capacity, Options::new())
}

/// [`try_channel`] with [`Options`].
///
/// ```
/// use handoff_spsc::{try_channel_with, CapacityError, Options};
/// let (tx, _rx) = try_channel_with::<u32>(300, Options::new().slipping(true)).unwrap();
/// assert!(tx.slips());
/// assert_eq!(try_channel_with::<u32>(0, Options::new()).unwrap_err(), CapacityError::Zero);
/// ```
pub fn try_channel_with<T>(
    capacity: usize,
    options: Options,
) -> Result<(Producer<T>, Consumer<T>), CapacityError> {
    let mut storage: Vec<MaybeUninit<T>> = reserve_slots(capacity)?;
    // Cannot overflow: `reserve_slots` checked it. (Not `storage.capacity()`, which is
    // `usize::MAX` for a zero-sized `T`.)
    let slots = capacity.next_power_of_two();
    // SAFETY: `try_reserve_exact` made room for `slots` elements, and `MaybeUninit<T>`
    // needs no initialisation. (No per-element loop: for a zero-sized `T`, `slots` can be
    // huge.)
    unsafe { storage.set_len(slots) };
    let buf = NonNull::from(Box::leak(storage.into_boxed_slice())).cast::<MaybeUninit<T>>();

    let ring = Arc::new(HeapRing {
        #[cfg(not(loom))]
        header: Header::new(),
        #[cfg(loom)]
        header: Header::new_loom(slots),
        buf,
        slots,
        _owns: PhantomData,
    });
    let header = NonNull::from(&ring.header);
    // SAFETY: the header and the `slots`-element buffer live inside `ring`, which both
    // handles keep alive through their `Heap` backing; `slots` is a power of two
    // `>= capacity > 0`.
    let raw = unsafe { Raw::new(header, buf, slots, capacity) };
    let producer_backing = Heap {
        _ring: Arc::clone(&ring),
    };
    Ok(pair(raw, producer_backing, Heap { _ring: ring }, options))
}

/// An empty `Vec` with room for the power-of-two slot count that `capacity` needs
/// (`capacity.next_power_of_two()`, which this checks does not overflow), or the reason
/// there is none. Shared by both heap rings.
pub(crate) fn reserve_slots<S>(capacity: usize) -> Result<Vec<S>, CapacityError> {
    if capacity == 0 {
        return Err(CapacityError::Zero);
    }
    let too_large = CapacityError::TooLarge {
        requested: capacity,
    };
    let slots = capacity.checked_next_power_of_two().ok_or(too_large)?;
    let bytes = core::alloc::Layout::array::<S>(slots)
        .map_err(|_| too_large)?
        .size();
    let mut storage = Vec::new();
    storage
        .try_reserve_exact(slots)
        .map_err(|_| CapacityError::AllocFailed {
            requested: capacity,
            bytes,
        })?;
    Ok(storage)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::sync::Ordering;

    /// A ring whose indices start `before` steps short of `usize::MAX`, so that the
    /// test crosses the wrap of the index arithmetic itself.
    fn near_wrap<T>(capacity: usize, before: usize) -> (Producer<T>, Consumer<T>) {
        let (tx, mut rx) = channel::<T>(capacity);
        let start = usize::MAX - before;
        // Relaxed: set up on this thread before either handle can reach another.
        tx.raw.header().head.store(start, Ordering::Relaxed);
        tx.raw.header().tail.store(start, Ordering::Relaxed);
        tx.tail.set(start);
        tx.limit.set(start.wrapping_add(capacity));
        rx.head = start;
        rx.cached_tail.set(start);
        (tx, rx)
    }

    #[test]
    fn single_items_cross_the_index_wrap() {
        let (mut tx, mut rx) = near_wrap::<u64>(5, 3);
        for round in 0..4u64 {
            for i in 0..5 {
                tx.try_push(round * 10 + i).unwrap();
            }
            assert!(tx.try_push(99).is_err());
            assert_eq!(rx.len(), 5);
            for i in 0..5 {
                assert_eq!(rx.try_pop(), Ok(round * 10 + i));
            }
            assert_eq!(rx.try_pop(), Err(crate::PopError::Empty));
        }
    }

    #[test]
    fn slices_and_chunks_cross_the_index_wrap() {
        let (mut tx, mut rx) = near_wrap::<u32>(8, 2);
        assert_eq!(tx.push_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 9]), 8);
        let mut out = [0u32; 8];
        assert_eq!(rx.pop_slice(&mut out), 8);
        assert_eq!(out, [1, 2, 3, 4, 5, 6, 7, 8]);
        let mut chunk = tx.write_chunk(8);
        assert_eq!(chunk.extend(10..20), 8);
        chunk.commit();
        let got: alloc::vec::Vec<u32> = rx.read_chunk(8).collect();
        assert_eq!(got, (10..18).collect::<alloc::vec::Vec<_>>());
    }

    #[test]
    fn leftovers_are_dropped_across_the_index_wrap() {
        use alloc::rc::Rc;
        let token = Rc::new(());
        let (mut tx, mut rx) = near_wrap::<Rc<()>>(4, 1);
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
    fn segments_split_at_the_end_of_the_slot_array() {
        let (tx, _rx) = channel::<u8>(6); // 8 slots
        let (_, a, _, b) = tx.raw.segments(6, 5);
        assert_eq!((a, b), (2, 3));
        let (_, a, _, b) = tx.raw.segments(usize::MAX, 3); // slot 7, then 0 and 1
        assert_eq!((a, b), (1, 2));
        let (_, a, _, b) = tx.raw.segments(8, 0);
        assert_eq!((a, b), (0, 0));
    }
}
