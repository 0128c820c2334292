//! The reproduction commands: `runner all` (every experiment into one folder per
//! machine, then `REPORT.md`), `runner report DIR` (the report and the charts again,
//! from the JSON alone) and `runner compare DIR_A DIR_B`.

use crate::experiments::REGISTRY;
use crate::lab::env::this_machine_tag;
use crate::lab::error::{Error, Result};
use crate::lab::experiment::{Entry, Scale};
use crate::lab::report;
use crate::lab::results::{check_writable, write_atomic};
use crate::lab::rounds;
use crate::lab::stop;
use crate::lab::topology::Topology;
use clap::{Arg, ArgAction, ArgMatches, Command};
use nix::sys::signal::{self, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `runner all`, `runner report`, `runner compare`.
pub fn commands() -> [Command; 3] {
    let names: Vec<String> = REGISTRY
        .iter()
        .map(|e| {
            let flags = e.all(Scale::Default).flags.join(" ");
            format!("{} {flags}", e.name()).trim_end().to_string()
        })
        .collect();
    // Each scale in the words of `Scale::about`, and the experiments' estimates summed.
    let time = |s: Scale| {
        let seconds = REGISTRY.iter().map(|e| e.all(s).seconds).sum();
        format!("{} on 2 cores", crate::lab::experiment::about_time(seconds))
    };
    let about = |s: Scale| {
        let about = s.about();
        format!("{}{}", about[..1].to_uppercase(), &about[1..])
    };
    let all = Command::new("all")
        .about(format!(
            "Every experiment, one after the other, into <out>/<machine>/ with REPORT.md, at {} ({}) or at the scale of --smoke, --quick or --full, which every experiment takes too (runner <experiment> --quick runs it as runner all --quick does; its --help lists the flags): {}",
            Scale::Default.about(),
            time(Scale::Default),
            names.join("; ")
        ))
        .arg(
            Arg::new("out")
                .long("out")
                .value_parser(clap::value_parser!(PathBuf))
                .default_value("handoff-results")
                .help("Output directory: the results go into a folder named after this machine inside it"),
        )
        .arg(
            Arg::new("smoke")
                .long("smoke")
                .action(ArgAction::SetTrue)
                .conflicts_with_all(["quick", "full"])
                .help(format!("{} ({}; a few minutes on an emulated machine): checks that everything runs, its figures mean little", about(Scale::Smoke), time(Scale::Smoke))),
        )
        .arg(
            Arg::new("quick")
                .long("quick")
                .action(ArgAction::SetTrue)
                .conflicts_with("full")
                .help(format!("{} ({})", about(Scale::Quick), time(Scale::Quick))),
        )
        .arg(
            Arg::new("full")
                .long("full")
                .action(ArgAction::SetTrue)
                .help(format!("{} ({}; the allocator test's 1.3 GB working set)", about(Scale::Full), time(Scale::Full))),
        )
        .arg(
            Arg::new("rounds")
                .long("rounds")
                .value_parser(clap::value_parser!(u32).range(1..=10))
                .help("Rounds: every experiment's repeats are spread over them, the rounds one after the other (each experiment one process that pauses between its rounds), so that they meet the host's states of the whole run; every claim is judged on all its repeats together, and a margin smaller than their spread reads \"within noise\" (docs/methodology.md, \"Rounds\") [default: 3 at the default and full sizes, 1 with --smoke or --quick]"),
        )
        .arg(
            Arg::new("clock")
                .long("clock")
                .value_parser(["auto", "tsc", "monotonic"])
                .help("Passed to every experiment: what the stamps read [default: auto, the TSC where it is usable, else CLOCK_MONOTONIC]"),
        );
    let report = Command::new("report")
        .about("Writes REPORT.md and every chart again from the results JSON of a folder (byte for byte what runner all wrote)")
        .arg(
            Arg::new("dir")
                .required(true)
                .value_parser(clap::value_parser!(PathBuf))
                .help("A folder runner all wrote"),
        );
    let compare = Command::new("compare")
        .about("Compares two result folders: B / A for every figure both hold, flagging differences beyond the run-to-run spread")
        .arg(
            Arg::new("a")
                .required(true)
                .value_parser(clap::value_parser!(PathBuf))
                .help("The first folder (A)"),
        )
        .arg(
            Arg::new("b")
                .required(true)
                .value_parser(clap::value_parser!(PathBuf))
                .help("The second folder (B)"),
        );
    [all, report, compare]
}

/// A validated `runner all`: where it writes and what it runs.
pub struct AllPlan {
    scale: Scale,
    /// How many rounds every experiment's runs are spread over.
    rounds: usize,
    /// Each experiment, validated, and its command line (its flags at the scale, and
    /// `--out` with [`OUT`] for the staging folder), in registry order; its runs are
    /// spread over the rounds (`lab::rounds`).
    runs: Vec<(&'static dyn Entry, Vec<String>)>,
    /// `<out>/<machine>`: where the results land when everything ran.
    folder: PathBuf,
    /// Where the experiments write until then.
    staging: PathBuf,
}

/// Validates `runner all`: the output folder, then every experiment with its flags at
/// the chosen scale (writing into a staging folder beside the final one).
pub fn prepare(sub: &ArgMatches, topo: &Topology) -> Result<AllPlan> {
    let out = sub
        .get_one::<PathBuf>("out")
        .cloned()
        .unwrap_or_else(|| PathBuf::from("handoff-results"));
    check_writable(&out)?;
    let scale = if sub.get_flag("smoke") {
        Scale::Smoke
    } else if sub.get_flag("quick") {
        Scale::Quick
    } else if sub.get_flag("full") {
        Scale::Full
    } else {
        Scale::Default
    };
    let rounds = sub.get_one::<u32>("rounds").map_or_else(
        || rounds::default_rounds(matches!(scale, Scale::Default | Scale::Full)),
        |&r| r as usize,
    );
    let tag = this_machine_tag(topo);
    let folder = out.join(&tag);
    let staging = out.join(format!(".{tag}.partial-{}", std::process::id()));
    let staging_arg = staging.to_string_lossy().into_owned();
    let runs = REGISTRY
        .iter()
        .map(|e| {
            let mut argv: Vec<String> = vec![e.name().to_string()];
            argv.extend(e.all(scale).flags.iter().map(|f| f.to_string()));
            argv.extend(["--out".to_string(), OUT.to_string()]);
            if let Some(clock) = sub.get_one::<String>("clock") {
                argv.extend(["--clock".to_string(), clock.clone()]);
            }
            let here = with_out(&argv, &staging_arg);
            let m = e
                .command()
                .try_get_matches_from(&here)
                .map_err(|err| Error::from_clap(&err))?;
            // Validated here, before anything runs; the child validates it again.
            e.prepare(&m, topo)?;
            Ok((*e, argv))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(AllPlan {
        scale,
        rounds,
        runs,
        folder,
        staging,
    })
}

/// Runs every experiment, each as a runner process of its own, into the staging folder,
/// one progress line before each (the time spent and about how long is left), writes
/// `REPORT.md`, and moves the folder into place.
///
/// Nothing measured is deleted: an experiment that fails (an error, a panic, a child
/// killed) is named in `incomplete.json` and in the report, and the others still run;
/// after Ctrl-C the experiments that finished are kept the same way. The folder then
/// holds what finished, an earlier run's folder is kept beside it as
/// `<machine>.previous`, and the result is an error (exit status 1, or 130 after
/// Ctrl-C). Only when no experiment finished is the staging folder removed.
pub fn run(plan: AllPlan) -> Result<()> {
    // Each experiment runs in a process group of its own, so a Ctrl-C at a terminal
    // reaches this process alone, which passes it on to the experiment in flight.
    stop::install_with(
        "interrupted: stopping the experiment in flight; the ones that finished are kept",
        "interrupted again: exiting now; the experiments that finished are left in the \
         hidden staging folder (.<machine>.partial-<pid>) in the output folder",
    );
    let start = Instant::now();
    let outcome = run_into(&plan, start);
    if outcome.finished == 0 {
        let _ = std::fs::remove_dir_all(&plan.staging);
        return Err(outcome.error());
    }
    let incomplete = outcome.incomplete();
    let place = incomplete
        .as_ref()
        .map_or(Ok(()), |inc| {
            write_atomic(
                &plan.staging.join(report::INCOMPLETE),
                &serde_json::to_vec_pretty(inc).unwrap_or_default(),
            )
            .map_err(|e| Error::Output(format!("writing {}: {e}", report::INCOMPLETE)))
        })
        .and_then(|()| record_final_folder(&plan.staging, &plan.folder))
        .and_then(|()| report::load(&plan.staging))
        .and_then(|results| {
            let text = report::render(&results, incomplete.as_ref());
            write_atomic(&plan.staging.join(report::REPORT), text.as_bytes())
                .map_err(|e| Error::Output(format!("writing {}: {e}", report::REPORT)))
        })
        .and_then(|()| replace_folder(&plan.staging, &plan.folder, incomplete.is_some()));
    let kept_earlier = match place {
        Ok(kept) => kept,
        Err(e) => {
            // The results stay where they are, named in the message.
            return Err(Error::Output(format!(
                "{e}; the results of the experiments that finished are in {}",
                plan.staging.display()
            )));
        }
    };
    let n = plan.runs.len();
    let kept_in = |why: &str| {
        format!(
            "{why}; {} of {n} experiments finished, their results and the report are in {}",
            outcome.finished,
            plan.folder.display()
        )
    };
    if incomplete.is_none() {
        println!(
            "\nall {n} experiments in {}: {}",
            clock(start.elapsed().as_secs_f64()),
            plan.folder.join(report::REPORT).display()
        );
        return Ok(());
    }
    let kept = kept_earlier.map_or(String::new(), |p| {
        format!(" (the earlier run's folder is kept as {})", p.display())
    });
    eprintln!(
        "\n{} of {n} experiments finished; their results and the report naming the others are in {}{kept}",
        outcome.finished,
        plan.folder.display()
    );
    Err(match outcome.error() {
        Error::Interrupted => Error::Stopped(kept_in("interrupted")),
        e => e,
    })
}

/// What became of the experiments of one `runner all`.
struct Outcome {
    /// How many finished and wrote their files.
    finished: usize,
    /// Each experiment that failed, and why.
    failed: Vec<(String, Error)>,
    /// The experiments that did not start because Ctrl-C stopped the run.
    not_run: Vec<String>,
}

impl Outcome {
    /// What `incomplete.json` holds, if anything did not finish.
    fn incomplete(&self) -> Option<serde_json::Value> {
        if self.failed.is_empty() && self.not_run.is_empty() {
            return None;
        }
        Some(serde_json::json!({
            "failed": self
                .failed
                .iter()
                .map(|(name, why)| {
                    let why = match why {
                        Error::Interrupted => "interrupted by Ctrl-C; it wrote nothing".to_string(),
                        e => e.to_string(),
                    };
                    serde_json::json!({"experiment": name, "why": why})
                })
                .collect::<Vec<_>>(),
            "not_run": self.not_run,
        }))
    }

    /// The run's error: Ctrl-C's if it stopped the run, else the failures named.
    fn error(&self) -> Error {
        if self
            .failed
            .iter()
            .any(|(_, e)| matches!(e, Error::Interrupted))
            || stop::requested()
        {
            return Error::Interrupted;
        }
        let names: Vec<String> = self
            .failed
            .iter()
            .map(|(name, why)| format!("runner {name}: {why}"))
            .collect();
        Error::Run(names.join("; "))
    }
}

/// The placeholder for the output folder in an experiment's command line in [`AllPlan`]:
/// the staging folder.
const OUT: &str = "{out}";

/// `argv` with its output folder.
fn with_out(argv: &[String], out: &str) -> Vec<String> {
    argv.iter()
        .map(|a| if a == OUT { out.to_string() } else { a.clone() })
        .collect()
}

fn run_into(plan: &AllPlan, start: Instant) -> Outcome {
    let rounds = plan.rounds;
    let estimates: Vec<f64> = plan
        .runs
        .iter()
        .map(|(e, _)| f64::from(e.all(plan.scale).seconds) / rounds as f64)
        .collect();
    let n = plan.runs.len();
    let mut outcome = Outcome {
        finished: 0,
        failed: Vec::new(),
        not_run: Vec::new(),
    };
    // Each experiment's process between two of its rounds (paused), and which are
    // over (finished, failed or never started).
    let mut paused: Vec<Option<Child>> = (0..n).map(|_| None).collect();
    let mut over = vec![false; n];
    let staging = plan.staging.to_string_lossy().into_owned();
    let steps = n * rounds;
    for step in 0..steps {
        let (k, i) = (step / n + 1, step % n);
        let (e, argv) = &plan.runs[i];
        if over[i] {
            continue;
        }
        if stop::requested() {
            if paused[i].is_none() {
                outcome.not_run.push(e.name().to_string());
                over[i] = true;
            }
            continue;
        }
        let spent = start.elapsed().as_secs_f64();
        let done: f64 = (0..step).map(|s| estimates[s % n]).sum();
        // The estimates scaled by how this machine has fared against them so far.
        let pace = if done > 0.0 { spent / done } else { 1.0 };
        let left: f64 = (step..steps).map(|s| estimates[s % n]).sum::<f64>() * pace;
        let of_rounds = if rounds > 1 {
            format!(", round {k} of {rounds}")
        } else {
            String::new()
        };
        println!(
            "\n[{}/{steps}] runner {} ({}{of_rounds}): {} spent, about {} left",
            step + 1,
            e.name(),
            e.document().file,
            clock(spent),
            clock(left)
        );
        let child = match paused[i].take() {
            Some(child) => child.resume(rounds::GO_ON),
            None => Child::spawn(e.name(), &with_out(argv, &staging), plan),
        };
        let label = if rounds > 1 {
            format!("{} (round {k})", e.name())
        } else {
            e.name().to_string()
        };
        match child.and_then(|c| c.wait(true)) {
            Ok(Ended::Paused(c)) => paused[i] = Some(c),
            Ok(Ended::Exited(status)) => {
                over[i] = true;
                settle(plan, e.name(), &label, status, &mut outcome);
            }
            Err(err) => {
                over[i] = true;
                settle(plan, e.name(), &label, Err(err), &mut outcome);
            }
        }
    }
    // After Ctrl-C: the experiments paused between two rounds judge the rounds they
    // measured and write their files (their `rounds` field says they were cut short).
    for (i, child) in paused.into_iter().enumerate() {
        let Some(child) = child else { continue };
        let name = plan.runs[i].0.name();
        println!("\nrunner {name}: writing the results of the rounds it measured");
        let status = child
            .resume(rounds::FINISH)
            .and_then(|c| match c.wait(false)? {
                Ended::Exited(status) => status,
                Ended::Paused(_) => Err(Error::Run(
                    "paused again when asked for its results".to_string(),
                )),
            });
        settle(plan, name, name, status, &mut outcome);
    }
    outcome
}

/// Records how experiment `name`'s process ended (`label`: its name, with the round it
/// ended in): finished when it exited well and wrote a results file; failed otherwise,
/// and what it wrote is removed (not a finished result).
fn settle(plan: &AllPlan, name: &str, label: &str, status: Result<()>, outcome: &mut Outcome) {
    match status.and_then(|()| written(&plan.staging, name)) {
        Ok(()) => outcome.finished += 1,
        Err(err) => {
            remove_files_of(&plan.staging, name);
            eprintln!("runner {label}: {err}; the next experiment goes on");
            outcome.failed.push((label.to_string(), err));
        }
    }
}

/// Whether experiment `name` wrote a results file the report can read: an error naming
/// what is wrong if not (it then counts as failed, and the others' report is still
/// written).
fn written(dir: &Path, name: &str) -> Result<()> {
    match report::read_results(&dir.join(format!("{name}.json"))) {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(Error::Output(format!(
            "its file {name}.json is not a results file"
        ))),
        Err(why) => Err(Error::Output(format!(
            "its results file {name}.json: {why}"
        ))),
    }
}

/// The environment variable naming the file where an experiment that `runner all`
/// started writes why it failed (its error, or its panic's message).
pub const FAILURE_FILE_ENV: &str = "HANDOFF_ALL_FAILURE_FILE";

/// An experiment's process in `runner all`: started at its first round, paused
/// (stopped by itself, `lab::rounds::enter`) between two rounds, exited after its last.
/// It runs in a process group of its own, so that a Ctrl-C at a terminal reaches `runner
/// all` alone, which passes it on to the experiment in flight.
struct Child {
    pid: Pid,
    /// Its standard input: what to do when it goes on (`lab::rounds::GO_ON`, `FINISH`).
    input: std::process::ChildStdin,
    /// Where it writes why it failed.
    why_file: PathBuf,
    /// Kept so that the process is not reaped behind our back (its `wait` is ours).
    _process: std::process::Child,
}

/// How a wait for an experiment's process ended.
enum Ended {
    /// It paused at the end of a round.
    Paused(Child),
    /// It exited: `Ok` with status 0, else why it failed.
    Exited(Result<()>),
}

impl Child {
    /// Starts experiment `name`'s process with `argv`, so that each experiment starts
    /// from a fresh heap (an experiment that measures resident memory would otherwise
    /// see the memory the ones before it freed) and a fresh allocator state.
    fn spawn(name: &str, argv: &[String], plan: &AllPlan) -> Result<Child> {
        use std::os::unix::process::CommandExt;
        let exe = std::env::current_exe()
            .map_err(|e| Error::Run(format!("cannot find this program: {e}")))?;
        let why_file = plan.staging.join(format!(".{name}.failure"));
        let _ = std::fs::remove_file(&why_file);
        let mut process = std::process::Command::new(exe)
            .args(argv)
            .env(FAILURE_FILE_ENV, &why_file)
            .env(rounds::ROUNDS_ENV, plan.rounds.to_string())
            .env(rounds::PARENT_ENV, std::process::id().to_string())
            .stdin(std::process::Stdio::piped())
            // A process group of its own (its launchers and child processes in it too):
            // a Ctrl-C at a terminal reaches this process only, which passes it on once.
            .process_group(0)
            .spawn()
            .map_err(|e| Error::Run(e.to_string()))?;
        let input = process
            .stdin
            .take()
            .ok_or_else(|| Error::Run("no pipe to the experiment's process".into()))?;
        Ok(Child {
            pid: Pid::from_raw(process.id() as i32),
            input,
            why_file,
            _process: process,
        })
    }

    /// Lets a paused process go on, telling it what to do (`what`).
    fn resume(mut self, what: u8) -> Result<Child> {
        use std::io::Write;
        let failed = |e: String| Error::Run(format!("cannot resume it: {e}"));
        self.input
            .write_all(&[what])
            .and_then(|()| self.input.flush())
            .map_err(|e| failed(e.to_string()))?;
        signal::kill(self.pid, Signal::SIGCONT).map_err(|e| failed(e.to_string()))?;
        Ok(self)
    }

    /// Waits until the process pauses or exits; with `pass_on`, a Ctrl-C that arrives
    /// meanwhile is passed on to its group once (it then stops and writes nothing).
    fn wait(self, pass_on: bool) -> Result<Ended> {
        let mut passed_on = false;
        let status = loop {
            let flags = WaitPidFlag::WUNTRACED | WaitPidFlag::WNOHANG;
            match waitpid(self.pid, Some(flags)).map_err(|e| Error::Run(e.to_string()))? {
                WaitStatus::Stopped(..) => return Ok(Ended::Paused(self)),
                WaitStatus::Exited(_, code) => break Ok(code),
                WaitStatus::Signaled(_, sig, _) => break Err(sig),
                _ => {}
            }
            if pass_on && stop::requested() && !passed_on {
                // The group is the child's, whose leader (not yet reaped) keeps its id
                // from being reused.
                let _ = signal::killpg(self.pid, Signal::SIGINT);
                passed_on = true;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let why = std::fs::read_to_string(&self.why_file).ok();
        let _ = std::fs::remove_file(&self.why_file);
        Ok(Ended::Exited(match status {
            Ok(0) => Ok(()),
            Ok(130) => Err(Error::Interrupted),
            Err(Signal::SIGINT) if stop::requested() => Err(Error::Interrupted),
            status => {
                let how = match status {
                    Ok(c) => format!("exit status {c}"),
                    Err(sig) => format!("killed by signal {}", sig as i32),
                };
                Err(Error::Run(match why {
                    Some(w) if !w.trim().is_empty() => format!("{} ({how})", w.trim()),
                    _ => how,
                }))
            }
        }))
    }
}

/// In an experiment that `runner all` started: makes a panic's message reach the
/// failure file too, so that the report says why the experiment failed.
pub fn report_panics_to_failure_file() {
    let Some(path) = std::env::var_os(FAILURE_FILE_ENV) else {
        return;
    };
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = std::fs::write(&path, format!("panicked: {info}"));
        default(info);
    }));
}

/// In an experiment that `runner all` started: writes why it failed to the failure
/// file.
pub fn note_failure(e: &Error) {
    if let Some(path) = std::env::var_os(FAILURE_FILE_ENV) {
        let _ = std::fs::write(path, e.to_string());
    }
}

/// Names an experiment that fails on purpose: how the tests make one experiment of
/// `runner all` fail late. `NAME` fails once it has measured, before it writes
/// anything; `NAME@K` at the end of round K (of `lab::rounds`), its last included.
pub const TEST_FAIL_ENV: &str = "HANDOFF_TEST_FAIL";

/// The experiment this process runs, for [`TEST_FAIL_ENV`].
static EXPERIMENT: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Records which experiment this process runs.
pub fn set_experiment(name: &'static str) {
    let _ = EXPERIMENT.set(name);
}

/// The failure [`TEST_FAIL_ENV`] asks of experiment `name` once it has measured (in
/// its last round), if any.
pub fn failure_asked(name: &str) -> Result<()> {
    failure_in(name, rounds::current() + 1, true)
}

/// The failure [`TEST_FAIL_ENV`] asks of this process's experiment at the end of round
/// `round` (from 1), if any.
pub fn failure_asked_in_round(round: usize) -> Result<()> {
    match EXPERIMENT.get() {
        Some(name) => failure_in(name, round, false),
        None => Ok(()),
    }
}

fn failure_in(name: &str, round: usize, last: bool) -> Result<()> {
    // Only inside `runner all`, which names a failure file.
    if std::env::var_os(FAILURE_FILE_ENV).is_none() {
        return Ok(());
    }
    let Ok(asked) = std::env::var(TEST_FAIL_ENV) else {
        return Ok(());
    };
    let (who, at) = match asked.split_once('@') {
        Some((who, k)) => (who, k.parse::<usize>().ok()),
        None => (asked.as_str(), None),
    };
    let now = match at {
        None => last,
        Some(k) => k == round,
    };
    if who == name && now {
        return Err(Error::Run(format!(
            "failed on purpose ({TEST_FAIL_ENV}={asked})"
        )));
    }
    Ok(())
}

/// Removes the files an experiment wrote into `dir` (`<name>.json`, `<name>.txt`,
/// `<name>-*.svg`).
fn remove_files_of(dir: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let file = file.to_string_lossy();
        let ours = file == format!("{name}.json")
            || file == format!("{name}.txt")
            || (file.starts_with(&format!("{name}-")) && file.ends_with(".svg"));
        if ours {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// `<machine>.previous`: where an earlier run's folder goes when a run that did not
/// finish takes its place.
fn previous_name(folder: &Path) -> String {
    format!(
        "{}.previous",
        folder
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    )
}

/// Moves `from` to `to`, replacing a folder an earlier run left there; with `keep`, that
/// folder is kept as `<to>.previous` (replacing an older one) instead of removed, unless
/// it is incomplete and `<to>.previous` complete. Where the earlier folder was kept, if
/// it was.
fn replace_folder(from: &Path, to: &Path, keep: bool) -> Result<Option<PathBuf>> {
    let fail =
        |e: std::io::Error| Error::Output(format!("moving the results to {}: {e}", to.display()));
    if to.exists() && keep {
        let previous = to.with_file_name(previous_name(to));
        let complete = |dir: &Path| !dir.join(report::INCOMPLETE).exists();
        let kept = if previous.exists() && complete(&previous) && !complete(to) {
            // Two incomplete runs in a row: the last complete run stays the previous
            // one, and the older incomplete run gives way.
            std::fs::remove_dir_all(to).map_err(fail)?;
            None
        } else {
            if previous.exists() {
                std::fs::remove_dir_all(&previous).map_err(fail)?;
            }
            std::fs::rename(to, &previous).map_err(fail)?;
            Some(previous)
        };
        std::fs::rename(from, to).map_err(fail)?;
        return Ok(kept);
    } else if to.exists() {
        let old = to.with_file_name(format!(
            ".{}.replaced-{}",
            to.file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default(),
            std::process::id()
        ));
        std::fs::rename(to, &old).map_err(fail)?;
        std::fs::rename(from, to).map_err(fail)?;
        let _ = std::fs::remove_dir_all(&old);
    } else {
        std::fs::rename(from, to).map_err(fail)?;
    }
    Ok(None)
}

fn clock(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    format!("{}:{:02}", s / 60, s % 60)
}

/// `runner report DIR`.
pub fn report(sub: &ArgMatches) -> Result<()> {
    let dir = sub
        .get_one::<PathBuf>("dir")
        .ok_or_else(|| Error::Usage("name a folder".into()))?;
    let results = report::load(dir)?;
    let incomplete = report::load_incomplete(dir)?;
    let charts = report::charts(&results)?;
    let path = dir.join(report::REPORT);
    write_atomic(
        &path,
        report::render(&results, incomplete.as_ref()).as_bytes(),
    )
    .map_err(|e| Error::Output(format!("writing {}: {e}", path.display())))?;
    println!("wrote {}", path.display());
    for (file, svg) in charts {
        let path = dir.join(file);
        write_atomic(&path, svg.as_bytes())
            .map_err(|e| Error::Output(format!("writing {}: {e}", path.display())))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// `runner compare A B`.
pub fn compare(sub: &ArgMatches) -> Result<()> {
    let get = |k: &str| {
        sub.get_one::<PathBuf>(k)
            .ok_or_else(|| Error::Usage("name two folders".into()))
    };
    print!("{}", report::compare(get("a")?, get("b")?)?);
    Ok(())
}

/// Each experiment's JSON records the folder it was written to (`config.out`); in
/// `runner all` that is the staging folder, which is renamed when every experiment is
/// done. Rewrites it to the folder the results end up in, as the user named it.
fn record_final_folder(staging: &Path, folder: &Path) -> Result<()> {
    let fail = |what: &Path, e: String| Error::Output(format!("{}: {e}", what.display()));
    let mut paths = Vec::new();
    let entries = std::fs::read_dir(staging).map_err(|e| fail(staging, e.to_string()))?;
    for entry in entries {
        paths.push(entry.map_err(|e| fail(staging, e.to_string()))?.path());
    }
    for path in paths {
        if path.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        let bytes = std::fs::read(&path).map_err(|e| fail(&path, e.to_string()))?;
        let mut json: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| fail(&path, e.to_string()))?;
        let Some(out) = json.pointer_mut("/config/out") else {
            continue;
        };
        *out = serde_json::Value::String(folder.display().to_string());
        let text = serde_json::to_vec_pretty(&json).map_err(|e| fail(&path, e.to_string()))?;
        write_atomic(&path, &text).map_err(|e| fail(&path, e.to_string()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_results_record_the_folder_they_end_up_in() {
        let dir = std::env::temp_dir().join(format!("handoff-all-out-{}", std::process::id()));
        let staging = dir.join(".m.partial-1");
        std::fs::create_dir_all(&staging).unwrap();
        let json = staging.join("queue.json");
        std::fs::write(
            &json,
            br#"{"config": {"out": "/tmp/x/.m.partial-1", "runs": 5}, "claims": []}"#,
        )
        .unwrap();
        std::fs::write(staging.join("queue.txt"), b"not json").unwrap();
        record_final_folder(&staging, Path::new("handoff-results/m")).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(v["config"]["out"], "handoff-results/m");
        assert_eq!(v["config"]["runs"], 5, "the rest is kept");
        assert_eq!(
            std::fs::read(staging.join("queue.txt")).unwrap(),
            b"not json"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_experiment_takes_its_flags_at_every_scale() {
        for scale in [Scale::Smoke, Scale::Quick, Scale::Default, Scale::Full] {
            for e in REGISTRY {
                let mut argv = vec![e.name()];
                argv.extend_from_slice(e.all(scale).flags);
                e.command()
                    .try_get_matches_from(argv)
                    .unwrap_or_else(|err| panic!("{} at {scale:?}: {err}", e.name()));
            }
        }
    }

    #[test]
    fn the_quick_run_is_quicker_than_the_default() {
        let total = |s: Scale| REGISTRY.iter().map(|e| e.all(s).seconds).sum::<u32>();
        assert!(total(Scale::Quick) <= 150, "{}", total(Scale::Quick));
        assert!(total(Scale::Quick) < total(Scale::Default));
        assert!(total(Scale::Smoke) < total(Scale::Quick));
        assert!(total(Scale::Default) <= total(Scale::Full));
    }

    #[test]
    fn an_incomplete_run_keeps_the_last_complete_one_as_previous() {
        let dir = tempfile::tempdir().unwrap();
        let to = dir.path().join("tag");
        let previous = dir.path().join("tag.previous");
        let run = |name: &str, complete: bool| {
            let from = dir.path().join(name);
            std::fs::create_dir_all(&from).unwrap();
            std::fs::write(from.join("run"), name).unwrap();
            if !complete {
                std::fs::write(from.join(report::INCOMPLETE), "{}").unwrap();
            }
            replace_folder(&from, &to, !complete).unwrap()
        };
        let read = |d: &Path| std::fs::read_to_string(d.join("run")).unwrap();
        assert_eq!(run("a", true), None);
        assert_eq!(run("b", false), Some(previous.clone()));
        assert_eq!((read(&to), read(&previous)), ("b".into(), "a".into()));
        // A second incomplete run: the complete one stays the previous.
        assert_eq!(run("c", false), None);
        assert_eq!((read(&to), read(&previous)), ("c".into(), "a".into()));
        // An incomplete run after a complete one: that one becomes the previous.
        assert_eq!(run("d", true), None);
        assert_eq!(run("e", false), Some(previous.clone()));
        assert_eq!((read(&to), read(&previous)), ("e".into(), "d".into()));
    }

    #[test]
    fn a_folder_replaces_the_one_an_earlier_run_left() {
        let dir = tempfile::tempdir().unwrap();
        let (from, to) = (dir.path().join("new"), dir.path().join("tag"));
        std::fs::create_dir_all(&from).unwrap();
        std::fs::write(from.join("a"), "new").unwrap();
        std::fs::create_dir_all(&to).unwrap();
        std::fs::write(to.join("a"), "old").unwrap();
        replace_folder(&from, &to, false).unwrap();
        assert_eq!(std::fs::read_to_string(to.join("a")).unwrap(), "new");
        assert!(!from.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
