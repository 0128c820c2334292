//! The document's claims beside this run. Tails are judged against the noise probe's
//! floor: when the pinned cores' interruptions alone put p99.9 above the figure a claim
//! needs, no allocator could show it on this machine.

use super::sweep_claims::Floor;
use super::work::Variant;
use super::{Cell, Config, Mode, Outcome};
use crate::lab::claims::{holds, near, Claim, Verdict};
use crate::lab::fmt::ns as fmt_ns;
use crate::lab::noise::Probes;
use crate::lab::placed;
use handoff_clock::link::Classes;
use handoff_stats::Latency;

/// The document's tie, two-sided: `x` within 5% of `y`, above or below, or within
/// `step_ns`, the clock's step (two stamps closer than that cannot be told apart).
fn tie(x: f64, y: f64, step_ns: f64) -> bool {
    (x - y).abs() <= 0.05 * y || placed::within_step(x - y, step_ns)
}

pub(super) fn p(c: &Cell, q: f64) -> f64 {
    c.latency.value_at_quantile(q) as f64
}

/// "Does mimalloc close malloc's gap?": in each placement of the two cores that all
/// three contenders ran in (the merged histograms where there are no placement probes),
/// at each quantile of `qs`, malloc has a gap when it lies beyond a tie above the
/// freelist ([`tie`]: 5% or the clock's `step`); mimalloc closes it when it lies within
/// a tie of the freelist or below. Judged in the nearest placement, as the experiment's
/// other comparisons: holds when every gap there is closed, fails otherwise; no gap
/// there: not measurable here (nothing to close), the farther placements' gaps named in
/// the reason. Until 2026-12-05 the nearest placement *with a gap* was judged: on this
/// VM that is a far placement the host gives some runs and not others, and the verdict
/// read *fails* in one run of four and *not measurable here* in the other three.
fn drop_in_gap(
    classes: &Classes,
    (m, f, mi): (&Cell, &Cell, &Cell),
    qs: &[f64],
    step: f64,
) -> (String, (Verdict, String)) {
    let beyond = |x: f64, y: f64| x > y && !tie(x, y, step);
    let names = qs
        .iter()
        .map(|&q| match q {
            0.5 => "p50".to_string(),
            q => format!("p{}", q * 100.0),
        })
        .collect::<Vec<_>>();
    let mut rows: Vec<(String, [Latency; 3])> =
        placed::shared_by(&[&m.measured, &f.measured, &mi.measured], classes)
            .into_iter()
            .filter_map(|k| {
                let at = |c: &Cell| c.measured.in_class(classes, k).map(|p| p.latency);
                Some((
                    format!("cores {} apart", classes.list[k].label()),
                    [at(m)?, at(f)?, at(mi)?],
                ))
            })
            .collect();
    if rows.is_empty() {
        rows.push((
            "merged (no placement shared by all three)".to_string(),
            [m.latency.clone(), f.latency.clone(), mi.latency.clone()],
        ));
    }
    let mut text = Vec::new();
    let mut judged: Option<(String, bool)> = None;
    let mut farther = Vec::new();
    for (row, (label, [lm, lf, lmi])) in rows.iter().enumerate() {
        let mut parts = Vec::new();
        let (mut gaps, mut closed) = (0, 0);
        for (i, &q) in qs.iter().enumerate() {
            let (xm, xf, xmi) = (
                lm.value_at_quantile(q) as f64,
                lf.value_at_quantile(q) as f64,
                lmi.value_at_quantile(q) as f64,
            );
            let gap = beyond(xm, xf);
            let shut = !beyond(xmi, xf);
            gaps += usize::from(gap);
            closed += usize::from(gap && shut);
            parts.push(format!(
                "{} malloc {} / freelist {} / mimalloc {} ({})",
                names[i],
                fmt_ns(xm),
                fmt_ns(xf),
                fmt_ns(xmi),
                match (gap, shut) {
                    (false, _) => "no gap",
                    (true, true) => "gap closed",
                    (true, false) => "gap not closed",
                }
            ));
        }
        text.push(format!("{label}: {}", parts.join(", ")));
        if gaps > 0 && row == 0 {
            judged = Some((label.clone(), closed == gaps));
        } else if gaps > 0 {
            farther.push(format!(
                "{label} ({})",
                if closed == gaps {
                    "gap closed"
                } else {
                    "gap not closed"
                }
            ));
        }
    }
    let rule = format!(
        "malloc's gap: above the freelist by more than 5% or the clock's step ({}); closed when mimalloc is within that of the freelist or below",
        fmt_ns(step)
    );
    let verdict = match judged {
        Some((label, ok)) => holds(ok, format!("{rule}; judged in the nearest placement ({label})")),
        None => (
            Verdict::NotMeasurableHere,
            format!(
                "{rule}: malloc shows no gap to the freelist at {} in the nearest placement ({}), so there is nothing to close{}",
                names.join(", "),
                rows[0].0,
                if farther.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; a gap only farther: {}, a placement the host gives some runs and not others, not judged",
                        farther.join(", ")
                    )
                }
            ),
        ),
    };
    (text.join("; "), verdict)
}

/// Every claim the run can speak to.
pub fn claims(out: &Outcome, cfg: &Config, noise: Option<&Probes>) -> Vec<Claim> {
    let mut v = Vec::new();
    // The noise probes before and after the runs each give a p99.9 floor; the host's
    // pauses come and go, so one quiet second does not make the run's tails quiet. A
    // tail is left to the allocators only when the higher floor allows it.
    let (low999, floor999) = (
        noise.and_then(|n| n.floor(0.999)),
        noise.and_then(|n| n.worst_floor(0.999)),
    );
    let floor = Floor::new(low999, floor999);
    let floor_text = &floor.text;
    let tail_verdict = |doc: f64, judged: (Verdict, String)| floor.tail(doc, judged);
    // Where a background thread shares a measured core, what it changes is the sharing,
    // not the heap: the claims about background pressure cannot be judged.
    let shared = cfg.bg_shares_core;
    let shared_why = || {
        let measured = [cfg.placement.producer(), cfg.placement.consumer()];
        let on: Vec<String> = cfg
            .placement
            .cores_of("background")
            .into_iter()
            .filter(|c| measured.contains(c))
            .map(|c| c.to_string())
            .collect();
        format!(
            "the background thread runs on a measured core here (core {}), so a run with it measures that sharing, not the allocators under heap pressure; it needs a core of its own (3 or more cores)",
            on.join(", ")
        )
    };
    // The headline never shares a measured core with a background thread (the
    // placement drops it there); a headline claim says when it ran without one.
    let no_bg = cfg.headline_bg_threads == 0;
    let headline = |judged: (Verdict, String)| {
        if no_bg {
            let (v, r) = judged;
            (v, format!("{r}; measured without the background heap thread (the document's headline had 1 M/s of it)"))
        } else {
            judged
        }
    };
    // A claim about background pressure itself.
    let pressure = |judged: (Verdict, String)| {
        if shared {
            (Verdict::NotMeasurableHere, shared_why())
        } else if no_bg {
            (
                Verdict::NotMeasured,
                "the headline ran without background (--bg-threads 0)".to_string(),
            )
        } else {
            judged
        }
    };
    let h = |x| out.find(Mode::Headline, x);
    if let (Some(m), Some(f)) = (h(Variant::Malloc), h(Variant::FreelistReturnQueue)) {
        let classes = &out.placements.classes;
        let (mn, fname) = (Variant::Malloc.name(), Variant::FreelistReturnQueue.name());
        let (ours, judged) = placed::compare(
            classes,
            (fname, f),
            (mn, m),
            0.5,
            |x, y| tie(x, y, out.placements.step_ns),
            &format!(
                "a tie, both ways: the freelist's p50 within 5% of malloc's or within the clock's step ({}), above or below; absolute figures differ by machine",
                fmt_ns(out.placements.step_ns)
            ),
        );
        v.push(
            Claim::new(
                "p50-tie",
                "At the median malloc and the freelist tie (172 ns each)",
                "malloc 172 ns, freelist-return-queue 172 ns",
                ours,
                headline(judged),
            )
            .at("Headline latency (CCDF): \"At the median, malloc and freelist tie at 172 ns\""),
        );
        v.push(
            Claim::new(
                "freelist-tail",
                "The freelist's tail: p99 220 ns, p99.9 312 ns",
                "p99 220 ns, p99.9 312 ns",
                format!(
                    "p99 {}, p99.9 {}{}",
                    fmt_ns(p(f, 0.99)),
                    fmt_ns(p(f, 0.999)),
                    floor_text
                ),
                headline(tail_verdict(312.0, near(p(f, 0.999), 312.0))),
            )
            .at("Headline latency (CCDF); Takeaway"),
        );
        let (ours, judged) = placed::compare_at(
            classes,
            (mn, m),
            (fname, f),
            &[0.99, 0.999],
            |x, y| x[0] > y[0] && x[1] > y[1],
            "malloc above the freelist at both p99 and p99.9",
        );
        v.push(
            Claim::new(
                "malloc-tail-gap",
                "Malloc's tail stretches under background pressure: p99 296 / p99.9 392 ns, 1.35x / 1.26x the freelist",
                "1.35x at p99, 1.26x at p99.9",
                format!(
                    "p99 / p99.9: {ours} (merged: {:.2}x / {:.2}x){floor_text}",
                    p(m, 0.99) / p(f, 0.99).max(1.0),
                    p(m, 0.999) / p(f, 0.999).max(1.0),
                ),
                pressure(tail_verdict(392.0, judged)),
            )
            .at("Headline latency (CCDF)"),
        );
        v.push(Claim::new(
            "malloc-max",
            "Malloc's max is 46,710 ns against the pools' ~10,000-15,000 ns (one sample in 5 M: not robust)",
            "malloc 46,710 ns; pools 10,860-14,780 ns",
            format!(
                "malloc {}, freelist {}{}",
                fmt_ns(m.latency.max() as f64),
                fmt_ns(f.latency.max() as f64),
                floor_text
            ),
            (
                Verdict::NotMeasurableHere,
                "a single sample: on this VM the host's pauses (0.3-4 ms) set every variant's max".into(),
            ),
        ).at("Headline latency (CCDF): malloc's max"));
        // "No worse" within the clock's step: two p50s closer than one step cannot be
        // told apart.
        let step = out.placements.step_ns;
        let no_worse = move |x: f64, y: f64| x <= y || placed::within_step(x - y, step);
        let step_text = format!("within the clock's step ({})", fmt_ns(step));
        if let Some(a) = h(Variant::ArenaBatchHandoff) {
            let an = Variant::ArenaBatchHandoff.name();
            // The tails are judged only where the cores' interruptions leave them to the
            // allocators: the higher p99.9 floor of the noise probes below the
            // document's 344 ns (with no probe, the tails are not judged).
            let tails = floor999.is_some_and(|f| f as f64 <= 344.0 * 1.25);
            let (qs, rule): (&[f64], String) = if tails {
                (
                    &[0.5, 0.99, 0.999],
                    format!("freelist <= arena at p50, p99 and p99.9, {step_text}"),
                )
            } else {
                (
                    &[0.5],
                    format!(
                        "freelist <= arena at p50, {step_text}; p99 and p99.9 not judged: {}",
                        floor999.map_or_else(
                            || "no noise probe ran to show the cores' interruptions leave them to the allocators".to_string(),
                            |f| format!("the pinned cores' interruptions alone impose a p99.9 of up to {}, above the document's 344 ns", fmt_ns(f as f64))
                        )
                    ),
                )
            };
            let (ours, judged) = placed::compare_at(
                classes,
                (fname, f),
                (an, a),
                qs,
                |x, y| x.iter().zip(y).all(|(&f, &a)| no_worse(f, a)),
                &rule,
            );
            v.push(
                Claim::new(
                    "bump-does-not-win",
                    "The arena's bump pointer does not beat the freelist: arena 204 / 244 / 344 ns vs freelist 172 / 220 / 312 at p50 / p99 / p99.9",
                    "freelist below the arena at every percentile",
                    format!(
                        "{}: {ours}; merged p99 / p99.9: freelist {} / {}, arena {} / {}{floor_text}",
                        if tails { "p50 / p99 / p99.9" } else { "p50" },
                        fmt_ns(p(f, 0.99)),
                        fmt_ns(p(f, 0.999)),
                        fmt_ns(p(a, 0.99)),
                        fmt_ns(p(a, 0.999)),
                    ),
                    headline(judged),
                )
                .at("The bump-pointer that doesn't win"),
            );
            let (ours, (vd, rd)) = placed::compare(
                classes,
                (an, a),
                (fname, f),
                0.5,
                |x, y| ((x - y) - 32.0).abs() <= 32.0 * crate::lab::claims::NEAR,
                "the arena's p50 less the freelist's within 25% of the document's 32 ns",
            );
            v.push(
                Claim::new(
                    "arena-32ns-slower",
                    "At the median the arena sits 32 ns slower than the freelist (204 vs 172 ns)",
                    "arena 204 ns, freelist 172 ns: +32 ns",
                    ours,
                    headline((
                        match vd {
                            Verdict::Holds => Verdict::Reproduced,
                            Verdict::Fails => Verdict::Differs,
                            other => other,
                        },
                        rd,
                    )),
                )
                .at("Headline latency (CCDF): \"arena sits 32 ns slower at 204 ns\""),
            );
            let rule = format!("the pool's p50 at or below malloc's, {step_text}");
            let (of, (vf, rf)) =
                placed::compare(classes, (fname, f), (mn, m), 0.5, no_worse, &rule);
            let (oa, (va, ra)) = placed::compare(classes, (an, a), (mn, m), 0.5, no_worse, &rule);
            let both = vf == Verdict::Holds && va == Verdict::Holds;
            v.push(
                Claim::new(
                    "pools-p50",
                    "(project acceptance) the pool variants' p50 is no worse than malloc's",
                    "(project target)",
                    format!("{of} | {oa}"),
                    headline(holds(both, format!("both pools: {rf} | {ra}"))),
                )
                .at("Headline latency (CCDF) (project target for the Rust pools)"),
            );
        }
        if let Some(mi) = h(Variant::Mimalloc) {
            // Malloc's gap is its distance above the freelist: the document's is at the
            // tail (1.35x / 1.26x at p99 / p99.9 same-CCX, 2.44x at p99.9 across CCXs).
            // The tails count where the probes' p99.9 floor leaves them to the
            // allocators (the document's malloc p99.9 392 ns); p50 always, which on this
            // VM shows a gap in the far placements of the two cores.
            let tails = floor999.is_some_and(|f| f as f64 <= 392.0 * 1.25);
            let qs: &[f64] = if tails { &[0.5, 0.99, 0.999] } else { &[0.5] };
            let (ours, judged) = drop_in_gap(classes, (m, f, mi), qs, step);
            v.push(Claim::new(
                "drop-in-allocator",
                "Open question of the document: does a drop-in general allocator (mimalloc) close malloc's gap?",
                "not measured by the document (malloc's gap: 1.35x / 1.26x the freelist at p99 / p99.9 same-CCX, 2.44x at p99.9 across CCXs)",
                format!(
                    "{ours}; merged p50 / p99 / p99.9: mimalloc {} / {} / {}, malloc {} / {} / {}, freelist {} / {} / {}{}",
                    fmt_ns(p(mi, 0.5)), fmt_ns(p(mi, 0.99)), fmt_ns(p(mi, 0.999)),
                    fmt_ns(p(m, 0.5)), fmt_ns(p(m, 0.99)), fmt_ns(p(m, 0.999)),
                    fmt_ns(p(f, 0.5)), fmt_ns(p(f, 0.99)), fmt_ns(p(f, 0.999)),
                    if tails { String::new() } else { format!("; p99 and p99.9 not judged{floor_text}") }
                ),
                headline(judged),
            ).at("What this doesn't show: no jemalloc / mimalloc / tcmalloc comparison"));
        }
    }
    if let (Some(m), Some(f), Some(a)) = (
        h(Variant::Malloc),
        h(Variant::FreelistReturnQueue),
        h(Variant::ArenaBatchHandoff),
    ) {
        v.extend(super::throughput::claims([m, f, a], cfg, noise, &headline));
    }
    v.extend(super::sweep_claims::claims(
        out,
        &floor,
        shared.then(shared_why),
    ));
    v.extend(super::cross_l3::claims(
        out,
        cfg,
        (noise.and_then(|n| n.worst_floor(0.99)), floor999),
    ));
    v
}

#[cfg(test)]
#[path = "claims_tests.rs"]
mod tests;
