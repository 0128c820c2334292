//! `runner queue`: the SPSC queue document (document 002). Six variants on the same
//! 16-byte tick, paced open-loop (headline), swept over twelve offered rates
//! (`--sweep`), and unpaced (`--throughput`). Variants are interleaved run by run so
//! that every variant sees the same moments of a noisy machine.

pub mod claims;
pub mod report;
pub mod work;

mod args;

pub use args::{config, QueueArgs};

use crate::lab::error::Result;
use crate::lab::experiment::Experiment;
use crate::lab::experiment::Setup;
use crate::lab::fmt;
pub use crate::lab::measure::Mode;
use crate::lab::paced;
use crate::lab::pacer;
use crate::lab::pin::Placement;
use crate::lab::rotate;
use crate::lab::schema::Document;
use crate::lab::session::Session;
use crate::lab::stop;
use crate::lab::topology::Topology;
use handoff_clock::Clock;
use serde::Serialize;
use work::{run_once, RunSpec, Variant};

/// The source document.
pub const DOCUMENT: Document = Document {
    file: "002_96b034c3473d5bd0.txt",
    title: "Same queue API. Different tail by orders of magnitude.",
};

/// `runner queue`.
pub struct Queue;

impl Experiment for Queue {
    type Args = QueueArgs;
    type Config = Settings;
    type Outcome = Outcome;
    const NAME: &'static str = "queue";
    const DOCUMENT: Document = DOCUMENT;
    const ABOUT: &'static str =
        "SPSC queue document: lock-free rings vs Boost vs mutex+condvar (document 002); with no mode named, runs the headline";
    const RUNS: &'static str = "5";
    const MAX_RUNS: usize = 1 << 20;
    const ROLES: &'static str = "producer, consumer[, control thread]";
    const A_RUN: &'static str =
        "one pass of --items items per variant and mode; the runs' histograms are merged";
    const SWEEP: &'static str = "Run the load sweep: twelve offered rates from 100 kHz to 50 MHz";
    const ALL_FLAGS: &'static [&'static str] = &["--all"];

    fn configure(
        a: &QueueArgs,
        pin: Option<&str>,
        topo: &Topology,
    ) -> Result<(Settings, Placement)> {
        config(a, pin, topo)
    }

    fn run(cfg: &Config, session: &mut Session) -> Result<Outcome> {
        let bar = session.progress(0)?;
        execute(cfg, &session.clock, &bar)
    }
}

/// Everything `runner queue` was asked to do (after validation).
#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    /// Variants, in order.
    #[serde(serialize_with = "ser_variants")]
    pub variants: Vec<Variant>,
    /// Offered rate of the headline mode.
    pub rate_hz: f64,
    /// Items per run.
    pub items: usize,
    /// Queue capacity.
    pub capacity: usize,
    /// Modes to run.
    pub modes: Vec<Mode>,
    /// Sweep: seconds of offered load per point and run (caps the items at low rates).
    pub sweep_seconds: f64,
    /// Sweep: fewest items per point and run.
    pub sweep_min_items: usize,
}

/// The validated configuration: the common flags, the placement and these settings.
pub type Config = Setup<Settings>;

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
pub type Cell = paced::Cell<Variant, ()>;

impl paced::Named for Variant {
    fn name(self) -> &'static str {
        Variant::name(self)
    }
}

/// All cells of one invocation, in the order they were planned.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Cells.
    pub cells: Vec<Cell>,
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

/// Runs every requested mode: one cell per (mode, offered rate, variant); the cells of
/// one offered rate alternate run by run (`lab::rotate::groups`).
pub fn execute(cfg: &Config, clock: &Clock, progress: &indicatif::ProgressBar) -> Result<Outcome> {
    let mut out = Outcome::default();
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
                let mut cell = Cell::new(mode, v, rate, items, ());
                cell.unavailable = v.unavailable(cfg.capacity);
                out.cells.push(cell);
            }
        }
    }
    let plan = rotate::group_by(
        &out.cells,
        |c| (c.mode, c.offered_hz.map(f64::to_bits)),
        |c| c.unavailable.is_none(),
        |_| cfg.run.runs,
    );
    let label = |c: &Cell| {
        let at = c.offered_hz.map(|r| format!(" @ {}", fmt::rate(r)));
        format!(
            "{} {}{}",
            c.mode.name(),
            c.variant.name(),
            at.unwrap_or_default()
        )
    };
    rotate::groups(progress, &mut out.cells, &plan, label, |cell| {
        let spec = RunSpec {
            items: cell.items,
            capacity: cfg.capacity,
            rate_hz: cell.offered_hz,
            timer: clock.timer(),
            producer_cpu: cfg.placement.producer(),
            consumer_cpu: cfg.placement.consumer(),
            stop: stop::flag(),
        };
        let data = run_once(cell.variant, &spec)?;
        stop::check()?;
        cell.measured.add(&data, clock, cell.variant.name())
    })?;
    Ok(out)
}
