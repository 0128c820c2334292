#![doc = include_str!("../README.md")]
//!
//! ---
//!
//! A bounded, lock-free, single-producer single-consumer ring for handing items from
//! one thread to another on a latency-critical path.
//!
//! * [`channel`] makes a heap ring that holds exactly the capacity asked for;
//!   [`StaticChannel`] is the const-capacity form that needs no heap (a `static`, or
//!   the stack with scoped threads).
//! * [`Producer`] and [`Consumer`] are the two halves: `Send`, not `Sync`.
//! * Each half keeps its own index privately and a cached copy of the other half's
//!   index; the shared index (each on its own cache line) is loaded only when the cache
//!   says full (producer) or empty (consumer). (A streaming producer reads its own
//!   index back from the shared one instead; see "Temporal slipping".)
//! * Batches publish the shared index once: [`Producer::push_slice`] /
//!   [`Consumer::pop_slice`] for `Copy` items, and the zero-copy
//!   [`Producer::write_chunk`] / [`Consumer::read_chunk`] for any `T`.
//! * [`stamped`] is a single-item ring for latency: its consumer finds each item by a
//!   stamp in the item's own slot, so an item reaches it in one cache-line transfer
//!   instead of two (no slice or chunk API; see [`stamped::channel`]).
//! * Items still in the ring when both halves are gone are dropped exactly once.
//! * Leak-safe: forgetting any guard (`mem::forget` of a [`ReadChunk`], a
//!   [`WriteChunk`] or a handle) can leak items but never hands one out or drops one
//!   twice, and a destructor that panics while a range of items is dropped lets every
//!   other item of the range be dropped, once.
//!
//! ```
//! #[derive(Clone, Copy, Debug, PartialEq)]
//! struct Tick { seq: u64, price: f64 }
//!
//! let (mut tx, mut rx) = handoff_spsc::channel::<Tick>(1024);
//! let feed = std::thread::spawn(move || {
//!     for seq in 0..10_000 {
//!         let mut tick = Tick { seq, price: 100.0 };
//!         while let Err(full) = tx.try_push(tick) {
//!             tick = full.into_inner();
//!             std::hint::spin_loop();
//!         }
//!     }
//! });
//! let mut expected = 0;
//! while expected < 10_000 {
//!     if let Ok(tick) = rx.try_pop() {
//!         assert_eq!(tick.seq, expected);
//!         expected += 1;
//!     }
//! }
//! feed.join().unwrap();
//! ```
//!
//! The handles cannot be shared between threads, only moved:
//!
//! ```compile_fail,E0277
//! fn shared<T: Sync>(_: &T) {}
//! let (tx, _rx) = handoff_spsc::channel::<u64>(4);
//! shared(&tx); // error: `Producer<u64>` is not `Sync`
//! ```
//!
//! A const capacity that is not a power of two is a compile error:
//!
//! ```compile_fail,E0080
//! static BAD: handoff_spsc::StaticChannel<u8, 1000> = handoff_spsc::StaticChannel::new();
//! ```
//!
//! # Temporal slipping
//! With both sides spinning and no other work, a pair of cached-index handles settles
//! at one end of the ring: the faster side catches up with the slower one and then
//! works in the very cache line the other is writing or reading, so that line and an
//! index line cross between the cores about once per item (20-60 M items/s on a
//! 2-vCPU Xeon guest, where the same ring kept hundreds of slots apart moves
//! 150-175 M/s, and 180-230 M/s with the index read-back below).
//! From 256 slots up, [`Producer::try_push`] and [`Consumer::try_pop`] therefore slip:
//! when a refresh of the other side's index finds fewer than half the ring ready
//! (consumer) or a quarter free (producer) and the handle is streaming (its previous
//! refresh found something too), it waits, polling the other index once per 2048 TSC
//! ticks, while the other side keeps moving (at least an eighth of the distance per
//! poll), up to six polls. A push still succeeds whenever a slot is free and a pop
//! whenever an item is ready (the wait starts only then, and what it finds after is
//! never less); a consumer that was idle does not wait, so a lone item is not delayed.
//! What it costs: an item of a burst that reaches a streaming consumer can wait up to
//! the wait (about 0.9 us per poll at 2.3 GHz, six at most, one when the producer is
//! merely slow). [`Consumer::set_slip`] and [`Producer::set_slip`] turn it off; the
//! batch calls and [`stamped`] never slip. Measured in docs/spsc-notebook.md.
//!
//! Between the two marks the producer is the slower side, and each of its stores
//! waits behind the slot lines it takes back from the consumer. So in the same rings,
//! when `try_push`'s refresh finds at least an eighth of the ring in use, the producer
//! reads its own index back from the shared `tail` (which only it stores) instead of
//! keeping a second copy: one store less per push, until a refresh finds the consumer
//! caught up. A consumer with that many items to go is not polling `tail`, so the load
//! hits the producer's own cache; an idle consumer (the paced case) polls it, and there
//! the producer keeps its copy, since the load would wait for the line to come back.
//!
//! # Features
//! * `std` (default): implies `alloc`.
//! * `alloc`: [`channel`] and [`try_channel`]. Without it the crate is `no_std` with no
//!   heap, and [`StaticChannel`] is the ring to use.
//!
//! # Verification
//! The crate is tested with loom models (`RUSTFLAGS="--cfg loom"`, see `tests/loom.rs`),
//! under Miri, and with two-thread stress tests that check every sequence number and
//! count every drop; `tests/leak_safety.rs` forgets every guard after every operation
//! and panics in every range-dropping path, with a per-item drop ledger.

#![cfg_attr(not(any(feature = "std", loom)), no_std)]

// `--cfg handoff_global_alloc` (.ci/run): the unit tests link handoff-alloc (a
// dev-dependency), which then installs itself as their global allocator.
#[cfg(all(test, handoff_global_alloc))]
use handoff_alloc as _;

#[cfg(any(feature = "alloc", loom))]
extern crate alloc;

mod chunk;
mod error;
#[cfg(not(loom))]
mod fixed;
mod handles;
#[cfg(feature = "alloc")]
mod heap;
#[doc(hidden)]
pub mod hint;
mod raw;
mod slip;
#[cfg(feature = "alloc")]
pub mod stamped;
mod sync;

pub use chunk::{ReadChunk, WriteChunk};
pub use error::{CapacityError, PopError, PushError};
#[cfg(not(loom))]
pub use fixed::{StaticChannel, StaticConsumer, StaticProducer};
pub use handles::{Consumer, Producer};
#[cfg(feature = "alloc")]
pub use heap::{channel, try_channel, Heap};
pub use raw::Backing;

/// Stand-in for the heap backing when the `alloc` feature is off: it cannot be
/// constructed, and exists only so that `Producer<T>` / `Consumer<T>` keep one
/// definition.
#[cfg(not(feature = "alloc"))]
pub struct Heap<T>(core::convert::Infallible, core::marker::PhantomData<T>);
