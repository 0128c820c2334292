//! `runner alloc`: the size-class allocator document (seeds/004). Its real-world-like
//! test (sizes ~ 1/size, Pareto-like lifetimes, each block written and read once) on
//! handoff-alloc, glibc malloc, mimalloc and jemalloc, each in its own child runner
//! whose process allocator it is: time and ns per alloc/free pair, peak resident memory
//! over peak requested bytes (the document's Figure 2), TSC ticks per pair as the
//! working set grows (Figure 3), and a producer/consumer run where one thread allocates
//! and another frees. Repeats alternate the contenders.

mod work;

use crate::lab::chart::{self, Series};
use crate::lab::claims::{holds, near, Claim, Verdict};
use crate::lab::error::{Error, Result};
use crate::lab::flags::{self, THREAD_NAMES};
use crate::lab::measure::median_or_nan as median;
use crate::lab::results::{check_writable, Outputs};
use crate::lab::rotate;
use crate::lab::session::{Output, Plan, Session};
use crate::lab::topology::Topology;
use clap::Args;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::fmt::Write as _;
use std::path::PathBuf;

pub use work::{child_task, Contender, Sample, Spec, CHILD_TASK};

/// The source document.
pub const DOCUMENT: &str = "seeds/004_12c30817d25f96d8.txt";

/// The document's total allocation size: 1.3 GB.
pub const DOC_WORKING_SET: usize = 1_300_000_000;

const MIB: usize = 1 << 20;

/// `runner alloc` options (every default is written here and nowhere else).
#[derive(Args, Debug, Clone)]
pub struct AllocArgs {
    /// Requested bytes the main test keeps live, in MiB (the document: 1.3 GB, see --full)
    #[arg(long, default_value = "256", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub working_set_mib: usize,
    /// Replacements (free + alloc) of the main test, per run
    #[arg(
        long,
        alias = "ops",
        default_value = "10000000",
        allow_hyphen_values = true
    , value_parser = flags::count_value)]
    pub items: usize,
    /// The document's size: a 1.3 GB working set (overrides --working-set-mib)
    #[arg(long)]
    pub full: bool,
    /// Threads of the main test; the working set and the replacements are split among them
    #[arg(long, default_value = "1", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub threads: usize,
    /// Largest working set of the sweep in MiB (from 1 MiB, times 4 each step; 0: no sweep)
    #[arg(long, default_value = "1024", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub sweep_max_mib: usize,
    /// Replacements per sweep point
    #[arg(long, default_value = "2000000", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub sweep_ops: usize,
    /// Blocks of the producer/consumer run (0: none)
    #[arg(long, default_value = "2000000", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub handoff_items: usize,
    /// `--pin`, `--runs`, `--out`, `--noise-seconds`.
    #[command(flatten)]
    pub common: flags::Common,
}

/// Everything `runner alloc` was asked to do (after validation).
#[derive(Clone, Debug, Serialize)]
pub struct Config {
    /// Requested bytes live in the main test.
    pub working_set: usize,
    /// Replacements of the main test.
    pub ops: usize,
    /// Threads of the main test.
    pub threads: usize,
    /// Repeats per contender.
    pub repeats: usize,
    /// Working sets of the sweep.
    pub sweep: Vec<usize>,
    /// Replacements per sweep point.
    pub sweep_ops: usize,
    /// Blocks of the producer/consumer run.
    pub handoff_items: usize,
    /// Cores.
    pub pins: Vec<usize>,
    /// Output directory.
    pub out: PathBuf,
    /// Seconds of the noise probe before and after (0: none).
    pub noise_seconds: f64,
}

/// `runner alloc`.
pub struct Alloc;

impl super::Experiment for Alloc {
    fn name(&self) -> &'static str {
        "alloc"
    }

    fn document(&self) -> &'static str {
        DOCUMENT
    }

    fn command(&self) -> clap::Command {
        let cmd = AllocArgs::augment_args(clap::Command::new("alloc")).about(
            "Size-class allocator vs glibc, mimalloc, jemalloc on a real-world-like test: time, memory, working-set sweep, cross-thread frees (seeds/004)",
        );
        flags::Common::explain(
            cmd,
            "5",
            "one core per thread (the first runs the one-thread parts, the first two the producer/consumer)",
            "the main test once per contender, contenders alternated; medians reported",
        )
    }

    fn all_flags(&self) -> &'static [&'static str] {
        &[]
    }

    fn prepare(
        &self,
        args: &clap::ArgMatches,
        topo: &Topology,
    ) -> Result<Box<dyn super::Prepared>> {
        let a: AllocArgs = super::typed_args(args)?;
        let (cfg, note) = config(&a, topo)?;
        Ok(Box::new(Prepared { cfg, note }))
    }
}

/// Validates `runner alloc` arguments against the machine. Every error is one line.
pub fn config(a: &AllocArgs, topo: &Topology) -> Result<(Config, Option<String>)> {
    let working_set = if a.full {
        DOC_WORKING_SET
    } else {
        flags::count_in("working-set-mib", a.working_set_mib, 1, 1 << 20, "MiB")? * MIB
    };
    let ops = flags::count_in("items", a.items, 1, 1 << 36, "replacement")?;
    let threads = flags::count_in("threads", a.threads, 1, THREAD_NAMES.len(), "thread")?;
    let repeats = a.common.runs(1, 100)?;
    let sweep_max = flags::count_in("sweep-max-mib", a.sweep_max_mib, 0, 1 << 20, "MiB")?;
    let sweep_ops = flags::count_in("sweep-ops", a.sweep_ops, 1, 1 << 36, "replacement")?;
    let handoff_items = flags::count_in("handoff-items", a.handoff_items, 0, 1 << 36, "block")?;
    let noise_seconds = a.common.noise_seconds()?;
    check_writable(&a.common.out)?;
    let (pins, notes) = flags::thread_pins(a.common.pin.as_deref(), threads.max(2), topo)?;
    let mut sweep = Vec::new();
    let mut ws = MIB;
    while sweep_max > 0 && ws <= sweep_max * MIB {
        sweep.push(ws);
        ws *= 4;
    }
    let mut notes = notes;
    if !a.full {
        notes.push(format!(
            "a {} MiB working set; the document's is 1.3 GB (--full)",
            working_set / MIB
        ));
    }
    let note = (!notes.is_empty()).then(|| notes.join("; "));
    Ok((
        Config {
            working_set,
            ops,
            threads,
            repeats,
            sweep,
            sweep_ops,
            handoff_items,
            pins,
            out: a.common.out.clone(),
            noise_seconds,
        },
        note,
    ))
}

struct Prepared {
    cfg: Config,
    note: Option<String>,
}

impl super::Prepared for Prepared {
    fn plan(&self) -> Plan {
        let c = &self.cfg;
        Plan::alike_threads(c.out.clone(), &c.pins, self.note.clone(), c.noise_seconds)
    }

    fn run(&self, session: &mut Session) -> Result<Output> {
        let cfg = &self.cfg;
        let timer = session.clock.timer();
        let n = Contender::ALL.len();
        let bar = session.progress((n * cfg.repeats) as u64)?;
        let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); n];
        let name = |i: usize| Contender::ALL[i].name().to_string();
        rotate::contenders(&bar, cfg.repeats, n, name, |r, i| {
            let spec = Spec {
                contender: Contender::ALL[i],
                working_set: cfg.working_set,
                ops: cfg.ops,
                threads: cfg.threads,
                pins: cfg.pins.clone(),
                // The sweep runs once, in the first repeat; the producer/consumer
                // run in every repeat (its rate is bimodal for some allocators, so
                // one sample is not enough).
                sweep: if r == 0 {
                    cfg.sweep.clone()
                } else {
                    Vec::new()
                },
                sweep_ops: cfg.sweep_ops,
                handoff_items: cfg.handoff_items,
                timer,
            };
            samples[i].push(work::measure(&spec)?);
            Ok(())
        })?;
        session.probe_after()?;
        let out = Outcome { samples };
        Ok(Output {
            sections: vec![out.table(cfg)],
            claims: out.claims(cfg),
            json: out.json(cfg)?,
            files: out.charts(cfg)?,
        })
    }
}

/// Every contender's samples, in `Contender::ALL` order.
struct Outcome {
    samples: Vec<Vec<Sample>>,
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
            cfg.ops,
            cfg.threads,
            cfg.repeats
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
                cfg.sweep_ops
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
            ),
            None => Claim::new(
                "pair_cycles_small_ws",
                "a malloc/free pair costs about 15 CPU cycles at single-digit-MB working sets",
                "15 cycles",
                "-",
                (
                    Verdict::NotMeasured,
                    "the sweep was not run (--sweep-max-mib 0)".into(),
                ),
            ),
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
        ));
        let mem = self.overhead(h) / self.overhead(Contender::Jemalloc);
        claims.push(Claim::new(
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
        ));
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
        ));
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
        } else {
            Claim::new(
                "cross_thread_frees",
                "project target: one thread allocates, another frees; at least as fast as mimalloc",
                "(ours)",
                "-",
                (Verdict::NotMeasured, "--handoff-items 0".into()),
            )
        });
        claims
    }

    fn json(&self, cfg: &Config) -> Result<Map<String, Value>> {
        let mut m = Map::new();
        m.insert(
            "config".into(),
            serde_json::to_value(cfg).map_err(|e| Error::Run(e.to_string()))?,
        );
        let variants: Vec<Value> = Contender::ALL
            .iter()
            .map(|&c| {
                json!({
                    "name": c.name(),
                    "seconds": self.seconds(c),
                    "seconds_each": self.of(c).iter().map(|s| s.seconds).collect::<Vec<_>>(),
                    "ns_per_pair_each": self.of(c).iter().map(|s| s.ns_per_pair).collect::<Vec<_>>(),
                    "ns_per_op": { "pair": self.ns(c), "pair_less_test": self.net(c) },
                    "peak_resident_bytes": self.resident_mib(c) * MIB as f64,
                    "resident_over_requested": self.overhead(c),
                    "cross_thread_items_per_s": self.handoff(c),
                    "cross_thread_items_per_s_each": self.of(c).iter().filter_map(|s| s.handoff_per_s).collect::<Vec<_>>(),
                    "runs": self.of(c).len(),
                })
            })
            .collect();
        m.insert("variants".into(), Value::Array(variants));
        let sweeps: Vec<Value> = Contender::ALL
            .iter()
            .map(|&c| {
                json!({
                    "name": "working_set",
                    "variant": c.name(),
                    "points": self.sweep(c).iter().zip(self.net_sweep(c)).map(|(&(x, t), (_, n))| json!({"x": x, "ticks_per_pair": t, "ticks_per_pair_less_test": n})).collect::<Vec<_>>(),
                })
            })
            .collect();
        m.insert("sweeps".into(), Value::Array(sweeps));
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
        m.insert("ratios".into(), Value::Object(ratios));
        Ok(m)
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
        let svg = chart::bars(
            "document 004's test: time (Figure 1)",
            "seconds",
            &bars(&|c| self.seconds(c)),
        )?;
        files.add(cfg.out.join("alloc-time.svg"), svg.into_bytes());
        let svg = chart::bars(
            "peak resident memory / peak requested bytes (Figure 2)",
            "ratio",
            &bars(&|c| {
                if c == Contender::Void {
                    f64::NAN
                } else {
                    self.overhead(c)
                }
            }),
        )?;
        files.add(cfg.out.join("alloc-memory.svg"), svg.into_bytes());
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
            let svg = chart::loglog(
                "TSC ticks per alloc/free pair beyond the test's own, by working set (Figure 3)",
                "working set, MiB",
                "ticks per pair",
                &series,
            )?;
            files.add(cfg.out.join("alloc-working-set.svg"), svg.into_bytes());
        }
        Ok(files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::parse_flags;

    fn config_of(args: &[&str]) -> Result<(Config, Option<String>)> {
        let a: AllocArgs = parse_flags(&Alloc, args)?;
        config(&a, &Topology::two_cores())
    }

    #[test]
    fn defaults_are_scaled_and_say_so() {
        let (c, note) = config_of(&[]).unwrap();
        assert_eq!(c.working_set, 256 * MIB);
        assert_eq!(c.sweep.first(), Some(&MIB));
        assert_eq!(c.sweep.last(), Some(&(1024 * MIB)));
        assert_eq!(c.pins, vec![0, 1]);
        assert!(note.unwrap().contains("1.3 GB"));
        let (c, _) = config_of(&["--full"]).unwrap();
        assert_eq!(c.working_set, DOC_WORKING_SET);
        let (c, _) = config_of(&["--sweep-max-mib", "0"]).unwrap();
        assert!(c.sweep.is_empty());
    }

    #[test]
    fn bad_input_is_refused_with_one_line() {
        for (args, needle) in [
            (&["--ops", "0"][..], "at least 1"),
            (&["--working-set-mib", "0"][..], "at least 1"),
            (&["--threads", "0"][..], "at least 1"),
            (&["--pin", "4,5"][..], "not available"),
            (&["--ops", "x"][..], "not a number"),
        ] {
            let e = config_of(args).unwrap_err().to_string();
            assert!(e.contains(needle), "{args:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
