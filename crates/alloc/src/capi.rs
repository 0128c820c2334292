//! The C allocation API on handoff-alloc's heaps: `malloc`, `free`, `calloc`,
//! `realloc`, `reallocarray`, `posix_memalign`, `aligned_alloc`, `memalign`, `valloc`,
//! `pvalloc` and `malloc_usable_size`, with the C library's contracts (C11 and the
//! glibc manual pages). `crates/alloc-preload` exports them under their C names as
//! `libhandoff_alloc.so`, for `LD_PRELOAD`; a Rust program uses [`HandoffAlloc`]
//! instead.
//!
//! What differs from the Rust [`GlobalAlloc`] path:
//!
//! - **No size at `free`.** The class of a block in the arena is read from its address
//!   as always; a block the arena did not serve is a slot of the large range, a small
//!   block in a chunk outside the arena, or a mapping of its own, each recorded where
//!   it was made (`big::is_block`). An over-aligned small block (`memalign(4096, 100)`) is
//!   handed out inside a bigger block of a power-of-two class; `free` rounds such an
//!   address down to its block from the class alone (the classes that are not powers
//!   of two never serve an over-aligned request, so their blocks are never entered
//!   inside).
//! - **Foreign addresses.** A C program may free an address this allocator never
//!   handed out (a bug of the program, or memory from another allocator). Outside the
//!   arena, `free`, `realloc` and `malloc_usable_size` accept only an address that is a
//!   block in the allocator's own records (a large slot's start, a spilled block, a
//!   recorded mapping), reading nothing at the address, and otherwise print the address
//!   to standard error and abort, rather than writing into memory that is not theirs.
//! - **Blocks freed twice.** Where it costs next to nothing: a block freed again while
//!   it is still the newest in its magazine (a `free(p); free(p)`), its outbox (a
//!   block of another thread's heap), its spill list, or a large slot or mapping
//!   already freed, stops the process with a message that names the block. A block
//!   freed twice with other frees between, on the arena's fast path, is not detected.
//! - **Alignment.** `malloc(n)` is aligned to 16 bytes for every `n` above 8, and to 8
//!   bytes for up to 8 (no C object of at most 8 bytes needs more), as glibc, jemalloc,
//!   mimalloc and tcmalloc do: a request of 17 to 24 bytes takes a 32-byte block, since
//!   the 24-byte class is only 8-aligned (until 2026-11-29 it took that class, and 256
//!   of 15 424 blocks of 16 to 256 bytes came back 8-aligned; compilers assume 16 for a
//!   `new T` of 16 bytes or more).
//!
//! [`HandoffAlloc`]: crate::HandoffAlloc
//! [`GlobalAlloc`]: core::alloc::GlobalAlloc

use crate::class::{
    aligned_within, class_for, class_of_computed, class_size, first_block, CLASS_SIZES, MAX_SMALL,
    NUM_CLASSES, SMALL_CLASS, TABLE_MAX,
};
use crate::heap::{self, LOCAL};
use crate::os::PAGE;
use crate::{big, imp};
use core::ptr;

/// For each class, the mask that rounds an address inside one of its blocks down to
/// the block's start: the size less one for the power-of-two classes (the only ones
/// that serve over-aligned requests), 0 (no rounding) for the others.
const BLOCK_MASK: [usize; NUM_CLASSES] = {
    let mut m = [0; NUM_CLASSES];
    let mut c = 0;
    while c < NUM_CLASSES {
        if CLASS_SIZES[c].is_power_of_two() {
            m[c] = CLASS_SIZES[c] - 1;
        }
        c += 1;
    }
    m
};

/// The start of the block of class `c` that holds `p` (see [`BLOCK_MASK`]).
#[inline(always)]
fn block_of(p: *mut u8, c: usize) -> *mut u8 {
    p.wrapping_sub(p.addr().wrapping_sub(first_block(c)) & BLOCK_MASK[c])
}

/// Sets the calling thread's `errno`.
#[inline]
fn set_errno(e: i32) {
    // SAFETY: `__errno_location` returns the calling thread's errno, always valid.
    unsafe { *libc::__errno_location() = e };
}

/// Requests beyond this are refused at once (no object may be larger than
/// `PTRDIFF_MAX`).
const MAX_REQUEST: usize = isize::MAX as usize;

/// The class of every `malloc` size up to [`TABLE_MAX`], by 8-byte step: the class
/// table of the Rust path, but 17 to 24 bytes take the 32-byte class (16-aligned)
/// rather than the 24-byte one (8-aligned).
const C_SMALL_CLASS: [u8; TABLE_MAX / 8 + 1] = {
    let mut t = SMALL_CLASS;
    // Entry (size + 7) / 8 = 3: sizes 17 to 24.
    t[3] = t[4];
    t
};

/// The class `malloc(size)` takes (`size <= MAX_SMALL`): the smallest that holds it
/// and is 16-aligned when `size` is above 8 (every class from 32 bytes up is).
#[inline(always)]
fn malloc_class(size: usize) -> usize {
    if size <= TABLE_MAX {
        C_SMALL_CLASS[(size + 7) >> 3] as usize
    } else {
        class_of_computed(size)
    }
}

/// The alignment `malloc(size)` promises.
#[inline(always)]
fn malloc_align(size: usize) -> usize {
    if size > 8 {
        16
    } else {
        8
    }
}

/// A block of `size` bytes aligned to `align` (a power of two), and whether its memory
/// is known to be zero; null when the system refuses.
#[inline]
fn alloc_aligned(size: usize, align: usize) -> (*mut u8, bool) {
    if size > MAX_REQUEST {
        return (ptr::null_mut(), false);
    }
    if let Some(c) = class_for(size, align) {
        let p = imp::alloc_small(c);
        if !p.is_null() {
            return (aligned_within(p, align), false);
        }
        // The arena could not serve it: a block of the class outside it, or a mapping.
        return (big::alloc_small_elsewhere(c, size, align), false);
    }
    // Big: a slot of the large range or a mapping of its own, never the C library's
    // `malloc` (which is this allocator here).
    big::alloc(size, align)
}

/// `malloc(size)`: a block of at least `size` bytes (`malloc(0)` a unique one), or
/// null with `errno` set to `ENOMEM`.
///
/// # Safety
/// None beyond C's: the block is the caller's until it passes it to [`free`] or
/// [`realloc`].
///
/// Always inline: the exported `malloc`, `operator new` and the rest each get the fast
/// path in place (with several callers, a plain `#[inline]` left it a call of its own,
/// four instructions more a `malloc`).
#[inline(always)]
pub unsafe fn malloc(size: usize) -> *mut u8 {
    if size <= MAX_SMALL {
        let p = imp::alloc_small(malloc_class(size));
        if !p.is_null() {
            return p;
        }
    }
    let (p, _) = alloc_aligned(size, malloc_align(size));
    if p.is_null() {
        set_errno(libc::ENOMEM);
    }
    p
}

/// `calloc(n, size)`: `n * size` zeroed bytes; null with `ENOMEM` when the product
/// overflows or the system refuses.
///
/// # Safety
/// As for [`malloc`].
pub unsafe fn calloc(n: usize, size: usize) -> *mut u8 {
    let Some(total) = n.checked_mul(size) else {
        set_errno(libc::ENOMEM);
        return ptr::null_mut();
    };
    let (p, zero) = alloc_aligned(total, malloc_align(total));
    if p.is_null() {
        set_errno(libc::ENOMEM);
        return p;
    }
    if !zero {
        // SAFETY: a fresh block of at least `total` bytes.
        unsafe { ptr::write_bytes(p, 0, total) };
    }
    p
}

/// Pushes `p` onto this thread's magazine of its class when it is a block of this
/// thread's heap and the magazine has room (the C form of `imp::push_local`: no layout
/// to hint the class, an over-aligned block's address rounded down to its block, and a
/// block that is already the magazine's newest, freed twice in a row, refused with a
/// message).
#[inline(always)]
fn push_local(p: *mut u8) -> bool {
    LOCAL
        .try_with(|l| {
            let x = (p.addr() ^ l.base.get()) >> l.shift.get();
            if x >= NUM_CLASSES {
                return false;
            }
            // SAFETY: `heap` is `NO_HEAP` or a heap this thread owns, both statics; `x`
            // is a class, so `p` lies in this thread's heap span in the region of class
            // `x` (a thread without a heap has a base no address matches), and its
            // block is the caller's to free.
            unsafe { (*l.heap.get()).mags[x].push_fresh(block_of(p, x)) }
        })
        .unwrap_or(false)
}

/// `free(p)`: `p` null, or a live block from this API.
///
/// # Safety
/// `p` is null or a block from this API that nobody uses again. An address outside
/// the arena that is not one of its blocks aborts the process with a message (see the
/// module's documentation); inside the arena, addresses are not checked.
///
/// Always inline, as [`malloc`].
#[inline(always)]
pub unsafe fn free(p: *mut u8) {
    if p.is_null() || push_local(p) {
        return;
    }
    // SAFETY: the caller's contract.
    unsafe { free_slow(p) }
}

/// Where a block lies: in the arena (its owner, class and the block's start), or
/// outside it (a large slot, a spilled small block or a big mapping, each found in the
/// records of the part that made it).
enum Block {
    Small {
        owner: usize,
        class: usize,
        start: *mut u8,
    },
    Big,
}

/// Finds `p`'s block, or aborts if `p` cannot be one of this allocator's.
///
/// Inline always: `malloc_usable_size` sizes every block through it, and Redis calls
/// that on every allocation and free (in a run of redis-benchmark under Callgrind, 82
/// instructions a call with `find` out of line and its result returned through memory,
/// against mimalloc's 28; 45 inline, in a loop of calls).
#[inline(always)]
fn find(p: *mut u8, what: &str) -> Block {
    let (geo, off) = heap::locate(p);
    match geo.decode(off) {
        Some((owner, class)) => {
            let in_region = off & (geo.region_size() - 1);
            if class >= NUM_CLASSES || in_region < first_block(class) {
                foreign(p, what);
            }
            Block::Small {
                owner,
                class,
                start: block_of(p, class),
            }
        }
        None if big::is_block(p) => Block::Big,
        None => foreign(p, what),
    }
}

#[cold]
#[inline(never)]
unsafe fn free_slow(p: *mut u8) {
    match find(p, "free") {
        Block::Small {
            owner,
            class,
            start,
        } => {
            // SAFETY: a block of heap `owner` in class `class` (the arena's layout),
            // which the caller is done with.
            unsafe { heap::free_small_slow(start, owner, class) }
        }
        // SAFETY: a large slot or a big block (checked), no longer used.
        Block::Big => unsafe { big::free(p) },
    }
}

/// Writes `handoff-alloc: <what>(0x...): not a block of this allocator` to standard
/// error without allocating, and aborts.
#[cold]
#[inline(never)]
fn foreign(p: *mut u8, what: &str) -> ! {
    crate::fatal::Message::new()
        .text(what)
        .text("(")
        .hex(p.addr())
        .text("): not a block of this allocator (freed twice, never allocated, or another allocator's); aborting")
        .abort()
}

/// `malloc_usable_size(p)`: the bytes the block at `p` may use, at least what was asked
/// for; 0 for null.
///
/// # Safety
/// `p` is null or a live block from this API.
#[inline]
pub unsafe fn usable_size(p: *mut u8) -> usize {
    if p.is_null() {
        return 0;
    }
    match find(p, "malloc_usable_size") {
        Block::Small { class, start, .. } => class_size(class) - (p.addr() - start.addr()),
        // SAFETY: a live large slot or big block (checked).
        Block::Big => unsafe { big::usable(p) },
    }
}

/// `realloc(p, size)` as glibc: `realloc(NULL, n)` is `malloc(n)`; `realloc(p, 0)`
/// frees `p` and returns null; otherwise the block keeps its place when `size` still
/// fits it and uses at least half of it (a big block gives the rest of its mapping
/// back, and grows by moving its mapping), else moves to a new block with its first
/// `min(old, size)` bytes. On failure, null with `ENOMEM`, and `p` is unchanged.
///
/// # Safety
/// `p` is null or a live block from this API; on success the caller uses only the
/// returned block.
pub unsafe fn realloc(p: *mut u8, size: usize) -> *mut u8 {
    if p.is_null() {
        // SAFETY: C's contract.
        return unsafe { malloc(size) };
    }
    if size == 0 {
        // SAFETY: the caller's live block.
        unsafe { free(p) };
        return ptr::null_mut();
    }
    if size > MAX_REQUEST {
        set_errno(libc::ENOMEM);
        return ptr::null_mut();
    }
    let old = match find(p, "realloc") {
        Block::Small { class, start, .. } => {
            let old = class_size(class) - (p.addr() - start.addr());
            // In place when it still fits, uses at least half, and has `malloc`'s
            // alignment for the new size (a block of the 24-byte class, which
            // `posix_memalign(8, ..)` may give, is only 8-aligned).
            if size <= old && size >= old / 2 && p.addr() & (malloc_align(size) - 1) == 0 {
                return p;
            }
            old
        }
        Block::Big => {
            // SAFETY: a live large slot or big block (checked).
            let old = unsafe { big::usable(p) };
            if size > MAX_SMALL && size <= old {
                // SAFETY: as above; the new size fits the block.
                unsafe { big::shrink(p, size) };
                return p;
            }
            if size > old {
                // SAFETY: as above; a C block promises no alignment beyond a page that
                // `realloc` keeps (`remap` keeps the block's offset in its page).
                let moved = unsafe { big::remap(p, 16, size) };
                if !moved.is_null() {
                    return moved;
                }
            }
            old
        }
    };
    // SAFETY: C's contract.
    let q = unsafe { malloc(size) };
    if !q.is_null() {
        // SAFETY: both blocks are live and distinct; `old` bytes of `p` and `size` of
        // `q` are usable.
        unsafe { ptr::copy_nonoverlapping(p, q, old.min(size)) };
        // SAFETY: the caller's live block, replaced by `q`.
        unsafe { free(p) };
    }
    q
}

/// `reallocarray(p, n, size)`: `realloc(p, n * size)`, or null with `ENOMEM` (and `p`
/// unchanged) when the product overflows.
///
/// # Safety
/// As for [`realloc`].
pub unsafe fn reallocarray(p: *mut u8, n: usize, size: usize) -> *mut u8 {
    match n.checked_mul(size) {
        // SAFETY: the caller's contract.
        Some(total) => unsafe { realloc(p, total) },
        None => {
            set_errno(libc::ENOMEM);
            ptr::null_mut()
        }
    }
}

/// `posix_memalign(out, align, size)`: 0 with a block aligned to `align` in `*out`;
/// `EINVAL` when `align` is not a power of two multiple of `sizeof(void *)`, `ENOMEM`
/// when the system refuses; `*out` is left alone on failure.
///
/// # Safety
/// `out` is valid for one pointer's write.
pub unsafe fn posix_memalign(out: *mut *mut u8, align: usize, size: usize) -> i32 {
    if !align.is_power_of_two() || !align.is_multiple_of(core::mem::size_of::<usize>()) {
        return libc::EINVAL;
    }
    let (p, _) = alloc_aligned(size, align);
    if p.is_null() {
        return libc::ENOMEM;
    }
    // SAFETY: the caller's contract.
    unsafe { out.write(p) };
    0
}

/// `aligned_alloc(align, size)` (C11): a block aligned to `align`; null with `EINVAL`
/// when `align` is not a power of two (as glibc 2.38 and later), with `ENOMEM` when
/// the system refuses. `size` need not be a multiple of `align`.
///
/// # Safety
/// As for [`malloc`].
pub unsafe fn aligned_alloc(align: usize, size: usize) -> *mut u8 {
    if !align.is_power_of_two() {
        set_errno(libc::EINVAL);
        return ptr::null_mut();
    }
    aligned_or_enomem(size, align)
}

/// `memalign(align, size)` as glibc: an alignment that is not a power of two is
/// rounded up to one (null with `EINVAL` if none is that big); up to 8 it is `malloc`.
///
/// # Safety
/// As for [`malloc`].
pub unsafe fn memalign(align: usize, size: usize) -> *mut u8 {
    if align <= 8 {
        // SAFETY: C's contract.
        return unsafe { malloc(size) };
    }
    let Some(align) = align.checked_next_power_of_two() else {
        set_errno(libc::EINVAL);
        return ptr::null_mut();
    };
    aligned_or_enomem(size, align)
}

/// `valloc(size)`: a page-aligned block.
///
/// # Safety
/// As for [`malloc`].
pub unsafe fn valloc(size: usize) -> *mut u8 {
    aligned_or_enomem(size, PAGE)
}

/// `pvalloc(size)`: a page-aligned block of `size` rounded up to whole pages (one page
/// for 0).
///
/// # Safety
/// As for [`malloc`].
pub unsafe fn pvalloc(size: usize) -> *mut u8 {
    match size.max(1).checked_next_multiple_of(PAGE) {
        Some(size) => aligned_or_enomem(size, PAGE),
        None => {
            set_errno(libc::ENOMEM);
            ptr::null_mut()
        }
    }
}

fn aligned_or_enomem(size: usize, align: usize) -> *mut u8 {
    let (p, _) = alloc_aligned(size, align);
    if p.is_null() {
        set_errno(libc::ENOMEM);
    }
    p
}

/// Prepares the allocator for the process before its first allocation: registers its
/// fork handlers. `libhandoff_alloc.so` calls it from its constructor, so that they
/// are in place before any of the program's fork handlers could make the process's
/// first allocation (every allocation path registers them too, when it has not been
/// called).
///
/// ```
/// handoff_alloc::capi::init();
/// ```
pub fn init() {
    crate::FORK.register();
}

/// Whether `p` lies in memory this allocator manages (its arena, its large range, or
/// one of its mappings), for tests that check a program's blocks came from it. Null is
/// not.
pub fn owns(p: *const u8) -> bool {
    let p = p.cast_mut();
    !p.is_null() && (heap::decode(p).is_some() || big::is_block(p))
}

#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;

    #[test]
    fn every_address_inside_a_block_rounds_down_to_it() {
        for c in 0..NUM_CLASSES {
            let size = class_size(c);
            // A region start (aligned to 2^32) plus the class's first block, then the
            // third block.
            let region = 7usize << 32;
            let block = region + first_block(c) + 3 * size;
            let p = block as *mut u8;
            assert_eq!(block_of(p, c), p, "class {c}: a block's start is its own");
            if size.is_power_of_two() {
                for off in [1, size / 2, size - 1] {
                    assert_eq!(block_of(p.wrapping_add(off), c), p, "class {c} +{off}");
                }
            }
        }
    }
}
