//! `runner patterns`'s flags and their validation against this machine.

use crate::lab::error::{Error, Result};
use crate::lab::experiment::Setup;
use crate::lab::flags;
use crate::lab::pin::Placement;
use crate::lab::topology::Topology;
use clap::Args;
use serde::Serialize;

/// `runner patterns` options (every default is written here and nowhere else).
#[derive(Args, Debug, Clone)]
pub struct PatternsArgs {
    /// Fraction of the document's sizes to run (1: its 1000 x 10000 ticks, 100000 orders, 8 x 100000, 1M ticks, 100 MB)
    #[arg(long, default_value = "1", allow_hyphen_values = true, value_parser = flags::num_value)]
    pub scale: f64,
    /// Threads sharing one pool in the multi-thread part [default: the document's 8]
    #[arg(long, default_value = "8", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub threads: usize,
}

/// Everything `runner patterns` was asked to do (after validation).
#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    /// The fraction of the document's sizes.
    pub scale: f64,
    /// Arena part: batches.
    pub arena_iterations: usize,
    /// Arena part: ticks per batch.
    pub arena_batch: usize,
    /// Typed-pool part: orders.
    pub orders_typed: usize,
    /// Multi-thread part: threads.
    pub threads: usize,
    /// Multi-thread part: orders per thread.
    pub per_thread: usize,
    /// Memory part: ticks held.
    pub memory_ticks: usize,
    /// Profiler part: batches of 1000 allocations and 1000 releases.
    pub profile_batches: usize,
    /// NUMA part: MiB summed.
    pub numa_mb: usize,
    /// NUMA part: passes over the buffer.
    pub numa_passes: usize,
    /// Cache part: allocations (and releases) counted per contender.
    pub cache_allocations: usize,
    /// Order-processing part: orders per repeat.
    pub orders: usize,
    /// The cores this process may use (the NUMA part looks for a local and a remote
    /// one among them).
    #[serde(skip)]
    pub allowed: Vec<usize>,
}

/// The validated configuration: the common flags, the placement and these settings.
pub type Config = Setup<Settings>;

/// Validates `runner patterns` arguments against the machine. Every error is one line.
pub fn config(
    a: &PatternsArgs,
    pin: Option<&str>,
    topo: &Topology,
) -> Result<(Settings, Placement)> {
    let scale: f64 = a.scale;
    if !(scale > 0.0 && scale <= 10.0) {
        return Err(Error::Usage(format!(
            "--scale {}: must be above 0 and at most 10",
            a.scale
        )));
    }
    let threads = flags::count_in("threads", a.threads, 1, 256, "thread")?;
    let sized = |doc: usize| ((doc as f64 * scale).round() as usize).max(1);
    let placement = flags::thread_pins(pin, threads, topo)?;
    Ok((
        Settings {
            scale,
            arena_iterations: sized(1000),
            arena_batch: 10_000,
            orders_typed: sized(100_000),
            threads,
            per_thread: sized(100_000),
            memory_ticks: sized(1_000_000),
            profile_batches: sized(1000),
            numa_mb: sized(100),
            numa_passes: 10,
            cache_allocations: sized(100_000),
            orders: sized(1_000_000),
            allowed: topo.allowed.clone(),
        },
        placement,
    ))
}

#[cfg(test)]
mod tests {
    use super::super::Patterns;
    use super::*;
    use crate::lab::experiment::{assert_refused, on_two_cores};

    #[test]
    fn defaults_are_the_documents_sizes_and_adapt_to_two_cores() {
        let c = on_two_cores::<Patterns>(&[]).unwrap();
        assert_eq!((c.arena_iterations, c.arena_batch), (1000, 10_000));
        assert_eq!(
            (c.orders_typed, c.threads, c.per_thread),
            (100_000, 8, 100_000)
        );
        assert_eq!(
            (c.memory_ticks, c.numa_mb, c.orders),
            (1_000_000, 100, 1_000_000)
        );
        assert_eq!(c.placement.threads(), vec![0, 1]);
        assert!(c.placement.note().unwrap().contains("8 threads on 2 cores"));
        let c = on_two_cores::<Patterns>(&["--scale", "0.01"]).unwrap();
        assert_eq!(
            (c.arena_iterations, c.orders_typed, c.memory_ticks),
            (10, 1000, 10_000)
        );
        assert_eq!(c.arena_batch, 10_000, "a batch keeps the document's size");
    }

    #[test]
    fn bad_input_is_refused_with_one_line() {
        assert_refused::<Patterns>(
            &Topology::two_cores(),
            &[
                (&["--scale", "0"][..], "above 0"),
                (&["--scale", "11"][..], "at most 10"),
                (&["--scale", "x"][..], "not a number"),
                (&["--repeats", "1"][..], "at least 2"),
                (&["--threads", "0"][..], "at least 1"),
                (&["--pin", "4,5"][..], "not available"),
            ],
        );
    }
}
