//! `runner pool`'s flags and their validation against this machine.

use super::DOC_THREADS;
use crate::lab::error::Result;
use crate::lab::experiment::Setup;
use crate::lab::flags::{self, THREAD_NAMES};
use crate::lab::pin::Placement;
use crate::lab::topology::Topology;
use clap::Args;
use serde::Serialize;

/// `runner pool` options (every default is written here and nowhere else).
#[derive(Args, Debug, Clone)]
pub struct PoolArgs {
    /// Operations per scenario and run (per thread in the concurrent scenario)
    #[arg(
        long,
        alias = "iterations",
        default_value = "1000000",
        allow_hyphen_values = true
    , value_parser = flags::count_value)]
    pub items: usize,
    /// Threads of the concurrent scenario [default: document 001's 4, capped at the cores this process may use]
    #[arg(long, value_parser = flags::count_value)]
    pub threads: Option<usize>,
}

/// Everything `runner pool` was asked to do (after validation).
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Settings {
    /// Operations per scenario and repeat (per thread when concurrent).
    pub items: usize,
    /// Threads of the concurrent scenario.
    pub threads: usize,
}

/// The validated configuration: the common flags, the placement and these settings.
pub type Config = Setup<Settings>;

/// Validates `runner pool` arguments against the machine. Every error is one line.
pub fn config(a: &PoolArgs, pin: Option<&str>, topo: &Topology) -> Result<(Settings, Placement)> {
    let items = flags::count_in("items", a.items, 1, 1 << 28, "item")?;
    let cores = topo.allowed.len().max(1);
    let mut doc_note = None;
    let threads = match a.threads {
        Some(n) => flags::count_in("threads", n, 1, THREAD_NAMES.len(), "thread")?,
        None => {
            let t = DOC_THREADS.min(cores).max(1);
            if t < DOC_THREADS {
                doc_note = Some(format!(
                    "document 001 ran {DOC_THREADS} threads on 4 cores; this process may use \
                     {cores}, so the concurrent scenario runs {t} (--threads {DOC_THREADS} \
                     shares cores)"
                ));
            }
            t
        }
    };
    let placement = flags::thread_pins(pin, threads, topo)?.noted_all(doc_note);
    Ok((Settings { items, threads }, placement))
}

#[cfg(test)]
mod tests {
    use super::super::Pool;
    use super::*;
    use crate::lab::experiment::{assert_refused, on_two_cores};

    #[test]
    fn defaults_follow_the_document_and_adapt_to_two_cores() {
        let c = on_two_cores::<Pool>(&[]).unwrap();
        assert_eq!((c.items, c.run.runs), (1_000_000, 10));
        assert_eq!(c.threads, 2);
        assert_eq!(c.placement.threads(), vec![0, 1]);
        assert!(c
            .placement
            .note()
            .unwrap()
            .contains("document 001 ran 4 threads"));
        let c = on_two_cores::<Pool>(&["--threads", "4"]).unwrap();
        assert_eq!((c.threads, c.placement.threads().len()), (4, 2));
        assert!(c.placement.note().unwrap().contains("share cores"));
    }

    #[test]
    fn bad_input_is_refused_with_one_line() {
        assert_refused::<Pool>(
            &Topology::two_cores(),
            &[
                (&["--iterations", "0"][..], "at least 1"),
                (&["--repeats", "1"][..], "at least 2"),
                (&["--threads", "0"][..], "at least 1"),
                (&["--threads", "99"][..], "at most 16"),
                (&["--pin", "4,5"][..], "not available"),
                (&["--iterations", "x"][..], "not a number"),
            ],
        );
    }
}
