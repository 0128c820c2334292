//! The three ways to wait on a `handoff::spsc` ring, each with a timeout, each ending
//! when the other side is gone:
//!
//! 1. `Spin`: a strategy thread on a core of its own busy-polls for ticks
//!    (`Consumer::pop_timeout(timeout, Spin)`): the lowest latency, the core never idle.
//! 2. `SpinThenYield`: a logger that shares its core spins a little, then yields the
//!    core between tries (`SpinThenYield::new(spins)`).
//! 3. Parking: a risk thread that sees an order now and then sleeps between them
//!    (`wait::parking`): its thread parks, and each push wakes it.
//!
//! Run: `cargo run --release --example waiting`

use std::time::{Duration, Instant};

use handoff::spsc::channel;
use handoff::spsc::wait::{parking, PopTimeoutError, Spin, SpinThenYield};

#[derive(Clone, Copy)]
struct Tick {
    seq: u64,
    price: u32,
}

/// Every tick of a feed to a spinning strategy thread.
fn spinning_strategy() {
    const TICKS: u64 = 200_000;
    let (mut tx, mut rx) = channel::<Tick>(1024);
    let feed = std::thread::spawn(move || {
        for seq in 0..TICKS {
            let tick = Tick {
                seq,
                price: 10_000 + (seq % 50) as u32,
            };
            if tx.push_timeout(tick, Duration::from_secs(5), Spin).is_err() {
                return; // timed out, or the strategy is gone
            }
        }
    });
    let (mut seen, mut sum) = (0u64, 0u64);
    let start = Instant::now();
    loop {
        match rx.pop_timeout(Duration::from_secs(5), Spin) {
            Ok(t) => {
                assert_eq!(t.seq, seen);
                sum += u64::from(t.price);
                seen += 1;
            }
            Err(PopTimeoutError::Disconnected) => break, // the feed is done, all read
            Err(e) => panic!("strategy: {e}"),
        }
    }
    feed.join().expect("feed panicked");
    println!(
        "Spin:          {seen} ticks in {:.1} ms, mean price {:.2}",
        start.elapsed().as_secs_f64() * 1e3,
        sum as f64 / seen as f64
    );
}

/// A logger sharing a core: it spins 50 tries, then yields between tries.
fn yielding_logger() {
    let (mut tx, mut rx) = channel::<u64>(64);
    let logger = std::thread::spawn(move || {
        let mut lines = 0;
        let mut timeouts = 0;
        loop {
            match rx.pop_timeout(Duration::from_millis(1), SpinThenYield::new(50)) {
                Ok(_) => lines += 1,
                Err(PopTimeoutError::Timeout) => timeouts += 1, // a quiet millisecond
                Err(PopTimeoutError::Disconnected) => return (lines, timeouts),
            }
        }
    });
    for burst in 0..20u64 {
        for line in 0..100 {
            tx.push_timeout(
                burst * 100 + line,
                Duration::from_secs(5),
                SpinThenYield::new(50),
            )
            .expect("the logger keeps up");
        }
        std::thread::sleep(Duration::from_millis(2)); // quiet between bursts
    }
    drop(tx);
    let (lines, timeouts) = logger.join().expect("logger panicked");
    assert_eq!(lines, 2_000);
    println!(
        "SpinThenYield: {lines} lines logged in 20 bursts, {timeouts} quiet milliseconds timed out"
    );
}

/// A risk thread that parks between orders; each push wakes it.
fn parked_risk_check() {
    let (tx, rx) = channel::<(u64, i64)>(16);
    let (mut tx, mut rx) = parking(tx, rx);
    let risk = std::thread::spawn(move || {
        let mut position = 0i64;
        let mut checked = 0;
        let mut woke_late = Duration::ZERO;
        loop {
            match rx.pop_timeout(Duration::from_secs(5)) {
                Ok((sent_ns, qty)) => {
                    position += qty;
                    checked += 1;
                    let now = nanos();
                    woke_late = woke_late.max(Duration::from_nanos(now.saturating_sub(sent_ns)));
                }
                Err(PopTimeoutError::Disconnected) => return (checked, position, woke_late),
                Err(e) => panic!("risk: {e}"),
            }
        }
    });
    for i in 0..50i64 {
        std::thread::sleep(Duration::from_millis(1)); // an order now and then
        let qty = if i % 2 == 0 { 10 } else { -5 };
        tx.push_timeout((nanos(), qty), Duration::from_secs(5))
            .expect("risk is there");
    }
    drop(tx); // wakes the risk thread one last time
    let (checked, position, late) = risk.join().expect("risk panicked");
    assert_eq!((checked, position), (50, 125));
    println!(
        "Parking:       {checked} orders checked by a thread that slept between them, position {position}, slowest wake-up {:.1} us",
        late.as_secs_f64() * 1e6
    );
}

/// Nanoseconds since the first call (one clock for both threads).
fn nanos() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

fn main() {
    spinning_strategy();
    yielding_logger();
    parked_risk_check();
}
