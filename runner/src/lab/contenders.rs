//! The allocator contenders built from C sources, jemalloc and mimalloc, live in a
//! second binary, `runner-contenders`: the same runner with the `contenders` feature,
//! which links them. The `runner` binary builds without them, so its first build (and
//! `runner queue`, which needs neither) does not wait for jemalloc's C build.
//!
//! An experiment that needs them (`Experiment::CONTENDERS`), and `runner all`, switch
//! to that binary before they measure anything: [`switch`] makes sure it is built and
//! up to date (`cargo build --release -p runner --features contenders --bin
//! runner-contenders`, into the runner's own target folder; a moment when it is
//! already built, about two minutes the first time on 2 cores) and replaces this
//! process with it, the same arguments passed on. Every measurement and every child
//! process of that experiment then comes from the one binary, as before the split.

use crate::lab::error::{Error, Result};
use crate::lab::stop;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The second binary's name.
pub const BINARY: &str = "runner-contenders";

/// How to build it by hand, for messages.
pub const BUILD: &str =
    "cargo build --release -p runner --features contenders --bin runner-contenders";

/// Whether this binary links jemalloc and mimalloc itself.
pub const LINKED: bool = cfg!(feature = "contenders");

/// Continues in `runner-contenders` with this process's arguments, building it first
/// where this runner was built from sources that are still here; returns only where
/// this binary is that one already (or on an error, which says how to get it).
pub fn switch() -> Result<()> {
    if LINKED {
        return Ok(());
    }
    let path = ensure()?;
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    exec(&path, &args)
}

#[cfg(unix)]
fn exec(path: &Path, args: &[OsString]) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let e = Command::new(path).args(args).exec();
    Err(Error::Run(format!("cannot start {}: {e}", path.display())))
}

#[cfg(not(unix))]
fn exec(path: &Path, _args: &[OsString]) -> Result<()> {
    Err(Error::Unsupported(format!(
        "switching to {} needs a Unix system",
        path.display()
    )))
}

/// The path of `runner-contenders`, built and up to date where it can be: beside this
/// binary in a cargo `release` (or, for the tests' runner, `debug`) folder, with the
/// same profile, this runner's sources and `cargo` at hand. Elsewhere an existing
/// binary beside this one is used as it is.
pub fn ensure() -> Result<PathBuf> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::Run(format!("cannot find the runner binary: {e}")))?;
    let path = exe.with_file_name(format!("{BINARY}{}", std::env::consts::EXE_SUFFIX));
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    // Built by cargo, the binary sits in `<target>/release` or `<target>/debug` (the
    // tests' runner); the contenders are built with the same profile, beside it.
    let profile = exe
        .parent()
        .and_then(|d| d.file_name())
        .and_then(|n| n.to_str())
        .filter(|n| *n == "release" || *n == "debug");
    let target_dir = exe.parent().and_then(Path::parent);
    let (Some(profile), Some(target_dir), true) = (profile, target_dir, manifest.is_file()) else {
        return if path.is_file() {
            Ok(path)
        } else {
            Err(missing(&path))
        };
    };
    // `cargo run` tells its child where cargo is; otherwise the one on the PATH.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let fresh = modified(&path).is_some_and(|c| modified(&exe).is_some_and(|r| c >= r));
    let release = profile == "release";
    // The command the messages name: `BUILD`, less `--release` for the tests' runner.
    let command = if release {
        BUILD.to_string()
    } else {
        BUILD.replace(" --release", "")
    };
    if !fresh {
        eprintln!(
            "runner: bringing {} (the runner with jemalloc and mimalloc, built from C sources) up to date: `{command}`, about two minutes on 2 cores the first time",
            path.display()
        );
    }
    let mut build = Command::new(&cargo);
    build.arg("build");
    if release {
        build.arg("--release");
    }
    build
        .args(["--features", "contenders", "--bin", BINARY])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir);
    if fresh {
        build.arg("--quiet");
    }
    // Its own process group, so that a stop can end cargo and the compilers it started
    // (Ctrl-C at the terminal reaches this process, which passes it on).
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut build, 0);
    let status = match build.spawn() {
        Ok(child) => wait_or_stop(child)?,
        // No cargo here: a binary built earlier is used as it is.
        Err(_) if path.is_file() => return Ok(path),
        Err(e) => {
            return Err(Error::Run(format!(
                "cannot run {} to build the allocator contenders ({e}): {}",
                Path::new(&cargo).display(),
                missing(&path)
            )))
        }
    };
    if status.success() && path.is_file() {
        Ok(path)
    } else {
        Err(Error::Run(format!(
            "building the allocator contenders failed ({status}); `{command}` shows why"
        )))
    }
}

/// Waits for the build; Ctrl-C (the lab's handler, installed here) stops it, cargo's
/// compilers included, and the run, with nothing written.
fn wait_or_stop(mut child: std::process::Child) -> Result<std::process::ExitStatus> {
    stop::install();
    loop {
        if stop::requested() {
            // The whole group: cargo and every rustc it runs (`kill` the command, so
            // the lab stays free of `unsafe`).
            let group = format!("-{}", child.id());
            let _ = Command::new("kill").args(["-INT", "--", &group]).status();
            let _ = child.wait();
            return Err(Error::Interrupted);
        }
        match child.try_wait() {
            Ok(Some(_)) if stop::requested() => return Err(Error::Interrupted),
            Ok(Some(status)) => return Ok(status),
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(50)),
            Err(e) => return Err(Error::Run(format!("waiting for cargo: {e}"))),
        }
    }
}

fn missing(path: &Path) -> Error {
    Error::Run(format!(
        "this experiment's allocator contenders (jemalloc, mimalloc) are in a second binary, {BINARY}, which is not beside this one ({}): run `{BUILD}` in the handoff repository (about two minutes on 2 cores) and keep the two binaries together, or start the runner with `cargo run --release -p runner -- ...`, which builds it itself",
        path.display()
    ))
}

fn modified(p: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// The library `$var` names, else the first of `names` in `extra` or the system's
/// library folders; `Err(how)` when there is none. For the contenders a child or a
/// program runs with `LD_PRELOAD` (`runner alloc`'s tcmalloc and Hoard, `runner
/// programs`' allocators).
pub fn find_library(
    var: &str,
    names: &[&str],
    extra: Option<PathBuf>,
    how: &str,
) -> std::result::Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(var) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("{var}={} is not a file; {how}", p.display()))
        };
    }
    let dirs = extra.into_iter().chain(
        [
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/lib64",
            "/usr/lib",
            "/usr/local/lib",
        ]
        .map(PathBuf::from),
    );
    let dirs: Vec<PathBuf> = dirs.collect();
    names
        .iter()
        .flat_map(|n| dirs.iter().map(move |d| d.join(n)))
        .find(|p| p.is_file())
        .ok_or_else(|| how.to_string())
}

#[cfg(all(test, not(feature = "contenders")))]
mod tests {
    use super::*;

    /// A test binary lives in `target/debug/deps`, not in a `release` or `debug`
    /// folder, so the runner does not build there: without a `runner-contenders` beside it the answer
    /// is the one-line error that says how to build it.
    #[test]
    fn outside_a_release_folder_it_says_how_to_build_them() {
        let exe = std::env::current_exe().unwrap();
        assert_eq!(exe.parent().unwrap().file_name().unwrap(), "deps");
        match ensure() {
            Ok(p) => assert!(p.is_file() && p.ends_with(BINARY)),
            Err(e) => {
                let e = e.to_string();
                assert!(
                    e.contains(BUILD) && e.contains("not beside this one"),
                    "{e}"
                );
                assert_eq!(e.lines().count(), 1, "{e}");
            }
        }
    }
}
