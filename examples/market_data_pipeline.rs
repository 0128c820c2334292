//! The whole hot path of a small trading system, three threads and two rings:
//!
//! * a **feed** thread publishes quotes into a `handoff::spsc` ring;
//! * a **strategy** thread reads them, and for each quote that crosses its threshold
//!   builds an `Order` in a slot of a `handoff::pool::return_queue` pool (no heap
//!   allocation per order) and hands it over a second ring;
//! * a **risk** thread checks each order and frees it, which sends its slot back to
//!   the strategy thread's pool over the pool's own return ring.
//!
//! Each quote and order carries the TSC stamp of its birth (`handoff::clock`); the
//! strategy and risk threads record the ages they see in `handoff::stats` histograms,
//! printed at the end with the pool's counters.
//!
//! The feed is paced at 500 000 quotes a second. The threads are not pinned and every
//! wait yields the core (the readers after a short spin), so the program also runs
//! where three threads share two cores; the ages then include those yields.
//! `runner pipeline` is the measured version of this program (pinned threads, spinning
//! waits, the document's variants side by side).
//!
//! Run: `cargo run --release --example market_data_pipeline`

use std::thread;

use handoff::clock::Clock;
use handoff::pool::return_queue::{self, PoolBox};
use handoff::spsc::{channel, Consumer, PopError};
use handoff::stats::{Latency, Unit};

const QUOTES: u64 = 200_000;
const QUOTES_PER_SECOND: f64 = 500_000.0;

/// The quote's mid price: the feed and the risk check agree on it.
fn mid(seq: u64) -> i64 {
    10_000 + (seq % 50) as i64
}

#[derive(Clone, Copy)]
struct Quote {
    seq: u64,
    bid: i64,
    ask: i64,
    /// TSC ticks when the feed published it.
    stamped: u64,
}

/// 64 bytes, the size document 000's orders have.
#[repr(align(64))]
struct Order {
    quote_seq: u64,
    price: i64,
    qty: i64,
    /// TSC ticks when the strategy built it.
    stamped: u64,
}

/// Waits for the next item, spinning briefly and then yielding the core, so the
/// example also runs where three threads share fewer cores. Panics if the other side
/// is gone (its thread panicked) before sending it.
fn next<T>(rx: &mut Consumer<T>) -> T {
    let mut idle = 0u32;
    loop {
        match rx.try_pop() {
            Ok(item) => return item,
            Err(PopError::Disconnected) => panic!("the sending thread is gone"),
            Err(PopError::Empty) => {}
        }
        idle += 1;
        if idle < 100 {
            std::hint::spin_loop();
        } else {
            thread::yield_now();
        }
    }
}

fn main() {
    let clock = Clock::calibrate();
    let timer = clock.timer();
    let (mut quotes_tx, mut quotes_rx) = channel::<Quote>(1024);
    let (mut orders_tx, mut orders_rx) = channel::<Option<PoolBox<Order>>>(1024);
    let (mut make, mut free) =
        return_queue::new::<Order>(return_queue::Config::default()).expect("pool config");

    let gap = (clock.calibration().freq_hz / QUOTES_PER_SECOND) as u64;
    let feed = thread::spawn(move || {
        let mut due = timer.now();
        for seq in 0..QUOTES {
            due += gap;
            while timer.now() < due {
                thread::yield_now(); // lets the other two threads run on a small machine
            }
            let mut quote = Quote {
                seq,
                bid: mid(seq) - 1,
                ask: mid(seq) + 1,
                stamped: timer.start(),
            };
            while let Err(e) = quotes_tx.try_push(quote) {
                assert!(!e.is_disconnected(), "the strategy thread is gone");
                quote = e.into_inner();
                thread::yield_now();
            }
        }
    });

    let strategy = thread::spawn(move || {
        let mut quote_age = Latency::with_unit(Unit::Ticks);
        let mut full = 0u64;
        for _ in 0..QUOTES {
            let quote = next(&mut quotes_rx);
            quote_age.record(timer.end().saturating_sub(quote.stamped));
            if quote.bid % 5 != 0 {
                continue; // no signal on this quote
            }
            let order = Order {
                quote_seq: quote.seq,
                price: quote.ask,
                qty: 100,
                stamped: timer.start(),
            };
            // The pool is full only if the risk thread has fallen 4096 orders behind.
            let mut order = match make.try_alloc(order) {
                Ok(boxed) => boxed,
                Err(back) => {
                    full += 1;
                    let mut order = back.into_inner();
                    loop {
                        thread::yield_now();
                        match make.try_alloc(order) {
                            Ok(boxed) => break boxed,
                            Err(again) => order = again.into_inner(),
                        }
                    }
                }
            };
            order.qty = order.qty.min(1_000); // the strategy owns it until it hands it over
            let mut msg = Some(order);
            while let Err(e) = orders_tx.try_push(msg) {
                assert!(!e.is_disconnected(), "the risk thread is gone");
                msg = e.into_inner();
                thread::yield_now();
            }
        }
        let mut end = None;
        while let Err(e) = orders_tx.try_push(end) {
            assert!(!e.is_disconnected(), "the risk thread is gone");
            end = e.into_inner();
            thread::yield_now();
        }
        (quote_age, make.stats(), full)
    });

    let risk = thread::spawn(move || {
        let mut order_age = Latency::with_unit(Unit::Ticks);
        let (mut accepted, mut rejected, mut notional) = (0u64, 0u64, 0i64);
        while let Some(order) = next(&mut orders_rx) {
            order_age.record(timer.end().saturating_sub(order.stamped));
            // Priced at its quote's ask, and not too big: otherwise rejected.
            if order.price == mid(order.quote_seq) + 1 && (1..=1_000).contains(&order.qty) {
                accepted += 1;
                notional += order.price * order.qty;
            } else {
                rejected += 1;
            }
            free.free(order).expect("an order of this pool");
        }
        free.flush();
        (order_age, accepted, rejected, notional, free.stats())
    });

    feed.join().expect("feed thread panicked");
    let (quote_age, made, full) = strategy.join().expect("strategy thread panicked");
    let (order_age, accepted, rejected, notional, freed) =
        risk.join().expect("risk thread panicked");

    println!(
        "market_data_pipeline: {QUOTES} quotes at {QUOTES_PER_SECOND} a second; risk accepted {accepted} orders (notional {notional}), rejected {rejected}"
    );
    for (what, ages) in [
        ("quote age at the strategy", &quote_age),
        ("order age at risk", &order_age),
    ] {
        let p = ages.to_ns(&clock).percentiles();
        println!(
            "  {what:<26} {:>7} samples: p50 {:>6} ns  p99 {:>8} ns  p99.9 {:>8} ns  max {:>9} ns",
            p.count, p.p50, p.p99, p.p999, p.max
        );
    }
    println!(
        "  order pool: {} allocated, {} refused while full ({} waits), {} drains of the return ring taking {} slots; risk freed {}",
        made.allocated, made.exhausted, full, made.drains, made.drained, freed.released
    );
    println!(
        "  clock: {:?}, {:.3} GHz",
        clock.source(),
        clock.calibration().freq_hz / 1e9
    );
    assert_eq!(made.allocated, freed.released, "every order freed once");
    assert_eq!(rejected, 0, "every order priced at its quote's ask");
}
