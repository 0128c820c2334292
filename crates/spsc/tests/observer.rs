//! The read-only `Observer`: its figures on one thread, step by step; a monitor
//! thread reading it while two threads stream (every snapshot within bounds, the
//! counts monotonic, the final figures exact); an observer that outlives both handles.
#![cfg(not(loom))]

#[cfg(handoff_global_alloc)]
use handoff_alloc as _;

mod common;

use common::{count, counter, Counted};
use handoff_spsc::{channel, Observer, RingStats, StaticChannel};

fn assert_send_sync<T: Send + Sync + Clone + 'static>() {}

#[test]
fn an_observer_is_send_sync_and_clone() {
    assert_send_sync::<Observer<u64>>();
    assert_send_sync::<Observer<String>>();
}

#[test]
fn figures_follow_the_calls() {
    let (mut tx, mut rx) = channel::<u32>(4);
    let watch = rx.observer();
    let empty: RingStats = watch.stats();
    assert_eq!(
        (empty.len, empty.capacity, empty.high_water, empty.pushed),
        (0, 4, 0, 0)
    );
    assert_eq!(
        (empty.popped, empty.full_events, empty.full_pushes),
        (0, 0, 0)
    );
    tx.try_push(1).unwrap();
    tx.try_push(2).unwrap();
    assert_eq!((watch.len(), watch.pushed(), watch.popped()), (2, 2, 0));
    assert_eq!(watch.high_water(), 0, "the producer has not looked yet");
    assert_eq!(rx.try_pop(), Ok(1));
    tx.try_push(3).unwrap();
    tx.try_push(4).unwrap();
    assert_eq!(
        watch.high_water(),
        0,
        "its first view of the room lasts four pushes"
    );
    tx.try_push(5).unwrap();
    assert_eq!(watch.high_water(), 3, "it looked: three in the ring");
    assert_eq!(watch.len(), 4);
    assert_eq!(watch.full_events(), 0);
    for _ in 0..3 {
        assert!(tx.try_push(6).is_err());
    }
    assert_eq!((watch.full_events(), watch.full_pushes()), (1, 3));
    assert_eq!(watch.high_water(), 4, "a full ring is the capacity");
    assert_eq!(rx.try_pop(), Ok(2));
    tx.try_push(6).unwrap();
    assert!(tx.try_push(7).is_err());
    let s = watch.stats();
    assert_eq!(
        (s.len, s.pushed, s.popped, s.full_events, s.full_pushes),
        (4, 6, 2, 2, 4)
    );
    // Slices and chunks move the indices too; only try_push counts full rings.
    let mut out = [0; 4];
    assert_eq!(rx.pop_slice(&mut out), 4);
    assert_eq!(tx.push_slice(&[8, 9, 10, 11, 12]), 4);
    assert_eq!(tx.push_slice(&[12]), 0);
    let s = watch.stats();
    assert_eq!((s.len, s.pushed, s.popped, s.full_pushes), (4, 10, 6, 4));
    assert!(format!("{watch:?}").starts_with("Observer(RingStats"));
}

/// A full episode ends at any look that finds room (`free_len` here), not only at a
/// push's: the next failed push is a new episode.
#[test]
fn every_full_episode_is_counted() {
    let (mut tx, mut rx) = channel::<u8>(1);
    let watch = tx.observer();
    tx.try_push(1).unwrap();
    assert!(tx.try_push(2).is_err());
    assert_eq!(rx.try_pop(), Ok(1));
    assert_eq!(tx.free_len(), 1);
    tx.try_push(3).unwrap();
    assert!(tx.try_push(4).is_err());
    assert_eq!((watch.full_events(), watch.full_pushes()), (2, 2));
}

#[test]
fn an_observer_outlives_both_handles_and_keeps_no_item() {
    let drops = counter();
    let (mut tx, rx) = channel::<Counted>(8);
    for i in 0..5 {
        tx.try_push(Counted::new(i, &drops)).unwrap();
    }
    let watch = tx.observer();
    let other = watch.clone();
    drop((tx, rx));
    assert_eq!(count(&drops), 5, "the last handle dropped the items");
    assert_eq!((watch.len(), watch.pushed(), other.capacity()), (5, 5, 8));
}

#[test]
fn a_static_ring_has_an_observer_too() {
    static RING: StaticChannel<u8, 16> = StaticChannel::new();
    let (mut tx, rx) = RING.split().unwrap();
    let watch = rx.observer();
    tx.try_push(1).unwrap();
    let seen = std::thread::spawn(move || watch.len()).join().unwrap();
    assert_eq!(seen, 1);
}

/// A monitor polls while two threads stream: no snapshot beyond the capacity, the
/// totals never go back, and at the end every item was pushed and popped once.
#[test]
fn a_monitor_reads_while_two_threads_stream() {
    let n: usize = if cfg!(miri) { 500 } else { 1_000_000 };
    let (mut tx, mut rx) = channel::<usize>(64);
    let watch = tx.observer();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let done = &done;
        let monitor = s.spawn(move || {
            let (mut last_pushed, mut last_popped, mut looks) = (0, 0, 0u64);
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                let st = watch.stats();
                assert!(st.len <= st.capacity && st.high_water <= st.capacity);
                assert!(st.pushed >= last_pushed && st.popped >= last_popped);
                assert!(st.popped <= n && st.pushed <= n);
                (last_pushed, last_popped) = (st.pushed, st.popped);
                looks += 1;
                std::thread::yield_now();
            }
            looks
        });
        s.spawn(move || {
            for i in 0..n {
                let mut v = i;
                while let Err(e) = tx.try_push(v) {
                    v = e.into_inner();
                    std::hint::spin_loop();
                }
            }
        });
        for i in 0..n {
            let v = loop {
                if let Ok(v) = rx.try_pop() {
                    break v;
                }
            };
            assert_eq!(v, i);
        }
        let end = rx.observer().stats();
        assert_eq!((end.pushed, end.popped, end.len), (n, n, 0));
        assert!(end.high_water >= 1);
        assert!(end.full_pushes >= end.full_events);
        done.store(true, std::sync::atomic::Ordering::Release);
        assert!(monitor.join().unwrap() >= 1);
    });
}
