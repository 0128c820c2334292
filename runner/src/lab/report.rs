//! The reproduction report and the comparison of two result folders, both drawn from the
//! results JSON alone (`lab::schema`): `REPORT.md` and the charts (`runner all`,
//! `runner report DIR`) and `runner compare DIR_A DIR_B` (`compare`). The same JSON
//! gives the same bytes.

mod compare;
mod host;

pub use compare::{beyond_spread, compare, MIN_DIFFERENCE};
use host::{by_placement, noise, placements};

use super::chart::Chart;
use super::claims;
use super::error::{Error, Result};
use super::schema;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One results file, checked against the schema: `None` for JSON that is not a
/// results file (no `schema` or `experiment`), else what is wrong with it.
pub fn read_results(path: &Path) -> std::result::Result<Option<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))?;
    if v.get("schema").is_none() || v.get("experiment").is_none() {
        return Ok(None);
    }
    schema::check(&v)
        .map_err(|e| format!("not a results file of schema {}: {e}", schema::SCHEMA))?;
    Ok(Some(v))
}

/// The report's file name.
pub const REPORT: &str = "REPORT.md";

/// The file `runner all` writes beside the results when an experiment did not finish:
/// `{"failed": [{"experiment", "why"}], "not_run": [names]}`. The report names them.
pub const INCOMPLETE: &str = "incomplete.json";

/// The experiments of a folder that did not finish (its [`INCOMPLETE`] file; `None`
/// when every experiment finished).
pub fn load_incomplete(dir: &Path) -> Result<Option<Value>> {
    let path = dir.join(INCOMPLETE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::Usage(format!("{}: {e}", path.display()))),
    };
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| Error::Usage(format!("{}: not JSON: {e}", path.display())))?;
    if !v["failed"].is_array() {
        return Err(Error::Usage(format!(
            "{}: failed: missing or not an array",
            path.display()
        )));
    }
    Ok(Some(v))
}

/// Every results file of `dir` (`<experiment>.json`), checked against the schema, in
/// the order of their documents' numbers. An error names the file and what is wrong.
pub fn load(dir: &Path) -> Result<Vec<Value>> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| Error::Usage(format!("{}: {e}", dir.display())))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for p in paths {
        if let Some(v) =
            read_results(&p).map_err(|why| Error::Usage(format!("{}: {why}", p.display())))?
        {
            out.push(v);
        }
    }
    if out.is_empty() {
        return Err(Error::Usage(format!(
            "{}: no results files (<experiment>.json) here",
            dir.display()
        )));
    }
    out.sort_by(|a, b| str_of(&a["document"]["file"]).cmp(str_of(&b["document"]["file"])));
    Ok(out)
}

/// The section naming the experiments of an incomplete run, but those whose results
/// are in the folder now (run again into it since).
fn unfinished(s: &mut String, inc: &Value, results: &[Value]) {
    let here = |name: &str| results.iter().any(|r| r["experiment"] == name);
    let listed = |key: &str| -> Vec<Value> {
        inc[key]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
            .iter()
            .filter(|v| {
                let name = if v.is_string() { v } else { &v["experiment"] };
                !here(str_of(name))
            })
            .cloned()
            .collect()
    };
    let (failed, not_run) = (listed("failed"), listed("not_run"));
    if failed.is_empty() && not_run.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "## Incomplete run\n\nNot every experiment finished; this report holds those that did. `runner all` exited non-zero.\n"
    );
    for f in &failed {
        let _ = writeln!(
            s,
            "* `{}` failed: {}",
            str_of(&f["experiment"]),
            str_of(&f["why"]).replace('\n', " ")
        );
    }
    for n in &not_run {
        let _ = writeln!(
            s,
            "* `{}` did not run: the run stopped before it",
            str_of(n)
        );
    }
    s.push('\n');
}

/// The section listing what this machine lacks: every contender or program the runs
/// found unavailable, and every claim left unmeasured for a missing tool, each with
/// the line that installs it (once per distinct text).
fn lacking(s: &mut String, results: &[Value]) {
    let mut seen: Vec<(String, String)> = Vec::new();
    let mut note = |experiment: &str, why: &str| {
        let item = (experiment.to_string(), why.to_string());
        if why.contains("install") && !seen.contains(&item) {
            seen.push(item);
        }
    };
    for r in results {
        let experiment = str_of(&r["experiment"]);
        for v in r["variants"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            note(experiment, str_of(&v["unavailable"]));
        }
        for c in r["claims"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            if c["verdict"] == "not measured" || c["verdict"] == "not measurable here" {
                note(experiment, str_of(&c["reason"]));
            }
        }
    }
    if seen.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "## Not installed here\n\nWhat the runs could not measure for want of an optional package, and the line that installs it (the README's one line installs them all):\n"
    );
    for (experiment, why) in seen {
        let _ = writeln!(s, "* `{experiment}`: {}", why.replace('\n', " "));
    }
    s.push('\n');
}

pub(super) fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// A JSON array of strings as `[a] [b]` (empty when absent).
fn bracketed(v: &Value) -> String {
    v.as_array()
        .map(|g| {
            g.iter()
                .map(|x| format!("[{}]", str_of(x)))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// A number as the report prints it: up to four significant figures, no exponent.
pub(super) fn num(v: &Value) -> String {
    match v.as_f64() {
        None => "-".into(),
        Some(x) if x == x.trunc() && x.abs() < 1e15 => format!("{}", x as i64),
        Some(x) if x.abs() >= 100.0 => format!("{x:.0}"),
        Some(x) if x.abs() >= 1.0 => format!("{x:.2}"),
        Some(x) => format!("{x:.3}"),
    }
}

/// `REPORT.md` of a set of results: the machine, then per document every claim with
/// the document's figure, ours, the verdict and its reason, the headline figures of
/// every contender, the noise probes and the charts.
pub fn render(results: &[Value], incomplete: Option<&Value>) -> String {
    let mut s = String::from("# Reproduction report\n\n");
    let _ = writeln!(
        s,
        "Generated from the results JSON in this folder (`runner report` writes it again, byte for byte). Every claim of the source documents that the runner judges, with the document's figure, this machine's, the verdict and its reason. Verdicts: *reproduced* / *differs* for an absolute figure within / beyond 25% of the document's; *holds* / *fails* for a relation; *within noise* where the margin is smaller than the run-to-run spread (the repeats' own ratios fall on both sides of the line, or the median or the figure lies within 5% of it); *not measurable here* where this machine's noise or topology puts the claim out of reach; *not measured* where the run did not measure what the claim needs.\n"
    );
    if let Some(first) = results.first() {
        machine(&mut s, &first["env"], &revisions(results));
    }
    if results.iter().any(|r| r["env"]["emulated_cpus"] == true) {
        let _ = writeln!(
            s,
            "**Emulated CPUs.** These runs took place on CPUs emulated in software (QEMU's TCG: several guest CPUs on each host core). They show that every path runs on this topology, with these pins and placements; every claim judged on a timing is *not measurable here (emulated CPUs)*, whatever its figures. The noise probe and the placement probe show the sharing too. Memory and placement claims keep their verdicts.\n"
        );
    }
    if let Some(inc) = incomplete {
        unfinished(&mut s, inc, results);
    }
    lacking(&mut s, results);
    let _ = writeln!(s, "## Verdicts\n");
    let _ = writeln!(s, "| document | experiment | claims | reproduced | holds | differs | fails | within noise | not measurable here | not measured |");
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|");
    for r in results {
        let claims = r["claims"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        let count = |v: &str| claims.iter().filter(|c| c["verdict"] == v).count();
        let _ = writeln!(
            s,
            "| {} | `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
            str_of(&r["document"]["file"]),
            str_of(&r["experiment"]),
            claims.len(),
            count("reproduced"),
            count("holds"),
            count("differs"),
            count("fails"),
            count("within noise"),
            count("not measurable here"),
            count("not measured")
        );
    }
    s.push('\n');
    for r in results {
        document(&mut s, r);
    }
    s
}

/// The revisions the results were measured at: one, or each with its experiments when
/// the folder mixes runs of several.
fn revisions(results: &[Value]) -> String {
    let mut by: Vec<(&str, Vec<&str>)> = Vec::new();
    for r in results {
        let rev = str_of(&r["env"]["git_revision"]);
        let name = str_of(&r["experiment"]);
        match by.iter_mut().find(|(x, _)| *x == rev) {
            Some((_, names)) => names.push(name),
            None => by.push((rev, vec![name])),
        }
    }
    if by.len() == 1 {
        return by[0].0.to_string();
    }
    by.iter()
        .map(|(rev, names)| format!("{rev} ({})", names.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

fn machine(s: &mut String, env: &Value, revisions: &str) {
    let _ = writeln!(s, "## This machine\n");
    let tsc = &env["tsc"];
    let rows = [
        ("CPU", str_of(&env["cpu_model"]).to_string()),
        (
            "cores",
            format!(
                "{} online ({}), this process may use {}",
                num(&env["cores_online"]),
                str_of(&env["online_cpus"]),
                str_of(&env["allowed_cpus"])
            ),
        ),
        ("L3 groups", bracketed(&env["l3_groups"])),
        ("NUMA nodes", bracketed(&env["numa_nodes"])),
        ("virtualisation", str_of(&env["virtualization"]).to_string()),
        ("kernel", str_of(&env["kernel"]).to_string()),
        if str_of(&tsc["source"]) == "monotonic" {
            (
                "clock",
                format!(
                    "CLOCK_MONOTONIC, not the TSC ({}; invariant TSC: {}), stamps resolve to {} ns",
                    str_of(&tsc["fallback_reason"]),
                    tsc["invariant_tsc"],
                    num(&env["clock_read_cost_ns"]["step_ns"])
                ),
            )
        } else {
            (
                "TSC",
                format!(
                    "{} GHz, {} (invariant: {}), calibration error {} ppm",
                    tsc["freq_hz"]
                        .as_f64()
                        .map_or("-".into(), |f| format!("{:.4}", f / 1e9)),
                    str_of(&tsc["source"]),
                    tsc["invariant_tsc"],
                    num(&tsc["error_ppm"])
                ),
            )
        },
        (
            "compilers",
            format!("{}; {}", str_of(&env["rustc"]), str_of(&env["cxx"])),
        ),
        ("revision", revisions.to_string()),
    ];
    let _ = writeln!(s, "| | |\n|---|---|");
    for (k, v) in rows {
        let _ = writeln!(s, "| {k} | {v} |");
    }
    s.push('\n');
}

fn document(s: &mut String, r: &Value) {
    let name = str_of(&r["experiment"]);
    let _ = writeln!(
        s,
        "## {} \"{}\" (`runner {name}`)\n",
        str_of(&r["document"]["file"]),
        str_of(&r["document"]["title"])
    );
    let env = &r["env"];
    let pins = env["pins"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    format!(
                        "{k} {}",
                        if v.is_null() {
                            "unpinned".into()
                        } else {
                            num(v)
                        }
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "Run {} to {}; pins: {pins}.",
        str_of(&r["started"]),
        str_of(&r["finished"])
    );
    if let Some(note) = env["pin_note"].as_str() {
        let _ = writeln!(s, "Placement: {}.", note.trim_end_matches('.'));
    }
    noise(s, &env["noise"]);
    placements(s, &r["placements"]);
    s.push('\n');
    let _ = writeln!(s, "### Claims\n");
    let _ = writeln!(s, "| verdict | claim | where | document | here | why |");
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for c in r["claims"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let _ = writeln!(
            s,
            "| **{}** | {} | {} | {} | {} | {} |",
            claims::label(str_of(&c["verdict"]), str_of(&c["reason"])),
            cell(&c["claim"]),
            cell(&c["where"]),
            cell(&c["document"]),
            cell(&c["ours"]),
            cell(&c["reason"])
        );
    }
    s.push('\n');
    let _ = writeln!(s, "### Contenders\n");
    for v in r["variants"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let label = match v["mode"].as_str() {
            Some(m) => format!("{} ({m})", str_of(&v["name"])),
            None => str_of(&v["name"]).to_string(),
        };
        if let Some(why) = v["unavailable"].as_str() {
            let _ = writeln!(s, "* {label}: {why}");
            continue;
        }
        let figures = v["figures"]
            .as_object()
            .map(|f| {
                f.iter()
                    .map(|(k, x)| format!("{k} {} {}", num(&x["value"]), str_of(&x["unit"])))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        let _ = writeln!(s, "* {label}: {figures}{}", by_placement(&v["placements"]));
    }
    s.push('\n');
    let charts: Vec<&str> = r["charts"]
        .as_array()
        .map(|a| a.iter().map(str_of).collect())
        .unwrap_or_default();
    if !charts.is_empty() {
        let _ = writeln!(s, "### Charts\n");
        for c in charts {
            let _ = writeln!(s, "![{c}]({c})");
        }
        s.push('\n');
    }
}

/// Every chart of `results`, drawn again from its data (`chart_data`): (file name, SVG
/// text). A chart whose data cannot be read is an error naming its file.
pub fn charts(results: &[Value]) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for r in results {
        for c in r["chart_data"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            let file = str_of(&c["file"]).to_string();
            if file.is_empty() || file.contains(['/', '\\']) || file.starts_with('.') {
                return Err(Error::Usage(format!(
                    "{}: chart_data names a bad file {file:?}",
                    str_of(&r["experiment"])
                )));
            }
            let chart: Chart = serde_json::from_value(c["chart"].clone()).map_err(|e| {
                Error::Usage(format!(
                    "{}: chart_data for {file}: {e}",
                    str_of(&r["experiment"])
                ))
            })?;
            out.push((file, chart.render()?));
        }
    }
    Ok(out)
}

/// A table cell: one line, pipes escaped.
fn cell(v: &Value) -> String {
    str_of(v).replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests;
