//! Error types. None of them require `T: Debug`.

use core::fmt;

/// The value handed back by [`Producer::try_push`](crate::Producer::try_push) when the ring is full.
///
/// ```
/// let (mut tx, _rx) = handoff_spsc::channel::<u32>(1);
/// tx.try_push(1).unwrap();
/// let handoff_spsc::PushError::Full(back) = tx.try_push(2).unwrap_err();
/// assert_eq!(back, 2);
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum PushError<T> {
    /// The ring held `capacity` items; the value is returned unchanged.
    Full(T),
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
            PushError::Full(value) => value,
        }
    }
}

impl<T> fmt::Debug for PushError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Full(..)")
    }
}

impl<T> fmt::Display for PushError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the ring is full")
    }
}

impl<T> core::error::Error for PushError<T> {}

/// Why a ring could not be created by [`try_channel`](crate::try_channel).
///
/// ```
/// use handoff_spsc::{try_channel, CapacityError};
/// assert_eq!(try_channel::<u8>(0).unwrap_err(), CapacityError::Zero);
/// assert!(matches!(try_channel::<u64>(usize::MAX).unwrap_err(), CapacityError::TooLarge { .. }));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
