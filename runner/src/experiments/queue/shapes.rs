//! The document's claims about shapes at 1 MHz: of the PDFs (lock-free single-peaked,
//! mutex bimodal with a fast mode near the rings) and of the moderate load. The sweep's
//! and the saturated rates' shapes are in `sweep_shapes`.

use super::work::Variant;
use super::{Cell, Mode, Outcome};
use crate::lab::claims::{holds, Claim, Verdict};
use crate::lab::fmt::ns as fmt_ns;
use crate::lab::placed;
use crate::lab::shape::{describe, peaks, Peak};

/// A peak counts when it holds at least this share of a PDF. The host's interruptions
/// (a 250 Hz tick of 10-25 us, pauses of 0.3-4 ms) delay about 1% of the items at
/// 1 MHz, spread over a wide range; a mode of the queue itself holds more.
pub const MIN_PEAK: f64 = 0.03;

/// "Sharply peaked": at least this share of the items within 1.5x of the main peak.
pub const SHARP: f64 = 0.9;

/// Share of `l`'s samples from `lo` to `hi` ns.
fn concentration(l: &handoff_stats::Latency, lo: f64, hi: f64) -> f64 {
    let n = l.count();
    if n == 0 {
        return 0.0;
    }
    let h = l.histogram();
    let inside = h.count_between(lo.max(0.0) as u64, hi as u64);
    inside as f64 / n as f64
}

/// The peaks of a contender's headline PDF in the nearest placement that holds a tenth
/// of its slices (the merged histogram without placement data), and where they were
/// read.
fn shape(out: &Outcome, c: &Cell) -> (Vec<Peak>, String) {
    match placed::nearest(&c.measured, &out.placements.classes) {
        Some((label, p)) => (
            peaks(&p.latency, MIN_PEAK),
            format!("cores {label} apart, {} slices", p.slices),
        ),
        None => (
            peaks(&c.latency, MIN_PEAK),
            "all slices merged (no placement data)".into(),
        ),
    }
}

/// The PDF claims of the headline (1 MHz).
pub fn pdf(out: &Outcome, at: &str) -> Vec<Claim> {
    let h = |x| out.find(Mode::Headline, x);
    let place = "Distribution shape (PDF)";
    let mut v = Vec::new();
    let lockfree: Vec<&Cell> = [Variant::CppRing, Variant::BoostSpsc]
        .into_iter()
        .filter_map(h)
        .collect();
    if !lockfree.is_empty() {
        let read: Vec<(&Cell, Vec<Peak>, String)> = lockfree
            .iter()
            .map(|c| {
                let (p, w) = shape(out, c);
                (*c, p, w)
            })
            .collect();
        let ours = read
            .iter()
            .map(|(c, p, w)| format!("{}: {} ({w})", c.variant.name(), describe(p)))
            .collect::<Vec<_>>()
            .join("; ");
        // "Most items transit at nearly the same latency": the share within a factor
        // of 1.5 either side of the main peak.
        let around = |c: &Cell, p: &[Peak]| -> f64 {
            let Some(top) = p.first() else { return 0.0 };
            let l = match placed::nearest(&c.measured, &out.placements.classes) {
                Some((_, x)) => x.latency,
                None => c.latency.clone(),
            };
            concentration(&l, top.at_ns / 1.5, top.at_ns * 1.5)
        };
        let shares: Vec<f64> = read.iter().map(|(c, p, _)| around(c, p)).collect();
        let ours = format!(
            "{ours}; within 1.5x of the main peak: {}",
            read.iter()
                .zip(&shares)
                .map(|((c, _, _), s)| format!("{} {:.1}%", c.variant.name(), s * 100.0))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let ok = shares.iter().all(|&s| s >= SHARP);
        v.push(
            Claim::new(
                "pdf-lockfree-peaked",
                format!("The lock-free PDF is sharply peaked: most items transit at nearly the same latency{at}"),
                "one sharp peak (cpp-ring, boost-spsc)",
                ours,
                holds(
                    ok,
                    format!(
                        "{:.0}% or more of the items within 1.5x of the main peak of the smoothed log2/16 PDF, in the nearest placement",
                        SHARP * 100.0
                    ),
                ),
            )
            .at(place),
        );
    }
    if let Some(m) = h(Variant::MutexCondvar) {
        let (p, w) = shape(out, m);
        // The rings' main peak, the faster of the two: the latency the mutex queue's
        // fast mode is to be near.
        let ring = lockfree
            .iter()
            .filter_map(|c| shape(out, c).0.first().map(|p| p.at_ns))
            .reduce(f64::min);
        v.push(
            Claim::new(
                "pdf-mutex-bimodal",
                format!("The mutex PDF is bimodal: a fast path when the consumer is already awake, near the lock-free latency, and a condvar wake-up mode{at}"),
                "two modes (mutex-condvar), the fast one \"deceptively similar to lock-free\"",
                format!(
                    "mutex-condvar: {} ({w}); the rings' main peak {}",
                    describe(&p),
                    ring.map_or_else(|| "-".into(), fmt_ns)
                ),
                bimodal(&p, ring),
            )
            .at(place),
        );
    }
    v
}

/// How far above the rings' main peak the mutex queue's fast mode may sit and still be
/// "deceptively similar to lock-free" (the document's words): 3x.
pub const FAST_MODE: f64 = 3.0;

/// The document's bimodal mutex PDF: two peaks of [`MIN_PEAK`] or more at least 2x
/// apart, the faster within [`FAST_MODE`]x of the lock-free rings' main peak (`ring`,
/// ns): the consumer already awake. Two wake-up modes (4.7 and 10.5 us against a
/// 130 ns ring) are not that shape.
pub(super) fn bimodal(p: &[Peak], ring: Option<f64>) -> (Verdict, String) {
    let Some(ring) = ring else {
        return (
            Verdict::NotMeasured,
            "no lock-free ring ran to set the fast mode beside".into(),
        );
    };
    let rule = format!(
        "two or more peaks holding {:.0}% or more each, the two largest at least 2x apart, the faster within {FAST_MODE}x of the rings' main peak ({})",
        MIN_PEAK * 100.0,
        fmt_ns(ring)
    );
    let ok = p.len() >= 2 && {
        let (a, b) = (p[0].at_ns, p[1].at_ns);
        a.max(b) >= 2.0 * a.min(b) && a.min(b) <= FAST_MODE * ring
    };
    holds(ok, rule)
}

/// The document's statements at 1 MHz that the other claims leave out: "at moderate
/// load all three look similar at the median", and the queue residency under 2 us even
/// for the mutex queue.
pub fn moderate_load(out: &Outcome, at: &str) -> Vec<Claim> {
    let h = |x| out.find(Mode::Headline, x);
    let mut v = Vec::new();
    let three: Vec<&Cell> = [Variant::CppRing, Variant::BoostSpsc, Variant::MutexCondvar]
        .into_iter()
        .filter_map(h)
        .collect();
    if three.len() == 3 {
        let p50 = |c: &Cell| c.latency.value_at_quantile(0.5) as f64;
        let (lo, hi) = three.iter().fold((f64::INFINITY, 0.0f64), |(l, h), c| {
            (l.min(p50(c)), h.max(p50(c)))
        });
        v.push(
            Claim::new(
                "median-similar",
                format!(
                    "At moderate load (1 MHz) all three variants look similar at the median{at}"
                ),
                "cpp-ring 132 ns, boost-spsc 122 ns; the mutex's fast mode \"deceptively similar\"",
                format!(
                    "p50: {}; highest / lowest {:.1}x",
                    three
                        .iter()
                        .map(|c| format!("{} {}", c.variant.name(), fmt_ns(p50(c))))
                        .collect::<Vec<_>>()
                        .join(", "),
                    hi / lo.max(1.0)
                ),
                holds(
                    hi <= 2.0 * lo,
                    "the three p50s within 2x of each other (merged histograms)",
                ),
            )
            .at("Summary; Setup"),
        );
    }
    if let Some(m) = h(Variant::MutexCondvar) {
        // Little's law: the mean time an item spends between the two stamps is the
        // mean depth over the arrival rate, its residency.
        let residency = m.latency.mean();
        v.push(
            Claim::new(
                "mutex-residency-2us",
                format!("At 1 MHz queue residency stays under 2 us even for the mutex queue (about 1.8 items deep){at}"),
                "under 2 us (1.8 items at 1 M/s)",
                format!(
                    "mutex-condvar mean latency {} (mean depth {:.2} at the achieved rate)",
                    fmt_ns(residency),
                    m.mean_depth().unwrap_or(f64::NAN)
                ),
                holds(residency < 2_000.0, "the mutex queue's mean latency, its residency by Little's law, under 2 us"),
            )
            .at("Setup; Headline"),
        );
    }
    v
}
