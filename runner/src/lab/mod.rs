//! The lab frame every experiment plugs into: the run's lifecycle (`session`), the
//! timed N-role harness (`harness`), topology and pinning, the open-loop pacer, the
//! scheduling-noise probe, environment capture, claims as data, number formatting,
//! flag parsing, typed errors, atomic results, SVG charts and Ctrl-C handling.

pub mod chart;
pub mod child;
pub mod claims;
pub mod contenders;
pub mod env;
pub mod error;
pub mod experiment;
pub mod figures;
pub mod flags;
pub mod fmt;
pub mod harness;
pub mod measure;
pub mod noise;
pub mod paced;
pub mod pacer;
pub mod pin;
pub mod placed;
pub mod regimes;
pub mod report;
pub mod results;
pub mod rotate;
pub mod rounds;
pub mod schema;
pub mod session;
pub mod shape;
pub mod spread;
pub mod stop;
pub mod topology;

/// A zeroed buffer whose pages are already mapped, so that a timed loop writing into it
/// takes no page faults (a fresh zeroed allocation can be untouched copy-on-write
/// pages until first written).
///
/// ```
/// assert_eq!(runner::lab::prefaulted(3), vec![0, 0, 0]);
/// ```
pub fn prefaulted(n: usize) -> Vec<u64> {
    let mut v = vec![u64::MAX; n];
    v.fill(0);
    v
}
