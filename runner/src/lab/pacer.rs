//! The open-loop pacer: item `i` is due at `t0 + floor(i * period)` TSC ticks from a
//! fixed origin, so a stall is followed by a burst that catches up (the schedule never
//! slides). The producer stamps the actual send time; the intended time is this
//! schedule, so coordinated-omission-aware latency can be computed afterwards.

use handoff_clock::Timer;

/// The fraction of the offered rate below which a run is flagged.
pub const MIN_ACHIEVED_FRACTION: f64 = 0.95;

/// A send schedule in TSC ticks, and the timer whose reads it waits on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
    /// Origin: item 0 is due here.
    pub t0: u64,
    /// Ticks between items (between bursts when `burst > 1`); 0 means unpaced (every
    /// item is due at `t0`).
    pub period_ticks: f64,
    /// Items due together, sent back to back: 1 (no bursts) or more.
    pub burst: u64,
    /// The clock the ticks are of.
    pub timer: Timer,
}

impl Schedule {
    /// A schedule at `rate_hz` items per second on `timer`'s ticks. `None` rate means
    /// unpaced.
    ///
    /// ```
    /// use handoff_clock::{Source, Timer};
    /// use runner::lab::pacer::Schedule;
    /// let s = Schedule::new(1_000, Some(1e6), Timer::with_frequency(Source::Tsc, 3e9));
    /// assert_eq!((s.due(0), s.due(1), s.due(10)), (1_000, 4_000, 31_000));
    /// ```
    pub fn new(t0: u64, rate_hz: Option<f64>, timer: Timer) -> Schedule {
        let period_ticks = match rate_hz {
            Some(r) if r > 0.0 && r.is_finite() => timer.period_ticks(r),
            _ => 0.0,
        };
        Schedule {
            t0,
            period_ticks,
            burst: 1,
            timer,
        }
    }

    /// The same schedule in bursts: `burst` items (at least 1) due together at each
    /// due time, the due times `period_ticks` apart.
    ///
    /// ```
    /// use handoff_clock::{Source, Timer};
    /// use runner::lab::pacer::Schedule;
    /// let s = Schedule::new(1_000, Some(1e6), Timer::with_frequency(Source::Tsc, 3e9)).bursts_of(4);
    /// assert_eq!((s.due(0), s.due(3), s.due(4), s.due(9)), (1_000, 1_000, 4_000, 7_000));
    /// ```
    pub fn bursts_of(mut self, burst: u64) -> Schedule {
        self.burst = burst.max(1);
        self
    }

    /// When item `i` is due: `t0 + floor((i / burst) * period)`, `t0 + floor(i * period)`
    /// without bursts. The C++ pacer computes the same expression (the C++ variants'
    /// `cpp_due`), so both languages keep one schedule (the queue experiment's tests
    /// check that they agree).
    #[inline(always)]
    pub fn due(&self, i: u64) -> u64 {
        self.t0 + ((i / self.burst) as f64 * self.period_ticks) as u64
    }

    /// Whether the schedule paces at all.
    pub fn is_paced(&self) -> bool {
        self.period_ticks > 0.0
    }

    /// Spins until the clock reaches `due` (unordered reads: this waits, it never
    /// stamps), with no `pause` in the loop, so that the send happens within a clock
    /// read of its due time (docs/spsc-notebook.md measured one `pause` at 17 ns on the Xeon
    /// guest).
    #[inline(always)]
    pub fn wait_until(&self, due: u64) {
        while self.timer.now() < due {}
    }
}

/// The rate actually achieved by a run, from its send stamps (items per second):
/// `(n - 1)` intervals over the span from the first to the last send.
///
/// ```
/// use runner::lab::pacer::achieved_rate;
/// assert_eq!(achieved_rate(&[0, 1000, 2000, 3000], 1e9), Some(1e6));
/// assert_eq!(achieved_rate(&[5], 1e9), None);
/// ```
pub fn achieved_rate(send_stamps: &[u64], freq_hz: f64) -> Option<f64> {
    let (first, last) = (send_stamps.first()?, send_stamps.last()?);
    if send_stamps.len() < 2 || last <= first {
        return None;
    }
    Some((send_stamps.len() - 1) as f64 * freq_hz / (last - first) as f64)
}

/// Whether a run fell below 95% of its offered rate.
///
/// ```
/// assert!(runner::lab::pacer::below_target(940_000.0, 1e6));
/// assert!(!runner::lab::pacer::below_target(960_000.0, 1e6));
/// ```
pub fn below_target(achieved_hz: f64, offered_hz: f64) -> bool {
    achieved_hz < MIN_ACHIEVED_FRACTION * offered_hz
}

/// `count` offered rates spaced evenly on a log scale from `lo` to `hi` inclusive
/// (the document's load sweep: twelve points from 100 kHz to 50 MHz).
///
/// ```
/// let r = runner::lab::pacer::log_spaced(1e5, 5e7, 12);
/// assert_eq!(r.len(), 12);
/// assert_eq!((r[0], r[11].round()), (1e5, 5e7));
/// ```
pub fn log_spaced(lo: f64, hi: f64, count: usize) -> Vec<f64> {
    if count < 2 {
        return vec![lo];
    }
    let step = (hi / lo).ln() / (count - 1) as f64;
    (0..count)
        .map(|k| {
            if k == count - 1 {
                hi
            } else {
                lo * (step * k as f64).exp()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TSC timer at `freq_hz`, for schedules computed on paper.
    fn at(freq_hz: f64) -> Timer {
        Timer::with_frequency(handoff_clock::Source::Tsc, freq_hz)
    }

    #[test]
    fn schedule_is_a_fixed_origin_grid() {
        let s = Schedule::new(10_000, Some(1e6), at(2.596e9));
        assert!((s.period_ticks - 2596.0).abs() < 1e-9);
        for i in [0u64, 1, 2, 999, 1_000_000] {
            assert_eq!(s.due(i), 10_000 + i * 2596);
        }
        // A fractional period floors each due time from the origin: no drift builds up.
        let s = Schedule::new(0, Some(3e6), at(1e9));
        assert_eq!(
            (s.due(1), s.due(2), s.due(3), s.due(3_000_000)),
            (333, 666, 1000, 1_000_000_000)
        );
        // Unpaced and nonsense rates give period 0.
        for r in [
            None,
            Some(0.0),
            Some(-1.0),
            Some(f64::NAN),
            Some(f64::INFINITY),
        ] {
            let s = Schedule::new(7, r, at(1e9));
            assert!(!s.is_paced());
            assert_eq!(s.due(123), 7);
        }
    }

    #[test]
    fn achieved_rate_and_flag() {
        assert_eq!(achieved_rate(&[], 1e9), None);
        assert_eq!(achieved_rate(&[3, 3], 1e9), None);
        let r = achieved_rate(&[0, 500, 1000], 1e9).unwrap();
        assert!((r - 2e6).abs() < 1e-6);
        assert!(below_target(0.9e6, 1e6));
        assert!(!below_target(0.95e6, 1e6));
    }

    #[test]
    fn sweep_points_are_log_spaced() {
        let r = log_spaced(1e5, 5e7, 12);
        let ratio = r[1] / r[0];
        for w in r.windows(2) {
            assert!((w[1] / w[0] - ratio).abs() < 1e-9);
        }
        assert!((ratio.powi(11) - 500.0).abs() < 1e-6);
    }

    #[test]
    fn wait_until_waits() {
        let timer = handoff_clock::Clock::calibrate().timer();
        let s = Schedule::new(timer.now(), Some(1e6), timer);
        let due = timer.now() + 100_000;
        s.wait_until(due);
        assert!(timer.now() >= due);
    }
}
