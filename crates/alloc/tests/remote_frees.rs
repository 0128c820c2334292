//! Remote frees from one thread to 48 owners in 4 classes each: more (owner, class)
//! pairs than a freeing thread has outboxes, so pairs share outboxes and push each
//! other out. Every owner must get every block back. In its own binary: in a fresh
//! process no heap nobody owns holds returned blocks, so every owner's blocks come from
//! its own heap (a thread that runs dry takes blocks returned to a heap nobody owns
//! before cutting new ones, which would make the count per owner meaningless).

use handoff_alloc::HandoffAlloc;
use std::alloc::{GlobalAlloc, Layout};
use std::sync::mpsc;
use std::thread;

// Under `--cfg handoff_global_alloc` the crate installs it itself.
#[cfg_attr(not(handoff_global_alloc), global_allocator)]
static GLOBAL: HandoffAlloc = HandoffAlloc;

const SCALE: usize = if cfg!(debug_assertions) { 1 } else { 10 };

#[test]
fn remote_frees_to_many_owners_and_classes_reach_each_owner() {
    // 48 owners x 4 classes: more (owner, class) pairs than a freeing thread has
    // outboxes, so pairs share outboxes and push each other out.
    const OWNERS: usize = 48;
    const SIZES: [usize; 4] = [8, 24, 64, 320];
    let per = 200 * SCALE;
    let (handed, arrivals) = mpsc::channel::<(usize, Vec<(usize, Layout)>)>();
    let mut owners = Vec::new();
    for o in 0..OWNERS {
        let handed = handed.clone();
        let (go, wait) = mpsc::channel::<()>();
        owners.push((
            go,
            thread::spawn(move || {
                let blocks: Vec<(usize, Layout)> = (0..per * SIZES.len())
                    .map(|i| {
                        let layout = Layout::from_size_align(SIZES[i % SIZES.len()], 8).unwrap();
                        // SAFETY: a valid non-zero layout.
                        let p = unsafe { GLOBAL.alloc(layout) };
                        assert!(!p.is_null());
                        (p as usize, layout)
                    })
                    .collect();
                let heap = handoff_alloc::thread_heap();
                let before = heap.map(|h| handoff_alloc::heap_stats(h).unwrap());
                handed.send((o, blocks)).unwrap();
                drop(handed);
                wait.recv().unwrap();
                // Every block freed elsewhere comes back before any new memory: ask
                // for more than were freed, write every byte, then check none overlap.
                let again: Vec<(usize, Layout, u8)> = (0..(per + 64) * SIZES.len())
                    .map(|i| {
                        let layout = Layout::from_size_align(SIZES[i % SIZES.len()], 8).unwrap();
                        // SAFETY: a valid non-zero layout.
                        let p = unsafe { GLOBAL.alloc(layout) };
                        assert!(!p.is_null());
                        // SAFETY: a fresh block of `layout.size()` bytes.
                        unsafe { p.write_bytes(i as u8, layout.size()) };
                        (p as usize, layout, i as u8)
                    })
                    .collect();
                for &(p, layout, tag) in &again {
                    // SAFETY: written above and still live.
                    let bytes =
                        unsafe { std::slice::from_raw_parts(p as *const u8, layout.size()) };
                    assert!(bytes.iter().all(|&b| b == tag), "blocks overlap");
                }
                if let (Some(h), Some(before)) = (heap, before) {
                    let after = handoff_alloc::heap_stats(h).unwrap();
                    assert!(
                        after.remote_frees_reclaimed
                            >= before.remote_frees_reclaimed + (per * SIZES.len()) as u64,
                        "owner {o} did not get its blocks back: {before:?} -> {after:?}"
                    );
                }
                for (p, layout, _) in again {
                    // SAFETY: allocated above with this layout, freed once.
                    unsafe { GLOBAL.dealloc(p as *mut u8, layout) };
                }
            }),
        ));
    }
    drop(handed);
    let mut all: Vec<Vec<(usize, Layout)>> = vec![Vec::new(); OWNERS];
    for (o, blocks) in arrivals.iter() {
        all[o] = blocks;
    }
    // One thread frees them all, owners and classes interleaved.
    thread::spawn(move || {
        drop(Box::new(0u8));
        for i in 0..per * SIZES.len() {
            for blocks in &all {
                let (p, layout) = blocks[i];
                // SAFETY: allocated by its owner with this layout, freed once.
                unsafe { GLOBAL.dealloc(p as *mut u8, layout) };
            }
        }
        handoff_alloc::flush();
    })
    .join()
    .unwrap();
    for (go, h) in owners {
        go.send(()).unwrap();
        h.join().unwrap();
    }
}
