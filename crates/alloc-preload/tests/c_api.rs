//! The C test suite (tests/c/api.c, tests/c/cxx.cpp), built with the system's C and
//! C++ compilers and run with libhandoff_alloc.so preloaded: every function's
//! contract, threads, fork and exec, dlopen, allocation before `main`, C++'s `new` and
//! `delete`, and the addresses `free` must refuse (each in its own process, which must
//! abort with the allocator's message).

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// libhandoff_alloc.so, built for these tests. Cargo does not build a package's
/// cdylib for its integration tests (they link only an rlib, and an rlib that defines
/// `malloc` would replace the test binary's own allocator), so the test builds it with
/// the cargo that runs it, in a target folder of its own (the one running is locked),
/// in this profile (debug assertions on under `cargo test`).
fn library() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("preload-lib");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--quiet", "-p", "handoff-alloc-preload"])
            .env("CARGO_TARGET_DIR", &target)
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if !cfg!(debug_assertions) {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("cargo runs");
        assert!(
            status.success(),
            "cargo build -p handoff-alloc-preload failed"
        );
        let so = target
            .join(if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            })
            .join("libhandoff_alloc.so");
        assert!(so.is_file(), "{} was not built", so.display());
        so
    })
}

/// Compiles `source` (tests/c/...) with `compiler` into the test's scratch folder.
fn build(compiler: &str, source: &str, out: &str) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c-api");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join(out);
    // -fno-builtin: the compiler may neither elide a malloc/free pair nor fold a
    // check on malloc's result; the -Wno- flags silence the compiler's own diagnosis
    // of the misuse the suite commits on purpose (foreign frees, impossible sizes).
    let status = Command::new(compiler)
        .args([
            "-O1",
            "-g",
            "-fno-builtin",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-Wno-free-nonheap-object",
            "-Wno-alloc-size-larger-than",
            "-Wno-use-after-free",
            "-Wno-unused-result",
            "-pthread",
        ])
        .arg(manifest.join("tests/c").join(source))
        .arg("-o")
        .arg(&exe)
        .arg("-ldl")
        .status()
        .unwrap_or_else(|e| panic!("{compiler} could not run: {e}"));
    assert!(status.success(), "{compiler} {source} failed");
    exe
}

fn api() -> &'static Path {
    static API: OnceLock<PathBuf> = OnceLock::new();
    API.get_or_init(|| build("cc", "api.c", "api"))
}

fn preloaded(exe: &Path, arg: &str) -> Output {
    Command::new(exe)
        .arg(arg)
        .env("LD_PRELOAD", library())
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
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
    let exe = build("c++", "cxx.cpp", "cxx");
    let out = preloaded(&exe, "");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("cxx.cpp: 0 failed"), "{stdout}");
}

#[test]
fn an_address_the_allocator_did_not_hand_out_aborts_with_a_message() {
    for (case, call) in [
        ("foreign-stack", "free"),
        ("foreign-data", "free"),
        ("foreign-unmapped", "free"),
        ("interior-big", "free"),
        ("interior-large", "free"),
        ("big-twice", "free"),
        ("foreign-realloc", "realloc"),
        ("foreign-usable", "malloc_usable_size"),
    ] {
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
            stderr.contains(&format!("handoff-alloc: {call}(0x"))
                && stderr.contains("not a block of this allocator"),
            "{case}: {stderr}"
        );
        assert!(!text(&out.stdout).contains("survived"), "{case}");
    }
}
