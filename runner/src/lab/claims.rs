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
    /// This machine's scheduling noise alone puts the claim out of reach of any
    /// contender (see `lab::noise`), so the run cannot speak to it.
    NotMeasurableHere,
    /// The run did not measure what the claim needs (a mode or variant not run, a
    /// placement this machine lacks).
    NotMeasured,
}

/// Every verdict's word, as printed and written.
pub const VERDICTS: [&str; 6] = [
    "reproduced",
    "differs",
    "holds",
    "fails",
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
}

/// The verdict on an absolute figure and its reason: within [`NEAR`] of the document's
/// figure or not.
///
/// ```
/// use runner::lab::claims::{near, Verdict};
/// assert_eq!(near(120.0, 132.0).0, Verdict::Reproduced);
/// assert_eq!(near(60.0, 132.0).0, Verdict::Differs);
/// ```
pub fn near(ours: f64, doc: f64) -> (Verdict, String) {
    let off = ours / doc - 1.0;
    if off.abs() <= NEAR {
        (
            Verdict::Reproduced,
            format!(
                "{:+.0}% from the document's figure, within ±{:.0}%",
                off * 100.0,
                NEAR * 100.0
            ),
        )
    } else {
        (
            Verdict::Differs,
            format!(
                "{:+.0}% from the document's figure, beyond ±{:.0}%",
                off * 100.0,
                NEAR * 100.0
            ),
        )
    }
}

/// Several absolute figures: reproduced only if each is.
pub fn all_near(pairs: &[(&str, f64, f64)]) -> (Verdict, String) {
    let parts: Vec<(Verdict, String)> = pairs.iter().map(|&(_, o, d)| near(o, d)).collect();
    let verdict = if parts.iter().all(|p| p.0 == Verdict::Reproduced) {
        Verdict::Reproduced
    } else {
        Verdict::Differs
    };
    let reason = pairs
        .iter()
        .zip(&parts)
        .map(|((name, _, _), (_, r))| format!("{name}: {r}"))
        .collect::<Vec<_>>()
        .join("; ");
    (verdict, reason)
}

/// The verdict on a relation, with the rule that was checked.
pub fn holds(ok: bool, rule: impl Into<String>) -> (Verdict, String) {
    (
        if ok { Verdict::Holds } else { Verdict::Fails },
        rule.into(),
    )
}

/// The claims table of the printed report.
pub fn table(claims: &[Claim]) -> String {
    let mut s = String::from("claims of the document, beside this machine\n");
    for c in claims {
        let _ = writeln!(s, "  [{}] {}", c.verdict, c.claim);
        let _ = writeln!(s, "      document: {} ({})", c.document, c.place);
        let _ = writeln!(s, "      here:     {}", c.ours);
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
        }
    }

    /// Where in the document the claim stands: its section, table or figure, as the
    /// document names it (`"Results, 1 MHz table"`).
    pub fn at(mut self, place: &'static str) -> Claim {
        self.place = place;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_verdict_has_its_own_word() {
        let words = [
            (Verdict::Reproduced, "reproduced"),
            (Verdict::Differs, "differs"),
            (Verdict::Holds, "holds"),
            (Verdict::Fails, "fails"),
            (Verdict::NotMeasurableHere, "not measurable here"),
            (Verdict::NotMeasured, "not measured"),
        ];
        for (v, w) in words {
            assert_eq!(v.as_str(), w);
            assert_eq!(serde_json::to_value(v).unwrap(), w);
        }
    }
}
