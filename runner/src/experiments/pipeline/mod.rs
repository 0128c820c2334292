//! `runner pipeline`: the cross-thread Order pipeline document (seeds/000). A producer
//! allocates 64-byte Orders and hands them through a `handoff_spsc` ring to a consumer
//! that runs a risk check and frees them, beside a background heap thread. Four
//! allocation strategies, interleaved run by run: paced at 1 MHz (headline), swept over
//! background pressure (`--sweep`), and unpaced (`--throughput`).

pub mod background;
pub mod claims;
pub mod order;
pub mod report;
pub mod work;

mod args;
mod child;

pub use args::{config, PipelineArgs};

use crate::lab::child::Task;
use crate::lab::error::{Error, Result};
use crate::lab::experiment::Experiment;
use crate::lab::fmt;
use crate::lab::harness::{self, Role};
pub use crate::lab::measure::Mode;
use crate::lab::measure::{self, Measured};
use crate::lab::pacer;
use crate::lab::session::{Output, Plan, Session};
use crate::lab::stop;
use crate::lab::topology::Topology;
use handoff_clock::Clock;
use handoff_stats::Latency;
use serde::Serialize;
use work::{run_once, RunSpec, Variant};

/// The source document.
pub const DOCUMENT: &str = "seeds/000_37425f930bda1a6c.txt";

/// The risk check's velocity window.
const WINDOW_NS: u64 = 1_000_000;

/// `runner pipeline`.
pub struct Pipeline;

impl Experiment for Pipeline {
    type Args = PipelineArgs;
    type Config = Config;
    const NAME: &'static str = "pipeline";
    const DOCUMENT: &'static str = DOCUMENT;
    const ABOUT: &'static str = "Cross-thread Order pipeline: malloc vs return-queue pool vs rotating arena vs mimalloc, under background heap pressure (seeds/000); with no mode named, runs all three";
    const RUNS: &'static str = "5";
    const ROLES: &'static str = "producer, consumer, background[, more background]";
    const A_RUN: &'static str = "one pass of --items orders per variant in the headline and throughput modes (histograms merged); the sweep runs once per point";
    const CHILD_TASK: Option<(&'static str, Task)> = Some((child::CHILD_TASK, child::child_task));

    fn configure(a: &PipelineArgs, topo: &Topology) -> Result<(Config, Option<String>)> {
        config(a, topo)
    }

    fn placement(c: &Config, note: Option<String>) -> Plan {
        let mut roles = vec![("producer", c.pins[0]), ("consumer", c.pins[1])];
        roles.extend(c.pins[2..].iter().map(|&b| ("background", b)));
        Plan {
            out: c.out.clone(),
            roles,
            control: None,
            pin_note: note,
            noise_seconds: c.noise_seconds,
        }
    }

    fn run(cfg: &Config, session: &mut Session) -> Result<Output> {
        let clock = session.clock.clone();
        let (rounds, check_ns) = calibrate(cfg, &clock)?;
        println!(
            "risk check: {} per order on core {} ({} extra window passes; --work-ns {})",
            fmt::ns(check_ns),
            cfg.pins[1],
            rounds,
            cfg.work_ns
        );
        let bar = session.progress(0)?;
        let outcome = execute(cfg, &clock, rounds, &bar);
        bar.finish_and_clear();
        let mut outcome = outcome?;
        if outcome.interrupted {
            return Err(Error::Interrupted);
        }
        outcome.risk_rounds = rounds;
        outcome.check_ns = check_ns;
        let noise = session.probe_after()?;
        Ok(Output {
            sections: report::sections(&outcome, cfg),
            claims: claims::claims(&outcome, cfg, noise),
            json: report::json_fields(&outcome, cfg)?,
            files: report::charts(&outcome, cfg)?,
        })
    }
}

/// Measures the risk check on the consumer's core and returns (rounds, ns per check).
fn calibrate(cfg: &Config, clock: &Clock) -> Result<(u32, f64)> {
    let target = cfg.work_ns;
    let (_, mut out) = harness::run(
        clock.timer(),
        stop::flag(),
        vec![Role::new(cfg.pins[1], |_s| order::calibrate(target, clock))],
    )?;
    Ok(out.remove(0))
}

/// Everything `runner pipeline` was asked to do (after validation).
#[derive(Clone, Debug, Serialize)]
pub struct Config {
    /// Variants, in order.
    #[serde(serialize_with = "ser_variants")]
    pub variants: Vec<Variant>,
    /// Producer core, consumer core, one core per background thread.
    pub pins: Vec<usize>,
    /// A background thread shares a measured core.
    pub bg_shares_core: bool,
    /// Producer and consumer were placed on different L3 groups.
    pub cross_l3: bool,
    /// Offered order rate (headline and sweep).
    pub rate_hz: f64,
    /// Orders per run.
    pub items: usize,
    /// Outer runs (headline and throughput; the sweep runs once per point).
    pub runs: usize,
    /// Forward ring capacity.
    pub capacity: usize,
    /// Target weight of the risk check (ns).
    pub work_ns: f64,
    /// Background operations per second per thread (headline and throughput).
    pub bg_rate_hz: f64,
    /// Background threads (headline and throughput).
    pub bg_threads: usize,
    /// Output directory.
    pub out: std::path::PathBuf,
    /// Modes to run.
    pub modes: Vec<Mode>,
    /// Seconds of the noise probe before and after (0: none).
    pub noise_seconds: f64,
}

fn ser_variants<S: serde::Serializer>(v: &[Variant], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|v| v.name()))
}

impl Config {
    /// The sweep's background rates: none, then eight log-spaced from 100 k/s to 10 M/s.
    pub fn sweep_points() -> Vec<Option<f64>> {
        std::iter::once(None)
            .chain(pacer::log_spaced(1e5, 1e7, 8).into_iter().map(Some))
            .collect()
    }
}

/// One (mode, variant, background rate) cell: its merged runs (`lab::measure`, through
/// `Deref`) and the pipeline's own figures.
#[derive(Clone, Debug)]
pub struct Cell {
    /// Mode.
    pub mode: Mode,
    /// Variant.
    pub variant: Variant,
    /// Background operations per second per thread (`None`: no background thread).
    pub bg_rate_hz: Option<f64>,
    /// Background threads.
    pub bg_threads: usize,
    /// Create -> dequeue latency and the rest.
    pub measured: Measured,
    /// Stamp before the allocation -> stamp after it (the producer's allocation cost), ns.
    pub alloc_ns: Latency,
    /// Dequeue -> checked and freed (the consumer's work per order), ns.
    pub service_ns: Latency,
    /// Achieved background operations per second (all threads), per run.
    pub bg_achieved: Vec<f64>,
    /// Pool allocations refused (retried), all runs.
    pub exhausted: u64,
}

impl std::ops::Deref for Cell {
    type Target = Measured;

    fn deref(&self) -> &Measured {
        &self.measured
    }
}

impl Cell {
    /// The table row of this cell.
    pub fn row(&self) -> measure::Row<'_> {
        (self.variant.name(), Ok(&self.measured))
    }

    /// Median achieved background rate over the runs.
    pub fn bg_achieved_hz(&self) -> Option<f64> {
        measure::median(self.bg_achieved.clone())
    }

    fn add(&mut self, raw: &work::RunRaw, clock: &Clock) -> Result<()> {
        for (&pre, &t) in raw.before_alloc.iter().zip(&raw.stamps.send) {
            self.alloc_ns
                .record(clock.ticks_to_ns(t.saturating_sub(pre)));
        }
        for (&r, &d) in raw.stamps.recv.iter().zip(&raw.done) {
            self.service_ns
                .record(clock.ticks_to_ns(d.saturating_sub(r)));
        }
        if !raw.bg.is_empty() {
            self.bg_achieved.push(raw.bg.iter().map(|b| b.rate()).sum());
        }
        self.exhausted += raw.exhausted;
        self.measured.add(&raw.stamps, clock, self.variant.name())
    }
}

/// All cells of one invocation.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Cells, in plan order.
    pub cells: Vec<Cell>,
    /// Set when Ctrl-C stopped the experiment.
    pub interrupted: bool,
    /// The calibrated risk-check setting.
    pub risk_rounds: u32,
    /// Its measured cost, ns per order.
    pub check_ns: f64,
}

impl Outcome {
    /// Cells of one mode.
    pub fn of(&self, mode: Mode) -> impl Iterator<Item = &Cell> {
        self.cells.iter().filter(move |c| c.mode == mode)
    }

    /// The headline or throughput cell of a variant.
    pub fn find(&self, mode: Mode, v: Variant) -> Option<&Cell> {
        self.cells.iter().find(|c| c.mode == mode && c.variant == v)
    }

    /// A variant's sweep cells, the no-background point first.
    pub fn sweep_of(&self, v: Variant) -> Vec<&Cell> {
        self.of(Mode::Sweep).filter(|c| c.variant == v).collect()
    }
}

/// Runs every requested mode; one offered load's variants interleave run by run.
pub fn execute(
    cfg: &Config,
    clock: &Clock,
    rounds: u32,
    progress: &indicatif::ProgressBar,
) -> Result<Outcome> {
    let mut out = Outcome::default();
    let mut groups: Vec<(Mode, Option<f64>, usize, usize)> = Vec::new();
    for &mode in &cfg.modes {
        match mode {
            Mode::Headline | Mode::Throughput => {
                let bg = (cfg.bg_threads > 0).then_some(cfg.bg_rate_hz);
                groups.push((mode, bg, cfg.bg_threads, cfg.runs));
            }
            Mode::Sweep => {
                for bg in Config::sweep_points() {
                    groups.push((
                        mode,
                        bg,
                        usize::from(bg.is_some()) * cfg.bg_threads.max(1),
                        1,
                    ));
                }
            }
        }
    }
    let steps: usize = groups.iter().map(|g| g.3 * cfg.variants.len()).sum();
    progress.set_length(steps as u64);
    let timer = clock.timer();
    for (mode, bg, bg_threads, runs) in groups {
        let first = out.cells.len();
        let offered = (mode != Mode::Throughput).then_some(cfg.rate_hz);
        for &v in &cfg.variants {
            out.cells.push(Cell {
                mode,
                variant: v,
                bg_rate_hz: bg,
                bg_threads,
                measured: Measured::new(offered, cfg.items),
                alloc_ns: Latency::new(),
                service_ns: Latency::new(),
                bg_achieved: Vec::new(),
                exhausted: 0,
            });
        }
        let spec = RunSpec {
            items: cfg.items,
            capacity: cfg.capacity,
            rate_hz: offered,
            timer,
            producer_cpu: cfg.pins[0],
            consumer_cpu: cfg.pins[1],
            bg_cpus: (0..bg_threads)
                .map(|i| cfg.pins[2 + i % (cfg.pins.len() - 2).max(1)])
                .collect(),
            bg_rate_hz: bg.unwrap_or(1.0),
            bg_shares_core: cfg.bg_shares_core,
            risk_rounds: rounds,
            window_ticks: clock.ns_to_ticks(WINDOW_NS),
        };
        for _run in 0..runs {
            for cell in &mut out.cells[first..] {
                if stop::requested() {
                    out.interrupted = true;
                    return Ok(out);
                }
                progress.set_message(format!(
                    "{} {}{}",
                    mode.name(),
                    cell.variant.name(),
                    bg.map(|r| format!(", background {}", fmt::ops(r)))
                        .unwrap_or_else(|| ", no background".into())
                ));
                let raw = match run_once(cell.variant, &spec, stop::flag()) {
                    Err(Error::Interrupted) => {
                        out.interrupted = true;
                        return Ok(out);
                    }
                    r => r?,
                };
                if stop::requested() {
                    out.interrupted = true;
                    return Ok(out);
                }
                cell.add(&raw, clock)?;
                progress.inc(1);
            }
        }
    }
    Ok(out)
}
