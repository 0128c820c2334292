//! `runner pool`: the policy-pool document (seeds/001). A pool of 64-byte blocks under
//! each thread-safety policy of `handoff_pool::Pool` (document 001's NONE / MUTEX /
//! LOCKFREE, and the per-thread caches it names as the next step) against the system
//! allocator, in three scenarios: `bulk` (N allocations, then N releases, timed
//! apart), `interleaved` (allocate then release, N times) and `concurrent` (T threads
//! running the interleaved loop on one shared pool; aggregate ns/op = wall time /
//! total operations). Repeats alternate the contenders; the first repeat is dropped.

mod report;
mod work;

use crate::lab::error::Result;
use crate::lab::flags::{self, THREAD_NAMES};
use crate::lab::results::check_writable;
use crate::lab::rotate;
use crate::lab::session::{Output, Plan, Session};
use crate::lab::topology::Topology;
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;

pub use work::{child_task, Contender, CHILD_TASK};

/// The source document.
pub const DOCUMENT: &str = "seeds/001_2e06d77cf9740409.txt";

/// Document 001's thread count for the concurrent scenario.
pub const DOC_THREADS: usize = 4;

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
    /// `--pin`, `--runs`, `--out`, `--noise-seconds`.
    #[command(flatten)]
    pub common: flags::Common,
}

/// Everything `runner pool` was asked to do (after validation).
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Config {
    /// Operations per scenario and repeat (per thread when concurrent).
    pub iterations: usize,
    /// Repeats, the first dropped.
    pub repeats: usize,
    /// Threads of the concurrent scenario.
    pub threads: usize,
    /// One core per thread (cycled when there are more threads than cores).
    pub pins: Vec<usize>,
    /// Output directory.
    pub out: PathBuf,
    /// Seconds of the noise probe before and after (0: none).
    pub noise_seconds: f64,
}

/// `runner pool`.
pub struct Pool;

impl super::Experiment for Pool {
    fn name(&self) -> &'static str {
        "pool"
    }

    fn document(&self) -> &'static str {
        DOCUMENT
    }

    fn command(&self) -> clap::Command {
        let cmd = PoolArgs::augment_args(clap::Command::new("pool")).about(
            "Pool thread-safety policies vs malloc: bulk, interleaved, concurrent (seeds/001), with per-thread caches",
        );
        flags::Common::explain(
            cmd,
            "10",
            "one core per thread (the first also runs the one-thread scenarios)",
            "every contender once per scenario, in an order that rotates from run to run; the first run is dropped as warm-up and the median of the rest reported",
        )
    }

    fn all_flags(&self) -> &'static [&'static str] {
        &[]
    }

    fn prepare(
        &self,
        args: &clap::ArgMatches,
        topo: &Topology,
    ) -> Result<Box<dyn super::Prepared>> {
        let a: PoolArgs = super::typed_args(args)?;
        let (cfg, note) = config(&a, topo)?;
        Ok(Box::new(Prepared { cfg, note }))
    }
}

/// Validates `runner pool` arguments against the machine. Every error is one line.
pub fn config(a: &PoolArgs, topo: &Topology) -> Result<(Config, Option<String>)> {
    let iterations = flags::count_in("items", a.items, 1, 1 << 28, "item")?;
    let repeats = a.common.runs(2, 1000)?;
    let noise_seconds = a.common.noise_seconds()?;
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
    check_writable(&a.common.out)?;
    let (pins, placement_notes) = flags::thread_pins(a.common.pin.as_deref(), threads, topo)?;
    let notes: Vec<String> = doc_note.into_iter().chain(placement_notes).collect();
    let note = (!notes.is_empty()).then(|| notes.join("; "));
    Ok((
        Config {
            iterations,
            repeats,
            threads,
            pins,
            out: a.common.out.clone(),
            noise_seconds,
        },
        note,
    ))
}

struct Prepared {
    cfg: Config,
    note: Option<String>,
}

impl super::Prepared for Prepared {
    fn plan(&self) -> Plan {
        let c = &self.cfg;
        Plan::alike_threads(c.out.clone(), &c.pins, self.note.clone(), c.noise_seconds)
    }

    fn run(&self, session: &mut Session) -> Result<Output> {
        let cfg = &self.cfg;
        let timer = session.clock.timer();
        let cells = work::cells(cfg);
        let bar = session.progress((cells.len() * cfg.repeats) as u64)?;
        let mut samples = vec![Vec::new(); cells.len()];
        rotate::contenders(
            &bar,
            cfg.repeats,
            cells.len(),
            |i| cells[i].label(),
            |run, i| {
                let s = work::measure(&cells[i], cfg, timer)?;
                // The first run is the warm-up.
                if run > 0 {
                    samples[i].push(s);
                }
                Ok(())
            },
        )?;
        let outcome = report::Outcome::new(cells, samples);
        session.probe_after()?;
        Ok(Output {
            sections: report::sections(&outcome, cfg),
            claims: report::claims(&outcome, cfg),
            json: report::json_fields(&outcome, cfg)?,
            files: report::charts(&outcome, cfg)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::parse_flags;

    fn config_of(args: &[&str]) -> Result<(Config, Option<String>)> {
        let a: PoolArgs = parse_flags(&Pool, args)?;
        config(&a, &Topology::two_cores())
    }

    #[test]
    fn defaults_follow_the_document_and_adapt_to_two_cores() {
        let (c, note) = config_of(&[]).unwrap();
        assert_eq!((c.iterations, c.repeats), (1_000_000, 10));
        assert_eq!(c.threads, 2);
        assert_eq!(c.pins, vec![0, 1]);
        assert!(note.unwrap().contains("document 001 ran 4 threads"));
        let (c, note) = config_of(&["--threads", "4"]).unwrap();
        assert_eq!((c.threads, c.pins.len()), (4, 2));
        assert!(note.unwrap().contains("share cores"));
    }

    #[test]
    fn bad_input_is_refused_with_one_line() {
        for (args, needle) in [
            (&["--iterations", "0"][..], "at least 1"),
            (&["--repeats", "1"][..], "at least 2"),
            (&["--threads", "0"][..], "at least 1"),
            (&["--threads", "99"][..], "at most 16"),
            (&["--pin", "4,5"][..], "not available"),
            (&["--iterations", "x"][..], "not a number"),
        ] {
            let e = config_of(args).unwrap_err().to_string();
            assert!(e.contains(needle), "{args:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
