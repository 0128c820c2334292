//! The run loops of experiments that compare contenders. [`contenders`]: every run
//! measures every contender once, in an order rotated by one from run to run, so that
//! no contender always goes first (after an idle core) or last (after the others warmed
//! the caches), and contenders measured in the same run saw the same state of the
//! machine. [`groups`]: the paced experiments' cells, one offered load's contenders
//! alternated run by run, one load after another. In `runner all` both spread their
//! runs over the run's rounds (`lab::rounds`).

use super::error::Result;
use super::{rounds, stop};

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

/// For [`contenders`] over `n * passes` children, each of the `n` contenders measured
/// `passes` times a run: which pass and which contender child `j` of run `run` is. The
/// pass counts from the run's own start ([`order`] starts run `run` at `run % (n *
/// passes)`), so that every contender's pass 0 comes first in its run and the contenders
/// keep the rotated order pass after pass.
///
/// ```
/// use runner::lab::rotate::{order, pass_of};
/// // 3 contenders, 2 passes: run 4 starts at child 4.
/// let run: Vec<_> = order(4, 6).map(|j| pass_of(4, j, 3, 2)).collect();
/// assert_eq!(run, [(0, 1), (0, 2), (0, 0), (1, 1), (1, 2), (1, 0)]);
/// ```
pub fn pass_of(run: usize, j: usize, n: usize, passes: usize) -> (usize, usize) {
    let all = n * passes;
    let k = (j + all - run % all) % all;
    (k / n, j % n)
}

/// For each of `runs` runs and each of `n` contenders in [`order`]: stops with
/// `Interrupted` on Ctrl-C, names the step on `bar` (`run 2 <name(i)>`), calls
/// `measure(run, i)` and advances `bar` by one. Clears `bar` at the end. In `runner
/// all` the runs are spread over its rounds (`lab::rounds`).
pub fn contenders(
    bar: &indicatif::ProgressBar,
    runs: usize,
    n: usize,
    name: impl Fn(usize) -> String,
    measure: impl FnMut(usize, usize) -> Result<()>,
) -> Result<()> {
    contenders_in(
        (rounds::count(), &mut rounds::enter),
        bar,
        runs,
        n,
        name,
        measure,
    )
}

/// How a loop meets the rounds: their number, and what to call before a run of round
/// k (`lab::rounds::enter`: `false` to measure nothing more).
type Rounds<'a> = (usize, &'a mut dyn FnMut(usize) -> Result<bool>);

fn contenders_in(
    (count, enter): Rounds<'_>,
    bar: &indicatif::ProgressBar,
    runs: usize,
    n: usize,
    name: impl Fn(usize) -> String,
    mut measure: impl FnMut(usize, usize) -> Result<()>,
) -> Result<()> {
    for run in 0..runs {
        if !enter(rounds::round_of_in(run, runs, count))? {
            break;
        }
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

/// Cells measured together: each of `runs` runs measures every cell of `cells`
/// (indices into the experiment's cells) in `slices` slices, one slice of each cell in
/// turn. The cells of one offered load form a group, so that its contenders alternate
/// slice by slice and see the same moments of the machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// The cells, by index.
    pub cells: Vec<usize>,
    /// Runs of each.
    pub runs: usize,
    /// Slices of each run (1: each run in one piece).
    pub slices: usize,
}

/// Where a measurement step stands in its group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// The run, from 0.
    pub run: usize,
    /// The slice of the run, from 0.
    pub slice: usize,
    /// Slices per run.
    pub slices: usize,
}

impl Step {
    /// Whether this step ends its run.
    pub fn ends_run(&self) -> bool {
        self.slice + 1 == self.slices
    }
}

/// Splits `cells` into [`Group`]s of consecutive cells with equal `key`, keeping only
/// the `runnable` ones, each group run `runs(first cell)` times, in one slice.
///
/// ```
/// use runner::lab::rotate::{group_by, Group};
/// let cells = [(1, true), (1, false), (1, true), (2, true)];
/// let g = group_by(&cells, |c| c.0, |c| c.1, |c| c.0 * 10);
/// assert_eq!(g, [Group { cells: vec![0, 2], runs: 10, slices: 1 }, Group { cells: vec![3], runs: 20, slices: 1 }]);
/// ```
pub fn group_by<C, K: PartialEq>(
    cells: &[C],
    key: impl Fn(&C) -> K,
    runnable: impl Fn(&C) -> bool,
    runs: impl Fn(&C) -> usize,
) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    let mut last: Option<K> = None;
    for (i, c) in cells.iter().enumerate() {
        let k = key(c);
        if last.as_ref() != Some(&k) {
            groups.push(Group {
                cells: Vec::new(),
                runs: runs(c),
                slices: 1,
            });
            last = Some(k);
        }
        if runnable(c) {
            if let Some(g) = groups.last_mut() {
                g.cells.push(i);
            }
        }
    }
    groups.retain(|g| !g.cells.is_empty());
    groups
}

/// Measures every [`Group`]: for each of its runs and each slice of the run, each of
/// its cells in order. Sets `bar`'s length to the steps planned; before each step
/// stops with `Interrupted` on Ctrl-C and names the step (`label`); after it checks for
/// Ctrl-C again (a measurement cut short is not kept) and advances `bar`. Clears `bar`
/// at the end. In `runner all` the runs of every group are spread over its rounds
/// (`lab::rounds`): each round measures its share of every group's runs, the groups in
/// order, before the next round; alone, one round holds them all.
pub fn groups<C>(
    bar: &indicatif::ProgressBar,
    cells: &mut [C],
    groups: &[Group],
    label: impl Fn(&C) -> String,
    measure: impl FnMut(&mut C, Step) -> Result<()>,
) -> Result<()> {
    groups_in(
        (rounds::count(), &mut rounds::enter),
        bar,
        cells,
        groups,
        label,
        measure,
    )
}

fn groups_in<C>(
    (count, enter): Rounds<'_>,
    bar: &indicatif::ProgressBar,
    cells: &mut [C],
    groups: &[Group],
    label: impl Fn(&C) -> String,
    mut measure: impl FnMut(&mut C, Step) -> Result<()>,
) -> Result<()> {
    let steps: usize = groups
        .iter()
        .map(|g| g.cells.len() * g.runs * g.slices.max(1))
        .sum();
    bar.set_length(steps as u64);
    for round in 0..count.max(1) {
        for g in groups {
            let slices = g.slices.max(1);
            for run in (0..g.runs).filter(|&r| rounds::round_of_in(r, g.runs, count) == round) {
                if !enter(round)? {
                    bar.finish_and_clear();
                    return Ok(());
                }
                for slice in 0..slices {
                    for &i in &g.cells {
                        stop::check()?;
                        bar.set_message(label(&cells[i]));
                        measure(&mut cells[i], Step { run, slice, slices })?;
                        stop::check()?;
                        bar.inc(1);
                    }
                }
            }
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
    fn groups_alternate_their_cells_run_by_run() {
        let bar = indicatif::ProgressBar::hidden();
        let mut cells = vec![0usize; 4];
        let mut seen = Vec::new();
        let plan = [
            Group {
                cells: vec![0, 2],
                runs: 3,
                slices: 1,
            },
            Group {
                cells: vec![3],
                runs: 1,
                slices: 1,
            },
        ];
        groups(
            &bar,
            &mut cells,
            &plan,
            |_| String::new(),
            |c, _| {
                *c += 1;
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(cells, [3, 0, 3, 1]);
        assert_eq!(bar.position(), 7);
        // Order: 0 2 0 2 0 2 3.
        let mut cells = vec![0usize; 4];
        let mut k = 0;
        groups(
            &bar,
            &mut cells,
            &plan,
            |_| String::new(),
            |c, _| {
                k += 1;
                *c = k;
                seen.push(k);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(cells, [5, 0, 6, 7]);
        assert_eq!(seen.len(), 7);
    }

    #[test]
    fn slices_alternate_within_each_run() {
        let bar = indicatif::ProgressBar::hidden();
        let mut cells = vec![Vec::new(); 2];
        let plan = [Group {
            cells: vec![0, 1],
            runs: 2,
            slices: 3,
        }];
        let mut order = Vec::new();
        groups(
            &bar,
            &mut cells,
            &plan,
            |_| String::new(),
            |c, step| {
                c.push(step);
                order.push((step.run, step.slice, c.len()));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(bar.position(), 12);
        for c in &cells {
            let ends: Vec<usize> = c.iter().filter(|s| s.ends_run()).map(|s| s.run).collect();
            assert_eq!(ends, [0, 1]);
            assert_eq!(c.len(), 6);
        }
        // Slice k of the first cell, then slice k of the second, then slice k + 1.
        let steps: Vec<(usize, usize)> = order.iter().map(|o| (o.0, o.1)).collect();
        assert_eq!(
            steps,
            [
                (0, 0),
                (0, 0),
                (0, 1),
                (0, 1),
                (0, 2),
                (0, 2),
                (1, 0),
                (1, 0),
                (1, 1),
                (1, 1),
                (1, 2),
                (1, 2)
            ]
        );
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

#[cfg(test)]
mod round_tests {
    use super::*;

    #[test]
    fn in_rounds_each_round_measures_its_share_of_every_group_before_the_next() {
        let bar = indicatif::ProgressBar::hidden();
        let mut cells = vec![0usize; 3];
        let plan = [
            Group {
                cells: vec![0, 1],
                runs: 3,
                slices: 1,
            },
            Group {
                cells: vec![2],
                runs: 6,
                slices: 2,
            },
        ];
        let mut seen = Vec::new();
        let mut entered = Vec::new();
        let mut enter = |k: usize| {
            entered.push(k);
            Ok(true)
        };
        groups_in(
            (3, &mut enter),
            &bar,
            &mut cells,
            &plan,
            |_| String::new(),
            |c, step| {
                *c += 1;
                seen.push((step.run, step.slice));
                Ok(())
            },
        )
        .unwrap();
        // Round 0: run 0 of the first group (two cells), runs 0-1 of the second (two
        // slices each); round 1: run 1, runs 2-3; round 2: run 2, runs 4-5.
        assert_eq!(
            seen,
            [
                (0, 0),
                (0, 0),
                (0, 0),
                (0, 1),
                (1, 0),
                (1, 1),
                (1, 0),
                (1, 0),
                (2, 0),
                (2, 1),
                (3, 0),
                (3, 1),
                (2, 0),
                (2, 0),
                (4, 0),
                (4, 1),
                (5, 0),
                (5, 1),
            ]
        );
        assert_eq!(cells, [3, 3, 12]);
        assert_eq!(entered, [0, 0, 0, 1, 1, 1, 2, 2, 2]);
        // Told to stop at round 1 (runner all asked for the results): round 0 only.
        let mut cells = vec![0usize; 3];
        let mut enter = |k: usize| Ok(k < 1);
        groups_in(
            (3, &mut enter),
            &bar,
            &mut cells,
            &plan,
            |_| String::new(),
            |c, _| {
                *c += 1;
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(cells, [1, 1, 4]);
    }

    #[test]
    fn in_rounds_contenders_enter_the_round_of_each_run() {
        let bar = indicatif::ProgressBar::hidden();
        let mut entered = Vec::new();
        let mut enter = |k: usize| {
            entered.push(k);
            Ok(k < 2)
        };
        let mut runs = Vec::new();
        contenders_in(
            (3, &mut enter),
            &bar,
            5,
            2,
            |_| String::new(),
            |run, _| {
                runs.push(run);
                Ok(())
            },
        )
        .unwrap();
        // Five runs over three rounds: 0, 0, 1, 1, 2; round 2 said stop.
        assert_eq!(entered, [0, 0, 1, 1, 2]);
        assert_eq!(runs, [0, 0, 1, 1, 2, 2, 3, 3]);
    }
}
