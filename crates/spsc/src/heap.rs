//! The heap-allocated ring behind [`channel`](crate::channel).

use core::marker::PhantomData;
use core::mem::MaybeUninit;
use core::ptr::NonNull;

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::handles::{pair, Consumer, Producer};
use crate::raw::{Header, Raw};
use crate::sync::Arc;
use crate::CapacityError;

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
/// assert_eq!(rx.try_pop(), Some((1, 101.25)));
/// ```
#[track_caller]
pub fn channel<T>(capacity: usize) -> (Producer<T>, Consumer<T>) {
    match try_channel(capacity) {
        Ok(pair) => pair,
        Err(e) => panic!("{e}"),
    }
}

/// Creates a ring that holds exactly `capacity` items, or says why it cannot.
///
/// ```
/// let (tx, _rx) = handoff_spsc::try_channel::<u32>(3).unwrap();
/// assert_eq!(tx.capacity(), 3);
/// assert!(handoff_spsc::try_channel::<u32>(0).is_err());
/// ```
pub fn try_channel<T>(capacity: usize) -> Result<(Producer<T>, Consumer<T>), CapacityError> {
    if capacity == 0 {
        return Err(CapacityError::Zero);
    }
    let too_large = CapacityError::TooLarge {
        requested: capacity,
    };
    let slots = capacity.checked_next_power_of_two().ok_or(too_large)?;
    let bytes = core::alloc::Layout::array::<T>(slots)
        .map_err(|_| too_large)?
        .size();
    let mut storage: Vec<MaybeUninit<T>> = Vec::new();
    storage
        .try_reserve_exact(slots)
        .map_err(|_| CapacityError::AllocFailed {
            requested: capacity,
            bytes,
        })?;
    storage.resize_with(slots, MaybeUninit::uninit);
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
    Ok(pair(raw, producer_backing, Heap { _ring: ring }))
}
