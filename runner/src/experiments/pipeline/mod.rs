//! `runner pipeline`: the cross-thread Order pipeline document (document 000). A producer
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
use crate::lab::error::Result;
use crate::lab::experiment::Experiment;
use crate::lab::experiment::Setup;
use crate::lab::fmt;
use crate::lab::harness::{self, Role};
use crate::lab::measure;
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
use handoff_stats::Latency;
use serde::Serialize;
use work::{run_once, RunSpec, Variant};

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
        let mut outcome = execute(cfg, &clock, rounds, &bar)?;
        outcome.risk_rounds = rounds;
        outcome.check_ns = check_ns;
        Ok(outcome)
    }
}

/// Measures the risk check on the consumer's core and returns (rounds, ns per check).
fn calibrate(cfg: &Config, clock: &Clock) -> Result<(u32, f64)> {
    let target = cfg.work_ns;
    let (_, mut out) = harness::run(
        clock.timer(),
        stop::flag(),
        vec![Role::new(cfg.placement.consumer(), |_s| {
            order::calibrate(target, clock)
        })],
    )?;
    Ok(out.remove(0))
}

/// Everything `runner pipeline` was asked to do (after validation).
#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    /// Variants, in order.
    #[serde(serialize_with = "ser_variants")]
    pub variants: Vec<Variant>,
    /// A background thread shares a measured core.
    pub bg_shares_core: bool,
    /// Producer and consumer were placed on different L3 groups.
    pub cross_l3: bool,
    /// Offered order rate (headline and sweep).
    pub rate_hz: f64,
    /// Orders per run.
    pub items: usize,
    /// Forward ring capacity.
    pub capacity: usize,
    /// Target weight of the risk check (ns).
    pub work_ns: f64,
    /// Background operations per second per thread (headline and throughput).
    pub bg_rate_hz: f64,
    /// Background threads (headline and throughput).
    pub bg_threads: usize,
    /// Modes to run.
    pub modes: Vec<Mode>,
}

/// The validated configuration: the common flags, the placement and these settings.
pub type Config = Setup<Settings>;

fn ser_variants<S: serde::Serializer>(v: &[Variant], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|v| v.name()))
}

impl Config {
    /// The cores of `n` background threads: the background cores, cycled.
    pub fn background_cores(&self, n: usize) -> Vec<usize> {
        let bg = self.placement.cores_of("background");
        (0..n).map(|i| bg[i % bg.len()]).collect()
    }

    /// The sweep's background rates: none, then eight log-spaced from 100 k/s to 10 M/s.
    pub fn sweep_points() -> Vec<Option<f64>> {
        std::iter::once(None)
            .chain(pacer::log_spaced(1e5, 1e7, 8).into_iter().map(Some))
            .collect()
    }
}

/// One (mode, variant, background rate) cell: its merged runs (`lab::measure`, through
/// `Deref`) and the pipeline's own figures.
pub type Cell = paced::Cell<Variant, Load>;

impl paced::Named for Variant {
    fn name(self) -> &'static str {
        Variant::name(self)
    }
}

/// A pipeline cell's own figures: its background load and the costs on each side.
#[derive(Clone, Debug, Default)]
pub struct Load {
    /// Background operations per second per thread (`None`: no background thread).
    pub bg_rate_hz: Option<f64>,
    /// Background threads.
    pub bg_threads: usize,
    /// Stamp before the allocation -> stamp after it (the producer's allocation cost), ns.
    pub alloc_ns: Latency,
    /// Dequeue -> checked and freed (the consumer's work per order), ns.
    pub service_ns: Latency,
    /// Achieved background operations per second (all threads), per run.
    pub bg_achieved: Vec<f64>,
    /// Pool allocations refused (retried), all runs.
    pub exhausted: u64,
}

impl Cell {
    /// Median achieved background rate over the runs.
    pub fn bg_achieved_hz(&self) -> Option<f64> {
        measure::median(self.extra.bg_achieved.clone())
    }

    fn add(&mut self, raw: &work::RunRaw, clock: &Clock) -> Result<()> {
        for (&pre, &t) in raw.before_alloc.iter().zip(&raw.stamps.send) {
            self.extra
                .alloc_ns
                .record(clock.ticks_to_ns(t.saturating_sub(pre)));
        }
        for (&r, &d) in raw.stamps.recv.iter().zip(&raw.done) {
            self.extra
                .service_ns
                .record(clock.ticks_to_ns(d.saturating_sub(r)));
        }
        if !raw.bg.is_empty() {
            self.extra
                .bg_achieved
                .push(raw.bg.iter().map(|b| b.rate()).sum());
        }
        self.extra.exhausted += raw.exhausted;
        self.measured.add(&raw.stamps, clock, self.variant.name())
    }
}

/// All cells of one invocation.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Cells, in plan order.
    pub cells: Vec<Cell>,
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

/// Runs every requested mode: one cell per (mode, background rate, variant); the cells
/// of one background rate alternate run by run (`lab::rotate::groups`). The sweep runs
/// each point once.
pub fn execute(
    cfg: &Config,
    clock: &Clock,
    rounds: u32,
    progress: &indicatif::ProgressBar,
) -> Result<Outcome> {
    let mut out = Outcome::default();
    for &mode in &cfg.modes {
        let points: Vec<(Option<f64>, usize)> = match mode {
            Mode::Headline | Mode::Throughput => {
                vec![(
                    (cfg.bg_threads > 0).then_some(cfg.bg_rate_hz),
                    cfg.bg_threads,
                )]
            }
            Mode::Sweep => Config::sweep_points()
                .into_iter()
                .map(|bg| (bg, usize::from(bg.is_some()) * cfg.bg_threads.max(1)))
                .collect(),
        };
        let offered = (mode != Mode::Throughput).then_some(cfg.rate_hz);
        for (bg, bg_threads) in points {
            for &v in &cfg.variants {
                let load = Load {
                    bg_rate_hz: bg,
                    bg_threads,
                    ..Load::default()
                };
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
                1
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
    rotate::groups(progress, &mut out.cells, &plan, label, |cell| {
        let spec = RunSpec {
            items: cfg.items,
            capacity: cfg.capacity,
            rate_hz: cell.offered_hz,
            timer,
            producer_cpu: cfg.placement.producer(),
            consumer_cpu: cfg.placement.consumer(),
            bg_cpus: cfg.background_cores(cell.extra.bg_threads),
            bg_rate_hz: cell.extra.bg_rate_hz.unwrap_or(1.0),
            bg_shares_core: cfg.bg_shares_core,
            risk_rounds: rounds,
            window_ticks: clock.ns_to_ticks(WINDOW_NS),
        };
        let raw = run_once(cell.variant, &spec, stop::flag())?;
        stop::check()?;
        cell.add(&raw, clock)
    })?;
    Ok(out)
}
