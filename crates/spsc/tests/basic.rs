//! Single-threaded behaviour of the ring: capacity, ordering, wrap-around, batches,
//! chunks, abandonment and errors.
#![cfg(not(loom))]

// Under `--cfg handoff_global_alloc` (.ci/run) handoff-alloc is this test's global allocator.
#[cfg(handoff_global_alloc)]
use handoff_alloc as _;

use handoff_spsc::{
    channel, channel_with, try_channel, CapacityError, Options, PopError, PushError, StaticChannel,
};

#[test]
fn capacity_is_exactly_what_was_asked() {
    for cap in [1usize, 2, 3, 5, 7, 100, 1000, 1024, 1025] {
        let (mut tx, mut rx) = channel::<usize>(cap);
        assert_eq!(tx.capacity(), cap);
        assert_eq!(rx.capacity(), cap);
        for i in 0..cap {
            assert!(tx.try_push(i).is_ok(), "cap {cap}: push {i} failed");
        }
        assert!(tx.is_full() && rx.is_full());
        assert_eq!(tx.try_push(cap), Err(PushError::Full(cap)));
        assert_eq!(rx.len(), cap);
        for i in 0..cap {
            assert_eq!(rx.try_pop(), Ok(i));
        }
        assert_eq!(rx.try_pop(), Err(PopError::Empty));
        assert!(rx.is_empty() && tx.is_empty());
    }
}

#[test]
fn order_is_kept_across_many_wraps() {
    let (mut tx, mut rx) = channel::<u64>(3);
    let mut next_in = 0u64;
    let mut next_out = 0u64;
    for round in 0..1000 {
        let burst = round % 4;
        for _ in 0..burst {
            if tx.try_push(next_in).is_ok() {
                next_in += 1;
            }
        }
        for _ in 0..(round % 3) {
            if let Ok(v) = rx.try_pop() {
                assert_eq!(v, next_out);
                next_out += 1;
            }
        }
        assert_eq!(rx.len() as u64, next_in - next_out);
    }
}

#[test]
fn peek_does_not_remove() {
    let (mut tx, mut rx) = channel::<String>(2);
    assert!(rx.peek().is_none());
    tx.try_push("a".into()).unwrap();
    tx.try_push("b".into()).unwrap();
    assert_eq!(rx.peek().unwrap(), "a");
    assert_eq!(rx.peek().unwrap(), "a");
    assert_eq!(rx.try_pop().unwrap(), "a");
    assert_eq!(rx.peek().unwrap(), "b");
}

#[test]
fn len_and_free_len_agree() {
    let (mut tx, mut rx) = channel::<u8>(10);
    tx.push_slice(&[1, 2, 3, 4]);
    assert_eq!(tx.len(), 4);
    assert_eq!(tx.free_len(), 6);
    assert_eq!(rx.try_pop(), Ok(1));
    assert_eq!(rx.len(), 3);
    assert_eq!(tx.free_len(), 7);
}

#[test]
fn slices_wrap_around_the_end() {
    let (mut tx, mut rx) = channel::<u32>(8);
    // Move the indices to 6 so the next batch straddles the end of the slot array.
    assert_eq!(tx.push_slice(&[0; 6]), 6);
    let mut sink = [0; 6];
    assert_eq!(rx.pop_slice(&mut sink), 6);
    let src: Vec<u32> = (100..108).collect();
    assert_eq!(tx.push_slice(&src), 8);
    assert_eq!(tx.push_slice(&[1]), 0);
    let mut out = [0u32; 10];
    assert_eq!(rx.pop_slice(&mut out), 8);
    assert_eq!(&out[..8], &src[..]);
    assert_eq!(rx.pop_slice(&mut out), 0);
}

#[test]
fn slices_respect_a_non_power_of_two_capacity() {
    let (mut tx, mut rx) = channel::<u16>(5);
    let src: Vec<u16> = (0..20).collect();
    let mut out = Vec::new();
    let mut pushed = 0;
    while out.len() < 20 {
        let n = tx.push_slice(&src[pushed..]);
        assert!(n <= 5);
        pushed += n;
        assert!(tx.len() <= 5);
        let mut buf = [0u16; 3];
        let k = rx.pop_slice(&mut buf);
        out.extend_from_slice(&buf[..k]);
    }
    assert_eq!(out, src);
}

#[test]
fn write_chunk_publishes_only_on_commit() {
    let (mut tx, mut rx) = channel::<String>(4);
    let mut chunk = tx.write_chunk(3);
    assert_eq!(chunk.len(), 3);
    chunk.push("x".into()).unwrap();
    chunk.push("y".into()).unwrap();
    assert_eq!(chunk.written(), 2);
    // Not visible before commit.
    assert_eq!(rx.len(), 0);
    chunk.commit();
    assert_eq!(rx.len(), 2);
    assert_eq!(rx.try_pop().as_deref(), Ok("x"));
    assert_eq!(rx.try_pop().as_deref(), Ok("y"));
}

#[test]
fn write_chunk_is_limited_by_free_space() {
    let (mut tx, _rx) = channel::<u8>(4);
    tx.push_slice(&[1, 2, 3]);
    assert_eq!(tx.write_chunk(10).len(), 1);
    tx.try_push(4).unwrap();
    assert!(tx.write_chunk(10).is_empty());
    assert!(tx.write_chunk(0).is_empty());
}

#[test]
fn write_chunk_raw_slices_wrap() {
    use std::mem::MaybeUninit;
    let (mut tx, mut rx) = channel::<u64>(4);
    tx.push_slice(&[0, 0, 0]);
    let mut out = [0u64; 3];
    rx.pop_slice(&mut out);
    let mut chunk = tx.write_chunk(4);
    let (a, b) = chunk.as_mut_slices();
    assert_eq!((a.len(), b.len()), (1, 3));
    a[0] = MaybeUninit::new(10);
    b[0] = MaybeUninit::new(11);
    b[1] = MaybeUninit::new(12);
    // SAFETY: the first three slots (a[0], b[0], b[1]) were initialised above.
    unsafe { chunk.assume_written(3) };
    chunk.commit();
    let mut got = [0u64; 4];
    assert_eq!(rx.pop_slice(&mut got), 3);
    assert_eq!(&got[..3], &[10, 11, 12]);
}

#[test]
#[should_panic(expected = "assume_written(5)")]
fn assume_written_beyond_the_chunk_panics() {
    let (mut tx, _rx) = channel::<u8>(4);
    let mut chunk = tx.write_chunk(4);
    // SAFETY: never reached past the assertion inside `assume_written`.
    unsafe { chunk.assume_written(5) };
}

#[test]
fn read_chunk_moves_items_out_and_keeps_the_rest() {
    let (mut tx, mut rx) = channel::<String>(8);
    for s in ["a", "b", "c", "d"] {
        tx.try_push(s.to_string()).unwrap();
    }
    {
        let mut chunk = rx.read_chunk(3);
        assert_eq!(chunk.len(), 3);
        assert_eq!(chunk.next().as_deref(), Some("a"));
        assert_eq!(chunk.len(), 2);
        let (x, y) = chunk.as_slices();
        assert_eq!(x.len() + y.len(), 2);
        // Dropped with "b" and "c" untaken: they stay.
    }
    assert_eq!(rx.len(), 3);
    let all: Vec<String> = rx.read_chunk(10).collect();
    assert_eq!(all, ["b", "c", "d"]);
    assert!(rx.is_empty());
    assert_eq!(tx.free_len(), 8);
}

#[test]
fn read_chunk_slices_wrap_and_consume() {
    let (mut tx, mut rx) = channel::<u32>(4);
    tx.push_slice(&[9, 9, 9]);
    rx.pop_slice(&mut [0; 3]);
    tx.push_slice(&[1, 2, 3, 4]);
    let mut chunk = rx.read_chunk(4);
    let (a, b) = chunk.as_slices();
    assert_eq!((a, b), (&[1u32][..], &[2u32, 3, 4][..]));
    chunk.as_mut_slices().1[0] = 20;
    assert_eq!(chunk.consume(1), 1);
    assert_eq!(chunk.next(), Some(20));
    drop(chunk);
    assert_eq!(rx.try_pop(), Ok(3));
    assert_eq!(rx.try_pop(), Ok(4));
}

#[test]
fn abandonment_is_seen_from_both_sides() {
    let (tx, rx) = channel::<u8>(1);
    assert!(!tx.is_abandoned() && !rx.is_abandoned());
    drop(tx);
    assert!(rx.is_abandoned());

    let (tx, rx) = channel::<u8>(1);
    drop(rx);
    assert!(tx.is_abandoned());
}

#[test]
fn items_pushed_before_the_producer_left_can_still_be_popped() {
    let (mut tx, mut rx) = channel::<u8>(4);
    tx.push_slice(&[1, 2]);
    drop(tx);
    assert!(rx.is_abandoned());
    assert_eq!(rx.try_pop(), Ok(1));
    assert_eq!(rx.try_pop(), Ok(2));
    assert_eq!(rx.try_pop(), Err(PopError::Disconnected));
}

#[test]
fn zero_capacity_and_overflow_are_errors() {
    assert_eq!(try_channel::<u8>(0).unwrap_err(), CapacityError::Zero);
    assert_eq!(
        try_channel::<u64>(usize::MAX).unwrap_err(),
        CapacityError::TooLarge {
            requested: usize::MAX
        }
    );
    let big = (isize::MAX as usize) / 8 + 1;
    assert!(matches!(
        try_channel::<u64>(big).unwrap_err(),
        CapacityError::TooLarge { .. }
    ));
    for e in [
        CapacityError::Zero,
        CapacityError::TooLarge { requested: 7 },
        CapacityError::AllocFailed {
            requested: 7,
            bytes: 56,
        },
    ] {
        let msg = e.to_string();
        assert!(msg.starts_with("handoff-spsc: "), "{msg}");
    }
}

#[test]
#[should_panic(expected = "capacity must be at least 1")]
fn channel_with_zero_capacity_panics() {
    let _ = channel::<u8>(0);
}

#[test]
#[should_panic(expected = "is too large")]
fn channel_with_overflowing_capacity_panics() {
    let _ = channel::<u32>(usize::MAX / 2 + 2);
}

#[test]
fn push_error_formats_without_debug_on_t() {
    struct Opaque;
    let (mut tx, _rx) = channel::<Opaque>(1);
    tx.try_push(Opaque).ok().unwrap();
    let err = tx.try_push(Opaque).unwrap_err();
    assert_eq!(format!("{err:?}"), "Full(..)");
    assert_eq!(err.to_string(), "the ring is full");
    let _: &dyn std::error::Error = &err;
    assert!(format!("{tx:?}").contains("capacity: 1"));
}

#[test]
fn zero_sized_items_are_counted() {
    let (mut tx, mut rx) = channel::<()>(3);
    for _ in 0..3 {
        tx.try_push(()).unwrap();
    }
    assert!(tx.try_push(()).is_err());
    assert_eq!(rx.len(), 3);
    assert_eq!(rx.pop_slice(&mut [(); 5]), 3);
    assert!(rx.try_pop().is_err());
}

#[test]
fn huge_capacity_of_zero_sized_items_is_cheap() {
    let cap = 1usize << 40;
    let (mut tx, mut rx) = channel::<()>(cap);
    assert_eq!(tx.capacity(), cap);
    assert_eq!(tx.push_slice(&[(); 100]), 100);
    assert_eq!(rx.len(), 100);
    assert_eq!(rx.pop_slice(&mut [(); 64]), 64);
    assert_eq!(tx.free_len(), cap - 36);
}

#[test]
fn handles_are_send() {
    fn is_send<T: Send>() {}
    is_send::<handoff_spsc::Producer<String>>();
    is_send::<handoff_spsc::Consumer<String>>();
    is_send::<handoff_spsc::StaticProducer<'static, String, 4>>();
    is_send::<handoff_spsc::StaticConsumer<'static, String, 4>>();
    // That they are not `Sync` is a compile_fail doc test in the crate root.
}

#[test]
fn static_channel_splits_once_and_works_like_the_heap_one() {
    static RING: StaticChannel<u64, 4> = StaticChannel::new();
    let (mut tx, mut rx) = RING.split().unwrap();
    assert!(RING.split().is_none());
    assert_eq!(tx.capacity(), 4);
    for round in 0..10u64 {
        assert_eq!(tx.push_slice(&[round, round + 1, round + 2, round + 3]), 4);
        assert!(tx.try_push(0).is_err());
        let mut out = [0; 4];
        assert_eq!(rx.pop_slice(&mut out), 4);
        assert_eq!(out, [round, round + 1, round + 2, round + 3]);
    }
}

#[test]
fn static_channel_on_the_stack_with_scoped_threads() {
    let ring = StaticChannel::<u32, 8>::new();
    let (mut tx, mut rx) = ring.split().unwrap();
    let n = if cfg!(miri) { 200 } else { 100_000 };
    std::thread::scope(|s| {
        s.spawn(move || {
            for i in 0..n {
                let mut v = i;
                while let Err(e) = tx.try_push(v) {
                    v = e.into_inner();
                    std::hint::spin_loop();
                }
            }
        });
        s.spawn(move || {
            for i in 0..n {
                let v = loop {
                    if let Ok(v) = rx.try_pop() {
                        break v;
                    }
                    std::hint::spin_loop();
                };
                assert_eq!(v, i);
            }
        });
    });
}

/// Temporal slipping changes when a call returns, never what it returns: the same
/// random sequence of calls on a slipping ring and on one that does not slip gives the
/// same result at every step (on one thread a wait finds nothing new, so this also
/// runs every wait to its end).
#[test]
fn slipping_never_changes_what_a_call_returns() {
    let (mut tx_a, mut rx_a) = channel_with::<u32>(256, Options::new().slipping(true));
    let (mut tx_b, mut rx_b) = channel::<u32>(256);
    assert!(tx_a.slips() && rx_a.slips() && !tx_b.slips() && !rx_b.slips());
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = 0u32;
    // Under Miri every slipping call that finds the other side away waits out its bound
    // on the interpreter's clock: 20 steps (a few fills and drains) take 5 s there.
    let steps = if cfg!(miri) { 20 } else { 200_000 };
    for _ in 0..steps {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        // Runs of pushes and of pops, so the ring goes from empty to full and back.
        let run = (state >> 8) % 300;
        if state & 1 == 0 {
            for _ in 0..run {
                let (a, b) = (tx_a.try_push(next), tx_b.try_push(next));
                assert_eq!(a, b);
                next += 1;
            }
        } else {
            for _ in 0..run {
                assert_eq!(rx_a.try_pop(), rx_b.try_pop());
            }
        }
        assert_eq!(rx_a.len(), rx_b.len());
    }
}

#[test]
fn slipping_is_off_by_default_and_on_when_asked_from_256_slots() {
    for (cap, big_enough) in [
        (1, false),
        (64, false),
        (255, false),
        (256, true),
        (1000, true),
    ] {
        let (tx, rx) = channel::<u8>(cap);
        assert!(!tx.slips() && !rx.slips(), "capacity {cap}: off by default");
        let (tx, rx) = channel_with::<u8>(cap, Options::new().slipping(true));
        assert_eq!(
            (tx.slips(), rx.slips()),
            (big_enough, big_enough),
            "capacity {cap}: asked for, on from 256 slots"
        );
        let (tx, rx) = channel_with::<u8>(cap, Options::new().slipping(false));
        assert!(!tx.slips() && !rx.slips());
    }
    static RING: StaticChannel<u8, 512> = StaticChannel::new();
    let (tx, rx) = RING.split_with(Options::new().slipping(true)).unwrap();
    assert!(tx.slips() && rx.slips());
    let ring = StaticChannel::<u8, 512>::new();
    let (tx, rx) = ring.split().unwrap();
    assert!(!tx.slips() && !rx.slips());
}
