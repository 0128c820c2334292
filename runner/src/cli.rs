//! The command line: `runner queue ...` and `runner all`. Bad input gets one line on
//! stderr and exit status 2, before anything is measured or written.

use crate::lab::env::Env;
use crate::lab::noise;
use crate::lab::pin;
use crate::lab::results::Outputs;
use crate::lab::stop;
use crate::lab::topology::{format_cpu_list, Topology};
use crate::queue::{self, variants, Config, Mode};
use clap::{Args, Parser, Subcommand};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

/// The handoff lab: reproduces the source documents' experiments on pinned threads
/// and prints the documents' numbers beside this machine's.
#[derive(Parser, Debug)]
#[command(name = "runner", version, about)]
pub struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// SPSC queue document: lock-free rings vs Boost vs mutex+condvar.
    Queue(QueueArgs),
    /// Every experiment with its defaults (today: queue, all modes).
    All {
        /// Output directory.
        #[arg(long, default_value = "handoff-results")]
        out: PathBuf,
    },
}

/// `runner queue` options.
#[derive(Args, Debug, Clone)]
pub struct QueueArgs {
    /// Variants, comma-separated [default: all: handoff-spsc,rtrb,std-mutex-condvar,cpp-ring,boost-spsc,mutex-condvar]
    #[arg(long)]
    variants: Option<String>,
    /// Cores: producer,consumer[,control thread] [default: adapted to this machine]
    #[arg(long)]
    pin: Option<String>,
    /// Offered rate of the headline run, items per second
    #[arg(long, default_value = "1e6", allow_hyphen_values = true)]
    rate: String,
    /// Items per run
    #[arg(long, default_value = "1000000", allow_hyphen_values = true)]
    items: String,
    /// Outer runs (histograms are merged over them)
    #[arg(long, default_value = "5", allow_hyphen_values = true)]
    runs: String,
    /// Queue capacity, items
    #[arg(long, default_value = "1024", allow_hyphen_values = true)]
    capacity: String,
    /// Output directory for the JSON and SVG files
    #[arg(long, default_value = "handoff-results")]
    out: PathBuf,
    /// Run the paced headline measurement (the default when no mode is named)
    #[arg(long)]
    headline: bool,
    /// Run the load sweep: twelve offered rates from 100 kHz to 50 MHz
    #[arg(long)]
    sweep: bool,
    /// Run unpaced (saturated) throughput
    #[arg(long)]
    throughput: bool,
    /// Run all three modes
    #[arg(long)]
    all: bool,
    /// Sweep: seconds of offered load per point and run (caps --items at low rates)
    #[arg(long, default_value = "0.2", allow_hyphen_values = true)]
    sweep_seconds: String,
    /// Seconds to spin on the producer's and the consumer's cores, before and after the
    /// runs, measuring what interrupts them (0: skip)
    #[arg(long, default_value = "1", allow_hyphen_values = true)]
    noise_seconds: String,
}

fn parse_num<T: std::str::FromStr>(flag: &str, s: &str) -> Result<T, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("--{flag} {s}: not a number"))
}

/// A whole count that may be written `1e6` or `1_000_000`.
fn parse_count(flag: &str, s: &str) -> Result<usize, String> {
    let clean = s.trim().replace('_', "");
    if let Ok(n) = clean.parse::<usize>() {
        return Ok(n);
    }
    let f: f64 = parse_num(flag, &clean)?;
    if f.fract() != 0.0 || f < 0.0 || !f.is_finite() || f > usize::MAX as f64 {
        return Err(format!("--{flag} {s}: not a whole number"));
    }
    Ok(f as usize)
}

/// Validates `runner queue` arguments against the machine. Every error is one line.
pub fn queue_config(a: &QueueArgs, topo: &Topology) -> Result<(Config, Option<String>), String> {
    let variants = match &a.variants {
        Some(s) => variants::parse_variants(s)?,
        None => variants::Variant::ALL.to_vec(),
    };
    let rate: f64 = parse_num("rate", &a.rate)?;
    if !(rate > 0.0 && rate.is_finite()) {
        return Err(format!(
            "--rate {}: the offered rate must be above 0 items/s",
            a.rate
        ));
    }
    if rate > 1e9 {
        return Err(format!("--rate {}: above 1e9 items/s, no pacer can keep that schedule; use --throughput for unpaced runs", a.rate));
    }
    let items = parse_count("items", &a.items)?;
    if items == 0 {
        return Err("--items 0: a run needs at least 1 item".into());
    }
    if items > 1 << 30 {
        return Err(format!(
            "--items {}: at most 2^30 items per run (16 bytes of stamps each)",
            a.items
        ));
    }
    let runs = parse_count("runs", &a.runs)?;
    if runs == 0 {
        return Err("--runs 0: at least 1 run is needed".into());
    }
    let capacity = parse_count("capacity", &a.capacity)?;
    if capacity == 0 {
        return Err("--capacity 0: a queue must hold at least 1 item".into());
    }
    if capacity > 1 << 30 {
        return Err(format!("--capacity {}: at most 2^30 items", a.capacity));
    }
    let sweep_seconds: f64 = parse_num("sweep-seconds", &a.sweep_seconds)?;
    if !(sweep_seconds > 0.0 && sweep_seconds.is_finite()) {
        return Err(format!(
            "--sweep-seconds {}: must be above 0",
            a.sweep_seconds
        ));
    }
    let noise_seconds: f64 = parse_num("noise-seconds", &a.noise_seconds)?;
    if !(0.0..=60.0).contains(&noise_seconds) {
        return Err(format!(
            "--noise-seconds {}: give 0 (no probe) to 60 seconds",
            a.noise_seconds
        ));
    }
    if a.out.exists() && !a.out.is_dir() {
        return Err(format!(
            "--out {}: exists and is not a directory",
            a.out.display()
        ));
    }
    let (pins, note) = match &a.pin {
        Some(s) => {
            let pins = pin::parse_pins(s)?;
            pin::validate(&pins, &["producer", "consumer"], 3, topo)?;
            (pins, None)
        }
        None => pin::default_pins(2, topo)?,
    };
    let mut modes = Vec::new();
    if a.headline || a.all || !(a.sweep || a.throughput) {
        modes.push(Mode::Headline);
    }
    if a.sweep || a.all {
        modes.push(Mode::Sweep);
    }
    if a.throughput || a.all {
        modes.push(Mode::Throughput);
    }
    Ok((
        Config {
            variants,
            pins,
            rate_hz: rate,
            items,
            runs,
            capacity,
            out: a.out.clone(),
            modes,
            sweep_seconds,
            sweep_min_items: 20_000.min(items),
            noise_seconds,
        },
        note,
    ))
}

/// Entry point: parses, validates, runs, reports. Exit 0 on success, 1 on a failed
/// run, 2 on bad input, 130 after Ctrl-C.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                    ExitCode::from(2)
                } else {
                    ExitCode::SUCCESS
                };
            }
            let text = e.to_string();
            let line = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("bad arguments");
            eprintln!("runner: {}", line.trim_start_matches("error: "));
            return ExitCode::from(2);
        }
    };
    let args = match cli.cmd {
        Cmd::Queue(a) => a,
        Cmd::All { out } => QueueArgs {
            variants: None,
            pin: None,
            rate: "1e6".into(),
            items: "1000000".into(),
            runs: "5".into(),
            capacity: "1024".into(),
            out,
            headline: false,
            sweep: false,
            throughput: false,
            all: true,
            sweep_seconds: "0.2".into(),
            noise_seconds: "1".into(),
        },
    };
    if !cfg!(target_arch = "x86_64") {
        eprintln!("runner: the lab stamps with rdtscp and needs an x86_64 CPU");
        return ExitCode::from(2);
    }
    let topo = Topology::read();
    let (cfg, note) = match queue_config(&args, &topo) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("runner: {e}");
            return ExitCode::from(2);
        }
    };
    match run_queue(&cfg, note, &topo) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("runner: {e}");
            ExitCode::from(1)
        }
    }
}

fn run_queue(cfg: &Config, note: Option<String>, topo: &Topology) -> Result<ExitCode, String> {
    stop::install();
    let started = crate::now_rfc3339();
    if let Some(c) = cfg.pins.get(2) {
        pin::pin_current(*c)?;
    }
    let clock = handoff_clock::Clock::calibrate();
    if clock.source() != handoff_clock::Source::Tsc {
        return Err(format!(
            "the TSC is not usable here ({}); the queue experiment needs it",
            clock
                .calibration()
                .fallback_reason
                .clone()
                .unwrap_or_default()
        ));
    }
    let mut pins = BTreeMap::new();
    pins.insert("producer".to_string(), Some(cfg.pins[0]));
    pins.insert("consumer".to_string(), Some(cfg.pins[1]));
    pins.insert("control".to_string(), cfg.pins.get(2).copied());
    let mut env = Env::capture(topo, &clock, pins, note.clone());
    println!("queue (seeds/002): {}", env.summary());
    println!(
        "pins: producer {}, consumer {}, control {}{}",
        cfg.pins[0],
        cfg.pins[1],
        cfg.pins
            .get(2)
            .map(|c| c.to_string())
            .unwrap_or_else(|| "unpinned".into()),
        match topo.share_l3(cfg.pins[0], cfg.pins[1]) {
            Some(true) => " (producer and consumer share an L3)",
            Some(false) => " (producer and consumer on different L3s)",
            None => "",
        }
    );
    if let Some(n) = &note {
        println!("note: {n}");
    }
    let probe_cores = &cfg.pins[..2];
    let mut probes = noise::Probes::default();
    if cfg.noise_seconds > 0.0 {
        println!(
            "noise: spinning {} s on cores {} (gaps of {} or more)...",
            cfg.noise_seconds,
            format_cpu_list(probe_cores),
            noise::dur(noise::THRESHOLD_NS)
        );
        let before = noise::probe(probe_cores, cfg.noise_seconds, &clock)?;
        probes.before = Some(before);
        for l in probes.lines() {
            println!("noise {l}");
        }
    }
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:30} {pos}/{len} runs  {elapsed} (eta {eta})  {msg}",
        )
        .map_err(|e| e.to_string())?,
    );
    let outcome = queue::execute(cfg, &clock, &bar);
    bar.finish_and_clear();
    let outcome = outcome?;
    if cfg.noise_seconds > 0.0 && !outcome.interrupted {
        probes.after = Some(noise::probe(probe_cores, cfg.noise_seconds, &clock)?);
    }
    if outcome.interrupted || stop::requested() {
        eprintln!("runner: interrupted; nothing was written");
        return Ok(ExitCode::from(130));
    }
    if cfg.noise_seconds > 0.0 {
        env.noise = Some(probes);
    }
    let mut report = format!("queue (seeds/002): {}\n", env.summary());
    if let Some(p) = &env.noise {
        report.push_str(&format!(
            "\nnoise: what interrupts a thread spinning on each pinned core ({} s, gaps of {} or more); a floor is the latency those gaps alone impose on items handed from the producer's core to the consumer's\n",
            cfg.noise_seconds,
            noise::dur(noise::THRESHOLD_NS)
        ));
        for l in p.lines() {
            report.push_str(&format!("  {l}\n"));
        }
    }
    for &mode in &cfg.modes {
        report.push('\n');
        report.push_str(&match mode {
            Mode::Headline => queue::report::table(
                &format!(
                    "headline: paced at {}, {} runs x {} items, capacity {}, latency = producer stamp before push -> consumer stamp after pop",
                    queue::report::fmt_rate(cfg.rate_hz), cfg.runs, cfg.items, cfg.capacity
                ),
                outcome.of(Mode::Headline),
            ),
            Mode::Sweep => queue::report::sweep_table(&outcome, cfg),
            Mode::Throughput => queue::report::table(
                &format!("throughput: unpaced, {} runs x {} items, capacity {} (medians of runs)", cfg.runs, cfg.items, cfg.capacity),
                outcome.of(Mode::Throughput),
            ),
        });
    }
    let claims = queue::claims::claims(&outcome, cfg, env.noise.as_ref());
    report.push('\n');
    report.push_str(&queue::report::claims_table(&claims));
    // The first line was printed before the runs.
    print!(
        "{}",
        report.split_once('\n').map(|(_, rest)| rest).unwrap_or("")
    );
    let json = queue::report::results_json(&outcome, cfg, &env, &started, &claims);
    let mut files = Outputs::new();
    queue::report::outputs(&outcome, cfg, &json, &mut files)?;
    files.add(cfg.out.join("queue.txt"), report.into_bytes());
    if stop::requested() {
        eprintln!("runner: interrupted; nothing was written");
        return Ok(ExitCode::from(130));
    }
    let written = files
        .commit()
        .map_err(|e| format!("writing results: {e}"))?;
    println!();
    for p in written {
        println!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo() -> Topology {
        Topology {
            online: vec![0, 1],
            allowed: vec![0, 1],
            l3_groups: vec![vec![0, 1]],
        }
    }

    fn config(args: &[&str]) -> Result<Config, String> {
        let mut argv = vec!["runner", "queue"];
        argv.extend_from_slice(args);
        let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
        match cli.cmd {
            Cmd::Queue(a) => queue_config(&a, &topo()).map(|(c, _)| c),
            Cmd::All { .. } => unreachable!(),
        }
    }

    #[test]
    fn defaults_follow_the_document() {
        let c = config(&[]).unwrap();
        assert_eq!(c.variants, variants::Variant::ALL.to_vec());
        assert_eq!(
            (c.rate_hz, c.items, c.runs, c.capacity),
            (1e6, 1_000_000, 5, 1024)
        );
        assert_eq!(c.modes, vec![Mode::Headline]);
        assert_eq!(c.pins, vec![0, 1]);
        assert_eq!(
            config(&["--all"]).unwrap().modes,
            vec![Mode::Headline, Mode::Sweep, Mode::Throughput]
        );
        assert_eq!(
            config(&["--throughput"]).unwrap().modes,
            vec![Mode::Throughput]
        );
        assert_eq!(config(&["--items", "1e5"]).unwrap().items, 100_000);
        assert_eq!(config(&["--rate", "2.5e6"]).unwrap().rate_hz, 2.5e6);
    }

    #[test]
    fn bad_input_is_refused_with_one_line() {
        for (args, needle) in [
            (
                &["--pin", "4,5,6"][..],
                "cores 4, 5 and 6 are not available; this process may run on cores 0-1",
            ),
            (&["--pin", "0,0"], "named twice"),
            (&["--pin", "a,1"], "not a CPU number"),
            (&["--pin", "0"], "expected 2 to 3 cores"),
            (&["--rate", "0"], "above 0"),
            (&["--rate", "-3"], "above 0"),
            (&["--rate", "fast"], "not a number"),
            (&["--rate", "inf"], "above 0"),
            (&["--items", "0"], "at least 1 item"),
            (&["--items", "1.5"], "whole number"),
            (&["--runs", "0"], "at least 1 run"),
            (&["--capacity", "0"], "at least 1 item"),
            (&["--variants", "foo"], "unknown variant \"foo\""),
            (&["--variants", "rtrb,rtrb"], "named twice"),
            (&["--sweep-seconds", "0"], "above 0"),
        ] {
            let e = config(args).unwrap_err();
            assert!(e.contains(needle), "{args:?}: {e}");
            assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        }
    }

    #[test]
    fn sweep_items_are_capped_by_time_and_floored() {
        let c = config(&["--sweep-seconds", "0.2"]).unwrap();
        assert_eq!(c.sweep_items(1e5), 20_000);
        assert_eq!(c.sweep_items(1e6), 200_000);
        assert_eq!(c.sweep_items(5e7), 1_000_000);
        let c = config(&["--items", "500", "--sweep-seconds", "0.001"]).unwrap();
        assert_eq!(c.sweep_items(1e5), 500);
    }
}
