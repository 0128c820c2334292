//! The cross-thread claim: handoff-alloc's producer/consumer rate against mimalloc's,
//! pass by pass, within one placement of the two cores.

use super::work::{Cross, Sample};
use crate::lab::claims::{ratio_at_least, Verdict};
use crate::lab::measure::median_or_nan;
use handoff_clock::link::Classes;

/// The fewest pairs a placement must hold to be judged on its own.
const MIN_PAIRS: usize = 3;

/// What each placement's pairs gave, and the verdict on "handoff-alloc's rate at least
/// mimalloc's" for the repeats `h` and `m` of the two. Pass p of a repeat of one is
/// paired with pass p of the same repeat of the other (one turn of the contenders,
/// seconds apart), and the pair is kept in the placement both runs' probes fall in:
/// the rate is about 3 times higher with the vCPUs ~110 ns apart than ~390 ns apart on
/// this guest, for both allocators, and a pair that straddles a move of the host read
/// 0.4x or 5.7x (2026-12-05). Judged ([`ratio_at_least`]) on the pairs of the nearest
/// placement holding [`MIN_PAIRS`], else on all pairs.
pub(super) fn judged(h: &[Sample], m: &[Sample]) -> (String, (Verdict, String)) {
    let runs = || h.iter().chain(m).flat_map(|s| &s.handoff_passes);
    let probes: Vec<f64> = runs()
        .filter_map(|p| p.1)
        .flat_map(|(a, b)| [a, b])
        .collect();
    let classes = Classes::of(&probes);
    let class = |p: &Cross| p.1.and_then(|(b, a)| classes.of_slice(b, a));
    let pairs: Vec<(f64, Option<usize>)> = h
        .iter()
        .zip(m)
        .flat_map(|(a, b)| a.handoff_passes.iter().zip(&b.handoff_passes))
        .map(|(x, y)| {
            let both = match (class(x), class(y)) {
                (Some(i), Some(j)) if i == j => Some(i),
                _ => None,
            };
            (x.0 / y.0, both)
        })
        .filter(|p| p.0.is_finite())
        .collect();
    let in_class = |k: usize| -> Vec<f64> {
        pairs
            .iter()
            .filter(|p| p.1 == Some(k))
            .map(|p| p.0)
            .collect()
    };
    let each: Vec<String> = classes
        .list
        .iter()
        .enumerate()
        .filter_map(|(k, c)| {
            let r = in_class(k);
            (!r.is_empty()).then(|| {
                format!(
                    "cores {} apart: {} pair{}, median {:.2}x",
                    c.label(),
                    r.len(),
                    if r.len() == 1 { "" } else { "s" },
                    median_or_nan(r)
                )
            })
        })
        .collect();
    let (ratios, scope) = match (0..classes.list.len()).find(|&k| in_class(k).len() >= MIN_PAIRS)
    {
        Some(k) => (
            in_class(k),
            format!(
                "the pairs whose probes put the cores {} apart (the nearest placement with {MIN_PAIRS} pairs or more)",
                classes.list[k].label()
            ),
        ),
        None => (
            pairs.iter().map(|p| p.0).collect(),
            if classes.list.is_empty() {
                "all pairs (no placement probes)".to_string()
            } else {
                format!("all pairs (no placement held {MIN_PAIRS})")
            },
        ),
    };
    (
        each.join("; "),
        ratio_at_least(
            &ratios,
            1.0,
            &format!("handoff-alloc's rate over mimalloc's, pass by pass, in {scope}"),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repeat whose passes ran at these (rate M/s, cores' round trip ns).
    fn repeat(passes: &[(f64, f64)]) -> Sample {
        Sample {
            handoff_passes: passes
                .iter()
                .map(|&(r, rtt)| (r * 1e6, Some((rtt, rtt))))
                .collect(),
            ..Sample::default()
        }
    }

    #[test]
    fn the_rates_are_compared_within_one_placement() {
        // N3 of 2026-12-05 in kind: handoff-alloc 42 M/s near, 15 far; mimalloc 18
        // near, 5 far; the host moved between the two in some repeats.
        let near = 110.0;
        let far = 390.0;
        let h = [
            repeat(&[(42.0, near), (15.0, far)]),
            repeat(&[(41.0, near), (43.0, near)]),
            repeat(&[(15.0, far), (44.0, near)]),
            repeat(&[(6.0, far), (42.0, near)]),
        ];
        let m = [
            repeat(&[(18.0, near), (18.0, near)]),
            repeat(&[(17.0, near), (19.0, near)]),
            repeat(&[(18.0, near), (5.0, far)]),
            repeat(&[(17.0, near), (18.0, near)]),
        ];
        // Pairs as they ran, placement or not: 3 of 8 below 1 (0.83x twice, 0.35x), so the
        // old judging (every pair, or the repeats' medians) read within noise.
        let all: Vec<f64> = h
            .iter()
            .zip(&m)
            .flat_map(|(a, b)| a.handoff_passes.iter().zip(&b.handoff_passes))
            .map(|(x, y)| x.0 / y.0)
            .collect();
        assert_eq!(ratio_at_least(&all, 1.0, "").0, Verdict::WithinNoise);
        let (each, (v, why)) = judged(&h, &m);
        assert_eq!(v, Verdict::Holds, "{why}");
        assert!(why.contains("~110 ns apart"), "{why}");
        assert!(each.contains("4 pairs"), "{each}");
        // Without probes: every pair, as before.
        let bare = |s: &[Sample]| -> Vec<Sample> {
            s.iter()
                .map(|r| Sample {
                    handoff_passes: r.handoff_passes.iter().map(|p| (p.0, None)).collect(),
                    ..Sample::default()
                })
                .collect()
        };
        let (_, (v, why)) = judged(&bare(&h), &bare(&m));
        assert_eq!(v, Verdict::WithinNoise, "{why}");
        assert!(why.contains("no placement probes"), "{why}");
        // No pass: not measured.
        assert_eq!(judged(&[], &[]).1 .0, Verdict::NotMeasured);
    }
}
