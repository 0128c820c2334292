//! The document's claims, each beside the number this run measured, with a verdict.
//!
//! Absolute numbers are hardware-bound (the document: Ryzen 7 3800X, same CCX, bare
//! metal), so they are "reproduced" when within 25% and otherwise "differs"; relations
//! (orders of magnitude, which side bounds the rate) are checked as relations.

use super::work::Variant;
use super::{Cell, Config, Mode, Outcome};
use crate::lab::claims::{
    all_hold, all_near, holds, near, near_runs, ratio_at_least, Claim, Verdict,
};
use crate::lab::fmt::{ns as fmt_ns, rate as fmt_rate};
use crate::lab::noise::Probes;
use crate::lab::placed;

fn p(c: &Cell, q: f64) -> f64 {
    c.latency.value_at_quantile(q) as f64
}

/// The lowest offered rate at which a variant's sweep saturates: achieved rate under
/// 95% of offered, or p50 above 10x its p50 at the lowest rate.
pub fn saturation_point(cells: &[&Cell]) -> Option<f64> {
    let base = cells.first().map(|c| p(c, 0.5))?;
    cells
        .iter()
        .find(|c| c.below_target_runs() * 2 > c.runs.len() || p(c, 0.5) > 10.0 * base)
        .and_then(|c| c.offered_hz)
}

/// What the document calls a latency wall, as checked at the top of the sweep.
const WALL_RULE: &str =
    "the queue at least a tenth full on average and p50 at least 10x its lowest in the sweep";

/// Whether a variant's sweep ends in a latency wall: at the top rate the queue is at
/// least a tenth full on average (the document: it fills toward capacity; Boost ~200
/// of 1024) and p50 is at least 10x the lowest p50 of the sweep (it "jumps by orders
/// of magnitude"; Boost ~10 us against ~120 ns). A queue capped by its producer stays
/// near empty and fails the first; the lowest p50, not the lowest rate's, because at
/// the lowest rates a sleeping consumer's wake-up inflates it. Judged on the top
/// point's runs (`lab::claims::ratio_at_least` on each run's smaller margin): the
/// ring's regime can change from one run to the next.
pub fn latency_wall(cells: &[&Cell], capacity: usize) -> (Verdict, String) {
    let Some(top) = cells.last() else {
        return (Verdict::NotMeasured, "no sweep".into());
    };
    let lowest = cells
        .iter()
        .map(|c| p(c, 0.5))
        .fold(f64::INFINITY, f64::min);
    let margins: Vec<f64> = top
        .runs
        .iter()
        .map(|r| {
            let depth = r.mean_depth.unwrap_or(0.0) / (0.1 * capacity as f64);
            let jump = r.p50_ns as f64 / (10.0 * lowest.max(1.0));
            depth.min(jump)
        })
        .collect();
    ratio_at_least(
        &margins,
        1.0,
        "each run at the top rate: the smaller of (depth over a tenth of capacity) and (p50 over 10x the sweep's lowest p50)",
    )
}

/// Judges "the queue stays under `share` of `capacity` (`under`) or fills past it" on
/// each run's mean depth.
fn depth_runs(c: &Cell, capacity: usize, share: f64, under: bool, what: &str) -> (Verdict, String) {
    let line = share * capacity as f64;
    let ratios: Vec<f64> = c
        .runs
        .iter()
        .filter_map(|r| r.mean_depth)
        .map(|d| if under { line / d.max(1e-9) } else { d / line })
        .collect();
    ratio_at_least(&ratios, 1.0, what)
}

/// The rings the document's mutex tail is compared with: its two (cpp-ring and
/// boost-spsc) where they ran, otherwise every lock-free variant that did.
fn tail_comparators<'a>(headline: &[&'a Cell]) -> Vec<&'a Cell> {
    let pick = |f: &dyn Fn(Variant) -> bool| -> Vec<&'a Cell> {
        headline
            .iter()
            .copied()
            .filter(|c| c.unavailable.is_none() && f(c.variant))
            .collect()
    };
    let rings = pick(&|v| matches!(v, Variant::CppRing | Variant::BoostSpsc));
    if rings.is_empty() {
        pick(&|v| v.is_lock_free())
    } else {
        rings
    }
}

/// The share of a variant's items that waited 10 us or more behind consumer stalls.
fn stalled_share(c: &Cell) -> f64 {
    let (_, _, over) = c.stalls();
    over as f64 / c.latency.count().max(1) as f64
}

/// The mean latency (ns) of `c`'s items without its slowest `drop` share.
fn mean_below(c: &Cell, drop: f64) -> f64 {
    let h = c.latency.histogram();
    let keep = ((1.0 - drop) * h.len() as f64).round() as u64;
    let (mut n, mut sum) = (0u64, 0.0);
    for v in h.iter_recorded() {
        if n >= keep {
            break;
        }
        let take = v.count_at_value().min(keep - n);
        sum += take as f64 * h.median_equivalent(v.value_iterated_to()) as f64;
        n += take;
    }
    sum / n.max(1) as f64
}

/// The quantile at which the mutex tail is compared with the rings: p99, or lower
/// where the host's stalls reach into the rings' top percent. A ring's items that
/// waited 10 us or more behind consumer stalls (`stalled`, a share) are its slowest
/// (its own latencies are hundreds of nanoseconds), so any quantile under
/// `1 - stalled` is the ring's own; `1 - 2 x stalled` leaves as many of its own items
/// above it again. Continuous in the share, so a run with 0.6% stalled items and one
/// with 0.8% are read almost alike (a cut-off at methodology.md's 0.7% turned the
/// verdict over between such runs).
fn tail_quantile(stalled: f64) -> f64 {
    (1.0 - 2.0 * stalled).clamp(0.9, 0.99)
}

/// The mutex-tail verdict: the mutex's tail at least 10x the ring's, both read at the
/// quantile [`tail_quantile`] leaves to the queues.
fn mutex_tail_verdict(mutex: f64, ring: f64, q: f64) -> (Verdict, String) {
    holds(
        mutex >= 10.0 * ring.max(1.0),
        format!(
            "mutex {} >= 10x the rings' {}, merged histograms (p99, or below the share of the rings' items that waited behind the host's stalls: twice that share under the top)",
            pct(q),
            pct(q)
        ),
    )
}

/// A quantile's name: p99, p97.4.
fn pct(q: f64) -> String {
    let x = (q * 1000.0).round() / 10.0;
    if x.fract() == 0.0 {
        format!("p{x:.0}")
    } else {
        format!("p{x:.1}")
    }
}

/// The p50s of `a` and `b` in the nearest placement of the two cores holding at least
/// [`placed::MIN_SHARE`] of both one's slices, and a note naming it with the merged
/// p50s; the merged p50s and no note without placement data.
fn near_p50s(out: &Outcome, a: &Cell, b: &Cell) -> (f64, f64, String, Option<usize>) {
    let classes = &out.placements.classes;
    let at = |k: usize| -> Option<(f64, f64, usize, usize)> {
        let (pa, pb) = (
            a.measured.in_class(classes, k)?,
            b.measured.in_class(classes, k)?,
        );
        Some((
            pa.latency.value_at_quantile(0.5) as f64,
            pb.latency.value_at_quantile(0.5) as f64,
            pa.slices,
            pb.slices,
        ))
    };
    match placed::shared_by(&[&a.measured, &b.measured], classes)
        .first()
        .and_then(|&k| Some((k, at(k)?)))
    {
        Some((k, (x, y, sa, sb))) => (
            x,
            y,
            format!(
                " with the cores {} apart (the nearest placement both ran in; {sa} and {sb} slices); all slices: {} {}, {} {}",
                classes.list[k].label(),
                a.variant.name(),
                fmt_ns(p(a, 0.5)),
                b.variant.name(),
                fmt_ns(p(b, 0.5))
            ),
            Some(k),
        ),
        None => (p(a, 0.5), p(b, 0.5), String::new(), None),
    }
}

/// Why a figure measured in placement `k` of the two cores cannot be set beside the
/// document's (its threads shared an L3): `k` is not the nearest placement this run
/// saw, so the host kept this mode's cores further apart than it could have (at least
/// nine tenths of its slices). `None` in the nearest placement.
fn not_the_nearest(out: &Outcome, k: usize) -> Option<String> {
    let list = &out.placements.classes.list;
    (k > 0).then(|| {
        format!(
            "the host kept the two cores {} apart for nine tenths of this mode's slices or more; the document's threads shared an L3, which this run's nearest placement ({} apart, seen in its other modes) stands for",
            list[k].label(),
            list[0].label()
        )
    })
}

/// Builds every claim the modes that ran can speak to.
///
/// `noise` (the probes of the consumer's core, when they ran) turns a tail claim that
/// this machine cannot show into "not measurable here": when the consumer core's
/// interruptions alone put the latency floor above what the claim needs, no queue
/// could show it on this core. The higher of the two probes' floors is used: the
/// host's pauses come and go, and one quiet second does not make the run's tails quiet.
pub fn claims(out: &Outcome, cfg: &Config, noise: Option<&Probes>) -> Vec<Claim> {
    let floor = |q: f64| noise.and_then(|n| n.worst_floor(q));
    let floor_text = |q: f64, name: &str| {
        floor(q)
            .map(|f| {
                format!(
                    "; the two cores' interruptions alone set a {name} floor of {}",
                    fmt_ns(f as f64)
                )
            })
            .unwrap_or_default()
    };
    let mut v = Vec::new();
    let h = |var| out.find(Mode::Headline, var);
    let at = if (cfg.rate_hz - 1e6).abs() < 1.0 {
        String::new()
    } else {
        format!(" (measured at {}, not 1 MHz)", fmt_rate(cfg.rate_hz))
    };

    if out.of(Mode::Headline).next().is_some() {
        if let (Some(ring), Some(boost)) = (h(Variant::CppRing), h(Variant::BoostSpsc)) {
            // The document's two threads shared one L3: judged in the nearest placement
            // both rings ran in (`lab::placed`), the merged figures beside it. On the
            // VM the host keeps the cores ~450 ns apart for a third to a half of some
            // runs and none of others; the merged p50 followed that share.
            let (r, b, seen, k) = near_p50s(out, ring, boost);
            let verdict = match k.and_then(|k| not_the_nearest(out, k)) {
                Some(why) => (Verdict::NotMeasurableHere, why),
                None => all_near(&[("cpp-ring", r, 132.0), ("boost-spsc", b, 122.0)]),
            };
            v.push(Claim::new("p50-lockfree", format!("At 1 MHz the lock-free p50s are 132 ns (hand-rolled) and 122 ns (Boost), within 8%{at}"), "cpp-ring 132 ns, boost-spsc 122 ns", format!("cpp-ring {}, boost-spsc {} ({:+.0}% apart){seen}", fmt_ns(r), fmt_ns(b), (b / r - 1.0) * 100.0), verdict).at("Headline: tail latency at 1 MHz offered load (CCDF); Boost comparison"));
            let (r9, b9) = (p(ring, 0.999), p(boost, 0.999));
            let verdict = match floor(0.999) {
                Some(f) if f as f64 > 148.0 * 1.25 => (
                    Verdict::NotMeasurableHere,
                    format!(
                        "the pinned cores' interruptions alone impose a p99.9 of {}, above what the claim allows",
                        fmt_ns(f as f64)
                    ),
                ),
                _ => all_near(&[("cpp-ring", r9, 172.0), ("boost-spsc", b9, 148.0)]),
            };
            v.push(
                Claim::new(
                    "p999-lockfree",
                    format!("At 1 MHz the lock-free p99.9s are 172 ns and 148 ns{at}"),
                    "cpp-ring 172 ns, boost-spsc 148 ns",
                    format!(
                        "cpp-ring {}, boost-spsc {}{}",
                        fmt_ns(r9),
                        fmt_ns(b9),
                        floor_text(0.999, "p99.9")
                    ),
                    verdict,
                )
                .at("Headline: tail latency at 1 MHz offered load (CCDF); Boost comparison"),
            );
        }
        // The merged histograms (5 x 1M by default, as in the document) decide; the
        // per-run ratios (run r of every variant ran back to back) show the spread.
        let headline: Vec<&Cell> = out.of(Mode::Headline).collect();
        let rings = tail_comparators(&headline);
        // The rings' worst stalled share sets the quantile (`tail_quantile`).
        let stalled = rings.iter().map(|c| stalled_share(c)).fold(0.0, f64::max);
        let q = tail_quantile(stalled);
        for m in [Variant::MutexCondvar, Variant::StdMutexCondvar] {
            let Some(c) = h(m) else { continue };
            let Some(worst) = rings.iter().max_by_key(|l| l.latency.value_at_quantile(q)) else {
                continue;
            };
            let ratio = p(c, q) / p(worst, q).max(1.0);
            let per_run: Vec<String> = (0..c.runs.len())
                .filter_map(|r| {
                    let w = rings
                        .iter()
                        .filter_map(|l| l.runs.get(r).map(|x| x.p99_ns))
                        .max()?;
                    let x = c.runs[r].p99_ns as f64 / w.max(1) as f64;
                    Some(if x < 10.0 {
                        format!("{x:.1}x")
                    } else {
                        format!("{x:.0}x")
                    })
                })
                .collect();
            let names: Vec<&str> = rings.iter().map(|r| r.variant.name()).collect();
            let qn = pct(q);
            let also_p99 = |x: &Cell| {
                if q < 0.99 {
                    format!(", p99 {}", fmt_ns(p(x, 0.99)))
                } else {
                    String::new()
                }
            };
            v.push(Claim::new("mutex-tail", format!("The mutex+condvar tail is orders of magnitude above the lock-free rings' (checked: {} at least 10x the slower of {}'s, at p99 or below the items the host's stalls delayed, merged over the runs){at}", m.name(), names.join(" and ")), "mutex p99.9 tens of microseconds vs lock-free 148-172 ns", format!(
                    "{} {qn} {}{} (p99.9 {}) vs {} {qn} {}{}: {ratio:.0}x; {:.2}% of the rings' items waited >=10 us behind consumer stalls; per-run p99 ratios {}",
                    m.name(),
                    fmt_ns(p(c, q)),
                    also_p99(c),
                    fmt_ns(p(c, 0.999)),
                    worst.variant.name(),
                    fmt_ns(p(worst, q)),
                    also_p99(worst),
                    100.0 * stalled,
                    per_run.join(" ")
                ) + &floor_text(0.99, "p99"),
                mutex_tail_verdict(p(c, q), p(worst, q), q)).at("Headline: tail latency at 1 MHz offered load (CCDF); Takeaway"));
        }
        // Little's law on the mean: a 4 ms host pause at 1 MHz queues 4000 items, so
        // a few such pauses set the ring's mean (2.5 items in one run, 0.9 in the
        // next). The ring's own depth leaves out its items that waited behind consumer
        // stalls (its slowest, `stalled_share`); the mutex keeps every item (its
        // wake-ups are its own).
        if let (Some(ring), Some(mutex)) = (h(Variant::CppRing), h(Variant::MutexCondvar)) {
            if let (Some(rate), Some(md)) = (ring.achieved_hz(), mutex.mean_depth()) {
                let s = stalled_share(ring);
                let rd = rate * mean_below(ring, s) * 1e-9;
                v.push(Claim::new(
                    "depth-1mhz",
                    format!("At 1 MHz lock-free queues are near empty (~0.1 items by Little's law), the mutex queue ~1.8 deep{at}"),
                    "lock-free ~0.1, mutex-condvar ~1.8",
                    format!(
                        "cpp-ring {rd:.2} (its {:.2}% of items that waited behind consumer stalls left out; all items: {:.2}), mutex-condvar {md:.2}",
                        100.0 * s,
                        ring.mean_depth().unwrap_or(f64::NAN)
                    ),
                    if rd < 1.0 && md > rd {
                        (Verdict::Reproduced, "ring depth under 1 item and below the mutex queue's".into())
                    } else {
                        (Verdict::Differs, "ring depth 1 item or more, or not below the mutex queue's".into())
                    },
                ).at("Setup (paced at 1 M items/sec); Takeaway"));
            }
        }
        // The comparative p50 claims: judged within one placement of the two cores
        // (`lab::placed`), every placement's figures given. "Lower" counts where the two
        // p50s are more than one step of the clock apart; closer, the placement cannot
        // tell.
        let step = out.placements.step_ns;
        let lower = move |a: f64, b: f64| (!placed::within_step(a - b, step)).then_some(a < b);
        let step_text = format!("more than the clock's step ({}) apart", fmt_ns(step));
        let cmp = |a: &Cell, b: &Cell, rule: &dyn Fn(f64, f64) -> Option<bool>, text: &str| {
            placed::compare_resolved(
                &out.placements.classes,
                (a.variant.name(), &a.measured),
                (b.variant.name(), &b.measured),
                0.5,
                rule,
                text,
            )
        };
        if let (Some(ours), Some(ring)) = (h(Variant::HandoffSpsc), h(Variant::CppRing)) {
            let (here, verdict) = cmp(
                ours,
                ring,
                &|a, b| Some(a <= b * 1.05),
                "handoff-spsc p50 <= 1.05x cpp-ring p50",
            );
            v.push(
                Claim::new(
                    "handoff-p50",
                    format!(
                    "handoff-spsc p50 within 5% of the document's ring (cpp-ring) or better{at}"
                ),
                    "(project target)",
                    here,
                    verdict,
                )
                .at("project target beside the Headline section"),
            );
        }
        if let (Some(ring), Some(private)) = (h(Variant::CppRing), h(Variant::CppRingPrivate)) {
            let (here, verdict) = cmp(
                private,
                ring,
                &lower,
                &format!("cpp-ring-private p50 < cpp-ring p50, {step_text}"),
            );
            v.push(
                Claim::new(
                    "own-index-load",
                    format!("The document's producer loads its own tail from the cache line the consumer polls, and the slot address waits on that load: the same ring with each side's own index in a private copy (cpp-ring-private) has the lower p50{at}"),
                    "(ours: the cause of cpp-ring's extra latency over handoff-spsc)",
                    here,
                    verdict,
                )
                .at("The code: the hot path's `tail_.value.load(relaxed)` in try_push"),
            );
        }
        if let (Some(stamped), Some(peer)) = (h(Variant::HandoffStamped), h(Variant::Rtrb)) {
            let (here, verdict) = cmp(
                stamped,
                peer,
                &lower,
                &format!("handoff-stamped p50 < rtrb p50, {step_text}"),
            );
            v.push(Claim::new(
                "stamped-p50",
                format!("handoff-stamped p50 below rtrb's: one cache line per item to the consumer instead of two{at}"),
                "(project target)",
                here,
                verdict,
            ).at("project target beside the Headline section"));
        }
        v.extend(super::shapes::pdf(out, &at));
        v.extend(super::shapes::moderate_load(out, &at));
    }

    if out.of(Mode::Sweep).next().is_some() {
        let sweep = |x: Variant| -> Vec<&Cell> {
            out.of(Mode::Sweep)
                .filter(|c| c.variant == x && c.unavailable.is_none())
                .collect()
        };
        for (x, doc_hz, text) in [
            (
                Variant::MutexCondvar,
                9e6,
                "The mutex queue saturates around 9 MHz offered (latency wall)",
            ),
            (
                Variant::BoostSpsc,
                28e6,
                "Boost saturates around 28 MHz offered (latency wall)",
            ),
        ] {
            let cells = sweep(x);
            if cells.is_empty() {
                continue;
            }
            let sat = saturation_point(&cells);
            let wall = latency_wall(&cells, cfg.capacity);
            let top = cells.last().expect("not empty");
            v.push(
                Claim::new(
                    "saturation",
                    text,
                    format!(
                        "{} ~{}; past it the queue fills and p50 jumps by orders of magnitude",
                        x.name(),
                        fmt_rate(doc_hz)
                    ),
                    format!(
                        "{}; at {}: depth {:.1} of {}, p50 {} (lowest in the sweep: {})",
                        match sat {
                            Some(r) => format!(
                                "{} first saturated sweep point: {}",
                                x.name(),
                                fmt_rate(r)
                            ),
                            None => format!("{} did not saturate up to 50 MHz", x.name()),
                        },
                        top.offered_hz.map_or_else(|| "-".into(), fmt_rate),
                        top.mean_depth().unwrap_or(f64::NAN),
                        cfg.capacity,
                        fmt_ns(p(top, 0.5)),
                        fmt_ns(cells.iter().map(|c| p(c, 0.5)).fold(f64::INFINITY, f64::min))
                    ),
                    match (sat, wall) {
                        (Some(r), (Verdict::Holds, why)) if (0.5..=2.0).contains(&(r / doc_hz)) => (
                            Verdict::Reproduced,
                            format!("first saturated point within 0.5x-2x of the document's, and a latency wall at the top rate ({WALL_RULE}): {why}"),
                        ),
                        (Some(r), (Verdict::WithinNoise, why)) if (0.5..=2.0).contains(&(r / doc_hz)) => (
                            Verdict::WithinNoise,
                            format!("first saturated point within 0.5x-2x of the document's; whether the top rate is a latency wall ({WALL_RULE}) changes from run to run: {why}"),
                        ),
                        (Some(r), (_, why)) if (0.5..=2.0).contains(&(r / doc_hz)) => (
                            Verdict::Differs,
                            format!("first saturated point within 0.5x-2x of the document's, but no latency wall at the top rate ({WALL_RULE}): it saturates another way: {why}"),
                        ),
                        _ => (
                            Verdict::Differs,
                            "no saturated point within 0.5x-2x of the document's".into(),
                        ),
                    },
                )
                .at("What happens as offered load rises"),
            );
        }
        v.extend(super::shapes::sweep(
            out,
            noise,
            saturation_point(&sweep(Variant::MutexCondvar)),
        ));
        v.extend(super::shapes::sweep_more(out));
        let ring = sweep(Variant::CppRing);
        if let Some(top) = ring.last() {
            let cap = ring
                .iter()
                .filter_map(|c| c.achieved_hz())
                .fold(0.0, f64::max);
            v.push(Claim::new("ring-ceiling", "The hand-rolled ring fails by a throughput ceiling (~14.7 M/s, producer-bound) while p50 stays near its floor (264 ns, depth ~4 at 50 MHz)", "cap 14.7 M/s; at 50 MHz p50 264 ns, depth ~4", format!(
                    "cap {:.1} M/s; at 50 MHz p50 {}, depth {:.1}",
                    cap / 1e6,
                    fmt_ns(p(top, 0.5)),
                    top.mean_depth().unwrap_or(f64::NAN)
                ), depth_runs(
                top,
                cfg.capacity,
                0.1,
                true,
                "at the top rate the ring stays under a tenth full, run by run (a tenth of capacity over each run's mean depth): it is capped by the producer, not by a latency wall",
            )).at("What happens as offered load rises"));
        }
    }

    if out.of(Mode::Throughput).next().is_some() {
        let t = |x| out.find(Mode::Throughput, x).and_then(|c| c.throughput());
        for (x, doc) in [
            (Variant::CppRing, 14.7),
            (Variant::BoostSpsc, 14.9),
            (Variant::MutexCondvar, 5.7),
        ] {
            if let Some(ours) = t(x) {
                let runs: Vec<f64> = out
                    .find(Mode::Throughput, x)
                    .map(|c| {
                        c.runs
                            .iter()
                            .map(|r| r.throughput_items_per_s / 1e6)
                            .collect()
                    })
                    .unwrap_or_default();
                let list = runs
                    .iter()
                    .map(|r| format!("{r:.1}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                // The document's threads shared an L3: judged in the nearest placement
                // of the two cores holding a tenth of the slices (`lab::placed`). With
                // the cores ~490 ns apart the ring moves 7 M/s instead of 18, and the
                // runs the host placed so pulled the median from run to run.
                let (here, verdict) = match out
                    .find(Mode::Throughput, x)
                    .and_then(|c| {
                        placed::nearest_throughput(
                            &c.measured,
                            &out.placements.classes,
                            out.placements.freq_hz,
                        )
                    })
                {
                    Some((k, tp, slices)) => (
                        format!(
                            "{:.1} M/s with the cores {} apart (the nearest placement; {slices} slices); all runs: median {:.1} M/s (runs {list})",
                            tp / 1e6,
                            out.placements.classes.list[k].label(),
                            ours / 1e6
                        ),
                        not_the_nearest(out, k)
                            .map_or_else(|| near(tp / 1e6, doc), |why| (Verdict::NotMeasurableHere, why)),
                    ),
                    None => (
                        format!("{:.1} M/s (runs {list})", ours / 1e6),
                        near_runs(ours / 1e6, &runs, doc),
                    ),
                };
                v.push(
                    Claim::new(
                        "throughput",
                        format!("Saturated throughput of {}", x.name()),
                        format!("{doc} M/s"),
                        here,
                        verdict,
                    )
                    .at("Throughput"),
                );
            }
        }
        let cell = |x| out.find(Mode::Throughput, x);
        if let (Some(rc), Some(bc)) = (cell(Variant::CppRing), cell(Variant::BoostSpsc)) {
            let (r, b) = (
                rc.mean_depth().unwrap_or(f64::NAN),
                bc.mean_depth().unwrap_or(f64::NAN),
            );
            v.push(Claim::new("bound-side", "Saturated, the hand-rolled ring is producer-bound (queue near empty) and Boost consumer-bound (queue near capacity)", "ring near empty, Boost near capacity (~200x the residency)", format!("mean depth: cpp-ring {r:.1}, boost-spsc {b:.1} of {}", cfg.capacity), all_hold(&[
                depth_runs(rc, cfg.capacity, 0.1, true, "the ring under a tenth full, run by run (a tenth of capacity over each run's mean depth)"),
                depth_runs(bc, cfg.capacity, 0.5, false, "Boost over half full, run by run (each run's mean depth over half the capacity)"),
            ])).at("Throughput"));
        }
        if let (Some(a), Some(b)) = (t(Variant::HandoffSpsc), t(Variant::CppRing)) {
            v.push(Claim::new("handoff-throughput", "handoff-spsc saturated throughput at least cpp-ring's (the same ring, with each side's own index kept privately and the other side's cached)", "(project target)", format!("handoff-spsc {:.1} M/s vs cpp-ring {:.1} M/s ({:.2}x)", a / 1e6, b / 1e6, a / b), holds(a >= b, "handoff-spsc >= cpp-ring, medians of runs")).at("project target beside the Throughput section"));
        }
        v.extend(super::shapes::throughput(out));
        v.extend(super::shapes::boost_peak(out));
        v.extend(super::shapes::saturated_more(out));
    }
    v.extend(super::burst::claims(out));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::queue::work::Variant;
    use crate::lab::measure::Stamps;
    use crate::lab::pacer::Schedule;
    use handoff_clock::{Clock, Source, Timer};

    /// A sweep cell paced every `period` ns whose every item takes `latency` ns.
    fn cell(period: u64, latency: u64) -> Cell {
        made(Mode::Sweep, Variant::BoostSpsc, period, &|_| latency)
    }

    /// A cell of 4000 items paced every `period` ns, item `i` taking `latency(i)` ns.
    fn made(mode: Mode, variant: Variant, period: u64, latency: &dyn Fn(u64) -> u64) -> Cell {
        let clock = Clock::monotonic();
        let n = 4000u64;
        let send: Vec<u64> = (0..n).map(|i| 1_000 + i * period).collect();
        let recv: Vec<u64> = send
            .iter()
            .enumerate()
            .map(|(i, s)| s + latency(i as u64))
            .collect();
        let stamps = Stamps {
            schedule: Schedule::new(
                1_000,
                Some(1e9 / period as f64),
                Timer::with_frequency(Source::Tsc, 1e9),
            ),
            send,
            recv,
            off_core: 0,
            bad_items: 0,
        };
        let mut c = Cell::new(mode, variant, Some(1e9 / period as f64), n as usize, ());
        c.measured.add(&stamps, &clock, "x").unwrap();
        c
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
    }
}
