//! The stamped ring (`handoff_spsc::stamped`) on one thread: bad input, exact capacity,
//! every item dropped once (also when a destructor panics at teardown), forgotten
//! halves. Its two-thread stress tests are in `stress.rs`, its loom models in `loom.rs`.
#![cfg(not(loom))]

// Under `--cfg handoff_global_alloc` (.ci/run) handoff-alloc is this test's global allocator.
#[cfg(handoff_global_alloc)]
use handoff_alloc as _;

mod common;

use common::{count, counter, Counted, Ledger};
use handoff_spsc::stamped::{channel, try_channel, Consumer, Producer};
use handoff_spsc::{CapacityError, PushError};
use std::panic::{catch_unwind, AssertUnwindSafe};

#[test]
fn bad_capacities_are_errors() {
    assert_eq!(try_channel::<u8>(0).unwrap_err(), CapacityError::Zero);
    assert!(matches!(
        try_channel::<u64>(usize::MAX).unwrap_err(),
        CapacityError::TooLarge { .. }
    ));
    assert!(matches!(
        try_channel::<u64>(usize::MAX / 16).unwrap_err(),
        CapacityError::TooLarge { .. } | CapacityError::AllocFailed { .. }
    ));
    let msg = catch_unwind(|| channel::<u8>(0)).unwrap_err();
    let msg = msg.downcast_ref::<String>().unwrap();
    assert!(msg.contains("capacity must be at least 1"), "{msg}");
}

#[test]
fn capacity_is_exact_for_any_size() {
    for capacity in [1usize, 2, 3, 5, 8, 100] {
        let (mut tx, mut rx) = channel::<usize>(capacity);
        assert_eq!((tx.capacity(), rx.capacity()), (capacity, capacity));
        for i in 0..capacity {
            assert_eq!(tx.free_len(), capacity - i);
            tx.try_push(i).unwrap();
        }
        assert!(tx.is_full());
        assert_eq!(tx.try_push(usize::MAX), Err(PushError::Full(usize::MAX)));
        assert_eq!((tx.len(), rx.len()), (capacity, capacity));
        // One pop frees exactly one slot, which the next push takes.
        assert_eq!(rx.try_pop(), Ok(0));
        tx.try_push(capacity).unwrap();
        assert!(tx.try_push(0).is_err());
        for i in 1..=capacity {
            assert_eq!(rx.peek(), Some(&i));
            assert_eq!(rx.try_pop(), Ok(i));
        }
        assert_eq!(rx.try_pop(), Err(handoff_spsc::PopError::Empty));
        assert_eq!(rx.peek(), None);
        assert!(rx.is_empty() && tx.is_empty());
    }
}

#[test]
fn zero_sized_items_are_counted() {
    let (mut tx, mut rx) = channel::<()>(3);
    for _ in 0..3 {
        tx.try_push(()).unwrap();
    }
    assert!(tx.try_push(()).is_err());
    for _ in 0..3 {
        assert_eq!(rx.try_pop(), Ok(()));
    }
    assert_eq!(rx.try_pop(), Err(handoff_spsc::PopError::Empty));
}

#[test]
fn halves_know_when_the_other_is_gone() {
    let (mut tx, rx) = channel::<u8>(2);
    assert!(!tx.is_abandoned() && !rx.is_abandoned());
    tx.try_push(1).unwrap();
    drop(tx);
    assert!(rx.is_abandoned());
    let (tx, rx) = channel::<u8>(2);
    drop(rx);
    assert!(tx.is_abandoned());
}

#[test]
fn debug_does_not_need_debug_items() {
    struct Opaque;
    let (tx, rx) = channel::<Opaque>(4);
    let s = format!("{tx:?} {rx:?}");
    assert!(s.contains("capacity: 4"), "{s}");
    assert_eq!(
        format!("{:?}", PushError::Full(Opaque)),
        "Full(..)",
        "the error hides the item"
    );
}

#[test]
fn leftovers_are_dropped_once_whichever_half_goes_last() {
    for consumer_last in [false, true] {
        let drops = counter();
        let (mut tx, mut rx) = channel::<Counted>(4);
        for round in 0..3u64 {
            for i in 0..4 {
                tx.try_push(Counted::new(round * 10 + i, &drops)).unwrap();
            }
            for _ in 0..4 {
                drop(rx.try_pop().unwrap());
            }
        }
        for i in 0..3 {
            tx.try_push(Counted::new(100 + i, &drops)).unwrap();
        }
        assert_eq!(count(&drops), 12);
        if consumer_last {
            drop(tx);
            assert_eq!(count(&drops), 12, "the consumer still holds the ring");
            drop(rx);
        } else {
            drop(rx);
            assert_eq!(count(&drops), 12, "the producer still holds the ring");
            drop(tx);
        }
        assert_eq!(count(&drops), 15);
    }
}

#[test]
fn a_refused_push_hands_the_value_back_undropped() {
    let drops = counter();
    let (mut tx, _rx) = channel::<Counted>(1);
    tx.try_push(Counted::new(0, &drops)).unwrap();
    let back = tx
        .try_push(Counted::new(1, &drops))
        .unwrap_err()
        .into_inner();
    assert_eq!((back.id, count(&drops)), (1, 0));
}

#[test]
fn teardown_drops_every_leftover_when_one_destructor_panics() {
    for consumer_last in [false, true] {
        for bad in 3..7 {
            let ledger = Ledger::new(8);
            ledger.panic_on(bad);
            let (mut tx, mut rx) = channel(4);
            // Items 0..3 pass through first, so the leftovers 3..7 wrap the slot array.
            for id in 0..3 {
                tx.try_push(ledger.tok(id)).unwrap();
                drop(rx.try_pop().unwrap());
            }
            for id in 3..7 {
                tx.try_push(ledger.tok(id)).unwrap();
            }
            let last: Box<dyn FnOnce()> = if consumer_last {
                drop(tx);
                Box::new(move || drop(rx))
            } else {
                drop(rx);
                Box::new(move || drop(tx))
            };
            ledger.assert_dropped(0..3);
            let err = catch_unwind(AssertUnwindSafe(last)).expect_err("a destructor panics");
            let msg = err.downcast_ref::<String>().unwrap();
            assert!(msg.contains(&format!("item {bad}")), "{msg}");
            ledger.assert_dropped(0..7);
        }
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "leaks the ring's memory on purpose, which Miri reports"
)]
fn forgetting_a_half_leaks_and_never_double_drops() {
    let ledger = Ledger::new(4);
    let (mut tx, mut rx): (Producer<_>, Consumer<_>) = channel(4);
    for id in 0..4 {
        tx.try_push(ledger.tok(id)).unwrap();
    }
    drop(rx.try_pop().unwrap());
    std::mem::forget(rx);
    drop(tx);
    // The forgotten consumer keeps the ring alive: its items leak, none is dropped twice.
    ledger.assert_dropped([0]);
}
