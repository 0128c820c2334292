//! The hand-rolled ring across the whole load sweep (document 002): its p50 near its
//! floor at every point, read in one placement of the two cores, and its throughput
//! cap's onset near 16 MHz offered.

use super::work::Variant;
use super::{Cell, Mode, Outcome};
use crate::lab::claims::{holds, Claim, Verdict, GUARD};
use crate::lab::fmt::{ns as fmt_ns, rate as fmt_rate};
use crate::lab::placed;
use handoff_clock::link::Classes;

/// How far above the sweep's lowest p50 the hand-rolled ring's p50 may rise at any
/// point and still stay "near its floor": 3x (the document: 132 ns at the floor, 264 ns
/// at 50 MHz, 2x; a latency wall is 10x or more).
pub const FLAT: f64 = 3.0;

/// The hand-rolled ring across the whole sweep: its p50 near its floor at every point
/// (every point read in one placement of the cores, `ring_flat`),
/// and its throughput cap's onset (the first point it delivers under 95% of) near
/// 16 MHz offered, within 0.5x-2x as `saturation` judges the others.
pub fn ring_across_sweep(out: &Outcome, sat: Option<f64>) -> Vec<Claim> {
    let place = "What happens as offered load rises";
    let ring: Vec<&Cell> = out
        .of(Mode::Sweep)
        .filter(|c| c.variant == Variant::CppRing && c.unavailable.is_none())
        .collect();
    if ring.len() < 2 {
        return Vec::new();
    }
    let (flat, list) = ring_flat(&ring, &out.placements.classes);
    let mut v = vec![Claim::new(
        "ring-p50-flat",
        "The hand-rolled ring's p50 stays near its floor across the entire sweep",
        "132 ns floor; 264 ns at 50 MHz (2x)",
        list,
        flat,
    )
    .at(place)];
    let onset = match sat {
        Some(r) => (
            format!("cpp-ring first delivers under 95% of the offered rate at {}", fmt_rate(r)),
            holds(
                (0.5..=2.0).contains(&(r / 16e6)),
                "the cap's onset (the first sweep point below 95% of offered in most runs) within 0.5x-2x of 16 MHz",
            ),
        ),
        None => (
            "cpp-ring kept up with every offered rate of the sweep".to_string(),
            (
                Verdict::Fails,
                "no sweep point below 95% of the offered rate: no cap within the sweep".to_string(),
            ),
        ),
    };
    v.push(
        Claim::new(
            "ring-cap-onset",
            "The hand-rolled ring's throughput cap starts around 16 MHz offered",
            "caps at ~14.7 M/s starting around 16 MHz offered",
            onset.0,
            onset.1,
        )
        .at(place),
    );
    v
}

/// The ring's p50 at each sweep point, all read in one placement of the two cores (the
/// one that holds a tenth of the slices of the most points, the nearest on a tie:
/// `placed::most_shared`; points it does not are left out and counted), and the
/// verdict on the highest over the lowest against [`FLAT`]. Until 2026-12-06 each
/// point was read in its own nearest placement: a point whose runs met the ~50 ns
/// placement read 71-91 ns where the others read ~155 ns in the ~90 ns one, and the
/// ratio went 1.26x, 2.86x, 2.75x from one `runner all` to the next. Without placement
/// data, every point's merged p50.
pub(super) fn ring_flat(ring: &[&Cell], classes: &Classes) -> ((Verdict, String), String) {
    let measured: Vec<&crate::lab::measure::Measured> = ring.iter().map(|c| &c.measured).collect();
    let shared = placed::most_shared(&measured, classes);
    let p50s: Vec<(f64, f64)> = ring
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let p = match &shared {
                Some((k, held)) if held[i] => c.measured.in_class(classes, *k)?.latency,
                Some(_) => return None,
                None => c.latency.clone(),
            };
            Some((c.offered_hz.unwrap_or(0.0), p.value_at_quantile(0.5) as f64))
        })
        .collect();
    let list = p50s
        .iter()
        .map(|(hz, p)| format!("{} {}", fmt_rate(*hz), fmt_ns(*p)))
        .collect::<Vec<_>>()
        .join(", ");
    let placement = match &shared {
        Some((k, _)) if p50s.len() == ring.len() => format!(
            "every point with the cores {} apart",
            classes.list[*k].label()
        ),
        Some((k, _)) => format!(
            "{} of {} points with the cores {} apart (the others held under a tenth of their slices there)",
            p50s.len(),
            ring.len(),
            classes.list[*k].label()
        ),
        None if classes.list.is_empty() => {
            "every point's merged runs (no placement data)".to_string()
        }
        None => "every point's merged runs (no placement from the run's nearest common one on held a tenth of any point's slices)".to_string(),
    };
    if p50s.len() < 2 {
        return (
            (
                Verdict::NotMeasured,
                format!("fewer than two sweep points in one placement ({placement})"),
            ),
            list,
        );
    }
    let lo = p50s.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let (at, hi) = p50s
        .iter()
        .copied()
        .fold((0.0, 0.0f64), |a, b| if b.1 > a.1 { b } else { a });
    let ratio = hi / lo.max(1.0);
    let verdict = if (ratio / FLAT - 1.0).abs() < GUARD {
        (
            Verdict::WithinNoise,
            format!("highest / lowest p50 {ratio:.2}x, within 5% of the {FLAT}x line; {placement}"),
        )
    } else {
        holds(
            ratio <= FLAT,
            format!(
                "highest / lowest p50 of the sweep {ratio:.2}x (at {}), at most {FLAT}x: near the floor at every point; {placement}",
                fmt_rate(at)
            ),
        )
    };
    (verdict, format!("cpp-ring p50: {list}"))
}
