//! Tests of `claims.rs`: the headline's claims, the mutex tail and the depths.

use super::*;
use crate::experiments::queue::test_cells::made;
use crate::experiments::queue::work::Variant;

/// A 1 MHz headline cell: items at `base` ns, every `every`-th of them at `slow` ns
/// (120 per 4000 = 3%, 60 = 1.5%).
fn headline(variant: Variant, base: u64, every: u64, slow: u64) -> Cell {
    made(Mode::Headline, variant, 1_000, &|i| {
        if i % every == 0 {
            slow
        } else {
            base
        }
    })
}

fn mutex_tail(cells: Vec<Cell>) -> Claim {
    let cfg = crate::lab::experiment::configure_from::<crate::experiments::queue::Queue>(
        &[],
        &crate::lab::topology::Topology::two_cores(),
    )
    .unwrap();
    let out = Outcome {
        cells,
        ..Outcome::default()
    };
    claims(&out, &cfg, None)
        .into_iter()
        .find(|c| c.id == "mutex-tail")
        .expect("the mutex-tail claim")
}

#[test]
fn the_mutex_tail_is_compared_with_the_documents_two_rings() {
    // The project's own cpp-ring-private with a 5 us p99 (3% of its items) is not
    // one of "the lock-free rings" of the document; the ring and Boost are.
    let c = mutex_tail(vec![
        headline(Variant::CppRing, 150, 1_000_000, 0),
        headline(Variant::BoostSpsc, 130, 1_000_000, 0),
        headline(Variant::CppRingPrivate, 120, 33, 5_000),
        headline(Variant::MutexCondvar, 2_000, 33, 30_000),
    ]);
    assert_eq!(c.verdict, Verdict::Holds, "{}: {}", c.ours, c.reason);
    assert!(c.claim.contains("cpp-ring and boost-spsc"), "{}", c.claim);
    assert!(c.ours.contains("vs cpp-ring p99"), "{}", c.ours);
}

#[test]
fn a_ring_p99_set_by_stalls_is_read_below_the_stalls() {
    // 1.5% of the rings' items waited 12 us behind consumer stalls: their p99 is
    // the VM's (12 us), and the mutex's 50 us p99 only 4x it. Read at p97, under
    // the stalled items, the rings are at their own 150 ns and the mutex (5% of
    // its items at 50 us) is 333x above them. The old rule called this not
    // measurable (past 0.7% stalled); at 0.6% it judged p99 and a run a little
    // less stalled read another verdict.
    let c = mutex_tail(vec![
        headline(Variant::CppRing, 150, 66, 12_000),
        headline(Variant::BoostSpsc, 130, 66, 12_000),
        headline(Variant::MutexCondvar, 3_000, 20, 50_000),
    ]);
    assert_eq!(c.verdict, Verdict::Holds, "{}: {}", c.ours, c.reason);
    assert!(c.ours.contains("1.52% of the rings' items"), "{}", c.ours);
    assert!(c.ours.contains("p97"), "{}", c.ours);
    // The same mutex with its slow items under 3% is not 10x above the rings at
    // p97: it fails, as it should.
    let c = mutex_tail(vec![
        headline(Variant::CppRing, 150, 66, 12_000),
        headline(Variant::BoostSpsc, 130, 66, 12_000),
        headline(Variant::MutexCondvar, 1_000, 50, 50_000),
    ]);
    assert_eq!(c.verdict, Verdict::Fails, "{}: {}", c.ours, c.reason);
    // A ring p99 of its own (8 us, under the stall threshold) fails it at p99.
    let c = mutex_tail(vec![
        headline(Variant::CppRing, 150, 66, 8_000),
        headline(Variant::BoostSpsc, 130, 66, 8_000),
        headline(Variant::MutexCondvar, 3_000, 50, 50_000),
    ]);
    assert_eq!(c.verdict, Verdict::Fails, "{}: {}", c.ours, c.reason);
    assert!(c.ours.contains("p99 "), "{}", c.ours);
}

#[test]
fn the_runs_are_read_at_their_own_quantiles_too() {
    use crate::lab::measure::RunSummary;
    // The merged histograms of the first case above (over 10x at p96.9), but one run of
    // three in which the rings' items there waited 12 us: that run's ratio is
    // 0.25x, the runs disagree, within noise.
    let run = |ns: u64| RunSummary {
        tail_ns: vec![ns; 100],
        ..RunSummary::default()
    };
    let mut cells = vec![
        headline(Variant::CppRing, 150, 66, 12_000),
        headline(Variant::BoostSpsc, 130, 66, 12_000),
        headline(Variant::MutexCondvar, 3_000, 20, 50_000),
    ];
    // Three runs in place of the one, each with a third of its stalled items.
    let set = |cells: &mut Vec<Cell>, ring: [u64; 3]| {
        for c in cells.iter_mut() {
            let over = c.stalls().2.div_ceil(3);
            // A third of the items in each run too.
            c.measured.items = (c.latency.count() / 3) as usize;
            let mutex = c.variant == Variant::MutexCondvar;
            c.measured.runs = (0..3)
                .map(|i| RunSummary {
                    items_over_stall_ns: over,
                    ..run(if mutex { 3_000 } else { ring[i] })
                })
                .collect();
        }
    };
    set(&mut cells, [150, 12_000, 150]);
    let c = mutex_tail(cells.clone());
    assert_eq!(c.verdict, Verdict::WithinNoise, "{}: {}", c.ours, c.reason);
    assert!(c.reason.contains("each run's tail"), "{}", c.reason);
    // Each run at its own stalled share's quantile: a third of the stalled items in
    // each, so about the merged one (p96.8 here: the thirds rounded up).
    assert!(
        c.ours.contains("20x (p96.8) 0.2x (p96.8) 20x (p96.8)"),
        "{}",
        c.ours
    );
    // Every run's rings at their own 150 ns: 20x in each, as merged: holds.
    set(&mut cells, [150, 150, 150]);
    assert_eq!(mutex_tail(cells).verdict, Verdict::Holds);
}

#[test]
fn the_tail_quantile_moves_with_the_stalled_share() {
    assert_eq!(tail_quantile(0.0), 0.99);
    assert_eq!(tail_quantile(0.004), 0.99);
    assert!((tail_quantile(0.0083) - 0.9834).abs() < 1e-9);
    assert_eq!(tail_quantile(0.2), 0.9);
    assert_eq!(pct(0.99), "p99");
    assert_eq!(pct(0.9834), "p98.3");
}

#[test]
fn the_rings_depth_leaves_out_the_items_behind_stalls() {
    let ring = headline(Variant::CppRing, 150, 66, 12_000);
    // 1.52% of the items at 12 us lift the mean from 150 ns to ~330 ns.
    assert!(ring.latency.mean() > 300.0);
    let m = mean_below(&ring, stalled_share(&ring));
    assert!((m - 150.0).abs() < 2.0, "{m}");
    assert!((mean_below(&ring, 0.0) - ring.latency.mean()).abs() < 2.0);
}

#[test]
fn a_figure_from_a_far_placement_is_not_set_beside_the_documents() {
    let mut out = Outcome::default();
    let probes: Vec<f64> = (0..100)
        .map(|i| if i % 2 == 0 { 90.0 } else { 470.0 })
        .collect();
    out.placements.classes = handoff_clock::link::Classes::of(&probes);
    assert_eq!(out.placements.classes.list.len(), 2);
    assert_eq!(not_the_nearest(&out, 0), None);
    let why = not_the_nearest(&out, 1).expect("the far placement");
    assert!(why.contains("~470 ns apart"), "{why}");
    assert!(why.contains("~90 ns apart"), "{why}");
    // A nearer placement in 5% of the probes is not the one the others are set beside:
    // ~90 ns is, and a figure read there is set beside the document's.
    let probes: Vec<f64> = (0..100)
        .map(|i| match i {
            0..=4 => 50.0,
            5..=69 => 90.0,
            _ => 470.0,
        })
        .collect();
    out.placements.classes = handoff_clock::link::Classes::of(&probes);
    assert_eq!(out.placements.classes.list.len(), 3);
    assert_eq!(not_the_nearest(&out, 1), None);
    let why = not_the_nearest(&out, 2).expect("the far placement");
    assert!(why.contains("~90 ns apart"), "{why}");
}
