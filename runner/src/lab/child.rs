//! Allocator contenders in child processes. A global allocator is fixed per binary,
//! so a contender that needs another one (mimalloc) runs in a child: the runner
//! re-executes itself as `runner __child <task>` with `HANDOFF_ALLOCATOR` set (read by
//! `main.rs`'s allocator at the first allocation), sends the task's input on stdin and
//! reads its output from stdout. The experiments own their tasks (see
//! `Experiment::CHILD_TASK`, gathered by `experiments::child_tasks`); this module owns the process plumbing both sides share.

use crate::lab::error::{Error, Result};
use std::io::{Read, Write};

/// The environment variable that makes the runner's process allocator mimalloc.
pub const ALLOCATOR_ENV: &str = "HANDOFF_ALLOCATOR";
/// The hidden first argument that makes the runner a child; the task's name follows.
pub const CHILD_ARG: &str = "__child";

/// A child's work: its input bytes in, its output bytes (or one line of error) out.
pub type Task = fn(&[u8]) -> std::result::Result<Vec<u8>, String>;

/// Runs `task` in a child runner whose allocator is `allocator` (`"mimalloc"`), with
/// `input` on its stdin; returns its stdout. `who` names the contender in errors. A
/// child cut short by Ctrl-C fails; the caller checks the stop flag first.
pub fn run(who: &str, task: &str, allocator: &str, input: &[u8]) -> Result<Vec<u8>> {
    run_with_env(who, task, allocator, &[], input)
}

/// [`run`] with more environment variables for the child (`LD_PRELOAD` for a
/// contender that replaces the C library's `malloc`).
pub fn run_with_env(
    who: &str,
    task: &str,
    allocator: &str,
    env: &[(&str, &std::ffi::OsStr)],
    input: &[u8],
) -> Result<Vec<u8>> {
    run_wrapped(who, &[], task, allocator, env, input)
}

/// [`run_with_env`] with the child started by a wrapper program (`wrapper[0]`, its
/// arguments after it, then the runner and the child's arguments): Valgrind's
/// callgrind, for a simulated cache. An empty `wrapper` starts the runner itself.
pub fn run_wrapped(
    who: &str,
    wrapper: &[std::ffi::OsString],
    task: &str,
    allocator: &str,
    env: &[(&str, &std::ffi::OsStr)],
    input: &[u8],
) -> Result<Vec<u8>> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::Run(format!("{who}: cannot find the runner binary: {e}")))?;
    let mut command = match wrapper.split_first() {
        Some((program, args)) => {
            let mut c = std::process::Command::new(program);
            c.args(args).arg(exe);
            c
        }
        None => std::process::Command::new(exe),
    };
    let mut child = command
        .arg(CHILD_ARG)
        .arg(task)
        .env(ALLOCATOR_ENV, allocator)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| Error::Run(format!("{who}: cannot start the child process: {e}")))?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(input)
        .map_err(|e| Error::Run(format!("{who}: writing to the child: {e}")))?;
    let mut bytes = Vec::new();
    child
        .stdout
        .take()
        .expect("piped")
        .read_to_end(&mut bytes)
        .map_err(|e| Error::Run(format!("{who}: reading from the child: {e}")))?;
    let mut err = String::new();
    let _ = child.stderr.take().expect("piped").read_to_string(&mut err);
    let status = child
        .wait()
        .map_err(|e| Error::Run(format!("{who}: {e}")))?;
    if !status.success() {
        return Err(Error::Run(format!(
            "{who} child process failed ({status}): {}",
            err.trim()
        )));
    }
    Ok(bytes)
}

/// The child's side: runs the task named by `name` from `tasks` on stdin's bytes and
/// writes its output to stdout. Returns the exit status.
pub fn main(name: Option<&str>, tasks: &[(&str, Task)]) -> i32 {
    let Some(task) = tasks.iter().find(|t| Some(t.0) == name).map(|t| t.1) else {
        eprintln!("runner: unknown child task {name:?}");
        return 2;
    };
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        eprintln!("reading the child's input: {e}");
        return 1;
    }
    match task(&input) {
        Ok(bytes) => {
            let mut out = std::io::stdout().lock();
            if let Err(e) = out.write_all(&bytes).and_then(|()| out.flush()) {
                eprintln!("writing the child's output: {e}");
                return 1;
            }
            0
        }
        Err(e) => {
            eprintln!("{e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_unknown_task_is_refused() {
        assert_eq!(super::main(Some("no-such-task"), &[]), 2);
        assert_eq!(super::main(None, &[]), 2);
    }
}
