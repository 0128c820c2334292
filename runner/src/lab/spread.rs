//! Whether one set of repeats varies less than another: the F test the claims on
//! spread use (`lab::claims` re-exports both functions).

/// Upper 5% points of the F distribution with `d` and `d` degrees of freedom, from the
/// standard tables: (d, F). Between entries the smaller `d` is used (a stricter test).
const F95: [(usize, f64); 18] = [
    (1, 161.45),
    (2, 19.00),
    (3, 9.28),
    (4, 6.39),
    (5, 5.05),
    (6, 4.28),
    (7, 3.79),
    (8, 3.44),
    (9, 3.18),
    (10, 2.98),
    (12, 2.69),
    (15, 2.40),
    (20, 2.12),
    (24, 1.98),
    (30, 1.84),
    (40, 1.69),
    (60, 1.53),
    (120, 1.35),
];

/// The sample variance of `v` (n - 1 in the denominator); `None` under two values.
pub fn variance(v: &[f64]) -> Option<f64> {
    let n = v.len();
    (n >= 2).then(|| {
        let mean = v.iter().sum::<f64>() / n as f64;
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
    })
}

/// Whether the values of `a` vary less than those of `b`, as far as the samples can
/// tell: `Some(true)` when b's variance exceeds a's by more than the upper 5% point of
/// the F distribution for their degrees of freedom (the smaller of the two samples),
/// `Some(false)` when a's exceeds b's by as much, `None` when the two are closer than
/// that (or either has under two values). Returns the variance ratio b / a beside it.
///
/// ```
/// use runner::lab::claims::spread_lower;
/// let tight = [100.0, 100.1, 99.9, 100.0, 100.05];
/// let loose = [100.0, 103.0, 97.0, 101.0, 99.0];
/// assert_eq!(spread_lower(&tight, &loose).0, Some(true));
/// assert_eq!(spread_lower(&loose, &tight).0, Some(false));
/// // Five runs each cannot tell apart spreads within a factor of 6.39 in variance.
/// let other = [100.0, 101.5, 98.5, 100.5, 99.5];
/// assert_eq!(spread_lower(&other, &loose).0, None);
/// ```
pub fn spread_lower(a: &[f64], b: &[f64]) -> (Option<bool>, f64) {
    let (Some(va), Some(vb)) = (variance(a), variance(b)) else {
        return (None, f64::NAN);
    };
    let d = a.len().min(b.len()) - 1;
    let crit = F95
        .iter()
        .rev()
        .find(|(k, _)| *k <= d)
        .map_or(F95[0].1, |&(_, f)| f);
    let ratio = vb / va;
    let verdict = if vb > va * crit {
        Some(true)
    } else if va > vb * crit {
        Some(false)
    } else {
        None
    };
    (verdict, ratio)
}
