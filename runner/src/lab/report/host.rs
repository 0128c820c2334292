//! The report's lines on where a run measured: the placements of the cores it saw and
//! the noise probe's figures (`lab::report` renders them under each experiment's claims).

use super::{num, str_of};
use serde_json::Value;
use std::fmt::Write as _;

/// The placements of the two measured cores that the probes between slices found
/// (`lab::placed`), if the experiment probed.
pub(super) fn placements(s: &mut String, p: &Value) {
    let Some(classes) = p["classes"].as_array() else {
        return;
    };
    let list = classes
        .iter()
        .map(|c| format!("{} ({} probes)", str_of(&c["placement"]), num(&c["probes"])))
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(
        s,
        "Placements of the two measured cores ({}): {list}; {} of {} probes in none. Comparative claims are judged within one placement.",
        str_of(&p["probe"]),
        num(&p["probes_in_no_class"]),
        num(&p["probes"]),
    );
}

/// A contender's p50 per placement, as a suffix of its line ("" without placements).
pub(super) fn by_placement(p: &Value) -> String {
    let Some(list) = p["by_placement"].as_array() else {
        return String::new();
    };
    let parts: Vec<String> = list
        .iter()
        .map(|x| {
            format!(
                "{} apart: p50 {} ns, p99 {} ns ({} slices)",
                str_of(&x["placement"]),
                num(&x["p50_ns"]),
                num(&x["p99_ns"]),
                num(&x["slices"])
            )
        })
        .collect();
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "; by placement: {}; {} of {} slices moved",
        parts.join("; "),
        num(&p["slices_in_no_placement"]),
        num(&p["slices"])
    )
}

pub(super) fn noise(s: &mut String, n: &Value) {
    for when in ["before", "after"] {
        let p = &n[when];
        let Some(cores) = p["cores"].as_array() else {
            continue;
        };
        let per_core = cores
            .iter()
            .map(|c| {
                format!(
                    "cpu {} {} gaps/s, {:.2}% of the time lost",
                    num(&c["cpu"]),
                    num(&c["per_second"]),
                    c["lost_fraction"].as_f64().unwrap_or(0.0) * 100.0
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        let floor = &p["handoff"];
        let floor = if floor.is_object() {
            format!(
                "; handoff floor p99 {} ns, p99.9 {} ns",
                num(&floor["p99_floor_ns"]),
                num(&floor["p99.9_floor_ns"])
            )
        } else {
            String::new()
        };
        let _ = writeln!(s, "Noise probe {when} the runs: {per_core}{floor}.");
    }
}
