//! The handoff lab. Each experiment of `experiments` reproduces one source document
//! (`runner queue`: the SPSC queue document); the `lab` module is the frame they all
//! plug into: the run's lifecycle, the timed N-role harness, pins, pacing, noise,
//! environment, claims, formatting, charts and atomic results.

pub mod cli;
pub mod experiments;
pub mod lab;
