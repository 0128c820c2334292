//! Every item is dropped exactly once, whoever holds it when it goes.
#![cfg(not(loom))]

// Under `--cfg handoff_global_alloc` (.ci/run) handoff-alloc is this test's global allocator.
#[cfg(handoff_global_alloc)]
use handoff_alloc as _;

mod common;

use common::{count, counter, Counted};
use handoff_spsc::{channel, StaticChannel};

#[test]
fn items_left_in_the_ring_are_dropped_once_producer_last() {
    let drops = counter();
    let (mut tx, rx) = channel::<Counted>(8);
    for i in 0..5 {
        tx.try_push(Counted::new(i, &drops)).unwrap();
    }
    drop(rx);
    assert_eq!(count(&drops), 0, "the producer still holds the ring");
    drop(tx);
    assert_eq!(count(&drops), 5);
}

#[test]
fn items_left_in_the_ring_are_dropped_once_consumer_last() {
    let drops = counter();
    let (mut tx, mut rx) = channel::<Counted>(4);
    for round in 0..3u64 {
        for i in 0..4 {
            tx.try_push(Counted::new(round * 10 + i, &drops)).unwrap();
        }
        drop(rx.try_pop().unwrap()); // wraps the indices around over the rounds
        drop(rx.try_pop().unwrap());
        drop(rx.try_pop().unwrap());
        drop(rx.try_pop().unwrap());
    }
    for i in 0..3 {
        tx.try_push(Counted::new(100 + i, &drops)).unwrap();
    }
    assert_eq!(count(&drops), 12);
    drop(tx);
    assert_eq!(count(&drops), 12);
    drop(rx);
    assert_eq!(count(&drops), 15);
}

#[test]
fn rejected_push_hands_the_value_back_undropped() {
    let drops = counter();
    let (mut tx, _rx) = channel::<Counted>(1);
    tx.try_push(Counted::new(0, &drops)).unwrap();
    let back = tx
        .try_push(Counted::new(1, &drops))
        .unwrap_err()
        .into_inner();
    assert_eq!(back.id, 1);
    assert_eq!(count(&drops), 0);
    drop(back);
    assert_eq!(count(&drops), 1);
}

#[test]
fn uncommitted_write_chunk_drops_what_it_wrote() {
    let drops = counter();
    let (mut tx, rx) = channel::<Counted>(4);
    let mut chunk = tx.write_chunk(4);
    chunk.push(Counted::new(0, &drops)).unwrap();
    chunk.push(Counted::new(1, &drops)).unwrap();
    drop(chunk);
    assert_eq!(count(&drops), 2);
    assert!(rx.is_empty());
    drop((tx, rx));
    assert_eq!(count(&drops), 2);
}

#[test]
fn committed_chunk_items_are_dropped_with_the_ring() {
    let drops = counter();
    let (mut tx, rx) = channel::<Counted>(4);
    let mut chunk = tx.write_chunk(3);
    assert_eq!(chunk.extend((0..10).map(|i| Counted::new(i, &drops))), 3);
    // The fourth item was produced by the iterator but never taken by `extend`.
    assert_eq!(count(&drops), 0);
    chunk.commit();
    drop((tx, rx));
    assert_eq!(count(&drops), 3);
}

#[test]
fn panicking_iterator_in_extend_leaks_nothing() {
    let drops = counter();
    let (mut tx, rx) = channel::<Counted>(8);
    let d = drops.clone();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut chunk = tx.write_chunk(8);
        chunk.extend((0..8).map(|i| {
            assert!(i < 3, "source failed");
            Counted::new(i, &d)
        }));
        chunk.commit();
    }));
    assert!(result.is_err());
    assert_eq!(
        count(&drops),
        3,
        "the three written items were dropped by the chunk"
    );
    assert!(rx.is_empty());
    drop((tx, rx));
    assert_eq!(count(&drops), 3);
}

/// `extend` fills the reservation segment by segment: across the end of the slot array,
/// after single `push`es into the same chunk, and with a source that panics in the
/// second segment (what was written is dropped by the chunk, once).
#[test]
fn extend_across_the_wrap_and_after_push() {
    let drops = counter();
    let (mut tx, mut rx) = channel::<Counted>(8);
    // Move both indices to 6, so a chunk of 8 runs over slots 6, 7, 0, ... 5.
    for i in 0..6 {
        tx.try_push(Counted::new(i, &drops)).unwrap();
    }
    for i in 0..6 {
        assert_eq!(rx.try_pop().unwrap().id, i);
    }
    let mut chunk = tx.write_chunk(8);
    assert_eq!(chunk.len(), 8);
    chunk.push(Counted::new(100, &drops)).unwrap();
    assert_eq!(chunk.extend((101..105).map(|i| Counted::new(i, &drops))), 4);
    assert_eq!(chunk.extend((105..200).map(|i| Counted::new(i, &drops))), 3);
    assert_eq!(chunk.extend((200..201).map(|i| Counted::new(i, &drops))), 0);
    chunk.commit();
    for i in 100..108 {
        assert_eq!(rx.try_pop().unwrap().id, i);
    }
    assert_eq!(count(&drops), 6 + 8);
    // Indices at 14 (slot 6): the source fails on its fourth item, in slot 1.
    let d = drops.clone();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut chunk = tx.write_chunk(8);
        chunk.extend((0..8).map(|i| {
            assert!(i < 3, "source failed");
            Counted::new(300 + i, &d)
        }));
        chunk.commit();
    }));
    assert!(result.is_err());
    assert_eq!(
        count(&drops),
        6 + 8 + 3,
        "the three written items dropped once"
    );
    assert!(rx.is_empty());
    tx.try_push(Counted::new(400, &drops)).unwrap();
    assert_eq!(rx.try_pop().unwrap().id, 400);
    drop((tx, rx));
    assert_eq!(count(&drops), 6 + 8 + 3 + 1);
}

#[test]
fn read_chunk_take_consume_and_leave() {
    let drops = counter();
    let (mut tx, mut rx) = channel::<Counted>(8);
    for i in 0..6 {
        tx.try_push(Counted::new(i, &drops)).unwrap();
    }
    {
        let mut chunk = rx.read_chunk(5);
        let first = chunk.next().unwrap();
        assert_eq!(first.id, 0);
        assert_eq!(chunk.consume(2), 2); // ids 1 and 2 dropped in place
        assert_eq!(count(&drops), 2);
        drop(first);
        assert_eq!(count(&drops), 3);
        // ids 3 and 4 were not taken: they stay in the ring.
    }
    assert_eq!(rx.len(), 3);
    assert_eq!(rx.try_pop().unwrap().id, 3);
    assert_eq!(count(&drops), 4);
    drop((tx, rx));
    assert_eq!(count(&drops), 6);
}

#[test]
fn peeked_item_is_not_dropped_by_peek() {
    let drops = counter();
    let (mut tx, mut rx) = channel::<Counted>(2);
    tx.try_push(Counted::new(7, &drops)).unwrap();
    assert_eq!(rx.peek().unwrap().id, 7);
    assert_eq!(count(&drops), 0);
    drop(rx.try_pop());
    assert_eq!(count(&drops), 1);
}

#[test]
fn static_channel_drops_leftovers_when_both_handles_go() {
    let drops = counter();
    let ring = StaticChannel::<Counted, 4>::new();
    {
        let (mut tx, mut rx) = ring.split().unwrap();
        for i in 0..4 {
            tx.try_push(Counted::new(i, &drops)).unwrap();
        }
        drop(rx.try_pop());
        assert_eq!(count(&drops), 1);
    }
    assert_eq!(count(&drops), 4);
}
