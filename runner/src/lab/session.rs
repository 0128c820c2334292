//! The lifecycle every experiment run shares. [`Session::start`] pins the control
//! thread, calibrates the TSC, captures the environment and probes the pinned cores'
//! noise; the experiment measures; [`Session::finish`] probes again, prints the report
//! and writes every output file in one atomic commit (nothing at all after Ctrl-C).
//! The output folder is checked by the experiment's validation, before any of this
//! ([`check_writable`](super::results::check_writable)).

use super::claims::{self, Claim};
use super::env::{Env, Toolchain};
use super::error::{Error, Result};
use super::flags::{ClockChoice, Run};
use super::noise::{self, Probes};
use super::pin::{self, Placement};
use super::results::Outputs;
use super::schema::{self, Document};
use super::topology::{format_cpu_list, Topology};
use super::{fmt, stop};
use handoff_clock::Clock;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Which experiment runs: its name (`queue`, `pipeline`, ...; also the output files'
/// stem) and its source document, as the registry gives them.
#[derive(Clone, Copy, Debug)]
pub struct Id {
    /// The experiment's name.
    pub name: &'static str,
    /// The source document.
    pub document: Document,
}

/// What a run needs from the lab, decided by validation: the common flags (the output
/// folder, the noise probe's seconds) and the experiment's placement. The noise probe
/// spins on the placement's first two roles (the producer's and the consumer's cores:
/// the handoff whose floor it reports).
#[derive(Clone, Debug)]
pub struct Plan {
    /// The common flags, validated.
    pub run: Run,
    /// Where the threads run.
    pub placement: Placement,
}

/// What an experiment hands back for the report.
#[derive(Debug, Default)]
pub struct Output {
    /// The printed tables, in order.
    pub sections: Vec<String>,
    /// The document's claims beside this run's figures.
    pub claims: Vec<Claim>,
    /// The experiment's own fields of the results JSON (`config`, `variants`,
    /// `sweeps`, ...); the lab adds `schema`, `experiment`, `document`, `started`,
    /// `finished`, `env` and `claims`.
    pub json: Map<String, Value>,
    /// Charts and any other files, written with the JSON.
    pub files: Outputs,
}

/// A run in progress: the calibrated clock, the environment, the progress bar.
pub struct Session {
    /// The calibrated TSC.
    pub clock: Clock,
    /// The environment of this run (written into the JSON as `env`).
    pub env: Env,
    id: Id,
    plan: Plan,
    started: String,
    probes: Probes,
    bar: indicatif::ProgressBar,
}

impl Session {
    /// Starts a run: Ctrl-C handler, control-thread pin, TSC calibration, environment,
    /// the first noise probe. Prints the header, the pins and the probe.
    pub fn start(id: Id, plan: Plan, topo: &Topology, tools: &Toolchain) -> Result<Session> {
        stop::install();
        let started = fmt::now_rfc3339();
        if let Some(c) = plan.placement.control() {
            pin::pin_current(c)?;
        }
        let clock = choose_clock(plan.run.clock)?;
        let place = &plan.placement;
        let mut pins: BTreeMap<String, Option<usize>> = place
            .roles()
            .map(|(role, cpu)| (role.to_string(), Some(cpu)))
            .collect();
        pins.insert("control".into(), place.control());
        let env = Env::capture(topo, &clock, tools, pins, place.note());
        println!("{}", header(id, &env));
        if let Some(line) = clock_line(&clock, &env) {
            println!("{line}");
        }
        let mut line = String::from("pins: ");
        for (role, cpu) in place.roles() {
            line.push_str(&format!("{role} {cpu}, "));
        }
        line.push_str(&format!(
            "control {}",
            place
                .control()
                .map(|c| c.to_string())
                .unwrap_or_else(|| "unpinned".into())
        ));
        let first_two: Vec<String> = place.roles().take(2).map(|(r, _)| r.to_string()).collect();
        if let [a, b] = &first_two[..] {
            match topo.share_l3(place.producer(), place.consumer()) {
                Some(true) => line.push_str(&format!(" ({a} and {b} share an L3)")),
                Some(false) => line.push_str(&format!(" ({a} and {b} on different L3s)")),
                None => {}
            }
        }
        println!("{line}");
        if let Some(n) = place.note() {
            println!("note: {n}");
        }
        let mut session = Session {
            id,
            clock,
            env,
            plan,
            started,
            probes: Probes::default(),
            bar: indicatif::ProgressBar::hidden(),
        };
        if session.plan.run.noise_seconds > 0.0 {
            println!(
                "noise: spinning {} s on cores {} (gaps of {} or more)...",
                session.plan.run.noise_seconds,
                format_cpu_list(&session.probe_cores()),
                fmt::dur(noise::THRESHOLD_NS)
            );
            session.probes.before = Some(session.probe()?);
            for l in session.probes.lines() {
                println!("noise {l}");
            }
        }
        Ok(session)
    }

    fn probe_cores(&self) -> Vec<usize> {
        self.plan.placement.threads().into_iter().take(2).collect()
    }

    fn probe(&self) -> Result<noise::Probe> {
        noise::probe(
            &self.probe_cores(),
            self.plan.run.noise_seconds,
            &self.clock,
        )
    }

    /// Probes the pinned cores after the runs (once; not after Ctrl-C) and returns both
    /// probes, or `None` when the run has no probe. An experiment calls this before it
    /// judges its claims, so that a tail claim can be read against the noise floor;
    /// [`finish`](Self::finish) calls it otherwise.
    pub fn probe_after(&mut self) -> Result<Option<&Probes>> {
        if self.plan.run.noise_seconds <= 0.0 {
            return Ok(None);
        }
        if self.probes.after.is_none() && !self.interrupted() {
            self.probes.after = Some(self.probe()?);
        }
        Ok(Some(&self.probes))
    }

    /// Shows a progress bar of `steps` steps (more may be set later) and returns it.
    pub fn progress(&mut self, steps: u64) -> Result<indicatif::ProgressBar> {
        let bar = indicatif::ProgressBar::new(steps);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:30} {pos}/{len} runs  {elapsed} (eta {eta})  {msg}",
            )
            .map_err(|e| Error::Run(e.to_string()))?,
        );
        self.bar = bar.clone();
        Ok(bar)
    }

    /// Whether Ctrl-C asked the run to stop.
    pub fn interrupted(&self) -> bool {
        stop::requested()
    }

    /// Probes the cores again (unless interrupted), adds the probes to the environment,
    /// prints the report and writes `<experiment>.json`, `<experiment>.txt` and the
    /// experiment's files, all or nothing. After Ctrl-C nothing is written and the
    /// result is [`Error::Interrupted`].
    pub fn finish(mut self, mut out: Output) -> Result<Vec<PathBuf>> {
        self.bar.finish_and_clear();
        if self.interrupted() {
            return Err(Error::Interrupted);
        }
        if self.env.emulated_cpus {
            out.claims = claims::on_emulated_cpus(std::mem::take(&mut out.claims));
        }
        let probed = self.probe_after()?.is_some();
        if probed {
            self.env.noise = Some(self.probes.clone());
        }
        let noise_section = |lines: Vec<String>| {
            let mut s = format!(
                "noise: what interrupts a thread spinning on each pinned core ({} s, gaps of {} or more); a floor is the latency those gaps alone impose on items handed from the producer's core to the consumer's\n",
                self.plan.run.noise_seconds,
                fmt::dur(noise::THRESHOLD_NS)
            );
            for l in lines {
                s.push_str(&format!("  {l}\n"));
            }
            s
        };
        let mut body = String::new();
        for s in &out.sections {
            body.push('\n');
            body.push_str(s);
        }
        body.push('\n');
        body.push_str(&claims::table(&out.claims));
        // Printed: what the start did not print already (the probe after the runs).
        let after = Probes {
            before: None,
            after: self.probes.after.clone(),
        };
        let printed_noise = if probed {
            format!("\n{}", noise_section(after.lines()))
        } else {
            String::new()
        };
        print!("{printed_noise}{body}");
        // The file: the whole report.
        let mut report = format!("{}\n", header(self.id, &self.env));
        if let Some(line) = clock_line(&self.clock, &self.env) {
            report.push_str(&format!("{line}\n"));
        }
        if let Some(line) = super::rounds::line() {
            report.push_str(&format!("{line}\n"));
        }
        if probed {
            report.push('\n');
            report.push_str(&noise_section(self.probes.lines()));
        }
        report.push_str(&body);

        let mut json = Map::new();
        json.insert("schema".into(), schema::SCHEMA.into());
        json.insert("experiment".into(), self.id.name.into());
        json.insert("document".into(), to_value(&self.id.document)?);
        json.insert("started".into(), self.started.clone().into());
        json.insert("finished".into(), fmt::now_rfc3339().into());
        json.insert("env".into(), to_value(&self.env)?);
        json.insert("claims".into(), to_value(&out.claims)?);
        let charts: Vec<String> = out
            .files
            .paths()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        json.insert("charts".into(), to_value(&charts)?);
        json.insert("chart_data".into(), out.files.chart_data());
        if let Some(rounds) = super::rounds::json() {
            json.insert("rounds".into(), rounds);
        }
        json.extend(out.json);
        let text = serde_json::to_vec_pretty(&Value::Object(json))?;
        let dir = &self.plan.run.out;
        let mut files = Outputs::new();
        files.add(dir.join(format!("{}.json", self.id.name)), text);
        files.add(
            dir.join(format!("{}.txt", self.id.name)),
            report.into_bytes(),
        );
        files.extend(out.files);
        if self.interrupted() {
            return Err(Error::Interrupted);
        }
        let written = files
            .commit()
            .map_err(|e| Error::Output(format!("writing results: {e}")))?;
        println!();
        for p in &written {
            println!("wrote {}", p.display());
        }
        Ok(written)
    }
}

fn header(id: Id, env: &Env) -> String {
    format!(
        "{} ({}, \"{}\"): {}",
        id.name,
        id.document.number(),
        id.document.title,
        env.summary()
    )
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<Value> {
    Ok(serde_json::to_value(v)?)
}

/// The clock `--clock` asks for: the TSC where it is usable (`auto`, `tsc`), else
/// `CLOCK_MONOTONIC`; `--clock tsc` where the TSC is not usable is an error.
fn choose_clock(choice: ClockChoice) -> Result<Clock> {
    choose_clock_with(choice, Clock::calibrate)
}

/// [`choose_clock`] with the calibration given (a test's stands in for a machine
/// without a usable TSC).
fn choose_clock_with(choice: ClockChoice, calibrate: impl FnOnce() -> Clock) -> Result<Clock> {
    if choice == ClockChoice::Monotonic {
        return Ok(Clock::monotonic());
    }
    let clock = calibrate();
    if choice == ClockChoice::Tsc && clock.source() != handoff_clock::Source::Tsc {
        return Err(Error::Unsupported(format!(
            "--clock tsc: the TSC is not usable here ({}); leave --clock out (or use --clock monotonic) to stamp with CLOCK_MONOTONIC",
            clock.calibration().fallback_reason.as_deref().unwrap_or("no reason given")
        )));
    }
    Ok(clock)
}

/// One line when the stamps do not come from the TSC: which clock, why, and what
/// that means for the figures (`None` on the TSC).
fn clock_line(clock: &Clock, env: &Env) -> Option<String> {
    let why = clock.calibration().fallback_reason.as_deref()?;
    let cost = &env.clock_read_cost_ns;
    Some(format!(
        "clock: CLOCK_MONOTONIC, not the TSC ({why}): a read costs {}, stamps resolve to {}, and two latencies closer than that are judged a tie; no per-stamp core check is made",
        fmt::dur(cost.start_ns.round() as u64),
        fmt::dur(cost.step_ns.max(1.0).round() as u64)
    ))
}

#[cfg(test)]
mod clock_tests {
    use super::*;
    use handoff_clock::Source;

    /// What calibration gives where CPUID reports no invariant TSC (the emulated
    /// machine): the monotonic fallback with its reason.
    fn no_tsc() -> Clock {
        Clock::monotonic()
    }

    #[test]
    fn without_a_usable_tsc_auto_falls_back_and_tsc_is_refused() {
        let c = choose_clock_with(ClockChoice::Auto, no_tsc).unwrap();
        assert_eq!(c.source(), Source::Monotonic);
        let e = choose_clock_with(ClockChoice::Tsc, no_tsc).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let e = e.to_string();
        assert!(
            e.starts_with("--clock tsc: the TSC is not usable here ("),
            "{e}"
        );
        assert!(e.contains("--clock monotonic"), "{e}");
        let c = choose_clock_with(ClockChoice::Monotonic, || unreachable!()).unwrap();
        assert_eq!(c.source(), Source::Monotonic);
    }

    #[test]
    fn the_fallback_is_said_in_one_line_and_the_tsc_is_not() {
        let topo = super::super::topology::Topology::two_cores();
        let clock = Clock::monotonic();
        let env = Env::capture(&topo, &clock, &Toolchain::default(), BTreeMap::new(), None);
        let line = clock_line(&clock, &env).unwrap();
        assert!(
            line.starts_with("clock: CLOCK_MONOTONIC, not the TSC ("),
            "{line}"
        );
        assert!(!line.contains('\n'));
        assert!(env.summary().contains("clock CLOCK_MONOTONIC"));
        let tsc = Clock::quick();
        if tsc.source() == Source::Tsc {
            let env = Env::capture(&topo, &tsc, &Toolchain::default(), BTreeMap::new(), None);
            assert_eq!(clock_line(&tsc, &env), None);
            assert!(env.summary().contains("TSC "));
        }
    }
}
