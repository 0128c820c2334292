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
//! Each repeat measures every contender in several passes, each pass a child of its
//! own, a pass's children alive together and taking turns at the main test
//! (`turns.rs`; `--turns 0`: one after the other); the repeat's figures are the passes'
//! medians.

mod args;
mod claims;
mod cross;
mod footprint;
mod passes;
mod report;
mod turns;
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
        "every contender in each of --passes passes, each in a child of its own, a pass's children taking turns at the main test (--turns), the working-set sweep in the first pass; a repeat's figures are its passes' medians";
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
                "--passes",
                "1",
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
                "--passes",
                "1",
            ],
            seconds: 12,
        },
        // Nine repeats a third the size of its own default's, one in each of the
        // rounds of `runner all`, two passes each, the working-set sweep up to 64 MiB.
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
            seconds: 165,
        },
        full: AllRun {
            flags: &["--full"],
            seconds: 700,
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
        let n_passes = cfg.passes;
        // Each repeat measures every contender `passes` times, one child each: a
        // contender's pace here drifts with the host over seconds (one child 90 ns a
        // pair, a child ten seconds later 50), so its passes are spread over the repeat
        // as its rivals' are, and the repeat's figures are their medians. With turns
        // (`--turns`, the default) a pass's children are alive together and take turns
        // at the main test and the scaling run, a few milliseconds each; without, they
        // run one after the other. The first pass also runs the sweep.
        let mut passed: Vec<Vec<Vec<(usize, Sample)>>> = vec![vec![Vec::new(); cfg.run.runs]; n];
        let spec = |pass: usize, i: usize| -> Option<Spec> {
            let preloaded = match &preload[i] {
                Some(Ok(lib)) => Some(lib.clone()),
                Some(Err(_)) => return None,
                None => None,
            };
            let first = pass == 0;
            Some(Spec {
                contender: Contender::ALL[i],
                working_set: cfg.working_set,
                ops: cfg.items,
                threads: cfg.threads,
                pins: cfg.placement.threads(),
                // The sweep (in the first pass) and the producer/consumer run in every
                // repeat: one sweep point is a few tens of milliseconds, which one host
                // pause can stretch by a third, and the producer/consumer rate depends
                // on the placement of the cores; the report gives medians.
                sweep: if first { cfg.sweep.clone() } else { Vec::new() },
                sweep_ops: cfg.sweep_items,
                handoff_items: cfg.handoff_items,
                scaling: cfg.scaling.clone(),
                tls: first,
                preloaded,
                timer,
                turns: None,
            })
        };
        if cfg.turns > 0 {
            let bar = session.progress((n_passes * cfg.run.runs) as u64)?;
            let name = |j: usize| format!("pass {}", j + 1);
            let phases = 1 + cfg.scaling.len();
            rotate::contenders(&bar, cfg.run.runs, n_passes, name, |run, j| {
                let (pass, _) = rotate::pass_of(run, j, 1, n_passes);
                let (ids, specs): (Vec<usize>, Vec<Spec>) =
                    (0..n).filter_map(|i| Some((i, spec(pass, i)?))).unzip();
                let seq = run * n_passes + pass;
                let samples = turns::pass(specs, seq, phases, cfg.turns, work::measure)?;
                for (i, s) in ids.into_iter().zip(samples) {
                    passed[i][run].push((pass, s));
                }
                Ok(())
            })?;
        } else {
            let bar = session.progress((n * n_passes * cfg.run.runs) as u64)?;
            let name = |j: usize| Contender::ALL[j % n].name().to_string();
            rotate::contenders(&bar, cfg.run.runs, n * n_passes, name, |run, j| {
                let (pass, i) = rotate::pass_of(run, j, n, n_passes);
                if let Some(spec) = spec(pass, i) {
                    passed[i][run].push((pass, work::measure(&spec)?));
                }
                Ok(())
            })?;
        }
        let samples = passes::repeats(passed);
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
