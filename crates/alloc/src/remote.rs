//! The remote-free stack: where other threads return a heap's blocks.
//!
//! A thread that frees a block some other heap owns collects it in a local batch; a
//! full batch is linked through the blocks' first words and pushed onto the owner's
//! stack with one compare-and-swap. The owner takes the whole stack with one swap on
//! its slow path. Nothing is ever popped one at a time, so there is no ABA problem: a
//! push only needs the head it links to to be the head it replaces.
//!
//! Public (hidden from the docs) so that `tests/loom.rs` can model-check it.

use crate::sync::{AtomicPtr, Ordering};
use core::ptr;

/// A block on a chain of free blocks: its first word links to the next.
pub type Link = *mut u8;

/// Reads the link stored in `block`'s first word.
///
/// # Safety
/// `block` is a free block at least one word long, aligned to a word, that this
/// thread may read.
#[inline(always)]
pub unsafe fn next(block: Link) -> Link {
    // SAFETY: the caller's contract.
    unsafe { block.cast::<Link>().read() }
}

/// Stores `to` in `block`'s first word.
///
/// # Safety
/// As for [`next`], and this thread may write the block.
#[inline(always)]
pub unsafe fn set_next(block: Link, to: Link) {
    // SAFETY: the caller's contract.
    unsafe { block.cast::<Link>().write(to) }
}

/// A multi-producer stack of block chains, taken whole: any thread may take it (one
/// swap), the owner of its heap usually, another heap out of a class sometimes.
pub struct RemoteStack {
    head: AtomicPtr<u8>,
}

impl Default for RemoteStack {
    fn default() -> RemoteStack {
        RemoteStack::new()
    }
}

impl RemoteStack {
    /// An empty stack.
    #[cfg(not(loom))]
    pub const fn new() -> RemoteStack {
        RemoteStack {
            head: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// An empty stack.
    #[cfg(loom)]
    pub fn new() -> RemoteStack {
        RemoteStack {
            head: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Pushes the chain `first ..= last` (linked through their first words; `last`'s
    /// link is overwritten) with one successful compare-and-swap.
    ///
    /// # Safety
    /// The chain's blocks belong to this stack's heap, are no longer used by anyone,
    /// and are on no other list.
    pub unsafe fn push_chain(&self, first: Link, last: Link) {
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // SAFETY: `last` is a free block of the chain; until the swap below
            // succeeds, no other thread can reach it.
            unsafe { set_next(last, head) };
            // Release: the owner that takes the chain sees the links and everything
            // the freeing threads wrote before they freed the blocks. SeqCst (the same
            // locked instruction on x86): the pusher's next look at whether the heap
            // has an owner is ordered after the push (see `is_empty`).
            match self
                .head
                .compare_exchange_weak(head, first, Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(now) => head = now,
            }
        }
    }

    /// Takes every chain pushed so far, as one list linked through first words (null
    /// when empty).
    pub fn take_all(&self) -> Link {
        // Cheap test first, so an empty stack costs a load, not a locked swap.
        if self.head.load(Ordering::Relaxed).is_null() {
            return ptr::null_mut();
        }
        // Acquire: pairs with the pushers' release.
        self.head.swap(ptr::null_mut(), Ordering::Acquire)
    }

    /// Whether the stack looks empty right now. SeqCst, with the push's swap: a thread
    /// that gives its heap up (a SeqCst store) and then finds the stack empty, and a
    /// pusher that then looks whether the heap has an owner (a SeqCst load), cannot
    /// both miss each other.
    pub fn is_empty(&self) -> bool {
        self.head.load(Ordering::SeqCst).is_null()
    }
}
