//! The slot memory of the stack-based stores: blocks of uninitialised slots, added
//! one at a time and freed together when the store is dropped.

use alloc::vec::Vec;

use super::{next_block, Capacity};
use crate::numa::Placement;
use crate::slab::{Slab, SlotPtr};
use crate::ConfigError;

pub(crate) struct Blocks<T> {
    slabs: Vec<Slab<T>>,
    total: usize,
    grows: bool,
    placement: Placement,
}

impl<T> Blocks<T> {
    /// The first block, made now.
    pub(crate) fn new(capacity: Capacity, placement: Placement) -> Result<Self, ConfigError> {
        let (first, grows) = capacity.first_block::<T>()?;
        let slab = Slab::placed(first, placement)?;
        Ok(Blocks {
            slabs: alloc::vec![slab],
            total: first,
            grows,
            placement,
        })
    }

    /// Slots made so far.
    pub(crate) fn total(&self) -> usize {
        self.total
    }

    /// The slots of block `i`, lowest address last (so a stack hands it out first).
    pub(crate) fn slots(&self, i: usize) -> impl Iterator<Item = SlotPtr<T>> + '_ {
        let slab = &self.slabs[i];
        (0..slab.len()).rev().map(move |j| SlotPtr(slab.slot(j)))
    }

    /// Adds the next block if the pool grows and is not at its limit; returns its
    /// number.
    #[cold]
    pub(crate) fn grow(&mut self) -> Option<usize> {
        if !self.grows {
            return None;
        }
        let n = next_block(self.total)?;
        // A request that passed `Capacity::first_block` cannot fail here except by
        // running out of memory, which `Slab::new` reports through
        // `handle_alloc_error`.
        let slab = Slab::placed(n, self.placement).ok()?;
        self.slabs.push(slab);
        self.total += n;
        Some(self.slabs.len() - 1)
    }
}
