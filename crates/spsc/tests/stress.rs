//! Two threads, many items: every item arrives once, in order, and the checksum
//! matches, on the single-item, slice and chunk paths, and through the stamped ring.
//! Sizes shrink under Miri.
#![cfg(not(loom))]

// Under `--cfg handoff_global_alloc` (.ci/run) handoff-alloc is this test's global allocator.
#[cfg(handoff_global_alloc)]
use handoff_alloc as _;

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::{count, counter, spin, Counted};
use handoff_spsc::{channel, channel_with, stamped, Options};

/// Items per stress run: 10 million, 1,000 under Miri, or `HANDOFF_STRESS_ITEMS`
/// (ThreadSanitizer in CI scales it down).
fn n_items() -> u64 {
    let default = if cfg!(miri) { 1_000 } else { 10_000_000 };
    std::env::var("HANDOFF_STRESS_ITEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
/// Items made of a `Drop` type are slower; they still cover every wrap many times.
const N_DROP: u64 = if cfg!(miri) { 500 } else { 1_000_000 };

/// A 16-byte item like the documents' market tick, with a self-check.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Tick {
    seq: u64,
    check: u64,
}

fn tick(seq: u64) -> Tick {
    Tick {
        seq,
        check: seq.wrapping_mul(0x9e37_79b9_7f4a_7c15),
    }
}

/// Checks one received tick: sequence, integrity, running checksum.
struct Checker {
    next: u64,
    sum: u64,
}

impl Checker {
    fn new() -> Self {
        Checker { next: 0, sum: 0 }
    }
    fn see(&mut self, t: Tick) {
        assert_eq!(t.seq, self.next, "item lost, duplicated or reordered");
        assert_eq!(
            t.check,
            t.seq.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            "item corrupted"
        );
        self.sum = self.sum.wrapping_add(t.seq ^ t.check);
        self.next += 1;
    }
    fn finish(self, n: u64) {
        assert_eq!(self.next, n);
        let expected = (0..n).fold(0u64, |s, i| s.wrapping_add(i ^ tick(i).check));
        assert_eq!(self.sum, expected, "checksum mismatch");
    }
}

/// The two halves of either heap ring, so that each two-thread test runs on both.
trait Tx<T>: Send + 'static {
    fn push(&mut self, v: T) -> Result<(), T>;
    fn abandoned(&self) -> bool;
}
trait Rx<T>: Send + 'static {
    fn pop(&mut self) -> Option<T>;
}

impl<T: Send + 'static> Tx<T> for handoff_spsc::Producer<T> {
    fn push(&mut self, v: T) -> Result<(), T> {
        self.try_push(v).map_err(|e| e.into_inner())
    }
    fn abandoned(&self) -> bool {
        self.is_abandoned()
    }
}
impl<T: Send + 'static> Rx<T> for handoff_spsc::Consumer<T> {
    fn pop(&mut self) -> Option<T> {
        self.try_pop().ok()
    }
}
impl<T: Send + 'static> Tx<T> for stamped::Producer<T> {
    fn push(&mut self, v: T) -> Result<(), T> {
        self.try_push(v).map_err(|e| e.into_inner())
    }
    fn abandoned(&self) -> bool {
        self.is_abandoned()
    }
}
impl<T: Send + 'static> Rx<T> for stamped::Consumer<T> {
    fn pop(&mut self) -> Option<T> {
        self.try_pop().ok()
    }
}

fn single_items_through(mut tx: impl Tx<Tick>, mut rx: impl Rx<Tick>) {
    let producer = std::thread::spawn(move || {
        for i in 0..n_items() {
            let mut t = tick(i);
            while let Err(back) = tx.push(t) {
                t = back;
                std::hint::spin_loop();
            }
        }
    });
    let mut check = Checker::new();
    for _ in 0..n_items() {
        check.see(spin(|| rx.pop()));
    }
    producer.join().unwrap();
    assert!(rx.pop().is_none());
    check.finish(n_items());
}

#[test]
fn single_items_arrive_once_and_in_order() {
    let (tx, rx) = channel::<Tick>(if cfg!(miri) { 7 } else { 1024 });
    single_items_through(tx, rx);
}

/// With temporal slipping (asked for; a ring of 256 slots is the smallest that slips)
/// and without it (the default), Miri included, so the waits run under Miri too.
#[test]
fn single_items_arrive_once_and_in_order_slipping_or_not() {
    for slip in [true, false] {
        let (tx, rx) = channel_with::<Tick>(256, Options::new().slipping(slip));
        assert_eq!((tx.slips(), rx.slips()), (slip, slip));
        single_items_through(tx, rx);
    }
}

#[test]
fn stamped_single_items_arrive_once_and_in_order() {
    let (tx, rx) = stamped::channel::<Tick>(if cfg!(miri) { 7 } else { 1024 });
    single_items_through(tx, rx);
}

#[test]
fn slices_arrive_once_and_in_order() {
    let (mut tx, mut rx) = channel::<Tick>(if cfg!(miri) { 13 } else { 1000 });
    let producer = std::thread::spawn(move || {
        let mut next = 0u64;
        let mut buf = Vec::with_capacity(97);
        while next < n_items() {
            // Varying batch sizes hit every wrap position.
            let want = (1 + next % 97).min(n_items() - next);
            buf.clear();
            buf.extend((next..next + want).map(tick));
            let n = tx.push_slice(&buf) as u64;
            next += n;
            if n == 0 {
                std::hint::spin_loop();
            }
        }
    });
    let mut check = Checker::new();
    let mut buf = [tick(0); 61];
    while check.next < n_items() {
        let len = 1 + (check.next % 61) as usize;
        let n = rx.pop_slice(&mut buf[..len]);
        for t in &buf[..n] {
            check.see(*t);
        }
    }
    producer.join().unwrap();
    check.finish(n_items());
}

#[test]
fn chunks_arrive_once_and_in_order() {
    let (mut tx, mut rx) = channel::<Tick>(if cfg!(miri) { 16 } else { 1024 });
    let producer = std::thread::spawn(move || {
        let mut next = 0u64;
        while next < n_items() {
            let want = ((1 + next % 50).min(n_items() - next)) as usize;
            let mut chunk = tx.write_chunk(want);
            let n = chunk.extend((next..).map(tick).take(want)) as u64;
            chunk.commit();
            next += n;
        }
    });
    let mut check = Checker::new();
    while check.next < n_items() {
        let want = 1 + (check.next % 40) as usize;
        let mut chunk = rx.read_chunk(want);
        // Alternate between moving items out and reading them in place.
        if check.next.is_multiple_of(2) {
            for t in &mut chunk {
                check.see(t);
            }
        } else {
            let (a, b) = chunk.as_slices();
            let items: Vec<Tick> = a.iter().chain(b).copied().collect();
            for t in items {
                check.see(t);
            }
            let len = chunk.len();
            assert_eq!(chunk.consume(len), len);
        }
    }
    producer.join().unwrap();
    check.finish(n_items());
}

/// The producer pushes owned items until the consumer, after taking half of them,
/// leaves; every item created is dropped exactly once: refused ones by the producer,
/// the ones still inside by whichever half goes last.
fn owned_items_dropped_once(make: impl FnOnce() -> (Box<dyn Tx<Counted>>, Box<dyn Rx<Counted>>)) {
    let drops = counter();
    let (mut tx, mut rx) = make();
    let d = Arc::clone(&drops);
    let producer = std::thread::spawn(move || {
        let mut created = 0u64;
        'outer: for i in 0..N_DROP {
            let mut item = Counted::new(i, &d);
            created += 1;
            while let Err(back) = tx.push(item) {
                item = back;
                if tx.abandoned() {
                    break 'outer;
                }
                std::hint::spin_loop();
            }
        }
        created
    });
    let take = N_DROP / 2;
    let received = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&received);
    let consumer = std::thread::spawn(move || {
        for next in 0..take {
            let item = spin(|| rx.pop());
            assert_eq!(item.id, next);
            r.fetch_add(1, Ordering::Relaxed);
        }
        // Leave with items still inside.
    });
    consumer.join().unwrap();
    let created = producer.join().unwrap();
    assert_eq!(received.load(Ordering::Relaxed) as u64, take);
    assert!(created > take);
    assert_eq!(
        count(&drops) as u64,
        created,
        "every created item dropped exactly once"
    );
}

#[test]
fn owned_items_are_each_dropped_once_across_threads() {
    owned_items_dropped_once(|| {
        let (tx, rx) = channel::<Counted>(if cfg!(miri) { 5 } else { 256 });
        (Box::new(tx), Box::new(rx))
    });
}

#[test]
fn stamped_owned_items_are_each_dropped_once_across_threads() {
    owned_items_dropped_once(|| {
        let (tx, rx) = stamped::channel::<Counted>(if cfg!(miri) { 5 } else { 256 });
        (Box::new(tx), Box::new(rx))
    });
}
