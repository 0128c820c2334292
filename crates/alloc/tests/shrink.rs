//! Shrinking big blocks with `realloc` gives their tail back to the system: resident
//! memory, read from `/proc/self/status`, falls with the block. One test in its own
//! binary, so that no other test's memory moves the figure.

#![cfg(target_os = "linux")]

use handoff_alloc::HandoffAlloc;
use std::alloc::{GlobalAlloc, Layout};

// Under `--cfg handoff_global_alloc` the crate installs it itself.
#[cfg_attr(not(handoff_global_alloc), global_allocator)]
static GLOBAL: HandoffAlloc = HandoffAlloc;

const MIB: u64 = 1 << 20;

/// How many pages of `[p, p + len)` (page-aligned) are resident; pages not mapped at
/// all count as not resident.
fn resident_pages(p: usize, len: usize) -> usize {
    let pages = len.div_ceil(4096);
    let mut vec = vec![0u8; pages];
    // SAFETY: the kernel writes one byte per page of the range into `vec`, which has
    // room for them; an unmapped range is an error, not an access.
    let rc = unsafe { libc::mincore(p as *mut libc::c_void, len, vec.as_mut_ptr()) };
    if rc != 0 {
        return 0;
    }
    vec.iter().filter(|&&b| b & 1 != 0).count()
}

/// This process's resident memory, in bytes.
fn resident() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("VmRSS in /proc/self/status");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("VmRSS in kB");
    kib * 1024
}

#[test]
fn shrinking_big_blocks_returns_their_tails() {
    // A 256 MiB buffer cut to 1 MiB: glibc drops back to a few MiB here.
    let before = resident();
    let mut v = vec![1u8; 256 << 20];
    let full = resident();
    assert!(
        full >= before + 250 * MIB,
        "{before} -> {full}: not resident"
    );
    v.truncate(1 << 20);
    v.shrink_to_fit();
    let after = resident();
    eprintln!(
        "resident: {} MiB before, {} MiB with 256 MiB, {} MiB after shrinking to 1 MiB",
        before / MIB,
        full / MIB,
        after / MIB
    );
    assert!(
        after <= before + 8 * MIB,
        "{} MiB resident before, {} MiB with the buffer, {} MiB after shrinking it to 1 MiB",
        before / MIB,
        full / MIB,
        after / MIB
    );
    assert!(v.iter().all(|&b| b == 1), "the kept bytes changed");
    assert_eq!(v.capacity(), 1 << 20);
    let live = handoff_alloc::stats().big_bytes_live;
    assert!(
        live < 8 * MIB,
        "{live} big-block bytes live after the shrink"
    );
    // It grows again, keeps its bytes, and frees.
    v.resize(64 << 20, 2);
    assert!(v[..1 << 20].iter().all(|&b| b == 1));
    assert!(v[1 << 20..].iter().all(|&b| b == 2));
    drop(v);

    // Blocks of 900 KiB, at alignments up to two pages, shrunk to a size still above the
    // size classes (256 KiB): the tail's pages go back (unmapped, or given back inside
    // the block's slot of the large range), the block stays where it is, and it frees
    // normally.
    for align in [8, 4096, 8192] {
        let layout = Layout::from_size_align(900 << 10, align).unwrap();
        // SAFETY: a non-zero layout.
        let p = unsafe { GLOBAL.alloc(layout) };
        assert!(!p.is_null());
        // SAFETY: `p` is live with `layout`'s size.
        unsafe { p.write_bytes(7, layout.size()) };
        let tail = (p.addr() + (300 << 10)).next_multiple_of(4096);
        let tail_len = p.addr() + layout.size() - tail;
        assert!(
            resident_pages(tail, tail_len) * 4096 >= 550 << 10,
            "align {align}"
        );
        // SAFETY: `p` is live with `layout`; the new size is non-zero.
        let q = unsafe { GLOBAL.realloc(p, layout, 300 << 10) };
        assert_eq!(q, p, "a shrinking big block stays in place");
        let kept = handoff_alloc::stats().big_bytes_live;
        assert_eq!(
            resident_pages(tail, tail_len),
            0,
            "align {align}: the tail's pages are still resident"
        );
        // A small shrink (under 64 KiB freed) keeps the mapping as it is.
        // SAFETY: `q` is live with 300 KiB at `align`.
        let r = unsafe {
            GLOBAL.realloc(
                q,
                Layout::from_size_align(300 << 10, align).unwrap(),
                290 << 10,
            )
        };
        assert_eq!(r, q);
        assert_eq!(handoff_alloc::stats().big_bytes_live, kept);
        // SAFETY: `r` is live with 290 KiB at `align`.
        unsafe { GLOBAL.dealloc(r, Layout::from_size_align(290 << 10, align).unwrap()) };
    }
}
