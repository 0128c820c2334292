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

    // Blocks of the cached size range (up to 1 MiB), at alignments up to two pages,
    // shrunk to a size still above the size classes (256 KiB): the tail goes back, the
    // block stays where it is, and it frees normally.
    for align in [8, 4096, 8192] {
        let layout = Layout::from_size_align(900 << 10, align).unwrap();
        // SAFETY: a non-zero layout.
        let p = unsafe { GLOBAL.alloc(layout) };
        assert!(!p.is_null());
        // SAFETY: `p` is live with `layout`'s size.
        unsafe { p.write_bytes(7, layout.size()) };
        let held = handoff_alloc::stats().big_bytes_live;
        // SAFETY: `p` is live with `layout`; the new size is non-zero.
        let q = unsafe { GLOBAL.realloc(p, layout, 300 << 10) };
        assert_eq!(q, p, "a shrinking big block stays in place");
        let kept = handoff_alloc::stats().big_bytes_live;
        assert!(
            kept + (550 << 10) <= held,
            "align {align}: {held} -> {kept} big-block bytes live"
        );
        // SAFETY: `q` is live with 300 KiB.
        let bytes = unsafe { std::slice::from_raw_parts(q, 300 << 10) };
        assert!(bytes.iter().all(|&b| b == 7));
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
