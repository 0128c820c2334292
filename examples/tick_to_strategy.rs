//! A market-data thread hands 16-byte ticks to a strategy thread through a
//! `handoff::spsc` ring, and the strategy thread measures each tick's age with the
//! TSC clock and records it in a latency histogram.
//!
//! Run: `cargo run --release --example tick_to_strategy`

use handoff::clock::Clock;
use handoff::spsc::{channel, PopError};
use handoff::stats::{Latency, Unit};

#[derive(Clone, Copy)]
struct Tick {
    /// Clock ticks when the feed thread published the tick.
    stamped: u64,
    price: u32,
    qty: u32,
}

fn main() {
    const TICKS: u64 = 1_000_000;
    let clock = Clock::calibrate();
    let (mut tx, mut rx) = channel::<Tick>(1024);

    let feed_clock = clock.clone();
    let feed = std::thread::spawn(move || {
        for i in 0..TICKS {
            let mut tick = Tick {
                stamped: feed_clock.start(),
                price: 10_000 + (i % 100) as u32,
                qty: 1 + (i % 7) as u32,
            };
            while let Err(e) = tx.try_push(tick) {
                if e.is_disconnected() {
                    return; // the strategy is gone
                }
                tick = e.into_inner();
            }
        }
    });

    let mut age = Latency::with_unit(Unit::Ticks);
    let mut notional = 0u64;
    let mut seen = 0;
    loop {
        match rx.try_pop() {
            Ok(tick) => {
                age.record(clock.end().saturating_sub(tick.stamped));
                notional += u64::from(tick.price) * u64::from(tick.qty);
                seen += 1;
            }
            Err(PopError::Empty) => std::hint::spin_loop(),
            // The feed is gone and every tick it sent has been read.
            Err(PopError::Disconnected) => break,
        }
    }
    assert_eq!(seen, TICKS, "the feed stopped early");
    feed.join().expect("feed thread panicked");

    let ns = age.to_ns(&clock);
    let p = ns.percentiles();
    println!(
        "{} ticks, notional {notional}; tick age (unpaced, so it includes queueing) p50 {} ns, p99 {} ns, p99.9 {} ns, max {} ns",
        p.count, p.p50, p.p99, p.p999, p.max
    );
    println!("clock: {:?}", clock.calibration());
}
