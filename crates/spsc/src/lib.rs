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
//! * No call waits, allocates or makes a system call after construction (see "What
//!   each call costs"); [`Options`], given when the ring is made, can ask for calls that
//!   wait a bounded time in exchange for throughput ([`Options::slipping`]).
//! * Batches publish the shared index once: [`Producer::push_slice`] /
//!   [`Consumer::pop_slice`] for `Copy` items, and the zero-copy
//!   [`Producer::write_chunk`] / [`Consumer::read_chunk`] for any `T`.
//! * [`stamped`] is a single-item ring for latency: its consumer finds each item by a
//!   stamp in the item's own slot, so an item reaches it in one cache-line transfer
//!   instead of two (no slice or chunk API; see [`stamped::channel`]).
//! * [`wait`] (with `std`): [`Consumer::pop_timeout`] and [`Producer::push_timeout`]
//!   with a waiting [`wait::Strategy`], and [`wait::parking`] handles that sleep and
//!   wake each other.
//! * [`Observer`]: a read-only, shareable view of a ring for a monitoring thread.
//! * [`fan_in`]: several producers into one consumer ([`FanIn`]), one ring each,
//!   polled round-robin.
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
//! # What each call costs
//!
//! No call of a ring's handles waits, allocates or makes a system call after the ring
//! is made, unless the ring was made with [`Options::slipping`] (below) or the call is
//! one of [`wait`]'s, which wait by name. "Wait-free" here: the call finishes in a
//! bounded number of its own steps whatever the other thread does.
//! `tests/no_alloc.rs` checks the "allocates" column under a counting global allocator.
//!
//! | call | progress | allocates | system calls | worst case |
//! |---|---|---|---|---|
//! | [`channel`], [`try_channel`], [`channel_with`], [`try_channel_with`] | - | the slot array and the shared header, once | those of the allocator | one allocation |
//! | [`StaticChannel::new`], [`StaticChannel::split`], [`StaticChannel::split_with`] | wait-free | no | no | O(1) |
//! | [`Producer::try_push`], [`Consumer::try_pop`] | wait-free | no | no | O(1): one load of the other side's index when the cached copy runs out; one `pause` when `try_pop` finds the ring empty |
//! | the same on a ring made with [`Options::slipping`] | wait-free, with a bounded wait | no | no | O(1) plus at most six rounds of 2048 TSC ticks (about 5 us at 2.5 GHz) |
//! | [`Producer::push_slice`], [`Consumer::pop_slice`] | wait-free | no | no | O(n) copies, one index store |
//! | [`Producer::write_chunk`], [`Consumer::read_chunk`] and their guards | wait-free | no | no | O(1) to reserve; O(n) to fill, move out or drop items |
//! | [`Consumer::peek`], `len`, `is_empty`, `is_full`, `free_len`, `capacity`, `is_abandoned`, `slips`, `observer` | wait-free | no | no | O(1) |
//! | [`Observer`]'s calls, `clone` | wait-free | no | no | O(1): loads of the index and counter lines |
//! | [`FanIn::try_pop`], [`FanIn::try_pop_from`], `len` | wait-free | no | no | O(producers): one load per empty ring, one `pause` when all are empty |
//! | [`fan_in`], [`FanIn::connect`] | - | one ring per producer | those of the allocator | one allocation per ring |
//! | [`Consumer::pop_timeout`], [`Producer::push_timeout`] | blocking, bounded by the timeout | no | a clock read per failed try; [`wait::SpinThenYield`]: `sched_yield` after its spins | the timeout (`Duration::MAX`: none) |
//! | [`wait::ParkingProducer::try_push`], [`wait::ParkingConsumer::try_pop`] | wait-free | no | `futex` (unpark) only when the other side is parked | O(1) plus a full fence |
//! | [`wait::ParkingProducer::push_timeout`], [`wait::ParkingConsumer::pop_timeout`] | blocking, bounded by the timeout | no | `futex` (park) after 100 spins | the timeout |
//! | dropping a handle | wait-free | no | no | the last one drops the items left in the ring and frees the ring |
//! | [`stamped`]'s `try_push`, `try_pop`, `peek`, `len` | wait-free | no | no | O(1) |
//! | every other method (the chunk guards' `len`, `as_slices`, `push`; the errors' `into_inner`, `is_disconnected`, `Display`; `Options`' builders; the handles' `Debug`) | wait-free | no | no | O(1) (`Debug` loads the indices) |
//!
//! The items' own `Drop` runs where the table says items are dropped; what it does is
//! the item's business.
//!
//! # Temporal slipping (off unless asked for)
//! With both sides spinning and no other work, a pair of cached-index handles settles
//! at one end of the ring: the faster side catches up with the slower one and then
//! works in the very cache line the other is writing or reading, so that line and an
//! index line cross between the cores about once per item.
//! [`Options::slipping`] makes [`Producer::try_push`] and [`Consumer::try_pop`] of a
//! ring of 256 slots or more keep the two apart: when a refresh of the other side's
//! index finds fewer than half the ring ready (consumer) or a quarter free (producer)
//! and the handle is streaming (its previous refresh found something too), the call
//! waits, polling the other index once per 2048 TSC ticks, while the other side keeps
//! moving (at least an eighth of the distance per poll), up to six polls. A push still
//! succeeds whenever a slot is free and a pop whenever an item is ready (the wait
//! starts only then, and what it finds after is never less); a consumer that was idle
//! does not wait, so a lone item is not delayed. What it costs: an item of a burst that
//! reaches a streaming consumer can wait up to the whole wait (about 0.8 us per poll at
//! 2.5 GHz, six at most, one when the producer is merely slow). What it gains: more
//! items per second from a pair that streams flat out (measured in docs/spsc.md and
//! docs/spsc-notebook.md; `cargo bench --bench spsc` shows the ring both ways beside
//! rtrb). The batch calls and [`stamped`] never slip.
//!
//! Between the two marks the producer is the slower side, and each of its stores
//! waits behind the slot lines it takes back from the consumer. So in rings of 256
//! slots or more, slipping or not, when `try_push`'s refresh finds at least an eighth
//! of the ring in use, the producer reads its own index back from the shared `tail`
//! (which only it stores) instead of keeping a second copy: one store less per push,
//! until a refresh finds the consumer caught up. A consumer with that many items to go
//! is not polling `tail`, so the load hits the producer's own cache; an idle consumer
//! (the paced case) polls it, and there the producer keeps its copy, since the load
//! would wait for the line to come back. This changes nothing a call returns and never
//! waits.
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
#[cfg(feature = "alloc")]
mod fan_in;
#[cfg(not(loom))]
mod fixed;
mod handles;
#[cfg(feature = "alloc")]
mod heap;
#[doc(hidden)]
pub mod hint;
mod observer;
mod options;
mod raw;
mod slip;
#[cfg(feature = "alloc")]
pub mod stamped;
mod sync;
#[cfg(all(feature = "std", not(loom)))]
pub mod wait;

pub use chunk::{ReadChunk, WriteChunk};
pub use error::{CapacityError, PopError, PushError};
#[cfg(feature = "alloc")]
pub use fan_in::{fan_in, try_fan_in, FanIn};
#[cfg(not(loom))]
pub use fixed::{StaticChannel, StaticConsumer, StaticProducer};
pub use handles::{Consumer, Producer};
#[cfg(feature = "alloc")]
pub use heap::{channel, channel_with, try_channel, try_channel_with, Heap};
pub use observer::{Observer, RingStats};
pub use options::Options;
pub use raw::Backing;

/// Stand-in for the heap backing when the `alloc` feature is off: it cannot be
/// constructed, and exists only so that `Producer<T>` / `Consumer<T>` keep one
/// definition.
#[cfg(not(feature = "alloc"))]
pub struct Heap<T>(core::convert::Infallible, core::marker::PhantomData<T>);

#[cfg(not(feature = "alloc"))]
impl<T> Heap<T> {
    pub(crate) fn share(&self) -> Heap<T> {
        match self.0 {}
    }
}
