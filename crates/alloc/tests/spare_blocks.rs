//! A thread that exits leaves the free blocks of its big classes that it never used
//! (stock an earlier thread of its heap left) as spares, their pages given back, and
//! the next heap out of the class takes them before it cuts new blocks; what it used
//! stays with its heap. One test in its own binary, so that no other test's
//! blocks move the counts.

#![cfg(target_os = "linux")]

#[cfg(not(handoff_global_alloc))]
use handoff_alloc::HandoffAlloc;
use std::hint::black_box;
use std::thread;

// Under `--cfg handoff_global_alloc` the crate installs it itself.
#[cfg(not(handoff_global_alloc))]
#[global_allocator]
static GLOBAL: HandoffAlloc = HandoffAlloc;

type Big = [u8; 30 << 10];

fn make(n: usize, tag: u8) -> Vec<Box<Big>> {
    (0..n)
        .map(|_| black_box(Box::new([tag; 30 << 10])))
        .collect()
}

#[test]
fn an_exited_threads_big_blocks_are_taken_before_new_ones_are_cut() {
    // Heaps go to threads lowest first: this thread's heap is taken, so each thread
    // below takes the first heap free.
    let _ = make(1, 0);
    let before = handoff_alloc::stats();
    // A thread makes 40 big blocks, frees them and exits: its heap keeps them for the
    // next thread, warm.
    thread::spawn(|| drop(make(40, 1))).join().unwrap();
    let kept = handoff_alloc::stats();
    assert_eq!(
        kept.spare_blocks, before.spare_blocks,
        "a used stock was offered"
    );
    // The next thread takes that heap, uses 2 of the blocks and exits: the 38 it never
    // used become spares.
    thread::spawn(|| drop(make(2, 4))).join().unwrap();
    let left = handoff_alloc::stats();
    // All 40 but what it took from the top of the depot (its refills take 64 KiB at
    // most: one or two blocks of this class); none that it used.
    let offered = left.spare_blocks - before.spare_blocks;
    assert!((36..=39).contains(&offered), "{offered} blocks offered");
    assert!(
        left.released_bytes >= kept.released_bytes + offered * (28 << 10),
        "the spares' pages were not given back: {} -> {}",
        kept.released_bytes,
        left.released_bytes
    );
    // Another thread, with a heap of its own (the first one held by a third thread
    // meanwhile), needs 30 of the class: it takes the spares, and cuts no new block.
    let (hold, release) = std::sync::mpsc::channel::<()>();
    let (held, holding) = std::sync::mpsc::channel::<usize>();
    let holder = thread::spawn(move || {
        let mine = make(1, 3);
        held.send(&*mine[0] as *const Big as usize).unwrap();
        release.recv().unwrap();
        drop(mine);
    });
    let holders = holding.recv().unwrap();
    let taker = thread::spawn(move || {
        let blocks: Vec<Box<Big>> = (0..30u8)
            .map(|k| black_box(Box::new([k + 10; 30 << 10])))
            .collect();
        let stats = handoff_alloc::stats();
        let mut at = std::collections::HashSet::new();
        for (k, b) in blocks.iter().enumerate() {
            assert!(
                b.iter().all(|&x| x == k as u8 + 10),
                "block {k} was written by another"
            );
            let p = &**b as *const Big as usize;
            assert!(at.insert(p) && p != holders, "a block handed out twice");
        }
        (blocks, stats)
    });
    let (blocks, during) = taker.join().unwrap();
    hold.send(()).unwrap();
    holder.join().unwrap();
    assert!(
        during.spare_taken >= left.spare_taken + 28,
        "spares taken {} -> {}",
        left.spare_taken,
        during.spare_taken
    );
    assert!(
        left.spare_blocks >= during.spare_blocks + 28,
        "spares {} -> {}",
        left.spare_blocks,
        during.spare_blocks
    );
    drop(blocks);
    handoff_alloc::flush();
    // Every block is accounted for: the spares taken and freed again went back to the
    // heap that cut them.
    let after = handoff_alloc::stats();
    assert!(
        after.small_blocks_live <= before.small_blocks_live + 8,
        "live blocks {} -> {}",
        before.small_blocks_live,
        after.small_blocks_live
    );
}
