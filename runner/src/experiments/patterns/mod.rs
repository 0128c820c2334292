//! `runner patterns`: the allocator-patterns document (document 003). Its sections,
//! each against malloc: a bump arena for batches of ticks, a typed pool for orders,
//! one pool shared by many threads (the document's lock-free pool, ABA-safe here,
//! with per-thread caches and a mutex beside it), resident memory of a million
//! ticks, the allocation profiler's percentile table, NUMA local vs remote access,
//! and an order-processing run with per-order latency and throughput.

mod args;
mod claims;
mod fragment;
mod lessons;
mod once;
mod outliers;
mod report;
mod sharing;
mod tables;
mod work;

use crate::lab::error::Result;
use crate::lab::experiment::{AllFlags, AllRun, Experiment};
use crate::lab::pin::Placement;
use crate::lab::schema::Document;
use crate::lab::session::Session;
use crate::lab::topology::Topology;
use crate::lab::{rotate, rounds, stop};

pub use args::{config, Config, PatternsArgs, Settings};

/// How many alternated glibc / jemalloc pairs each repeat runs (lesson 6, each side in a
/// child process of about 20 ms): glibc's loop runs in one of two modes from one
/// child to the next (3 of 12 pairs read glibc the faster, 0.74-0.90x, in one
/// `runner all` of 2026-12-05, none in the two beside it), so that one pair a repeat
/// left the claim's verdict to whether a run's 12 pairs held two or three of them;
/// four pairs a repeat give the rule for ratios (`lab::claims::needed`) 48 to judge,
/// a third of which may read the other way before the verdict is within noise.
pub(super) const GENERAL_PAIRS: usize = 4;

/// The source document.
pub const DOCUMENT: Document = Document {
    file: "003_2c72cf52cff595ec.txt",
    title: "Custom Memory Allocators for Trading Systems",
};

/// `runner patterns`.
pub struct Patterns;

impl Experiment for Patterns {
    type Args = PatternsArgs;
    type Config = Settings;
    type Outcome = report::Outcome;
    const NAME: &'static str = "patterns";
    const DOCUMENT: Document = DOCUMENT;
    const ABOUT: &'static str = "Arena, typed pool, shared pool, memory, profiler, NUMA and order processing vs malloc (document 003)";
    const RUNS: &'static str = "5";
    const MIN_RUNS: usize = 2;
    const ROLES: &'static str = "one core per thread (the first runs the one-thread parts)";
    const CHILD_TASK: Option<(&'static str, crate::lab::child::Task)> =
        Some((sharing::CHILD_TASK, sharing::child_task));
    const CONTENDERS: bool = true;
    const A_RUN: &'static str = "every timed part once per contender, contenders alternated; the first run is dropped and the median of the rest reported";

    const ALL: AllFlags = AllFlags {
        smoke: AllRun {
            flags: &["--scale", "0.01", "--runs", "2", "--noise-seconds", "0.2"],
            seconds: 1,
        },
        quick: AllRun {
            flags: &["--scale", "0.3", "--runs", "3", "--noise-seconds", "0.5"],
            seconds: 3,
        },
        // A warm-up and 12 repeats, spread over the rounds of `runner all`.
        default: AllRun {
            flags: &["--runs", "13"],
            seconds: 40,
        },
        full: AllRun {
            flags: &[],
            seconds: 5,
        },
    };

    fn configure(
        a: &PatternsArgs,
        pin: Option<&str>,
        topo: &Topology,
    ) -> Result<(Settings, Placement)> {
        config(a, pin, topo)
    }

    fn run(cfg: &Config, session: &mut Session) -> Result<report::Outcome> {
        let timer = session.clock.timer();
        let r = cfg.run.runs;
        let steps = 3 + 1 + r * (2 + 1 + 1 + work::Shared::ALL.len() + 2 + 2) + 1 + 1 + 1;
        let bar = session.progress(steps as u64)?;
        let check = stop::check;
        // Memory first, while the heap holds nothing freed that malloc could reuse.
        let mut memory = Vec::new();
        for how in once::Holder::ALL {
            check()?;
            bar.set_message(format!("memory {}", how.name()));
            memory.push((how, once::memory(cfg, how)?));
            bar.inc(1);
        }
        check()?;
        bar.set_message("fragmentation (glibc, child process)");
        let fragmentation = sharing::fragmentation(timer, cfg.memory_ticks as u64)?;
        bar.inc(1);
        let mut arena = Vec::new();
        let mut typed = Vec::new();
        let mut general = Vec::new();
        let mut shared = vec![Vec::new(); work::Shared::ALL.len()];
        let mut processed: Vec<Vec<work::Processed>> = vec![Vec::new(), Vec::new()];
        let mut lessons = report::Lessons::default();
        let mut outliers: Vec<(work::Shared, work::Outliers)> = work::Shared::ALL
            .iter()
            .map(|&w| (w, work::Outliers::default()))
            .collect();
        for rep in 0..r {
            // In `runner all`, the repeats are spread over its rounds.
            if !rounds::enter(rounds::round_of(rep, r))? {
                break;
            }
            let keep = rep > 0;
            check()?;
            bar.set_message(format!("repeat {} arena", rep + 1));
            let a = work::arena_vs_malloc(cfg, timer, rep % 2 == 0)?;
            bar.inc(1);
            check()?;
            bar.set_message(format!("repeat {} typed pool", rep + 1));
            let t = work::typed_pool_vs_box(cfg, timer, rep % 2 == 1)?;
            bar.inc(2);
            // The same two Box loops under the best general allocators, each in a
            // child process of its own, the two alternated.
            check()?;
            bar.set_message(format!("repeat {} Box on mimalloc, handoff-alloc", rep + 1));
            let mut b = [(0, 0); 2];
            for i in rotate::order(rep, 2) {
                b[i] = sharing::boxes(cfg, timer, report::GENERAL[i].0)?;
            }
            bar.inc(1);
            if keep {
                arena.push(a);
                typed.push(t);
                general.push(b);
            }
            for i in rotate::order(rep, work::Shared::ALL.len()) {
                check()?;
                let who = work::Shared::ALL[i];
                bar.set_message(format!(
                    "repeat {} {} threads {}",
                    rep + 1,
                    cfg.threads,
                    who.name()
                ));
                let wall = work::many_threads(cfg, timer, who)?;
                // The same again with every operation timed: the outliers.
                check()?;
                let x = work::outliers(cfg, timer, who)?;
                if keep {
                    shared[i].push(wall);
                    outliers[i].1.add(&x);
                }
                bar.inc(1);
            }
            for i in rotate::order(rep, 2) {
                check()?;
                let src = [work::Source::Malloc, work::Source::Pool][i];
                bar.set_message(format!("repeat {} orders {}", rep + 1, src.name()));
                let p = work::process(cfg, timer, src)?;
                if keep {
                    processed[i].push(p);
                }
                bar.inc(1);
            }
            // Lesson 8 (false sharing) and lesson 6 (jemalloc against glibc), each
            // pair alternated.
            check()?;
            bar.set_message(format!("repeat {} false sharing", rep + 1));
            let n = 2 * cfg.orders as u64;
            let mut fs = [0u64; 2];
            for i in rotate::order(rep, 2) {
                fs[i] = sharing::false_sharing(cfg, timer, n, i == 1)?;
            }
            bar.inc(1);
            check()?;
            bar.set_message(format!("repeat {} jemalloc vs glibc", rep + 1));
            let mut general_pairs = Vec::with_capacity(GENERAL_PAIRS);
            for pair in 0..GENERAL_PAIRS {
                let mut g = [0u64; 2];
                // Glibc first in every other pair, and first in the repeat every other
                // repeat (`rep * GENERAL_PAIRS + pair` put it first in every repeat:
                // four is even).
                for i in rotate::order(rep + pair, 2) {
                    check()?;
                    g[i] = sharing::general(cfg, timer, ["system", "jemalloc"][i])?;
                }
                general_pairs.push((g[0], g[1]));
            }
            bar.inc(1);
            if keep {
                lessons.sharing.push((fs[0], fs[1]));
                lessons.general.extend(general_pairs);
            }
        }
        check()?;
        bar.set_message("profiler");
        let profile = once::profiled(cfg, timer, &session.clock)?;
        bar.inc(1);
        check()?;
        bar.set_message("numa");
        let numa = once::numa_access(cfg, timer, &cfg.allowed)?;
        bar.inc(1);
        check()?;
        bar.set_message("L1 misses");
        let l1 = once::l1_misses(cfg, timer, cfg.cache_allocations)?;
        check()?;
        bar.set_message("L1 misses, simulated (callgrind)");
        let l1_simulated = once::l1_simulated(timer, cfg.cache_allocations);
        bar.inc(1);
        bar.finish_and_clear();
        let mut outcome = report::Outcome::new(
            &session.clock,
            memory,
            arena,
            typed,
            shared,
            processed,
            outliers,
            profile,
            numa,
            l1,
            lessons,
        );
        outcome.fragmentation = fragmentation;
        outcome.set_general(&session.clock, &general);
        outcome.l1_simulated = Some(l1_simulated);
        Ok(outcome)
    }
}
