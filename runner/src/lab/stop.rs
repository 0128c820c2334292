//! Ctrl-C: the first press asks the experiment to stop (the producer stops pacing,
//! the run in flight drains, and nothing is written); a second press exits at once.

use std::sync::atomic::{AtomicU8, Ordering};

static STOP: AtomicU8 = AtomicU8::new(0);

/// The flag the hot loops read (nonzero: stop).
pub fn flag() -> &'static AtomicU8 {
    &STOP
}

/// Whether a stop was requested.
pub fn requested() -> bool {
    STOP.load(Ordering::Relaxed) != 0
}

/// [`Error::Interrupted`](super::error::Error::Interrupted) if a stop was requested:
/// the check an experiment makes between two measurements.
pub fn check() -> super::error::Result<()> {
    if requested() {
        Err(super::error::Error::Interrupted)
    } else {
        Ok(())
    }
}

/// Installs the Ctrl-C handler of one experiment (once per process; later calls do
/// nothing).
pub fn install() {
    install_with(
        "interrupted: finishing the run in flight, then exiting without writing results",
        "interrupted again: exiting now; no results written",
    );
}

/// Installs the Ctrl-C handler with its two messages: the first press's (the process
/// stops at its next check) and the second's (it exits at once, status 130).
pub fn install_with(first: &'static str, second: &'static str) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = ctrlc::set_handler(move || {
            if STOP.swap(1, Ordering::Relaxed) != 0 {
                eprintln!("\n{second}");
                std::process::exit(130);
            }
            eprintln!("\n{first}");
        });
    });
}
