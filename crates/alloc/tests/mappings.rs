//! Many buffers of a few tens of KiB, of 256 KiB or 1 MiB, or small over-aligned
//! blocks, every other one freed: the pattern that splits
//! one mapping per block into tens of thousands of mappings until the kernel's limit
//! (`vm.max_map_count`, 65530 by default) makes `munmap` and then every new mapping
//! fail. Blocks up to [`handoff_alloc::class::MAX_SMALL`] come from the arena, so the
//! process's mapping count, read from `/proc/self/maps`, barely moves. One test in its
//! own binary, so that no other test's mappings move the figure.

#![cfg(target_os = "linux")]

use handoff_alloc::HandoffAlloc;
use std::alloc::{GlobalAlloc, Layout};
use std::hint::black_box;

// Under `--cfg handoff_global_alloc` the crate installs it itself.
#[cfg(not(handoff_global_alloc))]
#[global_allocator]
static GLOBAL: HandoffAlloc = HandoffAlloc;

fn mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .expect("/proc/self/maps")
        .lines()
        .count()
}

#[test]
fn few_mappings_whatever_is_freed() {
    freeing_every_other_40_kib_buffer_adds_few_mappings();
    over_aligned_small_blocks_come_from_the_arena();
    // Blocks over 256 KiB, and blocks of 256 KiB beyond what one heap's region holds
    // (16 383), each became a mapping of its own (the latter through the C library's
    // malloc) until issue 48: 140 000 buffers of 1 MiB, every other freed and refilled,
    // reached the kernel's mapping limit (65 530 by default) with thousands of `munmap`
    // calls refused.
    buffers_every_other_freed_and_refilled(1 << 20);
    buffers_every_other_freed_and_refilled(256 << 10);
}

fn buffers_every_other_freed_and_refilled(size: usize) {
    const BLOCKS: usize = 140_000;
    let before = mappings();
    let s0 = handoff_alloc::stats();
    let new_buffer = |k: usize| {
        let mut v = Vec::<u8>::with_capacity(size);
        v.push(k as u8);
        black_box(v)
    };
    let mut bufs: Vec<Vec<u8>> = (0..BLOCKS).map(new_buffer).collect();
    let mut peak = mappings();
    for b in bufs.iter_mut().step_by(2) {
        *b = Vec::new();
    }
    peak = peak.max(mappings());
    for (k, b) in bufs.iter_mut().enumerate().step_by(2) {
        *b = new_buffer(k);
    }
    peak = peak.max(mappings());
    let s = handoff_alloc::stats();
    eprintln!(
        "{BLOCKS} buffers of {} KiB, every other freed and refilled: {before} mappings before, \
         {peak} at the peak; {} munmap calls refused, {} chunks of small blocks outside \
         the arena",
        size >> 10,
        s.unmap_failures - s0.unmap_failures,
        s.spill_chunks - s0.spill_chunks
    );
    assert!(bufs
        .iter()
        .enumerate()
        .all(|(k, b)| b[0] == k as u8 && b.capacity() >= size));
    drop(bufs);
    assert_eq!(
        s.unmap_failures, s0.unmap_failures,
        "munmap calls were refused"
    );
    assert_eq!(
        s.spill_chunks, s0.spill_chunks,
        "blocks came from outside the arena"
    );
    assert!(
        peak < 5_000,
        "{BLOCKS} buffers of {} KiB: {peak} mappings at the peak",
        size >> 10
    );
}

/// 20 000 small blocks aligned beyond the classes' own 128 bytes (a cache-line pair, a
/// page), every other one freed: until issue 48 each was a page mapping of its own
/// (`Layout(64, 256)`: 106 -> 10 076 mappings after the frees).
fn over_aligned_small_blocks_come_from_the_arena() {
    const BLOCKS: usize = 20_000;
    for align in [256, 4096] {
        let layout = Layout::from_size_align(64, align).unwrap();
        let before = mappings();
        let mut blocks: Vec<Option<usize>> = (0..BLOCKS)
            .map(|k| {
                // SAFETY: a valid layout of non-zero size.
                let p = unsafe { HandoffAlloc.alloc(layout) };
                assert!(!p.is_null());
                assert_eq!(p.addr() % align, 0);
                // SAFETY: a live block of 64 bytes.
                unsafe { p.write_bytes(k as u8, 64) };
                Some(p as usize)
            })
            .collect();
        for b in blocks.iter_mut().step_by(2) {
            // SAFETY: allocated above with `layout`, freed once.
            unsafe { HandoffAlloc.dealloc(b.take().unwrap() as *mut u8, layout) };
        }
        let after = mappings();
        eprintln!("{BLOCKS} blocks of Layout(64, {align}), every other freed: {before} -> {after} mappings");
        for (k, b) in blocks.iter().enumerate() {
            if let Some(p) = *b {
                // SAFETY: a live block of 64 bytes, written above.
                let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, 64) };
                assert!(bytes.iter().all(|&x| x == k as u8), "block {k} was written");
            }
        }
        for p in blocks.into_iter().flatten() {
            // SAFETY: allocated above with `layout`, freed once.
            unsafe { HandoffAlloc.dealloc(p as *mut u8, layout) };
        }
        assert!(
            after < before + 200,
            "{BLOCKS} blocks of Layout(64, {align}): {before} mappings before, {after} after \
             freeing every other one"
        );
    }
}

fn freeing_every_other_40_kib_buffer_adds_few_mappings() {
    const BLOCKS: usize = 30_000;
    let before = mappings();
    let stats_before = handoff_alloc::stats();
    let mut bufs: Vec<Option<Vec<u8>>> = (0..BLOCKS)
        .map(|k| {
            let mut v = Vec::<u8>::with_capacity(40 << 10);
            v.push(k as u8);
            Some(black_box(v))
        })
        .collect();
    for b in bufs.iter_mut().step_by(2) {
        *b = None;
    }
    let after = mappings();
    let stats = handoff_alloc::stats();
    eprintln!(
        "{BLOCKS} buffers of 40 KiB, every other freed: {before} -> {after} mappings, \
         {} munmap calls failed",
        stats.unmap_failures
    );
    assert_eq!(stats.unmap_failures, stats_before.unmap_failures);
    assert!(
        after < before + BLOCKS / 100,
        "{before} mappings before, {after} with {} buffers of 40 KiB left",
        BLOCKS / 2
    );
    // The buffers left hold what was written; the freed ones are reused.
    for (k, b) in bufs.iter().enumerate() {
        if let Some(v) = b {
            assert_eq!(v[0], k as u8);
        }
    }
    let again: Vec<Vec<u8>> = (0..BLOCKS / 2)
        .map(|_| black_box(Vec::<u8>::with_capacity(40 << 10)))
        .collect();
    assert!(mappings() < before + BLOCKS / 100);
    drop(again);
    drop(bufs);
}
