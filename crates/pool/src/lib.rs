#![doc = include_str!("../README.md")]
//!
//! ---
//!
//! Object pools for the hot path of a trading system, where an object is made on one
//! thread and freed on another (the Order pipeline of the write-up on handing objects
//! between threads).
//!
//! * [`return_queue`]: a freelist owned by the allocating thread, refilled in batches
//!   from an SPSC *return ring* that the releasing thread pushes freed slots onto.
//! * [`arena`]: rotating bump arenas; the releasing thread acknowledges each object on
//!   its arena's drain counter, and an arena is refilled only once all of its last
//!   fill has been acknowledged.
//! * [`Freelist`]: the single-thread pool, the baseline for the other two.
//! * [`Pool`]: one object pool whose thread-safety policy is a type parameter
//!   ([`policy`]: single-threaded, mutex, lock-free, per-thread caches), fixed or
//!   growing by whole blocks.
//! * [`BumpArena`]: a bump arena freed all at once by `reset`.
//! * [`numa`]: placement of a `Pool`'s or an arena's memory on a NUMA node, and
//!   `numa::PerNode`, one pool per node from which each thread takes its own node's.
//!
//! Every pool's slots are allocated up front. After construction nothing allocates
//! except where the table below says so: a growing [`Pool`] ([`Capacity::Grow`]) adds a
//! block when it runs out, and a [`ThreadCached`](policy::ThreadCached) pool makes a
//! thread's cache the first time the thread uses it and a magazine when its depot has
//! no empty one to trade (`tests/no_alloc.rs` checks the rest under a counting global
//! allocator). The cross-thread pools have split handles, `Allocator` and `Releaser`,
//! each `Send` and not `Sync`, one per thread. Objects are owned boxes ([`PoolBox`],
//! [`ArenaBox`], and [`PooledArc`] for a shared [`Pool`] in an `Arc`) that travel from
//! one to the other, e.g. through a `handoff_spsc` ring.
//!
//! # What each call costs
//!
//! | call | progress | allocates | system calls | worst case |
//! |---|---|---|---|---|
//! | [`Pool::new`], [`Pool::with_config`], [`Freelist::new`], [`return_queue::new`], [`arena::new`], [`BumpArena::new`] | - | the slots and the free list, once | the allocator's; `mbind` with a NUMA placement | one allocation |
//! | `Pool<_, SingleThreaded>`: `try_alloc`, `try_alloc_raw`, `release`, `free`, dropping a [`Pooled`] | wait-free | fixed: no; growing: one block when it grows | fixed: no | O(1); a growth copies no slot |
//! | `Pool<_, Locked>`: the same | blocking (a `std::sync::Mutex`) | as above | `futex` when contended | the lock holder's critical section, O(1) |
//! | `Pool<_, LockFree>`: the same, and [`Pool::try_alloc_arc`] / dropping a [`PooledArc`] | lock-free (a compare-and-swap that retries while others succeed) | as above | no | unbounded retries under contention, each O(1) |
//! | `Pool<_, ThreadCached>`: the same | wait-free on the thread's magazines; blocking (the depot's mutex) once per magazine exchanged | the thread's cache at its first use; a magazine when the depot has none empty | `futex` when the depot is contended | O(magazine) per exchange |
//! | [`Pool::try_alloc_arc`], dropping a [`PooledArc`] | as the policy, plus an `Arc` count change (an atomic read-modify-write) | as the policy | as the policy | as the policy |
//! | [`Pool::try_alloc_within`] | blocking, bounded by the timeout | as `try_alloc` | `sched_yield` between tries | the timeout |
//! | [`Pool::stats`], `capacity`, `policy` | wait-free (`Locked`: takes the lock) | no | no | O(1) |
//! | [`Freelist::try_alloc`], `release`, `free`, dropping a [`FreelistBox`] | wait-free | no | no | O(1) |
//! | [`return_queue::Allocator::try_alloc`] | wait-free | no | no | O(batch) when it drains the return ring |
//! | [`return_queue::Releaser::release`], `free` | wait-free | no | no | O(release batch) when it sends one |
//! | [`arena::Allocator::try_alloc`], [`arena::Releaser::release`], `free` | wait-free | no | no | O(1) |
//! | [`BumpArena`]'s `try_alloc*`, `reset` | wait-free | no | no | O(1); `try_alloc_slice_fill_with` O(n) |
//! | dropping a [`PoolBox`] or [`ArenaBox`] off the releasing thread | wait-free | no | no | O(1) (a `PoolBox`'s slot is retired) |
//! | `numa::PerNode::try_alloc` (Linux, `std`) | as the policy | as the policy | `sched_getcpu` (a vDSO call where the kernel offers it) | as the policy |
//! | a thread's exit with a `ThreadCached` pool used | blocking (the depot's mutex) | frees its cache | `futex` when contended | O(magazines) |
//! | `Pool::flush`, `Pool::depot_magazines` (`ThreadCached`) | blocking (the depot's mutex) | no | `futex` when contended | O(magazine) |
//! | every other method (`capacity`, `available`, `local_free`, `left_in_arena`, `allocated`, `used`, `slot`, `arena`, `into_inner`, `into_raw`, the errors' methods, `Debug`) | wait-free | no | no | O(1) |
//!
//! # One vocabulary
//! Every pool and arena speaks the same words:
//!
//! | | [`Pool`] | [`Freelist`] | [`return_queue`] | [`arena`] | [`BumpArena`] |
//! |---|---|---|---|---|---|
//! | make | `new(Capacity)`, `with_config(PoolConfig)` | `new(slots)` | `new(Config)` | `new(Config)` | `new(bytes)` |
//! | allocate | `try_alloc`, `try_alloc_raw` | `try_alloc` | `Allocator::try_alloc` | `Allocator::try_alloc` | `try_alloc`, `try_alloc_with`, `try_alloc_layout`, `try_alloc_slice_fill_with` |
//! | when full | `Err(Exhausted(value))` | the same | the same | the same | the argument back in `Exhausted` |
//! | give back, get the value | `release` | `release` | `Releaser::release` | `Releaser::release` | (`reset`, all at once) |
//! | give back, drop in place | `free`, or drop the handle | `free`, or drop the box | `Releaser::free` | `Releaser::free` | |
//! | another pool's object | `Err(Foreign(handle))` | the same | the same | the same | |
//! | counters | `stats()` | `stats()` | `stats()` on each half | `stats()` on each half | `stats()` |
//!
//! # Guarantees
//! * Exhaustion is a normal outcome: `try_alloc` hands the value back in
//!   [`Exhausted`] and counts the miss. Nothing blocks, but `Pool::try_alloc_within`
//!   (with the `std` feature), which waits as long as its caller says.
//! * Releasing takes the box by value, so a double release does not compile; a box
//!   from another pool is handed back in [`Foreign`], untouched.
//! * Every object is dropped exactly once: when released, or when its box is dropped
//!   (then its slot is retired from the return-queue pool, or acknowledged on the
//!   arena's second counter). Boxes may outlive both handles; the slab is freed when
//!   the last of them is gone.
//! * Leak-safe (`docs/architecture.md`, "The leak-safety rule"): forgetting a box or a
//!   handle is at worst a leak, and a panicking destructor loses nothing else.
//!
//! # Verification
//! Loom models of the return path, the arena reuse rule and teardown
//! (`tests/loom.rs`), Miri, two-thread stress tests with an ownership marker per slot
//! (`tests/stress.rs`), drop-counting and leak-safety tests (`tests/drops.rs`), and
//! ThreadSanitizer in CI.

#![no_std]

// `--cfg handoff_global_alloc` (.ci/run): the unit tests link handoff-alloc (a
// dev-dependency), which then installs itself as their global allocator.
#[cfg(all(test, handoff_global_alloc))]
use handoff_alloc as _;

extern crate alloc;
#[cfg(any(feature = "std", loom))]
extern crate std;

pub mod arena;
mod bump;
mod error;
mod freelist;
pub mod numa;
mod owned;
#[cfg(all(feature = "std", target_os = "linux"))]
mod per_node;
pub mod policy;
mod pool;
pub mod return_queue;
mod slab;
mod sync;

pub use arena::ArenaBox;
pub use bump::{BumpArena, BumpStats};
pub use error::{ConfigError, Exhausted, Foreign};
pub use freelist::{Freelist, FreelistBox, FreelistStats};
pub use owned::PooledArc;
pub use policy::Capacity;
pub use pool::{Pool, PoolConfig, PoolStats, Pooled, PooledRaw};
pub use return_queue::PoolBox;
