//! Scheduling noise: how often, and for how long, each pinned core is taken away from
//! a thread that spins on it (timer ticks, other interrupts, kernel threads, hypervisor
//! pauses), and what that does to a handoff between two of them.
//!
//! A queue's tail latency can never be lower than what its consumer's core loses
//! while its producer's core keeps sending, so the probe turns the two cores' gaps into
//! a *floor*: the latency quantile a queue would show if its own cost were zero and
//! only these interruptions delayed items. The model: the producer sends at a steady
//! rate whenever its core runs; the consumer takes each item at once unless its core
//! is away. An item sent at `s` during a consumer gap that ends at `e` waits `e - s`.
//! So the share of items delayed by more than `t` is the time, within
//! `[start, end - t)` of every consumer gap, that the producer's core was running,
//! over the probe's duration, whatever the rate. Items a paced producer sends in a
//! burst after its own pause are not counted, so the floor errs low.

use super::error::Error;
use super::{fmt, pin};
use handoff_clock::Clock;
use serde::Serialize;
use std::sync::Barrier;

/// Gaps shorter than this are not counted (1 us: a hundred loop turns).
pub const THRESHOLD_NS: u64 = 1_000;

/// Upper bounds (ns) of the gap-length histogram's buckets; the last is open.
const BUCKETS_NS: [u64; 8] = [
    2_000, 5_000, 10_000, 30_000, 100_000, 300_000, 1_000_000, 4_000_000,
];

/// One gap, `[start, end)` in ns from the probe's common origin.
pub type Gap = (u64, u64);

/// What one core lost while a thread spun on it.
#[derive(Clone, Debug, Serialize)]
pub struct CoreNoise {
    /// The core.
    pub cpu: usize,
    /// Gaps counted.
    pub interruptions: u64,
    /// Gaps per second.
    pub per_second: f64,
    /// Share of the time the core was away (sum of the gaps over the duration).
    pub lost_fraction: f64,
    /// Median gap (ns).
    pub median_ns: u64,
    /// Longest gap (ns).
    pub max_ns: u64,
    /// Local timer interrupts per second on this core over the same time, from
    /// `/proc/interrupts` (Linux), to tell scheduler ticks from other causes.
    pub timer_interrupts_per_s: Option<f64>,
    /// Gap counts per length bucket: `"<2us"`, `"2-5us"`, ..., `">=4ms"`.
    pub histogram: Vec<(String, u64)>,
    /// Some gaps were not kept (more than the probe had room for); the count and the
    /// lost share still include them, everything else does not.
    pub truncated: bool,
}

impl CoreNoise {
    /// Reduces the gaps kept on `cpu` over `seconds`; `interruptions` and `lost_ns`
    /// also count the gaps that were not kept.
    ///
    /// ```
    /// use runner::lab::noise::CoreNoise;
    /// let n = CoreNoise::from_gaps(1, &[(0, 20_000), (4_000_000, 4_015_000)], 0.01, 2, 35_000, false);
    /// assert_eq!((n.interruptions, n.median_ns, n.max_ns), (2, 20_000, 20_000));
    /// assert!((n.lost_fraction - 0.0035).abs() < 1e-12 && n.per_second == 200.0);
    /// ```
    pub fn from_gaps(
        cpu: usize,
        gaps: &[Gap],
        seconds: f64,
        interruptions: u64,
        lost_ns: u64,
        truncated: bool,
    ) -> CoreNoise {
        let mut lens: Vec<u64> = gaps.iter().map(|g| g.1 - g.0).collect();
        lens.sort_unstable();
        let mut histogram: Vec<(String, u64)> = Vec::new();
        let mut lo = 0u64;
        for (i, &hi) in BUCKETS_NS.iter().chain([&u64::MAX]).enumerate() {
            let n = lens.iter().filter(|&&g| g >= lo && g < hi).count() as u64;
            let label = match i {
                0 => format!("<{}", fmt::dur(hi)),
                _ if hi == u64::MAX => format!(">={}", fmt::dur(lo)),
                _ => {
                    let (a, b) = (fmt::dur(lo), fmt::dur(hi));
                    let unit = &b[b.len() - 2..];
                    format!("{}-{b}", a.strip_suffix(unit).unwrap_or(&a))
                }
            };
            histogram.push((label, n));
            lo = hi;
        }
        CoreNoise {
            cpu,
            interruptions,
            per_second: interruptions as f64 / seconds,
            lost_fraction: lost_ns as f64 / (seconds * 1e9),
            median_ns: lens.get(lens.len() / 2).copied().unwrap_or(0),
            max_ns: lens.last().copied().unwrap_or(0),
            timer_interrupts_per_s: None,
            histogram,
            truncated,
        }
    }

    /// One line for the report: rate, share of the time lost, median and longest gap.
    pub fn summary(&self) -> String {
        format!(
            "cpu{} {:.0} gaps/s{}, {:.2}% of the time lost, median {}, max {}{}",
            self.cpu,
            self.per_second,
            self.timer_interrupts_per_s
                .map(|t| format!(" (timer interrupts {t:.0}/s)"))
                .unwrap_or_default(),
            self.lost_fraction * 100.0,
            fmt::dur(self.median_ns),
            fmt::dur(self.max_ns),
            if self.truncated { " (truncated)" } else { "" }
        )
    }
}

/// What the two cores' gaps do to items handed from one to the other.
#[derive(Clone, Debug, Serialize)]
pub struct Handoff {
    /// The sending core.
    pub producer: usize,
    /// The receiving core.
    pub consumer: usize,
    /// Share of the time the consumer's core was away while the producer's ran.
    pub exposed_fraction: f64,
    /// Share of items taken 10 us or more late because of the gaps alone.
    pub delayed_over_10us: f64,
    /// The p99 latency the gaps alone impose (ns).
    pub p99_floor_ns: u64,
    /// The p99.9 latency the gaps alone impose (ns).
    #[serde(rename = "p99.9_floor_ns")]
    pub p999_floor_ns: u64,
}

impl Handoff {
    /// From both cores' gaps (each sorted by start, not overlapping) over `duration_ns`.
    pub fn from_gaps(
        (producer, p_gaps): (usize, &[Gap]),
        (consumer, c_gaps): (usize, &[Gap]),
        duration_ns: f64,
    ) -> Handoff {
        Handoff {
            producer,
            consumer,
            exposed_fraction: delayed_fraction(c_gaps, p_gaps, duration_ns, 0),
            delayed_over_10us: delayed_fraction(c_gaps, p_gaps, duration_ns, 10_000),
            p99_floor_ns: latency_floor(c_gaps, p_gaps, duration_ns, 0.99),
            p999_floor_ns: latency_floor(c_gaps, p_gaps, duration_ns, 0.999),
        }
    }

    /// One line for the report.
    pub fn summary(&self) -> String {
        format!(
            "cpu{} -> cpu{}: consumer away while the producer runs {:.2}% of the time, {:.2}% of items >=10us late; floor p99 {} / p99.9 {}",
            self.producer,
            self.consumer,
            self.exposed_fraction * 100.0,
            self.delayed_over_10us * 100.0,
            fmt::dur(self.p99_floor_ns),
            fmt::dur(self.p999_floor_ns)
        )
    }
}

/// The share of items delayed by more than `t_ns` (see the module docs): for every
/// consumer gap `[a, e)`, the time in `[a, e - t)` outside the producer's gaps, summed,
/// over `duration_ns`. Both gap lists sorted by start, not overlapping.
///
/// ```
/// use runner::lab::noise::delayed_fraction;
/// // One 10 us consumer gap in 1 ms: 1% of items wait more than 0, 0.5% more than 5 us.
/// assert!((delayed_fraction(&[(0, 10_000)], &[], 1e6, 0) - 0.01).abs() < 1e-12);
/// assert!((delayed_fraction(&[(0, 10_000)], &[], 1e6, 5_000) - 0.005).abs() < 1e-12);
/// // The producer paused for the first 4 us of it: nothing was sent then.
/// assert!((delayed_fraction(&[(0, 10_000)], &[(0, 4_000)], 1e6, 5_000) - 0.001).abs() < 1e-12);
/// ```
pub fn delayed_fraction(consumer: &[Gap], producer: &[Gap], duration_ns: f64, t_ns: u64) -> f64 {
    let mut j = 0;
    let mut sum = 0u64;
    for &(a, e) in consumer {
        let end = e.saturating_sub(t_ns);
        if end <= a {
            continue;
        }
        while j < producer.len() && producer[j].1 <= a {
            j += 1;
        }
        let mut open = end - a;
        for &(ps, pe) in producer[j..].iter().take_while(|p| p.0 < end) {
            open -= pe.min(end).saturating_sub(ps.max(a));
        }
        sum += open;
    }
    sum as f64 / duration_ns
}

/// The smallest latency `t` (ns) with at most `1 - q` of items delayed beyond it: the
/// `q` quantile the gaps alone impose. 0 when the consumer's exposed time is within
/// `1 - q`.
///
/// ```
/// use runner::lab::noise::{delayed_fraction, latency_floor};
/// let c = [(0, 5_000), (100_000, 120_000), (500_000, 540_000)];
/// let t = latency_floor(&c, &[], 2e6, 0.99);
/// assert!((delayed_fraction(&c, &[], 2e6, t) - 0.01).abs() < 1e-6);
/// assert_eq!(latency_floor(&c, &[], 1e9, 0.99), 0);
/// ```
pub fn latency_floor(consumer: &[Gap], producer: &[Gap], duration_ns: f64, q: f64) -> u64 {
    let allowed = 1.0 - q;
    let f = |t| delayed_fraction(consumer, producer, duration_ns, t);
    if f(0) <= allowed {
        return 0;
    }
    // f falls as t grows and is 0 at the longest gap.
    let (mut lo, mut hi) = (0u64, consumer.iter().map(|g| g.1 - g.0).max().unwrap_or(0));
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if f(mid) <= allowed {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// Local timer interrupt counts per CPU from a `/proc/interrupts` text (the `LOC`
/// row, columns named by the `CPUn` header).
///
/// ```
/// use runner::lab::noise::local_timer_counts;
/// let t = "           CPU0       CPU1\n  0:   12   0   IO-APIC timer\nLOC:   1186931    1365691   Local timer interrupts\n";
/// assert_eq!(local_timer_counts(t), vec![(0, 1186931), (1, 1365691)]);
/// ```
pub fn local_timer_counts(text: &str) -> Vec<(usize, u64)> {
    let mut lines = text.lines();
    let cpus: Vec<usize> = lines
        .next()
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|c| c.strip_prefix("CPU")?.parse().ok())
        .collect();
    let Some(loc) = lines.find_map(|l| l.trim_start().strip_prefix("LOC:")) else {
        return Vec::new();
    };
    cpus.into_iter()
        .zip(loc.split_whitespace().map_while(|v| v.parse::<u64>().ok()))
        .collect()
}

fn timer_counts() -> Vec<(usize, u64)> {
    std::fs::read_to_string("/proc/interrupts")
        .map(|t| local_timer_counts(&t))
        .unwrap_or_default()
}

/// One probe: every core's noise, and the handoff from the first core to the second.
#[derive(Clone, Debug, Serialize)]
pub struct Probe {
    /// Seconds spun.
    pub seconds: f64,
    /// Per core, in the order probed.
    pub cores: Vec<CoreNoise>,
    /// From the first core to the second, when two or more were probed.
    pub handoff: Option<Handoff>,
}

/// Spins one pinned thread on each of `cpus` at once for `seconds` and records every
/// gap of at least [`THRESHOLD_NS`] between consecutive clock reads.
pub fn probe(cpus: &[usize], seconds: f64, clock: &Clock) -> Result<Probe, Error> {
    if !(seconds > 0.0 && seconds.is_finite()) {
        return Err(Error::Usage(format!(
            "noise probe: {seconds} s is not a duration (give more than 0)"
        )));
    }
    let threshold = clock.ns_to_ticks(THRESHOLD_NS).max(1);
    let span = clock.ns_to_ticks((seconds * 1e9) as u64);
    // Room for one gap per 5 us of spinning; a core interrupted more often than that
    // is reported as truncated.
    let room = ((seconds * 200_000.0) as usize).clamp(1024, 20_000_000);
    let barrier = Barrier::new(cpus.len() + 1);
    let start = std::sync::atomic::AtomicU64::new(0);
    let before = timer_counts();
    type Spun = (Vec<u64>, u64, u64);
    let results: Vec<Result<Spun, Error>> = std::thread::scope(|s| {
        let handles: Vec<_> = cpus
            .iter()
            .map(|&cpu| {
                let (barrier, start) = (&barrier, &start);
                s.spawn(move || {
                    let pinned = pin::pin_current(cpu);
                    // Start and end of gap k at 2k and 2k + 1.
                    let mut gaps = super::prefaulted(2 * room);
                    barrier.wait();
                    pinned?;
                    // Every thread spins over the same span of the (shared) TSC.
                    while start.load(std::sync::atomic::Ordering::Acquire) == 0 {}
                    let t0 = start.load(std::sync::atomic::Ordering::Acquire);
                    let (mut n, mut kept, mut lost) = (0u64, 0usize, 0u64);
                    while clock.now() < t0 {}
                    let mut prev = clock.now();
                    while prev < t0 + span {
                        let t = clock.now();
                        let gap = t.wrapping_sub(prev);
                        if gap >= threshold {
                            n += 1;
                            lost += gap;
                            if kept < room {
                                gaps[2 * kept] = prev - t0;
                                gaps[2 * kept + 1] = t - t0;
                                kept += 1;
                            }
                        }
                        prev = t;
                    }
                    gaps.truncate(2 * kept);
                    Ok((gaps, n, lost))
                })
            })
            .collect();
        barrier.wait();
        // Far enough ahead that every thread is spinning when the span opens.
        start.store(
            clock.now() + clock.ns_to_ticks(1_000_000),
            std::sync::atomic::Ordering::Release,
        );
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| Error::Run("noise probe: a thread panicked".into()))?
            })
            .collect()
    });
    let after = timer_counts();
    let secs = clock.ticks_to_ns_f64(span) / 1e9;
    let mut cores = Vec::new();
    let mut gaps_ns: Vec<Vec<Gap>> = Vec::new();
    for (&cpu, r) in cpus.iter().zip(results) {
        let (gaps, n, lost) = r?;
        let kept = gaps.len() as u64 / 2;
        let g: Vec<Gap> = gaps
            .chunks_exact(2)
            .map(|x| (clock.ticks_to_ns(x[0]), clock.ticks_to_ns(x[1])))
            .collect();
        let mut core = CoreNoise::from_gaps(cpu, &g, secs, n, clock.ticks_to_ns(lost), kept < n);
        let count = |v: &[(usize, u64)]| v.iter().find(|(c, _)| *c == cpu).map(|x| x.1);
        if let (Some(a), Some(b)) = (count(&before), count(&after)) {
            core.timer_interrupts_per_s = Some(b.saturating_sub(a) as f64 / secs);
        }
        cores.push(core);
        gaps_ns.push(g);
    }
    let handoff = (cpus.len() >= 2)
        .then(|| Handoff::from_gaps((cpus[0], &gaps_ns[0]), (cpus[1], &gaps_ns[1]), secs * 1e9));
    Ok(Probe {
        seconds: secs,
        cores,
        handoff,
    })
}

/// The probes of one experiment run: before the measurements and after them (the
/// host's share of the noise drifts over minutes, so one probe may miss it).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Probes {
    /// Before the measurements.
    pub before: Option<Probe>,
    /// After them (none when the run was cut short).
    pub after: Option<Probe>,
}

impl Probes {
    /// The lower of the probes' handoff floors for latency quantile `q` (0.99 or
    /// 0.999): read cautiously, the latency the two cores' gaps alone impose.
    pub fn floor(&self, q: f64) -> Option<u64> {
        self.floors(q).min()
    }

    /// The higher of the probes' handoff floors for quantile `q`: read cautiously the
    /// other way, before judging a tail as the code's (a quiet second of probing does
    /// not make the run's tails quiet).
    pub fn worst_floor(&self, q: f64) -> Option<u64> {
        self.floors(q).max()
    }

    /// The longest single interruption either probe saw on any probed core (ns).
    pub fn longest_gap_ns(&self) -> Option<u64> {
        [&self.before, &self.after]
            .into_iter()
            .flatten()
            .flat_map(|p| p.cores.iter().map(|c| c.max_ns))
            .max()
    }

    fn floors(&self, q: f64) -> impl Iterator<Item = u64> + '_ {
        [&self.before, &self.after]
            .into_iter()
            .flatten()
            .filter_map(|p| p.handoff.as_ref())
            .map(move |h| {
                if q >= 0.999 {
                    h.p999_floor_ns
                } else {
                    h.p99_floor_ns
                }
            })
    }

    /// The most interruptions per second any probed core saw, before or after.
    pub fn gaps_per_second(&self) -> Option<f64> {
        [&self.before, &self.after]
            .into_iter()
            .flatten()
            .flat_map(|p| p.cores.iter().map(|c| c.per_second))
            .max_by(f64::total_cmp)
    }

    /// The smallest median gap of any probed core, before or after: the size of one
    /// interruption of a thread that runs alone on its core. A tail of a one-thread
    /// loop at that size or above is the host's, not the code's.
    pub fn gap_ns(&self) -> Option<u64> {
        [&self.before, &self.after]
            .into_iter()
            .flatten()
            .flat_map(|p| p.cores.iter())
            .filter(|c| c.interruptions > 0)
            .map(|c| c.median_ns)
            .min()
    }

    /// Report lines: per probe, each core, then the handoff.
    pub fn lines(&self) -> Vec<String> {
        let mut v = Vec::new();
        for (when, p) in [("before", &self.before), ("after", &self.after)] {
            let Some(p) = p else { continue };
            for c in &p.cores {
                v.push(format!("{when}: {}", c.summary()));
            }
            if let Some(h) = &p.handoff {
                v.push(format!("{when}: {}", h.summary()));
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (no dependency for a test).
    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    fn random_gaps(seed: &mut u64, span: u64, n: usize, max_len: u64) -> Vec<Gap> {
        let mut starts: Vec<u64> = (0..n).map(|_| lcg(seed) % span).collect();
        starts.sort_unstable();
        let mut out: Vec<Gap> = Vec::new();
        for s in starts {
            let s = out.last().map_or(s, |l| s.max(l.1 + 1));
            out.push((s, s + 1 + lcg(seed) % max_len));
        }
        out
    }

    /// Counts, nanosecond by nanosecond, the sends the model delays by more than `t`.
    fn brute(consumer: &[Gap], producer: &[Gap], span: u64, t: u64) -> f64 {
        let inside = |g: &[Gap], s: u64| g.iter().find(|x| x.0 <= s && s < x.1).copied();
        let delayed = (0..span)
            .filter(|&s| {
                inside(producer, s).is_none() && inside(consumer, s).is_some_and(|(_, e)| e - s > t)
            })
            .count();
        delayed as f64 / span as f64
    }

    #[test]
    fn delayed_fraction_matches_a_brute_force_count() {
        let mut seed = 7;
        for round in 0..20 {
            let span = 20_000;
            let c = random_gaps(&mut seed, span - 600, 12, 500);
            let p = random_gaps(&mut seed, span - 600, 8 + round, 300);
            for t in [0, 1, 37, 150, 499] {
                let fast = delayed_fraction(&c, &p, span as f64, t);
                let slow = brute(&c, &p, span, t);
                assert!(
                    (fast - slow).abs() < 1e-12,
                    "round {round} t {t}: {fast} vs {slow}"
                );
            }
        }
    }

    #[test]
    fn floor_is_the_least_latency_within_the_allowed_share() {
        let mut seed = 11;
        for _ in 0..30 {
            let c = random_gaps(&mut seed, 1_000_000, 40, 20_000);
            let p = random_gaps(&mut seed, 1_000_000, 40, 20_000);
            for q in [0.9, 0.99, 0.999] {
                let t = latency_floor(&c, &p, 1e6, q);
                assert!(delayed_fraction(&c, &p, 1e6, t) <= 1.0 - q);
                if t > 0 {
                    assert!(delayed_fraction(&c, &p, 1e6, t - 1) > 1.0 - q);
                } else {
                    assert!(delayed_fraction(&c, &p, 1e6, 0) <= 1.0 - q);
                }
            }
        }
        // Four 20 us gaps in 10 ms: 0.8% of the time, so no p99 floor; p99.9 floor 17.5 us.
        let c: Vec<Gap> = (0..4)
            .map(|i| (i * 1_000_000, i * 1_000_000 + 20_000))
            .collect();
        assert_eq!(latency_floor(&c, &[], 1e7, 0.99), 0);
        assert_eq!(latency_floor(&c, &[], 1e7, 0.999), 17_500);
        // The producer paused through all of them: nothing is delayed.
        assert_eq!(latency_floor(&c, &c, 1e7, 0.999), 0);
    }

    #[test]
    fn core_noise_fills_the_histogram() {
        let lens = [1_500, 3_000, 15_000, 17_000, 20_000, 2_500_000, 9_000_000];
        let gaps: Vec<Gap> = lens
            .iter()
            .enumerate()
            .map(|(i, &l)| (i as u64 * 100_000_000, i as u64 * 100_000_000 + l))
            .collect();
        let n = CoreNoise::from_gaps(3, &gaps, 1.0, 7, lens.iter().sum(), false);
        let h: Vec<(&str, u64)> = n.histogram.iter().map(|(l, c)| (l.as_str(), *c)).collect();
        assert_eq!(
            h,
            vec![
                ("<2us", 1),
                ("2-5us", 1),
                ("5-10us", 0),
                ("10-30us", 3),
                ("30-100us", 0),
                ("100-300us", 0),
                ("300us-1ms", 0),
                ("1-4ms", 1),
                (">=4ms", 1)
            ]
        );
        assert_eq!((n.median_ns, n.max_ns), (17_000, 9_000_000));
        assert!((n.lost_fraction - 0.0115565).abs() < 1e-12);
        assert_eq!(
            n.summary(),
            "cpu3 7 gaps/s, 1.16% of the time lost, median 17us, max 9ms"
        );
    }

    #[test]
    fn probes_read_the_lower_floor() {
        let probe = |p99, p999| Probe {
            seconds: 1.0,
            cores: Vec::new(),
            handoff: Some(Handoff {
                producer: 0,
                consumer: 1,
                exposed_fraction: 0.01,
                delayed_over_10us: 0.005,
                p99_floor_ns: p99,
                p999_floor_ns: p999,
            }),
        };
        let none = Probes::default();
        assert_eq!(none.floor(0.99), None);
        assert!(none.lines().is_empty());
        let one = Probes {
            before: Some(probe(900, 40_000)),
            after: None,
        };
        assert_eq!(
            (one.floor(0.99), one.floor(0.999)),
            (Some(900), Some(40_000))
        );
        let both = Probes {
            before: Some(probe(900, 40_000)),
            after: Some(probe(300, 70_000)),
        };
        assert_eq!(
            (both.floor(0.99), both.floor(0.999)),
            (Some(300), Some(40_000))
        );
        let lines = both.lines();
        assert_eq!(lines.len(), 2);
        assert!(lines[0]
            .starts_with("before: cpu0 -> cpu1: consumer away while the producer runs 1.00%"));
        assert!(
            lines[1].ends_with("floor p99 300ns / p99.9 70us"),
            "{}",
            lines[1]
        );
    }

    #[test]
    fn timer_rows_need_the_loc_line() {
        assert!(local_timer_counts("CPU0 CPU1\n 0: 1 2 x\n").is_empty());
        assert!(local_timer_counts("").is_empty());
        // Offline CPUs are missing from the header; the columns follow it.
        let t = "  CPU0 CPU2\nLOC: 10 20 Local timer interrupts\n";
        assert_eq!(local_timer_counts(t), vec![(0, 10), (2, 20)]);
    }

    #[test]
    fn probe_records_gaps_on_pinned_cores() {
        let clock = Clock::quick();
        let cpu = pin::current_cpu().unwrap_or(0);
        let one = probe(&[cpu], 0.05, &clock).unwrap();
        assert!(one.handoff.is_none());
        let n = &one.cores[0];
        assert_eq!(n.cpu, cpu);
        assert!((one.seconds - 0.05).abs() < 0.005, "{}", one.seconds);
        assert!((0.0..=1.0).contains(&n.lost_fraction));
        let binned: u64 = n.histogram.iter().map(|x| x.1).sum();
        assert_eq!(binned, n.interruptions, "no truncation at this length");
        assert!(n.max_ns >= n.median_ns);
        // Two threads on one core take turns: each sees the other's slices as gaps,
        // so the probe cannot miss them.
        let two = probe(&[cpu, cpu], 0.1, &clock).unwrap();
        let h = two.handoff.unwrap();
        assert!(two.cores.iter().all(|c| c.interruptions > 0));
        assert!((0.0..=1.0).contains(&h.exposed_fraction));
        assert!(probe(&[cpu], 0.0, &clock).is_err());
        assert!(probe(&[cpu], f64::NAN, &clock).is_err());
    }
}
