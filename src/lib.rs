//! handoff: building blocks for the hot path of Rust trading systems.
//!
//! This facade re-exports the workspace crates under short names:
//!
//! * [`spsc`]: the bounded lock-free single-producer single-consumer ring;
//! * [`pool`]: object pools: `Pool<T, P>` with its thread-safety policy as a type
//!   parameter (`SingleThreaded`, `Locked`, `LockFree`, `ThreadCached`), pools for
//!   objects made on one thread and freed on another (return-queue pool, rotating
//!   arena), the single-thread `Freelist`, `BumpArena`, and `pool::numa` placement;
//! * [`clock`]: ordered TSC reads, calibration and the monotonic fallback;
//! * [`stats`]: latency histograms, percentiles in two conventions, CCDF and PDF series;
//! * [`alloc`]: the size-class global allocator with thread-local heaps. Linking it
//!   installs nothing: a binary that wants it says so itself, in its own `main.rs`
//!   (`#[global_allocator] static A: handoff::alloc::HandoffAlloc = handoff::alloc::HandoffAlloc;`),
//!   so a library that depends on this crate never changes its users' allocator.
//!
//! ```
//! let (mut tx, mut rx) = handoff::spsc::channel::<u64>(16);
//! let clock = handoff::clock::Clock::quick();
//! let mut latency = handoff::stats::Latency::new();
//! let start = clock.start();
//! tx.try_push(1).unwrap();
//! assert_eq!(rx.try_pop(), Ok(1));
//! latency.record(clock.ticks_to_ns(clock.end().saturating_sub(start)));
//! assert_eq!(latency.count(), 1);
//! ```

pub use handoff_alloc as alloc;

pub use handoff_clock as clock;
pub use handoff_pool as pool;
pub use handoff_spsc as spsc;
pub use handoff_stats as stats;

/// The README's Rust examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
