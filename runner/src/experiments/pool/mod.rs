//! `runner pool`: document 001, the policy pool. A pool of 64-byte blocks under
//! each thread-safety policy of `handoff_pool::Pool` (document 001's NONE / MUTEX /
//! LOCKFREE, and the per-thread caches it names as the next step) against the system
//! allocator, in three scenarios: `bulk` (N allocations, then N releases, timed
//! apart), `interleaved` (allocate then release, N times) and `concurrent` (T threads
//! running the interleaved loop on one shared pool; aggregate ns/op = wall time /
//! total operations). Repeats alternate the contenders; the first repeat is dropped.

mod args;
mod claims;
mod report;
mod targets;
mod work;

use crate::lab::child::Task;
use crate::lab::error::Result;
use crate::lab::experiment::{AllFlags, AllRun, Experiment};
use crate::lab::harness;
use crate::lab::pin::Placement;
use crate::lab::rotate;
use crate::lab::schema::Document;
use crate::lab::session::Session;
use crate::lab::stop;
use crate::lab::topology::Topology;
use handoff_clock::link::Classes;

pub use args::{config, Config, PoolArgs, Settings};
pub use work::{child_task, Contender, CHILD_TASK};

/// The source document.
pub const DOCUMENT: Document = Document {
    file: "001_2e06d77cf9740409.txt",
    // The document has no title line: its opening words.
    title: "Comparative benchmark for Milestone 4.5",
};

/// Document 001's thread count for the concurrent scenario.
pub const DOC_THREADS: usize = 4;

/// `runner pool`.
pub struct Pool;

impl Experiment for Pool {
    type Args = PoolArgs;
    type Config = Settings;
    type Outcome = report::Outcome;
    const NAME: &'static str = "pool";
    const DOCUMENT: Document = DOCUMENT;
    const ABOUT: &'static str = "Pool thread-safety policies vs malloc: bulk, interleaved, concurrent (document 001), with per-thread caches";
    const RUNS: &'static str = "10";
    const MIN_RUNS: usize = 2;
    const ROLES: &'static str =
        "one core per thread (the first also runs the one-thread scenarios)";
    const A_RUN: &'static str = "every contender once per scenario, in an order that rotates from run to run; the first run is dropped as warm-up and the median of the rest reported";
    const CHILD_TASK: Option<(&'static str, Task)> = Some((CHILD_TASK, child_task));
    const CONTENDERS: bool = true;

    const ALL: AllFlags = AllFlags {
        smoke: AllRun {
            flags: &["--runs", "2", "--items", "20000", "--noise-seconds", "0.2"],
            seconds: 1,
        },
        quick: AllRun {
            flags: &["--runs", "4", "--items", "500000", "--noise-seconds", "0.5"],
            seconds: 5,
        },
        // A warm-up and 54 repeats, six in each of the rounds of `runner all` (a
        // repeat takes about half a second here). Until 2026-12-05 it was 18, two a
        // round: claims whose repeats fall on the median's side four times in five
        // (LOCKFREE / malloc, concurrent) needed 14 of 18 and got it in one run of two;
        // 54 repeats need 35 (65%, `lab::claims::needed`).
        default: AllRun {
            flags: &["--runs", "55"],
            seconds: 40,
        },
        full: AllRun {
            flags: &[],
            seconds: 12,
        },
    };

    fn configure(
        a: &PoolArgs,
        pin: Option<&str>,
        topo: &Topology,
    ) -> Result<(Settings, Placement)> {
        config(a, pin, topo)
    }

    fn run(cfg: &Config, session: &mut Session) -> Result<report::Outcome> {
        let timer = session.clock.timer();
        let cells = work::cells(cfg);
        let bar = session.progress((cells.len() * cfg.run.runs) as u64)?;
        let mut samples = vec![Vec::new(); cells.len()];
        // The concurrent repeats are tagged with the placement of the first two
        // threads' cores, probed just before and just after each.
        let pins = cfg.placement.threads();
        let probe = || match pins[..] {
            [a, b, ..] => harness::link_probe(timer, stop::flag(), a, b),
            _ => Ok(None),
        };
        let mut probes = Vec::new();
        rotate::contenders(
            &bar,
            cfg.run.runs,
            cells.len(),
            |i| cells[i].label(),
            |run, i| {
                let tag = cells[i].scenario == work::Scenario::Concurrent && cells[i].threads > 1;
                let before = if tag { probe()? } else { None };
                let mut s = work::measure(&cells[i], cfg, timer)?;
                if tag {
                    let after = probe()?;
                    probes.extend(before.into_iter().chain(after));
                    s.around_ns = before.zip(after);
                }
                // The first run is the warm-up.
                if run > 0 {
                    samples[i].push(s);
                }
                Ok(())
            },
        )?;
        let classes = Classes::of(&probes);
        Ok(report::Outcome::new(cells, samples, classes, probes.len()))
    }
}
