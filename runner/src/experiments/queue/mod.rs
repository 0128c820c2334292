//! `runner queue`: the SPSC queue document (seeds/002). Six variants on the same
//! 16-byte tick, paced open-loop (headline), swept over twelve offered rates
//! (`--sweep`), and unpaced (`--throughput`). Variants are interleaved run by run so
//! that every variant sees the same moments of a noisy machine.

pub mod claims;
pub mod report;
pub mod work;

mod args;

pub use args::{config, QueueArgs};

use crate::lab;
use crate::lab::error::{Error, Result};
use crate::lab::experiment::Experiment;
use crate::lab::fmt;
use crate::lab::measure::Measured;
pub use crate::lab::measure::Mode;
use crate::lab::pacer;
use crate::lab::session::{Output, Plan, Session};
use crate::lab::stop;
use crate::lab::topology::Topology;
use handoff_clock::Clock;
use serde::Serialize;
use work::{run_once, RunSpec, Variant};

/// The source document.
pub const DOCUMENT: &str = "seeds/002_96b034c3473d5bd0.txt";

/// `runner queue`.
pub struct Queue;

impl Experiment for Queue {
    type Args = QueueArgs;
    type Config = Config;
    const NAME: &'static str = "queue";
    const DOCUMENT: &'static str = DOCUMENT;
    const ABOUT: &'static str =
        "SPSC queue document: lock-free rings vs Boost vs mutex+condvar (seeds/002)";
    const RUNS: &'static str = "5";
    const ROLES: &'static str = "producer, consumer[, control thread]";
    const A_RUN: &'static str =
        "one pass of --items items per variant and mode; the runs' histograms are merged";
    const ALL_FLAGS: &'static [&'static str] = &["--all"];

    fn configure(a: &QueueArgs, topo: &Topology) -> Result<(Config, Option<String>)> {
        config(a, topo)
    }

    fn placement(c: &Config, note: Option<String>) -> Plan {
        Plan {
            out: c.out.clone(),
            roles: vec![("producer", c.pins[0]), ("consumer", c.pins[1])],
            control: c.pins.get(2).copied(),
            pin_note: note,
            noise_seconds: c.noise_seconds,
        }
    }

    fn run(cfg: &Config, session: &mut Session) -> Result<Output> {
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
                Mode::Headline => lab::measure::table(
                    &format!(
                        "headline: paced at {}, {} runs x {} items, capacity {}, latency = producer stamp before push -> consumer stamp after pop",
                        fmt::rate(cfg.rate_hz), cfg.runs, cfg.items, cfg.capacity
                    ),
                    outcome.of(Mode::Headline).map(Cell::row),
                ),
                Mode::Sweep => report::sweep_table(&outcome, cfg),
                Mode::Throughput => lab::measure::table(
                    &format!("throughput: unpaced, {} runs x {} items, capacity {} (medians of runs)", cfg.runs, cfg.items, cfg.capacity),
                    outcome.of(Mode::Throughput).map(Cell::row),
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

/// One (mode, variant, offered rate) cell: the merged runs (`lab::measure`), reached
/// through `Deref`.
#[derive(Clone, Debug)]
pub struct Cell {
    /// Mode.
    pub mode: Mode,
    /// Variant.
    pub variant: Variant,
    /// Why it didn't run, if it didn't.
    pub unavailable: Option<String>,
    /// What the runs measured.
    pub measured: Measured,
}

impl std::ops::Deref for Cell {
    type Target = Measured;

    fn deref(&self) -> &Measured {
        &self.measured
    }
}

impl Cell {
    fn new(mode: Mode, variant: Variant, offered_hz: Option<f64>, items: usize) -> Cell {
        Cell {
            mode,
            variant,
            unavailable: None,
            measured: Measured::new(offered_hz, items),
        }
    }

    /// The table row of this cell.
    pub fn row(&self) -> lab::measure::Row<'_> {
        (
            self.variant.name(),
            match &self.unavailable {
                Some(why) => Err(why.as_str()),
                None => Ok(&self.measured),
            },
        )
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
                    timer: clock.timer(),
                    producer_cpu: cfg.pins[0],
                    consumer_cpu: cfg.pins[1],
                    stop: stop::flag(),
                };
                let data = run_once(cell.variant, &spec)?;
                if stop::requested() {
                    out.interrupted = true;
                    return Ok(out);
                }
                cell.measured.add(&data, clock, cell.variant.name())?;
                progress.inc(1);
            }
        }
        i = j;
    }
    Ok(out)
}
