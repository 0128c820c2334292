//! `runner alloc`: the size-class allocator document (document 004). Its real-world-like
//! test (sizes ~ 1/size, Pareto-like lifetimes, each block written and read once) on
//! handoff-alloc, glibc malloc, mimalloc, jemalloc, tcmalloc and Hoard (the last two
//! preloaded into their child when their library is there, "unavailable" with how to
//! get it when not), and on the document's own three designs (`handoff_alloc::takes`:
//! a header per block, a header per 4 KiB page, the class in the pointer's bits; the last also
//! with power-of-two classes). Each runs in its own child runner whose process
//! allocator it is: time and ns per alloc/free pair, peak resident memory over peak
//! requested bytes (the document's Figure 2), the main test again on 1, 2, ... threads
//! (its Figure 1 by thread count), TSC ticks per pair as the working set grows (Figure
//! 3), and a producer/consumer run where one thread allocates and another frees.
//! Repeats alternate the contenders.

mod args;
mod claims;
mod footprint;
mod report;
mod work;
mod workload;

use crate::lab::child::Task;
use crate::lab::error::Result;
use crate::lab::experiment::{AllFlags, AllRun, Experiment};
use crate::lab::pin::Placement;
use crate::lab::rotate;
use crate::lab::schema::Document;
use crate::lab::session::Session;
use crate::lab::topology::Topology;
use report::Outcome;
use std::path::PathBuf;

pub use args::{config, AllocArgs, Config, Settings};
pub use work::{child_task, Contender, Sample, Spec, CHILD_TASK};

/// The source document.
pub const DOCUMENT: Document = Document {
    file: "004_12c30817d25f96d8.txt",
    title: "(Re)Actor Allocation at 15 CPU Cycles",
};

/// The document's total allocation size: 1.3 GB.
pub const DOC_WORKING_SET: usize = 1_300_000_000;

/// `runner alloc`.
pub struct Alloc;

impl Experiment for Alloc {
    type Args = AllocArgs;
    type Config = Settings;
    type Outcome = Outcome;
    const NAME: &'static str = "alloc";
    const DOCUMENT: Document = DOCUMENT;
    const ABOUT: &'static str = "Size-class allocator vs glibc, mimalloc, jemalloc, tcmalloc, Hoard and the document's own three designs on its real-world-like test: time, memory, threads, working-set sweep, cross-thread frees (document 004)";
    const RUNS: &'static str = "5";
    const MAX_RUNS: usize = 100;
    const ROLES: &'static str = "one core per thread (the first runs the one-thread parts, the first two the producer/consumer)";
    const A_RUN: &'static str =
        "the main test and the working-set sweep once per contender, contenders alternated; medians reported";
    const CHILD_TASK: Option<(&'static str, Task)> = Some((CHILD_TASK, child_task));
    const CONTENDERS: bool = true;

    const ALL: AllFlags = AllFlags {
        smoke: AllRun {
            flags: &[
                "--working-set-mib",
                "4",
                "--items",
                "200000",
                "--runs",
                "1",
                "--sweep-max-mib",
                "2",
                "--noise-seconds",
                "0.2",
            ],
            seconds: 3,
        },
        quick: AllRun {
            flags: &[
                "--working-set-mib",
                "64",
                "--items",
                "3000000",
                "--runs",
                "2",
                "--sweep-max-mib",
                "64",
                "--sweep-items",
                "1000000",
                "--handoff-items",
                "1000000",
                "--noise-seconds",
                "0.5",
            ],
            seconds: 12,
        },
        // Nine repeats a third the size of its own default's, one in each of the
        // rounds of `runner all`, the working-set sweep up to 64 MiB.
        default: AllRun {
            flags: &[
                "--runs",
                "9",
                "--items",
                "3333333",
                "--sweep-items",
                "666667",
                "--handoff-items",
                "666667",
                "--sweep-max-mib",
                "64",
            ],
            seconds: 95,
        },
        full: AllRun {
            flags: &["--full"],
            seconds: 390,
        },
    };

    fn configure(
        a: &AllocArgs,
        pin: Option<&str>,
        topo: &Topology,
    ) -> Result<(Settings, Placement)> {
        config(a, pin, topo)
    }

    fn run(cfg: &Config, session: &mut Session) -> Result<Outcome> {
        let timer = session.clock.timer();
        let n = Contender::ALL.len();
        // Contenders preloaded into their child: where each library is, or why not.
        let preload: Vec<Option<std::result::Result<PathBuf, String>>> =
            Contender::ALL.iter().map(|c| c.preload()).collect();
        let bar = session.progress((n * cfg.run.runs) as u64)?;
        let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); n];
        let name = |i: usize| Contender::ALL[i].name().to_string();
        rotate::contenders(&bar, cfg.run.runs, n, name, |_, i| {
            let preloaded = match &preload[i] {
                Some(Ok(lib)) => Some(lib.clone()),
                Some(Err(_)) => return Ok(()),
                None => None,
            };
            let spec = Spec {
                contender: Contender::ALL[i],
                working_set: cfg.working_set,
                ops: cfg.items,
                threads: cfg.threads,
                pins: cfg.placement.threads(),
                // The sweep and the producer/consumer run in every repeat: one
                // sweep point is a few tens of milliseconds, which one host pause
                // can stretch by a third, and the producer/consumer rate is bimodal
                // for some allocators; the report gives medians.
                sweep: cfg.sweep.clone(),
                sweep_ops: cfg.sweep_items,
                handoff_items: cfg.handoff_items,
                scaling: cfg.scaling.clone(),
                preloaded,
                timer,
            };
            samples[i].push(work::measure(&spec)?);
            Ok(())
        })?;
        let libraries = Contender::ALL
            .iter()
            .zip(preload)
            .filter_map(|(&c, p)| {
                p.map(|p| match p {
                    Ok(lib) => (c, Ok(shown_path(&lib))),
                    Err(why) => (c, Err(why)),
                })
            })
            .collect();
        Ok(Outcome { samples, libraries })
    }
}

/// A library's path as the results record it: relative to the working directory when it
/// lies under it (a library the runner built in `target/`), so the results name no
/// folder of the machine that ran them; as found otherwise (a system library).
fn shown_path(lib: &std::path::Path) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| lib.strip_prefix(cwd).ok().map(std::path::Path::to_path_buf))
        .unwrap_or_else(|| lib.to_path_buf())
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::shown_path;

    #[test]
    fn a_library_under_the_working_directory_is_shown_relative() {
        let cwd = std::env::current_dir().unwrap();
        let built = cwd.join("target/contenders/libhoard.so");
        assert_eq!(shown_path(&built), "target/contenders/libhoard.so");
        let system = std::path::Path::new("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4");
        assert_eq!(shown_path(system), system.display().to_string());
    }
}
