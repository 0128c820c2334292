//! Where the arena lies and which shape it has, published for the slow paths that
//! decode an address (a free that is not this heap's, `realloc`), as one word.
//!
//! The two used to be two atomics, stored one after the other; a thread freeing a big
//! block mapped before the arena existed, while another reserved a reduced arena,
//! could load the old shape (the full arena's, 16 TiB) with the new base, and decode an
//! address just above the reduced arena as a small block inside it (the loom
//! model in `tests/loom.rs` finds that interleaving). One word cannot be seen half
//! written.
//!
//! Public (hidden from the docs) so that `tests/loom.rs` can model-check it.

use crate::sync::{AtomicUsize, Ordering};

/// The base every address is decoded against before an arena exists (or when none
/// could be reserved): no user address minus it lies inside any arena (the offset of
/// every address below `2^63` is at least `2^63`, far beyond the largest arena).
pub const NO_ARENA: usize = 1 << 63;

/// Low bits of the word that hold the shape; every arena base is aligned far beyond
/// them (to a region of at least 4 MiB), so they are free.
const SHAPE_MASK: usize = 0xf;

/// How many shapes the word can name (the geometry table must not have more).
pub const SHAPES: usize = SHAPE_MASK + 1;

/// The arena's base address and its shape (an index into the geometry table) in one
/// atomic word: the base with the shape in its low bits. Before
/// [`publish`](Self::publish): `(NO_ARENA, 0)`.
pub struct ArenaWord(AtomicUsize);

impl Default for ArenaWord {
    /// No arena yet, as [`new`](Self::new).
    fn default() -> Self {
        Self::new()
    }
}

impl ArenaWord {
    /// No arena yet.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        ArenaWord(AtomicUsize::new(NO_ARENA))
    }

    /// No arena yet.
    #[cfg(loom)]
    pub fn new() -> Self {
        ArenaWord(AtomicUsize::new(NO_ARENA))
    }

    /// Publishes the arena at `base` with shape `geometry`; false (and nothing
    /// published) if `base` has any of the shape's bits set or `geometry` does not fit
    /// them: a bug of the caller, which reserves the arena aligned to a region. (No
    /// panic: the caller is inside an allocation.)
    #[must_use]
    pub fn publish(&self, base: usize, geometry: usize) -> bool {
        if base & SHAPE_MASK != 0 || geometry > SHAPE_MASK {
            return false;
        }
        // Relaxed: the pair is one value, so no load can see half of it. A thread that
        // needs the new arena (one that allocates from it, or frees a block of it)
        // reached it through the allocator's release of its ready state, stored after
        // this, so it loads this value or a later one (coherence); a thread decoding
        // an address that is not in the arena gets "outside" from either value.
        self.0.store(base | geometry, Ordering::Relaxed);
        true
    }

    /// The arena's base and shape, from one load (see [`publish`](Self::publish) for
    /// why it is relaxed).
    #[inline(always)]
    pub fn load(&self) -> (usize, usize) {
        let w = self.0.load(Ordering::Relaxed);
        (w & !SHAPE_MASK, w & SHAPE_MASK)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_word_holds_a_base_and_a_shape() {
        let w = ArenaWord::new();
        assert_eq!(w.load(), (NO_ARENA, 0));
        assert!(w.publish(0x7f12_3440_0000, 7));
        assert_eq!(w.load(), (0x7f12_3440_0000, 7));
    }

    #[test]
    fn a_misaligned_base_or_a_shape_too_big_is_refused() {
        let w = ArenaWord::new();
        assert!(!w.publish(0x7f12_3440_0008, 1));
        assert!(!w.publish(0x7f12_3440_0000, SHAPES));
        assert_eq!(w.load(), (NO_ARENA, 0), "nothing published");
    }
}
