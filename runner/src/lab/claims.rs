//! A claim of a source document as data, in one shape for every experiment: what the
//! document says, its figure, ours, a verdict and the reason for it. Experiments build
//! the list; the lab prints it and writes it into the results JSON (`claims`).

use serde::Serialize;
use std::fmt::Write as _;

/// How a claim fared on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// An absolute figure within [`NEAR`] of the document's.
    Reproduced,
    /// An absolute figure further than [`NEAR`] from the document's.
    Differs,
    /// A relation (an order, a ratio, a shape) that holds here.
    Holds,
    /// A relation that does not hold here.
    Fails,
    /// A relation whose margin is smaller than the run-to-run spread: the repeats'
    /// own ratios fall on both sides of the line (see [`ratio_at_least`]).
    WithinNoise,
    /// This machine's scheduling noise alone puts the claim out of reach of any
    /// contender (see `lab::noise`), so the run cannot speak to it.
    NotMeasurableHere,
    /// The run did not measure what the claim needs (a mode or variant not run, a
    /// placement this machine lacks).
    NotMeasured,
}

/// Every verdict's word, as printed and written.
pub const VERDICTS: [&str; 7] = [
    "reproduced",
    "differs",
    "holds",
    "fails",
    "within noise",
    "not measurable here",
    "not measured",
];

impl Verdict {
    /// The word printed and written.
    pub fn as_str(self) -> &'static str {
        VERDICTS[self as usize]
    }
}

impl Serialize for Verdict {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How close an absolute figure must come to the document's to count as reproduced:
/// the documents ran on bare metal with isolated cores, so only the order of the
/// figure can carry over.
pub const NEAR: f64 = 0.25;

/// How far a median moves from one process to the next on the development VM, as a
/// share of the figure: a figure or ratio closer than this to the line it is judged
/// against is *within noise*. Measured on 2026-11-28 over five default `runner all`
/// runs: the queue's saturated throughputs 17.2-19.3 M/s (cpp-ring) and 10.8-12.3 M/s
/// (boost-spsc), handoff-alloc's time over jemalloc's 1.26-1.34x.
pub const GUARD: f64 = 0.05;

/// One claim of a document and our reading of it.
#[derive(Clone, Debug, Serialize)]
pub struct Claim {
    /// Short id, stable across runs.
    pub id: &'static str,
    /// What the document says (or the project's target, for a claim of ours).
    pub claim: String,
    /// The document's figures.
    pub document: String,
    /// Where in the document the claim stands (its section, table or figure).
    #[serde(rename = "where")]
    pub place: &'static str,
    /// Ours.
    pub ours: String,
    /// The verdict.
    pub verdict: Verdict,
    /// Why that verdict: the rule applied, or what kept the claim out of reach.
    pub reason: String,
    /// Whether the claim is judged on figures read from a clock (speed, latency,
    /// throughput, depth): those are out of reach on emulated CPUs
    /// ([`on_emulated_cpus`]). False for memory and placement claims
    /// ([`untimed`](Claim::untimed)).
    pub timed: bool,
}

/// The reason's opening when a timed claim was run on emulated CPUs.
pub const EMULATED: &str = "emulated CPUs";

/// Every timed claim of a run on emulated CPUs (QEMU's TCG: the environment's
/// `emulated_cpus`) judged "not measurable here", its reason opening with
/// [`EMULATED`] and keeping what the figures alone would have given: software
/// emulation runs several guest CPUs on each host core, so no speed, latency or
/// depth it shows says anything about hardware. A claim the run did not measure stays
/// "not measured"; memory and placement claims keep their verdicts.
///
/// ```
/// use runner::lab::claims::{holds, on_emulated_cpus, Claim, Verdict};
/// let fast = Claim::new("x", "A beats B", "2x", "3x", holds(true, "A/B >= 2")).at("s");
/// let small = Claim::new("m", "A uses less", "-", "-", holds(true, "A <= B")).at("s").untimed();
/// let out = on_emulated_cpus(vec![fast, small]);
/// assert_eq!(out[0].verdict, Verdict::NotMeasurableHere);
/// assert!(out[0].reason.starts_with("emulated CPUs"));
/// assert_eq!(out[1].verdict, Verdict::Holds);
/// ```
pub fn on_emulated_cpus(claims: Vec<Claim>) -> Vec<Claim> {
    claims
        .into_iter()
        .map(|mut c| {
            if c.timed && c.verdict != Verdict::NotMeasured {
                c.reason = format!(
                    "{EMULATED} (not measurable here): these CPUs are emulated in software, several on each host core, so no timing says anything about hardware; on these figures alone: {}, {}",
                    c.verdict, c.reason
                );
                c.verdict = Verdict::NotMeasurableHere;
            }
            c
        })
        .collect()
}

/// The verdict on a relation, with the rule that was checked.
pub fn holds(ok: bool, rule: impl Into<String>) -> (Verdict, String) {
    (
        if ok { Verdict::Holds } else { Verdict::Fails },
        rule.into(),
    )
}

/// How sure the runner must be of a median's side of its line before it gives a
/// verdict: the distribution-free confidence interval of the median ([`needed`]) must
/// cover it at least this often.
pub const CONFIDENCE: f64 = 0.95;

/// How many of `n` repeats must fall on the median's side of the line for a ratio or a
/// figure to get a verdict ([`ratio_at_least`], [`near_runs`]): the sorted repeats'
/// `j`-th and `(n + 1 - j)`-th values bound the median with probability
/// `1 - 2 P(Binomial(n, 1/2) < j)` whatever their distribution (the sign test's
/// interval); `j` is the largest that keeps that at [`CONFIDENCE`] or more, and the
/// interval lies on one side of the line exactly when `n + 1 - j` repeats do. With 6 to
/// 8 repeats only the whole range reaches 95%, so every repeat must agree; with 5 or
/// fewer not even the whole range does (it covers the median with probability
/// `1 - 2^(1 - n)`: 75% for 3, 93.75% for 5), and every repeat must agree all the same,
/// as since 2026-12-04 (`runner <experiment>` alone runs 3 to 5); 9 repeats allow one on
/// the other side, 12 two, 18 four. A repeat on the other side is a moment of the host in
/// which the claim reads otherwise; one such moment in nine is what a host that stalls
/// a vCPU several times a second gives a claim far from its line, and asking every
/// repeat to agree turned such claims from *holds* to *within noise* and back from one
/// run to the next (docs/methodology.md, "Ratios and orders"). Where a repeat on the
/// other side is a regime the host held for the whole repeat, every repeat must agree
/// ([`regime_at_least`]).
///
/// ```
/// use runner::lab::claims::needed;
/// assert_eq!(needed(3), 3);
/// assert_eq!(needed(8), 8);
/// assert_eq!(needed(9), 8);
/// assert_eq!(needed(12), 10);
/// assert_eq!(needed(18), 14);
/// ```
pub fn needed(n: usize) -> usize {
    // P(Binomial(n, 1/2) <= i), term by term in logarithms (no underflow for large n).
    let mut ln_term = -(n as f64) * std::f64::consts::LN_2;
    let mut below = 0.0;
    let mut j = 1;
    for i in 0..n / 2 {
        below += ln_term.exp();
        // Interval [x_(i+2), x_(n-i-1)] misses the median with probability 2 P(X <= i+1).
        ln_term += ((n - i) as f64 / (i + 1) as f64).ln();
        if 1.0 - 2.0 * (below + ln_term.exp()) >= CONFIDENCE {
            j = i + 2;
        } else {
            break;
        }
    }
    n + 1 - j
}

/// The verdict on "`a` is at least `k` times `b`" from the repeats' own ratios
/// (`ratios[r]` = a / b of repeat `r`, the contenders run back to back within each
/// repeat): *holds* when the median is at least `k` and [`needed`] of the repeats are
/// too (the median's 95% interval lies above the line); *fails* when the median and as
/// many repeats are below; otherwise *within noise*: the margin is smaller than the
/// spread from repeat to repeat; also *within noise* when the median lies within
/// [`GUARD`] of `k` (a median moves that much from one process to the next here). No
/// repeats: *not measured*. One rule for every ratio and order the runner judges on
/// repeats (docs/methodology.md, "Ratios and orders").
///
/// ```
/// use runner::lab::claims::{ratio_at_least, Verdict};
/// assert_eq!(ratio_at_least(&[1.6, 1.7, 1.58, 1.8, 1.65], 1.5, "a/b").0, Verdict::Holds);
/// assert_eq!(ratio_at_least(&[1.3, 1.35, 1.41, 1.2, 1.25], 1.5, "a/b").0, Verdict::Fails);
/// // One repeat of five below the line: they disagree.
/// assert_eq!(ratio_at_least(&[1.6, 1.7, 1.46, 1.8, 1.55], 1.5, "a/b").0, Verdict::WithinNoise);
/// // One of nine below: the median's interval still lies above the line.
/// let nine = [1.6, 1.7, 1.46, 1.8, 1.55, 1.62, 1.66, 1.59, 1.71];
/// assert_eq!(ratio_at_least(&nine, 1.5, "a/b").0, Verdict::Holds);
/// // Two of nine below: it does not.
/// let nine = [1.6, 1.7, 1.46, 1.8, 1.45, 1.62, 1.66, 1.59, 1.71];
/// assert_eq!(ratio_at_least(&nine, 1.5, "a/b").0, Verdict::WithinNoise);
/// // Every repeat below, but the median within 5% of the line.
/// assert_eq!(ratio_at_least(&[1.46, 1.45, 1.47, 1.44, 1.48], 1.5, "a/b").0, Verdict::WithinNoise);
/// // 1.49x jemalloc in the median, 3 of 5 repeats below 1.5: within noise.
/// assert_eq!(ratio_at_least(&[1.49, 1.47, 1.52, 1.45, 1.56], 1.5, "a/b").0, Verdict::WithinNoise);
/// ```
pub fn ratio_at_least(ratios: &[f64], k: f64, rule: &str) -> (Verdict, String) {
    ratio_with(ratios, k, rule, needed(ratios.len()), true)
}

/// [`ratio_at_least`] for a claim about a regime that the host holds for a whole
/// repeat (how full a queue runs at saturation: `bound-side`): a repeat on the other
/// side is not a stall inside a measurement but a run the queue spent in the other
/// regime, so every repeat must agree. (Queue's `ring-ceiling`, a near-empty ring at
/// the top rate, is not one: two host pauses deepen a run; nor, since 2026-12-06,
/// `saturation`'s latency wall, which takes the ratio rule as `by_regime` folds a
/// regime of a run or two.)
///
/// ```
/// use runner::lab::claims::{regime_at_least, Verdict};
/// let nine = [1.6, 1.7, 0.46, 1.8, 1.55, 1.62, 1.66, 1.59, 1.71];
/// assert_eq!(regime_at_least(&nine, 1.0, "each run").0, Verdict::WithinNoise);
/// ```
pub fn regime_at_least(ratios: &[f64], k: f64, rule: &str) -> (Verdict, String) {
    ratio_with(ratios, k, rule, ratios.len(), true)
}

/// [`ratio_at_least`] without the [`GUARD`] around the line, for a ratio the host does
/// not move by a few percent from one process to the next, only in a moment it stalls
/// (a paced run's delivered over offered rate: 1.000 but for a run a stall cut short).
///
/// ```
/// use runner::lab::claims::{share_at_least, Verdict};
/// let nine = [1.0, 1.0, 0.999, 1.0, 1.0, 0.986, 0.827, 1.0, 1.0];
/// assert_eq!(share_at_least(&nine, 0.95, "delivered").0, Verdict::Holds);
/// ```
pub fn share_at_least(ratios: &[f64], k: f64, rule: &str) -> (Verdict, String) {
    ratio_with(ratios, k, rule, needed(ratios.len()), false)
}

fn ratio_with(ratios: &[f64], k: f64, rule: &str, need: usize, guard: bool) -> (Verdict, String) {
    let n = ratios.len();
    if n == 0 {
        return (Verdict::NotMeasured, format!("{rule}: no repeats"));
    }
    let mut sorted = ratios.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    let at_least = ratios.iter().filter(|&&r| r >= k).count();
    let agree = if median >= k { at_least } else { n - at_least };
    let close = guard && (median / k - 1.0).abs() < GUARD;
    let verdict = if agree < need || close {
        Verdict::WithinNoise
    } else if median >= k {
        Verdict::Holds
    } else {
        Verdict::Fails
    };
    let range = format!("{:.3}-{:.3}", sorted[0], sorted[n - 1]);
    (
        verdict,
        format!(
            "{rule}: median of the repeats' own ratios {median:.3} (range {range}), {at_least} of {n} repeats{} at or above {k:.3}{}",
            super::rounds::spread_note(),
            if close {
                " (the median within 5% of the line: within noise)".to_string()
            } else if verdict == Verdict::WithinNoise {
                format!(" (the repeats disagree: a verdict needs {need} of {n} on the median's side; within noise)")
            } else {
                String::new()
            }
        ),
    )
}

/// Several relations that must all hold: *fails* if any fails, *within noise* if
/// none fails but one is within noise (or not measured), *holds* if all hold. The
/// reasons joined.
pub fn all_hold(parts: &[(Verdict, String)]) -> (Verdict, String) {
    let verdict = if parts.iter().any(|p| p.0 == Verdict::Fails) {
        Verdict::Fails
    } else if parts.iter().all(|p| p.0 == Verdict::Holds) {
        Verdict::Holds
    } else if parts.iter().any(|p| p.0 == Verdict::WithinNoise) {
        Verdict::WithinNoise
    } else {
        Verdict::NotMeasured
    };
    let reason = parts
        .iter()
        .map(|p| format!("{} ({})", p.1, p.0))
        .collect::<Vec<_>>()
        .join("; ");
    (verdict, reason)
}

pub use super::figures::{all_figures, all_near, near, near_at_step, near_runs};
pub use super::regimes::by_regime;
pub use super::spread::{spread_lower, variance};

/// A verdict as the reports print it: its word, with "(emulated CPUs)" after it when
/// the emulation is what put the claim out of reach ([`on_emulated_cpus`]).
///
/// ```
/// use runner::lab::claims::label;
/// assert_eq!(label("holds", "a <= b"), "holds");
/// assert_eq!(label("not measurable here", "emulated CPUs (not measurable here): ..."),
///            "not measurable here (emulated CPUs)");
/// ```
pub fn label(verdict: &str, reason: &str) -> String {
    if verdict == Verdict::NotMeasurableHere.as_str() && reason.starts_with(EMULATED) {
        format!("{verdict} ({EMULATED})")
    } else {
        verdict.to_string()
    }
}

/// The claims table of the printed report.
pub fn table(claims: &[Claim]) -> String {
    let mut s = String::from("claims of the document, beside this machine\n");
    for c in claims {
        let _ = writeln!(
            s,
            "  [{}] {}",
            label(c.verdict.as_str(), &c.reason),
            c.claim
        );
        let _ = writeln!(s, "      document: {} ({})", c.document, c.place);
        let ours = if c.ours.is_empty() { "-" } else { &c.ours };
        let _ = writeln!(s, "      here:     {ours}");
        let _ = writeln!(s, "      why:      {}", c.reason);
    }
    s
}

impl Claim {
    /// A claim with its verdict and reason (as [`near`], [`all_near`] and [`holds`]
    /// return them). Say where it stands with [`at`](Claim::at): the results schema
    /// refuses a claim without.
    pub fn new(
        id: &'static str,
        claim: impl Into<String>,
        document: impl Into<String>,
        ours: impl Into<String>,
        (verdict, reason): (Verdict, String),
    ) -> Claim {
        Claim {
            id,
            claim: claim.into(),
            document: document.into(),
            place: "",
            ours: ours.into(),
            verdict,
            reason,
            timed: true,
        }
    }

    /// Marks the claim as judged on figures no clock gave (memory, placement): it
    /// keeps its verdict on emulated CPUs ([`on_emulated_cpus`]).
    pub fn untimed(mut self) -> Claim {
        self.timed = false;
        self
    }

    /// Where in the document the claim stands: its section, table or figure, as the
    /// document names it (`"Results, 1 MHz table"`).
    pub fn at(mut self, place: &'static str) -> Claim {
        self.place = place;
        self
    }
}

#[cfg(test)]
#[path = "claims_tests.rs"]
mod tests;
