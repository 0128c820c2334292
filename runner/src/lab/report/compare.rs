//! `runner compare DIR_A DIR_B`: two result folders side by side, from their results
//! JSON alone (`lab::schema`): the figures that moved beyond both runs' spreads, and
//! every claim whose verdict changed.

use super::{load, num, str_of};
use crate::lab::error::Result;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;

/// One figure of one contender in a results folder.
struct Figure {
    value: Option<f64>,
    unit: String,
    runs: Vec<f64>,
}

fn figures(results: &[Value]) -> Vec<((String, String, String), Figure)> {
    let mut out = Vec::new();
    for r in results {
        let exp = str_of(&r["experiment"]);
        for v in r["variants"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            let who = match v["mode"].as_str() {
                Some(m) => format!("{} ({m})", str_of(&v["name"])),
                None => str_of(&v["name"]).to_string(),
            };
            for (k, f) in v["figures"].as_object().into_iter().flatten() {
                out.push((
                    (exp.to_string(), who.clone(), k.clone()),
                    Figure {
                        value: f["value"].as_f64(),
                        unit: str_of(&f["unit"]).to_string(),
                        runs: f["runs"]
                            .as_array()
                            .map(|a| a.iter().filter_map(Value::as_f64).collect())
                            .unwrap_or_default(),
                    },
                ));
            }
        }
    }
    out
}

/// Whether two figures differ by more than the run-to-run spread the two folders show:
/// their runs' ranges do not overlap, and their medians lie further apart than the two
/// ranges' widths together. `None` when either side has fewer than two runs.
pub fn beyond_spread(a: &[f64], b: &[f64]) -> Option<bool> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let range = |v: &[f64]| {
        v.iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            })
    };
    let median = |v: &[f64]| crate::lab::measure::median(v.to_vec()).unwrap_or(f64::NAN);
    let ((alo, ahi), (blo, bhi)) = (range(a), range(b));
    let (ma, mb) = (median(a), median(b));
    let apart = (mb - ma).abs();
    let relative = apart / ma.abs().max(f64::MIN_POSITIVE);
    Some(
        (blo > ahi || bhi < alo) && apart > (ahi - alo) + (bhi - blo) && relative >= MIN_DIFFERENCE,
    )
}

/// The smallest relative difference `runner compare` flags: below it a difference is
/// within the lab's own resolution (latencies are merged at 3 significant figures, a
/// paced rate is the offered rate to within parts per million).
pub const MIN_DIFFERENCE: f64 = 0.01;

/// `runner compare`: for every contender and figure the two folders have in common, B
/// over A, flagged where the runs of the two do not overlap (the difference is larger
/// than the run-to-run spread each folder shows).
pub fn compare(a_dir: &Path, b_dir: &Path) -> Result<String> {
    let (a, b) = (load(a_dir)?, load(b_dir)?);
    let fb = figures(&b);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "B / A for every figure both hold (A: {}, B: {}). `!` marks a difference beyond the run-to-run spread: the runs of A and of B do not overlap, their medians lie further apart than the widths of the two sets of runs together, and by 1% or more. `?` marks a figure with fewer than two runs on one side (no spread to judge by).",
        a_dir.display(),
        b_dir.display()
    );
    let _ = writeln!(
        s,
        "{:<10} {:<34} {:<24} {:>12} {:>12} {:>8}",
        "experiment", "contender", "figure", "A", "B", "B / A"
    );
    let (mut shown, mut flagged) = (0, 0);
    for (key, fa) in figures(&a) {
        let Some((_, fbv)) = fb.iter().find(|(k, _)| *k == key) else {
            continue;
        };
        let (Some(x), Some(y)) = (fa.value, fbv.value) else {
            continue;
        };
        if fa.unit != fbv.unit {
            continue;
        }
        let ratio = if x != 0.0 {
            format!("{:.3}", y / x)
        } else {
            "-".into()
        };
        let mark = match beyond_spread(&fa.runs, &fbv.runs) {
            Some(true) => {
                flagged += 1;
                " !"
            }
            Some(false) => "",
            None => " ?",
        };
        shown += 1;
        let _ = writeln!(
            s,
            "{:<10} {:<34} {:<24} {:>12} {:>12} {:>8}{mark}",
            key.0,
            key.1,
            format!("{} ({})", key.2, fa.unit),
            num(&Value::from(x)),
            num(&Value::from(y)),
            ratio
        );
    }
    let _ = writeln!(
        s,
        "{shown} figures in common; {flagged} differ beyond the spread of their runs."
    );
    s.push('\n');
    s.push_str(&verdict_changes(&a, &b));
    Ok(s)
}

/// Every claim of a set of results, keyed by (experiment, id, occurrence of that id
/// in the experiment): (key, claim text, verdict).
fn verdicts(results: &[Value]) -> Vec<((String, String, usize), String, String)> {
    let mut out: Vec<((String, String, usize), String, String)> = Vec::new();
    for r in results {
        let exp = str_of(&r["experiment"]).to_string();
        for c in r["claims"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            let id = str_of(&c["id"]).to_string();
            let k = out
                .iter()
                .filter(|((e, i, _), _, _)| *e == exp && *i == id)
                .count();
            out.push((
                (exp.clone(), id, k),
                str_of(&c["claim"]).to_string(),
                str_of(&c["verdict"]).to_string(),
            ));
        }
    }
    out
}

/// The claims whose verdict differs between two sets of results (and those judged in
/// only one of them), one line each.
fn verdict_changes(a: &[Value], b: &[Value]) -> String {
    let (va, vb) = (verdicts(a), verdicts(b));
    let mut s = String::new();
    let mut changed = Vec::new();
    let mut common = 0;
    for (key, claim, x) in &va {
        match vb.iter().find(|(k, _, _)| k == key) {
            Some((_, _, y)) => {
                common += 1;
                if x != y {
                    changed.push(format!("  {:<10} {:<40} {x} -> {y}: {claim}", key.0, key.1));
                }
            }
            None => changed.push(format!(
                "  {:<10} {:<40} {x} -> (not in B): {claim}",
                key.0, key.1
            )),
        }
    }
    for (key, claim, y) in &vb {
        if !va.iter().any(|(k, _, _)| k == key) {
            changed.push(format!(
                "  {:<10} {:<40} (not in A) -> {y}: {claim}",
                key.0, key.1
            ));
        }
    }
    let _ = writeln!(
        s,
        "Verdicts: {common} claims in both; {} changed (A -> B){}",
        changed.len(),
        if changed.is_empty() { "." } else { ":" }
    );
    for line in changed {
        let _ = writeln!(s, "{line}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_lists_every_claim_whose_verdict_changed() {
        let run = |tail: &str, extra: bool| {
            let mut claims = vec![
                serde_json::json!({"id": "throughput", "claim": "ring", "verdict": "reproduced"}),
                serde_json::json!({"id": "throughput", "claim": "boost", "verdict": tail}),
                serde_json::json!({"id": "mutex-tail", "claim": "mutex", "verdict": "holds"}),
            ];
            if extra {
                claims.push(serde_json::json!({"id": "new", "claim": "n", "verdict": "holds"}));
            }
            vec![serde_json::json!({"experiment": "queue", "claims": claims})]
        };
        let same = verdict_changes(&run("differs", false), &run("differs", false));
        assert_eq!(same, "Verdicts: 3 claims in both; 0 changed (A -> B).\n");
        let out = verdict_changes(&run("differs", false), &run("reproduced", true));
        assert!(
            out.starts_with("Verdicts: 3 claims in both; 2 changed (A -> B):"),
            "{out}"
        );
        // The second claim of the id, not the first.
        assert!(
            out.contains("throughput") && out.contains("differs -> reproduced: boost"),
            "{out}"
        );
        assert!(out.contains("(not in A) -> holds: n"), "{out}");
        assert!(!out.contains("ring"), "{out}");
    }

    #[test]
    fn a_difference_counts_only_beyond_both_spreads() {
        // Apart by 5, spreads 1 and 1.
        assert_eq!(beyond_spread(&[1.0, 2.0], &[6.0, 7.0]), Some(true));
        // Overlapping runs.
        assert_eq!(beyond_spread(&[1.0, 2.0], &[1.5, 3.0]), Some(false));
        // Not overlapping, but the medians (1.5, 2.75) are closer than the spreads
        // together (1 + 0.5).
        assert_eq!(beyond_spread(&[1.0, 2.0], &[2.5, 3.0]), Some(false));
        assert_eq!(
            beyond_spread(&[10.0, 10.0, 10.0], &[11.0, 11.0]),
            Some(true)
        );
        assert_eq!(beyond_spread(&[1.0], &[5.0, 6.0]), None);
    }
}
