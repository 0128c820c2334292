//! The experiments, one per source document, each a client of the lab: it brings its
//! flags, validates them, plans the placement, measures, and returns its tables, claims,
//! JSON fields and charts; `lab::session` does the rest. [`REGISTRY`] lists them for
//! `runner --help`, `runner all` and the dispatch.

pub mod alloc;
pub mod patterns;
pub mod pipeline;
pub mod pool;
pub mod queue;

use crate::lab::error::Result;
use crate::lab::session::{Output, Plan, Session};
use crate::lab::topology::Topology;

/// One experiment of the lab.
pub trait Experiment: Sync {
    /// The subcommand: `queue`, `pipeline`, ...
    fn name(&self) -> &'static str;
    /// The source document it reproduces, `seeds/...txt`.
    fn document(&self) -> &'static str;
    /// Its subcommand with every flag and default (the only place a default is written).
    fn command(&self) -> clap::Command;
    /// The flags `runner all` gives it (before `--out`): its complete run.
    fn all_flags(&self) -> &'static [&'static str];
    /// Validates the parsed flags against this machine: bad input is
    /// [`Error::Usage`](crate::lab::error::Error::Usage), found before anything is
    /// measured or written (the output folder included).
    fn prepare(&self, args: &clap::ArgMatches, topo: &Topology) -> Result<Box<dyn Prepared>>;
}

/// A validated run of an experiment.
pub trait Prepared {
    /// The placement, output folder and noise probe the session needs.
    fn plan(&self) -> Plan;
    /// Measures, and returns what the report and the files need.
    fn run(&self, session: &mut Session) -> Result<Output>;
}

/// An experiment's typed flags from clap's matches; a mismatch is a usage error.
pub fn typed_args<A: clap::FromArgMatches>(m: &clap::ArgMatches) -> Result<A> {
    A::from_arg_matches(m).map_err(|e| crate::lab::error::Error::from_clap(&e))
}

/// Tests: parses `args` (the flags after the subcommand) as `exp`'s command line.
#[cfg(test)]
pub fn parse_flags<A: clap::FromArgMatches>(exp: &dyn Experiment, args: &[&str]) -> Result<A> {
    let argv = std::iter::once(exp.name()).chain(args.iter().copied());
    let m = exp
        .command()
        .try_get_matches_from(argv)
        .map_err(|e| crate::lab::error::Error::from_clap(&e))?;
    typed_args(&m)
}

/// Every experiment, in the order `runner all` runs them.
pub static REGISTRY: &[&dyn Experiment] = &[
    &queue::Queue,
    &pipeline::Pipeline,
    &pool::Pool,
    &patterns::Patterns,
    &alloc::Alloc,
];

/// The tasks a child runner can run (`lab::child`): allocator contenders that need
/// another global allocator.
pub static CHILD_TASKS: &[(&str, crate::lab::child::Task)] = &[
    (
        pipeline::variants::CHILD_TASK,
        pipeline::variants::child_task,
    ),
    (pool::CHILD_TASK, pool::child_task),
    (alloc::CHILD_TASK, alloc::child_task),
];

/// Looks an experiment up by its subcommand.
pub fn find(name: &str) -> Option<&'static dyn Experiment> {
    REGISTRY.iter().copied().find(|e| e.name() == name)
}
