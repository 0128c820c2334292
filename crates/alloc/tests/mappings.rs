//! Many buffers of a few tens of KiB, every other one freed: the pattern that splits
//! one mapping per block into tens of thousands of mappings until the kernel's limit
//! (`vm.max_map_count`, 65530 by default) makes `munmap` and then every new mapping
//! fail. Blocks up to [`handoff_alloc::class::MAX_SMALL`] come from the arena, so the
//! process's mapping count, read from `/proc/self/maps`, barely moves. One test in its
//! own binary, so that no other test's mappings move the figure.

#![cfg(target_os = "linux")]

#[cfg(not(handoff_global_alloc))]
use handoff_alloc::HandoffAlloc;
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
