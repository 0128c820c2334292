//! `runner pipeline`'s flags and their validation against this machine.

use super::work::{self, Variant};
use super::Mode;
use crate::lab::error::{Error, Result};
use crate::lab::experiment::Setup;
use crate::lab::flags;
use crate::lab::paced;
use crate::lab::pacer;
use crate::lab::pin::{self, Placement};
use crate::lab::topology::{format_cpu_list, Topology};
use clap::Args;
use serde::Serialize;

/// `runner pipeline` options (every default is written here and nowhere else).
#[derive(Args, Debug, Clone)]
pub struct PipelineArgs {
    /// Variants, comma-separated [default: all: malloc,freelist-return-queue,arena-batch-handoff,mimalloc]
    #[arg(long)]
    pub variants: Option<String>,
    /// Put the producer and the consumer on different L3 groups (the document's cross-CCX side note)
    #[arg(long)]
    pub cross_l3: bool,
    /// Offered order rate of the headline and the sweep, orders per second
    #[arg(long, default_value = "1e6", allow_hyphen_values = true, value_parser = flags::num_value)]
    pub rate: f64,
    /// Orders per run
    #[arg(long, default_value = "1000000", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub items: usize,
    /// Forward ring capacity, orders
    #[arg(long, default_value = "1024", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub capacity: usize,
    /// Weight of the consumer's risk check, calibrated on the consumer's core, ns
    #[arg(long, default_value = "200", allow_hyphen_values = true, value_parser = flags::num_value)]
    pub work_ns: f64,
    /// Background heap operations per second, per background thread
    #[arg(long, default_value = "1e6", allow_hyphen_values = true, value_parser = flags::num_value)]
    pub bg_rate: f64,
    /// Background heap threads (0: none)
    #[arg(long, default_value = "1", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub bg_threads: usize,
    /// `--headline`, `--sweep`, `--throughput`, `--all`.
    #[command(flatten)]
    pub modes: paced::Modes,
    /// `--slices`.
    #[command(flatten)]
    pub slicing: paced::SliceFlag,
}

/// Validates `runner pipeline` arguments against the machine. Every error is one line.
pub fn config(
    a: &PipelineArgs,
    pin: Option<&str>,
    topo: &Topology,
) -> Result<(Settings, Placement)> {
    let variants = match &a.variants {
        Some(s) => work::parse_variants(s)?,
        None => Variant::ALL.to_vec(),
    };
    let rate_hz = flags::rate("rate", a.rate, 1e8)?;
    let items = flags::count_in("items", a.items, 1, 1 << 28, "order")?;
    let capacity = flags::count_in("capacity", a.capacity, 1, 1 << 24, "order")?;
    let work_ns: f64 = a.work_ns;
    if !(0.0..=100_000.0).contains(&work_ns) {
        return Err(Error::Usage(format!(
            "--work-ns {}: give 0 to 100000 ns",
            a.work_ns
        )));
    }
    let bg_rate_hz = flags::rate("bg-rate", a.bg_rate, 1e8)?;
    let bg_threads = flags::count_in("bg-threads", a.bg_threads, 0, 64, "thread")?;
    let slices = a.slicing.checked()?;
    let modes = a
        .modes
        .chosen(&[Mode::Headline, Mode::Sweep, Mode::Throughput]);
    let bg_needed = bg_threads.max(usize::from(modes.contains(&Mode::Sweep)));
    let Seats {
        cores,
        bg_shares_core,
        note,
        control,
    } = placement(a, pin, bg_needed, topo)?;
    let mut placement = cores[2..].iter().fold(
        Placement::pair(cores[0], cores[1])
            .with_control(control)
            .noted_all(note),
        |p, &b| p.with("background", b),
    );
    // The document's cross-CCX side note, beside the headline where the machine has a
    // second L3 group and the placement was not given.
    let cross_consumer = if pin.is_none() && !a.cross_l3 && modes.contains(&Mode::Headline) {
        cross_consumer(&[&cores[..], control.as_slice()].concat(), topo)
    } else {
        None
    };
    if let Some(c) = cross_consumer {
        placement = placement
            .with(CROSS_CONSUMER, c)
            .noted(format!(
                "the headline runs a second time with the consumer on core {c}, in another L3 group than the producer and the background thread (the document's cross-CCX side note)"
            ));
    }
    // A background thread on a measured core measures that sharing, not the
    // allocators: where the placement has to share, the headline and the throughput
    // run without it, and only the sweep (labelled) keeps it.
    let headline_bg_threads = if bg_shares_core { 0 } else { bg_threads };
    if headline_bg_threads < bg_threads {
        placement = placement.noted(
            "the headline and the throughput therefore run without the background thread (on a measured core it would measure the sharing, not the allocators); the sweep keeps it, on the producer's core, and says so",
        );
    }
    Ok((
        Settings {
            variants,
            bg_shares_core,
            cross_l3: a.cross_l3,
            cross_consumer,
            l3_groups: topo
                .l3_groups
                .iter()
                .filter(|g| g.iter().any(|c| topo.allowed.contains(c)))
                .count(),
            rate_hz,
            items,
            capacity,
            work_ns,
            bg_rate_hz,
            bg_threads,
            headline_bg_threads,
            modes,
            slices,
        },
        placement,
    ))
}

/// What [`placement`] chose.
struct Seats {
    /// Producer, consumer, then one per background thread.
    cores: Vec<usize>,
    /// A background thread shares a measured core.
    bg_shares_core: bool,
    /// What the placement had to do, if anything.
    note: Option<String>,
    /// The control thread's core, where one was left.
    control: Option<usize>,
}

/// The role of the cross-L3 headline's consumer in the placement.
pub const CROSS_CONSUMER: &str = "cross-l3 consumer";

/// A core for the cross-L3 headline's consumer: an allowed core in another L3 group
/// than the producer's (`cores[0]`), none of `cores`, core 0 last; `None` where
/// the allowed cores form one L3 group.
fn cross_consumer(cores: &[usize], topo: &Topology) -> Option<usize> {
    let producer = cores[0];
    let mut candidates: Vec<usize> = topo
        .l3_groups
        .iter()
        .filter(|g| !g.contains(&producer))
        .flat_map(|g| g.iter().copied())
        .filter(|c| topo.allowed.contains(c) && !cores.contains(c))
        .collect();
    // Lowest group first, lowest core first, core 0 (most interrupts) last.
    candidates.sort_by_key(|&c| {
        (
            c == 0,
            topo.l3_groups.iter().position(|g| g.contains(&c)),
            c,
        )
    });
    candidates.first().copied()
}

/// The cores: producer, consumer, then one per background thread (cycled from the
/// background cores given); whether a background thread shares a measured core; the
/// note; and the control thread's core where the default placement left one.
fn placement(
    a: &PipelineArgs,
    given: Option<&str>,
    bg_threads: usize,
    topo: &Topology,
) -> Result<Seats> {
    let roles = ["producer", "consumer", "background"];
    if let Some(s) = given {
        if a.cross_l3 {
            return Err(Error::Usage(
                "--pin and --cross-l3: give one or the other".into(),
            ));
        }
        let pins = pin::parse_pins(s)?;
        if pins.len() < 3 {
            return Err(Error::Usage(format!(
                "--pin {s}: expected producer,consumer,background cores"
            )));
        }
        // The producer and the consumer need cores of their own; background threads
        // may share (the run says so).
        pin::validate(&pins[..2], &roles[..2], 2, topo)?;
        for &b in &pins[2..] {
            pin::validate(&[b], &["background"], 1, topo)?;
        }
        let shares = pins[2..].iter().any(|b| pins[..2].contains(b));
        let mut cores = pins[..2].to_vec();
        cores.extend((0..bg_threads).map(|i| pins[2 + i % (pins.len() - 2)]));
        let note = shares.then(|| {
            "a background thread shares a measured core (as asked); it works in bursts and sleeps between them".to_string()
        });
        return Ok(Seats {
            cores,
            bg_shares_core: shares,
            note,
            control: None,
        });
    }
    if a.cross_l3 {
        let groups: Vec<Vec<usize>> = topo
            .l3_groups
            .iter()
            .map(|g| {
                g.iter()
                    .copied()
                    .filter(|c| topo.allowed.contains(c))
                    .collect::<Vec<_>>()
            })
            .filter(|g| !g.is_empty())
            .collect();
        if groups.len() < 2 {
            return Err(Error::Unsupported(format!(
                "--cross-l3: not available here: the allowed cores ({}) share one L3 cache",
                format_cpu_list(&topo.allowed)
            )));
        }
        // The document's side note: producer and background on one L3 group, the
        // consumer on another.
        let (pg, cg) = (&groups[0], &groups[1]);
        let producer = pg[pg.len().min(2) - 1];
        let consumer = cg[cg.len().min(2) - 1];
        let spare: Vec<usize> = pg.iter().copied().filter(|&c| c != producer).collect();
        let shares = spare.is_empty();
        let bg: Vec<usize> = (0..bg_threads)
            .map(|i| {
                if shares {
                    producer
                } else {
                    spare[i % spare.len()]
                }
            })
            .collect();
        let mut cores = vec![producer, consumer];
        cores.extend(bg);
        let note = Some(format!(
            "--cross-l3: producer on core {producer}, consumer on core {consumer} (another L3 group){}",
            if shares { "; background threads share the producer's core" } else { "" }
        ));
        return Ok(Seats {
            cores,
            bg_shares_core: shares,
            note,
            control: None,
        });
    }
    if bg_threads > 0 && topo.allowed.len() >= 3 {
        let (mut cores, note) = pin::default_pins(3, topo)?;
        // The control thread's core, where one was left.
        let control = cores.get(3).copied();
        let bg = cores[2];
        cores.truncate(2);
        cores.extend(std::iter::repeat_n(bg, bg_threads));
        return Ok(Seats {
            cores,
            bg_shares_core: false,
            note,
            control,
        });
    }
    let (mut cores, _) = pin::default_pins(2, topo)?;
    cores.truncate(2);
    let producer = cores[0];
    cores.extend(std::iter::repeat_n(producer, bg_threads));
    let note = (bg_threads > 0).then(|| {
        format!(
            "{} cores: producer on core {}, consumer on core {}, and the background heap \
             thread shares the producer's core (least harmful: a stall there delays a send, \
             whose latency clock starts after it; on the consumer's core it would hold up \
             every queued order). It works in bursts and sleeps between them.",
            topo.allowed.len(),
            cores[0],
            cores[1]
        )
    });
    Ok(Seats {
        cores,
        bg_shares_core: bg_threads > 0,
        note,
        control: None,
    })
}

/// Everything `runner pipeline` was asked to do (after validation).
#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    /// Variants, in order.
    #[serde(serialize_with = "paced::names")]
    pub variants: Vec<Variant>,
    /// A background thread shares a measured core.
    pub bg_shares_core: bool,
    /// Producer and consumer were placed on different L3 groups (`--cross-l3`).
    pub cross_l3: bool,
    /// Where the machine has a second L3 group and the cores were not given: the
    /// consumer's core of the second, cross-L3 headline run beside the same-L3 one.
    pub cross_consumer: Option<usize>,
    /// L3 groups among the allowed cores (the cross-L3 claims need two).
    pub l3_groups: usize,
    /// Offered order rate (headline and sweep).
    pub rate_hz: f64,
    /// Orders per run.
    pub items: usize,
    /// Forward ring capacity.
    pub capacity: usize,
    /// Target weight of the risk check (ns).
    pub work_ns: f64,
    /// Background operations per second per thread (headline and throughput).
    pub bg_rate_hz: f64,
    /// Background threads asked for (`--bg-threads`).
    pub bg_threads: usize,
    /// Background threads of the headline and the throughput: `--bg-threads`, or 0
    /// where the placement puts them on a measured core.
    pub headline_bg_threads: usize,
    /// Modes to run.
    pub modes: Vec<Mode>,
    /// Most slices per run (`--slices`).
    pub slices: usize,
}

/// The validated configuration: the common flags, the placement and these settings.
pub type Config = Setup<Settings>;

impl Config {
    /// The cores of `n` background threads: the background cores, cycled.
    pub fn background_cores(&self, n: usize) -> Vec<usize> {
        let bg = self.placement.cores_of("background");
        (0..n).map(|i| bg[i % bg.len()]).collect()
    }

    /// The sweep's background rates: none, then eight log-spaced from 100 k/s to 10 M/s.
    pub fn sweep_points() -> Vec<Option<f64>> {
        std::iter::once(None)
            .chain(pacer::log_spaced(1e5, 1e7, 8).into_iter().map(Some))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::pipeline::Pipeline;
    use crate::lab::experiment::{assert_refused, configure_from};

    fn two() -> Topology {
        Topology::two_cores()
    }

    fn sixteen() -> Topology {
        Topology {
            online: (0..16).collect(),
            allowed: (0..16).collect(),
            l3_groups: vec![(0..8).collect(), (8..16).collect()],
            nodes: vec![],
        }
    }

    fn config_of(args: &[&str], topo: &Topology) -> Result<(super::super::Config, Option<String>)> {
        configure_from::<Pipeline>(args, topo).map(|c| {
            let note = c.placement.note();
            (c, note)
        })
    }

    #[test]
    fn cross_l3_places_the_consumer_in_another_l3_group_on_saved_servers() {
        for name in ["xeon-2s", "epyc-nps4", "many-core"] {
            let t = Topology::fixture(name);
            let (c, note) = config_of(&["--cross-l3"], &t).unwrap();
            let (p, q) = (c.placement.producer(), c.placement.consumer());
            assert_eq!(t.share_l3(p, q), Some(false), "{name}: {p} and {q}");
            // The background thread: on the producer's L3 group, on a core of its own.
            let bg = c.placement.cores_of("background");
            assert!(!bg.is_empty(), "{name}");
            assert!(
                bg.iter()
                    .all(|&b| b != p && b != q && t.share_l3(p, b) == Some(true)),
                "{name}: {bg:?}"
            );
            assert!(note.unwrap().contains("--cross-l3"), "{name}");
            // Without it: producer, consumer and background on three cores of one group,
            // and the headline again with the consumer in another group.
            let (c, _) = config_of(&[], &t).unwrap();
            let (p, q) = (c.placement.producer(), c.placement.consumer());
            let bg = c.placement.cores_of("background");
            assert_eq!(t.share_l3(p, q), Some(true), "{name}");
            assert!(
                bg.iter().all(|&b| b != p && b != q),
                "{name}: background on its own core"
            );
            let cross = c.cross_consumer.unwrap();
            assert_eq!(t.share_l3(p, cross), Some(false), "{name}: {p} and {cross}");
            assert!(![p, q].contains(&cross) && !bg.contains(&cross), "{name}");
            // The control thread on a core of its own too.
            let control = c.placement.control().unwrap();
            assert!(
                ![p, q, cross].contains(&control) && !bg.contains(&control),
                "{name}"
            );
        }
    }

    #[test]
    fn cross_l3_claims_say_what_they_need() {
        use crate::experiments::pipeline::{cross_l3, Outcome};
        use crate::lab::claims::Verdict;
        let verdicts = |args: &[&str], topo: &Topology| -> Vec<(&'static str, Verdict)> {
            let (c, _) = config_of(args, topo).unwrap();
            cross_l3::claims(&Outcome::default(), &c, (None, None))
                .into_iter()
                .map(|x| (x.id, x.verdict))
                .collect()
        };
        // One L3 group: cannot be measured on this machine at all.
        let one = verdicts(&[], &two());
        assert_eq!(one.len(), 4);
        assert!(one.iter().all(|(_, v)| *v == Verdict::NotMeasurableHere));
        // Two groups, not asked for: not measured (the machine could).
        let (c, _) = config_of(&[], &sixteen()).unwrap();
        assert_eq!((c.l3_groups, c.cross_l3), (2, false));
        assert!(verdicts(&[], &sixteen())
            .iter()
            .all(|(_, v)| *v == Verdict::NotMeasured));
        // Asked for, but nothing ran: never a verdict without figures.
        assert!(verdicts(&["--cross-l3"], &sixteen())
            .iter()
            .all(|(_, v)| *v == Verdict::NotMeasured));
    }

    #[test]
    fn defaults_follow_the_document_and_adapt_to_two_cores() {
        let (c, note) = config_of(&[], &two()).unwrap();
        assert_eq!(c.variants, Variant::ALL.to_vec());
        assert_eq!(
            (c.rate_hz, c.items, c.run.runs, c.capacity),
            (1e6, 1_000_000, 5, 1024)
        );
        assert_eq!((c.work_ns, c.bg_rate_hz, c.bg_threads), (200.0, 1e6, 1));
        assert_eq!(c.modes, vec![Mode::Headline, Mode::Sweep, Mode::Throughput]);
        assert_eq!(c.slices, 50);
        assert_eq!(c.placement.threads(), vec![0, 1, 0]);
        assert!(c.bg_shares_core);
        // On two cores the headline runs without the background thread, and says so.
        assert_eq!(c.headline_bg_threads, 0);
        let note = note.unwrap();
        assert!(note.contains("shares the producer's core"), "{note}");
        assert!(note.contains("run without the background thread"), "{note}");
        assert_eq!(c.cross_consumer, None, "one L3 group: no cross-L3 headline");
        let (c, note) = config_of(&["--headline"], &sixteen()).unwrap();
        assert_eq!(c.modes, vec![Mode::Headline]);
        assert!(!c.bg_shares_core);
        assert_eq!(c.headline_bg_threads, 1);
        // Producer, consumer, background, then the cross-L3 headline's consumer in the
        // other L3 group, none on core 0.
        assert_eq!(c.placement.threads().len(), 4);
        assert!(c.placement.threads().iter().all(|&p| p != 0));
        let cross = c.cross_consumer.unwrap();
        assert_eq!(c.placement.cores_of(CROSS_CONSUMER), vec![cross]);
        assert_eq!(
            sixteen().share_l3(c.placement.producer(), cross),
            Some(false)
        );
        assert!(note.unwrap().contains(&format!("consumer on core {cross}")));
        // Given cores, or no headline: no cross-L3 part.
        let (c, _) = config_of(&["--pin", "1,2,3"], &sixteen()).unwrap();
        assert_eq!(c.cross_consumer, None);
        let (c, _) = config_of(&["--sweep"], &sixteen()).unwrap();
        assert_eq!(c.cross_consumer, None);
        let (c, note) = config_of(&["--cross-l3"], &sixteen()).unwrap();
        assert_eq!(
            c.cross_consumer, None,
            "--cross-l3 runs across L3 groups only"
        );
        assert_ne!(
            sixteen().share_l3(c.placement.producer(), c.placement.consumer()),
            Some(true),
            "{note:?}"
        );
        assert_eq!(
            sixteen().share_l3(
                c.placement.producer(),
                c.placement.cores_of("background")[0]
            ),
            Some(true)
        );
    }

    #[test]
    fn bad_input_is_refused_with_one_line() {
        assert_refused::<Pipeline>(
            &two(),
            &[
                (&["--pin", "4,5,6"][..], "cores 4 and 5 are not available"),
                (&["--pin", "0,1"], "expected producer,consumer,background"),
                (&["--pin", "0,0,1"], "named twice"),
                (&["--pin", "0,1,7"], "core 7 is not available"),
                (&["--rate", "0"], "above 0"),
                (&["--bg-rate", "0"], "above 0"),
                (&["--items", "0"], "at least 1 order"),
                (&["--runs", "0"], "at least 1 run"),
                (&["--work-ns", "-1"], "0 to 100000"),
                (&["--bg-threads", "65"], "at most 64"),
                (&["--variants", "tcmalloc"], "unknown variant"),
                (&["--cross-l3"], "not available here"),
                (&["--slices", "0"], "at least 1 slice"),
                (&["--out", "/proc/x"], "--out /proc/x: cannot create files"),
            ],
        );
    }
}
