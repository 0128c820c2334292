//! Error types. None of them require `T: Debug`.

use core::fmt;

/// Why a pool, arena or freelist could not be made.
///
/// ```
/// use handoff_pool::{ConfigError, Freelist};
/// assert_eq!(Freelist::<u64>::new(0).unwrap_err(), ConfigError::Zero("slots"));
/// assert_eq!(Freelist::<()>::new(8).unwrap_err(), ConfigError::ZeroSized);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// The named setting was 0; each must be at least 1.
    Zero(&'static str),
    /// The slots asked for do not fit in the address space (`isize::MAX` bytes).
    TooLarge {
        /// Slots asked for in all.
        slots: usize,
    },
    /// `T` has size 0: there is nothing to pool.
    ZeroSized,
    /// The return ring could not be made (see `handoff_spsc::CapacityError`).
    ReturnRing(handoff_spsc::CapacityError),
    /// An arena of this many bytes does not fit in the address space.
    ArenaTooLarge {
        /// The size asked for.
        bytes: usize,
    },
    /// The memory could not be placed as asked (see [`crate::numa`]).
    Numa(crate::numa::NumaError),
    /// A magazine of more slots than [`MAX_MAGAZINE`](crate::policy::MAX_MAGAZINE).
    MagazineTooLarge {
        /// The magazine size asked for.
        magazine: usize,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Zero(what) => write!(f, "{what} must be at least 1"),
            ConfigError::TooLarge { slots } => {
                write!(f, "{slots} slots do not fit in the address space")
            }
            ConfigError::ZeroSized => f.write_str("a pool of a zero-sized type holds nothing"),
            ConfigError::ReturnRing(e) => write!(f, "return ring: {e}"),
            ConfigError::ArenaTooLarge { bytes } => {
                write!(
                    f,
                    "an arena of {bytes} bytes does not fit in the address space"
                )
            }
            ConfigError::Numa(e) => write!(f, "{e}"),
            ConfigError::MagazineTooLarge { magazine } => write!(
                f,
                "a magazine of {magazine} slots is more than the {} a pool accepts",
                crate::policy::MAX_MAGAZINE
            ),
        }
    }
}

impl core::error::Error for ConfigError {}

/// Every slot was in use: the value is handed back unchanged. Exhaustion is a normal
/// outcome, counted in the handle's statistics.
///
/// ```
/// let pool = handoff_pool::Freelist::<u32>::new(1).unwrap();
/// let _a = pool.try_alloc(1).unwrap();
/// let handoff_pool::Exhausted(back) = pool.try_alloc(2).unwrap_err();
/// assert_eq!(back, 2);
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Exhausted<T>(pub T);

impl<T> Exhausted<T> {
    /// Takes the rejected value back.
    ///
    /// ```
    /// let pool = handoff_pool::Freelist::<&str>::new(1).unwrap();
    /// let _a = pool.try_alloc("a").unwrap();
    /// assert_eq!(pool.try_alloc("b").unwrap_err().into_inner(), "b");
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for Exhausted<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Exhausted(..)")
    }
}

impl<T> fmt::Display for Exhausted<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("every slot of the pool is in use")
    }
}

impl<T> core::error::Error for Exhausted<T> {}

/// An object was given to the releasing handle of a pool it did not come from; it is
/// handed back untouched (still live, still owned by the caller).
///
/// ```
/// use handoff_pool::return_queue::{self, Config};
/// let (mut alloc_a, _release_a) = return_queue::new::<u8>(Config::default()).unwrap();
/// let (_alloc_b, mut release_b) = return_queue::new::<u8>(Config::default()).unwrap();
/// let object = alloc_a.try_alloc(7).unwrap();
/// let back = release_b.release(object).unwrap_err().into_inner();
/// assert_eq!(*back, 7);
/// ```
pub struct Foreign<B>(pub B);

impl<B> Foreign<B> {
    /// Takes the object back.
    pub fn into_inner(self) -> B {
        self.0
    }
}

impl<B> fmt::Debug for Foreign<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Foreign(..)")
    }
}

impl<B> fmt::Display for Foreign<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the object was not allocated from this pool")
    }
}

impl<B> core::error::Error for Foreign<B> {}
