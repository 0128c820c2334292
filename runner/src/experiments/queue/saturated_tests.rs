//! Tests of `saturated.rs`: the latency wall and the depth rules.

use super::*;
use crate::experiments::queue::sweep_shapes::peak_ratios;
use crate::experiments::queue::test_cells::made;

/// A sweep cell paced every `period` ns whose every item takes `latency` ns.
fn cell(period: u64, latency: u64) -> Cell {
    made(Mode::Sweep, Variant::BoostSpsc, period, &|_| latency)
}

#[test]
fn a_latency_wall_is_a_full_queue_and_a_p50_orders_of_magnitude_up() {
    // The document's Boost: p50 ~10 us at 50 MHz offered, the queue ~200 deep.
    let low = cell(10_000, 100);
    let wall = cell(20, 10_000);
    let wall_ = |cs: &[&Cell]| latency_wall(cs, 1024).0 == Verdict::Holds;
    assert!(wall_(&[&low, &wall]));
    // Measured from the sweep's lowest p50, not the lowest rate's (a sleeping
    // consumer's wake-up): 10 us is not 10x a 2 us start, but it is 10x the 500 ns
    // that came between.
    let woken = cell(10_000, 2_000);
    let mid = cell(1_000, 500);
    assert!(!wall_(&[&woken, &wall]));
    assert!(wall_(&[&woken, &mid, &wall]));
    let mid = cell(1_000, 1_500);
    assert!(!wall_(&[&woken, &mid, &cell(20, 14_000)]));
    // queue.json of issue 50 (Boost at 50 MHz): depth 26, p50 381 ns: no wall.
    let ceiling = cell(70, 381);
    assert!(!wall_(&[&low, &ceiling]));
    // A deep queue without the p50 rise is not one either, nor a lone point.
    let deep = cell(1, 200);
    assert!(!wall_(&[&low, &deep]));
    assert!(!wall_(&[]));
}

#[test]
fn a_near_empty_ring_lets_one_paused_run_pass_and_a_bistable_one_does_not() {
    use crate::lab::claims::{ratio_at_least, regime_at_least};
    use crate::lab::measure::RunSummary;
    // Twelve runs at a tenth of 1024 (102.4): 2026-12-05, one run at 112 deep (two
    // host pauses), eleven at 4 to 57.
    let mut c = cell(20, 300);
    c.measured.runs = [
        112.0, 57.0, 4.0, 30.0, 20.0, 8.0, 41.0, 12.0, 25.0, 5.0, 33.0, 18.0,
    ]
    .iter()
    .map(|&d| RunSummary {
        mean_depth: Some(d),
        ..RunSummary::default()
    })
    .collect();
    let under = (1024, 0.1, true);
    assert_eq!(depth_runs(&c, under, ratio_at_least, "r").0, Verdict::Holds);
    assert_eq!(
        depth_runs(&c, under, regime_at_least, "r").0,
        Verdict::WithinNoise
    );
    // Boost over half full in every run; one run under it makes the regime unsure.
    c.measured
        .runs
        .iter_mut()
        .for_each(|r| r.mean_depth = Some(1000.0));
    let over = (1024, 0.5, false);
    assert_eq!(depth_runs(&c, over, regime_at_least, "b").0, Verdict::Holds);
    c.measured.runs[3].mean_depth = Some(300.0);
    assert_eq!(
        depth_runs(&c, over, regime_at_least, "b").0,
        Verdict::WithinNoise
    );
}

#[test]
fn a_saturated_rate_in_two_regimes_is_judged_in_each() {
    use crate::lab::measure::RunSummary;
    // mutex-condvar's saturated runs of 2026-12-05 (M/s, mean depth of 1024): eight
    // ~950 deep at 4.1-4.4 M/s (one at 3.6), four ~30 deep at 3.3-3.6.
    let runs = [
        (4.2, 956.0),
        (4.3, 899.0),
        (3.6, 30.0),
        (3.6, 33.0),
        (4.2, 942.0),
        (3.6, 30.0),
        (3.3, 25.0),
        (4.4, 963.0),
        (4.3, 988.0),
        (4.1, 962.0),
        (4.2, 946.0),
        (3.6, 980.0),
    ];
    let mut c = made(Mode::Throughput, Variant::MutexCondvar, 20, &|_| 1000);
    c.measured.runs = runs
        .iter()
        .map(|&(rate, depth)| RunSummary {
            throughput_items_per_s: rate * 1e6,
            mean_depth: Some(depth),
            ..RunSummary::default()
        })
        .collect();
    // The old judging read the rate over all runs (3.92 M/s here, the slices' items
    // over their time) against the document's 5.7: -31%, differs; 4.0 in the run
    // before, within the band's guard. Each regime alone: the full runs' 4.2 (-26%,
    // within noise), the drained runs' 3.6 (-37%, differs): they disagree.
    assert_eq!(near(3.92, 5.7).0, Verdict::Differs);
    let (v, why) = rate_by_regime(&c, 1024, 5.7);
    assert_eq!(v, Verdict::WithinNoise, "{why}");
    assert!(
        why.contains(
            "full (at least half the capacity deep on average) (8 of 12 runs): within noise"
        ),
        "{why}"
    );
    assert!(
        why.contains("drained (under half) (4 of 12 runs): differs"),
        "{why}"
    );
    // Every run drained: the drained regime's verdict.
    c.measured
        .runs
        .iter_mut()
        .for_each(|r| r.mean_depth = Some(30.0));
    c.measured
        .runs
        .iter_mut()
        .for_each(|r| r.throughput_items_per_s = 3.5e6);
    let (v, why) = rate_by_regime(&c, 1024, 5.7);
    assert_eq!(v, Verdict::Differs, "{why}");
    assert!(why.starts_with("every run drained"), "{why}");
}

#[test]
fn boosts_transient_peak_is_judged_run_by_run() {
    use crate::lab::claims::ratio_at_least;
    use crate::lab::measure::RunSummary;
    // Boost's saturated rate in twelve runs of one `runner all` (2026-12-05, M/s), and a
    // sweep of two points whose higher one delivered 17.2 M/s in every run, the other
    // 16.0 in even runs and 19.0 in odd ones: the medians' ratio 17.5 / 15.6 = 1.12x
    // read holds, but run by run the peak is 0.8x to 2.8x the saturated rate, on both
    // sides of 1.1x (8 of 12 at or above it; the median 1.22x, beyond the guard).
    let sat_rates = [
        11.0, 10.7, 7.3, 6.8, 21.8, 8.2, 16.1, 15.7, 17.2, 17.0, 16.0, 15.5,
    ];
    let mut sat = made(Mode::Throughput, Variant::BoostSpsc, 20, &|_| 1000);
    sat.measured.runs = sat_rates
        .iter()
        .map(|&t| RunSummary {
            throughput_items_per_s: t * 1e6,
            ..RunSummary::default()
        })
        .collect();
    let point = |rate: &dyn Fn(usize) -> f64| {
        let mut c = cell(20, 10_000);
        c.measured.runs = (0..12)
            .map(|r| RunSummary {
                achieved_rate_hz: Some(rate(r)),
                ..RunSummary::default()
            })
            .collect();
        c
    };
    let top = point(&|_| 17.2e6);
    let other = point(&|r| if r % 2 == 0 { 16.0e6 } else { 19.0e6 });
    let old = 17.5e6 / sat.throughput().unwrap();
    assert!(old >= 1.1, "{old}");
    let ratios = peak_ratios(&[&top, &other], &sat);
    assert_eq!(ratios.len(), 12);
    // Run 1: the other point's 19.0 over 10.7; run 4: 17.2 over 21.8.
    assert!((ratios[1] - 19.0 / 10.7).abs() < 1e-9, "{ratios:?}");
    assert!((ratios[4] - 17.2 / 21.8).abs() < 1e-9, "{ratios:?}");
    let (v, why) = ratio_at_least(&ratios, 1.1, "r");
    assert_eq!(v, Verdict::WithinNoise, "{why}");
    assert!(why.contains("the repeats disagree"), "{why}");
    // A run the sweep lacks is left out.
    let mut short = point(&|_| 17.2e6);
    short.measured.runs.truncate(10);
    assert_eq!(peak_ratios(&[&top, &short], &sat).len(), 10);
    // A peak 1.3x the saturated rate in every run holds.
    sat.measured
        .runs
        .iter_mut()
        .for_each(|r| r.throughput_items_per_s = 13.2e6);
    let ratios = peak_ratios(&[&top, &other], &sat);
    assert_eq!(ratio_at_least(&ratios, 1.1, "r").0, Verdict::Holds);
}

#[test]
fn a_run_or_two_at_a_wall_do_not_decide_the_top_rate() {
    use crate::lab::measure::RunSummary;
    // The mutex queue at 50 MHz, 2026-12-06: most runs ~30-200 deep with a p50 a few
    // times the sweep's lowest; one run full (~950 deep, p50 200x).
    let low = cell(10_000, 1_000);
    let mut top = cell(20, 3_000);
    let run = |depth: f64, p50: u64| RunSummary {
        mean_depth: Some(depth),
        p50_ns: p50,
        ..RunSummary::default()
    };
    top.measured.runs = (0..12)
        .map(|i| run(30.0 + 15.0 * i as f64, 3_000))
        .collect();
    top.measured.runs[4] = run(950.0, 200_000);
    let (verdict, reason) = latency_wall(&[&low, &top], 1024);
    // Every run had to agree: within noise. One of twelve now leaves it "no wall".
    assert_eq!(verdict, Verdict::Fails, "{reason}");
    top.measured.runs[7] = run(940.0, 180_000);
    top.measured.runs[9] = run(960.0, 190_000);
    assert_eq!(latency_wall(&[&low, &top], 1024).0, Verdict::WithinNoise);
}
