//! The lab machinery every experiment shares: topology and pinning, the open-loop
//! pacer, environment capture, atomic results, SVG charts and Ctrl-C handling.

pub mod chart;
pub mod env;
pub mod pacer;
pub mod pin;
pub mod results;
pub mod stop;
pub mod topology;
