//! Loom models of the ring: every interleaving (up to `LOOM_MAX_PREEMPTIONS`) of a
//! producer and a consumer, with slot accesses checked for data races through the
//! crate's shadow cells. Run with:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p handoff-spsc --release --test loom
//! ```
#![cfg(loom)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use handoff_spsc::{channel_with, Consumer, Options, PopError, Producer, PushError};

/// The default ring's models run on a slipping ring: under loom every ring of two
/// slots or more slips when asked, at the largest distance, so every model goes
/// through the waits as well as through the paths that do not wait (a handle that
/// was idle never waits). `the_default_ring_never_waits` runs the default.
fn channel<T>(capacity: usize) -> (Producer<T>, Consumer<T>) {
    channel_with(capacity, Options::new().slipping(true))
}
use loom::thread;

/// The single-item calls both rings have, so that one model body checks both.
trait Tx<T>: Send + 'static {
    fn push(&mut self, v: T) -> Result<(), T>;
    fn abandoned(&self) -> bool;
}

/// The consumer side of [`Tx`].
trait Rx<T>: Send + 'static {
    fn pop(&mut self) -> Option<T>;
    fn peek_at(&self) -> Option<&T>;
    fn abandoned(&self) -> bool;
}

impl<T: Send + 'static> Tx<T> for handoff_spsc::Producer<T> {
    fn push(&mut self, v: T) -> Result<(), T> {
        self.try_push(v).map_err(|e| e.into_inner())
    }
    fn abandoned(&self) -> bool {
        self.is_abandoned()
    }
}

impl<T: Send + 'static> Rx<T> for handoff_spsc::Consumer<T> {
    fn pop(&mut self) -> Option<T> {
        self.try_pop().ok()
    }
    fn peek_at(&self) -> Option<&T> {
        self.peek()
    }
    fn abandoned(&self) -> bool {
        self.is_abandoned()
    }
}

impl<T: Send + 'static> Tx<T> for handoff_spsc::stamped::Producer<T> {
    fn push(&mut self, v: T) -> Result<(), T> {
        self.try_push(v).map_err(|e| e.into_inner())
    }
    fn abandoned(&self) -> bool {
        self.is_abandoned()
    }
}

impl<T: Send + 'static> Rx<T> for handoff_spsc::stamped::Consumer<T> {
    fn pop(&mut self) -> Option<T> {
        self.try_pop().ok()
    }
    fn peek_at(&self) -> Option<&T> {
        self.peek()
    }
    fn abandoned(&self) -> bool {
        self.is_abandoned()
    }
}

fn push_spin<T>(tx: &mut impl Tx<T>, mut v: T) {
    loop {
        match tx.push(v) {
            Ok(()) => return,
            Err(back) => {
                v = back;
                thread::yield_now();
            }
        }
    }
}

fn pop_spin<T>(rx: &mut impl Rx<T>) -> T {
    loop {
        if let Some(v) = rx.pop() {
            return v;
        }
        thread::yield_now();
    }
}

/// `peek` on a one-slot ring sees the first item once it is published, and popping
/// then yields both items in order.
fn peek_sees_a_published_item_in<P: Tx<u32>, C: Rx<u32>>(make: fn(usize) -> (P, C)) {
    loom::model(move || {
        let (mut tx, mut rx) = make(1);
        let p = thread::spawn(move || {
            push_spin(&mut tx, 5);
            push_spin(&mut tx, 6);
        });
        loop {
            if let Some(v) = rx.peek_at() {
                assert_eq!(*v, 5);
                break;
            }
            thread::yield_now();
        }
        assert_eq!(pop_spin(&mut rx), 5);
        assert_eq!(pop_spin(&mut rx), 6);
        p.join().unwrap();
    });
}

/// A producer thread that pushes `0..n` in order, spinning while the ring is full.
fn push_in_order(mut tx: handoff_spsc::Producer<u32>, n: u32) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        for i in 0..n {
            push_spin(&mut tx, i);
        }
    })
}

/// Five items through two slots. Under loom a producer reads its index back from the
/// shared `tail` whenever a refresh finds an item in the ring, so these pushes switch
/// between reading it back and keeping it: every item still arrives once and in order.
#[test]
fn push_pop_in_order_through_a_full_ring() {
    loom::model(|| {
        let (tx, mut rx) = channel::<u32>(2);
        let p = push_in_order(tx, 5);
        for i in 0..5 {
            assert_eq!(pop_spin(&mut rx), i);
        }
        p.join().unwrap();
        assert_eq!(rx.try_pop(), Err(handoff_spsc::PopError::Disconnected));
    });
}

/// The default ring (no slipping): the same five items through two slots, each call
/// returning at once.
#[test]
fn the_default_ring_never_waits() {
    loom::model(|| {
        let (tx, mut rx) = handoff_spsc::channel::<u32>(2);
        assert!(!tx.slips() && !rx.slips());
        let p = push_in_order(tx, 5);
        for i in 0..5 {
            assert_eq!(pop_spin(&mut rx), i);
        }
        p.join().unwrap();
        assert_eq!(rx.try_pop(), Err(handoff_spsc::PopError::Disconnected));
    });
}

/// Temporal slipping is on in every ring these models make (`channel` above), at the
/// largest distance, so every model goes through its waits too. Here each call is made only after the
/// other side's matching call (flags in happens-before order), with the handles
/// streaming so that they wait: every one of them must still succeed.
#[test]
fn slipping_handles_keep_the_contract() {
    loom::model(|| {
        use loom::sync::atomic::AtomicUsize;
        use loom::sync::Arc;
        let (mut tx, mut rx) = channel::<u32>(2);
        assert!(tx.slips() && rx.slips());
        tx.try_push(0).unwrap();
        tx.try_push(1).unwrap();
        let popped = Arc::new(AtomicUsize::new(0));
        let pushed = Arc::new(AtomicUsize::new(2));
        let (p, q) = (popped.clone(), pushed.clone());
        let c = thread::spawn(move || {
            for i in 0..4u32 {
                while q.load(Ordering::Acquire) <= i as usize {
                    thread::yield_now();
                }
                assert_eq!(rx.try_pop(), Ok(i), "a published item must be popped");
                p.store(i as usize + 1, Ordering::Release);
            }
        });
        for i in 2..4u32 {
            while popped.load(Ordering::Acquire) < (i - 1) as usize {
                thread::yield_now();
            }
            assert!(tx.try_push(i).is_ok(), "a freed slot must be usable");
            pushed.store(i as usize + 1, Ordering::Release);
        }
        c.join().unwrap();
    });
}

#[test]
fn peek_sees_a_published_item() {
    peek_sees_a_published_item_in(channel::<u32>);
}

#[test]
fn slices_across_the_wrap() {
    loom::model(|| {
        let (mut tx, mut rx) = channel::<u8>(3);
        let p = thread::spawn(move || {
            let src = [1u8, 2, 3, 4, 5];
            let mut sent = 0;
            while sent < src.len() {
                let n = tx.push_slice(&src[sent..]);
                if n == 0 {
                    thread::yield_now();
                }
                sent += n;
            }
        });
        let mut got = Vec::new();
        let mut buf = [0u8; 2];
        while got.len() < 5 {
            let n = rx.pop_slice(&mut buf);
            if n == 0 {
                thread::yield_now();
            }
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, [1, 2, 3, 4, 5]);
        p.join().unwrap();
    });
}

#[test]
fn chunks_publish_once_and_release_once() {
    loom::model(|| {
        let (mut tx, mut rx) = channel::<String>(2);
        let p = thread::spawn(move || {
            let mut next = 0u32;
            while next < 3 {
                let mut chunk = tx.write_chunk(2);
                let n = chunk.extend((next..3).map(|i| i.to_string())) as u32;
                chunk.commit();
                if n == 0 {
                    thread::yield_now();
                }
                next += n;
            }
        });
        let mut got = Vec::new();
        while got.len() < 3 {
            let chunk = rx.read_chunk(2);
            let before = got.len();
            got.extend(chunk);
            if got.len() == before {
                thread::yield_now();
            }
        }
        assert_eq!(got, ["0", "1", "2"]);
        p.join().unwrap();
    });
}

struct Counted(Arc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Two values offered to a capacity-2 ring while the consumer pops at most one and
/// leaves: whichever half is dropped last, each value is dropped exactly once (popped,
/// refused or left in the ring).
fn leftovers_are_dropped_once_in<P: Tx<Counted>, C: Rx<Counted>>(make: fn(usize) -> (P, C)) {
    loom::model(move || {
        let drops = Arc::new(AtomicUsize::new(0));
        let (mut tx, mut rx) = make(2);
        let d = drops.clone();
        let p = thread::spawn(move || {
            for _ in 0..2 {
                // A refused value is handed back and dropped here.
                let _ = tx.push(Counted(d.clone()));
            }
            // `tx` dropped here, racing with the consumer's drop.
        });
        drop(rx.pop());
        drop(rx);
        p.join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 2);
    });
}

/// Once the consumer sees the producer gone, everything it pushed is visible.
fn abandonment_is_seen_and_items_pushed_before_are_not_lost_in<P: Tx<u32>, C: Rx<u32>>(
    make: fn(usize) -> (P, C),
) {
    loom::model(move || {
        let (mut tx, mut rx) = make(2);
        let p = thread::spawn(move || {
            tx.push(1).unwrap();
            tx.push(2).unwrap();
        });
        while !rx.abandoned() {
            thread::yield_now();
        }
        assert_eq!(rx.pop(), Some(1));
        assert_eq!(rx.pop(), Some(2));
        assert_eq!(rx.pop(), None);
        p.join().unwrap();
    });
}

/// The consumer leaves while the producer still pushes (issue 47): on a one-slot ring
/// the consumer pops an item and is dropped; the producer keeps pushing into the slot
/// that pop freed until it sees the consumer gone. The producer's write into that slot
/// must happen after the consumer's read of it (loom's shadow cells report a race
/// otherwise), whichever of the consumer's `head` stores the producer's load reads,
/// and each value is dropped exactly once (popped, refused, or left in the ring).
/// `pop` takes the item: through `try_pop`, or a read chunk that is forgotten, so that
/// the consumer's drop is the only store that publishes the freed slot.
fn consumer_leaves_while_producer_pushes_in<P: Tx<Counted>, C: Rx<Counted>>(
    make: fn(usize) -> (P, C),
    pop: fn(&mut C) -> Option<Counted>,
) {
    loom::model(move || {
        let drops = Arc::new(AtomicUsize::new(0));
        let (mut tx, mut rx) = make(1);
        let d = drops.clone();
        let p = thread::spawn(move || {
            let mut offered = 0;
            'items: for _ in 0..3 {
                let mut v = Counted(d.clone());
                offered += 1;
                loop {
                    match tx.push(v) {
                        Ok(()) => break,
                        Err(back) if tx.abandoned() => {
                            drop(back);
                            break 'items;
                        }
                        Err(back) => {
                            v = back;
                            thread::yield_now();
                        }
                    }
                }
            }
            offered
        });
        loop {
            if let Some(v) = pop(&mut rx) {
                drop(v);
                break;
            }
            thread::yield_now();
        }
        drop(rx);
        let offered = p.join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), offered);
    });
}

/// The reverse: the producer pushes three items through a one-slot ring and leaves
/// while the consumer pops; the consumer drains until it sees the producer gone and
/// the ring empty, and gets every item once, in order.
fn producer_leaves_while_consumer_pops_in<P: Tx<u32>, C: Rx<u32>>(make: fn(usize) -> (P, C)) {
    loom::model(move || {
        let (mut tx, mut rx) = make(1);
        let p = thread::spawn(move || {
            for i in 0..3 {
                push_spin(&mut tx, i);
            }
        });
        let mut got = Vec::new();
        loop {
            // Abandonment first: items pushed before the producer left are visible.
            let gone = rx.abandoned();
            match rx.pop() {
                Some(v) => got.push(v),
                None if gone => break,
                None => thread::yield_now(),
            }
        }
        assert_eq!(got, [0, 1, 2]);
        p.join().unwrap();
    });
}

/// The producer pushes three items through a one-slot ring and leaves; the consumer
/// pops until `try_pop` says `Disconnected`, with no other check: it gets every item
/// once, in order, before that.
fn pop_until_disconnected_in<P: Send + 'static, C: 'static>(
    make: fn(usize) -> (P, C),
    push: fn(&mut P, u32) -> Result<(), PushError<u32>>,
    pop: fn(&mut C) -> Result<u32, PopError>,
) {
    loom::model(move || {
        let (mut tx, mut rx) = make(1);
        let p = thread::spawn(move || {
            for i in 0..3 {
                while push(&mut tx, i).is_err() {
                    thread::yield_now();
                }
            }
        });
        let mut got = Vec::new();
        loop {
            match pop(&mut rx) {
                Ok(v) => got.push(v),
                Err(PopError::Empty) => thread::yield_now(),
                Err(PopError::Disconnected) => break,
            }
        }
        assert_eq!(got, [0, 1, 2]);
        p.join().unwrap();
    });
}

/// The consumer pops one item of a one-slot ring and leaves; the producer pushes until
/// `try_push` says `Disconnected` (its loop ends, with no other check): the item after
/// the pop always goes in, the next is handed back, and every value is dropped exactly
/// once (popped, handed back, or left in the ring).
fn push_until_disconnected_in<P: Send + 'static, C: 'static>(
    make: fn(usize) -> (P, C),
    push: fn(&mut P, Counted) -> Result<(), PushError<Counted>>,
    pop: fn(&mut C) -> Result<Counted, PopError>,
) {
    loom::model(move || {
        let drops = Arc::new(AtomicUsize::new(0));
        let (mut tx, mut rx) = make(1);
        let d = drops.clone();
        let p = thread::spawn(move || {
            let mut offered = 0;
            loop {
                let mut v = Counted(d.clone());
                offered += 1;
                loop {
                    match push(&mut tx, v) {
                        Ok(()) => break,
                        Err(PushError::Full(back)) => {
                            v = back;
                            thread::yield_now();
                        }
                        Err(PushError::Disconnected(back)) => {
                            drop(back);
                            return offered;
                        }
                    }
                }
                // One slot and one pop: two items fit, the third waits for the end.
                assert!(
                    offered <= 2,
                    "a one-slot ring took a third item with one pop"
                );
            }
        });
        loop {
            if let Ok(v) = pop(&mut rx) {
                drop(v);
                break;
            }
            thread::yield_now();
        }
        drop(rx);
        let offered = p.join().unwrap();
        // Two went in (one before the pop, one after), the third was handed back: a
        // push never says `Disconnected` while the consumer left room.
        assert_eq!(offered, 3);
        assert_eq!(drops.load(Ordering::Relaxed), offered);
    });
}

#[test]
fn the_consumer_pops_everything_then_sees_the_producer_gone() {
    pop_until_disconnected_in(channel::<u32>, |tx, v| tx.try_push(v), |rx| rx.try_pop());
    pop_until_disconnected_in(
        handoff_spsc::stamped::channel::<u32>,
        |tx, v| tx.try_push(v),
        |rx| rx.try_pop(),
    );
}

#[test]
fn the_producer_of_a_full_ring_sees_the_consumer_gone() {
    push_until_disconnected_in(
        channel::<Counted>,
        |tx, v| tx.try_push(v),
        |rx| rx.try_pop(),
    );
    push_until_disconnected_in(
        handoff_spsc::stamped::channel::<Counted>,
        |tx, v| tx.try_push(v),
        |rx| rx.try_pop(),
    );
}

#[test]
fn consumer_leaves_while_producer_pushes() {
    consumer_leaves_while_producer_pushes_in(channel::<Counted>, |rx| rx.try_pop().ok());
}

#[test]
fn consumer_leaves_after_a_forgotten_read_chunk_while_producer_pushes() {
    consumer_leaves_while_producer_pushes_in(channel::<Counted>, |rx| {
        let mut chunk = rx.read_chunk(1);
        let v = chunk.next();
        std::mem::forget(chunk);
        v
    });
}

#[test]
fn producer_leaves_while_consumer_pops() {
    producer_leaves_while_consumer_pops_in(channel::<u32>);
}

#[test]
fn leftovers_are_dropped_once_whichever_handle_goes_last() {
    leftovers_are_dropped_once_in(channel::<Counted>);
}

#[test]
fn abandonment_is_seen_and_items_pushed_before_are_not_lost() {
    abandonment_is_seen_and_items_pushed_before_are_not_lost_in(channel::<u32>);
}

#[test]
fn forgotten_read_chunks_never_let_the_producer_overwrite_a_slot_being_read() {
    loom::model(|| {
        let (tx, mut rx) = channel::<u32>(1);
        let p = push_in_order(tx, 3);
        // Every item is taken through a chunk that is then forgotten: the shared index
        // is published only by the consumer's empty path, never by a chunk's drop.
        for i in 0..3 {
            loop {
                let mut chunk = rx.read_chunk(1);
                if let Some(v) = chunk.next() {
                    std::mem::forget(chunk);
                    assert_eq!(v, i);
                    break;
                }
                drop(chunk);
                thread::yield_now();
            }
        }
        p.join().unwrap();
        assert_eq!(rx.try_pop(), Err(handoff_spsc::PopError::Disconnected));
    });
}

#[test]
fn forgotten_consume_then_teardown_drops_each_item_once() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let (mut tx, mut rx) = channel::<Counted>(2);
        let d = drops.clone();
        let p = thread::spawn(move || {
            for _ in 0..2 {
                let _ = tx.try_push(Counted(d.clone()));
            }
        });
        let mut chunk = rx.read_chunk(2);
        chunk.consume(1);
        std::mem::forget(chunk);
        drop(rx);
        p.join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 2);
    });
}

// ---------------------------------------------------------------------------------
// The stamped ring: the consumer learns of an item from its slot's stamp, not `tail`.

mod stamped {
    use super::{pop_spin, push_spin};
    use handoff_spsc::stamped::channel;
    use loom::sync::atomic::{AtomicBool, Ordering};
    use loom::sync::Arc;
    use loom::thread;

    #[test]
    fn items_arrive_in_order_through_reused_slots() {
        for capacity in [1, 2] {
            loom::model(move || {
                let (mut tx, mut rx) = channel::<String>(capacity);
                let p = thread::spawn(move || {
                    for i in 0..3 {
                        push_spin(&mut tx, i.to_string());
                    }
                });
                for i in 0..3 {
                    assert_eq!(pop_spin(&mut rx), i.to_string());
                }
                p.join().unwrap();
                assert_eq!(rx.try_pop(), Err(handoff_spsc::PopError::Disconnected));
            });
        }
    }

    /// The contract: a push that happens after a pop (here ordered by a flag) finds the
    /// slot that pop freed.
    #[test]
    fn a_push_after_a_pop_succeeds() {
        loom::model(|| {
            let (mut tx, mut rx) = channel::<u32>(1);
            tx.try_push(1).unwrap();
            let popped = Arc::new(AtomicBool::new(false));
            let flag = popped.clone();
            let c = thread::spawn(move || {
                assert_eq!(pop_spin(&mut rx), 1);
                flag.store(true, Ordering::Release);
                pop_spin(&mut rx)
            });
            while !popped.load(Ordering::Acquire) {
                thread::yield_now();
            }
            assert!(tx.try_push(2).is_ok(), "the freed slot must be usable");
            assert_eq!(c.join().unwrap(), 2);
        });
    }

    #[test]
    fn peek_sees_a_published_item() {
        super::peek_sees_a_published_item_in(channel::<u32>);
    }

    #[test]
    fn leftovers_are_dropped_once_whichever_half_goes_last() {
        super::leftovers_are_dropped_once_in(channel::<super::Counted>);
    }

    #[test]
    fn abandonment_is_seen_and_items_pushed_before_are_not_lost() {
        super::abandonment_is_seen_and_items_pushed_before_are_not_lost_in(channel::<u32>);
    }

    #[test]
    fn consumer_leaves_while_producer_pushes() {
        super::consumer_leaves_while_producer_pushes_in(channel::<super::Counted>, |rx| {
            rx.try_pop().ok()
        });
    }

    #[test]
    fn producer_leaves_while_consumer_pops() {
        super::producer_leaves_while_consumer_pops_in(channel::<u32>);
    }
}
