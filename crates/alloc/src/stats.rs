//! Allocation statistics, per heap and for the process, readable at any time.

use crate::big;
use crate::class::{class_size, HEAPS, NUM_CLASSES};
use crate::heap::{self, HEAP, UNBATCHED_REMOTE};
use crate::release;
use crate::spill;
use core::sync::atomic::Ordering;

/// How the allocator's arena was reserved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArenaMode {
    /// Not yet: nothing has allocated through the allocator.
    #[default]
    NotReserved,
    /// The full 16 TiB arena: 127 heaps of 4 GiB per size class.
    Full,
    /// A smaller arena, because the system refused the full one (a limit on the address
    /// space, `ulimit -v`, or a kernel with a small one). Its size, regions and heaps
    /// are in [`Stats`]. The fast paths are the full arena's.
    Reduced,
    /// No arena could be reserved: small requests come from chunks outside it (see
    /// [`Stats::spill_blocks_live`]).
    Unavailable,
}

/// Process totals. Taken while other threads allocate, the figures are each read at a
/// slightly different moment; once they stop, they are exact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// How the arena was reserved.
    pub arena_mode: ArenaMode,
    /// Bytes of address space the arena reserves (0 without one).
    pub arena_bytes: u64,
    /// Bytes of one heap's region for one size class.
    pub region_bytes: u64,
    /// Heaps in the arena, the shared heap 0 included.
    pub heaps: usize,
    /// Heaps a thread owns now.
    pub heaps_owned: usize,
    /// Heaps ever claimed by a thread.
    pub heaps_used: usize,
    /// Small blocks (size classes) allocated and not yet freed.
    pub small_blocks_live: u64,
    /// Their bytes, counted at their class size.
    pub small_bytes_live: u64,
    /// Blocks of the large range and big blocks (mappings of their own) allocated and
    /// not yet freed.
    pub big_blocks_live: u64,
    /// Their bytes, counted at their slot's or mapping's length.
    pub big_bytes_live: u64,
    /// Blocks freed by a thread other than their heap's owner.
    pub remote_frees: u64,
    /// Of those, blocks their owner has taken back and handed out again.
    pub remote_frees_reclaimed: u64,
    /// Arena memory made usable (it is backed by physical memory only once touched).
    pub committed_bytes: u64,
    /// Everything mapped: committed arena memory plus big blocks' mappings (cached
    /// ones included, and those the system refused to unmap) and the chunks of small
    /// blocks outside the arena.
    pub mapped_bytes: u64,
    /// `munmap` calls the system refused (at the process's mapping limit): the mapping
    /// was kept, its pages released, and it is reused.
    pub unmap_failures: u64,
    /// Small blocks outside the arena allocated and not yet freed: requests the arena
    /// could not serve (their heap's region of the class was full, or no arena could be
    /// reserved under a limit on the address space), served from chunks of 1 MiB cut
    /// into blocks of one class.
    pub spill_blocks_live: u64,
    /// Their bytes, counted at their class size.
    pub spill_bytes_live: u64,
    /// Those chunks, ever mapped (they stay mapped, their free blocks reused).
    pub spill_chunks: u64,
    /// Times a heap that ran out of a class took a batch of the free blocks of a heap
    /// nobody owns (its thread exited), rather than cut new ones.
    pub orphan_borrows: u64,
    /// Times a heap that ran out of a class took the blocks other threads had returned
    /// to another heap (owned or not) and its thread had not taken yet, rather than cut
    /// new ones.
    pub returned_taken: u64,
    /// Free blocks of the classes of 8 KiB and more that exited threads left beyond a
    /// refill, offered to every heap, now (their pages go back once nobody has taken
    /// them for a second).
    pub spare_blocks: u64,
    /// Spare blocks heaps took before cutting new ones.
    pub spare_taken: u64,
    /// Blocks so taken from the depots of heaps nobody owns (those taken from their
    /// remote stacks are counted as remote frees), and blocks moved from a depot to the
    /// spare blocks, ever.
    pub orphan_blocks_lent: u64,
    /// Arena memory given back to the system with `MADV_DONTNEED`, ever: at thread
    /// exit, from heaps left idle, by live threads' purges, by [`trim`](crate::trim), and from big blocks freed
    /// to exited heaps (pages only free blocks cover; a page may be counted again when
    /// a later release covers it while it is still given back). It stays committed and
    /// reads as zeros when used again. Large blocks' slots are not counted here. See
    /// the crate's docs on when memory goes back.
    pub released_bytes: u64,
    /// The `madvise` calls that gave it back, ever.
    pub release_calls: u64,
    /// Times a live thread looked over its heap's free stock and gave back what it had
    /// not used since it last looked (once per purge delay at most per heap, four times a
    /// second by default, on its slow paths; never with purging off:
    /// [`set_purge_delay`](crate::set_purge_delay)).
    pub purges: u64,
    /// Frees of a thread's own small blocks that the fast path did not take, ever: the
    /// magazine was full (one free in 32 or so when a thread frees many in a row).
    /// In earlier versions every free in a reduced arena was one.
    pub own_frees_slow: u64,
    /// Small blocks cut from never-used memory, ever.
    pub blocks_carved: u64,
    /// Allocations that found their thread's magazine for the class empty and took the
    /// slow path (a refill from the depot, returned blocks, or new memory), ever.
    pub magazine_refills: u64,
    /// Frees that found the magazine full and moved half of it to the depot, ever.
    pub magazine_spills: u64,
    /// Blocks moved from magazines to depots, ever.
    pub depot_blocks_in: u64,
    /// Blocks moved from depots to magazines, ever.
    pub depot_blocks_out: u64,
}

/// One heap's figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeapStats {
    /// The heap's number (0 is the shared heap).
    pub index: usize,
    /// Whether a thread owns it now (for heap 0: whether its lock is held).
    pub owned: bool,
    /// How many threads have owned it.
    pub owners: u64,
    /// Blocks cut from its regions so far: its whole stock of small blocks.
    pub blocks_carved: u64,
    /// Its blocks not free in it (not in its magazines or depots). Blocks
    /// other threads have freed but the heap has not reclaimed yet still count.
    pub blocks_live: u64,
    /// Their bytes, at class size.
    pub bytes_live: u64,
    /// Blocks of other heaps its thread has freed (sent to their owners).
    pub remote_frees_sent: u64,
    /// Blocks freed by other threads that it took back and handed out: its own, and
    /// those it borrowed from heaps nobody owns.
    pub remote_frees_reclaimed: u64,
    /// Arena memory committed for it.
    pub committed_bytes: u64,
}

/// The figures of heap `index`, or `None` if there is no such heap (there are 128).
///
/// ```
/// let h = handoff_alloc::heap_stats(0).unwrap();
/// assert_eq!(h.index, 0);
/// assert!(handoff_alloc::heap_stats(1000).is_none());
/// ```
pub fn heap_stats(index: usize) -> Option<HeapStats> {
    let h = HEAP.get(index)?;
    let mut s = HeapStats {
        index,
        owned: h.is_owned(),
        owners: h.owners.load(Ordering::Relaxed),
        committed_bytes: h.committed.load(Ordering::Relaxed),
        ..HeapStats::default()
    };
    for (c, (bin, mag)) in h.bins.iter().zip(&h.mags).take(NUM_CLASSES).enumerate() {
        let carved = bin.carved.load(Ordering::Relaxed);
        let free =
            bin.listed.load(Ordering::Relaxed) + u64::from(mag.count.load(Ordering::Relaxed));
        let live = carved.saturating_sub(free);
        s.blocks_carved += carved;
        s.blocks_live += live;
        s.bytes_live += live * class_size(c) as u64;
        s.remote_frees_sent += bin.remote_sent.load(Ordering::Relaxed);
        s.remote_frees_reclaimed += bin.reclaimed.load(Ordering::Relaxed);
    }
    Some(s)
}

/// Process totals.
///
/// ```
/// let before = handoff_alloc::stats();
/// assert!(before.mapped_bytes >= before.committed_bytes);
/// ```
pub fn stats() -> Stats {
    let mut s = Stats::default();
    if heap::arena_ready() {
        let geo = heap::geometry();
        s.arena_mode = if heap::geometry_index() == 0 {
            ArenaMode::Full
        } else {
            ArenaMode::Reduced
        };
        s.arena_bytes = geo.arena_size() as u64;
        s.region_bytes = geo.region_size() as u64;
        s.heaps = geo.heaps;
    } else if heap::arena_failed() {
        s.arena_mode = ArenaMode::Unavailable;
    }
    s.unmap_failures = big::UNMAP_FAILURES.load(Ordering::Relaxed);
    s.spill_blocks_live = spill::LIVE.load(Ordering::Relaxed);
    s.spill_bytes_live = spill::LIVE_BYTES.load(Ordering::Relaxed);
    s.spill_chunks = spill::CHUNKS.load(Ordering::Relaxed);
    s.orphan_borrows = heap::BORROWS.load(Ordering::Relaxed);
    s.returned_taken = heap::TAKEN_RETURNED.load(Ordering::Relaxed);
    s.spare_blocks = heap::spare_blocks();
    s.spare_taken = heap::TAKEN_SPARES.load(Ordering::Relaxed);
    s.released_bytes = release::RELEASED_BYTES.load(Ordering::Relaxed);
    s.release_calls = release::RELEASE_CALLS.load(Ordering::Relaxed);
    s.purges = release::PURGES.load(Ordering::Relaxed);
    let mut live = [0i64; NUM_CLASSES];
    for (i, h) in HEAP.iter().enumerate().take(HEAPS) {
        let owners = h.owners.load(Ordering::Relaxed);
        if i > 0 && h.is_owned() {
            s.heaps_owned += 1;
        }
        if owners > 0 {
            s.heaps_used += 1;
        }
        s.committed_bytes += h.committed.load(Ordering::Relaxed);
        s.own_frees_slow += h.own_frees_slow.load(Ordering::Relaxed);
        for (c, (bin, mag)) in h.bins.iter().zip(&h.mags).take(NUM_CLASSES).enumerate() {
            let sent = bin.remote_sent.load(Ordering::Relaxed);
            let reclaimed = bin.reclaimed.load(Ordering::Relaxed);
            let lent = bin.lent.load(Ordering::Relaxed);
            s.orphan_blocks_lent += lent;
            // Blocks freed remotely (or lent from a depot) and not yet reclaimed are
            // free, though no heap lists them.
            live[c] += bin.carved.load(Ordering::Relaxed) as i64
                - bin.listed.load(Ordering::Relaxed) as i64
                - i64::from(mag.count.load(Ordering::Relaxed))
                - sent as i64
                - lent as i64
                + reclaimed as i64;
            s.remote_frees += sent;
            s.remote_frees_reclaimed += reclaimed;
            s.blocks_carved += bin.carved.load(Ordering::Relaxed);
            s.magazine_refills += bin.refills.load(Ordering::Relaxed);
            s.magazine_spills += bin.spills.load(Ordering::Relaxed);
            s.depot_blocks_in += bin.to_depot.load(Ordering::Relaxed);
            s.depot_blocks_out += bin.from_depot.load(Ordering::Relaxed);
        }
    }
    for (c, n) in live.iter().enumerate() {
        let unbatched = UNBATCHED_REMOTE[c].load(Ordering::Relaxed);
        s.remote_frees += unbatched;
        let n = (*n - unbatched as i64).max(0) as u64;
        s.small_blocks_live += n;
        s.small_bytes_live += n * class_size(c) as u64;
    }
    s.big_blocks_live = big::LIVE_BLOCKS.load(Ordering::Relaxed);
    s.big_bytes_live = big::LIVE_BYTES.load(Ordering::Relaxed);
    s.mapped_bytes = s.committed_bytes
        + big::MAPPED_BYTES.load(Ordering::Relaxed)
        + s.spill_chunks * spill::CHUNK as u64;
    s
}
