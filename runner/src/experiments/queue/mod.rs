//! `runner queue`: the SPSC queue document (document 002). Nine variants on the same
//! 16-byte tick, paced open-loop (headline), swept over twelve offered rates
//! (`--sweep`), unpaced (`--throughput`), and in paced bursts (`--burst`: what a wait
//! inside a call costs an item of a burst; the project's, not the document's). Variants are interleaved run by run so
//! that every variant sees the same moments of a noisy machine.

pub mod burst;
pub mod claims;
pub mod report;
pub mod ring_sweep;
pub mod saturated;
pub mod shapes;
pub mod sweep_shapes;
mod tail;
pub mod work;

mod args;
#[cfg(test)]
mod test_cells;
#[cfg(test)]
mod verdict_tests;

pub use args::{config, Config, QueueArgs, Settings};
pub use report::Outcome;

use crate::lab::error::Result;
use crate::lab::experiment::{AllFlags, AllRun, Experiment};
use crate::lab::fmt;
pub use crate::lab::measure::Mode;
use crate::lab::paced;
use crate::lab::pin::Placement;
use crate::lab::rotate;
use crate::lab::schema::Document;
use crate::lab::session::Session;
use crate::lab::stop;
use crate::lab::topology::Topology;
use handoff_clock::Clock;
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
    const ALL: AllFlags = AllFlags {
        smoke: AllRun {
            flags: &[
                "--all",
                "--runs",
                "1",
                "--items",
                "5000",
                "--sweep-seconds",
                "0.01",
                "--bursts",
                "50",
                "--noise-seconds",
                "0.2",
            ],
            seconds: 2,
        },
        quick: AllRun {
            flags: &[
                "--all",
                "--runs",
                "2",
                "--items",
                "500000",
                "--sweep-seconds",
                "0.05",
                "--bursts",
                "500",
                "--noise-seconds",
                "0.5",
            ],
            seconds: 30,
        },
        // Twelve runs a fifth the size of its own default's, spread over the rounds of
        // `runner all` (`lab::rounds`): the hand-rolled ring's regime is drawn once a
        // run, so more runs show it both ways more surely.
        default: AllRun {
            flags: &[
                "--all",
                "--runs",
                "12",
                "--items",
                "190000",
                "--sweep-seconds",
                "0.04",
                "--bursts",
                "400",
            ],
            seconds: 140,
        },
        full: AllRun {
            flags: &["--all"],
            seconds: 145,
        },
    };

    fn configure(
        a: &QueueArgs,
        pin: Option<&str>,
        topo: &Topology,
    ) -> Result<(Settings, Placement)> {
        config(a, pin, topo)
    }

    fn run(cfg: &Config, session: &mut Session) -> Result<Outcome> {
        let bar = session.progress(0)?;
        let step_ns = session.env.clock_read_cost_ns.step_ns;
        execute(cfg, &session.clock, step_ns, &bar)
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

/// Runs every requested mode: one cell per (mode, offered rate, variant). The cells of
/// one offered rate alternate slice by slice (`lab::rotate::groups`), and the round trip
/// between the two cores is probed between consecutive slices, so that each slice is
/// tagged with the host's placement of the cores (`lab::placed`).
pub fn execute(
    cfg: &Config,
    clock: &Clock,
    step_ns: f64,
    progress: &indicatif::ProgressBar,
) -> Result<Outcome> {
    let mut out = Outcome::default();
    for &mode in &cfg.modes {
        // Offered items per second (for the bursty load, bursts per second times the
        // burst's size).
        let rates: Vec<Option<f64>> = match mode {
            Mode::Headline => vec![Some(cfg.rate_hz)],
            Mode::Sweep => Config::sweep_rates().into_iter().map(Some).collect(),
            Mode::Throughput => vec![None],
            Mode::Burst => vec![Some(cfg.burst_rate_hz * cfg.burst_size as f64)],
        };
        for rate in rates {
            for &v in &cfg.variants {
                let items = match (mode, rate) {
                    (Mode::Sweep, Some(r)) => cfg.sweep_items(r),
                    (Mode::Burst, _) => cfg.bursts * cfg.burst_size,
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
    let (producer, consumer) = (cfg.placement.producer(), cfg.placement.consumer());
    let timer = clock.timer();
    out.placements = paced::run_sliced(
        progress,
        &mut out.cells,
        plan,
        cfg.slices,
        label,
        clock,
        (producer, consumer),
        step_ns,
        |cell, items, _| {
            let burst = if cell.mode == Mode::Burst {
                cfg.burst_size
            } else {
                1
            };
            let spec = RunSpec {
                items,
                capacity: cfg.capacity,
                rate_hz: cell.offered_hz.map(|r| r / burst as f64),
                burst: burst as u64,
                timer,
                producer_cpu: producer,
                consumer_cpu: consumer,
                stop: stop::flag(),
            };
            run_once(cell.variant, &spec)
        },
    )?;
    Ok(out)
}
