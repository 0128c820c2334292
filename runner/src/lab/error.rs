//! The runner's errors, typed by what the user should do about them; `main` maps each
//! kind to an exit status.

use std::fmt;

/// Why a run did not produce results.
#[derive(Debug)]
pub enum Error {
    /// Bad input (a flag, a pin, an output folder): one line, exit status 2, before
    /// anything is measured or written.
    Usage(String),
    /// This machine cannot run the experiment (not x86_64, no usable TSC): exit 2.
    Unsupported(String),
    /// The measurement failed (a thread could not be pinned or panicked, an item was
    /// lost or corrupted, a variant failed to start): exit 1.
    Run(String),
    /// The results could not be written: exit 1.
    Output(String),
    /// Ctrl-C: the run in flight drained and nothing was written; exit 130.
    Interrupted,
    /// Ctrl-C stopped `runner all` after some experiments finished, whose results were
    /// kept (the message says where); exit 130.
    Stopped(String),
}

impl Error {
    /// The process exit status for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) | Error::Unsupported(_) => 2,
            Error::Run(_) | Error::Output(_) => 1,
            Error::Interrupted | Error::Stopped(_) => 130,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m)
            | Error::Unsupported(m)
            | Error::Run(m)
            | Error::Output(m)
            | Error::Stopped(m) => f.write_str(m),
            Error::Interrupted => f.write_str("interrupted; nothing was written"),
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    /// A clap error (a flag clap refused: unknown, or a value its parser rejected) as
    /// one usage line: its first line, without clap's `error: ` prefix.
    pub fn from_clap(e: &clap::Error) -> Error {
        let text = e.to_string();
        Error::Usage(
            text.lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("bad arguments")
                .trim_start_matches("error: ")
                .to_string(),
        )
    }
}

/// A value that could not become the results' JSON: the results cannot be written.
impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Error {
        Error::Output(format!("results JSON: {e}"))
    }
}

/// The runner's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
