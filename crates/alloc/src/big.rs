//! Blocks too big for a size class (or too strictly aligned): page-granular mappings
//! with a 16-byte header in front of the block that records the mapping. Mappings of
//! up to [`LARGE_MAX`] ("large") are kept in a small cache when freed and reused;
//! bigger ones ("very large") go back to the system on free. A block that `realloc`
//! shrinks by at least [`TRIM_MIN`] gives the tail of its mapping back at once.
//!
//! A mapping the system refuses to unmap (`munmap` fails when splitting a mapping would
//! exceed the process's mapping limit) is not lost: its pages are released with
//! `MADV_DONTNEED`, it stays counted as mapped, and it is kept for reuse.
//!
//! Blocks up to 4 MiB, at most page-aligned, are slots of the large range instead
//! (`large`), while it has room; so are small requests whose heap's region is full.
//! Small requests neither can serve (no arena or range could be reserved: a limit on
//! the address space) come from the C library's `malloc` with the same header, marked,
//! rather than a page-granular mapping each.

use crate::class::round_up;
use crate::lock::Lock;
use crate::os::{self, PAGE};
use core::cell::UnsafeCell;
use core::ptr;
use core::sync::atomic::{AtomicU64, Ordering};

/// The header in front of every big block: where its mapping starts and how long it is.
const HEADER: usize = 16;
/// Mappings up to this length are cached when freed.
pub(crate) const LARGE_MAX: usize = 1 << 20;
/// Cached mappings at most.
const CACHE_SLOTS: usize = 32;
/// A shrink that frees at least this much of a block's mapping unmaps the freed tail;
/// a smaller one keeps the mapping as it is (no system call).
pub(crate) const TRIM_MIN: usize = 64 << 10;

/// Marks a header's length word: the block came from the C library's `malloc`, and the
/// header's start word is what `malloc` returned.
const FROM_LIBC: usize = 1 << (usize::BITS - 1);

// The counters below are figures for `stats()`, updated with relaxed read-modify-writes
// everywhere: nothing is published through them, and no memory is reached by reading
// one (each RMW alone keeps its count exact).
pub(crate) static LIVE_BLOCKS: AtomicU64 = AtomicU64::new(0);
pub(crate) static LIVE_BYTES: AtomicU64 = AtomicU64::new(0);
pub(crate) static MAPPED_BYTES: AtomicU64 = AtomicU64::new(0);
/// `munmap` calls the system refused.
pub(crate) static UNMAP_FAILURES: AtomicU64 = AtomicU64::new(0);
/// Small blocks served by the C library because the arena could not.
pub(crate) static LIBC_BLOCKS: AtomicU64 = AtomicU64::new(0);
/// Small blocks served by the large range because their heap's region was full.
pub(crate) static SMALL_IN_LARGE: AtomicU64 = AtomicU64::new(0);

struct Cache {
    lock: Lock,
    slots: UnsafeCell<[(usize, *mut u8); CACHE_SLOTS]>,
    /// Mappings the system refused to unmap, linked through their first two words
    /// (length, next).
    kept: UnsafeCell<*mut u8>,
}

// SAFETY: `slots` and `kept` are only touched while `lock` is held.
unsafe impl Sync for Cache {}

static CACHE: Cache = Cache {
    lock: Lock::new(),
    slots: UnsafeCell::new([(0, ptr::null_mut()); CACHE_SLOTS]),
    kept: UnsafeCell::new(ptr::null_mut()),
};

fn with_cache<R>(f: impl FnOnce(&mut [(usize, *mut u8); CACHE_SLOTS]) -> R) -> R {
    let _held = CACHE.lock.lock();
    // SAFETY: the lock is held.
    f(unsafe { &mut *CACHE.slots.get() })
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
    let _held = CACHE.lock.lock();
    // SAFETY: the lock is held; the mapping's first two words are ours to write (a
    // mapping is at least a page).
    unsafe {
        let kept = &mut *CACHE.kept.get();
        start.cast::<usize>().write(len);
        start.cast::<*mut u8>().add(1).write(*kept);
        *kept = start;
    }
}

/// Takes a kept mapping (see [`unmap_or_keep`]) of at least `len` bytes, with its
/// length; `None` when there is none.
fn take_kept(len: usize) -> Option<(usize, *mut u8)> {
    let _held = CACHE.lock.lock();
    // SAFETY: the lock is held; every mapping on the list holds (length, next) in its
    // first two words.
    unsafe {
        let mut link: *mut *mut u8 = CACHE.kept.get();
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

/// This part's lock, held across a fork (see `crate::fork`).
struct CacheLock;

impl crate::fork::LockSet for CacheLock {
    fn each(mut f: impl FnMut(&'static Lock)) {
        f(&CACHE.lock);
    }
}

static FORK: crate::fork::Handlers = crate::fork::Handlers::new::<CacheLock>();

/// Where the block starts in its mapping, at most, for `align`.
const fn max_lead(align: usize) -> usize {
    if align <= PAGE {
        if align > HEADER {
            align
        } else {
            HEADER
        }
    } else {
        align + HEADER
    }
}

/// Writes the header of the block at `p`: the length word (the mapping's length, or the
/// `malloc` size marked [`FROM_LIBC`]) and where its memory starts.
///
/// # Safety
/// `[p - HEADER, p)` lies inside the block's memory, before the block, and `p` is
/// 16-aligned.
unsafe fn write_header(p: *mut u8, len_word: usize, start: *mut u8) {
    // SAFETY: the caller's contract.
    unsafe {
        p.sub(HEADER).cast::<usize>().write(len_word);
        p.sub(HEADER / 2).cast::<*mut u8>().write(start);
    }
}

/// Places a block aligned to `align` in memory starting at `start` (page- or
/// 16-aligned), after room for its header, writes the header, and returns the block.
///
/// # Safety
/// At least `max_lead(align)` bytes, plus the block's size, are usable from `start`.
unsafe fn place(start: *mut u8, align: usize, len_word: usize) -> *mut u8 {
    let lead = (start.addr() + HEADER).next_multiple_of(align.max(HEADER)) - start.addr();
    debug_assert!(lead >= HEADER && lead <= max_lead(align));
    let p = start.wrapping_add(lead);
    // SAFETY: `HEADER <= lead <= max_lead(align)`: the header lies in the caller's
    // memory just before the block; `p` is a multiple of `align.max(HEADER)`.
    unsafe { write_header(p, len_word, start) };
    p
}

/// Allocates `size` bytes at `align` in a mapping of its own. Returns the block and
/// whether its memory is known to be zero; null when the system refuses or the size
/// overflows.
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
    let mut fresh = true;
    let mut start = ptr::null_mut();
    let mut map_len = len;
    // The cache's lock (used here, or when this block is freed) is covered by the fork
    // handlers from its first use on.
    FORK.register();
    if len <= LARGE_MAX && align <= PAGE {
        // A cached mapping no more than a quarter longer than needed.
        if let Some((l, s)) = with_cache(|slots| {
            let i = slots
                .iter()
                .position(|&(l, s)| !s.is_null() && l >= len && l <= len + len / 4)?;
            Some(core::mem::replace(&mut slots[i], (0, ptr::null_mut())))
        }) {
            start = s;
            map_len = l;
            fresh = false;
        }
    }
    if start.is_null() && UNMAP_FAILURES.load(Ordering::Relaxed) > 0 {
        if let Some((l, s)) = take_kept(len) {
            start = s;
            map_len = l;
            fresh = false;
        }
    }
    if start.is_null() {
        start = os::map(len);
        if start.is_null() {
            return (ptr::null_mut(), false);
        }
        MAPPED_BYTES.fetch_add(len as u64, Ordering::Relaxed);
    }
    // SAFETY: the mapping holds `max_lead(align) + size` bytes from `start`.
    let p = unsafe { place(start, align, map_len) };
    LIVE_BLOCKS.fetch_add(1, Ordering::Relaxed);
    LIVE_BYTES.fetch_add(map_len as u64, Ordering::Relaxed);
    (p, fresh)
}

/// The mapping length and start recorded in a big block's header.
///
/// # Safety
/// `p` is a live block returned by [`alloc`].
pub(crate) unsafe fn mapping(p: *mut u8) -> (usize, *mut u8) {
    // SAFETY: the header written by `alloc` sits just before the block.
    unsafe {
        (
            p.sub(HEADER).cast::<usize>().read(),
            p.sub(HEADER / 2).cast::<*mut u8>().read(),
        )
    }
}

/// Allocates a small block (`size <= MAX_SMALL`) that the arena could not serve, from
/// the C library's `malloc`, with the header marked [`FROM_LIBC`]. Null when `malloc`
/// refuses.
pub(crate) fn alloc_libc(size: usize, align: usize) -> *mut u8 {
    // A full region first overflows into the large range's smallest class.
    if let Some((p, _)) = crate::large::alloc(size, align) {
        SMALL_IN_LARGE.fetch_add(1, Ordering::Relaxed);
        return p;
    }
    let Some(total) = size.max(1).checked_add(max_lead(align)) else {
        return ptr::null_mut();
    };
    // SAFETY: `malloc` with a non-zero size; it returns memory aligned to at least 16.
    let start = unsafe { libc::malloc(total) }.cast::<u8>();
    if start.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: `malloc` gave `max_lead(align) + size` bytes from `start`, 16-aligned.
    let p = unsafe { place(start, align, total | FROM_LIBC) };
    LIBC_BLOCKS.fetch_add(1, Ordering::Relaxed);
    LIVE_BLOCKS.fetch_add(1, Ordering::Relaxed);
    LIVE_BYTES.fetch_add(total as u64, Ordering::Relaxed);
    p
}

/// How many bytes the block at `p` may use in place.
///
/// # Safety
/// As for [`mapping`].
pub(crate) unsafe fn usable(p: *mut u8) -> usize {
    if crate::large::holds(p) {
        // SAFETY: a live large block.
        return unsafe { crate::large::usable(p) };
    }
    // SAFETY: the caller's contract.
    let (len, start) = unsafe { mapping(p) };
    (len & !FROM_LIBC) - (p.addr() - start.addr())
}

/// Grows a very large block to `new_size` bytes by moving its mapping (`mremap`)
/// instead of copying it: the pages move as they are, so growing a big buffer copies
/// nothing and faults in only the growth. (A shrink never comes here: the block stays
/// where it is, see [`shrink`].) Returns the block at its new
/// address, the bytes and the block's offset in its page kept; null when the result
/// would not be very large, when the block is aligned beyond a page (a moved mapping
/// keeps only page alignment), or when the system refuses (the block is then unchanged
/// and the caller copies).
///
/// # Safety
/// `p` is a live block returned by [`alloc`] with alignment `align`.
pub(crate) unsafe fn remap(p: *mut u8, align: usize, new_size: usize) -> *mut u8 {
    if crate::large::holds(p) {
        return ptr::null_mut(); // a slot of the large range: the caller copies
    }
    // SAFETY: the caller's contract.
    let (len, start) = unsafe { mapping(p) };
    let lead = p.addr() - start.addr();
    let Some(new_len) = lead.checked_add(new_size).and_then(|n| round_up(n, PAGE)) else {
        return ptr::null_mut();
    };
    if align > PAGE || new_len <= LARGE_MAX || len & FROM_LIBC != 0 {
        return ptr::null_mut();
    }
    // SAFETY: `start, len` is the block's mapping (its header says so), and on success
    // only the returned mapping is used.
    let new_start = unsafe { os::remap(start, len, new_len) };
    if new_start.is_null() {
        return ptr::null_mut();
    }
    let q = new_start.wrapping_add(lead);
    // SAFETY: the header's two words lie in the moved mapping just before the block,
    // as they did in the old one (`lead >= HEADER`).
    unsafe { write_header(q, new_len, new_start) };
    // Both counters move by the same difference; wrapping adds of its two's complement
    // when it shrinks.
    let diff = (new_len as u64).wrapping_sub(len as u64);
    LIVE_BYTES.fetch_add(diff, Ordering::Relaxed);
    MAPPED_BYTES.fetch_add(diff, Ordering::Relaxed);
    q
}

/// Shrinks the big block at `p` in place to `new_size` bytes: when that frees at least
/// [`TRIM_MIN`] of its mapping, the tail past the last page the block still needs is
/// unmapped and its memory goes back to the system. The block's address and alignment
/// do not change. (If the system refuses, which it may do when the tail is the middle
/// of a larger mapping and the process is at its mapping limit, the block keeps its
/// whole mapping.)
///
/// # Safety
/// `p` is a live block returned by [`alloc`], and `new_size <= usable(p)`.
pub(crate) unsafe fn shrink(p: *mut u8, new_size: usize) {
    if crate::large::holds(p) {
        // SAFETY: a live large block; `new_size` fits it.
        unsafe { crate::large::shrink(p, new_size) };
        return;
    }
    // SAFETY: the caller's contract.
    let (len, start) = unsafe { mapping(p) };
    if len & FROM_LIBC != 0 {
        return;
    }
    let lead = p.addr() - start.addr();
    debug_assert!(lead + new_size <= len);
    let Some(new_len) = round_up(lead + new_size.max(1), PAGE) else {
        return;
    };
    if len - new_len < TRIM_MIN {
        return;
    }
    // SAFETY: `[start + new_len, start + len)` is the end of the block's own mapping,
    // page-aligned, past every byte the shrunk block uses.
    if !unsafe { os::unmap(start.wrapping_add(new_len), len - new_len) } {
        UNMAP_FAILURES.fetch_add(1, Ordering::Relaxed);
        return;
    }
    // SAFETY: the header lies before the block, inside the part of the mapping kept.
    unsafe { p.sub(HEADER).cast::<usize>().write(new_len) };
    let freed = (len - new_len) as u64;
    LIVE_BYTES.fetch_sub(freed, Ordering::Relaxed);
    MAPPED_BYTES.fetch_sub(freed, Ordering::Relaxed);
}

/// Whether `p` can be a live block made by [`alloc`], for the C API's `free`, whose
/// caller may pass any address: a large slot's start, or a block whose header reads
/// as one of this module's mappings (the mapping's start and length page multiples,
/// `p` inside it at least a header from its start). The header's page is probed with
/// `mincore` first, so an address whose header would lie in no mapping is refused
/// rather than read. A block the C library's `malloc` served ([`FROM_LIBC`]) is
/// refused too: the C API never makes one (see `capi`).
pub(crate) fn plausible(p: *mut u8) -> bool {
    if crate::large::holds(p) {
        return crate::large::is_slot(p);
    }
    if !p.addr().is_multiple_of(HEADER) || p.addr() < PAGE + HEADER {
        return false;
    }
    let page = (p.addr() - HEADER) & !(PAGE - 1);
    let mut resident = 0u8;
    // SAFETY: `mincore` only writes one byte per page of the range to `resident`, and
    // fails with ENOMEM when the page is not mapped.
    if unsafe { libc::mincore(page as *mut libc::c_void, 1, &mut resident) } != 0 {
        return false;
    }
    // SAFETY: the header's page is mapped (above); the two words lie in it, since `p`
    // is 16-aligned.
    let (len, start) = unsafe { mapping(p) };
    let start = start.addr();
    len & FROM_LIBC == 0
        && len.is_multiple_of(PAGE)
        && start.is_multiple_of(PAGE)
        && p.addr().wrapping_sub(start) >= HEADER
        && p.addr().wrapping_sub(start) < len
}

/// Frees a block made by [`alloc`]: cached if large and there is room, else unmapped.
///
/// # Safety
/// `p` is a live block returned by [`alloc`], and nobody uses it again.
pub(crate) unsafe fn free(p: *mut u8) {
    if crate::large::holds(p) {
        // SAFETY: a live large block, no longer used.
        unsafe { crate::large::free(p) };
        return;
    }
    // SAFETY: the caller's contract.
    let (len, start) = unsafe { mapping(p) };
    LIVE_BLOCKS.fetch_sub(1, Ordering::Relaxed);
    if len & FROM_LIBC != 0 {
        LIVE_BYTES.fetch_sub((len & !FROM_LIBC) as u64, Ordering::Relaxed);
        // SAFETY: `start` is what `malloc` returned for this block, freed once.
        unsafe { libc::free(start.cast()) };
        return;
    }
    LIVE_BYTES.fetch_sub(len as u64, Ordering::Relaxed);
    if len <= LARGE_MAX {
        let kept = with_cache(|slots| match slots.iter().position(|s| s.1.is_null()) {
            Some(i) => {
                slots[i] = (len, start);
                true
            }
            None => false,
        });
        if kept {
            return;
        }
    }
    // SAFETY: exactly the mapping `alloc` made, no longer used.
    unsafe { unmap_or_keep(start, len) };
}
