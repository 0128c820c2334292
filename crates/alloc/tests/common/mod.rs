//! What several of the allocator's test binaries share.

/// Test sizes: small in debug builds, ten times that with optimisations.
pub const SCALE: usize = if cfg!(debug_assertions) { 1 } else { 10 };

/// A value whose bytes say who made it: word `i` of the value tagged `tag` is
/// `tag ^ i * 0x9e37_79b9`.
pub struct Tagged(pub Vec<u64>);

impl Tagged {
    /// A value of `len` words tagged `tag`.
    pub fn new(tag: u64, len: usize) -> Tagged {
        Tagged(
            (0..len as u64)
                .map(|i| tag ^ i.wrapping_mul(0x9e37_79b9))
                .collect(),
        )
    }

    /// Panics unless every word still holds what [`Tagged::new`] wrote for `tag`.
    pub fn check(&self, tag: u64) {
        for (i, &w) in self.0.iter().enumerate() {
            assert_eq!(
                w,
                tag ^ (i as u64).wrapping_mul(0x9e37_79b9),
                "corrupted block"
            );
        }
    }
}
