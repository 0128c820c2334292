//! `runner`: see `runner --help`.

mod allocator;

#[global_allocator]
static ALLOCATOR: allocator::Chosen = allocator::Chosen::new();

fn main() -> std::process::ExitCode {
    // The pipeline's mimalloc variant: this process is a child that runs one timed run.
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(
            runner::experiments::pipeline::variants::CHILD_ARG,
        ))
    {
        return std::process::ExitCode::from(
            runner::experiments::pipeline::variants::child_main() as u8
        );
    }
    if std::env::var_os("HANDOFF_ALLOCATOR").is_some() {
        eprintln!("runner: HANDOFF_ALLOCATOR is set; unset it (the runner sets it only for the child processes of the pipeline's mimalloc variant)");
        return std::process::ExitCode::from(2);
    }
    runner::cli::main()
}
