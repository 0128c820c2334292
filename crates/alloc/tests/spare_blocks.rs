//! A thread that exits leaves the free blocks of its big classes beyond one refill as
//! spares, their pages as they were, and the next heap out of the class takes them
//! before it cuts new blocks; the refill it kept goes to its heap's next thread; the
//! spares nobody takes give their pages back. One test in its own binary, so that no
//! other test's blocks move the counts, and without the test harness (`harness =
//! false`, its own `main`): the harness's main thread allocates while the test runs,
//! and under load (`.ci/run` on 2 busy cores, 2026-12-05) it had made 4 fewer blocks
//! when the test read its starting count (404 live against 408 on a quiet machine, the
//! end count 414 in both), so the live-block check read +10 or +11 against its 8.

// Linux only (it reads /proc/self/pagemap); elsewhere the binary has nothing to run.
#[cfg(not(target_os = "linux"))]
fn main() {}

// Its `written_blocks` is for the other test files.
#[cfg(target_os = "linux")]
#[allow(dead_code)]
mod resident;

#[cfg(all(target_os = "linux", not(handoff_global_alloc)))]
use handoff_alloc::HandoffAlloc;
#[cfg(target_os = "linux")]
use resident::resident_pages;
#[cfg(target_os = "linux")]
use std::hint::black_box;
#[cfg(target_os = "linux")]
use std::thread;

// Under `--cfg handoff_global_alloc` the crate installs it itself.
#[cfg(all(target_os = "linux", not(handoff_global_alloc)))]
#[global_allocator]
static GLOBAL: HandoffAlloc = HandoffAlloc;

#[cfg(target_os = "linux")]
type Big = [u8; 30 << 10];

#[cfg(target_os = "linux")]
fn make(n: usize, tag: u8) -> Vec<Box<Big>> {
    (0..n)
        .map(|_| black_box(Box::new([tag; 30 << 10])))
        .collect()
}

#[cfg(target_os = "linux")]
fn main() {
    an_exited_threads_big_blocks_are_taken_before_new_ones_are_cut();
    println!("spare_blocks: an exited thread's big blocks are taken before new ones are cut: ok");
}

#[cfg(target_os = "linux")]
fn an_exited_threads_big_blocks_are_taken_before_new_ones_are_cut() {
    // Heaps go to threads lowest first: this thread's heap is taken, so each thread
    // below takes the first heap free.
    let _ = make(1, 0);
    let before = handoff_alloc::stats();
    // A thread makes 40 big blocks, frees them and exits: all but a refill's worth
    // (64 KiB: two blocks of this class) become spares, warm.
    let at = |blocks: &[Box<Big>]| -> Vec<usize> {
        blocks.iter().map(|b| &**b as *const Big as usize).collect()
    };
    let (first, made) = thread::spawn(move || {
        let blocks = make(40, 1);
        (handoff_alloc::thread_heap().unwrap(), at(&blocks))
    })
    .join()
    .unwrap();
    let left = handoff_alloc::stats();
    let offered = left.spare_blocks - before.spare_blocks;
    assert!((38..=40).contains(&offered), "{offered} blocks offered");
    let resident =
        |blocks: &[usize]| -> usize { blocks.iter().map(|&p| resident_pages(p, 30 << 10)).sum() };
    // Their whole pages (six or seven in each block's 30 KiB) are as the thread left
    // them (some may have gone back already if this test ran for more than a second:
    // not on a quiet machine).
    let pages: usize = made
        .iter()
        .map(|&p| (((p + (30 << 10)) & !4095) - p.next_multiple_of(4096)) / 4096)
        .sum();
    let warm = resident(&made);
    eprintln!("40 blocks freed, their thread exited: {warm} of their {pages} pages resident");
    assert!(warm * 5 >= pages * 4, "{warm} of {pages} pages resident");
    // The next thread takes that heap and needs two blocks: two of those kept, taken
    // without the spares' lock (and without cutting new ones).
    let (next, reused) = thread::spawn(move || {
        let blocks = make(2, 2);
        (handoff_alloc::thread_heap().unwrap(), at(&blocks))
    })
    .join()
    .unwrap();
    assert_eq!(next, first, "the heaps go to threads lowest first");
    assert!(
        reused.iter().all(|p| made.contains(p)),
        "not the kept blocks: {reused:x?}"
    );
    let left = handoff_alloc::stats();
    assert_eq!(left.spare_taken, before.spare_taken, "spares were taken");
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
    // The spares of the first thread that nobody took give their pages back once
    // nobody has taken them for a second: looked at no more than once a second, when a
    // thread starts or exits (or purges), so within two such looks a second apart.
    let taken = at(&blocks);
    let left_spare: Vec<usize> = made
        .iter()
        .copied()
        .filter(|p| !reused.contains(p) && !taken.contains(p))
        .collect();
    assert!(!left_spare.is_empty(), "every spare was taken");
    let still = resident(&left_spare);
    for _ in 0..2 {
        thread::sleep(std::time::Duration::from_millis(1100));
        thread::spawn(|| drop(black_box(Box::new(0u64))))
            .join()
            .unwrap();
    }
    let cold = resident(&left_spare);
    eprintln!(
        "{} spare blocks nobody took: {still} pages resident, {cold} two seconds later",
        left_spare.len()
    );
    assert_eq!(
        cold,
        0,
        "{cold} pages of {} spare blocks resident",
        left_spare.len()
    );
    drop((blocks, made, reused, taken, left_spare));
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
