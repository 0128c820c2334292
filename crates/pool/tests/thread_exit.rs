//! `ThreadCached` pools at thread exit: objects allocated, released and flushed from
//! thread-local destructors (whichever of them the runtime destroys first), and the
//! magazines of exited threads, which go back to the shared depot so that the pool's
//! whole capacity stays available to the threads that remain. Scaled down under Miri.

// Under `--cfg handoff_global_alloc` (.ci/run) handoff-alloc is this test's global allocator.
#[cfg(handoff_global_alloc)]
use handoff_alloc as _;

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::LazyLock;
use std::thread;

use handoff_pool::policy::ThreadCached;
use handoff_pool::{Capacity, Pool, PoolConfig, Pooled};

type Cached<T> = Pool<T, ThreadCached>;

/// What a thread-local destructor does with a pool.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Act {
    /// Releases objects the thread put in the thread-local.
    Release,
    /// Allocates (and releases) objects while the thread-local is destroyed.
    Alloc,
    /// Flushes the thread's magazines.
    Flush,
}

/// When the thread-local that acts is registered: before the thread first uses the
/// pool, so that it is destroyed after the pool's own per-thread state (thread-locals
/// are destroyed in the reverse order of their registration), or after.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Order {
    Before,
    After,
}

/// One scenario: its own pool, so that scenarios running at once do not share slots.
struct Case {
    pool: LazyLock<Cached<u64>>,
    /// Values dropped through the pool's objects (each object holds a `u64`; the count
    /// is kept by the destructor below, which checks what it took out).
    checked: AtomicUsize,
}

const SLOTS: usize = 8;

impl Case {
    const fn new() -> Case {
        Case {
            pool: LazyLock::new(|| {
                Cached::with_config(PoolConfig {
                    magazine: 2,
                    ..PoolConfig::new(Capacity::Fixed(SLOTS))
                })
                .unwrap()
            }),
            checked: AtomicUsize::new(0),
        }
    }
}

/// The thread-local whose destructor acts on a pool.
struct Holder {
    case: Option<&'static Case>,
    act: Act,
    held: Vec<Pooled<'static, u64, ThreadCached>>,
}

impl Drop for Holder {
    fn drop(&mut self) {
        let Some(case) = self.case else { return };
        match self.act {
            Act::Release => {
                for o in self.held.drain(..) {
                    assert_eq!(*o % 1000, 7);
                    case.checked.fetch_add(1, Ordering::Relaxed);
                }
            }
            Act::Alloc => {
                drop(self.held.drain(..));
                // Every slot, twice over: slots released here are reused.
                for round in 0..2u64 {
                    let all: Vec<_> = (0..SLOTS as u64)
                        .map(|i| case.pool.try_alloc(round * 1000 + i).expect("a free slot"))
                        .collect();
                    for (i, o) in all.iter().enumerate() {
                        assert_eq!(**o, round * 1000 + i as u64);
                    }
                    case.checked.fetch_add(all.len(), Ordering::Relaxed);
                }
            }
            Act::Flush => {
                drop(self.held.drain(..));
                case.pool.flush();
                case.checked.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

thread_local! {
    static HOLD: RefCell<Holder> = const {
        RefCell::new(Holder { case: None, act: Act::Release, held: Vec::new() })
    };
}

/// Runs one scenario on a fresh thread and checks that the whole pool is free again
/// afterwards, from this thread.
fn run(case: &'static Case, act: Act, order: Order) {
    thread::spawn(move || {
        if order == Order::Before {
            HOLD.with(|_| {});
        }
        // The thread's first use of the pool sets up its magazines.
        let objs: Vec<_> = (0..3)
            .map(|i| case.pool.try_alloc(i * 1000 + 7).unwrap())
            .collect();
        HOLD.with(|h| {
            let mut h = h.borrow_mut();
            h.case = Some(case);
            h.act = act;
            h.held = objs;
        });
    })
    .join()
    .expect("the thread exits cleanly");
    let expected = match act {
        Act::Release => 3,
        Act::Alloc => 2 * SLOTS,
        Act::Flush => 1,
    };
    assert_eq!(
        case.checked.load(Ordering::Relaxed),
        expected,
        "{act:?} {order:?}"
    );
    // Every slot is free again and reachable from here: nothing is stranded in the
    // exited thread's magazines.
    let all: Vec<_> = (0..SLOTS as u64)
        .map(|i| case.pool.try_alloc(i).expect("every slot is back"))
        .collect();
    assert_eq!(all.len(), SLOTS);
}

macro_rules! scenarios {
    ($($name:ident: $act:ident, $order:ident;)*) => {$(
        #[test]
        fn $name() {
            static CASE: Case = Case::new();
            run(&CASE, Act::$act, Order::$order);
        }
    )*};
}

scenarios! {
    release_in_a_tls_destructor_destroyed_after_the_pools_state: Release, Before;
    release_in_a_tls_destructor_destroyed_before_the_pools_state: Release, After;
    alloc_in_a_tls_destructor_destroyed_after_the_pools_state: Alloc, Before;
    alloc_in_a_tls_destructor_destroyed_before_the_pools_state: Alloc, After;
    flush_in_a_tls_destructor_destroyed_after_the_pools_state: Flush, Before;
    flush_in_a_tls_destructor_destroyed_before_the_pools_state: Flush, After;
}

/// A thread whose first use of a pool comes from a thread-local destructor, after the
/// runtime has begun destroying its thread-locals.
#[test]
fn first_use_of_the_pool_in_a_tls_destructor() {
    static CASE: Case = Case::new();
    thread::spawn(|| {
        HOLD.with(|h| {
            let mut h = h.borrow_mut();
            h.case = Some(&CASE);
            h.act = Act::Alloc;
        });
    })
    .join()
    .unwrap();
    assert_eq!(CASE.checked.load(Ordering::Relaxed), 2 * SLOTS);
    let all: Vec<_> = (0..SLOTS as u64)
        .map(|i| CASE.pool.try_alloc(i).unwrap())
        .collect();
    assert_eq!(all.len(), SLOTS);
}

/// Short-lived threads that allocate and release without flushing: when each exits,
/// its magazines go back to the depot, so one thread can then take every slot.
#[test]
fn exited_threads_leave_the_whole_capacity_to_the_rest() {
    let threads = if cfg!(miri) { 24 } else { 1000 };
    let slots = 512;
    let pool = Cached::<u64>::new(Capacity::Fixed(slots)).unwrap();
    // This thread uses the pool first, so that no exited thread's per-thread state
    // can become its own afterwards.
    drop(pool.try_alloc(0).unwrap());
    for t in 0..threads {
        // Joined explicitly: `join` returns once the thread's thread-local destructors
        // have run (the end of a scope alone does not wait for them).
        thread::scope(|s| {
            let pool = &pool;
            s.spawn(move || {
                let objs: Vec<_> = (0..(1 + t % 100) as u64)
                    .map(|i| pool.try_alloc(i).unwrap())
                    .collect();
                assert!(objs.iter().enumerate().all(|(i, o)| **o == i as u64));
            })
            .join()
            .unwrap();
        });
    }
    let all: Vec<_> = (0..slots as u64)
        .map(|i| pool.try_alloc(i).expect("every slot is back"))
        .collect();
    assert_eq!(all.len(), slots);
    assert!(pool.try_alloc(0).is_err());
}

/// Threads that exit while the pool is dropped on another thread, and pools dropped
/// while threads that used them live on: neither reaches the other's memory.
#[test]
fn pools_dropped_while_threads_that_used_them_run_and_exit() {
    let rounds = if cfg!(miri) { 4 } else { 200 };
    for _ in 0..rounds {
        let pool = std::sync::Arc::new(
            Cached::<String>::with_config(PoolConfig {
                magazine: 2,
                ..PoolConfig::new(Capacity::Fixed(16))
            })
            .unwrap(),
        );
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let user = {
            let pool = pool.clone();
            thread::spawn(move || {
                let o = pool.try_alloc("x".to_string()).unwrap();
                drop(o);
                drop(pool);
                // Waits until the pool is gone, then exits with magazines of it.
                let _ = rx.recv();
            })
        };
        let dropper = thread::spawn(move || drop(pool));
        dropper.join().unwrap();
        tx.send(()).unwrap();
        user.join().unwrap();
    }
}
