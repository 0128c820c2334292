//! The waiting layer (`handoff_spsc::wait`): every item arrives once and in order
//! through the waiting calls of every strategy and through the parking handles, both
//! ways; a wait ends with `Disconnected` when the other side goes (its thread
//! panicking included) and with `Timeout` when nothing comes.
#![cfg(not(loom))]

#[cfg(handoff_global_alloc)]
use handoff_alloc as _;

use std::time::{Duration, Instant};

use handoff_spsc::channel;
use handoff_spsc::wait::{
    parking, PopTimeoutError, PushTimeoutError, Spin, SpinThenYield, Strategy,
};

/// Items per two-thread run (smaller under Miri).
fn items() -> u64 {
    if cfg!(miri) {
        200
    } else {
        200_000
    }
}

/// Long enough that only a lost wake-up or a hang reaches it: a wait that returns
/// `Timeout` fails the test instead of hanging it.
const GUARD: Duration = Duration::from_secs(60);

/// A strategy that counts its calls, to check the waiting calls use the one given.
#[derive(Default)]
struct Counting<'a>(Option<&'a mut u64>);

impl Strategy for Counting<'_> {
    fn wait(&mut self, tries: u32, _deadline: Option<Instant>) {
        assert!(tries >= 1);
        if let Some(n) = self.0.as_deref_mut() {
            *n += 1;
        }
        std::thread::yield_now();
    }
}

fn through_waiting_calls<S: Strategy + Copy + Send>(strategy: S, capacity: usize) {
    let n = items();
    let (mut tx, mut rx) = channel::<u64>(capacity);
    std::thread::scope(|s| {
        s.spawn(move || {
            for i in 0..n {
                tx.push_timeout(i, GUARD, strategy)
                    .expect("push within the guard");
            }
        });
        let mut next = 0;
        loop {
            match rx.pop_timeout(GUARD, strategy) {
                Ok(v) => {
                    assert_eq!(v, next, "lost, duplicated or reordered");
                    next += 1;
                }
                Err(PopTimeoutError::Disconnected) => break,
                Err(e) => panic!("item {next}: {e}"),
            }
        }
        assert_eq!(next, n, "every item, then Disconnected");
    });
}

#[test]
fn every_item_arrives_through_the_spinning_waits() {
    through_waiting_calls(Spin, 4);
}

#[test]
fn every_item_arrives_through_the_yielding_waits() {
    through_waiting_calls(SpinThenYield::new(2), 1);
    through_waiting_calls(SpinThenYield::default(), 64);
}

#[test]
fn a_wait_uses_the_strategy_given_and_times_out() {
    let (mut tx, mut rx) = channel::<u8>(1);
    let mut calls = 0;
    let start = Instant::now();
    let timeout = Duration::from_millis(20);
    assert_eq!(
        rx.pop_timeout(timeout, Counting(Some(&mut calls))),
        Err(PopTimeoutError::Timeout)
    );
    assert!(start.elapsed() >= timeout, "returned before its timeout");
    assert!(calls >= 1);
    tx.try_push(1).unwrap();
    let mut calls = 0;
    assert_eq!(
        tx.push_timeout(2, timeout, Counting(Some(&mut calls))),
        Err(PushTimeoutError::Timeout(2))
    );
    assert!(calls >= 1);
    // Something there: no wait at all.
    let mut calls = 0;
    assert_eq!(rx.pop_timeout(timeout, Counting(Some(&mut calls))), Ok(1));
    assert_eq!(calls, 0);
    assert!(tx.push_timeout(3, Duration::ZERO, Counting(None)).is_ok());
    // A zero timeout tries once more after the first failure, then gives up.
    assert_eq!(
        tx.push_timeout(4, Duration::ZERO, Spin),
        Err(PushTimeoutError::Timeout(4))
    );
}

#[test]
fn a_waiting_consumer_sees_the_producer_panic() {
    let (mut tx, mut rx) = channel::<u64>(8);
    let producer = std::thread::spawn(move || {
        tx.try_push(1).unwrap();
        panic!("the feed thread dies");
    });
    assert_eq!(rx.pop_timeout(GUARD, SpinThenYield::default()), Ok(1));
    assert_eq!(
        rx.pop_timeout(GUARD, SpinThenYield::default()),
        Err(PopTimeoutError::Disconnected)
    );
    assert!(producer.join().is_err());
}

#[test]
fn a_waiting_producer_sees_the_consumer_panic() {
    let (mut tx, rx) = channel::<u64>(1);
    tx.try_push(0).unwrap();
    let consumer = std::thread::spawn(move || {
        let _rx = rx;
        panic!("the strategy thread dies");
    });
    assert_eq!(
        tx.push_timeout(1, GUARD, Spin),
        Err(PushTimeoutError::Disconnected(1))
    );
    assert!(consumer.join().is_err());
}

/// Both sides park: a ring of one slot, so the producer waits for room and the
/// consumer for an item, item after item, and each must be woken by the other. A lost
/// wake-up shows as a `Timeout` after the guard.
#[test]
fn parking_handles_wake_each_other_both_ways() {
    let n = items() / 10;
    let (tx, rx) = channel::<u64>(1);
    let (mut tx, mut rx) = parking(tx, rx);
    std::thread::scope(|s| {
        s.spawn(move || {
            for i in 0..n {
                tx.push_timeout(i, GUARD).expect("woken for room");
                if i % 64 == 0 {
                    // Let the consumer go to sleep now and then.
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        });
        let mut next = 0;
        loop {
            match rx.pop_timeout(GUARD) {
                Ok(v) => {
                    assert_eq!(v, next);
                    next += 1;
                    if next % 97 == 0 {
                        // And the producer, with the ring full.
                        std::thread::sleep(Duration::from_micros(200));
                    }
                }
                Err(PopTimeoutError::Disconnected) => break,
                Err(e) => panic!("item {next}: {e} (a lost wake-up?)"),
            }
        }
        assert_eq!(next, n);
    });
}

/// A consumer parked with no timeout at all is woken by the producer's drop, and by
/// its panic.
#[test]
fn a_parked_consumer_wakes_when_the_producer_goes() {
    for panics in [false, true] {
        let (tx, rx) = channel::<u64>(4);
        let (mut tx, mut rx) = parking(tx, rx);
        let producer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(if cfg!(miri) { 1 } else { 20 }));
            tx.try_push(9).unwrap();
            if panics {
                panic!("the feed thread dies");
            }
        });
        assert_eq!(rx.pop_timeout(Duration::MAX), Ok(9));
        assert_eq!(
            rx.pop_timeout(Duration::MAX),
            Err(PopTimeoutError::Disconnected)
        );
        assert_eq!(producer.join().is_err(), panics);
    }
}

#[test]
fn a_parked_producer_wakes_when_the_consumer_goes() {
    let (tx, rx) = channel::<String>(1);
    let (mut tx, rx) = parking(tx, rx);
    tx.try_push("a".into()).unwrap();
    let consumer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(if cfg!(miri) { 1 } else { 20 }));
        drop(rx);
    });
    let e = tx.push_timeout("b".into(), Duration::MAX).unwrap_err();
    assert!(matches!(e, PushTimeoutError::Disconnected(_)));
    assert_eq!(e.into_inner(), "b");
    consumer.join().unwrap();
}

#[test]
fn parking_timeouts_and_errors_read_well() {
    let (tx, rx) = channel::<u8>(1);
    let (mut tx, mut rx) = parking(tx, rx);
    let start = Instant::now();
    let timeout = Duration::from_millis(10);
    assert_eq!(rx.pop_timeout(timeout), Err(PopTimeoutError::Timeout));
    assert!(start.elapsed() >= timeout);
    tx.try_push(1).unwrap();
    let e = tx.push_timeout(2, timeout).unwrap_err();
    assert_eq!(e, PushTimeoutError::Timeout(2));
    assert_eq!(e.to_string(), "timed out waiting for room");
    assert_eq!(format!("{e:?}"), "Timeout(..)");
    assert_eq!(
        PopTimeoutError::Disconnected.to_string(),
        "the ring is empty and its producer has been dropped"
    );
    assert!(format!("{tx:?}").starts_with("ParkingProducer(Producer"));
    assert_eq!(rx.get_ref().len(), 1);
    assert_eq!(tx.get_ref().capacity(), 1);
}

#[test]
#[should_panic(expected = "not the two halves of one ring")]
fn parking_refuses_halves_of_two_rings() {
    let (tx, _rx) = channel::<u8>(4);
    let (_tx2, rx2) = channel::<u8>(4);
    let _ = parking(tx, rx2);
}

/// A `ReadChunk` forgotten before the wrap left the shared index behind: the wrap
/// publishes it, so a producer waiting for room is not left parked on a ring that has
/// room.
#[test]
fn a_chunk_forgotten_before_parking_does_not_strand_the_producer() {
    let (mut tx, mut rx) = channel::<u8>(1);
    tx.try_push(1).unwrap();
    let mut chunk = rx.read_chunk(1);
    chunk.consume(1);
    std::mem::forget(chunk); // the slot is free, the shared head does not say so yet
    let (mut tx, _rx) = parking(tx, rx);
    assert_eq!(tx.push_timeout(2, Duration::from_millis(100)), Ok(()));
}
