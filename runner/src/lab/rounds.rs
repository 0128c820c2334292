//! `runner all` in rounds: every experiment runs as one process for the whole run, and
//! its repeats are spread over the rounds, so that they meet the different states a
//! host goes through in minutes (a placement of the two vCPUs, a regime of the mutex
//! queue, a pause) rather than the one minute an experiment would take alone. An
//! experiment measures the runs of round 1, stops itself ([`enter`]), and `runner all`
//! runs every other experiment's round 1 before it lets it go on with round 2; after
//! its last round it judges every claim on all its repeats together, with the rules it
//! applies to any set of repeats (`lab::claims::ratio_at_least`: a margin smaller than
//! the repeats' spread, which now holds the spread between the rounds, is *within
//! noise*), and writes its files once.
//!
//! The loops that run repeats ask [`enter`] before each run, with the round
//! [`round_of`] gives it; outside `runner all` (one round) that costs nothing and never
//! waits.

use super::error::{Error, Result};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The environment variable with which `runner all` tells an experiment's process how
/// many rounds the run has (its standard input is then a pipe from `runner all`).
pub const ROUNDS_ENV: &str = "HANDOFF_ALL_ROUNDS";

/// What `runner all` writes to a paused experiment's standard input before it lets it
/// run again: go on with the next round.
pub const GO_ON: u8 = b'c';

/// What `runner all` writes to a paused experiment when the run stops early (Ctrl-C):
/// measure nothing more, judge the rounds measured and write the files.
pub const FINISH: u8 = b'f';

/// The round this process is in (0 for the first).
static CURRENT: AtomicUsize = AtomicUsize::new(0);

/// Set when `runner all` asked for the files now ([`FINISH`]).
static FINISHING: AtomicBool = AtomicBool::new(false);

/// The rounds of this process: what [`ROUNDS_ENV`] says (1 to 10) when its standard
/// input is a pipe (as `runner all` starts it), else 1. A process outside `runner all`
/// never stops itself, whatever its environment says.
pub fn count() -> usize {
    static COUNT: OnceLock<usize> = OnceLock::new();
    *COUNT.get_or_init(|| {
        let asked = std::env::var(ROUNDS_ENV)
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|n| (1..=10).contains(n))
            .unwrap_or(1);
        let piped = std::fs::metadata("/dev/stdin").is_ok_and(|m| {
            use std::os::unix::fs::FileTypeExt;
            m.file_type().is_fifo()
        });
        if piped {
            asked
        } else {
            1
        }
    })
}

/// The round (from 0) of run `run` of `runs`, the runs shared out in order among
/// `rounds` rounds as evenly as they go (the earlier rounds take the odd ones); fewer
/// runs than rounds are spread over the whole run, one in every few rounds.
///
/// ```
/// use runner::lab::rounds::round_of_in;
/// let of = |runs: usize| (0..runs).map(|r| round_of_in(r, runs, 3)).collect::<Vec<_>>();
/// assert_eq!(of(3), [0, 1, 2]);
/// assert_eq!(of(5), [0, 0, 1, 1, 2]);
/// assert_eq!(of(9), [0, 0, 0, 1, 1, 1, 2, 2, 2]);
/// assert_eq!(round_of_in(4, 5, 1), 0);
/// // Fewer runs than rounds: spread over the whole run.
/// let spread: Vec<usize> = (0..3).map(|r| round_of_in(r, 3, 9)).collect();
/// assert_eq!(spread, [0, 3, 6]);
/// ```
pub fn round_of_in(run: usize, runs: usize, rounds: usize) -> usize {
    let rounds = rounds.max(1);
    if runs < rounds {
        return run * rounds / runs.max(1);
    }
    // The first `runs % rounds` rounds take one run more.
    let (each, extra) = (runs / rounds, runs % rounds);
    let long = extra * (each + 1);
    if run < long {
        run / (each + 1)
    } else {
        extra + (run - long) / each
    }
}

/// [`round_of_in`] with this process's rounds ([`count`]).
pub fn round_of(run: usize, runs: usize) -> usize {
    round_of_in(run, runs, count())
}

/// The runs an experiment measures in every round when it is given `runs` for the
/// whole run and needs at least one in each round: `runs`, or the number of rounds if
/// that is more (the pipeline's sweep, one run alone, is measured once per round).
pub fn at_least_one_each(runs: usize) -> usize {
    runs.max(count())
}

/// What a claim's reason says of its repeats in a run of several rounds (" spread over
/// 9 rounds"); empty outside `runner all`.
pub fn spread_note() -> String {
    if count() > 1 {
        format!(" (spread over {} rounds)", count())
    } else {
        String::new()
    }
}

/// The round this process is in (from 0).
pub fn current() -> usize {
    CURRENT.load(Ordering::Relaxed)
}

/// Whether `runner all` asked this process to stop measuring and write its files
/// ([`FINISH`]).
pub fn finishing() -> bool {
    FINISHING.load(Ordering::Relaxed)
}

/// Called before a run of round `round` (from 0; [`round_of`]): returns at once while
/// the process is in that round already; at the first run of a later round, the
/// process stops itself (`SIGSTOP`) until `runner all` lets it go on, then reads what
/// to do from its standard input. `Ok(true)`: measure the run; `Ok(false)`: `runner
/// all` asked for the files now (the run stopped early), so measure nothing more.
/// Outside `runner all` always `Ok(true)`.
pub fn enter(round: usize) -> Result<bool> {
    if finishing() {
        return Ok(false);
    }
    if count() == 1 {
        return Ok(true);
    }
    while current() < round.min(count() - 1) {
        let done = current() + 1;
        // A failure asked for by a test, at the end of the round it names.
        crate::all::failure_asked_in_round(done)?;
        if !parent_alive() {
            // `runner all` is gone: nothing would let this process go on, and a
            // stopped process whose parent is gone is never woken (the kernel hangs up
            // an orphaned group only if it was stopped when it lost its parent).
            FINISHING.store(true, Ordering::Relaxed);
            return Ok(false);
        }
        println!(
            "\nround {done} of {} done: paused until the other experiments' round {done} is over",
            count()
        );
        let _ = std::io::stdout().flush();
        nix::sys::signal::raise(nix::sys::signal::Signal::SIGSTOP)
            .map_err(|e| Error::Run(format!("cannot pause between rounds: {e}")))?;
        let mut what = [0u8; 1];
        let go_on = matches!(std::io::stdin().read(&mut what), Ok(1) if what[0] == GO_ON);
        if !go_on {
            // Asked for the files now, or `runner all` is gone (end of file).
            FINISHING.store(true, Ordering::Relaxed);
            println!("runner all asked for the results of the rounds measured so far");
            return Ok(false);
        }
        CURRENT.store(done, Ordering::Relaxed);
        println!("round {} of {}", done + 1, count());
    }
    Ok(true)
}

/// The environment variable with which `runner all` gives an experiment's process its
/// own process id, so that the process can tell whether `runner all` is still there
/// before it pauses.
pub const PARENT_ENV: &str = "HANDOFF_ALL_PARENT";

/// Whether `runner all` is still this process's parent; from the first call on, its
/// death kills this process (`PR_SET_PDEATHSIG`), so that a paused experiment never
/// outlives it stopped.
fn parent_alive() -> bool {
    let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL);
    let parent = std::env::var(PARENT_ENV)
        .ok()
        .and_then(|v| v.parse::<i32>().ok());
    parent == Some(nix::unistd::getppid().as_raw())
}

/// The results' `rounds` field of a process that ran in rounds (`None` outside
/// `runner all`, or with one round): `count` (the rounds asked for), `measured` (the
/// rounds this process measured: fewer when the run stopped early) and `cut_short`.
pub fn json() -> Option<Value> {
    (count() > 1).then(|| {
        json!({
            "count": count(),
            "measured": current() + 1,
            "cut_short": finishing(),
        })
    })
}

/// The report's line on the rounds (`None` outside `runner all`, or with one round).
pub fn line() -> Option<String> {
    (count() > 1).then(|| {
        format!(
            "rounds: the runs were spread over the {} rounds of runner all{}; every figure and claim below is of all of them together",
            count(),
            if finishing() {
                format!(", cut short after round {} (Ctrl-C)", current() + 1)
            } else {
                String::new()
            }
        )
    })
}

/// How many rounds `runner all` runs at a scale by default: nine at the default and
/// full sizes, one for `--smoke` and `--quick` (a first look, not a verdict).
pub fn default_rounds(timed_verdicts: bool) -> usize {
    if timed_verdicts {
        DEFAULT
    } else {
        1
    }
}

/// The rounds of `runner all` at the default and full sizes.
pub const DEFAULT: usize = 9;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_round_gets_runs_and_the_runs_go_in_order() {
        for rounds in 1..=10 {
            for runs in 1..=40 {
                let of: Vec<usize> = (0..runs).map(|r| round_of_in(r, runs, rounds)).collect();
                assert!(
                    of.windows(2).all(|w| w[0] <= w[1]),
                    "{runs} {rounds} {of:?}"
                );
                assert_eq!(of[0], 0);
                assert!(of.iter().all(|&k| k < rounds));
                if runs < rounds {
                    // One run in every few rounds, none two in one.
                    assert!(of.windows(2).all(|w| w[0] < w[1]), "{runs} {rounds} {of:?}");
                } else {
                    assert!(of.windows(2).all(|w| w[1] <= w[0] + 1));
                    assert_eq!(*of.last().unwrap(), rounds - 1, "{runs} {rounds}");
                    // As even as they go: round sizes differ by at most one.
                    let sizes: Vec<usize> = (0..rounds)
                        .map(|k| of.iter().filter(|&&x| x == k).count())
                        .collect();
                    let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
                    assert!(hi - lo <= 1, "{runs} {rounds} {sizes:?}");
                }
            }
        }
    }

    #[test]
    fn outside_runner_all_there_is_one_round_and_nothing_waits() {
        // The test harness's standard input is not a pipe from runner all.
        if std::env::var_os(ROUNDS_ENV).is_none() {
            assert_eq!(count(), 1);
            assert!(enter(5).unwrap());
            assert_eq!(current(), 0);
            assert!(json().is_none());
        }
    }
}
