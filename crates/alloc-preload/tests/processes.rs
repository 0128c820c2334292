//! Patterns of real processes under libhandoff_alloc.so (tests/c/process.c, one case per
//! run): a plugin whose constructor starts a thread, fork handlers the program registered
//! before the allocator's that allocate, threads whose only call is in a pthread key
//! destructor, limits on the address space (compared with the C library's allocator),
//! aligned big blocks freed again and again, and a free list corrupted by a write after
//! free. Each case that could hang runs under a deadline: a hang fails the test.

mod common;

use common::{build, run, text};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;
use std::time::Duration;

fn process() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| build("cc", "process.c", "process", &[]))
}

const DEADLINE: Duration = Duration::from_secs(120);

/// Runs a case preloaded; it must exit 0.
fn passes(args: &[&str], env: &[(&str, &str)]) -> String {
    let out = run(process(), args, env, true, DEADLINE);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success(),
        "{args:?}: {:?}\n{stdout}{stderr}",
        out.status
    );
    stdout
}

/// The figure a case prints after its name and a colon.
fn figure(out: &Output, case: &str) -> i64 {
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "{case}: {:?}\n{stdout}{}",
        out.status,
        text(&out.stderr)
    );
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{case}: ")))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{case}: no figure in {stdout:?}"))
}

/// The case's figure on the C library's allocator and preloaded.
fn both(case: &str) -> (i64, i64) {
    let glibc = run(process(), &[case], &[], false, DEADLINE);
    let handoff = run(process(), &[case], &[], true, DEADLINE);
    (figure(&glibc, case), figure(&handoff, case))
}

#[test]
fn a_plugin_whose_constructor_starts_a_thread_loads() {
    // Until 2026-11-29 the thread's first allocation registered its exit through
    // `__cxa_thread_atexit_impl`, which waited for the loader's lock that `dlopen`
    // held: every run hung.
    let plugin = build("cc", "plugin.c", "libplugin.so", &["-shared", "-fPIC"]);
    passes(&["dlopen-thread", plugin.to_str().unwrap()], &[]);
}

#[test]
fn fork_handlers_registered_before_the_allocators_may_allocate() {
    // Until 2026-11-29 each hung: the handler waited for a lock its own thread held
    // for the fork.
    for which in ["prepare", "parent", "child"] {
        passes(&[&format!("atfork-{which}")], &[("PROCESS_ATFORK", which)]);
    }
}

#[test]
fn threads_whose_first_call_is_in_a_key_destructor_give_their_heap_back() {
    passes(&["key-destructor"], &[]);
}

#[test]
fn under_an_address_space_limit_memory_and_failure_point_are_within_2x_of_glibc() {
    let (glibc, handoff) = both("limit-resident");
    assert!(
        handoff <= 2 * glibc.max(1024),
        "200 000 blocks of 64 B under ulimit -v 16000000: +{handoff} KiB resident, glibc +{glibc} KiB"
    );
    let (glibc, handoff) = both("limit-failure");
    assert!(
        2 * handoff >= glibc,
        "32-byte blocks under ulimit -v 400000: {handoff} MiB before malloc failed, glibc {glibc} MiB"
    );
}

#[test]
fn aligned_and_shrunk_big_blocks_do_not_stay_resident() {
    // Until 2026-11-29: +29 MB after malloc_trim(0) (the C library: +120 KiB here).
    let out = run(process(), &["aligned-cache"], &[], true, DEADLINE);
    let kib = figure(&out, "aligned-cache");
    assert!(
        kib <= 2048,
        "+{kib} KiB resident after the loops and malloc_trim(0)"
    );
}

#[test]
fn a_free_list_corrupted_after_free_stops_with_the_allocators_message() {
    // Until 2026-11-29 the allocator read through the corrupt link and crashed inside
    // (SIGSEGV), or panicked in Rust's machinery.
    let out = run(process(), &["corrupt-link"], &[], true, DEADLINE);
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGABRT),
        "{:?}\n{stderr}",
        out.status
    );
    assert!(stderr.contains("handoff-alloc: "), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!text(&out.stdout).contains("survived"));
}
