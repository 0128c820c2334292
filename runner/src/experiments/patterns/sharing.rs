//! Two of document 003's lessons measured: cache-line alignment against false sharing
//! (lesson 8: two counters, each written by its own thread, in one cache line and then
//! in two), and jemalloc as a better default than glibc malloc (lesson 6: the same
//! batches of orders allocated and freed in a child process whose allocator is glibc,
//! then one whose allocator is jemalloc).

use super::work::Order;
use super::Config;
use crate::lab::error::{Error, Result};
use crate::lab::harness::together;
use crate::lab::{child, stop};
use crossbeam_utils::CachePadded;
use handoff_clock::Timer;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

/// Two counters in one cache line.
#[repr(C, align(64))]
#[derive(Default)]
struct Packed {
    counters: [AtomicU64; 2],
}

/// Two counters, each on a cache line of its own.
#[derive(Default)]
struct Padded {
    counters: [CachePadded<AtomicU64>; 2],
}

/// Wall ticks for two threads (on the placement's first two cores) to each increment
/// its own counter `n` times, the counters `padded` onto lines of their own or packed
/// into one. Each increment is a load and a store of the thread's own counter (no
/// read-modify-write instruction): what a plain per-thread statistic does. Checks
/// that every increment landed.
pub fn false_sharing(cfg: &Config, timer: Timer, n: u64, padded: bool) -> Result<u64> {
    let pins = cfg.placement.threads();
    let bump = |c: &AtomicU64| {
        for _ in 0..n {
            c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
    };
    let (ticks, got) = if padded {
        let p = Padded::default();
        let t = together(timer, stop::flag(), &pins, 2, |k| bump(&p.counters[k]))?;
        (t, [0, 1].map(|k| p.counters[k].load(Ordering::Relaxed)))
    } else {
        let p = Packed::default();
        let t = together(timer, stop::flag(), &pins, 2, |k| bump(&p.counters[k]))?;
        (t, [0, 1].map(|k| p.counters[k].load(Ordering::Relaxed)))
    };
    if got != [n, n] {
        return Err(Error::Run(format!(
            "false sharing: counters ended at {got:?}, expected {n} each"
        )));
    }
    Ok(ticks)
}

/// The child task that runs [`general_batches`] under the child's allocator.
pub const CHILD_TASK: &str = "patterns";

/// `orders` orders allocated in batches of 1000 and freed in allocation order, with
/// this process's allocator; wall ticks.
fn general_batches(timer: Timer, orders: u64) -> u64 {
    const BATCH: u64 = 1000;
    let mut held: Vec<Box<Order>> = Vec::with_capacity(BATCH as usize);
    let start = timer.now();
    let mut i = 0;
    while i < orders {
        for _ in 0..BATCH.min(orders - i) {
            held.push(Box::new(Order::new(i)));
            i += 1;
        }
        black_box(&held);
        held.clear();
    }
    timer.now().saturating_sub(start)
}

/// The child's side: the order count in (8 bytes), the TSC frequency's bits (8 bytes),
/// the wall ticks out.
pub fn child_task(input: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let word = |k: usize| -> std::result::Result<u64, String> {
        input
            .get(k * 8..k * 8 + 8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
            .ok_or_else(|| "patterns child: expected 16 bytes".to_string())
    };
    let (orders, freq) = (word(0)?, f64::from_bits(word(1)?));
    let timer = Timer::with_frequency(handoff_clock::Source::Tsc, freq);
    // A first pass warms the allocator's caches and the process's pages; the second is
    // timed.
    general_batches(timer, orders);
    Ok(general_batches(timer, orders).to_le_bytes().to_vec())
}

/// Wall ticks of [`general_batches`] in a child whose allocator is `allocator`
/// (`"system"`: glibc malloc, or `"jemalloc"`).
pub fn general(cfg: &Config, timer: Timer, allocator: &str) -> Result<u64> {
    let mut input = (cfg.orders as u64).to_le_bytes().to_vec();
    input.extend_from_slice(&timer.freq_hz().to_bits().to_le_bytes());
    let out = child::run(allocator, CHILD_TASK, allocator, &input)?;
    out.get(..8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| {
            Error::Run(format!(
                "{allocator}: the child returned {} bytes",
                out.len()
            ))
        })
}
