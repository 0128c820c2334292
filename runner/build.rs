//! Records the compiler and the git revision the runner was built from, for the
//! environment block of every result.

use std::process::Command;

fn run(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8(out.stdout).ok()?.trim().to_string())
}

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = run(&rustc, &["--version"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=RUNNER_RUSTC_VERSION={version}");

    // `--no-optional-locks`: a plain `git status` refreshes the index and writes it
    // back, and the index is one of the files watched below, so the next cargo
    // command would run this script and rebuild the runner for nothing.
    let rev = run("git", &["rev-parse", "--short=12", "HEAD"]).map(|r| {
        // Committed results are rewritten by the runner itself; they don't make the
        // code dirty.
        let dirty = run(
            "git",
            &[
                "--no-optional-locks",
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ":/",
                ":(top,exclude)results",
            ],
        )
        .is_some_and(|s| !s.is_empty());
        if dirty {
            format!("{r}-dirty")
        } else {
            r
        }
    });
    println!(
        "cargo:rustc-env=RUNNER_GIT_REVISION={}",
        rev.unwrap_or_else(|| "unknown (not built from a git checkout)".into())
    );
    // Rebuild the stamp when HEAD moves, a branch moves or the index changes (a
    // commit, `git add`); never because of this script's own git calls. And when the
    // sources change: an edit that is not committed yet changes the code without
    // touching git's files, and a stamp left from before it would name a clean
    // revision for code that is not that revision (results of 2026-11-28 said
    // 18ac27336225 for a build of the next commit's code).
    for p in [
        "../.git/HEAD",
        "../.git/index",
        "../.git/refs/heads",
        "../.git/packed-refs",
        "src",
        "../crates",
        "../cpp-baseline",
        "../src",
        "../Cargo.toml",
    ] {
        if std::path::Path::new(p).exists() {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
