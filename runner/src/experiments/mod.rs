//! The experiments, one per source document, each a client of the lab: it implements
//! `lab::experiment::Experiment` (its flags, their validation, its placement, its run
//! and report); the lab does the rest. [`REGISTRY`] lists them for `runner --help`,
//! `runner all`, the dispatch and the child tasks; nothing here reaches into an
//! experiment's modules.

pub mod alloc;
pub mod patterns;
pub mod pipeline;
pub mod pool;
pub mod programs;
pub mod queue;

use crate::lab::child::Task;
use crate::lab::experiment::Entry;

/// Every experiment, in the order `runner all` runs them.
pub static REGISTRY: &[&dyn Entry] = &[
    &queue::Queue,
    &pipeline::Pipeline,
    &pool::Pool,
    &patterns::Patterns,
    &alloc::Alloc,
    &programs::Programs,
];

/// The tasks a child runner can run (`lab::child`): allocator contenders that need
/// another global allocator, each named by its experiment.
pub fn child_tasks() -> Vec<(&'static str, Task)> {
    REGISTRY.iter().filter_map(|e| e.child_task()).collect()
}

/// Looks an experiment up by its subcommand.
pub fn find(name: &str) -> Option<&'static dyn Entry> {
    REGISTRY.iter().copied().find(|e| e.name() == name)
}
