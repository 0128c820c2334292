//! The `runner` binary end to end: bad input exits 2 with one line and writes
//! nothing; a short run of every variant in every mode writes the JSON of DESIGN.md
//! and the charts.

use std::process::Command;

fn runner(args: &[&str]) -> std::process::Output {
    runner_with(args, &[])
}

fn runner_with(args: &[&str], env: &[(&str, &std::path::Path)]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run the runner binary")
}

/// Runs `args` (a `runner alloc`) with `env`, checks it succeeded, and reads the
/// `alloc.json` it wrote into `out`.
fn alloc_json(
    args: &[&str],
    env: &[(&str, &std::path::Path)],
    out: &std::path::Path,
) -> (std::process::Output, serde_json::Value) {
    let o = runner_with(args, env);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(out.join("alloc.json")).unwrap();
    (o, serde_json::from_str(&text).unwrap())
}

/// `runner alloc` on a 2 MiB working set, 20 000 replacements, no sweep, no
/// producer/consumer run, no noise probe, `runs` repeats, into `out`.
fn small_alloc<'a>(runs: &'a str, out: &'a str) -> Vec<&'a str> {
    vec![
        "alloc",
        "--working-set-mib",
        "2",
        "--items",
        "20000",
        "--runs",
        runs,
        "--sweep-max-mib",
        "0",
        "--handoff-items",
        "0",
        "--noise-seconds",
        "0",
        "--out",
        out,
    ]
}

fn allowed() -> Vec<usize> {
    runner::lab::topology::Topology::read().allowed
}

#[test]
fn bad_input_exits_2_with_one_line_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let out_s = out.to_str().unwrap();
    let missing = allowed().iter().max().unwrap() + 1;
    let far = format!("{missing},{},{}", missing + 1, missing + 2);
    let mut cases: Vec<Vec<&str>> = vec![
        vec!["queue", "--pin", &far],
        vec!["queue", "--pin", "0,0"],
        vec!["queue", "--pin", "x"],
        vec!["queue", "--rate", "0"],
        vec!["queue", "--rate", "-1e6"],
        vec!["queue", "--items", "0"],
        vec!["queue", "--capacity", "0"],
        vec!["queue", "--variants", "handoff-spsc,nope"],
        vec!["queue", "--no-such-flag"],
        vec!["queue", "--noise-seconds", "-1"],
        vec!["queue", "--noise-seconds", "61"],
        vec!["nosuchcommand"],
        vec!["patterns", "--scale", "0"],
        vec!["patterns", "--repeats", "1"],
        vec!["patterns", "--threads", "0"],
        vec!["patterns", "--pin", &far],
    ];
    // The document's pins, on a machine that lacks those cores (this 2-core VM).
    let have_456 = [4, 5, 6].iter().all(|c| allowed().contains(c));
    if !have_456 {
        cases.push(vec!["queue", "--pin", "4,5,6"]);
    }
    for mut args in cases {
        args.extend_from_slice(&["--out", out_s]);
        let o = runner(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
        assert!(!out.exists(), "{args:?} wrote {out:?}");
    }
    if !have_456 {
        let o = runner(&["queue", "--pin", "4,5,6"]);
        let err = String::from_utf8_lossy(&o.stderr);
        let cores = runner::lab::topology::format_cpu_list(&allowed());
        assert!(err.contains(&format!("may run on cores {cores}")), "{err}");
    }
}

/// The flags every experiment shares read the same in every `--help`, and the names
/// they replaced still work (a bad value through an old name is refused with the new
/// name, exit 2, one line).
#[test]
fn every_experiment_shares_one_flag_vocabulary() {
    let shared = [
        "--pin <PIN>",
        "--runs <RUNS>",
        "--out <OUT>",
        "--noise-seconds <NOISE_SECONDS>",
    ];
    let mut wording: Vec<Vec<String>> = Vec::new();
    for exp in ["queue", "pipeline", "pool", "patterns", "alloc"] {
        let o = runner(&[exp, "--help"]);
        assert!(o.status.success(), "{exp} --help");
        let help = String::from_utf8_lossy(&o.stdout).into_owned();
        let lines: Vec<String> = shared
            .iter()
            .map(|flag| {
                let lines: Vec<&str> = help.lines().collect();
                let at = lines
                    .iter()
                    .position(|l| l.trim_start().starts_with(flag))
                    .unwrap_or_else(|| panic!("{exp} --help lacks {flag}:\n{help}"));
                // The flag's text (clap may wrap it onto the lines that follow), without
                // the experiment's own default.
                let mut text = lines[at].trim_start()[flag.len()..].to_string();
                for l in &lines[at + 1..] {
                    if l.trim().is_empty() || l.trim_start().starts_with('-') {
                        break;
                    }
                    text.push(' ');
                    text.push_str(l.trim());
                }
                let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
                text.split(" [default: ").next().unwrap().to_string()
            })
            .collect();
        assert!(help.contains("--pin places, in order: "), "{exp}: no roles");
        assert!(
            help.contains("\n--runs: "),
            "{exp}: no word on what a run is"
        );
        wording.push(lines);
    }
    assert!(wording.windows(2).all(|w| w[0] == w[1]), "{wording:#?}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    for (args, needle) in [
        (&["pool", "--repeats", "1"][..], "--runs 1"),
        (&["pool", "--iterations", "0"][..], "--items 0"),
        (&["patterns", "--repeats", "1"][..], "--runs 1"),
        (&["alloc", "--repeats", "0"][..], "--runs 0"),
        (&["alloc", "--ops", "0"][..], "--items 0"),
    ] {
        let mut args = args.to_vec();
        args.extend_from_slice(&["--out", out.to_str().unwrap()]);
        let o = runner(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!out.exists());
    }
}

fn check_latency(v: &serde_json::Value, ctx: &str) {
    let l = &v["latency_ns"];
    for k in ["min", "p50", "p90", "p99", "p99.9", "p99.99", "max"] {
        assert!(l[k].is_u64(), "{ctx}: latency_ns.{k} missing");
    }
    assert!(
        l["min"].as_u64() <= l["p50"].as_u64() && l["p50"].as_u64() <= l["max"].as_u64(),
        "{ctx}"
    );
    for k in ["p50", "p99", "p99.9"] {
        assert!(
            v["latency_ns_doc_convention"][k].is_number(),
            "{ctx}: doc {k}"
        );
    }
}

#[test]
fn every_variant_runs_in_every_mode_and_results_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let o = runner(&[
        "queue",
        "--all",
        "--items",
        "3000",
        "--runs",
        "2",
        "--sweep-seconds",
        "0.001",
        "--noise-seconds",
        "0.1",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("queue.json")).unwrap()).unwrap();
    assert_eq!(json["schema"], runner::lab::schema::SCHEMA);
    assert_eq!(json["experiment"], "queue");
    for k in [
        "cpu_model",
        "allowed_cpus",
        "l3_groups",
        "pins",
        "kernel",
        "rustc",
        "cxx",
        "git_revision",
        "tsc",
        "clock_read_cost_ns",
    ] {
        assert!(json["env"].get(k).is_some(), "env.{k} missing");
    }
    assert_eq!(json["config"]["items"], 3000);
    // The noise probes: both pinned cores, before and after the runs.
    let noise = &json["env"]["noise"];
    let pins = &json["env"]["pins"];
    for when in ["before", "after"] {
        let p = &noise[when];
        assert!((p["seconds"].as_f64().unwrap() - 0.1).abs() < 0.01, "{p}");
        let cores = p["cores"].as_array().unwrap();
        let cpus: Vec<_> = cores.iter().map(|c| c["cpu"].clone()).collect();
        assert_eq!(
            cpus,
            vec![pins["producer"].clone(), pins["consumer"].clone()]
        );
        for c in cores {
            let lost = c["lost_fraction"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&lost), "{when}: {c}");
            assert_eq!(c["histogram"].as_array().unwrap().len(), 9);
        }
        let h = &p["handoff"];
        assert_eq!(h["producer"], pins["producer"]);
        assert_eq!(h["consumer"], pins["consumer"]);
        assert!(
            h["p99_floor_ns"].is_u64() && h["p99.9_floor_ns"].is_u64(),
            "{h}"
        );
    }
    assert!(stdout.contains("noise: what interrupts"), "{stdout}");
    let names = [
        "handoff-spsc",
        "rtrb",
        "std-mutex-condvar",
        "cpp-ring",
        "cpp-ring-private",
        "boost-spsc",
        "mutex-condvar",
    ];
    let variants = json["variants"].as_array().unwrap();
    for mode in ["headline", "throughput"] {
        for name in names {
            let v = variants
                .iter()
                .find(|v| v["name"] == name && v["mode"] == mode)
                .unwrap_or_else(|| panic!("{mode} {name} missing"));
            assert!(stdout.contains(name));
            if let Some(why) = v["unavailable"].as_str() {
                assert_eq!(name, "boost-spsc", "{name}: {why}");
                assert!(why.contains("libboost-dev"));
                continue;
            }
            let ctx = format!("{mode} {name}");
            check_latency(v, &ctx);
            assert_eq!(v["samples"], 6000, "{ctx}");
            assert_eq!(v["runs"], 2, "{ctx}");
            assert!(v["achieved_rate_hz"].as_f64().unwrap() > 0.0, "{ctx}");
            assert!(v["throughput_items_per_s"].as_f64().unwrap() > 0.0, "{ctx}");
            for r in v["per_run"].as_array().unwrap() {
                assert_eq!(r["bad_items"], 0, "{ctx}");
                assert_eq!(r["negative_latencies"], 0, "{ctx}");
            }
            if mode == "headline" {
                assert_eq!(v["offered_rate_hz"], 1e6, "{ctx}");
                assert!(v["latency_from_intended_ns"]["p50"].is_u64(), "{ctx}");
            }
        }
    }
    let sweeps = json["sweeps"].as_array().unwrap();
    assert!(sweeps.len() >= 5);
    for s in sweeps {
        assert_eq!(s["name"], "load");
        let pts = s["points"].as_array().unwrap();
        assert_eq!(pts.len(), 12);
        assert_eq!(pts[0]["x"], 1e5);
        assert!(pts.iter().all(|p| p["p50"].is_u64() && p["p99.9"].is_u64()));
    }
    assert!(!json["claims"].as_array().unwrap().is_empty());
    for f in [
        "queue-ccdf.svg",
        "queue-pdf.svg",
        "queue-sweep.svg",
        "queue-throughput.svg",
    ] {
        let svg = std::fs::read_to_string(out.join(f)).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("handoff-spsc"),
            "{f}"
        );
    }
    // No temporary files left behind.
    let leftovers: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// Starts `runner <args> --out <out>`, sends it SIGINT after `millis`, and returns its
/// exit status and stderr.
fn interrupted(args: &[&str], out: &std::path::Path, millis: u64) -> (Option<i32>, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(args)
        .arg("--out")
        .arg(out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(millis));
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let o = child.wait_with_output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn ctrl_c_stops_the_run_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    // 50 runs of 1 s each: the signal lands in the middle of a paced run.
    let args = ["queue", "--variants", "handoff-spsc", "--runs", "50"];
    let (code, err) = interrupted(&args, &out, 2500);
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("nothing was written"), "{err}");
    assert!(!out.exists(), "an interrupted run wrote {out:?}");
}

#[test]
fn ctrl_c_during_runner_all_leaves_no_folder_and_no_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    // The quick queue experiment runs for tens of seconds: the signal lands in it.
    let (code, err) = interrupted(&["all", "--quick"], &out, 3000);
    assert_eq!(code, Some(130), "{err}");
    let left: Vec<_> = std::fs::read_dir(&out)
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "an interrupted runner all left {left:?}");
}

#[test]
fn patterns_runs_every_part_and_says_what_it_cannot_measure() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = runner(&[
        "patterns",
        "--scale",
        "0.01",
        "--repeats",
        "2",
        "--threads",
        "3",
        "--noise-seconds",
        "0",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for section in [
        "arena vs malloc",
        "typed pool vs Box",
        "one pool, 3 threads",
        "memory:",
        "allocation profiler",
        "NUMA:",
        "order processing",
    ] {
        assert!(stdout.contains(section), "missing {section:?}:\n{stdout}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("patterns.json")).unwrap()).unwrap();
    assert_eq!(json["experiment"], "patterns");
    let variant = |mode: &str, name: &str| {
        json["variants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["mode"] == mode && v["name"] == name)
            .unwrap_or_else(|| panic!("no {mode} {name}"))
            .clone()
    };
    for w in ["lock_free", "thread_cached", "locked", "malloc"] {
        let v = variant("many_threads", w);
        assert!(v["figures"]["ms"]["value"].as_f64().unwrap() > 0.0, "{w}");
    }
    for h in ["malloc", "arena"] {
        let v = variant("memory", h);
        assert!(v["figures"]["resident"]["value"].as_f64().is_some(), "{h}");
    }
    assert!(json["profiler_ns"]["pool"]["alloc"]["count"].as_u64() == Some(10 * 1000));
    let claims = json["claims"].as_array().unwrap();
    // The L1 figure is counted where the kernel can read the CPU's counters; where it
    // cannot, the claim says what the kernel answered.
    let cache = claims.iter().find(|c| c["id"] == "cache-2.1x").unwrap();
    if json["l1_misses"]["misses"].is_null() {
        assert_eq!(cache["verdict"], "not measurable here");
        assert!(cache["reason"]
            .as_str()
            .unwrap()
            .contains("perf_event_open"));
    } else {
        assert!(["reproduced", "differs"].contains(&cache["verdict"].as_str().unwrap()));
    }
    // The simulated count runs where valgrind is installed (CI installs it).
    let sim = claims
        .iter()
        .find(|c| c["id"] == "cache-2.1x-simulated")
        .unwrap();
    if json["l1_misses_simulated"]["misses"].is_null() {
        assert_eq!(sim["verdict"], "not measurable here");
        assert!(sim["reason"]
            .as_str()
            .unwrap()
            .contains("no simulated count"));
    } else {
        assert!(["reproduced", "differs"].contains(&sim["verdict"].as_str().unwrap()));
        assert_eq!(sim["timed"], false);
        let (pool, malloc) = (
            json["l1_misses_simulated"]["misses"][0].as_u64().unwrap(),
            json["l1_misses_simulated"]["misses"][1].as_u64().unwrap(),
        );
        assert!(pool > 0 && malloc > 0, "{pool} {malloc}");
    }
    let numa = claims.iter().find(|c| c["id"] == "numa-2.5x").unwrap();
    if json["numa"]["nodes"].as_array().unwrap().len() == 1 {
        assert_eq!(numa["verdict"], "not measurable here");
        assert!(stdout.contains("1 NUMA node: not measurable here"));
    }
    for f in [
        "patterns-alloc.svg",
        "patterns-threads.svg",
        "patterns-orders.svg",
    ] {
        assert!(out.join(f).exists(), "{f}");
    }
}

#[test]
fn alloc_keeps_every_repeat_and_pairs_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut args = small_alloc("3", out.to_str().unwrap());
    // The old names of --items and --runs still work.
    args[3] = "--ops";
    args[5] = "--repeats";
    let (o, json) = alloc_json(&args, &[], &out);
    let variants = json["variants"].as_array().unwrap();
    assert_eq!(
        variants.len(),
        11,
        "5 allocators and Hoard, 4 takes, the baseline"
    );
    for v in variants {
        if v.get("unavailable").is_some() {
            // tcmalloc or Hoard, where this machine lacks the library.
            assert!(["tcmalloc", "hoard"].contains(&v["name"].as_str().unwrap()));
            continue;
        }
        let each = v["figures"]["seconds"]["runs"].as_array().unwrap();
        assert_eq!(each.len(), 3, "{}", v["name"]);
        assert!(
            each.iter().all(|s| s.as_f64().unwrap() > 0.0),
            "{}",
            v["name"]
        );
        assert_eq!(
            v["figures"]["ns_per_pair"]["runs"]
                .as_array()
                .unwrap()
                .len(),
            3
        );
    }
    let handoff = &variants[0]["figures"]["seconds"]["runs"];
    let jemalloc = variants.iter().find(|v| v["name"] == "jemalloc").unwrap();
    // The paired ratio is the median of the three repeats' own ratios.
    let mut r: Vec<f64> = (0..3)
        .map(|k| {
            jemalloc["figures"]["seconds"]["runs"][k].as_f64().unwrap()
                / handoff[k].as_f64().unwrap()
        })
        .collect();
    r.sort_by(f64::total_cmp);
    let paired = json["ratios"]["jemalloc_over_handoff_time_paired"]
        .as_f64()
        .unwrap();
    assert!((paired - r[1]).abs() < 1e-9, "{paired} vs {r:?}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("median of the repeats' own ratios"),
        "{stdout}"
    );
}

/// The sweep records handoff-alloc's slow path (refills, spills, depot traffic) per
/// 1000 replacements, in the JSON and in the printed table; no other contender has it.
#[test]
fn alloc_sweep_prints_handoff_allocs_slow_path() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut args = small_alloc("1", out.to_str().unwrap());
    args[8] = "1"; // --sweep-max-mib 1: one point
    args.extend(["--sweep-items", "50000"]);
    let (o, json) = alloc_json(&args, &[], &out);
    let variants = json["variants"].as_array().unwrap();
    let points = variants[0]["sweep_slow_path_per_1000_pairs"]
        .as_array()
        .unwrap();
    assert_eq!(variants[0]["name"], "handoff-alloc");
    assert_eq!(points.len(), 1);
    assert_eq!(points[0]["working_set_bytes"], 1 << 20);
    // A spill moves the older half (31) of a full magazine of 63 to the depot, and a
    // refill takes at most 31 back.
    let f = |k: &str| points[0][k].as_f64().unwrap();
    assert!(
        (f("to_depot") - 31.0 * f("spills")).abs() < 1e-6,
        "{points:?}"
    );
    assert!(f("from_depot") <= 31.0 * f("refills") + 1e-6, "{points:?}");
    for v in &variants[1..] {
        assert!(
            v.get("sweep_slow_path_per_1000_pairs").is_none(),
            "{}",
            v["name"]
        );
    }
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("slow path per 1000 replacements"),
        "{stdout}"
    );
}

#[test]
fn alloc_reports_a_missing_library_unavailable_and_runs_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let missing = dir.path().join("no-such-lib.so");
    let (o, json) = alloc_json(
        &small_alloc("1", out.to_str().unwrap()),
        &[("HANDOFF_TCMALLOC_LIB", &missing)],
        &out,
    );
    let variants = json["variants"].as_array().unwrap();
    let tc = variants.iter().find(|v| v["name"] == "tcmalloc").unwrap();
    let why = tc["unavailable"].as_str().unwrap();
    assert!(
        why.contains("is not a file") && why.contains("libgoogle-perftools-dev"),
        "{why}"
    );
    for name in [
        "take1-header-per-block",
        "take2-header-per-page",
        "take3-class-in-pointer",
        "take3-pow2-classes",
    ] {
        let v = variants.iter().find(|v| v["name"] == name).unwrap();
        assert_eq!(v["runs"], 1, "{name}");
    }
    let claims = json["claims"].as_array().unwrap();
    let tc_claim = claims
        .iter()
        .find(|c| c["id"] == "tcmalloc_loses_ground_with_threads")
        .unwrap();
    assert_eq!(tc_claim["verdict"], "not measured");
    for id in [
        "take2_slower_than_take1",
        "take3_best",
        "half_exponent_faster_than_pow2",
        "pow2_classes_overhead",
    ] {
        let c = claims.iter().find(|c| c["id"] == id).unwrap();
        // One repeat: a median within 5% of the line is within noise.
        assert!(
            ["holds", "fails", "within noise"].contains(&c["verdict"].as_str().unwrap()),
            "{id}: {c}"
        );
    }
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("tcmalloc                 unavailable: HANDOFF_TCMALLOC_LIB="),
        "{stdout}"
    );
}

/// Every value an experiment's command read from `m`, arg by arg (the raw values and
/// where each came from), except the scale flag `skip`: what the experiment's flags
/// are made of, to compare two command lines.
fn read_values(cmd: &clap::Command, m: &clap::ArgMatches, skip: &str) -> Vec<String> {
    cmd.get_arguments()
        .map(|a| a.get_id().as_str())
        .filter(|id| *id != skip && *id != "help")
        .map(|id| {
            let raw: Option<Vec<_>> = m.get_raw(id).map(|v| v.collect());
            format!("{id}: {raw:?} from {:?}", m.value_source(id))
        })
        .collect()
}

/// `runner <experiment> --<scale>` reads every flag as the command line `runner all
/// --<scale>` builds for it (its name, then `Experiment::ALL`'s flags at that scale):
/// the same values from the same sources, for every experiment and scale.
#[test]
fn a_scale_flag_means_the_flags_runner_all_gives_at_that_scale() {
    use runner::lab::experiment::Scale;
    for e in runner::experiments::REGISTRY {
        let cmd = e.command();
        for scale in Scale::FLAGGED {
            let flag = scale.flag().unwrap();
            let ctx = format!("{} --{flag}", e.name());
            let ours = e
                .matches(&[format!("--{flag}").into()])
                .unwrap_or_else(|err| panic!("{ctx}: {err}"));
            let mut argv = vec![e.name()];
            argv.extend_from_slice(e.all(scale).flags);
            let theirs = cmd.clone().try_get_matches_from(&argv).unwrap();
            assert_eq!(
                read_values(&cmd, &ours, flag),
                read_values(&cmd, &theirs, flag),
                "{ctx} and {argv:?}"
            );
            // No scale's flags name another scale.
            for other in Scale::FLAGGED.iter().filter(|&&s| s != scale) {
                let other = format!("--{}", other.flag().unwrap());
                assert!(!e.all(scale).flags.contains(&other.as_str()), "{ctx}");
            }
            // A flag of the scale's given as well changes nothing.
            let twice: Vec<std::ffi::OsString> = std::iter::once(format!("--{flag}"))
                .chain(e.all(scale).flags.iter().map(|f| f.to_string()))
                .map(Into::into)
                .collect();
            let twice = e
                .matches(&twice)
                .unwrap_or_else(|err| panic!("{ctx} with its flags again: {err}"));
            assert_eq!(
                read_values(&cmd, &twice, flag),
                read_values(&cmd, &theirs, flag),
                "{ctx} with its flags again"
            );
        }
        // Without a scale flag nothing is added.
        let plain = e.matches(&[]).unwrap();
        let bare = cmd.clone().try_get_matches_from([e.name()]).unwrap();
        assert_eq!(
            read_values(&cmd, &plain, ""),
            read_values(&cmd, &bare, ""),
            "{}",
            e.name()
        );
    }
}

/// A flag given beside a scale overrides that scale's value for it, before or after the
/// scale flag, and the scale's other flags still apply; validated, the configuration
/// says so.
#[test]
fn a_flag_given_beside_a_scale_overrides_its_value() {
    use runner::experiments::queue::Queue;
    use runner::lab::experiment::configure_from;
    use runner::lab::topology::Topology;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let topo = Topology::read();
    for args in [
        &["--quick", "--runs", "3", "--out", out][..],
        &["--runs", "3", "--quick", "--out", out][..],
    ] {
        let cfg = configure_from::<Queue>(args, &topo).unwrap();
        assert_eq!(cfg.run.runs, 3, "{args:?}");
        // The quick scale's other flags (--all --items 500000 --sweep-seconds 0.05
        // --noise-seconds 0.5).
        assert_eq!(cfg.items, 500_000, "{args:?}");
        assert_eq!(cfg.sweep_seconds, 0.05, "{args:?}");
        assert_eq!(cfg.run.noise_seconds, 0.5, "{args:?}");
        assert_eq!(
            cfg.modes.len(),
            4,
            "{args:?}: --all (headline, sweep, throughput, burst)"
        );
    }
    // A switch the scale turns on stays on; a value given twice takes the later one.
    let cfg = configure_from::<Queue>(
        &["--smoke", "--all", "--items", "7000", "--out", out],
        &topo,
    )
    .unwrap();
    assert_eq!((cfg.items, cfg.run.runs), (7000, 1));
    let quick = configure_from::<Queue>(&["--quick", "--out", out], &topo).unwrap();
    assert_eq!((quick.items, quick.run.runs), (500_000, 2));
    // alloc's own --full is its --full scale: given once or beside other flags.
    let m = runner::experiments::find("alloc")
        .unwrap()
        .matches(&["--full".into(), "--runs".into(), "1".into()])
        .unwrap();
    assert!(m.get_flag("full"));
    assert_eq!(m.get_one::<usize>("runs"), Some(&1));
}

/// Two scales together are bad input: exit 2, one line, nothing written.
#[test]
fn two_scales_together_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let out_s = out.to_str().unwrap();
    for e in runner::experiments::REGISTRY {
        for pair in [
            ["--smoke", "--quick"],
            ["--quick", "--full"],
            ["--full", "--smoke"],
        ] {
            let args = [e.name(), pair[0], pair[1], "--out", out_s];
            let o = runner(&args);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
            assert!(err.contains("cannot be used with"), "{args:?}: {err}");
            assert!(o.stdout.is_empty(), "{args:?}");
            assert!(!out.exists(), "{args:?} wrote {out:?}");
        }
    }
}

/// Every experiment's `--help` shows the three scale flags, each saying what it is and
/// listing the flags `runner all` gives the experiment at that scale.
#[test]
fn every_experiment_help_lists_its_flags_at_every_scale() {
    use runner::lab::experiment::Scale;
    for e in runner::experiments::REGISTRY {
        let o = runner(&[e.name(), "--help"]);
        assert!(o.status.success(), "{} --help", e.name());
        let help = String::from_utf8_lossy(&o.stdout);
        // clap wraps only at a terminal; the words are checked on one line.
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        for scale in Scale::FLAGGED {
            let flag = scale.flag().unwrap();
            let flags = e.all(scale).flags.join(" ");
            let listed = if flags.is_empty() {
                "its defaults".to_string()
            } else {
                flags
            };
            let says = format!("what `runner all --{flag}` gives this experiment");
            assert!(
                help.contains(&says) && help.contains(&format!("on 2 cores): {listed}")),
                "{} --help lacks --{flag}'s flags ({listed}):\n{help}",
                e.name()
            );
        }
        for words in [
            "The smallest runs that take every path once: ",
            "Smaller runs, for a first look: ",
        ] {
            assert!(help.contains(words), "{}: {words}\n{help}", e.name());
        }
        assert!(
            help.contains("--smoke, --quick, --full: the flags listed with each, which a flag given too overrides"),
            "{}",
            e.name()
        );
    }
}

/// `runner queue --smoke` runs at `runner all --smoke`'s sizes, a flag given beside it
/// overriding one, and writes its results.
#[test]
fn an_experiment_runs_at_a_scale() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = runner(&[
        "queue",
        "--smoke",
        "--out",
        out.to_str().unwrap(),
        "--noise-seconds",
        "0",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(out.join("queue.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let c = &json["config"];
    assert_eq!(c["runs"], 1, "{c}");
    assert_eq!(c["items"], 5000, "{c}");
    assert_eq!(c["sweep_seconds"], 0.01, "{c}");
    assert_eq!(c["noise_seconds"], 0.0, "{c}");
    assert_eq!(c["modes"].as_array().unwrap().len(), 4, "{c}");
    assert_eq!(c["bursts"], 50, "{c}");
}
