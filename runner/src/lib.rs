//! The handoff lab. Each experiment of `experiments` reproduces one source document
//! (`runner queue`: the SPSC queue document); the `lab` module is the frame they all
//! plug into: the run's lifecycle, the timed N-role harness, pins, pacing, noise,
//! environment, claims, formatting, charts, atomic results and the report. `all` runs
//! every experiment into one folder per machine with its REPORT.md, and re-renders or
//! compares such folders.

pub mod all;
pub mod cli;
pub mod experiments;
pub mod lab;
pub mod launch;
