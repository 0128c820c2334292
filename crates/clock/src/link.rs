//! How far apart two cores are, measured: the round trip of a cache line between them
//! ([`Link::ping`] on one core, [`Link::pong`] on the other), and the classes those
//! round trips fall into over a run ([`Classes`]).
//!
//! On a virtual machine the host may move the vCPUs between physical placements
//! (sharing a core, sharing a cache, or neither) many times a second, and every
//! cross-core latency moves with the placement. A short probe around each slice of a
//! measurement says which placement the slice ran in, so that contenders are compared
//! within one placement. On bare metal with pinned threads there is one class.
//!
//! ```
//! use handoff_clock::{link::Link, Clock};
//! let timer = Clock::quick().timer();
//! let link = Link::new();
//! let rtt = std::thread::scope(|s| {
//!     s.spawn(|| link.pong(64));
//!     link.ping(timer, 64)
//! });
//! assert!(rtt > 0.0);
//! ```

use crate::Timer;
use std::sync::atomic::{AtomicU64, Ordering};

/// One counter on its own pair of cache lines (adjacent-line prefetch pairs them).
#[repr(align(128))]
#[derive(Debug, Default)]
struct Line(AtomicU64);

/// The two lines a probe bounces between two threads: one written by the pinging
/// side, one by the answering side. Each probe continues the counts of the last, so
/// one `Link` serves any number of probes, as long as each `ping(n)` is answered by
/// a `pong(n)`.
#[derive(Debug, Default)]
pub struct Link {
    ping: Line,
    pong: Line,
}

impl Link {
    /// Two fresh lines.
    pub fn new() -> Link {
        Link::default()
    }

    /// Sends `trips` pings, each after the previous one's answer, and returns the
    /// median round trip in nanoseconds (each trip timed with one `timer.now()`, whose
    /// cost is included). Spins until [`pong`](Link::pong) answers on another thread:
    /// run the two on different cores, or each trip waits for the scheduler. 0 when
    /// `trips` is 0.
    pub fn ping(&self, timer: Timer, trips: usize) -> f64 {
        if trips == 0 {
            return 0.0;
        }
        let base = self.ping.0.load(Ordering::Relaxed);
        let mut rtt = Vec::with_capacity(trips);
        let mut last = timer.now();
        for k in 1..=trips as u64 {
            self.ping.0.store(base + k, Ordering::Release);
            while self.pong.0.load(Ordering::Acquire) != base + k {
                std::hint::spin_loop();
            }
            let now = timer.now();
            rtt.push(now.wrapping_sub(last));
            last = now;
        }
        rtt.sort_unstable();
        timer.ns(rtt[trips / 2])
    }

    /// Answers `trips` pings (see [`ping`](Link::ping)).
    pub fn pong(&self, trips: usize) {
        let base = self.pong.0.load(Ordering::Relaxed);
        for k in 1..=trips as u64 {
            while self.ping.0.load(Ordering::Acquire) != base + k {
                std::hint::spin_loop();
            }
            self.pong.0.store(base + k, Ordering::Release);
        }
    }
}

/// The width of a histogram bin of round trips: 10% (a bin's upper edge over its
/// lower).
pub const BIN_RATIO: f64 = 1.1;

/// A bin holds a class's round trips if it has at least this share of all probes.
pub const MIN_BIN_SHARE: f64 = 0.01;

/// Occupied bins this close (empty bins between them at most) belong to one class.
pub const MAX_GAP_BINS: i32 = 2;

/// The bin of a round trip (ns): bins are [`BIN_RATIO`] wide on a log scale.
///
/// ```
/// use handoff_clock::link::bin;
/// assert_eq!(bin(100.0), bin(104.0));
/// assert!(bin(130.0) > bin(100.0) + 1);
/// ```
pub fn bin(rtt_ns: f64) -> i32 {
    (rtt_ns.max(1.0).ln() / BIN_RATIO.ln()).floor() as i32
}

/// One class of round trips: a placement of the two cores.
#[derive(Clone, Debug, PartialEq)]
pub struct Class {
    /// The lowest and highest bin of the class.
    pub bins: (i32, i32),
    /// The median round trip of the probes in it (ns).
    pub median_ns: f64,
    /// Probes in it.
    pub probes: usize,
}

impl Class {
    /// Its name in tables and results: `~100 ns` (the median round trip, two
    /// significant figures).
    pub fn label(&self) -> String {
        let m = self.median_ns;
        let step = if m >= 100.0 {
            10f64.powi(m.log10().floor() as i32 - 1)
        } else {
            1.0
        };
        format!("~{} ns", ((m / step).round() * step) as u64)
    }
}

/// The classes of a run's probes: runs of bins that each hold at least
/// [`MIN_BIN_SHARE`] of the probes, merged across at most [`MAX_GAP_BINS`] empty or
/// sparse bins, fastest first. A probe in a sparse bin outside every class (the
/// placement changed while it ran) belongs to none.
///
/// ```
/// use handoff_clock::link::Classes;
/// let mut probes = vec![100.0; 60];
/// probes.extend([104.0; 30]);
/// probes.extend([600.0; 40]);
/// probes.push(300.0); // one probe caught a move
/// let c = Classes::of(&probes);
/// assert_eq!(c.list.len(), 2);
/// assert_eq!(c.list[0].label(), "~100 ns");
/// assert_eq!(c.list[1].label(), "~600 ns");
/// assert_eq!(c.of_rtt(103.0), Some(0));
/// assert_eq!(c.of_rtt(300.0), None);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Classes {
    /// The classes, by round trip.
    pub list: Vec<Class>,
}

impl Classes {
    /// The classes of `rtts_ns` (non-finite and non-positive values are ignored).
    pub fn of(rtts_ns: &[f64]) -> Classes {
        let mut v: Vec<f64> = rtts_ns
            .iter()
            .copied()
            .filter(|x| x.is_finite() && *x > 0.0)
            .collect();
        v.sort_by(|a, b| a.total_cmp(b));
        let min = ((v.len() as f64 * MIN_BIN_SHARE).ceil() as usize).max(1);
        let mut occupied: Vec<i32> = Vec::new();
        let mut i = 0;
        while i < v.len() {
            let b = bin(v[i]);
            let n = v[i..].iter().take_while(|&&x| bin(x) == b).count();
            if n >= min {
                occupied.push(b);
            }
            i += n;
        }
        let mut list: Vec<Class> = Vec::new();
        for b in occupied {
            match list.last_mut() {
                Some(c) if b - c.bins.1 <= MAX_GAP_BINS + 1 => c.bins.1 = b,
                _ => list.push(Class {
                    bins: (b, b),
                    median_ns: 0.0,
                    probes: 0,
                }),
            }
        }
        for c in &mut list {
            let inside: Vec<f64> = v
                .iter()
                .copied()
                .filter(|&x| (c.bins.0..=c.bins.1).contains(&bin(x)))
                .collect();
            c.probes = inside.len();
            c.median_ns = inside[inside.len() / 2];
        }
        Classes { list }
    }

    /// The class a round trip falls in, by index, if any.
    pub fn of_rtt(&self, rtt_ns: f64) -> Option<usize> {
        self.of_bins(bin(rtt_ns), bin(rtt_ns))
    }

    /// The class of a slice probed before and after: the class both probes fall in,
    /// `None` if either falls in none or they differ (the placement moved).
    pub fn of_slice(&self, before_ns: f64, after_ns: f64) -> Option<usize> {
        self.of_bins(bin(before_ns), bin(after_ns))
    }

    /// [`of_slice`](Classes::of_slice) for probes already reduced to their [`bin`]s.
    pub fn of_bins(&self, before: i32, after: i32) -> Option<usize> {
        let class = |b: i32| {
            self.list
                .iter()
                .position(|c| (c.bins.0..=c.bins.1).contains(&b))
        };
        let k = class(before)?;
        (class(after) == Some(k)).then_some(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_modes_far_apart_are_three_classes() {
        let mut p = Vec::new();
        for k in 0..100 {
            p.push(50.0 + (k % 7) as f64);
            p.push(125.0 + (k % 13) as f64);
            p.push(550.0 + (k % 11) as f64 * 9.0);
        }
        let c = Classes::of(&p);
        assert_eq!(c.list.len(), 3, "{c:?}");
        assert_eq!(c.list.iter().map(|x| x.probes).sum::<usize>(), 300);
        assert_eq!(c.of_slice(52.0, 55.0), Some(0));
        assert_eq!(c.of_slice(52.0, 130.0), None);
        assert_eq!(c.of_rtt(1e6), None);
    }

    #[test]
    fn one_wide_mode_is_one_class() {
        // 92-136 ns, as one placement on a quiet guest measured.
        let p: Vec<f64> = (0..1000).map(|k| 92.0 + (k % 45) as f64).collect();
        let c = Classes::of(&p);
        assert_eq!(c.list.len(), 1, "{c:?}");
        assert_eq!(c.list[0].probes, 1000);
    }

    #[test]
    fn no_probes_no_classes() {
        assert!(Classes::of(&[]).list.is_empty());
        assert!(Classes::of(&[f64::NAN, -1.0]).list.is_empty());
        assert_eq!(Classes::of(&[]).of_slice(100.0, 100.0), None);
    }

    #[test]
    fn labels_keep_two_figures() {
        let c = |m| Class {
            bins: (0, 0),
            median_ns: m,
            probes: 1,
        };
        assert_eq!(c(52.4).label(), "~52 ns");
        assert_eq!(c(127.0).label(), "~130 ns");
        assert_eq!(c(1234.0).label(), "~1200 ns");
    }

    #[test]
    fn probes_continue_the_counts() {
        let link = Link::new();
        let timer = crate::Clock::quick().timer();
        for _ in 0..3 {
            let r = std::thread::scope(|s| {
                s.spawn(|| link.pong(10));
                link.ping(timer, 10)
            });
            assert!(r > 0.0);
        }
        assert_eq!(link.ping.0.load(Ordering::Relaxed), 30);
        assert_eq!(link.pong.0.load(Ordering::Relaxed), 30);
        assert_eq!(link.ping(timer, 0), 0.0);
    }
}
