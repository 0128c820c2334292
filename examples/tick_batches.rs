//! A `handoff::pool::BumpArena` per batch of ticks: a strategy collects each burst of
//! market data into one arena (allocation is an offset bump, nothing is freed one by
//! one), computes the burst's volume-weighted average price and best bid and ask, and
//! `reset`s the arena for the next burst. The borrow checker guarantees that no tick
//! of the previous burst is still referenced when the arena is reset.
//!
//! A burst larger than the arena is not an error the program cannot see: the arena
//! hands the request back in `Exhausted` (and counts it), and the program processes
//! that burst in parts.
//!
//! Run: `cargo run --release --example tick_batches`

use std::time::Instant;

use handoff::pool::BumpArena;

#[derive(Clone, Copy, Debug)]
struct Tick {
    ts: u64,
    price: f64,
    volume: u32,
    is_bid: bool,
}

/// Room for 16 384 ticks per burst.
const ARENA_BYTES: usize = 16_384 * size_of::<Tick>();

/// The market data of burst `b`, tick `i`: a deterministic stand-in for a feed.
fn tick(b: u64, i: usize) -> Tick {
    let wobble = ((b * 31 + i as u64 * 17) % 41) as f64 / 100.0;
    let is_bid = i.is_multiple_of(2);
    Tick {
        ts: b * 1_000_000 + i as u64,
        // Bids at or below 100.00, asks from 100.02 up, both drifting with the burst.
        price: if is_bid {
            100.0 - wobble
        } else {
            100.02 + wobble
        } + (b % 7) as f64 / 100.0,
        volume: 1 + (i % 9) as u32,
        is_bid,
    }
}

struct Summary {
    vwap: f64,
    best_bid: f64,
    best_ask: f64,
}

fn summarise(ticks: &[Tick]) -> Summary {
    assert!(
        ticks.windows(2).all(|w| w[0].ts < w[1].ts),
        "the arena keeps the burst in feed order"
    );
    let (mut pv, mut v) = (0.0, 0.0);
    let (mut best_bid, mut best_ask) = (f64::MIN, f64::MAX);
    for t in ticks {
        pv += t.price * f64::from(t.volume);
        v += f64::from(t.volume);
        if t.is_bid {
            best_bid = best_bid.max(t.price);
        } else {
            best_ask = best_ask.min(t.price);
        }
    }
    Summary {
        vwap: pv / v,
        best_bid,
        best_ask,
    }
}

fn main() {
    let mut arena = BumpArena::new(ARENA_BYTES).expect("arena size");
    // Burst sizes: mostly a few thousand ticks, one burst (the 70th) bigger than the arena.
    let bursts: Vec<usize> = (0..100)
        .map(|b| {
            if b == 70 {
                40_000
            } else {
                2_000 + (b * 131) % 9_000
            }
        })
        .collect();

    let start = Instant::now();
    let (mut ticks_seen, mut parts, mut refused, mut vwap_sum) = (0usize, 0usize, 0u64, 0.0);
    let mut spread_sum = 0.0;
    for (b, &n) in bursts.iter().enumerate() {
        let mut done = 0;
        while done < n {
            arena.reset(); // the previous burst (or part) is gone, all at once
            let want = n - done;
            let ticks = match arena.try_alloc_slice_fill_with(want, |i| tick(b as u64, done + i)) {
                Ok(ticks) => ticks,
                Err(_too_big) => {
                    // Not enough room for the rest of the burst: take what fits.
                    refused += 1;
                    let fits = arena.available() / size_of::<Tick>();
                    arena
                        .try_alloc_slice_fill_with(fits, |i| tick(b as u64, done + i))
                        .expect("sized to fit")
                }
            };
            let s = summarise(ticks);
            vwap_sum += s.vwap;
            spread_sum += s.best_ask - s.best_bid;
            done += ticks.len();
            parts += 1;
        }
        ticks_seen += n;
    }
    let took = start.elapsed();
    let stats = arena.stats();
    println!(
        "tick_batches: {} bursts, {ticks_seen} ticks in {parts} arena fills of up to {} ticks, {:.2} ms",
        bursts.len(),
        ARENA_BYTES / size_of::<Tick>(),
        took.as_secs_f64() * 1e3
    );
    println!(
        "  per fill: mean VWAP {:.4}, mean best-bid/best-ask spread {:.4}",
        vwap_sum / parts as f64,
        spread_sum / parts as f64
    );
    println!(
        "  arena: {} bytes, {} in use after the last fill; {} request(s) refused for want of room (parts of the oversized burst, each then filled to the brim)",
        stats.capacity, stats.used, stats.exhausted
    );
    assert_eq!(
        stats.exhausted, refused,
        "the arena counts every refusal the program saw"
    );
}
