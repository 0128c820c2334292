//! The queue experiment's outputs: the stdout tables, the results JSON (DESIGN.md's
//! field names) and the SVG charts.

use super::{Cell, Config, Mode, Outcome};
use crate::lab::chart::{self, Series};
use crate::lab::error::{Error, Result};
use crate::lab::fmt::{mps as fmt_m, ns as fmt_ns, rate as fmt_rate};
use crate::lab::results::Outputs;
use handoff_stats::Latency;
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

fn notes(c: &Cell) -> String {
    let mut n = Vec::new();
    if c.below_target_runs() > 0 {
        n.push(format!(
            "{}/{} runs <95% of offered",
            c.below_target_runs(),
            c.runs.len()
        ));
    }
    if c.off_core_stamps() > 0 {
        n.push(format!("{} stamps off core", c.off_core_stamps()));
    }
    let (stalls, stall_ns, over) = c.stalls();
    if stalls > 0 {
        n.push(format!(
            "{stalls} consumer stalls ({}), {:.2}% of items >=10 us",
            fmt_ns(stall_ns as f64),
            100.0 * over as f64 / c.latency.count().max(1) as f64
        ));
    }
    let neg: u64 = c.runs.iter().map(|r| r.negative_latencies).sum();
    if neg > 0 {
        n.push(format!("{neg} negative latencies dropped"));
    }
    n.join("; ")
}

/// The table of one mode (headline or throughput), or of one sweep point.
pub fn table<'a>(title: &str, cells: impl Iterator<Item = &'a Cell>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{title}");
    let _ = writeln!(
        s,
        "  {:<18} {:>9} {:>9} {:>9} {:>9} {:>11} {:>11} {:>8}  notes",
        "variant", "p50", "p99", "p99.9", "max", "achieved", "throughput", "depth"
    );
    for c in cells {
        if let Some(why) = &c.unavailable {
            let _ = writeln!(s, "  {:<18} {why}", c.variant.name());
            continue;
        }
        let p = c.latency.percentiles();
        let _ = writeln!(
            s,
            "  {:<18} {:>9} {:>9} {:>9} {:>9} {:>11} {:>11} {:>8}  {}",
            c.variant.name(),
            fmt_ns(p.p50 as f64),
            fmt_ns(p.p99 as f64),
            fmt_ns(p.p999 as f64),
            fmt_ns(p.max as f64),
            fmt_m(c.achieved_hz()),
            fmt_m(c.throughput()),
            c.mean_depth()
                .map(|d| format!("{d:.2}"))
                .unwrap_or_else(|| "-".into()),
            notes(c)
        );
    }
    s
}

/// The sweep as one compact table per variant: offered rate, p50/p99/p99.9,
/// achieved rate and depth.
pub fn sweep_table(out: &Outcome, cfg: &Config) -> String {
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

fn cell_json(c: &Cell) -> Value {
    if let Some(why) = &c.unavailable {
        return json!({ "name": c.variant.name(), "mode": c.mode.name(), "unavailable": why });
    }
    let doc = c.latency.doc_percentiles();
    json!({
        "name": c.variant.name(),
        "mode": c.mode.name(),
        "latency_ns": c.latency.percentiles(),
        "latency_ns_doc_convention": doc,
        "latency_from_intended_ns": (c.latency_from_intended.count() > 0)
            .then(|| c.latency_from_intended.percentiles()),
        "offered_rate_hz": c.offered_hz,
        "achieved_rate_hz": c.achieved_hz(),
        "throughput_items_per_s": c.throughput(),
        "mean_queue_depth": c.mean_depth(),
        "samples": c.latency.count(),
        "runs": c.runs.len(),
        "items_per_run": c.items,
        "below_target_runs": c.below_target_runs(),
        "off_core_stamps": c.off_core_stamps(),
        "per_run": c.runs,
        "histogram": c.latency,
    })
}

fn sweeps_json(out: &Outcome, cfg: &Config) -> Vec<Value> {
    cfg.variants
        .iter()
        .filter_map(|&v| {
            let cells: Vec<&Cell> = out
                .of(Mode::Sweep)
                .filter(|c| c.variant == v && c.unavailable.is_none())
                .collect();
            (!cells.is_empty()).then(|| {
                let points: Vec<Value> = cells
                    .iter()
                    .map(|c| {
                        let p = c.latency.percentiles();
                        json!({
                            "x": c.offered_hz, "p50": p.p50, "p90": p.p90, "p99": p.p99,
                            "p99.9": p.p999, "max": p.max, "mean": p.mean,
                            "achieved_rate_hz": c.achieved_hz(),
                            "mean_queue_depth": c.mean_depth(),
                            "below_target_runs": c.below_target_runs(),
                            "samples": c.latency.count(),
                            "latency_ns_doc_convention": c.latency.doc_percentiles(),
                        })
                    })
                    .collect();
                json!({ "name": "load", "variant": v.name(), "x": "offered_rate_hz",
                        "unit": "ns", "points": points })
            })
        })
        .collect()
}

/// The queue's own fields of the results JSON (the lab adds the rest).
pub fn json_fields(out: &Outcome, cfg: &Config) -> Result<Map<String, Value>> {
    let variants: Vec<Value> = out
        .cells
        .iter()
        .filter(|c| c.mode != Mode::Sweep)
        .map(cell_json)
        .collect();
    let mut m = Map::new();
    m.insert(
        "config".into(),
        serde_json::to_value(cfg).map_err(|e| Error::Output(format!("results JSON: {e}")))?,
    );
    m.insert("variants".into(), variants.into());
    m.insert("sweeps".into(), sweeps_json(out, cfg).into());
    Ok(m)
}

/// Every chart of the modes that ran.
pub fn charts(out: &Outcome, cfg: &Config) -> Result<Outputs> {
    let dir = &cfg.out;
    let mut files = Outputs::new();
    let headline: Vec<&Cell> = out
        .of(Mode::Headline)
        .filter(|c| c.unavailable.is_none())
        .collect();
    if !headline.is_empty() {
        let rate = fmt_rate(cfg.rate_hz);
        let series = |points: &dyn Fn(&Latency) -> Vec<(f64, f64)>| -> Vec<Series> {
            headline
                .iter()
                .map(|c| Series {
                    name: c.variant.name().into(),
                    points: points(&c.latency),
                })
                .collect()
        };
        let ccdf = series(&|l| {
            l.ccdf()
                .iter()
                .map(|p| (p.value as f64, p.fraction))
                .collect()
        });
        let svg = chart::loglog(
            &format!("queue: latency CCDF at {rate} offered (fraction of items at or above)"),
            "enqueue -> dequeue latency (ns)",
            "fraction >= x",
            &ccdf,
        )?;
        files.add(dir.join("queue-ccdf.svg"), svg.into_bytes());
        let pdf = series(&|l| {
            l.pdf()
                .iter()
                .map(|b| ((b.lower + b.upper) as f64 / 2.0, b.fraction))
                .collect()
        });
        let svg = chart::logx(
            &format!("queue: latency PDF at {rate} offered (log2/16 buckets)"),
            "enqueue -> dequeue latency (ns)",
            "fraction of items in bucket",
            &pdf,
        )?;
        files.add(dir.join("queue-pdf.svg"), svg.into_bytes());
    }
    if out.of(Mode::Sweep).any(|c| c.unavailable.is_none()) {
        let panel = |label: &str, pick: fn(&handoff_stats::Percentiles) -> u64| {
            let series = cfg
                .variants
                .iter()
                .filter_map(|&v| {
                    let pts: Vec<(f64, f64)> = out
                        .of(Mode::Sweep)
                        .filter(|c| c.variant == v && c.unavailable.is_none())
                        .map(|c| {
                            (
                                c.offered_hz.unwrap_or(0.0),
                                pick(&c.latency.percentiles()) as f64,
                            )
                        })
                        .collect();
                    (!pts.is_empty()).then(|| Series {
                        name: v.name().into(),
                        points: pts,
                    })
                })
                .collect();
            (format!("{label} vs offered load"), series)
        };
        let svg = chart::loglog_panels(
            &[
                panel("p50", |p| p.p50),
                panel("p99", |p| p.p99),
                panel("p99.9", |p| p.p999),
            ],
            "offered rate (items/s)",
            "latency (ns)",
        )?;
        files.add(dir.join("queue-sweep.svg"), svg.into_bytes());
    }
    let tp: Vec<(String, f64)> = out
        .of(Mode::Throughput)
        .filter(|c| c.unavailable.is_none())
        .filter_map(|c| Some((c.variant.name().to_string(), c.throughput()? / 1e6)))
        .collect();
    if !tp.is_empty() {
        let svg = chart::bars(
            "queue: saturated throughput (median of runs)",
            "M items/s",
            &tp,
        )?;
        files.add(dir.join("queue-throughput.svg"), svg.into_bytes());
    }
    Ok(files)
}
