//! What the C suites' test binaries share: the library built for them, the programs
//! compiled with the system's compilers, and running them preloaded under a deadline.

#![allow(dead_code)] // each test binary uses part of it

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// libhandoff_alloc.so, built for these tests. Cargo does not build a package's
/// cdylib for its integration tests (they link only an rlib, and an rlib that defines
/// `malloc` would replace the test binary's own allocator), so the test builds it with
/// the cargo that runs it, in a target folder of its own (the one running is locked),
/// in this profile (debug assertions on under `cargo test`).
pub fn library() -> &'static Path {
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

/// Compiles `source` (tests/c/...) with `compiler` and `extra` flags into the tests'
/// scratch folder, as `out`.
pub fn build(compiler: &str, source: &str, out: &str, extra: &[&str]) -> PathBuf {
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
        .args(extra)
        .arg(manifest.join("tests/c").join(source))
        .arg("-o")
        .arg(&exe)
        .arg("-ldl")
        .status()
        .unwrap_or_else(|e| panic!("{compiler} could not run: {e}"));
    assert!(status.success(), "{compiler} {source} failed");
    exe
}

/// Runs `exe` with `args` and `env`, preloaded with the library when `preload`, and
/// kills it if it has not ended after `deadline` (then the test fails: a hang).
pub fn run(
    exe: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    preload: bool,
    deadline: Duration,
) -> Output {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if preload {
        cmd.env("LD_PRELOAD", library());
    }
    let mut child = cmd.spawn().expect("the program starts");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("its output");
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("its output");
            panic!(
                "{} {args:?} did not end within {deadline:?} (a hang)\n{}{}",
                exe.display(),
                text(&out.stdout),
                text(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// [`run`] preloaded, with a two-minute deadline.
pub fn preloaded(exe: &Path, arg: &str) -> Output {
    run(exe, &[arg], &[], true, Duration::from_secs(120))
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
