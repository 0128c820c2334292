//! Every experiment's results JSON keeps to the one shape of `docs/results-format.md`
//! (`runner::lab::schema::check`), run at a small scale.

use std::process::Command;

/// Runs `runner <args> --noise-seconds 0 --out <dir>` and returns its results JSON.
fn results(name: &str, args: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_runner"))
        .arg(name)
        .args(args)
        .args(["--noise-seconds", "0", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
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
    assert_eq!(variants.len(), 6);
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
        &["arena", "pool_warm", "lock_free"],
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
