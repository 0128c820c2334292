//! The queue experiment's outputs: the stdout tables, its contenders and sweeps for the
//! results JSON (`lab::schema`) and the SVG charts.

use super::work;
use super::{Cell, Config, Mode};
use crate::lab::chart::Series;
use crate::lab::claims::Claim;
use crate::lab::error::Result;
use crate::lab::experiment::Report;
use crate::lab::fmt::{mps as fmt_m, ns as fmt_ns, rate as fmt_rate};
use crate::lab::measure;
use crate::lab::noise::Probes;
use crate::lab::paced;
use crate::lab::placed::Placements;
use crate::lab::results::Outputs;
use crate::lab::schema::{Sweep, Unit, Variant};
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// All cells of one invocation, in the order they were planned, and the placements of
/// the two cores the probes between slices found.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Cells.
    pub cells: Vec<Cell>,
    /// The placements of the producer's and the consumer's cores.
    pub placements: Placements,
}

impl Outcome {
    /// Cells of one mode.
    pub fn of(&self, mode: Mode) -> impl Iterator<Item = &Cell> {
        self.cells.iter().filter(move |c| c.mode == mode)
    }

    /// The first runnable cell of (mode, variant) (headline and throughput have one each).
    pub fn find(&self, mode: Mode, v: work::Variant) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.mode == mode && c.variant == v && c.unavailable.is_none())
    }
}

/// The sweep as one compact table per variant: offered rate, p50/p99/p99.9,
/// achieved rate and depth.
fn sweep_table(out: &Outcome, cfg: &Config) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "sweep: twelve offered rates, 100 kHz to 50 MHz");
    for &v in &cfg.variants {
        let cells: Vec<&Cell> = out.of(Mode::Sweep).filter(|c| c.variant == v).collect();
        if let Some(why) = cells.first().and_then(|c| c.unavailable.as_ref()) {
            let _ = writeln!(s, "  {:<18} {why}", v.name());
            continue;
        }
        let _ = writeln!(
            s,
            "  {:<18} {:>10} {:>9} {:>9} {:>9} {:>11} {:>8}",
            v.name(),
            "offered",
            "p50",
            "p99",
            "p99.9",
            "achieved",
            "depth"
        );
        for c in cells {
            let p = c.latency.percentiles();
            let _ = writeln!(
                s,
                "  {:<18} {:>10} {:>9} {:>9} {:>9} {:>11} {:>8}{}",
                "",
                fmt_rate(c.offered_hz.unwrap_or(0.0)),
                fmt_ns(p.p50 as f64),
                fmt_ns(p.p99 as f64),
                fmt_ns(p.p999 as f64),
                fmt_m(c.achieved_hz()),
                c.mean_depth()
                    .map(|d| format!("{d:.1}"))
                    .unwrap_or_else(|| "-".into()),
                if c.below_target_runs() > 0 {
                    "  <95%"
                } else {
                    ""
                }
            );
        }
    }
    s
}

/// The tables of the modes that ran, the claims, the headline and throughput cells as
/// the contenders (one entry per variant and mode), the load sweeps, the charts.
impl Report<Config> for Outcome {
    fn sections(&self, cfg: &Config) -> Vec<String> {
        let mut v: Vec<String> = cfg.modes
            .iter()
            .map(|&mode| match mode {
                Mode::Headline => measure::table(
                    &format!(
                        "headline: paced at {}, {} runs x {} items, capacity {}, latency = producer stamp before push -> consumer stamp after pop",
                        fmt_rate(cfg.rate_hz), cfg.run.runs, cfg.items, cfg.capacity
                    ),
                    self.of(Mode::Headline).map(Cell::row),
                ),
                Mode::Sweep => sweep_table(self, cfg),
                Mode::Throughput => measure::table(
                    &format!("throughput: unpaced, {} runs x {} items, capacity {} (medians of runs)", cfg.run.runs, cfg.items, cfg.capacity),
                    self.of(Mode::Throughput).map(Cell::row),
                ),
                Mode::Burst => measure::table(
                    &format!(
                        "burst: {} items back to back, {} bursts a second ({} items/s offered), {} runs x {} bursts, capacity {}; latency of every item of every burst = producer stamp before push -> consumer stamp after pop",
                        cfg.burst_size, fmt_rate(cfg.burst_rate_hz), fmt_rate(cfg.burst_rate_hz * cfg.burst_size as f64), cfg.run.runs, cfg.bursts, cfg.capacity
                    ),
                    self.of(Mode::Burst).map(Cell::row),
                ),
            })
            .collect();
        v.push(paced::placement_section(&self.placements, &self.cells));
        v.retain(|s| !s.is_empty());
        v
    }

    fn claims(&self, cfg: &Config, noise: Option<&Probes>) -> Vec<Claim> {
        super::claims::claims(self, cfg, noise)
    }

    fn variants(&self, _cfg: &Config) -> Vec<Variant> {
        paced::variants(&self.cells, |c, v| {
            v.set("placements", self.placements.of(&c.measured));
        })
    }

    fn fields(&self, _cfg: &Config) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("placements".into(), self.placements.json());
        m
    }

    fn sweeps(&self, cfg: &Config) -> Vec<Sweep> {
        cfg.variants
            .iter()
            .filter_map(|&v| {
                let cells: Vec<&Cell> = self
                    .of(Mode::Sweep)
                    .filter(|c| c.variant == v && c.unavailable.is_none())
                    .collect();
                (!cells.is_empty()).then(|| {
                    measure::sweep(
                        "load",
                        v.name(),
                        "offered_rate_hz",
                        Unit::ItemsPerS,
                        cells
                            .iter()
                            .map(|c| (c.offered_hz.unwrap_or(0.0), &c.measured)),
                    )
                })
            })
            .collect()
    }

    fn charts(&self, cfg: &Config) -> Result<Outputs> {
        charts(self, cfg)
    }
}

/// Every chart of the modes that ran.
fn charts(out: &Outcome, cfg: &Config) -> Result<Outputs> {
    let series = |pick: fn(&handoff_stats::Percentiles) -> u64| -> Vec<Series> {
        cfg.variants
            .iter()
            .filter_map(|&v| {
                let pts: Vec<(f64, f64)> = out
                    .of(Mode::Sweep)
                    .filter(|c| c.variant == v && c.ran())
                    .map(|c| {
                        let p = pick(&c.latency.percentiles());
                        (c.offered_hz.unwrap_or(0.0), p as f64)
                    })
                    .collect();
                (!pts.is_empty()).then(|| Series {
                    name: v.name().into(),
                    points: pts,
                })
            })
            .collect()
    };
    let what = paced::Charts {
        stem: "queue",
        latency: "enqueue -> dequeue latency (ns)",
        headline_title: format!("queue at {} offered", fmt_rate(cfg.rate_hz)),
        sweep: Some(paced::Sweep {
            title: "vs offered load",
            x: "offered rate (items/s)",
            series: &series,
        }),
        throughput: ("queue: saturated throughput (median of runs)", "M items/s"),
    };
    paced::charts(&cfg.run.out, &out.cells, &what)
}
