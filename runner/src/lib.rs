//! The handoff lab. Each experiment of `experiments` reproduces one source document
//! (`runner queue`: the SPSC queue document); the `lab` module is the frame they all
//! plug into: the run's lifecycle, the timed N-role harness, pins, pacing, noise,
//! environment, claims, formatting, charts and atomic results.

pub mod cli;
pub mod experiments;
pub mod lab;

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
/// assert_eq!(runner::rfc3339(0), "1970-01-01T00:00:00Z");
/// assert_eq!(runner::rfc3339(1_795_349_700), "2026-11-22T12:15:00Z");
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
