#![doc = include_str!("../README.md")]
//!
//! ---
//!
//! Latency statistics for the handoff lab, built on [`hdrhistogram`].
//!
//! A [`Latency`] records values (nanoseconds or clock ticks) into an hdrhistogram at 3
//! significant figures, keeps the exact minimum and maximum beside it, and reads the
//! same data two ways:
//!
//! * [`Latency::percentiles`]: hdrhistogram's reading (p50 … p99.99, exact min/max);
//! * [`Latency::doc_percentiles`]: the source documents' convention (log2 buckets with
//!   16 sub-buckets, percentile = bucket midpoint), so our numbers compare with theirs.
//!
//! Runs merge with [`Latency::merge`]; [`Latency::ccdf`] and [`Latency::pdf`] give the
//! series to plot; the whole thing serialises with serde (the histogram itself as a
//! base64 HdrHistogram V2 blob, readable by any HdrHistogram implementation).
//!
//! ```
//! use handoff_stats::Latency;
//! let mut run1 = Latency::new();
//! let mut run2 = Latency::new();
//! for v in 1..=500 { run1.record(v); }
//! for v in 501..=1000 { run2.record(v); }
//! run1.merge(&run2).unwrap();
//! let p = run1.percentiles();
//! assert_eq!((p.count, p.min, p.p50, p.p99, p.max), (1000, 1, 500, 990, 1000));
//! let doc = run1.doc_percentiles();
//! assert_eq!(doc.p50, 503.5); // rank 500 is the value 500, in the bucket 496..=511
//! let json = serde_json::to_string(&run1).unwrap();
//! let back: Latency = serde_json::from_str(&json).unwrap();
//! assert_eq!(back.percentiles(), p);
//! ```
//!
//! # What each call costs
//!
//! | call | progress | allocates | system calls | worst case |
//! |---|---|---|---|---|
//! | [`Latency::new`], [`Latency::with_unit`] | - | the histogram's counts, once | the allocator's | one allocation |
//! | [`Latency::record`], [`Latency::record_n`] | wait-free | only when a value above every one recorded so far makes the histogram grow (hdrhistogram's auto-resize: a few dozen times at most over the whole range of `u64`) | no | O(1); a growth copies the counts |
//! | [`Latency::count`], `min`, `max`, `mean` | wait-free | no | no | O(1) |
//! | [`Latency::percentiles`], `value_at_quantile`, `doc_percentiles`, `ccdf`, `pdf`, `merge`, `to_ns` | wait-free | the series' vectors (`ccdf`, `pdf`, `doc_buckets`), a merged histogram's growth | no | O(buckets) |

// `--cfg handoff_global_alloc` (.ci/run): the unit tests link handoff-alloc (a
// dev-dependency), which then installs itself as their global allocator.
#[cfg(all(test, handoff_global_alloc))]
use handoff_alloc as _;

use std::fmt;

use base64::Engine;
use hdrhistogram::serialization::{
    Deserializer as HdrDeserializer, Serializer as _, V2DeflateSerializer,
};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

mod doc;
pub mod profile;

pub use doc::DocBucket;

/// Significant figures of every histogram this crate makes.
pub const SIGFIG: u8 = 3;

/// The quantiles reported everywhere: p50, p90, p99, p99.9, p99.99.
pub const QUANTILES: [f64; 5] = [0.50, 0.90, 0.99, 0.999, 0.9999];

/// What the recorded values count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Nanoseconds.
    Ns,
    /// Clock ticks (convert with [`Latency::to_ns`]).
    Ticks,
}

/// Why two recordings could not be merged.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MergeError {
    /// One holds nanoseconds, the other ticks.
    UnitMismatch {
        /// The unit of the recording merged into.
        into: Unit,
        /// The unit of the recording merged from.
        from: Unit,
    },
    /// hdrhistogram refused the addition.
    Histogram(String),
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeError::UnitMismatch { into, from } => {
                write!(
                    f,
                    "cannot merge a recording in {from:?} into one in {into:?}"
                )
            }
            MergeError::Histogram(e) => write!(f, "histogram addition failed: {e}"),
        }
    }
}

impl std::error::Error for MergeError {}

/// hdrhistogram's reading of a recording, with the exact min and max.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Percentiles {
    /// Number of values recorded.
    pub count: u64,
    /// Exact smallest value (0 when empty).
    pub min: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    #[serde(rename = "p99.9")]
    pub p999: u64,
    /// 99.99th percentile.
    #[serde(rename = "p99.99")]
    pub p9999: u64,
    /// Exact largest value (0 when empty).
    pub max: u64,
    /// Exact mean (0 when empty).
    pub mean: f64,
}

/// The documents' reading: each percentile is the midpoint of its log2/16 bucket.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DocPercentiles {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    #[serde(rename = "p99.9")]
    pub p999: f64,
    /// 99.99th percentile.
    #[serde(rename = "p99.99")]
    pub p9999: f64,
}

/// One point of a complementary CDF: the fraction of values at or above `value`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CcdfPoint {
    /// The smallest value of an hdr bucket that holds data.
    pub value: u64,
    /// Fraction of all values that are `>= value` (1.0 at the minimum).
    pub fraction: f64,
}

/// One bucket of a probability density, in the documents' log2/16 buckets.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PdfBucket {
    /// Smallest value in the bucket.
    pub lower: u64,
    /// Largest value in the bucket.
    pub upper: u64,
    /// Values recorded in the bucket.
    pub count: u64,
    /// `count / total`.
    pub fraction: f64,
    /// `fraction / width`: per-unit density, comparable across bucket widths.
    pub density: f64,
}

/// A latency recording: hdrhistogram at 3 significant figures plus exact min, max
/// and sum.
#[derive(Clone)]
pub struct Latency {
    unit: Unit,
    hist: Histogram<u64>,
    min: u64,
    max: u64,
    sum: u128,
}

impl Default for Latency {
    fn default() -> Self {
        Latency::new()
    }
}

impl fmt::Debug for Latency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Latency")
            .field("unit", &self.unit)
            .field("percentiles", &self.percentiles())
            .finish()
    }
}

impl Latency {
    /// An empty recording in nanoseconds.
    ///
    /// ```
    /// assert_eq!(handoff_stats::Latency::new().count(), 0);
    /// ```
    pub fn new() -> Latency {
        Latency::with_unit(Unit::Ns)
    }

    /// An empty recording in the given unit.
    ///
    /// ```
    /// use handoff_stats::{Latency, Unit};
    /// assert_eq!(Latency::with_unit(Unit::Ticks).unit(), Unit::Ticks);
    /// ```
    pub fn with_unit(unit: Unit) -> Latency {
        Latency {
            unit,
            hist: Histogram::new(SIGFIG)
                .expect("3 significant figures is a valid hdrhistogram precision"),
            min: u64::MAX,
            max: 0,
            sum: 0,
        }
    }

    /// The unit of the recorded values.
    ///
    /// ```
    /// assert_eq!(handoff_stats::Latency::new().unit(), handoff_stats::Unit::Ns);
    /// ```
    pub fn unit(&self) -> Unit {
        self.unit
    }

    /// Records one value (any `u64`: the histogram grows as needed).
    ///
    /// ```
    /// let mut l = handoff_stats::Latency::new();
    /// l.record(250);
    /// assert_eq!(l.max(), 250);
    /// ```
    #[inline]
    pub fn record(&mut self, value: u64) {
        self.record_n(value, 1);
    }

    /// Records `value` `count` times.
    ///
    /// ```
    /// let mut l = handoff_stats::Latency::new();
    /// l.record_n(10, 3);
    /// assert_eq!(l.count(), 3);
    /// ```
    #[inline]
    pub fn record_n(&mut self, value: u64, count: u64) {
        if count == 0 {
            return;
        }
        hdr_record(&mut self.hist, value, count);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        self.sum += u128::from(value) * u128::from(count);
    }

    /// Number of values recorded.
    ///
    /// ```
    /// assert_eq!(handoff_stats::Latency::new().count(), 0);
    /// ```
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// Exact smallest value (0 when empty).
    ///
    /// ```
    /// let mut l = handoff_stats::Latency::new();
    /// l.record(12_345);
    /// assert_eq!(l.min(), 12_345);
    /// ```
    pub fn min(&self) -> u64 {
        if self.count() == 0 {
            0
        } else {
            self.min
        }
    }

    /// Exact largest value (0 when empty).
    ///
    /// ```
    /// let mut l = handoff_stats::Latency::new();
    /// l.record(12_345);
    /// assert_eq!(l.max(), 12_345);
    /// ```
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Exact mean (0 when empty).
    ///
    /// ```
    /// let mut l = handoff_stats::Latency::new();
    /// l.record(1);
    /// l.record(2);
    /// assert_eq!(l.mean(), 1.5);
    /// ```
    pub fn mean(&self) -> f64 {
        match self.count() {
            0 => 0.0,
            n => self.sum as f64 / n as f64,
        }
    }

    /// The value at quantile `q` (0.0 to 1.0) by hdrhistogram, clamped to the exact
    /// min and max. hdrhistogram takes the value of rank `floor(q * count)` (at least
    /// 1); the documents' reading ([`doc_percentiles`](Self::doc_percentiles)) takes
    /// rank `ceil(q * count)`. The two differ only for small counts.
    ///
    /// ```
    /// let mut l = handoff_stats::Latency::new();
    /// for v in 1..=100 { l.record(v); }
    /// assert_eq!(l.value_at_quantile(0.99), 99);
    /// ```
    pub fn value_at_quantile(&self, q: f64) -> u64 {
        if self.count() == 0 {
            return 0;
        }
        self.hist.value_at_quantile(q).clamp(self.min(), self.max())
    }

    /// hdrhistogram's percentiles with exact min, max and mean.
    ///
    /// ```
    /// let mut l = handoff_stats::Latency::new();
    /// for v in 1..=1000 { l.record(v); }
    /// let p = l.percentiles();
    /// assert_eq!((p.p50, p.p99, p.max), (500, 990, 1000));
    /// ```
    pub fn percentiles(&self) -> Percentiles {
        let [p50, p90, p99, p999, p9999] = QUANTILES.map(|q| self.value_at_quantile(q));
        Percentiles {
            count: self.count(),
            min: self.min(),
            p50,
            p90,
            p99,
            p999,
            p9999,
            max: self.max(),
            mean: self.mean(),
        }
    }

    /// The recorded data re-binned into the documents' log2/16 buckets, in order,
    /// empty buckets left out.
    ///
    /// ```
    /// let mut l = handoff_stats::Latency::new();
    /// l.record(130);
    /// l.record(131);
    /// l.record(20);
    /// let b = l.doc_buckets();
    /// assert_eq!(b, vec![(handoff_stats::DocBucket::of(20), 1), (handoff_stats::DocBucket::of(130), 2)]);
    /// ```
    pub fn doc_buckets(&self) -> Vec<(DocBucket, u64)> {
        let mut out: Vec<(DocBucket, u64)> = Vec::new();
        for v in self.hist.iter_recorded() {
            let bucket = DocBucket::of(self.hist.lowest_equivalent(v.value_iterated_to()));
            match out.last_mut() {
                Some((b, n)) if *b == bucket => *n += v.count_at_value(),
                _ => out.push((bucket, v.count_at_value())),
            }
        }
        out
    }

    /// The documents' percentiles: the midpoint of the log2/16 bucket holding the
    /// value of rank `ceil(q * count)`. All zero when empty.
    ///
    /// ```
    /// let mut l = handoff_stats::Latency::new();
    /// for v in 100..200 { l.record(v); }
    /// // rank 50 is the value 149, in bucket 144..=151
    /// assert_eq!(l.doc_percentiles().p50, 147.5);
    /// ```
    pub fn doc_percentiles(&self) -> DocPercentiles {
        let buckets = self.doc_buckets();
        let total = self.count();
        let at = |q: f64| -> f64 {
            if total == 0 {
                return 0.0;
            }
            let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
            let mut seen = 0;
            for (b, n) in &buckets {
                seen += n;
                if seen >= rank {
                    return b.midpoint();
                }
            }
            buckets.last().map_or(0.0, |(b, _)| b.midpoint())
        };
        let [p50, p90, p99, p999, p9999] = QUANTILES.map(at);
        DocPercentiles {
            p50,
            p90,
            p99,
            p999,
            p9999,
        }
    }

    /// Adds another recording of the same unit (several runs into one).
    ///
    /// ```
    /// use handoff_stats::{Latency, Unit};
    /// let mut a = Latency::new();
    /// a.record(5);
    /// let mut b = Latency::new();
    /// b.record(50);
    /// a.merge(&b).unwrap();
    /// assert_eq!((a.count(), a.min(), a.max()), (2, 5, 50));
    /// assert!(a.merge(&Latency::with_unit(Unit::Ticks)).is_err());
    /// ```
    pub fn merge(&mut self, other: &Latency) -> Result<(), MergeError> {
        if self.unit != other.unit {
            return Err(MergeError::UnitMismatch {
                into: self.unit,
                from: other.unit,
            });
        }
        if other.count() == 0 {
            return Ok(());
        }
        self.hist
            .add(&other.hist)
            .map_err(|e| MergeError::Histogram(format!("{e:?}")))?;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        Ok(())
    }

    /// Converts a recording in ticks to nanoseconds with `clock`'s calibration. Each
    /// hdr bucket moves as a whole (to the conversion of its middle value); min, max
    /// and mean are converted exactly. A recording already in nanoseconds is cloned.
    ///
    /// ```
    /// use handoff_stats::{Latency, Unit};
    /// let clock = handoff_clock::Clock::monotonic(); // 1 tick = 1 ns
    /// let mut t = Latency::with_unit(Unit::Ticks);
    /// t.record(300);
    /// let ns = t.to_ns(&clock);
    /// assert_eq!((ns.unit(), ns.max()), (Unit::Ns, 300));
    /// ```
    pub fn to_ns(&self, clock: &handoff_clock::Clock) -> Latency {
        if self.unit == Unit::Ns {
            return self.clone();
        }
        let mut out = Latency::new();
        for v in self.hist.iter_recorded() {
            let mid = self.hist.median_equivalent(v.value_iterated_to());
            hdr_record(&mut out.hist, clock.ticks_to_ns(mid), v.count_at_value());
        }
        if self.count() > 0 {
            out.min = clock.ticks_to_ns(self.min);
            out.max = clock.ticks_to_ns(self.max);
            out.sum = (self.sum as f64 * clock.ticks_to_ns_f64(1)).round() as u128;
        }
        out
    }

    /// The complementary CDF: for each hdr bucket that holds data, its lowest value
    /// and the fraction of values at or above it. Plot on log-log axes.
    ///
    /// ```
    /// let mut l = handoff_stats::Latency::new();
    /// for v in [10, 10, 20, 40] { l.record(v); }
    /// let c = l.ccdf();
    /// assert_eq!((c[0].value, c[0].fraction), (10, 1.0));
    /// assert_eq!((c[2].value, c[2].fraction), (40, 0.25));
    /// ```
    pub fn ccdf(&self) -> Vec<CcdfPoint> {
        let total = self.count() as f64;
        let mut remaining = self.count();
        let mut out = Vec::new();
        for v in self.hist.iter_recorded() {
            out.push(CcdfPoint {
                value: self.hist.lowest_equivalent(v.value_iterated_to()),
                fraction: remaining as f64 / total,
            });
            remaining -= v.count_at_value();
        }
        out
    }

    /// The probability density over the documents' log2/16 buckets (empty buckets
    /// left out). Each bucket's `fraction` is its share of all values.
    ///
    /// ```
    /// let mut l = handoff_stats::Latency::new();
    /// for v in [100, 101, 300] { l.record(v); }
    /// let pdf = l.pdf();
    /// assert_eq!(pdf.len(), 2);
    /// assert!((pdf.iter().map(|b| b.fraction).sum::<f64>() - 1.0).abs() < 1e-12);
    /// ```
    pub fn pdf(&self) -> Vec<PdfBucket> {
        let total = self.count() as f64;
        self.doc_buckets()
            .into_iter()
            .map(|(b, count)| {
                let fraction = count as f64 / total;
                PdfBucket {
                    lower: b.lower,
                    upper: b.upper,
                    count,
                    fraction,
                    density: fraction / b.width() as f64,
                }
            })
            .collect()
    }

    /// The underlying hdrhistogram.
    ///
    /// ```
    /// let mut l = handoff_stats::Latency::new();
    /// l.record(1);
    /// assert_eq!(l.histogram().len(), 1);
    /// ```
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }
}

/// Records into an auto-resizing histogram. Resizing can only fail if the histogram
/// cannot grow (allocation), in which case the value is clamped into its range rather
/// than lost; exact min/max are kept by the caller either way.
#[inline]
fn hdr_record(hist: &mut Histogram<u64>, value: u64, count: u64) {
    if hist.record_n(value, count).is_err() {
        hist.saturating_record_n(value, count);
    }
}

/// The serialised form: the readings (for people and tools reading the JSON) and the
/// histogram itself (for merging and re-reading), as a base64 HdrHistogram V2
/// deflate blob.
#[derive(Serialize, Deserialize)]
struct Repr {
    unit: Unit,
    #[serde(flatten)]
    percentiles: Percentiles,
    doc_convention: DocPercentiles,
    sum: u128,
    hdr_v2_deflate_base64: String,
}

impl Serialize for Latency {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.hist, &mut bytes)
            .map_err(|e| serde::ser::Error::custom(format!("hdrhistogram serialisation: {e:?}")))?;
        Repr {
            unit: self.unit,
            percentiles: self.percentiles(),
            doc_convention: self.doc_percentiles(),
            sum: self.sum,
            hdr_v2_deflate_base64: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Latency {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let repr = Repr::deserialize(d)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&repr.hdr_v2_deflate_base64)
            .map_err(|e| D::Error::custom(format!("histogram base64: {e}")))?;
        let mut hist: Histogram<u64> = HdrDeserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| D::Error::custom(format!("histogram V2 blob: {e:?}")))?;
        hist.auto(true);
        if hist.len() != repr.percentiles.count {
            return Err(D::Error::custom(format!(
                "histogram holds {} values but count says {}",
                hist.len(),
                repr.percentiles.count
            )));
        }
        Ok(Latency {
            unit: repr.unit,
            hist,
            min: if repr.percentiles.count == 0 {
                u64::MAX
            } else {
                repr.percentiles.min
            },
            max: repr.percentiles.max,
            sum: repr.sum,
        })
    }
}
