//! handoff-stats against brute-force references computed from the sorted raw values.

// Under `--cfg handoff_global_alloc` (.ci/run) handoff-alloc is this test's global allocator.
#[cfg(handoff_global_alloc)]
use handoff_alloc as _;

use handoff_stats::{DocBucket, Latency, MergeError, Unit, QUANTILES};

/// Deterministic pseudo-random latencies: mostly ~100-300, some tail up to ~1e6.
fn sample(n: usize, seed: u64) -> Vec<u64> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match x % 1000 {
                0..=979 => 100 + x % 200,
                980..=998 => 1_000 + x % 50_000,
                _ => 100_000 + x % 1_000_000,
            }
        })
        .collect()
}

fn record(values: &[u64]) -> Latency {
    let mut l = Latency::new();
    for &v in values {
        l.record(v);
    }
    l
}

#[test]
fn doc_buckets_tile_the_integers() {
    let mut v = 0u64;
    let mut prev: Option<DocBucket> = None;
    while v < 1 << 22 {
        let b = DocBucket::of(v);
        assert!(b.lower <= v && v <= b.upper, "{v} not in {b:?}");
        if let Some(p) = prev {
            assert_eq!(p.upper + 1, b.lower, "gap or overlap before {b:?}");
        }
        let expected_width = if v < 16 {
            1
        } else {
            1u64 << (63 - v.leading_zeros() - 4)
        };
        assert_eq!(b.width(), expected_width, "{b:?}");
        assert_eq!(b.lower % b.width(), 0);
        prev = Some(b);
        v = b.upper + 1;
    }
    // 16 buckets per power of two from 16 up.
    let per_octave = (0..1u64 << 12)
        .filter(|v| (1024..2048).contains(v))
        .map(DocBucket::of)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    assert_eq!(per_octave, 16);
    assert_eq!(DocBucket::of(u64::MAX).upper, u64::MAX);
}

#[test]
fn every_hdr_bucket_lies_inside_one_doc_bucket() {
    let l = record(&sample(50_000, 7));
    let h = l.histogram();
    for v in h.iter_recorded() {
        let hi = v.value_iterated_to();
        let lo = h.lowest_equivalent(hi);
        assert_eq!(
            DocBucket::of(lo),
            DocBucket::of(hi),
            "hdr bucket {lo}..={hi} straddles"
        );
    }
}

#[test]
fn doc_percentiles_match_a_brute_force_reading() {
    for (n, seed) in [(1, 1), (7, 2), (100, 3), (12_345, 4), (200_000, 5)] {
        let values = sample(n, seed);
        let l = record(&values);
        let mut sorted = values.clone();
        sorted.sort_unstable();
        let doc = l.doc_percentiles();
        for (q, got) in QUANTILES
            .into_iter()
            .zip([doc.p50, doc.p90, doc.p99, doc.p999, doc.p9999])
        {
            let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
            let want = DocBucket::of(sorted[rank - 1]).midpoint();
            assert_eq!(got, want, "n={n} q={q}");
        }
    }
}

#[test]
fn hdr_percentiles_are_within_three_significant_figures() {
    let values = sample(100_000, 11);
    let l = record(&values);
    let mut sorted = values.clone();
    sorted.sort_unstable();
    let p = l.percentiles();
    assert_eq!(p.min, sorted[0]);
    assert_eq!(p.max, *sorted.last().unwrap());
    assert_eq!(p.count, values.len() as u64);
    let exact_mean = values.iter().map(|&v| v as f64).sum::<f64>() / values.len() as f64;
    assert!((p.mean - exact_mean).abs() < 1e-6 * exact_mean);
    for (q, got) in QUANTILES
        .into_iter()
        .zip([p.p50, p.p90, p.p99, p.p999, p.p9999])
    {
        let rank = ((q * values.len() as f64) as usize).max(1);
        let want = sorted[rank - 1] as f64;
        let rel = (got as f64 - want).abs() / want;
        assert!(rel <= 1e-3, "q={q}: hdr {got} vs exact {want}");
    }
}

#[test]
fn min_and_max_are_exact_beyond_hdr_resolution() {
    let mut l = Latency::new();
    l.record(123_456_789);
    l.record(987_654_321_987);
    assert_eq!(l.min(), 123_456_789);
    assert_eq!(l.max(), 987_654_321_987);
    let p = l.percentiles();
    assert!(p.p50 >= p.min && p.p9999 <= p.max);
    // Out of hdr's range: still counted, max still exact.
    l.record(u64::MAX);
    assert_eq!(l.count(), 3);
    assert_eq!(l.max(), u64::MAX);
}

#[test]
fn merging_runs_equals_recording_them_together() {
    let runs: Vec<Vec<u64>> = (0..5).map(|s| sample(20_000, 100 + s)).collect();
    let mut merged = Latency::new();
    for r in &runs {
        merged.merge(&record(r)).unwrap();
    }
    let all: Vec<u64> = runs.concat();
    let together = record(&all);
    assert_eq!(merged.percentiles(), together.percentiles());
    assert_eq!(merged.doc_percentiles(), together.doc_percentiles());
    assert_eq!(merged.ccdf(), together.ccdf());
    // Merging an empty run changes nothing.
    merged.merge(&Latency::new()).unwrap();
    assert_eq!(merged.percentiles(), together.percentiles());
}

#[test]
fn merging_different_units_is_refused() {
    let mut ns = record(&[1, 2, 3]);
    let mut ticks = Latency::with_unit(Unit::Ticks);
    ticks.record(5);
    let err = ns.merge(&ticks).unwrap_err();
    assert_eq!(
        err,
        MergeError::UnitMismatch {
            into: Unit::Ns,
            from: Unit::Ticks
        }
    );
    assert!(err.to_string().contains("cannot merge"));
    assert_eq!(ns.count(), 3);
}

#[test]
fn ccdf_and_pdf_are_consistent_with_the_data() {
    let values = sample(30_000, 21);
    let l = record(&values);
    let ccdf = l.ccdf();
    assert_eq!(ccdf[0].fraction, 1.0);
    assert_eq!(ccdf[0].value, l.histogram().lowest_equivalent(l.min()));
    for w in ccdf.windows(2) {
        assert!(w[0].value < w[1].value && w[0].fraction > w[1].fraction);
    }
    // The fraction at or above each point, counted from the raw data, agrees within
    // the hdr bucket the point stands for.
    for p in ccdf.iter().step_by(17) {
        let exact = values
            .iter()
            .filter(|&&v| l.histogram().lowest_equivalent(v) >= p.value)
            .count();
        assert!(
            (p.fraction - exact as f64 / values.len() as f64).abs() < 1e-12,
            "{p:?}"
        );
    }
    let pdf = l.pdf();
    let total: f64 = pdf.iter().map(|b| b.fraction).sum();
    assert!((total - 1.0).abs() < 1e-9);
    assert_eq!(
        pdf.iter().map(|b| b.count).sum::<u64>(),
        values.len() as u64
    );
    for b in &pdf {
        let exact = values
            .iter()
            .filter(|&&v| v >= b.lower && v <= b.upper)
            .count() as u64;
        assert_eq!(b.count, exact, "{b:?}");
        assert!((b.density - b.fraction / (b.upper - b.lower + 1) as f64).abs() < 1e-15);
    }
}

#[test]
fn serde_round_trip_keeps_everything() {
    let l = record(&sample(10_000, 31));
    let json = serde_json::to_value(&l).unwrap();
    for key in [
        "unit",
        "count",
        "min",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "p99.99",
        "max",
        "mean",
        "doc_convention",
        "hdr_v2_deflate_base64",
    ] {
        assert!(json.get(key).is_some(), "missing {key} in {json}");
    }
    assert_eq!(json["unit"], "ns");
    let back: Latency = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(back.percentiles(), l.percentiles());
    assert_eq!(back.doc_percentiles(), l.doc_percentiles());
    assert_eq!(back.ccdf(), l.ccdf());
    // A deserialised recording still merges and records.
    let mut back = back;
    back.merge(&l).unwrap();
    back.record(1);
    assert_eq!(back.count(), 2 * l.count() + 1);

    let mut tampered = json;
    tampered["count"] = serde_json::json!(5);
    let err = serde_json::from_value::<Latency>(tampered).unwrap_err();
    assert!(err.to_string().contains("count says 5"), "{err}");
}

#[test]
fn empty_recording_reads_as_zeros() {
    let l = Latency::new();
    let p = l.percentiles();
    assert_eq!((p.count, p.min, p.p50, p.max, p.mean), (0, 0, 0, 0, 0.0));
    assert_eq!(l.doc_percentiles().p99, 0.0);
    assert!(l.ccdf().is_empty() && l.pdf().is_empty());
    let back: Latency = serde_json::from_str(&serde_json::to_string(&l).unwrap()).unwrap();
    assert_eq!(back.count(), 0);
}

#[test]
fn ticks_convert_to_nanoseconds() {
    let clock = handoff_clock::Clock::quick();
    let mut ticks = Latency::with_unit(Unit::Ticks);
    let raw = sample(5_000, 41);
    for &v in &raw {
        ticks.record(v);
    }
    let ns = ticks.to_ns(&clock);
    assert_eq!(ns.unit(), Unit::Ns);
    assert_eq!(ns.count(), ticks.count());
    assert_eq!(ns.min(), clock.ticks_to_ns(ticks.min()));
    assert_eq!(ns.max(), clock.ticks_to_ns(ticks.max()));
    let expect_p50 = clock.ticks_to_ns_f64(ticks.percentiles().p50);
    // Whole-nanosecond rounding plus the histogram's 3 significant figures.
    let err = (ns.percentiles().p50 as f64 - expect_p50).abs();
    assert!(
        err <= 0.5 + 1e-3 * expect_p50,
        "{} vs {expect_p50}",
        ns.percentiles().p50
    );
}
