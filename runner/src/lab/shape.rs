//! The shape of a latency distribution: how many peaks its PDF has, where, and how
//! much of the distribution each holds.
//!
//! The documents describe their PDFs in words ("sharply peaked", "bimodal: a fast path
//! and a wake-up tail"); these functions turn a histogram into the figures those words
//! stand for. The PDF is read in the documents' convention (log2 buckets of 16
//! sub-buckets, so every bucket is 1/16 of an octave wide and a bucket's share is the
//! density on the log axis the charts draw), smoothed over five buckets (a quarter
//! octave, which irons out the clock's step), and split into peaks at its valleys. Two
//! neighbouring peaks count as one when the valley between them stays above half the
//! lower peak: a shoulder is not a second mode.

use handoff_stats::{DocBucket, Latency};

/// One peak of a distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Peak {
    /// The bucket of the peak holding the most samples (ns, its midpoint).
    pub at_ns: f64,
    /// Share of all samples between the valleys on either side of the peak.
    pub share: f64,
}

/// Index of a documents'-convention bucket on one axis: values under 16 one each, then
/// 16 per power of two.
fn index(b: DocBucket) -> usize {
    let v = b.lower;
    if v < 16 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros() as usize; // >= 4
    16 + (e - 4) * 16 + ((v >> (e - 4)) as usize - 16)
}

/// The inverse of [`index`]: the bucket's midpoint.
fn midpoint(i: usize) -> f64 {
    if i < 16 {
        return i as f64;
    }
    let e = (i - 16) / 16 + 4;
    let lower = ((16 + (i - 16) % 16) as u64) << (e - 4);
    DocBucket::of(lower).midpoint()
}

/// The peaks of `latency`'s PDF, highest share first, each holding at least
/// `min_share` of the samples (peaks that hold less are left out, and their samples
/// are in no peak). Empty when nothing was recorded.
///
/// ```
/// use handoff_stats::Latency;
/// use runner::lab::shape::peaks;
/// let mut l = Latency::new();
/// for v in 0..9000u64 { l.record(100 + v % 20); }     // a fast mode near 110
/// for v in 0..1000u64 { l.record(20_000 + v % 4000); } // a slow one near 22 us
/// let p = peaks(&l, 0.02);
/// assert_eq!(p.len(), 2);
/// assert!((p[0].share - 0.9).abs() < 0.01 && p[0].at_ns < 130.0);
/// assert!((p[1].share - 0.1).abs() < 0.01 && p[1].at_ns > 19_000.0);
/// ```
pub fn peaks(latency: &Latency, min_share: f64) -> Vec<Peak> {
    let total = latency.count();
    let buckets = latency.doc_buckets();
    let (Some(first), Some(last)) = (buckets.first(), buckets.last()) else {
        return Vec::new();
    };
    let (lo, hi) = (index(first.0), index(last.0));
    // Shares per bucket, with two empty buckets either side so smoothing sees edges.
    let pad = 2;
    let mut share = vec![0.0; hi - lo + 1 + 2 * pad];
    for (b, n) in &buckets {
        share[index(*b) - lo + pad] += *n as f64 / total as f64;
    }
    let smooth: Vec<f64> = (0..share.len())
        .map(|i| {
            let a = i.saturating_sub(2);
            let b = (i + 2).min(share.len() - 1);
            share[a..=b].iter().sum::<f64>() / 5.0
        })
        .collect();
    // Local maxima (a plateau counts once, at its first bucket).
    let mut tops: Vec<usize> = (0..smooth.len())
        .filter(|&i| {
            smooth[i] > 0.0
                && (i == 0 || smooth[i] > smooth[i - 1])
                && (i + 1 == smooth.len() || smooth[i] >= smooth[i + 1])
        })
        .collect();
    let valley = |a: usize, b: usize| -> usize {
        (a..=b)
            .min_by(|&x, &y| smooth[x].total_cmp(&smooth[y]))
            .unwrap_or(a)
    };
    // Merge neighbours whose valley stays above half the lower of the two.
    loop {
        let merge = tops.windows(2).position(|w| {
            let low = smooth[w[0]].min(smooth[w[1]]);
            smooth[valley(w[0], w[1])] >= 0.5 * low
        });
        match merge {
            Some(k) => {
                let drop = if smooth[tops[k]] >= smooth[tops[k + 1]] {
                    k + 1
                } else {
                    k
                };
                tops.remove(drop);
            }
            None => break,
        }
    }
    // Each peak owns the buckets from the valley before it to the valley after it.
    let mut cuts = vec![0];
    cuts.extend(tops.windows(2).map(|w| valley(w[0], w[1])));
    cuts.push(share.len());
    let mut out: Vec<Peak> = tops
        .iter()
        .enumerate()
        .map(|(k, &t)| {
            // Where the peak's own buckets hold most (the smoothed top can sit on the
            // edge of a plateau).
            let top = (cuts[k]..cuts[k + 1])
                .max_by(|&x, &y| share[x].total_cmp(&share[y]).then(y.cmp(&x)))
                .unwrap_or(t);
            Peak {
                at_ns: midpoint((top + lo).saturating_sub(pad)),
                share: share[cuts[k]..cuts[k + 1]].iter().sum(),
            }
        })
        .filter(|p| p.share >= min_share)
        .collect();
    out.sort_by(|a, b| b.share.total_cmp(&a.share));
    out
}

/// The peaks as text: "2 peaks: 92% near 110 ns, 8% near 22.5 us".
pub fn describe(peaks: &[Peak]) -> String {
    let list: Vec<String> = peaks
        .iter()
        .map(|p| format!("{:.0}% near {}", p.share * 100.0, super::fmt::ns(p.at_ns)))
        .collect();
    match peaks.len() {
        0 => "no peak".into(),
        1 => format!("1 peak: {}", list[0]),
        n => format!("{n} peaks: {}", list.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_and_midpoint_agree_with_doc_buckets() {
        for v in [0u64, 7, 15, 16, 31, 32, 100, 130, 1000, 65_535, 1 << 40] {
            let b = DocBucket::of(v);
            assert_eq!(midpoint(index(b)), b.midpoint(), "value {v}");
            assert_eq!(index(DocBucket::of(b.upper)), index(b));
            assert_eq!(index(DocBucket::of(b.upper + 1)), index(b) + 1);
        }
    }

    #[test]
    fn one_sharp_peak_is_one_peak() {
        let mut l = Latency::new();
        // The clock's step: values on a 10 ns grid around 120 ns.
        for v in 0..10_000u64 {
            l.record(100 + 10 * (v % 5));
        }
        let p = peaks(&l, 0.02);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!((p[0].share - 1.0).abs() < 1e-9);
        assert!((100.0..=140.0).contains(&p[0].at_ns), "{p:?}");
    }

    #[test]
    fn a_shoulder_is_not_a_second_peak() {
        let mut l = Latency::new();
        for v in 0..6000u64 {
            l.record(100 + v % 10);
        }
        // Right next to it, nearly as high: the valley never drops below half.
        for v in 0..5000u64 {
            l.record(118 + v % 10);
        }
        assert_eq!(peaks(&l, 0.02).len(), 1);
    }

    #[test]
    fn small_peaks_are_left_out() {
        let mut l = Latency::new();
        for v in 0..9900u64 {
            l.record(100 + v % 20);
        }
        for _ in 0..100 {
            l.record(50_000);
        }
        assert_eq!(peaks(&l, 0.02).len(), 1);
        assert_eq!(peaks(&l, 0.005).len(), 2);
        assert!(peaks(&Latency::new(), 0.02).is_empty());
    }

    #[test]
    fn describe_lists_each_peak() {
        let p = [
            Peak {
                at_ns: 110.0,
                share: 0.92,
            },
            Peak {
                at_ns: 22_500.0,
                share: 0.08,
            },
        ];
        assert_eq!(describe(&p), "2 peaks: 92% near 110 ns, 8% near 22.5 us");
        assert_eq!(describe(&p[..1]), "1 peak: 92% near 110 ns");
        assert_eq!(describe(&[]), "no peak");
    }
}
