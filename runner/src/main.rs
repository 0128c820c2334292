//! `runner`: see `runner --help`.

// Under `--cfg handoff_global_alloc` (.ci/run's second pass over the tests) handoff-alloc
// installs itself instead, whatever `HANDOFF_ALLOCATOR` says.
#[cfg(not(handoff_global_alloc))]
mod allocator;

#[cfg(not(handoff_global_alloc))]
#[global_allocator]
static ALLOCATOR: allocator::Chosen = allocator::Chosen::new();

fn main() -> std::process::ExitCode {
    // An allocator contender's child process (see `lab::child`).
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() == Some(std::ffi::OsStr::new(runner::lab::child::CHILD_ARG)) {
        let task = args.next();
        let status = runner::lab::child::main(
            task.as_deref().and_then(|t| t.to_str()),
            &runner::experiments::child_tasks(),
        );
        return std::process::ExitCode::from(status as u8);
    }
    if std::env::var_os("HANDOFF_ALLOCATOR").is_some() {
        eprintln!("runner: HANDOFF_ALLOCATOR is set; unset it (the runner sets it only for the child processes of its allocator contenders)");
        return std::process::ExitCode::from(2);
    }
    runner::cli::main()
}
