//! The shared part of a ring (two indices and a handle count) and the raw view of
//! the slot array that both handles carry.
//!
//! Index invariants (all indices count items ever pushed/popped and wrap at
//! `usize::MAX`):
//! * `head` is written only by the consumer, `tail` only by the producer;
//! * `tail - head` (wrapping) is the number of initialised slots, always `<= capacity`;
//! * the slot of index `i` is `i & mask`, with `mask + 1` a power of two `>= capacity`.

use core::mem::MaybeUninit;
use core::ptr::NonNull;

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicUsize, Ordering};

/// The indices shared by the two handles. `head` and `tail` are each on their own
/// cache line (128 bytes on x86_64, covering the adjacent-line prefetcher).
pub(crate) struct Header {
    /// Next index the consumer will read. Written by the consumer only.
    pub(crate) head: CachePadded<AtomicUsize>,
    /// Next index the producer will write. Written by the producer only.
    pub(crate) tail: CachePadded<AtomicUsize>,
    /// Live handles: 2 after creation, 0 once both are dropped.
    pub(crate) handles: AtomicUsize,
    /// What the producer counts for an [`Observer`](crate::Observer), on its slow
    /// paths only (a refresh of `head`, a failed push): written by the producer alone,
    /// on a line of its own. The consumer counts nothing: its refresh of `tail` is on
    /// the hot path of a consumer that keeps up.
    pub(crate) producer_stats: CachePadded<ProducerStats>,
    #[cfg(loom)]
    pub(crate) shadow: crate::sync::Shadow,
}

/// The producer's counters (one writer: plain loads and stores, no read-modify-write).
pub(crate) struct ProducerStats {
    /// `try_push` calls that found the ring full.
    pub(crate) full_pushes: AtomicUsize,
    /// Times the ring became full: a failed push after a push that succeeded.
    pub(crate) full_events: AtomicUsize,
    /// The most items a refresh of the consumer's index found in the ring.
    pub(crate) high_water: AtomicUsize,
}

impl ProducerStats {
    #[cfg(not(loom))]
    const fn new() -> Self {
        ProducerStats {
            full_pushes: AtomicUsize::new(0),
            full_events: AtomicUsize::new(0),
            high_water: AtomicUsize::new(0),
        }
    }
    #[cfg(loom)]
    fn new() -> Self {
        ProducerStats {
            full_pushes: AtomicUsize::new(0),
            full_events: AtomicUsize::new(0),
            high_water: AtomicUsize::new(0),
        }
    }

    /// Adds one to a counter that only this thread writes.
    #[inline]
    pub(crate) fn bump(counter: &AtomicUsize) {
        // Relaxed: a counter for observers; nothing is published through it.
        counter.store(
            counter.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
    }
}

impl Header {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Self {
        Header {
            head: CachePadded::new(AtomicUsize::new(0)),
            tail: CachePadded::new(AtomicUsize::new(0)),
            handles: AtomicUsize::new(2),
            producer_stats: CachePadded::new(ProducerStats::new()),
        }
    }

    #[cfg(loom)]
    pub(crate) fn new_loom(slots: usize) -> Self {
        Header {
            head: CachePadded::new(AtomicUsize::new(0)),
            tail: CachePadded::new(AtomicUsize::new(0)),
            handles: AtomicUsize::new(2),
            producer_stats: CachePadded::new(ProducerStats::new()),
            shadow: (0..slots)
                .map(|_| loom::cell::UnsafeCell::new(()))
                .collect(),
        }
    }
}

/// Pointers and constants a handle needs on its hot path, copied into each handle so
/// that no push or pop goes through an extra indirection.
pub(crate) struct Raw<T> {
    header: NonNull<Header>,
    buf: NonNull<MaybeUninit<T>>,
    mask: usize,
    capacity: usize,
}

impl<T> Raw<T> {
    /// # Safety
    /// `header` and `buf` (with `mask + 1` slots) must stay valid for as long as any
    /// `Raw` made from them is used, and `capacity <= mask + 1`, `mask + 1` a power of two.
    pub(crate) unsafe fn new(
        header: NonNull<Header>,
        buf: NonNull<MaybeUninit<T>>,
        slots: usize,
        capacity: usize,
    ) -> Self {
        debug_assert!(slots.is_power_of_two() && capacity <= slots && capacity > 0);
        Raw {
            header,
            buf,
            mask: slots - 1,
            capacity,
        }
    }

    /// Both handles get their own copy.
    pub(crate) fn duplicate(&self) -> Self {
        Raw { ..*self }
    }

    /// The header, for an [`Observer`](crate::Observer).
    pub(crate) fn header_ptr(&self) -> NonNull<Header> {
        self.header
    }

    #[inline(always)]
    pub(crate) fn header(&self) -> &Header {
        // SAFETY: `new`'s contract keeps the header alive while any handle exists.
        unsafe { self.header.as_ref() }
    }

    #[inline(always)]
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Number of slots in the array (`capacity` rounded up to a power of two).
    #[inline(always)]
    pub(crate) fn slots(&self) -> usize {
        self.mask + 1
    }

    #[inline(always)]
    fn slot(&self, index: usize) -> *mut MaybeUninit<T> {
        // `wrapping_add` keeps this a safe computation; `index & mask` is always in bounds.
        self.buf.as_ptr().wrapping_add(index & self.mask)
    }

    /// Splits `n` slots starting at `start` into the part up to the end of the array
    /// and the part that wraps to its beginning: `(ptr_a, len_a, ptr_b, len_b)`.
    #[inline(always)]
    pub(crate) fn segments(
        &self,
        start: usize,
        n: usize,
    ) -> (*mut MaybeUninit<T>, usize, *mut MaybeUninit<T>, usize) {
        let offset = start & self.mask;
        let first = n.min(self.slots() - offset);
        (self.slot(start), first, self.buf.as_ptr(), n - first)
    }

    /// Calls `f` with the address of one slot in each cache line of slots
    /// `[start, start + n)` (every `64 / size_of::<T>()`-th slot), for the prefetches.
    #[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
    #[inline(always)]
    fn each_line(&self, start: usize, n: usize, mut f: impl FnMut(*mut MaybeUninit<T>)) {
        let size = core::mem::size_of::<T>();
        if size == 0 {
            return;
        }
        let step = (64 / size).max(1);
        let mut i = 0;
        while i < n {
            f(self.slot(start.wrapping_add(i)));
            i += step;
        }
    }

    /// Hints the CPU to start loading the cache lines of slots `[start, start + n)`, so
    /// that a consumer taking them one chunk later finds them on the way in. Only a
    /// hint: nothing is read, any index is fine, and it is a no-op off x86-64 and under
    /// Miri and loom.
    #[inline(always)]
    pub(crate) fn prefetch(&self, start: usize, n: usize) {
        #[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
        self.each_line(start, n, |p| {
            use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            // SAFETY: a prefetch reads and writes nothing and cannot fault; `sse` is
            // part of the x86-64 baseline. (`slot` masks the index anyway.)
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>()) };
        });
        #[cfg(not(all(target_arch = "x86_64", not(miri), not(loom))))]
        let _ = (start, n);
    }

    /// Hints the CPU to fetch the cache lines of slots `[start, start + n)` for writing
    /// (`prefetchw`: the line comes in exclusive, its copies elsewhere invalidated), so
    /// that a producer writing them one chunk later does not wait for each line to be
    /// taken back from the consumer's core. Only for free slots: a line the consumer
    /// still has to read would be pulled away from it. Only a hint: nothing is read or
    /// written, any index is fine; a no-op off x86-64 and under Miri and loom. Intel
    /// CPUs before Broadwell do not report `prefetchw` (CPUID PRFCHW) but decode its
    /// opcode (0F 0D /1) as a NOP; every AMD64 CPU has it. Measured on AMD only.
    #[inline(always)]
    pub(crate) fn prefetch_write(&self, start: usize, n: usize) {
        #[cfg(test)]
        WRITE_PREFETCHES.with(|log| log.borrow_mut().push((start, n)));
        #[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
        self.each_line(start, n, |p| crate::hint::prefetch_write(p));
        #[cfg(not(all(target_arch = "x86_64", not(miri), not(loom))))]
        let _ = (start, n);
    }

    /// Records a write access to slots `[start, start + n)` for loom's race detector.
    #[inline(always)]
    pub(crate) fn track_write(&self, start: usize, n: usize) {
        #[cfg(loom)]
        for i in 0..n {
            self.header().shadow[start.wrapping_add(i) & self.mask].with_mut(|_| ());
        }
        #[cfg(not(loom))]
        let _ = (start, n);
    }

    /// Records a read access to slots `[start, start + n)` for loom's race detector.
    #[inline(always)]
    pub(crate) fn track_read(&self, start: usize, n: usize) {
        #[cfg(loom)]
        for i in 0..n {
            self.header().shadow[start.wrapping_add(i) & self.mask].with(|_| ());
        }
        #[cfg(not(loom))]
        let _ = (start, n);
    }

    /// # Safety
    /// The slot of `index` must be free (outside `[head, tail)`) and owned by the producer.
    #[inline(always)]
    pub(crate) unsafe fn write(&self, index: usize, value: T) {
        self.track_write(index, 1);
        // SAFETY: the slot is in bounds and exclusively the producer's (caller contract).
        unsafe { self.slot(index).write(MaybeUninit::new(value)) }
    }

    /// # Safety
    /// The slot of `index` must hold an initialised item owned by the consumer; after
    /// this call it must be treated as uninitialised.
    #[inline(always)]
    pub(crate) unsafe fn read(&self, index: usize) -> T {
        self.track_read(index, 1);
        // SAFETY: the slot is in bounds and initialised (caller contract).
        unsafe { self.slot(index).read().assume_init() }
    }

    /// # Safety
    /// The slot of `index` must hold an initialised item that nobody else mutates for `'a`.
    #[inline(always)]
    pub(crate) unsafe fn get<'a>(&self, index: usize) -> &'a T {
        self.track_read(index, 1);
        // SAFETY: in bounds and initialised (caller contract).
        unsafe { (*self.slot(index)).assume_init_ref() }
    }

    /// Drops the items in `[start, end)` in place, in ring order.
    ///
    /// If an item's destructor panics, the items after it are still dropped (each
    /// exactly once) before the panic goes on, as `VecDeque` does: the rest of its
    /// segment by the slice drop glue, the second segment by a guard. A second panic
    /// while unwinding aborts, as everywhere in Rust.
    ///
    /// # Safety
    /// Those slots must hold initialised items that no one will read or drop again,
    /// whether or not this call returns normally.
    pub(crate) unsafe fn drop_range(&self, start: usize, end: usize) {
        if !core::mem::needs_drop::<T>() {
            return;
        }
        let n = end.wrapping_sub(start);
        self.track_write(start, n);
        let (a, a_len, b, b_len) = self.segments(start, n);

        /// Drops the wrapped segment when it goes out of scope, normally or while a
        /// panic from the first segment unwinds.
        struct DropSecond<T>(*mut [T]);
        impl<T> Drop for DropSecond<T> {
            fn drop(&mut self) {
                // SAFETY: `drop_range`'s caller gave these initialised items to us to
                // drop once; this guard runs exactly once.
                unsafe { core::ptr::drop_in_place(self.0) }
            }
        }

        let second = DropSecond(core::ptr::slice_from_raw_parts_mut(b.cast::<T>(), b_len));
        // SAFETY: the first segment is in bounds and initialised (caller contract);
        // `MaybeUninit<T>` has the layout of `T`; it is disjoint from the second.
        unsafe {
            core::ptr::drop_in_place(core::ptr::slice_from_raw_parts_mut(a.cast::<T>(), a_len))
        };
        drop(second);
    }

    /// Called once by each handle when it is dropped. The last handle out drops every
    /// item still in the ring.
    ///
    /// The consumer must have published its own index (`head`) before calling this:
    /// a forgotten [`ReadChunk`](crate::ReadChunk) advances the consumer's private
    /// index without storing the shared one, and the items between the two are gone.
    ///
    /// # Safety
    /// Must be called exactly once per handle, and the handle must not touch the ring
    /// afterwards.
    pub(crate) unsafe fn release_handle(&self) {
        let header = self.header();
        // AcqRel: our own index stores happen before the other handle's final decrement,
        // and if we are last we see all of the other handle's stores.
        if header.handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            let head = header.head.load(Ordering::Relaxed);
            let tail = header.tail.load(Ordering::Relaxed);
            debug_assert!(tail.wrapping_sub(head) <= self.capacity);
            // SAFETY: both handles are gone, so `[head, tail)` are the initialised items
            // and nobody can read them any more.
            unsafe { self.drop_range(head, tail) }
        }
    }

    /// Whether the other handle has been dropped (valid when called from a live handle).
    #[inline]
    pub(crate) fn other_dropped(&self) -> bool {
        self.header().handles.load(Ordering::Acquire) < 2
    }
}

mod sealed {
    pub trait Sealed {
        /// Another owner of the same memory (an [`Observer`](crate::Observer)'s).
        fn share(&self) -> Self
        where
            Self: Sized;
    }
}

/// Another owner of the memory `backing` keeps alive.
pub(crate) fn share<B: Backing>(backing: &B) -> B {
    sealed::Sealed::share(backing)
}

/// What keeps a ring's memory alive while its handles exist: [`Heap`](crate::Heap) for
/// [`channel`](crate::channel), `&StaticChannel` for
/// [`StaticChannel::split`](crate::StaticChannel::split). Sealed: it cannot be
/// implemented outside this crate.
///
/// ```
/// fn takes_any_producer<B: handoff_spsc::Backing>(p: &mut handoff_spsc::Producer<u64, B>) {
///     let _ = p.try_push(7);
/// }
/// # let (mut p, _c) = handoff_spsc::channel::<u64>(4);
/// # takes_any_producer(&mut p);
/// ```
pub trait Backing: sealed::Sealed {}

impl<T> sealed::Sealed for crate::Heap<T> {
    fn share(&self) -> Self {
        crate::Heap::share(self)
    }
}
impl<T> Backing for crate::Heap<T> {}

#[cfg(not(loom))]
impl<T, const N: usize> sealed::Sealed for &crate::StaticChannel<T, N> {
    fn share(&self) -> Self {
        self
    }
}
#[cfg(not(loom))]
impl<T, const N: usize> Backing for &crate::StaticChannel<T, N> {}

#[cfg(test)]
std::thread_local! {
    /// Every `prefetch_write(start, n)` of this thread, in order (unit tests only: what
    /// the producer asked to fetch cannot be seen from outside).
    pub(crate) static WRITE_PREFETCHES: core::cell::RefCell<std::vec::Vec<(usize, usize)>> =
        const { core::cell::RefCell::new(std::vec::Vec::new()) };
}

/// One `pause` (`core::hint::spin_loop`) for a call that found nothing to do; counted per
/// thread in unit tests.
#[inline(always)]
pub(crate) fn pause() {
    #[cfg(test)]
    PAUSES.with(|n| n.set(n.get() + 1));
    core::hint::spin_loop();
}

#[cfg(test)]
std::thread_local! {
    /// How many times this thread's calls paused (unit tests only).
    pub(crate) static PAUSES: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}
