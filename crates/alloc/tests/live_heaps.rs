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

mod resident;

use handoff_alloc::HandoffAlloc;
use resident::{resident_pages, written_blocks};
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

fn resident(blocks: &[usize]) -> usize {
    blocks.iter().map(|&p| resident_pages(p, SIZE)).sum()
}

/// `N` blocks of [`SIZE`] bytes, every byte written.
fn burst() -> Vec<usize> {
    written_blocks(&GLOBAL, N, SIZE)
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

/// On a thread of its own: a burst, freed by `free`, then the thread's ordinary work
/// until no more than [`ALLOWED`] of the burst's pages are resident. Asserts that this
/// happens within 20 s; `whose` names who freed the burst.
fn burst_given_back(whose: &str, free: fn(Vec<usize>)) {
    let (before, after, gave_back) = thread::spawn(move || {
        let blocks = burst();
        free(blocks.clone());
        let before = resident(&blocks);
        assert!(before >= N * 3, "the burst was written: {before} pages");
        let gave_back = keep_working(|| resident(&blocks) <= ALLOWED);
        (before, resident(&blocks), gave_back)
    })
    .join()
    .unwrap();
    eprintln!(
        "{N} blocks of 24 KiB freed by {whose}: {before} pages resident, {after} after the \
         thread that made them kept working"
    );
    assert!(
        gave_back,
        "a live thread kept {after} of the {before} resident pages of a burst freed by \
         {whose} for 20 s"
    );
}

#[test]
fn a_live_thread_gives_back_the_memory_of_a_burst_it_freed_itself() {
    burst_given_back("their own thread", |blocks| free_all(&blocks));
}

#[test]
fn a_live_thread_gives_back_the_memory_of_blocks_others_returned() {
    // Another thread frees them (remote frees, back to this thread's heap), and exits
    // (its outboxes are sent).
    burst_given_back("another thread", |blocks| {
        thread::spawn(move || free_all(&blocks)).join().unwrap()
    });
}
