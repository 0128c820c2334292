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
use std::ffi::{OsStr, OsString};

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
    /// how long that takes on a 2-core machine. Its own `--smoke`, `--quick` and
    /// `--full` stand for the same flags (the frame adds them; an experiment with a
    /// switch of one of those names, alloc's `--full`, must list it at that scale).
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

/// How big `runner all` runs every experiment (`--smoke`, `--quick`, the default or
/// `--full`; [`Scale::about`] says what each is). Every experiment takes the same
/// flags and runs with the flags `runner all` gives it at that scale ([`AllFlags`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// The smallest runs that take every path once (about a quarter of a minute on 2
    /// cores, two or three minutes on an emulated 8-core machine): for emulated
    /// machines and CI's many-core smoke test. Its figures mean little.
    Smoke,
    /// Smaller runs, for a first look (about two minutes in all on 2 cores).
    Quick,
    /// The default sizes (about ten minutes in all on 2 cores).
    Default,
    /// The documents' own sizes.
    Full,
}

impl Scale {
    /// The scales a flag names (`--smoke`, `--quick`, `--full`); the default has none.
    pub const FLAGGED: [Scale; 3] = [Scale::Smoke, Scale::Quick, Scale::Full];

    /// The flag that names it (`smoke`, `quick`, `full`); none for the default.
    pub fn flag(self) -> Option<&'static str> {
        match self {
            Scale::Smoke => Some("smoke"),
            Scale::Quick => Some("quick"),
            Scale::Default => None,
            Scale::Full => Some("full"),
        }
    }

    /// What it is, in the words every help text and document uses.
    pub fn about(self) -> &'static str {
        match self {
            Scale::Smoke => "the smallest runs that take every path once",
            Scale::Quick => "smaller runs, for a first look",
            Scale::Default => "the default sizes",
            Scale::Full => "the documents' own sizes",
        }
    }
}

/// About how long `seconds` is, for the help texts' estimates: `about 26 s`, `about 10
/// minutes`.
///
/// ```
/// use runner::lab::experiment::about_time;
/// assert_eq!(about_time(26), "about 26 s");
/// assert_eq!(about_time(571), "about 10 minutes");
/// ```
pub fn about_time(seconds: u32) -> String {
    if seconds < 90 {
        format!("about {seconds} s")
    } else {
        format!("about {} minutes", (seconds + 30) / 60)
    }
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
    /// `args` (the flags after the subcommand) matched against its command as `runner
    /// <name>` reads them: a scale flag (`--smoke`, `--quick`, `--full`) stands for the
    /// flags `runner all` gives it at that scale, a flag in `args` overriding the
    /// scale's value (see [`expanded`]).
    fn matches(&self, args: &[OsString]) -> Result<clap::ArgMatches>;
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

    fn matches(&self, args: &[OsString]) -> Result<clap::ArgMatches> {
        matches::<E, _>(args)
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

/// `E`'s subcommand: its flags, its about line, the common flags' words, the scale
/// flags.
fn command<E: Experiment>() -> clap::Command {
    // The about goes on after the flags: `augment_args` would put the struct's doc.
    let cmd = E::Args::augment_args(clap::Command::new(E::NAME));
    let mut cmd = Common::augment_args(cmd).about(E::ABOUT);
    if !E::SWEEP.is_empty() {
        cmd = cmd.mut_arg("sweep", |a| a.help(E::SWEEP));
    }
    scale_flags(Common::explain(cmd, E::RUNS, E::ROLES, E::A_RUN), &E::ALL)
}

/// `cmd` with the scale flags `--smoke`, `--quick` and `--full` (at most one), each
/// saying what it is and listing the flags `runner all` gives the experiment at that
/// scale (from `all`, so the help cannot drift from what runs), and a closing line on
/// how they combine with other flags. A later value of a flag overrides an earlier one
/// (`args_override_self`): [`expanded`] puts the scale's flags before the user's, so
/// the user's win. An experiment with a flag of that name of its own (alloc's `--full`,
/// which is all its `runner all --full` gives it) keeps it, its help extended.
fn scale_flags(mut cmd: clap::Command, all: &AllFlags) -> clap::Command {
    use clap::{Arg, ArgAction};
    let long = |cmd: &clap::Command, name: &str| {
        cmd.get_arguments()
            .find(|a| a.get_long() == Some(name))
            .map(|a| {
                debug_assert!(
                    matches!(a.get_action(), ArgAction::SetTrue),
                    "{}: its own --{name} must be a switch to be a scale",
                    cmd.get_name()
                );
                (a.get_id().clone(), a.get_help().map(ToString::to_string))
            })
    };
    // The switches a scale turns on (an experiment's mode flags, such as `--all`).
    let mut switches: Vec<&str> = Vec::new();
    for scale in Scale::FLAGGED {
        for flag in all.at(scale).flags {
            let Some(name) = flag.strip_prefix("--") else {
                continue;
            };
            let switch = cmd.get_arguments().any(|a| {
                a.get_long() == Some(name) && matches!(a.get_action(), ArgAction::SetTrue)
            });
            let a_scale = Scale::FLAGGED.iter().any(|s| s.flag() == Some(name));
            if switch && !a_scale && !switches.contains(flag) {
                switches.push(flag);
            }
        }
    }
    for scale in Scale::FLAGGED {
        let name = scale.flag().expect("a scale named by a flag");
        let others: Vec<&str> = Scale::FLAGGED
            .iter()
            .filter(|&&s| s != scale)
            .filter_map(|s| s.flag())
            .collect();
        let run = all.at(scale);
        let flags = if run.flags.is_empty() {
            "its defaults".to_string()
        } else {
            run.flags.join(" ")
        };
        let gives = format!(
            "what `runner all --{name}` gives this experiment ({} on 2 cores): {flags}",
            about_time(run.seconds)
        );
        cmd = match long(&cmd, name) {
            Some((id, own)) => cmd.mut_arg(id, |a| {
                debug_assert!(
                    run.flags.contains(&format!("--{name}").as_str()),
                    "its own --{name} is its --{name} scale: ALL must list it there"
                );
                let own = own.unwrap_or_default();
                a.help(format!("{own}; {gives}")).conflicts_with_all(others)
            }),
            None => {
                let about = scale.about();
                let about = about[..1].to_uppercase() + &about[1..];
                cmd.arg(
                    Arg::new(name)
                        .long(name)
                        .action(ArgAction::SetTrue)
                        .conflicts_with_all(others)
                        .help(format!("{about}: {gives}")),
                )
            }
        };
    }
    let stays = if switches.is_empty() {
        String::new()
    } else {
        format!(
            "; a switch among them ({}) stays on, whatever else is given",
            switches.join(", ")
        )
    };
    let after = cmd
        .get_after_help()
        .map(|h| format!("{h}\n"))
        .unwrap_or_default();
    cmd.after_help(format!(
        "{after}--smoke, --quick, --full: the flags listed with each, which a flag given too overrides (--quick --runs 3: the quick flags with --runs 3){stays}."
    ))
    .args_override_self(true)
}

/// The command line `runner <name>` runs for `args` (the flags after the subcommand),
/// given `scale`, the scale flag among them if any: `name`, the flags `runner all`
/// gives the experiment at that scale (`all`), then `args` (the scale flag included).
/// The experiment's command takes a later value of a flag over an earlier one, so a
/// flag in `args` overrides the scale's: `queue --quick --runs 3` reads `queue --all
/// --runs 2 ... --noise-seconds 0.5 --quick --runs 3`, which runs 3.
pub fn expanded<A: AsRef<OsStr>>(
    name: &str,
    all: &AllFlags,
    scale: Option<Scale>,
    args: &[A],
) -> Vec<OsString> {
    let scale_flags = scale.map_or(&[][..], |s| all.at(s).flags);
    std::iter::once(name)
        .chain(scale_flags.iter().copied())
        .map(OsString::from)
        .chain(args.iter().map(|a| a.as_ref().to_owned()))
        .collect()
}

/// The scale flag given on an experiment's matches, if any.
pub fn scale_given(m: &clap::ArgMatches) -> Option<Scale> {
    Scale::FLAGGED.into_iter().find(|s| {
        s.flag()
            .is_some_and(|f| m.value_source(f) == Some(clap::parser::ValueSource::CommandLine))
    })
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

/// `args` (the flags after the subcommand) matched against `E`'s command line, a scale
/// flag expanded: read once as given, and where a scale flag is among them, read again
/// with that scale's flags before them ([`expanded`]).
fn matches<E: Experiment, A: AsRef<OsStr>>(args: &[A]) -> Result<clap::ArgMatches> {
    let read = |argv: Vec<OsString>| {
        command::<E>()
            .try_get_matches_from(argv)
            .map_err(|e| Error::from_clap(&e))
    };
    let m = read(expanded(E::NAME, &E::ALL, None, args))?;
    match scale_given(&m) {
        None => Ok(m),
        scale => read(expanded(E::NAME, &E::ALL, scale, args)),
    }
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
    E::Args::from_arg_matches(&matches::<E, _>(args)?).map_err(|e| Error::from_clap(&e))
}

/// Parses and validates `args` as `E`'s command line on `topo`: the configuration
/// `runner <E> args` would run, or its one-line error. For tests of an experiment's
/// validation.
pub fn configure_from<E: Experiment>(args: &[&str], topo: &Topology) -> Result<Setup<E::Config>> {
    validated::<E>(&matches::<E, _>(args)?, topo)
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
