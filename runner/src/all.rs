//! The reproduction commands: `runner all` (every experiment into one folder per
//! machine, then `REPORT.md`), `runner report DIR` (the report and the charts again,
//! from the JSON alone) and `runner compare DIR_A DIR_B`.

use crate::experiments::REGISTRY;
use crate::lab::env::this_machine_tag;
use crate::lab::error::{Error, Result};
use crate::lab::experiment::{Entry, Scale};
use crate::lab::report;
use crate::lab::results::{check_writable, write_atomic};
use crate::lab::stop;
use crate::lab::topology::Topology;
use clap::{Arg, ArgAction, ArgMatches, Command};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `runner all`, `runner report`, `runner compare`.
pub fn commands() -> [Command; 3] {
    let names: Vec<String> = REGISTRY
        .iter()
        .map(|e| format!("{} {}", e.name(), e.all(Scale::Default).flags.join(" ")))
        .collect();
    let all = Command::new("all")
        .about(format!(
            "Every experiment, one after the other, into <out>/<machine>/ with REPORT.md (about ten minutes on 2 cores; --smoke under one, --quick about two, --full the documents' sizes): {}",
            names.join("; ")
        ))
        .arg(
            Arg::new("out")
                .long("out")
                .value_parser(clap::value_parser!(PathBuf))
                .default_value("handoff-results")
                .help("Output directory: the results go into a folder named after this machine inside it"),
        )
        .arg(
            Arg::new("smoke")
                .long("smoke")
                .action(ArgAction::SetTrue)
                .conflicts_with_all(["quick", "full"])
                .help("The smallest runs that take every path once (under a minute here; a few minutes on an emulated machine): checks that everything runs, its figures mean little"),
        )
        .arg(
            Arg::new("quick")
                .long("quick")
                .action(ArgAction::SetTrue)
                .conflicts_with("full")
                .help("Smaller runs: about two minutes in all, for a first look"),
        )
        .arg(
            Arg::new("full")
                .long("full")
                .action(ArgAction::SetTrue)
                .help("The documents' own sizes (the allocator test's 1.3 GB working set)"),
        )
        .arg(
            Arg::new("clock")
                .long("clock")
                .value_parser(["auto", "tsc", "monotonic"])
                .help("Passed to every experiment: what the stamps read [default: auto, the TSC where it is usable, else CLOCK_MONOTONIC]"),
        );
    let report = Command::new("report")
        .about("Writes REPORT.md and every chart again from the results JSON of a folder (byte for byte what runner all wrote)")
        .arg(
            Arg::new("dir")
                .required(true)
                .value_parser(clap::value_parser!(PathBuf))
                .help("A folder runner all wrote"),
        );
    let compare = Command::new("compare")
        .about("Compares two result folders: B / A for every figure both hold, flagging differences beyond the run-to-run spread")
        .arg(
            Arg::new("a")
                .required(true)
                .value_parser(clap::value_parser!(PathBuf))
                .help("The first folder (A)"),
        )
        .arg(
            Arg::new("b")
                .required(true)
                .value_parser(clap::value_parser!(PathBuf))
                .help("The second folder (B)"),
        );
    [all, report, compare]
}

/// A validated `runner all`: where it writes and what it runs.
pub struct AllPlan {
    scale: Scale,
    /// Each experiment, validated, and its command line (its flags at the scale, and
    /// `--out` staging), in registry order.
    runs: Vec<(&'static dyn Entry, Vec<String>)>,
    /// `<out>/<machine>`: where the results land when everything ran.
    folder: PathBuf,
    /// Where the experiments write until then.
    staging: PathBuf,
}

/// Validates `runner all`: the output folder, then every experiment with its flags at
/// the chosen scale (writing into a staging folder beside the final one).
pub fn prepare(sub: &ArgMatches, topo: &Topology) -> Result<AllPlan> {
    let out = sub
        .get_one::<PathBuf>("out")
        .cloned()
        .unwrap_or_else(|| PathBuf::from("handoff-results"));
    check_writable(&out)?;
    let scale = if sub.get_flag("smoke") {
        Scale::Smoke
    } else if sub.get_flag("quick") {
        Scale::Quick
    } else if sub.get_flag("full") {
        Scale::Full
    } else {
        Scale::Default
    };
    let tag = this_machine_tag(topo);
    let folder = out.join(&tag);
    let staging = out.join(format!(".{tag}.partial-{}", std::process::id()));
    let staging_arg = staging.to_string_lossy().into_owned();
    let runs = REGISTRY
        .iter()
        .map(|e| {
            let mut argv = vec![e.name()];
            argv.extend_from_slice(e.all(scale).flags);
            argv.extend_from_slice(&["--out", &staging_arg]);
            if let Some(clock) = sub.get_one::<String>("clock") {
                argv.extend_from_slice(&["--clock", clock]);
            }
            let m = e
                .command()
                .try_get_matches_from(&argv)
                .map_err(|err| Error::from_clap(&err))?;
            // Validated here, before anything runs; the child validates it again.
            e.prepare(&m, topo)?;
            Ok((*e, argv.iter().map(|a| a.to_string()).collect()))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(AllPlan {
        scale,
        runs,
        folder,
        staging,
    })
}

/// Runs every experiment, each as a runner process of its own, into the staging folder,
/// one progress line before each (the time spent and about how long is left), writes
/// `REPORT.md`, and moves the folder into place. On failure or Ctrl-C the staging folder is removed: no partial results.
pub fn run(plan: AllPlan) -> Result<()> {
    // Ctrl-C reaches every child too; this process waits for them and cleans up.
    stop::install();
    let result = run_into(&plan);
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&plan.staging);
    }
    result
}

fn run_into(plan: &AllPlan) -> Result<()> {
    let start = Instant::now();
    let estimates: Vec<f64> = plan
        .runs
        .iter()
        .map(|(e, _)| f64::from(e.all(plan.scale).seconds))
        .collect();
    let n = plan.runs.len();
    for (i, (e, argv)) in plan.runs.iter().enumerate() {
        let spent = start.elapsed().as_secs_f64();
        let done: f64 = estimates[..i].iter().sum();
        // The estimates scaled by how this machine has fared against them so far.
        let pace = if done > 0.0 { spent / done } else { 1.0 };
        let left: f64 = estimates[i..].iter().sum::<f64>() * pace;
        println!(
            "\n[{}/{n}] runner {} ({}): {} spent, about {} left",
            i + 1,
            e.name(),
            e.document().file,
            clock(spent),
            clock(left)
        );
        run_child(e.name(), argv)?;
        stop::check()?;
    }
    stop::check()?;
    record_final_folder(&plan.staging, &plan.folder)?;
    let results = report::load(&plan.staging)?;
    let text = report::render(&results);
    write_atomic(&plan.staging.join(report::REPORT), text.as_bytes())
        .map_err(|e| Error::Output(format!("writing {}: {e}", report::REPORT)))?;
    stop::check()?;
    replace_folder(&plan.staging, &plan.folder)?;
    println!(
        "\nall {n} experiments in {}: {}",
        clock(start.elapsed().as_secs_f64()),
        plan.folder.join(report::REPORT).display()
    );
    Ok(())
}

/// Runs one experiment as a runner process of its own, so that each starts from a fresh
/// heap (an experiment that measures resident memory would otherwise see the memory the
/// ones before it freed) and a fresh allocator state. It writes its files into the
/// staging folder itself; Ctrl-C reaches it too and it writes nothing.
fn run_child(name: &str, argv: &[String]) -> Result<()> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::Run(format!("runner {name}: cannot find this program: {e}")))?;
    let failed = |e: std::io::Error| Error::Run(format!("runner {name}: {e}"));
    let mut child = std::process::Command::new(exe)
        .args(argv)
        .spawn()
        .map_err(failed)?;
    // A Ctrl-C at a terminal reaches the child as well; a SIGINT sent to this process
    // alone is passed on if the child is still running a second later.
    let mut asked: Option<Instant> = None;
    let mut passed_on = false;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(failed)? {
            break status;
        }
        if stop::requested() && !passed_on {
            let since = *asked.get_or_insert_with(Instant::now);
            if since.elapsed().as_millis() >= 1000 {
                let _ = std::process::Command::new("kill")
                    .args(["-INT", &child.id().to_string()])
                    .status();
                passed_on = true;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    match status.code() {
        Some(0) => Ok(()),
        Some(130) => Err(Error::Interrupted),
        _ if stop::requested() => Err(Error::Interrupted),
        code => Err(Error::Run(format!(
            "runner {name} failed ({}); nothing of this run was kept",
            code.map_or_else(
                || "killed by a signal".to_string(),
                |c| format!("exit status {c}")
            )
        ))),
    }
}

/// Moves `from` to `to`, replacing a folder an earlier run left there.
fn replace_folder(from: &Path, to: &Path) -> Result<()> {
    let fail =
        |e: std::io::Error| Error::Output(format!("moving the results to {}: {e}", to.display()));
    if to.exists() {
        let old = to.with_file_name(format!(
            ".{}.replaced-{}",
            to.file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default(),
            std::process::id()
        ));
        std::fs::rename(to, &old).map_err(fail)?;
        std::fs::rename(from, to).map_err(fail)?;
        let _ = std::fs::remove_dir_all(&old);
    } else {
        std::fs::rename(from, to).map_err(fail)?;
    }
    Ok(())
}

fn clock(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    format!("{}:{:02}", s / 60, s % 60)
}

/// `runner report DIR`.
pub fn report(sub: &ArgMatches) -> Result<()> {
    let dir = sub
        .get_one::<PathBuf>("dir")
        .ok_or_else(|| Error::Usage("name a folder".into()))?;
    let results = report::load(dir)?;
    let charts = report::charts(&results)?;
    let path = dir.join(report::REPORT);
    write_atomic(&path, report::render(&results).as_bytes())
        .map_err(|e| Error::Output(format!("writing {}: {e}", path.display())))?;
    println!("wrote {}", path.display());
    for (file, svg) in charts {
        let path = dir.join(file);
        write_atomic(&path, svg.as_bytes())
            .map_err(|e| Error::Output(format!("writing {}: {e}", path.display())))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// `runner compare A B`.
pub fn compare(sub: &ArgMatches) -> Result<()> {
    let get = |k: &str| {
        sub.get_one::<PathBuf>(k)
            .ok_or_else(|| Error::Usage("name two folders".into()))
    };
    print!("{}", report::compare(get("a")?, get("b")?)?);
    Ok(())
}

/// Each experiment's JSON records the folder it was written to (`config.out`); in
/// `runner all` that is the staging folder, which is renamed when every experiment is
/// done. Rewrites it to the folder the results end up in, as the user named it.
fn record_final_folder(staging: &Path, folder: &Path) -> Result<()> {
    let fail = |what: &Path, e: String| Error::Output(format!("{}: {e}", what.display()));
    let entries = std::fs::read_dir(staging).map_err(|e| fail(staging, e.to_string()))?;
    for entry in entries {
        let path = entry.map_err(|e| fail(staging, e.to_string()))?.path();
        if path.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        let bytes = std::fs::read(&path).map_err(|e| fail(&path, e.to_string()))?;
        let mut json: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| fail(&path, e.to_string()))?;
        let Some(out) = json.pointer_mut("/config/out") else {
            continue;
        };
        *out = serde_json::Value::String(folder.display().to_string());
        let text = serde_json::to_vec_pretty(&json).map_err(|e| fail(&path, e.to_string()))?;
        write_atomic(&path, &text).map_err(|e| fail(&path, e.to_string()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_results_record_the_folder_they_end_up_in() {
        let dir = std::env::temp_dir().join(format!("handoff-all-out-{}", std::process::id()));
        let staging = dir.join(".m.partial-1");
        std::fs::create_dir_all(&staging).unwrap();
        let json = staging.join("queue.json");
        std::fs::write(
            &json,
            br#"{"config": {"out": "/tmp/x/.m.partial-1", "runs": 5}, "claims": []}"#,
        )
        .unwrap();
        std::fs::write(staging.join("queue.txt"), b"not json").unwrap();
        record_final_folder(&staging, Path::new("handoff-results/m")).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(v["config"]["out"], "handoff-results/m");
        assert_eq!(v["config"]["runs"], 5, "the rest is kept");
        assert_eq!(
            std::fs::read(staging.join("queue.txt")).unwrap(),
            b"not json"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_experiment_takes_its_flags_at_every_scale() {
        for scale in [Scale::Smoke, Scale::Quick, Scale::Default, Scale::Full] {
            for e in REGISTRY {
                let mut argv = vec![e.name()];
                argv.extend_from_slice(e.all(scale).flags);
                e.command()
                    .try_get_matches_from(argv)
                    .unwrap_or_else(|err| panic!("{} at {scale:?}: {err}", e.name()));
            }
        }
    }

    #[test]
    fn the_quick_run_is_quicker_than_the_default() {
        let total = |s: Scale| REGISTRY.iter().map(|e| e.all(s).seconds).sum::<u32>();
        assert!(total(Scale::Quick) <= 150, "{}", total(Scale::Quick));
        assert!(total(Scale::Quick) < total(Scale::Default));
        assert!(total(Scale::Smoke) < total(Scale::Quick));
        assert!(total(Scale::Default) <= total(Scale::Full));
    }

    #[test]
    fn a_folder_replaces_the_one_an_earlier_run_left() {
        let dir = tempfile::tempdir().unwrap();
        let (from, to) = (dir.path().join("new"), dir.path().join("tag"));
        std::fs::create_dir_all(&from).unwrap();
        std::fs::write(from.join("a"), "new").unwrap();
        std::fs::create_dir_all(&to).unwrap();
        std::fs::write(to.join("a"), "old").unwrap();
        replace_folder(&from, &to).unwrap();
        assert_eq!(std::fs::read_to_string(to.join("a")).unwrap(), "new");
        assert!(!from.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
