//! A thread that lives on and keeps allocating gives back the memory of free blocks it
//! no longer uses: those it freed itself, and those other threads returned to it.
//! Before issue 48's second round a live thread's heap kept every free block resident
//! for as long as the thread lived, so one burst (a wave of work the scheduler let pile
//! up) set its resident memory for good.
//!
//! Each case runs on a thread of its own (so on a heap of its own), waits for the
//! allocator's purge (once a second, on the thread's slow paths; it waits up to 20 s,
//! and asserts nothing about time), and checks with `mincore` which pages of the freed
//! blocks are still resident.

#![cfg(target_os = "linux")]

use handoff_alloc::HandoffAlloc;
use std::alloc::{GlobalAlloc, Layout};
use std::hint::black_box;
use std::thread;
use std::time::{Duration, Instant};

// Under `--cfg handoff_global_alloc` the crate installs it itself.
#[cfg_attr(not(handoff_global_alloc), global_allocator)]
static GLOBAL: HandoffAlloc = HandoffAlloc;

/// 16 KiB + 1 to 24 KiB: blocks of 24 KiB, six whole pages each.
const SIZE: usize = 20_000;
/// The burst: 2 000 blocks, 47 MiB.
const N: usize = 2_000;
const PAGE: usize = 4096;

/// How many of the pages wholly inside `[p, p + len)` are resident (`mincore`).
fn resident_pages(p: usize, len: usize) -> usize {
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

fn resident(blocks: &[usize]) -> usize {
    blocks.iter().map(|&p| resident_pages(p, SIZE)).sum()
}

/// `N` blocks of [`SIZE`] bytes, every byte written.
fn burst() -> Vec<usize> {
    let layout = Layout::from_size_align(SIZE, 8).unwrap();
    (0..N)
        .map(|i| {
            // SAFETY: a valid non-zero layout.
            let p = unsafe { GLOBAL.alloc(layout) };
            assert!(!p.is_null());
            // SAFETY: a fresh block of SIZE bytes.
            unsafe { p.write_bytes(i as u8 | 1, SIZE) };
            p as usize
        })
        .collect()
}

fn free_all(blocks: &[usize]) {
    let layout = Layout::from_size_align(SIZE, 8).unwrap();
    for &p in blocks {
        // SAFETY: allocated by `burst` with this layout, freed once.
        unsafe { GLOBAL.dealloc(p as *mut u8, layout) };
    }
}

/// The thread's ordinary work after the burst: small objects made and freed in
/// hundreds (past a magazine, so the slow paths run), and a few blocks of the burst's
/// class, until `done` says so or 20 s have passed. Returns whether `done` said so.
fn keep_working(mut done: impl FnMut() -> bool) -> bool {
    let layout = Layout::from_size_align(SIZE, 8).unwrap();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        for _ in 0..100 {
            let small: Vec<Box<[u64; 8]>> = (0..500).map(|i| Box::new([i; 8])).collect();
            black_box(&small);
            // SAFETY: a valid non-zero layout; freed just below.
            let few: Vec<*mut u8> = (0..4).map(|_| unsafe { GLOBAL.alloc(layout) }).collect();
            for p in few {
                assert!(!p.is_null());
                // SAFETY: allocated just above with this layout.
                unsafe { GLOBAL.dealloc(p, layout) };
            }
        }
        if done() {
            return true;
        }
        thread::sleep(Duration::from_millis(5));
    }
    false
}

/// At most this many of the burst's pages may stay resident: a magazine's worth of
/// blocks (63), the heap's 64 KiB allowance (3 blocks), and the four the work uses
/// (at most five pages of each lie inside its first [`SIZE`] bytes).
const ALLOWED: usize = (63 + 3 + 4) * 5;

#[test]
fn a_live_thread_gives_back_the_memory_of_a_burst_it_freed_itself() {
    let report = thread::spawn(|| {
        let blocks = burst();
        free_all(&blocks);
        let before = resident(&blocks);
        assert!(before >= N * 3, "the burst was written: {before} pages");
        let gave_back = keep_working(|| resident(&blocks) <= ALLOWED);
        (before, resident(&blocks), gave_back)
    })
    .join()
    .unwrap();
    eprintln!(
        "{N} blocks of 24 KiB freed by their own thread: {} pages resident, {} after the \
         thread kept working",
        report.0, report.1
    );
    assert!(
        report.2,
        "a live thread kept {} of its burst's {} resident pages for 20 s",
        report.1, report.0
    );
}

#[test]
fn a_live_thread_gives_back_the_memory_of_blocks_others_returned() {
    let report = thread::spawn(|| {
        let blocks = burst();
        // Another thread frees them (remote frees, back to this thread's heap), and
        // exits (its outboxes are sent).
        let theirs = blocks.clone();
        thread::spawn(move || free_all(&theirs)).join().unwrap();
        let before = resident(&blocks);
        assert!(before >= N * 3, "the burst was written: {before} pages");
        let gave_back = keep_working(|| resident(&blocks) <= ALLOWED);
        (before, resident(&blocks), gave_back)
    })
    .join()
    .unwrap();
    eprintln!(
        "{N} blocks of 24 KiB freed by another thread: {} pages resident, {} after the \
         owner kept working",
        report.0, report.1
    );
    assert!(
        report.2,
        "a live thread kept {} of the {} resident pages of blocks returned to it for 20 s",
        report.1, report.0
    );
}
