//! The operating system's memory calls: reserve, commit, map and unmap. They never
//! allocate, so the allocator can call them from inside `alloc`.

use core::ptr;

/// The page size of the allocator's arithmetic: commits, and the pages given back, are
/// multiples of it. (A kernel with bigger pages refuses commits that are not multiples
/// of its own: this allocator assumes 4 KiB pages, as x86-64 Linux has.)
pub(crate) const PAGE: usize = 4096;

/// Reserves `len` bytes of address space aligned to `align`, inaccessible and not
/// committed: it costs no memory until [`commit`]. Null when the system refuses.
pub(crate) fn reserve(len: usize, align: usize) -> *mut u8 {
    let Some(total) = len.checked_add(align) else {
        return ptr::null_mut();
    };
    // SAFETY: an anonymous private mapping at an address the kernel picks touches no
    // existing memory.
    let raw = unsafe {
        libc::mmap(
            ptr::null_mut(),
            total,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return ptr::null_mut();
    }
    let raw = raw.cast::<u8>();
    let lead = raw.addr().next_multiple_of(align) - raw.addr();
    let start = raw.wrapping_add(lead);
    // Give back the unaligned head and the tail beyond `len`.
    if lead > 0 {
        // SAFETY: [raw, raw + lead) is part of the mapping made above and nothing uses it.
        unsafe { libc::munmap(raw.cast(), lead) };
    }
    let tail = total - lead - len;
    if tail > 0 {
        // SAFETY: as above, for the part past `start + len`.
        unsafe { libc::munmap(start.wrapping_add(len).cast(), tail) };
    }
    start
}

/// Makes `[at, at + len)`, inside a reservation, readable and writable. Its pages are
/// still only backed by memory when first touched.
pub(crate) fn commit(at: *mut u8, len: usize) -> bool {
    // SAFETY: the caller passes a page-aligned range inside the arena reservation,
    // which nothing else maps.
    unsafe { libc::mprotect(at.cast(), len, libc::PROT_READ | libc::PROT_WRITE) == 0 }
}

/// Backs `[at, at + len)`, committed, with memory now, in one call, instead of one
/// page fault per page on first touch. Only a hint: on a kernel without
/// `MADV_POPULATE_WRITE` (before Linux 5.14) the pages fault in as they are touched.
pub(crate) fn populate(at: *mut u8, len: usize) {
    // SAFETY: a committed, writable range of the arena; populating changes no contents.
    unsafe { libc::madvise(at.cast(), len, libc::MADV_POPULATE_WRITE) };
}

/// Maps `len` fresh zeroed bytes, readable and writable. Null when the system refuses.
pub(crate) fn map(len: usize) -> *mut u8 {
    // SAFETY: as in `reserve`.
    let raw = unsafe {
        libc::mmap(
            ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        ptr::null_mut()
    } else {
        raw.cast()
    }
}

/// Moves or resizes a mapping made by [`map`] to `new_len` bytes without copying its
/// contents (`mremap`): its pages move with it, and growth is zero-filled on first
/// touch. Null when the system refuses; then the old mapping is unchanged.
///
/// # Safety
/// `at` and `len` are exactly one live mapping made by [`map`] (or by this function);
/// on success nobody uses the old range again.
pub(crate) unsafe fn remap(at: *mut u8, len: usize, new_len: usize) -> *mut u8 {
    // SAFETY: the caller's contract: the range is one anonymous private mapping.
    let raw = unsafe { libc::mremap(at.cast(), len, new_len, libc::MREMAP_MAYMOVE) };
    if raw == libc::MAP_FAILED {
        ptr::null_mut()
    } else {
        raw.cast()
    }
}

/// Returns `[at, at + len)`, a whole mapping made by [`map`] or the page-aligned tail
/// of one, to the system. False when the system refuses (`munmap` of part of a mapping
/// splits it, which fails at the process's mapping limit); then nothing changed.
///
/// # Safety
/// `at` is page-aligned, `[at, at + len)` is one live mapping made by [`map`] or the
/// end of one, and nothing uses that range again.
pub(crate) unsafe fn unmap(at: *mut u8, len: usize) -> bool {
    // SAFETY: the caller's contract.
    unsafe { libc::munmap(at.cast(), len) == 0 }
}

/// Gives the memory behind `[at, at + len)` back to the system while keeping the range
/// mapped: the next touch reads zeros. Only a hint; it changes no mapping.
///
/// # Safety
/// `[at, at + len)` is page-aligned, mapped by [`map`], and its contents are not needed.
pub(crate) unsafe fn release(at: *mut u8, len: usize) {
    // SAFETY: the caller's contract.
    unsafe { libc::madvise(at.cast(), len, libc::MADV_DONTNEED) };
}
