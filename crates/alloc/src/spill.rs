//! Small blocks outside the arena. When a heap's region of a class is full, or no arena
//! could be reserved at all (a limit on the address space below about 512 MiB, see
//! `class::GEOMETRIES`), a small request comes from here: chunks of 1 MiB, committed
//! one at a time as they are needed (from areas of 64 MiB reserved at a time, so that
//! neighbouring chunks are one mapping for the kernel; of one chunk when the system
//! refuses an area), each cut into blocks of one size class, with a free list per
//! class behind one lock. A block costs its class's size, as in the arena, and the
//! chunks cost the address space they use, so a program under a tight limit gets
//! about as far as with the C library's allocator.
//!
//! Until 2026-11-29 such a request took a slot of the large range's smallest class
//! (320 KiB of address space, a page resident, per block) or, without that range, a
//! mapping of its own (the C interface) or a block of the C library's `malloc` (the
//! Rust one): 200 000 blocks of 64 B under `ulimit -v 16000000` kept +545 MB resident at
//! 2-2.7 us a `malloc`, and under `ulimit -v 400000` `malloc` failed after 2 MiB of
//! 32-byte blocks.
//!
//! Every chunk is recorded (its address and class, in a table of fixed size that only
//! grows), so a `free` knows whether an address is a block here without reading it: in
//! a recorded chunk, at [`HEAD`] plus a multiple of its class's size (a block position
//! not handed out yet passes too). Blocks are aligned as
//! the arena's blocks of the class are ([`HEAD`] is the arena's region head), so any
//! request the class serves at an alignment up to 128 bytes fits; over-aligned requests
//! beyond that are mappings of their own. Free blocks are never given back to the
//! system (their chunk stays mapped and they are reused), as the arena's small blocks.

use crate::class::{class_align, class_size, NUM_CLASSES, REGION_HEAD};
use crate::lock::{Lock, Locked};
use crate::os;
use crate::remote::{next, set_next, Link};
use core::ptr;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Bytes of one chunk, and its alignment.
pub(crate) const CHUNK: usize = 1 << 20;
/// Where a chunk's first block starts: the arena's region head, so the blocks of each
/// class have the class's alignment in the arena.
const HEAD: usize = REGION_HEAD;
/// Address space reserved at a time for chunks.
const AREA: usize = 64 << 20;
/// Slots of the chunk table; at most half are used, so at most 4 GiB of chunks.
const TABLE: usize = 8192;
const MAX_CHUNKS: usize = TABLE / 2;

// Three blocks of the biggest class fit a chunk; a table entry keeps the class in the
// chunk's low bits.
const _: () = assert!(HEAD + 3 * crate::class::MAX_SMALL <= CHUNK);
const _: () = assert!(NUM_CLASSES < CHUNK);

/// The chunks: `chunk address | (class + 1)` per used slot, 0 for an empty one,
/// open addressing with linear probing. Written only under [`LOCK`], and never
/// cleared, so a lookup needs no lock: it finds an entry or an empty slot.
static TABLE_SLOTS: [AtomicUsize; TABLE] = [const { AtomicUsize::new(0) }; TABLE];

/// Chunks mapped, ever.
pub(crate) static CHUNKS: AtomicU64 = AtomicU64::new(0);
/// Blocks allocated here and not yet freed.
pub(crate) static LIVE: AtomicU64 = AtomicU64::new(0);
/// Their bytes, at their class's size.
pub(crate) static LIVE_BYTES: AtomicU64 = AtomicU64::new(0);

struct State {
    /// Each class's free blocks, linked through their first words.
    free: [Link; NUM_CLASSES],
    /// Each class's next never-used block in its newest chunk, and that chunk's end.
    bump: [*mut u8; NUM_CLASSES],
    end: [*mut u8; NUM_CLASSES],
    /// The next chunk of the area reserved last, and the area's end.
    area_next: *mut u8,
    area_end: *mut u8,
}

// SAFETY: the raw pointers are blocks and chunks of this module's own, reached only
// under the lock of `SPILL`.
unsafe impl Send for State {}

static SPILL: Locked<State> = Locked::new(State {
    free: [ptr::null_mut(); NUM_CLASSES],
    bump: [ptr::null_mut(); NUM_CLASSES],
    end: [ptr::null_mut(); NUM_CLASSES],
    area_next: ptr::null_mut(),
    area_end: ptr::null_mut(),
});

/// This part's lock, for the fork handlers (see `crate::fork`).
pub(crate) fn fork_locks(f: &mut impl FnMut(&'static Lock)) {
    f(SPILL.lock());
}

/// The table slot a chunk's search starts at.
fn home(chunk: usize) -> usize {
    ((chunk / CHUNK).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (usize::BITS - TABLE.trailing_zeros()))
        & (TABLE - 1)
}

/// The class of the chunk at `chunk`, if it is one of ours.
fn chunk_class(chunk: usize) -> Option<usize> {
    let mut i = home(chunk);
    loop {
        // Acquire: pairs with the insertion's release (the entry is whole when seen).
        let e = TABLE_SLOTS[i].load(Ordering::Acquire);
        if e == 0 {
            return None;
        }
        if e & !(CHUNK - 1) == chunk {
            return Some((e & (CHUNK - 1)) - 1);
        }
        i = (i + 1) & (TABLE - 1);
    }
}

/// The class of `p` if it is where a block starts in one of the recorded chunks, else
/// `None`, for any address, read without touching the address. (A position of its
/// chunk no block was cut from yet passes.)
pub(crate) fn find(p: *const u8) -> Option<usize> {
    let chunk = p.addr() & !(CHUNK - 1);
    if chunk == 0 || CHUNKS.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let c = chunk_class(chunk)?;
    let off = p.addr() - chunk;
    let size = class_size(c);
    (off >= HEAD && (off - HEAD).is_multiple_of(size) && off - HEAD + size <= CHUNK).then_some(c)
}

/// Whether class `c` can serve a request aligned to `align` from here.
pub(crate) fn serves(c: usize, align: usize) -> bool {
    class_align(c) >= align
}

/// A block of class `c` (whose alignment is all the caller needs, see [`serves`]); null
/// when the system refuses a chunk or the chunk table is full.
pub(crate) fn alloc(c: usize) -> *mut u8 {
    if c >= NUM_CLASSES {
        return ptr::null_mut();
    }
    let size = class_size(c);
    let p = SPILL.with(|s| {
        let p = s.free[c];
        if !p.is_null() {
            // SAFETY: a free block of class `c` on the list (checked when it was put
            // there): its first word is its link, which only this lock's holder reads.
            let after = unsafe { next(p) };
            if !after.is_null() && find(after) != Some(c) {
                crate::fatal::corrupt_link(after);
            }
            s.free[c] = after;
            return p;
        }
        if s.bump[c].is_null() || s.bump[c].addr() + size > s.end[c].addr() {
            let Some(chunk) = new_chunk(s, c) else {
                return ptr::null_mut();
            };
            s.bump[c] = chunk.wrapping_add(HEAD);
            s.end[c] = chunk.wrapping_add(CHUNK);
        }
        let p = s.bump[c];
        s.bump[c] = p.wrapping_add(size);
        p
    });
    if !p.is_null() {
        // Relaxed: figures for statistics.
        LIVE.fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_add(size as u64, Ordering::Relaxed);
    }
    p
}

/// Commits a chunk for class `c` and records it; `None` when the system refuses or the
/// table is full. Called with the lock held.
fn new_chunk(s: &mut State, c: usize) -> Option<*mut u8> {
    if CHUNKS.load(Ordering::Relaxed) as usize >= MAX_CHUNKS {
        return None;
    }
    if s.area_next == s.area_end {
        let mut area = os::reserve(AREA, CHUNK);
        let mut len = AREA;
        if area.is_null() {
            area = os::reserve(CHUNK, CHUNK);
            len = CHUNK;
        }
        if area.is_null() {
            return None;
        }
        s.area_next = area;
        s.area_end = area.wrapping_add(len);
    }
    let chunk = s.area_next;
    if !os::commit(chunk, CHUNK) {
        return None;
    }
    s.area_next = chunk.wrapping_add(CHUNK);
    let mut i = home(chunk.addr());
    // At most half the slots are used: an empty one is found.
    while TABLE_SLOTS[i].load(Ordering::Relaxed) != 0 {
        i = (i + 1) & (TABLE - 1);
    }
    // Release: a lookup that sees the entry sees it whole (and the chunk mapped).
    TABLE_SLOTS[i].store(chunk.addr() | (c + 1), Ordering::Release);
    CHUNKS.fetch_add(1, Ordering::Relaxed);
    Some(chunk)
}

/// Frees `p`, a live block of class `c` here ([`find`] said so). A block freed twice in
/// a row (the newest on its class's list) stops the process with a message.
///
/// # Safety
/// `p` is a block here that nobody uses again.
pub(crate) unsafe fn free(p: *mut u8, c: usize) {
    SPILL.with(|s| {
        if s.free[c] == p {
            crate::fatal::Message::new()
                .text("free(")
                .hex(p.addr())
                .text("): a block freed twice; aborting")
                .abort();
        }
        // SAFETY: the caller's block, free now: its first word becomes its link.
        unsafe { set_next(p, s.free[c]) };
        s.free[c] = p;
    });
    // Relaxed: figures for statistics.
    LIVE.fetch_sub(1, Ordering::Relaxed);
    LIVE_BYTES.fetch_sub(class_size(c) as u64, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class::class_of;

    #[test]
    #[cfg_attr(miri, ignore = "maps memory")]
    fn blocks_are_found_exactly_reused_and_aligned_as_their_class() {
        let c = class_of(96);
        let blocks: Vec<*mut u8> = (0..30_000).map(|_| alloc(c)).collect();
        for (k, &p) in blocks.iter().enumerate() {
            assert!(!p.is_null());
            assert_eq!(p.addr() % class_align(c), 0);
            assert_eq!(find(p), Some(c), "block {k}");
            assert_eq!(find(p.wrapping_add(8)), None, "inside a block");
            // SAFETY: a live block of 96 bytes.
            unsafe { p.write_bytes(k as u8, 96) };
        }
        assert!(
            CHUNKS.load(Ordering::Relaxed) >= 3,
            "30 000 blocks span chunks"
        );
        let mut unique = blocks.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), blocks.len(), "a block handed out twice");
        assert_eq!(find(ptr::without_provenance(0x1000)), None);
        let on_stack = 0u64;
        assert_eq!(find(&raw const on_stack as *const u8), None);
        for &p in &blocks[..100] {
            // SAFETY: live blocks of class `c`, freed once.
            unsafe { free(p, c) };
        }
        // The newest freed comes back first.
        let again = alloc(c);
        assert_eq!(again, blocks[99]);
        // SAFETY: as above.
        unsafe { free(again, c) };
        for &p in &blocks[100..] {
            // SAFETY: as above.
            unsafe { free(p, c) };
        }
    }
}
