//! `runner all` when an experiment fails late: the others' results and the report are
//! kept, the failure is named, the exit status is non-zero, and an earlier run's folder
//! is kept beside the new one.

use runner::lab::env::this_machine_tag;
use runner::lab::topology::Topology;
use std::process::Command;

#[test]
#[cfg_attr(
    handoff_global_alloc,
    ignore = "runner all's handling of a failure does not depend on the allocator under it (the pass on handoff-alloc is about the allocator)"
)]
fn a_failed_last_experiment_keeps_the_five_others_and_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let folder = out.join(this_machine_tag(&Topology::read()));
    // An earlier run's folder, which the incomplete run must not delete.
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("earlier.txt"), "an earlier run").unwrap();

    let o = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["all", "--smoke", "--out"])
        .arg(&out)
        // The last experiment of the registry fails once it has measured.
        .env("HANDOFF_TEST_FAIL", "programs")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("runner programs: failed on purpose"), "{err}");
    assert!(err.contains("5 of 6 experiments finished"), "{err}");

    for name in ["queue", "pipeline", "pool", "patterns", "alloc"] {
        let json = folder.join(format!("{name}.json"));
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).unwrap_or_else(|e| {
                panic!("{json:?}: {e}\n{err}");
            }))
            .unwrap();
        assert_eq!(v["experiment"], name);
        assert!(folder.join(format!("{name}.txt")).exists(), "{name}.txt");
    }
    // Nothing of the experiment that failed, and no staging folder left behind.
    let names: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n.starts_with("programs")),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.starts_with('.')), "{names:?}");
    let left: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left.len(), 2, "the folder and the earlier one: {left:?}");

    let inc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(folder.join("incomplete.json")).unwrap()).unwrap();
    assert_eq!(inc["failed"][0]["experiment"], "programs");
    assert!(inc["failed"][0]["why"]
        .as_str()
        .unwrap()
        .contains("failed on purpose"));
    let report = std::fs::read_to_string(folder.join("REPORT.md")).unwrap();
    assert!(report.contains("## Incomplete run"), "{report}");
    assert!(
        report.contains("* `programs` failed: failed on purpose"),
        "{report}"
    );
    for name in ["queue", "pipeline", "pool", "patterns", "alloc"] {
        assert!(
            report.contains(&format!("| `{name}` |")),
            "{name} in the report"
        );
    }
    assert!(!report.contains("| `programs` |"), "{report}");

    // `runner report` writes the same report again from the folder.
    let again = Command::new(env!("CARGO_BIN_EXE_runner"))
        .arg("report")
        .arg(&folder)
        .output()
        .unwrap();
    assert!(again.status.success(), "{again:?}");
    assert_eq!(
        std::fs::read_to_string(folder.join("REPORT.md")).unwrap(),
        report
    );

    let previous = out.join(format!(
        "{}.previous",
        folder.file_name().unwrap().to_string_lossy()
    ));
    assert_eq!(
        std::fs::read_to_string(previous.join("earlier.txt")).unwrap(),
        "an earlier run"
    );
}

#[test]
#[cfg_attr(
    handoff_global_alloc,
    ignore = "runner all's handling of Ctrl-C does not depend on the allocator under it"
)]
fn ctrl_c_after_the_first_experiment_keeps_it_and_the_report() {
    // The line before the second experiment starts: the first has finished.
    let (dir, o, seen, rest) = interrupt_at(&["all", "--smoke"], "[2/6]");
    let out = dir.path().join("results");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{seen:?}\n{rest}\n{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        !err.contains("interrupted again"),
        "one signal, passed on once: {err}"
    );
    let folder = out.join(this_machine_tag(&Topology::read()));
    assert!(folder.join("queue.json").exists(), "{err}");
    let inc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(folder.join("incomplete.json")).unwrap()).unwrap();
    let report = std::fs::read_to_string(folder.join("REPORT.md")).unwrap();
    // The signal is passed on to the pipeline experiment as it arrives: the experiment
    // is interrupted then, unless it had just finished.
    let pipeline_done = folder.join("pipeline.json").exists();
    let finished = if pipeline_done { 2 } else { 1 };
    assert!(
        err.contains(&format!(
            "interrupted; {finished} of 6 experiments finished"
        )),
        "{err}"
    );
    if !pipeline_done {
        assert_eq!(inc["failed"][0]["experiment"], "pipeline", "{inc}");
        assert_eq!(
            inc["failed"][0]["why"], "interrupted by Ctrl-C; it wrote nothing",
            "{inc}"
        );
        assert!(
            report.contains("* `pipeline` failed: interrupted by Ctrl-C"),
            "{report}"
        );
    }
    assert_eq!(inc["not_run"].as_array().unwrap().len(), 4, "{inc}");
    assert!(report.contains("* `programs` did not run"), "{report}");
    assert!(report.contains("| `queue` |"), "{report}");
}

/// Runs `runner <args> --out <tmp>/results`, reads its output up to the first line that
/// starts with `line` (the rest on a thread, so that no experiment meets a closed pipe),
/// then sends it SIGINT (Ctrl-C) and waits: the folder, the output, the lines up to the
/// signal and the rest.
fn interrupt_at(
    args: &[&str],
    line: &str,
) -> (tempfile::TempDir, std::process::Output, Vec<String>, String) {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(args)
        .arg("--out")
        .arg(dir.path().join("results"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut seen = Vec::new();
    loop {
        let mut l = String::new();
        assert!(stdout.read_line(&mut l).unwrap() > 0, "{seen:?}");
        let found = l.starts_with(line);
        seen.push(l);
        if found {
            break;
        }
    }
    let rest = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut rest);
        rest
    });
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let o = child.wait_with_output().unwrap();
    (dir, o, seen, rest.join().unwrap())
}

/// Reads `file` of `folder` as JSON (the run's stderr in the message if it is missing).
fn read_json(folder: &std::path::Path, file: &str, err: &str) -> serde_json::Value {
    serde_json::from_slice(
        &std::fs::read(folder.join(file)).unwrap_or_else(|e| panic!("{file}: {e}\n{err}")),
    )
    .unwrap()
}

#[test]
#[cfg_attr(
    handoff_global_alloc,
    ignore = "runner all's rounds do not depend on the allocator under it"
)]
fn an_experiment_that_fails_in_a_round_is_named_and_the_others_take_every_round() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let o = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["all", "--smoke", "--rounds", "2", "--out"])
        .arg(&out)
        // The pool experiment fails at the end of its first round.
        .env("HANDOFF_TEST_FAIL", "pool@1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("runner pool (round 1): failed on purpose"),
        "{err}"
    );
    // At --smoke the pool and the patterns have two runs, one in each round, and the
    // pipeline's sweep runs once in each; the others have one run, measured in the first
    // round. The pipeline and the patterns paused once, between their two rounds; the
    // pool failed there instead.
    assert_eq!(
        stdout.matches("round 1 of 2 done: paused").count(),
        2,
        "{stdout}"
    );
    let folder = out.join(this_machine_tag(&Topology::read()));
    assert!(!folder.join("pool.json").exists());
    for (name, measured) in [
        ("queue", 1),
        ("pipeline", 2),
        ("patterns", 2),
        ("alloc", 1),
        ("programs", 1),
    ] {
        let v = read_json(&folder, &format!("{name}.json"), &err);
        assert_eq!(
            v["rounds"],
            serde_json::json!({"count": 2, "measured": measured, "cut_short": false}),
            "{name}"
        );
    }
    // No staging folder, and no per-round files.
    let names: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.starts_with('.')), "{names:?}");
    assert!(!names.contains(&"rounds".to_string()), "{names:?}");
    let inc = read_json(&folder, "incomplete.json", &err);
    assert_eq!(inc["failed"][0]["experiment"], "pool (round 1)", "{inc}");
}

#[test]
#[cfg_attr(
    handoff_global_alloc,
    ignore = "runner all's handling of Ctrl-C does not depend on the allocator under it"
)]
fn ctrl_c_in_a_later_round_keeps_the_rounds_the_paused_experiments_measured() {
    // The line before the pool's second round: the experiments with one run at --smoke
    // (queue, alloc, programs) finished in the first round, the pipeline in the second
    // (its sweep runs in each), the patterns is paused after its first.
    let (dir, o, seen, rest) = interrupt_at(&["all", "--smoke", "--rounds", "2"], "[9/12]");
    let out = dir.path().join("results");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{seen:?}\n{rest}\n{err}");
    assert!(!err.contains("panicked"), "{err}");
    let folder = out.join(this_machine_tag(&Topology::read()));
    for (name, measured) in [("queue", 1), ("pipeline", 2), ("alloc", 1), ("programs", 1)] {
        let v = read_json(&folder, &format!("{name}.json"), &err);
        assert_eq!(v["rounds"]["measured"], measured, "{name}: {}", v["rounds"]);
        assert_eq!(v["rounds"]["cut_short"], false, "{name}");
    }
    // The paused one judged its first round and said so.
    let v = read_json(&folder, "patterns.json", &err);
    assert_eq!(
        v["rounds"],
        serde_json::json!({"count": 2, "measured": 1, "cut_short": true}),
        "{rest}"
    );
    assert!(!v["claims"].as_array().unwrap().is_empty());
    assert!(
        rest.contains("runner patterns: writing the results of the rounds it measured"),
        "{rest}"
    );
    // The pool was in flight: interrupted, it wrote nothing (unless it had just
    // finished its last round).
    if !folder.join("pool.json").exists() {
        let inc = read_json(&folder, "incomplete.json", &err);
        assert_eq!(inc["failed"][0]["experiment"], "pool (round 2)", "{inc}");
    }
    // No experiment's process is left behind, stopped or not.
    let ps = Command::new("ps")
        .args(["-eo", "stat,args"])
        .output()
        .unwrap();
    let ps = String::from_utf8_lossy(&ps.stdout);
    let out_arg = out.to_string_lossy();
    assert!(!ps.lines().any(|l| l.contains(out_arg.as_ref())), "{ps}");
}

#[test]
#[cfg_attr(
    handoff_global_alloc,
    ignore = "runner all's process handling does not depend on the allocator under it"
)]
fn no_experiment_outlives_runner_all_stopped_when_runner_all_is_killed() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let mut child = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["all", "--smoke", "--rounds", "3", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The pool's first round is under way: the queue and the pipeline have paused.
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut seen = Vec::new();
    loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "{seen:?}");
        let pool = line.starts_with("[3/18]");
        seen.push(line);
        if pool {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdout);
    // Every experiment's process ends: the paused ones die with runner all, the one in
    // flight at its next pause. None is left stopped.
    let out_arg = out.to_string_lossy().into_owned();
    let left = || {
        let ps = Command::new("ps")
            .args(["-eo", "stat,args"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&ps.stdout)
            .lines()
            .filter(|l| l.contains(&out_arg))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !left().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(left().is_empty(), "{:?}", left());
}
