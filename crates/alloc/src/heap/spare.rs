//! Spare blocks: the free blocks of the big classes that a heap's thread left beyond a
//! refill when it exited, offered to every heap before any cuts new ones.
//!
//! Why: blocks always go back to the heap that cut them, and a heap out of a class can
//! take what was returned to another heap (`take_returned`) or borrow from a heap
//! nobody owns (`borrow`), but not the depot of a heap another live thread owns. With
//! many threads alive at once (a pool of 100 workers started together, each claiming a
//! heap with the stock its last owner left), each heap kept, per class, the most its
//! threads ever needed at once: a maximum of small random demands that kept creeping
//! up (the arena grew from 288 to 408 MB over 225 waves while the most blocks alive at
//! once, summed over the classes, stayed at 58.6 MB). A heap's thread that exits now
//! moves the stock it never used here, as offsets (no block is read or written), and
//! gives its pages back; whoever runs out of the class takes a refill's worth before
//! cutting new blocks.
//! The blocks stay their heap's (their address says so): freed again, they go back to
//! it as remote frees, counted as lent until then.
//!
//! Only classes of [`SPARE_MIN`] bytes or more: their blocks hold whole pages, given
//! back when offered, so a spare costs no resident memory, and they are the classes
//! whose few blocks per heap make the per-heap maximum creep most in bytes.

use super::*;
use crate::lock::Locked;

/// The smallest class whose blocks are offered.
pub(super) const SPARE_MIN: usize = 16 << 10;

/// Spare blocks kept per class at most.
const SLOTS: usize = 1024;

/// One class's spare blocks: `(heap << 32) | offset in its region` each.
pub(super) struct Spares {
    len: usize,
    at: [u64; SLOTS],
}

/// Per class, its spare blocks.
static SPARES: [Locked<Spares>; NUM_CLASSES] = [const {
    Locked::new(Spares {
        len: 0,
        at: [0; SLOTS],
    })
}; NUM_CLASSES];

/// Whether some blocks of class `c` may be spare (a hint: the lock decides).
static ANY: [AtomicU32; NUM_CLASSES] = [const { AtomicU32::new(0) }; NUM_CLASSES];

/// Every class's lock, for the fork handlers.
pub(super) fn fork_locks(f: &mut impl FnMut(&'static Lock)) {
    for s in &SPARES {
        f(s.lock());
    }
}

/// Spare blocks now, over every class (for statistics).
pub(crate) fn spare_blocks() -> u64 {
    ANY.iter()
        .map(|n| u64::from(n.load(Ordering::Relaxed)))
        .sum()
}

impl Heap {
    /// When a thread claims this heap: every class's depot is whole, nothing of it used
    /// by this thread yet.
    ///
    /// # Safety
    /// The calling thread has just taken this heap.
    pub(super) unsafe fn note_claim(&self) {
        for bin in &self.bins {
            // SAFETY: the owner alone touches the depot's counters.
            unsafe { *bin.depot_low.get() = *bin.depot_len.get() };
        }
    }

    /// At its thread's exit: moves the depot entries of class `c` that the thread never
    /// used (those below the lowest length the depot had since the thread claimed the
    /// heap: stock an earlier thread left, more than this one needed) into the spare
    /// blocks, as far as they have room, giving back their pages (those that do not fit
    /// stay, their pages given back too). What the thread used stays for the heap's
    /// next thread, warm. "Never used" is by position: the purge sorts the depot's newer
    /// entries, which may move a few used blocks below that length and unused ones
    /// above it. Classes below [`SPARE_MIN`] keep theirs.
    ///
    /// # Safety
    /// The caller owns this heap (not the shared one) and no reference into the class's
    /// bin is alive.
    pub(super) unsafe fn offer_spares(&self, c: usize) {
        let size = class_size(c);
        if size < SPARE_MIN || self.index() == 0 {
            return;
        }
        let bin = &self.bins[c];
        // SAFETY: the owner alone touches the depot and its counters.
        let (len, low) = unsafe { (&mut *bin.depot_len.get(), *bin.depot_low.get()) };
        let unused = low.min(*len);
        if unused == 0 {
            return;
        }
        let start = self.region_start(c);
        let me = (self.index() as u64) << 32;
        let depot = self.depot(c);
        // Their pages go back first, outside the pool's lock (they are still only this
        // heap's, and nobody uses them); those below `depot_released` went back already.
        // SAFETY: the owner alone touches the depot's counters.
        let released = unsafe { *bin.depot_released.get() };
        for k in released.min(unused)..unused {
            // SAFETY: entries below the depot's length are committed and initialised,
            // and only this thread touches them; each is a free block of this heap and
            // class that nobody uses.
            unsafe {
                let offset = depot.add(k).read();
                crate::release::release_pages_within(start.wrapping_add(offset as usize), 0, size);
            }
        }
        let moved = SPARES[c].with(|s| {
            let take = unused.min(SLOTS - s.len);
            for k in 0..take {
                // SAFETY: as above.
                let offset = unsafe { depot.add(k).read() };
                s.at[s.len] = me | u64::from(offset);
                s.len += 1;
            }
            // Relaxed: a hint.
            ANY[c].store(s.len as u32, Ordering::Relaxed);
            take
        });
        if moved == 0 {
            return;
        }
        // The depot's lowest entries left it: the others move down.
        // SAFETY: entries below the depot's length are committed; the ranges lie inside
        // them, and only this thread touches them.
        unsafe { ptr::copy(depot.add(moved), depot, *len - moved) };
        *len -= moved;
        // SAFETY: the owner alone touches the depot's counters.
        unsafe {
            let settled = &mut *bin.depot_settled.get();
            *settled = settled.saturating_sub(moved);
            let released = &mut *bin.depot_released.get();
            *released = released.saturating_sub(moved);
            *bin.depot_low.get() = 0;
        }
        sub(&bin.listed, moved as u64);
        add(&bin.lent, moved as u64);
    }

    /// When this heap has no block of class `c` left (nor did another heap lend or
    /// return it any): takes up to a batch of spare blocks into its inbox and hands out
    /// the first. Null when there are none.
    ///
    /// # Safety
    /// The caller owns this heap (not the shared one), its inbox of class `c` is empty,
    /// and no allocator lock is held.
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn take_spares(&self, c: usize) -> *mut u8 {
        if ANY[c].load(Ordering::Relaxed) == 0 {
            return ptr::null_mut();
        }
        let mut got = [0u64; BATCH as usize];
        // One refill's worth (64 KiB): a heap that takes a batch of big blocks keeps
        // the rest from every other heap that needs one.
        let want = (REFILL_BATCH[c] as usize).min(got.len());
        let n = SPARES[c].with(|s| {
            let n = s.len.min(want);
            s.len -= n;
            got[..n].copy_from_slice(&s.at[s.len..s.len + n]);
            // Relaxed: a hint.
            ANY[c].store(s.len as u32, Ordering::Relaxed);
            n
        });
        if n == 0 {
            return ptr::null_mut();
        }
        // Linked into a chain: the blocks are free, nobody else can reach them now, and
        // each is about to be handed out (its first page comes back as it is written).
        let mut chain: *mut u8 = ptr::null_mut();
        for &e in got[..n].iter().rev() {
            let heap = &HEAP[(e >> 32) as usize];
            let p = heap
                .region_start(c)
                .wrapping_add((e & 0xffff_ffff) as usize);
            // SAFETY: a free block of class `c`, taken from the spares under their
            // lock: only this thread holds it.
            unsafe { set_next(p, chain) };
            chain = p;
        }
        // Relaxed: a figure for statistics.
        TAKEN_SPARES.fetch_add(n as u64, Ordering::Relaxed);
        // SAFETY: the caller owns this heap and its inbox is empty; the chain holds free
        // blocks of class `c`, linked by this thread.
        unsafe { self.adopt(c, chain) }
    }
}

/// Spare blocks taken (for statistics).
pub(crate) static TAKEN_SPARES: AtomicU64 = AtomicU64::new(0);
