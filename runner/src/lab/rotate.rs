//! The run loop of experiments that compare contenders: every run measures every
//! contender once, in an order rotated by one from run to run, so that no contender
//! always goes first (after an idle core) or last (after the others warmed the caches),
//! and contenders measured in the same run saw the same state of the machine.

use super::error::Result;
use super::stop;

/// The order of the `n` contenders in run `run`: `run % n` first, then on around.
///
/// ```
/// use runner::lab::rotate::order;
/// assert_eq!(order(0, 3).collect::<Vec<_>>(), [0, 1, 2]);
/// assert_eq!(order(1, 3).collect::<Vec<_>>(), [1, 2, 0]);
/// assert_eq!(order(5, 3).collect::<Vec<_>>(), [2, 0, 1]);
/// ```
pub fn order(run: usize, n: usize) -> impl Iterator<Item = usize> {
    (0..n).map(move |k| (k + run) % n)
}

/// For each of `runs` runs and each of `n` contenders in [`order`]: stops with
/// `Interrupted` on Ctrl-C, names the step on `bar` (`run 2 <name(i)>`), calls
/// `measure(run, i)` and advances `bar` by one. Clears `bar` at the end.
pub fn contenders(
    bar: &indicatif::ProgressBar,
    runs: usize,
    n: usize,
    name: impl Fn(usize) -> String,
    mut measure: impl FnMut(usize, usize) -> Result<()>,
) -> Result<()> {
    for run in 0..runs {
        for i in order(run, n) {
            stop::check()?;
            bar.set_message(format!("run {} {}", run + 1, name(i)));
            measure(run, i)?;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_contender_runs_once_per_run_and_each_goes_first_in_turn() {
        let bar = indicatif::ProgressBar::hidden();
        let mut seen = Vec::new();
        contenders(
            &bar,
            4,
            3,
            |i| format!("c{i}"),
            |run, i| {
                seen.push((run, i));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(seen.len(), 12);
        for run in 0..4 {
            let mine: Vec<usize> = seen.iter().filter(|s| s.0 == run).map(|s| s.1).collect();
            let mut sorted = mine.clone();
            sorted.sort();
            assert_eq!(sorted, [0, 1, 2], "run {run}");
            assert_eq!(mine[0], run % 3);
        }
        assert_eq!(bar.position(), 12);
    }

    #[test]
    fn a_failed_measurement_ends_the_loop() {
        let bar = indicatif::ProgressBar::hidden();
        let mut calls = 0;
        let r = contenders(
            &bar,
            3,
            2,
            |_| String::new(),
            |run, _| {
                calls += 1;
                if run == 1 {
                    Err(crate::lab::error::Error::Run("boom".into()))
                } else {
                    Ok(())
                }
            },
        );
        assert!(r.is_err());
        assert_eq!(calls, 3);
    }
}
