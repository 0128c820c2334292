//! A repeat's passes: every contender measured `--passes` times a repeat, one child each,
//! the contenders in turn; the repeat's figures are the passes' medians.

use super::work::Sample;
use crate::lab::measure::median_or_nan;

/// Each contender's repeats from its passes (`passed[contender][run]`: (pass, sample) in
/// the order they ran). A repeat is kept for every contender or for none: where a
/// contender that ran at all lacks its first pass in a repeat (a run cut short), that
/// repeat is dropped for all, so that the claims, which pair contenders repeat by
/// repeat, never pair two different repeats.
pub(super) fn repeats(passed: Vec<Vec<Vec<(usize, Sample)>>>) -> Vec<Vec<Sample>> {
    let merged: Vec<Vec<Option<Sample>>> = passed
        .into_iter()
        .map(|runs| runs.into_iter().map(of_passes).collect())
        .collect();
    let runs = merged.iter().map(Vec::len).max().unwrap_or(0);
    let ran: Vec<bool> = merged
        .iter()
        .map(|m| m.iter().any(Option::is_some))
        .collect();
    let keep: Vec<bool> = (0..runs)
        .map(|r| {
            merged
                .iter()
                .zip(&ran)
                .all(|(m, &ran)| !ran || m.get(r).is_some_and(Option::is_some))
        })
        .collect();
    merged
        .into_iter()
        .map(|m| {
            m.into_iter()
                .zip(&keep)
                .filter_map(|(s, &k)| if k { s } else { None })
                .collect()
        })
        .collect()
}

/// One repeat's figures from its passes (pass number, sample), each a child of its own,
/// the first pass with the sweep: the medians of the main test's time and pace, of each
/// scaling count's and of the producer/consumer rate (of two passes: their mean), and
/// every pass's producer/consumer rate with its placement probes (`handoff_passes`, by
/// pass number, for the cross-thread claim); memory, the sweep, the counters and the
/// thread-local read from the first pass.
/// `None` without a first pass.
pub(super) fn of_passes(mut passes: Vec<(usize, Sample)>) -> Option<Sample> {
    let at = passes.iter().position(|(p, _)| *p == 0)?;
    let (_, mut first) = passes.swap_remove(at);
    passes.sort_by_key(|p| p.0);
    first.handoff_passes = std::iter::once((0, &first))
        .chain(passes.iter().map(|(k, s)| (*k, s)))
        .filter_map(|(k, s)| Some((k, (s.handoff_per_s?, s.handoff_around_ns))))
        .collect();
    let rest: Vec<Sample> = passes.into_iter().map(|(_, s)| s).collect();
    if rest.is_empty() {
        return Some(first);
    }
    let all: Vec<&Sample> = std::iter::once(&first).chain(&rest).collect();
    let seconds = median_or_nan(all.iter().map(|s| s.seconds));
    let ns = median_or_nan(all.iter().map(|s| s.ns_per_pair));
    let rate: Vec<f64> = all.iter().filter_map(|s| s.handoff_per_s).collect();
    let handoff_per_s = (!rate.is_empty()).then(|| median_or_nan(rate));
    let scaling = first
        .scaling
        .iter()
        .map(|&(t, _, _)| {
            let at: Vec<&(usize, f64, f64)> = all
                .iter()
                .filter_map(|s| s.scaling.iter().find(|p| p.0 == t))
                .collect();
            (
                t,
                median_or_nan(at.iter().map(|p| p.1)),
                median_or_nan(at.iter().map(|p| p.2)),
            )
        })
        .collect();
    first.seconds = seconds;
    first.ns_per_pair = ns;
    first.handoff_per_s = handoff_per_s;
    first.scaling = scaling;
    Some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass(ns: f64, rate: f64, two: f64, sweep: bool) -> Sample {
        Sample {
            seconds: ns / 100.0,
            ns_per_pair: ns,
            peak_resident: 7,
            handoff_per_s: Some(rate),
            scaling: vec![(2, 1.0, two)],
            sweep: if sweep {
                vec![(1 << 20, 30.0)]
            } else {
                Vec::new()
            },
            ..Sample::default()
        }
    }

    #[test]
    fn a_repeat_is_the_median_of_its_passes_with_the_first_passs_sweep() {
        // The passes in the order they ran: the first pass (with the sweep) last.
        let passes = vec![
            (2, pass(90.0, 40e6, 60.0, false)),
            (1, pass(50.0, 10e6, 45.0, false)),
            (0, pass(55.0, 38e6, 200.0, true)),
        ];
        let s = of_passes(passes).unwrap();
        assert_eq!(s.ns_per_pair, 55.0);
        assert!((s.seconds - 0.55).abs() < 1e-12);
        assert_eq!(s.handoff_per_s, Some(38e6));
        // Every pass's rate, in pass order, for the cross-thread claim's pairs.
        let rates: Vec<(usize, f64)> = s.handoff_passes.iter().map(|p| (p.0, p.1 .0)).collect();
        assert_eq!(rates, vec![(0, 38e6), (1, 10e6), (2, 40e6)]);
        assert_eq!(s.scaling, vec![(2, 1.0, 60.0)]);
        assert_eq!(s.sweep, vec![(1 << 20, 30.0)]);
        assert_eq!(s.peak_resident, 7);
        // One pass: itself; no first pass: none.
        let one = of_passes(vec![(0, pass(70.0, 1.0, 2.0, true))]).unwrap();
        assert_eq!(one.ns_per_pair, 70.0);
        assert!(of_passes(vec![(1, pass(70.0, 1.0, 2.0, false))]).is_none());
    }

    #[test]
    fn every_contender_starts_its_run_with_its_first_pass() {
        // `rotate::pass_of` over `rotate::order`, as `runner alloc` uses them.
        for (n, passes) in [(3, 2), (11, 2), (11, 3), (4, 1)] {
            for run in 0..30 {
                let order: Vec<usize> = crate::lab::rotate::order(run, n * passes).collect();
                let mut seen = vec![0usize; n];
                for (k, &j) in order.iter().enumerate() {
                    let (pass, i) = crate::lab::rotate::pass_of(run, j, n, passes);
                    assert_eq!(pass, k / n, "run {run}: child {k} is in pass {}", k / n);
                    assert_eq!(pass, seen[i], "contender {i}'s passes in order");
                    seen[i] += 1;
                }
                assert!(seen.iter().all(|&s| s == passes));
            }
        }
    }

    #[test]
    fn a_repeat_one_contender_lacks_is_dropped_for_every_contender() {
        let full = |ns: f64| {
            vec![
                (0, pass(ns, 1.0, 1.0, true)),
                (1, pass(ns, 1.0, 1.0, false)),
            ]
        };
        let passed = vec![
            // Contender 0: repeats 0 and 1 and 2 complete.
            vec![full(10.0), full(11.0), full(12.0)],
            // Contender 1: repeat 1 has no first pass (cut short).
            vec![
                full(20.0),
                vec![(1, pass(21.0, 1.0, 1.0, false))],
                full(22.0),
            ],
            // Contender 2 never ran (its library unavailable).
            vec![Vec::new(), Vec::new(), Vec::new()],
        ];
        let r = repeats(passed);
        let ns = |c: usize| r[c].iter().map(|s| s.ns_per_pair).collect::<Vec<_>>();
        assert_eq!(ns(0), [10.0, 12.0]);
        assert_eq!(ns(1), [20.0, 22.0]);
        assert!(r[2].is_empty());
    }
}
