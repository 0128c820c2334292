//! `runner alloc`'s report: the table, the contenders and sweeps of the
//! results JSON and the charts, from every contender's samples.

use super::args::MIB;
use super::work::SlowPath;
use super::{Config, Contender, Sample};
use crate::lab::chart::{Chart, Series};
use crate::lab::claims::Claim;
use crate::lab::error::Result;
use crate::lab::experiment::Report;
use crate::lab::measure::median_or_nan as median;
use crate::lab::noise::Probes;
use crate::lab::results::Outputs;
use crate::lab::schema::{Better, Sweep, Unit, Variant};
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

/// Every contender's samples, in `Contender::ALL` order (none for a contender that
/// was unavailable), and for each preloaded contender its library or why it had none.
pub struct Outcome {
    pub samples: Vec<Vec<Sample>>,
    pub libraries: Vec<(Contender, std::result::Result<String, String>)>,
}

impl Outcome {
    /// Whether `c` ran.
    pub(super) fn ran(&self, c: Contender) -> bool {
        !self.of(c).is_empty()
    }
    /// Why `c` did not run, when it did not.
    pub(super) fn unavailable(&self, c: Contender) -> Option<&str> {
        self.libraries
            .iter()
            .find(|l| l.0 == c)
            .and_then(|l| l.1.as_ref().err())
            .map(String::as_str)
    }
    /// The general allocators that ran.
    pub(super) fn general(&self) -> Vec<Contender> {
        Contender::GENERAL
            .into_iter()
            .filter(|&c| self.ran(c))
            .collect()
    }
    /// Per repeat, `a`'s ns per pair over `b`'s (both ran back to back in a repeat).
    pub(super) fn paired_ns(&self, a: Contender, b: Contender) -> Vec<f64> {
        self.of(a)
            .iter()
            .zip(self.of(b))
            .map(|(x, y)| x.ns_per_pair / y.ns_per_pair)
            .collect()
    }
    /// Every thread count measured: the main test's and the scaling run's, in order.
    pub(super) fn thread_counts(&self, cfg: &Config) -> Vec<usize> {
        let mut t: Vec<usize> = cfg.scaling.clone();
        t.push(cfg.threads);
        t.sort_unstable();
        t.dedup();
        t
    }
    /// `c`'s ns per pair per thread (`seconds` false) or seconds on `t` threads, the
    /// median of the repeats: the main test's when `t` is its thread count, else the
    /// scaling run's.
    fn at(&self, c: Contender, t: usize, cfg: &Config, seconds: bool) -> f64 {
        median(self.of(c).iter().filter_map(|s| {
            let (secs, ns) = if t == cfg.threads {
                (s.seconds, s.ns_per_pair)
            } else {
                let p = s.scaling.iter().find(|p| p.0 == t)?;
                (p.1, p.2)
            };
            Some(if seconds { secs } else { ns })
        }))
    }
    /// `c`'s ns per pair per thread on `t` threads in each repeat (`None` where the
    /// repeat did not run that count), in the repeats' order.
    fn ns_runs(&self, c: Contender, t: usize, cfg: &Config) -> Vec<Option<f64>> {
        self.of(c)
            .iter()
            .map(|s| {
                if t == cfg.threads {
                    Some(s.ns_per_pair)
                } else {
                    s.scaling.iter().find(|p| p.0 == t).map(|p| p.2)
                }
            })
            .collect()
    }
    /// `c`'s ns per pair beyond the test's own on `t` threads, per repeat (the void
    /// allocator's figure of the same repeat taken off).
    pub(super) fn net_runs(&self, c: Contender, t: usize, cfg: &Config) -> Vec<Option<f64>> {
        self.ns_runs(c, t, cfg)
            .into_iter()
            .zip(self.ns_runs(Contender::Void, t, cfg))
            .map(|(x, v)| Some(x? - v?))
            .collect()
    }
    /// Per repeat, `a`'s ns per pair beyond the test's own over `b`'s on `t` threads.
    pub(super) fn paired_net(
        &self,
        a: Contender,
        b: Contender,
        t: usize,
        cfg: &Config,
    ) -> Vec<f64> {
        self.net_runs(a, t, cfg)
            .into_iter()
            .zip(self.net_runs(b, t, cfg))
            .filter_map(|(x, y)| Some(x? / y?))
            .collect()
    }
    /// Per repeat, `c`'s time to finish the test over handoff-alloc's.
    pub(super) fn paired_speedups(&self, c: Contender) -> Vec<f64> {
        self.of(c)
            .iter()
            .zip(self.of(Contender::Handoff))
            .map(|(o, h)| o.seconds / h.seconds)
            .collect()
    }
    /// `c`'s ns per pair per thread on `t` threads (median of the repeats).
    pub(super) fn ns_at(&self, c: Contender, t: usize, cfg: &Config) -> f64 {
        self.at(c, t, cfg, false)
    }
    /// `c`'s seconds on `t` threads (median of the repeats).
    pub(super) fn seconds_at(&self, c: Contender, t: usize, cfg: &Config) -> f64 {
        self.at(c, t, cfg, true)
    }
    pub(super) fn of(&self, c: Contender) -> &[Sample] {
        let i = Contender::ALL.iter().position(|&x| x == c).unwrap_or(0);
        &self.samples[i]
    }
    pub(super) fn seconds(&self, c: Contender) -> f64 {
        median(self.of(c).iter().map(|s| s.seconds))
    }
    /// The median over the repeats of `c`'s time over handoff-alloc's in the same
    /// repeat: each pair ran back to back, so a change of the machine's load between
    /// repeats moves both.
    pub(super) fn paired_speedup(&self, c: Contender) -> f64 {
        median(self.paired_speedups(c))
    }
    pub(super) fn ns(&self, c: Contender) -> f64 {
        median(self.of(c).iter().map(|s| s.ns_per_pair))
    }
    /// Peak resident memory over peak requested bytes.
    pub(super) fn overhead(&self, c: Contender) -> f64 {
        median(
            self.of(c)
                .iter()
                .map(|s| s.peak_resident as f64 / s.peak_requested.max(1) as f64),
        )
    }
    pub(super) fn resident_mib(&self, c: Contender) -> f64 {
        median(
            self.of(c)
                .iter()
                .map(|s| s.peak_resident as f64 / MIB as f64),
        )
    }
    /// ns per pair beyond the test's own cost (the no-allocator baseline's): the
    /// allocator's share, as the document's test reports it.
    pub(super) fn net(&self, c: Contender) -> f64 {
        self.ns(c) - self.ns(Contender::Void)
    }
    /// `c`'s sweep: at each working set, the median over the repeats that ran it of
    /// the ticks per pair.
    pub(super) fn sweep(&self, c: Contender) -> Vec<(usize, f64)> {
        let runs = self.sweep_runs(c);
        let Some(first) = runs.first() else {
            return Vec::new();
        };
        first
            .iter()
            .enumerate()
            .map(|(k, &(ws, _))| {
                (
                    ws,
                    median(runs.iter().filter_map(|r| r.get(k)).map(|p| p.1)),
                )
            })
            .collect()
    }
    /// `c`'s sweep in every repeat that ran one, in the repeats' order.
    fn sweep_runs(&self, c: Contender) -> Vec<&[(usize, f64)]> {
        self.of(c)
            .iter()
            .map(|s| s.sweep.as_slice())
            .filter(|s| !s.is_empty())
            .collect()
    }
    /// handoff-alloc's slow-path counters at each sweep point, summed over the repeats.
    fn sweep_counters(&self) -> Vec<SlowPath> {
        let mut sum: Vec<SlowPath> = Vec::new();
        for s in self.of(Contender::Handoff) {
            for (k, c) in s.sweep_counters.iter().enumerate() {
                match sum.get_mut(k) {
                    Some(t) => t.add(c),
                    None => sum.push(*c),
                }
            }
        }
        sum
    }
    /// The sweep less the baseline's ticks at the same working set.
    pub(super) fn net_sweep(&self, c: Contender) -> Vec<(usize, f64)> {
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
    pub(super) fn handoff(&self, c: Contender) -> f64 {
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
            "  {:<24} {:>8} {:>12} {:>10} {:>13} {:>16} {:>17}",
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
            if let Some(why) = self.unavailable(c) {
                let _ = writeln!(s, "  {:<24} unavailable: {why}", c.name());
                continue;
            }
            let real = c != Contender::Void;
            let _ = writeln!(
                s,
                "  {:<24} {:>8.2} {:>12.1} {:>10} {:>13} {:>16} {:>17}",
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
             less test: ns per pair beyond it, the allocator's share; take1..take3: the \
             document's designs, single-threaded, one per thread, same memory layout, only \
             the free's class lookup differs)"
        );
        for (c, lib) in &self.libraries {
            if let Ok(lib) = lib {
                let _ = writeln!(s, "  {} preloaded from {lib}", c.name());
            }
        }
        let counts = self.thread_counts(cfg);
        if counts.len() > 1 {
            let ran: Vec<Contender> = Contender::ALL
                .into_iter()
                .filter(|&c| self.ran(c))
                .collect();
            let _ = writeln!(
                s,
                "\nscaling: the main test on 1, 2, ... threads, the working set and the replacements split among them; seconds (ns per pair per thread)"
            );
            let _ = write!(s, "  {:<8}", "threads");
            for &c in &ran {
                let _ = write!(s, " {:>22}", c.name());
            }
            let _ = writeln!(s);
            for &t in &counts {
                let _ = write!(s, "  {t:<8}");
                for &c in &ran {
                    let _ = write!(
                        s,
                        " {:>22}",
                        format!(
                            "{:.2} ({:.1})",
                            self.seconds_at(c, t, cfg),
                            self.ns_at(c, t, cfg)
                        )
                    );
                }
                let _ = writeln!(s);
            }
        }
        if !cfg.sweep.is_empty() {
            let _ = writeln!(
                s,
                "\nTSC ticks per pair as the working set grows ({} replacements each, medians of {} repeats, contenders alternated; in brackets, less the test's own)",
                cfg.sweep_items,
                Contender::ALL
                    .iter()
                    .map(|&c| self.sweep_runs(c).len())
                    .max()
                    .unwrap_or(0)
            );
            let ran: Vec<Contender> = Contender::ALL
                .into_iter()
                .filter(|&c| self.ran(c))
                .collect();
            let _ = write!(s, "  {:<8}", "MiB");
            for &c in &ran {
                let _ = write!(s, " {:>22}", c.name());
            }
            let _ = writeln!(s);
            for (k, ws) in cfg.sweep.iter().enumerate() {
                let _ = write!(s, "  {:<8}", ws / MIB);
                for &c in &ran {
                    let v = self.sweep(c).get(k).map_or(f64::NAN, |p| p.1);
                    if c == Contender::Void {
                        let _ = write!(s, " {v:>22.1}");
                    } else {
                        let n = self.net_sweep(c).get(k).map_or(f64::NAN, |p| p.1);
                        let _ = write!(s, " {:>22}", format!("{v:.1} ({n:.1})"));
                    }
                }
                let _ = writeln!(s);
            }
            let counters = self.sweep_counters();
            if !counters.is_empty() {
                let _ = writeln!(
                    s,
                    "  handoff-alloc's slow path per 1000 replacements (the steady part, after the filling; all repeats): magazine refills, spills, blocks magazine -> depot, depot -> magazine"
                );
                for (ws, c) in cfg.sweep.iter().zip(counters) {
                    let [r, sp, to, from] = c.per_1000();
                    let _ = writeln!(
                        s,
                        "    {:>5} MiB: {r:.2} refills, {sp:.2} spills, {to:.1} to the depot, {from:.1} from it",
                        ws / MIB
                    );
                }
            }
        }
        s
    }

    /// Every contender with its time, ns per pair, memory and cross-thread rate, each
    /// with its value in every run.
    fn contenders(&self) -> Vec<Variant> {
        Contender::ALL
            .iter()
            .map(|&c| {
                let each = self.of(c);
                let mut v = Variant::new(c.name());
                if let Some((_, lib)) = self.libraries.iter().find(|l| l.0 == c) {
                    match lib {
                        Ok(path) => v.set("library", path),
                        Err(why) => return v.set("unavailable", why).clone(),
                    };
                }
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
                .set("runs", each.len())
                .set(
                    "scaling",
                    each.iter()
                        .map(|s| {
                            s.scaling
                                .iter()
                                .map(|&(t, secs, ns)| json!({"threads": t, "seconds": secs, "ns_per_pair": ns}))
                                .collect::<Vec<_>>()
                        })
                        .collect::<Vec<_>>(),
                );
                if c == Contender::Handoff {
                    let counters = self.sweep_counters();
                    if !counters.is_empty() {
                        v.set(
                            "sweep_slow_path_per_1000_pairs",
                            counters
                                .iter()
                                .zip(self.sweep(c))
                                .map(|(k, (ws, _))| {
                                    let [r, sp, to, from] = k.per_1000();
                                    json!({"working_set_bytes": ws, "refills": r, "spills": sp, "to_depot": to, "from_depot": from})
                                })
                                .collect::<Vec<_>>(),
                        );
                    }
                }
                v
            })
            .collect()
    }

    /// Ticks per pair at each working set of the sweep, in all and less the test's own.
    fn sweeps(&self) -> Vec<Sweep> {
        Contender::ALL
            .iter()
            .filter(|&&c| !self.sweep(c).is_empty())
            .map(|&c| (c, self.sweep_runs(c)))
            .map(|(c, repeats)| Sweep {
                name: "working_set",
                variant: c.name().into(),
                x: "working_set_bytes",
                x_unit: Unit::Bytes.as_str(),
                unit: Unit::Ticks.as_str(),
                points: self
                    .sweep(c)
                    .iter()
                    .zip(self.net_sweep(c))
                    .enumerate()
                    .map(|(k, (&(x, t), (_, n)))| {
                        let runs: Vec<f64> = repeats
                            .iter()
                            .filter_map(|r| r.get(k).map(|p| p.1))
                            .collect();
                        json!({"x": x, "ticks_per_pair": t, "ticks_per_pair_less_test": n, "ticks_per_pair_runs": runs})
                    })
                    .collect(),
            })
            .collect()
    }

    /// The ratios the claims read, by name.
    fn ratios(&self) -> Map<String, Value> {
        let h = Contender::Handoff;
        let mut ratios = Map::new();
        for c in self.general() {
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
                .chain(&[Contender::Take3])
                .filter(|&&c| self.ran(c))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(sweep: &[f64], refills: u64) -> Sample {
        Sample {
            sweep: sweep
                .iter()
                .enumerate()
                .map(|(k, &t)| (MIB << (2 * k), t))
                .collect(),
            sweep_counters: vec![
                SlowPath {
                    pairs: 1000,
                    refills,
                    ..SlowPath::default()
                };
                sweep.len()
            ],
            ..Sample::default()
        }
    }

    #[test]
    fn the_sweep_is_the_median_of_the_repeats_and_the_counters_their_sum() {
        let mut samples = vec![Vec::new(); Contender::ALL.len()];
        let at = |c: Contender| Contender::ALL.iter().position(|&x| x == c).unwrap();
        // One repeat stretched at 4 MiB (a host pause): the median ignores it.
        samples[at(Contender::Handoff)] = vec![
            sample(&[20.0, 24.0], 1),
            sample(&[21.0, 90.0], 2),
            sample(&[22.0, 25.0], 3),
        ];
        samples[at(Contender::Void)] = vec![
            sample(&[10.0, 10.0], 0),
            sample(&[10.0, 11.0], 0),
            sample(&[12.0, 10.0], 0),
        ];
        let o = Outcome {
            samples,
            libraries: Vec::new(),
        };
        assert_eq!(
            o.sweep(Contender::Handoff),
            vec![(MIB, 21.0), (4 * MIB, 25.0)]
        );
        assert_eq!(
            o.net_sweep(Contender::Handoff),
            vec![(MIB, 11.0), (4 * MIB, 15.0)]
        );
        let k = o.sweep_counters();
        assert_eq!(k.len(), 2);
        assert_eq!((k[0].pairs, k[0].refills), (3000, 6));
        assert!(o.sweep(Contender::Jemalloc).is_empty(), "it did not run");
    }
}
