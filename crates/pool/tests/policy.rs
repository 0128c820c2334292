//! The policy pool, `Pool<T, P>`, under every policy: allocation and release, fixed
//! and growing capacity, foreign handles, drop counting, the leak-safety rule
//! (forgotten handles, panicking destructors, destructors that use the pool), and
//! multi-thread stress with an ownership marker per slot (no slot handed out twice,
//! none lost, every object intact). Scaled down under Miri and by
//! `HANDOFF_STRESS_ITEMS`.

// Under `--cfg handoff_global_alloc` (.ci/run) handoff-alloc is this test's global allocator.
#[cfg(handoff_global_alloc)]
use handoff_alloc as _;

mod common;

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use common::Ledger;
use handoff_pool::policy::{
    LockFree, Locked, Policy, SingleThreaded, Store, ThreadCached, MAX_MAGAZINE,
};
use handoff_pool::{Capacity, ConfigError, Pool, PoolConfig};

fn items() -> usize {
    let default = if cfg!(miri) { 2_000 } else { 2_000_000 };
    std::env::var("HANDOFF_STRESS_ITEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn fixed<T, P: Policy>(n: usize) -> Pool<T, P> {
    // Magazines of 2, so that small pools exercise the depot exchange.
    Pool::with_config(PoolConfig {
        magazine: 2,
        ..PoolConfig::new(Capacity::Fixed(n))
    })
    .unwrap()
}

fn bad_configs<P: Policy>() {
    assert_eq!(
        Pool::<u64, P>::new(Capacity::Fixed(0)).unwrap_err(),
        ConfigError::Zero("slots")
    );
    assert_eq!(
        Pool::<u64, P>::new(Capacity::Grow { first_block: 0 }).unwrap_err(),
        ConfigError::Zero("first_block")
    );
    assert_eq!(
        Pool::<(), P>::new(Capacity::Fixed(4)).unwrap_err(),
        ConfigError::ZeroSized
    );
    assert_eq!(
        Pool::<u64, P>::with_config(PoolConfig {
            magazine: 0,
            ..PoolConfig::new(Capacity::Fixed(4))
        })
        .unwrap_err(),
        ConfigError::Zero("magazine")
    );
    assert!(matches!(
        Pool::<u64, P>::new(Capacity::Fixed(usize::MAX)).unwrap_err(),
        ConfigError::TooLarge { .. }
    ));
    // The store made through the public `Store` trait checks the same (issue 47: a
    // `CachedStore` sized its magazines from a 2^40 request and aborted).
    for magazine in [0, MAX_MAGAZINE + 1, 1 << 40, usize::MAX] {
        let config = PoolConfig {
            magazine,
            ..PoolConfig::new(Capacity::Fixed(4))
        };
        let want = if magazine == 0 {
            ConfigError::Zero("magazine")
        } else {
            ConfigError::MagazineTooLarge { magazine }
        };
        assert_eq!(Pool::<u64, P>::with_config(config).err(), Some(want));
        assert_eq!(
            <P::Store<u64> as Store<u64>>::new(&config).err(),
            Some(want)
        );
    }
    // The largest magazine is accepted.
    let config = PoolConfig {
        magazine: MAX_MAGAZINE,
        ..PoolConfig::new(Capacity::Fixed(4))
    };
    assert!(<P::Store<u64> as Store<u64>>::new(&config).is_ok());
}

fn fixed_pool_exhausts_and_reuses<P: Policy>() {
    let pool = fixed::<u64, P>(3);
    let objs: Vec<_> = (0..3).map(|i| pool.try_alloc(i).unwrap()).collect();
    let addrs: HashSet<*const u64> = objs.iter().map(|o| &**o as *const u64).collect();
    assert_eq!(addrs.len(), 3, "three distinct slots");
    assert_eq!(pool.try_alloc(9).unwrap_err().into_inner(), 9);
    assert_eq!(pool.stats().exhausted, 1);
    assert_eq!(objs.iter().map(|o| **o).collect::<Vec<_>>(), [0, 1, 2]);
    drop(objs);
    let again: Vec<_> = (10..13).map(|i| pool.try_alloc(i).unwrap()).collect();
    let reused: HashSet<*const u64> = again.iter().map(|o| &**o as *const u64).collect();
    assert_eq!(reused, addrs, "the same three slots come back");
    assert_eq!(pool.capacity(), 3);
}

fn growing_pool_doubles<P: Policy>() {
    let pool = Pool::<u64, P>::with_config(PoolConfig {
        magazine: 2,
        ..PoolConfig::new(Capacity::Grow { first_block: 3 })
    })
    .unwrap();
    assert_eq!(
        pool.capacity(),
        4,
        "first block rounded up to a power of two"
    );
    let objs: Vec<_> = (0..17).map(|i| pool.try_alloc(i).unwrap()).collect();
    assert_eq!(pool.capacity(), 32, "blocks of 4, 4, 8, 16");
    let addrs: HashSet<*const u64> = objs.iter().map(|o| &**o as *const u64).collect();
    assert_eq!(addrs.len(), 17);
    for (i, o) in objs.iter().enumerate() {
        assert_eq!(**o, i as u64, "objects survive growth");
    }
    assert_eq!(pool.stats().exhausted, 0);
}

fn raw_release_free_and_foreign<P: Policy>() {
    let ledger = Ledger::new(3);
    let a = fixed::<common::Tok<'_>, P>(2);
    let b = fixed::<common::Tok<'_>, P>(2);
    let r0 = a.try_alloc_raw(ledger.tok(0)).unwrap();
    let r1 = a.try_alloc_raw(ledger.tok(1)).unwrap();
    // Another pool hands it back untouched.
    let r0 = b.release(r0).unwrap_err().into_inner();
    let r1 = b.free(r1).unwrap_err().into_inner();
    ledger.assert_dropped(|_| false);
    let t0 = a.release(r0).unwrap();
    assert_eq!(t0.id, 0);
    ledger.assert_dropped(|_| false);
    a.free(r1).unwrap();
    ledger.assert_dropped(|id| id == 1);
    drop(t0);
    // Obj -> Raw -> Obj paths.
    let o = a.try_alloc(ledger.tok(2)).unwrap();
    let t2 = o.into_inner();
    assert_eq!(t2.id, 2);
    drop(t2);
    ledger.assert_dropped(|_| true);
}

fn every_object_dropped_once<P: Policy>() {
    let n = 64;
    let ledger = Ledger::new(n);
    {
        let pool = Pool::<common::Tok<'_>, P>::with_config(PoolConfig {
            magazine: 2,
            ..PoolConfig::new(Capacity::Grow { first_block: 4 })
        })
        .unwrap();
        let mut objs: Vec<_> = (0..n)
            .map(|i| pool.try_alloc(ledger.tok(i)).unwrap())
            .collect();
        // Drop the odd ones, then the rest in reverse.
        let mut i = 0;
        objs.retain(|_| {
            i += 1;
            i % 2 == 1
        });
        ledger.assert_dropped(|id| id % 2 == 1);
        while objs.pop().is_some() {}
    }
    ledger.assert_dropped(|_| true);
}

fn forgotten_handles_leak_only<P: Policy>() {
    let ledger = Ledger::new(2);
    let pool = fixed::<common::Tok<'_>, P>(2);
    std::mem::forget(pool.try_alloc(ledger.tok(0)).unwrap());
    {
        // A `Raw` that goes out of scope unreleased leaks, like a forgotten `Obj`.
        let _raw = pool.try_alloc_raw(ledger.tok(1)).unwrap();
    }
    // Both slots stay out of use; nothing was dropped.
    assert!(pool.try_alloc(ledger.tok(0)).is_err());
    drop(pool);
    // The failed allocation handed its value back, which was then dropped.
    assert_eq!(ledger.drops(0), 1);
    assert_eq!(ledger.drops(1), 0);
}

fn panicking_destructor_loses_nothing<P: Policy>() {
    let ledger = Ledger::new(3);
    let pool = fixed::<common::Tok<'_>, P>(1);
    ledger.panic_on(0);
    let o = pool.try_alloc(ledger.tok(0)).unwrap();
    assert!(catch_unwind(AssertUnwindSafe(|| drop(o))).is_err());
    assert_eq!(ledger.drops(0), 1);
    // The slot came back despite the panic.
    let r = pool.try_alloc_raw(ledger.tok(1)).unwrap();
    ledger.panic_on(1);
    assert!(catch_unwind(AssertUnwindSafe(|| pool.free(r))).is_err());
    assert_eq!(ledger.drops(1), 1);
    drop(pool.try_alloc(ledger.tok(2)).unwrap());
    ledger.assert_dropped(|_| true);
}

/// An object whose destructor allocates from (and releases into) its own pool.
struct Reentrant<P: Policy + 'static> {
    pool: &'static Pool<Option<Reentrant<P>>, P>,
}

impl<P: Policy> Drop for Reentrant<P> {
    fn drop(&mut self) {
        let inner = self.pool.try_alloc(None).expect("a slot is free");
        drop(inner);
    }
}

fn destructor_may_use_the_pool<P: Policy>() {
    // The objects refer to their own pool, so it must outlive them: leak it for
    // the test and free it at the end, when no object is left.
    let raw: *mut Pool<Option<Reentrant<P>>, P> = Box::into_raw(Box::new(fixed(2)));
    // SAFETY: `raw` came from `Box::into_raw` and is freed only at the end.
    let pool: &'static Pool<Option<Reentrant<P>>, P> = unsafe { &*raw };
    let o = pool.try_alloc(Some(Reentrant { pool })).unwrap();
    drop(o);
    let all: Vec<_> = (0..2).map(|_| pool.try_alloc(None).unwrap()).collect();
    assert_eq!(all.len(), 2, "no slot lost");
    drop(all);
    // SAFETY: `raw` came from `Box::into_raw` above and no object or handle of the
    // pool is left.
    drop(unsafe { Box::from_raw(raw) });
}

macro_rules! policy_tests {
    ($name:ident, $policy:ty) => {
        mod $name {
            use super::*;

            #[test]
            fn bad_configs_are_errors() {
                bad_configs::<$policy>();
            }

            #[test]
            fn fixed_pool_exhausts_and_reuses() {
                super::fixed_pool_exhausts_and_reuses::<$policy>();
            }

            #[test]
            fn growing_pool_doubles() {
                super::growing_pool_doubles::<$policy>();
            }

            #[test]
            fn raw_release_free_and_foreign() {
                super::raw_release_free_and_foreign::<$policy>();
            }

            #[test]
            fn every_object_dropped_once() {
                super::every_object_dropped_once::<$policy>();
            }

            #[test]
            fn forgotten_handles_leak_only() {
                super::forgotten_handles_leak_only::<$policy>();
            }

            #[test]
            fn panicking_destructor_loses_nothing() {
                super::panicking_destructor_loses_nothing::<$policy>();
            }

            #[test]
            fn destructor_may_use_the_pool() {
                super::destructor_may_use_the_pool::<$policy>();
            }
        }
    };
}

policy_tests!(single_threaded, SingleThreaded);
policy_tests!(locked, Locked);
policy_tests!(lock_free, LockFree);
policy_tests!(thread_cached, ThreadCached);

/// A 64-byte object like document 001's blocks and document 003's Order.
#[repr(C, align(64))]
struct Order {
    seq: u64,
    check: u64,
    owner: u64,
    _fill: [u64; 5],
}

impl Order {
    fn new(owner: u64, seq: u64) -> Self {
        Order {
            seq,
            check: seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ owner,
            owner,
            _fill: [seq; 5],
        }
    }

    fn verify(&self, owner: u64, seq: u64) {
        assert_eq!((self.owner, self.seq), (owner, seq), "wrong object");
        assert_eq!(self.check, seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ owner);
        assert!(self._fill.iter().all(|&f| f == seq), "torn object");
    }
}

/// One marker per slot of a fixed pool, found from the slot's address.
struct Markers {
    base: usize,
    taken: Vec<AtomicBool>,
}

impl Markers {
    /// Learns the slots' addresses by taking every one once.
    fn of<P: Policy>(pool: &Pool<Order, P>, n: usize) -> Markers {
        let all: Vec<_> = (0..n)
            .map(|i| pool.try_alloc(Order::new(0, i as u64)).unwrap())
            .collect();
        let base = all
            .iter()
            .map(|o| &**o as *const Order as usize)
            .min()
            .unwrap();
        drop(all);
        Markers {
            base,
            taken: (0..n).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    fn index(&self, o: &Order) -> usize {
        (o as *const Order as usize - self.base) / size_of::<Order>()
    }

    fn take(&self, o: &Order) {
        assert!(
            !self.taken[self.index(o)].swap(true, Ordering::AcqRel),
            "slot handed out twice"
        );
    }

    fn give(&self, o: &Order) {
        assert!(
            self.taken[self.index(o)].swap(false, Ordering::AcqRel),
            "slot not held"
        );
    }
}

/// `threads` threads on one fixed pool, each allocating a few objects at a time
/// and releasing them, and the same number of objects allocated on one thread and
/// released on another through a channel. Then every slot must be allocatable.
fn stress<P: Policy>(threads: usize, n: usize, flush: impl Fn(&Pool<Order, P>) + Sync)
where
    Pool<Order, P>: Sync,
{
    let pool = fixed::<Order, P>(n);
    let markers = Markers::of(&pool, n);
    let per = items() / threads;
    std::thread::scope(|s| {
        for t in 0..threads as u64 {
            let (pool, markers, flush) = (&pool, &markers, &flush);
            s.spawn(move || {
                let mut held = Vec::new();
                for i in 0..per as u64 {
                    match pool.try_alloc(Order::new(t, i)) {
                        Ok(o) => {
                            markers.take(&o);
                            held.push((i, o));
                        }
                        Err(_) => std::thread::yield_now(),
                    }
                    if held.len() == 4 || i + 1 == per as u64 {
                        for (i, o) in held.drain(..) {
                            o.verify(t, i);
                            markers.give(&o);
                        }
                    }
                }
                flush(pool);
            });
        }
    });
    // Cross-thread: made on one thread, released on another.
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::sync_channel(8);
        let (pool, markers, flush) = (&pool, &markers, &flush);
        s.spawn(move || {
            for i in 0..per as u64 {
                let mut v = Order::new(7, i);
                let o = loop {
                    match pool.try_alloc(v) {
                        Ok(o) => break o,
                        Err(e) => {
                            v = e.into_inner();
                            std::thread::yield_now();
                        }
                    }
                };
                markers.take(&o);
                tx.send((i, o)).unwrap();
            }
            flush(pool);
        });
        s.spawn(move || {
            for (want, (i, o)) in rx.into_iter().enumerate() {
                assert_eq!(i, want as u64, "in order");
                o.verify(7, i);
                markers.give(&o);
            }
            flush(pool);
        });
    });
    let all: Vec<_> = (0..n)
        .map(|i| pool.try_alloc(Order::new(0, i as u64)))
        .collect();
    assert!(all.iter().all(|r| r.is_ok()), "a slot was lost");
}

#[test]
fn stress_locked() {
    stress::<Locked>(4, 16, |_| {});
}

#[test]
fn stress_lock_free() {
    stress::<LockFree>(4, 16, |_| {});
}

#[test]
fn stress_thread_cached() {
    stress::<ThreadCached>(4, 32, |p| p.flush());
}

/// Growth under contention: threads race to grow a pool that starts with one slot;
/// every live object has a slot of its own (a shared set of addresses).
fn racing_growth<P: Policy>()
where
    Pool<u64, P>: Sync,
{
    let pool = Pool::<u64, P>::with_config(PoolConfig {
        magazine: 2,
        ..PoolConfig::new(Capacity::Grow { first_block: 1 })
    })
    .unwrap();
    let live = Mutex::new(HashSet::new());
    // Under Miri, `HANDOFF_STRESS_ITEMS / 100` rounds (20 by default): the seed loop of
    // .ci/run scales it down to run many schedules (the races are in the first rounds,
    // while the pool grows).
    let rounds = if cfg!(miri) {
        (items() / 100).max(2)
    } else {
        2_000
    };
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (pool, live) = (&pool, &live);
            s.spawn(move || {
                for r in 0..rounds {
                    let objs: Vec<_> = (0..8)
                        .map(|i| pool.try_alloc(t * 1000 + i).unwrap())
                        .collect();
                    for o in &objs {
                        assert!(
                            live.lock().unwrap().insert(&**o as *const u64 as usize),
                            "twice"
                        );
                    }
                    for (i, o) in objs.into_iter().enumerate() {
                        assert_eq!(*o, t * 1000 + i as u64, "round {r}");
                        assert!(live.lock().unwrap().remove(&(&*o as *const u64 as usize)));
                    }
                }
            });
        }
    });
    assert!(
        pool.capacity() >= 8 && pool.capacity() <= 64,
        "{}",
        pool.capacity()
    );
    assert_eq!(pool.stats().exhausted, 0);
}

#[test]
fn racing_growth_locked() {
    racing_growth::<Locked>();
}

#[test]
fn racing_growth_lock_free() {
    racing_growth::<LockFree>();
}

#[test]
fn racing_growth_thread_cached() {
    racing_growth::<ThreadCached>();
}

#[test]
fn handles_cross_threads_only_for_thread_safe_policies() {
    fn assert_send<S: Send>(_: &S) {}
    let pool = Pool::<u64, LockFree>::new(Capacity::Fixed(1)).unwrap();
    let o = pool.try_alloc(1).unwrap();
    assert_send(&o);
    // `Pool<_, SingleThreaded>`'s handles are not `Send`: see the compile_fail doc
    // test on `policy::SingleThreaded`.
}

/// A thread caches at most two magazines of free slots (the loaded magazine counts its
/// top slot, kept apart from its buffer): with magazines of 4, releasing 16 slots on
/// one thread leaves 8 with it and sends 8 to the depot in whole magazines, and the
/// order of a thread's own releases and allocations stays a stack's.
#[test]
fn thread_cache_holds_two_magazines_and_is_a_stack() {
    let pool = Pool::<u64, ThreadCached>::with_config(PoolConfig {
        magazine: 4,
        ..PoolConfig::new(Capacity::Fixed(16))
    })
    .unwrap();
    let all: Vec<_> = (0..16).map(|i| pool.try_alloc_raw(i).unwrap()).collect();
    assert!(pool.try_alloc(99).is_err());
    let addrs: Vec<*const u64> = all.iter().map(|r| &**r as *const u64).collect();
    for r in all {
        pool.free(r).unwrap();
    }
    assert_eq!(pool.depot_magazines(), 2, "8 slots in two whole magazines");
    // The last released comes back first, then the one before it.
    let a = pool.try_alloc_raw(100).unwrap();
    let b = pool.try_alloc_raw(101).unwrap();
    assert_eq!(&*a as *const u64, addrs[15]);
    assert_eq!(&*b as *const u64, addrs[14]);
    pool.free(b).unwrap();
    pool.free(a).unwrap();
    pool.flush();
    assert_eq!(pool.depot_magazines(), 4, "every slot in the depot");
    // A `PooledRaw` that is dropped keeps its slot: all 16 are taken at once.
    let back: HashSet<*const u64> = (0..16)
        .map(|i| &*pool.try_alloc_raw(i).unwrap() as *const u64)
        .collect();
    assert_eq!(back.len(), 16, "no slot lost or handed out twice");
}
