//! What a paced producer -> consumer run measured, in one shape for every experiment:
//! the stamps one run leaves ([`Stamps`]), their reduction to numbers
//! ([`RunSummary`]), the merge of N outer runs ([`Measured`]), and the table rows, JSON
//! fields and CCDF/PDF charts drawn from it.

use super::chart::{Chart, Series};
use super::error::{Error, Result};
use super::fmt;
use super::pacer::{below_target, Schedule};
use super::results::Outputs;
use super::schema::{Better, Sweep, Unit, Variant};
use handoff_clock::link::{self, Classes};
use handoff_clock::Clock;
use handoff_stats::Latency;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::fmt::Write as _;
use std::path::Path;

/// Which measurement a cell belongs to; every paced producer -> consumer experiment
/// has the same three.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Paced at the experiment's headline rate.
    Headline,
    /// Paced, over the experiment's sweep points (offered load, background pressure).
    Sweep,
    /// Unpaced.
    Throughput,
    /// Paced bursts: a number of items sent back to back at each due time.
    Burst,
}

impl Mode {
    /// The name in results.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Headline => "headline",
            Mode::Sweep => "sweep",
            Mode::Throughput => "throughput",
            Mode::Burst => "burst",
        }
    }
}

/// The stamps of one run, as the roles left them.
#[derive(Debug)]
pub struct Stamps {
    /// The schedule the producer followed.
    pub schedule: Schedule,
    /// Send stamps by index.
    pub send: Vec<u64>,
    /// Receive stamps by sequence number.
    pub recv: Vec<u64>,
    /// Stamps taken off the pinned cores (producer + consumer).
    pub off_core: u64,
    /// Items received out of order, out of range or corrupted.
    pub bad_items: u64,
}

/// One run reduced to numbers.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunSummary {
    /// Achieved send rate (items/s).
    pub achieved_rate_hz: Option<f64>,
    /// Items over first send to last receive (items/s).
    pub throughput_items_per_s: f64,
    /// The run fell below 95% of the offered rate.
    pub below_target: bool,
    /// Stamps taken off the pinned cores (producer + consumer).
    pub off_core_stamps: u64,
    /// Items out of order or corrupted (must be 0).
    pub bad_items: u64,
    /// Receive stamps earlier than their send stamps (excluded; must be 0 with an
    /// invariant TSC).
    pub negative_latencies: u64,
    /// Mean queue depth of this run by Little's law: the achieved send rate times the
    /// mean latency (`None` without a send rate).
    pub mean_depth: Option<f64>,
    /// Median latency of this run (ns).
    pub p50_ns: u64,
    /// 99th percentile of this run (ns).
    pub p99_ns: u64,
    /// 99.9th percentile of this run (ns).
    #[serde(rename = "p99.9_ns")]
    pub p999_ns: u64,
    /// Times the consumer took at least [`STALL_NS`] to take an item from the moment
    /// the item was sent and the consumer was done with the previous one. A spinning
    /// consumer only does that when its thread is not running (a hypervisor pause, an
    /// interrupt); for blocking variants it also counts condvar wake-ups.
    pub consumer_stalls: u64,
    /// Total length of those stalls (ns).
    pub consumer_stall_ns: u64,
    /// Items whose latency was at least [`STALL_NS`].
    pub items_over_stall_ns: u64,
    /// The consumer's period (ns per item) while items waited for it: the mean gap
    /// between two receive stamps when the second item had been sent before the
    /// consumer stamped the first, gaps of [`STALL_NS`] or more left out. `None` when
    /// fewer than [`MIN_BACKLOGGED`] items found the consumer busy.
    pub consumer_period_ns: Option<f64>,
    /// This run's latency (ns) at p90.0, p90.1, ... p99.9, for a claim that picks its
    /// quantile after the runs (see [`at_quantile`](Self::at_quantile)); not written
    /// to the results file.
    #[serde(skip)]
    pub tail_ns: Vec<u64>,
}

impl RunSummary {
    /// This run's latency (ns) at quantile `q`, read at the nearest tenth of a
    /// percent; `None` outside p90-p99.9.
    ///
    /// ```
    /// use runner::lab::measure::RunSummary;
    /// let mut lat = handoff_stats::Latency::new();
    /// for v in 1..=1000 {
    ///     lat.record(v);
    /// }
    /// let run = RunSummary {
    ///     tail_ns: RunSummary::tail_profile(&lat),
    ///     ..RunSummary::default()
    /// };
    /// assert_eq!(run.at_quantile(0.99), Some(990));
    /// assert_eq!(run.at_quantile(0.9836), Some(984));
    /// assert_eq!(run.at_quantile(0.9), Some(900));
    /// assert_eq!(run.at_quantile(0.999), Some(999));
    /// assert_eq!(run.at_quantile(0.8994), None);
    /// assert_eq!(run.at_quantile(0.5), None);
    /// ```
    pub fn at_quantile(&self, q: f64) -> Option<u64> {
        let k = (q * 1000.0).round() as i64 - 900;
        usize::try_from(k)
            .ok()
            .and_then(|k| self.tail_ns.get(k).copied())
    }

    /// The tail profile of `lat` ([`tail_ns`](Self::tail_ns)).
    pub fn tail_profile(lat: &Latency) -> Vec<u64> {
        (900..1000)
            .map(|k| lat.value_at_quantile(f64::from(k) / 1000.0))
            .collect()
    }
}

/// Backlogged items a run needs for a [`RunSummary::consumer_period_ns`].
pub const MIN_BACKLOGGED: u64 = 1000;

/// The gap that counts as a consumer stall (10 us: about 80 lock-free handoffs).
pub const STALL_NS: u64 = 10_000;

/// The median of the finite values, `None` if there are none.
///
/// ```
/// use runner::lab::measure::median;
/// assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
/// assert_eq!(median(vec![4.0, 1.0, f64::NAN, 2.0, 3.0]), Some(2.5));
/// assert_eq!(median(vec![]), None);
/// ```
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// How many parts [`median_part`] cuts a timed loop into.
pub const PARTS: u64 = 8;

/// Runs `n` iterations of a loop in [`PARTS`] parts (`run(m)` runs the next `m`), each
/// part but the last ending on a multiple of `align` iterations (a batch the loop must
/// not split), and returns the median part's time per iteration as read with `now`
/// (any monotonic counter: TSC ticks, nanoseconds); parts left empty by the alignment
/// are skipped, and no iteration gives 0. A host pause (0.3-4 ms, several a second on
/// the development VM, against loops of 1 to 500 ms) lengthens the part it falls in,
/// not the figure; work of the loop itself that falls in one part (a purge, a page
/// returned) is left out with it, and work spread over the loop is not. The one rule
/// for the pool's one-thread loops and bulk passes, patterns' batch loop and the
/// allocator test's steady replacements.
///
/// ```
/// use runner::lab::measure::median_part;
/// use std::cell::Cell;
/// let t = Cell::new(0u64);
/// let mut sizes = Vec::new();
/// // One iteration costs 10; the fourth part meets a pause of 5000.
/// let pace = median_part(|| t.get(), 8000, 1000, |m| {
///     sizes.push(m);
///     t.set(t.get() + 10 * m + if sizes.len() == 4 { 5000 } else { 0 });
/// });
/// assert_eq!(pace, 10.0);
/// assert_eq!(sizes, vec![1000; 8]);
/// ```
pub fn median_part(
    mut now: impl FnMut() -> u64,
    n: u64,
    align: u64,
    mut run: impl FnMut(u64),
) -> f64 {
    let align = align.max(1);
    let mut each = Vec::with_capacity(PARTS as usize);
    let mut done = 0;
    for part in 1..=PARTS {
        let end = if part == PARTS {
            n
        } else {
            (u128::from(n) * u128::from(part) / u128::from(PARTS)) as u64 / align * align
        };
        if end <= done {
            continue;
        }
        let t0 = now();
        run(end - done);
        each.push(now().saturating_sub(t0) as f64 / (end - done) as f64);
        done = end;
    }
    median(each).unwrap_or(0.0)
}

/// [`median`] of any finite values, NaN when there are none (tables print it as "-").
///
/// ```
/// use runner::lab::measure::median_or_nan;
/// assert_eq!(median_or_nan([3.0, 1.0, 2.0]), 2.0);
/// assert!(median_or_nan([]).is_nan());
/// ```
pub fn median_or_nan(v: impl IntoIterator<Item = f64>) -> f64 {
    median(v.into_iter().collect()).unwrap_or(f64::NAN)
}

/// N outer runs of one contender at one offered load, merged.
#[derive(Clone, Debug)]
pub struct Measured {
    /// Offered rate (`None`: unpaced).
    pub offered_hz: Option<f64>,
    /// Items per run.
    pub items: usize,
    /// Send stamp to receive stamp, ns, merged over runs.
    pub latency: Latency,
    /// Intended (scheduled) send time to receive stamp, ns, merged: the
    /// coordinated-omission-aware reading. Empty when unpaced.
    pub latency_from_intended: Latency,
    /// Per-run numbers.
    pub runs: Vec<RunSummary>,
    /// The slices probed around, grouped by the bins of their two probes.
    pub parts: Vec<LinkPart>,
    /// The run in progress, between its first slice and [`end_run`](Self::end_run).
    open: Option<RunAcc>,
}

/// The sums of a run in progress.
#[derive(Clone, Debug, Default)]
struct RunAcc {
    latency: Latency,
    negative: u64,
    over: u64,
    stalls: u64,
    stall_ticks: u64,
    sent: u64,
    send_span: u64,
    items: u64,
    span: u64,
    off_core: u64,
    bad_items: u64,
    backlogged: u64,
    backlogged_ticks: u64,
}

/// The cross-core round trips (ns) probed just before and just after one slice of a
/// run (`lab::link`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Around {
    /// Before the slice.
    pub before_ns: f64,
    /// After it.
    pub after_ns: f64,
}

/// The slices of a contender whose probes fell in the same two round-trip bins
/// ([`link::bin`]), merged.
#[derive(Clone, Debug)]
pub struct LinkPart {
    /// The bins of the probe before and the probe after.
    pub bins: (i32, i32),
    /// Slices.
    pub slices: usize,
    /// Items sent.
    pub items: u64,
    /// First send to last receive, summed over the slices (ticks).
    pub span_ticks: u64,
    /// Send stamp to receive stamp (ns).
    pub latency: Latency,
}

/// What a contender's slices measured in one placement.
#[derive(Clone, Debug)]
pub struct Placed {
    /// Slices.
    pub slices: usize,
    /// Items sent.
    pub items: u64,
    /// First send to last receive, summed over the slices (ticks).
    pub span_ticks: u64,
    /// Send stamp to receive stamp (ns).
    pub latency: Latency,
}

impl Measured {
    /// Nothing measured yet.
    pub fn new(offered_hz: Option<f64>, items: usize) -> Measured {
        Measured {
            offered_hz,
            items,
            latency: Latency::new(),
            latency_from_intended: Latency::new(),
            runs: Vec::new(),
            parts: Vec::new(),
            open: None,
        }
    }

    /// Median achieved send rate over the runs.
    pub fn achieved_hz(&self) -> Option<f64> {
        median(
            self.runs
                .iter()
                .filter_map(|r| r.achieved_rate_hz)
                .collect(),
        )
    }

    /// Median end-to-end throughput over the runs.
    pub fn throughput(&self) -> Option<f64> {
        median(self.runs.iter().map(|r| r.throughput_items_per_s).collect())
    }

    /// Mean queue depth by Little's law: achieved rate x mean latency.
    pub fn mean_depth(&self) -> Option<f64> {
        let rate = self.achieved_hz()?;
        (self.latency.count() > 0).then(|| rate * self.latency.mean() * 1e-9)
    }

    /// Median over the runs of [`RunSummary::consumer_period_ns`].
    pub fn consumer_period_ns(&self) -> Option<f64> {
        median(
            self.runs
                .iter()
                .filter_map(|r| r.consumer_period_ns)
                .collect(),
        )
    }

    /// Runs below 95% of the offered rate.
    pub fn below_target_runs(&self) -> usize {
        self.runs.iter().filter(|r| r.below_target).count()
    }

    /// Consumer stalls (count, total ns) and items at or over [`STALL_NS`], all runs.
    pub fn stalls(&self) -> (u64, u64, u64) {
        self.runs.iter().fold((0, 0, 0), |a, r| {
            (
                a.0 + r.consumer_stalls,
                a.1 + r.consumer_stall_ns,
                a.2 + r.items_over_stall_ns,
            )
        })
    }

    /// Stamps taken off the pinned cores, all runs.
    pub fn off_core_stamps(&self) -> u64 {
        self.runs.iter().map(|r| r.off_core_stamps).sum()
    }

    /// Adds one run. Items out of order or corrupted are an error (`who` names the
    /// contender), after the run has been recorded.
    pub fn add(&mut self, data: &Stamps, clock: &Clock, who: &str) -> Result<()> {
        self.add_slices(&[(data, None)], clock, who)
    }

    /// Adds one run measured in slices, each with the cross-core round trips probed
    /// around it (`None`: not probed): [`add_slice`](Self::add_slice) for each, then
    /// [`end_run`](Self::end_run).
    pub fn add_slices(
        &mut self,
        slices: &[(&Stamps, Option<Around>)],
        clock: &Clock,
        who: &str,
    ) -> Result<()> {
        for &(data, around) in slices {
            self.add_slice(data, around, clock)?;
        }
        self.end_run(clock, who)
    }

    /// Adds one slice of the run in progress: its latencies to the run's and to the
    /// [`LinkPart`] of the probes around it, its stalls, rates and spans to the run's
    /// sums (the gaps between slices are left out).
    pub fn add_slice(
        &mut self,
        data: &Stamps,
        around: Option<Around>,
        clock: &Clock,
    ) -> Result<()> {
        let stall_ticks = clock.ns_to_ticks(STALL_NS);
        let mut part = Latency::new();
        let acc = self.open.get_or_insert_with(RunAcc::default);
        let paced = data.schedule.is_paced();
        for (i, (&s, &r)) in data.send.iter().zip(&data.recv).enumerate() {
            if r < s {
                acc.negative += 1;
                continue;
            }
            let ns = clock.ticks_to_ns(r - s);
            acc.over += u64::from(ns >= STALL_NS);
            part.record(ns);
            if paced {
                let due = data.schedule.due(i as u64);
                self.latency_from_intended
                    .record(clock.ticks_to_ns(r.saturating_sub(due)));
            }
        }
        for k in 1..data.recv.len() {
            // From the moment item k was both sent and the consumer free of item k-1
            // until the consumer stamped it.
            let ready = data.send[k].max(data.recv[k - 1]);
            let gap = data.recv[k].saturating_sub(ready);
            if gap >= stall_ticks {
                acc.stalls += 1;
                acc.stall_ticks += gap;
            }
            // Item k waited for the consumer: the gap is the consumer's own period.
            let period = data.recv[k].saturating_sub(data.recv[k - 1]);
            if data.send[k] <= data.recv[k - 1] && period < stall_ticks {
                acc.backlogged += 1;
                acc.backlogged_ticks += period;
            }
        }
        if let (Some(&a), Some(&b)) = (data.send.first(), data.send.last()) {
            if b > a {
                acc.sent += data.send.len() as u64 - 1;
                acc.send_span += b - a;
            }
        }
        let first = data.send.first().copied().unwrap_or(0);
        let last = data.recv.iter().copied().max().unwrap_or(0);
        let span = last.saturating_sub(first);
        acc.items += data.send.len() as u64;
        acc.span += span;
        acc.off_core += data.off_core;
        acc.bad_items += data.bad_items;
        acc.latency
            .merge(&part)
            .map_err(|e| Error::Run(format!("merging slices: {e}")))?;
        if let Some(around) = around {
            let bins = (link::bin(around.before_ns), link::bin(around.after_ns));
            let i = match self.parts.iter().position(|p| p.bins == bins) {
                Some(i) => i,
                None => {
                    self.parts.push(LinkPart {
                        bins,
                        slices: 0,
                        items: 0,
                        span_ticks: 0,
                        latency: Latency::new(),
                    });
                    self.parts.len() - 1
                }
            };
            let p = &mut self.parts[i];
            p.slices += 1;
            p.items += data.send.len() as u64;
            p.span_ticks += span;
            p.latency
                .merge(&part)
                .map_err(|e| Error::Run(format!("merging slices: {e}")))?;
        }
        Ok(())
    }

    /// Closes the run in progress: one [`RunSummary`] over its slices (rates and
    /// throughput over the slices' own spans), merged into the totals. Items out of
    /// order or corrupted are an error (`who` names the contender), after the run has
    /// been recorded. Nothing happens when no slice was added.
    pub fn end_run(&mut self, clock: &Clock, who: &str) -> Result<()> {
        let Some(acc) = self.open.take() else {
            return Ok(());
        };
        let freq = clock.calibration().freq_hz;
        let achieved = (acc.send_span > 0).then(|| acc.sent as f64 * freq / acc.send_span as f64);
        let throughput = if acc.span > 0 {
            acc.items as f64 * freq / acc.span as f64
        } else {
            0.0
        };
        let below = match (self.offered_hz, achieved) {
            (Some(o), Some(a)) => below_target(a, o),
            (Some(_), None) => true,
            (None, _) => false,
        };
        let lat = &acc.latency;
        self.runs.push(RunSummary {
            achieved_rate_hz: achieved,
            throughput_items_per_s: throughput,
            below_target: below,
            off_core_stamps: acc.off_core,
            bad_items: acc.bad_items,
            negative_latencies: acc.negative,
            mean_depth: achieved
                .filter(|_| lat.count() > 0)
                .map(|a| a * lat.mean() * 1e-9),
            p50_ns: lat.value_at_quantile(0.5),
            p99_ns: lat.value_at_quantile(0.99),
            p999_ns: lat.value_at_quantile(0.999),
            consumer_stalls: acc.stalls,
            consumer_stall_ns: clock.ticks_to_ns(acc.stall_ticks),
            items_over_stall_ns: acc.over,
            consumer_period_ns: (acc.backlogged >= MIN_BACKLOGGED)
                .then(|| acc.backlogged_ticks as f64 * 1e9 / freq / acc.backlogged as f64),
            tail_ns: RunSummary::tail_profile(lat),
        });
        self.latency
            .merge(lat)
            .map_err(|e| Error::Run(format!("merging runs: {e}")))?;
        if acc.bad_items > 0 {
            return Err(Error::Run(format!(
                "{who}: {} items arrived out of order or corrupted",
                acc.bad_items
            )));
        }
        Ok(())
    }

    /// What the slices of placement `class` of `classes` measured, merged; `None` when
    /// no slice of these runs falls in it.
    pub fn in_class(&self, classes: &Classes, class: usize) -> Option<Placed> {
        let mut out = Placed {
            slices: 0,
            items: 0,
            span_ticks: 0,
            latency: Latency::new(),
        };
        for p in &self.parts {
            if classes.of_bins(p.bins.0, p.bins.1) == Some(class) {
                out.slices += p.slices;
                out.items += p.items;
                out.span_ticks += p.span_ticks;
                // Both histograms count nanoseconds: merging cannot fail.
                let _ = out.latency.merge(&p.latency);
            }
        }
        (out.slices > 0).then_some(out)
    }

    /// Slices probed around, and those whose two probes fell in no one class of
    /// `classes` (the placement moved, or a probe was caught by an interruption).
    pub fn slices_unplaced(&self, classes: &Classes) -> (usize, usize) {
        let all = self.parts.iter().map(|p| p.slices).sum();
        let off = self
            .parts
            .iter()
            .filter(|p| classes.of_bins(p.bins.0, p.bins.1).is_none())
            .map(|p| p.slices)
            .sum();
        (all, off)
    }

    /// What a reader should know about these runs: rate shortfalls, stamps off core,
    /// consumer stalls, dropped negative latencies ("" when nothing).
    pub fn notes(&self) -> String {
        let mut n = Vec::new();
        if self.below_target_runs() > 0 {
            n.push(format!(
                "{}/{} runs <95% of offered",
                self.below_target_runs(),
                self.runs.len()
            ));
        }
        if self.off_core_stamps() > 0 {
            n.push(format!("{} stamps off core", self.off_core_stamps()));
        }
        let (stalls, stall_ns, over) = self.stalls();
        if stalls > 0 {
            n.push(format!(
                "{stalls} consumer stalls ({}), {:.2}% of items >=10 us",
                fmt::ns(stall_ns as f64),
                100.0 * over as f64 / self.latency.count().max(1) as f64
            ));
        }
        let neg: u64 = self.runs.iter().map(|r| r.negative_latencies).sum();
        if neg > 0 {
            n.push(format!("{neg} negative latencies dropped"));
        }
        n.join("; ")
    }

    /// DESIGN.md's per-variant result fields (the caller adds `name` and its own).
    pub fn json(&self) -> Map<String, Value> {
        let v = json!({
            "latency_ns": self.latency.percentiles(),
            "latency_ns_doc_convention": self.latency.doc_percentiles(),
            "latency_from_intended_ns": (self.latency_from_intended.count() > 0)
                .then(|| self.latency_from_intended.percentiles()),
            "offered_rate_hz": self.offered_hz,
            "achieved_rate_hz": self.achieved_hz(),
            "throughput_items_per_s": self.throughput(),
            "mean_queue_depth": self.mean_depth(),
            "samples": self.latency.count(),
            "runs": self.runs.len(),
            "items_per_run": self.items,
            "below_target_runs": self.below_target_runs(),
            "off_core_stamps": self.off_core_stamps(),
            "per_run": self.runs,
            "histogram": self.latency,
        });
        match v {
            Value::Object(m) => m,
            _ => unreachable!("json! of an object literal"),
        }
    }

    /// This contender as an entry of the results' `variants[]`: its latency
    /// percentiles (ns), throughput and achieved rate (items/s) and mean queue depth,
    /// each with its value in each run where the runs have one, and every field of
    /// [`json`](Self::json).
    pub fn variant(&self, name: &str) -> Variant {
        let mut v = Variant::new(name);
        let p = self.latency.percentiles();
        let runs = |f: fn(&RunSummary) -> f64| self.runs.iter().map(f).collect::<Vec<_>>();
        let none = Vec::new;
        for (key, value, per_run) in [
            ("p50", p.p50, runs(|r| r.p50_ns as f64)),
            ("p90", p.p90, none()),
            ("p99", p.p99, runs(|r| r.p99_ns as f64)),
            ("p99.9", p.p999, runs(|r| r.p999_ns as f64)),
            ("max", p.max, none()),
        ] {
            v.figure(key, Unit::Ns, Better::Lower, value as f64, per_run);
        }
        v.figure(
            "throughput",
            Unit::ItemsPerS,
            Better::Higher,
            self.throughput().unwrap_or(f64::NAN),
            runs(|r| r.throughput_items_per_s),
        );
        if let Some(a) = self.achieved_hz() {
            v.figure(
                "achieved_rate",
                Unit::ItemsPerS,
                Better::Higher,
                a,
                runs(|r| r.achieved_rate_hz.unwrap_or(f64::NAN)),
            );
        }
        if let Some(d) = self.mean_depth() {
            v.figure("mean_queue_depth", Unit::Items, Better::Lower, d, none());
        }
        v.extend(self.json());
        v
    }

    /// One sweep point's fields: `x` and the percentiles.
    pub fn sweep_point(&self, x: Option<f64>) -> Value {
        let p = self.latency.percentiles();
        json!({
            "x": x, "p50": p.p50, "p90": p.p90, "p99": p.p99,
            "p99.9": p.p999, "max": p.max, "mean": p.mean,
            "achieved_rate_hz": self.achieved_hz(),
            "mean_queue_depth": self.mean_depth(),
            "below_target_runs": self.below_target_runs(),
            "samples": self.latency.count(),
            "latency_ns_doc_convention": self.latency.doc_percentiles(),
        })
    }
}

/// A sweep of `variant` over `x` (in `x_unit`): one [`Measured::sweep_point`] per
/// measured point, latencies in ns.
pub fn sweep<'a>(
    name: &'static str,
    variant: &str,
    x: &'static str,
    x_unit: Unit,
    points: impl IntoIterator<Item = (f64, &'a Measured)>,
) -> Sweep {
    Sweep {
        name,
        variant: variant.into(),
        x,
        x_unit: x_unit.as_str(),
        unit: Unit::Ns.as_str(),
        points: points
            .into_iter()
            .map(|(x, m)| m.sweep_point(Some(x)))
            .collect(),
    }
}

/// A row of a results table: a contender's name and its runs, or why it did not run.
pub type Row<'a> = (&'a str, std::result::Result<&'a Measured, &'a str>);

/// A table of contenders at one offered load: p50, p99, p99.9, max, achieved rate,
/// throughput, mean depth and notes.
pub fn table<'a>(title: &str, rows: impl IntoIterator<Item = Row<'a>>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{title}");
    let _ = writeln!(
        s,
        "  {:<22} {:>9} {:>9} {:>9} {:>9} {:>11} {:>11} {:>8}  notes",
        "variant", "p50", "p99", "p99.9", "max", "achieved", "throughput", "depth"
    );
    for (name, m) in rows {
        let m = match m {
            Ok(m) => m,
            Err(why) => {
                let _ = writeln!(s, "  {name:<22} {why}");
                continue;
            }
        };
        let p = m.latency.percentiles();
        let _ = writeln!(
            s,
            "  {:<22} {:>9} {:>9} {:>9} {:>9} {:>11} {:>11} {:>8}  {}",
            name,
            fmt::ns(p.p50 as f64),
            fmt::ns(p.p99 as f64),
            fmt::ns(p.p999 as f64),
            fmt::ns(p.max as f64),
            fmt::mps(m.achieved_hz()),
            fmt::mps(m.throughput()),
            m.mean_depth()
                .map(|d| format!("{d:.2}"))
                .unwrap_or_else(|| "-".into()),
            m.notes()
        );
    }
    s
}

/// The latency CCDF (log-log) and PDF (log-x) charts of the contenders, written as
/// `<prefix>-ccdf.svg` and `<prefix>-pdf.svg` in `dir`. `what` names the latency on the
/// x axis; `title` starts both titles.
pub fn distribution_charts(
    dir: &Path,
    prefix: &str,
    title: &str,
    what: &str,
    contenders: &[(&str, &Measured)],
    files: &mut Outputs,
) -> Result<()> {
    if contenders.is_empty() {
        return Ok(());
    }
    let series = |points: &dyn Fn(&Latency) -> Vec<(f64, f64)>| -> Vec<Series> {
        contenders
            .iter()
            .map(|(name, m)| Series {
                name: (*name).into(),
                points: points(&m.latency),
            })
            .collect()
    };
    let ccdf = series(&|l| {
        l.ccdf()
            .iter()
            .map(|p| (p.value as f64, p.fraction))
            .collect()
    });
    files.chart(
        dir.join(format!("{prefix}-ccdf.svg")),
        Chart::LogLog {
            title: format!("{title}: latency CCDF (fraction of items at or above)"),
            x: what.into(),
            y: "fraction >= x".into(),
            series: ccdf,
        },
    )?;
    let pdf = series(&|l| {
        l.pdf()
            .iter()
            .map(|b| ((b.lower + b.upper) as f64 / 2.0, b.fraction))
            .collect()
    });
    files.chart(
        dir.join(format!("{prefix}-pdf.svg")),
        Chart::LogX {
            title: format!("{title}: latency PDF (log2/16 buckets)"),
            x: what.into(),
            y: "fraction of items in bucket".into(),
            series: pdf,
        },
    )?;
    Ok(())
}

/// The sweep chart every experiment draws: p50, p99 and p99.9 panels, log-log, side by
/// side. `series` gives the lines of one panel for a percentile picker; `what` ends each
/// panel's title (`vs offered load`).
pub fn percentile_panels(
    what: &str,
    series: impl Fn(fn(&handoff_stats::Percentiles) -> u64) -> Vec<Series>,
    x_label: &str,
    y_label: &str,
) -> Chart {
    let panel = |label: &str, pick: fn(&handoff_stats::Percentiles) -> u64| {
        (format!("{label} {what}"), series(pick))
    };
    Chart::Panels {
        panels: vec![
            panel("p50", |p| p.p50),
            panel("p99", |p| p.p99),
            panel("p99.9", |p| p.p999),
        ],
        x: x_label.into(),
        y: y_label.into(),
    }
}

#[cfg(test)]
mod tests {
    /// Every iteration runs once, in order, whatever `n` and the alignment; parts end on
    /// the alignment; no iteration reads 0.
    #[test]
    fn median_part_runs_every_iteration_once() {
        use super::median_part;
        for (n, align) in [
            (0u64, 1u64),
            (3, 1),
            (8, 1),
            (12_000, 1000),
            (12_345, 1000),
            (999, 1000),
            (7, 3),
        ] {
            let done = std::cell::Cell::new(0u64);
            let mut ends = Vec::new();
            let pace = median_part(
                || done.get(),
                n,
                align,
                |m| {
                    assert!(m > 0);
                    done.set(done.get() + m);
                    ends.push(done.get());
                },
            );
            assert_eq!(done.get(), n, "n {n} align {align}");
            assert!(ends.len() <= 8);
            for e in &ends[..ends.len().saturating_sub(1)] {
                assert_eq!(e % align, 0, "n {n} align {align}: {ends:?}");
            }
            // One tick an iteration.
            assert_eq!(pace, if n == 0 { 0.0 } else { 1.0 }, "n {n}");
        }
    }

    use super::*;
    use handoff_clock::{Source, Timer};

    /// A run whose items are sent at `send` and received at `recv` (ticks are ns).
    fn period(send: Vec<u64>, recv: Vec<u64>) -> Option<f64> {
        let clock = Clock::monotonic();
        let timer = Timer::with_frequency(Source::Tsc, 1e9);
        let stamps = Stamps {
            schedule: Schedule::new(0, None, timer),
            send,
            recv,
            off_core: 0,
            bad_items: 0,
        };
        let mut m = Measured::new(None, stamps.send.len());
        m.add(&stamps, &clock, "x").unwrap();
        m.consumer_period_ns()
    }

    #[test]
    fn consumer_period_is_read_where_items_waited() {
        // Every item is in the queue before the consumer takes the one before it: the
        // consumer's period (40 ns) is the gap between receive stamps.
        let send: Vec<u64> = (0..2000).map(|i| 1_000 + i).collect();
        let mut recv: Vec<u64> = (0..2000).map(|i| 10_000 + 40 * i).collect();
        assert_eq!(period(send.clone(), recv.clone()), Some(40.0));
        // An interruption of 20 us (a stall) is not the consumer's period.
        for r in &mut recv[1000..] {
            *r += 20_000;
        }
        assert_eq!(period(send, recv), Some(40.0));
        // Items that arrive after the consumer was done (paced, never backlogged) say
        // nothing about its period.
        let send: Vec<u64> = (0..2000).map(|i| 1_000 + 1_000 * i).collect();
        let recv: Vec<u64> = send.iter().map(|s| s + 100).collect();
        assert_eq!(period(send, recv), None);
    }
}
