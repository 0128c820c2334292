//! The pipeline's throughput claims: the paced rate held, and the freelist's runs the
//! tightest (document 000's "Throughput").

use super::{Cell, Config};
use crate::lab::claims::{all_hold, share_at_least, Claim, Verdict};
use crate::lab::noise::Probes;

/// "All three sustain close to the offered rate", judged run by run like any ratio:
/// each variant's runs' delivered / offered rates at least 0.95 in the median's 95%
/// interval (`share_at_least`; a host stall of one round cut one run of every variant
/// to 0.83-0.88 on 2026-12-05, and the rule then, every run at 95%, said *fails*).
pub(super) fn throughput_held(runs: &[(&str, Vec<f64>)], rate_hz: f64) -> (Verdict, String) {
    let each: Vec<_> = runs
        .iter()
        .map(|(name, r)| {
            let r: Vec<f64> = r.iter().map(|x| x / rate_hz).collect();
            share_at_least(
                &r,
                0.95,
                &format!("{name}: each run's delivered / offered rate"),
            )
        })
        .collect();
    all_hold(&each)
}

/// The throughput claims of malloc, the freelist and the arena (`three`, in that
/// order); `headline` adds what the headline's reasons say of its background thread.
pub(super) fn claims(
    three: [&Cell; 3],
    cfg: &Config,
    noise: Option<&Probes>,
    headline: &dyn Fn((Verdict, String)) -> (Verdict, String),
) -> Vec<Claim> {
    let [m, f, a] = three;
    let mut v = Vec::new();
    let per_run =
        |c: &Cell| -> Vec<f64> { c.runs.iter().map(|r| r.throughput_items_per_s).collect() };
    let mhz = |x: f64| format!("{:.4} M/s", x / 1e6);
    let held = throughput_held(&three.map(|c| (c.variant.name(), per_run(c))), cfg.rate_hz);
    v.push(
        Claim::new(
            "throughput-held",
            "At the paced rate all three variants sustain close to the offered 1 M/s",
            "close to 1 M/s for all three",
            three
                .iter()
                .map(|c| {
                    format!(
                        "{} {} (median of {} runs)",
                        c.variant.name(),
                        mhz(c.throughput().unwrap_or(f64::NAN)),
                        c.runs.len()
                    )
                })
                .collect::<Vec<_>>()
                .join(", "),
            headline(held),
        )
        .at("Throughput"),
    );
    let fr = per_run(f);
    let sd = |v: &[f64]| crate::lab::claims::variance(v).map_or(f64::NAN, f64::sqrt);
    // A paced run's throughput moves only with how its last items are delayed: one
    // host pause of the longest length the probes saw, at the end of a run, shifts
    // it by rate x pause / run length. Spreads within that are the host's.
    let run_s = cfg.items as f64 / cfg.rate_hz;
    let shift = noise
        .and_then(|n| n.longest_gap_ns())
        .map(|g| cfg.rate_hz * g as f64 * 1e-9 / run_s);
    let against: Vec<(&str, (Option<bool>, f64))> = [m, a]
        .iter()
        .map(|c| {
            let other = per_run(c);
            let (t, r) = crate::lab::claims::spread_lower(&fr, &other);
            let host = shift.is_some_and(|s| sd(&fr).max(sd(&other)) <= s);
            (c.variant.name(), (t.filter(|_| !host), r))
        })
        .collect();
    let ours = format!(
        "standard deviation of the runs' throughput: freelist {:.1}, malloc {:.1}, arena {:.1} items/s; variance ratios {}{}",
        sd(&fr),
        sd(&per_run(m)),
        sd(&per_run(a)),
        against
            .iter()
            .map(|(n, (_, r))| format!("{n} / freelist {r:.2}"))
            .collect::<Vec<_>>()
            .join(", "),
        shift
            .map(|s| format!("; one host pause as long as the longest the probes saw would shift a run by {s:.0} items/s"))
            .unwrap_or_default()
    );
    let verdict = if against.iter().all(|(_, (t, _))| *t == Some(true)) {
        (Verdict::Holds, "the freelist's runs closer to their median than malloc's and the arena's, each beyond the Brown-Forsythe test at 5% (the mean distances from the medians, a t test) and beyond what one host pause makes".to_string())
    } else if against.iter().any(|(_, (t, _))| *t == Some(false)) {
        (Verdict::Fails, "malloc's or the arena's runs closer to their median than the freelist's beyond the Brown-Forsythe test at 5% and beyond what one host pause makes".to_string())
    } else {
        (
            Verdict::NotMeasurableHere,
            format!(
                "with {} runs the spreads are closer than the Brown-Forsythe test at 5% can tell apart, or within what one host pause at a run's end makes: at a paced rate a run's throughput moves only with its last items' latency",
                fr.len()
            ),
        )
    };
    v.push(
        Claim::new(
            "freelist-tighter-throughput",
            "The freelist's throughput varies less from run to run than malloc's or the arena's (its batched return drain smooths per-allocation spikes)",
            "slightly tighter variance for the freelist",
            ours,
            headline(verdict),
        )
        .at("Throughput"),
    );
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_stalled_round_does_not_decide_the_throughput() {
        // 2026-12-05 (P1): round 7 stalled, every variant's run 7 short of 95%; the rule
        // before (every run of every variant at 95% or more) read fails.
        let m = vec![1.0, 1.0, 1.0, 1.0, 1.0, 0.986, 0.827, 1.0, 1.0];
        let f = vec![1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.865, 1.0, 1.0];
        let a = vec![0.997, 1.0, 1.0, 1.0, 0.997, 1.0, 0.880, 1.0, 1.0];
        let old = [&m, &f, &a].iter().all(|r| r.iter().all(|&x| x >= 0.95));
        assert!(!old);
        let runs = |f: &[f64]| f.iter().map(|x| x * 1e6).collect::<Vec<f64>>();
        let three = [
            ("malloc", runs(&m)),
            ("freelist", runs(&f)),
            ("arena", runs(&a)),
        ];
        let (v, why) = throughput_held(&three, 1e6);
        assert_eq!(v, Verdict::Holds, "{why}");
        assert!(why.contains("8 of 9"), "{why}");
        // Two stalled rounds: the runs disagree.
        let mut two = three.clone();
        two[0].1[2] = 0.8e6;
        assert_eq!(throughput_held(&two, 1e6).0, Verdict::WithinNoise);
        // Every run short: fails.
        let short = [("malloc", runs(&[0.9; 9]))];
        assert_eq!(throughput_held(&short, 1e6).0, Verdict::Fails);
    }
}
