//! What an experiment is to the lab: a typed [`Experiment`] (its flags, its validated
//! configuration, the placement it asks for and its run), and [`Entry`], the
//! object-safe face the registry lists, which every `Experiment` gets from a blanket
//! impl. An experiment writes only its measurement and its report; the frame (the
//! command line, the common flags' words, validation before anything runs, the session
//! around the run) is here and in `session`.

use super::child::Task;
use super::claims::Claim;
use super::error::{Error, Result};
use super::flags::{Common, Run};
use super::noise::Probes;
use super::pin::Placement;
use super::results::Outputs;
use super::schema::{Document, Sweep, Variant};
use super::session::{Output, Plan, Session};
use super::stop;
use super::topology::Topology;
use clap::{Args as _, FromArgMatches as _};
use serde_json::{Map, Value};

/// One experiment of the lab, reproducing one source document.
pub trait Experiment: Sync + 'static {
    /// Its own flags; the frame adds [`Common`]'s to its command.
    type Args: clap::Args + clap::FromArgMatches;
    /// Its own validated settings; the frame holds them in a [`Setup`] with the
    /// common flags and the placement, and writes that into the results as `config`.
    type Config: serde::Serialize + 'static;
    /// What a run measured; the frame turns it into the printed report, the results
    /// JSON and the charts.
    type Outcome: Report<Setup<Self::Config>>;
    /// The subcommand: `queue`, `pipeline`, ...
    const NAME: &'static str;
    /// The source document it reproduces.
    const DOCUMENT: Document;
    /// One line for `runner --help`.
    const ABOUT: &'static str;
    /// Its default `--runs`.
    const RUNS: &'static str;
    /// The fewest `--runs` it accepts (2 where the first run is dropped as warm-up).
    const MIN_RUNS: usize = 1;
    /// The most `--runs` it accepts.
    const MAX_RUNS: usize = 1000;
    /// The roles `--pin` places, in order, for its `--help`.
    const ROLES: &'static str;
    /// What one run is, for its `--help`.
    const A_RUN: &'static str;
    /// What `--sweep` sweeps, for its `--help` (an experiment that flattens
    /// [`Modes`](super::paced::Modes) into its flags; empty otherwise).
    const SWEEP: &'static str = "";
    /// What `runner all` gives it at each scale (its flags, before `--out`) and about
    /// how long that takes on a 2-core machine.
    const ALL: AllFlags;
    /// The task a child runner runs for it (an allocator contender that needs another
    /// global allocator; see `lab::child`), by name.
    const CHILD_TASK: Option<(&'static str, Task)> = None;
    /// Whether its contenders include jemalloc or mimalloc, which only the
    /// `runner-contenders` binary links: the runner switches to it before measuring
    /// (see `lab::contenders`).
    const CONTENDERS: bool = false;

    /// Validates its own flags against this machine and places its threads (`pin`:
    /// the `--pin` given, if any), after the frame validated the common flags: bad
    /// input is [`Error::Usage`], found before anything is measured or written.
    fn configure(
        args: &Self::Args,
        pin: Option<&str>,
        topo: &Topology,
    ) -> Result<(Self::Config, Placement)>;

    /// Measures, and returns what it measured. On Ctrl-C it returns
    /// [`Error::Interrupted`] (or whatever it has: the frame checks again).
    fn run(cfg: &Setup<Self::Config>, session: &mut Session) -> Result<Self::Outcome>;
}

/// An experiment's validated configuration as the frame holds it: the common flags
/// (`run`), where the threads run (`placement`), and the experiment's own settings,
/// reached through `Deref`. Written into the results as `config`, the common flags and
/// the settings flattened beside `placement`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Setup<S> {
    /// `--runs`, `--out`, `--noise-seconds`, validated.
    #[serde(flatten)]
    pub run: Run,
    /// Where the threads run.
    pub placement: Placement,
    /// The experiment's own settings.
    #[serde(flatten)]
    pub own: S,
}

impl<S> std::ops::Deref for Setup<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.own
    }
}

/// What a run of an experiment measured, as the lab reports it: the printed tables,
/// the document's claims beside this run's figures, the contenders and sweeps of the
/// results JSON (`lab::schema`), and the charts. The frame assembles them into one
/// [`Output`] for every experiment.
pub trait Report<C> {
    /// The printed tables, in order.
    fn sections(&self, cfg: &C) -> Vec<String>;
    /// The document's claims beside this run's figures; `noise` holds the noise
    /// probes when the run had them, for claims on tails.
    fn claims(&self, cfg: &C, noise: Option<&Probes>) -> Vec<Claim>;
    /// Every contender with its figures (`variants[]`).
    fn variants(&self, cfg: &C) -> Vec<Variant>;
    /// Its sweeps (`sweeps[]`), if it has any.
    fn sweeps(&self, _cfg: &C) -> Vec<Sweep> {
        Vec::new()
    }
    /// Fields of the experiment's own, added at the top of the results JSON (ratios,
    /// raw samples, calibrations).
    fn fields(&self, _cfg: &C) -> Map<String, Value> {
        Map::new()
    }
    /// Charts and any other files, written with the JSON.
    fn charts(&self, cfg: &C) -> Result<Outputs>;
}

/// The report of `outcome`: its sections, claims, charts, and the experiment's part of
/// the results JSON (`config`, `variants`, `sweeps` and its own fields).
pub fn output<C: serde::Serialize, R: Report<C>>(
    outcome: &R,
    cfg: &C,
    noise: Option<&Probes>,
) -> Result<Output> {
    let mut json = Map::new();
    json.insert("config".into(), serde_json::to_value(cfg)?);
    let variants: Vec<Value> = outcome
        .variants(cfg)
        .into_iter()
        .map(Variant::into_value)
        .collect();
    json.insert("variants".into(), variants.into());
    json.insert("sweeps".into(), serde_json::to_value(outcome.sweeps(cfg))?);
    json.extend(outcome.fields(cfg));
    Ok(Output {
        sections: outcome.sections(cfg),
        claims: outcome.claims(cfg, noise),
        json,
        files: outcome.charts(cfg)?,
    })
}

/// How big `runner all` runs every experiment: `--quick` (about two minutes on 2 cores),
/// the default (about ten) or `--full` (the documents' own sizes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// The smallest runs that take every path once (about half a minute on 2 cores,
    /// two or three minutes on an emulated 8-core machine): for emulated machines and
    /// CI's many-core smoke test. Its figures mean little.
    Smoke,
    /// About two minutes in all.
    Quick,
    /// About ten minutes in all.
    Default,
    /// The documents' own sizes.
    Full,
}

/// An experiment's part of `runner all` at one scale.
#[derive(Clone, Copy, Debug)]
pub struct AllRun {
    /// Its flags (before `--out`).
    pub flags: &'static [&'static str],
    /// About how long it takes on the 2-core development machine, for the time left.
    pub seconds: u32,
}

/// An experiment's part of `runner all` at every scale.
#[derive(Clone, Copy, Debug)]
pub struct AllFlags {
    /// `--smoke`.
    pub smoke: AllRun,
    /// `--quick`.
    pub quick: AllRun,
    /// The default.
    pub default: AllRun,
    /// `--full`.
    pub full: AllRun,
}

impl AllFlags {
    /// Its part at `scale`.
    pub fn at(&self, scale: Scale) -> AllRun {
        match scale {
            Scale::Smoke => self.smoke,
            Scale::Quick => self.quick,
            Scale::Default => self.default,
            Scale::Full => self.full,
        }
    }
}

/// An experiment as the registry lists it (object-safe; every [`Experiment`] is one).
pub trait Entry: Sync {
    /// The subcommand.
    fn name(&self) -> &'static str;
    /// The source document.
    fn document(&self) -> Document;
    /// Its subcommand with every flag and default (the only place a default is
    /// written), the common flags' roles and runs explained.
    fn command(&self) -> clap::Command;
    /// What `runner all` gives it at `scale`.
    fn all(&self, scale: Scale) -> AllRun;
    /// Its child-process task, if it has one.
    fn child_task(&self) -> Option<(&'static str, Task)>;
    /// Whether it needs the `runner-contenders` binary ([`Experiment::CONTENDERS`]).
    fn contenders(&self) -> bool;
    /// Parses its typed flags from clap's matches and validates them.
    fn prepare(&self, m: &clap::ArgMatches, topo: &Topology) -> Result<Box<dyn Prepared>>;
}

/// A validated run of an experiment.
pub trait Prepared {
    /// The placement, output folder and noise probe the session needs.
    fn plan(&self) -> Plan;
    /// Measures, and returns what the report and the files need.
    fn run(&self, session: &mut Session) -> Result<Output>;
}

impl<E: Experiment> Entry for E {
    fn name(&self) -> &'static str {
        E::NAME
    }

    fn document(&self) -> Document {
        E::DOCUMENT
    }

    fn command(&self) -> clap::Command {
        command::<E>()
    }

    fn all(&self, scale: Scale) -> AllRun {
        E::ALL.at(scale)
    }

    fn child_task(&self) -> Option<(&'static str, Task)> {
        E::CHILD_TASK
    }

    fn contenders(&self) -> bool {
        E::CONTENDERS
    }

    fn prepare(&self, m: &clap::ArgMatches, topo: &Topology) -> Result<Box<dyn Prepared>> {
        Ok(Box::new(Planned::<E> {
            cfg: validated::<E>(m, topo)?,
        }))
    }
}

/// `E`'s subcommand: its flags, its about line, the common flags' words.
fn command<E: Experiment>() -> clap::Command {
    // The about goes on after the flags: `augment_args` would put the struct's doc.
    let cmd = E::Args::augment_args(clap::Command::new(E::NAME));
    let mut cmd = Common::augment_args(cmd).about(E::ABOUT);
    if !E::SWEEP.is_empty() {
        cmd = cmd.mut_arg("sweep", |a| a.help(E::SWEEP));
    }
    Common::explain(cmd, E::RUNS, E::ROLES, E::A_RUN)
}

/// `E`'s flags from clap's matches, validated: the common flags first (read from the
/// same matches: the frame added them to the command), then the experiment's own.
fn validated<E: Experiment>(m: &clap::ArgMatches, topo: &Topology) -> Result<Setup<E::Config>> {
    let common = Common::from_arg_matches(m).map_err(|e| Error::from_clap(&e))?;
    let run = common.validate(E::MIN_RUNS, E::MAX_RUNS)?;
    let args = E::Args::from_arg_matches(m).map_err(|e| Error::from_clap(&e))?;
    let (own, placement) = E::configure(&args, common.pin.as_deref(), topo)?;
    Ok(Setup {
        run,
        placement,
        own,
    })
}

/// `args` (the flags after the subcommand) matched against `E`'s command line.
fn matches<E: Experiment>(args: &[&str]) -> Result<clap::ArgMatches> {
    let argv = std::iter::once(E::NAME).chain(args.iter().copied());
    command::<E>()
        .try_get_matches_from(argv)
        .map_err(|e| Error::from_clap(&e))
}

/// A validated configuration, ready to run.
struct Planned<E: Experiment> {
    cfg: Setup<E::Config>,
}

impl<E: Experiment> Prepared for Planned<E> {
    fn plan(&self) -> Plan {
        Plan {
            run: self.cfg.run.clone(),
            placement: self.cfg.placement.clone(),
        }
    }

    fn run(&self, session: &mut Session) -> Result<Output> {
        let outcome = E::run(&self.cfg, session)?;
        stop::check()?;
        let noise = session.probe_after()?.cloned();
        output(&outcome, &self.cfg, noise.as_ref())
    }
}

/// Parses `args` (the flags after the subcommand) as `E`'s command line, as `runner`
/// would: for tests of an experiment's validation.
pub fn parse_flags<E: Experiment>(args: &[&str]) -> Result<E::Args> {
    E::Args::from_arg_matches(&matches::<E>(args)?).map_err(|e| Error::from_clap(&e))
}

/// Parses and validates `args` as `E`'s command line on `topo`: the configuration
/// `runner <E> args` would run, or its one-line error. For tests of an experiment's
/// validation.
pub fn configure_from<E: Experiment>(args: &[&str], topo: &Topology) -> Result<Setup<E::Config>> {
    validated::<E>(&matches::<E>(args)?, topo)
}

/// [`configure_from`] on [`Topology::two_cores`], the development machine the
/// experiments' tests assume.
#[cfg(test)]
pub fn on_two_cores<E: Experiment>(args: &[&str]) -> Result<Setup<E::Config>> {
    configure_from::<E>(args, &Topology::two_cores())
}

/// Panics unless every command line of `cases` is refused on `topo` as bad input (exit
/// status 2) with one line that contains its needle: the check every experiment's
/// tests make of its bad input.
pub fn assert_refused<E: Experiment>(topo: &Topology, cases: &[(&[&str], &str)]) {
    for (args, needle) in cases {
        let e = match configure_from::<E>(args, topo) {
            Ok(_) => panic!("{args:?} was accepted"),
            Err(e) => e,
        };
        assert_eq!(e.exit_code(), 2, "{args:?}: {e:?}");
        let e = e.to_string();
        assert!(e.contains(needle), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
    }
}
