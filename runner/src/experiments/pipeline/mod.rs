//! `runner pipeline`: the cross-thread Order pipeline document (document 000). A producer
//! allocates 64-byte Orders and hands them through a `handoff_spsc` ring to a consumer
//! that runs a risk check and frees them, beside a background heap thread. Four
//! allocation strategies, interleaved run by run: paced at 1 MHz (headline), swept over
//! background pressure (`--sweep`), and unpaced (`--throughput`).

pub mod background;
pub mod claims;
pub mod cross_l3;
pub mod order;
pub mod report;
mod sweep_claims;
mod throughput;
pub mod work;

mod args;
mod child;

pub use args::{config, Config, PipelineArgs, Settings};
pub use report::Outcome;
pub use work::{Cell, Load};

use crate::lab::child::Task;
use crate::lab::error::Result;
use crate::lab::experiment::{AllFlags, AllRun, Experiment};
use crate::lab::fmt;
pub use crate::lab::measure::Mode;
use crate::lab::paced;
use crate::lab::pin::Placement;
use crate::lab::rotate;
use crate::lab::schema::Document;
use crate::lab::session::Session;
use crate::lab::topology::Topology;
use crate::lab::{rounds, stop};
use handoff_clock::Clock;
use work::{calibrate, run_once, RunSpec};

/// The source document.
pub const DOCUMENT: Document = Document {
    file: "000_37425f930bda1a6c.txt",
    title: "Allocators: cross-thread order pipeline",
};

/// The risk check's velocity window.
const WINDOW_NS: u64 = 1_000_000;

/// `runner pipeline`.
pub struct Pipeline;

impl Experiment for Pipeline {
    type Args = PipelineArgs;
    type Config = Settings;
    type Outcome = Outcome;
    const NAME: &'static str = "pipeline";
    const DOCUMENT: Document = DOCUMENT;
    const ABOUT: &'static str = "Cross-thread Order pipeline: malloc vs return-queue pool vs rotating arena vs mimalloc, under background heap pressure (document 000); with no mode named, runs all three";
    const RUNS: &'static str = "5";
    const MAX_RUNS: usize = 1 << 20;
    const ROLES: &'static str = "producer, consumer, background[, more background]";
    const A_RUN: &'static str = "one pass of --items orders per variant in the headline and throughput modes (histograms merged); the sweep runs once per point";
    const SWEEP: &'static str =
        "Run the background-pressure sweep: no T_bg, then 8 rates from 100 k/s to 10 M/s";
    const CHILD_TASK: Option<(&'static str, Task)> = Some((child::CHILD_TASK, child::child_task));
    const CONTENDERS: bool = true;

    const ALL: AllFlags = AllFlags {
        smoke: AllRun {
            flags: &[
                "--all",
                "--runs",
                "1",
                "--items",
                "5000",
                "--noise-seconds",
                "0.2",
            ],
            seconds: 4,
        },
        quick: AllRun {
            flags: &["--runs", "2", "--items", "500000", "--noise-seconds", "0.5"],
            seconds: 27,
        },
        // Nine runs a quarter the size of its own default's, one in each of the
        // rounds of `runner all`; the sweep once in each (`lab::rounds`).
        default: AllRun {
            flags: &["--runs", "9", "--items", "250000"],
            seconds: 100,
        },
        full: AllRun {
            flags: &[],
            seconds: 72,
        },
    };

    fn configure(
        a: &PipelineArgs,
        pin: Option<&str>,
        topo: &Topology,
    ) -> Result<(Settings, Placement)> {
        config(a, pin, topo)
    }

    fn run(cfg: &Config, session: &mut Session) -> Result<Outcome> {
        let clock = session.clock.clone();
        let (rounds, check_ns) = calibrate(cfg, &clock)?;
        println!(
            "risk check: {} per order on core {} ({} extra window passes; --work-ns {})",
            fmt::ns(check_ns),
            cfg.placement.consumer(),
            rounds,
            cfg.work_ns
        );
        let bar = session.progress(0)?;
        let step_ns = session.env.clock_read_cost_ns.step_ns;
        let mut outcome = execute(cfg, &clock, rounds, step_ns, &bar)?;
        if let Some(cross) = cross_l3_setup(cfg) {
            // The same headline, the consumer moved to another L3 group; the same risk
            // check (calibrated on the first consumer's core), so that only the
            // placement differs.
            let out = execute(&cross, &clock, rounds, step_ns, &bar)?;
            outcome.cross = Some(Box::new(report::Cross { cfg: cross, out }));
        }
        outcome.risk_rounds = rounds;
        outcome.check_ns = check_ns;
        Ok(outcome)
    }
}

/// The cross-L3 headline's configuration: the headline alone, the consumer on
/// `cross_consumer`, the producer and the background threads where they were; `None`
/// where the run has no cross-L3 part.
fn cross_l3_setup(cfg: &Config) -> Option<Config> {
    let consumer = cfg.cross_consumer?;
    let mut cross = cfg.clone();
    cross.placement = cfg.placement.cores_of("background").into_iter().fold(
        Placement::pair(cfg.placement.producer(), consumer).with_control(cfg.placement.control()),
        |p, b| p.with("background", b),
    );
    cross.own.cross_l3 = true;
    cross.own.cross_consumer = None;
    cross.own.modes = vec![Mode::Headline];
    Some(cross)
}

/// Runs every requested mode: one cell per (mode, background rate, variant). The cells
/// of one background rate alternate slice by slice (`lab::paced::run_sliced`), and the
/// round trip between the producer's and the consumer's core is probed between
/// consecutive slices, so that each slice is tagged with the host's placement of the
/// cores (`lab::placed`). The sweep runs each point once.
pub fn execute(
    cfg: &Config,
    clock: &Clock,
    rounds: u32,
    step_ns: f64,
    progress: &indicatif::ProgressBar,
) -> Result<Outcome> {
    let mut out = Outcome::default();
    for &mode in &cfg.modes {
        let points: Vec<(Option<f64>, usize)> = match mode {
            // Bursts are the queue experiment's; the pipeline never plans them.
            Mode::Headline | Mode::Throughput | Mode::Burst => {
                let n = cfg.headline_bg_threads;
                vec![((n > 0).then_some(cfg.bg_rate_hz), n)]
            }
            Mode::Sweep => Config::sweep_points()
                .into_iter()
                .map(|bg| (bg, usize::from(bg.is_some()) * cfg.bg_threads.max(1)))
                .collect(),
        };
        let offered = (mode != Mode::Throughput).then_some(cfg.rate_hz);
        for (bg, bg_threads) in points {
            for &v in &cfg.variants {
                let load = Load::new(bg, bg_threads);
                out.cells.push(Cell::new(mode, v, offered, cfg.items, load));
            }
        }
    }
    let plan = rotate::group_by(
        &out.cells,
        |c| (c.mode, c.extra.bg_rate_hz.map(f64::to_bits)),
        |_| true,
        |c| {
            if c.mode == Mode::Sweep {
                // Once, and in `runner all` once in each round.
                rounds::at_least_one_each(1)
            } else {
                cfg.run.runs
            }
        },
    );
    let label = |c: &Cell| {
        let bg = c
            .extra
            .bg_rate_hz
            .map(|r| format!(", background {}", fmt::ops(r)));
        let bg = bg.unwrap_or_else(|| ", no background".into());
        format!("{} {}{bg}", c.mode.name(), c.variant.name())
    };
    let timer = clock.timer();
    let (producer, consumer) = (cfg.placement.producer(), cfg.placement.consumer());
    out.placements = paced::run_sliced(
        progress,
        &mut out.cells,
        plan,
        cfg.slices,
        label,
        clock,
        (producer, consumer),
        step_ns,
        |cell, items, step| {
            let spec = RunSpec {
                items,
                capacity: cfg.capacity,
                rate_hz: cell.offered_hz,
                timer,
                producer_cpu: producer,
                consumer_cpu: consumer,
                bg_cpus: cfg.background_cores(cell.extra.bg_threads),
                bg_rate_hz: cell.extra.bg_rate_hz.unwrap_or(1.0),
                bg_shares_core: cfg.bg_shares_core,
                risk_rounds: rounds,
                window_ticks: clock.ns_to_ticks(WINDOW_NS),
            };
            let raw = run_once(cell.variant, &spec, stop::flag())?;
            stop::check()?;
            Ok(cell.add_slice(raw, clock, step.ends_run()))
        },
    )?;
    Ok(out)
}
