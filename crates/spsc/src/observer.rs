//! A read-only view of a ring for a monitoring thread.

use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;

use crate::raw::{self, Backing, Header};
use crate::sync::Ordering;
use crate::Heap;

/// A read-only view of a ring that any thread can hold: how many items are in it, the
/// most there have been, how often it was full, how many went through. Made by
/// [`Producer::observer`](crate::Producer::observer) or
/// [`Consumer::observer`](crate::Consumer::observer); `Clone`, `Send` and `Sync` (for
/// `T: Send`), and it keeps the ring's memory alive, not its items (they go with the
/// last handle, as always).
///
/// What it costs the hot path: nothing while nobody reads it. The counters are kept by
/// the producer on its slow paths only (a failed push, a refresh of the consumer's
/// index), on a cache line of their own; the consumer counts nothing. A read of
/// [`len`](Self::len), [`pushed`](Self::pushed) or [`popped`](Self::popped) loads the
/// two index lines, which the handles then take back: poll it every millisecond, not in
/// a loop (`cargo bench --bench spsc -- spsc_paired/observed` measures a 1 kHz poll).
///
/// ```
/// let (mut tx, mut rx) = handoff_spsc::channel::<u32>(4);
/// let watch = tx.observer();
/// let monitor = std::thread::spawn(move || watch.stats());
/// for i in 0..4 { tx.try_push(i).unwrap(); }
/// assert!(tx.try_push(4).is_err());            // full
/// assert_eq!(rx.try_pop(), Ok(0));
/// let seen = monitor.join().unwrap();          // whatever it saw meanwhile
/// assert!(seen.len <= 4);
/// let now = tx.observer().stats();
/// assert_eq!((now.len, now.pushed, now.popped), (3, 4, 1));
/// assert_eq!((now.full_events, now.full_pushes, now.high_water), (1, 1, 4));
/// ```
pub struct Observer<T, B: Backing = Heap<T>> {
    header: NonNull<Header>,
    capacity: usize,
    _backing: B,
    _of: PhantomData<fn() -> T>,
}

// SAFETY: an observer only loads atomics of the header, which its backing keeps alive;
// it never touches an item. Sending or sharing it sends or shares its backing.
unsafe impl<T: Send, B: Backing + Send> Send for Observer<T, B> {}
// SAFETY: as above; every access is an atomic load.
unsafe impl<T: Send, B: Backing + Sync> Sync for Observer<T, B> {}

/// A snapshot of a ring's figures ([`Observer::stats`]). `#[non_exhaustive]`: more
/// fields may come.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RingStats {
    /// Items in the ring ([`Observer::len`]).
    pub len: usize,
    /// The capacity.
    pub capacity: usize,
    /// The most items seen in the ring ([`Observer::high_water`]).
    pub high_water: usize,
    /// Items pushed since the ring was made (wrapping at `usize::MAX`).
    pub pushed: usize,
    /// Items popped (or dropped in place by the consumer) since the ring was made.
    pub popped: usize,
    /// Times the ring became full ([`Observer::full_events`]).
    pub full_events: usize,
    /// `try_push` calls that found the ring full ([`Observer::full_pushes`]).
    pub full_pushes: usize,
}

impl<T, B: Backing> Observer<T, B> {
    pub(crate) fn new(header: NonNull<Header>, capacity: usize, backing: B) -> Self {
        Observer {
            header,
            capacity,
            _backing: backing,
            _of: PhantomData,
        }
    }

    fn header(&self) -> &Header {
        // SAFETY: the backing keeps the header alive as long as the observer exists.
        unsafe { self.header.as_ref() }
    }

    /// Items in the ring now, as a snapshot: `popped` is loaded before `pushed`, so it
    /// is never negative; it is capped at the capacity (while both sides move, the two
    /// loads are a moment apart).
    ///
    /// ```
    /// let (mut tx, _rx) = handoff_spsc::channel::<u8>(8);
    /// tx.push_slice(&[1, 2, 3]);
    /// assert_eq!(tx.observer().len(), 3);
    /// ```
    pub fn len(&self) -> usize {
        let head = self.popped();
        let tail = self.pushed();
        tail.wrapping_sub(head).min(self.capacity)
    }

    /// Whether the ring looks empty now (see [`len`](Self::len)).
    ///
    /// ```
    /// let (tx, _rx) = handoff_spsc::channel::<u8>(8);
    /// assert!(tx.observer().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ring's capacity.
    ///
    /// ```
    /// let (_tx, rx) = handoff_spsc::channel::<u8>(100);
    /// assert_eq!(rx.observer().capacity(), 100);
    /// ```
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The most items seen in the ring: the most the producer found in it at one look
    /// at the consumer's index (it looks when its cached view runs out of room: once
    /// per lap of a ring that keeps up, more often as it fills; and in `len`,
    /// `free_len`, `is_full`), or the capacity once a push has found the ring full. A
    /// lower bound of the true maximum: a ring filled and drained between two looks
    /// (here by `push_slice`, which needed no look) is not seen.
    ///
    /// ```
    /// let (mut tx, mut rx) = handoff_spsc::channel::<u8>(4);
    /// tx.push_slice(&[1, 2, 3, 4]);
    /// assert_eq!(rx.try_pop(), Ok(1));
    /// tx.try_push(5).unwrap(); // the producer looks: three in the ring
    /// assert_eq!(rx.observer().high_water(), 3);
    /// assert!(tx.try_push(6).is_err()); // full
    /// assert_eq!(rx.observer().high_water(), 4);
    /// ```
    pub fn high_water(&self) -> usize {
        // Relaxed: counters, read as a snapshot.
        let seen = self
            .header()
            .producer_stats
            .high_water
            .load(Ordering::Relaxed);
        if self.full_events() > 0 {
            self.capacity
        } else {
            seen.min(self.capacity)
        }
    }

    /// Times the ring became full: each run of failed pushes (`try_push` finding it
    /// full, `PushError::Full` or `Disconnected`) counts once, whatever its length.
    ///
    /// ```
    /// let (mut tx, mut rx) = handoff_spsc::channel::<u8>(1);
    /// tx.try_push(1).unwrap();
    /// assert!(tx.try_push(2).is_err());
    /// assert!(tx.try_push(2).is_err()); // the same episode
    /// rx.try_pop().unwrap();
    /// tx.try_push(2).unwrap();
    /// assert!(tx.try_push(3).is_err()); // a second one
    /// assert_eq!(tx.observer().full_events(), 2);
    /// assert_eq!(tx.observer().full_pushes(), 3);
    /// ```
    pub fn full_events(&self) -> usize {
        // Relaxed: a counter.
        self.header()
            .producer_stats
            .full_events
            .load(Ordering::Relaxed)
    }

    /// `try_push` calls that found the ring full (each retry of a spinning producer
    /// counts).
    ///
    /// ```
    /// let (mut tx, _rx) = handoff_spsc::channel::<u8>(1);
    /// tx.try_push(1).unwrap();
    /// let _ = tx.try_push(2);
    /// assert_eq!(tx.observer().full_pushes(), 1);
    /// ```
    pub fn full_pushes(&self) -> usize {
        // Relaxed: a counter.
        self.header()
            .producer_stats
            .full_pushes
            .load(Ordering::Relaxed)
    }

    /// Items pushed since the ring was made (the producer's index; wrapping).
    ///
    /// ```
    /// let (mut tx, _rx) = handoff_spsc::channel::<u8>(4);
    /// tx.try_push(1).unwrap();
    /// assert_eq!(tx.observer().pushed(), 1);
    /// ```
    pub fn pushed(&self) -> usize {
        // Acquire, as the consumer's: a snapshot of what has been published.
        self.header().tail.load(Ordering::Acquire)
    }

    /// Items popped since the ring was made (the consumer's published index; wrapping).
    ///
    /// ```
    /// let (mut tx, mut rx) = handoff_spsc::channel::<u8>(4);
    /// tx.try_push(1).unwrap();
    /// rx.try_pop().unwrap();
    /// assert_eq!(rx.observer().popped(), 1);
    /// ```
    pub fn popped(&self) -> usize {
        // Acquire, as the producer's.
        self.header().head.load(Ordering::Acquire)
    }

    /// Every figure at once.
    ///
    /// ```
    /// let (tx, _rx) = handoff_spsc::channel::<u8>(4);
    /// let s = tx.observer().stats();
    /// assert_eq!((s.len, s.capacity, s.pushed), (0, 4, 0));
    /// ```
    pub fn stats(&self) -> RingStats {
        RingStats {
            len: self.len(),
            capacity: self.capacity,
            high_water: self.high_water(),
            pushed: self.pushed(),
            popped: self.popped(),
            full_events: self.full_events(),
            full_pushes: self.full_pushes(),
        }
    }
}

impl<T, B: Backing> Clone for Observer<T, B> {
    fn clone(&self) -> Self {
        Observer::new(self.header, self.capacity, raw::share(&self._backing))
    }
}

impl<T, B: Backing> fmt::Debug for Observer<T, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Observer").field(&self.stats()).finish()
    }
}
