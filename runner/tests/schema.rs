//! Every experiment's results JSON keeps to the one shape of `docs/results-format.md`
//! (`runner::lab::schema::check`), run at a small scale.

use std::process::Command;

/// Runs `runner <name> <args> --noise-seconds 0 --out <dir>` and returns its results
/// JSON.
fn results(name: &str, args: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut argv = vec![name];
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["--noise-seconds", "0", "--out", out.to_str().unwrap()]);
    runner_ok(&argv);
    let text = std::fs::read_to_string(out.join(format!("{name}.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn check(name: &str, args: &[&str], contenders: &[&str]) {
    let v = results(name, args);
    if let Err(e) = runner::lab::schema::check(&v) {
        panic!("{name}.json: {e}");
    }
    assert_eq!(v["experiment"], name);
    assert!(v["document"]["file"]
        .as_str()
        .unwrap()
        .starts_with(|c: char| c.is_ascii_digit()));
    assert!(
        v["config"]["runs"].as_u64().unwrap() >= 1,
        "{name}: config.runs"
    );
    let names: Vec<&str> = v["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    for c in contenders {
        assert!(names.contains(c), "{name}: no variant {c} in {names:?}");
    }
    // Every figure measured in runs has one value per kept run.
    for var in v["variants"].as_array().unwrap() {
        for (k, f) in var["figures"].as_object().unwrap() {
            let runs = f["runs"].as_array().unwrap().len();
            assert!(
                runs <= v["config"]["runs"].as_u64().unwrap() as usize,
                "{name} {k}"
            );
        }
    }
    assert!(
        !v["claims"].as_array().unwrap().is_empty(),
        "{name}: no claims"
    );
}

#[test]
fn queue_results_keep_the_schema() {
    check(
        "queue",
        &[
            "--all",
            "--items",
            "2000",
            "--runs",
            "2",
            "--sweep-seconds",
            "0.001",
        ],
        &["handoff-spsc", "rtrb", "cpp-ring", "mutex-condvar"],
    );
}

/// Sliced runs carry the placement probes and every contender's slices by placement:
/// the slices in a placement and those in none add up to the slices probed, two per
/// run here.
fn carries_each_placement(name: &str, variants: &str) {
    let v = results(
        name,
        &[
            "--headline",
            "--variants",
            variants,
            "--items",
            "4000",
            "--runs",
            "2",
            "--slices",
            "2",
        ],
    );
    let probes = v["placements"]["probes"].as_u64().unwrap();
    // One probe before the first slice, and one after each of 2 x 2 x 2 slices.
    assert_eq!(probes, 9, "{name}: {}", v["placements"]);
    let classes = v["placements"]["classes"].as_array().unwrap();
    let in_classes: u64 = classes.iter().map(|c| c["probes"].as_u64().unwrap()).sum();
    assert_eq!(
        in_classes + v["placements"]["probes_in_no_class"].as_u64().unwrap(),
        probes
    );
    for var in v["variants"].as_array().unwrap() {
        let p = &var["placements"];
        assert_eq!(p["slices"], 4, "{name} {}: {p}", var["name"]);
        let placed: u64 = p["by_placement"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["slices"].as_u64().unwrap())
            .sum();
        assert_eq!(placed + p["slices_in_no_placement"].as_u64().unwrap(), 4);
    }
}

#[test]
fn queue_results_carry_each_placement() {
    carries_each_placement("queue", "handoff-spsc,rtrb");
}

#[test]
fn pipeline_results_carry_each_placement() {
    carries_each_placement("pipeline", "malloc,freelist-return-queue");
}

#[test]
fn pipeline_results_keep_the_schema() {
    check(
        "pipeline",
        &["--items", "2000", "--runs", "1"],
        &[
            "malloc",
            "freelist-return-queue",
            "arena-batch-handoff",
            "mimalloc",
        ],
    );
}

#[test]
fn pool_results_keep_the_schema() {
    let v = results("pool", &["--items", "2000", "--runs", "3"]);
    runner::lab::schema::check(&v).unwrap();
    let variants = v["variants"].as_array().unwrap();
    let names: Vec<&str> = variants
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "single_threaded",
            "locked",
            "lock_free",
            "thread_cached",
            "malloc",
            "mimalloc",
            "handoff_alloc"
        ]
    );
    for ratio in [
        "mimalloc_over_single_threaded",
        "handoff_alloc_over_thread_cached",
    ] {
        assert!(v["ratios"][ratio].as_f64().unwrap() > 0.0, "{ratio}");
    }
    for var in variants {
        for scenario in ["bulk_alloc", "bulk_free", "interleaved", "concurrent"] {
            let f = &var["figures"][scenario];
            assert_eq!(f["unit"], "ns");
            // Three runs, the first dropped as warm-up.
            assert_eq!(f["runs"].as_array().unwrap().len(), 2, "{scenario}");
        }
    }
}

#[test]
fn patterns_results_keep_the_schema() {
    check(
        "patterns",
        &["--scale", "0.01", "--runs", "2", "--threads", "2"],
        &[
            "arena",
            "pool_warm",
            "lock_free",
            "box_mimalloc",
            "box_handoff_alloc",
        ],
    );
}

#[test]
fn alloc_results_keep_the_schema() {
    check(
        "alloc",
        &[
            "--working-set-mib",
            "2",
            "--items",
            "20000",
            "--runs",
            "1",
            "--sweep-max-mib",
            "1",
            "--sweep-items",
            "10000",
            "--handoff-items",
            "1000",
        ],
        &["handoff-alloc", "jemalloc", "mimalloc"],
    );
}

/// Runs `runner <args>` and returns its stdout, after checking it succeeded.
fn runner_ok(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn the_report_comes_from_the_json_alone_and_compares_folders() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    runner_ok(&[
        "pool",
        "--items",
        "2000",
        "--runs",
        "3",
        "--noise-seconds",
        "0",
        "--out",
        o,
    ]);
    runner_ok(&[
        "patterns",
        "--scale",
        "0.01",
        "--runs",
        "2",
        "--noise-seconds",
        "0",
        "--out",
        o,
    ]);
    // The charts, as the experiments drew them; then removed, and drawn again by
    // `runner report` from the JSON alone, byte for byte.
    let svgs: Vec<(std::path::PathBuf, Vec<u8>)> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "svg"))
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    assert!(svgs.len() >= 3, "{svgs:?}");
    for (p, _) in &svgs {
        std::fs::remove_file(p).unwrap();
    }
    runner_ok(&["report", o]);
    for (p, bytes) in &svgs {
        assert!(
            std::fs::read(p).unwrap() == *bytes,
            "{} is not drawn byte for byte from the JSON",
            p.display()
        );
    }
    let first = std::fs::read(out.join("REPORT.md")).unwrap();
    runner_ok(&["report", o]);
    assert_eq!(
        first,
        std::fs::read(out.join("REPORT.md")).unwrap(),
        "not byte for byte"
    );
    let text = String::from_utf8(first).unwrap();
    // Every claim of both results, in document order (001 before 003).
    for name in ["pool", "patterns"] {
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join(format!("{name}.json"))).unwrap())
                .unwrap();
        for c in v["claims"].as_array().unwrap() {
            let claim = c["claim"].as_str().unwrap().replace('|', "\\|");
            assert!(text.contains(&claim), "{name}: {claim}");
        }
        for chart in v["charts"].as_array().unwrap() {
            assert!(text.contains(chart.as_str().unwrap()), "{chart}");
            assert!(out.join(chart.as_str().unwrap()).exists());
        }
    }
    assert!(
        text.find("001_2e06d77cf9740409.txt").unwrap()
            < text.find("003_2c72cf52cff595ec.txt").unwrap()
    );
    // A folder compared with itself: every ratio 1, nothing beyond the spread.
    let same = runner_ok(&["compare", o, o]);
    assert!(same.contains("0 differ beyond the spread"), "{same}");
    assert!(same.contains("claims in both; 0 changed"), "{same}");
    assert!(same.contains("lock_free"), "{same}");
    // A folder that is not one is refused as bad input, in one line.
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let bad = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["report", empty.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&bad.stderr).lines().count(), 1);
    assert!(!empty.join("REPORT.md").exists());
}
