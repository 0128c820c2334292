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
                    rx.try_pop().ok()
                });
                let object: handoff_pool::PoolBox<Counted> = object;
                assert_eq!(object.0, i);
                release.free(object).unwrap();
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
                let object: handoff_pool::ArenaBox<Counted> = spin(|| rx.try_pop().ok());
                assert_eq!(object.0, i);
                release.free(object).unwrap();
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
        release.free(released).unwrap();
        drop(release);
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 2);
    });
}

mod policy {
    use handoff_pool::policy::{LockFree, ThreadCached};
    use handoff_pool::{Capacity, Pool, PoolConfig};
    use loom::sync::atomic::{AtomicBool, Ordering};
    use loom::sync::Arc;
    use loom::thread;

    /// Ownership markers for the slots of a fixed pool of `u64`s, found from the
    /// slot's address; a slot taken while marked fails the model at once.
    struct Markers {
        base: usize,
        taken: Vec<AtomicBool>,
    }

    impl Markers {
        fn new(base: usize, n: usize) -> Self {
            Markers {
                base,
                taken: (0..n).map(|_| AtomicBool::new(false)).collect(),
            }
        }

        fn take(&self, addr: usize) {
            let i = (addr - self.base) / 8;
            assert!(
                !self.taken[i].swap(true, Ordering::Relaxed),
                "slot {i} handed out twice"
            );
        }

        fn give(&self, addr: usize) {
            let i = (addr - self.base) / 8;
            assert!(
                self.taken[i].swap(false, Ordering::Relaxed),
                "slot {i} not held"
            );
        }
    }

    fn base_of<P: handoff_pool::policy::Policy>(pool: &Pool<u64, P>, n: usize) -> usize {
        let all: Vec<_> = (0..n).map(|i| pool.try_alloc(i as u64).unwrap()).collect();
        all.iter()
            .map(|o| &**o as *const u64 as usize)
            .min()
            .unwrap()
    }

    /// The ABA interleaving of document 003's lock-free pool: thread 1 reads the head
    /// (slot a, next b) and is preempted; thread 2 pops a and b and pushes a back, so
    /// the head is a again but its next is no longer b. A head without a generation
    /// lets thread 1's swap succeed and install b, which thread 2 still holds; thread
    /// 1's second pop then takes b a second time. Four slots, so nobody runs out. Every interleaving is explored
    /// (loom), with ownership markers and each owner's value checked.
    #[test]
    fn lock_free_pop_is_aba_safe() {
        loom::model(|| {
            let pool = Arc::new(Pool::<u64, LockFree>::new(Capacity::Fixed(4)).unwrap());
            let markers = Arc::new(Markers::new(base_of(&pool, 4), 4));
            let (p, m) = (pool.clone(), markers.clone());
            let t2 = thread::spawn(move || {
                let a = p.try_alloc(20).unwrap();
                m.take(&*a as *const u64 as usize);
                let b = p.try_alloc(21).unwrap();
                m.take(&*b as *const u64 as usize);
                m.give(&*a as *const u64 as usize);
                drop(a);
                assert_eq!(*b, 21, "b was overwritten while held");
                m.give(&*b as *const u64 as usize);
                drop(b);
            });
            let x = pool.try_alloc(10).unwrap();
            markers.take(&*x as *const u64 as usize);
            let y = pool.try_alloc(11).unwrap();
            markers.take(&*y as *const u64 as usize);
            assert_eq!((*x, *y), (10, 11));
            markers.give(&*x as *const u64 as usize);
            markers.give(&*y as *const u64 as usize);
            drop((x, y));
            t2.join().unwrap();
            // Nothing lost: all four slots come out again.
            let all: Vec<_> = (0..4).map(|i| pool.try_alloc(i).unwrap()).collect();
            assert_eq!(all.len(), 4);
        });
    }

    /// Two threads that both find a growing pool empty: one adds a block, the other
    /// takes from it (or adds the next); no slot is handed out twice (a set of the
    /// live addresses, under a lock).
    #[test]
    fn lock_free_growth_races() {
        loom::model(|| {
            let pool =
                Arc::new(Pool::<u64, LockFree>::new(Capacity::Grow { first_block: 1 }).unwrap());
            let live = Arc::new(loom::sync::Mutex::new(Vec::new()));
            let first = pool.try_alloc(0).unwrap();
            live.lock().unwrap().push(&*first as *const u64 as usize);
            let body =
                |pool: Arc<Pool<u64, LockFree>>, live: Arc<loom::sync::Mutex<Vec<usize>>>, v| {
                    move || {
                        let o = pool.try_alloc(v).unwrap();
                        let addr = &*o as *const u64 as usize;
                        {
                            let mut live = live.lock().unwrap();
                            assert!(!live.contains(&addr), "one slot handed out twice");
                            live.push(addr);
                        }
                        assert_eq!(*o, v);
                        live.lock().unwrap().retain(|&a| a != addr);
                    }
                };
            let t = thread::spawn(body(pool.clone(), live.clone(), 1));
            body(pool.clone(), live.clone(), 2)();
            t.join().unwrap();
            assert_eq!(*first, 0);
            assert!(pool.capacity() <= 4);
        });
    }

    /// The magazine exchange: magazines of one slot, three slots. Two threads each
    /// take two magazines from the depot, fill their own two with what they release
    /// and hand them back (`flush`), racing on the depot; the slots stay one owner
    /// each, and all three are in the depot at the end.
    #[test]
    fn magazines_exchange_through_the_depot() {
        loom::model(|| {
            let pool = Arc::new(
                Pool::<u64, ThreadCached>::with_config(PoolConfig {
                    magazine: 1,
                    ..PoolConfig::new(Capacity::Fixed(3))
                })
                .unwrap(),
            );
            let base = base_of(&pool, 3);
            let markers = Arc::new(Markers::new(base, 3));
            let worker = |pool: Arc<Pool<u64, ThreadCached>>, markers: Arc<Markers>| {
                move || {
                    let mut cache = pool.loom_cache();
                    let mut held = Vec::new();
                    for _ in 0..2 {
                        if let Some(p) = cache.alloc() {
                            markers.take(p.as_ptr() as usize);
                            held.push(p);
                        }
                    }
                    for p in held {
                        markers.give(p.as_ptr() as usize);
                        cache.free(p);
                    }
                    cache.flush();
                }
            };
            let t = thread::spawn(worker(pool.clone(), markers.clone()));
            worker(pool.clone(), markers.clone())();
            t.join().unwrap();
            assert_eq!(pool.depot_magazines(), 3, "every slot back in the depot");
        });
    }
}
