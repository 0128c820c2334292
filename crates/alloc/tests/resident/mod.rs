//! Which pages of a range are resident: for the tests that watch memory go back to the
//! system.

/// How many of the pages wholly inside `[p, p + len)` are resident (`mincore`).
pub fn resident_pages(p: usize, len: usize) -> usize {
    const PAGE: usize = 4096;
    let from = p.next_multiple_of(PAGE);
    let to = (p + len) & !(PAGE - 1);
    if to <= from {
        return 0;
    }
    let mut vec = vec![0u8; (to - from) / PAGE];
    // SAFETY: `[from, to)` is page-aligned and mapped (committed arena memory); the
    // kernel writes one byte per page into `vec`, which has room for them.
    let rc = unsafe { libc::mincore(from as *mut libc::c_void, to - from, vec.as_mut_ptr()) };
    assert_eq!(rc, 0, "mincore");
    vec.iter().filter(|&&b| b & 1 != 0).count()
}

/// `n` blocks of `size` bytes from `alloc` (alignment 8), every byte written (block
/// `i` with `i | 1`); their addresses.
pub fn written_blocks(alloc: &impl std::alloc::GlobalAlloc, n: usize, size: usize) -> Vec<usize> {
    let layout = std::alloc::Layout::from_size_align(size, 8).unwrap();
    (0..n)
        .map(|i| {
            // SAFETY: a valid non-zero layout.
            let p = unsafe { alloc.alloc(layout) };
            assert!(!p.is_null());
            // SAFETY: a fresh block of `size` bytes.
            unsafe { p.write_bytes(i as u8 | 1, size) };
            p as usize
        })
        .collect()
}
