//! Error types. None of them require `T: Debug`.

use core::fmt;

/// The value handed back by [`Producer::try_push`](crate::Producer::try_push) when the
/// ring is full, and whether the consumer is still there to empty it. Not
/// `#[non_exhaustive]`, on purpose: a push that fails finds the ring full, with its
/// consumer there or gone, and no third case will be added, so a `match` needs no
/// wildcard arm.
///
/// ```
/// use handoff_spsc::PushError;
/// let (mut tx, rx) = handoff_spsc::channel::<u32>(1);
/// tx.try_push(1).unwrap();
/// assert_eq!(tx.try_push(2), Err(PushError::Full(2)));
/// drop(rx);
/// assert_eq!(tx.try_push(3), Err(PushError::Disconnected(3)));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum PushError<T> {
    /// The ring held `capacity` items and the consumer is alive: it may make room.
    Full(T),
    /// The ring held `capacity` items and the consumer has been dropped (its thread
    /// may have panicked): nothing will ever make room. The value is returned
    /// unchanged. (Looked at only when the ring is full: a push that finds room
    /// succeeds even then; [`Producer::is_abandoned`](crate::Producer::is_abandoned)
    /// tells at any time.)
    Disconnected(T),
}

impl<T> PushError<T> {
    /// Takes the rejected value back.
    ///
    /// ```
    /// let (mut tx, _rx) = handoff_spsc::channel::<&str>(1);
    /// tx.try_push("a").unwrap();
    /// assert_eq!(tx.try_push("b").unwrap_err().into_inner(), "b");
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            PushError::Full(value) | PushError::Disconnected(value) => value,
        }
    }

    /// Whether the consumer is gone ([`PushError::Disconnected`]): retrying is futile.
    ///
    /// ```
    /// let (mut tx, rx) = handoff_spsc::channel::<u8>(1);
    /// tx.try_push(1).unwrap();
    /// assert!(!tx.try_push(2).unwrap_err().is_disconnected());
    /// drop(rx);
    /// assert!(tx.try_push(2).unwrap_err().is_disconnected());
    /// ```
    pub fn is_disconnected(&self) -> bool {
        matches!(self, PushError::Disconnected(_))
    }
}

impl<T> fmt::Debug for PushError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushError::Full(_) => f.write_str("Full(..)"),
            PushError::Disconnected(_) => f.write_str("Disconnected(..)"),
        }
    }
}

impl<T> fmt::Display for PushError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushError::Full(_) => f.write_str("the ring is full"),
            PushError::Disconnected(_) => {
                f.write_str("the ring is full and its consumer has been dropped")
            }
        }
    }
}

impl<T> core::error::Error for PushError<T> {}

/// Why [`Consumer::try_pop`](crate::Consumer::try_pop) returned no item. Not
/// `#[non_exhaustive]`, on purpose (as [`PushError`]): the ring is empty with its
/// producer there or gone, and no third case will be added.
///
/// ```
/// use handoff_spsc::PopError;
/// let (mut tx, mut rx) = handoff_spsc::channel::<u32>(2);
/// assert_eq!(rx.try_pop(), Err(PopError::Empty));
/// tx.try_push(7).unwrap();
/// drop(tx);
/// assert_eq!(rx.try_pop(), Ok(7)); // what the producer pushed before it went
/// assert_eq!(rx.try_pop(), Err(PopError::Disconnected));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PopError {
    /// The ring is empty and the producer is alive: an item may come.
    Empty,
    /// The ring is empty and the producer has been dropped (its thread may have
    /// panicked): nothing will ever come. Every item it pushed was popped first.
    Disconnected,
}

impl PopError {
    /// Whether the producer is gone ([`PopError::Disconnected`]): polling is futile.
    ///
    /// ```
    /// let (tx, mut rx) = handoff_spsc::channel::<u8>(1);
    /// assert!(!rx.try_pop().unwrap_err().is_disconnected());
    /// drop(tx);
    /// assert!(rx.try_pop().unwrap_err().is_disconnected());
    /// ```
    pub fn is_disconnected(&self) -> bool {
        matches!(self, PopError::Disconnected)
    }
}

impl fmt::Display for PopError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PopError::Empty => f.write_str("the ring is empty"),
            PopError::Disconnected => {
                f.write_str("the ring is empty and its producer has been dropped")
            }
        }
    }
}

impl core::error::Error for PopError {}

/// Why a ring could not be created by [`try_channel`](crate::try_channel).
///
/// ```
/// use handoff_spsc::{try_channel, CapacityError};
/// assert_eq!(try_channel::<u8>(0).unwrap_err(), CapacityError::Zero);
/// assert!(matches!(try_channel::<u64>(usize::MAX).unwrap_err(), CapacityError::TooLarge { .. }));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CapacityError {
    /// A capacity of 0 was asked for; a ring holds at least one item.
    Zero,
    /// The capacity, rounded up to a power of two for the slot array, does not fit in
    /// the address space (`isize::MAX` bytes).
    TooLarge {
        /// The capacity that was asked for.
        requested: usize,
    },
    /// The allocator refused the slot array.
    AllocFailed {
        /// The capacity that was asked for.
        requested: usize,
        /// The number of bytes that could not be allocated.
        bytes: usize,
    },
}

impl fmt::Display for CapacityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CapacityError::Zero => f.write_str("handoff-spsc: capacity must be at least 1, got 0"),
            CapacityError::TooLarge { requested } => write!(
                f,
                "handoff-spsc: capacity {requested} is too large: its power-of-two slot array would exceed isize::MAX bytes"
            ),
            CapacityError::AllocFailed { requested, bytes } => write!(
                f,
                "handoff-spsc: could not allocate {bytes} bytes for a ring of capacity {requested}"
            ),
        }
    }
}

impl core::error::Error for CapacityError {}

/// The panicking constructors' one line: the value, or a panic with the error's text at
/// the caller's location.
#[track_caller]
pub(crate) fn or_panic<R>(result: Result<R, CapacityError>) -> R {
    match result {
        Ok(value) => value,
        Err(e) => panic!("{e}"),
    }
}
