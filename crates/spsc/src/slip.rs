//! Temporal slipping: a handle that streams right behind the other one waits a moment,
//! so that a streaming pair works between half full and three-quarters full.
//!
//! With both sides spinning, a pair of cached-index handles settles at one end of the
//! ring: the faster side catches up with the slower one and from then on works in the
//! cache line the other is writing or reading, so that line (and the index line) crosses
//! between the cores about once per item. A pair hundreds of slots apart moves each slot
//! line once per lap and touches an index line once per few hundred items
//! (docs/spsc-notebook.md, "Temporal slipping"). So when `try_pop` refreshes its cached `tail` and
//! finds fewer than half the capacity ready, or `try_push` refreshes `head` and finds
//! fewer than a quarter free, and the handle is streaming (its previous refresh found
//! items or room too: it did not catch up from idle), it waits: `pause`s for 2048 TSC
//! ticks between polls of the other index, for as long as the other side keeps moving
//! and at most [`ROUNDS`] polls, then goes on with what is there.
//!
//! The contract does not change: the wait starts only when at least one item (or slot)
//! is there, and what the handle finds after it is never less, so a call that would
//! have succeeded still succeeds, and one that would have failed fails at once. What it
//! costs is time: an item of a burst that lands while the consumer is waiting waits too
//! (at most [`ROUNDS`] polls, about 5 us at 2.3 GHz; one poll, 0.9 us, when the producer
//! is merely slow), and an idle consumer never waits, so a lone item is never delayed.

use core::cell::Cell;

/// Rings with fewer slots never slip: the distances would be a handful of cache lines,
/// crossed in less time than one wait.
///
/// Under loom every ring of two slots or more slips, at the largest distance, so that
/// the models go through the waits.
pub(crate) const MIN_CAPACITY: usize = if cfg!(loom) { 2 } else { 256 };

/// At most this many polls of the other index per wait (two under loom, to keep the
/// models small).
pub(crate) const ROUNDS: u32 = if cfg!(loom) { 2 } else { 6 };

/// TSC ticks between two polls (0.9 us at 2.3 GHz, 0.6 us at 3.5 GHz).
#[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
const ROUND_TICKS: u64 = 2048;

/// How many items a producer's refresh must find in the ring for the producer to read
/// its index back from the shared `tail` until its next refresh (`Producer::refill`): an
/// eighth of the capacity, for rings that slip; never for smaller rings. Under loom one
/// item, so that the models go through both ways of keeping the index.
pub(crate) fn read_back_at(capacity: usize) -> usize {
    if cfg!(loom) {
        1
    } else if capacity >= MIN_CAPACITY {
        capacity / 8
    } else {
        0
    }
}

/// Which handle: the consumer waits for half the ring to fill, the producer for a
/// quarter to drain, so a streaming pair works between the two marks.
#[derive(Clone, Copy)]
pub(crate) enum Side {
    Producer,
    Consumer,
}

/// One handle's slipping state.
pub(crate) struct Slip {
    /// Waits when fewer than this many items (consumer) or slots (producer) are there;
    /// 0 when off.
    at: usize,
    /// Refreshes in a row that found at least one item (or slot).
    streak: Cell<u32>,
}

impl Slip {
    /// On if asked for and the ring has at least [`MIN_CAPACITY`] slots.
    pub(crate) fn new(side: Side, on: bool, capacity: usize) -> Slip {
        let at = if on && capacity >= MIN_CAPACITY {
            match side {
                _ if cfg!(loom) => capacity,
                Side::Consumer => capacity / 2,
                Side::Producer => capacity / 4,
            }
        } else {
            0
        };
        Slip {
            at,
            streak: Cell::new(0),
        }
    }

    /// Whether it is on.
    pub(crate) fn is_on(&self) -> bool {
        self.at != 0
    }

    /// Called with what a refresh found: whether to wait before using it. A handle
    /// waits only when its previous refresh found something too (it is streaming, not
    /// coming back from idle) and what it found now is short of the distance.
    #[inline(always)]
    pub(crate) fn should_wait(&self, found: usize) -> bool {
        if found == 0 {
            self.streak.set(0);
            return false;
        }
        let streak = self.streak.get();
        self.streak.set(streak.saturating_add(1));
        found < self.at && streak >= 1
    }

    /// Waits while `poll` (a refresh of the other side's index) grows by at least an
    /// eighth of the distance per round, until it reaches the distance or [`ROUNDS`]
    /// polls were made; returns its last value (never less than `found`). A side that
    /// is slow rather than streaming ends the wait at the first poll.
    #[cold]
    #[inline(never)]
    pub(crate) fn wait(&self, mut found: usize, poll: impl Fn() -> usize) -> usize {
        for _ in 0..ROUNDS {
            pause_a_round();
            let now = poll();
            debug_assert!(now >= found, "the other side's index went back");
            let gained = now - found;
            found = now;
            if found >= self.at || gained < self.at / 8 {
                break;
            }
        }
        found
    }
}

/// Spins for one round: 2048 TSC ticks where there is a TSC.
#[inline(always)]
fn pause_a_round() {
    #[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
    {
        use core::arch::x86_64::_rdtsc;
        // SAFETY: `rdtsc` is part of the x86-64 baseline and has no preconditions.
        let start = unsafe { _rdtsc() };
        loop {
            core::hint::spin_loop();
            // SAFETY: as above.
            if unsafe { _rdtsc() }.wrapping_sub(start) >= ROUND_TICKS {
                break;
            }
        }
    }
    // Where there is no TSC to read (not x86-64, Miri) and under loom: a fixed number
    // of `pause`s.
    #[cfg(not(all(target_arch = "x86_64", not(miri), not(loom))))]
    for _ in 0..64 {
        core::hint::spin_loop();
    }
}
