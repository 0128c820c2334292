//! Whether one set of repeats varies less than another: the Brown-Forsythe test the claims on
//! spread use (`lab::claims` re-exports both functions).

/// Two-sided 5% points of Student's t distribution, from the standard tables: (degrees
/// of freedom, t). Between entries the smaller number of degrees is used (a stricter test).
const T975: [(usize, f64); 20] = [
    (1, 12.71),
    (2, 4.30),
    (3, 3.18),
    (4, 2.78),
    (5, 2.57),
    (6, 2.45),
    (7, 2.36),
    (8, 2.31),
    (9, 2.26),
    (10, 2.23),
    (12, 2.18),
    (14, 2.14),
    (16, 2.12),
    (18, 2.10),
    (20, 2.09),
    (24, 2.06),
    (30, 2.04),
    (40, 2.02),
    (60, 2.00),
    (120, 1.98),
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
/// tell, by the Brown-Forsythe test: each value's distance from its sample's median,
/// the two samples' mean distances compared by a t test at 5% (two-sided). `Some(true)`
/// when b's distances are the larger beyond it, `Some(false)` when a's are, `None` when
/// the test cannot tell (or either sample has under two values). Returns the variance
/// ratio b / a beside it, for the reader. Under three values a sample's distances cannot
/// vary (two values sit equally far from their median), so the test needs three or more
/// in each sample, and it cannot tell where the distances' spread is rounding error.
/// Not the F test of the variances: that assumes
/// normal samples, and a run's figure here has a heavy tail (a host pause at a run's end
/// moves one run of nine 3% while the rest agree within 0.01%), which made the F test
/// read one way and then the other from one `runner all` to the next.
///
/// ```
/// use runner::lab::claims::spread_lower;
/// let tight = [100.0, 100.1, 99.9, 100.0, 100.05];
/// let loose = [100.0, 103.0, 97.0, 101.0, 99.0];
/// assert_eq!(spread_lower(&tight, &loose).0, Some(true));
/// assert_eq!(spread_lower(&loose, &tight).0, Some(false));
/// // Five runs each cannot tell these two apart.
/// let other = [100.0, 101.5, 98.5, 100.5, 99.5];
/// assert_eq!(spread_lower(&other, &loose).0, None);
/// // Nine paced runs (k items/s, pipeline, 2026-12-05) near 1000.2 with dips where a
/// // host pause met a run's end: the F test read malloc's variance below the
/// // freelist's (ratio 0.28 beyond its 3.44), the distances cannot tell them apart.
/// let freelist = [1001.0, 1000.2, 969.6, 1000.1, 1000.2, 996.4, 1000.2, 1000.2, 992.6];
/// let malloc = [999.3, 999.4, 983.9, 1000.2, 1000.2, 999.5, 1000.2, 1000.2, 1000.2];
/// assert_eq!(spread_lower(&freelist, &malloc).0, None);
/// // Two runs each (`runner all --quick`): nothing to tell.
/// assert_eq!(spread_lower(&[100.0, 100.01], &[100.0, 100.02]).0, None);
/// ```
pub fn spread_lower(a: &[f64], b: &[f64]) -> (Option<bool>, f64) {
    let (Some(va), Some(vb)) = (variance(a), variance(b)) else {
        return (None, f64::NAN);
    };
    let ratio = vb / va;
    if a.len() < 3 || b.len() < 3 {
        return (None, ratio);
    }
    let dist = |v: &[f64]| -> Vec<f64> {
        let med = super::measure::median(v.to_vec()).unwrap_or(f64::NAN);
        v.iter().map(|x| (x - med).abs()).collect()
    };
    let (za, zb) = (dist(a), dist(b));
    let mean = |z: &[f64]| z.iter().sum::<f64>() / z.len() as f64;
    let (na, nb) = (za.len() as f64, zb.len() as f64);
    let df = za.len() + zb.len() - 2;
    // Pooled variance of the distances; variance() is Some for two values or more.
    let pooled = ((na - 1.0) * variance(&za).unwrap_or(0.0)
        + (nb - 1.0) * variance(&zb).unwrap_or(0.0))
        / df as f64;
    let diff = mean(&zb) - mean(&za);
    let se = (pooled * (1.0 / na + 1.0 / nb)).sqrt();
    let crit = T975
        .iter()
        .rev()
        .find(|(k, _)| *k <= df)
        .map_or(T975[0].1, |&(_, t)| t);
    // Distances that do not vary beyond rounding error: nothing to test.
    let tiny = se.is_nan() || se <= 1e-9 * mean(&za).max(mean(&zb));
    let verdict = if tiny {
        None
    } else if diff.abs() > crit * se {
        Some(diff > 0.0)
    } else {
        None
    };
    (verdict, ratio)
}
