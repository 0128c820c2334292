//! The allocator's settings: how soon a live thread gives its free memory back to the
//! system, or whether it ever does on its own.
//!
//! A thread that keeps allocating looks at its heap's free stock on its slow path (a
//! magazine refill or spill) at most once per purge delay, and gives back the pages of
//! stock it has not used for that long (`madvise(MADV_DONTNEED)`, a system call on
//! that thread). With purging off, no live thread ever does: its free memory goes
//! back only when it calls [`trim`](crate::trim) (at a moment it chooses) and when it
//! exits, so a latency-critical thread never makes that system call by itself. The
//! look itself still comes, every 250 ms at most: it takes the blocks other threads
//! returned to the heap and sends the thread's own remote frees on, which needs no
//! system call (taking many returned blocks may commit room for the depot's entries,
//! an `mprotect`, as a spill does).
//!
//! Set it with [`set_purge_delay`], or before the program starts with the environment
//! variable `HANDOFF_ALLOC_PURGE_DELAY_MS` (milliseconds, or `off`), which
//! [`set_purge_delay`] overrides. The default is 250 ms.

use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;

/// The default purge delay: 250 ms.
pub const DEFAULT_PURGE_DELAY: Duration = Duration::from_millis(250);

/// The environment variable read (once, at the first look) when [`set_purge_delay`]
/// has not been called: a number of milliseconds, or `off` (also `never`, `none`).
pub const PURGE_DELAY_ENV: &str = "HANDOFF_ALLOC_PURGE_DELAY_MS";

/// Purging off.
const NEVER: u64 = u64::MAX;
/// Not yet decided: the environment is read at the first look.
const UNSET: u64 = u64::MAX - 1;
/// The longest delay kept as a delay (about 584 years less two nanoseconds); anything
/// longer is the same as off.
const LONGEST: u64 = u64::MAX - 2;

/// The delay in nanoseconds, [`NEVER`], or [`UNSET`].
static PURGE_DELAY_NS: AtomicU64 = AtomicU64::new(UNSET);

/// Sets how long a live thread's unused free memory stays resident before the thread
/// gives it back (`Some`), or turns that off (`None`: only [`trim`](crate::trim) and
/// thread exit give it back). Takes effect at each thread's next look (within 256
/// slow-path calls). Overrides `HANDOFF_ALLOC_PURGE_DELAY_MS`.
///
/// ```
/// use std::time::Duration;
/// handoff_alloc::set_purge_delay(None); // the hot threads never purge by themselves
/// assert_eq!(handoff_alloc::purge_delay(), None);
/// handoff_alloc::set_purge_delay(Some(Duration::from_secs(2)));
/// assert_eq!(handoff_alloc::purge_delay(), Some(Duration::from_secs(2)));
/// ```
pub fn set_purge_delay(delay: Option<Duration>) {
    let ns = match delay {
        None => NEVER,
        Some(d) => {
            u64::try_from(d.as_nanos()).map_or(NEVER, |ns| if ns > LONGEST { NEVER } else { ns })
        }
    };
    // Relaxed: a setting each thread reads at its next look; nothing else is
    // published with it.
    PURGE_DELAY_NS.store(ns, Ordering::Relaxed);
}

/// The purge delay in force: `None` when purging is off (see [`set_purge_delay`]).
///
/// ```
/// // Whatever the environment said, or 250 ms.
/// let _ = handoff_alloc::purge_delay();
/// ```
pub fn purge_delay() -> Option<Duration> {
    match purge_delay_ns() {
        NEVER => None,
        ns => Some(Duration::from_nanos(ns)),
    }
}

/// The delay in nanoseconds, or `u64::MAX` when purging is off; reads the environment
/// the first time. No allocation: the allocator calls it.
#[inline]
pub(crate) fn purge_delay_ns() -> u64 {
    // Relaxed: see `set_purge_delay`.
    match PURGE_DELAY_NS.load(Ordering::Relaxed) {
        UNSET => from_environment(),
        ns => ns,
    }
}

#[cold]
#[inline(never)]
fn from_environment() -> u64 {
    let (ns, bad) = match read_env() {
        Some(Ok(ns)) => (ns, false),
        Some(Err(())) => (default_ns(), true),
        None => (default_ns(), false),
    };
    // Only if nobody set it meanwhile (a setter wins over the environment); the thread
    // that stores it is the one that says a bad value was there, so it is said once.
    let stored = PURGE_DELAY_NS
        .compare_exchange(UNSET, ns, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok();
    if stored && bad {
        complain();
    }
    PURGE_DELAY_NS.load(Ordering::Relaxed)
}

/// Reads the environment now, if nothing has yet: called when the allocator reserves
/// its arena (a process's first allocation, usually before any other thread runs), so
/// that the `getenv` does not come later, beside a thread that changes the
/// environment.
#[cfg_attr(
    not(all(target_os = "linux", target_pointer_width = "64", not(loom))),
    allow(dead_code)
)]
pub(crate) fn settle() {
    let _ = purge_delay_ns();
}

fn default_ns() -> u64 {
    DEFAULT_PURGE_DELAY.as_nanos() as u64
}

/// The variable's value parsed: `None` when unset, `Err` when it says nothing we
/// understand.
fn read_env() -> Option<Result<u64, ()>> {
    #[cfg(unix)]
    {
        // SAFETY: a NUL-terminated name; `getenv` returns NULL or a pointer to a
        // NUL-terminated string in the environment, which we read at once. (A thread
        // changing the environment meanwhile is the caller's race, as for every
        // `getenv`; Rust's `set_var` is `unsafe` for that reason.)
        let value = unsafe { libc::getenv(c"HANDOFF_ALLOC_PURGE_DELAY_MS".as_ptr()) };
        if value.is_null() {
            return None;
        }
        // SAFETY: as above.
        let bytes = unsafe { core::ffi::CStr::from_ptr(value) }.to_bytes();
        Some(parse(bytes))
    }
    #[cfg(not(unix))]
    None
}

/// `off` / `never` / `none` (any case), or whole milliseconds.
fn parse(bytes: &[u8]) -> Result<u64, ()> {
    let s = core::str::from_utf8(bytes).map_err(|_| ())?.trim();
    if ["off", "never", "none"]
        .iter()
        .any(|w| s.eq_ignore_ascii_case(w))
    {
        return Ok(NEVER);
    }
    let ms: u64 = s.parse().map_err(|_| ())?;
    Ok(ms
        .checked_mul(1_000_000)
        .filter(|&ns| ns <= LONGEST)
        .unwrap_or(NEVER))
}

/// One line on standard error, written without allocating.
fn complain() {
    #[cfg(unix)]
    {
        let line: &[u8] = b"handoff-alloc: HANDOFF_ALLOC_PURGE_DELAY_MS is neither a number of milliseconds nor 'off'; using the default, 250 ms\n";
        // SAFETY: writes `line.len()` bytes from a valid buffer to fd 2; a failure is
        // ignored (there is nowhere else to say it).
        let _ = unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_is_parsed_as_documented() {
        assert_eq!(parse(b"250"), Ok(250_000_000));
        assert_eq!(parse(b" 0 "), Ok(0));
        assert_eq!(parse(b"off"), Ok(NEVER));
        assert_eq!(parse(b"Never"), Ok(NEVER));
        assert_eq!(parse(b"NONE"), Ok(NEVER));
        assert_eq!(parse(b"18446744073709551615"), Ok(NEVER));
        assert_eq!(parse(b"-1"), Err(()));
        assert_eq!(parse(b"1.5"), Err(()));
        assert_eq!(parse(b"soon"), Err(()));
        assert_eq!(parse(b""), Err(()));
        assert_eq!(parse(&[0xff]), Err(()));
    }
}
