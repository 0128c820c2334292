//! `runner alloc`'s claims: document 004's figures and relations, and the project's
//! targets, judged from every contender's samples.

use super::args::MIB;
use super::report::Outcome;
use super::{Config, Contender};
use crate::lab::claims::{holds, near, Claim, Verdict};
use crate::lab::measure::median_or_nan as median;

/// Where the cross-thread target stands beside the document.
const CROSS_THREAD_WHERE: &str =
    "project target beside Task definition (\"We do NOT need our allocator to be multi-threaded\")";

/// Whether `ratios` (one per repeat, each the slower candidate's figure over the
/// faster's) show a steady order: a median above 1 and at least two thirds of the
/// repeats above 1. With the rule, for the reason.
fn steady(ratios: &[f64]) -> (bool, String) {
    let above = ratios.iter().filter(|&&r| r > 1.0).count();
    let ok =
        median(ratios.iter().copied()) > 1.0 && 3 * above >= 2 * ratios.len() && !ratios.is_empty();
    (ok, format!("{above} of {} repeats", ratios.len()))
}

impl Outcome {
    pub(super) fn claims(&self, cfg: &Config) -> Vec<Claim> {
        let h = Contender::Handoff;
        let others = self.general();
        // Time to finish the test, the test's own work included.
        let speedup = |c: Contender| self.seconds(c) / self.seconds(h);
        // The allocator's share of a pair, the test's own cost taken off (the
        // document's test measures that cost with a void allocator and subtracts it).
        let net_speedup = |c: Contender| self.net(c) / self.net(h);
        let min_net = others
            .iter()
            .map(|&c| net_speedup(c))
            .fold(f64::INFINITY, f64::min);
        let list = |f: &dyn Fn(Contender) -> f64| {
            others
                .iter()
                .map(|&c| format!("{} {:.2}x", c.name(), f(c)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut claims = Vec::new();
        let small = self.net_sweep(h).first().copied();
        let gross = self.sweep(h).first().map_or(f64::NAN, |p| p.1);
        claims.push(match small {
            Some((ws, ticks)) => Claim::new(
                "pair_cycles_small_ws",
                "a malloc/free pair costs about 15 CPU cycles at single-digit-MB working sets",
                "15 cycles",
                format!(
                    "{ticks:.1} TSC ticks at {} MiB beyond the test's own ({gross:.1} in all)",
                    ws / MIB
                ),
                near(ticks, 15.0),
            )
            .at("Test results, Figure 3"),
            None => Claim::new(
                "pair_cycles_small_ws",
                "a malloc/free pair costs about 15 CPU cycles at single-digit-MB working sets",
                "15 cycles",
                "-",
                (
                    Verdict::NotMeasured,
                    "the sweep was not run (--sweep-max-mib 0)".into(),
                ),
            )
            .at("Test results, Figure 3"),
        });
        claims.push(Claim::new(
            "faster_than_every_general_allocator",
            "the allocator runs the test at least 1.5x faster than every general-purpose allocator",
            ">= 1.5x",
            format!(
                "less the test's own cost: {}; in all: {}",
                list(&net_speedup),
                list(&speedup)
            ),
            holds(
                min_net >= 1.5,
                "the smallest ratio of time beyond the test's own cost (the document's convention) is at least 1.5",
            ),
        ).at("Test results, Figure 1"));
        let mem = self.overhead(h) / self.overhead(Contender::Jemalloc);
        claims.push(
            Claim::new(
                "memory_on_par_with_jemalloc",
                "memory overhead on par with jemalloc's, the best of the general allocators",
                "on par",
                format!(
                    "peak RSS / requested: handoff-alloc {:.3}, jemalloc {:.3} ({mem:.2}x)",
                    self.overhead(h),
                    self.overhead(Contender::Jemalloc)
                ),
                holds(
                    mem <= 1.2,
                    "handoff-alloc's overhead is at most 1.2x jemalloc's",
                ),
            )
            .at("Test results, Figure 2")
            .untimed(),
        );
        let target = speedup(Contender::Mimalloc).min(speedup(Contender::Jemalloc));
        claims.push(Claim::new(
            "project_target_single_thread",
            "project target: at least 1.3x faster than mimalloc and jemalloc, peak RSS at most 1.2x jemalloc's",
            "(ours, not the document's)",
            format!(
                "time to finish: {} (median of the repeats' own ratios: {}); memory {mem:.2}x jemalloc",
                list(&speedup),
                list(&|c| self.paired_speedup(c))
            ),
            holds(
                target >= 1.3 && mem <= 1.2,
                "both ratios of the time to finish the test, its own work included, at least 1.3, and the memory ratio at most 1.2",
            ),
        ).at("project target beside Test results, Figures 1 and 2"));
        let x = self.handoff(h) / self.handoff(Contender::Mimalloc);
        claims.push(if cfg.handoff_items > 0 {
            Claim::new(
                "cross_thread_frees",
                "project target: one thread allocates, another frees; at least as fast as mimalloc",
                "(ours, not the document's: its allocator is single-threaded)",
                format!(
                    "{:.2} M/s vs mimalloc {:.2} M/s ({x:.2}x)",
                    self.handoff(h) / 1e6,
                    self.handoff(Contender::Mimalloc) / 1e6
                ),
                holds(x >= 1.0, "handoff-alloc's rate at least mimalloc's"),
            )
            .at(CROSS_THREAD_WHERE)
        } else {
            Claim::new(
                "cross_thread_frees",
                "project target: one thread allocates, another frees; at least as fast as mimalloc",
                "(ours)",
                "-",
                (Verdict::NotMeasured, "--handoff-items 0".into()),
            )
            .at(CROSS_THREAD_WHERE)
        });
        claims.extend(self.take_claims());
        claims.extend(self.scaling_claims(cfg));
        claims
    }

    /// The document's steps (Take 1 to 3) and its class tables, judged on the takes:
    /// speed from each repeat's steady ns per pair (the takes ran back to back),
    /// memory from peak resident over peak requested bytes.
    fn take_claims(&self) -> Vec<Claim> {
        let (t1, t2, t3, p2) = (
            Contender::Take1,
            Contender::Take2,
            Contender::Take3,
            Contender::Take3Pow2,
        );
        let mem = |c: Contender| self.overhead(c);
        let ns = |a: Contender, b: Contender| {
            format!(
                "{} {:.1} vs {} {:.1} ns per pair ({:.3}x, median of the repeats' own ratios)",
                a.name(),
                self.ns(a),
                b.name(),
                self.ns(b),
                median(self.paired_ns(a, b).into_iter())
            )
        };
        let mut claims = Vec::new();
        let (slower, count) = steady(&self.paired_ns(t2, t1));
        claims.push(
            Claim::new(
                "take2_slower_than_take1",
                "a header per page instead of per block: the indirection to the page header cost a minor performance degradation",
                "Take 2 slower than Take 1",
                ns(t2, t1),
                holds(
                    slower,
                    format!("Take 2's ns per pair above Take 1's in the median and in at least two thirds of the repeats: {count}"),
                ),
            )
            .at("Take 2 - Dereferenceable pointers and bucket page headers"),
        );
        claims.push(
            Claim::new(
                "take2_less_memory_than_take1",
                "a header per page instead of per block reduced memory overhead",
                "Take 2 below Take 1",
                format!(
                    "peak RSS / requested: Take 2 {:.3}, Take 1 {:.3}",
                    mem(t2),
                    mem(t1)
                ),
                holds(mem(t2) < mem(t1), "Take 2's ratio below Take 1's"),
            )
            .at("Take 2 - Dereferenceable pointers and bucket page headers")
            .untimed(),
        );
        let (over1, c1) = steady(&self.paired_ns(t1, t3));
        let (over2, c2) = steady(&self.paired_ns(t2, t3));
        // 64 header bytes per 64 KiB run (0.1%) is below what peak resident memory
        // resolves between two processes, so within 0.5% counts as on par.
        let lean = mem(t3) <= mem(t1).min(mem(t2)) * 1.005;
        claims.push(
            Claim::new(
                "take3_best",
                "the class in the pointer's bits was the best approach both performance-wise and memory-overhead-wise",
                "Take 3 fastest and leanest",
                format!(
                    "{}; {}; peak RSS / requested {:.3} vs {:.3} and {:.3}",
                    ns(t1, t3),
                    ns(t2, t3),
                    mem(t3),
                    mem(t1),
                    mem(t2)
                ),
                holds(
                    over1 && over2 && lean,
                    format!("Take 3 faster than Take 1 ({c1}) and Take 2 ({c2}) in the median and in at least two thirds of the repeats, and its memory ratio at most the lower of theirs (within 0.5%)"),
                ),
            )
            .at("Take 3 - Storing the bucket number within a dereferencable pointer"),
        );
        let (faster, count) = steady(&self.paired_ns(p2, t3));
        claims.push(
            Claim::new(
                "half_exponent_faster_than_pow2",
                "switching from power-of-two to half-exponent buckets improved the measured speed in spite of the extra calculations",
                "half-exponent faster",
                ns(p2, t3),
                holds(
                    faster,
                    format!("power-of-two classes' ns per pair above half-exponent's in the median and in at least two thirds of the repeats: {count}"),
                ),
            )
            .at("Optimizing allocation - calculating logarithms"),
        );
        let waste = mem(p2) / mem(t3);
        claims.push(
            Claim::new(
                "pow2_classes_overhead",
                "bucket sizes doubling at each step lead to significant memory overhead",
                "significant",
                format!(
                    "peak RSS / requested: power-of-two {:.3}, half-exponent {:.3} ({waste:.2}x)",
                    mem(p2),
                    mem(t3)
                ),
                holds(
                    waste >= 1.1,
                    "power-of-two classes' memory ratio at least 1.1x the half-exponent one's",
                ),
            )
            .at("Optimizing allocation - calculating logarithms")
            .untimed(),
        );
        claims
    }

    /// The thread-count claims, from the main test and its scaling run.
    fn scaling_claims(&self, cfg: &Config) -> Vec<Claim> {
        let counts = self.thread_counts(cfg);
        let h = Contender::Handoff;
        let others = self.general();
        let mut claims = Vec::new();
        let few = (
            Verdict::NotMeasured,
            "one thread count only (--scaling-threads 1, or one core)".to_string(),
        );
        let every = if counts.len() < 2 {
            Claim::new(
                "faster_at_every_thread_count",
                "the allocator outperforms every general allocator by at least 1.5x at every thread count",
                ">= 1.5x",
                "-",
                few.clone(),
            )
        } else {
            let mut worst = f64::INFINITY;
            let mut parts = Vec::new();
            for &t in &counts {
                let r: Vec<String> = others
                    .iter()
                    .map(|&c| {
                        let x = self.net_at(c, t, cfg) / self.net_at(h, t, cfg);
                        worst = worst.min(x);
                        format!("{} {x:.2}x", c.name())
                    })
                    .collect();
                parts.push(format!("{t} thread(s): {}", r.join(", ")));
            }
            Claim::new(
                "faster_at_every_thread_count",
                "the allocator outperforms every general allocator by at least 1.5x at every thread count",
                ">= 1.5x",
                format!("less the test's own cost: {}", parts.join("; ")),
                holds(
                    worst >= 1.5,
                    "at every thread count, every general allocator's ns per pair beyond the test's own at least 1.5x handoff-alloc's",
                ),
            )
        };
        claims.push(every.at("Test results, Figure 1 (threads)"));
        let tc = Contender::Tcmalloc;
        let rest: Vec<Contender> = others.iter().copied().filter(|&c| c != tc).collect();
        let ground = |t: usize| {
            self.net_at(tc, t, cfg) / median(rest.iter().map(|&c| self.net_at(c, t, cfg)))
        };
        let claim = |ours: String, v: (Verdict, String)| {
            Claim::new(
                "tcmalloc_loses_ground_with_threads",
                "one thread is tcmalloc's best case; with more threads it loses ground",
                "loses ground",
                ours,
                v,
            )
            .at("Test results, note under Figure 3")
        };
        claims.push(if let Some(why) = self.unavailable(tc) {
            claim("-".into(), (Verdict::NotMeasured, format!("tcmalloc unavailable: {why}")))
        } else if counts.len() < 2 {
            claim("-".into(), few)
        } else {
            let (lo, hi) = (counts[0], counts[counts.len() - 1]);
            let change = ground(hi) / ground(lo);
            claim(
                format!(
                    "tcmalloc's ns per pair beyond the test's own over the median of {}'s: {:.2} on {lo} thread(s), {:.2} on {hi} ({change:.2}x)",
                    rest.iter().map(|c| c.name()).collect::<Vec<_>>().join(", "),
                    ground(lo),
                    ground(hi)
                ),
                holds(
                    change > 1.05,
                    format!("tcmalloc's standing among the general allocators worse by more than 5% on {hi} threads than on {lo}"),
                ),
            )
        });
        claims
    }
}

#[cfg(test)]
mod tests {
    use super::steady;

    #[test]
    fn a_steady_order_needs_the_median_and_two_thirds_of_the_repeats() {
        assert!(steady(&[1.1, 1.2, 0.9]).0);
        assert!(!steady(&[1.1, 0.9, 0.8]).0);
        assert!(!steady(&[1.1, 1.2, 0.9, 0.9, 0.95]).0, "2 of 5");
        assert!(steady(&[1.1, 1.2, 1.01, 0.9, 1.05]).0, "4 of 5");
        assert!(!steady(&[]).0);
        assert_eq!(steady(&[1.1, 0.9]).1, "1 of 2 repeats");
    }
}
