//! `runner queue`: the SPSC queue document (seeds/002). Six variants on the same
//! 16-byte tick, paced open-loop (headline), swept over twelve offered rates
//! (`--sweep`), and unpaced (`--throughput`). Variants are interleaved run by run so
//! that every variant sees the same moments of a noisy machine.

pub mod claims;
pub mod report;
pub mod variants;

mod args;

pub use args::{config, QueueArgs};

use crate::lab::error::{Error, Result};
use crate::lab::fmt;
use crate::lab::pacer::{self, below_target};
use crate::lab::session::{Output, Plan, Session};
use crate::lab::stop;
use crate::lab::topology::Topology;
use handoff_clock::Clock;
use handoff_stats::Latency;
use serde::Serialize;
use variants::{run_once, RunData, RunSpec, Variant};

/// The source document.
pub const DOCUMENT: &str = "seeds/002_96b034c3473d5bd0.txt";

/// `runner queue`.
pub struct Queue;

impl super::Experiment for Queue {
    fn name(&self) -> &'static str {
        "queue"
    }

    fn document(&self) -> &'static str {
        DOCUMENT
    }

    fn command(&self) -> clap::Command {
        use clap::Args;
        // The about goes on after the flags: `augment_args` would put the struct's doc.
        QueueArgs::augment_args(clap::Command::new("queue"))
            .about("SPSC queue document: lock-free rings vs Boost vs mutex+condvar (seeds/002)")
    }

    fn all_flags(&self) -> &'static [&'static str] {
        &["--all"]
    }

    fn prepare(
        &self,
        args: &clap::ArgMatches,
        topo: &Topology,
    ) -> Result<Box<dyn super::Prepared>> {
        use clap::FromArgMatches;
        let a = QueueArgs::from_arg_matches(args).map_err(|e| Error::Usage(e.to_string()))?;
        let (cfg, note) = config(&a, topo)?;
        Ok(Box::new(Prepared { cfg, note }))
    }
}

struct Prepared {
    cfg: Config,
    note: Option<String>,
}

impl super::Prepared for Prepared {
    fn plan(&self) -> Plan {
        let c = &self.cfg;
        Plan {
            out: c.out.clone(),
            roles: vec![("producer", c.pins[0]), ("consumer", c.pins[1])],
            control: c.pins.get(2).copied(),
            pin_note: self.note.clone(),
            noise_seconds: c.noise_seconds,
        }
    }

    fn run(&self, session: &mut Session) -> Result<Output> {
        let cfg = &self.cfg;
        let bar = session.progress(0)?;
        let outcome = execute(cfg, &session.clock, &bar);
        bar.finish_and_clear();
        let outcome = outcome?;
        if outcome.interrupted {
            return Err(Error::Interrupted);
        }
        let mut sections = Vec::new();
        for &mode in &cfg.modes {
            sections.push(match mode {
                Mode::Headline => report::table(
                    &format!(
                        "headline: paced at {}, {} runs x {} items, capacity {}, latency = producer stamp before push -> consumer stamp after pop",
                        fmt::rate(cfg.rate_hz), cfg.runs, cfg.items, cfg.capacity
                    ),
                    outcome.of(Mode::Headline),
                ),
                Mode::Sweep => report::sweep_table(&outcome, cfg),
                Mode::Throughput => report::table(
                    &format!("throughput: unpaced, {} runs x {} items, capacity {} (medians of runs)", cfg.runs, cfg.items, cfg.capacity),
                    outcome.of(Mode::Throughput),
                ),
            });
        }
        let noise = session.probe_after()?;
        Ok(Output {
            sections,
            claims: claims::claims(&outcome, cfg, noise),
            json: report::json_fields(&outcome, cfg)?,
            files: report::charts(&outcome, cfg)?,
        })
    }
}

/// Which measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Paced at `--rate`.
    Headline,
    /// Twelve offered rates, 100 kHz to 50 MHz.
    Sweep,
    /// Unpaced.
    Throughput,
}

impl Mode {
    /// The name in results.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Headline => "headline",
            Mode::Sweep => "sweep",
            Mode::Throughput => "throughput",
        }
    }
}

/// Everything `runner queue` was asked to do (after validation).
#[derive(Clone, Debug, Serialize)]
pub struct Config {
    /// Variants, in order.
    #[serde(serialize_with = "ser_variants")]
    pub variants: Vec<Variant>,
    /// Producer core, consumer core, control-thread core.
    pub pins: Vec<usize>,
    /// Offered rate of the headline mode.
    pub rate_hz: f64,
    /// Items per run.
    pub items: usize,
    /// Outer runs.
    pub runs: usize,
    /// Queue capacity.
    pub capacity: usize,
    /// Output directory.
    pub out: std::path::PathBuf,
    /// Modes to run.
    pub modes: Vec<Mode>,
    /// Sweep: seconds of offered load per point and run (caps the items at low rates).
    pub sweep_seconds: f64,
    /// Sweep: fewest items per point and run.
    pub sweep_min_items: usize,
    /// Seconds of the scheduling-noise probe before and after the runs (0: none).
    pub noise_seconds: f64,
}

fn ser_variants<S: serde::Serializer>(v: &[Variant], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|v| v.name()))
}

impl Config {
    /// The offered rates of the sweep (the document's twelve points).
    pub fn sweep_rates() -> Vec<f64> {
        pacer::log_spaced(1e5, 5e7, 12)
    }

    /// Items per run at a sweep point: `--items`, capped at `sweep_seconds` of load.
    pub fn sweep_items(&self, rate: f64) -> usize {
        let by_time = (rate * self.sweep_seconds) as usize;
        self.items.min(by_time.max(self.sweep_min_items))
    }
}

/// One run reduced to numbers.
#[derive(Clone, Debug, Serialize)]
pub struct RunSummary {
    /// Achieved send rate (items/s).
    pub achieved_rate_hz: Option<f64>,
    /// Items over first send to last receive (items/s).
    pub throughput_items_per_s: f64,
    /// The run fell below 95% of the offered rate.
    pub below_target: bool,
    /// Stamps taken off the pinned cores (producer + consumer).
    pub off_core_stamps: u64,
    /// Items out of order or corrupted (must be 0).
    pub bad_items: u64,
    /// Receive stamps earlier than their send stamps (excluded; must be 0 with an
    /// invariant TSC).
    pub negative_latencies: u64,
    /// Median latency of this run (ns).
    pub p50_ns: u64,
    /// 99th percentile of this run (ns).
    pub p99_ns: u64,
    /// 99.9th percentile of this run (ns).
    #[serde(rename = "p99.9_ns")]
    pub p999_ns: u64,
    /// Times the consumer took at least [`STALL_NS`] to take an item from the moment
    /// the item was sent and the consumer was done with the previous one. A spinning
    /// consumer only does that when its thread is not running (a hypervisor pause, an
    /// interrupt); for the mutex variants it also counts condvar wake-ups.
    pub consumer_stalls: u64,
    /// Total length of those stalls (ns).
    pub consumer_stall_ns: u64,
    /// Items whose latency was at least [`STALL_NS`].
    pub items_over_stall_ns: u64,
}

/// The gap that counts as a consumer stall (10 us: about 80 lock-free handoffs).
pub const STALL_NS: u64 = 10_000;

/// One (mode, variant, offered rate) cell: the merged runs.
#[derive(Clone, Debug)]
pub struct Cell {
    /// Mode.
    pub mode: Mode,
    /// Variant.
    pub variant: Variant,
    /// Offered rate (`None`: unpaced).
    pub offered_hz: Option<f64>,
    /// Items per run.
    pub items: usize,
    /// Why it didn't run, if it didn't.
    pub unavailable: Option<String>,
    /// Send stamp to receive stamp, ns, merged over runs.
    pub latency: Latency,
    /// Intended (scheduled) send time to receive stamp, ns, merged: the
    /// coordinated-omission-aware reading. Empty when unpaced.
    pub latency_from_intended: Latency,
    /// Per-run numbers.
    pub runs: Vec<RunSummary>,
}

pub(crate) fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

impl Cell {
    fn new(mode: Mode, variant: Variant, offered_hz: Option<f64>, items: usize) -> Cell {
        Cell {
            mode,
            variant,
            offered_hz,
            items,
            unavailable: None,
            latency: Latency::new(),
            latency_from_intended: Latency::new(),
            runs: Vec::new(),
        }
    }

    /// Median achieved send rate over the runs.
    pub fn achieved_hz(&self) -> Option<f64> {
        median(
            self.runs
                .iter()
                .filter_map(|r| r.achieved_rate_hz)
                .collect(),
        )
    }

    /// Median end-to-end throughput over the runs.
    pub fn throughput(&self) -> Option<f64> {
        median(self.runs.iter().map(|r| r.throughput_items_per_s).collect())
    }

    /// Mean queue depth by Little's law: achieved rate x mean latency.
    pub fn mean_depth(&self) -> Option<f64> {
        let rate = self.achieved_hz()?;
        (self.latency.count() > 0).then(|| rate * self.latency.mean() * 1e-9)
    }

    /// Runs below 95% of the offered rate.
    pub fn below_target_runs(&self) -> usize {
        self.runs.iter().filter(|r| r.below_target).count()
    }

    /// Consumer stalls (count, total ns) and items at or over [`STALL_NS`], all runs.
    pub fn stalls(&self) -> (u64, u64, u64) {
        self.runs.iter().fold((0, 0, 0), |a, r| {
            (
                a.0 + r.consumer_stalls,
                a.1 + r.consumer_stall_ns,
                a.2 + r.items_over_stall_ns,
            )
        })
    }

    /// Stamps taken off the pinned cores, all runs.
    pub fn off_core_stamps(&self) -> u64 {
        self.runs.iter().map(|r| r.off_core_stamps).sum()
    }

    fn add(&mut self, data: &RunData, clock: &Clock) -> Result<()> {
        let freq = clock.calibration().freq_hz;
        let mut lat = Latency::new();
        let mut negative = 0;
        let mut over = 0u64;
        let paced = data.schedule.is_paced();
        for (i, (&s, &r)) in data.send.iter().zip(&data.recv).enumerate() {
            if r < s {
                negative += 1;
                continue;
            }
            let ns = clock.ticks_to_ns(r - s);
            over += u64::from(ns >= STALL_NS);
            lat.record(ns);
            if paced {
                let due = data.schedule.due(i as u64);
                self.latency_from_intended
                    .record(clock.ticks_to_ns(r.saturating_sub(due)));
            }
        }
        let stall_ticks = clock.ns_to_ticks(STALL_NS);
        let (mut stalls, mut stall_ticks_sum) = (0u64, 0u64);
        for k in 1..data.recv.len() {
            // From the moment item k was both sent and the consumer free of item k-1
            // until the consumer stamped it.
            let ready = data.send[k].max(data.recv[k - 1]);
            let gap = data.recv[k].saturating_sub(ready);
            if gap >= stall_ticks {
                stalls += 1;
                stall_ticks_sum += gap;
            }
        }
        let achieved = pacer::achieved_rate(&data.send, freq);
        let first = data.send.first().copied().unwrap_or(0);
        let last = data.recv.iter().copied().max().unwrap_or(0);
        let throughput = if last > first {
            data.send.len() as f64 * freq / (last - first) as f64
        } else {
            0.0
        };
        let below = match (self.offered_hz, achieved) {
            (Some(o), Some(a)) => below_target(a, o),
            (Some(_), None) => true,
            (None, _) => false,
        };
        self.runs.push(RunSummary {
            achieved_rate_hz: achieved,
            throughput_items_per_s: throughput,
            below_target: below,
            off_core_stamps: data.producer_off_cpu + data.consumer_off_cpu,
            bad_items: data.bad_seq,
            negative_latencies: negative,
            p50_ns: lat.value_at_quantile(0.5),
            p99_ns: lat.value_at_quantile(0.99),
            p999_ns: lat.value_at_quantile(0.999),
            consumer_stalls: stalls,
            consumer_stall_ns: clock.ticks_to_ns(stall_ticks_sum),
            items_over_stall_ns: over,
        });
        self.latency
            .merge(&lat)
            .map_err(|e| Error::Run(format!("merging runs: {e}")))?;
        if data.bad_seq > 0 {
            return Err(Error::Run(format!(
                "{}: {} items arrived out of order or corrupted",
                self.variant.name(),
                data.bad_seq
            )));
        }
        Ok(())
    }
}

/// All cells of one invocation, in the order they were planned.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Cells.
    pub cells: Vec<Cell>,
    /// Set when Ctrl-C stopped the experiment.
    pub interrupted: bool,
}

impl Outcome {
    /// Cells of one mode.
    pub fn of(&self, mode: Mode) -> impl Iterator<Item = &Cell> {
        self.cells.iter().filter(move |c| c.mode == mode)
    }

    /// The first runnable cell of (mode, variant) (headline and throughput have one each).
    pub fn find(&self, mode: Mode, v: Variant) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.mode == mode && c.variant == v && c.unavailable.is_none())
    }
}

/// Runs every requested mode. Each run is one planned (cell, run) step; steps are
/// ordered run-major so the variants alternate.
pub fn execute(cfg: &Config, clock: &Clock, progress: &indicatif::ProgressBar) -> Result<Outcome> {
    let mut out = Outcome::default();
    // Plan cells.
    for &mode in &cfg.modes {
        let rates: Vec<Option<f64>> = match mode {
            Mode::Headline => vec![Some(cfg.rate_hz)],
            Mode::Sweep => Config::sweep_rates().into_iter().map(Some).collect(),
            Mode::Throughput => vec![None],
        };
        for rate in rates {
            for &v in &cfg.variants {
                let items = match (mode, rate) {
                    (Mode::Sweep, Some(r)) => cfg.sweep_items(r),
                    _ => cfg.items,
                };
                let mut cell = Cell::new(mode, v, rate, items);
                cell.unavailable = v.unavailable(cfg.capacity);
                out.cells.push(cell);
            }
        }
    }
    let runnable = out.cells.iter().filter(|c| c.unavailable.is_none()).count();
    progress.set_length((runnable * cfg.runs) as u64);
    // Group by (mode, rate) so that one offered load's variants interleave run by run.
    let mut i = 0;
    while i < out.cells.len() {
        let (mode, rate) = (out.cells[i].mode, out.cells[i].offered_hz);
        let mut j = i;
        while j < out.cells.len() && out.cells[j].mode == mode && out.cells[j].offered_hz == rate {
            j += 1;
        }
        for _run in 0..cfg.runs {
            for cell in &mut out.cells[i..j] {
                if cell.unavailable.is_some() {
                    continue;
                }
                if stop::requested() {
                    out.interrupted = true;
                    return Ok(out);
                }
                progress.set_message(format!(
                    "{} {}{}",
                    mode.name(),
                    cell.variant.name(),
                    rate.map(|r| format!(" @ {}", fmt::rate(r)))
                        .unwrap_or_default()
                ));
                let spec = RunSpec {
                    items: cell.items,
                    capacity: cfg.capacity,
                    rate_hz: rate,
                    freq_hz: clock.calibration().freq_hz,
                    producer_cpu: cfg.pins[0],
                    consumer_cpu: cfg.pins[1],
                    stop: stop::flag(),
                };
                let data = run_once(cell.variant, &spec)?;
                if stop::requested() {
                    out.interrupted = true;
                    return Ok(out);
                }
                cell.add(&data, clock)?;
                progress.inc(1);
            }
        }
        i = j;
    }
    Ok(out)
}
