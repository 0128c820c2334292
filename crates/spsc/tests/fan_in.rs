//! `FanIn`: several producer threads into one consumer. Every item arrives exactly
//! once and in its producer's order, every item is dropped exactly once (also those
//! left behind), the polling is fair, and the end comes only when every producer is
//! gone and drained.
#![cfg(not(loom))]

#[cfg(handoff_global_alloc)]
use handoff_alloc as _;

mod common;

use common::{count, counter, Counted};
use handoff_spsc::{fan_in, try_fan_in, CapacityError, PopError};

fn items() -> u64 {
    if cfg!(miri) {
        300
    } else {
        std::env::var("HANDOFF_STRESS_ITEMS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1_000_000)
            / 4
    }
}

#[test]
fn polling_is_round_robin_over_the_rings_with_items() {
    let (mut txs, mut rx) = fan_in::<(usize, u32)>(3, 8);
    for (id, tx) in txs.iter_mut().enumerate() {
        for seq in 0..(id as u32 + 2) {
            tx.try_push((id, seq)).unwrap();
        }
    }
    // Ring 0 holds 2, ring 1 holds 3, ring 2 holds 4: one turn each while all have
    // items, then the ones left.
    let order: Vec<(usize, u32)> = std::iter::from_fn(|| rx.try_pop().ok()).collect();
    assert_eq!(
        order,
        [
            (0, 0),
            (1, 0),
            (2, 0),
            (0, 1),
            (1, 1),
            (2, 1),
            (1, 2),
            (2, 2),
            (2, 3)
        ]
    );
    assert_eq!(rx.try_pop(), Err(PopError::Empty));
    // The turn goes on from where it stopped, not from ring 0.
    txs[0].try_push((0, 9)).unwrap();
    txs[2].try_push((2, 9)).unwrap();
    assert_eq!(rx.try_pop_from(), Ok((0, (0, 9))));
    txs[0].try_push((0, 10)).unwrap();
    assert_eq!(rx.try_pop_from(), Ok((2, (2, 9))));
    assert_eq!(rx.try_pop_from(), Ok((0, (0, 10))));
}

#[test]
fn the_end_comes_when_every_producer_is_gone_and_drained() {
    let (mut txs, mut rx) = fan_in::<u8>(2, 4);
    txs[0].try_push(1).unwrap();
    let first = txs.remove(0);
    drop(first);
    assert_eq!(
        rx.try_pop(),
        Ok(1),
        "a gone producer's items are still taken"
    );
    assert_eq!(rx.try_pop(), Err(PopError::Empty), "one producer is left");
    // That look found ring 0 drained and its producer gone: a new producer takes its
    // place, so the fan-in does not grow.
    let mut late = rx.connect();
    assert_eq!(rx.producers(), 2);
    late.try_push(7).unwrap();
    assert_eq!(rx.try_pop_from(), Ok((0, 7)));
    drop(txs);
    assert_eq!(rx.try_pop(), Err(PopError::Empty), "the late one is there");
    drop(late);
    assert_eq!(rx.try_pop(), Err(PopError::Disconnected));
    assert!(format!("{rx:?}").contains("producers: 2"));
    // Both places free again: two more take them, a third adds a ring.
    let _two = [rx.connect(), rx.connect()];
    assert_eq!(rx.producers(), 2);
    let _third = rx.connect();
    assert_eq!(rx.producers(), 3);
    assert_eq!(rx.try_pop(), Err(PopError::Empty));
}

#[test]
fn bad_capacities_are_errors() {
    assert_eq!(try_fan_in::<u8>(2, 0).unwrap_err(), CapacityError::Zero);
    assert_eq!(try_fan_in::<u8>(0, 0).unwrap_err(), CapacityError::Zero);
    assert!(matches!(
        try_fan_in::<u64>(1, usize::MAX).unwrap_err(),
        CapacityError::TooLarge { .. }
    ));
    let (none, mut rx) = fan_in::<u8>(0, 1);
    assert!(none.is_empty());
    assert_eq!(rx.try_pop(), Err(PopError::Disconnected));
}

/// Four producer threads, one of which panics half-way: every item each pushed
/// arrives once, in its order; then `Disconnected`.
#[test]
fn every_item_of_every_producer_arrives_once_and_in_order() {
    let n = items();
    let producers = 4;
    let (txs, mut rx) = fan_in::<(usize, u64)>(producers, 64);
    let handles: Vec<_> = txs
        .into_iter()
        .enumerate()
        .map(|(id, mut tx)| {
            std::thread::spawn(move || {
                let last = if id == 3 { n / 2 } else { n };
                for seq in 0..last {
                    let mut v = (id, seq);
                    while let Err(e) = tx.try_push(v) {
                        v = e.into_inner();
                        std::thread::yield_now();
                    }
                }
                assert!(id != 3, "producer 3 dies half-way");
            })
        })
        .collect();
    let mut next = vec![0u64; producers];
    loop {
        match rx.try_pop() {
            Ok((id, seq)) => {
                assert_eq!(
                    seq, next[id],
                    "producer {id}: lost, duplicated or reordered"
                );
                next[id] += 1;
            }
            Err(PopError::Empty) => std::thread::yield_now(),
            Err(PopError::Disconnected) => break,
        }
    }
    assert_eq!(next, [n, n, n, n / 2]);
    let panicked: Vec<bool> = handles.into_iter().map(|h| h.join().is_err()).collect();
    assert_eq!(panicked, [false, false, false, true]);
}

/// Items are dropped exactly once: the ones taken by the consumer, and the ones left
/// in the rings when the fan-in goes first.
#[test]
fn every_item_is_dropped_once() {
    let drops = counter();
    let per = if cfg!(miri) { 20 } else { 1000 };
    let (txs, mut rx) = fan_in::<Counted>(3, 16);
    let handles: Vec<_> = txs
        .into_iter()
        .map(|mut tx| {
            let drops = drops.clone();
            std::thread::spawn(move || {
                for i in 0..per {
                    let mut v = Counted::new(i, &drops);
                    while let Err(e) = tx.try_push(v) {
                        if e.is_disconnected() {
                            return i + 1; // the consumer left: the value drops here
                        }
                        v = e.into_inner();
                        std::thread::yield_now();
                    }
                }
                per
            })
        })
        .collect();
    let mut taken = 0;
    while taken < per {
        if let Ok(item) = rx.try_pop() {
            drop(item);
            taken += 1;
        } else {
            std::thread::yield_now();
        }
    }
    drop(rx); // leaves items in the rings; the producers then see Disconnected
    let made: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(made >= taken && made <= 3 * per, "{made}");
    assert_eq!(
        count(&drops) as u64,
        made,
        "every item made was dropped exactly once (taken, left in a ring, or refused)"
    );
}
