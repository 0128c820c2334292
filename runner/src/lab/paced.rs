//! What the paced producer -> consumer experiments (queue, pipeline) share beyond
//! `measure`: their mode flags, the cell of one (mode, variant, load point) with its
//! merged runs, and the charts drawn from the cells.

use super::chart::{Chart, Series};
use super::error::Result;
use super::measure::{self, Measured, Mode, Row};
use super::results::Outputs;
use super::schema::Variant;
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
