//! `runner patterns`'s outputs: one table per section of document 003, the claims,
//! the contenders of the results JSON and the charts.

use super::once::{Holder, L1Misses, Memory, NumaOutcome};
use super::work::{Outliers, Processed, Shared, TypedSample};
use super::Config;
use crate::lab::chart::Chart;
use crate::lab::claims::Claim;
use crate::lab::error::Result;
use crate::lab::experiment::Report;
use crate::lab::measure::median_or_nan as median;
use crate::lab::noise::Probes;
use crate::lab::results::Outputs;
use crate::lab::schema::{Better, Unit, Variant};
use handoff_clock::Clock;
use handoff_stats::profile::AllocReport;
use handoff_stats::{Latency, Percentiles};
use serde::Serialize;
use serde_json::{json, Map, Value};

/// Order processing with one source: merged latency (ns) and median throughput.
#[derive(Clone, Debug, Serialize)]
pub struct OrderRun {
    /// Per-order latency of every kept repeat, ns.
    pub latency: Percentiles,
    /// Median orders per second.
    pub orders_per_s: f64,
    /// The merged histogram itself (ns), for counting outliers.
    #[serde(skip)]
    pub histogram: Latency,
    /// Each kept repeat's histogram (ns), in the repeats' order.
    #[serde(skip)]
    pub repeats: Vec<Latency>,
}

impl OrderRun {
    /// Orders slower than `ns`.
    pub fn above(&self, ns: u64) -> u64 {
        above(&self.histogram, ns)
    }

    /// Seconds the timed orders took, one after another.
    pub fn seconds(&self) -> f64 {
        seconds(&self.histogram)
    }

    /// The repeats in `k` consecutive groups (fewer when there are fewer repeats):
    /// each group's orders slower than `ns` and the seconds its timed orders took.
    pub fn groups(&self, k: usize, ns: u64) -> Vec<(u64, f64)> {
        let n = self.repeats.len();
        let k = k.min(n);
        (0..k)
            .map(|g| {
                self.repeats[g * n / k..(g + 1) * n / k]
                    .iter()
                    .fold((0, 0.0), |(c, s), h| (c + above(h, ns), s + seconds(h)))
            })
            .collect()
    }
}

fn above(h: &Latency, ns: u64) -> u64 {
    let h = h.histogram();
    h.len() - h.count_between(0, ns)
}

fn seconds(h: &Latency) -> f64 {
    h.count() as f64 * h.mean() / 1e9
}

/// Everything measured, reduced to what the report needs.
pub struct Outcome {
    pub(super) memory: Vec<(Holder, Memory)>,
    /// Median ms of the arena part: (malloc, arena).
    pub(super) arena_ms: (f64, f64),
    /// Median ms of the typed-pool part: (box, fresh pool, warm pool).
    pub(super) typed_ms: (f64, f64, f64),
    /// Median ms per contender of the multi-thread part.
    pub(super) shared_ms: Vec<(Shared, f64)>,
    /// The multi-thread part with every operation timed, per contender.
    pub(super) outliers: Vec<(Shared, Outliers)>,
    /// Order processing: malloc, pool.
    pub(super) orders: (OrderRun, OrderRun),
    pub(super) profile: (AllocReport, AllocReport),
    pub(super) numa: NumaOutcome,
    /// glibc's heap after the tick processing (`fragment`).
    pub(super) fragmentation: super::fragment::Fragmentation,
    pub(super) l1: L1Misses,
    /// The same count on callgrind's simulated L1.
    pub(super) l1_simulated: Option<super::once::SimulatedL1>,
    pub(super) read_cost_ns: f64,
    /// Kept runs' ms of lessons 8 and 6: (packed, padded) and (glibc, jemalloc).
    pub(super) lessons_ms: (Pairs, Pairs),
    /// Each kept run's ms, by figure (`arena/malloc`, ...), for the results' per-run
    /// values.
    runs_ms: Vec<(&'static str, &'static str, Vec<f64>)>,
}

impl Outcome {
    /// Reduces the raw measurements.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        clock: &Clock,
        memory: Vec<(Holder, Memory)>,
        arena: Vec<(u64, u64)>,
        typed: Vec<TypedSample>,
        shared: Vec<Vec<u64>>,
        processed: Vec<Vec<Processed>>,
        outliers: Vec<(Shared, Outliers)>,
        profile: (AllocReport, AllocReport),
        numa: NumaOutcome,
        l1: L1Misses,
        lessons: Lessons,
    ) -> Outcome {
        let ms = |t: u64| clock.ticks_to_ns_f64(t) / 1e6;
        let run = |v: &[Processed]| {
            let mut all = Latency::with_unit(handoff_stats::Unit::Ticks);
            for p in v {
                // Same unit and precision: merging cannot fail.
                let _ = all.merge(&p.latency);
            }
            let ns = all.to_ns(clock);
            OrderRun {
                latency: ns.percentiles(),
                histogram: ns,
                repeats: v.iter().map(|p| p.latency.to_ns(clock)).collect(),
                orders_per_s: median(
                    v.iter()
                        .map(|p| p.latency.count() as f64 / (clock.ticks_to_ns_f64(p.total) / 1e9)),
                ),
            }
        };
        let cost = clock.read_cost();
        let mut runs_ms: Vec<(&'static str, &'static str, Vec<f64>)> = vec![
            ("arena", "malloc", arena.iter().map(|a| ms(a.0)).collect()),
            ("arena", "arena", arena.iter().map(|a| ms(a.1)).collect()),
            (
                "typed_pool",
                "box",
                typed.iter().map(|t| ms(t.boxed)).collect(),
            ),
            (
                "typed_pool",
                "pool_fresh",
                typed.iter().map(|t| ms(t.pool_fresh)).collect(),
            ),
            (
                "typed_pool",
                "pool_warm",
                typed.iter().map(|t| ms(t.pool_warm)).collect(),
            ),
        ];
        for (w, v) in Shared::ALL.iter().zip(&shared) {
            runs_ms.push(("many_threads", w.name(), v.iter().map(|&t| ms(t)).collect()));
        }
        let pairs = |v: &[(u64, u64)]| -> Vec<(f64, f64)> {
            v.iter().map(|&(a, b)| (ms(a), ms(b))).collect()
        };
        let lessons_ms = (pairs(&lessons.sharing), pairs(&lessons.general));
        // One figure a kept repeat: the false-sharing pair, and the median of each
        // repeat's glibc / jemalloc pairs (`GENERAL_PAIRS`; the claim reads every pair).
        let per_repeat = |v: &[(f64, f64)], k: usize| -> Vec<(f64, f64)> {
            v.chunks(k.max(1))
                .map(|c| (median(c.iter().map(|x| x.0)), median(c.iter().map(|x| x.1))))
                .collect()
        };
        for (part, names, v) in [
            ("false_sharing", ["packed", "padded"], lessons_ms.0.clone()),
            (
                "general_allocator",
                ["glibc", "jemalloc"],
                per_repeat(&lessons_ms.1, super::GENERAL_PAIRS),
            ),
        ] {
            runs_ms.push((part, names[0], v.iter().map(|x| x.0).collect()));
            runs_ms.push((part, names[1], v.iter().map(|x| x.1).collect()));
        }
        Outcome {
            runs_ms,
            memory,
            arena_ms: (
                median(arena.iter().map(|a| ms(a.0))),
                median(arena.iter().map(|a| ms(a.1))),
            ),
            typed_ms: (
                median(typed.iter().map(|t| ms(t.boxed))),
                median(typed.iter().map(|t| ms(t.pool_fresh))),
                median(typed.iter().map(|t| ms(t.pool_warm))),
            ),
            shared_ms: Shared::ALL
                .iter()
                .zip(&shared)
                .map(|(&w, v)| (w, median(v.iter().map(|&t| ms(t)))))
                .collect(),
            orders: (run(&processed[0]), run(&processed[1])),
            outliers,
            profile,
            numa,
            fragmentation: Default::default(),
            l1,
            l1_simulated: None,
            read_cost_ns: (cost.start_ns + cost.end_ns) / 2.0,
            lessons_ms,
        }
    }

    pub(super) fn shared(&self, w: Shared) -> f64 {
        self.shared_ms
            .iter()
            .find(|s| s.0 == w)
            .map(|s| s.1)
            .unwrap_or(f64::NAN)
    }

    pub(super) fn mem(&self, h: Holder) -> Option<&Memory> {
        self.memory.iter().find(|m| m.0 == h).map(|m| &m.1)
    }
}

/// The best general allocators the arena's and the typed pool's `Box` loops also run
/// on, each in a child process: (the child's allocator, the variant's name, how the
/// report names it).
pub(super) const GENERAL: [(&str, &str, &str); 2] = [
    ("mimalloc", "box_mimalloc", "mimalloc"),
    ("handoff", "box_handoff_alloc", "handoff-alloc"),
];

impl Outcome {
    /// Adds the `Box` loops under [`GENERAL`]: per kept repeat, per allocator, (arena
    /// part, typed part) wall ticks.
    pub fn set_general(&mut self, clock: &Clock, general: &[[(u64, u64); 2]]) {
        let ms = |t: u64| clock.ticks_to_ns_f64(t) / 1e6;
        for (i, &(_, name, _)) in GENERAL.iter().enumerate() {
            let arena = general.iter().map(|g| ms(g[i].0)).collect();
            let typed = general.iter().map(|g| ms(g[i].1)).collect();
            self.runs_ms.push(("arena", name, arena));
            self.runs_ms.push(("typed_pool", name, typed));
        }
    }

    /// Each kept run's ms of `name` in `part` (empty when not measured).
    pub(super) fn runs(&self, part: &str, name: &str) -> &[f64] {
        self.runs_ms
            .iter()
            .find(|(p, n, _)| *p == part && *n == name)
            .map_or(&[], |(_, _, v)| v.as_slice())
    }

    /// Per kept run, `name`'s ms over `over`'s in `part`: the two ran in the same
    /// repeat, one after the other.
    pub(super) fn per_run_ratios(&self, part: &str, name: &str, over: &str) -> Vec<f64> {
        let (a, b) = (self.runs(part, name), self.runs(part, over));
        a.iter().zip(b).map(|(x, y)| x / y).collect()
    }
}

/// Kept runs' ms of two contenders measured in alternated pairs.
pub(super) type Pairs = Vec<(f64, f64)>;

/// The raw ticks of lessons 8 and 6, one pair per kept run.
#[derive(Debug, Default)]
pub struct Lessons {
    /// False sharing: (packed, padded) wall ticks.
    pub sharing: Vec<(u64, u64)>,
    /// The order batches: (glibc, jemalloc) ticks, each in a child process, the whole
    /// loop at its median part's pace (`sharing::general`).
    pub general: Vec<(u64, u64)>,
}

pub(super) fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

pub(super) fn ratio(a: u64, b: u64) -> f64 {
    a as f64 / b.max(1) as f64
}

/// The printed tables, the claims, every contender of every part (`mode` names the
/// document's section), the profiler's and the NUMA probe's data, the charts.
impl Report<Config> for Outcome {
    fn sections(&self, cfg: &Config) -> Vec<String> {
        super::tables::sections(self, cfg)
    }

    fn claims(&self, cfg: &Config, noise: Option<&Probes>) -> Vec<Claim> {
        super::claims::claims(self, cfg, noise)
    }

    fn variants(&self, _cfg: &Config) -> Vec<Variant> {
        let mut out = Vec::new();
        for (part, name, runs) in &self.runs_ms {
            let mut v = Variant::new(name);
            v.figure(
                "ms",
                Unit::Ms,
                Better::Lower,
                median(runs.iter().copied()),
                runs.iter().copied(),
            )
            .set("mode", part);
            let outliers = self.outliers.iter().find(|(w, _)| w.name() == *name);
            if let (true, Some((_, x))) = (*part == "many_threads", outliers) {
                v.figure(
                    "ops_over_200us",
                    Unit::Count,
                    Better::Lower,
                    x.over_200us as f64,
                    x.per_run.iter().map(|&n| n as f64),
                );
            }
            out.push(v);
        }
        for (name, run) in [("malloc", &self.orders.0), ("pool", &self.orders.1)] {
            let mut v = Variant::new(name);
            for (key, x) in [
                ("p50", run.latency.p50),
                ("p99", run.latency.p99),
                ("p99.9", run.latency.p999),
            ] {
                v.figure(key, Unit::Ns, Better::Lower, x as f64, []);
            }
            v.figure(
                "orders_per_s",
                Unit::OpsPerS,
                Better::Higher,
                run.orders_per_s,
                [],
            )
            .set("mode", "orders")
            .set("latency_ns", run.latency);
            out.push(v);
        }
        for (h, mem) in &self.memory {
            let mut v = Variant::new(h.name());
            v.figure(
                "resident",
                Unit::Bytes,
                Better::Lower,
                mem.resident as f64,
                [],
            )
            .figure(
                "requested",
                Unit::Bytes,
                Better::Lower,
                mem.requested as f64,
                [],
            )
            .figure("overhead", Unit::Ratio, Better::Lower, mem.overhead(), [])
            .set("mode", "memory");
            out.push(v);
        }
        out
    }

    fn fields(&self, _cfg: &Config) -> Map<String, Value> {
        let o = self;
        let mut m = Map::new();
        m.insert(
            "ratios".into(),
            json!({
                "arena_speedup": o.arena_ms.0 / o.arena_ms.1,
                "box_over_warm_pool": o.typed_ms.0 / o.typed_ms.2,
                "box_over_fresh_pool": o.typed_ms.0 / o.typed_ms.1,
                "orders_p50_malloc_over_pool": ratio(o.orders.0.latency.p50, o.orders.1.latency.p50),
                "orders_throughput_pool_over_malloc": o.orders.1.orders_per_s / o.orders.0.orders_per_s,
            }),
        );
        let ratios = m
            .get_mut("ratios")
            .and_then(Value::as_object_mut)
            .expect("inserted above");
        for (_, name, _) in GENERAL {
            for (part, pool, key) in [
                ("arena", "arena", "arena"),
                ("typed_pool", "pool_warm", "warm_pool"),
            ] {
                if !o.runs(part, name).is_empty() {
                    ratios.insert(
                        format!("{name}_over_{key}"),
                        json!(median(o.per_run_ratios(part, name, pool))),
                    );
                }
            }
        }
        m.insert(
            "profiler_ns".into(),
            json!({ "pool": o.profile.0, "malloc": o.profile.1, "clock_read_ns": o.read_cost_ns }),
        );
        m.insert("numa".into(), json!(o.numa));
        m.insert("fragmentation".into(), json!(o.fragmentation));
        m.insert("l1_misses".into(), json!(o.l1));
        m.insert("l1_misses_simulated".into(), json!(o.l1_simulated));
        let outliers: Map<String, Value> = o
            .outliers
            .iter()
            .map(|(w, x)| (w.name().to_string(), json!(x)))
            .collect();
        m.insert("outliers_200us".into(), Value::Object(outliers));
        m
    }

    fn charts(&self, cfg: &Config) -> Result<Outputs> {
        charts(self, cfg)
    }
}

/// Bars: the typed-pool part, the multi-thread part, order-processing percentiles.
fn charts(o: &Outcome, cfg: &Config) -> Result<Outputs> {
    let mut files = Outputs::new();
    let mut add = |name: &str, title: String, y: &str, bars: Vec<(String, f64)>| -> Result<()> {
        files.chart(
            cfg.run.out.join(name),
            Chart::Bars {
                title,
                y: y.into(),
                bars,
            },
        )
    };
    add(
        "patterns-alloc.svg",
        "batches and objects vs malloc, ms".to_string(),
        "ms",
        vec![
            ("malloc ticks".into(), o.arena_ms.0),
            ("arena ticks".into(), o.arena_ms.1),
            ("Box orders".into(), o.typed_ms.0),
            ("pool orders, fresh".into(), o.typed_ms.1),
            ("pool orders, warm".into(), o.typed_ms.2),
        ],
    )?;
    add(
        "patterns-threads.svg",
        format!(
            "{} threads x {} orders, one pool",
            cfg.threads, cfg.per_thread
        ),
        "ms",
        o.shared_ms
            .iter()
            .map(|(w, t)| (w.name().to_string(), *t))
            .collect(),
    )?;
    let (m, p) = (&o.orders.0.latency, &o.orders.1.latency);
    add(
        "patterns-orders.svg",
        "order processing, ns per order".into(),
        "ns",
        vec![
            ("malloc p50".into(), m.p50 as f64),
            ("pool p50".into(), p.p50 as f64),
            ("malloc p99".into(), m.p99 as f64),
            ("pool p99".into(), p.p99 as f64),
            ("malloc p99.9".into(), m.p999 as f64),
            ("pool p99.9".into(), p.p999 as f64),
        ],
    )?;
    Ok(files)
}
