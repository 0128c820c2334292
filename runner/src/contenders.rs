//! `runner-contenders`: the runner with jemalloc and mimalloc linked (the `contenders`
//! feature), so that their child processes can run. `runner` builds it and switches to
//! it when an experiment needs them (see `runner::lab::contenders`); run by hand it is
//! the same runner.

// Under `--cfg handoff_global_alloc` handoff-alloc installs itself instead.
#[cfg(not(handoff_global_alloc))]
#[path = "allocator.rs"]
mod allocator;

#[cfg(not(handoff_global_alloc))]
#[global_allocator]
static ALLOCATOR: allocator::Chosen = allocator::Chosen::new();

fn main() -> std::process::ExitCode {
    // `runner __launch ...`: the programs experiment's launcher (see `runner::launch`),
    // first, as in `runner`: `runner programs` runs in this binary and launches from it.
    if let Some(status) = runner::launch::entry() {
        return status;
    }
    runner::cli::entry()
}
