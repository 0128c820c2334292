//! The mutex tail beside the lock-free rings' at 1 MHz: which rings, at which quantile
//! (below the items the host's stalls delayed), and the depth without those items.

use super::work::Variant;
use super::Cell;
use crate::lab::claims::{holds, Verdict};

/// The rings the document's mutex tail is compared with: its two (cpp-ring and
/// boost-spsc) where they ran, otherwise every lock-free variant that did.
pub(super) fn tail_comparators<'a>(headline: &[&'a Cell]) -> Vec<&'a Cell> {
    let pick = |f: &dyn Fn(Variant) -> bool| -> Vec<&'a Cell> {
        headline
            .iter()
            .copied()
            .filter(|c| c.unavailable.is_none() && f(c.variant))
            .collect()
    };
    let rings = pick(&|v| matches!(v, Variant::CppRing | Variant::BoostSpsc));
    if rings.is_empty() {
        pick(&|v| v.is_lock_free())
    } else {
        rings
    }
}

/// The share of a variant's items that waited 10 us or more behind consumer stalls.
pub(super) fn stalled_share(c: &Cell) -> f64 {
    let (_, _, over) = c.stalls();
    over as f64 / c.latency.count().max(1) as f64
}

/// The mean latency (ns) of `c`'s items without its slowest `drop` share.
pub(super) fn mean_below(c: &Cell, drop: f64) -> f64 {
    let h = c.latency.histogram();
    let keep = ((1.0 - drop) * h.len() as f64).round() as u64;
    let (mut n, mut sum) = (0u64, 0.0);
    for v in h.iter_recorded() {
        if n >= keep {
            break;
        }
        let take = v.count_at_value().min(keep - n);
        sum += take as f64 * h.median_equivalent(v.value_iterated_to()) as f64;
        n += take;
    }
    sum / n.max(1) as f64
}

/// The quantile at which the mutex tail is compared with the rings: p99, or lower
/// where the host's stalls reach into the rings' top percent. A ring's items that
/// waited 10 us or more behind consumer stalls (`stalled`, a share) are its slowest
/// (its own latencies are hundreds of nanoseconds), so any quantile under
/// `1 - stalled` is the ring's own; `1 - 2 x stalled` leaves as many of its own items
/// above it again. Continuous in the share, so a run with 0.6% stalled items and one
/// with 0.8% are read almost alike (a cut-off at methodology.md's 0.7% turned the
/// verdict over between such runs).
pub(super) fn tail_quantile(stalled: f64) -> f64 {
    (1.0 - 2.0 * stalled).clamp(0.9, 0.99)
}

/// The mutex-tail verdict: the mutex's tail at least 10x the ring's, both read at the
/// quantile [`tail_quantile`] leaves to the queues.
pub(super) fn mutex_tail_verdict(mutex: f64, ring: f64, q: f64) -> (Verdict, String) {
    holds(
        mutex >= 10.0 * ring.max(1.0),
        format!(
            "mutex {} >= 10x the rings' {}, merged histograms (p99, or below the share of the rings' items that waited behind the host's stalls: twice that share under the top)",
            pct(q),
            pct(q)
        ),
    )
}

/// A quantile's name: p99, p97.4.
pub(super) fn pct(q: f64) -> String {
    let x = (q * 1000.0).round() / 10.0;
    if x.fract() == 0.0 {
        format!("p{x:.0}")
    } else {
        format!("p{x:.1}")
    }
}
