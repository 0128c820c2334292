//! `runner programs`' report: the table of every program under every allocator, the
//! project's claims for handoff-alloc, the contenders and the charts.

use super::work::{Alloc, Program, Sample};
use super::Config;
use crate::lab::chart::Chart;
use crate::lab::claims::{all_hold, holds, ratio_at_least, Claim, Verdict};
use crate::lab::error::Result;
use crate::lab::experiment::Report;
use crate::lab::measure::median_or_nan;
use crate::lab::noise::Probes;
use crate::lab::results::Outputs;
use crate::lab::schema::{Better, Unit, Variant};
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// Where the claims stand: the project's, not a document's.
const PLACE: &str = "project (issue 51): real programs";
/// handoff-alloc's peak memory may be at most this many times another's.
const PEAK_LIMIT: f64 = 1.2;

/// Every run of every program under every allocator: `(program, allocator, run,
/// sample or the error)`.
#[derive(Default)]
pub struct Samples(Vec<(Program, Alloc, usize, std::result::Result<Sample, String>)>);

impl Samples {
    /// None yet.
    pub fn new() -> Samples {
        Samples::default()
    }

    /// Adds one run's result.
    pub fn push(
        &mut self,
        p: Program,
        a: Alloc,
        run: usize,
        s: std::result::Result<Sample, String>,
    ) {
        self.0.push((p, a, run, s));
    }

    /// `p` under `a`, by run (`None` for a run that failed).
    fn of(&self, p: Program, a: Alloc) -> Vec<(usize, std::result::Result<&Sample, &str>)> {
        let mut v: Vec<_> = self
            .0
            .iter()
            .filter(|s| s.0 == p && s.1 == a)
            .map(|s| (s.2, s.3.as_ref().map_err(String::as_str)))
            .collect();
        v.sort_by_key(|s| s.0);
        v
    }

    /// `p` under `a` in run `run`, if it succeeded.
    fn at(&self, p: Program, a: Alloc, run: usize) -> Option<&Sample> {
        self.0
            .iter()
            .find(|s| s.0 == p && s.1 == a && s.2 == run)
            .and_then(|s| s.3.as_ref().ok())
    }
}

/// What `runner programs` measured.
pub struct Outcome {
    /// Each allocator's library file (`None`: the program as it is), or why it did not
    /// run.
    allocs: Vec<(Alloc, std::result::Result<Option<String>, String>)>,
    /// Each program, and why it did not run if it did not.
    programs: Vec<(Program, Option<String>)>,
    samples: Samples,
}

/// One program under one allocator, over the runs.
struct Cell {
    wall: Vec<f64>,
    cpu: Vec<f64>,
    peak: Vec<f64>,
    /// Runs whose output differed from the program's own (default) output that run.
    wrong: usize,
    /// The first error, if a run failed.
    error: Option<String>,
    runs: usize,
}

impl Outcome {
    /// The outcome of the runs.
    pub fn new(
        allocs: Vec<(Alloc, std::result::Result<Option<String>, String>)>,
        programs: Vec<(Program, Option<String>)>,
        samples: Samples,
    ) -> Outcome {
        Outcome {
            allocs,
            programs,
            samples,
        }
    }

    fn available(&self, a: Alloc) -> std::result::Result<(), &str> {
        match self.allocs.iter().find(|x| x.0 == a).map(|x| &x.1) {
            Some(Ok(_)) => Ok(()),
            Some(Err(why)) => Err(why),
            None => Err("not run"),
        }
    }

    fn cell(&self, p: Program, a: Alloc) -> Cell {
        let runs = self.samples.of(p, a);
        let ok: Vec<(usize, &Sample)> = runs
            .iter()
            .filter_map(|(r, s)| s.ok().map(|s| (*r, s)))
            .collect();
        let wrong = ok
            .iter()
            .filter(|(r, s)| {
                self.samples
                    .at(p, Alloc::Default, *r)
                    .is_some_and(|d| d.output != s.output)
            })
            .count();
        Cell {
            wall: ok.iter().map(|s| s.1.wall_s).collect(),
            cpu: ok.iter().map(|s| s.1.cpu_s).collect(),
            peak: ok.iter().map(|s| s.1.peak_bytes as f64).collect(),
            wrong,
            error: runs.iter().find_map(|(_, s)| s.err().map(str::to_string)),
            runs: runs.len(),
        }
    }

    /// `figure` of `other` over handoff-alloc's, run by run (both ran), scaled by `k`.
    fn ratios(&self, p: Program, other: Alloc, figure: fn(&Sample) -> f64, k: f64) -> Vec<f64> {
        self.samples
            .of(p, Alloc::Handoff)
            .iter()
            .filter_map(|(r, h)| {
                let h = h.ok()?;
                let o = self.samples.at(p, other, *r)?;
                Some(k * figure(o) / figure(h))
            })
            .collect()
    }

    fn ran(&self, p: Program) -> bool {
        self.programs.iter().any(|x| x.0 == p && x.1.is_none())
    }
}

fn ids(p: Program) -> [&'static str; 3] {
    match p {
        Program::Redis => ["redis-output", "redis-time", "redis-memory"],
        Program::Sqlite => ["sqlite3-output", "sqlite3-time", "sqlite3-memory"],
        Program::Python => ["python3-output", "python3-time", "python3-memory"],
        Program::Lua => ["lua-output", "lua-time", "lua-memory"],
        Program::AllocTest => ["alloc-test-output", "alloc-test-time", "alloc-test-memory"],
    }
}

fn mib(b: f64) -> String {
    format!("{:.1}", b / (1 << 20) as f64)
}

impl Report<Config> for Outcome {
    fn sections(&self, cfg: &Config) -> Vec<String> {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Programs under each allocator (LD_PRELOAD), medians of {} runs at scale {}: wall = the workload's time (redis: redis-benchmark's), CPU and peak = the program's process (redis: the server's), from wait4",
            cfg.run.runs, cfg.scale
        );
        let _ = writeln!(
            s,
            "  {:<10} {:<14} {:>8} {:>8} {:>9}  output",
            "program", "allocator", "wall s", "CPU s", "peak MiB"
        );
        for (p, why) in &self.programs {
            if let Some(why) = why {
                let _ = writeln!(s, "  {:<10} unavailable: {why}", p.name());
                continue;
            }
            for a in Alloc::ALL {
                if let Err(why) = self.available(a) {
                    let _ = writeln!(s, "  {:<10} {:<14} unavailable: {why}", p.name(), a.name());
                    continue;
                }
                let c = self.cell(*p, a);
                let output = match (&c.error, c.wrong) {
                    (Some(e), _) => format!("FAILED: {e}"),
                    (None, 0) => "as the program's own".to_string(),
                    (None, n) => {
                        format!("DIFFERS from the program's own in {n} of {} runs", c.runs)
                    }
                };
                let _ = writeln!(
                    s,
                    "  {:<10} {:<14} {:>8.3} {:>8.3} {:>9}  {output}",
                    p.name(),
                    a.name(),
                    median_or_nan(c.wall.clone()),
                    median_or_nan(c.cpu.clone()),
                    mib(median_or_nan(c.peak.clone())),
                );
            }
        }
        if self.ran(Program::AllocTest) {
            let per: Vec<String> = Alloc::ALL
                .iter()
                .filter(|&&a| self.available(a).is_ok())
                .map(|&a| {
                    let runs = self.samples.of(Program::AllocTest, a);
                    let ns = runs
                        .iter()
                        .filter_map(|(_, s)| s.ok().and_then(|s| s.ns_per_replacement));
                    format!("{} {:.1}", a.name(), median_or_nan(ns))
                })
                .collect();
            let _ = writeln!(
                s,
                "  alloc-test's own timing of its replacements (document 004's loop in C++, operator new and delete), ns each, medians: {}",
                per.join(", ")
            );
        }
        let _ = writeln!(
            s,
            "  (default: the program as installed, on the C library's allocator, or on the allocator it links: Debian's redis-server links jemalloc)"
        );
        vec![s]
    }

    fn claims(&self, _cfg: &Config, _noise: Option<&Probes>) -> Vec<Claim> {
        let mut out = Vec::new();
        for (p, why) in &self.programs {
            let [id_out, id_time, id_mem] = ids(*p);
            let name = p.name();
            let not_run = |id: &'static str, claim: String, why: &str| {
                Claim::new(id, claim, "-", "-", (Verdict::NotMeasured, why.to_string())).at(PLACE)
            };
            let c_out =
                format!("handoff-alloc runs {name} to the end with the program's own output");
            let c_time =
                format!("handoff-alloc's wall time on {name} is at most jemalloc's and mimalloc's");
            let c_mem = format!(
                "handoff-alloc's peak resident memory on {name} is at most {PEAK_LIMIT}x jemalloc's and mimalloc's"
            );
            if let Some(why) = why {
                out.push(not_run(id_out, c_out, why).untimed());
                out.push(not_run(id_time, c_time, why));
                out.push(not_run(id_mem, c_mem, why).untimed());
                continue;
            }
            if let Err(why) = self.available(Alloc::Handoff) {
                out.push(not_run(id_out, c_out, why).untimed());
                out.push(not_run(id_time, c_time, why));
                out.push(not_run(id_mem, c_mem, why).untimed());
                continue;
            }
            let h = self.cell(*p, Alloc::Handoff);
            let ok = h.error.is_none() && h.wrong == 0 && h.runs > 0;
            out.push(
                Claim::new(
                    id_out,
                    c_out,
                    "-",
                    match (&h.error, h.wrong) {
                        (Some(e), _) => format!("failed: {e}"),
                        (None, n) => format!("{} runs, {n} with another output", h.runs),
                    },
                    holds(ok, "every run ended normally with the output of the program on its own allocator in the same run"),
                )
                .at(PLACE)
                .untimed(),
            );
            // Time and memory against jemalloc and mimalloc, run by run.
            let mut time_parts = Vec::new();
            let mut mem_parts = Vec::new();
            let mut ours_time = Vec::new();
            let mut ours_mem = Vec::new();
            for other in [Alloc::Jemalloc, Alloc::Mimalloc] {
                if let Err(why) = self.available(other) {
                    let part = (Verdict::NotMeasured, format!("{}: {why}", other.name()));
                    time_parts.push(part.clone());
                    mem_parts.push(part);
                    continue;
                }
                let o = self.cell(*p, other);
                let t = self.ratios(*p, other, |s| s.wall_s, 1.0);
                let m = self.ratios(*p, other, |s| s.peak_bytes as f64, PEAK_LIMIT);
                ours_time.push(format!(
                    "{:.3} s vs {} {:.3} s",
                    median_or_nan(h.wall.clone()),
                    other.name(),
                    median_or_nan(o.wall.clone())
                ));
                ours_mem.push(format!(
                    "{} MiB vs {} {} MiB",
                    mib(median_or_nan(h.peak.clone())),
                    other.name(),
                    mib(median_or_nan(o.peak.clone()))
                ));
                time_parts.push(ratio_at_least(
                    &t,
                    1.0,
                    &format!(
                        "{}'s wall time / handoff-alloc's, run by run, >= 1",
                        other.name()
                    ),
                ));
                mem_parts.push(ratio_at_least(
                    &m,
                    1.0,
                    &format!(
                        "{PEAK_LIMIT} x {}'s peak / handoff-alloc's, run by run, >= 1",
                        other.name()
                    ),
                ));
            }
            out.push(
                Claim::new(
                    id_time,
                    c_time,
                    "-",
                    ours_time.join("; "),
                    all_hold(&time_parts),
                )
                .at(PLACE),
            );
            out.push(
                Claim::new(
                    id_mem,
                    c_mem,
                    "-",
                    ours_mem.join("; "),
                    all_hold(&mem_parts),
                )
                .at(PLACE)
                .untimed(),
            );
        }
        out
    }

    fn variants(&self, _cfg: &Config) -> Vec<Variant> {
        let mut out = Vec::new();
        for (p, why) in &self.programs {
            for (a, lib) in &self.allocs {
                let name = format!("{} / {}", p.name(), a.name());
                if let Some(why) = why {
                    out.push(Variant::unavailable(&name, why));
                    continue;
                }
                let lib = match lib {
                    Ok(lib) => lib,
                    Err(why) => {
                        out.push(Variant::unavailable(&name, why));
                        continue;
                    }
                };
                let c = self.cell(*p, *a);
                let mut v = Variant::new(&name);
                v.set("program", p.name())
                    .set("allocator", a.name())
                    .set("library", lib)
                    .set("runs", c.wall.len())
                    .set("wrong_outputs", c.wrong);
                if let Some(e) = &c.error {
                    v.set("error", e);
                }
                v.figure(
                    "wall",
                    Unit::Seconds,
                    Better::Lower,
                    median_or_nan(c.wall.clone()),
                    c.wall.clone(),
                )
                .figure(
                    "cpu",
                    Unit::Seconds,
                    Better::Lower,
                    median_or_nan(c.cpu.clone()),
                    c.cpu.clone(),
                )
                .figure(
                    "peak_rss",
                    Unit::Bytes,
                    Better::Lower,
                    median_or_nan(c.peak.clone()),
                    c.peak.clone(),
                );
                if *p == Program::AllocTest {
                    let ns: Vec<f64> = self
                        .samples
                        .of(*p, *a)
                        .iter()
                        .filter_map(|(_, s)| s.ok().and_then(|s| s.ns_per_replacement))
                        .collect();
                    v.figure(
                        "ns_per_replacement",
                        Unit::Ns,
                        Better::Lower,
                        median_or_nan(ns.clone()),
                        ns,
                    );
                }
                out.push(v);
            }
        }
        out
    }

    fn fields(&self, _cfg: &Config) -> Map<String, Value> {
        let mut m = Map::new();
        // Each program's outputs per allocator and run, as printed (what the output
        // claim compares).
        let outputs: Vec<Value> = self
            .samples
            .0
            .iter()
            .map(|(p, a, r, s)| {
                serde_json::json!({
                    "program": p.name(),
                    "allocator": a.name(),
                    "run": r,
                    "output": s.as_ref().map(|s| s.output.clone()).unwrap_or_else(|e| format!("error: {e}")),
                })
            })
            .collect();
        m.insert("outputs".into(), outputs.into());
        m
    }

    fn charts(&self, cfg: &Config) -> Result<Outputs> {
        let mut files = Outputs::new();
        // Each allocator's wall time and peak memory over the program's own, per
        // program: one bar per (program, allocator).
        for (file, title, y, figure) in [
            (
                "programs-time.svg",
                "wall time, relative to the program's own allocator",
                "time / default's",
                (|c: &Cell| median_or_nan(c.wall.clone())) as fn(&Cell) -> f64,
            ),
            (
                "programs-memory.svg",
                "peak resident memory, relative to the program's own allocator",
                "peak / default's",
                |c: &Cell| median_or_nan(c.peak.clone()),
            ),
        ] {
            let mut bars = Vec::new();
            for (p, why) in &self.programs {
                if why.is_some() || !self.ran(*p) {
                    continue;
                }
                let base = figure(&self.cell(*p, Alloc::Default));
                for a in Alloc::ALL.into_iter().skip(1) {
                    if self.available(a).is_ok() {
                        bars.push((
                            format!("{} {}", p.name(), a.name()),
                            figure(&self.cell(*p, a)) / base,
                        ));
                    }
                }
            }
            files.chart(
                cfg.run.out.join(file),
                Chart::Bars {
                    title: title.into(),
                    y: y.into(),
                    bars,
                },
            )?;
        }
        Ok(files)
    }
}
