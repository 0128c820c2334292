//! `runner`: see `runner --help`.

// Under `--cfg handoff_global_alloc` (.ci/run's second pass over the tests) handoff-alloc
// installs itself instead, whatever `HANDOFF_ALLOCATOR` says.
#[cfg(not(handoff_global_alloc))]
mod allocator;

#[cfg(not(handoff_global_alloc))]
#[global_allocator]
static ALLOCATOR: allocator::Chosen = allocator::Chosen::new();

fn main() -> std::process::ExitCode {
    // `runner __launch ...`: the programs experiment's launcher (see `runner::launch`),
    // first, so that nothing else of the runner runs and its memory stays a few MB.
    if let Some(status) = runner::launch::entry() {
        return status;
    }
    runner::cli::entry()
}
