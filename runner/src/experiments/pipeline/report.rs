//! The pipeline's outputs: the stdout tables, its contenders and sweeps for the results
//! JSON (`lab::schema`) and the SVG charts.

use super::work;
use super::{Cell, Config, Mode};
use crate::lab::chart::Series;
use crate::lab::claims::Claim;
use crate::lab::error::Result;
use crate::lab::experiment::Report;
use crate::lab::fmt::{self, ns as fmt_ns};
use crate::lab::measure;
use crate::lab::noise::Probes;
use crate::lab::paced;
use crate::lab::placed::Placements;
use crate::lab::results::Outputs;
use crate::lab::schema::{Better, Sweep, Unit, Variant};
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

/// All cells of one invocation, and the placements of the two cores the probes between
/// slices found.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Cells, in plan order.
    pub cells: Vec<Cell>,
    /// The calibrated risk-check setting.
    pub risk_rounds: u32,
    /// Its measured cost, ns per order.
    pub check_ns: f64,
    /// The placements of the producer's and the consumer's cores.
    pub placements: Placements,
    /// The cross-L3 headline run beside this one, where the machine has a second L3
    /// group (`Settings::cross_consumer`).
    pub cross: Option<Box<Cross>>,
}

/// The headline once more with the consumer in another L3 group: its configuration
/// (the headline alone, `cross_l3` set) and what it measured.
#[derive(Debug)]
pub struct Cross {
    /// Its configuration.
    pub cfg: Config,
    /// Its cells and placements.
    pub out: Outcome,
}

impl Outcome {
    /// Cells of one mode.
    pub fn of(&self, mode: Mode) -> impl Iterator<Item = &Cell> {
        self.cells.iter().filter(move |c| c.mode == mode)
    }

    /// The headline or throughput cell of a variant.
    pub fn find(&self, mode: Mode, v: work::Variant) -> Option<&Cell> {
        self.cells.iter().find(|c| c.mode == mode && c.variant == v)
    }

    /// A variant's sweep cells, the no-background point first.
    pub fn sweep_of(&self, v: work::Variant) -> Vec<&Cell> {
        self.of(Mode::Sweep).filter(|c| c.variant == v).collect()
    }
}

fn bg_text(c: &Cell) -> String {
    match c.extra.bg_rate_hz {
        None => "no background".into(),
        Some(r) => format!(
            "background {} x {} asked, {} achieved",
            c.extra.bg_threads,
            fmt::ops(r),
            c.bg_achieved_hz()
                .map(fmt::ops)
                .unwrap_or_else(|| "-".into())
        ),
    }
}

/// The allocation and consumer-service costs of a mode's cells.
fn costs(cells: &[&Cell]) -> String {
    let mut s = String::from(
        "  costs per order (p50 / p99): allocation on the producer; check + free on the consumer\n",
    );
    for c in cells {
        let (a, sv) = (
            c.extra.alloc_ns.percentiles(),
            c.extra.service_ns.percentiles(),
        );
        let _ = writeln!(
            s,
            "  {:<22} alloc {:>7} / {:>7}   check+free {:>7} / {:>7}{}",
            c.variant.name(),
            fmt_ns(a.p50 as f64),
            fmt_ns(a.p99 as f64),
            fmt_ns(sv.p50 as f64),
            fmt_ns(sv.p99 as f64),
            if c.extra.exhausted > 0 {
                format!("   pool exhausted {} times (retried)", c.extra.exhausted)
            } else {
                String::new()
            }
        );
    }
    s
}

/// Every table, in mode order.
fn sections(out: &Outcome, cfg: &Config) -> Vec<String> {
    let mut v = Vec::new();
    for &mode in &cfg.modes {
        match mode {
            Mode::Headline | Mode::Throughput | Mode::Burst => {
                let cells: Vec<&Cell> = out.of(mode).collect();
                let Some(first) = cells.first() else { continue };
                let title = if mode == Mode::Headline {
                    format!(
                        "headline: paced at {}, {} runs x {} orders, {}; latency = create stamp (after allocation) -> dequeue stamp",
                        fmt::rate(cfg.rate_hz), cfg.run.runs, cfg.items, bg_text(first)
                    )
                } else {
                    format!(
                        "throughput: unpaced, {} runs x {} orders, {} (medians of runs)",
                        cfg.run.runs,
                        cfg.items,
                        bg_text(first)
                    )
                };
                let mut s = measure::table(&title, cells.iter().map(|c| c.row()));
                s.push_str(&costs(&cells));
                v.push(s);
            }
            Mode::Sweep => v.push(sweep_table(out, cfg)),
        }
    }
    v.push(paced::placement_section(&out.placements, &out.cells));
    if let Some(x) = &out.cross {
        v.push(format!(
            "across L3 groups (the document's cross-CCX side note): the headline again with the consumer on core {} and the producer on core {}, in two L3 groups",
            x.cfg.placement.consumer(),
            x.cfg.placement.producer()
        ));
        v.extend(sections(&x.out, &x.cfg));
    }
    v.retain(|s| !s.is_empty());
    v
}

fn sweep_table(out: &Outcome, cfg: &Config) -> String {
    let mut s = format!(
        "sweep: background pressure at {} offered, {} orders per point; no background, then 8 rates from 100 k/s to 10 M/s{}\n",
        fmt::rate(cfg.rate_hz),
        cfg.items,
        if cfg.bg_shares_core {
            " (the background thread shares a measured core here: this measures that sharing)"
        } else {
            ""
        }
    );
    for &v in &cfg.variants {
        let _ = writeln!(
            s,
            "  {:<22} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9}",
            v.name(),
            "background",
            "achieved",
            "p50",
            "p99",
            "p99.9",
            "max"
        );
        for c in out.sweep_of(v) {
            let p = c.latency.percentiles();
            let _ = writeln!(
                s,
                "  {:<22} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9}{}",
                "",
                c.extra
                    .bg_rate_hz
                    .map(fmt::ops)
                    .unwrap_or_else(|| "none".into()),
                c.bg_achieved_hz()
                    .map(fmt::ops)
                    .unwrap_or_else(|| "-".into()),
                fmt_ns(p.p50 as f64),
                fmt_ns(p.p99 as f64),
                fmt_ns(p.p999 as f64),
                fmt_ns(p.max as f64),
                if c.below_target_runs() > 0 {
                    "  <95% of offered"
                } else {
                    ""
                }
            );
        }
    }
    s
}

/// The tables, the claims, the headline and throughput cells as the contenders (one
/// entry per variant and mode, with the allocation and check+free costs), the
/// background sweeps, the risk-check calibration and the charts.
impl Report<Config> for Outcome {
    fn sections(&self, cfg: &Config) -> Vec<String> {
        sections(self, cfg)
    }

    fn claims(&self, cfg: &Config, noise: Option<&Probes>) -> Vec<Claim> {
        super::claims::claims(self, cfg, noise)
    }

    fn variants(&self, _cfg: &Config) -> Vec<Variant> {
        paced::variants(&self.cells, |c, v| {
            let load = &c.extra;
            let (a, sv) = (load.alloc_ns.percentiles(), load.service_ns.percentiles());
            v.figure("alloc_p50", Unit::Ns, Better::Lower, a.p50 as f64, [])
                .figure("check_free_p50", Unit::Ns, Better::Lower, sv.p50 as f64, [])
                .set("alloc_ns", a)
                .set("check_and_free_ns", sv)
                .set("bg_rate_ops_per_s", load.bg_rate_hz)
                .set("bg_threads", load.bg_threads)
                .set("bg_achieved_ops_per_s", c.bg_achieved_hz())
                .set("pool_exhausted", load.exhausted)
                .set("placements", self.placements.of(&c.measured));
        })
    }

    fn sweeps(&self, cfg: &Config) -> Vec<Sweep> {
        cfg.variants
            .iter()
            .filter_map(|&v| {
                let cells = self.sweep_of(v);
                (!cells.is_empty()).then(|| Sweep {
                    name: "background",
                    variant: v.name().into(),
                    x: "bg_rate_ops_per_s",
                    x_unit: Unit::OpsPerS.as_str(),
                    unit: Unit::Ns.as_str(),
                    points: cells
                        .iter()
                        .map(|c| {
                            // x 0: no background thread at all.
                            let mut p = c.sweep_point(Some(c.extra.bg_rate_hz.unwrap_or(0.0)));
                            p["background"] = c.extra.bg_rate_hz.is_some().into();
                            p["bg_achieved_ops_per_s"] = json!(c.bg_achieved_hz());
                            p
                        })
                        .collect(),
                })
            })
            .collect()
    }

    fn fields(&self, _cfg: &Config) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("placements".into(), self.placements.json());
        if let Some(x) = &self.cross {
            m.insert(
                "cross_l3".into(),
                json!({
                    "producer": x.cfg.placement.producer(),
                    "consumer": x.cfg.placement.consumer(),
                    "variants": x.out.variants(&x.cfg).into_iter().map(Variant::into_value).collect::<Vec<_>>(),
                    "placements": x.out.placements.json(),
                }),
            );
        }
        m.insert(
            "risk_check".into(),
            json!({
                "rounds": self.risk_rounds,
                "ns": self.check_ns,
                "order_bytes": std::mem::size_of::<super::order::Order>(),
            }),
        );
        m
    }

    fn charts(&self, cfg: &Config) -> Result<Outputs> {
        charts(self, cfg)
    }
}

/// Every chart of the modes that ran; the sweep draws each variant's no-background
/// value as a flat reference line.
fn charts(out: &Outcome, cfg: &Config) -> Result<Outputs> {
    let series = |pick: fn(&handoff_stats::Percentiles) -> u64| -> Vec<Series> {
        let mut series = Vec::new();
        for &v in &cfg.variants {
            let cells = out.sweep_of(v);
            let pts: Vec<(f64, f64)> = cells
                .iter()
                .filter_map(|c| Some((c.extra.bg_rate_hz?, pick(&c.latency.percentiles()) as f64)))
                .collect();
            if pts.is_empty() {
                continue;
            }
            if let Some(base) = cells.iter().find(|c| c.extra.bg_rate_hz.is_none()) {
                let y = pick(&base.latency.percentiles()) as f64;
                let (lo, hi) = (pts[0].0, pts[pts.len() - 1].0);
                series.push(Series {
                    name: format!("{} (no background)", v.name()),
                    points: vec![(lo, y), (hi, y)],
                });
            }
            series.push(Series {
                name: v.name().into(),
                points: pts,
            });
        }
        series
    };
    let what = paced::Charts {
        stem: "pipeline",
        latency: "create -> dequeue latency (ns)",
        headline_title: format!("pipeline at {} offered", fmt::rate(cfg.rate_hz)),
        sweep: Some(paced::Sweep {
            title: "vs background pressure",
            x: "background heap operations per second",
            series: &series,
        }),
        throughput: (
            "pipeline: unpaced orders per second (median of runs)",
            "M orders/s",
        ),
    };
    paced::charts(&cfg.run.out, &out.cells, &what)
}
