//! Two-thread stress tests: an allocating thread sends objects through a
//! `handoff_spsc` ring to a releasing thread, for millions of cycles. Each slot has an
//! ownership marker that the allocator sets (it must have been clear) and the releaser
//! clears (it must have been set), so a slot handed out twice fails at once; every
//! object carries its sequence number and a checksum, checked in order; at the end
//! every slot must be allocatable again (none lost). Scaled down under Miri, and by
//! `HANDOFF_STRESS_ITEMS` (ThreadSanitizer in CI).

// Under `--cfg handoff_global_alloc` (.ci/run) handoff-alloc is this test's global allocator.
#[cfg(handoff_global_alloc)]
use handoff_alloc as _;

mod common;

use std::sync::atomic::{AtomicBool, Ordering};

use handoff_pool::{arena, return_queue, ArenaBox, PoolBox};

fn items() -> u64 {
    let default = if cfg!(miri) { 1_000 } else { 10_000_000 };
    std::env::var("HANDOFF_STRESS_ITEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A 64-byte object like document 000's Order.
#[repr(C, align(64))]
struct Order {
    seq: u64,
    check: u64,
    _fill: [u64; 6],
}

impl Order {
    fn new(seq: u64) -> Self {
        Order {
            seq,
            check: seq.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            _fill: [seq; 6],
        }
    }

    fn verify(&self, seq: u64) {
        assert_eq!(self.seq, seq, "out of order or lost");
        assert_eq!(
            self.check,
            seq.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            "torn object"
        );
        assert!(self._fill.iter().all(|&f| f == seq), "torn object");
    }
}

struct Markers(Vec<AtomicBool>);

impl Markers {
    fn new(n: usize) -> Self {
        Markers((0..n).map(|_| AtomicBool::new(false)).collect())
    }
    fn take(&self, slot: usize) {
        assert!(
            !self.0[slot].swap(true, Ordering::Relaxed),
            "slot {slot} handed out twice"
        );
    }
    fn give(&self, slot: usize) {
        assert!(
            self.0[slot].swap(false, Ordering::Relaxed),
            "slot {slot} released but not owned"
        );
    }
    fn all_clear(&self) -> bool {
        self.0.iter().all(|m| !m.load(Ordering::Relaxed))
    }
}

fn push<T>(tx: &mut handoff_spsc::Producer<T>, item: T) {
    common::retry(item, |v| tx.try_push(v), |e| e.into_inner());
}

fn run_return_queue(config: return_queue::Config, ring: usize) {
    let n = items();
    let markers = Markers::new(config.slots);
    let (mut alloc, mut release) = return_queue::new::<Order>(config).unwrap();
    let (mut tx, mut rx) = handoff_spsc::channel::<PoolBox<Order>>(ring);
    std::thread::scope(|s| {
        let markers = &markers;
        let consumer = s.spawn(move || {
            for seq in 0..n {
                let order = loop {
                    if let Ok(o) = rx.try_pop() {
                        break o;
                    }
                    // Slots waiting for room in the return ring must not starve the
                    // allocator while we wait.
                    release.flush();
                    std::hint::spin_loop();
                };
                order.verify(seq);
                markers.give(order.slot());
                release.free(order).unwrap();
            }
            release
        });
        for seq in 0..n {
            let order = common::retry(Order::new(seq), |o| alloc.try_alloc(o), |e| e.into_inner());
            markers.take(order.slot());
            push(&mut tx, order);
        }
        let mut release = consumer.join().unwrap();
        assert!(markers.all_clear());
        // None lost: every slot can be handed out again, once the slots still waiting
        // on the releasing side have been flushed into the return ring.
        let mut again = Vec::with_capacity(config.slots);
        loop {
            // After a flush, an empty return ring means nothing waits on the
            // releasing side either, so a miss here means every slot is out.
            release.flush();
            match alloc.try_alloc(Order::new(0)) {
                Ok(o) => again.push(o),
                Err(_) => break,
            }
        }
        assert_eq!(again.len(), config.slots, "a slot was lost");
        assert_eq!(release.flush(), 0);
        assert_eq!(alloc.stats().allocated, n + config.slots as u64);
        assert_eq!(release.stats().released, n);
        drop(again);
    });
}

fn run_arena(config: arena::Config, ring: usize) {
    let n = items();
    let slots = config.arenas * config.slots_per_arena;
    let markers = Markers::new(slots);
    let (mut alloc, mut release) = arena::new::<Order>(config).unwrap();
    let (mut tx, mut rx) = handoff_spsc::channel::<ArenaBox<Order>>(ring);
    std::thread::scope(|s| {
        let markers = &markers;
        s.spawn(move || {
            for seq in 0..n {
                let order = common::retry((), |()| rx.try_pop().map_err(|_| ()), |()| ());
                order.verify(seq);
                assert_eq!(order.arena(), order.slot() / config.slots_per_arena);
                markers.give(order.slot());
                release.free(order).unwrap();
            }
        });
        for seq in 0..n {
            let order = common::retry(Order::new(seq), |o| alloc.try_alloc(o), |e| e.into_inner());
            markers.take(order.slot());
            push(&mut tx, order);
        }
    });
    assert!(markers.all_clear());
    // None lost: the rest of the current arena and every other arena, in full, can
    // be handed out again before the allocator comes back to the current arena (and
    // that one too, in full, if the run ended exactly at its end).
    let left = alloc.left_in_arena();
    let expected = if left == 0 {
        slots
    } else {
        left + slots - config.slots_per_arena
    };
    let mut again = Vec::with_capacity(slots);
    while let Ok(o) = alloc.try_alloc(Order::new(0)) {
        again.push(o);
    }
    assert_eq!(again.len(), expected, "an arena was not drained");
    assert_eq!(alloc.allocated(), n + expected as u64);
}

#[test]
fn return_queue_document_sizes() {
    // 4096 slots, return ring 1024, batches of 32; forward ring 1024.
    let config = if cfg!(miri) {
        return_queue::Config {
            slots: 16,
            return_depth: 4,
            batch: 3,
            release_batch: 3,
        }
    } else {
        return_queue::Config::default()
    };
    run_return_queue(config, if cfg!(miri) { 8 } else { 1024 });
}

#[test]
fn return_queue_tiny_pool_stays_exhausted_often() {
    // Fewer slots than the forward ring: the allocator runs dry constantly, and the
    // return ring is smaller than the pool, so the releaser defers slots too.
    run_return_queue(
        return_queue::Config {
            slots: 8,
            return_depth: 3,
            batch: 2,
            release_batch: 2,
        },
        16,
    );
}

#[test]
fn arena_document_sizes() {
    let config = if cfg!(miri) {
        arena::Config {
            arenas: 3,
            slots_per_arena: 5,
        }
    } else {
        arena::Config::default()
    };
    run_arena(config, if cfg!(miri) { 8 } else { 1024 });
}

#[test]
fn arena_tiny_arenas_rotate_constantly() {
    run_arena(
        arena::Config {
            arenas: 2,
            slots_per_arena: 3,
        },
        16,
    );
}
