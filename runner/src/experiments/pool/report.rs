//! `runner pool`'s outputs: document 001's two tables (with the per-thread-cache
//! column), the claims, the results JSON and the charts.

use super::work::{Cell, Contender, Sample, Scenario};
use super::{Config, DOC_THREADS};
use crate::lab::chart::Chart;
use crate::lab::claims::{all_hold, all_near, near, ratio_at_least, Claim, Verdict};
use crate::lab::error::Result;
use crate::lab::experiment::Report;
use crate::lab::measure::median_or_nan as median;
use crate::lab::noise::Probes;
use crate::lab::placed;
use crate::lab::results::Outputs;
use crate::lab::schema::{Better, Unit, Variant};
use handoff_clock::link::Classes;
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

/// Every cell with its kept repeats, and the placements of the first two threads' cores
/// that the probes around the concurrent repeats found.
pub struct Outcome {
    cells: Vec<Cell>,
    samples: Vec<Vec<Sample>>,
    classes: Classes,
    probes: usize,
}

impl Outcome {
    /// The cells and their samples, in the same order, the placement classes and the
    /// probes they were made from (the warm-up run's included).
    pub fn new(
        cells: Vec<Cell>,
        samples: Vec<Vec<Sample>>,
        classes: Classes,
        probes: usize,
    ) -> Outcome {
        Outcome {
            cells,
            samples,
            classes,
            probes,
        }
    }

    fn find(&self, s: Scenario, c: Contender) -> Option<(&Cell, &[Sample])> {
        self.cells
            .iter()
            .zip(&self.samples)
            .find(|(cell, _)| cell.scenario == s && cell.contender == c)
            .map(|(cell, v)| (cell, v.as_slice()))
    }

    /// Median ns per operation of (scenario, contender).
    pub fn ns(&self, s: Scenario, c: Contender) -> f64 {
        self.find(s, c)
            .map(|(_, v)| median(v.iter().map(|x| x.ns)))
            .unwrap_or(f64::NAN)
    }

    /// Median ns per release of the bulk scenario.
    pub fn bulk_free_ns(&self, c: Contender) -> f64 {
        self.find(Scenario::Bulk, c)
            .map(|(_, v)| median(v.iter().filter_map(|x| x.free_ns)))
            .unwrap_or(f64::NAN)
    }

    /// Per repeat, `a`'s figure over `b`'s in (scenario `s`): ns per operation, or per
    /// bulk release when `free` (the contenders ran one after the other in each
    /// repeat).
    fn paired(&self, s: Scenario, a: Contender, b: Contender, free: bool) -> Vec<f64> {
        let get = |c| {
            self.find(s, c)
                .map(|(_, v)| {
                    v.iter()
                        .map(|x| if free { x.free_ns } else { Some(x.ns) })
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        };
        get(a)
            .into_iter()
            .zip(get(b))
            .filter_map(|(x, y)| Some(x? / y?))
            .collect()
    }

    fn threads(&self, c: Contender) -> usize {
        self.find(Scenario::Concurrent, c)
            .map(|(cell, _)| cell.threads)
            .unwrap_or(1)
    }
}

fn f(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}")
    } else {
        "-".into()
    }
}

/// A row of the first table: scenario, region, and the figure of each contender.
type Row<'a> = (&'a str, &'a str, Box<dyn Fn(Contender) -> f64 + 'a>);

/// The two tables of document 001, ours.
fn sections(out: &Outcome, cfg: &Config) -> Vec<String> {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "ns per operation, median of {} repeats (first of {} dropped), {} iterations, 64-byte blocks",
        cfg.run.runs - 1,
        cfg.run.runs,
        cfg.items
    );
    let _ = write!(s, "  {:<12} {:<18}", "scenario", "region");
    for c in Contender::ALL {
        let _ = write!(s, " {:>15}", c.name());
    }
    let _ = writeln!(s);
    let rows: [Row<'_>; 4] = [
        (
            "bulk",
            "pool alloc",
            Box::new(|c| out.ns(Scenario::Bulk, c)),
        ),
        ("bulk", "pool free", Box::new(|c| out.bulk_free_ns(c))),
        (
            "interleaved",
            "alloc+free",
            Box::new(|c| out.ns(Scenario::Interleaved, c)),
        ),
        (
            "concurrent",
            "alloc+free",
            Box::new(|c| out.ns(Scenario::Concurrent, c)),
        ),
    ];
    for (scenario, region, get) in &rows {
        let _ = write!(s, "  {scenario:<12} {region:<18}");
        for c in Contender::ALL {
            let _ = write!(s, " {:>15}", f(get(c)));
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(
        s,
        "  concurrent: {} threads on cores {:?}, aggregate ns/op = wall time / total operations; single_threaded is not Sync and runs on 1 thread (document 001's clamped NONE row)",
        cfg.threads, cfg.placement.threads()
    );
    let mut t = String::new();
    let _ = writeln!(
        t,
        "allocator / pool, alloc+free (document 001's second table, with mimalloc and handoff-alloc beside glibc)"
    );
    let _ = write!(t, "  {:<36} {:>10}", "policy", "pool");
    for a in Contender::ALLOCATORS {
        let _ = write!(t, " {:>13} {:>8}", a.name(), "/ pool");
    }
    let _ = writeln!(t);
    for c in &Contender::ALL[..4] {
        let (scenario, th) = if *c == Contender::SingleThreaded {
            (Scenario::Interleaved, 1)
        } else {
            (Scenario::Concurrent, out.threads(*c))
        };
        let pool = out.ns(scenario, *c);
        let _ = write!(
            t,
            "  {:<36} {:>10}",
            format!("{} ({}, T={th})", c.name(), c.doc_name()),
            f(pool)
        );
        for a in Contender::ALLOCATORS {
            let x = out.ns(scenario, a);
            let _ = write!(t, " {:>13} {:>7.2}x", f(x), x / pool);
        }
        let _ = writeln!(t);
    }
    vec![s, t]
}

/// Fewest repeat pairs a placement needs before the contended claim is judged in it.
const MIN_PAIRS: usize = 3;

/// One concurrent repeat pair (lock_free, locked), run moments apart.
struct Pair {
    /// locked / lock_free ns per operation.
    ratio: f64,
    /// Failed compare-and-swaps per operation (lock_free), waited locks (locked).
    swaps: Option<f64>,
    waits: Option<f64>,
    /// The placement all four probes around the two repeats fell in.
    class: Option<usize>,
}

/// What a set of pairs shows: "lock_free faster in 8 of 9 (median 1.33x, 0.78x to
/// 3.55x; 1.48 failed swaps and 0.76 waited locks per operation)", and the verdict.
fn judge_pairs(pairs: &[&Pair]) -> (String, Option<bool>) {
    let n = pairs.len();
    let wins = pairs.iter().filter(|p| p.ratio > 1.0).count();
    let (lo, hi) = pairs.iter().fold((f64::INFINITY, 0.0f64), |(a, b), p| {
        (a.min(p.ratio), b.max(p.ratio))
    });
    let med = |f: &dyn Fn(&Pair) -> Option<f64>| median(pairs.iter().filter_map(|p| f(p)));
    let text = format!(
        "lock_free faster in {wins} of {n} (locked / lock_free median {:.2}x, {lo:.2}x to {hi:.2}x; per alloc + release {:.2} failed compare-and-swaps of the head, {:.2} acquisitions that found the mutex held)",
        median(pairs.iter().map(|p| p.ratio)),
        med(&|p| p.swaps),
        med(&|p| p.waits),
    );
    // The lab's one rule for ratios on repeats (`lab::claims::ratio_at_least`).
    let ratios: Vec<f64> = pairs.iter().map(|p| p.ratio).collect();
    let verdict = match ratio_at_least(&ratios, 1.0, "").0 {
        Verdict::Holds => Some(true),
        Verdict::Fails => Some(false),
        _ => None,
    };
    (text, verdict)
}

/// "Under contention LOCKFREE beats MUTEX", judged on the repeats paired as they ran:
/// every repeat runs every contender once, so repeat i of the two ran moments apart,
/// and each is probed for the placement of the cores. Judged within the nearest
/// placement holding [`MIN_PAIRS`] pairs (all pairs where no probe ran or none does):
/// holds or fails when the median ratio and at least two thirds of the pairs agree
/// (`lab::claims::ratio_at_least`); otherwise within noise.
fn contended_claim(out: &Outcome, t: usize) -> Claim {
    use Contender::*;
    let of = |c| {
        out.find(Scenario::Concurrent, c)
            .map(|(_, v)| v)
            .unwrap_or_default()
    };
    let class_of = |x: &Sample| x.around_ns.and_then(|(b, a)| out.classes.of_slice(b, a));
    let pairs: Vec<Pair> = of(LockFree)
        .iter()
        .zip(of(Locked))
        .map(|(l, m)| Pair {
            ratio: m.ns / l.ns,
            swaps: l.contended_per_op,
            waits: m.contended_per_op,
            class: match (class_of(l), class_of(m)) {
                (Some(a), Some(b)) if a == b => Some(a),
                _ => None,
            },
        })
        .collect();
    let fewer = if t < DOC_THREADS {
        format!(
            "{t} threads: the document's {DOC_THREADS} need more cores than this process may use; "
        )
    } else {
        String::new()
    };
    let in_class = |k: usize| {
        pairs
            .iter()
            .filter(|p| p.class == Some(k))
            .collect::<Vec<_>>()
    };
    let judged_in = (0..out.classes.list.len()).find(|&k| in_class(k).len() >= MIN_PAIRS);
    let all: Vec<&Pair> = pairs.iter().collect();
    let (text, verdict) = judge_pairs(&all);
    let mut ours = format!(
        "{} vs {} ns/op (medians); {fewer}all {} repeat pairs: {text}",
        f(out.ns(Scenario::Concurrent, LockFree)),
        f(out.ns(Scenario::Concurrent, Locked)),
        pairs.len()
    );
    for (k, c) in out.classes.list.iter().enumerate() {
        let here = in_class(k);
        if !here.is_empty() {
            let _ = write!(
                ours,
                "; cores {} apart: {}",
                c.label(),
                judge_pairs(&here).0
            );
        }
    }
    let (scope, verdict) = match judged_in {
        Some(k) => (
            format!(
                "the pairs whose probes put the cores {} apart (the nearest placement with {MIN_PAIRS} pairs or more)",
                out.classes.list[k].label()
            ),
            judge_pairs(&in_class(k)).1,
        ),
        None => (
            if out.classes.list.is_empty() {
                "all pairs (no placement probes)".to_string()
            } else {
                format!("all pairs (no placement held {MIN_PAIRS})")
            },
            verdict,
        ),
    };
    let verdict = match (pairs.is_empty(), verdict) {
        (true, _) => (Verdict::NotMeasured, "the concurrent scenario did not run".to_string()),
        (_, Some(true)) => (
            Verdict::Holds,
            format!("lock_free faster in the median and in at least two thirds of {scope}"),
        ),
        (_, Some(false)) => (
            Verdict::Fails,
            format!("locked faster in the median and in at least two thirds of {scope}"),
        ),
        (_, None) => (
            Verdict::WithinNoise,
            format!(
                "neither faster in two thirds of {scope}: which one wins depends on the moment each repeat caught"
            ),
        ),
    };
    Claim::new(
        "lockfree-beats-mutex-contended",
        format!("Under contention LOCKFREE beats MUTEX ({t} threads here)"),
        "41.79 vs 69.54 ns/op (4 threads)",
        ours,
        verdict,
    )
    .at("second table, MUTEX and LOCKFREE rows (T=4)")
}

/// The bulk scenario's claims: the document's NONE figures, and its order of the
/// policies (NONE < LOCKFREE < MUTEX < malloc, allocating and releasing).
fn bulk_claims(out: &Outcome) -> Vec<Claim> {
    use Contender::*;
    let alloc = |c| out.ns(Scenario::Bulk, c);
    let free = |c| out.bulk_free_ns(c);
    let row = |g: &dyn Fn(Contender) -> f64| {
        format!(
            "single_threaded {}, lock_free {}, locked {}, malloc {}",
            f(g(SingleThreaded)),
            f(g(LockFree)),
            f(g(Locked)),
            f(g(Malloc))
        )
    };
    vec![
        Claim::new(
            "bulk-none",
            "Bulk, one thread: the NONE pool allocates in 11.80 ns and releases in 10.36 ns",
            "11.80 / 10.36 ns",
            format!("{} / {} ns", f(alloc(SingleThreaded)), f(free(SingleThreaded))),
            all_near(&[
                ("alloc", alloc(SingleThreaded), 11.80),
                ("free", free(SingleThreaded), 10.36),
            ]),
        )
        .at("first table, bulk rows, NONE"),
        Claim::new(
            "bulk-order",
            "Bulk, one thread: NONE < LOCKFREE < MUTEX < malloc, allocating and releasing",
            "alloc 11.80 < 18.61 < 34.69 < ~71; free 10.36 < 22.73 < 56.17 < ~41 (MUTEX's release above malloc's)",
            format!("alloc: {}; free: {}", row(&alloc), row(&free)),
            {
                let step = |a: Contender, b: Contender, free: bool| {
                    ratio_at_least(
                        &out.paired(Scenario::Bulk, b, a, free),
                        1.0,
                        &format!(
                            "{} {} over {}'s",
                            b.name(),
                            if free { "releasing" } else { "allocating" },
                            a.name()
                        ),
                    )
                };
                let (v, r) = all_hold(&[
                    step(SingleThreaded, LockFree, false),
                    step(LockFree, Locked, false),
                    step(Locked, Malloc, false),
                    step(SingleThreaded, LockFree, true),
                    step(LockFree, Locked, true),
                ]);
                (v, format!("{r}. Pools warmed by one untimed pass, as the document's are preallocated; the document's own MUTEX release, above its malloc's, leaves malloc's place in releases unjudged"))
            },
        )
        .at("first table, bulk rows"),
    ]
}

/// The uncontended cost of each policy against NONE (interleaved, one thread): the
/// document's "MUTEX about 5x, LOCKFREE about 3.4x NONE", judged as ratios.
fn uncontended_claim(out: &Outcome) -> Claim {
    use Contender::*;
    let none = out.ns(Scenario::Interleaved, SingleThreaded);
    let (m, l) = (
        out.ns(Scenario::Interleaved, Locked) / none,
        out.ns(Scenario::Interleaved, LockFree) / none,
    );
    Claim::new(
        "uncontended-cost-ratios",
        "Synchronisation costs even uncontended: MUTEX about 5x NONE, LOCKFREE about 3.4x NONE (interleaved, one thread)",
        "47.19 / 9.32 = 5.06x; 31.74 / 9.32 = 3.41x",
        format!("locked {m:.2}x, lock_free {l:.2}x NONE ({} ns)", f(none)),
        all_near(&[("locked / NONE", m, 5.06), ("lock_free / NONE", l, 3.41)]),
    )
    .at("\"Synchronization has a real uncontended cost\" (first table, interleaved row)")
}

/// The document's claims beside this run.
fn claims(out: &Outcome, cfg: &Config) -> Vec<Claim> {
    use Contender::*;
    use Scenario::*;
    let none = out.ns(Interleaved, SingleThreaded);
    let malloc1 = out.ns(Interleaved, Malloc);
    let (mutex1, lf1) = (out.ns(Interleaved, Locked), out.ns(Interleaved, LockFree));
    let (mutex_t, lf_t, tc_t, malloc_t) = (
        out.ns(Concurrent, Locked),
        out.ns(Concurrent, LockFree),
        out.ns(Concurrent, ThreadCached),
        out.ns(Concurrent, Malloc),
    );
    let t = cfg.threads;
    let mut v = bulk_claims(out);
    v.extend([
        Claim::new(
            "none-fast-path",
            "The single-thread (NONE) pool's interleaved alloc+free costs about 9.3 ns",
            "9.32 ns/op (i5-6600K, MSVC)",
            format!("{} ns/op", f(none)),
            near(none, 9.32),
        )
        .at("first table, interleaved row; \"NONE is the fast path\""),
        Claim::new(
            "none-vs-malloc",
            "NONE is about 5x faster than malloc (interleaved, one thread); our target: at least 4x",
            "5.02x (9.52 vs 47.77 ns)",
            format!("{:.2}x ({} vs {} ns)", malloc1 / none, f(none), f(malloc1)),
            ratio_at_least(
                &out.paired(Interleaved, Malloc, SingleThreaded, false),
                4.0,
                "malloc / single_threaded",
            ),
        )
        .at("second table, NONE row (5.02x); conclusions"),
        Claim::new(
            "lockfree-beats-mutex-uncontended",
            "LOCKFREE is cheaper than MUTEX uncontended",
            "31.74 vs 47.19 ns/op",
            format!("{} vs {} ns/op", f(lf1), f(mutex1)),
            ratio_at_least(
                &out.paired(Interleaved, Locked, LockFree, false),
                1.0,
                "locked / lock_free, interleaved",
            ),
        )
        .at("first table, interleaved row; \"LOCKFREE is cheaper than MUTEX uncontended\""),
        uncontended_claim(out),
        contended_claim(out, t),
        Claim::new(
            "four-thread-figures",
            "Under contention (4 threads): MUTEX 69.54, LOCKFREE 41.79 ns/op; malloc 31.75 and 23.80 in the two builds",
            "MUTEX 69.54, LOCKFREE 41.79; malloc 31.75 / 23.80 ns/op (T=4)",
            format!(
                "{t} threads: locked {}, lock_free {}, malloc {} ns/op",
                f(mutex_t),
                f(lf_t),
                f(malloc_t)
            ),
            if t >= DOC_THREADS {
                all_near(&[
                    ("locked", mutex_t, 69.54),
                    ("lock_free", lf_t, 41.79),
                    ("malloc (MUTEX build)", malloc_t, 31.75),
                    ("malloc (LOCKFREE build)", malloc_t, 23.80),
                ])
            } else {
                (
                    Verdict::NotMeasurableHere,
                    format!("the document's {DOC_THREADS} threads need {DOC_THREADS} cores; this process may use {t}, and {t} threads contend differently"),
                )
            },
        )
        .at("second table, MUTEX and LOCKFREE rows (T=4)"),
        Claim::new(
            "single-head-loses-to-malloc",
            "Both single-head pools lose to malloc under contention (malloc / pool < 1)",
            "MUTEX 0.46x, LOCKFREE 0.57x",
            format!(
                "locked {:.2}x, lock_free {:.2}x",
                malloc_t / mutex_t,
                malloc_t / lf_t
            ),
            all_hold(&[
                ratio_at_least(
                    &out.paired(Concurrent, Locked, Malloc, false),
                    1.0,
                    "locked / malloc",
                ),
                ratio_at_least(
                    &out.paired(Concurrent, LockFree, Malloc, false),
                    1.0,
                    "lock_free / malloc",
                ),
            ]),
        )
        .at("second table, malloc / pool column; \"Both lose to malloc under contention\""),
        Claim::new(
            "thread-cached-beats-malloc",
            "Per-thread caches (the document's deferred next step) beat malloc under contention; our target: at least 1.5x",
            "not measured (deferred to ADR-0020 §4)",
            format!("{:.2}x ({} vs {} ns/op)", malloc_t / tc_t, f(tc_t), f(malloc_t)),
            ratio_at_least(
                &out.paired(Concurrent, Malloc, ThreadCached, false),
                1.5,
                "malloc / thread_cached, concurrent",
            ),
        )
        .at("conclusions: \"per-thread caches are the documented next step\" (project target)"),
    ]);
    v.extend(best_allocator_claims(out));
    v
}

/// Project targets the document does not set: the pools against the best general
/// allocators, each a `Box` on it in a child process, on the runs' own ratios.
fn best_allocator_claims(out: &Outcome) -> Vec<Claim> {
    use Contender::*;
    use Scenario::*;
    let times = |target: f64| {
        if target == 1.0 {
            "at least as fast as".to_string()
        } else {
            format!("at least {target}x as fast as")
        }
    };
    // (the pool, its scenario, how the claim names it and the scenario, where the claim
    // stands, what the document has)
    let none = (
        SingleThreaded,
        Interleaved,
        "NONE is",
        "(interleaved, one thread)",
        "second table, NONE row, beside the best general allocators (project target)",
        "not measured (the document's malloc is the C library's)",
    );
    let cached = (
        ThreadCached,
        Concurrent,
        "Per-thread caches are",
        "under contention",
        "second table, per-thread caches, beside the best general allocators (project target)",
        "not measured (deferred to ADR-0020 §4)",
    );
    let claim = |id: &'static str,
                 of: (Contender, Scenario, &str, &str, &'static str, &str),
                 other: Contender,
                 target: f64| {
        let (pool, scenario, who, when, row, document) = of;
        let (p, x) = (out.ns(scenario, pool), out.ns(scenario, other));
        Claim::new(
            id,
            format!(
                "{who} {} a Box on {} {when}; project target",
                times(target),
                other.doc_name()
            ),
            document,
            format!("{:.2}x ({} vs {} ns/op)", x / p, f(p), f(x)),
            ratio_at_least(
                &out.paired(scenario, other, pool, false),
                target,
                &format!("{} / {}, {}", other.name(), pool.name(), scenario.name()),
            ),
        )
        .at(row)
    };
    vec![
        claim("none-vs-mimalloc", none, Mimalloc, 2.0),
        claim("none-vs-handoff-alloc", none, HandoffAlloc, 1.0),
        claim("thread-cached-vs-mimalloc", cached, Mimalloc, 1.5),
        claim("thread-cached-vs-handoff-alloc", cached, HandoffAlloc, 1.0),
    ]
}

/// Every contender with its median ns per operation in each scenario (and its kept
/// runs), and document 001's ratios and every raw sample.
impl Report<Config> for Outcome {
    fn sections(&self, cfg: &Config) -> Vec<String> {
        sections(self, cfg)
    }

    fn claims(&self, cfg: &Config, _noise: Option<&Probes>) -> Vec<Claim> {
        claims(self, cfg)
    }

    fn variants(&self, _cfg: &Config) -> Vec<Variant> {
        Contender::ALL
            .iter()
            .map(|&c| {
                let mut v = Variant::new(c.name());
                for (key, scenario) in FIGURES {
                    let runs = self.find(scenario, c).map(|(_, s)| s).unwrap_or_default();
                    let (value, runs): (f64, Vec<f64>) = if key == "bulk_free" {
                        (
                            self.bulk_free_ns(c),
                            runs.iter().filter_map(|x| x.free_ns).collect(),
                        )
                    } else {
                        (self.ns(scenario, c), runs.iter().map(|x| x.ns).collect())
                    };
                    v.figure(key, Unit::Ns, Better::Lower, value, runs);
                }
                v.set("threads", self.threads(c));
                v
            })
            .collect()
    }

    fn fields(&self, _cfg: &Config) -> Map<String, Value> {
        let mut ratios = Map::new();
        for c in &Contender::ALL[..4] {
            let scenario = if *c == Contender::SingleThreaded {
                Scenario::Interleaved
            } else {
                Scenario::Concurrent
            };
            ratios.insert(
                format!("malloc_over_{}", c.name()),
                json!(self.ns(scenario, Contender::Malloc) / self.ns(scenario, *c)),
            );
            ratios.insert(
                format!("mimalloc_over_{}", c.name()),
                json!(self.ns(scenario, Contender::Mimalloc) / self.ns(scenario, *c)),
            );
            ratios.insert(
                format!("handoff_alloc_over_{}", c.name()),
                json!(self.ns(scenario, Contender::HandoffAlloc) / self.ns(scenario, *c)),
            );
        }
        let samples: Vec<Value> = self
            .cells
            .iter()
            .zip(&self.samples)
            .map(|(cell, s)| json!({ "cell": cell, "samples": s }))
            .collect();
        let mut m = Map::new();
        m.insert(
            "placements".into(),
            placed::classes_json(
                &self.classes,
                self.probes,
                "between the first two threads' cores, before and after every repeat of the concurrent scenario",
            ),
        );
        m.insert("ratios".into(), Value::Object(ratios));
        m.insert("samples".into(), Value::Array(samples));
        m
    }

    fn charts(&self, cfg: &Config) -> Result<Outputs> {
        charts(self, cfg)
    }
}

/// The figures of each contender: (key, scenario), ns per operation.
const FIGURES: [(&str, Scenario); 4] = [
    ("bulk_alloc", Scenario::Bulk),
    ("bulk_free", Scenario::Bulk),
    ("interleaved", Scenario::Interleaved),
    ("concurrent", Scenario::Concurrent),
];

/// Bars of ns/op for the interleaved and the concurrent scenario.
fn charts(out: &Outcome, cfg: &Config) -> Result<Outputs> {
    let mut files = Outputs::new();
    for (scenario, title) in [
        (
            Scenario::Interleaved,
            "interleaved alloc+free, one thread".to_string(),
        ),
        (
            Scenario::Concurrent,
            format!("concurrent alloc+free, {} threads, aggregate", cfg.threads),
        ),
    ] {
        let bars: Vec<(String, f64)> = Contender::ALL
            .iter()
            .map(|&c| (c.name().to_string(), out.ns(scenario, c)))
            .filter(|b| b.1.is_finite())
            .collect();
        files.chart(
            cfg.run.out.join(format!("pool-{}.svg", scenario.name())),
            Chart::Bars {
                title,
                y: "ns per operation".into(),
                bars,
            },
        )?;
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bulk cells with five repeats each: (contender, alloc ns, free ns) per repeat.
    fn bulk(rows: &[(Contender, [f64; 5], [f64; 5])]) -> Outcome {
        let cells = rows
            .iter()
            .map(|&(contender, _, _)| Cell {
                scenario: Scenario::Bulk,
                contender,
                threads: 1,
            })
            .collect();
        let samples = rows
            .iter()
            .map(|(_, a, f)| {
                a.iter()
                    .zip(f)
                    .map(|(&ns, &free)| Sample {
                        ns,
                        free_ns: Some(free),
                        contended_per_op: None,
                        around_ns: None,
                    })
                    .collect()
            })
            .collect();
        Outcome::new(cells, samples, Classes::default(), 0)
    }

    fn order(out: &Outcome) -> Claim {
        bulk_claims(out)
            .into_iter()
            .find(|c| c.id == "bulk-order")
            .unwrap()
    }

    #[test]
    fn the_bulk_order_is_judged_allocating_as_well_as_releasing() {
        use Contender::*;
        // Issue 50, eb0422a: NONE 32.40 > LOCKFREE 30.70 ~ MUTEX 30.81 allocating, the
        // releases in the document's order: the old rule printed "holds".
        let out = bulk(&[
            (SingleThreaded, [32.4; 5], [3.0; 5]),
            (LockFree, [30.7; 5], [9.0; 5]),
            (Locked, [30.81; 5], [14.0; 5]),
            (Malloc, [70.0; 5], [20.0; 5]),
        ]);
        let c = order(&out);
        assert_eq!(c.verdict, Verdict::Fails, "{}", c.reason);
        // The document's order, in every repeat: holds.
        let out = bulk(&[
            (SingleThreaded, [4.0; 5], [3.0; 5]),
            (LockFree, [12.0; 5], [9.0; 5]),
            (Locked, [18.0; 5], [14.0; 5]),
            (Malloc, [70.0; 5], [20.0; 5]),
        ]);
        assert_eq!(order(&out).verdict, Verdict::Holds);
        // LOCKFREE and MUTEX trading places from repeat to repeat: within noise.
        let out = bulk(&[
            (SingleThreaded, [4.0; 5], [3.0; 5]),
            (LockFree, [12.0, 12.0, 12.0, 12.0, 12.0], [9.0; 5]),
            (Locked, [13.0, 11.0, 13.0, 11.0, 12.5], [14.0; 5]),
            (Malloc, [70.0; 5], [20.0; 5]),
        ]);
        assert_eq!(order(&out).verdict, Verdict::WithinNoise);
    }

    /// Cells of one scenario with five repeats each: (contender, ns per repeat).
    fn cells(scenario: Scenario, rows: &[(Contender, [f64; 5])]) -> (Vec<Cell>, Vec<Vec<Sample>>) {
        let cells = rows
            .iter()
            .map(|&(contender, _)| Cell {
                scenario,
                contender,
                threads: if scenario == Scenario::Concurrent {
                    2
                } else {
                    1
                },
            })
            .collect();
        let samples = rows
            .iter()
            .map(|(_, v)| {
                v.iter()
                    .map(|&ns| Sample {
                        ns,
                        free_ns: None,
                        contended_per_op: None,
                        around_ns: None,
                    })
                    .collect()
            })
            .collect();
        (cells, samples)
    }

    #[test]
    fn the_best_allocator_targets_are_judged_on_the_repeats_ratios() {
        use Contender::*;
        let verdicts = |none: [f64; 5], tc: [f64; 5]| {
            let (mut c, mut s) = cells(
                Scenario::Interleaved,
                &[
                    (SingleThreaded, none),
                    (Mimalloc, [5.0; 5]),
                    (HandoffAlloc, [3.0; 5]),
                ],
            );
            let (c2, s2) = cells(
                Scenario::Concurrent,
                &[
                    (ThreadCached, tc),
                    (Mimalloc, [3.0; 5]),
                    (HandoffAlloc, [1.5; 5]),
                ],
            );
            c.extend(c2);
            s.extend(s2);
            let out = Outcome::new(c, s, Classes::default(), 0);
            best_allocator_claims(&out)
                .into_iter()
                .map(|c| (c.id, c.verdict))
                .collect::<Vec<_>>()
        };
        // NONE 2.0 ns: 2.5x mimalloc's 5.0, 1.5x handoff-alloc's 3.0; thread_cached 1.2 ns:
        // 2.5x mimalloc's 3.0, 1.25x handoff-alloc's 1.5.
        for (_, v) in verdicts([2.0; 5], [1.2; 5]) {
            assert_eq!(v, Verdict::Holds);
        }
        // NONE 3.5 ns: 1.43x mimalloc's (below 2x), slower than handoff-alloc;
        // thread_cached 2.5 ns: 1.2x mimalloc's (below 1.5x), slower than handoff-alloc.
        for (_, v) in verdicts([3.5; 5], [2.5; 5]) {
            assert_eq!(v, Verdict::Fails);
        }
        // Repeats on both sides of the target: within noise, never a verdict.
        let v = verdicts([2.0, 3.0, 2.0, 3.0, 2.6], [1.2; 5]);
        assert_eq!(v[0], ("none-vs-mimalloc", Verdict::WithinNoise));
    }
}
