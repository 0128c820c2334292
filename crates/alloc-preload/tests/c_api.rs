//! The C test suite (tests/c/api.c, tests/c/cxx.cpp), built with the system's C and
//! C++ compilers and run with libhandoff_alloc.so preloaded: every function's
//! contract, threads, fork and exec, dlopen, allocation before `main`, C++'s `new` and
//! `delete`, and the addresses `free` must refuse (each in its own process, which must
//! abort with the allocator's message).

mod common;

use common::{build, preloaded, text};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn api() -> &'static Path {
    static API: OnceLock<PathBuf> = OnceLock::new();
    API.get_or_init(|| build("cc", "api.c", "api", &[]))
}

#[test]
fn every_contract_holds_with_the_library_preloaded() {
    let out = preloaded(api(), "all");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(" 0 failed"), "{stdout}");
}

#[test]
fn the_suite_fails_without_the_library() {
    // The suite checks that every block comes from handoff-alloc: run on the C
    // library's allocator, it must refuse to pass.
    let out = Command::new(api()).arg("all").output().unwrap();
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("is not loaded"));
}

#[test]
fn cxx_new_and_delete_reach_the_library() {
    let exe = build("c++", "cxx.cpp", "cxx", &[]);
    let out = preloaded(&exe, "");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("cxx.cpp: 0 failed"), "{stdout}");
}

#[test]
fn an_address_the_allocator_did_not_hand_out_aborts_with_a_message() {
    // `foreign-header` and `foreign-protnone` until 2026-11-29: the first unmapped the
    // program's buffer (its bytes read as a big block's header), the second crashed
    // inside the allocator (SIGSEGV reading the header).
    for (case, call) in [
        ("foreign-stack", "free"),
        ("foreign-data", "free"),
        ("foreign-unmapped", "free"),
        ("foreign-header", "free"),
        ("foreign-protnone", "free"),
        ("interior-big", "free"),
        ("interior-large", "free"),
        ("big-twice", "free"),
        ("foreign-realloc", "realloc"),
        ("foreign-usable", "malloc_usable_size"),
    ] {
        aborts_with(
            case,
            &[
                &format!("handoff-alloc: {call}(0x"),
                "not a block of this allocator",
            ],
        );
    }
}

/// Runs the suite's `case` preloaded: it must abort (SIGABRT) before the program goes
/// on, with every one of `messages` on standard error.
fn aborts_with(case: &str, messages: &[&str]) {
    let out = preloaded(api(), case);
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGABRT),
        "{case}: {:?}\n{}{stderr}",
        out.status,
        text(&out.stdout)
    );
    assert!(
        messages.iter().all(|m| stderr.contains(m)),
        "{case}: {stderr}"
    );
    assert!(!text(&out.stdout).contains("survived"), "{case}");
}

#[test]
fn a_block_freed_twice_aborts_with_a_message_that_names_it() {
    // Until 2026-11-29 the two frees of a 32-byte or a 1 MiB block went through, and
    // the next two mallocs returned the same address.
    for case in [
        "small-twice",
        "small-twice-full",
        "large-twice",
        "remote-twice",
        "big-twice",
    ] {
        aborts_with(case, &["handoff-alloc: free(0x", "twice"]);
    }
}
