//! handoff: building blocks for the hot path of Rust trading systems (work in progress: stats follows).

pub use handoff_clock as clock;
pub use handoff_spsc as spsc;
