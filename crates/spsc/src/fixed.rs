//! The const-capacity ring: no heap, usable from a `static` or the stack.

use core::cell::UnsafeCell;
use core::fmt;
use core::mem::MaybeUninit;
use core::ptr::NonNull;

use crate::handles::{pair, Consumer, Producer};
use crate::raw::{Header, Raw};
use crate::sync::{AtomicBool, Ordering};
use crate::Options;

/// A ring of exactly `N` items stored inline, with no heap allocation. `N` must be a
/// power of two (checked at compile time) and at least 1.
///
/// Put it in a `static`, or on the stack and split it into handles that borrow it
/// (scoped threads). It can be split once; items left in it when both handles are
/// dropped are dropped then.
///
/// ```
/// use handoff_spsc::StaticChannel;
/// static TICKS: StaticChannel<u64, 256> = StaticChannel::new();
///
/// let (mut tx, mut rx) = TICKS.split().expect("first split");
/// assert!(TICKS.split().is_none());
/// std::thread::spawn(move || tx.try_push(7).unwrap()).join().unwrap();
/// assert_eq!(rx.try_pop(), Ok(7));
/// ```
///
/// On the stack, with scoped threads:
///
/// ```
/// let ring = handoff_spsc::StaticChannel::<u32, 64>::new();
/// let (mut tx, mut rx) = ring.split().unwrap();
/// std::thread::scope(|s| {
///     s.spawn(move || for i in 0..1000 { while tx.try_push(i).is_err() {} });
///     s.spawn(move || for i in 0..1000 { loop { if let Ok(v) = rx.try_pop() { assert_eq!(v, i); break; } } });
/// });
/// ```
pub struct StaticChannel<T, const N: usize> {
    header: Header,
    split: AtomicBool,
    slots: UnsafeCell<[MaybeUninit<T>; N]>,
}

// SAFETY: the only access to the slots is through the one producer and one consumer
// that `split` hands out (at most once), which follow the SPSC protocol; `T`s move
// between threads, hence `T: Send`.
unsafe impl<T: Send, const N: usize> Sync for StaticChannel<T, N> {}

/// The producer of a [`StaticChannel`].
pub type StaticProducer<'a, T, const N: usize> = Producer<T, &'a StaticChannel<T, N>>;
/// The consumer of a [`StaticChannel`].
pub type StaticConsumer<'a, T, const N: usize> = Consumer<T, &'a StaticChannel<T, N>>;

impl<T, const N: usize> StaticChannel<T, N> {
    const VALID: () = assert!(
        N.is_power_of_two(),
        "StaticChannel capacity N must be a power of two and at least 1"
    );

    /// An empty ring; `const`, so it can initialise a `static`.
    ///
    /// ```
    /// static R: handoff_spsc::StaticChannel<[u8; 16], 1024> = handoff_spsc::StaticChannel::new();
    /// assert_eq!(R.capacity(), 1024);
    /// ```
    pub const fn new() -> Self {
        // Referencing the constant makes a non-power-of-two `N` a compile error.
        #[allow(clippy::let_unit_value)]
        let () = Self::VALID;
        StaticChannel {
            header: Header::new(),
            split: AtomicBool::new(false),
            slots: UnsafeCell::new([const { MaybeUninit::uninit() }; N]),
        }
    }

    /// The number of items the ring holds when full: `N`.
    ///
    /// ```
    /// assert_eq!(handoff_spsc::StaticChannel::<u8, 8>::new().capacity(), 8);
    /// ```
    pub const fn capacity(&self) -> usize {
        N
    }

    /// Hands out the producer and the consumer, the first time only; `None` after.
    ///
    /// ```
    /// let ring = handoff_spsc::StaticChannel::<u8, 4>::new();
    /// assert!(ring.split().is_some());
    /// assert!(ring.split().is_none());
    /// ```
    pub fn split(&self) -> Option<(StaticProducer<'_, T, N>, StaticConsumer<'_, T, N>)> {
        self.split_with(Options::new())
    }

    /// [`split`](Self::split) with [`Options`] (see [`Options::slipping`]).
    ///
    /// ```
    /// use handoff_spsc::{Options, StaticChannel};
    /// static RING: StaticChannel<u64, 1024> = StaticChannel::new();
    /// let (tx, rx) = RING.split_with(Options::new().slipping(true)).unwrap();
    /// assert!(tx.slips() && rx.slips());
    /// ```
    pub fn split_with(
        &self,
        options: Options,
    ) -> Option<(StaticProducer<'_, T, N>, StaticConsumer<'_, T, N>)> {
        // AcqRel: the swap's single modification order alone makes exactly one call
        // see `false`; acquire and release also order the handles' use of the ring
        // after anything done to it by an earlier thread (nothing the handles rely on
        // today: the header is constant-initialised).
        if self.split.swap(true, Ordering::AcqRel) {
            return None;
        }
        let buf = NonNull::new(self.slots.get().cast::<MaybeUninit<T>>())?;
        // SAFETY: header and slots live in `self`, which both handles borrow for `'_`;
        // `N` is a power of two (const-checked) and the capacity is `N`.
        let raw = unsafe { Raw::new(NonNull::from(&self.header), buf, N, N) };
        Some(pair(raw, self, self, options))
    }
}

impl<T, const N: usize> Default for StaticChannel<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const N: usize> fmt::Debug for StaticChannel<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticChannel")
            .field("capacity", &N)
            .field("split", &self.split.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}
