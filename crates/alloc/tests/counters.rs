//! The allocator's slow-path counters in `handoff_alloc::stats()` (what `runner alloc`
//! prints per 1000 pairs), with handoff-alloc as this test binary's global allocator.

use handoff_alloc::HandoffAlloc;

// Under `--cfg handoff_global_alloc` the crate installs it itself.
#[cfg_attr(not(handoff_global_alloc), global_allocator)]
static GLOBAL: HandoffAlloc = HandoffAlloc;

/// The slow-path counters: on a thread of its own, freeing 200 blocks of one class
/// fills the magazine (63) and spills half of it to the depot each time it is full;
/// allocating them again empties it and refills from the depot. A binary of its own:
/// in a process where other threads exited, the new thread could take blocks of their
/// heaps (borrowed from a heap nobody owns), whose frees go back to that heap instead.
#[test]
fn magazine_refills_and_spills_are_counted() {
    std::thread::spawn(|| {
        let layout = std::alloc::Layout::from_size_align(200, 8).unwrap();
        let a = handoff_alloc::HandoffAlloc;
        let mut blocks: Vec<*mut u8> = Vec::with_capacity(200);
        let take = |blocks: &mut Vec<*mut u8>| {
            for _ in 0..200 {
                // SAFETY: a valid non-zero layout.
                let p = unsafe { std::alloc::GlobalAlloc::alloc(&a, layout) };
                assert!(!p.is_null());
                blocks.push(p);
            }
        };
        let give = |blocks: &mut Vec<*mut u8>| {
            for p in blocks.drain(..) {
                // SAFETY: allocated above with this layout, freed once.
                unsafe { std::alloc::GlobalAlloc::dealloc(&a, p, layout) };
            }
        };
        take(&mut blocks);
        let before = handoff_alloc::stats();
        give(&mut blocks);
        let spilled = handoff_alloc::stats();
        // 200 frees into a magazine of 63 that spills half (31) when full: at least 4
        // spills, 124 blocks into the depot.
        assert!(
            spilled.magazine_spills >= before.magazine_spills + 4,
            "{before:?} {spilled:?}"
        );
        assert!(spilled.depot_blocks_in >= before.depot_blocks_in + 124);
        take(&mut blocks);
        let refilled = handoff_alloc::stats();
        // 200 allocations from a magazine of at most 63 and a depot of at least 124:
        // the depot gives its blocks back, 31 per refill.
        assert!(refilled.magazine_refills >= spilled.magazine_refills + 4);
        assert!(refilled.depot_blocks_out >= spilled.depot_blocks_out + 124);
        assert!(refilled.blocks_carved >= 200);
        give(&mut blocks);
    })
    .join()
    .unwrap();
}
