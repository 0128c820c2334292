//! Remote frees on their way to their owners: a thread collects the blocks of other
//! heaps it frees in a small table of outboxes, one chain per (owner, class), and sends
//! a chain with one compare-and-swap onto the owner's remote stack when it holds a
//! batch, when another key needs its slot, or when the thread flushes.

use super::*;

/// Remote frees collected per owning heap and class before one compare-and-swap sends
/// them, at most; bigger classes send fewer (see [`OUTBOX_BYTES`]).
pub(super) const BATCH: u32 = 64;
/// The most bytes of blocks one outbox holds before it is sent: a thread that only
/// frees other threads' blocks keeps at most about this much per outbox (a block more)
/// away from their owners until its next flush. In earlier versions every class sent 64
/// blocks at a time: 16 MiB per outbox of 256 KiB blocks, across 128 outboxes.
pub(super) const OUTBOX_BYTES: usize = 256 << 10;
/// Blocks of each class an outbox sends at a time: [`BATCH`], or fewer so that a batch
/// holds at most [`OUTBOX_BYTES`] (at least one block).
pub(super) static OUTBOX_BATCH: [u32; NUM_CLASSES] = blocks_within(OUTBOX_BYTES, BATCH);
// Every class's batch holds at least one block.
const _: () = assert!(MAX_SMALL <= OUTBOX_BYTES);

/// Remote frees waiting for one owner heap and class: a chain through the blocks'
/// first words.
#[derive(Clone, Copy)]
pub(super) struct Outbox {
    first: Link,
    last: Link,
    count: u32,
    /// Which owner and class the chain is for: `owner * NUM_CLASSES + class`.
    key: u32,
}

pub(super) const EMPTY_OUTBOX: Outbox = Outbox {
    first: ptr::null_mut(),
    last: ptr::null_mut(),
    count: 0,
    key: 0,
};

/// Outboxes per heap: a direct-mapped table keyed by (owner, class). Two keys that
/// share a slot take turns (the occupant is sent early, as a shorter batch).
pub(super) const OUTBOXES: usize = 128;

/// The outbox slot of blocks of class `c` owned by heap `owner`, and its key.
#[inline(always)]
fn outbox_slot(owner: usize, c: usize) -> (usize, u32) {
    let key = owner * NUM_CLASSES + c;
    (key % OUTBOXES, key as u32)
}

impl Heap {
    /// Collects `p` (class `c`, owned by heap `owner`, not this one) for its owner,
    /// sending the batch when it is full.
    ///
    /// # Safety
    /// The caller owns this heap; `p` is a block of heap `owner` that nobody uses.
    pub(super) unsafe fn send_remote(&self, owner: usize, c: usize, p: *mut u8) {
        let (slot, key) = outbox_slot(owner, c);
        // SAFETY: the owner alone touches its outboxes.
        let ob = unsafe { &(*self.outbox.get())[slot] };
        if ob.first == p && ob.key == key {
            // Freed twice in a row, before its outbox was sent.
            freed_twice(p);
        }
        add(&self.bins[c].remote_sent, 1);
        // SAFETY: `p` is free and this thread's until it is sent.
        unsafe { crate::release::on_remote_free(owner, c, p) };
        // SAFETY: the caller's contract.
        unsafe { self.forward(owner, c, p) };
    }

    /// [`send_remote`](Self::send_remote) without counting the block as a remote
    /// free: for a free block this heap holds but does not own (borrowed from a heap
    /// nobody owned: see `release::retire`), already counted as in flight.
    ///
    /// # Safety
    /// As for [`send_remote`](Self::send_remote).
    pub(crate) unsafe fn forward(&self, owner: usize, c: usize, p: *mut u8) {
        let (slot, key) = outbox_slot(owner, c);
        // SAFETY: the owner alone touches its outboxes.
        let (outbox, pending) = unsafe { (&mut *self.outbox.get(), &mut *self.pending.get()) };
        let ob = &mut outbox[slot];
        if !ob.first.is_null() && ob.key != key {
            // Another (owner, class) holds the slot: send its blocks now.
            // SAFETY: the outbox's chain holds free blocks of the key it names.
            unsafe { send(ob) };
        }
        // SAFETY: `p` is free and ours to link.
        unsafe { set_next(p, ob.first) };
        if ob.first.is_null() {
            ob.last = p;
            ob.key = key;
            *pending |= 1 << slot;
        }
        ob.first = p;
        ob.count += 1;
        if ob.count >= OUTBOX_BATCH[c] {
            // SAFETY: as above.
            unsafe { send(ob) };
            *pending &= !(1 << slot);
        }
    }

    /// Sends every collected remote free to its owner.
    ///
    /// # Safety
    /// The caller owns this heap.
    pub(crate) unsafe fn flush_outboxes(&self) {
        // SAFETY: the owner alone touches its outboxes.
        let (outbox, pending) = unsafe { (&mut *self.outbox.get(), &mut *self.pending.get()) };
        while *pending != 0 {
            let slot = pending.trailing_zeros() as usize;
            *pending &= !(1 << slot);
            // SAFETY: a pending outbox's chain holds free blocks of the key it names.
            unsafe { send(&mut outbox[slot]) };
        }
    }
}

/// Pushes a non-empty outbox's chain onto its owner's remote stack for its class (one
/// compare-and-swap) and empties it.
///
/// # Safety
/// `ob` is non-empty, and its chain holds blocks of the owner and class its key names
/// that nobody uses.
unsafe fn send(ob: &mut Outbox) {
    let key = ob.key as usize;
    let (owner, c) = (key / NUM_CLASSES, key % NUM_CLASSES);
    // SAFETY: the caller's contract.
    unsafe { HEAP[owner].remote[c].push_chain(ob.first, ob.last) };
    *ob = EMPTY_OUTBOX;
    note_remote(owner, c);
}
