//! The document's cross-CCX side note as claims: the p50 floor all three variants share
//! once the consumer sits on another L3 group (408 ns), malloc's p99 and p99.9 against
//! the pools' (1.63x, 2.44x), and the expansion of malloc's tail over its same-L3
//! baseline (4.5x against the pools' 2.1-2.3x). They are judged when the cross-L3
//! headline ran: beside the same-L3 one (a run without `--pin` on a machine with two L3
//! groups; the expansion too) or alone (`--cross-l3`; the expansion then needs a
//! same-L3 run). Otherwise each says what it needs.

use super::work::Variant;
use super::{Cell, Config, Mode, Outcome};
use crate::lab::claims::{all_near, near, Claim, Verdict};
use crate::lab::fmt::ns as fmt_ns;

const PLACE: &str = "Cross-CCX side note";

fn p(c: &Cell, q: f64) -> f64 {
    c.latency.value_at_quantile(q) as f64
}

/// `malloc X, freelist Y, arena Z` at quantile `q`.
fn three_at(m: &Cell, f: &Cell, a: &Cell, q: f64) -> String {
    format!(
        "malloc {}, freelist {}, arena {}",
        fmt_ns(p(m, q)),
        fmt_ns(p(f, q)),
        fmt_ns(p(a, q))
    )
}

/// Why a cross-L3 claim has no figure in this run.
fn absent(cfg: &Config) -> (Verdict, String) {
    if cfg.l3_groups < 2 {
        (
            Verdict::NotMeasurableHere,
            format!(
                "needs producer and consumer on two L3 groups; the allowed cores here form {} (run `runner pipeline --cross-l3` on a machine with more)",
                cfg.l3_groups
            ),
        )
    } else {
        (
            Verdict::NotMeasured,
            "this run kept producer and consumer on one L3 group (its cores were given with --pin, or it ran no headline); run `runner pipeline` without --pin, or with --cross-l3"
                .into(),
        )
    }
}

/// The cross-L3 claims. `floors` are the higher noise floors at p99 and p99.9 (ns),
/// when the probes ran: a ratio of tails is the allocators' only where the cores'
/// interruptions alone stay below the pools' tail.
pub fn claims(out: &Outcome, cfg: &Config, floors: (Option<u64>, Option<u64>)) -> Vec<Claim> {
    // The cross-L3 headline run beside the same-L3 one: judged on its cells, the
    // expansion against the same-L3 headline of this run.
    let (out, cfg, baseline) = match &out.cross {
        Some(x) => (&x.out, &x.cfg, Some(out)),
        None => (out, cfg, None),
    };
    let h = |x| out.find(Mode::Headline, x);
    let three = (
        h(Variant::Malloc),
        h(Variant::FreelistReturnQueue),
        h(Variant::ArenaBatchHandoff),
    );
    let ran = cfg.cross_l3 && cfg.modes.contains(&Mode::Headline);
    let claim = |id, text: &str, doc: &str, ours: String, verdict| {
        Claim::new(id, text, doc, ours, verdict).at(PLACE)
    };
    let texts = [
        (
            "cross-l3-p50-floor",
            "Across CCXs the p50 floor rises to 408 ns, the same for all three variants",
            "408 ns for malloc, freelist and arena",
        ),
        (
            "cross-l3-p99",
            "Across CCXs malloc's p99 is 1.63x the pools' (1120 ns)",
            "1.63x at p99",
        ),
        (
            "cross-l3-p999",
            "Across CCXs malloc's p99.9 is 2.44x the pools' (1760 vs 720 ns)",
            "2.44x at p99.9",
        ),
        (
            "cross-l3-expansion",
            "Across CCXs malloc's p99.9 expands 4.5x over its same-CCX baseline (392 -> 1760 ns), the pools' 2.1-2.3x",
            "malloc 4.5x, pools 2.1-2.3x",
        ),
    ];
    let (Some(m), Some(f), Some(a), true) = (three.0, three.1, three.2, ran) else {
        let why = if ran {
            (
                Verdict::NotMeasured,
                "needs malloc, freelist-return-queue and arena-batch-handoff in the headline"
                    .into(),
            )
        } else {
            absent(cfg)
        };
        return texts
            .iter()
            .map(|&(id, text, doc)| claim(id, text, doc, "not run".into(), why.clone()))
            .collect();
    };
    let mut v = Vec::new();
    let (id, text, doc) = texts[0];
    v.push(claim(
        id,
        text,
        doc,
        format!("p50: {}", three_at(m, f, a, 0.5)),
        all_near(&[
            ("malloc", p(m, 0.5), 408.0),
            ("freelist", p(f, 0.5), 408.0),
            ("arena", p(a, 0.5), 408.0),
        ]),
    ));
    for (k, q, doc_ratio, doc_pool, floor) in [
        (1, 0.99, 1.63, 1120.0 / 1.63, floors.0),
        (2, 0.999, 2.44, 720.0, floors.1),
    ] {
        let (id, text, doc) = texts[k];
        let pools = (p(f, q) + p(a, q)) / 2.0;
        let ratio = p(m, q) / pools.max(1.0);
        let ours = format!(
            "malloc {} vs the pools' mean {} (freelist {}, arena {}): {ratio:.2}x{}",
            fmt_ns(p(m, q)),
            fmt_ns(pools),
            fmt_ns(p(f, q)),
            fmt_ns(p(a, q)),
            floor
                .map(|x| format!(
                    "; the cores' interruptions alone set a floor of {}",
                    fmt_ns(x as f64)
                ))
                .unwrap_or_default()
        );
        let verdict = match floor {
            Some(x) if x as f64 > doc_pool => (
                Verdict::NotMeasurableHere,
                format!(
                    "the pinned cores' interruptions alone impose {} at this quantile, above the pools' {} in the document: the ratio would be the host's",
                    fmt_ns(x as f64),
                    fmt_ns(doc_pool)
                ),
            ),
            _ => near(ratio, doc_ratio),
        };
        v.push(claim(id, text, doc, ours, verdict));
    }
    let (id, text, doc) = texts[3];
    let same = |x| baseline.and_then(|b| b.find(Mode::Headline, x));
    let Some((sm, sf, sa)) = same(Variant::Malloc)
        .zip(same(Variant::FreelistReturnQueue))
        .zip(same(Variant::ArenaBatchHandoff))
        .map(|((m, f), a)| (m, f, a))
    else {
        v.push(claim(
            id,
            text,
            doc,
            format!("p99.9 across L3 groups: {}", three_at(m, f, a, 0.999)),
            (
                Verdict::NotMeasured,
                "needs a same-L3 headline taken in the same conditions as this one; a --cross-l3 run measures only across L3 groups (a run without --pin and --cross-l3 on a machine with two L3 groups takes both)".into(),
            ),
        ));
        return v;
    };
    let grow = |x: &Cell, base: &Cell| p(x, 0.999) / p(base, 0.999).max(1.0);
    let (gm, gf, ga) = (grow(m, sm), grow(f, sf), grow(a, sa));
    let ours = format!(
        "p99.9 same L3 -> across: malloc {} -> {} ({gm:.2}x), freelist {} -> {} ({gf:.2}x), arena {} -> {} ({ga:.2}x)",
        fmt_ns(p(sm, 0.999)),
        fmt_ns(p(m, 0.999)),
        fmt_ns(p(sf, 0.999)),
        fmt_ns(p(f, 0.999)),
        fmt_ns(p(sa, 0.999)),
        fmt_ns(p(a, 0.999))
    );
    // The same-L3 baselines the expansions divide by are the document's 392 ns
    // (malloc) and about 320-340 ns (the pools): a floor above them makes every ratio
    // the host's.
    let verdict = match floors.1 {
        Some(x) if x as f64 > 392.0 => (
            Verdict::NotMeasurableHere,
            format!(
                "the pinned cores' interruptions alone impose {} at p99.9, above the document's same-L3 baseline of 392 ns: the expansions would be the host's",
                fmt_ns(x as f64)
            ),
        ),
        _ => all_near(&[("malloc", gm, 4.5), ("freelist", gf, 2.2), ("arena", ga, 2.2)]),
    };
    v.push(claim(id, text, doc, ours, verdict));
    v
}
