//! Absolute figures against the document's: within [`NEAR`] of it or not, with a
//! guard around the band's edge, on the runs' own values, at the clock's step
//! (`lab::claims` re-exports every function here).

use super::claims::{needed, Verdict, GUARD, NEAR};

/// The verdict on an absolute figure and its reason: within [`NEAR`] of the document's
/// figure or not.
///
/// ```
/// use runner::lab::claims::{near, Verdict};
/// assert_eq!(near(120.0, 132.0).0, Verdict::Reproduced);
/// assert_eq!(near(60.0, 132.0).0, Verdict::Differs);
/// // 26% off: within 5 points of the 25% line.
/// assert_eq!(near(18.5, 14.7).0, Verdict::WithinNoise);
/// ```
pub fn near(ours: f64, doc: f64) -> (Verdict, String) {
    let off = ours / doc - 1.0;
    if (off.abs() - NEAR).abs() < GUARD {
        (
            Verdict::WithinNoise,
            format!(
                "{:+.0}% from the document's figure, within {:.0} points of the ±{:.0}% line: closer than a median moves from one run to the next on this VM",
                off * 100.0,
                GUARD * 100.0,
                NEAR * 100.0
            ),
        )
    } else if off.abs() <= NEAR {
        (
            Verdict::Reproduced,
            format!(
                "{:+.0}% from the document's figure, within ±{:.0}%",
                off * 100.0,
                NEAR * 100.0
            ),
        )
    } else {
        (
            Verdict::Differs,
            format!(
                "{:+.0}% from the document's figure, beyond ±{:.0}%",
                off * 100.0,
                NEAR * 100.0
            ),
        )
    }
}

/// [`near`] for a latency read off a clock that advances in steps of `step` ns: within
/// noise also where the band's edge lies within one step of the figure (as
/// `placed::within_step` reads it, one and a half steps): the clock cannot tell on which
/// side of the edge the figure lies. The guard of 5 points is 6 ns on a 122 ns figure;
/// a p50 on a 10 ns clock moves 5-10 ns from one run to the next.
///
/// ```
/// use runner::lab::claims::{near_at_step, Verdict};
/// // Boost's p50 against the document's 122 ns (edge 152.5 ns): 150, 155 and 160 ns
/// // read reproduced, within noise and differs on the guard alone.
/// for p in [150.0, 155.0, 160.0] {
///     assert_eq!(near_at_step(p, 122.0, 10.0).0, Verdict::WithinNoise);
/// }
/// assert_eq!(near_at_step(130.0, 122.0, 10.0).0, Verdict::Reproduced);
/// assert_eq!(near_at_step(180.0, 122.0, 10.0).0, Verdict::Differs);
/// // 140 ns is 12.5 ns from the edge, within one and a half steps; with no step
/// // known, as `near` (+15%: reproduced).
/// assert_eq!(near_at_step(140.0, 122.0, 10.0).0, Verdict::WithinNoise);
/// assert_eq!(near_at_step(140.0, 122.0, 0.0).0, Verdict::Reproduced);
/// ```
pub fn near_at_step(ours: f64, doc: f64, step: f64) -> (Verdict, String) {
    let edge = if ours >= doc {
        doc * (1.0 + NEAR)
    } else {
        doc * (1.0 - NEAR)
    };
    if step > 0.0 && super::placed::within_step(ours - edge, step) {
        return (
            Verdict::WithinNoise,
            format!(
                "{:+.0}% from the document's figure, within one step of the clock ({step:.0} ns) of the ±{:.0}% band's edge: the clock cannot tell which side",
                (ours / doc - 1.0) * 100.0,
                NEAR * 100.0
            ),
        );
    }
    near(ours, doc)
}

/// An absolute figure with its runs' own values: [`near`] on `ours` (the median, or
/// the merged figure), *within noise* instead when fewer than [`needed`]`(n)` of its `n`
/// runs fall on the same side of the ±[`NEAR`] band (up to 8 runs, every one must; and,
/// as with [`near`], when the figure lies within [`GUARD`] of the band's edge). For
/// *differs*, the same side is beyond the same edge as the figure: until 2026-12-06 a
/// run beyond the other edge counted too (the mutex queue's throughput ratio +36% with
/// two of twelve runs at -38%, the two cores far apart in those, read 10 of 12 agreeing).
///
/// ```
/// use runner::lab::claims::{near_runs, Verdict};
/// assert_eq!(near_runs(17.2, &[17.0, 17.2, 17.5], 14.7).0, Verdict::Reproduced);
/// // The band ends at 18.4: runs on both sides of it.
/// assert_eq!(near_runs(18.6, &[17.1, 18.6, 19.3, 17.9, 19.0], 14.7).0, Verdict::WithinNoise);
/// // One run of five inside the band: the runs disagree.
/// assert_eq!(near_runs(21.0, &[21.0, 20.5, 17.9, 22.0, 21.5], 14.7).0, Verdict::WithinNoise);
/// // Every run beyond the band, but one beyond its other edge: not on the figure's side.
/// assert_eq!(near_runs(21.0, &[21.0, 20.5, 9.0, 22.0, 21.5], 14.7).0, Verdict::WithinNoise);
/// ```
pub fn near_runs(ours: f64, runs: &[f64], doc: f64) -> (Verdict, String) {
    let (verdict, reason) = near(ours, doc);
    if runs.is_empty() || verdict == Verdict::WithinNoise {
        return (verdict, reason);
    }
    let off = |x: f64| x / doc - 1.0;
    // A run agrees with "differs" only beyond the same edge of the band as the figure:
    // the median's interval lies beyond that edge exactly when enough runs do (a run
    // as far out on the other side is no evidence for this side).
    let above = off(ours) > 0.0;
    let agrees = |x: f64| {
        if verdict == Verdict::Reproduced {
            off(x).abs() <= NEAR
        } else {
            off(x).abs() > NEAR && (off(x) > 0.0) == above
        }
    };
    let agree = runs.iter().filter(|&&x| agrees(x)).count();
    let n = runs.len();
    let spread = super::rounds::spread_note();
    if agree < needed(n) {
        (
            Verdict::WithinNoise,
            format!(
                "{reason}, but only {agree} of {n} runs{spread} on that side of the band (a verdict needs {}; within noise)",
                needed(n)
            ),
        )
    } else {
        (
            verdict,
            format!("{reason}; {agree} of {n} runs{spread} agree"),
        )
    }
}

/// Several absolute figures: reproduced only if each is.
pub fn all_near(pairs: &[(&str, f64, f64)]) -> (Verdict, String) {
    all_figures(
        pairs
            .iter()
            .map(|&(name, o, d)| (name, near(o, d)))
            .collect(),
    )
}

/// Several figures judged already ([`near`], [`near_runs`]): reproduced only if each
/// is, differs if one does, within noise otherwise; each reason named.
pub fn all_figures(parts: Vec<(&str, (Verdict, String))>) -> (Verdict, String) {
    let verdict = if parts.iter().all(|p| p.1 .0 == Verdict::Reproduced) {
        Verdict::Reproduced
    } else if parts.iter().any(|p| p.1 .0 == Verdict::Differs) {
        Verdict::Differs
    } else {
        Verdict::WithinNoise
    };
    let reason = parts
        .iter()
        .map(|(name, (_, r))| format!("{name}: {r}"))
        .collect::<Vec<_>>()
        .join("; ");
    (verdict, reason)
}
