//! Blocks outside the arena: large slots (`large`), small blocks that spilled
//! (`spill`), and mappings of their own ("big" blocks: above 4 MiB, or aligned beyond
//! a page, or whatever the large range cannot serve). This module serves the last and
//! sends every call about an address outside the arena to the part that owns it.
//!
//! Every big block is recorded: a table of (block, mapping start, mapping length),
//! kept in memory the allocator maps for it, outside every block. A `free` or
//! `malloc_usable_size` of an address outside the arena finds it there or refuses it,
//! reading nothing at the address: exact for any address, where until 2026-11-29 a
//! 16-byte header in front of the block was read (after probing its page with
//! `mincore`) and believed when it looked like a mapping's, so 16 bytes of a program's
//! own buffer that looked like one made `free` unmap the buffer, and a header in a
//! `PROT_NONE` page crashed inside the allocator. Without the header a block starts at
//! its mapping's start (or at the first multiple of its alignment).
//!
//! Freed mappings of up to [`LARGE_MAX`] are kept in a small cache and reused by the
//! next request that fits (at any alignment; until 2026-11-29 only requests aligned to a
//! page or less looked, and the large range serves those first, so the cache filled and
//! stayed resident); [`trim`] gives them back. Bigger mappings go back to the system on
//! free. A block that `realloc` shrinks by at least [`TRIM_MIN`] gives the tail of its
//! mapping back at once, and one that grows moves its mapping (`mremap`).
//!
//! A mapping the system refuses to unmap (`munmap` fails when splitting a mapping would
//! exceed the process's mapping limit) is not lost: its pages are released with
//! `MADV_DONTNEED`, it stays counted as mapped, and it is kept for reuse.

use crate::class::round_up;
use crate::fatal::{debug_check, Message};
use crate::lock::{Lock, Locked};
use crate::os::{self, PAGE};
use core::ptr;
use core::sync::atomic::{AtomicU64, Ordering};

/// Mappings up to this length are cached when freed.
pub(crate) const LARGE_MAX: usize = 1 << 20;
/// Cached mappings at most.
const CACHE_SLOTS: usize = 32;
/// A shrink that frees at least this much of a block's mapping unmaps the freed tail;
/// a smaller one keeps the mapping as it is (no system call).
pub(crate) const TRIM_MIN: usize = 64 << 10;

// The counters below are figures for `stats()`, updated with relaxed read-modify-writes
// everywhere: nothing is published through them, and no memory is reached by reading
// one (each RMW alone keeps its count exact).
pub(crate) static LIVE_BLOCKS: AtomicU64 = AtomicU64::new(0);
pub(crate) static LIVE_BYTES: AtomicU64 = AtomicU64::new(0);
pub(crate) static MAPPED_BYTES: AtomicU64 = AtomicU64::new(0);
/// `munmap` calls the system refused.
pub(crate) static UNMAP_FAILURES: AtomicU64 = AtomicU64::new(0);

// ---- the record of big blocks ------------------------------------------------------

/// One big block: its address (0 for an empty slot), and its mapping.
#[derive(Clone, Copy)]
struct Entry {
    block: usize,
    start: *mut u8,
    len: usize,
}

const EMPTY: Entry = Entry {
    block: 0,
    start: ptr::null_mut(),
    len: 0,
};

/// Live big blocks: open addressing with linear probing, in a mapping of its own that
/// doubles when half full.
struct Record {
    table: *mut Entry,
    cap: usize,
    len: usize,
}

const FIRST_CAP: usize = 256;

impl Record {
    fn home(&self, block: usize) -> usize {
        ((block / PAGE).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 17) & (self.cap - 1)
    }

    fn slot(&self, i: usize) -> *mut Entry {
        self.table.wrapping_add(i)
    }

    /// The slot that holds `block`, if any.
    fn find(&self, block: usize) -> Option<usize> {
        if self.cap == 0 {
            return None;
        }
        let mut i = self.home(block);
        loop {
            // SAFETY: `i < cap`; the table's `cap` entries are mapped and initialised.
            let e = unsafe { self.slot(i).read() };
            if e.block == block {
                return Some(i);
            }
            if e.block == 0 {
                return None;
            }
            i = (i + 1) & (self.cap - 1);
        }
    }

    fn get(&self, block: usize) -> Option<Entry> {
        // SAFETY: a slot index below `cap`.
        self.find(block).map(|i| unsafe { self.slot(i).read() })
    }

    /// Records `e` (its block not recorded yet); false when the table is full and the
    /// system refuses the memory to grow it.
    fn insert(&mut self, e: Entry) -> bool {
        if 2 * (self.len + 1) > self.cap && !self.grow() {
            return false;
        }
        let mut i = self.home(e.block);
        // SAFETY: `i < cap`, as below; at most half the slots are used, so one is empty.
        while unsafe { self.slot(i).read() }.block != 0 {
            i = (i + 1) & (self.cap - 1);
        }
        // SAFETY: as above.
        unsafe { self.slot(i).write(e) };
        self.len += 1;
        true
    }

    /// Removes `block`'s entry and returns it.
    fn remove(&mut self, block: usize) -> Option<Entry> {
        let mut hole = self.find(block)?;
        // SAFETY: slot indices below `cap`, here and below.
        let gone = unsafe { self.slot(hole).read() };
        // Backward shift: later entries of the run that may sit in the hole move up.
        let mut j = hole;
        loop {
            j = (j + 1) & (self.cap - 1);
            // SAFETY: as above.
            let e = unsafe { self.slot(j).read() };
            if e.block == 0 {
                break;
            }
            let k = self.home(e.block);
            // `e` may move to the hole if its home is not cyclically in (hole, j].
            let stays = if hole <= j {
                hole < k && k <= j
            } else {
                hole < k || k <= j
            };
            if !stays {
                // SAFETY: as above.
                unsafe { self.slot(hole).write(e) };
                hole = j;
            }
        }
        // SAFETY: as above.
        unsafe { self.slot(hole).write(EMPTY) };
        self.len -= 1;
        Some(gone)
    }

    /// Doubles the table (or makes the first one); false when the system refuses.
    fn grow(&mut self) -> bool {
        let cap = if self.cap == 0 {
            FIRST_CAP
        } else {
            2 * self.cap
        };
        let bytes = cap * core::mem::size_of::<Entry>();
        let table = os::map(bytes).cast::<Entry>();
        if table.is_null() {
            return false;
        }
        // The new mapping reads as zeros: every slot empty (block 0, start null).
        let old = core::mem::replace(self, Record { table, cap, len: 0 });
        for i in 0..old.cap {
            // SAFETY: the old table's entries below its `cap`.
            let e = unsafe { old.slot(i).read() };
            if e.block != 0 {
                let inserted = self.insert(e);
                debug_check!(inserted, "a grown record holds the old one's entries");
            }
        }
        if old.cap > 0 {
            // SAFETY: the old table is a whole mapping of ours that nothing uses now.
            unsafe { os::unmap(old.table.cast(), old.cap * core::mem::size_of::<Entry>()) };
        }
        true
    }
}

struct State {
    /// Freed mappings kept for reuse: (length, start), or (0, null).
    cache: [(usize, *mut u8); CACHE_SLOTS],
    /// Mappings the system refused to unmap, linked through their first two words
    /// (length, next).
    kept: *mut u8,
    record: Record,
}

// SAFETY: the raw pointers are mappings of this module's own, reached only under the
// lock of `BIG`; no thread keeps one across calls.
unsafe impl Send for State {}

static BIG: Locked<State> = Locked::new(State {
    cache: [(0, ptr::null_mut()); CACHE_SLOTS],
    kept: ptr::null_mut(),
    record: Record {
        table: ptr::null_mut(),
        cap: 0,
        len: 0,
    },
});

/// This part's lock, for the fork handlers (see `crate::fork`).
pub(crate) fn fork_locks(f: &mut impl FnMut(&'static Lock)) {
    f(BIG.lock());
}

/// Unmaps a whole mapping, or, if the system refuses, releases its pages and keeps it
/// on the list of mappings to reuse (still counted as mapped).
///
/// # Safety
/// `start, len` is exactly one mapping made by `os::map`, page-aligned, that nobody
/// uses again.
unsafe fn unmap_or_keep(start: *mut u8, len: usize) {
    // SAFETY: the caller's contract.
    if unsafe { os::unmap(start, len) } {
        MAPPED_BYTES.fetch_sub(len as u64, Ordering::Relaxed);
        return;
    }
    UNMAP_FAILURES.fetch_add(1, Ordering::Relaxed);
    // SAFETY: the mapping is ours and unused; releasing its pages keeps it mapped.
    unsafe { os::release(start, len) };
    BIG.with(|s| {
        // SAFETY: the mapping's first two words are ours to write (a mapping is at least
        // a page).
        unsafe {
            start.cast::<usize>().write(len);
            start.cast::<*mut u8>().add(1).write(s.kept);
        }
        s.kept = start;
    });
}

/// Takes a kept mapping (see [`unmap_or_keep`]) of at least `len` bytes, with its
/// length; `None` when there is none. Called with the lock held.
fn take_kept(s: &mut State, len: usize) -> Option<(usize, *mut u8)> {
    // SAFETY: every mapping on the list holds (length, next) in its first two words.
    unsafe {
        let mut link: *mut *mut u8 = &mut s.kept;
        while !(*link).is_null() {
            let m = *link;
            let l = m.cast::<usize>().read();
            let next = m.cast::<*mut u8>().add(1);
            if l >= len {
                *link = next.read();
                return Some((l, m));
            }
            link = next;
        }
    }
    None
}

/// Where a block aligned to `align` starts in its mapping, at most.
const fn max_lead(align: usize) -> usize {
    align.saturating_sub(PAGE)
}

/// Allocates `size` bytes at `align`: a large slot if the large range serves it, else a
/// mapping of its own. Returns the block and whether its memory is known to be zero;
/// null when the system refuses or the size overflows.
pub(crate) fn alloc(size: usize, align: usize) -> (*mut u8, bool) {
    // Up to 4 MiB, a slot of the large range (`large`), if it has room.
    if let Some(block) = crate::large::alloc(size, align) {
        return block;
    }
    let Some(len) = size
        .max(1)
        .checked_add(max_lead(align))
        .and_then(|n| round_up(n, PAGE))
    else {
        return (ptr::null_mut(), false);
    };
    let reused = BIG.with(|s| {
        if len <= LARGE_MAX {
            // A cached mapping no more than a quarter longer than needed.
            if let Some(i) = s
                .cache
                .iter()
                .position(|&(l, m)| !m.is_null() && l >= len && l <= len + len / 4)
            {
                return Some(core::mem::replace(&mut s.cache[i], (0, ptr::null_mut())));
            }
        }
        if UNMAP_FAILURES.load(Ordering::Relaxed) > 0 {
            return take_kept(s, len);
        }
        None
    });
    let (map_len, start, fresh) = match reused {
        Some((l, m)) => (l, m, false),
        None => {
            let m = os::map(len);
            if m.is_null() {
                return (ptr::null_mut(), false);
            }
            MAPPED_BYTES.fetch_add(len as u64, Ordering::Relaxed);
            (len, m, true)
        }
    };
    // A mapping starts on a page: the block at the first multiple of its alignment.
    let p = start.wrapping_add(start.addr().wrapping_neg() & (align.max(PAGE) - 1));
    let recorded = BIG.with(|s| {
        s.record.insert(Entry {
            block: p.addr(),
            start,
            len: map_len,
        })
    });
    if !recorded {
        // No memory for the record: the block cannot be found again, so it is not
        // handed out.
        // SAFETY: the mapping is ours, whole, and unused.
        unsafe { unmap_or_keep(start, map_len) };
        return (ptr::null_mut(), false);
    }
    LIVE_BLOCKS.fetch_add(1, Ordering::Relaxed);
    LIVE_BYTES.fetch_add(map_len as u64, Ordering::Relaxed);
    (p, fresh)
}

/// A small request that its heap's region or the arena could not serve: a block of its
/// class outside the arena (`spill`) when the class's alignment is all it needs, else a
/// mapping of its own. The biggest class (256 KiB, three to a chunk of 1 MiB) takes a
/// slot of the large range's smallest class first. Null when the system refuses.
pub(crate) fn alloc_small_elsewhere(c: usize, size: usize, align: usize) -> *mut u8 {
    if crate::class::class_size(c) >= crate::spill::CHUNK / 4 {
        if let Some((p, _)) = crate::large::alloc(size, align) {
            return p;
        }
    }
    if crate::spill::serves(c, align) {
        let p = crate::spill::alloc(c);
        if !p.is_null() {
            return p;
        }
    }
    alloc(size, align).0
}

/// Whether `p`, an address outside the arena, is a block of this allocator: a large
/// slot's start, a block in a recorded chunk, or a recorded mapping. Reads nothing at
/// the address.
pub(crate) fn is_block(p: *mut u8) -> bool {
    if crate::large::holds(p) {
        return crate::large::is_slot(p);
    }
    crate::spill::find(p).is_some() || BIG.with(|s| s.record.find(p.addr()).is_some())
}

/// The record of the big block at `p`; a live block that is not recorded is a bug of
/// the caller (a Rust caller's contract), which stops the process.
fn entry(p: *mut u8, what: &str) -> Entry {
    match BIG.with(|s| s.record.get(p.addr())) {
        Some(e) => e,
        None => not_a_block(p, what),
    }
}

#[cold]
#[inline(never)]
fn not_a_block(p: *mut u8, what: &str) -> ! {
    Message::new()
        .text(what)
        .text("(")
        .hex(p.addr())
        .text("): not a block of this allocator (freed twice, never allocated, or another allocator's); aborting")
        .abort()
}

/// How many bytes the block at `p` (outside the arena) may use in place.
///
/// # Safety
/// `p` is a live block outside the arena.
pub(crate) unsafe fn usable(p: *mut u8) -> usize {
    if crate::large::holds(p) {
        // SAFETY: a live large block.
        return unsafe { crate::large::usable(p) };
    }
    if let Some(c) = crate::spill::find(p) {
        return crate::class::class_size(c);
    }
    let e = entry(p, "malloc_usable_size");
    e.len - (p.addr() - e.start.addr())
}

/// Grows a very large block to `new_size` bytes by moving its mapping (`mremap`)
/// instead of copying it: the pages move as they are, so growing a big buffer copies
/// nothing and faults in only the growth. (A shrink never comes here: the block stays
/// where it is, see [`shrink`].) Returns the block at its new address, the bytes and
/// the block's offset in its page kept; null when the block is not a mapping, when the
/// result would not be very large, when the block is aligned beyond a page (a moved
/// mapping keeps only page alignment), or when the system refuses (the block is then
/// unchanged and the caller copies).
///
/// # Safety
/// `p` is a live block outside the arena with alignment `align`.
pub(crate) unsafe fn remap(p: *mut u8, align: usize, new_size: usize) -> *mut u8 {
    if crate::large::holds(p) || crate::spill::find(p).is_some() {
        return ptr::null_mut(); // the caller copies
    }
    let e = entry(p, "realloc");
    let lead = p.addr() - e.start.addr();
    let Some(new_len) = lead.checked_add(new_size).and_then(|n| round_up(n, PAGE)) else {
        return ptr::null_mut();
    };
    if align > PAGE || new_len <= LARGE_MAX {
        return ptr::null_mut();
    }
    // SAFETY: `start, len` is the block's mapping (its record says so), and on success
    // only the returned mapping is used.
    let new_start = unsafe { os::remap(e.start, e.len, new_len) };
    if new_start.is_null() {
        return ptr::null_mut();
    }
    let q = new_start.wrapping_add(lead);
    BIG.with(|s| {
        s.record.remove(p.addr());
        // One entry out, one in: the table does not grow.
        let recorded = s.record.insert(Entry {
            block: q.addr(),
            start: new_start,
            len: new_len,
        });
        debug_check!(recorded, "a moved block's record fits where it was");
    });
    // Both counters move by the same difference; wrapping adds of its two's complement
    // when it shrinks.
    let diff = (new_len as u64).wrapping_sub(e.len as u64);
    LIVE_BYTES.fetch_add(diff, Ordering::Relaxed);
    MAPPED_BYTES.fetch_add(diff, Ordering::Relaxed);
    q
}

/// Shrinks the block at `p` (outside the arena) in place to `new_size` bytes: for a
/// mapping, when that frees at least [`TRIM_MIN`] of it, the tail past the last page the
/// block still needs is unmapped and its memory goes back to the system. The block's
/// address and alignment do not change. (If the system refuses, which it may do when
/// the tail is the middle of a larger mapping and the process is at its mapping limit,
/// the block keeps its whole mapping.)
///
/// # Safety
/// `p` is a live block outside the arena, and `new_size <= usable(p)`.
pub(crate) unsafe fn shrink(p: *mut u8, new_size: usize) {
    if crate::large::holds(p) {
        // SAFETY: a live large block; `new_size` fits it.
        unsafe { crate::large::shrink(p, new_size) };
        return;
    }
    if crate::spill::find(p).is_some() {
        return;
    }
    let e = entry(p, "realloc");
    let lead = p.addr() - e.start.addr();
    debug_check!(
        lead + new_size <= e.len,
        "a shrink keeps within the mapping"
    );
    let Some(new_len) = round_up(lead + new_size.max(1), PAGE) else {
        return;
    };
    if e.len - new_len < TRIM_MIN {
        return;
    }
    // SAFETY: `[start + new_len, start + len)` is the end of the block's own mapping,
    // page-aligned, past every byte the shrunk block uses.
    if !unsafe { os::unmap(e.start.wrapping_add(new_len), e.len - new_len) } {
        UNMAP_FAILURES.fetch_add(1, Ordering::Relaxed);
        return;
    }
    BIG.with(|s| {
        if let Some(i) = s.record.find(p.addr()) {
            // SAFETY: a slot of the record's table.
            unsafe { (*s.record.slot(i)).len = new_len };
        }
    });
    let freed = (e.len - new_len) as u64;
    LIVE_BYTES.fetch_sub(freed, Ordering::Relaxed);
    MAPPED_BYTES.fetch_sub(freed, Ordering::Relaxed);
}

/// Frees the block at `p`, outside the arena: a large slot or a spilled block goes back
/// to its part; a mapping is cached if it is small enough and there is room, else
/// unmapped. An address that is none of these (a mapping freed twice, or never made)
/// stops the process with a message.
///
/// # Safety
/// `p` is a block outside the arena that nobody uses again.
pub(crate) unsafe fn free(p: *mut u8) {
    if crate::large::holds(p) {
        // SAFETY: a large block, no longer used.
        unsafe { crate::large::free(p) };
        return;
    }
    if let Some(c) = crate::spill::find(p) {
        // SAFETY: a spilled block of class `c`, no longer used.
        unsafe { crate::spill::free(p, c) };
        return;
    }
    let cached = BIG.with(|s| {
        let e = s.record.remove(p.addr())?;
        if e.len <= LARGE_MAX {
            if let Some(slot) = s.cache.iter_mut().find(|(_, m)| m.is_null()) {
                *slot = (e.len, e.start);
                return Some((e, true));
            }
        }
        Some((e, false))
    });
    let Some((e, cached)) = cached else {
        not_a_block(p, "free");
    };
    LIVE_BLOCKS.fetch_sub(1, Ordering::Relaxed);
    LIVE_BYTES.fetch_sub(e.len as u64, Ordering::Relaxed);
    if !cached {
        // SAFETY: exactly the mapping `alloc` made (its record), no longer used.
        unsafe { unmap_or_keep(e.start, e.len) };
    }
}

/// Gives the cached mappings back to the system (`trim`, `malloc_trim`); returns their
/// bytes.
pub(crate) fn trim() -> usize {
    let taken = BIG.with(|s| core::mem::replace(&mut s.cache, [(0, ptr::null_mut()); CACHE_SLOTS]));
    let mut bytes = 0;
    for (len, start) in taken {
        if !start.is_null() {
            // SAFETY: a whole mapping of ours that the cache held and nobody uses.
            unsafe { unmap_or_keep(start, len) };
            bytes += len;
        }
    }
    bytes
}

/// Big blocks recorded now (for tests).
#[cfg(test)]
fn recorded() -> usize {
    BIG.with(|s| s.record.len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "maps memory")]
    fn the_record_finds_every_live_block_and_nothing_else() {
        // Other tests of this binary make and free big blocks at the same time, so the
        // record's length is not compared; each block is looked up instead.
        // More than the first table holds, so it grows twice; sizes past the large
        // range, and alignments beyond a page.
        let blocks: Vec<(*mut u8, usize)> = (0..600)
            .map(|k| {
                let align = if k % 3 == 0 { 1 << (13 + k % 4) } else { 16 };
                let size = (5 << 20) + k * 4096;
                let (p, _) = alloc(size, align);
                assert!(!p.is_null());
                assert_eq!(p.addr() % align, 0);
                // SAFETY: a live block of `size` bytes.
                assert!(unsafe { usable(p) } >= size);
                (p, size)
            })
            .collect();
        assert!(recorded() >= blocks.len());
        for &(p, _) in &blocks {
            assert!(is_block(p));
            assert!(!is_block(p.wrapping_add(PAGE)), "an address inside a block");
        }
        let local = 0u64;
        assert!(!is_block((&raw const local).cast_mut().cast()));
        // Free every other one, then the rest: each removal keeps the others findable.
        for &(p, _) in blocks.iter().step_by(2) {
            // SAFETY: live blocks, freed once.
            unsafe { free(p) };
            assert!(!is_block(p));
        }
        for &(p, _) in blocks.iter().skip(1).step_by(2) {
            assert!(is_block(p));
            // SAFETY: as above.
            unsafe { free(p) };
            assert!(!is_block(p));
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "maps memory")]
    fn a_freed_aligned_mapping_is_reused_and_trim_gives_the_cache_back() {
        let align = 8192;
        let size = 900 << 10;
        let (p, _) = alloc(size, align);
        assert!(!p.is_null() && p.addr() % align == 0);
        // SAFETY: a live block, freed once.
        unsafe { free(p) };
        let (q, fresh) = alloc(size, align);
        assert!(!fresh, "the cached mapping was not reused");
        assert_eq!(q.addr() % align, 0);
        // SAFETY: as above.
        unsafe { free(q) };
        assert!(trim() >= size);
        let (r, fresh) = alloc(size, align);
        assert!(fresh, "trim left a cached mapping");
        // SAFETY: as above.
        unsafe { free(r) };
    }
}
