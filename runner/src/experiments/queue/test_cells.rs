//! Cells made from chosen latencies, for the claims' tests.

use super::work::Variant;
use super::{Cell, Mode};
use crate::lab::measure::Stamps;
use crate::lab::pacer::Schedule;
use handoff_clock::{Clock, Source, Timer};

/// `n` items paced every `period` ns from `start`, item `i` taking `latency(i)` ns (a
/// 1 GHz clock: ticks are ns).
fn stamps(start: u64, n: u64, period: u64, latency: &dyn Fn(u64) -> u64) -> Stamps {
    let send: Vec<u64> = (0..n).map(|i| start + i * period).collect();
    let recv: Vec<u64> = send
        .iter()
        .enumerate()
        .map(|(i, s)| s + latency(i as u64))
        .collect();
    Stamps {
        schedule: Schedule::new(
            start,
            Some(1e9 / period as f64),
            Timer::with_frequency(Source::Tsc, 1e9),
        ),
        send,
        recv,
        off_core: 0,
        bad_items: 0,
    }
}

/// A cell of 4000 items paced every `period` ns, item `i` taking `latency(i)` ns.
pub fn made(mode: Mode, variant: Variant, period: u64, latency: &dyn Fn(u64) -> u64) -> Cell {
    let n = 4000u64;
    let mut c = Cell::new(mode, variant, Some(1e9 / period as f64), n as usize, ());
    c.measured
        .add(&stamps(1_000, n, period, latency), &Clock::monotonic(), "x")
        .unwrap();
    c
}

/// A sweep cell of one run in slices of 1000 items paced every `period` ns: each slice
/// with the cores' round trip probed at `probe_ns` before and after it, its items taking
/// `latency_ns`.
pub fn placed_slices(variant: Variant, period: u64, slices: &[(f64, u64)]) -> Cell {
    use crate::lab::measure::Around;
    let n = 1000u64;
    let mut c = Cell::new(
        Mode::Sweep,
        variant,
        Some(1e9 / period as f64),
        n as usize * slices.len(),
        (),
    );
    let all: Vec<Stamps> = slices
        .iter()
        .enumerate()
        .map(|(k, &(_, latency))| stamps(1_000 + k as u64 * n * period, n, period, &|_| latency))
        .collect();
    let parts: Vec<(&Stamps, Option<Around>)> = all
        .iter()
        .zip(slices)
        .map(|(s, &(probe, _))| {
            let around = Around {
                before_ns: probe,
                after_ns: probe,
            };
            (s, Some(around))
        })
        .collect();
    c.measured
        .add_slices(&parts, &Clock::monotonic(), "x")
        .unwrap();
    c
}
