//! What the paced producer -> consumer experiments (queue, pipeline) share beyond
//! `measure`: their mode flags, the cell of one (mode, variant, load point) with its
//! merged runs, and the charts drawn from the cells.

use super::chart::{Chart, Series};
use super::error::Result;
use super::flags;
use super::harness;
use super::measure::{self, Around, Measured, Mode, Row, Stamps};
use super::placed::{self, Placements};
use super::results::Outputs;
use super::rotate::{self, Group, Step};
use super::schema::Variant;
use super::stop;
use handoff_clock::link::Classes;
use handoff_clock::Clock;
use std::fmt::Write as _;
use std::path::Path;

/// `--headline`, `--sweep`, `--throughput`, `--all`: which measurements run. What the
/// sweep sweeps is the experiment's to say ([`Experiment::SWEEP`]).
///
/// [`Experiment::SWEEP`]: super::experiment::Experiment::SWEEP
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Modes {
    /// Run the paced headline measurement
    #[arg(long)]
    pub headline: bool,
    /// Run the sweep
    #[arg(long)]
    pub sweep: bool,
    /// Run unpaced (saturated) throughput
    #[arg(long)]
    pub throughput: bool,
    /// Run all three modes
    #[arg(long)]
    pub all: bool,
}

impl Modes {
    /// The modes asked for, in the order headline, sweep, throughput; `default` when
    /// none is named.
    ///
    /// ```
    /// use runner::lab::measure::Mode;
    /// use runner::lab::paced::Modes;
    /// let none = Modes::default();
    /// assert_eq!(none.chosen(&[Mode::Headline]), [Mode::Headline]);
    /// let m = Modes { throughput: true, sweep: true, ..Modes::default() };
    /// assert_eq!(m.chosen(&[Mode::Headline]), [Mode::Sweep, Mode::Throughput]);
    /// let all = Modes { all: true, ..Modes::default() };
    /// assert_eq!(all.chosen(&[]).len(), 3);
    /// ```
    pub fn chosen(&self, default: &[Mode]) -> Vec<Mode> {
        let asked = [
            (self.headline, Mode::Headline),
            (self.sweep, Mode::Sweep),
            (self.throughput, Mode::Throughput),
        ];
        let modes: Vec<Mode> = asked
            .iter()
            .filter(|(on, _)| *on || self.all)
            .map(|&(_, m)| m)
            .collect();
        if modes.is_empty() {
            default.to_vec()
        } else {
            modes
        }
    }
}

/// `--slices`: how finely each run is cut to tag it with the placement of the cores.
#[derive(clap::Args, Debug, Clone)]
pub struct SliceFlag {
    /// Slices per run: the variants alternate slice by slice, and the round trip between
    /// the two cores is probed between slices to tag each with the host's placement
    /// (paced slices keep at least 1000 items, unpaced ones 100000)
    #[arg(long, default_value = "50", allow_hyphen_values = true, value_parser = flags::count_value)]
    pub slices: usize,
}

impl SliceFlag {
    /// The validated count (1 to 2^20).
    pub fn checked(&self) -> Result<usize> {
        flags::count_in("slices", self.slices, 1, 1 << 20, "slice")
    }
}

/// Fewest items in a paced slice.
pub const MIN_PACED_SLICE: usize = 1_000;
/// Fewest items in an unpaced slice: enough that the start of the threads is a small
/// part of it.
pub const MIN_UNPACED_SLICE: usize = 100_000;

/// Slices of a run of `items` items: `slices`, fewer where a slice would hold fewer
/// than [`MIN_PACED_SLICE`] items ([`MIN_UNPACED_SLICE`] unpaced), at least 1.
///
/// ```
/// use runner::lab::paced::slices_of;
/// assert_eq!(slices_of(50, 1_000_000, true), 50);
/// assert_eq!(slices_of(50, 20_000, true), 20);
/// assert_eq!(slices_of(50, 1_000_000, false), 10);
/// assert_eq!(slices_of(50, 500, true), 1);
/// assert_eq!(slices_of(1, 1_000_000, true), 1);
/// ```
pub fn slices_of(slices: usize, items: usize, paced: bool) -> usize {
    let least = if paced {
        MIN_PACED_SLICE
    } else {
        MIN_UNPACED_SLICE
    };
    slices.min(items / least).max(1)
}

/// Items in slice `step.slice` of a run of `items` items: an even share, the remainder
/// spread over the first slices.
///
/// ```
/// use runner::lab::paced::slice_items;
/// use runner::lab::rotate::Step;
/// let n: Vec<usize> = (0..3).map(|slice| slice_items(10, Step { run: 0, slice, slices: 3 })).collect();
/// assert_eq!(n, [4, 3, 3]);
/// ```
pub fn slice_items(items: usize, step: Step) -> usize {
    items / step.slices + usize::from(step.slice < items % step.slices)
}

/// Measures the `plan`'s groups of `cells` slice by slice (`rotate::groups`): each
/// group's runs are cut into [`slices_of`]`(slices, ..)` slices, `slice(cell, items,
/// step)` measures one and returns its stamps, and the round trip between cores `a`
/// and `b` is probed before the first slice and after every slice, so that each slice
/// is tagged with the placement of the cores (`lab::placed`). Returns the placements
/// the probes found, with `step_ns`, the clock's step the claims resolve at
/// (`handoff_clock::ReadCost::step_ns`, as the session's environment records it).
#[allow(clippy::too_many_arguments)]
pub fn run_sliced<V: Named, X>(
    bar: &indicatif::ProgressBar,
    cells: &mut [Cell<V, X>],
    mut plan: Vec<Group>,
    slices: usize,
    label: impl Fn(&Cell<V, X>) -> String,
    clock: &Clock,
    (a, b): (usize, usize),
    step_ns: f64,
    mut slice: impl FnMut(&mut Cell<V, X>, usize, Step) -> Result<Stamps>,
) -> Result<Placements> {
    for g in &mut plan {
        let first = &cells[g.cells[0]].measured;
        g.slices = slices_of(slices, first.items, first.offered_hz.is_some());
    }
    let timer = clock.timer();
    let probe = || harness::link_probe(timer, stop::flag(), a, b);
    let mut last = probe()?;
    let mut probes: Vec<f64> = last.into_iter().collect();
    rotate::groups(bar, cells, &plan, label, |cell, step| {
        let items = slice_items(cell.measured.items, step);
        let data = slice(cell, items, step)?;
        stop::check()?;
        let after = probe()?;
        probes.extend(after);
        let around = last.zip(after).map(|(before_ns, after_ns)| Around {
            before_ns,
            after_ns,
        });
        last = after;
        cell.measured.add_slice(&data, around, clock)?;
        if step.ends_run() {
            cell.measured.end_run(clock, cell.variant.name())?;
        }
        Ok(())
    })?;
    Ok(Placements {
        classes: Classes::of(&probes),
        probes: probes.len(),
        freq_hz: clock.calibration().freq_hz,
        step_ns,
    })
}

/// The report's section on placements: the classes the probes found, and the headline
/// and throughput p50s in each ("" without probes).
pub fn placement_section<V: Named, X>(p: &Placements, cells: &[Cell<V, X>]) -> String {
    if p.classes.list.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "placements of the two cores: round trip of a cache line between them, probed between slices\n",
    );
    for c in &p.classes.list {
        let _ = writeln!(
            s,
            "  {:>10}  {} of {} probes",
            c.label(),
            c.probes,
            p.probes
        );
    }
    for mode in [Mode::Headline, Mode::Throughput, Mode::Burst] {
        let of = || cells.iter().filter(move |c| c.mode == mode);
        if of().next().is_none() {
            continue;
        }
        s.push_str(&placed::table(
            &format!(
                "{} by placement (slices whose two probes fell in one placement)",
                mode.name()
            ),
            &p.classes,
            of().filter(|c| c.ran())
                .map(|c| (c.variant.name(), &c.measured)),
        ));
    }
    s
}

/// A contender of a paced experiment: a name for tables, files and charts.
pub trait Named: Copy + PartialEq {
    /// Its name.
    fn name(self) -> &'static str;
}

/// Writes a list of contenders as their names (`#[serde(serialize_with =
/// "paced::names")]` in a configuration).
pub fn names<V: Named, S: serde::Serializer>(
    v: &[V],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|&x| x.name()))
}

/// One (mode, variant, load point) of a paced experiment: its merged runs
/// ([`Measured`], reached through `Deref`), why it did not run if it did not, and the
/// experiment's own figures (`extra`).
#[derive(Clone, Debug)]
pub struct Cell<V, X> {
    /// Mode.
    pub mode: Mode,
    /// Variant.
    pub variant: V,
    /// Why it didn't run, if it didn't.
    pub unavailable: Option<String>,
    /// What the runs measured.
    pub measured: Measured,
    /// The experiment's own figures.
    pub extra: X,
}

impl<V, X> std::ops::Deref for Cell<V, X> {
    type Target = Measured;

    fn deref(&self) -> &Measured {
        &self.measured
    }
}

impl<V: Named, X> Cell<V, X> {
    /// A cell of nothing measured yet.
    pub fn new(mode: Mode, variant: V, offered_hz: Option<f64>, items: usize, extra: X) -> Self {
        Cell {
            mode,
            variant,
            unavailable: None,
            measured: Measured::new(offered_hz, items),
            extra,
        }
    }

    /// The table row of this cell.
    pub fn row(&self) -> Row<'_> {
        (
            self.variant.name(),
            match &self.unavailable {
                Some(why) => Err(why.as_str()),
                None => Ok(&self.measured),
            },
        )
    }

    /// Whether it ran.
    pub fn ran(&self) -> bool {
        self.unavailable.is_none()
    }
}

/// The contenders of the results JSON (`variants[]`): one entry per headline and
/// throughput cell, with its `mode`, its figures ([`Measured::variant`]) and what
/// `more` adds of the experiment's own; a cell that did not run says why.
pub fn variants<'a, V: Named + 'a, X: 'a>(
    cells: impl IntoIterator<Item = &'a Cell<V, X>>,
    more: impl Fn(&Cell<V, X>, &mut Variant),
) -> Vec<Variant> {
    cells
        .into_iter()
        .filter(|c| c.mode != Mode::Sweep)
        .map(|c| {
            let mut v = match &c.unavailable {
                Some(why) => Variant::unavailable(c.variant.name(), why),
                None => {
                    let mut v = c.measured.variant(c.variant.name());
                    more(c, &mut v);
                    v
                }
            };
            v.set("mode", c.mode.name());
            v
        })
        .collect()
}

/// What [`charts`] draws, in the experiment's words.
pub struct Charts<'a> {
    /// The files' stem (`queue`).
    pub stem: &'a str,
    /// The latency's axis label (`enqueue -> dequeue latency (ns)`).
    pub latency: &'a str,
    /// The headline charts' title.
    pub headline_title: String,
    /// The sweep chart's title, its x axis, and its series for a percentile.
    pub sweep: Option<Sweep<'a>>,
    /// The throughput bars' title and unit (`M items/s`).
    pub throughput: (&'a str, &'a str),
}

/// The sweep panel of [`Charts`].
pub struct Sweep<'a> {
    /// Its title.
    pub title: &'a str,
    /// Its x axis.
    pub x: &'a str,
    /// Its series for a percentile.
    pub series: &'a dyn Fn(fn(&handoff_stats::Percentiles) -> u64) -> Vec<Series>,
}

/// Every chart of a paced experiment's cells that ran: the headline's CCDF and PDF,
/// the sweep's percentile panels, the throughput bars (in millions per second).
pub fn charts<'a, V: Named + 'a, X: 'a>(
    dir: &Path,
    cells: impl IntoIterator<Item = &'a Cell<V, X>> + Clone,
    what: &Charts<'_>,
) -> Result<Outputs> {
    let mut files = Outputs::new();
    let of = |mode: Mode| {
        cells
            .clone()
            .into_iter()
            .filter(move |c| c.mode == mode && c.ran())
    };
    let headline: Vec<(&str, &Measured)> = of(Mode::Headline)
        .map(|c| (c.variant.name(), &c.measured))
        .collect();
    measure::distribution_charts(
        dir,
        what.stem,
        &what.headline_title,
        what.latency,
        &headline,
        &mut files,
    )?;
    if let Some(s) = &what.sweep {
        if of(Mode::Sweep).next().is_some() {
            files.chart(
                dir.join(format!("{}-sweep.svg", what.stem)),
                measure::percentile_panels(s.title, s.series, s.x, what.latency),
            )?;
        }
    }
    let tp: Vec<(String, f64)> = of(Mode::Throughput)
        .filter_map(|c| Some((c.variant.name().to_string(), c.throughput()? / 1e6)))
        .collect();
    if !tp.is_empty() {
        files.chart(
            dir.join(format!("{}-throughput.svg", what.stem)),
            Chart::Bars {
                title: what.throughput.0.into(),
                y: what.throughput.1.into(),
                bars: tp,
            },
        )?;
    }
    Ok(files)
}
