//! The background-pressure sweep's claims (document 000, "Background pressure sweep"):
//! the arena flat, the freelist nearly flat, malloc non-monotonic, each p99.9 judged
//! against the noise probe's floor ([`Floor`], which the headline's tails use too).

use super::claims::p;
use super::work::Variant;
use super::Outcome;
use crate::lab::claims::{holds, Claim, Verdict};
use crate::lab::fmt::{ns as fmt_ns, ops};

/// The p99.9 floor the noise probes set (the higher of before and after), and the text
/// a tail claim's figures end with.
pub(super) struct Floor {
    floor999: Option<u64>,
    pub(super) text: String,
}

impl Floor {
    pub(super) fn new(low999: Option<u64>, floor999: Option<u64>) -> Floor {
        let text = match (low999, floor999) {
            (Some(lo), Some(hi)) if lo != hi => format!(
                "; the two cores' interruptions alone set a p99.9 floor of {} to {} (the probes before and after the runs)",
                fmt_ns(lo as f64),
                fmt_ns(hi as f64)
            ),
            (_, Some(hi)) => format!(
                "; the two cores' interruptions alone set a p99.9 floor of {}",
                fmt_ns(hi as f64)
            ),
            _ => String::new(),
        };
        Floor { floor999, text }
    }

    /// A tail claim's verdict: not measurable here when the floor lies more than 25%
    /// above the document's `doc` ns (no allocator could show it), else `judged`.
    pub(super) fn tail(&self, doc: f64, judged: (Verdict, String)) -> (Verdict, String) {
        match self.floor999 {
            Some(f) if f as f64 > doc * 1.25 => (
                Verdict::NotMeasurableHere,
                format!("the pinned cores' interruptions alone impose a p99.9 of up to {}, above the document's {}", fmt_ns(f as f64), fmt_ns(doc)),
            ),
            _ => judged,
        }
    }
}

/// The sweep's claims; `shared` says why none can be judged where the background thread
/// shares a measured core.
pub(super) fn claims(out: &Outcome, floor: &Floor, shared: Option<String>) -> Vec<Claim> {
    let mut v = Vec::new();
    let floor_text = &floor.text;
    let tail_verdict = |doc: f64, judged: (Verdict, String)| floor.tail(doc, judged);
    let sweep_verdict = |judged: (Verdict, String)| match &shared {
        Some(why) => (Verdict::NotMeasurableHere, why.clone()),
        None => judged,
    };
    let sweep = |x| out.sweep_of(x);
    let arena = sweep(Variant::ArenaBatchHandoff);
    if arena.len() > 1 {
        let vals: Vec<f64> = arena.iter().map(|c| p(c, 0.999)).collect();
        let (lo, hi) = vals
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
        v.push(
            Claim::new(
                "arena-flat",
                "The arena's p99.9 is flat at 344 ns across all nine pressure points",
                "344 ns at every point",
                format!(
                    "{} to {} ({:.2}x spread){}",
                    fmt_ns(lo),
                    fmt_ns(hi),
                    hi / lo.max(1.0),
                    floor_text
                ),
                sweep_verdict(tail_verdict(
                    344.0,
                    holds(hi <= lo * 1.1, "max / min of the nine p99.9s within 1.1x"),
                )),
            )
            .at("Background pressure sweep: \"Arena is flat\""),
        );
    }
    let freelist = sweep(Variant::FreelistReturnQueue);
    let reference = freelist
        .iter()
        .find(|c| c.extra.bg_rate_hz.is_none())
        .map(|c| p(c, 0.999));
    if let (Some(base), true) = (reference, freelist.len() > 1) {
        let off = freelist
            .iter()
            .filter(|c| c.extra.bg_rate_hz.is_some())
            .map(|c| p(c, 0.999) - base)
            .fold(0.0f64, |w, d| if d.abs() > w.abs() { d } else { w });
        v.push(
            Claim::new(
                "freelist-flat",
                "The freelist's p99.9 is nearly flat across the pressure sweep: within +-16 ns of its no-pressure reference (312 ns) at every point",
                "within +-16 ns of 312 ns at every point",
                format!(
                    "reference {} with no background; the furthest point {:+.0} ns from it{}",
                    fmt_ns(base),
                    off,
                    floor_text
                ),
                sweep_verdict(tail_verdict(
                    312.0,
                    holds(off.abs() <= 16.0, "every pressure point's p99.9 within 16 ns of the no-background point's"),
                )),
            )
            .at("Background pressure sweep: \"Freelist is nearly flat\""),
        );
    }
    let malloc = sweep(Variant::Malloc);
    if malloc.len() > 1 {
        let peak = malloc
            .iter()
            .filter(|c| c.extra.bg_rate_hz.is_some())
            .max_by(|a, b| p(a, 0.999).total_cmp(&p(b, 0.999)));
        if let Some(peak) = peak {
            let at = peak.extra.bg_rate_hz.unwrap_or(0.0);
            let last = malloc.last().map(|c| p(c, 0.999)).unwrap_or(0.0);
            v.push(Claim::new(
                "malloc-non-monotonic",
                "Malloc's p99.9 is non-monotonic in background pressure: 328 ns with none, a peak of 424 ns at 372 k/s, back to 344 ns from 2.68 M/s",
                "peak 424 ns at 372 k/s",
                format!(
                    "peak {} at {}; {} with none; {} at 10 M/s{}",
                    fmt_ns(p(peak, 0.999)),
                    ops(at),
                    fmt_ns(malloc.first().map(|c| p(c, 0.999)).unwrap_or(0.0)),
                    fmt_ns(last),
                    floor_text
                ),
                sweep_verdict(tail_verdict(424.0, holds(at > 1e5 && at < 1e7 && p(peak, 0.999) > last, "the peak lies inside the sweep and above the 10 M/s point"))),
            ).at("Background pressure sweep: \"Malloc is non-monotonic\""));
        }
    }
    v
}
