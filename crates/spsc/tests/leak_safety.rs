//! Leak safety: forgetting any guard (`mem::forget` is safe) may leak items but never
//! hands one out twice or drops one twice, and a destructor that panics while a range of
//! items is being dropped still lets every other item of the range be dropped once.
//!
//! Items are `Tok`s of a stack `Ledger`, which counts the drops of every item id and
//! allocates nothing per item, so Miri's leak check stays meaningful for the ring's own
//! memory even where a test leaks items on purpose.
#![cfg(not(loom))]

// Under `--cfg handoff_global_alloc` (.ci/run) handoff-alloc is this test's global allocator.
#[cfg(handoff_global_alloc)]
use handoff_alloc as _;

mod common;

use std::mem;
use std::panic::{catch_unwind, AssertUnwindSafe};

use common::{Ledger, Tok};
use handoff_spsc::{channel, Consumer, Producer, StaticChannel};

const CAP: usize = 4;

/// A ring of `CAP` slots whose indices have moved by 3 (items 0, 1, 2 pushed, popped
/// and dropped), so that a full ring's items wrap around the end of the slot array.
fn wrapped_ring(ledger: &Ledger) -> (Producer<Tok<'_>>, Consumer<Tok<'_>>) {
    let (mut tx, mut rx) = channel::<Tok<'_>>(CAP);
    for id in 0..3 {
        tx.try_push(ledger.tok(id)).unwrap();
        assert_eq!(rx.try_pop().unwrap().id, id);
    }
    (tx, rx)
}

fn ids<'a>(items: impl IntoIterator<Item = &'a Tok<'a>>) -> Vec<usize> {
    items.into_iter().map(|t| t.id).collect()
}

fn pop_all(rx: &mut Consumer<Tok<'_>>) -> Vec<usize> {
    let mut out = Vec::new();
    while let Ok(t) = rx.try_pop() {
        out.push(t.id);
    }
    out
}

fn push_until_full<'a>(tx: &mut Producer<Tok<'a>>, ledger: &'a Ledger, next: &mut usize) -> usize {
    let mut n = 0;
    while tx.try_push(ledger.tok(*next)).is_ok() {
        *next += 1;
        n += 1;
    }
    *next += 1; // the refused one was dropped when the error was
    n
}

// ---------------------------------------------------------------------------------
// The programs of the issue.

#[test]
fn issue_program_forgotten_read_chunk_after_next() {
    let (mut tx, mut rx) = channel::<String>(4);
    tx.try_push("hello world, heap string".to_string()).unwrap();
    let mut chunk = rx.read_chunk(1);
    let a = chunk.next().unwrap();
    mem::forget(chunk);
    assert_eq!(
        rx.try_pop(),
        Err(handoff_spsc::PopError::Empty),
        "the taken item must not come out again"
    );
    assert_eq!(a, "hello world, heap string");
    drop(a);
    tx.try_push("second".to_string()).unwrap();
    assert_eq!(rx.try_pop().as_deref(), Ok("second"));
}

#[test]
fn issue_program_forgotten_read_chunk_after_consume() {
    let (mut tx, mut rx) = channel::<String>(4);
    tx.try_push("hello world, heap string".to_string()).unwrap();
    tx.try_push("kept".to_string()).unwrap();
    let mut chunk = rx.read_chunk(1);
    assert_eq!(chunk.consume(1), 1);
    mem::forget(chunk);
    assert_eq!(rx.try_pop().as_deref(), Ok("kept"));
    assert_eq!(rx.try_pop(), Err(handoff_spsc::PopError::Empty));
    // Teardown with the consumed string's slot still unpublished to the producer.
    let mut chunk = rx.read_chunk(1);
    assert!(chunk.next().is_none());
    drop(chunk);
    tx.try_push("left in the ring".to_string()).unwrap();
    drop(rx);
    drop(tx);
}

// ---------------------------------------------------------------------------------
// Forgetting a ReadChunk after each operation, followed by every other operation.

#[derive(Clone, Copy, Debug)]
enum ReadStep {
    Nothing,
    Look,
    Take(usize),
    Consume(usize),
    TakeThenConsume,
}

#[derive(Clone, Copy, Debug)]
enum Then {
    PopAll,
    Peek,
    ReadChunkAgain,
    Refill,
    ConsumerLast,
    ProducerLast,
}

const READ_STEPS: [ReadStep; 9] = [
    ReadStep::Nothing,
    ReadStep::Look,
    ReadStep::Take(1),
    ReadStep::Take(2),
    ReadStep::Take(4),
    ReadStep::Consume(1),
    ReadStep::Consume(3),
    ReadStep::Consume(4),
    ReadStep::TakeThenConsume,
];
const THENS: [Then; 6] = [
    Then::PopAll,
    Then::Peek,
    Then::ReadChunkAgain,
    Then::Refill,
    Then::ConsumerLast,
    Then::ProducerLast,
];

fn forget_read_chunk(step: ReadStep, then: Then) {
    let ledger = Ledger::new(32);
    let (mut tx, mut rx) = wrapped_ring(&ledger);
    for id in 3..7 {
        tx.try_push(ledger.tok(id)).unwrap(); // slots 3, 0, 1, 2
    }
    let mut chunk = rx.read_chunk(CAP);
    assert_eq!(chunk.len(), 4);
    let mut held = Vec::new();
    // ids 3..gone are taken or consumed through the chunk.
    let gone = match step {
        ReadStep::Nothing => 3,
        ReadStep::Look => {
            let (a, b) = chunk.as_slices();
            assert_eq!(ids(a.iter().chain(b)), [3, 4, 5, 6]);
            3
        }
        ReadStep::Take(k) => {
            held.extend(chunk.by_ref().take(k));
            3 + k
        }
        ReadStep::Consume(k) => {
            assert_eq!(chunk.consume(k), k);
            3 + k
        }
        ReadStep::TakeThenConsume => {
            held.push(chunk.next().unwrap());
            assert_eq!(chunk.consume(2), 2);
            6
        }
    };
    assert_eq!(ids(&held), (3..(3 + held.len())).collect::<Vec<_>>());
    mem::forget(chunk);
    drop(held);
    ledger.assert_dropped(0..gone);
    let remaining: Vec<usize> = (gone..7).collect();
    assert_eq!(rx.len(), remaining.len(), "{step:?}");

    match then {
        Then::PopAll => {
            assert_eq!(pop_all(&mut rx), remaining, "{step:?}");
            ledger.assert_dropped(0..7);
            // The producer gets every slot back once the consumer releases again.
            let mut next = 10;
            assert_eq!(push_until_full(&mut tx, &ledger, &mut next), CAP);
            assert_eq!(pop_all(&mut rx), (10..14).collect::<Vec<_>>());
        }
        Then::Peek => {
            assert_eq!(rx.peek().map(|t| t.id), remaining.first().copied());
            ledger.assert_dropped(0..gone);
        }
        Then::ReadChunkAgain => {
            let again: Vec<Tok<'_>> = rx.read_chunk(CAP).collect();
            assert_eq!(ids(&again), remaining, "{step:?}");
            drop(again);
            ledger.assert_dropped(0..7);
        }
        Then::Refill => {
            // Before the consumer releases again the producer may see fewer free slots
            // than there are (never more); it must not overwrite a live item.
            let mut next = 10;
            let early = push_until_full(&mut tx, &ledger, &mut next);
            assert!(early <= CAP - remaining.len(), "{step:?}: {early} pushed");
            let mut expect = remaining.clone();
            expect.extend(10..10 + early);
            assert_eq!(pop_all(&mut rx), expect, "{step:?}");
            let first_new = next;
            assert_eq!(push_until_full(&mut tx, &ledger, &mut next), CAP);
            assert_eq!(
                pop_all(&mut rx),
                (first_new..first_new + CAP).collect::<Vec<_>>()
            );
            // Every item that ever existed was dropped once: none overwritten, none twice.
            ledger.assert_dropped((0..7).chain(10..next));
        }
        Then::ConsumerLast => {
            drop(tx);
            ledger.assert_dropped(0..gone);
            drop(rx);
            ledger.assert_dropped(0..7);
        }
        Then::ProducerLast => {
            drop(rx);
            ledger.assert_dropped(0..gone);
            drop(tx);
            ledger.assert_dropped(0..7);
        }
    }
}

#[test]
fn forgotten_read_chunk_then_every_operation() {
    for step in READ_STEPS {
        for then in THENS {
            forget_read_chunk(step, then);
        }
    }
}

#[test]
fn forgotten_read_chunks_in_a_row_then_pop_slice() {
    let (mut tx, mut rx) = channel::<u32>(4);
    let mut next = 0u32;
    for _ in 0..10 {
        let n = tx.push_slice(&[next, next + 1, next + 2]);
        assert_eq!(n, 3);
        let mut chunk = rx.read_chunk(2);
        assert_eq!(chunk.next(), Some(next));
        mem::forget(chunk);
        let mut chunk = rx.read_chunk(2);
        assert_eq!(chunk.consume(1), 1); // next + 1
        mem::forget(chunk);
        let mut out = [0u32; 4];
        assert_eq!(rx.pop_slice(&mut out), 1);
        assert_eq!(out[0], next + 2);
        next += 3;
    }
}

// ---------------------------------------------------------------------------------
// Forgetting a WriteChunk after each operation.

#[derive(Clone, Copy, Debug)]
enum WriteStep {
    Nothing,
    Push(usize),
    Extend(usize),
    AssumeWritten(usize),
}

fn forget_write_chunk(step: WriteStep, then: Then) {
    let ledger = Ledger::new(32);
    let (mut tx, mut rx) = wrapped_ring(&ledger);
    tx.try_push(ledger.tok(3)).unwrap(); // slot 3; the chunk gets slots 0, 1, 2
    let mut chunk = tx.write_chunk(CAP);
    assert_eq!(chunk.len(), 3);
    match step {
        WriteStep::Nothing => {}
        WriteStep::Push(k) => {
            for i in 0..k {
                chunk.push(ledger.tok(20 + i)).unwrap();
            }
        }
        WriteStep::Extend(k) => {
            assert_eq!(chunk.extend((20..20 + k).map(|id| ledger.tok(id))), k);
        }
        WriteStep::AssumeWritten(k) => {
            let (a, b) = chunk.as_mut_slices();
            assert!(b.is_empty());
            for (i, slot) in a.iter_mut().take(k).enumerate() {
                slot.write(ledger.tok(20 + i));
            }
            // SAFETY: the first `k` slots were just written.
            unsafe { chunk.assume_written(k) };
        }
    }
    mem::forget(chunk);
    // The written items are leaked: never published, never dropped.
    ledger.assert_dropped(0..3);
    assert_eq!(rx.len(), 1, "{step:?}");
    assert_eq!(tx.free_len(), 3, "{step:?}");

    match then {
        Then::PopAll | Then::Refill => {
            let mut next = 10;
            assert_eq!(push_until_full(&mut tx, &ledger, &mut next), 3);
            assert_eq!(pop_all(&mut rx), [3, 10, 11, 12], "{step:?}");
            // ids 0..4, the pushed 10..13 and the refused 13 dropped; 20.. leaked.
            ledger.assert_dropped((0..4).chain(10..14));
        }
        Then::Peek => assert_eq!(rx.peek().map(|t| t.id), Some(3)),
        Then::ReadChunkAgain => {
            let got: Vec<Tok<'_>> = rx.read_chunk(CAP).collect();
            assert_eq!(ids(&got), [3]);
        }
        Then::ConsumerLast => {
            drop(tx);
            drop(rx);
            ledger.assert_dropped(0..4);
        }
        Then::ProducerLast => {
            drop(rx);
            drop(tx);
            ledger.assert_dropped(0..4);
        }
    }
}

#[test]
fn forgotten_write_chunk_then_every_operation() {
    let steps = [
        WriteStep::Nothing,
        WriteStep::Push(1),
        WriteStep::Push(3),
        WriteStep::Extend(2),
        WriteStep::AssumeWritten(3),
    ];
    for step in steps {
        for then in THENS {
            forget_write_chunk(step, then);
        }
    }
}

#[test]
fn forgotten_committed_nothing_after_a_commit() {
    // A chunk committed, then a new one forgotten: only the committed items exist.
    let ledger = Ledger::new(8);
    let (mut tx, mut rx) = channel::<Tok<'_>>(4);
    let mut chunk = tx.write_chunk(2);
    chunk.extend([ledger.tok(0), ledger.tok(1)]);
    chunk.commit();
    let mut chunk = tx.write_chunk(2);
    chunk.push(ledger.tok(5)).unwrap();
    mem::forget(chunk);
    assert_eq!(pop_all(&mut rx), [0, 1]);
    drop((tx, rx));
    ledger.assert_dropped(0..2);
}

// ---------------------------------------------------------------------------------
// Forgetting a handle (on a StaticChannel, so the ring's memory is not leaked too).

#[test]
fn forgotten_consumer_leaks_its_items_and_nothing_else() {
    let ledger = Ledger::new(8);
    let ring = StaticChannel::<Tok<'_>, 4>::new();
    let (mut tx, mut rx) = ring.split().unwrap();
    for id in 0..4 {
        tx.try_push(ledger.tok(id)).unwrap();
    }
    assert_eq!(rx.try_pop().unwrap().id, 0);
    mem::forget(rx);
    assert!(
        !tx.is_abandoned(),
        "a forgotten consumer is not a dropped one"
    );
    tx.try_push(ledger.tok(4)).unwrap();
    assert!(tx.try_push(ledger.tok(5)).is_err());
    drop(tx);
    // 0 was popped, 5 refused: both dropped. 1..5 stay in the ring, leaked.
    ledger.assert_dropped([0, 5]);
    assert!(ring.split().is_none());
}

#[test]
fn forgotten_producer_leaves_its_items_to_the_consumer() {
    let ledger = Ledger::new(8);
    let ring = StaticChannel::<Tok<'_>, 4>::new();
    let (mut tx, mut rx) = ring.split().unwrap();
    for id in 0..3 {
        tx.try_push(ledger.tok(id)).unwrap();
    }
    mem::forget(tx);
    assert_eq!(rx.try_pop().unwrap().id, 0);
    let mut chunk = rx.read_chunk(1);
    assert_eq!(chunk.next().unwrap().id, 1);
    mem::forget(chunk);
    drop(rx);
    // Not the last handle out: item 2 is leaked, not dropped.
    ledger.assert_dropped([0, 1]);
}

// ---------------------------------------------------------------------------------
// A destructor that panics while a range of items is dropped.

/// Runs `f`, which must panic, and hands back its payload message.
fn must_panic(f: impl FnOnce()) -> String {
    let err = catch_unwind(AssertUnwindSafe(f)).expect_err("a destructor should have panicked");
    err.downcast_ref::<String>().cloned().unwrap_or_default()
}

#[test]
fn consume_drops_the_rest_of_the_range_when_a_destructor_panics() {
    for bad in 3..7 {
        let ledger = Ledger::new(16);
        ledger.panic_on(bad);
        let (mut tx, mut rx) = wrapped_ring(&ledger);
        for id in 3..7 {
            tx.try_push(ledger.tok(id)).unwrap(); // slots 3, 0, 1, 2: the range wraps
        }
        let msg = must_panic(|| {
            let mut chunk = rx.read_chunk(CAP);
            chunk.consume(CAP);
        });
        assert!(msg.contains(&format!("item {bad}")), "{msg}");
        ledger.assert_dropped(0..7);
        // The unwinding dropped the chunk, which gave the slots back.
        assert_eq!(rx.len(), 0);
        assert_eq!(tx.free_len(), CAP);
        tx.try_push(ledger.tok(7)).unwrap();
        assert_eq!(pop_all(&mut rx), [7]);
        drop((tx, rx));
        ledger.assert_dropped(0..8);
    }
}

#[test]
fn consume_of_part_of_a_chunk_with_a_panicking_destructor_keeps_the_rest_in_the_ring() {
    let ledger = Ledger::new(16);
    ledger.panic_on(4);
    let (mut tx, mut rx) = wrapped_ring(&ledger);
    for id in 3..7 {
        tx.try_push(ledger.tok(id)).unwrap();
    }
    must_panic(|| {
        let mut chunk = rx.read_chunk(CAP);
        chunk.consume(3); // 3, 4 (panics), 5
    });
    ledger.assert_dropped(0..6);
    assert_eq!(pop_all(&mut rx), [6]);
    drop((tx, rx));
    ledger.assert_dropped(0..7);
}

#[test]
fn teardown_drops_every_leftover_when_one_destructor_panics() {
    for consumer_last in [false, true] {
        for bad in 3..7 {
            let ledger = Ledger::new(16);
            ledger.panic_on(bad);
            let (mut tx, rx) = wrapped_ring(&ledger);
            for id in 3..7 {
                tx.try_push(ledger.tok(id)).unwrap(); // the leftovers wrap
            }
            // The first handle out drops nothing; the last one drops the leftovers.
            let msg = if consumer_last {
                drop(tx);
                ledger.assert_dropped(0..3);
                must_panic(move || drop(rx))
            } else {
                drop(rx);
                ledger.assert_dropped(0..3);
                must_panic(move || drop(tx))
            };
            assert!(msg.contains(&format!("item {bad}")), "{msg}");
            // Every leftover dropped once; the ring's memory is freed (Miri checks).
            ledger.assert_dropped(0..7);
        }
    }
}

#[test]
fn static_channel_teardown_with_a_panicking_destructor() {
    let ledger = Ledger::new(8);
    ledger.panic_on(2);
    let ring = StaticChannel::<Tok<'_>, 4>::new();
    let (mut tx, rx) = ring.split().unwrap();
    for id in 0..4 {
        tx.try_push(ledger.tok(id)).unwrap();
    }
    drop(rx);
    must_panic(move || drop(tx));
    ledger.assert_dropped(0..4);
}

#[test]
fn uncommitted_write_chunk_drops_the_rest_when_a_destructor_panics() {
    for bad in 10..14 {
        let ledger = Ledger::new(16);
        ledger.panic_on(bad);
        let (mut tx, mut rx) = wrapped_ring(&ledger);
        let msg = must_panic(|| {
            let mut chunk = tx.write_chunk(CAP); // slots 3, 0, 1, 2: wraps
            assert_eq!(chunk.extend((10..14).map(|id| ledger.tok(id))), 4);
            drop(chunk);
        });
        assert!(msg.contains(&format!("item {bad}")), "{msg}");
        ledger.assert_dropped((0..3).chain(10..14));
        // Nothing was published and every slot is still free.
        assert!(rx.is_empty());
        assert_eq!(tx.free_len(), CAP);
        tx.try_push(ledger.tok(5)).unwrap();
        assert_eq!(pop_all(&mut rx), [5]);
        drop((tx, rx));
        ledger.assert_dropped((0..3).chain([5]).chain(10..14));
    }
}
