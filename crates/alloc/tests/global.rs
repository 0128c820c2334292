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

mod common;
use common::{Tagged, SCALE};

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
