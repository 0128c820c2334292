//! `runner alloc`'s report: the table, the claims, the contenders and sweeps of the
//! results JSON and the charts, from every contender's samples.

use super::args::MIB;
use super::{Config, Contender, Sample};
use crate::lab::chart::{Chart, Series};
use crate::lab::claims::{holds, near, Claim, Verdict};
use crate::lab::error::Result;
use crate::lab::experiment::Report;
use crate::lab::measure::median_or_nan as median;
use crate::lab::noise::Probes;
use crate::lab::results::Outputs;
use crate::lab::schema::{Better, Sweep, Unit, Variant};
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

/// Where the cross-thread target stands beside the document.
const CROSS_THREAD_WHERE: &str =
    "project target beside Task definition (\"We do NOT need our allocator to be multi-threaded\")";

/// Every contender's samples, in `Contender::ALL` order.
pub struct Outcome {
    pub samples: Vec<Vec<Sample>>,
}

impl Outcome {
    fn of(&self, c: Contender) -> &[Sample] {
        let i = Contender::ALL.iter().position(|&x| x == c).unwrap_or(0);
        &self.samples[i]
    }
    fn seconds(&self, c: Contender) -> f64 {
        median(self.of(c).iter().map(|s| s.seconds))
    }
    /// The median over the repeats of `c`'s time over handoff-alloc's in the same
    /// repeat: each pair ran back to back, so a change of the machine's load between
    /// repeats moves both.
    fn paired_speedup(&self, c: Contender) -> f64 {
        median(
            self.of(c)
                .iter()
                .zip(self.of(Contender::Handoff))
                .map(|(o, h)| o.seconds / h.seconds),
        )
    }
    fn ns(&self, c: Contender) -> f64 {
        median(self.of(c).iter().map(|s| s.ns_per_pair))
    }
    /// Peak resident memory over peak requested bytes.
    fn overhead(&self, c: Contender) -> f64 {
        median(
            self.of(c)
                .iter()
                .map(|s| s.peak_resident as f64 / s.peak_requested.max(1) as f64),
        )
    }
    fn resident_mib(&self, c: Contender) -> f64 {
        median(
            self.of(c)
                .iter()
                .map(|s| s.peak_resident as f64 / MIB as f64),
        )
    }
    /// ns per pair beyond the test's own cost (the no-allocator baseline's): the
    /// allocator's share, as the document's test reports it.
    fn net(&self, c: Contender) -> f64 {
        self.ns(c) - self.ns(Contender::Void)
    }
    fn sweep(&self, c: Contender) -> &[(usize, f64)] {
        self.of(c).first().map_or(&[], |s| s.sweep.as_slice())
    }
    /// The sweep less the baseline's ticks at the same working set.
    fn net_sweep(&self, c: Contender) -> Vec<(usize, f64)> {
        let base = self.sweep(Contender::Void);
        self.sweep(c)
            .iter()
            .map(|&(ws, t)| {
                let b = base.iter().find(|p| p.0 == ws).map_or(f64::NAN, |p| p.1);
                (ws, t - b)
            })
            .collect()
    }
    /// The producer/consumer rate: the median of the repeats.
    fn handoff(&self, c: Contender) -> f64 {
        median(self.of(c).iter().filter_map(|s| s.handoff_per_s))
    }

    fn table(&self, cfg: &Config) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "document 004's test: {} MiB requested live, {} replacements, {} thread(s), medians of {} repeats",
            cfg.working_set / MIB,
            cfg.items,
            cfg.threads,
            cfg.run.runs
        );
        let _ = writeln!(
            s,
            "  {:<14} {:>8} {:>12} {:>10} {:>13} {:>16} {:>17}",
            "allocator",
            "time s",
            "ns per pair",
            "less test",
            "peak RSS MiB",
            "RSS / requested",
            "cross-thread M/s"
        );
        let opt = |v: f64, prec: usize| {
            if v.is_finite() {
                format!("{v:.prec$}")
            } else {
                "-".to_string()
            }
        };
        for c in Contender::ALL {
            let real = c != Contender::Void;
            let _ = writeln!(
                s,
                "  {:<14} {:>8.2} {:>12.1} {:>10} {:>13} {:>16} {:>17}",
                c.name(),
                self.seconds(c),
                self.ns(c),
                if real {
                    opt(self.net(c), 1)
                } else {
                    "-".into()
                },
                if real {
                    opt(self.resident_mib(c), 1)
                } else {
                    "-".into()
                },
                if real {
                    opt(self.overhead(c), 3)
                } else {
                    "-".into()
                },
                opt(self.handoff(c) / 1e6, 2)
            );
        }
        let _ = writeln!(
            s,
            "  (no allocator: the test's own cost, every block one buffer that stays in cache; \
             less test: ns per pair beyond it, the allocator's share)"
        );
        if !cfg.sweep.is_empty() {
            let _ = writeln!(
                s,
                "\nTSC ticks per pair as the working set grows ({} replacements each; in brackets, less the test's own)",
                cfg.sweep_items
            );
            let _ = write!(s, "  {:<8}", "MiB");
            for c in Contender::ALL {
                let _ = write!(s, " {:>20}", c.name());
            }
            let _ = writeln!(s);
            for (k, ws) in cfg.sweep.iter().enumerate() {
                let _ = write!(s, "  {:<8}", ws / MIB);
                for c in Contender::ALL {
                    let v = self.sweep(c).get(k).map_or(f64::NAN, |p| p.1);
                    if c == Contender::Void {
                        let _ = write!(s, " {v:>20.1}");
                    } else {
                        let n = self.net_sweep(c).get(k).map_or(f64::NAN, |p| p.1);
                        let _ = write!(s, " {:>20}", format!("{v:.1} ({n:.1})"));
                    }
                }
                let _ = writeln!(s);
            }
        }
        s
    }

    fn claims(&self, cfg: &Config) -> Vec<Claim> {
        let h = Contender::Handoff;
        let others = [Contender::System, Contender::Mimalloc, Contender::Jemalloc];
        // Time to finish the test, the test's own work included.
        let speedup = |c: Contender| self.seconds(c) / self.seconds(h);
        // The allocator's share of a pair, the test's own cost taken off (the
        // document's test measures that cost with a void allocator and subtracts it).
        let net_speedup = |c: Contender| self.net(c) / self.net(h);
        let min_net = others
            .iter()
            .map(|&c| net_speedup(c))
            .fold(f64::INFINITY, f64::min);
        let list = |f: &dyn Fn(Contender) -> f64| {
            others
                .iter()
                .map(|&c| format!("{} {:.2}x", c.name(), f(c)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut claims = Vec::new();
        let small = self.net_sweep(h).first().copied();
        let gross = self.sweep(h).first().map_or(f64::NAN, |p| p.1);
        claims.push(match small {
            Some((ws, ticks)) => Claim::new(
                "pair_cycles_small_ws",
                "a malloc/free pair costs about 15 CPU cycles at single-digit-MB working sets",
                "15 cycles",
                format!(
                    "{ticks:.1} TSC ticks at {} MiB beyond the test's own ({gross:.1} in all)",
                    ws / MIB
                ),
                near(ticks, 15.0),
            )
            .at("Test results, Figure 3"),
            None => Claim::new(
                "pair_cycles_small_ws",
                "a malloc/free pair costs about 15 CPU cycles at single-digit-MB working sets",
                "15 cycles",
                "-",
                (
                    Verdict::NotMeasured,
                    "the sweep was not run (--sweep-max-mib 0)".into(),
                ),
            )
            .at("Test results, Figure 3"),
        });
        claims.push(Claim::new(
            "faster_than_every_general_allocator",
            "the allocator runs the test at least 1.5x faster than every general-purpose allocator",
            ">= 1.5x",
            format!(
                "less the test's own cost: {}; in all: {}",
                list(&net_speedup),
                list(&speedup)
            ),
            holds(
                min_net >= 1.5,
                "the smallest ratio of time beyond the test's own cost (the document's convention) is at least 1.5",
            ),
        ).at("Test results, Figure 1"));
        let mem = self.overhead(h) / self.overhead(Contender::Jemalloc);
        claims.push(
            Claim::new(
                "memory_on_par_with_jemalloc",
                "memory overhead on par with jemalloc's, the best of the general allocators",
                "on par",
                format!(
                    "peak RSS / requested: handoff-alloc {:.3}, jemalloc {:.3} ({mem:.2}x)",
                    self.overhead(h),
                    self.overhead(Contender::Jemalloc)
                ),
                holds(
                    mem <= 1.2,
                    "handoff-alloc's overhead is at most 1.2x jemalloc's",
                ),
            )
            .at("Test results, Figure 2"),
        );
        let target = speedup(Contender::Mimalloc).min(speedup(Contender::Jemalloc));
        claims.push(Claim::new(
            "project_target_single_thread",
            "project target: at least 1.3x faster than mimalloc and jemalloc, peak RSS at most 1.2x jemalloc's",
            "(ours, not the document's)",
            format!(
                "time to finish: {} (median of the repeats' own ratios: {}); memory {mem:.2}x jemalloc",
                list(&speedup),
                list(&|c| self.paired_speedup(c))
            ),
            holds(
                target >= 1.3 && mem <= 1.2,
                "both ratios of the time to finish the test, its own work included, at least 1.3, and the memory ratio at most 1.2",
            ),
        ).at("project target beside Test results, Figures 1 and 2"));
        let x = self.handoff(h) / self.handoff(Contender::Mimalloc);
        claims.push(if cfg.handoff_items > 0 {
            Claim::new(
                "cross_thread_frees",
                "project target: one thread allocates, another frees; at least as fast as mimalloc",
                "(ours, not the document's: its allocator is single-threaded)",
                format!(
                    "{:.2} M/s vs mimalloc {:.2} M/s ({x:.2}x)",
                    self.handoff(h) / 1e6,
                    self.handoff(Contender::Mimalloc) / 1e6
                ),
                holds(x >= 1.0, "handoff-alloc's rate at least mimalloc's"),
            )
            .at(CROSS_THREAD_WHERE)
        } else {
            Claim::new(
                "cross_thread_frees",
                "project target: one thread allocates, another frees; at least as fast as mimalloc",
                "(ours)",
                "-",
                (Verdict::NotMeasured, "--handoff-items 0".into()),
            )
            .at(CROSS_THREAD_WHERE)
        });
        claims
    }

    /// Every contender with its time, ns per pair, memory and cross-thread rate, each
    /// with its value in every run.
    fn contenders(&self) -> Vec<Variant> {
        Contender::ALL
            .iter()
            .map(|&c| {
                let each = self.of(c);
                let mut v = Variant::new(c.name());
                v.figure(
                    "seconds",
                    Unit::Seconds,
                    Better::Lower,
                    self.seconds(c),
                    each.iter().map(|s| s.seconds),
                )
                .figure(
                    "ns_per_pair",
                    Unit::Ns,
                    Better::Lower,
                    self.ns(c),
                    each.iter().map(|s| s.ns_per_pair),
                )
                .figure(
                    "ns_per_pair_less_test",
                    Unit::Ns,
                    Better::Lower,
                    self.net(c),
                    [],
                )
                .figure(
                    "peak_resident",
                    Unit::Bytes,
                    Better::Lower,
                    self.resident_mib(c) * MIB as f64,
                    each.iter().map(|s| s.peak_resident as f64),
                )
                .figure(
                    "resident_over_requested",
                    Unit::Ratio,
                    Better::Lower,
                    self.overhead(c),
                    each.iter()
                        .map(|s| s.peak_resident as f64 / s.peak_requested.max(1) as f64),
                )
                .figure(
                    "cross_thread_rate",
                    Unit::ItemsPerS,
                    Better::Higher,
                    self.handoff(c),
                    each.iter().filter_map(|s| s.handoff_per_s),
                )
                .set("runs", each.len());
                v
            })
            .collect()
    }

    /// Ticks per pair at each working set of the sweep, in all and less the test's own.
    fn sweeps(&self) -> Vec<Sweep> {
        Contender::ALL
            .iter()
            .filter(|&&c| !self.sweep(c).is_empty())
            .map(|&c| Sweep {
                name: "working_set",
                variant: c.name().into(),
                x: "working_set_bytes",
                x_unit: Unit::Bytes.as_str(),
                unit: Unit::Ticks.as_str(),
                points: self
                    .sweep(c)
                    .iter()
                    .zip(self.net_sweep(c))
                    .map(|(&(x, t), (_, n))| json!({"x": x, "ticks_per_pair": t, "ticks_per_pair_less_test": n}))
                    .collect(),
            })
            .collect()
    }

    /// The ratios the claims read, by name.
    fn ratios(&self) -> Map<String, Value> {
        let h = Contender::Handoff;
        let mut ratios = Map::new();
        for c in [Contender::System, Contender::Mimalloc, Contender::Jemalloc] {
            ratios.insert(
                format!("{}_over_handoff_time", c.name()),
                json!(self.seconds(c) / self.seconds(h)),
            );
            ratios.insert(
                format!("{}_over_handoff_time_paired", c.name()),
                json!(self.paired_speedup(c)),
            );
            ratios.insert(
                format!("{}_over_handoff_pair_less_test", c.name()),
                json!(self.net(c) / self.net(h)),
            );
            ratios.insert(
                format!("handoff_over_{}_resident", c.name()),
                json!(self.overhead(h) / self.overhead(c)),
            );
        }
        ratios
    }

    fn charts(&self, cfg: &Config) -> Result<Outputs> {
        let mut files = Outputs::new();
        let bars = |f: &dyn Fn(Contender) -> f64| -> Vec<(String, f64)> {
            Contender::ALL
                .iter()
                .map(|&c| (c.name().to_string(), f(c)))
                .filter(|b| b.1.is_finite())
                .collect()
        };
        files.chart(
            cfg.run.out.join("alloc-time.svg"),
            Chart::Bars {
                title: "document 004's test: time (Figure 1)".into(),
                y: "seconds".into(),
                bars: bars(&|c| self.seconds(c)),
            },
        )?;
        files.chart(
            cfg.run.out.join("alloc-memory.svg"),
            Chart::Bars {
                title: "peak resident memory / peak requested bytes (Figure 2)".into(),
                y: "ratio".into(),
                bars: bars(&|c| {
                    if c == Contender::Void {
                        f64::NAN
                    } else {
                        self.overhead(c)
                    }
                }),
            },
        )?;
        if !cfg.sweep.is_empty() {
            let series: Vec<Series> = Contender::ALLOCATORS
                .iter()
                .map(|&c| Series {
                    name: c.name().to_string(),
                    points: self
                        .net_sweep(c)
                        .iter()
                        .filter(|p| p.1 > 0.0)
                        .map(|&(x, t)| (x as f64 / MIB as f64, t))
                        .collect(),
                })
                .collect();
            files.chart(
                cfg.run.out.join("alloc-working-set.svg"),
                Chart::LogLog {
                    title: "TSC ticks per alloc/free pair beyond the test's own, by working set (Figure 3)".into(),
                    x: "working set, MiB".into(),
                    y: "ticks per pair".into(),
                    series,
                },
            )?;
        }
        Ok(files)
    }
}

/// The table, the claims, every contender's figures, the working-set sweeps, the ratios
/// the claims read, the charts.
impl Report<Config> for Outcome {
    fn sections(&self, cfg: &Config) -> Vec<String> {
        vec![self.table(cfg)]
    }

    fn claims(&self, cfg: &Config, _noise: Option<&Probes>) -> Vec<Claim> {
        Outcome::claims(self, cfg)
    }

    fn variants(&self, _cfg: &Config) -> Vec<Variant> {
        self.contenders()
    }

    fn sweeps(&self, _cfg: &Config) -> Vec<Sweep> {
        Outcome::sweeps(self)
    }

    fn fields(&self, _cfg: &Config) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("ratios".into(), Value::Object(self.ratios()));
        m
    }

    fn charts(&self, cfg: &Config) -> Result<Outputs> {
        Outcome::charts(self, cfg)
    }
}
