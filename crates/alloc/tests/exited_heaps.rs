//! Heaps whose threads have exited: the blocks other threads free to them afterwards
//! are used again by live threads that run out of their class, instead of waiting for
//! a new thread to claim that exact heap, and so are the free blocks they kept; an
//! exited thread's free blocks give their pages back and come out in address order
//! for the heap's next owner; a thread that found every heap taken gets one as soon as
//! one is free.
//!
//! They follow particular heaps and blocks through the allocator's statistics, so they
//! run one after the other in one test of their own binary: a test harness thread
//! waiting for its turn could otherwise own the heap one of them watches.

#![cfg(target_os = "linux")]

mod common;
mod resident;

use common::{Tagged, SCALE};
use handoff_alloc::HandoffAlloc;
use resident::{resident_pages, written_blocks};
use std::alloc::{GlobalAlloc, Layout};
use std::hint::black_box;
use std::sync::{mpsc, Arc, Barrier};
use std::thread;

// Under `--cfg handoff_global_alloc` the crate installs it itself.
#[cfg_attr(not(handoff_global_alloc), global_allocator)]
static GLOBAL: HandoffAlloc = HandoffAlloc;

const WORKERS: usize = 100;
const PER_WORKER: usize = 1000;

/// Blocks cut from the arena so far, over every heap.
fn carved() -> u64 {
    (0..128)
        .filter_map(handoff_alloc::heap_stats)
        .map(|h| h.blocks_carved)
        .sum()
}

type Block = Box<[u64; 12]>;

fn blocks_freed_to_exited_workers_are_reused() {
    // The workers run at once, so each has a heap of its own; each hands its blocks
    // to this thread and exits.
    let start = Arc::new(Barrier::new(WORKERS));
    let (tx, rx) = mpsc::channel::<Vec<Block>>();
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (start, tx) = (start.clone(), tx.clone());
            thread::spawn(move || {
                start.wait();
                let blocks: Vec<Block> = (0..PER_WORKER)
                    .map(|k| black_box(Box::new([(w * PER_WORKER + k) as u64; 12])))
                    .collect();
                tx.send(blocks).unwrap();
            })
        })
        .collect();
    drop(tx);
    let batches: Vec<Vec<Block>> = rx.iter().collect();
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(batches.len(), WORKERS);
    // Freed here, after their owners exited: remote frees to heaps nobody owns.
    drop(batches);
    handoff_alloc::flush();

    let before = carved();
    let again: Vec<Block> = (0..WORKERS * PER_WORKER)
        .map(|k| black_box(Box::new([k as u64; 12])))
        .collect();
    let cut = carved() - before;
    eprintln!(
        "{} blocks allocated after {WORKERS} workers exited: {cut} cut anew",
        again.len()
    );
    assert!(
        cut < (WORKERS * PER_WORKER / 10) as u64,
        "{cut} of {} blocks were cut anew while {} freed ones waited on exited heaps",
        again.len(),
        WORKERS * PER_WORKER
    );
    assert!(again.iter().enumerate().all(|(k, b)| b[11] == k as u64));
}

fn blocks_their_own_threads_freed_before_exiting_are_borrowed() {
    // Eight threads each make and free their own blocks, then exit: the blocks wait
    // in their heaps' depots. Until issue 48 only blocks other threads returned to an
    // exited heap were borrowed: this thread cut 399 993 of 400 000 anew.
    const THREADS: usize = 8;
    let n = 5_000 * SCALE;
    type Odd = Box<[u64; 20]>; // 160 bytes: a class no other test here uses
                               // Alive at once, so each has a heap of its own.
    let all_made = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let all_made = all_made.clone();
            thread::spawn(move || {
                let mine: Vec<Odd> = (0..n)
                    .map(|k| black_box(Box::new([(t * n + k) as u64; 20])))
                    .collect();
                all_made.wait();
                drop(mine);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let before = carved();
    let lent = handoff_alloc::stats().orphan_blocks_lent;
    let again: Vec<Odd> = (0..THREADS * n)
        .map(|k| black_box(Box::new([k as u64; 20])))
        .collect();
    let cut = carved() - before;
    let lent = handoff_alloc::stats().orphan_blocks_lent - lent;
    eprintln!(
        "{} blocks allocated after {THREADS} threads freed as many and exited: {cut} cut \
         anew, {lent} lent by their heaps",
        again.len()
    );
    assert!(
        cut < (THREADS * n / 10) as u64,
        "{cut} of {} blocks were cut anew while {} freed ones waited in exited heaps",
        again.len(),
        THREADS * n
    );
    assert!(again.iter().enumerate().all(|(k, b)| b[19] == k as u64));
}

fn a_thread_on_the_shared_heap_gets_one_when_a_heap_frees_up() {
    // Threads claim heaps until one finds none left. Each serves the questions it is
    // sent (which heap do you allocate from now?) until its channel closes.
    let mut holders = Vec::new();
    let shared = loop {
        let (report, reported) = mpsc::channel();
        let (ask, questions) = mpsc::channel::<mpsc::Sender<Option<usize>>>();
        let t = thread::spawn(move || {
            drop(black_box(Box::new(0u8)));
            report.send(handoff_alloc::thread_heap()).unwrap();
            for answer in questions {
                drop(black_box(vec![0u64; 4]));
                answer.send(handoff_alloc::thread_heap()).unwrap();
            }
        });
        let heap = reported.recv().unwrap();
        holders.push((ask, t));
        if heap.is_none() {
            break holders.len() - 1;
        }
        assert!(holders.len() < 1000, "heaps never ran out");
    };
    let heap_of = |ask: &mpsc::Sender<mpsc::Sender<Option<usize>>>| {
        let (answer, got) = mpsc::channel();
        ask.send(answer).unwrap();
        got.recv().unwrap()
    };
    assert_eq!(heap_of(&holders[shared].0), None, "every heap is taken");
    // One holder exits: its heap is free.
    let (ask, t) = holders.remove(0);
    drop(ask);
    t.join().unwrap();
    let shared = holders.len() - 1;
    assert!(
        heap_of(&holders[shared].0).is_some(),
        "the thread stayed on the shared heap"
    );
    for (ask, t) in holders {
        drop(ask);
        t.join().unwrap();
    }
}

fn a_thread_that_exits_with_live_blocks_leaves_them_collectable() {
    let n = 10_000 * SCALE;
    // The blocks other threads returned to this thread's heap (in the tests before)
    // go into its depots first: otherwise the thread below, out of a class, takes them
    // (a heap takes the returned blocks another heap's thread has not taken before it
    // cuts new ones), and more of its blocks are not its own heap's, which `heap_stats`
    // counts.
    handoff_alloc::trim();
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
    // A few of its blocks may be blocks other threads returned to this thread's heap
    // since (thread starts and exits free some), which it took before cutting new
    // ones: 6 or 7 of 10 000 in this test's runs.
    assert!(before.blocks_live >= (n - n / 100) as u64, "{before:?}");
    give.send(blocks).unwrap();
    assert_ne!(freer.join().unwrap(), Some(heap));
    // The blocks wait on the exited thread's heap until a thread whose own heap runs
    // dry of their class takes them (or a new thread claims that heap).
    let reclaimed = || handoff_alloc::stats().remote_frees_reclaimed;
    let want = reclaimed() + n as u64;
    let got = thread::spawn(move || {
        let mut v: Vec<Vec<u64>> = Vec::new();

        for i in 0..8 * n {
            v.push(vec![i as u64; 1 + i % 8]);
            if i % 64 == 0 && reclaimed() >= want {
                break;
            }
        }
        assert!(v.iter().enumerate().all(|(i, b)| b[0] == i as u64));
        reclaimed()
    })
    .join()
    .unwrap();
    assert!(
        got >= want,
        "the exited thread's blocks were not taken back: {got} of {want} reclaimed, heap \
         {heap} {:?}",
        handoff_alloc::heap_stats(heap)
    );
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

/// A thread that has taken a heap of its own and exits when told: a thread's exit is a
/// moment when heaps left idle give their memory back.
struct Later {
    go: mpsc::Sender<()>,
    thread: thread::JoinHandle<()>,
}

impl Later {
    fn start() -> Later {
        let (go, wait) = mpsc::channel::<()>();
        let (ready, is_ready) = mpsc::channel::<()>();
        let thread = thread::spawn(move || {
            drop(black_box(Box::new(0u64)));
            ready.send(()).unwrap();
            wait.recv().unwrap();
        });
        is_ready.recv().unwrap();
        Later { go, thread }
    }

    fn exit(self) {
        self.go.send(()).unwrap();
        self.thread.join().unwrap();
    }
}

fn a_class_left_all_free_at_thread_exit_keeps_its_order_and_gives_its_memory_back() {
    // 4 KiB + 1 to 6 KiB: a class no other test here uses, below the size whose free
    // blocks a thread leaves spare when it exits (tests/spare_blocks.rs): its heap
    // keeps them all.
    const SIZE: usize = 6_000;
    const BLOCK: usize = 6 * 1024;
    const N: usize = 300;
    let layout = Layout::from_size_align(SIZE, 8).unwrap();
    let alloc_all = move |n: usize| -> Vec<usize> { written_blocks(&GLOBAL, n, SIZE) };
    let free_all = move |blocks: &[usize]| {
        for &p in blocks {
            // SAFETY: allocated by `alloc_all` with this layout, freed once.
            unsafe { GLOBAL.dealloc(p as *mut u8, layout) };
        }
    };
    // The pages of the span the blocks lie in (cut one after the other).
    let resident = |blocks: &[usize]| -> usize {
        let (lo, hi) = (blocks.iter().min().unwrap(), blocks.iter().max().unwrap());
        resident_pages(*lo, hi + SIZE - lo)
    };
    // A thread that exits after the one that uses the class, to give the exited heap's
    // memory back once it has been idle long enough.
    let later = Later::start();
    let (heap, blocks, carved) = thread::spawn(move || {
        let blocks = alloc_all(N);
        let heap = handoff_alloc::thread_heap().unwrap();
        let carved = handoff_alloc::heap_stats(heap).unwrap().blocks_carved;
        assert!(carved >= N as u64, "{carved}");
        // Freed in a scrambled order, which is the order the depot keeps.
        let mut order = blocks.clone();
        order.sort_by_key(|&p| p.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        free_all(&order);
        (heap, blocks, carved)
    })
    .join()
    .unwrap();
    // The blocks are kept for the next owner (none forgotten, none cut again).
    let after = handoff_alloc::heap_stats(heap).unwrap();
    assert_eq!(
        after.blocks_carved, carved,
        "blocks were forgotten: {after:?}"
    );
    let before = resident(&blocks);
    assert!(
        before >= N * BLOCK / 4096 - 16,
        "the blocks were written: {before} pages resident"
    );
    // Idle for more than a second, the heap gives their pages back when a thread exits
    // (beyond its allowance of 64 KiB: 16 pages, and the pages at the ends).
    thread::sleep(std::time::Duration::from_millis(1200));
    later.exit();
    let idle = resident(&blocks);
    eprintln!(
        "{N} free blocks of 6 KiB: {before} of {} pages resident after their thread exited, \
         {idle} after a second idle and another thread's exit",
        N * BLOCK / 4096
    );
    assert!(
        idle <= 16 + 4,
        "{idle} pages of the exited thread's {N} free blocks stay resident"
    );
    let lowest = *blocks.iter().min().unwrap();
    on_heap(heap, move || {
        let again = alloc_all(N);
        assert_eq!(
            again[0], lowest,
            "the class starts again at its lowest block"
        );
        assert!(
            again.windows(2).all(|w| w[1] == w[0] + BLOCK),
            "not in address order"
        );
        // Trimmed at once by its owner.
        free_all(&again);
        handoff_alloc::trim();
        let trimmed = resident(&again);
        assert!(trimmed <= 16 + 4, "{trimmed} pages resident after trim");
    });
}

fn blocks_returned_after_an_exited_heap_gave_its_memory_back_give_theirs_back_too() {
    // 2 KiB + 1 to 3 KiB: a class no other test here uses, below the size whose pages
    // go back as soon as the block is freed to a heap nobody owns.
    const SIZE: usize = 2500;
    const N: usize = 2000;
    let layout = Layout::from_size_align(SIZE, 8).unwrap();
    // The pages of the span the blocks lie in (cut one after the other, from a class
    // region of their own).
    let resident = |blocks: &[usize]| -> usize {
        let (lo, hi) = (blocks.iter().min().unwrap(), blocks.iter().max().unwrap());
        resident_pages(*lo, hi + SIZE - lo)
    };
    // A thread that exits later, to give idle heaps' memory back.
    let later = Later::start();
    // A thread makes the blocks, hands them over and exits.
    let blocks = thread::spawn(move || written_blocks(&GLOBAL, N, SIZE))
        .join()
        .unwrap();
    // Its heap's idle memory goes back while this thread still holds the blocks.
    handoff_alloc::trim();
    // Then they come back to the heap nobody owns.
    for &p in &blocks {
        // SAFETY: allocated by `written_blocks` with this layout, freed once.
        unsafe { GLOBAL.dealloc(p as *mut u8, layout) };
    }
    handoff_alloc::flush();
    let before = resident(&blocks);
    assert!(before >= N / 2, "the blocks were written: {before} pages");
    // Once that heap has been idle for more than a second since they came, a thread's
    // exit gives their pages back (beyond the heap's 64 KiB allowance: 16 pages).
    thread::sleep(std::time::Duration::from_millis(1200));
    later.exit();
    let idle = resident(&blocks);
    eprintln!(
        "{N} blocks of 3 KiB returned to an exited heap after its memory went back: \
         {before} pages resident, {idle} after a second idle and another thread's exit"
    );
    assert!(
        idle <= 16 + 4,
        "{idle} of their pages stay resident: blocks returned to a heap after its idle \
         memory went back keep theirs"
    );
}

#[test]
fn heaps_of_exited_threads() {
    blocks_freed_to_exited_workers_are_reused();
    blocks_their_own_threads_freed_before_exiting_are_borrowed();
    a_thread_that_exits_with_live_blocks_leaves_them_collectable();
    a_class_left_all_free_at_thread_exit_keeps_its_order_and_gives_its_memory_back();
    blocks_returned_after_an_exited_heap_gave_its_memory_back_give_theirs_back_too();
    a_thread_on_the_shared_heap_gets_one_when_a_heap_frees_up();
}
