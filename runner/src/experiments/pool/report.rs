//! `runner pool`'s outputs: document 001's two tables (with the per-thread-cache
//! column), the claims, the results JSON and the charts.

use super::work::{Cell, Contender, Sample, Scenario};
use super::Config;
use crate::lab::chart::Chart;
use crate::lab::claims::Claim;
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
    pub(super) cells: Vec<Cell>,
    pub(super) samples: Vec<Vec<Sample>>,
    pub(super) classes: Classes,
    pub(super) probes: usize,
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

    pub(super) fn find(&self, s: Scenario, c: Contender) -> Option<(&Cell, &[Sample])> {
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
    pub(super) fn paired(&self, s: Scenario, a: Contender, b: Contender, free: bool) -> Vec<f64> {
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

    pub(super) fn threads(&self, c: Contender) -> usize {
        self.find(Scenario::Concurrent, c)
            .map(|(cell, _)| cell.threads)
            .unwrap_or(1)
    }
}

pub(super) fn f(v: f64) -> String {
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

/// Every contender with its median ns per operation in each scenario (and its kept
/// runs), and document 001's ratios and every raw sample.
impl Report<Config> for Outcome {
    fn sections(&self, cfg: &Config) -> Vec<String> {
        sections(self, cfg)
    }

    fn claims(&self, cfg: &Config, _noise: Option<&Probes>) -> Vec<Claim> {
        super::claims::claims(self, cfg)
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
