//! The lab machinery every experiment shares: topology and pinning, the open-loop
//! pacer, the scheduling-noise probe, environment capture, atomic results, SVG charts
//! and Ctrl-C handling.

pub mod chart;
pub mod env;
pub mod noise;
pub mod pacer;
pub mod pin;
pub mod results;
pub mod stop;
pub mod topology;
