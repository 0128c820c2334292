//! `runner queue`'s flags and their validation against this machine.

use super::work::{self, Variant};
use super::Mode;
use crate::lab::error::{Error, Result};
use crate::lab::experiment::Setup;
use crate::lab::flags;
use crate::lab::paced;
use crate::lab::pacer;
use crate::lab::pin::Placement;
use crate::lab::topology::Topology;
use clap::Args;
use serde::Serialize;

/// `runner queue` options (every default is written here and nowhere else).
#[derive(Args, Debug, Clone)]
pub struct QueueArgs {
    /// Variants, comma-separated [default: all: handoff-spsc,handoff-spsc-slipping,handoff-stamped,rtrb,std-mutex-condvar,cpp-ring,cpp-ring-private,boost-spsc,mutex-condvar]
    #[arg(long)]
    pub variants: Option<String>,
    /// Offered rate of the headline run, items per second
    #[arg(long, default_value = "1e6", allow_hyphen_values = true, value_parser = flags::num_value)]
    pub rate: f64,
    /// Items per run
    #[arg(long, default_value = "1000000", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub items: usize,
    /// Queue capacity, items
    #[arg(long, default_value = "1024", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub capacity: usize,
    /// `--headline`, `--sweep`, `--throughput`, `--all`.
    #[command(flatten)]
    pub modes: paced::Modes,
    /// Sweep: seconds of offered load per point and run (caps --items at low rates)
    #[arg(long, default_value = "0.2", allow_hyphen_values = true, value_parser = flags::num_value)]
    pub sweep_seconds: f64,
    /// Run the bursty load too (also with --all): --burst-size items back to back,
    /// --burst-rate times a second; the per-item latency shows what a wait inside a
    /// call costs an item of a burst
    #[arg(long)]
    pub burst: bool,
    /// Bursty load: items per burst, sent back to back
    #[arg(long, default_value = "64", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub burst_size: usize,
    /// Bursty load: bursts per second
    #[arg(long, default_value = "1e4", allow_hyphen_values = true, value_parser = flags::num_value)]
    pub burst_rate: f64,
    /// Bursty load: bursts per run
    #[arg(long, default_value = "2000", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub bursts: usize,
    /// `--slices`.
    #[command(flatten)]
    pub slicing: paced::SliceFlag,
}

/// Validates `runner queue` arguments against the machine. Every error is one line.
pub fn config(a: &QueueArgs, pin: Option<&str>, topo: &Topology) -> Result<(Settings, Placement)> {
    let variants = match &a.variants {
        Some(s) => work::parse_variants(s)?,
        None => work::Variant::ALL.to_vec(),
    };
    let rate_hz = flags::rate("rate", a.rate, 1e9).map_err(|e| match e {
        Error::Usage(m) if m.contains("pacer") => {
            Error::Usage(format!("{m}; use --throughput for unpaced runs"))
        }
        e => e,
    })?;
    let items = flags::count_in("items", a.items, 1, 1 << 30, "item")?;
    let capacity = flags::count_in("capacity", a.capacity, 1, 1 << 30, "item")?;
    let sweep_seconds: f64 = a.sweep_seconds;
    if !(sweep_seconds > 0.0 && sweep_seconds.is_finite()) {
        return Err(Error::Usage(format!(
            "--sweep-seconds {}: must be above 0",
            a.sweep_seconds
        )));
    }
    let slices = a.slicing.checked()?;
    let burst_size = flags::count_in("burst-size", a.burst_size, 1, 1 << 20, "item")?;
    let burst_rate_hz = flags::rate("burst-rate", a.burst_rate, 1e8)?;
    let bursts = flags::count_in("bursts", a.bursts, 1, 1 << 20, "burst")?;
    if burst_rate_hz * burst_size as f64 > 1e9 {
        return Err(Error::Usage(format!(
            "--burst-rate {} x --burst-size {burst_size}: above 1e9 items per second, no pacer can keep that schedule",
            a.burst_rate
        )));
    }
    if bursts.saturating_mul(burst_size) > 1 << 30 {
        return Err(Error::Usage(format!(
            "--bursts {bursts} x --burst-size {burst_size}: more than 2^30 items per run"
        )));
    }
    let placement = flags::pair(pin, topo)?;
    let mut modes = a.modes.chosen(&[Mode::Headline]);
    if a.burst || a.modes.all {
        let m = &a.modes;
        if !(m.headline || m.sweep || m.throughput || m.all) {
            // `--burst` alone: the bursty load only, not the default headline.
            modes.clear();
        }
        modes.push(Mode::Burst);
    }
    Ok((
        Settings {
            variants,
            rate_hz,
            items,
            capacity,
            modes,
            sweep_seconds,
            sweep_min_items: 20_000.min(items),
            slices,
            burst_size,
            burst_rate_hz,
            bursts,
        },
        placement,
    ))
}

/// Everything `runner queue` was asked to do (after validation).
#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    /// Variants, in order.
    #[serde(serialize_with = "paced::names")]
    pub variants: Vec<Variant>,
    /// Offered rate of the headline mode.
    pub rate_hz: f64,
    /// Items per run.
    pub items: usize,
    /// Queue capacity.
    pub capacity: usize,
    /// Modes to run.
    pub modes: Vec<Mode>,
    /// Sweep: seconds of offered load per point and run (caps the items at low rates).
    pub sweep_seconds: f64,
    /// Sweep: fewest items per point and run.
    pub sweep_min_items: usize,
    /// Most slices per run.
    pub slices: usize,
    /// Bursty load: items per burst.
    pub burst_size: usize,
    /// Bursty load: bursts per second.
    pub burst_rate_hz: f64,
    /// Bursty load: bursts per run.
    pub bursts: usize,
}

/// The validated configuration: the common flags, the placement and these settings.
pub type Config = Setup<Settings>;

impl Config {
    /// The offered rates of the sweep (the document's twelve points).
    pub fn sweep_rates() -> Vec<f64> {
        pacer::log_spaced(1e5, 5e7, 12)
    }

    /// Items per run at a sweep point: `--items`, capped at `sweep_seconds` of load.
    pub fn sweep_items(&self, rate: f64) -> usize {
        let by_time = (rate * self.sweep_seconds) as usize;
        self.items.min(by_time.max(self.sweep_min_items))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::queue::Queue;
    use crate::lab::experiment::{assert_refused, configure_from};

    fn topo() -> Topology {
        Topology::two_cores()
    }

    fn config_of(args: &[&str]) -> Result<super::super::Config> {
        configure_from::<Queue>(args, &topo())
    }

    #[test]
    fn defaults_follow_the_document() {
        let c = config_of(&[]).unwrap();
        assert_eq!(c.variants, work::Variant::ALL.to_vec());
        assert_eq!(
            (c.rate_hz, c.items, c.run.runs, c.capacity),
            (1e6, 1_000_000, 5, 1024)
        );
        assert_eq!(c.modes, vec![Mode::Headline]);
        assert_eq!(c.placement.threads(), vec![0, 1]);
        assert_eq!(c.placement.control(), None);
        assert_eq!(
            config_of(&["--all"]).unwrap().modes,
            vec![Mode::Headline, Mode::Sweep, Mode::Throughput, Mode::Burst]
        );
        assert_eq!(config_of(&["--burst"]).unwrap().modes, vec![Mode::Burst]);
        assert_eq!(
            config_of(&["--headline", "--burst"]).unwrap().modes,
            vec![Mode::Headline, Mode::Burst]
        );
        let c = config_of(&["--burst"]).unwrap();
        assert_eq!((c.burst_size, c.burst_rate_hz, c.bursts), (64, 1e4, 2000));
        let c = config_of(&[
            "--burst-size",
            "256",
            "--burst-rate",
            "2e3",
            "--bursts",
            "10",
        ])
        .unwrap();
        assert_eq!((c.burst_size, c.burst_rate_hz, c.bursts), (256, 2e3, 10));
        assert_eq!(
            config_of(&["--throughput"]).unwrap().modes,
            vec![Mode::Throughput]
        );
        assert_eq!(config_of(&["--items", "1e5"]).unwrap().items, 100_000);
        assert_eq!(config_of(&["--rate", "2.5e6"]).unwrap().rate_hz, 2.5e6);
    }

    #[test]
    fn bad_input_is_refused_with_one_line() {
        assert_refused::<Queue>(
            &topo(),
            &[
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
                (&["--rate", "2e9"], "use --throughput"),
                (&["--items", "0"], "at least 1 item"),
                (&["--items", "1.5"], "whole number"),
                (&["--runs", "0"], "at least 1 run"),
                (&["--capacity", "0"], "at least 1 item"),
                (&["--variants", "foo"], "unknown variant \"foo\""),
                (&["--variants", "rtrb,rtrb"], "named twice"),
                (&["--sweep-seconds", "0"], "above 0"),
                (&["--slices", "0"], "at least 1 slice"),
                (&["--burst-size", "0"], "at least 1 item"),
                (&["--burst-rate", "0"], "above 0"),
                (&["--bursts", "0"], "at least 1 burst"),
                (
                    &["--burst-rate", "1e7", "--burst-size", "1000"],
                    "above 1e9 items per second",
                ),
                (&["--noise-seconds", "61"], "0 (no probe) to 60"),
                (&["--out", "/proc/x"], "--out /proc/x: cannot create files"),
            ],
        );
    }

    #[test]
    fn sweep_items_are_capped_by_time_and_floored() {
        let c = config_of(&["--sweep-seconds", "0.2"]).unwrap();
        assert_eq!(c.sweep_items(1e5), 20_000);
        assert_eq!(c.sweep_items(1e6), 200_000);
        assert_eq!(c.sweep_items(5e7), 1_000_000);
        let c = config_of(&["--items", "500", "--sweep-seconds", "0.001"]).unwrap();
        assert_eq!(c.sweep_items(1e5), 500);
    }

    #[test]
    fn slices_default_to_50_and_can_be_turned_off() {
        assert_eq!(config_of(&[]).unwrap().slices, 50);
        assert_eq!(config_of(&["--slices", "1"]).unwrap().slices, 1);
    }
}
