//! Waiting for an item or for room, with a timeout: a layer over the rings for callers
//! that want it, at no cost to those that do not (the plain `try_push` / `try_pop` do
//! not change).
//!
//! * [`Consumer::pop_timeout`] and [`Producer::push_timeout`] retry the non-blocking
//!   call until it succeeds, the other side is gone, or the timeout passes, waiting
//!   between tries as a [`Strategy`] says: [`Spin`] (a `pause` between tries: the
//!   lowest latency, a core kept busy) or [`SpinThenYield`] (spin a number of tries,
//!   then give the core to the scheduler between tries). A strategy of your own is a
//!   type that implements [`Strategy`].
//! * [`parking`] wraps both handles so that a waiting side can sleep: its thread parks
//!   (`std::thread::park_timeout`) after spinning a while, and the other side wakes it
//!   when it pushes or pops. Waking costs the other side something on every call: a
//!   full memory fence and a load after each push or pop (see [`ParkingProducer`]).
//!
//! Every wait ends when the other side is gone: [`PopTimeoutError::Disconnected`] once
//! the producer has been dropped and every item it pushed was popped,
//! [`PushTimeoutError::Disconnected`] when the consumer has been dropped and the ring is
//! full (a push that finds room still succeeds, as `try_push` does).
//!
//! ```
//! use std::time::Duration;
//! use handoff_spsc::wait::{PopTimeoutError, SpinThenYield};
//!
//! let (mut tx, mut rx) = handoff_spsc::channel::<u64>(64);
//! let feed = std::thread::spawn(move || {
//!     for i in 0..1000 {
//!         tx.push_timeout(i, Duration::from_secs(10), SpinThenYield::default()).unwrap();
//!     }
//! });
//! let mut next = 0;
//! loop {
//!     match rx.pop_timeout(Duration::from_secs(10), SpinThenYield::default()) {
//!         Ok(v) => { assert_eq!(v, next); next += 1; }
//!         Err(PopTimeoutError::Disconnected) => break, // the feed is done and drained
//!         Err(e) => panic!("{e}"),
//!     }
//! }
//! assert_eq!(next, 1000);
//! feed.join().unwrap();
//! ```

use core::fmt;
use core::mem::ManuallyDrop;
use core::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use crate::raw::Backing;
use crate::{Consumer, Heap, PopError, Producer, PushError};

/// How a waiting call spends the time between two tries.
pub trait Strategy {
    /// Called after the `tries`-th failed try in a row (the first call gets 1), before
    /// the next try. `deadline` is when the waiting call gives up (`None`: never); the
    /// call checks it itself after this returns, so a strategy may ignore it.
    fn wait(&mut self, tries: u32, deadline: Option<Instant>);
}

/// One `pause` ([`core::hint::spin_loop`]) between tries: the thread never leaves the
/// core, and an item is seen within a few tens of nanoseconds of its arrival.
///
/// ```
/// use handoff_spsc::wait::Spin;
/// let (_tx, mut rx) = handoff_spsc::channel::<u8>(4);
/// let r = rx.pop_timeout(std::time::Duration::from_micros(50), Spin);
/// assert_eq!(r, Err(handoff_spsc::wait::PopTimeoutError::Timeout));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Spin;

impl Strategy for Spin {
    #[inline]
    fn wait(&mut self, _tries: u32, _deadline: Option<Instant>) {
        core::hint::spin_loop();
    }
}

/// Spins for the first `spins` tries, then calls [`std::thread::yield_now`] between
/// tries: the core goes to another runnable thread, if there is one, until the
/// scheduler comes back (a system call per try from then on).
///
/// ```
/// use handoff_spsc::wait::SpinThenYield;
/// assert_eq!(SpinThenYield::default().spins(), 100);
/// assert_eq!(SpinThenYield::new(10).spins(), 10);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SpinThenYield {
    spins: u32,
}

impl SpinThenYield {
    /// Spin `spins` tries before yielding.
    pub const fn new(spins: u32) -> SpinThenYield {
        SpinThenYield { spins }
    }

    /// The number of tries spun before yielding.
    pub const fn spins(&self) -> u32 {
        self.spins
    }
}

impl Default for SpinThenYield {
    /// 100 tries (a few microseconds), then yield.
    fn default() -> SpinThenYield {
        SpinThenYield::new(100)
    }
}

impl Strategy for SpinThenYield {
    #[inline]
    fn wait(&mut self, tries: u32, _deadline: Option<Instant>) {
        if tries <= self.spins {
            core::hint::spin_loop();
        } else {
            thread::yield_now();
        }
    }
}

/// Why [`Consumer::pop_timeout`] (or [`ParkingConsumer::pop_timeout`]) returned
/// without an item.
///
/// Not `#[non_exhaustive]`: the wait timed out or the other side is gone, nothing else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PopTimeoutError {
    /// The timeout passed with the ring empty; the producer is still there.
    Timeout,
    /// The producer has been dropped and every item it pushed was popped.
    Disconnected,
}

impl fmt::Display for PopTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PopTimeoutError::Timeout => f.write_str("timed out waiting for an item"),
            PopTimeoutError::Disconnected => {
                f.write_str("the ring is empty and its producer has been dropped")
            }
        }
    }
}

impl std::error::Error for PopTimeoutError {}

/// Why [`Producer::push_timeout`] (or [`ParkingProducer::push_timeout`]) handed the
/// value back.
///
/// Not `#[non_exhaustive]`: the wait timed out or the other side is gone, nothing else.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum PushTimeoutError<T> {
    /// The timeout passed with the ring full; the consumer is still there.
    Timeout(T),
    /// The consumer has been dropped: nothing will make room.
    Disconnected(T),
}

impl<T> PushTimeoutError<T> {
    /// Takes the value back.
    ///
    /// ```
    /// use std::time::Duration;
    /// use handoff_spsc::wait::Spin;
    /// let (mut tx, _rx) = handoff_spsc::channel::<&str>(1);
    /// tx.try_push("a").unwrap();
    /// let e = tx.push_timeout("b", Duration::from_micros(10), Spin).unwrap_err();
    /// assert_eq!(e.into_inner(), "b");
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            PushTimeoutError::Timeout(v) | PushTimeoutError::Disconnected(v) => v,
        }
    }
}

impl<T> fmt::Debug for PushTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushTimeoutError::Timeout(_) => f.write_str("Timeout(..)"),
            PushTimeoutError::Disconnected(_) => f.write_str("Disconnected(..)"),
        }
    }
}

impl<T> fmt::Display for PushTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushTimeoutError::Timeout(_) => f.write_str("timed out waiting for room"),
            PushTimeoutError::Disconnected(_) => {
                f.write_str("the ring is full and its consumer has been dropped")
            }
        }
    }
}

impl<T> std::error::Error for PushTimeoutError<T> {}

/// `now + timeout`, or `None` (no deadline) when that is past what an `Instant` holds.
fn deadline_after(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

fn past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// The loop of every waiting call: `attempt` on `state` until it has an outcome
/// (`Some`), calling `idle` with the number of failed tries and the deadline between two
/// attempts; `None` once `timeout` has passed. The clock is read only after a first
/// failure.
fn retry<S: ?Sized, R>(
    timeout: Duration,
    state: &mut S,
    mut attempt: impl FnMut(&mut S) -> Option<R>,
    mut idle: impl FnMut(&mut S, u32, Option<Instant>),
) -> Option<R> {
    let mut deadline = None;
    let mut tries = 0u32;
    loop {
        if let Some(outcome) = attempt(state) {
            return Some(outcome);
        }
        if tries == 0 {
            deadline = deadline_after(timeout);
        } else if past(deadline) {
            return None;
        }
        tries = tries.saturating_add(1);
        idle(state, tries, deadline);
    }
}

/// One `try_pop` as a waiting call sees it: an outcome, or `None` to wait on.
fn pop_outcome<T>(r: Result<T, PopError>) -> Option<Result<T, PopTimeoutError>> {
    match r {
        Ok(v) => Some(Ok(v)),
        Err(PopError::Disconnected) => Some(Err(PopTimeoutError::Disconnected)),
        Err(PopError::Empty) => None,
    }
}

/// One `try_push` of the value in `slot`: an outcome, or `None` with the value back in
/// `slot` to try again.
fn push_outcome<T>(
    slot: &mut Option<T>,
    push: impl FnOnce(T) -> Result<(), PushError<T>>,
) -> Option<Result<(), PushTimeoutError<T>>> {
    let value = slot.take()?;
    match push(value) {
        Ok(()) => Some(Ok(())),
        Err(PushError::Disconnected(v)) => Some(Err(PushTimeoutError::Disconnected(v))),
        Err(PushError::Full(v)) => {
            *slot = Some(v);
            None
        }
    }
}

/// What a push that timed out hands back.
fn timed_out<T>(slot: Option<T>) -> Result<(), PushTimeoutError<T>> {
    match slot {
        Some(v) => Err(PushTimeoutError::Timeout(v)),
        None => unreachable!("a push that did not finish keeps its value"),
    }
}

impl<T, B: Backing> Consumer<T, B> {
    /// Pops the oldest item, waiting for one as `strategy` says for up to `timeout`
    /// (`Duration::MAX`: for ever). Ends early, with
    /// [`PopTimeoutError::Disconnected`], once the producer is gone and the ring is
    /// drained. Reads the clock only after a first failed try, so an item that is
    /// there costs what [`try_pop`](Self::try_pop) costs.
    ///
    /// ```
    /// use std::time::Duration;
    /// use handoff_spsc::wait::{PopTimeoutError, Spin};
    /// let (mut tx, mut rx) = handoff_spsc::channel::<u32>(4);
    /// tx.try_push(7).unwrap();
    /// assert_eq!(rx.pop_timeout(Duration::from_millis(1), Spin), Ok(7));
    /// drop(tx);
    /// assert_eq!(rx.pop_timeout(Duration::MAX, Spin), Err(PopTimeoutError::Disconnected));
    /// ```
    pub fn pop_timeout<S: Strategy>(
        &mut self,
        timeout: Duration,
        mut strategy: S,
    ) -> Result<T, PopTimeoutError> {
        retry(
            timeout,
            self,
            |rx| pop_outcome(rx.try_pop()),
            |_, tries, deadline| strategy.wait(tries, deadline),
        )
        .unwrap_or(Err(PopTimeoutError::Timeout))
    }
}

impl<T, B: Backing> Producer<T, B> {
    /// Pushes `value`, waiting for room as `strategy` says for up to `timeout`
    /// (`Duration::MAX`: for ever); hands it back in [`PushTimeoutError::Timeout`],
    /// or at once in [`PushTimeoutError::Disconnected`] when the consumer is gone and
    /// the ring full. Reads the clock only after a first failed try.
    ///
    /// ```
    /// use std::time::Duration;
    /// use handoff_spsc::wait::{PushTimeoutError, SpinThenYield};
    /// let (mut tx, rx) = handoff_spsc::channel::<u32>(1);
    /// tx.push_timeout(1, Duration::from_millis(1), SpinThenYield::default()).unwrap();
    /// let e = tx.push_timeout(2, Duration::from_millis(1), SpinThenYield::default());
    /// assert_eq!(e, Err(PushTimeoutError::Timeout(2)));
    /// drop(rx);
    /// assert_eq!(tx.push_timeout(3, Duration::MAX, SpinThenYield::default()),
    ///            Err(PushTimeoutError::Disconnected(3)));
    /// ```
    pub fn push_timeout<S: Strategy>(
        &mut self,
        value: T,
        timeout: Duration,
        mut strategy: S,
    ) -> Result<(), PushTimeoutError<T>> {
        let mut slot = Some(value);
        let outcome = retry(
            timeout,
            self,
            |tx| push_outcome(&mut slot, |v| tx.try_push(v)),
            |_, tries, deadline| strategy.wait(tries, deadline),
        );
        outcome.unwrap_or_else(|| timed_out(slot))
    }
}

/// What the two parking handles share: for each side, whether it is (about to be)
/// parked, and its thread.
#[derive(Default)]
struct Bell {
    consumer_parked: crossbeam_utils::CachePadded<AtomicBool>,
    producer_parked: crossbeam_utils::CachePadded<AtomicBool>,
    consumer: Mutex<Option<Thread>>,
    producer: Mutex<Option<Thread>>,
}

/// Which side of a [`Bell`].
#[derive(Clone, Copy)]
enum Side {
    Producer,
    Consumer,
}

impl Bell {
    fn parked(&self, side: Side) -> &AtomicBool {
        match side {
            Side::Producer => &self.producer_parked,
            Side::Consumer => &self.consumer_parked,
        }
    }

    fn thread(&self, side: Side) -> &Mutex<Option<Thread>> {
        match side {
            Side::Producer => &self.producer,
            Side::Consumer => &self.consumer,
        }
    }

    /// After a push (`side` = the consumer) or a pop (the producer) has published its
    /// index: wakes that side if it is parked. SeqCst fence: our index store and this
    /// load are not reordered, and the parking side's flag store and its next look at
    /// the ring are not either, so at least one of us sees the other (the parking side
    /// sees our index, or we see its flag).
    /// The flag is taken down by the first one to see it up (`swap`), so a parked side
    /// is woken once however many pushes or pops come before it runs again.
    #[inline]
    fn ring(&self, side: Side) {
        fence(Ordering::SeqCst);
        let parked = self.parked(side);
        if parked.load(Ordering::Relaxed) && parked.swap(false, Ordering::Relaxed) {
            self.wake(side);
        }
    }

    #[cold]
    #[inline(never)]
    fn wake(&self, side: Side) {
        let thread = self.thread(side).lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = thread.as_ref() {
            t.unpark();
        }
    }

    /// Parks the calling thread (as `side`) until woken, `deadline`, or a spurious
    /// wake-up, unless `ready` (a look at the ring) says there is something to do once
    /// the flag is up. Returns what `ready` found the last time it looked.
    #[cold]
    #[inline(never)]
    fn park<R>(
        &self,
        side: Side,
        deadline: Option<Instant>,
        ready: impl FnOnce() -> Option<R>,
    ) -> Option<R> {
        {
            let mut thread = self.thread(side).lock().unwrap_or_else(|e| e.into_inner());
            let me = thread::current();
            if thread.as_ref().map(Thread::id) != Some(me.id()) {
                *thread = Some(me);
            }
        }
        self.parked(side).store(true, Ordering::Relaxed);
        // SeqCst: the flag store above is seen before our look at the ring below (see
        // `ring`).
        fence(Ordering::SeqCst);
        let found = ready();
        if found.is_none() {
            match deadline {
                Some(d) => thread::park_timeout(d.saturating_duration_since(Instant::now())),
                None => thread::park(),
            }
        }
        self.parked(side).store(false, Ordering::Relaxed);
        found
    }
}

/// Tries spun (with a `pause` each) before a parking handle parks.
const SPINS_BEFORE_PARKING: u32 = 100;

/// Wraps the two handles of a ring so that a waiting side can sleep and the other side
/// wakes it: [`ParkingConsumer::pop_timeout`] and [`ParkingProducer::push_timeout`]
/// spin for a hundred tries, then park their thread until the other side pushes or
/// pops (or is dropped), or the timeout passes.
///
/// What it costs: after every successful push (pop) the parking producer (consumer)
/// issues a full memory fence (`mfence` or a locked instruction on x86-64) and loads
/// the other side's flag, to know whether to wake it, about 10-40 ns; a wake-up is a
/// system call (`futex`) on the waking side and a scheduler round trip (microseconds)
/// on the woken one. The plain handles pay none of this.
///
/// ```
/// use std::time::Duration;
/// use handoff_spsc::wait::{parking, PopTimeoutError};
///
/// let (tx, rx) = handoff_spsc::channel::<String>(16);
/// let (mut tx, mut rx) = parking(tx, rx);
/// let strategy = std::thread::spawn(move || {
///     let mut seen = 0;
///     // Sleeps while no order comes; woken by each push.
///     while let Ok(order) = rx.pop_timeout(Duration::from_secs(10)) {
///         assert!(order.starts_with("order"));
///         seen += 1;
///     }
///     seen
/// });
/// for i in 0..100 {
///     tx.push_timeout(format!("order {i}"), Duration::from_secs(10)).unwrap();
/// }
/// drop(tx); // wakes the consumer, which drains the ring and sees Disconnected
/// assert_eq!(strategy.join().unwrap(), 100);
/// ```
///
/// # Panics
/// If `producer` and `consumer` are not the two halves of one ring (each would wait for
/// a side that never wakes it).
pub fn parking<T, B: Backing>(
    producer: Producer<T, B>,
    consumer: Consumer<T, B>,
) -> (ParkingProducer<T, B>, ParkingConsumer<T, B>) {
    assert!(
        producer.raw.header_ptr() == consumer.raw.header_ptr(),
        "handoff_spsc::wait::parking: the producer and the consumer are not the two halves of one ring"
    );
    // A `ReadChunk` forgotten before the wrap may have left the shared `head` behind the
    // consumer's own; publish it now, so that no later catch-up (on an empty poll)
    // frees room without ringing. Through the wrappers no chunk can be forgotten.
    consumer.publish_if_behind();
    let bell = Arc::new(Bell::default());
    (
        ParkingProducer {
            inner: ManuallyDrop::new(producer),
            bell: Arc::clone(&bell),
        },
        ParkingConsumer {
            inner: ManuallyDrop::new(consumer),
            bell,
        },
    )
}

/// A [`Producer`] that wakes a parked [`ParkingConsumer`]; made by [`parking`].
///
/// Its `try_push` costs a fence and a load more than the plain one (see [`parking`]).
/// Pair it only with the `ParkingConsumer` made with it.
pub struct ParkingProducer<T, B: Backing = Heap<T>> {
    inner: ManuallyDrop<Producer<T, B>>,
    bell: Arc<Bell>,
}

/// A [`Consumer`] that can sleep until a [`ParkingProducer`] pushes; made by
/// [`parking`].
pub struct ParkingConsumer<T, B: Backing = Heap<T>> {
    inner: ManuallyDrop<Consumer<T, B>>,
    bell: Arc<Bell>,
}

impl<T, B: Backing> ParkingProducer<T, B> {
    /// [`Producer::try_push`], then wakes the consumer if it is parked.
    ///
    /// ```
    /// let (tx, rx) = handoff_spsc::channel::<u8>(1);
    /// let (mut tx, _rx) = handoff_spsc::wait::parking(tx, rx);
    /// assert!(tx.try_push(1).is_ok());
    /// assert!(tx.try_push(2).is_err());
    /// ```
    #[inline]
    pub fn try_push(&mut self, value: T) -> Result<(), PushError<T>> {
        self.inner.try_push(value)?;
        self.bell.ring(Side::Consumer);
        Ok(())
    }

    /// Pushes `value`, waiting up to `timeout` (`Duration::MAX`: for ever) for room:
    /// it spins a hundred tries, then parks until the consumer pops (or is dropped) or
    /// the timeout passes. Hands the value back as [`Producer::push_timeout`] does.
    ///
    /// ```
    /// use std::time::Duration;
    /// use handoff_spsc::wait::{parking, PushTimeoutError};
    /// let (tx, rx) = handoff_spsc::channel::<u8>(1);
    /// let (mut tx, rx) = parking(tx, rx);
    /// tx.push_timeout(1, Duration::ZERO).unwrap();
    /// assert_eq!(tx.push_timeout(2, Duration::from_millis(2)), Err(PushTimeoutError::Timeout(2)));
    /// drop(rx);
    /// assert_eq!(tx.push_timeout(3, Duration::MAX), Err(PushTimeoutError::Disconnected(3)));
    /// ```
    pub fn push_timeout(&mut self, value: T, timeout: Duration) -> Result<(), PushTimeoutError<T>> {
        let mut slot = Some(value);
        let outcome = retry(
            timeout,
            self,
            |tx| push_outcome(&mut slot, |v| tx.try_push(v)),
            |tx, tries, deadline| {
                if tries <= SPINS_BEFORE_PARKING {
                    core::hint::spin_loop();
                    return;
                }
                let inner = &*tx.inner;
                // Room, or a consumer gone, ends the wait before it starts.
                let ready = || (inner.free_len() > 0 || inner.is_abandoned()).then_some(());
                tx.bell.park(Side::Producer, deadline, ready);
            },
        );
        outcome.unwrap_or_else(|| timed_out(slot))
    }

    /// The plain producer inside, for the calls that only read (`len`, `free_len`,
    /// `capacity`, `is_abandoned`, `observer`). The wrapper forwards no slice or chunk
    /// call: those do not wake the other side.
    ///
    /// ```
    /// let (tx, rx) = handoff_spsc::channel::<u8>(8);
    /// let (tx, _rx) = handoff_spsc::wait::parking(tx, rx);
    /// assert_eq!(tx.get_ref().capacity(), 8);
    /// ```
    pub fn get_ref(&self) -> &Producer<T, B> {
        &self.inner
    }
}

impl<T, B: Backing> ParkingConsumer<T, B> {
    /// [`Consumer::try_pop`], then wakes the producer if it is parked.
    ///
    /// ```
    /// let (tx, rx) = handoff_spsc::channel::<u8>(1);
    /// let (mut tx, mut rx) = handoff_spsc::wait::parking(tx, rx);
    /// tx.try_push(5).unwrap();
    /// assert_eq!(rx.try_pop(), Ok(5));
    /// ```
    #[inline]
    pub fn try_pop(&mut self) -> Result<T, PopError> {
        let v = self.inner.try_pop()?;
        self.bell.ring(Side::Producer);
        Ok(v)
    }

    /// Pops the oldest item, waiting up to `timeout` (`Duration::MAX`: for ever): it
    /// spins a hundred tries, then parks until the producer pushes (or is dropped) or
    /// the timeout passes. Errors as [`Consumer::pop_timeout`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use handoff_spsc::wait::{parking, PopTimeoutError};
    /// let (tx, rx) = handoff_spsc::channel::<u8>(1);
    /// let (tx, mut rx) = parking(tx, rx);
    /// assert_eq!(rx.pop_timeout(Duration::from_millis(2)), Err(PopTimeoutError::Timeout));
    /// drop(tx);
    /// assert_eq!(rx.pop_timeout(Duration::MAX), Err(PopTimeoutError::Disconnected));
    /// ```
    pub fn pop_timeout(&mut self, timeout: Duration) -> Result<T, PopTimeoutError> {
        retry(
            timeout,
            self,
            |rx| pop_outcome(rx.try_pop()),
            |rx, tries, deadline| {
                if tries <= SPINS_BEFORE_PARKING {
                    core::hint::spin_loop();
                    return;
                }
                let inner = &*rx.inner;
                // An item, or a producer gone, ends the wait before it starts.
                let ready = || (!inner.is_empty() || inner.is_abandoned()).then_some(());
                rx.bell.park(Side::Consumer, deadline, ready);
            },
        )
        .unwrap_or(Err(PopTimeoutError::Timeout))
    }

    /// The plain consumer inside, for the calls that only read (see
    /// [`ParkingProducer::get_ref`]).
    ///
    /// ```
    /// let (tx, rx) = handoff_spsc::channel::<u8>(8);
    /// let (_tx, rx) = handoff_spsc::wait::parking(tx, rx);
    /// assert!(rx.get_ref().is_empty());
    /// ```
    pub fn get_ref(&self) -> &Consumer<T, B> {
        &self.inner
    }
}

impl<T, B: Backing> Drop for ParkingProducer<T, B> {
    fn drop(&mut self) {
        // SAFETY: `inner` is dropped exactly once, here, and never used after.
        unsafe { ManuallyDrop::drop(&mut self.inner) };
        // The producer is gone now: a parked consumer wakes to drain and see it.
        self.bell.ring(Side::Consumer);
    }
}

impl<T, B: Backing> Drop for ParkingConsumer<T, B> {
    fn drop(&mut self) {
        // SAFETY: as for `ParkingProducer`.
        unsafe { ManuallyDrop::drop(&mut self.inner) };
        self.bell.ring(Side::Producer);
    }
}

impl<T, B: Backing> fmt::Debug for ParkingProducer<T, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ParkingProducer")
            .field(&*self.inner)
            .finish()
    }
}

impl<T, B: Backing> fmt::Debug for ParkingConsumer<T, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ParkingConsumer")
            .field(&*self.inner)
            .finish()
    }
}
