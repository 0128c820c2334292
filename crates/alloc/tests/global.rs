//! handoff-alloc installed as this test binary's global allocator: std collections,
//! cross-thread frees, thread exit with live blocks, every alignment, realloc, and the
//! statistics that show the blocks really came from it. The test harness's own threads
//! allocate through it too.

use handoff_alloc::HandoffAlloc;
use std::alloc::{GlobalAlloc, Layout};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;

// Under `--cfg handoff_global_alloc` the crate installs it itself.
#[cfg_attr(not(handoff_global_alloc), global_allocator)]
static GLOBAL: HandoffAlloc = HandoffAlloc;

const SCALE: usize = if cfg!(debug_assertions) { 1 } else { 10 };

/// A value whose bytes say who made it, checked when it is dropped.
struct Tagged(Vec<u64>);

impl Tagged {
    fn new(tag: u64, len: usize) -> Tagged {
        Tagged(
            (0..len as u64)
                .map(|i| tag ^ i.wrapping_mul(0x9e37_79b9))
                .collect(),
        )
    }
    fn check(&self, tag: u64) {
        for (i, &w) in self.0.iter().enumerate() {
            assert_eq!(
                w,
                tag ^ (i as u64).wrapping_mul(0x9e37_79b9),
                "corrupted block"
            );
        }
    }
}

#[test]
fn std_collections_work_and_come_from_the_arena() {
    let before = handoff_alloc::stats();
    let mut map = HashMap::new();
    let mut tree = BTreeMap::new();
    let mut dq = VecDeque::new();
    for i in 0..20_000 * SCALE {
        map.insert(i, format!("value {i}"));
        tree.insert(format!("{i:08}"), vec![i; i % 17]);
        dq.push_back(Box::new(i));
        if i % 3 == 0 {
            map.remove(&(i / 2));
            dq.pop_front();
        }
    }
    for (k, v) in &map {
        assert_eq!(v, &format!("value {k}"));
    }
    for (k, v) in &tree {
        let i: usize = k.parse().unwrap();
        assert_eq!(v.len(), i % 17);
        assert!(v.iter().all(|&x| x == i));
    }
    let mid = handoff_alloc::stats();
    assert!(
        mid.small_blocks_live > before.small_blocks_live,
        "the collections' blocks are not counted: {before:?} -> {mid:?}"
    );
    assert!(mid.committed_bytes > 0);
    drop((map, tree, dq));
}

#[test]
fn blocks_freed_on_other_threads_are_all_returned_and_reused() {
    const THREADS: usize = 4;
    let per = 50_000 * SCALE;
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..THREADS).map(|_| mpsc::channel::<Tagged>()).unzip();
    let barrier = Arc::new(Barrier::new(THREADS));
    let mut handles = Vec::new();
    for (me, rx) in rxs.into_iter().enumerate() {
        let txs = txs.clone();
        let barrier = barrier.clone();
        handles.push(thread::spawn(move || {
            barrier.wait();
            let mut received = 0;
            for i in 0..per {
                // Each value goes to another thread, which checks and frees it.
                let to = (me + 1 + i % (THREADS - 1)) % THREADS;
                let tag = ((me as u64) << 32) | i as u64;
                txs[to].send(Tagged::new(tag, 1 + i % 40)).unwrap();
                while let Ok(v) = rx.try_recv() {
                    v.check(v.0[0]);
                    received += 1;
                }
            }
            drop(txs);
            (rx, received)
        }));
    }
    drop(txs);
    let mut total = 0;
    let mut rest = Vec::new();
    for h in handles {
        let (rx, n) = h.join().unwrap();
        total += n;
        rest.push(rx);
    }
    for rx in rest {
        for v in rx.iter() {
            v.check(v.0[0]);
            total += 1;
        }
    }
    assert_eq!(total, THREADS * per, "every value arrives once");
    let s = handoff_alloc::stats();
    assert!(s.remote_frees > 0, "no remote frees counted: {s:?}");
}

#[test]
fn a_thread_that_exits_with_live_blocks_leaves_them_collectable() {
    let n = 10_000 * SCALE;
    // The freeing thread claims its own heap first, so the exited thread's heap is
    // not the one it gets.
    let (give, take) = mpsc::channel::<Vec<Tagged>>();
    let freer = thread::spawn(move || {
        drop(Box::new(0u8));
        let mine = handoff_alloc::thread_heap();
        let blocks = take.recv().unwrap();
        for b in &blocks {
            b.check(b.0[0]);
        }
        drop(blocks);
        handoff_alloc::flush();
        mine
    });
    let (blocks, heap) = thread::spawn(move || {
        let blocks: Vec<Tagged> = (0..n).map(|i| Tagged::new(i as u64, 1 + i % 8)).collect();
        (
            blocks,
            handoff_alloc::thread_heap().expect("an allocating thread has a heap"),
        )
        // The thread exits here, its blocks alive in the other thread.
    })
    .join()
    .unwrap();
    let before = handoff_alloc::heap_stats(heap).unwrap();
    assert!(before.blocks_live >= n as u64, "{before:?}");
    give.send(blocks).unwrap();
    assert_ne!(freer.join().unwrap(), Some(heap));
    // The next owner of the exited thread's heap reclaims the blocks when its free
    // lists run dry.
    on_heap(heap, move || {
        let v: Vec<Vec<u64>> = (0..4 * n).map(|i| vec![i as u64; 1 + i % 8]).collect();
        assert!(v.iter().enumerate().all(|(i, b)| b[0] == i as u64));
    });
    let after = handoff_alloc::heap_stats(heap).unwrap();
    assert!(
        after.remote_frees_reclaimed >= before.remote_frees_reclaimed + n as u64,
        "the exited heap's blocks were not reclaimed by its next owner: {before:?} -> {after:?}"
    );
    assert!(after.owners > before.owners);
}

/// A job for a thread that owns a given heap.
type Job = Box<dyn FnOnce() + Send>;

/// Runs `f` on a new thread that owns heap `heap`: new threads claim heaps and hold
/// them until one has it (a thread claims the lowest free heap), then that one runs `f`
/// and the others exit.
fn on_heap(heap: usize, f: impl FnOnce() + Send + 'static) {
    let (report, reports) = mpsc::channel();
    let mut holders = Vec::new();
    let mut found = None;
    for _ in 0..127 {
        let (go, wait) = mpsc::channel::<Option<Job>>();
        let report = report.clone();
        holders.push((
            go,
            thread::spawn(move || {
                drop(Box::new(0u8));
                report.send(handoff_alloc::thread_heap()).unwrap();
                if let Some(job) = wait.recv().unwrap() {
                    job();
                }
            }),
        ));
        if reports.recv().unwrap() == Some(heap) {
            found = Some(holders.len() - 1);
            break;
        }
    }
    let found = found.expect("no new thread got the heap");
    let mut job: Option<Job> = Some(Box::new(f));
    for (i, (go, h)) in holders.into_iter().enumerate() {
        go.send(if i == found { job.take() } else { None }).unwrap();
        h.join().unwrap();
    }
}

#[test]
fn a_class_left_all_free_at_thread_exit_starts_over_in_address_order() {
    // 16 KiB + 1 to 24 KiB: a class no other test here uses.
    const SIZE: usize = 20_000;
    const BLOCK: usize = 24 * 1024;
    let layout = Layout::from_size_align(SIZE, 8).unwrap();
    let alloc_all = move |n: usize| -> Vec<usize> {
        (0..n)
            .map(|i| {
                // SAFETY: a valid non-zero layout.
                let p = unsafe { GLOBAL.alloc(layout) };
                assert!(!p.is_null());
                // SAFETY: a fresh block of SIZE bytes.
                unsafe { p.write_bytes(i as u8, SIZE) };
                p as usize
            })
            .collect()
    };
    let free_all = move |blocks: &[usize]| {
        for &p in blocks {
            // SAFETY: allocated by `alloc_all` with this layout, freed once.
            unsafe { GLOBAL.dealloc(p as *mut u8, layout) };
        }
    };
    let (heap, lowest) = thread::spawn(move || {
        let blocks = alloc_all(300);
        let heap = handoff_alloc::thread_heap().unwrap();
        let carved = handoff_alloc::heap_stats(heap).unwrap().blocks_carved;
        assert!(carved >= 300, "{carved}");
        // Freed in a scrambled order, which is the order the free list keeps.
        let mut order = blocks.clone();
        order.sort_by_key(|&p| p.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        free_all(&order);
        (heap, *blocks.iter().min().unwrap())
    })
    .join()
    .unwrap();
    let after = handoff_alloc::heap_stats(heap).unwrap();
    assert!(
        after.blocks_carved < 300,
        "the exited thread's free blocks were not forgotten: {after:?}"
    );
    on_heap(heap, move || {
        let blocks = alloc_all(300);
        assert_eq!(
            blocks[0], lowest,
            "the class starts over at the same memory"
        );
        assert!(
            blocks.windows(2).all(|w| w[1] == w[0] + BLOCK),
            "not in address order"
        );
        free_all(&blocks);
    });
}

#[test]
fn every_alignment_and_size_is_honoured_and_disjoint() {
    let mut live: Vec<(*mut u8, Layout, u8)> = Vec::new();
    let mut k = 0u8;
    for shift in 0..=16 {
        let align = 1usize << shift;
        for size in [
            1,
            7,
            8,
            9,
            24,
            40,
            100,
            1000,
            4096,
            5000,
            32768,
            32769,
            200_000,
            2 << 20,
        ] {
            let layout = Layout::from_size_align(size, align).unwrap();
            // SAFETY: a valid non-zero layout.
            let p = unsafe { GLOBAL.alloc(layout) };
            assert!(!p.is_null());
            assert_eq!(p as usize % align, 0, "size {size} align {align}");
            k = k.wrapping_add(1);
            // SAFETY: `p` is a fresh block of `size` bytes.
            unsafe { std::ptr::write_bytes(p, k, size) };
            live.push((p, layout, k));
        }
    }
    for &(p, layout, k) in &live {
        // SAFETY: every block is live and was filled with its `k`.
        let bytes = unsafe { std::slice::from_raw_parts(p, layout.size()) };
        assert!(bytes.iter().all(|&b| b == k), "a block was overwritten");
    }
    for (p, layout, _) in live {
        // SAFETY: allocated above with this layout.
        unsafe { GLOBAL.dealloc(p, layout) };
    }
    // Zeroed blocks are zero, also when they reuse freed memory.
    for size in [8, 100, 5000, 40_000, 3 << 20] {
        let layout = Layout::from_size_align(size, 8).unwrap();
        for _ in 0..3 {
            // SAFETY: a valid non-zero layout.
            let p = unsafe { GLOBAL.alloc_zeroed(layout) };
            // SAFETY: `p` is a live block of `size` bytes.
            let bytes = unsafe { std::slice::from_raw_parts_mut(p, size) };
            assert!(bytes.iter().all(|&b| b == 0));
            bytes.fill(0xAB);
            // SAFETY: allocated above.
            unsafe { GLOBAL.dealloc(p, layout) };
        }
    }
}

#[test]
fn realloc_keeps_the_bytes_and_stays_in_place_within_a_class() {
    let layout = Layout::from_size_align(40, 8).unwrap();
    // SAFETY: a valid non-zero layout.
    let p = unsafe { GLOBAL.alloc(layout) };
    // SAFETY: a live block of 40 bytes.
    unsafe { std::ptr::write_bytes(p, 7, 40) };
    // 40 and 48 share the 48-byte class.
    // SAFETY: `p` is live with `layout`; 48 is a valid size.
    let q = unsafe { GLOBAL.realloc(p, layout, 48) };
    assert_eq!(p, q, "a realloc within the class moved the block");
    let mut v: Vec<u8> = Vec::new();
    let mut expect = Vec::new();
    for i in 0..300_000u32 {
        v.push(i as u8);
        expect.push(i as u8);
        if i % 1000 == 999 {
            v.shrink_to_fit();
        }
    }
    assert_eq!(v, expect);
    while v.len() > 10 {
        let keep = v.len() / 3;
        v.truncate(keep);
        v.shrink_to_fit();
        assert_eq!(v[..], expect[..keep]);
    }
    // SAFETY: `q` is live with a 48-byte layout.
    unsafe { GLOBAL.dealloc(q, Layout::from_size_align(48, 8).unwrap()) };
}

/// Fills `len` bytes at `p` with a pattern of `seed`.
fn stamp(p: *mut u8, len: usize, seed: u8) {
    // SAFETY: the caller's live block of at least `len` bytes.
    let bytes = unsafe { std::slice::from_raw_parts_mut(p, len) };
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = seed ^ (i as u8).wrapping_mul(31) ^ (i >> 12) as u8;
    }
}

fn stamped(p: *mut u8, len: usize, seed: u8) -> bool {
    // SAFETY: as in `stamp`.
    let bytes = unsafe { std::slice::from_raw_parts(p, len) };
    bytes
        .iter()
        .enumerate()
        .all(|(i, &b)| b == seed ^ (i as u8).wrapping_mul(31) ^ (i >> 12) as u8)
}

#[test]
fn very_large_blocks_grow_by_moving_their_mapping_and_keep_every_byte() {
    for align in [8, 4096, 16384] {
        let mut size = 40_000;
        let mut layout = Layout::from_size_align(size, align).unwrap();
        // SAFETY: a valid non-zero layout.
        let mut p = unsafe { GLOBAL.alloc(layout) };
        assert!(!p.is_null());
        stamp(p, size, align as u8);
        // 40 KB up to 40 MB, then down and up again: from small to very large, in
        // place, moved, and copied (alignment beyond a page cannot move).
        for new_size in [
            300_000, 2_000_000, 2_100_000, 9_000_000, 40_000_000, 1_500_000, 33_000, 5_000_000,
        ] {
            // SAFETY: `p` is live with `layout`; the new size is valid at `align`.
            let q = unsafe { GLOBAL.realloc(p, layout, new_size) };
            assert!(!q.is_null());
            assert_eq!(
                q.addr() % align,
                0,
                "align {align}: realloc lost the alignment"
            );
            let kept = size.min(new_size);
            assert!(
                stamped(q, kept, align as u8),
                "align {align}: {size} -> {new_size}"
            );
            // Every new byte is usable.
            stamp(q, new_size, align as u8);
            p = q;
            size = new_size;
            layout = Layout::from_size_align(size, align).unwrap();
        }
        let live = handoff_alloc::stats().big_bytes_live;
        assert!(live >= size as u64, "{live} bytes live, {size} held");
        // SAFETY: `p` is live with `layout`.
        unsafe { GLOBAL.dealloc(p, layout) };
    }
}

#[test]
fn a_thousand_short_threads_reuse_heaps() {
    let before = handoff_alloc::stats();
    for round in 0..100 {
        let hs: Vec<_> = (0..10)
            .map(|t| {
                thread::spawn(move || {
                    let v: Vec<Vec<usize>> = (0..100).map(|i| vec![round + t + i; 10]).collect();
                    v.iter().filter(|b| b.len() == 10).count()
                })
            })
            .collect();
        for h in hs {
            assert_eq!(h.join().unwrap(), 100);
        }
    }
    let after = handoff_alloc::stats();
    // 1000 threads, never more than a few dozen heaps: exited heaps are reused.
    assert!(after.heaps_used < 100, "{before:?} -> {after:?}");
}

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
