//! What a ring's handles do beyond the defaults, chosen when the ring is made.

/// Options of a ring, given to [`channel_with`](crate::channel_with),
/// [`try_channel_with`](crate::try_channel_with) or
/// [`StaticChannel::split_with`](crate::StaticChannel::split_with). The default,
/// [`Options::new`], is what [`channel`](crate::channel) and
/// [`StaticChannel::split`](crate::StaticChannel::split) use: no call waits.
///
/// It is `#[non_exhaustive]`: build it with [`Options::new`] and its methods, so that
/// options added later do not break your code.
///
/// ```
/// use handoff_spsc::{channel_with, Options};
/// let (tx, rx) = channel_with::<u64>(1024, Options::new().slipping(true));
/// assert!(tx.slips() && rx.slips());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    pub(crate) slipping: bool,
}

impl Options {
    /// The defaults: `try_push` and `try_pop` never wait.
    ///
    /// ```
    /// assert!(!handoff_spsc::Options::new().is_slipping());
    /// ```
    pub const fn new() -> Options {
        Options { slipping: false }
    }

    /// Temporal slipping for `try_push` and `try_pop` (off by default; rings of fewer
    /// than 256 slots never slip).
    ///
    /// A slipping handle that streams right behind the other side waits inside the
    /// call for it to get ahead: a `try_pop` that refreshes its view of the producer's
    /// index while streaming (its previous refresh found items too) and finds fewer
    /// than half the ring ready, or a `try_push` that finds fewer than a quarter of it
    /// free, spins for up to six rounds of 2048 TSC ticks (about 5 us at 2.5 GHz; one
    /// round, about 0.8 us, when the other side is merely slow) while the other side
    /// keeps moving, then goes on with what is there. A pair that streams flat out then
    /// works hundreds of slots apart instead of in the same cache line, which moves
    /// more items per second; what it costs is latency: an item of a burst that
    /// reaches a streaming consumer can wait up to the whole wait. An idle consumer
    /// never waits, and what a call returns never changes, only when it returns. The
    /// batch calls (`push_slice`, `pop_slice`, the chunks) never slip. See the crate
    /// documentation, "Temporal slipping", for what it gains and costs.
    ///
    /// ```
    /// use handoff_spsc::{channel_with, Options};
    /// let (tx, _rx) = channel_with::<u64>(1024, Options::new().slipping(true));
    /// assert!(tx.slips());
    /// let (tx, _rx) = channel_with::<u64>(64, Options::new().slipping(true));
    /// assert!(!tx.slips()); // too small to slip
    /// ```
    pub const fn slipping(mut self, on: bool) -> Options {
        self.slipping = on;
        self
    }

    /// Whether [`slipping`](Self::slipping) was asked for.
    ///
    /// ```
    /// assert!(handoff_spsc::Options::new().slipping(true).is_slipping());
    /// ```
    pub const fn is_slipping(&self) -> bool {
        self.slipping
    }
}
