//! Flag values every experiment reads the same way: numbers written `1e6` or
//! `1_000_000`, offered rates, counts, the noise probe's seconds and the placement.
//! Each error is one line ([`Error::Usage`]).

use super::error::{Error, Result};
use super::pin::{self, Placement};
use super::results::check_writable;
use super::topology::Topology;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The flags every experiment takes, in the same words: the frame adds them to every
/// experiment's command (`lab::experiment`), validates them once ([`Common::validate`])
/// and hands the experiment only `--pin`, which its roles decide. An experiment sets
/// its own default for `--runs` and says what its roles and its runs are with
/// [`Common::explain`].
#[derive(clap::Args, Debug, Clone)]
pub struct Common {
    /// Cores for the experiment's threads, comma-separated, in the order of its roles (listed below) [default: adapted to this machine]
    #[arg(long)]
    pub pin: Option<String>,
    /// Outer runs of every measurement (what a run is for this experiment is said below)
    #[arg(long, alias = "repeats", default_value = "5", allow_hyphen_values = true, value_parser = count_value)]
    pub runs: usize,
    /// Output directory for the JSON and SVG files
    #[arg(long, default_value = "handoff-results")]
    pub out: PathBuf,
    /// Seconds to spin on the measured cores, before and after the runs, measuring what interrupts them (0: skip)
    #[arg(long, default_value = "1", allow_hyphen_values = true, value_parser = num_value)]
    pub noise_seconds: f64,
    /// What the stamps read: the TSC where CPUID reports it invariant, else CLOCK_MONOTONIC (auto); tsc refuses to run without a usable TSC
    #[arg(long, value_enum, default_value = "auto")]
    pub clock: ClockChoice,
}

/// `--clock`: which clock the stamps read.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockChoice {
    /// The TSC where it is usable (invariant, with `rdtscp`, calibrating within
    /// 500 ppm), else `CLOCK_MONOTONIC`, saying why.
    #[default]
    Auto,
    /// The TSC, or a clear error where it is not usable.
    Tsc,
    /// `CLOCK_MONOTONIC` (nanoseconds; coarser and dearer to read than the TSC).
    Monotonic,
}

impl Common {
    /// An experiment's command with the common flags' experiment-specific parts: the
    /// default number of runs, and a closing paragraph naming the roles `--pin` places
    /// (in order) and what one run is.
    pub fn explain(
        cmd: clap::Command,
        runs: &'static str,
        roles: &str,
        a_run: &str,
    ) -> clap::Command {
        cmd.mut_arg("runs", |a| a.default_value(runs))
            .after_help(format!(
                "--pin places, in order: {roles}.\n--runs: {a_run}."
            ))
    }

    /// Checks `--runs` (in `[min, max]`), `--noise-seconds` and `--out` (a folder
    /// results can be written in): the frame does this once for every experiment,
    /// before the experiment's own flags. `--pin` is checked by the experiment, which
    /// knows its roles.
    pub fn validate(&self, min_runs: usize, max_runs: usize) -> Result<Run> {
        let runs = count_in("runs", self.runs, min_runs, max_runs, "run")?;
        let noise_seconds = noise_seconds(self.noise_seconds)?;
        check_writable(&self.out)?;
        Ok(Run {
            runs,
            out: self.out.clone(),
            noise_seconds,
            clock: self.clock,
        })
    }
}

/// The common flags, validated ([`Common::validate`]): every experiment's
/// configuration carries them (flattened into its `config` in the results).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Outer runs.
    pub runs: usize,
    /// The output folder (checked writable).
    pub out: PathBuf,
    /// Seconds of the noise probe before and after the runs (0: none).
    pub noise_seconds: f64,
    /// The clock asked for (`--clock`); the one used is in the environment's `tsc`
    /// block (`source`).
    #[serde(default)]
    pub clock: ClockChoice,
}

/// The clap value parser of a number flag (`2.5e6`, `0.2`). clap names the flag in its
/// error: `invalid value 'fast' for '--rate <RATE>': not a number`.
///
/// ```
/// use runner::lab::flags::num_value;
/// assert_eq!(num_value("2.5e6"), Ok(2.5e6));
/// assert_eq!(num_value("fast"), Err("not a number".to_string()));
/// ```
pub fn num_value(s: &str) -> std::result::Result<f64, String> {
    s.trim().parse().map_err(|_| "not a number".to_string())
}

/// The clap value parser of a count flag: a whole count that may be written `1e6` or
/// `1_000_000`.
///
/// ```
/// use runner::lab::flags::count_value;
/// assert_eq!(count_value("1e6"), Ok(1_000_000));
/// assert_eq!(count_value("1_000"), Ok(1_000));
/// assert_eq!(count_value("1.5"), Err("not a whole number".to_string()));
/// assert_eq!(count_value("x"), Err("not a number".to_string()));
/// ```
pub fn count_value(s: &str) -> std::result::Result<usize, String> {
    let clean = s.trim().replace('_', "");
    if let Ok(n) = clean.parse::<usize>() {
        return Ok(n);
    }
    let f = num_value(&clean)?;
    if f.fract() != 0.0 || f < 0.0 || !f.is_finite() || f > usize::MAX as f64 {
        return Err("not a whole number".to_string());
    }
    Ok(f as usize)
}

/// A count checked to be in `[min, max]`; `what` names the unit in the error (`item`,
/// `run`).
///
/// ```
/// use runner::lab::flags::count_in;
/// assert_eq!(count_in("items", 5, 1, 10, "item").unwrap(), 5);
/// assert_eq!(count_in("runs", 1, 2, 10, "run").unwrap_err().to_string(), "--runs 1: at least 2 runs are needed");
/// assert_eq!(count_in("items", 11, 1, 10, "item").unwrap_err().to_string(), "--items 11: at most 10 items");
/// ```
pub fn count_in(flag: &str, n: usize, min: usize, max: usize, what: &str) -> Result<usize> {
    if n < min {
        let (plural, verb) = if min == 1 { ("", "is") } else { ("s", "are") };
        return Err(Error::Usage(format!(
            "--{flag} {n}: at least {min} {what}{plural} {verb} needed"
        )));
    }
    if n > max {
        return Err(Error::Usage(format!("--{flag} {n}: at most {max} {what}s")));
    }
    Ok(n)
}

/// An offered rate in items (or operations) per second: above 0, at most `max`.
///
/// ```
/// use runner::lab::flags::rate;
/// assert_eq!(rate("rate", 1e6, 1e9).unwrap(), 1e6);
/// for bad in [0.0, -3.0, f64::INFINITY, 2e9] {
///     assert!(rate("rate", bad, 1e9).is_err(), "{bad}");
/// }
/// ```
pub fn rate(flag: &str, r: f64, max: f64) -> Result<f64> {
    if !(r > 0.0 && r.is_finite()) {
        return Err(Error::Usage(format!(
            "--{flag} {r}: the rate must be above 0 per second"
        )));
    }
    if r > max {
        return Err(Error::Usage(format!(
            "--{flag} {r}: above {max:e} per second, no pacer can keep that schedule"
        )));
    }
    Ok(r)
}

/// `--noise-seconds`: 0 (no probe) to 60.
pub fn noise_seconds(v: f64) -> Result<f64> {
    if !(0.0..=60.0).contains(&v) {
        return Err(Error::Usage(format!(
            "--noise-seconds {v}: give 0 (no probe) to 60 seconds"
        )));
    }
    Ok(v)
}

/// A producer and a consumer, and a core of its own for the control thread when one is
/// given or free: `--pin P,C[,M]` checked, or the machine-adapted default and its note.
pub fn pair(given: Option<&str>, topo: &Topology) -> Result<Placement> {
    let (pins, note) = pins(given, &["producer", "consumer"], 3, topo)?;
    let placement = Placement::pair(pins[0], pins[1]).with_control(pins.get(2).copied());
    Ok(placement.noted_all(note))
}

/// The placement: `--pin` checked against `roles` (at most `max` cores in all, the
/// rest for the runner's control thread) and this process's allowed CPUs, or the
/// machine-adapted default with its note. Returns the cores (the roles' first) and the
/// note.
pub fn pins(
    given: Option<&str>,
    roles: &[&str],
    max: usize,
    topo: &Topology,
) -> Result<(Vec<usize>, Option<String>)> {
    match given {
        Some(s) => {
            let pins = pin::parse_pins(s)?;
            pin::validate(&pins, roles, max, topo)?;
            Ok((pins, None))
        }
        None => pin::default_pins(roles.len(), topo),
    }
}

/// Role names for experiments whose roles are N alike threads.
pub const THREAD_NAMES: [&str; 16] = [
    "thread 0",
    "thread 1",
    "thread 2",
    "thread 3",
    "thread 4",
    "thread 5",
    "thread 6",
    "thread 7",
    "thread 8",
    "thread 9",
    "thread 10",
    "thread 11",
    "thread 12",
    "thread 13",
    "thread 14",
    "thread 15",
];

/// The cores of `threads` alike threads: one each, at most as many as this process
/// may use (and [`THREAD_NAMES`] names), `--pin` validated as in [`pins`]. More
/// threads than cores cycle over them, and a note says so.
///
/// ```
/// use runner::lab::flags::thread_pins;
/// use runner::lab::topology::Topology;
/// let topo = Topology::read();
/// let pins = thread_pins(None, 1, &topo).unwrap().threads();
/// assert_eq!(pins.len(), 1);
/// assert!(topo.allowed.contains(&pins[0]));
/// // A core this process may not use is refused.
/// assert!(thread_pins(Some("100000"), 1, &topo).is_err());
/// ```
pub fn thread_pins(given: Option<&str>, threads: usize, topo: &Topology) -> Result<Placement> {
    let cores = topo.allowed.len().max(1);
    let placed = threads.min(cores).min(THREAD_NAMES.len()).max(1);
    let (mut pins, note) = pins(given, &THREAD_NAMES[..placed], placed, topo)?;
    pins.truncate(placed);
    let mut notes: Vec<String> = note.into_iter().collect();
    if threads > pins.len() {
        notes.push(format!(
            "{threads} threads on {} cores: threads share cores round-robin",
            pins.len()
        ));
    }
    Ok(Placement::alike(&pins).noted_all(notes))
}

/// A comma-separated list of names from `all` (`--variants`), each at most once, in
/// the order given.
///
/// ```
/// use runner::lab::flags::names;
/// let all = [1u8, 2, 3];
/// let name = |x: u8| ["one", "two", "three"][x as usize - 1];
/// assert_eq!(names("variants", "three, one", &all, name).unwrap(), vec![3, 1]);
/// assert!(names("variants", "four", &all, name).unwrap_err().to_string().contains("known: one, two, three"));
/// assert!(names("variants", "one,one", &all, name).unwrap_err().to_string().contains("named twice"));
/// ```
pub fn names<T: Copy + PartialEq>(
    flag: &str,
    s: &str,
    all: &[T],
    name: impl Fn(T) -> &'static str,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    for given in s.split(',').map(str::trim) {
        let v = all
            .iter()
            .copied()
            .find(|&v| name(v) == given)
            .ok_or_else(|| {
                let known: Vec<&str> = all.iter().map(|&v| name(v)).collect();
                Error::Usage(format!(
                    "--{flag}: unknown variant {given:?} (known: {})",
                    known.join(", ")
                ))
            })?;
        if out.contains(&v) {
            return Err(Error::Usage(format!("--{flag}: {given} is named twice")));
        }
        out.push(v);
    }
    Ok(out)
}
