//! `runner`: see `runner --help`.

fn main() -> std::process::ExitCode {
    runner::cli::main()
}
