//! `PooledArc`, the owned handle of a `Pool` in an `Arc`: every object is dropped
//! exactly once, on whichever thread ends up with it; its slot goes back (also when
//! its destructor panics); the pool lives until its last object is gone; the counters
//! of the pool follow.

#[cfg(handoff_global_alloc)]
use handoff_alloc as _;

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use common::Ledger;
use handoff_pool::policy::{LockFree, Locked, Policy, SingleThreaded, ThreadCached};
use handoff_pool::{Capacity, Pool, PoolConfig, PooledArc};

fn n() -> usize {
    if cfg!(miri) {
        40
    } else {
        4000
    }
}

/// Objects made on this thread, sent through a ring to another, dropped there; then
/// every slot can be had again.
fn across_threads<P: Policy>()
where
    for<'a> Pool<common::Tok<'a>, P>: Sync + Send,
{
    let n = n();
    let ledger = Ledger::new(n);
    let spare = Ledger::new(16);
    // Magazines of 2: a thread-cached pool's freeing thread hands its slots on to the
    // depot after two (with the default 64, a pool of 16 would stay in its cache).
    let config = PoolConfig {
        magazine: 2,
        ..PoolConfig::new(Capacity::Fixed(16))
    };
    let pool = Arc::new(Pool::<common::Tok<'_>, P>::with_config(config).unwrap());
    std::thread::scope(|s| {
        let (mut tx, mut rx) = handoff_spsc::channel::<PooledArc<common::Tok<'_>, P>>(8);
        s.spawn(move || {
            let mut seen = 0;
            while seen < n {
                match rx.try_pop() {
                    Ok(o) => {
                        assert_eq!(o.id, seen);
                        seen += 1;
                    }
                    Err(_) => std::thread::yield_now(),
                }
            }
        });
        for id in 0..n {
            let mut o = common::retry(
                ledger.tok(id),
                |t| pool.try_alloc_arc(t),
                |e| {
                    std::thread::yield_now();
                    e.into_inner()
                },
            );
            while let Err(e) = tx.try_push(o) {
                o = e.into_inner();
                std::thread::yield_now();
            }
        }
    });
    ledger.assert_dropped(|_| true);
    // Every slot again (a thread-cached pool gets the consumer thread's magazines back
    // when that thread's destructors have run, which the scope does not wait for).
    let again: Vec<_> = (0..16)
        .map(|i| {
            pool.try_alloc_within(spare.tok(i), std::time::Duration::from_secs(10))
                .map_err(|_| i)
        })
        .collect();
    assert!(again.iter().all(Result::is_ok), "a slot was lost");
    drop(again);
}

#[test]
fn objects_cross_threads_and_come_back_locked() {
    across_threads_u::<Locked>();
    across_threads::<Locked>();
}

#[test]
fn objects_cross_threads_and_come_back_lock_free() {
    across_threads_u::<LockFree>();
    across_threads::<LockFree>();
}

#[test]
fn objects_cross_threads_and_come_back_thread_cached() {
    across_threads_u::<ThreadCached>();
    across_threads::<ThreadCached>();
}

/// The same with `'static` items on threads that are not scoped: the pool is kept
/// alive by its objects, after the allocating side dropped its `Arc`.
fn across_threads_u<P: Policy>()
where
    Pool<u64, P>: Sync + Send,
{
    let pool = Arc::new(Pool::<u64, P>::new(Capacity::Fixed(4)).unwrap());
    let objects: Vec<PooledArc<u64, P>> = (0..4).map(|i| pool.try_alloc_arc(i).unwrap()).collect();
    assert!(pool.try_alloc_arc(9).is_err());
    let weak = Arc::downgrade(&pool);
    drop(pool);
    let t = std::thread::spawn(move || objects.iter().map(|o| **o).sum::<u64>());
    assert_eq!(t.join().unwrap(), 6);
    assert!(
        weak.upgrade().is_none(),
        "the pool went with its last object"
    );
}

#[test]
fn a_panicking_destructor_still_gives_the_slot_back() {
    let ledger = Ledger::new(3);
    let pool = Arc::new(Pool::<common::Tok<'_>, Locked>::new(Capacity::Fixed(1)).unwrap());
    ledger.panic_on(0);
    let o = pool.try_alloc_arc(ledger.tok(0)).unwrap();
    assert!(catch_unwind(AssertUnwindSafe(|| drop(o))).is_err());
    let again = pool.try_alloc_arc(ledger.tok(1)).unwrap();
    assert_eq!(again.into_inner().id, 1);
    assert!(
        pool.try_alloc_arc(ledger.tok(2)).is_ok(),
        "into_inner gave it back"
    );
    ledger.assert_dropped(|_| true);
    let s = pool.stats();
    assert_eq!((s.capacity, s.exhausted, s.in_use), (1, 0, Some(0)));
}

#[test]
fn in_use_is_counted_where_it_is_free_to_count() {
    let single = Pool::<u8, SingleThreaded>::new(Capacity::Grow { first_block: 2 }).unwrap();
    let held: Vec<_> = (0..3).map(|i| single.try_alloc(i).unwrap()).collect();
    assert_eq!(single.stats().in_use, Some(3));
    drop(held);
    assert_eq!(single.stats().in_use, Some(0));
    let locked = Pool::<u8, Locked>::new(Capacity::Fixed(4)).unwrap();
    let a = locked.try_alloc(1).unwrap();
    assert_eq!(locked.stats().in_use, Some(1));
    drop(a);
    assert_eq!(
        Pool::<u8, LockFree>::new(Capacity::Fixed(4))
            .unwrap()
            .stats()
            .in_use,
        None
    );
    assert_eq!(
        Pool::<u8, ThreadCached>::new(Capacity::Fixed(4))
            .unwrap()
            .stats()
            .in_use,
        None
    );
}
