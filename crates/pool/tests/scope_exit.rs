//! A `ThreadCached` pool right after `std::thread::scope`: the scope returns before
//! its threads' thread-local destructors hand their magazines back; an allocation that
//! says how long it may wait (`try_alloc_within`) gets their slots, and one that does
//! not (`try_alloc`) never waits. In a binary of its own, so that no other test's
//! threads hold magazines of its pool.

// Under `--cfg handoff_global_alloc` (.ci/run) handoff-alloc is this test's global allocator.
#[cfg(handoff_global_alloc)]
use handoff_alloc as _;

use std::thread;
use std::time::Duration;

use handoff_pool::policy::ThreadCached;
use handoff_pool::{Capacity, Pool, PoolConfig};

type Cached<T> = Pool<T, ThreadCached>;

/// A pool of two slots used by two threads inside `std::thread::scope`, which do not
/// flush: right after the scope returns, both slots are available to an allocation
/// that waits for the scope's threads to hand their magazines back. (Until 2026-11-29
/// every allocation waited up to 5 ms by itself: the allocation after a scope was
/// refused about once in 2000 tries on a busy machine, and a program that did not want
/// a wait could not avoid it.) The bound is generous: a thread kept off the CPU by a
/// busy machine still exits within it; the scope's threads hand their slots back in
/// microseconds otherwise.
#[test]
fn slots_of_scoped_threads_are_available_right_after_the_scope() {
    const WAIT: Duration = Duration::from_secs(10);
    let tries = if cfg!(miri) { 10 } else { 2000 };
    // Magazines of one slot: each thread of the scope takes one from the depot.
    let pool = Cached::<u64>::with_config(PoolConfig {
        magazine: 1,
        ..PoolConfig::new(Capacity::Fixed(2))
    })
    .unwrap();
    let mut refused = 0;
    for t in 0..tries {
        thread::scope(|s| {
            for k in 0..2 {
                let pool = &pool;
                s.spawn(move || {
                    let o = pool.try_alloc(t * 2 + k).expect("a slot for each thread");
                    assert_eq!(*o, t * 2 + k);
                });
            }
        });
        match (
            pool.try_alloc_within(0, WAIT),
            pool.try_alloc_within(1, WAIT),
        ) {
            (Ok(a), Ok(b)) => assert_eq!((*a, *b), (0, 1)),
            _ => refused += 1,
        }
        // Back to the depot for the next scope's threads.
        pool.flush();
    }
    assert_eq!(
        refused, 0,
        "{refused} of {tries} allocations after a scope were refused"
    );
    // An exhausted pool refuses `try_alloc` (one try, no wait), and a zero wait is
    // one try too; both are counted.
    let all: Vec<_> = (0..2).map(|i| pool.try_alloc(i).unwrap()).collect();
    let before = pool.stats().exhausted;
    assert_eq!(pool.try_alloc(2).unwrap_err().into_inner(), 2);
    assert_eq!(
        pool.try_alloc_within(3, Duration::ZERO)
            .unwrap_err()
            .into_inner(),
        3
    );
    assert_eq!(pool.stats().exhausted, before + 2);
    // A slot given back meanwhile ends the wait (the sleep makes the waiter likely to
    // be waiting by then; either way it must get the slot).
    let mut all = all;
    let last = all.pop().unwrap();
    let waiting = thread::scope(|s| {
        let t = s.spawn(|| pool.try_alloc_within(4, WAIT).map(|o| *o));
        thread::sleep(Duration::from_millis(20));
        drop(last); // into this thread's magazine,
        pool.flush(); // and on to the depot, where the waiting thread finds it
        t.join().unwrap()
    });
    drop(all);
    assert_eq!(waiting.ok(), Some(4));
}
