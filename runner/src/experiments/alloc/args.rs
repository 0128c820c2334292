//! `runner alloc`'s flags and their validation against this machine.

use super::DOC_WORKING_SET;
use crate::lab::error::{Error, Result};
use crate::lab::experiment::Setup;
use crate::lab::flags::{self, THREAD_NAMES};
use crate::lab::pin::Placement;
use crate::lab::topology::Topology;
use clap::Args;
use serde::Serialize;

/// A mebibyte.
pub const MIB: usize = 1 << 20;

/// `runner alloc` options (every default is written here and nowhere else).
#[derive(Args, Debug, Clone)]
pub struct AllocArgs {
    /// Requested bytes the main test keeps live, in MiB (the document: 1.3 GB, see --full)
    #[arg(long, default_value = "256", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub working_set_mib: usize,
    /// Replacements (free + alloc) of the main test, per run
    #[arg(
        long,
        alias = "ops",
        default_value = "10000000",
        allow_hyphen_values = true
    , value_parser = flags::count_value)]
    pub items: usize,
    /// The document's size: a 1.3 GB working set (overrides --working-set-mib)
    #[arg(long)]
    pub full: bool,
    /// Threads of the main test; the working set and the replacements are split among them
    #[arg(long, default_value = "1", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub threads: usize,
    /// Largest working set of the sweep in MiB (from 1 MiB, times 4 each step; 0: no sweep)
    #[arg(long, default_value = "1024", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub sweep_max_mib: usize,
    /// Replacements per sweep point
    #[arg(long, alias = "sweep-ops", default_value = "2000000", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub sweep_items: usize,
    /// Blocks of the producer/consumer run (0: none)
    #[arg(long, default_value = "2000000", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub handoff_items: usize,
    /// Highest thread count of the scaling run, which repeats the main test on 1, 2, ...
    /// threads (default: every core this process may use, or as many as --pin names; 1:
    /// none)
    #[arg(long, allow_hyphen_values = true, value_parser = flags::count_value)]
    pub scaling_threads: Option<usize>,
    /// Passes per repeat (1 to 99): each measures every contender once, each in a child of
    /// its own (taking turns, see --turns); a repeat's figures are the medians of its passes
    /// (of two: their mean), its memory, working-set sweep and thread-local read those of
    /// its first pass. The run's time grows about in proportion
    #[arg(long, default_value = "2", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub passes: usize,
    /// Parts of the main test's replacements (0 to 1000) a pass's children take turns at,
    /// all alive at once, one working at a time, so that the host's drift over seconds
    /// reaches every contender alike; 0: each child alone, one after the other. Turns need
    /// every child's working set in memory at once: with less than twice that free, the
    /// run goes without them and says so
    #[arg(long, default_value = "16", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub turns: usize,
}

/// Everything `runner alloc` was asked to do (after validation).
#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    /// Requested bytes live in the main test.
    pub working_set: usize,
    /// Replacements of the main test.
    pub items: usize,
    /// Threads of the main test.
    pub threads: usize,
    /// Working sets of the sweep.
    pub sweep: Vec<usize>,
    /// Replacements per sweep point.
    pub sweep_items: usize,
    /// Blocks of the producer/consumer run.
    pub handoff_items: usize,
    /// Thread counts of the scaling run beside the main test's own.
    pub scaling: Vec<usize>,
    /// Passes per repeat (`--passes`).
    pub passes: usize,
    /// Parts the children of a pass take turns at (`--turns`; 0: none).
    pub turns: usize,
}

/// The validated configuration: the common flags, the placement and these settings.
pub type Config = Setup<Settings>;

/// Validates `runner alloc` arguments against the machine. Every error is one line.
pub fn config(a: &AllocArgs, pin: Option<&str>, topo: &Topology) -> Result<(Settings, Placement)> {
    let working_set = if a.full {
        DOC_WORKING_SET
    } else {
        flags::count_in("working-set-mib", a.working_set_mib, 1, 1 << 20, "MiB")? * MIB
    };
    let items = flags::count_in("items", a.items, 1, 1 << 36, "replacement")?;
    let threads = flags::count_in("threads", a.threads, 1, THREAD_NAMES.len(), "thread")?;
    let sweep_max = flags::count_in("sweep-max-mib", a.sweep_max_mib, 0, 1 << 20, "MiB")?;
    let sweep_items = flags::count_in("sweep-items", a.sweep_items, 1, 1 << 36, "replacement")?;
    let handoff_items = flags::count_in("handoff-items", a.handoff_items, 0, 1 << 36, "block")?;
    let passes = flags::count_in("passes", a.passes, 1, usize::MAX, "pass")?;
    if passes > 99 {
        return Err(Error::Usage(format!(
            "--passes {passes}: at most 99 passes"
        )));
    }
    let mut turns = flags::count_in("turns", a.turns, 0, 1000, "part")?;
    let most = match a.scaling_threads {
        Some(n) => flags::count_in("scaling-threads", n, 1, THREAD_NAMES.len(), "thread")?,
        None => match pin {
            Some(p) => crate::lab::pin::parse_pins(p)?.len(),
            None => topo.allowed.len(),
        }
        .clamp(1, THREAD_NAMES.len()),
    };
    let mut placement = flags::thread_pins(pin, threads.max(2).max(most), topo)?;
    let scaling: Vec<usize> = (1..=most).filter(|&t| t != threads).collect();
    let mut sweep = Vec::new();
    let mut ws = MIB;
    while sweep_max > 0 && ws <= sweep_max * MIB {
        sweep.push(ws);
        ws *= 4;
    }
    if !a.full {
        placement = placement.noted(format!(
            "a {} MiB working set; the document's is 1.3 GB (--full)",
            working_set / MIB
        ));
    }
    // At least one replacement a part on every thread count.
    let asked = turns;
    turns = turns.min(items / threads.max(most));
    if asked > 0 && turns == 0 {
        placement = placement.noted(format!(
            "no turns: {items} replacements are fewer than one a thread"
        ));
    }
    if turns > 0 {
        // Every child's working set live at once, twice over for the allocators' own
        // overhead and the scaling run's share.
        let need = working_set.saturating_mul(2 * super::Contender::ALL.len());
        if let Some(free) = available_memory().filter(|&free| free < need) {
            placement = placement.noted(format!(
                "no turns: they need about {} MiB free, {} MiB are (each child runs alone)",
                need / MIB,
                free / MIB
            ));
            turns = 0;
        }
    }
    Ok((
        Settings {
            working_set,
            items,
            threads,
            sweep,
            sweep_items,
            handoff_items,
            scaling,
            passes,
            turns,
        },
        placement,
    ))
}

/// `MemAvailable` of /proc/meminfo, in bytes; `None` where it cannot be read.
fn available_memory() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

#[cfg(test)]
mod tests {
    use super::super::Alloc;
    use super::*;
    use crate::lab::experiment::{assert_refused, on_two_cores};

    #[test]
    fn defaults_are_scaled_and_say_so() {
        let c = on_two_cores::<Alloc>(&[]).unwrap();
        assert_eq!(c.working_set, 256 * MIB);
        assert_eq!(c.sweep.first(), Some(&MIB));
        assert_eq!(c.sweep.last(), Some(&(1024 * MIB)));
        assert_eq!(c.placement.threads(), vec![0, 1]);
        assert!(c.placement.note().unwrap().contains("1.3 GB"));
        assert_eq!(c.scaling, vec![2], "1 thread is the main test; 2 cores");
        assert_eq!(c.passes, 2);
        // Turns where 2 x 11 x 256 MiB are free, else none, and the note says why.
        let fits = available_memory().is_none_or(|free| free >= 22 * 256 * MIB);
        assert_eq!(c.turns, if fits { 16 } else { 0 });
        assert_eq!(c.placement.note().unwrap().contains("no turns"), !fits);
        let c = on_two_cores::<Alloc>(&["--turns", "0"]).unwrap();
        assert_eq!(c.turns, 0);
        let c = on_two_cores::<Alloc>(&["--scaling-threads", "1"]).unwrap();
        assert!(c.scaling.is_empty());
        let c = on_two_cores::<Alloc>(&["--threads", "2"]).unwrap();
        assert_eq!(c.scaling, vec![1]);
        let c = on_two_cores::<Alloc>(&["--full"]).unwrap();
        assert_eq!(c.working_set, DOC_WORKING_SET);
        let c = on_two_cores::<Alloc>(&["--sweep-max-mib", "0"]).unwrap();
        assert!(c.sweep.is_empty());
    }

    #[test]
    fn bad_input_is_refused_with_one_line() {
        assert_refused::<Alloc>(
            &Topology::two_cores(),
            &[
                (&["--ops", "0"][..], "at least 1"),
                (&["--working-set-mib", "0"][..], "at least 1"),
                (&["--threads", "0"][..], "at least 1"),
                (&["--scaling-threads", "0"][..], "at least 1"),
                (&["--pin", "4,5"][..], "not available"),
                (&["--ops", "x"][..], "not a number"),
                (&["--passes", "0"][..], "at least 1"),
                (&["--passes", "100"][..], "at most 99"),
                (&["--turns", "1001"][..], "at most 1000"),
            ],
        );
    }
}
