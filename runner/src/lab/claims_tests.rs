//! Tests of `claims.rs`: the rules verdicts are given by.

use super::*;

#[test]
fn every_verdict_has_its_own_word() {
    let words = [
        (Verdict::Reproduced, "reproduced"),
        (Verdict::Differs, "differs"),
        (Verdict::Holds, "holds"),
        (Verdict::Fails, "fails"),
        (Verdict::WithinNoise, "within noise"),
        (Verdict::NotMeasurableHere, "not measurable here"),
        (Verdict::NotMeasured, "not measured"),
    ];
    for (v, w) in words {
        assert_eq!(v.as_str(), w);
        assert_eq!(serde_json::to_value(v).unwrap(), w);
    }
}

/// `needed` against the binomial tail summed in exact integers: the interval it
/// implies covers the median with at least 95%, and the next narrower does not.
#[test]
fn needed_is_the_sign_tests_interval() {
    fn coverage(n: u32, j: u32) -> f64 {
        // 1 - 2 P(Binomial(n, 1/2) <= j - 1), in exact integer counts.
        let mut c: u128 = 1;
        let mut below: u128 = 0;
        for i in 0..j {
            below += c;
            c = c * u128::from(n - i) / u128::from(i + 1);
        }
        1.0 - 2.0 * below as f64 / 2f64.powi(n as i32)
    }
    for n in 1..=100u32 {
        let need = needed(n as usize) as u32;
        let j = n + 1 - need;
        assert!(need <= n && need * 2 > n, "n {n}: {need}");
        if j > 1 {
            assert!(coverage(n, j) >= CONFIDENCE, "n {n}: j {j}");
        } else {
            assert!(n <= 8 || coverage(n, 1) >= CONFIDENCE, "n {n}");
        }
        // Up to 5 repeats even the whole range falls short of 95%: the fallback.
        assert_eq!(n <= 5, coverage(n, 1) < CONFIDENCE, "n {n}");
        if j < n.div_ceil(2) {
            assert!(
                coverage(n, j + 1) < CONFIDENCE,
                "n {n}: j {j} is not the widest"
            );
        }
    }
    // Every repeat up to eight; from nine, one may disagree.
    assert!((1..=8).all(|n| needed(n) == n));
    assert_eq!(needed(9), 8);
}

/// The old rule (every repeat) read one of nine repeats below the line as within
/// noise: pool `bulk-order` on 2026-12-05, 17 of 18 lock_free allocations slower
/// than single_threaded with a median of 1.158x, printed "within noise" in one run
/// and "holds" in the next.
#[test]
fn one_repeat_of_nine_on_the_other_side_no_longer_decides() {
    let r = [1.16, 1.2, 0.99, 1.3, 1.15, 1.12, 1.25, 1.18, 1.21];
    assert_eq!(ratio_at_least(&r, 1.0, "x").0, Verdict::Holds);
    assert_eq!(regime_at_least(&r, 1.0, "x").0, Verdict::WithinNoise);
    // A figure: eight of nine runs beyond the band, the median too.
    let runs = [7.3, 7.5, 7.1, 6.0, 7.4, 7.7, 7.2, 7.6, 7.0];
    assert_eq!(near_runs(7.3, &runs, 5.0).0, Verdict::Differs);
    // Two of nine inside it: within noise.
    let runs = [7.3, 7.5, 7.1, 6.0, 6.1, 7.7, 7.2, 7.6, 7.0];
    assert_eq!(near_runs(7.3, &runs, 5.0).0, Verdict::WithinNoise);
}

#[test]
fn several_figures_reproduce_only_together() {
    let r = |v: Verdict| (v, String::from("why"));
    let all = |v: Vec<Verdict>| {
        all_figures(
            v.into_iter()
                .enumerate()
                .map(|(i, v)| (["a", "b"][i], r(v)))
                .collect(),
        )
    };
    use Verdict::*;
    assert_eq!(all(vec![Reproduced, Reproduced]).0, Reproduced);
    assert_eq!(all(vec![Reproduced, WithinNoise]).0, WithinNoise);
    assert_eq!(all(vec![WithinNoise, Differs]).0, Differs);
    assert_eq!(all(vec![Reproduced, Differs]).1, "a: why; b: why");
}

/// The mutex queue's throughput ratio in W1 (2026-12-05): +36% in the median, ten of
/// twelve runs beyond the band, but two of them at -38% (the cores ~340 ns apart): the
/// old count read 10 of 12 agreeing and "differs"; beyond the figure's edge 8 do.
#[test]
fn a_figure_differs_only_on_the_runs_beyond_its_own_edge() {
    let runs = [
        3.6, 3.5, 3.4, 3.5, 1.6, 1.62, 3.3, 3.8, 3.45, 3.15, 3.2, 3.7,
    ];
    let (verdict, reason) = near_runs(3.54, &runs, 2.6);
    assert_eq!(verdict, Verdict::WithinNoise, "{reason}");
    assert!(reason.contains("only 8 of 12 runs"), "{reason}");
    // The two far runs beyond the upper edge instead: 10 of 12, differs.
    let runs = [
        3.6, 3.5, 3.4, 3.5, 4.6, 4.62, 3.3, 3.8, 3.45, 3.15, 3.2, 3.7,
    ];
    assert_eq!(near_runs(3.54, &runs, 2.6).0, Verdict::Differs);
}
