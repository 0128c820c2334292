//! `runner pool`: the policy-pool document (seeds/001). A pool of 64-byte blocks under
//! each thread-safety policy of `handoff_pool::Pool` (document 001's NONE / MUTEX /
//! LOCKFREE, and the per-thread caches it names as the next step) against the system
//! allocator, in three scenarios: `bulk` (N allocations, then N releases, timed
//! apart), `interleaved` (allocate then release, N times) and `concurrent` (T threads
//! running the interleaved loop on one shared pool; aggregate ns/op = wall time /
//! total operations). Repeats alternate the contenders; the first repeat is dropped.

mod args;
mod report;
mod work;

use crate::lab::error::Result;
use crate::lab::flags;
use crate::lab::rotate;
use crate::lab::session::{Output, Plan, Session};
use crate::lab::topology::Topology;
use clap::Args;

pub use args::{config, Config, PoolArgs};
pub use work::{child_task, Contender, CHILD_TASK};

/// The source document.
pub const DOCUMENT: &str = "seeds/001_2e06d77cf9740409.txt";

/// Document 001's thread count for the concurrent scenario.
pub const DOC_THREADS: usize = 4;

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
