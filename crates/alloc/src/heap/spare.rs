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
//! once, summed over the classes, stayed at 58.6 MiB). A heap's thread that exits now
//! moves its stock beyond one refill here, as offsets (no block is read or written),
//! its pages as they were; whoever runs out of the class takes a refill's worth before
//! cutting new blocks, warm, and the pages of spares nobody takes for a second go back
//! ([`release_stale_spares`]). What stays with each heap is then at most a refill per
//! class, whoever claims it next.
//! The blocks stay their heap's (their address says so): freed again, they go back to
//! it as remote frees, counted as lent until then.
//!
//! Only classes of [`SPARE_MIN`] bytes or more: each of their blocks holds at least one
//! whole page (half or more of its bytes), given back once the spare has waited long
//! enough, so a spare nobody wants costs little resident memory, and they are the
//! classes whose few blocks per heap make the per-heap maximum creep most in bytes.
//! (Smaller blocks share pages with their neighbours: spare, they would keep them
//! resident.)

use super::*;
use crate::lock::Locked;

/// The smallest class whose blocks are offered.
pub(super) const SPARE_MIN: usize = 8 << 10;

/// Spare blocks kept per class at most.
const SLOTS: usize = 1024;

/// An entry's flag: the block's pages were given back (since it was last used).
const RELEASED: u64 = 1 << 63;

/// One class's spare blocks: `(heap << 32) | offset in its region` each, with
/// [`RELEASED`] set once its pages went back. A stack: offers push, takes pop.
pub(super) struct Spares {
    len: usize,
    at: [u64; SLOTS],
    /// The entries below this index have not moved since `since` (the lowest length
    /// the stack has had since then).
    settled: usize,
    since: u64,
    /// While their pages go back (outside the lock), the entries below this index are
    /// nobody's to take; 0 otherwise.
    busy: usize,
}

/// Per class, its spare blocks.
static SPARES: [Locked<Spares>; NUM_CLASSES] = [const {
    Locked::new(Spares {
        len: 0,
        at: [0; SLOTS],
        settled: 0,
        since: 0,
        busy: 0,
    })
}; NUM_CLASSES];

/// Whether some blocks of class `c` may be spare (a hint: the lock decides).
static ANY: [AtomicU32; NUM_CLASSES] = [const { AtomicU32::new(0) }; NUM_CLASSES];

/// When the spare blocks were last looked at for pages to give back
/// ([`release_stale_spares`]).
static AGED_AT: AtomicU64 = AtomicU64::new(0);

/// Every class's lock, for the fork handlers.
pub(super) fn fork_locks(f: &mut impl FnMut(&'static Lock)) {
    for s in &SPARES {
        f(s.lock());
    }
}

/// In a forked child: the spare blocks that a thread of the parent had set aside to
/// give their pages back (`busy`) are free to take again; that thread is not there to
/// finish.
pub(super) fn in_fork_child() {
    for s in &SPARES {
        s.with(|s| s.busy = 0);
    }
}

/// Spare blocks now, over every class (for statistics).
pub(crate) fn spare_blocks() -> u64 {
    ANY.iter()
        .map(|n| u64::from(n.load(Ordering::Relaxed)))
        .sum()
}

impl Heap {
    /// At its thread's exit: moves the depot entries of class `c` below its top refill's
    /// worth (the refill kept is what the heap's next thread takes first, without a
    /// lock: the lowest addresses of the entries sorted last) into the spare blocks, as
    /// far as they have room (those that do not fit stay). Their pages stay as they are: a block
    /// just used is taken warm by the next thread that needs one, and the pages of
    /// spares nobody takes go back after [`DECAY_NS`](crate::release::DECAY_NS)
    /// ([`release_stale_spares`]). Classes below [`SPARE_MIN`] keep theirs.
    ///
    /// Why all beyond a refill, used or not: whatever a heap keeps, only the thread
    /// that next claims it can use, and with many threads alive at once each heap's
    /// stock is stranded while the others cut new blocks. Until 2026-11-29 only the
    /// entries the exiting thread never used were offered (what it used stayed, warm,
    /// for its heap's next thread), and their pages went back at once: with 100
    /// workers alive together, the wave test's arena still grew 15-40 MB from wave 100
    /// to 300 (3-8 MB now), and a thread that left its stock spare for the next one
    /// (before this change kept in its heap) would have had every page fault again.
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
        let len = unsafe { &mut *bin.depot_len.get() };
        let unused = len.saturating_sub(REFILL_BATCH[c] as usize);
        if unused == 0 {
            return;
        }
        let me = (self.index() as u64) << 32;
        let depot = self.depot(c);
        let moved = SPARES[c].with(|s| {
            let take = unused.min(SLOTS - s.len);
            for k in 0..take {
                // SAFETY: entries below the depot's length are committed and
                // initialised, and only this thread touches them. (Those whose pages the
                // depot gave back are not marked: it keeps up to `KEEP` bytes of them,
                // and giving a page back twice costs only the call.)
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
            let n = (s.len - s.busy).min(want);
            s.len -= n;
            s.settled = s.settled.min(s.len);
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
            let p = block_of(c, e);
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

/// The block a spare entry of class `c` names.
fn block_of(c: usize, e: u64) -> *mut u8 {
    let heap = &HEAP[((e & !RELEASED) >> 32) as usize];
    heap.region_start(c)
        .wrapping_add((e & 0xffff_ffff) as usize)
}

/// Gives back the pages of the spare blocks nobody has taken for `age` nanoseconds and
/// whose pages have not gone back yet (with `age` 0, of every spare block), class by
/// class; with `age` above 0, at most once per `age` over all threads. Called when
/// threads start and exit, by live threads' purges and by [`trim`](crate::trim).
pub(crate) fn release_stale_spares(now: u64, age: u64) {
    if age > 0 {
        // Relaxed: a hint; the pool's lock decides what goes back.
        let at = AGED_AT.load(Ordering::Relaxed);
        // Saturating: a caller's `now` read before another thread's pass counts as no
        // time since it.
        if now.saturating_sub(at) < age
            || AGED_AT
                .compare_exchange(at, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
    }
    for (c, any) in ANY.iter().enumerate() {
        if class_size(c) >= SPARE_MIN && any.load(Ordering::Relaxed) != 0 {
            release_stale_class(c, now, age);
        }
    }
}

/// [`release_stale_spares`] for class `c`: the entries that have not moved for `age`
/// are set aside (nobody takes them meanwhile), their pages given back outside the lock
/// a few at a time, then set free again.
fn release_stale_class(c: usize, now: u64, age: u64) {
    let hi = SPARES[c].with(|s| {
        if s.busy != 0 {
            return 0; // another thread is at it
        }
        let hi = if age == 0 {
            s.len
        } else if now.saturating_sub(s.since) >= age {
            s.settled
        } else {
            return 0;
        };
        s.settled = s.len;
        s.since = now;
        s.busy = hi;
        hi
    });
    if hi == 0 {
        return;
    }
    let size = class_size(c);
    let mut k = 0;
    while k < hi {
        let mut chunk = [0u64; 64];
        let n = SPARES[c].with(|s| {
            let n = (hi - k).min(chunk.len());
            chunk[..n].copy_from_slice(&s.at[k..k + n]);
            for e in &mut s.at[k..k + n] {
                *e |= RELEASED;
            }
            n
        });
        // In address order, neighbours together: the page two spare blocks share goes
        // back too.
        let mut blocks = [ptr::null_mut::<u8>(); 64];
        let mut m = 0;
        for &e in chunk[..n].iter().filter(|&&e| e & RELEASED == 0) {
            blocks[m] = block_of(c, e);
            m += 1;
        }
        let blocks = &mut blocks[..m];
        blocks.sort_unstable();
        let mut i = 0;
        while i < m {
            let mut j = i + 1;
            while j < m && blocks[j].addr() == blocks[j - 1].addr() + size {
                j += 1;
            }
            // SAFETY: free blocks of class `c`, one after another in one region, among
            // the spares below `busy`: nobody takes, reads or writes them until `busy`
            // is cleared below.
            unsafe { crate::release::release_pages_within(blocks[i], 0, (j - i) * size) };
            i = j;
        }
        k += n;
    }
    SPARES[c].with(|s| s.busy = 0);
}

/// Spare blocks taken (for statistics).
pub(crate) static TAKEN_SPARES: AtomicU64 = AtomicU64::new(0);
