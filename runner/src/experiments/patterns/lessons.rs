//! `runner patterns`'s claims from the document's lessons and memory section (false
//! sharing, jemalloc against glibc, the arena's overhead) and the project's targets
//! against the best general allocators.

use super::once::Holder;
use super::report::{Outcome, GENERAL};
use crate::lab::claims::{near, ratio_at_least, Claim, Verdict};
use crate::lab::measure::median_or_nan as median;

/// A relation between two contenders measured in alternated pairs (`first` slower
/// than `second`), judged with the lab's one rule for ratios on repeats
/// (`lab::claims::ratio_at_least` on each pair's first / second): holds or fails when
/// every pair agrees, within noise otherwise.
fn every_pair(pairs: &[(f64, f64)], rule: &str) -> (Verdict, String) {
    if pairs.is_empty() {
        return (Verdict::NotMeasured, "no kept repeat".into());
    }
    let ratios: Vec<f64> = pairs.iter().map(|p| p.0 / p.1).collect();
    crate::lab::claims::ratio_at_least(&ratios, 1.0, &format!("{rule}, alternated pairs"))
}

/// Project targets the document does not set: the arena and the warm typed pool at
/// least as fast as the same `Box` loop on the best general allocators (each in a
/// child process), judged on the kept runs' own ratios (`lab::claims::ratio_at_least`).
pub(super) fn general_claims(o: &Outcome) -> Vec<Claim> {
    let mut v = Vec::new();
    for (part, pool, who, row) in [
        (
            "arena",
            "arena",
            "The arena is",
            "arena vs malloc table, Box on the best general allocators (project target)",
        ),
        (
            "typed_pool",
            "pool_warm",
            "The warm typed pool is",
            "typed pool vs Box table, Box on the best general allocators (project target)",
        ),
    ] {
        for (_, name, doc) in GENERAL {
            let ratios = o.per_run_ratios(part, name, pool);
            let (verdict, ours) = if ratios.is_empty() {
                (
                    (Verdict::NotMeasured, "no kept repeat".to_string()),
                    "not measured".to_string(),
                )
            } else {
                let (p, b) = (o.runs(part, pool), o.runs(part, name));
                (
                    ratio_at_least(&ratios, 1.0, &format!("{name} / {pool}, per run")),
                    format!(
                        "{:.2}x ({:.3} vs {:.3} ms, medians)",
                        median(ratios.iter().copied()),
                        median(p.iter().copied()),
                        median(b.iter().copied())
                    ),
                )
            };
            v.push(
                Claim::new(
                    GENERAL_IDS[v.len()],
                    format!("{who} at least as fast as a Box on {doc}; project target"),
                    "not measured (the document's malloc is the C library's)",
                    ours,
                    verdict,
                )
                .at(row),
            );
        }
    }
    v
}

/// The ids of [`general_claims`], in its order.
const GENERAL_IDS: [&str; 4] = [
    "arena-vs-mimalloc",
    "arena-vs-handoff-alloc",
    "typed-pool-vs-mimalloc",
    "typed-pool-vs-handoff-alloc",
];

/// Lessons 8 and 6, and the memory section's overhead figures.
pub(super) fn lesson_claims(o: &Outcome) -> Vec<Claim> {
    let mut v = Vec::new();
    let med = |p: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| {
        crate::lab::measure::median_or_nan(p.iter().map(f))
    };
    let per_pair = |p: &[(f64, f64)]| {
        p.iter()
            .map(|x| format!("{:.2}x", x.0 / x.1))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let fs = &o.lessons_ms.0;
    v.push(
        Claim::new(
            "false-sharing",
            "Cache-line (64-byte) alignment reduces false sharing: two counters written by two threads, packed into one line and then padded",
            "alignment reduced false sharing; no figure",
            format!(
                "packed {:.2} ms, padded {:.2} ms (medians); packed / padded per pair {}",
                med(fs, |p| p.0),
                med(fs, |p| p.1),
                per_pair(fs)
            ),
            every_pair(fs, "packed slower than padded"),
        )
        .at("Lessons Learned 8"),
    );
    let g = &o.lessons_ms.1;
    v.push(
        Claim::new(
            "jemalloc-beats-glibc",
            "jemalloc is a better default than glibc malloc (orders allocated and freed in batches, each allocator in a child process)",
            "jemalloc better than glibc; no figure",
            format!(
                "glibc {:.2} ms, jemalloc {:.2} ms (medians); glibc / jemalloc per pair {}",
                med(g, |p| p.0),
                med(g, |p| p.1),
                per_pair(g)
            ),
            every_pair(g, "glibc slower than jemalloc"),
        )
        .at("Lessons Learned 6"),
    );
    if let (Some(mm), Some(a)) = (o.mem(Holder::Malloc), o.mem(Holder::Arena)) {
        let over = |m: &super::once::Memory| m.resident as f64 - m.requested as f64;
        let (om, oa) = (over(mm), over(a));
        let ours = format!(
            "overhead beyond the ticks' own bytes: malloc {:.1} MiB, arena {:.1} MiB",
            om / (1 << 20) as f64,
            oa / (1 << 20) as f64
        );
        // Resident memory moves in pages: an overhead within one page of zero is none.
        let oa = if oa.abs() <= 4096.0 { 0.0 } else { oa };
        let less = 1.0 - oa / om;
        let (verdict, reason) = near(less, 0.89);
        v.push(
            Claim::new(
                "arena-89pct-less-overhead",
                "An arena has 89% less overhead than malloc for 1M ticks",
                "overhead 42 MB vs 5 MB: 89% less",
                format!("{ours} ({:.0}% less)", less * 100.0),
                (
                    verdict,
                    format!(
                        "the saving {:.1}% against the document's 89%: {reason}",
                        less * 100.0
                    ),
                ),
            )
            .at("Production Metrics, Memory Efficiency")
            .untimed(),
        );
        let (x_text, (verdict, reason)) = if oa > 0.0 {
            let x = om / oa;
            (format!("{x:.1}x"), near(x, 3.2))
        } else {
            (
                "the arena's within one page of none: no finite ratio".to_string(),
                (
                    Verdict::Differs,
                    "far more than 3.2x: the arena adds no overhead a page-granular resident count can see".to_string(),
                ),
            )
        };
        v.push(
            Claim::new(
                "overhead-3.2x",
                "Memory efficiency: 3.2x less overhead with the custom allocator",
                "3.2x less overhead (the memory section's own figures, 42 vs 5 MB, make it 8.4x)",
                format!("{ours} ({x_text})"),
                (verdict, reason),
            )
            .at("Our results (2024): Memory efficiency")
            .untimed(),
        );
    }
    v
}
