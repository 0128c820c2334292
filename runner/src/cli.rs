//! The command line: one subcommand per experiment of the registry, and `runner all`.
//! Bad input gets one line on stderr and exit status 2, before anything is measured or
//! written.

use crate::experiments::{self, REGISTRY};
use crate::lab::env::Toolchain;
use crate::lab::error::{Error, Result};
use crate::lab::experiment::{Entry, Prepared};
use crate::lab::results::check_writable;
use crate::lab::session::{Id, Session};
use crate::lab::topology::Topology;
use clap::{Arg, Command};
use std::path::PathBuf;
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
    let names: Vec<String> = REGISTRY
        .iter()
        .map(|e| format!("{} {}", e.name(), e.all_flags().join(" ")))
        .collect();
    cmd.subcommand(
        Command::new("all")
            .about(format!(
                "Every experiment with its defaults, one after the other: {}",
                names.join("; ")
            ))
            .arg(
                Arg::new("out")
                    .long("out")
                    .value_parser(clap::value_parser!(PathBuf))
                    .default_value("handoff-results")
                    .help("Output directory for every experiment's files"),
            ),
    )
}

/// A validated run and the experiment it belongs to.
type Planned = (&'static dyn Entry, Box<dyn Prepared>);

/// Parses and validates everything first (bad input: exit 2, nothing measured): the
/// named experiment, or every experiment for `runner all`.
fn prepare(matches: &clap::ArgMatches, topo: &Topology) -> Result<Vec<Planned>> {
    let (name, sub) = matches
        .subcommand()
        .ok_or_else(|| Error::Usage("name an experiment (runner --help)".into()))?;
    if name == "all" {
        let out = sub
            .get_one::<PathBuf>("out")
            .cloned()
            .unwrap_or_else(|| PathBuf::from("handoff-results"));
        check_writable(&out)?;
        let out = out.to_string_lossy().into_owned();
        return REGISTRY
            .iter()
            .map(|e| {
                let mut argv = vec![e.name()];
                argv.extend_from_slice(e.all_flags());
                argv.extend_from_slice(&["--out", &out]);
                let m = e
                    .command()
                    .try_get_matches_from(argv)
                    .map_err(|err| Error::from_clap(&err))?;
                Ok((*e, e.prepare(&m, topo)?))
            })
            .collect();
    }
    let e = experiments::find(name).expect("clap accepts only registered subcommands");
    Ok(vec![(e, e.prepare(sub, topo)?)])
}

/// What the binary carries besides its Rust code, for every result's environment.
fn toolchain() -> Toolchain {
    Toolchain {
        cxx: cpp_baseline::cxx_version().to_string(),
        boost: cpp_baseline::Kind::BoostSpsc.unavailable().is_none(),
    }
}

fn run(runs: Vec<Planned>, topo: &Topology) -> Result<()> {
    let tools = toolchain();
    for (i, (e, p)) in runs.iter().enumerate() {
        if i > 0 {
            println!();
        }
        let id = Id {
            name: e.name(),
            document: e.document(),
        };
        let mut session = Session::start(id, p.plan(), topo, &tools)?;
        let output = p.run(&mut session)?;
        session.finish(output)?;
    }
    Ok(())
}

/// Entry point: parses, validates, runs, reports. Exit 0 on success, 1 on a failed
/// run, 2 on bad input, 130 after Ctrl-C.
pub fn main() -> ExitCode {
    let matches = match command().try_get_matches() {
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
    let result = if cfg!(target_arch = "x86_64") {
        let topo = Topology::read();
        prepare(&matches, &topo).and_then(|runs| run(runs, &topo))
    } else {
        Err(Error::Unsupported(
            "the lab stamps with rdtscp and needs an x86_64 CPU".into(),
        ))
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("runner: {e}");
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
            // `runner all`'s flags parse with the experiment's own defaults.
            let mut argv = vec![e.name()];
            argv.extend_from_slice(e.all_flags());
            e.command().try_get_matches_from(argv).unwrap();
        }
    }
}
