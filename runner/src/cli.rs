//! The command line: one subcommand per experiment of the registry, `runner all`,
//! `runner report` and `runner compare` (`crate::all`). Bad input gets one line on stderr and exit status 2, before anything is measured or
//! written.

use crate::experiments::{self, REGISTRY};
use crate::lab::env::Toolchain;
use crate::lab::error::{Error, Result};
use crate::lab::experiment::{Entry, Prepared};
use crate::lab::session::{Id, Session};
use crate::lab::topology::Topology;
use clap::Command;
use std::ffi::OsString;
use std::process::ExitCode;

/// The whole command line, built from the registry.
pub fn command() -> Command {
    let mut cmd = Command::new("runner")
        .version(env!("CARGO_PKG_VERSION"))
        .about(
            "The handoff lab: reproduces the source documents' experiments on pinned threads \
             and prints the documents' numbers beside this machine's.",
        )
        .subcommand_required(true)
        .arg_required_else_help(true);
    for e in REGISTRY {
        cmd = cmd.subcommand(e.command());
    }
    for c in crate::all::commands() {
        cmd = cmd.subcommand(c);
    }
    cmd
}

/// A validated run and the experiment it belongs to.
type Planned = (&'static dyn Entry, Box<dyn Prepared>);

/// What the command line asked for, validated.
enum Job {
    /// One experiment.
    One(Planned),
    /// `runner all`.
    All(crate::all::AllPlan),
}

/// Parses and validates everything first (bad input: exit 2, nothing measured): the
/// named experiment, or every experiment for `runner all`. `argv` is the command line
/// `matches` came from: an experiment reads the flags after its name again, a scale
/// flag (`--quick`) expanded into the flags `runner all` gives it at that scale
/// ([`Entry::matches`]).
fn prepare(matches: &clap::ArgMatches, argv: &[OsString], topo: &Topology) -> Result<Job> {
    let (name, sub) = matches
        .subcommand()
        .ok_or_else(|| Error::Usage("name an experiment (runner --help)".into()))?;
    if name == "all" {
        return crate::all::prepare(sub, topo).map(Job::All);
    }
    let e = experiments::find(name).expect("clap accepts only registered subcommands");
    // `runner` takes no flag before the subcommand: its flags follow its name.
    let at = argv
        .iter()
        .skip(1)
        .position(|a| a == name)
        .expect("clap read the subcommand from argv");
    let sub = e.matches(&argv[at + 2..])?;
    Ok(Job::One((e, e.prepare(&sub, topo)?)))
}

/// What the binary carries besides its Rust code, for every result's environment.
fn toolchain() -> Toolchain {
    Toolchain {
        cxx: cpp_baseline::cxx_version().to_string(),
        boost: cpp_baseline::Kind::BoostSpsc.unavailable().is_none(),
    }
}

/// Runs one validated experiment: its session, its measurement, its files.
fn run_one(
    e: &'static dyn Entry,
    p: &dyn Prepared,
    topo: &Topology,
    tools: &Toolchain,
) -> Result<()> {
    let id = Id {
        name: e.name(),
        document: e.document(),
    };
    crate::all::set_experiment(e.name());
    let mut session = Session::start(id, p.plan(), topo, tools)?;
    let output = p.run(&mut session)?;
    crate::all::failure_asked(e.name())?;
    session.finish(output)?;
    Ok(())
}

fn run(job: Job, topo: &Topology) -> Result<()> {
    // Validated above (bad input has exited 2 already); an experiment with jemalloc or
    // mimalloc among its contenders, or `runner all`, continues in `runner-contenders`
    // before it measures anything.
    let contenders = match &job {
        Job::One((e, _)) => e.contenders(),
        Job::All(_) => REGISTRY.iter().any(|e| e.contenders()),
    };
    if contenders {
        crate::lab::contenders::switch()?;
    }
    let tools = toolchain();
    match job {
        Job::One((e, p)) => run_one(e, p.as_ref(), topo, &tools),
        Job::All(plan) => crate::all::run(plan),
    }
}

/// The binaries' `main` (`runner`, and `runner-contenders`, which also links jemalloc and
/// mimalloc; see `lab::contenders`): a child process of an allocator contender (see
/// `lab::child`), or the command line.
pub fn entry() -> ExitCode {
    // An allocator contender's child process (see `lab::child`).
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() == Some(std::ffi::OsStr::new(crate::lab::child::CHILD_ARG)) {
        let task = args.next();
        let status = crate::lab::child::main(
            task.as_deref().and_then(|t| t.to_str()),
            &crate::experiments::child_tasks(),
        );
        return ExitCode::from(status as u8);
    }
    if std::env::var_os(crate::lab::child::ALLOCATOR_ENV).is_some() {
        eprintln!(
            "runner: {} is set; unset it (the runner sets it only for the child processes of its allocator contenders)",
            crate::lab::child::ALLOCATOR_ENV
        );
        return ExitCode::from(2);
    }
    main()
}

/// Entry point: parses, validates, runs, reports. Exit 0 on success, 1 on a failed
/// run, 2 on bad input, 130 after Ctrl-C.
pub fn main() -> ExitCode {
    crate::all::report_panics_to_failure_file();
    let argv: Vec<OsString> = std::env::args_os().collect();
    let matches = match command().try_get_matches_from(&argv) {
        Ok(m) => m,
        Err(e) => {
            use clap::error::ErrorKind;
            return match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let _ = e.print();
                    ExitCode::SUCCESS
                }
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                | ErrorKind::MissingSubcommand => {
                    let _ = e.print();
                    ExitCode::from(2)
                }
                _ => {
                    eprintln!("runner: {}", Error::from_clap(&e));
                    ExitCode::from(2)
                }
            };
        }
    };
    let result = match matches.subcommand() {
        // Reading results needs no TSC and measures nothing.
        Some(("report", sub)) => crate::all::report(sub),
        Some(("compare", sub)) => crate::all::compare(sub),
        _ if cfg!(target_arch = "x86_64") => {
            let topo = Topology::read();
            prepare(&matches, &argv, &topo).and_then(|job| run(job, &topo))
        }
        _ => Err(Error::Unsupported(
            "the lab stamps with rdtscp and needs an x86_64 CPU".into(),
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("runner: {e}");
            crate::all::note_failure(&e);
            ExitCode::from(e.exit_code())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_experiment_is_a_subcommand_and_runner_all_names_it() {
        let cmd = command();
        cmd.clone().debug_assert();
        let all = cmd
            .find_subcommand("all")
            .unwrap()
            .get_about()
            .unwrap()
            .to_string();
        for e in REGISTRY {
            assert!(cmd.find_subcommand(e.name()).is_some(), "{}", e.name());
            assert!(all.contains(e.name()), "{all}");
        }
    }
}
