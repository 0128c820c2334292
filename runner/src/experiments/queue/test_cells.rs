//! Cells made from chosen latencies, for the claims' tests.

use super::work::Variant;
use super::{Cell, Mode};
use crate::lab::measure::Stamps;
use crate::lab::pacer::Schedule;
use handoff_clock::{Clock, Source, Timer};

/// A cell of 4000 items paced every `period` ns, item `i` taking `latency(i)` ns.
pub fn made(mode: Mode, variant: Variant, period: u64, latency: &dyn Fn(u64) -> u64) -> Cell {
    let clock = Clock::monotonic();
    let n = 4000u64;
    let send: Vec<u64> = (0..n).map(|i| 1_000 + i * period).collect();
    let recv: Vec<u64> = send
        .iter()
        .enumerate()
        .map(|(i, s)| s + latency(i as u64))
        .collect();
    let stamps = Stamps {
        schedule: Schedule::new(
            1_000,
            Some(1e9 / period as f64),
            Timer::with_frequency(Source::Tsc, 1e9),
        ),
        send,
        recv,
        off_core: 0,
        bad_items: 0,
    };
    let mut c = Cell::new(mode, variant, Some(1e9 / period as f64), n as usize, ());
    c.measured.add(&stamps, &clock, "x").unwrap();
    c
}
