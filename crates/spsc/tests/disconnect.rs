//! The other side is gone: a push into a full ring whose consumer thread panicked says
//! `Disconnected` (a retry-on-full loop ends), and a consumer whose producer thread
//! panicked pops every item it pushed first, then gets `Disconnected`, for the ring and
//! the stamped ring.

use handoff_spsc::{channel, stamped, PopError, PushError};
use std::thread;

/// Runs `f` on a thread that panics after it, and returns once it is gone.
fn on_a_thread_that_panics(f: impl FnOnce() + Send + 'static) {
    let joined = thread::spawn(move || {
        f();
        panic!("the other side's thread panics (expected by this test)");
    })
    .join();
    assert!(joined.is_err(), "the thread was meant to panic");
}

/// Pushes into a ring of capacity 4 whose consumer takes one item and panics: the
/// producer's retry-on-full loop stops with `Disconnected`, the value handed back.
fn producer_sees_the_consumer_gone<P, C: Send + 'static>(
    (mut tx, rx): (P, C),
    push: fn(&mut P, u64) -> Result<(), PushError<u64>>,
    pop: fn(&mut C) -> Result<u64, PopError>,
) {
    push(&mut tx, 0).unwrap();
    // The consumer takes item 0 and its thread panics (joined before the loop below).
    on_a_thread_that_panics(move || {
        let mut rx = rx;
        let first = loop {
            if let Ok(v) = pop(&mut rx) {
                break v;
            }
        };
        assert_eq!(first, 0);
    });
    // The consumer is gone: four pushes fill the ring, the fifth is refused at once.
    let mut pushed = 1;
    let error = loop {
        match push(&mut tx, pushed) {
            Ok(()) => pushed += 1,
            Err(e) => break e,
        }
    };
    assert!(error.is_disconnected(), "{error:?}");
    assert_eq!(error.into_inner(), pushed, "the value comes back");
    assert_eq!(pushed, 5, "item 0 taken, then the 4 slots filled");
}

#[test]
fn a_full_ring_whose_consumer_panicked_says_disconnected() {
    let push = |tx: &mut handoff_spsc::Producer<u64>, v| tx.try_push(v);
    producer_sees_the_consumer_gone(channel(4), push, |rx| rx.try_pop());
    let push = |tx: &mut stamped::Producer<u64>, v| tx.try_push(v);
    producer_sees_the_consumer_gone(stamped::channel(4), push, |rx| rx.try_pop());
}

#[test]
fn a_ring_with_room_takes_a_push_after_its_consumer_is_gone() {
    // Whether the consumer is there is read only when the ring is full.
    let (mut tx, rx) = channel::<u64>(4);
    drop(rx);
    assert!(tx.is_abandoned());
    assert_eq!(tx.try_push(1), Ok(()));
    let (mut tx, rx) = stamped::channel::<u64>(4);
    drop(rx);
    assert_eq!(tx.try_push(1), Ok(()));
}

/// A producer thread pushes 0..n and panics; the consumer polls, gets every item in
/// order, then `Disconnected` (and again on every later call).
fn consumer_sees_the_producer_gone<P: Send + 'static, C>(
    (tx, mut rx): (P, C),
    n: u64,
    push: impl Fn(&mut P, u64) -> Result<(), PushError<u64>> + Send + 'static,
    pop: impl Fn(&mut C) -> Result<u64, PopError>,
) {
    let producer = thread::spawn(move || {
        let mut tx = tx;
        for i in 0..n {
            while push(&mut tx, i).is_err() {}
        }
        panic!("the producer's thread panics (expected by this test)");
    });
    let mut next = 0;
    // Not a speed check: a guard against a loop that would never end (a lost
    // `Disconnected`), far beyond what a busy machine takes.
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(300);
    loop {
        match pop(&mut rx) {
            Ok(v) => {
                assert_eq!(v, next, "in order, none lost or repeated");
                next += 1;
            }
            Err(PopError::Empty) => {
                assert!(
                    std::time::Instant::now() < give_up,
                    "a poll loop that never ends"
                );
                thread::yield_now();
            }
            Err(PopError::Disconnected) => break,
        }
    }
    assert_eq!(
        next, n,
        "every item pushed before the producer went was popped"
    );
    assert!(producer.join().is_err());
    assert_eq!(pop(&mut rx), Err(PopError::Disconnected));
}

#[test]
fn a_consumer_whose_producer_panicked_pops_everything_then_says_disconnected() {
    const N: u64 = if cfg!(miri) { 100 } else { 100_000 };
    for capacity in [1, 4, 64] {
        consumer_sees_the_producer_gone(
            channel::<u64>(capacity),
            N,
            |tx, v| tx.try_push(v),
            |rx| rx.try_pop(),
        );
        consumer_sees_the_producer_gone(
            stamped::channel::<u64>(capacity),
            N,
            |tx, v| tx.try_push(v),
            |rx| rx.try_pop(),
        );
    }
}
