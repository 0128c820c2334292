//! `runner programs`: unmodified programs from the distribution, each run under every
//! allocator the way a user tries one (`LD_PRELOAD`): redis-server driven by
//! redis-benchmark, sqlite3 on a generated database, python3 and lua on
//! allocation-heavy scripts; the program as it is (the C library's allocator, or the
//! one it links), handoff-alloc (libhandoff_alloc.so), jemalloc, mimalloc and
//! tcmalloc. Each run takes every program under every allocator once (document 004's
//! short test nine times, in passes: `Program::passes`), the allocators in an order
//! that rotates from run to run and pass to pass; wall time, CPU time and peak resident
//! memory (`wait4`) per program and allocator, medians over the runs. The claims are
//! the project's (issue 51): handoff-alloc finishes every program with the same output
//! as the others, in no more time than jemalloc and mimalloc, with at most 1.2 times
//! their peak memory. Document 004 is the allocator's source document; it ran no
//! programs.

mod report;
mod work;

use crate::lab::error::{Error, Result};
use crate::lab::experiment::{AllFlags, AllRun, Experiment, Setup};
use crate::lab::flags;
use crate::lab::pin::Placement;
use crate::lab::schema::Document;
use crate::lab::session::Session;
use crate::lab::topology::Topology;
use crate::lab::{rounds, stop};
use clap::Args;
use serde::{Deserialize, Serialize};

pub use work::{Alloc, Program};

/// `runner programs` options (every default is written here and nowhere else).
#[derive(Args, Debug, Clone)]
pub struct ProgramsArgs {
    /// Size of every workload, as a multiple of the default's (0.01 to 100)
    #[arg(long, default_value = "1", allow_hyphen_values = true, value_parser = flags::num_value)]
    pub scale: f64,
    /// The programs, comma-separated (redis, sqlite3, python3, lua, alloc-test) [default: all]
    #[arg(long)]
    pub programs: Option<String>,
}

/// Everything `runner programs` was asked to do (after validation).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Settings {
    /// Workload size, as a multiple of the default's.
    pub scale: f64,
    /// The programs run.
    pub programs: Vec<Program>,
}

/// The validated configuration.
pub type Config = Setup<Settings>;

/// `runner programs`.
pub struct Programs;

impl Experiment for Programs {
    type Args = ProgramsArgs;
    type Config = Settings;
    type Outcome = report::Outcome;
    const NAME: &'static str = "programs";
    const DOCUMENT: Document = crate::experiments::alloc::DOCUMENT;
    const ABOUT: &'static str = "Real programs (redis, sqlite3, python3, lua, document 004's test in C++) under every allocator by LD_PRELOAD: handoff-alloc, jemalloc, mimalloc, tcmalloc, the program's own";
    const RUNS: &'static str = "5";
    const ROLES: &'static str =
        "none: the programs run unpinned, on every core this process may use";
    const A_RUN: &'static str = "every program under every allocator once (document 004's test, a short program, nine times, its figures the medians of the nine), the allocators in an order that rotates from run to run and pass to pass; medians over the runs";
    const ALL: AllFlags = AllFlags {
        // The smoke scale runs on emulated machines (CI's many-core smoke, QEMU's TCG,
        // where a redis-benchmark and python3's start take most of a minute under five
        // allocators): the quick programs only; `runner programs` itself runs them all.
        smoke: AllRun {
            flags: &[
                "--runs",
                "1",
                "--scale",
                "0.02",
                "--programs",
                "sqlite3,lua,alloc-test",
                "--noise-seconds",
                "0",
            ],
            seconds: 3,
        },
        quick: AllRun {
            flags: &["--runs", "2", "--scale", "0.3", "--noise-seconds", "0.2"],
            seconds: 25,
        },
        // Nine runs at 0.22 of the programs' default work, one in each round of
        // `runner all`: nine repeats let the rule for ratios (`lab::claims::needed`)
        // give a verdict with one run of nine on the other side; six asked all six.
        default: AllRun {
            flags: &["--runs", "9", "--scale", "0.22"],
            seconds: 180,
        },
        full: AllRun {
            flags: &["--runs", "9", "--scale", "2"],
            seconds: 830,
        },
    };

    fn configure(
        a: &ProgramsArgs,
        pin: Option<&str>,
        topo: &Topology,
    ) -> Result<(Settings, Placement)> {
        if pin.is_some() {
            return Err(Error::Usage(
                "runner programs runs whole programs unpinned, on every core this process may use: --pin is not taken (run the runner under taskset to confine them)"
                    .into(),
            ));
        }
        if !(0.01..=100.0).contains(&a.scale) {
            return Err(Error::Usage(format!(
                "--scale {} is out of range: 0.01 to 100",
                a.scale
            )));
        }
        let programs = match &a.programs {
            Some(list) => flags::names("programs", list, &Program::ALL, Program::name)?,
            None => Program::ALL.to_vec(),
        };
        let cores: Vec<usize> = topo
            .allowed
            .iter()
            .copied()
            .take(flags::THREAD_NAMES.len())
            .collect();
        let placement = Placement::alike(&cores)
            .noted("the programs run unpinned, their threads wherever the scheduler puts them on these cores");
        Ok((
            Settings {
                scale: a.scale,
                programs,
            },
            placement,
        ))
    }

    fn run(cfg: &Config, session: &mut Session) -> Result<report::Outcome> {
        // The allocators' libraries (checked to load) and the programs' executables,
        // or why each is unavailable.
        let allocs: Vec<(
            Alloc,
            std::result::Result<Option<std::path::PathBuf>, String>,
        )> = Alloc::ALL
            .iter()
            .map(|&a| {
                let lib = match a.library() {
                    None => Ok(None),
                    Some(Ok(p)) => work::loads(&p).map(|()| Some(p)),
                    Some(Err(why)) => Err(why),
                };
                (a, lib)
            })
            .collect();
        let scratch = tempfile::tempdir()
            .map_err(|e| Error::Run(format!("no scratch folder for the programs: {e}")))?;
        let programs: Vec<(
            Program,
            std::result::Result<Vec<std::path::PathBuf>, String>,
        )> = cfg
            .programs
            .iter()
            .map(|&p| {
                let exes = p.find();
                // Document 004's test is compiled here, by the compiler found.
                let exes = match (p, exes) {
                    (Program::AllocTest, Ok(cxx)) => {
                        work::compile_alloc_test(&cxx[0], scratch.path()).map(|e| vec![e])
                    }
                    (_, exes) => exes,
                };
                (p, exes)
            })
            .collect();
        let usable: Vec<(Alloc, Option<std::path::PathBuf>)> = allocs
            .iter()
            .filter_map(|(a, l)| l.as_ref().ok().map(|l| (*a, l.clone())))
            .collect();
        let children: usize = programs
            .iter()
            .filter(|(_, e)| e.is_ok())
            .map(|(p, _)| p.passes() * usable.len())
            .sum();
        let bar = session.progress((cfg.run.runs * children) as u64)?;
        let mut samples = report::Samples::new();
        for run in 0..cfg.run.runs {
            // In `runner all`, the runs are spread over its rounds.
            if !rounds::enter(rounds::round_of(run, cfg.run.runs))? {
                break;
            }
            for (program, exes) in &programs {
                let Ok(exes) = exes else { continue };
                let mut passes: Vec<Vec<Result<work::Sample>>> =
                    usable.iter().map(|_| Vec::new()).collect();
                for pass in 0..program.passes() {
                    for k in 0..usable.len() {
                        // The allocators' order rotates from run to run, from pass to
                        // pass and from program to program, so that none always runs
                        // first or last.
                        let i = (k + run + pass + *program as usize) % usable.len();
                        let (alloc, lib) = &usable[i];
                        if stop::requested() {
                            return Err(Error::Interrupted);
                        }
                        bar.set_message(format!("{} / {}", program.name(), alloc.name()));
                        passes[i].push(work::run(
                            *program,
                            exes,
                            lib.as_deref(),
                            cfg.scale,
                            scratch.path(),
                        ));
                        bar.inc(1);
                    }
                }
                for ((alloc, _), passes) in usable.iter().zip(passes) {
                    let s = work::of_passes(passes).map_err(|e| match e {
                        Error::Run(m) => {
                            Error::Run(format!("{} under {}: {m}", program.name(), alloc.name()))
                        }
                        e => e,
                    });
                    samples.push(*program, *alloc, run, s.map_err(|e| e.to_string()));
                }
            }
        }
        bar.finish_and_clear();
        Ok(report::Outcome::new(
            // The results name each library by its file, not its path on this machine.
            allocs
                .into_iter()
                .map(|(a, l)| {
                    let file = |p: std::path::PathBuf| {
                        p.file_name().map_or_else(
                            || p.display().to_string(),
                            |n| n.to_string_lossy().into_owned(),
                        )
                    };
                    (a, l.map(|p| p.map(file)))
                })
                .collect(),
            programs.into_iter().map(|(p, e)| (p, e.err())).collect(),
            samples,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::experiment::{assert_refused, on_two_cores};

    #[test]
    fn defaults_run_every_program_at_the_default_size() {
        let c = on_two_cores::<Programs>(&[]).unwrap();
        assert_eq!(c.programs, Program::ALL.to_vec());
        assert_eq!((c.scale, c.run.runs), (1.0, 5));
        let c = on_two_cores::<Programs>(&["--programs", "lua,sqlite3"]).unwrap();
        assert_eq!(c.programs, vec![Program::Lua, Program::Sqlite]);
    }

    fn sample(wall_s: f64, output: &str, ns: Option<f64>) -> work::Sample {
        work::Sample {
            wall_s,
            cpu_s: wall_s * 0.9,
            peak_bytes: (wall_s * 1000.0) as u64,
            output: output.into(),
            ns_per_replacement: ns,
        }
    }

    #[test]
    fn a_run_of_passes_is_their_median_and_fails_with_any_of_them() {
        assert_eq!(Program::AllocTest.passes(), 9);
        assert_eq!(Program::Redis.passes(), 1);
        let s = work::of_passes(vec![
            Ok(sample(0.09, "ok 1", Some(50.0))),
            Ok(sample(0.07, "ok 1", Some(40.0))),
            Ok(sample(0.30, "ok 1", Some(90.0))),
        ])
        .unwrap();
        assert_eq!(
            (s.wall_s, s.peak_bytes, s.output.as_str()),
            (0.09, 90, "ok 1")
        );
        assert!((s.cpu_s - 0.081).abs() < 1e-12);
        assert_eq!(s.ns_per_replacement, Some(50.0));
        // One pass without the test's own timing: none for the run.
        let s = work::of_passes(vec![
            Ok(sample(0.09, "x", Some(50.0))),
            Ok(sample(0.07, "x", None)),
        ]);
        assert_eq!(s.unwrap().ns_per_replacement, None);
        // Another output in any pass fails the run, and so does a pass's error.
        let e = work::of_passes(vec![
            Ok(sample(0.09, "ok 1", None)),
            Ok(sample(0.07, "ok 2", None)),
        ]);
        assert!(e
            .unwrap_err()
            .to_string()
            .contains("pass 2 of 2 printed another output"));
        let e = work::of_passes(vec![
            Ok(sample(0.09, "ok 1", None)),
            Err(Error::Run("exit status 139".into())),
        ]);
        assert!(e.unwrap_err().to_string().contains("exit status 139"));
        assert!(work::of_passes(Vec::new()).is_err());
    }

    #[test]
    fn bad_input_is_refused_with_one_line() {
        assert_refused::<Programs>(
            &Topology::two_cores(),
            &[
                (&["--scale", "0"][..], "out of range"),
                (&["--scale", "1000"][..], "out of range"),
                (&["--programs", "gcc"][..], "known: redis"),
                (&["--pin", "0"][..], "--pin is not taken"),
            ],
        );
    }
}
