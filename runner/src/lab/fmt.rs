//! Number formatting for every report: one place, so that every experiment prints a
//! latency, a rate or a duration the same way.

/// A latency for a table cell: `132 ns`, `12.3 us`, `12.35 ms`; `-` when not finite.
///
/// ```
/// use runner::lab::fmt::ns;
/// assert_eq!((ns(132.0), ns(12_345.0), ns(12_345_678.0), ns(f64::NAN)),
///            ("132 ns".into(), "12.3 us".into(), "12.35 ms".into(), "-".into()));
/// ```
pub fn ns(ns: f64) -> String {
    if !ns.is_finite() {
        "-".into()
    } else if ns < 10_000.0 {
        format!("{ns:.0} ns")
    } else if ns < 10_000_000.0 {
        format!("{:.1} us", ns / 1e3)
    } else {
        format!("{:.2} ms", ns / 1e6)
    }
}

/// An offered or achieved rate: `100 kHz`, `1.00 MHz`, `14.70 MHz`.
///
/// ```
/// use runner::lab::fmt::rate;
/// assert_eq!((rate(1e5), rate(1e6), rate(1.47e7)), ("100 kHz".into(), "1.00 MHz".into(), "14.70 MHz".into()));
/// ```
pub fn rate(hz: f64) -> String {
    if hz >= 1e6 {
        format!("{:.2} MHz", hz / 1e6)
    } else {
        format!("{:.0} kHz", hz / 1e3)
    }
}

/// Operations per second: `100 k/s`, `1.00 M/s`, `2.68 M/s`.
///
/// ```
/// use runner::lab::fmt::ops;
/// assert_eq!((ops(1e5), ops(3.72e5), ops(2.683e6)), ("100 k/s".into(), "372 k/s".into(), "2.68 M/s".into()));
/// ```
pub fn ops(per_s: f64) -> String {
    if per_s >= 1e6 {
        format!("{:.2} M/s", per_s / 1e6)
    } else {
        format!("{:.0} k/s", per_s / 1e3)
    }
}

/// Items per second in millions: `14.70 M/s`; `-` for none.
///
/// ```
/// use runner::lab::fmt::mps;
/// assert_eq!((mps(Some(14.7e6)), mps(None)), ("14.70 M/s".into(), "-".into()));
/// ```
pub fn mps(v: Option<f64>) -> String {
    v.map(|v| format!("{:.2} M/s", v / 1e6))
        .unwrap_or_else(|| "-".into())
}
/// Numbers as an English list: `1`, `1 and 2`, `1, 2 and 3` (empty for none).
///
/// ```
/// use runner::lab::fmt::and_list;
/// assert_eq!((and_list(&[]), and_list(&[4]), and_list(&[4, 5]), and_list(&[1, 2, 3])),
///            ("".into(), "4".into(), "4 and 5".into(), "1, 2 and 3".into()));
/// ```
pub fn and_list(items: &[usize]) -> String {
    let words: Vec<String> = items.iter().map(ToString::to_string).collect();
    match words.len() {
        0 => String::new(),
        1 => words[0].clone(),
        n => format!("{} and {}", words[..n - 1].join(", "), words[n - 1]),
    }
}

/// A short duration inside a sentence: `850ns`, `17us`, `2.5ms`, `0`.
///
/// ```
/// use runner::lab::fmt::dur;
/// assert_eq!((dur(850), dur(17_000), dur(2_500_000), dur(0)), ("850ns".into(), "17us".into(), "2.5ms".into(), "0".into()));
/// ```
pub fn dur(ns: u64) -> String {
    match ns {
        0 => "0".into(),
        n if n < 1_000 => format!("{n}ns"),
        n if n < 1_000_000 => format!("{}us", trim(n as f64 / 1e3)),
        n => format!("{}ms", trim(n as f64 / 1e6)),
    }
}

fn trim(x: f64) -> String {
    if x >= 100.0 || x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// The current UTC time as RFC 3339 (`2026-11-22T10:15:00Z`).
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs)
}

/// Formats seconds since the Unix epoch as RFC 3339 UTC.
///
/// ```
/// use runner::lab::fmt::rfc3339;
/// assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
/// assert_eq!(rfc3339(1_795_349_700), "2026-11-22T12:15:00Z");
/// ```
pub fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
