//! Tests of `report.rs`.

use super::*;

#[test]
fn the_report_names_what_did_not_finish_until_it_is_run_again() {
    let inc = serde_json::json!({
        "failed": [{"experiment": "programs", "why": "exit status 1"}],
        "not_run": ["alloc"],
    });
    let queue = serde_json::json!({ "experiment": "queue", "env": {} });
    let text = render(std::slice::from_ref(&queue), Some(&inc));
    assert!(text.contains("## Incomplete run"), "{text}");
    assert!(
        text.contains("* `programs` failed: exit status 1"),
        "{text}"
    );
    assert!(text.contains("* `alloc` did not run"), "{text}");
    // Both run again into the folder since: nothing is left to name.
    let again = [
        queue,
        serde_json::json!({ "experiment": "programs", "env": {} }),
        serde_json::json!({ "experiment": "alloc", "env": {} }),
    ];
    let text = render(&again, Some(&inc));
    assert!(!text.contains("Incomplete run"), "{text}");
}

#[test]
fn the_report_lists_what_is_not_installed_once_each() {
    let r = serde_json::json!({
        "experiment": "alloc", "env": {},
        "variants": [
            {"name": "tcmalloc", "unavailable": "apt-get install libgoogle-perftools-dev"},
            {"name": "tcmalloc", "mode": "b", "unavailable": "apt-get install libgoogle-perftools-dev"},
            {"name": "hoard", "unavailable": "not asked"},
        ],
        "claims": [{"verdict": "not measured", "reason": "valgrind is not installed (apt-get install valgrind)"}],
    });
    let text = render(&[r], None);
    let start = text.find("## Not installed here").expect("the section");
    let end = text[start..]
        .find("## Verdicts")
        .expect("the section's end")
        + start;
    let section = &text[start..end];
    assert_eq!(
        section.matches("libgoogle-perftools-dev").count(),
        1,
        "{section}"
    );
    assert!(
        section.contains("* `alloc`: valgrind is not installed"),
        "{section}"
    );
    assert!(!section.contains("not asked"), "{section}");
}

#[test]
fn a_folder_of_several_revisions_names_each() {
    let r = |name: &str, rev: &str| serde_json::json!({ "experiment": name, "env": { "git_revision": rev } });
    assert_eq!(revisions(&[r("queue", "aaa"), r("pool", "aaa")]), "aaa");
    assert_eq!(
        revisions(&[r("pipeline", "bbb"), r("queue", "aaa"), r("pool", "aaa")]),
        "bbb (pipeline); aaa (queue, pool)"
    );
}

#[test]
fn numbers_print_without_exponents() {
    assert_eq!(num(&Value::from(1234567.0)), "1234567");
    assert_eq!(num(&Value::from(12.345)), "12.35");
    assert_eq!(num(&Value::from(0.01234)), "0.012");
    assert_eq!(num(&Value::Null), "-");
}
