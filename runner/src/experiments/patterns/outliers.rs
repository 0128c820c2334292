//! `runner patterns`'s claims on outliers and jitter: the locked pool's 200 us+
//! outliers under threads, the order loop's tail against the host's floor, and the
//! pool's share of malloc's slow orders.

use super::report::{ratio, OrderRun, Outcome};
use super::work::Shared;
use super::Config;
use crate::lab::claims::{all_near, holds, near, Claim, Verdict};
use crate::lab::fmt;
use crate::lab::noise::Probes;

/// "Locks caused 200 us+ outliers", from the pass that times every operation under
/// the threads: the locked pool's outliers against the lock-free pool's and malloc's
/// (threads preempted while holding no lock: what the host and the scheduler cost
/// anyway).
pub(super) fn outlier_claim(o: &Outcome, cfg: &Config) -> Claim {
    let rate = |w: Shared| {
        o.outliers
            .iter()
            .find(|x| x.0 == w)
            .map_or(0.0, |x| x.1.per_million())
    };
    let locked = rate(Shared::Locked);
    let ours = o
        .outliers
        .iter()
        .map(|(w, x)| {
            format!(
                "{} {} of {} ({:.1} per million)",
                w.name(),
                x.over_200us,
                x.ops,
                x.per_million()
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    Claim::new(
        "locks-200us-outliers",
        format!("Locks caused 200 us+ outliers ({} threads here, every allocation and release timed)", cfg.threads),
        "200 us+ outliers with locks",
        ours,
        {
            // Counts, not rates: each side of "at least twice" is within counting noise
            // (3 standard deviations of the two Poisson counts) or beyond it.
            let count = |w: Shared| {
                o.outliers
                    .iter()
                    .find(|x| x.0 == w)
                    .map_or(0.0, |x| x.1.over_200us as f64)
            };
            let (cl, cf, cm) = (
                count(Shared::Locked),
                count(Shared::LockFree),
                count(Shared::Malloc),
            );
            let side = |other: f64| {
                let margin = cl - 2.0 * other;
                let noise = 3.0 * (cl + 4.0 * other).sqrt();
                if margin.abs() <= noise {
                    None
                } else {
                    Some(margin > 0.0)
                }
            };
            let rule = "the locked pool has operations of 200 us or more, at least twice as often as the lock-free pool and as malloc (whose threads hold no lock: their outliers are the host's and the scheduler's), each beyond counting noise (3 standard deviations of the counts)";
            match (side(cf), side(cm)) {
                _ if locked <= 0.0 => holds(false, rule),
                (Some(false), _) | (_, Some(false)) => holds(false, rule),
                (Some(true), Some(true)) => holds(true, rule),
                _ => (
                    Verdict::WithinNoise,
                    format!("{rule}: a count is within counting noise of twice the other's"),
                ),
            }
        },
    )
    .at("Lessons Learned 4 (\"Locks caused 200μs+ outliers\")")
}

/// The document's tail ratios (malloc / pool: p99 16.2x, p99.9 217x) judged as
/// figures, unless this core's interruptions are what sets both variants' tails.
pub(super) fn tail_verdict(o: &Outcome, noise: Option<&Probes>) -> (Verdict, String) {
    let (m, p) = (&o.orders.0.latency, &o.orders.1.latency);
    let gap = noise.and_then(Probes::gap_ns);
    let host_set = |a: u64, b: u64| gap.is_some_and(|g| a.min(b) as f64 >= g as f64 / 2.0);
    match gap {
        Some(g) if host_set(m.p99, p.p99) || host_set(m.p999, p.p999) => (
            Verdict::NotMeasurableHere,
            format!(
                "both variants' tails reach the size of one interruption of this core (median gap {}): the host sets them, not the allocator",
                fmt::ns(g as f64)
            ),
        ),
        _ => {
            let (v, r) = all_near(&[
                ("p99 ratio", ratio(m.p99, p.p99), 16.2),
                ("p99.9 ratio", ratio(m.p999, p.p999), 217.0),
            ]);
            (v, format!("{r} (the document's ratios come from a whole trading system, ours from the order loop alone)"))
        }
    }
}

/// "94% fewer outliers": orders slower than ten times malloc's median, counted in both
/// order runs, less what this core's interruptions alone make (each interruption the
/// noise probe counts per second lands in one order, and at these latencies makes it
/// an outlier), so that the count left is the allocator's.
pub(super) fn jitter(m: &OrderRun, p: &OrderRun, noise: Option<&Probes>) -> Claim {
    let limit = m.latency.p50.saturating_mul(10);
    let (mo, po) = (m.above(limit), p.above(limit));
    let counted = format!(
        "orders slower than {} (10x malloc's p50): malloc {mo} of {}, pool {po} of {}",
        fmt::ns(limit as f64),
        m.histogram.count(),
        p.histogram.count()
    );
    let claim = |ours: String, v: (Verdict, String)| {
        Claim::new(
            "jitter-94pct",
            "Custom allocators eliminate 94% of allocation-related jitter: 94% fewer outliers",
            "94% fewer outliers",
            ours,
            v,
        )
    };
    let Some(rate) = noise.and_then(Probes::gaps_per_second) else {
        return claim(
            counted,
            (
                Verdict::NotMeasured,
                "no noise probe (--noise-seconds 0) to tell the host's outliers from the allocator's".into(),
            ),
        );
    };
    let (hm, hp) = (rate * m.seconds(), rate * p.seconds());
    let (em, ep) = (mo as f64 - hm, (po as f64 - hp).max(0.0));
    let ours = format!(
        "{counted}; this core's {rate:.0} interruptions/s alone make about {hm:.0} and {hp:.0} of them"
    );
    // Counts of rare events scatter by about their square root: below three of those
    // over the pool's count, malloc shows no jitter of its own to remove.
    let spread = 3.0 * ((mo + po) as f64).sqrt();
    if (mo as f64) <= po as f64 + spread {
        return claim(
            ours,
            (
                Verdict::NotMeasurableHere,
                format!("malloc's outliers are not above the pool's beyond counting noise (3 x sqrt of their sum, {spread:.0}): this loop shows no allocation-related jitter for a pool to remove"),
            ),
        );
    }
    if em <= hm {
        return claim(
            ours,
            (
                Verdict::NotMeasurableHere,
                "malloc's outliers are not beyond twice what the host's interruptions alone make: the host sets them, not the allocator".into(),
            ),
        );
    }
    let fewer = 1.0 - ep / em;
    let (v, r) = near(fewer, 0.94);
    claim(
        format!(
            "{ours}; beyond them: malloc {em:.0}, pool {ep:.0} ({:.0}% fewer)",
            fewer * 100.0
        ),
        (
            v,
            format!(
                "{:.1}% fewer against the document's 94%: {r}",
                fewer * 100.0
            ),
        ),
    )
}
