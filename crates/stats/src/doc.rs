//! The source documents' histogram convention: log2 buckets split into 16 linear
//! sub-buckets, a percentile read as the midpoint of the bucket it falls in.
//!
//! Values below 16 have a bucket each (width 1). From 16 up, the power-of-two range
//! `[2^e, 2^(e+1))` is split into 16 buckets of width `2^(e-4)`. Every bucket of an
//! hdrhistogram at 3 significant figures lies inside exactly one of these buckets
//! (both are aligned to powers of two and hdr's are no wider), so the convention is
//! computed from the recorded hdr buckets without a second recording.

/// One bucket of the documents' convention: the integers `lower..=upper`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DocBucket {
    /// Smallest value in the bucket.
    pub lower: u64,
    /// Largest value in the bucket.
    pub upper: u64,
}

impl DocBucket {
    /// The bucket that holds `value`.
    ///
    /// ```
    /// use handoff_stats::DocBucket;
    /// assert_eq!(DocBucket::of(7), DocBucket { lower: 7, upper: 7 });
    /// assert_eq!(DocBucket::of(130), DocBucket { lower: 128, upper: 135 });
    /// assert_eq!(DocBucket::of(1000), DocBucket { lower: 992, upper: 1023 });
    /// assert_eq!(DocBucket::of(1000).midpoint(), 1007.5);
    /// ```
    pub fn of(value: u64) -> DocBucket {
        if value < 16 {
            return DocBucket {
                lower: value,
                upper: value,
            };
        }
        let e = 63 - value.leading_zeros(); // floor(log2(value)), >= 4
        let shift = e - 4;
        let lower = (value >> shift) << shift;
        DocBucket {
            lower,
            upper: lower + ((1u64 << shift) - 1),
        }
    }

    /// The bucket's midpoint: the reading a percentile gets in this convention.
    ///
    /// ```
    /// assert_eq!(handoff_stats::DocBucket::of(16).midpoint(), 16.0);
    /// assert_eq!(handoff_stats::DocBucket::of(33).midpoint(), 32.5);
    /// ```
    pub fn midpoint(&self) -> f64 {
        (self.lower as f64 + self.upper as f64) / 2.0
    }

    /// Number of integer values in the bucket.
    ///
    /// ```
    /// assert_eq!(handoff_stats::DocBucket::of(64).width(), 4);
    /// ```
    pub fn width(&self) -> u64 {
        self.upper - self.lower + 1
    }
}
