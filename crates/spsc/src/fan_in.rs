//! Several producers into one consumer: one SPSC ring per producer, polled in turn.

use alloc::vec::Vec;
use core::fmt;

use crate::{try_channel, CapacityError, Consumer, Observer, PopError, Producer};

/// The consuming end of a fan-in: one ring per producer (a strategy gateway's order
/// path: each strategy thread its own [`Producer`], one gateway thread taking orders
/// from all of them), polled round-robin so that no producer is starved.
///
/// * Each producer keeps a plain SPSC ring to itself: a push is the ring's wait-free
///   `try_push`, with no contention between producers (an MPSC queue makes them
///   share one index).
/// * [`try_pop`](Self::try_pop) starts at the ring after the one it last took from
///   and takes the first item it finds: between two items of one producer, every other
///   producer with an item waiting gets one turn. Within a producer, items come in the
///   order it pushed them; between producers there is no order.
/// * A call that finds every ring empty spends one `pause`, not one per ring.
/// * A ring whose producer has been dropped is polled until it is drained, then
///   skipped; once every producer is gone and every ring drained,
///   [`try_pop`](Self::try_pop) returns [`PopError::Disconnected`].
/// * More producers can join later ([`connect`](Self::connect)), in the place of one
///   that left if there is one.
///
/// Costs: `try_pop` loads one ring's `tail` per empty ring it passes (a scan of `n`
/// empty rings is `n` loads and one `pause`); nothing allocates after construction
/// except [`connect`](Self::connect).
///
/// ```
/// use handoff_spsc::{fan_in, PopError};
/// let (producers, mut gateway) = fan_in::<(usize, u64)>(3, 64);
/// let strategies: Vec<_> = producers
///     .into_iter()
///     .enumerate()
///     .map(|(id, mut tx)| std::thread::spawn(move || {
///         for seq in 0..1000 {
///             let mut order = (id, seq);
///             while let Err(e) = tx.try_push(order) {
///                 order = e.into_inner();
///                 std::hint::spin_loop();
///             }
///         }
///     }))
///     .collect();
/// let mut next = [0u64; 3];
/// loop {
///     match gateway.try_pop() {
///         Ok((id, seq)) => { assert_eq!(seq, next[id]); next[id] += 1; }
///         Err(PopError::Empty) => {}
///         Err(PopError::Disconnected) => break, // every strategy done, all taken
///     }
/// }
/// assert_eq!(next, [1000; 3]);
/// for s in strategies { s.join().unwrap(); }
/// ```
pub struct FanIn<T> {
    rings: Vec<Consumer<T>>,
    /// `live[i]`: ring `i` may still have items (its producer is there, or it was not
    /// drained after it left).
    live: Vec<bool>,
    live_count: usize,
    /// The ring the next `try_pop` looks at first.
    next: usize,
    capacity: usize,
}

/// Makes a fan-in of `producers` rings of `capacity` items each: the producers and the
/// consuming end.
///
/// # Panics
/// If `capacity` is 0 or a ring cannot be allocated; [`try_fan_in`] returns the error
/// instead. `producers` may be 0 ([`FanIn::connect`] adds them later).
///
/// ```
/// let (txs, rx) = handoff_spsc::fan_in::<u64>(4, 1024);
/// assert_eq!((txs.len(), rx.producers(), rx.capacity()), (4, 4, 1024));
/// ```
#[track_caller]
pub fn fan_in<T>(producers: usize, capacity: usize) -> (Vec<Producer<T>>, FanIn<T>) {
    crate::error::or_panic(try_fan_in(producers, capacity))
}

/// [`fan_in`], or why the rings cannot be made.
///
/// ```
/// assert!(handoff_spsc::try_fan_in::<u64>(2, 0).is_err());
/// ```
pub fn try_fan_in<T>(
    producers: usize,
    capacity: usize,
) -> Result<(Vec<Producer<T>>, FanIn<T>), CapacityError> {
    // Checked here too, so that 0 producers still refuses capacity 0.
    if capacity == 0 {
        return Err(CapacityError::Zero);
    }
    let mut rx = FanIn {
        rings: Vec::with_capacity(producers),
        live: Vec::with_capacity(producers),
        live_count: 0,
        next: 0,
        capacity,
    };
    let mut txs = Vec::with_capacity(producers);
    for _ in 0..producers {
        txs.push(rx.try_connect()?);
    }
    Ok((txs, rx))
}

impl<T> FanIn<T> {
    /// Pops an item from the next producer, in turn, that has one (see [`FanIn`]).
    /// [`PopError::Empty`] when every ring is empty; [`PopError::Disconnected`] when
    /// every producer has been dropped and its ring drained (or there never was one).
    ///
    /// ```
    /// let (mut txs, mut rx) = handoff_spsc::fan_in::<&str>(2, 4);
    /// txs[0].try_push("a1").unwrap();
    /// txs[0].try_push("a2").unwrap();
    /// txs[1].try_push("b1").unwrap();
    /// assert_eq!(rx.try_pop(), Ok("a1"));
    /// assert_eq!(rx.try_pop(), Ok("b1")); // b's turn, though a has more
    /// assert_eq!(rx.try_pop(), Ok("a2"));
    /// assert_eq!(rx.try_pop(), Err(handoff_spsc::PopError::Empty));
    /// ```
    #[inline]
    pub fn try_pop(&mut self) -> Result<T, PopError> {
        self.try_pop_from().map(|(_, v)| v)
    }

    /// [`try_pop`](Self::try_pop), with the index of the producer the item came from
    /// (its position in [`fan_in`]'s vector, then in the order of
    /// [`connect`](Self::connect)).
    ///
    /// ```
    /// let (mut txs, mut rx) = handoff_spsc::fan_in::<u8>(3, 4);
    /// txs[2].try_push(7).unwrap();
    /// assert_eq!(rx.try_pop_from(), Ok((2, 7)));
    /// ```
    pub fn try_pop_from(&mut self) -> Result<(usize, T), PopError> {
        let n = self.rings.len();
        if self.live_count == 0 {
            return Err(PopError::Disconnected);
        }
        for k in 0..n {
            let i = (self.next + k) % n;
            if !self.live[i] {
                continue;
            }
            match self.rings[i].try_pop_quiet() {
                Ok(v) => {
                    self.next = if i + 1 == n { 0 } else { i + 1 };
                    return Ok((i, v));
                }
                Err(PopError::Empty) => {}
                Err(PopError::Disconnected) => {
                    self.live[i] = false;
                    self.live_count -= 1;
                }
            }
        }
        if self.live_count == 0 {
            return Err(PopError::Disconnected);
        }
        core::hint::spin_loop();
        Err(PopError::Empty)
    }

    /// A new producer with a ring of its own (of the fan-in's capacity), polled from
    /// the next call on. Allocates the ring. It takes the place of a producer that
    /// left and whose ring was drained, if there is one (its index, as
    /// [`try_pop_from`](Self::try_pop_from) names it, is then given again; the old
    /// ring is freed), so a gateway whose producers come and go does not grow.
    ///
    /// # Panics
    /// If the ring cannot be allocated ([`try_connect`](Self::try_connect) returns
    /// the error).
    ///
    /// ```
    /// let (_none, mut rx) = handoff_spsc::fan_in::<u8>(0, 8);
    /// assert_eq!(rx.try_pop(), Err(handoff_spsc::PopError::Disconnected));
    /// let mut late = rx.connect();
    /// late.try_push(1).unwrap();
    /// assert_eq!(rx.try_pop(), Ok(1));
    /// ```
    #[track_caller]
    pub fn connect(&mut self) -> Producer<T> {
        crate::error::or_panic(self.try_connect())
    }

    /// [`connect`](Self::connect), or why the ring cannot be made.
    ///
    /// ```
    /// let (_txs, mut rx) = handoff_spsc::fan_in::<u8>(1, 8);
    /// assert!(rx.try_connect().is_ok());
    /// assert_eq!(rx.producers(), 2);
    /// ```
    pub fn try_connect(&mut self) -> Result<Producer<T>, CapacityError> {
        let (tx, rx) = try_channel(self.capacity)?;
        match self.live.iter().position(|live| !live) {
            Some(i) => {
                // Drained, and its producer gone: dropping its consumer frees the ring.
                self.rings[i] = rx;
                self.live[i] = true;
            }
            None => {
                self.rings.push(rx);
                self.live.push(true);
            }
        }
        self.live_count += 1;
        Ok(tx)
    }

    /// How many rings the fan-in holds: the producers connected, and those gone whose
    /// place no new one has taken yet.
    ///
    /// ```
    /// let (txs, rx) = handoff_spsc::fan_in::<u8>(2, 8);
    /// drop(txs);
    /// assert_eq!(rx.producers(), 2);
    /// ```
    pub fn producers(&self) -> usize {
        self.rings.len()
    }

    /// The capacity of each ring.
    ///
    /// ```
    /// let (_txs, rx) = handoff_spsc::fan_in::<u8>(2, 100);
    /// assert_eq!(rx.capacity(), 100);
    /// ```
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Items ready in all rings together (a load of each producer's index).
    ///
    /// ```
    /// let (mut txs, rx) = handoff_spsc::fan_in::<u8>(2, 8);
    /// txs[0].try_push(1).unwrap();
    /// txs[1].try_push(2).unwrap();
    /// assert_eq!(rx.len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.rings.iter().map(Consumer::len).sum()
    }

    /// Whether every ring is empty now.
    ///
    /// ```
    /// let (_txs, rx) = handoff_spsc::fan_in::<u8>(2, 8);
    /// assert!(rx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.rings.iter().all(Consumer::is_empty)
    }

    /// The observer of producer `index`'s ring ([`Observer`]), or `None` if there is
    /// no such producer.
    ///
    /// ```
    /// let (mut txs, rx) = handoff_spsc::fan_in::<u8>(2, 8);
    /// txs[1].try_push(1).unwrap();
    /// assert_eq!(rx.observer(1).map(|o| o.len()), Some(1));
    /// assert!(rx.observer(2).is_none());
    /// ```
    pub fn observer(&self, index: usize) -> Option<Observer<T>> {
        self.rings.get(index).map(Consumer::observer)
    }
}

impl<T> fmt::Debug for FanIn<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FanIn")
            .field("producers", &self.rings.len())
            .field("live", &self.live_count)
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}
