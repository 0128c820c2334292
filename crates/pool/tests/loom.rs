//! Loom models of the pools: every interleaving (up to `LOOM_MAX_PREEMPTIONS`) of the
//! allocating and the releasing thread, with each slot's ownership changes checked for
//! data races through the crate's shadow cells. Run with:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p handoff-pool --release --test loom
//! ```
#![cfg(loom)]

use handoff_pool::{arena, return_queue};
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

fn spin<T>(mut f: impl FnMut() -> Option<T>) -> T {
    loop {
        if let Some(v) = f() {
            return v;
        }
        thread::yield_now();
    }
}

/// Counts drops so the models can check that every object is dropped exactly once.
struct Counted(u32, Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::Relaxed);
    }
}

/// The return path: two slots, a return ring of one, batches of one. The allocator
/// can only make its third and fourth objects from slots the releaser sent back, so
/// every reuse of a slot races with its release unless the ring orders them.
#[test]
fn return_path_reuses_slots_only_after_release() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let config = return_queue::Config {
            slots: 2,
            return_depth: 1,
            batch: 1,
            release_batch: 1,
        };
        let (mut alloc, mut release) = return_queue::new::<Counted>(config).unwrap();
        let (mut tx, mut rx) = handoff_spsc::channel(2);
        let consumer = thread::spawn(move || {
            for i in 0..4 {
                let object = spin(|| {
                    release.flush();
                    rx.try_pop()
                });
                let object: handoff_pool::PoolBox<Counted> = object;
                assert_eq!(object.0, i);
                release.release(object).unwrap();
            }
        });
        for i in 0..4 {
            let mut value = Counted(i, drops.clone());
            let object = loop {
                match alloc.try_alloc(value) {
                    Ok(o) => break o,
                    Err(e) => {
                        value = e.into_inner();
                        thread::yield_now();
                    }
                }
            };
            let mut item = object;
            while let Err(full) = tx.try_push(item) {
                item = full.into_inner();
                thread::yield_now();
            }
        }
        consumer.join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 4);
    });
}

/// The arena reuse rule: two arenas of one slot. The third object goes into arena 0
/// again, which is allowed only once the first object's drop is acknowledged.
#[test]
fn arena_is_refilled_only_after_acknowledgement() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let config = arena::Config {
            arenas: 2,
            slots_per_arena: 1,
        };
        let (mut alloc, mut release) = arena::new::<Counted>(config).unwrap();
        let (mut tx, mut rx) = handoff_spsc::channel(2);
        let consumer = thread::spawn(move || {
            for i in 0..3 {
                let object: handoff_pool::ArenaBox<Counted> = spin(|| rx.try_pop());
                assert_eq!(object.0, i);
                release.release(object).unwrap();
            }
        });
        for i in 0..3 {
            let mut value = Counted(i, drops.clone());
            let object = loop {
                match alloc.try_alloc(value) {
                    Ok(o) => break o,
                    Err(e) => {
                        value = e.into_inner();
                        thread::yield_now();
                    }
                }
            };
            assert_eq!(object.arena(), i as usize % 2);
            let mut item = object;
            while let Err(full) = tx.try_push(item) {
                item = full.into_inner();
                thread::yield_now();
            }
        }
        consumer.join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 3);
    });
}

/// An arena object dropped on a third thread (not released) still frees its arena,
/// through the second counter.
#[test]
fn arena_is_refilled_after_a_drop_elsewhere() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let config = arena::Config {
            arenas: 1,
            slots_per_arena: 1,
        };
        let (mut alloc, _release) = arena::new::<Counted>(config).unwrap();
        let first = alloc.try_alloc(Counted(0, drops.clone())).ok().unwrap();
        let t = thread::spawn(move || drop(first));
        let mut value = Counted(1, drops.clone());
        let again = loop {
            match alloc.try_alloc(value) {
                Ok(o) => break o,
                Err(e) => {
                    value = e.into_inner();
                    thread::yield_now();
                }
            }
        };
        t.join().unwrap();
        drop(again);
        assert_eq!(drops.load(Ordering::Relaxed), 2);
    });
}

/// Teardown: both handles and an in-flight object go on three threads at once; the
/// object is dropped once and whoever is last frees the shared state (loom checks the
/// accesses; Miri and the drop tests check the freeing itself).
#[test]
fn teardown_races_with_an_object_dropped_elsewhere() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let config = return_queue::Config {
            slots: 2,
            return_depth: 2,
            batch: 2,
            release_batch: 2,
        };
        let (mut alloc, mut release) = return_queue::new::<Counted>(config).unwrap();
        let released = alloc.try_alloc(Counted(0, drops.clone())).ok().unwrap();
        let in_flight = alloc.try_alloc(Counted(1, drops.clone())).ok().unwrap();
        let a = thread::spawn(move || drop(alloc));
        let b = thread::spawn(move || drop(in_flight));
        release.release(released).unwrap();
        drop(release);
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 2);
    });
}
