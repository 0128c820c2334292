//! A figure whose runs fall into regimes: a saturated queue that runs full in some runs
//! and drained in others, at two different rates. The median of such runs lands in one
//! mode or the other, or between them, as the mix of a run's repeats falls, and a
//! verdict on it changed with that mix from one `runner all` to the next. Each regime
//! is judged alone here, and the claim reads as its regimes agree
//! (`lab::claims::by_regime`).

use super::claims::Verdict;

/// The verdict on a figure judged regime by regime: `regimes` are each regime's name
/// and its runs' values (a regime with no run is left out, one with no more runs than
/// [`needed`](super::claims::needed) lets fall on the other side of a line joins the
/// largest), `judge` the rule for one set of runs. One regime: its verdict. Several: the verdict they share, or *within
/// noise* when they differ (the figure depends on the regime a run falls into); the
/// reason gives each regime's share of the runs and its own reading.
///
/// ```
/// use runner::lab::claims::{by_regime, near_runs, Verdict};
/// let judge = |v: &[f64]| {
///     let mut s = v.to_vec();
///     s.sort_by(f64::total_cmp);
///     near_runs(s[s.len() / 2], v, 5.7)
/// };
/// // The mutex queue's saturated rate, M/s, 2026-12-05: 4.1-4.4 when it ran full,
/// // 3.3-3.6 when it ran drained; the document's 5.7.
/// let full = vec![4.2, 4.3, 4.2, 4.4, 4.3, 4.1, 4.2, 3.6];
/// let drained = vec![3.6, 3.6, 3.6, 3.3];
/// let (v, why) = by_regime(&[("full", full.clone()), ("drained", drained)], &judge);
/// assert_eq!(v, Verdict::WithinNoise, "{why}");
/// assert!(why.contains("full (8 of 12 runs)"), "{why}");
/// // Every run in one regime: that regime's verdict.
/// let (v, _) = by_regime(&[("full", full), ("drained", vec![])], &judge);
/// assert_eq!(v, Verdict::WithinNoise); // 4.2 is -26%: within 5 points of the 25% line
/// let (v, _) = by_regime(&[("full", vec![]), ("drained", vec![3.6, 3.5, 3.4])], &judge);
/// assert_eq!(v, Verdict::Differs);
/// // One drained run of twelve: as many as the ratio rule lets fall on the other side
/// // (2 of 12), so not a regime of its own.
/// let eleven = vec![5.5, 5.6, 5.4, 5.5, 5.7, 5.6, 5.5, 5.4, 5.6, 5.5, 5.6];
/// let (v, why) = by_regime(&[("full", eleven), ("drained", vec![3.4])], &judge);
/// assert_eq!(v, Verdict::Reproduced, "{why}");
/// assert!(why.starts_with("every run full but 1"), "{why}");
/// // No runs at all (none had a depth): not measured.
/// assert_eq!(by_regime(&[("full", vec![]), ("drained", vec![])], &judge).0, Verdict::NotMeasured);
/// assert_eq!(by_regime(&[], &judge).0, Verdict::NotMeasured);
/// ```
pub fn by_regime(
    regimes: &[(&str, Vec<f64>)],
    judge: &dyn Fn(&[f64]) -> (Verdict, String),
) -> (Verdict, String) {
    let n: usize = regimes.iter().map(|r| r.1.len()).sum();
    // A regime of no more runs than the ratio rule lets fall on the other side of a
    // line (`needed`: 2 of 12, 1 of 9) is not one of its own: its runs join the largest
    // regime's, as a few runs on the other side.
    let few = n.saturating_sub(super::claims::needed(n.max(1)));
    let largest = regimes
        .iter()
        .enumerate()
        .max_by_key(|(_, r)| r.1.len())
        .map_or(0, |(i, _)| i);
    let folded: Vec<f64> = regimes
        .iter()
        .enumerate()
        .filter(|&(i, r)| i != largest && r.1.len() <= few)
        .flat_map(|(_, r)| r.1.iter().copied())
        .collect();
    let kept: Vec<(&str, Vec<f64>)> = regimes
        .iter()
        .enumerate()
        .filter(|&(i, r)| i == largest || r.1.len() > few)
        .map(|(i, r)| {
            let mut runs = r.1.clone();
            if i == largest {
                runs.extend(&folded);
            }
            (r.0, runs)
        })
        .collect();
    let seen: Vec<&(&str, Vec<f64>)> = kept.iter().filter(|r| !r.1.is_empty()).collect();
    match seen.as_slice() {
        [] => (Verdict::NotMeasured, "no runs".into()),
        [(name, runs)] => {
            let (v, why) = judge(runs);
            if folded.is_empty() {
                (v, format!("every run {name}: {why}"))
            } else {
                (
                    v,
                    format!(
                        "every run {name} but {} (too few for a regime of their own, judged with the others): {why}",
                        folded.len()
                    ),
                )
            }
        }
        _ => {
            let judged: Vec<(Verdict, String)> = seen
                .iter()
                .map(|(name, runs)| {
                    let (v, why) = judge(runs);
                    (
                        v,
                        format!("{name} ({} of {n} runs): {v}, {why}", runs.len()),
                    )
                })
                .collect();
            let first = judged[0].0;
            let agree = judged.iter().all(|j| j.0 == first);
            let each = judged
                .iter()
                .map(|j| j.1.as_str())
                .collect::<Vec<_>>()
                .join("; ");
            if agree {
                (
                    first,
                    format!(
                        "the runs fall into {} regimes, judged each alone, and they agree: {each}",
                        judged.len()
                    ),
                )
            } else {
                (
                    Verdict::WithinNoise,
                    format!("the runs fall into {} regimes, judged each alone, and their verdicts differ: the figure depends on the regime a run falls into (within noise): {each}", judged.len()),
                )
            }
        }
    }
}
